"""Properties of the binomial GLMM that hold whatever the data (hypothesis, small examples).

- A binomial GLMM with ``n`` trials per row equals the Bernoulli GLMM of the rows expanded into
  ``n`` 0/1 rows: the same Laplace objective up to the constant ``sum log C(n_i, s_i)``, so the
  same estimates, and log-likelihoods that differ by exactly that constant.
- Scaling the trials by ``k`` with the same proportions equals repeating each row ``k`` times
  (the kernel ``k [s log p + (n - s) log(1 - p)]`` and the weights ``k n`` are the same), so
  the estimates agree, and the log-likelihoods differ by the binomial constant:
  ``sum [log C(k n_i, k s_i) - k log C(n_i, s_i)]``.
- The order of the rows never changes a fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

import irmodels as irm

pytestmark = pytest.mark.filterwarnings("ignore::irmodels.errors.BoundaryFitWarning")

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _lchoose(n, s):
    return gammaln(n + 1) - gammaln(s + 1) - gammaln(n - s + 1)


def _data(seed: int, topics: int = 8, systems: int = 3, trials: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 0.8, topics)
    a = np.array([-0.4, 0.1, 0.5])[:systems]
    rows = []
    for t in range(topics):
        for s in range(systems):
            p = 1 / (1 + np.exp(-(a[s] + b[t])))
            rows.append((f"t{t}", f"s{s}", int(rng.binomial(trials, p)), trials))
    return pd.DataFrame(rows, columns=["topic", "system", "succ", "n"])


def _close(f1, f2, tol=2e-5):
    np.testing.assert_allclose(f1.fixed["estimate"], f2.fixed["estimate"], atol=tol)
    np.testing.assert_allclose(f1.fixed["se"], f2.fixed["se"], rtol=1e-3)
    np.testing.assert_allclose(f1.theta, f2.theta, atol=tol)


@SETTINGS
@given(seed=st.integers(0, 10_000))
def test_binomial_equals_expanded_bernoulli(seed):
    d = _data(seed)
    fit = irm.mixed("succ ~ system + (1|topic)", d, family="binomial", trials="n")
    rows = []
    for r in d.itertuples():
        rows += [(r.topic, r.system, 1)] * r.succ + [(r.topic, r.system, 0)] * (r.n - r.succ)
    e = pd.DataFrame(rows, columns=["topic", "system", "y"])
    bern = irm.mixed("y ~ system + (1|topic)", e, family="binomial")
    _close(fit, bern)
    const = float(np.sum(_lchoose(d["n"].to_numpy(float), d["succ"].to_numpy(float))))
    assert fit.loglik - bern.loglik == pytest.approx(const, abs=1e-5)


@SETTINGS
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_scaling_trials_changes_loglik_by_the_binomial_constant(seed, k):
    d = _data(seed)
    scaled = d.assign(succ=d["succ"] * k, n=d["n"] * k)
    repeated = pd.concat([d] * k, ignore_index=True)
    f_scaled = irm.mixed("succ ~ system + (1|topic)", scaled, family="binomial", trials="n")
    f_rep = irm.mixed("succ ~ system + (1|topic)", repeated, family="binomial", trials="n")
    _close(f_scaled, f_rep)
    n, s = d["n"].to_numpy(float), d["succ"].to_numpy(float)
    const = float(np.sum(_lchoose(k * n, k * s) - k * _lchoose(n, s)))
    assert f_scaled.loglik - f_rep.loglik == pytest.approx(const, abs=1e-5)


@SETTINGS
@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 10_000))
def test_row_order_never_changes_a_fit(seed, perm_seed):
    d = _data(seed)
    perm = np.random.default_rng(perm_seed).permutation(len(d))
    f1 = irm.mixed("succ ~ system + (1|topic)", d, family="binomial", trials="n")
    f2 = irm.mixed("succ ~ system + (1|topic)", d.iloc[perm].reset_index(drop=True),
                   family="binomial", trials="n")
    _close(f1, f2, tol=1e-6)
    assert f1.loglik == pytest.approx(f2.loglik, abs=1e-8)
    np.testing.assert_allclose(f1.fitted()[perm], f2.fitted(), atol=1e-6)
