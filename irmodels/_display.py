"""Shared display machinery for result objects: ``summary()``, ``to_latex()``, ``_repr_html_``.

A result class lists its tables through ``_display_tables()`` (title, DataFrame pairs) and a
one-line header through ``_display_title()``; this mixin renders them. Nothing here computes a
statistic: it only formats what a result already holds. Display never changes state.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["ResultDisplay", "latex_escape", "format_number", "frame_to_latex", "frame_to_html"]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))


def latex_escape(text: object) -> str:
    r"""Escape every LaTeX special character of ``text``.

    >>> latex_escape("run_1 & 50% {x}")
    'run\\_1 \\& 50\\% \\{x\\}'
    """
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], str(text))


def format_number(value: object, digits: int = 4) -> str:
    """Format a cell for people: ``digits`` significant digits, p-values below 1e-4 as ``<1e-04``.

    >>> format_number(0.123456), format_number(12345.678), format_number(None), format_number(3)
    ('0.1235', '1.235e+04', '', '3')
    """
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if 1e-4 <= abs(v) < 1e4:
            return f"{v:.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}f}"
        return f"{v:.{digits - 1}e}"
    return str(value)


def _formatted(df: pd.DataFrame, digits: int) -> pd.DataFrame:
    out = df.copy()
    for col in out.columns:
        out[col] = [format_number(v, digits) for v in out[col].tolist()]
    out.index = [str(i) for i in out.index]
    return out


def frame_to_latex(
    df: pd.DataFrame, *, caption: str | None = None, label: str | None = None, digits: int = 4
) -> str:
    r"""Render a DataFrame as a booktabs ``table`` with every cell escaped.

    >>> print(frame_to_latex(pd.DataFrame({"p_adj": [0.01]}, index=["a_b"])).splitlines()[4])
     & p\_adj \\
    """
    shown = _formatted(df, digits)
    cols = "l" + "r" * shown.shape[1]
    lines = [r"\begin{table}[htbp]", r"\centering", rf"\begin{{tabular}}{{{cols}}}", r"\toprule"]
    header = [latex_escape(df.index.name or "")] + [latex_escape(c) for c in shown.columns]
    lines.append(" & ".join(header) + r" \\")
    lines.append(r"\midrule")
    for idx, row in shown.iterrows():
        lines.append(" & ".join([latex_escape(idx)] + [latex_escape(v) for v in row]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption is not None:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label is not None:
        lines.append(rf"\label{{{latex_escape(label)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)


def frame_to_html(df: pd.DataFrame, *, title: str | None = None, digits: int = 4) -> str:
    """Render a DataFrame as an escaped HTML table (numbers formatted, never rounded in place)."""
    shown = _formatted(df, digits)
    parts = []
    if title:
        parts.append(f"<h4>{html.escape(title)}</h4>")
    parts.append('<table class="irm-table"><thead><tr>')
    parts.append(f"<th>{html.escape(str(df.index.name or ''))}</th>")
    parts += [f"<th>{html.escape(str(c))}</th>" for c in shown.columns]
    parts.append("</tr></thead><tbody>")
    for idx, row in shown.iterrows():
        cells = "".join(f"<td>{html.escape(str(v))}</td>" for v in row)
        parts.append(f"<tr><th>{html.escape(str(idx))}</th>{cells}</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def frame_to_text(df: pd.DataFrame, digits: int = 4) -> str:
    """Plain-text rendering with formatted numbers."""
    return _formatted(df, digits).to_string()


class ResultDisplay:
    """Mixin: ``summary()``, ``to_latex()``, ``_repr_html_`` and ``__str__`` from ``_display_tables``.

    Subclasses implement ``_display_title() -> str`` and
    ``_display_tables() -> Sequence[tuple[str, pd.DataFrame]]``.
    """

    def _display_title(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__

    def _display_tables(self) -> Sequence[tuple[str, pd.DataFrame]]:  # pragma: no cover
        return []

    def summary(self, digits: int = 4) -> str:
        """A plain-text summary for people (numbers formatted, never rounded in the result)."""
        blocks = [self._display_title()]
        for title, table in self._display_tables():
            blocks.append(f"\n{title}\n" + frame_to_text(table, digits))
        return "\n".join(blocks)

    def to_latex(
        self, *, caption: str | None = None, label: str | None = None, digits: int = 4
    ) -> str:
        """LaTeX (booktabs) for every table of the result; caption and label go on the first."""
        out = []
        for i, (title, table) in enumerate(self._display_tables()):
            cap = caption if (i == 0 and caption is not None) else title
            out.append(frame_to_latex(table, caption=cap, label=label if i == 0 else None, digits=digits))
        return "\n\n".join(out)

    def _repr_html_(self) -> str:
        parts = [f"<div class='irmodels-result'><strong>{html.escape(self._display_title())}</strong>"]
        for title, table in self._display_tables():
            parts.append(frame_to_html(table, title=title))
        parts.append("</div>")
        return "".join(parts)

    def __str__(self) -> str:
        return self.summary()
