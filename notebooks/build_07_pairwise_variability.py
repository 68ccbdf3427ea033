"""Write notebooks/07-pairwise-variability.ipynb (run from notebooks/:
``python build_07_pairwise_variability.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Pairwise tests, variability and rank similarity on TREC-8\n\n"
        "The TREC-8 ad hoc AP matrix (50 topics x 129 systems, 8,256 system pairs): how many "
        "pairs each significance test calls different, with and without multiplicity "
        "adjustment; how variable the systems are across topics (Hosseini et al.); and how "
        "similar the system rankings by AP and by P@10 are (Kendall's tau, tau_AP, RBO).\n\n"
        "Pages: `docs/pairwise.md`, `docs/variability.md`, `docs/rank.md`."
    ),
    new_code_cell(
        "import io\n"
        "import os\n"
        "import warnings\n"
        "from pathlib import Path\n\n"
        "import pandas as pd\n"
        "from IPython.display import Image\n\n"
        "import irmodels as irm\n\n"
        "# offline (CI): read the public matrices from the shared data folder\n"
        "shared = Path('../../shared/data/ir-scores')\n"
        "if shared.is_dir():\n"
        "    os.environ.setdefault('IRM_DATA_MIRROR', str(shared.resolve()))\n\n"
        "ap = irm.datasets.load('adhoc8', 'AP')\n"
        "p10 = irm.datasets.load('adhoc8', 'P@10')\n"
        "ap['topic'].nunique(), ap['system'].nunique()"
    ),
    new_markdown_cell(
        "## Share of significant pairs under each test\n\n"
        "All pairs at once (the tests are vectorised across pairs). Resampling tests use "
        "1,000 resamples here to keep the notebook fast; the benchmark uses 10,000."
    ),
    new_code_cell(
        "rows = []\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always', irm.DataQualityWarning)\n"
        "    for test in ['t', 't2', 'wilcoxon', 'sign', 'randomization', 'bootstrap']:\n"
        "        for adjust in [None, 'holm', 'bh']:\n"
        "            r = irm.pairwise(ap, test, adjust=adjust, n_resamples=1000, seed=1)\n"
        "            rows.append({'test': test, 'adjust': adjust or 'none',\n"
        "                         'significant': r['reject'].mean()})\n"
        "for w in caught:\n"
        "    print('warning:', str(w.message)[:160], '...')\n"
        "tukey = irm.pairwise(ap, 't', adjust='tukey', n_resamples=1000, seed=1)\n"
        "rows.append({'test': 't', 'adjust': 'tukey (randomised)',\n"
        "             'significant': tukey['reject'].mean()})\n"
        "shares = pd.DataFrame(rows).pivot(index='test', columns='adjust', values='significant')\n"
        "shares.round(3)"
    ),
    new_markdown_cell(
        "Holm over 8,256 pairs needs p < 0.05 / 8256 = 6e-6, finer than 1,000 resamples can "
        "resolve: the Monte Carlo p-values of the randomization test and of the bootstrap are "
        "never below 1/1001, so no pair survives. "
        "`irm.pairwise` warns about both; use `n_resamples >= m / alpha`, or the randomised "
        "Tukey HSD or Benjamini-Hochberg, with resampling tests.\n\n"
        "The paired tests (t, Wilcoxon, randomization, bootstrap) agree closely; the sign test "
        "is less powerful, and the two-sample Welch test, which ignores that both systems ran "
        "the same topics, loses about a third of the significant pairs. Holm and the randomised "
        "Tukey HSD control the family-wise error over all 8,256 pairs; Benjamini-Hochberg "
        "controls the false discovery rate and rejects nearly as many pairs as no adjustment.\n\n"
        "Effect sizes of the significant pairs with the smallest standardized difference "
        "(paired t, Holm): `effect_sd` divides by the SD of the pair's differences, "
        "`effect_mse` by the residual SD of the two-way ANOVA over all systems."
    ),
    new_code_cell(
        "t = irm.pairwise(ap, 't', adjust='holm')\n"
        "sig = t[t['reject']]\n"
        "sig.loc[sig['effect_sd'].abs().nsmallest(5).index,\n"
        "        ['a', 'b', 'diff', 'p_adj', 'ci_lower', 'ci_upper', 'effect_sd', 'effect_mse']].round(4)"
    ),
    new_markdown_cell(
        "## Variability of systems\n\n"
        "Raw AP scores lie under the semicircle `(mean - 1/2)^2 + SD^2 <= 1/4`: the SD of a "
        "system is capped by its mean, so raw SDs mostly repeat the means. After the logit "
        "transform the link is much weaker."
    ),
    new_code_cell(
        "V = irm.variability\n"
        "raw, logit = V.variability(ap, None), V.variability(ap, 'logit')\n"
        "print('corr(mean, SD): raw %.3f, logit %.3f' % (raw['mean'].corr(raw['sd']),\n"
        "                                             logit['mean'].corr(logit['sd'])))\n"
        "fig = V.plot_mean_sd(ap)\n"
        "buf = io.BytesIO()\n"
        "fig.savefig(buf, format='png', dpi=90, bbox_inches='tight')\n"
        "Image(buf.getvalue())"
    ),
    new_code_cell(
        "tb = V.tie_breaking(ap, test='levene_median')\n"
        "print(tb)\n"
        "V.error_rate(ap, sizes=[10, 20, 25], n_trials=20, seed=1, test='levene_median')"
    ),
    new_markdown_cell(
        "## Do AP and P@10 rank the systems alike?\n\n"
        "Kendall's tau weighs every swap alike; tau_AP and RBO weigh the top of the ranking "
        "more. The P@10 means have ties: Kendall's tau-b accounts for them, tau_AP and RBO "
        "order tied systems by their position and say so in a warning."
    ),
    new_code_cell(
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.DataQualityWarning)\n"
        "    summary = pd.Series({\n"
        "        'Kendall tau-b': irm.kendall_tau(ap, p10),\n"
        "        'tau_AP (AP as reference)': irm.tau_ap(ap, p10),\n"
        "        'tau_AP (symmetric)': irm.tau_ap(ap, p10, symmetric=True),\n"
        "    })\n"

        "    rbos = pd.DataFrame({f'depth {k}': irm.rbo(ap, p10, p=0.9, depth=k).to_frame().iloc[0]\n"
        "                         for k in (10, 20, 50, 129)}).T\n"
        "print(summary.round(3).to_string())\n"
        "rbos[['min', 'residual', 'max', 'ext']].round(3)"
    ),
    new_markdown_cell(
        "RBO with p = 0.9 (expected depth 10): evaluated on the top 10 only, the bounds are "
        "wide (the residual is what the unseen ranks could add); on the full rankings the "
        "residual vanishes and `ext` is the RBO of the two complete rankings."
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "07-pairwise-variability.ipynb")
