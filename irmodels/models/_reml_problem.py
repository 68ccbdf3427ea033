"""The data of a profiled (RE)ML deviance (:class:`Problem`) and one evaluation of it
(:class:`Fit`), shared by the pattern kernel (:mod:`irmodels.models._reml`) and the blocked kernel
(:mod:`irmodels.models._blocked`): both import them from here, so neither imports the other's
module for its types (``_reml`` dispatches to ``_blocked``, which returns a :class:`Fit`).
:mod:`irmodels.models._reml` re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["Fit", "Problem"]


@dataclass
class Problem:
    """The data of one fit in the form the deviance needs (built once, evaluated many times).

    ``cols`` (n x m) holds, for every observation, the column index (into ``[Z X]``) of each of
    its non-zero design entries and ``vals`` their values; random terms come first (term 0 is the
    largest and is eliminated through its diagonal), fixed columns last.
    """

    y: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    term_sizes: list[int]
    p: int
    strata: np.ndarray | None = None
    n_strata: int = 1
    #: heteroscedastic fits: internal stratum code of each stratum label (the internal
    #: reference, code 0, need not be the first label; see mixed._problem)
    label_code: np.ndarray | None = None
    # derived
    q: int = field(init=False)
    Q: int = field(init=False)
    n: int = field(init=False)

    def __post_init__(self) -> None:
        self.n = int(self.y.shape[0])
        self.q = int(sum(self.term_sizes))
        self.Q = self.q + self.p
        self.K = len(self.term_sizes)
        self.term_of_col = np.concatenate(
            [np.full(s, k) for k, s in enumerate(self.term_sizes)] + [np.full(self.p, -1)]
        ).astype(np.int64)
        m = self.cols.shape[1]
        a = np.repeat(self.cols, m, axis=1)  # (n, m*m): a_jl
        b = np.tile(self.cols, (1, m))
        code = a.astype(np.int64) * self.Q + b
        inv, uniq = pd.factorize(code.ravel())  # hashing: O(n), unlike a sort
        uniq = np.asarray(uniq, dtype=np.int64)
        self.pair_a = uniq // self.Q
        self.pair_b = uniq % self.Q
        self.pair_of = inv.reshape(self.n, m * m)
        self.pair_prod = (np.repeat(self.vals, m, axis=1) * np.tile(self.vals, (1, m)))
        self.q1 = self.term_sizes[0] if self.K else 0
        if self.strata is None:
            self.n_strata = 1
        #: stratum index of every observation (all 0 when homoscedastic)
        self.sidx: np.ndarray = (np.zeros(self.n, dtype=np.int64) if self.strata is None
                                 else np.asarray(self.strata, dtype=np.int64))
        self.n_per_stratum = np.bincount(self.sidx, minlength=self.n_strata).astype(float)
        # pair classes for the block elimination
        a_, b_ = self.pair_a, self.pair_b
        q1 = self.q1
        # the pattern's pairs by class: the eliminated term's (diagonal) block, the coupling block
        # B (a < q1 <= b) and the remainder
        self.pos11 = np.flatnonzero((a_ < q1) & (b_ < q1))
        if np.any(a_[self.pos11] != b_[self.pos11]):  # pragma: no cover - guaranteed by design
            raise RuntimeError("the first random term must give a diagonal block")
        self.pos1r = np.flatnonzero((a_ < q1) & (b_ >= q1))
        self.posrr = np.flatnonzero((a_ >= q1) & (b_ >= q1))
        self.r = self.Q - q1
        r = self.r
        self.idx11 = a_[self.pos11]
        self.idx_rr = (a_[self.posrr] - q1) * r + (b_[self.posrr] - q1)
        self.idx_1r = a_[self.pos1r] * r + (b_[self.pos1r] - q1)
        self._unit_cross: np.ndarray | None = None
        self._index: _PatternIndex | None = None
        self._layout: _SparseLayout | None = None
        # the coupling block B (q1 x r) is kept dense when small (no sparse-matrix overhead)
        self.dense_b = q1 * r <= 100_000  # crossover measured: benchmarks/mixed_sparse_gradient.py
        #: design-only structures built on first use (the blocked kernel's); a dict, so that a
        #: shallow copy that replaces ``y`` (response scaling, bootstrap) shares them
        self.design_cache: dict[str, Any] = {}

    # ----------------------------------------------------------------------------------------
    def weights(self, eta: np.ndarray | None) -> np.ndarray:
        if eta is None or self.n_strata == 1:
            return np.ones(self.n)
        full = np.concatenate([[0.0], np.asarray(eta, float)])
        return np.exp(-2.0 * full)[self.sidx]

    def unit_cross(self) -> np.ndarray:
        """``T'T`` on the pair pattern with unit weights, computed once: it depends on the
        design only (``cols``, ``vals``), which is never changed after construction, and every
        evaluation of a homoscedastic fit needs it (``y`` may be replaced: profiles and
        bootstrap refit new responses, so ``T'y`` is not cached)."""
        if self._unit_cross is None:
            self._unit_cross = np.bincount(self.pair_of.ravel(), weights=self.pair_prod.ravel(),
                                           minlength=self.pair_a.size)
        return self._unit_cross

    def index(self) -> _PatternIndex:
        """The pattern's positions the gradient reads (built once, on the first gradient)."""
        if self._index is None:
            self._index = _PatternIndex.build(self)
        return self._index

    def sparse_layout(self) -> _SparseLayout:
        """Where the entries of ``F = D1^-1 B`` go in a padded (q1 x k) layout (built once)."""
        if self._layout is None:
            self._layout = _SparseLayout.build(self)
        return self._layout

    def dvec(self, theta: np.ndarray) -> np.ndarray:
        d = np.ones(self.Q)
        for k in range(self.K):
            d[self.term_of_col == k] = theta[k]
        return d


@dataclass
class _PatternIndex:
    """Positions in the pair pattern that the gradient reads, built on the first gradient (a
    closed-form fit never needs them)."""

    posr1: np.ndarray          # pairs (a >= q1, b < q1): the transpose of B's pattern
    rr_low: np.ndarray         # where S^-1's entry of each remainder pair is (_lower_flat)
    r1_from_1r: np.ndarray     # the pair of B's pattern that is the transpose of each posr1 pair
    grad_pairs: np.ndarray     # pairs whose first column belongs to a random term ...
    grad_pair_term: np.ndarray  # ... and that term
    grad_entries: np.ndarray   # design entries (flat) of a random term ...
    grad_entry_term: np.ndarray  # ... and that term

    @classmethod
    def build(cls, pb: Problem) -> _PatternIndex:
        a_, b_, q1, r = pb.pair_a, pb.pair_b, pb.q1, pb.r
        pos1r, posrr = pb.pos1r, pb.posrr
        posr1 = np.flatnonzero((a_ >= q1) & (b_ < q1))
        # the pattern is symmetric (every observation gives both (j, l) and (l, j)): the entry
        # of a pair (a >= q1, b < q1) is that of its transpose (b, a), found among B's pattern pairs
        key_1r = a_[pos1r] * pb.Q + b_[pos1r]
        key_r1 = b_[posr1] * pb.Q + a_[posr1]
        by_key = np.argsort(key_1r, kind="stable")
        at = np.searchsorted(key_1r, key_r1, sorter=by_key)
        r1_from_1r = by_key[np.minimum(at, max(len(by_key) - 1, 0))] if len(at) else at
        if not np.array_equal(key_1r[r1_from_1r], key_r1):  # pragma: no cover - by design
            raise RuntimeError("the pair pattern must be symmetric")
        pair_term = pb.term_of_col[a_]
        grad_pairs = np.flatnonzero(pair_term >= 0)
        entry_term = pb.term_of_col[pb.cols].ravel()
        grad_entries = np.flatnonzero(entry_term >= 0)
        return cls(posr1, _lower_index(a_[posrr] - q1, b_[posrr] - q1, r),
                   r1_from_1r, grad_pairs, pair_term[grad_pairs], grad_entries,
                   entry_term[grad_entries])


@dataclass
class _SparseLayout:
    """The coupling block's pattern as padded rows, and the flat indices into ``S^-1`` that the
    gradient reads (they depend on the design only, not on theta).

    Row ``a`` of ``F = D1^-1 B`` has its non-zeros in columns ``cols[a, :]`` (padded with column
    0, whose value is then 0): entry ``e`` of B's pattern pairs (``Problem.pos1r``) goes to ``(row[e], slot[e])``.
    """

    row: np.ndarray        # (n1r,) row (level of the eliminated term) of each pair
    col: np.ndarray        # (n1r,) column in the remainder
    slot: np.ndarray       # (n1r,) position of the pair in its padded row
    width: int             # k: the longest row
    fs_idx: np.ndarray     # (n1r, k) where S^-1[cols[row[e], k], col[e]] is in lower_flat()

    @classmethod
    def build(cls, pb: Problem) -> _SparseLayout:
        row = pb.pair_a[pb.pos1r]
        col = pb.pair_b[pb.pos1r] - pb.q1
        by_row = np.lexsort((col, row))
        counts = np.bincount(row, minlength=pb.q1)
        width = max(int(counts.max()) if counts.size else 0, 1)
        first = np.cumsum(counts) - counts
        slot = np.empty(len(row), dtype=np.int64)
        slot[by_row] = np.arange(len(row)) - first[row[by_row]]
        cols = np.zeros((pb.q1, width), dtype=np.int64)
        cols[row, slot] = col
        fs_idx = _lower_index(cols[row], col[:, None], pb.r)
        return cls(row, col, slot, width, fs_idx)


def _lower_index(i: np.ndarray, j: np.ndarray, r: int) -> np.ndarray:
    """Position of the symmetric (r x r) matrix's entry (i, j) in its lower triangle stored
    column-major (``_reml._lower_flat``): entry (max, min)."""
    hi, lo = np.maximum(i, j), np.minimum(i, j)
    return (lo.astype(np.int64) * r + hi).astype(np.int32 if r * r < 2**31 else np.int64)


@dataclass
class Fit:
    """Everything one evaluation of the deviance computes."""

    deviance: float
    logdet_m: float
    logdet_rx: float
    r2: float
    sigma2: float
    u: np.ndarray  # spherical random effects (length q)
    beta: np.ndarray
    resid: np.ndarray  # unweighted residuals y - X beta - Z Lambda u
    w: np.ndarray
    d: np.ndarray
    n_vals: np.ndarray  # T'WT on the pair pattern
    d1: np.ndarray
    Bs: np.ndarray | sp.csr_matrix
    b_vals: np.ndarray  # B's values on its pattern pairs (Problem.pos1r)
    cho: tuple | None
    gradient: np.ndarray | None = None
    #: the blocked kernel's workspace for the gradient (None from the pattern kernel)
    blocked: Any = None
