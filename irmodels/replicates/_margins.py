"""The margins of the topic simulator (:mod:`irmodels.replicates.simulation`): one system's
score distribution over topics, fitted as simIReff does (truncated normal, beta, kernel with
boundary reflection; beta-binomial or a kernel on the support for ``P@k``), its quantile function
and expected value, and simIReff's ``effTransform`` to a chosen expected value.

References: J. Urbano and T. Nagler, "Stochastic simulation of test collections: evaluation
scores", SIGIR 2018; simIReff (R package); docs/methods.md (stochastic simulation).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from irmodels.errors import DesignError
from irmodels.replicates._fdiff import LBFGSB_STEP, forward_differences

__all__ = ["CONTINUOUS_FAMILIES", "DISCRETE_FAMILIES", "Margin", "fit_beta", "fit_betabinom",
           "fit_margin", "fit_truncnorm", "quantiles", "truncnorm_ppf"]

CONTINUOUS_FAMILIES = ("truncnorm", "beta", "kernel")
DISCRETE_FAMILIES = ("betabinom", "kernel")
_CAP = 1e-6  # simIReff's cap(): beta log-likelihoods on [1e-6, 1 - 1e-6]
_SIGMA_MIN = 0.05  # simIReff's lower bound of the truncated normal's sigma
_SHAPE_MAX = 1e4
# composite Gauss-Legendre nodes on [0, 1] for E = int_0^1 (1 - G(x)) dx: 256 panels x 16
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
_PANELS = 256
NODES = ((np.arange(_PANELS)[:, None] + (_GL_X[None, :] + 1) / 2) / _PANELS).ravel()
WEIGHTS = np.tile(_GL_W / 2 / _PANELS, _PANELS)
_KERNEL_GRID = 2049  # points of the tabulated kernel CDF (its quantile function interpolates)

# --------------------------------------------------------------------------------------------
# margins


@dataclass(frozen=True, repr=False)
class Margin:
    """One system's fitted score distribution (possibly transformed: ``G = B(F)``).

    ``direction`` +1: ``G = F**theta`` (Beta(theta, 1) of F, a higher mean); -1:
    ``G = 1 - (1 - F)**theta`` (Beta(1, theta), a lower mean); 0: untransformed.
    """

    family: str
    params: dict[str, float]
    loglik: float
    df: float
    discrete: bool
    support: np.ndarray | None = None  # discrete: the score values 0, 1/k, ..., 1
    pmf: np.ndarray | None = None  # discrete: the probabilities of the support
    grid: np.ndarray | None = None  # kernel: the CDF at linspace(0, 1, _KERNEL_GRID)
    theta: float = 1.0
    direction: int = 0
    nodes_cdf: np.ndarray | None = field(default=None, compare=False)

    @property
    def _grid(self) -> np.ndarray:
        """The CDF of a kernel margin on its grid (set for every kernel margin)."""
        if self.grid is None:
            raise TypeError("only a kernel margin has a CDF grid")
        return self.grid

    @property
    def _discrete(self) -> tuple[np.ndarray, np.ndarray]:
        """``(support, pmf)`` of a discrete margin (set for every discrete margin)."""
        if self.support is None or self.pmf is None:
            raise TypeError("a continuous margin has no support and pmf")
        return self.support, self.pmf

    # ---- the base distribution
    def _cdf0(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.discrete:
            support, pmf = self._discrete
            cum = np.cumsum(pmf)
            idx = np.searchsorted(support, x + 1e-12, side="right") - 1
            return np.where(idx < 0, 0.0, cum[np.clip(idx, 0, len(cum) - 1)])
        p = self.params
        if self.family == "beta":
            return special.betainc(p["shape1"], p["shape2"], np.clip(x, 0.0, 1.0))
        if self.family == "truncnorm":
            return stats.truncnorm.cdf(np.clip(x, 0.0, 1.0), -p["mean"] / p["sd"],
                                       (1 - p["mean"]) / p["sd"], loc=p["mean"], scale=p["sd"])
        xs = np.linspace(0.0, 1.0, _KERNEL_GRID)
        return np.interp(x, xs, self._grid)

    def _ppf0(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        if self.discrete:
            support, pmf = self._discrete
            cum = np.cumsum(pmf)
            cum[-1] = 1.0
            idx = np.searchsorted(cum, u, side="left")
            return support[np.clip(idx, 0, len(support) - 1)]
        p = self.params
        if self.family == "beta":
            return special.betaincinv(p["shape1"], p["shape2"], u)
        if self.family == "truncnorm":
            shape = u.shape
            return truncnorm_ppf(u.reshape(-1, 1), np.array([p["mean"]]),
                                  np.array([p["sd"]])).reshape(shape)
        xs = np.linspace(0.0, 1.0, _KERNEL_GRID)
        return np.interp(u, self._grid, xs)

    # ---- the (transformed) distribution
    def _bend(self, F: np.ndarray, theta: float | None = None, direction: int | None = None
              ) -> np.ndarray:
        theta = self.theta if theta is None else theta
        direction = self.direction if direction is None else direction
        if direction > 0:
            return F**theta
        if direction < 0:
            with np.errstate(divide="ignore"):  # F = 1: log1p(-1) = -inf, G = 1
                return -np.expm1(theta * np.log1p(-np.minimum(F, 1.0)))
        return F

    def cdf(self, x: Any) -> np.ndarray:
        """The CDF at ``x``."""
        return self._bend(self._cdf0(x))

    def ppf(self, u: Any) -> np.ndarray:
        """The quantile function at ``u`` in (0, 1)."""
        u = np.asarray(u, dtype=np.float64)
        if self.direction > 0:
            u = u ** (1.0 / self.theta)
        elif self.direction < 0:
            u = -np.expm1(np.log1p(-u) / self.theta)
        return self._ppf0(u)

    def _base_at_nodes(self) -> np.ndarray:
        if self.discrete:
            return np.cumsum(self._discrete[1])[:-1]  # F at the support points but the last
        if self.nodes_cdf is not None:
            return self.nodes_cdf
        return self._cdf0(NODES)

    def _mean(self, theta: float, direction: int, F: np.ndarray) -> float:
        G = self._bend(F, theta, direction)
        if self.discrete:
            return float(np.sum(np.diff(self._discrete[0]) * (1.0 - G)))
        return float(np.sum(WEIGHTS * (1.0 - G)))

    @property
    def mean(self) -> float:
        """The expected value: ``int (1 - G(x)) dx`` over [0, 1] (a sum over the support)."""
        return self._mean(self.theta, self.direction, self._base_at_nodes())

    def with_mean(self, target: float, system: str) -> Margin:
        """This margin's base transformed to expected value ``target``."""
        F = self._base_at_nodes()
        base = self._mean(1.0, 0, F)
        if abs(target - base) <= 1e-12:
            return dataclasses.replace(self, theta=1.0, direction=0)
        direction = 1 if target > base else -1

        def gap(log_theta: float) -> float:
            return self._mean(math.exp(log_theta), direction, F) - target

        hi = 1.0
        while gap(hi) * direction < 0:
            hi *= 2.0
            if hi > 60:
                lo_end = float(self._discrete[0][0]) if self.discrete else 0.0
                hi_end = float(self._discrete[0][-1]) if self.discrete else 1.0
                raise DesignError(
                    f"cannot move system {system!r}'s expected score from {base:.4g} to "
                    f"{target:.4g}: its {self.family} margin reaches "
                    f"{self._mean(math.exp(hi), direction, F):.4g} at most, towards "
                    f"{hi_end if direction > 0 else lo_end:g}. Choose means further inside "
                    "(0, 1), or a smaller difference.")
        log_theta = optimize.brentq(gap, 0.0, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
        return dataclasses.replace(self, theta=math.exp(log_theta), direction=direction)

    def describe(self) -> str:
        pars = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        return f"{self.family}({pars})"


def _logdiff_ndtr(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """log(Phi(b) - Phi(a)) for a < b, stable in both tails."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    flip = a > 0
    lo, hi = np.where(flip, -b, a), np.where(flip, -a, b)
    lh, ll = special.log_ndtr(hi), special.log_ndtr(lo)
    with np.errstate(divide="ignore"):
        return lh + np.log1p(-np.exp(ll - lh))


def fit_truncnorm(x: np.ndarray) -> Margin:
    n = len(x)

    def nll(par: np.ndarray) -> float:
        mu, s = par
        z = (x - mu) / s
        return float(0.5 * np.sum(z**2) + n * (0.5 * math.log(2 * math.pi) + math.log(s))
                     + n * _logdiff_ndtr(-mu / s, (1 - mu) / s))

    start = np.array([x.mean(), max(x.std(ddof=1), _SIGMA_MIN)])
    bounds = [(-10.0, 11.0), (_SIGMA_MIN, 100.0)]
    # L-BFGS-B's own forward differences, without scipy's per-call overhead (_fdiff)
    fun, jac = forward_differences(nll, bounds, LBFGSB_STEP)
    res = optimize.minimize(fun, start, jac=jac, method="L-BFGS-B", bounds=bounds,
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    mu, s = (float(v) for v in res.x)
    return Margin("truncnorm", {"mean": mu, "sd": s}, -float(res.fun), 2.0, False)


def _beta_loglik(a: float, b: float, slx: float, sl1x: float, n: int) -> float:
    return (a - 1) * slx + (b - 1) * sl1x - n * special.betaln(a, b)


def fit_beta(x: np.ndarray) -> Margin:
    xc = np.clip(x, _CAP, 1 - _CAP)
    n = len(xc)
    slx, sl1x = float(np.log(xc).sum()), float(np.log1p(-xc).sum())
    m, v = xc.mean(), xc.var(ddof=1)
    common = m * (1 - m) / v - 1 if v > 0 else 2.0
    start = np.clip([m * common, (1 - m) * common], 1.0, _SHAPE_MAX)

    def nll(par: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = par
        dg = special.digamma(a + b)
        grad = np.array([slx - n * (special.digamma(a) - dg),
                         sl1x - n * (special.digamma(b) - dg)])
        return -_beta_loglik(a, b, slx, sl1x, n), -grad

    res = optimize.minimize(nll, start, jac=True, method="L-BFGS-B",
                            bounds=[(1.0, _SHAPE_MAX)] * 2,
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    a, b = (float(v) for v in res.x)
    return Margin("beta", {"shape1": a, "shape2": b}, -float(res.fun), 2.0, False)


def _bw_nrd0(x: np.ndarray) -> float:
    """R's ``bw.nrd0``: 0.9 min(sd, IQR / 1.34) n^(-1/5)."""
    sd = float(np.std(x, ddof=1)) if len(x) > 1 else 0.0
    iqr = float(np.subtract(*np.percentile(x, [75, 25])))
    lo = min(sd, iqr / 1.34)
    if lo <= 0:
        lo = sd or abs(float(x[0])) or 1.0
    return 0.9 * lo * len(x) ** -0.2


def _reflected_cdf(q: np.ndarray, x: np.ndarray, h: float) -> np.ndarray:
    """Unnormalised CDF on [0, q] of the Gaussian KDE reflected at 0 and 1."""
    q = np.asarray(q, float)[:, None]
    out = np.zeros(q.shape[0])
    for c, sgn in ((x, 1.0), (-x, 1.0), (2.0 - x, 1.0)):
        out += sgn * (special.ndtr((q - c) / h) - special.ndtr((0.0 - c) / h)).mean(axis=1)
    return out


def _reflected_pdf(q: np.ndarray, x: np.ndarray, h: float) -> np.ndarray:
    q = np.asarray(q, float)[:, None]
    out = np.zeros(q.shape[0])
    for c in (x, -x, 2.0 - x):
        out += (np.exp(-0.5 * ((q - c) / h) ** 2) / (h * math.sqrt(2 * math.pi))).mean(axis=1)
    return out


def _fit_kernel(x: np.ndarray) -> Margin:
    h = _bw_nrd0(x)
    total = float(_reflected_cdf(np.array([1.0]), x, h)[0])
    f = _reflected_pdf(x, x, h) / total
    # simIReff's effective degrees of freedom: mean(K_h(0) / f(x_i)) (the smoother's trace)
    df = float(np.mean((1.0 / (h * math.sqrt(2 * math.pi)) / total) / f))
    grid = _reflected_cdf(np.linspace(0.0, 1.0, _KERNEL_GRID), x, h) / total
    grid[0], grid[-1] = 0.0, 1.0
    grid = np.maximum.accumulate(grid)
    # the distribution sampled is the tabulated one (its quantiles interpolate the grid), so its
    # expected value integrates the same interpolated CDF (_cdf0, at the nodes: fit_margin)
    return Margin("kernel", {"bandwidth": h}, float(np.log(f).sum()), df, False, grid=grid)


def fit_betabinom(j: np.ndarray, k: int, support: np.ndarray) -> Margin:
    m, v = j.mean(), j.var(ddof=1)
    denom = k * (v / m - m - 1) + m if m > 0 else 0.0
    if m > 0 and denom > 0 and v > 0:
        start = [(k * m - v) / denom, (k - m) * (k - v / m) / denom]
    else:
        start = [1.0, 1.0]
    start = np.clip(np.nan_to_num(start, nan=1.0), 1.0, _SHAPE_MAX)

    def nll(par: np.ndarray) -> float:
        return -float(stats.betabinom.logpmf(j, k, par[0], par[1]).sum())

    bounds = [(1.0, _SHAPE_MAX)] * 2
    fun, jac = forward_differences(nll, bounds, LBFGSB_STEP)  # L-BFGS-B's own (_fdiff)
    res = optimize.minimize(fun, start, jac=jac, method="L-BFGS-B", bounds=bounds,
                            options={"ftol": 1e-15, "gtol": 1e-9, "maxiter": 2000})
    a, b = (float(v) for v in res.x)
    pmf = stats.betabinom.pmf(np.arange(k + 1), k, a, b)
    return Margin("betabinom", {"shape1": a, "shape2": b, "trials": float(k)}, -float(res.fun),
                   2.0, True, support=support, pmf=pmf / pmf.sum())


def _fit_discrete_kernel(j: np.ndarray, k: int, support: np.ndarray) -> Margin:
    """A Gaussian kernel on the success counts 0..k, its mass below 0 and above k folded to the
    ends: p_m = mean_i [Phi((m + 1/2 - j_i)/h) - Phi((m - 1/2 - j_i)/h)]."""
    h = max(_bw_nrd0(j.astype(float)), 0.5)
    edges = np.arange(k + 2) - 0.5
    edges[0], edges[-1] = -np.inf, np.inf
    mass = np.diff(special.ndtr((edges[None, :] - j[:, None]) / h), axis=1)  # n x (k + 1)
    pmf = mass.mean(axis=0)
    own = mass[np.arange(len(j)), j]
    df = float(np.mean(own / len(j) / pmf[j]) * len(j))
    return Margin("kernel", {"bandwidth": h / k}, float(np.log(pmf[j]).sum()), df, True,
                   support=support, pmf=pmf / pmf.sum())


def fit_margin(x: np.ndarray, family: str, trials: int | None, system: str) -> Margin:
    if np.ptp(x) == 0:
        raise DesignError(
            f"system {system!r} scores {x[0]:g} on every topic: no distribution can be fitted "
            "to a constant. Drop it (irm.filter_systems) before simulating.")
    if trials is None:
        cands: tuple[str, ...] = CONTINUOUS_FAMILIES if family == "auto" else (family,)
        fits = [{"truncnorm": fit_truncnorm, "beta": fit_beta, "kernel": _fit_kernel}[c](x)
                for c in cands]
    else:
        support = np.arange(trials + 1) / trials
        j = np.rint(x * trials).astype(np.int64)
        cands = DISCRETE_FAMILIES if family == "auto" else (family,)
        fits = [{"betabinom": fit_betabinom, "kernel": _fit_discrete_kernel}[c](j, trials,
                                                                                 support)
                for c in cands]
    best = min(fits, key=lambda m: 2 * m.df - 2 * m.loglik)
    if not best.discrete:
        # the base CDF at the quadrature nodes, computed once: every expected value and mean
        # shift (``mean``, ``with_mean``) integrates it
        best = dataclasses.replace(best, nodes_cdf=best._cdf0(NODES))
    return best


def truncnorm_ppf(u: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Quantiles of normals truncated to [0, 1] by inversion on the side of the mean (the
    lower tail when 0 is below the mean, the upper tail otherwise); scipy's where even that
    tail underflows (the whole of [0, 1] more than 30 SDs from the mean)."""
    a, b = -mu / sd, (1 - mu) / sd
    lower = a <= 0
    pa, pb = special.ndtr(a), special.ndtr(b)
    qa, qb = special.ndtr(-a), special.ndtr(-b)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(lower, special.ndtri(pa + u * (pb - pa)),
                     -special.ndtri(qa - u * (qa - qb)))
    x = mu + sd * z
    far = np.where(lower, b < -30, a > 30)
    if far.any():
        x[:, far] = stats.truncnorm.ppf(u[:, far], a[far], b[far], loc=mu[far], scale=sd[far])
    return np.clip(x, 0.0, 1.0)


def quantiles(margins: Sequence[Margin], U: np.ndarray) -> np.ndarray:
    """Column j of ``U`` through margin j's quantile function, one call per family."""
    theta = np.array([m.theta for m in margins])
    direction = np.array([m.direction for m in margins])
    with np.errstate(divide="ignore"):
        V = np.where(direction > 0, U ** (1.0 / theta),
                     np.where(direction < 0, -np.expm1(np.log1p(-U) / theta), U))
    out = np.empty_like(V)
    fams = np.array([m.family if not m.discrete else "discrete" for m in margins])
    for fam in ("beta", "truncnorm"):
        idx = np.flatnonzero(fams == fam)
        if not len(idx):
            continue
        if fam == "beta":
            a = np.array([margins[int(i)].params["shape1"] for i in idx])
            b = np.array([margins[int(i)].params["shape2"] for i in idx])
            out[:, idx] = special.betaincinv(a, b, V[:, idx])
        else:
            mu = np.array([margins[int(i)].params["mean"] for i in idx])
            sd = np.array([margins[int(i)].params["sd"] for i in idx])
            out[:, idx] = truncnorm_ppf(V[:, idx], mu, sd)
    for i in np.flatnonzero((fams != "beta") & (fams != "truncnorm")):
        out[:, i] = margins[int(i)]._ppf0(V[:, i])
    return out
