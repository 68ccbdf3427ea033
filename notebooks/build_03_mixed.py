"""Write notebooks/03-mixed.ipynb (run from notebooks/: ``python build_03_mixed.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Linear mixed models: crossed random effects and per-topic noise\n\n"
        "1. The TREC-3 ad hoc AP matrix (50 topics x 40 systems) as a crossed random model "
        "`score ~ (1|system) + (1|topic)`: on a balanced design the REML estimates are the "
        "ANOVA (G-study) components, in closed form.\n"
        "2. A simulated replicated design (document samples) with per-topic noise: the models of "
        "Robertson & Kanoulas (SIGIR 2012), homoscedastic and heteroscedastic "
        "(nlme's `varIdent` by topic:system), compared by likelihood-ratio test.\n"
        "3. Random slopes on an IR design: the demo collection split into two shards, each topic "
        "with its own shard effect and a crossed system intercept, `score ~ shard + "
        "(1 + shard | topic) + (1 | system)`; its caterpillar plot and residual diagnostics.\n\n"
        "Page: `docs/mixed.md`."
    ),
    new_code_cell(
        "import os\n"
        "from pathlib import Path\n\n"
        "import numpy as np\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "# the TREC-3 matrix ships only inside an R package: the registry reads it from a mirror\n"
        "os.environ.setdefault('IRM_DATA_MIRROR', str(Path('../../shared/data/ir-scores').resolve()))\n"
        "try:\n"
        "    data = irm.datasets.load('adhoc3', 'AP')\n"
        "except (ImportError, AttributeError):  # without the registry: the mirror's CSV\n"
        "    mirror = Path(os.environ['IRM_DATA_MIRROR'])\n"
        "    data = irm.read_matrix(mirror / 'adhoc3_ap.csv', measure='AP', collection='adhoc3')\n"
        "data.head()"
    ),
    new_markdown_cell(
        "## Crossed random effects on TREC-3\n\n"
        "Systems and topics both random: the variance components of generalizability theory."
    ),
    new_code_cell(
        "crossed = irm.mixed('score ~ (1|system) + (1|topic)', data)\n"
        "print(crossed.summary())"
    ),
    new_code_cell(
        "# the ANOVA route gives the same components (expected mean squares)\n"
        "g = irm.anova('score ~ topic + system', data).variance_components()\n"
        "pd.DataFrame({'mixed (REML)': crossed.variance_components()['variance'],\n"
        "              'ANOVA (EMS)': g['variance']}).round(6)"
    ),
    new_markdown_cell(
        "Systems as fixed effects instead (`score ~ system + (1|topic)`): the paired design. "
        "Marginal means, Satterthwaite df and a Tukey HSD on the model's covariance."
    ),
    new_code_cell(
        "fixed_sys = irm.mixed('score ~ system + (1|topic)', data)\n"
        "fixed_sys.fixed.head().round(4)"
    ),
    new_code_cell(
        "hsd = fixed_sys.tukey('system')\n"
        "print(f'{hsd.n_significant} of {hsd.n_pairs} pairs differ; top group: {len(hsd.top_group)} systems')"
    ),
    new_markdown_cell(
        "The topic effects of this model: each topic's conditional mode (BLUP), with the 95% "
        "interval from its conditional variance (lme4's `dotplot(ranef(fit, condVar = TRUE))`). "
        "Topics differ far more than their intervals: the topic is the largest source of "
        "variance in AP."
    ),
    new_code_cell("fixed_sys.plot('topic')"),
    new_markdown_cell(
        "## Per-topic noise: replicated measurements\n\n"
        "Simulate 4 systems x 30 topics x 10 document samples. The noise SD differs by "
        "(topic, system) stratum, as Robertson & Kanoulas observed for AP on sampled document "
        "sets."
    ),
    new_code_cell(
        "rng = np.random.default_rng(2012)\n"
        "T, S, C = 30, 4, 10\n"
        "topic = rng.normal(0, 0.6, T)\n"
        "inter = rng.normal(0, 0.15, (T, S))\n"
        "sd = np.exp(rng.normal(np.log(0.25), 0.5, (T, S)))\n"
        "effect = np.array([0.0, 0.05, 0.10, 0.30])\n"
        "y = (-1.0 + effect[None, :, None] + topic[:, None, None] + inter[:, :, None]\n"
        "     + rng.normal(0, 1, (T, S, C)) * sd[:, :, None])\n"
        "ti, si, ci = np.meshgrid(np.arange(T), np.arange(S), np.arange(C), indexing='ij')\n"
        "samples = irm.frame(pd.DataFrame({'topic': ti.ravel() + 1, 'system': [f'run{j + 1}' for j in si.ravel()],\n"
        "                                  'sample': ci.ravel() + 1, 'score': y.ravel()}))\n"
        "samples.head()"
    ),
    new_code_cell(
        "homo = irm.mixed('score ~ system + (1|topic/system)', samples)\n"
        "hetero = irm.mixed('score ~ system + (1|topic/system)', samples, residual='topic:system')\n"
        "pd.concat({'homoscedastic': homo.variance_components(),\n"
        "           'heteroscedastic': hetero.variance_components()}, axis=1).round(4)"
    ),
    new_code_cell(
        "# SD of each stratum relative to the first (nlme's varIdent coefficients)\n"
        "hetero.sd_ratios.describe().round(3)"
    ),
    new_code_cell(
        "# likelihood-ratio test: same fixed effects, so the REML fits can be compared as fitted\n"
        "# (refit=False: the REML test of a variance structure, as nlme's anova.lme)\n"
        "irm.compare_models(homo, hetero, refit=False).round(3)"
    ),
    new_code_cell(
        "pd.DataFrame({'homoscedastic': homo.fixed['se'], 'heteroscedastic': hetero.fixed['se']}).round(4)"
    ),
    new_markdown_cell(
        "Fixed parts that differ are compared by ML: with `refit=True` (the default, as lme4's "
        "`anova`) the REML fits are refitted by ML first, and the `likelihood` column says so."
    ),
    new_code_cell(
        "null = irm.mixed('score ~ (1|topic/system)', samples)\n"
        "irm.compare_models(null, homo).round(3)"
    ),
    new_markdown_cell(
        "## F tests of fixed effects and confidence intervals\n\n"
        "`anova()` tests each fixed term as lmerTest's `anova(type = 3)` does, with Satterthwaite "
        "or Kenward-Roger (pbkrtest) denominator df. `confint()` gives lme4's intervals: the "
        "likelihood profile (default), a seeded parametric bootstrap, or Wald for the fixed "
        "effects."
    ),
    new_code_cell(
        "print(fixed_sys.anova())\n"
        "fixed_sys.anova(ddf='kenward-roger').table.round(4)"
    ),
    new_code_cell(
        "# profile intervals of the two SDs and one system effect (all rows without parm=)\n"
        "fixed_sys.confint(parm=['topic', 'Residual', 'systemsys2']).round(4)"
    ),
    new_code_cell(
        "fixed_sys.confint('bootstrap', n_resamples=100, seed=1, parm=['topic', 'Residual']).round(4)"
    ),
    new_markdown_cell(
        "## Random slopes: a shard effect per topic\n\n"
        "The demo collection (20 topics, 12 systems) with its documents split at random into two "
        "shards, A (60%) and B, and AP measured on each shard. A topic whose relevant documents "
        "fall mostly in one shard can score higher there: the shard effect may vary by topic. "
        "`(1 + shard | topic)` gives each topic an intercept and a shard effect, correlated; "
        "`(1 | system)` is a crossed random intercept for the systems."
    ),
    new_code_cell(
        "col = irm.collection.generate(preset='small')\n"
        "rng = np.random.default_rng(3)\n"
        "shard_of = dict(zip(col.docids, np.where(rng.random(len(col.docids)) < 0.6, 'A', 'B')))\n"
        "sharded = irm.evaluate(col.runs, col.qrels, measures=['AP'], shards=shard_of)\n"
        "slopes = irm.mixed('score ~ shard + (1 + shard | topic) + (1 | system)', sharded)\n"
        "print(slopes.summary())"
    ),
    new_code_cell(
        "# is the per-topic shard effect needed? the same fixed part, so REML fits compare as fitted\n"
        "no_slope = irm.mixed('score ~ shard + (1 | topic) + (1 | system)', sharded)\n"
        "irm.compare_models(no_slope, slopes, refit=False).round(4)"
    ),
    new_markdown_cell(
        "Here the likelihood-ratio test does not call for the slope: documents were split at "
        "random, so each topic's relevant documents are split about evenly and the shard SD "
        "(0.03) is small next to the residual SD (0.15). The caterpillar plot shows it too: "
        "each topic's conditional modes (intercept and shard effect) with "
        "95% intervals from their conditional variances, sorted by the intercept (lme4's "
        "`dotplot(ranef(fit, condVar = TRUE))`)."
    ),
    new_code_cell("slopes.plot('topic')"),
    new_markdown_cell(
        "Residual diagnostics, as Robertson & Kanoulas show them: standardized residuals (each "
        "over its own estimated SD, lme4's `rstudent`) by topic and by system, and against the "
        "fitted values; then the normal QQ plots of the conditional modes of every term. AP is "
        "bounded at 0: the scores of 0 lie on the falling band at the lower left of the second "
        "plot (residual = -fitted / its SD), and the topics with few relevant documents have "
        "skewed residuals (long upper whiskers)."
    ),
    new_code_cell("slopes.plot_residuals('boxplot')"),
    new_code_cell("slopes.plot_residuals('fitted')"),
    new_code_cell("slopes.plot_residuals('qq')"),
    new_code_cell(
        "# the residual types, side by side (docs/mixed.md, 'Residuals and diagnostics')\n"
        "pd.DataFrame({t: slopes.residuals(t) for t in\n"
        "              ['response', 'marginal', 'pearson', 'standardized']}).describe().round(3)"
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "03-mixed.ipynb")
