"""Every seeded function of irmodels defaults to seed 0: the same call gives the same numbers
(``irm.pairwise`` and ``irm.compare`` agree without a seed; ``None`` asks for fresh entropy)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.inference import variability as V


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    wide = pd.DataFrame(rng.uniform(0, 0.8, (15, 4)) + np.linspace(0, 0.2, 4),
                        columns=["a", "b", "c", "d"])
    return irm.from_wide(wide)


def test_pairwise_without_a_seed_is_reproducible(scores) -> None:
    one = irm.pairwise(scores, "randomization", n_resamples=500).table
    two = irm.pairwise(scores, "randomization", n_resamples=500).table
    pd.testing.assert_frame_equal(one, two)
    zero = irm.pairwise(scores, "randomization", n_resamples=500, seed=0).table
    pd.testing.assert_frame_equal(one, zero)
    fresh = [irm.pairwise(scores, "randomization", n_resamples=500, seed=None).table["p"]
             for _ in range(3)]
    assert not all(f.equals(fresh[0]) for f in fresh[1:])  # None: fresh entropy


def test_error_rate_and_document_samples_without_a_seed_are_reproducible(scores) -> None:
    a = V.error_rate(scores, sizes=[5, 7], n_trials=5)
    pd.testing.assert_frame_equal(a, V.error_rate(scores, sizes=[5, 7], n_trials=5))
    col = irm.collection.generate(preset="tiny", seed=1)
    s1 = irm.replicates.document_samples(col.runs, col.qrels, n_samples=2)
    s2 = irm.replicates.document_samples(col.runs, col.qrels, n_samples=2)
    pd.testing.assert_frame_equal(s1, s2)


SEEDED = [irm.pairwise, irm.compare, V.error_rate, irm.replicates.document_samples,
          irm.collection.generate]


@pytest.mark.parametrize("func", SEEDED, ids=lambda f: f.__name__)
def test_the_default_seed_is_zero(func) -> None:
    assert inspect.signature(func).parameters["seed"].default == 0
