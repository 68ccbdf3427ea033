"""Write notebooks/04-shards.ipynb (run from notebooks/: ``python build_04_shards.py``).

The notebook is committed executed (`python run_all.py`); tests/test_notebooks.py re-executes it (under a minute:
small demo collection, reduced shard counts and splits).
"""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Collection shards: models MD1-MD6 (Ferro & Sanderson, SIGIR 2019)\n\n"
        "Split the document collection at random into S shards, score every run on every "
        "shard, and the topic x system interaction gets its own term: the error shrinks and "
        "more system pairs are told apart. This notebook runs a reduced version of the paper's "
        "study on the *small* demo collection (20 topics x 12 systems), looks at undefined "
        "values, and checks the invariance result that makes MD6 safe.\n\n"
        "**Full study.** The paper's setting is the default of `irm.studies.shards`: "
        "S in {2, 3, 4, 5, 10, 25, 50}, 10 splits each, MD1-MD6. On the TREC-8-sized demo "
        "collection run, from a script guarded by `if __name__ == '__main__':`,\n\n"
        "```python\n"
        "col = irm.collection.generate(preset='trec8', seed=0)\n"
        "study = irm.studies.shards(col, backend='processes')\n"
        "```\n\n"
        "or `irmodels shards --demo --backend processes --out study/` (a few minutes on 2 cores; "
        "see `docs/benchmarks.md`). Pages: `docs/shards.md`, `docs/parallel.md`."
    ),
    new_code_cell(
        "%matplotlib inline\n"
        "import warnings\n\n"
        "import numpy as np\n"
        "import pandas as pd\n\n"
        "import irmodels as irm\n\n"
        "col = irm.collection.generate(preset='small', seed=0)\n"
        "col"
    ),
    new_markdown_cell(
        "## Shards\n\n"
        "`irm.replicates.assign_shards` gives every document a shard; sizes differ by at most one and "
        "the same seed gives the same assignment."
    ),
    new_code_cell(
        "assignment = irm.replicates.assign_shards(col.docids, 5, seed=1)\n"
        "print(assignment.value_counts().sort_index().to_dict())\n"
        "assignment.head()"
    ),
    new_markdown_cell(
        "## Sharded evaluation and undefined values\n\n"
        "A (topic, shard) without a relevant document has an undefined AP for every system. "
        "`irm.evaluate` substitutes a constant (default 0), drops those topics, or leaves the "
        "cells missing, and lists them in `attrs['undefined']` (plain lists; "
        "`irmodels.data.measures.undefined_cells(frame)` gives them as a frame)."
    ),
    new_code_cell(
        "assignment = irm.replicates.assign_shards(col.docids, 25, seed=1)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.UndefinedValueWarning)\n"
        "    at0 = irm.evaluate(col.runs, col.qrels, ['AP'], shards=assignment, undefined=0.0)\n"
        "    at1 = irm.evaluate(col.runs, col.qrels, ['AP'], shards=assignment, undefined=1.0)\n"
        "from irmodels.data.measures import undefined_cells\n\n"
        "cells = undefined_cells(at0)\n"
        "print(len(at0), 'scores;', len(cells), 'undefined (topic, shard) cells')\n"
        "cells.head()"
    ),
    new_markdown_cell(
        "## Invariance: MD6 does not care about the substituted constant\n\n"
        "Changing the constant changes the data by a function of (topic, shard) only, which "
        "MD6's topic:shard term absorbs (Propositions 7.2-7.4 of the paper). MD2 keeps the "
        "differences of system means, but not its error term."
    ),
    new_code_cell(
        "rows = []\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.IRModelsWarning)\n"
        "    for model in ['MD2', 'MD6']:\n"
        "        for x, data in [(0.0, at0), (1.0, at1)]:\n"
        "            fit = irm.anova(model, data)\n"
        "            hsd = fit.tukey('system')\n"
        "            rows.append({'model': model, 'x': x,\n"
        "                         'omega2_system': fit.table.loc['system', 'omega2_partial'],\n"
        "                         'ms_error': fit.ms_error,\n"
        "                         'significant pairs': hsd.n_significant,\n"
        "                         'Tukey width': 2 * hsd.intervals()['halfwidth'].iloc[0]})\n"
        "pd.DataFrame(rows).set_index(['model', 'x']).round(5)"
    ),
    new_markdown_cell(
        "## The study (reduced)\n\n"
        "S in {2, 5, 10}, 3 splits each. MD1 on the whole collection, MD2-MD6 on every split; "
        "each (S, split) is one unit of work for `irm.parallel.map` (here serial)."
    ),
    new_code_cell(
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.UndefinedValueWarning)\n"
        "    study = irm.studies.shards(col, n_shards=[2, 5, 10], n_splits=3, seed=0)\n"
        "study"
    ),
    new_markdown_cell(
        "On more cores pass `backend='processes'` (or a Dask client): the tables are identical. "
        "`irm.parallel.start_method()` says how the workers would start here: *forked* from a "
        "single-threaded Python process on Linux (they inherit the encoded collection at once), "
        "*spawned* elsewhere, as in this notebook's kernel, which runs threads of its own. "
        "Page: `docs/parallel.md`."
    ),
    new_code_cell("irm.parallel.start_method()"),
    new_code_cell("study.runs.head(8).round(4)"),
    new_markdown_cell(
        "Per S for MD6: Kendall's tau against MD1 on the whole collection with its 95% interval "
        "over splits, the Tukey interval width, significant pairs, and the share of pairs "
        "significant in every split."
    ),
    new_code_cell("study.summary_table().round(4)"),
    new_markdown_cell(
        "Per model on S = 5, with the change from the previous model in percent (the paper's "
        "table form)."
    ),
    new_code_cell(
        "study.by_model(5)[['omega2_system', 'n_significant', 'n_significant_change',\n"
        "                   'top_group', 'ci_width', 'ci_width_change', 'tau']].round(3)"
    ),
    new_markdown_cell(
        "Tukey intervals of every system mean, one panel per model: two systems differ "
        "significantly exactly when their intervals do not overlap."
    ),
    new_code_cell("fig = study.plot_intervals(5, split=0)\nfig"),
    new_markdown_cell("LaTeX for a paper, and the same tables as a report section:"),
    new_code_cell(
        "print(study.to_latex(caption='Shard study', label='tab:shards')[:600])\n"
        "section = study.to_section()\n"
        "section.title, len(section.html)"
    ),
    new_markdown_cell(
        "## Backends\n\n"
        "The same study on local processes gives identical numbers (every split has its own "
        "seed). In a notebook `backend='processes'` works because the unit function lives in "
        "irmodels; a Dask client (`backend=client`) or a scheduler address works the same way."
    ),
    new_code_cell(
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', irm.UndefinedValueWarning)\n"
        "    again = irm.studies.shards(col, n_shards=[2, 5], n_splits=2, seed=0,\n"
        "                               models=['MD1', 'MD6'], backend='processes', n_workers=2)\n"
        "    serial = irm.studies.shards(col, n_shards=[2, 5], n_splits=2, seed=0,\n"
        "                                models=['MD1', 'MD6'])\n"
        "pd.testing.assert_frame_equal(again.runs, serial.runs)\n"
        "print('identical:', len(again.runs), 'fits')"
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
nbformat.write(nb, "04-shards.ipynb")
