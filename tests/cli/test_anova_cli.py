"""``irmodels anova`` through irmodels.cli.main."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm
from irmodels.cli import main


def test_wide_matrix_md1(shared_data: Path, capsys) -> None:
    rc = main(["anova", str(shared_data / "ir-scores" / "adhoc8_ap.csv"), "--model", "MD1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ANOVA: score ~ topic + system" in out and "Residual" in out
    line = next(line for line in out.splitlines() if line.startswith("system"))
    assert "128" in line and "60.03" in line  # SS_system of TREC-8 AP (R: 60.0298)
    # the p-value underflows to 0 in double precision: shown as R and the report show it
    assert "< 2.2e-16" in line and " 0 " not in line.split("34.46")[1][:12]


def test_text_p_values_below_machine_epsilon_as_r_shows_them() -> None:
    from irmodels._display import frame_to_text

    table = pd.DataFrame({"F": [251.9, 1.2, 3.0], "p": [0.0, 1e-20, 0.03],
                          "eta2": [0.0, 0.5, 0.2]}, index=["a", "b", "c"])
    lines = frame_to_text(table).splitlines()
    assert lines[1].split()[2:4] == ["<", "2.2e-16"] and lines[1].split()[-1] == "0"
    assert lines[2].split()[2:4] == ["<", "2.2e-16"]
    assert lines[3].split()[2] == "0.0300"


def test_long_frame_formula_latex_components(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(0)
    d = pd.MultiIndex.from_product([["t1", "t2", "t3"], ["a", "b"], ["k1", "k2"]],
                                   names=["topic", "system", "shard"]).to_frame(index=False)
    d["score"] = rng.uniform(size=len(d))
    path = tmp_path / "long.csv"
    irm.frame(d).to_csv(path, index=False)
    rc = main(["anova", str(path), "--formula", "score ~ topic * system", "--latex",
               "--components"])
    out = capsys.readouterr().out
    assert rc == 0
    assert r"\begin{tabular}" in out and "topic:system" in out and "Variance components" in out


def test_error_exits_2_without_traceback(shared_data: Path, capsys) -> None:
    rc = main(["anova", str(shared_data / "ir-scores" / "adhoc8_ap.csv"), "--formula",
               "score ~ topic * system"])
    err = capsys.readouterr().err
    assert rc == 1  # the data cannot support the model: a data error
    assert err.startswith("irmodels: error: topic:system needs replicates")
    assert "Traceback" not in err


def test_missing_file(capsys, tmp_path: Path) -> None:
    assert main(["anova", str(tmp_path / "nope.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
