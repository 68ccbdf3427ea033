"""irm.mixed on lme4's own data sets against lme4/lmerTest (tests/reference/lme4_datasets.R).

sleepstudy and cake have a numeric covariate that varies within the groups of the random
term: the balanced-design closed form does not apply to them (it once did, silently: sleepstudy's
var(Subject) was 1341.29 against lme4's 1378.18). Every fit is also checked to be the optimum of
its own deviance. ``boundary`` is a REML fit whose topic variance is 0 (lme4's isSingular).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mixed_checks import assert_deviance_optimum

import irmodels as irm
from irmodels.errors import BoundaryFitWarning

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "lme4_datasets.json").read_text())
FITS = FIXTURE["fits"]
#: columns that are numbers in the CSVs but factors in R
FACTOR_COLUMNS = {"Subject", "replicate", "s", "d", "dept", "service"}
RTOL = 1e-6
#: lme4's names of nested terms (grouping factor written inner:outer)
R_NAMES = {"cask:batch": "batch:cask"}


def _id(f: dict) -> str:
    return f"{f['data']}-{f['method']}"


def _load(name: str) -> pd.DataFrame:
    head = pd.read_csv(REF / FIXTURE["data"][name], nrows=0)
    dtype = {c: str for c in head.columns if c in FACTOR_COLUMNS}
    return pd.read_csv(REF / FIXTURE["data"][name], dtype=dtype)


@pytest.fixture(scope="module")
def fits() -> dict[str, irm.MixedResult]:
    out = {}
    for f in FITS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundaryFitWarning)
            out[_id(f)] = irm.mixed(f["formula"], _load(f["data"]), method=f["method"])
    return out


def test_fixture_provenance() -> None:
    assert FIXTURE["R"].startswith("R version 4")
    assert set(FIXTURE["packages"]) >= {"lme4", "lmerTest"}
    assert {f["data"] for f in FITS} == {"sleepstudy", "Penicillin", "Pastes", "Dyestuff",
                                         "cake", "InstEval150", "boundary"}


@pytest.mark.parametrize("ref", FITS, ids=_id)
def test_components_and_loglik(ref: dict, fits: dict) -> None:
    fit = fits[_id(ref)]
    assert fit.n_obs == ref["nobs"]
    assert fit.loglik == pytest.approx(ref["logLik"], rel=RTOL)
    comps = fit.variance_components()["variance"]
    total = sum(ref["components"].values())
    for name, value in ref["components"].items():
        # lme4 leaves a zero component at theta ~ 1e-8 (InstEval150's dept): absolute slack
        assert comps[R_NAMES.get(name, name)] == pytest.approx(value, rel=RTOL,
                                                                abs=1e-12 * total)
    assert fit.boundary == ref["singular"]


@pytest.mark.parametrize("ref", FITS, ids=_id)
def test_fixed_effects_and_satterthwaite_df(ref: dict, fits: dict) -> None:
    fixed = fits[_id(ref)].fixed
    want = ref["fixed"]
    names = want["coefficient"] if isinstance(want["coefficient"], list) else [
        want["coefficient"]]
    assert list(fixed.index) == names
    for col in ("estimate", "se", "df"):
        exp = np.atleast_1d(want[col]).astype(float)
        scale = np.max(np.abs(exp))  # estimates of 0 (e.g. systems2 in `boundary`) within rounding
        np.testing.assert_allclose(fixed[col].to_numpy(), exp, rtol=RTOL, atol=1e-12 * scale,
                                   err_msg=f"{ref['data']} {col}")


@pytest.mark.parametrize("ref", [f for f in FITS if "anova" in f], ids=_id)
def test_anova_f_tests(ref: dict, fits: dict) -> None:
    table = fits[_id(ref)].anova().table
    want = ref["anova"]
    terms = np.atleast_1d(want["term"]).tolist()
    assert list(table.index) == terms
    for col, rcol in (("F", "F"), ("num_df", "num_df"), ("den_df", "den_df"), ("p", "p")):
        np.testing.assert_allclose(table[col].to_numpy(float),
                                   np.atleast_1d(want[rcol]).astype(float), rtol=RTOL,
                                   err_msg=f"{ref['data']} {col}")


@pytest.mark.parametrize("ref", FITS, ids=_id)
def test_every_fit_is_the_optimum_of_its_deviance(ref: dict, fits: dict) -> None:
    assert_deviance_optimum(fits[_id(ref)])


def test_covariate_fits_leave_the_closed_form(fits: dict) -> None:
    # balanced designs (18 x 10, 3 x 15 x 6) whose covariate varies within the random groups
    for key in ("sleepstudy-REML", "sleepstudy-ML", "cake-REML", "cake-ML"):
        assert not fits[key].closed_form and fits[key].n_iter > 0 and fits[key].converged
    # the designs without covariates keep it
    assert fits["Penicillin-REML"].closed_form and fits["Dyestuff-REML"].closed_form


def test_the_optimum_check_catches_the_former_closed_form() -> None:
    # the closed form's answer for sleepstudy (var(Subject) 1341.29 instead of 1378.18) is not
    # the optimum of the deviance: the helper must say so
    from irmodels.models.mixed import Optimum, deviance_function, mixed_design, mixed_result

    design = mixed_design("Reaction ~ Days + (1|Subject)", _load("sleepstudy"))
    devfun = deviance_function(design, "REML")
    theta = np.array([np.sqrt(1341.29 / 960.46)])  # about the old answer
    opt = Optimum(theta, None, devfun(theta), 0, True, True)
    with pytest.raises(AssertionError, match="not the optimum"):
        assert_deviance_optimum(mixed_result(design, devfun, opt))


def test_boundary_fit_is_exactly_zero_and_flagged() -> None:
    data = _load("boundary")
    with pytest.warns(BoundaryFitWarning, match="topic"):
        fit = irm.mixed("score ~ system + (1|topic)", data)
    assert fit.variance_components().loc["topic", "variance"] == 0.0
    assert fit.boundary and fit.boundary_components == ("topic",)
    assert fit._state.optimum.theta[0] == 0.0
    # lmerTest: den_df = n - p = 36 at the boundary (29.45 when theta stopped at 1.3e-4)
    assert fit.anova().table.loc["system", "den_df"] == pytest.approx(36.0, rel=1e-6)
