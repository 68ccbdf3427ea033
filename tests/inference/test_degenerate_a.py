"""Degenerate data that used to give numbers built from rounding noise: equal reference scores
in the standardizer, identical systems in a G-study, essentially constant differences in the t
tests, an undefined kappa in comparability."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataQualityWarning, DesignError
from irmodels.inference.gtheory import GStudy
from irmodels.inference.pairwise import p_adjust, pairwise

A5 = np.array([0.1, 0.2, 0.3, 0.4, 0.5])


# ----------------------------------------------------------------------------- standardize
def test_equal_reference_scores_have_zero_sd_exactly() -> None:
    # np.mean of six 0.7 is 0.7000000000000001 and np.std about it 1.2e-16
    f = irm.from_wide(pd.DataFrame({"a": [.2, .7], "b": [.4, .7], "c": [.6, .7],
                                    "d": [.3, .7], "e": [.5, .7], "f": [.1, .7]}))
    s = irm.Standardizer("z").fit(f)
    fa = s.factors
    # R: mean(rep(0.7, 6)) == 0.7 and sd(rep(0.7, 6)) == 0, both TRUE
    assert fa.loc["2", "mu"] == 0.7 and fa.loc["2", "sigma"] == 0.0
    # R: sprintf("%.17g", c(mean(y), sd(y))) with y = c(.2, .4, .6, .3, .5, .1)
    assert fa.loc["1", "mu"] == pytest.approx(0.34999999999999998, rel=1e-15)
    assert fa.loc["1", "sigma"] == pytest.approx(0.18708286933869706, rel=1e-14)
    z = s.transform(f)
    assert z.loc[z["topic"] == "2", "score"].tolist() == [0.0] * 6  # the zero-SD path: z = 0
    normal = irm.Standardizer().fit(f).transform(f)
    assert normal.loc[normal["topic"] == "2", "score"].tolist() == [0.5] * 6
    d = s.diagnostics()
    assert d.zero_sd["topic"].tolist() == ["2"] and d.zero_sd["mu"].tolist() == [0.7]
    assert d.zero_sd["n"].tolist() == [6]


def test_robust2004_zero_sd_topics_are_the_topics_with_equal_reference_scores(
        shared_data: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fr = irm.read_matrix(shared_data / "ir-scores" / "robust2004_p10.csv")
    s = irm.Standardizer("z").fit(fr, reference=3)
    ref = fr[fr["system"].astype(str).isin(s.reference)]
    equal = int((ref.groupby("topic", observed=True)["score"].nunique() == 1).sum())
    fa = s.factors
    # R: d <- read.csv(...); top 3 by colMeans (sys75, sys74, sys12);
    # sum(apply(d[, top], 1, sd) == 0) gives 63 of 249 topics
    assert sorted(s.reference) == ["sys12", "sys74", "sys75"]
    assert equal == 63 and len(fa) == 249
    assert int((fa["sigma"] == 0).sum()) == equal
    assert not ((fa["sigma"] > 0) & (fa["sigma"] < 1e-12)).any()
    assert len(s.diagnostics().zero_sd) == equal


# ----------------------------------------------------------------------------- gstudy
BASE = [0.1, 0.25, 0.3, 0.45, 0.5]


def _identical() -> GStudy:
    with pytest.warns(DataQualityWarning, match="systems do not differ"):
        return irm.gstudy(irm.from_wide(pd.DataFrame({"x": BASE, "y": BASE, "z": BASE})))


def test_identical_systems_give_zero_components_and_nan_coefficients() -> None:
    g = _identical()
    comp = g.components["variance"]
    assert comp["system"] == 0.0 and comp["Residual"] == 0.0  # 3.5e-33 and 5.8e-33 before
    # R: anova(lm(score ~ system + topic, d))[["Mean Sq"]] on three copies of BASE gives
    # 3.04e-33, 0.077250000000000013, 5.95e-33 (noise, printed 0, "essentially perfect fit")
    assert comp["topic"] == pytest.approx(0.077250000000000013 / 3, rel=1e-13)
    assert g.mean_squares["system"] == 0.0 and g.mean_squares["Residual"] == 0.0
    assert np.isnan(g.rho_I) and g.phi == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning from 0/0
        d = g.dstudy([5, 50])
    assert d["Erho2"].isna().all() and d["Erho2_lower"].isna().all()
    assert d["Erho2_upper"].isna().all()
    assert (d[["Phi", "Phi_lower", "Phi_upper"]] == 0.0).all().all()
    with pytest.raises(DesignError, match=r"Erho2 is undefined \(0/0\)"):
        g.topics_needed(0.9)
    with pytest.raises(DesignError, match=r"Erho2 is undefined \(0/0\)"):
        g.topics_needed(0.9, level=0.95)
    with pytest.raises(DesignError, match="no number of topics reaches Phi"):
        g.topics_needed(0.9, index="Phi")
    assert "rho_I = nan" in g._display_title()


def test_identical_systems_with_shards() -> None:
    rng = np.random.default_rng(3)
    # topic x shard, the same for every system
    cell = rng.uniform(0, 1, 6)[:, None] + rng.uniform(0, 0.2, (6, 3))
    rows = [(f"t{t}", s, f"h{h}", cell[t, h]) for s in "abc" for t in range(6) for h in range(3)]
    f = irm.frame(pd.DataFrame(rows, columns=["topic", "system", "shard", "score"]))
    with pytest.warns(DataQualityWarning, match="systems do not differ"):
        g = irm.gstudy(f)
    comp = g.components["variance"]
    for name in ("system", "topic:system", "system:shard", "Residual"):
        assert comp[name] == 0.0
    assert comp["topic"] > 0 and comp["topic:shard"] > 0
    assert np.isnan(g.rho_I) and np.isnan(g.dstudy([10])["Erho2"].iloc[0])
    with pytest.raises(DesignError, match="undefined"):
        g.topics_needed(0.9)


def test_perfect_additive_fit_gives_erho2_one_with_a_warning() -> None:
    w = pd.DataFrame({"a": [.1, .25, .5], "b": [.2, .35, .6], "c": [.5, .65, .9]})
    with pytest.warns(DataQualityWarning, match="perfect additive fit"):
        g = irm.gstudy(irm.from_wide(w))
    assert g.components.loc["Residual", "variance"] == 0.0
    # system and topic mean squares: 0.13 and 0.1225 (exact arithmetic), over n = 3
    assert g.components.loc["system", "variance"] == pytest.approx(0.13 / 3, rel=1e-12)
    assert g.components.loc["topic", "variance"] == pytest.approx(0.1225 / 3, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = g.dstudy([5, 50])
        assert g.topics_needed(0.9, level=0.95).tolist() == [1, 1, 1]
    assert (d[["Erho2", "Erho2_lower", "Erho2_upper"]] == 1.0).all().all()
    assert g.rho_I == 1.0


def test_a_tiny_real_system_effect_is_kept() -> None:
    # systems differ by 1e-9 on every topic: far above rounding (2e-13 of the scores)
    w = pd.DataFrame({"x": BASE, "y": [v + 1e-9 for v in BASE], "z": [v + 3e-9 for v in BASE]})
    with pytest.warns(DataQualityWarning, match="perfect additive fit"):
        g = irm.gstudy(irm.from_wide(w))
    # var_s = MS_s / n_t with MS_s = 5 * var(c(0, 1, 3) * 1e-9)
    assert g.components.loc["system", "variance"] == pytest.approx(
        np.var([0, 1e-9, 3e-9], ddof=1), rel=1e-5)


def test_gstudy_alpha_and_topics_are_validated() -> None:
    w = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
                      "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})
    g = irm.gstudy(irm.from_wide(w))
    for bad in (1.5, 0, 1, -0.1, float("nan"), "0.05", True):
        with pytest.raises(ArgumentError, match="level must be"):
            g.topics_needed(0.9, level=bad)
        with pytest.raises(ArgumentError, match="level must be"):
            g.dstudy(level=bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g.topics_needed(0.95, level=np.float32(0.95)).tolist() == [6, 31, 1]
    for bad in ("a", b"10", [5, "b"], [5, None], 2.5, 0, float("nan"), object()):
        with pytest.raises(DesignError, match="topics must be"):
            g.dstudy(topics=bad)
    assert g.dstudy(topics=np.array([5, 50]))["topics"].tolist() == [5, 50]
    with pytest.raises(ArgumentError, match="target must be"):
        g.topics_needed("0.9")


# ----------------------------------------------------------------------------- pairwise
def _pw(w: pd.DataFrame, test: str, **kw) -> pd.DataFrame:
    return pairwise(irm.from_wide(w), test, **kw).table


@pytest.mark.parametrize("shift", [0.1, 0.125])
def test_constant_non_zero_difference_gives_infinite_t(shift: float) -> None:
    w = pd.DataFrame({"x": A5, "y": A5 - shift})
    # R: t.test(a, a - 0.1, paired = TRUE) stops: "data are essentially constant"
    with pytest.warns(DataQualityWarning, match=r"essentially constant \(x - y\)"):
        t = _pw(w, "t").iloc[0]
    assert t["statistic"] == np.inf and t["p"] == 0.0 and t["effect_sd"] == np.inf
    assert t["ci_lower"] == t["ci_upper"] == t["diff"]
    assert t["diff"] == pytest.approx(shift, rel=1e-12) and bool(t["reject"])
    with pytest.warns(DataQualityWarning):
        less = _pw(w, "t", alternative="less").iloc[0]
    assert less["statistic"] == np.inf and less["p"] == 1.0 and less["ci_lower"] == -np.inf
    with pytest.warns(DataQualityWarning):
        rev = _pw(w[["y", "x"]], "t").iloc[0]
    assert rev["statistic"] == -np.inf and rev["p"] == 0.0 and rev["effect_sd"] == -np.inf


def test_all_zero_differences_give_nan() -> None:
    w = pd.DataFrame({"x": A5, "y": A5.copy(), "z": A5 + [0.1, -0.1, 0.2, 0.0, 0.05]})
    with pytest.warns(DataQualityWarning, match=r"1 pair\(s\) cannot be t-tested.*\(x - y\)"):
        t = _pw(w, "t", adjust="holm")
    # R: t.test(a, a, paired = TRUE) gives statistic NaN, p.value NaN, conf.int NaN NaN
    first = t.iloc[0]
    assert np.isnan(first["statistic"]) and np.isnan(first["p"]) and np.isnan(first["p_adj"])
    assert np.isnan(first["ci_lower"]) and np.isnan(first["ci_upper"])
    assert np.isnan(first["effect_sd"]) and not first["reject"]
    # the other two pairs are ordinary, and Holm counts 2 of them (NaN leaves the family)
    assert np.isfinite(t["statistic"].iloc[1:]).all()
    np.testing.assert_allclose(t["p_adj"].iloc[1:], p_adjust(t["p"].iloc[1:].to_numpy(), "holm"))
    assert (t["p_adj"].iloc[1:] > t["p"].iloc[1:]).all()
    # a shift that is rounding (0.3 against 0.1 + 0.2 on every topic) counts as no shift
    c = pd.DataFrame({"a": [0.3] * 5, "b": [0.1 + 0.2] * 5})
    for test in ("t", "t2"):
        with pytest.warns(DataQualityWarning, match="no difference at all"):
            r = _pw(c, test).iloc[0]
        assert np.isnan(r["statistic"]) and np.isnan(r["p"])


def test_welch_on_constant_systems() -> None:
    w = pd.DataFrame({"x": [0.3] * 5, "y": [0.2] * 5, "z": A5, "u": A5.copy()})
    # R: t.test(rep(0.3, 5), rep(0.2, 5)) stops: "data are essentially constant"
    with pytest.warns(DataQualityWarning, match=r"both systems' scores .*\(x - y\)") as rec:
        t = _pw(w, "t2").set_index(["a", "b"])
    assert "x - z" not in str(rec[0].message)
    assert t.loc[("x", "y"), "statistic"] == np.inf and t.loc[("x", "y"), "p"] == 0.0
    # R: t.test(a, a) with a = c(.1, .2, .3, .4, .5): t = 0, p = 1, conf.int +/-0.23060041352041655
    zu = t.loc[("z", "u")]
    assert zu["statistic"] == 0.0 and zu["p"] == 1.0
    assert zu["ci_upper"] == pytest.approx(0.23060041352041655, rel=1e-9)
    # ordinary pairs are untouched: R: t.test(a, b) with b = c(.3, .1, .4, .2, .6)
    o = _pw(pd.DataFrame({"a": A5, "b": [.3, .1, .4, .2, .6]}), "t2").iloc[0]
    assert o["statistic"] == pytest.approx(-0.17960530202677508, rel=1e-12)
    assert o["p"] == pytest.approx(0.86209189969723465, rel=1e-10)
    # R: t.test(a, b, paired = TRUE)
    o = _pw(pd.DataFrame({"a": A5, "b": [.3, .1, .4, .2, .6]}), "t").iloc[0]
    assert o["statistic"] == pytest.approx(-0.27216552697590862, rel=1e-12)
    assert o["p"] == pytest.approx(0.79896585919277874, rel=1e-10)


def test_degenerate_pairs_display_without_error() -> None:
    w = pd.DataFrame({"x": A5, "y": A5 - 0.1, "z": A5.copy()})
    with pytest.warns(DataQualityWarning):
        r = pairwise(irm.from_wide(w), "t", adjust="bh")
    text = r.summary() if callable(getattr(r, "summary", None)) else str(r)
    assert "inf" in text and "x - y" in text
    assert r.to_latex() and r._repr_html_()
    assert r.n_significant == 2  # x - y and y - z (p = 0); x - z has p NaN


def test_pairwise_alpha_accepts_numpy_floats() -> None:
    w = pd.DataFrame({"x": A5, "y": [.3, .1, .4, .2, .6]})
    r = pairwise(irm.from_wide(w), "t", alpha=np.float32(0.05))
    assert r.alpha == pytest.approx(0.05) and type(r.alpha) is float
    assert pairwise(irm.from_wide(w), "t", alpha=np.float64(0.1)).alpha == 0.1
    for bad in (True, np.bool_(True), "0.05", float("nan"), np.float64(1.0), 0):
        with pytest.raises(ArgumentError, match=re.escape(f"got {bad!r}")):
            pairwise(irm.from_wide(w), "t", alpha=bad)


# ----------------------------------------------------------------------------- comparability
def test_undefined_kappa_gives_nan_p_with_a_warning() -> None:
    rng = np.random.default_rng(0)
    xa, xb = rng.uniform(0, 1, (10, 1)), rng.uniform(0, 1, (10, 1))
    a = irm.from_wide(pd.DataFrame(np.hstack([xa, xa]), columns=["s1", "s2"]))
    b = irm.from_wide(pd.DataFrame(np.hstack([xb, xb]), columns=["s1", "s2"]))
    with pytest.warns(DataQualityWarning, match="kappa is undefined"):
        r = irm.comparability(a, b, n_resamples=200, n_halvings=20)
    assert np.isnan(r.kappa) and np.isnan(r.p_value)  # p was 0.0
    assert "p_value=nan" in repr(r) and "p=nan" in r._display_title()


def test_p_value_counts_only_defined_repartitions() -> None:
    # s2 = s1 but +1/4 on topic 0 (in A) and -1/4 on topic 4 (in B): kappa is defined, but
    # a re-partition putting both topics on one side has equal system means on both sides
    s1 = np.array([1, 3, 2, 5, 4, 6, 7, 2]) / 8
    s2 = s1 + np.array([2, 0, 0, 0, -2, 0, 0, 0]) / 8
    w = pd.DataFrame({"s1": s1, "s2": s2})
    a, b = irm.from_wide(w.iloc[:4]), irm.from_wide(w.iloc[4:].reset_index(drop=True))
    with pytest.warns(DataQualityWarning, match=r"undefined in \d+ of 300") as rec:
        r = irm.comparability(a, b, n_resamples=300, n_halvings=10, seed=2)
    null = r.null_kappa
    undefined = int(np.isnan(null).sum())
    # each side holds both topics with probability 2 C(6, 2) / C(8, 4) = 3/7
    assert 0.3 < undefined / 300 < 0.56
    assert f"undefined in {undefined} of 300" in str(rec[0].message)
    assert np.isfinite(r.kappa)
    finite = null[np.isfinite(null)]
    assert r.p_value == pytest.approx(np.mean(finite >= r.kappa - 1e-12))
    assert r.p_value > np.mean(null >= r.kappa - 1e-12)  # counting NaN as "below" is lower


def test_comparability_alpha_accepts_numpy_floats() -> None:
    rng = np.random.default_rng(1)
    w = pd.DataFrame(rng.uniform(0, 1, (8, 3)), columns=["s1", "s2", "s3"])
    a, b = irm.from_wide(w.iloc[:4]), irm.from_wide(w.iloc[4:].reset_index(drop=True))
    r = irm.comparability(a, b, n_resamples=20, n_halvings=5, alpha=np.float32(0.1))
    assert r.alpha == pytest.approx(0.1)
    with pytest.raises(ArgumentError, match="alpha"):
        irm.comparability(a, b, n_resamples=20, n_halvings=5, alpha=np.bool_(True))
