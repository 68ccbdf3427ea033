"""The gradient scipy's bounded minimisers take when given no ``jac``, without scipy's per-call
overhead (most of the time of the small fits here: a margin's two parameters, a Tawn copula's).

``scipy.optimize.minimize(f, x0, method="SLSQP" or "L-BFGS-B", bounds=...)`` without ``jac``
differentiates f by forward differences with an absolute step (``eps``: SLSQP's sqrt of the
float64 epsilon, L-BFGS-B's 1e-8), a step that would leave the bounds reversed or cut to the
farther bound (``scipy.optimize._numdiff.approx_derivative(method="2-point", abs_step=eps,
bounds=bounds)``). :func:`forward_differences` does the same operations in the same order, so
its gradient is the same numbers and the minimiser takes the same path to the same optimum;
``tests/replicates/test_simulation_copulas.py`` checks both against scipy.

Not for bounds that fix a variable (``lb == ub``): scipy drops such a variable before it
differentiates, and keeps it when given a ``jac``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: SLSQP's step (its ``eps``), and the relative step either falls back to when the absolute
#: one is lost in x
SQRT_EPS = float(np.sqrt(np.finfo(np.float64).eps))
#: L-BFGS-B's step (its ``eps``)
LBFGSB_STEP = 1e-8


def forward_differences(f: Callable[[np.ndarray], float], bounds: list[tuple[float, float]],
                        step: float = SQRT_EPS
                        ) -> tuple[Callable[[np.ndarray], float],
                                   Callable[[np.ndarray], np.ndarray]]:
    """``(f, gradient)`` for ``minimize(f, x0, jac=gradient, bounds=bounds)``: f remembering its
    last value (the minimisers ask for f and then the gradient at the same point), and scipy's
    forward differences of f with the absolute ``step``."""
    lb = [float(b[0]) for b in bounds]
    ub = [float(b[1]) for b in bounds]
    last: list = [None, None]

    def value(x: np.ndarray) -> float:
        key = x.tobytes()
        if last[0] != key:
            last[0], last[1] = key, f(x)
        return last[1]

    def fun(x: np.ndarray) -> float:
        return value(np.asarray(x, dtype=np.float64))

    def grad(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        f0 = value(x)
        g = np.empty(len(x))
        for i, xi in enumerate(x.tolist()):  # Python floats: the same IEEE operations
            h = step
            if (xi + h) - xi == 0:  # a step lost in x: relative instead
                h = SQRT_EPS * (1.0 if xi >= 0 else -1.0) * max(1.0, abs(xi))
            lower, upper = xi - lb[i], ub[i] - xi
            fitting = abs(h) <= max(lower, upper)
            if fitting and (xi + h < lb[i] or xi + h > ub[i]):
                h = -h  # the other way
            elif not fitting:
                h = upper if upper >= lower else -lower  # to the farther bound
            x1 = np.copy(x)
            x1[i] = xi + h
            g[i] = (f(x1) - f0) / ((xi + h) - xi)
        return g

    return fun, grad
