"""Degenerate data never gives numbers that look like results: constant scores, scores whose
sums of squares overflow, G-studies on such data (precise irmodels errors instead)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, DesignError


def _wide(values: np.ndarray) -> pd.DataFrame:
    return irm.from_wide(pd.DataFrame(values, columns=[f"s{j}" for j in range(values.shape[1])]))


def test_anova_constant_scores_refused():
    data = _wide(np.full((6, 4), 0.25))
    with pytest.raises(DesignError, match=r"all 24 values of the response score are equal"):
        irm.anova("MD1", data)


def test_anova_overflowing_scores_refused():
    rng = np.random.default_rng(0)
    data = _wide(rng.uniform(-1, 1, (6, 4)) * 1e306)
    with pytest.raises(DataFormatError, match="too large for double precision.*Rescale"):
        irm.anova("MD1", data)
    data = _wide(np.array([[1e308, -1e308], [1e308, 1e308], [-1e308, 1e308]]))
    with pytest.raises(DataFormatError, match="overflows"):
        irm.anova("MD1", data)


def test_anova_large_but_representable_scores_are_exact():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(6, 4))
    small = irm.anova("MD1", _wide(x)).table
    big = irm.anova("MD1", _wide(x * 1e150)).table
    np.testing.assert_allclose(big["F"].to_numpy()[:2], small["F"].to_numpy()[:2], rtol=1e-9)
    np.testing.assert_allclose(big["p"].to_numpy()[:2], small["p"].to_numpy()[:2], rtol=1e-9)


def test_gstudy_degenerate_data_refused():
    with pytest.raises(DesignError, match="all 20 scores are equal"):
        irm.gstudy(_wide(np.zeros((5, 4))))
    x = np.random.default_rng(2).uniform(size=(5, 4))
    with pytest.raises(DataFormatError, match="mean squares overflow"):
        irm.gstudy(_wide(x * 1e306))
    data = _wide(x)
    data.loc[3, "score"] = np.inf
    with pytest.raises(DataFormatError, match="missing or infinite"):
        irm.gstudy(data)
