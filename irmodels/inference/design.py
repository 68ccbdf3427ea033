"""Webber's experimental-design workflow for retrieval experiments.

How many topics should an experiment use, when the standard deviation of the per-topic score
differences is not known in advance? Webber (PhD thesis, 2010, chapter 5; Webber, Moffat and
Zobel, CIKM 2008) proposes to estimate it on a small trial, to size the experiment on an upper
confidence bound of that estimate, and warns against the tempting alternative of adding topics
until the difference is significant. This module gives the pieces:

- :func:`sigma_upper`: the one-sided upper confidence bound on sigma from a trial of ``n``
  topics, ``sigma_u = sigma_hat sqrt((n - 1) / chi2_alpha(n - 1))`` (``chi2_alpha`` the lower
  ``alpha`` quantile of chi-square; the thesis's equation 5.3);
- :func:`size_from_trial`: from a trial (a long frame or a sigma and ``n``) the topics needed
  for a target power, at the point estimate and at the upper bound, through
  :func:`irmodels.power.paired_t`;
- :func:`common_sigma_test`: a resampling test that the system pairs share one sigma of their
  score differences (the thesis's Algorithm 5.1, as described in the docs);
- :func:`sequential`: a sequential design (start with some topics, add ``step`` at a time until
  significant or a maximum) simulated under a true difference; with ``delta=0`` its rejection
  rate is the inflated false-positive rate (the thesis's Figures 5.8-5.10);
- :func:`baseline_pairs`: the baseline-versus-better system pairs behind the thesis's Table 5.3.

References: docs/methods.md, "Experimental design from a trial"; W. Webber, *Measurement in
Information Retrieval Evaluation*, PhD thesis, University of Melbourne, 2010, ch. 5; W. Webber,
A. Moffat and J. Zobel, "Statistical power in retrieval experimentation", CIKM 2008.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._section import figure_axes
from irmodels._validate import (
    check_fits,
    check_int,
    check_number,
    check_probability,
    check_seed,
    renamed,
)
from irmodels.data._columns import user_frame
from irmodels.errors import DesignError
from irmodels.inference.pairwise import score_matrix
from irmodels.inference.power import pair_sd, paired_t
from irmodels.stats.gtheory import alpha_of_level

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "sigma_upper",
    "TrialSizing",
    "size_from_trial",
    "CommonSigmaTest",
    "common_sigma_test",
    "SequentialDesign",
    "sequential",
    "baseline_pairs",
    "SIZING_COLUMNS",
    "LOOK_COLUMNS",
    "BASELINE_COLUMNS",
]

#: Columns of :attr:`TrialSizing.table`, in order.
SIZING_COLUMNS = ("n_trial", "sigma_hat", "confidence", "sigma_upper", "delta", "power",
                  "alpha", "n_point", "n_topics_point", "n_upper", "n_topics_upper",
                  "power_point_at_upper")
#: Columns of :attr:`SequentialDesign.looks`, in order.
LOOK_COLUMNS = ("look", "n", "reject_at_look", "cumulative_rate", "se")
#: Columns of :func:`baseline_pairs`, in order.
BASELINE_COLUMNS = ("baseline", "better", "mean_baseline", "mean_better", "diff", "sd",
                    "n_topics")


def _matrix(data: Any, what: str, names: dict[str, str]) -> tuple[np.ndarray, list[str]]:
    data, _ = user_frame(data, **names, what=what)
    X, _, systems = score_matrix(data, needed_by=what, check_finite=True)
    if X.shape[0] < 2 or X.shape[1] < 2:
        raise DesignError(f"{what} needs at least 2 topics and 2 systems; got {X.shape[0]} "
                          f"topics x {X.shape[1]} systems.")
    return X, systems


# ------------------------------------------------------------------------- trial sizing
def sigma_upper(sigma_hat: float, n: int, *, level: float = 0.95, **deprecated: Any) -> float:
    """One-sided upper confidence bound (at ``level``) on sigma from a trial of ``n`` topics.

    Parameters
    ----------
    sigma_hat : float
        Sample SD (divisor ``n - 1``) of the per-topic score differences on the trial.
    n : int
        Topics in the trial (>= 2).
    level : float
        Confidence level (default 0.95: a 95% upper bound). The tail probability ``alpha`` is
        :func:`~irmodels.stats.gtheory.alpha_of_level` (``1 - level`` to 12 significant
        digits: 0.95 gives 0.05 exactly). Was ``alpha`` (one minus the level; still accepted
        for one release, with a ``FutureWarning``, and used as given).

    Returns
    -------
    float
        ``sigma_hat * sqrt((n - 1) / chi2_alpha(n - 1))``, ``chi2_alpha(k)`` the lower
        ``alpha`` quantile of chi-square with ``k`` degrees of freedom (R's
        ``qchisq(alpha, n - 1)``).

    Notes
    -----
    With normal differences ``(n - 1) s^2 / sigma^2`` is chi-square with ``n - 1`` degrees of
    freedom, so ``P(sigma <= sigma_u) = 1 - alpha`` (Webber 2010, eq. 5.3).

    Examples
    --------
    >>> import irmodels as irm
    >>> round(irm.design.sigma_upper(0.1, 10), 5)
    0.16452
    >>> round(irm.design.sigma_upper(0.1, 10, level=0.99), 5)
    0.20762
    """
    sigma_hat = check_number(sigma_hat, "sigma_hat", low=0)
    n = check_int(n, "n", low=2)
    was_alpha = "alpha" in deprecated
    got = renamed(deprecated, "alpha", "level", level, 0.95, where="irm.design.sigma_upper")
    alpha = (check_probability(got, "alpha") if was_alpha
             else alpha_of_level(check_probability(level, "level")))
    return _upper_bound(sigma_hat, n, alpha)


def _upper_bound(sigma_hat: float, n: int, alpha: float) -> float:
    """:func:`sigma_upper` at the tail probability ``alpha`` (checked arguments)."""
    return float(sigma_hat * math.sqrt((n - 1) / stats.chi2.ppf(alpha, n - 1)))


@dataclass(frozen=True, repr=False, eq=False)
class TrialSizing(ResultDisplay):
    """Result of :func:`size_from_trial`.

    Attributes
    ----------
    table : DataFrame
        One row, columns :data:`SIZING_COLUMNS`: ``n_trial``, ``sigma_hat`` (trial SD),
        ``confidence``, ``sigma_upper`` (:func:`sigma_upper`), ``delta``, ``power``, ``alpha``,
        ``n_point`` / ``n_topics_point`` (real and whole topics needed if sigma were
        ``sigma_hat``), ``n_upper`` / ``n_topics_upper`` (the same at ``sigma_upper``: the
        recommended size), ``power_point_at_upper`` (the power ``n_topics_point`` topics would
        have if the true sigma were ``sigma_upper``).
    pairs : DataFrame or None
        The trial's per-pair ``a, b, diff, sd`` when the trial was a frame.
    """

    table: pd.DataFrame
    pairs: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def n_topics(self) -> int:
        """The recommended size: topics for the target power at ``sigma_upper``."""
        return int(self.table["n_topics_upper"].iloc[0])

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`."""
        return self.table.copy()

    def _display_title(self) -> str:
        r = self.table.iloc[0]
        return (f"Sizing from a trial of {int(r['n_trial'])} topics: sigma_hat="
                f"{r['sigma_hat']:.4g}, upper {100 * r['confidence']:g}% bound "
                f"{r['sigma_upper']:.4g}: {int(r['n_topics_upper'])} topics")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Sizing", self.table)]

    def __repr__(self) -> str:
        r = self.table.iloc[0]
        return (f"<TrialSizing n_trial={int(r['n_trial'])}, sigma_hat={r['sigma_hat']:.4g}, "
                f"sigma_upper={r['sigma_upper']:.4g}, n_topics={self.n_topics}>")


def size_from_trial(
    trial: Any,
    *,
    delta: float,
    power: float = 0.8,
    alpha: float = 0.05,
    level: float = 0.95,
    n: int | None = None,
    pair: tuple[str, str] | None = None,
    quantile: float = 0.5,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
    **deprecated: Any,
) -> TrialSizing:
    """Topics needed for a target power, sized on a trial's upper confidence bound of sigma.

    Parameters
    ----------
    trial : DataFrame or float
        A long frame of the trial (one score per topic and system), or the trial's SD of the
        per-topic differences (then give ``n``).
    delta : float
        The difference to detect (> 0).
    power : float
        Target power of the two-sided paired t-test (default 0.8).
    alpha : float
        Level of that test.
    level : float
        Confidence level of the upper bound on sigma (default 0.95; the table's ``confidence``
        column). ``confidence=`` is its old name (deprecated: a FutureWarning, for one release).
    n : int, optional
        Trial topics, when ``trial`` is a number.
    pair : (str, str), optional
        With a frame: the two systems whose differences give sigma (e.g. a baseline and the
        new system). By default the ``quantile`` of the SDs of all pairs.
    quantile : float
        With a frame and no ``pair``: the quantile of the pairs' SDs used as sigma (default
        0.5, the median pair; Webber's advice is a high quantile to be safe).
    topic, system, score : str
        Column names of the frame.

    Returns
    -------
    TrialSizing
        ``.table`` (columns :data:`SIZING_COLUMNS`), ``.n_topics`` (the recommended size).

    Raises
    ------
    DesignError
        Bad numbers, a number without ``n``, an unknown pair, or a sigma of 0.

    Notes
    -----
    ``sigma_upper = sigma_hat sqrt((n - 1) / chi2_{1 - confidence}(n - 1))`` and the topics
    from :func:`irmodels.power.paired_t` (exact noncentral t, two-sided) at ``sigma_hat`` and at
    ``sigma_upper`` (Webber 2010, section 5.3; Webber, Moffat & Zobel, CIKM 2008). A quantile
    of many pairs' SDs is itself a point estimate: the bound treats it as one pair's SD with
    ``n - 1`` degrees of freedom.

    Examples
    --------
    >>> import irmodels as irm
    >>> s = irm.design.size_from_trial(0.1, n=10, delta=0.05)
    >>> s
    <TrialSizing n_trial=10, sigma_hat=0.1, sigma_upper=0.1645, n_topics=87>
    >>> int(s.table["n_topics_point"].iloc[0])
    34
    >>> ap = irm.datasets.load("adhoc8", "AP")
    >>> trial = ap[ap["topic"].isin(ap["topic"].cat.categories[:15])]
    >>> irm.design.size_from_trial(trial, delta=0.05, quantile=0.9).n_topics > 50
    True
    """
    delta = check_number(delta, "delta", low=0, low_open=True)
    power = check_probability(power, "power")
    alpha = check_probability(alpha, "alpha")
    confidence = check_probability(
        renamed(deprecated, "confidence", "level", level, 0.95,
                where="irm.design.size_from_trial"), "level")
    pairs = None
    if isinstance(trial, pd.DataFrame):
        X, systems = _matrix(trial, "irm.design.size_from_trial",
                             {"topic": topic, "system": system, "score": score})
        n_trial = X.shape[0]
        pairs = pair_sd(trial, topic=topic, system=system, score=score)
        if pair is not None:
            a, b = pair
            for s in (a, b):
                if s not in systems:
                    raise DesignError(f"unknown system {s!r} in pair; the trial has "
                                      f"{len(systems)} systems, e.g. {systems[:5]}.")
            sigma_hat = float(np.std(X[:, systems.index(a)] - X[:, systems.index(b)], ddof=1))
        else:
            quantile = check_probability(quantile, "quantile", closed=True)
            sigma_hat = float(np.quantile(pairs["sd"].to_numpy(), quantile))
    else:
        if n is None:
            raise DesignError("a trial given as a number (its sigma) needs n, the trial's "
                              "number of topics: size_from_trial(0.1, n=10, delta=0.05).")
        sigma_hat = check_number(trial, "trial (sigma)", low=0)
        n_trial = check_int(n, "n", low=2)
    if sigma_hat <= 0:
        raise DesignError(f"the trial's sigma is {sigma_hat}: the differences are constant, "
                          "so any number of topics detects any difference; nothing to size.")
    su = _upper_bound(sigma_hat, n_trial, 1 - confidence)
    point = paired_t(delta=delta, sigma=sigma_hat, power=power, alpha=alpha)
    upper = paired_t(delta=delta, sigma=su, power=power, alpha=alpha)
    p_at = paired_t(n=point.n_topics, delta=delta, sigma=su, alpha=alpha).power
    table = pd.DataFrame([{
        "n_trial": int(n_trial), "sigma_hat": sigma_hat, "confidence": confidence,
        "sigma_upper": su, "delta": delta, "power": power, "alpha": alpha,
        "n_point": point.n, "n_topics_point": point.n_topics, "n_upper": upper.n,
        "n_topics_upper": upper.n_topics, "power_point_at_upper": p_at}],
        columns=list(SIZING_COLUMNS))
    return TrialSizing(table=table, pairs=pairs)


# ------------------------------------------------------------------------- common sigma
@dataclass(frozen=True, repr=False, eq=False)
class CommonSigmaTest(ResultDisplay):
    """Result of :func:`common_sigma_test`.

    Attributes
    ----------
    statistic : float
        Observed SD (divisor ``P - 1``) of the ``P`` pairs' sample SDs.
    p_value : float
        Share of resamples whose statistic is >= the observed one.
    pairs : DataFrame
        ``a, b, diff, sd`` of the pairs tested.
    pooled_sd : float
        SD of the pooled centred differences (the common sigma under H0, divisor ``P n``).
    null : ndarray
        The statistic on each resample.
    n_topics, n_resamples, seed
    """

    statistic: float
    p_value: float
    pairs: pd.DataFrame = field(repr=False)
    pooled_sd: float
    null: np.ndarray = field(repr=False)
    n_topics: int
    n_resamples: int
    seed: Any

    def to_frame(self) -> pd.DataFrame:
        """The test as a one-row table."""
        return pd.DataFrame([{"pairs": len(self.pairs), "topics": self.n_topics,
                              "statistic": self.statistic, "null_mean": float(self.null.mean()),
                              "pooled_sd": self.pooled_sd, "p_value": self.p_value,
                              "resamples": self.n_resamples}])

    def _display_title(self) -> str:
        return (f"Common sigma of score differences: {len(self.pairs)} pairs, "
                f"{self.n_topics} topics, p={self.p_value:.4g}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Test", self.to_frame())]

    def __repr__(self) -> str:
        return (f"<CommonSigmaTest pairs={len(self.pairs)}, statistic={self.statistic:.4g}, "
                f"p_value={self.p_value:.4g}>")

    def plot(self, *, ax: Any = None) -> Figure:
        """Histogram of the resampled statistic with the observed one marked.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there; by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """
        fig, (ax,) = figure_axes(ax, figsize=(5.0, 3.2), what="CommonSigmaTest.plot")
        ax.hist(self.null, bins=30, color="0.7")
        ax.axvline(self.statistic, color="C3", lw=1.2, label="observed")
        ax.set_xlabel("SD of the pairs' SDs")
        ax.set_ylabel("resamples")
        ax.legend(fontsize=8)
        ax.set_title(f"common sigma: p = {self.p_value:.3g}", fontsize=9)
        return fig


def common_sigma_test(
    data: Any,
    *,
    pairs: Any = None,
    n_resamples: int = 1000,
    seed: int = 0,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> CommonSigmaTest:
    """Do the system pairs share one SD of their per-topic score differences?

    Parameters
    ----------
    data : DataFrame
        Long frame, one score per (topic, system).
    pairs : DataFrame or sequence of (a, b), optional
        The pairs to test (a frame with columns ``a, b``, e.g. :func:`baseline_pairs` renamed,
        or tuples); by default every pair of systems.
    n_resamples : int
        Resamples of the null distribution (default 1000).
    seed : int
        Seed of the resampling.
    topic, system, score : str
        Column names.

    Returns
    -------
    CommonSigmaTest
        ``.statistic``, ``.p_value``, ``.pairs``, ``.null``.

    Notes
    -----
    Each pair's differences over the ``n`` topics are centred on the pair's mean and pooled.
    The statistic is the SD across pairs of the pairs' sample SDs. Under the hypothesis of one
    common sigma the centred differences are interchangeable, so each resample draws, for every
    pair, ``n`` values with replacement from the pool and recomputes the statistic; the p-value
    is the share of resamples at least as large as the observed one (Webber 2010, Algorithm
    5.1, as described in docs/design.md). The resampling treats the pairs as independent;
    pairs that share a system are correlated, which widens the observed spread of SDs only
    through genuine differences in sigma, not through the correlation of their means.

    Examples
    --------
    >>> import irmodels as irm
    >>> ap = irm.datasets.load("adhoc8", "AP")
    >>> top = ap.groupby("system", observed=True)["score"].mean().nlargest(8).index
    >>> r = irm.design.common_sigma_test(ap[ap["system"].isin(top)], n_resamples=200, seed=1)
    >>> len(r.pairs), r.p_value < 0.05
    (28, True)
    """
    seed = check_seed(seed)
    n_resamples = check_int(n_resamples, "n_resamples", low=1)
    X, systems = _matrix(data, "irm.design.common_sigma_test",
                         {"topic": topic, "system": system, "score": score})
    if pairs is None:
        i, j = np.triu_indices(len(systems), k=1)
    else:
        if isinstance(pairs, pd.DataFrame):
            cols = ("a", "b") if {"a", "b"} <= set(pairs.columns) else ("baseline", "better")
            plist = list(zip(pairs[cols[0]], pairs[cols[1]], strict=True))
        else:
            plist = [tuple(p) for p in pairs]
        pos = {s: k for k, s in enumerate(systems)}
        bad = [s for p in plist for s in p if s not in pos]
        if bad:
            raise DesignError(f"unknown system {bad[0]!r} in pairs; the data have "
                              f"{len(systems)} systems, e.g. {systems[:5]}.")
        i = np.array([pos[a] for a, _ in plist], dtype=int)
        j = np.array([pos[b] for _, b in plist], dtype=int)
    if len(i) < 2:
        raise DesignError(f"the test needs at least 2 pairs; got {len(i)}.")
    n = X.shape[0]
    check_fits(int(n_resamples), "n_resamples", 8, what="the resampled statistics")
    D = X[:, i] - X[:, j]                                     # n x P
    sds = D.std(axis=0, ddof=1)
    obs = float(sds.std(ddof=1))
    pool = (D - D.mean(axis=0)).ravel()
    rng = np.random.default_rng(seed)
    P = D.shape[1]
    null = np.empty(n_resamples)
    chunk = max(1, 4_000_000 // (n * P))
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        draw = pool[rng.integers(0, pool.size, size=(k, n, P))]
        null[start:start + k] = draw.std(axis=1, ddof=1).std(axis=1, ddof=1)
    p = float(np.mean(null >= obs - 1e-12 * max(1.0, abs(obs))))
    names = np.asarray(systems, dtype=object)
    table = pd.DataFrame({"a": names[i], "b": names[j], "diff": D.mean(axis=0), "sd": sds})
    return CommonSigmaTest(statistic=obs, p_value=p, pairs=table,
                           pooled_sd=float(pool.std()), null=null, n_topics=n,
                           n_resamples=n_resamples, seed=seed)


# ------------------------------------------------------------------------- sequential
@dataclass(frozen=True, repr=False, eq=False)
class SequentialDesign(ResultDisplay):
    """Result of :func:`sequential`.

    Attributes
    ----------
    looks : DataFrame
        One row per look, columns :data:`LOOK_COLUMNS`: ``look`` (1, 2, ...), ``n`` (topics
        at that look), ``reject_at_look`` (share of simulations first significant there),
        ``cumulative_rate`` (share significant at this look or an earlier one) and ``se`` (its
        binomial standard error).
    rate : float
        Share of simulations that stopped significant by the last look: with ``delta=0`` the
        false-positive rate of the whole procedure (nominal: ``alpha``).
    fixed_rate : float
        Share significant at a single test with the maximum number of topics.
    delta, sigma, alpha, n_sim, seed
    """

    looks: pd.DataFrame
    rate: float
    fixed_rate: float
    delta: float
    sigma: float
    alpha: float
    n_sim: int
    seed: Any

    def to_frame(self) -> pd.DataFrame:
        """:attr:`looks`."""
        return self.looks.copy()

    def _display_title(self) -> str:
        return (f"Sequential design: {len(self.looks)} looks up to "
                f"{int(self.looks['n'].iloc[-1])} topics, delta={self.delta:g}: rejection "
                f"rate {self.rate:.4f} (one test at the end: {self.fixed_rate:.4f}, "
                f"alpha={self.alpha:g})")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Looks", self.looks)]

    def __repr__(self) -> str:
        return (f"<SequentialDesign looks={len(self.looks)}, delta={self.delta:g}, "
                f"rate={self.rate:.4f}, fixed_rate={self.fixed_rate:.4f}>")

    def plot(self, *, ax: Any = None) -> Figure:
        """Cumulative rejection rate against the topics seen, with ``alpha`` marked.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there; by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """
        fig, (ax,) = figure_axes(ax, figsize=(5.0, 3.2), what="SequentialDesign.plot")
        lk = self.looks
        ax.plot(lk["n"], lk["cumulative_rate"], marker="o", ms=3, lw=1)
        ax.fill_between(lk["n"], lk["cumulative_rate"] - 2 * lk["se"],
                        lk["cumulative_rate"] + 2 * lk["se"], alpha=0.2)
        ax.axhline(self.alpha, color="0.4", ls="--", lw=0.8, label=f"alpha = {self.alpha:g}")
        ax.set_xlabel("topics")
        ax.set_ylabel("significant so far")
        ax.legend(fontsize=8)
        ax.set_title(f"sequential testing, delta = {self.delta:g}", fontsize=9)
        return fig


def _t_reject(s1: np.ndarray, s2: np.ndarray, n: np.ndarray, crit: np.ndarray) -> np.ndarray:
    """Two-sided one-sample t rejections from running sums (``s1``, ``s2``) over ``n``."""
    mean = s1 / n
    var = np.maximum(s2 - n * mean**2, 0.0) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    return np.abs(np.nan_to_num(t, nan=0.0)) > crit


def sequential(
    *,
    start: int,
    step: int,
    max_topics: int,
    delta: float = 0.0,
    sigma: float = 1.0,
    alpha: float = 0.05,
    n_sim: int = 10_000,
    seed: int = 0,
    differences: Any = None,
) -> SequentialDesign:
    """Simulate "add topics until significant": its rejection rate at each look.

    Parameters
    ----------
    start : int
        Topics at the first test (>= 2).
    step : int
        Topics added before each further test (>= 1).
    max_topics : int
        The most topics (>= ``start``); the last look is at ``max_topics`` (a last step may be
        shorter).
    delta, sigma : float
        True mean and SD of the per-topic differences (normal); ``delta=0`` (default) gives the
        false-positive rate.
    alpha : float
        Level of each two-sided paired t-test.
    n_sim : int
        Simulated experiments (default 10,000).
    seed : int
        Seed.
    differences : array-like, optional
        Real per-topic differences to resample instead of the normal: centred on their mean,
        shifted by ``delta`` and drawn with replacement (``sigma`` is then ignored).

    Returns
    -------
    SequentialDesign
        ``.looks`` (columns :data:`LOOK_COLUMNS`), ``.rate``, ``.fixed_rate``.

    Notes
    -----
    Each simulated experiment draws ``max_topics`` differences; at ``n = start, start + step,
    ...`` (and ``max_topics``) a two-sided one-sample t-test of the first ``n`` is run at
    ``alpha``; the experiment stops at the first rejection. ``rate`` is the share that stopped
    significant; ``fixed_rate`` the share of a single test on all ``max_topics`` of the same
    draws (Webber 2010, section 5.5, Figures 5.8-5.10). The rates are Monte Carlo estimates
    (standard error ``sqrt(r (1 - r) / n_sim)``).

    Examples
    --------
    >>> import irmodels as irm
    >>> s = irm.design.sequential(start=10, step=5, max_topics=50, n_sim=4000, seed=1)
    >>> len(s.looks), 0.14 < s.rate < 0.2, abs(s.fixed_rate - 0.05) < 0.015
    (9, True, True)
    """
    start = check_int(start, "start", low=2)
    step = check_int(step, "step", low=1)
    max_topics = check_int(max_topics, "max_topics", low=start)
    delta = check_number(delta, "delta")
    sigma = check_number(sigma, "sigma", low=0, low_open=True)
    alpha = check_probability(alpha, "alpha")
    n_sim = check_int(n_sim, "n_sim", low=1)
    seed = check_seed(seed)
    pool = None
    if differences is not None:
        pool = np.asarray(differences, dtype=np.float64).ravel()
        if pool.size < 2 or not np.isfinite(pool).all():
            raise DesignError(f"differences needs at least 2 finite values; got {pool.size}.")
        pool = pool - pool.mean()
        if not np.any(pool):
            raise DesignError("the differences are constant; their spread is 0, nothing to "
                              "simulate.")
    check_fits(int(n_sim), "n_sim", 8 * 4 * min(max_topics, 2_000_000), what="the simulations")
    ns = np.arange(start, max_topics + 1, step)
    if ns[-1] != max_topics:
        ns = np.append(ns, max_topics)
    crit = stats.t.ppf(1 - alpha / 2, ns - 1)
    rng = np.random.default_rng(seed)
    first = np.full(n_sim, -1, dtype=np.int64)
    fixed = np.zeros(n_sim, dtype=bool)
    chunk = max(1, 2_000_000 // max_topics)
    for s0 in range(0, n_sim, chunk):
        k = min(chunk, n_sim - s0)
        if pool is None:
            x = delta + sigma * rng.standard_normal((k, max_topics))
        else:
            x = delta + pool[rng.integers(0, pool.size, size=(k, max_topics))]
        c1 = np.cumsum(x, axis=1)[:, ns - 1]
        c2 = np.cumsum(x * x, axis=1)[:, ns - 1]
        rej = _t_reject(c1, c2, ns.astype(float), crit)      # k x looks
        any_rej = rej.any(axis=1)
        first[s0:s0 + k] = np.where(any_rej, rej.argmax(axis=1), -1)
        fixed[s0:s0 + k] = rej[:, -1]
    counts = np.bincount(first[first >= 0], minlength=len(ns)) / n_sim
    cum = np.cumsum(counts)
    looks = pd.DataFrame({"look": np.arange(1, len(ns) + 1), "n": ns.astype(np.int64),
                          "reject_at_look": counts, "cumulative_rate": cum,
                          "se": np.sqrt(cum * (1 - cum) / n_sim)}, columns=list(LOOK_COLUMNS))
    return SequentialDesign(looks=looks, rate=float(cum[-1]), fixed_rate=float(fixed.mean()),
                            delta=delta, sigma=sigma if pool is None else float(pool.std()),
                            alpha=alpha, n_sim=n_sim, seed=seed)


# ------------------------------------------------------------------------- pair selection
def baseline_pairs(
    data: Any,
    *,
    delta: float,
    relative: bool = False,
    power: float = 0.8,
    alpha: float = 0.05,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> pd.DataFrame:
    """Baseline-versus-better system pairs and the topics each needs.

    Parameters
    ----------
    data : DataFrame
        Long frame, one score per (topic, system).
    delta : float
        The improvement that defines "better": absolute (``mean >= baseline + delta``), or with
        ``relative=True`` a fraction (``mean >= baseline * (1 + delta)``).
    relative : bool
        Read ``delta`` as a relative improvement.
    power, alpha : float
        Target power and level of the two-sided paired t-test for ``n_topics``.
    topic, system, score : str
        Column names.

    Returns
    -------
    DataFrame
        One row per system that has a better partner, in order of the baseline's mean (lowest
        first); columns :data:`BASELINE_COLUMNS`: ``baseline``, ``better`` (the system with
        the smallest mean that is at least ``delta`` better), their means, ``diff`` (better -
        baseline), ``sd`` (sample SD of the per-topic differences) and ``n_topics`` (topics the
        paired t-test needs to detect ``diff`` with that SD at ``power``; 2 when the
        difference is constant).

    Notes
    -----
    Every system is tried as a baseline; its partner is the weakest system that improves on it
    by ``delta``, so the pairs have true differences near ``delta`` and show the spread of
    sigma a real experiment at that effect size meets (Webber 2010, Table 5.3, as described
    in docs/design.md).

    Examples
    --------
    >>> import irmodels as irm
    >>> ap = irm.datasets.load("adhoc8", "AP")
    >>> p = irm.design.baseline_pairs(ap, delta=0.1, relative=True)
    >>> list(p.columns)[:3], bool((p["mean_better"] >= 1.1 * p["mean_baseline"]).all())
    (['baseline', 'better', 'mean_baseline'], True)
    """
    delta = check_number(delta, "delta", low=0, low_open=True)
    power = check_probability(power, "power")
    alpha = check_probability(alpha, "alpha")
    X, systems = _matrix(data, "irm.design.baseline_pairs",
                         {"topic": topic, "system": system, "score": score})
    means = X.mean(axis=0)
    order = np.argsort(means, kind="stable")
    rows = []
    for pos, b in enumerate(order):
        target = means[b] * (1 + delta) if relative else means[b] + delta
        cand = [c for c in order[pos + 1:] if means[c] >= target]
        if not cand:
            continue
        c = cand[0]
        d = X[:, c] - X[:, b]
        sd = float(d.std(ddof=1))
        diff = float(d.mean())
        if sd <= 1000 * np.finfo(float).eps * max(1.0, float(np.abs(d).max())):
            nt = 2
        else:
            try:
                nt = paired_t(delta=diff, sigma=sd, power=power, alpha=alpha).n_topics
            except DesignError:  # power already reached with 2 topics
                nt = 2
        rows.append({"baseline": systems[b], "better": systems[c],
                     "mean_baseline": float(means[b]), "mean_better": float(means[c]),
                     "diff": diff, "sd": sd, "n_topics": int(nt)})
    return pd.DataFrame(rows, columns=list(BASELINE_COLUMNS))

