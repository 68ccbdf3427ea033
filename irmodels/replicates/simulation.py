"""Stochastic simulation of test collections: new topics whose true system means are known.

From an observed topic x system matrix, :func:`fit_simulator` fits

- each system's **margin**, the distribution of its scores over topics: a normal truncated to
  [0, 1], a beta, or a Gaussian kernel density reflected at 0 and 1 for continuous measures
  (AP, nDCG); a beta-binomial or a kernel on the support for ``P@k`` (``k`` trials); chosen
  by AIC per system as simIReff does, or named by the user;
- a **Gaussian copula** for the dependence between systems: the scores' average ranks become
  normal scores, whose correlation matrix is the copula's.

Sampling draws correlated normal vectors, maps them to uniforms and through each margin's
quantile function. Every margin's expected value is known (by numerical integration), so the
true mean of every system, and every true difference, is known. :meth:`TopicSimulator.with_means`
transforms the margins to chosen expected values with simIReff's ``effTransform`` family: the
new CDF is ``B(F(x))`` with ``B`` the CDF of a Beta(a, 1) (raises the mean) or Beta(1, b)
(lowers it), a, b >= 1 found by root finding. ``null=True`` gives every system the same
expected value (the mean of the fitted ones): every difference is 0 by construction.

References: J. Urbano and T. Nagler, "Stochastic simulation of test collections: evaluation
scores", SIGIR 2018; J. Urbano, H. Lima and A. Hanjalic, "Statistical significance testing
in information retrieval: an empirical analysis of type I, type II and type III errors",
SIGIR 2019; docs/methods.md (stochastic simulation).
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from irmodels._display import ResultDisplay
from irmodels._validate import check_int, did_you_mean, seed_sequence
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError

__all__ = [
    "CONTINUOUS_FAMILIES",
    "DISCRETE_FAMILIES",
    "MARGIN_COLUMNS",
    "TopicSimulator",
    "fit_simulator",
    "simulate_topics",
]

CONTINUOUS_FAMILIES = ("truncnorm", "beta", "kernel")
DISCRETE_FAMILIES = ("betabinom", "kernel")
COPULAS = ("gaussian", "independent")
#: Columns of :attr:`TopicSimulator.margins`, in order.
MARGIN_COLUMNS = ("system", "family", "expected_mean", "observed_mean", "loglik", "df", "aic",
                  "transform")

_CAP = 1e-6  # simIReff's cap(): beta log-likelihoods on [1e-6, 1 - 1e-6]
_SIGMA_MIN = 0.05  # simIReff's lower bound of the truncated normal's sigma
_SHAPE_MAX = 1e4
# composite Gauss-Legendre nodes on [0, 1] for E = int_0^1 (1 - G(x)) dx: 256 panels x 16
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
_PANELS = 256
_NODES = ((np.arange(_PANELS)[:, None] + (_GL_X[None, :] + 1) / 2) / _PANELS).ravel()
_WEIGHTS = np.tile(_GL_W / 2 / _PANELS, _PANELS)
_KERNEL_GRID = 2049  # points of the tabulated kernel CDF (its quantile function interpolates)


# --------------------------------------------------------------------------------------------
# margins


@dataclass(frozen=True, repr=False)
class _Margin:
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
            return _truncnorm_ppf(u.reshape(-1, 1), np.array([p["mean"]]),
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
        return self._cdf0(_NODES)

    def _mean(self, theta: float, direction: int, F: np.ndarray) -> float:
        G = self._bend(F, theta, direction)
        if self.discrete:
            return float(np.sum(np.diff(self._discrete[0]) * (1.0 - G)))
        return float(np.sum(_WEIGHTS * (1.0 - G)))

    @property
    def mean(self) -> float:
        """The expected value: ``int (1 - G(x)) dx`` over [0, 1] (a sum over the support)."""
        return self._mean(self.theta, self.direction, self._base_at_nodes())

    def with_mean(self, target: float, system: str) -> _Margin:
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


def _fit_truncnorm(x: np.ndarray) -> _Margin:
    n = len(x)

    def nll(par: np.ndarray) -> float:
        mu, s = par
        z = (x - mu) / s
        return float(0.5 * np.sum(z**2) + n * (0.5 * math.log(2 * math.pi) + math.log(s))
                     + n * _logdiff_ndtr(-mu / s, (1 - mu) / s))

    start = np.array([x.mean(), max(x.std(ddof=1), _SIGMA_MIN)])
    res = optimize.minimize(nll, start, method="L-BFGS-B",
                            bounds=[(-10.0, 11.0), (_SIGMA_MIN, 100.0)],
                            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    mu, s = (float(v) for v in res.x)
    return _Margin("truncnorm", {"mean": mu, "sd": s}, -float(res.fun), 2.0, False)


def _beta_loglik(a: float, b: float, slx: float, sl1x: float, n: int) -> float:
    return (a - 1) * slx + (b - 1) * sl1x - n * special.betaln(a, b)


def _fit_beta(x: np.ndarray) -> _Margin:
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
    return _Margin("beta", {"shape1": a, "shape2": b}, -float(res.fun), 2.0, False)


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


def _fit_kernel(x: np.ndarray) -> _Margin:
    h = _bw_nrd0(x)
    total = float(_reflected_cdf(np.array([1.0]), x, h)[0])
    f = _reflected_pdf(x, x, h) / total
    # simIReff's effective degrees of freedom: mean(K_h(0) / f(x_i)) (the smoother's trace)
    df = float(np.mean((1.0 / (h * math.sqrt(2 * math.pi)) / total) / f))
    grid = _reflected_cdf(np.linspace(0.0, 1.0, _KERNEL_GRID), x, h) / total
    grid[0], grid[-1] = 0.0, 1.0
    grid = np.maximum.accumulate(grid)
    m = _Margin("kernel", {"bandwidth": h}, float(np.log(f).sum()), df, False, grid=grid)
    # the distribution sampled is the tabulated one (its quantiles interpolate the grid), so its
    # expected value integrates the same interpolated CDF
    return dataclasses.replace(m, nodes_cdf=np.interp(_NODES, np.linspace(0.0, 1.0,
                                                                          _KERNEL_GRID), grid))


def _fit_betabinom(j: np.ndarray, k: int, support: np.ndarray) -> _Margin:
    m, v = j.mean(), j.var(ddof=1)
    denom = k * (v / m - m - 1) + m if m > 0 else 0.0
    if m > 0 and denom > 0 and v > 0:
        start = [(k * m - v) / denom, (k - m) * (k - v / m) / denom]
    else:
        start = [1.0, 1.0]
    start = np.clip(np.nan_to_num(start, nan=1.0), 1.0, _SHAPE_MAX)

    def nll(par: np.ndarray) -> float:
        return -float(stats.betabinom.logpmf(j, k, par[0], par[1]).sum())

    res = optimize.minimize(nll, start, method="L-BFGS-B", bounds=[(1.0, _SHAPE_MAX)] * 2,
                            options={"ftol": 1e-15, "gtol": 1e-9, "maxiter": 2000})
    a, b = (float(v) for v in res.x)
    pmf = stats.betabinom.pmf(np.arange(k + 1), k, a, b)
    return _Margin("betabinom", {"shape1": a, "shape2": b, "trials": float(k)}, -float(res.fun),
                   2.0, True, support=support, pmf=pmf / pmf.sum())


def _fit_discrete_kernel(j: np.ndarray, k: int, support: np.ndarray) -> _Margin:
    """A Gaussian kernel on the success counts 0..k, its mass below 0 and above k folded to the
    ends: p_m = mean_i [Phi((m + 1/2 - j_i)/h) - Phi((m - 1/2 - j_i)/h)]."""
    h = max(_bw_nrd0(j.astype(float)), 0.5)
    edges = np.arange(k + 2) - 0.5
    edges[0], edges[-1] = -np.inf, np.inf
    mass = np.diff(special.ndtr((edges[None, :] - j[:, None]) / h), axis=1)  # n x (k + 1)
    pmf = mass.mean(axis=0)
    own = mass[np.arange(len(j)), j]
    df = float(np.mean(own / len(j) / pmf[j]) * len(j))
    return _Margin("kernel", {"bandwidth": h / k}, float(np.log(pmf[j]).sum()), df, True,
                   support=support, pmf=pmf / pmf.sum())


def _fit_margin(x: np.ndarray, family: str, trials: int | None, system: str) -> _Margin:
    if np.ptp(x) == 0:
        raise DesignError(
            f"system {system!r} scores {x[0]:g} on every topic: no distribution can be fitted "
            "to a constant. Drop it (irm.filter_systems) before simulating.")
    if trials is None:
        cands: tuple[str, ...] = CONTINUOUS_FAMILIES if family == "auto" else (family,)
        fits = [{"truncnorm": _fit_truncnorm, "beta": _fit_beta, "kernel": _fit_kernel}[c](x)
                for c in cands]
    else:
        support = np.arange(trials + 1) / trials
        j = np.rint(x * trials).astype(np.int64)
        cands = DISCRETE_FAMILIES if family == "auto" else (family,)
        fits = [{"betabinom": _fit_betabinom, "kernel": _fit_discrete_kernel}[c](j, trials,
                                                                                 support)
                for c in cands]
    return min(fits, key=lambda m: 2 * m.df - 2 * m.loglik)


# --------------------------------------------------------------------------------------------
# the simulator


def _normal_scores(X: np.ndarray) -> np.ndarray:
    T = X.shape[0]
    return special.ndtri(stats.rankdata(X, axis=0) / (T + 1))


def _factor(C: np.ndarray) -> np.ndarray:
    """L with L L' = C (C a correlation matrix, possibly singular: T < systems)."""
    w, V = np.linalg.eigh(C)
    L = V * np.sqrt(np.clip(w, 0.0, None))
    # rows rescaled so the diagonal of L L' is exactly 1 (the clipped eigenvalues' share)
    norm = np.sqrt((L**2).sum(axis=1))
    return L / np.where(norm > 0, norm, 1.0)[:, None]


@dataclass(frozen=True, repr=False, eq=False)
class TopicSimulator(ResultDisplay):
    """A fitted simulator of topics: one margin per system and a Gaussian copula.

    Made by :func:`fit_simulator`.

    Attributes
    ----------
    systems : tuple of str
        The systems, in the data's order (the columns of every sample).
    correlation : ndarray
        The copula's correlation matrix (systems x systems).
    copula : str
        ``"gaussian"`` or ``"independent"``.
    k : int or None
        ``k`` of a ``P@k`` measure (discrete margins, ``k`` trials), None for a continuous
        measure.
    n_topics : int
        Topics behind the fit.
    measure, collection : str or None
        Copied from the data (and into every sample).
    """

    systems: tuple[str, ...]
    _margins: tuple[_Margin, ...] = field(repr=False)
    correlation: np.ndarray = field(repr=False)
    copula: str
    k: int | None
    n_topics: int
    observed: np.ndarray = field(repr=False)  # observed mean per system
    measure: str | None = None
    collection: str | None = None
    _factor: np.ndarray | None = field(default=None, repr=False)

    # ---- what it knows
    @property
    def expected_means(self) -> pd.Series:
        """The true mean score of every system (indexed by system): the expected value of its
        margin, by numerical integration."""
        return pd.Series([m.mean for m in self._margins], index=pd.Index(self.systems,
                         name="system"), name="expected_mean")

    @property
    def margins(self) -> pd.DataFrame:
        """One row per system: ``system``; ``family`` (``truncnorm``, ``beta``, ``kernel``,
        ``betabinom``); ``expected_mean`` (the margin's expected value); ``observed_mean``
        (the data's mean); ``loglik``, ``df`` (parameters, or a kernel's effective degrees of
        freedom), ``aic`` of the fit; ``transform`` (the Beta applied to the CDF to move the
        mean: ``Beta(a,1)``, ``Beta(1,b)``, or empty)."""
        rows = []
        for s, m, o in zip(self.systems, self._margins, self.observed):
            tr = ("" if m.direction == 0 else f"Beta({m.theta:.4g},1)" if m.direction > 0
                  else f"Beta(1,{m.theta:.4g})")
            rows.append((s, m.family, m.mean, float(o), m.loglik, m.df,
                         2 * m.df - 2 * m.loglik, tr))
        return pd.DataFrame(rows, columns=list(MARGIN_COLUMNS))

    @property
    def parameters(self) -> dict[str, dict[str, float]]:
        """The fitted parameters of every system's margin (system -> name -> value)."""
        return {s: dict(m.params) for s, m in zip(self.systems, self._margins)}

    def margin(self, system: str) -> _Margin:
        """The margin of one system (``.cdf(x)``, ``.ppf(u)``, ``.mean``, ``.params``)."""
        try:
            return self._margins[self.systems.index(str(system))]
        except ValueError:
            raise DesignError(f"no system {system!r} in the simulator; systems: "
                              f"{', '.join(self.systems[:10])}"
                              f"{', ...' if len(self.systems) > 10 else ''}.") from None

    # ---- transformations
    def with_means(self, means: float | Sequence[float] | Mapping[str, float] | pd.Series,
                   *, unreachable: Literal["raise", "drop"] = "raise") -> TopicSimulator:
        """A simulator whose margins are transformed to the given expected values.

        ``means``: one value for every system, a sequence in :attr:`systems` order, or a
        mapping / Series system -> value (systems not named keep their margin). The copula is
        unchanged. The transform is simIReff's: the CDF becomes ``B(F)``, ``B`` a Beta(a, 1)
        or Beta(1, b) CDF with a, b >= 1 found by root finding (expected means within 1e-10).
        A margin cannot always reach a far target (a system whose scores are all near 0 has a
        CDF that is 1, in floating point, a little above 0): ``unreachable="raise"`` (the
        default) refuses, ``"drop"`` leaves such systems out of the simulator (as simIReff's
        ``effTransformAll`` returns NA for them) and names them in a
        :class:`~irmodels.errors.DataQualityWarning`.
        """
        if unreachable not in ("raise", "drop"):
            raise DesignError(f"unreachable must be 'raise' or 'drop'; got {unreachable!r}.")
        current = self.expected_means
        if isinstance(means, (Mapping, pd.Series)):
            unknown = [k for k in means if str(k) not in self.systems]
            if unknown:
                raise DesignError(f"no system {unknown[0]!r} in the simulator.")
            target = current.copy()
            for k, v in means.items():
                target[str(k)] = float(v)
        elif np.ndim(means) == 0:
            target = pd.Series(float(means), index=current.index)  # type: ignore[arg-type]
        else:
            vals = np.asarray(means, dtype=float)
            if vals.shape != (len(self.systems),):
                raise DesignError(f"means must have one value per system ({len(self.systems)}); "
                                  f"got {vals.shape[0] if vals.ndim == 1 else vals.shape}.")
            target = pd.Series(vals, index=current.index)
        bad = target[~np.isfinite(target) | (target <= 0) | (target >= 1)]
        if len(bad):
            raise DesignError(f"expected means must lie strictly inside (0, 1); got "
                              f"{bad.iloc[0]!r} for system {bad.index[0]!r}.")
        margins: list[_Margin] = []
        dropped: list[str] = []
        for s, m, t, c in zip(self.systems, self._margins, target, current):
            try:
                margins.append(m.with_mean(float(t), s) if t != c or m.direction else m)
            except DesignError:
                if unreachable == "raise":
                    raise
                dropped.append(s)
                margins.append(m)
        out = dataclasses.replace(self, _margins=tuple(margins))
        if not dropped:
            return out
        keep = [i for i, s in enumerate(self.systems) if s not in dropped]
        if len(keep) < 2:
            raise DesignError(
                f"only {len(keep)} system(s) can be moved to the expected means asked for; "
                f"{len(dropped)} cannot ({', '.join(dropped[:5])}"
                f"{', ...' if len(dropped) > 5 else ''}). Choose means nearer the systems'.")
        warnings.warn(
            f"{len(dropped)} of {len(self.systems)} systems cannot be moved to the expected "
            f"mean(s) asked for and are left out of the simulator: {', '.join(dropped[:8])}"
            f"{', ...' if len(dropped) > 8 else ''} (their margins reach too little or too "
            "much of [0, 1]; e.g. scores all near 0). Drop them first "
            "(irm.filter_systems) to silence this.", DataQualityWarning, stacklevel=3)
        return out._subset(keep)

    def select(self, systems: Sequence[str]) -> TopicSimulator:
        """The simulator of some of the systems (their margins and copula), in that order."""
        missing = [str(x) for x in systems if str(x) not in self.systems]
        if missing:
            raise DesignError(f"no system {missing[0]!r} in the simulator.")
        return self._subset([self.systems.index(str(x)) for x in systems])

    def _subset(self, keep: Sequence[int]) -> TopicSimulator:
        idx = np.asarray(keep, dtype=np.int64)
        C = self.correlation[np.ix_(idx, idx)]
        return dataclasses.replace(
            self, systems=tuple(self.systems[i] for i in idx),
            _margins=tuple(self._margins[i] for i in idx), correlation=C,
            observed=self.observed[idx], _factor=_factor(C))

    def with_margins_of(self, other: TopicSimulator, columns: Sequence[int]) -> TopicSimulator:
        """This simulator with the margins of the systems at positions ``columns`` taken from
        ``other`` (a transform of the same fit: ``sim.with_means(...)``); the copula is kept."""
        if other.systems != self.systems:
            raise DesignError("with_margins_of needs a simulator of the same systems.")
        margins = list(self._margins)
        for c in columns:
            margins[int(c)] = other._margins[int(c)]
        return dataclasses.replace(self, _margins=tuple(margins))

    def null(self) -> TopicSimulator:
        """Every system transformed to the same expected value, the mean of the fitted ones
        (systems that cannot reach it are left out, with a warning: ``with_means(...,
        unreachable="drop")``)."""
        return self.with_means(float(np.mean([m.mean for m in self._margins])),
                               unreachable="drop")

    # ---- sampling
    def sample_matrix(self, n: int, rng: np.random.Generator,
                      columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """``n`` simulated topics as an ``n x systems`` array (or only ``columns``)."""
        cols = np.arange(len(self.systems)) if columns is None else np.asarray(columns)
        if self.copula == "independent":
            Z = rng.standard_normal((n, len(cols)))
        else:
            L = self._factor if self._factor is not None else _factor(self.correlation)
            L = L[cols]
            Z = rng.standard_normal((n, L.shape[1])) @ L.T
        return _quantiles([self._margins[c] for c in cols], special.ndtr(Z))

    def sample(self, n: int, seed: Any = 0) -> pd.DataFrame:
        """``n`` new topics: a long frame (``collection, measure, topic, system, score``;
        topics ``s1``, ``s2``, ...), reproducible from ``seed``.

        Examples
        --------
        >>> import irmodels as irm
        >>> sim = irm.replicates.fit_simulator(irm.datasets.load("adhoc3", "AP"))
        >>> sim.sample(3, seed=1).shape
        (120, 5)
        """
        from irmodels.data.frame import frame

        n = check_int(n, "n", low=1)
        rng = np.random.default_rng(seed_sequence(seed))
        X = self.sample_matrix(n, rng)
        topics = [f"s{i + 1}" for i in range(n)]
        df = pd.DataFrame({"topic": np.repeat(topics, len(self.systems)),
                           "system": np.tile(np.asarray(self.systems, dtype=object), n),
                           "score": X.ravel()})
        if self.measure is not None:
            df["measure"] = self.measure
        if self.collection is not None:
            df["collection"] = self.collection
        return frame(df, measure="measure" if self.measure is not None else None,
                     collection="collection" if self.collection is not None else None)

    # ---- display
    def _display_title(self) -> str:
        fams = self.margins["family"].value_counts()
        return (f"Topic simulator: {len(self.systems)} systems fitted on {self.n_topics} topics, "
                f"{self.copula} copula; margins "
                + ", ".join(f"{k} x{v}" for k, v in fams.items()))

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        shown = self.margins.set_index("system").drop(columns=["loglik"])
        return [("Margins (AIC = 2 df - 2 loglik)", shown)]

    def to_frame(self) -> pd.DataFrame:
        """:attr:`margins`."""
        return self.margins

    def __repr__(self) -> str:
        return (f"<TopicSimulator systems={len(self.systems)}, topics={self.n_topics}, "
                f"copula={self.copula!r}, k={self.k}>")


def _truncnorm_ppf(u: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
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


def _quantiles(margins: Sequence[_Margin], U: np.ndarray) -> np.ndarray:
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
            out[:, idx] = _truncnorm_ppf(V[:, idx], mu, sd)
    for i in np.flatnonzero((fams != "beta") & (fams != "truncnorm")):
        out[:, i] = margins[int(i)]._ppf0(V[:, i])
    return out


def _k_of(data: pd.DataFrame, k: int | None, X: np.ndarray) -> int | None:
    """``k`` of a ``P@k`` measure: as given, or from a ``measure`` column named ``P@k`` whose
    scores are on the lattice 0, 1/k, ..., 1 (off it, e.g. averaged over shards, the measure is
    treated as continuous)."""
    if k is None and "measure" in data.columns:
        names = pd.unique(data["measure"].astype(str))
        if len(names) == 1:
            m = re.fullmatch(r"\s*P(?:@|_)(\d+)\s*", str(names[0]), flags=re.IGNORECASE)
            if m:
                guess = int(m.group(1))
                on = np.abs(X * guess - np.rint(X * guess)).max() <= 1e-6 if guess else False
                return guess if on else None
    if k is None:
        return None
    trials = check_int(k, "k", low=1)
    off = np.abs(X * trials - np.rint(X * trials))
    if off.max() > 1e-6:
        i, j = np.unravel_index(int(np.argmax(off)), X.shape)
        raise DataFormatError(
            f"discrete margins with {trials} trials need scores in 0, 1/{trials}, ..., 1 (P@"
            f"{trials}); found {X[i, j]!r}. Pass k=None for a continuous measure, or the "
            "right k.")
    return trials


def fit_simulator(
    data: pd.DataFrame,
    *,
    margins: Literal["auto", "truncnorm", "beta", "kernel", "betabinom"] | Mapping[str, str]
    = "auto",
    copula: Literal["gaussian", "independent"] = "gaussian",
    null: bool = False,
    k: int | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> TopicSimulator:
    """Fit a stochastic simulator of topics to a topic x system score matrix.

    Parameters
    ----------
    data : DataFrame
        A long frame with one score in [0, 1] per (topic, system), every cell present.
    margins : {"auto", "truncnorm", "beta", "kernel", "betabinom"} or mapping
        Family of every system's margin, or a mapping system -> family (systems not named:
        ``auto``). ``auto`` picks per system the smallest AIC among ``truncnorm``, ``beta``,
        ``kernel`` (continuous measures) or ``betabinom``, ``kernel`` (``P@k``), as
        simIReff's ``effContFitAndSelect`` does.
    copula : {"gaussian", "independent"}
        ``gaussian``: the correlation of the normal scores ``Phi^-1(rank / (T + 1))`` of the
        systems (average ranks for ties); ``independent``: no dependence between systems.
    null : bool
        Transform every margin to one expected value, the mean of the fitted ones
        (:meth:`TopicSimulator.null`): every true difference is 0.
    k : int, optional
        ``k`` of a ``P@k`` measure (discrete margins on 0, 1/k, ..., 1, ``k`` trials); read
        from a ``measure`` column named ``P@k`` (with scores on that lattice) when not given.
    topic, system, score : str
        Column names, as in :func:`irmodels.frame`.

    Returns
    -------
    TopicSimulator
        ``.expected_means``, ``.margins`` (per system: ``system, family, expected_mean,
        observed_mean, loglik, df, aic, transform``), ``.correlation``, ``.sample(n, seed)``,
        ``.with_means(...)``, ``.null()``.

    Raises
    ------
    DataFormatError
        A score outside [0, 1], missing or infinite, or off the ``P@k`` lattice.
    DesignError
        Missing (topic, system) cells, fewer than 3 topics or 2 systems, a constant system,
        an unknown family, copula, or a family that does not fit the measure's type.

    Notes
    -----
    Truncated normal: MLE of (mu, sigma) of a normal truncated to [0, 1], sigma >= 0.05.
    Beta: MLE on scores capped to [1e-6, 1 - 1e-6] with both shapes >= 1 (simIReff's bounds:
    a capped zero would otherwise dominate the likelihood). Kernel: a Gaussian kernel with
    R's ``bw.nrd0`` bandwidth reflected at 0 and 1, its effective degrees of freedom
    ``mean(K_h(0) / f(x_i))`` in the AIC. Beta-binomial: MLE of the two shapes (>= 1) on the
    success counts ``k x``. Expected values come from ``int_0^1 (1 - G(x)) dx`` by
    composite Gauss-Legendre quadrature (4096 nodes). Urbano & Nagler (SIGIR 2018) fit
    vine copulas; a Gaussian copula keeps the pairwise rank correlations, which is what
    paired tests see.

    Examples
    --------
    >>> import irmodels as irm
    >>> sim = irm.replicates.fit_simulator(irm.datasets.load("adhoc3", "AP"), null=True)
    >>> sim
    <TopicSimulator systems=40, topics=50, copula='gaussian', k=None>
    >>> round(float(sim.expected_means.std()), 8)
    0.0
    """
    from irmodels.data._columns import user_frame
    from irmodels.data.frame import to_wide

    what = "irm.replicates.fit_simulator"
    if copula not in COPULAS:
        raise ArgumentError(f"unknown copula {copula!r}{did_you_mean(copula, COPULAS)}; choose "
                            f"one of {', '.join(map(repr, COPULAS))}.")
    families = ("auto",) + tuple(dict.fromkeys(CONTINUOUS_FAMILIES + DISCRETE_FAMILIES))
    named = ({str(key): v for key, v in margins.items()} if isinstance(margins, Mapping)
             else None)
    for fam in (named.values() if named is not None else [margins]):
        if not isinstance(fam, str) or fam not in families:
            raise ArgumentError(f"unknown margins {fam!r}{did_you_mean(fam, families)}; choose "
                                f"one of {', '.join(map(repr, families))} (or a mapping "
                                "system -> one of them).")
    frame_, _ = user_frame(data, topic=topic, system=system, score=score, what=what)
    if not isinstance(frame_, pd.DataFrame):
        raise DataFormatError(f"{what} needs a long frame of scores; got "
                              f"{type(frame_).__name__}.")
    wide = to_wide(frame_)
    X = wide.to_numpy(dtype=np.float64)
    T, R = X.shape
    if not np.isfinite(X).all():
        raise DesignError(f"{what} needs a score in every (topic, system) cell; "
                          f"{int((~np.isfinite(X)).sum())} are missing or not finite. Drop or "
                          "fill them first (irm.balance shows which).")
    if T < 3 or R < 2:
        raise DesignError(f"{what} needs at least 3 topics and 2 systems; the data has {T} "
                          f"topic(s) and {R} system(s).")
    if X.min() < 0 or X.max() > 1:
        bad = X.min() if X.min() < 0 else X.max()
        raise DataFormatError(
            f"the margins live on [0, 1]; a score of {bad!r} is outside. Simulate a measure "
            "bounded by [0, 1] (AP, nDCG, P@k, RR), or rescale the scores first.")
    k = _k_of(frame_, k, X)
    systems = tuple(str(s) for s in wide.columns)
    if named is not None:
        unknown = [key for key in named if key not in systems]
        if unknown:
            raise DesignError(f"margins names system {unknown[0]!r}, which the data does not "
                              f"have; systems: {', '.join(systems[:8])}"
                              f"{', ...' if len(systems) > 8 else ''}.")
    chosen = [named.get(sy, "auto") if named is not None else str(margins) for sy in systems]
    for fam in set(chosen):
        if k is None and fam == "betabinom":
            raise DesignError("margins='betabinom' needs a discrete measure (P@k): pass k "
                              "or data whose measure column is 'P@k'.")
        if k is not None and fam in ("truncnorm", "beta"):
            raise DesignError(f"margins={fam!r} is continuous but the measure is discrete "
                              f"(P@{k}); use 'betabinom', 'kernel' or 'auto'.")
    fitted = tuple(_fit_margin(X[:, j], chosen[j], k, systems[j]) for j in range(R))
    if copula == "gaussian":
        C = np.corrcoef(_normal_scores(X), rowvar=False)
        C = np.atleast_2d(np.nan_to_num(C, nan=0.0))
        np.fill_diagonal(C, 1.0)
    else:
        C = np.eye(R)

    def one(col: str) -> str | None:
        if col in frame_.columns:
            vals = pd.unique(frame_[col].astype(str))
            return str(vals[0]) if len(vals) == 1 else None
        return None

    sim = TopicSimulator(systems=systems, _margins=fitted, correlation=C, copula=copula,
                         k=k, n_topics=T, observed=X.mean(axis=0),
                         measure=one("measure"), collection=one("collection"),
                         _factor=_factor(C))
    return sim.null() if null else sim


def simulate_topics(
    data: pd.DataFrame,
    n_topics: int,
    *,
    margins: Literal["auto", "truncnorm", "beta", "kernel", "betabinom"] = "auto",
    copula: Literal["gaussian", "independent"] = "gaussian",
    null: bool = False,
    seed: Any = 0,
    k: int | None = None,
) -> pd.DataFrame:
    """Simulate ``n_topics`` new topics for the systems of ``data``.

    The same as ``fit_simulator(data, margins=..., copula=..., null=..., k=...)
    .sample(n_topics, seed)``; fit once with :func:`fit_simulator` to sample many times and
    to read the true means (``.expected_means``).

    Returns
    -------
    DataFrame
        A long frame: ``collection``, ``measure`` (when the data has one of each), ``topic``
        (``s1``, ``s2``, ...), ``system``, ``score``.

    Examples
    --------
    >>> import irmodels as irm
    >>> sim = irm.replicates.simulate_topics(irm.datasets.load("adhoc3", "AP"), 100, seed=1)
    >>> sim["topic"].nunique(), sim["system"].nunique()
    (100, 40)
    """
    sim = fit_simulator(data, margins=margins, copula=copula, null=null, k=k)
    return sim.sample(n_topics, seed)
