"""G-study / D-study against R (tests/reference/gtheory.R -> gtheory.json) and Brennan (2001)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError, NegativeVarianceWarning

TOL = 1e-9


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "gtheory.json").read_text())


@pytest.fixture(scope="module")
def brennan(shared_data):
    wide = pd.read_csv(shared_data / "textbook" / "brennan2001_table3-2.csv")
    return irm.from_wide(wide)


@pytest.fixture(scope="module")
def adhoc3(shared_data):
    wide = pd.read_csv(shared_data / "ir-scores" / "adhoc3_ap.csv")
    return irm.from_wide(wide)


@pytest.fixture(scope="module")
def shards(reference_dir):
    return irm.frame(pd.read_csv(reference_dir / "gtheory_shards.csv"))


CASES = [
    ("two_0.05", dict(level=0.95, sided="two")),
    ("two_0.2", dict(level=0.8, sided="two")),
    ("lower_0.05", dict(level=0.95, sided="lower")),
    ("upper_0.05", dict(level=0.95, sided="upper")),
]


@pytest.mark.parametrize("name", ["brennan", "adhoc3"])
def test_components_against_r(name, ref, request):
    g = irm.gstudy(request.getfixturevalue(name))
    r = ref[name]
    assert g.n_systems == r["n_systems"] and g.n_topics == r["n_topics"]
    assert list(g.components.index) == ["system", "topic", "Residual"]
    for comp, v in r["var"].items():
        assert g.components.loc[comp, "variance"] == pytest.approx(v, rel=TOL, abs=1e-15)
        assert g.mean_squares[comp] == pytest.approx(r["ms"][comp], rel=TOL)
    assert g.components["share"].sum() == pytest.approx(1.0)
    assert np.allclose(g.components["sd"] ** 2, g.components["variance"])
    assert g.phi == pytest.approx(r["phi"], rel=TOL)
    assert g.rho_I == pytest.approx(r["rho_I"], rel=TOL)


@pytest.mark.parametrize("name", ["brennan", "adhoc3"])
@pytest.mark.parametrize("case,kw", CASES)
def test_dstudy_against_r(name, case, kw, ref, request):
    g = irm.gstudy(request.getfixturevalue(name))
    r = ref[name]["dstudy"][case]
    d = g.dstudy(topics=r["topics"], **kw)
    assert list(d.columns) == [
        "topics", "Erho2", "Erho2_lower", "Erho2_upper", "Phi", "Phi_lower", "Phi_upper"
    ]
    for col in d.columns:
        np.testing.assert_allclose(d[col].to_numpy(float), r[col], rtol=1e-8, atol=1e-12)


def test_brennan_published_tables(brennan):
    """Brennan (2001) Table 6.2 (G study) and Table 6.5 (n' = 12, 80% intervals), to print."""
    g = irm.gstudy(brennan)
    v = g.components["variance"]
    assert round(v["system"], 4) == 0.6258
    assert round(v["topic"], 4) == 0.8840
    assert round(v["Residual"], 4) == 2.7872
    d = g.dstudy(topics=12, level=0.8).iloc[0]
    assert [round(d[c], 3) for c in ("Erho2", "Erho2_lower", "Erho2_upper")] == [0.729, 0.541, 0.876]
    assert [round(d[c], 3) for c in ("Phi", "Phi_lower", "Phi_upper")] == [0.672, 0.457, 0.845]


@pytest.mark.parametrize("name", ["brennan", "adhoc3"])
def test_topics_needed_against_r(name, ref, request):
    g = irm.gstudy(request.getfixturevalue(name))
    for row in ref[name]["needed"]:
        assert g.topics_needed(row["target"]) == row["Erho2"]
        assert g.topics_needed(row["target"], index="Phi") == row["Phi"]
        # the answer is the smallest n' reaching the target
        for index in ("Erho2", "Phi"):
            n = g.topics_needed(row["target"], index=index)
            vals = g.dstudy(topics=[n - 1, n] if n > 1 else [n])[index].to_numpy()
            assert vals[-1] >= row["target"] - 1e-12
            if n > 1:
                assert vals[0] < row["target"]


def test_topics_needed_confidence(adhoc3):
    g = irm.gstudy(adhoc3)
    s = g.topics_needed(0.95, level=0.95)
    assert list(s.index) == ["topics", "topics_lower", "topics_upper"]
    assert s["topics_upper"] <= s["topics"] <= s["topics_lower"]
    # the lower limit of E rho^2 at topics_lower reaches the target, one topic less does not
    n = int(s["topics_lower"])
    d = g.dstudy(topics=[n - 1, n], level=0.95)
    assert d["Erho2_lower"].iloc[1] >= 0.95 > d["Erho2_lower"].iloc[0]
    p = g.topics_needed(0.9, index="Phi", level=0.95, sided="lower")
    assert pd.isna(p["topics_upper"])
    d = g.dstudy(topics=[int(p["topics_lower"]) - 1, int(p["topics_lower"])], sided="lower")
    assert d["Phi_lower"].iloc[1] >= 0.9 > d["Phi_lower"].iloc[0]


def test_three_facets_against_r(ref, shards):
    r = ref["shards"]
    g = irm.gstudy(shards)
    assert g.facet == "shard" and g.n_facet == 4
    assert list(g.components.index) == [
        "system", "topic", "shard", "topic:system", "system:shard", "topic:shard", "Residual"
    ]
    for comp, v in r["var"].items():
        assert g.components.loc[comp, "variance"] == pytest.approx(v, rel=1e-9)
    d = g.dstudy(topics=[10, 50, 100], shards=[1, 4, 10])
    assert list(d.columns)[-1] == "shards"
    got = d.set_index(["topics", "shards"])
    for t, h, e, p in zip(r["dstudy"]["topics"], r["dstudy"]["shards"], r["dstudy"]["Erho2"],
                          r["dstudy"]["Phi"]):
        assert got.loc[(t, h), "Erho2"] == pytest.approx(e, rel=1e-9)
        assert got.loc[(t, h), "Phi"] == pytest.approx(p, rel=1e-9)
    assert d["Erho2_lower"].isna().all()
    n = g.topics_needed(0.9, shards=4)
    vals = g.dstudy(topics=[n - 1, n], shards=4)["Erho2"].to_numpy()
    assert vals[1] >= 0.9 > vals[0]


def test_three_facets_averaging_one_shard_is_two_way(shards):
    """With one shard level, the 3-facet formulas reduce to the 2-facet ones."""
    one = shards[shards["shard"] == "h1"].drop(columns="shard")
    g2 = irm.gstudy(one)
    assert g2.facet is None and len(g2.components) == 3


def test_components_equal_anova_route(adhoc3):
    anova = pytest.importorskip("irmodels.models.anova")
    fit = anova.anova("score ~ system + topic", adhoc3)
    g_data = irm.gstudy(adhoc3)
    g_fit = irm.gstudy(fit)
    assert g_fit.source == "anova"
    pd.testing.assert_frame_equal(
        g_fit.components.loc[g_data.components.index], g_data.components, rtol=1e-10
    )
    for c in ["system", "topic", "Residual"]:
        assert fit.table.loc[c, "MS"] == pytest.approx(g_data.mean_squares[c], rel=1e-10)
    pd.testing.assert_frame_equal(g_fit.dstudy([10, 50]), g_data.dstudy([10, 50]))


def test_three_facets_from_anova(shards):
    anova = pytest.importorskip("irmodels.models.anova")
    fit = anova.anova(
        "score ~ system + topic + shard + system:topic + system:shard + topic:shard", shards
    )
    g_fit, g_data = irm.gstudy(fit), irm.gstudy(shards)
    assert g_fit.facet == "shard" and g_fit.n_facet == 4
    pd.testing.assert_frame_equal(g_fit.components, g_data.components, rtol=1e-10)
    pd.testing.assert_frame_equal(g_fit.dstudy([10, 50], [2, 4]), g_data.dstudy([10, 50], [2, 4]))


@pytest.mark.parametrize("model, missing", [
    ("MD1", "shard, topic:system, system:shard, topic:shard"),
    ("MD2", "shard, topic:system, system:shard, topic:shard"),
    ("MD3", "shard, system:shard, topic:shard"),
    ("MD4", "system:shard, topic:shard"),
    ("MD5", "topic:shard"),
])
def test_fit_pooling_a_term_into_the_residual_refused(shards, model, missing):
    """A fit of shard data without every two-way interaction pools them into its residual; the
    G-study would divide that by n_topics x n_shards as if it were the three-way error (E rho^2
    0.96 against 0.81 on the probe's data): refused, naming the missing terms."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova(model, shards)
    with pytest.raises(DesignError, match="pooled into the residual") as err:
        irm.gstudy(fit)
    assert f"has no {missing} term(s)" in str(err.value)
    md6 = irm.gstudy(irm.anova("MD6", shards))
    pd.testing.assert_frame_equal(md6.components, irm.gstudy(shards).components, atol=1e-12)


def test_mixed_fit_without_a_term_refused(shards, adhoc3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = irm.mixed("score ~ (1|system) + (1|topic)", shards)
    with pytest.raises(DesignError, match="topic:system, system:shard, topic:shard"):
        irm.gstudy(m, data=shards)
    # two facets: a model without topic pools the topic variance into the residual too
    with pytest.raises(DesignError, match="no topic term"):
        irm.gstudy(irm.anova("score ~ system", adhoc3))


def test_components_from_mixed(brennan):
    mixed_mod = pytest.importorskip("irmodels.models.mixed")
    fit = mixed_mod.mixed("score ~ 1 + (1|system) + (1|topic)", brennan)
    ref = irm.gstudy(brennan)
    g = irm.gstudy(fit)  # levels from the predicted random effects, no mean squares
    assert g.source == "mixed" and (g.n_systems, g.n_topics) == (10, 12)
    # REML equals the ANOVA estimates in a balanced design when none is negative
    for c in ["system", "topic", "Residual"]:
        assert g.components.loc[c, "variance"] == pytest.approx(
            ref.components.loc[c, "variance"], rel=1e-4)
    d = g.dstudy([12])
    assert d["Erho2"].iloc[0] == pytest.approx(0.7293, abs=1e-4)
    assert d["Erho2_lower"].isna().all()
    # with the data, the intervals come back
    g2 = irm.gstudy(fit, data=brennan)
    assert g2.dstudy([12], level=0.8)["Phi_lower"].iloc[0] == pytest.approx(0.457, abs=5e-4)


def test_negative_component_warns_and_truncates():
    # system means identical -> MS_s = 0 < MS_e
    w = pd.DataFrame({"a": [0.1, 0.5, 0.3], "b": [0.3, 0.3, 0.3]})
    with pytest.warns(NegativeVarianceWarning, match="negative variance"):
        g = irm.gstudy(irm.from_wide(w))
    assert g.components.loc["system", "variance"] == 0.0
    assert g.phi == 0.0
    with pytest.raises(DesignError, match="no number of topics"):
        g.topics_needed(0.9)


def test_errors(adhoc3, shards):
    with pytest.raises(DataFormatError, match="long frame"):
        irm.gstudy([1, 2, 3])
    with pytest.raises(DesignError, match="exactly one score"):
        irm.gstudy(adhoc3.iloc[:-1])
    with pytest.raises(DesignError, match="shards= needs"):
        irm.gstudy(adhoc3).dstudy(topics=10, shards=2)
    with pytest.raises(DesignError, match="sided"):
        irm.gstudy(adhoc3).dstudy(topics=10, sided="both")
    with pytest.raises(DesignError, match="positive whole"):
        irm.gstudy(adhoc3).dstudy(topics=[0])
    with pytest.raises(ArgumentError, match="target"):
        irm.gstudy(adhoc3).topics_needed(1.0)
    with pytest.raises(DesignError, match="at most one"):
        irm.gstudy(shards, facets=["shard", "sample"])
    with pytest.raises(DesignError, match="topics_needed without level"):
        irm.gstudy(shards).topics_needed(0.9, level=0.95)
    two = pd.concat([adhoc3.assign(measure="AP"), adhoc3.assign(measure="P@10")])
    with pytest.raises(DesignError, match="one measure"):
        irm.gstudy(irm.frame(two))


def test_display(adhoc3):
    g = irm.gstudy(adhoc3)
    assert repr(g).startswith("<GStudy systems=40, topics=50")
    text = g.summary()
    assert "Variance components" in text and "D-study" in text
    assert r"\begin{tabular}" in g.to_latex()
    assert "<table" in g._repr_html_()


def test_plot(adhoc3):
    import matplotlib

    matplotlib.use("Agg")
    fig = irm.gstudy(adhoc3).plot(topics=range(5, 101, 5), target=0.95)
    ax = fig.axes[0]
    assert len(ax.lines) >= 2
    np.testing.assert_allclose(ax.lines[0].get_xdata(), np.arange(5, 101, 5))
    import matplotlib.pyplot as plt

    plt.close(fig)


def _spike(x: float) -> np.ndarray:
    v = np.zeros((6, 5))
    v[0, 0] = x
    return v


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (6, 5), elements=st.floats(0, 1, allow_nan=False)))
@example(_spike(1.98527255e-160))  # squares subnormal: a residual of 1e-321, shares defined
@example(_spike(1e-170))  # squares 0: refused
def test_properties(values):
    """Components add up to the total variance identity; coefficients monotone in n'."""
    w = pd.DataFrame(values, columns=list("abcde"))
    f = irm.from_wide(w)
    if np.ptp(values) == 0:  # constant: refused, never NaN
        with pytest.raises(DesignError, match="equal"):
            irm.gstudy(f)
        return
    if np.var(values) < 1e-280:
        # squares of such scores underflow (to 0, or to subnormals of a few digits): refused
        # when every component underflowed to 0, else finite shares that add up to 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", irm.IRModelsWarning)
                g = irm.gstudy(f)
        except DesignError as exc:
            assert "every variance component is 0" in str(exc)
        else:
            c = g.components
            assert (c["variance"] >= 0).all() and np.isfinite(c.to_numpy()).all()
            assert c["share"].sum() == pytest.approx(1.0)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceWarning)
        g = irm.gstudy(f)
    ms = g.mean_squares
    v = g.components["variance"]
    n_s, n_t = 5, 6
    # EMS identities hold whenever no component was truncated
    if (ms["system"] >= ms["Residual"]) and (ms["topic"] >= ms["Residual"]):
        assert ms["system"] == pytest.approx(v["Residual"] + n_t * v["system"], abs=1e-12)
        assert ms["topic"] == pytest.approx(v["Residual"] + n_s * v["topic"], abs=1e-12)
    assert (v >= 0).all()
    if v["system"] > 1e-12:
        d = g.dstudy(topics=[1, 2, 5, 10, 100], level=0.9)
        assert np.all(np.diff(d["Erho2"]) >= -1e-12) and np.all(np.diff(d["Phi"]) >= -1e-12)
        assert (d["Phi"] <= d["Erho2"] + 1e-12).all()
        assert ((d["Erho2_lower"] <= d["Erho2"] + 1e-12) & (d["Erho2"] <= d["Erho2_upper"] + 1e-12)).all()
        assert d.iloc[0]["Erho2"] == pytest.approx(g.rho_I)
        assert d.iloc[0]["Phi"] == pytest.approx(g.phi)


def test_sample_facet_named_like_shard(shards, ref):
    samples = irm.frame(shards.rename(columns={"shard": "sample"}).astype({"sample": str}))
    g = irm.gstudy(samples)
    assert g.facet == "sample"
    assert list(g.components.index) == [
        "system", "topic", "sample", "topic:system", "system:sample", "topic:sample", "Residual"
    ]
    assert g.components.loc["topic:sample", "variance"] == pytest.approx(
        ref["shards"]["var"]["topic:shard"], rel=1e-9)
    both = irm.frame(shards.assign(sample="1"))
    assert irm.gstudy(both).facet == "shard"  # a one-level sample column is no facet
