"""The GLMM engine: generalised linear mixed models fitted as lme4's ``glmer``.

The design (``X``, ``Z``, ``Lambda(theta)``, the bounds of theta) is the LMM engine's
(:func:`irmodels.models._lmm.lmm_design`). With ``u`` the spherical random effects
(``b = Lambda u``) and ``eta = offset + X beta + Z Lambda u``:

- **PIRLS** (lme4's ``pwrssUpdate``): the conditional modes ``u`` at given ``(theta, beta)``
  (or ``(u, beta)`` jointly at given ``theta``, the first stage) by Fisher scoring on
  ``-2 log f(y | u) + |u|^2`` with step halving, factorising ``M = Lambda' Z' W Z Lambda + I``
  (dense Cholesky for a few hundred random effects, else a sparse LU in symmetric mode);
- **Laplace** (``nAGQ = 1``): ``-2 log f(y | u*) + |u*|^2 + log|M|`` (lme4's
  ``glmResp::Laplace``: the family's ``aic`` plus the penalty and the log-determinant), with
  ``W`` the expected information for binomial and Poisson (as lme4 for every link) or the
  observed one when the family says so (glmmTMB's beta family);
- **adaptive Gauss-Hermite quadrature** (``nAGQ > 1``, one scalar random-effects term): lme4's
  ``glmerAGQ`` on the deviance residuals with the nodes and weights of ``GHrule``;
- **optimisation** in two stages as ``glmer``: theta (beta from PIRLS, ``nAGQ = 0``), then
  ``(theta, beta)`` jointly; the covariance of beta is twice the inverse of the
  finite-difference Hessian of the stage-2 deviance (lme4's ``deriv12``, step 1e-4, used by
  ``vcov(use.hessian = TRUE)``, lme4's default when the Hessian is computed: fewer than 1e4
  observations, fewer than 20 parameters, not singular), else lme4's ``R_X`` form.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.linalg import splu
from scipy.stats import norm

from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models._chol import cho_solve_lower, cholesky_lower
from irmodels.models._family import Family
from irmodels.models._family import family as resolve_family
from irmodels.models._glmm_grad import (
    LaplaceGradient,
    ZPairs,
    agq_gradient,
    deriv12,
    free_params,
    gradient_available,
    newton_polish,
)
from irmodels.models._lmm import DENSE_MAX_Q, SINGULAR_TOL, LMMDesign, ReTerm, lmm_design

__all__ = ["GlmmDesign", "GlmmFit", "glmm_design", "fit_glmm", "gh_rule", "MAX_NAGQ",
           "boundary_components", "check_nagq", "deriv12", "GlmmDeviance"]

#: lme4's limit on the number of quadrature points
MAX_NAGQ = 100
#: glmer's calc.derivs rule (glmerControl's check.conv.nobsmax, check.conv.nparmax)
_DERIV_NOBS_MAX = 10_000
_DERIV_NPAR_MAX = 20
_PIRLS_MAXIT = 100
#: the most random effects for a dense factorisation of M from the pattern of Z'WZ
_DENSE_PATTERN_MAX_Q = 1000


def gh_rule(order: int) -> np.ndarray:
    """lme4's ``GHrule(order)``: columns ``z, w, ldnorm`` (nodes for the standard normal
    density, weights summing to 1, the log density at the nodes), symmetrised as lme4.

    >>> r = gh_rule(3)
    >>> [round(float(v), 6) for v in r[:, 0]], round(float(r[:, 1].sum()), 12)
    ([-1.732051, 0.0, 1.732051], 1.0)
    """
    z, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    z = (z - z[::-1]) / 2
    w = (w + w[::-1]) / 2
    return np.column_stack([z, w, norm.logpdf(z)])


# --------------------------------------------------------------------------------------------
# design


@dataclass
class GlmmDesign:
    """The LMM design with the GLMM's response, prior weights (trials) and offset."""

    lmm: LMMDesign
    family: Family
    y: np.ndarray  # the family's response (binomial: proportion of successes)
    weights: np.ndarray  # prior weights (binomial: trials)
    offset: np.ndarray
    nagq: int
    trials: Any = None  # the trials= argument (for refits)
    offset_name: str | None = None
    squeeze: bool = False  # the beta family's squeeze= (for refits)


def _column(data: pd.DataFrame, name: str, what: str) -> np.ndarray:
    if name not in data.columns:
        raise DataFormatError(
            f"{what}={name!r} names a column the data lack; columns present: "
            f"{', '.join(map(str, data.columns))}.")
    try:
        v = np.asarray(data[name], dtype=float)
    except (TypeError, ValueError):
        raise DataFormatError(f"the {what} column {name!r} must be numeric; got dtype "
                              f"{data[name].dtype}.") from None
    if not np.all(np.isfinite(v)):
        raise DataFormatError(
            f"the {what} column {name!r} has {int((~np.isfinite(v)).sum())} missing or infinite "
            "value(s); drop those rows first (missing='drop').")
    return v


def check_nagq(nagq: Any) -> int:
    if isinstance(nagq, (bool, np.bool_)) or not isinstance(nagq, (int, np.integer)) or not (
            0 <= nagq <= MAX_NAGQ):
        raise ArgumentError(
            f"nagq must be a whole number between 0 and {MAX_NAGQ} (1 = Laplace, lme4's "
            f"nAGQ); got {nagq!r}.")
    return int(nagq)


def glmm_design(model: str | ModelSpec, data: pd.DataFrame, *, family: str | Family,
                link: str | None = None, trials: Any = None, offset: str | None = None,
                nagq: int = 1, terms: tuple[ReTerm, ...] | None = None,
                squeeze: bool = False) -> GlmmDesign:
    """The GLMM's design; refuses a bad response, trials, offset or ``nagq`` (typed errors).
    ``squeeze`` (beta only) maps scores of exactly 0 or 1 into (0, 1) as Smithson & Verkuilen
    (``_family_beta.squeeze``) instead of refusing them."""
    fam = resolve_family(family, link)
    prepare = getattr(fam, "prepare_response", None)  # beta: refuse 0/1 scores, or squeeze
    if not isinstance(squeeze, (bool, np.bool_)):
        raise ArgumentError(f"squeeze must be True or False; got {squeeze!r}.")
    if squeeze and prepare is None:
        raise ArgumentError(f"squeeze=True applies to the beta family only (scores of exactly "
                            f"0 or 1); the {fam.name} family takes its response as it is; drop "
                            "squeeze=.")
    nagq = check_nagq(nagq)
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    # binomial and Poisson responses have no residual variance: glmer fits an observation-level
    # term (one level per row), the usual model of over-dispersion
    d = lmm_design(model, data, terms, effects_per_row=not fam.has_dispersion)
    raw = np.asarray(d.y, dtype=float)
    n = len(raw)
    if fam.takes_trials:
        if trials is None:
            w = np.ones(n)
        elif isinstance(trials, str):
            w = _column(data, trials, "trials")
        elif isinstance(trials, (int, np.integer, float, np.floating)) and not isinstance(
                trials, (bool, np.bool_)):
            if not (np.isfinite(trials) and trials >= 1 and float(trials).is_integer()):
                raise ArgumentError(f"trials must be a whole number >= 1 or a column name; got "
                                    f"{trials!r}.")
            w = np.full(n, float(trials))
        else:
            raise ArgumentError(f"trials must be a column name or a whole number >= 1; got "
                                f"{trials!r}.")
        if trials is None and np.any((raw != 0) & (raw != 1)):
            bad = int(np.flatnonzero((raw != 0) & (raw != 1))[0])
            raise DataFormatError(
                f"a binomial response without trials= must be 0 or 1; row {bad} has "
                f"{raw[bad]:g}; give trials= (a column or a number, e.g. trials=10 for P@10 "
                "as counts of relevant documents).")
        fam.check_response(np.where(w > 0, raw / np.where(w > 0, w, 1), raw), w)
        y = raw / w
    else:
        if trials is not None:
            raise ArgumentError(f"trials= applies to the binomial family only; the {fam.name} "
                                "family takes the response as it is; drop trials=.")
        w = np.ones(n)
        if prepare is not None:
            raw = prepare(raw, data if len(data) == n else None, squeeze=bool(squeeze))
        else:
            fam.check_response(raw, w)
        y = raw
    off = np.zeros(n) if offset is None else _column(data, _offset_name(offset), "offset")
    if nagq > 1:
        if len(d.blocks) != 1 or d.blocks[0].q != 1 or d.blocks[0].columns != ["(Intercept)"]:
            raise DesignError(
                f"nagq={nagq} (adaptive Gauss-Hermite quadrature) is only available for models "
                "with a single, scalar random-effects term such as (1|topic), as lme4's glmer; "
                f"this model has {_describe_terms(d)}. Use nagq=1 (Laplace).")
    if fam.has_dispersion and nagq != 1:
        raise DesignError(f"nagq={nagq} is not available for the {fam.name} family "
                          "(glmmTMB fits it by the Laplace approximation); use nagq=1.")
    max_q = getattr(fam, "max_random_effects", None)  # beta: glmmTMB's Laplace, dense in q
    if max_q is not None and d.Z.shape[1] > max_q:
        raise DesignError(
            f"the {fam.name} family is fitted as glmmTMB does (the Laplace approximation with the "
            f"observed information, dense in the random effects) up to {max_q} random effects; "
            f"this model has {d.Z.shape[1]}. Fit fewer levels (a subset of topics or systems), "
            "or model the scores with family='binomial' or a Gaussian mixed model.")
    return GlmmDesign(d, fam, y, w, off, nagq, trials, offset, bool(squeeze))


def _offset_name(offset: Any) -> str:
    if not isinstance(offset, str):
        raise ArgumentError(f"offset must be a column name (values on the link scale, e.g. a "
                            f"column of log(depth)); got {offset!r}.")
    return offset


def _describe_terms(d: LMMDesign) -> str:
    parts = [f"({' + '.join(b.columns)} | {b.group})" for b in d.blocks]
    return " + ".join(parts)


# --------------------------------------------------------------------------------------------
# PIRLS and the deviance


@dataclass
class _Mode:
    """PIRLS at one point: the modes and what the deviance and the covariances need."""

    theta: np.ndarray
    beta: np.ndarray
    phi: float | None
    u: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    ldL2: float
    diagL: np.ndarray  # diagonal of the Cholesky factor of M (AGQ)
    n_iter: int
    converged: bool


class _OneTerm:
    """``Z Lambda`` of one scalar random-effects term: row ``i`` has ``theta * z_i`` in
    column ``g_i`` (``M`` is then diagonal)."""

    def __init__(self, g: np.ndarray, z: np.ndarray, t: float, q: int) -> None:
        self.g, self.z, self.t, self.shape = g, z, t, (len(g), q)

    def __matmul__(self, u: np.ndarray) -> np.ndarray:
        return self.t * self.z * u[self.g]

    @property
    def T(self) -> _OneTermT:
        return _OneTermT(self)


class _OneTermT:
    def __init__(self, a: _OneTerm) -> None:
        self.a = a

    def __matmul__(self, V: np.ndarray) -> np.ndarray:
        a = self.a
        if V.ndim == 1:
            return a.t * np.bincount(a.g, weights=a.z * V, minlength=a.shape[1])
        return np.column_stack([a.t * np.bincount(a.g, weights=a.z * V[:, j],
                                                  minlength=a.shape[1])
                                for j in range(V.shape[1])]) if V.shape[1] else np.zeros(
            (a.shape[1], 0))


class _Factor:
    """``M = A' W A + I`` factorised (A = Z Lambda): ``solve`` and ``log|M|``."""

    def __init__(self, ZL: Any, W: np.ndarray, dense: bool, M: np.ndarray | None = None
                 ) -> None:
        q = ZL.shape[1]
        if M is not None:  # M formed by the caller (dense)
            self._dense(M)
            return
        if isinstance(ZL, _OneTerm):
            Md = ZL.t ** 2 * np.bincount(ZL.g, weights=W * ZL.z ** 2, minlength=q) + 1.0
            if not np.all(Md > 0):
                raise np.linalg.LinAlgError("M is not positive definite")
            self.diag = np.sqrt(Md)
            self.ldL2 = float(np.sum(np.log(Md)))
            self._solve = lambda B: B / (Md if B.ndim == 1 else Md[:, None])
            return
        if isinstance(ZL, np.ndarray):
            Md = ZL.T @ (ZL * W[:, None])
            Md[np.diag_indices(q)] += 1.0
            self._dense(Md)
            return
        M = (ZL.T @ ZL.multiply(W[:, None]).tocsc()).tocsc() + sp.identity(q, format="csc")
        if dense:
            Md = sp.csc_matrix(M).toarray()
            self._dense(Md)
        else:
            lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                      options={"SymmetricMode": True})
            dU = lu.U.diagonal()
            if not np.all(dU > 0):
                raise np.linalg.LinAlgError("M is not positive definite")
            self.ldL2 = float(np.sum(np.log(dU)))
            Md_diag = M.diagonal()
            self.diag = np.sqrt(Md_diag)  # exact when M is diagonal (the AGQ case)
            self._solve = lambda B: lu.solve(np.asfortranarray(B))

    def _dense(self, M: np.ndarray) -> None:
        """Factorise a dense ``M`` (Cholesky)."""
        L = cholesky_lower(M)
        self.diag = np.diag(L).copy()
        self.ldL2 = 2 * float(np.sum(np.log(self.diag)))
        self._solve = lambda B: cho_solve_lower(L, B)

    def solve(self, B: np.ndarray) -> np.ndarray:
        return self._solve(B)


class GlmmDeviance:
    """The Laplace / AGQ deviance of a GLMM design (lme4's ``mkGlmerDevfun``)."""

    def __init__(self, gd: GlmmDesign) -> None:
        self.gd = gd
        self.fam = gd.family
        d = gd.lmm
        self.X, self.Z = d.X, d.Z.tocsc()
        self.n, self.p = self.X.shape
        self.q = self.Z.shape[1]
        self.nt = d.n_theta
        self.dense = self.q <= DENSE_MAX_Q
        self.u_last = np.zeros(self.q)
        self.b_last: np.ndarray | None = None
        self.n_evals = 0
        self.n_pirls = 0
        self.extra = 1 if self.fam.has_dispersion else 0
        #: dense Z for a few hundred random effects (scipy.sparse's per-call overhead dominates)
        self.Zd = self.Z.toarray() if self.dense and self.n * self.q <= 4_000_000 else None
        #: Lambda is diagonal when every term is a scalar intercept: theta index per column
        self.lam_diag = (d.lind if all(b.q == 1 for b in d.blocks) else None)
        #: one scalar term: (column of each row, value of each row) of Z
        self.one: tuple[np.ndarray, np.ndarray] | None = None
        if len(d.blocks) == 1 and d.blocks[0].q == 1 and np.all(np.diff(self.Z.tocsr().indptr)
                                                                 == 1):
            Zr = self.Z.tocsr()
            self.one = (Zr.indices.astype(np.int64), Zr.data.astype(float))
        if gd.nagq > 1:
            self.group = d.blocks[0].codes
            self.ghq = gh_rule(gd.nagq)
        #: the pattern of Z'WZ: M = Lambda' Z'WZ Lambda + I from it when Lambda is diagonal
        #: (crossed intercepts: O(n) per factorisation instead of O(n q^2)); factorised dense
        #: beyond DENSE_MAX_Q too when M is dense enough (complete crossed designs: a dense
        #: topic-by-system block, where the sparse LU is 10-20x slower than dense Cholesky)
        self.pairs: ZPairs | None = None
        if self.one is None and self.lam_diag is not None and self.q <= _DENSE_PATTERN_MAX_Q:
            pz = ZPairs(self.Z)
            if pz.size <= 16 * self.n and (self.dense or len(pz.nz) >= 0.05 * self.q ** 2):
                self.pairs = pz
                self.dense = True
        #: -2 log f(y | mu) as the deviance residuals' sum minus twice the saturated
        #: log-likelihood for the families without a dispersion (binomial, Poisson): the
        #: log-likelihood's constants (log-gamma functions) once, not at every evaluation
        self.l_sat: float | None = None
        if not self.fam.has_dispersion:
            ls = float(np.sum(self.fam.loglik_obs(gd.y, gd.y, gd.weights)))
            self.l_sat = ls if np.isfinite(ls) else None
        #: the exact gradient of the Laplace deviance (None: finite differences)
        self.exact = LaplaceGradient(self) if gradient_available(self.fam, self.q) else None

    # -- pieces ---------------------------------------------------------------------------------
    def factor(self, ZL: Any, theta: np.ndarray, W: np.ndarray) -> _Factor:
        """``M = Lambda' Z' W Z Lambda + I`` factorised (``ZL = Z Lambda(theta)``)."""
        if self.pairs is not None:
            lam = np.asarray(theta, float)[self.lam_diag]
            M = self.pairs.ZtDZ(W) * np.outer(lam, lam)
            M[np.diag_indices(self.q)] += 1.0
            return _Factor(ZL, W, self.dense, M)
        return _Factor(ZL, W, self.dense)

    def ZL(self, theta: np.ndarray) -> Any:
        """``Z Lambda(theta)``: a dense array for a few hundred random effects, else sparse."""
        if self.one is not None:
            return _OneTerm(self.one[0], self.one[1], float(theta[0]), self.q)
        if self.Zd is not None:
            if self.lam_diag is not None:
                return self.Zd * np.asarray(theta, float)[self.lam_diag][None, :]
            return self.Zd @ self.gd.lmm.Lambda(theta).toarray()
        return (self.Z @ self.gd.lmm.Lambda(theta)).tocsc()

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float | None]:
        """(theta, beta, phi) of a stage-2 parameter vector ``[theta, beta, log phi]``."""
        theta = x[:self.nt]
        beta = x[self.nt:self.nt + self.p]
        phi = float(np.exp(x[-1])) if self.extra else None
        return theta, beta, phi

    def _m2ll(self, eta: np.ndarray, phi: float | None) -> float:
        mu = self.fam.link.linkinv(eta)
        if self.l_sat is not None:
            return float(np.sum(self.fam.deviance_resid(self.gd.y, mu, self.gd.weights))
                         ) - 2.0 * self.l_sat
        return -2.0 * float(np.sum(self.fam.loglik_obs(self.gd.y, mu, self.gd.weights, phi)))

    def _laplace_weights(self, eta: np.ndarray, phi: float | None) -> np.ndarray:
        if self.fam.laplace_weights == "observed":
            return -self.fam.deta_derivs(self.gd.y, eta, self.gd.weights, phi)[1]
        return self.fam.expected_weights(eta, self.gd.weights, phi)

    def pirls(self, theta: np.ndarray, beta: np.ndarray | None, phi: float | None = None,
              u0: np.ndarray | None = None, tol: float = 1e-11) -> _Mode:
        """Conditional modes at ``theta`` and ``beta`` (``beta=None``: u and beta jointly, the
        first stage). Fisher scoring with step halving on ``-2 log f(y|u) + |u|^2``."""
        fam, y, w, off, X = self.fam, self.gd.y, self.gd.weights, self.gd.offset, self.X
        ZL = self.ZL(theta)
        joint = beta is None
        u = (self.u_last if u0 is None else u0).copy()
        if joint and self.b_last is not None and u0 is None:
            b = self.b_last.copy()
        elif joint:
            mu0 = fam.start_mu(y, w)
            # lme4 starts from mustart: beta from one IRLS step of the fixed part
            eta_s = fam.link.linkfun(mu0)
            W0 = fam.expected_weights(eta_s, w, phi)
            z = eta_s - off + (y - mu0) / fam.link.mu_eta(eta_s)
            XtW = X.T * W0
            b = np.linalg.solve(XtW @ X, XtW @ z)
            u = np.zeros(self.q)
        else:
            b = np.asarray(beta, float)
        eta = off + X @ b + ZL @ u
        obj = self._m2ll(eta, phi) + u @ u
        converged = False
        it = 0
        for it in range(1, _PIRLS_MAXIT + 1):  # noqa: B007 (the count is read after the loop)
            d1, d2 = fam.deta_derivs(y, eta, w, phi)
            W = -d2  # Newton (the observed information) where it is positive, else Fisher
            if not np.all(W > 0):
                W = fam.expected_weights(eta, w, phi)
            F = self.factor(ZL, theta, W)
            gu = ZL.T @ d1 - u
            if joint:
                ZtWX = np.asarray(ZL.T @ (X * W[:, None]))
                MiZX = F.solve(ZtWX)
                S = X.T @ (X * W[:, None]) - ZtWX.T @ MiZX
                gb = X.T @ d1
                Migu = F.solve(gu)
                db = np.linalg.solve(S, gb - ZtWX.T @ Migu)
                du = Migu - MiZX @ db
            else:
                db = np.zeros(len(b))
                du = F.solve(gu)
            step = 1.0
            for _ in range(30):
                un, bn = u + step * du, b + step * db
                etan = off + X @ bn + ZL @ un
                objn = self._m2ll(etan, phi) + un @ un
                if np.isfinite(objn) and objn <= obj + 1e-12 * abs(obj):
                    break
                step /= 2
            else:
                break
            small = (np.max(np.abs(step * du), initial=0.0) <= tol * (1 + np.max(np.abs(u),
                                                                                   initial=0.0))
                     and np.max(np.abs(step * db), initial=0.0) <= tol * (
                         1 + np.max(np.abs(b), initial=0.0)))
            flat = step == 1.0 and abs(obj - objn) <= 1e-15 * max(1.0, abs(objn))
            u, b, eta, obj = un, bn, etan, objn
            if small or flat:
                converged = True
                break
        self.n_pirls += it
        if np.all(np.isfinite(u)) and np.all(np.isfinite(b)):
            self.u_last = u.copy()
            if joint:
                self.b_last = b.copy()
        Wl = self._laplace_weights(eta, phi)
        F = self.factor(ZL, theta, Wl)
        return _Mode(np.asarray(theta, float).copy(), b, phi, u, eta, fam.link.linkinv(eta),
                     F.ldL2, F.diag, it, converged)

    def laplace(self, m: _Mode) -> float:
        return self._m2ll(m.eta, m.phi) + float(m.u @ m.u) + m.ldL2

    def agq(self, m: _Mode) -> float:
        """lme4's ``glmerAGQ``: the deviance by adaptive Gauss-Hermite quadrature."""
        fam, y, w = self.fam, self.gd.y, self.gd.weights
        g, q = self.group, self.q
        zl = self.ZL(m.theta)
        sd = 1.0 / m.diagL
        dev0 = fam.deviance_resid(y, m.mu, w)
        devc0 = m.u ** 2 + np.bincount(g, weights=dev0, minlength=q)
        base = m.eta - zl @ m.u
        nodes = self.ghq[self.ghq[:, 0] != 0]
        z, wt, ld = nodes[:, 0], nodes[:, 1], nodes[:, 2]
        U = m.u[:, None] + sd[:, None] * z[None, :]  # (levels, nodes): all nodes at once
        scale = (zl.t * zl.z) if isinstance(zl, _OneTerm) else np.asarray(
            zl @ np.ones(q)).ravel()  # one scalar term: Z Lambda has one value per row
        mu = fam.link.linkinv(base[:, None] + scale[:, None] * U[g])
        dr = fam.deviance_resid(y[:, None], mu, w[:, None])
        devc = U ** 2 + np.stack([np.bincount(g, weights=dr[:, k], minlength=q)
                                  for k in range(dr.shape[1])], axis=1)
        mult = (np.exp(-0.5 * (devc - devc0[:, None]) - ld[None, :]) * wt[None, :]).sum(
            axis=1) / math.sqrt(2 * math.pi) + float(self.ghq[self.ghq[:, 0] == 0, 1].sum())
        return float(devc0.sum() + m.ldL2 - 2 * np.sum(np.log(mult)))

    def value(self, m: _Mode) -> float:
        return self.agq(m) if self.gd.nagq > 1 else self.laplace(m)

    # -- the two objectives -------------------------------------------------------------------
    def stage1(self, x: np.ndarray) -> float:
        """The deviance over theta (and log phi) with beta from PIRLS (lme4's ``nAGQ = 0``)."""
        self.n_evals += 1
        theta = x[:self.nt]
        phi = float(np.exp(x[-1])) if self.extra else None
        try:
            m = self.pirls(theta, None, phi)
            v = self.laplace(m)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return float("inf")
        return v if np.isfinite(v) else float("inf")

    def __call__(self, x: np.ndarray) -> float:
        """The stage-2 deviance over ``[theta, beta, (log phi)]``."""
        self.n_evals += 1
        theta, beta, phi = self.split(np.asarray(x, float))
        try:
            m = self.pirls(theta, beta, phi)
            v = self.value(m)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return float("inf")
        return v if np.isfinite(v) else float("inf")

    def stage1_vg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """:meth:`stage1` and its exact gradient in theta (``self.exact`` must be set)."""
        self.n_evals += 1
        try:
            m = self.pirls(x[:self.nt], None, None)
            v = self.laplace(m)
            g = self.exact.stage1(m)  # type: ignore[union-attr]
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return float("inf"), np.zeros(len(x))
        if not (np.isfinite(v) and np.all(np.isfinite(g))):
            return float("inf"), np.zeros(len(x))
        return v, g

    def vg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The stage-2 deviance (Laplace, or AGQ with one scalar term) and its exact gradient
        in ``(theta, beta)`` (``self.exact`` must be set)."""
        self.n_evals += 1
        theta, beta, phi = self.split(np.asarray(x, float))
        try:
            m = self.pirls(theta, beta, phi)
            if self.gd.nagq > 1:
                v, g = self.agq(m), agq_gradient(self, m)
            else:
                v = self.laplace(m)
                g = self.exact.stage2(m)  # type: ignore[union-attr]
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return float("inf"), np.zeros(len(x))
        if not (np.isfinite(v) and np.all(np.isfinite(g))):
            return float("inf"), np.zeros(len(x))
        return v, g

    def rx_vcov(self, m: _Mode) -> np.ndarray:
        """lme4's ``R_X`` covariance of beta: ``(X'WX - X'WZL M^-1 ZL'WX)^-1`` at the modes."""
        X = self.X
        W = self.fam.expected_weights(m.eta, self.gd.weights, m.phi)
        ZL = self.ZL(m.theta)
        F = self.factor(ZL, m.theta, W)
        ZtWX = np.asarray(ZL.T @ (X * W[:, None]))
        S = X.T @ (X * W[:, None]) - ZtWX.T @ F.solve(ZtWX)
        return np.linalg.inv(S)

    def cond_var_u(self, m: _Mode, cols: np.ndarray) -> np.ndarray:
        """Rows/columns ``cols`` of ``M^-1`` at the modes (lme4's conditional variances of u)."""
        W = self._laplace_weights(m.eta, m.phi)
        F = self.factor(self.ZL(m.theta), m.theta, W)
        E = np.zeros((self.q, len(cols)))
        E[cols, np.arange(len(cols))] = 1.0
        return F.solve(E)[cols]


# --------------------------------------------------------------------------------------------
# the fit


@dataclass
class GlmmFit:
    """What the engine returns to the result class."""

    design: GlmmDesign
    dev: GlmmDeviance
    x: np.ndarray  # stage-2 parameters [theta, beta, (log phi)]
    objective: float  # lme4's deviance criterion at the optimum (-2 logLik)
    mode: _Mode
    vcov: np.ndarray
    vcov_method: str  # "hessian" | "RX"
    n_iter: int
    converged: bool
    gradient_norm: float
    message: str
    boundary: bool
    boundary_components: tuple[str, ...]
    hessian: np.ndarray | None = field(default=None)
    #: the ConvergenceWarning of the fit ("" when converged): the result's note
    warning: str = ""


def _bounds(lower: np.ndarray) -> list[tuple[float | None, float | None]]:
    return [(0.0 if lo == 0 else None, None) for lo in lower]


def _grad(f: Any, x: np.ndarray, lower: np.ndarray, forward: bool = False) -> np.ndarray:
    """Finite-difference gradient (central; forward differences when ``forward``: half the
    cost, enough to bring L-BFGS-B near the optimum that the Newton polish then refines)."""
    g = np.empty_like(x)
    f0 = f(x) if forward else 0.0
    for i in range(len(x)):
        h = (1e-7 if forward else 1e-6) * max(1.0, abs(x[i]))
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        if forward:
            g[i] = (f(xp) - f0) / h
        elif xm[i] < lower[i]:
            g[i] = (f(xp) - f(x)) / h
        else:
            g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def _minimize(f: Any, x0: np.ndarray, lower: np.ndarray, maxiter: int,
              forward: bool = False, ftol: float = 1e-15, gtol: float = 1e-8,
              vg: Any = None) -> Any:
    """L-BFGS-B on ``f`` with finite-difference gradients, or on ``vg`` (value and exact
    gradient) when given."""
    if vg is not None:
        return minimize(vg, x0, jac=True, method="L-BFGS-B", bounds=_bounds(lower),
                        options={"maxiter": maxiter, "ftol": ftol, "gtol": gtol})
    return minimize(f, x0, jac=lambda t: _grad(f, t, lower, forward), method="L-BFGS-B",
                    bounds=_bounds(lower), options={"maxiter": maxiter, "ftol": ftol,
                                                     "gtol": gtol})


def boundary_components(gd: GlmmDesign, theta: np.ndarray) -> list[str]:
    """``group`` (or ``group: effect``) of each diagonal theta below lme4's singular
    tolerance (1e-4)."""
    return _boundary(gd, theta)


def _boundary(gd: GlmmDesign, theta: np.ndarray) -> list[str]:
    out = []
    for b in gd.lmm.blocks:
        k = b.theta_offset
        for j in range(b.q):
            if theta[k] < SINGULAR_TOL:
                out.append(f"{b.group}: {b.columns[j]}" if b.q > 1 else b.group)
            k += b.q - j
    return out


def fit_glmm(gd: GlmmDesign, *, maxiter: int = 1000, warn: bool = True,
             _stacklevel: int = 2) -> GlmmFit:
    """Fit a GLMM design in glmer's two stages (see the module notes). A fit that does not
    converge warns (:class:`~irmodels.ConvergenceWarning`, kept as ``GlmmFit.warning``)
    unless ``warn=False``."""
    own = getattr(gd.family, "fit_laplace", None)  # a family with its own Laplace fit (beta)
    if own is not None and gd.nagq == 1:
        fit = own(gd, maxiter=maxiter, warn=warn, _stacklevel=_stacklevel + 1)
        if fit is not None:
            return fit
    dev = GlmmDeviance(gd)
    lower_t = gd.lmm.lower
    nt, p, extra = dev.nt, dev.p, dev.extra
    # stage 1: theta (and log phi), beta by PIRLS
    x1 = np.where(lower_t == 0, 1.0, 0.0)
    low1 = lower_t
    if extra:
        m0 = dev.pirls(x1, None, 1.0)
        x1 = np.append(x1, math.log(gd.family.phi_start(gd.y, m0.mu, gd.weights)))
        low1 = np.append(lower_t, -np.inf)
    # exact gradients (binomial, Poisson): stage 1 always, stage 2 for the Laplace deviance
    # and for the AGQ deviance of one scalar term
    vg1 = dev.stage1_vg if dev.exact is not None and not extra else None
    vg2 = dev.vg if vg1 is not None and (gd.nagq == 1 or dev.one is not None) else None
    # stage 1 only gives stage 2 its start (as glmer's nAGQ = 0 step): a loose criterion
    r1 = _minimize(dev.stage1, x1, low1, maxiter, forward=True, ftol=1e-10, gtol=1e-5,
                   vg=vg1) if gd.nagq > 0 else _minimize(dev.stage1, x1, low1, maxiter, vg=vg1)
    n_iter = int(r1.nit)
    res_ok, msg = bool(r1.success), str(r1.message)
    phi1 = float(np.exp(r1.x[-1])) if extra else None
    m1 = dev.pirls(r1.x[:nt], None, phi1)
    x = np.concatenate([r1.x[:nt], m1.beta] + ([r1.x[-1:]] if extra else []))
    low2 = np.concatenate([lower_t, np.full(p + extra, -np.inf)])
    g = H = None
    gnorm_lb = float("nan")
    if gd.nagq == 0:
        fx = dev.stage1(r1.x)
    else:
        # L-BFGS-B near the optimum; the Newton steps on lme4's Hessian then finish it
        # (with the exact gradient L-BFGS-B reaches the optimum to ~1e-8 in a few more steps)
        if vg2 is not None:
            # a diagonal theta that stage 1 left on its bound (the deviance is flat in it
            # there): stage 2 starts it at 0.05 when the deviance is lower or falling there
            # (one evaluation when the boundary is genuine; the restart below remains)
            f0 = None
            for i in np.flatnonzero((lower_t == 0) & (x[:nt] <= SINGULAR_TOL)):
                f0 = vg2(x)[0] if f0 is None else f0
                xs = x.copy()
                xs[i] = 0.05
                fs, gs = vg2(xs)
                if fs < f0 or gs[i] < 0:
                    x, f0 = xs, fs
        r2 = _minimize(dev, x, low2, maxiter, forward=True, ftol=1e-12 if vg2 is None else 1e-15,
                       gtol=1e-6 if vg2 is None else 1e-8, vg=vg2)
        n_iter += int(r2.nit)
        x, fx, r_end = r2.x.copy(), float(r2.fun), r2
        res_ok, msg = bool(r2.success), str(r2.message)
        # a diagonal theta stopped on its bound: restart it off the bound (flat deviance there)
        for i in np.flatnonzero((lower_t == 0) & (x[:nt] <= SINGULAR_TOL)):
            xs = x.copy()
            xs[i] = 0.5
            r3 = _minimize(dev, xs, low2, maxiter, vg=vg2)
            n_iter += int(r3.nit)
            if float(r3.fun) < fx - 1e-10 * abs(fx):
                x, fx, res_ok, msg = r3.x.copy(), float(r3.fun), bool(r3.success), str(
                    r3.message)
                r_end = r3
            elif int(r3.status) == 1:  # the restart hit the iteration limit: undecided
                res_ok, msg = False, str(r3.message)
        if vg2 is not None and not res_ok and "ABNORMAL" in msg:
            res_ok = True  # the line search stalled at rounding level: the gradient decides
        if vg2 is not None and not (dev.n < _DERIV_NOBS_MAX and nt + p < _DERIV_NPAR_MAX):
            # glmer computes no Hessian here (vcov from R_X): no Newton polish (2k gradients);
            # the scaled gradient from L-BFGS-B's inverse-Hessian approximation
            fx, g = vg2(x)
            free = free_params(x, low2, nt)
            gnorm_lb = float(np.max(np.abs(r_end.hess_inv.matvec(g)[free]), initial=0.0))
        else:
            x, fx, g, H = newton_polish(dev, x, fx, low2, vg2)
    if not np.isfinite(fx):
        raise ConvergenceError("the GLMM deviance is not finite at the optimiser's end point; "
                               "check the data for separation (a level with all successes or "
                               "all failures) or near-collinear columns.")
    theta = x[:nt]
    bnd = _boundary(gd, theta)
    if gd.nagq == 0:
        mode = dev.pirls(theta, None, phi1)
        x = np.concatenate([theta, mode.beta] + ([r1.x[-1:]] if extra else []))
        objective = dev.laplace(mode)
    else:
        mode = dev.pirls(*dev.split(x))
        objective = dev.value(mode)
    # covariance of beta: lme4's vcov (the Hessian when glmer computes it, else R_X)
    V, vcov_method = dev.rx_vcov(mode), "RX"
    npar = nt + p + extra
    use_h = (gd.nagq > 0 and not bnd and dev.n < _DERIV_NOBS_MAX and npar < _DERIV_NPAR_MAX)
    gnorm = gnorm_lb
    if H is not None:
        assert g is not None  # newton_polish returns the gradient with the Hessian
        free = free_params(x, low2, nt)
        try:
            gnorm = float(np.max(np.abs(np.linalg.solve(H[np.ix_(free, free)], g[free])),
                                 initial=0.0))
        except np.linalg.LinAlgError:
            pass
        if use_h:
            try:
                Hi = np.linalg.inv(H)
                Vh = Hi[nt:nt + p, nt:nt + p]
                Vh = Vh + Vh.T
                if np.all(np.isfinite(Vh)) and np.linalg.eigvalsh(Vh).min() > 0:
                    V, vcov_method = Vh, "hessian"
            except np.linalg.LinAlgError:
                pass
    converged = res_ok and (not np.isfinite(gnorm) or gnorm < 2e-3)
    note = "" if converged else (
        f"the GLMM optimiser did not converge cleanly ({msg}; scaled gradient "
        f"{gnorm:.2g}); check the estimates, rescale covariates or simplify the random "
        "part.")
    if note and warn:
        warnings.warn(note, ConvergenceWarning, stacklevel=_stacklevel)
    return GlmmFit(gd, dev, x, objective, mode, V, vcov_method, n_iter, converged, gnorm,
                   msg, bool(bnd), tuple(bnd), H, warning=note)
