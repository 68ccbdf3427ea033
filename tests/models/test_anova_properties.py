"""Invariances of irm.anova (hypothesis): they hold for every design and model drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DesignError, IRModelsWarning

MODELS = [
    "score ~ topic + system",
    "score ~ topic * system",
    "score ~ topic + system + shard",
    "score ~ topic + system + shard + topic:system",
    "score ~ topic + system + shard + topic:system + system:shard",
    "score ~ topic + system + shard + topic:system + topic:shard + system:shard",
    "score ~ topic * system * shard",
]

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def designs(draw, *, unbalanced: bool = False):
    t = draw(st.integers(2, 5))
    r = draw(st.integers(2, 5))
    s = draw(st.integers(2, 3))
    n = draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**32 - 1))
    model = draw(st.sampled_from(MODELS))
    rng = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product(
        [[f"t{i}" for i in range(t)], [f"s{j}" for j in range(r)], [f"k{k}" for k in range(s)],
         [f"r{m}" for m in range(n)]],
        names=["topic", "system", "shard", "sample"],
    ).to_frame(index=False)
    sys_eff = rng.normal(0, 0.3, r)
    top_eff = rng.normal(0, 0.5, t)
    codes_s = idx["system"].str[1:].astype(int).to_numpy()
    codes_t = idx["topic"].str[1:].astype(int).to_numpy()
    idx["score"] = top_eff[codes_t] + sys_eff[codes_s] + rng.normal(0, 1, len(idx))
    if unbalanced:
        keep = rng.uniform(size=len(idx)) > 0.25
        keep[: len(keep) // 2] |= False
        idx = idx[keep]
        assume(len(idx) > 10)
    return irm.frame(idx.reset_index(drop=True)), model


def fit(model, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        try:
            return irm.anova(model, data, **kw)
        except DesignError:
            assume(False)  # saturated model or aliased term for this draw


def same_table(a: pd.DataFrame, b: pd.DataFrame, rtol: float = 1e-9, eta2: bool = True) -> None:
    assert list(a.index) == list(b.index)
    cols = ["SS", "df", "MS", "F", "p", "eta2_partial", "cohen_f2"] + (["eta2"] if eta2 else [])
    for col in cols:
        np.testing.assert_allclose(a[col], b[col], rtol=rtol, atol=1e-12, err_msg=col)


@SETTINGS
@given(designs(), st.integers(0, 1000), st.floats(-5, 5))
def test_topic_shift_leaves_systems_unchanged(design, which, shift) -> None:
    data, model = design
    res = fit(model, data)
    topics = data["topic"].cat.categories
    moved = data.copy()
    hit = moved["topic"] == topics[which % len(topics)]
    moved.loc[hit, "score"] = moved.loc[hit, "score"] + shift
    res2 = fit(model, moved)
    terms = [t for t in res.table.index if "topic" not in t.split(":")]
    same_table(res.table.loc[terms], res2.table.loc[terms], eta2=False)  # SS_total moves
    # system comparisons do not move either
    d1 = res.marginal_means("system") - res.marginal_means("system").iloc[0]
    d2 = res2.marginal_means("system") - res2.marginal_means("system").iloc[0]
    np.testing.assert_allclose(d1, d2, atol=1e-10)


@SETTINGS
@given(designs(unbalanced=True), st.integers(0, 2), st.integers(0, 1000))
def test_topic_shift_unbalanced_type2(design, typ, which) -> None:
    data, model = design
    res = fit(model, data, ss_type=[1, 2, 3][typ])
    topics = data["topic"].cat.categories
    moved = data.copy()
    hit = moved["topic"] == topics[which % len(topics)]
    moved.loc[hit, "score"] = moved.loc[hit, "score"] + 0.75
    res2 = fit(model, moved, ss_type=[1, 2, 3][typ])
    terms = [t for t in res.table.index if "topic" not in t.split(":")]
    same_table(res.table.loc[terms], res2.table.loc[terms], rtol=1e-7, eta2=False)


@SETTINGS
@given(designs(), st.integers(0, 2**31))
def test_row_order_does_not_matter(design, seed) -> None:
    data, model = design
    res = fit(model, data)
    perm = np.random.default_rng(seed).permutation(len(data))
    shuffled = data.iloc[perm].reset_index(drop=True)
    res2 = fit(model, shuffled)
    same_table(res.table, res2.table, rtol=1e-11)
    np.testing.assert_allclose(res2.fitted(), res.fitted()[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res2.residuals(), res.residuals()[perm], rtol=1e-9, atol=1e-12)


@SETTINGS
@given(designs(unbalanced=True), st.integers(0, 2**31))
def test_row_order_does_not_matter_unbalanced(design, seed) -> None:
    data, model = design
    res = fit(model, data)
    perm = np.random.default_rng(seed).permutation(len(data))
    res2 = fit(model, data.iloc[perm].reset_index(drop=True))
    same_table(res.table, res2.table, rtol=1e-8)


@SETTINGS
@given(designs())
def test_balanced_path_equals_least_squares(design) -> None:
    data, model = design
    fast = fit(model, data)
    assert fast.method == "balanced"
    for typ in (1, 2, 3):
        slow = fit(model, data, ss_type=typ, method="lstsq")
        assert slow.method == f"lstsq-type{typ}"
        same_table(fast.table, slow.table, rtol=1e-9)
        np.testing.assert_allclose(fast.fitted(), slow.fitted(), rtol=1e-9, atol=1e-12)


@SETTINGS
@given(designs(), st.floats(0.01, 100))
def test_scaling(design, c) -> None:
    data, model = design
    res = fit(model, data)
    scaled = data.assign(score=data["score"] * c)
    res2 = fit(model, scaled)
    np.testing.assert_allclose(res2.table["SS"], res.table["SS"] * c**2, rtol=1e-9)
    np.testing.assert_allclose(res2.table["F"], res.table["F"], rtol=1e-9)
    np.testing.assert_allclose(res2.table["p"], res.table["p"], rtol=1e-8, atol=1e-300)


@SETTINGS
@given(designs())
def test_sums_of_squares_add_up_when_balanced(design) -> None:
    data, model = design
    res = fit(model, data)
    y = data["score"].to_numpy()
    np.testing.assert_allclose(res.table["SS"].sum(), ((y - y.mean()) ** 2).sum(), rtol=1e-10)
    assert res.table["df"].sum() == len(y) - 1
    np.testing.assert_allclose(res.fitted() + res.residuals(), y, rtol=1e-12, atol=1e-12)
