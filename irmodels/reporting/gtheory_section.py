"""The G-study section of the report: variance components, D-study, topics needed, curves.

Formats a :class:`~irmodels.inference.gtheory.GStudy` that already exists; computes nothing
new beyond asking the result for its D-study. ``irm.build_report`` adds it for the G-study of
its own fit; pass it yourself for another G-study:
``irm.build_report(..., gstudy=False, sections=[gstudy_section(g)])``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from irmodels._display import frame_to_html, frame_to_latex
from irmodels._section import Section, frame_to_markdown, img_tag, png_tag
from irmodels.errors import DesignError
from irmodels.stats.gtheory import GStudy

__all__ = ["gstudy_section"]


def gstudy_section(
    g: GStudy,
    *,
    topics: Sequence[int] | None = None,
    alpha: float = 0.05,
    target: float = 0.95,
    plot: bool = True,
    digits: int = 4,
    png: bytes | None = None,
) -> Section:
    """A report :class:`~irmodels.reporting.report.Section` for a G-study.

    Parameters
    ----------
    g : GStudy
        From :func:`irmodels.gstudy`.
    topics : sequence of int, optional
        Numbers of topics of the D-study table (default 10, 25, 50, 100 and the G-study's own).
    alpha : float
        1 - confidence level of the intervals (two-sided).
    target : float
        Stability whose topics needed are reported.
    plot : bool
        Embed the D-study curves (PNG) in the HTML.
    digits : int
        Significant digits shown.
    png : bytes, optional
        The curves already rendered (``figure_to_png(g.plot(target=target, level=1 - alpha))``,
        a report's ``figures["dstudy"]``): embedded with ``plot`` instead of drawing them again.

    Returns
    -------
    Section
        Title ``"Generalizability theory"``; HTML, Markdown and LaTeX bodies.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> from irmodels.reporting.gtheory_section import gstudy_section
    >>> w = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
    ...                   "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})
    >>> s = gstudy_section(irm.gstudy(irm.from_wide(w)), plot=False)
    >>> s.title, "Erho2" in s.markdown, "booktabs" in s.latex or "toprule" in s.latex
    ('Generalizability theory', True, True)
    """
    ts = sorted(set(topics)) if topics is not None else sorted({10, 25, 50, 100, g.n_topics})
    d = g.dstudy(ts, level=1 - alpha)
    needed = {}
    for index in ("Erho2", "Phi"):
        try:
            needed[index] = g.topics_needed(target, index=index)
        except DesignError:
            needed[index] = None
    text = (
        f"{g.n_systems} systems x {g.n_topics} topics"
        + (f" x {g.n_facet} {g.facet}s" if g.facet else "")
        + f". Per-topic phi = {g.phi:.4f}, rho_I = {g.rho_I:.4f}. Topics needed for "
        + f"{target:g}: "
        + ", ".join(f"{k} {v if v is not None else 'not reachable'}" for k, v in needed.items())
        + (f". Intervals: {100 * (1 - alpha):g}% two-sided (Feldt for E rho^2; Arteaga, "
           "Jeyaratnam & Franklin for Phi)." if g._has_intervals() else
           f". Intervals: {100 * (1 - alpha):g}% two-sided, percentiles of the coefficients "
           "over the draws of the variance components." if g.component_draws is not None else
           ". No intervals: the exact ones (Feldt for E rho^2; Arteaga, Jeyaratnam & Franklin "
           "for Phi) hold for a system x topic design with one score per cell.")
    )
    shown = d.set_index("topics")
    img = ""
    if plot:
        caption = (
            f"E\u03c1\u00b2 (relative: the ranking of systems) and \u03a6 (absolute: their "
            f"scores) against the number of topics, with {100 * (1 - alpha):g}% bands; the "
            f"dotted line is the current number of topics, the dashed line the target {target:g}.")
        img = (img_tag(g.plot(target=target, level=1 - alpha), "D-study curves", caption)
               if png is None else png_tag(png, "D-study curves", caption))
    body_html = (
        f"<p>{html.escape(text)}</p>"
        + frame_to_html(g.components, title="Variance components", digits=digits)
        + frame_to_html(shown, title="D-study", digits=digits)
        + img
    )
    body_md = (
        text + "\n\n**Variance components**\n\n" + frame_to_markdown(g.components, digits=digits)
        + "\n\n**D-study**\n\n" + frame_to_markdown(shown, digits=digits)
    )
    body_tex = (
        frame_to_latex(g.components, caption="G-study variance components", digits=digits)
        + "\n\n"
        + frame_to_latex(shown, caption="D-study", digits=digits)
    )
    return Section(title="Generalizability theory", html=body_html, markdown=body_md,
                   latex=body_tex)
