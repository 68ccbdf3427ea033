"""Least-squares (estimated marginal) means of a fixed-effects factor model.

The means are those of R's ``emmeans`` on an ``lm`` fit: the model's prediction in every cell of
the reference grid (all combinations of the levels of the model's factors, observed or not),
averaged with equal weights over the factors not asked for. With sum-to-zero coding a level's
mean is ``L b`` with ``L`` the average of the design rows over the grid, and its covariance
``sigma^2 L (X'X)^- L'``. A mean is estimable when ``L`` lies in the row space of the design
(orthogonal to the null space of ``X'X``); with empty cells in a model with interactions some
are not, and emmeans reports them as ``NA``: :func:`ls_means` flags them and the callers refuse
them with a clear error.

The normal equations are built from the observed cells of the model's factors (the design rows
of a cell are all equal): ``X'X = A' diag(n) A``, ``X'y = A' s`` with ``A`` one row per observed
cell, ``n`` the rows and ``s`` the sum of the response in each cell. So the cost depends on the
number of observed cells and coefficients, not on the number of observations.

References: Searle, Speed & Milliken (1980), Population marginal means in the linear model;
Lenth, *emmeans* (R package).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from irmodels.errors import DesignError
from irmodels.formula.spec import Term
from irmodels.models import _design
from irmodels.models._lsq import RANK_TOL, term_block

__all__ = ["LSMeans", "ls_means"]

#: A mean is not estimable when its coefficient row keeps more than this share (relative norm)
#: of itself in the null space of the design (emmeans / estimability use 1e-8 on squares).
ESTIMABLE_TOL = 1e-6

#: Largest number of coefficients the dense normal equations are built for.
MAX_COEFFICIENTS = 12_000


@dataclass(frozen=True)
class LSMeans:
    """Least-squares means of one factor (or interaction) with their covariance.

    Attributes
    ----------
    names : tuple of str
        The factor(s) the means are of.
    cells : ndarray of int, shape (m, len(names))
        Level codes of each mean (grid order, last factor fastest).
    means : ndarray, shape (m,)
        The estimates (NaN where not estimable).
    cov : ndarray, shape (m, m)
        Their covariance ``sigma^2 L G L'`` (NaN rows/columns where not estimable).
    estimable : ndarray of bool, shape (m,)
    L : ndarray, shape (m, p)
        Coefficient rows (for contrasts).
    """

    names: tuple[str, ...]
    cells: np.ndarray
    means: np.ndarray
    cov: np.ndarray
    estimable: np.ndarray
    L: np.ndarray


def _coding(n_levels: int, indicator: bool) -> np.ndarray:
    """Coding matrix (levels x columns): ``contr.sum`` or indicators."""
    if indicator:
        return np.eye(n_levels)
    c = np.zeros((n_levels, n_levels - 1))
    c[: n_levels - 1] = np.eye(n_levels - 1)
    c[-1] = -1.0
    return c


def ls_means(
    y: np.ndarray,
    terms: Sequence[Term],
    codes: Mapping[str, np.ndarray],
    levels: Mapping[str, int],
    names: Sequence[str],
    sigma2: float,
    *,
    full_cells: frozenset[str] | set[str] = frozenset(),
    values: Mapping[str, np.ndarray] | None = None,
) -> LSMeans:
    """LS means of ``names`` under the factor model ``terms`` (each with ``.factors``, ``.name``).

    Parameters
    ----------
    y : ndarray
        Response, one value per row.
    terms : sequence of Term
        Fixed terms (intercept implied).
    codes : mapping factor -> int codes per row; levels : mapping factor -> number of levels.
    names : the factor(s) whose means are wanted.
    sigma2 : residual variance of the fit (``MS_error``).
    full_cells : names of terms coded by cell indicators (terms whose margins are absent, as R's
        ``model.matrix`` does).
    values : mapping covariate -> values per row, for terms with numeric covariates (coded as
        R's ``model.matrix``, see :func:`irmodels.models._design.term_columns`); the means are
        then taken at the covariates' means, as emmeans' reference grid does, and the normal
        equations are built from the rows (the rows of a cell differ).
    """
    factors = list(codes)
    shape = tuple(int(levels[f]) for f in factors)
    numeric = {f for t in terms for f in t.numeric_factors}
    present = {t.key for t in terms}
    if numeric:  # every row is its own "cell"
        if values is None or not numeric <= set(values):
            raise DesignError(f"covariate values are needed for {', '.join(sorted(numeric))}.")
        n = np.ones(y.shape[0])
        s = np.asarray(y, dtype=float)
        cell_codes = {f: np.asarray(codes[f]) for f in factors}
        n_cells = y.shape[0]
    else:
        flat = np.ravel_multi_index([codes[f] for f in factors], shape) if len(factors) > 1 else (
            np.asarray(codes[factors[0]]))
        cells, inv = np.unique(flat, return_inverse=True)
        inv = inv.reshape(-1)
        n = np.bincount(inv).astype(float)
        s = np.bincount(inv, weights=y)
        cell_codes = dict(zip(factors, np.unravel_index(cells, shape))) if len(factors) > 1 else {
            factors[0]: cells}
        n_cells = cells.size
    blocks = [np.ones((n_cells, 1))]
    for t in terms:
        tf = list(t.factors)
        if t.is_covariate:
            blocks.append(_design.term_columns(
                t, cell_codes, {f: int(levels[f]) for f in factors}, values or {},
                _design.coding(t, present), contrasts="sum"))
        elif t.name in full_cells:
            tl = [int(levels[f]) for f in tf]
            cell = np.ravel_multi_index([cell_codes[f] for f in tf], tl) if len(tf) > 1 else (
                cell_codes[tf[0]])
            b = np.zeros((n_cells, math.prod(tl)))
            b[np.arange(n_cells), cell] = 1.0
            blocks.append(b)
        else:
            blocks.append(term_block([cell_codes[f] for f in tf], [int(levels[f]) for f in tf]))
    A = np.hstack(blocks)
    p = A.shape[1]
    if p > MAX_COEFFICIENTS:
        raise DesignError(
            f"least-squares means of this model need {p:,} coefficients, more than the limit of "
            f"{MAX_COEFFICIENTS:,} of the dense solver. Drop high-order interactions or balance "
            "the design."
        )
    # SVD of the weighted cell design: X'X = A' diag(n) A = V diag(d^2) V'
    Aw = A * np.sqrt(n)[:, None]
    _, d, vt = linalg.svd(Aw, full_matrices=False)
    rank = int(np.sum(d > RANK_TOL * d[0])) if d.size else 0
    Vr = vt[:rank].T
    inv_d2 = 1.0 / d[:rank] ** 2
    b = Vr @ (inv_d2 * (Vr.T @ (A.T @ s)))

    # coefficient rows of the means: average of the grid rows over the other factors
    want = list(names)
    want_shape = tuple(int(levels[f]) for f in want)
    grid = np.array(list(np.ndindex(*want_shape)), dtype=np.int64).reshape(-1, len(want))
    m = grid.shape[0]
    rows = [np.ones((m, 1))]
    for t in terms:
        tf = list(t.factors)
        covariate = t.is_covariate
        kinds = (_design.coding(t, present) if covariate else {})
        block = np.ones((m, 1))
        for f in tf:
            if f in numeric:  # the reference grid holds each covariate at its mean
                block = block * float(np.mean((values or {})[f]))
                continue
            indicator = (kinds.get(f) == "indicator") if covariate else (
                t.name in full_cells)
            cm = _coding(int(levels[f]), indicator)
            x = cm[grid[:, want.index(f)]] if f in want else np.broadcast_to(
                cm.mean(axis=0), (m, cm.shape[1]))
            block = (block[:, :, None] * x[:, None, :]).reshape(m, -1)
        rows.append(block)
    L = np.hstack(rows)
    LV = L @ Vr
    if rank < p:  # the part of each row outside the row space of the design
        resid = np.linalg.norm(L - LV @ Vr.T, axis=1)
        estimable = resid <= ESTIMABLE_TOL * np.maximum(np.linalg.norm(L, axis=1), 1.0)
    else:
        estimable = np.ones(m, dtype=bool)
    means = L @ b
    cov = sigma2 * (LV * inv_d2) @ LV.T
    means = np.where(estimable, means, np.nan)
    cov[~estimable, :] = np.nan
    cov[:, ~estimable] = np.nan
    return LSMeans(tuple(want), grid, means, cov, estimable, L)
