"""Stage 3 of a mixed-model fit (lme4's ``optimizeLmer``): :class:`Optimum` and
:func:`optimize_deviance`.

The closed form (the ANOVA estimates on a balanced crossed design, the exact optimum when every
component is positive), the bounded L-BFGS-B optimiser with its restarts, the unit rescaling of
the response and the handling of components at the boundary. Also :class:`MixedState`, what a
:class:`~irmodels.models.mixed.MixedResult` keeps of its fit (design, deviance function,
optimum and the quantities at the optimum) as typed attributes: modules built on a fit read
``fit._state.problem``, ``fit._state.theta``, ... (attributes, never ``fit._state["..."]``).
References: docs/methods.md: "Linear mixed-effects models", "Variance components".
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
)
from irmodels.formula.spec import RandomTerm, Term
from irmodels.models import _reml
from irmodels.models._mixed_design import MixedDesign, stratum_sd
from irmodels.models._mixed_deviance import DevianceFunction

__all__ = ["MixedState", "Optimum", "optimize_deviance"]

# --------------------------------------------------------------------------------------------
# closed form for balanced crossed designs


def _closed_form(d: MixedDesign, pb: _reml.Problem, order: list[int], reml: bool
                 ) -> tuple[np.ndarray | None, np.ndarray]:
    """ANOVA (expected-mean-squares) estimates of theta on a balanced crossed design.

    Returns (theta or None, starting theta). theta is the exact REML/ML optimum when every
    component is positive (the likelihood then depends on the data only through the stratum
    sums of squares and is maximised by equating them to their expectations).
    """
    spec = d.spec
    K = pb.K
    start = np.full(K, 0.5)
    if d.strata is not None or spec.covariates:
        # A numeric covariate spans one direction, not the stratum subspaces the expected mean
        # squares project on: treated as a factor below it would absorb L - 1 df (sleepstudy's
        # Days: var(Subject) 1341.29 instead of lme4's 1378.18). It could stay only if it were
        # constant within every cell of the random terms' factors, but then it is a function of
        # those cells and the grid of cells below is never balanced; so every covariate takes
        # the iterative path.
        return None, start
    terms: list[Term | RandomTerm] = [*spec.fixed, *spec.random]
    factors = list(dict.fromkeys(f for t in terms for f in t.factors))
    L = [len(d.levels[f]) for f in factors]
    ncell = int(np.prod(L))
    if ncell > 5_000_000 or len(factors) > 6:
        return None, start
    cell = np.zeros(pb.n, dtype=np.int64)
    for f, lf in zip(factors, L):
        cell = cell * lf + d.codes[f]
    counts = np.bincount(cell, minlength=ncell)
    m = counts[0]
    if m == 0 or np.any(counts != m):
        return None, start
    n = pb.n
    y = d.y
    sums = np.bincount(cell, weights=y, minlength=ncell)
    means = (sums / m).reshape(L)
    ss_within = float(np.sum((y - means.ravel()[cell]) ** 2))
    df_within = n - ncell
    ax = tuple(range(len(factors)))
    fixed_sets = [frozenset(t.factors) for t in spec.fixed]
    rand_sets = [frozenset(spec.random[k].factors) for k in order]
    strata: dict[tuple, list[float]] = {}
    has_mean_fixed = spec.intercept or bool(spec.fixed)
    for size in range(len(factors) + 1):
        for S in combinations(range(len(factors)), size):
            Sset = frozenset(factors[i] for i in S)
            comp = tuple(a for a in ax if a not in S)
            eff = means.mean(axis=comp, keepdims=True) if comp else means
            for a in S:
                eff = eff - eff.mean(axis=a, keepdims=True)
            nlev = int(np.prod([L[i] for i in S])) if S else 1
            ss = float(np.sum(eff**2)) * n / nlev
            df = int(np.prod([L[i] - 1 for i in S])) if S else 1
            fixed = (not S and has_mean_fixed) or any(Sset <= fs for fs in fixed_sets)
            coef = tuple([1.0] + [n / int(np.prod([len(d.levels[f]) for f in rs]))
                                  if Sset <= rs else 0.0 for rs in rand_sets])
            if fixed:
                if reml:
                    continue
                ss = 0.0
            g = strata.setdefault(coef, [0.0, 0.0])
            g[0] += ss
            g[1] += df
    if df_within > 0:
        g = strata.setdefault(tuple([1.0] + [0.0] * K), [0.0, 0.0])
        g[0] += ss_within
        g[1] += df_within
    keys = list(strata)
    A = np.array(keys)
    lam = np.array([strata[k][0] / strata[k][1] for k in keys])
    if A.shape[0] != K + 1 or np.linalg.matrix_rank(A) < K + 1:
        return None, start
    comps = np.linalg.solve(A, lam)
    s2 = comps[0]
    if s2 <= 0:
        return None, start
    start = np.sqrt(np.clip(comps[1:], 1e-4 * s2, None) / s2)
    if np.any(lam <= 0) or np.any(comps[1:] <= 1e-10 * s2):
        return None, start
    return np.sqrt(comps[1:] / s2), start


@dataclass
class Optimum:
    """Stage 3 (lme4's ``optimizeLmer``): where the deviance is minimal, and how it was found."""

    theta: np.ndarray
    eta: np.ndarray | None
    deviance: float
    n_iter: int
    converged: bool
    closed_form: bool
    message: str = ""
    #: the ConvergenceWarning this stage gave ("" when converged): the fit's note
    warning: str = ""
    #: (devfun, theta, the evaluation there): mixed_result reuses it instead of evaluating again
    _evaluated: tuple[Any, np.ndarray, Any] | None = field(default=None, repr=False,
                                                           compare=False)


def optimize_deviance(devfun: DevianceFunction, *, start: dict[str, float] | None = None,
                      maxiter: int = 2000, tol: float = 1e-9, closed_form: bool = True
                      ) -> Optimum:
    """Stage 3: minimise the deviance.

    The balanced-design ANOVA estimates are the optimum when they apply (``closed_form``), else
    the start of L-BFGS-B (with restarts, and a failed heteroscedastic start retried from the
    homoscedastic fit); see :func:`mixed`. Warns :class:`ConvergenceWarning` when the gradient
    criterion is not met; raises :class:`ConvergenceError` without a finite likelihood.

    ``closed_form=False`` forces the iterative path: L-BFGS-B runs even where the ANOVA
    estimates apply (from a start of 0.5 for every relative SD, not from those estimates; on
    the blocked kernel's large designs, :func:`trust_region_bfgs` from :func:`moment_start`), a
    check that the closed form is the optimum of the deviance. The stages then give the fit
    :func:`mixed` would give without its closed form::

        design = mixed_design(model, data)
        devfun = deviance_function(design, "REML")
        fit = mixed_result(design, devfun, optimize_deviance(devfun, closed_form=False))
    """
    design, pb, order, reml = devfun.design, devfun.problem, devfun.order, devfun.reml
    spec, method, K = design.spec, devfun.method, pb.K
    if closed_form:
        closed, theta0 = _closed_form(design, pb, order, reml)
    else:
        closed, theta0 = None, np.full(K, 0.5)
    if closed is None and _reml._blocked.applies(pb):
        theta0 = moment_start(pb)
    if start:
        names = [spec.random[k].name for k in order]
        unknown = [str(n) for n in start if n not in names]
        if unknown:
            raise ArgumentError(
                f"start names {', '.join(map(repr, unknown))}, which is not a random term of "
                f"{spec}; the random terms are {', '.join(map(repr, names))}"
            )
        for i, name in enumerate(names):
            if name in start:
                value = start[name]
                if (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
                        or not math.isfinite(float(value)) or float(value) < 0):
                    raise ArgumentError(
                        f"start[{name!r}] must be a finite number >= 0 (a standard deviation "
                        f"relative to the residual SD); got {value!r}"
                    )
                theta0[i] = float(value)
    if closed is not None:
        fit = devfun.evaluate(closed)
        return Optimum(closed, None, fit.deviance, 0, True, True, "closed form",
                       _evaluated=(devfun, closed.copy(), fit))
    n_iter = 0
    eta0 = _eta_start(pb) if pb.n_strata > 1 else np.zeros(0)
    x0 = np.concatenate([theta0, eta0])
    try:
        x, res, n_iter = optimise_scaled(pb, x0, reml, maxiter, tol)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError):
        x, res = None, None
    if (res is None or not np.isfinite(res.fun)) and pb.n_strata > 1:
        # restart from the homoscedastic fit (its theta, rescaled to the reference stratum)
        x0 = np.concatenate([_homoscedastic_theta(pb, theta0, reml, maxiter, tol), eta0])
        try:
            x, res, n_iter = optimise_scaled(pb, x0, reml, maxiter, tol)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            x, res = None, None
    if res is None or x is None or not np.isfinite(res.fun):
        raise ConvergenceError(
            f"the {method} fit of {spec} produced no finite likelihood after {n_iter} "
            "iterations. Check the data for constant or near-constant strata, rescale the "
            "response, or give starting values (start={...})."
        )
    scale = max(1.0, abs(float(res.fun)))
    converged = _pg_norm(res.jac, x, K) <= 1e-4 * scale
    note = "" if converged else (
        f"the {method} fit of {spec} did not converge in {n_iter} iterations "
        f"({res.message}); the estimates may be inaccurate. Raise maxiter, give "
        "starting values (start={...}), rescale the response, or simplify the random "
        "part.")
    if note:
        warnings.warn(note, ConvergenceWarning, stacklevel=3)
    theta, eta = devfun.split(x)
    theta = np.maximum(theta, 0.0)
    # the optimiser's evaluation at its end point, on the problem's own response: stage 4
    # reuses it instead of evaluating again
    ev = getattr(res, "fit", None)
    evaluated = ((devfun, theta.copy(), ev) if ev is not None and eta is None
                 and np.array_equal(theta, x[:K]) else None)
    return Optimum(theta, eta, float(res.fun), n_iter, bool(converged), False,
                   str(res.message), warning=note, _evaluated=evaluated)


def moment_start(pb: _reml.Problem) -> np.ndarray:
    """Starting relative SDs from one-way moment estimates, each random term on its own.

    For term k with levels of sizes ``n_l``: ``s2_k = (MSB - MSW) / n0`` with the one-way
    between and within mean squares of the response and ``n0 = (n - sum n_l^2 / n) / (L - 1)``
    (the unbalanced one-way ANOVA estimator); the residual variance is what the terms leave of
    the response's variance (at least 5 % of it). Crossing and the fixed effects are ignored: a
    start, not an estimate (on lme4's InstEval it is within 0.03 of the optimum's theta for
    students and lecturers). A term without positive between-variance starts at 0.1 (0 is a
    stationary point of the deviance), and no start exceeds 10.

    >>> import numpy as np
    >>> from irmodels.models._reml import Problem
    >>> rng = np.random.default_rng(1)
    >>> g = np.repeat(np.arange(40), 25)
    >>> y = 2.0 * rng.standard_normal(40)[g] + rng.standard_normal(1000)
    >>> pb = Problem(y=y, cols=np.column_stack([g, np.full(1000, 40)]),
    ...              vals=np.ones((1000, 2)), term_sizes=[40], p=1)
    >>> np.round(moment_start(pb), 1).tolist()
    [2.0]
    """
    y = np.asarray(pb.y, float)
    n = pb.n
    var_y = float(np.var(y))
    s2 = np.zeros(pb.K)
    off = 0
    for k, size in enumerate(pb.term_sizes):
        inside = (pb.cols >= off) & (pb.cols < off + size)
        has = inside.any(axis=1)
        level = np.where(inside, pb.cols, 0).max(axis=1)[has] - off
        yk = y[has]
        off += size
        nk = yk.size
        nl = np.bincount(level, minlength=size).astype(float)
        used = nl > 0
        n_lev = int(used.sum())
        if n_lev < 2 or nk <= n_lev:
            continue
        means = np.bincount(level, weights=yk, minlength=size)[used] / nl[used]
        msb = float(np.sum(nl[used] * (means - yk.mean()) ** 2)) / (n_lev - 1)
        msw = float(np.sum((yk - means[np.cumsum(used)[level] - 1]) ** 2)) / (nk - n_lev)
        n0 = (nk - float(np.sum(nl ** 2)) / nk) / (n_lev - 1)
        s2[k] = (msb - msw) / n0 if n0 > 0 else 0.0
    if not (np.isfinite(var_y) and var_y > 0) or n < 2:
        return np.full(pb.K, 0.5)
    se = max(var_y - float(np.sum(np.maximum(s2, 0.0))), 0.05 * var_y)
    return np.minimum(np.sqrt(np.maximum(s2, 0.01 * se) / se), 10.0)


def _response_unit(y: np.ndarray) -> float:
    """The power of 2 nearest the response's SD (1.0 for a constant or empty response)."""
    if not y.size:
        return 1.0
    with np.errstate(all="ignore"):
        sd = float(np.std(y))
    if not (np.isfinite(sd) and sd > 0):
        return 1.0
    return float(2.0 ** round(math.log2(sd)))


def optimise_scaled(pb: _reml.Problem, x0: np.ndarray, reml: bool, maxiter: int, tol: float
                    ) -> tuple[np.ndarray, Any, int]:
    """:func:`_optimise_units` on the response in units of (a power of 2 near) its SD.

    theta and eta do not depend on the response's units, but the deviance carries
    ``dof * log(unit^2)``: at 1e+-90 or 1e20 it is thousands, and the rounding of that offset
    stopped the optimiser 2e-6 short (relative) in the variances. Dividing by a power of 2 is
    exact; the deviance of the result is evaluated on the original response (``res.fit``, that
    evaluation); its gradient is the scaled run's (the profiled gradient does not depend on the
    unit: ``r2`` and its derivatives scale alike).
    """
    c = _response_unit(pb.y)
    if c == 1.0:
        return _optimise_units(pb, x0, reml, maxiter, tol)
    # build the design's caches (they do not depend on y) on the problem the result keeps,
    # so that the scaled copy shares them
    pb.unit_cross()
    pb.index()
    if not pb.dense_b and not _reml._blocked.applies(pb):  # the blocked kernel needs no layout
        pb.sparse_layout()
    scaled = copy.copy(pb)
    scaled.y = pb.y / c
    x, res, n_iter = _optimise_units(scaled, x0, reml, maxiter, tol)
    if res is not None:
        res.fit = None  # an evaluation of the scaled response is no evaluation of pb's
    if res is not None and np.isfinite(res.fun):
        K = pb.K
        with np.errstate(all="ignore"):
            try:
                f = _reml.evaluate(pb, x[:K], x[K:] if pb.n_strata > 1 else None, reml)
                res.fun, res.fit = f.deviance, f
            except np.linalg.LinAlgError:
                res.fun = math.nan
    return x, res, n_iter


def _optimise_units(pb: _reml.Problem, x0: np.ndarray, reml: bool, maxiter: int, tol: float
                    ) -> tuple[np.ndarray, Any, int]:
    """Minimise the profiled deviance from ``x0`` = (theta, eta) by L-BFGS-B.

    A point where the factorisation fails (numerically not positive definite, far from the
    optimum) gets a deviance above the best one seen, so the line search steps back instead
    of aborting the fit. A few restarts catch L-BFGS-B's early stops on flat ridges.
    Returns (x, the last scipy result, iterations).
    """
    K = pb.K
    bounds: list[tuple[float | None, float | None]] = (
        [(0.0, None)] * K + [(None, None)] * (pb.n_strata - 1))
    best_f = [math.inf]
    best_g = [np.zeros_like(x0)]
    last: list[Any] = [None, None]  # the last evaluation and its x

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        et = x[K:] if pb.n_strata > 1 else None
        try:
            f = _reml.evaluate(pb, x[:K], et, reml, gradient=True)
        except np.linalg.LinAlgError:
            if not np.isfinite(best_f[0]):
                raise
            return best_f[0] + 1e3 * (1.0 + abs(best_f[0])), -best_g[0]
        assert f.gradient is not None  # asked for above
        if f.deviance < best_f[0]:
            best_f[0], best_g[0] = f.deviance, f.gradient
        last[0], last[1] = f, np.array(x, float)
        return f.deviance, f.gradient

    opts = {"maxiter": maxiter, "maxfun": 5 * maxiter, "ftol": 1e-15, "gtol": tol, "maxls": 10}
    with np.errstate(all="ignore"):
        res = _minimize(pb, fun, x0, bounds, opts)
        x = res.x
        n_iter = int(res.nit)
        if not np.isfinite(res.fun):
            return x, res, n_iter
        scale = max(1.0, abs(float(res.fun)))
        for _ in range(3):
            if _pg_norm(res.jac, x, K) <= 1e-5 * scale or n_iter >= maxiter:
                break
            res = _minimize(pb, fun, x, bounds, opts)
            x = res.x
            n_iter += int(res.nit)
        # theta_k enters the deviance as theta_k**2, so its gradient is exactly 0 on the bound
        # theta_k = 0 (and tiny near it): L-BFGS-B stops there (projected gradient 0) when a step was clipped onto
        # the bound, or the start was 0, even where a positive theta_k is better (lme4's
        # derivative-free optimiser does not stop there). A component at 0 is an optimum only
        # if no probe above it lowers the deviance; otherwise restart from the best probe.
        for _ in range(2 * K + 2):
            zero = [k for k in range(K) if x[k] < _NEAR_ZERO]
            if not zero or not np.isfinite(res.fun):
                break
            best_x, best = None, float(res.fun) - 1e-10 * max(1.0, abs(float(res.fun)))
            et = x[K:] if pb.n_strata > 1 else None
            for k in zero:
                for step in _BOUNDARY_PROBES:
                    xp = x.copy()
                    xp[k] = step
                    try:
                        dev = _reml.evaluate(pb, xp[:K], et, reml).deviance
                    except np.linalg.LinAlgError:
                        continue
                    if dev < best:
                        best_x, best = xp, dev
            if best_x is None:
                break
            res = _minimize(pb, fun, best_x, bounds, opts)
            x = res.x
            n_iter += int(res.nit)
        # The converse: near theta_k = 0 the deviance is flat (theta_k**2), so L-BFGS-B stops a
        # little above a zero optimum (theta 1.3e-4 for a topic variance whose REML optimum is
        # 0, which moved the Satterthwaite df from lmerTest's 36 to 29.45). A small component
        # whose zero is at least as good is set to exactly 0 and the others re-polished with
        # it held there, so a boundary optimum is reported as one (lme4's isSingular).
        if np.isfinite(res.fun):
            x, res, extra = _snap_to_boundary(pb, fun, x, res, reml, bounds, opts)
            n_iter += extra
    if last[1] is not None and np.array_equal(last[1], x):
        res.fit = last[0]  # the evaluation at the end point (mixed_result reuses it)
    return x, res, n_iter


#: Relative SDs below which _snap_to_boundary tries the component at exactly 0.
_SNAP_BELOW = 1e-2


def _minimize(pb: _reml.Problem, fun: Any, x0: np.ndarray,
              bounds: list[tuple[float | None, float | None]], opts: dict[str, Any]) -> Any:
    """One bounded minimisation of ``fun`` (deviance and gradient): :func:`trust_region_bfgs`
    on the designs of the blocked kernel (large, one residual variance: an evaluation costs
    tens of ms, and L-BFGS-B took 30-60 of them), L-BFGS-B on the others (whose stopping
    points the reference fixtures pin)."""
    if _reml._blocked.applies(pb):
        return trust_region_bfgs(fun, x0, bounds, maxiter=int(opts["maxiter"]))
    return optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)


#: The Newton decrement ``g' H^-1 g`` (deviance units, about twice the distance to the
#: optimum's deviance) below which :func:`trust_region_bfgs` stops, or below ``_ROUNDING``
#: times the deviance when that is larger (a decrease the deviance's rounding hides).
TR_TOL = 1e-12
_ROUNDING = 1e-15


def trust_region_bfgs(fun: Any, x0: np.ndarray, bounds: list[tuple[float | None, float | None]],
                      maxiter: int = 200) -> optimize.OptimizeResult:
    """Minimise ``fun(x) -> (f, gradient)`` subject to ``bounds`` (lower bounds 0 or none, no
    upper bounds; a bound (a, a) holds the parameter at a) by a trust-region quasi-Newton method.

    The Hessian starts as forward differences of the gradient (one evaluation per free
    parameter) and is then updated by damped BFGS (Powell's damping keeps it positive definite)
    from every step, accepted or not. The step minimises the quadratic model in a radius that
    adapts to the ratio of actual to predicted decrease (Levenberg-Marquardt on the eigen-pairs
    of the free block); parameters on their lower bound with a gradient pointing out of the
    region stay fixed. A bounded parameter falls at most to a tenth of its value in one step,
    and to its bound only from within ``_SNAP_BELOW`` of it (a relative SD enters the deviance
    as its square: its gradient vanishes at 0, where a step that lands early would stop). Stops
    when the decrement ``g' H^-1 g`` of the free parameters is below :data:`TR_TOL` (or 1e-15
    times the deviance), or when a step that failed predicted less decrease than the
    deviance's rounding.

    Returns a :class:`scipy.optimize.OptimizeResult` (``x, fun, jac, nit, nfev, success,
    message``) as ``scipy.optimize.minimize`` does.

    >>> import numpy as np
    >>> def fun(x):
    ...     return float((x[0] - 1) ** 2 + 10 * (x[1] + 1) ** 2), np.array(
    ...         [2 * (x[0] - 1), 20 * (x[1] + 1)])
    >>> res = trust_region_bfgs(fun, np.array([0.5, 0.5]), [(0.0, None), (0.0, None)])
    >>> np.round(res.x, 8).tolist(), bool(res.success)
    ([1.0, 0.0], True)
    """
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds], float)
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds], float)
    held = lo == hi
    x = np.clip(np.asarray(x0, float), lo, hi)
    f, g = fun(x)
    g = np.asarray(g, float)
    nfev = 1

    def result(success: bool, message: str, nit: int) -> optimize.OptimizeResult:
        return optimize.OptimizeResult(x=x, fun=f, jac=g, nit=nit, nfev=nfev, success=success,
                                       message=message)

    if not np.isfinite(f):
        return result(False, "the deviance is not finite at the start", 0)
    n = x.size
    H = np.eye(n)
    for k in np.flatnonzero(~held):  # forward differences of the gradient
        h = 1e-4 * max(abs(x[k]), 0.1)
        xp = x.copy()
        xp[k] += h
        fp, gp = fun(xp)
        nfev += 1
        if np.isfinite(fp):
            H[:, k] = (np.asarray(gp, float) - g) / h
    H = 0.5 * (H + H.T)
    w_all = np.linalg.eigvalsh(H)
    if not w_all[0] > 1e-8 * max(abs(w_all[-1]), 1e-300):  # lift to positive definite
        H += (abs(w_all[0]) + 1e-6 * max(abs(w_all[-1]), 1.0)) * np.eye(n)
    delta = 0.5 * (1.0 + float(np.max(np.abs(x))))
    bounded = np.isfinite(lo) & ~held
    dec = math.inf
    for it in range(1, maxiter + 1):
        free = ~held & ~((x <= lo) & (g >= 0))
        idx = np.flatnonzero(free)
        if not idx.size:
            return result(True, "every parameter on its bound", it)
        w, V = np.linalg.eigh(H[np.ix_(idx, idx)])
        w = np.maximum(w, 1e-12 * max(float(w[-1]), 1e-300))
        c = V.T @ g[idx]
        dec = float(np.sum(c * c / w))
        if not np.isfinite(dec):
            return result(False, "the quasi-Newton step is not finite", it)
        if dec < max(TR_TOL, _ROUNDING * abs(f)):
            return result(True, "Newton decrement below tolerance", it)
        p = _tr_step(w, V, c, delta)
        xn = x.copy()
        xn[idx] += p
        # a bounded parameter: at most a tenth of its value, to its bound only from close to it
        xb, lb = x[bounded], lo[bounded]
        xn[bounded] = np.maximum(xn[bounded], np.where(xb - lb <= _SNAP_BELOW, lb,
                                                       lb + 0.1 * (xb - lb)))
        s = xn - x
        sn = float(np.sqrt(s @ s))
        if sn == 0.0:
            return result(dec < 1e-6, "the step vanished on the bounds", it)
        pred = -float(g @ s + 0.5 * s @ H @ s)
        fn, gn = fun(xn)
        gn = np.asarray(gn, float)
        nfev += 1
        if np.isfinite(fn) and fn < f + 1.0 + abs(f):  # a real evaluation: update the model
            y = gn - g
            Hs = H @ s
            sHs = float(s @ Hs)
            sy = float(s @ y)
            if sHs > 0:
                if sy < 0.2 * sHs:  # Powell's damping
                    r = 0.8 * sHs / (sHs - sy)
                    y = r * y + (1.0 - r) * Hs
                    sy = float(s @ y)
                H = H - np.outer(Hs, Hs) / sHs + np.outer(y, y) / sy
                H = 0.5 * (H + H.T)
        rho = (f - fn) / pred if pred > 0 and np.isfinite(fn) else -1.0
        if rho < 0.25:
            delta = 0.25 * sn
        elif rho > 0.75 and sn > 0.99 * delta:
            delta = 2.0 * delta
        if np.isfinite(fn) and fn < f:
            x, f, g = xn, float(fn), gn
        elif pred < 10 * _ROUNDING * abs(f):  # no decrease the deviance's rounding could show
            return result(True, "at the optimum to the deviance's rounding", it)
        elif delta < 1e-12 * (1.0 + float(np.max(np.abs(x)))):
            return result(dec < 1e-6, "no decrease in the trust region", it)
    return result(dec < TR_TOL, "iteration limit reached", maxiter)


def _tr_step(w: np.ndarray, V: np.ndarray, c: np.ndarray, delta: float) -> np.ndarray:
    """The step minimising ``c'z + z' diag(w) z / 2`` (in the eigenbasis ``V`` of a positive
    definite model Hessian, ``c = V' g``) within radius ``delta``: the Newton step when it fits,
    else ``-(H + mu I)^-1 g`` with ``mu`` found by Newton's iteration on ``1/|p(mu)|``."""
    z = c / w
    zn = float(np.sqrt(z @ z))
    if zn <= delta:
        return -(V @ z)
    mu = 0.0
    for _ in range(50):
        d = w + mu
        z = c / d
        zn = float(np.sqrt(z @ z))
        if abs(zn - delta) <= 1e-3 * delta:
            break
        dz = -float(np.sum(c * c / d ** 3)) / zn  # d|z|/dmu
        mu = max(mu - (zn - delta) / delta * zn / dz, 0.5 * mu)
    return -(V @ z)


def _snap_to_boundary(pb: _reml.Problem, fun: Any, x: np.ndarray, res: Any, reml: bool,
                      bounds: list[tuple[float | None, float | None]], opts: dict[str, Any]
                      ) -> tuple[np.ndarray, Any, int]:
    """Set to 0 each small theta_k (< ``_SNAP_BELOW``) whose zero does not raise the deviance,
    smallest first, re-polishing the other parameters with the zeros held (bounds (0, 0))."""
    K = pb.K
    et = x[K:] if pb.n_strata > 1 else None
    dev = float(res.fun)
    tol = 1e-12 * max(1.0, abs(dev))
    zeroed: list[int] = []
    for k in sorted(range(K), key=lambda j: x[j]):
        if not 0.0 < x[k] < _SNAP_BELOW:
            continue
        xp = x.copy()
        xp[k] = 0.0
        try:
            d0 = _reml.evaluate(pb, xp[:K], et, reml).deviance
        except np.linalg.LinAlgError:
            continue
        if d0 <= dev + tol:
            x, dev = xp, min(dev, d0)
            zeroed.append(k)
    if not zeroed:
        return x, res, 0
    held = list(bounds)
    for k in zeroed:
        held[k] = (0.0, 0.0)
    nit = 0
    if any(lo != hi for lo, hi in held):  # something left to polish
        res2 = _minimize(pb, fun, x, held, opts)
        nit = int(res2.get("nit", 0))
        if np.isfinite(res2.fun) and res2.fun <= dev + tol:
            x = np.asarray(res2.x, float).copy()
            x[zeroed] = 0.0
    f, g = fun(x)  # the evaluation at the returned point (scipy skips it when all are held)
    msg = f"{res.message}; {len(zeroed)} component(s) at the boundary"
    return x, optimize.OptimizeResult(x=x, fun=f, jac=g, nit=nit, message=msg,
                                      success=True), nit


#: Values of a relative SD tried above a component that the optimiser left at (or near) 0;
#: below _NEAR_ZERO (lme4's tolerance for a singular fit) the gradient is too flat to trust.
_BOUNDARY_PROBES = (1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0)
_NEAR_ZERO = 1e-4


def _homoscedastic_theta(pb: _reml.Problem, theta0: np.ndarray, reml: bool, maxiter: int,
                         tol: float) -> np.ndarray:
    """theta of the homoscedastic fit of the same problem, relative to the reference stratum's
    residual SD (the starting point of a heteroscedastic restart)."""
    homo = _reml.Problem(y=pb.y, cols=pb.cols, vals=pb.vals, term_sizes=pb.term_sizes, p=pb.p)
    x, res, _ = optimise_scaled(homo, np.asarray(theta0, float), reml, maxiter, tol)
    sd = stratum_sd(pb.y, pb.sidx, pb.n_strata)
    f = _reml.evaluate(homo, x, None, reml)
    return np.maximum(x, 0.0) * math.sqrt(f.sigma2) / sd[0]


def _pg_norm(g: np.ndarray, x: np.ndarray, K: int) -> float:
    g = np.asarray(g, float).copy()
    at0 = np.zeros_like(g, dtype=bool)
    at0[:K] = (x[:K] <= 0) & (g[:K] > 0)
    g[at0] = 0.0
    return float(np.max(np.abs(g))) if g.size else 0.0


def _eta_start(pb: _reml.Problem) -> np.ndarray:
    """log SD ratios from within-stratum spread of the response (around cell means)."""
    sd = stratum_sd(pb.y, pb.sidx, pb.n_strata)
    return np.log(sd[1:] / sd[0])


@dataclass
class MixedState:
    """What a :class:`MixedResult` keeps of its fit for later computations (Satterthwaite df,
    marginal means, profiles, bootstrap): the deviance function's problem and the optimum.

    ``theta`` and ``eta`` are in the deviance function's parametrisation (terms in ``order``,
    log SD ratios relative to the internal reference stratum); ``sigma`` is the residual SD of
    that reference; ``vcov`` the covariance of the fixed effects. Item access
    (``state["vcov"]``) is kept for code written against the former dict.
    """

    problem: _reml.Problem
    theta: np.ndarray
    eta: np.ndarray | None
    sigma: float
    vcov: np.ndarray
    levels: dict[str, list[str]]
    codes: dict[str, np.ndarray]
    order: list[int]
    data: pd.DataFrame | None
    fixed_terms: list[str]
    design: MixedDesign | None = None
    devfun: DevianceFunction | None = None
    optimum: Optimum | None = None

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


