"""``missing=`` (irm.anova, irm.mixed) and ``aliased=`` (irm.anova) as R and statsmodels have them.

Fixture: tests/reference/npk_aliased.json, written by tests/reference/npk_aliased.R (R's
``?npk`` example ``yield ~ block + N*P*K``, whose N:P:K is aliased with block) with the data in
tests/reference/data/npk.csv. Tolerance 1e-10 relative (QR to ~1e-14; room for BLAS).
``missing="drop"`` must equal the fit of the frame dropped beforehand to 1e-12.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError

REF = Path(__file__).resolve().parents[1] / "reference"
FORMULA = "yield ~ block + N*P*K"


@pytest.fixture(scope="module")
def npk() -> pd.DataFrame:
    d = pd.read_csv(REF / "data" / "npk.csv")
    for c in ("block", "N", "P", "K"):
        d[c] = pd.Categorical(d[c])
    return d


@pytest.fixture(scope="module")
def ref() -> dict:
    return json.loads((REF / "npk_aliased.json").read_text())


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


@pytest.mark.parametrize("ss_type", [1, 2])
@pytest.mark.parametrize("method", ["auto", "dense"])
def test_npk_aliased_drop_equals_r(npk, ref, ss_type, method):
    fit = _quiet(irm.anova, FORMULA, npk, ss_type=ss_type, aliased="drop", method=method)
    r = ref[f"type{ss_type}"]
    assert ref["aliased_coefficients"] == "N1:P1:K1"
    # R's anova(lm()) omits the aliased term; car's type II shows it with 0 df: left out here
    assert list(fit.table.index) == [*r["terms"], "Residual"]
    assert fit.aliased_terms == ("N:P:K",)
    assert any("N:P:K" in n and "aliased" in n for n in fit.notes)
    for term, v in r["terms"].items():
        row = fit.table.loc[term]
        assert row["df"] == v["df"]
        for ours, theirs in (("SS", "SS"), ("MS", "MS"), ("F", "F"), ("p", "p")):
            np.testing.assert_allclose(row[ours], v[theirs], rtol=1e-10, err_msg=f"{term} {ours}")
    np.testing.assert_allclose(fit.table.loc["Residual", "SS"], r["SS_resid"], rtol=1e-10)
    assert fit.df_resid == r["df_resid"]


@pytest.mark.parametrize("ss_type", [1, 2])
def test_npk_aliased_means_equal_emmeans(npk, ref, ss_type):
    fit = _quiet(irm.anova, FORMULA, npk, ss_type=ss_type, aliased="drop")
    em = ref["emmeans_NP"]
    means = fit.marginal_means(["N", "P"])
    cov = fit.marginal_means_cov(["N", "P"])
    for n, p, m, se in zip(em["N"], em["P"], em["emmean"], em["SE"]):
        key = (int(n), int(p))
        np.testing.assert_allclose(means.loc[key], m, rtol=1e-10)
        np.testing.assert_allclose(np.sqrt(cov.loc[[key], [key]].to_numpy()[0, 0]), se,
                                   rtol=1e-10)
    # emmeans: the block means average over N:P:K cells that the aliasing leaves undetermined
    assert ref["emmeans_block_estimable"] is False
    with pytest.raises(DesignError, match="not estimable"):
        fit.marginal_means("block")


def test_npk_aliased_raise_is_default(npk):
    with pytest.raises(DesignError, match="N:P:K.*aliased"):
        _quiet(irm.anova, FORMULA, npk, ss_type=1)
    with pytest.raises(DesignError, match="aliased='drop'"):
        _quiet(irm.anova, FORMULA, npk, ss_type=1)


def test_npk_aliased_type3_refused_as_car(npk, ref):
    assert ref["type3_refused"] is True
    with pytest.raises(DesignError, match="N:P:K"):
        _quiet(irm.anova, FORMULA, npk, ss_type=3, aliased="drop")


def test_aliased_drop_without_aliasing_changes_nothing(npk):
    a = _quiet(irm.anova, "yield ~ block + N*P", npk, ss_type=1)
    b = _quiet(irm.anova, "yield ~ block + N*P", npk, ss_type=1, aliased="drop")
    pd.testing.assert_frame_equal(a.table, b.table)
    assert b.aliased_terms == ()


@pytest.mark.parametrize("bad", [("aliased", "Drop"), ("missing", "dorp"), ("missing", None)])
def test_bad_choice_refused(npk, bad):
    name, value = bad
    with pytest.raises(ArgumentError, match=name) as exc:
        irm.anova(FORMULA, npk, **{name: value})
    if isinstance(value, str):
        assert "did you mean 'drop'" in str(exc.value)


def test_mixed_bad_missing_refused(npk):
    with pytest.raises(ArgumentError, match="did you mean 'drop'"):
        irm.mixed("yield ~ N + (1|block)", npk, missing="dropp")


def _with_missing(npk: pd.DataFrame) -> pd.DataFrame:
    d = npk.copy()
    d["yield"] = d["yield"].astype(float)
    d.loc[[2, 11], "yield"] = np.nan
    d["K"] = d["K"].cat.add_categories([]).astype(object)
    d.loc[17, "K"] = np.nan
    d["K"] = pd.Categorical(d["K"])
    d["unused"] = np.nan  # a column the model does not read: never a reason to drop
    return d


def test_anova_missing_drop_equals_predropped(npk):
    d = _with_missing(npk)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fit = irm.anova("yield ~ N*P + K", d, ss_type=2, missing="drop")
    msgs = [str(x.message) for x in w if issubclass(x.category, DataQualityWarning)
            and "dropped" in str(x.message)]
    assert len(msgs) == 1
    assert "dropped 3 of 24" in msgs[0] and "yield (2)" in msgs[0] and "K (1)" in msgs[0]
    assert "unused" not in msgs[0]
    assert fit.n_dropped == 3 and fit.n_obs == 21
    assert any("3 row(s)" in n for n in fit.notes)
    pre = _quiet(irm.anova, "yield ~ N*P + K", d.dropna(subset=["yield", "K"]), ss_type=2)
    np.testing.assert_allclose(fit.table.to_numpy(float), pre.table.to_numpy(float),
                               rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(fit.fitted(), pre.fitted(), rtol=1e-12)
    assert pre.n_dropped == 0


def test_anova_missing_raise_is_default(npk):
    d = _with_missing(npk)
    with pytest.raises(DataFormatError):
        _quiet(irm.anova, "yield ~ N*P + K", d)


def test_nan_in_unused_column_is_kept(npk):
    d = npk.copy()
    d["unused"] = np.nan
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fit = irm.anova("yield ~ N*P*K", d, missing="drop")
    assert not [x for x in w if "dropped" in str(x.message)]
    assert fit.n_dropped == 0 and fit.n_obs == 24
    m = _quiet(irm.mixed, "yield ~ N + (1|block)", d, missing="drop")
    assert m.n_dropped == 0 and m.n_obs == 24


@pytest.mark.parametrize("formula", ["yield ~ N + P + (1|block)", "yield ~ N + (1 + N|block)"])
def test_mixed_missing_drop_equals_predropped(npk, formula):
    d = _with_missing(npk)
    d["N"] = d["N"].astype(object)
    d.loc[5, "block"] = np.nan  # a grouping factor's missing label drops the row too
    d["N"] = pd.Categorical(d["N"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fit = irm.mixed(formula, d, missing="drop")
    msgs = [str(x.message) for x in w if issubclass(x.category, DataQualityWarning)
            and "dropped" in str(x.message)]
    assert len(msgs) == 1 and "dropped 3 of 24" in msgs[0] and "block (1)" in msgs[0]
    assert fit.n_dropped == 3  # rows 2, 11 (yield) and 5 (block); K is not in the model
    pre = _quiet(irm.mixed, formula, d.dropna(subset=["yield", "block"]))
    assert fit.nobs == pre.nobs == 21
    np.testing.assert_allclose(fit.loglik, pre.loglik, rtol=1e-12)
    np.testing.assert_allclose(fit.fixed.to_numpy(float), pre.fixed.to_numpy(float),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fit.variance_components()["variance"].to_numpy(float),
                               pre.variance_components()["variance"].to_numpy(float),
                               rtol=1e-12, atol=1e-14)


def test_mixed_design_stage_missing_drop(npk):
    from irmodels.models._mixed_design import mixed_design

    d = _with_missing(npk)
    design = _quiet(mixed_design, "yield ~ N + (1|block)", d, missing="drop")
    assert design.n_dropped == 2 and len(design.data) == 22


def test_mixed_missing_raise_is_default(npk):
    d = _with_missing(npk)
    with pytest.raises(DataFormatError):
        _quiet(irm.mixed, "yield ~ N + (1|block)", d)
