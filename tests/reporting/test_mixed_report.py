"""irm.report() and to_latex() of random-slope fits: the section's tables, notes (singular
fit) and caterpillar plot; the LaTeX compiles with pdflatex."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest

import irmodels as irm

REF = Path(__file__).resolve().parents[1] / "reference" / "data" / "lme4"
IR = "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)"
SINGULAR = "score ~ system + (1 + shard_c | topic) + (0 + shard_c | system)"


@pytest.fixture(scope="module")
def irslopes():
    return pd.read_csv(REF / "irslopes.csv", dtype={"topic": str, "system": str, "shard": str})


@pytest.fixture(scope="module")
def fit(irslopes):
    return irm.mixed(IR, irslopes)


@pytest.fixture(scope="module")
def singular(irslopes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return irm.mixed(SINGULAR, irslopes)


def test_random_effects_table_is_flat(fit):
    table = dict(fit._display_tables())["Random effects"]
    assert list(table.columns) == ["effect", "variance", "sd"]
    assert list(table.index) == ["topic", "topic", "topic:system", "Residual"]
    assert list(table["effect"]) == ["(Intercept)", "shardB", "(Intercept)", ""]
    vc = fit.variance_components()
    assert table["variance"].tolist() == vc["variance"].tolist()
    text = fit.summary()
    assert "('topic'" not in text and "Random effects" in text
    assert "Correlations of random effects" in text


def test_report_section(fit, singular):
    page = irm.report(fit, singular, title="Random slopes")
    s1, s2 = page.sections
    assert s1.title.startswith("Linear mixed model fit by REML")
    assert IR.replace("(1 | topic:system)", "(1|topic:system)") in s1.title
    for part in ("Random effects", "Correlations of random effects", "Fixed effects"):
        assert part in s1.html and f"**{part}**" in s1.markdown
    assert s1.html.count("<img") == 1 and "Conditional modes (BLUPs) of topic" in s1.html
    assert 'class="note"' not in s1.html
    # the singular fit says so, in every format
    assert "singular: system: shard_c" in s2.title
    note = "singular fit: the variance of system: shard_c is estimated at zero"  # its warning
    assert note in s2.html and note in s2.markdown
    assert 'class="note"' in s2.html
    html = page.to_html()
    assert html.count("<h2>") >= 2 and note in html
    tables = page.latex_tables()
    assert {"section_1", "section_2"} <= set(tables)
    assert "Residual," not in tables["section_1"]  # the flat table: no empty effect after a comma
    no_plot = fit.to_section(plot=False)
    assert "<img" not in no_plot.html and no_plot.latex == s1.latex


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_compiles(fit, singular, tmp_path):
    body = "\n\n".join([fit.to_latex(caption="Random slopes on an IR design"),
                        singular.to_latex(), irm.report(fit).latex_tables()["section_1"]])
    doc = ("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
           "\\begin{document}\n" + body + "\n\\end{document}\n")
    (tmp_path / "slopes.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                          "slopes.tex"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "slopes.pdf").stat().st_size > 1000
    assert "Overfull \\hbox" not in run.stdout
