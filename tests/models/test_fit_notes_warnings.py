"""The notes of a mixed, random-slope or GLMM fit are the source of its warnings (issue 26
item 2): a warning the fit emits is one of its notes, raised once; the refits behind
``compare_models``, the profile intervals and Nakagawa's R2 pass ``warn=False`` instead of
silencing warnings; the options of the results' methods come after ``*``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import BoundaryFitWarning, ConvergenceWarning
from irmodels.models._lmm import ReTerm, fit_lmm
from irmodels.models.mixed import deviance_function, mixed_design, mixed_result, optimize_deviance


def _boundary_lmm_data() -> pd.DataFrame:
    """Topics x systems whose system means are all equal: the REML variance of system is 0."""
    rng = np.random.default_rng(5)
    t, s = 12, 5
    y = rng.normal(0, 1, (t, s)) + rng.normal(0, 2, t)[:, None]
    y -= y.mean(axis=0, keepdims=True)
    return pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(t)], s),
                         "system": np.tile([f"s{j}" for j in range(s)], t),
                         "score": y.ravel()})


def _singular_slope_data() -> pd.DataFrame:
    rng = np.random.default_rng(27)
    g = np.repeat(np.arange(12), 8)
    x = np.tile(np.arange(8.0), 12)
    e = rng.normal(0, 0.5, len(g))
    xc = x - 3.5  # every group's own slope is 0.3: the slope variance is on its bound
    for k in range(12):
        m = g == k
        e[m] -= xc[m] * (xc[m] @ e[m]) / (xc[m] @ xc[m])
    y = 5 + 0.3 * x + rng.normal(0, 1.0, 12)[g] + e
    return pd.DataFrame({"g": [f"g{k}" for k in g], "x": x, "y": y})


def _flat_binomial_data() -> pd.DataFrame:
    t = 15
    return pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(t)], 4),
                         "system": np.tile(["a", "b", "c", "d"], t),
                         "rel": np.tile([3.0, 4.0, 5.0, 6.0], t)})


def _recorded(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [w for w in rec if issubclass(w.category, (BoundaryFitWarning,
                                                            ConvergenceWarning))]


def test_mixed_boundary_warning_is_its_note_raised_once() -> None:
    fit, rec = _recorded(irm.mixed, "score ~ (1|system) + (1|topic)", _boundary_lmm_data())
    assert fit.boundary and fit.boundary_components == ("system",)
    assert len(rec) == 1 and rec[0].category is BoundaryFitWarning
    assert str(rec[0].message) in fit.notes
    assert str(rec[0].message).startswith("the REML estimate of the variance of system is zero")
    assert rec[0].filename == __file__  # stacklevel: the caller of irm.mixed


def test_mixed_result_warn_false_gives_the_note_without_the_warning() -> None:
    d = _boundary_lmm_data()
    design = mixed_design("score ~ (1|system) + (1|topic)", d)
    devfun = deviance_function(design)
    opt = optimize_deviance(devfun)
    quiet, rec = _recorded(mixed_result, design, devfun, opt, warn=False)
    assert rec == [] and quiet.boundary and len(quiet.notes) == 1
    loud, rec = _recorded(mixed_result, design, devfun, optimize_deviance(devfun))
    assert [str(w.message) for w in rec] == list(loud.notes)
    assert loud.loglik == quiet.loglik


def test_compare_models_refits_by_ml_without_a_boundary_warning() -> None:
    d = _boundary_lmm_data()
    with pytest.warns(BoundaryFitWarning):
        m1 = irm.mixed("score ~ (1|system) + (1|topic)", d)
    m0 = irm.mixed("score ~ (1|topic)", d)
    table, rec = _recorded(irm.compare_models, m0, m1)
    assert rec == []  # the ML refit of the boundary fit is quiet (it was silenced before)
    assert list(table["likelihood"]) == ["ML (refitted)", "ML (refitted)"]
    ml, _ = _recorded(irm.mixed, "score ~ (1|system) + (1|topic)", d, method="ML")
    assert table["loglik"].iloc[1] == pytest.approx(ml.loglik, rel=1e-12)
    assert m1._refit_ml().notes == ml.notes  # the refit keeps its note


def test_mixed_convergence_note_is_the_warning_text() -> None:
    d = _boundary_lmm_data().iloc[:-3]  # unbalanced: no closed form
    design = mixed_design("score ~ (1|system) + (1|topic)", d)
    devfun = deviance_function(design)
    opt, rec = _recorded(optimize_deviance, devfun, maxiter=1)
    assert not opt.converged and len(rec) == 1 and rec[0].category is ConvergenceWarning
    assert opt.warning == str(rec[0].message)
    fit, _ = _recorded(mixed_result, design, devfun, opt)
    assert opt.warning in fit.notes


def test_slope_fit_singular_warning_is_its_note() -> None:
    d = _singular_slope_data()
    terms = (ReTerm(("g",)), ReTerm(("g",), False, ("x",)))
    fit, rec = _recorded(fit_lmm, "y ~ x + (1|g)", d, terms=terms)
    assert len(rec) == 1 and str(rec[0].message) == fit.notes[0]
    assert fit.notes[0] == "singular fit: the variance of g: x is estimated at zero"
    quiet, rec = _recorded(fit_lmm, "y ~ x + (1|g)", d, terms=terms, warn=False)
    assert rec == [] and quiet.notes == fit.notes and quiet.loglik == fit.loglik
    ml, rec = _recorded(fit._refit_ml, warn=False)
    assert rec == [] and ml.method == "ML" and ml.boundary


def test_glmm_singular_warning_is_its_note_and_refits_are_quiet() -> None:
    d = _flat_binomial_data()
    fit, rec = _recorded(irm.mixed, "rel ~ system + (1|topic)", d, family="binomial", trials=10)
    assert fit.boundary and len(rec) == 1 and rec[0].category is BoundaryFitWarning
    assert str(rec[0].message) == fit.notes[0] == (
        "singular fit: the variance of topic is estimated at zero")
    assert fit.notes[1] == "vcov from R_X, as lme4."
    refit, rec = _recorded(fit._refit, warn=False)
    assert rec == [] and refit.notes == fit.notes
    null, rec = _recorded(fit._null_model)
    assert rec == [] and list(null.fixed_estimates.index) == ["(Intercept)"]


def test_result_options_are_keyword_only() -> None:
    data = irm.datasets.load("adhoc3", "AP")
    data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
    fit = irm.mixed("score ~ system + (1|topic)", data)
    with pytest.raises(TypeError):
        fit.confint("wald", 0.9)  # type: ignore[misc]
    with pytest.raises(TypeError):
        fit.anova(3, "kenward-roger")  # type: ignore[misc]
    a = fit.confint("wald", level=0.9)
    b = fit.confint("wald")
    narrow, wide = (a["upper"] - a["lower"]).dropna(), (b["upper"] - b["lower"]).dropna()
    assert len(narrow) == 3 and (narrow < wide).all()  # the fixed effects (Wald: no SD rows)
    assert fit.anova(3, ddf="kenward-roger").table["den_df"].iloc[0] == pytest.approx(
        fit.anova().table["den_df"].iloc[0], rel=1e-6)
    g = irm.mixed("rel ~ system + (1|topic)", data.assign(rel=np.round(data["score"] * 10)),
                  family="binomial", trials=10)
    with pytest.raises(TypeError):
        g.marginal_means("system", "response")  # type: ignore[misc]
    p = g.marginal_means("system", scale="response")
    assert ((p > 0) & (p < 1)).all()
