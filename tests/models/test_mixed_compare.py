"""compare_models(refit=True|False) against lme4's anova() (tests/reference/mixed_compare.R)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, ModelError

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "mixed_compare.json").read_text())


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF / FIXTURE["file"], dtype={"sample": str})


def _fit(formula: str, d: pd.DataFrame, method: str = "REML"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        return irm.mixed(formula, d, method=method)


def _num(values: list) -> np.ndarray:
    return np.array([np.nan if v == "NA" else v for v in values], dtype=float)


@pytest.mark.parametrize(("key", "refit", "kind"), [
    ("random_refit", True, "ML (refitted)"),
    ("random_reml", False, "REML"),
    ("fixed_refit", True, "ML (refitted)"),
])
def test_anova_equals_lme4(key: str, refit: bool, kind: str, data: pd.DataFrame) -> None:
    ref = FIXTURE[key]
    fits = [_fit(f, data) for f in reversed(ref["models"])]  # order is irrelevant
    table = irm.compare_models(*fits, refit=refit)
    assert list(table.index) == [m.replace("~ 1 + ", "~ ") for m in ref["models"]]
    assert table["npar"].tolist() == ref["npar"]
    assert (table["likelihood"] == kind).all()
    assert table.attrs["likelihood"] == kind.split(" ")[0]
    assert np.allclose(table["loglik"], ref["logLik"], rtol=1e-9)
    assert np.allclose(table["aic"], ref["AIC"], rtol=1e-9)
    assert np.allclose(table["bic"], ref["BIC"], rtol=1e-9)
    stat, p = _num(ref["statistic"]), _num(ref["p"])
    assert np.isnan(table["statistic"].iloc[0]) and np.isnan(stat[0])
    assert table["statistic"].iloc[1] == pytest.approx(stat[1], rel=1e-6)
    assert table["p"].iloc[1] == pytest.approx(p[1], rel=1e-5)


def test_refit_false_refuses_different_fixed_parts(data: pd.DataFrame) -> None:
    m0 = _fit("score ~ (1|topic)", data)
    m1 = _fit("score ~ system + (1|topic)", data)
    with pytest.raises(ModelError, match="fixed effects differ.*refit=True"):
        irm.compare_models(m0, m1, refit=False)
    ml = _fit("score ~ system + (1|topic)", data, method="ML")
    with pytest.raises(ModelError, match="some are fitted by ML"):
        irm.compare_models(ml, _fit("score ~ system + (1|topic/system)", data), refit=False)
    with pytest.raises(ModelError, match="refit must be"):
        irm.compare_models(m0, m1, refit="yes")  # type: ignore[arg-type]


def test_ml_fits_are_not_refitted(data: pd.DataFrame) -> None:
    m0 = _fit("score ~ (1|topic)", data, method="ML")
    m1 = _fit("score ~ system + (1|topic)", data, method="ML")
    a = irm.compare_models(m0, m1)
    b = irm.compare_models(m0, m1, refit=False)
    assert (a["likelihood"] == "ML").all() and (b["likelihood"] == "ML").all()
    pd.testing.assert_frame_equal(a, b)
    assert a["loglik"].tolist() == [m0.loglik, m1.loglik]
