"""Fast repeated sharded evaluation for the shard study (private).

A shard study scores the same runs and qrels under many shard assignments. Everything that does
not depend on the assignment (parsing the ids, trec_eval's ranking order, which retrieved
document is relevant) is done once by :func:`prepare`; each assignment then costs one stable
radix sort of the retrieved rows by shard and the kernels of :mod:`irmodels.data._kernels`
(:func:`evaluate_assignment`), the same kernels and undefined-value policy as
:func:`irmodels.evaluate`. The values are those of
``irm.evaluate(runs, qrels, [measure], shards=assignment, undefined=...)`` (the study's tests
compare the two cell by cell). Measures of binary relevance (``AP``, ``AP@k``, ``GMAP``,
``P@k``, ``R@k``, ``Rprec``, ``RR``, ``RBP``, ``num_rel``, ``num_rel_ret``) have the fast path;
the others (graded ``nDCG``, ``num_ret``, ``RBP_res``) go through ``irm.evaluate`` itself.

Conventions are those of :func:`irmodels.data.measures.evaluate`: a (topic, system) pair is
scored when the topic is in the qrels and the system retrieved something for it; within a
ranking documents are ordered by score (as a C float, as trec_eval holds it) descending and
ties by document id descending (byte order); relevant means grade >= 1; with shards every (topic, system) pair gets every shard, a
shard where the system retrieved nothing being an empty ranking; a (topic, shard) with no
relevant document is undefined for every system and handled by the ``undefined`` policy.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from irmodels.data._encode import (
    EncodedQrels,
    as_block,
    as_qrels,
    as_runs,
    encode_qrels,
    encode_runs,
    label_positions,
    label_set,
    ranking_rows,
    refuse_duplicate_documents,
    segment_index,
    segment_starts,
    segments_in_order,
    trec_ranked,
)
from irmodels.data._evaluation import ShardCells, retrieved_grades
from irmodels.data._kernels import Hits, Measure, UndefinedPolicy, parse_measure, score
from irmodels.data.frame import natural_key
from irmodels.errors import DataFormatError

__all__ = ["PreparedCollection", "evaluate_assignment", "fast_measure", "prepare"]

# kinds whose kernel needs only the relevant retrieved documents and R (binary relevance)
_FAST_KINDS = frozenset({"AP", "GMAP", "P", "R", "Rprec", "RR", "RBP", "num_rel", "num_rel_ret"})


def fast_measure(name: str | Measure) -> Measure | None:
    """The parsed measure when it has a fast path (binary relevance at grade 1), else None.

    >>> fast_measure("map"), fast_measure("nDCG@10")
    (Measure('AP'), None)
    """
    m = parse_measure(name)
    return m if m.kind in _FAST_KINDS and not m.judged_only else None


@dataclass(frozen=True)
class PreparedCollection:
    """Runs and qrels reduced to integer arrays (picklable; about 13 bytes per retrieved row)."""

    measure: Measure
    topics: tuple[str, ...]          # qrels topics, natural order
    systems: tuple[str, ...]         # natural order
    n_docs: int                      # documents of the collection list
    group_topic: np.ndarray          # (G,) topic code of each scored (system, topic) pair
    group_system: np.ndarray         # (G,) system code
    row_group: np.ndarray            # (N,) group of each retrieved row, rows in ranking order
    row_doc: np.ndarray              # (N,) index of the document in the collection list
    row_rel: np.ndarray              # (N,) bool: relevant
    rel_topic: np.ndarray            # (M,) topic code of each relevant qrels row
    rel_doc: np.ndarray              # (M,) its document index
    # the rankings as the rows of a (G, width) block, when padding costs at most 2x the rows:
    width: int = 0                   # 0: ragged beyond that, one flat sort per assignment
    slot: np.ndarray | None = None   # (N,) flat position of each row in the block (None: no pad)
    rel_block: np.ndarray | None = None  # (G, width) bool: relevant, False on the padding


def prepare(runs: pd.DataFrame, qrels: pd.DataFrame, docids: pd.Index,
            measure: str | Measure, *, threads: int = 1) -> PreparedCollection:
    """Encode ``runs`` and ``qrels`` against the collection's ``docids`` once.

    The runs and qrels go through the same steps as :func:`irmodels.evaluate` (encoding,
    trec_eval's order, refusal of duplicates, relevance of every retrieved row); then every
    document is located in the collection's list.

    ``threads > 1`` encodes the runs in that many parts at once, cut between rankings, each in
    its own thread (Arrow's hashing and numpy's sorts release the GIL): the shard study does so
    on the ``"processes"`` backend, whose cores are otherwise idle while it encodes. The result is
    the one of ``threads=1``, array for array. Parts that share a ranking (rows in no particular
    order) or fail a check are encoded again as one, so errors read the same.
    """
    fast = fast_measure(measure)
    if fast is None:
        raise DataFormatError(f"measure {str(measure)!r} has no fast sharded path; use "
                              "irm.evaluate(..., shards=...)")
    q = encode_qrels(as_qrels(qrels))
    runs = as_runs(runs)
    doc_list = label_set(pd.Index(docids))  # converted once, looked up by every part
    q_pos = label_positions(q.docids, doc_list)
    if (q_pos < 0).any():
        bad = q.docids[q_pos < 0]
        raise DataFormatError(
            f"{int((q_pos[q.doc] < 0).sum())} qrels row(s) name documents that are not in the "
            f"document list, e.g. {bad[:3].tolist()}. Every document of the runs and qrels needs a "
            "shard: pass the collection's full list of doc ids."
        )
    parts = None
    cuts = _ranking_cuts(runs, threads)
    if len(cuts) > 2:
        with ThreadPoolExecutor(len(cuts) - 1) as pool:
            futures = [pool.submit(_encode_part, runs.iloc[a:b], q, doc_list)
                       for a, b in pairwise(cuts)]
            try:
                parts = [f.result() for f in futures]
            except DataFormatError:  # said again below, with counts over all the runs
                parts = None
    merged = None if parts is None else _merge_parts(parts, len(q.topics))
    if merged is None:
        merged = _merge_parts([_encode_part(runs, q, doc_list)], len(q.topics))
        assert merged is not None  # one part has no ranking to share
    systems, group_topic, group_system, first_row, row_doc, row_rel = merged
    n_rows = len(row_doc)
    row_group = segment_index(first_row, n_rows, np.int32)
    # the rankings as the rows of a block, for splitting each by shard (see _block_hits)
    layout = ranking_rows(first_row, n_rows)
    width, slot, rel_block = 0, None, None
    if layout is not None:
        width, slot = layout
        rel_block = as_block(row_rel, len(first_row), width, slot, False)
    relevant = q.rel >= 1
    return PreparedCollection(
        measure=fast, topics=tuple(q.topics), systems=systems, n_docs=len(doc_list),
        group_topic=group_topic, group_system=group_system, row_group=row_group,
        row_doc=row_doc, row_rel=row_rel,
        rel_topic=q.topic[relevant].astype(np.int32),
        rel_doc=q_pos[q.doc[relevant]].astype(np.int32),
        width=width, slot=slot, rel_block=rel_block,
    )


#: Rows below which a part is not worth a thread of its own (threads, the split and the merge
#: cost about what encoding 100,000 rows does).
MIN_PART_ROWS = 200_000


@dataclass(frozen=True)
class _Part:
    """Rows of consecutive runs, encoded and in trec_eval's order (see :func:`_encode_part`)."""

    systems: list[str]        # the part's systems, natural order
    first: np.ndarray         # (G,) ranking key (part's system code * T + topic), group order
    first_row: np.ndarray     # (G,) first row of each ranking
    row_doc: np.ndarray       # (n,) int32 index of the document in the collection list
    row_rel: np.ndarray       # (n,) bool: relevant
    resorted: bool            # the rows were not in trec_eval's order: rankings now by key


def _encode_part(runs: pd.DataFrame, q: EncodedQrels, doc_list: Any) -> _Part:
    """One part of the runs through irm.evaluate's steps, documents located in ``doc_list``
    (the collection's list as :func:`~irmodels.data._encode.label_set` gives it)."""
    encoded = encode_runs(runs, q.topics)
    r = trec_ranked(encoded)
    refuse_duplicate_documents(r)
    r_pos = label_positions(r.docids, doc_list)
    if (r_pos < 0).any():
        missing = r_pos[r.doc] < 0
        raise DataFormatError(
            f"{int(missing.sum())} retrieved document(s) are not in the document list, "
            f"e.g. {r.docids[r_pos < 0][:3].tolist()}. Every document of the runs and qrels "
            "needs a shard: pass the collection's full list of doc ids."
        )
    grade = retrieved_grades(r, q, ShardCells(r.key, r.doc, r.key, np.zeros(len(q.doc), np.int64), 1, None))
    # rankings are contiguous (in any order): number them in order of appearance
    first_row = segment_starts(r.key)
    return _Part(systems=list(r.systems), first=r.key[first_row], first_row=first_row,
                 row_doc=r_pos[r.doc].astype(np.int32), row_rel=grade >= 1,
                 resorted=r is not encoded)


def _ranking_cuts(runs: pd.DataFrame, threads: int) -> list[int]:
    """Row bounds of ``threads`` parts of about equal size, each cut where the ranking changes.

    ``[0, len(runs)]`` (one part) for one thread, fewer than :data:`MIN_PART_ROWS` rows per
    part, no ranking boundary after a cut, or rows whose ranking changes more often than every
    16 rows in the (at least 1,024) rows after a cut: interleaved rankings, which parts would
    share (shorter windows are left to :func:`_merge_parts`, which finds shared rankings).
    """
    n = len(runs)
    threads = int(threads)
    if threads < 2 or n < MIN_PART_ROWS * threads:
        return [0, n]
    cuts = [0]
    for k in range(1, threads):
        lo = max(n * k // threads, cuts[-1] + 1)
        width, at = 4096, None
        while lo < n and at is None:  # rankings are short: the first window almost always
            hi = min(lo + width, n)
            change = np.zeros(hi - lo, dtype=bool)
            for column in ("system", "topic"):
                window = runs[column].iloc[lo - 1:hi].to_numpy(dtype=object)
                change |= window[1:] != window[:-1]
            hit = np.flatnonzero(change)
            if len(change) >= 1024 and len(hit) > len(change) // 16:
                return [0, n]  # rankings interleaved or very short: one part
            if len(hit):
                at = lo + int(hit[0])
            elif hi == n:
                break
            lo, width = hi, width * 8
        if at is None:
            break
        cuts.append(at)
    return cuts + [n] if len(cuts) > 1 else [0, n]


def _merge_parts(parts: list[_Part], n_topics: int
                 ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                            np.ndarray] | None:
    """The rankings of all ``parts`` as one encoding would order them; None when parts share a
    ranking.

    One encoding numbers the rankings in order of appearance when every row is in trec_eval's
    order, else sorts them by (system, topic); the systems are those that retrieved something
    for a topic of the qrels, in natural order.
    """
    systems = sorted({s for p in parts for s in p.systems}, key=natural_key)
    index = {s: i for i, s in enumerate(systems)}
    keys = []
    for p in parts:
        code = np.asarray([index[s] for s in p.systems], dtype=np.int64)
        keys.append(code[p.first // n_topics] * n_topics + p.first % n_topics)
    key = np.concatenate(keys)
    if len(parts) > 1 and len(np.unique(key)) != len(key):
        return None
    sizes = [len(p.row_doc) for p in parts]
    offsets = np.cumsum([0] + sizes[:-1])
    first_row = np.concatenate([p.first_row + o for p, o in zip(parts, offsets)])
    row_doc = np.concatenate([p.row_doc for p in parts])
    row_rel = np.concatenate([p.row_rel for p in parts])
    if len(parts) > 1 and any(p.resorted for p in parts):
        # one encoding would have sorted every row: move whole rankings into key order
        order = np.argsort(key, kind="stable")
        rows, first_row = segments_in_order(first_row, len(row_doc), order)
        row_doc, row_rel, key = row_doc[rows], row_rel[rows], key[order]
    used = np.unique(key // n_topics)
    sys_map = np.full(len(systems), -1, dtype=np.int64)
    sys_map[used] = np.arange(len(used))
    return (tuple(systems[i] for i in used), (key % n_topics).astype(np.int32),
            sys_map[key // n_topics].astype(np.int32), first_row, row_doc, row_rel)


def _block_hits(prep: PreparedCollection, sh: np.ndarray, s: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Cell (``group * S + shard``) and rank of every relevant row: rankings sorted as rows.

    Each ranking (a row of the block, padded with shard ``S``, which sorts last) is put in
    shard order by a stable sort of its row; a relevant row's rank in its (ranking, shard) is
    its position there minus the start of its shard's block.
    """
    g_n, width = len(prep.group_topic), prep.width
    assert prep.rel_block is not None  # prepare builds it whenever width > 0
    if s == 1:  # one shard (the whole collection): each ranking as it is, nothing to sort
        g, pos = np.nonzero(prep.rel_block)
        return g, (pos + 1).astype(np.float64)
    sh2 = as_block(sh, g_n, width, prep.slot, s)
    order = np.argsort(sh2, axis=1, kind="stable")
    g, pos = np.nonzero(np.take_along_axis(prep.rel_block, order, axis=1))
    shard = sh2[g, order[g, pos]].astype(np.int64)
    key = sh2.astype(np.int64)
    key += (np.arange(g_n, dtype=np.int64) * (s + 1))[:, None]
    counts = np.bincount(key.reshape(-1), minlength=g_n * (s + 1)).reshape(g_n, s + 1)
    start = np.cumsum(counts, axis=1) - counts
    return g * s + shard, (pos - start[g, shard] + 1).astype(np.float64)


def _flat_hits(prep: PreparedCollection, sh: np.ndarray, s: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_block_hits` for ragged rankings: one stable sort of all rows by shard."""
    g_n = len(prep.group_topic)
    order = np.argsort(sh, kind="stable")
    # shard-major cell of each row: shard * G + group; its rows are contiguous in ``order``
    row_cell = sh.astype(np.int64)
    row_cell *= g_n
    row_cell += prep.row_group
    counts = np.bincount(row_cell, minlength=s * g_n)
    first_pos = np.cumsum(counts) - counts
    rel_pos = np.flatnonzero(prep.row_rel[order])
    ck = row_cell[order[rel_pos]]  # nondecreasing
    rank = (rel_pos - first_pos[ck] + 1).astype(np.float64)
    cell = (ck % g_n) * s + ck // g_n
    by_cell = np.argsort(cell, kind="stable")  # group-major, ranks ascending within a cell
    return cell[by_cell], rank[by_cell]


def evaluate_assignment(prep: PreparedCollection, labels: np.ndarray, n_shards: int,
                        undefined: float | str | UndefinedPolicy
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every (topic, system, shard) for one assignment ``labels`` (1..S per document).

    Returns the long frame (``measure, topic, system, shard, score``) and the undefined
    (topic, shard) cells (columns ``measure, topic, shard``), which the frame's
    ``attrs["undefined"]`` also holds as plain lists.

    Each ranking is put in shard order by a stable sort of its shard labels (16-bit integers),
    as a row of a ``(rankings, depth)`` block (:func:`_block_hits`; or one stable sort of all
    the rows when the rankings are too ragged to pad): each (system, topic, shard) ranking is
    then contiguous and keeps the run's order, which is all the kernels need.
    """
    policy = UndefinedPolicy.parse(undefined)
    s = int(n_shards)
    n_groups = len(prep.group_topic)
    n_topics = len(prep.topics)
    # 0-based shard of each row, gathered as 16-bit integers (a quarter of the memory traffic
    # of int64 over the 5M rows; the units of a study share the memory bandwidth)
    lab = np.asarray(labels, dtype=np.int64) - 1
    sh = lab.astype(np.int16 if s < 2**15 - 1 else np.int64)[prep.row_doc]
    if prep.width:
        cell, rank = _block_hits(prep, sh, s)
    else:
        cell, rank = _flat_hits(prep, sh, s)
    # relevant documents at or above each hit: hits are in cell order, by rank within a cell
    nrel = (np.arange(len(cell)) - np.searchsorted(cell, cell, side="left") + 1).astype(np.float64)
    n_rel = np.bincount(prep.rel_topic.astype(np.int64) * s + labels[prep.rel_doc] - 1,
                        minlength=n_topics * s).reshape(n_topics, s)
    hits = Hits(cell=cell, rank=rank, nrel=nrel,
                n_rel=n_rel[prep.group_topic].reshape(-1), n_cells=n_groups * s)
    value, undef_flat = score(prep.measure, hits)
    topic_code = np.repeat(prep.group_topic, s)
    system_code = np.repeat(prep.group_system, s)
    shard_code = np.tile(np.arange(s, dtype=np.int32), n_groups)
    value, keep = policy.apply(prep.measure, value, undef_flat, topic_code)
    if not keep.any():
        raise DataFormatError(
            "every cell was dropped by the undefined-value policy; no topic has a relevant "
            "document in every shard. Use undefined=0.0 or undefined='missing', or fewer shards."
        )
    name = prep.measure.name
    shard_levels = [str(i) for i in range(1, s + 1)]
    out = pd.DataFrame({
        "measure": pd.Categorical.from_codes(np.zeros(int(keep.sum()), dtype=np.int8),
                                             categories=[name]),
        "topic": pd.Categorical.from_codes(topic_code[keep], categories=list(prep.topics)),
        "system": pd.Categorical.from_codes(system_code[keep], categories=list(prep.systems)),
        "shard": pd.Categorical.from_codes(shard_code[keep], categories=shard_levels),
        "score": value[keep],
    })
    out["topic"] = out["topic"].cat.remove_unused_categories()
    ts = np.unique(topic_code[undef_flat] * s + shard_code[undef_flat])
    cells = {"measure": [name] * len(ts),
             "topic": [prep.topics[i] for i in ts // s],
             "shard": [shard_levels[i] for i in ts % s]}
    out.attrs["undefined"] = cells
    return out, pd.DataFrame(cells, columns=["measure", "topic", "shard"], dtype=object)
