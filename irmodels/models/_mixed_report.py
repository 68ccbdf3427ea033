"""The face of a random-slopes fit (:class:`~irmodels.models._lmm.SlopeMixedResult`): its display
tables (summary, LaTeX, HTML) and its report section (``irm.report(fit)``).

Nothing is computed here: the tables are the fit's ``variance_components()``,
``correlations()`` and ``fixed``, laid out as lme4 prints them (one row per grouping factor
and effect, the residual last), and the notes are the fit's ``notes`` (a singular fit, a failed
convergence).
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from irmodels._display import frame_to_html, quiet_latex_unicode
from irmodels._section import Section, frame_to_markdown, img_tag

__all__ = ["random_effects_table", "slope_display_tables", "slope_section"]


def random_effects_table(fit: Any) -> pd.DataFrame:
    """``variance_components()`` with one flat index: index ``group`` (the grouping factor,
    ``Residual`` last), columns ``effect, variance, sd`` (lme4's ``VarCorr`` print)."""
    vc = fit.variance_components()
    if isinstance(vc.index, pd.MultiIndex):
        groups = [str(g) for g in vc.index.get_level_values("group")]
        effects = [str(e) for e in vc.index.get_level_values("effect")]
    else:  # every term an intercept: index component
        groups = [str(g) for g in vc.index]
        effects = ["" if g == "Residual" else "(Intercept)" for g in groups]
    return pd.DataFrame({"effect": effects, "variance": vc["variance"].to_numpy(),
                         "sd": vc["sd"].to_numpy()},
                        index=pd.Index(groups, name="group"))


def slope_display_tables(fit: Any) -> list[tuple[str, pd.DataFrame]]:
    """Random effects, their correlations (when a term has two or more effects), fixed
    effects."""
    tables = [("Random effects", random_effects_table(fit))]
    cor = fit.correlations()
    if len(cor):
        tables.append(("Correlations of random effects", cor.set_index("group")))
    tables.append(("Fixed effects", fit.fixed))
    return tables


def slope_section(fit: Any, *, digits: int = 4, plot: bool = True) -> Any:
    """The report section of a random-slopes fit: the fit line, its notes (singular fit,
    convergence), the tables, and in HTML the caterpillar plot of the first grouping factor
    (``topic`` when present)."""
    lines = fit._display_title().splitlines()
    rest = " ".join(lines[1:])
    notes = [f"Note: {n}" for n in fit.notes]
    body = [f"<p>{html.escape(rest)}</p>"] if rest else []
    body += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    md = ([rest] if rest else []) + notes
    for title, table in slope_display_tables(fit):
        body.append(frame_to_html(table, title=title, digits=digits))
        md += [f"**{title}**", frame_to_markdown(table, digits=digits)]
    if plot:
        groups = list(fit.random_effects)
        term = "topic" if "topic" in groups else groups[0]
        body.append(img_tag(
            fit.plot(term), f"conditional modes of {term}",
            f"Conditional modes (BLUPs) of {term}, one panel per effect, sorted by the first, "
            "with 95% intervals from their conditional SDs (lme4's dotplot of ranef)."))
    with quiet_latex_unicode():  # a by-product here: Report.latex_tables() checks it
        latex = fit.to_latex(digits=digits)
    return Section(title=lines[0] if lines else type(fit).__name__, html="".join(body),
                   markdown="\n\n".join(md), latex=latex)
