"""Marginal means and their contrasts on the link and the response scale of a model with a link
function (GLMs, GLMMs): emmeans' ``type = "response"``, ``regrid`` and ratio contrasts.

The marginal means of a model with a link are computed on the link scale, ``eta = L b`` with
covariance ``V = L Cov(b) L'`` and ``df = inf`` (Wald z). On the response scale (emmeans'
``summary(emm, type = "response")``):

- the mean is ``mu = g^{-1}(eta)``;
- its standard error is the delta method's ``|dmu/deta| se(eta)``;
- its confidence interval is the link-scale interval back-transformed,
  ``g^{-1}(eta -+ z se(eta))`` (it stays inside the response's range: probabilities in
  ``[0, 1]``, rates above 0), not ``mu -+ z se(mu)``.

Contrasts of the means on the response scale come in two kinds (``contrast=``):

- ``"ratio"`` (emmeans' ``pairs(emm, type = "response")``): for the log link the ratio of the
  means (rate ratio), for the logit link the odds ratio: ``exp(eta_a - eta_b)``. The test is
  the link-scale test of ``eta_a - eta_b`` (the same z, p and adjustment), the standard error
  the delta method's ``ratio * se(eta_a - eta_b)`` and the interval the back-transformed
  link-scale interval. Only the log and logit links give a ratio;
- ``"difference"`` (emmeans' ``pairs(regrid(emm))``): differences of the response-scale means
  ``mu_a - mu_b`` with the delta-method covariance ``J V J'`` (``J = diag(dmu/deta)``), tested
  with z on that scale.

Models without a link (or with the identity link) have one scale: ``scale="response"`` gives
the same numbers as ``scale="link"``, as emmeans does for an ``lm``; a model of a transformed
response (``logit(AP) ~ ...``) refuses ``scale="response"`` (back-transforming a transformed
response's means is not implemented).

References: Lenth, *emmeans* (R package), vignettes "Transformations and link functions" and
"Comparisons and contrasts"; Agresti (2013), *Categorical data analysis*, sec. 3.1 (delta
method).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from irmodels._validate import check_choice, check_probability
from irmodels.errors import ArgumentError, DesignError

__all__ = ["RATIO_LINKS", "model_link", "comparison_scale", "resolve_contrast", "response_means",
           "response_cov", "on_response_scale", "means_frame", "ratio_columns", "with_ratios"]

#: Links whose back-transformed differences are ratios, and the name of the ratio.
RATIO_LINKS = {"log": "ratio", "logit": "odds ratio"}


def model_link(model: Any, scale: str) -> Any:
    """The :class:`~irmodels.models._family.Link` of ``model`` when ``scale="response"`` needs
    a transformation, else None (``scale="link"``; no link or the identity link: one scale).

    ``model.link`` may be a ``Link`` or a link name; a model without ``link`` has the identity
    link, and refuses ``scale="response"`` when its response is transformed.
    """
    check_choice(scale, "scale", ("link", "response"))
    link = getattr(model, "link", None)
    if isinstance(link, str):
        # here, not at import: _family imports scipy.stats (~0.5 s) and this module is on the
        # `irmodels anova` start-up path (models.base imports it)
        from irmodels.models._family import LINKS

        link = LINKS[link]
    if scale == "link":
        return None
    if link is None:
        transform = getattr(getattr(model, "spec", None), "transform", None)
        if transform:
            raise DesignError(
                f"scale='response' back-transforms means of a model with a link; this model "
                f"fits the transformed response {transform}(...) by least squares, whose means "
                f"are on the {transform} scale. Use scale='link' (the {transform} scale), or "
                "fit a GLM of the untransformed response (family='binomial' or 'beta')."
            )
        return None
    if getattr(link, "name", None) == "identity":
        return None
    return link


def comparison_scale(model: Any, scale: str, contrast: str | None) -> tuple[Any, str | None]:
    """``(link, kind)`` of a comparison of ``model``'s means (``tukey``/``dunnett``):
    ``(None, None)`` on the link scale (or a model with one scale), else the link and
    ``"ratio"`` or ``"difference"`` (:func:`resolve_contrast`). ``contrast`` applies to
    ``scale="response"`` only."""
    link = model_link(model, scale)
    if scale == "link":
        if contrast is not None:
            check_choice(contrast, "contrast", ("ratio", "difference"))
            raise ArgumentError(
                f"contrast={contrast!r} chooses how means are compared on the response scale; "
                "pass scale='response' with it, or leave contrast out for the link scale."
            )
        return None, None
    if link is None:  # one scale: differences, the same numbers as scale="link"
        if contrast is not None:
            check_choice(contrast, "contrast", ("ratio", "difference"))
            if contrast == "ratio":
                raise ArgumentError(
                    "contrast='ratio' needs a model with a log or logit link (rate or odds "
                    "ratios); this model has one scale (no link function), on which means are "
                    "compared by differences. Leave contrast out or use contrast='difference'."
                )
        return None, None
    return link, resolve_contrast(link, contrast)


def resolve_contrast(link: Any, contrast: str | None) -> str:
    """``"ratio"`` or ``"difference"``: ``contrast`` checked against the link (None: a ratio
    where the link gives one, log and logit, else differences of the response-scale means).

    >>> from irmodels.models._family import LINKS
    >>> resolve_contrast(LINKS["logit"], None), resolve_contrast(LINKS["probit"], None)
    ('ratio', 'difference')
    """
    if contrast is None:
        return "ratio" if link.name in RATIO_LINKS else "difference"
    check_choice(contrast, "contrast", ("ratio", "difference"))
    if contrast == "ratio" and link.name not in RATIO_LINKS:
        raise ArgumentError(
            f"contrast='ratio' needs the log or logit link (rate or odds ratios); this model "
            f"has the {link.name} link, whose back-transformed differences are not ratios "
            "(emmeans keeps such contrasts on the link scale). Use contrast='difference' "
            "(differences of the response-scale means) or scale='link'."
        )
    return contrast


def response_means(eta: np.ndarray, link: Any) -> np.ndarray:
    """``g^{-1}(eta)``: the means on the response scale."""
    return np.asarray(link.linkinv(np.asarray(eta, dtype=float)), dtype=float)


def response_cov(eta: np.ndarray, cov: np.ndarray, link: Any) -> np.ndarray:
    """Delta-method covariance ``J V J'`` of the response-scale means, ``J = diag(dmu/deta)``."""
    d = np.asarray(link.mu_eta(np.asarray(eta, dtype=float)), dtype=float)
    return d[:, None] * np.asarray(cov, dtype=float) * d[None, :]


def on_response_scale(means: pd.Series, cov: np.ndarray | pd.DataFrame, link: Any
                      ) -> tuple[pd.Series, np.ndarray]:
    """The link-scale means and covariance moved to the response scale (emmeans' ``regrid``):
    ``g^{-1}(eta)`` and ``J V J'``."""
    eta = means.to_numpy(dtype=float)
    return (pd.Series(response_means(eta, link), index=means.index.copy(), name=means.name),
            response_cov(eta, np.asarray(cov, dtype=float), link))


def means_frame(means: pd.Series, cov: np.ndarray | pd.DataFrame, link: Any = None, *,
                level: float = 0.95) -> pd.DataFrame:
    """Means with standard errors and Wald (``df = inf``) intervals: on the link scale when
    ``link`` is None, else on the response scale (delta-method SE, back-transformed interval).

    Parameters
    ----------
    means : Series
        Link-scale marginal means (indexed by level).
    cov : array or DataFrame
        Their covariance.
    link : Link, optional
        The model's link (``None``: the link scale).
    level : float
        Confidence level of the intervals.

    Returns
    -------
    DataFrame
        Indexed like ``means``, columns

        - ``mean``: the mean on the chosen scale;
        - ``se``: its standard error (delta method on the response scale);
        - ``lower``, ``upper``: the ``level`` confidence interval (the link-scale interval
          back-transformed on the response scale).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from irmodels.models._family import LINKS
    >>> m = pd.Series([0.0, 1.0], index=["a", "b"])
    >>> means_frame(m, np.diag([0.04, 0.09]), LINKS["logit"]).round(4)
         mean     se   lower   upper
    a  0.5000  0.050  0.4032  0.5968
    b  0.7311  0.059  0.6016  0.8303
    """
    level = check_probability(level, "level")
    eta = means.to_numpy(dtype=float)
    se = np.sqrt(np.clip(np.diag(np.asarray(cov, dtype=float)), 0.0, None))
    z = float(ndtri(0.5 + level / 2))
    lo, hi = eta - z * se, eta + z * se
    if link is None:
        return pd.DataFrame({"mean": eta, "se": se, "lower": lo, "upper": hi},
                            index=means.index.copy())
    mu = response_means(eta, link)
    se_mu = np.abs(np.asarray(link.mu_eta(eta), dtype=float)) * se
    a, b = response_means(lo, link), response_means(hi, link)
    return pd.DataFrame({"mean": mu, "se": se_mu, "lower": np.minimum(a, b),
                         "upper": np.maximum(a, b)}, index=means.index.copy())


def ratio_columns(table: pd.DataFrame, diff: str = "diff", se: str | None = None
                  ) -> pd.DataFrame:
    """``table`` with the columns ``ratio, ratio_se, ratio_lower, ratio_upper`` appended:
    ``exp`` of the link-scale difference (column ``diff``) and of its interval
    ``lower``/``upper``, and the delta method's ``ratio * se`` (``se`` names the column of the
    difference's standard error; None leaves ``ratio_se`` NaN).

    >>> t = pd.DataFrame({"diff": [np.log(2.0)], "se": [0.1], "lower": [0.0], "upper": [1.0]})
    >>> ratio_columns(t, se="se").round(4).iloc[0].tolist()
    [0.6931, 0.1, 0.0, 1.0, 2.0, 0.2, 1.0, 2.7183]
    """
    out = table.copy()
    r = np.exp(out[diff].to_numpy(dtype=float))
    out["ratio"] = r
    out["ratio_se"] = r * out[se].to_numpy(dtype=float) if se is not None else np.nan
    with np.errstate(over="ignore"):
        out["ratio_lower"] = np.exp(out["lower"].to_numpy(dtype=float))
        out["ratio_upper"] = np.exp(out["upper"].to_numpy(dtype=float))
    return out


def with_ratios(result: Any, link: Any) -> Any:
    """A link-scale :class:`~irmodels.inference.tukey.TukeyResult` or
    :class:`~irmodels.inference.dunnett.DunnettResult` with the ratio columns appended
    (:func:`ratio_columns`): ``pairs`` (Tukey; the SE of each pair from ``se_diff``) or
    ``table`` (Dunnett); the tests are those of the link scale."""
    what = RATIO_LINKS[link.name]
    base, note = str(result.means_kind), f"{what}s, {link.name}-scale tests"
    kind = f"{base[:-1]}; {note})" if base.endswith(")") else f"{base} ({note})"
    if hasattr(result, "pairs"):
        pairs = result.pairs.copy()
        k = len(result.means)
        ia, ib = np.triu_indices(k, 1)
        pairs["se"] = np.broadcast_to(np.asarray(result.se_diff, dtype=float), (k, k))[ia, ib]
        out = ratio_columns(pairs, se="se").drop(columns="se")
        return dataclasses.replace(result, pairs=out, means_kind=kind)
    return dataclasses.replace(result, table=ratio_columns(result.table, se="se"),
                               means_kind=kind)


def pair_se(cov: np.ndarray) -> np.ndarray:
    """``k x k`` standard errors of the differences of means with covariance ``cov``."""
    v = np.diag(cov)
    se = np.sqrt(np.maximum(v[:, None] + v[None, :] - 2.0 * cov, 0.0))
    np.fill_diagonal(se, 0.0)
    return se
