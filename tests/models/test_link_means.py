"""Means and comparisons on the link and response scales (irmodels.models._link_means) and the
``scale=``/``contrast=`` options of ``FittedModel.tukey``/``dunnett`` on every kind of fit (the
numbers against emmeans are in test_glm_against_r.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, ndtri

import irmodels as irm
from irmodels.errors import ArgumentError, DesignError
from irmodels.models import _link_means as lm
from irmodels.models._family import LINKS
from irmodels.models.base import FittedModel


def test_means_frame_by_hand():
    eta = pd.Series([-1.0, 0.2, 2.0], index=["a", "b", "c"])
    cov = np.array([[0.04, 0.01, 0.0], [0.01, 0.09, 0.02], [0.0, 0.02, 0.25]])
    z = ndtri(0.975)
    se = np.sqrt(np.diag(cov))
    link = lm.means_frame(eta, cov)
    np.testing.assert_allclose(link["mean"], eta, atol=0)
    np.testing.assert_allclose(link["lower"], eta - z * se, atol=1e-15)
    resp = lm.means_frame(eta, cov, LINKS["logit"], level=0.9)
    p = expit(eta.to_numpy())
    np.testing.assert_allclose(resp["mean"], p, atol=1e-15)
    np.testing.assert_allclose(resp["se"], p * (1 - p) * se, atol=1e-15)
    z90 = ndtri(0.95)
    np.testing.assert_allclose(resp["lower"], expit(eta - z90 * se), atol=1e-15)
    np.testing.assert_allclose(resp["upper"], expit(eta + z90 * se), atol=1e-15)
    assert (resp["lower"] > 0).all() and (resp["upper"] < 1).all()
    rate = lm.means_frame(eta, cov, LINKS["log"])
    np.testing.assert_allclose(rate["se"], np.exp(eta) * se, atol=1e-14)
    with pytest.raises(ArgumentError, match="level"):
        lm.means_frame(eta, cov, level=1.5)


def test_response_covariance_is_the_delta_method():
    eta = np.array([0.3, -0.4])
    cov = np.array([[0.05, 0.02], [0.02, 0.07]])
    J = np.diag(np.exp(eta))
    np.testing.assert_allclose(lm.response_cov(eta, cov, LINKS["log"]), J @ cov @ J,
                               atol=1e-16)


def test_resolve_contrast():
    assert lm.resolve_contrast(LINKS["log"], None) == "ratio"
    assert lm.resolve_contrast(LINKS["cloglog"], None) == "difference"
    assert lm.resolve_contrast(LINKS["logit"], "difference") == "difference"
    with pytest.raises(ArgumentError, match="log or logit link.*contrast='difference'"):
        lm.resolve_contrast(LINKS["probit"], "ratio")
    with pytest.raises(ArgumentError, match="did you mean 'ratio'"):
        lm.resolve_contrast(LINKS["log"], "ration")


def test_ratio_columns():
    t = pd.DataFrame({"diff": [0.5, -1.0], "se": [0.2, 0.1], "lower": [0.1, -1.3],
                      "upper": [0.9, -0.7]})
    out = lm.ratio_columns(t, se="se")
    assert list(out.columns) == ["diff", "se", "lower", "upper", "ratio", "ratio_se",
                                 "ratio_lower", "ratio_upper"]
    np.testing.assert_allclose(out["ratio"], np.exp(t["diff"]))
    np.testing.assert_allclose(out["ratio_se"], np.exp(t["diff"]) * t["se"])
    np.testing.assert_allclose(out["ratio_upper"], np.exp(t["upper"]))


@pytest.fixture
def anova_fit():
    x = np.array([[0.30, 0.35, 0.50], [0.20, 0.28, 0.33], [0.55, 0.52, 0.70],
                  [0.10, 0.18, 0.22], [0.40, 0.41, 0.58]])
    return irm.anova("MD1", irm.from_wide(pd.DataFrame(x, columns=["a", "b", "c"])))


def test_one_scale_models_give_the_same_numbers(anova_fit):
    """A model without a link (least squares) has one scale: scale='response' is the link
    scale, as emmeans on an lm; a ratio is refused."""
    a = anova_fit.tukey()
    b = anova_fit.tukey(scale="response")
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    c = anova_fit.tukey(scale="response", contrast="difference")
    pd.testing.assert_frame_equal(a.pairs, c.pairs)
    pd.testing.assert_frame_equal(anova_fit.dunnett("a").table,
                                  anova_fit.dunnett("a", scale="response").table)
    with pytest.raises(ArgumentError, match="one scale"):
        anova_fit.tukey(scale="response", contrast="ratio")
    with pytest.raises(ArgumentError, match="pass scale='response'"):
        anova_fit.tukey(contrast="difference")
    with pytest.raises(ArgumentError, match="did you mean 'response'"):
        anova_fit.tukey(scale="respons")


def test_transformed_response_refuses_the_response_scale():
    x = np.array([[0.30, 0.35, 0.50], [0.20, 0.28, 0.33], [0.55, 0.52, 0.70],
                  [0.10, 0.18, 0.22]])
    fit = irm.anova("logit(score) ~ topic + system",
                    irm.from_wide(pd.DataFrame(x, columns=["a", "b", "c"])))
    assert fit.tukey().n_pairs == 3  # the link (logit) scale works
    with pytest.raises(DesignError, match="transformed response logit"):
        fit.tukey(scale="response")


@pytest.fixture
def glm_fit(rng):
    t = np.repeat(np.arange(10), 4)
    s = np.tile(np.arange(4), 10)
    p = expit(rng.normal(0, 0.7, 10)[t] + np.array([-0.4, 0.0, 0.3, 0.8])[s])
    d = pd.DataFrame({"topic": [f"t{i}" for i in t], "system": [f"s{j}" for j in s],
                      "rel": rng.binomial(10, p).astype(float)})
    return irm.anova("rel ~ topic + system", d, family="binomial", trials=10)


def test_glm_comparisons_by_hand(glm_fit):
    """Ratio contrasts are exp of the link-scale ones with their tests; the difference
    contrasts compare the back-transformed means with delta-method SEs."""
    link = glm_fit.tukey()
    ratio = glm_fit.tukey(scale="response")
    np.testing.assert_allclose(ratio.pairs["ratio"], np.exp(link.pairs["diff"]), atol=0)
    np.testing.assert_allclose(ratio.pairs["ratio_lower"], np.exp(link.pairs["lower"]), atol=0)
    pd.testing.assert_series_equal(ratio.pairs["p_adj"], link.pairs["p_adj"])
    assert "odds ratio" in ratio.means_kind
    diff = glm_fit.tukey(scale="response", contrast="difference")
    p = glm_fit.marginal_means(scale="response")
    np.testing.assert_allclose(diff.means, p, atol=1e-15)
    V = glm_fit.marginal_means_cov(scale="response").to_numpy()
    se01 = np.sqrt(V[0, 0] + V[1, 1] - 2 * V[0, 1])
    q = np.sqrt(2) * abs(p.iloc[0] - p.iloc[1]) / se01
    assert diff.pairs["q"].iloc[0] == pytest.approx(q, rel=1e-12)
    p_adj = irm.ptukey(q, 4, np.inf, lower_tail=False)
    assert diff.pairs["p_adj"].iloc[0] == pytest.approx(float(p_adj), abs=1e-12)
    dn = glm_fit.dunnett("s0", scale="response")
    assert {"ratio", "ratio_se", "ratio_lower", "ratio_upper"} <= set(dn.table.columns)
    assert np.isposinf(glm_fit.dunnett("s0").df)
    one_sided = glm_fit.dunnett("s0", scale="response", alternative="greater")
    assert np.isposinf(one_sided.table["ratio_upper"]).all()


def test_a_model_with_a_link_name_gets_both_scales(glm_fit):
    """The hooks tukey/dunnett use (marginal_means, marginal_means_cov, link) are all a GLMM
    needs: a model whose ``link`` is a name or a Link object gives the same comparisons."""
    import dataclasses

    by_name = glm_fit
    assert isinstance(by_name.link, str)
    obj = dataclasses.replace(glm_fit)
    object.__setattr__(obj, "link", LINKS["logit"])
    pd.testing.assert_frame_equal(by_name.tukey(scale="response").pairs,
                                  obj.tukey(scale="response").pairs)



class _LinkModel(FittedModel):
    """The hooks a model with a link gives FittedModel (a GLMM's): link-scale means, their
    covariance, ``link`` (a name) and ``df = inf``; here emmeans' own numbers of a glmer fit."""

    _means_kind = "given"

    def __init__(self, means, cov, link):
        self._m, self._v, self.link = means, cov, link
        self.df_resid = np.inf

    def fitted(self):
        return np.zeros(1)

    def residuals(self):
        return np.zeros(1)

    def marginal_means(self, factor="system"):
        return self._m

    def marginal_means_cov(self, factor="system"):
        return pd.DataFrame(self._v, index=self._m.index, columns=self._m.index)

    def contrast_df(self, L, factor="system"):
        return np.full(np.atleast_2d(L).shape[0], np.inf)


@pytest.fixture(scope="module")
def glmer_ref(reference_dir):
    import json

    return json.loads((reference_dir / "glm.json").read_text())["glmer_logit"]


def test_glmm_hooks_give_emmeans_on_both_scales(glmer_ref):
    """From a GLMM's link-scale means and covariance (emmeans' own, of a glmer fit in
    tests/reference/glm.R) the response-scale means, odds ratios and regrid differences with
    their Tukey adjustment are emmeans' to 1e-10."""
    r = glmer_ref
    means = pd.Series(r["emm_link"]["estimate"], index=pd.Index(r["emm_link"]["level"],
                                                                name="system"))
    model = _LinkModel(means, np.array(r["emm_vcov"]), "logit")
    resp = lm.means_frame(means, np.array(r["emm_vcov"]), LINKS["logit"])
    for col, key in (("mean", "estimate"), ("se", "SE"), ("lower", "lower"), ("upper", "upper")):
        np.testing.assert_allclose(resp[col], r["emm_response"][key], atol=1e-10, err_msg=col)
    ratio = model.tukey(scale="response")
    pr = r["pairs_response"]
    assert [f"{a} / {b}" for a, b in zip(ratio.pairs["a"], ratio.pairs["b"])] == pr["contrast"]
    for col, key in (("ratio", "estimate"), ("ratio_se", "SE"), ("p_adj", "p_value"),
                     ("ratio_lower", "lower"), ("ratio_upper", "upper")):
        np.testing.assert_allclose(ratio.pairs[col], pr[key], atol=1e-10, err_msg=col)
    diff = model.tukey(scale="response", contrast="difference")
    pdif = r["pairs_difference"]
    for col, key in (("diff", "estimate"), ("p_adj", "p_value"), ("lower", "lower"),
                     ("upper", "upper")):
        np.testing.assert_allclose(diff.pairs[col], pdif[key], atol=1e-10, err_msg=col)


def test_glmm_result_compares_on_both_scales(glmer_ref, reference_dir):
    """irm.mixed(family='binomial') (G1's GlmmResult) through the same hooks: the response
    scale's numbers follow its link-scale ones and equal emmeans on glmer's fit (glmer run to
    its optimum with tolPwrss = 1e-14: fixed effects 1.6e-7, the means' covariance 3.9e-6
    relative (lme4's finite-difference Hessian), Tukey p-values 3.2e-6 apart when measured)."""
    r = glmer_ref
    d = pd.read_csv(reference_dir / "data" / "glmm" / r["file"])
    fit = irm.mixed("rel ~ system + (1|topic)", d, family="binomial", trials=10)
    link = fit.tukey()
    ratio = fit.tukey(scale="response")
    np.testing.assert_allclose(ratio.pairs["ratio"], np.exp(link.pairs["diff"]), rtol=1e-14)
    pd.testing.assert_series_equal(ratio.pairs["p_adj"], link.pairs["p_adj"])
    np.testing.assert_allclose(fit.marginal_means(), r["emm_link"]["estimate"], atol=1e-6)
    np.testing.assert_allclose(fit.marginal_means_cov(), r["emm_vcov"], rtol=2e-5)
    np.testing.assert_allclose(ratio.pairs["ratio"], r["pairs_response"]["estimate"], rtol=1e-6)
    np.testing.assert_allclose(ratio.pairs["p_adj"], r["pairs_response"]["p_value"], atol=2e-5)
    p = fit.marginal_means(scale="response")
    diff = fit.tukey(scale="response", contrast="difference")
    np.testing.assert_allclose(diff.means, p, rtol=1e-14)
