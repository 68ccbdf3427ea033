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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from irmodels.data._kernels import Hits, Measure, UndefinedPolicy, parse_measure, score, trec_order_key
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
    return m if m.kind in _FAST_KINDS else None


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


def _str_array(col: pd.Series) -> np.ndarray:
    return col.astype("str").to_numpy(dtype=object)


def _in_ranking_order(group_key: np.ndarray, score: np.ndarray, doc_rank: np.ndarray) -> bool:
    """True when groups are contiguous and ascending and each is in trec_eval order already."""
    if len(group_key) < 2:
        return True
    dg = np.diff(group_key)
    if (dg < 0).any():
        return False
    same = dg == 0
    ds = score[1:] - score[:-1]
    ok = (ds < 0) | ((ds == 0) & (doc_rank[1:] < doc_rank[:-1]))
    return bool(ok[same].all())


def prepare(runs: pd.DataFrame, qrels: pd.DataFrame, docids: pd.Index,
            measure: str | Measure) -> PreparedCollection:
    """Encode ``runs`` and ``qrels`` against the collection's ``docids`` once."""
    fast = fast_measure(measure)
    if fast is None:
        raise DataFormatError(f"measure {str(measure)!r} has no fast sharded path; use "
                              "irm.evaluate(..., shards=...)")
    doc_index = pd.Index(docids)
    q_topic = _str_array(qrels["topic"])
    q_doc = _str_array(qrels["docid"])
    q_rel = pd.to_numeric(qrels["rel"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    topics = sorted(pd.unique(q_topic), key=natural_key)
    t_index = pd.Index(topics)
    q_t = t_index.get_indexer(q_topic)
    q_d = doc_index.get_indexer(q_doc)
    if (q_d < 0).any():
        bad = pd.unique(q_doc[q_d < 0])[:3].tolist()
        raise DataFormatError(
            f"{int((q_d < 0).sum())} qrels row(s) name documents that are not in the document "
            f"list, e.g. {bad}. Every document of the runs and qrels needs a shard: pass the "
            "collection's full list of doc ids."
        )
    if not np.isfinite(q_rel).all():
        raise DataFormatError("qrels column 'rel' has missing or non-numeric grades; every "
                              "judgment needs an integer grade.")
    q_keys = np.sort(q_t.astype(np.int64) * len(doc_index) + q_d)
    if (q_keys[1:] == q_keys[:-1]).any():
        raise DataFormatError(
            f"{int((q_keys[1:] == q_keys[:-1]).sum())} document(s) are judged twice for the same "
            "topic in the qrels; trec_eval refuses such qrels. Keep one judgment per document."
        )
    relevant = q_rel >= 1
    rel_topic = q_t[relevant].astype(np.int32)
    rel_doc = q_d[relevant].astype(np.int32)

    if len(runs) == 0:
        raise DataFormatError("the runs have no rows; nothing can be evaluated")
    # factorize the long string columns once (C speed), then map their few unique values
    t_codes, t_uniq = pd.factorize(runs["topic"])
    r_t = t_index.get_indexer(np.asarray(t_uniq, dtype=object).astype(str))[t_codes]
    keep = r_t >= 0
    s_codes, s_uniq = pd.factorize(runs["system"])
    s_names = [str(v) for v in s_uniq]
    systems_all = sorted(s_names, key=natural_key)
    r_s = pd.Index(systems_all).get_indexer(s_names)[s_codes]
    d_codes, d_uniq = pd.factorize(runs["docid"])
    d_names = np.asarray(d_uniq, dtype=object).astype(str)
    r_d = doc_index.get_indexer(d_names)[d_codes]
    score = pd.to_numeric(runs["score"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if (t_codes < 0).any() or (s_codes < 0).any() or (d_codes < 0).any():
        raise DataFormatError("the runs have missing topic, system or docid values; every "
                              "retrieved document needs all three.")
    if not np.isfinite(score).all():
        bad = int((~np.isfinite(score)).sum())
        raise DataFormatError(
            f"run column 'score' has {bad} missing, non-numeric or infinite value(s); every "
            "retrieved document needs a finite score."
        )
    score = trec_order_key(score)  # trec_eval compares scores as C floats
    if keep.all():
        r_t_k, r_s_k, r_d_k, score_k = r_t, r_s, r_d, score
    else:
        r_t_k, r_s_k, r_d_k, score_k = r_t[keep], r_s[keep], r_d[keep], score[keep]
        d_codes = d_codes[keep]
    if (r_d_k < 0).any():
        docs = d_names[np.unique(d_codes[r_d_k < 0])]
        raise DataFormatError(
            f"{int((r_d_k < 0).sum())} retrieved document(s) are not in the document list, "
            f"e.g. {docs[:3].tolist()}. Every document of the runs and qrels needs a "
            "shard: pass the collection's full list of doc ids."
        )
    # trec_eval order: score (single precision) descending, ties by docid descending (bytes)
    doc_rank = np.empty(len(doc_index), dtype=np.int64)
    doc_rank[np.argsort(doc_index.to_numpy(dtype=object).astype(str))] = np.arange(len(doc_index))
    n_topics = len(topics)
    group_key = r_s_k.astype(np.int64) * n_topics + r_t_k
    rank_k = doc_rank[r_d_k]
    if _in_ranking_order(group_key, score_k, rank_k):
        row_doc = r_d_k.astype(np.int32)  # runs as written by trec tools: no sort needed
    else:
        order = np.lexsort((-rank_k, -score_k, group_key))
        group_key = group_key[order]
        row_doc = r_d_k[order].astype(np.int32)
    # groups are contiguous and ascending now
    start = np.empty(len(group_key), dtype=bool)
    start[0] = True
    np.not_equal(group_key[1:], group_key[:-1], out=start[1:])
    row_group = np.cumsum(start) - 1
    uniq = group_key[start]
    # relevance of each retrieved row
    n_docs = len(doc_index)
    dup_keys = np.sort(row_group.astype(np.int64) * n_docs + row_doc)
    dup = dup_keys[1:] == dup_keys[:-1]
    if dup.any():
        g = int(dup_keys[1:][dup][0] // n_docs)
        raise DataFormatError(
            f"{int(dup.sum())} document(s) are retrieved twice in the same ranking, e.g. "
            f"{doc_index[int(dup_keys[1:][dup][0] % n_docs)]!r} by system "
            f"{systems_all[int(uniq[g] // n_topics)]!r} for topic {topics[int(uniq[g] % n_topics)]!r}"
            "; trec_eval refuses such runs. Remove the duplicates."
        )
    rel_keys = np.unique(rel_topic.astype(np.int64) * n_docs + rel_doc)
    row_topic = (uniq % n_topics)[row_group].astype(np.int64)
    row_keys = row_topic * n_docs + row_doc
    row_rel = np.zeros(len(row_keys), dtype=bool)
    if len(rel_keys):
        # only rows whose document is relevant to some topic need the (topic, doc) lookup
        rel_anywhere = np.zeros(n_docs, dtype=bool)
        rel_anywhere[rel_doc] = True
        cand = np.flatnonzero(rel_anywhere[row_doc])
        pos = np.minimum(np.searchsorted(rel_keys, row_keys[cand]), len(rel_keys) - 1)
        row_rel[cand] = rel_keys[pos] == row_keys[cand]
    used_systems = np.unique(uniq // n_topics)
    sys_map = np.full(len(systems_all), -1, dtype=np.int64)
    sys_map[used_systems] = np.arange(len(used_systems))
    return PreparedCollection(
        measure=fast,
        topics=tuple(topics), systems=tuple(systems_all[i] for i in used_systems),
        n_docs=len(doc_index),
        group_topic=(uniq % n_topics).astype(np.int32),
        group_system=sys_map[uniq // n_topics].astype(np.int32),
        row_group=row_group.astype(np.int32), row_doc=row_doc, row_rel=row_rel,
        rel_topic=rel_topic, rel_doc=rel_doc,
    )


def evaluate_assignment(prep: PreparedCollection, labels: np.ndarray, n_shards: int,
                        undefined: float | str | UndefinedPolicy
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every (topic, system, shard) for one assignment ``labels`` (1..S per document).

    Returns the long frame (``measure, topic, system, shard, score``) and the undefined
    (topic, shard) cells (columns ``measure, topic, shard``), which the frame's
    ``attrs["undefined"]`` also holds as plain lists.

    The rows are put in shard-major order by one stable radix sort of the shard labels (16-bit
    integers): each (shard, system, topic) ranking is then contiguous and keeps the run's order,
    which is all the kernels need.
    """
    policy = UndefinedPolicy.parse(undefined)
    s = int(n_shards)
    n_groups = len(prep.group_topic)
    n_topics = len(prep.topics)
    sh = labels[prep.row_doc] - 1
    order = np.argsort(sh.astype(np.int16) if s < 2**15 else sh, kind="stable")
    # shard-major cell of each row: shard * G + group; its rows are contiguous in ``order``
    row_cell = sh.astype(np.int64) * n_groups + prep.row_group
    counts = np.bincount(row_cell, minlength=s * n_groups)
    first_pos = np.cumsum(counts) - counts
    rel_pos = np.flatnonzero(prep.row_rel[order])
    ck = row_cell[order[rel_pos]]  # nondecreasing
    rank = (rel_pos - first_pos[ck] + 1).astype(np.float64)
    nrel = (np.arange(len(ck)) - np.searchsorted(ck, ck, side="left") + 1).astype(np.float64)
    n_rel = np.bincount(prep.rel_topic.astype(np.int64) * s + labels[prep.rel_doc] - 1,
                        minlength=n_topics * s).reshape(n_topics, s)
    hits = Hits(cell=(ck % n_groups) * s + ck // n_groups, rank=rank, nrel=nrel,
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
