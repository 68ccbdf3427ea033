"""The beta family (glmmTMB's beta_family) against scipy's beta density, finite differences,
numerical expectations, and the rule for scores of exactly 0 or 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import irmodels as irm
from irmodels.models._family import family
from irmodels.models._family_beta import Beta, _mu_eta3, beta_response, check_bounds, squeeze

Y = np.array([0.003, 0.15, 0.5, 0.72, 0.991])
ETA = np.array([-4.0, -1.2, 0.1, 0.8, 3.0])


def test_registered_with_glmmtmb_links():
    fam = family("beta")
    assert isinstance(fam, Beta) and fam.link.name == "logit"
    assert fam.has_dispersion and fam.laplace_weights == "observed"
    assert family("beta", link="cloglog").link.name == "cloglog"
    with pytest.raises(irm.ArgumentError, match="link 'log' is not available for the beta"):
        family("beta", link="log")


@pytest.mark.parametrize("phi", [0.7, 4.0, 60.0])
def test_loglik_is_dbeta_with_constants(phi):
    mu = np.array([0.02, 0.3, 0.5, 0.6, 0.97])
    ll = Beta().loglik_obs(Y, mu, np.ones(5), phi)
    np.testing.assert_allclose(ll, stats.beta.logpdf(Y, mu * phi, (1 - mu) * phi), rtol=1e-12)
    np.testing.assert_allclose(Beta().loglik_obs(Y, mu, np.full(5, 2.0), phi), 2 * ll,
                               rtol=1e-14)


def test_variance_is_mu_one_minus_mu_over_one_plus_phi():
    mu = np.array([0.1, 0.5, 0.8])
    fam = Beta()
    np.testing.assert_allclose(fam.variance(mu, 9.0), mu * (1 - mu) / 10, rtol=1e-15)
    np.testing.assert_allclose(fam.variance(mu, 9.0),
                               stats.beta.var(mu * 9, (1 - mu) * 9), rtol=1e-12)


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
@pytest.mark.parametrize("phi", [1.5, 25.0])
def test_eta_and_phi_derivatives_match_finite_differences(link, phi):
    fam = Beta(link)
    w = np.ones(5)
    eta = ETA / 2 if link == "cloglog" else ETA  # keep cloglog's mu away from 1

    def ll(e, ph=phi):
        return fam.loglik_obs(Y, fam.link.linkinv(e), w, ph)

    h = 1e-5
    dv = fam.laplace_derivs(Y, eta, w, phi)
    d1, d2 = fam.deta_derivs(Y, eta, w, phi)
    np.testing.assert_allclose(dv["d1"], d1, rtol=1e-13)
    np.testing.assert_allclose(dv["d2"], d2, rtol=1e-13)
    np.testing.assert_allclose(d1, (ll(eta + h) - ll(eta - h)) / (2 * h), rtol=1e-6, atol=1e-7)
    g = lambda e: fam.deta_derivs(Y, e, w, phi)  # noqa: E731
    np.testing.assert_allclose(d2, (g(eta + h)[0] - g(eta - h)[0]) / (2 * h), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(dv["d3"], (g(eta + h)[1] - g(eta - h)[1]) / (2 * h), rtol=1e-5,
                               atol=1e-6)
    hp = 1e-5 * phi
    np.testing.assert_allclose(dv["lp"], (ll(eta, phi + hp) - ll(eta, phi - hp)) / (2 * hp),
                               rtol=1e-6, atol=1e-8)
    gp, gm = fam.deta_derivs(Y, eta, w, phi + hp), fam.deta_derivs(Y, eta, w, phi - hp)
    np.testing.assert_allclose(dv["d1p"], (gp[0] - gm[0]) / (2 * hp), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dv["d2p"], (gp[1] - gm[1]) / (2 * hp), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
def test_third_derivative_of_the_inverse_link(link):
    lk = Beta(link).link
    h = 1e-5
    eta = np.array([-2.0, -0.3, 0.5, 1.1])
    np.testing.assert_allclose(_mu_eta3(link, eta),
                               (lk.mu_eta2(eta + h) - lk.mu_eta2(eta - h)) / (2 * h),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_expected_weights_are_the_expected_observed_information(link):
    fam, phi = Beta(link), 6.0
    for eta in (-1.5, 0.2, 1.0):
        mu = float(fam.link.linkinv(eta))
        dens = stats.beta(mu * phi, (1 - mu) * phi)
        e_info = integrate.quad(
            lambda y, eta=eta, dens=dens: -fam.deta_derivs(np.array([y]), np.array([eta]),
                                                           np.ones(1), phi)[1][0]
            * dens.pdf(y), 0, 1, limit=200)[0]
        w = fam.expected_weights(np.array([eta]), np.ones(1), phi)[0]
        assert w == pytest.approx(e_info, rel=1e-7)


def test_deviance_residuals_vanish_at_the_data_and_need_phi():
    fam = Beta()
    np.testing.assert_allclose(fam.deviance_resid(Y, Y, np.ones(5), phi=3.0), 0.0, atol=1e-12)
    r = fam.deviance_resid(Y, np.full(5, 0.4), np.ones(5), phi=3.0)
    assert np.all(r >= 0) and r[0] > r[2]
    mu = np.full(5, 0.4)
    ll = lambda m: fam.loglik_obs(Y, m, np.ones(5), 3.0)  # noqa: E731
    np.testing.assert_allclose(r, 2 * np.abs(ll(Y) - ll(mu)), rtol=1e-14)
    with pytest.raises(irm.DataFormatError, match="precision phi"):
        fam.deviance_resid(Y, Y, np.ones(5))


def test_phi_start_by_moments():
    rng = np.random.default_rng(2801)
    mu = np.full(20000, 0.3)
    y = rng.beta(mu * 12, (1 - mu) * 12)
    assert Beta().phi_start(y, mu, np.ones(len(y))) == pytest.approx(12.0, rel=0.05)


def test_squeeze_is_smithson_verkuilen():
    y = np.array([0.0, 0.2, 1.0, 0.6, 0.35])
    n = len(y)
    np.testing.assert_allclose(squeeze(y), (y * (n - 1) + 0.5) / n, rtol=1e-15)
    s = squeeze(y)
    assert s.min() == pytest.approx(0.5 / n) and s.max() == pytest.approx(1 - 0.5 / n)
    assert np.all(np.abs(s - y) <= 0.5 / n + 1e-15)


def test_check_response_refuses_zero_and_one():
    with pytest.raises(irm.DataFormatError, match=r"2 of 5 rows lie outside \(0, 1\).*squeeze"):
        Beta().check_response(np.array([0.0, 0.3, 1.0, 0.4, 0.5]), np.ones(5))
    Beta().check_response(Y, np.ones(5))


def test_check_bounds_names_rows_topics_systems_and_both_ways_out():
    d = pd.DataFrame({"topic": ["401", "401", "402", "403", "403"],
                      "system": ["a", "b", "a", "c", "b"], "ap": [0.0, 0.2, 0.0, 1.0, 0.5]})
    with pytest.raises(irm.DataFormatError) as e:
        check_bounds(d["ap"].to_numpy(), d)
    msg = str(e.value)
    assert "3 of 5 rows are exactly 0 or 1 (2 at 0, 1 at 1)" in msg
    assert "topic 401, 402, 403" in msg and "system a, c" in msg
    assert "squeeze=True" in msg and "drop or recode" in msg and "n = 5" in msg
    with pytest.raises(irm.DataFormatError, match="outside \\[0, 1\\]"):
        beta_response(np.array([0.2, 1.5]), None, squeeze_scores=True)
    np.testing.assert_allclose(beta_response(d["ap"].to_numpy(), d, squeeze_scores=True),
                               squeeze(d["ap"].to_numpy()))
    np.testing.assert_array_equal(beta_response(Y), Y)


def test_simulate_draws_beta_with_the_fitted_mean_and_precision(rng):
    fam = Beta()
    mu = np.repeat([0.05, 0.3, 0.8], 40000)
    y = fam.simulate(mu, np.ones(len(mu)), 9.0, rng)
    assert np.all((y > 0) & (y < 1))
    for m in (0.05, 0.3, 0.8):
        s = y[mu == m]
        assert s.mean() == pytest.approx(m, abs=4e-3)
        assert s.var() == pytest.approx(m * (1 - m) / 10, rel=0.05)
    assert stats.kstest(y[mu == 0.3], stats.beta(0.3 * 9, 0.7 * 9).cdf).pvalue > 1e-3


def test_trigamma_and_tetragamma_equal_scipys_polygamma():
    from scipy import special

    from irmodels.models._family_beta import _tetragamma, _trigamma

    x = np.concatenate([np.geomspace(1e-5, 1e6, 3000), np.linspace(0.01, 40, 3000)])
    np.testing.assert_allclose(_trigamma(x), special.polygamma(1, x), rtol=4e-15)
    np.testing.assert_allclose(_tetragamma(x), special.polygamma(2, x), rtol=4e-14)
    assert _trigamma(np.array([3.0]))[0] == pytest.approx(np.pi ** 2 / 6 - 1 - 1 / 4, rel=1e-15)
