"""Write notebooks/06-document-samples.ipynb (run from notebooks/: ``python build_06_document_samples.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it (under a minute:
the small demo collection, C = 200 for the validation, 4 systems for the mixed models).
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Document samples: significance with per-topic noise (Robertson & Kanoulas, SIGIR 2012)\n\n"
        "A test collection is one sample of documents from a large population. We simulate other "
        "samples per (topic, run), check that the simulation reproduces the observed values, and "
        "use C = 10 samples per (topic, run) as repeated measurements in mixed models that "
        "separate the topic x system interaction from per-topic noise. This notebook uses the "
        "*small* demo collection (20 topics x 12 systems). Page: `docs/document_samples.md`.\n\n"
        "**Full study.** On the TREC-8-sized demo cut to 40 runs, from a script guarded by "
        "`if __name__ == '__main__':`, `irmodels simulate documents --demo --preset trec8 "
        "--systems 40 --validate --compare --backend processes --out sim/` (see "
        "`docs/benchmarks.md` for the time it takes)."
    ),
    new_code_cell(
        "import warnings\n\n"
        "import numpy as np\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n"
        "from irmodels.studies import document_samples as ds\n\n"
        "coll = irm.collection.generate(preset='small', seed=1)\n"
        "coll"
    ),
    new_markdown_cell(
        "## Simulation\n\n"
        "`irm.replicates.document_samples` draws, per (topic, run), the number of relevant "
        "documents retrieved (Poisson), their scores and the non-relevant scores from a model of "
        "each class (here the bootstrap), and scores the ranking. The record counts zero draws "
        "and degenerate pairs (simulated values that never vary)."
    ),
    new_code_cell(
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.DataQualityWarning)\n"
        "    sims = irm.replicates.document_samples(coll.runs, coll.qrels, model='bootstrap',\n"
        "                                           n_samples=10, seed=11)\n"
        "record = irm.replicates.sample_record(sims)\n"
        "print(len(sims), 'simulated AP values;', int(record['zero_draws'].sum()), 'zero draws redrawn;',\n"
        "      int(record['degenerate'].sum()), 'degenerate (topic, run) pairs')\n"
        "sims.head()"
    ),
    new_markdown_cell(
        "## Validation\n\n"
        "Per (topic, run): observed logit(AP) against the mean and SD of C simulated values "
        "(C = 1000 in the paper; 200 here to stay fast). `z = (observed - mean) / SD`. On the raw "
        "AP scale, the mean of simulated - observed is the bootstrap's bias."
    ),
    new_code_cell(
        "v = ds.validate(coll.runs, coll.qrels, n_samples=200, seed=1)\n"
        "ok = v[~v['degenerate']]\n"
        "print(f\"within 1 SD: {ok['within_1sd'].mean():.1%}, within 2 SD: {ok['within_2sd'].mean():.1%}\")\n"
        "raw = ds.validate(coll.runs, coll.qrels, n_samples=200, seed=1, transform=None)\n"
        "bias = raw['sim_mean'] - raw['observed']\n"
        "print(f'bias of the bootstrap (simulated - observed AP): mean {bias.mean():.4f}, '\n"
        "      f'median {bias.median():.4f}, share of pairs below the observed value {(bias < 0).mean():.1%}')\n"
        "ds.plot_validation(v, ['sys01', 'sys06'])"
    ),
    new_markdown_cell(
        "Correlation of the per-topic simulated SDs between runs: high values mean the noise "
        "belongs to the topic more than to the run, the paper's case for per-topic variance."
    ),
    new_code_cell(
        "c = ds.sd_correlation(v)\n"
        "off = c.to_numpy()[np.triu_indices(len(c), 1)]\n"
        "print(f'median correlation of per-topic SDs between runs: {np.median(off):.2f}')\n"
        "c.iloc[:4, :4].round(2)"
    ),
    new_markdown_cell(
        "## Four tests for every pair\n\n"
        "(a) paired t on observed logit(AP); (b) paired t on the per-topic means of the samples; "
        "(c) `y ~ system + (1|topic) + (1|topic:system)` by REML; (d) the same with one residual "
        "variance per (topic, system), nlme's `varIdent`. p-values of (c) and (d) use nlme's "
        "containment df (`n_topics - 1`); `df='satterthwaite'` is the alternative. Topics where a "
        "system's simulated values never vary are excluded from (c) and (d) and listed. Four "
        "systems (6 pairs) keep this notebook fast."
    ),
    new_code_cell(
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.DataQualityWarning)\n"
        "    res = ds.compare_tests(coll.runs, coll.qrels, systems=['sys01', 'sys02', 'sys04', 'sys10'],\n"
        "                           samples=sims)\n"
        "res.round(4)"
    ),
    new_code_cell(
        "for test, table in ds.agreement(res).items():\n"
        "    print(test, 'vs p_t_observed')\n"
        "    print(table.to_string(), end='\\n\\n')"
    ),
    new_code_cell("ds.plot_power_curve(res)"),
    new_markdown_cell(
        "## Heteroscedastic or homoscedastic?\n\n"
        "The likelihood-ratio test of (d) against (c) per pair (REML, as `anova(m_c, m_d)` in "
        "nlme): the share of pairs where one residual variance per (topic, system) fits "
        "significantly better."
    ),
    new_code_cell(
        "print(f\"LRT significant at 0.05 for {(res['lrt_p'] < 0.05).mean():.0%} of {len(res)} pairs \"\n"
        "      f\"(median statistic {res['lrt_statistic'].median():.1f} on {res['lrt_df'].median():.0f} df)\")"
    ),
]

nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}})
nbformat.write(nb, "06-document-samples.ipynb")
