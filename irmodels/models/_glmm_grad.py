"""The exact gradient of the GLMM Laplace deviance (lme4's ``glmer`` objective, ``nAGQ = 1``).

With ``A = Z Lambda(theta)``, ``eta = offset + X beta + A u``, the penalised deviance
``f(u) = -2 log f(y | u) + |u|^2`` and ``H = A' W A + I`` (``W`` the expected information in
``eta``, as lme4's Laplace for every link), the deviance at the conditional mode ``u*`` is

``D(theta, beta) = f(u*) + log|H(eta*)|``.

At the mode ``df/du = 0``, so ``dD/dpsi`` is the explicit partial derivative of ``f``, the
derivative of ``log|H|`` at fixed ``eta`` (``2 tr(H^-1 Lambda' Z' W Z dLambda)``), and
``sum_i h_i W'_i deta_i/dpsi`` with ``h = diag(A H^-1 A')``, ``W' = dW/deta`` and the implicit
derivative of the mode, ``du/dpsi = -Ho^-1 d2f/(du dpsi) / 2`` (``Ho = A' Wo A + I``, ``Wo``
the observed information: the Hessian of ``f / 2`` in ``u``). One adjoint solve
``v = Ho^-1 A' (W' o h)`` gives every parameter's term. In the first stage (``beta`` profiled
out by PIRLS jointly with ``u``, lme4's ``nAGQ = 0``) the implicit derivative runs through
``(u, beta)`` jointly and the gradient is in ``theta`` alone. This is the approach of the beta
family's Laplace (``_family_beta._BetaLaplace``), for the families whose Laplace uses the
expected information (binomial, Poisson: ``W = w mu_eta^2 / V``).

Everything is computed in the q-space of the random effects with dense ``q x q`` matrices, so
the gradient is used for designs of at most :data:`GRAD_MAX_Q` random effects (the engine
falls back on finite differences beyond).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from irmodels.models._chol import cho_inverse
from irmodels.models._family import Family
from irmodels.models._lmm import SINGULAR_TOL

__all__ = ["GRAD_MAX_Q", "LaplaceGradient", "ZPairs", "agq_gradient", "deriv12", "free_params",
           "grad_hessian", "gradient_available", "newton_polish"]

#: the most random effects for which the engine uses the exact gradient (dense q x q algebra)
GRAD_MAX_Q = 1000
#: from this many random effects :class:`LaplaceGradient` inverts ``H`` by blocks when one scalar
#: term holds at least half of them
_SPLIT_MIN_Q = 100


def gradient_available(fam: Family, q: int) -> bool:
    """Whether :class:`LaplaceGradient` applies: a family without dispersion whose Laplace
    uses the expected information and which defines the derivative of its variance."""
    return (not fam.has_dispersion and fam.laplace_weights == "expected"
            and type(fam)._dvariance is not Family._dvariance and 0 < q <= GRAD_MAX_Q)


def _dexpected_weights(fam: Family, eta: np.ndarray, w: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """``W = w mu_eta^2 / V(mu)`` and ``dW/deta``."""
    lk = fam.link
    mu = lk.linkinv(eta)
    m1, m2 = lk.mu_eta(eta), lk.mu_eta2(eta)
    V = fam.variance(mu)
    dV = fam._dvariance(mu)
    W = w * m1 ** 2 / V
    dW = w * (2 * m1 * m2 / V - m1 ** 3 * dV / V ** 2)
    return W, dW


class ZPairs:
    """The fixed pattern of ``Z' D Z`` (``D`` diagonal): the products ``z_ia z_ib`` of each
    row's nonzeros, summed by a sparse matrix ``S`` so that ``vec(Z' D Z)[nz] = S d`` and
    ``diag(Z K Z') = S' vec(K)[nz]``; ``O(sum_i r_i^2)`` per call (``r_i`` nonzeros in row
    ``i``: 2 for crossed intercepts) instead of ``n q^2`` with a dense ``Z``."""

    def __init__(self, Z: Any) -> None:
        Z = sp.csr_matrix(Z)
        Z.sort_indices()
        n, q = Z.shape
        counts = np.diff(Z.indptr)
        rows, flat, vals = [], [], []
        for r in np.unique(counts[counts > 0]):
            idx = np.flatnonzero(counts == r)
            pos = Z.indptr[idx][:, None] + np.arange(r)[None, :]
            c, v = Z.indices[pos].astype(np.int64), Z.data[pos]
            rows.append(np.repeat(idx, r * r))
            flat.append((c[:, :, None] * q + c[:, None, :]).ravel())
            vals.append((v[:, :, None] * v[:, None, :]).ravel())
        fl = np.concatenate(flat) if flat else np.zeros(0, np.int64)
        self.nz, inv = np.unique(fl, return_inverse=True)
        self.S = sp.csr_matrix((np.concatenate(vals) if vals else np.zeros(0),
                                (inv, np.concatenate(rows) if rows else np.zeros(0, int))),
                               shape=(len(self.nz), n))
        self.St = self.S.T.tocsr()
        self.q = q
        self.size = len(fl)

    def ZtDZ(self, d: np.ndarray) -> np.ndarray:
        """``Z' diag(d) Z`` as a dense ``q x q`` array."""
        M = np.zeros(self.q * self.q)
        M[self.nz] = self.S @ d
        return M.reshape(self.q, self.q)

    def diag_ZKZt(self, K: np.ndarray) -> np.ndarray:
        """``diag(Z K Z')`` for a dense ``q x q`` ``K``."""
        return self.St @ K.ravel()[self.nz]


class LaplaceGradient:
    """The exact gradient of :class:`irmodels.models._glmm.GlmmDeviance`'s Laplace deviance
    at a PIRLS mode: ``stage2(m)`` in ``(theta, beta)``, ``stage1(m)`` in ``theta`` with
    ``beta`` profiled (the mode of the joint PIRLS)."""

    def __init__(self, dev: Any) -> None:
        d = dev.gd.lmm
        self.dev = dev
        self.Z = dev.Z.tocsr()
        self.Zt = self.Z.T.tocsr()
        self.X = dev.X
        #: Lambda is linear in theta: its entries (row, column) and the theta of each
        #: (dLambda/dtheta_k has ones where lind == k)
        self.lam_rows = np.asarray(d.lam_indices, np.int64)
        self.lam_cols = np.repeat(np.arange(len(d.lam_indptr) - 1),
                                  np.diff(d.lam_indptr)).astype(np.int64)
        self.lam_k = np.asarray(d.lind, np.int64)
        self.nt = dev.nt
        self.lmm = d
        self.pairs: ZPairs | None = getattr(dev, "pairs", None) or ZPairs(self.Z)
        self.nz_rows, self.nz_cols = np.divmod(self.pairs.nz, self.pairs.q)
        #: the columns [a, b) of the scalar term with the most levels, when it has at least half
        #: the random effects: its block of H is diagonal (a row has one level of the term), so
        #: H^-1 comes from that block's Schur complement (an observation-level term of 650
        #: levels beside 50 topics: a 50 x 50 factorisation instead of 700 x 700)
        self.split: tuple[int, int] | None = None
        q = self.Z.shape[1]
        if dev.lam_diag is not None and len(d.blocks) > 1 and q >= _SPLIT_MIN_Q:
            big = max(d.blocks, key=lambda b: b.n_levels)
            if 2 * big.n_levels >= q:
                self.split = (big.offset, big.offset + big.n_levels)

    def _ZtDZ(self, D: np.ndarray) -> np.ndarray:
        return self.pairs.ZtDZ(D)  # type: ignore[union-attr]

    def _inverse(self, M: np.ndarray) -> np.ndarray:
        """``M^-1`` of a symmetric positive definite ``M`` of the pattern of ``H``: by blocks
        when ``M[a:b, a:b]`` is diagonal (``self.split``), ``D^-1 + D^-1 C S^-1 C' D^-1``,
        ``-D^-1 C S^-1`` and ``S^-1`` with ``S = E - C' D^-1 C`` (``C = M[a:b, rest]``, ``E =
        M[rest, rest]``)."""
        if self.split is None:
            return cho_inverse(M)
        a, b = self.split
        q = M.shape[0]
        rest = np.r_[0:a, b:q]
        d = M.diagonal()[a:b]
        DiC = M[a:b, rest] / d[:, None]
        Si = cho_inverse(M[np.ix_(rest, rest)] - M[rest, a:b] @ DiC)
        X12 = -DiC @ Si
        out = np.empty_like(M)
        Hi11 = -(X12 @ DiC.T)
        Hi11[np.diag_indices(b - a)] += 1.0 / d
        out[a:b, a:b] = Hi11
        out[a:b, rest] = X12
        out[rest, a:b] = X12.T
        out[np.ix_(rest, rest)] = Si
        return out

    def _parts(self, m: Any) -> dict[str, Any]:
        dev = self.dev
        fam, y, w = dev.fam, dev.gd.y, dev.gd.weights
        eta, u = m.eta, m.u
        d1, d2 = fam.deta_derivs(y, eta, w)
        W, dW = _dexpected_weights(fam, eta, w)
        Wo = -d2
        q = len(u)

        def plus_identity(M: np.ndarray) -> np.ndarray:
            M[np.diag_indices(q)] += 1.0
            return M

        pairs = self.pairs
        assert pairs is not None
        if dev.lam_diag is not None:
            # Lambda diagonal: Z'WZ, H and the pieces of H^-1 used are read on the pattern of
            # Z'WZ (its nz entries, rows ri, columns ci): O(nnz) besides the inverse
            lam = np.asarray(m.theta, float)[dev.lam_diag]
            Lam = sp.diags(lam, format="csr")
            nz, ri, ci = pairs.nz, self.nz_rows, self.nz_cols
            ll = lam[ri] * lam[ci]

            def H_of(ZtDZ: np.ndarray) -> np.ndarray:  # from Z'DZ on its pattern
                M = np.zeros(q * q)
                M[nz] = ZtDZ * ll
                return plus_identity(M.reshape(q, q))

            WZ = pairs.S @ W  # Z'WZ on its pattern
            Hi = self._inverse(H_of(WZ))
            Hoi = Hi if fam.canonical else self._inverse(H_of(pairs.S @ Wo))
            Hz = Hi.ravel()[nz]
            h = pairs.St @ (Hz * ll)  # diag(A H^-1 A') = diag(Z Lambda H^-1 Lambda' Z')
            # G = Z'WZ Lambda H^-1 at Lambda's (diagonal) entries: sum_j Z'WZ_rj lam_j H^-1_jr
            Gd = np.bincount(ri, weights=WZ * lam[ci] * Hz, minlength=q)
            G_rc = Gd[self.lam_rows]
        else:
            ZtWZ = self._ZtDZ(W)
            Lam = self.lmm.Lambda(m.theta).toarray()
            Hi = self._inverse(plus_identity(Lam.T @ ZtWZ @ Lam))
            Hoi = Hi if fam.canonical else self._inverse(
                plus_identity(Lam.T @ self._ZtDZ(Wo) @ Lam))
            h = pairs.diag_ZKZt(Lam @ Hi @ Lam.T)  # diag(A H^-1 A')
            # G = Z'WZ Lambda H^-1 only at Lambda's entries (r, c): row r of Z'WZ Lambda times
            # column c of H^-1 (symmetric: its row c), O(nnz(Lambda) q), not a q^3 product
            B = ZtWZ @ Lam
            G_rc = np.einsum("ij,ij->i", B[self.lam_rows], Hi[self.lam_cols])
        s = dW * h
        return {"d1": d1, "Wo": Wo, "Lam": Lam, "Hi": Hi, "Hoi": Hoi, "s": s,
                "G_rc": G_rc, "Ztd1": self.Zt @ d1, "u": u}

    def _theta_grad(self, P: dict[str, Any], v: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The theta components given the adjoint ``v`` (q) and ``t = Wo o (deta of v)`` (n)."""
        u, Ztd1 = P["u"], P["Ztd1"]
        a = self.Zt @ (P["s"] - t) - 2 * Ztd1
        r, c = self.lam_rows, self.lam_cols
        # per entry (r, c) of dLambda_k: a' dLambda u + 2 tr(G' dLambda) + v' dLambda' Z'd1
        e = a[r] * u[c] + 2 * P["G_rc"] + v[c] * Ztd1[r]
        return np.bincount(self.lam_k, weights=e, minlength=self.nt)

    def stage2(self, m: Any) -> np.ndarray:
        """``dD/d(theta, beta)`` at the mode ``m`` (PIRLS at given theta and beta)."""
        P = self._parts(m)
        Lam = P["Lam"]
        v = P["Hoi"] @ (Lam.T @ (self.Zt @ P["s"]))
        t = P["Wo"] * (self.Z @ (Lam @ v))
        gt = self._theta_grad(P, v, t)
        gb = self.X.T @ (-2 * P["d1"] + P["s"] - t)
        return np.concatenate([gt, gb])

    def stage1(self, m: Any) -> np.ndarray:
        """``dD/dtheta`` with beta profiled (the joint PIRLS mode ``m``)."""
        P = self._parts(m)
        Lam, Hoi, Wo, X = P["Lam"], P["Hoi"], P["Wo"], self.X
        r = Lam.T @ (self.Zt @ P["s"])
        AtWoX = Lam.T @ np.asarray(self.Zt @ (X * Wo[:, None]))
        HiAWX = Hoi @ AtWoX
        S = X.T @ (X * Wo[:, None]) - AtWoX.T @ HiAWX
        Hir = Hoi @ r
        vb = np.linalg.solve(S, X.T @ P["s"] - AtWoX.T @ Hir)
        v = Hir - HiAWX @ vb
        t = Wo * (self.Z @ (Lam @ v) + X @ vb)
        return self._theta_grad(P, v, t)


def agq_gradient(dev: Any, m: Any) -> np.ndarray:
    """The exact gradient in ``(theta, beta)`` of lme4's adaptive Gauss-Hermite deviance
    (``nAGQ > 1``, one scalar term ``(1|g)``) at the PIRLS mode ``m``.

    Per group ``j`` with ``f_j(u) = sum_{i in j} dev_i(eta_i(u)) + u^2``, the mode ``u_j``,
    ``M_j = 1 + theta^2 sum_{i in j} W_i z_i^2`` and ``sigma_j = M_j^(-1/2)``, the deviance is
    ``D_j = -2 log(sigma_j sum_k w_k exp(z_k^2 / 2 - f_j(u_j + sigma_j z_k) / 2))``; its
    derivative collects, with the node probabilities ``pi_jk`` (the summands normalised),
    ``sum_k pi_jk (df_j/dpsi + f_j'(U_jk) (du_j/dpsi + z_k dsigma_j/dpsi))`` and
    ``dM_j/dpsi / M_j``, where ``du_j/dpsi`` is the implicit derivative of the mode and
    ``dM_j/dpsi`` runs through ``W' = dW/deta`` at the mode."""
    fam, y, w = dev.fam, dev.gd.y, dev.gd.weights
    g, z = dev.one
    q, X = dev.q, dev.X
    th = float(m.theta[0])
    u = m.u
    ghq = dev.ghq
    zk, wk = ghq[:, 0], ghq[:, 1]
    bc = lambda v: np.bincount(g, weights=v, minlength=q)  # noqa: E731
    # at the mode
    d1, d2 = fam.deta_derivs(y, m.eta, w)
    W, dW = _dexpected_weights(fam, m.eta, w)
    Wo = -d2
    M = 1.0 + th ** 2 * bc(W * z ** 2)
    sig = 1.0 / np.sqrt(M)
    fpp = 2.0 * (1.0 + th ** 2 * bc(Wo * z ** 2))  # f_j'' at the mode
    # at the nodes U_jk = u_j + sigma_j z_k
    base = m.eta - th * z * u[g]
    U = u[:, None] + sig[:, None] * zk[None, :]
    etak = base[:, None] + (th * z)[:, None] * U[g]
    mu = fam.link.linkinv(etak)
    yk, wkk = y[:, None], w[:, None]
    dr = fam.deviance_resid(yk, mu, wkk)
    d1k = fam.deta_derivs(yk, etak, wkk)[0]
    K = len(zk)
    f = U ** 2 + np.stack([bc(dr[:, k]) for k in range(K)], axis=1)
    dev0 = fam.deviance_resid(y, m.mu, w)
    f0 = u ** 2 + bc(dev0)
    logit = np.log(wk)[None, :] + 0.5 * zk[None, :] ** 2 - 0.5 * (f - f0[:, None])
    logit -= logit.max(axis=1, keepdims=True)
    pi = np.exp(logit)
    pi /= pi.sum(axis=1, keepdims=True)
    Sd1z = np.stack([bc(-2.0 * d1k[:, k] * z) for k in range(K)], axis=1)  # sum_i ddev_i z_i
    fp = th * Sd1z + 2.0 * U  # f_j'(U_jk)
    c = (pi * fp).sum(axis=1)
    e = (pi * fp * zk[None, :]).sum(axis=1)
    gam = 1.0 / M - 0.5 * e * sig / M
    kap = gam * th ** 3 * bc(dW * z ** 3)
    # beta
    rA = (pi[g] * (-2.0 * d1k)).sum(axis=1)
    gb = X.T @ (rA + gam[g] * th ** 2 * dW * z ** 2
                - 2.0 * Wo * th * z * ((c + kap) / fpp)[g])
    # theta
    A_t = float((pi * U * Sd1z).sum())
    du = -(bc(-2.0 * d1 * z) + 2.0 * th * u * bc(Wo * z ** 2)) / fpp
    dM = 2.0 * th * bc(W * z ** 2) + th ** 2 * (bc(dW * z ** 2) * u
                                                 + th * bc(dW * z ** 3) * du)
    gt = A_t + float(c @ du + gam @ dM)
    return np.concatenate([[gt], gb])


# --------------------------------------------------------------------------------------------
# derivatives for the optimiser and vcov


def deriv12(f: Any, x: np.ndarray, fx: float, delta: float = 1e-4) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """lme4's ``deriv12``: central-difference gradient and Hessian with step ``delta``."""
    k = len(x)
    H = np.empty((k, k))
    g = np.empty(k)
    for j in range(k):
        xp, xm = x.copy(), x.copy()
        xp[j] += delta
        xm[j] -= delta
        fa, fs = f(xp), f(xm)
        H[j, j] = (fa - 2 * fx + fs) / delta ** 2
        g[j] = (fa - fs) / (2 * delta)
        for i in range(j):
            v = []
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                xx = x.copy()
                xx[i] += si * delta
                xx[j] += sj * delta
                v.append(f(xx))
            H[i, j] = H[j, i] = (v[0] - v[1] - v[2] + v[3]) / (2 * delta) ** 2
    return g, H


def free_params(x: np.ndarray, lower: np.ndarray, nt: int) -> np.ndarray:
    """Indices of the parameters not held on their bound (a diagonal theta at 0)."""
    return np.flatnonzero(~((np.arange(len(x)) < nt) & (lower == 0) & (x <= SINGULAR_TOL)))


def grad_hessian(vg: Any, x: np.ndarray, delta: float = 1e-4) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """The exact gradient at ``x`` and the Hessian by central differences of it (step
    ``delta``, as lme4's ``deriv12``): ``2k`` evaluations instead of deriv12's ``2k^2``."""
    k = len(x)
    H = np.empty((k, k))
    for j in range(k):
        xp, xm = x.copy(), x.copy()
        xp[j] += delta
        xm[j] -= delta
        H[:, j] = (vg(xp)[1] - vg(xm)[1]) / (2 * delta)
    g = vg(x)[1]  # last: PIRLS warm-starts from this point's mode
    return g, (H + H.T) / 2


def newton_polish(dev: Any, x: np.ndarray, fx: float, lower: np.ndarray,
                   vg: Any = None) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Newton steps on the parameters off their bounds with lme4's ``deriv12`` Hessian (or
    central differences of the exact gradient ``vg``); returns the point, its deviance, and
    the gradient and Hessian there (for ``vcov``)."""
    def derivs(x: np.ndarray, fx: float) -> tuple[np.ndarray, np.ndarray]:
        return grad_hessian(vg, x) if vg is not None else deriv12(dev, x, fx)

    g, H = derivs(x, fx)
    for _ in range(4):
        idx = free_params(x, lower, dev.nt)
        if not len(idx):
            break
        try:
            step = np.linalg.solve(H[np.ix_(idx, idx)], g[idx])
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        moved = False
        for a in (1.0, 0.5, 0.25):
            xn = x.copy()
            xn[idx] -= a * step
            xn = np.maximum(xn, np.where(lower == 0, 0.0, -np.inf))
            fn = dev(xn)
            if fn < fx:
                x, fx, moved = xn, fn, True
                break
        size = float(np.max(np.abs(step)))
        if not moved:
            break
        if size < 1e-6 * max(1.0, float(np.max(np.abs(x)))):
            if vg is not None:
                g = vg(x)[1]  # one evaluation: the gradient at the end point
            break  # the Hessian of the previous point serves (it moved by < 1e-6)
        g, H = derivs(x, fx)
    return x, fx, g, H
