"""``irmodels design``: sizing from a trial, from numbers and from data, and refusals."""

from __future__ import annotations

import math

import pytest
from scipy import stats

import irmodels as irm
from irmodels.cli import main


def test_sizing_from_numbers(capsys) -> None:
    assert main(["design", "--sigma", "0.1", "--n", "10", "--delta", "0.05"]) == 0
    out = capsys.readouterr().out
    su = 0.1 * math.sqrt(9 / stats.chi2.ppf(0.05, 9))
    n = irm.power.paired_t(delta=0.05, sigma=su, power=0.8).n_topics
    assert f"upper 95% bound {su:.4g}: {n} topics" in out
    assert "n_topics_point              34" in out


def test_sizing_from_a_trial_frame_and_sequential(capsys, tmp_path) -> None:
    ap = irm.datasets.load("adhoc8", "AP")
    trial = ap[ap["topic"].isin(ap["topic"].cat.categories[:15])]
    path = tmp_path / "trial.csv"
    trial.to_csv(path, index=False)
    w = irm.to_wide(trial)
    a, b = str(w.columns[0]), str(w.columns[3])
    assert main(["design", "--data", str(path), "--pair", f"{a},{b}", "--delta", "0.05",
                 "--power", "0.9", "--sequential", "10,5,20", "--n-sim", "500"]) == 0
    out = capsys.readouterr().out
    exp = irm.design.size_from_trial(trial, pair=(a, b), delta=0.05, power=0.9)
    assert f": {exp.n_topics} topics" in out
    assert "Sequential design: 3 looks up to 20 topics" in out


@pytest.mark.parametrize("argv", [
    ["design", "--delta", "0.05"],
    ["design", "--sigma", "0.1", "--delta", "0.05"],
    ["design", "--sigma", "0.1", "--n", "1", "--delta", "0.05"],
    ["design", "--sigma", "0.1", "--n", "10", "--delta", "0.05", "--sequential", "10,5,4"],
    ["design", "--data", "adhoc8:AP", "--pair", "a,b,c", "--delta", "0.05"],
])
def test_refusals_are_usage_errors(argv, capsys) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    assert "error" in capsys.readouterr().err
