"""Bivariate parametric copulas, fitted and selected the way VineCopula's ``BiCopSelect`` does.

The families and their numbers are VineCopula's: 0 independence, 1 Gaussian, 2 Student t,
3 Clayton, 4 Gumbel, 5 Frank, 6 Joe; 13, 14, 16 the survival (180 degree) Clayton, Gumbel,
Joe; 23, 24, 26 their 90 degree and 33, 34, 36 their 270 degree rotations (negative
dependence, negative parameters). A 90 degree rotation has density ``c(1 - u1, u2; -par)``,
a 270 degree one ``c(u1, 1 - u2; -par)``, a survival one ``c(1 - u1, 1 - u2; par)``.

Every function works on many pairs at once: ``u1`` and ``u2`` are ``n x P`` arrays (P
pairs of n pseudo-observations) and parameters are length-P vectors.

- :func:`fit_family`: maximum likelihood over VineCopula's bounds (one-parameter families:
  the maximum of the log-likelihood on the bounded interval, as R's ``optimize`` in
  ``BiCopEst(method = "mle")``; the t: rho in [-0.9999, 0.9999] and nu in [2.0001, 30]).
- :func:`select_families`: ``BiCopSelect(u1, u2, selectioncrit = "AIC")``'s choice: the
  families pre-selected by the sign of Kendall's tau and the asymmetry of the normal scores'
  correlation in the two tails (``presel = TRUE``), the smallest AIC among them.
- :func:`simulate`: ``n`` draws of each pair's copula (``u2`` by the inverse h-function).

The asymmetric (not exchangeable) Tawn families of positive dependence are implemented too:
104 (type 1: ``C(u, v) = exp(-l(x, y))``, ``x = -log u``, ``y = -log v``, ``l = (1 - psi) x
+ ((psi x)^theta + y^theta)^(1/theta)``, par = theta in [1.001, 20], par2 = psi), 204 (type
2: psi on y instead) and their survival versions 114, 214; their MLE keeps VineCopula's bounds
``psi in [max(tau - 0.1, 1e-4), min(tau + 0.2, 0.99)]``. VineCopula's BB1, BB6, BB7, BB8
families (7-10, 17-20, 27-30, 37-40) and the Tawn families of negative dependence (124, 134,
224, 234) are not; :data:`FAMILIES` lists those that are, and :func:`select_families` chooses
among them only.

References: VineCopula (T. Nagler, U. Schepsmeier, J. Stoeber, E. C. Brechmann, B. Graeler,
T. Erhardt), ``R/BiCopSelect.R``, ``R/BiCopEst.R``, ``R/preprocessors.R``; H. Joe,
"Dependence modeling with copulas", 2014, chapter 4.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from irmodels.replicates._fdiff import forward_differences as _forward_differences

__all__ = ["FAMILIES", "fit_family", "kendall_tau", "log_density", "pseudo_observations",
           "select_families", "simulate"]

#: Family number -> (name, base family, rotation in degrees).
FAMILIES: dict[int, tuple[str, int, int]] = {
    0: ("independence", 0, 0), 1: ("gaussian", 1, 0), 2: ("t", 2, 0),
    3: ("clayton", 3, 0), 4: ("gumbel", 4, 0), 5: ("frank", 5, 0), 6: ("joe", 6, 0),
    13: ("clayton", 3, 180), 14: ("gumbel", 4, 180), 16: ("joe", 6, 180),
    23: ("clayton", 3, 90), 24: ("gumbel", 4, 90), 26: ("joe", 6, 90),
    33: ("clayton", 3, 270), 34: ("gumbel", 4, 270), 36: ("joe", 6, 270),
    104: ("tawn1", 104, 0), 114: ("tawn1", 104, 180), 204: ("tawn2", 204, 0),
    214: ("tawn2", 204, 180),
}
#: VineCopula's short names (``BiCopName(family, short = TRUE)``).
SHORT_NAMES = {0: "I", 1: "N", 2: "t", 3: "C", 4: "G", 5: "F", 6: "J", 13: "SC", 14: "SG",
               16: "SJ", 23: "C90", 24: "G90", 26: "J90", 33: "C270", 34: "G270", 36: "J270",
               104: "Tawn", 114: "Tawn180", 204: "Tawn2", 214: "Tawn2_180"}
# VineCopula's sets (R/BiCop.R), restricted to the families implemented here
_POS = (1, 2, 3, 4, 5, 6, 13, 14, 16, 104, 114, 204, 214)
_NEG = (1, 2, 5, 23, 24, 26, 33, 34, 36)
_F11 = (13, 4, 6, 104, 204)  # more dependence near (1, 1)
_F00 = (3, 14, 16, 114, 214)  # near (0, 0)
_TAWN = (104, 114, 204, 214)
_F10 = (23, 34, 36)  # near (1, 0)
_F01 = (33, 24, 26)  # near (0, 1)
# VineCopula's bounds of the MLE (R/BiCopEst.R, MLE_intern), for the base families
_BOUNDS = {1: (-0.9999, 0.9999), 3: (1e-4, 28.0), 4: (1.0001, 17.0), 5: (-35.0, 35.0),
           6: (1.0001, 30.0)}
_NU = (2.0001, 30.0)
_GOLD = (math.sqrt(5.0) - 1.0) / 2.0
_TINY = 1e-300


def pseudo_observations(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ranks / (n + 1) of every column, ties broken at random (VineCopula's ``pobs(x,
    ties.method = "random")``)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    jitter = rng.random(X.shape)
    order = np.lexsort((jitter, X), axis=0) if X.ndim == 1 else np.stack(
        [np.lexsort((jitter[:, j], X[:, j])) for j in range(X.shape[1])], axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, n + 1)[:, None] if X.ndim > 1
                      else np.arange(1, n + 1), axis=0)
    return ranks / (n + 1.0)


def kendall_tau(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of every column pair (``n x P``)."""
    u1, u2 = np.atleast_2d(u1.T).T, np.atleast_2d(u2.T).T
    n, P = u1.shape
    num = np.zeros(P)
    t1 = np.zeros(P)
    t2 = np.zeros(P)
    for i in range(n - 1):
        s1 = np.sign(u1[i + 1:] - u1[i])
        s2 = np.sign(u2[i + 1:] - u2[i])
        num += (s1 * s2).sum(axis=0)
        t1 += (s1 != 0).sum(axis=0)
        t2 += (s2 != 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((t1 > 0) & (t2 > 0), num / np.sqrt(t1 * t2), 0.0)


# --------------------------------------------------------------------------------------------
# log densities of the base families (par > 0 or the family's own range)


def _log_base(base: int, u: np.ndarray, v: np.ndarray, par: np.ndarray,
              par2: np.ndarray | None = None) -> np.ndarray:
    if base == 0:
        return np.zeros(np.broadcast(u, v).shape)
    second = np.zeros(1) if par2 is None else par2  # the t's nu, the Tawn's psi
    if base == 1:
        x, y = special.ndtri(u), special.ndtri(v)
        r2 = 1.0 - par**2
        return (-0.5 * np.log(r2) - (par**2 * (x**2 + y**2) - 2 * par * x * y) / (2 * r2))
    if base == 2:
        nu = second
        x, y = special.stdtrit(nu, u), special.stdtrit(nu, v)
        r2 = 1.0 - par**2
        lg = (special.gammaln((nu + 2) / 2) + special.gammaln(nu / 2)
              - 2 * special.gammaln((nu + 1) / 2))
        return (lg - 0.5 * np.log(r2)
                - (nu + 2) / 2 * np.log1p((x**2 + y**2 - 2 * par * x * y) / (nu * r2))
                + (nu + 1) / 2 * (np.log1p(x**2 / nu) + np.log1p(y**2 / nu)))
    if base == 3:
        lu, lv = np.log(u), np.log(v)
        s = np.expm1(-par * lu) + np.expm1(-par * lv) + 1.0  # u^-t + v^-t - 1
        return np.log1p(par) - (1 + par) * (lu + lv) - (2 + 1 / par) * np.log(s)
    if base == 4:
        x, y = -np.log(u), -np.log(v)
        lx, ly = np.log(x), np.log(y)
        m = np.maximum(lx, ly)
        s_log = par * m + np.log(np.exp(par * (lx - m)) + np.exp(par * (ly - m)))  # log s
        A = np.exp(s_log / par)
        return (-A + x + y + (par - 1) * (lx + ly) + (2 / par - 2) * s_log
                + np.log(A + par - 1) - s_log / par)
    if base == 5:
        t = np.where(np.abs(par) < 1e-10, 1e-10, par)
        # c = t (1 - e^-t) e^{-t(u+v)} / [(1 - e^-t) - (1 - e^{-tu})(1 - e^{-tv})]^2
        a = -np.expm1(-t)
        # (1 - e^-t) - (1 - e^-tu)(1 - e^-tv) as a sum of two terms of one sign
        den = (np.exp(-t * u) * -np.expm1(-t * v)) + np.exp(-t * v) * -np.expm1(-t * (1 - v))
        return np.log(np.abs(t * a)) - t * (u + v) - 2 * np.log(np.abs(den))
    if base in (104, 204):
        x, y = -np.log(u), -np.log(v)
        p1, p2 = (second, 1.0) if base == 104 else (1.0, second)
        s = (p1 * x) ** par + (p2 * y) ** par
        lx = (1 - p1) + p1**par * x ** (par - 1) * s ** (1 / par - 1)
        ly = (1 - p2) + p2**par * y ** (par - 1) * s ** (1 / par - 1)
        lxy = (1 - par) * (p1 * p2) ** par * (x * y) ** (par - 1) * s ** (1 / par - 2)
        ell = (1 - p1) * x + (1 - p2) * y + s ** (1 / par)
        return -ell + x + y + np.log(lx * ly - lxy)
    if base == 6:
        lub, lvb = np.log1p(-u), np.log1p(-v)
        a, b = np.exp(par * lub), np.exp(par * lvb)
        s = a + b - a * b
        return ((1 / par - 2) * np.log(s) + (par - 1) * (lub + lvb)
                + np.log(par - 1 + s))
    raise ValueError(base)  # pragma: no cover


def _rotate_in(rot: int, u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if rot == 90:
        return 1 - u1, u2
    if rot == 180:
        return 1 - u1, 1 - u2
    if rot == 270:
        return u1, 1 - u2
    return u1, u2


def log_density(family: int, u1: np.ndarray, u2: np.ndarray, par: np.ndarray,
                par2: np.ndarray | None = None) -> np.ndarray:
    """log c(u1, u2) of ``family`` (VineCopula's number) with parameters ``par`` (and the
    t's degrees of freedom ``par2``), elementwise (broadcasting)."""
    _, base, rot = FAMILIES[family]
    a, b = _rotate_in(rot, np.asarray(u1, float), np.asarray(u2, float))
    p = -np.asarray(par, float) if rot in (90, 270) else np.asarray(par, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = _log_base(base, a, b, p, None if par2 is None else np.asarray(par2, float))
    return out


def _loglik(family: int, u1: np.ndarray, u2: np.ndarray, par: np.ndarray,
            par2: np.ndarray | None = None) -> np.ndarray:
    ll = log_density(family, u1, u2, par, par2).sum(axis=0)
    return np.where(np.isfinite(ll), ll, -1e10)


def _golden_max(f, lo: np.ndarray, hi: np.ndarray, tol: float = 1e-10,
                max_iter: int = 200) -> np.ndarray:
    """Vectorized golden-section search for the maximum of f on [lo, hi] (elementwise)."""
    lo, hi = lo.astype(float).copy(), hi.astype(float).copy()
    for _ in range(max_iter):
        if np.all(hi - lo <= tol * (1 + np.abs(lo))):
            break
        c = hi - _GOLD * (hi - lo)
        d = lo + _GOLD * (hi - lo)
        left = f(c) >= f(d)  # the maximum is in [lo, d]
        hi = np.where(left, d, hi)
        lo = np.where(left, lo, c)
    return (lo + hi) / 2


def _bounds(family: int) -> tuple[float, float]:
    _, base, rot = FAMILIES[family]
    lo, hi = _BOUNDS[base]
    return (-hi, -lo) if rot in (90, 270) else (lo, hi)


def fit_family(family: int, u1: np.ndarray, u2: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum likelihood fit of ``family`` to every column pair of ``u1``, ``u2`` (``n x
    P``): ``(par, par2, loglik)``, length-P arrays (``par2`` is 0 but for the t)."""
    u1, u2 = np.atleast_2d(u1.T).T, np.atleast_2d(u2.T).T
    P = u1.shape[1]
    zeros = np.zeros(P)
    if family == 0:
        return zeros, zeros, zeros.copy()
    if family == 2:
        return _fit_t(u1, u2)
    if family in _TAWN:
        return _fit_tawn(family, u1, u2)
    lo, hi = _bounds(family)

    def f(p: np.ndarray) -> np.ndarray:
        return _loglik(family, u1, u2, p)

    par = _golden_max(f, np.full(P, lo), np.full(P, hi))
    for end in (lo, hi):  # a maximum on the bound
        e = np.full(P, end)
        better = f(e) > f(par)
        par = np.where(better, e, par)
    return par, zeros, f(par)


_Quantiles = Callable[[np.ndarray], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]


def _t_quantiles(u1: np.ndarray, u2: np.ndarray) -> _Quantiles:
    """``nu -> ((x, x**2, log1p(x**2 / nu)), (y, ...))`` for ``x = stdtrit(nu, u1)``, ``y =
    stdtrit(nu, u2)`` (``n x P``; nu: length P).

    stdtrit is most of the t copula's fit. Pseudo-observations take the same n values in
    every column, and the golden-section search gives many pairs the same nu: then each
    quantile is computed once per distinct (value, nu) and gathered. Every element is still
    the same function of the same two numbers, so the result is bit for bit the elementwise
    one, in the memory layout the elementwise ufuncs would have given it."""
    n, P = u1.shape
    vals, inv = np.unique(np.concatenate((u1.ravel(), u2.ravel())), return_inverse=True)
    if len(vals) >= 2 * n or np.isnan(vals).any():

        def direct(nu: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
            out = []
            for u in (u1, u2):
                x = special.stdtrit(nu, u)
                x2 = x**2
                out.append((x, x2, np.log1p(x2 / nu)))
            return out

        return direct
    inv = inv.reshape(-1)
    rows = [inv[: u1.size].reshape(u1.shape), inv[u1.size:].reshape(u2.shape)]
    probe = np.zeros(P)
    like = [np.add(probe, u1), np.add(probe, u2)]  # the layout of stdtrit(nu, u)
    grid = vals[:, None]

    def gathered(nu: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        nus, col = np.unique(nu, return_inverse=True)
        T = special.stdtrit(nus, grid)  # distinct values x distinct nu
        T2 = T**2
        L = np.log1p(T2 / nus)
        out = []
        for r, lk in zip(rows, like):
            flat = r * len(nus) + col.reshape(-1)
            parts = []
            for G in (T, T2, L):
                a = np.empty_like(lk)
                a[...] = G.ravel()[flat]
                parts.append(a)
            out.append((parts[0], parts[1], parts[2]))
        return out

    return gathered


def _fit_t(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The t copula: the profile likelihood over nu in [2.0001, 30], rho maximised inside."""
    P = u1.shape[1]
    lo_r, hi_r = np.full(P, -0.9999), np.full(P, 0.9999)
    quantiles = _t_quantiles(u1, u2)

    def inner(nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        (x, x2, lx), (y, y2, ly) = quantiles(nu)
        lg = (special.gammaln((nu + 2) / 2) + special.gammaln(nu / 2)
              - 2 * special.gammaln((nu + 1) / 2))
        sx = lx + ly
        q, xy = x2 + y2, x * y
        n = u1.shape[0]
        # the terms that do not depend on rho, once (the same operations, in the same order)
        a = (nu + 1) / 2 * sx
        b = (nu + 2) / 2
        buf = np.empty_like(xy)

        def ll(r: np.ndarray) -> np.ndarray:
            r2 = 1.0 - r**2
            # a - b log1p((q - 2 r xy) / (nu r2)), in place
            np.multiply(2 * r, xy, out=buf)
            np.subtract(q, buf, out=buf)
            np.divide(buf, nu * r2, out=buf)
            np.log1p(buf, out=buf)
            np.multiply(b, buf, out=buf)
            np.subtract(a, buf, out=buf)
            out = n * (lg - 0.5 * np.log(r2)) + buf.sum(axis=0)
            return np.where(np.isfinite(out), out, -1e10)

        r = _golden_max(ll, lo_r, hi_r, tol=1e-9)
        return r, ll(r)

    def profile(nu: np.ndarray) -> np.ndarray:
        return inner(nu)[1]

    nu = _golden_max(profile, np.full(P, _NU[0]), np.full(P, _NU[1]), tol=1e-7)
    for end in _NU:
        e = np.full(P, end)
        nu = np.where(profile(e) > profile(nu), e, nu)
    r, ll = inner(nu)
    return r, nu, ll


def _fit_tawn(family: int, u1: np.ndarray, u2: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Tawn family, pair by pair as VineCopula's ``MLE_intern_Tawn``: a local optimiser (SLSQP;
    VineCopula: L-BFGS-B) from theta =
    1 + 6 |tau|, psi = min(|tau| + 0.1, 0.999) (moved inside the bounds), theta in [1.001, 20],
    psi in [max(tau - 0.1, 1e-4), min(tau + 0.2, 0.99)]."""
    P = u1.shape[1]
    tau = kendall_tau(u1, u2)
    theta, psi, ll = np.ones(P), np.zeros(P), np.full(P, -1e10)
    _, base, rot = FAMILIES[family]
    A, B = _rotate_in(rot, u1, u2)
    X, Y = -np.log(A), -np.log(B)
    if base == 204:  # type 2 is type 1 with the arguments swapped
        X, Y = Y, X
    for j in range(P):
        x, y = X[:, j], Y[:, j]
        lxy0 = np.log(x * y)
        bounds = [(1.001, 20.0), (max(tau[j] - 0.1, 1e-4), min(tau[j] + 0.2, 0.99))]
        if bounds[1][0] > bounds[1][1]:  # tau below -0.1 or above 1.09: no feasible psi
            continue
        start = np.array([min(max(1 + 6 * abs(tau[j]), 1.001), 20.0),
                          min(max(min(abs(tau[j]) + 0.1, 0.999), bounds[1][0]), bounds[1][1])])

        def nll(p: np.ndarray, x: np.ndarray = x, y: np.ndarray = y,
                lxy0: np.ndarray = lxy0) -> float:
            t, q = p
            px = q * x
            s = px**t + y**t
            r = s ** (1 / t)
            lx = (1 - q) + q * (px / r) ** (t - 1)
            ly = (y / r) ** (t - 1)
            lxy = (1 - t) * q**t * np.exp((t - 1) * lxy0 + (1 / t - 2) * np.log(s))
            v = np.sum(-(1 - q) * x - r + x + y + np.log(lx * ly - lxy))
            return -v if np.isfinite(v) else 1e10

        # SLSQP: scipy's L-BFGS-B takes milliseconds per step on this 2-parameter problem.
        # The gradient: SLSQP's own forward differences, computed here without scipy's
        # per-call overhead (most of the fit's time); not when psi is fixed (lb == ub), where
        # scipy drops the fixed variable before differencing.
        fun, jac = (_forward_differences(nll, bounds) if bounds[1][0] < bounds[1][1]
                    else (nll, None))
        res = optimize.minimize(fun, start, method="SLSQP", jac=jac, bounds=bounds,
                                options={"ftol": 1e-12, "maxiter": 500})
        theta[j], psi[j] = res.x
    if P:
        ll = np.where(theta > 1, _loglik(family, u1, u2, theta, psi), ll)
    return theta, psi, ll


def _presel(u1: np.ndarray, u2: np.ndarray, tau: np.ndarray) -> list[tuple[int, ...]]:
    """VineCopula's ``todo_fams_presel``: the candidate families of every pair."""
    x, y = special.ndtri(u1), special.ndtri(u2)
    out: list[tuple[int, ...]] = []

    def cor(mask: np.ndarray, j: int) -> float:
        if mask.sum() < 2:
            return math.nan
        a, b = x[mask, j], y[mask, j]
        if a.std() == 0 or b.std() == 0:
            return math.nan
        return float(np.corrcoef(a, b)[0, 1])

    for j, t in enumerate(tau):
        if t > 0:
            c11, c00 = cor((x[:, j] > 0) & (y[:, j] > 0), j), cor((x[:, j] < 0) & (y[:, j] < 0), j)
            if math.isnan(c11) or math.isnan(c00):
                todo: tuple[int, ...] = (0,) + _POS
            elif c11 - c00 > 0.3:
                todo = (0, 2) + _F11
            elif c11 - c00 > 0.05:
                todo = (0, 1, 2, 5) + _F11
            elif c11 - c00 < -0.3:
                todo = (0, 2) + _F00
            elif c11 - c00 < -0.05:
                todo = (0, 1, 2, 5) + _F00
            else:
                todo = (0,) + _POS
        elif t < 0:
            c10, c01 = cor((x[:, j] > 0) & (y[:, j] < 0), j), cor((x[:, j] < 0) & (y[:, j] > 0), j)
            if math.isnan(c10) or math.isnan(c01):
                todo = (0,) + _NEG
            elif c10 - c01 < -0.3:
                todo = (0, 2) + _F10
            elif c10 - c01 < -0.05:
                todo = (0, 1, 2, 5) + _F10
            elif c10 - c01 > 0.3:
                todo = (0, 2) + _F01
            elif c10 - c01 > 0.05:
                todo = (0, 1, 2, 5) + _F01
            else:
                todo = (0,) + _NEG
        else:
            todo = tuple(FAMILIES)
        out.append(todo)
    return out


def select_families(u1: np.ndarray, u2: np.ndarray, *, presel: bool = True,
                    families: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """``BiCopSelect(u1, u2, selectioncrit = "AIC")`` for every column pair (``n x P``):
    ``family, par, par2, loglik, aic, tau`` (length-P arrays), among :data:`FAMILIES`.

    ``presel``: keep VineCopula's pre-selection by the sign of Kendall's tau and the tails'
    asymmetry; without it, every family of the tau's sign (and independence) is a candidate.
    ``families``: choose among these only (VineCopula's ``familyset``; default all of
    :data:`FAMILIES`). AIC is ``-2 loglik + 2 k`` (k = 0 for independence, 2 for the t and
    the Tawn families, 1 otherwise); ties go to the family listed first, as R's
    ``which.min``."""
    u1, u2 = np.atleast_2d(u1.T).T, np.atleast_2d(u2.T).T
    P = u1.shape[1]
    tau = kendall_tau(u1, u2)
    if presel:
        todo = _presel(u1, u2, tau)
    else:
        todo = [(0,) + (_POS if t > 0 else _NEG if t < 0 else tuple(FAMILIES)[1:]) for t in tau]
    allowed = set(FAMILIES if families is None else families)
    todo = [tuple(f for f in t if f in allowed) or tuple(allowed) for t in todo]
    fams = [f for f in FAMILIES if any(f in t for t in todo)]
    best = {"family": np.zeros(P, dtype=np.int64), "par": np.zeros(P), "par2": np.zeros(P),
            "loglik": np.zeros(P), "aic": np.full(P, np.inf), "tau": tau}
    # R's order: the candidates in familyset order (allfams, increasing numbers)
    order = {f: i for i, f in enumerate(sorted(FAMILIES))}
    rank = np.full(P, np.inf)
    for fam in sorted(fams, key=order.get):  # type: ignore[arg-type]
        cols = np.array([fam in t for t in todo])
        if not cols.any():
            continue
        par, par2, ll = fit_family(fam, u1[:, cols], u2[:, cols])
        k = 0 if fam == 0 else 2 if fam in (2,) + _TAWN else 1
        aic = -2 * ll + 2 * k
        idx = np.flatnonzero(cols)
        take = aic < best["aic"][idx]
        i = idx[take]
        best["family"][i], best["par"][i], best["par2"][i] = fam, par[take], par2[take]
        best["loglik"][i], best["aic"][i] = ll[take], aic[take]
        rank[i] = order[fam]
    return best


# --------------------------------------------------------------------------------------------
# simulation: u1 uniform, u2 = h^-1(w | u1)


def _hinv_base(base: int, w: np.ndarray, u: np.ndarray, par: np.ndarray,
               par2: np.ndarray) -> np.ndarray:
    """v with h(v | u) = P(V <= v | U = u) = w, for the base family (par in its own range)."""
    if base == 0:
        return w
    if base == 1:
        return special.ndtr(par * special.ndtri(u) + np.sqrt(1 - par**2) * special.ndtri(w))
    if base == 2:
        x = special.stdtrit(par2, u)
        z = special.stdtrit(par2 + 1, w) * np.sqrt((par2 + x**2) * (1 - par**2) / (par2 + 1))
        return special.stdtr(par2, z + par * x)
    if base == 3:
        inner = (w * u ** (par + 1)) ** (-par / (1 + par)) + 1 - u ** (-par)
        return inner ** (-1 / par)
    if base == 5:
        t = np.where(np.abs(par) < 1e-10, 1e-10, par)
        e_u = np.exp(-t * u)
        return -np.log1p(w * np.expm1(-t) / (w + (1 - w) * e_u)) / t
    # Gumbel, Joe, Tawn: bisection on h(v | u) (increasing in v)
    lo, hi = np.zeros_like(w), np.ones_like(w)
    for _ in range(60):
        mid = (lo + hi) / 2
        below = _h_base(base, mid, u, par, par2) < w
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def _h_base(base: int, v: np.ndarray, u: np.ndarray, par: np.ndarray,
            par2: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if base in (104, 204):  # dC/du = C l_x / u
            x, y = -np.log(u), -np.log(v)
            p1, p2 = (par2, 1.0) if base == 104 else (1.0, par2)
            s = (p1 * x) ** par + (p2 * y) ** par
            lx = (1 - p1) + p1**par * x ** (par - 1) * s ** (1 / par - 1)
            ell = (1 - p1) * x + (1 - p2) * y + s ** (1 / par)
            return np.nan_to_num(np.exp(-ell) * lx / u, nan=1.0)
        if base == 4:
            x, y = -np.log(u), -np.log(v)
            s = x**par + y**par
            A = s ** (1 / par)
            return np.nan_to_num(np.exp(-A) / u * x ** (par - 1) * s ** (1 / par - 1))
        ub, vb = 1 - u, 1 - v
        a, b = ub**par, vb**par
        return np.nan_to_num(ub ** (par - 1) * (1 - b) * (a + b - a * b) ** (1 / par - 1),
                             nan=1.0)


def simulate(family: np.ndarray, par: np.ndarray, par2: np.ndarray, n: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of each of P copulas (families, parameters: length-P arrays): ``(u1, u2)``,
    each ``n x P``."""
    family = np.asarray(family)
    P = len(family)
    u = rng.random((n, P))
    w = rng.random((n, P))
    u1, u2 = u.copy(), np.empty((n, P))
    for fam in np.unique(family):
        cols = np.flatnonzero(family == fam)
        _, base, rot = FAMILIES[int(fam)]
        p = par[cols] if rot not in (90, 270) else -par[cols]
        a = u[:, cols]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            b = _hinv_base(base, w[:, cols], a, p, par2[cols])
        b = np.clip(np.nan_to_num(b, nan=0.5), 1e-15, 1 - 1e-15)
        # (a, b) ~ base copula; rotate back
        if rot == 90:
            u1[:, cols], u2[:, cols] = 1 - a, b
        elif rot == 180:
            u1[:, cols], u2[:, cols] = 1 - a, 1 - b
        elif rot == 270:
            u1[:, cols], u2[:, cols] = a, 1 - b
        else:
            u1[:, cols], u2[:, cols] = a, b
    return u1, u2
