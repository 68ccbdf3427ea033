"""Pairwise tests against R (tests/reference/pairwise.R -> pairwise.json) and slow loops."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.inference.pairwise import COLUMNS, p_adjust, pairwise, score_matrix

REF = Path(__file__).resolve().parents[1] / "reference"
ALTS = {"two-sided": "two.sided", "greater": "greater", "less": "less"}


def _inf(v: object) -> float:
    return {"Inf": np.inf, "-Inf": -np.inf}.get(v, v)  # type: ignore[arg-type]


@pytest.mark.parametrize("dataset", ["small", "adhoc5"])
@pytest.mark.parametrize("alternative", list(ALTS))
@pytest.mark.parametrize("test", ["t", "t2", "wilcoxon", "sign"])
def test_against_r(ref, frames, dataset, alternative, test) -> None:
    r = ref[dataset]
    res = pairwise(frames[dataset], test, alternative=alternative)
    assert list(res.columns) == list(COLUMNS)
    assert list(zip(res.a, res.b)) == [(p["a"], p["b"]) for p in r["pairs"]]
    key = f"{test}_{ALTS[alternative]}"
    rows = [i for i, p in enumerate(r["pairs"]) if key in p]
    assert len(rows) == len(r["pairs"])  # no pair is identical in these data
    exp_p = np.array([r["pairs"][i][key]["p"] for i in rows])
    exp_s = np.array([r["pairs"][i][key]["statistic"] for i in rows])
    np.testing.assert_allclose(res.p.to_numpy()[rows], exp_p, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(res.statistic.to_numpy()[rows], exp_s, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(res["diff"], [p["diff"] for p in r["pairs"]], rtol=1e-12)
    if test in ("t", "t2"):
        lo = [_inf(p[key]["ci"][0]) for p in r["pairs"]]
        hi = [_inf(p[key]["ci"][1]) for p in r["pairs"]]
        # atol: scipy 1.14-1.16 give t quantiles to ~4e-12 absolute (R to ~1e-15)
        np.testing.assert_allclose(res.ci_lower, lo, rtol=1e-10, atol=1e-11)
        np.testing.assert_allclose(res.ci_upper, hi, rtol=1e-10, atol=1e-11)
    if test in ("wilcoxon", "sign"):
        assert res.n.tolist() == [p[key]["n"] for p in r["pairs"]]
        assert res.ci_lower.isna().all()


def test_fixture_covers_exact_and_approximate_wilcoxon(ref) -> None:
    exact = [p["wilcoxon_two.sided"]["exact"] for p in ref["small"]["pairs"]]
    assert any(exact) and not all(exact)  # both code paths are checked against R
    # the approximate small-data cases have zeros (n < 12 topics) and ties (V not an integer)
    approx = [p for p in ref["small"]["pairs"] if not p["wilcoxon_two.sided"]["exact"]]
    assert any(p["wilcoxon_two.sided"]["n"] < 12 for p in approx)
    assert any(p["wilcoxon_two.sided"]["statistic"] % 1 for p in approx)


@pytest.mark.parametrize("dataset", ["small", "adhoc5"])
@pytest.mark.parametrize("method", ["bonferroni", "holm", "bh"])
def test_adjustment_against_r(ref, frames, dataset, method) -> None:
    res = pairwise(frames[dataset], "t", adjust=method)
    np.testing.assert_allclose(res.p_adj, ref[dataset]["p_adjust"][method], rtol=1e-10)
    np.testing.assert_array_equal(res.reject, res.p_adj.to_numpy() < 0.05)
    np.testing.assert_allclose(
        p_adjust(ref["p_vec"], method), ref["p_vec_adjust"][method], rtol=1e-12
    )


@pytest.mark.parametrize("dataset", ["small", "adhoc5"])
def test_effect_sizes(ref, frames, dataset) -> None:
    r = ref[dataset]
    res = pairwise(frames[dataset], "t")
    diff = np.array([p["diff"] for p in r["pairs"]])
    sd = np.array([p["sd_diff"] for p in r["pairs"]])
    np.testing.assert_allclose(res.effect_sd, diff / sd, rtol=1e-10)
    np.testing.assert_allclose(res.effect_mse, diff / np.sqrt(r["ms_error"]), rtol=1e-10)


def test_t_interval_and_p_are_consistent(frames) -> None:
    res = pairwise(frames["adhoc5"], "t", alpha=0.1)
    inside = (res.ci_lower < 0) & (res.ci_upper > 0)
    np.testing.assert_array_equal(inside, res.p > 0.1)


# ---------------------------------------------------------------------------- resampling


def _slow_randomization(d: np.ndarray) -> dict[str, float]:
    """Enumerate every sign vector with a plain loop (independent of the matrix version)."""
    obs = d.mean()
    counts = {"two-sided": 0, "greater": 0, "less": 0}
    total = 0
    for signs in itertools.product([1.0, -1.0], repeat=len(d)):
        m = float(np.dot(signs, d)) / len(d)
        total += 1
        counts["two-sided"] += abs(m) >= abs(obs) - 1e-12
        counts["greater"] += m >= obs - 1e-12
        counts["less"] += m <= obs + 1e-12
    return {k: v / total for k, v in counts.items()}


def test_randomization_exact_enumeration(frames) -> None:
    f = frames["small"]  # 12 topics: 4,096 sign vectors <= 10,000, so exact
    X, _, systems = score_matrix(f)
    for alternative in ALTS:
        res = pairwise(f, "randomization", alternative=alternative, pairs=[("s1", "s3"), ("s2", "s5")])
        for k, (a, b) in enumerate([("s1", "s3"), ("s2", "s5")]):
            d = X[:, systems.index(a)] - X[:, systems.index(b)]
            assert res.p[k] == pytest.approx(_slow_randomization(d)[alternative], abs=1e-15)
    # known value: s1 vs s3, two-sided
    assert res.attrs["n_resamples"] == 10_000


def test_randomization_monte_carlo_close_to_exact(frames) -> None:
    f = frames["small"]
    exact = pairwise(f, "randomization")
    mc = pairwise(f, "randomization", n_resamples=4000, seed=3)  # 4000 < 4096: Monte Carlo
    # binomial SE of a p-value estimate with B = 4000 is at most 0.008
    np.testing.assert_allclose(mc.p, exact.p, atol=0.03)
    assert (mc.p > 0).all()  # (count + 1) / (B + 1) is never 0
    again = pairwise(f, "randomization", n_resamples=4000, seed=3)
    pd.testing.assert_frame_equal(mc.table, again.table)


def test_randomization_close_to_t_on_trec(frames) -> None:
    # with 50 topics the permutation and t p-values agree closely (Smucker et al. 2007)
    t = pairwise(frames["adhoc5"], "t")
    r = pairwise(frames["adhoc5"], "randomization", n_resamples=20_000, seed=1)
    np.testing.assert_allclose(r.p, t.p, atol=0.05)


def test_bootstrap_matches_loop_with_same_draws(frames) -> None:
    f = frames["adhoc5"]
    X, _, systems = score_matrix(f)
    B, T, seed = 2000, X.shape[0], 11
    res = pairwise(f, "bootstrap", n_resamples=B, seed=seed, pairs=[("run1", "run3"), ("run2", "run7")])
    idx = np.random.default_rng(seed).integers(0, T, size=(B, T))  # the same draws
    for k, (a, b) in enumerate([("run1", "run3"), ("run2", "run7")]):
        d = X[:, systems.index(a)] - X[:, systems.index(b)]
        obs = d.mean()
        means = np.array([d[idx[i]].mean() for i in range(B)])
        p = (np.sum(np.abs(means - obs) >= abs(obs) - 1e-12) + 1) / (B + 1)
        assert res.p[k] == pytest.approx(p, abs=1e-15)
        q_lo, q_hi = np.quantile(means, [0.025, 0.975])
        assert res.ci_lower[k] == pytest.approx(2 * obs - q_hi, rel=1e-12)
        assert res.ci_upper[k] == pytest.approx(2 * obs - q_lo, rel=1e-12)
        assert res.statistic[k] == pytest.approx(obs)


def test_bootstrap_one_sided(frames) -> None:
    f = frames["adhoc5"]
    two = pairwise(f, "bootstrap", n_resamples=3000, seed=5)
    g = pairwise(f, "bootstrap", alternative="greater", n_resamples=3000, seed=5)
    assert np.isinf(g.ci_upper).all()
    # for a positive difference the one-sided p is about half the two-sided one
    pos = (two["diff"] > 0) & (two.p > 0.02)
    np.testing.assert_allclose(g.p[pos], two.p[pos] / 2, atol=0.03)


def _slow_tukey_range_distribution(X: np.ndarray, B: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(B)
    for i in range(B):
        perm = np.array([rng.permutation(row) for row in X])
        m = perm.mean(axis=0)
        out[i] = m.max() - m.min()
    return out


def test_randomised_tukey(frames) -> None:
    f = frames["small"]
    X, _, _ = score_matrix(f)
    res = pairwise(f, "t", adjust="tukey", n_resamples=3000, seed=2)
    ranges = _slow_tukey_range_distribution(X, 3000, np.random.default_rng(99))
    slow = np.array([(np.sum(ranges >= abs(d)) + 1) / 3001 for d in res["diff"]])
    np.testing.assert_allclose(res.p_adj, slow, atol=0.03)
    # larger |diff| never has a larger adjusted p; Tukey is at least as strict as the raw t
    order = np.argsort(np.abs(res["diff"].to_numpy()))
    assert np.all(np.diff(res.p_adj.to_numpy()[order]) <= 1e-12)
    assert (res.p_adj > 0).all() and (res.p_adj <= 1).all()


# ---------------------------------------------------------------------------- properties

matrices = hnp.arrays(
    np.float64,
    st.tuples(st.integers(5, 15), st.integers(2, 4)),
    elements=st.integers(0, 20).map(lambda v: v / 20),
)


@settings(max_examples=25, deadline=None)
@given(matrices)
def test_swapping_a_and_b(X) -> None:
    f = irm.from_wide(pd.DataFrame(X, columns=[f"s{j}" for j in range(X.shape[1])]))
    for test in ("t", "t2", "wilcoxon", "sign", "randomization"):
        fwd = pairwise(f, test, pairs=[("s0", "s1")], n_resamples=500, seed=1)
        rev = pairwise(f, test, pairs=[("s1", "s0")], n_resamples=500, seed=1)
        assert rev["diff"][0] == pytest.approx(-fwd["diff"][0])
        assert rev.p[0] == pytest.approx(fwd.p[0], abs=1e-12, nan_ok=True)
        if np.isnan(fwd.p[0]):  # t, t2 on all-zero differences: NaN, as R's t.test
            continue
        assert 0 <= fwd.p[0] <= 1
        g = pairwise(f, test, pairs=[("s0", "s1")], alternative="greater", n_resamples=500, seed=1)
        l_ = pairwise(f, test, pairs=[("s0", "s1")], alternative="less", n_resamples=500, seed=1)
        # the two one-sided p-values cover the whole space; the two-sided is at most twice the
        # smaller (not for Monte Carlo p-values, whose +1 terms differ)
        assert g.p[0] + l_.p[0] >= 1 - 1e-9
        if test != "randomization":
            assert fwd.p[0] <= min(1.0, 2 * min(g.p[0], l_.p[0])) + 1e-9


@settings(max_examples=30, deadline=None)
@given(matrices, st.floats(-0.3, 0.3))
def test_topic_shift_changes_nothing_in_paired_tests(X, shift) -> None:
    cols = [f"s{j}" for j in range(X.shape[1])]
    Y = X.copy()
    Y[0] += shift  # a harder or easier topic for every system
    f, g = irm.from_wide(pd.DataFrame(X, columns=cols)), irm.from_wide(pd.DataFrame(Y, columns=cols))
    a, b = pairwise(f, "t"), pairwise(g, "t")
    np.testing.assert_allclose(a.p, b.p, atol=1e-8)
    np.testing.assert_allclose(a.effect_mse, b.effect_mse, rtol=1e-7, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(0, 1)))
def test_p_adjust_properties(p) -> None:
    bonf, holm, bh = (p_adjust(p, m) for m in ("bonferroni", "holm", "bh"))
    assert np.all(bh <= holm + 1e-12) and np.all(holm <= bonf + 1e-12)
    assert np.all(bh >= p - 1e-12) and np.all(bonf <= 1)
    order = np.argsort(p, kind="stable")
    for adj in (holm, bh):
        assert np.all(np.diff(adj[order]) >= -1e-12)


# ---------------------------------------------------------------------------- errors


def test_shards_are_refused(frames) -> None:
    f = frames["small"]
    sharded = pd.concat([f.assign(shard="1"), f.assign(shard="2")], ignore_index=True)
    sharded = irm.frame(sharded, shard="shard")
    with pytest.raises(DesignError, match="Average them first"):
        pairwise(sharded)


def test_missing_cell_is_refused(frames) -> None:
    f = frames["small"].iloc[1:]
    with pytest.raises(DesignError, match="1 of 60 .* cells are missing"):
        pairwise(f)


def test_bad_arguments(frames) -> None:
    f = frames["small"]
    with pytest.raises(ArgumentError, match="unknown test 'anova'"):
        pairwise(f, "anova")  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="unknown system"):
        pairwise(f, pairs=[("s1", "nope")])
    with pytest.raises(DataFormatError, match="itself"):
        pairwise(f, pairs=[("s1", "s1")])
    with pytest.raises(ArgumentError, match="alpha"):
        pairwise(f, alpha=5)
    with pytest.raises(ArgumentError, match="adjustment"):
        pairwise(f, adjust="fdr")  # type: ignore[arg-type]


def test_identical_systems_give_p_one() -> None:
    w = pd.DataFrame({"a": [0.1, 0.5, 0.3], "b": [0.1, 0.5, 0.3]})
    for test in ("t2", "wilcoxon", "sign", "randomization", "bootstrap"):
        r = pairwise(irm.from_wide(w), test, n_resamples=200, seed=0)
        assert r.p[0] == pytest.approx(1.0) and r["diff"][0] == 0
    # R: t.test(a, a, paired = TRUE) gives t = NaN, p = NaN (all differences 0)
    with pytest.warns(DataQualityWarning, match="essentially constant"):
        r = pairwise(irm.from_wide(w), "t")
    assert np.isnan(r.p[0]) and np.isnan(r["statistic"][0]) and r["diff"][0] == 0


def test_resolution_warning_for_adjusted_resampling(frames) -> None:
    f = frames["adhoc5"]  # 28 pairs: Holm needs p < 0.05 / 28, beyond 1 / 200
    with pytest.warns(DataQualityWarning, match="n_resamples >= 560"):
        r = pairwise(f, "randomization", adjust="holm", n_resamples=200, seed=1)
    assert not r["reject"].any()  # (count + 1) / 201 * 28 >= 0.139 for every pair
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DataQualityWarning)
        pairwise(f, "randomization", adjust="holm", n_resamples=600, seed=1)
        pairwise(f, "randomization", adjust="bh", n_resamples=200, seed=1)


def test_process_backend_gives_the_same_result(frames) -> None:
    f = frames["small"]
    serial = pairwise(f, "bootstrap", n_resamples=500, seed=4)
    spread = pairwise(f, "bootstrap", n_resamples=500, seed=4, backend="processes")
    pd.testing.assert_frame_equal(serial.table, spread.table)


@pytest.mark.r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed (fixture still tested)")
def test_fixture_is_what_r_gives_now(tmp_path) -> None:
    out = tmp_path / "pairwise.json"
    subprocess.run(["Rscript", "pairwise.R", str(out)], cwd=REF, check=True, capture_output=True)
    fresh, stored = json.loads(out.read_text()), json.loads((REF / "pairwise.json").read_text())
    assert fresh["small"]["p_t"] == pytest.approx(stored["small"]["p_t"], rel=1e-12)
    assert fresh["adhoc5"]["p_adjust"] == stored["adhoc5"]["p_adjust"]
    assert fresh["kendall"] == stored["kendall"]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(6, 60), st.just(2)),
                  elements=st.integers(0, 10).map(lambda v: v / 10)))
def test_wilcoxon_matches_scipy_on_tied_data(X) -> None:
    """Ties and zeros: the normal approximation with both corrections, as scipy's 'approx'."""
    from scipy import stats

    d = X[:, 0] - X[:, 1]
    if not np.any(d != 0):
        return
    f = irm.from_wide(pd.DataFrame(X, columns=["a", "b"]))
    got = pairwise(f, "wilcoxon")
    n = int(np.sum(d != 0))
    ties = len(np.unique(np.abs(d[d != 0]))) < n
    method = "exact" if (n < 50 and not ties and n == len(d)) else "approx"
    ref = stats.wilcoxon(X[:, 0], X[:, 1], zero_method="wilcox", correction=True, method=method)
    assert got.p[0] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    assert got.n[0] == n


@pytest.mark.parametrize("test, alternative", [("t", "greater"), ("t", "less"),
                                               ("wilcoxon", "two-sided"), ("sign", "two-sided")])
def test_randomised_tukey_only_adjusts_two_sided_tests_of_means(test, alternative) -> None:
    # it used to reject "a > b" for a far worse a (its p-values are two-sided, on the means)
    w = pd.DataFrame({"a": [0.1, 0.2, 0.15, 0.1], "b": [0.5, 0.6, 0.55, 0.7],
                      "c": [0.3, 0.2, 0.4, 0.3]})
    with pytest.raises(DataFormatError, match=r"adjust='tukey' \(the randomised Tukey HSD\) is a "
                                              r"two-sided test of mean differences"):
        pairwise(irm.from_wide(w), test, alternative=alternative, adjust="tukey",
                 n_resamples=100, seed=0)


def test_resampling_follows_the_topic_order_of_irm_frame():
    """A plain frame with text topic ids ("1".."12") is put in irm.frame's natural order, so a
    seed draws the same signs and bootstrap rows for each topic as through irm.frame or
    irm.compare (lexicographic order gave p-values 0.18 apart on web2013)."""
    rng = np.random.default_rng(4)
    x = rng.normal(0.3, 0.1, (12, 4)) + rng.normal(0, 0.05, (12, 1)) + [0, 0.01, 0.03, 0.05]
    plain = pd.DataFrame({"topic": np.repeat([str(t) for t in range(1, 13)], 4),
                          "system": np.tile(["a", "b", "c", "d"], 12), "score": x.ravel()})
    framed = irm.frame(plain)
    for test in ("randomization", "bootstrap"):
        got = irm.pairwise(plain, test, seed=3, n_resamples=500).table
        ref = irm.pairwise(framed, test, seed=3, n_resamples=500).table
        np.testing.assert_array_equal(got["p"].to_numpy(), ref["p"].to_numpy())
    via_compare = irm.compare(plain, test="randomization", adjust="holm", seed=3,
                              n_resamples=500).pairs
    got = irm.pairwise(plain, "randomization", adjust="holm", seed=3, n_resamples=500).table
    np.testing.assert_array_equal(via_compare["p_adj"].to_numpy(), got["p_adj"].to_numpy())
