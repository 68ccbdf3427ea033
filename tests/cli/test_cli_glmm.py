"""``irmodels mixed --family`` and ``irmodels anova --family``: the GLM(M) options, the Tukey
output on both scales (``--scale``) and the refusals (one line, no traceback, the exit status
of their kind)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main

SYSTEMS = ["run1", "run10", "run100", "run101", "run102", "run103"]


@pytest.fixture(scope="module")
def p10(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TREC-8 P@10 of six runs, a long frame (P@10 as read: proportions of 10)."""
    d = irm.read_matrix(shared_data / "ir-scores" / "adhoc8_p10.csv", measure="P@10")
    d = d[d["system"].isin(SYSTEMS)]
    path = tmp_path_factory.mktemp("glmm") / "p10.csv"
    d.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def ap(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = irm.read_matrix(shared_data / "ir-scores" / "adhoc8_ap.csv", measure="AP")
    d = d[d["system"].isin(SYSTEMS)]
    path = tmp_path_factory.mktemp("glmm") / "ap.csv"
    d.to_csv(path, index=False)
    return path


def _frame(path: Path) -> pd.DataFrame:
    from irmodels.cli._common import load_data

    return load_data(str(path), keep_columns=True)


def _value(out: str, name: str) -> float:
    m = re.search(rf"{name} = (-?[0-9.]+)", out)
    assert m is not None, out[:400]
    return float(m.group(1))


def test_mixed_binomial_p10_with_response_scale_tukey(p10, capsys):
    code = main(["mixed", str(p10), "--formula", "score * 10 ~ system + (1|topic)",
                 "--family", "binomial", "--trials", "10", "--tukey", "--scale", "response",
                 "--digits", "6"])
    out = capsys.readouterr().out
    assert code == 0
    fit = irm.mixed("score * 10 ~ system + (1|topic)", _frame(p10), family="binomial",
                    trials=10)
    assert "family: binomial (logit)" in out and "Laplace approximation" in out
    assert _value(out, "logLik") == pytest.approx(fit.loglik, abs=5e-5)
    assert "Variance components (latent scale)" in out
    hsd = fit.tukey("system", scale="response")
    assert "odds ratios" in out and f"{hsd.n_significant} significant" in out
    row = next(line for line in out.splitlines() if line.startswith("run10-run100 "))
    ratio = float(row.split()[7])  # diff q p_adj lower upper reject ratio
    want = hsd.pairs.set_index(["a", "b"]).loc[("run10", "run100"), "ratio"]
    assert ratio == pytest.approx(want, rel=1e-5)
    assert 1.0 < want < 2.0  # run10 retrieves more relevant documents than run100 on TREC-8


def test_mixed_link_scale_tukey_and_nagq(p10, capsys):
    code = main(["mixed", str(p10), "--formula", "score * 10 ~ system + (1|topic)",
                 "--family", "binomial", "--trials", "10", "--nagq", "9", "--tukey"])
    out = capsys.readouterr().out
    assert code == 0 and "nAGQ = 9" in out
    fit = irm.mixed("score * 10 ~ system + (1|topic)", _frame(p10), family="binomial",
                    trials=10, nagq=9)
    assert _value(out, "logLik") == pytest.approx(fit.loglik, abs=5e-5)
    assert "ratio" not in out  # the link scale: differences of log odds only
    assert f"Q = {fit.tukey().critical_value:.4g}" in out


def test_mixed_proportions_refused_with_the_way_out(p10, capsys):
    code = main(["mixed", str(p10), "--formula", "score ~ system + (1|topic)",
                 "--family", "binomial", "--trials", "10"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "whole numbers" in err and "--formula 'score * 10 ~ ...' with --trials 10" in err


def test_mixed_beta_zero_rule_and_squeeze(ap, capsys):
    code = main(["mixed", str(ap), "--formula", "score ~ system + (1|topic)", "--family", "beta"])
    err = capsys.readouterr().err
    assert code == 1 and "strictly between 0 and 1" in err and "pass --squeeze" in err
    assert "squeeze=True" not in err
    code = main(["mixed", str(ap), "--formula", "score ~ system + (1|topic)", "--family", "beta",
                 "--squeeze"])
    out = capsys.readouterr().out
    assert code == 0
    fit = irm.mixed("score ~ system + (1|topic)", _frame(ap), family="beta", squeeze=True)
    assert _value(out, "phi") == pytest.approx(fit.phi, abs=5e-5)
    assert 5 < fit.phi < 100


def test_mixed_glmm_latex(p10, capsys):
    code = main(["mixed", str(p10), "--formula", "score * 10 ~ system + (1|topic)",
                 "--family", "binomial", "--trials", "10", "--tukey", "--latex"])
    out = capsys.readouterr().out
    assert code == 0 and out.count(r"\begin{table}") >= 3 and "Traceback" not in out


@pytest.mark.parametrize("argv, status, words", [
    (["--family", "beta", "--squeeze", "--method", "ML"], 2, "Drop --method"),
    (["--family", "binomial", "--trials", "0"], 2, "--trials takes a whole number >= 1"),
    (["--family", "binomial", "--trials", "10", "--link", "logt"], 2, "logit"),
    (["--family", "binomial", "--trials", "nosuchcolumn"], None, "nosuchcolumn"),
    (["--family", "binomial", "--trials", "10", "--nagq", "5", "--formula",
      "score * 10 ~ (1|system) + (1|topic)"], None, "nagq"),
])
def test_mixed_refusals(p10, capsys, argv, status, words):
    base = ["mixed", str(p10), "--formula", "score * 10 ~ system + (1|topic)"]
    if "--formula" in argv:
        i = argv.index("--formula")
        base[3] = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    try:
        code = main(base + argv)
    except SystemExit as exc:  # argparse: exit 2
        code = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err and words in err
    assert code in ((1, 2) if status is None else (status,))


def test_anova_glm_deviance_table_and_response_tukey(p10, capsys):
    code = main(["anova", str(p10), "--formula", "score * 10 ~ topic + system",
                 "--family", "binomial", "--trials", "10", "--tukey", "--scale", "response"])
    out = capsys.readouterr().out
    assert code == 0 and "Generalised linear model (binomial, logit link)" in out
    assert "Analysis of deviance" in out
    fit = irm.anova("score * 10 ~ topic + system", _frame(p10), family="binomial", trials=10)
    dev = fit.anova()
    row = next(line for line in out.splitlines() if line.startswith("system "))
    assert f"{dev.loc['system'].iloc[1]:.4g}" in row or f"{dev.loc['system'].iloc[0]:.4g}" in row
    hsd = fit.tukey("system", scale="response")
    assert f"{hsd.n_significant} significant" in out and "odds ratios" in out


def test_anova_gaussian_tukey_unchanged_by_scale(p10, capsys):
    assert main(["anova", str(p10), "--tukey"]) == 0
    plain = capsys.readouterr().out
    fit = irm.anova("MD1", _frame(p10))
    hsd = fit.tukey()
    assert f"Q = {hsd.critical_value:.4g}" in plain
    np.testing.assert_equal(hsd.n_pairs, 15)
    assert main(["anova", str(p10), "--tukey", "--scale", "response"]) == 0
    assert capsys.readouterr().out.split("Tukey HSD")[1] == plain.split("Tukey HSD")[1]


def test_anova_glm_options_need_a_family(p10, capsys):
    code = main(["anova", str(p10), "--trials", "10"])
    err = capsys.readouterr().err
    assert code == 2 and "--trials 10 belong to a generalised linear model" in err
    assert "--family binomial or poisson" in err and "Traceback" not in err


def test_mixed_poisson_offset_against_glmer(capsys, tmp_path):
    """The command's Poisson fit with --offset is glmer's (tests/reference/glmer.json): logLik
    as printed and the intercept. The rows of each (topic, system) differ by depth: a long
    frame tells them apart by a shard column."""
    import json

    ref = Path(__file__).resolve().parents[1] / "reference"
    r = json.loads((ref / "glmer.json").read_text())["poisson_offset"]
    d = pd.read_csv(ref / "data" / "glmm" / "poisson_depth.csv").rename(columns={"depth": "shard"})
    path = tmp_path / "depth.csv"
    d.to_csv(path, index=False)
    code = main(["mixed", str(path), "--score", "rel", "--formula", "rel ~ system + (1|topic)",
                 "--family", "poisson", "--offset", "log_depth", "--digits", "8"])
    out = capsys.readouterr().out
    assert code == 0 and "family: poisson (log)" in out
    assert _value(out, "logLik") == pytest.approx(r["logLik"], abs=1e-4)
    first = next(line for line in out.splitlines() if line.startswith("(Intercept)"))
    fixef = r["fixef"]
    want = fixef["(Intercept)"] if isinstance(fixef, dict) else fixef[0]
    assert float(first.split()[1]) == pytest.approx(want, abs=1e-5)


def test_mixed_trials_column_equals_trials_number(p10, tmp_path, capsys):
    d = _frame(p10).assign(n=10)
    path = tmp_path / "p10n.csv"
    d.to_csv(path, index=False)
    base = ["mixed", "--formula", "score * 10 ~ system + (1|topic)", "--family", "binomial"]
    assert main(base[:1] + [str(path)] + base[1:] + ["--trials", "n"]) == 0
    by_column = capsys.readouterr().out
    assert main(base[:1] + [str(p10)] + base[1:] + ["--trials", "10"]) == 0
    by_number = capsys.readouterr().out
    assert _value(by_column, "logLik") == _value(by_number, "logLik")
    assert by_column.split("Fixed effects")[1] == by_number.split("Fixed effects")[1]
