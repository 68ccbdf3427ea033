"""GLMs (``irm.anova(..., family=)``) against R's ``glm``, ``anova(fit, test = "Chisq")``,
``car::Anova(type = 3, test = "LR")``, ``drop1`` and emmeans on both scales
(tests/reference/glm.R -> glm.json; data from tests/reference/make_glm_data.py), and one case
against statsmodels' GLM.

Measured (max abs error): coefficients, SEs, z, p, deviances, logLik, AIC, BIC, residuals
<= 6e-11; analysis-of-deviance tables <= 1e-11; emmeans means, SEs, intervals on both scales,
Tukey pairs (link, ratio, regrid) and their adjusted p-values <= 1e-12; Dunnett estimates and
SEs <= 1e-12, Dunnett adjusted p-values within 3.2e-6 of mvtnorm's deterministic (Miwa) values:
the error of the quasi-Monte Carlo integration of :func:`irmodels.inference.dunnett.pmvt_max`
for a correlation that is not of product form.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import irmodels as irm

TOL = 1e-8  # the GLM itself (coefficients, deviances, tables, residuals)
TOL_EMM = 1e-6  # emmeans: means, SEs, intervals, Tukey-adjusted p-values
TOL_MVT = 1e-5  # Dunnett p-values (the kernel's QMC error, measured 3.2e-6)

CASES = {
    "binomial_logit": ("rel ~ topic + system", dict(family="binomial", trials=10)),
    "binomial_probit": ("rel ~ topic + system", dict(family="binomial", link="probit",
                                                     trials=10)),
    "poisson_offset": ("found ~ topic + system", dict(family="poisson", offset="log_depth")),
}


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "glm.json").read_text())


def _data(reference_dir, case: dict) -> pd.DataFrame:
    return pd.read_csv(reference_dir / "data" / "glmm" / case["file"])


@pytest.fixture(scope="module")
def fits(ref, reference_dir):
    out = {}
    for name, (formula, kw) in CASES.items():
        out[name] = irm.anova(formula, _data(reference_dir, ref[name]), **kw)
    return out


def _close(actual, expected, tol, what):
    a = np.atleast_1d(np.asarray(actual, dtype=float))
    e = np.asarray([np.nan if v is None else v for v in np.atleast_1d(expected)], dtype=float)
    assert a.shape == e.shape, what
    np.testing.assert_allclose(a, e, rtol=0, atol=tol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("name", list(CASES))
def test_fit_equals_glm(fits, ref, name):
    fit, r = fits[name], ref[name]
    assert fit.family == r["family"] and fit.link == r["link"]
    assert list(fit.coefficients.index) == r["coef"]["name"]
    f = fit.fixed
    for col, key in (("estimate", "estimate"), ("se", "SE"), ("z", "z"), ("p", "p")):
        _close(f[col], r["coef"][key], TOL, f"{name} {col}")
    _close(np.diag(fit.vcov), r["vcov_diag"], TOL, "vcov")
    for attr, key in (("deviance", "deviance"), ("null_deviance", "null_deviance"),
                      ("loglik", "loglik"), ("aic", "aic"), ("bic", "bic")):
        _close(getattr(fit, attr), r[key], TOL, attr)
    assert fit.df_resid == r["df_residual"] and fit.df_null == r["df_null"]
    _close(fit.fitted(), r["fitted"], TOL, "fitted")
    _close(fit.fitted(scale="link"), r["linear_predictor"], TOL, "linear predictor")
    for kind in ("deviance", "pearson", "response", "working"):
        _close(fit.residuals(kind), r[f"resid_{kind}"], TOL, f"{kind} residuals")
    # R's convergence rule is met after as many iterations as glm.fit's default run takes
    assert fit.converged and fit.iterations == r["iter_default"]
    # ... whose estimates are within R's loose tolerance of the refined ones
    _close(fit.coefficients, r["coef_default"], 1e-4, "R default fit")  # probit: 2.4e-5 off


@pytest.mark.parametrize("name", list(CASES))
def test_analysis_of_deviance(fits, ref, name):
    fit, r = fits[name], ref[name]
    seq = fit.anova()
    a = r["anova_chisq"]
    assert list(seq.index) == a["term"]
    for col, key in (("df", "Df"), ("deviance", "Deviance"), ("df_resid", "Resid. Df"),
                     ("resid_deviance", "Resid. Dev"), ("p", "Pr(>Chi)")):
        _close(seq[col], a[key], TOL, f"anova {col}")
    t3 = fit.anova(type=3)
    c = r["anova_type3"]
    assert list(t3.index) == c["term"]
    _close(t3["deviance"], c["LR Chisq"], TOL, "type III LR")
    _close(t3["df"], c["Df"], 0, "type III df")
    _close(t3["p"], c["Pr(>Chisq)"], TOL, "type III p")
    d1 = r["drop1"]  # drop1: the deviance of the model without each term
    _close(t3["resid_deviance"], d1["Deviance"][1:], TOL, "drop1 deviance")
    # additive model: type II = type III
    pd.testing.assert_frame_equal(fit.anova(type=2), t3, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_marginal_means_both_scales(fits, ref, name):
    fit, r = fits[name], ref[name]
    link = fit.marginal_means_table("system")
    assert list(link.index) == r["emm_link"]["level"]
    for col, key in (("mean", "estimate"), ("se", "SE"), ("lower", "lower"), ("upper", "upper")):
        _close(link[col], r["emm_link"][key], TOL_EMM, f"link {col}")
    resp = fit.marginal_means_table("system", scale="response")
    for col, key in (("mean", "estimate"), ("se", "SE"), ("lower", "lower"), ("upper", "upper")):
        _close(resp[col], r["emm_response"][key], TOL_EMM, f"response {col}")
    _close(fit.marginal_means("system", scale="response"), r["emm_response"]["estimate"],
           TOL_EMM, "marginal_means(scale='response')")
    se_resp = np.sqrt(np.diag(fit.marginal_means_cov("system", scale="response")))
    _close(se_resp, r["emm_response"]["SE"], TOL_EMM, "delta-method covariance")


def _pair_labels(pairs: pd.DataFrame, sep: str) -> list[str]:
    return [f"{a}{sep}{b}" for a, b in zip(pairs["a"], pairs["b"])]


@pytest.mark.parametrize("name", list(CASES))
def test_tukey_on_both_scales(fits, ref, name):
    fit, r = fits[name], ref[name]
    tk = fit.tukey("system")
    pl = r["pairs_link"]
    assert _pair_labels(tk.pairs, " - ") == pl["contrast"]
    assert tk.df_error == np.inf
    for col, key in (("diff", "estimate"), ("p_adj", "p_value"), ("lower", "lower"),
                     ("upper", "upper")):
        _close(tk.pairs[col], pl[key], TOL_EMM, f"link {col}")
    _close(np.sqrt(2) * np.abs(pl["z_ratio"]), tk.pairs["q"], TOL_EMM, "q = sqrt(2)|z|")
    diff = fit.tukey("system", scale="response", contrast="difference")
    pdif = r["pairs_difference"]
    for col, key in (("diff", "estimate"), ("p_adj", "p_value"), ("lower", "lower"),
                     ("upper", "upper")):
        _close(diff.pairs[col], pdif[key], TOL_EMM, f"regrid {col}")
    if fit.link == "probit":  # no ratio: the default is the difference of probabilities
        pd.testing.assert_frame_equal(fit.tukey("system", scale="response").pairs, diff.pairs)
        return
    ratio = fit.tukey("system", scale="response")
    pr = r["pairs_response"]
    assert _pair_labels(ratio.pairs, " / ") == pr["contrast"]
    for col, key in (("ratio", "estimate"), ("ratio_se", "SE"), ("p_adj", "p_value"),
                     ("ratio_lower", "lower"), ("ratio_upper", "upper")):
        _close(ratio.pairs[col], pr[key], TOL_EMM, f"ratio {col}")
    # the ratio's tests are the link scale's
    pd.testing.assert_series_equal(ratio.pairs["p_adj"], tk.pairs["p_adj"])


@pytest.mark.parametrize("name", list(CASES))
def test_dunnett_on_both_scales(fits, ref, name):
    fit, r = fits[name], ref[name]
    control = r["emm_link"]["level"][0]
    dn = fit.dunnett(control)
    dl = r["dunnett_link"]
    assert [f"{lv} - {control}" for lv in dn.table["level"]] == dl["contrast"]
    for col, key in (("diff", "estimate"), ("se", "SE"), ("statistic", "z_ratio")):
        _close(dn.table[col], dl[key], TOL_EMM, f"dunnett {col}")
    _close(dn.table["p_adj"], dl["p_precise"], TOL_MVT, "dunnett p")
    dd = fit.dunnett(control, scale="response", contrast="difference")
    dr = r["dunnett_difference"]
    for col, key in (("diff", "estimate"), ("se", "SE"), ("statistic", "z_ratio")):
        _close(dd.table[col], dr[key], TOL_EMM, f"dunnett regrid {col}")
    _close(dd.table["p_adj"], dr["p_precise"], TOL_MVT, "dunnett regrid p")
    if fit.link != "probit":
        ratio = fit.dunnett(control, scale="response")
        rr = r["dunnett_response"]
        _close(ratio.table["ratio"], rr["estimate"], TOL_EMM, "dunnett ratio")
        _close(ratio.table["ratio_se"], rr["SE"], TOL_EMM, "dunnett ratio SE")
        # the link scale's tests (to the QMC noise: df = inf is integrated without a seed)
        _close(ratio.table["p_adj"], dn.table["p_adj"], TOL_MVT, "ratio tests on the link scale")


def test_against_statsmodels(fits, ref, reference_dir):
    """The binomial (successes, failures) and the Poisson with an offset, against statsmodels'
    GLM on the same treatment-coded design."""
    sm = pytest.importorskip("statsmodels.api")
    for name in ("binomial_logit", "poisson_offset"):
        fit = fits[name]
        d = _data(reference_dir, ref[name])
        X = fit._design.X
        if name == "binomial_logit":
            endog = np.column_stack([d["rel"], 10 - d["rel"]])
            res = sm.GLM(endog, X, family=sm.families.Binomial()).fit(tol=1e-14)
        else:
            res = sm.GLM(d["found"].to_numpy(), X, family=sm.families.Poisson(),
                         offset=d["log_depth"].to_numpy()).fit(tol=1e-14)
        np.testing.assert_allclose(fit.coefficients, res.params, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fit.fixed["se"], res.bse, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fit.deviance, res.deviance, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fit.null_deviance, res.null_deviance, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fit.loglik, res.llf, rtol=0, atol=1e-8)
        np.testing.assert_allclose(fit.residuals("pearson"), res.resid_pearson, atol=1e-8)


def test_types_2_and_3_with_an_interaction(ref, reference_dir):
    """``found ~ system * depth_level`` (Poisson): the sequential table and the coefficients
    with treatment contrasts, car's type 2 and its type 3 under sum-to-zero contrasts."""
    r = ref["poisson_interaction"]
    fit = irm.anova(r["formula"], _data(reference_dir, r), family="poisson")
    assert list(fit.coefficients.index) == r["coef"]["name"]
    _close(fit.coefficients, r["coef"]["estimate"], TOL, "coefficients")
    _close(fit.deviance, r["deviance"], TOL, "deviance")
    seq = fit.anova()
    _close(seq["deviance"], r["anova_chisq"]["Deviance"], TOL, "type 1")
    _close(seq["p"], r["anova_chisq"]["Pr(>Chi)"], TOL, "type 1 p")
    for k in (2, 3):
        tab, want = fit.anova(type=k), r[f"anova_type{k}"]
        assert list(tab.index) == want["term"]
        _close(tab["deviance"], want["LR Chisq"], TOL, f"type {k}")
        _close(tab["df"], want["Df"], 0, f"type {k} df")
        _close(tab["p"], want["Pr(>Chisq)"], TOL, f"type {k} p")
