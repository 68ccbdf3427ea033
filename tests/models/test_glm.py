"""``irm.anova(..., family=)``: the GLM path's arguments, errors, warnings and properties (the
numbers against R are in test_glm_against_r.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import (
    ArgumentError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
    FormulaError,
)
from irmodels.models._glm import GlmResult


def _p10(rng: np.random.Generator, topics: int = 12, systems: int = 4,
         trials: int = 10) -> pd.DataFrame:
    t = np.repeat(np.arange(topics), systems)
    s = np.tile(np.arange(systems), topics)
    eta = rng.normal(0, 0.8, topics)[t] + np.linspace(-0.5, 0.7, systems)[s]
    p = 1 / (1 + np.exp(-eta))
    return pd.DataFrame({"topic": [f"t{i}" for i in t], "system": [f"s{j}" for j in s],
                         "rel": rng.binomial(trials, p).astype(float)})


@pytest.fixture
def data(rng):
    return _p10(rng)


@pytest.fixture
def fit(data):
    return irm.anova("rel ~ topic + system", data, family="binomial", trials=10)


def test_gaussian_family_keeps_the_least_squares_path(data):
    base = irm.anova("rel ~ topic + system", data)
    for fam in ("gaussian", None):
        other = irm.anova("rel ~ topic + system", data, family=fam)
        assert type(other) is type(base)
        pd.testing.assert_frame_equal(other.table, base.table)
    same = irm.anova("rel ~ topic + system", data, family="gaussian", link="identity")
    pd.testing.assert_frame_equal(same.table, base.table)


@pytest.mark.parametrize("kw", [dict(trials=10), dict(link="logit"), dict(offset="rel"),
                                dict(family="gaussian", link="log")])
def test_least_squares_refuses_glm_arguments(data, kw):
    with pytest.raises(ArgumentError, match="family='binomial' or 'poisson'"):
        irm.anova("rel ~ topic + system", data, **kw)


def test_family_and_link_names_are_checked(data):
    with pytest.raises(ArgumentError, match="did you mean 'binomial'"):
        irm.anova("rel ~ topic + system", data, family="binomal", trials=10)
    with pytest.raises(ArgumentError, match="link 'logt' is not available.*did you mean"):
        irm.anova("rel ~ topic + system", data, family="binomial", link="logt", trials=10)
    with pytest.raises(ArgumentError, match="irm.mixed"):
        irm.anova("rel ~ topic + system", data.assign(rel=0.5), family="beta")


@pytest.mark.parametrize("kw", [dict(ss_type=3), dict(method="lstsq"), dict(aliased="drop")])
def test_least_squares_options_are_refused_with_a_family(data, kw):
    with pytest.raises(ArgumentError, match=r"fit.anova\(type="):
        irm.anova("rel ~ topic + system", data, family="binomial", trials=10, **kw)


def test_trials_as_a_column_equals_a_number(data, fit):
    other = irm.anova("rel ~ topic + system", data.assign(n=10), family="binomial", trials="n")
    np.testing.assert_allclose(other.coefficients, fit.coefficients, rtol=0, atol=1e-12)
    assert other.deviance == pytest.approx(fit.deviance, abs=1e-10)


def test_bad_responses_and_trials_are_refused(data):
    with pytest.raises(DataFormatError, match="whole numbers.*round"):
        irm.anova("rel ~ topic + system", data.assign(rel=data["rel"] / 10),
                  family="binomial", trials=10)
    with pytest.raises(DataFormatError, match="between 0 and the number of trials"):
        irm.anova("rel ~ topic + system", data, family="binomial", trials=5)
    with pytest.raises(DataFormatError, match="not a column"):
        irm.anova("rel ~ topic + system", data, family="binomial", trials="n")
    with pytest.raises(ArgumentError, match="trials must be"):
        irm.anova("rel ~ topic + system", data, family="binomial", trials=[10])
    with pytest.raises(ArgumentError, match="Poisson|poisson"):
        irm.anova("rel ~ topic + system", data, family="poisson", trials=10)
    with pytest.raises(DataFormatError, match="not a column"):
        irm.anova("rel ~ topic + system", data, family="poisson", offset="exposure")
    with pytest.raises(DataFormatError, match="missing or infinite"):
        irm.anova("rel ~ topic + system", data.assign(e=-np.inf), family="poisson",
                  offset="e")
    with pytest.raises(FormulaError, match="irm.mixed"):
        irm.anova("rel ~ system + (1|topic)", data, family="binomial", trials=10)
    with pytest.raises(DesignError, match="transformed"):
        irm.anova("log(rel) ~ topic + system", data.assign(rel=data["rel"] + 1),
                  family="poisson")


def test_binomial_trials_equal_bernoulli_rows(data, fit):
    """k trials per row and k Bernoulli rows per row (s ones) have the same likelihood up to
    the binomial coefficients: the same coefficients and standard errors."""
    rows = []
    for _, r in data.iterrows():
        s = int(r["rel"])
        rows += [{"topic": r["topic"], "system": r["system"], "hit": float(i < s)}
                 for i in range(10)]
    long = pd.DataFrame(rows)
    bern = irm.anova("hit ~ topic + system", long, family="binomial")
    np.testing.assert_allclose(bern.coefficients, fit.coefficients, rtol=0, atol=1e-9)
    np.testing.assert_allclose(bern.fixed["se"], fit.fixed["se"], rtol=0, atol=1e-9)
    # the log-likelihoods differ by the log binomial coefficients
    from scipy.special import gammaln

    s = data["rel"].to_numpy()
    logc = np.sum(gammaln(11) - gammaln(s + 1) - gammaln(11 - s))
    assert fit.loglik == pytest.approx(bern.loglik + logc, abs=1e-8)


def test_scaling_trials_scales_the_information(rng):
    """Same proportions with k times the trials: the same estimates, SEs divided by sqrt(k),
    the deviance multiplied by k."""
    d = _p10(rng)
    one = irm.anova("rel ~ topic + system", d, family="binomial", trials=10)
    three = irm.anova("rel ~ topic + system", d.assign(rel=3 * d["rel"]), family="binomial",
                      trials=30)
    np.testing.assert_allclose(three.coefficients, one.coefficients, rtol=0, atol=1e-9)
    np.testing.assert_allclose(three.fixed["se"] * np.sqrt(3), one.fixed["se"], atol=1e-10)
    assert three.deviance == pytest.approx(3 * one.deviance, rel=1e-10)


def test_poisson_offset_shifts_the_rates(rng):
    d = _p10(rng).rename(columns={"rel": "found"})
    d["log_depth"] = np.log(np.where(np.arange(len(d)) % 2, 20.0, 50.0))
    with_off = irm.anova("found ~ topic + system", d, family="poisson", offset="log_depth")
    # a constant offset only moves the intercept
    const = irm.anova("found ~ topic + system", d.assign(c=np.log(7.0)), family="poisson",
                      offset="c")
    plain = irm.anova("found ~ topic + system", d, family="poisson")
    np.testing.assert_allclose(const.coefficients.iloc[1:], plain.coefficients.iloc[1:],
                               atol=1e-10)
    assert const.coefficients.iloc[0] == pytest.approx(plain.coefficients.iloc[0] - np.log(7),
                                                       abs=1e-10)
    # marginal means hold the offset at its mean (emmeans)
    m = with_off.marginal_means("system")
    M, _ = with_off._mm_matrix("system")
    np.testing.assert_allclose(m, M @ with_off.coefficients + d["log_depth"].mean(), atol=1e-12)


def test_separation_warns_naming_the_level(data):
    d = data.copy()
    d.loc[d["topic"] == "t3", "rel"] = 0.0  # no run finds anything on t3
    with pytest.warns(ConvergenceWarning, match=r"numerically 0 or 1.*topic t3") as rec:
        res = irm.anova("rel ~ topic + system", d, family="binomial", trials=10)
    assert rec[0].filename == __file__  # stacklevel points at the caller
    assert any("topic t3" in n for n in res.notes)
    assert res.fixed.loc["topict3", "se"] > 100 * res.fixed.loc["topict2", "se"]


def test_results_face(fit):
    from irmodels.models.base import FittedModel

    assert isinstance(fit, GlmResult) and isinstance(fit, FittedModel)
    assert repr(fit).startswith("<GlmResult rel ~ topic + system, family='binomial'")
    text = fit.summary()
    assert "Coefficients (Wald z)" in text and "Analysis of deviance" in text
    assert "\\begin{tabular}" in fit.to_latex() or "\\begin{longtable}" in fit.to_latex()
    assert list(fit.to_frame().columns) == ["coefficient", "estimate", "se", "z", "p"]
    assert fit.nobs == 48 and fit.df_model == 14 and fit.df_resid == 48 - 15
    assert fit.opt_summary.method == "IRLS" and fit.opt_summary.gradient_norm < 1e-8
    np.testing.assert_allclose(fit.residuals(), fit._design.y - fit.fitted(), atol=1e-15)
    np.testing.assert_allclose(fit.fitted(), 1 / (1 + np.exp(-fit.fitted(scale="link"))),
                               atol=1e-14)
    with pytest.raises(ArgumentError, match="type"):
        fit.residuals("raw")
    with pytest.raises(ArgumentError, match="type must be 1, 2 or 3"):
        fit.anova(type=4)
    with pytest.raises(DesignError, match="not a factor"):
        fit.marginal_means("topics")
    with pytest.raises(DesignError, match="no variance components"):
        fit.variance_components()


def test_missing_drop(data):
    d = data.copy()
    d.loc[0, "rel"] = np.nan
    with pytest.raises(DataFormatError):
        irm.anova("rel ~ topic + system", d, family="binomial", trials=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.DataQualityWarning)
        res = irm.anova("rel ~ topic + system", d, family="binomial", trials=10,
                        missing="drop")
    ref = irm.anova("rel ~ topic + system", d.dropna(), family="binomial", trials=10)
    np.testing.assert_allclose(res.coefficients, ref.coefficients, atol=1e-12)
    assert res.nobs == len(d) - 1 and any("missing='drop'" in n for n in res.notes)


def test_type2_differs_from_type3_with_an_interaction(rng):
    """With an interaction, type 2 tests main effects without it and type 3 (sum-to-zero
    contrasts) with it; the interaction's own test is the same in both and in type 1."""
    d = pd.concat([_p10(rng, topics=6, systems=3).assign(shard=k) for k in ("a", "b")])
    d["shard"] = d["shard"].astype(str)
    res = irm.anova("rel ~ system * shard + topic", d, family="binomial", trials=10)
    t1, t2, t3 = (res.anova(type=k) for k in (1, 2, 3))
    assert t2.loc["system:shard", "deviance"] == pytest.approx(
        t3.loc["system:shard", "deviance"], abs=1e-8)
    assert t1.loc["system:shard", "deviance"] == pytest.approx(
        t3.loc["system:shard", "deviance"], abs=1e-8)
    # type 2 of system: the model without system:shard, with system vs without it
    no_int = irm.anova("rel ~ system + shard + topic", d, family="binomial", trials=10)
    assert t2.loc["system", "deviance"] == pytest.approx(
        no_int.anova(type=3).loc["system", "deviance"], abs=1e-8)


def test_poisson_zero_rates_warn_naming_the_level(rng):
    d = _p10(rng).rename(columns={"rel": "found"})
    d.loc[d["system"] == "s2", "found"] = 0.0
    with pytest.warns(ConvergenceWarning, match=r"fitted rates numerically 0.*system s2"):
        irm.anova("found ~ topic + system", d, family="poisson")


def test_irls_stops_at_the_iteration_limit(data):
    """R's rule unmet within maxit: not converged (irm.anova then warns, as glm.fit)."""
    from irmodels.models._family import family
    from irmodels.models._glm_fit import irls

    fit = irm.anova("rel ~ topic + system", data, family="binomial", trials=10)
    d = fit._design
    short = irls(d.X, d.y, d.weights, d.offset, family("binomial"), maxit=2)
    assert not short.converged and short.iterations == 2
    full = irls(d.X, d.y, d.weights, d.offset, family("binomial"))
    assert full.converged and full.iterations == fit.iterations
    assert short.deviance > full.deviance
