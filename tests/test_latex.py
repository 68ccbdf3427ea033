"""Publication-grade LaTeX: escaping, math headers, one format per column, fitting the page."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_result_face import OVERFULL_TOLERANCE_PT, compile_latex, overfull  # tests/ is on sys.path

import irmodels as irm
from irmodels._display import (
    column_formatter,
    frame_to_html,
    frame_to_latex,
    latex_escape,
    latex_header,
)
from irmodels._render import _TEXT_WIDTH

PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")


def _outside_math(tex: str) -> str:
    return re.sub(r"\$[^$]*\$", "", tex)


def test_escape_every_special() -> None:
    raw = r"a_b & 50% $x$ #1 {y} ~z ^w \v <p> |q|"
    esc = latex_escape(raw)
    assert esc == (r"a\_b \& 50\% \$x\$ \#1 \{y\} \textasciitilde{}z \textasciicircum{}w "
                   r"\textbackslash{}v \textless{}p\textgreater{} \textbar{}q\textbar{}")
    # a bare < > | in text prints as the wrong glyph in the default font: none is left
    assert not re.search(r"[<>|]", _outside_math(esc))


def test_math_headers() -> None:
    assert latex_header("Pr(>F)") == r"$\Pr(>F)$"
    assert latex_header("eta2_partial") == r"$\eta^2_p$"
    assert latex_header("omega2_partial") == r"$\omega^2_p$"
    assert latex_header("F") == "$F$" and latex_header("p") == "$p$"
    assert latex_header("p_adj") == r"$p_{\mathrm{adj}}$"
    assert latex_header("my_col") == r"my\_col"


def test_one_format_per_column() -> None:
    f = column_formatter("MS", [0.111, 0.00078415, 2.5])
    out = [f(v) for v in [0.111, 0.00078415, 2.5]]
    assert out == ["0.111000", "0.000784", "2.500000"]
    assert len({len(x.split(".")[1]) for x in out}) == 1  # same number of decimals
    f = column_formatter("df", [4.0, 40.0, float("nan")])
    assert [f(v) for v in [4.0, 40.0, float("nan")]] == ["4", "40", ""]
    f = column_formatter("p", [0.04567, 1e-12, 1.0])
    assert [f(v) for v in [0.04567, 1e-12, 1.0]] == ["0.0457", "<0.0001", "1.0000"]
    f = column_formatter("SS", [1.5e7 + 0.25, 2.25e6])
    assert [f(v) for v in [1.5e7 + 0.25, 2.25e6]] == ["1.500e+07", "2.250e+06"]
    f = column_formatter("SS", [1.5e7, 2.25e6])  # whole numbers stay whole
    assert [f(v) for v in [1.5e7, 2.25e6]] == ["15000000", "2250000"]
    f = column_formatter("reject", [True, False, np.bool_(True)])
    assert [f(v) for v in [True, False, np.bool_(True)]] == ["yes", "", "yes"]
    f = column_formatter("value", [3, "run_1", 0.5])
    assert [f(v) for v in [3, "run_1", 0.5]] == ["3", "run_1", "0.5000"]


def test_anova_table_latex() -> None:
    fit = irm.anova("MD1", irm.datasets.load("adhoc3", "AP"))
    tex = fit.to_latex(caption="TREC-3 & AP", label="tab:md1")
    assert r"\caption{TREC-3 \& AP}" in tex and r"\label{tab:md1}" in tex
    assert r"$\Pr(>F)$" in tex and r"$\omega^2_p$" in tex and r"$\eta^2_p$" in tex
    assert "True" not in tex and "False" not in tex and "nan" not in tex
    assert tex.index(r"\caption") < tex.index(r"\begin{tabular}")
    # rows: every numeric column has one number of decimals
    rows = [r for r in tex.splitlines() if r.endswith(r"\\") and not r.startswith(" &")][1:]
    cells = [[c.strip().rstrip("\\").strip() for c in r.split("&")[1:]] for r in rows]
    for j in range(len(cells[0])):
        decimals = {len(c.split(".")[1]) if "." in c else 0 for c in
                    (row[j] for row in cells) if c and "<" not in c and "e+" not in c}
        assert len(decimals) <= 1, (j, [row[j] for row in cells])
    # columns: a choice of columns
    short = fit.to_latex(columns=["SS", "df", "F", "Pr(>F)"])
    header = next(r for r in short.splitlines() if r.startswith(" &"))
    assert header == r" & SS & df & $F$ & $\Pr(>F)$ \\"
    with pytest.raises(irm.ArgumentError, match="omega"):
        fit.to_latex(columns=["omega"])


def test_labels_and_captions_default_per_table() -> None:
    hsd = irm.anova("MD1", irm.datasets.load("adhoc3", "AP")).tukey()
    tex = hsd.to_latex()
    labels = re.findall(r"\\label\{([^}]*)\}", tex)
    assert labels[0] == "tab:tukeyresult" and labels[1:] == [
        f"tab:tukeyresult-{i}" for i in range(2, len(labels) + 1)]
    assert tex.count(r"\caption{") == len(labels)
    tex = hsd.to_latex(label="tab:hsd", caption="HSD")
    assert r"\label{tab:hsd}" in tex and r"\label{tab:hsd-2}" in tex and r"\caption{HSD}" in tex


def test_bold_and_raw_cells() -> None:
    df = pd.DataFrame({"x": [0.5, 0.25]}, index=["a", "b"])
    tex = frame_to_latex(df, bold=pd.DataFrame({"x": [True, False]}, index=df.index))
    assert r"a & \textbf{0.5000} \\" in tex and r"b & 0.2500 \\" in tex
    raw = frame_to_latex(pd.DataFrame({"x": [r"$x^2$"]}, index=["a"]), raw_cells=True)
    assert r"a & $x^2$ \\" in raw


def test_html_booleans_and_scroll() -> None:
    page = frame_to_html(pd.DataFrame({"reject": [True, False]}, index=["a", "b"]))
    assert "<td>yes</td>" in page and "<td></td>" in page and "True" not in page
    assert "overflow-x:auto" in page


def _wide_frame(n_cols: int, rows: int = 6, seed: int = 0, long_names: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = [f"n_{'not_' if long_names else ''}significant_change_{i}" for i in range(n_cols)]
    df = pd.DataFrame(rng.normal(0, 1000, (rows, n_cols)), columns=names)
    df.index = pd.Index([f"system_{i}" for i in range(rows)], name="system")
    return df


@settings(max_examples=25, deadline=None)
@given(n_cols=st.integers(1, 30), long_names=st.booleans(), rows=st.integers(1, 5))
def test_every_tabular_is_estimated_to_fit(n_cols: int, long_names: bool, rows: int) -> None:
    """Whatever the number of columns, the tabulars are cut so that each is estimated to fit."""
    from irmodels._render import _table_width, _visible_length

    tex = frame_to_latex(_wide_frame(n_cols, rows, long_names=long_names))
    assert tex.count(r"\begin{table}") == 1
    n_tab = tex.count(r"\toprule")
    assert n_tab >= 1
    # every column appears exactly once over the tabulars
    header_lines = [line for line in tex.splitlines() if line.startswith("system &")]
    assert len(header_lines) == n_tab
    n_shown = sum(line.count("&") for line in header_lines)
    assert n_shown == n_cols
    size = 7.0 if r"\scriptsize" in tex else 8.0 if r"\footnotesize" in tex else 9.0 \
        if r"\small" in tex else 10.0
    sep = 3.0 if r"\tabcolsep}{3pt}" in tex else 6.0
    body = tex.split(r"\midrule")
    for k, line in enumerate(header_lines):
        cells = body[k + 1].split(r"\bottomrule")[0].strip().splitlines()
        widths = [max(_visible_length(r.split(" & ")[j].rstrip(" \\")) for r in cells)
                  for j in range(line.count("&") + 1)]
        assert _table_width(widths, size, sep) <= _TEXT_WIDTH * 1.3


@needs_pdflatex
@pytest.mark.parametrize("n_cols,long_names", [(3, False), (12, True), (30, False), (30, True)])
def test_wide_frames_compile_without_overfull_lines(n_cols: int, long_names: bool,
                                                    tmp_path: Path) -> None:
    tex = frame_to_latex(_wide_frame(n_cols, long_names=long_names), caption="A wide table")
    log = compile_latex(tex, tmp_path)
    assert not [w for w in overfull(log) if w > OVERFULL_TOLERANCE_PT]


@needs_pdflatex
def test_specials_compile(tmp_path: Path) -> None:
    df = pd.DataFrame({"Pr(>F)": [0.5, 1e-9], "a_b|c": [True, False], "50%": ["x&y", "#{}~^\\"]},
                      index=pd.Index(["<run_1>", "$run2"], name="sys_name"))
    tex = frame_to_latex(df, caption="Specials: 100% & <more> ~ $")
    assert r"\caption{Specials: 100\% \& \textless{}more\textgreater{} \textasciitilde{} \$}" in tex
    compile_latex(tex, tmp_path)
