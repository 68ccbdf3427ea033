"""The general linear mixed model engine: random intercepts *and slopes*, as lme4 fits them.

``irm.mixed`` routes a model with any slope term (``(1 + Days | Subject)``, ``(0 + shard |
topic)``, ``(Days || Subject)``) here; intercept-only models keep the specialised crossed
solver of :mod:`irmodels.models._reml`.

The model is lme4's (Bates, Maechler, Bolker & Walker, "Fitting Linear Mixed-Effects Models
Using lme4", J. Stat. Softw. 67(1), 2015, section 3):

``y = X beta + Z b + e``, ``b = Lambda(theta) u``, ``u ~ N(0, sigma^2 I)``, ``e ~ N(0, sigma^2 I)``.

- ``Z`` (scipy.sparse) is built term by term: for a term with grouping factor ``g`` (levels
  ``l_k``) and effect columns ``E`` (``n x q_k``: the intercept, numeric covariates, factor
  indicator or treatment-contrast columns), the term's block holds ``E[i, r]`` in column
  ``offset + level(i) * q_k + r`` (level-major, as lme4).
- ``Lambda(theta)`` is block diagonal with each term's lower-triangular ``q_k x q_k`` template
  ``T_k`` repeated per level; ``theta`` is the lower triangle of each ``T_k`` by column (lme4's
  order within a term), diagonal elements bounded below by 0. A ``||`` term is separate terms.
- The profiled deviance comes from the penalized least squares: ``L L' = Lambda' Z'Z Lambda + I``,
  ``R_ZX = L^-1 Lambda' Z'X``, ``R_X' R_X = X'X - R_ZX' R_ZX``, the solves for ``beta`` and ``u``,
  and ``-2 l(theta) = log|L|^2 + n (1 + log(2 pi r^2 / n))`` (ML, eq. 34) or
  ``log|L|^2 + log|R_X|^2 + (n - p)(1 + log(2 pi r^2 / (n - p)))`` (REML, eq. 41), with
  ``r^2`` the penalised residual sum of squares.
- ``theta`` minimises the profiled deviance (:mod:`irmodels.models._lmm_optim`; lme4 uses
  bobyqa): up to ``DENSE_MAX_Q`` random effects by trust-region Newton on its exact gradient
  and Hessian (:mod:`irmodels.models._lmm_grad`), above by L-BFGS-B on central differences
  and Newton polish steps; restarted off any bound it stopped on. A fit is singular (lme4's
  ``isSingular``) when a diagonal element of ``theta`` is below 1e-4: reported as a boundary
  note, not an error.
- Satterthwaite df (Kuznetsova, Brockhoff & Christensen, "lmerTest Package", J. Stat. Softw.
  82(13), 2017): the variance parameters are ``(theta, sigma)``; their asymptotic covariance is
  ``2 H^-1`` with ``H`` the Hessian of the (unprofiled) deviance, the gradient of
  ``Var(L beta)`` is the Jacobian of ``sigma^2 (R_X' R_X)^-1``; both exact up to
  ``DENSE_MAX_Q``, above by Richardson-extrapolated central differences as lmerTest's.

Up to ``DENSE_MAX_Q`` (300) random effects the ``q x q`` matrix is factorised densely; above,
by a sparse LU in symmetric mode (SuperLU, minimum-degree ordering), which keeps a model such as
``(1 + x | topic) + (1 | topic:system)`` on 50 x 50 topics and systems (q = 2,600) at about the
cost of lme4.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.special import stdtr

from irmodels._threads import kernel_threads
from irmodels.errors import (
    BoundaryFitWarning,
    DataFormatError,
    DesignError,
    FormulaError,
    ModelError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._lmm_grad import DenseProfile
from irmodels.models._lmm_optim import SINGULAR_TOL
from irmodels.models._lmm_optim import optimize as _optimize
from irmodels.models._mixed_design import (
    check_response_varies,
    encode_levels,
    fixed_design,
    group_codes,
    resolve_spec,
)
from irmodels.models._mixed_plots import MixedResidualPlots
from irmodels.models.base import FittedModel, LinearMixedCounts, OptSummary

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._mixed_residuals import ResidualType

__all__ = ["LMMDesign", "ReTerm", "SlopeMixedResult", "SINGULAR_TOL", "fit_lmm", "lmm_design",
           "is_slope_spec"]

#: Largest number of random effects for which the deviance uses dense products.
DENSE_MAX_Q = 300



# --------------------------------------------------------------------------------------------
# design


@dataclass(frozen=True)
class ReTerm:
    """One random-effects term: grouping ``factors``, an ``intercept`` flag and ``effects``
    (the slope columns left of the bar). ``irmodels.formula.spec.RandomTerm`` has the same
    fields; this class lets the engine be driven without the formula grammar."""

    factors: tuple[str, ...]
    intercept: bool = True
    effects: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return ":".join(self.factors)


def _term_fields(rt: Any) -> ReTerm:
    return ReTerm(tuple(rt.factors), bool(getattr(rt, "intercept", True)),
                  tuple(getattr(rt, "effects", ())))


def is_slope_spec(spec: ModelSpec) -> bool:
    """Whether any random term of ``spec`` has slopes or no intercept (the general engine)."""
    return any(_term_fields(rt) != ReTerm(tuple(rt.factors)) for rt in spec.random)


@dataclass
class _Block:
    term: ReTerm
    group: str  # the grouping factor's name (``topic:system``)
    columns: list[str]  # effect column names
    codes: np.ndarray  # level of each row
    labels: list[str]  # level labels
    E: np.ndarray  # (n, q) effect values
    offset: int  # first column in Z
    theta_offset: int

    @property
    def q(self) -> int:
        return len(self.columns)

    @property
    def n_levels(self) -> int:
        return len(self.labels)

    @property
    def n_theta(self) -> int:
        return self.q * (self.q + 1) // 2


@dataclass
class LMMDesign:
    """The model's data as the engine needs it (lme4's ``lFormula``)."""

    spec: ModelSpec
    terms: tuple[ReTerm, ...]
    y: np.ndarray
    X: np.ndarray
    fixed_names: list[str]
    fixed_terms_of_col: list[str]
    Z: sp.csc_matrix
    blocks: list[_Block]
    data: pd.DataFrame
    codes: dict[str, np.ndarray]
    levels: dict[str, list[str]]
    effect_kind: dict[str, str]  # effect column -> "numeric" | "factor"
    #: Lambda's sparsity pattern: Lambda.data = theta[lind] (csc data order)
    lam_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lam_indptr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lower: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n_theta(self) -> int:
        return len(self.lower)

    def Lambda(self, theta: np.ndarray) -> sp.csc_matrix:
        q = self.Z.shape[1]
        return sp.csc_matrix((np.asarray(theta, float)[self.lind], self.lam_indices,
                              self.lam_indptr), shape=(q, q))


def _is_expression(spec: ModelSpec, name: str) -> bool:
    expr = getattr(spec, "expression", None)
    return expr is not None and expr(name) is not None


def _numeric_effect(name: str, spec: ModelSpec, data: pd.DataFrame) -> bool:
    if _is_expression(spec, name):
        return True
    if name in spec.categorical or name in _design.ID_FACTORS:
        return False
    return bool(_design._is_numeric(data[name]))


def _effect_columns(spec: ModelSpec, term: ReTerm, kinds: dict[str, str], data: pd.DataFrame,
                    codes: dict[str, np.ndarray], levels: dict[str, list[str]]
                    ) -> tuple[list[str], np.ndarray]:
    """The term's columns as R's ``model.matrix`` of its left-hand side: the intercept, then
    each effect (a numeric covariate's values; a factor's treatment contrasts, or all its
    indicators when it is the first factor of a term without intercept)."""
    n = len(data)
    names: list[str] = []
    cols: list[np.ndarray] = []
    if term.intercept:
        names.append("(Intercept)")
        cols.append(np.ones(n))
    full = not term.intercept
    for e in term.effects:
        if kinds[e] == "numeric":
            names.append(e)
            x = (spec.values(data, e) if _is_expression(spec, e)
                 else _design.covariate_values(data, e))
            if not np.all(np.isfinite(x)):
                raise DataFormatError(f"the random slope {e!r} has missing or infinite values; "
                                      "drop those rows first")
            cols.append(np.asarray(x, dtype=float))
            continue
        lv = levels[e]
        start = 0 if full else 1
        full = False
        for j in range(start, len(lv)):
            names.append(f"{e}{lv[j]}")
            cols.append((codes[e] == j).astype(float))
    if not cols:
        raise FormulaError(f"the random term {_term_text(term)} has no effect columns "
                           "(0 + nothing); give it an intercept or a slope",
                           "", None)
    return names, np.column_stack(cols)


def _term_text(t: ReTerm) -> str:
    lhs = ([] if t.intercept else ["0"]) + list(t.effects)
    if t.intercept and not t.effects:
        lhs = ["1"]
    elif t.intercept:
        lhs = ["1", *lhs]
    return f"({' + '.join(lhs)} | {t.name})"


def lmm_design(model: str | ModelSpec, data: pd.DataFrame,
               terms: tuple[ReTerm, ...] | None = None, *,
               effects_per_row: bool = False) -> LMMDesign:
    """Stage 1: the fixed design ``X`` (treatment contrasts, as :func:`irmodels.mixed`), the
    random-effects matrix ``Z`` and the pattern of ``Lambda``. ``terms`` overrides the random
    terms of the spec (each with ``factors``, ``intercept``, ``effects``). A linear model
    refuses as many random effects as rows (they cannot be told from the residual);
    ``effects_per_row=True`` allows them (GLMMs without a dispersion parameter, as glmer:
    an observation-level term models over-dispersion)."""
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    spec = resolve_spec(model, list(data.columns), data)
    rterms = tuple(_term_fields(t) for t in (terms if terms is not None else spec.random))
    if not rterms:
        raise FormulaError("irm.mixed needs at least one random term such as (1|topic); for a "
                           "model with fixed effects only use irm.anova", spec.formula,
                           (0, len(spec.formula)))
    need = list(spec.factors)
    for t in rterms:
        need += [f for f in (*t.factors, *t.effects)
                 if f not in need and not _is_expression(spec, f)]
    missing = [f for f in need if f not in data.columns]
    if missing:
        raise DataFormatError(
            f"the model names column(s) {', '.join(map(repr, missing))} that the data lack; "
            f"columns present: {', '.join(map(str, data.columns))}")
    y = spec.response_values(data)
    if not np.all(np.isfinite(y)):
        raise DataFormatError(
            f"the response has {int((~np.isfinite(y)).sum())} missing or infinite value(s); "
            "drop them first (irm.frame(..., nan='drop'))")
    check_response_varies(y, spec)
    n = len(y)
    kinds: dict[str, str] = {}
    for t in rterms:
        for e in t.effects:
            kinds[e] = "numeric" if _numeric_effect(e, spec, data) else "factor"
    codes: dict[str, np.ndarray] = {}
    levels: dict[str, list[str]] = {}
    cat_names = [f for f in spec.factors if f not in spec.numeric]
    for t in rterms:
        cat_names += list(t.factors) + [e for e in t.effects if kinds[e] == "factor"]
    for f in dict.fromkeys(cat_names):
        codes[f], levels[f] = encode_levels(data[f])
    fixed_names, term_of, X_idx, X_val = fixed_design(spec, codes, levels, n, data)
    X = np.zeros((n, len(fixed_names)))
    rows = np.arange(n)
    for j in range(X_idx.shape[1]):
        np.add.at(X, (rows, X_idx[:, j]), X_val[:, j])
    if X.shape[1] and np.linalg.matrix_rank(X) < X.shape[1]:
        raise DesignError(f"the fixed-effects design of {spec} is rank deficient "
                          f"({np.linalg.matrix_rank(X)} of {X.shape[1]} columns); drop a term")
    blocks: list[_Block] = []
    z_cols, z_vals = [], []  # per term (n, q): each row's columns of Z and their values
    offset = 0
    toff = 0
    lind_parts, ind_parts, ptr_parts = [], [], []
    lower: list[float] = []
    for t in rterms:
        gc, gl = group_codes(codes, levels, t.factors)
        cols, E = _effect_columns(spec, t, kinds, data, codes, levels)
        q = len(cols)
        if len(gl) < 2:
            raise DesignError(
                f"the random term {_term_text(t)} has {len(gl)} level in the data; a variance "
                "needs at least 2 levels (5 or more to be useful). Drop the term.")
        if t.intercept:
            for ft in spec.fixed:
                if frozenset(t.factors) <= ft.key and not ft.numeric:
                    raise DesignError(
                        f"the random term {_term_text(t)} is confounded with the fixed term "
                        f"{ft.name}: the fixed effects already absorb every level of {t.name}, "
                        f"so its intercept variance cannot be estimated. Remove {ft.name} from "
                        f"the fixed part or write (0 + ... | {t.name}).")
        blk = _Block(t, t.name, cols, gc, gl, E, offset, toff)
        blocks.append(blk)
        z_cols.append(offset + gc[:, None] * q + np.arange(q))
        z_vals.append(E)
        # theta index of T[i, j] (i >= j): lower triangle by column; per level, column base + j
        # of Lambda holds rows base + i, i >= j
        rr = np.concatenate([np.arange(j, q) for j in range(q)])
        lower += [0.0 if i == j else -np.inf for j in range(q) for i in range(j, q)]
        base = offset + np.arange(len(gl)) * q
        ind_parts.append((base[:, None] + rr).ravel())
        lind_parts.append(np.tile(toff + np.arange(q * (q + 1) // 2), len(gl)))
        ptr_parts.append(np.tile(q - np.arange(q), len(gl)))
        offset += q * len(gl)
        toff += q * (q + 1) // 2
    width = sum(c.shape[1] for c in z_cols)  # the columns of a row rise term by term
    Z = sp.csr_matrix((np.hstack(z_vals).ravel(), np.hstack(z_cols).ravel(),
                       np.arange(0, n * width + 1, width)), shape=(n, offset)).tocsc()
    ptr = np.concatenate([[0], np.cumsum(np.concatenate(ptr_parts))])
    if offset >= n and not effects_per_row:
        raise DesignError(f"the random effects of {spec} have {offset} coefficients for {n} "
                          "observations: they cannot be separated from the residual. Drop a "
                          "slope or a term.")
    return LMMDesign(spec, rterms, y, X, fixed_names, term_of, Z, blocks, data, codes, levels,
                     kinds, np.concatenate(ind_parts).astype(np.int32),
                     np.asarray(ptr, dtype=np.int32), np.concatenate(lind_parts),
                     np.asarray(lower))


# --------------------------------------------------------------------------------------------
# penalized least squares and the profiled deviance


@dataclass
class _PLS:
    theta: np.ndarray
    L: np.ndarray | None  # lower Cholesky factor of Lambda' Z'Z Lambda + I (None: sparse path)
    RX: np.ndarray  # upper: RX' RX = X'X - RZX' RZX
    beta: np.ndarray
    u: np.ndarray
    pwrss: float
    ldL2: float
    ldRX2: float
    Lam: Any  # Lambda(theta): dense ndarray (small q) or sparse


class _Deviance:
    """The profiled deviance of a design (lme4's ``mkLmerDevfun``)."""

    def __init__(self, design: LMMDesign, reml: bool) -> None:
        self.d = design
        self.reml = reml
        Z, X, y = design.Z, design.X, design.y
        self.n, self.p = X.shape
        self.n_evals = 0
        self.q = q = Z.shape[1]
        #: small q: dense products (scipy.sparse's per-call overhead dominates below ~300)
        self.dense = q <= DENSE_MAX_Q
        #: the dense path: one augmented Cholesky factor, exact derivatives (_lmm_grad)
        self.prof = DenseProfile(design, reml) if self.dense else None
        if not self.dense:
            self.ZtZ = (Z.T @ Z).tocsc()
            self.ZtX = np.asarray(Z.T @ X)
            self.Zty = np.asarray(Z.T @ y).ravel()
            self.XtX = X.T @ X
            self.Xty = X.T @ y

    def pls(self, theta: np.ndarray) -> _PLS:
        with kernel_threads(self.q):  # free inside fit_lmm (threads set once)
            return self._pls(theta)

    def _pls(self, theta: np.ndarray) -> _PLS:
        theta = np.asarray(theta, float)
        if self.prof is None:
            return self._pls_sparse(theta)
        parts = self.prof.pls_parts(theta)
        if parts is None:
            raise np.linalg.LinAlgError("the penalised least squares are not positive definite")
        self.n_evals += 1
        return _PLS(theta, Lam=self.prof.Lambda(theta), **parts)

    def solver(self, f: _PLS) -> Any:
        """``B -> (Lambda' Z'Z Lambda + I)^-1 B`` at ``f``'s theta (built on demand, so that a
        result keeps no factorisation object and pickles)."""
        if f.L is not None:
            L = f.L
            return lambda B: cho_solve((L, True), B, check_finite=False)
        return self._sparse_lu(f.Lam)[0]

    def _sparse_lu(self, Lam: sp.csc_matrix) -> tuple[Any, np.ndarray]:
        from scipy.sparse.linalg import splu

        q = Lam.shape[0]
        M = (Lam.T @ self.ZtZ @ Lam + sp.identity(q, format="csc")).tocsc()
        lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})
        return (lambda B: lu.solve(np.asfortranarray(B))), lu.U.diagonal()

    def _pls_sparse(self, theta: np.ndarray) -> _PLS:
        """The same solves through a sparse LU of ``M = Lambda' Z'Z Lambda + I`` (symmetric
        mode, diagonal pivots: for a symmetric positive definite M, ``log|M|`` is the sum of
        ``log U_ii``). Every quantity is an inner product with ``M^-1``: ``R_ZX' R_ZX =
        (Lambda'Z'X)' M^-1 (Lambda'Z'X)``, ``u = M^-1 (Lambda'Z'y - Lambda'Z'X beta)``."""
        d = self.d
        Lam = d.Lambda(theta)
        q = Lam.shape[0]
        solve, diag = self._sparse_lu(Lam)
        if not np.all(diag > 0):
            raise np.linalg.LinAlgError("Lambda' Z'Z Lambda + I is not positive definite")
        LtZtX = np.asarray(Lam.T @ self.ZtX)
        LtZty = np.asarray(Lam.T @ self.Zty)
        MiX = solve(LtZtX) if self.p else np.zeros((q, 0))
        Miy = solve(LtZty)
        S = self.XtX - LtZtX.T @ MiX
        RX = cholesky(S, lower=False, check_finite=False) if self.p else np.zeros((0, 0))
        rhs = self.Xty - LtZtX.T @ Miy
        beta = solve_triangular(RX, solve_triangular(RX.T, rhs, lower=True, check_finite=False),
                                lower=False, check_finite=False)
        u = Miy - MiX @ beta
        r = d.y - d.X @ beta - d.Z @ (Lam @ u)
        pwrss = float(r @ r + u @ u)
        self.n_evals += 1
        return _PLS(theta, None, RX, beta, u, pwrss, float(np.sum(np.log(diag))),
                    2 * float(np.sum(np.log(np.diag(RX)))) if self.p else 0.0, Lam)

    def deviance_of(self, f: _PLS) -> float:
        n, p = self.n, self.p
        if self.reml:
            nr = n - p
            return f.ldL2 + f.ldRX2 + nr * (1 + math.log(2 * math.pi * f.pwrss / nr))
        return f.ldL2 + n * (1 + math.log(2 * math.pi * f.pwrss / n))

    def __call__(self, theta: np.ndarray) -> float:
        try:
            return self.deviance_of(self.pls(theta))
        except (np.linalg.LinAlgError, ValueError):
            return float("inf")

    def sigma(self, f: _PLS) -> float:
        return math.sqrt(f.pwrss / (self.n - self.p if self.reml else self.n))

    def deviance_varpar(self, varpar: np.ndarray) -> float:
        """lmerTest's ``devfun_vp``: the deviance at ``(theta, sigma)``, sigma not profiled."""
        theta, sigma = varpar[:-1], float(varpar[-1])
        f = self.pls(theta)
        s2 = sigma * sigma
        dev = f.ldL2 + f.pwrss / s2 + self.n * math.log(2 * math.pi * s2)
        if self.reml:
            dev += f.ldRX2 - self.p * math.log(2 * math.pi * s2)
        return dev

    def covbeta_varpar(self, varpar: np.ndarray) -> np.ndarray:
        f = self.pls(varpar[:-1])
        RXi = solve_triangular(f.RX, np.eye(self.p), lower=False, check_finite=False)
        return float(varpar[-1]) ** 2 * (RXi @ RXi.T)


# --------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, repr=False, eq=False)
class SlopeMixedResult(MixedResidualPlots, LinearMixedCounts, FittedModel):
    """A linear mixed model with random slopes fitted by :func:`irmodels.mixed` (see the
    module notes of :mod:`irmodels.models._lmm`).

    Attributes
    ----------
    spec : ModelSpec
    method : {"REML", "ML"}
    n_obs : int
    theta : ndarray
        lme4's relative covariance parameters (term by term, lower triangle by column).
    sigma : float
        Residual standard deviation.
    loglik, aic, bic, deviance : float
        (Restricted) log-likelihood, lme4's information criteria, ``-2 loglik``.
    converged : bool
    n_iter : int
    boundary : bool
        lme4's ``isSingular``: a diagonal element of theta below 1e-4.
    boundary_components : tuple of str
        ``group: effect`` of the diagonal elements at the bound.
    fixed_estimates : Series

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import irmodels as irm
    >>> rng = np.random.default_rng(1)
    >>> g = np.repeat(np.arange(10), 8)
    >>> x = np.tile(np.arange(8.0), 10)
    >>> y = (2 + 0.5 * x + rng.normal(0, 1, 10)[g] + rng.normal(0, 0.3, 10)[g] * x
    ...      + rng.normal(0, 0.5, 80))
    >>> d = pd.DataFrame({"topic": [f"t{k}" for k in g], "x": x, "score": y})
    >>> fit = irm.mixed("score ~ x + (1 + x | topic)", d)
    >>> fit.variance_components().round(3)
                          variance     sd
    group    effect
    topic    (Intercept)     0.458  0.677
             x               0.024  0.154
    Residual                 0.211  0.459
    >>> round(fit.loglik, 3)
    -76.585
    """

    spec: ModelSpec
    method: str
    n_obs: int
    theta: np.ndarray
    sigma: float
    loglik: float
    aic: float
    bic: float
    deviance: float
    converged: bool
    n_iter: int
    boundary: bool
    boundary_components: tuple[str, ...]
    fixed_estimates: pd.Series
    n_params: int
    _design: LMMDesign = field(default=None)  # type: ignore[assignment]
    _dev: _Deviance = field(default=None)  # type: ignore[assignment]
    _pls: _PLS = field(default=None)  # type: ignore[assignment]

    # -- the fit vocabulary (FittedModel) ------------------------------------------------------
    @property
    def data(self) -> pd.DataFrame:
        """The data the model was fitted to (not copied)."""
        return self._design.data


    @property
    def opt_summary(self) -> OptSummary:
        """Trust-region Newton on theta (exact derivatives, up to ``DENSE_MAX_Q`` random
        effects), or L-BFGS-B (central-difference gradient) and Newton polish steps."""
        method = "Newton" if self._dev.prof is not None else "L-BFGS-B"
        return OptSummary(method=method, iterations=self.n_iter, gradient_norm=float("nan"),
                          converged=self.converged, boundary=self.boundary)

    def _mm_matrix(self, factor: str) -> tuple[np.ndarray, list[str]]:
        from irmodels.models._lmm_inference import marginal_means_matrix

        return marginal_means_matrix(self, factor)

    def marginal_means(self, factor: str = "system") -> pd.Series:
        """Estimated marginal means of a fixed factor (equal weights over the levels of the
        other fixed factors, covariates at their means: emmeans' default), indexed by level."""
        M, labels = self._mm_matrix(factor)
        return pd.Series(M @ self.fixed_estimates.to_numpy(),
                         index=pd.Index(labels, name=factor), name="mean")

    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        """Covariance matrix of :meth:`marginal_means`."""
        M, labels = self._mm_matrix(factor)
        return pd.DataFrame(M @ self.vcov.to_numpy() @ M.T, index=labels, columns=labels)

    def contrast_df(self, L: np.ndarray, factor: str = "system", *,
                    ddf: Literal["satterthwaite", "kenward-roger"] = "satterthwaite"
                    ) -> np.ndarray:
        """df of the contrasts ``L @ marginal_means(factor)``: Satterthwaite (lmerTest's
        ``contest``) or Kenward-Roger (pbkrtest's ``Lb_ddf``, emmeans' ``lmer.df =
        "kenward-roger"``; REML fits)."""
        from irmodels.models._lmm_inference import contrast_df

        M, _ = self._mm_matrix(factor)
        return contrast_df(self, np.atleast_2d(np.asarray(L, dtype=float)) @ M, ddf)

    @property
    def residual(self) -> None:
        """Always None: one residual variance (as :attr:`MixedResult.residual`)."""
        return None

    def information_criterion(self, convention: Literal["lme4", "nlme"] = "lme4") -> float:
        """BIC under a named convention (as :meth:`MixedResult.information_criterion`):
        ``"lme4"`` uses ``log(n_obs)``, ``"nlme"`` ``log(n_obs - p)`` under REML."""
        if convention not in ("lme4", "nlme"):
            raise ModelError(f"convention must be 'lme4' or 'nlme'; got {convention!r}")
        p = len(self.fixed_estimates)
        n = self.n_obs - p if (convention == "nlme" and self.method == "REML") else self.n_obs
        return self.deviance + self.n_params * math.log(n)

    def _refit_ml(self) -> SlopeMixedResult:
        """The same model refitted by ML (for :func:`irmodels.compare_models`)."""
        if self.method == "ML":
            return self
        return fit_lmm(self.spec, self._design.data, method="ML", terms=self._design.terms)

    # -- variance parameters -------------------------------------------------------------------
    def _templates(self) -> list[np.ndarray]:
        """Each term's lower-triangular template ``T_k`` (Lambda's block for one level)."""
        out = []
        for b in self._design.blocks:
            T = np.zeros((b.q, b.q))
            k = b.theta_offset
            for j in range(b.q):
                for i in range(j, b.q):
                    T[i, j] = self.theta[k]
                    k += 1
            out.append(T)
        return out

    def _covariances(self) -> list[np.ndarray]:
        return [self.sigma ** 2 * (T @ T.T) for T in self._templates()]

    def variance_components(self) -> pd.DataFrame:
        """One row per (group, effect) and ``Residual``: columns ``variance``, ``sd``. When every
        term is an intercept, today's shape: index ``component``, columns ``variance, sd,
        share``. Correlations: :meth:`correlations`."""
        covs = self._covariances()
        blocks = self._design.blocks
        if all(b.columns == ["(Intercept)"] for b in blocks):
            names = [b.group for b in blocks] + ["Residual"]
            v = np.array([c[0, 0] for c in covs] + [self.sigma ** 2])
            out = pd.DataFrame({"variance": v, "sd": np.sqrt(v), "share": v / v.sum()},
                               index=pd.Index(names, name="component"))
            return out
        rows = []
        for b, c in zip(blocks, covs):
            for r, col in enumerate(b.columns):
                rows.append((b.group, col, c[r, r]))
        rows.append(("Residual", "", self.sigma ** 2))
        idx = pd.MultiIndex.from_tuples([(g, e) for g, e, _ in rows], names=["group", "effect"])
        v = np.array([x for _, _, x in rows])
        return pd.DataFrame({"variance": v, "sd": np.sqrt(v)}, index=idx)

    def correlations(self) -> pd.DataFrame:
        """Correlations of the random effects within each term: columns ``group, effect1,
        effect2, correlation`` (lme4's ``as.data.frame(VarCorr(fit))`` rows with ``var2``);
        NaN when a variance is 0."""
        rows = []
        for b, c in zip(self._design.blocks, self._covariances()):
            sd = np.sqrt(np.diag(c))
            for j in range(b.q):
                for i in range(j + 1, b.q):
                    den = sd[i] * sd[j]
                    # a boundary fit's correlation is +-1 up to rounding (1 + 2e-16): clipped
                    rows.append((b.group, b.columns[j], b.columns[i],
                                 float(np.clip(c[i, j] / den, -1.0, 1.0)) if den > 0
                                 else float("nan")))
        return pd.DataFrame(rows, columns=["group", "effect1", "effect2", "correlation"])

    # -- fixed effects --------------------------------------------------------------------------
    @cached_property
    def vcov(self) -> pd.DataFrame:
        """``sigma^2 (R_X' R_X)^-1``, lme4's ``vcov``."""
        RXi = solve_triangular(self._pls.RX, np.eye(len(self.fixed_estimates)), lower=False)
        names = list(self.fixed_estimates.index)
        return pd.DataFrame(self.sigma ** 2 * (RXi @ RXi.T), index=names, columns=names)

    @cached_property
    def _satterthwaite(self) -> tuple[list[np.ndarray], np.ndarray]:
        if self._dev.prof is not None:  # small q: exact derivatives
            from irmodels.models._lmm_grad import satterthwaite_dense

            with kernel_threads(self._dev.q):
                return satterthwaite_dense(self._dev.prof, self.theta, self.sigma)
        from irmodels.models._lmm_inference import satterthwaite_parts

        return satterthwaite_parts(self)

    def _df_for(self, L: np.ndarray) -> np.ndarray:
        from irmodels.models._lmm_inference import df_for

        return df_for(self, L)

    @cached_property
    def fixed(self) -> pd.DataFrame:
        """Fixed effects: ``estimate, se, df, t, p`` (Satterthwaite df as lmerTest)."""
        est = self.fixed_estimates.to_numpy()
        se = np.sqrt(np.diag(self.vcov.to_numpy()))
        df = self._df_for(np.eye(len(est)))
        t = est / se
        p = 2 * stdtr(df, -np.abs(t))
        out = pd.DataFrame({"estimate": est, "se": se, "df": df, "t": t, "p": p},
                           index=pd.Index(self.fixed_estimates.index, name="coefficient"))
        return out

    def anova(self, type: int = 3, ddf: Literal["satterthwaite", "kenward-roger"] = "satterthwaite"
              ) -> Any:
        """Type III F tests of the fixed terms, as lmerTest's ``anova(fit, type = 3, ddf =
        ...)`` (interactions of factors included): ``ddf="satterthwaite"`` (``contestMD``) or
        ``"kenward-roger"`` (pbkrtest's adjusted covariance and scaled F, REML fits; the
        derivatives of ``V`` in each element of each term's covariance). Returns a
        :class:`~irmodels.models._mixed_anova.MixedAnovaResult` (``table`` indexed by ``term``,
        columns ``F, num_df, den_df, p``). See :mod:`irmodels.models._lmm_inference`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, irmodels as irm
        >>> rng = np.random.default_rng(1)
        >>> g = np.repeat(np.arange(10), 8)
        >>> x = np.tile(np.arange(8.0), 10)
        >>> y = (2 + 0.5 * x + rng.normal(0, 1, 10)[g] + rng.normal(0, 0.3, 10)[g] * x
        ...      + rng.normal(0, 0.5, 80))
        >>> d = pd.DataFrame({"topic": [f"t{k}" for k in g], "x": x, "score": y})
        >>> fit = irm.mixed("score ~ x + (1 + x | topic)", d)
        >>> fit.anova(ddf="kenward-roger").table.round(3)
                   F  num_df  den_df    p
        term
        x     71.353       1     9.0  0.0
        """
        from irmodels.models._lmm_inference import anova

        return anova(self, type=type, ddf=ddf)

    def confint(self, method: Literal["profile", "bootstrap", "wald"] = "profile",
                level: float = 0.95, *, parm: Any = None, n_resamples: int = 500,
                seed: Any = 0, backend: Any = "serial", n_workers: int | None = None
                ) -> pd.DataFrame:
        """Confidence intervals of the SDs, correlations, residual SD and fixed effects, as
        lme4's ``confint.merMod`` (see :mod:`irmodels.models._lmm_confint`).

        ``method``: ``"profile"`` (the ML deviance profiled over every other parameter in
        lme4's SD/correlation parametrisation, REML fits refitted by ML as lme4 does; each
        bound a root of the signed square root), ``"bootstrap"`` (parametric, percentile, as
        ``bootMer``: ``n_resamples`` responses simulated from the fit and refitted by its
        criterion, seeded, through :func:`irmodels.parallel.map`) or ``"wald"`` (fixed effects
        ``estimate +- z se``, NaN for the variance parameters). ``parm``: rows to compute.

        Returns a DataFrame indexed by ``parameter`` (lme4's ``oldNames = FALSE`` names in its
        order: per term ``sd_(Intercept)|g``, ``cor_x.(Intercept)|g``, ``sd_x|g``; then
        ``sigma``; then the fixed effects), columns ``lower, upper``.

        Examples
        --------
        >>> import numpy as np, pandas as pd, irmodels as irm
        >>> rng = np.random.default_rng(1)
        >>> g = np.repeat(np.arange(10), 8)
        >>> x = np.tile(np.arange(8.0), 10)
        >>> y = (2 + 0.5 * x + rng.normal(0, 1, 10)[g] + rng.normal(0, 0.3, 10)[g] * x
        ...      + rng.normal(0, 0.5, 80))
        >>> d = pd.DataFrame({"topic": [f"t{k}" for k in g], "x": x, "score": y})
        >>> fit = irm.mixed("score ~ x + (1 + x | topic)", d)
        >>> fit.confint(parm=["sd_x|topic", "x"]).round(3)
                    lower  upper
        parameter
        sd_x|topic  0.082  0.258
        x           0.342  0.562
        >>> fit.confint("wald").round(3).loc["x"].tolist()
        [0.347, 0.557]
        """
        from irmodels.models._lmm_confint import confint

        return confint(self, method=method, level=level, parm=parm, n_boot=n_resamples,
                       seed=seed, backend=backend, n_workers=n_workers)

    def gstudy(self, facets: Any = None, data: Any = None) -> Any:
        """Refused (:class:`~irmodels.ModelError`): G coefficients need variance components
        constant over the design; a random slope makes them depend on x."""
        from irmodels.stats.gtheory import from_fit

        return from_fit(self, facets, data)

    # -- random effects -------------------------------------------------------------------------
    @cached_property
    def _b(self) -> np.ndarray:
        return np.asarray(self._pls.Lam @ self._pls.u)

    @cached_property
    def _condvar_blocks(self) -> list[np.ndarray]:
        """Per term, (levels, q, q) conditional covariances sigma^2 Lambda (L L')^-1 Lambda'."""
        q = self._design.Z.shape[1]
        solve = self._dev.solver(self._pls)
        out = []
        for b, T in zip(self._design.blocks, self._templates()):
            cv = np.empty((b.n_levels, b.q, b.q))
            per = max(1, 512 // b.q)  # levels per batch of right-hand sides
            for start in range(0, b.n_levels, per):
                levs = range(start, min(b.n_levels, start + per))
                cols = b.offset + np.arange(levs.start * b.q, levs.stop * b.q)
                E = np.zeros((q, len(cols)))
                E[cols, np.arange(len(cols))] = 1.0
                Mi = solve(E)[cols]  # rows and columns of these levels
                for k, _ in enumerate(levs):
                    s = slice(k * b.q, (k + 1) * b.q)
                    cv[start + k] = self.sigma ** 2 * (T @ Mi[s, s] @ T.T)
            out.append(cv)
        return out

    def conditional_modes(self) -> pd.DataFrame:
        """Conditional modes (BLUPs) with their conditional SDs, tidy as lme4's
        ``as.data.frame(ranef(fit, condVar = TRUE))``: columns ``group, effect, level,
        condval, condsd`` (term by term, effect by effect, level by level). The conditional
        SDs do not include the uncertainty of the fixed effects (as lme4's)."""
        rows = []
        for b, cv in zip(self._design.blocks, self._condvar_blocks):
            vals = self._b[b.offset:b.offset + b.q * b.n_levels].reshape(b.n_levels, b.q)
            for r, col in enumerate(b.columns):
                for lev, lab in enumerate(b.labels):
                    rows.append((b.group, col, lab, vals[lev, r],
                                 math.sqrt(max(cv[lev, r, r], 0))))
        return pd.DataFrame(rows, columns=["group", "effect", "level", "condval", "condsd"])

    def _by_group(self, value: str) -> dict[str, pd.DataFrame]:
        cm = self.conditional_modes()
        out: dict[str, pd.DataFrame] = {}
        for g in dict.fromkeys(cm["group"]):
            sub = cm[cm["group"] == g]
            wide = sub.pivot(index="level", columns="effect", values=value)
            levels = list(dict.fromkeys(sub["level"]))
            wide = wide.loc[levels, list(dict.fromkeys(sub["effect"]))]
            wide.index.name = g
            wide.columns.name = None
            out[g] = wide
        return out

    @property
    def random_effects(self) -> dict[str, pd.DataFrame]:
        """BLUPs by grouping factor, as lme4's ``ranef(fit)``: a DataFrame per group indexed by
        level, one column per effect (``(Intercept)``, ``Days``; the terms of ``(Days ||
        Subject)`` share one frame). :meth:`conditional_modes` has them tidy."""
        return self._by_group("condval")

    def conditional_sd(self, term: str | None = None) -> pd.DataFrame:
        """Conditional SDs of the BLUPs of grouping factor ``term`` (default: the first), in
        the shape of ``random_effects[term]``."""
        frames = self._by_group("condsd")
        if term is None:
            term = next(iter(frames))
        if term not in frames:
            raise DataFormatError(f"{term!r} is not a grouping factor of {self.spec}; "
                                  f"grouping factors: {', '.join(frames)}")
        return frames[term]

    def conditional_variances(self, term: int = 0) -> np.ndarray:
        """The ``(levels, q, q)`` conditional covariance matrices of term ``term``'s effects
        (lme4's ``postVar``)."""
        return self._condvar_blocks[term].copy()

    def fitted(self) -> np.ndarray:
        """``X beta + Z b`` per data row (lme4's ``fitted``)."""
        d = self._design
        return d.X @ self.fixed_estimates.to_numpy() + d.Z @ self._b

    def residuals(self, type: ResidualType = "response") -> np.ndarray:
        """Residuals per data row: ``"response"`` (default, = ``"conditional"``): ``y -
        fitted()``, lme4's ``residuals(fit)``; ``"marginal"``: ``y - X beta``;
        ``"pearson"``: the response residual over sigma (lme4's ``residuals(fit, type =
        "pearson", scaled = TRUE)``); ``"standardized"``: over its own estimated SD, ``sigma
        sqrt(1 - h_ii)`` (lme4's ``rstudent(fit)``). See
        :mod:`irmodels.models._mixed_residuals` and docs/mixed.md, "Residuals and diagnostics"."""
        if type == "response":
            return self._design.y - self.fitted()
        from irmodels.models._mixed_residuals import mixed_residuals

        return mixed_residuals(self, type)

    def plot(self, term: str | None = None, *, level: float = 0.95, ax: Any = None) -> Any:
        """Caterpillar plot of the conditional modes of grouping factor ``term`` (default
        ``topic`` when the model has it, else the first): a panel per effect, the levels sorted
        by the first effect, each mode with ``b +- z condsd`` at ``level`` (lme4's
        ``dotplot(ranef(fit, condVar = TRUE))``). ``ax``: as many Axes as effects; by default a
        new figure, closed in pyplot. Returns the matplotlib Figure."""
        from irmodels.models._mixed_plots import caterpillar

        return caterpillar(self, term, level=level, ax=ax)

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Literal["~0"] | None = None,
                allow_new_levels: bool = False) -> np.ndarray:
        """Predictions as lme4's ``predict``: ``X beta + Z b`` (``re_form=None``) or ``X beta``
        (``re_form="~0"``, R's ``re.form = NA``) on ``newdata`` (default: the data). A level of
        a grouping factor that was not fitted raises unless ``allow_new_levels`` (its random
        effects are then 0)."""
        if re_form not in (None, "~0", "0", "NA"):
            raise ModelError(f"re_form must be None (all random effects) or '~0' (none); got "
                             f"{re_form!r}")
        d = self._design
        if newdata is None:
            return self.fitted() if re_form is None else d.X @ self.fixed_estimates.to_numpy()
        if not isinstance(newdata, pd.DataFrame):
            raise DataFormatError(f"newdata must be a pandas DataFrame; got "
                                  f"{type(newdata).__name__}")
        m = len(newdata)
        for f in dict.fromkeys(f for t in self.spec.fixed for f in t.categorical_factors):
            if f not in newdata.columns:
                raise DataFormatError(f"newdata lacks the column {f!r} of the fixed part")
            new = sorted(set(map(str, newdata[f])) - set(d.levels[f]))
            if new:
                raise DataFormatError(f"newdata has level(s) {', '.join(new[:5])} of the fixed "
                                      f"factor {f!r} that the fit did not see")
        cols = [c for c in d.data.columns if c in newdata.columns or c == self.spec.response]
        nd = newdata.copy()
        if self.spec.response not in nd.columns:
            nd[self.spec.response] = np.nan
        both = pd.concat([d.data[cols], nd[cols]], ignore_index=True)
        for f in d.levels:
            if f in both.columns:
                both[f] = both[f].astype(str)
        codes = {f: np.array([{lv: i for i, lv in enumerate(d.levels[f])}.get(v, -1)
                              for v in both[f]]) for f in d.levels if f in both.columns}
        fixed_needed = [f for f in self.spec.factors if f not in self.spec.numeric]
        _, _, X_idx, X_val = fixed_design(self.spec, {f: codes[f] for f in fixed_needed},
                                           {f: d.levels[f] for f in fixed_needed}, len(both),
                                           both)
        X = np.zeros((len(both), len(self.fixed_estimates)))
        rr = np.arange(len(both))
        for j in range(X_idx.shape[1]):
            np.add.at(X, (rr, X_idx[:, j]), X_val[:, j])
        out = X[-m:] @ self.fixed_estimates.to_numpy()
        if re_form is not None:
            return out
        part = both.iloc[-m:].reset_index(drop=True)
        for b in d.blocks:
            missing = [f for f in (*b.term.factors, *b.term.effects)
                       if f not in part.columns and not _is_expression(self.spec, f)]
            if missing:
                raise DataFormatError(f"newdata lacks column(s) {', '.join(missing)} of the "
                                      f"random term {_term_text(b.term)}")
            lab = part[list(b.term.factors)].astype(str).agg(":".join, axis=1)
            pos = {v: i for i, v in enumerate(b.labels)}
            lev = np.array([pos.get(v, -1) for v in lab])
            if (lev < 0).any() and not allow_new_levels:
                raise DataFormatError(
                    f"newdata has level(s) {', '.join(sorted(set(lab[lev < 0]))[:5])} of "
                    f"{b.group} that the fit did not see; pass allow_new_levels=True to predict "
                    "them with random effects 0")
            E = np.zeros((m, b.q))
            for r, col in enumerate(b.columns):
                if col == "(Intercept)":
                    E[:, r] = 1.0
                elif col in d.effect_kind and d.effect_kind[col] == "numeric":
                    E[:, r] = (self.spec.values(part, col) if _is_expression(self.spec, col)
                               else np.asarray(part[col], dtype=float))
                else:
                    f = next(e for e in b.term.effects if d.effect_kind[e] == "factor"
                             and col.startswith(e) and col[len(e):] in d.levels[e])
                    E[:, r] = (part[f].astype(str) == col[len(f):]).to_numpy(float)
            vals = self._b[b.offset:b.offset + b.q * b.n_levels].reshape(b.n_levels, b.q)
            ok = lev >= 0
            out[ok] += np.sum(E[ok] * vals[lev[ok]], axis=1)
        return out

    # -- display --------------------------------------------------------------------------------
    @property
    def notes(self) -> tuple[str, ...]:
        out = []
        if self.boundary:
            out.append(f"singular fit: the {self.method} estimate of the variance of "
                       f"{', '.join(self.boundary_components)} is zero (a boundary fit).")
        if not self.converged:
            out.append("the optimiser did not meet its convergence criterion.")
        return tuple(out)

    def to_frame(self) -> pd.DataFrame:
        """The variance components, tidy."""
        return self.variance_components().reset_index()

    def _display_title(self) -> str:
        b = f", singular: {', '.join(self.boundary_components)}" if self.boundary else ""
        return (f"Linear mixed model fit by {self.method} ({self.n_iter} iterations{b}): "
                f"{self.spec}\nn = {self.n_obs}, logLik = {self.loglik:.4f}, "
                f"AIC = {self.aic:.4f}, BIC = {self.bic:.4f}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        from irmodels.models._mixed_report import slope_display_tables

        return slope_display_tables(self)

    def to_section(self, *, digits: int = 4, plot: bool = True) -> Any:
        """The report section (``irm.report(fit)``): fit line, notes (singular fit), random
        effects with correlations, fixed effects, and in HTML the caterpillar plot."""
        from irmodels.models._mixed_report import slope_section

        return slope_section(self, digits=digits, plot=plot)

    def __repr__(self) -> str:
        return (f"<SlopeMixedResult {self.method} {self.spec} n={self.n_obs} "
                f"logLik={self.loglik:.4f}>")


def fit_lmm(model: str | ModelSpec, data: pd.DataFrame, *,
            method: Literal["REML", "ML"] = "REML",
            terms: tuple[ReTerm, ...] | None = None,
            maxiter: int = 2000, _stacklevel: int = 2) -> SlopeMixedResult:
    """Fit a linear mixed model with general random-effects terms (see the module notes).

    ``terms`` overrides the spec's random terms (``ReTerm(factors, intercept, effects)``).
    """
    if method not in ("REML", "ML"):
        raise ModelError(f"method must be 'REML' or 'ML'; got {method!r}")
    design = lmm_design(model, data, terms)
    dev = _Deviance(design, method == "REML")
    with kernel_threads(dev.q):  # BLAS threads by size, once per fit
        opt = _optimize(dev, maxiter=maxiter)
        f = dev.pls(opt.theta)
    devi = dev.deviance_of(f)
    sigma = dev.sigma(f)
    n, p = dev.n, dev.p
    npar = p + design.n_theta + 1
    loglik = -devi / 2
    bnd = []
    for b in design.blocks:
        k = b.theta_offset
        for j in range(b.q):
            if opt.theta[k] < SINGULAR_TOL:
                bnd.append(f"{b.group}: {b.columns[j]}")
            k += b.q - j
    if bnd:
        warnings.warn(f"singular fit: the variance of {', '.join(bnd)} is estimated at zero",
                      BoundaryFitWarning, stacklevel=_stacklevel)
    return SlopeMixedResult(
        spec=design.spec, method=method, n_obs=n, theta=opt.theta.copy(), sigma=sigma,
        loglik=loglik, aic=devi + 2 * npar, bic=devi + npar * math.log(n), deviance=devi,
        converged=opt.converged, n_iter=opt.n_iter, boundary=bool(bnd),
        boundary_components=tuple(bnd),
        fixed_estimates=pd.Series(f.beta, index=pd.Index(design.fixed_names, name="coefficient")),
        n_params=npar, _design=design, _dev=dev, _pls=f)


def fit_if_slopes(model: str | ModelSpec, data: pd.DataFrame, *, method: str, residual: Any,
                  start: Any, maxiter: int) -> SlopeMixedResult | None:
    """``irm.mixed``'s router: the general engine's fit when a random term of ``model`` has
    slopes or no intercept, else None (intercept-only models keep their solver)."""
    spec = _design.resolve_model(model, list(data.columns))
    if not is_slope_spec(spec):
        return None
    if residual is not None:
        raise ModelError(
            f"residual={residual!r} (one residual variance per stratum) is not available with "
            "random slopes; fit the slopes with one residual variance (residual=None), or drop "
            "the slopes to keep the stratified residual")
    if start is not None:
        raise ModelError("start= (starting SDs by random-term name) applies to random "
                         "intercepts only; a model with random slopes starts from lme4's "
                         "default (theta = identity); drop start=")
    return fit_lmm(spec, data, method=method, maxiter=maxiter,  # type: ignore[arg-type]
                   _stacklevel=4)  # the warning points at the caller of irm.mixed
