"""Dunnett's many-to-one comparisons against R (tests/reference/dunnett.R -> dunnett.json:
emmeans trt.vs.ctrl with adjust = "mvt", multcomp::glht Dunnett, mvtnorm at abseps 1e-5)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError, UnbalancedDesignWarning
from irmodels.inference.dunnett import DUNNETT_COLUMNS, DunnettResult, dunnett, pmvt_max

P_TOL = 1e-4  # the brief's mvt integration error; measured: below 2e-6 (quadrature) / 2e-5 (QMC)
ALT = {0: "two-sided", 1: "greater", -1: "less"}


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "dunnett.json").read_text())


def _fit(r, reference_dir):
    data = pd.read_csv(reference_dir / "data" / r["file"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnbalancedDesignWarning)
        return irm.anova(r["formula"], data)


@pytest.mark.parametrize("case", ["balanced", "balanced_greater", "balanced_less", "md1_missing",
                                  "shards_md3"])
def test_anova_dunnett_equals_r(ref, reference_dir, case):
    r = ref[case]
    fit = _fit(r, reference_dir)
    res = fit.dunnett(r["control"], alternative=ALT[r["side"]])
    t = res.table
    assert list(t.columns) == list(DUNNETT_COLUMNS)
    assert [f"{lv} - {r['control']}" for lv in t["level"]] == r["contrast"]
    np.testing.assert_allclose(t["diff"], r["estimate"], atol=1e-10)
    np.testing.assert_allclose(t["se"], r["SE"], rtol=1e-9)
    np.testing.assert_allclose(t["statistic"], r["t_ratio"], rtol=1e-9)
    assert res.df == r["df"][0]
    np.testing.assert_allclose(res.correlation.to_numpy(), np.array(r["corr"]), atol=1e-10)
    np.testing.assert_allclose(t["p_adj"], r["p_precise"], atol=P_TOL)
    np.testing.assert_allclose(t["p_adj"], r["p_emmeans"], atol=2e-3)  # emmeans' abseps 1e-3
    assert float(res.critical_value) == pytest.approx(r["critical"], abs=2e-4)
    assert (t["reject"] == (t["p_adj"] < 0.05)).all()
    if "glht" in r:
        g = r["glht"]
        np.testing.assert_allclose(t["diff"], g["estimate"], atol=1e-10)
        np.testing.assert_allclose(t["p_adj"], g["p"], atol=P_TOL)
        np.testing.assert_allclose(float(res.critical_value), abs(g["calpha"]), atol=2e-4)
        if r["side"] >= 0:
            np.testing.assert_allclose(t["lower"], g["lower"], atol=1e-5)
        if r["side"] <= 0:
            np.testing.assert_allclose(t["upper"], g["upper"], atol=1e-5)


def test_intervals_and_sides(ref, reference_dir):
    r = ref["balanced_greater"]
    res = _fit(r, reference_dir).dunnett("s1", alternative="greater")
    assert np.isinf(res.table["upper"]).all()
    np.testing.assert_allclose(res.table["lower"],
                               res.table["diff"] - res.critical_value * res.table["se"], atol=1e-14)
    assert "one-sided" in res.summary() and isinstance(res, DunnettResult)
    assert res.method.startswith("quadrature")


def test_mixed_dunnett_per_contrast_df(ref, reference_dir):
    r = ref["mixed"]
    data = pd.read_csv(reference_dir / "data" / r["file"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed(r["formula"], data)
    res = fit.dunnett(r["control"])
    t = res.table
    np.testing.assert_allclose(t["diff"], r["estimate"], atol=1e-7)
    np.testing.assert_allclose(t["se"], r["SE"], rtol=1e-5)
    np.testing.assert_allclose(t["df"], r["df"], rtol=1e-4)
    # emmeans truncates each df to an integer for the multivariate t; with those df the
    # kernel reproduces R's probabilities to the integration error
    same = dunnett(res.means, fit.marginal_means_cov("system").to_numpy(), control="s1",
                   df=np.floor(np.asarray(r["df"])))
    np.testing.assert_allclose(same.table["p_adj"], r["p_precise"], atol=P_TOL)
    np.testing.assert_allclose(t["p_adj"], r["p_precise"], atol=5e-3)
    low = fit.dunnett(r["control"], df="min")
    assert np.ndim(low.df) == 0 and low.df == pytest.approx(min(t["df"]))


def test_control_errors_and_bad_input(reference_dir):
    fit = irm.anova("score ~ topic + system + shard",
                    pd.read_csv(reference_dir / "data" / "lsm_balanced.csv"))
    with pytest.raises(DesignError, match=r"control level 'S1' is not a level of system .*s1, s2"):
        fit.dunnett("S1")
    with pytest.raises(ArgumentError, match="alternative"):
        fit.dunnett("s1", alternative="bigger")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="alpha"):
        fit.dunnett("s1", alpha=1.5)
    with pytest.raises(DesignError, match="no factor"):
        fit.dunnett("s1", factor="run")
    with pytest.raises(DataFormatError, match="2 x 2"):
        dunnett(pd.Series({"a": 1.0, "b": 2.0}), np.eye(3), control="a", df=10)


def test_pmvt_max_against_closed_forms():
    # independent contrasts (zero correlation): product of univariate probabilities
    r = np.eye(4)
    got = pmvt_max([1.0, 2.0], r, np.inf)
    want = (1 - 2 * np.array([0.15865525393145707, 0.022750131948179195])) ** 4
    np.testing.assert_allclose(got, want, atol=1e-9)
    # one comparison: the t distribution
    from scipy import stats

    np.testing.assert_allclose(pmvt_max([2.0], np.eye(1), 7), 1 - 2 * stats.t.sf(2.0, 7),
                               atol=1e-14)
    # a general correlation (not product form) goes through the QMC path and agrees with
    # the product-form quadrature when it happens to be of product form
    lam = np.array([0.3, 0.5, 0.7, 0.6])
    c = np.outer(lam, lam)
    np.fill_diagonal(c, 1.0)
    from irmodels.stats.dunnett import _prob_general

    np.testing.assert_allclose(_prob_general(np.array([2.2]), c, 15, "two-sided"),
                               pmvt_max([2.2], c, 15), atol=3e-5)


def test_cli_dunnett(reference_dir, capsys):
    from irmodels.cli import main

    path = str(reference_dir / "data" / "lsm_balanced.csv")
    rc = main(["anova", path, "--formula", "score ~ topic + system + shard", "--dunnett", "s1"])
    out = capsys.readouterr().out
    assert rc == 0 and "Dunnett's comparisons with control 's1'" in out and "s5 - s1" in out
    rc = main(["anova", path, "--formula", "score ~ topic + system + shard", "--dunnett", "zz"])
    captured = capsys.readouterr()
    assert rc == 2 and "--dunnett: zz not in DATA, which has 5 runs" in captured.err


def test_normal_general_correlation_is_reproducible():
    """df = inf with a correlation that is not of product form goes through the quasi-Monte Carlo
    integration: two equal calls give the same bits (it was unseeded and differed by 4e-7)."""

    r = np.full((5, 5), 0.3)
    np.fill_diagonal(r, 1.0)
    r[0, 1] = r[1, 0] = 0.7
    a = pmvt_max([2.0, 2.3], r, np.inf)
    b = pmvt_max([2.0, 2.3], r, np.inf)
    assert np.array_equal(a, b)
    assert 0.85 < a[1] < 0.95  # P[max |Z_i| <= 2.3] of five correlated normals
