"""Families and links of the GLMM engine against closed forms and R's make.link/family values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import irmodels as irm
from irmodels.models._family import EPS, LINKS, Binomial, Poisson, family, family_names

ETA = np.array([-3.0, -0.7, 0.0, 0.4, 2.5])


def _num_deriv(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_logit_closed_form():
    lk = LINKS["logit"]
    np.testing.assert_allclose(lk.linkinv(ETA), 1 / (1 + np.exp(-ETA)), rtol=1e-14)
    mu = lk.linkinv(ETA)
    np.testing.assert_allclose(lk.mu_eta(ETA), mu * (1 - mu), rtol=1e-12)
    np.testing.assert_allclose(lk.linkfun(mu), ETA, rtol=1e-12, atol=1e-14)


def test_probit_cloglog_log_sqrt_identity_closed_forms():
    np.testing.assert_allclose(LINKS["probit"].linkinv(ETA), stats.norm.cdf(ETA), rtol=1e-14)
    np.testing.assert_allclose(LINKS["probit"].mu_eta(ETA), stats.norm.pdf(ETA), rtol=1e-14)
    np.testing.assert_allclose(LINKS["cloglog"].linkinv(ETA), 1 - np.exp(-np.exp(ETA)),
                               rtol=1e-13)
    np.testing.assert_allclose(LINKS["log"].linkinv(ETA), np.exp(ETA), rtol=1e-15)
    np.testing.assert_allclose(LINKS["sqrt"].linkinv(ETA), ETA ** 2, rtol=1e-15)
    np.testing.assert_allclose(LINKS["identity"].mu_eta(ETA), np.ones(5))


@pytest.mark.parametrize("name", sorted(LINKS))
def test_link_derivatives_match_finite_differences(name):
    lk = LINKS[name]
    eta = np.array([0.3, 0.9, 1.7]) if name in ("sqrt", "identity") else ETA
    np.testing.assert_allclose(lk.mu_eta(eta), _num_deriv(lk.linkinv, eta), rtol=1e-6)
    np.testing.assert_allclose(lk.mu_eta2(eta), _num_deriv(lk.mu_eta, eta), rtol=1e-5,
                               atol=1e-9)
    mu = lk.linkinv(eta)
    # a round trip in double precision: 0 comes back as 1e-16 (scipy 1.15's log1p/expm1)
    np.testing.assert_allclose(lk.linkfun(mu), eta, rtol=1e-10, atol=1e-14)


def test_links_clamp_at_the_extremes_as_r():
    big = np.array([-800.0, 800.0])
    # R: binomial()$linkinv(c(-800, 800)) = c(2.220446e-16, 1 - 2.220446e-16)
    np.testing.assert_allclose(LINKS["logit"].linkinv(big), [EPS / (1 + EPS), 1 / (1 + EPS)])
    np.testing.assert_array_equal(LINKS["logit"].mu_eta(big), [EPS, EPS])
    assert np.all(np.isfinite(LINKS["probit"].linkinv(big)))
    assert LINKS["probit"].linkinv(big)[0] > 0 and LINKS["probit"].linkinv(big)[1] < 1
    assert LINKS["cloglog"].linkinv(big)[0] == EPS and LINKS["cloglog"].linkinv(big)[1] == 1 - EPS
    assert LINKS["log"].linkinv(np.array([-800.0]))[0] == EPS


def test_binomial_family_matches_dbinom_and_dev_resids():
    b = family("binomial")
    y = np.array([0.0, 0.3, 1.0, 0.5])
    n = np.array([10.0, 10.0, 4.0, 2.0])
    mu = np.array([0.2, 0.35, 0.9, 0.5])
    np.testing.assert_allclose(b.loglik_obs(y, mu, n), stats.binom.logpmf(y * n, n, mu))
    # R: binomial()$dev.resids(y, mu, n)
    expect = 2 * n * (np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / mu), 0)
                      + np.where(y < 1, (1 - y) * np.log(np.where(y < 1, 1 - y, 1) / (1 - mu)),
                                 0))
    np.testing.assert_allclose(b.deviance_resid(y, mu, n), expect, rtol=1e-13)
    np.testing.assert_allclose(b.start_mu(y, n), (n * y + 0.5) / (n + 1))


@pytest.mark.parametrize("fam,link", [("binomial", "logit"), ("binomial", "probit"),
                                      ("binomial", "cloglog"), ("poisson", "log"),
                                      ("poisson", "sqrt")])
def test_deta_derivs_are_derivatives_of_loglik(fam, link):
    f = family(fam, link=link)
    if fam == "binomial":
        y, w, eta = np.array([0.2, 0.7, 1.0]), np.array([10.0, 10.0, 3.0]), np.array([-1., .5, 1.])
    else:
        y, w, eta = np.array([0.0, 3.0, 7.0]), np.ones(3), np.array([0.5, 1.2, 2.1])
    ll = lambda e: f.loglik_obs(y, f.link.linkinv(e), w)  # noqa: E731
    d1, d2 = f.deta_derivs(y, eta, w)
    np.testing.assert_allclose(d1, _num_deriv(ll, eta, 1e-5), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(d2, _num_deriv(lambda e: f.deta_derivs(y, e, w)[0], eta, 1e-5),
                               rtol=1e-6, atol=1e-8)
    # expected information = mean of the observed one (E[y] = mu)
    mu = f.link.linkinv(eta)
    ew = f.expected_weights(eta, w)
    np.testing.assert_allclose(-f.deta_derivs(mu, eta, w)[1], ew, rtol=1e-10)
    if f.canonical:
        np.testing.assert_allclose(-d2, ew, rtol=1e-10)


def test_poisson_closed_forms():
    p = Poisson()
    y, mu = np.array([0.0, 2.0, 5.0]), np.array([1.5, 2.0, 3.0])
    np.testing.assert_allclose(p.loglik_obs(y, mu, np.ones(3)), stats.poisson.logpmf(y, mu))
    np.testing.assert_allclose(p.deviance_resid(y, mu, np.ones(3)),
                               [3.0, 0.0, 2 * (5 * np.log(5 / 3) - 2)], rtol=1e-13)
    np.testing.assert_allclose(p.start_mu(y, np.ones(3)), y + 0.1)


def test_family_resolution_and_refusals():
    assert family("binomial").link.name == "logit" and family("poisson").link.name == "log"
    assert {"binomial", "poisson", "beta"} <= set(family_names())
    with pytest.raises(irm.ArgumentError, match="did you mean 'poisson'"):
        family("poison")
    with pytest.raises(irm.ArgumentError, match="did you mean 'logit'"):
        family("binomial", link="logt")
    with pytest.raises(irm.ArgumentError, match="not available for the poisson family"):
        family("poisson", link="logit")
    assert family(Binomial("probit")) == Binomial("probit")


@pytest.mark.parametrize("y,n,match", [
    (np.array([0.25, 0.5]), np.array([10.0, 10.0]), "whole numbers; row 0 has 2.5"),
    (np.array([1.2, 0.5]), np.array([10.0, 10.0]), "between 0 and the number of trials"),
    (np.array([0.5, 0.5]), np.array([10.0, 0.0]), "trials must be whole numbers >= 1"),
    (np.array([0.5, np.nan]), np.array([10.0, 10.0]), "missing or infinite"),
])
def test_binomial_check_response_refuses(y, n, match):
    with pytest.raises(irm.DataFormatError, match=match):
        Binomial().check_response(y, n)


def test_poisson_check_response_refuses():
    with pytest.raises(irm.DataFormatError, match="must be >= 0"):
        Poisson().check_response(np.array([1.0, -1.0]), np.ones(2))
    with pytest.raises(irm.DataFormatError, match="whole numbers"):
        Poisson().check_response(np.array([1.0, 1.5]), np.ones(2))


@pytest.mark.parametrize("name", ["binomial", "poisson", "beta"])
def test_families_pickle_by_link_name(name):
    """Fits go to worker processes (Dask, process pools): a family and its link pickle (the
    link by its registered name; its functions are lambdas) and come back the same."""
    import pickle

    fam = family(name)
    back = pickle.loads(pickle.dumps(fam))
    assert back.link is fam.link
    mu = np.array([0.2, 0.5, 0.9])
    np.testing.assert_array_equal(back.link.linkfun(mu), fam.link.linkfun(mu))
