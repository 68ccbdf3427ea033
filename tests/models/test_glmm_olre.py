"""Observation-level random effects in GLMMs (a term with one level per row), as glmer fits
them (tests/reference/glmer_olre.R -> glmer_olre.json): the usual model of over-dispersion of
P@10 counts and of Poisson counts. A linear mixed model still refuses such a term (for a
Gaussian response it is the residual)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import glmm_data
import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DesignError, IRModelsWarning

REF = Path(__file__).resolve().parents[1] / "reference"
R = json.loads((REF / "glmer_olre.json").read_text())


_p10 = glmm_data.p10


def _poisson() -> pd.DataFrame:
    d = pd.read_csv(REF / "data" / "glmm" / "poisson_depth.csv")
    return d.assign(obs=[str(i + 1) for i in range(len(d))])


def _check(fit, ref) -> None:
    np.testing.assert_allclose(fit.fixed["estimate"], list(ref["fixef"].values()), atol=2e-5)
    np.testing.assert_allclose(fit.fixed["se"], ref["se"], rtol=1e-4)
    # irmodels' maximum is 8e-6 above glmer's (glmer's PIRLS tolerance): never below it
    assert fit.loglik == pytest.approx(ref["logLik"], abs=1e-5)
    assert fit.loglik > ref["logLik"] - 1e-7
    vc = fit.variance_components()["variance"]
    for grp, v in zip(ref["varcorr"]["grp"], ref["varcorr"]["vcov"]):
        assert vc.loc[grp] == pytest.approx(v, abs=2e-5), grp


def test_p10_topic_system_cells_as_observation_level_effects(shared_data) -> None:
    d = _p10(shared_data)
    fit = irm.mixed("rel ~ system + (1|topic) + (1|topic:system)", d, family="binomial",
                    trials=10)
    _check(fit, R["binomial_p10"])


def test_poisson_observation_level_effect_on_the_boundary() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)  # a singular fit, as glmer's
        fit = irm.mixed("rel ~ system + (1|topic) + (1|obs)", _poisson(), family="poisson",
                        offset="log_depth")
    ref = R["poisson_offset"]
    np.testing.assert_allclose(fit.fixed["estimate"], list(ref["fixef"].values()), atol=2e-5)
    assert fit.loglik == pytest.approx(ref["logLik"], abs=1e-5)
    assert fit.boundary  # the SEs of a singular fit come from R_X, as lme4's (not compared)


def test_a_linear_mixed_model_still_refuses_one_level_per_row(shared_data) -> None:
    d = _p10(shared_data)
    with pytest.raises(DesignError, match="confounded with the residual"):
        irm.mixed("rel ~ system + (1|topic) + (1|topic:system)", d)
