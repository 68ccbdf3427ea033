"""What a reader of the report sees: names with LaTeX or matplotlib specials, and small values.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels._display import format_number, frame_to_latex, latex_escape
from irmodels.reporting.plots import tukey_means_plot


def _wide(names) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame(rng.uniform(size=(12, len(names))) + np.arange(len(names)) * 0.05,
                        columns=names)


@pytest.mark.parametrize("name", ["$a^$", "run$1$x"])
def test_dollar_names_are_drawn_as_written(name) -> None:
    # "$a^$" was a matplotlib parse error (an internal error of `irmodels report`), "run$1$x"
    # was drawn as math (the dollars vanished)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", irm.from_wide(_wide([name, "b", "c"])))
    fig = tukey_means_plot(fit.tukey("system"))
    fig.canvas.draw()  # the parse error came at drawing time
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert name.replace("$", r"\$") in shown


def test_report_with_a_dollar_name_builds(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = irm.build_report(irm.from_wide(_wide(["$a^$", "b", "c"])))
    assert "$a^$" in report.to_html()  # the HTML keeps the name as text


def test_small_values_keep_two_significant_digits() -> None:
    # a topic variance of 0.000370 was shown as 0.0004, 0.000149 as 0.0001
    assert [format_number(v) for v in (0.000370, 0.000149, 0.0037, 0.5, 0.123456)] == [
        "0.00037", "0.00015", "0.0037", "0.5000", "0.1235"]


def test_double_quote_prints_as_a_straight_quote(tmp_path: Path) -> None:
    assert latex_escape('q"uo') == r"q{\ttfamily\char34}uo"
    if shutil.which("pdflatex") is None or shutil.which("pdftotext") is None:
        pytest.skip("pdflatex/pdftotext not installed")
    table = frame_to_latex(pd.DataFrame({"mean": [0.5]}, index=['q"uo']))
    tex = tmp_path / "t.tex"
    tex.write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + table
                   + "\n\\end{document}\n")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                   cwd=tmp_path, check=True, capture_output=True)
    text = subprocess.run(["pdftotext", "t.pdf", "-"], cwd=tmp_path, check=True,
                          capture_output=True, text=True).stdout
    assert 'q"uo' in text
