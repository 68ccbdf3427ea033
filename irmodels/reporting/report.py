"""The variance-component report: the package's main job.

:func:`build_report` fits one model to a long frame (through ``irm.anova``), asks it for its
variance components and for Tukey's HSD on systems, and returns a :class:`Report` that renders
those results as a self-contained HTML page (CSS inline, figures as base64 PNG), Markdown and
LaTeX tables. The report only formats results of the model and inference layers: it computes no
statistic of its own.

Other analyses add their own sections through :class:`Section` (see ``docs/report.md``).
"""

from __future__ import annotations

import datetime as _dt
import html
import platform
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from irmodels._display import format_number, frame_to_html, frame_to_latex
from irmodels.errors import DataFormatError, DesignError

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.data.frame import BalanceReport
    from irmodels.formula.spec import ModelSpec
    from irmodels.inference.tukey import TukeyResult
    from irmodels.models.anova import AnovaResult

__all__ = ["Report", "Section", "build_report", "frame_to_markdown"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"
Format = Literal["html", "md"]


@dataclass(frozen=True)
class Section:
    """An extra section of a report, produced by another analysis (shards, G-theory, ...).

    Attributes
    ----------
    title : str
        Heading of the section (escaped when rendered).
    html : str
        HTML fragment of the body, inserted as is: the producer escapes its own text (use
        ``irmodels._display.frame_to_html`` for tables and ``html.escape`` for prose).
    markdown : str
        Markdown body.
    latex : str
        LaTeX body (e.g. booktabs tables); collected by :meth:`Report.latex_tables`.

    Examples
    --------
    >>> import pandas as pd
    >>> s = Section.from_table("Kendall's tau", pd.DataFrame({"tau": [0.91]}, index=["S=5"]))
    >>> s.title, "<table" in s.html, s.markdown.splitlines()[0]
    ("Kendall's tau", True, '|  | tau |')
    """

    title: str
    html: str = ""
    markdown: str = ""
    latex: str = ""

    @classmethod
    def from_table(
        cls, title: str, table: pd.DataFrame, *, text: str = "", digits: int = 4
    ) -> Section:
        """A section made of an optional paragraph and one table, in all three formats."""
        para = f"<p>{html.escape(text)}</p>" if text else ""
        md_para = f"{text}\n\n" if text else ""
        return cls(
            title=title,
            html=para + frame_to_html(table, digits=digits),
            markdown=md_para + frame_to_markdown(table, digits=digits),
            latex=frame_to_latex(table, caption=title, digits=digits),
        )


def frame_to_markdown(df: pd.DataFrame, *, digits: int = 4) -> str:
    """A pipe table with formatted numbers (``|`` in cells escaped).

    >>> print(frame_to_markdown(pd.DataFrame({"x": [0.123456]}, index=["a|b"])))
    |  | x |
    |---|---:|
    | a\\|b | 0.1235 |
    """

    def cell(v: object) -> str:
        return format_number(v, digits).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join([cell(df.index.name or "")] + [cell(c) for c in df.columns]) + " |"
    align = "|---|" + "|".join("---:" for _ in df.columns) + "|"
    rows = [
        "| " + " | ".join([cell(str(i))] + [cell(v) for v in row]) + " |"
        for i, row in zip(df.index, df.itertuples(index=False))
    ]
    return "\n".join([head, align, *rows])


@dataclass(frozen=True, eq=False)
class Report:
    """A rendered-on-demand report of one fitted model.

    Attributes
    ----------
    title : str
        Title of the report.
    anova : AnovaResult
        The fitted model.
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
        PNG images: ``variance_components`` and ``tukey_means`` (when available).
    versions : mapping of str to str
        Versions of Python and the libraries that produced the numbers.
    notes : tuple of str
        Warnings raised while fitting, and why a part is missing.
    sections : tuple of Section
        Extra sections, in order.
    alpha : float
        Significance level of the Tukey HSD.
    created : str
        UTC time stamp of :func:`build_report`.
    """

    title: str
    anova: AnovaResult
    components: pd.DataFrame | None
    tukey: TukeyResult | None
    balance: BalanceReport
    data_info: pd.DataFrame
    figures: Mapping[str, bytes] = field(repr=False)
    versions: Mapping[str, str]
    notes: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    alpha: float = 0.05
    created: str = ""

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
        shown = self.anova.table.rename(columns={"p": "Pr(>F)"})
        if not text_p:  # LaTeX: keep numbers ("<" is not safe in LaTeX text mode)
            return shown
        # R's convention: p-values below machine epsilon are shown as "< 2.2e-16", not as 0
        shown["Pr(>F)"] = [
            "< 2.2e-16" if (v == v and v < 2.220446e-16) else v for v in shown["Pr(>F)"].tolist()
        ]
        return shown

    def _context(self, renderer: Any, figures: Mapping[str, str]) -> dict[str, Any]:
        tk = self.tukey
        versions = pd.DataFrame({"version": pd.Series(dict(self.versions), dtype=object)})
        versions.index.name = "package"
        ctx: dict[str, Any] = {
            "title": self.title,
            "created": self.created,
            "versions": dict(self.versions),
            "versions_table": renderer(versions),
            "data_table": renderer(self.data_info),
            "balance": str(self.balance),
            "formula": str(self.anova.spec),
            "method": _method_text(self.anova),
            "n_obs": self.anova.n_obs,
            "df_resid": format_number(self.anova.df_resid),
            "alpha": f"{self.alpha:g}",
            "anova_table": renderer(self._anova_shown()),
            "components_table": None,
            "components_note": "",
            "tukey": tk,
            "tukey_table": None,
            "tukey_note": "",
            "figures": figures,
            "sections": self.sections,
            "notes": self.notes,
        }
        if self.components is not None:
            ctx["components_table"] = renderer(self.components)
        else:
            ctx["components_note"] = "Variance components are not available for this design."
        if tk is not None:
            ctx["tukey_table"] = renderer(tk.summary_frame())
            ctx["critical_value"] = format_number(tk.critical_value)
            ctx["top_group"] = list(tk.top_group)
            means = self._means_table()
            ctx["means_table"] = renderer(means) if means is not None else ""
        else:
            ctx["tukey_note"] = "The model has no system factor: no Tukey HSD on systems."
        return ctx

    # -- renderers ----------------------------------------------------------------------------
    def to_html(self) -> str:
        """The report as one self-contained HTML page (inline CSS, figures as base64 PNG)."""
        from markupsafe import Markup

        from irmodels.reporting.plots import figure_to_data_uri

        env = _environment(autoescape=True)
        figures = {name: figure_to_data_uri(png) for name, png in self.figures.items()}

        def render(df: pd.DataFrame) -> Markup:
            return Markup(frame_to_html(df))

        return env.get_template("report.html.j2").render(**self._context(render, figures))

    def to_markdown(self, *, figure_dir: str = "figures") -> str:
        """The report as Markdown; figures are referenced as ``figure_dir/<name>.png`` (written
        by :meth:`save`)."""
        env = _environment(autoescape=False)
        figures = {name: f"{figure_dir}/{name}.png" for name in self.figures}
        return env.get_template("report.md.j2").render(**self._context(frame_to_markdown, figures))

    def latex_tables(self) -> dict[str, str]:
        """LaTeX (booktabs, escaped) of every table, by name: ``anova``, ``variance_components``,
        ``tukey``, ``means`` and one entry per extra section with LaTeX."""
        out = {
            "anova": frame_to_latex(
                self._anova_shown(text_p=False),
                caption=f"Analysis of variance: {self.anova.spec}",
                label="tab:anova",
            )
        }
        if self.components is not None:
            out["variance_components"] = frame_to_latex(
                self.components, caption="Variance components", label="tab:variance-components"
            )
        if self.tukey is not None:
            out["tukey"] = frame_to_latex(
                self.tukey.summary_frame(), caption="Tukey HSD", label="tab:tukey"
            )
            means = self._means_table()
            if means is not None:
                out["means"] = frame_to_latex(
                    means, caption=f"{self.tukey.factor} means with Tukey intervals",
                    label="tab:means",
                )
        for i, s in enumerate(self.sections):
            if s.latex:
                out[f"section_{i + 1}"] = s.latex
        return out

    def save(
        self,
        directory: str | Path,
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
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if "html" in formats:
            p = out / "report.html"
            p.write_text(self.to_html(), encoding="utf-8")
            written.append(p)
        if "md" in formats:
            figs = out / "figures"
            figs.mkdir(exist_ok=True)
            for name, png in self.figures.items():
                fp = figs / f"{name}.png"
                fp.write_bytes(png)
                written.append(fp)
            p = out / "report.md"
            p.write_text(self.to_markdown(figure_dir="figures"), encoding="utf-8")
            written.append(p)
        if latex:
            p = out / "tables.tex"
            p.write_text("\n\n".join(self.latex_tables().values()) + "\n", encoding="utf-8")
            written.append(p)
        return written

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        tk = "" if self.tukey is None else f", {self.tukey.n_significant}/{self.tukey.n_pairs} pairs significant"
        return f"<Report {self.title!r}: {self.anova.spec}{tk}>"


def _method_text(fit: AnovaResult) -> str:
    if fit.method == "balanced":
        return "balanced design, closed-form sums of squares"
    return f"unbalanced design, least squares, type {fit.ss_type} sums of squares"


def _environment(*, autoescape: bool) -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def software_versions() -> dict[str, str]:
    """Versions of Python and of the libraries behind the numbers."""
    import matplotlib
    import numpy
    import scipy

    import irmodels

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "pandas": pd.__version__,
        "matplotlib": matplotlib.__version__,
        "irmodels": irmodels.__version__,
    }


def build_report(
    data: pd.DataFrame,
    *,
    model: str | ModelSpec = "MD1",
    measure: str | None = None,
    alpha: float = 0.05,
    title: str | None = None,
    sections: Sequence[Section] = (),
) -> Report:
    """Fit a model and build the variance-component report.

    Parameters
    ----------
    data : DataFrame
        A long frame (``irm.frame``, ``irm.read_matrix``, ``irm.evaluate``...).
    model : str or ModelSpec, default "MD1"
        A preset ``"MD1"`` ... ``"MD6"``, a formula (``"score ~ topic + system"``) or a spec.
    measure : str, optional
        Which measure to analyse when ``data`` holds several (column ``measure``).
    alpha : float, default 0.05
        Family-wise level of the Tukey HSD.
    title : str, optional
        Title; by default names the measure, the collection and the model.
    sections : sequence of Section
        Extra sections appended after the Tukey HSD, in order.

    Returns
    -------
    Report
        With ``to_html()``, ``to_markdown()``, ``latex_tables()`` and ``save()``.

    Raises
    ------
    DesignError
        Several measures and no ``measure``; errors of ``irm.anova``.
    DataFormatError
        An unknown ``measure``.

    Notes
    -----
    Contents: the data and its balance (``irm.balance``), the fitted formula, the ANOVA table
    with effect sizes (``AnovaResult.table``), the variance components
    (``AnovaResult.variance_components()``) with a bar chart, Tukey's HSD on systems with the
    model's error term (``AnovaResult.tukey()``: significant / not significant pairs, critical
    value, top group) with the sorted system means and their Tukey intervals, and the software
    versions. Warnings raised while fitting are re-issued and listed under "Notes".

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> from irmodels.reporting.report import build_report
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.beta(2, 5, (20, 6)) + rng.uniform(0, .3, (20, 1))
    ...                     + np.linspace(0, .2, 6), columns=[f"run{i}" for i in range(1, 7)])
    >>> rep = build_report(irm.from_wide(wide, measure="AP"))
    >>> rep.tukey.top_group, rep.tukey.n_significant
    (['run6', 'run5', 'run3', 'run4'], 3)
    >>> rep.components.round(4)
               variance      sd   share
    component
    topic        0.0050  0.0704  0.1622
    system       0.0045  0.0674  0.1486
    Residual     0.0211  0.1452  0.6892
    >>> "data:image/png;base64" in rep.to_html()
    True
    """
    from irmodels.data.frame import balance as _balance
    from irmodels.data.frame import require_columns
    from irmodels.models.anova import anova
    from irmodels.reporting.plots import (
        figure_to_png,
        tukey_means_plot,
        variance_components_plot,
    )

    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(
            f"build_report needs a long frame (a pandas DataFrame); got {type(data).__name__}. "
            "Read your data with irm.read_matrix, irm.read_frame or irm.read_trec_eval."
        )
    require_columns(data, ["topic", "system", "score"])
    data = _select_measure(data, measure)
    if measure is None and "measure" in data.columns and len(data):
        measure = str(data["measure"].iloc[0])
    sections = tuple(sections)
    for s in sections:
        if not isinstance(s, Section):
            raise DataFormatError(
                f"sections must be irmodels.reporting.Section objects; got {type(s).__name__}."
            )

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = anova(model, data)
        components: pd.DataFrame | None
        try:
            components = fit.variance_components()
        except DesignError as exc:
            components = None
            notes.append(f"Variance components not reported: {exc}")
        tukey = fit.tukey("system", alpha=alpha) if "system" in fit.spec.factors else None
    for w in caught:
        notes.append(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    design_factors = [f for f in fit.spec.factors if f in data.columns]
    bal = _balance(data, design_factors)
    info: dict[str, object] = {"observations": fit.n_obs}
    for col in ("collection", "measure"):
        if col in data.columns:
            info[col] = ", ".join(map(str, data[col].cat.categories))
    for f, n in bal.levels.items():
        info[f"{f} levels"] = n
    info["balanced"] = "yes" if bal.balanced else "no"
    data_info = pd.DataFrame({"value": pd.Series(info, dtype=object)})

    figures: dict[str, bytes] = {}
    if components is not None:
        figures["variance_components"] = figure_to_png(variance_components_plot(components))
    if tukey is not None:
        figures["tukey_means"] = figure_to_png(tukey_means_plot(tukey))

    if title is None:
        what = [measure] if measure else []
        if "collection" in data.columns:
            what.append(", ".join(map(str, data["collection"].cat.categories)))
        title = "Variance components and Tukey HSD" + (f": {' on '.join(what)}" if what else "")
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return Report(
        title=title,
        anova=fit,
        components=components,
        tukey=tukey,
        balance=bal,
        data_info=data_info,
        figures=figures,
        versions=software_versions(),
        notes=tuple(notes),
        sections=sections,
        alpha=float(alpha),
        created=created,
    )


def _select_measure(data: pd.DataFrame, measure: str | None) -> pd.DataFrame:
    if "measure" not in data.columns:
        return data
    present = [str(m) for m in pd.unique(data["measure"].astype(str))]
    if measure is None:
        if len(present) > 1:
            raise DesignError(
                f"the data hold {len(present)} measures ({', '.join(present[:6])}); a report "
                "analyses one. Pass measure=... (CLI: --measure)."
            )
        return data
    if measure not in present:
        raise DataFormatError(
            f"measure {measure!r} is not in the data; measures present: {', '.join(present)}."
        )
    out = data.loc[data["measure"].astype(str) == measure].reset_index(drop=True)
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].cat.remove_unused_categories()
    return out

