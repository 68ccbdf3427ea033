"""The numbers of an ANOVA table, without pandas: the response checks, the table's columns
(F, p, effect sizes, power), rounding noise and negative omega squared, and the one-line title.

:func:`irmodels.anova` wraps them in a DataFrame; ``irmodels anova`` on a complete score matrix
prints them directly (:mod:`irmodels.cli._anova_fast`), so both give the same characters.
Importing this module imports numpy and ``scipy.special`` (not ``scipy.stats``, whose import
costs a command about 0.5 s).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import special
from scipy.special import _ufuncs  # the noncentral F's ufunc (scipy.stats without its overhead)

from irmodels.errors import (
    DataFormatError,
    DataQualityWarning,
    DesignError,
    NegativeVarianceWarning,
)
from irmodels.stats import effects as _eff

__all__ = ["SHOWN_COLUMNS", "TABLE_COLUMNS", "TABLE_TITLE", "anova_power", "anova_title",
           "check_scores", "clip_omega", "ems_components", "table_values",
           "without_rounding_noise"]

#: Columns of :attr:`AnovaResult.table`, in this order.
TABLE_COLUMNS = ("SS", "df", "MS", "F", "p", "eta2", "eta2_partial", "omega2_partial",
                 "cohen_f2", "power")

#: The same columns as a summary shows them (R's header for the p-value).
SHOWN_COLUMNS = tuple("Pr(>F)" if c == "p" else c for c in TABLE_COLUMNS)

#: The title of the table in a summary.
TABLE_TITLE = "Analysis of variance"


def anova_title(spec: object, n_obs: int, method: str, ss_type: int) -> str:
    """The first line of an ANOVA summary.

    >>> anova_title("score ~ topic + system", 6450, "balanced", 2)
    'ANOVA: score ~ topic + system  (N = 6450, balanced, closed form)'
    """
    kind = "balanced, closed form" if method == "balanced" else (
        f"least squares, type {'I' * ss_type if ss_type < 4 else ss_type} SS"
    )
    return f"ANOVA: {spec}  (N = {n_obs}, {kind})"


def check_scores(y: np.ndarray, label: str) -> float:
    """Refuse responses without variation or whose sums of squares overflow float64; returns
    ``max|y|``."""
    hi, lo = (float(y.max()), float(y.min())) if y.size else (0.0, 0.0)
    if y.size and hi == lo:
        raise DesignError(
            f"all {y.size} values of the response {label} are equal ({float(y[0]):g}); there "
            "is no variation to analyse, so no F test or p-value exists. Check that the "
            "scores were computed (e.g. a measure that is 0 for every run) or pick another "
            "measure."
        )
    scale = max(abs(hi), abs(lo))
    if TINY_RESPONSE <= scale < 1e100:  # the sum of squares, at most 4 n scale^2, is finite
        return scale
    with np.errstate(over="ignore", invalid="ignore"):
        scale = float(np.max(np.abs(y)))
        total = float(np.sum(((y / scale) - np.mean(y / scale)) ** 2)) * scale * scale
    if not np.isfinite(total):
        raise DataFormatError(
            f"the response {label} is too large for double precision: its sum of squares "
            f"overflows (largest |value| {scale:.3g}). Rescale the scores first (e.g. divide "
            "them by a power of 10); F tests and p-values do not change under rescaling."
        )
    if 0.0 < scale < TINY_RESPONSE:  # squares near the underflow: SS of 0, a false perfect fit
        raise DataFormatError(
            f"the response {label} is too small for double precision: its sums of squares "
            f"underflow (largest |value| {scale:.3g}). Rescale the scores first (e.g. multiply "
            "them by a power of 10); F tests and p-values do not change under rescaling."
        )
    return scale


#: Largest |response| below which :func:`check_scores` refuses the scores: their squares (1e-280
#: and less) come within a few decades of the subnormal numbers, where the sums of squares of
#: small effects lose their precision (at 1e-200 the residual SS is 0: a false perfect fit).
TINY_RESPONSE = 1e-140


def anova_power(f2: np.ndarray, df: np.ndarray, df_resid: float, n_obs: int, alpha: float) -> np.ndarray:
    """:func:`irmodels.inference.effects.anova_power` with scipy's ufuncs called directly (the
    same functions ``stats.f.isf`` and ``stats.ncf.sf`` evaluate, without their overhead)."""
    ncf_sf = getattr(_ufuncs, "_ncf_sf", None)
    if ncf_sf is None:  # pragma: no cover - other scipy versions
        return _eff.anova_power(f2, df, df_resid, n_obs, alpha)
    crit = special.fdtri(df, df_resid, 1.0 - alpha)
    lam = f2 * float(n_obs)
    with np.errstate(invalid="ignore"):
        out = np.where(lam > 0, ncf_sf(crit, df, df_resid, np.where(lam > 0, lam, 1.0)), alpha)
    return np.where(np.isfinite(f2), out, np.nan)


def without_rounding_noise(ss, ss_resid, y, ymax, *, warn: bool = True
                           ) -> tuple[np.ndarray, float]:
    """Sums of squares that are rounding noise are 0 (see
    :data:`irmodels.inference.effects.ROUNDING`): the F of identical systems is then undefined,
    not 7. A residual of 0 is a perfect fit: warned (with ``warn=False`` the caller sees the
    residual of 0 and says it itself)."""
    ss = np.asarray(ss, dtype=float)
    noise = _eff.rounding_noise(np.append(ss, ss_resid), y, ymax)
    if not noise.any():
        return ss, ss_resid
    ss = np.where(noise[:-1], 0.0, ss)
    if noise[-1]:
        ss_resid = 0.0
    if noise[-1] and warn:
        warnings.warn(
            "the residual sum of squares is 0 up to rounding: the scores are a perfect fit of "
            "the model (e.g. runs that are copies or shifted copies of each other), so F is "
            "infinite for the terms that explain something and undefined (NaN) for those that "
            "do not. Check for duplicated runs.",
            DataQualityWarning, stacklevel=3,
        )
    return ss, ss_resid


def table_values(ss, df, ss_resid, df_resid, n_obs, alpha) -> np.ndarray:
    """The numbers of the ANOVA table, one row per term then the residual, columns
    :data:`TABLE_COLUMNS` (effect sizes as :mod:`irmodels.inference.effects` defines them): a
    few microseconds of numpy."""
    ss = np.asarray(ss, dtype=float)
    df = np.asarray(df, dtype=float)
    ms = ss / df
    ms_error = ss_resid / df_resid
    with np.errstate(divide="ignore", invalid="ignore"):
        f = ms / ms_error
        p = special.fdtrc(df, df_resid, f)
        ss_total = float(ss.sum() + ss_resid)
        eta2 = ss / ss_total
        eta2p = ss / (ss + ss_resid)
        num = df * (f - 1.0)
        omega = num / (num + n_obs)
        f2 = ss / ss_resid
    power = anova_power(f2, df, df_resid, n_obs, alpha)
    k = len(ss)
    out = np.full((k + 1, len(TABLE_COLUMNS)), np.nan)
    for j, col in enumerate((ss, df, ms, f, p, eta2, eta2p, omega, f2, power)):
        out[:k, j] = col
    out[k, :3] = (ss_resid, float(df_resid), ms_error)
    return out


def clip_omega(values: np.ndarray, names, *, warn: bool = True
               ) -> tuple[np.ndarray, tuple[str, ...]]:
    """``values`` (from :func:`table_values`) with a negative partial omega squared shown as 0,
    and the names of the terms clipped (warned, :class:`NegativeVarianceWarning`, unless
    ``warn=False``: the caller has the names)."""
    col = TABLE_COLUMNS.index("omega2_partial")
    neg = values[:-1, col] < 0
    clipped = tuple(str(n) for n, bad in zip(names, neg) if bad)
    if clipped:
        values = values.copy()
        values[:-1, col] = np.where(neg, 0.0, values[:-1, col])
    if clipped and warn:
        warnings.warn(
            f"partial omega squared is negative (F < 1) for {', '.join(clipped)}; shown as 0 "
            "(see AnovaResult.omega2_clipped).",
            NegativeVarianceWarning,
            stacklevel=3,
        )
    return values, clipped


def ems_components(terms: list[str], ms, ms_error: float, levels: dict[str, int],
                   factors: tuple[str, ...], replicates: int) -> dict[str, float]:
    """Variance components of a balanced crossed model by expected mean squares (see
    :meth:`irmodels.models.anova.AnovaResult.variance_components`): the triangular system
    ``MS_A = MS_e + sum_B c_B sigma2_B`` solved from the highest-order terms down, negative
    estimates kept (the caller clips and warns).

    >>> ems_components(["topic", "system"], [2.0, 1.0], 0.5, {"topic": 4, "system": 3},
    ...                ("topic", "system"), 1)
    {'topic': 0.5, 'system': 0.125}
    """
    keys = {t: frozenset(t.split(":")) for t in terms}
    coef = {b: replicates * math.prod(levels[f] for f in factors if f not in keys[b])
            for b in terms}
    ms_of = dict(zip(terms, ms))
    est: dict[str, float] = {}
    for a in sorted(terms, key=lambda t: -len(keys[t])):
        acc = float(ms_of[a]) - ms_error
        for b in terms:
            if b != a and keys[a] < keys[b]:
                acc -= coef[b] * est[b]
        est[a] = acc / coef[a]
    return est
