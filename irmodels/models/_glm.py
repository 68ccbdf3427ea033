"""Generalised linear models without random effects: ``irm.anova(model, data, family=...)`` ->
:class:`GlmResult`.

The model: ``g(E[y]) = X b + offset`` with ``y`` from a binomial (successes of ``trials``,
read as the proportion ``y = successes / trials`` with prior weights ``trials``, as R's
``cbind(s, n - s)``) or a Poisson family (:mod:`irmodels.models._family`), ``X`` the fixed
design with treatment contrasts (R's default coding, so the coefficients are R's).

The fit is R's ``glm.fit``: iteratively reweighted least squares from R's starting values
(``mustart``), working response ``z = eta - offset + (y - mu) / mu'(eta)`` and weights
``w = trials mu'(eta)^2 / V(mu)``, step halving when the deviance is not finite, and R's rule
``|dev - dev_old| / (|dev| + 0.1) < 1e-8`` (at most 25 iterations, else a
:class:`~irmodels.errors.ConvergenceWarning`). The iterations then go on until the
coefficients stop changing (relative change below 1e-11, at most 50 more): R's rule alone stops
up to ~1e-7 away from the maximum, and the results here match R's ``glm`` run to convergence
(``glm.control(epsilon = 1e-14)``) to 1e-8. The dispersion is 1 (binomial, Poisson): Wald
tests are z tests, as ``summary(glm)``.

Analysis of deviance (:meth:`GlmResult.anova`): type 1 is R's sequential
``anova(fit, test = "Chisq")``; types 2 and 3 are ``car::Anova(fit, type = 2 | 3, test =
"LR")``, likelihood-ratio tests of each term against the model without it (type 3 with
sum-to-zero contrasts, so that main effects are tested at the average of the other factors'
levels; on additive models types 2 and 3 are ``drop1(fit, test = "Chisq")``).

Marginal means (:meth:`GlmResult.marginal_means`) are emmeans': the linear predictor averaged
with equal weights over the levels of the other factors (covariates and the offset at their
means), on the link scale; on the response scale and their contrasts see
:mod:`irmodels.models._link_means`.

References: McCullagh & Nelder (1989), *Generalized linear models*, 2nd ed., ch. 2 and 4; R's
``glm.fit`` and ``anova.glm``; Fox & Weisberg (2019), *An R companion to applied regression*
(``car::Anova``); Lenth, *emmeans*.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import linalg
from scipy.special import chdtrc, ndtr

from irmodels._validate import check_choice
from irmodels.errors import (
    ArgumentError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
    FormulaError,
    ModelError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models.base import FittedModel, OptSummary

__all__ = ["GlmResult", "fit_glm", "GLM_FAMILIES", "EPSILON", "MAXIT"]

#: Families ``irm.anova`` fits as GLMs (the beta family has a precision parameter: irm.mixed).
GLM_FAMILIES = ("binomial", "poisson")
#: R's ``glm.control()`` defaults: the convergence rule and the iteration limit.
EPSILON = 1e-8
MAXIT = 25
#: After R's rule: iterate until the coefficients change by less than this (relative).
REFINE_TOL = 1e-11
REFINE_MAXIT = 50

_NULL = "NULL"


# --------------------------------------------------------------------------------------------
# IRLS (R's glm.fit)


@dataclass
class _Irls:
    coef: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    deviance: float
    iterations: int  # at R's rule
    converged: bool
    refine_iterations: int


def _irls(X: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray, family: Any,
          *, epsilon: float = EPSILON, maxit: int = MAXIT) -> _Irls:
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
            start = _wls(X[good] * w[:, None], z * w)
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
    return _Irls(coef, eta, mu, dev, it_r if converged else it, converged, extra)


def _wls(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares ``min |A x - b|`` (full column rank checked by the caller)."""
    sol, *_ = linalg.lstsq(A, b, lapack_driver="gelsy", check_finite=False)
    return np.asarray(sol, dtype=float)


# --------------------------------------------------------------------------------------------
# design


@dataclass
class _GlmDesign:
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


def _design_matrix(spec: ModelSpec, data: pd.DataFrame, codes: dict[str, np.ndarray],
                   levels: dict[str, list[str]]) -> tuple[np.ndarray, list[str], list[str]]:
    from irmodels.models._mixed_design import _fixed_design

    n = len(data)
    names, term_of, X_idx, X_val = _fixed_design(spec, codes, levels, n, data)
    X = np.zeros((n, len(names)))
    rows = np.arange(n)
    for j in range(X_idx.shape[1]):
        np.add.at(X, (rows, X_idx[:, j]), X_val[:, j])
    return X, names, term_of


def _sum_coded(d: _GlmDesign) -> tuple[np.ndarray, list[str]]:
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


def _glm_design(spec: ModelSpec, data: pd.DataFrame, fam: Any, trials: Any,
                offset: str | None) -> _GlmDesign:
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
    X, names, term_of = _design_matrix(spec, data, codes, levels)
    rank = int(np.linalg.matrix_rank(X))
    if rank < X.shape[1]:
        raise DesignError(
            f"the design of {spec} is rank deficient ({rank} of {X.shape[1]} columns): a term "
            "is aliased (R's NA coefficients), e.g. by empty cells of an interaction. Drop the "
            "term or fill the cells.")
    if X.shape[1] > n:
        raise DesignError(f"the model has {X.shape[1]} coefficients for {n} observations.")
    cov_means = {f: float(np.mean(_design.covariate_values(data, f))) for f in spec.covariates}
    return _GlmDesign(spec, data, np.asarray(y, float), w, off, offset is not None, X, names,
                      term_of, codes, levels, cov_means)


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True, repr=False, eq=False)
class GlmResult(FittedModel):
    """A generalised linear model fitted by :func:`irmodels.anova` with ``family=`` (see the
    module notes of :mod:`irmodels.models._glm`).

    Attributes
    ----------
    spec : ModelSpec
    family : str
        ``"binomial"`` or ``"poisson"``.
    link : str
        The link's name (``"logit"``, ``"probit"``, ``"log"``, ...).
    n_obs : int
    coefficients : Series
        The estimates, indexed by R's coefficient names (treatment contrasts).
    deviance, null_deviance : float
        Residual deviance and the deviance of the intercept-only model (with the offset).
    df_resid, df_null : int
        Their degrees of freedom.
    loglik, aic, bic : float
        Log-likelihood with its constants and R's information criteria.
    converged : bool
        Whether R's rule was met within 25 iterations.
    iterations : int
        IRLS iterations to R's rule (R's ``fit$iter``).

    Examples
    --------
    P@10 of three TREC-8 runs as relevant documents out of 10 (a logistic model of topic and
    system; topics on which every run finds nothing, or everything, would be separated):

    >>> import irmodels as irm
    >>> d = irm.datasets.load("adhoc8", "P@10")
    >>> d = d[d["system"].isin(["run4", "run95", "run122"])].copy()
    >>> d["rel"] = (d["score"] * 10).round()
    >>> d = d[d.groupby("topic", observed=True)["rel"].transform("sum").between(1, 29)]
    >>> fit = irm.anova("rel ~ topic + system", d, family="binomial", trials=10)
    >>> fit
    <GlmResult rel ~ topic + system, family='binomial', link='logit', nobs=150, deviance=214.355, df_resid=98>
    >>> fit.anova()[["df", "deviance", "p"]].round(4)
              df  deviance    p
    term
    NULL     NaN       NaN  NaN
    topic   49.0  321.8220  0.0
    system   2.0  183.2232  0.0
    >>> fit.marginal_means_table("system", scale="response").round(3)  # P(relevant)
             mean     se  lower  upper
    system
    run4    0.531  0.026  0.479  0.582
    run95   0.844  0.017  0.807  0.875
    run122  0.409  0.026  0.360  0.460
    >>> fit.tukey("system", scale="response").pairs[["a", "b", "ratio", "p_adj"]].round(4)
           a       b   ratio   p_adj
    0   run4   run95  0.2090  0.0000
    1   run4  run122  1.6366  0.0021
    2  run95  run122  7.8317  0.0000
    """

    spec: ModelSpec
    family: str
    link: str
    n_obs: int
    coefficients: pd.Series
    deviance: float
    null_deviance: float
    df_resid: int
    df_null: int
    loglik: float
    aic: float
    bic: float
    converged: bool
    iterations: int
    _design: _GlmDesign = field(repr=False)
    _fit: _Irls = field(repr=False)
    _vcov: np.ndarray = field(repr=False)
    _notes: tuple[str, ...] = ()

    _means_kind = "marginal (link scale)"

    @property
    def _family(self) -> Any:
        # rebuilt from the names (a Family holds functions: the result pickles without it)
        from irmodels.models._family import family

        return family(self.family, self.link)

    # ---- the fit vocabulary ------------------------------------------------------------------
    @property
    def data(self) -> pd.DataFrame:  # type: ignore[override]
        """The data the model was fitted to (not copied)."""
        return self._design.data

    @property
    def nobs(self) -> int:
        """Number of observations (rows)."""
        return self.n_obs

    @property
    def df_model(self) -> float:  # type: ignore[override]
        """Coefficients besides the intercept."""
        return float(len(self.coefficients) - 1)

    @property
    def opt_summary(self) -> OptSummary:
        """IRLS: iterations to R's rule, the norm of the score ``X' W (z - eta)`` at the
        estimate."""
        return OptSummary(method="IRLS", iterations=self.iterations,
                          gradient_norm=float(np.linalg.norm(self._score())),
                          converged=self.converged, boundary=False)

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats: non-convergence, fitted probabilities or rates of 0 or 1."""
        return self._notes

    def _score(self) -> np.ndarray:
        d, f = self._design, self._fit
        link = self._family.link
        me = np.asarray(link.mu_eta(f.eta), dtype=float)
        return d.X.T @ (d.weights * (d.y - f.mu) * me / self._family.variance(f.mu))

    @property
    def vcov(self) -> pd.DataFrame:
        """Covariance of the coefficients, ``(X' W X)^{-1}`` (dispersion 1)."""
        names = list(self.coefficients.index)
        return pd.DataFrame(self._vcov, index=names, columns=names)

    @property
    def fixed(self) -> pd.DataFrame:
        """The coefficients with Wald z tests, as ``summary(glm)``.

        Returns
        -------
        DataFrame
            Indexed by coefficient (R's names), columns

            - ``estimate``: the coefficient;
            - ``se``: its standard error;
            - ``z``: ``estimate / se``;
            - ``p``: two-sided p-value of ``z``.
        """
        est = self.coefficients.to_numpy()
        se = np.sqrt(np.diag(self._vcov))
        z = est / se
        return pd.DataFrame({"estimate": est, "se": se, "z": z, "p": 2 * ndtr(-np.abs(z))},
                            index=pd.Index(self.coefficients.index, name="coefficient"))

    def fitted(self, scale: Literal["response", "link"] = "response") -> np.ndarray:
        """Fitted values per row: the mean ``mu`` (a proportion for the binomial family, as R's
        ``fitted(glm)``) or the linear predictor ``eta`` with the offset (``scale="link"``)."""
        check_choice(scale, "scale", ("response", "link"))
        return (self._fit.mu if scale == "response" else self._fit.eta).copy()

    def residuals(self, type: Literal["response", "deviance", "pearson", "working"] = "response"
                  ) -> np.ndarray:
        """Residuals per row, as R's ``residuals(glm, type)``.

        ``"response"`` (default here, ``y - fitted()`` as every fit's ``residuals()``; R's
        default is ``"deviance"``): ``y - mu`` with ``y`` the proportion for the binomial
        family; ``"deviance"``: ``sign(y - mu) sqrt(d_i)`` with ``d_i`` the unit deviance times
        the trials; ``"pearson"``: ``(y - mu) sqrt(trials / V(mu))``; ``"working"``:
        ``(y - mu) / mu'(eta)``.
        """
        check_choice(type, "type", ("response", "deviance", "pearson", "working"))
        d, f, fam = self._design, self._fit, self._family
        r = d.y - f.mu
        if type == "response":
            return r
        if type == "deviance":
            return np.sign(r) * np.sqrt(np.maximum(fam.deviance_resid(d.y, f.mu, d.weights), 0))
        if type == "pearson":
            return r * np.sqrt(d.weights) / np.sqrt(fam.variance(f.mu))
        return r / np.asarray(fam.link.mu_eta(f.eta), dtype=float)

    # ---- marginal means ------------------------------------------------------------------------
    def _mm_matrix(self, factor: str) -> tuple[np.ndarray, list[str]]:
        from irmodels.models._mixed_design import _coding_row

        spec = self.spec
        cov = tuple(spec.covariates)
        fixed_factors = [f for t in spec.fixed for f in t.factors if f not in cov]
        if not isinstance(factor, str) or factor not in fixed_factors:
            raise DesignError(
                f"{factor!r} is not a factor of {spec}; marginal means exist for its factors ("
                + (", ".join(dict.fromkeys(fixed_factors)) or "none") + ").")
        levels = self._design.levels
        names = list(self.coefficients.index)
        others = [f for f in dict.fromkeys(fixed_factors) if f != factor]
        at = self._design.covariate_means
        rows = []
        for lv in range(len(levels[factor])):
            acc = np.zeros(len(names))
            count = 0
            for combo in (np.ndindex(*[len(levels[f]) for f in others]) if others else [()]):
                acc += _coding_row(spec, levels, {factor: lv, **dict(zip(others, combo))},
                                   names, at)
                count += 1
            rows.append(acc / count)
        return np.array(rows), list(levels[factor])

    def marginal_means(self, factor: str = "system",
                       scale: Literal["link", "response"] = "link") -> pd.Series:
        """Estimated marginal means of a factor, as ``emmeans(fit, ~ factor)``.

        The linear predictor averaged with equal weights over the levels of the other factors
        (covariates and the offset at their means), on the link scale (default), or
        back-transformed to the response scale (``scale="response"``: probabilities, rates;
        emmeans' ``type = "response"``). A Series indexed by level, named ``mean``.
        """
        from irmodels.models._link_means import model_link, response_means

        M, labels = self._mm_matrix(factor)
        eta = M @ self.coefficients.to_numpy() + self._offset_at()
        link = model_link(self, scale)
        vals = eta if link is None else response_means(eta, link)
        return pd.Series(vals, index=pd.Index(labels, name=factor), name="mean")

    def _offset_at(self) -> float:
        return float(np.mean(self._design.offset)) if self._design.has_offset else 0.0

    def marginal_means_cov(self, factor: str = "system",
                           scale: Literal["link", "response"] = "link") -> pd.DataFrame:
        """Covariance of :meth:`marginal_means` (on the response scale by the delta method)."""
        from irmodels.models._link_means import model_link, response_cov

        M, labels = self._mm_matrix(factor)
        cov = M @ self._vcov @ M.T
        link = model_link(self, scale)
        if link is not None:
            cov = response_cov(M @ self.coefficients.to_numpy() + self._offset_at(), cov, link)
        return pd.DataFrame(cov, index=pd.Index(labels, name=factor),
                            columns=pd.Index(labels, name=factor))

    def marginal_means_table(self, factor: str = "system", *,
                             scale: Literal["link", "response"] = "link",
                             level: float = 0.95) -> pd.DataFrame:
        """Marginal means with standard errors and Wald intervals, as ``summary(emmeans(fit,
        ~ factor, type = ...))`` (see :func:`irmodels.models._link_means.means_frame`).

        Returns
        -------
        DataFrame
            Indexed by level; columns ``mean`` (on the scale asked for), ``se`` (delta method
            on the response scale), ``lower``, ``upper`` (the link-scale interval,
            back-transformed on the response scale).
        """
        from irmodels.models._link_means import means_frame, model_link

        link = model_link(self, scale)
        return means_frame(self.marginal_means(factor), self.marginal_means_cov(factor), link,
                           level=level)

    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        """``inf`` for every row of ``L``: contrasts of a GLM's means are z tests (emmeans'
        ``df = Inf``)."""
        self._mm_matrix(factor)
        return np.full(np.atleast_2d(np.asarray(L, dtype=float)).shape[0], np.inf)

    # ---- analysis of deviance -------------------------------------------------------------------
    def _refit_deviance(self, X: np.ndarray) -> float:
        d = self._design
        if X.shape[1] == 0:
            return float(np.sum(self._family.deviance_resid(
                d.y, np.asarray(self._family.link.linkinv(d.offset), float), d.weights)))
        return _irls(X, d.y, d.weights, d.offset, self._family).deviance

    def anova(self, type: Literal[1, 2, 3] = 1) -> pd.DataFrame:
        """Analysis of deviance with likelihood-ratio (chi-square) tests.

        Parameters
        ----------
        type : {1, 2, 3}
            1 (default): sequential, R's ``anova(fit, test = "Chisq")``: each term added in
            formula order; a first row ``NULL`` holds the intercept-only model. 2 and 3:
            ``car::Anova(fit, type = 2 | 3, test = "LR")``: each term against the model without
            it (type 2: without the terms that contain it either; type 3: every other term kept,
            sum-to-zero contrasts).

        Returns
        -------
        DataFrame
            Indexed by term (``term``), columns

            - ``df``: the term's degrees of freedom;
            - ``deviance``: the likelihood-ratio statistic (the drop in deviance due to the
              term; R's ``Deviance``, car's ``LR Chisq``);
            - ``df_resid``: residual df of the model with the term (type 1) or without it
              (types 2 and 3);
            - ``resid_deviance``: the deviance of that model;
            - ``p``: upper chi-square tail of ``deviance`` on ``df``.
        """
        if isinstance(type, bool) or type not in (1, 2, 3):
            raise ArgumentError(f"type must be 1, 2 or 3; got {type!r}.")
        d = self._design
        terms = [t.name for t in self.spec.fixed]
        n = len(d.y)
        rows: list[dict[str, float]] = []
        index: list[str] = []
        if type == 1:
            owner = np.array(d.term_of)
            keep = owner == "(Intercept)"
            prev_dev = self.null_deviance
            prev_df = self.df_null
            rows.append({"df": np.nan, "deviance": np.nan, "df_resid": float(prev_df),
                         "resid_deviance": prev_dev, "p": np.nan})
            index.append(_NULL)
            for i, t in enumerate(terms):
                keep = keep | (owner == t)
                dev = self.deviance if i == len(terms) - 1 else self._refit_deviance(d.X[:, keep])
                dfr = n - int(keep.sum())
                ddf = prev_df - dfr
                lr = prev_dev - dev
                rows.append({"df": float(ddf), "deviance": lr, "df_resid": float(dfr),
                             "resid_deviance": dev, "p": _chisq_sf(lr, ddf)})
                index.append(t)
                prev_dev, prev_df = dev, dfr
        else:
            if type == 3:
                X, owner_list = _sum_coded(d)
            else:
                X, owner_list = d.X, list(d.term_of)
            owner = np.array(owner_list)
            keys = {t.name: t.key for t in self.spec.fixed}
            for t in terms:
                if type == 3:
                    drop = owner == t
                    with_t = None
                else:
                    containing = [u for u in terms if u != t and keys[t] < keys[u]]
                    drop = np.isin(owner, [t, *containing])
                    with_t = np.isin(owner, containing)
                dev_without = self._refit_deviance(X[:, ~drop])
                dev_with = self.deviance if with_t is None or not with_t.any() else (
                    self._refit_deviance(X[:, ~with_t]))
                dfr = n - int((~drop).sum())
                ddf = int(drop.sum()) - (0 if with_t is None else int(with_t.sum()))
                lr = dev_without - dev_with
                rows.append({"df": float(ddf), "deviance": lr, "df_resid": float(dfr),
                             "resid_deviance": dev_without, "p": _chisq_sf(lr, ddf)})
                index.append(t)
        return pd.DataFrame(rows, index=pd.Index(index, name="term"),
                            columns=["df", "deviance", "df_resid", "resid_deviance", "p"])

    # ---- display ----------------------------------------------------------------------------------
    def _fit_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"nobs": [self.n_obs], "deviance": [self.deviance],
                             "df_resid": [self.df_resid], "null_deviance": [self.null_deviance],
                             "df_null": [self.df_null], "loglik": [self.loglik],
                             "aic": [self.aic], "bic": [self.bic],
                             "iterations": [self.iterations], "converged": [self.converged]})

    def _display_title(self) -> str:
        return (f"Generalised linear model ({self.family}, {self.link} link): {self.spec} "
                f"({self.n_obs} observations)")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables = [("Coefficients (Wald z)", self.fixed),
                  ("Analysis of deviance (sequential, chi-square tests)", self.anova())]
        if "system" in self._factor_candidates():
            tables.append(("Marginal means of system (response scale)",
                           self.marginal_means_table("system", scale="response")))
        tables.append(("Fit", self._fit_frame()))
        return tables

    def to_frame(self) -> pd.DataFrame:
        """:attr:`fixed`, tidy: one row per coefficient, its name in column ``coefficient``."""
        return self.fixed.reset_index()

    def __repr__(self) -> str:
        return (f"<GlmResult {self.spec}, family={self.family!r}, link={self.link!r}, "
                f"nobs={self.n_obs}, deviance={self.deviance:.6g}, df_resid={self.df_resid}>")


def _chisq_sf(x: float, df: float) -> float:
    if not df > 0:
        return float("nan")
    return float(chdtrc(df, max(x, 0.0)))


# --------------------------------------------------------------------------------------------
# fitting


def _separation(d: _GlmDesign, mu: np.ndarray, fam: Any) -> str | None:
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


def fit_glm(model: str | ModelSpec, data: pd.DataFrame, *, family: Any, link: str | None = None,
            trials: Any = None, offset: str | None = None,
            missing: Literal["raise", "drop"] = "raise", _stacklevel: int = 2) -> GlmResult:
    """Fit a GLM (the engine of ``irm.anova(..., family=...)``; see the module notes)."""
    from irmodels.models._anova_fit import drop_missing, refuse_pooled
    from irmodels.models._family import family as get_family

    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(
            f"data must be a pandas DataFrame (a long frame), got {type(data).__name__}")
    fam = get_family(family, link)
    if fam.name not in GLM_FAMILIES:
        raise ArgumentError(
            f"irm.anova fits the families {', '.join(map(repr, GLM_FAMILIES))} as GLMs; "
            f"family={fam.name!r} has a precision parameter: fit it with "
            f"irm.mixed(..., family={fam.name!r}).")
    spec = _design.resolve_model(model, [str(c) for c in data.columns])
    extra = [c for c in (trials if isinstance(trials, str) else None, offset)
             if isinstance(c, str)]
    data, n_dropped, _ = drop_missing(data, (*spec.columns, *extra), missing, "irm.anova")
    refuse_pooled(data, spec.factors)
    d = _glm_design(spec, data, fam, trials, offset)
    d.n_dropped = n_dropped
    spec = d.spec
    fit = _irls(d.X, d.y, d.weights, d.offset, fam)
    notes = []
    if not fit.converged:
        msg = (f"the IRLS fit did not converge in {MAXIT} iterations (R's glm.fit: 'algorithm "
               "did not converge'); the estimates are not the maximum. Check for separation "
               "(levels with every score 0 or at the maximum).")
        notes.append(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=_stacklevel + 1)
    sep = _separation(d, fit.mu, fam)
    if sep:
        notes.append(sep)
        warnings.warn(sep, ConvergenceWarning, stacklevel=_stacklevel + 1)
    if n_dropped:
        notes.append(f"{n_dropped} row(s) with a missing value in a column the model uses were "
                     "dropped (missing='drop').")
    # covariance: (X' W X)^{-1} at the estimate
    me = np.asarray(fam.link.mu_eta(fit.eta), dtype=float)
    W = d.weights * me ** 2 / fam.variance(fit.mu)
    Xw = d.X * np.sqrt(W)[:, None]
    _, R = linalg.qr(Xw, mode="economic")
    Rinv = linalg.solve_triangular(R, np.eye(R.shape[0]))
    vcov = Rinv @ Rinv.T
    n, p = d.X.shape
    # null deviance: the intercept-only model with the offset (R's glm refits it when there is
    # an offset; without one it is the weighted mean)
    if d.has_offset:
        null_dev = _irls(np.ones((n, 1)), d.y, d.weights, d.offset, fam).deviance
    else:
        wmu = np.full(n, float(np.sum(d.weights * d.y) / np.sum(d.weights)))
        null_dev = float(np.sum(fam.deviance_resid(d.y, wmu, d.weights)))
    ll = float(np.sum(fam.loglik_obs(d.y, fit.mu, d.weights)))
    k = p
    n_used = int(np.sum(d.weights > 0))
    return GlmResult(
        spec=spec, family=fam.name, link=fam.link.name, n_obs=n,
        coefficients=pd.Series(fit.coef, index=d.names, name="estimate"),
        deviance=fit.deviance, null_deviance=null_dev, df_resid=int(n_used - p),
        df_null=int(n_used - 1), loglik=ll, aic=-2 * ll + 2 * k,
        bic=-2 * ll + math.log(n_used) * k, converged=fit.converged,
        iterations=fit.iterations, _design=d, _fit=fit, _vcov=vcov,
        _notes=tuple(notes))
