"""The paired t-test's power on checked arguments, and the argument checks of
:mod:`irmodels.inference.power` (``irm.power``), which re-exports :func:`paired_t_power`.

References: docs/methods.md: "Power and topic-set size"; R's
``power.t.test(type = "paired", strict = TRUE)``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import stats

from irmodels._validate import check_number, check_probability, did_you_mean
from irmodels.errors import ArgumentError, DesignError

__all__ = ["alpha_arg", "check_design", "check_test_options", "nct_tail", "number_arg",
           "paired_t_power", "power_from_checked"]

Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["exact", "normal"]


# The module's argument errors are ArgumentErrors, from the shared checks of irmodels._validate.
def number_arg(value: object, name: str, **bounds: float | bool | None) -> float:
    """``check_number`` (an ``ArgumentError`` for a bad value)."""
    return check_number(value, name, **bounds)  # type: ignore[arg-type]


def alpha_arg(alpha: object) -> float:
    """``check_probability(alpha)`` (an ``ArgumentError`` for a bad value)."""
    return check_probability(alpha, "alpha")


def check_test_options(alpha: float, alternative: str, method: str) -> float:
    """``alpha`` checked, with ``alternative`` and ``method`` (:class:`~irmodels.ArgumentError`)."""
    alpha = alpha_arg(alpha)
    if alternative not in ("two-sided", "greater", "less"):
        raise ArgumentError(
            f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}"
            + did_you_mean(alternative, ("two-sided", "greater", "less"))
        )
    if method not in ("exact", "normal"):
        raise ArgumentError(f"method must be 'exact' or 'normal'; got {method!r}"
                            + did_you_mean(method, ("exact", "normal")))
    return alpha


def check_design(n: object, delta: object, sigma: object, power: object
                  ) -> tuple[float | None, ...]:
    """The given (not None) quantities of the paired t design as floats, range-checked."""
    out = [None if v is None else number_arg(v, k)
           for k, v in (("n", n), ("delta", delta), ("sigma", sigma), ("power", power))]
    n_, _, sigma_, power_ = out
    if n_ is not None and n_ <= 1:
        raise DesignError(f"n must exceed 1 (the test has n - 1 degrees of freedom); got {n!r}")
    if sigma_ is not None and sigma_ <= 0:
        raise DesignError(f"sigma must be positive; got {sigma!r}")
    if power_ is not None and not 0 < power_ < 1:
        raise ArgumentError(f"power must be in (0, 1); got {power!r}")
    return tuple(out)


def paired_t_power(
    n: float,
    delta: float,
    sigma: float,
    *,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    method: Method = "exact",
) -> float:
    """Power of the paired t-test with ``n`` topics (the function :func:`paired_t` inverts).

    Exact: ``T`` is noncentral t with ``n - 1`` degrees of freedom and noncentrality
    ``sqrt(n) delta / sigma``; two-sided power is ``P(T > t_c) + P(T < -t_c)`` with
    ``t_c = t(1 - alpha/2; n - 1)`` (both tails, as R's ``power.t.test(strict = TRUE)``);
    ``"greater"`` is ``P(T > t(1 - alpha))`` and ``"less"`` is ``P(T < -t(1 - alpha))``.
    Normal: ``Phi(sqrt(n) |delta| / sigma - z(1 - alpha/2))`` two-sided,
    ``Phi(+-sqrt(n) delta / sigma - z(1 - alpha))`` one-sided.

    Raises
    ------
    DesignError
        ``n <= 1``, ``sigma <= 0``, a non-finite value, or a bad ``alpha``, ``alternative``
        or ``method`` (the checks of :func:`paired_t`).

    >>> round(paired_t_power(50, 0.05, 0.1), 4)
    0.9339
    """
    alpha = check_test_options(alpha, alternative, method)
    n_, delta_, sigma_, _ = check_design(n, delta, sigma, None)
    return power_from_checked(n_, delta_, sigma_, alpha, alternative, method)  # type: ignore[arg-type]


def power_from_checked(n: float, delta: float, sigma: float, alpha: float, alternative: str,
           method: str) -> float:
    """:func:`paired_t_power` on checked arguments."""
    ncp = math.sqrt(n) * delta / sigma
    if method == "normal":
        if alternative == "two-sided":
            return float(stats.norm.cdf(abs(ncp) - stats.norm.ppf(1 - alpha / 2)))
        sign = 1.0 if alternative == "greater" else -1.0
        return float(stats.norm.cdf(sign * ncp - stats.norm.ppf(1 - alpha)))
    df = n - 1
    q = stats.t.ppf(1 - alpha / 2 if alternative == "two-sided" else 1 - alpha, df)
    upper = lower = 0.0
    if alternative in ("two-sided", "greater"):
        upper = nct_tail(stats.nct.sf(q, df, ncp), toward=ncp > q)
    if alternative in ("two-sided", "less"):
        lower = nct_tail(stats.nct.cdf(-q, df, ncp), toward=ncp < -q)
    p = upper + lower
    return float(p)


def nct_tail(p: float, *, toward: bool) -> float:
    """A tail of the noncentral t; far in the tails scipy may return NaN: 1 if the tail holds
    the noncentrality (the test rejects for sure), else 0."""
    if np.isnan(p):
        return 1.0 if toward else 0.0
    return float(p)

