"""The closed form of irm.mixed is the optimum of the deviance (hypothesis).

On random balanced designs, with and without a numeric covariate that varies within the groups
of the random terms, ``irm.mixed`` equals the fit forced through the optimiser
(``optimize_deviance(devfun, closed_form=False)``), and both are the optimum of their own
deviance. Examples are drawn by hypothesis strategies only (reproducible under xdist; the
``ci`` profile in tests/conftest.py derandomizes them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mixed_checks import assert_deviance_optimum

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, DesignError
from irmodels.models.mixed import deviance_function, mixed_design, mixed_result, optimize_deviance

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

MODELS = {
    # covariate models: never the closed form
    "x": "score ~ x + (1|topic)",
    "system+x": "score ~ system + x + (1|topic)",
    "system*x": "score ~ system * x + (1|topic)",
    "x-crossed": "score ~ x + (1|topic) + (1|system)",
    # factor models: the closed form when every component is positive
    "system": "score ~ system + (1|topic)",
    "crossed": "score ~ (1|topic) + (1|system)",
    "interaction": "score ~ system + (1|topic) + (1|topic:system)",
}


@st.composite
def designs(draw: st.DrawFn) -> tuple[pd.DataFrame, str]:
    """A balanced topics x systems x replicates design; integer-valued scores (effects plus
    noise) so that no draw reaches an extreme scale; ``x`` varies within every topic."""
    name = draw(st.sampled_from(sorted(MODELS)))
    T = draw(st.integers(3, 7))
    S = draw(st.integers(2, 4))
    R = draw(st.integers(2 if name == "interaction" else 1, 3))
    n = T * S * R
    def ints(lo: int, hi: int, k: int) -> list[int]:
        return draw(st.lists(st.integers(lo, hi), min_size=k, max_size=k))

    te = np.array(ints(-20, 20, T), float)
    se = np.array(ints(-10, 10, S), float)
    noise = np.array(ints(-9, 9, n), float)
    x = np.array(ints(0, 12, n), float)
    slope = draw(st.integers(-3, 3))
    topic = np.repeat(np.arange(T), S * R)
    system = np.tile(np.repeat(np.arange(S), R), T)
    score = te[topic] + se[system] + slope * x + noise
    data = pd.DataFrame({"topic": [f"t{i}" for i in topic], "system": [f"s{j}" for j in system],
                         "x": x, "score": score / 10})
    return data, MODELS[name]


def _both(formula: str, data: pd.DataFrame, method: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        try:
            fit = irm.mixed(formula, data, method=method)
        except DesignError:  # collinear or constant draws: refused in words, not compared
            assume(False)
        design = mixed_design(formula, data)
        devfun = deviance_function(design, method)
        forced = mixed_result(design, devfun, optimize_deviance(devfun, closed_form=False))
    return fit, forced


@SETTINGS
@given(drawn=designs(), method=st.sampled_from(["REML", "ML"]))
def test_mixed_equals_its_iterative_path(drawn, method) -> None:
    data, formula = drawn
    fit, forced = _both(formula, data, method)
    assert not forced.closed_form
    if "x" in formula.split("~")[1].split("(")[0]:
        assert not fit.closed_form  # a covariate varying within topics: never the closed form
    assert_deviance_optimum(fit)
    assert_deviance_optimum(forced)
    assert fit.deviance == pytest.approx(forced.deviance, rel=1e-9, abs=1e-9)
    a = fit.variance_components()["variance"].to_numpy()
    b = forced.variance_components()["variance"].to_numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7 * b.sum())
    np.testing.assert_allclose(fit.fixed_estimates, forced.fixed_estimates, rtol=1e-6,
                               atol=1e-7 * float(np.abs(data["score"]).max()))
    assert fit.boundary == forced.boundary


def test_forced_iterative_path_on_a_closed_form_design() -> None:
    data = irm.datasets.load("adhoc3", "AP")
    formula = "score ~ (1|system) + (1|topic)"
    fit = irm.mixed(formula, data)
    assert fit.closed_form and fit.n_iter == 0
    design = mixed_design(formula, data)
    devfun = deviance_function(design, "REML")
    opt = optimize_deviance(devfun, closed_form=False)
    assert not opt.closed_form and opt.n_iter > 0 and opt.converged
    forced = mixed_result(design, devfun, opt)
    np.testing.assert_allclose(forced.variance_components()["variance"],
                               fit.variance_components()["variance"], rtol=1e-6)
    assert_deviance_optimum(fit)
    assert_deviance_optimum(forced)
