"""Write notebooks/01-data.ipynb (run from notebooks/: ``python build_01_data.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it.
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Getting evaluation data into irmodels\n\n"
        "Everything in irmodels starts from a *long frame*: one row per measurement with the "
        "columns `collection, measure, topic, system, shard, sample, score` (those present), "
        "factors as categoricals in natural order, scores as float64. This notebook builds one "
        "from three sources: a public TREC score matrix from the dataset registry, the "
        "`trec_eval -q` output of a run, and the synthetic demo collection.\n\n"
        "Page: `docs/data.md`."
    ),
    new_code_cell(
        "import os\n"
        "from pathlib import Path\n\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "# The reference data folder: next to the mirror when IRM_DATA_MIRROR is set, else\n"
        "# ../../shared/data relative to notebooks/. The registry reads the mirror, no download.\n"
        "if 'IRM_DATA_MIRROR' in os.environ:\n"
        "    shared = Path(os.environ['IRM_DATA_MIRROR']).parent\n"
        "else:\n"
        "    shared = Path('../../shared/data')\n"
        "    os.environ['IRM_DATA_MIRROR'] = str(shared / 'ir-scores')\n"
        "print('reference data:', 'found' if (shared / 'ir-scores').is_dir() else 'missing')"
    ),
    new_markdown_cell(
        "## A public score matrix: TREC-8 ad hoc, AP\n\n"
        "`irm.datasets.list()` shows the registry: per-topic scores of the runs submitted to "
        "TREC tracks, with their source (a repository pinned to a commit), licence and the "
        "publication to cite. Files are sha256-checked wherever they come from."
    ),
    new_code_cell(
        "registry = irm.datasets.list()\n"
        "registry[['collection', 'measure', 'topics', 'systems', 'licence']].head(8)"
    ),
    new_code_cell(
        "data = irm.datasets.load('adhoc8', 'AP')   # measure names are case-insensitive: 'ap' works\n"
        "data.head()"
    ),
    new_markdown_cell(
        "The balance report says whether every (topic, system) cell has the same number of "
        "scores: the closed-form ANOVA needs that."
    ),
    new_code_cell(
        "report = irm.balance(data)\n"
        "print(report)\n"
        "report.levels"
    ),
    new_markdown_cell("The wide view (rows = topics, columns = systems) is one call away:"),
    new_code_cell(
        "wide = irm.to_wide(data)\n"
        "wide.iloc[:5, :6]"
    ),
    new_code_cell(
        "# mean AP per system, the best five\n"
        "wide.mean().sort_values(ascending=False).head().round(4)"
    ),
    new_markdown_cell(
        "A look at the data before any model: the AP of every system over the 50 topics, "
        "systems ordered by mean AP (boxes span the quartiles, the red dot is the mean). "
        "Scores are skewed towards 0 and spread over most of [0, 1] within every system: "
        "topics differ far more than most systems do."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n\n"
        "order = wide.mean().sort_values(ascending=False).index\n"
        "fig, ax = plt.subplots(figsize=(10, 3.6), layout='constrained')\n"
        "ax.boxplot([wide[s] for s in order], showfliers=False, widths=0.6,\n"
        "           medianprops={'color': 'black'})\n"
        "ax.plot(range(1, len(order) + 1), wide[order].mean(), '.', color='C3', label='mean AP')\n"
        "ax.set_xticks([])\n"
        "ax.set_xlabel(f'{len(order)} TREC-8 ad hoc runs, by mean AP')\n"
        "ax.set_ylabel('AP per topic')\n"
        "ax.legend(frameon=False)\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "Researchers often prune runs, e.g. keep the best 75% by mean score "
        "(`irm.filter_systems`):"
    ),
    new_code_cell(
        "top = irm.filter_systems(data, top_fraction=0.75)\n"
        "print(data['system'].nunique(), '->', top['system'].nunique(), 'systems')"
    ),
    new_markdown_cell(
        "## trec_eval output\n\n"
        "`irm.read_trec_eval` reads `trec_eval -q` output (`measure topic value` per line). The "
        "per-topic rows become the long frame; the `all` rows (the run's averages, `runid`, "
        "`num_q`...) are kept apart and returned with `summary=True`. Measure names stay "
        "trec_eval's (`map`, `P_10`, `ndcg_cut_10`...)."
    ),
    new_code_cell(
        "per_topic, summary = irm.read_trec_eval(shared / 'trec_eval' / 'out.test.aq', summary=True)\n"
        "print(per_topic['measure'].nunique(), 'measures x', per_topic['topic'].nunique(), 'topics')\n"
        "per_topic[per_topic['measure'].isin(['map', 'P_10', 'ndcg_cut_10'])]"
    ),
    new_code_cell(
        "summary[summary['measure'].isin(['runid', 'num_q', 'map', 'P_10'])]"
    ),
    new_code_cell(
        "# the per-topic APs average to trec_eval's 'all' line, up to the rounding of the\n"
        "# printed per-topic values (4 decimals)\n"
        "m = per_topic[per_topic['measure'] == 'map']['score'].mean()\n"
        "print(round(m, 4), summary.set_index('measure').loc['map', 'value'])"
    ),
    new_markdown_cell(
        "The run and the qrels behind that output are plain TREC files; `irm.read_run` and "
        "`irm.read_qrels` read them with line-precise errors for malformed input."
    ),
    new_code_cell(
        "run = irm.read_run(shared / 'trec_eval' / 'results.test')\n"
        "qrels = irm.read_qrels(shared / 'trec_eval' / 'qrels.test')\n"
        "print(run.shape, qrels.shape)\n"
        "run.head(3)"
    ),
    new_code_cell(
        "# what a malformed line looks like to the reader\n"
        "import tempfile\n"
        "bad = Path(tempfile.mkdtemp()) / 'bad.run'\n"
        "bad.write_text('301 Q0 d1 1 2.5 bm25\\n301 Q0 d2 2 high bm25\\n')\n"
        "try:\n"
        "    irm.read_run(bad)\n"
        "except irm.DataFormatError as err:\n"
        "    print(err.line, '|', err)"
    ),
    new_markdown_cell(
        "## The demo collection\n\n"
        "A seeded synthetic test collection (documents, graded qrels, scored runs of depth "
        "1000), for trying every analysis without TREC access. `irm.evaluate` scores its runs "
        "with the qrels, giving the same long frame."
    ),
    new_code_cell(
        "coll = irm.collection.generate(preset='small', seed=1)\n"
        "scores = irm.evaluate(coll.runs, coll.qrels, measures=['AP', 'P@10'])\n"
        "print(irm.balance(scores[scores['measure'] == 'AP']))\n"
        "scores.head()"
    ),
    new_code_cell(
        "scores.groupby(['measure', 'system'], observed=True)['score'].mean().unstack(0).head().round(4)"
    ),
    new_markdown_cell(
        "## Results of other tools\n\n"
        "`irm.frame` and `irm.evaluate` take the outputs of PyTerrier, ir_measures, ranx, "
        "ir_datasets and polars directly (recognised by shape; none of them is a dependency). "
        "A PyTerrier `pt.Experiment(..., perquery=True)` frame has the columns `name, qid, "
        "measure, value`:"
    ),
    new_code_cell(
        "ap = scores[scores['measure'] == 'AP']\n"
        "pyterrier_like = pd.DataFrame({'name': ap['system'].astype(str), 'qid': ap['topic'].astype(str),\n"
        "                               'measure': 'AP', 'value': ap['score']})\n"
        "irm.frame(pyterrier_like).head(3)"
    ),
    new_markdown_cell(
        "ir_datasets qrels are `(query_id, doc_id, relevance, iteration)` tuples; an iterator is "
        "read once. What is not understood is refused with the forms that are:"
    ),
    new_code_cell(
        "from collections import namedtuple\n\n"
        "Qrel = namedtuple('Qrel', 'query_id doc_id relevance iteration')\n"
        "qrels = (Qrel(str(r.topic), r.docid, int(r.rel), '0') for r in coll.qrels.itertuples())\n"
        "print(irm.evaluate(coll.runs, qrels, ['AP'])['score'].mean().round(6),\n"
        "      scores[scores['measure'] == 'AP']['score'].mean().round(6))\n"
        "try:\n"
        "    irm.frame([1, 2, 3])\n"
        "except irm.DataFormatError as err:\n"
        "    print(err)"
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "01-data.ipynb")
print("wrote 01-data.ipynb")
