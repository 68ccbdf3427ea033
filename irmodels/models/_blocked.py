"""Blocked kernel of :mod:`irmodels.models._reml` for large crossed designs with one residual
variance: the profiled (RE)ML deviance and its analytic gradient without the entries of
``M^-1`` on the pair pattern.

Notation as in :mod:`irmodels.models._reml`: ``N = T'T`` (T = [Z X]), ``D = diag(d)`` (theta on
the Z columns, 1 on X), ``M = D N D + P`` (P = 1 on the Z columns). Block 1 is the largest
random term (its block ``N11 = diag(n)`` is diagonal), block 2 the rest (other random terms,
then the fixed effects). With ``theta1`` the first term's relative SD and
``d1 = 1 + theta1^2 n``:

    K = N22 - N21 diag(theta1^2 / d1) N12        (symmetric, r x r; depends on theta1 only)
    S = D2 K D2 + P2                             (the Schur complement of M's diagonal block)
    log|M| = sum(log d1) + log|S|

The gradient of ``log|M|`` needs ``S^-1`` and no other entry of ``M^-1`` (the blocked
structure of Bates' "Complexity in fitting linear mixed models" and MixedModels.jl's
``updateL!``; lme4's ``mkLmerDevfun`` forms the same factor through CHOLMOD):

    d log|M| / d theta_k = 2 sum_{j in k} (S^-1 D2 K)_jj                       (k in block 2)
    d log|M| / d theta_1 = 2 theta1 [sum(n / d1) - tr(S^-1 D2 Y D2)],  Y = N21 diag(d1^-2) N12

Both are cancellation-free near theta_k = 0 (no division by theta_k). ML uses the same
formulas on the Z rows and columns of ``S`` (the leading block of its Cholesky factor).

The sparse products ``N21 diag(w) N12`` reuse one symbolic pattern for every evaluation: each
level of the first term contributes the outer product of its row of ``N12``; the products are
precomputed once as a sparse operator from per-level weights (grouped by the value of ``n``,
which has few distinct values) to the lower triangle of the r x r pattern.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp

from irmodels.models._reml_problem import Fit, Problem

LOG2PI = math.log(2.0 * math.pi)

#: The blocked kernel is used when the coupling block is stored sparse (``Problem.dense_b`` is
#: False: q1 * r above 100,000) and the residual variance is one; smaller designs keep the
#: pattern kernel, whose results the fixtures pin.


def applies(pb: Problem) -> bool:
    """Whether :func:`factor` handles ``pb`` (large, homoscedastic, at least one random term)."""
    return pb.n_strata == 1 and pb.q1 > 0 and not pb.dense_b


@dataclass
class Structure:
    """The design-only parts of the blocked factorisation (built once per problem).

    ``K`` is sparse: ``N22`` (one level of a term meets few columns of another) plus the outer
    products of the rows of ``N12``. Its lower triangle is kept on one pattern ``U`` (flat
    Fortran indices into the r x r matrix, sorted), and ``S`` is scattered from it into a dense
    buffer for LAPACK.
    """

    n1: np.ndarray           # (q1,) diagonal of N11
    n12: sp.csr_matrix       # (q1, r) N12
    perm: np.ndarray         # N12's data order -> positions in Problem.pos1r
    design: sp.csr_matrix    # (n, Q) T = [Z X]
    flat: np.ndarray         # U: flat (Fortran) indices of K's lower triangle
    ui: np.ndarray           # row of each U entry
    uj: np.ndarray           # column of each U entry
    c0: np.ndarray           # N22 on U
    op: sp.csr_matrix        # (|U|, classes): N21 diag(w) N12 on U from a weight per class
    n_class: np.ndarray      # the value of n of each class (levels with equal n share weights)
    half: np.ndarray         # 0.5 on U's diagonal entries, 1 off it
    zpos: np.ndarray         # U positions of the diagonal of block 2's Z columns (P2's ones)
    term2: np.ndarray        # random term of each of block 2's Z columns

    @classmethod
    def build(cls, pb: Problem) -> Structure:
        q1, r, Q = pb.q1, pb.r, pb.Q
        nv = pb.unit_cross()
        n1 = np.bincount(pb.idx11, weights=nv[pb.pos11], minlength=q1)
        rows = pb.pair_a[pb.pos1r]
        cols = pb.pair_b[pb.pos1r] - q1
        perm = np.lexsort((cols, rows))
        counts = np.bincount(rows, minlength=q1)
        level_of = rows[perm]
        indptr = np.concatenate([[0], np.cumsum(counts)])
        n12 = sp.csr_matrix((nv[pb.pos1r][perm], cols[perm], indptr), shape=(q1, r))
        m = pb.cols.shape[1]
        # (copies: sum_duplicates sorts in place, and the problem's arrays must not change)
        design = sp.csr_matrix((pb.vals.ravel().copy(), pb.cols.ravel().copy(),
                                np.arange(0, pb.n * m + 1, m)), shape=(pb.n, Q))
        design.sum_duplicates()
        # N22's lower triangle (Fortran order: entry (i, j), i >= j, at j * r + i)
        a2 = pb.pair_a[pb.posrr] - q1
        b2 = pb.pair_b[pb.posrr] - q1
        keep = a2 >= b2
        flat22 = b2[keep].astype(np.int64) * r + a2[keep]
        # the lower triangles of the outer products n_a n_a' of N12's rows, summed over the
        # levels of each class of n (levels with equal n get equal weights), as one sparse
        # product: E (q1 x r * classes) holds row a of N12 in the block of a's class, and
        # (E' N12)[l * classes + c, m] = sum over the levels a of class c of N_al N_am
        klass, n_class = pd.factorize(n1)
        klass = np.asarray(klass, dtype=np.int64)
        n_cls = len(n_class)
        e = sp.csr_matrix((n12.data, n12.indices.astype(np.int64) * n_cls + klass[level_of],
                           n12.indptr), shape=(q1, r * n_cls))
        g = (e.T.tocsr() @ n12).tocoo()
        g_l, g_c = g.row // n_cls, g.row % n_cls
        low = g_l >= g.col
        flat_o = g.col[low].astype(np.int64) * r + g_l[low]
        diag = np.arange(r, dtype=np.int64) * (r + 1)
        # U and the position of each entry in it through a table over the r x r matrix (S is
        # dense r x r at every evaluation anyway): no sort, no search
        mark = np.zeros(r * r, dtype=bool)
        mark[flat22] = True
        mark[diag] = True
        mark[flat_o] = True
        flat = np.flatnonzero(mark)
        del mark
        where = np.zeros(r * r, dtype=np.int32 if flat.size < 2**31 else np.int64)
        where[flat] = np.arange(flat.size)
        op = sp.csr_matrix((g.data[low], (where[flat_o], g_c[low])), shape=(flat.size, n_cls))
        del e, g, g_l, g_c, low, flat_o
        c0 = np.bincount(where[flat22], weights=nv[pb.posrr][keep], minlength=flat.size)
        ui, uj = flat % r, flat // r
        half = np.where(ui == uj, 0.5, 1.0)
        rz = pb.q - q1
        zpos = where[diag[:rz]].astype(np.int64)
        del where
        return cls(n1, n12, perm, design, flat, ui, uj, c0, op, np.asarray(n_class, float),
                   half, zpos, pb.term_of_col[q1:pb.q])


@dataclass
class Work:
    """What one evaluation keeps for the gradient."""

    k: np.ndarray            # K on U
    d2: np.ndarray           # d on block 2
    y: np.ndarray | None     # N21 diag(d1^-2) N12 on U (None when theta1 = 0)


def structure(pb: Problem) -> Structure:
    """The problem's :class:`Structure`, built on first use and kept in the problem's design
    cache (shared by shallow copies that replace ``y``)."""
    cache = pb.design_cache
    st = cache.get("blocked")
    if st is None:
        st = cache["blocked"] = Structure.build(pb)
    return st


def factor(pb: Problem, theta: np.ndarray, reml: bool) -> Fit:
    """The blocked factorisation and the profiled deviance at ``theta`` (one residual variance)."""
    st = structure(pb)
    q1, r = pb.q1, pb.r
    d = pb.dvec(theta)
    t1 = float(d[0])
    d2 = d[q1:]
    d1 = 1.0 + t1 * t1 * st.n1
    # K = N22 - N21 diag(theta1^2 / d1) N12 and S = D2 K D2 + P2 on U
    y_u = None
    k = st.c0
    if t1 != 0.0:
        # both products the evaluation needs, in one pass over the operator: the weights
        # theta1^2 / d1 (K) and d1^-2 (the gradient's trace)
        inv = 1.0 / (1.0 + t1 * t1 * st.n_class)
        both = st.op @ np.column_stack([t1 * t1 * inv, inv * inv])
        k = st.c0 - both[:, 0]
        y_u = both[:, 1]
    s_u = k * d2[st.ui] * d2[st.uj]
    s_u[st.zpos] += 1.0
    s_flat = np.zeros(r * r)
    s_flat[st.flat] = s_u
    s = s_flat.reshape((r, r), order="F")
    # lower triangle only: the upper one stays zero (dpotri and the gradient rely on it)
    L, info = sla.lapack.dpotrf(s, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"blocked REML factor: the Schur complement is not positive "
                                    f"definite (dpotrf info {info})")
    ty = st.design.T @ pb.y
    ty1, ty2 = ty[:q1], ty[q1:]
    # rhs c = d * T'y; x2 = S^-1 (c2 - B' D1^-1 c1), B = theta1 N12 D2
    v = d2 * (ty2 - st.n12.T @ (t1 * t1 * ty1 / d1))
    x2, info = sla.lapack.dpotrs(L, v, lower=1)
    x1 = t1 * (ty1 - st.n12 @ (d2 * x2)) / d1
    x = np.concatenate([x1, x2])
    u = x[: pb.q]
    beta = x[pb.q:]
    resid = pb.y - st.design @ (d * x)
    r2 = float(resid @ resid + u @ u)
    diagL = np.diag(L)
    logdet_s = 2.0 * float(np.sum(np.log(diagL)))
    logdet_rx = 2.0 * float(np.sum(np.log(diagL[r - pb.p:]))) if pb.p else 0.0
    logdet_m = float(np.sum(np.log(d1))) + logdet_s
    n, p = pb.n, pb.p
    if reml:
        dof = n - p
        dev = logdet_m + dof * (1.0 + LOG2PI + math.log(max(r2, 1e-300) / dof))
    else:
        dof = n
        dev = (logdet_m - logdet_rx) + n * (1.0 + LOG2PI + math.log(max(r2, 1e-300) / n))
    # the coupling block B = theta1 N12 D2 as the pattern kernel keeps it (conditional SDs)
    bdata = t1 * st.n12.data * d2[st.n12.indices]
    b_vals = np.empty_like(bdata)
    b_vals[st.perm] = bdata
    bs = sp.csr_matrix((bdata, st.n12.indices, st.n12.indptr), shape=(q1, r))
    f = Fit(dev, logdet_m, logdet_rx, r2, r2 / dof, u, beta, resid, np.ones(n), d,
            pb.unit_cross(), d1, bs, b_vals, (L, True))
    f.blocked = Work(k, d2, y_u)
    return f


def gradient_parts(pb: Problem, f: Fit, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(gl, gr)`` as :func:`irmodels.models._reml.gradient_parts` returns them."""
    st = structure(pb)
    work: Work = f.blocked
    q1, r = pb.q1, pb.r
    assert f.cho is not None  # factor() always sets cho on this path
    L = f.cho[0]
    # REML: S^-1; ML: the inverse of S's Z block (A's Schur complement), whose Cholesky factor
    # is the leading block of L
    m = r if reml else r - pb.p
    gl = np.zeros(pb.K)
    t1 = float(f.d[0])
    trace = 0.0
    if m:
        sinv, info = sla.lapack.dpotri(np.array(L[:m, :m], order="F"), lower=1)
        if info != 0:  # pragma: no cover - L comes from a successful dpotrf
            raise np.linalg.LinAlgError(f"blocked REML gradient: dpotri info {info}")
        sel: slice | np.ndarray
        if m == r:
            ui, uj, sel = st.ui, st.uj, slice(None)
        else:
            sel = np.flatnonzero((st.ui < m) & (st.uj < m))
            ui, uj = st.ui[sel], st.uj[sel]
        sv = sinv.ravel(order="F")[uj * m + ui]
        d2 = work.d2
        di, dj = d2[ui], d2[uj]
        # (S^-1 D2 K)_jj = sum_l E_jl d_l, E = S^-1 o K symmetric, stored on U's lower triangle
        e = sv * work.k[sel] * st.half[sel]
        g = (np.bincount(ui, weights=e * dj, minlength=m)
             + np.bincount(uj, weights=e * di, minlength=m))
        rz = pb.q - q1
        gl += 2.0 * np.bincount(st.term2, weights=g[:rz], minlength=pb.K)
        if work.y is not None:
            # Y = N21 diag(d1^-2) N12 on U; tr(S^-1 D2 Y D2) from the lower triangle
            trace = 2.0 * float(np.sum(sv * work.y[sel] * st.half[sel] * di * dj))
    gl[0] = 2.0 * t1 * (float(np.sum(st.n1 / f.d1)) - trace)
    # d r2 / d theta_k = -2 sum_i e_i (Z_k u_k)_i = -2 sum_{j in k} u_j (Z'e)_j
    ze = (st.design.T @ f.resid)[: pb.q]
    gr = -2.0 * np.bincount(pb.term_of_col[: pb.q], weights=f.u * ze, minlength=pb.K)
    return gl, gr
