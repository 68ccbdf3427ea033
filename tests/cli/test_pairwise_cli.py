"""``irmodels pairwise``: output, --out file, and clean error exits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main


@pytest.fixture
def wide_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    w = pd.DataFrame(rng.beta(2, 5, size=(25, 4)), columns=["r1", "r2", "r3", "r4"])
    w["r1"] += 0.2
    path = tmp_path / "ap.csv"
    w.to_csv(path, index=False)
    return path


def test_pairwise_wide_matrix_with_out(wide_csv: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "pairs.csv"
    assert main(["pairwise", str(wide_csv), "--test", "t", "--adjust", "holm", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    got = pd.read_csv(out, dtype={"a": str, "b": str})
    expected = irm.pairwise(irm.read_matrix(wide_csv), "t", adjust="holm")
    assert list(got.columns) == list(expected.columns)
    np.testing.assert_allclose(got["p_adj"], expected["p_adj"], rtol=1e-12)
    n_sig = int(expected["reject"].sum())
    assert f"{n_sig} of 6 pairs significant" in text
    assert "r1 vs r2" in text and "wrote 6 pairs" in text


def test_pairwise_long_frame_and_pairs(tmp_path: Path, capsys) -> None:
    f = irm.frame(pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "data"
                              / "pairwise_small.csv"))
    path = tmp_path / "long.csv"
    f.to_csv(path, index=False)
    assert main(["pairwise", str(path), "--test", "randomization", "--pairs", "s1:s3,s2:s5",
                 "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "of 2 pairs significant" in text and "s2 vs s5" in text


def test_pairwise_errors_exit_2_without_traceback(tmp_path: Path, capsys) -> None:
    f = irm.frame(pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "data"
                              / "pairwise_small.csv"))
    sharded = pd.concat([f.assign(shard="1"), f.assign(shard="2")], ignore_index=True)
    path = tmp_path / "sharded.csv"
    sharded.to_csv(path, index=False)
    assert main(["pairwise", str(path)]) == 1
    err = capsys.readouterr().err
    assert "irmodels: error:" in err and "Average them first" in err
    assert "Traceback" not in err and "add --average" in err
    assert main(["pairwise", str(path), "--average", "--test", "sign"]) == 0
    assert "of 10 pairs significant" in capsys.readouterr().out
    assert main(["pairwise", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["pairwise", str(path), "--pairs", "s1-s2"])
    assert exc.value.code == 2
