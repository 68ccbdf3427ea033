"""Write notebooks/02-anova.ipynb (run from notebooks/: ``python build_02_anova.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# ANOVA, variance components and Tukey HSD on TREC-8\n\n"
        "Model MD1 of Ferro & Sanderson (SIGIR 2019), `score ~ topic + system`, on the public "
        "TREC-8 ad hoc AP matrix (50 topics x 129 systems): the ANOVA table with effect sizes, "
        "the variance components, Tukey's HSD with the model's error term (top group, compact "
        "letters, intervals), and the report.\n\n"
        "Pages: `docs/anova.md`, `docs/tukey.md`, `docs/report.md`."
    ),
    new_code_cell(
        "import os\n"
        "import tempfile\n"
        "from pathlib import Path\n\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "try:\n"
        "    data = irm.datasets.load('adhoc8', 'AP')\n"
        "except (ImportError, AttributeError, irm.DatasetError):  # no registry or offline\n"
        "    mirror = Path(os.environ.get('IRM_DATA_MIRROR', '../../shared/data/ir-scores'))\n"
        "    data = irm.read_matrix(mirror / 'adhoc8_ap.csv', measure='AP', collection='adhoc8')\n"
        "print(irm.balance(data))\n"
        "data.head()"
    ),
    new_markdown_cell(
        "## The ANOVA table\n\n"
        "Balanced design: sums of squares in closed form from marginal means. With one score per "
        "(topic, system) cell the topic x system interaction is confounded with the error."
    ),
    new_code_cell("fit = irm.anova('MD1', data)\nfit.table.round(4)"),
    new_markdown_cell(
        "## Variance components\n\n"
        "Random-effects reading of the fitted model by expected mean squares: "
        "`var_s = (MS_s - MS_e) / n_t`, `var_t = (MS_t - MS_e) / n_s`, `var_e = MS_e`."
    ),
    new_code_cell("components = fit.variance_components()\ncomponents.round(4)"),
    new_markdown_cell(
        "## Tukey HSD with the model's error term\n\n"
        "`q = |m_u - m_v| / sqrt(MS_error / T)` against the studentized range with 129 means and "
        "the model's residual degrees of freedom. These are R's "
        "`TukeyHSD(aov(score ~ topic + system))` numbers (checked in `tests/reference/tukey.R`)."
    ),
    new_code_cell(
        "hsd = fit.tukey('system', alpha=0.05)\n"
        "print(f'{hsd.n_significant} of {hsd.n_pairs} pairs significant; '\n"
        "      f'critical value Q = {hsd.critical_value:.4f} (df = {hsd.df_error:.0f})')\n"
        "print('top group:', ', '.join(hsd.top_group))"
    ),
    new_code_cell(
        "best = hsd.means.sort_values(ascending=False, kind='stable').index[:12]\n"
        "pd.DataFrame({'mean': hsd.means[best], 'letters': hsd.letters[best]}).round(4)"
    ),
    new_markdown_cell(
        "The three intervals of a system mean: Tukey (overlap = not significantly different), "
        "ANOVA (model error term, not simultaneous) and SEM (the system's own variance, which "
        "includes the topic variance)."
    ),
    new_code_cell(
        "pd.concat({kind: hsd.intervals(kind).loc[best[:5], 'halfwidth']\n"
        "           for kind in ('tukey', 'anova', 'sem')}, axis=1).round(4)"
    ),
    new_markdown_cell(
        "The most different pairs. run57 and run59 have the same AP on every topic, so their "
        "pairs tie on `q`: a stable sort (`kind='stable'`) keeps tied rows in the table's order "
        "(levels in natural order), the same on every numpy and pandas."
    ),
    new_code_cell("hsd.pairs.sort_values('q', ascending=False, kind='stable').head().round(6)"),
    new_markdown_cell(
        "## The report\n\n"
        "`irm.build_report` (or `irmodels report DATA`) fits the model, runs the Tukey HSD, the "
        "G-study and the residual diagnostics of the same fit, and writes the self-contained HTML "
        "page and the Markdown version, which open with a \"Conclusions\" paragraph in plain "
        "words. The Tukey plot of the report (measure on the axis, the best and worst systems "
        "named):"
    ),
    new_code_cell(
        "from irmodels.reporting.plots import tukey_means_plot\n\n"
        "tukey_means_plot(hsd, measure='AP')"
    ),
    new_code_cell(
        "report = irm.build_report(data, model='MD1', alpha=0.05)\n"
        "print(report.conclusions())\n"
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    written = report.save(tmp, formats=('html', 'md'), latex=True)\n"
        "    print(sorted(p.name for p in written))\n"
        "    page = (Path(tmp) / 'report.html').read_text()\n"
        "print(f'{len(page) / 1024:.0f} KiB of HTML, {page.count(\"data:image/png\")} embedded figures')\n"
        "report.diagnostics"
    ),
    new_markdown_cell(
        "The residual diagnostics: the QQ plot bends in the tails and the spread grows with the "
        "fitted value, as expected of AP (bounded by 0 and 1); with one score per (topic, "
        "system) the residual is the topic:system interaction."
    ),
    new_code_cell("report.diagnostics.plot()"),
    new_markdown_cell(
        "## Compare against a baseline (Dunnett)\n\n"
        "A paper usually compares its new runs against one baseline. Dunnett's many-to-one "
        "comparisons test each run against the control with the model's error term, adjusting "
        "for the 128 comparisons with the exact multivariate t (fewer comparisons than all "
        "8,256 Tukey pairs, so more power against the baseline). Here the baseline is the median "
        "run; `alternative='greater'` asks which runs beat it."
    ),
    new_code_cell(
        "means = fit.marginal_means('system').sort_values(kind='stable')\n"
        "baseline = means.index[len(means) // 2]\n"
        "dn = fit.dunnett(baseline, alternative='greater')\n"
        "print(dn.summary().splitlines()[0])\n"
        "print(f'{dn.to_frame().reject.sum()} of {len(dn.to_frame())} runs beat {baseline}')\n"
        "dn.to_frame().sort_values('diff', ascending=False, kind='stable').head().round(4)"
    ),
    new_markdown_cell(
        "## The comparison table of a paper\n\n"
        "`irm.compare` gives the table IR papers print: one row per run, one column per measure, "
        "the best value in bold and, as superscripts, the letters of the runs each one is "
        "significantly better than, from the topic-blocked Tukey HSD of each measure (or an "
        "adjusted paired test). Here five runs spread over the ranking, on AP and P@10; "
        "`to_latex()` gives the booktabs table with its caption and label."
    ),
    new_code_cell(
        "p10 = irm.datasets.load('adhoc8', 'P@10')\n"
        "ranked = list(means.sort_values(ascending=False, kind='stable').index)\n"
        "five = [ranked[i] for i in (0, 10, 40, 80, 120)]\n"
        "both = pd.concat([data, p10], ignore_index=True)\n"
        "table = irm.compare(both, systems=five)\n"
        "table"
    ),
    new_code_cell("print(table.to_latex(label='tab:trec8'))"),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "02-anova.ipynb")
