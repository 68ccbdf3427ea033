"""Bootstrap intervals of the G-study ratios from a mixed fit (MixedResult.gstudy)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import BoundaryFitWarning

REF = Path(__file__).resolve().parents[1] / "reference"
FACETS3 = ("score ~ (1|system) + (1|topic) + (1|shard) + (1|topic:system) + (1|system:shard)"
           " + (1|topic:shard)")


@pytest.fixture(scope="module")
def shards() -> pd.DataFrame:
    return pd.read_csv(REF / "data" / "mixed_shards.csv", dtype=str).astype({"score": float})


def test_three_facet_gstudy_gets_intervals(shards: pd.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundaryFitWarning)
        fit = irm.mixed(FACETS3, shards)
        plain = irm.gstudy(fit)
        gs = fit.gstudy(n_resamples=30, seed=5)
        again = fit.gstudy(n_resamples=30, seed=5)
    assert plain.facet == gs.facet == "shard"
    # today's G-study of a three-facet design has no intervals; with the draws it has
    d0 = plain.dstudy([5, 20])
    assert d0["Erho2_lower"].isna().all()
    d = gs.dstudy([5, 20])
    pd.testing.assert_frame_equal(d, again.dstudy([5, 20]))
    pd.testing.assert_frame_equal(d[["topics", "Erho2", "Phi"]], d0[["topics", "Erho2", "Phi"]])
    for index in ("Erho2", "Phi"):
        assert d[f"{index}_lower"].notna().all()
        assert (d[f"{index}_lower"] <= d[index]).all() and (d[index] <= d[f"{index}_upper"]).all()
        assert (d[f"{index}_lower"] >= 0).all() and (d[f"{index}_upper"] <= 1).all()
        assert d[f"{index}_lower"].iloc[1] > d[f"{index}_lower"].iloc[0]  # more topics, higher
    comps = gs.components
    assert {"share_lower", "share_upper"} <= set(comps.columns)
    assert np.allclose(comps["variance"], plain.components["variance"])
    assert (comps["share_lower"] <= comps["share"]).all()
    assert (comps["share"] <= comps["share_upper"]).all()
    assert "D-study" in gs.summary()
    one_sided = gs.dstudy([5], level=0.9, sided="lower")
    assert one_sided["Erho2_upper"].iloc[0] == 1.0 and one_sided["Erho2_lower"].iloc[0] > 0


def test_two_facet_bootstrap_is_close_to_feldt() -> None:
    """On a system x topic design the bootstrap limits land near the closed-form ones."""
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin([f"sys{i}" for i in range(1, 21)])]
    fit = irm.mixed("score ~ (1|system) + (1|topic)", data)
    boot = fit.gstudy(n_resamples=60, seed=2).dstudy([50])
    feldt = irm.gstudy(data).dstudy([50])
    for col in ("Erho2_lower", "Erho2_upper", "Phi_lower", "Phi_upper"):
        assert abs(boot[col].iloc[0] - feldt[col].iloc[0]) < 0.05
