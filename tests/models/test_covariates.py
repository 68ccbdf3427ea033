"""Numeric covariates in irm.anova (ANCOVA by least squares, against R's lm + anova() and
car::Anova with contr.sum) and irm.mixed (REML/ML, against lme4::lmer); factor/covariate
classification and the errors for bad covariates."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, DesignError, IRModelsWarning
from irmodels.formula import parse_formula
from irmodels.models import _design

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "covariates.json").read_text())


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF / "data" / "covariates.csv")


def _anova_cases():
    for e in FIXTURE["anova"]:
        for typ in (1, 2, 3):
            if f"type{typ}" in e:
                yield pytest.param(e, typ, id=f"{e['formula']}-type{typ}")


@pytest.mark.parametrize(("entry", "ss_type"), list(_anova_cases()))
def test_ancova_equals_r(data, entry, ss_type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        fit = irm.anova(entry["formula"], data, ss_type=ss_type)
    ref = entry[f"type{ss_type}"]
    table = fit.table.loc[ref["terms"]]
    assert fit.method == f"lstsq-type{ss_type}"
    np.testing.assert_allclose(table["SS"], ref["SS"], rtol=1e-9)
    np.testing.assert_array_equal(table["df"], ref["df"])
    np.testing.assert_allclose(table["F"], ref["F"], rtol=1e-8)
    np.testing.assert_allclose(table["p"], ref["p"], rtol=1e-6)
    assert fit.df_resid == entry["df_resid"]
    np.testing.assert_allclose(fit.table.loc["Residual", "SS"], entry["ss_resid"], rtol=1e-10)
    np.testing.assert_allclose(fit.fitted()[:10], entry["fitted_head"], rtol=1e-10)


def test_non_hierarchical_covariate_model_is_type1_only(data) -> None:
    with pytest.raises(DesignError, match="not hierarchical"):
        irm.anova("score ~ topic + system + system:depth", data, ss_type=2)


@pytest.mark.parametrize("entry", FIXTURE["mixed"], ids=lambda e: f"{e['formula']}-{e['method']}")
def test_mixed_with_covariates_equals_lmer(data, entry) -> None:
    fit = irm.mixed(entry["formula"], data, method=entry["method"])
    fx = fit.fixed
    ref = entry["fixed"]
    assert list(fx.index) == ref["names"]
    np.testing.assert_allclose(fx["estimate"], ref["estimate"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fx["se"], ref["se"], rtol=1e-6)
    np.testing.assert_allclose(fx["df"], ref["df"], rtol=1e-4)
    np.testing.assert_allclose(fit.loglik, entry["logLik"], rtol=1e-9)
    vc = fit.variance_components()["variance"]
    for name, value in entry["components"].items():
        np.testing.assert_allclose(vc[name], value, rtol=1e-6)


def test_classification_rules() -> None:
    d = pd.DataFrame({
        "topic": [401, 402, 403, 401], "system": [1, 2, 1, 2], "qlen": [3, 5, 2, 3],
        "depth": [1.5, 2.5, 3.0, 1.0], "flag": [True, False, True, False],
        "grp": pd.Categorical([1, 2, 1, 2]), "score": [0.1, 0.2, 0.3, 0.4],
    })
    spec = _design.classify(parse_formula("score ~ topic + system + qlen + depth + flag + grp"), d)
    assert spec.covariates == ("qlen", "depth")  # id columns, booleans, categoricals are factors
    assert [t.is_covariate for t in spec.fixed] == [False, False, True, True, False, False]
    assert _design.classify(parse_formula("score ~ C(qlen) + depth"), d).covariates == ("depth",)
    inter = _design.classify(parse_formula("score ~ system*depth + qlen:depth"), d)
    assert [(t.name, t.numeric_factors) for t in inter.fixed] == [
        ("system", ()), ("depth", ("depth",)), ("system:depth", ("depth",)),
        ("depth:qlen", ("depth", "qlen"))]  # factors in order of appearance, as R


def test_md1_with_integer_topic_ids_treats_them_as_factors() -> None:
    rng = np.random.default_rng(3)
    d = pd.MultiIndex.from_product([[401, 402, 403, 404], [1, 2, 3]], names=["topic", "system"])
    d = d.to_frame(index=False)
    d["score"] = rng.uniform(size=len(d))
    fit = irm.anova("MD1", d)
    assert fit.method == "balanced"
    assert list(fit.table["df"]) == [3.0, 2.0, 6.0]
    d["qid"] = d["topic"]
    fit2 = irm.anova("score ~ C(qid) + system", d.drop(columns="topic"))
    np.testing.assert_allclose(fit2.table["SS"].to_numpy(), fit.table["SS"].to_numpy(), rtol=1e-12)


def _small(rng=None):
    rng = rng or np.random.default_rng(0)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(6)], ["a", "b", "c"]],
                                   names=["topic", "system"]).to_frame(index=False)
    d["qlen"] = rng.integers(1, 6, len(d)).astype(float)
    d["score"] = rng.uniform(size=len(d))
    return d


def test_covariate_with_nan_is_refused() -> None:
    d = _small()
    d.loc[4, "qlen"] = np.nan
    with pytest.raises(DataFormatError, match=r"covariate 'qlen' has 1 missing \(NaN\) and 0 infinite value\(s\) of 18 \(first at row 4\)"):
        irm.anova("score ~ topic + system + qlen", d)
    with pytest.raises(DataFormatError, match="covariate 'qlen' has 1 missing"):
        irm.mixed("score ~ system + qlen + (1|topic)", d)


def test_constant_covariate_is_refused() -> None:
    d = _small().assign(qlen=4.0)
    with pytest.raises(DesignError, match=r"covariate 'qlen' is constant \(4 on every row\)"):
        irm.anova("score ~ topic + system + qlen", d)
    with pytest.raises(DesignError, match="covariate 'qlen' is constant"):
        irm.mixed("score ~ system + qlen + (1|topic)", d)


def test_numbers_stored_as_text_are_refused() -> None:
    d = _small()
    d["qlen"] = d["qlen"].astype(int).astype(str)
    with pytest.raises(DataFormatError, match=r"column 'qlen' holds numbers stored as text .* write C\(qlen\)"):
        irm.anova("score ~ topic + system + qlen", d)
    # declared a factor, it is one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        fit = irm.anova("score ~ system + C(qlen)", d, ss_type=1)
    assert fit.table.loc["qlen", "df"] == d["qlen"].nunique() - 1


def test_method_balanced_refuses_covariates() -> None:
    with pytest.raises(DesignError, match="numeric covariate"):
        irm.anova("score ~ topic + system + qlen", _small(), method="balanced")


def test_covariate_only_model_matches_simple_regression() -> None:
    d = _small()
    fit = irm.anova("score ~ qlen", d)
    x, y = d["qlen"].to_numpy(), d["score"].to_numpy()
    slope = np.cov(x, y)[0, 1] / np.var(x, ddof=1)
    ss = slope**2 * np.sum((x - x.mean()) ** 2)
    np.testing.assert_allclose(fit.table.loc["qlen", "SS"], ss, rtol=1e-12)
    assert fit.df_resid == len(d) - 2


def test_ancova_matches_statsmodels(data) -> None:
    sm = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    ols = sm.ols("score ~ C(system, Sum) * depth + qlen", data=data).fit()
    ref = anova_lm(ols, typ=2)
    fit = irm.anova("score ~ system*depth + qlen", data)
    np.testing.assert_allclose(fit.table.loc[["system", "depth", "qlen", "system:depth"], "SS"],
                               ref.loc[["C(system, Sum)", "depth", "qlen", "C(system, Sum):depth"],
                                       "sum_sq"], rtol=1e-9)


@pytest.mark.parametrize("entry", FIXTURE["mixed"], ids=lambda e: f"{e['formula']}-{e['method']}")
def test_mixed_marginal_means_at_covariate_means_equal_emmeans(data, entry) -> None:
    fit = irm.mixed(entry["formula"], data, method=entry["method"])
    ref = entry["emmeans"]
    mm = fit.marginal_means("system")
    assert [str(x) for x in mm.index] == ref["level"]
    np.testing.assert_allclose(mm.to_numpy(), ref["mean"], rtol=1e-7)
    se = np.sqrt(np.diag(fit.marginal_means_cov("system").to_numpy()))
    np.testing.assert_allclose(se, ref["se"], rtol=1e-6)
    with pytest.raises(DesignError, match="numeric covariate"):
        fit.marginal_means(fit.spec.covariates[0])


def test_dates_and_complex_columns_are_refused() -> None:
    d = _small()
    d["when"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(d["qlen"], unit="D")
    with pytest.raises(DataFormatError, match=r"column 'when' holds dates or durations"):
        irm.anova("score ~ topic + system + when", d)
    d["z"] = d["qlen"] + 1j
    with pytest.raises(DataFormatError, match="holds complex numbers"):
        irm.anova("score ~ topic + system + z", d)
