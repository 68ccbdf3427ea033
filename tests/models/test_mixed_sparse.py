"""The sparse path of the deviance gradient (large designs) equals the dense one, and both
equal a dense inverse of M on random designs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from irmodels import IRModelsError
from irmodels.models import _reml
from irmodels.models.mixed import deviance_function, mixed_design

REF = Path(__file__).resolve().parents[1] / "reference"
FORMULA = "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)"


@pytest.mark.parametrize("residual", [None, "system"])
@pytest.mark.parametrize("method", ["REML", "ML"])
def test_sparse_gradient_equals_dense(residual: str | None, method: str) -> None:
    d = pd.read_csv(REF / "data" / "mixed_shards_unbalanced.csv", dtype=str)
    d["score"] = d["score"].astype(float)
    devfun = deviance_function(mixed_design(FORMULA, d, residual=residual), method)
    pb = devfun.problem
    x = np.concatenate([[0.7, 1.3, 0.4], np.linspace(-0.3, 0.3, pb.n_strata - 1)])
    theta, eta = devfun.split(x)
    assert pb.dense_b  # small: the dense path by default
    dense = _reml.evaluate(pb, theta, eta, method == "REML", gradient=True)
    pb.dense_b = False
    sparse = _reml.evaluate(pb, theta, eta, method == "REML", gradient=True)
    assert sparse.deviance == pytest.approx(dense.deviance, rel=1e-13)
    assert np.allclose(sparse.gradient, dense.gradient, rtol=1e-10, atol=1e-10)
    gl_d, gr_d = _reml.gradient_parts(pb, dense, method == "REML")
    gl_s, gr_s = _reml.gradient_parts(pb, sparse, method == "REML")
    assert np.allclose(gl_s, gl_d, rtol=1e-10, atol=1e-10)
    assert np.allclose(gr_s, gr_d, rtol=1e-10, atol=1e-10)


# --- random designs: both paths of the block elimination against a dense inverse of M --------


def _random_problem(seed: int, n_t: int, n_s: int, n_h: int, drop: float,
                    residual: str | None, method: str):
    rng = np.random.default_rng(seed)
    t, s, h = (g.ravel() for g in np.meshgrid(np.arange(n_t), np.arange(n_s), np.arange(n_h),
                                               indexing="ij"))
    y = (rng.normal(0, 0.3, n_t)[t] + rng.normal(0, 0.1, n_s)[s]
         + rng.normal(0, 0.1, (n_t, n_s))[t, s] + rng.normal(0, 0.1, (n_t, n_h))[t, h]
         + rng.normal(0, 0.2, t.size))
    d = pd.DataFrame({"topic": [f"t{i}" for i in t], "system": [f"s{i}" for i in s],
                      "shard": [f"h{i}" for i in h], "score": y})
    d = d[rng.random(len(d)) >= drop].reset_index(drop=True)
    try:
        devfun = deviance_function(mixed_design(FORMULA, d, residual=residual), method)
    except IRModelsError:
        assume(False)
    return devfun


def _dense_reference(pb: _reml.Problem, f: _reml.Fit, ml: bool) -> np.ndarray:
    """Entries of M^-1 (REML) or A^-1 (ML) on the pair pattern, from M built densely."""
    m = np.zeros((pb.Q, pb.Q))
    m[pb.pair_a, pb.pair_b] = f.n_vals * f.d[pb.pair_a] * f.d[pb.pair_b]
    m[np.arange(pb.q), np.arange(pb.q)] += 1.0
    if not ml:
        return np.linalg.inv(m)[pb.pair_a, pb.pair_b]
    inv_a = np.linalg.inv(m[: pb.q, : pb.q])
    z = (pb.pair_a < pb.q) & (pb.pair_b < pb.q)
    return np.where(z, inv_a[np.minimum(pb.pair_a, pb.q - 1), np.minimum(pb.pair_b, pb.q - 1)],
                    0.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=st.integers(0, 2**32 - 1), n_t=st.integers(3, 6), n_s=st.integers(2, 5),
       n_h=st.integers(2, 4), drop=st.sampled_from([0.0, 0.1, 0.3]),
       residual=st.sampled_from([None, "system"]), method=st.sampled_from(["REML", "ML"]),
       zero=st.sampled_from([None, 0, 1, 2]))
def test_minv_pattern_equals_dense_inverse(seed, n_t, n_s, n_h, drop, residual, method, zero):
    """Both paths (dense coupling block; sparse layout, S^-1 read from its lower triangle) give
    the entries of M^-1 that a dense inverse of M gives, with a variance component at zero
    (its entries of B are then exact zeros, which the sparse layout keeps) or not."""
    devfun = _random_problem(seed, n_t, n_s, n_h, drop, residual, method)
    pb = devfun.problem
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0.2, 2.0, pb.K), rng.uniform(-0.4, 0.4, pb.n_strata - 1)])
    if zero is not None:
        x[zero] = 0.0
    theta, eta = devfun.split(x)
    ml = method == "ML"
    for dense_b in (True, False):
        pb.dense_b = dense_b
        f = _reml.evaluate(pb, theta, eta, not ml)
        got = _reml._minv_pattern(pb, f, ml)
        want = _dense_reference(pb, f, ml)
        assert np.allclose(got, want, rtol=1e-9, atol=1e-11), dense_b


def test_cross_products_follow_a_new_response() -> None:
    """T'T is cached on the problem, T'y is not: profiles and the bootstrap replace y."""
    d = pd.read_csv(REF / "data" / "mixed_shards_unbalanced.csv", dtype=str)
    d["score"] = d["score"].astype(float)
    pb = deviance_function(mixed_design(FORMULA, d), "REML").problem
    theta = np.array([0.7, 1.3, 0.4])
    _reml.evaluate(pb, theta, None, True)  # fills the cache
    y_new = pb.y[::-1].copy()
    pb.y = y_new
    got = _reml.evaluate(pb, theta, None, True, gradient=True)
    fresh = _reml.Problem(y=y_new, cols=pb.cols, vals=pb.vals, term_sizes=list(pb.term_sizes),
                          p=pb.p)
    want = _reml.evaluate(fresh, theta, None, True, gradient=True)
    assert got.deviance == want.deviance
    assert np.array_equal(got.gradient, want.gradient)
    assert got.deviance != _reml.evaluate(
        deviance_function(mixed_design(FORMULA, d), "REML").problem, theta, None, True).deviance
