"""Finite-difference derivatives for the general LMM engine (:mod:`irmodels.models._lmm`):
the gradient used by its optimiser, and the Richardson-extrapolated Hessian and Jacobian of
lmerTest's Satterthwaite df (numDeriv's ``hessian`` and ``jacobian`` with fewer refinements)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["central_grad", "hessian", "jacobian"]


def central_grad(f: Any, x: np.ndarray, lower: np.ndarray) -> np.ndarray:
    g = np.empty_like(x)
    for i in range(len(x)):
        h = 1e-6 * max(1.0, abs(x[i]))
        xp = x.copy()
        xm = x.copy()
        xp[i] += h
        xm[i] -= h
        if xm[i] < lower[i]:  # forward difference on the bound
            xm[i] = x[i]
            g[i] = (f(xp) - f(xm)) / h
        else:
            g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def hessian(f: Any, x: np.ndarray, rel: float = 1e-3, richardson: bool = True) -> np.ndarray:
    """Richardson-extrapolated central-difference Hessian (two step sizes, as numDeriv's
    ``hessian`` with fewer refinements)."""
    k = len(x)

    def once(scale: float) -> np.ndarray:
        h = scale * (rel * np.abs(x) + rel * (np.abs(x) < 1e-8))
        H = np.empty((k, k))
        f0 = f(x)
        for i in range(k):
            ei = np.zeros(k)
            ei[i] = h[i]
            H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / h[i] ** 2
            for j in range(i):
                ej = np.zeros(k)
                ej[j] = h[j]
                H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                                     + f(x - ei - ej)) / (4 * h[i] * h[j])
        return H

    return (4 * once(0.5) - once(1.0)) / 3 if richardson else once(1.0)


def jacobian(f: Any, x: np.ndarray, rel: float = 1e-3) -> list[np.ndarray]:
    out = []
    for i in range(len(x)):
        def d(scale: float, i: int = i) -> np.ndarray:
            h = scale * (rel * abs(x[i]) + rel * (abs(x[i]) < 1e-8))
            e = np.zeros(len(x))
            e[i] = h
            return (f(x + e) - f(x - e)) / (2 * h)
        out.append((4 * d(0.5) - d(1.0)) / 3)
    return out
