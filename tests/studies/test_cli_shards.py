"""``irmodels shards``: tables, LaTeX, figure and report from a tiny demo; clean errors."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import IRModelsWarning


def test_demo_study_writes_tables(tmp_path, capsys) -> None:
    out = tmp_path / "study"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        code = main(["shards", "--demo", "--preset", "tiny", "--n-shards", "2,3", "--n-splits",
                     "2", "--models", "MD1,MD3,MD6", "--seed", "1", "--out", str(out),
                     "--no-progress"])
    assert code == 0
    captured = capsys.readouterr()
    assert "MD6 per number of shards" in captured.out
    assert "wrote runs.csv, summary.csv" in captured.err
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs.columns) == list(irm.studies.shard_study.RUN_COLUMNS)
    assert len(runs) == 1 + 2 * 2 * 2
    # the same numbers as the Python API with the same arguments
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        col = irm.collection.generate(preset="tiny", seed=1)
        study = irm.studies.shards(col, n_shards=[2, 3], n_splits=2, seed=1,
                                   models=["MD1", "MD3", "MD6"])
    pd.testing.assert_series_equal(runs["ci_width"], study.runs["ci_width"], rtol=1e-12)
    assert runs["n_significant"].tolist() == study.runs["n_significant"].tolist()
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert list(summary.index) == [2, 3]
    tex = (out / "tables.tex").read_text(encoding="utf-8")
    assert r"\label{tab:shards}" in tex and r"\toprule" in tex
    assert (out / "intervals.png").stat().st_size > 1000
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Shard study" in page and "MD6 per number of shards" in page


def test_runs_and_qrels_from_files(tmp_path, capsys) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        col = irm.collection.generate(preset="tiny", seed=2)
        col.write(tmp_path / "col")
        code = main(["shards", "--runs", str(tmp_path / "col" / "runs"), "--qrels",
                     str(tmp_path / "col" / "qrels.txt"), "--docids",
                     str(tmp_path / "col" / "docids.txt"), "--n-shards", "2", "--n-splits", "1",
                     "--models", "MD1,MD6", "--out", str(tmp_path / "o")])
    assert code == 0
    runs = pd.read_csv(tmp_path / "o" / "runs.csv")
    assert runs["model"].tolist() == ["MD1", "MD6"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--demo", "--preset", "tiny", "--n-shards", "1,3"], "integers >= 2"),
        (["--demo", "--preset", "tiny", "--undefined", "zero"], "--undefined 'zero'"),
        (["--demo", "--preset", "tiny", "--models", "MD9"], "unknown model 'MD9'"),
        (["--runs", "runs/"], "--runs needs --qrels"),
        (["--demo", "--preset", "tiny", "--backend", "threads"], "unknown backend 'threads'"),
    ],
)
def test_errors_exit_2_without_traceback(tmp_path, capsys, argv: list[str], message: str) -> None:
    code = main(["shards", *argv, "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("irmodels: error: ") and message in err
    assert "Traceback" not in err


def test_bad_shard_list_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["shards", "--demo", "--n-shards", "2,x"])
    assert info.value.code == 2
    assert "comma-separated integers" in capsys.readouterr().err
