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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._reml import Fit, Problem

LOG2PI = math.log(2.0 * math.pi)

#: The blocked kernel is used when the coupling block is stored sparse (``Problem.dense_b`` is
#: False: q1 * r above 100,000) and the residual variance is one; smaller designs keep the
#: pattern kernel, whose results the fixtures pin.


def applies(pb: Problem) -> bool:
    """Whether :func:`factor` handles ``pb`` (large, homoscedastic, at least one random term)."""
    return pb.n_strata == 1 and pb.q1 > 0 and not pb.dense_b


@dataclass
class Structure:
    """The design-only parts of the blocked factorisation (built once per problem)."""

    n1: np.ndarray           # (q1,) diagonal of N11
    c0: np.ndarray           # (r, r) N22, Fortran order, lower triangle (upper zero)
    n12: sp.csr_matrix       # (q1, r) N12
    perm: np.ndarray         # N12's data order -> positions in Problem.pos1r
    low: np.ndarray          # flat (Fortran) indices of the lower pattern of N21 W N12
    op: sp.csr_matrix        # (len(low), n classes): N21 W N12 on `low` from per-class weights
    n_class: np.ndarray      # value of n in each class
    cls: np.ndarray          # (q1,) class of each level
    tr_w: np.ndarray         # (len(low),) 2 off the diagonal, 1 on it (trace of a product)
    low_i: np.ndarray        # row of each `low` entry
    low_j: np.ndarray        # column of each `low` entry
    zdiag: np.ndarray        # block 2's Z columns (where S has P2's 1 on the diagonal)

    @classmethod
    def build(cls_, pb: Problem) -> Structure:
        q1, r = pb.q1, pb.r
        nv = pb.unit_cross()
        n1 = np.bincount(pb.idx11, weights=nv[pb.pos11], minlength=q1)
        rows = pb.pair_a[pb.pos1r]
        cols = pb.pair_b[pb.pos1r] - q1
        perm = np.lexsort((cols, rows))
        counts = np.bincount(rows, minlength=q1)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        n12 = sp.csr_matrix((nv[pb.pos1r][perm], cols[perm], indptr), shape=(q1, r))
        # N22's lower triangle (Fortran order: entry (i, j), i >= j, at j * r + i)
        a2 = pb.pair_a[pb.posrr] - q1
        b2 = pb.pair_b[pb.posrr] - q1
        keep = a2 >= b2
        c0 = np.bincount(b2[keep] * r + a2[keep], weights=nv[pb.posrr][keep],
                         minlength=r * r).reshape((r, r), order="F")
        # all pairs (e, f) of entries of one row with col(f) <= col(e): the lower triangle of
        # the outer products n_a n_a'
        k = counts
        e_rep = np.arange(n12.nnz)
        pos_in_row = e_rep - indptr[:-1][np.repeat(np.arange(q1), k)]
        ii = np.repeat(e_rep, pos_in_row + 1)
        grp_start = np.cumsum(pos_in_row + 1) - (pos_in_row + 1)
        jj = (np.arange(ii.size) - np.repeat(grp_start, pos_in_row + 1)
              + np.repeat(indptr[:-1][np.repeat(np.arange(q1), k)], pos_in_row + 1))
        ci, cj = n12.indices[ii], n12.indices[jj]
        flat = cj.astype(np.int64) * r + ci
        codes, low = pd.factorize(flat)
        low = np.asarray(low, dtype=np.int64)
        klass, n_class = pd.factorize(n1)
        n_class = np.asarray(n_class, dtype=float)
        level = np.repeat(np.arange(q1), k)[ii]
        op = sp.csr_matrix((n12.data[ii] * n12.data[jj], (codes, klass[level])),
                           shape=(low.size, n_class.size))
        op.sum_duplicates()
        low_i, low_j = low % r, low // r
        tr_w = np.where(low_i == low_j, 1.0, 2.0)
        rz = pb.q - q1
        zdiag = np.arange(rz, dtype=np.int64)
        return cls_(n1, c0, n12, perm, low, op, n_class, np.asarray(klass), tr_w, low_i,
                    low_j, zdiag)


@dataclass
class Work:
    """What one evaluation keeps for the gradient."""

    k_low: np.ndarray        # K's lower triangle (r x r, Fortran order)
    d2: np.ndarray           # d on block 2


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
    from irmodels.models._reml import Fit

    st = structure(pb)
    q1, r = pb.q1, pb.r
    d = pb.dvec(theta)
    t1 = float(d[0])
    d2 = d[q1:]
    d1 = 1.0 + t1 * t1 * st.n1
    # K = N22 - N21 diag(theta1^2 / d1) N12 (lower triangle)
    wc = t1 * t1 / (1.0 + t1 * t1 * st.n_class)
    k_flat = st.c0.ravel(order="F").copy()
    if t1 != 0.0:
        k_flat[st.low] -= st.op @ wc
    k_low = k_flat.reshape((r, r), order="F")
    s = np.asfortranarray(k_low * d2[:, None])
    s *= d2[None, :]
    s[st.zdiag, st.zdiag] += 1.0
    L, info = sla.lapack.dpotrf(s, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"blocked REML factor: the Schur complement is not positive "
                                    f"definite (dpotrf info {info})")
    ty = np.bincount(pb.cols.ravel(), weights=(pb.y[:, None] * pb.vals).ravel(), minlength=pb.Q)
    ty1, ty2 = ty[:q1], ty[q1:]
    # rhs c = d * T'y; x2 = S^-1 (c2 - B' D1^-1 c1), B = theta1 N12 D2
    v = d2 * (ty2 - st.n12.T @ (t1 * t1 * ty1 / d1))
    x2, info = sla.lapack.dpotrs(L, v, lower=1)
    x1 = (t1 * ty1 - t1 * (st.n12 @ (d2 * x2))) / d1
    x = np.concatenate([x1, x2])
    u = x[: pb.q]
    beta = x[pb.q:]
    fitted = np.sum(pb.vals * (d * x)[pb.cols], axis=1)
    resid = pb.y - fitted
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
    b_vals = np.empty(st.n12.nnz)
    b_vals[st.perm] = t1 * st.n12.data * d2[st.n12.indices]
    bs = sp.csr_matrix((b_vals[st.perm], st.n12.indices, st.n12.indptr), shape=(q1, r))
    f = Fit(dev, logdet_m, logdet_rx, r2, r2 / dof, u, beta, resid, np.ones(n), d,
            pb.unit_cross(), d1, bs, b_vals, (L, True))
    f.blocked = Work(k_low, d2)
    return f


def gradient_parts(pb: Problem, f: Fit, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(gl, gr)`` as :func:`irmodels.models._reml.gradient_parts` returns them."""
    st = structure(pb)
    work: Work = f.blocked
    q1, r = pb.q1, pb.r
    L = f.cho[0]
    # REML: S^-1; ML: the inverse of S's Z block (A's Schur complement), whose Cholesky factor
    # is the leading block of L
    m = r if reml else r - pb.p
    gl = np.zeros(pb.K)
    t1 = float(f.d[0])
    if m:
        sinv, info = sla.lapack.dpotri(np.array(L[:m, :m], order="F"), lower=1)
        if info != 0:  # pragma: no cover - L comes from a successful dpotrf
            raise np.linalg.LinAlgError(f"blocked REML gradient: dpotri info {info}")
        k_low = work.k_low[:m, :m]
        d2 = work.d2[:m]
        # E = S^-1 o K on the lower triangle (dpotri leaves the zeros above the diagonal):
        # (S^-1 D2 K)_jj = sum_l E_jl d_l over the full symmetric E
        e = sinv * k_low
        g = e @ d2 + e.T @ d2 - np.diag(e) * d2
        rz = pb.q - q1
        term = pb.term_of_col[q1:q1 + rz]
        gl += 2.0 * np.bincount(term, weights=g[:rz], minlength=pb.K)
        if t1 != 0.0:
            # Y = N21 diag(d1^-2) N12 on the lower pattern; tr(S^-1 D2 Y D2)
            yv = st.op @ (1.0 / (1.0 + t1 * t1 * st.n_class)) ** 2
            inside = (st.low_i < m) & (st.low_j < m) if m < r else slice(None)
            li, lj = st.low_i[inside], st.low_j[inside]
            sv = sinv.ravel(order="F")[lj * m + li]
            tr = float(np.sum(st.tr_w[inside] * sv * yv[inside] * d2[li] * d2[lj]))
            gl[0] = 2.0 * t1 * (float(np.sum(st.n1 / f.d1)) - tr)
    elif t1 != 0.0:  # one random term and no fixed effect (REML), or one random term (ML)
        gl[0] = 2.0 * t1 * float(np.sum(st.n1 / f.d1))
    # d r2 / d theta_k = -2 sum_i e_i (Z_k u_k)_i
    ix = pb.index()
    u_full = np.concatenate([f.u, np.zeros(pb.p)])
    zu = f.resid[:, None] * (pb.vals * u_full[pb.cols])
    gr = -2.0 * np.bincount(ix.grad_entry_term, weights=zu.ravel()[ix.grad_entries],
                            minlength=pb.K)
    return gl, gr
