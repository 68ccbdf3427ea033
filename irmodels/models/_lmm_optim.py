"""The optimiser of the general LMM engine (:mod:`irmodels.models._lmm`): theta minimising the
profiled deviance, diagonal elements bounded below by 0.

- Up to ``DENSE_MAX_Q`` random effects the deviance has an exact gradient and Hessian
  (:class:`irmodels.models._lmm_grad.DenseProfile`). Up to ``NEWTON_MAX_Q`` a projected
  trust-region Newton method runs from lme4's start (theta = identity): Moré & Sorensen's
  step in a radius that adapts to the ratio of actual to predicted decrease; the parameters
  on their bound with a gradient pointing out stay fixed; it stops when the Newton decrement
  (``g' H^-1 g``, twice the predicted decrease of the deviance) is below 1e-12, or after a full
  Newton step taken from a decrement below 1e-6 (quadratic convergence leaves about its
  square); at a stationary point with negative curvature it steps along the eigenvector of
  the least eigenvalue. Above ``NEWTON_MAX_Q`` (or should Newton fail), L-BFGS-B on the exact gradient,
  then the same Newton method from its end point.
- Above ``DENSE_MAX_Q``, L-BFGS-B on a central-difference gradient, then Newton steps on a
  finite-difference Hessian of the free parameters (:func:`polish`).

Either way a diagonal element that ends on its bound 0 is restarted from 0.5 (a scalar term's
deviance depends on theta through theta^2, flat at 0) and the better end point kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from irmodels.errors import ConvergenceError
from irmodels.models._lmm_numdiff import central_grad, hessian

__all__ = ["SINGULAR_TOL", "Optimum", "newton", "optimize", "polish"]

#: A diagonal element of theta below this counts as on its bound 0 (lme4's isSingular tol).
SINGULAR_TOL = 1e-4

#: The Newton decrement below which the dense path stops (deviance units).
NEWTON_TOL = 1e-12

#: Up to this many random effects the dense path runs Newton from the start (its Hessian costs
#: a few gradients); above, L-BFGS-B on the exact gradient first, then Newton.
NEWTON_MAX_Q = 100


@dataclass
class Optimum:
    theta: np.ndarray
    deviance: float
    n_iter: int
    converged: bool
    message: str


def _tr_step(w: np.ndarray, V: np.ndarray, c: np.ndarray, delta: float) -> np.ndarray:
    """The trust-region step ``argmin g'p + p'Hp/2, |p| <= delta`` from the eigen-pairs
    ``(w, V)`` of ``H`` and ``c = V'g`` (Moré & Sorensen's iteration on ``mu``)."""
    lo = max(0.0, -float(w[0]))
    if w[0] > 0:
        p = c / w
        if float(np.sqrt(p @ p)) <= delta:
            return -(V @ p)
    top = max(float(np.max(np.abs(w))), 1e-300)
    mu = lo + 1e-10 * top
    for _ in range(40):
        d = w + mu
        p = c / d
        pn = float(np.sqrt(p @ p))
        if pn <= delta * (1 + 1e-3):
            break
        q2 = float(np.sum(c * c / d ** 3))
        mu += (pn * pn / q2) * (pn - delta) / delta
    else:  # pragma: no cover (the iteration converges from below)
        p = c / (w + mu)
    p = -(V @ p)
    pn = float(np.sqrt(p @ p))
    if pn < 0.5 * delta and w[0] <= 0:  # the hard case: add the least eigenvector
        p = p + V[:, 0] * math.sqrt(delta * delta - pn * pn)
    return p


def newton(prof: Any, x0: np.ndarray, lower: np.ndarray, maxiter: int = 200
           ) -> tuple[np.ndarray, float, int, bool, str]:
    """Projected trust-region Newton on ``prof.hess`` (deviance, gradient, Hessian) from
    ``x0``: ``(theta, deviance, iterations, converged, message)``."""
    x = np.maximum(np.asarray(x0, float), lower)
    f, g, H = prof.hess(x)
    if not np.isfinite(f):
        return x, f, 0, False, "the deviance is not finite at the start"
    delta = 0.5 * (1.0 + float(np.max(np.abs(x))))
    for it in range(1, maxiter + 1):
        fixed = (lower == 0) & (x <= 0) & (g > 0)
        idx = np.flatnonzero(~fixed)
        if not len(idx):
            return x, f, it, True, "every parameter on its bound"
        gf = g[idx]
        w, V = np.linalg.eigh(H if len(idx) == len(x) else H[np.ix_(idx, idx)])
        c = V.T @ gf
        top = max(float(np.max(np.abs(w))), 1e-300)
        dec = float(c @ (c / np.maximum(np.abs(w), 1e-8 * top)))
        if not np.isfinite(dec):
            return x, f, it, False, "the Newton step is not finite"
        if dec < NEWTON_TOL:
            if w[0] > -1e-8 * top:
                return x, f, it, True, "Newton decrement below tolerance"
            step = _leave_saddle(prof, x, f, idx, V[:, 0], lower)
            if step is None:
                return x, f, it, True, "Newton decrement below tolerance (flat direction)"
            x = step
            f, g, H = prof.hess(x)
            continue
        p = _tr_step(w, V, c, delta)
        xn = x.copy()
        xn[idx] += p
        np.maximum(xn, lower, out=xn)
        sv = xn - x
        sn = float(np.sqrt(sv @ sv))
        if sn == 0.0:
            return x, f, it, dec < 1e-6, "the step vanished on the bounds"
        pred = -float(g @ sv + 0.5 * sv @ H @ sv)
        fn = prof(xn)
        if dec < 1e-6 and w[0] > 0 and sn < delta and fn <= f:  # quadratic convergence: the
            return xn, fn, it, True, "Newton decrement below tolerance"  # rest is about dec^2
        rho = (f - fn) / pred if pred > 0 else -1.0
        if not np.isfinite(fn) or rho < 0.25:
            delta = 0.25 * sn
        elif rho > 0.75 and sn > 0.99 * delta:
            delta = 2 * delta
        if np.isfinite(fn) and fn < f and rho > 1e-4:
            x = xn
            f, g, H = prof.hess(x)  # the factor at x is reused
        elif delta < 1e-10 * (1.0 + float(np.max(np.abs(x)))):
            ok = dec < 1e-6
            return x, f, it, ok, ("no decrease in the trust region" + (
                " (at the optimum to rounding)" if ok else ""))
    return x, f, maxiter, False, "iteration limit reached"


def _leave_saddle(prof: Any, x: np.ndarray, f: float, idx: np.ndarray, v: np.ndarray,
                  lower: np.ndarray) -> np.ndarray | None:
    """A point below ``f`` along the direction of negative curvature ``v`` (either sign), or
    None."""
    for sign in (1.0, -1.0):
        for a in (1.0, 0.25, 0.0625, 0.015625):
            xn = x.copy()
            xn[idx] += sign * a * v
            np.maximum(xn, lower, out=xn)
            if prof(xn) < f - 1e-12 * max(1.0, abs(f)):
                return xn
    return None


def optimize(dev: Any, start: np.ndarray | None = None, maxiter: int = 2000) -> Optimum:
    """theta minimising ``dev`` (a :class:`irmodels.models._lmm_design.ProfiledDeviance`)."""
    lower = dev.d.lower
    bounds = [(0.0 if lo == 0 else None, None) for lo in lower]
    x0 = np.where(lower == 0, 1.0, 0.0) if start is None else np.asarray(start, float)
    prof = dev.prof if dev.dense else None

    def lbfgs(x: np.ndarray) -> tuple[np.ndarray, float, int, bool, str]:
        if prof is not None:
            jac: Any = True
            fun: Any = prof.grad
        else:
            jac, fun = (lambda t: central_grad(dev, t, lower)), dev
        r = minimize(fun, x, jac=jac, method="L-BFGS-B", bounds=bounds,
                     options={"maxiter": maxiter, "gtol": 1e-9,  # Newton finishes a dense fit
                              "ftol": 1e-12 if prof is not None else 1e-15})
        x, f = r.x, float(r.fun)
        if prof is not None and np.isfinite(f):
            x2, f2, it2, ok2, _ = newton(prof, x, lower, 50)
            if f2 <= f:
                x, f = x2, f2
        return x, f, int(r.nit), bool(r.success), str(r.message)

    def run(x: np.ndarray) -> tuple[np.ndarray, float, int, bool, str]:
        if prof is not None and prof.q <= NEWTON_MAX_Q:
            out = newton(prof, x, lower, min(maxiter, 200))
            if out[3]:
                return out
        return lbfgs(x)

    best_x, best_f, n_iter, ok, msg = run(x0)
    # a diagonal element stopped on its bound: the deviance may be flat there (a scalar term's
    # deviance depends on theta through theta^2); restart it off the bound
    for i in np.flatnonzero((lower == 0) & (best_x <= SINGULAR_TOL)):
        x = best_x.copy()
        x[i] = 0.5
        x2, f2, it2, ok2, msg2 = run(x)
        n_iter += it2
        if f2 < best_f - 1e-10 * abs(best_f):
            best_x, best_f, ok, msg = x2, f2, ok2, msg2
    if not np.isfinite(best_f):
        raise ConvergenceError("the LMM deviance is not finite at the optimiser's end point; "
                               "check the data for near-collinear random-effect columns")
    if prof is None:
        best_x, best_f = polish(dev, best_x, best_f, lower)
    return Optimum(best_x, best_f, n_iter, ok or bool(np.isfinite(best_f)), msg)


def polish(dev: Any, x: np.ndarray, fx: float, lower: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton steps on the parameters off their bounds (finite-difference Hessian)."""
    for _ in range(2):
        free = ~((lower == 0) & (x <= SINGULAR_TOL))
        if not free.any():
            break
        idx = np.flatnonzero(free)

        def sub(z: np.ndarray, x: np.ndarray = x, idx: np.ndarray = idx) -> float:
            xx = x.copy()
            xx[idx] = z
            return float(dev(xx))

        z = x[idx]
        H = hessian(sub, z, rel=1e-3, richardson=False)
        g = central_grad(sub, z, np.full(len(z), -np.inf))
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        improved = False
        for a in (1.0, 0.5, 0.25):
            zn = z - a * step
            xn = x.copy()
            xn[idx] = zn
            xn = np.maximum(xn, np.where(lower == 0, 0.0, -np.inf))
            fn = dev(xn)
            if fn < fx:
                x, fx, improved = xn, fn, True
                break
        if not improved or np.max(np.abs(step)) < 1e-7 * max(1.0, float(np.max(np.abs(z)))):
            break
    return x, fx
