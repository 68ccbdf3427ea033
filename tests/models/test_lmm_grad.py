"""The dense path of the random-slope engine (irmodels/models/_lmm_grad.py, _lmm_optim.py):
exact derivatives of the profiled deviance, the trust-region Newton optimiser, and the exact
Satterthwaite ingredients, each against the finite differences they replace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from irmodels.models import _lmm_optim
from irmodels.models._lmm import ProfiledDeviance, ReTerm, fit_lmm, lmm_design
from irmodels.models._lmm_grad import DenseProfile, satterthwaite_dense
from irmodels.models._lmm_inference import satterthwaite_parts
from irmodels.models._lmm_numdiff import central_grad, hessian, jacobian

DATA = Path(__file__).resolve().parents[1] / "reference" / "data" / "lme4"
CASES = {
    "sleepstudy": ("sleepstudy.csv", "Reaction ~ Days",
                   (ReTerm(("Subject",), True, ("Days",)),)),
    "kb07": ("kb07sim.csv", "rt ~ spkr + prec + load",
             (ReTerm(("subj",), True, ("load",)), ReTerm(("item",), True, ("load",)))),
    "uncorrelated": ("sleepstudy.csv", "Reaction ~ Days",
                     (ReTerm(("Subject",)), ReTerm(("Subject",), False, ("Days",)))),
}


def _design(case: str):
    file, formula, terms = CASES[case]
    d = pd.read_csv(DATA / file, dtype={"Subject": str})
    return lmm_design(formula, d, terms)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("reml", [True, False])
def test_exact_derivatives_equal_finite_differences(case: str, reml: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Deviance equal to the sparse engine's; gradient equal to central differences of the
    deviance (1e-6 relative: their truncation error) and Hessian to differences of the exact
    gradient (1e-6), at a point away from the optimum."""
    import irmodels.models._lmm_design as lmm  # where DENSE_MAX_Q is read

    des = _design(case)
    prof = DenseProfile(des, reml)
    monkeypatch.setattr(lmm, "DENSE_MAX_Q", 0)
    ref = ProfiledDeviance(des, reml)  # the sparse LU route, independent of the augmented factor
    assert ref.prof is None
    theta = np.where(des.lower == 0, 1.0, 0.0) + np.linspace(0.05, 0.4, des.n_theta)
    assert prof(theta) == pytest.approx(ref(theta), rel=1e-12)
    f, g = prof.grad(theta)
    f2, g2, H = prof.hess(theta)
    assert f == f2 == prof(theta)
    np.testing.assert_allclose(g2, g, rtol=1e-10, atol=1e-10 * np.abs(g).max())
    gn = central_grad(ref, theta, np.full(des.n_theta, -np.inf))
    np.testing.assert_allclose(g, gn, rtol=0, atol=1e-6 * np.abs(g).max())
    Hn = np.column_stack([(prof.grad(theta + e)[1] - prof.grad(theta - e)[1]) / 2e-5
                          for e in 1e-5 * np.eye(des.n_theta)])
    np.testing.assert_allclose(H, Hn, rtol=0, atol=1e-6 * np.abs(H).max())


@pytest.mark.parametrize("case", list(CASES))
def test_exact_satterthwaite_parts_equal_lmertest_differences(case: str) -> None:
    """The exact Hessian of the deviance in (theta, sigma) and Jacobian of Var(beta) equal the
    Richardson-extrapolated differences lmerTest uses (the sparse engine's route)."""
    des = _design(case)
    fit = fit_lmm(des.spec, des.data, terms=des.terms)
    J, A = satterthwaite_dense(fit._dev.prof, fit.theta, fit.sigma)
    vp = np.concatenate([fit.theta, [fit.sigma]])
    An = 2 * np.linalg.pinv(hessian(fit._dev.deviance_varpar, vp))
    Jn = jacobian(fit._dev.covbeta_varpar, vp)
    np.testing.assert_allclose(A, An, rtol=0, atol=1e-6 * np.abs(A).max())
    for a, b in zip(J, Jn):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-7 * np.abs(b).max())
    # the fit uses them; the numeric route agrees on the df
    Jf, Af = fit._satterthwaite
    np.testing.assert_allclose(Af, A)
    parts = satterthwaite_parts(fit)
    np.testing.assert_allclose(parts[1], A, rtol=0, atol=1e-6 * np.abs(A).max())


_SPARSE: dict[str, Any] = {}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("newton_max_q", [0, 1000])
def test_newton_and_lbfgs_routes_reach_the_sparse_engines_optimum(
        case: str, newton_max_q: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Newton from the start, and L-BFGS-B then Newton, end where the sparse engine's
    finite-difference L-BFGS-B and polish end (deviance to 1e-10, theta to 1e-5)."""
    import irmodels.models._lmm_design as lmm  # where DENSE_MAX_Q is read

    des = _design(case)
    monkeypatch.setattr(_lmm_optim, "NEWTON_MAX_Q", newton_max_q)
    dense = fit_lmm(des.spec, des.data, terms=des.terms)
    assert dense._dev.prof is not None and dense.converged
    monkeypatch.setattr(lmm, "DENSE_MAX_Q", 0)
    if case not in _SPARSE:  # the sparse engine reads no NEWTON_MAX_Q: one fit per case
        _SPARSE[case] = fit_lmm(des.spec, des.data, terms=des.terms)
    sparse = _SPARSE[case]
    assert sparse._dev.prof is None
    assert dense.deviance <= sparse.deviance + 1e-10 * abs(sparse.deviance)
    assert dense.deviance == pytest.approx(sparse.deviance, rel=1e-10)
    np.testing.assert_allclose(dense.theta, sparse.theta, rtol=0, atol=1e-5)


def test_newton_leaves_a_saddle_at_the_bound() -> None:
    """A scalar term's deviance is even in theta: started at theta = 0 (a stationary point
    with negative curvature when the variance is positive), Newton still finds the optimum."""
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(15), 6)
    x = np.tile(np.arange(6.0), 15)
    y = 1 + 0.5 * x + rng.normal(0, 1, 15)[g] + rng.normal(0, 0.5, g.size)
    d = pd.DataFrame({"g": [f"g{k}" for k in g], "x": x, "y": y})
    des = lmm_design("y ~ x", d, (ReTerm(("g",)),))
    prof = DenseProfile(des, True)
    x0, f0, it0, ok0, _ = _lmm_optim.newton(prof, np.array([1.0]), des.lower)
    x1, f1, it1, ok1, _ = _lmm_optim.newton(prof, np.array([0.0]), des.lower)
    assert ok0 and ok1 and x0[0] > 0.5
    assert f1 == pytest.approx(f0, rel=1e-12)
    assert x1[0] == pytest.approx(x0[0], rel=1e-6)


def test_response_with_a_large_mean_keeps_its_precision() -> None:
    """y is centred on its least-squares fit before the augmented factor: a response shifted
    by 1e6 gives the same variance parameters and deviance (no cancellation in r^2)."""
    des = _design("sleepstudy")
    d = des.data.copy()
    fit = fit_lmm("Reaction ~ Days", d, terms=des.terms)
    d["Reaction"] = d["Reaction"] + 1e6
    shifted = fit_lmm("Reaction ~ Days", d, terms=des.terms)
    np.testing.assert_allclose(shifted.theta, fit.theta, rtol=1e-8)
    assert shifted.deviance == pytest.approx(fit.deviance, rel=1e-12)
    assert shifted.fixed_estimates.iloc[0] - 1e6 == pytest.approx(
        fit.fixed_estimates.iloc[0], rel=1e-9)


def test_no_fixed_effects(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture) -> None:
    """``y ~ 0 + (1 + x | g)``: no fixed effects, the dense path's fit equals the sparse one's
    and its (empty) Satterthwaite parts come without a LAPACK complaint on stderr."""
    import irmodels.models._lmm_design as lmm  # where DENSE_MAX_Q is read

    rng = np.random.default_rng(5)
    g = np.repeat(np.arange(12), 8)
    x = np.tile(np.arange(8.0), 12)
    y = (2 + 0.5 * x + rng.normal(0, 1, 12)[g] + rng.normal(0, 0.3, 12)[g] * x
         + rng.normal(0, 0.5, g.size))
    d = pd.DataFrame({"g": [f"g{k}" for k in g], "x": x, "y": y})
    terms = (ReTerm(("g",), True, ("x",)),)
    dense = fit_lmm("y ~ 0", d, terms=terms)
    J, A = dense._satterthwaite
    assert len(J) == 4 and all(j.shape == (0, 0) for j in J) and A.shape == (4, 4)
    assert dense.fixed.empty
    assert "DPOTRI" not in capfd.readouterr().err
    monkeypatch.setattr(lmm, "DENSE_MAX_Q", 0)
    sparse = fit_lmm("y ~ 0", d, terms=terms)
    assert dense.loglik == pytest.approx(sparse.loglik, rel=1e-12)
    np.testing.assert_allclose(dense.theta, sparse.theta, rtol=0, atol=1e-5)
