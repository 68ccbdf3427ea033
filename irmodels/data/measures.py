"""IR effectiveness measures from runs and qrels, vectorised over systems, topics and shards.

``evaluate(runs, qrels, measures)`` scores every (topic, system) pair, or every (topic, system,
shard) triple when a document -> shard assignment is given, and returns the canonical long frame
(:func:`irmodels.frame`). All rankings are sorted once and every measure is a weighted
``np.bincount`` over ranking segments: there is no Python loop over rankings. The measure
grammar, the undefined-value policy and the measure kernels live in
:mod:`irmodels.data._kernels`, shared with the shard study and the document-sample simulator.

Conventions follow trec_eval 9/10 (the values equal ``trec_eval -q`` and pytrec_eval-terrier);
see :func:`evaluate` and ``docs/measures.md``.

References: Ferro & Sanderson, SIGIR 2019 (sharded evaluation, undefined cells; docs/methods.md: "Shards and undefined values"); Moffat & Zobel, ACM TOIS 27(1), 2008 (RBP and its residual); Jarvelin & Kekalainen,
ACM TOIS 20(4), 2002 (nDCG).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from irmodels.data._kernels import (
    KNOWN_MEASURES,
    Hits,
    Measure,
    UndefinedPolicy,
    parse_measure,
    parse_measures,
    score,
    trec_order_key,
)
from irmodels.data.adapters import qrels_input, runs_input  # ranx, ir_datasets, polars, files
from irmodels.data.frame import _as_scores, natural_key, require_columns
from irmodels.data.io import refuse_control_ids, warn_topic_id_mismatch
from irmodels.data.partitioned import evaluate_partitioned, is_partitioned, split_by_system
from irmodels.errors import DataFormatError, UndefinedValueWarning, UsageError

__all__ = ["DEFAULT_MEASURES", "KNOWN_MEASURES", "Measure", "UndefinedPolicy", "evaluate",
           "parse_measure", "undefined_cells"]

DEFAULT_MEASURES = ("AP", "P@10", "nDCG@10", "RBP(0.8)")


# ---------------------------------------------------------------------------------------------
# input normalisation


def _as_runs(runs: object) -> pd.DataFrame:
    runs = runs_input(runs)
    if not isinstance(runs, (pd.DataFrame, Mapping)) and hasattr(runs, "runs"):
        runs = runs.runs  # a DemoCollection or any object holding runs
    if isinstance(runs, Mapping):
        if not runs:
            raise DataFormatError("the mapping of runs is empty; pass at least one run")
        parts = []
        for name, df in runs.items():
            if not isinstance(df, pd.DataFrame):
                raise DataFormatError(
                    f"run {name!r} is a {type(df).__name__}; expected a DataFrame with columns "
                    "topic, docid, score"
                )
            require_columns(df, ["topic", "docid", "score"], f"run {name!r}")
            _refuse_repeated_columns(df, ["topic", "docid", "score"], f"run {name!r}")
            parts.append(df[["topic", "docid", "score"]].assign(system=str(name)))
        runs = pd.concat(parts, ignore_index=True)
    if not isinstance(runs, pd.DataFrame):
        raise DataFormatError(
            f"runs must be a DataFrame (system, topic, docid, score), a dict name -> DataFrame or "
            f"a DemoCollection; got {type(runs).__name__}"
        )
    require_columns(runs, ["system", "topic", "docid", "score"], "runs")
    _refuse_repeated_columns(runs, ["system", "topic", "docid", "score"], "runs")
    _refuse_missing_labels(runs, ["system", "topic", "docid"], "runs")
    return runs


def _refuse_repeated_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Two columns with one of the names read (``df[name]`` would be a frame), as irm.frame."""
    if not df.columns.has_duplicates:
        return
    for c in columns:
        if int((df.columns == c).sum()) > 1:
            raise DataFormatError(
                f"{what}: column {c!r} appears more than once in the data; keep one of them "
                "(e.g. df.loc[:, ~df.columns.duplicated()])"
            )


def _missing_labels(col: pd.Series, missing: np.ndarray, what: str) -> DataFormatError:
    """The error for the missing labels (``missing``: a boolean mask over the rows) of ``col``."""
    rows = np.flatnonzero(missing)
    return DataFormatError(
        f"{what} column {col.name!r} has {len(rows)} missing value(s) (None or NaN), the first "
        f"at row {int(rows[0])}; every row needs a {col.name} label. Fill them in or drop those "
        "rows first."
    )


def _refuse_missing_labels(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Refuse a missing (None / NaN) topic, system or docid, cheaply: a categorical's codes,
    Arrow's null count, numpy's ``isna`` for floats. An object column is left to
    :func:`_factorize`, which finds its missing values in the integer codes (``isna`` on 5M
    Python objects would cost 0.2 s a column) and makes 5 and "5" one label."""
    for c in columns:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            if (codes < 0).any():
                raise _missing_labels(col, codes < 0, what)
        elif col.dtype != object and col.hasnans:  # Arrow / pandas strings, floats, Int64
            raise _missing_labels(col, col.isna().to_numpy(dtype=bool), what)


def _scores(col: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col.dtype):
        raise DataFormatError("run column 'score' is boolean; expected numbers")
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "fiu":  # the fast path
        values = col.to_numpy(dtype=np.float64)
    else:  # refuse what irm.frame refuses: booleans, dates, complex numbers...
        values = _as_scores(col, "score").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"run column 'score' has {int(bad.sum())} missing, non-numeric or infinite value(s), "
            f"e.g. {_plain(col.iloc[i])!r} at row {i}; every retrieved document needs a finite "
            "score."
        )
    return values


def _as_qrels(qrels: object) -> pd.DataFrame:
    # the adapters first: a ranx Qrels has a .qrels attribute too (a numba Dict)
    qrels = qrels_input(qrels)
    if not isinstance(qrels, pd.DataFrame) and hasattr(qrels, "qrels"):
        qrels = qrels_input(qrels.qrels)  # a DemoCollection or any object holding qrels
    if not isinstance(qrels, pd.DataFrame):
        raise DataFormatError(
            f"qrels must be a DataFrame with columns topic, docid, rel; got {type(qrels).__name__}"
        )
    require_columns(qrels, ["topic", "docid", "rel"], "qrels")
    _refuse_repeated_columns(qrels, ["topic", "docid", "rel"], "qrels")
    if len(qrels) == 0:
        raise DataFormatError("the qrels have no rows; nothing can be evaluated")
    _refuse_missing_labels(qrels, ["topic", "docid"], "qrels")
    return qrels


_GRADE_MIN, _GRADE_MAX = -(2**31), 2**31 - 1  # trec_eval reads grades as C int


def _rels(q_df: pd.DataFrame) -> np.ndarray:
    col = q_df["rel"]
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iu":
        values = col.to_numpy()  # exact: 2**63 - 1 is not rounded to a float first
        bad = np.zeros(len(values), dtype=bool)
    else:
        values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"qrels column 'rel' must hold integer relevance grades; found {col.iloc[i]!r} at "
            f"row {i} ({int(bad.sum())} bad value(s))."
        )
    out = (values < _GRADE_MIN) | (values > _GRADE_MAX)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise DataFormatError(
            f"qrels column 'rel' has the grade {_plain(col.iloc[i])!r} for topic "
            f"{str(q_df['topic'].iloc[i])!r}, document {str(q_df['docid'].iloc[i])!r} (row {i}; "
            f"{int(out.sum())} such grade(s)), outside the 32-bit integer range "
            f"{_GRADE_MIN}..{_GRADE_MAX} of trec_eval's grades; use smaller grades."
        )
    return values.astype(np.int64)


def _plain(value: object) -> object:
    """A numpy scalar as the Python number it holds (for messages: 5, not np.int64(5))."""
    return value.item() if isinstance(value, np.generic) else value


def _factorize(col: pd.Series, what: str = "the") -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the unique labels (object array of str) of a label column, fast.

    Categoricals give their codes; Arrow-backed strings are dictionary-encoded by Arrow;
    anything else is converted to str and hashed by pandas. Labels are text: labels with the
    same text (5 and "5" in an object column) are one label. A missing label is refused
    (:class:`DataFormatError` naming ``what`` column, e.g. "runs").

    >>> codes, labels = _factorize(pd.Series([5, "5", "7"], dtype=object, name="docid"))
    >>> codes.tolist(), labels.tolist()
    ([0, 0, 1], ['5', '7'])
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        if (codes < 0).any():
            raise _missing_labels(col, codes < 0, what)
        cats = np.asarray([str(c) for c in col.cat.categories], dtype=object)
        return _merge_same_text(codes, cats)
    storage = str(getattr(col.dtype, "storage", ""))
    if pd.api.types.is_string_dtype(col.dtype) and "pyarrow" in storage:
        try:
            import pyarrow as pa
            import pyarrow.compute as pc

            arr = pa.array(col)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            heads = _run_heads(arr)
            enc = pc.dictionary_encode(arr if heads is None else arr.take(pa.array(heads)))
            codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            if heads is not None:
                codes = np.repeat(codes, np.diff(heads, append=len(arr)))
            if enc.indices.null_count:
                raise _missing_labels(col, col.isna().to_numpy(dtype=bool), what)
            uniq = np.asarray(enc.dictionary.to_pylist(), dtype=object)
            return codes, uniq
        except ImportError:  # pragma: no cover
            pass
    values = col if pd.api.types.is_string_dtype(col.dtype) else col.astype(str)
    codes, uniq = pd.factorize(values.to_numpy(dtype=object))
    if len(codes) and int(codes.min()) < 0:
        raise _missing_labels(col, codes < 0, what)
    labels = np.asarray([str(u) for u in uniq], dtype=object)
    if pd.api.types.infer_dtype(uniq, skipna=False) == "string":
        return codes.astype(np.int64), labels
    # an object column may mix 5 and "5": one label as text (checked on the uniques only)
    return _merge_same_text(codes.astype(np.int64), labels)


def _merge_same_text(codes: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes and labels with labels of the same text (5 and "5", once str) made one."""
    new, uniq = pd.factorize(labels)
    if len(uniq) == len(labels):
        return codes, labels
    return new.astype(np.int64)[codes], np.asarray(uniq, dtype=object)


def _label_set(universe: Any) -> Any:
    """``universe`` (unique labels) as :func:`_positions` looks labels up in it: an Arrow string
    array when pyarrow is installed, else a pandas Index. Convert once to look up many times."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover
        return pd.Index(universe)
    if isinstance(universe, pa.Array):
        return universe
    return pa.array(np.asarray(universe, dtype=object), type=pa.large_string())


def _positions(values: Any, universe: Any) -> np.ndarray:
    """Position of each label of ``values`` in ``universe`` (unique labels, or their
    :func:`_label_set`); -1 where absent.

    What ``pd.Index(universe).get_indexer(values)`` gives, by Arrow's hash lookup when pyarrow
    is installed (about 2.5x faster on 100,000 doc ids: no Python string objects).

    >>> _positions(np.array(["b", "x", "a"], dtype=object), ["a", "b"]).tolist()
    [1, -1, 0]
    """
    u = _label_set(universe)
    if isinstance(u, pd.Index):  # pragma: no cover - no pyarrow: pandas' own hashing
        return np.asarray(u.get_indexer(values), dtype=np.int64)
    import pyarrow as pa
    import pyarrow.compute as pc

    v = pa.array(np.asarray(values, dtype=object), type=pa.large_string())
    return pc.index_in(v, value_set=u).fill_null(-1).to_numpy().astype(np.int64)


def _run_heads(arr: Any) -> np.ndarray | None:
    """Starts of the runs of equal values of an Arrow string array, when the runs are long.

    A runs file lists a system's rows together, topic by topic: its system and topic columns
    are a few long runs, and dictionary-encoding only the first value of each run is about 4x
    faster than encoding every row. None (encode every row) for short arrays, nulls, or runs
    shorter than 16 rows on average; the first 4,096 rows decide cheaply for doc ids.
    """
    import pyarrow.compute as pc

    n = len(arr)
    if n < 4096 or arr.null_count:
        return None
    head = arr.slice(0, 4096)
    if pc.sum(pc.not_equal(head.slice(1), head.slice(0, 4095))).as_py() > 4096 // 16:
        return None
    change = pc.not_equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    heads = np.flatnonzero(np.concatenate(([True], change)))
    return heads if len(heads) <= n // 16 else None


def _natural_codes(col: pd.Series, what: str = "the") -> tuple[np.ndarray, list[str]]:
    """Codes in natural order of the levels of a label column, and the levels."""
    codes, uniq = _factorize(col, what)
    levels = [str(u) for u in uniq]
    order = sorted(range(len(levels)), key=lambda i: natural_key(levels[i]))
    remap = np.empty(len(levels), dtype=np.int64)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(levels))
    return remap[codes], [levels[i] for i in order]


# ---------------------------------------------------------------------------------------------
# evaluation


def _segment_starts(keys: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal ``keys`` (a ranking, when rows are grouped).

    >>> _segment_starts(np.array([4, 4, 1, 1, 1, 7])).tolist()
    [0, 2, 5]
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))


def _segment_index(first: np.ndarray, n: int, dtype: Any = np.int64) -> np.ndarray:
    """The segment of each of ``n`` rows, segments starting at rows ``first`` (increasing).

    >>> _segment_index(np.array([0, 2, 5]), 6).tolist()
    [0, 0, 1, 1, 1, 2]
    """
    return np.repeat(np.arange(len(first), dtype=dtype), np.diff(first, append=n))


def _segments_in_order(first: np.ndarray, n: int, order: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Rows that put the segments of ``n`` rows (starting at ``first``) in the order ``order``
    (a permutation of the segments), each segment's rows kept in their order; and the first row
    of each segment once moved.

    >>> rows, new_first = _segments_in_order(np.array([0, 2, 5]), 6, np.array([2, 0, 1]))
    >>> rows.tolist(), new_first.tolist()
    ([5, 0, 1, 2, 3, 4], [0, 1, 3])
    """
    lengths = np.diff(first, append=n)[order]
    new_first = np.cumsum(lengths) - lengths
    return np.repeat(first[order] - new_first, lengths) + np.arange(n), new_first


def _segment_positions(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted ``keys``: start mask, segment index of each row, 0-based position in segment."""
    n = len(keys)
    starts = _segment_starts(keys)
    start = np.zeros(n, dtype=bool)
    start[starts] = True
    seg = _segment_index(starts, n)
    pos = np.arange(n, dtype=np.int64) - starts[seg]
    return start, seg, pos


def _in_trec_order(key: np.ndarray, score: np.ndarray, docrank: np.ndarray, n_keys: int) -> bool:
    """True when every ranking is contiguous and sorted by score desc, then docid desc."""
    n = len(key)
    if n < 2:
        return True
    same = key[1:] == key[:-1]
    ok = (score[1:] < score[:-1]) | ((score[1:] == score[:-1]) & (docrank[1:] < docrank[:-1]))
    if not np.all(ok | ~same):
        return False
    starts = np.r_[key[:1], key[1:][~same]]
    return bool(np.bincount(starts, minlength=n_keys).max() <= 1)


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
        parts = runs if is_partitioned(runs) else split_by_system(_as_runs(runs), n_workers)
        if judged_only:
            measures = _condensed(parse_measures(measures))  # type: ignore[arg-type]
        return evaluate_partitioned(parts, qrels, measures, backend=backend, n_workers=n_workers,
                                    shards=shards, undefined=undefined, depth=depth,
                                    relevance_level=relevance_level, complete=complete)
    if judged_only:
        measures = _condensed(parse_measures(measures))  # type: ignore[arg-type]
    opts = _options(measures, undefined, depth, relevance_level, complete)
    qrels = _as_qrels(qrels)  # once: an ir_datasets iterator can be read only once
    q = _encode_qrels(qrels)
    runs = _as_runs(runs)
    refuse_control_ids(runs, ["system", "topic", "docid"], "runs")  # a NUL in a docid...
    refuse_control_ids(qrels, ["topic", "docid"], "qrels")
    # "051" vs "51"; on the distinct topics (a Python list of 5M ids cost 10 s on TREC-8 runs)
    warn_topic_id_mismatch(runs["topic"].unique(), q.topics, stacklevel=3)
    r = _rank(_encode_runs(runs, q.topics))
    _refuse_duplicates(r)
    if opts.depth is not None:
        r = _cut_depth(r, opts.depth)
    present = _scored_pairs(r, opts.complete)
    cells = _split_shards(r, q, shards)
    hits: dict[bool, Hits] = {}  # the full rankings and the condensed lists, as asked
    for m in opts.measures:
        if m.judged_only not in hits:
            hits[m.judged_only] = _hits(r, q, cells, opts.level, m.judged_only)
    results = [(m, *score(m, hits[m.judged_only])) for m in opts.measures]
    return _assemble(results, present, r, cells, opts.policy)


def _condensed(measures: list[Measure]) -> list[Measure]:
    """The measures on condensed lists (``judged_only=True``); ``num_rel`` (a count of the
    qrels, the same on any list) is kept as it is, ``RBP_res`` refused."""
    from dataclasses import replace

    out = []
    for m in measures:
        if m.kind == "RBP_res":
            raise DataFormatError(
                f"judged_only=True cannot score {m.name}: it measures the unjudged documents, "
                "and a condensed list has none. Evaluate it without judged_only, or request "
                "the other measures by name (AP(judged_only=True), ...)"
            )
        out.append(m if m.kind == "num_rel" else replace(m, judged_only=True))
    return out


# ---------------------------------------------------------------------------------------------
# the steps of evaluate


@dataclass(frozen=True)
class _Options:
    measures: list[Measure]
    policy: UndefinedPolicy
    depth: int | None
    level: int
    complete: bool


def _options(measures: object, undefined: object, depth: object, relevance_level: object,
             complete: object) -> _Options:
    """Validate every option before reading any data."""
    ms = parse_measures(measures)  # type: ignore[arg-type]
    policy = UndefinedPolicy.parse(undefined)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, (int, np.integer))
                              or depth < 1):
        raise DataFormatError(f"depth must be a positive integer or None, got {depth!r}")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)) \
            or relevance_level < 1:
        raise DataFormatError(
            f"relevance_level must be an integer >= 1 (trec_eval -l), got {relevance_level!r}"
        )
    if not isinstance(complete, (bool, np.bool_)):
        raise UsageError(
            f"complete must be True or False (trec_eval -c), got {complete!r}"
        )
    return _Options(ms, policy, None if depth is None else int(depth), int(relevance_level),
                    bool(complete))


@dataclass(frozen=True)
class _Qrels:
    doc: np.ndarray          # document code of each judgement
    docids: np.ndarray       # the qrels' document ids (object array of str)
    rel: np.ndarray          # integer grade of each judgement
    topic: np.ndarray        # topic code of each judgement (natural order)
    topics: list[str]


def _encode_qrels(q_df: pd.DataFrame) -> _Qrels:
    """Integer codes of the qrels; a document judged twice for one topic is refused."""
    doc, docids = _factorize(q_df["docid"], "qrels")
    rel = _rels(q_df)
    topic, topics = _natural_codes(q_df["topic"], "qrels")
    pair = topic.astype(np.int64) * len(docids) + doc
    if len(pd.unique(pair)) != len(pair):
        dup = pd.Series(pair).duplicated().to_numpy()
        i = int(np.flatnonzero(dup)[0])
        raise DataFormatError(
            f"the qrels judge document {docids[doc[i]]!r} twice for topic "
            f"{topics[topic[i]]!r} ({int(dup.sum())} duplicate row(s)); trec_eval refuses "
            "such qrels. Keep one judgement per (topic, docid)."
        )
    return _Qrels(doc, docids, rel, topic, topics)


@dataclass(frozen=True)
class _Rankings:
    """Every retrieved row of the topics in the qrels; after :func:`_rank`, in trec_eval order.

    ``key`` is ``system * T + topic``; each ranking is contiguous once ranked.
    """

    key: np.ndarray          # (N,) ranking of each row
    doc: np.ndarray          # (N,) document code
    score: np.ndarray        # (N,) trec_eval's sort key (float32)
    docids: np.ndarray       # document ids of the runs
    systems: list[str]
    topics: list[str]

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    @property
    def n_keys(self) -> int:
        return len(self.systems) * len(self.topics)

    def take(self, sel: np.ndarray) -> _Rankings:
        return _Rankings(self.key[sel], self.doc[sel], self.score[sel], self.docids,
                         self.systems, self.topics)


def _encode_runs(run_df: pd.DataFrame, topics: list[str]) -> _Rankings:
    """Integer codes of the runs, keeping the topics of the qrels (trec_eval skips others)."""
    if len(run_df) == 0:
        raise DataFormatError("the runs have no rows; nothing can be evaluated")
    rt_codes, rt_uniques = _factorize(run_df["topic"], "runs")
    topic = pd.Index(topics).get_indexer(rt_uniques)[rt_codes]
    keep = topic >= 0
    system, systems = _natural_codes(run_df["system"], "runs")
    if not keep.any():
        raise DataFormatError(
            f"no topic of the runs is in the qrels (runs: {sorted(rt_uniques)[:5]}, "
            f"qrels: {topics[:5]}); check that both files belong to the same collection"
        )
    doc, docids = _factorize(run_df["docid"], "runs")
    key = trec_order_key(_scores(run_df["score"]))
    st_key = system.astype(np.int64) * len(topics) + topic
    r = _Rankings(st_key, doc, key, docids, systems, topics)
    return r if keep.all() else r.take(keep)


def _rank(r: _Rankings) -> _Rankings:
    """trec_eval's order: score (as C float) descending, then document id descending.

    Rankings already contiguous and in this order (run files usually are) skip the sort: the
    measures need each ranking contiguous and ordered, not the rankings in any order.
    """
    by_name = np.argsort(r.docids.astype(str), kind="stable")  # strcmp = UTF-8 byte order
    d_rank = np.empty(len(r.docids), dtype=np.int64)
    d_rank[by_name] = np.arange(len(r.docids))
    dr = d_rank[r.doc]
    if _in_trec_order(r.key, r.score, dr, r.n_keys):
        return r
    return r.take(np.lexsort((-dr, -r.score, r.key)))


def _ranking_rows(first: np.ndarray, n: int) -> tuple[int, np.ndarray | None] | None:
    """Contiguous rankings (first rows ``first``, of ``n`` rows) as the rows of a block.

    Returns the width of the ``(rankings, width)`` block (the longest ranking) and each row's
    flat position in it (None when every ranking has that length: the block is the rows
    reshaped); None when padding the shorter rankings would more than double the rows. Short
    rows sorted one by one are several times faster than one sort of all the rows (they stay in
    cache): the duplicate check and the shard study's split use this.
    """
    if n == 0:
        return None
    lengths = np.diff(first, append=n)
    width = int(lengths.max())
    if len(first) * width > 2 * n:
        return None
    if int(lengths.min()) == width:
        return width, None
    row = _segment_index(first, n)
    return width, row * width + (np.arange(n) - first[row])


def _as_block(values: np.ndarray, n_rows: int, width: int, slot: np.ndarray | None,
              fill: Any) -> np.ndarray:
    """``values`` (one per row of contiguous rankings) as the ``(n_rows, width)`` block of
    :func:`_ranking_rows`: reshaped when ``slot`` is None, else placed at ``slot`` with ``fill``
    (a scalar, or one value per column) on the padding.

    >>> _as_block(np.array([5, 6, 7]), 2, 2, np.array([0, 2, 3]), -1).tolist()
    [[5, -1], [6, 7]]
    """
    if slot is None:
        return values.reshape(n_rows, width)
    block = np.empty((n_rows, width), dtype=values.dtype)
    block[:] = fill
    block.reshape(-1)[slot] = values
    return block


def _refuse_duplicates(r: _Rankings) -> None:
    """A document retrieved twice in one ranking is refused, as trec_eval does.

    ``r`` comes from :func:`_rank`, so each ranking is contiguous. When they fit a block
    (:func:`_ranking_rows`), each ranking is sorted on its own as a row: about 5x faster than one
    sort of every (ranking, doc) pair, which remains the path for ragged rankings.
    """
    n = len(r.key)
    if n < 2:
        return
    n_docs = len(r.docids)
    first = _segment_starts(r.key)
    layout = _ranking_rows(first, n)
    if layout is not None and n_docs < 2**31 - layout[0]:
        width, slot = layout
        # padding: values that differ from every doc and from each other within a row
        block = _as_block(r.doc.astype(np.int32), len(first), width, slot,
                          -1 - np.arange(width, dtype=np.int32))
        block = np.sort(block, axis=1)
        dup = block[:, 1:] == block[:, :-1]
        if not dup.any():
            return
        row, col = np.unravel_index(int(np.flatnonzero(dup)[0]), dup.shape)
        n_dup = int(dup.sum())
        st, dc = int(r.key[first[row]]), int(block[row, col])
    else:
        pair = r.key * n_docs + r.doc
        if r.n_keys * n_docs < 2**31:  # a narrower sort when the keys fit in 32 bits
            pair = pair.astype(np.int32)
        pair = np.sort(pair)
        dup = pair[1:] == pair[:-1]
        if not dup.any():
            return
        n_dup = int(dup.sum())
        st, dc = divmod(int(pair[1:][np.flatnonzero(dup)[0]]), n_docs)
    sy, tp = divmod(st, r.n_topics)
    raise DataFormatError(
        f"{n_dup} document(s) appear twice in one ranking, e.g. "
        f"{r.docids[dc]!r} for system {r.systems[sy]!r}, topic {r.topics[tp]!r}; trec_eval "
        "refuses such runs. Remove the duplicates (keep the best-scored copy)."
    )


def _cut_depth(r: _Rankings, depth: int) -> _Rankings:
    """The top ``depth`` rows of each ranking (trec_eval ``-M``)."""
    pos = _segment_positions(r.key)[2]
    cut = pos < depth
    return r if cut.all() else r.take(cut)


def _scored_pairs(r: _Rankings, complete: bool) -> np.ndarray:
    """(system, topic) pairs scored: retrieved something, or every pair with ``complete``."""
    present = np.zeros(r.n_keys, dtype=bool)
    present[r.key] = True
    if complete:
        present[:] = True
    return present


@dataclass(frozen=True)
class _Cells:
    """Rankings split by shard: cell ``(system * T + topic) * S + shard`` of each row."""

    cell: np.ndarray         # (N,) cell of each row, contiguous, rows in ranking order
    doc: np.ndarray          # (N,) document code of each row
    key: np.ndarray          # (N,) (system, topic) of each row
    q_shard: np.ndarray      # shard of each judgement
    n_shards: int
    shard_levels: list[str] | None


def _split_shards(r: _Rankings, q: _Qrels, shards: object) -> _Cells:
    """Split every ranking (keeping its order) and the qrels by a document -> shard map."""
    if shards is None:
        return _Cells(r.key, r.doc, r.key, np.zeros(len(q.doc), dtype=np.int64), 1, None)
    shard_map = shards if isinstance(shards, pd.Series) else pd.Series(shards)
    if len(shard_map) == 0:
        raise DataFormatError("the shard assignment is empty; pass a mapping doc id -> shard")
    for what, missing in (("shard", shard_map.isna().to_numpy(dtype=bool)),
                          ("document id", np.asarray(shard_map.index.isna(), dtype=bool))):
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise DataFormatError(
                f"the shard assignment has {int(missing.sum())} missing {what}(s) (None or "
                f"NaN), the first at entry {i} (document {shard_map.index[i]!r}, shard "
                f"{shard_map.iloc[i]!r}); every document needs a shard. Fill them in or drop "
                "those entries first."
            )
    shard_map = pd.Series(shard_map.to_numpy(), index=shard_map.index.astype(str))
    if shard_map.index.has_duplicates:
        d = shard_map.index[shard_map.index.duplicated()][0]
        raise DataFormatError(f"the shard assignment lists document {d!r} more than once")
    codes, levels = _natural_codes(shard_map.astype(str))
    index = pd.Index(shard_map.index)
    pos = index.get_indexer(r.docids)
    q_pos = index.get_indexer(q.docids)
    missing = np.concatenate([r.docids[pos < 0], q.docids[q_pos < 0]])
    if len(missing):
        miss = pd.unique(missing)
        raise DataFormatError(
            f"{len(miss)} document(s) of the runs or qrels have no shard, e.g. "
            f"{list(miss[:3])}; the assignment must cover the whole collection (build it "
            "from the collection's doc ids, or from the union of runs and qrels)."
        )
    n_shards = len(levels)
    cell = r.key * n_shards + codes[pos][r.doc]
    order = np.argsort(cell, kind="stable")  # keeps each run's order inside a shard
    return _Cells(cell[order], r.doc[order], r.key[order], codes[q_pos][q.doc], n_shards,
                  levels)


_NOT_POOLED = -2  # the grade of a retrieved document not in the qrels (trec_eval's NONPOOL)


def _grades(r: _Rankings, q: _Qrels, c: _Cells) -> np.ndarray:
    """The grade of each retrieved row: -2 for a document not in the qrels (not pooled), -1
    for one in the qrels with a negative grade (pooled but not judged), else its grade."""
    n_docs = len(r.docids)
    q_docpos = _positions(q.docids, r.docids)[q.doc]
    judged = q_docpos >= 0
    if not judged.any():
        return np.full(len(c.doc), _NOT_POOLED, dtype=np.int64)
    qkey = q.topic.astype(np.int64) * (n_docs + 1) + (q_docpos + 1)
    rkey = (c.key % r.n_topics).astype(np.int64) * (n_docs + 1) + (c.doc + 1)
    grade_of = np.maximum(q.rel, -1)  # every negative grade means "pooled, not judged"
    if r.n_topics * (n_docs + 1) <= 20_000_000:  # dense (topic, doc) -> grade table
        table = np.full(r.n_topics * (n_docs + 1), _NOT_POOLED, dtype=np.int32)
        table[qkey[judged]] = grade_of[judged]
        return table[rkey].astype(np.int64)
    qkeys, grades = qkey[judged], grade_of[judged]  # sorted keys and a binary search
    o = np.argsort(qkeys)
    qkeys, grades = qkeys[o], grades[o]
    loc = np.minimum(np.searchsorted(qkeys, rkey), len(qkeys) - 1)
    return np.where(qkeys[loc] == rkey, grades[loc], _NOT_POOLED)


def _segment_cumsum(flag: np.ndarray, start: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Rows flagged at or above each row within its segment (rows grouped by segment)."""
    cum = np.cumsum(flag, dtype=np.int64)
    starts = np.flatnonzero(start)
    return cum - ((cum[starts] - flag[starts])[seg] if len(starts) else 0)


def _hits(r: _Rankings, q: _Qrels, c: _Cells, level: int, judged_only: bool = False) -> Hits:
    """The kernels' input: relevant rows, positive-gain rows, unjudged rows, per-cell counts.

    ``judged_only``: the condensed lists, every ranking without its unjudged documents (those
    not in the qrels and those with a negative grade), ranks closed up (trec_eval ``-J``).
    """
    grade = _grades(r, q, c)
    if judged_only:
        keep = grade >= 0
        if not keep.all():
            c = _Cells(c.cell[keep], c.doc[keep], c.key[keep], c.q_shard, c.n_shards,
                       c.shard_levels)
            grade = grade[keep]
    s = c.n_shards
    n_ts = r.n_topics * s
    n_cells = r.n_keys * s
    ts_q = q.topic * s + c.q_shard
    ts_of_cell = (np.arange(n_cells, dtype=np.int64) // s % r.n_topics) * s \
        + np.arange(n_cells, dtype=np.int64) % s
    num_rel = np.bincount(ts_q, weights=q.rel >= level, minlength=n_ts)[ts_of_cell]
    start, seg, pos = _segment_positions(c.cell)
    rank = pos + 1.0
    isrel = grade >= level
    cumrel = _segment_cumsum(isrel, start, seg)
    gain = grade > 0
    unjudged = grade < 0

    def judged() -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # Bpref, infAP
        nonrel = (grade >= 0) & ~isrel
        pooled = grade == -1
        q_nonrel = (q.rel >= 0) & (q.rel < level)
        n_nonrel = np.bincount(ts_q, weights=q_nonrel, minlength=n_ts)[ts_of_cell]
        return (_segment_cumsum(nonrel, start, seg)[isrel].astype(np.float64),
                _segment_cumsum(pooled, start, seg)[isrel].astype(np.float64), n_nonrel)

    def ideal(k: int | None) -> np.ndarray:  # ideal DCG per cell from the judged grades
        pos_g = q.rel > 0
        g_ts, g = ts_q[pos_g], q.rel[pos_g].astype(np.float64)
        o = np.lexsort((-g, g_ts))
        g_ts, g = g_ts[o], g[o]
        gp = _segment_positions(g_ts)[2]
        w = g / np.log2(gp + 2.0)
        if k is not None:
            w = np.where(gp < k, w, 0.0)
        return np.bincount(g_ts, weights=w, minlength=n_ts)[ts_of_cell]

    return Hits(
        cell=c.cell[isrel], rank=rank[isrel], nrel=cumrel[isrel].astype(np.float64),
        n_rel=num_rel, n_cells=n_cells, n_ret=np.bincount(c.cell, minlength=n_cells),
        gain_cell=c.cell[gain], gain_rank=rank[gain], gain=grade[gain].astype(np.float64),
        ideal_dcg=ideal, unjudged_cell=c.cell[unjudged], unjudged_rank=rank[unjudged],
        judged=judged, judged_only=judged_only,
    )


def _assemble(results: list[tuple[Measure, np.ndarray, np.ndarray]], present: np.ndarray,
              r: _Rankings, c: _Cells, policy: UndefinedPolicy) -> pd.DataFrame:
    """The canonical long frame, with the undefined-value policy applied."""
    n_shards, shard_levels, n_topics = c.n_shards, c.shard_levels, r.n_topics
    n_cells = r.n_keys * n_shards
    cells = np.arange(n_cells, dtype=np.int64)
    st_of_cell = cells // n_shards
    shard_of_cell = cells % n_shards
    sys_of_cell = st_of_cell // n_topics
    topic_of_cell = st_of_cell % n_topics
    present_cell = present[st_of_cell]
    # output order: measure, topic, system, shard
    out_order = np.lexsort((shard_of_cell, sys_of_cell, topic_of_cell))
    out_order = out_order[present_cell[out_order]]
    topic_out = topic_of_cell[out_order]
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    undef_cells: dict[str, list[str]] = {"measure": [], "topic": []}
    if shard_levels is not None:
        undef_cells["shard"] = []
    n_undef_total = 0
    for m, val, undef in results:
        undef_here = undef[out_order]
        values, keep = policy.apply(m, val[out_order], undef_here, topic_out)
        if undef_here.any():
            n_undef_total += int(undef_here.sum())
            sel = out_order[undef_here]
            ts = np.unique(topic_of_cell[sel] * n_shards + shard_of_cell[sel])
            undef_cells["measure"] += [m.name] * len(ts)
            undef_cells["topic"] += [r.topics[i] for i in ts // n_shards]
            if shard_levels is not None:
                undef_cells["shard"] += [shard_levels[i] for i in ts % n_shards]
        parts.append((out_order[keep], values[keep]))
    if sum(len(p[0]) for p in parts) == 0:
        raise DataFormatError(
            "every cell was dropped by the undefined-value policy; no topic has a relevant "
            "document in every shard. Use undefined=0.0 or undefined='missing'."
        )
    m_code = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
    sel = np.concatenate([p[0] for p in parts])
    score_col = np.concatenate([p[1] for p in parts]).astype(np.float64)
    names = [m.name for m, _, _ in results]
    # the canonical long frame (irm.frame's contract: factor columns as categoricals in
    # natural order, measures in the order asked for, float64 scores, a RangeIndex), built
    # from codes directly
    out = pd.DataFrame({
        "measure": _factor(m_code, names),
        "topic": _factor(topic_of_cell[sel], list(r.topics)),
        "system": _factor(sys_of_cell[sel], list(r.systems)),
    })
    if shard_levels is not None:
        out["shard"] = _factor(shard_of_cell[sel], list(shard_levels))
    out["score"] = score_col
    out.attrs["undefined"] = undef_cells
    if n_undef_total:
        key = "topic, system, shard" if shard_levels is not None else "topic, system"
        where = "(measure, topic, shard)" if shard_levels is not None else "(measure, topic)"
        warnings.warn(
            f"{n_undef_total} ({key}) value(s) are undefined: {len(undef_cells['topic'])} "
            f"{where} cell(s) have no relevant document; {policy.describe()}. The cells are "
            "listed by undefined_cells(frame) (frame.attrs['undefined']); choose the policy with "
            "undefined=<number>|'drop'|'missing'.",
            UndefinedValueWarning,
            stacklevel=3,
        )
    return out


def _factor(codes: np.ndarray, levels: list[str]) -> pd.Categorical:
    """A categorical of the levels used, in the order of ``levels``."""
    used = np.zeros(len(levels), dtype=bool)
    used[codes] = True
    if used.all():
        return pd.Categorical.from_codes(codes, categories=levels)
    remap = np.cumsum(used) - 1
    return pd.Categorical.from_codes(remap[codes],
                                     categories=[lv for lv, u in zip(levels, used) if u])


def undefined_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The undefined cells of an :func:`evaluate` output, as a DataFrame.

    ``frame.attrs["undefined"]`` holds them as plain lists (``{"measure": [...], "topic":
    [...]}`` and ``"shard"`` with shards), so that the frame still concatenates, merges and
    writes to Parquet; this gives the table (columns ``measure, topic`` and ``shard``).

    Examples
    --------
    >>> import warnings, pandas as pd, irmodels as irm
    >>> from irmodels.data.measures import undefined_cells
    >>> qrels = pd.DataFrame({"topic": ["1", "2"], "docid": ["a", "b"], "rel": [1, 0]})
    >>> runs = pd.DataFrame({"system": "s", "topic": ["1", "2"], "docid": ["a", "b"],
    ...                      "score": [1.0, 1.0]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", irm.UndefinedValueWarning)
    ...     f = irm.evaluate(runs, qrels, ["AP", "P@1"])
    >>> undefined_cells(f)
      measure topic
    0      AP     2
    """
    cells = frame.attrs.get("undefined")
    if cells is None:
        return pd.DataFrame({"measure": pd.Series(dtype=object), "topic": pd.Series(dtype=object)})
    if isinstance(cells, pd.DataFrame):  # written by an older irmodels
        return cells.copy()
    return pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in cells.items()})
