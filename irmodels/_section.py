"""A report section: the unit every result renders itself into (HTML, Markdown, LaTeX).

This module sits at the base of the package, beside ``_display.py`` (it renders tables with the
renderers of ``_render.py``): results in every layer (models, inference, studies) build their
own :class:`Section`, and ``irmodels.reporting`` only assembles sections into a page. Nothing here computes a statistic.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from irmodels._format import format_number
from irmodels._render import frame_to_html, frame_to_latex
from irmodels.errors import ArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["Section", "figure_axes", "figure_to_data_uri", "figure_to_png", "frame_to_markdown",
           "img_tag", "png_tag"]


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


def figure_axes(ax: Any, *, figsize: tuple[float, float], shape: tuple[int, int] = (1, 1),
                sharex: bool = False, what: str = "this plot") -> tuple[Figure, list[Any]]:
    """The figure and the Axes (one per panel, row by row) a ``plot(ax=...)`` method draws on.

    Without ``ax`` a new figure (constrained layout) is made through :mod:`matplotlib.pyplot`,
    so that the backend of a Jupyter kernel (the inline backend) shows it as an image when a
    cell returns it, and it is closed in pyplot at once: the caller gets the figure, pyplot
    keeps no reference (a script or a test making many figures accumulates none), and a
    notebook shows it once, from the returned value. With ``ax`` (one Axes, or a sequence of
    as many Axes as panels) the plot draws there and the figure is ``ax.figure``, its layout
    left to the caller.

    >>> fig, axes = figure_axes(None, figsize=(4, 3), shape=(1, 2))
    >>> len(axes), figure_axes(axes[1], figsize=(1, 1))[0] is fig
    (2, True)
    """
    n = shape[0] * shape[1]
    if ax is None:
        # here, not at import: matplotlib is slow to import and only a figure needs it
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=figsize, layout="constrained")
        plt.close(fig)
        grid = fig.subplots(*shape, squeeze=False, sharex=sharex)
        return fig, list(grid.ravel())
    axes = [ax] if hasattr(ax, "figure") and hasattr(ax, "plot") else (
        list(getattr(ax, "flat", ax)) if isinstance(ax, Sequence) or hasattr(ax, "flat") else [])
    if len(axes) != n or not all(hasattr(a, "figure") and hasattr(a, "plot") for a in axes):
        got = (f"{len(axes)} Axes" if axes and all(hasattr(a, "plot") for a in axes)
               else f"{type(ax).__name__}")
        raise ArgumentError(
            f"ax must be {'a matplotlib Axes' if n == 1 else f'a sequence of {n} matplotlib Axes'}"
            f" ({what} draws {n} panel{'s' if n > 1 else ''}); got {got}. Pass "
            f"{'plt.subplots()[1]' if n == 1 else f'plt.subplots({shape[0]}, {shape[1]})[1]'}, "
            "or no ax for a new figure.")
    return axes[0].figure, axes


def figure_to_png(fig: Figure, *, dpi: int = 110) -> bytes:
    """PNG bytes of a figure (deterministic: no timestamp metadata)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def figure_to_data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for embedding a PNG in a self-contained HTML page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def img_tag(fig: Figure, alt: str, caption: str = "") -> str:
    """An ``<figure>`` element embedding ``fig`` as a PNG, with an optional caption; the
    figure is closed if pyplot manages it."""
    png = figure_to_png(fig)
    try:
        # here, not at import: matplotlib is slow to import and only a figure needs it
        import matplotlib.pyplot as plt

        plt.close(fig)
    except Exception:  # pragma: no cover - pyplot unavailable
        pass
    return png_tag(png, alt, caption)


def png_tag(png: bytes, alt: str, caption: str = "") -> str:
    """The ``<figure>`` element of :func:`img_tag` for PNG bytes already rendered (a report's
    ``figures``), so that a figure is drawn once however often a page is rendered.

    >>> png_tag(b"\\x89PNG", "curves", "a <caption>")
    '<figure><img alt="curves" src="data:image/png;base64,iVBORw=="><figcaption>a &lt;caption&gt;</figcaption></figure>'
    """
    uri = figure_to_data_uri(png)
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{html.escape(alt)}" src="{html.escape(uri)}">{cap}</figure>'


@dataclass(frozen=True)
class Section:
    """A section of a report, rendered by the result (or the study) it describes.

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
        LaTeX body (e.g. booktabs tables); collected by ``Report.latex_tables()``.

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

    @classmethod
    def from_tables(
        cls, title: str, text: str, tables: Sequence[tuple[str, pd.DataFrame]], *,
        png: bytes | None = None, alt: str = "", caption: str = "", digits: int = 4,
    ) -> Section:
        """A section made of a paragraph, titled tables and an optional figure (PNG bytes):
        what a study renders.

        >>> t = pd.DataFrame({"tau": [0.91, 0.88]}, index=["S=2", "S=5"])
        >>> s = Section.from_tables("Shard study", "Two shard counts.", [("tau", t)], digits=2)
        >>> s.html.startswith("<p>Two shard counts.</p>"), s.markdown.splitlines()[2]
        (True, '**tau**')
        >>> "0.91" in s.latex and "0.88" in s.latex and "<figure>" not in s.html
        True
        """
        parts = [f"<p>{html.escape(text)}</p>"]
        md = [text, ""]
        tex = []
        for name, table in tables:
            parts.append(frame_to_html(table, title=name, digits=digits))
            md += [f"**{name}**", "", frame_to_markdown(table, digits=digits), ""]
            tex.append(frame_to_latex(table, caption=name, digits=digits))
        if png is not None:
            parts.append(f'<figure><img alt="{html.escape(alt)}" src="{figure_to_data_uri(png)}"/>'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        return cls(title=title, html="".join(parts), markdown="\n".join(md),
                   latex="\n\n".join(tex))
