"""Inference on GLMMs against R (tests/reference/glmer_inference.R -> glmer_inference.json):
likelihood-ratio tests (anova(m0, m1) for glmer and glmmTMB), confint (Wald, profile,
parametric bootstrap) and the R2 / ICC of Nakagawa, Johnson & Schielzeth (2017).

Tolerances: logLik, AIC, BIC and the LR statistic 1e-5 (the fits agree with glmer/glmmTMB to
1e-6 in logLik); Wald bounds 1e-5 (the SEs' tolerance); profile bounds 1e-6 against the exact
profile of glmer's deviance solved in R (irmodels reaches ~1e-9) and 2e-3 against lme4's own
spline-interpolated confint; R2/ICC 1e-8 at R's estimates (the formulas) and 1e-5 from the fits.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import glmm_data
import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import (
    ArgumentError,
    BoundaryFitWarning,
    DataFormatError,
    DesignError,
    ModelError,
)
from irmodels.models._glmm_inference import distribution_variance, r2_parts

REF = Path(__file__).resolve().parents[1] / "reference"
R = json.loads((REF / "glmer_inference.json").read_text())


_cbpp = glmm_data.cbpp


_p10 = glmm_data.p10


def _beta_ap() -> pd.DataFrame:
    d = pd.read_csv(REF / "data" / "glmm" / "beta_ap.csv", dtype={"topic": str, "system": str})
    for c in ("topic", "system"):
        d[c] = pd.Categorical(d[c], categories=list(dict.fromkeys(d[c])))
    return d


def _data(src: str, shared_data: Path) -> pd.DataFrame:
    if src == "cbpp":
        return _cbpp()
    if src == "p10":
        return _p10(shared_data)
    if src == "beta_ap":
        return _beta_ap()
    return pd.read_csv(REF / "data" / "glmm" / f"{src}.csv")


_FITS: dict[tuple, object] = {}


def _fit(formula: str, src: str, shared_data: Path, **kw):
    key = (formula, src, tuple(sorted(kw.items())))
    if key not in _FITS:
        _FITS[key] = irm.mixed(formula, _data(src, shared_data), **kw)
    return _FITS[key]


CBPP = dict(family="binomial", trials="size")
P10 = dict(family="binomial", trials=10)
POIS = dict(family="poisson", offset="log_depth")
BETA = dict(family="beta")

LRT = {
    "cbpp_period": ("cbpp", "incidence ~ 1 + (1|herd)", "incidence ~ C(period) + (1|herd)",
                    CBPP),
    "p10_system": ("p10", "rel ~ 1 + (1|topic)", "rel ~ system + (1|topic)", P10),
    "p10_system_re": ("p10", "rel ~ 1 + (1|topic)", "rel ~ 1 + (1|topic) + (1|system)", P10),
    "poisson_system": ("poisson_depth", "rel ~ 1 + (1|topic)", "rel ~ system + (1|topic)", POIS),
    "beta_system": ("beta_ap", "ap ~ 1 + (1|topic)", "ap ~ system + (1|topic)", BETA),
}


# --------------------------------------------------------------------------------------------
# likelihood-ratio tests


@pytest.mark.parametrize("name", sorted(LRT))
def test_lrt_against_r(name, shared_data):
    src, f0, f1, kw = LRT[name]
    m0, m1 = _fit(f0, src, shared_data, **kw), _fit(f1, src, shared_data, **kw)
    ref = R["lrt"][name]
    tab = irm.compare_models(m1, m0)  # any order: rows ordered by parameters, as R
    assert list(tab.columns) == ["loglik", "aic", "bic", "statistic", "df", "p", "npar",
                                 "likelihood"]
    assert list(tab["npar"]) == ref["npar"]
    np.testing.assert_allclose(tab["loglik"], ref["logLik"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(tab["aic"], ref["AIC"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(tab["bic"], ref["BIC"], rtol=0, atol=1e-5)
    assert math.isnan(tab["statistic"].iloc[0]) and math.isnan(tab["p"].iloc[0])
    assert tab["statistic"].iloc[1] == pytest.approx(ref["Chisq"], abs=2e-5)
    assert tab["df"].iloc[1] == ref["Df"]
    assert tab["p"].iloc[1] == pytest.approx(ref["p"], rel=1e-4)
    assert set(tab["likelihood"]) == {"ML"}
    assert tab.attrs["approximation"] == "Laplace"
    assert list(tab.index) == [str(m0.spec), str(m1.spec)]


def test_lrt_refusals(shared_data):
    d = _cbpp()
    m1 = _fit("incidence ~ C(period) + (1|herd)", "cbpp", shared_data, **CBPP)
    m0 = _fit("incidence ~ 1 + (1|herd)", "cbpp", shared_data, **CBPP)
    with pytest.raises(ModelError, match="two or more"):
        irm.compare_models(m1)
    probit = irm.mixed("incidence ~ 1 + (1|herd)", d, family="binomial", trials="size",
                       link="probit")
    with pytest.raises(ModelError, match="different families or links"):
        irm.compare_models(probit, m1)
    agq = irm.mixed("incidence ~ 1 + (1|herd)", d, family="binomial", trials="size", nagq=5)
    with pytest.raises(ModelError, match="different nagq"):
        irm.compare_models(agq, m1)
    sub = irm.mixed("incidence ~ 1 + (1|herd)", d.iloc[:50], family="binomial", trials="size")
    with pytest.raises(DesignError, match="different data.*50 and 56 observations"):
        irm.compare_models(sub, m1)
    d2 = d.copy()
    d2["size"] = d2["size"] + 1
    more = irm.mixed("incidence ~ 1 + (1|herd)", d2, family="binomial", trials="size")
    with pytest.raises(DesignError, match="response values or trials"):
        irm.compare_models(more, m1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)  # herd's variance at 0 here
        lmm = irm.mixed("incidence ~ C(period) + (1|herd)", d)
    with pytest.raises(ModelError, match="MixedResult.*different family"):
        irm.compare_models(m0, lmm)
    # not nested: period fixed against herd-only random structure swapped for another factor
    d3 = d.copy()
    d3["block"] = (d3.index % 4).astype(str)
    a = irm.mixed("incidence ~ C(period) + (1|herd)", d3, family="binomial", trials="size")
    b = irm.mixed("incidence ~ 1 + (1|block)", d3, family="binomial", trials="size")
    with pytest.raises(ModelError, match=r"not nested.*\(\(Intercept\) \| block\)"):
        irm.compare_models(a, b)
    c = irm.mixed("incidence ~ C(block) + (1|herd)", d3, family="binomial", trials="size")
    with pytest.raises(ModelError, match="same number of parameters"):
        irm.compare_models(a, c)
    e = irm.mixed("incidence ~ C(block) + C(period) + (1|herd)", d3, family="binomial",
                  trials="size")
    f = irm.mixed("incidence ~ C(block) + (1|herd) + (1|period)", d3, family="binomial",
                  trials="size")
    with pytest.raises(ModelError, match="fixed effects are not a subset"):
        irm.compare_models(a, f)  # period fixed (5 parameters) is not nested in block fixed
    assert irm.compare_models(a, e)["df"].iloc[1] == 3  # block added to period: nested


def test_lrt_three_models(shared_data):
    m0 = _fit("rel ~ 1 + (1|topic)", "p10", shared_data, **P10)
    m1 = _fit("rel ~ 1 + (1|topic) + (1|system)", "p10", shared_data, **P10)
    m2 = _fit("rel ~ system + (1|topic)", "p10", shared_data, **P10)
    with pytest.raises(ModelError, match="not nested"):  # (1|system) not in m2
        irm.compare_models(m0, m1, m2)


# --------------------------------------------------------------------------------------------
# confidence intervals (cbpp)


@pytest.fixture(scope="module")
def cbpp_fit():
    return irm.mixed("incidence ~ C(period) + (1|herd)", _cbpp(), **CBPP)


@pytest.mark.parametrize("which,level", [("wald", 0.95), ("wald90", 0.9)])
def test_wald_against_r(cbpp_fit, which, level):
    ref = R["confint"][which]
    ci = cbpp_fit.confint(method="wald", level=level)
    assert list(ci.columns) == ["lower", "upper"] and ci.index.name == "parameter"
    assert list(ci.index) == ["herd", "(Intercept)", "period2", "period3", "period4"]
    assert ci.iloc[0].isna().all() and ref["lower"][0] == "NA"
    np.testing.assert_allclose(ci["lower"].iloc[1:], ref["lower"][1:], rtol=0, atol=1e-5)
    np.testing.assert_allclose(ci["upper"].iloc[1:], ref["upper"][1:], rtol=0, atol=1e-5)


def test_profile_against_r(cbpp_fit):
    ci = cbpp_fit.confint()
    exact = R["confint"]["profile_exact"]
    np.testing.assert_allclose(ci["lower"], exact["lower"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(ci["upper"], exact["upper"], rtol=0, atol=1e-6)
    # lme4's own confint interpolates a spline through the profile: ~1e-4 here
    for which in ("profile", "profile_fine"):
        ref = R["confint"][which]
        np.testing.assert_allclose(ci["lower"], ref["lower"], rtol=0, atol=2e-3)
        np.testing.assert_allclose(ci["upper"], ref["upper"], rtol=0, atol=2e-3)
    # the profile is asymmetric where Wald is not: its interval is shifted down for period4
    wald = cbpp_fit.confint(method="wald")
    assert ci.loc["period4", "lower"] < wald.loc["period4", "lower"] - 0.05
    part = cbpp_fit.confint(parm="period2", level=0.9)
    assert list(part.index) == ["period2"]
    assert ci.loc["period2", "lower"] < part.loc["period2", "lower"] < -0.992
    assert -0.992 < part.loc["period2", "upper"] < ci.loc["period2", "upper"]


def test_bootstrap_near_profile(cbpp_fit):
    """Parametric bootstrap (seed 1, 100 refits): each fixed-effect bound within 15% of the
    profile interval's width of the profile bound; the SD's (biased low by the bootstrap, as
    bootMer's) within 30%."""
    boot = cbpp_fit.confint(method="bootstrap", n_resamples=100, seed=1)
    ex = R["confint"]["profile_exact"]
    prof = np.c_[ex["lower"], ex["upper"]]
    width = prof[:, 1] - prof[:, 0]
    rel = np.abs(boot.to_numpy() - prof) / width[:, None]
    assert rel[0].max() < 0.3
    assert rel[1:].max() < 0.15
    assert list(boot.index) == list(cbpp_fit.confint(method="wald").index)


def test_bootstrap_seeded_and_backends(cbpp_fit):
    from irmodels.models._glmm_confint import bootstrap_draws

    a = bootstrap_draws(cbpp_fit, 4, seed=7)
    b = bootstrap_draws(cbpp_fit, 4, seed=7, backend="processes", n_workers=2)
    c = bootstrap_draws(cbpp_fit, 4, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.to_numpy(), c.to_numpy())
    assert a.shape == (4, 5) and a.notna().all().all()
    assert (a["herd"] >= 0).all()


def test_bootstrap_draws_poisson_and_beta(shared_data):
    """Every family simulates and refits: Poisson counts with the offset, beta scores in (0, 1)
    (phi re-estimated on its own scale, near the fit's)."""
    from irmodels.models._glmm_confint import bootstrap_draws, simulate_response

    pois = _fit("rel ~ system + (1|topic)", "poisson_depth", shared_data, **POIS)
    y = simulate_response(pois, np.random.default_rng(0))
    assert np.all(y >= 0) and np.all(y == np.round(y))
    dp = bootstrap_draws(pois, 3, seed=2)
    assert dp.notna().all().all() and list(dp.columns) == ["topic", *pois.fixed_estimates.index]
    beta = _fit("ap ~ 1 + (1|topic)", "beta_ap", shared_data, **BETA)
    yb = simulate_response(beta, np.random.default_rng(0))
    assert np.all((yb > 0) & (yb < 1))
    db = bootstrap_draws(beta, 3, seed=2)
    assert list(db.columns) == ["topic", "(Intercept)", "phi"] and db.notna().all().all()
    assert np.all(np.abs(np.log(db["phi"] / beta.phi)) < 0.5)


def test_simulated_response_has_the_fits_moments(cbpp_fit):
    from irmodels.models._glmm_confint import simulate_response

    rng = np.random.default_rng(3)
    sims = np.array([simulate_response(cbpp_fit, rng) for _ in range(400)])
    size = _cbpp()["size"].to_numpy()
    assert np.all((sims >= 0) & (sims <= size)) and np.all(sims == np.round(sims))
    # marginal mean proportion: E[linkinv(eta + b)] with b ~ N(0, sd^2), within 3 SE
    eta = cbpp_fit._design.lmm.X @ cbpp_fit.fixed_estimates.to_numpy()
    z = np.random.default_rng(4).standard_normal(20000)
    sd = float(cbpp_fit.theta[0])
    expect = np.mean(1 / (1 + np.exp(-(eta[:, None] + sd * z[None, :]))), axis=1) * size
    se = sims.std(axis=0) / math.sqrt(len(sims))
    assert np.all(np.abs(sims.mean(axis=0) - expect) < 4 * se + 1e-9)


def test_profile_with_quadrature_and_nagq0():
    """nAGQ = 10: the profile of the quadrature deviance brackets the estimates and is close
    to the Laplace one (cbpp's herd effects are well approximated); nAGQ = 0 is refused."""
    d = _cbpp()
    agq = irm.mixed("incidence ~ C(period) + (1|herd)", d, nagq=10, **CBPP)
    lo, hi = agq.confint(parm="herd").loc["herd"]
    assert lo < float(agq.theta[0]) < hi
    ex = R["confint"]["profile_exact"]
    assert lo == pytest.approx(ex["lower"][0], abs=0.05)
    assert hi == pytest.approx(ex["upper"][0], abs=0.05)
    zero = irm.mixed("incidence ~ C(period) + (1|herd)", d, nagq=0, **CBPP)
    with pytest.raises(ArgumentError, match="nagq=0.*method='wald' or 'bootstrap'"):
        zero.confint()
    assert zero.confint(method="wald").shape == (5, 2)


def test_confint_arguments(cbpp_fit):
    with pytest.raises(ArgumentError, match="method must be.*did you mean 'profile'"):
        cbpp_fit.confint(method="profil")
    with pytest.raises(ArgumentError, match="level"):
        cbpp_fit.confint(method="wald", level=1.5)
    with pytest.raises(DataFormatError, match="unknown parameter.*'sigma'"):
        cbpp_fit.confint(method="wald", parm=["sigma"])
    with pytest.raises(ArgumentError, match="n_resamples"):
        cbpp_fit.confint(method="bootstrap", n_resamples=1)


def test_profile_with_a_random_slope(shared_data):
    """lme4's SD/correlation parametrisation: against its spline-interpolated confint (2e-3;
    the correlation's profile stays below the critical value on both sides: -1 and 1). The
    deviance has a minimum on each side of the correlation: the profile of the intercept's SD
    must find the lower one (1.202 where a single warm start stops at 1.150)."""
    fit = _fit("succ ~ x + (1 + x|g)", "binom_slopes", shared_data, family="binomial",
               trials="n")
    names = ["sd_(Intercept)|g", "cor_x.(Intercept)|g", "x"]  # sd_x|g's lower limit: 0
    ci = fit.confint(parm=names)
    ref = R["confint"]["profile_slopes"]
    assert ref["parameter"] == ["sd_(Intercept)|g", "cor_x.(Intercept)|g", "sd_x|g",
                                "(Intercept)", "x"]
    rows = [ref["parameter"].index(n) for n in names]
    assert list(ci.index) == names
    np.testing.assert_allclose(ci["lower"], np.array(ref["lower"])[rows], rtol=0, atol=2e-3)
    np.testing.assert_allclose(ci["upper"], np.array(ref["upper"])[rows], rtol=0, atol=2e-3)
    assert list(ci.loc["cor_x.(Intercept)|g"]) == [-1.0, 1.0]


def test_profile_of_slopes_and_beta_names(shared_data):
    fit = _fit("succ ~ x + (1 + x|g)", "binom_slopes", shared_data, family="binomial",
               trials="n")
    ci = fit.confint(method="wald")
    assert list(ci.index) == ["sd_(Intercept)|g", "cor_x.(Intercept)|g", "sd_x|g",
                              "(Intercept)", "x"]
    beta = _fit("ap ~ system + (1|topic)", "beta_ap", shared_data, **BETA)
    ci = beta.confint(method="wald")
    assert ci.index[0] == "topic" and ci.index[-1] == "phi" and ci.loc["phi"].isna().all()


def test_profile_beta_phi(shared_data):
    """The beta fit's profile for the precision: phi inside its interval, which brackets the
    point where the deviance has risen by z^2 (checked by re-evaluating the profile)."""
    from irmodels.models._glmm_confint import _Profile

    beta = _fit("ap ~ 1 + (1|topic)", "beta_ap", shared_data, **BETA)
    ci = beta.confint(parm=["phi"])
    lo, hi = ci.loc["phi"]
    assert lo < beta.phi < hi
    pf = _Profile(beta)
    k = len(pf.p_hat) - 1
    z2 = 1.959963984540054 ** 2
    assert pf.at(k, math.log(hi)) - pf.dev_hat == pytest.approx(z2, abs=1e-4)


# --------------------------------------------------------------------------------------------
# R2 and ICC


R2_CASES = {
    "cbpp_logit": ("incidence ~ C(period) + (1|herd)", "cbpp", CBPP),
    "cbpp_probit": ("incidence ~ C(period) + (1|herd)", "cbpp", dict(CBPP, link="probit")),
    "p10_topic": ("rel ~ system + (1|topic)", "p10", P10),
    "p10_crossed": ("rel ~ 1 + (1|topic) + (1|system)", "p10", P10),
    "binom_slopes": ("succ ~ x + (1 + x|g)", "binom_slopes", dict(family="binomial",
                                                                  trials="n")),
}


@pytest.mark.parametrize("name", sorted(R2_CASES))
def test_r2_binomial_against_r(name, shared_data):
    formula, src, kw = R2_CASES[name]
    ref = R["r2"][name]
    # the formulas at R's estimates, to 1e-8
    vd = distribution_variance("binomial", kw.get("link", "logit"), "theoretical")
    p = r2_parts(ref["var_fixed"], np.atleast_1d(ref["var_components"]), vd)
    for key in ("r2_marginal", "r2_conditional", "icc_adjusted", "icc_conditional"):
        assert p[key] == pytest.approx(ref[key], abs=1e-8)
    assert vd == pytest.approx(ref["var_dist"], abs=1e-12)
    # from the fit, to the estimates' tolerance
    fit = _fit(formula, src, shared_data, **kw)
    r2 = fit.r2()
    assert list(r2.columns) == ["marginal", "conditional", "var_fixed", "var_random",
                                "var_distribution", "method"]
    assert r2["marginal"].iloc[0] == pytest.approx(ref["r2_marginal"], abs=1e-5)
    assert r2["conditional"].iloc[0] == pytest.approx(ref["r2_conditional"], abs=1e-5)
    assert r2["var_random"].iloc[0] == pytest.approx(ref["var_random"], rel=1e-5)
    assert r2["var_fixed"].iloc[0] == pytest.approx(ref["var_fixed"], rel=1e-5)
    icc = fit.icc()
    assert list(icc.columns) == ["variance", "icc_adjusted", "icc_conditional"]
    assert icc.index[-1] == "total"
    np.testing.assert_allclose(icc["icc_adjusted"].iloc[:-1], ref["icc_components"], atol=1e-5)
    assert icc.loc["total", "icc_adjusted"] == pytest.approx(ref["icc_adjusted"], abs=1e-5)
    assert icc.loc["total", "icc_conditional"] == pytest.approx(ref["icc_conditional"],
                                                                abs=1e-5)
    np.testing.assert_allclose(icc["variance"].iloc[:-1], ref["var_components"], rtol=1e-5)


@pytest.mark.parametrize("method", ["lognormal", "delta", "trigamma"])
def test_r2_poisson_against_r(method, shared_data):
    ref = R["r2"]["poisson_offset"]
    vd = distribution_variance("poisson", "log", method, mean=ref["lambda"])
    assert vd == pytest.approx(ref[method]["var_dist"], abs=1e-10)
    p = r2_parts(ref[method]["var_fixed"], np.atleast_1d(ref[method]["var_components"]), vd)
    for key in ("r2_marginal", "r2_conditional", "icc_adjusted", "icc_conditional"):
        assert p[key] == pytest.approx(ref[method][key], abs=1e-8)
    fit = _fit("rel ~ system + (1|topic)", "poisson_depth", shared_data, **POIS)
    r2 = fit.r2(method=method if method != "lognormal" else None)
    assert r2["method"].iloc[0] == method
    assert r2["var_distribution"].iloc[0] == pytest.approx(ref[method]["var_dist"], abs=1e-5)
    assert r2["marginal"].iloc[0] == pytest.approx(ref[method]["r2_marginal"], abs=1e-5)
    assert r2["conditional"].iloc[0] == pytest.approx(ref[method]["r2_conditional"], abs=1e-5)
    assert fit.icc(method)["icc_adjusted"].iloc[-1] == pytest.approx(
        ref[method]["icc_adjusted"], abs=1e-5)


@pytest.mark.parametrize("method", ["trigamma", "delta"])
def test_r2_beta_against_glmmtmb(method, shared_data):
    ref = R["r2"]["beta_ap"]
    vd = distribution_variance("beta", "logit", method, mean=ref["mu_null"], phi=ref["phi"])
    assert vd == pytest.approx(ref[method]["var_dist"], abs=1e-10)
    fit = _fit("ap ~ system + (1|topic)", "beta_ap", shared_data, **BETA)
    r2 = fit.r2(method)
    for col, key in (("marginal", "r2_marginal"), ("conditional", "r2_conditional"),
                     ("var_distribution", "var_dist"), ("var_random", "var_random")):
        assert r2[col].iloc[0] == pytest.approx(ref[method][key], abs=1e-5)


def test_r2_refusals(shared_data):
    fit = _fit("incidence ~ C(period) + (1|herd)", "cbpp", shared_data, **CBPP)
    with pytest.raises(ArgumentError, match="does not apply to the binomial family"):
        fit.r2("lognormal")
    pois = _fit("rel ~ system + (1|topic)", "poisson_depth", shared_data, **POIS)
    with pytest.raises(ArgumentError, match="did you mean 'delta'"):
        pois.r2("delt")
    with pytest.raises(ModelError, match="logit, probit or cloglog"):
        distribution_variance("binomial", "identity", "theoretical")
