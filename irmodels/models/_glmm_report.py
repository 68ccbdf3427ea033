"""The report sections of generalised linear models (``irm.anova(..., family=)``,
:class:`~irmodels.models._glm.GlmResult`) and generalised linear mixed models
(``irm.mixed(..., family=)``, :class:`~irmodels.models.glmm.GlmmResult`): what
``irm.report(fit)`` shows of them.

A section has the fit line (formula, family and link, likelihood), the notes a reader needs to
read the tables (the link scale of the coefficients, the latent scale of the variances, the
beta precision, a squeezed response, a singular fit), and the tables: fixed effects with Wald z
tests (as ``summary(glmer)``), variance components on the latent scale, the analysis of deviance
of a GLM, the marginal means of ``system`` on both scales (emmeans' ``type = "response"``), and
the fit's statistics. Nothing is estimated here: every number is a member of the fit, or its
marginal means put on the response scale by :func:`irmodels.models._link_means.means_frame`
(the delta method, as the fit's own ``tukey(scale="response")``). The Tukey table on the
response scale is the section of ``fit.tukey(scale="response")``, passed to ``irm.report``
beside the fit.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from irmodels._display import frame_to_html, quiet_latex_unicode
from irmodels._section import Section, frame_to_markdown
from irmodels.models._link_means import means_frame, model_link
from irmodels.models._mixed_report import random_effects_table

__all__ = ["glm_section", "glmm_section", "glmm_notes", "response_means_table"]


def response_means_table(fit: Any, factor: str = "system") -> pd.DataFrame | None:
    """The marginal means of ``factor`` on both scales (None when ``factor`` is not a fixed
    term): index level; columns ``link_mean, link_se, mean, se, lower, upper`` (the response
    scale: mean and delta-method SE, the back-transformed 95% Wald interval of the link scale,
    as ``summary(emmeans(fit, ~ factor, type = "response"))``)."""
    if factor not in {f for t in fit.spec.fixed for f in t.factors}:
        return None
    means = fit.marginal_means(factor)
    cov = fit.marginal_means_cov(factor)
    link = means_frame(means, cov)
    resp = means_frame(means, cov, model_link(fit, "response"))
    out = pd.DataFrame({"link_mean": link["mean"].to_numpy(), "link_se": link["se"].to_numpy()},
                       index=resp.index)
    for col in ("mean", "se", "lower", "upper"):
        out[col] = resp[col].to_numpy()
    return out


def glmm_notes(fit: Any) -> list[str]:
    """The sentences that say how to read a GLM(M)'s tables, then the fit's own notes."""
    mixed = hasattr(fit, "variance_components") and hasattr(fit, "nagq")
    out = [f"Coefficients are on the {fit.link} (link) scale, tested by Wald z tests"
           + (" (as summary(glmer))." if mixed else " (as summary(glm)).")]
    if mixed:
        how = ("the Laplace approximation" if fit.nagq == 1 else
               f"adaptive Gauss-Hermite quadrature with {fit.nagq} points" if fit.nagq > 1
               else "nAGQ = 0 (fixed effects inside the penalised iterations)")
        out.append(f"Maximum likelihood by {how}. Variances and SDs of the random effects are "
                   f"on the latent ({fit.link}) scale, not in units of the measure.")
    phi = getattr(fit, "phi", None)
    if phi is not None:
        out.append(f"Beta precision phi = {phi:.4g}: Var(y) = mu (1 - mu) / (1 + phi), "
                   "glmmTMB's beta_family.")
    design = getattr(fit, "_design", None)
    if getattr(design, "squeeze", False):
        out.append("Scores were squeezed into (0, 1) by Smithson & Verkuilen's "
                   "(y (n - 1) + 0.5) / n before the fit (squeeze=True): the means are those of "
                   "the squeezed scores.")
    out.extend(str(n) for n in fit.notes)
    return out


def _section(fit: Any, tables: list[tuple[str, pd.DataFrame]], *, digits: int) -> Any:
    lines = fit._display_title().splitlines()
    rest = " ".join(lines[1:])
    notes = glmm_notes(fit)
    body = [f"<p>{html.escape(rest)}</p>"] if rest else []
    body += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    md = ([rest] if rest else []) + [f"Note: {n}" for n in notes]
    for title, table in tables:
        body.append(frame_to_html(table, title=title, digits=digits))
        md += [f"**{title}**", frame_to_markdown(table, digits=digits)]
    with quiet_latex_unicode():  # a by-product here: Report.latex_tables() checks it
        latex = fit.to_latex(digits=digits)
    return Section(title=lines[0] if lines else type(fit).__name__, html="".join(body),
                   markdown="\n\n".join(md), latex=latex)


def _vertical(stats: dict[str, Any]) -> pd.DataFrame:
    """One row per statistic (index ``statistic``, column ``value``), numbers kept as numbers."""
    return pd.DataFrame({"value": pd.Series(list(stats.values()), dtype=object).to_numpy()},
                        index=pd.Index(list(stats), name="statistic"))


def _means_title(fit: Any) -> str:
    return (f"Marginal means of system: {fit.link} scale and response scale "
            "(delta method; interval back-transformed)")


def glmm_section(fit: Any, *, digits: int = 4) -> Any:
    """The report section of a GLMM: fit line, notes, fixed effects (Wald z), variance
    components (latent scale), correlations of random effects, the system means on both
    scales (when system is a fixed term) and the fit statistics."""
    tables = [("Fixed effects (link scale, Wald z)", fit.fixed),
              ("Random effects (latent scale)", random_effects_table(fit))]
    cor = fit.correlations()
    if len(cor):
        tables.append(("Correlations of random effects", cor.set_index("group")))
    means = response_means_table(fit)
    if means is not None:
        tables.append((_means_title(fit), means))
    stats = {"nobs": fit.nobs, "loglik": fit.loglik, "aic": fit.aic, "bic": fit.bic,
             "deviance": fit.deviance, "df_resid": fit.df_resid, "nagq": fit.nagq}
    if fit.phi is not None:
        stats["phi"] = fit.phi
    tables.append(("Fit", _vertical(stats)))
    return _section(fit, tables, digits=digits)


def glm_section(fit: Any, *, digits: int = 4) -> Any:
    """The report section of a GLM: fit line, notes, coefficients (Wald z), the analysis of
    deviance (sequential chi-square tests, R's ``anova(glm, test = "Chisq")``), the system
    means on both scales and the fit statistics."""
    tables = [("Coefficients (link scale, Wald z)", fit.fixed),
              ("Analysis of deviance (sequential, chi-square tests)", fit.anova())]
    means = response_means_table(fit)
    if means is not None:
        tables.append((_means_title(fit), means))
    tables.append(("Fit", _vertical(fit._fit_frame().iloc[0].to_dict())))
    return _section(fit, tables, digits=digits)
