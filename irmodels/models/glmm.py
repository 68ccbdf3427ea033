"""Generalised linear mixed models: the result of ``irm.mixed(..., family=...)``.

:class:`GlmmResult` is lme4's ``glmerMod`` (and, for the beta family, glmmTMB's fit): fixed
effects with Wald z tests (``summary(glmer)``), the variance components on the latent (link)
scale, the conditional modes, fitted values and residuals, predictions, and marginal means on
the link scale for Tukey and Dunnett comparisons with ``df = inf`` (z tests, as emmeans for a
``glmer`` fit). The engine is :mod:`irmodels.models._glmm`.

Examples
--------
>>> import numpy as np, irmodels as irm
>>> d = irm.datasets.load("adhoc3", "AP")
>>> d = d[d.system.isin(d.system.cat.categories[:4])].copy()
>>> d["rel"] = np.round(d.score * 10)
>>> fit = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
>>> fit
<GlmmResult binomial(logit) rel ~ system + (1|topic) n=200 logLik=-314.7601>
>>> fit.variance_components().round(4)
           variance      sd
component
topic        0.5253  0.7248
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.special import ndtr

from irmodels._validate import check_choice
from irmodels.errors import ArgumentError, BoundaryFitWarning, DataFormatError, DesignError
from irmodels.formula.spec import ModelSpec
from irmodels.models import _glmm_confint, _glmm_inference
from irmodels.models._anova_fit import drop_missing
from irmodels.models._glmm import GlmmDesign, GlmmFit, fit_glmm, glmm_design
from irmodels.models._glmm_report import glmm_section
from irmodels.models._lmm import ReTerm, SlopeMixedResult
from irmodels.models._lmm_inference import means_matrix
from irmodels.models._mixed_design import model_columns
from irmodels.models.base import FittedModel, OptSummary

__all__ = ["GlmmResult", "fit_glmm_model", "mixed_glmm", "check_family_args"]


@dataclass(frozen=True, repr=False, eq=False)
class GlmmResult(FittedModel):
    """A generalised linear mixed model fitted by :func:`irmodels.mixed` with ``family=``.

    Attributes
    ----------
    spec : ModelSpec
    family, link : str
        The conditional distribution and the link (``"binomial"``, ``"logit"``).
    nagq : int
        Quadrature points (1 = Laplace, lme4's ``nAGQ``).
    theta : ndarray
        lme4's relative covariance parameters (term by term, lower triangle by column).
    phi : float or None
        The precision of the beta family; None otherwise.
    loglik, aic, bic : float
        lme4's ``logLik``, ``AIC``, ``BIC`` (for ``nagq > 1`` on lme4's deviance-residual
        scale, as ``logLik(glmer(..., nAGQ = k))``).
    deviance : float
        lme4's ``deviance()``: the sum of squared deviance residuals at the conditional modes.
    converged, boundary : bool
        Optimiser criterion met; a variance at zero (lme4's ``isSingular``).
    boundary_components : tuple of str
    fixed_estimates : Series
    """

    spec: ModelSpec
    family: str
    link: str
    nagq: int
    theta: np.ndarray
    phi: float | None
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
    vcov_method: str
    _design: GlmmDesign = field(default=None)  # type: ignore[assignment]
    _fit: GlmmFit = field(default=None)  # type: ignore[assignment]

    # -- counts ---------------------------------------------------------------------------------
    @property
    def data(self) -> pd.DataFrame:
        """The data the model was fitted to (not copied)."""
        return self._design.lmm.data

    @property
    def nobs(self) -> int:
        """Number of observations (rows)."""
        return len(self._design.y)

    @property
    def df_model(self) -> float:
        return float(len(self.fixed_estimates) - (1 if self.spec.intercept else 0))

    @property
    def df_resid(self) -> float:
        """lme4's ``df.residual``: observations minus parameters."""
        return float(self.nobs - self.n_params)

    @property
    def opt_summary(self) -> OptSummary:
        """Two stages as glmer (theta, then theta and beta) by L-BFGS-B on the exact gradient
        of the deviance (binomial, Poisson; else finite differences), then Newton steps on its
        Hessian (central differences of that gradient, or lme4's ``deriv12``);
        ``gradient_norm`` is lme4's scaled gradient."""
        return OptSummary(method="L-BFGS-B + Newton", iterations=self.n_iter,
                          gradient_norm=self._fit.gradient_norm, converged=self.converged,
                          boundary=self.boundary)

    # -- fixed effects --------------------------------------------------------------------------
    @cached_property
    def vcov(self) -> pd.DataFrame:
        """Covariance of the fixed effects, lme4's ``vcov(glmer)``: twice the inverse of the
        finite-difference Hessian of the deviance (``vcov_method == "hessian"``) or the
        ``R_X`` form (boundary fits, 1e4 observations or 20 parameters and more)."""
        names = list(self.fixed_estimates.index)
        return pd.DataFrame(self._fit.vcov, index=names, columns=names)

    @cached_property
    def fixed(self) -> pd.DataFrame:
        """Fixed effects: ``estimate, se, z, p`` (Wald z tests, ``summary(glmer)``)."""
        est = self.fixed_estimates.to_numpy()
        se = np.sqrt(np.diag(self.vcov.to_numpy()))
        z = est / se
        p = 2 * ndtr(-np.abs(z))
        return pd.DataFrame({"estimate": est, "se": se, "z": z, "p": p},
                            index=self.fixed_estimates.index)

    # -- variance parameters --------------------------------------------------------------------
    def _templates(self) -> list[np.ndarray]:
        out = []
        for b in self._design.lmm.blocks:
            T = np.zeros((b.q, b.q))
            k = b.theta_offset
            for j in range(b.q):
                for i in range(j, b.q):
                    T[i, j] = self.theta[k]
                    k += 1
            out.append(T)
        return out

    def variance_components(self) -> pd.DataFrame:
        """Variances and SDs of the random effects on the latent (link) scale. Intercept
        terms only: index ``component``; with slopes: index ``(group, effect)``. There is no
        residual row (the conditional distribution has none). Correlations:
        :meth:`correlations`."""
        covs = [T @ T.T for T in self._templates()]
        blocks = self._design.lmm.blocks
        if all(b.columns == ["(Intercept)"] for b in blocks):
            v = np.array([c[0, 0] for c in covs])
            return pd.DataFrame({"variance": v, "sd": np.sqrt(v)},
                                index=pd.Index([b.group for b in blocks], name="component"))
        rows = [(b.group, col, c[r, r]) for b, c in zip(blocks, covs)
                for r, col in enumerate(b.columns)]
        idx = pd.MultiIndex.from_tuples([(g, e) for g, e, _ in rows], names=["group", "effect"])
        v = np.array([x for _, _, x in rows])
        return pd.DataFrame({"variance": v, "sd": np.sqrt(v)}, index=idx)

    def correlations(self) -> pd.DataFrame:
        """Correlations of the random effects within each term: columns ``group, effect1,
        effect2, correlation`` (as :meth:`SlopeMixedResult.correlations`)."""
        rows = []
        for b, T in zip(self._design.lmm.blocks, self._templates()):
            c = T @ T.T
            sd = np.sqrt(np.diag(c))
            for j in range(b.q):
                for i in range(j + 1, b.q):
                    den = sd[i] * sd[j]
                    rows.append((b.group, b.columns[j], b.columns[i],
                                 c[i, j] / den if den > 0 else float("nan")))
        return pd.DataFrame(rows, columns=["group", "effect1", "effect2", "correlation"])

    # -- random effects -------------------------------------------------------------------------
    @cached_property
    def _b(self) -> np.ndarray:
        lam = self._design.lmm.Lambda(self.theta)
        return np.asarray(lam @ self._fit.mode.u)

    def conditional_modes(self) -> pd.DataFrame:
        """Conditional modes of the random effects with their conditional SDs, tidy as lme4's
        ``as.data.frame(ranef(fit, condVar = TRUE))``: columns ``group, effect, level,
        condval, condsd``."""
        dev, m = self._fit.dev, self._fit.mode
        rows = []
        for b, T in zip(self._design.lmm.blocks, self._templates()):
            vals = self._b[b.offset:b.offset + b.q * b.n_levels].reshape(b.n_levels, b.q)
            sds = np.empty((b.n_levels, b.q))
            per = max(1, 512 // b.q)
            for start in range(0, b.n_levels, per):
                levs = range(start, min(b.n_levels, start + per))
                cols = b.offset + np.arange(levs.start * b.q, levs.stop * b.q)
                Mi = dev.cond_var_u(m, cols)
                for k, lev in enumerate(levs):
                    s = slice(k * b.q, (k + 1) * b.q)
                    sds[lev] = np.sqrt(np.maximum(np.diag(T @ Mi[s, s] @ T.T), 0))
            for r, col in enumerate(b.columns):
                for lev, lab in enumerate(b.labels):
                    rows.append((b.group, col, lab, vals[lev, r], sds[lev, r]))
        return pd.DataFrame(rows, columns=["group", "effect", "level", "condval", "condsd"])

    @property
    def random_effects(self) -> dict[str, pd.DataFrame]:
        """Conditional modes by grouping factor, as lme4's ``ranef(fit)``: a DataFrame per
        group indexed by level, one column per effect."""
        cm = self.conditional_modes()
        out: dict[str, pd.DataFrame] = {}
        for g in dict.fromkeys(cm["group"]):
            sub = cm[cm["group"] == g]
            wide = sub.pivot(index="level", columns="effect", values="condval")
            wide = wide.loc[list(dict.fromkeys(sub["level"])), list(dict.fromkeys(sub["effect"]))]
            wide.index.name = g
            wide.columns.name = None
            out[g] = wide
        return out

    # -- fitted values, residuals, predictions --------------------------------------------------
    def fitted(self, scale: Literal["response", "link"] = "response") -> np.ndarray:
        """Fitted values at the conditional modes: the mean (``"response"``, lme4's
        ``fitted``: a proportion for the binomial) or the linear predictor (``"link"``)."""
        check_choice(scale, "scale", ("response", "link"))
        return (self._fit.mode.mu if scale == "response" else self._fit.mode.eta).copy()

    def residuals(self, type: Literal["deviance", "pearson", "response", "working"] = "deviance"
                  ) -> np.ndarray:
        """Residuals as lme4's ``residuals(glmer, type)``: ``"deviance"`` (default, signed
        square roots of the deviance residuals), ``"pearson"`` (``(y - mu) sqrt(w / V)``),
        ``"response"`` (``y - mu``), ``"working"`` (``(y - mu) / (dmu/deta)``)."""
        check_choice(type, "type", ("deviance", "pearson", "response", "working"))
        gd, m = self._design, self._fit.mode
        fam = gd.family
        r = gd.y - m.mu
        if type == "response":
            return r
        if type == "working":
            return r / fam.link.mu_eta(m.eta)
        if type == "pearson":
            return r * np.sqrt(gd.weights / fam.variance(m.mu, m.phi))
        return np.sign(r) * np.sqrt(np.maximum(_deviance_resid(fam, gd.y, m.mu, gd.weights,
                                                               m.phi), 0))

    def predict(self, newdata: pd.DataFrame | None = None, *, re_form: Literal["~0"] | None = None,
                scale: Literal["link", "response"] = "link",
                allow_new_levels: bool = False) -> np.ndarray:
        """Predictions as lme4's ``predict(glmer)``: the linear predictor with the random
        effects (``re_form=None``) or without (``"~0"``), plus the offset, on the link scale
        (default, lme4's ``type = "link"``) or the response scale."""
        check_choice(scale, "scale", ("link", "response"))
        gd = self._design
        view = _LinearView(self)
        eta = SlopeMixedResult.predict(view, newdata, re_form=re_form,  # type: ignore[arg-type]
                                       allow_new_levels=allow_new_levels)
        if gd.offset_name is not None:
            src = gd.lmm.data if newdata is None else newdata
            if gd.offset_name not in src.columns:
                raise DesignError(f"newdata lacks the offset column {gd.offset_name!r}")
            eta = eta + np.asarray(src[gd.offset_name], dtype=float)
        return eta if scale == "link" else gd.family.link.linkinv(eta)

    # -- marginal means (link scale) ------------------------------------------------------------
    def _mm_matrix(self, factor: str) -> tuple[np.ndarray, list[str]]:
        d = self._design.lmm
        return means_matrix(self.spec, list(self.fixed_estimates.index), self.data, d.levels,
                            factor)

    def marginal_means(self, factor: str = "system", *,
                       scale: Literal["link", "response"] = "link") -> pd.Series:
        """Estimated marginal means of a fixed factor on the link scale (emmeans' default for
        a ``glmer`` fit), or back-transformed (``"response"``: the inverse link of each link
        mean, emmeans' ``type = "response"``)."""
        check_choice(scale, "scale", ("link", "response"))
        M, labels = self._mm_matrix(factor)
        m = M @ self.fixed_estimates.to_numpy()
        if scale == "response":
            m = self._design.family.link.linkinv(m)
        return pd.Series(m, index=pd.Index(labels, name=factor), name="mean")

    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        """Covariance of the link-scale :meth:`marginal_means`."""
        M, labels = self._mm_matrix(factor)
        return pd.DataFrame(M @ self.vcov.to_numpy() @ M.T, index=labels, columns=labels)

    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        """Infinite: contrasts are Wald z tests (emmeans' ``df = Inf`` for ``glmer``); for the
        beta family ``df_resid`` (n minus the number of parameters), which emmeans takes for
        every glmmTMB fit (its ``emm_basis.glmmTMB`` uses ``df.residual``)."""
        k = np.atleast_2d(np.asarray(L, dtype=float)).shape[0]
        if self.family == "beta":
            return np.full(k, float(self.df_resid))
        return np.full(k, np.inf)

    def _pairwise_df(self, D: np.ndarray, factor: str) -> np.ndarray:
        return self.contrast_df(D, factor)

    # -- refits ---------------------------------------------------------------------------------
    def _refit(self, data: pd.DataFrame | None = None, *, y: np.ndarray | None = None,
               warn: bool = True) -> GlmmResult:
        """The same model refitted to ``data`` (default: the fit's), or to the response
        ``y`` (a simulated response in the data's rows, on the scale of the formula's
        response: successes for the binomial): for likelihood-ratio tests and the
        parametric bootstrap."""
        gd = self._design
        d = gd.lmm.data if data is None else data
        if y is not None:
            d = d.copy()
            d[self.spec.response] = np.asarray(y, dtype=float)
        # a simulated beta response is already on the squeezed scale: not squeezed again
        return fit_glmm_model(self.spec, d, family=gd.family, trials=gd.trials,
                              offset=gd.offset_name, nagq=gd.nagq, terms=gd.lmm.terms,
                              squeeze=gd.squeeze and y is None, warn=warn)

    def _refit_to(self, data: pd.DataFrame) -> GlmmResult:
        """``irm.mixed(spec, data, family=...)`` with this fit's family, link, trials, offset,
        quadrature and ``squeeze`` (lme4's ``refit``; the public :meth:`refit`)."""
        return self._refit(data)

    def _null_model(self) -> GlmmResult:
        """The null model of Nakagawa et al. (2017, section 5.8): an intercept and the same
        random terms, offset and trials, fitted without warnings (a singular or unconverged
        null model is not this fit's caveat)."""
        gd = self._design
        lhs = self.spec.formula.split("~", 1)[0].strip()
        return fit_glmm_model(f"{lhs} ~ 1", gd.lmm.data, family=gd.family, trials=gd.trials,
                              offset=gd.offset_name, nagq=gd.nagq, terms=gd.lmm.terms,
                              squeeze=gd.squeeze, warn=False)

    # -- inference (irmodels.models._glmm_confint, _glmm_inference) ---------------------------
    def confint(self, method: Literal["profile", "bootstrap", "wald"] = "profile", *,
                level: float = 0.95, parm: Sequence[str] | str | None = None,
                n_resamples: int = 500, seed: Any = 0, backend: Any = "serial",
                n_workers: int | None = None) -> pd.DataFrame:
        """Confidence intervals of the SDs of the random effects and of the fixed effects
        (lme4's ``confint`` for ``glmer``).

        Parameters
        ----------
        method : {"profile", "bootstrap", "wald"}
            ``"profile"``: likelihood-profile intervals on the deviance the fit minimised (lme4's
            ``confint(method = "profile")``; each bound a root of the signed square root of the
            deviance difference, where lme4 interpolates a spline). ``"bootstrap"``: parametric
            bootstrap percentile intervals (lme4's ``bootMer``: responses simulated from the
            fit, refitted). ``"wald"``: ``estimate +- z se`` for the fixed effects, NaN for the
            SDs (as lme4).
        level : float
            Confidence level.
        parm : sequence of str, optional
            Rows to compute (names as in the output); all by default.
        n_resamples, seed, backend, n_workers
            Bootstrap replicates, seed (the same seed gives the same intervals on every
            backend) and where they run (:func:`irmodels.parallel.map`).

        Returns
        -------
        DataFrame
            Index ``parameter``: the SD of each random term on the latent scale (named by its
            grouping factor when every term is a random intercept, else lme4's ``sd_x|g`` and
            ``cor_x.y|g``), the fixed effects, then ``phi`` for the beta family; columns
            ``lower, upper``. A lower bound of 0 means the profile does not reach the critical
            value before the SD is zero.

        Examples
        --------
        >>> import numpy as np, irmodels as irm
        >>> d = irm.datasets.load("adhoc3", "AP")
        >>> d = d[d.system.isin(d.system.cat.categories[:4])].copy()
        >>> d["rel"] = np.round(d.score * 10)
        >>> fit = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
        >>> fit.confint(method="wald").round(4)
                      lower   upper
        parameter
        topic           NaN     NaN
        (Intercept) -3.0233 -2.2426
        systemsys2   1.5711  2.3385
        systemsys3   1.5810  2.3482
        systemsys4   1.2173  1.9930
        """
        return _glmm_confint.confint(self, method, level, parm, n_resamples, seed, backend, n_workers)

    def r2(self, method: Literal["theoretical", "lognormal", "delta", "trigamma"] | None = None
           ) -> pd.DataFrame:
        """Marginal and conditional R2 on the latent scale (Nakagawa & Schielzeth 2013;
        Nakagawa, Johnson & Schielzeth 2017, J. R. Soc. Interface 14: 20170213).

        ``R2m = vf / (vf + vr + vd)`` and ``R2c = (vf + vr) / (vf + vr + vd)`` with ``vf`` the
        variance of the fixed part ``X beta`` (R's ``var``, ``n - 1``), ``vr`` the sum of the
        random variances (a term with slopes: ``mean_i z_i' Sigma z_i``, Johnson 2014) and
        ``vd`` the distribution-specific variance: binomial ``pi^2 / 3`` (logit), 1 (probit),
        ``pi^2 / 6`` (cloglog); Poisson (log link) at ``lambda = mean_i exp(b0 + offset_i +
        vr0 / 2)`` of the null model (an intercept, the same random terms and offset; the
        paper's section 5.8) ``log(1 + 1/lambda)`` (``method="lognormal"``, the default, as
        ``performance::r2_nakagawa``), ``1/lambda`` (``"delta"``) or ``trigamma(lambda)``
        (``"trigamma"``, the three of ``MuMIn::r.squaredGLMM``); beta (logit) at
        ``mu = linkinv(b0)`` of the null model and the fit's ``phi``: ``trigamma(mu phi) +
        trigamma((1 - mu) phi)`` (``"trigamma"``, the default: the variance of ``logit(y)``)
        or ``1 / (mu (1 - mu) (1 + phi))`` (``"delta"``). Poisson and beta refit the null
        model once.

        Returns
        -------
        DataFrame
            One row indexed by the model's formula; columns ``marginal``, ``conditional``,
            ``var_fixed``, ``var_random``, ``var_distribution``, ``method``.

        Examples
        --------
        >>> import numpy as np, irmodels as irm
        >>> d = irm.datasets.load("adhoc3", "AP")
        >>> d = d[d.system.isin(d.system.cat.categories[:4])].copy()
        >>> d["rel"] = np.round(d.score * 10)
        >>> fit = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
        >>> fit.r2()[["marginal", "conditional"]].round(4)
                                  marginal  conditional
        model
        rel ~ system + (1|topic)    0.1475       0.2649
        """
        return _glmm_inference.r2_nakagawa(self, method)

    def icc(self, method: Literal["theoretical", "lognormal", "delta", "trigamma"] | None = None
            ) -> pd.DataFrame:
        """Intra-class correlations on the latent scale (Nakagawa et al. 2017), with the
        variances of :meth:`r2` (and its ``method``): adjusted ``vr_k / (vr + vd)`` and
        conditional ``vr_k / (vf + vr + vd)`` (as ``performance::icc``).

        Returns
        -------
        DataFrame
            Index ``component``: each random term, then ``total`` (all of them); columns
            ``variance`` (latent scale, averaged over the rows for a term with slopes),
            ``icc_adjusted``, ``icc_conditional``.

        Examples
        --------
        >>> import numpy as np, irmodels as irm
        >>> d = irm.datasets.load("adhoc3", "AP")
        >>> d = d[d.system.isin(d.system.cat.categories[:4])].copy()
        >>> d["rel"] = np.round(d.score * 10)
        >>> fit = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
        >>> fit.icc().round(4)
                   variance  icc_adjusted  icc_conditional
        component
        topic        0.5253        0.1377           0.1174
        total        0.5253        0.1377           0.1174
        """
        return _glmm_inference.icc_nakagawa(self, method)

    # -- display --------------------------------------------------------------------------------
    @property
    def _boundary_note(self) -> str:
        """The note (and the :class:`~irmodels.BoundaryFitWarning`) of a singular fit."""
        return (f"singular fit: the variance of {', '.join(self.boundary_components)} is "
                "estimated at zero")

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats: a singular fit (the text of its warning, then where the
        covariance of the fixed effects comes from), a failed convergence (the text of its
        warning)."""
        out = []
        if self.boundary:
            out.append(self._boundary_note)
            out.append("vcov from R_X, as lme4." if self.vcov_method == "RX" else
                       "vcov from the Hessian of the parameters off the boundary.")
        if not self.converged:
            out.append(self._fit.warning or "the optimiser did not meet its convergence "
                       "criterion.")
        return tuple(out)

    def to_frame(self) -> pd.DataFrame:
        """The fixed effects, tidy (index as a column ``coefficient``)."""
        return self.fixed.reset_index()

    def _display_title(self) -> str:
        how = "Laplace approximation" if self.nagq == 1 else (
            f"adaptive Gauss-Hermite quadrature, nAGQ = {self.nagq}" if self.nagq > 1
            else "nAGQ = 0")
        b = f", singular: {', '.join(self.boundary_components)}" if self.boundary else ""
        phi = f", phi = {self.phi:.4f}" if self.phi is not None else ""
        return (f"Generalized linear mixed model fit by maximum likelihood ({how}{b}): "
                f"{self.spec}\nfamily: {self.family} ({self.link}){phi}; n = {self.nobs}, "
                f"logLik = {self.loglik:.4f}, AIC = {self.aic:.4f}, BIC = {self.bic:.4f}, "
                f"deviance = {self.deviance:.4f}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables = [("Fixed effects", self.fixed),
                  ("Variance components (latent scale)", self.variance_components())]
        cor = self.correlations()
        if len(cor):
            tables.append(("Correlations of random effects", cor.set_index("group")))
        return tables

    def to_section(self, *, digits: int = 4) -> Any:
        """The report section (``irm.report(fit)``): fit line, how to read it (link and latent
        scales, phi, squeeze, singular fit), fixed effects, random effects, the system means
        on both scales (:mod:`irmodels.models._glmm_report`)."""
        return glmm_section(self, digits=digits)

    def __repr__(self) -> str:
        return (f"<GlmmResult {self.family}({self.link}) {self.spec} n={self.nobs} "
                f"logLik={self.loglik:.4f}>")


class _LinearView:
    """What :meth:`SlopeMixedResult.predict` reads, for a GLMM's linear predictor."""

    def __init__(self, fit: GlmmResult) -> None:
        self._design = fit._design.lmm
        self.spec = fit.spec
        self.fixed_estimates = fit.fixed_estimates
        self._b = fit._b
        self._eta = fit._fit.mode.eta - fit._design.offset

    def fitted(self) -> np.ndarray:
        return self._eta.copy()


def _deviance_resid(fam: Any, y: np.ndarray, mu: np.ndarray, w: np.ndarray,
                    phi: float | None) -> np.ndarray:
    """Squared deviance residuals; a family with a precision (beta) takes it (betareg's
    ``2 (l(y; y, phi) - l(y; mu, phi))``)."""
    return fam.deviance_resid(y, mu, w) if phi is None else fam.deviance_resid(y, mu, w, phi=phi)


def fit_glmm_model(model: str | ModelSpec, data: pd.DataFrame, *, family: Any,
                   link: str | None = None, trials: Any = None, offset: str | None = None,
                   nagq: int = 1, terms: tuple[ReTerm, ...] | None = None,
                   squeeze: bool = False, warn: bool = True,
                   _stacklevel: int = 2) -> GlmmResult:
    """Fit a GLMM (the engine of ``irm.mixed(..., family=...)``). A singular fit or one that
    does not converge warns (the text of the result's note) unless ``warn=False``."""
    gd = glmm_design(model, data, family=family, link=link, trials=trials, offset=offset,
                     nagq=nagq, terms=terms, squeeze=squeeze)
    fit = fit_glmm(gd, warn=warn, _stacklevel=_stacklevel + 1)
    nt, p = fit.dev.nt, fit.dev.p
    beta = fit.x[nt:nt + p]
    phi = float(np.exp(fit.x[-1])) if fit.dev.extra else None
    npar = nt + p + fit.dev.extra
    obj = fit.objective
    n = len(gd.y)
    dev_resid = float(np.sum(_deviance_resid(gd.family, gd.y, fit.mode.mu, gd.weights, phi)))
    res = GlmmResult(
        spec=gd.lmm.spec, family=gd.family.name, link=gd.family.link.name, nagq=gd.nagq,
        theta=fit.x[:nt].copy(), phi=phi, loglik=-obj / 2, aic=obj + 2 * npar,
        bic=obj + npar * math.log(n), deviance=dev_resid, converged=fit.converged,
        n_iter=fit.n_iter, boundary=fit.boundary, boundary_components=fit.boundary_components,
        fixed_estimates=pd.Series(beta, index=pd.Index(gd.lmm.fixed_names, name="coefficient")),
        n_params=npar, vcov_method=fit.vcov_method, _design=gd, _fit=fit)
    if fit.boundary and warn:  # the warning is the fit's note, raised once here
        warnings.warn(res._boundary_note, BoundaryFitWarning, stacklevel=_stacklevel)
    return res


def check_family_args(family: Any, link: Any, trials: Any, offset: Any, nagq: Any,
                       residual: Any, start: Any) -> None:
    """Refuse GLMM arguments given without a family, and LMM arguments given with one."""
    if family is None or family == "gaussian":
        extra = {k: v for k, v in (("link", link), ("trials", trials), ("offset", offset))
                 if v is not None}
        if nagq != 1:
            extra["nagq"] = nagq
        if family == "gaussian" and link not in (None, "identity"):
            raise ArgumentError(f"link={link!r} needs a non-Gaussian family; the Gaussian "
                                "linear mixed model has the identity link.")
        extra.pop("link", None) if family == "gaussian" else None
        if extra:
            raise ArgumentError(
                f"{', '.join(f'{k}=' for k in extra)} appl{'y' if len(extra) > 1 else 'ies'} "
                "to generalised linear mixed models only; give family='binomial', 'poisson' "
                "or 'beta', or drop the argument.")
        return
    if residual is not None:
        raise ArgumentError(
            f"residual={residual!r} (one residual variance per stratum) applies to Gaussian "
            f"models only; a {family!r} model has no residual variance. Drop residual=.")
    if start is not None:
        raise ArgumentError("start= (starting SDs of a linear mixed model) does not apply with "
                            "family=; drop start=.")


def mixed_glmm(model: str | ModelSpec, data: pd.DataFrame, *, family: Any, link: str | None,
               trials: Any, offset: str | None, nagq: int, residual: Any, start: Any,
               missing: str, squeeze: Any = False) -> GlmmResult | None:
    """``irm.mixed``'s GLMM route: the :class:`GlmmResult` of ``family`` (None for the
    Gaussian family, which keeps the linear mixed model), after refusing arguments that do
    not belong to the model asked for.

    Parameters
    ----------
    family : {"binomial", "poisson", "beta"} or None or "gaussian"
        The conditional distribution (:func:`irmodels.models._family.family`).
    link : str, optional
        The link; default the family's canonical one (binomial: ``logit``, also ``probit``,
        ``cloglog``, ``log``, ``identity``; Poisson: ``log``, also ``identity``, ``sqrt``).
    trials : str or int, optional
        Binomial: the trials of each row (a column or a number; P@10 as successes
        ``round(10 * P@10)`` has ``trials=10``), the response counting successes (R's
        ``cbind(s, trials - s)``); without it the response must be 0/1.
    offset : str, optional
        A column added to the linear predictor (link scale), e.g. ``log(depth)``.
    nagq : int
        1 (default) the Laplace approximation; ``2..100`` adaptive Gauss-Hermite quadrature
        (one scalar random term, as lme4); 0 lme4's ``nAGQ = 0``.
    squeeze : bool
        Beta only: Smithson & Verkuilen's squeeze of scores at 0 or 1 (else refused); see
        :func:`irmodels.models._family_beta.squeeze`.
    """
    check_family_args(family, link, trials, offset, nagq, residual, start)
    if family is None or family == "gaussian":
        if squeeze is not False:
            raise ArgumentError("squeeze= applies to the beta family only (scores of exactly "
                                "0 or 1); give family='beta', or drop squeeze=.")
        return None
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    extra = tuple(c for c in (trials, offset) if isinstance(c, str))
    data, n_dropped, _ = drop_missing(data, tuple(model_columns(model, data, None)) + extra,
                                      missing, "irm.mixed")
    fit = fit_glmm_model(model, data, family=family, link=link, trials=trials, offset=offset,
                         nagq=nagq, squeeze=squeeze, _stacklevel=4)
    if n_dropped:
        object.__setattr__(fit, "n_dropped", n_dropped)  # a frozen result: set once, here
    return fit
