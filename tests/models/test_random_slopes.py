"""Random slopes (issue 27): the general LMM engine (irmodels/models/_lmm.py) against lme4 and
lmerTest (tests/reference/lme4_slopes.R -> lme4_slopes.json), and its properties.

Tolerances. The fixture's optimum is lme4's (bobyqa to rhoend 1e-12, Nelder-Mead kept if
better); the deviance is flat at the optimum, so R's theta (and ours) is determined to about
1e-7 relative while the log-likelihood agrees to 1e-11. Quantities that move with theta at
first order (the SDs, BLUPs, predictions with random effects) are compared at 1e-6 relative to
their scale; the log-likelihood at 1e-8 relative, fixed effects and SEs at 1e-6, lmerTest's
Satterthwaite df (itself a numerical derivative) at 1e-4, fixed-only predictions at 1e-8.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, DataFormatError, DesignError, ModelError
from irmodels.formula.spec import RandomTerm
from irmodels.models._lmm import ProfiledDeviance, ReTerm, SlopeMixedResult, fit_lmm, lmm_design

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "lme4_slopes.json").read_text())
FITS = FIXTURE["fits"]
DATA_TYPES = {"sleepstudy": {"Subject": str}, "kb07sim": {}, "irslopes": {}}
#: the formula grammar reads slope terms (helper T's grammar; explicit terms otherwise)
GRAMMAR = "effects" in getattr(RandomTerm, "__dataclass_fields__", {})
#: the random terms of each fixture formula, for the engine driven without the grammar
TERMS = {
    "(Days | Subject)": (ReTerm(("Subject",), True, ("Days",)),),
    "(Days || Subject)": (ReTerm(("Subject",)), ReTerm(("Subject",), False, ("Days",))),
    "(1 + load | subj) + (1 + load | item)": (ReTerm(("subj",), True, ("load",)),
                                              ReTerm(("item",), True, ("load",))),
    "(1 + shard | topic) + (1 | topic:system)": (ReTerm(("topic",), True, ("shard",)),
                                                 ReTerm(("topic", "system"))),
    "(1 + shard_c | topic) + (1 | topic:system)": (ReTerm(("topic",), True, ("shard_c",)),
                                                   ReTerm(("topic", "system"))),
    "(0 + shard | topic) + (1 | topic:system)": (ReTerm(("topic",), False, ("shard",)),
                                                 ReTerm(("topic", "system"))),
}


def _load(name: str) -> pd.DataFrame:
    return pd.read_csv(REF / "data" / "lme4" / f"{name}.csv", dtype=DATA_TYPES[name])


DATA = {name: _load(name) for name in DATA_TYPES}
DATA["sleepstudy"]["wk"] = (DATA["sleepstudy"]["Days"] >= 5).astype(int)  # as lme4_slopes.R
#: R's names of effect columns where irmodels' differ (R's factor(wk) is irmodels' C(wk))
R_NAMES = {"factor(wk)": "wk"}


def _r(name: str) -> str:
    for a, b in R_NAMES.items():
        name = name.replace(a, b)
    return name


KB07 = next(f for f in FITS if f["data"] == "kb07sim" and f["method"] == "REML")


def _id(f: dict) -> str:
    return f"{f['data']}-{f['formula_irm'].split(' ~ ')[1]}-{f['method']}"


#: fits of the fixture entries, shared by the tests of this module (a result is immutable);
#: tests that must fit afresh (another solver) call _fit(entry, cached=False)
_FITS: dict[str, SlopeMixedResult] = {}


def _fit(entry: dict, cached: bool = True) -> SlopeMixedResult:
    if cached:
        key = _id(entry)
        if key not in _FITS:
            with warnings.catch_warnings():  # as the case fixture: no fixture is singular
                warnings.simplefilter("error", BoundaryFitWarning)
                _FITS[key] = _fit(entry, cached=False)
        return _FITS[key]
    data = DATA[entry["data"]]
    if GRAMMAR:
        fit = irm.mixed(entry["formula_irm"], data, method=entry["method"])
        assert isinstance(fit, SlopeMixedResult)
        return fit
    lhs, rhs = entry["formula"].split(" ~ ")
    fixed, _, rand = rhs.partition(" + (")
    if "(" + rand not in TERMS:
        pytest.skip("an expression or C() in a slope needs the formula grammar")
    terms = TERMS["(" + rand]
    base = f"{lhs} ~ {fixed} + (1|{terms[0].name})"
    return fit_lmm(base, data, method=entry["method"], terms=terms)


@pytest.fixture(scope="module", params=FITS, ids=_id)
def case(request: pytest.FixtureRequest) -> tuple[dict, SlopeMixedResult]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundaryFitWarning)  # none of the fixtures is singular
        return request.param, _fit(request.param)


def test_loglik_and_singularity(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    assert fit.loglik == pytest.approx(ref["logLik"], rel=1e-8)
    assert fit.boundary is ref["singular"] is False
    assert fit.n_obs == ref["nobs"]
    assert fit.sigma == pytest.approx(ref["sigma"], rel=1e-6)


def test_fixed_effects(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    fx = fit.fixed
    assert list(fx.index) == ref["fixed"]["coefficient"]
    scale = np.max(np.abs(ref["fixed"]["estimate"]))
    np.testing.assert_allclose(fx["estimate"], ref["fixed"]["estimate"], rtol=1e-6,
                               atol=1e-8 * scale)
    np.testing.assert_allclose(fx["se"], ref["fixed"]["se"], rtol=1e-6)
    np.testing.assert_allclose(fx["df"], ref["fixed"]["df"], rtol=1e-4)


def test_anova(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    a = fit.anova()
    r = {k: np.atleast_1d(v) for k, v in ref["anova"].items()}  # jsonlite unboxes length 1
    assert list(a.index) == list(r["term"])
    np.testing.assert_allclose(a["num_df"], r["num_df"])
    np.testing.assert_allclose(a["F"], r["F"], rtol=1e-6)
    np.testing.assert_allclose(a["den_df"], r["den_df"], rtol=1e-4)
    np.testing.assert_allclose(a["p"], r["p"], rtol=1e-4, atol=1e-12)


def test_components_and_correlations(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    vc = fit.variance_components()
    cor = fit.correlations().set_index(["group", "effect1", "effect2"])["correlation"]
    vcr = ref["varcorr"]
    n_sd = 0
    for grp, v1, v2, sdcor in zip(vcr["grp"], vcr["var1"], vcr["var2"], vcr["sdcor"]):
        grp = grp.removesuffix(".1")  # lme4 numbers the second term of a grouping factor
        v1, v2 = _r(v1), _r(v2)
        if v2:
            assert cor[(grp, v1, v2)] == pytest.approx(sdcor, rel=1e-5)
        elif grp == "Residual":
            assert vc.loc[("Residual", ""), "sd"] == pytest.approx(sdcor, rel=1e-6)
        else:
            assert vc.loc[(grp, v1), "sd"] == pytest.approx(sdcor, rel=1e-6)
            n_sd += 1
    assert len(vc) == n_sd + 1
    assert len(cor) == sum(1 for v in vcr["var2"] if v)


def test_blups_and_conditional_sds(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    re = fit.conditional_modes().set_index(["group", "effect", "level"])
    r = ref["ranef"]
    assert len(re) == len(r["condval"])
    key = list(zip(r["grpvar"], map(_r, r["term"]), r["grp"]))
    got = re.loc[key]
    scale = np.max(np.abs(r["condval"]))
    np.testing.assert_allclose(got["condval"], r["condval"], rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(got["condsd"], r["condsd"], rtol=1e-6)


def test_fitted_and_predictions(case: tuple[dict, SlopeMixedResult]) -> None:
    ref, fit = case
    scale = np.max(np.abs(ref["fitted"]))
    np.testing.assert_allclose(fit.fitted(), ref["fitted"], rtol=0, atol=1e-7 * scale)
    np.testing.assert_allclose(fit.residuals(), DATA[ref["data"]][fit.spec.response]
                               - fit.fitted(), rtol=0, atol=1e-9 * scale)
    nd = pd.DataFrame(FIXTURE["newdata"][ref["data"]])
    np.testing.assert_allclose(fit.predict(nd), ref["predict"], rtol=1e-7)
    np.testing.assert_allclose(fit.predict(nd, re_form="~0"), ref["predict_fixed"], rtol=1e-8)


# -- properties -----------------------------------------------------------------------------


def test_zero_slope_variance_gives_the_intercept_models_loglik() -> None:
    """The deviance of ``(1 + Days | Subject)`` at theta = (t, 0, 0) is the deviance of
    ``(1 | Subject)`` at t: the existing path's optimum reproduces its logLik."""
    d = DATA["sleepstudy"]
    for method in ("REML", "ML"):
        base = irm.mixed("Reaction ~ Days + (1|Subject)", d, method=method)
        t = base.variance_components().loc["Subject", "sd"] / np.sqrt(
            base.variance_components().loc["Residual", "variance"])
        dev = ProfiledDeviance(lmm_design("Reaction ~ Days + (1|Subject)", d,
                                   (ReTerm(("Subject",), True, ("Days",)),)), method == "REML")
        assert -dev(np.array([t, 0.0, 0.0])) / 2 == pytest.approx(base.loglik, rel=1e-10)


def test_a_zero_slope_variance_is_a_singular_fit_not_an_error() -> None:
    rng = np.random.default_rng(27)
    g = np.repeat(np.arange(12), 8)
    x = np.tile(np.arange(8.0), 12)
    e = rng.normal(0, 0.5, len(g))
    xc = x - 3.5  # every group's own slope is exactly 0.3: the between-group slope variance
    for k in range(12):  # is 0, below its sampling variance, so its estimate is on the bound
        m = g == k
        e[m] -= xc[m] * (xc[m] @ e[m]) / (xc[m] @ xc[m])
    y = 5 + 0.3 * x + rng.normal(0, 1.0, 12)[g] + e
    d = pd.DataFrame({"g": [f"g{k}" for k in g], "x": x, "y": y})
    with pytest.warns(BoundaryFitWarning, match="singular fit") as rec:
        fit = fit_lmm("y ~ x + (1|g)", d, terms=(ReTerm(("g",)), ReTerm(("g",), False, ("x",))))
    assert rec[0].filename == __file__
    assert fit.boundary and fit.boundary_components == ("g: x",)
    assert any("singular fit" in n for n in fit.notes)
    base = irm.mixed("y ~ x + (1|g)", d)
    assert fit.loglik == pytest.approx(base.loglik, rel=1e-9)
    assert fit.variance_components().loc[("g", "x"), "variance"] < 1e-6


def test_row_order_never_changes_a_fit(rng: np.random.Generator) -> None:
    ref = KB07  # kb07-shaped, two correlated slope terms
    fit = _fit(ref)
    perm = rng.permutation(len(DATA["kb07sim"]))
    shuffled = DATA["kb07sim"].iloc[perm].reset_index(drop=True)
    lhs, rhs = ref["formula"].split(" ~ ")
    other = fit_lmm(f"{lhs} ~ {rhs.split(' + (')[0]} + (1|subj)", shuffled, method="REML",
                    terms=TERMS["(1 + load | subj) + (1 + load | item)"])
    assert other.loglik == pytest.approx(fit.loglik, rel=1e-12)
    np.testing.assert_allclose(other.fixed_estimates, fit.fixed_estimates, rtol=1e-7)
    np.testing.assert_allclose(other.variance_components()["sd"],
                               fit.variance_components()["sd"], rtol=1e-6)
    np.testing.assert_allclose(other.fitted(), fit.fitted()[perm], rtol=1e-7)


@pytest.mark.skipif(not GRAMMAR, reason="the formula grammar does not read slope terms yet")
def test_double_bar_equals_separate_terms() -> None:
    d = DATA["sleepstudy"]
    a = irm.mixed("Reaction ~ Days + (Days || Subject)", d)
    b = irm.mixed("Reaction ~ Days + (1 | Subject) + (0 + Days | Subject)", d)
    assert a.loglik == b.loglik
    pd.testing.assert_frame_equal(a.fixed, b.fixed)
    pd.testing.assert_frame_equal(a.variance_components(), b.variance_components())


@pytest.mark.parametrize("formula, data", [
    ("Reaction ~ Days + (1|Subject)", "sleepstudy"),
    ("score ~ system + shard + (1|topic) + (1|topic:system)", "irslopes"),
])
@pytest.mark.parametrize("method", ["REML", "ML"])
def test_engine_on_intercepts_equals_the_existing_path(formula: str, data: str,
                                                       method: str) -> None:
    d = DATA[data]
    old = irm.mixed(formula, d, method=method)
    new = fit_lmm(formula, d, method=method)
    assert new.loglik == pytest.approx(old.loglik, rel=1e-8)
    np.testing.assert_allclose(new.fixed_estimates, old.fixed_estimates, rtol=1e-8, atol=1e-12)
    # (the optimum is flat: both engines place theta to ~1e-8, SEs and variances follow)
    np.testing.assert_allclose(new.fixed["se"], old.fixed["se"], rtol=1e-7)
    np.testing.assert_allclose(new.fixed["df"], old.fixed["df"], rtol=1e-6)
    vc_new, vc_old = new.variance_components(), old.variance_components()
    assert list(vc_new.columns) == list(vc_old.columns) == ["variance", "sd", "share"]
    assert list(vc_new.index) == list(vc_old.index)
    np.testing.assert_allclose(vc_new["variance"], vc_old["variance"], rtol=2e-7)
    if hasattr(old, "fitted"):  # MixedResult.fitted() comes with the FittedModel base
        np.testing.assert_allclose(new.fitted(), old.fitted(), rtol=0,
                                   atol=1e-8 * np.max(np.abs(old.fitted())))
    term = formula.split("(1|")[1].split(")")[0]  # the first random term: BLUPs by level
    re_old = old.random_effects[term]
    re_new = new.random_effects[term]["(Intercept)"]
    np.testing.assert_allclose(re_new.loc[[str(v) for v in re_old.index]], re_old,
                               rtol=0, atol=1e-7 * np.max(np.abs(re_old)))


# -- interface ------------------------------------------------------------------------------


def test_a_random_intercept_confounded_with_a_fixed_term_is_refused() -> None:
    d = DATA["irslopes"]
    with pytest.raises(DesignError, match="confounded with the fixed term system"):
        fit_lmm("score ~ system + shard + (1|topic)", d,
                terms=(ReTerm(("topic",), True, ("shard",)), ReTerm(("system",))))


def test_predict_new_levels() -> None:
    fit = _fit(FITS[0])
    nd = pd.DataFrame({"Subject": ["308", "999"], "Days": [1.0, 1.0]})
    with pytest.raises(DataFormatError, match="allow_new_levels=True"):
        fit.predict(nd)
    p = fit.predict(nd, allow_new_levels=True)
    p0 = fit.predict(nd, re_form="~0")
    assert p[1] == pytest.approx(p0[1], rel=1e-14)
    assert p[0] != pytest.approx(p0[0], rel=1e-3)
    with pytest.raises(ModelError, match="re_form"):
        fit.predict(nd, re_form="~Days")  # type: ignore[arg-type]


@pytest.mark.skipif(not GRAMMAR, reason="the formula grammar does not read slope terms yet")
def test_mixed_routes_slopes_and_refuses_what_it_cannot_fit() -> None:
    d = DATA["sleepstudy"]
    fit = irm.mixed("Reaction ~ Days + (Days | Subject)", d)
    assert isinstance(fit, SlopeMixedResult)
    assert fit.loglik == pytest.approx(FITS[0]["logLik"], rel=1e-8)
    assert type(irm.mixed("Reaction ~ Days + (1 | Subject)", d)).__name__ == "MixedResult"
    with pytest.raises(ModelError, match="residual"):
        irm.mixed("Reaction ~ Days + (Days | Subject)", d, residual="Subject")
    with pytest.raises(ModelError, match="start="):
        irm.mixed("Reaction ~ Days + (Days | Subject)", d, start={"Subject": 1.0})
    with pytest.warns(BoundaryFitWarning) as rec:  # the warning points at the caller
        irm.mixed("Reaction ~ Days + (1 | Subject) + (0 + Days | Subject)",
                  d.assign(Reaction=d["Reaction"] - fit.random_effects[
                      "Subject"]["Days"].loc[d["Subject"]]
                      .to_numpy() * d["Days"]))
    assert rec[0].filename == __file__


def test_anova_tests_factor_interactions() -> None:
    """Interactions of factors get lmerTest's type III hypotheses (against lmerTest in
    tests/models/test_slopes_inference.py)."""
    d = DATA["irslopes"].assign(half=lambda x: np.where(x["topic"] < "t20", "a", "b"))
    fit = fit_lmm("score ~ system * half + (1|topic)", d,
                  terms=(ReTerm(("topic",), True, ("shard_c",)),))
    a = fit.anova()
    assert list(a.index) == ["system", "half", "system:half"]
    assert list(a["num_df"]) == [7, 1, 7]
    assert np.isfinite(fit.fixed["df"]).all()


def test_display_face() -> None:
    fit = _fit(KB07)
    text = fit.summary()
    assert "Correlations of random effects" in text and "Fixed effects" in text
    assert repr(fit).startswith("<SlopeMixedResult REML")
    assert list(fit.to_frame().columns) == ["group", "effect", "variance", "sd"]
    re = fit.random_effects
    assert list(re) == ["subj", "item"]
    assert list(re["subj"].columns) == ["(Intercept)", "load"] and len(re["subj"]) == 56
    assert re["subj"].index.name == "subj"
    cm = fit.conditional_modes().query("group == 'item' and effect == 'load'")
    np.testing.assert_array_equal(re["item"]["load"].to_numpy(), cm["condval"].to_numpy())
    np.testing.assert_array_equal(fit.conditional_sd("item")["load"].to_numpy(),
                                  cm["condsd"].to_numpy())
    with pytest.raises(DataFormatError, match="grouping factors: subj, item"):
        fit.conditional_sd("topic")
    double = _fit(next(f for f in FITS if "||" in f["formula"]))  # two terms, one frame
    assert list(double.random_effects) == ["Subject"]
    assert list(double.random_effects["Subject"].columns) == ["(Intercept)", "Days"]
    cv = fit.conditional_variances(0)
    assert cv.shape == (56, 2, 2)
    np.testing.assert_allclose(cv, np.transpose(cv, (0, 2, 1)))


# -- live against lme4 (when Rscript is present): random unbalanced designs, singular or not --

LIVE_FORMULAS = ("y ~ x + (1 + x | g)", "y ~ x + (x || g)", "y ~ x + f + (0 + f | g)",
                 "y ~ x + (1 + x | g) + (1 | h)", "y ~ x + f + (1 + f | g)")
LIVE_R = r"""
suppressPackageStartupMessages(library(lme4))
args <- commandArgs(TRUE); D <- read.csv(args[1]); forms <- readLines(args[2])
res <- c()
for (s in unique(D$seed)) for (fm in forms) {
  d <- D[D$seed == s, ]
  best <- -Inf
  for (opt in c("bobyqa", "Nelder_Mead")) {
    m <- tryCatch(lmer(as.formula(fm), d, control = lmerControl(optimizer = opt,
                  check.conv.singular = "ignore", calc.derivs = FALSE)), error = function(e) NULL)
    if (!is.null(m)) best <- max(best, as.numeric(logLik(m)))
  }
  res <- rbind(res, data.frame(seed = s, formula = fm, loglik = best))
}
write.csv(res, args[3], row.names = FALSE)
"""


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs R with lme4")
def test_live_random_designs_reach_lme4s_best_optimum(tmp_path: Path) -> None:
    """Unbalanced designs (20% of rows dropped) whose slope, intercept and factor-effect SDs
    are drawn from {0, 0.1, 1}: the fit's logLik is never below the better of lme4's bobyqa
    and Nelder-Mead fits (measured: equal to 2e-10 on 60 fits), singular or not."""
    frames = []
    for seed in range(4):
        rng = np.random.default_rng(100 + seed)
        G, n_per = int(rng.integers(6, 20)), int(rng.integers(3, 10))
        g = np.repeat(np.arange(G), n_per)
        x = rng.normal(size=len(g))
        f = rng.choice(["a", "b", "c"], len(g))
        h = rng.integers(0, 5, len(g))
        sd = rng.choice([0, 0.1, 1.0], 3)
        y = (1 + x + sd[0] * rng.normal(size=G)[g] + sd[1] * rng.normal(size=G)[g] * x
             + sd[2] * rng.normal(size=(G, 3))[g, (f == "b") + 2 * (f == "c")]
             + rng.normal(0, 0.5, len(g)) + 0.3 * rng.normal(size=5)[h])
        keep = rng.uniform(size=len(g)) > 0.2
        frames.append(pd.DataFrame({"g": [f"g{k}" for k in g], "h": [f"h{k}" for k in h],
                                    "x": x, "f": f, "y": y, "seed": seed})[keep])
    data = pd.concat(frames, ignore_index=True)
    data.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "f.txt").write_text("\n".join(LIVE_FORMULAS) + "\n")
    (tmp_path / "s.R").write_text(LIVE_R)
    subprocess.run(["Rscript", str(tmp_path / "s.R"), str(tmp_path / "d.csv"),
                    str(tmp_path / "f.txt"), str(tmp_path / "r.csv")], check=True,
                   capture_output=True, timeout=600)
    ref = pd.read_csv(tmp_path / "r.csv")
    assert len(ref) == 4 * len(LIVE_FORMULAS)
    for row in ref.itertuples():
        d = data[data["seed"] == row.seed].reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundaryFitWarning)
            fit = irm.mixed(row.formula, d)
        assert fit.loglik >= row.loglik - 1e-8 * abs(row.loglik), (row.seed, row.formula)


@pytest.mark.parametrize("kind", ["refit", "as_fitted"])
def test_compare_models_of_random_parts_equals_lme4_anova(kind: str) -> None:
    """irm.compare_models(intercept, ||, |) = anova(m0, m2, m1) (refit by ML, and as fitted)."""
    ref = FIXTURE["compare"][kind]
    d = DATA["sleepstudy"]
    if not GRAMMAR:
        pytest.skip("the formula grammar does not read slope terms yet")
    fits = [irm.mixed(f, d) for f in ref["formulas"]]
    table = irm.compare_models(*fits, refit=kind == "refit")
    np.testing.assert_array_equal(table["npar"], ref["npar"])
    np.testing.assert_allclose(table["loglik"], ref["logLik"], rtol=1e-8)
    np.testing.assert_allclose(table["aic"], ref["AIC"], rtol=1e-8)
    np.testing.assert_allclose(table["bic"], ref["BIC"], rtol=1e-8)
    np.testing.assert_allclose(table["statistic"].iloc[1:], ref["Chisq"][1:], rtol=1e-6)
    np.testing.assert_allclose(table["p"].iloc[1:], ref["p"][1:], rtol=1e-5)
    assert list(table["likelihood"]) == ["ML (refitted)" if kind == "refit" else "REML"] * 3


@pytest.mark.parametrize("data, formula", [
    ("sleepstudy", "Reaction ~ Days + (Days | Subject)"),
    ("kb07sim", "rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)"),
])
def test_sparse_and_dense_solvers_agree(data: str, formula: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Below DENSE_MAX_Q random effects the deviance uses dense Cholesky factors, above it a
    sparse LU: both give the same fit (the IR fixtures, q = 400, run the sparse one)."""
    import irmodels.models._lmm_design as lmm  # where DENSE_MAX_Q is read

    entry = next(f for f in FITS if f["data"] == data and f["formula"] == formula
                 and f["method"] == "REML")
    dense = _fit(entry)
    assert dense._dev.dense
    monkeypatch.setattr(lmm, "DENSE_MAX_Q", 0)
    sparse = _fit(entry, cached=False)
    assert not sparse._dev.dense
    assert sparse.loglik == pytest.approx(dense.loglik, rel=1e-12)
    for th in (dense.theta, sparse.theta):
        assert dense._dev(th) == pytest.approx(sparse._dev(th), rel=1e-12)
    np.testing.assert_allclose(sparse.fixed["se"], dense.fixed["se"], rtol=1e-6)
    np.testing.assert_allclose(sparse.conditional_modes()["condsd"],
                               dense.conditional_modes()["condsd"], rtol=1e-6)
    np.testing.assert_allclose(sparse.fitted(), dense.fitted(), rtol=1e-7)


def test_results_pickle_on_both_solvers() -> None:
    import pickle

    for entry in (FITS[0], next(f for f in FITS if f["data"] == "irslopes")):
        fit = _fit(entry)
        back = pickle.loads(pickle.dumps(fit))
        assert back.loglik == fit.loglik
        pd.testing.assert_frame_equal(back.conditional_modes(), fit.conditional_modes())
        pd.testing.assert_frame_equal(back.fixed, fit.fixed)


@pytest.mark.parametrize("entry", [f for f in FITS if "emmeans" in f], ids=_id)
def test_system_means_and_tukey_equal_emmeans(entry: dict) -> None:
    """The FittedModel vocabulary on a slope fit: marginal means of system, their SEs and
    Satterthwaite df, and Tukey's pairs equal emmeans (lmer.df = "satterthwaite")."""
    fit = _fit(entry)
    ref = entry["emmeans"]
    mm = fit.marginal_means("system")
    assert [str(v) for v in mm.index] == ref["level"]
    np.testing.assert_allclose(mm, ref["emmean"], rtol=1e-7)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.marginal_means_cov("system"))), ref["SE"],
                               rtol=1e-6)
    np.testing.assert_allclose(fit.contrast_df(np.eye(len(mm)), "system"), ref["df"], rtol=1e-4)
    pairs = fit.tukey("system").pairs
    got = pairs.set_index(pairs["a"].astype(str) + " - " + pairs["b"].astype(str))
    got = got.loc[ref["contrast"]]
    np.testing.assert_allclose(got["diff"], ref["estimate"], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got["df"], ref["pair_df"], rtol=1e-4)
    np.testing.assert_allclose(got["p_adj"], ref["p_tukey"], rtol=1e-4, atol=1e-10)
