"""The sparse least-squares path (absorption + sparse normal equations) equals the dense
reference path (QR per term block) on random unbalanced designs, for types I, II and III."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsq_data import random_design

import irmodels as irm
from irmodels.errors import DesignError, IRModelsWarning
from irmodels.formula import Term
from irmodels.models import _anova_fit
from irmodels.models._sparse_lsq import SparseUnavailable, fit_sparse

MODELS = ["MD1", "MD3", "MD4", "MD5", "MD6", "score ~ topic*system*shard - topic:system:shard",
          # without margins (type I only, each term spanning every cell of its factors)
          "score ~ system + topic:system", "score ~ topic + system:shard",
          "score ~ shard + topic:system + topic:shard"]


_design = random_design


def _fit(model, data, ss_type, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        return irm.anova(model, data, ss_type=ss_type, method=method)


def _auto(model, data, ss_type):
    """method="auto" with the small dense path off: these designs are small, and the path under
    test here is the sparse one (and its fallback to the dense reference)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_anova_fit, "SMALL_COLUMNS", 0)
        return _fit(model, data, ss_type, "auto")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), t=st.integers(2, 6), s=st.integers(2, 5),
       k=st.integers(2, 4), reps=st.integers(1, 2), drop=st.floats(0.0, 0.4),
       model=st.sampled_from(MODELS), ss_type=st.sampled_from([1, 2, 3]))
def test_sparse_equals_dense(seed, t, s, k, reps, drop, model, ss_type) -> None:
    data = _design(seed, t, s, k, reps, drop)
    try:
        dense = _fit(model, data, ss_type, "dense")
    except DesignError as exc:  # aliased or no residual df: the sparse path says the same
        with pytest.raises(DesignError) as info:
            _auto(model, data, ss_type)
        assert str(info.value) == str(exc)
        return
    fast = _auto(model, data, ss_type)
    np.testing.assert_array_equal(fast.table["df"], dense.table["df"])
    np.testing.assert_allclose(fast.table["SS"], dense.table["SS"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.fitted(), dense.fitted(), rtol=0, atol=1e-10)


def test_sparse_type3_needs_full_absorbed_cells() -> None:
    data = _design(3, 5, 4, 3, 1, 0.0)
    data = data[~((data["topic"] == "t0") & (data["system"] == "s0"))]  # an empty topic:system cell
    codes = {f: data[f].astype("category").cat.codes.to_numpy().astype(np.int64)
             for f in ("topic", "system", "shard")}
    terms = [Term(("topic",)), Term(("system",)), Term(("topic", "system"))]
    with pytest.raises(SparseUnavailable, match="absorbed cell is empty"):
        fit_sparse(data["score"].to_numpy(), terms, codes, {"topic": 5, "system": 4, "shard": 3}, 3)
    with pytest.raises(DesignError, match="Use method='dense' for a small design"):
        _fit("MD3", data, 3, "sparse")
    # auto falls back to the dense path, which R's fixture checks
    assert _auto("MD3", data, 3).table["df"].tolist() == _fit("MD3", data, 3, "dense").table["df"].tolist()


COVARIATE_MODELS = ["score ~ topic + system + x", "score ~ system*x + shard",
                    "score ~ topic + system:x", "score ~ x*z + system", "score ~ x",
                    "score ~ topic*system + shard + x + system:x"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), t=st.integers(2, 5), s=st.integers(2, 4),
       k=st.integers(2, 3), drop=st.floats(0.0, 0.4), model=st.sampled_from(COVARIATE_MODELS),
       ss_type=st.sampled_from([1, 2, 3]))
def test_sparse_with_covariates_equals_dense(seed, t, s, k, drop, model, ss_type) -> None:
    data = _design(seed, t, s, k, 2, drop)
    rng = np.random.default_rng(seed + 1)
    data["x"] = rng.normal(size=len(data)).round(3)
    data["z"] = rng.uniform(1, 5, len(data)).round(2)
    try:
        dense = _fit(model, data, ss_type, "dense")
    except DesignError as exc:
        with pytest.raises(DesignError) as info:
            _auto(model, data, ss_type)
        assert str(info.value) == str(exc)
        return
    fast = _fit(model, data, ss_type, "sparse") if ss_type < 3 else _auto(model, data, ss_type)
    np.testing.assert_array_equal(fast.table["df"], dense.table["df"])
    np.testing.assert_allclose(fast.table["SS"], dense.table["SS"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.fitted(), dense.fitted(), rtol=0, atol=1e-10)


def test_sparse_path_has_no_dense_limit(monkeypatch) -> None:
    # 10 x 12 x 4 with 5% dropped; with the dense limit lowered below this design, the dense path
    # refuses it and the sparse path (the default) still gives the dense path's table
    from irmodels.models import _anova_fit as anova_module  # the dense path reads its limit there

    data = _design(7, 10, 12, 4, 1, 0.05)
    dense = _fit("MD6", data, 2, "dense")
    monkeypatch.setattr(anova_module, "MAX_DENSE_CELLS", 10_000)
    with pytest.raises(DesignError, match="larger than the limit of 10,000 cells"):
        _fit("MD6", data, 2, "dense")
    fast = _fit("MD6", data, 2, "auto")
    np.testing.assert_allclose(fast.table["SS"], dense.table["SS"], rtol=1e-9)


@pytest.mark.parametrize("empty_share", [0.0, 0.3])
def test_block_elimination_equals_dense(monkeypatch, empty_share) -> None:
    # the Schur-complement solver used for many shards, forced on a small design
    from irmodels.models import _sparse_lsq

    monkeypatch.setattr(_sparse_lsq, "ELIMINATE_MIN", 2)
    monkeypatch.setattr(_sparse_lsq, "ELIMINATE_TOTAL", 0)
    data = _design(11, 6, 7, 5, 1, 0.15)
    rng = np.random.default_rng(5)
    empty = rng.uniform(size=(6, 5)) < empty_share  # empty topic x shard cells ("missing")
    ti = data["topic"].str[1:].astype(int).to_numpy()
    ki = data["shard"].str[1:].astype(int).to_numpy()
    data = data[~empty[ti, ki]].reset_index(drop=True)
    for ss_type in (1, 2) if empty_share else (1, 2, 3):
        fast = _fit("MD6", data, ss_type, "sparse")
        dense = _fit("MD6", data, ss_type, "dense")
        np.testing.assert_array_equal(fast.table["df"], dense.table["df"])
        np.testing.assert_allclose(fast.table["SS"], dense.table["SS"], rtol=1e-9)


def test_too_many_remaining_columns_is_a_design_error(monkeypatch) -> None:
    from irmodels.models import _sparse_lsq

    monkeypatch.setattr(_sparse_lsq, "MAX_FACTOR_COLUMNS", 10)
    data = _design(2, 6, 5, 4, 1, 0.1)
    with pytest.raises(DesignError, match=r"columns remain after absorbing topic:system, more than "
                                          r"the 10 the exact factorisation handles"):
        _auto("MD6", data, 2)


def test_type3_empty_cell_of_a_containing_term_is_refused_as_dense_and_r() -> None:
    # seed 4929: system:shard has no (s1, k1) row in either topic, so R's lm aliases
    # system2:shard1 and car::Anova(type = 3) refuses; the sparse path gave shard SS 2.6e-7, df 1
    data = _design(4929, 2, 3, 2, 2, 0.25)
    with pytest.raises(DesignError) as dense:
        _fit("MD5", data, 3, "dense")
    with pytest.raises(DesignError) as auto:
        _auto("MD5", data, 3)
    assert str(auto.value) == str(dense.value)
    with pytest.raises(DesignError) as small:  # the small path: dense, as the reference
        _fit("MD5", data, 3, "auto")
    assert str(small.value) == str(dense.value)
    assert "term shard has no degree of freedom left under type III" in str(auto.value)
