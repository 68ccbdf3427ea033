"""Power of the paired t-test and topic-set size design.

How many topics does a test collection need to detect a difference ``delta`` between two
systems whose per-topic score differences have standard deviation ``sigma``? This module
answers that (and the reverse questions) exactly, from the noncentral t distribution, and by
the large-sample normal approximation; it turns a collection's distribution of per-pair
``sigma`` into tables of required topics and detectable differences, gives the one-way ANOVA
and confidence-interval-width designs of Sakai (2016), and checks the exact formula against
rejection rates on resampled real topics.

References: docs/methods.md: "Power and topic-set size"; Webber, *Measurement in Information Retrieval Evaluation*
(PhD thesis, 2010), ch. 5; Sakai, "Topic set size design", Information Retrieval Journal 19
(2016); Nagata, *How to Design the Sample Size* (2003, in Japanese), as used by Sakai;
R's ``power.t.test(type = "paired", strict = TRUE)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from irmodels._display import ResultDisplay
from irmodels._validate import (
    check_fits,
    check_int,
    check_rng,
)
from irmodels.data._columns import user_frame
from irmodels.data.frame import check_finite_scores, require_columns, to_wide
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.inference.pairwise import unit_scale
from irmodels.stats.power import (
    alpha_arg,
    check_design,
    check_test_options,
    number_arg,
    paired_t_power,
    power_from_checked,
)

__all__ = [
    "PairedTPower",
    "paired_t",
    "paired_t_power",
    "pair_sd",
    "TopicSetDesign",
    "topics_table",
    "oneway_power",
    "oneway_topics",
    "ci_half_width",
    "ci_width_topics",
    "simulate_paired_t",
]

Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["exact", "normal"]



@dataclass(frozen=True)
class PairedTPower(ResultDisplay):
    """Result of :func:`paired_t`: the four quantities, one of them solved for.

    Attributes
    ----------
    n : float
        Number of topics; when solved for, the real solution of ``power(n) = target``.
    n_topics : int
        ``ceil(n)``: the whole number of topics that reaches the target power.
    delta, sigma, power, alpha : float
        True mean difference, SD of the per-topic differences, power, significance level.
    alternative, method, solved_for : str
    """

    n: float
    delta: float
    sigma: float
    power: float
    alpha: float
    alternative: str
    method: str
    solved_for: str

    @property
    def n_topics(self) -> int:
        """Whole number of topics: ``ceil(n)`` (guarded against rounding just above an integer)."""
        return int(math.ceil(self.n - 1e-9))

    def to_frame(self) -> pd.DataFrame:
        """One row: ``n, n_topics, delta, sigma, power, alpha``."""
        return pd.DataFrame([{"n": self.n, "n_topics": self.n_topics, "delta": self.delta,
                              "sigma": self.sigma, "power": self.power, "alpha": self.alpha}])

    def _display_title(self) -> str:
        return (
            f"Paired t-test power ({self.alternative}, {self.method}); solved for "
            f"{self.solved_for}"
        )

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Design", self.to_frame().iloc[0].rename("value").to_frame())]

    def __repr__(self) -> str:
        return (
            f"<PairedTPower n={self.n:.4g} (n_topics={self.n_topics}), delta={self.delta:.4g}, "
            f"sigma={self.sigma:.4g}, power={self.power:.4g}, alpha={self.alpha:g}, "
            f"{self.alternative}, {self.method}; solved for {self.solved_for}>"
        )


def paired_t(
    n: float | None = None,
    delta: float | None = None,
    sigma: float | None = None,
    power: float | None = None,
    *,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    method: Method = "exact",
) -> PairedTPower:
    """Solve the paired t-test power equation for the one quantity left None.

    Parameters
    ----------
    n : float, optional
        Number of topics (> 1).
    delta : float, optional
        True mean difference between the two systems. Its sign matters only for one-sided
        tests (``"less"`` expects a negative difference; solving for it returns a negative
        value).
    sigma : float, optional
        Standard deviation of the per-topic score differences (> 0).
    power : float, optional
        Probability of rejecting H0 (in ``(alpha, 1)`` for the two-sided exact test).
    alpha : float
        Significance level.
    alternative : {"two-sided", "greater", "less"}
    method : {"exact", "normal"}
        Noncentral t (as R's ``power.t.test(type = "paired", strict = TRUE)``) or the
        large-sample normal approximation (closed form).

    Returns
    -------
    PairedTPower
        With ``n`` the real-valued solution and ``n_topics = ceil(n)`` when solving for ``n``.

    Raises
    ------
    DesignError
        Not exactly one quantity None, values out of range, or no solution: a target power
        at or below ``alpha`` (which a zero difference already gives), a one-sided
        ``alternative`` with ``delta`` pointing the other way (its power stays below
        ``alpha``), or a target power already exceeded with 2 topics, the fewest the test
        can use (both methods).

    Notes
    -----
    Exact power: ``P(T > t_c) + P(T < -t_c)`` with ``T ~ t'(n - 1, sqrt(n) delta / sigma)``
    and ``t_c = t(1 - alpha/2; n - 1)``; one equation in one unknown, solved by Brent's
    method (``n`` in ``[2, 1e7]``, ``delta`` in ``sigma [1e-7, 1e7]``, ``sigma`` in
    ``delta [1e-7, 1e7]``, as R does). Normal: ``sqrt(n) |delta| / sigma = z(1 - alpha/2) +
    z(power)`` two-sided, ``sqrt(n) (+-delta) / sigma = z(1 - alpha) + z(power)`` one-sided
    (``+`` for ``"greater"``), solved in closed form. (docs/methods.md: "Power and topic-set size"; Webber 2010, ch. 5.)

    Examples
    --------
    >>> import irmodels as irm
    >>> r = irm.power.paired_t(delta=0.05, sigma=0.1, power=0.8)
    >>> round(r.n, 4), r.n_topics
    (33.3671, 34)
    >>> round(irm.power.paired_t(n=50, delta=0.05, sigma=0.1).power, 4)
    0.9339
    >>> round(irm.power.paired_t(n=50, sigma=0.1, power=0.8).delta, 5)
    0.04042
    >>> round(irm.power.paired_t(n=50, delta=0.05, power=0.8, method="normal").sigma, 4)
    0.1262
    """
    alpha = check_test_options(alpha, alternative, method)
    given = {"n": n, "delta": delta, "sigma": sigma, "power": power}
    missing = [k for k, v in given.items() if v is None]
    if len(missing) != 1:
        raise DesignError(
            f"leave exactly one of n, delta, sigma, power as None to solve for it; "
            f"{'none was' if not missing else ', '.join(missing) + ' were'} left None. "
            "Example: paired_t(delta=0.05, sigma=0.1, power=0.8) solves for n."
        )
    n, delta, sigma, power = check_design(n, delta, sigma, power)
    target = missing[0]
    if delta is not None and delta == 0 and target in ("n", "sigma"):
        raise DesignError("delta is 0: no number of topics or sigma gives power above alpha")
    one_tail = alpha if alternative != "two-sided" else alpha / 2
    floor = alpha if method == "exact" else one_tail  # power at a zero difference
    if power is not None and target != "power" and power <= floor:
        raise DesignError(
            f"a power of {power} is not above what a zero difference already gives ({floor:g}); "
            "ask for more power (0.8 is customary)."
        )
    kw = dict(alpha=alpha, alternative=alternative, method=method)
    sign = -1.0 if alternative == "less" else 1.0
    # the effect in the direction the test looks for: |delta| two-sided, +-delta one-sided
    effect = None if delta is None else abs(delta) if alternative == "two-sided" else sign * delta
    if effect is not None and effect < 0 and target in ("n", "sigma"):
        # a one-sided test of an effect pointing the other way rejects less often than alpha
        # however many topics: both methods (the normal formula would give a spurious root)
        raise DesignError(
            f"no {target} gives power {power}: alternative={alternative!r} looks for a "
            f"{'positive' if sign > 0 else 'negative'} difference but delta = {delta:g} points "
            f"the other way, so the power stays below alpha = {alpha:g}. Flip the sign of delta "
            f"or use alternative={'less' if sign > 0 else 'greater'!r}."
        )

    if target == "power":
        power = power_from_checked(n, delta, sigma, alpha, alternative, method)  # type: ignore[arg-type]
    elif method == "normal":
        z = stats.norm.ppf(1 - one_tail) + stats.norm.ppf(power)
        if target == "n":
            n = (z * sigma / effect) ** 2  # type: ignore[operator]
            if n < 2:  # as the exact method, whose search starts at n = 2 (as R's)
                raise DesignError(
                    f"the power is already above {power} at the smallest n (2); the paired "
                    "t-test needs at least 2 topics. Check the other quantities."
                )
        elif target == "delta":
            delta = sign * z * sigma / math.sqrt(n)  # type: ignore[operator, arg-type]
        else:
            sigma = math.sqrt(n) * effect / z  # type: ignore[arg-type, operator]
    else:
        def f(x: float) -> float:
            vals = dict(n=n, delta=delta, sigma=sigma)
            vals[target] = x if target != "delta" else sign * x
            return power_from_checked(vals["n"], vals["delta"], vals["sigma"], **kw) - power  # type: ignore[arg-type, operator]

        # power rises with n and |delta| and falls with sigma: expand a bracket geometrically
        if target == "n":
            lo, hi, step, limit = 2.0, 4.0, 2.0, 1e7
        elif target == "delta":
            lo, hi, step, limit = sigma * 1e-7, sigma, 2.0, sigma * 1e7  # type: ignore[operator, arg-type, assignment]
        else:
            lo, hi, step, limit = abs(delta) * 1e-7, abs(delta), 2.0, abs(delta) * 1e7  # type: ignore[arg-type, assignment, operator]
        if target == "sigma":
            while f(hi) > 0 and hi < limit:
                lo, hi = hi, hi * step
            f_lo, f_hi = f(lo), f(hi)
        else:
            if f(lo) > 0:
                raise DesignError(
                    f"the power is already above {power} at the smallest {target} ({lo:.3g})"
                    + ("; the paired t-test needs at least 2 topics" if target == "n" else "")
                    + ". Check the other quantities."
                )
            while f(hi) < 0 and hi < limit:
                lo, hi = hi, hi * step
            f_lo, f_hi = f(lo), f(hi)
        if not (f_lo * f_hi <= 0):
            raise DesignError(
                f"no {target} up to {limit:.3g} gives power {power}. "
                "Check the other quantities (is that power reachable?)."
            )
        root = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500)
        if target == "n":
            n = root
        elif target == "delta":
            delta = sign * root
        else:
            sigma = root
    return PairedTPower(
        n=float(n), delta=float(delta), sigma=float(sigma), power=float(power),  # type: ignore[arg-type, assignment, operator]
        alpha=alpha, alternative=alternative, method=method, solved_for=target,
    )


# ---------------------------------------------------------------------------- collections
def pair_sd(data: pd.DataFrame, *, topic: str = "topic", system: str = "system",
            score: str = "score") -> pd.DataFrame:
    """Standard deviation of the per-topic score differences for every pair of systems.

    Parameters
    ----------
    data : DataFrame
        Long frame with one score per (topic, system).
    topic, system, score : str
        The names of the topic, system and score columns of ``data`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    DataFrame
        One row per unordered pair (in system order), columns ``a``, ``b``, ``diff`` (mean of
        ``a - b``) and ``sd`` (sample SD of ``a - b``, divisor ``n - 1``; exactly 0 when it is
        within rounding of 0, at most ``1000 eps max|score|``: two systems that differ by a
        constant on every topic).

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.from_wide(pd.DataFrame({"x": [.1, .5, .3], "y": [.2, .4, .6], "z": [.3, .3, .3]}))
    >>> irm.power.pair_sd(f).round(4)
       a  b  diff   sd
    0  x  y  -0.1  0.2
    1  x  z   0.0  0.2
    2  y  z   0.1  0.2
    """
    data, _ = user_frame(data, topic=topic, system=system, score=score,
                         what="irm.power.pair_sd")
    require_columns(data, ["topic", "system", "score"])
    check_finite_scores(data)  # a NaN would read as a missing cell, an infinity give NaN SDs
    wide = to_wide(data)
    if wide.isna().to_numpy().any():
        raise DesignError(
            "every system needs a score on every topic to pair them; some are missing. "
            "Use irm.balance(...) to find the gaps and drop those topics or systems."
        )
    x = wide.to_numpy(dtype=float)
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise DesignError(f"need at least 2 topics and 2 systems; got {x.shape[0]} x {x.shape[1]}")
    # the SD of the differences themselves, one system against the later ones at a time (memory
    # topics x systems): through the covariances, var_a + var_b - 2 cov_ab cancels, and two
    # systems that differ by a constant got an SD of 5e-9 instead of 0
    unit = unit_scale(x)  # scores near 1e+-300: squares under/overflow; SDs scale back exactly
    x = x / unit
    k = x.shape[1]
    i, j = np.triu_indices(k, k=1)
    sd = np.empty(len(i))
    start = 0
    for a in range(k - 1):
        d = x[:, [a]] - x[:, a + 1:]
        sd[start:start + k - 1 - a] = d.std(axis=0, ddof=1)
        start += k - 1 - a
    # an SD within rounding of 0 (a constant difference computed in floating point) is 0
    sd[sd <= 1000 * np.finfo(float).eps * float(np.max(np.abs(x)))] = 0.0
    means = x.mean(axis=0)
    names = np.asarray(wide.columns, dtype=object)
    return pd.DataFrame({"a": names[i], "b": names[j], "diff": (means[i] - means[j]) * unit,
                         "sd": sd * unit})


@dataclass(frozen=True)
class TopicSetDesign(ResultDisplay):
    """Result of :func:`topics_table`.

    Attributes
    ----------
    pairs : DataFrame
        ``a, b, diff, sd`` for every system pair (see :func:`pair_sd`).
    sigmas : DataFrame
        Index ``quantile``; column ``sigma`` (that quantile of the per-pair SDs).
    required : DataFrame
        Columns ``quantile, sigma, delta, power, n, n_topics``: topics needed to detect
        ``delta`` with the given power (``n`` real, ``n_topics = ceil(n)``).
    detectable : DataFrame
        Columns ``quantile, sigma, power, n, delta``: the smallest true difference detected
        with that power at the collection's number of topics ``n``.
    n_topics : int
        Topics in the collection.
    """

    pairs: pd.DataFrame
    sigmas: pd.DataFrame
    required: pd.DataFrame
    detectable: pd.DataFrame
    n_topics: int
    alpha: float
    alternative: str
    method: str

    def to_frame(self) -> pd.DataFrame:
        """:attr:`required` (topics needed per quantile, delta and power), a copy."""
        return self.required.copy()

    def _display_title(self) -> str:
        return (
            f"Topic-set size from {len(self.pairs)} system pairs, {self.n_topics} topics "
            f"(paired t, {self.alternative}, alpha = {self.alpha:g}, {self.method})"
        )

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [
            ("SD of per-topic differences", self.sigmas),
            ("Topics required", self.required),
            ("Detectable difference", self.detectable),
        ]

    def __repr__(self) -> str:
        return f"<TopicSetDesign pairs={len(self.pairs)}, topics={self.n_topics}>"


def topics_table(
    data: pd.DataFrame,
    *,
    deltas: Sequence[float] = (0.01, 0.02, 0.05, 0.1),
    powers: Sequence[float] = (0.8,),
    quantiles: Sequence[float] = (0.5, 0.95),
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    method: Method = "exact",
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> TopicSetDesign:
    """Required topics and detectable differences from a collection's per-pair SDs.

    Parameters
    ----------
    data : DataFrame
        Long frame with one score per (topic, system), e.g. a TREC matrix.
    deltas : sequence of float
        True differences to detect.
    powers : sequence of float
        Target powers.
    quantiles : sequence of float
        Quantiles of the distribution of the per-pair SD over all system pairs: 0.5 is the
        median pair, 0.95 a hard pair.
    alpha, alternative, method
        As in :func:`paired_t`.
    topic, system, score : str
        The names of the topic, system and score columns of ``data`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    TopicSetDesign
        ``.required`` and ``.detectable`` DataFrames (columns in the class docstring).

    Raises
    ------
    DataFormatError
        A missing (NaN) or infinite score.
    DesignError
        A missing cell, a repeated (topic, system), or a per-pair SD of 0 at one of the
        ``quantiles`` (identical systems, constant scores): no topic-set size exists.

    Notes
    -----
    Webber (2010, ch. 5) and Sakai (2016) estimate ``sigma`` from an existing collection; the
    spread of the per-pair ``sigma`` shows how the answer depends on which pair is compared.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(1)
    >>> w = pd.DataFrame(rng.uniform(0, 1, (30, 5)), columns=list("abcde"))
    >>> t = irm.power.topics_table(irm.from_wide(w), deltas=[0.1], quantiles=[0.5])
    >>> t.required.round(3)
       quantile  sigma  delta  power       n  n_topics
    0       0.5    0.4    0.1    0.8  127.217       128
    """
    data, _ = user_frame(data, topic=topic, system=system, score=score,
                         what="irm.power.topics_table")
    pairs = pair_sd(data)
    n_topics = int(pd.Series(data["topic"]).nunique())
    qs = [float(q) for q in quantiles]
    if any(not 0 <= q <= 1 for q in qs):
        raise DesignError(f"quantiles must be in [0, 1]; got {list(quantiles)}")
    sig = np.quantile(pairs["sd"].to_numpy(), qs)
    if (sig == 0).any():
        # the user gave no sigma: say what in the data makes it 0 (paired_t would name sigma)
        q0 = qs[int(np.flatnonzero(sig == 0)[0])]
        flat = pairs[pairs["sd"] == 0]
        raise DesignError(
            f"the per-topic differences between systems have SD 0 at quantile {q0:g} "
            f"({len(flat)} of {len(pairs)} system pair(s) differ by the same amount on every "
            f"topic, e.g. {flat['a'].iloc[0]} and {flat['b'].iloc[0]}: identical systems or "
            "constant scores), so no topic-set size can be computed. Drop the duplicated "
            "systems, or check that the scores were computed."
        )
    sigmas = pd.DataFrame({"sigma": sig}, index=pd.Index(qs, name="quantile"))
    req, det = [], []
    for q, s in zip(qs, sig):
        for p in powers:
            for d in deltas:
                r = paired_t(delta=d, sigma=s, power=p, alpha=alpha, alternative=alternative,
                             method=method)
                req.append({"quantile": q, "sigma": s, "delta": float(d), "power": float(p),
                            "n": r.n, "n_topics": r.n_topics})
            r = paired_t(n=n_topics, sigma=s, power=p, alpha=alpha, alternative=alternative,
                         method=method)
            det.append({"quantile": q, "sigma": s, "power": float(p), "n": n_topics,
                        "delta": r.delta})
    required = pd.DataFrame(req, columns=["quantile", "sigma", "delta", "power", "n", "n_topics"])
    required["n_topics"] = required["n_topics"].astype("int64")
    detectable = pd.DataFrame(det, columns=["quantile", "sigma", "power", "n", "delta"])
    detectable["n"] = detectable["n"].astype("int64")
    return TopicSetDesign(pairs=pairs, sigmas=sigmas, required=required, detectable=detectable,
                          n_topics=n_topics, alpha=alpha, alternative=alternative, method=method)


# ---------------------------------------------------------------------------- Sakai designs
def oneway_power(m: int, n: int, min_range: float, sigma: float, *, alpha: float = 0.05) -> float:
    """Power of the one-way ANOVA F test over ``m`` systems with ``n`` topics each.

    The least favourable configuration with range ``min_range`` (two systems ``min_range``
    apart, the rest at the grand mean) has noncentrality ``lambda = n min_range^2 /
    (2 sigma^2)``; ``F ~ F'(m - 1, m (n - 1), lambda)`` and the power is
    ``P(F > F(1 - alpha; m - 1, m (n - 1)))`` (Sakai 2016, the ANOVA-based design).

    >>> round(oneway_power(10, 50, 0.1, 0.2), 4)
    0.3471
    """
    alpha = alpha_arg(alpha)
    m_, n_ = number_arg(m, "m"), number_arg(n, "n")
    if m_ < 2 or n_ < 2:
        raise DesignError(f"need m >= 2 systems and n >= 2 topics; got m={m}, n={n}")
    if number_arg(sigma, "sigma") <= 0 or number_arg(min_range, "min_range") <= 0:
        raise DesignError("sigma and min_range must be positive")
    df1, df2 = m_ - 1, m_ * (n_ - 1)
    lam = n_ * min_range**2 / (2 * sigma**2)
    return float(stats.ncf.sf(stats.f.ppf(1 - alpha, df1, df2), df1, df2, lam))


def oneway_topics(
    m: int, min_range: float, sigma: float, *, power: float = 0.8, alpha: float = 0.05,
    max_topics: int = 100_000,
) -> int:
    """Smallest number of topics for which the one-way ANOVA reaches ``power`` (Sakai 2016).

    Parameters
    ----------
    m : int
        Number of systems compared.
    min_range : float
        Minimum detectable range: the smallest difference between the best and the worst
        system that should be detected (``minD`` in Sakai 2016).
    sigma : float
        Within-system standard deviation of the scores; Sakai estimates ``sigma^2`` by the
        residual variance of a topic x system ANOVA on an existing collection
        (``irm.anova("score ~ system + topic", data).ms_error``).
    power, alpha : float

    Returns
    -------
    int
        Smallest ``n`` with :func:`oneway_power` ``>= power``.

    >>> oneway_topics(10, 0.1, 0.2)
    127
    """
    alpha = alpha_arg(alpha)
    if not 0 < number_arg(power, "power") < 1:
        raise ArgumentError(f"power must be in (0, 1); got {power!r}")
    max_topics = check_int(max_topics, "max_topics", low=2)
    if oneway_power(m, max_topics, min_range, sigma, alpha=alpha) < power:
        raise DesignError(
            f"even {max_topics} topics do not reach power {power}; increase min_range or "
            "max_topics."
        )
    lo, hi = 2, 2
    while oneway_power(m, hi, min_range, sigma, alpha=alpha) < power:
        lo, hi = hi, min(hi * 2, max_topics)
    while lo < hi:  # power increases with n: bisection on integers
        mid = (lo + hi) // 2
        if oneway_power(m, mid, min_range, sigma, alpha=alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return int(lo)


def ci_half_width(n: int, sigma: float, *, alpha: float = 0.05) -> float:
    """Expected half-width of the ``1 - alpha`` paired-t confidence interval with ``n`` topics.

    ``E[W] = t(1 - alpha/2; n - 1) E[s] / sqrt(n)`` with ``E[s] = c4(n) sigma`` and
    ``c4(n) = sqrt(2 / (n - 1)) Gamma(n/2) / Gamma((n - 1)/2)`` (Sakai 2016, CI-based design,
    after Nagata 2003); ``sigma`` is the SD of the per-topic differences.

    >>> round(ci_half_width(50, 0.1), 5)
    0.02828
    """
    alpha = alpha_arg(alpha)
    if number_arg(n, "n") < 2:
        raise DesignError(f"n must be at least 2; got {n}")
    if number_arg(sigma, "sigma") <= 0:
        raise DesignError(f"sigma must be positive; got {sigma}")
    c4 = math.exp(
        0.5 * math.log(2 / (n - 1)) + special.gammaln(n / 2) - special.gammaln((n - 1) / 2)
    )
    return float(stats.t.ppf(1 - alpha / 2, n - 1) * c4 * sigma / math.sqrt(n))


def ci_width_topics(half_width: float, sigma: float, *, alpha: float = 0.05) -> int:
    """Smallest number of topics whose expected CI half-width is at most ``half_width``.

    Parameters
    ----------
    half_width : float
        Largest acceptable expected half-width ``W`` of the ``1 - alpha`` confidence interval
        of the mean difference between two systems (the full width is ``2 W``).
    sigma : float
        SD of the per-topic differences (e.g. a quantile of :func:`pair_sd`).
    alpha : float

    Returns
    -------
    int
        Smallest ``n >= 2`` with :func:`ci_half_width` ``<= half_width``; the search starts
        from the normal approximation ``(z(1 - alpha/2) sigma / W)^2`` (Sakai 2016).

    >>> ci_width_topics(0.02, 0.1)
    98
    """
    alpha = alpha_arg(alpha)
    if number_arg(half_width, "half_width") <= 0:
        raise DesignError(f"half_width must be positive; got {half_width}")
    if number_arg(sigma, "sigma") <= 0:
        raise DesignError(f"sigma must be positive; got {sigma}")
    ratio = float(stats.norm.ppf(1 - alpha / 2)) * sigma / half_width
    start = ratio * ratio  # (z sigma / W)^2, inf (no error) when W is tiny
    if not start < 1e9:
        raise DesignError(
            f"a half-width of {half_width:g} with sigma = {sigma:g} needs about {start:.3g} "
            "topics; ask for a wider interval."
        )
    n = max(2, int(math.ceil(start)))
    while n > 2 and ci_half_width(n - 1, sigma, alpha=alpha) <= half_width:
        n -= 1
    while ci_half_width(n, sigma, alpha=alpha) > half_width:
        n += 1
    return n


# ---------------------------------------------------------------------------- simulation
def simulate_paired_t(
    data: pd.DataFrame,
    a: str,
    b: str,
    n: int,
    *,
    deltas: Sequence[float] | None = None,
    n_trials: int = 2000,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    rng: np.random.Generator | int | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> pd.DataFrame:
    """Empirical power of the paired t-test on resampled real topics, next to the formulas.

    The per-topic differences ``a - b`` of the collection are centred and shifted to each true
    difference ``delta``; ``n`` topics are drawn with replacement ``n_trials`` times and a
    paired t-test is run on each draw. The population of the draws has SD ``sigma`` (the SD
    of the differences with divisor ``N``), which the formulas use.

    Parameters
    ----------
    data : DataFrame
        Long frame with systems ``a`` and ``b`` on the same topics.
    a, b : str
        The two systems.
    n : int
        Topics per simulated collection.
    deltas : sequence of float, optional
        True differences (default: the observed mean difference).
    n_trials : int
        Simulated collections per delta.
    alpha, alternative
        As in :func:`paired_t`.
    rng : Generator or int, optional
        Random generator or seed.
    topic, system, score : str
        The names of the topic, system and score columns of ``data`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    DataFrame
        One row per delta, columns ``delta, n, sigma, trials, rejections, rate, se`` (binomial
        standard error of ``rate``), ``power_exact``, ``power_normal``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> r = np.random.default_rng(0)
    >>> w = pd.DataFrame({"a": r.uniform(0, 1, 40), "b": r.uniform(0, 1, 40)})
    >>> s = irm.power.simulate_paired_t(irm.from_wide(w), "a", "b", 30, deltas=[0.1],
    ...                                 n_trials=500, rng=1)
    >>> s[["delta", "n", "trials"]]
       delta   n  trials
    0    0.1  30     500
    """
    alpha = check_test_options(alpha, alternative, "exact")
    n = check_int(n, "n", low=2)
    n_trials = check_int(n_trials, "n_trials", low=1)
    # the drawn topic indices and scores of every trial (n_trials x n, int64 and float64 x 2)
    check_fits(n, "n", 24, what="the topics of one trial")
    check_fits(n_trials, "n_trials", 24 * n, what=f"the trials' {n} topics each")
    gen = check_rng(rng, "rng")
    data, _ = user_frame(data, topic=topic, system=system, score=score,
                         what="irm.power.simulate_paired_t")
    wide = to_wide(data)
    for s in (a, b):
        if s not in wide.columns:
            raise DataFormatError(
                f"unknown system {s!r}; the data have {len(wide.columns)} systems, e.g. "
                f"{list(wide.columns[:5])}"
            )
    d = (wide[a] - wide[b]).to_numpy(dtype=float)
    if np.isnan(d).any():
        raise DesignError(f"systems {a!r} and {b!r} are not scored on the same topics")
    centred = d - d.mean()
    sigma = float(np.sqrt(np.mean(centred**2)))
    if sigma == 0:
        raise DesignError(f"the differences between {a!r} and {b!r} are constant; nothing to simulate")
    deltas = [float(d.mean())] if deltas is None else [float(x) for x in deltas]
    rows = []
    for delta in deltas:
        idx = gen.integers(0, len(d), size=(n_trials, n))
        x = centred[idx] + delta
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
        if alternative == "two-sided":
            reject = np.abs(t) > stats.t.ppf(1 - alpha / 2, n - 1)
        elif alternative == "greater":
            reject = t > stats.t.ppf(1 - alpha, n - 1)
        else:
            reject = t < -stats.t.ppf(1 - alpha, n - 1)
        k = int(reject.sum())
        rate = k / n_trials
        rows.append({
            "delta": delta, "n": int(n), "sigma": sigma, "trials": int(n_trials),
            "rejections": k, "rate": rate, "se": math.sqrt(rate * (1 - rate) / n_trials),
            "power_exact": power_from_checked(n, delta, sigma, alpha, alternative, "exact"),
            "power_normal": power_from_checked(n, delta, sigma, alpha, alternative, "normal"),
        })
    return pd.DataFrame(rows)
