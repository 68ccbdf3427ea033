"""irm.mixed: API, bad input, boundary fits, invariances and the closed form."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import (
    BoundaryFitWarning,
    ConvergenceWarning,
    DataFormatError,
    DataQualityWarning,
    DesignError,
    FormulaError,
    ModelError,
)
from irmodels.models import _reml
from irmodels.models._mixed_design import _build, resolve_spec
from irmodels.models._mixed_deviance import _problem
from irmodels.models._mixed_optimize import _closed_form


def _design(rng: np.random.Generator, n_sys: int = 3, n_top: int = 6, reps: int = 3,
            s_topic: float = 0.3, s_ts: float = 0.1, s_e: float = 0.1) -> pd.DataFrame:
    rows = []
    t_eff = rng.normal(0, s_topic, n_top)
    ts = rng.normal(0, s_ts, (n_top, n_sys))
    for i in range(n_top):
        for j in range(n_sys):
            for k in range(reps):
                rows.append((f"t{i + 1:02d}", f"s{j + 1}", str(k + 1),
                             0.4 + 0.05 * j + t_eff[i] + ts[i, j] + rng.normal(0, s_e)))
    return pd.DataFrame(rows, columns=["topic", "system", "sample", "score"])


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(*args, **kwargs)


# -- API -----------------------------------------------------------------------------------------


def test_result_api(rng: np.random.Generator) -> None:
    data = _design(rng)
    fit = irm.mixed("score ~ system + (1|topic/system)", data)
    assert fit.method == "REML" and fit.n_obs == len(data)
    assert list(fit.variance_components().index) == ["topic", "topic:system", "Residual"]
    assert list(fit.fixed.columns) == ["estimate", "se", "df", "t", "p"]
    assert list(fit.fixed.index) == ["(Intercept)", "systems2", "systems3"]
    assert isinstance(fit.residual_variance, float) and fit.variance_ratios is None
    assert set(fit.random_effects) == {"topic", "topic:system"}
    assert len(fit.random_effects["topic:system"]) == 18
    assert fit.random_effects["topic"].sum() == pytest.approx(0.0, abs=1e-10)  # balanced
    mm = fit.marginal_means("system")
    assert list(mm.index) == ["s1", "s2", "s3"]
    # balanced: marginal means are the raw system means
    assert np.allclose(mm, data.groupby("system")["score"].mean())
    cov = fit.marginal_means_cov("system")
    assert cov.shape == (3, 3)
    text = fit.summary()
    assert "Variance components" in text and "Fixed effects" in text
    assert r"\begin{table}" in fit.to_latex(caption="x_y") and "x\\_y" in fit.to_latex(caption="x_y")
    assert "<table" in fit._repr_html_()
    assert repr(fit).startswith("<MixedResult REML") and "\n" not in repr(fit)
    with pytest.raises(DesignError, match="not a fixed factor"):
        fit.marginal_means("topic")
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        fit.method = "ML"  # type: ignore[misc]


def test_tukey_uses_model_covariance(rng: np.random.Generator) -> None:
    pytest.importorskip("irmodels.inference.tukey")
    data = _design(rng, n_sys=4)
    fit = irm.mixed("score ~ system + (1|topic/system)", data)
    hsd = fit.tukey("system")
    assert hsd.n_pairs == 6
    # balanced: se of a difference = sqrt(2 var(topic:system + e/r) / T); df = (T-1)(S-1)
    assert fit.fixed["df"].iloc[1] == pytest.approx(15.0, rel=1e-5)


def test_heteroscedastic_api(rng: np.random.Generator) -> None:
    data = _design(rng, n_sys=2, n_top=8, reps=5)
    data.loc[data["topic"] == "t03", "score"] += rng.normal(0, 0.5, (data["topic"] == "t03").sum())
    fit = irm.mixed("score ~ system + (1|topic/system)", data, residual="topic*system")
    assert fit.residual == "topic:system"
    assert isinstance(fit.residual_variance, pd.Series) and len(fit.residual_variance) == 16
    assert fit.sd_ratios.index[0] == "t01:s1" and fit.sd_ratios.iloc[0] == 1.0
    noisy = fit.residual_variance[[i for i in fit.residual_variance.index if i.startswith("t03")]]
    assert noisy.min() > fit.residual_variance.drop(noisy.index).max()
    assert "Residual variance by stratum" in fit.summary()
    table = irm.compare_models(irm.mixed("score ~ system + (1|topic/system)", data), fit,
                               refit=False)
    assert table["df"].iloc[1] == 15 and table["p"].iloc[1] < 1e-3


# -- bad input -----------------------------------------------------------------------------------


def test_one_level_random_factor(rng: np.random.Generator) -> None:
    data = _design(rng)
    data["shard"] = "h1"
    with pytest.raises(DesignError, match=r"\(1\|shard\) has 1 level"):
        irm.mixed("score ~ system + (1|topic) + (1|shard)", data)


def test_random_confounded_with_fixed(rng: np.random.Generator) -> None:
    with pytest.raises(DesignError, match="confounded with the fixed term system"):
        irm.mixed("score ~ system + (1|system)", _design(rng))


def test_one_observation_per_level(rng: np.random.Generator) -> None:
    data = _design(rng, reps=1)
    with pytest.raises(DesignError, match="one observation per level"):
        irm.mixed("score ~ system + (1|topic) + (1|topic:system)", data)


def test_degenerate_strata(rng: np.random.Generator) -> None:
    data = _design(rng, n_sys=2, n_top=6, reps=4)
    data.loc[(data["topic"] == "t02") & (data["system"] == "s1"), "score"] = 0.25
    data = data[~((data["topic"] == "t05") & (data["system"] == "s2") & (data["sample"] != "1"))]
    with pytest.raises(DesignError, match=r"2 residual strata .*t02:s1, t05:s2.*drop_degenerate"):
        irm.mixed("score ~ system + (1|topic)", data, residual="topic:system")
    with pytest.warns(DataQualityWarning, match="t02:s1, t05:s2"):
        fit = irm.mixed("score ~ system + (1|topic)", data, residual="topic:system",
                        drop_degenerate=True)
    assert fit.n_obs == len(data) - 5
    assert "t02:s1" not in fit.residual_variance.index


def test_bad_arguments(rng: np.random.Generator) -> None:
    data = _design(rng)
    with pytest.raises(irm.ArgumentError, match="method"):
        irm.mixed("score ~ system + (1|topic)", data, method="OLS")  # type: ignore[arg-type]
    with pytest.raises(FormulaError, match="random term"):
        irm.mixed("score ~ system", data)
    with pytest.raises(FormulaError, match="residual"):
        irm.mixed("score ~ system + (1|topic)", data, residual="topic:sytem")
    with pytest.raises(ModelError, match="two or more"):
        irm.compare_models(irm.mixed("score ~ system + (1|topic)", data))
    m1 = irm.mixed("score ~ system + (1|topic)", data)
    m0 = irm.mixed("score ~ (1|topic)", data)
    with pytest.raises(ModelError, match="refit=True"):
        irm.compare_models(m0, m1, refit=False)
    with pytest.raises(DesignError, match="different data"):
        irm.compare_models(m1, irm.mixed("score ~ system + (1|topic)", data.iloc[:-3]))


def test_boundary_fit_is_not_a_failure(rng: np.random.Generator) -> None:
    data = _design(rng, s_ts=0.0, s_e=0.0, n_top=5, reps=2)
    # cell means exactly additive (no topic:system variation), replicates spread by +-e
    e = rng.uniform(0.05, 0.2, len(data) // 2)
    data["score"] = data["score"] + np.repeat(e, 2) * np.tile([1.0, -1.0], len(e))
    with pytest.warns(BoundaryFitWarning, match="topic:system.*not a failed convergence"):
        fit = irm.mixed("score ~ system + (1|topic) + (1|topic:system)", data)
    assert fit.boundary and fit.boundary_components == ("topic:system",)
    assert fit.converged and not fit.closed_form
    assert fit.variance_components().loc["topic:system", "variance"] == 0.0


def test_non_convergence_warns(rng: np.random.Generator) -> None:
    data = _design(rng).iloc[:-4]  # unbalanced: iterative
    with pytest.warns(ConvergenceWarning, match="did not converge.*maxiter"):
        fit = irm.mixed("score ~ system + (1|topic) + (1|topic:system)", data, maxiter=1)
    assert not fit.converged


# -- properties ----------------------------------------------------------------------------------


def test_gradient_matches_finite_differences(rng: np.random.Generator) -> None:
    data = _design(rng, n_sys=2, n_top=5, reps=4).iloc[:-2]
    spec = resolve_spec("score ~ system + (1|topic) + (1|topic:system)", list(data.columns))
    design, _ = _build(spec, data, ("topic", "system"), False)
    pb, _ = _problem(design)
    x = np.concatenate([[0.7, 0.4], rng.normal(0, 0.3, pb.n_strata - 1)])
    for reml in (True, False):
        g = _reml.evaluate(pb, x[:2], x[2:], reml, gradient=True).gradient
        num = np.zeros_like(x)
        for j in range(x.size):
            e = np.zeros_like(x)
            e[j] = 1e-6
            fp = _reml.evaluate(pb, (x + e)[:2], (x + e)[2:], reml).deviance
            fm = _reml.evaluate(pb, (x - e)[:2], (x - e)[2:], reml).deviance
            num[j] = (fp - fm) / 2e-6
        assert np.allclose(g, num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_closed_form_is_a_stationary_point(rng: np.random.Generator, method: str) -> None:
    data = _design(rng, n_sys=3, n_top=8, reps=3)
    spec = resolve_spec("score ~ system + (1|topic) + (1|topic:system)", list(data.columns))
    design, _ = _build(spec, data, None, False)
    pb, order = _problem(design)
    theta, _ = _closed_form(design, pb, order, method == "REML")
    assert theta is not None
    g = _reml.evaluate(pb, theta, None, method == "REML", gradient=True).gradient
    assert np.max(np.abs(g)) < 1e-7
    # and iterating from elsewhere reaches it
    from scipy import optimize

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f = _reml.evaluate(pb, x, None, method == "REML", gradient=True)
        return f.deviance, f.gradient

    res = optimize.minimize(
        fun, np.ones(2), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 2,
        options={"ftol": 1e-15, "gtol": 1e-10})
    assert np.allclose(res.x, theta, rtol=1e-5)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shift=st.floats(-5, 5), scale=st.floats(0.1, 10), seed=st.integers(0, 10_000),
       drop=st.integers(0, 5))
def test_invariances(shift: float, scale: float, seed: int, drop: int) -> None:
    """Shifting the scores moves only the intercept; scaling by c scales variances by c^2 and
    moves the REML log-likelihood by -(n - p) log c; row order does not matter."""
    rng = np.random.default_rng(seed)
    data = _design(rng, n_sys=3, n_top=6, reps=2)
    data = data.drop(index=rng.choice(len(data), drop, replace=False)).reset_index(drop=True)
    f = "score ~ system + (1|topic)"
    base = _quiet(f, data)
    moved = data.assign(score=data["score"] * scale + shift)
    fit = _quiet(f, moved)
    assert np.allclose(fit.variance_components()["variance"],
                       base.variance_components()["variance"] * scale**2, rtol=1e-5, atol=1e-12)
    p = len(base.fixed_estimates)
    assert fit.loglik == pytest.approx(base.loglik - (base.n_obs - p) * np.log(scale), abs=1e-6)
    assert fit.fixed_estimates.iloc[0] == pytest.approx(
        base.fixed_estimates.iloc[0] * scale + shift, abs=1e-5 * scale)
    perm = _quiet(f, data.sample(frac=1.0, random_state=seed))
    assert perm.loglik == pytest.approx(base.loglik, abs=1e-7)


def test_tukey_unbalanced_uses_covariance_matrix(rng: np.random.Generator) -> None:
    pytest.importorskip("irmodels.inference.tukey")
    data = _design(rng, n_sys=4, n_top=8, reps=3).iloc[:-5]
    fit = irm.mixed("score ~ system + (1|topic/system)", data)
    cov = fit.marginal_means_cov("system").to_numpy()
    hsd = fit.tukey("system")
    mm = fit.marginal_means("system")
    row = hsd.pairs.iloc[-1]
    a, b = list(mm.index).index(row["a"]), list(mm.index).index(row["b"])
    se = np.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
    assert abs(row["diff"]) == pytest.approx(abs(mm.iloc[a] - mm.iloc[b]))
    assert row["q"] == pytest.approx(np.sqrt(2) * abs(row["diff"]) / se, rel=1e-9)
    with pytest.raises(ModelError, match="convention"):
        fit.information_criterion("SAS")  # type: ignore[arg-type]


# -- degenerate responses: an error, never a p-value ---------------------------------------------


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_constant_response_is_refused(method: str) -> None:
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin(["sys1", "sys2", "sys3"])].assign(score=0.5)
    with pytest.raises(DesignError, match="response score is constant .150 values, all 0.5"):
        irm.mixed("score ~ system + (1|topic)", data, method=method)


@pytest.mark.parametrize("topic_effect", [0.0, 0.01])
def test_exact_fit_is_refused(topic_effect: float) -> None:
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin(["sys1", "sys2", "sys3"])].copy()
    shift = data["system"].map({"sys1": 0.0, "sys2": 0.1, "sys3": 0.2}).astype(float)
    data["score"] = 0.5 + shift + topic_effect * data["topic"].astype(int)
    with pytest.raises(DesignError, match="reproduces the response exactly"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundaryFitWarning)
            irm.mixed("score ~ system + (1|topic)", data)


@pytest.mark.parametrize("scale", [1e150, 1e300, 1e-150])
def test_extreme_magnitudes_are_refused(scale: float) -> None:
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
    with pytest.raises(DataFormatError, match="Rescale it"):
        irm.mixed("score ~ system + (1|topic)", data.assign(score=data["score"] * scale))


def test_small_but_varying_scores_are_not_constant() -> None:
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
    small = irm.mixed("score ~ system + (1|topic)", data.assign(score=data["score"] * 1e-20))
    ref = irm.mixed("score ~ system + (1|topic)", data)
    assert np.allclose(small.fixed["p"], ref.fixed["p"], rtol=1e-8)
    assert np.allclose(small.fixed["estimate"], ref.fixed["estimate"] * 1e-20, rtol=1e-10)
