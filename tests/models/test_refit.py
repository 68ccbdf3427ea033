"""FittedModel.refit (issue 26): every fit refits itself to a new response (lme4's ``refit``)
or to new data, with the same formula, options and criterion; the numbers are those of the
fitting function called again with those options."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm


def _scores(seed: int = 5, topics: int = 10, systems: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(topics)],
                                    [f"s{j}" for j in range(systems)]],
                                   names=["topic", "system"]).to_frame(index=False)
    d["score"] = (rng.normal(0.4, 0.1, topics)[d.index // systems]
                  + 0.03 * (d.index % systems) + rng.normal(0, 0.05, len(d)))
    d["rel"] = rng.binomial(10, 0.4, len(d))
    d["x"] = rng.uniform(0, 1, len(d))
    return d


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        return fn(*args, **kw)


def _new_y(d: pd.DataFrame, seed: int = 9) -> np.ndarray:
    return d["score"].to_numpy() + np.random.default_rng(seed).normal(0, 0.02, len(d))


def test_anova_refit_keeps_the_options():
    d = _scores().drop(index=[0, 5]).reset_index(drop=True)  # unbalanced: ss_type matters
    fit = _quiet(irm.anova, "score ~ system * topic - system:topic", d, ss_type=1, alpha=0.1,
                 method="dense")
    y = _new_y(d)
    again = _quiet(fit.refit, y)
    ref = _quiet(irm.anova, "score ~ system * topic - system:topic", d.assign(score=y),
                 ss_type=1, alpha=0.1, method="dense")
    pd.testing.assert_frame_equal(again.table, ref.table, rtol=0, atol=0)
    assert (again.ss_type, again.alpha, again.method) == (1, 0.1, "lstsq-type1")
    # the same response gives the same fit; new data with the same options
    pd.testing.assert_frame_equal(_quiet(fit.refit, d["score"]).table, fit.table)
    half = d[d["topic"].isin([f"t{i}" for i in range(6)])]
    pd.testing.assert_frame_equal(
        _quiet(fit.refit, data=half).table,
        _quiet(irm.anova, "score ~ system * topic - system:topic", half, ss_type=1, alpha=0.1,
               method="dense").table, rtol=0, atol=0)


def test_mixed_refit_keeps_the_criterion():
    d = _scores()
    fit = irm.mixed("score ~ system + (1|topic)", d, method="ML")
    y = _new_y(d)
    again = fit.refit(y)
    ref = irm.mixed("score ~ system + (1|topic)", d.assign(score=y), method="ML")
    assert again.method == "ML"
    assert again.loglik == ref.loglik
    np.testing.assert_array_equal(again.marginal_means().to_numpy(),
                                  ref.marginal_means().to_numpy())
    pd.testing.assert_frame_equal(again.variance_components(), ref.variance_components())
    assert fit.residual_strata is None


def test_heteroscedastic_mixed_refit_keeps_its_strata():
    d = _scores()
    fit = _quiet(irm.mixed, "score ~ system + (1|topic)", d, residual="system")
    assert fit.residual_strata == "system"
    y = _new_y(d)
    again = _quiet(fit.refit, y)
    ref = _quiet(irm.mixed, "score ~ system + (1|topic)", d.assign(score=y), residual="system")
    assert again.residual == "system" and again.loglik == ref.loglik
    pd.testing.assert_series_equal(again.residual_variance, ref.residual_variance)


def test_slope_and_generalised_fits_refit():
    d = _scores()
    y = _new_y(d)
    slopes = _quiet(irm.mixed, "score ~ x + (1 + x | topic)", d, method="ML")
    again = _quiet(slopes.refit, y)
    ref = _quiet(irm.mixed, "score ~ x + (1 + x | topic)", d.assign(score=y), method="ML")
    assert type(again).__name__ == "SlopeMixedResult" and again.loglik == ref.loglik
    rel = np.random.default_rng(3).binomial(10, 0.5, len(d))
    glm = irm.anova("rel ~ system + topic", d, family="binomial", trials=10)
    g2 = glm.refit(rel)
    g_ref = irm.anova("rel ~ system + topic", d.assign(rel=rel), family="binomial", trials=10)
    assert (g2.family, g2.link, g2.deviance) == ("binomial", "logit", g_ref.deviance)
    glmm = _quiet(irm.mixed, "rel ~ system + (1|topic)", d, family="binomial", trials=10)
    m2 = _quiet(glmm.refit, rel)
    m_ref = _quiet(irm.mixed, "rel ~ system + (1|topic)", d.assign(rel=rel), family="binomial",
                   trials=10)
    assert type(m2).__name__ == "GlmmResult" and m2.loglik == m_ref.loglik
    np.testing.assert_array_equal(m2.fixed_estimates.to_numpy(), m_ref.fixed_estimates.to_numpy())


def test_fixed_fitted_is_x_beta():
    d = _scores()
    fit = irm.mixed("score ~ system + (1|topic)", d)
    # X beta = y - the marginal residual (lme4's predict(fit, re.form = NA))
    marginal = d["score"].to_numpy() - fit.residuals("marginal")
    np.testing.assert_allclose(fit.fixed_fitted(), marginal, rtol=1e-12, atol=1e-12)
    assert np.ptp(fit.fixed_fitted() - fit.fitted()) > 0.01  # not the conditional fit
    lm = irm.anova("MD1", d)
    np.testing.assert_array_equal(lm.fixed_fitted(), lm.fitted())


def test_refit_refuses_what_it_cannot_do():
    d = _scores()
    fit = irm.anova("MD1", d)
    with pytest.raises(irm.ArgumentError, match="one of the two; got neither"):
        fit.refit()
    with pytest.raises(irm.ArgumentError, match="one of the two; got both"):
        fit.refit(d["score"], data=d)
    with pytest.raises(irm.ArgumentError, match=r"one value per data row \(40\)"):
        fit.refit(np.zeros(39))
    logged = irm.anova("log(score) ~ topic + system", d)
    np.testing.assert_allclose(  # y is the column, before the formula's transform
        logged.refit(d["score"].to_numpy()).table.to_numpy(), logged.table.to_numpy())
    expr = irm.anova("I(score * 100) ~ topic + system", d)
    with pytest.raises(irm.DesignError, match="is an expression"):
        expr.refit(d["score"].to_numpy())
