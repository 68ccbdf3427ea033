"""Model inputs that once gave a raw pandas error, a grid of made-up levels or a silent change
of the sums of squares: a text response, a factor named twice, a non-hierarchical model fitted
with the default type, a nested factor under type II."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, DesignError, IRModelsWarning


def _design(seed: int = 0, drop: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product([[f"t{i}" for i in range(6)], [f"s{j}" for j in range(4)],
                                      ["k0", "k1"]], names=["topic", "system", "shard"])
    d = idx.to_frame(index=False)
    d["score"] = rng.normal(size=len(d))
    if drop:
        d = d[rng.uniform(size=len(d)) > drop]
    return d.reset_index(drop=True)


@pytest.mark.parametrize("fit", [
    lambda d: irm.anova("topic ~ system + shard", d),
    lambda d: irm.mixed("topic ~ system + (1|shard)", d),
    lambda d: irm.anova("shard ~ system", irm.frame(d)),
])
def test_text_response_is_refused(fit) -> None:
    # was: ValueError: could not convert string to float: 't0'
    with pytest.raises(DataFormatError, match=r"the response column '(topic|shard)' holds "
                                              r"(str|category|object) values, not numbers"):
        fit(_design())


@pytest.mark.parametrize("call", [
    lambda fit: fit.marginal_means("topic:topic"),
    lambda fit: fit.tukey("system:system"),
])
def test_a_factor_named_twice_is_refused(call) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("score ~ topic + system", irm.frame(_design(drop=0.3)))
    with pytest.raises(DesignError, match=r"names '(topic|system)' more than once; an "
                                          r"interaction crosses different factors"):
        call(fit)


def test_default_type_of_a_non_hierarchical_model_warns() -> None:
    d = irm.frame(_design())
    with pytest.warns(IRModelsWarning, match=r"not hierarchical \(term system:topic lacks "
                                             r"topic\): its sums of squares are sequential"):
        fit = irm.anova("score ~ system + topic:system", d)
    assert fit.ss_type == 1
    with warnings.catch_warnings():  # asked for: no warning
        warnings.simplefilter("error", IRModelsWarning)
        assert irm.anova("score ~ system + topic:system", d, ss_type=1).ss_type == 1


def test_type2_on_a_nested_factor_suggests_type1_only() -> None:
    d = _design()
    d["shard"] = d["topic"] + "-" + d["shard"]  # shards nested in topics
    with pytest.raises(DesignError) as info:
        irm.anova("score ~ topic + shard + system", d, ss_type=2)
    msg = str(info.value)
    assert "aliased with the other terms (empty cells, or a factor nested in another)" in msg
    assert "Use ss_type=1, drop the term" in msg


def test_identical_systems_are_not_significant() -> None:
    # copies of one run: SS 1e-32 over a residual of 3e-32 gave F = 6.9, p = 0.003 (R prints
    # these mean squares as 0 and warns of an "essentially perfect fit")
    b = np.random.default_rng(0).uniform(size=20)
    copies = irm.from_wide(pd.DataFrame({"x": b, "y": b, "z": b}))
    with pytest.warns(irm.DataQualityWarning, match="residual sum of squares is 0 up to "
                                                    "rounding: the scores are a perfect fit"):
        fit = irm.anova("MD1", copies)
    row = fit.table.loc["system"]
    assert row["SS"] == 0.0 and np.isnan(row["F"]) and np.isnan(row["p"])
    assert fit.table.loc["Residual", "SS"] == 0.0
    assert fit.table.loc["topic", "F"] == np.inf and fit.table.loc["topic", "p"] == 0.0
    # shifted copies: the systems explain something, exactly
    with pytest.warns(irm.DataQualityWarning, match="perfect fit"):
        shifted = irm.anova("MD1", irm.from_wide(pd.DataFrame({"x": b, "y": b + 0.1,
                                                               "z": b + 0.3})))
    # offsets 0, 0.1, 0.3 around their mean 2/15, times 20 topics: 14/15
    assert shifted.table.loc["system", "SS"] == pytest.approx(14 / 15, rel=1e-12)
    assert shifted.table.loc["system", "F"] == np.inf


def test_equal_system_means_give_f_zero() -> None:
    # a run and its topic-reversed copy have the same mean: the system SS is 0, not noise
    b = np.random.default_rng(0).uniform(size=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.NegativeVarianceWarning)
        fit = irm.anova("MD1", irm.from_wide(pd.DataFrame({"x": b, "y": b[::-1], "z": b})))
    assert fit.table.loc["system", "SS"] == 0.0
    assert fit.table.loc["system", "F"] == 0.0 and fit.table.loc["system", "p"] == 1.0
    assert fit.table.loc["Residual", "SS"] > 1.0
