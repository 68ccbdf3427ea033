"""Resampling tests of every pair of systems at once: the shifted bootstrap and the
randomization (sign-flip permutation) test of the mean difference, and the randomised Tukey HSD.

One B x T matrix of random signs (or bootstrap counts) is drawn and shared by all pairs; every
resampled mean is one matrix product per chunk of pairs (chunks can run in processes).

References: docs/methods.md: "Power and topic-set size"; Smucker, Allan & Carterette, CIKM 2007;
Carterette, ACM TOIS 30(1), 2012 (randomised Tukey HSD).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from irmodels import parallel

__all__ = ["resampling_test", "tukey_randomised"]

# Bound on the number of float64 values of one block of resampled statistics (~64 MB).
_BLOCK = 8_000_000


def _row_quantiles(Mt: np.ndarray, qs: Sequence[float]) -> list[np.ndarray]:
    """Quantiles of every row (numpy's default "linear" method) by partial sorting in place."""
    n = Mt.shape[1]
    where = []
    for q in qs:
        h = (n - 1) * q
        lo = int(np.floor(h))
        where.append((lo, min(lo + 1, n - 1), h - lo))
    Mt.partition(sorted({k for w in where for k in w[:2]}), axis=1)
    out = []
    for lo, hi, t in where:
        a, b = Mt[:, lo], Mt[:, hi]
        out.append(a + t * (b - a) if t < 0.5 else b - (1 - t) * (b - a))
    return out


def _resample_chunk(args: tuple) -> dict[str, np.ndarray]:
    """Resampling statistics for one chunk of pairs (module level so processes can run it)."""
    kind, W, D, alternative, alpha, exact = args
    T = D.shape[0]
    B = W.shape[0]
    dbar = D.mean(axis=0)
    Mt = D.T @ W.T  # p x B resampled sums, one contiguous row per pair
    Mt /= T
    obs = dbar[:, None]
    tol = (1e-12 + 1e-9 * np.abs(dbar))[:, None]
    if kind == "bootstrap":
        # shifted resampled means m* - dbar against the observed dbar
        if alternative == "two-sided":
            a = np.abs(obs)
            count = ((Mt >= obs + a - tol) | (Mt <= obs - a + tol)).sum(axis=1)
        elif alternative == "greater":
            count = (Mt >= 2 * obs - tol).sum(axis=1)
        else:
            count = (Mt <= 2 * obs + tol).sum(axis=1)
        p = (count + 1.0) / (B + 1.0)  # never 0: the observed sample counts as one resample
        if alternative == "two-sided":
            q_lo, q_hi = _row_quantiles(Mt, [alpha / 2, 1 - alpha / 2])
            lo, hi = 2 * dbar - q_hi, 2 * dbar - q_lo
        elif alternative == "greater":
            lo, hi = 2 * dbar - _row_quantiles(Mt, [1 - alpha])[0], np.full_like(dbar, np.inf)
        else:
            lo, hi = np.full_like(dbar, -np.inf), 2 * dbar - _row_quantiles(Mt, [alpha])[0]
        return {"p": p, "ci_lower": lo, "ci_upper": hi}
    if alternative == "two-sided":
        a = np.abs(obs) - tol
        count = ((Mt >= a) | (Mt <= -a)).sum(axis=1)
    elif alternative == "greater":
        count = (Mt >= obs - tol).sum(axis=1)
    else:
        count = (Mt <= obs + tol).sum(axis=1)
    p = count / B if exact else (count + 1.0) / (B + 1.0)
    return {"p": p}


def resampling_test(
    kind: str,
    D: np.ndarray,
    alternative: str,
    alpha: float,
    n_resamples: int,
    rng: np.random.Generator,
    backend: object,
) -> tuple[dict[str, np.ndarray], bool]:
    T, P = D.shape
    exact = False
    if kind == "bootstrap":
        idx = rng.integers(0, T, size=(n_resamples, T))
        rows = np.repeat(np.arange(n_resamples), T)
        counts = np.bincount(rows * T + idx.ravel(), minlength=n_resamples * T)
        W = counts.reshape(n_resamples, T).astype(np.float64)
    elif T < 63 and 2**T <= n_resamples:
        exact = True
        codes = np.arange(2**T, dtype=np.int64)[:, None]
        W = 1.0 - 2.0 * ((codes >> np.arange(T)) & 1).astype(np.float64)
    else:
        W = 1.0 - 2.0 * rng.integers(0, 2, size=(n_resamples, T)).astype(np.float64)
    width = max(1, _BLOCK // W.shape[0])
    chunks = [(kind, W, D[:, i : i + width], alternative, alpha, exact) for i in range(0, P, width)]
    if backend is None or backend == "serial":
        parts = [_resample_chunk(c) for c in chunks]
    else:
        parts = parallel.map(_resample_chunk, chunks, backend=backend)
    out = {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}
    return out, exact


def tukey_randomised(
    X: np.ndarray, absdiff: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Randomised Tukey HSD p-values: share of permutations whose range of means is as large."""
    T, R = X.shape
    width = max(1, _BLOCK // (T * R))
    ranges = np.empty(n_resamples)
    done = 0
    while done < n_resamples:
        c = min(width, n_resamples - done)
        perm = rng.permuted(np.broadcast_to(X, (c, T, R)), axis=2)
        means = perm.mean(axis=1)
        ranges[done : done + c] = means.max(axis=1) - means.min(axis=1)
        done += c
    ranges.sort()
    tol = 1e-12 + 1e-9 * absdiff
    count = n_resamples - np.searchsorted(ranges, absdiff - tol, side="left")
    return (count + 1.0) / (n_resamples + 1.0)
