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

from irmodels._validate import check_choice, did_you_mean
from irmodels.errors import ArgumentError, ConvergenceWarning, DataFormatError, DesignError
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._anova_fit import drop_missing, refuse_pooled
from irmodels.models._family import family as get_family
from irmodels.models._family import family_names
from irmodels.models._glm_fit import (
    EPSILON,
    MAXIT,
    GlmDesign,
    Irls,
    glm_design,
    irls,
    separation_message,
    sum_coded,
)
from irmodels.models._glmm_report import glm_section
from irmodels.models._link_means import means_frame, model_link, response_cov, response_means
from irmodels.models._mixed_design import coding_row
from irmodels.models.base import FittedModel, OptSummary

__all__ = ["GlmResult", "dispatch", "fit_glm", "GLM_FAMILIES", "EPSILON", "MAXIT"]

#: Families ``irm.anova`` fits as GLMs (the beta family has a precision parameter: irm.mixed).
GLM_FAMILIES = ("binomial", "poisson")

_NULL = "NULL"


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
    _design: GlmDesign = field(repr=False)
    _fit: Irls = field(repr=False)
    _vcov: np.ndarray = field(repr=False)
    _notes: tuple[str, ...] = ()
    #: fit_glm's trials, offset and missing, which refit() passes again
    _options: dict[str, Any] = field(default_factory=dict, repr=False)

    _means_kind = "marginal (link scale)"

    def _refit_to(self, data: pd.DataFrame) -> GlmResult:
        """``irm.anova(spec, data, family=...)`` with this fit's options (the public
        :meth:`refit`)."""
        return fit_glm(self.spec, data, family=self.family, link=self.link, **self._options)

    @property
    def _family(self) -> Any:
        # rebuilt from the names (a Family holds functions: the result pickles without it)
        return get_family(self.family, self.link)

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
                acc += coding_row(spec, levels, {factor: lv, **dict(zip(others, combo))},
                                   names, at)
                count += 1
            rows.append(acc / count)
        return np.array(rows), list(levels[factor])

    def marginal_means(self, factor: str = "system", *,
                       scale: Literal["link", "response"] = "link") -> pd.Series:
        """Estimated marginal means of a factor, as ``emmeans(fit, ~ factor)``.

        The linear predictor averaged with equal weights over the levels of the other factors
        (covariates and the offset at their means), on the link scale (default), or
        back-transformed to the response scale (``scale="response"``: probabilities, rates;
        emmeans' ``type = "response"``). A Series indexed by level, named ``mean``.
        """
        M, labels = self._mm_matrix(factor)
        eta = M @ self.coefficients.to_numpy() + self._offset_at()
        link = model_link(self, scale)
        vals = eta if link is None else response_means(eta, link)
        return pd.Series(vals, index=pd.Index(labels, name=factor), name="mean")

    def _offset_at(self) -> float:
        return float(np.mean(self._design.offset)) if self._design.has_offset else 0.0

    def marginal_means_cov(self, factor: str = "system", *,
                           scale: Literal["link", "response"] = "link") -> pd.DataFrame:
        """Covariance of :meth:`marginal_means` (on the response scale by the delta method)."""
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
        link = model_link(self, scale)
        return means_frame(self.marginal_means(factor), self.marginal_means_cov(factor), link,
                           level=level)

    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        """``inf`` for every row of ``L``: contrasts of a GLM's means are z tests (emmeans'
        ``df = Inf``)."""
        self._mm_matrix(factor)
        return np.full(np.atleast_2d(np.asarray(L, dtype=float)).shape[0], np.inf)

    def _pairwise_df(self, D: np.ndarray, factor: str) -> np.ndarray:
        return self.contrast_df(D, factor)  # inf: z tests (the base would use df_resid)

    # ---- analysis of deviance -------------------------------------------------------------------
    def _refit_deviance(self, X: np.ndarray) -> float:
        d = self._design
        if X.shape[1] == 0:
            return float(np.sum(self._family.deviance_resid(
                d.y, np.asarray(self._family.link.linkinv(d.offset), float), d.weights)))
        return irls(X, d.y, d.weights, d.offset, self._family).deviance

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
                X, owner_list = sum_coded(d)
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

    # ---- display ------------------------------------------------------------------------------
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

    def to_section(self, *, digits: int = 4) -> Any:
        """The report section (``irm.report(fit)``): :mod:`irmodels.models._glmm_report`."""
        return glm_section(self, digits=digits)

    def __repr__(self) -> str:
        return (f"<GlmResult {self.spec}, family={self.family!r}, link={self.link!r}, "
                f"nobs={self.n_obs}, deviance={self.deviance:.6g}, df_resid={self.df_resid}>")


def _chisq_sf(x: float, df: float) -> float:
    if not df > 0:
        return float("nan")
    return float(chdtrc(df, max(x, 0.0)))


# --------------------------------------------------------------------------------------------
# fitting


def fit_glm(model: str | ModelSpec, data: pd.DataFrame, *, family: Any, link: str | None = None,
            trials: Any = None, offset: str | None = None,
            missing: Literal["raise", "drop"] = "raise", _stacklevel: int = 2) -> GlmResult:
    """Fit a GLM (the engine of ``irm.anova(..., family=...)``; see the module notes)."""
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
    d = glm_design(spec, data, fam, trials, offset)
    d.n_dropped = n_dropped
    spec = d.spec
    fit = irls(d.X, d.y, d.weights, d.offset, fam)
    notes = []
    if not fit.converged:
        msg = (f"the IRLS fit did not converge in {MAXIT} iterations (R's glm.fit: 'algorithm "
               "did not converge'); the estimates are not the maximum. Check for separation "
               "(levels with every score 0 or at the maximum).")
        notes.append(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=_stacklevel + 1)
    sep = separation_message(d, fit.mu, fam)
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
        null_dev = irls(np.ones((n, 1)), d.y, d.weights, d.offset, fam).deviance
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
        _notes=tuple(notes), _options={"trials": trials, "offset": offset, "missing": missing})


def dispatch(model: Any, data: Any, family: Any, link: Any, trials: Any, offset: Any,
                  ss_type: Any, method: Any, aliased: Any, missing: Any) -> GlmResult | None:
    """``irm.anova(..., family=)``: the GLM of :mod:`irmodels.models._glm`, or None for the
    Gaussian family (today's least-squares path, which refuses a link, trials and offset)."""
    if family is None or family == "gaussian":
        given = [f"{k}={v!r}" for k, v in (("link", link), ("trials", trials),
                                           ("offset", offset)) if v is not None]
        if given and not (family == "gaussian" and link == "identity" and len(given) == 1):
            raise ArgumentError(
                f"{', '.join(given)} belong to a generalised linear model; the least-squares "
                "ANOVA (family=None or 'gaussian') has the identity link, one trial per row and "
                "no offset. Pass family='binomial' or 'poisson'.")
        return None
    choices = ("gaussian", *family_names())
    if not isinstance(family, str) or family not in choices:
        raise ArgumentError(f"family must be one of {', '.join(map(repr, choices))}; got "
                            f"{family!r}{did_you_mean(family, choices)}.")
    fixed = [f"{k}={v!r}" for k, v, dflt in (("ss_type", ss_type, None), ("method", method, "auto"),
                                              ("aliased", aliased, "raise")) if v != dflt]
    if fixed:
        raise ArgumentError(
            f"{', '.join(fixed)} apply to the least-squares ANOVA; a GLM (family={family!r}) is "
            "fitted by IRLS and its terms tested by deviance: use fit.anova(type=1 | 2 | 3) on "
            "the result.")
    return fit_glm(model, data, family=family, link=link, trials=trials, offset=offset,
                   missing=missing, _stacklevel=3)
