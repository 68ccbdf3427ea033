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
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "anova_power",
    "cohen_f2",
    "eta_squared",
    "omega2_magnitude",
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
    from scipy import stats  # here, not at import: scipy.stats is slow to import

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
