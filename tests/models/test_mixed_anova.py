"""MixedResult.anova(type=3, ddf=...) against lmerTest's anova() (Kenward-Roger through
pbkrtest): tests/reference/mixed_anova.R -> mixed_anova.json."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, ModelError

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed_anova.json").read_text())


def _vec(x) -> list:
    return list(x) if isinstance(x, list) else [x]


def _fit(case: dict, method: str = "REML"):
    d = pd.read_csv(REF / case["file"], dtype=str)
    d["score"] = d["score"].astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(case["formula"], d, method=method)


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[c["formula"] for c in FIXTURE["cases"]])
@pytest.mark.parametrize(("ddf", "key"), [("satterthwaite", "satterthwaite"),
                                          ("kenward-roger", "kenward_roger")])
def test_anova_equals_lmertest(case: dict, ddf: str, key: str) -> None:
    ref = case[key]
    res = _fit(case).anova(type=3, ddf=ddf)
    t = res.table
    assert list(t.columns) == ["F", "num_df", "den_df", "p"]
    assert list(t.index) == _vec(ref["terms"])
    assert t["num_df"].tolist() == _vec(ref["num_df"])
    # measured: F within 4e-8, den_df within 8e-8 (Satterthwaite) and 5e-10 (Kenward-Roger)
    assert np.allclose(t["F"], _vec(ref["F"]), rtol=1e-6, atol=0)
    assert np.allclose(t["den_df"], _vec(ref["den_df"]), rtol=1e-6, atol=0)
    # p is tiny for some terms: its relative error is that of F times the slope (observed 9e-7)
    assert np.allclose(t["p"], _vec(ref["p"]), rtol=2e-6, atol=0)


def test_one_df_term_is_the_squared_t() -> None:
    case = FIXTURE["cases"][0]
    d = pd.read_csv(REF / case["file"], dtype=str)
    d["score"] = d["score"].astype(float)
    d = d[d["system"].isin(["s01", "s02"])]
    fit = irm.mixed("score ~ system + (1|topic)", d)
    row = fit.anova().table.loc["system"]
    coef = fit.fixed.iloc[1]
    assert row["num_df"] == 1
    assert row["F"] == pytest.approx(coef["t"] ** 2, rel=1e-12)
    assert row["den_df"] == pytest.approx(coef["df"], rel=1e-12)
    assert row["p"] == pytest.approx(coef["p"], rel=1e-10)


def test_anova_face_and_bad_input() -> None:
    case = FIXTURE["cases"][2]
    fit = _fit(case)
    res = fit.anova()
    assert res["p"].shape == (3,)  # indexes like its table
    assert res.to_frame().columns.tolist() == ["term", "F", "num_df", "den_df", "p"]
    assert "Type III F tests" in res.summary()
    # the mixed summary shows the F tests first and truncates the 32 coefficients
    text = fit.summary()
    assert text.index("F tests of fixed effects") < text.index("Variance components")
    assert "Fixed effects (first 10 of 32)" in text and "... 22 more (all in .fixed)" in text
    assert len(fit.fixed) == 32
    with pytest.raises(ModelError, match="type=3"):
        fit.anova(type=2)
    with pytest.raises(ModelError, match="ddf must be"):
        fit.anova(ddf="containment")  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="REML fits"):
        _fit(case, method="ML").anova(ddf="kenward-roger")
    with pytest.raises(ModelError, match="no fixed terms"):
        _fit({"file": case["file"], "formula": "score ~ (1|topic)"}).anova()


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 100.0), shift=st.floats(-5.0, 5.0))
def test_f_tests_are_affine_invariant(seed: int, scale: float, shift: float) -> None:
    """F, df and p of every term are unchanged when the scores are rescaled and shifted."""
    rng = np.random.default_rng(seed)
    T, S = 8, 4
    t, s = np.meshgrid(np.arange(T), np.arange(S), indexing="ij")
    t, s = t.ravel(), s.ravel()
    y = rng.normal(0, 1, T)[t] + 0.3 * s + rng.normal(0, 0.5, t.size)
    keep = rng.random(t.size) > 0.15
    d = pd.DataFrame({"topic": t.astype(str), "system": [f"s{i}" for i in s], "score": y})[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = irm.mixed("score ~ system + (1|topic)", d).anova().table
        b = irm.mixed("score ~ system + (1|topic)",
                      d.assign(score=d["score"] * scale + shift)).anova().table
    assert np.allclose(a[["F", "den_df"]], b[["F", "den_df"]], rtol=1e-5)


COVARIATES = json.loads((REF / "mixed_anova_covariates.json").read_text())


@pytest.mark.parametrize("case", COVARIATES["cases"],
                         ids=[c["formula"] for c in COVARIATES["cases"]])
@pytest.mark.parametrize(("ddf", "key"), [("satterthwaite", "satterthwaite"),
                                          ("kenward-roger", "kenward_roger")])
def test_anova_with_covariates_equals_lmertest(case: dict, ddf: str, key: str) -> None:
    """Numeric covariates (qlen, depth) and their interactions with a factor
    (tests/reference/mixed_anova_covariates.R)."""
    d = pd.read_csv(REF / case["file"], dtype={"topic": str, "system": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        t = irm.mixed(case["formula"], d).anova(ddf=ddf).table
    ref = case[key]
    assert list(t.index) == _vec(ref["terms"])
    assert t["num_df"].tolist() == _vec(ref["num_df"])
    # measured: F within 7e-8, den_df within 7e-8, p within 1.9e-6 (relative, for p = 4e-38)
    assert np.allclose(t["F"], _vec(ref["F"]), rtol=1e-6, atol=0)
    assert np.allclose(t["den_df"], _vec(ref["den_df"]), rtol=1e-6, atol=0)
    assert np.allclose(t["p"], _vec(ref["p"]), rtol=5e-6, atol=0)
