"""Inference on random-slope fits (issue 27 item 2): confint (profile, Wald, bootstrap), type III
F tests with Satterthwaite and Kenward-Roger df (interactions of factors), compare_models with a
slope fit, and the G-study refusal; against lme4, lmerTest and pbkrtest
(tests/reference/lme4_slopes.R -> lme4_slopes_inference.json).

Tolerances. Profile bounds: 1e-4 relative (lme4 interpolates its profile with splines; here
each bound is a root to 1e-8), 1e-4 absolute for correlations. Wald bounds: 1e-8 relative or
1e-6 of the interval's width (measured: 1.6e-8 relative on sleepstudy, 5e-7 on the kb07-shaped
design, whose fixture optimum is R's to about 1e-7; the width is 1.96 SE and the SEs agree with
lme4's to about 1e-7). Type III F tests: F 1e-6 relative (1e-6 absolute below 1: a contrast
near 0 carries the estimates' 1e-8 agreement as a larger share), denominator df 1e-4
(Satterthwaite's is a numerical derivative in both programs; Kenward-Roger's is closed form,
held to the same), p 1e-6 relative or 1e-7 absolute. LRT: 1e-6.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, ModelError
from irmodels.models._lmm import ReTerm, SlopeMixedResult, fit_lmm

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "lme4_slopes_inference.json").read_text())


def _load(name: str) -> pd.DataFrame:
    d = pd.read_csv(REF / "data" / "lme4" / f"{name}.csv",
                    dtype={"Subject": str} if name == "sleepstudy" else None)
    if name == "sleepstudy":
        d["wk"] = (d["Days"] >= 5).astype(int)  # as lme4_slopes.R
    if name == "kb07sim":  # the derived factors of lme4_slopes.R's inference block
        d["S"] = np.where(d["spkr"] < 0, "new", "old")
        d["P"] = np.where(d["prec"] < 0, "break", "maintain")
    return d


DATA = {name: _load(name) for name in ("sleepstudy", "kb07sim", "irslopes")}


def _fit(data: str, formula: str, method: str = "REML") -> SlopeMixedResult:
    fit = irm.mixed(formula, DATA[data], method=method)
    assert isinstance(fit, SlopeMixedResult)
    return fit


def _num(values: list) -> np.ndarray:
    return np.array([np.nan if v in (None, "NA") else v for v in np.atleast_1d(values)], float)


def _id(e: dict) -> str:
    return f"{e['data']}-{e['formula'].split(' ~ ')[1]}-{e.get('method', 'REML')}"


CI = FIXTURE["confint"]
PROFILED = [e for e in CI if np.isfinite(_num(e["profile_lower"])).any()]


@pytest.fixture(scope="module", params=CI, ids=_id)
def ci_case(request: pytest.FixtureRequest) -> tuple[dict, SlopeMixedResult]:
    e = request.param
    return e, _fit(e["data"], e["formula"], e["method"])


def test_wald_intervals_equal_lme4(ci_case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = ci_case
    ci = fit.confint("wald")
    assert list(ci.index) == ref["parameter"]  # lme4's names and order (oldNames = FALSE)
    assert list(ci.columns) == ["lower", "upper"] and ci.index.name == "parameter"
    lo, hi = _num(ref["wald_lower"]), _num(ref["wald_upper"])
    np.testing.assert_array_equal(np.isnan(ci["lower"]), np.isnan(lo))
    ok = np.isfinite(lo)
    assert ok.sum() == len(fit.fixed_estimates)
    width = (hi - lo)[ok]  # the SEs agree with lme4's to about 1e-7: so do the widths
    np.testing.assert_allclose(ci["lower"][ok], lo[ok], rtol=1e-8, atol=1e-6 * width.min())
    np.testing.assert_allclose(ci["upper"][ok], hi[ok], rtol=1e-8, atol=1e-6 * width.min())
    np.testing.assert_allclose((ci["upper"] - ci["lower"])[ok], width, rtol=1e-6)


@pytest.mark.parametrize("ref", PROFILED, ids=_id)
def test_profile_intervals_equal_lme4(ref: dict) -> None:
    fit = _fit(ref["data"], ref["formula"], ref["method"])
    ci = fit.confint("profile")
    assert list(ci.index) == ref["parameter"]
    for col, key in (("lower", "profile_lower"), ("upper", "profile_upper")):
        r = _num(ref[key])
        is_cor = np.array([p.startswith("cor_") for p in ref["parameter"]])
        np.testing.assert_allclose(ci[col][~is_cor], r[~is_cor], rtol=1e-4)
        np.testing.assert_allclose(ci[col][is_cor], r[is_cor], atol=1e-4)


def test_profile_of_a_subset_and_the_level() -> None:
    """parm= computes only the rows asked for (the same numbers), and a lower level gives a
    narrower interval inside the 95% one."""
    ref = next(e for e in PROFILED if e["method"] == "ML" and "||" not in e["formula"])
    fit = _fit(ref["data"], ref["formula"], "ML")
    part = fit.confint(parm=["sd_Days|Subject", "Days"])
    assert list(part.index) == ["sd_Days|Subject", "Days"]
    k = [ref["parameter"].index(p) for p in part.index]
    np.testing.assert_allclose(part["lower"], _num(ref["profile_lower"])[k], rtol=1e-4)
    np.testing.assert_allclose(part["upper"], _num(ref["profile_upper"])[k], rtol=1e-4)
    narrow = fit.confint(parm="Days", level=0.8).loc["Days"]
    assert part.loc["Days", "lower"] < narrow["lower"] < fit.fixed.loc["Days", "estimate"] \
        < narrow["upper"] < part.loc["Days", "upper"]


def test_bootstrap_is_seeded_and_agrees_with_the_profile() -> None:
    """Parametric bootstrap (bootMer's scheme): the same seed gives the same intervals; each
    percentile interval holds the estimate and lies near the profile interval (100 replicates:
    the percentile limits move by about a tenth of the width between seeds; the bootstrap
    re-estimates by REML, the profile is lme4's ML one, so SDs may sit lower)."""
    from irmodels.models._lmm_confint import VarParams

    ref = next(e for e in PROFILED if e["method"] == "REML" and "||" not in e["formula"])
    fit = _fit(ref["data"], ref["formula"], "REML")
    small = fit.confint("bootstrap", n_resamples=20, seed=7)
    pd.testing.assert_frame_equal(small, fit.confint("bootstrap", n_resamples=20, seed=7))
    assert not np.allclose(small.to_numpy(), fit.confint("bootstrap", n_resamples=20,
                                                         seed=8).to_numpy())
    boot = fit.confint("bootstrap", n_resamples=100, seed=7)
    assert list(boot.index) == ref["parameter"]
    prof = pd.DataFrame({"lower": _num(ref["profile_lower"]),
                         "upper": _num(ref["profile_upper"])}, index=ref["parameter"])
    est = np.concatenate([VarParams(fit._design, fit._dev).from_theta(fit.theta, fit.sigma),
                          fit.fixed_estimates.to_numpy()])
    width = prof["upper"] - prof["lower"]
    for p, e in zip(boot.index, est):
        assert boot.loc[p, "lower"] < e < boot.loc[p, "upper"], p
        if p.startswith("cor_"):  # bootstrap correlations pile up at 1 (as bootMer's)
            assert -1 <= boot.loc[p, "lower"] and boot.loc[p, "upper"] <= 1
            continue
        tol = 0.3 if p.startswith("sd_") else 0.15  # REML draws against the ML profile
        assert abs(boot.loc[p, "lower"] - prof.loc[p, "lower"]) < tol * width[p], p
        assert abs(boot.loc[p, "upper"] - prof.loc[p, "upper"]) < tol * width[p], p


def test_confint_refuses_bad_arguments() -> None:
    fit = _fit("sleepstudy", "Reaction ~ Days + (Days | Subject)")
    with pytest.raises(ArgumentError, match="did you mean 'profile'"):
        fit.confint("profil")
    with pytest.raises(ArgumentError, match="level"):
        fit.confint("wald", level=1.5)
    with pytest.raises(ArgumentError, match="n_resamples"):
        fit.confint("bootstrap", n_resamples=1)
    with pytest.raises(DataFormatError, match="sd_Days\\|Subject"):
        fit.confint("wald", parm=["sd_days|Subject"])


# --------------------------------------------------------------------------------------------
# type III F tests


@pytest.mark.parametrize("ref", FIXTURE["anova"], ids=_id)
@pytest.mark.parametrize("ddf", ["satterthwaite", "kenward-roger"])
def test_type3_anova_equals_lmertest(ref: dict, ddf: str) -> None:
    fit = _fit(ref["data"], ref["formula_irm"])
    assert fit.loglik == pytest.approx(ref["logLik"], rel=1e-8)
    a = fit.anova(ddf=ddf)
    r = {k: _num(v) for k, v in ref["satterthwaite" if ddf == "satterthwaite"
                                     else "kenward_roger"].items()}
    names = [t.replace("factor(wk)", "wk") for t in np.atleast_1d(ref["term"])]
    assert list(a.index) == names
    np.testing.assert_array_equal(a["num_df"], r["num_df"])
    # F to 1e-6 relative, or 1e-6 absolute when F is small (F < 1: the estimates of the
    # contrast sit near 0, where their 1e-8 relative agreement is a larger share of L beta)
    np.testing.assert_allclose(a["F"], r["F"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a["den_df"], r["den_df"], rtol=1e-4)
    np.testing.assert_allclose(a["p"], r["p"], rtol=1e-6, atol=1e-7)


def test_kenward_roger_of_the_general_engine_equals_the_intercept_engine() -> None:
    """On an intercept-only model (unbalanced, so that the adjustment is not trivial), the
    covariance-element KR of the slope engine equals MixedResult's variance-component KR."""
    d = DATA["irslopes"].iloc[np.random.default_rng(3).permutation(640)[:500]]
    formula = "score ~ system * shard + (1|topic) + (1|topic:system)"
    ref = irm.mixed(formula, d).anova(ddf="kenward-roger").table
    gen = fit_lmm(formula, d, terms=(ReTerm(("topic",)), ReTerm(("topic", "system"))))
    got = gen.anova(ddf="kenward-roger").table
    np.testing.assert_allclose(got["F"], ref["F"], rtol=1e-6)
    np.testing.assert_allclose(got["den_df"], ref["den_df"], rtol=1e-6)
    assert (got["den_df"] != np.round(got["den_df"])).all()  # not a balanced-design integer


def test_kenward_roger_f_scaling_is_continuous_at_df_4() -> None:
    """pbkrtest leaves F unscaled only where df2 - 2 is about 0; near df2 = 4 the scaled F is
    continuous (a guard on df2 - 4 made it jump to the unscaled Wald F / q)."""
    from scipy import optimize

    from irmodels.models._mixed_anova import kenward_roger_f

    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    Phi = A @ A.T + np.eye(3)
    PP = [-(B @ B.T) for B in rng.normal(size=(2, 3, 3))]
    W0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    L = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -1.0]])
    beta = np.array([1.0, 2.0, 3.0])

    def at(s: float) -> tuple[float, int, float]:
        return kenward_roger_f(L, beta, Phi, Phi, PP, s * W0)

    s_out = optimize.brentq(lambda s: at(s)[2] - 4.02, 1e-4, 0.05)
    s_in = optimize.brentq(lambda s: at(s)[2] - 4.005, 1e-4, 0.05)
    unscaled = at(1e-9)[0]  # W -> 0: no adjustment, F = Wald / q
    assert at(s_in)[0] == pytest.approx(at(s_out)[0], rel=1e-3)
    assert abs(at(s_in)[0] / unscaled - 1) > 0.02


def test_contrast_df_kenward_roger_equals_emmeans() -> None:
    """contrast_df(ddf="kenward-roger") of the system means and their pairs equals emmeans'
    lmer.df = "kenward-roger" (pbkrtest's Lb_ddf) on the IR design made unbalanced."""
    ref = FIXTURE["emmeans_kr"]
    d = DATA["irslopes"].iloc[[i for i in range(len(DATA["irslopes"])) if i % 7 != 0]]
    fit = irm.mixed(ref["formula"], d)
    assert fit.loglik == pytest.approx(ref["logLik"], rel=1e-8)
    mm = fit.marginal_means("system")
    assert [str(v) for v in mm.index] == ref["level"]
    np.testing.assert_allclose(mm, ref["emmean"], rtol=1e-7)
    k = len(mm)
    np.testing.assert_allclose(fit.contrast_df(np.eye(k), ddf="kenward-roger"), ref["df"],
                               rtol=1e-4)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    D = np.zeros((len(pairs), k))
    for r, (i, j) in enumerate(pairs):
        D[r, i], D[r, j] = 1.0, -1.0
    assert [f"{mm.index[i]} - {mm.index[j]}" for i, j in pairs] == ref["contrast"]
    kr = fit.contrast_df(D, ddf="kenward-roger")
    np.testing.assert_allclose(kr, ref["pair_df"], rtol=1e-4)
    assert not np.allclose(kr, np.round(kr))  # unbalanced: not the balanced design's integers
    assert not np.allclose(kr, fit.contrast_df(D))  # not Satterthwaite's either
    with pytest.raises(ArgumentError, match="did you mean"):
        fit.contrast_df(D, ddf="kenwardroger")


def test_anova_arguments() -> None:
    fit = _fit("sleepstudy", "Reaction ~ Days + (Days | Subject)", "ML")
    with pytest.raises(ModelError, match="REML"):
        fit.anova(ddf="kenward-roger")
    with pytest.raises(ArgumentError, match="did you mean 'kenward-roger'"):
        fit.anova(ddf="kenward-rogers")
    with pytest.raises(ArgumentError, match="type=3"):
        fit.anova(type=2)
    assert "Kenward-Roger" in _fit("sleepstudy", "Reaction ~ Days + (Days | Subject)").anova(
        ddf="kenward-roger").summary()


# --------------------------------------------------------------------------------------------
# compare_models and the G-study


@pytest.mark.parametrize("ref", FIXTURE["compare"], ids=lambda r: " vs ".join(r["formulas"]))
def test_compare_models_with_slope_fits_equals_lme4(ref: dict) -> None:
    """anova(m1, m2) of REML fits: both refitted by ML (lme4's rule), Chisq, Df and p."""
    fits = [irm.mixed(f, DATA["sleepstudy"]) for f in ref["formulas"]]
    table = irm.compare_models(*fits)
    np.testing.assert_array_equal(table["npar"], ref["npar"])
    np.testing.assert_allclose(table["loglik"], ref["logLik"], rtol=1e-8)
    np.testing.assert_allclose(table["aic"], ref["AIC"], rtol=1e-8)
    np.testing.assert_allclose(table["statistic"].iloc[1], _num(ref["Chisq"])[1], rtol=1e-6)
    assert table["df"].iloc[1] == _num(ref["Df"])[1]
    np.testing.assert_allclose(table["p"].iloc[1], _num(ref["p"])[1], rtol=1e-6)
    assert set(table["likelihood"]) == {"ML (refitted)"}


def test_gstudy_of_a_slope_fit_is_refused_with_the_way_out() -> None:
    fit = _fit("irslopes", "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)")
    for call in (lambda: irm.gstudy(fit), fit.gstudy):
        with pytest.raises(ModelError) as err:
            call()
        msg = str(err.value)
        assert "constant over the design" in msg and "topic: shardB" in msg
        assert "(1|topic)" in msg and "variance_components()" in msg
    with warnings.catch_warnings():  # the intercept model it points to has its G-study
        warnings.simplefilter("ignore")
        gs = irm.gstudy(irm.mixed("score ~ (1|system) + (1|topic)", DATA["irslopes"]))
    assert 0 < gs.components.loc["system", "share"] < 1
