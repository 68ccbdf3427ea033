"""Shared by the mixed-model tests: every fit must be the optimum of its own deviance.

Import it as ``from mixed_checks import assert_deviance_optimum`` (pytest puts this folder on
the path; a second conftest.py here would clash with tests/inference/conftest.py under
``--doctest-modules``)."""

from __future__ import annotations

import numpy as np

#: Relative size of the perturbation of each variance parameter (absolute at 0).
PERTURB = 1e-4


def deviance_optimum_gap(fit, rel: float = PERTURB) -> float:
    """Largest drop of the fit's own deviance over the points that move one variance parameter
    (theta_k, or a log SD ratio) by +-``rel`` relative (``rel`` absolute where it is 0); a
    negative theta is skipped (the deviance is even in theta). Returns how far below the
    fit's deviance the best neighbour lies, relative to max(1, |deviance|): <= 0 at an
    optimum."""
    st = fit._state
    devfun, opt = st.devfun, st.optimum
    x = np.concatenate([opt.theta, [] if opt.eta is None else opt.eta]).astype(float)
    d0 = devfun(x)
    K = devfun.n_theta
    worst = -np.inf
    for j in range(x.size):
        h = rel * abs(x[j]) if x[j] != 0 else rel
        for sign in (1.0, -1.0):
            xp = x.copy()
            xp[j] += sign * h
            if j < K and xp[j] < 0:
                continue
            worst = max(worst, (d0 - devfun(xp)) / max(1.0, abs(d0)))
    return float(worst)


def assert_deviance_optimum(fit, rel: float = PERTURB, tol: float = 1e-12) -> None:
    """Fail unless no neighbour of the fit's parameters has a lower deviance (beyond the
    deviance's rounding, ``tol`` relative)."""
    gap = deviance_optimum_gap(fit, rel)
    assert gap <= tol, (
        f"{fit!r}: a neighbour of the returned parameters has a deviance lower by {gap:.3g} "
        "(relative): the fit is not the optimum of its own deviance")

