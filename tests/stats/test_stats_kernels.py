"""The kernels of ``irmodels.stats`` under their public names (issue 26 item 1): the moved
kernels give the values they gave in ``irmodels.inference`` (R's, scipy's, Brennan's), the old
module paths re-export the same objects, and ``irm.*`` points at the new homes."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError, ModelError
from irmodels.stats import dunnett, effects, gtheory, multiplicity, paired, resampling, studentized
from irmodels.stats import tukey as stats_tukey

W = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
                  "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})


def test_qtukey_and_ptukey_against_r(reference_dir):
    ref = json.loads((reference_dir / "ptukey.json").read_text())
    g = ref["qtukey"]
    np.testing.assert_allclose(studentized.qtukey(g["p"], g["k"], g["df"]), g["q"],
                               rtol=0, atol=1e-9)
    p = ref["ptukey"]
    np.testing.assert_allclose(studentized.ptukey(p["q"], p["k"], p["df"]), p["lower"],
                               rtol=0, atol=1e-9)
    # R: ptukey(3.5, 3, 12) = 0.930004514724551
    assert float(studentized.ptukey(3.5, 3, 12)) == pytest.approx(0.930004514724551, abs=1e-13)


def test_p_adjust_against_r():
    p = [0.01, 0.04, 0.03, 0.2]
    # R: p.adjust(c(.01, .04, .03, .2), "holm" / "BH" / "hommel")
    assert multiplicity.p_adjust(p, "holm").round(4).tolist() == [0.04, 0.09, 0.09, 0.2]
    assert multiplicity.p_adjust(p, "BH").round(4).tolist() == [0.04, 0.0533, 0.0533, 0.2]
    assert multiplicity.p_adjust(p, "hommel").round(4).tolist() == [0.04, 0.08, 0.06, 0.2]
    with pytest.raises(ArgumentError, match="unknown adjustment 'holmes'.*'holm'"):
        multiplicity.p_adjust(p, "holmes")


def test_paired_kernels_equal_scipy():
    rng = np.random.default_rng(3)
    D = rng.normal(0.1, 1.0, size=(20, 3))
    t = paired.paired_t_test(D, "two-sided", 0.05)
    ref = sps.ttest_1samp(D, 0.0, axis=0)
    np.testing.assert_allclose(t["statistic"], ref.statistic, rtol=1e-12)
    np.testing.assert_allclose(t["p"], ref.pvalue, rtol=1e-10)
    lo, hi = ref.confidence_interval(0.95)
    np.testing.assert_allclose(t["ci_lower"], lo, rtol=1e-10)
    np.testing.assert_allclose(t["ci_upper"], hi, rtol=1e-10)
    w = paired.wilcoxon_test(D, "two-sided")
    assert w["exact"].all()
    np.testing.assert_allclose(
        w["p"], [sps.wilcoxon(D[:, j], method="exact").pvalue for j in range(3)], rtol=1e-10)
    s = paired.sign_test(D, "greater")
    np.testing.assert_allclose(
        s["p"], [sps.binomtest(int((D[:, j] > 0).sum()), 20, 0.5, "greater").pvalue
                 for j in range(3)], rtol=1e-12)


def test_exact_randomization_test_enumerates_the_signs():
    D = np.array([[0.3], [0.1], [-0.05], [0.2], [0.15]])
    res, exact = resampling.resampling_test("randomization", D, "two-sided", 0.05, 10_000,
                                            np.random.default_rng(0), None)
    assert exact
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * 5)).reshape(5, -1)
    means = (D[:, 0][:, None] * signs).mean(axis=0)
    assert res["p"][0] == pytest.approx(np.mean(np.abs(means) >= D.mean() - 1e-12), abs=1e-15)
    assert res["p"][0] == pytest.approx(4 / 32, abs=1e-15)


def test_degenerate_and_resolve_pairs():
    const, zero = paired.degenerate(np.array([0.0, 1e-20, 0.1]), np.array([0.2, 0.2, 0.2]),
                                    np.array([0.0, 0.2, 0.2]), np.array([0.3, 0.3, 0.3]))
    assert const.tolist() == [True, True, False] and zero.tolist() == [True, False, False]
    assert paired.ESSENTIALLY_CONSTANT == 10 * np.finfo(float).eps
    ia, ib = paired.resolve_pairs(["x", "y", "z"], [("z", "x")])
    assert ia.tolist() == [2] and ib.tolist() == [0]
    with pytest.raises(DataFormatError, match="twice"):
        paired.resolve_pairs(["x", "y"], [("x", "y"), ("y", "x")])


def test_old_paths_re_export_the_same_objects():
    from irmodels.inference import dunnett as old_dunnett
    from irmodels.inference import effects as old_effects
    from irmodels.inference import gtheory as old_gtheory
    from irmodels.inference import pairwise as old_pairwise
    from irmodels.inference import studentized as old_studentized
    from irmodels.inference import tukey as old_tukey

    assert old_tukey.TukeyResult is stats_tukey.TukeyResult
    assert old_tukey.tukey_hsd is stats_tukey.tukey_hsd is irm.tukey_hsd
    assert old_dunnett.DunnettResult is dunnett.DunnettResult and irm.dunnett is dunnett.dunnett
    assert old_studentized.qtukey is studentized.qtukey is irm.qtukey
    assert old_effects.paired_effects is effects.paired_effects
    assert old_gtheory.GStudy is gtheory.GStudy
    assert old_pairwise.p_adjust is multiplicity.p_adjust is irm.p_adjust
    assert old_pairwise.unit_scale is paired.unit_scale


def test_result_pickles_load_under_the_new_module(monkeypatch):
    fit = irm.anova("score ~ system + topic", irm.from_wide(W))
    tk = fit.tukey("system")
    assert type(tk).__module__ == "irmodels.stats.tukey"
    back = pickle.loads(pickle.dumps(tk))
    pd.testing.assert_frame_equal(back.pairs, tk.pairs)
    # a pickle written when the class lived in irmodels.inference.tukey still loads
    with monkeypatch.context() as m:
        m.setattr(stats_tukey.TukeyResult, "__module__", "irmodels.inference.tukey")
        old = pickle.dumps(tk)
    assert b"irmodels.inference.tukey" in old and b"irmodels.stats.tukey" not in old
    back = pickle.loads(old)
    assert type(back) is stats_tukey.TukeyResult
    pd.testing.assert_frame_equal(back.pairs, tk.pairs)


def test_gstudy_from_data_and_from_fit_agree_with_the_entry(shared_data):
    brennan = irm.from_wide(pd.read_csv(shared_data / "textbook" / "brennan2001_table3-2.csv"))
    g = gtheory.from_data(brennan)
    v = g.components["variance"]
    # Brennan (2001), Table 6.2
    assert [round(v["system"], 4), round(v["topic"], 4), round(v["Residual"], 4)] == [
        0.6258, 0.8840, 2.7872]
    pd.testing.assert_frame_equal(g.components, irm.gstudy(brennan).components)
    fit = irm.anova("score ~ system + topic", brennan)
    from_fit = gtheory.from_fit(fit)
    pd.testing.assert_frame_equal(from_fit.components, irm.gstudy(fit).components)
    np.testing.assert_allclose(from_fit.components["variance"].to_numpy(), v.to_numpy(),
                               rtol=1e-12)
    assert gtheory.term_name(["system", "topic"]) == "topic:system"


def test_gstudy_kernels_refuse_what_the_entry_refuses():
    with pytest.raises(DesignError, match="at least 2 levels"):
        gtheory.from_data(irm.from_wide(W[["a"]]))

    class Slopes:
        spec = "score ~ x + (1 + x | topic)"

        def variance_components(self):
            idx = pd.MultiIndex.from_tuples([("topic", "(Intercept)"), ("topic", "x")],
                                            names=["group", "effect"])
            return pd.DataFrame({"variance": [1.0, 0.5]}, index=idx)

    with pytest.raises(ModelError, match="random slopes .*topic: x"):
        gtheory.from_fit(Slopes())


def test_check_helpers_are_public():
    assert stats_tukey.check_alpha(np.float64(0.1)) == 0.1
    with pytest.raises(ArgumentError, match="level must be a number strictly between 0 and 1"):
        effects.check_level(1.5)
    with pytest.raises(DesignError, match="residual variance is zero"):
        stats_tukey.check_error_variance(np.array([0.0]), np.array([0.1, 0.2]))
