"""Pooling bias (Webber thesis ch. 6): one simulated pool recomputed independently with
irm.evaluate on restricted qrels, the topic-based adjustment reducing MAE on the demo pools,
reproducibility across backends, irm.pooling.adjust by hand, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.studies.pooling import COLUMNS


@pytest.fixture(scope="module")
def small():
    return irm.collection.generate(preset="small", seed=0)


def _top(runs: pd.DataFrame, depth: int) -> pd.DataFrame:
    r = runs.sort_values(["system", "topic", "score", "docid"],
                         ascending=[True, True, False, False], kind="stable")
    return r[r.groupby(["system", "topic"]).cumcount() < depth]


def _p10(runs, qrels, judged: set) -> pd.Series:
    """P@10 of one run per topic with only the ``judged`` (topic, docid) pairs judged."""
    keep = [(t, d) in judged for t, d in zip(qrels["topic"], qrels["docid"])]
    q = qrels[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        ev = irm.evaluate(runs, q, ["P@10"], undefined=0.0)
    return ev.set_index(ev["topic"].astype(str))["score"]


def test_one_pool_recomputed_with_evaluate(small):
    """Width 4, one sampling, P@10 with assumed irrelevance: t, u and both adjustments by hand."""
    runs, qrels = small.runs, small.qrels
    w, n_common, seed = 4, 5, 3
    study = irm.studies.pooling_bias(runs, qrels, widths=w, common_topics=n_common,
                                     n_resamples=1, measure="P@10", seed=seed)
    systems = sorted(runs["system"].unique())
    topics = sorted(runs["topic"].astype(str).unique(), key=int)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(w,)).spawn(1)[0])
    pool = [systems[i] for i in np.sort(rng.choice(len(systems), size=w, replace=False))]
    common = np.zeros(len(topics), dtype=bool)
    common[rng.choice(len(topics), size=n_common, replace=False)] = True
    top = _top(runs, 10)
    docs = {s: set(zip(g["topic"].astype(str), g["docid"])) for s, g in top.groupby("system")}
    judged_pool = set().union(*(docs[s] for s in pool))
    err_unadj, err_topic, err_sys = [], [], []
    # a pooled system's scores on the pool's judgements: the same for every unpooled run r
    pooled = {s: _p10(runs[runs["system"] == s], qrels, judged_pool).reindex(topics).to_numpy()
              for s in pool}
    for r in systems:
        if r in pool:
            continue
        rr = runs[runs["system"] == r]
        t = _p10(rr, qrels, judged_pool | docs[r]).reindex(topics).to_numpy()
        u = _p10(rr, qrels, judged_pool).reindex(topics).to_numpy()
        gap = (t - u)[~common].mean()
        err_unadj.append(gap)
        err_topic.append(gap - (t - u)[common].mean())
        a_sys = []
        for s in pool:
            ss = runs[runs["system"] == s]
            ts = pooled[s]
            others = set().union(*(docs[o] for o in pool if o != s)) | docs[r]
            us = _p10(ss, qrels, others).reindex(topics).to_numpy()
            a_sys.append(ts - us)
        err_sys.append(gap - np.mean(a_sys, axis=0)[~common].mean())
    tab = study.to_frame().set_index("adjustment")
    assert tab.loc["topic", "mae_unadjusted"] == pytest.approx(np.mean(np.abs(err_unadj)))
    assert tab.loc["topic", "bias_unadjusted"] == pytest.approx(np.mean(err_unadj))
    assert tab.loc["topic", "mae_adjusted"] == pytest.approx(np.mean(np.abs(err_topic)))
    assert tab.loc["topic", "bias_adjusted"] == pytest.approx(np.mean(err_topic))
    assert tab.loc["system", "mae_adjusted"] == pytest.approx(np.mean(np.abs(err_sys)))
    assert tab.loc["system", "n_runs"] == len(systems) - w


def test_topic_based_adjustment_reduces_mae_on_demo_pools(small):
    study = irm.studies.pooling_bias(small.runs, small.qrels, widths=[2, 4, 8],
                                     common_topics=[5, 10], n_resamples=10, seed=0,
                                     treatment=["irrelevant", "condensed"])
    tab = study.to_frame()
    assert tuple(tab.columns) == COLUMNS
    topic = tab[tab["adjustment"] == "topic"]
    assert (topic["mae_adjusted"] < topic["mae_unadjusted"]).all()
    irr = topic[topic["treatment"] == "irrelevant"]
    # assumed irrelevance biases unpooled scores downwards, less so for wider pools
    assert (irr["bias_unadjusted"] > 0).all()
    assert (irr["bias_adjusted"].abs() < irr["bias_unadjusted"]).all()
    by_w = irr[irr["common_topics"] == 10].set_index("width")["mae_unadjusted"]
    assert by_w.is_monotonic_decreasing
    # Eq. 6.5: the SE shrinks as more topics are common
    se = irr.groupby("common_topics")["se_eq65"].mean()
    assert se.loc[10] < se.loc[5]


def test_tRBP_weights_and_reproducibility(small):
    w = irm.studies.pooling.rank_weights("RBP(p=0.8)@10")
    assert w.sum() == pytest.approx(1.0) and w[1] / w[0] == pytest.approx(0.8)
    kw = dict(widths=[3], common_topics=[4], n_resamples=4, seed=5)
    a = irm.studies.pooling_bias(small.runs, small.qrels, **kw)
    b = irm.studies.pooling_bias(small.runs, small.qrels, backend="processes", n_workers=2, **kw)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert "Pooling bias" in a.summary() and "\\toprule" in a.to_latex()
    assert len(a.plot().axes) == 1
    assert repr(a).startswith("<PoolingBiasStudy measure='RBP(0.8)@10'")


def test_pooling_n_samples_is_the_old_name_of_n_resamples(small):
    """Issue 26: a resample count is n_resamples; n_samples works for one release, with a
    FutureWarning naming the new name, and gives the same study."""
    kw = dict(widths=[3], common_topics=[4], seed=5)
    new = irm.studies.pooling_bias(small.runs, small.qrels, n_resamples=3, **kw)
    with pytest.warns(FutureWarning, match=r"pooling_bias\(n_samples=\.\.\.\) is deprecated; "
                      r"use n_resamples="):
        old = irm.studies.pooling_bias(small.runs, small.qrels, n_samples=3, **kw)
    pd.testing.assert_frame_equal(new.to_frame(), old.to_frame())
    assert new.n_resamples == 3 and "n_resamples=3>" in repr(new)
    with pytest.warns(FutureWarning, match="n_samples is deprecated; use n_resamples"):
        assert new.n_samples == 3
    with pytest.raises(irm.ArgumentError, match="got both n_samples= and n_resamples="):
        irm.studies.pooling_bias(small.runs, small.qrels, n_samples=3, n_resamples=4, **kw)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_sample'"):
        irm.studies.pooling_bias(small.runs, small.qrels, n_sample=3, **kw)


def test_pooling_bad_input(small):
    runs, qrels = small.runs, small.qrels
    with pytest.raises(irm.DesignError, match="pool width 12 is impossible with 12 runs"):
        irm.studies.pooling_bias(runs, qrels, widths=[12])
    with pytest.raises(irm.DesignError, match="asked for 20 common topics.*has 20 topics"):
        irm.studies.pooling_bias(runs, qrels, widths=[2], common_topics=[20])
    with pytest.raises(irm.DesignError, match="unknown measure"):
        irm.studies.pooling_bias(runs, qrels, widths=[2], measure="AP")
    with pytest.raises(irm.DesignError, match="unknown treatment"):
        irm.studies.pooling_bias(runs, qrels, widths=[2], treatment="drop")
    with pytest.raises(irm.DataFormatError, match="no column"):
        irm.studies.pooling_bias(runs.drop(columns="docid"), qrels, widths=[2])
    partial = runs[~((runs["system"] == runs["system"].iloc[0]) & (runs["topic"] == "1"))]
    with pytest.raises(irm.DesignError, match="every run to have a ranking for every topic"):
        irm.studies.pooling_bias(partial, qrels, widths=[2])


def test_adjust_by_hand():
    u = pd.Series({"1": 0.2, "2": 0.3, "3": 0.25, "4": 0.4, "5": 0.1})
    t = pd.Series({"1": 0.3, "2": 0.32, "5": 0.16})
    res = irm.pooling.adjust(u, t)
    gap = np.array([0.1, 0.02, 0.06])
    assert res.adjustment == pytest.approx(gap.mean())
    assert res.se == pytest.approx(math.sqrt((5 - 3) / 5 * gap.var(ddof=1) / 3))
    adj = res.scores.set_index("topic")["adjusted"]
    assert adj["3"] == pytest.approx(0.25 + gap.mean()) and adj["1"] == pytest.approx(0.3)
    assert res.mean_adjusted == pytest.approx(adj.mean())
    frame = pd.DataFrame({"topic": ["1", "2", "3", "4", "5"], "score": u.to_numpy()})
    assert irm.pooling.adjust(frame, t).adjustment == pytest.approx(res.adjustment)
    assert "Topic-based pooling adjustment" in res.summary()
    with pytest.raises(irm.DesignError, match="at least 2 common topics.*got 1"):
        irm.pooling.adjust(u, t.iloc[:1])
    with pytest.raises(irm.DesignError, match="at least 5 common topics"):
        irm.pooling.adjust(u, t, min_common=5)
    with pytest.raises(irm.DesignError, match="no unpooled one"):
        irm.pooling.adjust(u.iloc[1:], t)
    with pytest.raises(irm.DataFormatError):
        irm.pooling.adjust([0.1, 0.2], t)


def test_pools_ranked_as_evaluate_ranks(small):
    """The pools are the top documents in irm.evaluate's (trec_eval's) order: scores compared as
    C floats, ties by document id descending. Scores offset to 5000 + s/1000 tie in single
    precision far more often than in double; the study must equal the one on the scores rounded
    to single precision, where the ties are explicit."""
    runs = small.runs.copy()
    runs["score"] = 5000.0 + runs["score"] / 1000.0
    rounded = runs.assign(score=runs["score"].astype(np.float32).astype(np.float64))
    as_double = runs.sort_values(["system", "topic", "score"], ascending=[True, True, False])
    as_float = rounded.sort_values(["system", "topic", "score", "docid"],
                                   ascending=[True, True, False, False], kind="stable")
    # the offset scores do change the top 10 of some rankings between the two orders
    top_double = as_double.groupby(["system", "topic"]).head(10)
    top_float = as_float.groupby(["system", "topic"]).head(10)
    assert set(zip(top_double["system"], top_double["topic"], top_double["docid"])) != set(
        zip(top_float["system"], top_float["topic"], top_float["docid"]))
    kw = {"widths": [3, 6], "common_topics": 5, "n_resamples": 4, "measure": "P@10", "seed": 1}
    study = irm.studies.pooling_bias(runs, small.qrels, **kw)
    reference = irm.studies.pooling_bias(rounded, small.qrels, **kw)
    pd.testing.assert_frame_equal(study.to_frame(), reference.to_frame())
