"""irm.mixed names the right cause and gives scale-invariant statistics.

Collinear covariates are called collinear (not "a combination of levels is never observed"), a
covariate whose squares overflow is refused with a rescale message, a response at 1e+-90 gives
the F tests (Satterthwaite and Kenward-Roger), df and profile intervals of the same data at
scale 1, and a model with no residual df is refused instead of "converging" at a huge theta.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, DataFormatError, DesignError
from irmodels.models import _reml


def _data(seed: int = 1, drop: tuple[int, ...] = (), slope: float = 0.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    T, S, R = 8, 3, 2
    d = pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(T)], S * R),
                      "system": np.tile(np.repeat([f"s{j}" for j in range(S)], R), T)})
    score = (rng.normal(size=len(d)) + np.repeat(rng.normal(size=T), S * R)
             + np.tile(np.repeat([0.0, 0.3, 0.6], R), T))
    d["x"] = rng.normal(size=len(d))
    d["score"] = score + slope * d["x"]
    return d.drop(index=list(drop)).reset_index(drop=True)


def _fit(formula: str, data: pd.DataFrame, **kw) -> irm.MixedResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(formula, data, **kw)


def test_collinear_covariates_are_named() -> None:
    d = _data().assign(z=lambda f: 2.0 * f["x"] + 1.0)
    with pytest.raises(DesignError, match=r"covariates 'x', 'z' are collinear") as info:
        irm.mixed("score ~ x + z + (1|topic)", d)
    assert "never observed" not in str(info.value)
    assert "(Intercept), x, z" in str(info.value)


def test_empty_cell_still_says_never_observed() -> None:
    d = _data()
    d = d[~((d["system"] == "s2") & (d["x"] > 0))].assign(
        c=lambda f: np.where(f["x"] > 0, "hi", "lo"))
    with pytest.raises(DesignError, match="never observed"):
        irm.mixed("score ~ system * c + (1|topic)", d)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e100])
def test_covariate_at_an_extreme_scale_says_rescale(scale: float) -> None:
    d = _data()
    with pytest.raises(DataFormatError, match=r"covariate 'x' reaches magnitude .*Rescale it"):
        irm.mixed("score ~ system + x + (1|topic)", d.assign(x=d["x"] * scale))


@pytest.mark.parametrize("scale", [1e20, 1e80, 1e-20, 1e-80])
def test_covariate_scale_does_not_change_t_or_df(scale: float) -> None:
    d = _data()
    ref = _fit("score ~ system + x + (1|topic)", d).fixed
    got = _fit("score ~ system + x + (1|topic)", d.assign(x=d["x"] * scale)).fixed
    np.testing.assert_allclose(got["t"], ref["t"], rtol=1e-8)
    np.testing.assert_allclose(got["df"], ref["df"], rtol=1e-8)
    assert got.loc["x", "estimate"] * scale == pytest.approx(ref.loc["x", "estimate"], rel=1e-8)


FORMULA = "score ~ system + (1|topic) + (1|topic:system)"


@pytest.fixture(scope="module")
def unbalanced() -> pd.DataFrame:
    return _data(drop=(0, 5, 7), slope=0.0)  # iterative path; ML var(topic:system) = 0


@pytest.mark.parametrize("scale", [1e90, 1e-90, 1e60, 1e-60, 1e20, 2.0**-40])
def test_f_tests_are_scale_invariant(scale: float, unbalanced: pd.DataFrame) -> None:
    ref = _fit(FORMULA, unbalanced)
    fit = _fit(FORMULA, unbalanced.assign(score=unbalanced["score"] * scale))
    for ddf in ("satterthwaite", "kenward-roger"):
        a, b = fit.anova(ddf=ddf).table, ref.anova(ddf=ddf).table
        assert np.isfinite(a["den_df"]).all()
        np.testing.assert_allclose(a[["F", "den_df", "p"]], b[["F", "den_df", "p"]], rtol=1e-6)
    np.testing.assert_allclose(fit.fixed["df"], ref.fixed["df"], rtol=1e-6)
    np.testing.assert_allclose(fit.fixed["p"], ref.fixed["p"], rtol=1e-6)
    np.testing.assert_allclose(fit.tukey().pairs["p_adj"], ref.tukey().pairs["p_adj"],
                               rtol=1e-6)
    # the optimiser works in units of the response's SD (a power of 2), so where it stops
    # does not depend on the scale (it stopped 2e-6 short at 1e-90 and 1e20)
    np.testing.assert_allclose(fit.variance_components()["variance"] / scale**2,
                               ref.variance_components()["variance"], rtol=1e-6, atol=1e-12)


PARM = ["topic", "Residual", "systems1"]


@pytest.fixture(scope="module")
def profile_ref(unbalanced: pd.DataFrame) -> pd.DataFrame:
    return _fit(FORMULA, unbalanced).confint(parm=PARM)


@pytest.mark.parametrize("scale", [1e3, 1e-60])
def test_profile_intervals_are_scale_invariant(scale: float, unbalanced: pd.DataFrame,
                                               profile_ref: pd.DataFrame) -> None:
    got = _fit(FORMULA, unbalanced.assign(score=unbalanced["score"] * scale)).confint(parm=PARM)
    np.testing.assert_allclose(got.to_numpy() / scale, profile_ref.to_numpy(), rtol=1e-7,
                               atol=1e-12)


def test_power_of_two_scale_gives_the_same_fit(unbalanced: pd.DataFrame) -> None:
    # the same internal response (divided by the power of 2 nearest its SD): equal to rounding
    ref = _fit(FORMULA, unbalanced)
    fit = _fit(FORMULA, unbalanced.assign(score=unbalanced["score"] * 2.0**70))
    np.testing.assert_allclose(fit.variance_components()["variance"] / 2.0**140,
                               ref.variance_components()["variance"], rtol=1e-12, atol=1e-15)
    assert fit.n_iter == ref.n_iter


def test_profile_leaves_a_zero_component(unbalanced: pd.DataFrame) -> None:
    # The ML fit has var(topic:system) = 0. Profiling the residual SD, the other components
    # must be free to leave 0: at sigma = 0.61 a positive topic:system variance brings the
    # deviance within 2.9 of the optimum (grid below), so 0.61 is inside the 95% interval
    # (lme4 1.1-31, stuck at 0, reports a lower bound of 0.6298; irmodels did too at some scales).
    ml = _fit(FORMULA, unbalanced, method="ML")
    assert ml.variance_components().loc["topic:system", "variance"] == 0.0
    pb = ml._state.problem
    grid = np.linspace(0.0, 3.0, 31)
    best = min(_reml.unprofiled(pb, np.array([a, b]), 0.61, None, False)
               for a in grid for b in grid)
    assert best - ml.deviance < 1.96**2
    lo = ml.confint(parm=["Residual"]).loc["Residual", "lower"]
    assert lo < 0.61
    assert lo == pytest.approx(0.589346, abs=1e-5)
    # the same for the topic SD: at 0.26 (lme4's lower bound 0.2741) the deviance over
    # (sigma, topic:system) comes within 3.65 of the optimum
    it = [i for i, k in enumerate(ml._state.order) if ml.spec.random[k].name == "topic"][0]
    best = np.inf
    for sig in np.linspace(0.5, 1.0, 51):
        for b in np.linspace(0.0, 1.5, 31):
            th = np.zeros(2)
            th[it], th[1 - it] = 0.26 / sig, b
            best = min(best, _reml.unprofiled(pb, th, sig, None, False))
    assert best - ml.deviance < 1.96**2
    lo_topic = ml.confint(parm=["topic"]).loc["topic", "lower"]
    assert lo_topic < 0.26
    assert lo_topic == pytest.approx(0.248924, abs=1e-5)


def test_no_residual_df_is_refused() -> None:
    d = pd.DataFrame({"topic": ["t0", "t0", "t1", "t1", "t2", "t2"],
                      "system": ["s0", "s1"] * 3, "x": [0, 0, 1, 0, 0, 1.0],
                      "score": [0.1, 0.1, 0, 0, 0, 0]})
    with pytest.raises(DesignError, match="no residual degrees of freedom"):
        irm.mixed("score ~ system * x + (1|topic)", d)
