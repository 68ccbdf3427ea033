"""Variability of effectiveness: F and Levene tests against R (var.test, car::leveneTest)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.inference import variability as V
from irmodels.inference.pairwise import score_matrix

REF = Path(__file__).resolve().parents[1] / "reference"
ALTS = {"two-sided": "two.sided", "greater": "greater", "less": "less"}


def test_public_name() -> None:
    assert irm.variability is V


@pytest.mark.parametrize("dataset", ["small", "adhoc5"])
@pytest.mark.parametrize("alternative", list(ALTS))
def test_f_test_against_r(ref, frames, dataset, alternative) -> None:
    for pr in ref[dataset]["pairs"]:
        r = V.compare(frames[dataset], pr["a"], pr["b"], "f", transform=None, alternative=alternative)
        exp = pr[f"f_{ALTS[alternative]}"]
        assert r.statistic == pytest.approx(exp["statistic"], rel=1e-10)
        assert r.p == pytest.approx(exp["p"], rel=1e-10, abs=1e-15)
        assert (r.df1, r.df2) == (exp["df1"], exp["df2"])
        hi = np.inf if exp["ci"][1] == "Inf" else exp["ci"][1]
        assert r.ci_lower == pytest.approx(exp["ci"][0], rel=1e-10, abs=1e-15)
        assert r.ci_upper == pytest.approx(hi, rel=1e-10)
        assert r.ratio == pytest.approx(r.sd_a**2 / r.sd_b**2)


@pytest.mark.parametrize("dataset", ["small", "adhoc5"])
@pytest.mark.parametrize("center", ["mean", "median"])
def test_levene_against_car(ref, frames, dataset, center) -> None:
    for pr in ref[dataset]["pairs"]:
        r = V.compare(frames[dataset], pr["a"], pr["b"], f"levene_{center}", transform=None)
        exp = pr[f"levene_{center}"]
        assert r.statistic == pytest.approx(exp["statistic"], rel=1e-10)
        assert r.p == pytest.approx(exp["p"], rel=1e-10)
        assert (r.df1, r.df2) == (exp["df1"], exp["df2"])


@pytest.mark.parametrize("test", ["f", "levene_mean", "levene_median"])
def test_vectorised_tests_equal_compare(frames, test) -> None:
    tb = V.tie_breaking(frames["adhoc5"], test=test, transform="logit")
    for row in tb.pairs.itertuples():
        one = V.compare(frames["adhoc5"], row.a, row.b, test, transform="logit")
        assert row.p_var == pytest.approx(one.p, rel=1e-12)
        assert row.sd_a == pytest.approx(one.sd_a) and row.sd_b == pytest.approx(one.sd_b)


def test_variability_table_and_transforms(frames) -> None:
    f = frames["adhoc5"]
    X, _, systems = score_matrix(f)
    raw = V.variability(f, None)
    assert list(raw.columns) == ["mean", "sd", "sd_pop", "n"]
    assert list(raw.index) == systems and raw.index.name == "system"
    np.testing.assert_allclose(raw["sd"], X.std(axis=0, ddof=1))
    np.testing.assert_allclose(raw["sd_pop"], X.std(axis=0))
    lg = V.variability(f, "logit", epsilon=0.05)
    np.testing.assert_allclose(lg["mean"], np.log((X + 0.05) / (1.05 - X)).mean(axis=0))
    Z = V.transform_scores(X, "z")
    np.testing.assert_allclose(Z.mean(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=1, ddof=1), 1)


def test_z_transform_flat_topic_warns() -> None:
    X = np.array([[0.2, 0.2, 0.2], [0.1, 0.4, 0.7]])
    with pytest.warns(DataQualityWarning, match="1 topic"):
        Z = V.transform_scores(X, "z")
    assert (Z[0] == 0).all()


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(2, 30), st.integers(1, 5)),
                  elements=st.floats(0, 1)))
def test_semicircle_bound(X) -> None:
    """(mean - 1/2)^2 + SD^2 <= 1/4 for any scores in [0, 1] (population SD)."""
    f = irm.from_wide(pd.DataFrame(X, columns=[f"s{j}" for j in range(X.shape[1])]))
    t = V.variability(f, None)
    assert np.all((t["mean"] - 0.5) ** 2 + t["sd_pop"] ** 2 <= 0.25 + 1e-12)


def test_tie_breaking_definitions(frames) -> None:
    f = frames["adhoc5"]
    # by default the means are compared on the transformed scores (Hosseini et al.)
    tb = V.tie_breaking(f, alpha=0.05, test="levene_median")
    assert tb.means == "transformed"
    logit = f.assign(score=V.transform_scores(f["score"].to_numpy(), "logit", 0.01))
    t = irm.pairwise(logit, "t")
    np.testing.assert_allclose(tb.pairs["p_mean"], t.p, rtol=1e-12)
    np.testing.assert_array_equal(tb.pairs["tied"], t.p >= 0.05)
    raw = V.tie_breaking(f, alpha=0.05, test="levene_median", means="raw")
    np.testing.assert_array_equal(raw.pairs["tied"], irm.pairwise(f, "t").p >= 0.05)
    np.testing.assert_array_equal(tb.pairs["broken"], tb.pairs["tied"] & (tb.pairs["p_var"] < 0.05))
    assert tb.n_pairs == 28
    assert tb.share == pytest.approx(tb.n_broken / tb.n_tied)
    assert "tied pairs broken" in repr(tb) and "share" in tb.summary()


def test_error_rate_matches_loop_over_compare(frames) -> None:
    f = frames["adhoc5"]
    pairs = [("run1", "run2"), ("run3", "run7"), ("run4", "run8")]
    fast = V.error_rate(f, sizes=[10, 25], n_trials=8, seed=4, test="levene_mean", pairs=pairs)
    _, topics, _ = score_matrix(f)
    rng = np.random.default_rng(4)  # the same splits, in the same order
    for row, c in zip(fast.itertuples(), [10, 25]):
        n_sig = n_swap = 0
        for _ in range(8):
            perm = rng.permutation(len(topics))
            sub_x = f[f["topic"].isin([topics[i] for i in perm[:c]])]
            sub_y = f[f["topic"].isin([topics[i] for i in perm[c : 2 * c]])]
            for a, b in pairs:
                rx = V.compare(sub_x, a, b, "levene_mean")
                ry = V.compare(sub_y, a, b, "levene_mean")
                if rx.p < 0.05:
                    n_sig += 1
                    n_swap += np.sign(rx.sd_a - rx.sd_b) != np.sign(ry.sd_a - ry.sd_b)
        assert (row.n_significant, row.n_swapped) == (n_sig, n_swap)
    assert list(fast.columns) == ["topics", "trials", "pairs", "n_significant", "n_swapped",
                                  "error_rate"]


def test_error_rate_default_sizes_and_errors(frames) -> None:
    er = V.error_rate(frames["adhoc5"], n_trials=2, seed=0)
    assert er["topics"].tolist() == [10, 20]
    with pytest.raises(DesignError, match="sizes up to 25"):
        V.error_rate(frames["adhoc5"], sizes=[30])


def test_plot_mean_sd(frames) -> None:
    from matplotlib.figure import Figure

    fig = V.plot_mean_sd(frames["adhoc5"], label=True)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.collections[0].get_offsets()) == 8
    x, y = ax.lines[0].get_data()
    np.testing.assert_allclose((x - 0.5) ** 2 + y**2, 0.25)  # the bound is the semicircle
    fig2 = V.plot_mean_sd(frames["adhoc5"], transform="logit")
    assert not fig2.axes[0].lines


def test_errors(frames) -> None:
    w = pd.DataFrame({"a": [0.5, 2.0, 0.1], "b": [0.2, 0.3, 0.4]})
    with pytest.raises(DataFormatError, match=r"needs scores in \[0, 1\]"):
        V.variability(irm.from_wide(w))
    with pytest.raises(ArgumentError, match="unknown test"):
        V.compare(frames["small"], "s1", "s2", "bartlett")  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="two-sided"):
        V.compare(frames["small"], "s1", "s2", "levene_mean", alternative="greater")
    with pytest.raises(DataFormatError, match="unknown system"):
        V.compare(frames["small"], "s1", "zz")
