"""F tests of random-slope fits (:class:`~irmodels.models._lmm.SlopeMixedResult`).

- ``anova(fit, type=3, ddf=...)``: lmerTest's ``anova(fit, type = 3, ddf = ...)``. The type III
  hypotheses are lmerTest's (:func:`irmodels.models._mixed_anova.type3_contrasts`, interactions
  of factors included); Satterthwaite's F and denominator df as lmerTest's ``contestMD``
  (Kuznetsova, Brockhoff & Christensen, J. Stat. Softw. 82(13), 2017), from the fit's Jacobian
  of ``Var(beta)`` and Hessian of the deviance in ``(theta, sigma)``; Kenward & Roger
  (Biometrics 53, 1997) as pbkrtest's ``vcovAdj`` and ``KRmodcomp`` (Halekoh & Hojsgaard,
  J. Stat. Softw. 59(9), 2014).
- Kenward-Roger for a general covariance: pbkrtest parametrises ``V`` linearly by the elements
  of each term's covariance matrix (``get_SigmaG``): for a term with effect columns
  ``Z_1 .. Z_q`` (each ``n x levels``), the element ``(i, j)`` has derivative
  ``G_ij = Z_i Z_j' + Z_j Z_i'`` (``Z_i Z_i'`` on the diagonal), and the residual variance has
  ``G = I``. Every product that vcovAdj needs is formed from ``M_ac = Z_a' V^-1 Z_c`` and
  ``Z_a' V^-1 X`` (``tr(Z_u Z_w' V^-1 Z_x Z_y' V^-1) = sum(M_wx * M_uy)``), so no ``n x n``
  matrix but ``V^-1`` is built. The adjustment is invariant to any linear reparametrisation of
  the covariance elements (the order and scale of the ``G``), and computed in units of the
  residual variance (``sigma = 1``: ``F`` and df do not depend on the unit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp

from irmodels._threads import kernel_threads
from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DesignError, ModelError
from irmodels.models._lmm_numdiff import hessian, jacobian
from irmodels.models._mixed_anova import (
    KR_MAX_OBS,
    MixedAnovaResult,
    ddf_from_nu,
    f_table,
    kenward_roger_f,
    kr_adjust,
    type3_contrasts,
)
from irmodels.models._mixed_design import coding_row

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._lmm import SlopeMixedResult

__all__ = ["anova", "contrast_df", "df_for", "kr_adjusted", "marginal_means_matrix",
           "satterthwaite_parts", "type3_hypotheses"]


def satterthwaite_parts(fit: SlopeMixedResult) -> tuple[list[np.ndarray], np.ndarray]:
    """(Jacobian of ``Var(beta)`` in ``(theta, sigma)``, ``2 H^-1`` with ``H`` the Hessian of
    the unprofiled deviance): lmerTest's ingredients, Richardson-extrapolated differences."""
    dev = fit._dev
    vp = np.concatenate([fit.theta, [fit.sigma]])
    A = 2 * np.linalg.pinv(hessian(dev.deviance_varpar, vp))
    return jacobian(dev.covbeta_varpar, vp), A


def df_for(fit: SlopeMixedResult, L: np.ndarray) -> np.ndarray:
    """Satterthwaite df of the contrasts in the rows of ``L`` (lmerTest's ``contest1D``)."""
    J, A = fit._satterthwaite
    V = fit.vcov.to_numpy()
    out = []
    for row in np.atleast_2d(L):
        g = np.array([row @ Jk @ row for Jk in J])
        out.append(2 * float(row @ V @ row) ** 2 / (g @ A @ g))
    return np.asarray(out)


def marginal_means_matrix(fit: SlopeMixedResult, factor: str) -> tuple[np.ndarray, list[str]]:
    """Rows mapping the fixed effects to the marginal means of ``factor`` (equal weights over
    the other fixed factors' levels, covariates at their means: emmeans' default)."""
    d = fit._design
    return means_matrix(fit.spec, list(fit.fixed_estimates.index), d.data, d.levels, factor)


def means_matrix(spec: Any, names: list[str], data: pd.DataFrame, levels: dict[str, Any],
                 factor: str) -> tuple[np.ndarray, list[str]]:
    """:func:`marginal_means_matrix` from a fit's parts (the slope and GLMM results share it):
    the fixed-effect ``names``, the ``data`` and factor ``levels`` of the design."""
    fixed_factors = [f for t in spec.fixed for f in t.factors]
    cov = tuple(spec.covariates)
    if factor not in fixed_factors or factor in cov:
        raise DesignError(
            f"{factor!r} is not a fixed factor of {spec}; marginal means exist for the "
            "fixed factors ("
            + (", ".join(f for f in dict.fromkeys(fixed_factors) if f not in cov) or "none")
            + ").")
    at = {f: float(np.mean(spec.values(data, f) if hasattr(spec, "values")
                           else np.asarray(data[f], dtype=float))) for f in cov}
    others = [f for f in dict.fromkeys(fixed_factors) if f != factor and f not in cov]
    rows = []
    for lv in range(len(levels[factor])):
        acc = np.zeros(len(names))
        count = 0
        for combo in np.ndindex(*[len(levels[f]) for f in others]) if others else [()]:
            acc += coding_row(spec, levels, {factor: lv, **dict(zip(others, combo))},
                               names, at)
            count += 1
        rows.append(acc / count)
    return np.array(rows), list(levels[factor])


def type3_hypotheses(fit: SlopeMixedResult) -> dict[str, np.ndarray]:
    """lmerTest's type III contrast rows of every fixed term of a slope fit."""
    d = fit._design
    cols: dict[str, list[int]] = {t.name: [] for t in fit.spec.fixed}
    for j, name in enumerate(d.fixed_terms_of_col):
        if name in cols:
            cols[name].append(j)
    return type3_contrasts(fit.spec, list(d.fixed_names), cols, d.X, d.codes, d.levels, d.data)


def satterthwaite_f(fit: SlopeMixedResult, L: np.ndarray) -> tuple[float, int, float]:
    """(F, numerator df, denominator df) of ``L beta = 0`` as lmerTest's ``contestMD``."""
    beta = fit.fixed_estimates.to_numpy()
    V = fit.vcov.to_numpy()
    J, A = fit._satterthwaite
    d, P = np.linalg.eigh(L @ V @ L.T)
    order = np.argsort(d)[::-1]
    d, P = d[order], P[:, order]
    q = int(np.sum(d > max(np.sqrt(np.finfo(float).eps) * d[0], 0.0)))
    PtL = (P.T @ L)[:q]
    F = float(np.sum((PtL @ beta) ** 2 / d[:q]) / q)
    g = np.array([[row @ Jk @ row for Jk in J] for row in PtL]) / d[:q, None]
    nu = 2.0 / np.einsum("ip,pq,iq->i", g, A, g)
    return F, q, ddf_from_nu(nu)


def kr_adjusted(fit: SlopeMixedResult) -> tuple[np.ndarray, np.ndarray, list[np.ndarray],
                                                 np.ndarray]:
    """(Phi, PhiA, P list, W) of pbkrtest's ``vcovAdj`` in units of the residual variance,
    for the covariance-element parametrisation (see the module notes)."""
    d = fit._design
    n = d.Z.shape[0]
    X = d.X
    # V / sigma^2 = Z Lambda Lambda' Z' + I
    ZL = (d.Z @ d.Lambda(fit.theta)).tocsc()
    V = np.asarray((ZL @ ZL.T).todense())
    V[np.diag_indices(n)] += 1.0
    cho = sla.cho_factor(V, lower=True, check_finite=False)
    del V
    Vi = sla.cho_solve(cho, np.eye(n), check_finite=False)
    # atoms: each effect column group of each term (n x levels, sparse), and the identity
    atoms: list[sp.csc_matrix | None] = []
    params: list[list[tuple[int, int]]] = []
    for b in d.blocks:
        first = len(atoms)
        rows = np.arange(n)
        for r in range(b.q):
            atoms.append(sp.csc_matrix((b.E[:, r], (rows, b.codes)), shape=(n, b.n_levels)))
        for j in range(b.q):  # lower triangle by column (lme4's and pbkrtest's order)
            for i in range(j, b.q):
                a, c = first + i, first + j
                params.append([(a, a)] if i == j else [(a, c), (c, a)])
    atoms.append(None)  # the residual: Z = I
    params.append([(len(atoms) - 1, len(atoms) - 1)])
    A = [Vi if Za is None else np.asarray(Za.T @ Vi) for Za in atoms]  # Z_a' V^-1
    AX = [a @ X for a in A]
    Phi = np.linalg.inv(X.T @ (Vi @ X))
    cache: dict[tuple[int, int], np.ndarray] = {}

    def M(a: int, c: int) -> np.ndarray:  # Z_a' V^-1 Z_c
        if (a, c) not in cache:
            if (c, a) in cache:
                cache[a, c] = cache[c, a].T
            else:
                Zc = atoms[c]
                cache[a, c] = A[a] if Zc is None else np.asarray((Zc.T @ A[a].T).T)
        return cache[a, c]

    m = len(params)
    PP = [-sum(AX[u].T @ AX[w] for u, w in params[r]) for r in range(m)]
    PP = [(P + P.T) / 2 for P in PP]  # pbkrtest's forceSymmetric
    Q: dict[tuple[int, int], np.ndarray] = {}
    IE2 = np.zeros((m, m))
    for r in range(m):
        PhiPr = Phi @ PP[r]
        for s in range(r, m):
            Qrs = np.zeros_like(Phi)
            ktr = 0.0
            for u, w in params[r]:
                for x, y in params[s]:
                    Qrs += AX[u].T @ M(w, x) @ AX[y]
                    ktr += float(np.sum(M(w, x) * M(u, y)))
            Q[r, s] = Qrs
            IE2[r, s] = IE2[s, r] = (ktr - 2.0 * float(np.sum(Phi * Qrs.T))
                                     + float(np.sum(PhiPr * (PP[s] @ Phi))))
    PhiA, W = kr_adjust(Phi, IE2, Q, PP)
    return Phi, PhiA, PP, W


def _check_ddf(ddf: str) -> str:
    key = str(ddf).lower().replace("_", "-")
    if key not in ("satterthwaite", "kenward-roger"):
        raise ArgumentError(f"ddf must be 'satterthwaite' or 'kenward-roger'; got {ddf!r}"
                            + did_you_mean(str(ddf), ("satterthwaite", "kenward-roger")))
    return key


def _check_kr(fit: SlopeMixedResult) -> None:
    if fit.method != "REML":
        raise ModelError("Kenward-Roger df are defined for REML fits (pbkrtest and lmerTest "
                         "refuse ML fits); refit with method='REML' or use "
                         "ddf='satterthwaite'.")
    if fit.n_obs > KR_MAX_OBS:
        raise ModelError(f"Kenward-Roger needs n x n matrices; {fit.n_obs} observations "
                         f"exceed the limit of {KR_MAX_OBS}. Use ddf='satterthwaite' (the "
                         "two agree closely on large designs).")


def contrast_df(fit: SlopeMixedResult, L: np.ndarray, ddf: str = "satterthwaite") -> np.ndarray:
    """df of each row of ``L`` (contrasts of the fixed effects): Satterthwaite, or
    Kenward-Roger as pbkrtest's ``Lb_ddf`` (the ``q = 1`` case of ``.KR_adjust``)."""
    if _check_ddf(ddf) == "satterthwaite":
        return df_for(fit, L)
    _check_kr(fit)
    with kernel_threads(fit.n_obs):  # its n x n products: BLAS threads by size
        Phi, PhiA, PP, W = kr_adjusted(fit)
    beta = fit.fixed_estimates.to_numpy() / fit.sigma
    return np.array([kenward_roger_f(row[None, :], beta, Phi, PhiA, PP, W)[2]
                     for row in np.atleast_2d(L)])


def anova(fit: SlopeMixedResult, type: int = 3, ddf: str = "satterthwaite") -> MixedAnovaResult:
    """Type III F tests of the fixed terms of a slope fit (see :meth:`SlopeMixedResult.anova`)."""
    if type != 3:
        raise ArgumentError(f"anova(type=...) supports type=3 (lmerTest's default); got "
                            f"{type!r}")
    key = _check_ddf(ddf)
    hyps = type3_hypotheses(fit)
    if not hyps:
        raise ModelError(f"the model {fit.spec} has no fixed terms to test (only an "
                         "intercept); add a fixed term such as system")
    if key == "satterthwaite":
        rows = [satterthwaite_f(fit, L) for L in hyps.values()]
    else:
        _check_kr(fit)
        with kernel_threads(fit.n_obs):  # its n x n products: BLAS threads by size
            Phi, PhiA, PP, W = kr_adjusted(fit)
        beta = fit.fixed_estimates.to_numpy() / fit.sigma
        rows = [kenward_roger_f(L, beta, Phi, PhiA, PP, W) for L in hyps.values()]
    return f_table(rows, list(hyps), key, fit.spec)
