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
from scipy.linalg import cho_factor, cho_solve

from irmodels.models._family import Family

__all__ = ["GRAD_MAX_Q", "LaplaceGradient", "ZPairs", "gradient_available"]

#: the most random effects for which the engine uses the exact gradient (dense q x q algebra)
GRAD_MAX_Q = 1000


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


def _chol_inv(M: np.ndarray) -> np.ndarray:
    c = cho_factor(M, lower=True, check_finite=False)
    return cho_solve(c, np.eye(M.shape[0]), check_finite=False)


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

    def _ZtDZ(self, D: np.ndarray) -> np.ndarray:
        return self.pairs.ZtDZ(D)  # type: ignore[union-attr]

    def _parts(self, m: Any) -> dict[str, Any]:
        dev = self.dev
        fam, y, w = dev.fam, dev.gd.y, dev.gd.weights
        eta, u = m.eta, m.u
        d1, d2 = fam.deta_derivs(y, eta, w)
        W, dW = _dexpected_weights(fam, eta, w)
        Wo = -d2
        Lam = self.lmm.Lambda(m.theta).toarray()
        q = len(u)
        ZtWZ = self._ZtDZ(W)
        Hi = _chol_inv(Lam.T @ ZtWZ @ Lam + np.eye(q))
        if fam.canonical:
            Hoi = Hi
        else:
            Hoi = _chol_inv(Lam.T @ self._ZtDZ(Wo) @ Lam + np.eye(q))
        K = Lam @ Hi @ Lam.T
        h = self.pairs.diag_ZKZt(K)  # type: ignore[union-attr]  # diag(A H^-1 A')
        s = dW * h
        return {"d1": d1, "Wo": Wo, "Lam": Lam, "Hi": Hi, "Hoi": Hoi, "s": s,
                "G": ZtWZ @ Lam @ Hi, "Ztd1": self.Zt @ d1, "u": u}

    def _theta_grad(self, P: dict[str, Any], v: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The theta components given the adjoint ``v`` (q) and ``t = Wo o (deta of v)`` (n)."""
        u, Ztd1 = P["u"], P["Ztd1"]
        a = self.Zt @ (P["s"] - t) - 2 * Ztd1
        r, c = self.lam_rows, self.lam_cols
        # per entry (r, c) of dLambda_k: a' dLambda u + 2 tr(G' dLambda) + v' dLambda' Z'd1
        e = a[r] * u[c] + 2 * P["G"][r, c] + v[c] * Ztd1[r]
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
