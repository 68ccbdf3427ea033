"""Write notebooks/05-toolkit.ipynb (run from notebooks/: ``python build_05_toolkit.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# The researcher's toolkit on TREC-5..8\n\n"
        "Components of variance and generalizability theory, score standardization, power and "
        "topic-set size, and the share of significant system pairs under each pairwise test, on "
        "the public TREC ad hoc AP matrices (50 topics each; 61, 74, 103 and 129 systems).\n\n"
        "Pages: `docs/gtheory.md`, `docs/standardize.md`, `docs/power.md`."
    ),
    new_code_cell(
        "import numpy as np\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "COLLECTIONS = ['adhoc5', 'adhoc6', 'adhoc7', 'adhoc8']\n"
        "# the public matrices from the dataset registry (IRM_DATA_MIRROR points it at a local copy)\n"
        "data = {c: irm.datasets.load(c, 'AP') for c in COLLECTIONS}\n"
        "{c: (f['topic'].nunique(), f['system'].nunique()) for c, f in data.items()}"
    ),
    new_markdown_cell(
        "## Components of variance, raw and standardized\n\n"
        "One score per (system, topic): `var_s`, `var_t` and `Residual` (the system x topic "
        "interaction confounded with error) from the two-way mean squares. Standardized scores: "
        "`irm.Standardizer('normal')` fitted on all systems of the collection (per-topic z "
        "mapped by the normal CDF). Standardization removes most of the topic variance, so the "
        "absolute index Phi comes close to E rho^2."
    ),
    new_code_cell(
        "import warnings\n\n"
        "rows = []\n"
        "for c, f in data.items():\n"
        "    for kind, frame in [('raw', f), ('standardized', irm.Standardizer('normal').fit_transform(f))]:\n"
        "        with warnings.catch_warnings():\n"
        "            # standardized topic means are all close to 0.5: the topic component is ~0 and\n"
        "            # its moment estimate can come out slightly negative (set to 0)\n"
        "            warnings.simplefilter('ignore', irm.NegativeVarianceWarning)\n"
        "            g = irm.gstudy(frame)\n"
        "        share = g.components['share']\n"
        "        d = g.dstudy(topics=50).iloc[0]\n"
        "        rows.append({'collection': c, 'scores': kind,\n"
        "                     'system': share['system'], 'topic': share['topic'],\n"
        "                     'Residual': share['Residual'],\n"
        "                     'Erho2_50': d['Erho2'], 'Phi_50': d['Phi'],\n"
        "                     'topics_Erho2_0.95': g.topics_needed(0.95),\n"
        "                     'topics_Phi_0.95': g.topics_needed(0.95, index='Phi')})\n"
        "components = pd.DataFrame(rows).set_index(['collection', 'scores'])\n"
        "components.round(3)"
    ),
    new_markdown_cell(
        "## D-study for TREC-8 with confidence intervals\n\n"
        "Feldt (1965) intervals for E rho^2 and Arteaga, Jeyaratnam & Franklin (1982) for Phi; "
        "`topics_needed(..., level=0.95)` also gives the topics for which each limit reaches the "
        "target (`topics_lower` is the conservative answer)."
    ),
    new_code_cell(
        "g8 = irm.gstudy(data['adhoc8'])\n"
        "print(g8.dstudy(topics=[25, 50, 100, 200], level=0.95).round(3))\n"
        "pd.DataFrame({ix: g8.topics_needed(0.95, index=ix, level=0.95) for ix in ['Erho2', 'Phi']})"
    ),
    new_code_cell(
        "fig = g8.plot(topics=range(1, 201), target=0.95)\n"
        "fig.axes[0].set_title('TREC-8 ad hoc, AP: D-study')\n"
        "fig"
    ),
    new_markdown_cell(
        "## Power and topic-set size\n\n"
        "For every pair of systems, the SD of the per-topic AP differences; the median pair and "
        "the 95th-percentile pair give `sigma`. Topics needed to detect `delta` with power 0.8 "
        "(paired t-test, two-sided, alpha = 0.05, exact noncentral t), and the smallest "
        "difference detectable with the collection's 50 topics."
    ),
    new_code_cell(
        "req, det = [], []\n"
        "for c, f in data.items():\n"
        "    t = irm.power.topics_table(f, deltas=[0.02, 0.05], powers=[0.8], quantiles=(0.5, 0.95))\n"
        "    req.append(t.required.assign(collection=c))\n"
        "    det.append(t.detectable.assign(collection=c))\n"
        "required = pd.concat(req).pivot_table(index='collection', columns=['quantile', 'delta'],\n"
        "                                      values='n_topics')\n"
        "required"
    ),
    new_code_cell(
        "detectable = pd.concat(det).pivot_table(index='collection', columns='quantile', values='delta')\n"
        "detectable.round(4)"
    ),
    new_markdown_cell(
        "### Does the formula hold on real topics?\n\n"
        "Resample the 50 real topics of the median-SD TREC-8 pair (differences centred and "
        "shifted to `delta`) and count rejections of the paired t-test. The size is right at "
        "`delta = 0`, but AP differences are not normal: at 50 topics the empirical power of "
        "this pair departs from the noncentral-t value by a few standard errors (below it for "
        "small differences, above it near 0.06). The formula is a guide, not a guarantee, for "
        "small topic sets; the test suite checks it on a pair with near-normal differences."
    ),
    new_code_cell(
        "pairs = irm.power.pair_sd(data['adhoc8'])\n"
        "k = (pairs['sd'] - pairs['sd'].median()).abs().idxmin()\n"
        "a, b = pairs.loc[k, 'a'], pairs.loc[k, 'b']\n"
        "sim = irm.power.simulate_paired_t(data['adhoc8'], a, b, 50, deltas=[0.0, 0.02, 0.04, 0.06],\n"
        "                                  n_trials=2000, rng=np.random.default_rng(5))\n"
        "sim[['delta', 'rate', 'se', 'power_exact', 'power_normal']].round(3)"
    ),
    new_markdown_cell(
        "## Share of significant pairs under each test (TREC-8)\n\n"
        "All 8,256 pairs of the 129 TREC-8 runs, `irm.pairwise(..., adjust='holm')`; `p < 0.05` "
        "is the unadjusted share. The resampling tests use 1,000 resamples here to keep the "
        "notebook fast: their p-values cannot go below about 1/1,001, far above the Holm "
        "threshold for the smallest p of 8,256 tests (0.05/8,256), so under Holm they need many "
        "more resamples (`n_resamples`): both p-values are (k + 1)/(B + 1), with k of the B "
        "resamples at least as extreme, so neither test rejects a pair under Holm here, and "
        "`irm.pairwise` warns about it."
    ),
    new_code_cell(
        "shares = {}\n"
        "for test in ['t', 'wilcoxon', 'sign', 'bootstrap', 'randomization']:\n"
        "    r = irm.pairwise(data['adhoc8'], test=test, adjust='holm', n_resamples=1000, seed=1)\n"
        "    shares[test] = {'p < 0.05': (r['p'] < 0.05).mean(), 'Holm': r['reject'].mean()}\n"
        "pd.DataFrame(shares).T.round(3)"
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "05-toolkit.ipynb")
