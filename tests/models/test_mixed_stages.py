"""The mixed-model engine as inspectable stages (lme4's lFormula -> mkLmerDevfun ->
optimizeLmer -> mkMerMod): mixed_design -> deviance_function -> optimize_deviance ->
mixed_result compose to irm.mixed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ModelError
from irmodels.models.mixed import (
    DevianceFunction,
    MixedDesign,
    MixedState,
    Optimum,
    deviance_function,
    mixed_design,
    mixed_result,
    optimize_deviance,
)

REF = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF / "data" / "mixed_crossed_unbalanced.csv", dtype={"sample": str})


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_stages_compose_to_mixed(method: str, data: pd.DataFrame) -> None:
    formula = "score ~ system + (1|topic) + (1|topic:system)"
    design = mixed_design(formula, data)
    assert isinstance(design, MixedDesign)
    assert design.fixed_names[0] == "(Intercept)" and len(design.y) == len(data)
    devfun = deviance_function(design, method)
    assert isinstance(devfun, DevianceFunction) and devfun.method == method
    opt = optimize_deviance(devfun)
    assert isinstance(opt, Optimum) and opt.converged and not opt.closed_form
    # the deviance function at the optimum is the fit's deviance; it is higher elsewhere
    x = np.concatenate([opt.theta, [] if opt.eta is None else opt.eta])
    assert devfun(x) == pytest.approx(opt.deviance, rel=1e-12)
    assert devfun(x * 1.1) > opt.deviance
    g = devfun.evaluate(x, gradient=True).gradient
    assert np.max(np.abs(g)) < 1e-4
    fit = mixed_result(design, devfun, opt)
    ref = irm.mixed(formula, data, method=method)
    assert fit.loglik == ref.loglik
    pd.testing.assert_frame_equal(fit.fixed, ref.fixed)
    assert isinstance(fit._state, MixedState)
    assert fit._state.devfun is devfun and fit._state.optimum is opt
    assert fit._state["vcov"] is fit._state.vcov  # item access kept for the former dict
    assert fit.deviance == pytest.approx(opt.deviance, rel=1e-12)


def test_closed_form_stage_and_heteroscedastic_parameters(data: pd.DataFrame) -> None:
    balanced = irm.datasets.load("adhoc3", "AP")
    devfun = deviance_function(mixed_design("score ~ (1|system) + (1|topic)", balanced))
    opt = optimize_deviance(devfun)
    assert opt.closed_form and opt.n_iter == 0
    het = deviance_function(mixed_design("score ~ system + (1|topic)", data, residual="system"))
    assert het.n_theta == 1 and len(het.bounds) == 1 + 4
    theta, eta = het.split(np.arange(5.0))
    assert theta.tolist() == [0.0] and eta.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ModelError, match="method"):
        deviance_function(mixed_design("score ~ (1|topic)", data), "OLS")  # type: ignore[arg-type]
