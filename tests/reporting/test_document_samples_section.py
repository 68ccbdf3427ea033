"""The document-sample report section formats validate and compare_tests tables; the CLI report."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import DataFormatError, DataQualityWarning
from irmodels.studies import document_samples as ds
from irmodels.studies.document_samples_section import document_samples_section


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    coll = irm.collection.generate(preset="tiny", seed=1)
    v = ds.validate(coll.runs, coll.qrels, n_samples=100, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        res = ds.compare_tests(coll.runs, coll.qrels, n_samples=4, seed=2, mixed_models=False)
    # mixed-model columns made up (the section formats whatever compare_tests returned)
    rng = np.random.default_rng(5)
    res = res.assign(p_mixed=rng.uniform(0, 0.1, len(res)), p_mixed_hetero=[0.01, 0.2, 0.03, 0.5, 0.04, 0.9],
                     lrt_p=[0.001, 0.5, 0.01, 0.02, 0.3, 0.6])
    res.loc[0, "excluded_topics"] = "3"
    return v, res


def test_section_content(tables) -> None:
    v, res = tables
    s = document_samples_section(v, res, systems=["sys01", "sys02"])
    assert s.title == "Document samples"
    ok = v.loc[~v["degenerate"]]
    assert f"{ok['within_1sd'].mean():.1%} of observed values within 1 simulated SD" in s.markdown
    assert f"{(ok['sim_mean'] - ok['observed']).mean():.4f}" in s.markdown
    # 3 of 6 pairs have lrt_p < 0.05; one pair lost a topic
    assert "for 50.0% of the pairs" in s.markdown
    n_excl = int((res["excluded_topics"] != "").sum())
    assert n_excl >= 1 and f"{n_excl} pairs lost topics" in s.markdown
    agree = ds.agreement(res)
    assert set(agree) == {"p_t_means", "p_mixed", "p_mixed_hetero"}
    for test in agree:
        assert f"**{test} vs p_t_observed**" in s.markdown
    # tables: validation per run, shares, three agreement tables; images: 3
    assert s.html.count("<table") == 5
    assert s.html.count("data:image/png;base64") == 3
    assert s.latex.count(r"\begin{tabular}") == 5
    share = (res["p_mixed_hetero"] < 0.05).mean()
    assert f"{share:.4f}".rstrip("0") in s.markdown


def test_section_parts_and_errors(tables) -> None:
    v, res = tables
    only_v = document_samples_section(v, plot=False)
    assert "Validation" in only_v.markdown and "pairs of systems" not in only_v.markdown
    assert "<img" not in only_v.html
    only_c = document_samples_section(comparison=res, plot=False)
    assert "Validation" not in only_c.markdown and only_c.html.count("<table") == 4
    with pytest.raises(DataFormatError, match="needs a validation table"):
        document_samples_section()
    with pytest.raises(DataFormatError, match="lacks column"):
        document_samples_section(v.drop(columns="sim_mean"))
    with pytest.raises(DataFormatError, match="lacks column"):
        document_samples_section(comparison=res.drop(columns="lrt_p"))


def test_section_in_report(tables) -> None:
    v, res = tables
    coll = irm.collection.generate(preset="tiny", seed=1)
    obs = irm.evaluate(coll.runs, coll.qrels, measures=["AP"])
    r = irm.build_report(obs, sections=[document_samples_section(v, res, plot=False)])
    assert "Document samples" in r.to_html() and "Document samples" in r.to_markdown()


def test_cli_writes_report(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    assert main(["simulate", "documents", "--demo", "--preset", "tiny", "--n-samples", "4",
                 "--compare", "--validate", "--out", str(out)]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Document samples</h2>" in text and "<h2>Analysis of variance</h2>" in text
    assert text.count("data:image/png;base64") >= 5  # report's 2, section's 3
    v = pd.read_csv(out / "validation.csv")
    assert len(v) == 20
