"""The methodology studies give the same result on a Dask cluster as serially: every unit draws
from its own child seed, never from a generator shared across units."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def data(shared_data):
    wide = pd.read_csv(shared_data / "ir-scores" / "adhoc5_ap.csv")
    frame = irm.from_wide(wide)
    return irm.filter_systems(frame, top_k=8)


def test_topic_sets_on_dask_equal_serial(data, dask_client):
    kw = dict(sizes=[5, 10], n_samples=60, test=["tukey", "t"], seed=11)
    a = irm.studies.topic_sets(data, **kw)
    b = irm.studies.topic_sets(data, backend=dask_client, **kw)
    for name in ("swap_rates", "discriminative_power", "agreement", "rank_agreement"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_bootstrap_effects_on_dask_equal_serial(data, dask_client):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", data)
    a = irm.studies.bootstrap_effects(fit, n_resamples=120, seed=5)
    b = irm.studies.bootstrap_effects(fit, n_resamples=120, seed=5, backend=dask_client)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert np.isfinite(a.to_frame().select_dtypes("number").to_numpy()).all()
