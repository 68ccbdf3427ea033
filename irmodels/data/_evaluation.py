"""The measure kernel's evaluation stage: options checked, rankings split by shard, the kernels'
input built and the long frame assembled (private module; see :func:`irmodels.evaluate`).

:func:`evaluate_in_memory` evaluates runs held in memory; :func:`irmodels.evaluate` calls it
directly, and :mod:`irmodels.data.partitioned` calls it once per partition (both import it from
here, so neither imports the other's driver).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from irmodels.data._encode import (
    EncodedQrels,
    Rankings,
    as_qrels,
    as_runs,
    cut_depth,
    encode_qrels,
    encode_runs,
    label_positions,
    natural_codes,
    refuse_duplicate_documents,
    segment_positions,
    trec_ranked,
)
from irmodels.data._kernels import Hits, Measure, UndefinedPolicy, parse_measures, score
from irmodels.data.io import refuse_control_ids, warn_topic_id_mismatch
from irmodels.errors import DataFormatError, UndefinedValueWarning, UsageError

__all__ = ["ShardCells", "condensed", "evaluate_in_memory", "retrieved_grades", "undefined_cells"]


def evaluate_in_memory(
    runs: object,
    qrels: object,
    measures: object,
    *,
    shards: object = None,
    undefined: object = 0.0,
    depth: object = None,
    relevance_level: object = 1,
    complete: object = False,
    warn_undefined: bool = True,
    stacklevel: int = 3,
) -> pd.DataFrame:
    """:func:`irmodels.evaluate` of runs held in memory (the options are its own; ``measures``
    already condensed when ``judged_only``).

    ``warn_undefined=False`` leaves out the :class:`~irmodels.UndefinedValueWarning` (the
    partitioned evaluation warns once for the union of its partitions' cells). The warnings
    point at the frame ``stacklevel - 2`` calls above this one (3: the caller of this function;
    :func:`irmodels.evaluate` passes 4, its own caller).
    """
    opts = _options(measures, undefined, depth, relevance_level, complete)
    q_df = as_qrels(qrels)  # once: an ir_datasets iterator can be read only once
    q = encode_qrels(q_df)
    run_df = as_runs(runs)
    refuse_control_ids(run_df, ["system", "topic", "docid"], "runs")  # a NUL in a docid...
    refuse_control_ids(q_df, ["topic", "docid"], "qrels")
    # "051" vs "51"; on the distinct topics (a Python list of 5M ids cost 10 s on TREC-8 runs)
    warn_topic_id_mismatch(run_df["topic"].unique(), q.topics, stacklevel=stacklevel)
    r = trec_ranked(encode_runs(run_df, q.topics))
    refuse_duplicate_documents(r)
    if opts.depth is not None:
        r = cut_depth(r, opts.depth)
    present = _scored_pairs(r, opts.complete)
    cells = _split_shards(r, q, shards)
    hits: dict[bool, Hits] = {}  # the full rankings and the condensed lists, as asked
    for m in opts.measures:
        if m.judged_only not in hits:
            hits[m.judged_only] = _hits(r, q, cells, opts.level, m.judged_only)
    results = [(m, *score(m, hits[m.judged_only])) for m in opts.measures]
    return _assemble(results, present, r, cells, opts.policy, warn=warn_undefined,
                     stacklevel=stacklevel)


def condensed(measures: list[Measure]) -> list[Measure]:
    """The measures on condensed lists (``judged_only=True``); ``num_rel`` (a count of the
    qrels, the same on any list) is kept as it is, ``RBP_res`` refused."""
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


def _scored_pairs(r: Rankings, complete: bool) -> np.ndarray:
    """(system, topic) pairs scored: retrieved something, or every pair with ``complete``."""
    present = np.zeros(r.n_keys, dtype=bool)
    present[r.key] = True
    if complete:
        present[:] = True
    return present


@dataclass(frozen=True)
class ShardCells:
    """Rankings split by shard: cell ``(system * T + topic) * S + shard`` of each row."""

    cell: np.ndarray         # (N,) cell of each row, contiguous, rows in ranking order
    doc: np.ndarray          # (N,) document code of each row
    key: np.ndarray          # (N,) (system, topic) of each row
    q_shard: np.ndarray      # shard of each judgement
    n_shards: int
    shard_levels: list[str] | None


def _split_shards(r: Rankings, q: EncodedQrels, shards: object) -> ShardCells:
    """Split every ranking (keeping its order) and the qrels by a document -> shard map."""
    if shards is None:
        return ShardCells(r.key, r.doc, r.key, np.zeros(len(q.doc), dtype=np.int64), 1, None)
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
    codes, levels = natural_codes(shard_map.astype(str))
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
    return ShardCells(cell[order], r.doc[order], r.key[order], codes[q_pos][q.doc], n_shards,
                  levels)


_NOT_POOLED = -2  # the grade of a retrieved document not in the qrels (trec_eval's NONPOOL)


def retrieved_grades(r: Rankings, q: EncodedQrels, c: ShardCells) -> np.ndarray:
    """The grade of each retrieved row: -2 for a document not in the qrels (not pooled), -1
    for one in the qrels with a negative grade (pooled but not judged), else its grade."""
    n_docs = len(r.docids)
    q_docpos = label_positions(q.docids, r.docids)[q.doc]
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


def _hits(r: Rankings, q: EncodedQrels, c: ShardCells, level: int, judged_only: bool = False) -> Hits:
    """The kernels' input: relevant rows, positive-gain rows, unjudged rows, per-cell counts.

    ``judged_only``: the condensed lists, every ranking without its unjudged documents (those
    not in the qrels and those with a negative grade), ranks closed up (trec_eval ``-J``).
    """
    grade = retrieved_grades(r, q, c)
    if judged_only:
        keep = grade >= 0
        if not keep.all():
            c = ShardCells(c.cell[keep], c.doc[keep], c.key[keep], c.q_shard, c.n_shards,
                       c.shard_levels)
            grade = grade[keep]
    s = c.n_shards
    n_ts = r.n_topics * s
    n_cells = r.n_keys * s
    ts_q = q.topic * s + c.q_shard
    ts_of_cell = (np.arange(n_cells, dtype=np.int64) // s % r.n_topics) * s \
        + np.arange(n_cells, dtype=np.int64) % s
    num_rel = np.bincount(ts_q, weights=q.rel >= level, minlength=n_ts)[ts_of_cell]
    start, seg, pos = segment_positions(c.cell)
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
        gp = segment_positions(g_ts)[2]
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
              r: Rankings, c: ShardCells, policy: UndefinedPolicy, *, warn: bool = True,
              stacklevel: int = 3) -> pd.DataFrame:
    """The canonical long frame, with the undefined-value policy applied; the
    :class:`~irmodels.UndefinedValueWarning` (when ``warn``) points ``stacklevel - 1`` calls
    above this one."""
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
    if n_undef_total and warn:
        key = "topic, system, shard" if shard_levels is not None else "topic, system"
        where = "(measure, topic, shard)" if shard_levels is not None else "(measure, topic)"
        warnings.warn(
            f"{n_undef_total} ({key}) value(s) are undefined: {len(undef_cells['topic'])} "
            f"{where} cell(s) have no relevant document; {policy.describe()}. The cells are "
            "listed by undefined_cells(frame) (frame.attrs['undefined']); choose the policy with "
            "undefined=<number>|'drop'|'missing'.",
            UndefinedValueWarning,
            stacklevel=stacklevel,
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
