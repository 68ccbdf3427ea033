"""Webber's design workflow (irm.design) and the Figure 4.9 / 4.11 quantities of
irm.comparability."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.errors import ArgumentError, DesignError


def _wide(X: np.ndarray) -> pd.DataFrame:
    return irm.from_wide(pd.DataFrame(X, columns=[f"s{i:02d}" for i in range(X.shape[1])]))


# ----------------------------------------------------------------------- chi-square bound
# R 4.2.2: sprintf("%.16g", c(qchisq(0.05, 9), qchisq(0.025, 24), qchisq(0.1, 49)))
R_QCHISQ = {(0.05, 9): 3.325112843066815, (0.025, 24): 12.40115021744443,
            (0.1, 49): 36.81821727017284}


@pytest.mark.parametrize(("alpha", "df"), sorted(R_QCHISQ))
def test_sigma_upper_is_the_chi_square_bound_of_r(alpha, df) -> None:
    got = irm.design.sigma_upper(0.2, df + 1, level=1 - alpha)
    assert got == pytest.approx(0.2 * math.sqrt(df / R_QCHISQ[(alpha, df)]), rel=1e-10)
    assert got == pytest.approx(0.2 * math.sqrt(df / stats.chi2.ppf(alpha, df)), rel=1e-12)


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs Rscript")
def test_sigma_upper_against_live_r() -> None:
    out = subprocess.run(["Rscript", "-e", "cat(sprintf('%.15g', 0.13*sqrt(14/qchisq(0.05, 14))))"],
                         capture_output=True, text=True, check=True).stdout
    assert irm.design.sigma_upper(0.13, 15) == pytest.approx(float(out), rel=1e-12)


def test_sigma_upper_covers_sigma_at_its_level() -> None:
    rng = np.random.default_rng(11)
    n, sims = 12, 20000
    s = rng.normal(0, 0.3, size=(sims, n)).std(axis=1, ddof=1)
    bound = s * math.sqrt((n - 1) / stats.chi2.ppf(0.05, n - 1))
    cover = float(np.mean(bound >= 0.3))
    assert abs(cover - 0.95) < 4 * math.sqrt(0.05 * 0.95 / sims)  # binomial tolerance


def test_size_from_trial_numbers() -> None:
    s = irm.design.size_from_trial(0.12, n=20, delta=0.04, power=0.9)
    r = s.table.iloc[0]
    su = irm.design.sigma_upper(0.12, 20)
    assert r["sigma_upper"] == pytest.approx(su, rel=1e-12)
    assert s.n_topics == irm.power.paired_t(delta=0.04, sigma=su, power=0.9).n_topics
    assert r["n_topics_point"] == irm.power.paired_t(delta=0.04, sigma=0.12, power=0.9).n_topics
    assert s.n_topics > r["n_topics_point"]
    # the point-estimate size has less than the target power if sigma is at its upper bound
    assert r["power_point_at_upper"] < 0.9
    assert list(s.table.columns) == list(irm.design.SIZING_COLUMNS)


def test_size_from_trial_from_a_frame() -> None:
    ap = irm.datasets.load("adhoc8", "AP")
    trial = ap[ap["topic"].isin(ap["topic"].cat.categories[:12])]
    wide = irm.to_wide(trial)
    a, b = wide.columns[0], wide.columns[5]
    s = irm.design.size_from_trial(trial, delta=0.05, pair=(a, b))
    assert s.table["n_trial"].iloc[0] == 12
    assert s.table["sigma_hat"].iloc[0] == pytest.approx(
        float((wide[a] - wide[b]).std(ddof=1)), rel=1e-12)
    q = irm.design.size_from_trial(trial, delta=0.05, quantile=0.75)
    sd = irm.power.pair_sd(trial)["sd"].to_numpy()
    assert q.table["sigma_hat"].iloc[0] == pytest.approx(np.quantile(sd, 0.75), rel=1e-12)
    with pytest.raises(DesignError, match="unknown system"):
        irm.design.size_from_trial(trial, delta=0.05, pair=(a, "nope"))
    with pytest.raises(DesignError, match="needs n"):
        irm.design.size_from_trial(0.1, delta=0.05)


# ----------------------------------------------------------------------- sequential
def _naive_sequential(start, step, max_topics, n_sim, seed, delta=0.0, alpha=0.05):
    """The same procedure, one experiment and one test at a time."""
    rng = np.random.default_rng(seed)
    looks = list(range(start, max_topics + 1, step))
    if looks[-1] != max_topics:
        looks.append(max_topics)
    hits = 0
    for _ in range(n_sim):
        x = rng.normal(delta, 1.0, size=max_topics)
        for n in looks:
            y = x[:n]
            t = y.mean() / (y.std(ddof=1) / math.sqrt(n))
            if 2 * stats.t.sf(abs(t), n - 1) < alpha:  # scipy's ttest_1samp, faster
                hits += 1
                break
    return hits / n_sim


def test_sequential_false_positive_rate_matches_a_direct_monte_carlo() -> None:
    s = irm.design.sequential(start=5, step=5, max_topics=32, n_sim=20000, seed=3)
    naive = _naive_sequential(5, 5, 32, 2000, seed=99)
    se = math.sqrt(s.rate * (1 - s.rate) / 20000 + naive * (1 - naive) / 2000)
    assert abs(s.rate - naive) < 4 * se
    assert list(s.looks["n"]) == [5, 10, 15, 20, 25, 30, 32]
    assert s.rate > 0.1  # seven looks inflate 0.05 (Webber's Figure 5.8)
    assert abs(s.fixed_rate - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 20000)
    # the cumulative rates are the running sums of the first rejections
    assert np.allclose(np.cumsum(s.looks["reject_at_look"]), s.looks["cumulative_rate"])


def test_one_look_is_the_fixed_test_and_its_power() -> None:
    s = irm.design.sequential(start=25, step=5, max_topics=25, delta=0.5, sigma=1.0,
                              n_sim=20000, seed=4)
    assert s.rate == s.fixed_rate
    p = irm.power.paired_t(n=25, delta=0.5, sigma=1.0).power
    assert abs(s.rate - p) < 4 * math.sqrt(p * (1 - p) / 20000)


def test_sequential_seeded_and_resampled() -> None:
    a = irm.design.sequential(start=10, step=10, max_topics=40, n_sim=3000, seed=7)
    b = irm.design.sequential(start=10, step=10, max_topics=40, n_sim=3000, seed=7)
    c = irm.design.sequential(start=10, step=10, max_topics=40, n_sim=3000, seed=8)
    pd.testing.assert_frame_equal(a.looks, b.looks)
    assert not a.looks.equals(c.looks)
    d = np.random.default_rng(0).exponential(size=50)  # skewed real-looking differences
    r = irm.design.sequential(start=10, step=10, max_topics=40, n_sim=5000, seed=1,
                              differences=d)
    assert 0.05 < r.rate < 0.2 and r.sigma == pytest.approx(float((d - d.mean()).std()))
    with pytest.raises(ArgumentError, match="max_topics must be a whole number >= 10; got 5"):
        irm.design.sequential(start=10, step=1, max_topics=5)


# ----------------------------------------------------------------------- common sigma
def test_common_sigma_test_statistic_and_size() -> None:
    rng = np.random.default_rng(21)
    pairs = [(f"s{2 * k:02d}", f"s{2 * k + 1:02d}") for k in range(6)]
    rejections = 0
    for _ in range(60):  # independent pairs with one sigma: the test holds its level
        X = rng.normal(0.3, 0.1, size=(30, 12))
        r = irm.design.common_sigma_test(_wide(X), pairs=pairs, n_resamples=200,
                                         seed=int(rng.integers(1 << 30)))
        rejections += r.p_value <= 0.1
    assert rejections / 60 < 0.1 + 3 * math.sqrt(0.09 / 60)
    D = X[:, 0::2] - X[:, 1::2]
    assert r.statistic == pytest.approx(float(D.std(axis=0, ddof=1).std(ddof=1)), rel=1e-12)
    # pairs with sigmas 0.05 ... 0.3: rejected
    X = rng.normal(0.3, 0.1, size=(30, 12))
    X[:, 1::2] = X[:, 0::2] + rng.normal(0, 1, size=(30, 6)) * np.linspace(0.05, 0.3, 6)
    r = irm.design.common_sigma_test(_wide(X), pairs=pairs, n_resamples=500, seed=1)
    assert r.p_value < 0.01
    again = irm.design.common_sigma_test(_wide(X), pairs=pairs, n_resamples=500, seed=1)
    assert np.array_equal(r.null, again.null)


# ----------------------------------------------------------------------- baseline pairs
def test_baseline_pairs_pick_the_weakest_better_system() -> None:
    ap = irm.datasets.load("adhoc8", "AP")
    p = irm.design.baseline_pairs(ap, delta=0.02)
    wide = irm.to_wide(ap)
    means = wide.mean()
    for row in p.sample(20, random_state=0).itertuples():
        better = means[means >= means[row.baseline] + 0.02]
        assert row.better == better.idxmin()
        d = wide[row.better] - wide[row.baseline]
        assert row.sd == pytest.approx(float(d.std(ddof=1)), rel=1e-10)
        assert row.n_topics == irm.power.paired_t(delta=row.diff, sigma=row.sd,
                                                  power=0.8).n_topics
    # every system but those within 0.02 of the best has a partner
    assert len(p) == int((means + 0.02 <= means.max()).sum())


# ----------------------------------------------------------------------- comparability
@pytest.fixture(scope="module")
def robust() -> tuple[pd.DataFrame, pd.DataFrame]:
    r04 = irm.datasets.load("robust2004", "AP")
    t = r04["topic"].astype(int)
    return r04[t.between(351, 400)], r04[t.between(601, 650)]


# lost_significance_rate: the numbers the quantity gave under its old name,
# false_negative_rate (irmodels before issue 30; n_perm=50, n_halvings=30)
OLD_FALSE_NEGATIVE_RATE = {0: 0.43365695792880254, 3: 0.43333333333333335}


@pytest.mark.parametrize("seed", sorted(OLD_FALSE_NEGATIVE_RATE))
def test_renamed_quantity_equals_the_old_one(robust, seed) -> None:
    r = irm.comparability(*robust, n_resamples=50, n_halvings=30, seed=seed)
    assert r.lost_significance_rate == OLD_FALSE_NEGATIVE_RATE[seed]
    with pytest.warns(FutureWarning, match="lost_significance_rate"):
        assert r.false_negative_rate == r.lost_significance_rate


def _halves(rng, X, n):
    T0 = X.shape[0]
    perm = rng.permuted(np.broadcast_to(np.arange(T0), (n, T0)), axis=1)
    return X[perm[:, : T0 // 2]], X[perm[:, T0 // 2:]]


def test_figure_4_11_false_negatives_by_brute_force() -> None:
    rng = np.random.default_rng(5)
    T, S, n_perm, n_halv, seed = 14, 5, 20, 6, 9
    Xa = rng.beta(2, 5, (T, 1)) + np.linspace(0, 0.2, S) + rng.normal(0, 0.05, (T, S))
    Xb = rng.beta(2, 5, (T, 1)) + np.linspace(0, 0.2, S) + rng.normal(0, 0.05, (T, S))
    res = irm.comparability(_wide(Xa), _wide(Xb), n_resamples=n_perm, n_halvings=n_halv,
                            seed=seed)
    # replay the random draws: the re-partitions, then the halvings of A and of B
    g = np.random.default_rng(seed)
    g.permuted(np.broadcast_to(np.arange(2 * T), (n_perm, 2 * T)), axis=1)
    misses = total = 0
    shares = []
    for X in (Xa, Xb):
        h1, h2 = _halves(g, X, n_halv)
        for h in range(n_halv):
            shares.append(np.mean([stats.ttest_ind(h1[h, :, s], h2[h, :, s],
                                                   equal_var=False).pvalue <= 0.05
                                   for s in range(S)]))
        for i in range(S):
            for j in range(S):
                if i == j:
                    continue
                full = stats.ttest_rel(X[:, i], X[:, j])
                if full.pvalue > 0.05:
                    continue
                for h in range(n_halv):
                    w = stats.ttest_ind(h1[h, :, i], h2[h, :, j], equal_var=False)
                    hit = w.pvalue <= 0.05 and np.sign(w.statistic) == np.sign(full.statistic)
                    misses += not hit
                    total += 1
    assert res.n_true_pairs * n_halv == total and total > 0
    assert res.pair_false_negative_rate == pytest.approx(misses / total, abs=1e-12)
    assert np.allclose(res.false_positive_shares, shares)
    dist = res.false_positive_distribution()
    assert dist["mean"] == pytest.approx(res.false_positive_rate, rel=1e-12)
    assert dist["median"] == pytest.approx(np.median(shares))
    assert dist["q97.5"] == pytest.approx(np.quantile(shares, 0.975))


def test_false_positive_distribution_on_robust(robust) -> None:
    r = irm.comparability(*robust, n_resamples=20, n_halvings=40, seed=2)
    d = r.false_positive_distribution()
    # false positives come in clusters: a few halvings make many systems differ
    assert d["median"] <= d["mean"] <= d["q97.5"]
    assert r.false_positive_shares.shape == (80,)
    assert 0 < r.pair_false_negative_rate < 1
    assert "false negative rate (pairs)" in r.statistics().index
