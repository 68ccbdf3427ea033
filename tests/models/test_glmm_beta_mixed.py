"""irm.mixed(..., family="beta") against glmmTMB's beta_family (tests/reference/glmmtmb_beta.json):
the GlmmResult's estimates, SEs, phi, logLik, AIC/BIC, variance components, conditional modes,
fitted values, marginal means on both scales and Tukey pairs as emmeans; squeeze=."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.models._family_beta import squeeze

FITS = ["intercepts", "probit", "cloglog", "squeezed", "crossed", "slope"]


@pytest.fixture(scope="module")
def fixture(reference_dir):
    return json.loads((reference_dir / "glmmtmb_beta.json").read_text())


@pytest.fixture(scope="module")
def fits(fixture, reference_dir):
    out = {}
    for name in FITS:
        f = fixture["fits"][name]
        d = pd.read_csv(reference_dir / "data" / "glmm" / f"{f['data']}.csv",
                        dtype={"topic": str, "system": str})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # none of these fits is singular or unconverged
            out[name] = irm.mixed(f["formula"], d, family="beta", link=f["link"],
                                  squeeze=f["squeeze"])
    return out


def _factor(f):
    return f["formula"].split("~")[1].split("+")[0].strip()


@pytest.mark.parametrize("name", FITS)
def test_fit_summaries_match_glmmtmb(fits, fixture, name):
    f, g = fixture["fits"][name], fits[name]
    assert g.family == "beta" and g.link == f["link"] and g.converged
    assert g.phi == pytest.approx(f["phi"], rel=1e-5)
    assert g.loglik == pytest.approx(f["logLik"], abs=1e-5)
    assert g.aic == pytest.approx(f["AIC"], abs=2e-5)
    assert g.bic == pytest.approx(f["BIC"], abs=2e-5)
    assert g.df_resid == f["df_residual"] and g.nobs == f["nobs"]
    fx = g.fixed
    assert list(fx.index) == f["fixed"]["names"]
    np.testing.assert_allclose(fx["estimate"], f["fixed"]["estimate"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fx["se"], f["fixed"]["se"], rtol=1e-5)
    np.testing.assert_allclose(fx["z"], fx["estimate"] / fx["se"], rtol=1e-12)
    np.testing.assert_allclose(g.vcov.to_numpy(), f["vcov"], rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(g.fitted(), f["fitted"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g.residuals(type="response"), g._design.y - g.fitted(),
                               rtol=1e-14)


@pytest.mark.parametrize("name", FITS)
def test_variance_components_and_modes_match_glmmtmb(fits, fixture, name):
    f, g = fixture["fits"][name], fits[name]
    vc = g.variance_components()
    for grp, r in f["varcorr"].items():
        cov = np.atleast_2d(r["cov"])
        terms = np.atleast_1d(r["terms"])
        if len(terms) == 1:
            assert vc.loc[grp, "variance"] == pytest.approx(cov[0, 0], rel=1e-5)
            assert vc.loc[grp, "sd"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-5)
        else:
            np.testing.assert_allclose(vc.loc[grp, "variance"].to_numpy(), np.diag(cov),
                                       rtol=1e-5)
            corr = g.correlations()
            expect = cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])
            assert float(corr["correlation"].iloc[0]) == pytest.approx(expect, rel=1e-5)
        re = g.random_effects[grp]
        want = pd.DataFrame(np.asarray(f["ranef"][grp]["values"]).reshape(
            len(f["ranef"][grp]["levels"]), -1), index=f["ranef"][grp]["levels"])
        got = re.loc[want.index].to_numpy()
        np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", FITS)
def test_marginal_means_and_tukey_match_emmeans(fits, fixture, name):
    """emmeans on glmmTMB: link-scale means and SEs, their response-scale back-transformation
    (delta method) and the Tukey-adjusted pairs with glmmTMB's df.residual."""
    f, g = fixture["fits"][name], fits[name]
    fac = _factor(f)
    levels = f["emmeans_link"]["level"]
    m = g.marginal_means(fac, scale="link").loc[levels]
    np.testing.assert_allclose(m, f["emmeans_link"]["emmean"], rtol=1e-6, atol=1e-7)
    se = np.sqrt(np.diag(g.marginal_means_cov(fac).loc[levels, levels]))
    np.testing.assert_allclose(se, f["emmeans_link"]["SE"], rtol=1e-6)
    mr = g.marginal_means(fac, scale="response").loc[levels]
    np.testing.assert_allclose(mr, f["emmeans_response"]["response"], rtol=1e-6)
    lk = g._design.family.link
    np.testing.assert_allclose(se * lk.mu_eta(m.to_numpy()), f["emmeans_response"]["SE"],
                               rtol=1e-6)
    tk = g.tukey(fac)
    pr = f["pairs"]
    got = {(a, b): row for a, b, row in zip(tk.pairs["a"], tk.pairs["b"],
                                            tk.pairs.itertuples(), strict=True)}
    for k, lab in enumerate(np.atleast_1d(pr["contrast"])):
        a, b = (s.strip() for s in lab.split(" - "))
        row = got[(a, b)]
        assert row.diff == pytest.approx(np.atleast_1d(pr["estimate"])[k], rel=1e-5, abs=1e-7)
        t = np.atleast_1d(pr["t"])[k]
        assert row.q == pytest.approx(np.sqrt(2) * abs(t), rel=1e-5)
        assert row.p_adj == pytest.approx(np.atleast_1d(pr["p"])[k], rel=1e-4, abs=1e-6)
    assert set(g.contrast_df(np.eye(2), fac)) == {float(f["df_residual"])}


def test_squeeze_on_mixed_and_its_refusals(fixture, reference_dir):
    d = pd.read_csv(reference_dir / "data" / "glmm" / "beta_ap_zeros.csv",
                    dtype={"topic": str, "system": str})
    with pytest.raises(irm.DataFormatError, match=r"14 of 400 rows are exactly 0 or 1.*"
                                                  r"squeeze=True"):
        irm.mixed("ap ~ system + (1 | topic)", d, family="beta")
    g = irm.mixed("ap ~ system + (1 | topic)", d, family="beta", squeeze=True)
    np.testing.assert_allclose(g._design.y, squeeze(d["ap"].to_numpy()), rtol=1e-15)
    assert g.loglik == pytest.approx(fixture["fits"]["squeezed"]["logLik"], abs=1e-5)
    # the same fit as the pre-squeezed scores
    d2 = d.assign(ap=squeeze(d["ap"].to_numpy()))
    g2 = irm.mixed("ap ~ system + (1 | topic)", d2, family="beta")
    np.testing.assert_allclose(g.fixed["estimate"], g2.fixed["estimate"], rtol=1e-10)
    with pytest.raises(irm.ArgumentError, match="squeeze= applies to the beta family only"):
        irm.mixed("ap ~ system + (1 | topic)", d, squeeze=True)
    with pytest.raises(irm.ArgumentError, match="squeeze=True applies to the beta family"):
        irm.mixed("ap ~ system + (1 | topic)", d, family="poisson", squeeze=True)


def test_beta_deviance_residuals_are_betaregs(fits):
    g = fits["intercepts"]
    y, mu, phi = g._design.y, g.fitted(), g.phi
    fam = g._design.family
    ll = lambda m: fam.loglik_obs(y, m, np.ones(len(y)), phi)  # noqa: E731
    want = np.sign(y - mu) * np.sqrt(2 * np.abs(ll(y) - ll(mu)))
    np.testing.assert_allclose(g.residuals(type="deviance"), want, rtol=1e-12)
    assert g.deviance == pytest.approx(float(np.sum(want ** 2)), rel=1e-12)
    np.testing.assert_allclose(g.residuals(type="pearson"),
                               (y - mu) / np.sqrt(mu * (1 - mu) / (1 + phi)), rtol=1e-12)


def test_refit_to_a_simulated_response_keeps_it_unsqueezed(fits, reference_dir, rng):
    """The parametric bootstrap's refit: a response simulated from a squeezed fit lies on the
    squeezed scale already and is fitted as it is (not squeezed twice)."""
    d = pd.read_csv(reference_dir / "data" / "glmm" / "beta_ap_zeros.csv",
                    dtype={"topic": str, "system": str})
    g = fits["squeezed"]  # irm.mixed("ap ~ system + (1 | topic)", d, family="beta", squeeze=True)
    y = g._design.family.simulate(g.fitted(), np.ones(g.nobs), g.phi, rng)
    r = g._refit(y=y)
    np.testing.assert_array_equal(r._design.y, y)
    direct = irm.mixed("ap ~ system + (1 | topic)", d.assign(ap=y), family="beta")
    assert r.loglik == pytest.approx(direct.loglik, abs=1e-8)
    assert g._refit().loglik == pytest.approx(g.loglik, abs=1e-8)


def test_boundary_fit_notes_and_warning():
    """Scores without a topic effect: theta stops at 0, a BoundaryFitWarning, and a note that
    says where the covariance comes from (the Hessian of the other parameters)."""
    rng = np.random.default_rng(2805)
    t, s = np.meshgrid(np.arange(30), np.arange(6), indexing="ij")
    mu = 1 / (1 + np.exp(-(-1.2 + 0.15 * s.ravel())))
    d = pd.DataFrame({"topic": [f"t{i:02d}" for i in t.ravel()],
                      "system": [f"s{j}" for j in s.ravel()],
                      "ap": rng.beta(mu * 15, (1 - mu) * 15)})
    with pytest.warns(irm.BoundaryFitWarning, match="topic"):
        g = irm.mixed("ap ~ system + (1 | topic)", d, family="beta")
    assert g.boundary and g.variance_components().loc["topic", "variance"] == 0.0
    assert any("Hessian of the parameters off the boundary" in n for n in g.notes)
    assert g.converged and np.all(np.isfinite(g.fixed["se"]))


@pytest.mark.parametrize("name", FITS)
def test_response_scale_tukey_matches_emmeans(fits, fixture, name):
    """Tukey on the response scale: differences of the back-transformed means by the delta
    method (emmeans' pairs(regrid(emm))) and, for the logit link, odds ratios (emmeans'
    pairs(emm, type = "response")), both with glmmTMB's df.residual."""
    f, g = fixture["fits"][name], fits[name]
    fac = _factor(f)
    rg = f["pairs_regrid"]
    tk = g.tukey(fac, scale="response", contrast="difference")
    got = {(a, b): row for a, b, row in zip(tk.pairs["a"], tk.pairs["b"],
                                            tk.pairs.itertuples(), strict=True)}
    for k, lab in enumerate(np.atleast_1d(rg["contrast"])):
        a, b = (s.strip() for s in lab.split(" - "))
        row = got[(a, b)]
        assert row.diff == pytest.approx(np.atleast_1d(rg["estimate"])[k], rel=1e-6, abs=1e-9)
        assert row.q == pytest.approx(np.sqrt(2) * abs(np.atleast_1d(rg["t"])[k]), rel=1e-5)
        assert row.p_adj == pytest.approx(np.atleast_1d(rg["p"])[k], rel=1e-4, abs=1e-6)
    if f["link"] != "logit":
        return
    ro = f["pairs_ratio"]
    tr = g.tukey(fac, scale="response", contrast="ratio").pairs
    byp = {(a, b): row for a, b, row in zip(tr["a"], tr["b"], tr.itertuples(), strict=True)}
    for k, lab in enumerate(np.atleast_1d(ro["contrast"])):
        a, b = (s.strip() for s in lab.split(" / "))
        row = byp[(a, b)]
        assert row.ratio == pytest.approx(np.atleast_1d(ro["ratio"])[k], rel=1e-5)
        assert row.ratio_se == pytest.approx(np.atleast_1d(ro["SE"])[k], rel=1e-5)
        assert row.p_adj == pytest.approx(np.atleast_1d(ro["p"])[k], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("nagq", [0, 3])
def test_beta_takes_the_laplace_approximation_only(nagq):
    """glmmTMB fits a beta GLMM by the Laplace approximation; nagq=0 went to the general
    engine, whose standard errors were 20% off glmmTMB's: refused, saying what to use."""
    d = pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(6)], 3),
                      "system": np.tile(["a", "b", "c"], 6),
                      "ap": np.linspace(0.1, 0.8, 18)})
    with pytest.raises(irm.DesignError, match=f"nagq={nagq} is not available for the beta"):
        irm.mixed("ap ~ system + (1|topic)", d, family="beta", nagq=nagq)


def test_beta_refuses_more_random_effects_than_its_dense_laplace_takes():
    rng = np.random.default_rng(4)
    k = 2001
    d = pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(k)], 2),
                      "system": np.tile(["a", "b"], k),
                      "ap": rng.uniform(0.05, 0.95, 2 * k)})
    with pytest.raises(irm.DesignError, match="up to 2000 random effects; this model has 2001"):
        irm.mixed("ap ~ system + (1|topic)", d, family="beta")
