"""Notebook 08 section: measures for incomplete judgements (bpref, infAP, condensed lists) and
means over topics (GMAP)."""

from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell(
        "## Incomplete judgements: bpref, infAP and condensed lists\n\n"
        "When only part of the pool is judged, AP counts every unjudged document as "
        "non-relevant. bpref (Buckley & Voorhees 2004) ignores them, infAP (Yilmaz & Aslam "
        "2006) estimates AP from a random sample of the pool (the pooled documents left "
        "unjudged carry grade -1), and a condensed list (Sakai 2007) removes them before "
        "scoring any measure. On a demo collection, keep a random share of the judgements and "
        "compare each measure's system ranking with AP on all judgements (Kendall's tau, two "
        "draws per share). Page: `docs/measures.md`."
    ),
    new_code_cell(
        "import warnings\n\n"
        "import numpy as np\n\n"
        "col = irm.collection.generate(topics=30, systems=30, depth=100, seed=0)\n"
        "full = irm.evaluate(col.runs, col.qrels, ['AP'])\n"
        "rng = np.random.default_rng(0)\n"
        "rows = []\n"
        "for share in (0.1, 0.2, 0.3, 0.5, 1.0):\n"
        "    for draw in range(2 if share < 1 else 1):\n"
        "        judged = rng.random(len(col.qrels)) < share\n"
        "        sample = col.qrels.assign(rel=col.qrels['rel'].where(judged, -1))\n"
        "        with warnings.catch_warnings():   # a topic may lose all its relevant documents\n"
        "            warnings.simplefilter('ignore', irm.UndefinedValueWarning)\n"
        "            f = irm.evaluate(col.runs, sample,\n"
        "                             ['AP', 'Bpref', 'infAP', 'AP(judged_only=True)'])\n"
        "        for m, g in f.groupby('measure', observed=True):\n"
        "            tau = irm.kendall_tau(full, g)\n"
        "            rows.append({'judged': share, 'measure': m, 'tau': tau})\n"
        "taus = pd.DataFrame(rows).groupby(['measure', 'judged'])['tau'].mean().unstack()\n"
        "taus.round(3)"
    ),
    new_code_cell(
        "ax = taus.T.plot(marker='o', figsize=(6, 3.5))\n"
        "ax.axhline(0.9, color='grey', lw=0.8, ls='--')\n"
        "ax.set_xlabel('share of the judgements kept')\n"
        "ax.set_ylabel(\"Kendall's tau with AP on all judgements\")\n"
        "ax.figure.tight_layout()"
    ),
    new_markdown_cell(
        "With a tenth of the judgements, plain AP reorders the systems most; bpref, infAP and "
        "condensed-list AP keep rankings closer to the full judgements, and condensed-list AP "
        "does as well as bpref, Sakai's finding. With every judgement, infAP and condensed AP "
        "are AP (tau 1) and bpref is a different measure.\n\n"
        "## Means over topics: MAP and GMAP\n\n"
        "`irm.aggregate` reduces per-topic scores to one per system: the arithmetic mean, the "
        "geometric mean (trec_eval's `gm_map`: scores floored at 1e-5), the harmonic mean or the "
        "median. GMAP rewards gains on the hard topics (Robertson 2006). On TREC-8:"
    ),
    new_code_cell(
        "means = pd.concat({how: irm.aggregate(ap, how).set_index('system')['score']\n"
        "                   for how in ('mean', 'gmean', 'median')}, axis=1)\n"
        "print({how: round(irm.kendall_tau(means['mean'], means[how]), 3)\n"
        "       for how in ('gmean', 'median')})\n"
        "ax = means.plot.scatter(x='mean', y='gmean', figsize=(4, 4))\n"
        "ax.set_xlabel('MAP'); ax.set_ylabel('GMAP')\n"
        "means.sort_values('mean', ascending=False).head(5).round(4)"
    ),
]
