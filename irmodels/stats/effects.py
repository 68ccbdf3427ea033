"""Effect sizes and power of ANOVA effects.

Small vectorised functions shared by :func:`irmodels.anova` and any other model that reports
per-term effect sizes. They take the numbers of an ANOVA table (sums of squares, degrees of
freedom, F statistics) and return arrays; nothing here fits a model or formats a table.

References
----------
Ferro, N. and Sanderson, M. (2019). Improving the accuracy of system performance estimation by
using shards. SIGIR 2019 (section 3: omega squared, rule of thumb 0.01 / 0.06 / 0.14).
Olejnik, S. and Algina, J. (2003). Generalized eta and omega squared statistics: measures of
effect size for some common research designs. Psychological Methods 8(4), 434-447.
Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed. (f squared,
noncentrality lambda = f2 * N).
Steiger, J. H. and Fouladi, R. T. (1997). Noncentrality interval estimation and the evaluation of
statistical models. In Harlow, Mulaik and Steiger (eds.), What If There Were No Significance
Tests?, 221-257 (confidence intervals by inverting the noncentral t).
Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power
approach for assessing the equivalence of average bioavailability. Journal of
Pharmacokinetics and Biopharmaceutics 15(6), 657-680 (TOST).
Sakai, T. (2014). Statistical reform in information retrieval? SIGIR Forum 48(1), 3-12, and
Sakai, T. (2018). Laboratory Experiments in Information Retrieval. Springer (effect sizes
standardised by the residual variance V_E of the topic x system ANOVA).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
from numpy.typing import ArrayLike

from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DataFormatError

__all__ = [
    "anova_power",
    "check_margin",
    "cohen_f2",
    "eta_squared",
    "noncentral_t_interval",
    "omega2_magnitude",
    "paired_effects",
    "partial_eta_squared",
    "partial_omega_squared",
    "rounding_noise",
]

#: A sum of squares at most ``N (ROUNDING eps max|y|)^2`` (``N`` observations) is rounding
#: noise and counts as exactly 0. Each effect (a deviation of a mean from other means) of an
#: observation is computed with an absolute error of a few ``eps max|y|`` (numpy sums
#: pairwise), so a term that is exactly 0 in exact arithmetic has a sum of squares of at most
#: ``N (c eps max|y|)^2`` with a small ``c``: at most 15 in simulations with up to 200 x 300
#: cells and offsets up to 100 times the spread. 1000 leaves a wide margin, and still keeps
#: every effect whose RMS size is above ``2.2e-13 max|y|``, far below the precision of any
#: score. Without it, identical systems get F = 7 from sums of squares of 1e-32 (R's ``anova``
#: prints such mean squares as 0 and warns of an "essentially perfect fit").
ROUNDING = 1000.0


def rounding_noise(ss: np.ndarray | float, y: np.ndarray, ymax: float | None = None
                   ) -> np.ndarray:
    """True where a sum of squares of ``y`` is rounding noise (see :data:`ROUNDING`);
    ``ymax``: ``max|y|`` when the caller has it already.

    >>> y = np.array([0.1, 0.2, 0.3, 0.4])
    >>> rounding_noise(np.array([1e-33, 1e-20, 0.05]), y).tolist()
    [True, False, False]
    """
    # compared as an RMS effect per observation, which cannot overflow for large scores
    if ymax is None:
        ymax = float(np.max(np.abs(y))) if y.size else 0.0
    scale = ROUNDING * np.finfo(float).eps * ymax
    return np.sqrt(np.asarray(ss, dtype=float) / max(y.size, 1)) <= scale


def _arr(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype="float64")


def eta_squared(ss: ArrayLike, ss_total: float) -> np.ndarray:
    """Eta squared: the share of the total sum of squares, ``SS_f / SS_total``.

    Parameters
    ----------
    ss : array_like
        Sums of squares of the effects.
    ss_total : float
        Total sum of squares (every effect plus the residual).

    Examples
    --------
    >>> eta_squared([30.0, 10.0], 50.0)
    array([0.6, 0.2])
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return _arr(ss) / float(ss_total)


def partial_eta_squared(ss: ArrayLike, ss_error: float) -> np.ndarray:
    """Partial eta squared, ``SS_f / (SS_f + SS_error)``.

    Examples
    --------
    >>> partial_eta_squared([30.0, 10.0], 10.0)
    array([0.75, 0.5 ])
    """
    ss = _arr(ss)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ss / (ss + float(ss_error))


def partial_omega_squared(f: ArrayLike, df: ArrayLike, n_obs: int) -> np.ndarray:
    """Partial omega squared, ``df_f (F_f - 1) / (df_f (F_f - 1) + N)``, unclipped.

    The estimate is negative when ``F < 1``; callers that report it clip at 0 and say so
    (:func:`irmodels.anova` does). Ferro & Sanderson (2019), after Olejnik & Algina (2003).

    Parameters
    ----------
    f : array_like
        F statistics of the effects.
    df : array_like
        Numerator degrees of freedom of the effects.
    n_obs : int
        Number of observations ``N``.

    Examples
    --------
    >>> partial_omega_squared([11.0, 0.5], [4, 2], 100).round(4)
    array([ 0.2857, -0.0101])
    """
    num = _arr(df) * (_arr(f) - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / (num + float(n_obs))


def cohen_f2(ss: ArrayLike, ss_error: float) -> np.ndarray:
    """Cohen's f squared of an effect (partial), ``SS_f / SS_error``.

    Examples
    --------
    >>> cohen_f2([30.0, 10.0], 10.0)
    array([3., 1.])
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return _arr(ss) / float(ss_error)


def anova_power(
    f2: ArrayLike, df: ArrayLike, df_resid: float, n_obs: int, alpha: float = 0.05
) -> np.ndarray:
    """Power of the F test of an effect: ``P(F'(df, df_resid, lambda) > F_crit)``.

    ``F'`` is the noncentral F distribution with noncentrality ``lambda = f2 * N`` (Cohen 1988)
    and ``F_crit`` the upper ``alpha`` quantile of the central F(df, df_resid). This is the
    power *if the observed effect were the true one* (post hoc power), as in Ferro & Sanderson.

    Parameters
    ----------
    f2 : array_like
        Cohen's f squared of the effects (:func:`cohen_f2`).
    df : array_like
        Numerator degrees of freedom.
    df_resid : float
        Residual degrees of freedom.
    n_obs : int
        Number of observations ``N``.
    alpha : float
        Significance level.

    Examples
    --------
    >>> anova_power([0.0, 0.05, 1.0], [4, 4, 4], 95, 100).round(4)
    array([0.05  , 0.3779, 1.    ])
    """
    # here, not at import: scipy.stats (~0.5 s) is off the `irmodels anova` start-up path,
    # which imports this module (models/_anova_table.py)
    from scipy import stats

    f2 = _arr(f2)
    df = _arr(df)
    crit = stats.f.isf(alpha, df, df_resid)
    lam = f2 * float(n_obs)
    out = np.where(lam > 0, stats.ncf.sf(crit, df, df_resid, np.where(lam > 0, lam, 1.0)), alpha)
    return np.where(np.isfinite(f2), out, np.nan)


def omega2_magnitude(omega2: float) -> str:
    """Ferro & Sanderson's rule of thumb: ``large`` (>= 0.14), ``medium`` (>= 0.06), ``small``
    (>= 0.01), else ``negligible``.

    >>> omega2_magnitude(0.2), omega2_magnitude(0.07), omega2_magnitude(0.02), omega2_magnitude(0)
    ('large', 'medium', 'small', 'negligible')
    """
    if omega2 >= 0.14:
        return "large"
    if omega2 >= 0.06:
        return "medium"
    if omega2 >= 0.01:
        return "small"
    return "negligible"


# ------------------------------------------------------------------ paired effect sizes
def check_level(level: float) -> float:
    """``level`` as a float strictly between 0 and 1, or :class:`~irmodels.ArgumentError`."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ArgumentError(
            f"level must be a number strictly between 0 and 1 (0.95 for a 95% interval); "
            f"got {level!r}.")
    return float(level)


def check_margin(margin: object, what: str = "equivalence") -> float:
    """The equivalence margin as a positive finite float, or :class:`DataFormatError`.

    >>> check_margin(0.01)
    0.01
    """
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) \
            or not np.isfinite(margin) or margin <= 0:
        raise DataFormatError(
            f"{what} is the equivalence margin: a positive number in score units (e.g. 0.01 "
            f"for one point of AP); got {margin!r}.")
    return float(margin)


def _nct_cdf(t: np.ndarray, df: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``scipy.stats.nct.cdf``, where it returns NaN deep in a tail (``F`` within 1e-11 of 1
    for df = 1) taken from the survival function, else 1 or 0 (below or above ``t``)."""
    # here, not at import: scipy.stats (~0.5 s) is off the `irmodels anova` start-up path,
    # which imports this module (models/_anova_table.py)
    from scipy import stats

    c = np.asarray(stats.nct.cdf(t, df, delta), dtype=float)
    bad = np.isnan(c)
    if bad.any():
        t, df, delta = np.broadcast_arrays(t, df, delta)
        c = c.copy()
        c[bad] = 1.0 - stats.nct.sf(t[bad], df[bad], delta[bad])
        still = np.isnan(c)
        c[still] = np.where(delta[still] < t[still], 1.0, 0.0)
    return c


#: Above this many roots of one equation, :func:`noncentral_t_interval` starts from an
#: interpolation of the roots on a grid of :data:`_GRID_POINTS` values of t (about half the
#: evaluations of the noncentral t distribution function per root).
_GRID_MIN = 1000
_GRID_POINTS = 400

#: :func:`noncentral_t_interval` remembers the bounds of its last :data:`_MEMO_SIZE` calls with
#: at least :data:`_MEMO_MIN` statistics (keyed by a hash of ``t`` and ``df``, the level and the
#: alternative): comparing several tests on the same runs (``irm.pairwise`` with each test and
#: adjustment) solves the same effect-size intervals once.
_MEMO_MIN = 256
_MEMO_SIZE = 8
_MEMO: OrderedDict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def _nct_roots(f, tt: np.ndarray, dd: np.ndarray, pr: np.ndarray, start: np.ndarray | None,
               half: np.ndarray | None) -> np.ndarray:
    """Roots ``delta`` of ``F(t; df, delta) = p`` (``t >= 0``): from ``[start - half, start +
    half]``, by default around the normal approximation ``t -/+ z sqrt(1 + t^2 / (2 df))``
    (within 3% of that spread of the root for df >= 2 and t <= 40); where the bracket misses
    the root it is widened until ``F - p`` changes sign (``F`` decreases in ``delta``)."""
    # here, not at import: scipy.stats (~0.5 s) is off the `irmodels anova` start-up path,
    # which imports this module (models/_anova_table.py)
    from scipy import stats
    from scipy.optimize import elementwise  # scipy.optimize: start-up, as scipy.stats

    tol = {"xatol": 1e-12, "xrtol": 4 * np.finfo(float).eps}
    spread = np.sqrt(1.0 + tt**2 / (2.0 * dd))
    guess = tt + np.where(pr > 0.5, -1.0, 1.0) * stats.norm.isf(np.minimum(pr, 1 - pr)) * spread
    if start is None:
        start, half = guess, 0.05 * spread + 1e-3
    res = elementwise.find_root(f, (start - half, start + half), args=(tt, dd, pr),
                                tolerances=tol)
    x = np.where(res.success, res.x, np.nan)
    miss = ~res.success
    if miss.any():
        tm, dm, pm = tt[miss], dd[miss], pr[miss]
        lo, hi = guess[miss] - spread[miss], guess[miss] + spread[miss]
        for _ in range(60):
            bad_lo, bad_hi = f(lo, tm, dm, pm) < 0, f(hi, tm, dm, pm) > 0
            if not (bad_lo.any() or bad_hi.any()):
                break
            width = hi - lo
            lo = np.where(bad_lo, lo - width, lo)
            hi = np.where(bad_hi, hi + width, hi)
        again = elementwise.find_root(f, (lo, hi), args=(tm, dm, pm), tolerances=tol)
        x[miss] = np.where(again.success, again.x, np.nan)
    return x


def noncentral_t_interval(
    t: ArrayLike, df: ArrayLike, level: float = 0.95, alternative: str = "two-sided"
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval of the noncentrality ``delta`` of a noncentral t from an observed ``t``.

    The bounds invert the noncentral t distribution function, which decreases in ``delta``
    (Steiger and Fouladi 1997): two-sided, ``delta_L`` solves ``F(t; df, delta_L) = (1 +
    level) / 2`` and ``delta_U`` solves ``F(t; df, delta_U) = (1 - level) / 2``;
    ``"greater"`` gives ``(delta_L, inf)`` with ``F(t; df, delta_L) = level`` and ``"less"``
    ``(-inf, delta_U)`` with ``F(t; df, delta_U) = 1 - level``. Each root is bracketed
    around the normal approximation ``t -/+ z sqrt(1 + t^2 / (2 df))`` (narrowly, then
    widened until the function changes sign where that bracket misses it; for more than
    1,000 roots of one equation, narrowly around a spline through its roots on a grid of t),
    and found with Chandrupatla's bracketing method
    (:func:`scipy.optimize.elementwise.find_root`) to an absolute tolerance of 1e-12 in
    ``delta``, vectorised over ``t``. A negative ``t`` is solved through
    ``F(t; df, delta) = 1 - F(-t; df, -delta)``. A non-finite ``t`` gives NaN bounds. The
    bounds of the last few calls with at least 256 statistics are remembered, so comparing
    several tests or adjustments on the same runs solves their intervals once.

    Parameters
    ----------
    t : array_like
        Observed t statistics.
    df : array_like
        Degrees of freedom (broadcast against ``t``).
    level : float
        Confidence level.
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    lower, upper : ndarray
        Bounds on ``delta``.

    Examples
    --------
    >>> lo, hi = noncentral_t_interval([2.0, 0.0], 19)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([-0.0829, -1.96], [4.0355, 1.96])
    """
    level = check_level(level)
    t, df = np.broadcast_arrays(_arr(t), _arr(df))
    t = np.atleast_1d(t).astype(float)
    df = np.atleast_1d(df).astype(float)
    ok = np.isfinite(t) & (df > 0)
    lower = np.full(t.shape, np.nan)
    upper = np.full(t.shape, np.nan)
    alpha = 1.0 - level
    if alternative == "two-sided":
        targets: tuple[tuple[float, np.ndarray], ...] = ((1.0 - alpha / 2, lower),
                                                          (alpha / 2, upper))
    elif alternative == "greater":
        targets = ((1.0 - alpha, lower),)
        upper[ok] = np.inf
    elif alternative == "less":
        targets = ((alpha, upper),)
        lower[ok] = -np.inf
    else:
        raise ArgumentError(f"unknown alternative {alternative!r}"
                            f"{did_you_mean(alternative, ('two-sided', 'greater', 'less'))}; "
                            "choose one of 'two-sided', 'greater', 'less'.")
    if not ok.any():
        return lower, upper
    key = None
    if t.size >= _MEMO_MIN:
        key = (hashlib.blake2b(t.tobytes() + df.tobytes(), digest_size=16).digest(), t.shape,
               level, alternative)
        with _MEMO_LOCK:
            hit = _MEMO.get(key)
            if hit is not None:
                _MEMO.move_to_end(key)
                return hit[0].copy(), hit[1].copy()
    _solve_nct_bounds(t[ok], df[ok], ok, targets)
    if key is not None:
        with _MEMO_LOCK:
            _MEMO[key] = (lower.copy(), upper.copy())
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
    return lower, upper


def _solve_nct_bounds(tt: np.ndarray, dd: np.ndarray, ok: np.ndarray,
                      targets: tuple[tuple[float, np.ndarray], ...]) -> None:
    """Write the bounds solving ``F(t; df, delta) = prob`` into ``out[ok]`` for each ``(prob,
    out)`` of ``targets`` (``tt``, ``dd``: the finite t and their df)."""

    def f(delta: np.ndarray, tq: np.ndarray, dfq: np.ndarray, prob: np.ndarray) -> np.ndarray:
        return _nct_cdf(tq, dfq, delta) - prob

    # F(t; df, delta) = 1 - F(-t; df, -delta): a negative t is solved as -t (the noncentral
    # t's distribution function is reliable there; it can return NaN far in the left tail)
    neg = tt < 0
    tt = np.abs(tt)
    solved: list[tuple[np.ndarray, np.ndarray]] = []
    # the roots found from the default brackets, of every bound and side, go to one call of
    # the elementwise solver (each root's iterations are its own: the same roots, one call's
    # overhead)
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for prob, out in targets:
        pr = np.where(neg, 1.0 - prob, prob)
        x = np.empty(tt.shape)
        for side in (neg, ~neg):  # one probability per group
            if not side.any():
                continue
            ts, ds, ps = tt[side], dd[side], pr[side]
            if ts.size > _GRID_MIN and (ds == ds[0]).all():
                # many roots of one equation: solve it on a grid of t, interpolate the bound
                # as a starting point, then solve each root from a bracket 1e-6 wide
                from scipy.interpolate import CubicSpline

                grid = np.linspace(0.0, float(ts.max()) * (1 + 1e-9) + 1e-9, _GRID_POINTS)
                at_grid = _nct_roots(f, grid, np.full(grid.shape, ds[0]),
                                     np.full(grid.shape, ps[0]), None, None)
                if np.isfinite(at_grid).all():
                    start = CubicSpline(grid, at_grid)(ts)
                    x[side] = _nct_roots(f, ts, ds, ps, start, 1e-6 * (1.0 + np.abs(start)))
                    continue
            pending.append((x, side, ts, ds, ps))
        solved.append((out, x))
    if pending:
        roots = _nct_roots(f, np.concatenate([p[2] for p in pending]),
                           np.concatenate([p[3] for p in pending]),
                           np.concatenate([p[4] for p in pending]), None, None)
        at = 0
        for x, side, ts, _, _ in pending:
            x[side] = roots[at:at + ts.size]
            at += ts.size
    for out, x in solved:
        out[ok] = np.where(neg, -x, x)


def paired_effects(
    D: np.ndarray,
    *,
    level: float = 0.95,
    alternative: str = "two-sided",
    equivalence: float | None = None,
    ms_error: float | None = None,
    df_error: float | None = None,
    constant: np.ndarray | None = None,
    zero: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Effect sizes with intervals, and the equivalence test, of every column of ``D``.

    ``D`` is the T x P matrix of per-topic differences of P pairs. With ``dbar`` the mean of a
    column and ``s`` its SD (n - 1):

    - ``dz = dbar / s`` (Cohen's d_z), its interval the noncentral t interval of
      ``t = dz sqrt(T)`` (T - 1 df) divided by ``sqrt(T)`` (:func:`noncentral_t_interval`).
    - ``es = dbar / sqrt(ms_error)`` (Sakai's effect size, ``ms_error`` the residual variance
      V_E of the two-way topic x system ANOVA over all systems, ``df_error`` its df). Under
      that model ``dbar / sqrt(2 V_E / T)`` is noncentral t with ``df_error`` df and
      noncentrality ``ES sqrt(T / 2)``, so its interval is the noncentral t interval of
      ``es sqrt(T / 2)`` divided by ``sqrt(T / 2)``. NaN without ``ms_error > 0``.
    - ``p_equiv`` (with ``equivalence = m``): the two one-sided tests (Schuirmann 1987),
      ``max(P(T_{T-1} >= (dbar + m) / se), P(T_{T-1} <= (dbar - m) / se))``, ``se = s / sqrt(T)``.

    ``constant`` / ``zero`` flag columns whose differences are essentially constant (and 0):
    their ``dz`` is ``+/-inf`` (NaN when zero) with NaN bounds, and ``p_equiv`` is 0 when
    ``|dbar| < m``, else 1.

    Returns
    -------
    dict
        ``dz, dz_lower, dz_upper, es, es_lower, es_upper`` and ``p_equiv`` (NaN without a margin).

    Examples
    --------
    >>> D = np.array([[0.1, -0.2], [0.3, 0.1], [0.2, 0.0], [0.0, -0.1]])
    >>> r = paired_effects(D, equivalence=0.3)
    >>> r["dz"].round(4).tolist(), r["dz_lower"].round(4).tolist(), r["p_equiv"].round(4).tolist()
    ([1.1619, -0.3873], [-0.2015, -1.3832], [0.0514, 0.0152])
    """
    # here, not at import: scipy.stats (~0.5 s) is off the `irmodels anova` start-up path,
    # which imports this module (models/_anova_table.py)
    from scipy import stats

    D = np.asarray(D, dtype=float)
    T, P = D.shape
    dbar = D.mean(axis=0)
    sd = D.std(axis=0, ddof=1)
    if constant is None:
        constant = sd == 0
    if zero is None:
        zero = constant & (dbar == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(constant, np.where(zero, np.nan, np.where(dbar > 0, np.inf, -np.inf)),
                      dbar / sd)
    root_t = np.sqrt(T)
    t_dz = np.where(np.isfinite(dz), dz * root_t, np.nan)
    # Sakai's ES needs the residual variance of the ANOVA and its df
    df_e = float(df_error) if df_error is not None and df_error > 0 else 0.0
    mse = float(ms_error) if ms_error is not None and ms_error > 0 and df_e > 0 else 0.0
    es = dbar / np.sqrt(mse) if mse > 0 else np.full(P, np.nan)
    root_h = np.sqrt(T / 2.0)
    if mse > 0 and 2 * P <= _GRID_MIN:
        # both intervals from one call (each root is solved on its own, and at this size
        # neither takes the grid path): the same bounds as two calls
        lo2, hi2 = noncentral_t_interval(
            np.concatenate([t_dz, es * root_h]),
            np.concatenate([np.full(P, T - 1.0), np.full(P, df_e)]), level, alternative)
        lo, hi, elo, ehi = lo2[:P], hi2[:P], lo2[P:], hi2[P:]
    else:
        lo, hi = noncentral_t_interval(t_dz, T - 1, level, alternative)
        if mse > 0:
            elo, ehi = noncentral_t_interval(es * root_h, df_e, level, alternative)
    out = {"dz": dz, "dz_lower": lo / root_t, "dz_upper": hi / root_t}
    if mse > 0:
        out.update(es=es, es_lower=elo / root_h, es_upper=ehi / root_h)
    else:
        out.update(es=np.full(P, np.nan), es_lower=np.full(P, np.nan),
                   es_upper=np.full(P, np.nan))
    if equivalence is None:
        out["p_equiv"] = np.full(P, np.nan)
    else:
        m = float(equivalence)
        se = sd / root_t
        with np.errstate(divide="ignore", invalid="ignore"):
            p_low = stats.t.sf((dbar + m) / se, T - 1)
            p_high = stats.t.cdf((dbar - m) / se, T - 1)
        p = np.maximum(p_low, p_high)
        out["p_equiv"] = np.where(constant, np.where(np.abs(dbar) < m, 0.0, 1.0), p)
    return out
