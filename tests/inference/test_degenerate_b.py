"""Degenerate inputs of power, variability, Tukey, Dunnett and rank similarity: a clear irmodels
error or warning, never a silent wrong number (values compared with R where R has them)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.inference.rank import kendall_tau, tau_ap

P = irm.power


# ---------------------------------------------------------------------------- power
@pytest.mark.parametrize("method", ["exact", "normal"])
@pytest.mark.parametrize("alternative,delta", [("greater", -0.05), ("less", 0.05)])
def test_one_sided_effect_the_other_way_has_no_solution(method, alternative, delta):
    with pytest.raises(DesignError, match="points the other way"):
        P.paired_t(delta=delta, sigma=0.1, power=0.8, alternative=alternative, method=method)
    with pytest.raises(DesignError, match="points the other way"):
        P.paired_t(n=25, delta=delta, power=0.8, alternative=alternative, method=method)


def test_power_of_an_effect_the_other_way_is_below_alpha():
    # R: power.t.test(n = 30, delta = -0.04, sd = 0.1, type = "paired",
    #                 alternative = "one.sided", strict = TRUE)$power
    got = P.paired_t_power(30, -0.04, 0.1, alternative="greater")
    assert got == pytest.approx(7.6464630477390827e-05, rel=1e-8)


def test_normal_one_sided_uses_the_sign_of_delta():
    r = P.paired_t(delta=-0.05, sigma=0.1, power=0.8, alternative="less", method="normal")
    # R: ((qnorm(0.95) + qnorm(0.8)) * 0.1 / 0.05)^2
    assert r.n == pytest.approx(24.730228928079054, rel=1e-13)
    assert r.n_topics == 25
    back = P.paired_t_power(r.n, -0.05, 0.1, alternative="less", method="normal")
    assert back == pytest.approx(0.8, abs=1e-12)
    s = P.paired_t(n=25, delta=-0.05, power=0.8, alternative="less", method="normal")
    # R: sqrt(25) * 0.05 / (qnorm(0.95) + qnorm(0.8))
    assert s.sigma == pytest.approx(0.10054394837005357, rel=1e-13)
    assert P.paired_t_power(25, -0.05, s.sigma, alternative="less",
                            method="normal") == pytest.approx(0.8, abs=1e-12)


@pytest.mark.parametrize("method", ["exact", "normal"])
def test_fewer_than_two_topics_is_refused_by_both_methods(method):
    with pytest.raises(DesignError, match=r"smallest n \(2\).*at least 2 topics"):
        P.paired_t(delta=10, sigma=0.1, power=0.8, method=method)


@pytest.mark.parametrize("kwargs,match", [
    ({"n": 1, "delta": 0.05, "sigma": 0.1}, "n must exceed 1"),
    ({"n": -1, "delta": 0.05, "sigma": 0.1}, "n must exceed 1"),
    ({"n": 20, "delta": np.nan, "sigma": 0.1}, "delta must be a finite number"),
    ({"n": 20, "delta": 0.05, "sigma": 0}, "sigma must be positive"),
    ({"n": 20, "delta": 0.05, "sigma": -0.1}, "sigma must be positive"),
    ({"n": "20", "delta": 0.05, "sigma": 0.1}, "n must be a finite number"),
    ({"n": 20, "delta": 0.05, "sigma": 0.1, "alpha": 1.5}, r"alpha must be in \(0, 1\)"),
    ({"n": 20, "delta": 0.05, "sigma": 0.1, "alpha": "x"}, "alpha must be a finite number"),
    ({"n": 20, "delta": 0.05, "sigma": 0.1, "alpha": None}, "alpha must be a finite number"),
])
def test_paired_t_power_checks_its_arguments(kwargs, match):
    # a value no argument may take is an ArgumentError; a sigma the data cannot have a DesignError
    error = ArgumentError if " must be a " in match or " must be in " in match else DesignError
    with pytest.raises(error, match=match):
        P.paired_t_power(**kwargs)


def test_paired_t_power_value_and_numpy_alpha():
    # R: power.t.test(n = 50, delta = 0.05, sd = 0.1, type = "paired", strict = TRUE)$power
    assert P.paired_t_power(50, 0.05, 0.1) == pytest.approx(0.93389758126152211, abs=1e-10)
    assert P.paired_t_power(np.int64(50), 0.05, 0.1, alpha=np.float64(0.05)) == \
        P.paired_t_power(50, 0.05, 0.1)


@pytest.mark.parametrize("call,match", [
    (lambda: P.paired_t(delta=0.05, sigma=0.1, power=0.8, alpha="x"), "alpha must be a finite"),
    (lambda: P.paired_t(delta=0.05, sigma=0.1, power=0.8, alpha=None), "alpha must be a finite"),
    (lambda: P.oneway_power(5, 20, 0.1, 0.2, alpha=1.5), r"alpha must be in \(0, 1\)"),
    (lambda: P.oneway_topics(5, 0.1, 0.2, alpha=0), r"alpha must be in \(0, 1\)"),
    (lambda: P.ci_half_width(20, 0.1, alpha=1.5), r"alpha must be in \(0, 1\)"),
    (lambda: P.ci_width_topics(0.02, 0.1, alpha=0), r"alpha must be in \(0, 1\)"),
    (lambda: P.ci_width_topics(float("nan"), 0.1), "half_width must be a finite number"),
    (lambda: P.ci_width_topics(0.02, 0), "sigma must be positive"),
    (lambda: P.ci_width_topics(1e-300, 0.1), "ask for a wider interval"),
])
def test_design_functions_check_alpha_and_ranges(call, match):
    error = ArgumentError if " must be a " in match or " must be in " in match else DesignError
    with pytest.raises(error, match=match):
        call()


def test_simulate_paired_t_checks_n_and_rng():
    w = pd.DataFrame({"a": [.2, .4, .5, .1], "b": [.3, .5, .7, .3], "c": [.1, .2, .5, .4]})
    f = irm.from_wide(w)
    with pytest.raises(ArgumentError, match="n must be a whole number >= 2; got 2.5"):
        P.simulate_paired_t(f, "a", "c", 2.5, n_trials=20, rng=1)
    with pytest.raises(ArgumentError, match="rng must be None or a whole number"):
        P.simulate_paired_t(f, "a", "c", 3, n_trials=20, rng="x")
    with pytest.raises(ArgumentError, match="n_trials must be a whole number >= 1"):
        P.simulate_paired_t(f, "a", "c", 3, n_trials=0, rng=1)
    s = P.simulate_paired_t(f, "a", "c", 3, deltas=[0.1], n_trials=20, rng=np.int64(1))
    assert s["trials"].tolist() == [20] and s["n"].tolist() == [3]


# ---------------------------------------------------------------------------- variability
_V = pd.DataFrame({"s": [0.3, 0.35, 0.3, 0.35, 0.32, 0.31],
                   "e": [0.0, 0.7, 0.0, 0.6, 0.9, 0.1]})


@pytest.mark.parametrize("alpha", [1.5, 0, 1, -0.1, float("nan"), "x", None, True])
def test_variability_functions_check_alpha(alpha):
    f = irm.from_wide(_V)
    with pytest.raises(ArgumentError, match="alpha"):
        irm.variability.compare(f, "e", "s", transform=None, alpha=alpha)
    with pytest.raises(ArgumentError, match="alpha"):
        irm.variability.tie_breaking(f, alpha=alpha, transform=None)
    with pytest.raises(ArgumentError, match="alpha"):
        irm.variability.error_rate(f, sizes=[3], n_trials=2, seed=1, alpha=alpha,
                                   transform=None)


def test_variability_interval_matches_r():
    r = irm.variability.compare(irm.from_wide(_V), "e", "s", transform=None,
                                alpha=np.float64(0.1))
    # R: var.test(e, s, conf.level = 0.9) with the vectors of _V
    assert r.statistic == pytest.approx(293.78881987577648, rel=1e-10)
    assert r.p == pytest.approx(7.2555611587699076e-06, rel=1e-8)
    assert r.ci_lower == pytest.approx(58.172213438601339, rel=1e-8)
    assert r.ci_upper == pytest.approx(1483.730213826236422, rel=1e-8)
    assert r.ci_lower < r.statistic < r.ci_upper


@pytest.mark.parametrize("test,statistic", [("f", 1.0), ("levene_mean", 0.0),
                                            ("levene_median", 0.0)])
def test_z_transform_of_two_systems_warns_that_it_erases_variability(test, statistic):
    f = irm.from_wide(_V)
    with pytest.warns(DataQualityWarning, match="exactly two systems.*erases all information"):
        r = irm.variability.compare(f, "e", "s", test, transform="z")
    # z_s = -z_e on every topic: no information, whatever the scores (not a rounding artefact)
    assert r.statistic == pytest.approx(statistic, abs=1e-12)
    assert r.p == pytest.approx(1.0, abs=1e-12)
    assert r.sd_a == pytest.approx(r.sd_b, rel=1e-14)
    with pytest.warns(DataQualityWarning, match="exactly two systems"):
        irm.variability.variability(f, "z")


def test_z_transform_of_three_systems_does_not_warn():
    w = _V.assign(m=[0.2, 0.5, 0.4, 0.3, 0.6, 0.2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataQualityWarning)
        r = irm.variability.compare(irm.from_wide(w), "e", "s", transform="z")
    x = w[["s", "e", "m"]].to_numpy()
    z = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, ddof=1, keepdims=True)
    assert r.statistic == pytest.approx(z[:, 1].var(ddof=1) / z[:, 0].var(ddof=1), rel=1e-12)
    assert r.statistic == pytest.approx(1.732, abs=1e-3)  # the z-scores keep information


# ---------------------------------------------------------------------------- Tukey, Dunnett
def _shifted_fit(b: np.ndarray, step: float, drop_first: bool = False):
    """score ~ topic + system on systems that are one topic profile plus a constant."""
    f = irm.from_wide(pd.DataFrame({"x": b, "y": b + step, "z": b + 2 * step}))
    if drop_first:
        f = f.iloc[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.errors.UnbalancedDesignWarning)
        return irm.anova("score ~ topic + system", f)


@pytest.mark.parametrize("b,step,drop_first", [
    (np.array([0.125, 0.25, 0.375, 0.5, 0.625]), 0.125, False),  # MS_error exactly 0
    (np.array([0.1, 0.25, 0.3, 0.45, 0.5]), 0.1, False),  # MS_error ~1.7e-33 (rounding)
    (np.array([0.1, 0.25, 0.3, 0.45, 0.5]), 0.1, True),  # unbalanced: se from the covariance
])
def test_perfect_fit_is_refused_by_tukey_and_dunnett(b, step, drop_first):
    fit = _shifted_fit(b, step, drop_first)
    assert fit.ms_error < 1e-30
    with pytest.raises(DesignError, match="residual variance is zero.*'significant'.*perfect fit"):
        fit.tukey()
    with pytest.raises(DesignError, match="residual variance is zero.*'significant'.*perfect fit"):
        fit.dunnett("x")


def test_zero_error_term_given_directly():
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.tukey_hsd([1.0, 2.0, 3.0], df_error=10, ms_error=0, n=3)
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.tukey_hsd([1.0, 2.0, 3.0], df_error=10, se_diff=0.0)
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.tukey_hsd([1.0, 2.0, 3.0], df_error=10, se_diff=1e-20)  # 1e-40 / Var(means) 2/3
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.tukey_hsd([1.0, 1.0, 1.0], df_error=10, ms_error=0, n=3)
    m = pd.Series({"base": 0.30, "a": 0.31, "b": 0.36})
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.dunnett(m, np.zeros((3, 3)), control="base", df=87)
    with pytest.raises(DesignError, match="residual variance is zero"):
        irm.dunnett(m, np.eye(3) * 1e-20, control="base", df=87)


def test_small_but_real_error_variance_is_tested():
    # MS_error 1e-9 against Var(means) 0.00667: 1.5e-7 of it, far above the 1e-12 tolerance
    hsd = irm.tukey_hsd([0.1, 0.2, 0.3], df_error=10, ms_error=1e-9, n=3)
    assert hsd.pairs["reject"].all()
    assert np.isfinite(hsd.pairs["q"]).all()
    assert hsd.pairs["q"].iloc[0] == pytest.approx(0.1 * np.sqrt(2) / np.sqrt(2e-9 / 3))
    m = pd.Series({"base": 0.30, "a": 0.31, "b": 0.36})
    res = irm.dunnett(m, np.eye(3) * 1e-9, control="base", df=87)
    assert res.table["reject"].all()
    assert res.table["se"].iloc[0] == pytest.approx(np.sqrt(2e-9))
    # equal means with a tiny error: nothing to reject, no error
    same = irm.tukey_hsd([1.0, 1.0, 1.0], df_error=10, ms_error=1e-30, n=3)
    assert same.pairs["q"].tolist() == [0.0, 0.0, 0.0] and not same.pairs["reject"].any()


def test_tukey_bad_arguments_raise_data_format_errors():
    with pytest.raises(DataFormatError, match=r"n must be one number or one per level \(3 levels\)"):
        irm.tukey_hsd([1, 2, 3], df_error=10, ms_error=1, n=[3, 3])
    with pytest.raises(DataFormatError, match="n must be positive and finite"):
        irm.tukey_hsd([1, 2, 3], df_error=10, ms_error=1, n=np.inf)
    with pytest.raises(DataFormatError, match="ms_error must be a finite number >= 0; got 'a'"):
        irm.tukey_hsd([1, 2, 3], df_error=10, ms_error="a", n=3)
    with pytest.raises(DataFormatError, match="means must be numbers"):
        irm.tukey_hsd({"a": "x", "b": 1.0}, df_error=10, ms_error=1, n=3)
    with pytest.raises(DataFormatError, match="means and cov must be numbers"):
        irm.dunnett(pd.Series({"a": 0.1, "b": 0.2}), "x", control="a", df=10)


@pytest.mark.parametrize("alpha", [True, "0.05", float("nan"), 1.0, 0.0])
def test_tukey_and_dunnett_refuse_bad_alpha(alpha):
    with pytest.raises(ArgumentError, match="alpha"):
        irm.tukey_hsd([1, 2, 3], df_error=10, ms_error=1, n=3, alpha=alpha)
    with pytest.raises(ArgumentError, match="alpha"):
        irm.dunnett(pd.Series({"a": 0.1, "b": 0.2}), np.eye(2), control="a", df=10, alpha=alpha)


@pytest.mark.parametrize("alpha", [np.float32(0.05), np.float64(0.05)])
def test_tukey_and_dunnett_accept_numpy_alpha(alpha):
    hsd = irm.tukey_hsd([1, 2, 3], df_error=10, ms_error=1, n=3, alpha=alpha)
    assert hsd.alpha == float(alpha)
    # R: qtukey(0.95, 3, 10); ptukey(sqrt(3), 3, 10, lower.tail = FALSE)
    assert hsd.critical_value == pytest.approx(3.8767767491915595, abs=1e-6)
    assert hsd.pairs["p_adj"].iloc[0] == pytest.approx(0.46624212082126504, abs=1e-8)
    m = pd.Series({"base": 0.30, "a": 0.31, "b": 0.36, "c": 0.25})
    res = irm.dunnett(m, np.eye(4) * 0.01 / 30, control="base", df=87, alpha=alpha)
    ref = irm.dunnett(m, np.eye(4) * 0.01 / 30, control="base", df=87, alpha=0.05)
    assert res.critical_value == pytest.approx(ref.critical_value, abs=1e-6)
    assert res.table["p_adj"].tolist() == ref.table["p_adj"].tolist()


# ---------------------------------------------------------------------------- rank
def test_kendall_tau_non_numeric_score():
    with pytest.raises(DataFormatError, match=r"a has non-numeric scores \(a='x'\)"):
        kendall_tau({"a": "x", "b": 2}, {"a": 4, "b": 3})
    with pytest.raises(DataFormatError, match="b has non-numeric scores"):
        tau_ap({"a": 1.0, "b": 2.0}, {"a": [1], "b": 3})
    # R: cor(c(0.3, 0.25, 0.2, 0.1), c(0.5, 0.5, 0.4, 0.45), method = "kendall")
    assert kendall_tau({"s1": 0.3, "s2": 0.25, "s3": 0.2, "s4": 0.1},
                       {"s1": 0.5, "s2": 0.5, "s3": 0.4, "s4": 0.45}) == \
        pytest.approx(0.54772255750516607, abs=1e-14)


@pytest.mark.parametrize("a,b", [
    ({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 1.0, "b": 2.0, "c": 3.0}),
    ({"a": 3.0, "b": 2.0, "c": 1.0}, {"a": 0.5, "b": 0.5, "c": 0.5}),
])
def test_tau_ap_b_all_tied_warns_like_kendall(a, b):
    with pytest.warns(DataQualityWarning, match="same score; tau_AP,b is undefined"):
        assert np.isnan(tau_ap(a, b, ties="b"))
    with pytest.warns(DataQualityWarning, match="same score; Kendall's tau is undefined"):
        assert np.isnan(kendall_tau(a, b))
    # one tie group only: still defined, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataQualityWarning)
        got = tau_ap({"a": 3.0, "b": 2.0, "c": 1.0}, {"a": 2.0, "b": 2.0, "c": 1.0}, ties="b")
    assert np.isfinite(got)


def test_error_rate_checks_seed_and_sizes() -> None:
    import irmodels as irm
    from irmodels.errors import ArgumentError

    rng = np.random.default_rng(0)
    d = irm.from_wide(pd.DataFrame(rng.uniform(size=(30, 3)), columns=["a", "b", "c"]))
    with pytest.raises(ArgumentError, match=r"seed must be None or a whole number >= 0; got -1"):
        irm.variability.error_rate(d, seed=-1)  # was a raw numpy ValueError
    with pytest.raises(ArgumentError, match=r"sizes must be a non-empty list of whole numbers"):
        irm.variability.error_rate(d, sizes=[5.5], seed=0)  # was truncated to 5
