"""Slow reference implementations of the score-model fits (private; for tests and benchmarks).

The simulator fits its score models in batches (:func:`irmodels.replicates.documents.
fit_score_models`): a batched EM for the Gaussian mixtures and FFT-binned KDE survival
functions. These are the straightforward one-sample computations they replaced, kept so that
the tests can check the fast paths against them and ``benchmarks/document_samples.py`` can
time both in one run.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats
from scipy.interpolate import CubicHermiteSpline

__all__ = ["em_one_sample", "kde_spline_exact"]


def em_one_sample(x: np.ndarray, k: int, n_iter: int = 200) -> tuple:
    """EM for a 1-D Gaussian mixture of one sample: ``(weights, means, sds, loglik)``."""
    n = len(x)
    means = np.quantile(x, (np.arange(k) + 0.5) / k).astype(float)
    floor = max(1e-6, 1e-3 * float(np.std(x)) if np.std(x) > 0 else 1e-6)
    sds = np.full(k, max(float(np.std(x)), floor))
    weights = np.full(k, 1.0 / k)
    prev = ll = -np.inf
    for _ in range(n_iter):
        logp = stats.norm.logpdf(x[:, None], means, sds) + np.log(weights)
        norm = special.logsumexp(logp, axis=1)
        ll = float(norm.sum())
        resp = np.exp(logp - norm[:, None])
        nk = resp.sum(axis=0) + 1e-12
        weights = nk / n
        means = (resp * x[:, None]).sum(axis=0) / nk
        sds = np.maximum(np.sqrt((resp * (x[:, None] - means) ** 2).sum(axis=0) / nk), floor)
        if abs(ll - prev) < 1e-8 * (1 + abs(ll)):
            break
        prev = ll
    return weights, means, sds, ll


def kde_spline_exact(x: np.ndarray, h: float):
    """The KDE survival function as a cubic Hermite spline with exact values at its nodes
    (every 0.05 bandwidths, 257-8193 nodes, each node summing over every centre)."""
    lo, hi = float(x.min() - 9 * h), float(x.max() + 9 * h)
    n_nodes = int(np.clip(np.ceil((hi - lo) / (0.05 * h)), 257, 8193))
    nodes = np.linspace(lo, hi, n_nodes)
    z = (nodes[:, None] - x[None, :]) / h
    sf = special.ndtr(-z).mean(axis=1)  # the exact KDE survival function at the nodes
    dens = np.exp(-0.5 * z * z).mean(axis=1) / (h * np.sqrt(2 * np.pi))
    return CubicHermiteSpline(nodes, sf, -dens)
