"""Shared display machinery for result objects: ``summary()``, ``to_latex()``, ``_repr_html_``.

A result class lists its tables through ``_display_tables()`` (title, DataFrame pairs) and a
one-line header through ``_display_title()``; this mixin renders them. Nothing here computes a
statistic: it only formats what a result already holds. Display never changes state.

The table renderers live in :mod:`irmodels._render` (shared with the report sections of
:mod:`irmodels._section`) and are re-exported here under their old names.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pandas as pd

from irmodels._format import (
    format_number,  # noqa: F401 - re-exported
    p_shown,  # noqa: F401 - re-exported (the report imports it from here)
    summary_text,
)
from irmodels._render import (  # noqa: F401 - the renderers, re-exported under their old home
    LATEX_HEADERS,
    LONGTABLE_ROWS,
    MAX_DIGITS,
    check_columns,
    check_digits,
    column_formatter,
    frame_to_html,
    frame_to_latex,
    frame_to_text,
    latex_escape,
    latex_header,
    pdflatex_unsupported,
    plot_text,
    quiet_latex_unicode,
    slug,
    warn_unsupported,
)
from irmodels._section import Section, frame_to_markdown
from irmodels.errors import ArgumentError

__all__ = [
    "LATEX_HEADERS", "LONGTABLE_ROWS", "ResultDisplay", "TableAccess", "column_formatter",
    "format_number", "frame_to_html", "frame_to_latex", "frame_to_text", "latex_escape",
    "latex_header", "pdflatex_unsupported", "quiet_latex_unicode",
]


class ResultDisplay:
    """Mixin: one face for every result.

    ``summary() -> str`` for people, ``to_frame() -> DataFrame`` (the main table, tidy),
    ``to_latex()`` (booktabs tables that compile in a plain ``article`` and fit its text width),
    ``_repr_html_`` for notebooks and ``__str__``. Subclasses implement
    ``_display_title() -> str`` and ``_display_tables() -> Sequence[tuple[str, DataFrame]]``
    (the first table is the main one), a one-line ``__repr__``, and override ``to_frame`` when
    the main table is not the first display table. Display never changes state.
    """

    def _display_title(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__

    def _display_tables(self) -> Sequence[tuple[str, pd.DataFrame]]:  # pragma: no cover
        return []

    def summary(self, digits: int = 4) -> str:
        """A plain-text summary for people (numbers formatted, never rounded in the result)."""
        return summary_text(self._display_title(),
                            [(title, frame_to_text(table, digits))
                             for title, table in self._display_tables()])

    def to_frame(self) -> pd.DataFrame:
        """The main table, tidy: one row per observation, its index (when named) a column."""
        tables = self._display_tables()
        if not tables:
            return pd.DataFrame()
        table = tables[0][1]
        if table.index.name is not None or isinstance(table.index, pd.MultiIndex):
            return table.reset_index()
        return table.copy()

    def _latex_label(self) -> str:
        return "tab:" + slug(type(self).__name__)

    def to_latex(
        self,
        *,
        caption: str | None = None,
        label: str | None = None,
        digits: int = 4,
        columns: Sequence[str] | None = None,
    ) -> str:
        r"""LaTeX (booktabs) of every table of the result, each a ``table`` float with a caption
        and a ``\label`` (a ``longtable`` across pages when it has more than
        :data:`LONGTABLE_ROWS` rows).

        Every table compiles in a plain ``article`` with ``\usepackage{booktabs}`` (and
        ``\usepackage{longtable}`` for the long ones) and fits the text width (the font size
        is chosen for it). Headers of statistics print as math (``$F$``, ``$\eta^2_p$``,
        ``$\Pr(>F)$``), each column has one number of decimals, booleans print as
        ``yes``/blank, infinities as ``$\infty$``. A name pdflatex cannot typeset (Greek, CJK)
        is kept and warned about (:func:`frame_to_latex`). Two results of the same kind in one
        paper need their own ``label=`` (the default labels would collide).

        Parameters
        ----------
        caption : str, optional
            Caption of the first table (default: the result's title); the others keep their
            titles.
        label : str, optional
            ``\label`` of the first table (default ``tab:<class name>``); the others get
            ``<label>-2``, ``<label>-3``, ...
        digits : int
            Significant digits of the smallest non-zero value of a column.
        columns : sequence of str, optional
            Columns to print, in this order, in every table that has them all (other tables are
            printed whole); a name that no table has raises
            :class:`~irmodels.errors.ArgumentError` (as a ``digits`` outside 1 to 17 does).
        """
        digits = check_digits(digits)
        columns = check_columns(columns)
        tables = list(self._display_tables())
        if columns is not None:
            known = {str(c) for _, t in tables for c in t.columns}
            missing = [c for c in columns if c not in known]
            if missing:
                raise ArgumentError(
                    f"no column(s) {', '.join(map(repr, missing))} in {type(self).__name__}'s "
                    f"tables; they have {', '.join(sorted(known))}."
                )
        base = label if label is not None else self._latex_label()
        out = []
        with quiet_latex_unicode():  # one warning for all the tables, below
            for i, (title, table) in enumerate(tables):
                cap = caption if (i == 0 and caption is not None) else title
                cols = columns if columns is not None and all(c in table.columns for c in columns) \
                    else None
                out.append(frame_to_latex(table, caption=cap,
                                          label=base if i == 0 else f"{base}-{i + 1}",
                                          digits=digits, columns=cols))
        tex = "\n\n".join(out)
        warn_unsupported(tex, stacklevel=3)
        return tex

    def to_section(self, *, digits: int = 4) -> Any:
        """The report section this result renders (:class:`irmodels._section.Section`): its
        title line as the heading, every table in HTML and Markdown, and :meth:`to_latex`.
        Results with figures or prose override it."""
        lines = self._display_title().splitlines()
        tables = list(self._display_tables())
        rest = " ".join(lines[1:])
        body_html = [f"<p>{html.escape(rest)}</p>"] if rest else []
        body_md = [rest] if rest else []
        for title, table in tables:
            body_html.append(frame_to_html(table, title=title, digits=digits))
            body_md += [f"**{title}**", frame_to_markdown(table, digits=digits)]
        with quiet_latex_unicode():  # a by-product here: Report.latex_tables() checks it
            latex = self.to_latex(digits=digits)
        return Section(title=lines[0] if lines else type(self).__name__,
                       html="".join(body_html), markdown="\n\n".join(body_md), latex=latex)

    def _repr_html_(self) -> str:
        parts = [f"<div class='irmodels-result'><strong>{html.escape(self._display_title())}</strong>"]
        for title, table in self._display_tables():
            parts.append(frame_to_html(table, title=title))
        parts.append("</div>")
        return "".join(parts)

    def __str__(self) -> str:
        return self.summary()


class TableAccess:
    """Mixin for results whose main content is one frame, :attr:`table`: the result indexes,
    measures and answers attribute look-ups like the table (``res["p"]``, ``len(res)``,
    ``res.loc[...]``, ``res.round(4)``), so code written when the function returned the bare
    frame keeps working; ``to_frame()`` returns a copy of it."""

    table: pd.DataFrame

    def __getitem__(self, key: object) -> Any:
        return self.table[key]

    def __len__(self) -> int:
        return len(self.table)

    def __iter__(self) -> Any:  # as a DataFrame: the column names
        return iter(self.table)

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def __getattr__(self, name: str) -> Any:
        # ``plot`` is the result's figure (when it has one), never the table's pandas plot
        if name.startswith("_") or name in ("table", "plot"):
            raise AttributeError(name)
        try:
            return getattr(self.__dict__["table"], name)
        except (KeyError, AttributeError):
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r} (nor has its .table)"
            ) from None

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`, a copy."""
        return self.table.copy()
