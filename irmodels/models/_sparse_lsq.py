"""Least squares for unbalanced crossed factor designs without a dense design matrix.

Used by :func:`irmodels.anova` for every least-squares table but type III with covariates. The
column space of every model compared by the sums of squares is the sum, over its terms, of the
cell indicators of the term's factors times the product of its covariates, whatever the coding
(a term written without its margins spans all of that, as R codes it; a hierarchical model gives
the same space with any contrasts). Each such model is
fitted by **absorbing** its term with the most cells (Frisch-Waugh-Lovell: subtracting cell
means, one ``np.bincount``, as fixest/pyfixest "demean" does) and solving for the remaining
terms exactly: they are coded by treatment contrasts in a ``scipy.sparse`` matrix ``X`` (one
non-zero per term and row), and their normal equations after absorption,

    G = X'X - S' W^-1 S,      S = D'X,  W = D'D  (D: indicators of the absorbed cells),

are formed from sparse products and solved by a pivoted Cholesky factorisation (LAPACK
``dpstrf``) of the unit-diagonal scaled ``G``, which reveals the rank (aliasing by empty cells
removes degrees of freedom as in R) and is followed by one step of iterative refinement. A sum
of squares is the squared norm of the difference of two residual vectors (no subtraction of
large residual sums of squares).

Type III with sum-to-zero contrasts (``car::Anova(type = 3)``): a term contained in no other term
has its type II sum of squares; a term contained in others (``topic`` under ``topic:system``) is
the Wald statistic of its ``contr.sum`` coefficients, written as linear functions of the absorbed
cell effects and the treatment coefficients of the full model (the inclusion-exclusion contrast
of the unweighted marginal means of the fitted cell table), ``SS = l' (L C L')^-1 l`` with ``C``
the unscaled covariance from the same factorisation. It needs every absorbed cell observed and
no aliasing and no covariate; otherwise :class:`SparseUnavailable` is raised and the caller
falls back to the dense path.

Cost: one pass over the rows per model for the absorption and the sparse products, and a dense
factorisation of the order of the number of remaining columns (1,341 for MD6 on 50 x 100 x 10).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import linalg, sparse
from scipy.linalg import blas, lapack

from irmodels.formula.spec import Term

__all__ = ["PIVOT_TOL", "SparseUnavailable", "fit_sparse"]

#: Pivot tolerance of the Cholesky factorisation of the unit-diagonal normal equations: a column
#: whose squared norm, after the columns before it, is below this share of its own is aliased
#: (about R's ``lm`` tolerance of 1e-7 on the QR diagonal, with room for rounding).
PIVOT_TOL = 1e-10


#: A remaining term with at least this many columns, whose normal-equation block splits into
#: blocks of at most ``ELIMINATE_MAX_BLOCK``, is eliminated first (block-diagonal pseudo-inverse,
#: then the Schur complement of the other columns): MD6 with many shards.
#: Only when the remaining columns number at least ``ELIMINATE_TOTAL`` (below that one dense
#: factorisation is cheaper).
ELIMINATE_MIN = 256
ELIMINATE_MAX_BLOCK = 512
ELIMINATE_TOTAL = 2500


#: Largest dense factorisation (columns left after absorption and elimination: 8,000 is a
#: 512 MB matrix) and largest dense coupling block between the eliminated term and the rest.
MAX_FACTOR_COLUMNS = 8_000
MAX_COUPLING_CELLS = 40_000_000


class SparseUnavailable(Exception):
    """The sparse path cannot compute this table exactly (the caller uses the dense path)."""


@dataclass
class _Fit:
    resid: np.ndarray
    rank: int
    # kept for the type III Wald statistics of the full model
    absorbed: Term | None = None
    cell: np.ndarray | None = None
    counts: np.ndarray | None = None
    X: sparse.csr_matrix | None = None
    S: sparse.csr_matrix | None = None
    solve: Callable[[np.ndarray], np.ndarray] | None = None  # G^+ rhs (1-D or 2-D)
    rank_g: int = 0
    b: np.ndarray | None = None
    columns: list[tuple[Term, np.ndarray]] | None = None  # (term, kept column ids)


class _Engine:
    def __init__(self, y: np.ndarray, codes: Mapping[str, np.ndarray], n_levels: Mapping[str, int],
                 values: Mapping[str, np.ndarray] | None = None):
        self.y = y
        self.n = y.shape[0]
        self.codes = codes
        self.values = values or {}
        self.L = {f: int(v) for f, v in n_levels.items()}
        self._cells: dict[frozenset[str], np.ndarray] = {}
        self._treat: dict[frozenset[str], tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
        self._fits: dict[frozenset[frozenset[str]], _Fit] = {}

    # ---- codes
    def cells(self, t: Term) -> np.ndarray:
        """Flat cell index of every row over the full grid of ``t``'s factors."""
        c = self._cells.get(t.key)
        if c is None:
            c = np.zeros(self.n, dtype=np.int64)
            for f in t.factors:
                c = c * self.L[f] + self.codes[f]
            self._cells[t.key] = c
        return c

    def n_cells(self, t: Term) -> int:
        return math.prod(self.L[f] for f in t.factors)

    def treatment(self, t: Term) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Rows with every factor past its first level, their treatment column (0-based) and
        the value there (the product of the term's covariates; None for ones)."""
        out = self._treat.get(t.key)
        if out is None:
            ok = np.ones(self.n, dtype=bool)
            col = np.zeros(self.n, dtype=np.int64)
            for f in t.categorical_factors:
                c = self.codes[f]
                ok &= c > 0
                col = col * (self.L[f] - 1) + np.maximum(c - 1, 0)
            rows = np.flatnonzero(ok)
            vals = None
            if t.numeric_factors:
                vals = np.ones(rows.size)
                for f in t.numeric_factors:
                    vals = vals * self.values[f][rows]
            out = (rows, col[rows], vals)
            self._treat[t.key] = out
        return out

    # ---- one model
    def fit(self, terms: Sequence[Term]) -> _Fit:
        key = frozenset(t.key for t in terms)
        got = self._fits.get(key)
        if got is not None:
            return got
        y = self.y
        if not terms:
            f = _Fit(resid=y - y.mean(), rank=1)
            self._fits[key] = f
            return f
        factor_terms = [t for t in terms if not t.is_covariate]
        absorbed = (max(factor_terms, key=lambda t: (self.n_cells(t), -terms.index(t)))
                    if factor_terms else Term(()))  # no factor term: absorb the intercept
        cell = self.cells(absorbed)
        counts = np.bincount(cell, minlength=self.n_cells(absorbed)).astype(float)
        observed = int(np.count_nonzero(counts))
        safe = np.where(counts > 0, counts, 1.0)

        def demean(v: np.ndarray) -> np.ndarray:
            return v - (np.bincount(cell, weights=v, minlength=counts.size) / safe)[cell]

        rest = _with_margins([t for t in terms if t.is_covariate or not t.key <= absorbed.key],
                             absorbed)
        yd = demean(y)
        if not rest:
            f = _Fit(resid=yd, rank=observed, absorbed=absorbed, cell=cell, counts=counts)
            self._fits[key] = f
            return f
        rows_l, cols_l, vals_l, columns = [], [], [], []
        offset = 0
        for t in rest:
            rows, col, vals = self.treatment(t)
            size = math.prod(self.L[f] - 1 for f in t.categorical_factors)
            used = np.bincount(col, minlength=size) > 0
            new_id = np.cumsum(used) - 1
            rows_l.append(rows)
            vals_l.append(np.ones(rows.size) if vals is None else vals)
            cols_l.append(offset + new_id[col])
            columns.append((t, np.flatnonzero(used)))
            offset += int(used.sum())
        rows = np.concatenate(rows_l)
        cols = np.concatenate(cols_l)
        X = sparse.csr_matrix((np.concatenate(vals_l), (rows, cols)), shape=(self.n, offset))
        D = sparse.csr_matrix((np.ones(self.n), (np.arange(self.n), cell)),
                              shape=(self.n, counts.size))
        S = (D.T @ X).tocsr()
        winv = sparse.diags(np.where(counts > 0, 1.0 / safe, 0.0))
        elim = self._elimination(absorbed, columns)
        dense_cols = offset if elim is None else offset - (elim[1] - elim[0])
        if dense_cols > MAX_FACTOR_COLUMNS or (
                elim is not None and dense_cols * (elim[1] - elim[0]) > MAX_COUPLING_CELLS):
            raise SparseUnavailable(
                f"{dense_cols:,} columns remain after absorbing {absorbed.name}, more than the "
                f"{MAX_FACTOR_COLUMNS:,} the exact factorisation handles"
            )
        if elim is None:
            G = (X.T @ X - S.T @ winv @ S).toarray()
            solve, rank_g = _dense_solver(G)
        else:
            solve, rank_g = _block_solver(X, S, winv, *elim)

        def zt(v: np.ndarray) -> np.ndarray:  # Z'v for a demeaned v
            return X.T @ v

        b = solve(zt(yd))
        resid = yd - demean(X @ b)
        b = b + solve(zt(resid))  # one step of iterative refinement
        resid = yd - demean(X @ b)
        f = _Fit(resid=resid, rank=observed + int(rank_g), absorbed=absorbed, cell=cell,
                 counts=counts, X=X, S=S, solve=solve, rank_g=int(rank_g), b=b, columns=columns)
        self._fits[key] = f
        return f

    def _elimination(self, absorbed: Term, columns: list[tuple[Term, np.ndarray]]
                     ) -> tuple[int, int, np.ndarray] | None:
        """A remaining term whose normal-equation block is block-diagonal (it shares factors
        with the absorbed term: its columns couple only within a level of those factors), worth
        eliminating first: (first column, end column, group of each of its columns)."""
        best = None
        offset = 0
        for u, kept in columns:
            shared = [f for f in u.factors if f in absorbed.key]
            if shared and kept.size >= ELIMINATE_MIN and not u.is_covariate:
                levels = np.unravel_index(kept, [self.L[f] - 1 for f in u.factors])
                pos = {f: i for i, f in enumerate(u.factors)}
                group = np.zeros(kept.size, dtype=np.int64)
                for f in shared:
                    group = group * (self.L[f] - 1) + levels[pos[f]]
                largest = int(np.bincount(group).max())
                if largest <= ELIMINATE_MAX_BLOCK and (best is None or kept.size > best[1] - best[0]):
                    best = (offset, offset + kept.size, group)
            offset += kept.size
        if best is None or best[1] - best[0] == offset or offset < ELIMINATE_TOTAL:
            return None  # nothing to gain (or nothing left once eliminated)
        return best

    # ---- type III Wald statistic of a term contained in others
    def wald_type3(self, full: _Fit, t: Term, terms: Sequence[Term]) -> float:
        A = full.absorbed
        assert A is not None and full.counts is not None and full.cell is not None
        if any(u.is_covariate for u in terms):
            raise SparseUnavailable("type III with covariates is computed densely")
        if np.any(full.counts == 0):
            raise SparseUnavailable("an absorbed cell is empty")
        n_rest = 0 if full.X is None else full.X.shape[1]
        if full.rank_g < n_rest:
            raise SparseUnavailable("aliased coefficients")
        for u, kept in full.columns or []:
            # an empty cell of a term leaves its contr.sum coefficients aliased (R's NA): the
            # type III hypothesis of a term it contains may then not be estimable
            if kept.size < math.prod(self.L[f] - 1 for f in u.factors):
                raise SparseUnavailable("aliased coefficients")
        # contr.sum coefficients of t = first L-1 levels of the centred marginal of the fitted
        # cell table; C maps a table over t's cells to them
        C: np.ndarray = np.ones((1, 1))
        for f in t.factors:
            L = self.L[f]
            c = (np.eye(L) - 1.0 / L)[: L - 1]
            C = np.kron(C, c)

        def tcell_of(u: Term, combos: np.ndarray) -> np.ndarray:
            # combos: (k, len(u.factors)) levels -> flat cell of t
            pos = {f: i for i, f in enumerate(u.factors)}
            flat = np.zeros(combos.shape[0], dtype=np.int64)
            for f in t.factors:
                flat = flat * self.L[f] + combos[:, pos[f]]
            return flat

        def weight(u: Term) -> float:
            return 1.0 / math.prod(self.L[f] for f in u.factors if f not in t.key)

        y = self.y
        cell, counts = full.cell, full.counts
        if t.key <= A.key:
            grid = np.array(np.unravel_index(np.arange(counts.size), [self.L[f] for f in A.factors])).T
            Ltheta = C[:, tcell_of(A, grid)] * weight(A)
        else:
            Ltheta = np.zeros((C.shape[0], counts.size))
        Lb = np.zeros((C.shape[0], n_rest))
        offset = 0
        for u, kept in full.columns or []:
            if t.key <= u.key:
                grid = np.array(np.unravel_index(kept, [self.L[f] - 1 for f in u.factors])).T + 1
                Lb[:, offset:offset + kept.size] = C[:, tcell_of(u, grid)] * weight(u)
            offset += kept.size
        fitted_rest = full.X @ full.b if full.X is not None else np.zeros_like(y)
        theta = np.bincount(cell, weights=y - fitted_rest, minlength=counts.size) / counts
        lam = Ltheta @ theta + (Lb @ full.b if n_rest else 0.0)
        LW = Ltheta / counts[None, :]
        V = LW @ Ltheta.T
        if n_rest:
            assert full.S is not None and full.solve is not None  # set with X by fit()
            K = Lb - (full.S.T @ LW.T).T
            V = V + K @ full.solve(np.ascontiguousarray(K.T))
        return float(lam @ linalg.solve(V, lam, assume_a="pos"))


def _with_margins(rest: list[Term], absorbed: Term) -> list[Term]:
    """``rest`` with the margins it lacks (not absorbed, not in the model) added before the
    terms that need them: treatment columns span a term's cell indicators only together with
    those of its margins. A hierarchical model needs none; a term written without its margins
    (``system + topic:shard``) spans every cell of its factors, as R codes it."""
    have = {t.key for t in rest}
    out: list[Term] = []
    seen: set[frozenset[str]] = set()
    for t in rest:
        cats, num = t.categorical_factors, t.numeric
        # margins with the same covariates: (C' subset of C) x N; a pure-factor margin inside
        # the absorbed term (or the intercept) is already there
        for r in range(0 if num else 1, len(cats)):
            for sub in combinations(cats, r):
                k = frozenset(sub) | num
                if k in have or k in seen or (not num and k <= absorbed.key):
                    continue
                seen.add(k)
                out.append(Term(tuple(f for f in t.factors if f in k), num))
        if t.key not in seen:
            seen.add(t.key)
            out.append(t)
    return out


def _dense_solver(G: np.ndarray, ref_diag: np.ndarray | None = None
                  ) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """Pivoted Cholesky of ``G`` scaled to a unit diagonal (or by ``ref_diag``, the diagonal of
    the matrix ``G`` is a Schur complement of, so that a column reduced to rounding noise stays
    below the tolerance): a solver of ``G b = r`` (a basic solution when ``G`` is singular) and
    the rank."""
    scale = np.sqrt(np.clip(np.diag(G) if ref_diag is None else ref_diag, 0.0, None))
    scale[scale == 0] = 1.0
    inv = 1.0 / scale
    Gs = G * inv[:, None]
    Gs *= inv[None, :]
    factor, piv, rank, _ = lapack.dpstrf(Gs, lower=0, tol=PIVOT_TOL)
    rank = int(rank)
    keep = piv[:rank] - 1
    r = factor[:rank, :rank]  # upper triangle read by solve_triangular, the rest ignored
    s = scale[keep]

    def solve(rhs: np.ndarray) -> np.ndarray:
        out = np.zeros(rhs.shape, dtype=float)
        sk = s.reshape((-1,) + (1,) * (rhs.ndim - 1))
        z = rhs[keep] / sk
        z = linalg.solve_triangular(r, z, trans="T")
        z = linalg.solve_triangular(r, z)
        out[keep] = z / sk
        return out

    return solve, rank


def _block_solver(X: sparse.csr_matrix, S: sparse.csr_matrix, winv: sparse.dia_matrix,
                  u0: int, u1: int, group: np.ndarray
                  ) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """Solve ``G b = r`` with ``G = X'X - S'W^-1 S`` by eliminating the columns ``u0:u1``
    first: their block of ``G`` is block-diagonal (``group``), so its pseudo-inverse is a set of
    small eigen-decompositions, and the rest is the (generalised) Schur complement
    ``H = G_RR - G_RU G_UU^+ G_UR``, factorised by pivoted Cholesky. For a positive
    semi-definite ``G``, ``rank G = rank G_UU + rank H`` and the two-step solution solves every
    consistent system."""
    p = X.shape[1]
    uidx = np.arange(u0, u1)
    ridx = np.concatenate([np.arange(0, u0), np.arange(u1, p)])
    XU, XR = X[:, uidx], X[:, ridx]
    SU, SR = S[:, uidx], S[:, ridx]
    G_RR = (XR.T @ XR - SR.T @ winv @ SR).toarray()
    G_RU = (XR.T @ XU - SR.T @ winv @ SU).toarray()
    G_UU = (XU.T @ XU - SU.T @ winv @ SU).tocsr()
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(np.concatenate([[-1], group[order], [group.max() + 1]])))
    blocks = []
    rank_u = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        ids = order[a:b]
        g = G_UU[ids][:, ids].toarray()
        d = np.sqrt(np.clip(np.diag(g), 0.0, None))
        d[d == 0] = 1.0
        w, v = np.linalg.eigh(g / d[:, None] / d[None, :])
        ok = w > PIVOT_TOL * max(1.0, float(w.max()) if w.size else 1.0)
        rank_u += int(ok.sum())
        vs = v[:, ok] / d[:, None]
        blocks.append((ids, vs, w[ok]))  # pinv = vs diag(1/w) vs'

    def pinv_u(rhs: np.ndarray) -> np.ndarray:
        out = np.zeros(rhs.shape, dtype=float)
        for ids, vs, w in blocks:
            coef = vs.T @ rhs[ids]
            coef = coef / w.reshape((-1,) + (1,) * (rhs.ndim - 1))
            out[ids] = vs @ coef
        return out

    # G_RU G_UU^+ G_UR = Q Q' with Q = G_RU V W^-1/2 (blockwise): one symmetric rank-k update
    Q = np.empty((G_RU.shape[0], sum(w.size for _, _, w in blocks)), order="F")
    k = 0
    for ids, vs, w in blocks:
        Q[:, k:k + w.size] = G_RU[:, ids] @ (vs / np.sqrt(w)[None, :])
        k += w.size
    H = np.array(G_RR, order="F")
    if Q.shape[1]:
        H = blas.dsyrk(-1.0, Q, beta=1.0, c=H, lower=0, overwrite_c=1)
    # only the upper triangle of H is updated and read (dpstrf with lower=0)
    solve_h, rank_h = _dense_solver(H, np.diag(G_RR))

    def solve(rhs: np.ndarray) -> np.ndarray:
        r_u, r_r = rhs[uidx], rhs[ridx]
        b_r = solve_h(r_r - G_RU @ pinv_u(r_u))
        b_u = pinv_u(r_u - G_RU.T @ b_r)
        out = np.empty(rhs.shape, dtype=float)
        out[uidx] = b_u
        out[ridx] = b_r
        return out

    return solve, rank_u + rank_h


def fit_sparse(y: np.ndarray, terms: Sequence[Term], codes: Mapping[str, np.ndarray],
               n_levels: Mapping[str, int], ss_type: int,
               values: Mapping[str, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray, float, int, np.ndarray]:
    """Sums of squares of ``terms`` (hierarchical, factors only) by sparse least squares.

    Returns ``ss, df, ss_resid, df_resid, fitted`` as the dense path does. Raises
    :class:`SparseUnavailable` when type III needs what the sparse path cannot give exactly.

    >>> import numpy as np
    >>> from irmodels.formula import Term
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.integers(0, 3, 40), rng.integers(0, 4, 40)
    >>> y = a + 0.5 * b + rng.normal(size=40)
    >>> ss, df, ssr, dfr, _ = fit_sparse(y, [Term(("a",)), Term(("b",))], {"a": a, "b": b},
    ...                                  {"a": 3, "b": 4}, 2)
    >>> df.tolist(), dfr
    ([2.0, 3.0], 34)
    """
    eng = _Engine(np.asarray(y, dtype=float), codes, n_levels, values)
    terms = list(terms)
    full = eng.fit(terms)
    n = y.shape[0]
    ss = np.empty(len(terms))
    df = np.empty(len(terms))
    if ss_type == 1:
        prev = eng.fit([])
        for i in range(len(terms)):
            cur = eng.fit(terms[: i + 1])
            d = prev.resid - cur.resid
            ss[i] = float(d @ d)
            df[i] = cur.rank - prev.rank
            prev = cur
    else:
        for i, t in enumerate(terms):
            contained = any(t.key < u.key for u in terms)
            if ss_type == 3 and contained:
                ss[i] = eng.wald_type3(full, t, terms)
                df[i] = math.prod(eng.L[f] - 1 for f in t.factors)
                continue
            red_terms = [u for u in terms if not t.key <= u.key]
            red = eng.fit(red_terms)
            with_t = eng.fit(red_terms + [t])
            d = red.resid - with_t.resid
            ss[i] = float(d @ d)
            df[i] = with_t.rank - red.rank
    ss_resid = float(full.resid @ full.resid)
    return ss, df, ss_resid, n - full.rank, y - full.resid
