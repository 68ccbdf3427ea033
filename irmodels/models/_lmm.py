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
from scipy.linalg import solve_triangular
from scipy.special import stdtr

from irmodels._threads import kernel_threads
from irmodels.errors import (
    BoundaryFitWarning,
    DataFormatError,
    ModelError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design, _lmm_inference
from irmodels.models._lmm_design import (
    DENSE_MAX_Q,
    LMMDesign,
    PLSFit,
    ProfiledDeviance,
    ReTerm,
    is_expression,
    is_slope_spec,
    lmm_design,
    term_text,
)
from irmodels.models._lmm_grad import satterthwaite_dense
from irmodels.models._lmm_optim import SINGULAR_TOL
from irmodels.models._lmm_optim import optimize as _optimize
from irmodels.models._mixed_design import (
    fixed_design,
)
from irmodels.models._mixed_plots import MixedResidualPlots, caterpillar
from irmodels.models._mixed_report import slope_display_tables, slope_section
from irmodels.models._mixed_residuals import mixed_residuals
from irmodels.models.base import FittedModel, LinearMixedCounts, OptSummary
from irmodels.stats.gtheory import from_fit

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models._mixed_residuals import ResidualType

__all__ = ["DENSE_MAX_Q", "LMMDesign", "ReTerm", "SlopeMixedResult", "SINGULAR_TOL", "fit_lmm",
           "lmm_design", "is_slope_spec"]


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
    _dev: ProfiledDeviance = field(default=None)  # type: ignore[assignment]
    _pls: PLSFit = field(default=None)  # type: ignore[assignment]

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
        return _lmm_inference.marginal_means_matrix(self, factor)

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
        M, _ = self._mm_matrix(factor)
        return _lmm_inference.contrast_df(self, np.atleast_2d(np.asarray(L, dtype=float)) @ M, ddf)

    @property
    def residual(self) -> None:
        """Always None: one residual variance (as :attr:`MixedResult.residual`)."""
        return None

    def _refit_to(self, data: pd.DataFrame) -> SlopeMixedResult:
        """``irm.mixed(spec, data, method=)``'s engine for random slopes (lme4's ``refit``)."""
        return fit_lmm(self.spec, data, method=self.method)  # type: ignore[arg-type]

    def information_criterion(self, convention: Literal["lme4", "nlme"] = "lme4") -> float:
        """BIC under a named convention (as :meth:`MixedResult.information_criterion`):
        ``"lme4"`` uses ``log(n_obs)``, ``"nlme"`` ``log(n_obs - p)`` under REML."""
        if convention not in ("lme4", "nlme"):
            raise ModelError(f"convention must be 'lme4' or 'nlme'; got {convention!r}")
        p = len(self.fixed_estimates)
        n = self.n_obs - p if (convention == "nlme" and self.method == "REML") else self.n_obs
        return self.deviance + self.n_params * math.log(n)

    def _refit_ml(self, *, warn: bool = True) -> SlopeMixedResult:
        """The same model refitted by ML (for :func:`irmodels.compare_models`; the profile
        intervals refit with ``warn=False``: no boundary warning)."""
        if self.method == "ML":
            return self
        return fit_lmm(self.spec, self._design.data, method="ML", terms=self._design.terms,
                       warn=warn)

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
            with kernel_threads(self._dev.q):
                return satterthwaite_dense(self._dev.prof, self.theta, self.sigma)
        return _lmm_inference.satterthwaite_parts(self)

    def _df_for(self, L: np.ndarray) -> np.ndarray:
        return _lmm_inference.df_for(self, L)

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

    def anova(self, type: int = 3, *,
              ddf: Literal["satterthwaite", "kenward-roger"] = "satterthwaite") -> Any:
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
        return _lmm_inference.anova(self, type=type, ddf=ddf)

    def confint(self, method: Literal["profile", "bootstrap", "wald"] = "profile", *,
                level: float = 0.95, parm: Any = None, n_resamples: int = 500,
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
        # here, not at import: _lmm_confint imports scipy.stats (~0.5 s), which the fit and
        # `irmodels mixed` do not need
        from irmodels.models._lmm_confint import confint

        return confint(self, method=method, level=level, parm=parm, n_boot=n_resamples,
                       seed=seed, backend=backend, n_workers=n_workers)

    def gstudy(self, facets: Any = None, data: Any = None) -> Any:
        """Refused (:class:`~irmodels.ModelError`): G coefficients need variance components
        constant over the design; a random slope makes them depend on x."""
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
        return mixed_residuals(self, type)

    def plot(self, term: str | None = None, *, level: float = 0.95, ax: Any = None) -> Any:
        """Caterpillar plot of the conditional modes of grouping factor ``term`` (default
        ``topic`` when the model has it, else the first): a panel per effect, the levels sorted
        by the first effect, each mode with ``b +- z condsd`` at ``level`` (lme4's
        ``dotplot(ranef(fit, condVar = TRUE))``). ``ax``: as many Axes as effects; by default a
        new figure, closed in pyplot. Returns the matplotlib Figure."""
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
                       if f not in part.columns and not is_expression(self.spec, f)]
            if missing:
                raise DataFormatError(f"newdata lacks column(s) {', '.join(missing)} of the "
                                      f"random term {term_text(b.term)}")
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
                    E[:, r] = (self.spec.values(part, col) if is_expression(self.spec, col)
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
    def _boundary_note(self) -> str:
        """The note (and the :class:`~irmodels.BoundaryFitWarning`) of a singular fit."""
        return (f"singular fit: the variance of {', '.join(self.boundary_components)} is "
                "estimated at zero")

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats: a singular fit (the text of its warning), a failed convergence."""
        out = []
        if self.boundary:
            out.append(self._boundary_note)
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
        return slope_display_tables(self)

    def to_section(self, *, digits: int = 4, plot: bool = True) -> Any:
        """The report section (``irm.report(fit)``): fit line, notes (singular fit), random
        effects with correlations, fixed effects, and in HTML the caterpillar plot."""
        return slope_section(self, digits=digits, plot=plot)

    def __repr__(self) -> str:
        return (f"<SlopeMixedResult {self.method} {self.spec} n={self.n_obs} "
                f"logLik={self.loglik:.4f}>")


def fit_lmm(model: str | ModelSpec, data: pd.DataFrame, *,
            method: Literal["REML", "ML"] = "REML",
            terms: tuple[ReTerm, ...] | None = None,
            maxiter: int = 2000, warn: bool = True, _stacklevel: int = 2) -> SlopeMixedResult:
    """Fit a linear mixed model with general random-effects terms (see the module notes).

    ``terms`` overrides the spec's random terms (``ReTerm(factors, intercept, effects)``). A
    singular fit warns (:class:`~irmodels.BoundaryFitWarning`, the text of its note) unless
    ``warn=False``.
    """
    if method not in ("REML", "ML"):
        raise ModelError(f"method must be 'REML' or 'ML'; got {method!r}")
    design = lmm_design(model, data, terms)
    dev = ProfiledDeviance(design, method == "REML")
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
    fit = SlopeMixedResult(
        spec=design.spec, method=method, n_obs=n, theta=opt.theta.copy(), sigma=sigma,
        loglik=loglik, aic=devi + 2 * npar, bic=devi + npar * math.log(n), deviance=devi,
        converged=opt.converged, n_iter=opt.n_iter, boundary=bool(bnd),
        boundary_components=tuple(bnd),
        fixed_estimates=pd.Series(f.beta, index=pd.Index(design.fixed_names, name="coefficient")),
        n_params=npar, _design=design, _dev=dev, _pls=f)
    if bnd and warn:  # the warning is the fit's note, raised once here
        warnings.warn(fit._boundary_note, BoundaryFitWarning, stacklevel=_stacklevel)
    return fit


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
