"""Document-sample simulation (Robertson & Kanoulas, SIGIR 2012; docs/methods.md: "Document-sample simulation").

The test collection is one sample from a large population of documents. For each (topic, run)
we simulate other samples: the number of relevant documents the run retrieves in a new sample,
their scores and the scores of the non-relevant documents, and score the resulting ranking.

The generative model for one (topic, run) with ``n`` documents retrieved (at most ``depth``),
``r`` of them relevant, and ``R`` relevant documents known for the topic:

1. ``r_s ~ Poisson(r)``: relevant documents retrieved in the sample. A zero draw is handled by
   ``zeros=``: ``"redraw"`` (zero-truncated Poisson, the default), ``"keep"`` (the sample has
   no relevant retrieved document; AP = 0) or ``"skip"`` (the sample is dropped). ``r_s`` is
   capped at ``n`` (recorded).
2. ``R_s = r_s + Poisson(R - r)``: relevant documents in the sample (the AP denominator): the
   relevant documents the run did not retrieve are resampled the same way as the retrieved ones.
3. ``r_s`` relevant scores and ``n - r_s`` non-relevant scores from the score model of each class,
   fitted to the run's observed scores on that topic (unjudged documents count as non-relevant,
   as in trec_eval):

   - ``"bootstrap"``: resample the observed scores of the class with replacement; ties between
     a relevant and a non-relevant score are broken uniformly at random;
   - ``"kde"``: Gaussian kernel density of the observed scores of the class, bandwidth by
     Silverman's rule ``0.9 min(sd, IQR/1.34) n^(-1/5)`` (falling back to ``sd``, then to
     ``1e-3 * (1 + |mean|)`` when the scores have no spread);
   - ``"gmg"``: relevant scores from a mixture of 1-3 Gaussians chosen by BIC (EM fit),
     non-relevant scores from a Gamma distribution fitted by maximum likelihood to the scores
     shifted to start just below their minimum (location ``min - 0.01 * range``).
     With fewer than 3 relevant scores the relevant class falls back to ``kde``; with fewer than
     3 distinct non-relevant scores the non-relevant class falls back to ``kde`` (recorded).

4. Rank by score and compute the measure.

**Scoring without sorting.** Every rank-based measure used here (AP, P@k, RR, R-precision,
nDCG@k with binary gains, RBP) depends on the ranking only through the ranks of the relevant
documents. Given the sorted relevant scores ``x_1 > x_2 > ... > x_rs``, the numbers of
non-relevant documents scoring above each of them are the cumulative counts of a multinomial
draw over the intervals between the ``x_j``, which we draw exactly as a chain of conditional
binomials with the non-relevant class's survival function. That costs O(r_s) per ranking
instead of an O(n log n) sort of ``n`` simulated scores, and it is exact in distribution
(``exact_rankings=True`` draws and sorts every score instead; the tests check both agree).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from irmodels import parallel
from irmodels._validate import check_fits, check_int, check_seed, did_you_mean, seed_sequence
from irmodels.data._encode import (
    factorize_labels,
    grade_values,
    in_trec_order,
    score_values,
    segment_positions,
    segment_starts,
    segments_in_order,
)
from irmodels.data._kernels import Measure, hits_from_ranks, parse_measure, trec_order_key
from irmodels.data._kernels import score as kernel_score
from irmodels.data.frame import frame, natural_key, require_columns
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.replicates._score_models import (
    Model,
    ScoreModel,
    fit_score_model,
    fit_score_models,
)

__all__ = [
    "document_samples",
    "ScoreModel",
    "fit_score_model",
    "fit_score_models",
    "simulate_relevant_ranks",
    "measure_from_ranks",
    "sample_record",
    "SUPPORTED_MEASURES",
]

SUPPORTED_MEASURES = ("AP", "AP@k", "GMAP", "P@k", "R@k", "RR", "Rprec", "nDCG", "nDCG@k",
                      "RBP(p)", "num_rel_ret")
_SIMULATED_KINDS = frozenset({"AP", "GMAP", "P", "R", "RR", "Rprec", "nDCG", "RBP",
                              "num_rel_ret"})

# ---------------------------------------------------------------------------------------------
# ranks of the relevant documents in simulated rankings
# ---------------------------------------------------------------------------------------------
def simulate_relevant_ranks(
    rel_model: ScoreModel,
    nonrel_model: ScoreModel,
    r_s: np.ndarray,
    n: int,
    rng: np.random.Generator,
    *,
    exact_rankings: bool = False,
) -> np.ndarray:
    """Ranks (1-based) of the relevant documents in ``len(r_s)`` simulated rankings.

    Parameters
    ----------
    rel_model, nonrel_model : ScoreModel
        Score models of the two classes.
    r_s : array of int
        Relevant documents retrieved in each sample (each at most ``n``).
    n : int
        Documents retrieved per ranking (relevant + non-relevant).
    exact_rankings : bool
        Draw every score and sort (slow, for validation) instead of the binomial chain.

    Returns
    -------
    ndarray of float, shape (C, max(r_s))
        Row c holds the ranks of sample c's relevant documents in increasing order, padded with
        ``inf`` (so ``1/rank`` and ``p**rank`` vanish and ``rank <= k`` is false for padding).

    Examples
    --------
    >>> import numpy as np
    >>> rel = ScoreModel("kde", values=np.array([5.0]), scale=1e-9)
    >>> non = ScoreModel("kde", values=np.array([0.0]), scale=1e-9)
    >>> simulate_relevant_ranks(rel, non, np.array([2, 1]), 10, np.random.default_rng(0))
    array([[ 1.,  2.],
           [ 1., inf]])
    """
    r_s = np.asarray(r_s, dtype=np.int64)
    C = len(r_s)
    K = int(r_s.max()) if C else 0
    ranks = np.full((C, K), np.inf)
    if K == 0:
        return ranks
    valid = np.arange(K)[None, :] < r_s[:, None]
    u = rng.random((C, K))  # tie-breaking keys (matter only for the discrete bootstrap)
    if rel_model.kind == "bootstrap":
        # draw indices into the relevant scores; P(non-relevant above) by table look-up
        assert rel_model.values is not None
        idx = rng.integers(0, len(rel_model.values), size=(C, K))
        x = rel_model.values[idx]
        sf_tab = nonrel_model.sf(rel_model.values)
        pmf_tab = nonrel_model.pmf_at(rel_model.values)
    else:
        x = rel_model.sample(rng, (C, K))
        idx = None
    if exact_rankings:
        for c in range(C):
            k = int(r_s[c])
            nr = nonrel_model.sample(rng, n - k)
            ur = rng.random(n - k)
            xs, us = x[c, :k], u[c, :k]
            # a non-relevant doc ranks above a relevant one if its (score, key) is larger
            above = (
                (nr[None, :] > xs[:, None]) | ((nr[None, :] == xs[:, None]) & (ur[None, :] > us[:, None]))
            ).sum(axis=1)
            ranks[c, :k] = np.sort(above) + np.arange(1, k + 1)
        return ranks
    # p = P(a non-relevant doc ranks above this relevant doc) = P(s > x) + P(s = x) P(key > u);
    # p is monotone in (score, key), so sorting p orders the relevant docs by rank.
    if idx is not None:
        p = sf_tab[idx] + pmf_tab[idx] * (1.0 - u)
    else:
        p = nonrel_model.sf(x)
    p = np.where(valid, np.clip(p, 0.0, 1.0), 2.0)
    p.sort(axis=1)
    # numbers of non-relevant docs above each relevant doc: one multinomial draw per ranking
    # over the intervals between consecutive p (padding repeats the last p: empty intervals)
    last = np.take_along_axis(p, (np.maximum(r_s, 1) - 1)[:, None], axis=1)
    p = np.where(valid, p, last)
    cells = np.diff(np.concatenate([np.zeros((C, 1)), p, np.ones((C, 1))], axis=1), axis=1)
    cells = np.clip(cells, 0.0, None)
    cells /= cells.sum(axis=1, keepdims=True)
    counts = rng.multinomial((n - r_s).astype(np.int64), cells)
    above = np.cumsum(counts[:, :K], axis=1)
    ranks = np.where(valid, above + np.arange(1, K + 1)[None, :], np.inf)
    return ranks


def measure_from_ranks(ranks: np.ndarray, n_rel: np.ndarray, measure: str | Measure) -> np.ndarray:
    """A measure from the ranks of the relevant documents (binary relevance).

    The values come from the evaluation kernels of :func:`irmodels.evaluate`
    (:mod:`irmodels.data._kernels`); a sample without a relevant document scores 0 (``GMAP``:
    ``log(1e-5)``).

    Parameters
    ----------
    ranks : ndarray (C, K)
        Increasing ranks of the relevant retrieved documents, padded with ``inf``.
    n_rel : array of int
        Relevant documents in each sample (the recall base ``R_s``).
    measure : str or Measure
        ``AP``, ``AP@k``, ``GMAP``, ``P@k``, ``R@k``, ``RR``, ``Rprec``, ``nDCG``, ``nDCG@k``
        (binary gains), ``RBP(p)`` or ``num_rel_ret`` (any spelling :func:`irmodels.evaluate`
        accepts).

    Examples
    --------
    >>> import numpy as np
    >>> ranks = np.array([[1, 3, np.inf]])        # 2 relevant retrieved, at ranks 1 and 3
    >>> float(measure_from_ranks(ranks, np.array([4]), "AP")[0])  # (1/1 + 2/3) / 4
    0.4166666666666667
    >>> float(measure_from_ranks(ranks, np.array([4]), "P@5")[0])
    0.4
    """
    m = _simulated_measure(measure)
    ranks = np.asarray(ranks, dtype=float)
    return kernel_score(m, hits_from_ranks(ranks, n_rel))[0]


def _simulated_measure(measure: str | Measure) -> Measure:
    """The parsed measure, refused when it needs more than the ranks of relevant documents."""
    m = parse_measure(measure)
    if m.kind not in _SIMULATED_KINDS or m.judged_only:
        raise DataFormatError(
            f"measure {m.name!r} is not supported by the simulator; use one of "
            f"{', '.join(SUPPORTED_MEASURES)}"
        )
    return m


# ---------------------------------------------------------------------------------------------
# the public driver
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Observed:
    """The top ``depth`` documents of every selected (system, topic) in trec_eval order."""

    topic: list[str]         # topic of each (system, topic) group, groups in label order
    system: list[str]        # its system
    bounds: np.ndarray       # (G + 1,) row bounds of the groups
    score: np.ndarray        # (N,) scores, each group in trec_eval order
    rel: np.ndarray          # (N,) bool: relevant
    n_rel: dict[str, int]    # relevant documents per topic (topics with at least one)
    max_grade: int | None = None  # the highest grade in the qrels (None: no qrels rows)
    # natural-order position of every topic and system of the input runs (before the
    # selection): the (topic, run) pair's random stream is keyed by them
    topic_pos: dict[str, int] | None = None
    system_pos: dict[str, int] | None = None

    def groups(self):
        """``(topic, system, relevant scores, non-relevant scores)`` per group."""
        for g, (i, j) in enumerate(zip(self.bounds[:-1], self.bounds[1:])):
            rel, sc = self.rel[i:j], self.score[i:j]
            yield self.topic[g], self.system[g], sc[rel], sc[~rel]


def _natural_positions(codes: np.ndarray, labels: np.ndarray) -> dict[str, int]:
    """Position of each label that occurs in ``codes`` in the natural order
    (:func:`irmodels.data.frame.natural_key`) of all of them; unused labels (categories of a
    categorical column that no row has) take no position.

    >>> _natural_positions(np.array([0, 1, 1, 3]), np.array(["s10", "s2", "x", "s1"], dtype=object))
    {'s1': 0, 's2': 1, 's10': 2}
    """
    used = np.bincount(codes, minlength=len(labels)) > 0 if len(codes) else np.zeros(0, bool)
    names = sorted({str(labels[i]) for i in np.flatnonzero(used)}, key=natural_key)
    return {name: i for i, name in enumerate(names)}


def _lexical_rank(labels: np.ndarray) -> np.ndarray:
    """Rank of each label in string (code point) order."""
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.argsort(labels.astype(str), kind="stable")] = np.arange(len(labels))
    return rank


def _trec_order(group: np.ndarray, score_key: np.ndarray, doc_key: np.ndarray) -> np.ndarray:
    """``np.lexsort((-doc_key, -score_key, group))``, without the sort when it can be skipped.

    Run files usually list each ranking contiguously and in order (score, then document id,
    descending; ``irmodels.data._encode.in_trec_order`` tells): then only the rankings
    are put in ``group`` order, the same permutation as the stable sort's (0.5 s saved on 2M
    rows).
    """
    n = len(group)
    n_keys = int(group.max()) + 1 if n else 0
    if not in_trec_order(group, score_key, doc_key, n_keys):
        return np.lexsort((-doc_key, -score_key, group))
    starts = segment_starts(group)
    # the rows of the rankings, taken ranking by ranking in group order
    return segments_in_order(starts, n, np.argsort(group[starts], kind="stable"))[0]


def _selected(codes: np.ndarray, labels: np.ndarray, wanted: Sequence[str] | None) -> np.ndarray:
    if wanted is None:
        return np.ones(len(codes), dtype=bool)
    return np.isin(labels.astype(str), [str(x) for x in wanted])[codes]


def _observed(
    runs: pd.DataFrame, qrels: pd.DataFrame, depth: int, level: int,
    systems: Sequence[str] | None, topics: Sequence[str] | None,
) -> _Observed:
    """The top ``depth`` documents of every selected (system, topic), in trec_eval order, with
    their relevance; and the number of relevant documents per topic. Labels are encoded once
    (dictionary encoding, as :func:`irmodels.evaluate`); strings are made only per group."""
    require_columns(runs, ["system", "topic", "docid", "score"], "runs")
    require_columns(qrels, ["topic", "docid", "rel"], "qrels")
    s_codes, s_uniq = factorize_labels(runs["system"])
    t_codes, t_uniq = factorize_labels(runs["topic"])
    # stream keys: natural-order positions among ALL the runs' topics and systems
    t_pos, s_pos = _natural_positions(t_codes, t_uniq), _natural_positions(s_codes, s_uniq)
    keep = _selected(s_codes, s_uniq, systems) & _selected(t_codes, t_uniq, topics)
    d_codes, d_uniq = factorize_labels(runs["docid"])
    score = score_values(runs["score"])  # finite numbers, as irm.evaluate requires
    if not keep.all():
        s_codes, t_codes, d_codes, score = (a[keep] for a in (s_codes, t_codes, d_codes, score))
    s_key, t_key, d_key = (_lexical_rank(u)[c] for u, c in
                           ((s_uniq, s_codes), (t_uniq, t_codes), (d_uniq, d_codes)))
    # trec_eval order: (system, topic) groups, score (as a C float) descending, docid descending
    order = _trec_order(s_key * (len(t_uniq) + 1) + t_key, trec_order_key(score), d_key)
    group = s_key[order] * (len(t_uniq) + 1) + t_key[order]
    pos = segment_positions(group)[2]
    order = order[pos < depth]
    q = qrels[["topic", "docid", "rel"]]
    q = pd.DataFrame({"topic": q["topic"].astype(str), "docid": q["docid"].astype(str),
                      "rel": grade_values(q)}).drop_duplicates(["topic", "docid"], keep="last")
    relevant = q.loc[q["rel"] >= level]
    n_rel = relevant.groupby("topic").size()
    # relevance of each kept row by integer keys (topic code, docid code)
    qt = pd.Index(t_uniq.astype(str)).get_indexer(relevant["topic"])
    qd = pd.Index(d_uniq.astype(str)).get_indexer(relevant["docid"])
    found = (qt >= 0) & (qd >= 0)
    n_d = np.int64(len(d_uniq) + 1)
    rel_keys = qt[found].astype(np.int64) * n_d + qd[found]
    row_keys = t_codes[order].astype(np.int64) * n_d + d_codes[order]
    first = segment_starts(group[pos < depth])
    return _Observed(
        topic=[str(t) for t in t_uniq[t_codes[order[first]]]],
        system=[str(x) for x in s_uniq[s_codes[order[first]]]],
        bounds=np.r_[first, len(order)], score=score[order], rel=np.isin(row_keys, rel_keys),
        n_rel={str(k): int(v) for k, v in n_rel.items()},
        max_grade=int(q["rel"].max()) if len(q) else None,
        topic_pos=t_pos, system_pos=s_pos,
    )


def document_samples(
    runs: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    model: Model = "bootstrap",
    n_samples: int = 10,
    measure: str = "AP",
    depth: int = 1000,
    seed: int | None = 0,
    zeros: Literal["redraw", "keep", "skip"] = "redraw",
    relevance_level: int = 1,
    exact_rankings: bool = False,
    systems: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    backend: object = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Simulate other document samples per (topic, run) and score them.

    Parameters
    ----------
    runs : DataFrame
        Runs with columns ``system, topic, docid, score`` (irmodels' runs layout).
    qrels : DataFrame
        Qrels with ``topic, docid, rel``; documents with ``rel >= relevance_level`` are relevant.
    model : {"bootstrap", "kde", "gmg"}
        Score model of each class (see the module notes).
    n_samples : int
        Simulated samples ``C`` per (topic, run). Each is a new document sample drawn from the
        generative model (Poisson counts of relevant documents, scores from the fitted score
        model), a simulated replicate of the collection rather than a resample of the observed
        rows, so it keeps the simulator's name (not ``n_resamples``), as
        the study module :mod:`irmodels.studies.document_samples` does.
    measure : str
        ``AP``, ``P@k``, ``RR``, ``Rprec``, ``nDCG@k`` or ``RBP(p)``.
    depth : int
        Ranking depth (the run's top ``depth`` documents are modelled).
    seed : int or None
        Seed (default 0; ``None`` draws fresh entropy). Each (topic, run) gets its own stream,
        ``SeedSequence(seed, spawn_key=(t, s))`` with ``t`` and ``s`` the positions of its topic
        and its system in the natural order (``run2`` before ``run10``) of all the topics and
        all the systems of ``runs``, before the ``systems=``/``topics=`` selection. So the
        simulated values depend only on the seed and on those positions: they do not depend on
        the backend or the chunking, a selection gets the values of the full simulation for the
        pairs it keeps, and renaming topics or systems in a way that keeps their natural order
        (``sys01`` -> ``sys1``) keeps the values.
    zeros : {"redraw", "keep", "skip"}
        What to do when ``r_s ~ Poisson(r)`` draws 0 for a run that retrieved relevant documents.
    exact_rankings : bool
        Draw and sort every score (slow; for validation) instead of the exact binomial chain.
    systems, topics : sequence of str, optional
        Restrict the simulation (the pairs kept get the values of the full simulation).
    backend, n_workers, progress
        Passed to :func:`irmodels.parallel.map` (chunks of (topic, run) pairs).

    Returns
    -------
    DataFrame
        Long frame with columns ``measure, topic, system, sample, score`` (``sample`` = 1..C).
        ``attrs["record"]`` records per (topic, system), as plain lists (JSON-able, so the
        frame concatenates and writes to Parquet; :func:`sample_record` gives the table):
        ``n_ret, r, R, zero_draws, capped, skipped, degenerate`` (all simulated values equal),
        ``rel_model``, ``nonrel_model`` (the fitted model kinds, with fallbacks noted).

    Raises
    ------
    DataFormatError
        A missing, non-numeric or infinite run score (as :func:`irmodels.evaluate`); a bad
        ``n_samples``, ``depth`` or ``relevance_level`` (whole numbers >= 1), ``model``,
        ``measure`` or ``zeros``; no (topic, run) pair left after the selection.
    DesignError
        No topic of the runs has a relevant document (``rel >= relevance_level``).

    Notes
    -----
    A run that retrieved no relevant document for a topic (``r = 0``) always simulates
    ``r_s = 0`` and a measure of 0: it is recorded as degenerate. Mixed models cannot use
    degenerate (topic, system) strata; :func:`irmodels.studies.document_samples.compare_tests`
    reports and excludes them.

    References: Robertson & Kanoulas, "On Per-topic Variance in IR Evaluation", SIGIR 2012.

    Examples
    --------
    >>> import irmodels as irm
    >>> coll = irm.collection.generate(preset="tiny", seed=1)
    >>> sims = irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=3, seed=7)
    >>> list(sims.columns), int(sims["sample"].nunique())
    (['measure', 'topic', 'system', 'sample', 'score'], 3)
    """
    seed = check_seed(seed)
    n_samples = check_int(n_samples, "n_samples", low=1)
    depth = check_int(depth, "depth", low=1)
    relevance_level = check_int(relevance_level, "relevance_level", low=1)
    if zeros not in ("redraw", "keep", "skip"):
        raise ArgumentError(f"zeros must be 'redraw', 'keep' or 'skip', got {zeros!r}"
                            + did_you_mean(zeros, ("redraw", "keep", "skip")))
    if model not in ("bootstrap", "kde", "gmg"):
        raise DataFormatError(f"unknown score model {model!r}; use 'bootstrap', 'kde' or 'gmg'")
    measure = _simulated_measure(measure).name  # validate the name early
    # process workers are spawned (and import irmodels) while the runs are encoded here
    with parallel.prestarted(backend, n_workers, ("irmodels.replicates.documents",)):
        obs = _observed(runs, qrels, depth, relevance_level, systems, topics)
        if len(obs.score) == 0:
            raise DataFormatError("no (topic, run) pair to simulate: the runs are empty after selection")
        missing_topics = sorted(set(obs.topic) - set(obs.n_rel))
        if len(missing_topics) == len(set(obs.topic)):
            top = (f"; the highest grade in the qrels is {int(obs.max_grade)}"
                   if obs.max_grade is not None else "")
            raise DesignError(
                f"no topic of the runs has a relevant document (rel >= relevance_level = "
                f"{relevance_level}) in the qrels{top}: there is nothing to simulate. Check the "
                "qrels or lower relevance_level.")
        if missing_topics:
            warnings.warn(
                f"{len(missing_topics)} topic(s) have no relevant document in the qrels and are "
                f"skipped (e.g. {missing_topics[:3]})",
                DataQualityWarning,
                stacklevel=2,
            )
        groups = [(topic, system, rel, non, obs.n_rel[topic])
                  for topic, system, rel, non in obs.groups() if topic in obs.n_rel]
        # a score (and its frame row) per pair and sample: refused when it cannot fit
        check_fits(n_samples, "n_samples", 64 * max(len(groups), 1),
                   what=f"the scores of {len(groups)} (topic, run) pairs")
        seeds = _pair_seeds(seed, groups, obs)
        units = [
            (grp, sd, model, n_samples, measure, zeros, exact_rankings) for grp, sd in zip(groups, seeds)
        ]
        if backend == "serial":
            results = _simulate_chunk(units)
        else:
            # small chunks: (topic, run) pairs differ in cost, and the last chunk idles a core
            chunk = max(1, len(units) // (16 * (n_workers or 2)))
            chunks = [units[i : i + chunk] for i in range(0, len(units), chunk)]
            nested = parallel.map(_simulate_chunk, chunks, backend=backend, n_workers=n_workers,
                                  progress=progress)
            results = [r for part in nested for r in part]
    # the long frame from codes: labels are repeated as integer codes, not strings
    lengths = np.array([len(values) for values, _, _ in results], dtype=np.int64)
    topic_levels = sorted({g[0] for g in groups}, key=natural_key)
    system_levels = sorted({g[1] for g in groups}, key=natural_key)
    t_index, s_index = pd.Index(topic_levels), pd.Index(system_levels)
    unit_topic = t_index.get_indexer([g[0] for g in groups])
    unit_system = s_index.get_indexer([g[1] for g in groups])
    samples_all = np.concatenate([samples for _, samples, _ in results]).astype(np.int64)
    long = pd.DataFrame({
        "measure": pd.Categorical.from_codes(np.zeros(int(lengths.sum()), dtype=np.int8),
                                             categories=[measure]),
        "topic": pd.Categorical.from_codes(np.repeat(unit_topic, lengths),
                                           categories=topic_levels),
        "system": pd.Categorical.from_codes(np.repeat(unit_system, lengths),
                                            categories=system_levels),
        "sample": pd.Categorical.from_codes(samples_all - 1,
                                            categories=[str(i) for i in range(1, n_samples + 1)]),
        "score": np.concatenate([values for values, _, _ in results]).astype(np.float64),
    })
    records = [{"topic": g[0], "system": g[1], **rec} for g, (_, _, rec) in zip(groups, results)]
    out = frame(long, duplicates="allow")  # one row per (topic, system, sample) by construction
    record = pd.DataFrame.from_records(records)
    out.attrs["record"] = record.to_dict("list")  # JSON-able: see sample_record
    n_deg = int(record["degenerate"].sum())
    if n_deg:
        warnings.warn(
            f"{n_deg} of {len(record)} (topic, system) pairs have simulated values that never vary "
            "(e.g. no relevant document retrieved); mixed models must exclude them "
            "(see sample_record(samples))",
            DataQualityWarning,
            stacklevel=2,
        )
    return out


def _pair_seeds(seed: object, groups: list, obs: _Observed) -> list[np.random.SeedSequence]:
    """The seed of each (topic, run) pair: ``SeedSequence(seed, spawn_key=(t, s))`` with ``t``
    and ``s`` the pair's natural-order positions among all the topics and systems of the input
    runs, so a pair's stream depends neither on the selection (``systems=``, ``topics=``) nor
    on renamings that keep the natural order. ``seed=None`` draws the entropy once for all
    pairs."""
    root = seed_sequence(seed)  # a Generator or SeedSequence too, as check_seed accepts
    assert obs.topic_pos is not None and obs.system_pos is not None
    return [seed_sequence(root, spawn_key=(obs.topic_pos[g[0]], obs.system_pos[g[1]]))
            for g in groups]


def sample_record(samples: pd.DataFrame) -> pd.DataFrame:
    """The per-(topic, system) record of a :func:`document_samples` output, as a DataFrame.

    Examples
    --------
    >>> import warnings, irmodels as irm
    >>> coll = irm.collection.generate(preset="tiny", seed=1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", irm.DataQualityWarning)
    ...     sims = irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=3, seed=7)
    >>> rec = sample_record(sims)
    >>> list(rec.columns[:5]), len(rec)
    (['topic', 'system', 'n_ret', 'r', 'R'], 20)
    """
    rec = samples.attrs.get("record")
    if rec is None:
        raise DataFormatError("this frame has no simulation record; pass the output of "
                              "irm.replicates.document_samples")
    return rec.copy() if isinstance(rec, pd.DataFrame) else pd.DataFrame(rec)


def _simulate_chunk(units: list) -> list:
    """Simulate a chunk of (topic, run) units: every score model of the chunk is fitted in one
    batch (:func:`fit_score_models`; no fit draws random numbers, so batching changes no
    stream), then each unit draws from its own seed."""
    model: Model = units[0][2] if units else "bootstrap"
    rel_idx = [i for i, u in enumerate(units) if len(u[0][2])]
    non_idx = [i for i, u in enumerate(units) if len(u[0][3])]
    fits: list[list] = [[None, None] for _ in units]
    for i, f in zip(rel_idx, fit_score_models([units[i][0][2] for i in rel_idx], model,
                                              "relevant")):
        fits[i][0] = f
    for i, f in zip(non_idx, fit_score_models([units[i][0][3] for i in non_idx], model,
                                              "nonrelevant")):
        fits[i][1] = f
    return [_simulate_unit(u, *f) for u, f in zip(units, fits)]


def _simulate_unit(unit: tuple, rel_fit: tuple | None, nonrel_fit: tuple | None
                   ) -> tuple[np.ndarray, np.ndarray, dict]:
    (topic, system, rel_scores, nonrel_scores, R), seed, model, C, measure, zeros, exact = unit
    rng = np.random.default_rng(seed)
    r = len(rel_scores)
    n = r + len(nonrel_scores)
    rec = {"n_ret": n, "r": r, "R": R, "zero_draws": 0, "capped": 0, "skipped": 0,
           "rel_model": None, "nonrel_model": None, "degenerate": False}
    if r == 0:
        r_s = np.zeros(C, dtype=np.int64)
        rel_model = None
    else:
        r_s = rng.poisson(r, size=C)
        zero = r_s == 0
        rec["zero_draws"] = int(zero.sum())
        if zeros == "redraw":
            while zero.any():
                r_s[zero] = rng.poisson(r, size=int(zero.sum()))
                zero = r_s == 0
        capped = r_s > n
        rec["capped"] = int(capped.sum())
        r_s = np.minimum(r_s, n)
        assert rel_fit is not None
        rel_model, note = rel_fit
        rec["rel_model"] = rel_model.kind + (f" ({note})" if note else "")
    R_s = r_s + rng.poisson(max(R - r, 0), size=C)
    if nonrel_fit is not None:
        nonrel_model, note = nonrel_fit
        rec["nonrel_model"] = nonrel_model.kind + (f" ({note})" if note else "")
    else:
        nonrel_model = ScoreModel("bootstrap", values=np.array([-np.inf]))  # nothing ranks above
        rec["nonrel_model"] = "none retrieved"
    if rel_model is None or r_s.max() == 0:
        ranks = np.full((C, 0), np.inf)
    else:
        ranks = simulate_relevant_ranks(rel_model, nonrel_model, r_s, n, rng, exact_rankings=exact)
    values = measure_from_ranks(ranks, R_s, measure)
    samples = np.arange(1, C + 1)
    if zeros == "skip" and r > 0:
        keep = r_s > 0
        rec["skipped"] = int((~keep).sum())
        values, samples = values[keep], samples[keep]
    rec["degenerate"] = bool(len(values) < 2 or np.ptp(values) == 0)
    return values, samples, rec
