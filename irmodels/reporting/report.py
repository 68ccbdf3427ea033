"""The variance-component report: the package's main job, assembled from results.

:func:`assemble_report` takes results that already exist (a fitted ``irm.anova`` model, its
Tukey HSD and variance components, a G-study, residual diagnostics, a comparison table, and any
:class:`Section` rendered by another result) and returns a :class:`Report` that renders them as a
self-contained HTML page (CSS inline, figures as base64 PNG), Markdown and LaTeX tables, with a
"Conclusions" paragraph in plain words. Reporting fits nothing and imports no study: the
driver that fits the model and runs the analyses is :func:`irmodels.analysis.build_report`
(``irm.build_report``), which calls this module.
"""

from __future__ import annotations

import datetime as _dt
import html
import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy
import pandas as pd
import scipy
from markupsafe import Markup

import irmodels
from irmodels import _safeio
from irmodels._display import (
    format_number,
    frame_to_html,
    frame_to_latex,
    p_shown,
    quiet_latex_unicode,
    warn_unsupported,
)
from irmodels._section import Section, figure_to_data_uri, figure_to_png, frame_to_markdown
from irmodels.data.frame import balance as _balance
from irmodels.errors import ArgumentError, DataFormatError
from irmodels.models.anova import AnovaResult
from irmodels.reporting.gtheory_section import gstudy_section
from irmodels.reporting.plots import tukey_means_plot, variance_components_plot

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels.data.frame import BalanceReport
    from irmodels.inference.diagnostics import ResidualDiagnostics
    from irmodels.stats.gtheory import GStudy
    from irmodels.stats.tukey import TukeyResult

__all__ = ["Report", "Section", "assemble_report", "frame_to_markdown", "report"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"

#: The head of ``tables.tex``: the packages its tables need (longtable for a table of more than
#: :data:`irmodels._display.LONGTABLE_ROWS` rows, which breaks across pages).
LATEX_PREAMBLE_NOTE = (
    "% Tables written by irmodels. In the preamble of the document that \\input{}s them:\n"
    "%   \\usepackage{booktabs}\n"
    "%   \\usepackage{longtable}   % tables longer than a page (run pdflatex twice)\n"
    "% pdflatex typesets Latin-1 names; for Greek, CJK, ... compile with xelatex or lualatex.\n\n"
)

Format = Literal["html", "md"]


@dataclass(frozen=True, eq=False)
class Report:
    """A rendered-on-demand report of one fitted model and the results built on it.

    Attributes
    ----------
    title : str
        Title of the report.
    anova : AnovaResult or None
        The fitted model; None for a page assembled from results (:func:`report`), which then
        shows only its sections.
    components : DataFrame or None
        Variance components (``variance, sd, share``), None when the design does not allow
        them (see ``notes``).
    tukey : TukeyResult or None
        Tukey's HSD on systems, None when the model has no ``system`` factor.
    balance : BalanceReport
        Balance of the data over the model's factors.
    data_info : DataFrame
        What the data are (rows, levels, measure, collection), one column ``value``.
    figures : mapping of str to bytes
        PNG images: ``variance_components``, ``tukey_means``, ``dstudy`` and ``residuals``
        (when available); written by :meth:`save` as ``figures/<name>.png`` for the Markdown
        report. A report from :func:`assemble_report` draws each when it is first read (by
        :meth:`to_html`, :meth:`save` or ``figures[name]``), once.
    versions : mapping of str to str
        Versions of Python and the libraries that produced the numbers.
    notes : tuple of str
        Warnings raised while fitting, and why a part is missing.
    sections : tuple of Section
        Extra sections, in order (after the core ones).
    alpha : float
        Significance level of the Tukey HSD.
    created : str
        UTC time stamp.
    gstudy : GStudy or None
        G-study from the same fit (E rho^2, Phi, topics needed).
    diagnostics : ResidualDiagnostics or None
        Residual diagnostics of the fit.
    comparison : object or None
        A comparison table (``irm.compare`` result: ``_repr_html_``, ``to_frame``,
        ``to_latex``).
    measure : str or None
        The measure analysed (axis labels).
    """

    title: str
    anova: AnovaResult | None
    components: pd.DataFrame | None
    tukey: TukeyResult | None
    balance: BalanceReport | None
    data_info: pd.DataFrame | None
    figures: Mapping[str, bytes] = field(repr=False)
    versions: Mapping[str, str]
    notes: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    alpha: float = 0.05
    created: str = ""
    gstudy: GStudy | None = None
    diagnostics: ResidualDiagnostics | None = None
    comparison: Any = None
    measure: str | None = None

    # -- pieces -------------------------------------------------------------------------------
    def _means_table(self) -> pd.DataFrame | None:
        if self.tukey is None:
            return None
        iv = self.tukey.intervals("tukey")
        top = set(self.tukey.top_group)
        out = pd.DataFrame(
            {
                "mean": iv["mean"],
                "lower": iv["lower"],
                "upper": iv["upper"],
                "letters": self.tukey.letters,
                "top group": ["yes" if str(i) in top else "" for i in iv.index],
            }
        )
        return out.sort_values("mean", ascending=False, kind="stable")

    def _anova_shown(self, *, text_p: bool = True) -> pd.DataFrame:
        if self.anova is None:  # a page of results: no model table
            return pd.DataFrame()
        # post-hoc "observed power" restates the p-value: not in the headline table
        shown = self.anova.table.drop(columns=["power"], errors="ignore")
        shown = shown.rename(columns={"p": "Pr(>F)"})
        if not text_p:  # LaTeX: keep numbers ("<" is not safe in LaTeX text mode)
            return shown
        # R's convention: p-values below machine epsilon are shown as "< 2.2e-16", not as 0
        shown["Pr(>F)"] = [p_shown(v) for v in shown["Pr(>F)"].tolist()]
        return shown

    def _residual_term(self) -> str:
        terms = [] if self.anova is None else [str(t) for t in self.anova.table.index]
        return "Residual" if "Residual" in terms else terms[-1]

    def conclusions(self) -> str:
        """The "Conclusions" paragraph: the results of the report in plain words."""
        out: list[str] = []
        comp = self.components
        if comp is not None and "share" in comp.columns:
            share = {str(k): float(v) for k, v in comp["share"].items()}
            named = [f"{k} {100 * v:.0f}%" for k, v in share.items()
                     if k not in ("Residual", "residual")]
            resid = share.get("Residual", share.get("residual"))
            text = "Of the variance of the scores, " + ", ".join(named)
            if resid is not None:
                interaction = (self.diagnostics is not None
                               and self.diagnostics.interaction_in_residual)
                text += (f" and {100 * resid:.0f}% is residual"
                         + (" (which, with one score per topic and system, is the topic:system "
                            "interaction: systems that suit some topics more than others)"
                            if interaction else ""))
            text += "."
            if "topic" in share and "system" in share and share["topic"] > share["system"]:
                text += (" Topics differ more than systems do: the choice of topics moves "
                         "scores more than the choice of system.")
            out.append(text)
        tk = self.tukey
        if tk is not None:
            k = tk.k - 1
            n_top = len(tk.top_group)
            others = n_top - 1
            head = (f"Every other system is significantly below the best, {tk.best}"
                    if others == 0 else
                    f"{others} of the {k} other systems "
                    f"{'is' if others == 1 else 'are'} not significantly different from the best, "
                    f"{tk.best}")
            out.append(
                f"{head} (Tukey HSD, family-wise alpha = {self.alpha:g}); "
                f"{tk.n_significant} of {tk.n_pairs} pairs "
                f"({100 * tk.n_significant / max(tk.n_pairs, 1):.0f}%) differ significantly."
            )
        g = self.gstudy
        if g is not None:
            try:
                d = g.dstudy([g.n_topics], level=1 - self.alpha).iloc[0]
                er, ph = float(d["Erho2"]), float(d["Phi"])
                text = (f"The ranking is {_stability_word(er)}: with {g.n_topics} topics the "
                        f"generalizability coefficient is E\u03c1\u00b2 = {er:.3f} (relative "
                        f"ranking) and the dependability \u03a6 = {ph:.3f} (absolute scores)")
                try:
                    need = int(g.topics_needed(0.95, index="Erho2"))
                    if need > g.n_topics:
                        text += f"; about {need} topics would give E\u03c1\u00b2 = 0.95"
                    else:
                        text += "; E\u03c1\u00b2 already exceeds 0.95"
                except Exception:  # noqa: BLE001 - not reachable or not available
                    pass
                out.append(text + ".")
            except Exception:  # noqa: BLE001 - a G-study without a D-study at this size
                pass
        if self.diagnostics is not None:
            p = self.diagnostics.tests["p"]
            issues = []
            if p["Shapiro-Wilk"] < self.alpha:
                issues.append("not normal")
            if p["Breusch-Pagan"] < self.alpha:
                issues.append("of unequal variance")
            if issues:
                out.append("The residuals are " + " and ".join(issues) + " (see Residual "
                           "diagnostics): read p-values near alpha with care.")
        return " ".join(out)

    def _context(self, renderer: Any, figures: Mapping[str, str], fmt: str) -> dict[str, Any]:
        tk = self.tukey
        versions = pd.DataFrame({"version": pd.Series(dict(self.versions), dtype=object)})
        versions.index.name = "package"
        if self.anova is None:  # a page of results (report()): the sections only
            return {"fit": False, "title": self.title, "created": self.created,
                    "versions": dict(self.versions), "versions_table": renderer(versions),
                    "core_sections": self._core_sections(fmt), "sections": self.sections,
                    "notes": self.notes}
        ctx: dict[str, Any] = {
            "fit": True,
            "title": self.title,
            "created": self.created,
            "versions": dict(self.versions),
            "versions_table": renderer(versions),
            "data_table": renderer(self.data_info),
            "balance": str(self.balance),
            "formula": str(self.anova.spec),
            "method": _method_text(self.anova),
            "n_obs": self.anova.nobs,
            "df_resid": format_number(self.anova.df_resid),
            "alpha": f"{self.alpha:g}",
            "conclusions": self.conclusions(),
            "anova_table": renderer(self._anova_shown()),
            "components_table": None,
            "components_note": "",
            "interaction_note": (
                "With one score per (topic, system) the residual contains the topic:system "
                "interaction: it cannot be separated from noise without replicates (shards, "
                "document samples; models MD2-MD6)."
                if self.diagnostics is not None and self.diagnostics.interaction_in_residual
                else ""
            ),
            "tukey": tk,
            "tukey_table": None,
            "tukey_note": "",
            "measure": self.measure or "score",
            "figures": figures,
            "core_sections": self._core_sections(fmt),
            "sections": self.sections,
            "notes": self.notes,
        }
        if self.components is not None:
            ctx["components_table"] = renderer(self.components)
        else:
            ctx["components_note"] = "Variance components are not available for this design."
        if tk is not None:
            ctx["tukey_table"] = renderer(dict(tk._display_tables())["Summary"])
            ctx["critical_value"] = format_number(tk.critical_value)
            ctx["top_group"] = list(tk.top_group)
            means = self._means_table()
            ctx["means_table"] = renderer(means) if means is not None else ""
        else:
            ctx["tukey_note"] = "The model has no system factor: no Tukey HSD on systems."
        return ctx

    def _core_sections(self, fmt: str) -> list[Section]:
        """G-study, comparison table and residual diagnostics, rendered by their results."""
        # their LaTeX is a by-product of the page (latex_tables checks what it writes): no
        # warning about characters pdflatex cannot typeset while rendering HTML or Markdown
        with quiet_latex_unicode():
            return self._rendered_core_sections(fmt)

    def _rendered_core_sections(self, fmt: str) -> list[Section]:
        out: list[Section] = []
        # the HTML embeds the report's figures (the same calls): each drawn once
        html_page = fmt == "html"
        if self.gstudy is not None:
            out.append(_with_md_figure(
                gstudy_section(self.gstudy, alpha=self.alpha, plot=html_page,
                               png=self.figures.get("dstudy") if html_page else None),
                self.figures, "dstudy", "D-study curves", fmt))
        if self.comparison is not None:
            out.append(_comparison_section(self.comparison))
        if self.diagnostics is not None:
            out.append(_with_md_figure(
                self.diagnostics.to_section(
                    plot=html_page, png=self.figures.get("residuals") if html_page else None),
                self.figures, "residuals", "Residual diagnostics", fmt))
        return out

    # -- renderers ----------------------------------------------------------------------------
    def to_html(self) -> str:
        """The report as one self-contained HTML page (inline CSS, figures as base64 PNG)."""

        env = _environment(autoescape=True)
        figures = {name: figure_to_data_uri(png) for name, png in self.figures.items()}

        def render(df: pd.DataFrame) -> Markup:
            return Markup(frame_to_html(df))

        return env.get_template("report.html.j2").render(**self._context(render, figures, "html"))

    def to_markdown(self, *, figure_dir: str = "figures") -> str:
        """The report as Markdown; figures are referenced as ``figure_dir/<name>.png`` (written
        by :meth:`save`)."""
        env = _environment(autoescape=False)
        figures = {name: f"{figure_dir}/{name}.png" for name in self.figures}
        return env.get_template("report.md.j2").render(
            **self._context(frame_to_markdown, figures, "md"))

    def latex_tables(self) -> dict[str, str]:
        r"""LaTeX (booktabs, escaped) of every table, by name: ``anova``, ``variance_components``,
        ``tukey``, ``means``, then ``gstudy``, ``comparison``, ``diagnostics`` when present,
        and one entry per extra section with LaTeX.

        They need ``\usepackage{booktabs}``, and ``\usepackage{longtable}`` for a table of
        more than :data:`irmodels._display.LONGTABLE_ROWS` rows (the means of 129 runs), which
        breaks across pages. Each has its own ``\label`` (``tab:anova``, ``tab:tukey``, ...).
        A :class:`~irmodels.errors.DataQualityWarning` names a character (in a system name,
        say) that pdflatex cannot typeset with its default fonts."""
        with quiet_latex_unicode():
            out = self._latex_tables()
        warn_unsupported("\n".join(out.values()))
        return out

    def _latex_tables(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.anova is not None:
            out["anova"] = frame_to_latex(
                self._anova_shown(text_p=False),
                caption=f"Analysis of variance: {self.anova.spec}",
                label="tab:anova",
            )
        if self.components is not None:
            out["variance_components"] = frame_to_latex(
                self.components, caption="Variance components", label="tab:variance-components"
            )
        if self.tukey is not None:
            out["tukey"] = frame_to_latex(
                dict(self.tukey._display_tables())["Summary"], caption="Tukey HSD", label="tab:tukey"
            )
            means = self._means_table()
            if means is not None:
                out["means"] = frame_to_latex(
                    means, caption=f"{self.tukey.factor} means with Tukey intervals",
                    label="tab:means",
                )
        names = []
        if self.gstudy is not None:
            names.append("gstudy")
        if self.comparison is not None:
            names.append("comparison")
        if self.diagnostics is not None:
            names.append("diagnostics")
        for name, s in zip(names, self._core_sections("latex")):
            if s.latex:
                out[name] = s.latex
        for i, s in enumerate(self.sections):
            if s.latex:
                out[f"section_{i + 1}"] = s.latex
        return out

    def save(
        self,
        directory: str | Path,
        *,
        formats: Sequence[Format] = ("html", "md"),
        latex: bool = False,
    ) -> list[Path]:
        """Write ``report.html``, ``report.md`` (with ``figures/*.png``) and, with ``latex``,
        ``tables.tex`` into ``directory`` (created if needed). Returns the paths written."""
        unknown = [f for f in formats if f not in ("html", "md")]
        if unknown:
            raise DataFormatError(
                f"unknown report format(s) {unknown}; choose among 'html' and 'md'."
            )
        out = _safeio.make_dir(directory)  # a file or link in the way: an OutputError
        written: list[Path] = []
        if "html" in formats:
            p = out / "report.html"
            _safeio.write_text(p, self.to_html(), force=True)  # atomic: never half written
            written.append(p)
        if "md" in formats:
            figs = _safeio.make_dir(out / "figures")
            for name, png in self.figures.items():
                fp = figs / f"{name}.png"
                _safeio.write_bytes(fp, png, force=True)
                written.append(fp)
            p = out / "report.md"
            _safeio.write_text(p, self.to_markdown(figure_dir="figures"), force=True)
            written.append(p)
        if latex:
            p = out / "tables.tex"
            _safeio.write_text(p, LATEX_PREAMBLE_NOTE + "\n\n".join(self.latex_tables().values())
                               + "\n", force=True)
            written.append(p)
        return written

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        if self.anova is None:
            n = len(self.sections)
            return f"<Report {self.title!r}: {n} section{'s' if n != 1 else ''}>"
        tk = "" if self.tukey is None else f", {self.tukey.n_significant}/{self.tukey.n_pairs} pairs significant"
        return f"<Report {self.title!r}: {self.anova.spec}{tk}>"


class _Figures(Mapping[str, bytes]):
    """A report's figures as PNG bytes (:func:`figure_to_png`), each drawn when it is first
    read and kept: the same bytes as drawing them all at once, and none drawn for a report
    that is only read as Markdown or LaTeX. Pickled as a plain dict (every figure drawn)."""

    def __init__(self, makers: Mapping[str, Callable[[], Figure]]) -> None:
        self._makers = dict(makers)
        self._png: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self._png:
            self._png[name] = figure_to_png(self._makers[name]())  # KeyError: not a figure
        return self._png[name]

    def __contains__(self, name: object) -> bool:  # without drawing it
        return name in self._makers

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self.items()),)


def _method_text(fit: AnovaResult) -> str:
    if fit.method == "balanced":
        return "balanced design, closed-form sums of squares"
    return f"unbalanced design, least squares, type {fit.ss_type} sums of squares"


def _escape_markdown_html(value: Any) -> Any:
    """Escape the HTML metacharacters of a value printed into ``report.md``."""
    if isinstance(value, str):
        return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return value


def _environment(*, autoescape: bool) -> Any:
    import jinja2  # here, not at import: jinja2 is slow to import, and only rendering needs it

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=autoescape,
        # Markdown passes raw HTML through: escape <, > and & in every value (system names,
        # titles, tables), as the HTML report does
        finalize=None if autoescape else _escape_markdown_html,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def software_versions() -> dict[str, str]:
    """Versions of Python and of the libraries behind the numbers."""
    import matplotlib  # here, not at import: matplotlib is slow to import (irmodels report)

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
        "matplotlib": matplotlib.__version__,
        "irmodels": irmodels.__version__,
    }


def assemble_report(
    fit: AnovaResult,
    *,
    tukey: TukeyResult | None = None,
    components: pd.DataFrame | None = None,
    gstudy: GStudy | None = None,
    diagnostics: ResidualDiagnostics | None = None,
    comparison: Any = None,
    sections: Sequence[Section] = (),
    measure: str | None = None,
    alpha: float = 0.05,
    title: str | None = None,
    notes: Sequence[str] = (),
) -> Report:
    """Assemble a :class:`Report` from results that already exist (nothing is fitted here).

    Parameters
    ----------
    fit : AnovaResult
        A fitted ``irm.anova`` model (its ``data`` describe the collection).
    tukey : TukeyResult, optional
        ``fit.tukey("system", alpha=alpha)``.
    components : DataFrame, optional
        ``fit.variance_components()``.
    gstudy : GStudy, optional
        ``irm.gstudy(fit)``.
    diagnostics : ResidualDiagnostics, optional
        ``irmodels.inference.diagnostics.residual_diagnostics(fit)``.
    comparison : object, optional
        An ``irm.compare`` result (rendered through ``_repr_html_``, ``to_frame``,
        ``to_latex``).
    sections : sequence of Section
        Extra sections rendered by other results (``study.to_section()``...).
    measure : str, optional
        The measure analysed (figure axes and title).
    alpha : float
        The level the results were computed at (shown in the text).
    title : str, optional
        Title; by default names the measure, the collection and the model.
    notes : sequence of str
        Warnings raised while computing the results.

    Returns
    -------
    Report

    Raises
    ------
    ArgumentError
        ``fit`` is not an ``irm.anova`` fit (a mixed model or a GLM has no ANOVA table: use
        :func:`report`).
    DataFormatError
        A section that is not a :class:`Section`.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> from irmodels.reporting.report import assemble_report
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.beta(2, 5, (20, 6)) + rng.uniform(0, .3, (20, 1))
    ...                     + np.linspace(0, .2, 6), columns=[f"run{i}" for i in range(1, 7)])
    >>> fit = irm.anova("MD1", irm.from_wide(wide, measure="AP"))
    >>> rep = assemble_report(fit, tukey=fit.tukey(), components=fit.variance_components())
    >>> rep
    <Report 'Variance components and Tukey HSD: AP': score ~ topic + system, 3/15 pairs significant>
    >>> "<th>power</th>" in rep.to_html(), "<th>F</th>" in rep.to_html()
    (False, True)
    """

    if not isinstance(fit, AnovaResult):  # the page renders its ANOVA table and method
        raise ArgumentError(
            f"assemble_report reports an irm.anova fit; got a {type(fit).__name__}, which has "
            "no ANOVA table. Assemble its sections with irm.report(fit, ...) instead.")
    sections = tuple(sections)
    for s in sections:
        if not isinstance(s, Section):
            raise DataFormatError(
                f"sections must be irmodels.reporting.Section objects; got {type(s).__name__}."
            )
    data = fit.data
    if measure is None and "measure" in data.columns and len(data):
        measure = str(data["measure"].iloc[0])
    design_factors = [f for f in fit.spec.factors if f in data.columns]
    bal = _balance(data, design_factors)
    info: dict[str, object] = {"observations": fit.nobs}
    for col in ("collection", "measure"):
        if col in data.columns:
            values = (data[col].cat.categories if isinstance(data[col].dtype, pd.CategoricalDtype)
                      else pd.unique(data[col]))
            info[col] = ", ".join(map(str, values))
    for f, n in bal.levels.items():
        info[f"{f} levels"] = n
    info["balanced"] = "yes" if bal.balanced else "no"
    data_info = pd.DataFrame({"value": pd.Series(info, dtype=object)})

    # each figure is drawn when first read (to_html, save, report.figures[name]): a report read
    # as Markdown or LaTeX draws none
    makers: dict[str, Callable[[], Figure]] = {}
    if components is not None:
        makers["variance_components"] = lambda: variance_components_plot(components)
    if tukey is not None:
        makers["tukey_means"] = lambda: tukey_means_plot(tukey, measure=measure)
    if gstudy is not None:
        makers["dstudy"] = lambda: gstudy.plot(target=0.95, level=1 - alpha)
    if diagnostics is not None:
        makers["residuals"] = diagnostics.plot
    figures = _Figures(makers)

    if title is None:
        what = [measure] if measure else []
        if "collection" in data.columns:
            what.append(str(info["collection"]))
        title = "Variance components and Tukey HSD" + (f": {' on '.join(what)}" if what else "")
    created = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Report(
        title=title, anova=fit, components=components, tukey=tukey, balance=bal,
        data_info=data_info, figures=figures, versions=software_versions(), notes=tuple(notes),
        sections=sections, alpha=float(alpha), created=created, gstudy=gstudy,
        diagnostics=diagnostics, comparison=comparison, measure=measure,
    )


def report(
    *results: Any,
    title: str = "Results",
    notes: Sequence[str] = (),
    digits: int = 4,
) -> Report:
    """A page assembled from any results: each result's ``to_section()``, in order.

    The one way into a report is a result's ``to_section()``: this function calls it on every
    result (a :class:`Section` passes through as it is) and returns a :class:`Report` whose
    ``to_html()``, ``to_markdown()``, ``latex_tables()`` and ``save(directory)`` render the
    sections under the title, with the notes and the software versions. Nothing is fitted or
    computed here; the report of one model, with its conclusions, is ``irm.build_report``.

    Parameters
    ----------
    *results : result objects or Section
        Any results with ``to_section()`` (``irm.anova``, ``fit.tukey()``,
        ``irm.meta_analysis``, ``irm.gstudy``, studies...), in the order of the page.
    title : str, default "Results"
        Title of the page.
    notes : sequence of str
        Notes listed at the end of the page.
    digits : int, default 4
        Significant digits of the tables (passed to each ``to_section(digits=...)``).

    Returns
    -------
    Report
        Its ``anova`` is None and its ``sections`` hold one section per result.

    Raises
    ------
    ArgumentError
        No results, or an object that renders no section.

    Examples
    --------
    >>> import irmodels as irm
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.beta(2, 5, (20, 6)) + rng.uniform(0, .3, (20, 1))
    ...                     + np.linspace(0, .2, 6), columns=[f"run{i}" for i in range(1, 7)])
    >>> fit = irm.anova("MD1", irm.from_wide(wide, measure="AP"))
    >>> page = irm.report(fit, fit.tukey(), title="AP on a toy collection")
    >>> page
    <Report 'AP on a toy collection': 2 sections>
    >>> [s.title.split(":")[0] for s in page.sections]
    ['ANOVA', 'Tukey HSD on system']
    >>> "<h2>Tukey HSD on system" in page.to_html(), "## ANOVA" in page.to_markdown()
    (True, True)
    """

    if not results:
        raise ArgumentError("report() needs at least one result; got none. Pass the results "
                            "to show, e.g. irm.report(fit, fit.tukey()).")
    sections: list[Section] = []
    for i, r in enumerate(results):
        if isinstance(r, Section):
            sections.append(r)
        elif callable(getattr(r, "to_section", None)):
            sections.append(r.to_section(digits=digits))
        else:
            raise ArgumentError(
                f"result {i + 1} of report() renders no section: a {type(r).__name__} has no "
                "to_section(). Pass results of irmodels (or a reporting.Section).")
    created = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Report(
        title=title, anova=None, components=None, tukey=None, balance=None, data_info=None,
        figures={}, versions=software_versions(), notes=tuple(notes), sections=tuple(sections),
        created=created,
    )


def _with_md_figure(section: Section, figures: Mapping[str, bytes], name: str, alt: str,
                    fmt: str) -> Section:
    """The Markdown body of ``section`` with a link to ``figures/<name>.png`` (written by
    :meth:`Report.save`); other formats unchanged."""
    if fmt != "md" or name not in figures:
        return section

    return replace(section, markdown=f"{section.markdown}\n\n![{alt}](figures/{name}.png)")


def _stability_word(erho2: float) -> str:
    if erho2 >= 0.95:
        return "very stable"
    if erho2 >= 0.9:
        return "stable"
    if erho2 >= 0.8:
        return "moderately stable"
    return "not stable"


def _comparison_section(comparison: Any) -> Section:
    """A section from an ``irm.compare`` result, through its own renderers."""
    html_body = comparison._repr_html_() if hasattr(comparison, "_repr_html_") else ""
    md = ""
    if hasattr(comparison, "to_frame"):
        md = frame_to_markdown(comparison.to_frame())
    tex = ""
    if hasattr(comparison, "to_latex"):
        try:
            tex = comparison.to_latex()
        except Exception:  # noqa: BLE001 - LaTeX is optional for the page
            tex = ""
    title = "Comparison table"
    text = comparison.summary().splitlines()[0] if hasattr(comparison, "summary") else ""
    para = f"<p>{html.escape(text)}</p>" if text and html_body.find(text) < 0 else ""
    return Section(title=title, html=para + html_body, markdown=md, latex=tex)
