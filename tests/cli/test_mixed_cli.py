"""``irmodels mixed``: summary output and error exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from irmodels.cli import main

REF = Path(__file__).resolve().parents[1] / "reference"


def test_mixed_summary(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_data / "ir-scores" / "adhoc3_ap.csv"
    assert main(["mixed", str(path), "--formula", "score ~ (1|system) + (1|topic)"]) == 0
    out = capsys.readouterr().out
    assert "fit by REML (closed form)" in out
    assert "logLik = 1497.4764" in out
    assert "Variance components" in out and "Residual" in out


def test_mixed_heteroscedastic_ml(capsys: pytest.CaptureFixture[str]) -> None:
    path = REF / "data" / "mixed_hetero.csv"
    code = main(["mixed", str(path), "--formula", "score ~ system + (1|topic/system)",
                 "--residual", "topic:system", "--method", "ML", "--latex"])
    assert code == 0
    out = capsys.readouterr().out
    assert r"\begin{table}" in out and "SD ratio" in out


def test_mixed_error_exit(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_data / "ir-scores" / "adhoc3_ap.csv"
    assert main(["mixed", str(path), "--formula", "score ~ system + (1|system)"]) == 1
    err = capsys.readouterr().err
    assert "confounded with the fixed term system" in err and "Traceback" not in err
