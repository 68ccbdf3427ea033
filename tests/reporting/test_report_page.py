"""irm.report(*results): a page assembled from any results through their to_section(), and
build_report taking a fit instead of refitting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.beta(2, 5, (20, 6)) + rng.uniform(0, .3, (20, 1))
                        + np.linspace(0, .2, 6), columns=[f"run{i}" for i in range(1, 7)])
    return irm.from_wide(wide, measure="AP")


@pytest.fixture(scope="module")
def fit():
    return irm.anova("MD1", _data())


def test_page_from_anova_tukey_and_meta_renders_every_section(fit, tmp_path) -> None:
    tk = fit.tukey()
    meta = irm.meta_analysis([0.03, 0.01, 0.05], [1e-4, 2e-4, 1.5e-4],
                             labels=["adhoc6", "adhoc_7", "web&2010"])
    page = irm.report(fit, tk, meta, title="Three results", notes=["a note"])
    assert isinstance(page, irm.reporting.Report) and page.anova is None
    assert repr(page) == "<Report 'Three results': 3 sections>"
    titles = [s.title for s in page.sections]
    assert titles == [r.to_section().title for r in (fit, tk, meta)]
    assert titles[1].startswith("Tukey HSD on system") and titles[2].startswith("Meta-analysis")
    html, md = page.to_html(), page.to_markdown()
    for t in titles:
        assert f"## {t}" in md
    assert html.count("<h2>") == 3 + 2  # three sections, Notes, Software
    assert "<h2>Conclusions" not in html and "## Analysis of variance" not in md
    # the sections' own tables: Tukey's critical value (4 significant digits), the
    # meta-analysis labels (escaped)
    assert tk.critical_value == pytest.approx(4.1135, abs=1e-4)
    assert "<th>critical value Q</th><td>4.114</td>" in html and "web&amp;2010" in html
    assert "- a note" in md and "## Software" in md
    assert set(page.latex_tables()) == {"section_1", "section_2", "section_3"}
    written = page.save(tmp_path, latex=True)
    assert sorted(p.name for p in written) == ["report.html", "report.md", "tables.tex"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == md


def test_page_takes_sections_and_refuses_what_renders_none(fit) -> None:
    sec = fit.tukey().to_section()
    assert irm.report(sec).sections == (sec,)
    with pytest.raises(ArgumentError, match="at least one result"):
        irm.report()
    with pytest.raises(ArgumentError, match="result 2 of report.. renders no section: a dict"):
        irm.report(fit, {"not": "a result"})


def test_build_report_takes_a_fit_instead_of_refitting(fit) -> None:
    by_fit = irm.build_report(fit, gstudy=False, diagnostics=False)
    by_kw = irm.build_report(fit.data, fit=fit, gstudy=False, diagnostics=False)
    refit = irm.build_report(_data(), gstudy=False, diagnostics=False)
    assert by_fit.anova is fit and by_kw.anova is fit and refit.anova is not fit
    pd.testing.assert_frame_equal(by_fit.anova.table, refit.anova.table)
    assert by_fit.tukey.n_significant == refit.tukey.n_significant == 3
    assert by_fit.conclusions() == refit.conclusions()
    with pytest.raises(ArgumentError, match="model= and measure= choose what to fit"):
        irm.build_report(fit, model="MD1")
    with pytest.raises(ArgumentError, match="fit must be a fitted model"):
        irm.build_report(fit.data, fit="MD1")


def test_build_report_refuses_a_fit_without_an_anova_table_and_report_takes_it(fit) -> None:
    # a mixed model or a GLM has no ANOVA table: build_report built a Report whose to_html,
    # to_markdown and latex_tables raised AttributeError; now it says so at once
    from irmodels.reporting.report import assemble_report

    data = fit.data
    mixed = irm.mixed("score ~ system + (1|topic)", data)
    glm = irm.anova("score ~ topic + system", data.assign(score=(data["score"] * 20).round()),
                    family="poisson")
    for other, name in ((mixed, "MixedResult"), (glm, "GlmResult")):
        with pytest.raises(ArgumentError, match=f"reports an irm.anova fit.*got a {name}.*irm.report"):
            irm.build_report(other)
        with pytest.raises(ArgumentError, match=f"got a {name}, which has no ANOVA table"):
            irm.build_report(data, fit=other)
        with pytest.raises(ArgumentError, match=f"got a {name}.*irm.report"):
            assemble_report(other)
        page = irm.report(other)
        assert [s.title for s in page.sections] == [other.to_section().title]
        assert "## " + other.to_section().title in page.to_markdown()
