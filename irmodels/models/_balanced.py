"""Closed-form ANOVA of balanced crossed designs, from cell means in one pass.

Every combination of the model's factors is observed ``n`` times. Cell sums come from one
``np.bincount`` over integer codes; every marginal mean is an average of cell means over the
other factors; the effect of a term with factor set ``A`` is the Moebius (inclusion-exclusion)
contrast of marginal means over the subsets of ``A``::

    eff_A = sum_{B subset A} (-1)^{|A|-|B|} mean_B

and ``SS_A = (N / cells_A) * sum(eff_A ** 2)`` with ``df_A = prod(levels - 1)``. The effects are
orthogonal in a balanced design, so the sums of squares of type I, II and III coincide.
No design matrix is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = ["BalancedFit", "cell_layout", "fit_balanced"]


@dataclass(frozen=True)
class BalancedFit:
    """Raw numbers of a balanced fit (internal)."""

    ss: dict[frozenset[str], float]
    df: dict[frozenset[str], int]
    ss_resid: float
    df_resid: int
    fitted: np.ndarray
    grand_mean: float
    replicates: int
    #: fitted value of every cell (flat, in the order of ``cell_layout``): the row-level
    #: fitted values are ``cell_fitted[flat]``, so a result can keep this instead of them
    cell_fitted: np.ndarray | None = None


def cell_layout(codes: list[np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Flat cell index of every row and the number of rows per cell."""
    if not codes:
        raise ValueError("no factor")
    flat = np.ravel_multi_index(codes, shape) if len(codes) > 1 else codes[0]
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    return flat, counts


def _subsets(axes: tuple[int, ...]):
    for r in range(len(axes) + 1):
        yield from combinations(axes, r)


def fit_balanced(
    y: np.ndarray,
    factors: tuple[str, ...],
    flat: np.ndarray,
    shape: tuple[int, ...],
    replicates: int,
    terms: list[frozenset[str]],
) -> BalancedFit:
    """Sums of squares of ``terms`` (hierarchical, factor names) from a balanced layout."""
    n_obs = y.shape[0]
    grand = float(y.mean())
    yc = y - grand  # centring first keeps the contrasts free of cancellation
    cells = np.bincount(flat, weights=yc, minlength=int(np.prod(shape))) / replicates
    cell_means = cells.reshape(shape)
    k = len(factors)
    axis_of = {f: i for i, f in enumerate(factors)}
    # marginal means of every subset of axes (kept with broadcastable shape)
    needed: set[tuple[int, ...]] = set()
    for t in terms:
        needed.update(_subsets(tuple(sorted(axis_of[f] for f in t))))
    means: dict[tuple[int, ...], np.ndarray] = {}
    for sub in sorted(needed, key=len, reverse=True):
        other = tuple(a for a in range(k) if a not in sub)
        means[sub] = cell_means.mean(axis=other, keepdims=True) if other else cell_means
    effects: dict[tuple[int, ...], np.ndarray] = {}
    for sub in sorted(needed, key=len):
        e = means[sub]
        for r in range(len(sub)):
            for b in combinations(sub, r):
                e = e - effects[b]
        effects[sub] = e
    ss: dict[frozenset[str], float] = {}
    df: dict[frozenset[str], int] = {}
    fitted_c = np.zeros_like(cell_means) + effects[()]
    for t in terms:
        sub = tuple(sorted(axis_of[f] for f in t))
        e = effects[sub]
        ss[t] = float(n_obs / e.size * np.sum(e * e))
        df[t] = int(np.prod([shape[a] - 1 for a in sub]))
        fitted_c = fitted_c + e
    cell_fitted = grand + fitted_c.reshape(-1)
    fitted = cell_fitted[flat]
    resid = y - fitted
    ss_resid = float(np.dot(resid, resid))
    df_resid = n_obs - 1 - sum(df.values())
    return BalancedFit(ss, df, ss_resid, int(df_resid), fitted, grand, replicates, cell_fitted)
