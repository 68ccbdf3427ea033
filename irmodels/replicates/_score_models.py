"""The score models of document-sample simulation (:class:`ScoreModel`,
:func:`fit_score_model`, :func:`fit_score_models`): bootstrap, kernel density ("kde") and the
Gaussian (relevant) with gamma (non-relevant) mixture ("gmg"), as described in
:mod:`irmodels.replicates.documents`, which re-exports these names. References:
docs/methods.md: "Document-sample simulation".
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import fft as sp_fft
from scipy import special, stats
from scipy.interpolate import CubicHermiteSpline

from irmodels.errors import DataFormatError

Model = Literal["bootstrap", "kde", "gmg"]


# ---------------------------------------------------------------------------------------------
# score models
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreModel:
    """A fitted model of one class's scores: it samples scores and gives P(score > x).

    ``kind`` is ``"bootstrap"`` (``values`` = observed scores), ``"kde"`` (``values`` = centres,
    ``scale`` = bandwidth), ``"gmm"`` (``weights``, ``means``, ``sds``) or ``"gamma"``
    (``shape``, ``scale``, ``loc``).
    """

    kind: str
    values: np.ndarray | None = None
    scale: float = 0.0
    weights: np.ndarray | None = None
    means: np.ndarray | None = None
    sds: np.ndarray | None = None
    shape: float = 0.0
    loc: float = 0.0
    spline: object = None  # kde: cubic Hermite interpolant of the survival function

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        """Draw scores."""
        if self.kind == "bootstrap":
            assert self.values is not None
            return rng.choice(self.values, size=size, replace=True)
        if self.kind == "kde":
            assert self.values is not None
            centres = rng.choice(self.values, size=size, replace=True)
            return centres + self.scale * rng.standard_normal(size)
        if self.kind == "gmm":
            assert self.weights is not None and self.means is not None and self.sds is not None
            comp = rng.choice(len(self.weights), size=size, p=self.weights)
            return self.means[comp] + self.sds[comp] * rng.standard_normal(size)
        if self.kind == "gamma":
            return self.loc + rng.gamma(self.shape, self.scale, size=size)
        raise ValueError(self.kind)  # pragma: no cover

    def sf(self, x: np.ndarray) -> np.ndarray:
        """P(score > x), elementwise."""
        x = np.asarray(x, dtype=float)
        if self.kind == "bootstrap":
            assert self.values is not None
            v = self.values  # sorted at construction by fit_score_model
            return (len(v) - np.searchsorted(v, x, side="right")) / len(v)
        if self.kind == "kde":
            assert self.values is not None
            if self.spline is not None:
                lo, hi = self.spline.x[0], self.spline.x[-1]  # type: ignore[attr-defined]
                inside = self.spline(np.clip(x, lo, hi))  # type: ignore[operator]
                return np.clip(np.where(x < lo, 1.0, np.where(x > hi, 0.0, inside)), 0.0, 1.0)
            return kde_sf(x, self.values, self.scale)
        if self.kind == "gmm":
            assert self.weights is not None and self.means is not None and self.sds is not None
            z = (x[..., None] - self.means) / self.sds
            return (special.ndtr(-z) * self.weights).sum(axis=-1)
        if self.kind == "gamma":
            return stats.gamma.sf(x - self.loc, self.shape, scale=self.scale)
        raise ValueError(self.kind)  # pragma: no cover

    def pmf_at(self, x: np.ndarray) -> np.ndarray:
        """P(score == x): nonzero only for the bootstrap (discrete) model."""
        x = np.asarray(x, dtype=float)
        if self.kind != "bootstrap":
            return np.zeros(x.shape)
        assert self.values is not None
        v = self.values
        return (np.searchsorted(v, x, side="right") - np.searchsorted(v, x, side="left")) / len(v)


def kde_sf(x: np.ndarray, centres: np.ndarray, h: float) -> np.ndarray:
    """Exact survival function of a Gaussian KDE: mean over centres of P(centre + hZ > x)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    flat, res = x.reshape(-1), out.reshape(-1)
    step = max(1, 2_000_000 // max(1, len(centres)))
    for i in range(0, len(flat), step):
        z = (flat[i : i + step, None] - centres[None, :]) / h
        res[i : i + step] = special.ndtr(-z).mean(axis=1)
    return out


#: Node spacing of the KDE survival function, in bandwidths (error bound 3e-6, see kde_model).
_KDE_STEP = 0.01
_KDE_MAX_NODES = 2**18 + 1


def kde_model(x: np.ndarray, with_sf: bool = True) -> ScoreModel:
    """A KDE score model; with ``with_sf`` its survival function is a cubic Hermite spline.

    Nodes every 0.01 bandwidths over [min - 9h, max + 9h] (up to 0.05 bandwidths when that
    would exceed 262,145 nodes; beyond, with extreme outliers, the exact survival function is
    evaluated on demand). The values and derivatives (minus the density) at every node come
    from FFT convolutions of the linearly binned centres with the normal survival function and
    density on [-9h, 9h] (plus a tail sum), so the cost is O(G log G) for G nodes instead of G
    times the number of centres. Linear binning moves each centre's contribution by at most
    ``step^2 / (8 h^2) max|phi'|``: 3e-6 at 0.01 bandwidths, 8e-5 at 0.05 (Wand & Jones,
    Kernel Smoothing, 1995, appendix D), far under the Monte Carlo error of any simulation (the
    tests compare with the exact survival function); outside the node range the survival
    function is 1 or 0 to double precision.
    The relevant class needs no survival function (only samples): ``with_sf=False`` skips it.
    """
    h = _silverman(x)
    if not with_sf:
        return ScoreModel("kde", values=x, scale=h)

    lo, hi = float(x.min() - 9 * h), float(x.max() + 9 * h)
    step = max(_KDE_STEP * h, (hi - lo) / (_KDE_MAX_NODES - 1))
    if step > 5 * _KDE_STEP * h:  # extreme outliers: the exact survival function on demand
        return ScoreModel("kde", values=x, scale=h)
    n_nodes = int(np.ceil((hi - lo) / step)) + 1
    nodes = lo + step * np.arange(n_nodes)
    t = (x - lo) / step
    j = np.minimum(np.floor(t).astype(np.int64), n_nodes - 2)
    frac = t - j
    w = (np.bincount(j, 1.0 - frac, n_nodes) + np.bincount(j + 1, frac, n_nodes)) / len(x)
    # node i: sum_j w_j Phi((j - i) step / h) = (centres within 9 h: a convolution with the
    # kernel on [-M, M]) + (centres beyond i + M: a tail sum, where Phi is 1 to 1e-19)
    half = int(np.ceil(9.0 * h / step))
    n_fft = sp_fft.next_fast_len(n_nodes + 2 * half, real=True)
    k_sf, k_dens = _kde_kernels(n_fft, half, _KDE_STEP if step == _KDE_STEP * h else step / h)
    fw = sp_fft.rfft(w, n_fft)
    window = slice(half, half + n_nodes)
    tail = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
    sf = sp_fft.irfft(fw * k_sf, n_fft)[window] + tail[np.minimum(np.arange(n_nodes) + half + 1,
                                                                   n_nodes)]
    sf = np.clip(sf, 0.0, 1.0)
    dens = np.maximum(sp_fft.irfft(fw * k_dens, n_fft)[window], 0.0) / (h * np.sqrt(2 * np.pi))
    return ScoreModel("kde", values=x, scale=h, spline=CubicHermiteSpline(nodes, sf, -dens))


@functools.lru_cache(maxsize=64)
def _kde_kernels(n_fft: int, half: int, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Spectra of the normal survival function and density on offsets ``[-half, half] * ratio``
    (reversed for a convolution); the same for every pair of a simulation, so cached."""
    z = (half - np.arange(2 * half + 1)) * ratio
    return sp_fft.rfft(special.ndtr(z), n_fft), sp_fft.rfft(np.exp(-0.5 * z * z), n_fft)


def _silverman(x: np.ndarray) -> float:
    n = len(x)
    sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    iqr = float(np.subtract(*np.percentile(x, [75, 25]))) / 1.34 if n > 1 else 0.0
    spread = min(sd, iqr) if iqr > 0 else sd
    if spread <= 0:
        return 1e-3 * (1.0 + abs(float(np.mean(x))))
    return 0.9 * spread * n ** (-0.2)


def fit_gmm_batch(xs: Sequence[np.ndarray], k: int, n_iter: int = 200) -> list[tuple]:
    """EM for 1-D Gaussian mixtures with k components, for many samples at once.

    Every sample runs the EM iterations it would run alone (initial means at the quantiles
    (i + 0.5) / k, common SD, equal weights; SDs floored at 1e-3 SD; stop when the
    log-likelihood changes by less than 1e-8 relative): the samples are concatenated and every
    per-sample sum is one ``np.add.reduceat``; a sample that has converged leaves the batch.
    Returns ``(weights, means, sds, loglik)`` per sample.
    """
    P = len(xs)
    lens = np.array([len(x) for x in xs], dtype=np.int64)
    means = np.array([np.quantile(x, (np.arange(k) + 0.5) / k) for x in xs], dtype=float)
    std = np.array([np.std(x) for x in xs])
    floor = np.where(std > 0, np.maximum(1e-6, 1e-3 * std), 1e-6)
    sds = np.repeat(np.maximum(std, floor)[:, None], k, axis=1)
    weights = np.full((P, k), 1.0 / k)
    loglik = np.full(P, -np.inf)
    prev = np.full(P, -np.inf)
    active = np.arange(P)
    ex = np.concatenate(xs).astype(float)  # (E,); per-element arrays are (k, E)
    half_log_2pi = 0.5 * np.log(2 * np.pi)
    for _ in range(n_iter):
        n_a = lens[active]
        starts = np.r_[0, np.cumsum(n_a)[:-1]]
        inv = 1.0 / sds[active]
        const = np.log(weights[active]) + np.log(inv) - half_log_2pi
        logp = ex - np.repeat(means[active].T, n_a, axis=1)
        logp *= np.repeat(inv.T, n_a, axis=1)
        logp *= logp
        logp *= -0.5
        logp += np.repeat(const.T, n_a, axis=1)
        top = np.maximum.reduce(list(logp)) if k > 1 else logp[0].copy()
        resp = np.exp(logp - top)
        total = resp[0].copy()
        for row in resp[1:]:
            total += row
        resp /= total
        ll = np.add.reduceat(np.log(total) + top, starts)
        nk = (np.add.reduceat(resp, starts, axis=1) + 1e-12).T
        new_mu = np.add.reduceat(resp * ex, starts, axis=1).T / nk
        dev = ex - np.repeat(new_mu.T, n_a, axis=1)
        dev *= dev
        dev *= resp
        new_sd = np.sqrt(np.add.reduceat(dev, starts, axis=1).T / nk)
        weights[active] = nk / n_a[:, None]
        means[active] = new_mu
        sds[active] = np.maximum(new_sd, floor[active][:, None])
        loglik[active] = ll
        done = np.abs(ll - prev[active]) < 1e-8 * (1 + np.abs(ll))
        prev[active] = ll
        if done.all():
            break
        if done.any():
            ex = ex[np.repeat(~done, n_a)]
            active = active[~done]
    return [(weights[i], means[i], sds[i], float(loglik[i])) for i in range(P)]


def _fit_gmg_relevant(xs: Sequence[np.ndarray]) -> list[tuple[ScoreModel, str | None]]:
    """Mixtures of 1-3 Gaussians chosen by BIC, fitted to many samples in batches."""
    out: list = [None] * len(xs)
    fit = []
    for i, x in enumerate(xs):
        if len(x) < 3 or np.ptp(x) == 0:
            out[i] = (kde_model(x, with_sf=False), "relevant: kde (fewer than 3 distinct scores)")
        else:
            fit.append(i)
    best: dict[int, tuple] = {}
    for k in (1, 2, 3):
        idx = [i for i in fit if k == 1 or len(xs[i]) >= 3 * k]
        if not idx:
            break
        for i, (w, mu, sd, ll) in zip(idx, fit_gmm_batch([xs[i] for i in idx], k)):
            bic = -2 * ll + (3 * k - 1) * np.log(len(xs[i]))
            if i not in best or bic < best[i][0]:
                best[i] = (bic, w, mu, sd)
    for i, (_, w, mu, sd) in best.items():
        out[i] = (ScoreModel("gmm", weights=w, means=mu, sds=sd), None)
    return out


def fit_score_models(
    samples: Sequence[np.ndarray], model: Model, cls: Literal["relevant", "nonrelevant"],
) -> list[tuple[ScoreModel, str | None]]:
    """Fit the score model of one class to many samples at once (see :func:`fit_score_model`).

    The Gaussian mixtures of ``"gmg"`` are fitted by a batched EM across the samples
    (:func:`fit_gmm_batch`); the KDE survival functions by FFT on a node grid.

    Examples
    --------
    >>> import numpy as np
    >>> fits = fit_score_models([np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.7])], "kde",
    ...                         "nonrelevant")
    >>> [(m.kind, round(m.scale, 4), note) for m, note in fits]
    [('kde', 0.7635, None), ('kde', 0.0585, None)]
    """
    xs = [np.asarray(x, dtype=float) for x in samples]
    if any(len(x) == 0 for x in xs):
        raise DataFormatError(f"cannot fit a {cls} score model to no scores")
    if model == "bootstrap":
        return [(ScoreModel("bootstrap", values=np.sort(x)), None) for x in xs]
    needs_sf = cls == "nonrelevant"  # only the non-relevant class's survival function is used
    if model == "kde":
        return [(kde_model(x, with_sf=needs_sf), None) for x in xs]
    if model != "gmg":
        raise DataFormatError(f"unknown score model {model!r}; use 'bootstrap', 'kde' or 'gmg'")
    if cls == "relevant":
        return _fit_gmg_relevant(xs)
    out: list[tuple[ScoreModel, str | None]] = []
    for x in xs:
        if len(np.unique(x)) < 3:
            out.append((kde_model(x), "nonrelevant: kde (fewer than 3 distinct scores)"))
            continue
        loc = float(x.min() - 0.01 * np.ptp(x))
        shape, _, scale = stats.gamma.fit(x - loc, floc=0)
        out.append((ScoreModel("gamma", shape=float(shape), scale=float(scale), loc=loc), None))
    return out


def fit_score_model(
    scores: np.ndarray, model: Model, cls: Literal["relevant", "nonrelevant"],
    rng: np.random.Generator | None = None,
) -> tuple[ScoreModel, str | None]:
    """Fit the score model of one class; returns the model and a fallback note (or None).

    ``rng`` is accepted for compatibility; no model's fit is random.

    Examples
    --------
    >>> import numpy as np
    >>> m, note = fit_score_model(np.array([1.0, 2.0, 3.0, 4.0]), "kde", "relevant")
    >>> m.kind, round(m.scale, 4), note
    ('kde', 0.7635, None)
    """
    return fit_score_models([scores], model, cls)[0]
