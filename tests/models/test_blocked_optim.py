"""The optimiser of the blocked kernel's designs (irmodels/models/_mixed_optimize.py:
trust_region_bfgs from moment_start) against the L-BFGS-B path every other design takes.

Large crossed random-intercept designs (the coupling block above 100,000 entries: the blocked
kernel of _blocked.py) are fitted by a trust-region quasi-Newton method; its end point must be
the optimum L-BFGS-B from theta = 0.5 finds (to the latter's tolerance), also with a component
at the boundary, in fewer evaluations.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

import irmodels as irm
from irmodels.errors import BoundaryFitWarning
from irmodels.models import _blocked, _mixed_optimize, _reml
from irmodels.models._mixed_optimize import moment_start, trust_region_bfgs


def _crossed(seed: int, sd_g: float, n: int = 6000) -> pd.DataFrame:
    """450 students x 260 lecturers (random pairs) in 12 departments, a two-level fixed factor;
    SDs 0.5 (students), 0.7 (lecturers), ``sd_g`` (departments), residual 1."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 450, n)
    d = rng.integers(0, 260, n)
    g = d % 12
    f = rng.integers(0, 2, n)
    y = (0.3 * f + 0.5 * rng.standard_normal(450)[s] + 0.7 * rng.standard_normal(260)[d]
         + sd_g * rng.standard_normal(12)[g] + rng.standard_normal(n))
    return pd.DataFrame({"y": y, "s": pd.Categorical(s), "d": pd.Categorical(d),
                         "g": pd.Categorical(g), "f": pd.Categorical(f)})


FORMULA = "y ~ f + (1|s) + (1|d) + (1|g)"


def _lbfgs(fun, x0, bounds, maxiter=2000):  # the path of the other designs
    return optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                             options={"maxiter": maxiter, "maxfun": 5 * maxiter,
                                      "ftol": 1e-15, "gtol": 1e-9, "maxls": 10})


def _fit_counting(data: pd.DataFrame, lbfgs: bool = False) -> tuple[irm.MixedResult, int]:
    """The fit and its number of deviance evaluations; ``lbfgs``: by the other designs' path
    (L-BFGS-B from theta = 0.5)."""
    calls = [0]
    evaluate = _reml.evaluate

    def counted(*args, **kwargs):
        calls[0] += 1
        return evaluate(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_reml, "evaluate", counted)
        if lbfgs:
            mp.setattr(_mixed_optimize, "trust_region_bfgs", _lbfgs)
            mp.setattr(_mixed_optimize, "moment_start", lambda pb: np.full(pb.K, 0.5))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundaryFitWarning)
            fit = irm.mixed(FORMULA, data)
    return fit, calls[0]


@pytest.mark.parametrize("sd_g", [0.4, 0.0])
def test_trust_region_reaches_the_lbfgs_optimum_in_fewer_evaluations(sd_g: float) -> None:
    data = _crossed(7, sd_g)
    new, n_new = _fit_counting(data)
    pb = new._state.problem
    assert _blocked.applies(pb)
    old, n_old = _fit_counting(data, lbfgs=True)
    # never worse than L-BFGS-B's end point, and equal to its tolerance
    assert new.loglik >= old.loglik - 1e-9
    assert new.loglik == pytest.approx(old.loglik, abs=1e-7)
    v_new = new.variance_components()["variance"]
    v_old = old.variance_components()["variance"]
    for name in v_old.index:
        assert v_new[name] == pytest.approx(v_old[name], rel=1e-5, abs=1e-9)
    np.testing.assert_allclose(new.fixed["estimate"], old.fixed["estimate"], rtol=1e-7)
    assert new.boundary == old.boundary == (sd_g == 0.0)
    if sd_g == 0.0:
        assert v_new["g"] == 0.0  # a boundary optimum is reported as exactly 0
    assert new.converged
    assert n_new < n_old
    assert n_new <= 25


def test_moment_start_is_near_the_optimum() -> None:
    data = _crossed(3, 0.4, n=20000)
    fit, _ = _fit_counting(data)
    start = moment_start(fit._state.problem)
    theta = fit._state.theta
    # students and lecturers within 15 % of the REML theta; departments (nested lecturers'
    # variance absorbed) within a factor 3
    np.testing.assert_allclose(start[:2], theta[:2], rtol=0.15)
    assert theta[2] / 3 < start[2] < 3 * theta[2]


def test_moment_start_of_degenerate_terms() -> None:
    """A term without between-level variance starts at 0.1 (never 0, a stationary point); a
    constant response gives the neutral start 0.5."""
    n = 400
    g = np.arange(n) % 20
    cols = np.column_stack([g, np.full(n, 20)])
    y = ((np.arange(n) // 20) % 2).astype(float)  # every level has the same mean
    pb = _reml.Problem(y=y, cols=cols, vals=np.ones((n, 2)), term_sizes=[20], p=1)
    assert moment_start(pb).tolist() == [pytest.approx(0.1)]
    flat = _reml.Problem(y=np.ones(n), cols=cols, vals=np.ones((n, 2)), term_sizes=[20], p=1)
    assert moment_start(flat).tolist() == [0.5]


def _theta_square(x: np.ndarray) -> tuple[float, np.ndarray]:
    """A deviance-like function: x0 enters through its square (gradient 0 at 0, optimum 0),
    x1's optimum is 2, x2 is free with optimum -1; coupled."""
    a = x[0] ** 2
    f = 3 * a + a * a + (x[1] - 2) ** 2 + 0.5 * (x[1] - 2) * (x[2] + 1) + (x[2] + 1) ** 2
    g = np.array([6 * x[0] + 4 * x[0] ** 3,
                  2 * (x[1] - 2) + 0.5 * (x[2] + 1),
                  0.5 * (x[1] - 2) + 2 * (x[2] + 1)])
    return float(f), g


def test_trust_region_stops_on_the_bound_where_the_gradient_vanishes() -> None:
    res = trust_region_bfgs(_theta_square, np.array([0.8, 0.5, 3.0]),
                            [(0.0, None), (0.0, None), (None, None)])
    assert res.success
    assert res.x[0] == 0.0  # on its bound exactly, not 1e-5 above it
    np.testing.assert_allclose(res.x[1:], [2.0, -1.0], atol=1e-7)
    assert res.nfev < 40


def test_trust_region_holds_a_fixed_parameter() -> None:
    res = trust_region_bfgs(_theta_square, np.array([0.8, 0.5, 3.0]),
                            [(0.0, None), (0.5, 0.5), (None, None)])
    assert res.x[1] == 0.5
    assert res.x[0] == 0.0
    # x2 minimises its coupled quadratic with x1 held at 0.5: 2 (x2 + 1) = -0.5 (0.5 - 2)
    assert res.x[2] == pytest.approx(-1.0 + 0.375, abs=1e-7)


def test_trust_region_from_a_non_finite_start() -> None:
    res = trust_region_bfgs(lambda x: (float("nan"), np.zeros(1)), np.array([1.0]),
                            [(0.0, None)])
    assert not res.success
    assert "not finite" in res.message
