"""Notebook 08 section: effect sizes with exact intervals, and equivalence (TOST)."""

from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell(
        "## Effect sizes with intervals, and equivalence\n\n"
        "A p-value tells whether a difference is distinguishable from zero on these topics, not "
        "how large it is, nor whether two systems are practically the same. Every pair of "
        "`irm.pairwise` (and of `irm.compare`) carries the standardized difference "
        "`dz = mean(d) / sd(d)` with its exact interval (the noncentral t inverted), Sakai's "
        "effect size `diff / sqrt(V_E)` (V_E: residual variance of the topic x system ANOVA over "
        "all systems) with its interval, and, given a margin, `p_equiv`: the two one-sided tests "
        "(TOST) that the difference lies within +/- the margin. Page: `docs/pairwise.md`."
    ),
    new_code_cell(
        "wide = irm.to_wide(ap)\n"
        "order = list(wide.mean().sort_values(ascending=False, kind='stable').index)\n"
        "best = order[0]\n"
        "pairs = [(best, order[k]) for k in (1, 2, 4, 8, 16, 32, 64)]\n"
        "res = irm.pairwise(ap, 't', pairs=pairs, adjust='holm', equivalence=0.02)\n"
        "res.table[['a', 'b', 'diff', 'p_adj', 'dz', 'dz_lower', 'dz_upper',\n"
        "           'effect_mse', 'effect_mse_lower', 'effect_mse_upper', 'p_equiv']].round(4)"
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n\n"
        "t = res.table\n"
        "y = np.arange(len(t))\n"
        "fig, ax = plt.subplots(figsize=(7, 3.6))\n"
        "ax.errorbar(t['dz'], y - 0.12, xerr=[t['dz'] - t['dz_lower'], t['dz_upper'] - t['dz']],\n"
        "            fmt='o', capsize=3, label='$d_z$ (SD of the pair\\'s differences)')\n"
        "ax.errorbar(t['effect_mse'], y + 0.12,\n"
        "            xerr=[t['effect_mse'] - t['effect_mse_lower'],\n"
        "                  t['effect_mse_upper'] - t['effect_mse']],\n"
        "            fmt='s', capsize=3, label='Sakai: diff / sqrt($V_E$), all 129 runs')\n"
        "ax.axvline(0, color='grey', lw=0.8)\n"
        "ax.set_yticks(y, [f'{a} - {b}' for a, b in zip(t['a'], t['b'])])\n"
        "ax.invert_yaxis()\n"
        "ax.set_xlabel('standardized difference, 95% interval')\n"
        "ax.legend(loc='lower right', fontsize=8)\n"
        "fig.tight_layout()"
    ),
    new_markdown_cell(
        "The intervals are not symmetric around the estimate (the noncentral t is skewed). "
        "Sakai's effect size is about sqrt(2) times `dz` (the variance of a difference is about "
        "twice V_E) and, as its V_E pools all 129 runs (6,272 residual df against the pair's "
        "49), its interval is a little narrower on that scale. The best run against its "
        "closest followers: not significantly different, but not equivalent either within "
        "0.02 AP: with 50 topics the data cannot tell. How many pairs of the top 40 runs are "
        "significantly different, or equivalent, as the margin grows:"
    ),
    new_code_cell(
        "top = ap[ap['system'].isin(order[:40])]\n"
        "rows = []\n"
        "for margin in (0.01, 0.02, 0.05, 0.1):\n"
        "    r = irm.pairwise(top, 't', equivalence=margin).table\n"
        "    rows.append({'margin': margin, 'pairs': len(r),\n"
        "                 'different (p < 0.05)': int((r['p'] < 0.05).sum()),\n"
        "                 'equivalent (p_equiv < 0.05)': int((r['p_equiv'] < 0.05).sum()),\n"
        "                 'neither': int(((r['p'] >= 0.05) & (r['p_equiv'] >= 0.05)).sum())})\n"
        "pd.DataFrame(rows)"
    ),
    new_markdown_cell(
        "For one pair of score vectors, `irm.effect_size` gives the three effect sizes with "
        "their intervals and the TOST p-value (with two systems V_E = var(d)/2, so Sakai's "
        "effect size is sqrt(2) dz):"
    ),
    new_code_cell(
        "one = irm.effect_size(wide[best], wide[order[1]], level=0.95, equivalence=0.02)\n"
        "print(one.summary())"
    ),
]
