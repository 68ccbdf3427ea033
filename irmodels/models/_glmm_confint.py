"""Confidence intervals of a GLMM: ``GlmmResult.confint(method=...)``.

The parameters are lme4's (``confint.merMod``; Bates, Maechler, Bolker & Walker, J. Stat. Softw.
67(1), 2015, section 5.1): the SD of each random effect (and the correlations of a term with
slopes) on the latent scale, then the fixed effects; a beta fit adds its precision ``phi``
(glmmTMB's ``sigma``).

- ``"wald"``: ``estimate +- z se`` for the fixed effects (``se`` from :attr:`GlmmResult.vcov`),
  NaN for the variance parameters and ``phi``, as lme4's ``confint(method = "Wald")``.
- ``"profile"``: the deviance the fit minimised (Laplace or adaptive quadrature; lme4's
  ``devfun`` of stage 2 over ``theta`` and ``beta``, glmmTMB's objective for the beta family)
  as a function of one parameter, minimised over all the others (SDs and correlations in lme4's
  parametrisation, ``log phi`` free); the bounds solve ``zeta(v) = sign(v - v_hat) sqrt(dev(v)
  - dev_hat) = +-z``. lme4 interpolates ``zeta`` on a grid with splines (precise to ~1e-4 on
  ``cbpp``); each bound here is a root found to 1e-8 relative, and equals the exact profile
  bound of glmer's deviance (solved by root-finding in R) to 2e-9 on ``cbpp``. The inner
  minimisations use the engine's exact gradient of the Laplace deviance (binomial, Poisson;
  carried to the SDs and correlations by the Jacobian of theta), central differences
  otherwise (quadrature, beta), and start from the previous point's optimum and the estimates
  (and, for a term with correlations, from each correlation at -0.5 and 0.5: the deviance can
  have a minimum on each side). A bound the profile does not reach is the parameter's limit
  (0 for an SD, -1 or 1 for a correlation), as lme4 reports it. Not for ``nagq=0`` fits.
- ``"bootstrap"``: parametric bootstrap as lme4's ``bootMer`` (``u ~ N(0, I)``,
  ``b = Lambda(theta) u``, the response drawn from the family at ``mu = linkinv(offset + X beta
  + Z b)``: binomial successes out of the trials, Poisson counts, beta scores), each response
  refitted by the same criterion, percentile intervals (``numpy.quantile``, R's type 7);
  replicates through :func:`irmodels.parallel.map` with seeds from
  :func:`irmodels.parallel.spawn_seeds` (a seed gives the same intervals on every backend).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from irmodels import parallel
from irmodels._threads import LARGE, kernel_threads
from irmodels._validate import did_you_mean
from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
)
from irmodels.models._glmm import GlmmDeviance
from irmodels.models._lmm_confint import VarParams
from irmodels.models._mixed_confint import CONFINT_COLUMNS

__all__ = ["confint", "bootstrap_draws", "parameter_names", "simulate_response"]


def _check_level(level: Any) -> float:
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ArgumentError(
            f"level must be a probability strictly between 0 and 1; got {level!r}")
    return float(level)


class _Params:
    """The fit's parameters in lme4's parametrisation: ``[SDs/correlations, beta, (log phi)]``
    and the map to the engine's ``[theta, beta, (log phi)]``."""

    def __init__(self, fit: Any) -> None:
        d = fit._design.lmm
        self.vp = VarParams(d, None)
        self.kinds = self.vp.kinds[:-1]  # no residual SD in a GLMM
        names = self.vp.names[:-1]
        if all(b.columns == ["(Intercept)"] for b in d.blocks):
            names = [b.group for b in d.blocks]  # as variance_components() (and MixedResult)
        self.var_names = names
        self.nv = len(names)
        self.fixed_names = list(fit.fixed_estimates.index)
        self.p = len(self.fixed_names)
        self.extra = 1 if fit.phi is not None else 0
        self.names = names + self.fixed_names + (["phi"] if self.extra else [])
        self.nt = d.n_theta

    def from_x(self, x: np.ndarray) -> np.ndarray:
        """lme4's parameters (SDs, correlations, beta, log phi) of the engine's ``x``."""
        vpar = self.vp.from_theta(x[:self.nt], 1.0)[:-1]
        return np.concatenate([vpar, x[self.nt:]])

    def to_x(self, p: np.ndarray) -> np.ndarray | None:
        theta = self.vp.to_theta(np.append(p[:self.nv], 1.0))
        if theta is None:
            return None
        return np.concatenate([theta, p[self.nv:]])

    def bounds(self) -> list[tuple[float | None, float | None]]:
        lim = {"sd": (0.0, None), "cor": (-1.0, 1.0)}
        return [lim[k] for k in self.kinds] + [(None, None)] * (self.p + self.extra)


def parameter_names(fit: Any) -> list[str]:
    """Row names of :meth:`GlmmResult.confint`: the SDs (named by grouping factor when every
    term is a random intercept, else lme4's ``sd_x|g`` / ``cor_x.y|g``), the fixed effects,
    then ``phi`` for the beta family."""
    return _Params(fit).names


def _wanted(fit: Any, parm: Sequence[str] | str | None) -> set[str]:
    every = parameter_names(fit)
    if parm is None:
        return set(every)
    parm = [parm] if isinstance(parm, str) else list(parm)
    unknown = [p for p in parm if p not in every]
    if unknown:
        raise DataFormatError(
            f"confint(parm=...) names unknown parameter(s) {', '.join(map(repr, unknown))}; "
            f"the model has {', '.join(every)}")
    return set(parm)


def _frame(names: list[str], rows: list[tuple[float, float]]) -> pd.DataFrame:
    arr = np.array(rows, dtype=float).reshape(len(rows), 2)
    return pd.DataFrame(arr, columns=list(CONFINT_COLUMNS),
                        index=pd.Index(names, name="parameter"))


# --------------------------------------------------------------------------------------------
# Wald


def wald_intervals(fit: Any, level: float, wanted: set[str]) -> pd.DataFrame:
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    pr = _Params(fit)
    est = fit.fixed_estimates.to_numpy()
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    names, rows = [], []
    for j, name in enumerate(pr.names):
        if name not in wanted:
            continue
        names.append(name)
        k = j - pr.nv
        rows.append((est[k] - z * se[k], est[k] + z * se[k]) if 0 <= k < pr.p
                    else (math.nan, math.nan))
    return _frame(names, rows)


# --------------------------------------------------------------------------------------------
# profile


class _Profile:
    """The fit's deviance in lme4's parametrisation with one parameter held fixed."""

    def __init__(self, fit: Any) -> None:
        self.pr = _Params(fit)
        self.dev = GlmmDeviance(fit._design)
        self.dev.u_last = fit._fit.mode.u.copy()
        x = np.asarray(fit._fit.x, float)
        self.p_hat = self.pr.from_x(x)
        self.dev_hat = float(self.dev(x))
        self.bnds = self.pr.bounds()
        self.last: dict[int, np.ndarray] = {}
        # the engine's exact gradient of the Laplace deviance (binomial, Poisson), carried to
        # lme4's parameters by the Jacobian of theta in the SDs and correlations (the identity
        # when every term is a random intercept: sd = theta)
        self.scalar = all(b.q == 1 for b in fit._design.lmm.blocks)
        self.vg = (self._vg if fit.nagq == 1 and getattr(self.dev, "exact", None) is not None
                   and hasattr(self.dev, "vg") else None)

    def _vg(self, p: np.ndarray) -> tuple[float, np.ndarray]:
        pr = self.pr
        if self.scalar:
            return self.dev.vg(p)
        x = pr.to_x(p)
        if x is None:
            return math.inf, np.zeros(len(p))
        val, gx = self.dev.vg(x)
        nv, nt = pr.nv, pr.nt
        J = np.empty((nt, nv))  # d theta / d (sd, cor): central differences inside the bounds
        for i in range(nv):
            lo, hi = self.bnds[i]
            h = 1e-6 * max(1.0, abs(p[i]))
            a = max(p[i] - h, lo) if lo is not None else p[i] - h
            b = min(p[i] + h, hi) if hi is not None else p[i] + h
            pa, pb = p.copy(), p.copy()
            pa[i], pb[i] = a, b
            ta, tb = pr.to_x(pa), pr.to_x(pb)
            if ta is None or tb is None or b == a:
                return math.inf, np.zeros(len(p))
            J[:, i] = (tb[:nt] - ta[:nt]) / (b - a)
        return val, np.concatenate([J.T @ gx[:nt], gx[nt:]])

    def deviance(self, p: np.ndarray) -> float:
        x = self.pr.to_x(p)
        if x is None:
            return math.inf
        return float(self.dev(x))

    def at(self, k: int, v: float) -> float:
        """The deviance minimised over every parameter but ``k``, held at ``v``."""
        idx = [i for i in range(len(self.p_hat)) if i != k]
        x0 = self.last.get(k, np.delete(self.p_hat, k))

        def f(y: np.ndarray) -> float:
            return self.deviance(np.insert(y, k, v))

        bnds = [self.bnds[i] for i in idx]
        if not idx:
            return f(np.zeros(0))
        lo = np.array([-np.inf if b[0] is None else b[0] for b in bnds])
        hi = np.array([np.inf if b[1] is None else b[1] for b in bnds])

        def grad(y: np.ndarray) -> np.ndarray:
            # central differences (PIRLS leaves ~1e-10 noise in the deviance: forward
            # differences at scipy's default step would lose the gradient in it)
            g = np.empty_like(y)
            for i in range(len(y)):
                h = 1e-5 * max(1.0, abs(y[i]))
                yp, ym = y.copy(), y.copy()
                yp[i] = min(y[i] + h, hi[i])
                ym[i] = max(y[i] - h, lo[i])
                g[i] = (f(yp) - f(ym)) / (yp[i] - ym[i])
            return g

        fun: Callable[[np.ndarray], Any] = f
        jac: Any = grad
        if self.vg is not None:
            vg = self.vg

            def fun(y: np.ndarray) -> tuple[float, np.ndarray]:
                val, g = vg(np.insert(y, k, v))
                return val, np.delete(g, k)

            jac = True
        starts = [x0, np.delete(self.p_hat, k)]
        cors = [j for j, i in enumerate(idx) if i < self.pr.nv and self.pr.kinds[i] == "cor"]
        for c in (-0.5, 0.5):  # the deviance can have a minimum on each side of a correlation
            for j in cors:
                s0 = starts[1].copy()
                s0[j] = c
                starts.append(s0)
        tight = {"ftol": 1e-15, "gtol": 1e-7, "maxiter": 2000}
        best, xb = math.inf, x0
        for n, start in enumerate(starts):
            with np.errstate(all="ignore"):
                # with correlations, the starts after the warm one look for another basin: a
                # loose search each, polished to the tight tolerance only where it goes lower
                loose = bool(cors) and n > 0
                r = optimize.minimize(fun, start, jac=jac, method="L-BFGS-B", bounds=bnds,
                                      options={"ftol": 1e-10, "gtol": 1e-4, "maxiter": 2000}
                                      if loose else tight)
                if loose and r.fun < best:
                    r = optimize.minimize(fun, r.x, jac=jac, method="L-BFGS-B", bounds=bnds,
                                          options=tight)
            if r.fun < best:
                best, xb = float(r.fun), r.x
            if not cors and best - self.dev_hat < 50:  # the warm start served
                break
        self.last[k] = np.asarray(xb, float)
        return best


def _bounds(dev_at: Callable[[float], float], dev_hat: float, est: float, step: float, z: float,
            lower: float | None, upper: float | None) -> tuple[float, float]:
    """Solve ``zeta(v) = +-z`` on both sides of ``est`` (a limit where the profile stays
    below ``z``)."""
    def zeta(v: float) -> float:
        d = dev_at(v) - dev_hat
        return math.copysign(math.sqrt(max(d, 0.0)), v - est)

    out = []
    for sign, lim in ((-1.0, lower), (1.0, upper)):
        a, h = est, step
        found = False
        for _ in range(60):
            b = est + sign * h
            if lim is not None and sign * (b - lim) >= 0:
                b = lim
                if sign * zeta(b) < z:
                    out.append(lim)
                    found = True
                    break
            if sign * zeta(b) >= z:
                g = lambda v, s=sign: s * zeta(v) - z  # noqa: E731
                xt = 1e-8 * max(abs(est), abs(step), 1e-3)
                out.append(float(optimize.brentq(g, min(a, b), max(a, b), xtol=xt)))
                found = True
                break
            if b == lim:
                break
            a, h = b, 2 * h
        if not found:
            out.append(sign * math.inf if lim is None else lim)
    return out[0], out[1]


def profile_intervals(fit: Any, level: float, wanted: set[str]) -> pd.DataFrame:
    if fit.nagq == 0:
        raise ArgumentError("profile intervals need the deviance the fit minimised over theta "
                            "and beta; a nagq=0 fit takes beta from PIRLS (lme4's nAGQ = 0). "
                            "Refit with nagq=1, or use method='wald' or 'bootstrap'.")
    pf = _Profile(fit)
    pr = pf.pr
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    names, rows = [], []
    for k, name in enumerate(pr.names):
        if name not in wanted:
            continue
        est = float(pf.p_hat[k])
        if k < pr.nv:
            kind = pr.kinds[k]
            if kind == "cor":
                step, lo, hi = 0.2, -1.0, 1.0
            else:
                step, lo, hi = (0.3 * est if est > 1e-3 else 0.1), 0.0, None
            lim_lo, lim_hi = _bounds(partial(pf.at, k), pf.dev_hat, est, step, z,
                                     lo, hi)
        elif k < pr.nv + pr.p:
            j = k - pr.nv
            lim_lo, lim_hi = _bounds(partial(pf.at, k), pf.dev_hat, est, z * se[j],
                                     z, None, None)
        else:  # log phi profiled; the bounds reported on the phi scale
            lim_lo, lim_hi = _bounds(partial(pf.at, k), pf.dev_hat, est, 0.2, z,
                                     None, None)
            lim_lo, lim_hi = math.exp(lim_lo), math.exp(lim_hi)
        names.append(name)
        rows.append((lim_lo, lim_hi))
    return _frame(names, rows)


# --------------------------------------------------------------------------------------------
# parametric bootstrap


def simulate_response(fit: Any, rng: np.random.Generator) -> np.ndarray:
    """One response drawn from the fitted model (lme4's ``simulate``, new random effects), on
    the scale of the formula's response (binomial: successes out of the trials)."""
    gd = fit._design
    d = gd.lmm
    u = rng.standard_normal(d.Z.shape[1])
    b = d.Lambda(fit.theta) @ u
    eta = gd.offset + d.X @ fit.fixed_estimates.to_numpy() + d.Z @ b
    mu = gd.family.link.linkinv(eta)
    if fit.family == "binomial":
        n = np.rint(gd.weights).astype(np.int64)
        return rng.binomial(n, np.clip(mu, 0.0, 1.0)).astype(float)
    if fit.family == "poisson":
        return rng.poisson(mu).astype(float)
    sim = getattr(gd.family, "simulate", None)
    if sim is None:
        raise ArgumentError(f"the {fit.family} family cannot simulate responses; the parametric "
                            "bootstrap is not available for it. Use method='profile'.")
    return np.asarray(sim(mu, gd.weights, fit.phi, rng), dtype=float)


def _boot_chunk(args: tuple) -> np.ndarray:
    """Re-estimates of one chunk of replicates (rows: lme4's parameters of
    :func:`parameter_names`, phi on its own scale); a failed refit gives a row of NaN."""
    fit, seed, n = args
    rng = np.random.default_rng(seed)
    pr = _Params(fit)
    out = np.full((n, len(pr.names)), np.nan)
    for r in range(n):
        y = simulate_response(fit, rng)
        try:
            # scipy's optimisers and numpy warn (RuntimeWarning: overflow or invalid values,
            # LinAlgWarning) on some simulated responses; harmless: a failed refit is a NaN row.
            # The refit's own singular or convergence warnings are off (warn=False).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rf = fit._refit(y=y, warn=False)
        except (ConvergenceError, DataFormatError, DesignError, np.linalg.LinAlgError,
                ValueError, FloatingPointError):
            continue
        p = pr.from_x(np.asarray(rf._fit.x, float))
        if pr.extra:
            p[-1] = math.exp(p[-1])
        out[r] = p
    return out


def bootstrap_draws(fit: Any, n_resamples: int, seed: Any, backend: Any = "serial",
                    n_workers: int | None = None, chunk: int = 25) -> pd.DataFrame:
    """Parametric-bootstrap re-estimates: one row per replicate, one column per parameter of
    :func:`parameter_names` (``phi`` on its own scale); failed refits are NaN."""
    if isinstance(n_resamples, (bool, np.bool_)) or not isinstance(
            n_resamples, (int, np.integer)) or n_resamples < 2:
        raise ArgumentError(f"n_resamples must be an integer >= 2; got {n_resamples!r}")
    if fit.spec.transform is not None:
        raise ArgumentError(f"the parametric bootstrap simulates the response itself; the "
                            f"formula transforms it ({fit.spec.response_label}). Fit the "
                            "untransformed response, or use method='profile'.")
    sizes = [min(chunk, n_resamples - i) for i in range(0, n_resamples, chunk)]
    seeds = parallel.spawn_seeds(seed, len(sizes))
    parts = parallel.map(_boot_chunk, [(fit, s, n) for s, n in zip(seeds, sizes)],
                         backend=backend, n_workers=n_workers, progress=False)
    return pd.DataFrame(np.vstack(parts), columns=parameter_names(fit))


def bootstrap_intervals(fit: Any, level: float, wanted: set[str], n_resamples: int, seed: Any,
                        backend: Any, n_workers: int | None) -> pd.DataFrame:
    draws = bootstrap_draws(fit, n_resamples, seed, backend, n_workers)
    ok = draws.notna().all(axis=1)
    if not ok.all():
        warnings.warn(f"{int((~ok).sum())} of {n_resamples} bootstrap refits failed and were "
                      "left out", ConvergenceWarning, stacklevel=4)
    if ok.sum() < 2:
        raise ConvergenceError(f"only {int(ok.sum())} of {n_resamples} bootstrap refits "
                               "succeeded; no interval. Use method='profile'.")
    d = draws.loc[ok]
    a = (1.0 - level) / 2.0
    names = [c for c in d.columns if c in wanted]
    rows = [(float(np.quantile(d[c], a)), float(np.quantile(d[c], 1.0 - a))) for c in names]
    return _frame(names, rows)


def confint(fit: Any, method: str = "profile", level: float = 0.95,
            parm: Sequence[str] | str | None = None, n_resamples: int = 500, seed: Any = 0,
            backend: Any = "serial", n_workers: int | None = None) -> pd.DataFrame:
    """:meth:`GlmmResult.confint` (see there)."""
    level = _check_level(level)
    methods = ("profile", "bootstrap", "wald")
    if method not in methods:
        raise ArgumentError(f"method must be 'profile', 'bootstrap' or 'wald'; got {method!r}"
                            + did_you_mean(str(method), methods))
    wanted = _wanted(fit, parm)
    # one BLAS thread (as the GLMM fit): the refits' small q x q solves, set once per call
    with kernel_threads(LARGE - 1):
        if method == "wald":
            return wald_intervals(fit, level, wanted)
        if method == "profile":
            return profile_intervals(fit, level, wanted)
        return bootstrap_intervals(fit, level, wanted, n_resamples, seed, backend, n_workers)
