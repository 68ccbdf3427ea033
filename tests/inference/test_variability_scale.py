"""Variability on untransformed scores at extreme scales: the same answer as at scale 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError

V = irm.variability


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.6, 30)
    w = pd.DataFrame({"a": base, "b": np.clip(base + rng.normal(0, 0.2, 30), 0, 1),
                      "c": base + rng.normal(0, 0.02, 30)})
    return irm.from_wide(w)


def _scaled(frame: pd.DataFrame, k: float) -> pd.DataFrame:
    return frame.assign(score=frame["score"] * k)


@pytest.mark.parametrize("k", [1e-300, 1e-200, 1e200, 1e300])
def test_variability_table_is_scale_equivariant(frame, k) -> None:
    ref = V.variability(frame, None, robust=True).table
    got = V.variability(_scaled(frame, k), None, robust=True).table
    for col in ["mean", "sd", "sd_pop", "iqr", "mad"]:
        np.testing.assert_allclose(got[col] / k, ref[col], rtol=1e-12)
        assert (got[col] > 0).all()  # at 1e-300 the SDs underflowed to 0


@pytest.mark.parametrize("k", [1e-300, 1e300])
@pytest.mark.parametrize("test", ["f", "levene_mean", "levene_median"])
def test_compare_is_scale_free(frame, k, test) -> None:
    ref = V.compare(frame, "b", "c", test, transform=None)
    got = V.compare(_scaled(frame, k), "b", "c", test, transform=None)
    assert got.p == pytest.approx(ref.p, rel=1e-9)
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert got.sd_a / k == pytest.approx(ref.sd_a, rel=1e-12)
    assert got.sd_b / k == pytest.approx(ref.sd_b, rel=1e-12)
    assert got.ratio == pytest.approx(ref.ratio, rel=1e-9)


@pytest.mark.parametrize("k", [1e-300, 1e300])
def test_tie_breaking_and_error_rate_are_scale_free(frame, k) -> None:
    ref = V.tie_breaking(frame, transform=None, means="transformed").pairs
    got = V.tie_breaking(_scaled(frame, k), transform=None, means="transformed").pairs
    np.testing.assert_allclose(got["p_var"], ref["p_var"], rtol=1e-9)
    np.testing.assert_allclose(got["p_mean"], ref["p_mean"], rtol=1e-9)
    np.testing.assert_allclose(got["diff"] / k, ref["diff"], rtol=1e-9)
    np.testing.assert_allclose(got["sd_a"] / k, ref["sd_a"], rtol=1e-12)
    assert got["broken"].tolist() == ref["broken"].tolist()
    a = V.error_rate(frame, transform=None, sizes=[10], n_trials=20, seed=1)
    b = V.error_rate(_scaled(frame, k), transform=None, sizes=[10], n_trials=20, seed=1)
    pd.testing.assert_frame_equal(a, b)


def test_error_rate_refuses_trials_it_cannot_finish(frame) -> None:
    with pytest.raises(ArgumentError, match=r"n_trials=1000000000000 would run for days.*"
                                            r"At most n_trials=10,000,000"):
        V.error_rate(frame, sizes=[10], n_trials=10**12)
