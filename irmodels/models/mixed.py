"""Linear mixed-effects models: ``irm.mixed(model, data)`` -> :class:`MixedResult`.

Crossed or nested random intercepts (``(1|topic)``, ``(1|topic:system)``, ``(1|topic/system)``,
``(1|topic:shard)``, ...), a fixed part with treatment contrasts (as R's default), and optionally
one residual variance per stratum (nlme's ``varIdent``). Fitted by REML or ML; likelihood-ratio
comparisons with :func:`compare_models`. References: docs/methods.md: "Linear mixed-effects models", "Variance components"; Robertson &
Kanoulas, "On Per-topic Variance in IR Evaluation", SIGIR 2012; Bates et al., "Fitting Linear
Mixed-Effects Models Using lme4", J. Stat. Softw. 67(1), 2015; Pinheiro & Bates, "Mixed-Effects
Models in S and S-PLUS", 2000 (varIdent, section 5.2); Kuznetsova, Brockhoff & Christensen,
"lmerTest Package", J. Stat. Softw. 82(13), 2017 (Satterthwaite df).

The fit runs in lme4's four stages, one module each, all re-exported here:
:func:`mixed_design` -> :class:`MixedDesign` (:mod:`irmodels.models._mixed_design`),
:func:`deviance_function` -> :class:`DevianceFunction` (:mod:`irmodels.models._mixed_deviance`),
:func:`optimize_deviance` -> :class:`Optimum` (:mod:`irmodels.models._mixed_optimize`), and
:func:`mixed_result` -> :class:`MixedResult` (:mod:`irmodels.models._mixed_result`); the
likelihood-ratio comparisons are in :mod:`irmodels.models._mixed_compare`; the Satterthwaite parts behind the
Satterthwaite and Kenward-Roger df are in :mod:`irmodels.models._mixed_df`. A result keeps
its fit as a :class:`MixedState` (typed attributes: ``problem``, ``theta``, ``eta``, ``sigma``,
``vcov``, ``levels``, ``codes``, ``order``, ``data``, ``fixed_terms``, ``design``, ``devfun``,
``optimum``) in ``fit._state``; the satellites (``_mixed_anova``, ``_mixed_confint``, the
G-study intervals, the bootstrap) read those attributes (``fit._state.problem``), never
``fit._state["problem"]`` (item access remains only for code written against the former dict).
The satellites import the stage modules, not this one; this module imports them and holds
``irm.mixed`` itself.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from irmodels._threads import LARGE, kernel_threads
from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DataFormatError
from irmodels.formula.spec import ModelSpec
from irmodels.models._anova_fit import drop_missing
from irmodels.models._lmm import fit_if_slopes
from irmodels.models._mixed_compare import COMPARE_COLUMNS, compare_models
from irmodels.models._mixed_design import (
    COVARIATE_RANGE,
    EXACT_FIT_TOL,
    RESPONSE_RANGE,
    MixedDesign,
    mixed_design,
    model_columns,
)
from irmodels.models._mixed_deviance import DevianceFunction, deviance_function
from irmodels.models._mixed_optimize import MixedState, Optimum, optimize_deviance
from irmodels.models._mixed_result import FIXED_COLUMNS, MixedResult, mixed_result

__all__ = ["COMPARE_COLUMNS", "COVARIATE_RANGE", "EXACT_FIT_TOL", "FIXED_COLUMNS", "RESPONSE_RANGE",
           "DevianceFunction", "MixedDesign", "MixedResult", "MixedState", "Optimum",
           "compare_models", "deviance_function", "mixed", "mixed_design", "mixed_result",
           "optimize_deviance"]

# --------------------------------------------------------------------------------------------
# fitting


def mixed(
    model: str | ModelSpec,
    data: pd.DataFrame,
    *,
    method: Literal["REML", "ML"] | None = None,
    residual: str | None = None,
    start: dict[str, float] | None = None,
    maxiter: int = 2000,
    tol: float = 1e-9,
    drop_degenerate: bool = False,
    missing: Literal["raise", "drop"] = "raise",
    family: Literal["gaussian", "binomial", "poisson", "beta"] | None = None,
    link: str | None = None,
    trials: str | int | None = None,
    offset: str | None = None,
    nagq: int = 1,
    squeeze: bool = False,
) -> MixedResult:
    """Fit a linear mixed model with random intercepts by REML or ML (or, with ``family=``, a
    generalised linear mixed model as lme4's ``glmer``).

    Parameters
    ----------
    model : str or ModelSpec
        An lme4-style formula: fixed terms (treatment contrasts, R's default, so coefficients
        equal lme4's and nlme's) plus random intercepts ``(1|g)``, ``(1|a:b)``, ``(1|a/b)``;
        any number, crossed or nested. A model with random slopes (``(1 + x | g)``,
        ``(x || g)``, ``(0 + f | g)``) is fitted by the general engine
        (:mod:`irmodels.models._lmm`, as lme4) and returns a ``SlopeMixedResult``
        (docs/mixed.md, "Random slopes"); ``residual`` and ``start`` do not apply to it.
    data : DataFrame
        A long frame (:func:`irmodels.frame`) or any frame with the named columns. The first
        category (natural order for strings) is the reference level of a fixed factor.
    method : {"REML", "ML"}, optional
        Restricted (the default for a linear mixed model) or full maximum likelihood. A GLMM
        (``family=``) is a maximum-likelihood fit, as glmer's: ``"ML"`` or omitted; ``"REML"``
        is refused.
    residual : str, optional
        ``None`` for one residual variance; a factor or interaction (``"topic:system"``,
        ``"system"``) for one residual variance per stratum, nlme's
        ``varIdent(form = ~1 | topic*system)``. Ratios are relative to the first stratum in
        data order (as nlme does).
    start : dict, optional
        Starting standard deviations relative to the residual SD, by random-term name
        (``{"topic": 2.0}``); missing terms start from the moment estimates.
    maxiter : int
        Iteration limit of the optimiser (L-BFGS-B).
    tol : float
        Convergence tolerance on the projected gradient of the deviance.
    drop_degenerate : bool
        Heteroscedastic fits: drop strata with a single observation or no variance (with a
        :class:`~irmodels.DataQualityWarning` naming them) instead of raising.
    missing : {"raise", "drop"}
        ``"raise"`` (default): a missing response or label raises. ``"drop"`` (statsmodels'
        ``missing="drop"``, lme4's default ``na.omit``): rows with a missing value in a column
        the model uses (response, fixed and grouping factors, covariates, the columns of
        expressions, ``residual``'s factors) are left out, with a
        :class:`~irmodels.DataQualityWarning` naming how many and where; their number is
        ``fit.n_dropped`` (and in ``fit.notes``). Missing values in other columns are ignored.
    family, link, trials, offset, nagq
        ``family="binomial" | "poisson" | "beta"``: a generalised linear mixed model as lme4's
        ``glmer`` (a :class:`~irmodels.models.glmm.GlmmResult`; ``link`` default canonical;
        binomial successes with ``trials=`` a column or a number; ``offset=`` a column on the
        link scale; ``nagq`` 1 = Laplace, ``2..100`` adaptive Gauss-Hermite quadrature for one
        scalar random term; see :func:`irmodels.models.glmm.mixed_glmm`). None or
        ``"gaussian"``: the linear mixed model.
    squeeze : bool
        Beta family only. A beta model needs scores strictly inside (0, 1): by default scores
        of exactly 0 or 1 are refused (a ``DataFormatError`` naming the rows, topics and
        systems). ``squeeze=True`` fits Smithson & Verkuilen's (2006) squeeze of every score,
        ``(y (n - 1) + 0.5) / n`` with ``n`` the number of rows (0 becomes ``1 / (2n)``, 1
        becomes ``1 - 1 / (2n)``, other scores move by less than ``1 / (2n)``); the fit's
        means are then those of the squeezed scores.

    Returns
    -------
    MixedResult
        ``variance_components()`` (index component, columns ``variance, sd, share``),
        ``fixed`` (``estimate, se, df, t, p``), ``loglik``, ``aic``, ``bic``, ``deviance``,
        ``random_effects``, ``residual_variance``, ``variance_ratios``, ``converged``,
        ``n_iter``, ``boundary``; methods ``marginal_means``, ``tukey``, ``summary``,
        ``to_latex``. A ``SlopeMixedResult`` for a model with random slopes.

    Raises
    ------
    DesignError
        A random term with one level, one observation per level, or confounded with a fixed
        term; degenerate residual strata; a rank-deficient fixed design.
    ConvergenceError
        The optimiser produced no finite likelihood.

    Warns
    -----
    BoundaryFitWarning
        A variance component is estimated at zero (a legitimate optimum on the boundary).
    ConvergenceWarning
        The iteration limit was reached before the gradient criterion was met.

    Notes
    -----
    *Estimation.* The profiled deviance of lme4 (Bates et al. 2015, eqs. 34 and 41) in the
    relative covariance parameters ``theta_k = sigma_k / sigma`` (and ``log delta_s`` for the
    stratum SD ratios), minimised by L-BFGS-B with analytic gradients and bounds
    ``theta >= 0``. Each random term's block of ``Z'Z`` is diagonal, so the largest term is
    eliminated through its diagonal and only the small remainder is factorised densely; no
    n x n matrix is formed. On a balanced crossed design with one residual variance and no
    numeric covariate the stratum sums of squares are sufficient and the REML (or ML) optimum
    equals the ANOVA (expected-mean-squares) estimates when they are all positive: those are
    returned (``closed_form=True``) and otherwise used as starting values
    (``optimize_deviance(..., closed_form=False)`` forces the iteration). A variance whose
    optimum is 0 is reported as exactly 0 (``boundary``, lme4's ``isSingular``).

    *Conventions.* ``loglik`` is the restricted log-likelihood under REML as lme4 and nlme
    report it (no ``log|X'X|`` constant). The number of parameters is the fixed effects plus
    the variance parameters (random terms, the residual, and the stratum ratios). ``aic =
    -2 loglik + 2 npar``. ``bic = -2 loglik + npar log(N)`` with ``N = n_obs`` for
    homoscedastic fits (lme4's convention, also under REML), and with ``N = n_obs - p`` under
    REML for heteroscedastic fits (nlme's convention; ``n_obs`` under ML), so that the numbers
    equal those of the R function that fits each model.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> fit = irm.mixed("score ~ (1|system) + (1|topic)", data)
    >>> fit.closed_form
    True
    >>> fit.variance_components().round(5)
               variance       sd    share
    component
    system      0.00717  0.08466  0.17596
    topic       0.02264  0.15047  0.55593
    Residual    0.01092  0.10450  0.26811
    >>> round(fit.loglik, 3)
    1497.476

    A binomial GLMM (``glmer(cbind(rel, 10 - rel) ~ system + (1 | topic), binomial)``):

    >>> import numpy as np
    >>> p10 = data[data.system.isin(data.system.cat.categories[:3])].assign(
    ...     rel=lambda d: np.round(d.score * 10))
    >>> g = irm.mixed("rel ~ system + (1|topic)", p10, family="binomial", trials=10)
    >>> round(float(g.fixed.loc["systemsys2", "estimate"]), 4)
    1.9431
    """
    if method is not None and method not in ("REML", "ML"):
        raise ArgumentError(f"method must be 'REML' or 'ML'; got {method!r}"
                            + did_you_mean(method, ("REML", "ML")))
    if family is not None or link is not None or trials is not None or offset is not None or (
            nagq != 1) or squeeze is not False:
        # here, not at import: the GLMM engine imports scipy.stats (~0.5 s), which a linear
        # mixed fit and `irmodels mixed` do not need
        from irmodels.models.glmm import mixed_glmm

        if method == "REML" and family not in (None, "gaussian"):
            raise ArgumentError(
                f"method='REML' does not apply to a {family} GLMM: it is fitted by maximum "
                "likelihood (the Laplace approximation or quadrature, as glmer and glmmTMB); "
                "drop method= (or pass method='ML').")

        with kernel_threads(LARGE - 1):  # one BLAS thread (its small q x q solves)
            glmm = mixed_glmm(model, data, family=family, link=link, trials=trials,
                              offset=offset, nagq=nagq, residual=residual, start=start,
                              missing=missing, squeeze=squeeze)
        if glmm is not None:
            return glmm  # type: ignore[return-value]
    if method is None:
        method = "REML"
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    data, n_dropped, _ = drop_missing(data, model_columns(model, data, residual), missing,
                                      "irm.mixed")
    slopes = fit_if_slopes(model, data, method=method, residual=residual, start=start,
                           maxiter=maxiter)
    if slopes is None:
        design = mixed_design(model, data, residual=residual, drop_degenerate=drop_degenerate)
        devfun = deviance_function(design, method)
        with kernel_threads(devfun.problem.r):  # BLAS threads by size, once per fit
            opt = optimize_deviance(devfun, start=start, maxiter=maxiter, tol=tol)
            fit = mixed_result(design, devfun, opt)
    else:
        fit = slopes  # type: ignore[assignment]
    if n_dropped:
        object.__setattr__(fit, "n_dropped", n_dropped)  # a frozen result: set once, here
    return fit
