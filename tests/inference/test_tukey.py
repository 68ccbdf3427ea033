"""Tukey HSD on the model's error term, against R's TukeyHSD(aov(score ~ topic + system)).

Fixture: tests/reference/tukey.R -> tukey.json (small and medium seeded designs, and the TREC-8
ad hoc AP matrix, 50 topics x 129 systems, all 8,256 pairs).
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.inference.tukey import compact_letters, tukey_hsd

TOL = 1e-9


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "tukey.json").read_text())


def two_way_error_term(wide: np.ndarray) -> tuple[np.ndarray, float, int]:
    """System means, MS_error and df_error of score ~ topic + system (one score per cell)."""
    t, r = wide.shape
    resid = wide - wide.mean(axis=1, keepdims=True) - wide.mean(axis=0, keepdims=True) + wide.mean()
    df = (t - 1) * (r - 1)
    return wide.mean(axis=0), float((resid**2).sum() / df), df


def case_wide(ref, name, shared_data) -> tuple[np.ndarray, list[str]]:
    case = ref[name]
    if name == "adhoc8":
        w = pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv")
        return w.to_numpy(dtype=float), [str(c) for c in w.columns]
    data = np.asarray(case["data"], dtype=float).reshape(case["systems"], case["topics"]).T
    return data, case["levels"]


@pytest.mark.parametrize("name", ["small", "medium", "medium_99", "adhoc8"])
def test_tukey_against_r(ref, shared_data, name):
    case = ref[name]
    wide, levels = case_wide(ref, name, shared_data)
    means, mse, df = two_way_error_term(wide)
    assert df == case["df_error"]
    assert mse == pytest.approx(case["ms_error"], rel=1e-12)
    hsd = tukey_hsd(pd.Series(means, index=levels), df_error=df, ms_error=mse,
                    n=wide.shape[0], alpha=case["alpha"])
    pairs = hsd.pairs
    assert list(pairs.columns) == ["a", "b", "diff", "q", "p_adj", "lower", "upper", "reject"]
    assert [f"{b}-{a}" for a, b in zip(pairs["a"], pairs["b"])] == case["pair"]
    # one sign convention in the package: diff = first - second = a - b, the negation of R's
    # "b-a" row (and of its interval)
    np.testing.assert_allclose(pairs["diff"], -np.asarray(case["diff"]), rtol=0, atol=1e-13)
    np.testing.assert_allclose(pairs["lower"], -np.asarray(case["upr"]), rtol=0, atol=TOL)
    np.testing.assert_allclose(pairs["upper"], -np.asarray(case["lwr"]), rtol=0, atol=TOL)
    np.testing.assert_allclose(pairs["p_adj"], case["p_adj"], rtol=0, atol=TOL)
    assert hsd.critical_value == pytest.approx(case["critical_value"], abs=TOL)
    assert hsd.n_significant == case["n_significant"]
    assert hsd.n_pairs == len(case["pair"])
    assert hsd.top_group == case["top_group"]
    np.testing.assert_allclose(hsd.means, case["means"], rtol=0, atol=1e-14)


def test_adhoc8_headline_numbers(ref, shared_data):
    # R: 3,423 of 8,256 pairs significant at 0.05; top group of 7 led by run95; Q = 6.2426
    wide, levels = case_wide(ref, "adhoc8", shared_data)
    means, mse, df = two_way_error_term(wide)
    hsd = tukey_hsd(pd.Series(means, index=levels), df_error=df, ms_error=mse, n=50)
    assert (hsd.n_pairs, hsd.n_significant) == (8256, 3423)
    assert hsd.top_group == ["run95", "run83", "run51", "run94", "run23", "run22", "run20"]
    assert round(hsd.critical_value, 4) == 6.2426
    assert hsd.best == "run95"
    letters = hsd.letters
    assert letters["run95"].startswith("a")
    assert all("a" in letters[s] for s in hsd.top_group)


def test_through_anova(ref, shared_data):
    if importlib.util.find_spec("irmodels.models.anova") is None:
        pytest.skip("irmodels.models.anova not available yet")
    case = ref["adhoc8"]
    data = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv"), measure="AP")
    hsd = irm.anova("MD1", data).tukey("system", alpha=0.05)
    np.testing.assert_allclose(hsd.pairs["p_adj"], case["p_adj"], rtol=0, atol=TOL)
    np.testing.assert_allclose(hsd.pairs["lower"], -np.asarray(case["upr"]), rtol=0, atol=TOL)
    assert hsd.n_significant == case["n_significant"]
    assert hsd.top_group == case["top_group"]


def test_se_diff_and_unequal_n_routes():
    means = pd.Series([0.31, 0.27, 0.2, 0.18], index=list("wxyz"))
    base = tukey_hsd(means, df_error=60, ms_error=0.01, n=21)
    via_se = tukey_hsd(means, df_error=60, se_diff=np.sqrt(2 * 0.01 / 21))
    pd.testing.assert_frame_equal(base.pairs, via_se.pairs, rtol=1e-13, atol=0)
    mat = np.full((4, 4), np.sqrt(2 * 0.01 / 21))
    pd.testing.assert_frame_equal(
        base.pairs, tukey_hsd(means, df_error=60, se_diff=mat).pairs, rtol=1e-13, atol=0
    )
    # Tukey-Kramer: SE of a difference = sqrt(MSE (1/n_a + 1/n_b))
    kramer = tukey_hsd(means, df_error=60, ms_error=0.01, n=[10, 20, 20, 40])
    row = kramer.pairs.iloc[0]  # x - w
    assert row["q"] == pytest.approx(np.sqrt(2) * 0.04 / np.sqrt(0.01 * (1 / 10 + 1 / 20)), rel=1e-13)


def test_intervals_three_kinds():
    means = pd.Series([0.4, 0.3, 0.1], index=["a", "b", "c"])
    sd = pd.Series([0.2, 0.1, 0.3], index=["a", "b", "c"])
    hsd = tukey_hsd(means, df_error=98, ms_error=0.02, n=50, sd=sd, alpha=0.05)
    se = np.sqrt(0.02 / 50)
    tk = hsd.intervals("tukey")
    assert list(tk.columns) == ["mean", "lower", "upper", "halfwidth"]
    np.testing.assert_allclose(tk["halfwidth"], 0.5 * hsd.critical_value * se, rtol=1e-14)
    an = hsd.intervals("anova")
    np.testing.assert_allclose(an["halfwidth"], stats.t.ppf(0.975, 98) * se, rtol=1e-14)
    sem = hsd.intervals("sem")
    np.testing.assert_allclose(sem["halfwidth"], stats.t.ppf(0.975, 49) * sd / np.sqrt(50), rtol=1e-14)
    np.testing.assert_allclose(sem["lower"], means - sem["halfwidth"], rtol=1e-14)
    # Tukey intervals overlap exactly when the pair is not significant
    for a, b, rej in hsd.pairs[["a", "b", "reject"]].itertuples(index=False):
        overlap = tk.loc[a, "lower"] <= tk.loc[b, "upper"] and tk.loc[b, "lower"] <= tk.loc[a, "upper"]
        assert overlap == (not rej)
    with pytest.raises(DesignError, match="sd"):
        tukey_hsd(means, df_error=98, ms_error=0.02, n=50).intervals("sem")
    with pytest.raises(DataFormatError, match="unknown interval kind"):
        hsd.intervals("wide")  # type: ignore[arg-type]


def test_bad_input_raises_typed_errors():
    m = {"a": 0.1, "b": 0.2}
    with pytest.raises(DesignError, match="error term"):
        tukey_hsd(m, df_error=10)
    with pytest.raises(DesignError, match="not both"):
        tukey_hsd(m, df_error=10, ms_error=0.1, n=5, se_diff=0.2)
    with pytest.raises(DesignError, match="at least 2 levels"):
        tukey_hsd({"a": 0.1}, df_error=10, ms_error=0.1, n=5)
    with pytest.raises(ArgumentError, match="alpha"):
        tukey_hsd(m, df_error=10, ms_error=0.1, n=5, alpha=1.5)
    with pytest.raises(DataFormatError, match="missing or infinite"):
        tukey_hsd({"a": 0.1, "b": float("nan")}, df_error=10, ms_error=0.1, n=5)
    with pytest.raises(DataFormatError, match="se_diff"):
        tukey_hsd(m, df_error=10, se_diff=np.ones((3, 3)))


def test_display():
    hsd = tukey_hsd({"bm25": 0.30, "lm": 0.28, "tfidf": 0.21}, df_error=98, ms_error=0.012, n=50)
    text = hsd.summary()
    # the row "bm25-tfidf" holds bm25 - tfidf = +0.09 (it was labelled "tfidf-bm25", R's label
    # of the negated difference, beside +0.09)
    assert "Tukey HSD on system" in text and "bm25-tfidf  0.0900" in text
    assert r"\toprule" in hsd.to_latex() and "<table" in hsd._repr_html_()
    assert repr(hsd).startswith("<TukeyResult system: 3 levels, 2/3 pairs")
    assert dict(hsd._display_tables())["Summary"].loc["significant pairs", "value"] == 2


@settings(max_examples=30, deadline=None)
@given(
    means=st.lists(st.floats(0, 1), min_size=2, max_size=12),
    shift=st.floats(-5, 5),
    mse=st.floats(1e-4, 0.1),
)
def test_shifting_all_means_changes_nothing_but_the_means(means, shift, mse):
    s = pd.Series(means, index=[f"r{i}" for i in range(len(means))])
    a = tukey_hsd(s, df_error=40, ms_error=mse, n=10)
    b = tukey_hsd(s + shift, df_error=40, ms_error=mse, n=10)
    np.testing.assert_allclose(b.means, a.means + shift, atol=1e-12)
    for col in ("diff", "q", "p_adj", "lower", "upper"):
        np.testing.assert_allclose(b.pairs[col], a.pairs[col], rtol=0, atol=1e-9)
    stable = np.abs(a.pairs["p_adj"] - 0.05) > 1e-6  # away from the threshold, decisions agree
    assert (a.pairs["reject"][stable] == b.pairs["reject"][stable]).all()


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 25), seed=st.integers(0, 10_000), p=st.floats(0.0, 1.0))
@example(k=25, seed=96, p=0.625)  # 59 groups: names like "k2" (once misread by this test)
def test_letters_share_a_letter_exactly_when_not_different(k, seed, p):
    rng = np.random.default_rng(seed)
    means = pd.Series(rng.normal(size=k), index=[f"s{i}" for i in range(k)])
    upper = np.triu(rng.random((k, k)) < p, 1)
    diff = upper | upper.T
    letters = compact_letters(means, diff)
    # up to 52 groups one character each ("ab"); beyond, names like "k2" joined by "."
    long_names = any(ch.isdigit() for x in letters for ch in x)
    sets = [set(x.split(".")) if long_names else set(x) for x in letters]
    for i in range(k):
        assert sets[i]
        for j in range(i + 1, k):
            assert (not (sets[i] & sets[j])) == diff[i, j]
    best = letters.iloc[int(np.argmax(means.to_numpy()))]
    assert best.startswith("a")


def test_shard_design_md4_against_r(ref):
    """MD4 (topic + system + shard + topic:system) on 6 x 5 x 3: n = T*S = 18 per system mean."""
    case = ref["shards_md4"]
    data = irm.frame(pd.DataFrame({k: case[k] for k in ("topic", "system", "shard", "score")}))
    means = data.groupby("system", observed=True)["score"].mean()
    hsd = tukey_hsd(means, df_error=case["df_error"], ms_error=case["ms_error"], n=18)
    assert [f"{b}-{a}" for a, b in zip(hsd.pairs["a"], hsd.pairs["b"])] == case["pair"]
    for col, key, sign in (("diff", "diff", -1), ("lower", "upr", -1), ("upper", "lwr", -1),
                           ("p_adj", "p_adj", 1)):  # diff = a - b: R's "b-a" row negated
        np.testing.assert_allclose(hsd.pairs[col], sign * np.asarray(case[key]), rtol=0, atol=TOL)
    assert hsd.n_significant == case["n_significant"]
    if importlib.util.find_spec("irmodels.models.anova") is None:
        return
    fit = irm.anova("MD4", data)
    assert fit.df_resid == case["df_error"]
    via_model = fit.tukey("system")
    np.testing.assert_allclose(via_model.pairs["p_adj"], case["p_adj"], rtol=0, atol=TOL)
    np.testing.assert_allclose(via_model.pairs["upper"], -np.asarray(case["lwr"]), rtol=0, atol=TOL)
