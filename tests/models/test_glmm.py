"""irm.mixed(family=...): the GlmmResult face, refusals of bad input, and the engine's pieces."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.models._glmm import gh_rule, glmm_design
from irmodels.models.glmm import GlmmResult


def _data(seed: int = 1, topics: int = 12, systems: int = 4, trials: int = 10) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 0.7, topics)
    a = np.linspace(-0.6, 0.6, systems)
    rows = []
    for t in range(topics):
        for s in range(systems):
            p = 1 / (1 + np.exp(-(a[s] + b[t])))
            rows.append((f"t{t:02d}", f"s{s}", int(rng.binomial(trials, p)), trials,
                         float(rng.uniform(0, 1))))
    return pd.DataFrame(rows, columns=["topic", "system", "rel", "n", "x"])


@pytest.fixture(scope="module")
def fit() -> GlmmResult:
    return irm.mixed("rel ~ system + (1|topic)", _data(), family="binomial", trials=10)


def test_result_face(fit):
    assert isinstance(fit, GlmmResult) and isinstance(fit, irm.models.base.FittedModel)
    assert fit.family == "binomial" and fit.link == "logit" and fit.nagq == 1
    assert fit.phi is None and fit.nobs == 48 and fit.df_resid == 48 - 5
    assert list(fit.fixed.columns) == ["estimate", "se", "z", "p"]
    np.testing.assert_allclose(fit.fixed["z"], fit.fixed["estimate"] / fit.fixed["se"])
    np.testing.assert_allclose(fit.fixed["p"], 2 * stats.norm.sf(np.abs(fit.fixed["z"])))
    assert fit.aic == pytest.approx(-2 * fit.loglik + 2 * 5)
    assert fit.bic == pytest.approx(-2 * fit.loglik + 5 * np.log(48))
    assert repr(fit).startswith("<GlmmResult binomial(logit) rel ~ system + (1|topic) n=48")
    text = fit.summary()
    assert "Laplace approximation" in text and "Fixed effects" in text
    assert "\\begin{tabular}" in fit.to_latex()
    assert fit.opt_summary.converged and not fit.boundary and fit.notes == ()
    assert fit.vcov_method == "hessian"
    vc = fit.variance_components()
    assert list(vc.index) == ["topic"] and list(vc.columns) == ["variance", "sd"]
    assert vc["variance"].iloc[0] == pytest.approx(fit.theta[0] ** 2)


def test_fitted_residuals_and_predict(fit):
    d = fit.data
    mu = fit.fitted()
    y = d["rel"].to_numpy() / 10
    np.testing.assert_allclose(fit.residuals("response"), y - mu)
    np.testing.assert_allclose(fit.residuals("pearson"), (y - mu) * np.sqrt(10 / (mu * (1 - mu))))
    dev = fit.residuals("deviance")
    assert np.sum(dev ** 2) == pytest.approx(fit.deviance)
    eta = fit.fitted(scale="link")
    np.testing.assert_allclose(fit.residuals("working"), (y - mu) / (mu * (1 - mu)))
    np.testing.assert_allclose(fit.predict(), eta, atol=1e-12)
    np.testing.assert_allclose(fit.predict(scale="response"), mu, atol=1e-12)
    np.testing.assert_allclose(fit.predict(d.iloc[:5]), eta[:5], atol=1e-12)
    b = fit.random_effects["topic"]["(Intercept)"]
    X_beta = fit.predict(re_form="~0")
    np.testing.assert_allclose(eta - X_beta, b.loc[d["topic"]].to_numpy(), atol=1e-12)
    cm = fit.conditional_modes()
    assert list(cm.columns) == ["group", "effect", "level", "condval", "condsd"]
    assert (cm["condsd"] > 0).all() and (cm["condsd"] < fit.theta[0]).all()


def test_marginal_means_and_comparisons_on_the_link_scale(fit):
    mm = fit.marginal_means("system")
    est = fit.fixed["estimate"].to_numpy()
    np.testing.assert_allclose(mm.to_numpy(), est[0] + np.r_[0, est[1:]], atol=1e-12)
    resp = fit.marginal_means("system", scale="response")
    np.testing.assert_allclose(resp.to_numpy(), 1 / (1 + np.exp(-mm.to_numpy())))
    cov = fit.marginal_means_cov("system")
    assert cov.shape == (4, 4)
    assert np.all(np.isinf(fit.contrast_df(np.eye(4)[:2])))
    tk = fit.tukey()
    pair = tk.pairs.iloc[0]
    se = np.sqrt(cov.iloc[0, 0] + cov.iloc[1, 1] - 2 * cov.iloc[0, 1])
    assert abs(pair["diff"]) == pytest.approx(abs(mm.iloc[0] - mm.iloc[1]))
    # df = inf: the studentized range with infinite df (the range of k normals)
    assert pair["q"] == pytest.approx(np.sqrt(2) * abs(pair["diff"]) / se)
    dn = fit.dunnett("s0")
    z = (mm.iloc[1] - mm.iloc[0]) / np.sqrt(cov.iloc[0, 0] + cov.iloc[1, 1] - 2 * cov.iloc[0, 1])
    assert dn.table["statistic"].iloc[0] == pytest.approx(z)


def test_refit_and_nagq_variants(fit):
    same = fit._refit()
    assert same.loglik == pytest.approx(fit.loglik, abs=1e-8)
    d = fit.data
    sim = fit._refit(y=np.minimum(d["rel"].to_numpy() + 1, 10))
    assert sim.fixed["estimate"].iloc[0] > fit.fixed["estimate"].iloc[0]
    q = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10, nagq=7)
    assert q.nagq == 7
    np.testing.assert_allclose(q.fixed["estimate"], fit.fixed["estimate"], atol=0.02)
    z = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10, nagq=0)
    assert z.nagq == 0 and z.vcov_method == "RX"
    np.testing.assert_allclose(z.fixed["estimate"], fit.fixed["estimate"], atol=0.02)


def test_gh_rule_integrates_normal_moments():
    r = gh_rule(10)
    z, w = r[:, 0], r[:, 1]
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.sum(w * z ** 2) == pytest.approx(1.0, abs=1e-12)
    assert np.sum(w * z ** 4) == pytest.approx(3.0, abs=1e-11)
    np.testing.assert_allclose(r[:, 2], stats.norm.logpdf(z))


def test_poisson_offset_and_bernoulli_paths():
    d = _data(3)
    d["log_n"] = np.log(d["n"].astype(float))
    p = irm.mixed("rel ~ system + (1|topic)", d, family="poisson", offset="log_n")
    p0 = irm.mixed("rel ~ system + (1|topic)", d, family="poisson")
    # the offset log(10) is a shift of the intercept only
    assert p.fixed["estimate"].iloc[0] == pytest.approx(p0.fixed["estimate"].iloc[0] - np.log(10),
                                                        abs=1e-4)
    np.testing.assert_allclose(p.fixed["estimate"].iloc[1:], p0.fixed["estimate"].iloc[1:],
                               atol=1e-4)
    assert p.loglik == pytest.approx(p0.loglik, abs=1e-6)
    d["hit"] = (d["rel"] > 5).astype(int)
    b = irm.mixed("hit ~ system + (1|topic)", d, family="binomial", link="cloglog")
    assert b.link == "cloglog" and np.all((b.fitted() > 0) & (b.fitted() < 1))


def test_random_slopes_and_boundary_are_flagged():
    d = _data(5, topics=15)
    s = irm.mixed("rel ~ x + (1 + x|topic)", d, family="binomial", trials="n")
    vc = s.variance_components()
    assert vc.index.names == ["group", "effect"] and len(s.correlations()) == 1
    flat = d.assign(rel=np.tile([3, 4, 5, 6], 15))
    with pytest.warns(irm.BoundaryFitWarning, match="topic"):
        b = irm.mixed("rel ~ system + (1|topic)", flat, family="binomial", trials=10)
    assert b.boundary and b.boundary_components == ("topic",) and b.vcov_method == "RX"
    assert b.theta[0] == 0 and any("singular" in n for n in b.notes)


# -- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("change,kwargs,error,match", [
    (lambda d: d.assign(rel=d["rel"] + 0.5), dict(trials=10), irm.DataFormatError,
     "whole numbers"),
    (lambda d: d.assign(rel=d["rel"] + 11), dict(trials=10), irm.DataFormatError,
     "between 0 and the number of trials"),
    (lambda d: d.assign(n=0), dict(trials="n"), irm.DataFormatError, "trials must be whole"),
    (lambda d: d, dict(trials=0), irm.ArgumentError, "trials must be a whole number >= 1"),
    (lambda d: d, dict(trials="size"), irm.DataFormatError, "names a column the data lack"),
    (lambda d: d, dict(), irm.DataFormatError, "without trials= must be 0 or 1"),
    (lambda d: d.assign(rel=d["rel"].astype(float).where(d.index != 3)), dict(trials=10),
     irm.DataFormatError, "missing"),
    (lambda d: d, dict(trials=10, nagq=101), irm.ArgumentError, "nagq must be a whole number"),
    (lambda d: d, dict(trials=10, nagq=-1), irm.ArgumentError, "nagq"),
    (lambda d: d, dict(trials=10, nagq=True), irm.ArgumentError, "nagq"),
    (lambda d: d, dict(trials=10, link="logt"), irm.ArgumentError, "did you mean 'logit'"),
    (lambda d: d, dict(trials=10, residual="topic"), irm.ArgumentError, "Gaussian models only"),
    (lambda d: d, dict(trials=10, start={"topic": 1.0}), irm.ArgumentError, "start="),
    (lambda d: d, dict(trials=10, offset=3), irm.ArgumentError, "offset must be a column"),
])
def test_binomial_refusals(change, kwargs, error, match):
    with pytest.raises(error, match=match):
        irm.mixed("rel ~ system + (1|topic)", change(_data()), family="binomial", **kwargs)


def test_other_refusals():
    d = _data()
    with pytest.raises(irm.ArgumentError, match="did you mean 'poisson'"):
        irm.mixed("rel ~ system + (1|topic)", d, family="poison")
    with pytest.raises(irm.DataFormatError, match="must be >= 0"):
        irm.mixed("rel ~ system + (1|topic)", d.assign(rel=d["rel"] - 5), family="poisson")
    with pytest.raises(irm.ArgumentError, match="binomial family only"):
        irm.mixed("rel ~ system + (1|topic)", d, family="poisson", trials=10)
    with pytest.raises(irm.ArgumentError, match="generalised linear mixed models only"):
        irm.mixed("rel ~ system + (1|topic)", d, trials=10)
    with pytest.raises(irm.ArgumentError, match="generalised linear mixed models only"):
        irm.mixed("rel ~ system + (1|topic)", d, family="gaussian", nagq=5)
    with pytest.raises(irm.DesignError, match="single, scalar random-effects term"):
        irm.mixed("rel ~ 1 + (1|topic) + (1|system)", d, family="binomial", trials=10, nagq=5)
    with pytest.raises(irm.DesignError, match="single, scalar random-effects term"):
        irm.mixed("rel ~ x + (1 + x|topic)", d, family="binomial", trials=10, nagq=5)
    with pytest.raises(irm.DataFormatError, match="offset column 'o' has 1 missing"):
        irm.mixed("rel ~ system + (1|topic)", d.assign(o=np.r_[np.nan, np.zeros(47)]),
                  family="poisson", offset="o")


def test_gaussian_family_keeps_todays_path():
    d = _data().assign(score=lambda x: x["rel"] / 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.BoundaryFitWarning)
        a = irm.mixed("score ~ system + (1|topic)", d)
        b = irm.mixed("score ~ system + (1|topic)", d, family="gaussian")
    assert type(a) is type(b) and a.loglik == b.loglik


def test_missing_drop_with_family():
    d = _data()
    d.loc[2, "rel"] = np.nan
    with pytest.warns(irm.DataQualityWarning):
        f = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10,
                      missing="drop")
    assert f.nobs == 47 and f.n_dropped == 1


def test_design_rejects_non_frame():
    with pytest.raises(irm.DataFormatError, match="DataFrame"):
        glmm_design("rel ~ (1|topic)", [1, 2], family="binomial")


def test_iteration_limit_is_a_typed_convergence_warning():
    from irmodels.models._glmm import fit_glmm

    gd = glmm_design("rel ~ system + (1|topic)", _data(), family="binomial", trials=10)
    with pytest.warns(irm.ConvergenceWarning, match="did not converge"):
        res = fit_glmm(gd, maxiter=1)
    assert not res.converged


def test_method_reml_is_refused_for_a_glmm_and_ml_accepted():
    """A GLMM is a maximum-likelihood fit: method='REML' was silently ignored; now refused,
    and method='ML' (or omitted) gives the same fit."""
    d = pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(8)], 3),
                      "system": np.tile(["a", "b", "c"], 8),
                      "rel": [1, 4, 6, 0, 3, 5, 2, 5, 8, 1, 2, 4, 3, 6, 9, 0, 1, 3, 2, 4, 7,
                              1, 5, 5]})
    with pytest.raises(irm.ArgumentError, match="method='REML' does not apply to a binomial"):
        irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10, method="REML")
    with pytest.raises(irm.ArgumentError, match="method must be 'REML' or 'ML'"):
        irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10, method="ml")
    a = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10, method="ML")
    b = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
    assert a.loglik == b.loglik
