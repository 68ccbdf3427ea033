"""Write notebooks/08-methodology.ipynb (run from notebooks/: ``python build_08_methodology.py``).

The notebook is committed executed (`python run_all.py 08`); tests/test_notebooks.py re-executes
it.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Evaluation methodology: topic sets, bootstrap, comparability, pooling bias, error "
        "rates, effect sizes, meta-analysis, incomplete judgements, design\n\n"
        "How stable are TREC-8's conclusions on fewer topics (swap rates, discriminative "
        "power, Kendall's tau)? How precise is each system's effect (residual bootstrap of "
        "MD1)? Are scores on two topic sets comparable (Webber's kappa)? How biased is the "
        "score of a run that did not contribute to the pool, and how well do the adjustments "
        "of Webber & Park correct it (on the demo collection)? Then: the error rates of tests on "
        "simulated collections, effect sizes with intervals and equivalence, a meta-analysis "
        "across collections, measures for incomplete judgements, sizing an experiment from a "
        "trial, and the bootstrap ANOVA.\n\n"
        "Pages: `docs/topic_sets.md`, `docs/bootstrap.md`, `docs/comparability.md`, "
        "`docs/pooling.md`, `docs/test_errors.md`, `docs/pairwise.md`, `docs/meta_analysis.md`, "
        "`docs/measures.md`, `docs/design.md`."
    ),
    new_code_cell(
        "import os\n"
        "from pathlib import Path\n\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "# offline (CI): read the public matrices from the shared data folder\n"
        "shared = Path('../../shared/data/ir-scores')\n"
        "if shared.is_dir():\n"
        "    os.environ.setdefault('IRM_DATA_MIRROR', str(shared.resolve()))\n\n"
        "ap = irm.datasets.load('adhoc8', 'AP')\n"
        "ap['topic'].nunique(), ap['system'].nunique()"
    ),
    new_markdown_cell(
        "## Topic-set study (Voorhees & Buckley 2002; Sakai 2006)\n\n"
        "50 pairs of disjoint topic sets per size (the benchmark uses 1,000), Tukey's HSD on "
        "MD1 and the paired t test on the same samples."
    ),
    new_code_cell(
        "study = irm.studies.topic_sets(ap, sizes=[5, 10, 25], n_samples=50,\n"
        "                               test=['tukey', 't'], seed=0)\n"
        "study.to_frame().round(3)"
    ),
    new_code_cell(
        "study.swap_table().head(8).round(3)   # swap rate by |difference of MAP| bin and size"
    ),
    new_code_cell("study.plot()"),
    new_markdown_cell(
        "Swap rates fall with the difference and with the number of topics; the paired t test "
        "calls many more pairs significant than Tukey's HSD (which controls the family-wise "
        "error over 8,256 pairs), and neither reverses a significant conclusion between "
        "disjoint halves more than rarely (`error_rate`)."
    ),
    new_markdown_cell(
        "## Residual bootstrap of MD1's system effects\n\n"
        "Residuals rescaled by sqrt(N / df_error), resampled onto the fitted values; on a "
        "balanced design the bootstrap SE estimates the model's sqrt(MS_error / T)."
    ),
    new_code_cell(
        "fit = irm.anova('MD1', ap)\n"
        "boot = irm.studies.bootstrap_effects(fit, n_resamples=500, seed=0)\n"
        "print(f\"mean bootstrap SE / analytic SE: \"\n"
        "      f\"{(boot.effects['se'] / boot.effects['se_model']).mean():.3f}\")\n"
        "top = boot.effects.sort_values('mean', ascending=False).head(5)\n"
        "top[['mean', 'se', 'lower', 'upper']].round(4)"
    ),
    new_code_cell(
        "pairs = boot.pairs.dropna(subset=['order_rate'])\n"
        "print(f\"pairs whose order held in at least 95% of replicates: \"\n"
        "      f\"{(pairs['order_rate'] >= 0.95).mean():.3f}\")\n"
        "pairs.sort_values('order_rate').head(5).round(3)"
    ),
    new_markdown_cell(
        "Every system's MAP with its 95% percentile interval, best first: the intervals of "
        "neighbouring systems overlap over most of the ranking."
    ),
    new_code_cell("boot.plot()"),
    new_markdown_cell(
        "## Comparability across topic sets (Webber 2010, section 4.6)\n\n"
        "The Robust 2004 matrix keeps TREC topic ids: the same 110 runs on the TREC-7, "
        "TREC-8, Robust 2003 and Robust 2004 topics (the subsets of the thesis's Table 4.9, "
        "unstandardized AP)."
    ),
    new_code_cell(
        "import itertools\n\n"
        "r04 = irm.datasets.load('robust2004', 'AP')\n"
        "t = r04['topic'].astype(int)\n"
        "subsets = {'TREC-7': r04[t.between(351, 400)], 'TREC-8': r04[t.between(401, 450)],\n"
        "           'Robust03': r04[t.between(601, 650)], 'Robust04': r04[t.between(651, 700)]}\n"
        "rows = []\n"
        "for a, b in itertools.combinations(subsets, 2):\n"
        "    r = irm.comparability(subsets[a], subsets[b], n_resamples=200, n_halvings=20, seed=0)\n"
        "    rows.append({'a': a, 'b': b, 'kappa': r.kappa, 'p': r.p_value,\n"
        "                 'higher on a': r.n_a_higher, 'higher on b': r.n_b_higher,\n"
        "                 'false positives': r.false_positive_rate})\n"
        "pd.DataFrame(rows).round(3)"
    ),
    new_markdown_cell(
        "The TREC-7 and TREC-8 topics give comparable scores (kappa about 0.6, no evidence "
        "against it); the new Robust 2003 topics are easier for most runs."
    ),
    new_markdown_cell(
        "## Pooling bias on the demo collection (Webber & Park 2009)\n\n"
        "Pools of 2, 4 and 8 of the 12 demo runs (depth 10); every other run is scored with "
        "and without its own documents judged (tRBP@10, p = 0.8)."
    ),
    new_code_cell(
        "col = irm.collection.generate(preset='small', seed=0)\n"
        "bias = irm.studies.pooling_bias(col.runs, col.qrels, widths=[2, 4, 8],\n"
        "                                common_topics=[5, 10], n_resamples=5, seed=0)\n"
        "table = bias.to_frame()\n"
        "table[['width', 'common_topics', 'adjustment', 'mae_unadjusted', 'mae_adjusted',\n"
        "       'bias_unadjusted', 'bias_adjusted', 'se_eq65']].round(4)"
    ),
    new_code_cell("bias.plot()"),
    new_markdown_cell(
        "Your own run: its scores against the qrels on every topic, and on a few topics after "
        "judging its unjudged documents."
    ),
    new_code_cell(
        "res = irm.pooling.adjust({'1': 0.21, '2': 0.35, '3': 0.18, '4': 0.40, '5': 0.27},\n"
        "                         {'1': 0.25, '2': 0.41, '3': 0.20})\n"
        "res"
    ),
]

# Further sections, one module each (notebooks/sections_08/NN_name.py defines CELLS), in name order.
_HERE = Path(__file__).resolve().parent
for _path in sorted((_HERE / "sections_08").glob("[0-9]*.py")):
    cells.extend(runpy.run_path(str(_path))["CELLS"])

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "08-methodology.ipynb")
