"""irm.anova: inputs, errors, result API, display and the Tukey hook."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DesignError,
    FormulaError,
    IRModelsWarning,
    NegativeVarianceWarning,
    UnbalancedDesignWarning,
)
from irmodels.formula import ModelSpec, Term
from irmodels.models.anova import TABLE_COLUMNS, AnovaResult

REF = Path(__file__).resolve().parents[1] / "reference"


def grid(t=4, r=3, s=None, seed=0, reps=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    levels = {"topic": [f"t{i}" for i in range(t)], "system": [f"s{j}" for j in range(r)]}
    if s:
        levels["shard"] = [f"k{k}" for k in range(s)]
    if reps > 1:
        levels["sample"] = [f"r{m}" for m in range(reps)]
    d = pd.MultiIndex.from_product(list(levels.values()), names=list(levels)).to_frame(index=False)
    sys_eff = dict(zip(levels["system"], np.linspace(0, 0.4, r)))
    d["score"] = d["system"].map(sys_eff).astype(float) + rng.normal(0, 0.1, len(d))
    return irm.frame(d)


def quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        return irm.anova(*args, **kw)


def test_table_shape_and_columns() -> None:
    res = quiet("MD6", grid(4, 3, 2))
    assert isinstance(res, AnovaResult)
    assert tuple(res.table.columns) == TABLE_COLUMNS
    assert list(res.table.index) == ["topic", "system", "shard", "topic:system", "topic:shard",
                                     "system:shard", "Residual"]
    assert res.method == "balanced" and res.balanced and res.ss_type == 2
    assert res.n_obs == 24 and res.df_resid == 3 * 2 * 1
    assert (res.table.dtypes == "float64").all()


def test_accepts_spec_string_and_preset_alike() -> None:
    data = grid()
    spec = ModelSpec(formula="score ~ topic + system", response="score", transform=None,
                     intercept=True, fixed=(Term(("topic",)), Term(("system",))))
    a = irm.anova(spec, data).table
    b = irm.anova("score ~ topic + system", data).table
    c = irm.anova("MD1", data).table
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)


def test_transform_is_applied() -> None:
    data = grid()
    data["score"] = data["score"].clip(0.01, 0.99)
    res = irm.anova("logit(score) ~ topic + system", data)
    y = np.log(data["score"] / (1 - data["score"]))
    np.testing.assert_allclose(res.fitted() + res.residuals(), y, rtol=1e-12)


def test_random_terms_point_to_mixed() -> None:
    with pytest.raises(FormulaError, match="irm.mixed"):
        irm.anova("score ~ system + (1|topic)", grid())


def test_unknown_column() -> None:
    with pytest.raises(FormulaError, match="shard"):
        irm.anova("score ~ topic + shard", grid())
    spec = ModelSpec(formula="score ~ sytem", response="score", transform=None, intercept=True,
                     fixed=(Term(("sytem",)),))
    with pytest.raises(FormulaError, match="'sytem' are not columns"):
        irm.anova(spec, grid())


def test_one_level_factor() -> None:
    data = grid(s=1).assign(shard=lambda d: d["topic"].astype(str).str[:1])
    with pytest.raises(DesignError, match="'shard' has 1 level"):
        irm.anova("score ~ topic + system + shard", data)


def test_nan_response() -> None:
    data = grid().astype({"topic": str, "system": str})
    data.loc[3, "score"] = np.nan
    with pytest.raises(DataFormatError, match="1 missing"):
        irm.anova("MD1", data)
    data.loc[3, "score"] = np.inf
    with pytest.raises(DataFormatError, match="1 infinite"):
        irm.anova("MD1", data)
    data.loc[3, "score"] = 0.5
    data.loc[4, "system"] = None
    with pytest.raises(DataFormatError, match="'system' has 1 missing label"):
        irm.anova("MD1", data)


def test_zero_residual_df_message() -> None:
    with pytest.raises(DesignError) as info:
        irm.anova("score ~ topic * system", grid(5, 4))
    assert str(info.value) == (
        "topic:system needs replicates to be separated from the residual; found 1 per cell in "
        "all 20 cells. Drop the term or add shards or samples."
    )


def test_bad_options() -> None:
    for bad in (0, 4, "2", True, 2.5):
        with pytest.raises(DesignError, match="ss_type must be 1, 2 or 3"):
            irm.anova("MD1", grid(), ss_type=bad)
    with pytest.raises(ArgumentError, match="method"):
        irm.anova("MD1", grid(), method="fast")
    with pytest.raises(ArgumentError, match="alpha"):
        irm.anova("MD1", grid(), alpha=1.5)


def test_non_hierarchical_model_is_type1_only() -> None:
    data = grid(reps=2)
    res = irm.anova("score ~ system + topic:system", data)
    assert res.method == "lstsq-type1" and res.ss_type == 1 and not res.hierarchical
    # system + topic-within-system: the second term gets topic + topic:system together
    full = irm.anova("score ~ system + topic + topic:system", data).table
    nested = res.table.index[1]  # the parser spells it like R: system:topic
    assert set(nested.split(":")) == {"topic", "system"}
    assert res.table.loc[nested, "SS"] == pytest.approx(
        full.loc["topic", "SS"] + full["SS"].iloc[2], rel=1e-10)
    assert res.table.loc[nested, "df"] == 3 * 3
    for bad in ({"ss_type": 2}, {"ss_type": 3}, {"method": "balanced"}):
        with pytest.raises(DesignError, match="lacks its marginal term"):
            irm.anova("score ~ system + topic:system", data, **bad)
    with pytest.raises(DesignError, match="hierarchical"):
        res.variance_components()


def test_no_intercept_refused() -> None:
    with pytest.raises(DesignError, match="intercept"):
        irm.anova("score ~ 0 + topic + system", grid())


def test_aliased_term_is_named() -> None:
    data = grid(6, 3)
    data["shard"] = np.where(data["topic"].cat.codes < 3, "k1", "k2")  # shard nested in topic
    with pytest.warns(UnbalancedDesignWarning), pytest.raises(DesignError, match="term shard is aliased"):
        irm.anova("score ~ topic + system + shard", data)


def test_method_balanced_on_unbalanced_data() -> None:
    data = grid().iloc[1:].reset_index(drop=True)
    with pytest.raises(DesignError, match="1 empty cell"):
        irm.anova("MD1", data, method="balanced")


def test_unbalanced_default_is_type2() -> None:
    data = grid(5, 4, reps=2).iloc[3:].reset_index(drop=True)
    with pytest.warns(UnbalancedDesignWarning, match="type II"):
        res = irm.anova("score ~ topic * system", data)
    assert res.method == "lstsq-type2" and not res.balanced and res.ss_type == 2
    with pytest.raises(DesignError, match="unbalanced"):
        res.variance_components()
    # raw marginal means on request, harmonic n; the least-squares mean of s0 is not
    # estimable (its cell with t0 is empty and the model has topic:system; emmeans gives NA)
    raw = data.groupby("system", observed=True)["score"].mean()
    np.testing.assert_allclose(res.marginal_means("system", kind="raw"), raw.to_numpy(), rtol=1e-13)
    with pytest.raises(DesignError, match=r"system \(s0\) is not estimable"):
        res.marginal_means("system")
    counts = data.groupby("system", observed=True).size().to_numpy()
    assert res.n_per_level("system") == pytest.approx(len(counts) / (1 / counts).sum())


def test_marginal_means_and_counts() -> None:
    data = grid(4, 3, 2)
    res = quiet("MD6", data)
    mm = res.marginal_means("system")
    assert mm.index.name == "system" and list(mm.index) == ["s0", "s1", "s2"]
    np.testing.assert_allclose(mm, data.groupby("system", observed=True)["score"].mean(), rtol=1e-13)
    ts = res.marginal_means("topic:system")
    assert isinstance(ts.index, pd.MultiIndex) and len(ts) == 12
    assert list(ts.index.names) == ["topic", "system"]
    assert res.n_per_level("system") == 8 and res.n_per_level("topic:system") == 2
    assert res.grand_mean == pytest.approx(data["score"].mean())
    with pytest.raises(DesignError, match="no factor"):
        res.marginal_means("sample")
    sd = res.level_sd("system")
    np.testing.assert_allclose(sd, data.groupby("system", observed=True)["score"].std(), rtol=1e-12)


def test_negative_omega_is_clipped_and_warned() -> None:
    rng = np.random.default_rng(3)
    data = grid(6, 5, seed=3)
    data["score"] = rng.normal(size=len(data))  # no effects: some F < 1
    with pytest.warns(NegativeVarianceWarning, match="omega squared"):
        res = irm.anova("MD1", data)
    for term in res.omega2_clipped:
        assert res.table.loc[term, "omega2_partial"] == 0 and res.table.loc[term, "F"] < 1


def test_variance_components_negative_set_to_zero() -> None:
    rng = np.random.default_rng(5)
    data = grid(6, 5, seed=5)
    data["score"] = rng.normal(size=len(data))
    res = quiet("MD1", data)
    neg = [t for t in ("topic", "system") if res.table.loc[t, "MS"] < res.ms_error]
    assert neg
    with pytest.warns(NegativeVarianceWarning, match=neg[0]):
        vc = res.variance_components()
    assert (vc.loc[neg, "variance"] == 0).all()
    assert vc["share"].sum() == pytest.approx(1.0)


def test_display() -> None:
    res = quiet("MD1", grid())
    text = res.summary()
    assert "ANOVA: score ~ topic + system" in text and "Pr(>F)" in text and "Residual" in text
    latex = res.to_latex(caption="MD1 & co", label="tab:md1")
    assert r"\toprule" in latex and r"MD1 \& co" in latex and r"$\omega^2_p$" in latex
    assert r"$\Pr(>F)$" in latex and r"\label{tab:md1}" in latex
    assert "<table" in res._repr_html_()
    r = repr(res)
    assert r.startswith("<AnovaResult score ~ topic + system") and "\n" not in r
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        res.n_obs = 3  # type: ignore[misc]


def test_tukey_matches_r_on_trec8(shared_data: Path) -> None:
    pytest.importorskip("irmodels.inference.tukey")
    ref = json.loads((REF / "anova.json").read_text())["tukey"]
    data = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv"))
    hsd = irm.anova("MD1", data).tukey("system", alpha=0.05)
    assert hsd.n_pairs == ref["n_pairs"]
    assert hsd.n_significant == ref["n_significant"]
    assert sorted(map(str, hsd.top_group)) == ref["top_group"]
    assert hsd.critical_value == pytest.approx(ref["critical_value"], rel=1e-6)


def test_tukey_unbalanced_runs() -> None:
    pytest.importorskip("irmodels.inference.tukey")
    data = grid(5, 4, reps=2).iloc[3:].reset_index(drop=True)
    res = quiet("score ~ topic + system", data)
    hsd = res.tukey("system")
    assert hsd.n_pairs == 6


def test_four_factors_closed_form_equals_least_squares() -> None:
    from itertools import combinations

    rng = np.random.default_rng(11)
    names = ["topic", "system", "shard", "sample"]
    d = pd.MultiIndex.from_product([["t1", "t2"], ["a", "b", "c"], ["k1", "k2"], ["r1", "r2"]],
                                   names=names).to_frame(index=False)
    d["score"] = rng.normal(size=len(d)) + d["system"].map({"a": 0, "b": 0.5, "c": 1}).astype(float)
    terms = tuple(Term(c) for r in (1, 2, 3) for c in combinations(names, r))
    spec = ModelSpec(formula="all three-way", response="score", transform=None, intercept=True,
                     fixed=terms)
    fast = quiet(spec, d)
    assert fast.method == "balanced" and fast.df_resid == 1 * 2 * 1 * 1
    for typ in (1, 2, 3):
        slow = quiet(spec, d, ss_type=typ, method="lstsq")
        np.testing.assert_allclose(slow.table["SS"], fast.table["SS"], rtol=1e-9)
        np.testing.assert_array_equal(slow.table["df"], fast.table["df"])
    assert fast.table["df"].sum() == len(d) - 1


def test_several_measures_are_not_pooled() -> None:
    a = grid().assign(measure="AP")
    b = grid(seed=1).assign(measure="P@10")
    data = irm.frame(pd.concat([a, b], ignore_index=True).astype({"topic": str, "system": str}))
    with pytest.raises(DesignError, match="2 measures"):
        irm.anova("MD1", data)
    one = data[data["measure"] == "AP"].reset_index(drop=True)
    assert irm.anova("MD1", one).n_obs == 12
