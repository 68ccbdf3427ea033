"""What goes into a paper: long LaTeX tables, non-Latin names, infinite F, power near 1, labels,
and the Tukey means plot with long system names."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels._display import LONGTABLE_ROWS, frame_to_latex, frame_to_text, pdflatex_unsupported
from irmodels._format import format_column
from irmodels.errors import DataQualityWarning

PDFLATEX = shutil.which("pdflatex")
PDFTOTEXT = shutil.which("pdftotext")


def _wide(names: list[str], topics: int = 25, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = len(names)
    return pd.DataFrame(np.clip(rng.beta(2, 5, (topics, 1)) + np.linspace(0, 0.3, k)
                                + rng.normal(0, 0.08, (topics, k)), 0, 1), columns=names)


def _means(n: int) -> pd.DataFrame:
    df = pd.DataFrame({"mean": np.linspace(0.5, 0.1, n), "sd": np.linspace(0.2, 0.1, n)},
                      index=pd.Index([f"system_{i:03d}" for i in range(n)], name="system"))
    return df


def _compile(body: str, workdir: Path) -> tuple[str, str]:
    """pdflatex twice (longtable settles its widths); the log and the text of the PDF."""
    doc = workdir / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
                   "\\begin{document}\n" + body + "\n\\end{document}\n", encoding="utf-8")
    for _ in range(2):
        proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", doc.name],
                              cwd=workdir, capture_output=True, text=True, timeout=120,
                              check=False)
    log = (workdir / "doc.log").read_text(encoding="latin-1")
    assert proc.returncode == 0, log[-3000:]
    text = ""
    if PDFTOTEXT:
        text = subprocess.run([PDFTOTEXT, "doc.pdf", "-"], cwd=workdir, capture_output=True,
                              text=True, check=True).stdout
    return log, text


# ------------------------------------------------------------------ 1. long tables
def test_longtable_above_the_threshold_table_below() -> None:
    short = frame_to_latex(_means(LONGTABLE_ROWS), caption="Means", label="tab:m")
    assert short.startswith(r"\begin{table}") and "longtable" not in short
    long = frame_to_latex(_means(LONGTABLE_ROWS + 1), caption="Means", label="tab:m")
    assert r"\begin{table}" not in long and long.startswith(r"\begin{longtable}{lrr}")
    assert long.count(r"\begin{longtable}") == long.count(r"\end{longtable}") == 1
    # caption and label at the top, the header repeated under "(continued)", a foot
    first, rest = long.split(r"\endfirsthead")
    assert r"\caption{Means}\label{tab:m}\\" in first and "system & mean & SD" in first
    head, rest = rest.split(r"\endhead")
    assert r"\caption[]{Means (continued)}" in head and "system & mean & SD" in head
    assert r"\endfoot" in rest and r"\endlastfoot" in rest
    assert all(f"system\\_{i:03d} &" in long for i in range(LONGTABLE_ROWS + 1))
    assert long.count(r"\label{") == 1


def test_long_results_use_longtable() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", irm.from_wide(_wide([f"run{i}" for i in range(60)])))
    tex = fit.tukey().to_latex()
    assert tex.count(r"\begin{longtable}") == 1  # the means; the summary stays a float
    assert tex.count(r"\begin{table}") == 1


def test_report_tables_tex_names_longtable(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = irm.build_report(irm.from_wide(_wide([f"run{i}" for i in range(50)])))
        rep.save(tmp_path, formats=("html",), latex=True)
    tex = (tmp_path / "tables.tex").read_text(encoding="utf-8")
    assert r"\usepackage{longtable}" in tex.split(r"\begin")[0]  # the preamble note
    assert r"\begin{longtable}" in tex


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")
def test_129_rows_compile_and_every_row_is_printed(tmp_path: Path) -> None:
    names = [f"sys{i:03d}x" for i in range(129)]
    df = pd.DataFrame({"mean": np.linspace(0.5, 0.1, 129), "letters": ["abc"] * 129},
                      index=pd.Index(names, name="system"))
    log, text = _compile(frame_to_latex(df, caption="Means of 129 systems"), tmp_path)
    assert "Float too large" not in log
    if PDFTOTEXT:
        assert all(n in text for n in names)
        assert "(continued)" in text
    else:  # the pages: more than one
        pages = re.search(r"Output written on doc\.pdf \((\d+) page", log)
        assert pages is not None and int(pages.group(1)) > 1


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")
def test_long_and_wide_table_compiles(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(0, 1000, (45, 16)),
                      columns=[f"n_not_significant_change_{i}" for i in range(16)],
                      index=pd.Index([f"row{i}" for i in range(45)], name="system"))
    tex = frame_to_latex(df, caption="Long and wide")
    assert tex.count(r"\begin{longtable}") >= 2 and tex.startswith(r"\begingroup")
    log, text = _compile(tex + "\n\nSee Table~\\ref{tab:long-and-wide}.", tmp_path)
    assert "Float too large" not in log and "multiply defined" not in log
    if PDFTOTEXT:
        assert "Table 1: Long and wide (continued)" in text and "Table 2" not in text


# ------------------------------------------------------------------ 2. non-Latin names
def test_warns_about_characters_pdflatex_cannot_typeset() -> None:
    df = pd.DataFrame({"mean": [0.5, 0.4]}, index=["αβ-系统", "run2"])
    with pytest.warns(DataQualityWarning, match=r"'α' \(U\+03B1\).*xelatex or lualatex"):
        tex = frame_to_latex(df)
    assert "αβ-系统" in tex  # kept, not transliterated
    assert pdflatex_unsupported("Þórr") == "Þ"
    with pytest.warns(DataQualityWarning, match=r"T1"):
        frame_to_latex(pd.DataFrame({"mean": [0.5]}, index=["Þórr"]))


def test_no_warning_for_latin1_and_dashes() -> None:
    df = pd.DataFrame({"mean": [0.5, 0.4]}, index=["café–naïve", "run “2” — x…"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame_to_latex(df)


def test_one_warning_per_result_and_none_for_html_report() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", irm.from_wide(_wide(["αβ-系统", "run2", "run3"])))
        hsd = fit.tukey()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hsd.to_latex()
        hsd.to_section()  # LaTeX as a by-product of a page: quiet
    ours = [w for w in caught if issubclass(w.category, DataQualityWarning)]
    assert len(ours) == 1
    assert ours[0].filename == __file__  # points at the call


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")
def test_latin1_names_compile(tmp_path: Path) -> None:
    df = pd.DataFrame({"mean": [0.5, 0.4]}, index=["café–naïve", "run “2”…"])
    _compile(frame_to_latex(df), tmp_path)


# ------------------------------------------------------------------ 3. infinite F
def test_infinite_and_missing_cells() -> None:
    df = pd.DataFrame({"F": [np.inf, np.nan, 3.5], "value": [-np.inf, 1.0, np.nan]},
                      index=["topic", "system", "Residual"])
    tex = frame_to_latex(df)
    assert r"topic & $\infty$ & $-\infty$ \\" in tex
    assert r"system &  & 1 \\" in tex
    assert "inf" not in tex.replace(r"\infty", "") and "nan" not in tex
    text = frame_to_text(df)  # the summary: inf, and a blank for NaN
    assert "inf" in text and "nan" not in text.lower()


def test_identical_runs_print_infinity(tmp_path: Path) -> None:
    wide = pd.DataFrame({"a": [0.1, 0.5, 0.3, 0.7], "b": [0.1, 0.5, 0.3, 0.7]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", irm.from_wide(wide))
    tex = fit.to_latex()
    assert r"$\infty$" in tex and " inf " not in tex and "& inf" not in tex


# ------------------------------------------------------------------ 4. power near 1
def test_power_near_one_prints_alike_in_text_and_latex() -> None:
    table = pd.DataFrame({"power": [1.0, 0.9999997866, 0.81234, np.nan]},
                         index=["topic", "system", "shard", "Residual"])
    assert format_column("power", table["power"].tolist(), 4) == ["1", "> 0.9999", "0.8123", ""]
    tex = frame_to_latex(table)
    for row in (r"topic & 1 \\", r"system & $>$0.9999 \\", r"shard & 0.8123 \\"):
        assert row in tex
    assert "1.0000" not in tex and "1.0000" not in frame_to_text(table)


# ------------------------------------------------------------------ 6. labels
def test_every_to_latex_takes_a_label() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = irm.from_wide(_wide([f"run{i}" for i in range(4)], topics=10))
        fit = irm.anova("MD1", data)
    a = fit.to_latex(label="tab:anova-ap")
    b = fit.to_latex(label="tab:anova-ndcg")
    assert r"\label{tab:anova-ap}" in a and r"\label{tab:anova-ndcg}" in b
    assert r"\label{tab:vc}" in frame_to_latex(fit.variance_components(), label="tab:vc")


# ------------------------------------------------------------------ 5. the Tukey plot
def _save_quietly(fig, path: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(path, dpi=60)
    return [str(w.message) for w in caught]


def _tick_labels(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_xticklabels()]


def test_tukey_plot_with_long_names(tmp_path: Path) -> None:
    from irmodels.reporting.plots import MAX_LABEL, tukey_means_plot

    names = [f"{i:02d}-very_long_system_name_with_many_parts_{i:04d}" for i in range(40)]
    assert all(len(n) >= 45 for n in names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hsd = irm.anova("MD1", irm.from_wide(_wide(names))).tukey()
    fig = tukey_means_plot(hsd, measure="AP")
    assert _save_quietly(fig, tmp_path / "t.png") == []
    labels = _tick_labels(fig)
    assert len(labels) == 40 and len(set(labels)) == 40
    assert max(map(len, labels)) <= MAX_LABEL
    assert fig.axes[0].get_position().height > 0.3  # the plot area is not a strip
    # one 70-character name among short ones
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hsd = irm.anova("MD1", irm.from_wide(_wide(["x" * 70] + [f"run{i}" for i in range(9)]))
                        ).tukey()
    fig = tukey_means_plot(hsd)
    assert _save_quietly(fig, tmp_path / "u.png") == []
    assert max(map(len, _tick_labels(fig))) <= MAX_LABEL


def test_tukey_plot_keeps_trec_names() -> None:
    from irmodels.reporting.plots import tukey_means_plot

    names = [f"trec8.run.{i:02d}.automatic.t" for i in range(40)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hsd = irm.anova("MD1", irm.from_wide(_wide(names))).tukey()
    fig = tukey_means_plot(hsd)
    assert sorted(_tick_labels(fig)) == sorted(names)
    assert tuple(fig.get_size_inches()) == (9.0, 4.6)


def test_short_labels_unique_and_bounded() -> None:
    from irmodels.reporting.plots import short_labels

    rng = np.random.default_rng(3)
    for _ in range(300):
        limit = int(rng.integers(5, 31))
        names = sorted({"".join(rng.choice(list("ab_"), int(rng.integers(1, 60))))
                        for _ in range(int(rng.integers(1, 40)))})
        out = short_labels(names, limit=limit)
        assert len(set(out)) == len(out)
        assert all(len(s) <= limit for s in out)
        assert all(s == n for s, n in zip(out, names) if len(n) <= limit)


def test_variance_components_plot_long_names(tmp_path: Path) -> None:
    from irmodels.reporting.plots import MAX_LABEL, variance_components_plot

    vc = pd.DataFrame({"variance": [0.02, 0.005, 0.01, 0.001], "share": [0.5, 0.125, 0.25, 0.125]},
                      index=["topic", "system_with_a_very_long_component_name_here",
                             "topic:system:shard", "Residual"])
    fig = variance_components_plot(vc)
    assert _save_quietly(fig, tmp_path / "vc.png") == []
    assert max(map(len, _tick_labels(fig))) <= MAX_LABEL
