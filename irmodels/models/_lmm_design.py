"""The design half of the random-slopes engine (:mod:`irmodels.models._lmm`): the random-effects
terms and their sparse ``Z``, ``Lambda(theta)`` (:func:`lmm_design` -> :class:`LMMDesign`), and
the penalized least squares behind the profiled deviance (:class:`ProfiledDeviance`), as lme4
builds them (Bates et al. 2015, section 3; the model and its notation are in the notes of
:mod:`irmodels.models._lmm`, which re-exports these names).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.sparse.linalg import splu

from irmodels._threads import kernel_threads
from irmodels.errors import (
    DataFormatError,
    DesignError,
    FormulaError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._lmm_grad import DenseProfile
from irmodels.models._mixed_design import (
    check_response_varies,
    encode_levels,
    fixed_design,
    group_codes,
    resolve_spec,
)

__all__ = ["DENSE_MAX_Q", "LMMDesign", "PLSFit", "ProfiledDeviance", "ReTerm", "is_expression",
           "is_slope_spec", "lmm_design", "term_text"]

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


def is_expression(spec: ModelSpec, name: str) -> bool:
    expr = getattr(spec, "expression", None)
    return expr is not None and expr(name) is not None


def _numeric_effect(name: str, spec: ModelSpec, data: pd.DataFrame) -> bool:
    if is_expression(spec, name):
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
            x = (spec.values(data, e) if is_expression(spec, e)
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
        raise FormulaError(f"the random term {term_text(term)} has no effect columns "
                           "(0 + nothing); give it an intercept or a slope",
                           "", None)
    return names, np.column_stack(cols)


def term_text(t: ReTerm) -> str:
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
                 if f not in need and not is_expression(spec, f)]
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
                f"the random term {term_text(t)} has {len(gl)} level in the data; a variance "
                "needs at least 2 levels (5 or more to be useful). Drop the term.")
        if t.intercept:
            for ft in spec.fixed:
                if frozenset(t.factors) <= ft.key and not ft.numeric:
                    raise DesignError(
                        f"the random term {term_text(t)} is confounded with the fixed term "
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
class PLSFit:
    theta: np.ndarray
    L: np.ndarray | None  # lower Cholesky factor of Lambda' Z'Z Lambda + I (None: sparse path)
    RX: np.ndarray  # upper: RX' RX = X'X - RZX' RZX
    beta: np.ndarray
    u: np.ndarray
    pwrss: float
    ldL2: float
    ldRX2: float
    Lam: Any  # Lambda(theta): dense ndarray (small q) or sparse


class ProfiledDeviance:
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

    def pls(self, theta: np.ndarray) -> PLSFit:
        with kernel_threads(self.q):  # free inside fit_lmm (threads set once)
            return self._pls(theta)

    def _pls(self, theta: np.ndarray) -> PLSFit:
        theta = np.asarray(theta, float)
        if self.prof is None:
            return self._pls_sparse(theta)
        parts = self.prof.pls_parts(theta)
        if parts is None:
            raise np.linalg.LinAlgError("the penalised least squares are not positive definite")
        self.n_evals += 1
        return PLSFit(theta, Lam=self.prof.Lambda(theta), **parts)

    def solver(self, f: PLSFit) -> Any:
        """``B -> (Lambda' Z'Z Lambda + I)^-1 B`` at ``f``'s theta (built on demand, so that a
        result keeps no factorisation object and pickles)."""
        if f.L is not None:
            L = f.L
            return lambda B: cho_solve((L, True), B, check_finite=False)
        return self._sparse_lu(f.Lam)[0]

    def _sparse_lu(self, Lam: sp.csc_matrix) -> tuple[Any, np.ndarray]:

        q = Lam.shape[0]
        M = (Lam.T @ self.ZtZ @ Lam + sp.identity(q, format="csc")).tocsc()
        lu = splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})
        return (lambda B: lu.solve(np.asfortranarray(B))), lu.U.diagonal()

    def _pls_sparse(self, theta: np.ndarray) -> PLSFit:
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
        return PLSFit(theta, None, RX, beta, u, pwrss, float(np.sum(np.log(diag))),
                    2 * float(np.sum(np.log(np.diag(RX)))) if self.p else 0.0, Lam)

    def deviance_of(self, f: PLSFit) -> float:
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

    def sigma(self, f: PLSFit) -> float:
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

