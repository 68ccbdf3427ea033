"""The bivariate copulas of the paper's design (irmodels.replicates._copulas): densities and
maximum likelihood against pyvinecopulib (tests/reference/copula_families.{py,json}), the
selection by AIC, and sampling that recovers its parameters."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from irmodels.replicates import _copulas as cp

REF = json.loads((__import__("pathlib").Path(__file__).resolve().parents[1] / "reference"
                  / "copula_families.json").read_text())
PAIRS = REF["pairs"]
U1 = np.column_stack([p["u1"] for p in PAIRS])
U2 = np.column_stack([p["u2"] for p in PAIRS])
FAMS = [int(f) for f in PAIRS[0]["fits"]]


def _ref(fam: int, key: str) -> np.ndarray:
    return np.array([p["fits"][str(fam)][key] for p in PAIRS])


@pytest.mark.parametrize("fam", FAMS)
def test_log_density_is_pyvinecopulibs(fam: int) -> None:
    """Our log-likelihood at pyvinecopulib's own estimates equals its log-likelihood."""
    par, par2 = _ref(fam, "par"), _ref(fam, "par2")
    ll = cp.log_density(fam, U1, U2, par[None, :], par2[None, :] if fam == 2 else None)
    np.testing.assert_allclose(ll.sum(axis=0), _ref(fam, "loglik"), rtol=0, atol=1e-8)


@pytest.mark.parametrize("fam", FAMS)
def test_maximum_likelihood_matches_the_reference(fam: int) -> None:
    """The MLE over VineCopula's bounds: the log-likelihood to 1e-6 of the reference's maximum
    of pyvinecopulib's likelihood, never below pyvinecopulib's own optimiser where its estimate
    lies inside VineCopula's bounds (pyvinecopulib's are wider: the t's nu up to 50, the
    rotated families' parameters up to 0), and the parameters to 1e-4 (the t's nu, flat near
    its maximum, to 2e-2 relative)."""
    par, par2, ll = cp.fit_family(fam, U1, U2)
    np.testing.assert_allclose(ll, _ref(fam, "mle_loglik"), rtol=0, atol=1e-6)
    lo, hi = cp._bounds(fam) if fam != 2 else (-0.9999, 0.9999)
    own = _ref(fam, "par")
    nu = _ref(fam, "par2")
    inside = (own >= lo) & (own <= hi) & ((nu >= 2.0001) & (nu <= 30) if fam == 2 else True)
    assert np.all(ll[inside] >= _ref(fam, "loglik")[inside] - 1e-8)
    assert inside.sum() >= (10 if fam in (1, 3, 4, 5, 6, 13, 14, 16) else 0)
    np.testing.assert_allclose(par, _ref(fam, "mle_par"), rtol=1e-4, atol=1e-4)
    if fam == 2:
        np.testing.assert_allclose(par2, _ref(fam, "mle_par2"), rtol=2e-2)


def test_selection_is_the_smallest_aic_of_the_reference_fits() -> None:
    """Without pre-selection: the family of the smallest AIC among independence and the
    families of tau's sign, from the reference's likelihoods (every family is chosen at
    least once across the real pairs, several of them)."""
    sel = cp.select_families(U1, U2, presel=False, families=(0, *FAMS))
    tau = cp.kendall_tau(U1, U2)
    want = []
    for j in range(len(PAIRS)):
        cands = [0] + [f for f in FAMS if (f in cp._POS if tau[j] > 0 else f in cp._NEG)]
        aic = {f: (0.0 if f == 0 else -2 * PAIRS[j]["fits"][str(f)]["mle_loglik"]
                   + 2 * (2 if f == 2 else 1)) for f in cands}
        want.append(min(cands, key=lambda f: (aic[f], cands.index(f))))
    np.testing.assert_array_equal(sel["family"], want)
    assert len(set(want)) >= 4


def test_preselection_follows_vinecopula() -> None:
    """presel keeps VineCopula's candidate sets: lower-tail families when the normal scores
    correlate more below 0 than above (and the reverse), none of the other sign."""
    rng = np.random.default_rng(3)
    u1, u2 = cp.simulate(np.array([3, 4, 23]), np.array([3.0, 3.0, -3.0]), np.zeros(3),
                         400, rng)
    tau = cp.kendall_tau(u1, u2)
    todo = cp._presel(u1, u2, tau)
    assert todo[0] == (0, 2, 3, 14, 16, 114, 214)  # Clayton: lower tail, c11 - c00 < -0.3
    assert set(todo[1]) <= {0, 1, 2, 5, 13, 4, 6, 104, 204}  # Gumbel: upper-tail families
    assert all(f in (0, 1, 2, 5) + cp._F10 + cp._F01 for f in todo[2])
    sel = cp.select_families(u1, u2)
    assert list(sel["family"]) == [3, 4, 23]


def _tau(fam: int, par: float) -> float:
    """Kendall's tau of a base family (Joe and Frank by quadrature/series)."""
    base = cp.FAMILIES[fam][1]
    if base in (1, 2):
        return 2 / math.pi * math.asin(par)
    if base == 3:
        return par / (par + 2)
    if base == 4:
        return 1 - 1 / par
    if base == 5:
        from scipy import integrate

        d1 = integrate.quad(lambda t: t / math.expm1(t), 0, par)[0] / par
        return 1 - 4 / par * (1 - d1)
    k = np.arange(1, 200000)
    return float(1 - 4 * np.sum(1 / (k * (par * k + 2) * (par * (k - 1) + 2))))


@pytest.mark.parametrize("fam, par, par2", [
    (1, 0.6, 0), (2, 0.5, 4.0), (3, 2.5, 0), (4, 2.0, 0), (5, 6.0, 0), (6, 2.2, 0),
    (13, 1.5, 0), (14, 1.8, 0), (16, 2.0, 0), (23, -2.0, 0), (24, -1.7, 0), (26, -2.0, 0),
    (33, -1.2, 0), (34, -2.5, 0), (36, -1.6, 0)])
def test_samples_have_the_familys_tau_and_refit_to_its_parameter(fam, par, par2) -> None:
    """20,000 draws: Kendall's tau within 0.012 of the family's (3.5 standard errors), and
    the MLE on 2000 of them within 4 standard errors of the parameter (rotations included:
    a wrong rotation would give the opposite tau or a far parameter)."""
    rng = np.random.default_rng(fam)
    u1, u2 = cp.simulate(np.array([fam]), np.array([par]), np.array([par2]), 20000, rng)
    assert np.all((u1 > 0) & (u1 < 1) & (u2 > 0) & (u2 < 1))
    want = _tau(fam, abs(par)) * (-1 if cp.FAMILIES[fam][2] in (90, 270) else 1)
    assert stats.kendalltau(u1[:, 0], u2[:, 0])[0] == pytest.approx(want, abs=0.012)
    got, got2, _ = cp.fit_family(fam, u1[:2000], u2[:2000])
    # the standard error from the observed information (a numerical second derivative)
    h = 1e-4 * max(1.0, abs(par))
    f = [float(cp.log_density(fam, u1[:2000], u2[:2000], np.array([got[0] + e * h]),
                              got2 if fam == 2 else None).sum()) for e in (-1, 0, 1)]
    se = 1 / math.sqrt(max(-(f[0] - 2 * f[1] + f[2]) / h**2, 1e-12))
    assert abs(got[0] - par) <= 4 * se
    if fam == 2:
        assert got2[0] == pytest.approx(par2, rel=0.5)


def test_pseudo_observations_break_ties_at_random() -> None:
    X = np.array([[0.1, 0.0], [0.1, 0.5], [0.3, 0.0], [0.2, 0.0]])
    U = cp.pseudo_observations(X, np.random.default_rng(0))
    assert sorted(U[:, 0] * 5) == [1, 2, 3, 4] and sorted(U[:, 1] * 5) == [1, 2, 3, 4]
    assert U[2, 0] == 0.8 and U[3, 0] == 0.6 and U[1, 1] == 0.8
    V = cp.pseudo_observations(X, np.random.default_rng(0))
    np.testing.assert_array_equal(U, V)


def test_kendall_tau_is_scipys() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random((30, 4)), rng.random((30, 4))
    b[:, 1] = a[:, 1]
    a[:5, 2] = 0.5  # ties: tau-b
    want = [stats.kendalltau(a[:, j], b[:, j])[0] for j in range(4)]
    np.testing.assert_allclose(cp.kendall_tau(a, b), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fam", [104, 114, 204, 214])
def test_tawn_density_h_function_and_samples(fam: int) -> None:
    """The Tawn families (not in pyvinecopulib 0.6.5): the density integrates to 1 and to the
    h-function (dblquad/quad), and the MLE on 3000 draws recovers (theta, psi) = (2.5, 0.6)
    within 4 standard errors (from the observed information)."""
    from scipy import integrate

    theta, psi = 2.5, 0.6

    def c(v: float, u: float) -> float:
        return float(np.exp(cp.log_density(fam, np.array(u), np.array(v), np.array(theta),
                                           np.array(psi))))

    assert integrate.dblquad(c, 0, 1, 0, 1)[0] == pytest.approx(1.0, abs=1e-6)
    base = cp.FAMILIES[fam][1]
    for u0, v0 in ((0.3, 0.7), (0.8, 0.2)):
        if cp.FAMILIES[fam][2] == 180:  # h of the base family at the reflected point
            want = 1 - integrate.quad(lambda v, u0=u0: c(v, u0), 0, v0)[0]
            got = cp._h_base(base, np.array(1 - v0), np.array(1 - u0), np.array(theta),
                             np.array(psi))
        else:
            want = integrate.quad(lambda v, u0=u0: c(v, u0), 0, v0)[0]
            got = cp._h_base(base, np.array(v0), np.array(u0), np.array(theta), np.array(psi))
        assert float(got) == pytest.approx(want, abs=1e-7)
    rng = np.random.default_rng(fam)
    u1, u2 = cp.simulate(np.array([fam]), np.array([theta]), np.array([psi]), 3000, rng)
    got_t, got_p, ll = cp.fit_family(fam, u1, u2)
    h = 1e-3

    def f(t: float, p: float) -> float:
        return float(cp.log_density(fam, u1, u2, np.array([t]), np.array([p])).sum())

    H = np.array([[f(got_t[0] + h, got_p[0]) - 2 * ll[0] + f(got_t[0] - h, got_p[0]),
                   (f(got_t[0] + h, got_p[0] + h) - f(got_t[0] + h, got_p[0] - h)
                    - f(got_t[0] - h, got_p[0] + h) + f(got_t[0] - h, got_p[0] - h)) / 4],
                  [0.0, f(got_t[0], got_p[0] + h) - 2 * ll[0] + f(got_t[0], got_p[0] - h)]])
    H[1, 0] = H[0, 1]
    se = np.sqrt(np.diag(np.linalg.inv(-H / h**2)))
    assert abs(got_t[0] - theta) <= 4 * se[0] and abs(got_p[0] - psi) <= 4 * se[1]
    assert ll[0] == pytest.approx(f(got_t[0], got_p[0]), abs=1e-9)


@pytest.mark.parametrize("order", ["C", "F"])
def test_t_quantiles_of_pseudo_observations_are_the_elementwise_ones(order: str) -> None:
    """The t fit computes stdtrit once per distinct (value, nu) of pseudo-observations and
    gathers: bit for bit the elementwise quantiles, in the same memory layout (the sums over
    topics, and so the fit, depend on it)."""
    rng = np.random.default_rng(7)
    U = cp.pseudo_observations(rng.normal(size=(20, 9)), rng)
    lo, hi = np.triu_indices(9, k=1)
    u1, u2 = (np.asarray(U[:, lo], order=order), np.asarray(U[:, hi], order=order))
    nu = rng.choice([2.5, 4.0, 11.3], size=u1.shape[1])  # repeated values, as in the search
    got = cp._t_quantiles(u1, u2)(nu)
    for u, (x, x2, lx) in zip((u1, u2), got):
        want = cp.special.stdtrit(nu, u)
        assert np.array_equal(x, want) and np.array_equal(x2, want**2)
        assert np.array_equal(lx, np.log1p(want**2 / nu))
        assert x.flags.c_contiguous == want.flags.c_contiguous
        assert x.flags.f_contiguous == want.flags.f_contiguous
    # not pseudo-observations: elementwise, as before
    a, b = rng.random((6, 4)), rng.random((6, 4))
    (x, _, _), (y, _, _) = cp._t_quantiles(a, b)(np.full(4, 3.0))
    assert np.array_equal(x, cp.special.stdtrit(3.0, a))
    assert np.array_equal(y, cp.special.stdtrit(3.0, b))


@pytest.mark.parametrize("method, step", [("SLSQP", np.sqrt(np.finfo(float).eps)),
                                          ("L-BFGS-B", 1e-8)])
def test_fits_gradient_is_scipys_own_forward_differences(method: str, step: float) -> None:
    """The Tawn fit (SLSQP) and the margins' (L-BFGS-B) hand the minimiser the forward
    differences scipy would take itself (irmodels/replicates/_fdiff.py): the same gradient bit
    for bit (inside, and next to either bound, where the step turns or is cut), and so the
    same path and optimum as without a jac."""
    from scipy import optimize
    from scipy.optimize._numdiff import approx_derivative

    from irmodels.replicates._fdiff import forward_differences

    def f(p: np.ndarray) -> float:
        t, q = p
        return float((t - 3.3) ** 2 * (1 + q) + np.exp(q) * np.log(t) - q * t)

    bounds = [(1.001, 20.0), (0.05, 0.45)]
    lb, ub = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    fun, grad = forward_differences(f, bounds, step)
    for x in ([4.0, 0.3], [20.0, 0.45], [20.0 - 1e-9, 0.05], [1.001, 0.45 - 1e-10],
              [1.0015, 0.2]):
        x0 = np.array(x)
        want = approx_derivative(f, x0, method="2-point", abs_step=step, bounds=(lb, ub),
                                 f0=f(x0))
        assert np.array_equal(grad(x0), want), x
        assert fun(x0) == f(x0)
    options = {"ftol": 1e-12, "maxiter": 500}
    plain = optimize.minimize(f, [2.0, 0.2], method=method, bounds=bounds, options=options)
    fun, grad = forward_differences(f, bounds, step)
    ours = optimize.minimize(fun, [2.0, 0.2], method=method, jac=grad, bounds=bounds,
                             options=options)
    assert np.array_equal(ours.x, plain.x) and ours.nit == plain.nit
