"""Stage 4 of a linear mixed fit (lme4's ``mkMerMod``): :func:`mixed_result` -> :class:`MixedResult`.

The result class of ``irm.mixed`` for random-intercept models and the function that builds it
at the optimum of :func:`~irmodels.models._mixed_optimize.optimize_deviance`. Both are
re-exported by :mod:`irmodels.models.mixed`, where the fit (``irm.mixed``) and the
comparisons (``irm.compare_models``) are documented.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy.special import ndtri, stdtr  # not scipy.stats: importing it costs a command ~0.5 s

from irmodels._display import plot_text
from irmodels._section import figure_axes
from irmodels._threads import kernel_threads
from irmodels._validate import check_probability, renamed
from irmodels.errors import BoundaryFitWarning, DesignError, ModelError
from irmodels.formula.spec import ModelSpec
from irmodels.models import _reml
from irmodels.models._design import encode
from irmodels.models._mixed_anova import anova as _anova
from irmodels.models._mixed_design import (
    MixedDesign,
    check_exact_fit,
    coding_row,
    mixed_design,
)
from irmodels.models._mixed_deviance import DevianceFunction, deviance_function
from irmodels.models._mixed_df import satterthwaite_parts
from irmodels.models._mixed_optimize import MixedState, Optimum, optimize_deviance
from irmodels.models._mixed_plots import MixedResidualPlots
from irmodels.models._mixed_residuals import mixed_residuals
from irmodels.models.base import FittedModel, LinearMixedCounts, OptSummary

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._mixed_anova import MixedAnovaResult
    from irmodels.models._mixed_residuals import ResidualType
    from irmodels.stats.gtheory import GStudy

__all__ = ["BOUNDARY_TOL", "FIXED_COLUMNS", "SUMMARY_MAX_COEFFICIENTS", "MixedResult",
           "mixed_result"]

#: Columns of :attr:`MixedResult.fixed`, in this order.
FIXED_COLUMNS = ("estimate", "se", "df", "t", "p")

#: Coefficients shown by ``MixedResult.summary()`` (the rest are counted; all are in ``.fixed``).
SUMMARY_MAX_COEFFICIENTS = 10

#: Relative variance below which a component counts as estimated at the boundary (zero).
BOUNDARY_TOL = 1e-8


# --------------------------------------------------------------------------------------------
# result



@dataclass(frozen=True, repr=False, eq=False)
class MixedResult(MixedResidualPlots, LinearMixedCounts, FittedModel):
    """A fitted linear mixed model (see :func:`mixed`).

    Attributes
    ----------
    spec : ModelSpec
        The model that was fitted.
    method : {"REML", "ML"}
        Estimation criterion.
    residual : str or None
        The residual strata (``"topic:system"``) of a heteroscedastic fit, else None.
    n_obs : int
        Observations used.
    components : DataFrame
        The variance components (what :meth:`variance_components` returns, as
        :attr:`GStudy.components <irmodels.inference.gtheory.GStudy.components>`). Index:
        random terms in formula order then ``Residual``; columns ``variance`` (the
        estimate), ``sd`` (its square root), ``share`` (variance / sum of variances). In a
        heteroscedastic fit the ``Residual`` row holds the observation-weighted mean of the
        stratum variances.
    residual_variance : float or Series
        Residual variance; per stratum (indexed by stratum label) when heteroscedastic.
    variance_ratios : Series or None
        Heteroscedastic fits: residual variance of each stratum divided by that of the reference
        (first stratum in data order), i.e. ``sd_ratios ** 2``.
    sd_ratios : Series or None
        The same as ratios of standard deviations: nlme's ``varIdent`` coefficients.
    loglik, aic, bic, deviance : float
        Log-likelihood (restricted under REML), information criteria, and ``-2 * loglik``.
    converged : bool
        Whether the optimiser met its criterion (a closed-form fit is always converged).
    n_iter : int
        Optimiser iterations (0 for a closed-form fit).
    closed_form : bool
        True when the balanced-design ANOVA estimates were the answer.
    boundary : bool
        Whether some variance component is estimated at zero; ``boundary_components`` names them.
    random_effects : dict of str -> Series
        BLUPs (conditional modes) of each random term, indexed by level.
    """

    spec: ModelSpec
    method: Literal["REML", "ML"]
    residual: str | None
    n_obs: int
    components: pd.DataFrame
    residual_variance: Any
    variance_ratios: pd.Series | None
    sd_ratios: pd.Series | None
    loglik: float
    aic: float
    bic: float
    deviance: float
    converged: bool
    n_iter: int
    closed_form: bool
    boundary: bool
    boundary_components: tuple[str, ...]
    random_effects: dict[str, pd.Series]
    n_params: int
    fixed_estimates: pd.Series
    _state: MixedState = field(default=None)  # type: ignore[assignment]
    #: rows left out by ``missing="drop"`` (a missing value in a column the model uses)
    n_dropped: int = 0

    # -- the fit vocabulary (FittedModel) ------------------------------------------------------
    @property
    def data(self) -> pd.DataFrame | None:
        """The data the model was fitted to (not copied; None for a fit built without them)."""
        return self._state.data


    @cached_property
    def _conditional(self) -> tuple[np.ndarray, np.ndarray]:
        st = self._state
        f = _reml.evaluate(st.problem, st.theta, st.eta, self.method == "REML")
        resid = np.asarray(f.resid, dtype=float)
        return st.problem.y - resid, resid

    def fitted(self) -> np.ndarray:
        """Conditional fitted values ``X beta + Z b`` (fixed effects plus the predicted random
        effects), one per data row: lme4's ``fitted()``."""
        return self._conditional[0].copy()

    def residuals(self, type: ResidualType = "response") -> np.ndarray:
        """Residuals per data row, by ``type``: ``"response"`` (default, ``y - fitted()``,
        lme4's ``residuals``), ``"conditional"``, ``"marginal"``, ``"pearson"`` or
        ``"standardized"`` (:func:`irmodels.models._mixed_residuals.mixed_residuals`)."""
        if type == "response":
            return self._conditional[1].copy()
        return mixed_residuals(self, type)

    @cached_property
    def opt_summary(self) -> OptSummary:  # type: ignore[override]
        """How the variance parameters were found: ``method`` ``"closed form"`` (balanced
        ANOVA estimates) or ``"L-BFGS-B"``; ``iterations`` (:attr:`n_iter`); the norm of the
        projected gradient of the deviance at the optimum; ``converged``; ``boundary``; the
        optimiser's message."""
        st = self._state
        opt = st.optimum
        gnorm = 0.0
        if not self.closed_form and st.devfun is not None:
            x = np.concatenate([st.theta, st.eta if st.eta is not None else []])
            g = np.asarray(st.devfun.evaluate(x, gradient=True).gradient, dtype=float)
            K = len(st.theta)
            at_bound = np.zeros(g.shape, dtype=bool)
            at_bound[:K] = (x[:K] <= 0) & (g[:K] > 0)  # theta >= 0 held at 0
            gnorm = float(np.max(np.abs(np.where(at_bound, 0.0, g)), initial=0.0))
        elif not self.closed_form:
            gnorm = float("nan")
        return OptSummary(
            method="closed form" if self.closed_form else "L-BFGS-B", iterations=self.n_iter,
            gradient_norm=gnorm, converged=self.converged, boundary=self.boundary,
            message=(opt.message if opt is not None else ""))

    @property
    def _boundary_note(self) -> str:
        """The note (and the :class:`~irmodels.BoundaryFitWarning`) of a boundary fit."""
        bnd = ", ".join(self.boundary_components)
        return (f"the {self.method} estimate of the variance of {bnd} is zero (a boundary "
                "fit; the optimum lies on the edge of the parameter space, not a failed "
                f"convergence). The model is singular: consider dropping {bnd}.")

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats: a boundary fit (the text of its warning), a failed convergence,
        rows dropped for a missing value."""
        out = []
        if self.boundary:
            out.append(self._boundary_note)
        if not self.converged:  # the stage-3 warning when there was one
            opt = self._state.optimum if self._state is not None else None
            out.append(opt.warning if opt is not None and opt.warning else
                       "the optimiser did not meet its convergence criterion.")
        if self.n_dropped:
            out.append(f"{self.n_dropped} row(s) with a missing value in a column the model uses "
                       "were dropped (missing='drop').")
        return tuple(out)

    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        """Satterthwaite df of the contrasts ``L @ marginal_means(factor)`` (lmerTest's
        ``contest``): the rows of ``L`` mapped to the fixed effects through the marginal means'
        coefficients."""
        M, _ = self._mm_matrix(factor)
        return np.asarray(self._df_for(np.atleast_2d(np.asarray(L, dtype=float)) @ M), float)

    @property
    def residual_strata(self) -> str | None:  # type: ignore[override]
        """:attr:`residual` (the fit vocabulary's name): the strata of a heteroscedastic fit."""
        return self.residual

    def fixed_fitted(self) -> np.ndarray:
        """``X beta`` per data row (lme4's ``predict(fit, re.form = NA)``): the fixed effects'
        fitted value of each row's combination of fixed-factor levels. A model with numeric
        covariates refuses (DesignError)."""
        data = self.data
        if data is None:
            raise DesignError("this fit does not keep the rows it was fitted to; refit it with "
                              "irm.mixed(model, data).")
        names = list(self.fixed_estimates.index)
        beta = self.fixed_estimates.to_numpy()
        fixed_factors = sorted({f for t in self.spec.fixed for f in t.factors})
        # the encoding of every model (category order, else natural order)
        levels = {f: [str(v) for v in encode(data[f])[1]] for f in fixed_factors}
        codes = {}
        for f in fixed_factors:
            labels = {str(v): i for i, v in enumerate(levels[f])}
            codes[f] = np.array([labels[str(v)] for v in data[f].astype(str)])
        combos, inverse = np.unique(np.column_stack([codes[f] for f in fixed_factors]), axis=0,
                                    return_inverse=True)
        pred = np.array([coding_row(self.spec, levels, dict(zip(fixed_factors, map(int, row))),
                                    names) @ beta for row in combos])
        return pred[np.ravel(inverse)]

    def _refit_to(self, data: pd.DataFrame) -> MixedResult:
        """``irm.mixed(spec, data, method=, residual=)``'s stages (lme4's ``refit``; rows with
        a missing value raise, as ``missing="raise"``)."""
        design = mixed_design(self.spec, data, residual=self.residual)
        devfun = deviance_function(design, self.method)
        with kernel_threads(devfun.problem.r):  # BLAS threads by size, as irm.mixed
            opt = optimize_deviance(devfun)
            return mixed_result(design, devfun, opt)

    def variance_components(self) -> pd.DataFrame:
        """The variance components (a copy of :attr:`components`), as
        :meth:`AnovaResult.variance_components <irmodels.models.anova.AnovaResult.variance_components>`
        gives them: index component (random terms, then ``Residual``), columns ``variance``,
        ``sd``, ``share``."""
        return self.components.copy()

    def to_frame(self) -> pd.DataFrame:
        """The variance components, tidy: columns ``component, variance, sd, share``."""
        return self.components.reset_index()

    def information_criterion(self, convention: Literal["lme4", "nlme"] = "lme4") -> float:
        """BIC under a named convention: ``"lme4"`` uses ``log(n_obs)``; ``"nlme"`` uses
        ``log(n_obs - p)`` under REML (``p`` fixed effects) and ``log(n_obs)`` under ML.
        :attr:`bic` is the lme4 value for homoscedastic fits and the nlme value for
        heteroscedastic ones (the R function that fits each model)."""
        if convention not in ("lme4", "nlme"):
            raise ModelError(f"convention must be 'lme4' or 'nlme'; got {convention!r}")
        p = len(self.fixed_estimates)
        n = self.n_obs - p if (convention == "nlme" and self.method == "REML") else self.n_obs
        return self.deviance + self.n_params * math.log(n)

    # -- fixed effects -----------------------------------------------------------------------
    @cached_property
    def _satterthwaite(self) -> tuple[np.ndarray, np.ndarray]:
        """(Jacobian of Var(beta) / sigma^2 in the variance parameters, their asymptotic
        covariance), sigma measured relative to its estimate: use with :attr:`_vcov_unit`.
        Satterthwaite's df is invariant to both normalisations, which keep every quantity of
        order one whatever the response's scale (at 1e90, Var(beta)**2 overflows)."""
        st = self._state
        with kernel_threads(st["problem"].r):  # its deviance evaluations: threads set once
            return satterthwaite_parts(st["problem"], st["theta"], st["eta"], st["sigma"],
                                        self.method == "REML")

    @property
    def _vcov_unit(self) -> np.ndarray:
        """Covariance of the fixed effects divided by the residual variance (sigma^2)."""
        st = self._state
        return st["vcov"] / st["sigma"] ** 2

    def _df_for(self, L: np.ndarray) -> np.ndarray:
        """Satterthwaite df of the contrasts in the rows of ``L``."""
        jac, acov = self._satterthwaite
        vb = self._vcov_unit
        var = np.einsum("ij,jk,ik->i", L, vb, L)
        g = np.einsum("ij,pjk,ik->ip", L, jac, L)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = g / var[:, None]  # df = 2 var^2 / g'Ag, without var^2 (1e-320 for a slope on 1e80)
            den = np.einsum("ip,pq,iq->i", g, acov, g)
            df = 2.0 / den
        return np.where(np.isfinite(df) & (df > 0), df, np.nan)

    @cached_property
    def fixed(self) -> pd.DataFrame:
        """Fixed effects: index coefficient names as R prints them (``(Intercept)``,
        ``systems02``); columns ``estimate``, ``se`` (from the REML/ML covariance of the
        estimates), ``df`` (Satterthwaite, as lmerTest computes it: the Jacobian of the
        covariance of the estimates and the Hessian of the deviance in the variance parameters
        ``(theta, sigma[, log delta])``, both numerical), ``t`` and ``p`` (two-sided, t on df).
        """
        vb = self._state["vcov"]
        est = self.fixed_estimates.to_numpy()
        se = np.sqrt(np.diag(vb))
        df = self._df_for(np.eye(len(est)))
        t = est / se
        p = 2 * stdtr(df, -np.abs(t))  # = stats.t.sf(|t|, df)
        return pd.DataFrame({"estimate": est, "se": se, "df": df, "t": t, "p": p},
                            index=self.fixed_estimates.index)

    @property
    def vcov(self) -> pd.DataFrame:
        """Covariance matrix of the fixed-effect estimates."""
        idx = self.fixed_estimates.index
        return pd.DataFrame(self._state["vcov"], index=idx, columns=idx)

    def _mm_matrix(self, factor: str) -> tuple[np.ndarray, list[str]]:
        st = self._state
        names: list[str] = list(self.fixed_estimates.index)
        fixed_factors = [f for t in self.spec.fixed for f in t.factors]
        if factor not in fixed_factors:
            raise DesignError(
                f"{factor!r} is not a fixed factor of {self.spec}; marginal means exist for the "
                f"fixed factors ({', '.join(dict.fromkeys(fixed_factors)) or 'none'}). Make "
                f"{factor} a fixed term of the formula."
            )
        levels = st["levels"]
        cov = self.spec.covariates
        if factor in cov:
            raise DesignError(
                f"{factor!r} is a numeric covariate of {self.spec}; marginal means exist for "
                "factors (write C(x) to read a column as a factor)."
            )
        # covariates at their means, as emmeans does
        at = {f: float(np.mean(np.asarray(st["data"][f], dtype=float))) for f in cov}
        others = [f for f in dict.fromkeys(fixed_factors) if f != factor and f not in cov]
        grids = [range(len(levels[f])) for f in others]
        rows = []
        for lv in range(len(levels[factor])):
            acc = np.zeros(len(names))
            count = 0
            for combo in np.ndindex(*[len(g) for g in grids]) if others else [()]:
                assign = {factor: lv, **dict(zip(others, combo))}
                acc += coding_row(self.spec, levels, assign, names, at)
                count += 1
            rows.append(acc / count)
        return np.array(rows), levels[factor]

    def marginal_means(self, factor: str = "system") -> pd.Series:
        """Estimated marginal means of a fixed factor (averaged with equal weights over the
        levels of the other fixed factors, as emmeans does), indexed by level.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.marginal_means("system").round(4).tolist()
        [0.0823, 0.3504, 0.3539]
        """
        L, labels = self._mm_matrix(factor)
        return pd.Series(L @ self.fixed_estimates.to_numpy(), index=pd.Index(labels, name=factor),
                         name="mean")

    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        """Covariance matrix of :meth:`marginal_means` (from the fixed-effect covariance)."""
        L, labels = self._mm_matrix(factor)
        return pd.DataFrame(L @ self._state["vcov"] @ L.T, index=labels, columns=labels)

    # tukey() and dunnett() are FittedModel's (per-contrast Satterthwaite df by default)

    def anova(self, type: int = 3, *,
              ddf: Literal["satterthwaite", "kenward-roger"] = "satterthwaite"
              ) -> MixedAnovaResult:
        """F tests of the fixed terms, as lmerTest's ``anova(fit, type = 3, ddf = ...)``.

        Parameters
        ----------
        type : int
            3: type III hypotheses (each term's effects vanish, averaged with equal weights
            over the levels of the other fixed factors; SAS's and lmerTest's type III, whatever
            the coding).
        ddf : {"satterthwaite", "kenward-roger"}
            Denominator df: Satterthwaite's approximation as lmerTest's ``contestMD``, or
            Kenward-Roger as pbkrtest (REML, homoscedastic fits; adjusted covariance and scaled
            F).

        Returns
        -------
        MixedAnovaResult
            ``table`` indexed by ``term`` with columns ``F, num_df, den_df, p``; it indexes
            like the table (``res["p"]``) and has ``summary()``, ``to_frame()``, ``to_latex()``.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3", "sys4"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.anova().table.round(4)
                      F  num_df  den_df    p
        term
        system  97.4072       3   147.0  0.0
        """
        return _anova(self, type=type, ddf=ddf)

    def confint(self, method: Literal["profile", "bootstrap", "wald"] = "profile", *,
                level: float = 0.95, parm: Sequence[str] | None = None,
                n_resamples: int = 500, seed: Any = 0, backend: Any = "serial",
                n_workers: int | None = None, **deprecated: Any) -> pd.DataFrame:
        """Confidence intervals of the standard deviations and the fixed effects (lme4's
        ``confint``).

        Parameters
        ----------
        method : {"profile", "bootstrap", "wald"}
            ``"profile"``: likelihood-profile intervals as lme4's ``confint(method =
            "profile")`` (the ML deviance, also for REML fits, as lme4; each bound a root of the
            signed square root of the deviance difference). ``"bootstrap"``: parametric
            bootstrap percentile intervals (lme4's ``method = "boot"``), refits by the fit's
            criterion. ``"wald"``: ``estimate +- z se`` for the fixed effects, NaN for the
            standard deviations (as lme4).
        level : float
            Confidence level.
        parm : sequence of str, optional
            Rows to compute (component or coefficient names); all by default.
        n_resamples, seed, backend, n_workers
            Bootstrap replicates (was ``n_boot``, accepted for one release with a
            ``FutureWarning``), seed (the same seed gives the same intervals on every
            backend) and where they run (:func:`irmodels.parallel.map`).

        Returns
        -------
        DataFrame
            Index ``parameter``: the standard deviation of each random term (named as in
            :meth:`variance_components`), ``Residual`` (the residual SD), then the fixed
            effects; columns ``lower, upper``. A lower bound of 0 means the profile does not
            reach the critical value before the SD is zero.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.confint().round(4)
                      lower   upper
        parameter
        topic        0.1022  0.1642
        Residual     0.0854  0.1127
        (Intercept)  0.0370  0.1276
        systemsys2   0.2295  0.3067
        systemsys3   0.2330  0.3102
        >>> fit.confint("wald").round(4).loc["systemsys2"].tolist()
        [0.2295, 0.3067]
        """
        # here, not at import: _mixed_confint imports scipy.stats (~0.5 s), which the fit
        # and `irmodels mixed` do not need
        from irmodels.models._mixed_confint import confint

        n_boot = renamed(deprecated, "n_boot", "n_resamples", n_resamples, 500,
                         where="MixedResult.confint")
        return confint(self, method=method, level=level, parm=parm, n_boot=n_boot, seed=seed,
                       backend=backend, n_workers=n_workers)

    def gstudy(self, facets: Sequence[str] | None = None, data: pd.DataFrame | None = None,
               *, n_resamples: int = 500, seed: Any = 0, level: float = 0.95,
               backend: Any = "serial", n_workers: int | None = None,
               **deprecated: Any) -> GStudy:
        """The G-study of this fit (``irm.gstudy(fit)``) with bootstrap intervals of its ratios.

        Needed where no closed form exists (three-facet designs, unbalanced data): the
        variance components are re-estimated on ``n_resamples`` (was ``n_boot``, accepted for
        one release with a ``FutureWarning``) parametric-bootstrap responses
        (seeded, through :func:`irmodels.parallel.map`), the shares of variance get percentile
        limits at ``level`` (``share_lower``, ``share_upper`` in ``components``) and the
        D-study's ``Erho2`` and ``Phi`` limits come from the same draws (``dstudy(level=...)``).
        The random terms must be the facets (``(1|system) + (1|topic) + ...``).

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin([f"sys{i}" for i in range(1, 11)])]
        >>> fit = irm.mixed("score ~ (1|system) + (1|topic)", data)
        >>> gs = fit.gstudy(n_resamples=50, seed=1)
        >>> gs.components[["share", "share_lower", "share_upper"]].round(2)
                   share  share_lower  share_upper
        component
        system      0.20         0.10         0.34
        topic       0.61         0.48         0.72
        Residual    0.19         0.14         0.26
        """
        # here, not at import: _mixed_confint imports scipy.stats (see confint)
        from irmodels.models._mixed_confint import gstudy_with_intervals

        n_boot = renamed(deprecated, "n_boot", "n_resamples", n_resamples, 500,
                         where="MixedResult.gstudy")
        return gstudy_with_intervals(self, facets, data, n_boot=n_boot, seed=seed, level=level,
                                     backend=backend, n_workers=n_workers)

    def _refit_ml(self) -> MixedResult:
        """This model refitted by ML (``irm.mixed(spec, data, method="ML")``'s stages), without
        the boundary warning: its caller reports the refit's boundary itself."""
        design = mixed_design(self.spec, self._state.data, residual=self.residual)
        devfun = deviance_function(design, "ML")
        with kernel_threads(devfun.problem.r):  # BLAS threads by size, as irm.mixed
            opt = optimize_deviance(devfun)
            return mixed_result(design, devfun, opt, warn=False)

    # -- plot --------------------------------------------------------------------------------
    def conditional_sd(self, term: str | None = None) -> pd.Series:
        """Conditional standard deviations of the BLUPs of one random term, given the data and
        the estimates (lme4's ``ranef(fit, condVar = TRUE)``, as standard deviations).

        The conditional variance of the random effects ``b = Lambda u`` is
        ``sigma^2 Lambda A^-1 Lambda'`` with ``A = Lambda' Z' W Z Lambda + I`` (Bates et al.
        2015, section 3.3; the uncertainty of the fixed effects is not included, as in lme4).

        Parameters
        ----------
        term : str, optional
            A random term (``"topic"``, ``"topic:system"``); default ``topic`` when the model
            has it, else the first random term.

        Returns
        -------
        Series
            Indexed by the term's levels (the order of ``random_effects[term]``), named
            ``cond_sd``.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
        >>> sd = fit.conditional_sd("topic")
        >>> len(sd) == len(fit.random_effects["topic"]), bool((sd > 0).all())
        (True, True)
        """
        name = self._random_term(term)
        st = self._state
        pb = st.problem
        f = _reml.evaluate(pb, st.theta, st.eta, self.method == "REML")
        minv = _reml._minv_pattern(pb, f, ml=True)  # A^-1 on the pattern of T'WT
        diag = np.zeros(pb.q)
        on = (pb.pair_a == pb.pair_b) & (pb.pair_a < pb.q)
        diag[pb.pair_a[on]] = minv[on]
        off = 0
        for i, k in enumerate(st.order):
            size = pb.term_sizes[i]
            if self.spec.random[k].name == name:
                sd = st.sigma * abs(float(st.theta[i])) * np.sqrt(np.maximum(diag[off:off + size], 0))
                return pd.Series(sd, index=self.random_effects[name].index, name="cond_sd")
            off += size
        raise DesignError(f"no random term {name!r} in {self.spec}.")  # pragma: no cover

    def _random_term(self, term: str | None) -> str:
        names = [rt.name for rt in self.spec.random]
        if not names:
            raise DesignError(f"{self.spec} has no random term: there are no random effects to "
                              "show; fit a model with one, e.g. score ~ system + (1|topic).")
        if term is None:
            return "topic" if "topic" in names else names[0]
        if term not in names:
            raise DesignError(f"{term!r} is not a random term of {self.spec}; random terms: "
                              f"{', '.join(names)}.")
        return term

    def plot(self, term: str | None = None, *, level: float = 0.95, ax: Any = None) -> Any:
        """Caterpillar plot of one random term: the conditional modes (BLUPs) of its levels,
        sorted, each with the interval ``b +- z sqrt(conditional variance)``
        (:meth:`conditional_sd`), as lme4's ``dotplot(ranef(fit, condVar = TRUE))``.

        Parameters
        ----------
        term : str, optional
            A random term; default ``topic`` when the model has it, else the first one.
        level : float
            Coverage of the normal intervals.
        ax : matplotlib Axes, optional
            Draw into this Axes (the figure returned is then ``ax.figure``); by default a new
            figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
        >>> fig = fit.plot()
        >>> fig.axes[0].get_xlabel()
        'conditional mode of topic (95% interval)'
        """
        level = check_probability(level, "level")
        name = self._random_term(term)
        b = self.random_effects[name]
        sd = self.conditional_sd(name)
        order = np.argsort(b.to_numpy(), kind="stable")
        k = len(b)
        z = float(ndtri(0.5 + level / 2))
        fig, (ax,) = figure_axes(ax, figsize=(6.0, min(max(3.0, 0.9 + 0.16 * k), 12.0)),
                                 what="MixedResult.plot")
        y = np.arange(k)
        ax.errorbar(b.to_numpy()[order], y, xerr=z * sd.to_numpy()[order], fmt="o", ms=3,
                    lw=0.8, color="#4c72b0")
        ax.axvline(0, color="#666666", lw=0.8, ls="--")
        if k <= 60:
            ax.set_yticks(y, [plot_text(str(v)) for v in b.index[order]],
                          fontsize=8 if k <= 30 else 7)
            ax.set_ylabel(plot_text(name))
            ax.set_ylim(-0.8, k - 0.2)
        else:
            ax.set_yticks([])
            ax.set_ylabel(f"{k} levels of {plot_text(name)}, sorted")
        ax.set_xlabel(f"conditional mode of {plot_text(name)} ({100 * level:g}% interval)")
        ax.spines[["top", "right"]].set_visible(False)
        return fig

    # -- display -----------------------------------------------------------------------------
    def _display_title(self) -> str:
        kind = "closed form" if self.closed_form else (
            f"{self.n_iter} iterations" + ("" if self.converged else ", NOT converged"))
        het = f", residual by {self.residual}" if self.residual else ""
        b = f", boundary: {', '.join(self.boundary_components)}" if self.boundary else ""
        return (f"Linear mixed model fit by {self.method} ({kind}{het}{b}): {self.spec}\n"
                f"n = {self.n_obs}, logLik = {self.loglik:.4f}, AIC = {self.aic:.4f}, "
                f"BIC = {self.bic:.4f}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables: list[tuple[str, pd.DataFrame]] = []
        if self.spec.fixed:
            try:
                tables.append(("F tests of fixed effects (type III, Satterthwaite df)",
                               self.anova().table))
            except ModelError:  # e.g. numeric covariates: the coefficient table says it all
                pass
        fixed = self.fixed
        if len(fixed) > SUMMARY_MAX_COEFFICIENTS:
            more = len(fixed) - SUMMARY_MAX_COEFFICIENTS
            head = fixed.iloc[:SUMMARY_MAX_COEFFICIENTS]
            tail = pd.DataFrame(np.nan, columns=fixed.columns,
                                index=pd.Index([f"... {more} more (all in .fixed)"]))
            fixed = pd.concat([head, tail])
            fixed.index.name = self.fixed.index.name
            title = f"Fixed effects (first {SUMMARY_MAX_COEFFICIENTS} of {len(self.fixed)})"
        else:
            title = "Fixed effects"
        tables += [("Variance components", self.components), (title, fixed)]
        if self.sd_ratios is not None:
            r = pd.DataFrame({"sd_ratio": self.sd_ratios, "variance": self.residual_variance})
            tables.append(("Residual variance by stratum", r))
        return tables

    def __repr__(self) -> str:
        return (f"<MixedResult {self.method} {self.spec} n={self.n_obs} "
                f"logLik={self.loglik:.4f}{' heteroscedastic' if self.residual else ''}>")

# --------------------------------------------------------------------------------------------
# the stages of a fit (lme4's lFormula -> mkLmerDevfun -> optimizeLmer -> mkMerMod):
# stages 1-3 live in _mixed_design, _mixed_deviance and _mixed_optimize; stage 4 here


def mixed_result(design: MixedDesign, devfun: DevianceFunction, opt: Optimum, *,
                 warn: bool = True) -> MixedResult:
    """Stage 4 (lme4's ``mkMerMod``): the :class:`MixedResult` at the optimum.

    A boundary fit warns (:class:`~irmodels.BoundaryFitWarning`, the text of its note in
    :attr:`MixedResult.notes`) unless ``warn=False``.
    """
    ev = opt._evaluated
    fit = (ev[2] if ev is not None and ev[0] is devfun and opt.eta is None
           and np.array_equal(ev[1], opt.theta) else None)  # the closed form's evaluation
    opt._evaluated = None  # used once: the result does not keep the evaluation alive
    res = _result(design.spec, design, devfun.problem, devfun.order, opt.theta, opt.eta,
                  devfun.method, design.residual_name, opt.converged, opt.n_iter,
                  opt.closed_form, design.data, fit=fit, warn=warn)
    res._state.devfun = devfun
    res._state.optimum = opt
    if getattr(design, "n_dropped", 0):  # mixed_design(..., missing="drop")
        object.__setattr__(res, "n_dropped", design.n_dropped)
    return res


def _result(spec: ModelSpec, design: MixedDesign, pb: _reml.Problem, order: list[int],
            theta: np.ndarray, eta: np.ndarray | None, method: Literal["REML", "ML"],
            residual: str | None, converged: bool, n_iter: int, closed: bool,
            data: pd.DataFrame | None,
            fit: _reml.Fit | None = None, warn: bool = True) -> MixedResult:
    reml = method == "REML"
    f = fit if fit is not None else _reml.evaluate(pb, theta, eta, reml)
    sigma2 = f.sigma2
    check_exact_fit(spec, pb.y, sigma2 * float(np.mean(1.0 / f.w)))
    sigma = math.sqrt(sigma2)
    K = pb.K
    var_by_term = {}
    blups = {}
    off = 0
    for i, k in enumerate(order):
        size = pb.term_sizes[i]
        rt = spec.random[k]
        var_by_term[rt.name] = sigma2 * theta[i] ** 2
        blups[rt.name] = pd.Series(theta[i] * f.u[off:off + size],
                                   index=pd.Index(design.random_labels[k], name=rt.name),
                                   name="blup")
        off += size
    if pb.n_strata > 1:
        labels = design.strata_labels
        full = np.concatenate([[0.0], eta])  # log SD ratios to the internal reference
        full = full[pb.label_code] if pb.label_code is not None else full  # in label (data) order
        sd_r = pd.Series(np.exp(full - full[0]), index=pd.Index(labels, name=residual),
                         name="sd_ratio")
        var_r = sd_r**2
        var_r.name = "variance_ratio"
        res_var: Any = pd.Series(sigma2 * np.exp(2.0 * full), index=var_r.index,
                                 name="variance")
        resid_summary = float(np.sum(pb.n_per_stratum * res_var.to_numpy()) / pb.n)
    else:
        sd_r = var_r = None
        res_var = float(sigma2)
        resid_summary = float(sigma2)
    names = [rt.name for rt in spec.random] + ["Residual"]
    variances = np.array([var_by_term[rt.name] for rt in spec.random] + [resid_summary])
    total = variances.sum()
    vc = pd.DataFrame({"variance": variances, "sd": np.sqrt(variances),
                       "share": variances / total if total > 0 else np.nan},
                      index=pd.Index(names, name="component"))
    bnd = tuple(rt.name for rt in spec.random if var_by_term[rt.name] <= BOUNDARY_TOL * sigma2)
    n_params = pb.p + K + 1 + (pb.n_strata - 1)
    loglik = -0.5 * f.deviance
    aic = -2 * loglik + 2 * n_params
    n_bic = (pb.n - pb.p) if (reml and pb.n_strata > 1) else pb.n
    bic = -2 * loglik + n_params * math.log(n_bic)
    vcov = sigma2 * _reml.fixed_cov_unscaled(pb, f)
    state = MixedState(problem=pb, theta=theta, eta=eta, sigma=sigma, vcov=vcov,
                       levels=design.levels, codes=design.codes, order=order, data=data,
                       fixed_terms=design.fixed_terms_of_col, design=design)
    res = MixedResult(
        spec=spec, method=method, residual=residual,
        n_obs=pb.n, components=vc, residual_variance=res_var,
        variance_ratios=var_r, sd_ratios=sd_r, loglik=loglik, aic=aic, bic=bic,
        deviance=-2 * loglik, converged=converged, n_iter=n_iter, closed_form=closed,
        boundary=bool(bnd), boundary_components=bnd, random_effects=blups, n_params=n_params,
        fixed_estimates=pd.Series(f.beta, index=pd.Index(design.fixed_names, name="coefficient"),
                                  name="estimate"),
        _state=state,
    )
    if warn and bnd:  # the warning is the fit's note, raised once here
        warnings.warn(res._boundary_note, BoundaryFitWarning, stacklevel=4)
    return res

