"""Confidence intervals of a linear mixed model: ``MixedResult.confint(method=...)``.

- ``"profile"``: likelihood-profile intervals as lme4's ``confint(method = "profile")`` (Bates et
  al., J. Stat. Softw. 67(1), 2015, section 5.1): for each parameter the ML deviance is
  minimised over all the others with the parameter held at a value ``v``; the signed square
  root ``zeta(v) = sign(v - v_hat) sqrt(dev(v) - dev_hat)`` is solved for ``zeta = +-z`` (the
  normal quantile of the level). lme4 profiles the ML deviance for REML fits too (a REML fit is
  refitted by ML for the profile), and so does this. lme4 interpolates the profile on a grid
  with splines; here each bound is a root found to 1e-10.
- ``"bootstrap"``: parametric bootstrap (lme4's ``bootMer`` and ``confint(method = "boot")``,
  percentile intervals): responses simulated from the fitted model, the model refitted by the
  same criterion, the quantiles of the re-estimates; replicates run through
  :func:`irmodels.parallel.map` with seeds from :func:`irmodels.parallel.spawn_seeds`, so a seed
  gives the same intervals on every backend.
- ``"wald"``: ``estimate +- z se`` for the fixed effects, NaN for the standard deviations (as
  lme4's ``confint(method = "Wald")``).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from irmodels import parallel
from irmodels._threads import kernel_threads
from irmodels._validate import did_you_mean
from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    ModelError,
)
from irmodels.models import _reml
from irmodels.models._mixed_optimize import optimise_scaled
from irmodels.stats.gtheory import from_fit, term_name

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models.mixed import MixedResult

#: Columns of :meth:`MixedResult.confint`.
CONFINT_COLUMNS = ("lower", "upper")


def _check_level(level: float) -> float:
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.floating)) \
            or not 0.0 < float(level) < 1.0:
        raise ArgumentError(
            f"level must be a probability strictly between 0 and 1; got {level!r}")
    return float(level)


# --------------------------------------------------------------------------------------------
# profile


def _root(g: Callable[[float], float], a: float, b: float, xtol: float = 1e-12) -> float:
    return float(optimize.brentq(g, a, b, xtol=xtol, rtol=1e-12, maxiter=200))


class _Profiler:
    """The ML deviance of one homoscedastic fit with one parameter held fixed."""

    def __init__(self, ml: MixedResult) -> None:
        st = ml._state
        self.pb: _reml.Problem = st.problem
        self.theta = np.asarray(st.theta, float)
        self.sigma = float(st.sigma)
        self.beta = ml.fixed_estimates.to_numpy()
        self.dev = float(ml.deviance)
        self.K = self.pb.K

    def _min(self, f: Callable[[np.ndarray], float], x0: np.ndarray,
             bounds: list[tuple[float | None, float | None]]) -> float:
        best = math.inf
        x = np.asarray(x0, float)
        for _ in range(3):
            with np.errstate(all="ignore"):
                res = optimize.minimize(f, x, method="L-BFGS-B", bounds=bounds,
                                        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
            if not res.fun < best - 1e-11:
                best = min(best, float(res.fun))
                break
            best, x = float(res.fun), res.x
        # The deviance is even in each theta_k: its gradient is 0 at theta_k = 0, where
        # L-BFGS-B stays (a zero component of the fit kept the residual SD's lower bound at 0.589
        # where lme4 has 0.630). Restart a component left at 0 from positive values.
        for k in range(len(x)):
            lo, hi = bounds[k]
            if not (lo == 0.0 and hi is None and x[k] < 1e-4):
                continue
            for probe in (0.01, 0.1, 0.5):
                xp = np.asarray(x, float).copy()
                xp[k] = probe
                with np.errstate(all="ignore"):
                    res = optimize.minimize(f, xp, method="L-BFGS-B", bounds=bounds,
                                            options={"ftol": 1e-15, "gtol": 1e-10,
                                                     "maxiter": 2000})
                if res.fun < best - 1e-11:
                    best, x = float(res.fun), res.x
        return best

    def sd_term(self, i: int, s: float) -> float:
        """Deviance with the SD of internal random term ``i`` held at ``s``."""
        pb, K = self.pb, self.K

        def f(x: np.ndarray) -> float:
            theta = np.maximum(x, 0.0)
            if theta[i] <= 0:
                return math.inf if s > 0 else _reml.evaluate(pb, theta, None, False).deviance
            try:
                return _reml.unprofiled(pb, theta, s / theta[i], None, False)
            except np.linalg.LinAlgError:
                return math.inf

        if s <= 0:
            def f0(x: np.ndarray) -> float:
                th = np.insert(np.maximum(x, 0.0), i, 0.0)
                return _reml.evaluate(pb, th, None, False).deviance
            x0 = np.delete(self.theta, i)
            return self._min(f0, x0, [(0.0, None)] * (K - 1)) if K > 1 else f0(x0)
        x0 = self.theta.copy()
        x0[i] = max(s / self.sigma, 1e-8)
        bounds: list[tuple[float | None, float | None]] = [(0.0, None)] * K
        bounds[i] = (1e-12, None)
        return self._min(f, x0, bounds)

    def residual(self, s: float) -> float:
        pb = self.pb

        def f(x: np.ndarray) -> float:
            try:
                return _reml.unprofiled(pb, np.maximum(x, 0.0), s, None, False)
            except np.linalg.LinAlgError:
                return math.inf

        x0 = self.theta * self.sigma / s
        return self._min(f, x0, [(0.0, None)] * self.K)

    def fixed(self, j: int, b: float) -> float:
        """Deviance with fixed effect ``j`` held at ``b`` (an offset, the column dropped)."""
        pbj, xj = self._dropped(j)
        pbj.y = self.pb.y - b * xj
        x, res, _ = optimise_scaled(pbj, self.theta.copy(), False, 2000, 1e-10)
        return float(res.fun)

    def _dropped(self, j: int) -> tuple[_reml.Problem, np.ndarray]:
        cache = self.__dict__.setdefault("_drop", {})
        if j not in cache:
            pb = self.pb
            q, K = pb.q, pb.K
            xj = np.sum(np.where(pb.cols[:, K:] == q + j, pb.vals[:, K:], 0.0), axis=1)
            if pb.p == 1:  # the only fixed effect: no fixed columns left
                pbj = _reml.Problem(y=pb.y.copy(), cols=pb.cols[:, :K].copy(),
                                    vals=pb.vals[:, :K].copy(), term_sizes=list(pb.term_sizes),
                                    p=0)
                cache[j] = (pbj, xj)
                return cache[j]
            cols = pb.cols.copy()
            vals = pb.vals.copy()
            xc = cols[:, K:]
            xv = vals[:, K:]
            hit = xc == q + j
            xj = np.sum(np.where(hit, xv, 0.0), axis=1)
            xv[hit] = 0.0
            xc[hit] = q
            xc[xc > q + j] -= 1
            cols[:, K:] = xc
            vals[:, K:] = xv
            pbj = _reml.Problem(y=pb.y.copy(), cols=cols, vals=vals,
                                term_sizes=list(pb.term_sizes), p=pb.p - 1)
            cache[j] = (pbj, xj)
        return cache[j]


def _bounds(dev_at: Callable[[float], float], dev_hat: float, est: float, step: float,
            z: float, lower_limit: float | None) -> tuple[float, float]:
    """Solve dev(v) - dev_hat = z^2 on both sides of ``est``, as ``sqrt(dev(v) - dev_hat) = z``:
    the square root (lme4's |zeta|) is close to linear in ``v`` (exactly so for a quadratic
    deviance), so Brent's interpolation steps land near the root at once."""
    xtol = 1e-12 * max(abs(est), abs(step))  # relative: the parameter has the response's scale
    # dev_at(v) is a function of v alone (each minimisation starts from the estimates, never
    # from the previous point): Brent's method re-evaluates the bracket's ends, already known
    seen: dict[float, float] = {}

    def g(v: float) -> float:
        if v not in seen:
            seen[v] = math.sqrt(max(dev_at(v) - dev_hat, 0.0)) - z
        return seen[v]

    out = []
    for sign in (-1.0, 1.0):
        a = est
        h = step
        b = est + sign * h
        found = False
        for _ in range(60):
            if lower_limit is not None and sign < 0 and b <= lower_limit:
                b = lower_limit
                if g(b) < 0:
                    out.append(lower_limit)
                    found = True
                    break
                out.append(_root(g, b, a, xtol))
                found = True
                break
            if g(b) > 0:
                out.append(_root(g, min(a, b), max(a, b), xtol))
                found = True
                break
            a = b
            h *= 2.0
            b = est + sign * h
        if not found:
            out.append(-math.inf if sign < 0 else math.inf)
    return out[0], out[1]


def profile_intervals(fit: MixedResult, level: float, parm: Sequence[str] | None
                      ) -> pd.DataFrame:
    if fit.residual is not None:
        raise ModelError(
            "profile intervals are available for homoscedastic fits (lme4's); for a "
            "heteroscedastic fit use method='bootstrap'."
        )
    ml = fit if fit.method == "ML" else fit._refit_ml()
    pr = _Profiler(ml)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    names, rows = [], []
    comp_names = list(ml.components.index)
    order = ml._state.order
    internal = {ml.spec.random[k].name: i for i, k in enumerate(order)}
    wanted = _wanted(parm, comp_names, list(ml.fixed_estimates.index))
    for name in comp_names:
        if name not in wanted:
            continue
        if name == "Residual":
            est = pr.sigma
            lo, hi = _bounds(pr.residual, pr.dev, est, 0.25 * est, z, 1e-12 * est)
        else:
            i = internal[name]
            est = float(pr.theta[i] * pr.sigma)
            step = 0.25 * est if est > 0 else 0.1 * pr.sigma
            lo, hi = _bounds(partial(pr.sd_term, i), pr.dev, est, step, z, 0.0)
        names.append(name)
        rows.append((lo, hi))
    se = np.sqrt(np.diag(ml._state.vcov))
    for j, name in enumerate(ml.fixed_estimates.index):
        if name not in wanted:
            continue
        est = float(pr.beta[j])
        lo, hi = _bounds(partial(pr.fixed, j), pr.dev, est, 0.5 * z * se[j], z, None)
        names.append(name)
        rows.append((lo, hi))
    return _frame(names, rows)


def _wanted(parm: Sequence[str] | None, comps: list[str], coefs: list[str]) -> set[str]:
    every = comps + coefs
    if parm is None:
        return set(every)
    if isinstance(parm, str):
        parm = [parm]
    unknown = [p for p in parm if p not in every]
    if unknown:
        raise DataFormatError(
            f"confint(parm=...) names unknown parameter(s) {', '.join(map(repr, unknown))}; "
            f"the model has {', '.join(every)}"
        )
    return set(parm)


def _frame(names: list[str], rows: list[tuple[float, float]]) -> pd.DataFrame:
    arr = np.array(rows, dtype=float).reshape(len(rows), 2)
    return pd.DataFrame(arr, columns=list(CONFINT_COLUMNS), index=pd.Index(names, name="parameter"))


# --------------------------------------------------------------------------------------------
# Wald


def wald_intervals(fit: MixedResult, level: float, parm: Sequence[str] | None) -> pd.DataFrame:
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    comps = list(fit.components.index)
    coefs = list(fit.fixed_estimates.index)
    wanted = _wanted(parm, comps, coefs)
    se = np.sqrt(np.diag(fit._state.vcov))
    est = fit.fixed_estimates.to_numpy()
    names = [c for c in comps if c in wanted] + [c for c in coefs if c in wanted]
    rows = [(np.nan, np.nan) for c in comps if c in wanted]
    rows += [(est[j] - z * se[j], est[j] + z * se[j]) for j, c in enumerate(coefs) if c in wanted]
    return _frame(names, rows)


# --------------------------------------------------------------------------------------------
# parametric bootstrap


def _simulate(pb: _reml.Problem, theta: np.ndarray, eta: np.ndarray | None, sigma: float,
              beta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    K, q = pb.K, pb.q
    fixed = np.sum(np.where(pb.cols[:, K:] >= q, pb.vals[:, K:], 0.0)
                   * beta[np.clip(pb.cols[:, K:] - q, 0, None)], axis=1) if pb.p else 0.0
    y = np.zeros(pb.n) + fixed
    off = 0
    for k in range(K):
        size = pb.term_sizes[k]
        b = rng.standard_normal(size) * sigma * theta[k]
        y += b[pb.cols[:, k] - off]
        off += size
    w = pb.weights(eta)
    y += rng.standard_normal(pb.n) * sigma / np.sqrt(w)
    return y


def _refit(pb: _reml.Problem, x0: np.ndarray, reml: bool) -> tuple[np.ndarray, np.ndarray,
                                                                     float, np.ndarray | None]:
    K = pb.K
    x, res, _ = optimise_scaled(pb, x0, reml, 2000, 1e-9)
    if not np.isfinite(res.fun):
        raise ConvergenceError("no finite likelihood")
    theta = np.maximum(x[:K], 0.0)
    eta = x[K:] if pb.n_strata > 1 else None
    f = _reml.evaluate(pb, theta, eta, reml)
    return theta, f.beta, f.sigma2, eta


def _boot_chunk(args: tuple) -> np.ndarray:
    """Re-estimates of one chunk of replicates (rows: SDs in internal term order, the residual
    summary SD, then the fixed effects); a failed refit gives a row of NaN."""
    pb, theta, eta, sigma, beta, reml, seed, n = args
    rng = np.random.default_rng(seed)
    K = pb.K
    out = np.full((n, K + 1 + pb.p), np.nan)
    x0 = np.concatenate([theta, eta if eta is not None else []])
    for r in range(n):
        y = _simulate(pb, theta, eta, sigma, beta, rng)
        pbr = copy.copy(pb)
        pbr.y = y
        try:
            # scipy's L-BFGS-B and numpy warn (RuntimeWarning: overflow or invalid values,
            # LinAlgWarning) on some simulated responses; harmless: a failed refit is a NaN row
            # (the refit itself raises no warning of ours)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                th, b, s2, et = _refit(pbr, x0, reml)
        except (ConvergenceError, np.linalg.LinAlgError, ValueError, FloatingPointError):
            continue
        res_var = s2 * float(np.mean(1.0 / pbr.weights(et)))
        out[r, :K] = np.sqrt(s2) * th
        out[r, K] = math.sqrt(res_var)
        out[r, K + 1:] = b
    return out


def bootstrap_draws(fit: MixedResult, n_boot: int, seed: Any, backend: Any = "serial",
                    n_workers: int | None = None, chunk: int = 25) -> pd.DataFrame:
    """Parametric-bootstrap re-estimates: one row per replicate; columns the SDs (named as in
    ``components``, ``Residual`` last among them) and the fixed effects. Failed refits are NaN."""
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 2:
        raise ArgumentError(f"n_resamples must be an integer >= 2; got {n_boot!r}")
    st = fit._state
    pb = st.problem
    sizes = [min(chunk, n_boot - i) for i in range(0, n_boot, chunk)]
    seeds = parallel.spawn_seeds(seed, len(sizes))
    units = [(pb, st.theta, st.eta, st.sigma, fit.fixed_estimates.to_numpy(),
              fit.method == "REML", s, n) for s, n in zip(seeds, sizes)]
    parts = parallel.map(_boot_chunk, units, backend=backend, n_workers=n_workers,
                         progress=False)
    draws = np.vstack(parts)
    K = pb.K
    order = st.order
    internal_names = [fit.spec.random[k].name for k in order]
    cols = {name: draws[:, i] for i, name in enumerate(internal_names)}
    frame = {name: cols[name] for name in fit.components.index if name != "Residual"}
    frame["Residual"] = draws[:, K]
    for j, name in enumerate(fit.fixed_estimates.index):
        frame[name] = draws[:, K + 1 + j]
    return pd.DataFrame(frame)


def bootstrap_intervals(fit: MixedResult, level: float, parm: Sequence[str] | None,
                        n_boot: int, seed: Any, backend: Any, n_workers: int | None
                        ) -> pd.DataFrame:
    wanted = _wanted(parm, list(fit.components.index), list(fit.fixed_estimates.index))
    draws = bootstrap_draws(fit, n_boot, seed, backend, n_workers)
    ok = draws.notna().all(axis=1)
    if not ok.all():
        warnings.warn(
            f"{int((~ok).sum())} of {n_boot} bootstrap refits failed and were left out",
            ConvergenceWarning, stacklevel=3,
        )
    d = draws.loc[ok]
    a = (1.0 - level) / 2.0
    names = [c for c in d.columns if c in wanted]
    rows = [(float(np.quantile(d[c], a)), float(np.quantile(d[c], 1.0 - a))) for c in names]
    return _frame(names, rows)


def confint(fit: MixedResult, method: str = "profile", level: float = 0.95,
            parm: Sequence[str] | None = None, n_boot: int = 500, seed: Any = 0,
            backend: Any = "serial", n_workers: int | None = None) -> pd.DataFrame:
    level = _check_level(level)
    # BLAS threads by the fit's size, set once for all the refits (irmodels._threads)
    with kernel_threads(fit._state.problem.r):  # the ML refit does not warn (_refit_ml)
        if method == "profile":
            return profile_intervals(fit, level, parm)
        if method == "wald":
            return wald_intervals(fit, level, parm)
        if method == "bootstrap":
            return bootstrap_intervals(fit, level, parm, n_boot, seed, backend, n_workers)
    raise ArgumentError(f"method must be 'profile', 'bootstrap' or 'wald'; got {method!r}"
                        + did_you_mean(method, ("profile", "bootstrap", "wald")))


# --------------------------------------------------------------------------------------------
# G-study ratios


def gstudy_with_intervals(fit: MixedResult, facets: Sequence[str] | None = None,
                          data: pd.DataFrame | None = None, *, n_boot: int = 500,
                          seed: Any = 0, level: float = 0.95, backend: Any = "serial",
                          n_workers: int | None = None) -> Any:
    """The G-study of a mixed fit with parametric-bootstrap intervals of its ratios.

    The components' variances are re-estimated on ``n_boot`` responses simulated from the fit
    (:func:`bootstrap_draws`); the shares of variance get percentile limits
    (``share_lower``, ``share_upper`` appended to ``components``) and the D-study's ``Erho2``
    and ``Phi`` get theirs from the same draws (``GStudy.component_draws``).
    """
    level = _check_level(level)
    gs = from_fit(fit, facets, data)
    with kernel_threads(fit._state.problem.r):  # threads set once for all the refits
        draws = bootstrap_draws(fit, n_boot, seed, backend, n_workers)
    ok = draws.notna().all(axis=1)
    if not ok.all():
        warnings.warn(f"{int((~ok).sum())} of {n_boot} bootstrap refits failed and were left out",
                      ConvergenceWarning, stacklevel=3)
    draws = draws.loc[ok]
    var = pd.DataFrame(0.0, index=draws.index, columns=gs.components.index)
    for name in fit.components.index:
        key = "Residual" if name == "Residual" else term_name(str(name).split(":"))
        if key in var.columns:
            var[key] += draws[name].to_numpy() ** 2
    share = var.div(var.sum(axis=1), axis=0)
    a = (1.0 - level) / 2.0
    comps = gs.components.copy()
    comps["share_lower"] = share.quantile(a).to_numpy()
    comps["share_upper"] = share.quantile(1.0 - a).to_numpy()
    return replace(gs, components=comps, component_draws=var.reset_index(drop=True))
