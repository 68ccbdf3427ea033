"""The exact gradient of the GLMM Laplace deviance (irmodels/models/_glmm_grad.py) against
central differences of the deviance, and fits on it against fits on finite differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irmodels.models import _glmm, _glmm_grad
from irmodels.models._glmm import GlmmDeviance, fit_glmm, glmm_design

DATA = Path(__file__).resolve().parents[1] / "reference" / "data" / "glmm"


def _cbpp() -> pd.DataFrame:
    return pd.read_csv(DATA / "cbpp.csv", dtype={"herd": str, "period": str})


def _crossed(seed: int = 3, topics: int = 12, systems: int = 25) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.repeat(np.arange(topics), systems)
    s = np.tile(np.arange(systems), topics)
    eta = -0.3 + rng.normal(0, 1.1, topics)[t] + rng.normal(0, 0.6, systems)[s]
    rel = rng.binomial(10, 1 / (1 + np.exp(-eta)))
    return pd.DataFrame({"topic": [f"t{i:02d}" for i in t],
                         "system": pd.Categorical([f"s{j:02d}" for j in s]), "rel": rel})


DESIGNS = {
    "cbpp_logit": ("incidence ~ C(period) + (1|herd)", _cbpp,
                   dict(family="binomial", trials="size")),
    "cbpp_probit": ("incidence ~ C(period) + (1|herd)", _cbpp,
                    dict(family="binomial", link="probit", trials="size")),
    "cbpp_cloglog": ("incidence ~ C(period) + (1|herd)", _cbpp,
                     dict(family="binomial", link="cloglog", trials="size")),
    "crossed": ("rel ~ 1 + (1|topic) + (1|system)", _crossed,
                dict(family="binomial", trials=10)),
    "slopes": ("succ ~ x + (1 + x|g)", lambda: pd.read_csv(DATA / "binom_slopes.csv"),
               dict(family="binomial", trials="n")),
    "poisson": ("rel ~ system + (1|topic)", lambda: pd.read_csv(DATA / "poisson_depth.csv"),
                dict(family="poisson", offset="log_depth")),
    # an observation-level term (300 levels beside 12 topics): H inverted by blocks
    "olre_logit": ("rel ~ 1 + (1|topic) + (1|topic:system)", _crossed,
                   dict(family="binomial", trials=10)),
    "olre_probit": ("rel ~ 1 + (1|topic) + (1|topic:system)", _crossed,
                    dict(family="binomial", link="probit", trials=10)),
}


def _numgrad(f, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    g = np.empty_like(x)
    for i in range(len(x)):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_gradient_equals_central_differences(name):
    formula, data, kw = DESIGNS[name]
    gd = glmm_design(formula, data(), **kw)
    dev = GlmmDeviance(gd)
    assert dev.exact is not None
    rng = np.random.default_rng(7)
    # away from the optimum (a gradient of order 1-100) and off the bounds
    theta = np.where(gd.lmm.lower == 0, 0.7, 0.2) + 0.1 * rng.random(dev.nt)
    m = dev.pirls(theta, None, tol=1e-13)
    g1 = dev.exact.stage1(m)
    n1 = _numgrad(lambda t: dev.laplace(dev.pirls(t, None, tol=1e-13)), theta)
    np.testing.assert_allclose(g1, n1, rtol=1e-6, atol=1e-6)
    x = np.concatenate([theta, m.beta + 0.05 * rng.standard_normal(dev.p)])
    g2 = dev.exact.stage2(dev.pirls(x[:dev.nt], x[dev.nt:], tol=1e-13))
    n2 = _numgrad(lambda z: dev.laplace(dev.pirls(z[:dev.nt], z[dev.nt:], tol=1e-13)), x)
    assert np.max(np.abs(n2)) > 1  # a real slope, not a stationary point
    np.testing.assert_allclose(g2, n2, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["olre_logit", "olre_probit"])
def test_gradient_by_blocks_equals_the_whole_inverse(name):
    """With one scalar term holding most random effects, H^-1 is formed from the Schur
    complement of that term's diagonal block; the gradient is the one of the whole inverse."""
    formula, data, kw = DESIGNS[name]
    dev = GlmmDeviance(glmm_design(formula, data(), **kw))
    g = dev.exact
    assert g is not None and g.split == (12, 312)  # topic:system after the 12 topics
    rng = np.random.default_rng(2)
    theta = np.array([0.9, 0.5])
    beta = dev.pirls(theta, None).beta + 0.1 * rng.standard_normal(dev.p)
    m = dev.pirls(theta, beta, tol=1e-13)
    M = rng.standard_normal((312, 312))
    M = M @ M.T / 312 + np.eye(312)
    M[12:, 12:] = np.diag(np.diag(M)[12:])  # the pattern of H: that block diagonal
    np.testing.assert_allclose(g._inverse(M), np.linalg.inv(M), rtol=0, atol=1e-12)
    split2, split1 = g.stage2(m), g.stage1(dev.pirls(theta, None, tol=1e-13))
    g.split = None
    np.testing.assert_allclose(split2, g.stage2(m), rtol=1e-11)
    np.testing.assert_allclose(split1, g.stage1(dev.pirls(theta, None, tol=1e-13)), rtol=1e-11)


@pytest.mark.parametrize("name,link,nagq", [("cbpp", "logit", 10), ("cbpp", "probit", 7),
                                           ("crossed", "logit", 5)])
def test_agq_gradient_equals_central_differences(name, link, nagq):
    if name == "cbpp":
        gd = glmm_design("incidence ~ C(period) + (1|herd)", _cbpp(), family="binomial",
                         link=link, trials="size", nagq=nagq)
    else:
        gd = glmm_design("rel ~ system + (1|topic)", _crossed(), family="binomial", trials=10,
                         nagq=nagq)
    dev = GlmmDeviance(gd)
    rng = np.random.default_rng(11)
    m = dev.pirls(np.array([0.8]), None)
    x = np.concatenate([[0.8], m.beta + 0.05 * rng.standard_normal(dev.p)])
    ga = _glmm_grad.agq_gradient(dev, dev.pirls(x[:1], x[1:], tol=1e-13))
    gn = _numgrad(lambda z: dev.agq(dev.pirls(z[:1], z[1:], tol=1e-13)), x)
    assert np.max(np.abs(gn)) > 1
    np.testing.assert_allclose(ga, gn, rtol=1e-6, atol=1e-6)
    assert dev.vg(x)[0] == pytest.approx(dev(x), abs=1e-9)  # the stage-2 objective is AGQ's


def test_gradient_not_used_where_it_does_not_apply():
    gd = glmm_design("incidence ~ C(period) + (1|herd)", _cbpp(), family="binomial",
                     trials="size")
    fam_beta = glmm_design("score ~ 1 + (1|topic)", pd.DataFrame(
        {"score": [0.2, 0.4, 0.5, 0.7, 0.3, 0.6], "topic": list("aabbcc")}), family="beta").family
    assert _glmm_grad.gradient_available(gd.family, 15)
    assert not _glmm_grad.gradient_available(gd.family, _glmm_grad.GRAD_MAX_Q + 1)
    assert not _glmm_grad.gradient_available(fam_beta, 15)  # dispersion: its own Laplace


@pytest.mark.parametrize("name,formula", [
    ("crossed", "rel ~ 1 + (1|topic) + (1|system)"),
    ("agq", "rel ~ 1 + (1|topic)"),
    # 25 fixed effects: no Hessian (lme4 uses R_X), L-BFGS-B alone on the exact gradient
    ("many_fixed", "rel ~ system + (1|topic)"),
])
def test_fit_on_exact_gradient_equals_fit_on_finite_differences(monkeypatch, name, formula):
    kw = dict(family="binomial", trials=10, nagq=9 if name == "agq" else 1)
    # many_fixed: 20 systems (21 parameters, still past _DERIV_NPAR_MAX = 20: vcov from R_X);
    # the finite-difference fit's cost grows with the square of the parameters
    data = _crossed(systems=20) if name == "many_fixed" else _crossed()
    exact = fit_glmm(glmm_design(formula, data, **kw))
    assert exact.dev.exact is not None and exact.converged
    monkeypatch.setattr(_glmm, "gradient_available", lambda fam, q: False)
    fd = fit_glmm(glmm_design(formula, data, **kw))
    assert fd.dev.exact is None
    assert exact.vcov_method == fd.vcov_method == ("RX" if name == "many_fixed" else "hessian")
    assert exact.objective == pytest.approx(fd.objective, abs=1e-7)
    assert exact.objective <= fd.objective + 1e-9
    np.testing.assert_allclose(exact.x, fd.x, atol=2e-5)
    np.testing.assert_allclose(np.sqrt(np.diag(exact.vcov)), np.sqrt(np.diag(fd.vcov)),
                               rtol=1e-4)
    # at most half the deviance evaluations (a third on the newest scipy; 24 of 68 on 1.15)
    assert exact.dev.n_evals < fd.dev.n_evals / 2


def test_dense_pattern_factor_beyond_dense_max_q_equals_sparse_lu(monkeypatch):
    """A complete crossed design with more than DENSE_MAX_Q random effects: M is dense (the
    topic-by-system block), factorised dense from the pattern of Z'WZ; the same fit as the
    sparse LU's. (DENSE_MAX_Q lowered from 300 to 50, where the engine reads it: the same
    branches on 74 random effects instead of 304.)"""
    monkeypatch.setattr(_glmm, "DENSE_MAX_Q", 50)
    d = _crossed(seed=5, topics=60, systems=14)
    gd = glmm_design("rel ~ 1 + (1|topic) + (1|system)", d, family="binomial", trials=10)
    assert gd.lmm.Z.shape[1] > _glmm.DENSE_MAX_Q
    fit = fit_glmm(gd)
    assert fit.dev.pairs is not None and fit.dev.dense
    monkeypatch.setattr(_glmm, "_DENSE_PATTERN_MAX_Q", 0)
    ref = fit_glmm(glmm_design("rel ~ 1 + (1|topic) + (1|system)", d, family="binomial",
                               trials=10))
    assert ref.dev.pairs is None and not ref.dev.dense
    assert fit.objective == pytest.approx(ref.objective, abs=1e-8)
    np.testing.assert_allclose(fit.x, ref.x, atol=1e-6)
    np.testing.assert_allclose(fit.vcov, ref.vcov, rtol=1e-6)
    np.testing.assert_allclose(fit.mode.u, ref.mode.u, atol=1e-6)
