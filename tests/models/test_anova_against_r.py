"""irm.anova against R: anova(lm()) (type I), car::Anova type 2 and 3 (contr.sum).

Fixture: tests/reference/anova.json, written by tests/reference/anova.R from the CSVs of
tests/reference/make_anova_data.py and the TREC-8 ad hoc AP matrix (shared data, read in place).
Tolerances: 1e-10 relative for SS, MS, F (closed forms and QR both reach ~1e-14; 1e-10 leaves
room for BLAS differences); p-values 1e-9 relative (scipy's and R's F tail agree to ~1e-12) with
an absolute floor of 1e-300 (R underflows to 0 below that); power 1e-7 (R's pnbeta series stops
at a relative error of 1e-9 or so).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import (
    DesignError,
    IRModelsWarning,
    NegativeVarianceWarning,
    UnbalancedDesignWarning,
)

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "anova.json").read_text())
BALANCED = {"anova_balanced2", "anova_balanced3", "adhoc8_ap"}
NON_HIERARCHICAL = {"score ~ shard + topic:system", "score ~ system + topic:system",
                    "score ~ topic + system + topic:system:shard"}

CASES = [
    pytest.param(case, table, id=f"{case['design']}|{case['formula']}|type{table['type']}")
    for case in FIXTURE["cases"]
    for table in case["tables"]
]


def load_design(name: str, shared_data: Path) -> pd.DataFrame:
    if name == "adhoc8_ap":
        wide = pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv")
        return irm.from_wide(wide)
    return irm.frame(pd.read_csv(REF / "data" / f"{name}.csv"))


@pytest.fixture(scope="module")
def designs(shared_data: Path) -> dict[str, pd.DataFrame]:
    return {name: load_design(name, shared_data) for name in {c["design"] for c in FIXTURE["cases"]}}


def fit(formula: str, data: pd.DataFrame, **kw) -> irm.models.anova.AnovaResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        return irm.anova(formula, data, **kw)


def same_terms(ours, theirs) -> bool:
    return [frozenset(t.split(":")) for t in ours] == [frozenset(t.split(":")) for t in theirs]


def check_table(res, ref: dict) -> None:
    tab = res.table
    assert tab.index[-1] == "Residual"
    # R spells a term by the order of the variables in the formula (system:topic)
    assert same_terms(tab.index[:-1], ref["terms"])
    tab = tab.rename(index=dict(zip(tab.index[:-1], ref["terms"])))
    terms = ref["terms"]
    np.testing.assert_allclose(tab.loc[terms, "SS"], ref["SS"], rtol=1e-10)
    np.testing.assert_array_equal(tab.loc[terms, "df"], ref["df"])
    np.testing.assert_allclose(tab.loc[terms, "F"], ref["F"], rtol=1e-10)
    np.testing.assert_allclose(tab.loc[terms, "p"], ref["p"], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(tab.loc["Residual", "SS"], ref["resid_SS"], rtol=1e-10)
    assert tab.loc["Residual", "df"] == ref["resid_df"]
    assert res.df_resid == ref["resid_df"]
    np.testing.assert_allclose(res.ms_error, ref["resid_SS"] / ref["resid_df"], rtol=1e-10)
    np.testing.assert_allclose(tab.loc[terms, "power"], ref["power"], rtol=1e-7, atol=1e-12)
    # effect sizes by hand from R's numbers
    ss = np.asarray(ref["SS"])
    df = np.asarray(ref["df"], dtype=float)
    f = np.asarray(ref["F"])
    sse = ref["resid_SS"]
    n = res.n_obs
    np.testing.assert_allclose(tab.loc[terms, "MS"], ss / df, rtol=1e-10)
    np.testing.assert_allclose(tab.loc[terms, "eta2"], ss / (ss.sum() + sse), rtol=1e-10)
    np.testing.assert_allclose(tab.loc[terms, "eta2_partial"], ss / (ss + sse), rtol=1e-10)
    np.testing.assert_allclose(tab.loc[terms, "cohen_f2"], ss / sse, rtol=1e-10)
    omega = df * (f - 1) / (df * (f - 1) + n)
    np.testing.assert_allclose(tab.loc[terms, "omega2_partial"], np.maximum(omega, 0), rtol=1e-9,
                               atol=1e-15)
    assert set(res.omega2_clipped) == {t for t, o in zip(terms, omega) if o < 0}
    assert tab.loc["Residual", ["F", "p", "eta2", "omega2_partial", "power"]].isna().all()


@pytest.mark.parametrize(("case", "ref"), CASES)
def test_table_matches_r(case: dict, ref: dict, designs: dict[str, pd.DataFrame]) -> None:
    data = designs[case["design"]]
    spec = irm.parse_formula(case["formula"])
    if case["formula"] in NON_HIERARCHICAL and ref["type"] != 1:
        with pytest.raises(DesignError, match="not hierarchical"):
            fit(spec, data, ss_type=ref["type"])
        return
    res = fit(spec, data, ss_type=ref["type"])
    assert res.n_obs == case["n_obs"]
    assert res.balanced == (case["design"] in BALANCED)
    if case["formula"] in NON_HIERARCHICAL:
        assert res.method == "lstsq-type1" and not res.hierarchical
    else:
        assert res.method == ("balanced" if res.balanced else f"lstsq-type{ref['type']}")
    check_table(res, ref)
    np.testing.assert_allclose(res.fitted()[:5], case["fitted_head"], rtol=1e-10)
    np.testing.assert_allclose(np.sqrt(res.ms_error), case["sigma"], rtol=1e-10)


@pytest.mark.parametrize(
    ("case", "ref"),
    [p for p in CASES if p.values[0]["design"] in BALANCED - {"adhoc8_ap"}
     and p.values[0]["formula"] not in NON_HIERARCHICAL],
)
def test_least_squares_path_matches_r_on_balanced(case: dict, ref: dict, designs) -> None:
    res = fit(case["formula"], designs[case["design"]], ss_type=ref["type"], method="lstsq")
    assert res.method == f"lstsq-type{ref['type']}"
    check_table(res, ref)


def test_unbalanced_warns_and_names_the_path(designs) -> None:
    with pytest.warns(UnbalancedDesignWarning, match="least squares with type II"):
        irm.anova("score ~ topic + system", designs["anova_missing_cells"])


def test_md1_on_trec8(designs) -> None:
    """TREC-8 ad hoc AP, 50 topics x 129 runs: MD1 equals R's aov to the last digits."""
    data = designs["adhoc8_ap"]
    res = irm.anova("MD1", data)
    ref = next(c for c in FIXTURE["cases"] if c["design"] == "adhoc8_ap")
    assert res.method == "balanced" and res.n_obs == 6450
    np.testing.assert_allclose(res.table["SS"], ref["aov_SS"], rtol=1e-12)
    check_table(res, ref["tables"][0])
    assert res.n_per_level("system") == 50 and res.n_per_level("topic") == 129
    means = res.marginal_means("system")
    wide = pd.read_csv(Path(irm.__file__).parents[2] / "shared" / "data" / "ir-scores" / "adhoc8_ap.csv")
    np.testing.assert_allclose(means.to_numpy(), wide.mean().to_numpy(), rtol=1e-13)
    # EMS by hand (docs/methods.md: "Variance components")
    ms = res.table["MS"]
    mse = res.ms_error
    vc = res.variance_components()
    np.testing.assert_allclose(vc.loc["system", "variance"], (ms["system"] - mse) / 50, rtol=1e-12)
    np.testing.assert_allclose(vc.loc["topic", "variance"], (ms["topic"] - mse) / 129, rtol=1e-12)
    np.testing.assert_allclose(vc.loc["Residual", "variance"], mse, rtol=1e-12)
    np.testing.assert_allclose(vc["share"].sum(), 1.0, rtol=1e-12)


def _md6_ref(formula: str) -> dict:
    return next(c for c in FIXTURE["cases"]
                if c["design"] == "anova_balanced3" and c["formula"] == formula)


def test_variance_components_md6_by_hand(designs) -> None:
    """Random-effects EMS on T=6, R=5, S=3, one row per cell, from R's mean squares."""
    formula = "score ~ topic + system + shard + topic:system + topic:shard + system:shard"
    ref = _md6_ref(formula)["tables"][0]
    ms = dict(zip(ref["terms"], np.asarray(ref["SS"]) / np.asarray(ref["df"])))
    mse = ref["resid_SS"] / ref["resid_df"]
    T, R, S = 6, 5, 3
    hand = {
        "topic:system": (ms["topic:system"] - mse) / S,
        "topic:shard": (ms["topic:shard"] - mse) / R,
        "system:shard": (ms["system:shard"] - mse) / T,
        "topic": (ms["topic"] - ms["topic:system"] - ms["topic:shard"] + mse) / (R * S),
        "system": (ms["system"] - ms["topic:system"] - ms["system:shard"] + mse) / (T * S),
        "shard": (ms["shard"] - ms["topic:shard"] - ms["system:shard"] + mse) / (T * R),
        "Residual": mse,
    }
    res = irm.anova(formula, designs["anova_balanced3"]) if all(v >= 0 for v in hand.values()) \
        else fit(formula, designs["anova_balanced3"])
    negative = [k for k, v in hand.items() if v < 0]
    if negative:
        with pytest.warns(NegativeVarianceWarning, match=negative[0]):
            vc = res.variance_components()
    else:
        vc = res.variance_components()
    expect = pd.Series({k: max(v, 0.0) for k, v in hand.items()})
    np.testing.assert_allclose(vc["variance"], expect[vc.index], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(vc["sd"], np.sqrt(expect[vc.index]), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(vc["share"], expect[vc.index] / expect.sum(), rtol=1e-10)
    assert list(vc.columns) == ["variance", "sd", "share"]


def test_variance_components_md3_pooled_shards(designs) -> None:
    """MD3 on sharded data: shard pools into the residual, 3 replicates per topic:system cell."""
    formula = "score ~ topic + system + topic:system"
    ref = _md6_ref(formula)["tables"][0]
    ms = dict(zip(ref["terms"], np.asarray(ref["SS"]) / np.asarray(ref["df"])))
    mse = ref["resid_SS"] / ref["resid_df"]
    hand = {
        "topic": (ms["topic"] - ms["topic:system"]) / 15,
        "system": (ms["system"] - ms["topic:system"]) / 18,
        "topic:system": (ms["topic:system"] - mse) / 3,
        "Residual": mse,
    }
    res = fit(formula, designs["anova_balanced3"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceWarning)
        vc = res.variance_components()
    expect = pd.Series({k: max(v, 0.0) for k, v in hand.items()})
    np.testing.assert_allclose(vc["variance"], expect[vc.index], rtol=1e-10, atol=1e-15)


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_fixture_is_reproducible_live(tmp_path: Path) -> None:
    """With R present, rerunning the R script gives the committed fixture (same numbers)."""
    proc = subprocess.run(
        ["Rscript", "anova.R", str(tmp_path / "anova.json")], cwd=REF, capture_output=True,
        text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    fresh = json.loads((tmp_path / "anova.json").read_text())
    assert fresh["cases"] == FIXTURE["cases"]
