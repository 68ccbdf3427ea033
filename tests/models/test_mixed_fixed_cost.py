"""A closed-form mixed fit reuses the optimum's deviance evaluation for its result: the result
equals one built from a fresh evaluation, and the evaluation is not kept alive by the result."""

from __future__ import annotations

import numpy as np
import pandas as pd

import irmodels as irm
from irmodels.models import mixed as M


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    t, s = 30, 6
    y = (0.3 + rng.normal(0, 0.03, s)[None, :] + rng.normal(0, 0.1, t)[:, None]
         + rng.normal(0, 0.08, (t, s)))
    return pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(t)], s),
                         "system": np.tile([f"s{j}" for j in range(s)], t),
                         "score": y.ravel()})


def test_reused_evaluation_equals_a_fresh_one() -> None:
    data = _data()
    design = M.mixed_design("score ~ system + (1|topic)", data)
    devfun = M.deviance_function(design)
    opt = M.optimize_deviance(devfun)
    assert opt.closed_form and opt._evaluated is not None
    fresh = M.optimize_deviance(devfun)
    fresh._evaluated = None  # forces mixed_result to evaluate the deviance again
    a, b = M.mixed_result(design, devfun, opt), M.mixed_result(design, devfun, fresh)
    assert opt._evaluated is None  # used once, then dropped
    assert a.loglik == b.loglik and a.aic == b.aic
    pd.testing.assert_frame_equal(a.components, b.components, check_exact=True)
    pd.testing.assert_series_equal(a.fixed_estimates, b.fixed_estimates, check_exact=True)
    pd.testing.assert_series_equal(a.random_effects["topic"], b.random_effects["topic"],
                                   check_exact=True)
    pd.testing.assert_frame_equal(a.fixed, b.fixed, check_exact=True)
    assert np.array_equal(a._state["vcov"], b._state["vcov"])
    c = irm.mixed("score ~ system + (1|topic)", data)
    assert c.loglik == a.loglik
