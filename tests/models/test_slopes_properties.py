"""Invariances of random-slope fits (hypothesis): row order, lme4's ``||`` expansion, a slope
whose variance is 0, and a shift of the response.

Random small designs: 4-8 groups, 4-7 observations per group at covariate values drawn per row,
group intercepts and slopes drawn with random SDs. Examples are drawn by hypothesis strategies
only (the ``ci`` profile in tests/conftest.py derandomizes them).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import IRModelsWarning
from irmodels.models._lmm import ProfiledDeviance, ReTerm, lmm_design

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def designs(draw: st.DrawFn) -> pd.DataFrame:
    seed = draw(st.integers(0, 2**32 - 1))
    n_groups = draw(st.integers(4, 8))
    per = draw(st.integers(4, 7))
    sd_int = draw(st.floats(0.2, 2.0))
    sd_slope = draw(st.floats(0.05, 1.0))
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), per)
    x = rng.uniform(0, 5, len(g)).round(2)
    b0 = rng.normal(0, sd_int, n_groups)
    b1 = rng.normal(0, sd_slope, n_groups)
    y = 1.0 + 0.4 * x + b0[g] + b1[g] * x + rng.normal(0, 0.5, len(g))
    return pd.DataFrame({"g": [f"g{k}" for k in g], "x": x, "y": y})


def _fit(formula: str, d: pd.DataFrame, method: str = "REML"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)  # boundary fits are legitimate here
        return irm.mixed(formula, d, method=method)


@SETTINGS
@given(d=designs(), perm_seed=st.integers(0, 2**32 - 1))
def test_row_order_never_changes_a_slope_fit(d: pd.DataFrame, perm_seed: int) -> None:
    a = _fit("y ~ x + (1 + x | g)", d)
    # a correlation is one, whatever the rounding at a boundary fit (+-1 exactly at most)
    assert a.correlations()["correlation"].dropna().abs().le(1.0).all()
    perm = np.random.default_rng(perm_seed).permutation(len(d))
    b = _fit("y ~ x + (1 + x | g)", d.iloc[perm].reset_index(drop=True))
    assert b.loglik == pytest.approx(a.loglik, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(b.fixed_estimates, a.fixed_estimates, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b.fitted(), a.fitted()[perm], rtol=1e-5, atol=1e-6)


@SETTINGS
@given(d=designs(), method=st.sampled_from(["REML", "ML"]))
def test_double_bar_is_the_sum_of_its_terms(d: pd.DataFrame, method: str) -> None:
    """lme4's ``(1 + x || g)`` is ``(1 | g) + (0 + x | g)``: the same model, fit for fit."""
    a = _fit("y ~ x + (1 + x || g)", d, method)
    b = _fit("y ~ x + (1 | g) + (0 + x | g)", d, method)
    assert a.loglik == b.loglik
    pd.testing.assert_frame_equal(a.variance_components(), b.variance_components())


@SETTINGS
@given(d=designs(), method=st.sampled_from(["REML", "ML"]), t=st.floats(0.0, 3.0))
def test_a_zero_slope_variance_is_the_intercept_model(d: pd.DataFrame, method: str,
                                                      t: float) -> None:
    """At theta = (t, 0, 0) the deviance of ``(1 + x | g)`` is that of ``(1 | g)`` at t."""
    reml = method == "REML"
    slope = ProfiledDeviance(lmm_design("y ~ x + (1|g)", d, (ReTerm(("g",), True, ("x",)),)), reml)
    intercept = ProfiledDeviance(lmm_design("y ~ x + (1|g)", d, (ReTerm(("g",)),)), reml)
    assert slope(np.array([t, 0.0, 0.0])) == pytest.approx(intercept(np.array([t])),
                                                           rel=1e-10, abs=1e-9)


@SETTINGS
@given(d=designs(), shift=st.floats(-50, 50), scale=st.floats(0.1, 10))
def test_an_affine_change_of_the_response_moves_the_fit_with_it(d: pd.DataFrame, shift: float,
                                                                 scale: float) -> None:
    """y -> a + s y: variances scale by s^2, correlations stay, the intercept moves by a."""
    a = _fit("y ~ x + (1 + x | g)", d)
    b = _fit("y ~ x + (1 + x | g)", d.assign(y=shift + scale * d["y"]))
    va, vb = a.variance_components()["variance"], b.variance_components()["variance"]
    np.testing.assert_allclose(vb, scale**2 * va, rtol=1e-4, atol=1e-6 * scale**2)
    np.testing.assert_allclose(b.correlations()["correlation"], a.correlations()["correlation"],
                               atol=1e-3)
    fa, fb = a.fixed_estimates, b.fixed_estimates
    assert fb.iloc[0] == pytest.approx(shift + scale * fa.iloc[0], rel=1e-6, abs=1e-6 * scale)
    assert fb.iloc[1] == pytest.approx(scale * fa.iloc[1], rel=1e-6, abs=1e-6 * scale)
