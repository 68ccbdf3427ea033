"""Pooling bias and its adjustment, simulated on runs and qrels (Webber thesis, ch. 6).

A test collection judges only the documents its pool contributed: the union of the top
``depth`` documents of the pooled runs. A new run that did not contribute is scored with the
documents only it retrieved left unjudged, and its score is biased (usually downwards).
:func:`pooling_bias` measures that bias and the error left after two adjustments, by
simulation on a collection whose judgements are (close to) complete:

1. draw a pool ``P`` of ``width`` runs at random; every other run ``r`` is a "new" run;
2. the run's **pooled** score ``t`` uses the pool ``P + r`` (its own documents judged), its
   **unpooled** score ``u`` the pool ``P`` alone; unjudged documents are non-relevant
   (``treatment="irrelevant"``, "assumed irrelevance") or removed from the ranking before it is
   truncated (``"condensed"``, the condensed list of Sakai 2007);
3. **topic-based adjustment** (Algorithm 6.2): on ``n`` randomly chosen *common topics* the
   run was pooled, so both ``t`` and ``u`` are known there;
   ``a = mean over common topics of (t - u)`` and the adjusted score on the other topics is
   ``u + a``;
4. **system-based adjustment** (Algorithm 6.1): for every pooled system ``s``, score it with
   the documents only it contributed removed and ``r`` added to the pool (so the pool keeps
   its width): ``a = mean over s of (t_s - u_s)``; adjusted ``u + a``;
5. errors are measured on the non-common topics, per run, as the difference between the mean
   pooled score and the mean (adjusted) unpooled score: ``MAE = mean |t - adjusted|`` and
   ``bias = mean (t - adjusted)`` over runs and samplings.

The variance of the topic-based adjustment (Eq. 6.5) is ``((N - n) / N) * s_a^2 / n`` with
``s_a^2 = sum_i (t_i - (u_i + A))^2 / (N - 1)`` over all ``N`` topics (``A`` the mean of
``t - u`` over them): the sampling variance of a mean of ``n`` topics drawn from ``N`` without
replacement. The study reports its square root averaged over runs and samplings
(``se_eq65``) next to the observed root mean squared error of the adjusted score.

:func:`adjust` applies the topic-based adjustment to a researcher's own run: its unpooled
scores on every topic and its pooled scores on the common topics (``irm.pooling.adjust``;
``irm.pooling`` is this module).

Each sampling (one pool) is a unit of work mapped by :func:`irmodels.parallel.map` with its
own seed (``SeedSequence(seed, spawn_key=(width,)).spawn(n_resamples)``).

References: W. Webber, *Measurement in Information Retrieval Evaluation*, PhD thesis,
University of Melbourne, 2010, ch. 6 (Algorithms 6.1 and 6.2, Eq. 6.5); W. Webber and
L. A. F. Park, "Score adjustment for correction of pooling bias", SIGIR 2009; T. Sakai,
"Alternatives to bpref", SIGIR 2007 (condensed lists); A. Moffat and J. Zobel, "Rank-biased
precision for measurement of retrieval effectiveness", TOIS 2008.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels._section import figure_axes
from irmodels._validate import check_fits, check_int_list, check_seed, renamed, seed_sequence
from irmodels.data._columns import user_columns
from irmodels.data._encode import (
    encode_runs,
    factorize_labels,
    grade_values,
    refuse_duplicate_documents,
    segment_index,
    segment_starts,
    trec_ranked,
)
from irmodels.data.frame import natural_key
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.parallel import map as parallel_map

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "TREATMENTS", "PoolingAdjustment", "PoolingBiasStudy", "adjust",
           "pooling_bias", "rank_weights"]

TREATMENTS = ("irrelevant", "condensed")
#: Columns of :meth:`PoolingBiasStudy.to_frame`, in order.
COLUMNS = ("width", "common_topics", "treatment", "mae_unadjusted", "mae_adjusted",
           "bias_unadjusted", "bias_adjusted", "adjustment", "rmse_adjusted", "se_eq65",
           "n_runs")

_MEASURE = re.compile(r"^\s*(?:(RBP)\((?:p=)?([0-9.]+)\)|(P))@([0-9]+)\s*$", re.IGNORECASE)


def rank_weights(measure: str) -> np.ndarray:
    """Per-rank gains of a top-k measure: truncated, renormalised RBP or precision.

    ``RBP(p)@k`` (also ``RBP(p=0.8)@10``): ``(1 - p) p^(i-1) / (1 - p^k)`` at rank i <= k, so a
    ranking with k relevant documents scores 1 (the thesis's tRBP). ``P@k``: ``1 / k``.

    Examples
    --------
    >>> rank_weights("RBP(0.5)@2").round(4).tolist()
    [0.6667, 0.3333]
    >>> rank_weights("P@4").tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    m = _MEASURE.match(str(measure))
    if not m:
        raise DesignError(f"unknown measure {measure!r} for the pooling study; use RBP(p)@k "
                          "(truncated, renormalised rank-biased precision, e.g. RBP(0.8)@10) "
                          "or P@k.")
    k = int(m.group(4))
    if k < 1:
        raise DesignError(f"the cut-off of {measure!r} must be at least 1.")
    if m.group(1):
        p = float(m.group(2))
        if not 0 < p < 1:
            raise DesignError(f"the persistence of {measure!r} must be in (0, 1).")
        w = (1 - p) * p ** np.arange(k)
        return w / w.sum()
    return np.full(k, 1.0 / k)


@dataclass(frozen=True)
class _Topic:
    ranks: np.ndarray  # runs x L doc codes (U = padding: unjudged, non-relevant)
    contrib: np.ndarray  # runs x (U + 1): the document is in the run's top `depth`
    rel: np.ndarray  # (U + 1,) relevant


@dataclass(frozen=True)
class _Context:
    topics: tuple[_Topic, ...]
    n_runs: int
    weights: np.ndarray
    treatments: tuple[str, ...]
    common: tuple[int, ...]


def _score(topic: _Topic, runs: np.ndarray, judged: np.ndarray, weights: np.ndarray,
           treatment: str) -> np.ndarray:
    """Scores of ``runs`` (n,) with the judged masks ``judged`` (n x (U + 1))."""
    k = len(weights)
    R = topic.ranks[runs]  # n x L
    jm = np.take_along_axis(judged, R, axis=1)
    rel = topic.rel[R] & jm
    if treatment == "irrelevant":
        return (rel[:, :k] * weights[None, : min(k, R.shape[1])]).sum(axis=1)
    pos = np.cumsum(jm, axis=1) - 1
    ok = rel & (pos < k)
    w = np.append(weights, 0.0)[np.minimum(pos, k)]
    return (ok * w).sum(axis=1)


def _unit(ctx: _Context, unit: tuple[int, np.random.SeedSequence]) -> list[dict[str, Any]]:
    width, seq = unit
    rng = np.random.default_rng(seq)
    pool = np.sort(rng.choice(ctx.n_runs, size=width, replace=False))
    others = np.setdiff1d(np.arange(ctx.n_runs), pool)
    T = len(ctx.topics)
    nr, w = len(others), len(pool)
    out = []
    scores = {tr: {"t": np.empty((nr, T)), "u": np.empty((nr, T)),
                   "sys": np.empty((nr, T))} for tr in ctx.treatments}
    for ti, tp in enumerate(ctx.topics):
        cnt = tp.contrib[pool].sum(axis=0)  # pool runs contributing each document
        jp = cnt > 0
        j_with = jp[None, :] | tp.contrib[others]  # pool + r, one row per new run
        j_without = np.broadcast_to(jp, j_with.shape)
        # system-based: pool minus s plus r, for every (r, s)
        base = (cnt[None, :] - tp.contrib[pool]) > 0  # w x U: pool without s
        j_sys = (base[None, :, :] | tp.contrib[others][:, None, :]).reshape(nr * w, -1)
        s_runs = np.tile(pool, nr)
        for tr in ctx.treatments:
            scores[tr]["t"][:, ti] = _score(tp, others, j_with, ctx.weights, tr)
            scores[tr]["u"][:, ti] = _score(tp, others, j_without, ctx.weights, tr)
            ts = _score(tp, pool, np.broadcast_to(jp, (w, jp.size)), ctx.weights, tr)
            us = _score(tp, s_runs, j_sys, ctx.weights, tr).reshape(nr, w)
            scores[tr]["sys"][:, ti] = (ts[None, :] - us).mean(axis=1)
    for n in ctx.common:
        common = np.zeros(T, dtype=bool)
        common[rng.choice(T, size=n, replace=False)] = True
        ev = ~common
        for tr in ctx.treatments:
            t, u = scores[tr]["t"], scores[tr]["u"]
            gap = t - u
            a_topic = gap[:, common].mean(axis=1)
            a_sys = scores[tr]["sys"][:, ev].mean(axis=1)
            err_unadj = gap[:, ev].mean(axis=1)
            A = gap.mean(axis=1, keepdims=True)
            s2 = ((gap - A) ** 2).sum(axis=1) / (T - 1)
            se = np.sqrt((T - n) / T * s2 / n)
            for name, a in (("topic", a_topic), ("system", a_sys)):
                out.append({"common_topics": n, "treatment": tr, "adjustment": name,
                            "unadj": err_unadj, "adj": err_unadj - a, "se": se})
    return out


@dataclass(frozen=True, repr=False, eq=False)
class PoolingBiasStudy(ResultDisplay):
    """Result of :func:`pooling_bias`.

    Attributes
    ----------
    table : DataFrame
        One row per (width, common topics, treatment, adjustment); see :meth:`to_frame`.
    widths, common_topics, treatments, measure, depth, n_resamples, seed, n_runs, n_topics
        Settings and the collection's size (``n_resamples``: random pools per width; the
        attribute was ``n_samples``, still readable for one release with a ``FutureWarning``).
    """

    table: pd.DataFrame = field(repr=False)
    widths: tuple[int, ...]
    common_topics: tuple[int, ...]
    treatments: tuple[str, ...]
    measure: str
    depth: int
    n_resamples: int
    seed: int | None
    n_runs: int
    n_topics: int

    def to_frame(self) -> pd.DataFrame:
        """The study's table. Columns, in order:

        - ``width``: runs in the pool; ``common_topics``: topics where the new run was pooled
          (used by the topic-based adjustment, left out of the error);
        - ``treatment``: ``irrelevant`` or ``condensed``;
        - ``mae_unadjusted``, ``mae_adjusted``: mean over new runs and samplings of
          ``|t - u|`` and ``|t - (u + a)|`` (per run, means over the non-common topics);
        - ``bias_unadjusted``, ``bias_adjusted``: the same without absolute values
          (positive: the unpooled score is too low);
        - ``adjustment``: ``topic`` (Algorithm 6.2) or ``system`` (Algorithm 6.1);
        - ``rmse_adjusted``: root mean square of ``t - (u + a)``;
        - ``se_eq65``: mean of the square root of Eq. 6.5 (the topic-based adjustment's
          standard error; the same on both rows of a setting);
        - ``n_runs``: (run, sampling) pairs averaged.
        """
        return self.table.copy()

    def _display_title(self) -> str:
        return (f"Pooling bias ({self.measure}, pool depth {self.depth}): {self.n_runs} runs x "
                f"{self.n_topics} topics, {self.n_resamples} pools per width")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        t = self.table.set_index("width")
        return [("Error of unpooled and adjusted scores", t)]

    def __repr__(self) -> str:
        return (f"<PoolingBiasStudy measure={self.measure!r}, widths={self.widths}, "
                f"common_topics={self.common_topics}, treatments={self.treatments}, "
                f"n_resamples={self.n_resamples}>")

    @property
    def n_samples(self) -> int:
        """Deprecated name of :attr:`n_resamples` (for one release)."""
        warnings.warn("PoolingBiasStudy.n_samples is deprecated; use n_resamples (the old name "
                      "stops working in the next release).", FutureWarning, stacklevel=2)
        return self.n_resamples

    def plot(self, *, ax: Any = None) -> Figure:
        """MAE by pool width: unadjusted and each adjustment, one panel per treatment.

        Parameters
        ----------
        ax : matplotlib Axes (one per treatment), optional
            Draw there (the figure returned is then the first one's); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """

        k = len(self.treatments)
        fig, axes = figure_axes(ax, figsize=(5 * k, 3.6), shape=(1, k),
                                what="PoolingBiasStudy.plot")
        n = max(self.common_topics)
        for ax, tr in zip(axes, self.treatments):
            g = self.table[(self.table["treatment"] == tr) & (self.table["common_topics"] == n)]
            top = g[g["adjustment"] == "topic"]
            ax.plot(top["width"], top["mae_unadjusted"], marker="o", label="unadjusted")
            for name, gg in g.groupby("adjustment", sort=False):
                ax.plot(gg["width"], gg["mae_adjusted"], marker="s", label=f"{name}-based")
            ax.set_xlabel("pool width (runs)")
            ax.set_ylabel(f"MAE of {self.measure}")
            ax.set_title(f"{tr}, {n} common topics", fontsize=9)
            ax.legend(fontsize=7)
        return fig


def _prepare(runs: pd.DataFrame, qrels: pd.DataFrame, depth: int, k: int,
             treatments: Sequence[str]) -> tuple[list[_Topic], list[str], list[str]]:
    for name, frame, cols in (("runs", runs, ("system", "topic", "docid", "score")),
                              ("qrels", qrels, ("topic", "docid", "rel"))):
        if not isinstance(frame, pd.DataFrame):
            raise DataFormatError(f"{name} must be a DataFrame; got {type(frame).__name__}.")
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise DataFormatError(f"{name} has no column {', '.join(missing)}; columns: "
                                  f"{', '.join(map(str, frame.columns))}.")

    # the rankings of irm.evaluate (trec_eval's order: the score as a C float descending, then
    # the document id descending), with what it refuses: a missing, non-numeric or infinite
    # score, a document twice in one ranking, a relevance grade that is not a whole number
    _, run_topics = factorize_labels(runs["topic"], "runs")
    r = trec_ranked(encode_runs(runs, [str(t) for t in run_topics]))
    refuse_duplicate_documents(r)
    rel = grade_values(qrels)
    n = len(r.key)
    first = segment_starts(r.key)  # each ranking is contiguous
    pos = np.arange(n) - first[segment_index(first, n)]
    length = max(depth, k) if treatments == ("irrelevant",) else None
    key, doc = r.key, r.doc
    if length is not None:
        keep = pos < length
        key, doc, pos = key[keep], doc[keep], pos[keep]
    system, topic = np.divmod(key, r.n_topics)  # systems are coded in natural order
    systems = list(r.systems)
    order = sorted(range(r.n_topics), key=lambda i: natural_key(r.topics[i]))
    topics = [r.topics[i] for i in order]
    rankings = np.unique(r.key)
    counts = np.bincount(rankings % r.n_topics, minlength=r.n_topics)
    short = [i for i in order if counts[i] < len(systems)]
    if short:
        raise DesignError(
            f"the pooling study needs every run to have a ranking for every topic; topic "
            f"{r.topics[short[0]]} has {int(counts[short[0]])} of {len(systems)} runs. Keep "
            "the topics all runs answered.")
    q = qrels.astype({"topic": str, "docid": str})
    relevant = set(zip(q["topic"][rel > 0], q["docid"][rel > 0]))  # the checked grades
    docids = np.asarray(r.docids).astype(str)
    by_topic = np.argsort(topic, kind="stable")  # rows of a topic: by system, then rank
    bounds = np.searchsorted(topic[by_topic], np.arange(r.n_topics + 1))
    out = []
    for i in order:
        rows = by_topic[bounds[i]:bounds[i + 1]]
        codes, uniq = pd.factorize(doc[rows])
        U = len(uniq)
        p = pos[rows]
        si = system[rows]
        ranks = np.full((len(systems), int(p.max()) + 1), U, dtype=np.int64)
        ranks[si, p] = codes
        contrib = np.zeros((len(systems), U + 1), dtype=bool)
        top = p < depth
        contrib[si[top], codes[top]] = True
        rel_t = np.zeros(U + 1, dtype=bool)
        t = r.topics[i]
        rel_t[:U] = [(t, d) in relevant for d in docids[uniq]]
        out.append(_Topic(ranks=ranks, contrib=contrib, rel=rel_t))
    return out, systems, topics


def _int_tuple(values: Any, name: str) -> tuple[int, ...]:
    """A whole number or a non-empty list of them, sorted, each once (1.5 or "2" is refused,
    not truncated)."""
    out = check_int_list(values, name, unique=False)
    return tuple(sorted(set(out)))


def pooling_bias(
    runs: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    widths: Sequence[int] | int,
    common_topics: Sequence[int] | int = (10,),
    n_resamples: int = 20,
    depth: int = 10,
    measure: str = "RBP(0.8)@10",
    treatment: str | Sequence[str] = "irrelevant",
    seed: int = 0,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    **deprecated: Any,
) -> PoolingBiasStudy:
    """Simulate pooling bias and its topic- and system-based adjustments.

    Parameters
    ----------
    runs, qrels : DataFrame
        Runs (``system, topic, docid, score``; ranked by score, ties by doc id descending as
        trec_eval does) and qrels (``topic, docid, rel``) of a collection judged deeper than
        ``depth`` (e.g. ``irm.collection.generate(preset="small")``, judged to depth 100).
        Documents without a judgement count as non-relevant.
    widths : int or sequence of int
        Pool widths (runs pooled), each from 1 to the number of runs minus one.
    common_topics : int or sequence of int
        Numbers of common topics for the topic-based adjustment (each from 1 to the number
        of topics minus one).
    n_resamples : int
        Random pools per width (default 20); every run outside a pool is a new run. Was
        ``n_samples`` (still accepted for one release, with a ``FutureWarning``).
    depth : int
        Pool depth (default 10).
    measure : str
        ``RBP(p)@k`` (truncated, renormalised; default ``RBP(0.8)@10``, the thesis's tRBP) or
        ``P@k``.
    treatment : str or sequence of str
        ``"irrelevant"`` (unjudged documents are non-relevant) and/or ``"condensed"``.
    seed : int
        Seed; pool ``i`` of width ``w`` uses child ``i`` of ``SeedSequence(seed,
        spawn_key=(w,))``.
    backend, n_workers, progress
        Where the pools run (:func:`irmodels.parallel.map`).

    Returns
    -------
    PoolingBiasStudy
        ``to_frame()`` with columns ``width, common_topics, treatment, mae_unadjusted,
        mae_adjusted, bias_unadjusted, bias_adjusted, adjustment, rmse_adjusted, se_eq65,
        n_runs``; ``plot()``.

    Raises
    ------
    DesignError
        A width or number of common topics that is not a whole number, a width larger than
        the number of runs minus one, more common topics than topics minus one, an unknown
        measure or treatment, runs missing topics.
    DataFormatError
        Runs or qrels without the needed columns; what :func:`irmodels.evaluate` refuses: a
        missing, non-numeric or infinite score, a document listed twice in one ranking, a
        relevance grade that is not a whole number.

    Examples
    --------
    >>> import irmodels as irm
    >>> col = irm.collection.generate(preset="small", seed=0)
    >>> study = irm.studies.pooling_bias(col.runs, col.qrels, widths=[2, 6], common_topics=5,
    ...                                  n_resamples=5, seed=1)
    >>> study.to_frame()[["width", "adjustment", "mae_unadjusted", "mae_adjusted"]].round(4)
       width adjustment  mae_unadjusted  mae_adjusted
    0      2      topic          0.2421        0.1141
    1      2     system          0.2421        0.1153
    2      6      topic          0.1474        0.0865
    3      6     system          0.1474        0.0636
    """
    seed = check_seed(seed)
    weights = rank_weights(measure)
    treatments = (treatment,) if isinstance(treatment, str) else tuple(dict.fromkeys(treatment))
    bad = [t for t in treatments if t not in TREATMENTS]
    if bad or not treatments:
        raise DesignError(f"unknown treatment {bad[0] if bad else treatment!r}; choose "
                          f"{' or '.join(map(repr, TREATMENTS))}.")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ArgumentError(f"depth must be a positive whole number; got {depth!r}.")
    n_resamples = renamed(deprecated, "n_samples", "n_resamples", n_resamples, 20,
                          where="irm.studies.pooling_bias")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ArgumentError(
            f"n_resamples must be a positive whole number; got {n_resamples!r}.")
    w_list = _int_tuple(widths, "widths")
    c_list = _int_tuple(common_topics, "common_topics")
    topics, systems, _ = _prepare(runs, qrels, int(depth), len(weights), treatments)
    S, T = len(systems), len(topics)
    if w_list[0] < 1 or w_list[-1] > S - 1:
        bad_w = w_list[-1] if w_list[-1] > S - 1 else w_list[0]
        raise DesignError(
            f"pool width {bad_w} is impossible with {S} runs: a width runs from 1 to {S - 1} "
            "(one run at least must stay out of the pool to be the new run). Use smaller "
            "widths or more runs.")
    if c_list[0] < 1 or c_list[-1] > T - 1:
        raise DesignError(
            f"asked for {c_list[-1] if c_list[-1] > T - 1 else c_list[0]} common topics, but "
            f"the collection has {T} topics: use 1 to {T - 1} (at least one topic must remain "
            "to measure the error).")
    # a seed and the records of every (run, common, treatment) per pool and width
    check_fits(int(n_resamples), "n_resamples",
               len(w_list) * (400 + 500 * S * len(c_list) * len(treatments)),
               what="the pools' seeds and records")
    ctx = _Context(topics=tuple(topics), n_runs=S, weights=weights, treatments=treatments,
                   common=c_list)
    units = []
    root = seed_sequence(seed)  # a Generator or SeedSequence too, as check_seed accepts
    for w in w_list:
        for child in seed_sequence(root, spawn_key=(w,)).spawn(int(n_resamples)):
            units.append((w, child))
    parts = parallel_map(functools.partial(_unit, ctx), units, backend=backend,
                         n_workers=n_workers, progress=progress, desc="pooling bias")
    rows = []
    for w in w_list:
        recs = [rec for u, part in zip(units, parts) if u[0] == w for rec in part]
        for n in c_list:
            for tr in treatments:
                for adj in ("topic", "system"):
                    sel = [r for r in recs if r["common_topics"] == n and r["treatment"] == tr
                           and r["adjustment"] == adj]
                    un = np.concatenate([r["unadj"] for r in sel])
                    ad = np.concatenate([r["adj"] for r in sel])
                    se = np.concatenate([r["se"] for r in sel])
                    rows.append((w, n, tr, float(np.abs(un).mean()), float(np.abs(ad).mean()),
                                 float(un.mean()), float(ad.mean()), adj,
                                 float(math.sqrt((ad**2).mean())), float(se.mean()), len(un)))
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return PoolingBiasStudy(table=table, widths=w_list, common_topics=c_list,
                            treatments=treatments, measure=str(measure), depth=int(depth),
                            n_resamples=int(n_resamples), seed=seed, n_runs=S, n_topics=T)


# --------------------------------------------------------------------------------------------
# adjusting a researcher's own run


def _series(x: Any, what: str, names: dict[str, str] | None = None) -> pd.Series:
    if isinstance(x, pd.DataFrame) and names:
        x = user_columns(x, names, what=f"irm.pooling.adjust ({what})")
    if isinstance(x, pd.DataFrame):
        if {"topic", "score"} <= set(x.columns):
            if x["topic"].duplicated().any():
                raise DataFormatError(f"{what} has several scores for topic "
                                      f"{x['topic'][x['topic'].duplicated()].iloc[0]}; give one "
                                      "score per topic (one run).")
            x = pd.Series(x["score"].to_numpy(), index=x["topic"].astype(str).to_numpy())
        else:
            raise DataFormatError(f"{what} must be a Series indexed by topic or a frame with "
                                  f"topic and score columns; got columns "
                                  f"{', '.join(map(str, x.columns))}.")
    elif isinstance(x, dict):
        x = pd.Series(x)
    if not isinstance(x, pd.Series):
        raise DataFormatError(f"{what} must be a Series indexed by topic (or a dict, or a frame "
                              f"with topic and score columns); got {type(x).__name__}.")
    values = x.to_numpy()
    flags = [v for v in values if isinstance(v, (bool, np.bool_))]
    if flags or values.dtype == bool:
        raise DataFormatError(f"{what} holds a boolean score ({flags[0] if flags else True!r}); "
                              "scores are numbers (e.g. AP per topic).")
    try:
        s = pd.Series(values.astype(np.float64), index=x.index.astype(str))
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{what} holds a score that is not a number ({exc}); scores "
                              "are numbers (e.g. AP per topic).") from None
    inf = np.isinf(s.to_numpy())
    if inf.any():
        raise DataFormatError(f"{what} has an infinite score ({s[inf].iloc[0]}) for topic "
                              f"{s.index[inf][0]}; give finite scores.")
    if s.index.duplicated().any():
        raise DataFormatError(f"{what} has several scores for topic "
                              f"{s.index[s.index.duplicated()][0]}.")
    if s.isna().any():
        raise DataFormatError(f"{what} has a missing score for topic {s.index[s.isna()][0]}.")
    return s


@dataclass(frozen=True, repr=False, eq=False)
class PoolingAdjustment(ResultDisplay):
    """Result of :func:`adjust`.

    Attributes
    ----------
    adjustment : float
        ``a = mean(t - u)`` over the common topics.
    se : float
        Standard error of ``a`` (Eq. 6.5 with ``s_a^2`` estimated on the common topics,
        divisor ``n - 1``): ``sqrt(((N - n) / N) * s_a^2 / n)``; NaN with one common topic.
    n_common, n_topics : int
        Common topics and all topics (N).
    mean_unadjusted, mean_adjusted : float
        Mean over all topics of ``u``, and of the adjusted scores (``t`` on the common topics,
        ``u + a`` on the others).
    scores : DataFrame
        One row per topic: ``topic``, ``unpooled``, ``pooled`` (NaN off the common topics),
        ``adjusted``, ``common``.
    """

    adjustment: float
    se: float
    n_common: int
    n_topics: int
    mean_unadjusted: float
    mean_adjusted: float
    scores: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """:attr:`scores`."""
        return self.scores.copy()

    def _display_title(self) -> str:
        return (f"Topic-based pooling adjustment: a = {self.adjustment:.4f} (SE {self.se:.4f}) "
                f"from {self.n_common} common topics of {self.n_topics}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        stats = pd.DataFrame({"value": [self.mean_unadjusted, self.mean_adjusted,
                                        self.adjustment, self.se]},
                             index=["mean unadjusted", "mean adjusted", "adjustment", "SE"])
        return [("Adjusted mean score", stats)]

    def __repr__(self) -> str:
        return (f"<PoolingAdjustment adjustment={self.adjustment:.4f}, se={self.se:.4f}, "
                f"n_common={self.n_common}, mean_adjusted={self.mean_adjusted:.4f}>")


def adjust(unpooled: Any, pooled: Any, *, min_common: int = 2, topic: str = "topic",
           score: str = "score") -> PoolingAdjustment:
    """Topic-based adjustment of an unpooled run's scores (Algorithm 6.2).

    Parameters
    ----------
    unpooled : Series, dict or DataFrame
        The run's scores on every topic against the collection's qrels (documents only it
        retrieved unjudged), indexed by topic (or a frame with ``topic, score``).
    pooled : Series, dict or DataFrame
        Its scores on the common topics after its own documents were judged as well.
    min_common : int
        Fewest common topics accepted (default 2, the least that gives a standard error).
    topic, score : str
        The names of the topic and score columns of a frame given for ``unpooled`` or
        ``pooled`` (as in :func:`irmodels.frame`), e.g. ``topic="qid", score="map"``.

    Returns
    -------
    PoolingAdjustment
        ``.adjustment``, ``.se``, ``.mean_adjusted``, ``.scores``.

    Raises
    ------
    DesignError
        Fewer common topics than ``min_common``; a pooled topic without an unpooled score.

    Examples
    --------
    >>> import irmodels as irm
    >>> u = {"1": 0.20, "2": 0.30, "3": 0.25, "4": 0.40}
    >>> t = {"1": 0.26, "2": 0.34}
    >>> res = irm.pooling.adjust(u, t)
    >>> res
    <PoolingAdjustment adjustment=0.0500, se=0.0071, n_common=2, mean_adjusted=0.3375>
    >>> res.scores["adjusted"].round(2).tolist()
    [0.26, 0.34, 0.3, 0.45]
    """
    names = {"topic": topic, "score": score}
    u = _series(unpooled, "unpooled", names)
    t = _series(pooled, "pooled", names)
    extra = [k for k in t.index if k not in u.index]
    if extra:
        raise DesignError(f"topic {extra[0]} has a pooled score but no unpooled one; give the "
                          "run's unpooled scores on every topic (common ones included).")
    if isinstance(min_common, bool) or not isinstance(min_common, (int, np.integer)) \
            or min_common < 1:
        raise DesignError(f"min_common must be a positive whole number; got {min_common!r}.")
    n, N = len(t), len(u)
    if n < min_common:
        raise DesignError(f"the adjustment needs at least {min_common} common topics (topics "
                          f"where the run was judged); got {n}. Judge the run's documents on "
                          "more topics, or lower min_common.")
    if n >= N:
        raise DesignError(f"every one of the {N} topics is a common topic: there is nothing to "
                          "adjust (use the pooled scores).")
    common = u.index.isin(t.index)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
        gap = t - u.loc[t.index]
        a = float(gap.mean())
        s2 = float(((gap - a) ** 2).sum() / (n - 1)) if n > 1 else math.nan
        se = math.sqrt((N - n) / N * s2 / n) if n > 1 else math.nan
        adjusted = np.where(common, t.reindex(u.index).to_numpy(), u.to_numpy() + a)
        total = float(adjusted.mean())
    if not (math.isfinite(a) and math.isfinite(total) and (n < 2 or math.isfinite(se))):
        top = float(max(np.abs(u.to_numpy()).max(), np.abs(t.to_numpy()).max()))
        raise DataFormatError(
            f"the scores are too large for double precision (largest |score| {top:.3g}): the "
            "adjustment, its standard error or the adjusted mean overflows. Rescale the scores "
            "(divide them by a power of 10); the adjustment scales with them.")
    scores = pd.DataFrame({"topic": u.index.to_numpy(), "unpooled": u.to_numpy(),
                           "pooled": t.reindex(u.index).to_numpy(), "adjusted": adjusted,
                           "common": common})
    return PoolingAdjustment(adjustment=a, se=se, n_common=n, n_topics=N,
                             mean_unadjusted=float(u.mean()), mean_adjusted=float(adjusted.mean()),
                             scores=scores)
