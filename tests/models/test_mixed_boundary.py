"""Variance components that the optimiser left at 0 although the REML optimum is inside.

theta enters the deviance as theta**2, so the gradient is exactly 0 on the bound theta = 0 and
L-BFGS-B once stopped wherever a step had been clipped onto it (or the start was 0): 55 of 240
random unbalanced designs ended up to 2 log-likelihood units below lme4, with every component 0
and the F tests of a model without random terms. The designs are
tests/reference/data/mixed_boundary.csv (make_mixed_boundary_data.py); the reference is lme4 /
lmerTest (tests/reference/mixed_boundary.R -> mixed_boundary.json), the better of bobyqa and
Nelder-Mead.
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
from irmodels.errors import ArgumentError, BoundaryFitWarning, DesignError

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed_boundary.json").read_text())
FITS = FIXTURE["fits"]


@pytest.fixture(scope="module")
def designs() -> dict[str, pd.DataFrame]:
    d = pd.read_csv(REF / FIXTURE["file"], dtype=str)
    d["score"] = d["score"].astype(float)
    return {k: g.drop(columns="design").reset_index(drop=True) for k, g in d.groupby("design")}


def _fit(formula: str, d: pd.DataFrame, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(formula, d, **kw)


@pytest.mark.parametrize("ref", FITS, ids=[f"{f['design']}-{f['formula'].count('|')}" for f in FITS])
def test_optimum_equals_lme4(designs, ref) -> None:
    fit = _fit(ref["formula"], designs[ref["design"]])
    assert_deviance_optimum(fit)
    assert fit.loglik == pytest.approx(ref["logLik"], abs=1e-7)
    got = fit.components["variance"]
    for name, want in ref["components"].items():
        assert got[name] == pytest.approx(want, abs=2e-6, rel=1e-4), name
    row = fit.anova().table.loc["system"]
    assert row["num_df"] == ref["num_df"]
    assert row["F"] == pytest.approx(ref["F"], rel=1e-4)
    assert row["den_df"] == pytest.approx(ref["den_df"], rel=1e-3)
    assert row["p"] == pytest.approx(ref["p"], rel=1e-3)


@pytest.mark.parametrize("start", [0.0, 1e-9, 1e-5, 3.0])
def test_any_start_reaches_the_optimum(designs, start) -> None:
    ref = next(f for f in FITS if f["design"] == "m1")
    fit = _fit(ref["formula"], designs["m1"], start={"topic": start})
    assert fit.loglik == pytest.approx(ref["logLik"], abs=1e-7)
    assert fit.components.loc["topic", "variance"] == pytest.approx(
        ref["components"]["topic"], rel=1e-4)


def test_a_true_boundary_stays_at_zero(designs) -> None:
    # h77's topic variance is 0 in lme4 too: the probes find nothing better and say so
    ref = next(f for f in FITS if f["design"] == "h77" and f["formula"].count("|") == 3)
    with pytest.warns(BoundaryFitWarning, match="variance of topic is zero"):
        fit = irm.mixed(ref["formula"], designs["h77"])
    assert fit.components.loc["topic", "variance"] == 0.0
    assert fit.converged


@pytest.mark.parametrize("start, message", [
    ({"topc": 1.0}, r"start names 'topc', which is not a random term .* the random terms are "
                    r"'topic'"),
    ({"topic": -1.0}, r"start\['topic'\] must be a finite number >= 0 .* got -1.0"),
    ({"topic": float("nan")}, r"start\['topic'\] must be a finite number >= 0"),
    ({"topic": "1"}, r"start\['topic'\] must be a finite number >= 0 .* got '1'"),
    ({"topic": True}, r"start\['topic'\] must be a finite number"),
])
def test_bad_start_is_refused(designs, start, message) -> None:
    with pytest.raises(ArgumentError, match=message):
        irm.mixed("score ~ system + (1|topic)", designs["m1"], start=start)


def test_fixed_factor_with_one_level_is_refused(designs) -> None:
    d = designs["m1"]
    one = d[d["system"] == "s0"].reset_index(drop=True)
    with pytest.raises(DesignError, match=r"factor 'system' of the fixed term system has 1 level "
                                          r"\(s0\); a fixed factor needs at least two levels"):
        irm.mixed("score ~ system + (1|topic)", one)
    # the same data without the term fit
    fit = _fit("score ~ 1 + (1|topic)", one)
    assert np.isfinite(fit.loglik)
