"""Numerical core of :mod:`irmodels.models.mixed`: profiled (RE)ML deviance of a linear mixed
model with random intercepts and optional per-stratum residual variances.

Model (lme4's formulation; Bates, Maechler, Bolker & Walker, J. Stat. Softw. 67(1), 2015):

    y = X beta + Z Lambda u + eps,   u ~ N(0, sigma^2 I),   eps ~ N(0, sigma^2 W^-1)

``Lambda`` is diagonal with ``theta_k`` on the levels of random term ``k`` (``theta_k =
sigma_k / sigma``); ``W`` is diagonal with ``w_i = 1 / delta_s(i)^2`` where ``delta_s`` is the
residual SD of stratum ``s`` relative to the reference stratum (nlme's ``varIdent``; ``delta`` of
the reference is 1). With ``T = [Z X]`` and ``D = diag(theta on Z columns, 1 on X columns)`` the
penalised system matrix is

    M = D T' W T D + diag(1 on Z columns, 0 on X columns)

and the profiled deviances are (``r2`` the penalised weighted residual sum of squares)

    REML: log|M| + (n - p) (1 + log(2 pi r2 / (n - p))) - sum(log w)
    ML:   log|A| + n (1 + log(2 pi r2 / n)) - sum(log w),     A = the Z block of M.

Structure: each random term is one grouping factor, so the block of ``M`` that belongs to one
term is diagonal. The largest term is eliminated through that diagonal (a Schur complement),
and only the remaining, small block (the other random terms and the fixed effects) is
factorised densely. Nothing of size n x n is ever formed. Gradients are analytic: they need the
entries of ``M^-1`` on the sparsity pattern of ``T' W T`` only, which the same block
elimination gives. Large homoscedastic designs (a sparse coupling block) use the blocked kernel
of :mod:`irmodels.models._blocked` instead, whose gradient needs the inverse of the Schur
complement alone; :func:`evaluate`'s ``kernel`` chooses.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from irmodels._threads import kernel_threads
from irmodels.models import _blocked
from irmodels.models._chol import cho_solve_lower, cholesky_lower
from irmodels.models._reml_problem import Fit, Problem

LOG2PI = math.log(2.0 * math.pi)


def _lower_flat(L: np.ndarray) -> np.ndarray:
    """S^-1 from the lower Cholesky factor of S (LAPACK potri), flattened column-major: only its
    lower triangle is valid (read it through ``_reml_problem._lower_index``); no copy to
    symmetrise."""
    inv, info = sla.lapack.dpotri(L, lower=1)
    if info != 0:  # pragma: no cover - S is positive definite by construction
        inv = sla.cho_solve((L, True), np.eye(L.shape[0]), check_finite=False)
    return np.asfortranarray(inv).ravel(order="F")


def _factor(pb: Problem, theta: np.ndarray, eta: np.ndarray | None, reml: bool,
            kernel: str = "auto") -> Fit:
    """The factorisation at (theta, eta): ``kernel`` "auto" uses the blocked kernel
    (:mod:`irmodels.models._blocked`) on the designs it applies to, "pattern" never."""
    if kernel == "blocked" or (kernel == "auto" and _blocked.applies(pb)):
        if pb.n_strata > 1:
            raise ValueError("the blocked kernel fits one residual variance; this problem has "
                             f"{pb.n_strata} strata: use kernel='pattern' (or 'auto')")
        return _blocked.factor(pb, theta, reml)
    w = pb.weights(eta)
    d = pb.dvec(theta)
    if eta is None or pb.n_strata == 1:  # unit weights: T'T does not change
        n_vals = pb.unit_cross()
    else:
        n_vals = np.bincount(pb.pair_of.ravel(), weights=(pb.pair_prod * w[:, None]).ravel(),
                             minlength=pb.pair_a.size)
    ty = np.bincount(pb.cols.ravel(), weights=((w * pb.y)[:, None] * pb.vals).ravel(),
                     minlength=pb.Q)
    m_vals = n_vals * d[pb.pair_a] * d[pb.pair_b]
    q1, r = pb.q1, pb.r
    d1 = 1.0 + np.bincount(pb.idx11, weights=m_vals[pb.pos11], minlength=q1)
    C = np.bincount(pb.idx_rr, weights=m_vals[pb.posrr], minlength=r * r).astype(float).reshape(r, r)
    b_vals = m_vals[pb.pos1r]
    rand_rest = pb.q - q1
    C[np.arange(rand_rest), np.arange(rand_rest)] += 1.0
    Bs: np.ndarray | sp.csr_matrix
    if pb.dense_b:
        Bs = np.bincount(pb.idx_1r, weights=b_vals, minlength=q1 * r).reshape(q1, r)
        S = C - Bs.T @ (Bs / d1[:, None]) if q1 else C
    else:
        Bs = sp.csr_matrix((b_vals, (pb.pair_a[pb.pos1r], pb.pair_b[pb.pos1r] - q1)),
                           shape=(q1, r))
        S = C - np.asarray((Bs.T @ (sp.diags(1.0 / d1) @ Bs)).todense()) if q1 else C
    rhs = ty * d
    c1, c2 = rhs[:q1], rhs[q1:]
    if r:
        cho = (cholesky_lower(S, clean=False), True)  # as sla.cho_factor(S, lower=True)
        x2 = cho_solve_lower(cho[0], c2 - Bs.T @ (c1 / d1))
        diagL = np.diag(cho[0])
        logdet_s = 2.0 * float(np.sum(np.log(diagL)))
        logdet_rx = 2.0 * float(np.sum(np.log(diagL[r - pb.p:]))) if pb.p else 0.0
    else:
        cho = None
        x2 = np.zeros(0)
        logdet_s = 0.0
        logdet_rx = 0.0
    x1 = (c1 - Bs @ x2) / d1 if q1 else np.zeros(0)
    x = np.concatenate([x1, x2])
    u = x[: pb.q]
    beta = x[pb.q:]
    fitted = np.sum(pb.vals * (d * x)[pb.cols], axis=1)
    resid = pb.y - fitted
    r2 = float(np.sum(w * resid**2) + np.sum(u**2))
    logdet_m = float(np.sum(np.log(d1))) + logdet_s
    slw = float(np.sum(np.log(w)))
    n, p = pb.n, pb.p
    if reml:
        dof = n - p
        dev = logdet_m + dof * (1.0 + LOG2PI + math.log(max(r2, 1e-300) / dof)) - slw
    else:
        dof = n
        dev = (logdet_m - logdet_rx) + n * (1.0 + LOG2PI + math.log(max(r2, 1e-300) / n)) - slw
    return Fit(dev, logdet_m, logdet_rx, r2, r2 / dof, u, beta, resid, w, d, n_vals, d1, Bs,
               b_vals, cho)


def _symmetric(low: np.ndarray, r: int) -> np.ndarray:
    """The full (r x r) S^-1 from :func:`_lower_flat`'s lower triangle."""
    m = low.reshape(r, r, order="F")
    return np.tril(m) + np.tril(m, -1).T


def _minv_pattern(pb: Problem, f: Fit, ml: bool) -> np.ndarray:
    """Entries of M^-1 (REML) or A^-1 (ML: random block only) on the pair pattern."""
    q1, r = pb.q1, pb.r
    a, b = pb.pair_a, pb.pair_b
    ix = pb.index()
    # S^-1's lower triangle (column-major); the full matrix only where a dense product needs it
    low = _lower_flat(f.cho[0]) if r and f.cho is not None else np.zeros(0)
    has_s = low.size > 0
    # the full S^-1 only where a dense product needs it (dense coupling block, ML)
    dense_b = q1 and isinstance(f.Bs, np.ndarray)
    Sinv = (_symmetric(low, r) if has_s else np.zeros((r, r))) if dense_b or ml else None

    FS: np.ndarray | None = None
    if dense_b:
        Fd = f.Bs / f.d1[:, None]
        FS = Fd @ Sinv
        diag11 = 1.0 / f.d1 + np.einsum("ij,ij->i", Fd, FS)
        v1r = -FS[a[pb.pos1r], b[pb.pos1r] - q1]
    elif q1:
        # Large designs: F = D1^-1 B is sparse (a level of the largest term meets few other
        # columns); the dense q1 x r product F S^-1 is never formed. Only its entries on the
        # pattern of B are needed: row a of F has k non-zeros (columns cols[a], values V[a],
        # padded with zeros; see _SparseLayout), so (F S^-1)[a, c] = sum_k V[a,k]
        # S^-1[cols[a,k], c]; and the diagonal of F S^-1 F' is, for each row a, the sum over
        # its non-zeros c of F[a, c] (F S^-1)[a, c].
        lay = pb.sparse_layout()
        fvals = f.b_vals / f.d1[lay.row]  # F = D1^-1 B on B's pattern pairs
        if has_s:
            V = np.zeros((q1, lay.width))
            V[lay.row, lay.slot] = fvals
            fsv = np.einsum("ik,ik->i", V[lay.row], low[lay.fs_idx])
        else:
            fsv = np.zeros(len(lay.row))
        diag11 = 1.0 / f.d1 + np.bincount(lay.row, weights=fvals * fsv, minlength=q1)
        v1r = -fsv
    else:
        FS = np.zeros((0, r))
        diag11 = np.zeros(0)
        v1r = np.zeros(0)

    # the pattern's pairs by class (positions precomputed in Problem): the q1 block is
    # diagonal; a pair (a >= q1, b < q1) takes the entry of its transpose (b, a)
    out = np.zeros(a.size)
    out[pb.pos11] = diag11[pb.idx11]
    out[pb.pos1r] = v1r
    out[ix.posr1] = v1r[ix.r1_from_1r]
    out[pb.posrr] = low[ix.rr_low] if has_s else 0.0
    if ml and pb.p:
        # A^-1 = M^-1_ZZ - M^-1_ZX (M^-1_XX)^-1 M^-1_XZ
        assert Sinv is not None
        xcols = np.arange(pb.q, pb.Q)
        gz = np.empty((pb.Q, pb.p))
        gz[:q1] = -(FS[:, xcols - q1] if FS is not None
                    else np.asarray((sp.diags(1.0 / f.d1) @ f.Bs) @ Sinv[:, xcols - q1]))
        gz[q1:] = Sinv[:, xcols - q1]
        vb = Sinv[np.ix_(xcols - q1, xcols - q1)]
        gzv = np.linalg.solve(vb, gz.T).T
        zz = (a < pb.q) & (b < pb.q)
        out = np.where(zz, out - np.einsum("ij,ij->i", gzv[a], gz[b]), 0.0)
    return out


def gradient_parts(pb: Problem, f: Fit, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of log det M (``gl``) and of the weighted residual sum of squares (``gr``).

    Both are with respect to (theta, eta[1:]); the profiled deviance's gradient is
    ``gl + dof / r2 * gr`` (plus ``2 N_s`` for each eta_s), and lmerTest's unprofiled
    derivatives reuse the two parts separately.
    """
    if f.blocked is not None:
        return _blocked.gradient_parts(pb, f, reml)
    minv = _minv_pattern(pb, f, ml=not reml)
    a, b = pb.pair_a, pb.pair_b
    # d logdet / d theta_k = 2 sum_{pairs (a,b), a in k} N_ab d_b Minv_ab
    contrib = f.n_vals * f.d[b] * minv
    ix = pb.index()
    gl = 2.0 * np.bincount(ix.grad_pair_term, weights=contrib[ix.grad_pairs], minlength=pb.K)
    # d r2 / d theta_k = -2 sum_i w_i e_i (Z_k u_k)_i
    u_full = np.concatenate([f.u, np.zeros(pb.p)])
    zu = (f.w * f.resid)[:, None] * (pb.vals * u_full[pb.cols])
    gr = -2.0 * np.bincount(ix.grad_entry_term, weights=zu.ravel()[ix.grad_entries],
                            minlength=pb.K)
    if pb.n_strata > 1:
        # d/d eta_s (eta = log delta): N -> -2 N_s
        hpair = f.d[a] * f.d[b] * minv
        h = np.sum(pb.pair_prod * hpair[pb.pair_of], axis=1)
        hs = np.bincount(pb.sidx, weights=f.w * h, minlength=pb.n_strata)
        es = np.bincount(pb.sidx, weights=f.w * f.resid**2, minlength=pb.n_strata)
        gl = np.concatenate([gl, -2.0 * hs[1:]])
        gr = np.concatenate([gr, -2.0 * es[1:]])
    return gl, gr


def evaluate(pb: Problem, theta: np.ndarray, eta: np.ndarray | None, reml: bool,
             gradient: bool = False, kernel: str = "auto") -> Fit:
    """Profiled deviance at (theta, eta), with its gradient in (theta, eta) when asked.

    ``kernel``: "auto" (the blocked kernel on large homoscedastic designs, the pattern kernel
    otherwise), "pattern" or "blocked" (tests compare the two).
    """
    theta = np.asarray(theta, float)
    with kernel_threads(pb.r):  # free inside a fit (irm.mixed sets the threads once)
        f = _factor(pb, theta, eta, reml, kernel)
        if not gradient:
            return f
        gl, gr = gradient_parts(pb, f, reml)
    dof = (pb.n - pb.p) if reml else pb.n
    g = gl + dof / f.r2 * gr
    if pb.n_strata > 1:
        g[pb.K:] += 2.0 * pb.n_per_stratum[1:]
    f.gradient = g
    return f


def unprofiled(pb: Problem, theta: np.ndarray, sigma: float, eta: np.ndarray | None,
               reml: bool) -> float:
    """-2 log-likelihood at (theta, sigma, eta) without profiling sigma (lmerTest's devfun_vp)."""
    f = _factor(pb, np.asarray(theta, float), eta, reml)
    slw = float(np.sum(np.log(f.w)))
    if reml:
        return (f.logdet_m + (pb.n - pb.p) * (LOG2PI + 2 * math.log(abs(sigma)))
                + f.r2 / sigma**2 - slw)
    return (f.logdet_m - f.logdet_rx + pb.n * (LOG2PI + 2 * math.log(abs(sigma)))
            + f.r2 / sigma**2 - slw)


def fixed_cov_unscaled(pb: Problem, f: Fit) -> np.ndarray:
    """(X' V_theta^-1 X)^-1 with V_theta = Z Lambda Lambda' Z' + W^-1 (multiply by sigma^2)."""
    if not pb.p:
        return np.zeros((0, 0))
    r = pb.r
    e = np.zeros((r, pb.p))
    e[r - pb.p:, :] = np.eye(pb.p)
    return sla.cho_solve(f.cho, e, check_finite=False)[r - pb.p:, :]
