"""Error rates of tests on simulated collections (irm.studies.test_errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.data.frame import to_wide
from irmodels.errors import ArgumentError, DesignError
from irmodels.studies.error_rates import ERROR_COLUMNS, _full_stats
from irmodels.studies.error_rates import test_errors as run_errors


@pytest.fixture(scope="module")
def ap() -> pd.DataFrame:
    return irm.datasets.load("adhoc3", "AP")


@pytest.fixture(scope="module")
def small(ap: pd.DataFrame) -> pd.DataFrame:
    return ap[ap["system"].isin([f"sys{i}" for i in range(2, 10)])]


@pytest.fixture(scope="module")
def four(ap: pd.DataFrame) -> pd.DataFrame:
    """4 runs (6 pairs): for the checks that two code paths give the same table, which hold at
    any size (the paper's design fits a copula per pair: 28 on ``small``)."""
    return ap[ap["system"].isin([f"sys{i}" for i in range(2, 6)])]


def _long(S: np.ndarray) -> pd.DataFrame:
    T, R = S.shape
    return irm.frame(pd.DataFrame({"topic": np.repeat(np.arange(T), R),
                                   "system": np.tile([f"s{j}" for j in range(R)], T),
                                   "score": S.ravel()}))


def test_t_type_i_error_is_alpha_on_the_null(ap: pd.DataFrame) -> None:
    n = 2000
    study = run_errors(ap, tests=["t"], sizes=[25], alpha=[0.05], n_trials=n, seed=3)
    k = int(study.table["n_type_I"].iloc[0])
    # the count of a test of level 0.05 over 2000 independent null trials: Binomial(2000,
    # 0.05); its central 99.9% range
    lo, hi = stats.binom.ppf([0.0005, 0.9995], n, 0.05)
    assert lo <= k <= hi, k


def test_columns_and_rates(small: pd.DataFrame) -> None:
    study = run_errors(small, tests=["t", "wilcoxon", "sign", "bootstrap", "permutation"],
                       sizes=[10, 40], alpha=[0.01, 0.05], n_trials=100, delta=0.08,
                       n_resamples=200, seed=2)
    f = study.to_frame()
    assert list(f.columns) == list(ERROR_COLUMNS)
    assert len(f) == 5 * 2 * 2
    for col in ("type_I", "type_II", "type_III"):
        assert f[col].between(0, 1).all()
    # a larger alpha rejects more: type I up, type II down, within a test and size
    g = f.set_index(["test", "topics", "alpha"])
    for test in study.tests:
        for c in (10, 40):
            assert g.loc[(test, c, 0.05), "type_I"] >= g.loc[(test, c, 0.01), "type_I"]
            assert g.loc[(test, c, 0.05), "type_II"] <= g.loc[(test, c, 0.01), "type_II"]
    # a true difference of 0.08 is found far more often with 40 topics than with 10
    for test in ("t", "wilcoxon", "bootstrap", "permutation"):
        assert g.loc[(test, 40, 0.05), "type_II"] < g.loc[(test, 10, 0.05), "type_II"] - 0.2
    ci = study.intervals(0.95)
    assert (ci["lower_II"] <= ci["type_II"]).all() and (ci["type_II"] <= ci["upper_II"]).all()


def test_tukey_matches_irm_anova_md1() -> None:
    rng = np.random.default_rng(4)
    S = np.clip(rng.normal(0.4, 0.15, size=(12, 5)) + rng.normal(0, 0.1, size=(12, 1))
                + np.array([0.0, 0.05, 0.1, 0.15, 0.2]), 0, 1)
    p, direction = _full_stats(S[None], np.array([1]), np.array([3]))["tukey"]
    pairs = irm.anova("MD1", _long(S)).tukey().pairs
    row = pairs[((pairs["a"] == "s1") & (pairs["b"] == "s3"))
                | ((pairs["a"] == "s3") & (pairs["b"] == "s1"))].iloc[0]
    assert p[0] == pytest.approx(row["p_adj"], rel=1e-6)
    assert direction[0] == np.sign(S[:, 3].mean() - S[:, 1].mean())


@pytest.mark.parametrize("boundary", [False, True])
def test_mixed_matches_irm_mixed(boundary: bool) -> None:
    rng = np.random.default_rng(8)
    S = rng.normal(0.4, 0.1, size=(15, 4)) + rng.normal(0, 0.15, size=(15, 1))
    if boundary:  # equal topic means: the topic variance's REML estimate is 0
        S = S - S.mean(axis=1, keepdims=True) + 0.4
    S = S + np.array([0.0, 0.02, 0.05, 0.01])
    _, R = S.shape
    tmeans = S.mean(axis=1)
    resid = S - S.mean(axis=0) - tmeans[:, None] + S.mean()
    ms_t = R * ((tmeans - S.mean()) ** 2).sum() / (len(S) - 1)
    ms_e = (resid**2).sum() / ((len(S) - 1) * (R - 1))
    assert (ms_t < ms_e) == boundary
    p, _ = _full_stats(S[None], np.array([0]), np.array([2]))["mixed"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed("score ~ system + (1|topic)", _long(S))
    m = fit.marginal_means("system")
    V = fit.marginal_means_cov("system")
    d = m["s2"] - m["s0"]
    t = d / np.sqrt(V.loc["s2", "s2"] + V.loc["s0", "s0"] - 2 * V.loc["s2", "s0"])
    df = (len(S) - 1) * R if boundary else (len(S) - 1) * (R - 1)
    assert p[0] == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-4)


def test_tukey_and_mixed_in_the_study(small: pd.DataFrame) -> None:
    study = run_errors(small, tests=["tukey", "mixed", "t"], sizes=[20], alpha=0.05,
                       n_trials=150, delta=0.1, seed=5)
    g = study.to_frame().set_index("test")
    # Tukey controls the error of all 28 pairs at once: one pair's is far below alpha, and it
    # finds fewer true differences than the unadjusted mixed-model t of the same data
    assert g.loc["tukey", "type_I"] <= 0.03
    assert g.loc["tukey", "type_II"] > g.loc["mixed", "type_II"]


def test_same_result_on_every_backend(small: pd.DataFrame) -> None:
    kw = dict(tests=["t", "sign"], sizes=[8], alpha=0.05, n_trials=60, seed=9)
    a = run_errors(small, backend="serial", **kw)
    b = run_errors(small, backend="processes", n_workers=2, **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    c = run_errors(small, backend="serial", **{**kw, "seed": 10})
    assert not a.table.equals(c.table)


def test_plot_and_face(small: pd.DataFrame) -> None:
    study = run_errors(small, tests=["t", "sign"], sizes=[5, 10], alpha=[0.05, 0.1],
                       n_trials=20, seed=1)
    fig = study.plot()
    assert len(fig.axes) == 3
    assert len(fig.axes[0].lines) == 2 * 2 + 2  # a line per (test, alpha), a mark per alpha
    assert "type_III" in study.summary() or "type III" in study.summary()
    assert study.__repr__().startswith("<ErrorRateStudy ")


def test_refusals(small: pd.DataFrame) -> None:
    with pytest.raises(ArgumentError, match="unknown test"):
        run_errors(small, tests=["z"], n_trials=5)
    with pytest.raises(DesignError, match="at least 3"):
        run_errors(small, sizes=[2], n_trials=5)
    with pytest.raises(DesignError, match="positive"):
        run_errors(small, delta=-0.1, n_trials=5)
    with pytest.raises(DesignError, match="leaves"):
        run_errors(small, delta=0.9, n_trials=5)
    with pytest.raises(ArgumentError, match="n_trials"):
        run_errors(small, n_trials=0)


# --------------------------------------------------------------------------------------------
# the paper's design (design="pairs") and its sign test (sign_ties)


def test_sign_ties_count_small_differences_as_ties() -> None:
    """sign_ties=0.01 is R/ir_tests.R's test_sign(min_d = .01): positives are d > 0.01,
    ties |d| <= 0.01, the binomial test on the rest; 0 keeps only d = 0 a tie."""
    from irmodels.studies.error_rates import _pair_stats

    rng = np.random.default_rng(0)
    D = np.array([[0.005, 0.02, 0.03, 0.04, -0.008, 0.05, 0.0, 0.06, -0.02, 0.015]]).T
    p0, _ = _pair_stats(D, "sign", rng, 10)
    p1, direction = _pair_stats(D, "sign", rng, 10, sign_ties=0.01)
    # d = 0 a tie: 7 positive of 9; |d| <= 0.01 ties: 6 positive of 7
    assert p0[0] == pytest.approx(stats.binomtest(7, 9).pvalue, abs=1e-12)
    assert p1[0] == pytest.approx(stats.binomtest(6, 7).pvalue, abs=1e-12)
    assert direction[0] == 1
    # every difference a tie: not significant (the paper's NA)
    p2, _ = _pair_stats(D * 0.1, "sign", rng, 10, sign_ties=0.01)
    assert p2[0] == 1.0


def test_pairs_design_uses_the_first_runs_margin_for_both(small: pd.DataFrame) -> None:
    """Under the null both runs of a trial go through run 1's margin: the mean difference over
    many trials is 0 within its Monte Carlo error; under the alternative it is delta (the
    experimental run's margin moved to the baseline's expected score + 0.05)."""
    from irmodels.studies.error_rates import _alt_differences, _fit_pair_model, _pair_differences

    sim = irm.replicates.fit_simulator(small)
    wide = to_wide(small)
    wide.columns = [str(c) for c in wide.columns]
    wide = wide[list(sim.systems)]
    model, table = _fit_pair_model(wide.to_numpy(float), sim._margins, 0.05,
                                   np.random.SeedSequence(1), sim.systems)
    R = len(sim.systems)
    assert len(table) == R * (R - 1) // 2
    assert set(table["family"]) <= set(irm.replicates._copulas.SHORT_NAMES.values())
    rng = np.random.default_rng(2)
    ia = rng.integers(0, R, 4000)
    ib = (ia + rng.integers(1, R, 4000)) % R
    D = {"null": _pair_differences(model, 30, ia, ib, rng),
         "alt": _alt_differences(model, 30, 4000, rng)[0]}
    for hyp, want in (("null", 0.0), ("alt", 0.05)):
        d = D[hyp].mean(axis=0)
        assert abs(d.mean() - want) <= 4 * d.std() / np.sqrt(len(d)), hyp
    # the first run's margin: its expected value is the mean of run a's simulated scores
    same = ia == ia[0]
    x_b = D["null"][:, same]  # b - a, both through a's margin: centred at 0 for that a too
    assert abs(x_b.mean()) <= 4 * x_b.std() / np.sqrt(x_b.size)


def test_pairs_design_in_the_study(small: pd.DataFrame, four: pd.DataFrame) -> None:
    study = run_errors(small, tests=["t", "wilcoxon", "sign"], sizes=[20], alpha=0.05,
                       n_trials=150, seed=4, design="pairs", sign_ties=0.01, delta=0.06)
    assert study.design == "pairs"
    t = study.table.set_index("test")
    assert (t["type_II"] < 0.9).all()  # delta = 0.06 is found often
    assert (t["type_I"] <= 0.15).all()
    pc = study.pair_copulas
    assert pc is not None and list(pc.columns) == ["system_a", "system_b", "family", "par",
                                                  "par2", "loglik", "aic", "tau"]
    assert (pc["aic"] <= 1e-12).all()  # never worse than independence (AIC 0)
    assert run_errors(small, tests=["t"], sizes=[20], n_trials=5).pair_copulas is None
    # 60 trials: two batches, so the processes backend splits the work
    kw = dict(tests=["t", "sign"], sizes=[8], alpha=0.05, n_trials=60, seed=9, design="pairs")
    pd.testing.assert_frame_equal(run_errors(four, **kw).table,
                                  run_errors(four, backend="processes", n_workers=2,
                                             **kw).table)
    assert "bivariate copula" in study.to_section().markdown


def test_pairs_design_refusals(small: pd.DataFrame) -> None:
    with pytest.raises(ArgumentError, match="unknown design"):
        run_errors(small, design="pair", n_trials=5)
    with pytest.raises(ArgumentError, match="needs every system"):
        run_errors(small, tests=["t", "tukey"], design="pairs", n_trials=5)
    with pytest.raises(ArgumentError, match="not a fitted TopicSimulator"):
        run_errors(irm.replicates.fit_simulator(small), tests=["t"], design="pairs",
                   n_trials=5)
    with pytest.raises(ArgumentError, match="cannot be negative"):
        run_errors(small, tests=["sign"], sign_ties=-0.01, n_trials=5)


def test_cli_design_and_sign_ties(four: pd.DataFrame, tmp_path, capsys) -> None:
    """``irmodels errors --design pairs --sign-ties 0.01`` is the Python call."""
    from irmodels.cli import main

    path = tmp_path / "four.csv"
    four[["topic", "system", "score"]].to_csv(path, index=False)
    out = tmp_path / "err"
    code = main(["errors", str(path), "--tests", "t,sign", "--sizes", "10", "--alpha", "0.05",
                 "--trials", "40", "--seed", "5", "--design", "pairs", "--sign-ties", "0.01",
                 "--out", str(out)])
    assert code == 0
    got = pd.read_csv(out / "errors.csv")
    want = run_errors(four, tests=["t", "sign"], sizes=10, alpha=0.05, n_trials=40, seed=5,
                      design="pairs", sign_ties=0.01).to_frame()
    np.testing.assert_allclose(got["type_I"], want["type_I"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(got["type_II"], want["type_II"], rtol=1e-14, atol=0)
