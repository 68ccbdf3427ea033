"""Effect sizes with intervals and the equivalence test (TOST): irm.effect_size and the
dz / effect_mse interval / p_equiv columns of irm.pairwise, against base R
(tests/reference/effect_sizes.R: pt with uniroot, t.test) and by their properties."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError
from irmodels.inference.effects import noncentral_t_interval, paired_effects
from irmodels.inference.pairwise import COLUMNS

REF = Path(__file__).resolve().parents[1] / "reference"
SPECS = [("two-sided", 0.95), ("two-sided", 0.9), ("greater", 0.95), ("less", 0.95)]


@pytest.fixture(scope="module")
def ref() -> dict:
    return json.loads((REF / "effect_sizes.json").read_text())


@pytest.fixture(scope="module")
def diffs() -> pd.DataFrame:
    return pd.read_csv(REF / "effect_sizes.csv")


def _bounds(values: list) -> np.ndarray:
    return np.array([float(v) for v in values])  # "Inf" / "-Inf" from jsonlite


def _check(got: np.ndarray, expected: np.ndarray, tol: float = 1e-8) -> None:
    fin = np.isfinite(expected)
    np.testing.assert_array_equal(got[~fin], expected[~fin])
    np.testing.assert_allclose(got[fin], expected[fin], rtol=0, atol=tol)


@pytest.mark.parametrize("alternative,level", SPECS)
def test_intervals_match_r(ref: dict, diffs: pd.DataFrame, alternative: str, level: float) -> None:
    key = f"{alternative.replace('-', '.')}_{level:g}"
    for rec in ref["pairs"]:
        g = diffs[diffs["pair"] == rec["pair"]]
        D = g["d"].to_numpy()[:, None]
        e = paired_effects(D, level=level, alternative=alternative,
                           ms_error=float(g["ms_error"].iloc[0]),
                           df_error=float(g["df_error"].iloc[0]))
        assert e["dz"][0] == pytest.approx(rec["dz"], abs=1e-12)
        assert e["es"][0] == pytest.approx(rec["effect_mse"], abs=1e-12)
        _check(np.array([e["dz_lower"][0], e["dz_upper"][0]]), _bounds(rec[f"dz_{key}"]))
        _check(np.array([e["es_lower"][0], e["es_upper"][0]]), _bounds(rec[f"es_{key}"]))


def test_tost_matches_two_one_sided_t_tests_in_r(ref: dict, diffs: pd.DataFrame) -> None:
    for rec in ref["pairs"]:
        D = diffs.loc[diffs["pair"] == rec["pair"], "d"].to_numpy()[:, None]
        for t in rec["tost"]:
            got = paired_effects(D, equivalence=t["margin"])["p_equiv"][0]
            assert got == pytest.approx(t["p_equiv"], rel=1e-8, abs=1e-12)
            assert t["p_equiv"] == max(t["p_lower"], t["p_upper"])


def test_pairwise_columns_on_trec8_match_r(ref: dict, shared_data: Path) -> None:
    X = irm.read_matrix(shared_data / "ir-scores" / "adhoc8_ap.csv")
    pairs = [(r["a"], r["b"]) for r in ref["pairs"]]
    res = irm.pairwise(X, "t", pairs=pairs, equivalence=0.05).table
    assert list(res.columns) == [*COLUMNS, "p_equiv"]
    for row, rec in zip(res.itertuples(index=False), ref["pairs"]):
        assert (row.a, row.b) == (rec["a"], rec["b"])
        assert row.dz == pytest.approx(rec["dz"], abs=1e-12)
        assert row.effect_mse == pytest.approx(rec["effect_mse"], abs=1e-10)
        _check(np.array([row.dz_lower, row.dz_upper]), _bounds(rec["dz_two.sided_0.95"]))
        _check(np.array([row.effect_mse_lower, row.effect_mse_upper]),
               _bounds(rec["es_two.sided_0.95"]), tol=1e-8)
        tost = next(t for t in rec["tost"] if t["margin"] == 0.05)
        assert row.p_equiv == pytest.approx(tost["p_equiv"], rel=1e-8, abs=1e-12)
    # a one-sided alternative gives the one-sided interval (alpha 0.1: level 0.9)
    one = irm.pairwise(X, "wilcoxon", pairs=pairs, alternative="greater", alpha=0.05).table
    for row, rec in zip(one.itertuples(index=False), ref["pairs"]):
        _check(np.array([row.dz_lower, row.dz_upper]), _bounds(rec["dz_greater_0.95"]))
    assert "p_equiv" not in one.columns


def test_effect_size_of_one_pair_matches_r(ref: dict, diffs: pd.DataFrame,
                                           shared_data: Path) -> None:
    X = pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv")
    for rec in ref["pairs"]:
        res = irm.effect_size(X[rec["a"]], X[rec["b"]], equivalence=0.02)
        tab = res.table
        assert list(tab.index) == ["diff", "dz", "effect_mse"]
        assert list(tab.columns) == ["estimate", "lower", "upper"]
        assert tab.loc["diff", "estimate"] == pytest.approx(rec["diff"], abs=1e-14)
        _check(tab.loc["diff", ["lower", "upper"]].to_numpy(float), _bounds(rec["ci"]), 1e-12)
        _check(tab.loc["dz", ["lower", "upper"]].to_numpy(float),
               _bounds(rec["dz_two.sided_0.95"]))
        assert res.statistic == pytest.approx(rec["t"], rel=1e-10)
        assert res.p == pytest.approx(rec["p"], rel=1e-8)
        tost = next(t for t in rec["tost"] if t["margin"] == 0.02)
        assert res.p_equiv == pytest.approx(tost["p_equiv"], rel=1e-8, abs=1e-12)
        # two systems: V_E = var(d) / 2, so Sakai's ES is sqrt(2) dz, interval included
        np.testing.assert_allclose(tab.loc["effect_mse"].to_numpy(float),
                                   np.sqrt(2) * tab.loc["dz"].to_numpy(float), rtol=1e-9)
        assert res.dz == pytest.approx(rec["dz"], abs=1e-12)


def test_interval_contains_dz_and_swapping_negates(rng: np.random.Generator) -> None:
    wide = pd.DataFrame(rng.beta(2, 5, size=(25, 6)) + np.linspace(0, 0.1, 6),
                        columns=[f"s{i}" for i in range(6)])
    f = irm.from_wide(wide)
    for alt in ("two-sided", "greater", "less"):
        t = irm.pairwise(f, "t", alternative=alt).table
        assert ((t["dz_lower"] < t["dz"]) & (t["dz"] < t["dz_upper"])).all()
        assert ((t["effect_mse_lower"] < t["effect_mse"])
                & (t["effect_mse"] < t["effect_mse_upper"])).all()
    fwd = irm.pairwise(f, "t").table
    rev = irm.pairwise(f, "t", pairs=list(zip(fwd["b"], fwd["a"]))).table
    np.testing.assert_allclose(rev["dz"], -fwd["dz"], rtol=1e-12)
    np.testing.assert_allclose(rev["dz_lower"], -fwd["dz_upper"], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(rev["dz_upper"], -fwd["dz_lower"], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(rev["effect_mse_lower"], -fwd["effect_mse_upper"], atol=1e-11)
    x, y = wide["s0"], wide["s3"]
    a, b = irm.effect_size(x, y), irm.effect_size(y, x)
    assert b.dz == pytest.approx(-a.dz, rel=1e-12)
    np.testing.assert_allclose(b.table[["lower", "upper"]].to_numpy(),
                               -a.table[["upper", "lower"]].to_numpy(), atol=1e-11)
    # a wider level gives a wider interval
    w = irm.effect_size(x, y, level=0.99).table.loc["dz"]
    n = a.table.loc["dz"]
    assert w["lower"] < n["lower"] and w["upper"] > n["upper"]


def test_tost_p_decreases_as_margin_grows(rng: np.random.Generator) -> None:
    D = rng.normal(0.01, 0.08, size=(40, 5))
    margins = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5]
    p = np.array([paired_effects(D, equivalence=m)["p_equiv"] for m in margins])
    assert (np.diff(p, axis=0) <= 0).all()
    assert (p[0] > 0.4).all() and (p[-1] < 1e-10).all()
    # equivalence at alpha exactly when the 1 - 2 alpha t interval lies inside the margin
    from scipy import stats

    se = D.std(axis=0, ddof=1) / np.sqrt(40)
    q = stats.t.ppf(0.95, 39)
    lo, hi = D.mean(axis=0) - q * se, D.mean(axis=0) + q * se
    for m, pm in zip(margins, p):
        np.testing.assert_array_equal(pm < 0.05, (lo > -m) & (hi < m))


def test_noncentral_t_interval_edges() -> None:
    # t = 0: F(0; df, delta) = Phi(-delta) exactly, so the bounds are -/+ z
    lo, hi = noncentral_t_interval([0.0], 30)
    assert lo[0] == pytest.approx(-1.959963984540054, abs=1e-10)
    assert hi[0] == pytest.approx(1.959963984540054, abs=1e-10)
    lo, hi = noncentral_t_interval([np.nan, np.inf, 25.0, -25.0], 40)
    assert np.isnan(lo[:2]).all() and np.isnan(hi[:2]).all()
    assert lo[2] == pytest.approx(-hi[3], rel=1e-10) and 15 < lo[2] < 25 < hi[2] < 40
    with pytest.raises(ArgumentError, match="alternative"):
        noncentral_t_interval([1.0], 5, alternative="both")


def test_constant_and_zero_differences() -> None:
    wide = pd.DataFrame({"a": [0.2, 0.4, 0.6, 0.3], "b": [0.2, 0.4, 0.6, 0.3],
                         "c": [0.1, 0.3, 0.5, 0.2], "d": [0.5, 0.1, 0.3, 0.6]})
    with pytest.warns(irm.DataQualityWarning):
        t = irm.pairwise(irm.from_wide(wide), "t", equivalence=0.05).table.set_index(["a", "b"])
    zero, shift = t.loc[("a", "b")], t.loc[("a", "c")]
    assert np.isnan(zero["dz"]) and np.isnan(zero["dz_lower"]) and zero["p_equiv"] == 0.0
    assert shift["dz"] == np.inf and np.isnan(shift["dz_upper"]) and shift["p_equiv"] == 1.0
    # Sakai's ES divides by V_E of all four systems: finite, with an interval
    assert shift["effect_mse_lower"] < shift["effect_mse"] < shift["effect_mse_upper"] < np.inf
    with pytest.warns(irm.DataQualityWarning):
        t2 = irm.pairwise(irm.from_wide(wide), "t", equivalence=0.2).table
    assert t2.loc[(t2["a"] == "a") & (t2["b"] == "c"), "p_equiv"].item() == 0.0


def test_scale_invariant(rng: np.random.Generator) -> None:
    wide = pd.DataFrame(rng.beta(2, 5, size=(15, 3)), columns=["x", "y", "z"])
    small = wide * 2.0**-1000
    a = irm.pairwise(irm.from_wide(wide), "t", equivalence=0.03).table
    b = irm.pairwise(irm.from_wide(small), "t", equivalence=0.03 * 2.0**-1000).table
    for c in ("dz", "dz_lower", "dz_upper", "effect_mse_lower", "effect_mse_upper", "p_equiv"):
        np.testing.assert_allclose(b[c], a[c], rtol=1e-10)


@pytest.mark.parametrize("bad", [0, -0.1, float("nan"), float("inf"), True, "0.1"])
def test_bad_margin_refused(bad: object) -> None:
    f = irm.from_wide(pd.DataFrame({"x": [0.1, 0.5, 0.3], "y": [0.2, 0.4, 0.1]}))
    with pytest.raises(DataFormatError, match="equivalence margin"):
        irm.pairwise(f, "t", equivalence=bad)  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="equivalence margin"):
        irm.effect_size([0.1, 0.5, 0.3], [0.2, 0.4, 0.1], equivalence=bad)  # type: ignore[arg-type]


def test_effect_size_refuses_bad_input() -> None:
    with pytest.raises(DataFormatError, match="3 and 2 scores"):
        irm.effect_size([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(DataFormatError, match="at least two topics"):
        irm.effect_size([0.1], [0.2])
    with pytest.raises(DataFormatError, match="finite"):
        irm.effect_size([0.1, np.nan], [0.2, 0.3])
    with pytest.raises(ArgumentError, match="level"):
        irm.effect_size([0.1, 0.4, 0.2], [0.2, 0.3, 0.3], level=95)


def test_display_shows_dz_and_p_equiv() -> None:
    wide = pd.DataFrame({"x": [0.3, 0.5, 0.2, 0.6, 0.4], "y": [0.2, 0.45, 0.25, 0.5, 0.3]})
    res = irm.pairwise(irm.from_wide(wide), "t", equivalence=0.1)
    text = res.summary()
    assert "dz_lower" in text and "p_equiv" in text and "margin 0.1" in text
    assert "p_equiv" not in irm.pairwise(irm.from_wide(wide), "t").summary()
    one = irm.effect_size(wide["x"], wide["y"], equivalence=0.1)
    assert "p_equiv" in one.summary() and "dz" in one.to_latex()
    assert repr(one).startswith("<EffectSizeResult diff=")


def test_cli_pairwise_equivalence(tmp_path: Path, capsys) -> None:
    from irmodels.cli import main

    wide = pd.DataFrame({"x": [0.3, 0.5, 0.2, 0.6, 0.4, 0.35], "y": [0.2, 0.45, 0.25, 0.5, 0.3, 0.3],
                         "z": [0.1, 0.2, 0.3, 0.2, 0.1, 0.25]})
    path = tmp_path / "m.csv"
    wide.to_csv(path, index=False)
    out = tmp_path / "pairs.csv"
    assert main(["pairwise", str(path), "--equivalence", "0.1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "dz_lower" in text and "p_equiv" in text
    got = pd.read_csv(out, dtype={"a": str, "b": str})
    expected = irm.pairwise(irm.from_wide(wide), "t", equivalence=0.1).table
    assert list(got.columns) == [*COLUMNS, "p_equiv"]
    for c in ("dz", "dz_lower", "dz_upper", "effect_mse_lower", "p_equiv"):
        np.testing.assert_allclose(got[c], expected[c], rtol=1e-12)
    assert main(["pairwise", str(path)]) == 0
    assert "p_equiv" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["pairwise", str(path), "--equivalence", "-0.1"])
    assert exc.value.code == 2
    assert "--equivalence" in capsys.readouterr().err


def _two_measures(rng: np.random.Generator) -> pd.DataFrame:
    base = rng.beta(2, 5, size=(25, 1))
    ap = pd.DataFrame(base + [0.0, 0.03, 0.1, 0.031] + rng.normal(0, 0.03, (25, 4)),
                      columns=["bm25", "rm3", "dense", "rm3b"])
    p10 = (ap + rng.normal(0, 0.05, ap.shape)).clip(0, 1)
    return pd.concat([irm.from_wide(ap).assign(measure="AP"),
                      irm.from_wide(p10).assign(measure="P@10")], ignore_index=True)


@pytest.mark.parametrize("test", ["tukey", "t", "wilcoxon"])
def test_compare_pairs_carry_pairwise_effects(rng: np.random.Generator, test: str) -> None:
    from irmodels.inference.compare import PAIR_COLUMNS

    data = _two_measures(rng)
    res = irm.compare(data, test=test, equivalence=0.02)
    assert list(res.pairs.columns) == [*PAIR_COLUMNS, "p_equiv"]
    assert list(PAIR_COLUMNS[:7]) == ["measure", "a", "b", "diff", "p_adj", "reject", "better"]
    for m in ("AP", "P@10"):
        pw = irm.pairwise(data[data["measure"] == m].drop(columns="measure"), "t",
                          equivalence=0.02).table
        got = res.pairs[res.pairs["measure"] == m]
        np.testing.assert_array_equal(got["a"].to_numpy(), pw["a"].to_numpy())
        for c in ("dz", "dz_lower", "dz_upper", "p_equiv"):
            np.testing.assert_allclose(got[c].to_numpy(), pw[c].to_numpy(), rtol=1e-12)
    # with a baseline the pairs are baseline - other: dz keeps the orientation of diff
    based = irm.compare(data, test=test, baseline="rm3")
    assert "p_equiv" not in based.pairs.columns
    assert (np.sign(based.pairs["dz"]) == np.sign(based.pairs["diff"])).all()
    assert ((based.pairs["dz_lower"] < based.pairs["dz"])
            & (based.pairs["dz"] < based.pairs["dz_upper"])).all()


def test_compare_prints_effects(rng: np.random.Generator) -> None:
    res = irm.compare(_two_measures(rng), equivalence=0.02)
    eff = res.effects("AP")
    assert list(eff.columns) == ["diff", "p_adj", "reject", "dz", "dz_lower", "dz_upper",
                                 "p_equiv"]
    assert len(eff) == 6 and list(eff.index.names) == ["measure", "pair"]
    text = res.summary(pairs=True)
    assert "AP: bm25 - rm3" in text and "within +/-0.02" in text
    assert "bm25 - rm3" not in res.summary()
    tex = res.to_latex(pairs=True, columns=["P@10"])
    assert r"$d_z$ lower" in tex and r"$p_{\mathrm{equiv}}$" in tex
    assert "P@10, bm25 - rm3" in tex and "AP, bm25" not in tex
    with pytest.raises(DataFormatError, match="equivalence margin"):
        irm.compare(_two_measures(rng), equivalence=-1)


@pytest.mark.parametrize("df", [1, 2, 5, 49, 6272])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_noncentral_t_bounds_solve_their_equations(df: int, alternative: str) -> None:
    # |t| up to 60 and very few df (2 or 3 topics), where scipy's nct.cdf returns NaN deep
    # in a tail and the normal approximation of the bounds is far off
    from scipy import stats

    t = np.concatenate([np.linspace(-60, 60, 121), [1e-300, -1e-300]])
    lo, hi = noncentral_t_interval(t, df, 0.9, alternative)
    p_lo, p_hi = {"two-sided": (0.95, 0.05), "greater": (0.9, None),
                  "less": (None, 0.1)}[alternative]
    for bound, p in ((lo, p_lo), (hi, p_hi)):
        if p is None:
            assert np.isinf(bound).all()
        else:
            assert np.isfinite(bound).all()
            np.testing.assert_allclose(stats.nct.cdf(t, df, bound), p, rtol=0, atol=1e-12)
    assert (lo < hi).all()


def test_many_roots_from_the_grid_equal_the_direct_search(rng: np.random.Generator) -> None:
    # above 1,000 roots of one equation the search starts from a spline on a grid of t
    t = np.concatenate([rng.normal(0, 6, 2500), [0.0, 1e-12, -45.0, 45.0]])
    lo, hi = noncentral_t_interval(t, 49)
    for k in range(0, t.size, 500):  # 500 at a time: the direct search
        a, b = noncentral_t_interval(t[k:k + 500], 49)
        np.testing.assert_allclose(lo[k:k + 500], a, rtol=0, atol=1e-11)
        np.testing.assert_allclose(hi[k:k + 500], b, rtol=0, atol=1e-11)


def test_roots_solved_together_equal_roots_solved_one_at_a_time() -> None:
    """The bounds of every element (both bounds, both signs of t) come from one solver call,
    and paired_effects' d_z and ES intervals from one interval call: each root is solved on
    its own, so the bounds are those of one call per element, bit for bit."""
    t = np.array([-3.1, -0.2, 0.0, 0.7, 5.5, np.nan, 14.0])
    df = np.array([4.0, 9.0, 19.0, 2.0, 60.0, 5.0, 3.0])
    for alternative in ("two-sided", "greater", "less"):
        lo, hi = noncentral_t_interval(t, df, 0.9, alternative)
        one = [noncentral_t_interval(t[i], df[i], 0.9, alternative) for i in range(len(t))]
        np.testing.assert_array_equal(lo, [a[0][0] for a in one])
        np.testing.assert_array_equal(hi, [a[1][0] for a in one])
    D = np.random.default_rng(4).normal(0.02, 0.1, (12, 5))
    got = paired_effects(D, ms_error=0.008, df_error=44)
    T = D.shape[0]
    dlo, dhi = noncentral_t_interval(got["dz"] * np.sqrt(T), T - 1)
    elo, ehi = noncentral_t_interval(got["es"] * np.sqrt(T / 2), 44)
    np.testing.assert_array_equal(got["dz_lower"], dlo / np.sqrt(T))
    np.testing.assert_array_equal(got["dz_upper"], dhi / np.sqrt(T))
    np.testing.assert_array_equal(got["es_lower"], elo / np.sqrt(T / 2))
    np.testing.assert_array_equal(got["es_upper"], ehi / np.sqrt(T / 2))


def test_repeated_intervals_are_remembered_and_returned_as_copies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated call with the same (large) t, df, level and alternative returns the bounds of
    the first call without solving again; the caller's arrays are its own."""
    from scipy import stats

    from irmodels.stats import effects as eff

    monkeypatch.setattr(eff, "_MEMO", type(eff._MEMO)())
    t = np.linspace(-8.0, 8.0, eff._MEMO_MIN + 3)
    lo, hi = noncentral_t_interval(t, 30)
    calls = []
    real = eff._solve_nct_bounds
    monkeypatch.setattr(eff, "_solve_nct_bounds", lambda *a: calls.append(1) or real(*a))
    lo[:] = 0.0  # the caller's copy: the remembered bounds are untouched
    lo2, hi2 = noncentral_t_interval(t.copy(), 30)
    assert calls == []
    np.testing.assert_array_equal(hi2, hi)
    np.testing.assert_allclose(stats.nct.cdf(t, 30, lo2), 0.975, rtol=0, atol=1e-12)
    # any change of the statistics, the df, the level or the alternative is solved afresh
    for args in ((t + 1e-9, 30), (t, 31), (t, 30, 0.9), (t, 30, 0.95, "greater")):
        noncentral_t_interval(*args)
    assert len(calls) == 4
    small = t[:eff._MEMO_MIN - 1]  # below the threshold nothing is remembered
    noncentral_t_interval(small, 30)
    noncentral_t_interval(small, 30)
    assert len(calls) == 6
    assert len(eff._MEMO) <= eff._MEMO_SIZE
