"""The measure kernel's input stage: runs and qrels checked and encoded as integer codes, and
the rankings put in trec_eval's order (private module; see :func:`irmodels.evaluate`).

Labels (topics, systems, document ids) become integer codes once (:func:`factorize_labels`,
:func:`natural_codes`); the runs become :class:`Rankings` (one contiguous segment per (system,
topic), in trec_eval's order after :func:`trec_ranked`) and the qrels :class:`EncodedQrels`.
The segment helpers work on any rows grouped by a key. :mod:`irmodels.data.measures`, the
sharded evaluation, pooling and the document-sample simulator all read runs and qrels this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from irmodels.data._kernels import trec_order_key
from irmodels.data.adapters import qrels_input, runs_input  # ranx, ir_datasets, polars, files
from irmodels.data.frame import as_scores, natural_key, require_columns
from irmodels.errors import DataFormatError

__all__ = ["EncodedQrels", "Rankings", "as_block", "as_qrels", "as_runs", "cut_depth",
           "encode_qrels", "encode_runs", "factorize_labels", "grade_values", "in_trec_order",
           "label_positions", "label_set", "natural_codes", "ranking_rows",
           "refuse_duplicate_documents", "score_values", "segment_index", "segment_positions",
           "segment_starts", "segments_in_order", "trec_ranked"]


def as_runs(runs: object) -> pd.DataFrame:
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
    :func:`factorize_labels`, which finds its missing values in the integer codes (``isna`` on 5M
    Python objects would cost 0.2 s a column) and makes 5 and "5" one label."""
    for c in columns:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            if (codes < 0).any():
                raise _missing_labels(col, codes < 0, what)
        elif col.dtype != object and col.hasnans:  # Arrow / pandas strings, floats, Int64
            raise _missing_labels(col, col.isna().to_numpy(dtype=bool), what)


def score_values(col: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col.dtype):
        raise DataFormatError("run column 'score' is boolean; expected numbers")
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "fiu":  # the fast path
        values = col.to_numpy(dtype=np.float64)
    else:  # refuse what irm.frame refuses: booleans, dates, complex numbers...
        values = as_scores(col, "score").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"run column 'score' has {int(bad.sum())} missing, non-numeric or infinite value(s), "
            f"e.g. {_plain(col.iloc[i])!r} at row {i}; every retrieved document needs a finite "
            "score."
        )
    return values


def as_qrels(qrels: object) -> pd.DataFrame:
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


def grade_values(q_df: pd.DataFrame) -> np.ndarray:
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


def factorize_labels(col: pd.Series, what: str = "the") -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the unique labels (object array of str) of a label column, fast.

    Categoricals give their codes; Arrow-backed strings are dictionary-encoded by Arrow;
    anything else is converted to str and hashed by pandas. Labels are text: labels with the
    same text (5 and "5" in an object column) are one label. A missing label is refused
    (:class:`DataFormatError` naming ``what`` column, e.g. "runs").

    >>> codes, labels = factorize_labels(pd.Series([5, "5", "7"], dtype=object, name="docid"))
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
            # here, not at import: pyarrow is optional (not a dependency of irmodels)
            import pyarrow as pa
            import pyarrow.compute as pc  # optional, as above

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


def label_set(universe: Any) -> Any:
    """``universe`` (unique labels) as :func:`label_positions` looks labels up in it: an Arrow string
    array when pyarrow is installed, else a pandas Index. Convert once to look up many times."""
    try:
        # here, not at import: pyarrow is optional (not a dependency of irmodels)
        import pyarrow as pa
    except ImportError:  # pragma: no cover
        return pd.Index(universe)
    if isinstance(universe, pa.Array):
        return universe
    return pa.array(np.asarray(universe, dtype=object), type=pa.large_string())


def label_positions(values: Any, universe: Any) -> np.ndarray:
    """Position of each label of ``values`` in ``universe`` (unique labels, or their
    :func:`label_set`); -1 where absent.

    What ``pd.Index(universe).get_indexer(values)`` gives, by Arrow's hash lookup when pyarrow
    is installed (about 2.5x faster on 100,000 doc ids: no Python string objects).

    >>> label_positions(np.array(["b", "x", "a"], dtype=object), ["a", "b"]).tolist()
    [1, -1, 0]
    """
    u = label_set(universe)
    if isinstance(u, pd.Index):  # pragma: no cover - no pyarrow: pandas' own hashing
        return np.asarray(u.get_indexer(values), dtype=np.int64)
    # here, not at import: pyarrow is optional (not a dependency of irmodels)
    import pyarrow as pa
    import pyarrow.compute as pc  # optional, as above

    v = pa.array(np.asarray(values, dtype=object), type=pa.large_string())
    return pc.index_in(v, value_set=u).fill_null(-1).to_numpy().astype(np.int64)


def _run_heads(arr: Any) -> np.ndarray | None:
    """Starts of the runs of equal values of an Arrow string array, when the runs are long.

    A runs file lists a system's rows together, topic by topic: its system and topic columns
    are a few long runs, and dictionary-encoding only the first value of each run is about 4x
    faster than encoding every row. None (encode every row) for short arrays, nulls, or runs
    shorter than 16 rows on average; the first 4,096 rows decide cheaply for doc ids.
    """
    # here, not at import: pyarrow is optional (not a dependency of irmodels)
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


def natural_codes(col: pd.Series, what: str = "the") -> tuple[np.ndarray, list[str]]:
    """Codes in natural order of the levels of a label column, and the levels."""
    codes, uniq = factorize_labels(col, what)
    levels = [str(u) for u in uniq]
    order = sorted(range(len(levels)), key=lambda i: natural_key(levels[i]))
    remap = np.empty(len(levels), dtype=np.int64)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(levels))
    return remap[codes], [levels[i] for i in order]


def segment_starts(keys: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal ``keys`` (a ranking, when rows are grouped).

    >>> segment_starts(np.array([4, 4, 1, 1, 1, 7])).tolist()
    [0, 2, 5]
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))


def segment_index(first: np.ndarray, n: int, dtype: Any = np.int64) -> np.ndarray:
    """The segment of each of ``n`` rows, segments starting at rows ``first`` (increasing).

    >>> segment_index(np.array([0, 2, 5]), 6).tolist()
    [0, 0, 1, 1, 1, 2]
    """
    return np.repeat(np.arange(len(first), dtype=dtype), np.diff(first, append=n))


def segments_in_order(first: np.ndarray, n: int, order: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Rows that put the segments of ``n`` rows (starting at ``first``) in the order ``order``
    (a permutation of the segments), each segment's rows kept in their order; and the first row
    of each segment once moved.

    >>> rows, new_first = segments_in_order(np.array([0, 2, 5]), 6, np.array([2, 0, 1]))
    >>> rows.tolist(), new_first.tolist()
    ([5, 0, 1, 2, 3, 4], [0, 1, 3])
    """
    lengths = np.diff(first, append=n)[order]
    new_first = np.cumsum(lengths) - lengths
    return np.repeat(first[order] - new_first, lengths) + np.arange(n), new_first


def segment_positions(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted ``keys``: start mask, segment index of each row, 0-based position in segment."""
    n = len(keys)
    starts = segment_starts(keys)
    start = np.zeros(n, dtype=bool)
    start[starts] = True
    seg = segment_index(starts, n)
    pos = np.arange(n, dtype=np.int64) - starts[seg]
    return start, seg, pos


def in_trec_order(key: np.ndarray, score: np.ndarray, docrank: np.ndarray, n_keys: int) -> bool:
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


@dataclass(frozen=True)
class EncodedQrels:
    doc: np.ndarray          # document code of each judgement
    docids: np.ndarray       # the qrels' document ids (object array of str)
    rel: np.ndarray          # integer grade of each judgement
    topic: np.ndarray        # topic code of each judgement (natural order)
    topics: list[str]


def encode_qrels(q_df: pd.DataFrame) -> EncodedQrels:
    """Integer codes of the qrels; a document judged twice for one topic is refused."""
    doc, docids = factorize_labels(q_df["docid"], "qrels")
    rel = grade_values(q_df)
    topic, topics = natural_codes(q_df["topic"], "qrels")
    pair = topic.astype(np.int64) * len(docids) + doc
    if len(pd.unique(pair)) != len(pair):
        dup = pd.Series(pair).duplicated().to_numpy()
        i = int(np.flatnonzero(dup)[0])
        raise DataFormatError(
            f"the qrels judge document {docids[doc[i]]!r} twice for topic "
            f"{topics[topic[i]]!r} ({int(dup.sum())} duplicate row(s)); trec_eval refuses "
            "such qrels. Keep one judgement per (topic, docid)."
        )
    return EncodedQrels(doc, docids, rel, topic, topics)


@dataclass(frozen=True)
class Rankings:
    """Every retrieved row of the topics in the qrels; after :func:`trec_ranked`, in trec_eval order.

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

    def take(self, sel: np.ndarray) -> Rankings:
        return Rankings(self.key[sel], self.doc[sel], self.score[sel], self.docids,
                         self.systems, self.topics)


def encode_runs(run_df: pd.DataFrame, topics: list[str]) -> Rankings:
    """Integer codes of the runs, keeping the topics of the qrels (trec_eval skips others)."""
    if len(run_df) == 0:
        raise DataFormatError("the runs have no rows; nothing can be evaluated")
    rt_codes, rt_uniques = factorize_labels(run_df["topic"], "runs")
    topic = pd.Index(topics).get_indexer(rt_uniques)[rt_codes]
    keep = topic >= 0
    system, systems = natural_codes(run_df["system"], "runs")
    if not keep.any():
        raise DataFormatError(
            f"no topic of the runs is in the qrels (runs: {sorted(rt_uniques)[:5]}, "
            f"qrels: {topics[:5]}); check that both files belong to the same collection"
        )
    doc, docids = factorize_labels(run_df["docid"], "runs")
    key = trec_order_key(score_values(run_df["score"]))
    st_key = system.astype(np.int64) * len(topics) + topic
    r = Rankings(st_key, doc, key, docids, systems, topics)
    return r if keep.all() else r.take(keep)


def trec_ranked(r: Rankings) -> Rankings:
    """trec_eval's order: score (as C float) descending, then document id descending.

    Rankings already contiguous and in this order (run files usually are) skip the sort: the
    measures need each ranking contiguous and ordered, not the rankings in any order.
    """
    by_name = np.argsort(r.docids.astype(str), kind="stable")  # strcmp = UTF-8 byte order
    d_rank = np.empty(len(r.docids), dtype=np.int64)
    d_rank[by_name] = np.arange(len(r.docids))
    dr = d_rank[r.doc]
    if in_trec_order(r.key, r.score, dr, r.n_keys):
        return r
    return r.take(np.lexsort((-dr, -r.score, r.key)))


def ranking_rows(first: np.ndarray, n: int) -> tuple[int, np.ndarray | None] | None:
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
    row = segment_index(first, n)
    return width, row * width + (np.arange(n) - first[row])


def as_block(values: np.ndarray, n_rows: int, width: int, slot: np.ndarray | None,
              fill: Any) -> np.ndarray:
    """``values`` (one per row of contiguous rankings) as the ``(n_rows, width)`` block of
    :func:`ranking_rows`: reshaped when ``slot`` is None, else placed at ``slot`` with ``fill``
    (a scalar, or one value per column) on the padding.

    >>> as_block(np.array([5, 6, 7]), 2, 2, np.array([0, 2, 3]), -1).tolist()
    [[5, -1], [6, 7]]
    """
    if slot is None:
        return values.reshape(n_rows, width)
    block = np.empty((n_rows, width), dtype=values.dtype)
    block[:] = fill
    block.reshape(-1)[slot] = values
    return block


def refuse_duplicate_documents(r: Rankings) -> None:
    """A document retrieved twice in one ranking is refused, as trec_eval does.

    ``r`` comes from :func:`trec_ranked`, so each ranking is contiguous. When they fit a block
    (:func:`ranking_rows`), each ranking is sorted on its own as a row: about 5x faster than one
    sort of every (ranking, doc) pair, which remains the path for ragged rankings.
    """
    n = len(r.key)
    if n < 2:
        return
    n_docs = len(r.docids)
    first = segment_starts(r.key)
    layout = ranking_rows(first, n)
    if layout is not None and n_docs < 2**31 - layout[0]:
        width, slot = layout
        # padding: values that differ from every doc and from each other within a row
        block = as_block(r.doc.astype(np.int32), len(first), width, slot,
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


def cut_depth(r: Rankings, depth: int) -> Rankings:
    """The top ``depth`` rows of each ranking (trec_eval ``-M``)."""
    pos = segment_positions(r.key)[2]
    cut = pos < depth
    return r if cut.all() else r.take(cut)
