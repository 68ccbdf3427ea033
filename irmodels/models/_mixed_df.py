"""Denominator degrees of freedom of a mixed fit: the parts of Satterthwaite's approximation
(the Jacobian of the fixed effects' covariance in the variance parameters and their asymptotic
covariance, lmerTest's method) used by :class:`~irmodels.models.mixed.MixedResult` for its
Satterthwaite and Kenward-Roger df. References: docs/methods.md: "Linear mixed-effects models";
Kuznetsova, Brockhoff & Christensen, "lmerTest Package", J. Stat. Softw. 82(13), 2017.
"""

from __future__ import annotations

import numpy as np

from irmodels.models import _reml

__all__: list[str] = []

# --------------------------------------------------------------------------------------------
# Satterthwaite


def _vb(pb: _reml.Problem, theta: np.ndarray, sigma: float, eta: np.ndarray | None,
        reml: bool) -> np.ndarray:
    f = _reml.evaluate(pb, theta, eta, reml)
    return sigma**2 * _reml.fixed_cov_unscaled(pb, f)


def _unprof_grad(pb: _reml.Problem, theta: np.ndarray, sigma: float, eta: np.ndarray | None,
                 reml: bool) -> tuple[np.ndarray, np.ndarray]:
    """Analytic gradient of -2 log L in (theta, sigma, eta), sigma not profiled, and the
    covariance of the fixed effects at the same point (one factorisation for both)."""
    f = _reml.evaluate(pb, theta, eta, reml)
    dof = (pb.n - pb.p) if reml else pb.n
    g_logdet, g_r2 = _split_gradient(pb, f, reml)
    g_theta = g_logdet[: pb.K] + g_r2[: pb.K] / sigma**2
    g_sigma = 2.0 * dof / sigma - 2.0 * f.r2 / sigma**3
    out: list[np.ndarray] = [g_theta, np.array([g_sigma])]
    if pb.n_strata > 1:
        out.append(g_logdet[pb.K:] + g_r2[pb.K:] / sigma**2 + 2.0 * pb.n_per_stratum[1:])
    return np.concatenate(out), sigma**2 * _reml.fixed_cov_unscaled(pb, f)


def _split_gradient(pb: _reml.Problem, f: _reml.Fit, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    return _reml.gradient_parts(pb, f, reml)


def satterthwaite_parts(pb: _reml.Problem, theta: np.ndarray, eta: np.ndarray | None,
                        sigma: float, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    K = pb.K
    x0 = np.concatenate([theta, [sigma], eta if eta is not None else []])
    npar = x0.size

    def unpack(x: np.ndarray) -> tuple[np.ndarray, float, np.ndarray | None]:
        return x[:K], float(x[K]), (x[K + 1:] if eta is not None else None)

    steps = 1e-4 * np.maximum(np.abs(x0), 1e-2)
    steps[K] = 1e-4 * abs(sigma)  # sigma has the response's scale; theta and eta have none
    H = np.zeros((npar, npar))
    jac = np.zeros((npar, pb.p, pb.p))
    for j in range(npar):
        e = np.zeros(npar)
        e[j] = steps[j]
        gp, vp = _unprof_grad(pb, *unpack(x0 + e), reml)
        gm, vm = _unprof_grad(pb, *unpack(x0 - e), reml)
        H[:, j] = (gp - gm) / (2 * steps[j])
        if j == K:
            th, sg, et = unpack(x0)
            jac[j] = 2.0 / sg * _vb(pb, th, sg, et, reml)
        else:
            jac[j] = (vp - vm) / (2 * steps[j])
    H = (H + H.T) / 2
    # normalise (see MixedResult._satterthwaite): Var(beta) / sigma^2, and s = sigma / sigma_hat
    # in place of sigma (dVar/ds = sigma dVar/dsigma; the Hessian in s is sigma^2 times it)
    jac = jac / sigma**2
    jac[K] *= sigma
    H[K, :] *= sigma
    H[:, K] *= sigma
    try:
        acov = 2.0 * np.linalg.inv(H)
    except np.linalg.LinAlgError:
        acov = np.full((npar, npar), np.nan)
    return jac, acov


