"""Cross-collection comparability (Webber 2010, section 4.6): kappa by hand on the Robust 2004
topic subsets, symmetry and invariances, the per-system Welch tests against scipy, the
randomization test under the null and under a shift, error rates, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.inference.comparability import SYSTEM_COLUMNS, kappa


@pytest.fixture(scope="module")
def subsets():
    """Robust 2004 topics by origin: TREC-7 (351-400), TREC-8 (401-450), Robust 2003's new
    topics (601-650) and Robust 2004's (651-700; 672 has no relevant document)."""
    r04 = irm.datasets.load("robust2004", "AP")
    t = r04["topic"].astype(int)
    return {"TREC-7": r04[t.between(351, 400)], "TREC-8": r04[t.between(401, 450)],
            "Robust03": r04[t.between(601, 650)], "Robust04": r04[t.between(651, 700)]}


def _means(frame):
    return frame.groupby("system", observed=True)["score"].mean()


def test_table_4_9_kappa_by_hand(subsets):
    """kappa of unstandardized AP between the four topic subsets, recomputed independently with
    pandas (the thesis's Table 4.9 layout; its published values are not reproduced here)."""
    for x, y in itertools.combinations(subsets, 2):
        res = irm.comparability(subsets[x], subsets[y], n_resamples=10, n_halvings=2)
        ma, mb = _means(subsets[x]), _means(subsets[y])
        rmse = np.sqrt(((ma - mb) ** 2).mean())
        expected = 2 * rmse / (ma.std(ddof=1) + mb.std(ddof=1))
        assert res.rmse == pytest.approx(rmse, rel=1e-12)
        assert res.kappa == pytest.approx(expected, rel=1e-12)
        assert res.sd_a == pytest.approx(ma.std(ddof=1), rel=1e-12)
        assert res.n_systems == 110
    assert irm.comparability(subsets["TREC-7"], subsets["Robust04"], n_resamples=1).n_topics_b == 49


def test_symmetry_and_invariances(subsets):
    a, b = subsets["TREC-7"], subsets["TREC-8"]
    ab = irm.comparability(a, b, n_resamples=50, n_halvings=5, seed=2)
    ba = irm.comparability(b, a, n_resamples=50, n_halvings=5, seed=2)
    assert ab.kappa == pytest.approx(ba.kappa, rel=1e-12)
    assert (ab.n_a_higher, ab.n_b_higher) == (ba.n_b_higher, ba.n_a_higher)
    scaled = irm.comparability(a.assign(score=a["score"] * 3), b.assign(score=b["score"] * 3),
                               n_resamples=50, n_halvings=5, seed=2)
    assert scaled.kappa == pytest.approx(ab.kappa, rel=1e-12)
    assert scaled.p_value == ab.p_value
    same = irm.comparability(a, a, n_resamples=20, n_halvings=5)
    assert same.kappa == 0 and same.p_value == 1.0 and same.rmse == 0
    assert kappa(_means(a), _means(b)) == pytest.approx(ab.kappa)


def test_per_system_welch_against_scipy(subsets):
    a, b = subsets["TREC-7"], subsets["Robust03"]
    res = irm.comparability(a, b, n_resamples=10, n_halvings=2)
    assert tuple(res.systems.columns) == SYSTEM_COLUMNS
    row = res.systems.set_index("system").loc["sys7"]
    xa = a[a["system"] == "sys7"]["score"].to_numpy()
    xb = b[b["system"] == "sys7"]["score"].to_numpy()
    ref = stats.ttest_ind(xa, xb, equal_var=False, alternative="greater")
    assert row["t"] == pytest.approx(ref.statistic, rel=1e-10)
    assert row["p_a_higher"] == pytest.approx(ref.pvalue, rel=1e-10)
    assert row["p_b_higher"] == pytest.approx(1 - ref.pvalue, rel=1e-10)
    assert res.n_b_higher == int((res.systems["p_b_higher"] <= 0.05).sum())
    assert res.n_b_higher > 50  # the Robust 2003 new topics are easier for most systems


def _null_pair(rng, T=40, R=15):
    effects = rng.normal(0.3, 0.08, size=R)
    mk = lambda: pd.DataFrame(  # noqa: E731
        np.clip(effects + rng.normal(0, 0.15, size=(T, R)), 0, 1),
        index=[f"t{i}" for i in range(T)], columns=[f"s{j}" for j in range(R)])
    return irm.from_wide(mk()), irm.from_wide(mk())


def test_randomization_test_and_error_rates(rng):
    a, b = _null_pair(rng)
    null = irm.comparability(a, b, n_resamples=400, n_halvings=200, seed=1)
    assert 0.02 < null.p_value  # same population of topics: no evidence against comparability
    assert 0.02 < null.false_positive_rate < 0.09  # two-sided tests at 0.05 between halves
    shifted = b.assign(score=b["score"] + 0.15)
    alt = irm.comparability(a, shifted, n_resamples=400, n_halvings=50, seed=1)
    assert alt.p_value < 0.01 and alt.kappa > null.kappa
    assert alt.n_b_higher > 10 and 0 <= alt.lost_significance_rate < 0.5
    # the p-value is the share of the stored null kappas at least the observed one
    assert alt.p_value == np.mean(alt.null_kappa >= alt.kappa - 1e-12)


def test_display_and_errors(subsets):
    res = irm.comparability(subsets["TREC-7"], subsets["TREC-8"], n_resamples=10, n_halvings=2)
    assert repr(res).startswith("<Comparability systems=110")
    assert "kappa" in res.summary() and "\\toprule" in res.to_latex()
    assert len(res.to_frame()) == 110
    other = subsets["TREC-8"].assign(system=subsets["TREC-8"]["system"].astype(str) + "x")
    with pytest.raises(irm.DesignError, match="share 0 system"):
        irm.comparability(subsets["TREC-7"], other)
    with pytest.raises(irm.DesignError, match="every \\(topic, system\\) cell"):
        irm.comparability(subsets["TREC-7"].iloc[1:], subsets["TREC-8"])
    with pytest.raises(irm.ArgumentError, match="n_resamples"):
        irm.comparability(subsets["TREC-7"], subsets["TREC-8"], n_resamples=0)


def test_result_attribute_n_perm_is_a_deprecated_name(subsets):
    """The result's resample count is ``n_resamples``; ``n_perm`` warns for one release."""
    res = irm.comparability(subsets["TREC-7"], subsets["Robust04"], n_resamples=3, n_halvings=2)
    assert res.n_resamples == 3
    with pytest.warns(FutureWarning, match="n_perm is deprecated; use n_resamples"):
        assert res.n_perm == 3
