"""Beta mixed models against glmmTMB's beta_family (tests/reference/glmmtmb_beta.json, fitted on
TREC-7/8 AP by glmmtmb_beta.R), and against statsmodels' beta regression at a zero variance."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from irmodels.models._family_beta import _BetaLaplace, fit_beta_laplace, squeeze
from irmodels.models._glmm import glmm_design

FITS = ["intercepts", "probit", "cloglog", "squeezed", "crossed", "slope"]


@pytest.fixture(scope="module")
def fixture(reference_dir):
    return json.loads((reference_dir / "glmmtmb_beta.json").read_text())


def _data(reference_dir, name: str, squeezed: bool = False) -> pd.DataFrame:
    d = pd.read_csv(reference_dir / "data" / "glmm" / f"{name}.csv",
                    dtype={"topic": str, "system": str})
    if squeezed:
        d["ap"] = squeeze(d["ap"].to_numpy())
    return d


@pytest.fixture(scope="module")
def fits(fixture, reference_dir):
    out = {}
    for name in FITS:
        f = fixture["fits"][name]
        d = _data(reference_dir, f["data"], f["squeeze"])
        gd = glmm_design(f["formula"], d, family="beta", link=f["link"])
        out[name] = (fit_beta_laplace(gd), gd, d)
    return out


def _cov_blocks(fit, gd):
    """Each term's covariance matrix T T' (the latent scale) from theta."""
    theta = fit.x[:fit.dev.nt]
    out = {}
    for b in gd.lmm.blocks:
        T = np.zeros((b.q, b.q))
        k = b.theta_offset
        for j in range(b.q):
            for i in range(j, b.q):
                T[i, j] = theta[k]
                k += 1
        out[b.group] = T @ T.T
    return out


@pytest.mark.parametrize("name", FITS)
def test_estimates_ses_phi_loglik_match_glmmtmb(fits, fixture, name):
    f = fixture["fits"][name]
    fit, gd, _ = fits[name]
    nt, p = fit.dev.nt, fit.dev.p
    assert fit.converged and not fit.boundary
    assert gd.lmm.fixed_names == f["fixed"]["names"]
    np.testing.assert_allclose(fit.x[nt:nt + p], f["fixed"]["estimate"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), f["fixed"]["se"], rtol=1e-5)
    np.testing.assert_allclose(fit.vcov, f["vcov"], rtol=1e-4, atol=1e-8)
    assert float(np.exp(fit.x[-1])) == pytest.approx(f["phi"], rel=1e-5)
    assert -fit.objective / 2 == pytest.approx(f["logLik"], abs=1e-5)
    k = nt + p + 1
    assert k == f["df"]
    n = len(gd.y)
    assert fit.objective + 2 * k == pytest.approx(f["AIC"], abs=2e-5)
    assert fit.objective + np.log(n) * k == pytest.approx(f["BIC"], abs=2e-5)
    assert n - k == f["df_residual"]


@pytest.mark.parametrize("name", FITS)
def test_variance_components_and_modes_match_glmmtmb(fits, fixture, name):
    f = fixture["fits"][name]
    fit, gd, _ = fits[name]
    covs = _cov_blocks(fit, gd)
    for g, vc in f["varcorr"].items():
        np.testing.assert_allclose(covs[g], np.atleast_2d(vc["cov"]), rtol=1e-5, atol=1e-8)
    b = gd.lmm.Lambda(fit.x[:fit.dev.nt]) @ fit.mode.u
    for blk in gd.lmm.blocks:
        re = f["ranef"][blk.group]
        vals = b[blk.offset:blk.offset + blk.q * blk.n_levels].reshape(blk.n_levels, blk.q)
        order = [blk.labels.index(lev) for lev in re["levels"]]
        np.testing.assert_allclose(vals[order], np.asarray(re["values"]).reshape(len(order), -1),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fit.mode.mu, f["fitted"], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", FITS)
def test_marginal_means_both_scales_match_emmeans(fits, fixture, name):
    """emmeans on glmmTMB: the link-scale means L beta with SEs sqrt(L V L'), and their
    back-transformation with the delta method (type = "response")."""
    f = fixture["fits"][name]
    fit, gd, _ = fits[name]
    nt, p = fit.dev.nt, fit.dev.p
    beta = fit.x[nt:nt + p]
    names = gd.lmm.fixed_names
    fac = f["emmeans_link"]["level"]
    factor = "system" if "system" in f["formula"].split("+")[0] else "collection"
    L = np.zeros((len(fac), p))
    L[:, 0] = 1.0
    for i, lev in enumerate(fac):
        col = f"{factor}{lev}"
        if col in names:
            L[i, names.index(col)] = 1.0
    em = L @ beta
    se = np.sqrt(np.einsum("ij,jk,ik->i", L, fit.vcov, L))
    np.testing.assert_allclose(em, f["emmeans_link"]["emmean"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(se, f["emmeans_link"]["SE"], rtol=1e-6)
    lk = gd.family.link
    np.testing.assert_allclose(lk.linkinv(em), f["emmeans_response"]["response"], rtol=1e-6)
    np.testing.assert_allclose(se * lk.mu_eta(em), f["emmeans_response"]["SE"], rtol=1e-6)
    assert set(f["emmeans_link"]["df"]) == {len(gd.y) - (nt + p + 1)}


def test_laplace_gradient_is_exact(fits):
    """The analytic gradient of the Laplace objective equals central differences of it (at a
    point away from the optimum, for every parameter: theta, beta, log phi)."""
    fit, gd, _ = fits["slope"]
    obj = _BetaLaplace(gd)
    x = fit.x + np.linspace(-0.05, 0.05, len(fit.x))
    _, g = obj(x)
    num = np.empty_like(x)
    for i in range(len(x)):
        h = 1e-5
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (obj(xp)[0] - obj(xm)[0]) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


def test_objective_at_zero_variance_is_beta_regression(fixture, reference_dir):
    """With theta = 0 the Laplace objective is exactly the beta regression's -log-likelihood
    (statsmodels' BetaModel at the same mean and precision parameters); the fixture's
    fixed-effects glmmTMB fit is statsmodels' maximum."""
    betareg = pytest.importorskip("statsmodels.othermod.betareg")
    f = fixture["fits"]["fixed_only"]
    d = _data(reference_dir, f["data"])
    gd = glmm_design("ap ~ system + (1 | topic)", d, family="beta")
    assert gd.lmm.fixed_names == f["fixed"]["names"]
    X = gd.lmm.X
    m = betareg.BetaModel(gd.y, X)
    params = np.append(f["fixed"]["estimate"], np.log(f["phi"]))
    obj = _BetaLaplace(gd)
    F, _ = obj(np.concatenate([[0.0], params]))
    assert -F == pytest.approx(m.loglike(params), rel=1e-12)
    assert -F == pytest.approx(f["logLik"], abs=1e-6)
    res = m.fit(method="newton", maxiter=200, disp=False)
    np.testing.assert_allclose(res.params, params, rtol=1e-5, atol=1e-6)


def test_zero_topic_variance_fit_equals_beta_regression():
    """A beta GLMM fitted to scores with no topic effect stops at theta = 0 (a boundary fit)
    and then equals statsmodels' beta regression: estimates, precision, log-likelihood, SEs."""
    betareg = pytest.importorskip("statsmodels.othermod.betareg")
    rng = np.random.default_rng(2805)
    T, S = 30, 6
    t, s = np.meshgrid(np.arange(T), np.arange(S), indexing="ij")
    eta = -1.2 + 0.15 * s.ravel()
    mu = 1 / (1 + np.exp(-eta))
    phi = 15.0
    y = rng.beta(mu * phi, (1 - mu) * phi)
    d = pd.DataFrame({"topic": [f"t{i:02d}" for i in t.ravel()],
                      "system": [f"s{j}" for j in s.ravel()], "ap": y})
    gd = glmm_design("ap ~ system + (1 | topic)", d, family="beta")
    fit = fit_beta_laplace(gd)
    assert fit.boundary and fit.x[0] == 0.0
    res = betareg.BetaModel(gd.y, gd.lmm.X).fit(method="newton", maxiter=200, disp=False)
    np.testing.assert_allclose(fit.x[1:], res.params, rtol=1e-5, atol=1e-6)
    assert -fit.objective / 2 == pytest.approx(res.llf, abs=1e-7)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), res.bse[:-1], rtol=1e-4)


def test_design_refuses_scores_at_zero_or_one_unless_squeezed(fixture, reference_dir):
    """TREC-8 AP with exact zeros: refused with the rows, topics and systems and both ways out;
    squeeze=True fits the squeezed scores, which glmmTMB fitted (the 'squeezed' fixture)."""
    import irmodels as irm

    d = _data(reference_dir, "beta_ap_zeros")
    zeros = d[d["ap"] == 0]
    with pytest.raises(irm.DataFormatError) as e:
        glmm_design("ap ~ system + (1 | topic)", d, family="beta")
    msg = str(e.value)
    assert f"{len(zeros)} of 400 rows are exactly 0 or 1 ({len(zeros)} at 0, 0 at 1)" in msg
    assert f"topic {zeros['topic'].iloc[0]}" in msg and "squeeze=True" in msg
    gd = glmm_design("ap ~ system + (1 | topic)", d, family="beta", squeeze=True)
    assert gd.squeeze
    np.testing.assert_allclose(gd.y, squeeze(d["ap"].to_numpy()), rtol=1e-15)
    f = fixture["fits"]["squeezed"]
    fit = fit_beta_laplace(gd)
    assert -fit.objective / 2 == pytest.approx(f["logLik"], abs=1e-5)
    with pytest.raises(irm.ArgumentError, match="squeeze=True applies to the beta family"):
        glmm_design("ap ~ system + (1 | topic)", d, family="poisson", squeeze=True)
    with pytest.raises(irm.ArgumentError, match="squeeze must be True or False"):
        glmm_design("ap ~ system + (1 | topic)", d, family="beta", squeeze="yes")


@pytest.mark.parametrize("name", ["intercepts", "crossed", "slope"])
def test_engine_deviance_agrees_at_the_beta_optimum(fits, name):
    """The general engine's Laplace deviance (PIRLS modes, observed weights) at the beta fit's
    parameters equals the fit's -2 logLik: profiles and likelihood-ratio refits that evaluate
    ``fit.dev`` see the same objective."""
    fit, _, _ = fits[name]
    assert fit.dev(fit.x) == pytest.approx(fit.objective, abs=1e-8)
    assert fit.dev(fit.x + 0.01) > fit.objective
