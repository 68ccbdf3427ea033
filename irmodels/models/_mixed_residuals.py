"""Residuals of linear mixed fits, shared by :class:`~irmodels.models.mixed.MixedResult` (random
intercepts, optionally one residual variance per stratum) and
:class:`~irmodels.models._lmm.SlopeMixedResult` (random slopes).

Both fits are the model ``y = X beta + Z b + e`` with ``b = Lambda u``, ``u ~ N(0, sigma^2 I)``
and ``e ~ N(0, sigma^2 W^-1)``, ``W`` the diagonal of observation weights (all 1 with one
residual variance; ``1 / ratio_s^2`` for the rows of stratum ``s`` under nlme's ``varIdent``).
The residual types (:data:`RESIDUAL_TYPES`):

- ``"response"`` (= ``"conditional"``): ``e = y - X beta - Z b``, lme4's ``residuals(fit)``,
  nlme's ``residuals(fit, level = 1)``;
- ``"marginal"``: ``y - X beta`` (the random effects left in), nlme's ``level = 0``, lme4's
  ``y - predict(fit, re.form = NA)``;
- ``"pearson"``: ``e / (sigma ratio_s)``, the conditional residual over the residual SD of its
  row: nlme's ``residuals(fit, type = "pearson")`` and lme4's
  ``residuals(fit, type = "pearson", scaled = TRUE)`` (lme4's ``type = "pearson"`` without
  ``scaled`` is, for a linear mixed model, the response residual itself);
- ``"standardized"``: ``e / sd(e)``, the conditional residual over its own estimated standard
  deviation ``sigma ratio_s sqrt(1 - h_ii)``, with ``h_ii`` the leverage of row ``i`` (the
  diagonal of the hat matrix of the conditional fitted values, lme4's ``hatvalues``). For one
  residual variance this is lme4's ``rstudent(fit)`` (which divides by the full-data sigma,
  not a leave-one-out one). Why ``sd(e)`` has this form: ``e = R P y`` with ``R = sigma^2
  W^-1`` and ``P = V^-1 - V^-1 X (X'V^-1 X)^-1 X'V^-1``, so ``Var(e) = R P R = sigma^2 W^-1
  (I - H*)``, ``H*`` the hat matrix of the whitened model ``W^1/2 y`` (Nobre & Singer,
  "Residual analysis for linear mixed models", Biometrical J. 49(6), 2007, section 3).
  Rows with ``h_ii = 1`` (fitted exactly) get NaN, as lme4.

The leverages come from the penalised least squares of the whitened model (Bates et al.,
"Fitting Linear Mixed-Effects Models Using lme4", J. Stat. Softw. 67(1), 2015, section 3.2):
``h_i = a_i' M^-1 a_i + |R_X'^-1 (x_i - X'Z Lambda M^-1 a_i)|^2`` with ``a_i = Lambda' z_i``
and ``M = Lambda' Z'W Z Lambda + I``, solved for blocks of rows (no ``n x n`` matrix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from scipy.sparse.linalg import splu

from irmodels._validate import check_choice
from irmodels.models import _reml

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._lmm import SlopeMixedResult
    from irmodels.models.mixed import MixedResult

__all__ = ["RESIDUAL_TYPES", "ResidualType", "hat_values", "mixed_residuals"]

ResidualType = Literal["response", "conditional", "pearson", "marginal", "standardized"]
#: The residual types of :meth:`MixedResult.residuals` and :meth:`SlopeMixedResult.residuals`.
RESIDUAL_TYPES: tuple[str, ...] = ("response", "conditional", "pearson", "marginal",
                                   "standardized")

#: Random effects up to which ``M`` is factorised densely (as the slope engine does).
_DENSE_MAX_Q = 300
#: Rows whose leverages are solved together.
_CHUNK = 256


@dataclass(frozen=True)
class _Parts:
    """The pieces of a fitted LMM the residuals need (data order)."""

    y: np.ndarray
    X: np.ndarray  # (n, p) dense
    beta: np.ndarray
    Z: sp.csr_matrix  # (n, q)
    Lam: sp.csc_matrix  # (q, q): b = Lam u
    u: np.ndarray
    w: np.ndarray  # observation weights (1 / residual variance ratio)
    sigma: float


def _parts(fit: MixedResult | SlopeMixedResult) -> _Parts:
    if hasattr(fit, "_design"):  # a SlopeMixedResult (the general engine)
        # (not isinstance: importing _lmm here would close an import cycle)
        slope = cast("SlopeMixedResult", fit)
        d = slope._design
        return _Parts(y=np.asarray(d.y, float), X=np.asarray(d.X, float),
                      beta=slope.fixed_estimates.to_numpy(float), Z=sp.csr_matrix(d.Z),
                      Lam=d.Lambda(slope.theta), u=np.asarray(slope._pls.u, float),
                      w=np.ones(len(d.y)), sigma=float(slope.sigma))

    st = fit._state  # a MixedResult (the random-intercept solver)
    pb = st.problem
    f = _reml.evaluate(pb, st.theta, st.eta, fit.method == "REML")
    n, m = pb.cols.shape
    ZX = sp.csr_matrix((np.asarray(pb.vals, float).ravel(),
                        (np.repeat(np.arange(n), m), np.asarray(pb.cols).ravel())),
                       shape=(n, pb.Q))
    ZX.sum_duplicates()
    lam = np.repeat(np.asarray(st.theta, float), pb.term_sizes)
    return _Parts(y=np.asarray(pb.y, float), X=ZX[:, pb.q:].toarray(),
                  beta=np.asarray(f.beta, float), Z=ZX[:, :pb.q].tocsr(),
                  Lam=sp.diags(lam, format="csc"), u=np.asarray(f.u, float),
                  w=np.asarray(f.w, float) * np.ones(n), sigma=float(st.sigma))


def check_type(type: object) -> str:
    """``type`` if it is a residual type, else an :class:`~irmodels.errors.ArgumentError`."""
    return cast(str, check_choice(type, "type", RESIDUAL_TYPES))  # one of RESIDUAL_TYPES


def hat_values(fit: MixedResult | SlopeMixedResult) -> np.ndarray:
    """Leverages ``h_ii`` of the conditional fitted values of the (whitened) model, per data
    row: lme4's ``hatvalues(fit)``. They sum to the effective number of parameters."""
    return _hat(_parts(fit))


def _hat(pt: _Parts) -> np.ndarray:
    sw = np.sqrt(pt.w)
    ZL = sp.csr_matrix(sp.diags(sw) @ pt.Z @ pt.Lam)  # whitened Z Lambda, (n, q)
    Xs = pt.X * sw[:, None]
    n, q = ZL.shape
    p = Xs.shape[1]
    ZtX = np.asarray(ZL.T @ Xs)  # (q, p)
    if q <= _DENSE_MAX_Q:
        M = (ZL.T @ ZL).toarray()
        M[np.diag_indices_from(M)] += 1.0
        cf = cho_factor(M, lower=True, check_finite=False)

        def solve(B: np.ndarray) -> np.ndarray:
            return cho_solve(cf, B, check_finite=False)
    else:
        M = (ZL.T @ ZL + sp.identity(q, format="csc")).tocsc()
        lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})

        def solve(B: np.ndarray) -> np.ndarray:
            return lu.solve(np.asfortranarray(B))
    S = Xs.T @ Xs - ZtX.T @ solve(ZtX) if p else np.zeros((0, 0))
    RX = cholesky(S, lower=False, check_finite=False) if p else S
    h = np.empty(n)
    ZLt = ZL.T.tocsc()
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        A = ZLt[:, start:stop].toarray()  # (q, c): a_i = Lambda' z_i
        B = solve(A)
        hz = np.einsum("ij,ij->j", A, B)
        if p:
            C = Xs[start:stop].T - ZtX.T @ B
            D = solve_triangular(RX.T, C, lower=True, check_finite=False)
            hz = hz + np.einsum("ij,ij->j", D, D)
        h[start:stop] = hz
    return h


def mixed_residuals(fit: MixedResult | SlopeMixedResult, type: str) -> np.ndarray:
    """Residuals of ``type`` (see the module notes), one per data row: what
    ``fit.residuals(type)`` returns on a ``MixedResult`` or a ``SlopeMixedResult``.

    Examples
    --------
    >>> import irmodels as irm
    >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
    >>> r = fit.residuals("pearson")
    >>> bool(abs(r.std() - 1) < 0.05), len(r) == fit.n_obs
    (True, True)
    >>> h = hat_values(fit)
    >>> s = fit.residuals("standardized")
    >>> bool(abs(s - r / (1 - h) ** 0.5).max() < 1e-12)
    True
    """
    type = check_type(type)
    pt = _parts(fit)
    fixed = pt.X @ pt.beta
    if type == "marginal":
        return pt.y - fixed
    e = pt.y - fixed - pt.Z @ (pt.Lam @ pt.u)
    if type in ("response", "conditional"):
        return e
    scaled = e * np.sqrt(pt.w) / pt.sigma
    if type == "pearson":
        return scaled
    one_minus_h = 1.0 - _hat(pt)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = scaled / np.sqrt(one_minus_h)
    out[~np.isfinite(out) | (one_minus_h <= 64 * np.finfo(float).eps)] = math.nan
    return out

