"""Heteroscedastic (varIdent) fits that once crashed with LinAlgError where nlme fits.

The data (tests/reference/data/mixed_hetero_hard.csv) are one pair of systems of the
document-sample study on the trec8 demo collection (40 runs, bootstrap model) whose first
stratum in data order has a residual SD 35 times smaller than the median; the nlme reference
is tests/reference/mixed_hetero_hard.R -> mixed_hetero_hard.json.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mixed_checks import assert_deviance_optimum

import irmodels as irm
from irmodels.errors import BoundaryFitWarning
from irmodels.models import _reml

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed_hetero_hard.json").read_text())
FORMULA = "score ~ system + (1|topic/system)"


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF / FIXTURE["file"], dtype={"topic": str, "sample": str})


def _fit(d: pd.DataFrame, residual: str | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(FORMULA, d, residual=residual)


def test_hard_varident_equals_nlme(data: pd.DataFrame) -> None:
    e = FIXTURE["hetero"]
    fit = _fit(data, "topic:system")
    assert fit.converged
    assert_deviance_optimum(fit)  # theta and the log SD ratios
    assert fit.n_params == e["df"]
    # our optimum is at least as high as nlme's and equal to nlme's stopping tolerance
    assert fit.loglik >= e["logLik"] - 1e-9
    assert fit.loglik == pytest.approx(e["logLik"], abs=1e-6)
    assert fit.aic == pytest.approx(e["AIC"], abs=2e-6)
    assert fit.bic == pytest.approx(e["BIC"], abs=2e-6)
    ratios = pd.Series(e["ratios"]["values"],
                       index=[s.replace("*", ":") for s in e["ratios"]["names"]])
    assert fit.sd_ratios.index[0] == ratios.index[0]  # nlme's reference: first in data order
    assert fit.sd_ratios.iloc[0] == 1.0
    rel = np.abs(fit.sd_ratios[ratios.index].to_numpy() / ratios.to_numpy() - 1)
    assert rel.max() < 1e-4
    assert fit.residual_variance.iloc[0] == pytest.approx(e["components"]["Residual"], rel=1e-4)
    vc = fit.variance_components()
    for name in ("topic", "topic:system"):  # nlme prints VarCorr to 7 digits
        assert vc.loc[name, "variance"] == pytest.approx(e["components"][name], rel=1e-5)
    se = np.asarray(e["fixed"]["se"])
    assert np.max(np.abs(fit.fixed["estimate"] - e["fixed"]["estimate"]) / se) < 1e-5
    assert np.allclose(fit.fixed["se"], se, rtol=1e-4)


def test_hard_anova_equals_nlme(data: pd.DataFrame) -> None:
    ref = FIXTURE["anova"]
    homo = _fit(data)
    het = _fit(data, "topic:system")
    assert homo.loglik == pytest.approx(FIXTURE["homo"]["logLik"], abs=1e-6)
    table = irm.compare_models(het, homo, refit=False)
    assert table["npar"].tolist() == ref["df"]
    assert np.allclose(table["loglik"], ref["logLik"], atol=1e-6)
    assert table["statistic"].iloc[1] == pytest.approx(ref["statistic"], abs=1e-5)


def test_factorisation_failure_steps_back(data: pd.DataFrame, monkeypatch) -> None:
    """A point where the Cholesky factor fails is a bad step, not the end of the fit."""
    target = _fit(data, "topic:system")
    real = _reml.evaluate
    calls = {"n": 0}

    def flaky(pb, theta, eta, reml, gradient=False):
        calls["n"] += 1
        if gradient and calls["n"] in (3, 4, 9):
            raise np.linalg.LinAlgError("leading minor not positive definite")
        return real(pb, theta, eta, reml, gradient)

    monkeypatch.setattr(_reml, "evaluate", flaky)
    fit = _fit(data, "topic:system")
    assert calls["n"] > 9
    assert fit.loglik == pytest.approx(target.loglik, abs=1e-6)


def test_first_stratum_reference_is_invariant(data: pd.DataFrame) -> None:
    """Reordering the rows changes nlme's reference stratum, never the likelihood."""
    fit = _fit(data, "topic:system")
    d2 = data.iloc[::-1].reset_index(drop=True)
    fit2 = _fit(d2, "topic:system")
    assert fit2.loglik == pytest.approx(fit.loglik, abs=1e-6)
    assert fit2.sd_ratios.index[0] == f"{d2.topic[0]}:{d2.system[0]}"
    r1 = fit.residual_variance
    r2 = fit2.residual_variance[r1.index]
    assert np.allclose(r2, r1, rtol=1e-4)


def test_compare_tests_records_a_failed_pair(monkeypatch) -> None:
    """A pair whose mixed fit fails gets NaN p-values and a reason; the study goes on."""
    from irmodels.errors import ConvergenceError, ConvergenceWarning
    from irmodels.models import mixed as mixed_module
    from irmodels.studies import document_samples as ds

    coll = irm.collection.generate(preset="tiny", seed=1)
    real = mixed_module.mixed

    def failing(model, d, **kw):
        if kw.get("residual") and set(d["system"].astype(str)) == {"sys01", "sys02"}:
            raise ConvergenceError("no finite likelihood (simulated)")
        return real(model, d, **kw)

    monkeypatch.setattr(mixed_module, "mixed", failing)
    with pytest.warns(ConvergenceWarning, match="1 of 6 pairs"):
        res = ds.compare_tests(coll.runs, coll.qrels, n_samples=4, seed=2)
    bad = res[(res["a"] == "sys01") & (res["b"] == "sys02")].iloc[0]
    assert bad["failure"].startswith("ConvergenceError: no finite likelihood")
    assert np.isnan(bad["p_mixed_hetero"]) and np.isnan(bad["lrt_p"])
    assert np.isfinite(bad["p_mixed"])  # the homoscedastic fit succeeded
    ok = res[res["failure"] == ""]
    assert len(ok) == 5 and ok["p_mixed_hetero"].notna().all()
