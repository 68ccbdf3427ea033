"""The variance-component report and ``irmodels report`` (CLI)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pandas as pd
import pytest

import irmodels as irm
from irmodels._display import format_number
from irmodels._section import figure_to_data_uri
from irmodels.analysis import build_report
from irmodels.cli import main
from irmodels.errors import DataFormatError, DesignError
from irmodels.reporting import Report, Section, assemble_report
from irmodels.reporting.gtheory_section import gstudy_section
from irmodels.reporting.plots import tukey_means_plot, variance_components_plot


def _adhoc8(shared_data) -> pd.DataFrame:
    if importlib.util.find_spec("irmodels.data.datasets") is not None:
        return irm.datasets.load("adhoc8", "AP")  # reads IRM_DATA_MIRROR (tests/conftest.py)
    wide = pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv")
    return irm.from_wide(wide, measure="AP", collection="adhoc8")


@pytest.fixture(scope="module")
def adhoc8(shared_data) -> pd.DataFrame:
    return _adhoc8(shared_data)


@pytest.fixture(scope="module")
def report(adhoc8) -> Report:
    return build_report(adhoc8, model="MD1", measure="AP")


def test_report_holds_the_model_results(report):
    assert report.anova.df_resid == 6272
    assert report.tukey is not None and report.components is not None
    # R (tests/reference/tukey.json): 3,423 significant pairs, top group of 7
    assert report.tukey.n_significant == 3423
    assert report.tukey.top_group[:3] == ["run95", "run83", "run51"]
    assert list(report.components.index) == ["topic", "system", "Residual"]
    assert set(report.figures) == {"variance_components", "tukey_means", "dstudy", "residuals"}
    assert report.gstudy is not None and report.gstudy.n_topics == 50
    assert report.diagnostics is not None and report.diagnostics.interaction_in_residual
    assert all(png.startswith(b"\x89PNG") for png in report.figures.values())


def test_html_is_self_contained_and_shows_the_numbers(report):
    page = report.to_html()
    table = report.anova.table
    for term in ("topic", "system", "Residual"):
        assert f"<td>{format_number(table.loc[term, 'SS'])}</td>" in page
        assert f"<td>{format_number(table.loc[term, 'MS'])}</td>" in page
    assert f"<td>{format_number(table.loc['system', 'F'])}</td>" in page
    assert f"<td>{format_number(table.loc['system', 'omega2_partial'])}</td>" in page
    for share in report.components["share"].to_numpy():
        assert f"<td>{format_number(share)}</td>" in page
    assert ", ".join(report.tukey.top_group) in page
    assert "<strong>3423</strong> significant" in page
    assert format_number(report.tukey.critical_value) in page
    # variance components, Tukey, D-study curves, residual diagnostics
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,', page)) == 4
    assert "<th>power</th>" not in page  # post-hoc observed power restates p
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from outside
    assert "<style>" in page and "score ~ topic + system" in page
    for lib in ("numpy", "scipy", "pandas", "irmodels"):
        assert f"<th>{lib}</th>" in page


def test_markdown_latex_and_save(report, tmp_path):
    md = report.to_markdown()
    assert "| system | " in md and "![Variance components](figures/variance_components.png)" in md
    tables = report.latex_tables()
    assert set(tables) == {"anova", "variance_components", "tukey", "means", "gstudy",
                           "diagnostics"}
    assert r"\toprule" in tables["anova"] and r"Pr(>F)" in tables["anova"]
    written = report.save(tmp_path / "out", latex=True)
    names = sorted(p.relative_to(tmp_path / "out").as_posix() for p in written)
    assert names == ["figures/dstudy.png", "figures/residuals.png", "figures/tukey_means.png",
                     "figures/variance_components.png", "report.html", "report.md", "tables.tex"]
    md_text = (tmp_path / "out" / "report.md").read_text()
    for name in ("dstudy", "residuals", "tukey_means", "variance_components"):
        assert f"(figures/{name}.png)" in md_text
    with pytest.raises(DataFormatError, match="unknown report format"):
        report.save(tmp_path / "x", formats=("pdf",))  # type: ignore[arg-type]


def test_options_are_keyword_only(report, tmp_path):
    """Issue 26 item 5: options after ``*`` (nothing passed them positionally)."""
    from irmodels.reporting.plots import short_labels

    with pytest.raises(TypeError, match="positional argument"):
        report.save(tmp_path / "y", ("html",))  # type: ignore[misc]
    assert not (tmp_path / "y").exists()
    with pytest.raises(TypeError, match="positional argument"):
        short_labels(["a" * 30], 12)  # type: ignore[misc]
    assert short_labels(["a" * 30], limit=12) == ["aaaaa\u2026aaaaaa"]


def test_extra_sections_are_rendered_and_escaped(adhoc8, monkeypatch):
    import pickle

    from irmodels.reporting import report as report_module

    drawn = []  # each figure is drawn when first read, once
    real = report_module.figure_to_png
    monkeypatch.setattr(report_module, "figure_to_png",
                        lambda fig, **kw: drawn.append(fig) or real(fig, **kw))
    small = irm.filter_systems(adhoc8, top_k=6)
    custom = Section(
        title="Shards <study>",
        html="<p>tau = 0.93</p>",
        markdown="tau = **0.93**",
        latex=r"\begin{tabular}{l}tau\end{tabular}",
    )
    table_section = Section.from_table("G-study", pd.DataFrame({"phi": [0.5]}, index=["sys"]))
    rep = build_report(small, sections=[custom, table_section], title="A & B")
    assert "(figures/residuals.png)" in rep.to_markdown() and "anova" in rep.latex_tables()
    assert drawn == [] and sorted(rep.figures) == [
        "dstudy", "residuals", "tukey_means", "variance_components"]  # Markdown, LaTeX: none
    page = rep.to_html()
    assert len(drawn) == 4 and rep.to_html() == page and len(drawn) == 4  # kept
    copy = pickle.loads(pickle.dumps(rep.figures))
    assert type(copy) is dict and copy == dict(rep.figures) and len(drawn) == 4
    with pytest.raises(KeyError):
        rep.figures["nope"]
    assert "<h2>Shards &lt;study&gt;</h2>" in page and "<p>tau = 0.93</p>" in page
    assert "<title>A &amp; B</title>" in page and "<td>0.5000</td>" in page
    md = rep.to_markdown()  # Markdown passes raw HTML through: names and titles are escaped
    assert "## Shards &lt;study&gt;" in md and "tau = **0.93**" in md and "# A &amp; B" in md
    assert rep.latex_tables()["section_1"].startswith(r"\begin{tabular}")
    # the page embeds the D-study and residual figures assemble_report drew (not drawn again),
    # and they are the sections' own figures drawn afresh, byte for byte
    for name, fresh in (("dstudy", gstudy_section(rep.gstudy, alpha=rep.alpha)),
                        ("residuals", rep.diagnostics.to_section())):
        assert figure_to_data_uri(rep.figures[name]) in page and fresh.html in page
    with pytest.raises(DataFormatError, match="Section"):
        build_report(small, sections=["not a section"])  # type: ignore[list-item]


def test_measure_selection_errors(adhoc8):
    two = pd.concat([adhoc8, adhoc8.assign(measure="P@10")], ignore_index=True)
    two = irm.frame(two)
    with pytest.raises(DesignError, match="measure="):
        build_report(two)
    with pytest.raises(DataFormatError, match="not in the data"):
        build_report(two, measure="nDCG")
    rep = build_report(irm.filter_systems(two, top_k=5), measure="P@10")
    assert "P@10" in rep.title


def test_model_without_system_factor_and_unbalanced_data(adhoc8):
    small = irm.filter_systems(adhoc8, top_k=4)
    unbalanced = small.iloc[1:].reset_index(drop=True)
    rep = build_report(unbalanced)
    assert rep.components is None and any("balanced" in n for n in rep.notes)
    assert "not available" in rep.to_html()


def test_plots_return_figures(report):
    fig = variance_components_plot(report.components, title="vc")
    assert fig.axes[0].get_title() == "vc"
    fig2 = tukey_means_plot(report.tukey, kind="anova")
    assert fig2.axes[0].get_ylabel() == "mean (anova interval)"
    fig3 = tukey_means_plot(report.tukey, measure="AP")
    texts = [t.get_text() for t in fig3.axes[0].texts]
    # 129 systems: no tick labels, the five best and five worst are named
    assert texts[0].startswith("best") and "run95" in texts[0] and texts[1].startswith("worst")
    assert fig3.axes[0].get_ylabel() == "mean AP (Tukey interval)"


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_report_on_a_wide_matrix(shared_data, tmp_path, capsys):
    out = tmp_path / "rep"
    rc = main(["report", str(shared_data / "ir-scores" / "adhoc3_ap.csv"), "--measure", "AP",
               "--out", str(out), "--latex", "--title", "TREC-3"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "pairs significant" in text and "wrote" in text
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 4
    assert (out / "tables.tex").exists() and (out / "figures" / "tukey_means.png").exists()


def test_cli_long_frame_and_trec_eval_directory(tmp_path, capsys, rng):
    wide = pd.DataFrame(rng.random((6, 4)), columns=["a", "b", "c", "d"])
    long = irm.from_wide(wide, measure="AP")
    irm.write_frame(long, tmp_path / "scores.csv")
    assert main(["report", str(tmp_path / "scores.csv"), "--out", str(tmp_path / "r1")]) == 0
    runs = tmp_path / "runs"
    runs.mkdir()
    for s in "abc":
        lines = [f"map\t{t}\t{v:.4f}" for t, v in zip(range(1, 6), rng.random(5))]
        lines += [f"runid\tall\t{s}", "map\tall\t0.5"]
        (runs / f"{s}.txt").write_text("\n".join(lines) + "\n")
    assert main(["report", str(runs), "--out", str(tmp_path / "r2"), "--alpha", "0.1"]) == 0
    assert "map" in (tmp_path / "r2" / "report.md").read_text()


def test_cli_error_exits_2_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irmodels", "report", "no-such-file.csv"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )
    assert proc.returncode == 2
    assert "irmodels: error: no such file: no-such-file.csv" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["report"], "no data to report on"),
        (["report", "x.csv", "--demo"], "not both"),
        (["report", "--demo", "--alpha", "2"], "--alpha"),
    ],
)
def test_cli_usage_errors(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_demo(tmp_path, capsys, monkeypatch):
    if importlib.util.find_spec("irmodels.data.collection") is None:
        pytest.skip("the demo collection (irmodels.data.collection) is not available yet")
    from irmodels.data import collection

    real = collection.generate
    calls = []

    def tiny(*args, **kwargs):  # the default TREC-8-like preset takes seconds; wiring is the same
        calls.append(kwargs)
        return real(preset="tiny", seed=kwargs.get("seed", 0))

    monkeypatch.setattr(collection, "generate", tiny)
    assert main(["report", "--demo", "--out", str(tmp_path / "demo")]) == 0
    assert calls == [{"seed": 0}]
    page = (tmp_path / "demo" / "report.html").read_text()
    # variance components, Tukey, D-study, residuals, and the shard study's MD1/MD6 intervals
    assert "Demo collection" in page and page.count("data:image/png;base64,") == 5
    assert "Shard study" in page and "MD6" in page and "Conclusions" in page
    assert "pairs significant" in capsys.readouterr().out


def test_report_on_a_shard_design_md6(reference_dir):
    import json

    case = json.loads((reference_dir / "tukey.json").read_text())["shards_md4"]
    data = irm.frame(pd.DataFrame({k: case[k] for k in ("topic", "system", "shard", "score")}))
    with pytest.warns(irm.NegativeVarianceWarning):
        rep = build_report(data, model="MD6")
    assert rep.data_info.loc["shard levels", "value"] == 3
    assert list(rep.components.index) == [
        "topic", "system", "shard", "topic:system", "topic:shard", "system:shard", "Residual"
    ]
    assert rep.tukey.df_error == rep.anova.df_resid == 40
    assert any("negative variance" in n for n in rep.notes)
    md = rep.to_markdown()
    assert "negative variance estimate(s) for topic:shard, system:shard" in md
    assert "- partial omega squared" in md


def test_no_horizontal_overflow_at_1280px_in_chromium(report, tmp_path):
    """A wide table scrolls inside the page: no element (a table included; its cells scroll
    inside it) reaches past the viewport."""
    import shutil
    import tempfile

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed")
    wide = pd.DataFrame([[0.123456] * 40], columns=[f"a_long_column_name_{i}" for i in range(40)])
    rep = assemble_report(report.anova, tukey=report.tukey, components=report.components,
                          sections=[Section.from_table("Wide", wide)])
    probe = (
        "<script>var c=document.documentElement.clientWidth,bad=[];"
        "document.querySelectorAll('body *').forEach(function(e){"
        "var inTable=e.parentElement&&e.parentElement.closest('table');"
        "if(!inTable&&e.getBoundingClientRect().right>c+1)bad.push(e.tagName)});"
        "document.body.setAttribute('data-overflow',"
        "document.documentElement.scrollWidth+'/'+c+'/'+bad.join(','));</script></body>"
    )
    def overflow(html_text: str, name: str) -> str:
        page = tmp_path / name
        page.write_text(html_text.replace("</body>", probe), encoding="utf-8")
        with tempfile.TemporaryDirectory() as profile:
            proc = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", "--window-size=1280,4000",
                 "--dump-dom", page.as_uri()],
                capture_output=True, text=True, timeout=120, check=False,
            )
        m = re.search(r'data-overflow="(\d+)/(\d+)/([^"]*)"', proc.stdout)
        assert m, proc.stderr[-500:]
        assert 1200 <= int(m.group(2)) <= 1280  # the viewport's width
        return m.group(3)

    page = rep.to_html()
    assert overflow(page, "page.html") == ""
    # the check can fail: without the scrolling rule the wide table leaves the viewport
    rule = "display: block; max-width: 100%; overflow-x: auto;"
    assert rule in page
    assert "TABLE" in overflow(page.replace(rule, "").replace("overflow-wrap: anywhere;", ""),
                               "control.html")


def test_cli_report_with_several_measures_adds_the_comparison_table(tmp_path, capsys):
    demo = irm.collection.generate(preset="tiny", seed=0)
    scores = irm.evaluate(demo.runs, demo.qrels, ["AP", "nDCG@10"])
    irm.write_frame(scores, tmp_path / "scores.csv")
    assert main(["report", str(tmp_path / "scores.csv"), "--measure", "AP",
                 "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Comparison table</h2>" in page and "nDCG@10" in page
    assert "comparison table of the 10 best systems on 2 measures" in capsys.readouterr().err


def test_shard_data_default_to_md6_and_its_g_study(reference_dir, tmp_path, capsys):
    """On data with shards the report fits MD6 (as irmodels anova does) and its G-study is the
    G-study of the data; a named model that pools interactions gets a note instead of a
    G-study whose residual holds them (E rho^2 0.96 against 0.81 in the probe)."""
    data = irm.frame(pd.read_csv(reference_dir / "gtheory_shards.csv"))
    rep = build_report(data, diagnostics=False)
    direct = irm.gstudy(data)
    assert str(rep.anova.spec) == str(irm.anova("MD6", data).spec)
    pd.testing.assert_frame_equal(rep.gstudy.components, direct.components, atol=1e-12)
    text = rep.to_markdown()
    assert "No intervals: the exact ones (Feldt" in text and "two-sided (Feldt" not in text
    md1 = build_report(data, model="MD1", diagnostics=False)
    assert md1.gstudy is None
    assert "G-study not reported: the fitted model has no shard, topic:system" in md1.to_markdown()
    path = tmp_path / "shards.csv"
    data.to_csv(path, index=False)
    assert main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    assert "shard + topic:system" in capsys.readouterr().out  # MD6's terms in the summary line
