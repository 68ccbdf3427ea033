"""MixedResult.confint against lme4's confint() (tests/reference/mixed_confint.R)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, BoundaryFitWarning, DataFormatError, ModelError

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed_confint.json").read_text())
#: lme4 interpolates its profile with splines on a grid; measured agreement with our exact
#: roots: 1.7e-6 (SDs) and 1e-6 (fixed effects) at most, so 1e-5 absolute is asserted.
PROFILE_TOL = 1e-5


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF / FIXTURE["file"], dtype={"sample": str})


def _fit(formula: str, d: pd.DataFrame, method: str = "REML"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(formula, d, method=method)


def _reference(entry: dict, which: str) -> pd.DataFrame:
    names = [n.replace("sd_(Intercept)|", "").replace("sigma", "Residual") for n in entry["names"]]
    num = lambda v: np.array([np.nan if x == "NA" else x for x in v], float)  # noqa: E731
    return pd.DataFrame({"lower": num(entry[f"{which}_lower"]),
                         "upper": num(entry[f"{which}_upper"])}, index=names)


CASES = [(f, i) for f in FIXTURE["fits"] for i in range(len(f["intervals"]))
         if f["method"] == "REML" or i == 0]


@pytest.mark.parametrize(("fit_entry", "i"), CASES,
                         ids=[f"{f['formula']}|{f['method']}|{f['intervals'][i]['level']}"
                              for f, i in CASES])
def test_profile_equals_lme4(fit_entry: dict, i: int, data: pd.DataFrame) -> None:
    entry = fit_entry["intervals"][i]
    fit = _fit(fit_entry["formula"], data, fit_entry["method"])
    ci = fit.confint("profile", level=entry["level"])
    ref = _reference(entry, "profile")
    assert list(ci.columns) == ["lower", "upper"]
    # rows: SDs in variance_components order, Residual, then the fixed effects
    assert list(ci.index) == list(fit.variance_components().index) + list(fit.fixed.index)
    assert np.allclose(ci.to_numpy(), ref.loc[ci.index].to_numpy(), rtol=0, atol=PROFILE_TOL)


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_wald_equals_lme4(method: str, data: pd.DataFrame) -> None:
    fit_entry = next(f for f in FIXTURE["fits"] if f["method"] == method)
    fit = _fit(fit_entry["formula"], data, method)
    for entry in fit_entry["intervals"]:
        ci = fit.confint("wald", level=entry["level"])
        ref = _reference(entry, "wald").loc[ci.index]
        sds = list(fit.variance_components().index)
        assert ci.loc[sds].isna().all().all() and ref.loc[sds].isna().all().all()
        coefs = list(fit.fixed.index)
        assert np.allclose(ci.loc[coefs], ref.loc[coefs], rtol=0, atol=1e-6)


def test_bootstrap_is_reproducible_and_sensible(data: pd.DataFrame) -> None:
    fit = _fit("score ~ system + (1|topic)", data)
    a = fit.confint("bootstrap", n_resamples=40, seed=7)
    b = fit.confint("bootstrap", n_resamples=40, seed=7)
    c = fit.confint("bootstrap", n_resamples=40, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.to_numpy(), c.to_numpy())
    assert list(a.index) == ["topic", "Residual", *fit.fixed.index]
    est = pd.concat([fit.variance_components()["sd"], fit.fixed["estimate"]])
    assert (a["lower"] < est[a.index]).all() and (est[a.index] < a["upper"]).all()
    # the bootstrap and profile intervals of the residual SD agree roughly (40 replicates)
    prof = fit.confint("profile", parm=["Residual"])
    assert abs(a.loc["Residual", "lower"] - prof.loc["Residual", "lower"]) < 0.01


def test_bootstrap_heteroscedastic_and_bad_input(data: pd.DataFrame) -> None:
    fit = _fit("score ~ system + (1|topic)", data)
    with pytest.raises(ArgumentError, match="method must be"):
        fit.confint("exact")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="level"):
        fit.confint("wald", level=95)
    with pytest.raises(DataFormatError, match="unknown parameter"):
        fit.confint("wald", parm=["sytem"])
    with pytest.raises(ArgumentError, match="n_resamples"):
        fit.confint("bootstrap", n_resamples=1)
    hfit = irm.mixed("score ~ system + (1|topic)", data, residual="system")
    with pytest.raises(ModelError, match="heteroscedastic"):
        hfit.confint("profile")
    ci = hfit.confint("bootstrap", n_resamples=10, seed=1, parm=["Residual", "topic"])
    assert list(ci.index) == ["topic", "Residual"] and (ci["lower"] < ci["upper"]).all()


def test_profile_with_a_covariate_equals_lme4() -> None:
    e = FIXTURE["covariate_fit"]
    d = pd.read_csv(REF / e["file"], dtype={"topic": str, "system": str})
    ci = _fit(e["formula"], d).confint("profile")
    ref = _reference(e, "profile")
    # measured: 7e-7 at most
    assert np.allclose(ci.to_numpy(), ref.loc[ci.index].to_numpy(), rtol=0, atol=PROFILE_TOL)


LME4_PROFILE = json.loads((REF / "lme4_profile.json").read_text())


def _lme4_row(name: str) -> str:
    """lme4's row name as irmodels' (``sd_(Intercept)|cask:batch`` -> ``batch:cask``)."""
    if name == "sigma":
        return "Residual"
    if name.startswith("sd_(Intercept)|"):
        return ":".join(sorted(name.removeprefix("sd_(Intercept)|").split(":")))
    return name


@pytest.mark.parametrize("entry", LME4_PROFILE["fits"], ids=lambda e: e["data"])
def test_profile_on_lme4s_data_sets(entry: dict) -> None:
    """lme4's Penicillin, Dyestuff and Pastes (tests/reference/lme4_profile.R). lme4 interpolates
    its profile with splines, which misses the bound by up to 2e-4 relative here (Dyestuff's
    lower SD bound: lme4 12.19854, where the deviance has risen by z^2 - 5e-4); each bound of
    irmodels is a root of the profile equation, checked on the deviance itself."""
    from irmodels.models._mixed_confint import _Profiler

    d = pd.read_csv(REF / entry["file"])
    for c in d.columns:
        if not pd.api.types.is_numeric_dtype(d[c]):
            d[c] = d[c].astype(str)
    fit = _fit(entry["formula"], d, entry["method"])
    ci = fit.confint("profile", level=entry["level"])
    ref = pd.DataFrame({"lower": entry["lower"], "upper": entry["upper"]},
                       index=[_lme4_row(n) for n in entry["names"]])
    canon = [":".join(sorted(str(n).split(":"))) for n in ci.index]
    ref = ref.loc[canon]
    np.testing.assert_allclose(ci.to_numpy(), ref.to_numpy(), rtol=3e-4, atol=1e-12)
    # the SD bounds (not at 0) are where the ML deviance has risen by z^2
    ml = fit if fit.method == "ML" else fit._refit_ml()
    pr = _Profiler(ml)
    z2 = 1.959963984540054**2
    order = ml._state.order
    internal = {ml.spec.random[k].name: i for i, k in enumerate(order)}
    for name in fit.variance_components().index:
        if name == "Residual":
            continue
        for bound in ci.loc[name]:
            if bound > 0:
                rise = pr.sd_term(internal[name], float(bound)) - pr.dev
                assert rise == pytest.approx(z2, abs=1e-6), (name, bound)
