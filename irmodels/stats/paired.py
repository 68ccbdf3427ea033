"""Paired tests of every pair of systems at once: the paired and Welch t tests, the Wilcoxon
signed-rank test and the sign test on the T x P matrix of per-topic differences, with R's rule
for essentially constant data.

Each kernel takes the differences ``D`` (topics x pairs) and returns a dict of arrays, one
entry per pair: ``statistic``, ``p`` (and ``ci_lower``, ``ci_upper`` for the t tests), ``n``.
:func:`irmodels.pairwise` is the user's entry.

References: docs/methods.md: "Power and topic-set size"; R's ``t.test``, ``wilcox.test`` and
``binom.test``; Smucker, Allan & Carterette, CIKM 2007.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from irmodels.errors import DataFormatError, DataQualityWarning

__all__ = ["ESSENTIALLY_CONSTANT", "SAFE_RANGE", "degenerate", "degenerate_t", "ms_error",
           "p_from_t", "paired_t_test", "resolve_pairs", "sign_test", "t_interval", "unit_scale",
           "warn_constant", "welch_t_test", "wilcoxon_test"]


def resolve_pairs(
    systems: list[str], pairs: Sequence[tuple[str, str]] | None
) -> tuple[np.ndarray, np.ndarray]:
    n = len(systems)
    if pairs is None:
        ia, ib = np.triu_indices(n, k=1)
        return ia.astype(np.int64), ib.astype(np.int64)
    index = {s: i for i, s in enumerate(systems)}
    ia_l, ib_l = [], []
    seen: dict[frozenset, tuple[str, str]] = {}
    for pair in pairs:
        if isinstance(pair, str) or len(pair) != 2:
            raise DataFormatError(
                f"each pair must be a tuple (a, b) of two system names; got {pair!r}."
            )
        a, b = str(pair[0]), str(pair[1])
        unknown = [s for s in (a, b) if s not in index]
        if unknown:
            shown = ", ".join(systems[:8]) + (", ..." if n > 8 else "")
            raise DataFormatError(
                f"unknown system(s) {unknown} in pairs; the frame has {n} systems ({shown}). "
                "Check the names (they are compared as strings)."
            )
        if a == b:
            raise DataFormatError(f"pair ({a!r}, {b!r}) compares a system with itself.")
        key = frozenset((index[a], index[b]))
        if key in seen:
            first = seen[key]
            raise DataFormatError(
                f"pairs lists the pair ({a!r}, {b!r}) twice (as {first!r} and ({a!r}, {b!r})): "
                "it would be tested twice and counted twice in the multiplicity adjustment's "
                "family. List each pair once.")
        seen[key] = (a, b)
        ia_l.append(index[a])
        ib_l.append(index[b])
    if not ia_l:
        raise DataFormatError("pairs is empty; pass None for all pairs or a list of (a, b).")
    return np.asarray(ia_l, dtype=np.int64), np.asarray(ib_l, dtype=np.int64)



def p_from_t(t: np.ndarray, df: np.ndarray | float, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return 2.0 * stats.t.sf(np.abs(t), df)
    if alternative == "greater":
        return stats.t.sf(t, df)
    return stats.t.cdf(t, df)


def t_interval(est, se, df, alternative, alpha):
    if alternative == "two-sided":
        q = stats.t.ppf(1 - alpha / 2, df)
        return est - q * se, est + q * se
    q = stats.t.ppf(1 - alpha, df)
    if alternative == "greater":
        return est - q * se, np.full_like(est, np.inf)
    return np.full_like(est, -np.inf), est + q * se


#: R's ``t.test`` stops with "data are essentially constant" when the standard error is below
#: ``10 eps`` times the largest |mean| (of the differences for the paired test).
ESSENTIALLY_CONSTANT = 10 * np.finfo(float).eps


def degenerate(se: np.ndarray, mean: np.ndarray, est: np.ndarray, scale: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(essentially constant, zero shift) flags per pair.

    Essentially constant is R's test ``se < 10 eps |mean|`` (``mean`` the mean difference for
    the paired test, the larger |mean| of the two systems for Welch), or ``se = 0``; the shift
    ``est`` counts as 0 when it is within ``10 eps`` of the systems' larger |mean| ``scale``
    (0.3 against 0.1 + 0.2 differ by 5.6e-17, rounding).
    """
    const = (se < ESSENTIALLY_CONSTANT * np.abs(mean)) | (se == 0)
    zero = const & (np.abs(est) <= ESSENTIALLY_CONSTANT * scale)
    return const, zero


def degenerate_t(res: dict[str, np.ndarray], est: np.ndarray, const: np.ndarray,
                  zero: np.ndarray, alternative: str, df: np.ndarray | float) -> None:
    """t = +/-inf (p 0 or 1) for a constant non-zero shift, NaN for a zero one, in place."""
    if not const.any():
        return
    t = np.where(const, np.where(zero, np.nan, np.where(est > 0, np.inf, -np.inf)),
                 res["statistic"])
    res["statistic"] = t
    res["p"] = np.where(const, p_from_t(t, df, alternative), res["p"])
    # the interval collapses to the shift (its infinite end stays); undefined for a zero shift
    lo, hi = res["ci_lower"], res["ci_upper"]
    res["ci_lower"] = np.where(zero, np.nan, np.where(const & np.isfinite(lo), est, lo))
    res["ci_upper"] = np.where(zero, np.nan, np.where(const & np.isfinite(hi), est, hi))
    res["constant"], res["zero"] = const, zero


def paired_t_test(D: np.ndarray, alternative: str, alpha: float, scale: np.ndarray | None = None
              ) -> dict[str, np.ndarray]:
    """Paired t of every column of ``D``; ``scale``: the larger |mean| of the two systems of
    each pair, the size of their rounding (without it only an exact 0 shift counts as 0)."""
    n = D.shape[0]
    if scale is None:
        scale = np.zeros(D.shape[1])
    dbar = D.mean(axis=0)
    se = D.std(axis=0, ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = dbar / se
    p = p_from_t(t, n - 1, alternative)
    lo, hi = t_interval(dbar, se, n - 1, alternative, alpha)
    res = {"statistic": t, "p": p, "ci_lower": lo, "ci_upper": hi, "n": np.full(D.shape[1], n)}
    const, zero = degenerate(se, dbar, dbar, scale)
    degenerate_t(res, dbar, const, zero, alternative, n - 1)
    return res


def welch_t_test(X: np.ndarray, ia: np.ndarray, ib: np.ndarray, alternative: str, alpha: float):
    n = X.shape[0]
    mean = X.mean(axis=0)
    var = X.var(axis=0, ddof=1)
    va, vb = var[ia], var[ib]
    est = mean[ia] - mean[ib]
    se = np.sqrt((va + vb) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (n - 1) * (va + vb) ** 2 / (va**2 + vb**2)
        t = est / se
    df = np.where(np.isfinite(df), df, 2 * n - 2)
    p = p_from_t(t, df, alternative)
    lo, hi = t_interval(est, se, df, alternative, alpha)
    res = {"statistic": t, "p": p, "ci_lower": lo, "ci_upper": hi, "n": np.full(len(ia), n)}
    scale = np.maximum(np.abs(mean[ia]), np.abs(mean[ib]))
    const, zero = degenerate(se, scale, est, scale)
    degenerate_t(res, est, const, zero, alternative, df)
    return res


_SIGNRANK_SF: dict[int, np.ndarray] = {}


def _signrank_sf(n: int) -> np.ndarray:
    """``sf[v] = P(V >= v)`` for the signed-rank statistic of ``n`` untied non-zero values."""
    if n not in _SIGNRANK_SF:
        top = n * (n + 1) // 2
        counts = np.zeros(top + 1)
        counts[0] = 1.0
        for k in range(1, n + 1):
            counts[k:] = counts[k:] + counts[:-k].copy()
        pmf = counts / 2.0**n
        _SIGNRANK_SF[n] = np.append(np.cumsum(pmf[::-1])[::-1], 0.0)
    return _SIGNRANK_SF[n]


def wilcoxon_test(D: np.ndarray, alternative: str) -> dict[str, np.ndarray]:
    T, P = D.shape
    absd = np.abs(D)
    nz = D != 0
    zeros = T - nz.sum(axis=0)
    n = T - zeros
    # average ranks of |d| with zeros included: the zeros take ranks 1..z, so the ranks of
    # the non-zero values among themselves are rank - z (R drops zeros before ranking)
    ranks = stats.rankdata(absd, axis=0) - zeros
    V = np.where(D > 0, ranks, 0.0).sum(axis=0)
    # tie groups among non-zero |d|
    s = np.sort(absd, axis=0)
    new = np.ones_like(s, dtype=bool)
    new[1:] = s[1:] != s[:-1]
    gid = np.cumsum(new, axis=0) - 1 + np.arange(P) * T
    sizes = np.bincount(gid.ravel(), weights=(s != 0).ravel(), minlength=P * T).reshape(P, T)
    tie_sum = (sizes**3 - sizes).sum(axis=1)
    ties = tie_sum > 0
    exact = (n < 50) & ~ties & (zeros == 0) & (n > 0)

    p = np.ones(P)
    mean = n * (n + 1) / 4.0
    sigma = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0 - tie_sum / 48.0)
    z = V - mean
    if alternative == "two-sided":
        corr = np.sign(z) * 0.5
    elif alternative == "greater":
        corr = np.full(P, 0.5)
    else:
        corr = np.full(P, -0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        zz = (z - corr) / sigma
    if alternative == "two-sided":
        pn = 2.0 * np.minimum(special.ndtr(zz), special.ndtr(-zz))
    elif alternative == "greater":
        pn = special.ndtr(-zz)
    else:
        pn = special.ndtr(zz)
    approx = (n > 0) & ~exact
    p[approx] = np.minimum(1.0, pn[approx])
    if exact.any():
        sf = _signrank_sf(T)  # exact implies no zeros, so n == T
        v = np.rint(V[exact]).astype(np.int64)
        upper = sf[v]  # P(V >= v)
        lower = 1.0 - sf[v + 1]  # P(V <= v)
        if alternative == "two-sided":
            pe = np.minimum(1.0, 2.0 * np.where(v > T * (T + 1) / 4.0, upper, lower))
        elif alternative == "greater":
            pe = upper
        else:
            pe = lower
        p[exact] = np.minimum(1.0, pe)
    return {"statistic": V, "p": p, "n": n, "exact": exact}


def sign_test(D: np.ndarray, alternative: str, *, ties: float = 0.0) -> dict[str, np.ndarray]:
    """The sign test of every column of differences ``D``: ``k`` positive among the ``n`` that
    are not ties. A tie is ``d == 0`` by default; ``ties=t`` counts ``|d| <= t`` as a tie
    (Urbano, Lima & Hanjalic 2019 use 0.01)."""
    if ties > 0:
        D = np.where(np.abs(D) <= ties, 0.0, D)
    k = (D > 0).sum(axis=0)
    n = (D != 0).sum(axis=0)
    upper = stats.binom.sf(k - 1, n, 0.5)  # P(K >= k)
    lower = stats.binom.cdf(k, n, 0.5)  # P(K <= k)
    if alternative == "two-sided":
        p = np.minimum(1.0, 2.0 * np.minimum(upper, lower))
    elif alternative == "greater":
        p = upper
    else:
        p = lower
    p = np.where(n == 0, 1.0, p)
    return {"statistic": k.astype(np.float64), "p": p, "n": n}


#: Scores whose largest magnitude is outside [2**-10, 2**100] are divided by a power of two
#: first (:func:`unit_scale`): their squares would overflow, or underflow, or the resampling
#: tests' absolute tie tolerance (1e-12) would swallow their differences.
SAFE_RANGE = (2.0**-10, 2.0**100)


def unit_scale(*arrays: np.ndarray) -> float:
    """The power of two that brings the largest finite |value| of ``arrays`` to [0.5, 1), or 1
    when it is within :data:`SAFE_RANGE` already (or all values are 0).

    Tests of mean differences are scale-invariant: dividing the scores by a power of two is
    exact in floating point, so statistics computed on ``X / unit_scale(X)`` are those of ``X``
    (the score-unit outputs multiplied back), where squares of scores near 1e-300 would
    underflow to 0 (every pair "significant") and near 1e300 overflow (none).

    >>> unit_scale(np.array([0.2, 0.9])), unit_scale(np.array([3e-300])) == 2.0**-994
    (1.0, True)
    """
    top = 0.0
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        finite = np.abs(a[np.isfinite(a)])
        if finite.size:
            top = max(top, float(finite.max()))
    if top == 0.0 or SAFE_RANGE[0] <= top <= SAFE_RANGE[1]:
        return 1.0
    return math.ldexp(1.0, math.frexp(top)[1])


def warn_constant(test: str, systems: Sequence[str], ia: np.ndarray, ib: np.ndarray,
                   const: np.ndarray, zero: np.ndarray) -> None:
    """Name the pairs whose t test is degenerate (R's t.test stops on them)."""
    if not const.any():
        return
    names = [f"{systems[a]} - {systems[b]}" for a, b in zip(ia[const], ib[const])]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    what = ("both systems' scores are essentially constant" if test == "t2" else
            "the per-topic differences are essentially constant")
    n_zero = int(zero.sum())
    outcome = []
    if test == "bootstrap":  # every resample draws the same mean: the smallest p, or 1
        if n_zero < len(names):
            outcome.append(f"{len(names) - n_zero} with a non-zero shift get the smallest "
                           "p-value, 1/(n_resamples + 1)")
        if n_zero:
            outcome.append(f"{n_zero} with no difference at all get p = 1")
        warnings.warn(
            f"{len(names)} pair(s) cannot be bootstrapped, {what} ({shown}): every resample "
            "of the topics (with 2 topics, the same topic drawn twice) gives the same mean, as "
            f"the paired t test would be +/-inf. Of these, {' and '.join(outcome)}. Check for "
            "duplicated or shifted runs, or use more topics.",
            DataQualityWarning, stacklevel=3)
        return
    if n_zero < len(names):
        outcome.append(f"{len(names) - n_zero} with a non-zero shift get t = +/-inf and "
                       "p = 0 (two-sided)")
    if n_zero:
        outcome.append(f"{n_zero} with no difference at all get t, p and interval NaN")
    warnings.warn(
        f"{len(names)} pair(s) cannot be t-tested, {what} ({shown}); R's t.test stops with "
        f"'data are essentially constant'. Of these, {' and '.join(outcome)}. Check for "
        "duplicated or shifted runs.",
        DataQualityWarning, stacklevel=3)


def ms_error(X: np.ndarray) -> float:
    """Residual mean square of the two-way model score ~ topic + system (no replication)."""
    T, R = X.shape
    resid = X - X.mean(axis=1, keepdims=True) - X.mean(axis=0, keepdims=True) + X.mean()
    return float((resid**2).sum() / ((T - 1) * (R - 1)))
