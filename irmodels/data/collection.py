"""A synthetic, seeded test collection: documents, graded qrels and scored TREC runs.

``generate()`` builds a collection shaped like TREC-8 ad hoc (50 topics, 100 systems, depth
1000) in a few seconds, so that every later stage (per-topic measures, shards, document-sample
simulation, the models) can be shown and tested without downloading anything.
``write_runs()`` writes the same collection to TREC files topic by topic, at sizes that do not
fit in memory.

The model (see ``docs/collection.md``):

* a collection of ``n_docs`` document ids ``D0000001``...;
* relevant documents per topic from a log-normal spread by stratified quantiles (median about
  70 at depth 1000, a long tail to several hundred), with the smallest ~4% of topics set to 1-4
  relevant documents, as in real ad hoc collections; grades 1 and 2 (about one in four
  relevant documents is highly relevant); every relevant document has an "ease" shared by all
  systems, so that easy documents are found by many runs;
* a latent quality per (topic, system): ``q = system skill + topic easiness + interaction``
  (normal, standard deviations 0.45, 0.8 and 0.35: the topic effect is larger than the system
  effect, as in TREC);
* a run retrieves ``r ~ Binomial(R, sigmoid(q))`` relevant documents (preferring easy
  ones) and fills its ``depth`` with non-relevant documents drawn (weighted, without
  replacement) from a topic-specific set of confusable documents shared by all systems;
* scores: relevant documents ``Normal(2.6 + q, 1)``, non-relevant ``Gamma(shape 2, scale
  0.6)``; rounded to 6 decimals; ranks follow trec_eval order (score descending, ties by
  document id descending);
* qrels: every relevant document (grade 1 or 2) plus, with grade 0, every document in the top
  ``min(100, depth)`` of some run (the pool), as TREC judges a depth-100 pool.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit, ndtri

from irmodels._validate import check_int, check_seed
from irmodels.data.measures import evaluate
from irmodels.errors import ArgumentError

__all__ = ["PRESETS", "DemoCollection", "generate", "write_runs"]

#: Preset sizes: topics, systems, depth, number of documents.
PRESETS: dict[str, dict[str, int]] = {
    "trec8": {"topics": 50, "systems": 100, "depth": 1000, "n_docs": 100_000},
    "small": {"topics": 20, "systems": 12, "depth": 200, "n_docs": 20_000},
    "tiny": {"topics": 5, "systems": 4, "depth": 50, "n_docs": 2_000},
}

_SD_SYSTEM, _SD_TOPIC, _SD_INTERACTION = 0.45, 0.8, 0.35
_REL_MEAN, _REL_SLOPE, _RECALL_SHIFT = 2.6, 1.0, 0.0


@dataclass(frozen=True, repr=False)
class DemoCollection:
    """A generated test collection (see :func:`generate`).

    Attributes
    ----------
    docids : ndarray of str
        Every document id of the collection (sorted).
    qrels : DataFrame
        ``topic, docid, rel`` (str, str, int64): grades 2 and 1 for relevant documents, 0 for
        judged non-relevant ones (the depth-100 pool).
    runs : DataFrame
        ``system, topic, docid, score, rank`` (str, str, str, float64, int64), ``depth``
        documents per (system, topic), in trec_eval order.
    topics, systems : tuple of str
        Topic ids (``"1"``...) and system names (``"sys001"``...).
    depth : int
        Documents retrieved per topic.
    seed : int
        The seed that reproduces the collection.
    preset : str or None
        The preset used for the defaults.
    latent : DataFrame
        The latent quality per (topic, system): columns ``topic, system, skill, easiness,
        interaction, quality`` (what a model should recover; for teaching and tests).
    """

    docids: np.ndarray
    qrels: pd.DataFrame
    runs: pd.DataFrame
    topics: tuple[str, ...]
    systems: tuple[str, ...]
    depth: int
    seed: int
    preset: str | None = None
    latent: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __repr__(self) -> str:
        return (
            f"DemoCollection({len(self.topics)} topics x {len(self.systems)} systems, depth "
            f"{self.depth}, {len(self.docids):,} documents, {len(self.qrels):,} judgements, "
            f"seed {self.seed})"
        )

    def evaluate(
        self,
        measures: str | Sequence[str] = ("AP", "P@10", "nDCG@10", "RBP(0.8)"),
        *,
        shards: object = None,
        undefined: float | Literal["drop", "missing"] = 0.0,
        depth: int | None = None,
        relevance_level: int = 1,
        complete: bool = False,
    ) -> pd.DataFrame:
        """Per-topic scores of every run: :func:`irmodels.evaluate` on this collection.

        Examples
        --------
        >>> import irmodels as irm
        >>> col = irm.collection.generate(preset="tiny", seed=1)
        >>> f = col.evaluate(["AP", "P@10"])
        >>> f.shape, list(f.columns)
        ((40, 4), ['measure', 'topic', 'system', 'score'])
        """
        return evaluate(self.runs, self.qrels, measures, shards=shards, undefined=undefined,
                        depth=depth, relevance_level=relevance_level, complete=complete)

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Write the collection as plain TREC files under ``directory`` (created if needed).

        Files: ``docids.txt`` (one id a line), ``qrels.txt`` (``topic 0 docid rel``) and
        ``runs/<system>.txt`` (``topic Q0 docid rank score system``, scores with 6 decimals,
        which is exactly how they are stored). Returns the directory.

        Examples
        --------
        >>> import tempfile, pathlib, irmodels as irm
        >>> col = irm.collection.generate(preset="tiny")
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = col.write(d)
        ...     sorted(p.name for p in out.iterdir()), len(list((out / "runs").iterdir()))
        (['docids.txt', 'qrels.txt', 'runs'], 4)
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "docids.txt").write_text("\n".join(self.docids.tolist()) + "\n", encoding="utf-8")
        q = self.qrels
        lines = (q["topic"].astype(str) + " 0 " + q["docid"].astype(str) + " "
                 + q["rel"].astype(str))
        (out / "qrels.txt").write_text("\n".join(lines.tolist()) + "\n", encoding="utf-8")
        run_dir = out / "runs"
        run_dir.mkdir(exist_ok=True)
        r = self.runs
        sys_values = r["system"].to_numpy(dtype=object)
        bounds = np.flatnonzero(np.r_[True, sys_values[1:] != sys_values[:-1], True])
        try:
            lines_arr = _run_lines_arrow(r)
        except ImportError:  # pragma: no cover - pyarrow ships with pandas 3 in practice
            lines_arr = None
        if lines_arr is not None:
            # here, not at import: pyarrow is optional (not a dependency of irmodels)
            import pyarrow as pa
            import pyarrow.csv as pacsv  # optional, as above

            opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
            for a, b in itertools.pairwise(bounds):
                table = pa.table({"line": lines_arr.slice(int(a), int(b - a))})
                pacsv.write_csv(table, str(run_dir / f"{sys_values[a]}.txt"), opts)
            return out
        text = (r["topic"].astype(str) + " Q0 " + r["docid"].astype(str) + " "
                + r["rank"].astype(str) + " " + r["score"].map("{:.6f}".format) + " "
                + r["system"].astype(str))
        lines_all = text.to_numpy(dtype=object)
        for a, b in itertools.pairwise(bounds):
            name = str(sys_values[a])
            (run_dir / f"{name}.txt").write_text("\n".join(lines_all[a:b].tolist()) + "\n",
                                                 encoding="utf-8")
        return out


def _run_lines_arrow(runs: pd.DataFrame):
    """TREC run lines (``topic Q0 docid rank score system``) as an Arrow string array.

    Scores are printed with exactly 6 decimals (as ``"%.6f"``), built from integers so that the
    5,000,000 lines of the trec8 preset take no Python-level formatting.
    """
    # here, not at import: pyarrow is optional (not a dependency of irmodels)
    import pyarrow as pa
    import pyarrow.compute as pc  # optional, as above

    text = pa.large_string()
    score = _score_text_arrow(runs["score"].to_numpy(dtype=np.float64))

    def col(name: str) -> pa.Array:
        arr = pa.array(runs[name].astype(str))
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        return arr.cast(text)

    rank = pa.array(runs["rank"].to_numpy(dtype=np.int64)).cast(text)
    return pc.binary_join_element_wise(
        col("topic"), pa.scalar("Q0", text), col("docid"), rank, score, col("system"),
        pa.scalar(" ", text),
    )


def _score_text_arrow(scores: np.ndarray):
    """Scores printed as ``"%.6f"`` (an Arrow ``large_string`` array), built from integers."""
    # here, not at import: pyarrow is optional (not a dependency of irmodels)
    import pyarrow as pa
    import pyarrow.compute as pc  # optional, as above

    micro = np.rint(np.asarray(scores, dtype=np.float64) * 1e6).astype(np.int64)
    neg = micro < 0
    mag = np.abs(micro)
    text = pa.large_string()
    whole = pa.array(mag // 1_000_000).cast(text)
    frac = pc.utf8_lpad(pa.array(mag % 1_000_000).cast(text), 6, "0")
    score = pc.binary_join_element_wise(whole, frac, pa.scalar(".", text))
    minus = pc.binary_join_element_wise(pa.scalar("-", text), score, pa.scalar("", text))
    return pc.if_else(pa.array(neg), minus, score)


def _check_int(name: str, value: object, minimum: int) -> int:
    return check_int(value, name, low=minimum)


def _str_column(values: np.ndarray, codes: np.ndarray | None = None) -> pd.Series:
    """A pandas ``str`` column from labels (optionally indexed by integer codes), built fast."""
    try:
        # here, not at import: pyarrow is optional (not a dependency of irmodels)
        import pyarrow as pa

        labels = pa.array(np.asarray(values, dtype=object), type=pa.string())
        if codes is None:
            arr = labels
        else:
            arr = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), labels)
            arr = arr.cast(pa.string())
        return pd.Series(pd.array(arr, dtype="str"))
    except ImportError:  # pragma: no cover - pyarrow is a pandas 3 dependency in practice
        vals = np.asarray(values, dtype=object)
        return pd.Series(vals if codes is None else vals[codes], dtype="str")


def _smallest(keys: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` smallest non-negative float32 ``keys`` per row, in increasing
    order of (key, index).

    ``np.argpartition`` alone leaves the chosen entries in an order numpy does not specify (and,
    among ties at the boundary, may choose different ones), so the same seed could give another
    collection on another numpy. Keys are made unique (bits of the key, then the index) before the
    partition, and the chosen ones are sorted.

    >>> _smallest(np.array([[0.5, 0.1, 0.5, 0.2]], dtype=np.float32), 3).tolist()
    [[1, 3, 0]]
    """
    bits = np.ascontiguousarray(keys, dtype=np.float32).view(np.uint32).astype(np.uint64)
    unique = (bits << np.uint64(32)) | np.arange(keys.shape[1], dtype=np.uint64)[None, :]
    chosen = np.sort(np.partition(unique, k - 1, axis=1)[:, :k], axis=1)
    return (chosen & np.uint64(0xFFFFFFFF)).astype(np.intp)


def _sizes(
    topics: int | None, systems: int | None, depth: int | None, preset: str | None,
    n_docs: int | None,
) -> tuple[str, int, int, int, int]:
    """The preset and the checked sizes ``(preset, topics, systems, depth, n_docs)``."""
    if preset is None:
        preset = "trec8"
    if preset not in PRESETS:
        raise ArgumentError(
            f"unknown preset {preset!r}; choose one of {', '.join(map(repr, PRESETS))}"
        )
    base = PRESETS[preset]
    n_t = _check_int("topics", base["topics"] if topics is None else topics, 1)
    n_s = _check_int("systems", base["systems"] if systems is None else systems, 1)
    depth_ = _check_int("depth", base["depth"] if depth is None else depth, 1)
    n_d = _check_int("n_docs", base["n_docs"] if n_docs is None else n_docs, 1)
    if n_d < 4 * depth_:
        raise ArgumentError(
            f"n_docs={n_d} is too small for depth={depth_}: the collection needs at least "
            f"4 * depth = {4 * depth_} documents. Raise n_docs or lower depth."
        )
    return preset, n_t, n_s, depth_, n_d


@dataclass(frozen=True)
class _Model:
    """The collection's parameters, drawn before any ranking (O(topics x systems) memory).

    ``rel_*`` hold every topic's relevant documents, topic ``t``'s between ``rel_offsets[t]``
    and ``rel_offsets[t + 1]``; ``quality`` and ``retrieved`` are (topics, systems).
    """

    docids: np.ndarray
    topic_ids: tuple[str, ...]
    system_ids: tuple[str, ...]
    depth: int
    rel_doc: np.ndarray
    rel_grade: np.ndarray
    rel_ease: np.ndarray
    rel_offsets: np.ndarray
    skill: np.ndarray
    easiness: np.ndarray
    interaction: np.ndarray
    quality: np.ndarray
    retrieved: np.ndarray

    def latent(self) -> pd.DataFrame:
        """``topic, system, skill, easiness, interaction, quality``, one row per pair."""
        n_t, n_s = self.quality.shape
        return pd.DataFrame({
            "topic": np.repeat(np.asarray(self.topic_ids, dtype=object), n_s),
            "system": np.tile(np.asarray(self.system_ids, dtype=object), n_t),
            "skill": np.tile(self.skill, n_t),
            "easiness": np.repeat(self.easiness, n_s),
            "interaction": self.interaction.reshape(-1),
            "quality": self.quality.reshape(-1),
        })


def _draw_model(rng: np.random.Generator, n_t: int, n_s: int, depth_: int,
                n_d: int) -> _Model:
    """Draw the documents, relevant sets, latent effects and relevant counts (in this order:
    :func:`generate` and :func:`write_runs` share the stream)."""
    width = max(7, len(str(n_d)))
    docids = np.array([f"D{i:0{width}d}" for i in range(1, n_d + 1)], dtype=object)
    topic_ids = tuple(str(t) for t in range(1, n_t + 1))
    sw = max(2, len(str(n_s)))
    system_ids = tuple(f"sys{j:0{sw}d}" for j in range(1, n_s + 1))

    # --- relevant documents per topic: stratified log-normal quantiles, a few tiny topics
    median = 70.0 * np.sqrt(min(1.0, depth_ / 1000.0))
    u = (rng.permutation(n_t) + rng.uniform(size=n_t)) / n_t
    n_rel = np.rint(median * np.exp(1.0 * ndtri(u))).astype(np.int64)
    n_rel = np.clip(n_rel, 1, min(800, n_d // (2 * n_t) if n_t > 1 else n_d // 2))
    n_tiny = int(np.floor(0.04 * n_t))
    if n_tiny:
        smallest = np.argsort(n_rel, kind="stable")[:n_tiny]
        n_rel[smallest] = rng.integers(1, 5, size=n_tiny)

    # --- relevant docs: disjoint across topics is not required; sample per topic
    rel_doc = [rng.choice(n_d, size=n_rel[t], replace=False) for t in range(n_t)]
    rel_doc_a = np.concatenate(rel_doc)
    rel_grade = np.where(rng.uniform(size=len(rel_doc_a)) < 0.25, 2, 1).astype(np.int64)
    rel_ease = rng.normal(size=len(rel_doc_a)) + 0.5 * (rel_grade - 1)

    # --- latent quality per (topic, system)
    skill = rng.normal(0.0, _SD_SYSTEM, size=n_s)
    easiness = rng.normal(0.0, _SD_TOPIC, size=n_t)
    inter = rng.normal(0.0, _SD_INTERACTION, size=(n_t, n_s))
    quality = easiness[:, None] + skill[None, :] + inter  # (T, S)

    # --- relevant retrieved: r ~ Binomial(R, sigmoid(q)), easy documents first
    frac = expit(quality + _RECALL_SHIFT)
    r = rng.binomial(np.broadcast_to(n_rel[:, None], (n_t, n_s)), frac)
    return _Model(
        docids=docids, topic_ids=topic_ids, system_ids=system_ids, depth=depth_,
        rel_doc=rel_doc_a, rel_grade=rel_grade, rel_ease=rel_ease,
        rel_offsets=np.r_[0, np.cumsum(n_rel)], skill=skill, easiness=easiness,
        interaction=inter, quality=quality, retrieved=np.minimum(r, depth_),
    )


def _rank_topic(model: _Model, t: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every system's ranking of topic ``t``: document indices and scores, (systems, depth)
    arrays in trec_eval order. Draws from ``rng`` (the topics must be ranked in order)."""
    n_s, depth_ = len(model.system_ids), model.depth
    n_d = len(model.docids)
    cols = np.arange(depth_)
    r_t = model.retrieved[t]
    lo, hi = model.rel_offsets[t], model.rel_offsets[t + 1]
    # relevant: each system's Gumbel-perturbed order of the topic's relevant documents
    keys = model.rel_ease[lo:hi][None, :] + rng.gumbel(size=(n_s, hi - lo))
    order = np.argsort(-keys, axis=1)[:, :depth_]
    relmat = np.zeros((n_s, depth_), dtype=np.int64)
    relmat[:, : order.shape[1]] = model.rel_doc[lo:hi][order]
    # non-relevant: a confusable set per topic, weighted sampling without replacement
    # (Efraimidis-Spirakis keys E / w, smallest first)
    rel_set = np.zeros(n_d, dtype=bool)
    rel_set[model.rel_doc[lo:hi]] = True
    m = min(n_d - (hi - lo), 3 * depth_)
    pool = rng.choice(np.flatnonzero(~rel_set), size=m, replace=False)
    weight = (rng.gamma(0.7, 1.0, size=m) + 1e-3).astype(np.float32)
    nkeys = rng.standard_exponential(size=(n_s, m), dtype=np.float32) / weight[None, :]
    top = _smallest(nkeys, depth_)
    nonrel = pool[top]
    # a ranking: r relevant documents, then depth - r non-relevant ones
    is_rel = cols[None, :] < r_t[:, None]
    shift = np.clip(cols[None, :] - r_t[:, None], 0, depth_ - 1)
    docs = np.where(is_rel, relmat, np.take_along_axis(nonrel, shift, axis=1))
    # scores: relevant Normal(mean + slope * q, 1), non-relevant Gamma(2, 0.6)
    sc = np.where(
        is_rel,
        rng.normal(_REL_MEAN + _REL_SLOPE * model.quality[t][:, None], 1.0, size=(n_s, depth_)),
        rng.gamma(2.0, 0.6, size=(n_s, depth_)),
    )
    sc = np.round(sc, 6)
    # trec_eval order: score descending, ties by docid descending (ids are zero-padded)
    o = np.lexsort((-docs, -sc), axis=1)
    return np.take_along_axis(docs, o, axis=1), np.take_along_axis(sc, o, axis=1)


def _topic_qrels(model: _Model, t: int, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Topic ``t``'s judgements from its rankings ``docs`` (systems, depth): the relevant
    documents (grades 1, 2) and the unjudged rest of the depth-100 pool (grade 0), as document
    indices and grades sorted by document."""
    lo, hi = model.rel_offsets[t], model.rel_offsets[t + 1]
    rel = model.rel_doc[lo:hi]
    pool = np.unique(docs[:, : min(100, model.depth)])
    nonrel = np.setdiff1d(pool, rel)
    doc = np.concatenate([rel, nonrel])
    grade = np.concatenate([model.rel_grade[lo:hi], np.zeros(len(nonrel), dtype=np.int64)])
    o = np.argsort(doc, kind="stable")
    return doc[o], grade[o]


#: Most ranked documents (topics x systems x depth) :func:`generate` builds: the runs take
#: about 100 bytes a row while they are built.
MAX_ROWS = 100_000_000


def generate(
    topics: int | None = None,
    systems: int | None = None,
    *,
    depth: int | None = None,
    seed: int = 0,
    preset: Literal["trec8", "small", "tiny"] | None = None,
    n_docs: int | None = None,
) -> DemoCollection:
    """Generate a seeded synthetic test collection shaped like a TREC ad hoc track.

    Parameters
    ----------
    topics, systems : int, optional
        Number of topics and of systems (runs). Default: the preset's (50 and 100).
    depth : int, optional
        Documents retrieved per (system, topic). Default: the preset's (1000).
    seed : int
        Seed of ``np.random.default_rng``; the same arguments give the same collection.
    preset : {"trec8", "small", "tiny"}, optional
        Default sizes: ``trec8`` 50 topics x 100 systems, depth 1000, 100,000 documents (the
        default); ``small`` 20 x 12, depth 200, 20,000 documents; ``tiny`` 5 x 4, depth 50,
        2,000 documents. Explicit arguments override the preset.
    n_docs : int, optional
        Size of the document collection (at least ``4 * depth``). Default: the preset's.

    Returns
    -------
    DemoCollection
        ``.docids``, ``.qrels``, ``.runs``, ``.topics``, ``.systems``, ``.latent``;
        ``.evaluate(measures)`` and ``.write(directory)``.

    Raises
    ------
    ArgumentError
        Unknown preset, non-positive sizes or seed, a collection too small for the depth, or
        more than :data:`MAX_ROWS` ranked documents.

    Notes
    -----
    The generative model is in the module docstring and ``docs/collection.md``. The median
    number of relevant documents per topic is ``70 * sqrt(min(1, depth / 1000))``. With the
    default seed the trec8 preset's AP matrix has a mean of 0.16, system means from 0.02 to
    0.37, and a topic effect larger than the system effect (standard deviation of the topic
    means 0.12, of the system means 0.09), as in TREC-8 ad hoc. Relevant counts per topic are
    drawn first, so they do not depend on the number of systems; the latent effects do.

    Examples
    --------
    >>> import irmodels as irm
    >>> col = irm.collection.generate(preset="tiny", seed=3)
    >>> col
    DemoCollection(5 topics x 4 systems, depth 50, 2,000 documents, 486 judgements, seed 3)
    >>> col.runs.head(3)
      system topic     docid     score  rank
    0  sys01     1  D0001642  5.907567     1
    1  sys01     1  D0001018  5.750382     2
    2  sys01     1  D0001830  5.645569     3
    >>> col.qrels["rel"].value_counts().sort_index().to_dict()
    {0: 344, 1: 112, 2: 30}
    """
    preset_used, n_t, n_s, depth_, n_d = _sizes(topics, systems, depth, preset, n_docs)
    rows = n_t * n_s * depth_
    if rows > MAX_ROWS:
        raise ArgumentError(
            f"{n_t:,} topics x {n_s:,} systems x depth {depth_:,} is {rows:,} ranked documents, "
            f"more than the demo generator's limit of {MAX_ROWS:,} (about 10 GB in memory; the "
            "trec8 preset has 5,000,000). Use fewer topics, systems or a smaller depth, or "
            "irm.collection.write_runs(directory, ...), which writes the same collection to "
            "files topic by topic without holding it in memory."
        )
    seed_ = check_seed(seed)
    rng = np.random.default_rng(seed_)
    model = _draw_model(rng, n_t, n_s, depth_, n_d)
    docids, topic_ids, system_ids = model.docids, model.topic_ids, model.system_ids
    doc3 = np.empty((n_t, n_s, depth_), dtype=np.int64)
    score3 = np.empty((n_t, n_s, depth_), dtype=np.float64)
    q_parts: list[tuple[np.ndarray, np.ndarray]] = []
    for t in range(n_t):  # loops over topics only, every ranking of a topic at once
        doc3[t], score3[t] = _rank_topic(model, t, rng)
        q_parts.append(_topic_qrels(model, t, doc3[t]))
    doc = doc3.transpose(1, 0, 2).reshape(-1)
    score = score3.transpose(1, 0, 2).reshape(-1)
    sys_ = np.repeat(np.arange(n_s, dtype=np.int64), n_t * depth_)
    top_ = np.tile(np.repeat(np.arange(n_t, dtype=np.int64), depth_), n_s)
    rank = np.tile(np.arange(1, depth_ + 1, dtype=np.int64), n_s * n_t)

    runs = pd.DataFrame({
        "system": _str_column(np.asarray(system_ids, dtype=object), sys_),
        "topic": _str_column(np.asarray(topic_ids, dtype=object), top_),
        "docid": _str_column(docids, doc),
        "score": score.astype(np.float64),
        "rank": rank.astype(np.int64),
    })

    # --- qrels: relevant documents + the judged pool (top min(100, depth) of every run),
    # sorted by topic, then document
    q_doc = np.concatenate([d for d, _ in q_parts])
    q_rel = np.concatenate([g for _, g in q_parts])
    q_top = np.repeat(np.arange(n_t, dtype=np.int64), [len(d) for d, _ in q_parts])
    qrels = pd.DataFrame({
        "topic": _str_column(np.asarray(topic_ids, dtype=object), q_top),
        "docid": _str_column(docids, q_doc),
        "rel": q_rel.astype(np.int64),
    })
    latent = model.latent()
    return DemoCollection(
        docids=docids.astype(str),
        qrels=qrels,
        runs=runs,
        topics=topic_ids,
        systems=system_ids,
        depth=depth_,
        seed=seed_,
        preset=preset_used,
        latent=latent,
    )


class _TopicBlockWriter:
    """Formats one topic's rankings of every system as TREC run lines, system after system.

    The columns that are the same for every topic (ranks, run tags) are built once. With
    pyarrow the lines are joined by Arrow's compute kernels into one buffer; without it, by
    Python string formatting (slower, same bytes).
    """

    def __init__(self, model: _Model, *, arrow: bool = True) -> None:
        self.model = model
        self.arrow = arrow
        n_s, depth_ = len(model.system_ids), model.depth
        if arrow:
            # here, not at import: pyarrow is optional (not a dependency of irmodels)
            import pyarrow as pa

            text = pa.large_string()
            self._docid = pa.array(model.docids, type=text)
            ranks = pa.array([str(k) for k in range(1, depth_ + 1)], type=text)
            self._rank = ranks.take(pa.array(np.tile(np.arange(depth_), n_s)))
            tags = pa.array([f"{name}\n" for name in model.system_ids], type=text)
            self._tag = tags.take(pa.array(np.repeat(np.arange(n_s), depth_)))

    def lines(self, t: int, docs: np.ndarray, scores: np.ndarray
              ) -> tuple[bytes | memoryview, np.ndarray]:
        """Topic ``t``'s lines as one buffer and the byte offsets of each system's lines in it
        (``n_systems + 1`` of them)."""
        model = self.model
        topic = model.topic_ids[t]
        n_s, depth_ = docs.shape
        if not self.arrow:
            names = model.docids
            chunks = [
                "".join(f"{topic} Q0 {names[d]} {k} {s:.6f} {tag}\n"
                        for k, (d, s) in enumerate(zip(docs[j], scores[j], strict=True), 1))
                .encode() for j, tag in enumerate(model.system_ids)]
            bounds = np.r_[0, np.cumsum([len(c) for c in chunks])]
            return b"".join(chunks), bounds
        # here, not at import: pyarrow is optional (not a dependency of irmodels)
        import pyarrow as pa
        import pyarrow.compute as pc  # optional, as above

        text = pa.large_string()
        joined = pc.binary_join_element_wise(
            pa.scalar(topic, text), pa.scalar("Q0", text),
            self._docid.take(pa.array(docs.reshape(-1))), self._rank,
            _score_text_arrow(scores.reshape(-1)), self._tag, pa.scalar(" ", text),
        )
        _, offsets, data = joined.buffers()
        start = joined.offset
        ends = np.frombuffer(offsets, dtype=np.int64)[start: start + len(joined) + 1]
        return memoryview(data), ends[::depth_]


def write_runs(
    directory: str | os.PathLike[str],
    topics: int | None = None,
    systems: int | None = None,
    *,
    depth: int | None = None,
    seed: int = 0,
    preset: Literal["trec8", "small", "tiny"] | None = None,
    n_docs: int | None = None,
) -> Path:
    """Generate a collection straight into TREC files, topic by topic, without holding it.

    The collection of :func:`generate` with the same arguments, byte for byte the files that
    ``generate(...).write(directory)`` writes, at any size: 1,000 runs x 250 topics x depth
    1000 (250,000,000 ranked documents, about 9 GB of text) needs a few hundred MB of memory.

    Parameters
    ----------
    directory : path
        Where to write (created if needed): ``docids.txt`` (one id a line), ``qrels.txt``
        (``topic 0 docid rel``) and ``runs/<system>.txt`` (``topic Q0 docid rank score
        system``, scores with 6 decimals). ``runs/`` must be absent or empty.
    topics, systems, depth, seed, preset, n_docs
        As for :func:`generate` (there is no :data:`MAX_ROWS` limit here).

    Returns
    -------
    Path
        ``directory``. Evaluate it with ``irm.evaluate(directory / "runs",
        irm.read_qrels(directory / "qrels.txt"), ..., backend=...)``, one run file at a time.

    Raises
    ------
    ArgumentError
        As :func:`generate`; or ``directory/runs`` already holds files (this would mix
        collections: write into a new or empty directory).

    Notes
    -----
    :func:`generate` draws the model's parameters (relevant documents, latent effects,
    relevant counts: O(topics x systems) numbers), then ranks the topics in order, each
    topic's rankings of every system at once. This function draws the same numbers from the
    same stream in the same order; instead of keeping each topic's rankings it appends them to
    the run files (one file per system; topic ``t`` is appended after topic ``t - 1``, so each
    file is in the order :func:`generate` gives) and that topic's judgements to the qrels.
    Memory is therefore one topic's rankings of every system (``systems x depth`` documents:
    about 100 MB for 1,000 systems at depth 1000, plus their text) and the model's parameters,
    whatever the number of topics. A run cannot be written alone instead: every system's
    ranking of a topic comes from one draw, so a system-by-system writer would need another
    random stream and give another collection.

    Files are appended to as the topics are ranked: an interrupted call leaves incomplete
    files (``qrels.txt`` and every run hold the topics finished so far).

    Examples
    --------
    >>> import tempfile, irmodels as irm
    >>> col = irm.collection.generate(preset="tiny", seed=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = irm.collection.write_runs(d, preset="tiny", seed=3)
    ...     runs = irm.read_runs(out / "runs")
    ...     qrels = irm.read_qrels(out / "qrels.txt")
    ...     sorted(p.name for p in (out / "runs").iterdir())
    ['sys01.txt', 'sys02.txt', 'sys03.txt', 'sys04.txt']
    >>> runs.equals(col.runs), qrels.equals(col.qrels)
    (True, True)
    """
    _, n_t, n_s, depth_, n_d = _sizes(topics, systems, depth, preset, n_docs)
    seed_ = check_seed(seed)
    out = Path(directory)
    run_dir = out / "runs"
    if run_dir.is_dir():
        present = [p.name for p in run_dir.iterdir()]
        if present:
            raise ArgumentError(
                f"{str(run_dir)!r} already holds {len(present):,} files (e.g. "
                f"{sorted(present)[0]!r}); write_runs appends topic by topic and would mix them "
                "with the new collection. Write into a new or empty directory, or delete them."
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow ships with pandas 3 in practice
        arrow = False
    else:
        arrow = True
    rng = np.random.default_rng(seed_)
    model = _draw_model(rng, n_t, n_s, depth_, n_d)
    (out / "docids.txt").write_text("\n".join(model.docids.tolist()) + "\n", encoding="utf-8")
    paths = [run_dir / f"{name}.txt" for name in model.system_ids]
    for path in paths:
        path.write_bytes(b"")
    block = _TopicBlockWriter(model, arrow=arrow)
    with open(out / "qrels.txt", "wb") as qf:
        for t in range(n_t):  # topics in order: the random stream of generate()
            docs, scores = _rank_topic(model, t, rng)
            data, bounds = block.lines(t, docs, scores)
            for j, path in enumerate(paths):
                with open(path, "ab") as f:
                    f.write(data[bounds[j]: bounds[j + 1]])
            q_doc, q_rel = _topic_qrels(model, t, docs)
            topic = model.topic_ids[t]
            qf.write("".join(f"{topic} 0 {model.docids[d]} {g}\n"
                             for d, g in zip(q_doc, q_rel, strict=True)).encode())
    return out
