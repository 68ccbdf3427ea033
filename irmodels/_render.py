"""The renderers of the result face: tables as LaTeX (booktabs), HTML and plain text, and the
checks of their ``digits=`` and ``columns=`` options.

:mod:`irmodels._display` (the :class:`~irmodels._display.ResultDisplay` mixin) and
:mod:`irmodels._section` (report sections) both render tables with these; both import them from
here, so neither imports the other's renderers. Nothing here computes a statistic.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import math
import re
import warnings
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from irmodels._format import (
    P_COLUMNS,
    POWER_COLUMNS,
    format_column,
    format_number,
    format_power,
    text_grid,
)
from irmodels._validate import is_int
from irmodels.errors import ArgumentError, DataQualityWarning

__all__ = [
    "LATEX_HEADERS", "LONGTABLE_ROWS", "MAX_DIGITS", "check_columns", "check_digits",
    "column_formatter", "frame_to_html", "frame_to_latex", "frame_to_text", "latex_escape",
    "latex_header", "pdflatex_unsupported", "plot_text", "quiet_latex_unicode", "slug",
    "warn_unsupported",
]

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
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"{\ttfamily\char34}",  # a straight quote in OT1 and T1 (\textquotedbl needs T1)
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIALS))

#: Column names printed as LaTeX math (or a nicer header) in :func:`frame_to_latex`; any other
#: name is escaped. Keys are the tidy column names of the results (and the renderers' labels).
LATEX_HEADERS: dict[str, str] = {
    "F": "$F$",
    "p": "$p$",
    "Pr(>F)": r"$\Pr(>F)$",
    "p_adj": r"$p_{\mathrm{adj}}$",
    "p_value": "$p$",
    "q": "$q$",
    "t": "$t$",
    "z": "$z$",
    "n": "$n$",
    "df": "df",
    "eta2": r"$\eta^2$",
    "eta2_partial": r"$\eta^2_p$",
    "omega2": r"$\omega^2$",
    "omega2_partial": r"$\omega^2_p$",
    "omega2_system": r"$\omega^2_p$ (system)",
    "cohen_f2": r"$f^2$",
    "F_system": "$F$ (system)",
    "p_system": "$p$ (system)",
    "ms_error": r"$\mathrm{MS}_E$",
    "df_error": r"$\mathrm{df}_E$",
    "effect_sd": "$d_z$",
    "effect_mse": r"$\Delta/\sqrt{\mathrm{MS}_E}$",
    "dz": "$d_z$",
    "dz_lower": "$d_z$ lower",
    "dz_upper": "$d_z$ upper",
    "p_equiv": r"$p_{\mathrm{equiv}}$",
    "ci_lower": "CI lower",
    "ci_upper": "CI upper",
    "tau": r"$\tau$",
    "tau_lower": r"$\tau$ lower",
    "tau_upper": r"$\tau$ upper",
    "sigma": r"$\sigma$",
    "delta": r"$\delta$",
    "mu": r"$\mu$",
    "Erho2": r"$E\rho^2$",
    "phi": r"$\Phi$",
    "Phi": r"$\Phi$",
    "rho_I": r"$\rho_I$",
    "sd_ratio": "SD ratio",
    "num_df": r"$\mathrm{df}_1$",
    "den_df": r"$\mathrm{df}_2$",
    "df1": r"$\mathrm{df}_1$",
    "df2": r"$\mathrm{df}_2$",
    "se": "SE",
    "sd": "SD",
}

#: A table with more body rows than this (summed over the tabulars a wide table is split into)
#: is printed as a ``longtable`` that breaks across pages (``\usepackage{longtable}``), not as
#: a ``table`` float: a float cannot break, and pdflatex drops the rows below the page bottom
#: of a float taller than the page with only a "Float too large for page" warning. 42 rows of
#: booktabs at the normal font size fit the text height of a plain ``article``; 40 leaves room
#: for a two-line caption.
LONGTABLE_ROWS = 40

# Characters beyond printable ASCII that pdflatex's default input (utf8, OT1 fonts) typesets:
# Latin-1 but the six letters and guillemets that need T1 fonts, and the common punctuation.
_OT1_MISSING = frozenset("«»ÐÞðþ")
_PDFLATEX_EXTRA = frozenset("–—‘’“”…")

# False while LaTeX is built only as a by-product (the LaTeX of a report section rendered for
# an HTML page): no warning about characters pdflatex cannot typeset then.
_WARN_UNICODE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "irmodels_latex_unicode_warning", default=True)

# text width of a plain ``article`` (345 pt) with a small margin; widths of a digit and the
# column separation at each size, in pt, used to pick the largest size that fits.
_TEXT_WIDTH = 335.0
_SIZES = (("", 10.0), (r"\small", 9.0), (r"\footnotesize", 8.0), (r"\scriptsize", 7.0),
          (r"\tiny", 5.0))


def plot_text(text: object) -> str:
    r"""``text`` as matplotlib shows it literally: a pair of ``$`` would start math mode (a name
    ``run$1$x`` drawn as math, ``$a^$`` a parse error), so every ``$`` is escaped.

    >>> plot_text("run$1$x")
    'run\\$1\\$x'
    """
    return str(text).replace("$", r"\$")


def latex_escape(text: object) -> str:
    r"""Escape every LaTeX special character of ``text`` (``<``, ``>``, ``|`` and ``"`` too,
    which the default OT1 text fonts print wrongly: ``"`` would print as a closing quote).

    >>> latex_escape("run_1 & 50% {x}")
    'run\\_1 \\& 50\\% \\{x\\}'
    >>> latex_escape("Pr(>F)")
    'Pr(\\textgreater{}F)'
    """
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group(0)], str(text))


def latex_header(name: object) -> str:
    r"""The LaTeX header of a column: math for the statistics' names, else the escaped name.

    >>> latex_header("omega2_partial"), latex_header("Pr(>F)"), latex_header("n_splits")
    ('$\\omega^2_p$', '$\\Pr(>F)$', 'n\\_splits')
    >>> latex_header("Phi_lower"), latex_header("tau_change")
    ('$\\Phi$ lower', '$\\tau$ $\\Delta$\\%')

    """
    key = str(name)
    if key in LATEX_HEADERS:
        return LATEX_HEADERS[key]
    base, _, end = key.rpartition("_")
    if end in ("lower", "upper") and base in LATEX_HEADERS:
        return f"{LATEX_HEADERS[base]} {end}"
    if end == "change" and base:  # a percentage change (ShardStudy.by_model)
        return rf"{latex_header(base)} $\Delta$\%"
    return latex_escape(key)


def pdflatex_unsupported(text: str) -> str | None:
    """The first character of ``text`` that pdflatex cannot typeset with its default input
    (utf8) and fonts (OT1), or None: anything outside Latin-1 (Greek, Cyrillic, CJK, math
    symbols) but the dashes, curly quotes and ellipsis, and the six Latin-1 characters that
    need T1 fonts (``« » Ð Þ ð þ``). XeLaTeX and LuaLaTeX typeset them all, given a font.

    >>> pdflatex_unsupported("Café – naïve"), pdflatex_unsupported("αβ-系统")
    (None, 'α')
    """
    for ch in text:
        o = ord(ch)
        if o < 0x80:
            continue
        if (0xA0 <= o <= 0xFF and ch not in _OT1_MISSING) or ch in _PDFLATEX_EXTRA:
            continue
        return ch
    return None


def warn_unsupported(tex: str, stacklevel: int = 3) -> None:
    """Warn (:class:`~irmodels.errors.DataQualityWarning`) when ``tex`` holds a character that
    pdflatex stops on; names are never transliterated."""
    if not _WARN_UNICODE.get():
        return
    ch = pdflatex_unsupported(tex)
    if ch is None:
        return
    if ch in _OT1_MISSING:
        how = ("pdflatex typesets it with T1 fonts (\\usepackage[T1]{fontenc} in the "
               "preamble), xelatex and lualatex as it is")
    else:
        how = ("compile with xelatex or lualatex (\\usepackage{fontspec} and a font that has "
               "it), or with pdflatex load a font package for that script (e.g. CJKutf8 for "
               "Chinese, Japanese and Korean; babel's greek or russian with their font "
               "encodings)")
    warnings.warn(
        f"the LaTeX output contains {ch!r} (U+{ord(ch):04X}), which pdflatex with its default "
        "fonts cannot typeset: it stops with \"Unicode character ... not set up for use with "
        f"LaTeX\". The text is kept as it is (names are not transliterated): {how}.",
        DataQualityWarning, stacklevel=stacklevel)


@contextlib.contextmanager
def quiet_latex_unicode() -> Iterator[None]:
    """No :func:`pdflatex_unsupported` warning inside (LaTeX built as a by-product of an HTML
    or Markdown rendering; whoever writes it out checks it, as
    :meth:`irmodels.reporting.Report.latex_tables` does)."""
    token = _WARN_UNICODE.set(False)
    try:
        yield
    finally:
        _WARN_UNICODE.reset(token)


def _is_missing(v: object) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and math.isnan(float(v))


def column_formatter(name: object, values: Sequence[object], digits: int = 4):
    r"""One format for a whole column (the same number of decimals on every row).

    Booleans print as ``yes`` / blank; integers (and floats that are all whole numbers) without
    decimals; p-value columns (:data:`P_COLUMNS`) with four decimals and ``<0.0001`` below;
    other numbers with the decimals that give the smallest non-zero magnitude ``digits``
    significant digits (at most 6), in scientific notation when the column needs it; NaN as
    blank, infinities as ``inf`` / ``-inf`` (:func:`frame_to_latex` prints them as
    ``$\infty$``); anything else as text. A column named ``value`` (a key-value table, one
    quantity a row) is formatted cell by cell, and so is a power column
    (:data:`~irmodels._format.POWER_COLUMNS`), as the text summary prints it
    (:func:`~irmodels._format.format_power`: ``1``, ``> 0.9999``, ``0.8123``).

    >>> f = column_formatter("SS", [0.444, 0.0314, 12.5])
    >>> [f(v) for v in [0.444, 0.0314, 12.5]]
    ['0.4440', '0.0314', '12.5000']
    >>> f = column_formatter("p", [0.5, 3e-9, float("nan")])
    >>> [f(v) for v in [0.5, 3e-9, float("nan")]]
    ['0.5000', '<0.0001', '']
    >>> [column_formatter("reject", [True, False])(v) for v in (True, False)]
    ['yes', '']
    """
    vals = [v for v in values if not _is_missing(v)]
    if str(name) == "value":  # a key-value table: one quantity per row, each its own format
        return lambda v: "" if _is_missing(v) else format_number(v, digits)
    if str(name) in POWER_COLUMNS:  # as the text summary shows it: 1, > 0.9999, 0.8123
        return lambda v: "" if _is_missing(v) else format_power(v, digits)
    if vals and all(isinstance(v, (bool, np.bool_)) for v in vals):
        return lambda v: "" if _is_missing(v) else ("yes" if bool(v) else "")
    numeric = [float(v) for v in vals
               if isinstance(v, (int, float, np.integer, np.floating))
               and not isinstance(v, (bool, np.bool_))]
    if not vals or len(numeric) < len(vals):
        return lambda v: "" if _is_missing(v) else format_number(v, digits)
    finite = np.array([v for v in numeric if math.isfinite(v)])

    def special(v: float) -> str | None:
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return None

    if str(name) in P_COLUMNS:
        def fmt_p(v: object) -> str:
            if _is_missing(v):
                return ""
            x = float(v)  # type: ignore[arg-type]
            s = special(x)
            if s is not None:
                return s
            return "<0.0001" if 0 <= x < 1e-4 else f"{x:.4f}"
        return fmt_p
    if finite.size == 0 or np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15):
        def fmt_int(v: object) -> str:
            if _is_missing(v):
                return ""
            x = float(v)  # type: ignore[arg-type]
            s = special(x)
            return s if s is not None else str(int(round(x)))
        return fmt_int
    nonzero = np.abs(finite[finite != 0])
    smallest = float(nonzero.min()) if nonzero.size else 1.0
    largest = float(np.abs(finite).max())
    decimals = digits - 1 - math.floor(math.log10(smallest))
    if largest >= 1e6 or decimals > 6 + digits // 2:
        def fmt_sci(v: object) -> str:
            if _is_missing(v):
                return ""
            x = float(v)  # type: ignore[arg-type]
            s = special(x)
            return s if s is not None else f"{x:.{digits - 1}e}"
        return fmt_sci
    decimals = max(0, min(decimals, 6))

    def fmt_fixed(v: object) -> str:
        if _is_missing(v):
            return ""
        x = float(v)  # type: ignore[arg-type]
        s = special(x)
        return s if s is not None else f"{x:.{decimals}f}"
    return fmt_fixed


#: Most significant digits a table prints (a float64 holds 15 to 17).
MAX_DIGITS = 17


def check_digits(digits: object) -> int:
    """``digits`` of the renderers: a whole number from 1 to :data:`MAX_DIGITS`.

    >>> check_digits(3)
    3
    >>> check_digits(-1)
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: digits must be a whole number between 1 and 17; got -1. ...
    """
    if not is_int(digits) or not 1 <= digits <= MAX_DIGITS:  # type: ignore[operator]
        raise ArgumentError(
            f"digits must be a whole number between 1 and {MAX_DIGITS}; got {digits!r}. It is "
            "the number of significant digits of the smallest non-zero value of a column "
            "(default 4).")
    return int(digits)  # type: ignore[call-overload]


def check_columns(columns: object) -> list[str] | None:
    """``columns=`` of the renderers: ``None`` or a list of names (a bare string is refused,
    it would be read letter by letter)."""
    if columns is None:
        return None
    if isinstance(columns, (str, bytes)) or not isinstance(columns, (Sequence, pd.Index, np.ndarray)):
        raise ArgumentError(
            f"columns must be a list of column names; got {columns!r}"
            + (f" (for one column write [{columns!r}])." if isinstance(columns, str) else "."))
    return list(columns)


def _formatted(df: pd.DataFrame, digits: int) -> pd.DataFrame:
    out = df.copy()
    for col in out.columns:
        out[col] = format_column(col, out[col].tolist(), digits)
    out.index = [str(i) for i in out.index]
    return out


def _index_labels(index: pd.Index) -> list[str]:
    if isinstance(index, pd.MultiIndex):
        return [", ".join(map(str, t)) for t in index]
    return [str(i) for i in index]


def _index_name(index: pd.Index) -> str:
    if isinstance(index, pd.MultiIndex):
        return ", ".join(str(n) for n in index.names if n is not None)
    return str(index.name) if index.name is not None else ""


def _visible_length(tex: str) -> int:
    """Rough printed length of a LaTeX snippet (commands and braces dropped)."""
    text = re.sub(r"\\(textgreater|textless|textbar|textbackslash|textasciitilde|"
                  r"textasciicircum)\{\}", "x", tex)
    text = re.sub(r"\\[A-Za-z]+", "", text)
    text = re.sub(r"[{}$^\\]", "", text)
    return len(text)


def _table_width(widths: list[int], pt: float, sep: float) -> float:
    # 0.5 em per character (digits are 0.5 em, lower-case letters less), plus the separations
    return sum(widths) * 0.5 * pt + 2 * sep * len(widths)


def _font_size(widths: list[int]) -> tuple[str, bool] | None:
    r"""(size command, tight column separation?) of the largest size at which the table fits,
    or None when it fits at none down to ``\scriptsize``."""
    for tight in (False, True):
        for cmd, pt in _SIZES[:4]:
            if tight and cmd == "":
                continue
            if _table_width(widths, pt, 3.0 if tight else 6.0) <= _TEXT_WIDTH:
                return cmd, tight
    return None


def _stacked(header: str, name: str) -> tuple[str, int]:
    """A header broken at underscores into stacked lines, and its widest line's length."""
    if header != latex_escape(name) or "_" not in name:
        return header, _visible_length(header)
    parts = [latex_escape(p) for p in name.split("_") if p]
    body = r"\\".join(parts)
    return (rf"\begin{{tabular}}[b]{{@{{}}r@{{}}}}{body}\end{{tabular}}",
            max(_visible_length(p) for p in parts))


def slug(text: str) -> str:
    """``text`` as a LaTeX label: lower case, runs of other characters one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "table"


def _latex_cell(value: object, text: str) -> str:
    r"""A formatted cell as LaTeX: infinities as ``$\infty$`` (a degenerate F, a test statistic
    of identical runs), ``<0.0001`` and ``> 0.9999`` with a math sign, else escaped text."""
    if (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_))):
        if math.isinf(float(value)):
            return r"$\infty$" if float(value) > 0 else r"$-\infty$"
        if text.startswith(("<0.", "> 0.")):  # a p-value or power bound: the sign as math
            return rf"${text[0]}${text.lstrip('<> ')}"
    return latex_escape(text)


def frame_to_latex(
    df: pd.DataFrame,
    *,
    caption: str | None = None,
    label: str | None = None,
    digits: int = 4,
    columns: Sequence[str] | None = None,
    bold: pd.DataFrame | None = None,
    raw_cells: bool = False,
) -> str:
    r"""Render a DataFrame as a booktabs ``table`` that compiles in a plain ``article``.

    Every cell and header is escaped; the statistics' names become math headers
    (:data:`LATEX_HEADERS`); each column has one number format (:func:`column_formatter`),
    booleans print as ``yes``/blank, an infinite value (a degenerate $F$) as ``$\infty$`` and
    a missing one (NaN) as a blank cell, as ``summary()`` leaves it; the font size (``\small``
    down to ``\tiny``) is the largest at which the table fits the text width; the caption
    (default: none given, then ``"Table"``) goes above the table and a ``\label`` follows it
    (default ``tab:<slug of the caption>``: pass ``label=`` to tell apart two tables of the
    same kind in one paper). A table too wide at ``\scriptsize`` gets its long headers stacked
    at underscores, then its columns split over several tabulars in the same float.

    A table of more than :data:`LONGTABLE_ROWS` rows (over all its tabulars) would not fit on a
    page as a float, and pdflatex would silently drop the rows below the page bottom: it is
    printed as a ``longtable`` instead, which breaks across pages, with the caption and label
    at the top and the header repeated on every page under "(continued)". Such a table needs
    ``\usepackage{longtable}`` besides ``\usepackage{booktabs}``; shorter tables need only
    booktabs.

    Text is never transliterated: when the output holds a character that pdflatex with its
    default fonts cannot typeset (Greek, CJK, ...: see :func:`pdflatex_unsupported`), a
    :class:`~irmodels.errors.DataQualityWarning` names it and says how to compile (xelatex or
    lualatex with fontspec, or a font package for that script).

    Parameters
    ----------
    columns : sequence of str, optional
        The columns to print, in this order.
    bold : DataFrame of bool, optional
        Same shape as ``df``: cells printed in bold.
    raw_cells : bool
        Cells are LaTeX already (not escaped, not formatted): for tables built by a renderer.

    >>> tex = frame_to_latex(pd.DataFrame({"p_adj": [0.01]}, index=["a_b"]), caption="Pairs")
    >>> print("\n".join(tex.splitlines()[3:9]))
    \label{tab:pairs}
    \begin{tabular}{lr}
    \toprule
     & $p_{\mathrm{adj}}$ \\
    \midrule
    a\_b & 0.0100 \\
    >>> long = pd.DataFrame({"mean": np.linspace(0.1, 0.5, 50)}, index=[f"r{i}" for i in range(50)])
    >>> print("\n".join(frame_to_latex(long, caption="Means").splitlines()[:3]))
    \begin{longtable}{lr}
    \caption{Means}\label{tab:means}\\
    \toprule
    """
    digits = check_digits(digits)
    columns = check_columns(columns)
    if columns is not None:
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise ArgumentError(
                f"no column(s) {', '.join(map(repr, missing))} in this table; its columns are "
                f"{', '.join(map(str, df.columns))}."
            )
        df = df[list(columns)]
        if bold is not None:
            bold = bold[list(columns)]
    if raw_cells:
        cells = [[str(v) for v in df[c].tolist()] for c in df.columns]
    else:
        cells = []
        for col in df.columns:
            values = df[col].tolist()
            f = column_formatter(col, values, digits)
            cells.append([_latex_cell(v, f(v)) for v in values])
    if bold is not None:
        b = bold.to_numpy(dtype=bool)
        cells = [[rf"\textbf{{{v}}}" if (v and b[i, j]) else v for i, v in enumerate(col)]
                 for j, col in enumerate(cells)]
    # a default (unnamed 0..n-1) index carries no information: the first column leads instead
    show_index = not (isinstance(df.index, pd.RangeIndex) and df.index.name is None)
    if not show_index and df.shape[1] > 1:
        idx = cells[0]
        index_name = latex_header(df.columns[0])
        df = df.iloc[:, 1:]
        cells = cells[1:]
    else:
        idx = [latex_escape(i) for i in _index_labels(df.index)]
        index_name = latex_escape(_index_name(df.index))
    headers = [latex_header(c) for c in df.columns]
    index_width = max([_visible_length(x) for x in [index_name, *idx]] or [0])
    widths = [max([_visible_length(x) for x in [h, *col]]) for h, col in zip(headers, cells)]
    fit = _font_size([index_width, *widths])
    if fit is None:  # long headers: stack their words
        stacked = [_stacked(h, str(c)) for h, c in zip(headers, df.columns)]
        headers = [h for h, _ in stacked]
        widths = [max([w] + [_visible_length(x) for x in col])
                  for (_, w), col in zip(stacked, cells)]
        fit = _font_size([index_width, *widths])
    # still too wide: split the columns over several tabulars (each repeats the index)
    chunks: list[list[int]] = [list(range(len(headers)))]
    if fit is None:
        size_cmd, pt = _SIZES[3]
        fit = (size_cmd, True)
        chunks = []
        cur: list[int] = []
        for j, w in enumerate(widths):
            if cur and _table_width([index_width, *[widths[k] for k in cur], w], pt, 3.0) > _TEXT_WIDTH:
                chunks.append(cur)
                cur = []
            cur.append(j)
        chunks.append(cur)
    size, tight = fit
    cap = caption if caption is not None else "Table"
    lab = label if label is not None else f"tab:{slug(cap)}"
    if len(idx) * len(chunks) > LONGTABLE_ROWS:
        tex = _longtable(idx, index_name, headers, cells, chunks, latex_escape(cap), lab,
                         size, tight)
        warn_unsupported(tex)
        return tex
    lines = [r"\begin{table}[htbp]", r"\centering"]
    if size:
        lines.append(size)
    if tight:
        lines.append(r"\setlength{\tabcolsep}{3pt}")
    lines.append(rf"\caption{{{latex_escape(cap)}}}")
    lines.append(rf"\label{{{lab}}}")
    for k, chunk in enumerate(chunks):
        if k:
            lines.append(r"\par\medskip")
        lines += [rf"\begin{{tabular}}{{l{'r' * len(chunk)}}}", r"\toprule"]
        lines.append(" & ".join([index_name, *[headers[j] for j in chunk]]) + r" \\")
        lines.append(r"\midrule")
        for i, name in enumerate(idx):
            lines.append(" & ".join([name] + [cells[j][i] for j in chunk]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
    lines.append(r"\end{table}")
    tex = "\n".join(lines)
    warn_unsupported(tex)
    return tex


def _longtable(idx: list[str], index_name: str, headers: list[str], cells: list[list[str]],
               chunks: list[list[int]], cap: str, lab: str, size: str, tight: bool) -> str:
    r"""The ``longtable`` form of :func:`frame_to_latex` (a table too long for a page): one
    longtable per chunk of columns, the later ones numbered as the first, "(continued)"."""
    lines: list[str] = []
    grouped = bool(size or tight)
    if grouped:  # the size and column separation end with the table
        lines.append(r"\begingroup")
        if size:
            lines.append(size)
        if tight:
            lines.append(r"\setlength{\tabcolsep}{3pt}")
    for k, chunk in enumerate(chunks):
        n_cols = len(chunk) + 1
        header = [r"\toprule", " & ".join([index_name, *[headers[j] for j in chunk]]) + r" \\",
                  r"\midrule"]
        if k:  # the same table number as the first part
            lines.append(r"\addtocounter{table}{-1}")
        lines.append(rf"\begin{{longtable}}{{l{'r' * len(chunk)}}}")
        if k == 0:
            lines.append(rf"\caption{{{cap}}}\label{{{lab}}}\\")
        else:
            lines.append(rf"\caption[]{{{cap} (continued)}}\\")
        lines += header + [r"\endfirsthead"]
        lines += [rf"\caption[]{{{cap} (continued)}}\\"] + header + [r"\endhead"]
        lines += [r"\midrule",
                  rf"\multicolumn{{{n_cols}}}{{r}}{{\emph{{continued on the next page}}}} \\",
                  r"\endfoot", r"\bottomrule", r"\endlastfoot"]
        for i, name in enumerate(idx):
            lines.append(" & ".join([name] + [cells[j][i] for j in chunk]) + r" \\")
        lines.append(r"\end{longtable}")
    if grouped:
        lines.append(r"\endgroup")
    return "\n".join(lines)


_SPECIAL = P_COLUMNS | POWER_COLUMNS  # numeric columns formatted as the text summary does


def _html_cell(v: object, digits: int) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if bool(v) else ""
    return format_number(v, digits)


def frame_to_html(df: pd.DataFrame, *, title: str | None = None, digits: int = 4) -> str:
    """Render a DataFrame as an escaped HTML table (numbers formatted, never rounded in place;
    booleans as ``yes``/blank), in a box that scrolls sideways when the table is wide."""
    digits = check_digits(digits)
    parts = []
    if title:
        parts.append(f"<h4>{html.escape(title)}</h4>")
    parts.append('<div class="irm-table-wrap" style="overflow-x:auto;max-width:100%">')
    parts.append('<table class="irm-table"><thead><tr>')
    parts.append(f"<th>{html.escape(_index_name(df.index))}</th>")
    parts += [f"<th>{html.escape(str(c))}</th>" for c in df.columns]
    parts.append("</tr></thead><tbody>")
    labels = _index_labels(df.index)
    # the cells of the text summary (p-values below 2.2e-16 as "< 2.2e-16", not 0; a power
    # that rounds to 1 as "> 0.9999"), booleans as yes / blank
    columns = [
        format_column(c, list(df.iloc[:, j]), digits) if str(c) in _SPECIAL
        else [_html_cell(v, digits) for v in df.iloc[:, j]]
        for j, c in enumerate(df.columns)
    ]
    for i, name in enumerate(labels):
        cells = "".join(f"<td>{html.escape(col[i])}</td>" for col in columns)
        parts.append(f"<tr><th>{html.escape(name)}</th>{cells}</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def frame_to_text(df: pd.DataFrame, digits: int = 4) -> str:
    """Plain-text rendering with formatted numbers: pandas' ``to_string`` layout, drawn by
    :func:`irmodels._format.text_grid` when the table is plain (one unnamed index level, string
    column names, printable ASCII) so that commands printing without pandas match it."""
    out = _formatted(df, check_digits(digits))
    cols = [out.iloc[:, j].tolist() for j in range(out.shape[1])]
    names = list(out.columns)
    if (out.shape[0] and out.shape[1] and not isinstance(out.columns, pd.MultiIndex)
            and out.columns.name is None and out.index.name is None
            and all(isinstance(n, str) and _plain(n) and n == n.strip() for n in names)
            and all(_plain(t) and t and t == t.strip() for t in out.index)
            and all(isinstance(c, str) and _plain(c) for col in cols for c in col)):
        return text_grid(list(out.index), names, cols)
    return out.to_string()


def _plain(text: str) -> bool:
    """Printable ASCII: the text that :func:`text_grid` is tested to lay out as pandas does."""
    return text.isascii() and text.isprintable()
