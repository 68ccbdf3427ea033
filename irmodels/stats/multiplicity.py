"""Multiplicity adjustment of p-values, exactly as R's ``p.adjust``.

References: Holm (1979); Hochberg (1988); Hommel (1988); Benjamini & Hochberg (1995);
Benjamini & Yekutieli (2001); R's ``p.adjust``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DataFormatError

__all__ = ["P_ADJUST_METHODS", "check_option", "p_adjust"]


def check_option(value: object, allowed: Sequence[object], what: str) -> None:
    """Refuse ``value`` unless it is one of ``allowed`` (:class:`~irmodels.ArgumentError` naming
    the ``what`` and the nearest choice)."""
    if value not in allowed:
        raise ArgumentError(
            f"unknown {what} {value!r}{did_you_mean(value, allowed)}; choose one of "
            f"{', '.join(map(repr, allowed))}."
        )



#: Methods of :func:`p_adjust` (R's ``p.adjust`` names, lower case; ``"fdr"`` is ``"bh"``).
P_ADJUST_METHODS = ("bonferroni", "holm", "hochberg", "hommel", "bh", "by", "none")


def p_adjust(
    p: Sequence[float] | np.ndarray,
    method: Literal["bonferroni", "holm", "hochberg", "hommel", "bh", "by", "none"],
) -> np.ndarray:
    """Adjust p-values for multiplicity, exactly as R's ``p.adjust``.

    Parameters
    ----------
    p : array_like
        Unadjusted p-values. Missing values (NaN) stay NaN and are not counted in the family:
        the family size ``m`` is the number of non-missing p-values, as in R.
    method : {"bonferroni", "holm", "hochberg", "hommel", "bh", "by", "none"}
        R's names, case-insensitive (``"BH"``, ``"BY"``, and ``"fdr"`` for ``"bh"``), with
        ``p_(1) <= ... <= p_(m)`` the sorted p-values:

        - Bonferroni: ``min(1, m p)``;
        - Holm (step-down): ``max_{j <= i} min(1, (m - j + 1) p_(j))``;
        - Hochberg (step-up): ``min_{j >= i} min(1, (m - j + 1) p_(j))``;
        - Hommel (1988): R's algorithm (closed testing with Simes tests);
        - Benjamini-Hochberg (false discovery rate): ``min_{j >= i} min(1, m p_(j) / j)``;
        - Benjamini-Yekutieli (FDR under any dependence): BH times ``sum_{i<=m} 1/i``;
        - none: unchanged.

    Returns
    -------
    ndarray
        Adjusted p-values in the input order.

    Raises
    ------
    DataFormatError
        Unknown method, or p-values outside ``[0, 1]``.

    Examples
    --------
    >>> p_adjust([0.01, 0.04, 0.03, 0.2], "holm").round(4).tolist()
    [0.04, 0.09, 0.09, 0.2]
    >>> p_adjust([0.01, 0.04, 0.03, 0.2], "bh").round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.2]
    >>> p_adjust([0.01, 0.04, 0.03, 0.2], "hommel").round(4).tolist()
    [0.04, 0.08, 0.06, 0.2]
    >>> p_adjust([0.01, float("nan"), 0.03], "bonferroni").tolist()  # m = 2, as R
    [0.02, nan, 0.06]
    """
    meth = method.lower() if isinstance(method, str) else method
    meth = "bh" if meth == "fdr" else meth
    check_option(meth, P_ADJUST_METHODS, "adjustment")
    raw = np.asarray(p, dtype=object).ravel() if not isinstance(p, np.ndarray) else p.ravel()
    if (isinstance(p, np.ndarray) and p.dtype == bool) or any(
            isinstance(v, (bool, np.bool_)) for v in raw):
        raise DataFormatError("p holds booleans (True/False); p_adjust needs p-values, numbers "
                              "in [0, 1] (e.g. res['p'], not res['reject']).")
    p0 = np.asarray(p, dtype=np.float64)
    out = p0.copy()
    ok = ~np.isnan(p0)
    q = p0[ok]
    if q.size and (q.min() < 0 or q.max() > 1):
        raise DataFormatError(
            f"p-values must lie in [0, 1]; got values from {q.min():g} to {q.max():g}."
        )
    n = q.size
    if n <= 1 or meth == "none":
        return out
    if meth == "hommel" and n == 2:
        meth = "hochberg"
    i = np.arange(1, n + 1)
    if meth == "bonferroni":
        adj = np.minimum(1.0, n * q)
    elif meth == "hommel":
        adj = _hommel(q)
    else:
        adj = np.empty(n)
        if meth == "holm":
            order = np.argsort(q, kind="stable")
            adj[order] = np.minimum(1.0, np.maximum.accumulate((n + 1 - i) * q[order]))
        else:
            order = np.argsort(-q, kind="stable")
            ii = n + 1 - i  # n, n-1, ..., 1
            if meth == "hochberg":
                factor = (n + 1 - ii).astype(float)
            elif meth == "bh":
                factor = n / ii
            else:  # by
                factor = np.sum(1.0 / i) * n / ii
            adj[order] = np.minimum(1.0, np.minimum.accumulate(factor * q[order]))
    out[ok] = adj
    return out


def _hommel(p: np.ndarray) -> np.ndarray:
    """R's ``p.adjust(p, "hommel")`` for ``len(p) >= 3`` (no missing values)."""
    n = p.size
    i = np.arange(1, n + 1)
    order = np.argsort(p, kind="stable")
    ps = p[order]
    q = np.full(n, np.min(n * ps / i))
    pa = q.copy()
    for m in range(n - 1, 1, -1):
        n1 = n - m + 1  # i1 = 1..n1, i2 = n1+1..n
        q1 = np.min(m * ps[n1:] / np.arange(2, m + 1))
        q[:n1] = np.minimum(m * ps[:n1], q1)
        q[n1:] = q[n1 - 1]
        pa = np.maximum(pa, q)
    res = np.maximum(pa, ps)
    out = np.empty(n)
    out[order] = res
    return out
