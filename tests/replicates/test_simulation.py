"""Stochastic simulation of topics (irm.replicates.fit_simulator / simulate_topics).

Checks against independent routes: scipy's beta MLE, R's MASS::fitdistr (live, when Rscript is
present) for the beta, truncated-normal and beta-binomial margins; the copula's correlation
reproduced on 50,000 simulated topics; the null transform's expected means by scipy's
adaptive quadrature of the quantile function; sample means against expected means within
sampling error.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import irmodels as irm
from irmodels.data.frame import to_wide
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.replicates._margins import fit_beta, fit_betabinom, fit_truncnorm, truncnorm_ppf
from irmodels.replicates.simulation import MARGIN_COLUMNS, _normal_scores, fit_simulator


@pytest.fixture(scope="module")
def ap() -> pd.DataFrame:
    return irm.datasets.load("adhoc3", "AP")


@pytest.fixture(scope="module")
def p10() -> pd.DataFrame:
    return irm.datasets.load("adhoc5", "P@10")


@pytest.fixture(scope="module")
def small_ap(ap: pd.DataFrame) -> pd.DataFrame:
    keep = [f"sys{i}" for i in range(2, 12)]
    return ap[ap["system"].isin(keep)]


@pytest.fixture(scope="module")
def sim(ap: pd.DataFrame):
    return fit_simulator(ap)


@pytest.fixture(scope="module")
def small_sim(small_ap: pd.DataFrame):
    """The default fit of ``small_ap`` (a simulator is immutable: its methods return new ones)."""
    return fit_simulator(small_ap)


def test_beta_mle_matches_scipy(ap: pd.DataFrame) -> None:
    W = to_wide(ap)
    checked = 0
    for s in W.columns:
        x = W[s].to_numpy()
        a, b, _, _ = stats.beta.fit(np.clip(x, 1e-6, 1 - 1e-6), floc=0, fscale=1)
        if min(a, b) <= 1.05:  # the bound a, b >= 1 (simIReff's) is active: scipy has none
            continue
        m = fit_beta(x)
        assert m.params["shape1"] == pytest.approx(a, rel=1e-4)
        assert m.params["shape2"] == pytest.approx(b, rel=1e-4)
        assert m.loglik == pytest.approx(stats.beta.logpdf(np.clip(x, 1e-6, 1 - 1e-6), a,
                                                           b).sum(), abs=1e-6)
        checked += 1
    assert checked >= 20


def test_bounded_beta_is_the_constrained_optimum(ap: pd.DataFrame) -> None:
    # sys1 has a zero: the unconstrained shape1 is below 1, the fit sits on the bound
    x = to_wide(ap)["sys1"].to_numpy()
    m = fit_beta(x)
    assert m.params["shape1"] == 1.0
    xc = np.clip(x, 1e-6, 1 - 1e-6)
    # shape2 is the 1-d MLE given shape1 = 1: the score equation in shape2 is 0
    from scipy.special import digamma

    b = m.params["shape2"]
    assert np.log1p(-xc).sum() - len(x) * (digamma(b) - digamma(1 + b)) == pytest.approx(
        0.0, abs=1e-4)


def test_truncnorm_loglik_is_scipys(ap: pd.DataFrame) -> None:
    x = to_wide(ap)["sys5"].to_numpy()
    m = fit_truncnorm(x)
    mu, s = m.params["mean"], m.params["sd"]
    ll = stats.truncnorm.logpdf(x, -mu / s, (1 - mu) / s, loc=mu, scale=s).sum()
    assert m.loglik == pytest.approx(ll, abs=1e-8)
    # and it is a maximum: nudging either parameter lowers it
    for dmu, ds in ((1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3)):
        m2, s2 = mu + dmu, s + ds
        assert stats.truncnorm.logpdf(x, -m2 / s2, (1 - m2) / s2, loc=m2,
                                      scale=s2).sum() < ll


_R_FIT = r"""
suppressMessages(library(MASS)); library(jsonlite)
d <- fromJSON(file("stdin"), simplifyMatrix = FALSE)
out <- list()
for (i in seq_along(d$beta)) {
  x <- pmin(1 - 1e-6, pmax(1e-6, d$beta[[i]]))
  m <- mean(x); v <- var(x); k <- m * (1 - m) / v - 1
  f <- fitdistr(x, "beta", start = list(shape1 = max(1, m * k), shape2 = max(1, (1 - m) * k)),
                lower = c(1, 1))
  out$beta[[i]] <- c(unname(f$estimate), f$loglik)
}
for (i in seq_along(d$norm)) {
  x <- d$norm[[i]]
  dtn <- function(xx, mu, sigma) dnorm(xx, mu, sigma) / (pnorm(1, mu, sigma) - pnorm(0, mu, sigma))
  f <- fitdistr(x, dtn, start = list(mu = mean(x), sigma = sd(x)),
                lower = c(-10, 0.05), upper = c(11, 100))
  out$norm[[i]] <- c(unname(f$estimate), f$loglik)
}
k <- d$k
for (i in seq_along(d$bb)) {
  j <- d$bb[[i]]
  dbb <- function(x, a, b) exp(lchoose(k, x) + lbeta(x + a, k - x + b) - lbeta(a, b))
  f <- fitdistr(j, dbb, start = list(a = 2, b = 2), lower = c(1, 1))
  out$bb[[i]] <- c(unname(f$estimate), f$loglik)
}
out$version <- R.version.string
cat(toJSON(out, digits = NA))
"""


@pytest.mark.r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_margins_against_r_fitdistr(ap: pd.DataFrame, p10: pd.DataFrame) -> None:
    ok = subprocess.run(["Rscript", "-e", "library(MASS); library(jsonlite)"],
                        capture_output=True)
    if ok.returncode != 0:
        pytest.skip("R's MASS or jsonlite is not installed")
    W = to_wide(ap)
    beta_sys = ["sys1", "sys2", "sys6", "sys10", "sys20"]
    norm_sys = ["sys2", "sys5", "sys8", "sys30"]
    P = to_wide(p10)
    bb_sys = list(P.columns[:4])
    payload = {"beta": [W[s].tolist() for s in beta_sys],
               "norm": [W[s].tolist() for s in norm_sys],
               "bb": [np.rint(P[s].to_numpy() * 10).astype(int).tolist() for s in bb_sys],
               "k": 10}
    res = subprocess.run(["Rscript", "-e", _R_FIT], input=json.dumps(payload), text=True,
                         capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    for s, (a, b, ll) in zip(beta_sys, r["beta"]):
        m = fit_beta(W[s].to_numpy())
        assert m.loglik >= ll - 1e-6  # never a worse optimum than R's
        assert m.params["shape1"] == pytest.approx(a, rel=2e-3)
        assert m.params["shape2"] == pytest.approx(b, rel=2e-3)
    for s, (mu, sd, ll) in zip(norm_sys, r["norm"]):
        m = fit_truncnorm(W[s].to_numpy())
        assert m.loglik >= ll - 1e-6
        assert m.params["mean"] == pytest.approx(mu, abs=2e-3)
        assert m.params["sd"] == pytest.approx(sd, rel=2e-3)
    for s, (a, b, ll) in zip(bb_sys, r["bb"]):
        j = np.rint(P[s].to_numpy() * 10).astype(np.int64)
        m = fit_betabinom(j, 10, np.arange(11) / 10)
        assert m.loglik >= ll - 1e-6
        assert m.loglik == pytest.approx(ll, abs=1e-4)
        assert m.params["shape1"] == pytest.approx(a, rel=1e-2)
        assert m.params["shape2"] == pytest.approx(b, rel=1e-2)


FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "simulation_margins.json"


@pytest.mark.parametrize("family", ["beta", "truncnorm", "betabinom"])
def test_margins_against_r_fixture(family: str) -> None:
    """MASS::fitdistr's fits of seeded synthetic scores (tests/reference/simulation_margins.R):
    the same optimum (log-likelihood never lower, to 1e-6) and parameters to 5e-4."""
    cases = json.loads(FIXTURE.read_text())[family]
    for name, case in cases.items():
        if family == "betabinom":
            k = int(case["k"])
            m = fit_betabinom(np.asarray(case["j"], dtype=np.int64), k, np.arange(k + 1) / k)
            pars = ("shape1", "shape2")
        else:
            x = np.asarray(case["x"], dtype=float)
            m = fit_beta(x) if family == "beta" else fit_truncnorm(x)
            pars = ("shape1", "shape2") if family == "beta" else ("mean", "sd")
        assert m.loglik >= case["loglik"] - 1e-6, name
        assert m.loglik == pytest.approx(case["loglik"], abs=1e-4), name
        for par in pars:
            assert m.params[par] == pytest.approx(case[par], rel=5e-4, abs=1e-6), (name, par)


def test_auto_picks_the_smallest_aic(sim) -> None:
    table = sim.margins
    assert list(table.columns) == list(MARGIN_COLUMNS)
    assert set(table["family"]) <= {"truncnorm", "beta", "kernel"}
    assert len(set(table["family"])) >= 2
    # the chosen AIC is the smallest of the three families, system by system
    data = irm.datasets.load("adhoc3", "AP")
    aics = pd.concat([fit_simulator(data, margins=f).margins.set_index("system")["aic"]
                      .rename(f) for f in ("truncnorm", "beta", "kernel")], axis=1)
    chosen = table.set_index("system")["aic"]
    np.testing.assert_allclose(chosen.to_numpy(), aics.min(axis=1).to_numpy(), rtol=0,
                               atol=1e-9)


def test_discrete_margins_for_p_at_k(p10: pd.DataFrame) -> None:
    s = fit_simulator(p10)
    assert s.k == 10
    assert set(s.margins["family"]) <= {"betabinom", "kernel"}
    X = s.sample(200, seed=2)["score"].to_numpy()
    assert np.allclose(X * 10, np.rint(X * 10))  # on the lattice 0, 0.1, ..., 1
    # expected means of a discrete margin: sum of s_j p_j from its pmf
    m = s.margin(s.systems[0])
    pmf = np.diff(np.concatenate([[0.0], m.cdf(m.support)]))
    assert m.mean == pytest.approx(float((pmf * m.support).sum()), abs=1e-12)
    # the null transform on the lattice
    n = s.null()
    means = n.expected_means.to_numpy()
    assert np.ptp(means) < 1e-9
    for sys_ in n.systems[:5]:
        mm = n.margin(sys_)
        pmf = np.diff(np.concatenate([[0.0], mm.cdf(mm.support)]))
        assert float((pmf * mm.support).sum()) == pytest.approx(means[0], abs=1e-9)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("family", ["truncnorm", "beta", "kernel"])
def test_null_means_by_quadrature(small_ap: pd.DataFrame, family: str) -> None:
    n = fit_simulator(small_ap, margins=family, null=True)
    target = n.expected_means.iloc[0]
    assert np.ptp(n.expected_means.to_numpy()) < 1e-10
    for sys_ in n.systems:
        m = n.margin(sys_)
        # an independent route: the mean is the integral of the quantile function
        q, _ = integrate.quad(lambda u, m=m: float(m.ppf(np.array([u]))[0]), 0, 1, limit=400,
                              epsabs=1e-10)
        assert q == pytest.approx(target, abs=1e-6), (sys_, family)


def test_with_means_moves_both_ways(small_sim) -> None:
    s = small_sim
    goal = {s.systems[0]: 0.15, s.systems[1]: 0.45}
    t = s.with_means(goal)
    em = t.expected_means
    assert em[s.systems[0]] == pytest.approx(0.15, abs=1e-9)
    assert em[s.systems[1]] == pytest.approx(0.45, abs=1e-9)
    assert em[s.systems[2]] == pytest.approx(s.expected_means[s.systems[2]], abs=1e-12)
    assert "Beta(" in t.margins.set_index("system").loc[s.systems[0], "transform"]
    # a monotone transform of each margin: the copula is unchanged
    np.testing.assert_array_equal(t.correlation, s.correlation)
    with pytest.raises(DesignError, match="strictly inside"):
        s.with_means(1.2)
    with pytest.raises(DesignError, match="cannot move"):
        s.with_means(0.99999999)


def test_sample_means_within_sampling_error(small_ap: pd.DataFrame) -> None:
    s = fit_simulator(small_ap, null=True)
    X = s.sample_matrix(50_000, np.random.default_rng(11))
    z = (X.mean(axis=0) - s.expected_means.to_numpy()) / (X.std(axis=0, ddof=1)
                                                          / math.sqrt(len(X)))
    assert np.all(np.abs(z) < 4.0), z  # 10 systems: |z| > 4 has probability 6e-4


def test_copula_correlation_reproduced(small_ap: pd.DataFrame, small_sim) -> None:
    s = small_sim
    X = s.sample_matrix(50_000, np.random.default_rng(5))
    iu = np.triu_indices(len(s.systems), 1)
    # the copula's correlation: normal scores of the simulated ranks
    C = np.corrcoef(_normal_scores(X), rowvar=False)
    assert np.abs(C - s.correlation)[iu].max() < 0.02
    # Spearman's rho of a Gaussian copula with correlation r is (6 / pi) asin(r / 2)
    rho = stats.spearmanr(X).statistic
    implied = 6 / np.pi * np.arcsin(s.correlation / 2)
    assert np.abs(rho - implied)[iu].max() < 0.02
    # and the observed Spearman's rho on average (the normal-score and rank estimators of
    # 50 topics differ pair by pair; see docs/test_errors.md)
    observed = stats.spearmanr(to_wide(small_ap).to_numpy()).statistic
    assert np.abs(rho - observed)[iu].mean() < 0.03


def test_independent_copula(small_ap: pd.DataFrame) -> None:
    s = fit_simulator(small_ap, copula="independent")
    X = s.sample_matrix(20_000, np.random.default_rng(1))
    r = stats.spearmanr(X).statistic
    iu = np.triu_indices(len(s.systems), 1)
    assert np.abs(r[iu]).max() < 4 / math.sqrt(20_000) * 1.2


def test_sample_is_reproducible_and_a_long_frame(sim) -> None:
    a = sim.sample(7, seed=4)
    b = sim.sample(7, seed=4)
    pd.testing.assert_frame_equal(a, b)
    c = sim.sample(7, seed=5)
    assert not np.array_equal(a["score"].to_numpy(), c["score"].to_numpy())
    assert list(a.columns[-3:]) == ["topic", "system", "score"]
    assert a["measure"].iloc[0] == "AP" and a["collection"].iloc[0] == "adhoc3"
    assert a["score"].between(0, 1).all()
    frame = irm.replicates.simulate_topics(irm.datasets.load("adhoc3", "AP"), 7, seed=4)
    pd.testing.assert_frame_equal(frame, a)


def test_singular_correlation_with_more_systems_than_topics(ap: pd.DataFrame) -> None:
    few = ap[ap["topic"].astype(str).isin([str(t) for t in sorted(
        ap["topic"].astype(str).unique())[:12]])]
    s = fit_simulator(few)
    assert np.linalg.matrix_rank(s.correlation) < len(s.systems)
    X = s.sample_matrix(5000, np.random.default_rng(0))
    assert np.isfinite(X).all() and X.shape == (5000, 40)


def test_refusals(ap: pd.DataFrame, small_ap: pd.DataFrame, small_sim) -> None:
    with pytest.raises(ArgumentError, match="unknown margins"):
        fit_simulator(small_ap, margins="gamma")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="unknown copula"):
        fit_simulator(small_ap, copula="t")  # type: ignore[arg-type]
    with pytest.raises(DesignError, match="discrete measure"):
        fit_simulator(small_ap, margins="betabinom")
    with pytest.raises(DataFormatError, match="lattice|0, 1/10"):
        fit_simulator(small_ap, k=10)
    bad = small_ap.copy()
    bad["score"] = bad["score"] * 3
    with pytest.raises(DataFormatError, match=r"outside"):
        fit_simulator(bad)
    const = small_ap.copy()
    const.loc[const["system"] == "sys2", "score"] = 0.25
    with pytest.raises(DesignError, match="sys2.*constant"):
        fit_simulator(const)
    with pytest.raises(DesignError, match="no system"):
        small_sim.margin("nope")


def test_unreachable_means_raise_or_drop() -> None:
    from irmodels.errors import DataQualityWarning

    ap8 = irm.datasets.load("adhoc8", "AP")
    keep = ["run1", "run56", "run2", "run3", "run4", "run5", "run6"]
    data = ap8[ap8["system"].isin(keep)]
    s = fit_simulator(data)
    target = float(s.expected_means.mean())
    # run1 and run56 average below 0.005 AP: their margins cannot reach the common mean
    with pytest.raises(DesignError, match="cannot move system 'run"):
        s.with_means(target)
    with pytest.warns(DataQualityWarning, match="2 of 7 systems.*run1, run56|run56, run1"):
        n = s.null()
    assert set(n.systems) == set(keep) - {"run1", "run56"}
    assert np.ptp(n.expected_means.to_numpy()) < 1e-10
    sub = s.select(["run3", "run2"])
    assert sub.systems == ("run3", "run2")
    np.testing.assert_allclose(sub.correlation[0, 1], s.correlation[s.systems.index("run3"),
                                                                     s.systems.index("run2")])
    with pytest.warns(DataQualityWarning, match="left out of the trials"):
        study = irm.studies.test_errors(s, tests=["t"], sizes=[5], n_trials=10, seed=0)
    assert study.n_systems == 5


def test_p_at_k_off_the_lattice_is_continuous(p10: pd.DataFrame) -> None:
    # a P@10 column averaged over two halves of the topics' judgements is no longer on the
    # lattice: the measure name alone does not make it discrete
    off = p10.copy()
    off["score"] = (off["score"] * 0.9 + 0.005).clip(0, 1)
    s = fit_simulator(off)
    assert s.k is None and set(s.margins["family"]) <= {"truncnorm", "beta", "kernel"}
    with pytest.raises(DataFormatError, match="k=None"):
        fit_simulator(off, k=10)


def test_margins_named_per_system(small_ap: pd.DataFrame, small_sim) -> None:
    s = fit_simulator(small_ap, margins={"sys2": "kernel", "sys3": "truncnorm"})
    fam = s.margins.set_index("system")["family"]
    assert fam["sys2"] == "kernel" and fam["sys3"] == "truncnorm"
    auto = small_sim.margins.set_index("system")["family"]
    assert (fam.drop(["sys2", "sys3"]) == auto.drop(["sys2", "sys3"])).all()
    with pytest.raises(DesignError, match="does not have"):
        fit_simulator(small_ap, margins={"nope": "beta"})
    with pytest.raises(ArgumentError, match="unknown margins 'gamma'"):
        fit_simulator(small_ap, margins={"sys2": "gamma"})


@pytest.mark.parametrize("mu, sd", [(0.3, 0.2), (-0.5, 0.3), (1.4, 0.25), (0.9, 0.05),
                                    (-3.0, 0.4), (5.0, 0.5), (-2.0, 0.05), (3.0, 0.05)])
def test_truncated_normal_quantiles_are_scipys(mu: float, sd: float) -> None:

    u = np.random.default_rng(0).uniform(size=(500, 1))
    want = stats.truncnorm.ppf(u, -mu / sd, (1 - mu) / sd, loc=mu, scale=sd)
    np.testing.assert_allclose(truncnorm_ppf(u, np.array([mu]), np.array([sd])), want,
                               rtol=0, atol=1e-12)
