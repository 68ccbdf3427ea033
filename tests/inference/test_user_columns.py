"""The user's own column names: every function that takes a score frame accepts
``topic=``/``system=``/``score=`` (keyword-only) and gives the numbers of the canonical names;
a missing or misspelt column is an irmodels error that names it with a "did you mean"."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, UsageError

KW = {"topic": "qid", "system": "run", "score": "map"}


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A canonical frame and the same scores as a raw frame with columns ``qid, run, map``
    (integer topic ids, an extra column)."""
    rng = np.random.default_rng(11)
    wide = pd.DataFrame(rng.beta(2, 5, size=(16, 4)) + [0.0, 0.03, 0.08, 0.12],
                        columns=["bm25", "dense", "rm3", "splade"])
    canon = irm.from_wide(wide)
    raw = pd.DataFrame({"qid": canon["topic"].astype(int), "run": canon["system"].astype(str),
                        "map": canon["score"], "qlen": np.tile(np.arange(4), 16)})
    return canon, raw


def _split(canon: pd.DataFrame, raw: pd.DataFrame):
    """The two halves of topics (two collections), canonical and raw."""
    first = canon["topic"].astype(int) <= 8
    return (canon[first], canon[~first], raw[raw["qid"] <= 8], raw[raw["qid"] > 8])


# (name, call on canonical frame(s) with **kw, a function from the result to numbers)
CASES = {
    "pairwise": (lambda f, **k: irm.pairwise(f, "t", adjust="holm", **k),
                 lambda r: r.table[["diff", "statistic", "p", "p_adj", "effect_mse"]]),
    "pairwise_randomization": (
        lambda f, **k: irm.pairwise(f, "randomization", n_resamples=500, seed=3, **k),
        lambda r: r.table[["diff", "p"]]),
    "gstudy": (lambda f, **k: irm.gstudy(f, **k), lambda r: r.components),
    "compare": (lambda f, **k: irm.compare(f, test="t", **k),
                lambda r: r.pairs[["diff", "p_adj"]]),
    "variability": (lambda f, **k: irm.variability.variability(f, **k), lambda r: r.table),
    "variability_compare": (
        lambda f, **k: irm.variability.compare(f, "bm25", "rm3", "levene_median", **k),
        lambda r: pd.Series([r.statistic, r.p])),
    "tie_breaking": (lambda f, **k: irm.variability.tie_breaking(f, **k),
                     lambda r: r.pairs.select_dtypes("number")),
    "error_rate": (lambda f, **k: irm.variability.error_rate(f, sizes=[4], n_trials=5, **k),
                   lambda r: r.select_dtypes("number")),
    "pair_sd": (lambda f, **k: irm.power.pair_sd(f, **k), lambda r: r[["diff", "sd"]]),
    "topics_table": (lambda f, **k: irm.power.topics_table(f, deltas=[0.05], **k),
                     lambda r: r.required),
    "simulate_paired_t": (
        lambda f, **k: irm.power.simulate_paired_t(f, "bm25", "rm3", 10, n_trials=50, rng=2,
                                                   **k),
        lambda r: r.select_dtypes("number")),
    "topic_sets": (lambda f, **k: irm.studies.topic_sets(f, sizes=[4], n_samples=20,
                                                         test="t", seed=1, **k),
                   lambda r: r.to_frame().select_dtypes("number")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_user_names_give_the_canonical_numbers(frames, name) -> None:
    canon, raw = frames
    call, numbers = CASES[name]
    expected = numbers(call(canon))
    got = numbers(call(raw, **KW))
    pd.testing.assert_frame_equal(pd.DataFrame(got).reset_index(drop=True),
                                  pd.DataFrame(expected).reset_index(drop=True),
                                  check_exact=False, rtol=1e-12, atol=1e-15)
    assert np.isfinite(pd.DataFrame(got).select_dtypes("number").to_numpy(float)).any()


@pytest.mark.parametrize("name", list(CASES))
def test_misspelt_column_is_named_with_did_you_mean(frames, name) -> None:
    _, raw = frames
    call, _ = CASES[name]
    with pytest.raises(DataFormatError, match=r"no column 'rn' \(did you mean 'run'\?\)"):
        call(raw, **{**KW, "system": "rn"})
    # the canonical names on a frame that has other names: the keyword to use is said
    with pytest.raises(DataFormatError,
                       match=r"no column 'topic' \(did you mean 'qid'\?\).*topic='qid'"):
        call(raw)


def test_comparability_with_user_names(frames) -> None:
    canon, raw = frames
    a, b, ra, rb = _split(canon, raw)
    exp = irm.comparability(a, b, n_resamples=50, n_halvings=10, seed=1)
    got = irm.comparability(ra, rb, n_resamples=50, n_halvings=10, seed=1, **KW)
    assert got.kappa == pytest.approx(exp.kappa, rel=1e-12)
    assert got.p_value == exp.p_value
    assert got.rmse == pytest.approx(exp.rmse, rel=1e-12)
    with pytest.raises(DataFormatError, match=r"no column 'mapp'.*did you mean 'map'"):
        irm.comparability(ra, rb, **{**KW, "score": "mapp"})


def test_rank_correlations_with_user_names(frames) -> None:
    canon, raw = frames
    a, b, ra, rb = _split(canon, raw)
    assert irm.kendall_tau(ra, rb, system="run", score="map") == pytest.approx(
        irm.kendall_tau(a, b), rel=1e-12)
    assert irm.tau_ap(ra, rb, system="run", score="map") == pytest.approx(
        irm.tau_ap(a, b), rel=1e-12)
    with pytest.raises(DataFormatError, match=r"no column 'sytem' \(did you mean 'system'"):
        irm.kendall_tau(a, b, system="sytem")
    for f in (irm.rbo, irm.average_overlap):
        exp = f(a, b, depth=10)
        got = f(ra, rb, depth=10, system="run", score="map")
        assert (got.ext if hasattr(got, "ext") else got) == pytest.approx(
            exp.ext if hasattr(exp, "ext") else exp, rel=1e-12)
        got = f(ra, rb, depth=10, ties="expected", system="run", score="map")
        exp = f(a, b, depth=10, ties="expected")
        assert (got.ext if hasattr(got, "ext") else got) == pytest.approx(
            exp.ext if hasattr(exp, "ext") else exp, rel=1e-12)
        with pytest.raises(DataFormatError, match=r"no column 'sytem' \(did you mean 'system'"):
            f(a, b, system="sytem")


def test_pooling_adjust_with_user_names() -> None:
    u = pd.DataFrame({"qid": ["1", "2", "3", "4"], "ap": [0.20, 0.30, 0.25, 0.40]})
    t = pd.DataFrame({"qid": ["1", "2"], "ap": [0.26, 0.34]})
    got = irm.pooling.adjust(u, t, topic="qid", score="ap")
    exp = irm.pooling.adjust(u.set_index("qid")["ap"], t.set_index("qid")["ap"])
    assert got.adjustment == pytest.approx(exp.adjustment, rel=1e-12)
    assert got.adjustment == pytest.approx(0.05, rel=1e-12)
    with pytest.raises(DataFormatError, match=r"no column 'qd' \(did you mean 'qid'"):
        irm.pooling.adjust(u, t, topic="qd", score="ap")


def test_gstudy_of_a_result_with_user_named_data(frames) -> None:
    canon, raw = frames
    fit = irm.anova("score ~ topic + system", canon)
    got = irm.gstudy(fit, data=raw, **KW)
    exp = irm.gstudy(fit, data=canon)
    pd.testing.assert_frame_equal(got.components, exp.components)


def test_results_name_the_users_columns(frames) -> None:
    canon, raw = frames
    g = irm.gstudy(raw, **KW)
    text = g.summary()
    assert "run " in text and "qid " in text and "(run x qid)" in text
    assert list(g.components.index) == ["system", "topic", "Residual"]  # code keeps canon
    assert "system " not in irm.gstudy(raw, **KW).summary().split("D-study")[0].split("\n", 1)[1]
    c = irm.compare(raw, **KW)
    lines = c.summary().splitlines()
    assert lines[0].endswith("alpha = 0.05") and " on map:" in lines[0]
    assert lines[3].split() == ["run"]  # the rows are headed by the user's system column
    assert "system" in irm.compare(canon).summary().splitlines()[3]
    p = irm.pairwise(raw, **KW)
    assert "topics in 'qid', systems in 'run'" in p.summary()
    assert "qid" not in irm.pairwise(canon).summary()
    v = irm.variability.variability(raw, **KW)
    assert v._display_tables()[0][1].index.name == "run"
    assert v.table.index.name == "system"


@pytest.mark.parametrize("func", [
    irm.pairwise, irm.gstudy, irm.compare, irm.comparability, irm.variability.variability,
    irm.variability.compare, irm.variability.tie_breaking, irm.variability.error_rate,
    irm.power.pair_sd, irm.power.topics_table, irm.power.simulate_paired_t,
    irm.studies.topic_sets, irm.kendall_tau, irm.tau_ap, irm.pooling.adjust, irm.rbo,
    irm.average_overlap,
])
def test_the_names_are_keyword_only(func) -> None:
    params = inspect.signature(func).parameters
    named = [n for n in ("topic", "system", "score") if n in params]
    assert "score" in named
    for n in named:
        assert params[n].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[n].default == n


def test_bad_names_are_usage_errors(frames) -> None:
    _, raw = frames
    with pytest.raises(UsageError, match="system= names a column"):
        irm.pairwise(raw, topic="qid", system=None, score="map")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="topic= and system= both name the column 'qid'"):
        irm.pairwise(raw, topic="qid", system="qid", score="map")
