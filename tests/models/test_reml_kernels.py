"""The blocked kernel (irmodels/models/_blocked.py) against the pattern kernel of _reml.py.

Both compute the profiled (RE)ML deviance of a crossed random-intercept model and its analytic
gradient; the blocked one from the Schur complement's inverse alone. On random crossed designs
(any sizes, zero components, fixed covariates) they must agree to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irmodels.models import _blocked, _reml

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def crossed_designs(draw: st.DrawFn) -> tuple[_reml.Problem, np.ndarray]:
    """A crossed design with 1-3 random intercepts (largest first), an intercept, optionally a
    covariate and a two-level factor; every level observed; and a theta with possible zeros."""
    n_terms = draw(st.integers(1, 3))
    sizes = sorted(draw(st.lists(st.integers(1, 25), min_size=n_terms, max_size=n_terms)),
                   reverse=True)
    n = draw(st.integers(max(sizes) + 3, 120))
    codes = []
    for size in sizes:
        extra = draw(st.lists(st.integers(0, size - 1), min_size=n - size, max_size=n - size))
        order = draw(st.permutations(range(n)))
        c = np.concatenate([np.arange(size), np.array(extra, dtype=np.int64)])[list(order)]
        codes.append(c)
    offs = np.cumsum([0] + sizes)
    q = int(offs[-1])
    fixed = [np.full(n, q)]
    fvals = [np.ones(n)]
    p = 1
    if draw(st.booleans()):
        cov = np.array(draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=n, max_size=n)))
        if np.ptp(cov) > 0.1:
            fixed.append(np.full(n, q + p))
            fvals.append(cov)
            p += 1
    y = np.array(draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n)))
    y = y + 0.01 * np.arange(n)  # never constant
    cols = np.column_stack([c + offs[k] for k, c in enumerate(codes)] + fixed).astype(np.int64)
    vals = np.column_stack([np.ones(n)] * n_terms + fvals)
    pb = _reml.Problem(y=y, cols=cols, vals=vals, term_sizes=sizes, p=p)
    theta = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 3.0)),
                                   min_size=n_terms, max_size=n_terms)))
    return pb, theta


def _close(a: np.ndarray, b: np.ndarray, scale: float) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * scale)


@SETTINGS
@given(crossed_designs(), st.booleans())
def test_blocked_deviance_and_gradient_equal_pattern(case: tuple, reml: bool) -> None:
    pb, theta = case
    a = _reml.evaluate(pb, theta, None, reml, gradient=True, kernel="pattern")
    b = _reml.evaluate(pb, theta, None, reml, gradient=True, kernel="blocked")
    assert a.blocked is None and b.blocked is not None
    scale = max(1.0, abs(a.deviance))
    _close(np.array([b.deviance, b.logdet_m, b.logdet_rx, b.r2]),
           np.array([a.deviance, a.logdet_m, a.logdet_rx, a.r2]), scale)
    _close(b.gradient, a.gradient, scale)
    _close(np.concatenate([b.u, b.beta]), np.concatenate([a.u, a.beta]), 1.0)
    _close(b.resid, a.resid, 1.0)
    # the parts lmerTest's unprofiled derivatives use, and the fixed effects' covariance
    for x, y in zip(_reml.gradient_parts(pb, b, reml), _reml.gradient_parts(pb, a, reml)):
        _close(x, y, scale)
    _close(_reml.fixed_cov_unscaled(pb, b), _reml.fixed_cov_unscaled(pb, a), 1.0)
    # A^-1 on the pattern (conditional SDs) from the blocked fit's fields
    _close(_reml._minv_pattern(pb, b, ml=True), _reml._minv_pattern(pb, a, ml=True), 1.0)


@SETTINGS
@given(crossed_designs())
def test_blocked_unprofiled_equals_pattern(case: tuple) -> None:
    pb, theta = case
    for reml in (True, False):
        a = _reml._factor(pb, theta, None, reml, kernel="pattern")
        b = _reml._factor(pb, theta, None, reml, kernel="blocked")
        assert b.deviance == pytest.approx(a.deviance, rel=1e-10, abs=1e-10)


def test_kernel_choice_by_size() -> None:
    """The blocked kernel is used on large homoscedastic designs only (the fixtures' small
    designs keep the pattern kernel), and a shallow copy with a new response shares its
    structure."""
    n, q1, q2 = 2000, 400, 300
    idx = np.arange(n)
    cols = np.column_stack([idx % q1, q1 + (idx * 7) % q2, np.full(n, q1 + q2)])
    y = np.sin(idx) + 0.1 * (idx % 13)
    pb = _reml.Problem(y=y, cols=cols, vals=np.ones((n, 3)), term_sizes=[q1, q2], p=1)
    assert _blocked.applies(pb)
    f = _reml.evaluate(pb, np.array([0.7, 0.4]), None, True, gradient=True)
    assert f.blocked is not None
    small = _reml.Problem(y=y[:60], cols=np.column_stack([idx[:60] % 6, 6 + idx[:60] % 5,
                                                          np.full(60, 11)]),
                          vals=np.ones((60, 3)), term_sizes=[6, 5], p=1)
    assert not _blocked.applies(small)
    assert _reml.evaluate(small, np.array([0.7, 0.4]), None, True).blocked is None
    import copy
    other = copy.copy(pb)
    other.y = 2.0 * y
    assert _blocked.structure(other) is _blocked.structure(pb)
    g = _reml.evaluate(other, np.array([0.7, 0.4]), None, True, gradient=True)
    # the deviance of 2y is that of y plus dof * log(4)
    assert g.deviance == pytest.approx(f.deviance + (n - 1) * np.log(4.0), rel=1e-12)
    np.testing.assert_allclose(g.gradient, f.gradient, rtol=1e-9, atol=1e-8)
