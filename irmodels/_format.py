"""Numbers and plain-text tables for people, without pandas.

The cell formats of every result's ``summary()`` live here (:mod:`irmodels._display` renders
DataFrames with them), so a command that never builds a DataFrame (``irmodels anova`` on a
complete score matrix, see :mod:`irmodels.cli._anova_fast`) prints the same characters.
Importing this module imports numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["POWER_COLUMNS", "P_COLUMNS", "P_FLOOR", "format_column", "format_number", "format_p",
           "format_power", "p_shown", "summary_text", "text_grid"]

#: Columns read as p-values: four decimals, values below 1e-4 shown as ``<0.0001``.
P_COLUMNS = frozenset({"p", "p_adj", "Pr(>F)", "p_value", "p_system", "p_mean", "p_var",
                       "lrt_p"})

#: Columns read as (estimated) power: a value below 1 that would print as ``1.0000`` prints as
#: ``> 0.9999`` (:func:`format_power`), in the text summaries and in LaTeX alike.
POWER_COLUMNS = frozenset({"power"})

#: Below this a p-value is shown as R shows it, ``< 2.2e-16``: a p-value that underflowed to 0
#: is not "p = 0".
P_FLOOR = float(np.finfo(float).eps)


def format_number(value: object, digits: int = 4) -> str:
    """Format a cell for people: ``digits`` significant digits from 1 to 1e4, ``digits``
    decimals below 1 (at least two significant digits: a variance of 0.00037 is not ``0.0004``),
    scientific notation outside 1e-4 to 1e4.

    >>> format_number(0.123456), format_number(12345.678), format_number(None), format_number(3)
    ('0.1235', '1.235e+04', '', '3')
    >>> format_number(0.000370), format_number(0.000149), format_number(0.0037)
    ('0.00037', '0.00015', '0.0037')
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
            if abs(v) >= 1:
                return f"{v:.{digits}g}"
            return f"{v:.{max(digits, 1 - math.floor(math.log10(abs(v))))}f}"
        return f"{v:.{digits - 1}e}"
    return str(value)


def p_shown(v: object) -> object:
    """``"< 2.2e-16"`` for a p-value below machine epsilon, ``v`` itself otherwise (NaN too).

    >>> p_shown(1e-300), p_shown(0.03)
    ('< 2.2e-16', 0.03)
    """
    if isinstance(v, (float, np.floating)) and 0 <= float(v) < P_FLOOR:
        return "< 2.2e-16"
    return v


def format_p(v: object, digits: int) -> str:
    """A p-value cell of a summary: :func:`p_shown`, else :func:`format_number`.

    >>> format_p(0.0, 4), format_p(0.012345, 4)
    ('< 2.2e-16', '0.0123')
    """
    shown = p_shown(v)
    return shown if isinstance(shown, str) else format_number(v, digits)


def format_power(v: object, digits: int) -> str:
    """A power cell: :func:`format_number`, except that a power below 1 that would print as
    ``1.0000`` (``digits`` decimals) prints as ``> 0.9999``: an estimated power of 0.999996 is
    not "power 1", as a p-value that underflowed is not "p = 0" (:func:`p_shown`). A power of
    exactly 1.0 prints as ``1``.

    >>> format_power(0.999996, 4), format_power(1.0, 4), format_power(0.81234, 4)
    ('> 0.9999', '1', '0.8123')
    >>> format_power(0.99994, 4), format_power(0.99996, 2), format_power(float("nan"), 4)
    ('0.9999', '> 0.99', '')
    """
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        x = float(v)
        d = max(digits, 1)
        if 0.1 <= x < 1 and float(f"{x:.{d}f}") >= 1:  # rounds up to 1 at the decimals shown
            return "> 0." + "9" * d
    return format_number(v, digits)


def format_column(name: object, values: Sequence[object], digits: int) -> list[str]:
    """The cells of one column of a text summary: :func:`format_p` in a p-value column
    (:data:`P_COLUMNS`), :func:`format_power` in a power column (:data:`POWER_COLUMNS`),
    :func:`format_number` elsewhere.

    >>> format_column("Pr(>F)", [0.0, 0.5], 4), format_column("SS", [168.0, 0.01362], 4)
    (['< 2.2e-16', '0.5000'], ['168', '0.0136'])
    >>> format_column("power", [1.0, 0.9999997866], 4)
    ['1', '> 0.9999']
    """
    key = str(name)
    fmt = format_p if key in P_COLUMNS else format_power if key in POWER_COLUMNS else format_number
    return [fmt(v, digits) for v in values]


def summary_text(title: str, tables: Sequence[tuple[str, str]]) -> str:
    """A text summary: the title line, then each table's title and text after a blank line.

    >>> print(summary_text("ANOVA", [("Analysis of variance", "x  1")]))
    ANOVA
    <BLANKLINE>
    Analysis of variance
    x  1
    """
    return "\n".join([title, *(f"\n{name}\n{text}" for name, text in tables)])


def text_grid(index: Sequence[str], columns: Sequence[str],
              cells: Sequence[Sequence[str]]) -> str:
    """A table of text as pandas' ``DataFrame.to_string()`` lays out a frame of strings with an
    unnamed index: the row labels left-justified under a blank corner, each column
    right-justified to its widest entry plus one space, columns one space apart.

    ``cells`` is one list of strings per column. The layout is tested equal to pandas' on
    random tables of printable ASCII.

    >>> print(text_grid(["topic", "Residual"], ["SS", "df"], [["168", "85.35"], ["49", "6272"]]))
                 SS    df
    topic       168    49
    Residual  85.35  6272
    """
    lead = max((len(s) for s in index), default=0)
    widths = [max(len(name), 1 + max((len(c) for c in col), default=0))
              for name, col in zip(columns, cells)]
    lines = [" ".join([" " * lead, *(n.rjust(w) for n, w in zip(columns, widths))])]
    for r, label in enumerate(index):
        lines.append(" ".join([label.ljust(lead),
                               *(col[r].rjust(w) for col, w in zip(cells, widths))]))
    return "\n".join(lines)
