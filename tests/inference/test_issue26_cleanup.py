"""Issue 26 cleanup of inference/: the renamed parameter keeps its old name for one release, the
options are keyword-only, and the split modules keep their public names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.6, 20)
    w = pd.DataFrame({s: np.clip(base + rng.normal(d, 0.08, 20), 0.01, 0.99)
                      for s, d in (("a", 0.0), ("b", 0.03), ("c", -0.02), ("d", 0.05))})
    return irm.from_wide(w)


def test_size_from_trial_level_and_its_old_name(frame):
    new = irm.design.size_from_trial(frame, delta=0.05, level=0.9)
    assert new.table["confidence"].iloc[0] == 0.9
    with pytest.warns(FutureWarning, match=r"size_from_trial\(confidence=\.\.\.\) is deprecated; "
                                           r"use level=\.\.\."):
        old = irm.design.size_from_trial(frame, delta=0.05, confidence=0.9)
    pd.testing.assert_frame_equal(old.table, new.table)
    # a 90% bound is below the 95% one: fewer topics
    default = irm.design.size_from_trial(frame, delta=0.05)
    assert default.table["sigma_upper"].iloc[0] > new.table["sigma_upper"].iloc[0]
    with pytest.raises(ArgumentError, match="got both confidence= and level="):
        irm.design.size_from_trial(frame, delta=0.05, level=0.9, confidence=0.8)
    with pytest.raises(ArgumentError, match="level"):
        irm.design.size_from_trial(frame, delta=0.05, level=1.5)


def test_options_are_keyword_only(frame):
    with pytest.raises(TypeError, match="positional"):
        irm.compare(frame, None, "t")  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        irm.variability.tie_breaking(frame, 0.1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        irm.variability.error_rate(frame, [10])  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        irm.rbo(["a", "b", "c"], ["b", "a", "c"], 0.5)  # type: ignore[misc]
    # RBO_ext = (1 - p)/p sum_d A_d p^d + A_k p^k, agreements A = 0, 1, 1 (Webber et al., eq. 32)
    assert irm.rbo(["a", "b", "c"], ["b", "a", "c"], p=0.5).ext == pytest.approx(
        (0 * 0.5 + 1 * 0.25 + 1 * 0.125) + 1 * 0.125, abs=1e-12)
    # by keyword they run and give what they gave
    a = irm.compare(frame, test="t", adjust="holm").pairs
    b = irm.pairwise(frame, "t", adjust="holm").table
    np.testing.assert_allclose(np.sort(a["p_adj"].to_numpy()), np.sort(b["p_adj"].to_numpy()),
                               rtol=1e-12)


def test_split_modules_keep_the_public_names():
    from irmodels.stats import power as stats_power
    from irmodels.stats import variance_tests

    assert irm.power.paired_t_power is stats_power.paired_t_power
    # R: power.t.test(n = 50, delta = 0.05, sd = 0.1, type = "paired", strict = TRUE)$power
    assert irm.power.paired_t_power(50, 0.05, 0.1) == pytest.approx(0.9338976, abs=1e-6)
    va, vb = np.array([4.0]), np.array([1.0])
    F, p, lo, hi = variance_tests.f_test(va, vb, 11)
    # R: 2 * pf(4, 10, 10, lower.tail = FALSE) = 0.03916288 (var.test's two-sided p)
    assert F[0] == 4.0 and p[0] == pytest.approx(0.03916288, abs=1e-8)
    assert lo[0] < 4.0 < hi[0]
