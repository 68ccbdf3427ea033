"""The sparse path of the deviance gradient (large designs) equals the dense one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
