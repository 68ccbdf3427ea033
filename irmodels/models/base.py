"""The fit vocabulary: :class:`FittedModel`, the base of every fitted model.

A fitted model (``irm.anova``'s :class:`~irmodels.models.anova.AnovaResult`, ``irm.mixed``'s
:class:`~irmodels.models.mixed.MixedResult`, and the next models) speaks one vocabulary, as
statsmodels' results base and linearmodels' results do, so that the analyses built on fits
(Tukey, Dunnett, residual diagnostics, the G-study, the report) are written once:

- ``data``, ``spec``: the data it was fitted to and the parsed formula (``ModelSpec``);
- ``nobs``: observations used;
- ``fitted()``, ``residuals()``: arrays aligned with the data rows;
- ``df_resid``, ``df_model``: residual and model degrees of freedom;
- ``marginal_means(factor)``, ``marginal_means_cov(factor)``: the means of the levels of a
  factor (a Series named ``mean``) and their covariance (a DataFrame indexed like them);
- ``contrast_df(L, factor)``: the df of the contrasts of those means in the rows of ``L``;
- ``opt_summary``: how the estimates were found (:class:`OptSummary`);
- ``notes``: the fit's caveats (tuple of str): the conditions its warnings report;
- ``refit(y)`` / ``refit(data=...)``: the same model fitted to a new response or new data
  (lme4's ``refit``); ``fixed_fitted()``, ``residual_strata``: what a simulation from the
  model starts from (the parametric bootstrap);
- ``tukey()``, ``dunnett()``: written once here, on the members above.

A new model implements the abstract methods (``fitted``, ``residuals``, ``marginal_means``,
``marginal_means_cov``, ``contrast_df``) and sets the attributes ``data``, ``spec``,
``df_resid`` and ``df_model``; it then gets :meth:`FittedModel.tukey`,
:meth:`FittedModel.dunnett`, ``residual_diagnostics`` (:mod:`irmodels.inference.diagnostics`)
and a report section
(``to_section()``) from this class.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels.errors import ArgumentError, DesignError
from irmodels.models._link_means import comparison_scale, on_response_scale, with_ratios
from irmodels.stats.tukey import tukey_hsd

if TYPE_CHECKING:
    from irmodels.formula.spec import ModelSpec
    from irmodels.stats.dunnett import DunnettResult
    from irmodels.stats.tukey import TukeyResult

__all__ = ["FittedModel", "LinearMixedCounts", "OptSummary"]


@dataclass(frozen=True)
class OptSummary:
    """How a fit's estimates were found (MixedModels.jl's ``OptSummary``, lme4's ``optinfo``).

    Attributes
    ----------
    method : str
        ``"closed form"`` (balanced ANOVA estimates), ``"least squares"`` (a linear solve) or
        the optimiser (``"L-BFGS-B"``).
    iterations : int
        Optimiser iterations (0 for a closed form or a solve).
    gradient_norm : float
        Norm of the projected gradient of the objective at the estimate (0 for a closed form
        or a solve; NaN when not known).
    converged : bool
        Whether the criterion was met (always True for a closed form or a solve).
    boundary : bool
        Whether an estimate lies on the edge of the parameter space (a variance of zero).
    message : str
        The optimiser's message, or ``""``.
    """

    method: str
    iterations: int = 0
    gradient_norm: float = 0.0
    converged: bool = True
    boundary: bool = False
    message: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row: columns ``method, iterations, gradient_norm, converged, boundary, message``."""
        return pd.DataFrame([{"method": self.method, "iterations": self.iterations,
                              "gradient_norm": self.gradient_norm, "converged": self.converged,
                              "boundary": self.boundary, "message": self.message}])


class LinearMixedCounts:
    """``nobs``, ``df_model`` and ``df_resid`` of a linear mixed fit, from its ``n_obs``,
    ``fixed_estimates`` and ``spec`` (shared by the intercept and the random-slope results)."""

    n_obs: int
    fixed_estimates: pd.Series
    spec: ModelSpec

    @property
    def nobs(self) -> int:
        """Number of observations (:attr:`n_obs`)."""
        return self.n_obs

    @property
    def df_model(self) -> float:
        """Fixed-effect parameters besides the intercept."""
        return float(len(self.fixed_estimates) - (1 if self.spec.intercept else 0))

    @property
    def df_resid(self) -> float:
        """``n_obs`` minus the number of fixed effects: the df used for a contrast without a
        finite Satterthwaite df (a boundary fit)."""
        return float(self.n_obs - len(self.fixed_estimates))


class FittedModel(ResultDisplay, abc.ABC):
    """The base of every fitted model: one vocabulary for fits (see the module docstring).

    Attributes
    ----------
    data : DataFrame
        The data the model was fitted to.
    spec : ModelSpec
        The parsed formula.
    df_resid : float
        Residual degrees of freedom (the fallback df of a contrast).
    df_model : float
        Model degrees of freedom (fixed-effect parameters besides the intercept).

    Examples
    --------
    >>> import irmodels as irm
    >>> from irmodels.models.base import FittedModel
    >>> fit = irm.anova("MD1", irm.datasets.load("adhoc3", "AP"))
    >>> isinstance(fit, FittedModel), fit.nobs, fit.df_model, fit.df_resid
    (True, 2000, 88.0, 1911)
    >>> fit.opt_summary.method
    'closed form'
    """

    data: pd.DataFrame
    spec: ModelSpec
    df_resid: Any
    df_model: Any
    #: how the means compared by tukey() and dunnett() are described in their summaries
    _means_kind: str = "marginal (model)"

    # ---- the abstract members -----------------------------------------------------------
    @abc.abstractmethod
    def fitted(self) -> np.ndarray:
        """Fitted values, one per data row (in data order)."""

    @abc.abstractmethod
    def residuals(self) -> np.ndarray:
        """Residuals ``y - fitted()``, one per data row (in data order)."""

    @abc.abstractmethod
    def marginal_means(self, factor: str = "system") -> pd.Series:
        """Mean response per level of ``factor``: a Series indexed by level, named ``mean``.

        A model with a link function (GLM, GLMM) takes ``scale="link" | "response"`` too and
        gives the link-scale means by default (which :meth:`tukey` and :meth:`dunnett` use,
        with :meth:`marginal_means_cov` and the model's ``link``, for both scales)."""

    @abc.abstractmethod
    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        """Covariance matrix of :meth:`marginal_means`, indexed (both ways) like it."""

    @abc.abstractmethod
    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        """Degrees of freedom of the contrasts ``L @ marginal_means(factor)`` (one per row of
        ``L``; NaN where the model has none, then :attr:`df_resid` is used)."""

    # ---- defaults a model may refine ------------------------------------------------------
    @property
    def nobs(self) -> int:
        """Number of observations used by the fit."""
        return int(len(self.residuals()))

    @property
    def opt_summary(self) -> OptSummary:
        """How the estimates were found (:class:`OptSummary`); a least-squares solve here."""
        return OptSummary(method="least squares")

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats (one sentence each): the conditions its warnings report."""
        return ()

    def fixed_fitted(self) -> np.ndarray:
        """Fitted values of the fixed effects alone, one per data row (lme4's ``predict(fit,
        re.form = NA)``): :meth:`fitted` for a model without random terms; a model with random
        terms implements it (the parametric bootstrap simulates around it) or refuses."""
        if self.spec.random:
            raise DesignError(
                f"{type(self).__name__} does not give the fitted values of its fixed effects "
                "alone (fixed_fitted()), which a simulation from the model starts from.")
        return self.fitted()

    #: The column whose levels have their own residual variance (a heteroscedastic fit), or
    #: None for one residual variance (the sigma of :meth:`variance_components`' Residual row).
    residual_strata: str | None = None

    # ---- refitting ------------------------------------------------------------------------
    def refit(self, y: Any = None, *, data: pd.DataFrame | None = None) -> FittedModel:
        """This model fitted again to a new response or to new data: the same formula
        (:attr:`spec`), options and criterion.

        lme4's ``refit(object, newresp)`` and MixedModels.jl's ``refit!(m, y)`` take a new
        response for the same rows; ``y`` does that here. statsmodels has no refit (a new
        model is built from the formula and new data); ``data=`` does that here, keeping the
        fit's options (an ANOVA's ``ss_type``, ``alpha``, ``method``, ``missing``,
        ``aliased``; a mixed model's ``method`` and ``residual`` strata; a GLM's or GLMM's
        family, link, trials, offset and quadrature). Optimiser settings (``start``,
        ``maxiter``, ``tol``) are not kept: the refit uses the defaults.

        Parameters
        ----------
        y : array-like, optional
            New values of the response column (``spec.response``, before the formula's
            transform; successes for a binomial with trials), one per row of :attr:`data`,
            in its order.
        data : DataFrame, optional
            New data with the columns the model reads. Give exactly one of ``y`` and
            ``data``.

        Returns
        -------
        FittedModel
            A fit of the same kind (``irm.anova``'s or ``irm.mixed``'s result).

        Raises
        ------
        ArgumentError
            Both or neither of ``y`` and ``data``; ``y`` not one value per data row.
        DesignError
            The model does not implement refitting, or (with ``y``) the fit kept no data or
            its response is an expression rather than a column.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.anova("MD1", irm.datasets.load("adhoc3", "AP"))
        >>> again = fit.refit(fit.data["score"].to_numpy())  # the same response: the same fit
        >>> type(again).__name__, again.table.equals(fit.table)
        ('AnovaResult', True)
        >>> half = fit.refit(data=fit.data[fit.data["topic"].isin(fit.data["topic"].unique()[:25])])
        >>> half.nobs
        1000
        """
        if (y is None) == (data is None):
            raise ArgumentError("refit takes a new response y or new data, one of the two; got "
                                f"{'both' if y is not None else 'neither'}.")
        if data is None:
            data = self._refit_frame(y)
        return self._refit_to(data)

    def _refit_frame(self, y: Any) -> pd.DataFrame:
        """The fit's data with ``y`` as the response column."""
        base = self.data
        if base is None:
            raise DesignError(f"this {type(self).__name__} does not keep the rows it was fitted "
                              "to; refit it with new data (refit(data=...)).")
        if self.spec.response not in base.columns:
            raise DesignError(f"the response {self.spec.response!r} is an expression, not a column "
                              "of the data; refit it with new data (refit(data=...)).")
        values = np.asarray(y)
        if values.ndim != 1 or len(values) != len(base):
            raise ArgumentError(f"y must give one value per data row ({len(base)}); got shape "
                                f"{values.shape}.")
        return base.assign(**{self.spec.response: values})

    def _refit_to(self, data: pd.DataFrame) -> FittedModel:
        """The fit of this model's formula and options to ``data``; a refittable model
        implements it."""
        raise DesignError(f"{type(self).__name__} does not implement refit(): its class defines "
                          "no _refit_to(data). Fit the model to the new data with the function "
                          "that fitted it.")

    def variance_components(self) -> pd.DataFrame:
        """The variance components (index component, columns ``variance, sd, share``), which
        ``irm.gstudy(fit)`` reads; a model without a random-effects reading refuses."""
        raise DesignError(
            f"{type(self).__name__} has no variance components; irm.gstudy needs a fit of "
            "irm.anova or irm.mixed, or the data themselves: irm.gstudy(frame)."
        )

    # ---- inference written once -----------------------------------------------------------
    def _factor_candidates(self) -> list[str]:
        cov = set(getattr(self.spec, "covariates", ()))
        return list(dict.fromkeys(
            f for t in self.spec.fixed for f in t.factors if f not in cov))

    def _control_factor(self, control: str, factor: str) -> str:
        """``factor``, or, when it is the default ``"system"`` and the model has no such
        factor, the one fixed factor that has a level named ``control``."""
        candidates = self._factor_candidates()
        if factor != "system" or "system" in candidates:
            return factor
        found = []
        for f in candidates:
            try:
                levels = [str(v) for v in self.marginal_means(f).index]
            except DesignError:
                continue
            if str(control) in levels:
                found.append(f)
        return found[0] if len(found) == 1 else factor

    def _factor_label(self, factor: str) -> str:
        """The factor's name as the results show it."""
        return str(factor)

    def _pairwise_df(self, D: np.ndarray, factor: str) -> np.ndarray:
        # a model whose contrasts are z tests (df = inf: GLMs, GLMMs) overrides this
        dfs = np.asarray(self.contrast_df(D, factor), dtype=float)
        return np.where(np.isfinite(dfs) & (dfs > 0), dfs, float(self.df_resid))

    def _tukey_inputs(self, factor: str, df: str) -> dict[str, Any]:
        """The arguments of :func:`irmodels.inference.tukey.tukey_hsd` for ``factor`` (a model
        may refine them, e.g. by a closed form; the numbers must be the same)."""
        return self._tukey_inputs_of(self.marginal_means(factor),
                                     self.marginal_means_cov(factor), factor, df)

    def _tukey_inputs_of(self, means: pd.Series, cov: Any, factor: str, df: str
                         ) -> dict[str, Any]:
        cov = np.asarray(cov, dtype=float)
        k = len(means)
        ia, ib = np.triu_indices(k, 1)
        D = np.zeros((len(ia), k))
        D[np.arange(len(ia)), ia] = 1.0
        D[np.arange(len(ia)), ib] = -1.0
        var = np.diag(cov)[ia] + np.diag(cov)[ib] - 2 * cov[ia, ib]
        dfs = self._pairwise_df(D, factor)
        same = bool(dfs.size) and bool(np.all(dfs == dfs[0]))  # one df (inf for z tests)
        df_err: Any = dfs if df == "per-contrast" and not same else float(dfs.min())
        se = np.sqrt(np.maximum(var, 0))
        if se.size and np.allclose(se, se[0], rtol=1e-9, atol=0):
            se_diff: Any = float(se[0])
        else:
            mat = np.zeros((k, k))
            mat[ia, ib] = se
            mat[ib, ia] = se
            se_diff = mat
        return {"means": pd.Series(means.to_numpy(), index=[str(v) for v in means.index]),
                "df_error": df_err, "se_diff": se_diff}

    def tukey(self, factor: str = "system", *, alpha: float = 0.05,
              df: Literal["per-contrast", "min"] = "per-contrast",
              scale: Literal["link", "response"] = "link",
              contrast: Literal["ratio", "difference"] | None = None) -> TukeyResult:
        """Tukey HSD between the levels of ``factor`` (all pairs of :meth:`marginal_means`).

        The standard error of each difference comes from :meth:`marginal_means_cov`; its
        degrees of freedom from :meth:`contrast_df` (:attr:`df_resid` where that has none).

        Parameters
        ----------
        factor : str
            A factor of the model (``"system"`` by default).
        alpha : float
            Family-wise significance level.
        df : {"per-contrast", "min"}
            ``"per-contrast"`` (default) gives each pair its own df, as R's ``emmeans(fit,
            pairwise ~ factor)`` (Satterthwaite for a mixed model); ``"min"`` the smallest of
            them for every pair (conservative). On an ANOVA fit every pair has ``df_resid``.
        scale : {"link", "response"}
            For a model with a link function (``irm.anova(..., family=...)``, GLMMs): compare
            the means on the link scale (default; emmeans' ``pairs(emm)``) or on the response
            scale (:mod:`irmodels.models._link_means`). A model without a link has one scale
            and gives the same numbers for both (as emmeans on an ``lm``); a model of a
            transformed response refuses ``"response"``.
        contrast : {"ratio", "difference"}, optional
            With ``scale="response"``: ``"ratio"`` (the default for the log and logit links)
            tests on the link scale and appends ``ratio, ratio_se, ratio_lower, ratio_upper``
            (rate or odds ratios ``a / b``, emmeans' ``pairs(emm, type = "response")``) to
            the pairs, whose ``diff`` stays the link-scale difference; ``"difference"`` (the
            default for other links) compares the response-scale means by the delta method
            (emmeans' ``pairs(regrid(emm))``).

        Returns
        -------
        TukeyResult
            See :func:`irmodels.inference.tukey.tukey_hsd`.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.anova("MD1", irm.datasets.load("adhoc3", "AP"))
        >>> fit.tukey().n_significant
        378
        """
        if df not in ("per-contrast", "min"):
            raise DesignError(f"df must be 'per-contrast' or 'min'; got {df!r}.")
        link, kind = comparison_scale(self, scale, contrast)
        if kind == "difference":
            inputs = self._tukey_inputs_of(*on_response_scale(
                self.marginal_means(factor), self.marginal_means_cov(factor), link), factor, df)
            return tukey_hsd(alpha=alpha, factor=factor, means_kind=f"{self._means_kind}, "
                             "response scale (delta method)", **inputs)
        res = tukey_hsd(alpha=alpha, factor=factor, means_kind=self._means_kind,
                        **self._tukey_inputs(factor, df))
        return with_ratios(res, link) if kind == "ratio" else res

    def dunnett(
        self,
        control: str,
        factor: str = "system",
        *,
        alpha: float = 0.05,
        alternative: Literal["two-sided", "greater", "less"] = "two-sided",
        df: Literal["per-contrast", "min"] = "per-contrast",
        scale: Literal["link", "response"] = "link",
        contrast: Literal["ratio", "difference"] | None = None,
    ) -> DunnettResult:
        """Dunnett's comparisons of every level of ``factor`` with ``control``.

        The differences ``level - control`` of :meth:`marginal_means` with their covariance
        (:meth:`marginal_means_cov`), tested simultaneously with the multivariate t
        distribution: R's ``emmeans(fit, trt.vs.ctrl ~ factor, ref = control, adjust =
        "mvt")``. Degrees of freedom from :meth:`contrast_df` (``df="per-contrast"``: each
        comparison its own, as emmeans, which truncates them to integers; irmodels does not;
        ``"min"``: the smallest for all). When ``factor`` is left at ``"system"`` and the
        model has no ``system`` factor, the one fixed factor with a level named ``control`` is
        used (``fit.dunnett("L")`` on a model of ``length`` with levels ``S, M, L``). See
        :func:`irmodels.inference.dunnett.dunnett`. ``scale`` and ``contrast`` as in
        :meth:`tukey` (ratios ``level / control`` appended as ``ratio, ratio_se,
        ratio_lower, ratio_upper``; or differences of the response-scale means).

        Examples
        --------
        >>> import numpy as np, pandas as pd, irmodels as irm
        >>> rng = np.random.default_rng(3)
        >>> x = (rng.normal(0.3, 0.1, (12, 1)) + [0.0, 0.01, 0.06, 0.08]
        ...      + rng.normal(0, 0.03, (12, 4)))
        >>> fit = irm.anova("MD1", irm.from_wide(pd.DataFrame(x, columns=["base", "a", "b", "c"])))
        >>> res = fit.dunnett("base")
        >>> res.table[["level", "diff", "se", "p_adj", "reject"]].round(4)
          level    diff      se   p_adj  reject
        0     a  0.0212  0.0112  0.1606   False
        1     b  0.0667  0.0112  0.0000    True
        2     c  0.0716  0.0112  0.0000    True
        >>> round(res.critical_value, 4)  # R: mvtnorm::qmvt(0.95, ...) 2.461862 at abseps 1e-7
        2.4619
        """
        # here, not at import: Dunnett's kernel imports scipy.stats (~0.5 s) and this module is
        # on the `irmodels anova` start-up path
        from irmodels.stats.dunnett import dunnett

        if df not in ("per-contrast", "min"):
            raise DesignError(f"df must be 'per-contrast' or 'min'; got {df!r}.")
        link, kind = comparison_scale(self, scale, contrast)
        factor = self._control_factor(control, factor)
        means = self.marginal_means(factor)
        cov = np.asarray(self.marginal_means_cov(factor), dtype=float)
        means_kind = self._means_kind
        if kind == "difference":
            means, cov = on_response_scale(means, cov, link)
            means_kind = f"{means_kind}, response scale (delta method)"
        labels = [str(v) for v in means.index]
        name = self._factor_label(factor)
        if str(control) in labels:
            ci = labels.index(str(control))
            k = len(labels)
            D = np.delete(np.eye(k), ci, axis=0)
            D[:, ci] = -1.0
            dfs = self._pairwise_df(D, factor)
            df_arg: Any = dfs if df == "per-contrast" else float(dfs.min()) if dfs.size else dfs
        else:  # the kernel says what is wrong (an unknown control, too few levels)
            df_arg = float(self.df_resid)
        res = dunnett(pd.Series(means.to_numpy(), index=labels), cov, control=control,
                      df=df_arg, alpha=alpha, alternative=alternative, factor=name,
                      means_kind=means_kind)
        return with_ratios(res, link) if kind == "ratio" else res

    # ---- the report section a model gets for free ------------------------------------------
    def _display_title(self) -> str:
        return f"{type(self).__name__}: {self.spec} ({self.nobs} observations)"

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables: list[tuple[str, pd.DataFrame]] = []
        for f in self._factor_candidates():
            try:
                m = self.marginal_means(f)
                se = np.sqrt(np.clip(np.diag(np.asarray(self.marginal_means_cov(f), float)),
                                     0.0, None))
            except DesignError:
                continue
            tables.append((f"Marginal means of {f}",
                           pd.DataFrame({"mean": m.to_numpy(), "se": se}, index=m.index)))
        fit = pd.DataFrame({"nobs": [self.nobs], "df_model": [self.df_model],
                            "df_resid": [self.df_resid]})
        tables.append(("Fit", pd.concat([fit, self.opt_summary.to_frame()], axis=1)))
        return tables


def distinct_labels(labels: list[str]) -> list[str]:
    """Row labels of a model comparison, a repeated one marked ``(again)``.

    >>> distinct_labels(["y ~ x", "y ~ x", "y ~ z"])
    ['y ~ x', 'y ~ x (again)', 'y ~ z']
    """
    out: list[str] = []
    for lab in labels:
        while lab in out:
            lab += " (again)"
        out.append(lab)
    return out


def lr_sequence(loglik: np.ndarray, npar: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Likelihood-ratio tests of each model against the one before it (models by increasing
    ``npar``, as R's ``anova(m0, m1, ...)``): ``statistic`` (2 x the gain in log-likelihood, 0
    at a loss), ``df`` and the chi-square ``p``; NaN in the first row and where df <= 0.

    >>> [v.round(4).tolist() for v in lr_sequence(np.array([-10.0, -7.0]), np.array([2, 3]))]
    [[nan, 6.0], [nan, 1.0], [nan, 0.0143]]
    """
    from scipy import stats  # here, not at import: scipy.stats is slow to import

    n = len(loglik)
    stat, dfd, pv = (np.full(n, np.nan) for _ in range(3))
    for i in range(1, n):
        stat[i] = 2.0 * max(0.0, loglik[i] - loglik[i - 1])
        dfd[i] = npar[i] - npar[i - 1]
        pv[i] = stats.chi2.sf(stat[i], dfd[i]) if dfd[i] > 0 else np.nan
    return stat, dfd, pv
