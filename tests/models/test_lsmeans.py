"""Least-squares means and Tukey on unbalanced designs against R's emmeans
(tests/reference/emmeans.R -> emmeans.json; data from tests/reference/make_lsmeans_data.py)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DesignError, UnbalancedDesignWarning

TOL = 1e-9  # measured: max abs error about 1e-14 (means, SE), 5e-12 (Tukey p-values)


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "emmeans.json").read_text())


def _data(reference_dir, name: str) -> pd.DataFrame:
    return pd.read_csv(reference_dir / "data" / name)


def _fit(formula: str, data: pd.DataFrame) -> irm.AnovaResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnbalancedDesignWarning)
        return irm.anova(formula, data)


CASES = ["md1_missing", "shards_md2", "shards_md3", "shards_order", "shards_sysshard",
         "covariate", "covariate_slopes"]


@pytest.mark.parametrize("case", CASES)
def test_ls_means_and_tukey_equal_emmeans(ref, reference_dir, case):
    r = ref[case]
    fit = _fit(r["formula"], _data(reference_dir, r["file"]))
    assert not fit.balanced
    mm = fit.marginal_means("system")
    assert list(mm.index) == r["means"]["level"]
    np.testing.assert_allclose(mm.to_numpy(), r["means"]["emmean"], rtol=0, atol=TOL)
    cov = fit.marginal_means_cov("system").to_numpy()
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), r["means"]["SE"], rtol=1e-9)
    hsd = fit.tukey("system")
    assert hsd.means_kind == "marginal (least-squares)"
    assert "means compared" in hsd.summary() and "least-squares" in hsd.summary()
    pairs = hsd.pairs
    labels = [f"{a} - {b}" for a, b in zip(pairs["a"], pairs["b"])]
    assert labels == r["pairs"]["contrast"]
    p = r["pairs"]
    # emmeans reports a - b, as TukeyResult.diff (the package's one convention)
    np.testing.assert_allclose(pairs["diff"], p["estimate"], rtol=0, atol=TOL)
    se = hsd.se_diff[np.triu_indices(hsd.k, 1)]
    np.testing.assert_allclose(se, p["SE"], rtol=1e-9)
    np.testing.assert_allclose(pairs["q"], np.sqrt(2) * np.abs(p["t_ratio"]), rtol=1e-9)
    np.testing.assert_allclose(pairs["p_adj"], p["p_value"], rtol=0, atol=TOL)
    np.testing.assert_allclose(pairs["lower"], p["lower"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(pairs["upper"], p["upper"], rtol=0, atol=1e-7)
    assert hsd.df_error == r["df_resid"] == p["df"][0]
    assert fit.ms_error == pytest.approx(r["sigma2"], rel=1e-10)


def test_md1_missing_differs_from_raw_means_and_tukeyhsd(ref, reference_dir):
    r = ref["md1_missing"]
    data = _data(reference_dir, r["file"])
    fit = _fit(r["formula"], data)
    raw = fit.marginal_means("system", kind="raw")
    np.testing.assert_allclose(raw, data.groupby("system")["score"].mean(), rtol=1e-13)
    assert np.max(np.abs(raw.to_numpy() - np.asarray(r["means"]["emmean"]))) > 1e-3
    # R's TukeyHSD(aov(...)) compares projections (model.tables), not the LS means
    hsd = fit.tukey("system")
    # (R's TukeyHSD diff is b - a: negate ours to compare the magnitudes)
    assert np.max(np.abs(-hsd.pairs["diff"].to_numpy() - np.asarray(r["tukeyhsd"]["diff"]))) > 1e-3


def test_balanced_tukey_unchanged(reference_dir):
    data = _data(reference_dir, "lsm_balanced.csv")
    fit = irm.anova("score ~ topic + system + shard", data)
    hsd = fit.tukey("system")
    n = fit.n_per_level("system")
    old = irm.tukey_hsd(data.groupby("system")["score"].mean(), df_error=fit.df_resid,
                        ms_error=fit.ms_error, n=n)
    pd.testing.assert_frame_equal(hsd.pairs, old.pairs)
    assert hsd.means_kind == "marginal (least-squares)"
    # the LS machinery on a balanced design gives the same numbers
    lsm = fit._ls(["system"])
    np.testing.assert_allclose(lsm.means, fit.marginal_means("system"), atol=1e-13)
    np.testing.assert_allclose(lsm.cov, np.eye(5) * fit.ms_error / n, atol=1e-15)


def test_non_estimable_refused(reference_dir):
    data = _data(reference_dir, "lsm_md1_missing.csv")
    data = pd.concat([data, data.assign(score=data["score"] + 0.01)], ignore_index=True)
    fit = _fit("score ~ topic * system", data)  # 7 empty topic x system cells
    with pytest.raises(DesignError, match="not estimable.*emmeans reports NA"):
        fit.tukey("system")
    with pytest.raises(DesignError, match="kind='raw'"):
        fit.marginal_means("system")
    assert len(fit.marginal_means("system", kind="raw")) == 6
    with pytest.raises(DesignError, match="kind must be"):
        fit.marginal_means("system", kind="median")


def test_mixed_tukey_per_contrast_df_equals_emmeans(ref, reference_dir):
    r = ref["mixed_shards"]
    data = _data(reference_dir, r["file"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed(r["formula"], data)
    hsd = fit.tukey("system")
    p = r["pairs"]
    assert hsd.df_pairs is not None and "df" in hsd.pairs.columns
    np.testing.assert_allclose(hsd.pairs["df"], p["df"], rtol=1e-4)
    np.testing.assert_allclose(hsd.pairs["diff"], p["estimate"], atol=1e-7)
    np.testing.assert_allclose(hsd.pairs["p_adj"], p["p_value"], atol=1e-5)
    np.testing.assert_allclose(hsd.pairs["lower"], p["lower"], atol=1e-6)
    np.testing.assert_allclose(hsd.pairs["upper"], p["upper"], atol=1e-6)
    assert "per pair" in hsd.summary()
    cons = fit.tukey("system", df="min")
    assert cons.df_pairs is None and cons.df_error == pytest.approx(min(p["df"]), rel=1e-4)
    small = hsd.pairs["p_adj"].to_numpy() < 0.5  # fewer df: larger upper tail beyond the median
    assert (cons.pairs["p_adj"].to_numpy()[small] >= hsd.pairs["p_adj"].to_numpy()[small]).all()
    with pytest.raises(DesignError, match="per-contrast"):
        fit.tukey("system", df="max")  # type: ignore[arg-type]


# ---- property: Tukey on an additive model == pairwise comparisons of LS means from lstsq


@st.composite
def _designs(draw):
    nt = draw(st.integers(3, 6))
    ns = draw(st.integers(3, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    reps = rng.integers(1, 3, size=(nt, ns))
    drop = rng.uniform(size=(nt, ns)) < 0.2
    drop[:, 0] = False  # every topic and system keeps rows
    drop[0, :] = False
    reps[drop] = 0
    rows = [(f"t{i}", f"s{j}") for i in range(nt) for j in range(ns) for _ in range(reps[i, j])]
    d = pd.DataFrame(rows, columns=["topic", "system"])
    d["score"] = rng.normal(size=len(d))
    return d


@settings(max_examples=25, deadline=None)
@given(_designs())
def test_property_tukey_equals_lstsq_ls_means(d):
    fit = _fit("score ~ topic + system", d)
    if fit.balanced:
        return
    # independent computation: dense indicator design (treatment coding), numpy lstsq
    topics = sorted(d["topic"].unique())
    systems = sorted(d["system"].unique())
    X = np.column_stack(
        [np.ones(len(d))]
        + [(d["topic"] == t).to_numpy(float) for t in topics[1:]]
        + [(d["system"] == s).to_numpy(float) for s in systems[1:]]
    )
    y = d["score"].to_numpy()
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    df = len(y) - np.linalg.matrix_rank(X)
    s2 = float(np.sum((y - X @ beta) ** 2) / df)
    # LS mean of system j: intercept + mean of topic effects + system effect
    L = np.zeros((len(systems), X.shape[1]))
    L[:, 0] = 1.0
    L[:, 1 : len(topics)] = 1.0 / len(topics)
    for j in range(1, len(systems)):
        L[j, len(topics) - 1 + j] = 1.0
    means = L @ beta
    V = s2 * L @ np.linalg.pinv(X.T @ X) @ L.T
    hsd = fit.tukey("system")
    np.testing.assert_allclose(hsd.means.to_numpy(), means, atol=1e-10)
    ia, ib = np.triu_indices(len(systems), 1)
    se = np.sqrt(V[ia, ia] + V[ib, ib] - 2 * V[ia, ib])
    np.testing.assert_allclose(hsd.pairs["diff"], means[ia] - means[ib], atol=1e-10)
    np.testing.assert_allclose(hsd.se_diff[ia, ib], se, rtol=1e-8)
    q = np.sqrt(2) * np.abs(means[ib] - means[ia]) / se
    p = irm.ptukey(q, len(systems), df, lower_tail=False)
    np.testing.assert_allclose(hsd.pairs["p_adj"], p, atol=1e-10)
    assert hsd.df_error == df


@pytest.mark.parametrize("ss_type", [1, 2, 3])
def test_unbalanced_interaction_table_equals_statsmodels(reference_dir, ss_type):
    """Unequal replication, topic * system: the table equals statsmodels ols + anova_lm."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    data = _data(reference_dir, "lsm_shards.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnbalancedDesignWarning)
        fit = irm.anova("score ~ topic * system", data, ss_type=ss_type)
    sm = anova_lm(smf.ols("score ~ C(topic, Sum) * C(system, Sum)", data).fit(), typ=ss_type)
    names = {"topic": "C(topic, Sum)", "system": "C(system, Sum)",
             "topic:system": "C(topic, Sum):C(system, Sum)", "Residual": "Residual"}
    for ours, theirs in names.items():
        assert fit.table.loc[ours, "SS"] == pytest.approx(sm.loc[theirs, "sum_sq"], rel=1e-9)
        assert fit.table.loc[ours, "df"] == sm.loc[theirs, "df"]
        if ours != "Residual":
            assert fit.table.loc[ours, "p"] == pytest.approx(sm.loc[theirs, "PR(>F)"], rel=1e-8)


def test_covariate_balanced_factors_use_ls_means(reference_dir):
    """Balanced factor cells with a covariate: the means are adjusted (at the covariate's mean),
    not the raw means of the closed form."""
    data = _data(reference_dir, "lsm_balanced.csv")
    data["qlen"] = np.random.default_rng(0).uniform(size=len(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("score ~ topic + system + qlen", data)
    assert fit.balanced
    raw = fit.marginal_means("system", kind="raw").to_numpy()
    ls = fit.marginal_means("system").to_numpy()
    assert np.max(np.abs(raw - ls)) > 1e-6 and fit._ls(["system"]).estimable.all()
    assert fit.dunnett("s1").means_kind == "marginal (least-squares)"
    assert fit.tukey("system").means_kind == "marginal (least-squares)"
    np.testing.assert_allclose(fit.tukey("system").means.to_numpy(), ls)
