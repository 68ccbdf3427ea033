"""Bpref, infAP, IPrec@r, 11pt_avg, SP, DCG, condensed lists and irm.aggregate.

Oracles: trec_eval 10's own output on its test files (out.test.aq, 4 decimals), pytrec_eval-
terrier (trec_eval's C code, full precision), scipy (the means), and the definitions (SP = AP x R).
DCG against ranx is checked in tests/data/test_adapters_real.py (test_dcg_against_ranx), with the
other ranx tests.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
import irmodels.data._kernels as kernels
from irmodels.data.measures import parse_measure
from irmodels.errors import DataFormatError, UndefinedValueWarning, UsageError

pytrec_eval = pytest.importorskip("pytrec_eval")

ELEVEN = [f"iprec_at_recall_{r:.2f}" for r in np.arange(11) / 10]


@pytest.fixture(scope="module")
def trec(shared_data):
    d = shared_data / "trec_eval"
    out = pd.read_csv(d / "out.test.aq", sep=r"\s+", header=None,
                      names=["measure", "topic", "value"], dtype=str)
    return {"run": irm.read_run(d / "results.test"), "qrels": irm.read_qrels(d / "qrels.test"),
            "graded": irm.read_qrels(d / "qrels.rel_level"), "out": out}


def _quiet(*args, **kwargs) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        return irm.evaluate(*args, **kwargs)


def _series(f: pd.DataFrame, name: str) -> pd.Series:
    return f[f["measure"] == name].set_index("topic")["score"].astype(float)


def _pytrec(runs: pd.DataFrame, qrels: pd.DataFrame, measures: set[str], level: int = 1,
            judged_only: bool = False) -> dict:
    qd: dict = {}
    for t, d, r in qrels[["topic", "docid", "rel"]].itertuples(index=False):
        qd.setdefault(str(t), {})[str(d)] = int(r)
    ev = pytrec_eval.RelevanceEvaluator(qd, measures, relevance_level=level,
                                        judged_docs_only_flag=int(judged_only))
    out = {}
    for s, g in runs.groupby("system", sort=False):
        rd: dict = {}
        for t, d, sc in g[["topic", "docid", "score"]].itertuples(index=False):
            rd.setdefault(str(t), {})[str(d)] = float(sc)
        for t, vals in ev.evaluate(rd).items():
            for k, v in vals.items():
                out[(k, t, str(s))] = v
    return out


# --------------------------------------------------------------------------------------------
# trec_eval's own output (trec_eval -q -c on results.test / qrels.test)


def test_equals_trec_eval_per_topic_and_all(trec):
    names = ["bpref", "infAP", "map", "11pt_avg", *ELEVEN]
    f = irm.evaluate(trec["run"], trec["qrels"], names)
    out = trec["out"]
    n = 0
    for name in names:
        mine = _series(f, parse_measure(name).name)
        ref = out[out["measure"] == name].set_index("topic")["value"].astype(float)
        assert list(ref.index) == ["301", "302", "303", "all"], name
        for topic, value in ref.items():
            got = mine.mean() if topic == "all" else mine[topic]
            assert round(got, 4) == pytest.approx(value, abs=1e-9), (name, topic)
            n += 1
    assert n == 4 * len(names)
    # a few values spelled out
    assert mine is not None
    assert _series(f, "Bpref")["302"] == pytest.approx(0.4712, abs=5e-5)
    assert _series(f, "IPrec@0.1")["301"] == pytest.approx(0.2098, abs=5e-5)
    assert _series(f, "IPrec@0.6")["302"] == pytest.approx(0.1528, abs=5e-5)


def test_geometric_means_equal_trec_eval_all_line(trec):
    out = trec["out"].set_index(["measure", "topic"])["value"]
    out = out[out.index.get_level_values(0).isin(["map", "bpref", "gm_map", "gm_bpref"])]
    out = out.astype(float)
    f = irm.evaluate(trec["run"], trec["qrels"], ["AP", "Bpref", "GMAP", "gm_bpref"])
    agg = irm.aggregate(f).set_index("measure")["score"]
    assert round(agg["AP"], 4) == out[("map", "all")]
    assert round(agg["Bpref"], 4) == out[("bpref", "all")]
    assert round(agg["GMAP"], 4) == out[("gm_map", "all")] == 0.1051
    assert round(agg["gm_bpref"], 4) == out[("gm_bpref", "all")] == 0.0083
    g = irm.aggregate(f[f["measure"].isin(["AP", "Bpref"])], "gmean").set_index("measure")
    assert g.loc["AP", "score"] == pytest.approx(agg["GMAP"], rel=1e-12)
    assert g.loc["Bpref", "score"] == pytest.approx(agg["gm_bpref"], rel=1e-12)
    assert g["n_topics"].tolist() == [3, 3]
    # the definition, by hand: exp(mean(log(max(x, 1e-5))))
    bp = _series(f, "Bpref")
    assert bp["303"] == 0.0  # the topic whose floor makes gm_bpref small
    assert g.loc["Bpref", "score"] == pytest.approx(
        math.exp(np.mean(np.log(np.maximum(bp.to_numpy(), 1e-5)))), rel=1e-14)


def test_infap_with_every_pooled_document_judged_is_ap(trec):
    """qrels.test has no negative grade: infAP is AP up to its 1e-5 smoothing (trec_eval
    prints the same 4 decimals for both)."""
    f = irm.evaluate(trec["run"], trec["qrels"], ["AP", "infAP"])
    d = (_series(f, "infAP") - _series(f, "AP")).abs()
    assert d.max() < 2e-5
    assert d.max() > 0  # the smoothing is there


# --------------------------------------------------------------------------------------------
# pytrec_eval-terrier at full precision


PTE = {"Bpref": "bpref", "infAP": "infAP", "gm_bpref": "gm_bpref", "AP": "map",
       "P@10": "P_10", "nDCG@10": "ndcg_cut_10", "RR": "recip_rank", "R@100": "recall_100"}


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("judged_only", [False, True])
def test_equals_pytrec_eval_on_trec_files(trec, graded, level, judged_only):
    """qrels.rel_level has 304 grades -1 (pooled, not judged): infAP's estimate and the
    condensed lists (trec_eval -J) differ from the plain measures there."""
    qrels = trec["graded"] if graded else trec["qrels"]
    ref = _pytrec(trec["run"], qrels, {"bpref", "infAP", "gm_bpref", "map", "P", "ndcg_cut",
                                       "recip_rank", "recall"}, level, judged_only)
    f = _quiet(trec["run"], qrels, list(PTE), relevance_level=level, judged_only=judged_only)
    n = 0
    for ours, theirs in PTE.items():
        name = parse_measure(ours).name
        if judged_only:
            name = name.replace("@", "(judged_only=True)@") if "@" in name \
                else f"{name}(judged_only=True)"
        mine = _series(f, name)
        for t in ("301", "302", "303"):
            assert mine[t] == pytest.approx(ref[(theirs, t, "STANDARD")], abs=1e-12), \
                (ours, t)
            n += 1
    assert n == 3 * len(PTE)
    if graded and level == 1 and not judged_only:
        # topic 303 retrieves 69 documents graded -1: infAP estimates AP from the judged ones
        assert _series(f, "infAP")["303"] == pytest.approx(0.120024, abs=5e-7)
        assert _series(f, "AP")["303"] == pytest.approx(0.082258, abs=5e-7)


def _random(rng: np.random.Generator, n_sys=3, n_topics=5, n_docs=50):
    docids = np.array([f"D{i:03d}" for i in range(n_docs)], dtype=object)
    qrows = []
    for t in range(n_topics):
        for d in rng.choice(n_docs, size=int(rng.integers(5, n_docs)), replace=False):
            rel = rng.choice([-1, 0, 1, 2], p=[0.15, 0.5, 0.25, 0.1])
            qrows.append((f"q{t}", docids[d], int(rel)))
    qrels = pd.DataFrame(qrows, columns=["topic", "docid", "rel"])
    rrows = []
    for s in range(n_sys):
        for t in range(n_topics):
            k = int(rng.integers(1, n_docs))
            for d, sc in zip(rng.choice(n_docs, size=k, replace=False), rng.normal(size=k)):
                rrows.append((f"sys{s}", f"q{t}", docids[d], float(sc)))
    return pd.DataFrame(rrows, columns=["system", "topic", "docid", "score"]), qrels


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equals_pytrec_eval_on_random_runs(seed):
    runs, qrels = _random(np.random.default_rng(seed))
    for judged_only in (False, True):
        ref = _pytrec(runs, qrels, {"bpref", "infAP", "map", "ndcg_cut", "P"}, 1, judged_only)
        f = _quiet(runs, qrels, ["Bpref", "infAP", "AP", "nDCG@10", "P@10"],
                   judged_only=judged_only)
        suffix = "(judged_only=True)" if judged_only else ""
        names = {f"Bpref{suffix}": "bpref", f"infAP{suffix}": "infAP", f"AP{suffix}": "map",
                 f"nDCG{suffix}@10": "ndcg_cut_10", f"P{suffix}@10": "P_10"}
        got = {(m, str(t), str(s)): v for m, t, s, v in
               f[["measure", "topic", "system", "score"]].itertuples(index=False)}
        for ours, theirs in names.items():
            for (meas, t, s), value in ref.items():
                if meas == theirs:
                    assert got[(ours, t, s)] == pytest.approx(value, abs=1e-12), (ours, t, s)


def test_iprec_rounding_rule_of_trec_eval_9(trec, monkeypatch):
    """trec_eval 10 finds the m-th relevant document for recall r with m = lround(r R);
    trec_eval 9 (and pytrec_eval-terrier 0.5.11, which bundles it) with m = (long)(r R + 0.9).
    irmodels follows trec_eval 10 (out.test.aq above); with the older rule swapped in, the
    kernel gives pytrec_eval's values to 1e-12, so only the rule differs."""
    run, qrels = trec["run"], trec["graded"]
    names = [f"IPrec@{r / 10}" for r in range(11)] + ["11pt_avg"]
    theirs = dict(zip(names, [*ELEVEN, "11pt_avg"]))
    ref = _pytrec(run, qrels, {"iprec_at_recall", "11pt_avg"}, 1)
    new = irm.evaluate(run, qrels, names)
    assert _series(new, "IPrec@0.1")["301"] == pytest.approx(0.2098214286, abs=1e-9)
    assert ref[("iprec_at_recall_0.10", "301", "STANDARD")] == pytest.approx(0.2096069869,
                                                                               abs=1e-9)
    monkeypatch.setattr(kernels, "_lround", lambda x: np.floor(x + 0.9).astype(np.int64))
    old = irm.evaluate(run, qrels, names)
    for name in names:
        for t in ("301", "302", "303"):
            assert _series(old, name)[t] == pytest.approx(ref[(theirs[name], t, "STANDARD")],
                                                          abs=1e-12), (name, t)


def test_iprec_by_hand():
    """One ranking, R = 4: relevant at ranks 1, 3, 6 (P = 1, 2/3, 1/2); the 4th not retrieved."""
    qrels = pd.DataFrame({"topic": "1", "docid": ["a", "c", "f", "z", "b"],
                          "rel": [1, 1, 1, 1, 0]})
    runs = pd.DataFrame({"system": "s", "topic": "1", "docid": list("abcdefgh"),
                         "score": np.arange(8, 0, -1.0)})
    f = irm.evaluate(runs, qrels, [f"IPrec@{r / 10}" for r in range(11)] + ["11pt_avg"])
    got = _series(f, "IPrec@0.0").tolist() + [_series(f, f"IPrec@{r / 10}")["1"]
                                               for r in range(1, 11)]
    # m = lround(r * 4): 0,0,1,1,2,2,2,3,3,4,4 -> max P at or below the m-th relevant
    want = [1, 1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0.5, 0.5, 0, 0]
    assert got == pytest.approx(want, abs=1e-15)
    assert _series(f, "11pt_avg")["1"] == pytest.approx(sum(want) / 11, abs=1e-15)


# --------------------------------------------------------------------------------------------
# SP and DCG


def test_sum_precision_is_ap_times_r(trec):
    f = irm.evaluate(trec["run"], trec["graded"], ["SP", "AP", "num_rel", "SP@100", "AP@100"])
    sp, ap, r = _series(f, "SP"), _series(f, "AP"), _series(f, "num_rel")
    np.testing.assert_allclose(sp, ap * r, rtol=1e-13)
    np.testing.assert_allclose(_series(f, "SP@100"), _series(f, "AP@100") * r, rtol=1e-13)
    # SP is defined (0) without relevant documents; AP is undefined
    q = pd.DataFrame({"topic": "1", "docid": ["a"], "rel": [0]})
    runs = pd.DataFrame({"system": "s", "topic": "1", "docid": ["a"], "score": [1.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedValueWarning)
        assert irm.evaluate(runs, q, ["SP", "DCG@5"])["score"].tolist() == [0.0, 0.0]


def _trec_order(run: pd.DataFrame) -> pd.DataFrame:
    """The run with distinct scores in trec_eval's order (ties: document id descending)."""
    ordered = run.sort_values(["topic", "score", "docid"], ascending=[True, False, False])
    return ordered.assign(score=np.arange(len(ordered), 0, -1, dtype=float))


def test_dcg_by_hand_and_ndcg(trec):
    run, qrels = trec["run"], trec["graded"]
    f0 = irm.evaluate(run, qrels, ["DCG@10", "DCG", "nDCG@10", "nDCG"])
    grade = qrels.set_index(["topic", "docid"])["rel"]
    for topic, g in _trec_order(run).groupby("topic"):
        gains = np.array([max(int(grade.get((topic, d), 0)), 0) for d in g["docid"]], float)
        disc = np.log2(np.arange(2, len(gains) + 2))
        assert _series(f0, "DCG@10")[topic] == pytest.approx(
            float(np.sum(gains[:10] / disc[:10])), abs=1e-12)
        assert _series(f0, "DCG")[topic] == pytest.approx(float(np.sum(gains / disc)),
                                                          abs=1e-12)
    # DCG divided by nDCG is the ideal DCG, the same for every system
    ideal = _series(f0, "DCG") / _series(f0, "nDCG")
    qr = qrels[qrels["rel"] > 0].sort_values(["topic", "rel"], ascending=[True, False])
    by_hand = qr.groupby("topic")["rel"].apply(
        lambda g: float(np.sum(g.to_numpy() / np.log2(np.arange(2, len(g) + 2)))))
    np.testing.assert_allclose(ideal.sort_index(), by_hand.sort_index(), rtol=1e-12)


# --------------------------------------------------------------------------------------------
# names and condensed lists


@pytest.mark.parametrize("text,name", [
    ("bpref", "Bpref"), ("Bpref", "Bpref"), ("BPref", "Bpref"), ("infAP", "infAP"),
    ("iprec_at_recall_0.10", "IPrec@0.1"), ("IPrec@0.1", "IPrec@0.1"), ("IPrec@1", "IPrec@1.0"),
    ("iprec_at_recall_0.00", "IPrec@0.0"), ("11pt_avg", "11pt_avg"), ("gm_bpref", "gm_bpref"),
    ("sp", "SP"), ("SP@10", "SP@10"), ("DCG@10", "DCG@10"), ("dcg", "DCG"),
    ("AP(judged_only=True)", "AP(judged_only=True)"),
    ("nDCG(judged_only=True)@10", "nDCG(judged_only=True)@10"),
    ("P(judged_only=False)@5", "P@5"),
    ("RBP(p=0.8, judged_only=True)", "RBP(p=0.8, judged_only=True)"),
])
def test_names(text, name):
    m = parse_measure(text)
    assert m.name == name
    assert parse_measure(m.name) == m


def test_names_agree_with_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    for name in ["Bpref", "infAP", "IPrec@0.1", "IPrec@1.0", "AP(judged_only=True)",
                 "nDCG(judged_only=True)@10", "P(judged_only=True)@10"]:
        assert str(ir_measures.parse_measure(name)) == parse_measure(name).name


@pytest.mark.parametrize("text,fragment", [
    ("IPrec@1.5", "must be in [0, 1]"), ("RBP_res(judged_only=True)", "a condensed list has none"),
    ("bperf", "did you mean 'bpref'"), ("AP(judged_only=maybe)", "unknown measure"),
])
def test_bad_names(text, fragment):
    with pytest.raises(DataFormatError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        parse_measure(text)


def test_judged_only_keyword_equals_names_and_condenses(trec):
    run, qrels = trec["run"], trec["graded"]
    a = _quiet(run, qrels, ["AP", "P@10"], judged_only=True)
    b = _quiet(run, qrels, ["AP(judged_only=True)", "P(judged_only=True)@10"])
    pd.testing.assert_frame_equal(a, b)
    assert list(a["measure"].cat.categories) == ["AP(judged_only=True)", "P(judged_only=True)@10"]
    # both kinds in one call: each from its own rankings
    c = _quiet(run, qrels, ["P@10", "P(judged_only=True)@10", "num_ret",
                            "num_ret(judged_only=True)"])
    judged = qrels.merge(run, on=["topic", "docid"])
    n_judged = judged[judged["rel"] >= 0].groupby("topic").size()
    assert _series(c, "num_ret(judged_only=True)").to_dict() == {
        t: float(n) for t, n in n_judged.items()}
    assert (_series(c, "num_ret") == 500).all()
    assert (_series(c, "P(judged_only=True)@10") >= _series(c, "P@10")).all()
    # on the condensed list the unjudged documents are gone: removing them by hand is the same
    kept = run.merge(qrels[qrels["rel"] >= 0][["topic", "docid"]], on=["topic", "docid"])
    d = _quiet(kept, qrels, ["AP", "P@10", "nDCG@10"])
    e = _quiet(run, qrels, ["AP", "P@10", "nDCG@10"], judged_only=True)
    np.testing.assert_allclose(d["score"], e["score"], atol=1e-15)


def test_judged_only_refusals(trec):
    with pytest.raises(DataFormatError, match="RBP_res"):
        irm.evaluate(trec["run"], trec["qrels"], ["AP", "RBP_res(p=0.8)"], judged_only=True)
    f = irm.evaluate(trec["run"], trec["qrels"], ["AP", "num_rel"], judged_only=True)
    assert list(f["measure"].cat.categories) == ["AP(judged_only=True)", "num_rel"]
    with pytest.raises(UsageError, match="judged_only must be True or False"):
        irm.evaluate(trec["run"], trec["qrels"], ["AP"], judged_only="yes")  # type: ignore


def test_judged_only_is_not_taken_by_the_fast_paths():
    from irmodels.replicates.documents import _simulated_measure
    from irmodels.studies._sharded import fast_measure

    assert fast_measure("AP") == parse_measure("AP")
    assert fast_measure("AP(judged_only=True)") is None
    with pytest.raises(DataFormatError, match="not supported by the simulator"):
        _simulated_measure("AP(judged_only=True)")
    h = kernels.hits_from_ranks(np.array([[1.0, 3.0]]), np.array([2]))
    with pytest.raises(DataFormatError, match="needs condensed rankings"):
        kernels.score(parse_measure("AP(judged_only=True)"), h)
    with pytest.raises(DataFormatError, match="judged non-relevant"):
        kernels.score(parse_measure("Bpref"), h)


def test_new_measures_with_shards(trec):
    """Per shard, bpref counts the judged non-relevant documents of the (topic, shard)."""
    run, qrels = trec["run"], trec["qrels"]
    docs = pd.unique(pd.concat([run["docid"], qrels["docid"]]))
    shards = pd.Series(np.arange(len(docs)) % 2 + 1, index=docs)
    f = _quiet(run, qrels, ["Bpref", "infAP", "IPrec@0.5", "SP"], shards=shards)
    for shard in (1, 2):
        ids = set(shards.index[shards == shard])
        sub = _quiet(run[run["docid"].isin(ids)], qrels[qrels["docid"].isin(ids)],
                     ["Bpref", "infAP", "IPrec@0.5", "SP"])
        mine = f[f["shard"] == str(shard)]
        np.testing.assert_allclose(mine["score"].to_numpy(), sub["score"].to_numpy(),
                                   atol=1e-15)


# --------------------------------------------------------------------------------------------
# irm.aggregate


def test_aggregate_against_scipy(rng):
    from scipy import stats

    m = pd.DataFrame(rng.uniform(0, 1, size=(30, 4)), columns=list("abcd"))
    m.iloc[3, 1] = 0.0
    m.iloc[5, 2] = 1e-7
    m.index = pd.Index([f"t{i}" for i in range(30)], name="topic")
    floored = np.maximum(m.to_numpy(), 1e-5)
    want = {"mean": m.mean().to_numpy(), "median": m.median().to_numpy(),
            "gmean": stats.gmean(floored), "hmean": stats.hmean(floored)}
    long = irm.from_wide(m)
    for how, w in want.items():
        got = irm.aggregate(m, how)
        assert got.columns.tolist() == ["system", "n_topics", "score"]
        np.testing.assert_allclose(got["score"], w, rtol=1e-13)
        assert got["n_topics"].tolist() == [30] * 4
        np.testing.assert_allclose(irm.aggregate(long, how)["score"], w, rtol=1e-13)
    g = irm.aggregate(m, "gmean", epsilon=1e-2)
    np.testing.assert_allclose(g["score"], stats.gmean(np.maximum(m.to_numpy(), 1e-2)),
                               rtol=1e-13)
    assert g["score"][1] > irm.aggregate(m, "gmean")["score"][1]


def test_aggregate_groups_and_missing(rng):
    f = irm.collection.generate(preset="tiny", seed=0)
    scores = _quiet(f.runs, f.qrels, ["AP", "P@10"])
    agg = irm.aggregate(scores, "median")
    assert agg.columns.tolist() == ["measure", "system", "n_topics", "score"]
    assert len(agg) == 2 * scores["system"].nunique()
    want = scores.groupby(["measure", "system"], observed=True)["score"].median()
    np.testing.assert_allclose(agg["score"], want.to_numpy(), rtol=1e-15)
    m = pd.DataFrame({"a": [0.5, np.nan, 0.1], "b": [0.2, 0.4, 0.6]})
    got = irm.aggregate(m)
    assert got["n_topics"].tolist() == [2, 3]
    assert got["score"].tolist() == pytest.approx([0.3, 0.4])


def test_aggregate_refusals():
    m = pd.DataFrame({"a": [0.5, -0.1], "b": [0.2, 0.4]})
    with pytest.raises(DataFormatError, match="needs scores >= 0"):
        irm.aggregate(m, "gmean")
    assert irm.aggregate(m, "median")["score"].tolist() == pytest.approx([0.2, 0.3])
    with pytest.raises(UsageError, match="how must be one of"):
        irm.aggregate(m, "geometric")  # type: ignore[arg-type]
    for eps in (0, -1e-5, float("nan"), True):
        with pytest.raises(UsageError, match="epsilon must be a positive"):
            irm.aggregate(m, "gmean", epsilon=eps)
    with pytest.raises(DataFormatError, match="long frame"):
        irm.aggregate(m.to_numpy())  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="not numeric"):
        irm.aggregate(pd.DataFrame({"a": ["x"], "b": [0.1]}))
    logs = pd.DataFrame({"measure": "GMAP", "topic": ["1", "2"], "system": "s",
                         "score": np.log([0.5, 0.02])})
    assert irm.aggregate(logs)["score"][0] == pytest.approx(0.1, rel=1e-14)
    with pytest.raises(UsageError, match="how='mean' gives their geometric mean"):
        irm.aggregate(logs, "median")


def test_partitioned_runs_keep_judged_only():
    """Runs given partitioned by system are evaluated part by part: judged_only reaches each."""
    runs, qrels = _random(np.random.default_rng(7), n_sys=4)
    parts = [g for _, g in runs.groupby("system", sort=True)]
    names = ["Bpref", "infAP", "IPrec@0.3", "SP", "DCG@5"]
    for judged_only in (False, True):
        whole = _quiet(runs, qrels, names, judged_only=judged_only)
        split = _quiet(parts, qrels, names, judged_only=judged_only)
        pd.testing.assert_frame_equal(whole, split)
    assert "Bpref(judged_only=True)" in set(split["measure"].astype(str))
