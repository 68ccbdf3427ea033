"""irm.mixed against R: lme4/lmerTest (crossed models) and nlme (varIdent), from the fixture
written by tests/reference/mixed.R (data: tests/reference/make_mixed_data.py, adhoc3_ap.csv)."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mixed_checks import assert_deviance_optimum

import irmodels as irm
from irmodels.errors import BoundaryFitWarning

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed.json").read_text())
TOL = FIXTURE["tolerance"]


def _load(name: str, shared: Path) -> pd.DataFrame:
    if name == "adhoc3":
        wide = pd.read_csv(shared / "ir-scores" / "adhoc3_ap.csv")
        n_t, n_s = wide.shape
        return pd.DataFrame({
            "topic": np.tile(np.arange(1, n_t + 1), n_s).astype(str),
            "system": np.repeat(wide.columns.to_numpy(), n_t),
            "score": wide.to_numpy().T.ravel(),
        })
    return pd.read_csv(REF / "data" / f"mixed_{name}.csv", dtype={"sample": str})


@pytest.fixture(scope="module")
def datasets(shared_data: Path) -> dict[str, pd.DataFrame]:
    names = {e["data"] for e in FIXTURE["lmer"]}
    return {n: _load(n, shared_data) for n in names}


def _fit(formula: str, data: pd.DataFrame, method: str, residual: str | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(formula, data, method=method, residual=residual)


def _vec(x) -> list:
    """jsonlite's auto_unbox writes length-1 vectors as scalars."""
    return list(x) if isinstance(x, list) else [x]


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


@pytest.mark.parametrize("entry", FIXTURE["lmer"], ids=[e["name"] for e in FIXTURE["lmer"]])
def test_lmer(entry: dict, datasets: dict[str, pd.DataFrame]) -> None:
    fit = _fit(entry["formula"], datasets[entry["data"]], entry["method"])
    assert_deviance_optimum(fit)  # the optimum of its own deviance (tests/models/conftest.py)
    assert fit.n_obs == entry["nobs"]
    assert fit.n_params == entry["df"]
    # likelihood and information criteria (lme4: BIC with log(n) under REML too)
    assert fit.loglik == pytest.approx(entry["logLik"], rel=TOL["loglik"])
    assert fit.aic == pytest.approx(entry["AIC"], rel=TOL["loglik"])
    assert fit.bic == pytest.approx(entry["BIC"], rel=TOL["loglik"])
    assert fit.deviance == pytest.approx(-2 * entry["logLik"], rel=TOL["loglik"])
    vc = fit.variance_components()
    assert list(vc.columns) == ["variance", "sd", "share"]
    assert set(vc.index) == set(entry["components"])
    for name, value in entry["components"].items():
        assert vc.loc[name, "variance"] == pytest.approx(value, rel=TOL["components"]), name
    assert vc["share"].sum() == pytest.approx(1.0)
    fx = fit.fixed
    ref = {k: _vec(v) for k, v in entry["fixed"].items()}
    assert list(fx.index) == ref["names"]
    ref_se = np.asarray(ref["se"])
    # estimates to 1e-6 of their standard error (an intercept can be near zero)
    assert np.max(np.abs(fx["estimate"].to_numpy() - ref["estimate"]) / ref_se) < TOL["fixed"]
    assert _rel(fx["se"], ref_se) < TOL["se"]
    # lmerTest's Satterthwaite df (numerical derivatives on both sides)
    assert _rel(fx["df"], ref["df"]) < TOL["df"]
    assert _rel(fx["t"], ref["t"]) < TOL["se"]
    assert np.allclose(fx["p"], ref["p"], rtol=1e-4, atol=1e-12)
    assert fit.converged
    assert fit.boundary is entry["singular"]
    # BLUPs (conditional modes), to 1e-5 of the component's SD
    for name, re in entry.get("ranef", {}).items():
        got = fit.random_effects[name]
        want = pd.Series(_vec(re["blup"]), index=_vec(re["levels"]))
        sd = np.sqrt(entry["components"][name])
        assert np.max(np.abs(got[want.index].to_numpy() - want.to_numpy())) < 1e-5 * sd, name


def test_adhoc3_equals_gstudy_components(datasets: dict[str, pd.DataFrame]) -> None:
    fit = _fit("score ~ (1|system) + (1|topic)", datasets["adhoc3"], "REML")
    assert fit.closed_form
    g = FIXTURE["gstudy_adhoc3"]
    for name in ("system", "topic", "Residual"):
        # closed form = ANOVA components to rounding; lme4's iterative optimum to ~1e-7
        assert fit.variance_components().loc[name, "variance"] == pytest.approx(g[name], rel=1e-12)


def test_closed_form_components_equal_anova_route(datasets: dict[str, pd.DataFrame]) -> None:
    pytest.importorskip("irmodels.models.anova")
    data = datasets["adhoc3"]
    fit = _fit("score ~ (1|system) + (1|topic)", data, "REML")
    try:
        vc = irm.anova("score ~ topic + system", data).variance_components()
    except (ImportError, AttributeError) as exc:  # pragma: no cover - another module
        pytest.skip(f"anova route unavailable: {exc}")
    for name in ("system", "topic", "Residual"):
        assert fit.variance_components().loc[name, "variance"] == pytest.approx(
            vc.loc[name, "variance"], rel=1e-10)


def test_lme4_anova(datasets: dict[str, pd.DataFrame]) -> None:
    ref = FIXTURE["lme4_anova"]
    fits = [_fit(f, datasets["crossed"], "REML") for f in reversed(ref["models"])]
    table = irm.compare_models(*fits)  # refit=True: lme4's default
    assert list(table.columns) == ["loglik", "aic", "bic", "statistic", "df", "p", "npar",
                                   "likelihood"]
    assert (table["likelihood"] == "ML (refitted)").all() and table.attrs["likelihood"] == "ML"
    assert table["npar"].tolist() == ref["npar"]
    assert np.allclose(table["loglik"], ref["logLik"], rtol=1e-9)
    assert np.allclose(table["aic"], ref["AIC"], rtol=1e-9)
    assert np.allclose(table["bic"], ref["BIC"], rtol=1e-9)
    assert np.isnan(table["statistic"].iloc[0])
    assert np.allclose(table["statistic"].iloc[1:], ref["statistic"][1:], rtol=1e-6)
    assert table["df"].iloc[1:].tolist() == ref["df"][1:]
    assert np.allclose(table["p"].iloc[1:], ref["p"][1:], rtol=1e-5)


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_nlme_homoscedastic(method: str, datasets: dict[str, pd.DataFrame]) -> None:
    e = FIXTURE["nlme"][method]["homo"]
    fit = _fit("score ~ system + (1|topic/system)", datasets["hetero"], method)
    assert fit.loglik == pytest.approx(e["logLik"], rel=TOL["loglik"])
    assert fit.aic == pytest.approx(e["AIC"], rel=TOL["loglik"])
    # nlme's BIC uses log(n - p) under REML
    assert fit.information_criterion("nlme") == pytest.approx(e["BIC"], rel=TOL["loglik"])
    for name, value in e["components"].items():  # nlme prints VarCorr to 8 digits
        assert fit.variance_components().loc[name, "variance"] == pytest.approx(value, rel=1e-6)
    assert np.allclose(fit.fixed["estimate"], e["fixed"]["estimate"], rtol=1e-7)
    # nlme scales ML standard errors by sqrt(n / (n - p)); lme4 (and irmodels) do not
    scale = np.sqrt(fit.n_obs / (fit.n_obs - 2)) if method == "ML" else 1.0
    assert _rel(fit.fixed["se"] * scale, e["fixed"]["se"]) < 1e-6


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_nlme_varident(method: str, datasets: dict[str, pd.DataFrame]) -> None:
    e = FIXTURE["nlme"][method]["hetero"]
    fit = _fit("score ~ system + (1|topic/system)", datasets["hetero"], method,
               residual="topic:system")
    assert fit.residual == "topic:system"
    assert fit.n_params == e["df"]
    # our optimum is at least as high as nlme's, and equal to its stopping tolerance
    assert fit.loglik >= e["logLik"] - 1e-9
    assert fit.loglik == pytest.approx(e["logLik"], abs=1e-6)
    assert fit.aic == pytest.approx(e["AIC"], abs=2e-6)
    assert fit.bic == pytest.approx(e["BIC"], abs=2e-6)  # nlme convention for varIdent fits
    ratios = pd.Series(e["ratios"]["values"],
                       index=[s.replace("*", ":") for s in e["ratios"]["names"]])
    # reference stratum: the first in data order, as nlme
    assert fit.sd_ratios.index[0] == ratios.index[0]
    assert fit.sd_ratios.iloc[0] == 1.0
    assert _rel(fit.sd_ratios[ratios.index], ratios) < TOL["ratios"] * 10
    assert np.allclose(fit.variance_ratios, fit.sd_ratios**2)
    assert isinstance(fit.residual_variance, pd.Series)
    assert fit.residual_variance.iloc[0] == pytest.approx(e["components"]["Residual"], rel=1e-3)
    for name in ("topic", "topic:system"):
        assert fit.variance_components().loc[name, "variance"] == pytest.approx(
            e["components"][name], rel=1e-4)
    ref_se = np.asarray(e["fixed"]["se"])
    assert np.max(np.abs(fit.fixed["estimate"] - e["fixed"]["estimate"]) / ref_se) < 1e-5
    scale = np.sqrt(fit.n_obs / (fit.n_obs - 2)) if method == "ML" else 1.0
    assert _rel(fit.fixed["se"] * scale, ref_se) < 1e-4


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_nlme_anova_varident(method: str, datasets: dict[str, pd.DataFrame]) -> None:
    ref = FIXTURE["nlme"][method]["anova"]
    d = datasets["hetero"]
    homo = _fit("score ~ system + (1|topic/system)", d, method)
    het = _fit("score ~ system + (1|topic/system)", d, method, residual="topic:system")
    table = irm.compare_models(het, homo, refit=False)  # same fixed part: anova.lme
    assert table.index[1].endswith("residual=topic:system")
    assert table["npar"].tolist() == ref["df"]
    assert np.allclose(table["loglik"], ref["logLik"], atol=1e-6)
    assert np.allclose(table["bic"], ref["BIC"], atol=2e-6)
    assert table["statistic"].iloc[1] == pytest.approx(ref["statistic"], abs=1e-5)
    assert table["p"].iloc[1] == pytest.approx(ref["p"], rel=1e-5)


@pytest.mark.r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_lmer_small(datasets: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    """Live check against lme4 on the unbalanced crossed data (fast)."""
    data = datasets["crossed_unbalanced"]
    csv = tmp_path / "d.csv"
    data.to_csv(csv, index=False)
    script = (
        "suppressPackageStartupMessages(library(lme4));"
        f"d<-read.csv('{csv.as_posix()}',colClasses='character');d$score<-as.numeric(d$score);"
        "m<-lmer(score~system+(1|topic)+(1|topic:system),data=d,"
        "control=lmerControl(optimizer='bobyqa',optCtrl=list(rhoend=1e-12)));"
        "cat(sprintf('%.15g',logLik(m)))"
    )
    try:
        out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True,
                             timeout=120, check=True).stdout
    except (subprocess.SubprocessError, OSError) as exc:  # pragma: no cover
        pytest.skip(f"R failed: {exc}")
    fit = _fit("score ~ system + (1|topic) + (1|topic:system)", data, "REML")
    assert fit.loglik == pytest.approx(float(out.strip()), rel=1e-9)
