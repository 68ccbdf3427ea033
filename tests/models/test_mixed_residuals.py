"""Residual types of mixed fits against lme4 and nlme (fixture tests/reference/
lme4_slopes_residuals.json, written by the residuals block of tests/reference/lme4_slopes.R).

Two levels: end to end (irmodels' own optimum; the residuals then differ from R's by the
optimisers' disagreement, about 1e-7 of their scale) and at R's variance parameters (the
formulas alone: 1e-8 of the scale, and 1e-8 relative for the leverages)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError
from irmodels.models._mixed_residuals import RESIDUAL_TYPES, hat_values

REF = Path(__file__).resolve().parents[1] / "reference"
FIX = json.loads((REF / "lme4_slopes_residuals.json").read_text())
LME4 = {e["name"]: e for e in FIX["fits"]}
NLME = FIX["nlme"]
KEYS = {"response": "response", "pearson": "pearson", "marginal": "marginal",
        "standardized": "standardized"}


def _data(name: str) -> pd.DataFrame:
    if name == "sleepstudy":
        return pd.read_csv(REF / "data/lme4/sleepstudy.csv", dtype={"Subject": str})
    if name == "irslopes":
        return pd.read_csv(REF / "data/lme4/irslopes.csv",
                           dtype={"topic": str, "system": str, "shard": str})
    return pd.read_csv(REF / "data/mixed_hetero.csv", dtype={"topic": str, "system": str})


FORMULA = {"sleepstudy": "Reaction ~ Days + (Days | Subject)",
           "irslopes": "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)"}


@pytest.fixture(scope="module")
def slope_fits():
    return {k: irm.mixed(FORMULA[k], _data(k)) for k in LME4}


@pytest.fixture(scope="module")
def hetero_fit():
    return irm.mixed(NLME["formula"], _data("hetero"), residual=NLME["residual"])


def _close(got, want, rel):
    want = np.asarray(want, dtype=float)
    np.testing.assert_allclose(got, want, rtol=0, atol=rel * np.max(np.abs(want)))


def _at_r_slopes(fit, theta):
    """The slope fit re-evaluated at R's theta (beta, u and sigma follow from theta). lme4
    orders the random terms by decreasing number of levels (stable): its theta is mapped back
    to formula order."""
    blocks = fit._design.blocks
    r_order = sorted(range(len(blocks)), key=lambda i: -blocks[i].n_levels)
    seg, k = {}, 0
    for i in r_order:
        seg[i] = theta[k:k + blocks[i].n_theta]
        k += blocks[i].n_theta
    th = np.concatenate([np.asarray(seg[i], dtype=float) for i in range(len(blocks))])
    pls = fit._dev.pls(th)
    return dataclasses.replace(
        fit, theta=th, sigma=fit._dev.sigma(pls), _pls=pls,
        fixed_estimates=pd.Series(pls.beta, index=fit.fixed_estimates.index))


def _at_r_hetero(fit, e):
    """The varIdent fit re-evaluated at nlme's variance parameters."""
    st = fit._state
    pb = st.problem
    labels = list(fit.sd_ratios.index)
    ratio = np.array([e["ratios"][lab] for lab in labels])
    code = np.asarray(pb.label_code)
    ref = labels[int(np.flatnonzero(code == 0)[0])]
    sigma_ref = e["sigma"] * e["ratios"][ref]
    eta = np.zeros(pb.n_strata - 1)
    for lab, c in zip(labels, code):
        if c:
            eta[c - 1] = math.log(e["ratios"][lab] / e["ratios"][ref])
    names = [rt.name for rt in fit.spec.random]
    theta = np.array([math.sqrt(e["components"][names[k]]) / sigma_ref for k in st.order])
    new = dataclasses.replace(st, theta=theta, eta=eta, sigma=sigma_ref)
    out = dataclasses.replace(fit)
    object.__setattr__(out, "_state", new)
    assert ratio[0] == pytest.approx(1.0)
    return out


@pytest.mark.parametrize("name", list(LME4))
@pytest.mark.parametrize("type", list(KEYS))
def test_slope_residuals_against_lme4(slope_fits, name, type):
    e = LME4[name]
    fit = slope_fits[name]
    assert fit.loglik == pytest.approx(e["logLik"], abs=1e-6)
    _close(fit.residuals(type), e[KEYS[type]], 1e-6)  # end to end
    at_r = _at_r_slopes(fit, e["theta"])
    _close(at_r.residuals(type), e[KEYS[type]], 1e-8)  # the formulas


@pytest.mark.parametrize("name", list(LME4))
def test_slope_hat_values_and_lme4_pearson(slope_fits, name):
    e = LME4[name]
    at_r = _at_r_slopes(slope_fits[name], e["theta"])
    np.testing.assert_allclose(hat_values(at_r), e["hat"], rtol=1e-8)
    assert at_r.sigma == pytest.approx(e["sigma"], rel=1e-9)
    # lme4's type = "pearson" without scaled = TRUE is the response residual of an LMM
    _close(at_r.residuals("response"), e["pearson_unscaled"], 1e-8)
    _close(at_r.fitted(), e["fitted"], 1e-10)


@pytest.mark.parametrize("type", list(KEYS))
def test_hetero_residuals_against_nlme(hetero_fit, type):
    e = NLME
    assert hetero_fit.loglik == pytest.approx(e["logLik"], abs=1e-6)
    _close(hetero_fit.residuals(type), e[KEYS[type]], 1e-5)  # nlme's optimum: ratios to 1e-6
    at_r = _at_r_hetero(hetero_fit, e)
    _close(at_r.residuals(type), e[KEYS[type]], 1e-8)


def test_hetero_pearson_divides_by_the_stratum_sd(hetero_fit):
    r = hetero_fit.residuals()
    sd = np.sqrt(hetero_fit.residual_variance)  # per stratum label
    strata = _data("hetero")["system"].astype(str).map(sd).to_numpy()
    np.testing.assert_allclose(hetero_fit.residuals("pearson"), r / strata, rtol=1e-10)


def test_default_is_response_and_conditional(slope_fits, hetero_fit):
    for fit in (*slope_fits.values(), hetero_fit):
        r = fit.residuals()
        np.testing.assert_array_equal(r, fit.residuals("response"))
        np.testing.assert_allclose(fit.residuals("conditional"), r, rtol=0,
                                   atol=1e-12 * np.max(np.abs(r)))
        y = fit.spec.response_values(fit.data)
        np.testing.assert_allclose(fit.fitted() + r, y, rtol=1e-12)
        # marginal residuals keep the random effects: y - X beta, not y - fitted
        marg = fit.residuals("marginal")
        assert np.max(np.abs(marg - r)) > 0.1 * np.std(r)
        assert np.all(np.isfinite(fit.residuals("standardized")))


def test_standardized_is_pearson_over_sqrt_one_minus_h(slope_fits):
    fit = slope_fits["irslopes"]
    h = hat_values(fit)
    assert np.all((h > 0) & (h < 1))
    scale = 1e-12 * np.max(np.abs(fit.residuals("pearson")))
    np.testing.assert_allclose(fit.residuals("standardized"),
                               fit.residuals("pearson") / np.sqrt(1 - h), rtol=0, atol=scale)
    np.testing.assert_allclose(fit.residuals("pearson"), fit.residuals() / fit.sigma,
                               rtol=0, atol=scale)


def test_intercept_fit_standardized_against_lme4_formula():
    """On a random-intercept fit (the specialised solver), the leverages equal those of the
    same model fitted by the general engine (dense, from Z and Lambda)."""
    d = _data("irslopes")
    a = irm.mixed("score ~ system + (1 | topic) + (1 | topic:system)", d)
    from irmodels.models._lmm import ReTerm, fit_lmm

    b = fit_lmm("score ~ system + (1 | topic) + (1 | topic:system)", d,
                terms=(ReTerm(("topic",)), ReTerm(("topic", "system"))))
    assert a.loglik == pytest.approx(b.loglik, abs=1e-7)
    np.testing.assert_allclose(hat_values(a), hat_values(b), rtol=1e-5)
    np.testing.assert_allclose(a.residuals("standardized"), b.residuals("standardized"),
                               rtol=0, atol=1e-5)


def test_row_order_does_not_change_residuals(slope_fits):
    d = _data("sleepstudy")
    perm = np.random.default_rng(7).permutation(len(d))
    fit = slope_fits["sleepstudy"]
    other = irm.mixed(FORMULA["sleepstudy"], d.iloc[perm].reset_index(drop=True))
    for t in RESIDUAL_TYPES:
        np.testing.assert_allclose(other.residuals(t), fit.residuals(t)[perm], rtol=0,
                                   atol=1e-6 * np.max(np.abs(fit.residuals(t))))


@pytest.mark.parametrize("bad", ["Pearson", "normalized", 1, None])
def test_bad_type_is_refused(slope_fits, hetero_fit, bad):
    for fit in (slope_fits["sleepstudy"], hetero_fit):
        with pytest.raises(ArgumentError, match="type must be one of"):
            fit.residuals(bad)
    if bad == "Pearson":
        with pytest.raises(ArgumentError, match="did you mean 'pearson'"):
            hetero_fit.residuals(bad)
