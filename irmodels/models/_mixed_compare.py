"""Likelihood-ratio comparisons of linear mixed fits: ``irm.compare_models`` (re-exported by
:mod:`irmodels.models.mixed`)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from irmodels.errors import DesignError, ModelError
from irmodels.models._glmm_inference import compare_glmm
from irmodels.models._lmm import SlopeMixedResult
from irmodels.models._mixed_result import MixedResult
from irmodels.models.base import distinct_labels, lr_sequence

__all__ = ["COMPARE_COLUMNS", "compare_models"]

#: Columns of :func:`compare_models`, in this order.
COMPARE_COLUMNS = ("loglik", "aic", "bic", "statistic", "df", "p", "npar", "likelihood")



def _label(r: MixedResult) -> str:
    return str(r.spec) + (f" | residual={r.residual}" if r.residual else "")


def compare_models(*results: MixedResult, refit: bool = True) -> pd.DataFrame:
    """Likelihood-ratio tests, AIC, BIC and log-likelihood of nested mixed models.

    Parameters
    ----------
    *results : MixedResult
        Two or more fits to the same observations. Generalised linear mixed models
        (``irm.mixed(..., family=...)``, ML fits: ``refit`` does not apply) are compared as R's
        ``anova(m0, m1)`` for ``glmer`` and glmmTMB, nested models of one family, link and
        ``nagq`` only (:func:`irmodels.models._glmm_inference.compare_glmm`).
    refit : bool
        lme4's ``anova(..., refit = TRUE)`` (the default): every REML fit is refitted by ML
        before the comparison, so that the likelihoods are comparable whatever the fixed
        parts. ``False`` compares the fits as they are: REML fits must then all be REML and
        share their fixed effects (the right test for models that differ only in their random
        terms or residual variances, as lme4's ``refit = FALSE`` and nlme's ``anova.lme``); a
        :class:`~irmodels.ModelError` says so otherwise.

    Returns
    -------
    DataFrame
        One row per model, indexed by its formula (plus ``| residual=...`` when
        heteroscedastic), ordered by number of parameters as R's ``anova`` does; columns
        ``loglik``, ``aic``, ``bic``, ``statistic`` (``2 * (loglik - loglik of the previous
        row)``, clipped at 0), ``df`` (difference in parameters), ``p`` (chi-squared upper
        tail; NaN in the first row), ``npar``, ``likelihood`` (which likelihood was compared:
        ``"ML"``, ``"ML (refitted)"`` for a REML fit refitted by ML, or ``"REML"``).
        ``attrs["likelihood"]`` is ``"ML"`` or ``"REML"``.

    Raises
    ------
    ModelError
        ``refit=False`` with REML fits whose fixed effects differ, or REML and ML fits mixed.
    DesignError
        The fits were made on different observations or responses.

    Notes
    -----
    REML likelihoods are comparable only between models with the same fixed effects, hence
    lme4's default refit. For variance components (nested random parts, or a heteroscedastic
    against a homoscedastic residual) the REML test (``refit=False``) is the better one: REML
    estimates of the variances are less biased. BIC follows nlme's convention (``log(n - p)``
    under REML) when any model is heteroscedastic, lme4's (``log(n)``) otherwise. The
    chi-squared reference is conservative for variance components tested on the boundary
    (Self & Liang 1987); it is what R reports.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> m0 = irm.mixed("score ~ (1|topic)", data)
    >>> m1 = irm.mixed("score ~ (1|system) + (1|topic)", data)
    >>> cols = ["loglik", "statistic", "df", "likelihood"]
    >>> irm.compare_models(m0, m1, refit=False)[cols].round(3)
                                      loglik  statistic   df likelihood
    model
    score ~ (1|topic)               1074.150        NaN  NaN       REML
    score ~ (1|system) + (1|topic)  1497.476    846.653  1.0       REML
    >>> irm.compare_models(m0, m1)[["loglik", "statistic", "likelihood"]].round(3)
                                     loglik  statistic     likelihood
    model
    score ~ (1|topic)               1077.08        NaN  ML (refitted)
    score ~ (1|system) + (1|topic)  1500.24    846.319  ML (refitted)
    """
    # here, not at import: the GLMM module imports scipy.stats (~0.5 s), which irm.mixed and
    # `irmodels mixed` do not need
    from irmodels.models.glmm import GlmmResult

    if any(isinstance(r, GlmmResult) for r in results):
        bad = [type(r).__name__ for r in results if not isinstance(r, GlmmResult)]
        if bad:
            raise ModelError(
                "compare_models cannot compare a generalised linear mixed model with "
                f"{', '.join(sorted(set(bad)))} (a different family: the likelihoods are not "
                "comparable). Fit every model with the same family= and link=.")
        return compare_glmm(*results)
    if len(results) < 2 or not all(isinstance(r, (MixedResult, SlopeMixedResult))
                                   for r in results):
        raise ModelError(
            "compare_models needs two or more MixedResult objects (fits of irm.mixed); got "
            + ", ".join(type(r).__name__ for r in results)
        )
    if not isinstance(refit, (bool, np.bool_)):
        raise ModelError(f"refit must be True or False; got {refit!r}")
    n = {r.n_obs for r in results}
    resp = {r.spec.response_label for r in results}
    if len(n) > 1 or len(resp) > 1:
        raise DesignError(
            f"the models were fitted to different data (observations: {sorted(n)}; responses: "
            f"{sorted(resp)}); likelihoods are comparable only on the same observations. Fit "
            "every model to the same frame."
        )
    fixed_parts = {(r.spec.intercept, frozenset(t.key for t in r.spec.fixed)) for r in results}
    methods = {r.method for r in results}
    if refit:
        kinds = ["ML" if r.method == "ML" else "ML (refitted)" for r in results]
        results = tuple(r if r.method == "ML" else r._refit_ml() for r in results)
        kind = "ML"
    else:
        if "REML" in methods and (len(fixed_parts) > 1 or len(methods) > 1):
            why = ("their fixed effects differ" if len(fixed_parts) > 1
                   else "some are fitted by ML and some by REML")
            raise ModelError(
                f"REML fits cannot be compared as fitted: {why}, and REML likelihoods are "
                "comparable only between models with the same fixed effects. Pass refit=True "
                "(lme4's default: refit by ML) or fit them with method='ML'."
            )
        kind = methods.pop()
        kinds = [kind] * len(results)
    order = sorted(range(len(results)), key=lambda i: results[i].n_params)
    ordered = [results[i] for i in order]
    convention: Literal["lme4", "nlme"] = (
        "nlme" if any(r.residual for r in ordered) else "lme4")
    labels = distinct_labels([_label(r) for r in ordered])
    ll = np.array([r.loglik for r in ordered])
    npar = np.array([r.n_params for r in ordered], dtype=float)
    stat, dfd, pv = lr_sequence(ll, npar)
    table = pd.DataFrame(
        {"loglik": ll, "aic": [r.aic for r in ordered],
         "bic": [r.information_criterion(convention) for r in ordered],
         "statistic": stat, "df": dfd, "p": pv, "npar": npar.astype(int),
         "likelihood": [kinds[i] for i in order]},
        index=pd.Index(labels, name="model"),
    )
    table.attrs["likelihood"] = kind
    return table
