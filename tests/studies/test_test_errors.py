"""Error rates of tests on simulated collections (irm.studies.test_errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.errors import ArgumentError, DesignError
from irmodels.studies.error_rates import ERROR_COLUMNS, _full_stats
from irmodels.studies.error_rates import test_errors as run_errors


@pytest.fixture(scope="module")
def ap() -> pd.DataFrame:
    return irm.datasets.load("adhoc3", "AP")


@pytest.fixture(scope="module")
def small(ap: pd.DataFrame) -> pd.DataFrame:
    return ap[ap["system"].isin([f"sys{i}" for i in range(2, 10)])]


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
