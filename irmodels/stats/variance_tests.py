"""Tests of equal variances of two systems' scores over the same topics: the F test and
Levene's test (mean or median centred), vectorised over pairs. :mod:`irmodels.inference.variability`
(``irm.variability``) is the user's entry.

References: docs/methods.md; Levene (1960); Brown & Forsythe (1974).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["abs_dev_stats", "f_test", "levene_test", "pair_variance_tests"]


def f_test(va, vb, n, alternative="two-sided", alpha=0.05):
    """F test of equal variances ``va`` and ``vb`` (each of ``n`` scores): ``(F, p, lower,
    upper)``, the interval of the variance ratio at ``1 - alpha``."""
    df = n - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        F = va / vb
    if alternative == "two-sided":
        p = np.minimum(1.0, 2.0 * np.minimum(stats.f.cdf(F, df, df), stats.f.sf(F, df, df)))
        lo, hi = F / stats.f.ppf(1 - alpha / 2, df, df), F / stats.f.ppf(alpha / 2, df, df)
    elif alternative == "greater":
        p = stats.f.sf(F, df, df)
        lo, hi = F / stats.f.ppf(1 - alpha, df, df), np.full_like(np.asarray(F, float), np.inf)
    else:
        p = stats.f.cdf(F, df, df)
        lo, hi = np.zeros_like(np.asarray(F, float)), F / stats.f.ppf(alpha, df, df)
    return F, p, lo, hi


def abs_dev_stats(Y: np.ndarray, center: str) -> tuple[np.ndarray, np.ndarray]:
    """Per column: mean and sample variance of |y - center| (Levene's transformed data)."""
    c = Y.mean(axis=0) if center == "mean" else np.median(Y, axis=0)
    Zd = np.abs(Y - c)
    return Zd.mean(axis=0), Zd.var(axis=0, ddof=1)


def levene_test(ma, va, mb, vb, n):
    """Levene's W for two groups of n: one-way ANOVA F on the absolute deviations."""
    with np.errstate(divide="ignore", invalid="ignore"):
        W = n * (ma - mb) ** 2 / (va + vb)
    # absolute deviations constant within both groups make W = 0/0; rounding leaves a ratio
    # of two noise terms (e.g. 3.3 for the +-0.707 z-scores of two systems), so a spread
    # below 1e-10 of their size counts as none (rounding error is ~1e-16 of it)
    scale = 1e-10 * np.maximum(np.abs(ma), np.abs(mb))
    flat = (va + vb) <= scale**2
    W = np.where(flat, np.where(np.abs(ma - mb) <= scale, 0.0, np.inf), W)
    return W, stats.f.sf(W, 1, 2 * n - 2)


def pair_variance_tests(Y: np.ndarray, ia: np.ndarray, ib: np.ndarray, test: str
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(statistic, p) of the F or Levene (``levene_mean`` / ``levene_median``) test of each
    pair ``ia[j], ib[j]`` of columns of ``Y``."""
    n = Y.shape[0]
    if test == "f":
        var = Y.var(axis=0, ddof=1)
        F, p, _, _ = f_test(var[ia], var[ib], n)
        return F, p
    m, v = abs_dev_stats(Y, "mean" if test == "levene_mean" else "median")
    return levene_test(m[ia], v[ia], m[ib], v[ib], n)
