"""p_adjust against R's p.adjust (tests/reference/p_adjust.R -> p_adjust.json)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irmodels.errors import ArgumentError, DataFormatError
from irmodels.inference.pairwise import P_ADJUST_METHODS, p_adjust

TOL = 1e-13  # R's values are written with 15 significant digits


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "p_adjust.json").read_text())


def _arr(values):
    return np.array([np.nan if v is None else v for v in values], dtype=float)


@pytest.mark.parametrize("case", ["small", "with_nan", "ties", "two", "one", "uniform", "mixture"])
@pytest.mark.parametrize("method", ["bonferroni", "holm", "hochberg", "hommel", "BH", "BY", "none"])
def test_equals_r(ref, case, method):
    c = ref["cases"][case]
    got = p_adjust(_arr(c["p"]), method)
    want = _arr(c["adjusted"][method])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=0, atol=TOL)


def test_nan_not_counted_in_family():
    # m = 6 non-missing values, as R (not 8)
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan, 0.2, 0.5, 0.001])
    assert p_adjust(p, "bonferroni")[0] == pytest.approx(0.06)
    assert np.isnan(p_adjust(p, "holm")[[1, 4]]).all()
    assert p_adjust(p, "fdr").tolist()[0] == p_adjust(p, "bh").tolist()[0]


def test_statsmodels_agrees_where_it_implements_r():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(1)
    p = rng.beta(0.5, 3, size=200)
    names = {"bonferroni": "bonferroni", "holm": "holm", "hochberg": "simes-hochberg",
             "hommel": "hommel", "bh": "fdr_bh", "by": "fdr_by"}
    for ours, theirs in names.items():
        np.testing.assert_allclose(p_adjust(p, ours), multitest.multipletests(p, method=theirs)[1],
                                   atol=1e-12, err_msg=ours)


def test_bad_input():
    with pytest.raises(ArgumentError, match="unknown adjustment"):
        p_adjust([0.1, 0.2], "sidak")
    with pytest.raises(DataFormatError, match=r"\[0, 1\]"):
        p_adjust([0.1, 1.2], "holm")
    assert p_adjust([], "holm").size == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30),
       st.sampled_from([m for m in P_ADJUST_METHODS if m != "none"]))
def test_properties(p, method):
    p = np.asarray(p)
    adj = p_adjust(p, method)
    assert (adj >= p - 1e-15).all() and (adj <= 1).all()
    order = np.argsort(p, kind="stable")  # monotone in p
    assert (np.diff(adj[order]) >= -1e-15).all()
