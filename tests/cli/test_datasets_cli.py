"""``irmodels datasets`` through irmodels.cli.main (data from the IRM_DATA_MIRROR mirror)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path) -> None:
    def refuse(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setenv("IRM_DATA_MIRROR", str(shared_data / "ir-scores"))
    monkeypatch.setenv("IRM_CACHE_DIR", str(tmp_path / "cache"))


def test_list(capsys) -> None:
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["collection", "measure", "topics", "systems", "source", "licence",
                              "mirror_only"]
    assert len(out) == 1 + 51
    adhoc8 = [line.split() for line in out if line.split()[0] == "adhoc8"]
    assert [row[:4] for row in adhoc8] == [["adhoc8", "AP", "50", "129"],
                                           ["adhoc8", "P@10", "50", "129"],
                                           ["adhoc8", "RR", "50", "129"]]
    assert main(["datasets", "list", "--citations"]) == 0
    assert "Urbano" in capsys.readouterr().out


def test_load_to_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ap.csv"
    assert main(["datasets", "load", "adhoc8", "ap", "--out", str(out)]) == 0
    assert "50 topics x 129 systems, 6450 rows" in capsys.readouterr().err
    back = irm.read_frame(out)
    pd.testing.assert_frame_equal(back, irm.datasets.load("adhoc8", "AP"))
    pq = tmp_path / "p10.parquet"
    assert main(["datasets", "load", "web2010", "P@10", "-o", str(pq)]) == 0
    pd.testing.assert_frame_equal(irm.read_frame(pq), irm.datasets.load("web2010", "P@10"))
    wide = tmp_path / "wide.tsv"
    assert main(["datasets", "load", "robust2004", "p10", "--out", str(wide), "--wide"]) == 0
    text = wide.read_text().splitlines()
    assert text[0].startswith("topic\tsys1\tsys2") and text[1].startswith("301\t")
    assert len(text) == 1 + 249


def test_load_to_stdout(capsys) -> None:
    assert main(["datasets", "load", "robust2003"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "collection,measure,topic,system,score"
    assert lines[1].startswith("robust2003,unknown,1,sys1,")
    assert len(lines) == 1 + 100 * 78


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["datasets", "load", "adhoc9", "AP"], "unknown collection 'adhoc9' (did you mean"),
        (["datasets", "load", "adhoc8", "P20"], "has no measure 'P20' (did you mean 'P@10'?)"),
        (["datasets", "load", "adhoc8"], "several measures (AP, P@10, RR)"),
        (["datasets", "load", "adhoc8", "AP", "--out", "x.xlsx"], "cannot tell the format"),
        (["datasets", "load", "adhoc8", "AP", "--wide", "--out", "x.parquet"],
         "wide matrices are written as CSV or TSV"),
    ],
)
def test_errors_exit_2_without_traceback(argv, message, capsys) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("irmodels: error: ")
    assert message in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_offline_error_names_the_mirror_variable(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR")
    assert main(["datasets", "load", "adhoc8", "AP"]) == 3  # the environment: offline
    err = capsys.readouterr().err
    assert "could not download adhoc8 AP" in err and "Set IRM_DATA_MIRROR" in err
    assert "Traceback" not in err


def test_no_action_prints_help(capsys) -> None:
    assert main(["datasets"]) == 2
    assert "list" in capsys.readouterr().err
