"""variability: means compared on the transformed scores in tie_breaking, robust spreads (IQR,
scaled MAD) in variability() and error_rate()."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import irmodels as irm
from irmodels.inference import variability as V
from irmodels.inference.pairwise import score_matrix


@pytest.fixture(scope="module")
def adhoc5():
    data = irm.datasets.load("adhoc5", "AP")
    keep = sorted(data["system"].unique(), key=lambda s: int(s[3:]))[:10]
    sub = data[data["system"].isin(keep)].copy()
    sub["system"] = sub["system"].cat.remove_unused_categories()
    return sub.reset_index(drop=True)


def test_tie_breaking_means_on_transformed_scores(adhoc5):
    X, _, systems = score_matrix(adhoc5)
    Y = V.transform_scores(X, "logit", 0.01)
    tb = V.tie_breaking(adhoc5, test="levene_median", means="transformed")
    assert tb.means == "transformed" and "means on transformed scores" in tb.summary()
    for row in tb.pairs.itertuples():
        ia, ib = systems.index(row.a), systems.index(row.b)
        ref = stats.ttest_rel(Y[:, ia], Y[:, ib])
        assert row.p_mean == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.diff == pytest.approx(np.mean(Y[:, ia] - Y[:, ib]), rel=1e-12)
    np.testing.assert_array_equal(tb.pairs["tied"], tb.pairs["p_mean"] >= 0.05)
    # the variability test is the same either way; without a transform both scales coincide
    raw = V.tie_breaking(adhoc5, test="levene_median")
    np.testing.assert_allclose(raw.pairs["p_var"], tb.pairs["p_var"])
    a = V.tie_breaking(adhoc5, transform=None, means="raw")
    b = V.tie_breaking(adhoc5, transform=None, means="transformed")
    np.testing.assert_allclose(a.pairs["p_mean"], b.pairs["p_mean"], rtol=1e-12)
    with pytest.raises(irm.ArgumentError, match="unknown means"):
        V.tie_breaking(adhoc5, means="logit")


def test_robust_spreads_against_numpy_and_r_conventions(adhoc5):
    X, _, _ = score_matrix(adhoc5)
    res = V.variability(adhoc5, None, robust=True)
    assert list(res.table.columns) == ["mean", "sd", "sd_pop", "n", "iqr", "mad"]
    q75, q25 = np.percentile(X, [75, 25], axis=0)  # numpy's linear = R's type 7
    np.testing.assert_allclose(res.table["iqr"], q75 - q25)
    np.testing.assert_allclose(res.table["mad"],
                               stats.median_abs_deviation(X, axis=0, scale="normal"), rtol=1e-4)
    assert list(V.variability(adhoc5, None).table.columns) == ["mean", "sd", "sd_pop", "n"]


def test_error_rate_with_robust_spread(adhoc5):
    sd = V.error_rate(adhoc5, sizes=[10, 20], n_trials=10, seed=3)
    iqr = V.error_rate(adhoc5, sizes=[10, 20], n_trials=10, seed=3, spread="iqr")
    mad = V.error_rate(adhoc5, sizes=[10, 20], n_trials=10, seed=3, spread="mad")
    # same splits and tests: significance counts agree, only the compared sign differs
    assert list(sd["n_significant"]) == list(iqr["n_significant"]) == list(mad["n_significant"])
    assert (iqr["error_rate"].between(0, 1)).all() and (mad["error_rate"].between(0, 1)).all()
    with pytest.raises(irm.ArgumentError, match="unknown spread"):
        V.error_rate(adhoc5, sizes=[10], spread="range")
