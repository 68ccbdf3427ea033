"""Confidence intervals of a random-slope fit: ``SlopeMixedResult.confint(method=...)``.

The parameters are lme4's (``confint.merMod``, Bates, Maechler, Bolker & Walker, J. Stat.
Softw. 67(1), 2015, section 5.1): per random term, in the order of its ``theta`` (lower
triangle by column), the SD of each effect on the diagonal and the correlation of each pair
below it (lme4's ``.sig01, .sig02, ...``, named as its ``oldNames = FALSE``:
``sd_(Intercept)|Subject``, ``cor_Days.(Intercept)|Subject``, ``sd_Days|Subject``); then the
residual SD ``sigma``; then the fixed effects.

- ``"profile"``: the ML deviance (a REML fit is refitted by ML, as lme4's ``devfun2`` does) as a
  function of one parameter, minimised over all the others in the SD/correlation
  parametrisation (the fixed effects profiled out; for a fixed effect ``beta_j`` held at ``b``,
  the column moved to an offset and the deviance profiled over ``theta`` and ``sigma``). The
  bounds solve ``zeta(v) = sign(v - v_hat) sqrt(dev(v) - dev_hat) = +-z``: lme4 interpolates
  ``zeta`` on a grid with splines, here each bound is a root found to 1e-9 relative. A bound
  the profile does not reach is the parameter's limit (0 for an SD, -1 or 1 for a
  correlation), as lme4 reports it.
- ``"bootstrap"``: parametric bootstrap as lme4's ``bootMer`` (``u ~ N(0, I)``,
  ``b = sigma Lambda u``, ``e ~ N(0, sigma^2)``), each response refitted by the fit's criterion,
  percentile intervals (``numpy.quantile``, R's type 7); replicates through
  :func:`irmodels.parallel.map` with seeds from :func:`irmodels.parallel.spawn_seeds`.
- ``"wald"``: ``estimate +- z se`` for the fixed effects, NaN for the variance parameters (as
  lme4's ``method = "Wald"``).
"""

from __future__ import annotations

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
from irmodels._validate import check_probability, did_you_mean
from irmodels.errors import ArgumentError, ConvergenceWarning, DataFormatError
from irmodels.models._mixed_confint import CONFINT_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._lmm import LMMDesign, SlopeMixedResult

__all__ = ["VarParams", "bootstrap_draws", "confint"]


def _chol_psd(C: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor with non-negative diagonal of a positive semi-definite ``C``
    (zero columns where a pivot vanishes); None when ``C`` is not positive semi-definite."""
    q = len(C)
    L = np.zeros((q, q))
    for j in range(q):
        scale = max(float(C[j, j]), 1e-300)
        d = float(C[j, j] - L[j, :j] @ L[j, :j])
        if d < -1e-10 * scale:
            return None
        if d <= 1e-14 * scale:
            r = C[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]
            if np.any(np.abs(r) > 1e-7 * np.sqrt(np.maximum(np.diag(C)[j + 1:], 0) * scale)):
                return None
            continue
        L[j, j] = math.sqrt(d)
        L[j + 1:, j] = (C[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


class VarParams:
    """lme4's SD/correlation parametrisation of a slope fit's variance parameters, and the
    unprofiled deviance (``sigma`` a parameter, ``beta`` profiled out) in it."""

    def __init__(self, design: LMMDesign, dev: Any) -> None:
        self.design = design
        self.dev = dev  # a ProfiledDeviance (ML for the profile)
        names, kinds = [], []
        for b in design.blocks:
            for j in range(b.q):
                for i in range(j, b.q):
                    if i == j:
                        names.append(f"sd_{b.columns[j]}|{b.group}")
                        kinds.append("sd")
                    else:
                        names.append(f"cor_{b.columns[i]}.{b.columns[j]}|{b.group}")
                        kinds.append("cor")
        seen: dict[str, int] = {}
        for k, nm in enumerate(names):  # a || term repeats its group: lme4 appends .1, .2
            if nm in seen:
                seen[nm] += 1
                names[k] = f"{nm}.{seen[nm]}"
            else:
                seen[nm] = 0
        self.names = names + ["sigma"]
        self.kinds = kinds + ["sigma"]

    def from_theta(self, theta: np.ndarray, sigma: float) -> np.ndarray:
        out = []
        k = 0
        for b in self.design.blocks:
            T = np.zeros((b.q, b.q))
            for j in range(b.q):
                for i in range(j, b.q):
                    T[i, j] = theta[k]
                    k += 1
            C = sigma ** 2 * (T @ T.T)
            sd = np.sqrt(np.maximum(np.diag(C), 0))
            for j in range(b.q):
                for i in range(j, b.q):
                    den = sd[i] * sd[j]
                    out.append(sd[j] if i == j else (  # a boundary fit's +-1 to rounding
                        min(1.0, max(-1.0, C[i, j] / den)) if den > 0 else 0.0))
        return np.array(out + [sigma])

    def to_theta(self, p: np.ndarray) -> np.ndarray | None:
        sigma = float(p[-1])
        theta: list[float] = []
        k = 0
        for b in self.design.blocks:
            R = np.eye(b.q)
            sd = np.zeros(b.q)
            for j in range(b.q):
                for i in range(j, b.q):
                    if i == j:
                        sd[j] = p[k]
                    else:
                        R[i, j] = R[j, i] = p[k]
                    k += 1
            T = _chol_psd(sd[:, None] * R * sd[None, :] / sigma ** 2)
            if T is None:
                return None
            for j in range(b.q):
                theta.extend(T[j:, j])
        return np.array(theta)

    def deviance(self, p: np.ndarray) -> float:
        if p[-1] <= 0:
            return math.inf
        theta = self.to_theta(p)
        if theta is None:
            return math.inf
        try:
            return float(self.dev.deviance_varpar(np.concatenate([theta, [p[-1]]])))
        except (np.linalg.LinAlgError, ValueError):
            return math.inf


# --------------------------------------------------------------------------------------------
# profile


_OPTS = {"ftol": 1e-13, "gtol": 1e-7, "maxiter": 3000}


def _minimize(f: Callable[[np.ndarray], float], x0: np.ndarray,
              bounds: Sequence[tuple[float | None, float | None]],
              jac: str = "3-point") -> tuple[float, np.ndarray]:
    """L-BFGS-B with finite-difference gradients (central by default), restarted from its end
    point until it stops improving, and once off any SD left at 0 (where the deviance is flat
    in it)."""
    if len(x0) == 0:
        return f(x0), x0

    def run(x: np.ndarray) -> Any:
        with np.errstate(all="ignore"):
            return optimize.minimize(f, x, method="L-BFGS-B", jac=jac, bounds=bounds,
                                     options=_OPTS)

    res = run(np.asarray(x0, float))
    best, x = float(res.fun), res.x
    for _ in range(3):
        if res.nit <= 2:  # stopped at once: the start was the optimum
            break
        res = run(x)
        if not res.fun < best - 1e-10:
            break
        best, x = float(res.fun), res.x
    for k, (lo, hi) in enumerate(bounds):
        if lo == 0.0 and hi is None and x[k] < 1e-6:
            xp = x.copy()
            xp[k] = 0.1
            res = run(xp)
            if res.fun < best - 1e-10:
                best, x = float(res.fun), res.x
    return best, x


class _Profile:
    """The ML deviance with one parameter held (warm-started from the last solution)."""

    def __init__(self, fit_ml: SlopeMixedResult) -> None:
        self.fit = fit_ml
        self.vp = VarParams(fit_ml._design, fit_ml._dev)
        self.p_hat = self.vp.from_theta(fit_ml.theta, fit_ml.sigma)
        self.dev_hat = float(fit_ml.deviance)
        self.sigma = float(fit_ml.sigma)
        self.scale = np.array([1.0 if k == "cor" else self.sigma for k in self.vp.kinds])
        self.bounds = [(-1.0, 1.0) if k == "cor" else (0.0, None) for k in self.vp.kinds]
        self.bounds[-1] = (1e-10, None)
        self._last: dict[Any, np.ndarray] = {}

    def varpar(self, k: int, v: float) -> float:
        free = [i for i in range(len(self.p_hat)) if i != k]
        sc = self.scale[free]
        x0 = self._last.get(k, self.p_hat[free] / sc)
        bnds = [(None if lo is None else lo / s, None if hi is None else hi / s)
                for (lo, hi), s in zip((self.bounds[i] for i in free), sc)]

        def f(x: np.ndarray) -> float:
            p = np.empty(len(self.p_hat))
            p[free] = x * sc
            p[k] = v
            return self.vp.deviance(p)

        best, x = _minimize(f, x0, bnds)
        self._last[k] = x
        return best

    def fixed(self, j: int, b: float) -> float:
        """ML deviance with fixed effect ``j`` held at ``b``: its column moved to an offset,
        the deviance profiled over ``theta`` (and ``sigma``, analytically)."""
        key = ("fixed", j)
        d = self.fit._design
        keep = [c for c in range(d.X.shape[1]) if c != j]
        self._last.setdefault(key, np.asarray(self.fit.theta, float))
        dj = replace(d, y=d.y - b * d.X[:, j], X=d.X[:, keep],
                     fixed_names=[d.fixed_names[c] for c in keep],
                     fixed_terms_of_col=[d.fixed_terms_of_col[c] for c in keep])
        dev = type(self.fit._dev)(dj, False)  # the engine's deviance (lme4's devfun), ML
        bnds = [(0.0, None) if lo == 0 else (None, None) for lo in d.lower]
        best, x = _minimize(dev, self._last[key], bnds)
        self._last[key] = x
        return best


def _bounds(dev_at: Callable[[float], float], dev_hat: float, est: float, step: float,
            z: float, lo_lim: float | None, hi_lim: float | None) -> tuple[float, float]:
    """Solve ``zeta(v) = +-z`` on each side of ``est``, ``zeta`` the signed square root of the
    deviance difference (nearly linear in ``v``: secant steps bracket the root, Brent's method
    polishes it); a side that does not reach ``z`` before the parameter's limit gives the
    limit."""

    memo: dict[float, float] = {}

    def zeta(v: float) -> float:
        if v not in memo:
            memo[v] = math.copysign(math.sqrt(max(dev_at(v) - dev_hat, 0.0)), v - est)
        return memo[v]

    out = []
    for sign, lim in ((-1.0, lo_lim), (1.0, hi_lim)):
        target = sign * z
        a, za = est, 0.0
        b = est + sign * step
        val = sign * math.inf
        for _ in range(60):
            at_limit = lim is not None and (b - lim) * sign >= 0
            if at_limit:
                b = float(lim)  # type: ignore[arg-type]
            zb = zeta(b)
            if sign * zb >= z:
                val = float(optimize.brentq(lambda v, t=target: zeta(v) - t, min(a, b), max(a, b),
                                            xtol=1e-8 * max(abs(est), step), rtol=1e-10,
                                            maxiter=200))
                break
            if at_limit:
                val = float(lim)  # type: ignore[arg-type]
                break
            slope = (zb - za) / (b - a)
            dist = abs(b - a)
            nxt = b + (target - zb) / slope * 1.1 if slope * sign > 0 else b + sign * 2 * dist
            nxt = b + sign * min(max(abs(nxt - b), 0.1 * dist), 4 * dist + abs(b - est))
            a, za, b = b, zb, nxt
        out.append(val)
    return out[0], out[1]


def profile_intervals(fit: SlopeMixedResult, level: float, wanted: set[str]) -> pd.DataFrame:
    ml = fit._refit_ml(warn=False)
    pr = _Profile(ml)
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    names, rows = [], []
    for k, (name, kind) in enumerate(zip(pr.vp.names, pr.vp.kinds)):
        if name not in wanted:
            continue
        est = float(pr.p_hat[k])
        lims: tuple[float | None, float | None]
        if kind == "cor":
            step, lims = 0.2, (-1.0, 1.0)
        else:
            step = 0.3 * est if est > 0 else 0.1 * pr.sigma
            lims = (0.0, None)
        lo, hi = _bounds(partial(pr.varpar, k), pr.dev_hat, est, step, z, *lims)
        names.append(name)
        rows.append((lo, hi))
    se = np.sqrt(np.diag(ml.vcov.to_numpy()))
    for j, name in enumerate(ml.fixed_estimates.index):
        if name not in wanted:
            continue
        est = float(ml.fixed_estimates.iloc[j])
        lo, hi = _bounds(partial(pr.fixed, j), pr.dev_hat, est, z * se[j], z,
                         None, None)
        names.append(name)
        rows.append((lo, hi))
    return _frame(names, rows)


def _frame(names: list[str], rows: list[tuple[float, float]]) -> pd.DataFrame:
    arr = np.array(rows, dtype=float).reshape(len(rows), 2)
    return pd.DataFrame(arr, columns=list(CONFINT_COLUMNS),
                        index=pd.Index(names, name="parameter"))


def _all_names(fit: SlopeMixedResult) -> list[str]:
    return VarParams(fit._design, fit._dev).names + list(fit.fixed_estimates.index)


def _wanted(fit: SlopeMixedResult, parm: Sequence[str] | str | None) -> set[str]:
    every = _all_names(fit)
    if parm is None:
        return set(every)
    parm = [parm] if isinstance(parm, str) else list(parm)
    unknown = [p for p in parm if p not in every]
    if unknown:
        raise DataFormatError(
            f"confint(parm=...) names unknown parameter(s) {', '.join(map(repr, unknown))}; "
            f"the model has {', '.join(every)}")
    return set(parm)


# --------------------------------------------------------------------------------------------
# Wald


def wald_intervals(fit: SlopeMixedResult, level: float, wanted: set[str]) -> pd.DataFrame:
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    est = fit.fixed_estimates.to_numpy()
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    names, rows = [], []
    for name in VarParams(fit._design, fit._dev).names:
        if name in wanted:
            names.append(name)
            rows.append((math.nan, math.nan))
    for j, name in enumerate(fit.fixed_estimates.index):
        if name in wanted:
            names.append(name)
            rows.append((est[j] - z * se[j], est[j] + z * se[j]))
    return _frame(names, rows)


# --------------------------------------------------------------------------------------------
# parametric bootstrap


def _boot_chunk(args: tuple) -> np.ndarray:
    """Re-estimates (variance parameters in lme4's order, then the fixed effects) of one chunk
    of simulated responses; a failed refit is a row of NaN."""
    design, Dev, reml, theta, sigma, beta, seed, n = args
    rng = np.random.default_rng(seed)
    vp = VarParams(design, None)
    Lam = design.Lambda(theta)
    mu = design.X @ beta
    q = design.Z.shape[1]
    bnds = [(0.0, None) if lo == 0 else (None, None) for lo in design.lower]
    out = np.full((n, len(vp.names) + len(beta)), np.nan)
    for r in range(n):
        u = rng.standard_normal(q)
        y = mu + design.Z @ (Lam @ (sigma * u)) + sigma * rng.standard_normal(design.Z.shape[0])
        dev = Dev(replace(design, y=np.asarray(y, float)), reml)
        try:
            # scipy's L-BFGS-B and numpy warn (RuntimeWarning: overflow or invalid values,
            # LinAlgWarning) on some simulated responses; harmless: a failed refit is a NaN row
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fun, th = _minimize(dev, np.asarray(theta, float), bnds, jac="2-point")
                if not np.isfinite(fun):
                    continue
                f = dev.pls(th)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            continue
        out[r, :len(vp.names)] = vp.from_theta(th, dev.sigma(f))
        out[r, len(vp.names):] = f.beta
    return out


def bootstrap_draws(fit: SlopeMixedResult, n_boot: int, seed: Any, backend: Any = "serial",
                    n_workers: int | None = None, chunk: int = 25) -> pd.DataFrame:
    """Parametric-bootstrap re-estimates: one row per replicate, columns the parameters of
    :meth:`SlopeMixedResult.confint` (failed refits NaN)."""
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 2:
        raise ArgumentError(f"n_resamples must be an integer >= 2; got {n_boot!r}")
    sizes = [min(chunk, n_boot - i) for i in range(0, n_boot, chunk)]
    seeds = parallel.spawn_seeds(seed, len(sizes))
    units = [(fit._design, type(fit._dev), fit.method == "REML", np.asarray(fit.theta),
              float(fit.sigma), fit.fixed_estimates.to_numpy(), s, n)
             for s, n in zip(seeds, sizes)]
    parts = parallel.map(_boot_chunk, units, backend=backend, n_workers=n_workers,
                         progress=False)
    return pd.DataFrame(np.vstack(parts), columns=_all_names(fit))


def bootstrap_intervals(fit: SlopeMixedResult, level: float, wanted: set[str], n_boot: int,
                        seed: Any, backend: Any, n_workers: int | None) -> pd.DataFrame:
    draws = bootstrap_draws(fit, n_boot, seed, backend, n_workers)
    ok = draws.notna().all(axis=1)
    if not ok.all():
        warnings.warn(f"{int((~ok).sum())} of {n_boot} bootstrap refits failed and were left "
                      "out", ConvergenceWarning, stacklevel=4)
    d = draws.loc[ok]
    a = (1.0 - level) / 2.0
    names = [c for c in d.columns if c in wanted]
    rows = [(float(np.quantile(d[c], a)), float(np.quantile(d[c], 1.0 - a))) for c in names]
    return _frame(names, rows)


def confint(fit: SlopeMixedResult, method: str = "profile", level: float = 0.95,
            parm: Sequence[str] | str | None = None, n_boot: int = 500, seed: Any = 0,
            backend: Any = "serial", n_workers: int | None = None) -> pd.DataFrame:
    """:meth:`SlopeMixedResult.confint` (see the module notes)."""
    level = check_probability(level, "level")
    if method not in ("profile", "bootstrap", "wald"):
        raise ArgumentError(f"method must be 'profile', 'bootstrap' or 'wald'; got {method!r}"
                            + did_you_mean(str(method), ("profile", "bootstrap", "wald")))
    wanted = _wanted(fit, parm)
    # BLAS threads by the fit's size, set once for all the refits (irmodels._threads)
    with kernel_threads(fit._dev.q):
        if method == "profile":
            return profile_intervals(fit, level, wanted)
        if method == "wald":
            return wald_intervals(fit, level, wanted)
        return bootstrap_intervals(fit, level, wanted, n_boot, seed, backend, n_workers)
