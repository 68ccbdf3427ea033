"""The fitting behind :class:`irmodels.models._glm.GlmResult`: R's ``glm.fit`` (IRLS, refined
to convergence), the design of a GLM (response as proportions with trials as prior weights,
the offset, treatment-coded ``X``; sum-to-zero columns for type III tests) and the message of
R's separation warning. See :mod:`irmodels.models._glm` for the model and the references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import linalg

from irmodels.errors import ArgumentError, DataFormatError, DesignError, FormulaError, ModelError
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._mixed_design import fixed_design

__all__ = ["EPSILON", "MAXIT", "REFINE_TOL", "REFINE_MAXIT", "GlmDesign", "Irls", "design_matrix",
           "glm_design", "irls", "separation_message", "sum_coded", "wls"]

#: R's ``glm.control()`` defaults: the convergence rule and the iteration limit.
EPSILON = 1e-8
MAXIT = 25
#: After R's rule: iterate until the coefficients change by less than this (relative).
REFINE_TOL = 1e-11
REFINE_MAXIT = 50

# --------------------------------------------------------------------------------------------
# IRLS (R's glm.fit)


@dataclass
class Irls:
    coef: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    deviance: float
    iterations: int  # at R's rule
    converged: bool
    refine_iterations: int


def irls(X: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray, family: Any,
          *, epsilon: float = EPSILON, maxit: int = MAXIT) -> Irls:
    """R's ``glm.fit`` (see the module notes), then refined to convergence."""
    link = family.link
    n, p = X.shape
    mustart = family.start_mu(y, weights)
    eta = np.asarray(link.linkfun(mustart), dtype=float)
    mu = np.asarray(link.linkinv(eta), dtype=float)
    devold = float(np.sum(family.deviance_resid(y, mu, weights)))
    coef: np.ndarray | None = None
    coefold: np.ndarray | None = None
    converged = False
    it = 0
    it_r = 0
    extra = 0
    refining = False
    while True:
        it += 1
        mu_eta = np.asarray(link.mu_eta(eta), dtype=float)
        good = (weights > 0) & (mu_eta != 0)
        z = (eta - offset)[good] + (y - mu)[good] / mu_eta[good]
        w = np.sqrt(weights[good] * mu_eta[good] ** 2 / family.variance(mu[good]))
        if p:
            start = wls(X[good] * w[:, None], z * w)
        else:
            start = np.zeros(0)
        eta_new = X @ start + offset
        mu_new = np.asarray(link.linkinv(eta_new), dtype=float)
        dev = float(np.sum(family.deviance_resid(y, mu_new, weights)))
        halvings = 0
        while not np.isfinite(dev):
            if coefold is None:
                raise ModelError(
                    "no valid set of coefficients was found (the deviance is not finite at the "
                    "first step, R's glm.fit's 'please supply starting values'); check the "
                    "response and the offset for extreme values.")
            halvings += 1
            if halvings > MAXIT:
                raise ModelError("inner loop 1: cannot correct the step size (R's glm.fit); "
                                 "the fit diverged")
            start = (start + coefold) / 2
            eta_new = X @ start + offset
            mu_new = np.asarray(link.linkinv(eta_new), dtype=float)
            dev = float(np.sum(family.deviance_resid(y, mu_new, weights)))
        eta, mu = eta_new, mu_new
        if not refining:
            if abs(dev - devold) / (abs(dev) + 0.1) < epsilon:
                converged = True
                refining = True
                it_r = it
            elif it >= maxit:
                coef = start
                break
        else:
            extra += 1
            prev = start if coef is None else coef
            step = float(np.max(np.abs(start - prev))) if p else 0.0
            size = 1.0 + (float(np.max(np.abs(start))) if p else 0.0)
            if step <= REFINE_TOL * size or extra >= REFINE_MAXIT or (
                    dev > devold + 1e-12 * (abs(devold) + 0.1)):
                coef = start
                break
        devold = dev
        coef = coefold = start
    return Irls(coef, eta, mu, dev, it_r if converged else it, converged, extra)


def wls(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares ``min |A x - b|`` (full column rank checked by the caller): the normal
    equations by Cholesky (an IRLS step need not be exact: the fixed point, the score equation,
    is the same), QR-based ``lstsq`` when they are too ill-conditioned for it."""
    try:
        c = linalg.cho_factor(A.T @ A, check_finite=False)
        sol = linalg.cho_solve(c, A.T @ b, check_finite=False)
        d = np.abs(np.diag(c[0]))  # (max/min)^2 bounds the condition number from below
        if np.all(np.isfinite(sol)) and d.min() > 0 and (d.max() / d.min()) ** 2 < 1e8:
            return np.asarray(sol, dtype=float)
    except linalg.LinAlgError:
        pass
    sol, *_ = linalg.lstsq(A, b, lapack_driver="gelsy", check_finite=False)
    return np.asarray(sol, dtype=float)


# --------------------------------------------------------------------------------------------
# design


@dataclass
class GlmDesign:
    spec: ModelSpec
    data: pd.DataFrame
    y: np.ndarray  # proportion (binomial) or count
    weights: np.ndarray  # trials (binomial) or 1
    offset: np.ndarray
    has_offset: bool
    X: np.ndarray
    names: list[str]
    term_of: list[str]
    codes: dict[str, np.ndarray]
    levels: dict[str, list[str]]
    covariate_means: dict[str, float]
    n_dropped: int = 0


def design_matrix(spec: ModelSpec, data: pd.DataFrame, codes: dict[str, np.ndarray],
                   levels: dict[str, list[str]]) -> tuple[np.ndarray, list[str], list[str]]:
    """The treatment-coded design in R's column order, its column names and their terms."""
    n = len(data)
    names, term_of, X_idx, X_val = fixed_design(spec, codes, levels, n, data)
    X = np.zeros((n, len(names)))
    rows = np.arange(n)
    for j in range(X_idx.shape[1]):
        np.add.at(X, (rows, X_idx[:, j]), X_val[:, j])
    # R's model.matrix orders the columns of an interaction with its first factor fastest
    order = np.arange(len(names))
    owner = np.array(term_of)
    for t in spec.fixed:
        cats = t.categorical_factors
        cols = np.flatnonzero(owner == t.name)
        sizes = [len(levels[f]) - 1 for f in cats]
        if len(cats) > 1 and cols.size == int(np.prod(sizes)):
            order[cols] = cols[np.arange(cols.size).reshape(sizes).transpose(
                tuple(range(len(sizes)))[::-1]).ravel()]
    return X[:, order], [names[i] for i in order], [term_of[i] for i in order]


def sum_coded(d: GlmDesign) -> tuple[np.ndarray, list[str]]:
    """The design with sum-to-zero contrasts (car's type III): columns and their term."""
    spec = d.spec
    present = {t.key for t in spec.fixed}
    n = len(d.y)
    cols = [np.ones((n, 1))] if spec.intercept else []
    owner = ["(Intercept)"] if spec.intercept else []
    nlev = {f: len(v) for f, v in d.levels.items()}
    values = {f: _design.covariate_values(d.data, f) for f in spec.covariates}
    for t in spec.fixed:
        block = _design.term_columns(t, {f: d.codes[f] for f in t.categorical_factors}
                                     if t.categorical_factors else {}, nlev, values,
                                     _design.coding(t, present, spec.intercept), contrasts="sum")
        cols.append(block)
        owner += [t.name] * block.shape[1]
    return np.hstack(cols), owner


def glm_design(spec: ModelSpec, data: pd.DataFrame, fam: Any, trials: Any,
                offset: str | None) -> GlmDesign:
    if spec.random:
        raise FormulaError(
            f"irm.anova fits fixed effects only, but the model has random term(s) "
            f"{', '.join(map(str, spec.random))}. Use irm.mixed(..., family={fam.name!r}) for "
            "a generalised linear mixed model.", spec.formula)
    if not spec.fixed:
        raise FormulaError(
            f"the model {str(spec)!r} has no term to test; add factors like 'topic + system'.",
            spec.formula)
    if not spec.intercept:
        raise DesignError(
            f"irm.anova needs a model with an intercept; {str(spec)!r} removes it. Drop the "
            "'0 +' / '- 1'.")
    if spec.transform:
        raise DesignError(
            f"family={fam.name!r} models the response through its link; the response "
            f"{spec.response_label} is transformed as well. Give the untransformed response "
            f"(e.g. {spec.response} ~ ...): the {fam.link.name} link is the transformation.")
    missing = [f for f in spec.factors if f not in data.columns]
    if missing:
        raise FormulaError(
            f"factor(s) {', '.join(map(repr, missing))} are not columns of the data "
            f"(columns: {', '.join(map(str, data.columns))}). Fix the formula or rename the "
            "columns.", spec.formula)
    counts = spec.response_values(data)
    n = len(counts)
    if fam.takes_trials:
        if trials is None:
            w = np.ones(n)
        elif isinstance(trials, str):
            if trials not in data.columns:
                raise DataFormatError(
                    f"trials={trials!r} is not a column of the data (columns: "
                    f"{', '.join(map(str, data.columns))}); give a column name or a number "
                    "(P@10: trials=10).")
            w = np.asarray(pd.to_numeric(data[trials], errors="coerce"), dtype=float)
        elif isinstance(trials, (int, float, np.integer, np.floating)) and not isinstance(
                trials, bool):
            w = np.full(n, float(trials))
        else:
            raise ArgumentError(
                f"trials must be a column name or a number of trials (P@10: trials=10); got "
                f"{trials!r}.")
        with np.errstate(divide="ignore", invalid="ignore"):
            y = counts / w
        fam.check_response(y, w)
        if isinstance(trials, (int, float)) and not isinstance(trials, str) and (
                trials < 1 or trials != round(trials)):
            raise ArgumentError(f"trials must be a whole number >= 1; got {trials!r}.")
    else:
        if trials is not None:
            raise ArgumentError(
                f"trials= gives the number of trials of a binomial response; the {fam.name} "
                "family has none. Leave trials out (for counts out of a varying total use "
                "offset= with the log of the total).")
        w = np.ones(n)
        y = np.asarray(counts, dtype=float)
        fam.check_response(y, w)
    if offset is None:
        off = np.zeros(n)
    else:
        if not isinstance(offset, str):
            raise ArgumentError(
                f"offset must be a column name (on the link scale, e.g. the log of the "
                f"exposure); got {type(offset).__name__}.")
        if offset not in data.columns:
            raise DataFormatError(
                f"offset={offset!r} is not a column of the data (columns: "
                f"{', '.join(map(str, data.columns))}).")
        off = np.asarray(pd.to_numeric(data[offset], errors="coerce"), dtype=float)
        if not np.isfinite(off).all():
            bad = int((~np.isfinite(off)).sum())
            raise DataFormatError(
                f"the offset {offset!r} has {bad} missing or infinite value(s) (a log of 0?); "
                "drop those rows or fix the column (missing='drop' drops missing ones).")
    spec = _design.classify(spec, data)
    codes: dict[str, np.ndarray] = {}
    levels: dict[str, list[str]] = {}
    for f in spec.factors:
        if f in spec.numeric:
            continue
        c, lv = _design.encode(data[f])
        codes[f], levels[f] = c, [str(v) for v in lv]
        if len(lv) < 2:
            raise DesignError(
                f"factor {f!r} has {len(lv)} level ({', '.join(levels[f])}); a factor needs "
                "at least two levels to be tested. Drop it from the model.")
    X, names, term_of = design_matrix(spec, data, codes, levels)
    rank = int(np.linalg.matrix_rank(X))
    if rank < X.shape[1]:
        raise DesignError(
            f"the design of {spec} is rank deficient ({rank} of {X.shape[1]} columns): a term "
            "is aliased (R's NA coefficients), e.g. by empty cells of an interaction. Drop the "
            "term or fill the cells.")
    if X.shape[1] > n:
        raise DesignError(f"the model has {X.shape[1]} coefficients for {n} observations.")
    cov_means = {f: float(np.mean(_design.covariate_values(data, f))) for f in spec.covariates}
    return GlmDesign(spec, data, np.asarray(y, float), w, off, offset is not None, X, names,
                      term_of, codes, levels, cov_means)



def separation_message(d: GlmDesign, mu: np.ndarray, fam: Any) -> str | None:
    """R's warning 'fitted probabilities numerically 0 or 1 occurred' (binomial) or 'fitted
    rates numerically 0' (Poisson), naming the factor levels whose rows are all at the edge."""
    eps = 10 * np.finfo(float).eps
    if fam.name == "binomial":
        edge = (mu < eps) | (mu > 1 - eps)
        what = "fitted probabilities numerically 0 or 1"
    else:
        edge = mu < eps
        what = "fitted rates numerically 0"
    if not edge.any():
        return None
    where = []
    for f, codes in d.codes.items():
        n_lv = len(d.levels[f])
        tot = np.bincount(codes, minlength=n_lv)
        hit = np.bincount(codes[edge], minlength=n_lv)
        full = [d.levels[f][i] for i in np.flatnonzero((hit == tot) & (tot > 0))]
        if full:
            shown = ", ".join(full[:5]) + (", ..." if len(full) > 5 else "")
            where.append(f"{f} {shown}")
    place = ("; every row of " + " and of ".join(where)) if where else ""
    return (f"{what} occurred in {int(edge.sum())} of {len(mu)} rows{place}: the data separate "
            "those levels (e.g. a topic on which every run scores 0 or every run scores the "
            "maximum), so their coefficients run off to infinity and their standard errors "
            "mean nothing. Drop those levels (topics no run answers, or that every run "
            "answers perfectly), or fit a mixed model (irm.mixed) whose random effects shrink "
            "them.")
