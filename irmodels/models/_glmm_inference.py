"""Inference on GLMMs: likelihood-ratio tests between nested fits and the R2 / ICC of Nakagawa.

- :func:`compare_glmm` is ``irm.compare_models`` for :class:`~irmodels.models.glmm.GlmmResult`
  fits: R's ``anova(m0, m1)`` for ``glmer`` and glmmTMB fits (GLMMs are fitted by maximum
  likelihood, so nothing is refitted): ``Chisq = 2 (logLik1 - logLik0)`` on ``Df`` = the
  difference in parameters, the chi-squared upper tail. Fits of different data, families, links
  or quadrature, and fits that are not nested, are refused.
- :func:`r2_nakagawa` and :func:`icc_nakagawa`: the marginal and conditional R2 and the
  intra-class correlations on the latent (link) scale of Nakagawa & Schielzeth (2013, Methods
  Ecol. Evol. 4, 133-142) as generalised by Nakagawa, Johnson & Schielzeth (2017, J. R. Soc.
  Interface 14: 20170213), with Johnson's (2014, Methods Ecol. Evol. 5, 944-946) mean variance
  of random slopes; see :meth:`GlmmResult.r2` for the formulas.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import polygamma

from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DesignError, ModelError
from irmodels.models.base import distinct_labels, lr_sequence

__all__ = ["compare_glmm", "r2_parts", "r2_nakagawa", "icc_nakagawa", "distribution_variance",
           "random_variances", "R2_COLUMNS", "ICC_COLUMNS"]

#: Columns of :meth:`GlmmResult.r2`.
R2_COLUMNS = ("marginal", "conditional", "var_fixed", "var_random", "var_distribution",
              "method")
#: Columns of :meth:`GlmmResult.icc`.
ICC_COLUMNS = ("variance", "icc_adjusted", "icc_conditional")

_METHODS = {"binomial": ("theoretical",), "poisson": ("lognormal", "delta", "trigamma"),
            "beta": ("trigamma", "delta")}


# --------------------------------------------------------------------------------------------
# likelihood-ratio tests


def _same_data(a: Any, b: Any) -> str | None:
    """Why two fits are not fitted to the same observations (None when they are)."""
    ga, gb = a._design, b._design
    if len(ga.y) != len(gb.y):
        return f"{len(ga.y)} and {len(gb.y)} observations"
    if a.spec.response_label != b.spec.response_label:
        return f"responses {a.spec.response_label!r} and {b.spec.response_label!r}"
    if not (np.array_equal(ga.y, gb.y) and np.array_equal(ga.weights, gb.weights)):
        return "different response values or trials"
    if not np.array_equal(ga.offset, gb.offset):
        return "different offsets"
    return None


def _nested(small: Any, big: Any) -> str | None:
    """Why ``small`` is not nested in ``big`` (None when it is): the fixed columns of ``small``
    lie in the column space of ``big``'s, and every random term of ``small`` has a term of
    ``big`` on the same grouping factor with at least its effects."""
    X0, X1 = small._design.lmm.X, big._design.lmm.X
    if X0.shape[1]:
        coef, *_ = np.linalg.lstsq(X1, X0, rcond=None) if X1.shape[1] else (np.zeros((0, 0)),)
        resid = X0 - X1 @ coef if X1.shape[1] else X0
        if np.max(np.abs(resid)) > 1e-8 * max(1.0, float(np.max(np.abs(X0)))):
            return "its fixed effects are not a subset of the larger model's"
    for b0 in small._design.lmm.blocks:
        if not any(b1.group == b0.group and set(b0.columns) <= set(b1.columns)
                   for b1 in big._design.lmm.blocks):
            return (f"its random term ({' + '.join(b0.columns)} | {b0.group}) has no "
                    "counterpart in the larger model")
    return None


def compare_glmm(*results: Any) -> pd.DataFrame:
    """Likelihood-ratio tests between nested GLMMs (``irm.compare_models`` for fits of
    ``irm.mixed(..., family=...)``), as R's ``anova(m0, m1)`` for ``glmer`` and glmmTMB fits.

    Returns the frame of :func:`irmodels.compare_models` (rows ordered by number of
    parameters; ``loglik, aic, bic, statistic, df, p, npar, likelihood``; ``likelihood`` is
    ``"ML"``; ``attrs["approximation"]`` names the Laplace approximation or the quadrature).
    The models must be fitted to the same rows (response, trials, offset), with the same
    family, link and ``nagq``, and each must be nested in the next (fixed columns in the span
    of the larger model's, random terms contained in its terms); else a typed error says which
    condition fails. The chi-squared reference is conservative for a variance tested on its
    boundary (Self & Liang 1987), as in R. The fits are ``GlmmResult`` objects
    (:func:`irmodels.compare_models` refuses a GLMM compared with another kind of fit).
    """
    if len(results) < 2:
        raise ModelError("compare_models needs two or more fits; got "
                         f"{len(results)}.")
    ref = results[0]
    for r in results[1:]:
        if (r.family, r.link) != (ref.family, ref.link):
            raise ModelError(
                f"the models have different families or links ({ref.family}({ref.link}) and "
                f"{r.family}({r.link})); likelihoods are comparable only within one family "
                "and link. Fit every model with the same family= and link=.")
        if r.nagq != ref.nagq:
            raise ModelError(
                f"the models were fitted with different nagq ({ref.nagq} and {r.nagq}); the "
                "Laplace and quadrature likelihoods are on different scales. Fit every model "
                "with the same nagq=.")
        why = _same_data(ref, r)
        if why is not None:
            raise DesignError(
                f"the models were fitted to different data ({why}); likelihoods are "
                "comparable only on the same observations. Fit every model to the same frame "
                "with the same trials= and offset=.")
        if ref._design.squeeze != r._design.squeeze:
            raise DesignError("one beta model squeezes the scores (squeeze=True) and the other "
                              "does not: the responses differ. Fit both the same way.")
    order = sorted(range(len(results)), key=lambda i: results[i].n_params)
    ordered = [results[i] for i in order]
    for a, b in zip(ordered, ordered[1:]):
        if a.n_params == b.n_params:
            raise ModelError(
                f"{a.spec} and {b.spec} have the same number of parameters ({a.n_params}); a "
                "likelihood-ratio test needs nested models, one with fewer parameters. "
                "Compare non-nested models by their aic and bic instead.")
        why = _nested(a, b)
        if why is not None:
            raise ModelError(
                f"{a.spec} is not nested in {b.spec}: {why}. A likelihood-ratio test needs "
                "nested models; compare non-nested models by their aic and bic instead.")
    labels = distinct_labels([str(r.spec) for r in ordered])
    ll = np.array([r.loglik for r in ordered])
    npar = np.array([r.n_params for r in ordered], dtype=float)
    stat, dfd, pv = lr_sequence(ll, npar)
    table = pd.DataFrame(
        {"loglik": ll, "aic": [r.aic for r in ordered], "bic": [r.bic for r in ordered],
         "statistic": stat, "df": dfd, "p": pv, "npar": npar.astype(int),
         "likelihood": ["ML"] * len(ordered)},
        index=pd.Index(labels, name="model"))
    table.attrs["likelihood"] = "ML"
    table.attrs["approximation"] = ("Laplace" if ref.nagq == 1 else
                                    f"adaptive Gauss-Hermite quadrature, nAGQ = {ref.nagq}"
                                    if ref.nagq > 1 else "nAGQ = 0")
    return table


# --------------------------------------------------------------------------------------------
# R2 and ICC (Nakagawa, Johnson & Schielzeth 2017)


def random_variances(fit: Any) -> pd.Series:
    """The variance of each random term on the latent scale averaged over the rows: ``mean_i
    z_i' Sigma_k z_i`` (Johnson 2014; the variance itself for a random intercept), indexed by
    the term's grouping factor (``group: effect + effect`` for a term with slopes)."""
    d = fit._design.lmm
    Z = d.Z.tocsc()
    out, names = [], []
    for b, T in zip(d.blocks, fit._templates()):
        S = T @ T.T
        Zb = Z[:, b.offset:b.offset + b.q * b.n_levels]
        zi = np.column_stack([np.asarray(Zb[:, j::b.q].sum(axis=1)).ravel()
                              for j in range(b.q)])
        out.append(float(np.mean(np.sum((zi @ S) * zi, axis=1))))
        names.append(b.group if b.columns == ["(Intercept)"] else
                     f"{b.group}: {' + '.join(b.columns)}")
    return pd.Series(out, index=pd.Index(names, name="component"), name="variance")


def distribution_variance(family: str, link: str, method: str, *, mean: float | None = None,
                          phi: float | None = None) -> float:
    """The distribution-specific (observation-level) variance on the latent scale
    (Nakagawa et al. 2017, table 1). Binomial: ``pi^2 / 3`` (logit), 1 (probit), ``pi^2 / 6``
    (cloglog). Poisson with the log link, at the mean count ``mean``: ``log(1 + 1/mean)``
    (``"lognormal"``), ``1/mean`` (``"delta"``), ``trigamma(mean)`` (``"trigamma"``); sqrt link
    0.25. Beta with the logit link, at the mean ``mean`` and precision ``phi``:
    ``trigamma(mean phi) + trigamma((1 - mean) phi)`` (``"trigamma"``: the variance of
    ``logit(y)``) or ``1 / (mean (1 - mean) (1 + phi))`` (``"delta"``).

    >>> round(distribution_variance("binomial", "logit", "theoretical"), 6)
    3.289868
    >>> round(distribution_variance("poisson", "log", "lognormal", mean=2.0), 6)
    0.405465
    """
    if family == "binomial":
        table = {"logit": math.pi ** 2 / 3, "probit": 1.0, "cloglog": math.pi ** 2 / 6}
        if link not in table:
            raise ModelError(f"the latent-scale R2 of a binomial model needs the logit, probit "
                             f"or cloglog link; this fit has the {link} link.")
        return table[link]
    if family == "poisson":
        if link == "sqrt":
            return 0.25
        if link != "log":
            raise ModelError(f"the latent-scale R2 of a Poisson model needs the log or sqrt "
                             f"link; this fit has the {link} link.")
        lam = float(mean)  # type: ignore[arg-type]
        if method == "lognormal":
            return math.log1p(1.0 / lam)
        if method == "delta":
            return 1.0 / lam
        return float(polygamma(1, lam))
    if family == "beta":
        if link != "logit":
            raise ModelError(f"the latent-scale R2 of a beta model needs the logit link; this "
                             f"fit has the {link} link.")
        mu, ph = float(mean), float(phi)  # type: ignore[arg-type]
        if method == "trigamma":
            return float(polygamma(1, mu * ph) + polygamma(1, (1 - mu) * ph))
        return 1.0 / (mu * (1 - mu) * (1 + ph))
    raise ModelError(f"no latent-scale R2 for the {family} family.")


def r2_parts(var_fixed: float, var_random: np.ndarray, var_dist: float) -> dict[str, Any]:
    """R2 and ICC from the three variances (Nakagawa et al. 2017, eqs. 2.4-2.5, 5.1-5.2):
    ``R2m = vf / (vf + vr + vd)``, ``R2c = (vf + vr) / (vf + vr + vd)``, adjusted ICC
    ``vr / (vr + vd)`` and conditional ICC ``vr / (vf + vr + vd)`` (``vr`` the sum of the
    random variances; per component ``vr_k`` in the numerators).

    >>> r = r2_parts(1.0, np.array([2.0]), 1.0)
    >>> r["r2_marginal"], r["r2_conditional"], r["icc_adjusted"]
    (0.25, 0.75, 0.6666666666666666)
    """
    vr = np.asarray(var_random, dtype=float)
    s = float(vr.sum())
    den = var_fixed + s + var_dist
    return {"var_fixed": float(var_fixed), "var_random": s, "var_dist": float(var_dist),
            "r2_marginal": var_fixed / den, "r2_conditional": (var_fixed + s) / den,
            "icc_adjusted": s / (s + var_dist), "icc_conditional": s / den,
            "icc_components_adjusted": vr / (s + var_dist), "icc_components_conditional": vr / den}


def _check_method(family: str, method: str | None) -> str:
    allowed = _METHODS.get(family)
    if allowed is None:
        raise ModelError(f"no latent-scale R2 for the {family} family.")
    if method is None:
        return allowed[0]
    if method not in allowed:
        raise ArgumentError(f"method={method!r} does not apply to the {family} family; use one of "
                            f"{', '.join(map(repr, allowed))}" + did_you_mean(str(method), allowed))
    return method


def _null_mean(fit: Any) -> float:
    """The mean of the response on the data scale under the null model (an intercept and the
    same random terms, offset and trials; Nakagawa et al. 2017, section 5.8): Poisson
    ``mean_i exp(b0 + offset_i + vr0 / 2)``, beta ``linkinv(b0)``."""
    gd = fit._design
    null = fit._null_model()
    b0 = float(null.fixed_estimates.iloc[0])
    if fit.family == "poisson":
        vr0 = float(random_variances(null).sum())
        return float(np.mean(np.exp(b0 + gd.offset + vr0 / 2)))
    return float(gd.family.link.linkinv(np.array([b0]))[0])


def _parts(fit: Any, method: str | None) -> tuple[dict[str, Any], pd.Series, str]:
    m = _check_method(fit.family, method)
    X = fit._design.lmm.X
    eta_f = X @ fit.fixed_estimates.to_numpy()
    vf = float(np.var(eta_f, ddof=1)) if len(eta_f) > 1 else 0.0
    vr = random_variances(fit)
    mean = _null_mean(fit) if fit.family in ("poisson", "beta") and not (
        fit.family == "poisson" and fit.link == "sqrt") else None
    vd = distribution_variance(fit.family, fit.link, m, mean=mean, phi=fit.phi)
    return r2_parts(vf, vr.to_numpy(), vd), vr, m


def r2_nakagawa(fit: Any, method: str | None = None) -> pd.DataFrame:
    """:meth:`GlmmResult.r2` (see there)."""
    p, _, m = _parts(fit, method)
    row = {"marginal": p["r2_marginal"], "conditional": p["r2_conditional"],
           "var_fixed": p["var_fixed"], "var_random": p["var_random"],
           "var_distribution": p["var_dist"], "method": m}
    return pd.DataFrame([row], columns=list(R2_COLUMNS),
                        index=pd.Index([str(fit.spec)], name="model"))


def icc_nakagawa(fit: Any, method: str | None = None) -> pd.DataFrame:
    """:meth:`GlmmResult.icc` (see there)."""
    p, vr, _ = _parts(fit, method)
    idx = list(vr.index) + ["total"]
    out = pd.DataFrame({
        "variance": np.append(vr.to_numpy(), p["var_random"]),
        "icc_adjusted": np.append(p["icc_components_adjusted"], p["icc_adjusted"]),
        "icc_conditional": np.append(p["icc_components_conditional"], p["icc_conditional"])},
        index=pd.Index(idx, name="component"))
    return out[list(ICC_COLUMNS)]
