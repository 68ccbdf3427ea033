"""Cross-collection comparability of system scores (Webber, PhD thesis 2010, section 4.6).

Can a score measured on one test collection be compared with a score measured on another?
:func:`comparability` takes the same systems evaluated on two collections (two long frames)
and reports:

- the RMSE of the system means between the collections and the standardized error
  ``kappa = 2 RMSE / (sd_a + sd_b)``, the SDs being sample SDs (divisor n - 1) of the system
  means on each collection;
- a randomization test of kappa: the topics of both collections are pooled and re-partitioned
  at random into sets of the original sizes; the p-value is the share of re-partitions whose
  kappa is at least the observed one (a small p: the collections differ more than random
  topic sets of the same sizes would);
- per system, one-tailed two-sample (Welch) t tests of the scores on A against those on B, and
  the counts of systems significantly higher on A and higher on B (the thesis's Tables 4.10
  and 4.12);
- error rates of that per-system test over random halvings (Figures 4.9 and 4.11): the false
  positive rate (a collection split at random into two halves; the share of (system, halving)
  found significantly different, two-sided at ``alpha``: expected ``alpha``), with its
  distribution over the halvings (mean, median, 97.5th percentile of the share per halving),
  and the false negative rate of the cross-collection test (on the same halvings, a system on
  one half against a *different* system on the other half, for the pairs that a paired t test
  on the full collection finds different: the share the Welch test misses);
- the lost-significance rate (until 0.x named ``false_negative_rate``): among systems
  significant between the full collections, the share no longer significant between a random
  half of A and a random half of B.

References: W. Webber, *Measurement in Information Retrieval Evaluation*, PhD thesis,
University of Melbourne, 2010, section 4.6; W. Webber, A. Moffat and J. Zobel, "Score
standardization for inter-collection comparison of retrieval systems", SIGIR 2008.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._validate import check_fits, check_probability, check_seed, renamed
from irmodels.data._columns import user_frame
from irmodels.errors import ArgumentError, DataQualityWarning, DesignError
from irmodels.inference.pairwise import score_matrix, unit_scale

__all__ = ["SYSTEM_COLUMNS", "Comparability", "comparability", "kappa"]

#: Columns of :attr:`Comparability.systems`, in order.
SYSTEM_COLUMNS = ("system", "mean_a", "mean_b", "diff", "t", "df", "p_a_higher", "p_b_higher",
                  "a_higher", "b_higher")


def kappa(means_a: Any, means_b: Any) -> float:
    """Standardized RMSE of two vectors of system means: ``2 RMSE / (sd_a + sd_b)``.

    Examples
    --------
    >>> round(kappa([0.2, 0.3, 0.4], [0.25, 0.3, 0.35]), 4)
    0.5443
    """
    a = np.asarray(means_a, dtype=np.float64)
    b = np.asarray(means_b, dtype=np.float64)
    return float(_kappa(a[None, :], b[None, :])[0])


def _kappa(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Row-wise kappa of stacked vectors of system means (n x R each)."""
    rmse = np.sqrt(((A - B) ** 2).mean(axis=1))
    den = A.std(axis=1, ddof=1) + B.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 2 * rmse / den, np.nan)


def _welch(ma, va, na, mb, vb, nb):
    se2 = va / na + vb / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ma - mb) / np.sqrt(se2)
        df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    t = np.where((se2 == 0) & (ma == mb), 0.0, t)
    df = np.where(np.isfinite(df), df, na + nb - 2)
    return t, df


@dataclass(frozen=True, repr=False, eq=False)
class Comparability(ResultDisplay):
    """Result of :func:`comparability`.

    Attributes
    ----------
    rmse, kappa : float
        RMSE of the system means between the collections and ``2 RMSE / (sd_a + sd_b)``.
    sd_a, sd_b : float
        Sample SDs of the system means on each collection.
    p_value : float
        Randomization test of kappa (share of the random re-partitions of the pooled topics,
        among those with a defined kappa, whose kappa is >= the observed one); NaN when the
        observed kappa is undefined.
    systems : DataFrame
        Per system: ``system, mean_a, mean_b, diff`` (a - b), ``t``, ``df`` (Welch),
        ``p_a_higher``, ``p_b_higher`` (one-tailed p-values), ``a_higher``, ``b_higher``
        (significant at ``alpha``).
    n_a_higher, n_b_higher : int
        Counts of systems significantly higher on A / on B.
    false_positive_rate : float
        Share of (system, halving) pairs significant (two-sided, ``alpha``) between two random
        halves of one collection, over ``n_halvings`` halvings of each collection.
    false_positive_shares : ndarray
        The share of systems significant between the two halves, per halving (the first
        ``n_halvings`` from A, then those from B): the distribution of Figure 4.9;
        :meth:`false_positive_distribution` summarises it.
    pair_false_negative_rate : float
        The false negative rate of Figure 4.11: over the same halvings, for every ordered pair
        of different systems ``(i, j)`` whose paired t test on the full collection is
        significant (two-sided, ``alpha``), the share of (pair, halving) where the Welch test
        of ``i`` on one half against ``j`` on the other half is not significant in the
        direction of the full-collection difference (NaN when no pair is significant).
    n_true_pairs : int
        Ordered pairs counted by :attr:`pair_false_negative_rate`, summed over both
        collections.
    lost_significance_rate : float
        Among systems significant (two-sided) between the full collections, the share not
        significant between a random half of A and a random half of B (NaN when none is).
        Named ``false_negative_rate`` before; that name is deprecated (it warns) and will be
        removed in the next release.
    n_systems, n_topics_a, n_topics_b, n_resamples, n_halvings, alpha, seed
        Sizes and settings.
    """

    rmse: float
    kappa: float
    sd_a: float
    sd_b: float
    p_value: float
    systems: pd.DataFrame = field(repr=False)
    n_a_higher: int
    n_b_higher: int
    false_positive_rate: float
    lost_significance_rate: float
    n_systems: int
    n_topics_a: int
    n_topics_b: int
    n_resamples: int
    n_halvings: int
    alpha: float
    seed: int | None
    null_kappa: np.ndarray = field(repr=False)
    false_positive_shares: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    pair_false_negative_rate: float = math.nan
    n_true_pairs: int = 0

    @property
    def n_perm(self) -> int:
        """Deprecated name of :attr:`n_resamples` (for one release)."""
        warnings.warn("Comparability.n_perm is deprecated; use n_resamples (the old name stops "
                      "working in the next release).", FutureWarning, stacklevel=2)
        return self.n_resamples

    @property
    def false_negative_rate(self) -> float:
        """Deprecated name of :attr:`lost_significance_rate` (it is not Figure 4.11's rate)."""
        warnings.warn(
            "Comparability.false_negative_rate is renamed lost_significance_rate (the share of "
            "systems significant between the full collections that are not between halves); "
            "the false negative rate of Webber's Figure 4.11 is pair_false_negative_rate. The "
            "old name will be removed in the next release.", FutureWarning, stacklevel=2)
        return self.lost_significance_rate

    def false_positive_distribution(self) -> pd.Series:
        """Mean, median and 97.5th percentile of the false-positive share per halving.

        Returns
        -------
        Series
            Index ``mean, median, q97.5, max`` over :attr:`false_positive_shares`.
        """
        x = self.false_positive_shares
        if x.size == 0:
            return pd.Series({"mean": math.nan, "median": math.nan, "q97.5": math.nan,
                              "max": math.nan})
        return pd.Series({"mean": float(x.mean()), "median": float(np.median(x)),
                          "q97.5": float(np.quantile(x, 0.975)), "max": float(x.max())})

    def to_frame(self) -> pd.DataFrame:
        """:attr:`systems` (one row per system)."""
        return self.systems.copy()

    def statistics(self) -> pd.DataFrame:
        """The summary numbers as a one-column table."""
        rows = {"systems": self.n_systems, "topics A": self.n_topics_a,
                "topics B": self.n_topics_b, "RMSE": self.rmse, "sd A": self.sd_a,
                "sd B": self.sd_b, "kappa": self.kappa, "p (randomization)": self.p_value,
                "significantly higher on A": self.n_a_higher,
                "significantly higher on B": self.n_b_higher,
                "false positive rate": self.false_positive_rate,
                "false positives per halving, median": float(np.median(
                    self.false_positive_shares)) if self.false_positive_shares.size else math.nan,
                "false positives per halving, 97.5%": float(np.quantile(
                    self.false_positive_shares, 0.975))
                if self.false_positive_shares.size else math.nan,
                "false negative rate (pairs)": self.pair_false_negative_rate,
                "lost significance rate": self.lost_significance_rate}
        return pd.DataFrame({"value": pd.Series(rows, dtype=object)})

    def _display_title(self) -> str:
        return (f"Cross-collection comparability: {self.n_systems} systems, "
                f"{self.n_topics_a} vs {self.n_topics_b} topics, kappa={self.kappa:.4f}, "
                f"p={self.p_value:.4g}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Comparability", self.statistics())]

    def __repr__(self) -> str:
        return (f"<Comparability systems={self.n_systems}, rmse={self.rmse:.4f}, "
                f"kappa={self.kappa:.4f}, p_value={self.p_value:.4g}>")


def _matrix(frame: Any, what: str, names: dict[str, str] | None = None
            ) -> tuple[np.ndarray, list[str]]:
    frame, _ = user_frame(frame, **(names or {}), what=f"irm.comparability ({what})")

    X, _, systems = score_matrix(frame, needed_by=f"collection {what}: comparability",
                                 check_finite=True)
    return X, systems


def comparability(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    n_halvings: int = 100,
    alpha: float = 0.05,
    seed: int = 0,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
    **deprecated: Any,
) -> Comparability:
    """Are scores on collection A comparable with scores on collection B?

    Parameters
    ----------
    a, b : DataFrame
        Long frames (one score per (topic, system), every cell) of the same systems on two
        collections; compared on the systems they share (matched by name), topics are
        independent.
    n_resamples : int
        Random re-partitions of the randomization test (default 1000). Was ``n_perm`` (still
        accepted for one release, with a ``FutureWarning``).
    n_halvings : int
        Random halvings for the false positive and false negative rates (default 100).
    alpha : float
        Level of the per-system t tests (one-tailed for the counts, two-sided for the error
        rates).
    seed : int
        Seed of the re-partitions and halvings.
    topic, system, score : str
        The names of the topic, system and score columns of both frames (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    Comparability
        ``.rmse``, ``.kappa``, ``.p_value``, ``.systems``, ``.n_a_higher``, ``.n_b_higher``,
        ``.false_positive_rate``, ``.false_positive_distribution()``,
        ``.pair_false_negative_rate``, ``.lost_significance_rate``.

    Raises
    ------
    DesignError
        No (or a single) common system, a collection with missing cells or fewer than four
        topics, bad ``n_resamples``, ``n_halvings`` or ``alpha``.
    DataFormatError
        A missing (NaN) or infinite score in either collection.

    Warns
    -----
    DataQualityWarning
        kappa is undefined (the system means have no spread on either collection, so
        ``sd_a + sd_b = 0``): ``kappa`` and ``p_value`` are NaN. Also when some re-partitions
        have an undefined kappa (they are left out of the p-value).

    Notes
    -----
    kappa = 2 RMSE / (sd_a + sd_b) with sample SDs of the system means (Webber 2010, section
    4.6). The p-value is computed over the re-partitions whose kappa is defined (finite);
    re-partitions where the system means have no spread on either side are left out. A half
    of T topics has ``T // 2`` topics (the other ``T - T // 2``). The per-system test is
    Welch's two-sample t on the topic scores of the two collections (topics differ, so no
    pairing). The false negatives of Figure 4.11 reuse the false-positive halvings: the truth
    for a pair of different systems is a two-sided paired t test over all the collection's
    topics; on each halving, system ``i``'s scores on the first half are compared with system
    ``j``'s on the second half by the same Welch test as the false positives (as a score on one
    collection would be compared with another system's score on another), and a miss is a
    p-value above ``alpha`` or a significant difference of the wrong sign.

    Examples
    --------
    >>> import irmodels as irm
    >>> r04 = irm.datasets.load("robust2004", "AP")
    >>> topics = r04["topic"].astype(int)
    >>> trec7, trec8 = r04[topics.between(351, 400)], r04[topics.between(401, 450)]
    >>> res = irm.comparability(trec7, trec8, n_resamples=200, n_halvings=20, seed=1)
    >>> res
    <Comparability systems=110, rmse=0.0360, kappa=0.6275, p_value=0.445>
    >>> res.n_a_higher, res.n_b_higher
    (0, 6)
    >>> round(res.pair_false_negative_rate, 3), res.false_positive_distribution().index.tolist()
    (0.603, ['mean', 'median', 'q97.5', 'max'])
    """
    seed = check_seed(seed)
    names = {"topic": topic, "system": system, "score": score}
    n_perm = renamed(deprecated, "n_perm", "n_resamples", n_resamples, 1000,
                     where="irm.comparability")
    Xa, sa = _matrix(a, "a", names)
    Xb, sb = _matrix(b, "b", names)
    common = [s for s in sa if s in set(sb)]
    if len(common) < 2:
        raise DesignError(
            f"the two collections share {len(common)} system(s) (A has {len(sa)}: "
            f"{', '.join(sa[:3])}...; B has {len(sb)}: {', '.join(sb[:3])}...); comparability "
            "needs the same systems, matched by name, on both. Rename the systems to match.")
    for name, v in (("n_resamples", n_perm), ("n_halvings", n_halvings)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ArgumentError(f"{name} must be a positive integer; got {v!r}.")
    alpha = check_probability(alpha, "alpha")
    ia = [sa.index(s) for s in common]
    ib = [sb.index(s) for s in common]
    Xa, Xb = Xa[:, ia], Xb[:, ib]
    Ta, Tb = Xa.shape[0], Xb.shape[0]
    check_fits(int(n_perm), "n_resamples", 8, what="the permutation kappas")
    check_fits(int(n_halvings), "n_halvings", 8 * 2 * (Ta + Tb) * (len(common) + 1),
               what="the halves of the topics")
    if min(Ta, Tb) < 4:
        raise DesignError(f"each collection needs at least 4 topics (two halves of 2); A has "
                          f"{Ta}, B has {Tb}.")
    rng = np.random.default_rng(seed)
    # scores near 1e+-300: squares under/overflow; every statistic here is scale-invariant
    # but the RMSE, SDs and means, which are multiplied back
    unit = unit_scale(Xa, Xb)
    Xa, Xb = Xa / unit, Xb / unit
    ma, mb = Xa.mean(axis=0), Xb.mean(axis=0)
    obs = float(_kappa(ma[None], mb[None])[0])
    rmse = float(np.sqrt(((ma - mb) ** 2).mean()))

    # randomization test: re-partition the pooled topics
    pooled = np.vstack([Xa, Xb])
    T = Ta + Tb
    null = np.empty(n_perm)
    step = max(1, 2_000_000 // (T * len(common)))
    for start in range(0, n_perm, step):
        n = min(step, n_perm - start)
        perm = rng.permuted(np.broadcast_to(np.arange(T), (n, T)), axis=1)
        A = pooled[perm[:, :Ta]].mean(axis=1)
        B = pooled[perm[:, Ta:]].mean(axis=1)
        null[start:start + n] = _kappa(A, B)
    defined = np.isfinite(null)
    if not math.isfinite(obs):
        warnings.warn(
            "kappa is undefined: the system means have no spread on either collection "
            "(sd_a = sd_b = 0, every system has the same mean score), so kappa = 2 RMSE / "
            "(sd_a + sd_b) divides by 0; kappa and its randomization p-value are NaN. "
            "Compare systems that differ, or look at the RMSE and the per-system tests.",
            DataQualityWarning, stacklevel=2)
        p = math.nan
    elif not defined.any():
        warnings.warn(
            f"kappa is undefined in all {n_perm} random re-partitions of the topics (the "
            "system means have no spread on either side), so the randomization p-value is NaN.",
            DataQualityWarning, stacklevel=2)
        p = math.nan
    else:
        if not defined.all():
            warnings.warn(
                f"kappa is undefined in {int((~defined).sum())} of {n_perm} random "
                "re-partitions of the topics (the system means have no spread on either "
                "side); the p-value is the share among the other "
                f"{int(defined.sum())}.",
                DataQualityWarning, stacklevel=2)
        p = float(np.mean(null[defined] >= obs - 1e-12 * max(1.0, abs(obs))))

    # per-system one-tailed t tests
    va, vb = Xa.var(axis=0, ddof=1), Xb.var(axis=0, ddof=1)
    t, df = _welch(ma, va, Ta, mb, vb, Tb)
    pa, pb = stats.t.sf(t, df), stats.t.cdf(t, df)
    systems = pd.DataFrame({"system": common, "mean_a": ma * unit, "mean_b": mb * unit,
                            "diff": (ma - mb) * unit,
                            "t": t, "df": df, "p_a_higher": pa, "p_b_higher": pb,
                            "a_higher": pa <= alpha, "b_higher": pb <= alpha})
    two_sided_full = np.minimum(1.0, 2 * np.minimum(pa, pb)) <= alpha

    def halves(X: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        T0 = X.shape[0]
        perm = rng.permuted(np.broadcast_to(np.arange(T0), (n, T0)), axis=1)
        return X[perm[:, : T0 // 2]], X[perm[:, T0 // 2:]]

    def sig(H1: np.ndarray, H2: np.ndarray) -> np.ndarray:
        m1, m2 = H1.mean(axis=1), H2.mean(axis=1)
        v1, v2 = H1.var(axis=1, ddof=1), H2.var(axis=1, ddof=1)
        tt, dd = _welch(m1, v1, H1.shape[1], m2, v2, H2.shape[1])
        return 2 * stats.t.sf(np.abs(tt), dd) <= alpha

    fp = []
    split = []
    for X in (Xa, Xb):
        h1, h2 = halves(X, n_halvings)
        fp.append(sig(h1, h2))
        split.append((h1, h2))
    fp_rate = float(np.mean(np.concatenate(fp)))
    a_half = halves(Xa, n_halvings)[0]
    b_half = halves(Xb, n_halvings)[0]
    s = sig(a_half, b_half)
    lost_rate = (float(1.0 - s[:, two_sided_full].mean()) if two_sided_full.any() else math.nan)
    # Figure 4.11: different systems across the halves of one collection, for the pairs a
    # paired t test over the whole collection finds different (no further random draws)
    missed = 0
    n_true = 0
    for X, (h1, h2) in zip((Xa, Xb), split, strict=True):
        m1, m2 = h1.mean(axis=1), h2.mean(axis=1)
        v1, v2 = h1.var(axis=1, ddof=1), h2.var(axis=1, ddof=1)
        iu, ju = np.triu_indices(X.shape[1], k=1)
        step = max(1, 1_000_000 // (n_halvings + X.shape[0]))  # pairs per block (memory)
        for start in range(0, iu.size, step):
            i, j = _different_pairs(X, iu[start:start + step], ju[start:start + step], alpha)
            if i.size == 0:
                continue
            tt, dd = _welch(m1[:, i], v1[:, i], h1.shape[1], m2[:, j], v2[:, j], h2.shape[1])
            sign = np.sign(X[:, i].mean(axis=0) - X[:, j].mean(axis=0))
            hit = (2 * stats.t.sf(np.abs(tt), dd) <= alpha) & (np.sign(tt) == sign)
            missed += int((~hit).sum())
            n_true += int(i.size)
    pair_fn = missed / (n_true * n_halvings) if n_true else math.nan
    return Comparability(
        rmse=rmse * unit, kappa=obs, sd_a=float(ma.std(ddof=1)) * unit,
        sd_b=float(mb.std(ddof=1)) * unit,
        p_value=p, systems=systems, n_a_higher=int(systems["a_higher"].sum()),
        n_b_higher=int(systems["b_higher"].sum()), false_positive_rate=fp_rate,
        lost_significance_rate=lost_rate, n_systems=len(common), n_topics_a=Ta, n_topics_b=Tb,
        n_resamples=int(n_perm), n_halvings=int(n_halvings), alpha=float(alpha), seed=seed,
        null_kappa=null,
        false_positive_shares=np.concatenate([f.mean(axis=1) for f in fp]),
        pair_false_negative_rate=pair_fn, n_true_pairs=n_true,
    )


def _different_pairs(X: np.ndarray, i: np.ndarray, j: np.ndarray, alpha: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Of the pairs ``(i, j)``, those whose two-sided paired t test over the rows of ``X`` is
    significant at ``alpha``, in both orders."""
    T = X.shape[0]
    D = X[:, i] - X[:, j]
    m = D.mean(axis=0)
    sd = D.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = m / (sd / math.sqrt(T))
    # a constant non-zero difference is a certain difference; a zero one none
    p = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(X).max()), 2 * stats.t.sf(np.abs(t), T - 1),
                 np.where(m != 0, 0.0, 1.0))
    keep = p <= alpha
    return np.concatenate([i[keep], j[keep]]), np.concatenate([j[keep], i[keep]])
