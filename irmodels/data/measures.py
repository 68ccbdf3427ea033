"""IR effectiveness measures from runs and qrels, vectorised over systems, topics and shards.

``evaluate(runs, qrels, measures)`` scores every (topic, system) pair, or every (topic, system,
shard) triple when a document -> shard assignment is given, and returns the canonical long frame
(:func:`irmodels.frame`). All rankings are sorted once and every measure is a weighted
``np.bincount`` over ranking segments: there is no Python loop over rankings. The measure
grammar, the undefined-value policy and the measure kernels live in
:mod:`irmodels.data._kernels`, the input stage (checks and integer codes) in
:mod:`irmodels.data._encode` and the evaluation stage in :mod:`irmodels.data._evaluation`,
shared with the partitioned evaluation, the shard study and the document-sample simulator.

Conventions follow trec_eval 9/10 (the values equal ``trec_eval -q`` and pytrec_eval-terrier);
see :func:`evaluate` and ``docs/measures.md``.

References: Ferro & Sanderson, SIGIR 2019 (sharded evaluation, undefined cells; docs/methods.md: "Shards and undefined values"); Moffat & Zobel, ACM TOIS 27(1), 2008 (RBP and its residual); Jarvelin & Kekalainen,
ACM TOIS 20(4), 2002 (nDCG).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from irmodels.data._encode import as_runs
from irmodels.data._evaluation import condensed, evaluate_in_memory, undefined_cells
from irmodels.data._kernels import (
    KNOWN_MEASURES,
    Measure,
    UndefinedPolicy,
    parse_measure,
    parse_measures,
)
from irmodels.data.partitioned import evaluate_partitioned, is_partitioned, split_by_system
from irmodels.errors import UsageError

__all__ = ["DEFAULT_MEASURES", "KNOWN_MEASURES", "Measure", "UndefinedPolicy", "evaluate",
           "parse_measure", "undefined_cells"]

DEFAULT_MEASURES = ("AP", "P@10", "nDCG@10", "RBP(0.8)")


def evaluate(
    runs: pd.DataFrame | Mapping[str, pd.DataFrame] | object,
    qrels: pd.DataFrame,
    measures: str | Measure | Sequence[str | Measure] = DEFAULT_MEASURES,
    *,
    shards: Mapping[str, object] | pd.Series | None = None,
    undefined: float | Literal["drop", "missing"] | UndefinedPolicy = 0.0,
    depth: int | None = None,
    relevance_level: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    backend: Any = "serial",
    n_workers: int | None = None,
) -> pd.DataFrame:
    """Score runs against qrels per topic (and shard), the way trec_eval does.

    Parameters
    ----------
    runs : DataFrame, dict or DemoCollection
        Columns ``system, topic, docid, score`` (``rank`` is ignored, as trec_eval ignores it);
        or a dict name -> DataFrame with ``topic, docid, score``; or an object with ``.runs``
        (a :class:`~irmodels.data.collection.DemoCollection`). Other tools' runs are read too
        (:mod:`irmodels.data.adapters`): ranx ``Run`` objects (one, a list with distinct
        ``run.name``, or a dict), pytrec_eval / ir_measures dicts ``{qid: {docid: score}}``
        (one, or a dict name -> run), ir_measures ``ScoredDoc`` tuples, PyTerrier and
        ir_measures frames; a single run without a name is the system ``run``.
    qrels : DataFrame
        Columns ``topic, docid, rel`` (integer grades; negative grades mean "in the pool but not
        judged", as in trec_eval); or a ranx ``Qrels``, a dict ``{qid: {docid: grade}}``,
        ir_datasets / ir_measures ``Qrel`` tuples, a PyTerrier or ir_measures frame.
    measures : str or sequence of str
        Measure names (see :func:`parse_measure`); default ``AP, P@10, nDCG@10, RBP(p=0.8)``.
    shards : mapping or Series, optional
        Document id -> shard id. Every run and the qrels are split by this assignment (each
        run keeps its order and scores) and every measure is computed per
        (topic, system, shard). Every document of the runs and qrels needs a shard.
    undefined : float, "drop" or "missing"
        Policy for undefined values (a topic, or a topic in a shard, with no relevant
        document): a constant substituted for every system (default 0.0, which is what
        trec_eval reports), ``"drop"`` (drop such topics for that measure everywhere, in every
        shard) or ``"missing"`` (leave those rows out: the design becomes unbalanced). For
        ``GMAP`` a substituted constant is an AP (0 gives trec_eval's ``log(1e-5)``).
    depth : int, optional
        Evaluate only the top ``depth`` documents of each ranking (trec_eval ``-M``). With
        shards the cut is applied to the whole run, before it is split.
    relevance_level : int
        Grade from which a document counts as relevant for the binary measures (trec_eval
        ``-l``, default 1). nDCG uses the grades themselves as gains, as trec_eval does.
    complete : bool
        Score a topic of the qrels that a system did not retrieve anything for as an empty
        ranking (trec_eval ``-c``). Default: such (topic, system) pairs are absent, as in
        trec_eval without ``-c``.
    judged_only : bool
        Score every measure on the condensed lists (Sakai 2007): each ranking without the
        documents that are not in the qrels or have a negative grade, ranks closed up
        (trec_eval ``-J``). The measures are then named with ir_measures' parameter
        (``AP(judged_only=True)``); a single measure can ask for it by that name instead.
    backend : {"serial", "processes"}, dask Client or str
        Where partitions are evaluated (:func:`irmodels.parallel.map`). ``runs`` too large for
        memory may be given partitioned by system: a directory (or list) of run files, a list
        of frames, or a Dask DataFrame whose partitions hold whole systems. Each partition is
        read and evaluated on its own (memory bounded by a partition per worker) and the
        results are concatenated: the frame equals the in-memory evaluation. With another
        backend than ``"serial"``, an in-memory frame is split by system the same way.
    n_workers : int, optional
        Processes for ``backend="processes"``.

    Returns
    -------
    DataFrame
        Canonical long frame with columns ``measure`` (canonical measure name), ``topic``,
        ``system``, ``shard`` (only with ``shards``) and ``score``. The undefined cells are in
        ``frame.attrs["undefined"]`` as plain lists (JSON-able, so the frame concatenates,
        merges and writes to Parquet); :func:`undefined_cells` gives them as a DataFrame
        (columns ``measure, topic`` and ``shard``).

    Raises
    ------
    DataFormatError
        Unknown measures, missing or repeated columns, a missing (None / NaN) topic, system or
        document id, scores that are not real numbers (booleans, dates, complex numbers, as
        :func:`irmodels.frame`), non-integer grades or grades outside trec_eval's 32-bit
        range, a document retrieved twice in one ranking or judged twice for one topic
        (trec_eval refuses both; ids are compared as text, so ``5`` and ``"5"`` are one
        document), documents without a shard or a missing shard, a bad ``undefined`` policy,
        ``depth`` or ``relevance_level``.
    UsageError
        ``complete`` or ``judged_only`` is not a boolean.

    Warns
    -----
    UndefinedValueWarning
        When some cells are undefined; says how many and which policy handled them.

    Notes
    -----
    *Order.* Within each (system, topic) the documents are ranked by score descending and ties
    by document id in decreasing ``strcmp`` (byte) order, exactly as trec_eval's
    ``form_res_rels.c`` sorts them; the ``rank`` column of a run file is ignored. trec_eval
    holds scores as C ``float``: scores are compared in single precision, so two scores that
    differ only beyond float precision (e.g. 5000.001 and 5000.0012) tie and the document id
    decides, as in trec_eval and pytrec_eval-terrier. trec_eval's
    test run ``results.test`` has tied scores, one of them between a relevant and a
    non-relevant document of topic 301: this order reproduces trec_eval there to 1e-12
    (pytrec_eval-terrier), the opposite order does not (AP 0.032417 instead of 0.032425; the
    4 decimals of ``out.test.aq`` agree with both).

    *Topics.* A topic is scored when it is in the qrels and in the run (trec_eval without
    ``-c``; ``complete=True`` adds the qrels topics a system missed). Documents retrieved but
    not in the qrels count as non-relevant. A topic that is in the qrels but has no relevant
    document is scored 0 by trec_eval (checked with pytrec_eval-terrier 0.5.11); here such a
    cell is *undefined* for the measures that need a relevant document and the ``undefined``
    policy decides (its default, 0.0, reproduces trec_eval).

    *Measures* (R = number of documents with grade >= ``relevance_level``, rel_i = 1 when the
    document at rank i is relevant, g_i its grade when positive, else 0):

    - ``AP`` = sum_i rel_i P@i / R (trec_eval ``map``); ``AP@k`` sums over i <= k
      (``map_cut_k``). Undefined when R = 0.
    - ``P@k`` = (relevant in the top k) / k, also when fewer than k are retrieved (``P_k``).
      Defined (0) when R = 0.
    - ``R@k`` = (relevant in the top k) / R (``recall_k``); ``Rprec`` = (relevant in the top
      R) / R; ``RR`` = 1 / rank of the first relevant document, 0 if none is retrieved
      (``recip_rank``). Undefined when R = 0.
    - ``nDCG@k`` = sum_{i<=k} g_i / log2(i + 1) divided by the same sum over the ideal ranking
      of all judged grades (``ndcg_cut_k``); ``nDCG`` has no cutoff (``ndcg``). Undefined
      when no document has a positive grade.
    - ``RBP(p)`` = (1 - p) sum_i rel_i p^(i-1) (Moffat & Zobel 2008), binary at
      ``relevance_level``; defined (0) when R = 0. trec_eval's ``rbp`` is ``RBP(p=0.9)`` on
      binary qrels (on graded qrels trec_eval uses the grades as gains; docs/measures.md).
    - ``RBP_res(p)`` = (1 - p) sum_{i unjudged} p^(i-1) + p^d, the residual: the most RBP could
      grow if every unjudged retrieved document and everything below depth d were relevant.
      trec_eval's ``rbp_resid`` (p = 0.9) reports 0 when no retrieved document is unjudged;
      here the tail p^d is always included.
    - ``GMAP``: per topic ``log(max(AP, 1e-5))``, the value trec_eval ``-q`` reports for
      ``gm_map``; a system's GMAP is ``exp`` of its mean over topics (trec_eval's ``all``
      line). Undefined when R = 0.
    - ``num_rel`` (R), ``num_ret`` (retrieved, after ``depth``), ``num_rel_ret``.
    - ``Bpref`` (trec_eval ``bpref``; Buckley & Voorhees 2004) = (1/R) sum over relevant
      retrieved of 1 - min(n, R) / min(N, R), n the judged non-relevant documents above it, N
      those of the topic (1 when n = 0); unjudged documents are ignored. ``gm_bpref`` is per
      topic ``log(max(bpref, 1e-5))``, as ``GMAP``.
    - ``infAP`` (Yilmaz & Aslam 2006): AP estimated from a sample of the pool, where qrels
      grades < 0 mark pooled documents left unjudged; with every pooled document judged it
      is ``AP``.
    - ``IPrec@r`` (``iprec_at_recall_r``) = max P@i over the ranks i at or below the m-th
      relevant document, m = round(r R) (halves up, at least 1; 0 when fewer than m are
      retrieved); ``11pt_avg`` is its mean over r = 0, 0.1, ..., 1.
    - ``SP`` = sum_i rel_i P@i (sum precision: AP times R); ``SP@k`` sums over i <= k.
      ``DCG@k`` = sum_{i<=k} g_i / log2(i + 1), nDCG's numerator. Both defined when R = 0.

    *Shards* (Ferro & Sanderson, SIGIR 2019; docs/methods.md: "Shards and undefined values"). The cells are every
    shard for each (topic, system) pair that would be scored without shards: a system that
    retrieved nothing in a shard gets the values of an empty ranking there. A (topic, shard)
    with no relevant document is undefined for every system and handled by ``undefined``.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> qrels = pd.DataFrame({"topic": ["1", "1", "1", "2"], "docid": ["a", "b", "c", "a"],
    ...                       "rel": [1, 0, 2, 1]})
    >>> runs = pd.DataFrame({"system": ["s"] * 5, "topic": ["1", "1", "1", "2", "2"],
    ...                      "docid": ["a", "b", "c", "b", "a"],
    ...                      "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    >>> irm.evaluate(runs, qrels, ["AP", "P@2", "nDCG@3"]).round(4)
      measure topic system   score
    0      AP     1      s  0.8333
    1      AP     2      s  0.5000
    2     P@2     1      s  0.5000
    3     P@2     2      s  0.5000
    4  nDCG@3     1      s  0.7602
    5  nDCG@3     2      s  0.6309
    """
    if not isinstance(judged_only, (bool, np.bool_)):
        raise UsageError(f"judged_only must be True or False (trec_eval -J), got {judged_only!r}")
    if is_partitioned(runs) or backend != "serial":
        parts = runs if is_partitioned(runs) else split_by_system(as_runs(runs), n_workers)
        if judged_only:
            measures = condensed(parse_measures(measures))  # type: ignore[arg-type]
        return evaluate_partitioned(parts, qrels, measures, backend=backend, n_workers=n_workers,
                                    shards=shards, undefined=undefined, depth=depth,
                                    relevance_level=relevance_level, complete=complete)
    if judged_only:
        measures = condensed(parse_measures(measures))  # type: ignore[arg-type]
    return evaluate_in_memory(runs, qrels, measures, shards=shards, undefined=undefined,
                              depth=depth, relevance_level=relevance_level, complete=complete,
                              stacklevel=4)
