"""The profiled deviance of a small random-effects design with its exact gradient and Hessian
(the dense path of :mod:`irmodels.models._lmm`, up to ``DENSE_MAX_Q`` random effects).

One Cholesky factor gives the whole penalised least squares (MixedModels.jl's blocked
``L``; Bates, Maechler, Bolker & Walker, J. Stat. Softw. 67(1), 2015, section 3): with
``Omega = [Z X y]' [Z X y]`` and ``Lambda~ = diag(Lambda, I)``, the lower factor ``R`` of
``Lambda~' Omega Lambda~ + diag(I_q, 0)`` holds ``L`` (first ``q`` rows), ``R_ZX'`` and
``R_X'`` (next ``p``) and, in its last row, ``(c_u', c_beta', sqrt(r^2))``: the deviance is
``2 sum log diag R`` plus the log of the last diagonal element. ``y`` enters as its residual
from the least-squares fit on ``X`` (the same model, ``beta`` shifted by the OLS
coefficients), which keeps ``r^2`` accurate when the response has a large mean.

Derivatives (Harville, JASA 72, 1977; lme4's parametrisation ``V = I + Z Lambda Lambda' Z'``
in units of ``sigma^2``, ``Lambda`` linear in ``theta``, ``dLambda_k`` the indicator of the
entries that hold ``theta_k``, ``D_k = Z A_k Z'`` with ``A_k = dLambda_k Lambda' + Lambda
dLambda_k'``), with ``P = V^-1 - V^-1 X (X'V^-1X)^-1 X'V^-1`` and ``r = P y`` (the PLS
residual; ``Z'r = s``, ``Lambda' s = u``):

- ``d (log|V| + log|X'V^-1X|) = tr(P D_k)`` (REML; ML: ``log|V|``, ``V^-1`` for ``P``) and
  ``d^2 = 2 tr(dLambda_l' W dLambda_k) - tr(W A_l W A_k)`` with ``W = Z'PZ`` (``Z'V^-1Z``);
- ``d r^2 = -2 s' dLambda_k u``, ``d^2 r^2 = 2 a_k' W a_l - 2 (dLambda_k' s)'(dLambda_l' s)``
  with ``a_k = A_k s`` (``W = Z'PZ`` whatever the criterion: ``beta`` is profiled);
- ``Z'PZ = Z'Z - F A^-1 F'`` with ``F = [Z'Z Lambda, Z'X]`` and ``A`` the leading ``q + p``
  block (``Z'V^-1Z``: ``M = L L'`` and ``Z'Z Lambda`` alone), so every quantity is a product
  of ``q``-sized matrices.

lmerTest's Satterthwaite ingredients follow at the optimum: the Hessian of the deviance in
``(theta, sigma)`` with ``sigma`` not profiled, and the Jacobian of ``sigma^2 (X'V^-1X)^-1``,
``d (X'V^-1X) = -K' A_k K`` with ``K = Z'V^-1X`` (Kuznetsova, Brockhoff & Christensen,
J. Stat. Softw. 82(13), 2017; lmerTest differentiates numerically, the same quantities).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotri, dtrtrs

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._lmm import LMMDesign

__all__ = ["DenseProfile", "satterthwaite_dense"]


class DenseProfile:
    """Profiled deviance, gradient and Hessian in ``theta`` of a design (dense, small ``q``)."""

    def __init__(self, design: LMMDesign, reml: bool) -> None:
        Z, X, y = design.Z, design.X, design.y
        n, p = X.shape
        q = Z.shape[1]
        self.n, self.p, self.q, self.reml = n, p, q, reml
        self.c = n - p if reml else n
        if p:
            Q, Rx = np.linalg.qr(X)
            self.beta0 = np.linalg.solve(Rx, Q.T @ y)
            yc = y - X @ self.beta0
        else:
            self.beta0, yc = np.zeros(0), np.asarray(y, float)
        N = q + p + 1
        if n * N * N <= 4_000_000:  # one dense product: [Z X y]' [Z X y]
            W = np.empty((n, N))
            W[:, :q] = Z.toarray()
            W[:, q:q + p] = X
            W[:, -1] = yc
            om = W.T @ W
        else:
            om = np.empty((N, N))
            ZtX = np.asarray(Z.T @ X).reshape(q, p)
            om[:q, :q] = (Z.T @ Z).toarray()
            om[:q, q:q + p] = ZtX
            om[q:q + p, :q] = ZtX.T
            om[:q, -1] = om[-1, :q] = np.asarray(Z.T @ yc).ravel()
            om[q:q + p, q:q + p] = X.T @ X
            om[q:q + p, -1] = om[-1, q:q + p] = X.T @ yc
            om[-1, -1] = yc @ yc
        ZtZ = om[:q, :q].copy()
        self.omega, self.ZtZ = om, ZtZ
        self.k = design.n_theta
        # each term: its slice of the random effects, levels, size, and where its template's
        # lower triangle (by column) sits in theta
        self.terms = []
        for b in design.blocks:
            rows, cols = np.tril_indices(b.q)
            order = np.lexsort((rows, cols))  # by column, then row: lme4's order
            self.terms.append((slice(b.offset, b.offset + b.n_levels * b.q), b.n_levels, b.q,
                               rows[order], cols[order],
                               np.arange(b.theta_offset, b.theta_offset + b.n_theta)))
        # Lambda's entries (its CSC pattern): row, column, and the theta each holds
        self.ia = np.asarray(design.lam_indices, np.intp)
        self.ja = np.repeat(np.arange(q), np.diff(design.lam_indptr)).astype(np.intp)
        self.lind = np.asarray(design.lind, np.intp)
        ia, ja, k = self.ia, self.ja, self.k
        # index arrays of the Hessian's sums over pairs of Lambda's entries
        self._same = 2.0 * (ja[:, None] == ja[None, :])
        self._P = np.zeros((len(ia), k))  # entry -> the theta it holds
        self._P[np.arange(len(ia)), self.lind] = 1.0
        self._vk, self._uk = ja * k + self.lind, ia * k + self.lind
        self.n_evals = 0
        self._last: tuple[bytes, Any] | None = None

    # -- Lambda products ----------------------------------------------------------------------
    def templates(self, theta: np.ndarray) -> list[np.ndarray]:
        out = []
        for _, _, qk, r, c, ti in self.terms:
            T = np.zeros((qk, qk))
            T[r, c] = theta[ti]
            out.append(T)
        return out

    def right(self, A: np.ndarray, Ts: list[np.ndarray]) -> np.ndarray:
        """``A @ Lambda~`` (the first ``q`` columns multiplied, the rest copied)."""
        out = A.copy()
        for (s, nl, qk, *_), T in zip(self.terms, Ts):
            if qk == 1:
                out[:, s] *= T[0, 0]
            else:
                out[:, s] = (A[:, s].reshape(-1, nl, qk) @ T).reshape(A.shape[0], -1)
        return out

    def left(self, A: np.ndarray, Ts: list[np.ndarray], trans: bool = True) -> np.ndarray:
        """``Lambda~' @ A`` (``Lambda~ @ A`` when not ``trans``)."""
        out = A.copy()
        for (s, nl, qk, *_), T in zip(self.terms, Ts):
            if qk == 1:
                out[s] *= T[0, 0]
            else:
                out[s] = ((T.T if trans else T) @ A[s].reshape(nl, qk, -1)).reshape(nl * qk, -1)
        return out

    # -- the factor and the deviance ----------------------------------------------------------
    def factor(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]] | None:
        """``(R, Omega Lambda~, templates)``; None when the system is not positive definite.
        The last factor is kept (the optimiser asks for the deviance, then the derivatives, at
        the same point); callers do not modify it."""
        theta = np.asarray(theta, float)
        key = theta.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        self.n_evals += 1
        Ts = self.templates(theta)
        B = self.right(self.omega, Ts)
        A = self.left(B, Ts)
        q = self.q
        A[np.arange(q), np.arange(q)] += 1.0
        R, info = dpotrf(A.T, lower=1, clean=1, overwrite_a=1)
        out = None if info != 0 else (R, B, Ts)
        self._last = (key, out)
        return out

    def deviance_of(self, R: np.ndarray) -> float:
        q, p = self.q, self.p
        d = np.diagonal(R)
        pwrss = d[-1] * d[-1]
        if not pwrss > 0:
            return math.inf
        ld = 2 * float(np.sum(np.log(d[:q + p] if self.reml else d[:q])))
        return ld + self.c * (1 + math.log(2 * math.pi * pwrss / self.c))

    def __call__(self, theta: np.ndarray) -> float:
        f = self.factor(theta)
        return math.inf if f is None else self.deviance_of(f[0])

    def solution(self, R: np.ndarray) -> np.ndarray:
        """``(u, beta - beta0)`` of the penalised least squares."""
        m = self.q + self.p
        z, _ = dtrtrs(R[:m, :m], R[m, :m], lower=1, trans=1)
        return z

    def Lambda(self, theta: np.ndarray) -> np.ndarray:
        """``Lambda(theta)``, dense."""
        out = np.zeros((self.q, self.q))
        out[self.ia, self.ja] = np.asarray(theta, float)[self.lind]
        return out

    def pls_parts(self, theta: np.ndarray) -> dict[str, Any] | None:
        """What :class:`irmodels.models._lmm_design.PLSFit` holds (None when not positive definite)."""
        f = self.factor(theta)
        if f is None:
            return None
        R = f[0]
        q, p = self.q, self.p
        z = self.solution(R)
        d = np.diagonal(R)
        return {"L": np.array(R[:q, :q]), "RX": np.array(R[q:q + p, q:q + p].T),
                "beta": self.beta0 + z[q:], "u": z[:q], "pwrss": float(d[-1] ** 2),
                "ldL2": 2 * float(np.sum(np.log(d[:q]))),
                "ldRX2": 2 * float(np.sum(np.log(d[q:q + p]))) if p else 0.0}

    # -- derivatives --------------------------------------------------------------------------
    def _residual_parts(self, R: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                     float]:
        q, m = self.q, self.q + self.p
        z = self.solution(R)
        s = B[:q, -1] - B[:q, :m] @ z  # Z'r
        return s, z[:q], float(R[-1, -1] ** 2)

    def grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Deviance and its gradient (inf and NaNs off the positive definite region)."""
        f = self.factor(theta)
        if f is None:
            return math.inf, np.full(self.k, np.nan)
        R, B, _ = f
        q = self.q
        m = q + self.p if self.reml else q
        s, u, pwrss = self._residual_parts(R, B)
        inv, _ = dpotri(R[:m, :m], lower=1)
        inv = np.tril(inv) + np.tril(inv, -1).T
        F = B[:q, :m]
        g_ld = np.einsum("ij,ji->i", F[self.ia], inv[:, self.ja])  # (W Lambda) at Lambda's entries
        ld = 2 * np.bincount(self.lind, g_ld, self.k)
        r2 = -2 * np.bincount(self.lind, s[self.ia] * u[self.ja], self.k)
        return self.deviance_of(R), ld + self.c * r2 / pwrss

    def hess_parts(self, theta: np.ndarray) -> dict[str, Any] | None:
        """Deviance pieces and the derivatives of ``log|..|`` and ``r^2`` (None off the
        positive definite region)."""
        f = self.factor(theta)
        if f is None:
            return None
        R, B, Ts = f
        q, p, k = self.q, self.p, self.k
        m = q + p
        ia, ja, lind = self.ia, self.ja, self.lind
        s, u, pwrss = self._residual_parts(R, B)
        Y, _ = dtrtrs(R[:m, :m], np.ascontiguousarray(B[:q, :m].T), lower=1)  # R^-1 F'
        Wp = self.ZtZ - Y.T @ Y  # Z'PZ
        Wld = Wp if self.reml else self.ZtZ - Y[:q].T @ Y[:q]  # ML: Z'V^-1Z
        G = self.right(Wld, Ts)
        S = self.left(G, Ts)
        Gp = G.take(ia, 0).take(ja, 1)
        Wa = Wld.take(ia, 0).take(ia, 1)
        T = (self._same - 2 * S.take(ja, 0).take(ja, 1)) * Wa - 2 * Gp * Gp.T
        H_ld = self._P.T @ T @ self._P
        g_ld = 2 * np.bincount(lind, G[ia, ja], k)
        Vk = np.bincount(self._vk, s[ia], q * k).reshape(q, k)  # dLambda_k' s
        Uk = np.bincount(self._uk, u[ja], q * k).reshape(q, k)  # dLambda_k u
        a = Uk + self.left(Vk, Ts, trans=False)
        g_r2 = -(s @ a)
        H_r2 = 2 * a.T @ Wp @ a - 2 * Vk.T @ Vk
        return {"R": R, "Y": Y, "Ts": Ts, "pwrss": pwrss, "g_ld": g_ld, "H_ld": H_ld,
                "g_r2": g_r2, "H_r2": H_r2, "deviance": self.deviance_of(R)}

    def hess(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Profiled deviance, gradient and Hessian in theta."""
        h = self.hess_parts(theta)
        if h is None:
            return math.inf, np.full(self.k, np.nan), np.full((self.k, self.k), np.nan)
        r2, g2, c = h["pwrss"], h["g_r2"], self.c
        g = h["g_ld"] + c * g2 / r2
        H = h["H_ld"] + c * (h["H_r2"] / r2 - np.outer(g2, g2) / r2 ** 2)
        return h["deviance"], g, (H + H.T) / 2


def satterthwaite_dense(prof: DenseProfile, theta: np.ndarray, sigma: float
                        ) -> tuple[list[np.ndarray], np.ndarray]:
    """lmerTest's ingredients at ``(theta, sigma)``: the Jacobian of ``Var(beta) = sigma^2
    (X'V^-1X)^-1`` in ``(theta, sigma)`` (a list of ``p x p``) and ``2 H^-1``, ``H`` the
    Hessian of the deviance with ``sigma`` not profiled (as ``satterthwaite_parts`` of
    :mod:`irmodels.models._lmm_inference`, exactly instead of by differences)."""
    h = prof.hess_parts(theta)
    if h is None:
        raise np.linalg.LinAlgError("the random-effects system is not positive definite")
    q, p, k = prof.q, prof.p, prof.k
    s2 = sigma * sigma
    H = np.empty((k + 1, k + 1))
    H[:k, :k] = h["H_ld"] + h["H_r2"] / s2
    H[:k, k] = H[k, :k] = -2 * h["g_r2"] / (s2 * sigma)
    H[k, k] = 6 * h["pwrss"] / (s2 * s2) - 2 * prof.c / s2
    A = 2 * np.linalg.pinv((H + H.T) / 2)
    R, Y = h["R"], h["Y"]
    if p:
        Cinv, _ = dpotri(R[q:q + p, q:q + p], lower=1)
        Cinv = np.tril(Cinv) + np.tril(Cinv, -1).T
    else:  # no fixed effects: nothing to differentiate (LAPACK refuses an empty matrix)
        Cinv = np.zeros((0, 0))
    K = prof.omega[:q, q:q + p] - Y[:q].T @ R[q:q + p, :q].T  # Z'V^-1X
    LK = prof.left(K, h["Ts"])
    J = []
    for j in range(k):
        sel = prof.lind == j
        N = K[prof.ia[sel]].T @ LK[prof.ja[sel]]
        J.append(s2 * Cinv @ (N + N.T) @ Cinv)
    J.append(2 * sigma * Cinv)
    return J, A
