"""Least-squares ANOVA for unbalanced crossed designs: type I, II and III sums of squares.

Each term is a block of sum-to-zero (``contr.sum``) contrast columns: the row-wise Kronecker
product of the contrast codings of its factors. A sum of squares is the increase in explained
sum of squares when a block enters after a set of other blocks; it is computed by projecting the
block on the orthogonal complement of the span already there (two Gram-Schmidt passes) and a
rank-revealing QR of what is left, so partially aliased terms (empty cells) lose degrees of
freedom exactly as in R's ``lm`` (column tolerance 1e-7) and fully aliased terms are detected.

- type I: blocks in formula order (``anova(lm())``);
- type II: each term after every term that does not contain it (``car::Anova(type = 2)``);
- type III: each term after all the other terms, with sum-to-zero contrasts
  (``car::Anova(type = 3)`` with ``options(contrasts = c("contr.sum", "contr.poly"))``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RANK_TOL", "LsqBlocks", "sequential_ss", "term_block"]

#: Relative tolerance for a column to count as linearly independent (R's ``lm.fit`` uses 1e-7).
RANK_TOL = 1e-7


def _contr_sum(codes: np.ndarray, n_levels: int) -> np.ndarray:
    """Rows of R's ``contr.sum(n_levels)`` for each code (last level coded -1)."""
    c = np.zeros((codes.shape[0], n_levels - 1))
    rows = np.arange(codes.shape[0])
    last = codes == n_levels - 1
    c[rows[~last], codes[~last]] = 1.0
    c[last, :] = -1.0
    return c


def term_block(codes: list[np.ndarray], n_levels: list[int]) -> np.ndarray:
    """Design columns of one term: row-wise Kronecker product of the factors' contrasts."""
    block = np.ones((codes[0].shape[0], 1))
    for c, n in zip(codes, n_levels):
        x = _contr_sum(c, n)
        block = (block[:, :, None] * x[:, None, :]).reshape(block.shape[0], -1)
    return block


@dataclass(frozen=True)
class LsqBlocks:
    """Result of a sequential fit: per block the SS and df it adds, plus the fit."""

    ss: list[float]
    df: list[int]
    fitted: np.ndarray
    rank: int


def sequential_ss(blocks: list[np.ndarray], y: np.ndarray) -> LsqBlocks:
    """Fit ``blocks`` in order; the SS and df each adds to those before it."""
    # here, not at import: scipy.linalg costs a fresh process about 0.1 s, which a balanced or
    # small fit (and the CLI) never needs
    from scipy import linalg

    n = y.shape[0]
    q = np.empty((n, 0))
    ss: list[float] = []
    df: list[int] = []
    fitted = np.zeros(n)
    for x in blocks:
        norms = np.sqrt(np.einsum("ij,ij->j", x, x))
        z = x
        if q.shape[1]:
            z = z - q @ (q.T @ z)
            z = z - q @ (q.T @ z)
        if z.shape[1] == 0:
            ss.append(0.0)
            df.append(0)
            continue
        qz, rz, _ = linalg.qr(z, mode="economic", pivoting=True)
        d = np.abs(np.diag(rz))
        scale = norms.max() if norms.size else 0.0
        rank = int(np.sum(d > RANK_TOL * scale)) if scale > 0 else 0
        qt = qz[:, :rank]
        eff = qt.T @ y
        ss.append(float(np.dot(eff, eff)))
        df.append(rank)
        fitted = fitted + qt @ eff
        q = np.hstack([q, qt])
    return LsqBlocks(ss, df, fitted, q.shape[1])
