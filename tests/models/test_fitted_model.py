"""The fit vocabulary (irmodels.models.base.FittedModel): a toy model gets Tukey, Dunnett,
residual diagnostics and a report section by implementing the base's abstract members; the two
real fits speak the same vocabulary and give the numbers they gave before the base existed."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DesignError
from irmodels.formula.spec import ModelSpec
from irmodels.inference.diagnostics import residual_diagnostics
from irmodels.inference.tukey import tukey_hsd
from irmodels.models.base import FittedModel, OptSummary


# ---- a toy model: one-way fixed effects, y ~ system, in ~40 lines ------------------------------
@dataclass(frozen=True, repr=False, eq=False)
class OneWay(FittedModel):
    data: pd.DataFrame
    spec: ModelSpec = field(default_factory=lambda: irm.parse_formula("score ~ system"))

    @property
    def _groups(self) -> pd.core.groupby.SeriesGroupBy:
        return self.data.groupby("system", sort=True, observed=True)["score"]

    @property
    def df_resid(self) -> float:
        return float(len(self.data) - self._groups.ngroups)

    @property
    def df_model(self) -> float:
        return float(self._groups.ngroups - 1)

    def fitted(self) -> np.ndarray:
        return self._groups.transform("mean").to_numpy(float)

    def residuals(self) -> np.ndarray:
        return self.data["score"].to_numpy(float) - self.fitted()

    def marginal_means(self, factor: str = "system") -> pd.Series:
        if factor != "system":
            raise DesignError(f"no factor {factor!r} in score ~ system.")
        return self._groups.mean().rename("mean")

    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        m = self.marginal_means(factor)
        s2 = float(np.sum(self.residuals() ** 2) / self.df_resid)
        return pd.DataFrame(np.diag(s2 / self._groups.count().to_numpy(float)),
                            index=m.index, columns=m.index)

    def contrast_df(self, L: np.ndarray, factor: str = "system") -> np.ndarray:
        return np.full(np.atleast_2d(L).shape[0], self.df_resid)


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    rng = np.random.default_rng(26)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(12)], ["base", "a", "b", "c"]],
                                   names=["topic", "system"]).to_frame(index=False)
    effect = d["system"].map({"base": 0.0, "a": 0.01, "b": 0.06, "c": 0.08}).to_numpy()
    d["score"] = 0.3 + effect + rng.normal(0, 0.05, len(d))
    return d


def _oneway_anova(d: pd.DataFrame) -> irm.models.anova.AnovaResult:
    return irm.anova("score ~ system", d)


def test_the_base_is_abstract() -> None:
    class Partial(FittedModel):
        def fitted(self) -> np.ndarray:
            return np.zeros(1)

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_toy_model_gets_tukey_from_the_base(scores: pd.DataFrame) -> None:
    toy = OneWay(scores)
    res = toy.tukey(alpha=0.05)
    ref = _oneway_anova(scores).tukey()  # the one-way ANOVA: the same model, closed form
    pd.testing.assert_frame_equal(res.pairs[["a", "b"]], ref.pairs[["a", "b"]])
    for col in ("diff", "q", "p_adj", "lower", "upper"):
        np.testing.assert_allclose(res.pairs[col], ref.pairs[col], rtol=1e-9, atol=1e-12)
    assert res.pairs["reject"].tolist() == ref.pairs["reject"].tolist()
    # and the kernel called by hand with the model's pieces
    m = toy.marginal_means()
    se = np.sqrt(2 * np.diag(toy.marginal_means_cov())[0])
    direct = tukey_hsd(m, df_error=toy.df_resid, se_diff=se)
    np.testing.assert_allclose(res.pairs["p_adj"], direct.pairs["p_adj"], rtol=1e-12)
    assert res.means_kind == "marginal (model)"


def test_toy_model_gets_dunnett_from_the_base(scores: pd.DataFrame) -> None:
    res = OneWay(scores).dunnett("base", alternative="greater")
    ref = _oneway_anova(scores).dunnett("base", alternative="greater")
    assert res.table["level"].tolist() == ["a", "b", "c"]
    for col in ("diff", "se", "statistic", "p_adj", "lower"):
        np.testing.assert_allclose(res.table[col], ref.table[col], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.critical_value, ref.critical_value, rtol=1e-9)
    with pytest.raises(DesignError, match="control level 'nope' is not a level of system"):
        OneWay(scores).dunnett("nope")


def test_toy_model_gets_residual_diagnostics(scores: pd.DataFrame) -> None:
    toy = residual_diagnostics(OneWay(scores))
    ref = residual_diagnostics(_oneway_anova(scores))
    np.testing.assert_allclose(toy.tests["statistic"], ref.tests["statistic"], rtol=1e-9)
    np.testing.assert_allclose(toy.topic_sd, ref.topic_sd, rtol=1e-9)


def test_toy_model_gets_a_report_section_and_the_vocabulary(scores: pd.DataFrame) -> None:
    toy = OneWay(scores)
    assert toy.nobs == 48 and toy.df_model == 3 and toy.df_resid == 44
    assert toy.opt_summary == OptSummary(method="least squares") and toy.notes == ()
    section = toy.to_section()
    assert section.title == "OneWay: score ~ system (48 observations)"
    assert "Marginal means of system" in section.markdown and "<table" in section.html
    assert "least squares" in section.markdown
    text = toy.summary()
    assert "OneWay: score ~ system (48 observations)" in text
    assert f"{toy.marginal_means()['c']:.4f}" in text
    with pytest.raises(DesignError, match="OneWay has no variance components"):
        irm.gstudy(toy)


# ---- the two real fits ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def adhoc() -> pd.DataFrame:
    return irm.datasets.load("adhoc3", "AP")


@pytest.fixture(scope="module")
def unbalanced(adhoc: pd.DataFrame) -> pd.DataFrame:
    sub = adhoc[adhoc["system"].isin([f"sys{i}" for i in range(1, 7)])].reset_index(drop=True)
    rng = np.random.default_rng(5)
    return sub.drop(index=rng.choice(len(sub), 40, replace=False)).reset_index(drop=True)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# The values below were computed by the AnovaResult.tukey/dunnett and MixedResult.tukey/dunnett
# of the parent commit (each class its own methods), before both moved to FittedModel.
def test_anova_tukey_and_dunnett_unchanged(adhoc: pd.DataFrame, unbalanced: pd.DataFrame
                                           ) -> None:
    fit = irm.anova("MD1", adhoc)
    t = fit.tukey()
    assert t.n_significant == 378
    np.testing.assert_allclose(t.critical_value, 5.507086452485509, rtol=1e-12)
    np.testing.assert_allclose(t.pairs["lower"][:3],
                               [-0.349456480844863, -0.353014480844863, -0.27657248084486297],
                               rtol=1e-12)
    d = fit.dunnett("sys1")
    np.testing.assert_allclose(d.critical_value, 3.0785391007395084, rtol=1e-10)
    np.testing.assert_allclose(d.table["lower"][:3], [0.20373224912411614, 0.2072902491241161,
                                                      0.13084824912411608], rtol=1e-10)
    fu = _quiet(irm.anova, "MD1", unbalanced)
    assert fu.opt_summary.method == "least squares" and fu.notes
    np.testing.assert_allclose(fu.tukey().pairs["q"][:4], [19.30800343115837, 19.80769493532891,
                                                          13.697722965523598, 21.147081500945234],
                               rtol=1e-12)
    d = fu.dunnett("sys2", alternative="greater")
    np.testing.assert_allclose(d.table["p_adj"][:5], [1.0, 0.6888665747648853, 0.9999999513660738,
                                                      0.2162528251073168, 0.9999999999615767],
                               rtol=1e-8)
    np.testing.assert_allclose(d.table["lower"][:2], [-0.3206772773335412, -0.03593152942659535],
                               rtol=1e-8)


def test_mixed_tukey_and_dunnett_unchanged(unbalanced: pd.DataFrame) -> None:
    fit = _quiet(irm.mixed, "score ~ system + (1|topic)", unbalanced)
    np.testing.assert_allclose(fit.tukey().pairs["q"][:4], [19.280458962472665, 19.857169689226314,
                                                           13.721192811173355, 21.086702529917215],
                               rtol=1e-10)
    d = fit.dunnett("sys1")
    np.testing.assert_allclose(d.table["df"], [205.65923831804287, 205.5434669081257,
                                               206.14603620328202, 206.1213707652956,
                                               206.03394811812845], rtol=1e-8)
    assert d.means_kind == "marginal (model)"
    assert float(np.max(fit.dunnett("sys1", df="min").table["p_adj"])) < 1e-13


def test_mixed_fit_speaks_the_vocabulary(unbalanced: pd.DataFrame) -> None:
    fit = _quiet(irm.mixed, "score ~ system + (1|topic)", unbalanced)
    y = unbalanced["score"].to_numpy(float)
    np.testing.assert_allclose(fit.fitted() + fit.residuals(), y, rtol=0, atol=1e-14)
    # conditional fitted values: X beta + Z b (as lme4's fitted())
    mm = fit.marginal_means("system")
    b = fit.random_effects["topic"]
    xb = (mm[unbalanced["system"].astype(str)].to_numpy()
          + b[unbalanced["topic"].astype(str)].to_numpy())
    np.testing.assert_allclose(fit.fitted(), xb, rtol=0, atol=1e-12)
    assert fit.nobs == len(unbalanced) and fit.df_model == 5 and fit.df_resid == len(unbalanced) - 6
    # the df of a contrast of the marginal means: sys2 - sys1 is the coefficient systemsys2
    L = np.zeros((1, 6))
    L[0, :2] = [-1.0, 1.0]
    np.testing.assert_allclose(fit.contrast_df(L), fit.fixed.loc["systemsys2", "df"], rtol=1e-10)
    opt = fit.opt_summary
    assert opt.method in ("L-BFGS-B", "closed form") and opt.converged and not opt.boundary
    if opt.method == "L-BFGS-B":
        assert opt.iterations > 0 and opt.gradient_norm < 1e-2
    # residual diagnostics on a mixed fit (a bare AttributeError before the base)
    diag = residual_diagnostics(fit)
    assert 0 < diag.tests.loc["Shapiro-Wilk", "p"] <= 1
    assert len(diag.topic_sd) == unbalanced["topic"].nunique()


def test_mixed_boundary_fit_notes_and_opt_summary() -> None:
    rng = np.random.default_rng(0)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(8)], ["a", "b", "c"]],
                                   names=["topic", "system"]).to_frame(index=False)
    d["score"] = rng.normal(0.3, 0.1, len(d))  # no topic effect: the topic variance is zero
    fit = _quiet(irm.mixed, "score ~ system + (1|topic)", d)
    if fit.boundary:
        assert fit.opt_summary.boundary
        assert any("boundary" in n for n in fit.notes)
    else:  # the draw has a topic effect after all
        assert fit.notes == ()


def test_dunnett_finds_the_factor_of_its_control() -> None:
    rng = np.random.default_rng(2)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(10)], ["S", "M", "L"]],
                                   names=["topic", "length"]).to_frame(index=False)
    d["score"] = 0.4 + d["length"].map({"S": 0.0, "M": 0.02, "L": 0.05}) + rng.normal(0, 0.03, 30)
    fit = irm.anova("score ~ topic + length", d)
    res = fit.dunnett("L")  # no `system` factor: the factor with a level 'L'
    ref = fit.dunnett("L", factor="length")
    assert res.factor == "length" and res.table["level"].tolist() == ["M", "S"]
    np.testing.assert_allclose(res.table["p_adj"], ref.table["p_adj"], rtol=1e-12)
    mixed = _quiet(irm.mixed, "score ~ length + (1|topic)", d)
    np.testing.assert_allclose(mixed.dunnett("L").table["diff"], res.table["diff"], rtol=1e-9)
    with pytest.raises(DesignError, match="no factor 'system'"):
        fit.dunnett("XL")  # no factor has that level: the default factor is reported
