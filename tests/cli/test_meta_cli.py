"""``irmodels meta``: the pooled fit of a CSV, column options, outputs, and clean refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irmodels.cli import main

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def fixture() -> dict:
    return json.loads((REFERENCE / "meta_analysis.json").read_text())


def _case(fixture: dict, data: str, method: str) -> dict:
    return next(c for c in fixture["cases"]
                if c["data"] == data and c["method"] == method and c["level"] == 0.95)


@pytest.mark.parametrize("method", ["REML", "DL", "FE"])
def test_trec_csv_against_metafor(fixture, method, tmp_path: Path, capsys) -> None:
    out = tmp_path / "studies.csv"
    assert main(["meta", str(REFERENCE / "meta_analysis_trec.csv"), "--method", method,
                 "--out", str(out), "--plot", str(tmp_path / "forest.png")]) == 0
    text = capsys.readouterr().out
    case = _case(fixture, "trec", method)
    assert f"k = 12: estimate = {case['estimate']:.4f}" in text
    got = pd.read_csv(out)
    assert got["label"].tolist() == fixture["data"]["trec"]["labels"]
    np.testing.assert_allclose(got["weight"], case["weight"], rtol=1e-8)
    assert (tmp_path / "forest.png").stat().st_size > 1000


def test_named_columns_se_and_latex(fixture, tmp_path: Path, capsys) -> None:
    d = fixture["data"]["bcg"]
    path = tmp_path / "bcg.csv"
    pd.DataFrame({"trial": d["labels"], "logrr": d["yi"], "s": np.sqrt(d["vi"])}).to_csv(
        path, index=False)
    assert main(["meta", str(path), "--estimate", "logrr", "--se", "s", "--label", "trial",
                 "--method", "DL"]) == 0
    text = capsys.readouterr().out
    case = _case(fixture, "bcg", "DL")
    assert f"estimate = {case['estimate']:.4f}" in text and "Aronson 1948" in text
    assert main(["meta", str(path), "--estimate", "logrr", "--se", "s", "--latex"]) == 0
    assert r"\begin{tabular}" in capsys.readouterr().out


@pytest.mark.parametrize(("rows", "extra", "status", "message"), [
    ("estimate,variance\n0.1,0.01\n0.2,0\n", [], 1, "zero or negative"),
    ("estimate,variance\n0.1,0.01\n0.2,\n", [], 1, "missing or infinite"),
    ("est,var\n0.1,0.01\n", [], 1, "needs a column 'estimate'"),
    ("estimate,variance\n0.1,0.01\n", [], 1, "use --method FE"),
    ("estimate,variance\n0.1,0.01\n0.2,0.02\n", ["--se", "nope"], 2, "no column 'nope'"),
    ("estimate,variance\n0.1,0.01\n0.2,0.02\n", ["--plot", "f.txt"], 2, "--plot"),
])
def test_refusals_exit_without_traceback(rows, extra, status, message, tmp_path: Path,
                                         capsys) -> None:
    path = tmp_path / "in.csv"
    path.write_text(rows)
    assert main(["meta", str(path), *extra]) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_single_study_fixed_effect(tmp_path: Path, capsys) -> None:
    path = tmp_path / "one.csv"
    path.write_text("estimate,variance\n0.25,0.04\n")
    assert main(["meta", str(path), "--method", "FE"]) == 0
    assert "k = 1: estimate = 0.25" in capsys.readouterr().out
