"""Residual / parametric bootstrap of system effects: SEs against the analytic SEs within Monte
Carlo error, the closed form against the refit path, seeds and backends, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.studies.bootstrap import EFFECT_COLUMNS, PAIR_COLUMNS


@pytest.fixture(scope="module")
def adhoc8():
    return irm.datasets.load("adhoc8", "AP")


def _subset(data, systems):
    sub = data[data["system"].isin(systems)].copy()
    sub["system"] = sub["system"].cat.remove_unused_categories()
    return sub.reset_index(drop=True)


def test_bootstrap_se_matches_analytic_se_on_balanced_md1(adhoc8):
    """MD1 on TREC-8 (50 x 129): E[bootstrap SE] = sqrt(MS_error / T) with rescaled residuals.

    Monte Carlo bound: the SD of a bootstrap SE estimated from B replicates of a near-normal
    mean is SE / sqrt(2 (B - 1)), i.e. 2.24% for B = 1000. Each system's ratio must lie within
    4.5 of those (10%); the average of the 129 nearly independent ratios within 5 * 2.24% /
    sqrt(129) ~ 1%.
    """
    fit = irm.anova("MD1", adhoc8)
    boot = irm.studies.bootstrap_effects(fit, n_resamples=1000, seed=11)
    analytic = math.sqrt(fit.ms_error / 50)
    np.testing.assert_allclose(boot.effects["se_model"], analytic, rtol=1e-12)
    ratio = boot.effects["se"] / analytic
    assert abs(ratio.mean() - 1) < 0.01
    assert (ratio - 1).abs().max() < 0.10
    # the effect SE is sqrt((R - 1) / R) times the mean's (centring on the mean of 129 means)
    eff_ratio = boot.effects["effect_se"] / (analytic * math.sqrt(128 / 129))
    assert abs(eff_ratio.mean() - 1) < 0.01
    # the percentile interval covers the observed mean, and the pairs are all there
    e = boot.effects
    assert ((e["lower"] < e["mean"]) & (e["mean"] < e["upper"])).all()
    assert len(boot.pairs) == 129 * 128 // 2
    assert tuple(boot.pairs.columns) == PAIR_COLUMNS
    assert tuple(boot.effects.columns) == EFFECT_COLUMNS


def test_without_rescaling_the_se_shrinks_by_sqrt_df_over_n(adhoc8):
    fit = irm.anova("MD1", _subset(adhoc8, [f"run{i}" for i in range(1, 21)]))
    a = irm.studies.bootstrap_effects(fit, n_resamples=400, seed=3)
    b = irm.studies.bootstrap_effects(fit, n_resamples=400, seed=3, rescale=False)
    # same draws: the replicated deviations scale exactly by sqrt(df / N)
    factor = math.sqrt(fit.df_resid / fit.n_obs)
    np.testing.assert_allclose(b.effects["se"], a.effects["se"] * factor, rtol=1e-10)


def test_closed_form_equals_refit_path(adhoc8):
    fit = irm.anova("MD1", _subset(adhoc8, ["run1", "run2", "run3", "run4", "run5"]))
    a = irm.studies.bootstrap_effects(fit, n_resamples=60, seed=2)
    b = irm.studies.bootstrap_effects(fit, n_resamples=60, seed=2, _refit=True)
    np.testing.assert_allclose(a.replicates.to_numpy(), b.replicates.to_numpy(), atol=1e-12)


def test_order_rate_by_hand(adhoc8):
    fit = irm.anova("MD1", _subset(adhoc8, ["run1", "run2", "run3", "run4"]))
    boot = irm.studies.bootstrap_effects(fit, n_resamples=120, seed=5)
    M = boot.replicates.to_numpy()
    m = boot.effects["mean"].to_numpy()
    row = boot.pairs.iloc[4]  # run2 vs run4
    assert (row["a"], row["b"]) == ("run2", "run4")
    expected = np.mean(np.sign(M[:, 1] - M[:, 3]) == np.sign(m[1] - m[3]))
    assert row["order_rate"] == pytest.approx(expected)
    assert row["diff_se"] == pytest.approx(np.std(M[:, 1] - M[:, 3], ddof=1))


def test_reproducible_on_processes(adhoc8):
    fit = irm.anova("MD1", _subset(adhoc8, [f"run{i}" for i in range(1, 11)]))
    a = irm.studies.bootstrap_effects(fit, n_resamples=120, seed=9)
    b = irm.studies.bootstrap_effects(fit, n_resamples=120, seed=9, backend="processes", n_workers=2)
    pd.testing.assert_frame_equal(a.effects, b.effects)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)


def test_unbalanced_refit(adhoc8):
    sub = _subset(adhoc8, ["run1", "run2", "run3"]).drop(index=[0, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        fit = irm.anova("MD1", sub)
    assert not fit.balanced
    boot = irm.studies.bootstrap_effects(fit, n_resamples=40, seed=1)
    assert boot.effects["se"].between(0.5 * boot.effects["se_model"],
                                      2 * boot.effects["se_model"]).all()


@pytest.mark.parametrize("drop", [[], [0, 4]], ids=["balanced", "unbalanced"])
def test_residual_bootstrap_reads_only_the_fit_vocabulary(adhoc8, drop):
    """Issue 26 item 2: the residual bootstrap of an ANOVA uses the FittedModel vocabulary
    (data, spec, fitted(), residuals(), df_resid, nobs, marginal means and their covariance),
    not the fit's private codes and levels: with those scrambled the replicates are the same."""
    sub = _subset(adhoc8, ["run1", "run2", "run3"]).drop(index=drop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)  # unbalanced: irm.anova says so
        fit = irm.anova("MD1", sub)
        ref = irm.studies.bootstrap_effects(fit, n_resamples=60, seed=2)
        fitted, resid = fit.fitted(), fit.residuals()
        means = fit.marginal_means("system")
        cov = fit.marginal_means_cov("system")
    assert fit.balanced is (not drop)
    object.__setattr__(fit, "_codes", {k: v[::-1].copy() for k, v in fit._codes.items()})
    object.__setattr__(fit, "_levels", {k: v[::-1] for k, v in fit._levels.items()})
    object.__setattr__(fit, "balanced", not fit.balanced)
    for name, value in (("fitted", fitted), ("residuals", resid)):  # the vocabulary kept
        object.__setattr__(fit, name, lambda value=value: value)
    object.__setattr__(fit, "marginal_means", lambda factor="system": means)
    object.__setattr__(fit, "marginal_means_cov", lambda factor="system": cov)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        got = irm.studies.bootstrap_effects(fit, n_resamples=60, seed=2)
    np.testing.assert_array_equal(got.replicates.to_numpy(), ref.replicates.to_numpy())
    pd.testing.assert_frame_equal(got.effects, ref.effects)


def test_mixed_parametric_bootstrap_matches_model_se(adhoc8):
    """score ~ system + (1|topic): parametric bootstrap SEs of the differences of marginal means
    against the model's (sqrt(2 sigma^2 / T)). B = 400: SD of the estimate 3.5%; 5 pairs
    (correlated): bound 15% each, the average within 10%."""
    sub = _subset(adhoc8, ["run1", "run2", "run3", "run4"])
    fit = irm.mixed("score ~ system + (1|topic)", sub)
    boot = irm.studies.bootstrap_effects(fit, n_resamples=400, seed=4)
    assert boot.kind == "parametric"
    cov = fit.marginal_means_cov("system").to_numpy()
    np.testing.assert_allclose(boot.effects["se_model"], np.sqrt(np.diag(cov)))
    sd_diff = np.sqrt(2 * fit.residual_variance / 50)
    ratio = boot.pairs["diff_se"] / sd_diff
    assert (ratio - 1).abs().max() < 0.15 and abs(ratio.mean() - 1) < 0.10
    np.testing.assert_allclose(boot.effects["mean"], fit.marginal_means("system"))


def test_display_and_errors(adhoc8):
    fit = irm.anova("MD1", _subset(adhoc8, ["run1", "run2", "run3"]))
    boot = irm.studies.bootstrap_effects(fit, n_resamples=20)
    assert repr(boot) == ("<BootstrapEffects kind='residual', factor='system', levels=3, "
                          "n_resamples=20>")
    assert "Least stable pairs" in boot.summary() and "\\toprule" in boot.to_latex()
    assert list(boot.to_frame().columns) == ["system", *EFFECT_COLUMNS]
    assert len(boot.plot().axes) == 1
    with pytest.raises(irm.DesignError, match="fitted model"):
        irm.studies.bootstrap_effects(adhoc8)
    with pytest.raises(irm.ArgumentError, match="n_resamples"):
        irm.studies.bootstrap_effects(fit, n_resamples=1)
    with pytest.raises(irm.DesignError, match="no factor|not a main effect"):
        irm.studies.bootstrap_effects(fit, factor="shard")


def test_tied_means_have_no_order(adhoc8):
    sub = _subset(adhoc8, ["run1", "run2", "run3"])
    twin = sub[sub["system"] == "run1"].assign(system="run1b")
    data = irm.frame(pd.concat([sub, twin], ignore_index=True)[["topic", "system", "score"]])
    boot = irm.studies.bootstrap_effects(irm.anova("MD1", data), n_resamples=50)
    pair = boot.pairs[(boot.pairs["a"] == "run1") & (boot.pairs["b"] == "run1b")]
    assert pair["diff"].iloc[0] == 0 and np.isnan(pair["order_rate"].iloc[0])
    assert boot.pairs["order_rate"].notna().sum() == len(boot.pairs) - 1


def test_shard_models_md3_and_md6(rng):
    """Balanced replicated design (20 topics x 6 systems x 3 shards): the closed form applies to
    every MD model and the bootstrap SE of a system mean estimates sqrt(MS_error / (T S)).
    B = 800: Monte Carlo SD 2.5% per system; bound 12% each, 6% on the average of 6."""
    T, R, S = 20, 6, 3
    topic = rng.normal(0, 0.2, T)[:, None, None]
    system = np.linspace(0, 0.1, R)[None, :, None]
    shard = rng.normal(0, 0.05, S)[None, None, :]
    inter = rng.normal(0, 0.05, (T, R, 1))
    y = 0.4 + topic + system + shard + inter + rng.normal(0, 0.08, (T, R, S))
    t, s, k = np.meshgrid(np.arange(T), np.arange(R), np.arange(S), indexing="ij")
    data = irm.frame(pd.DataFrame({"topic": t.ravel().astype(str),
                                   "system": [f"s{j}" for j in s.ravel()],
                                   "shard": k.ravel().astype(str), "score": y.ravel()}))
    for model in ("MD3", "MD6"):
        fit = irm.anova(model, data)
        boot = irm.studies.bootstrap_effects(fit, n_resamples=800, seed=7)
        analytic = math.sqrt(fit.ms_error / (T * S))
        np.testing.assert_allclose(boot.effects["se_model"], analytic, rtol=1e-12)
        ratio = boot.effects["se"] / analytic
        assert (ratio - 1).abs().max() < 0.12 and abs(ratio.mean() - 1) < 0.06, model
        np.testing.assert_allclose(boot.effects["mean"], fit.marginal_means("system"))


def test_heteroscedastic_mixed_fit_is_refused(adhoc8):
    sub = _subset(adhoc8, ["run1", "run2", "run3"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        fit = irm.mixed("score ~ system + (1|topic)", sub, residual="system")
    with pytest.raises(irm.DesignError, match="one residual variance"):
        irm.studies.bootstrap_effects(fit, n_resamples=10)


@pytest.mark.parametrize("case", ["closed", "refit", "mixed"])
def test_invariant_to_the_row_order(adhoc8, case):
    """The draws go to the observations in the design's order, not the frame's: shuffled rows
    give the same intervals (they moved by up to 0.06 before)."""
    sub = _subset(adhoc8, ["run1", "run2", "run3", "run4", "run5"])
    if case == "refit":
        sub = sub.drop(index=[0, 7]).reset_index(drop=True)
    shuffled = sub.sample(frac=1.0, random_state=3).reset_index(drop=True)

    def boot(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", irm.IRModelsWarning)
            fit = (irm.mixed("score ~ system + (1|topic)", data) if case == "mixed"
                   else irm.anova("MD1", data))
            return irm.studies.bootstrap_effects(fit, n_resamples=30, seed=2)

    a, b = boot(sub), boot(shuffled)
    tol = 1e-9 if case == "mixed" else 1e-12  # refits: optimiser and summation order
    pd.testing.assert_frame_equal(a.effects, b.effects, rtol=tol, atol=tol)
    pd.testing.assert_frame_equal(a.pairs, b.pairs, rtol=tol, atol=tol)


def test_result_attribute_n_boot_is_a_deprecated_name(adhoc8):
    """The result's resample count is ``n_resamples``; ``n_boot`` warns for one release."""
    fit = irm.anova("MD1", _subset(adhoc8, ["run1", "run2", "run3"]))
    boot = irm.studies.bootstrap_effects(fit, n_resamples=20, seed=1)
    assert boot.n_resamples == 20
    with pytest.warns(FutureWarning, match="n_boot is deprecated; use n_resamples"):
        assert boot.n_boot == 20
