"""Inputs from other tools, with the tools themselves: ranx, ir_measures and pytrec_eval-terrier
(all three in the ``test`` extra, so these tests run in CI; ``importorskip`` only keeps a bare
install from failing).

One small collection is written in each tool's own objects (ranx ``Qrels``/``Run``, pytrec_eval
dicts, ir_measures tuples and frames, PyTerrier frames); ``irm.evaluate`` must give the same frame
from every one of them, and its scores must equal each tool's own per-query values to 1e-12 on
the measures they share. The per-query outputs of the tools (ranx ``run.scores``, pytrec_eval's
``evaluate(run)``, ir_measures' ``iter_calc``) go through ``irm.frame`` to the same numbers.
irm.evaluate's DCG@10 on trec_eval's test files equals ranx's dcg@10.

The suite runs ranx with numba's compiler off (``NUMBA_DISABLE_JIT=1``, set in the root
conftest.py): ranx's own functions run as Python, with the same results; compiled, they cost
about 45 s of CPU in a fresh environment. ``NUMBA_DISABLE_JIT=0 pytest`` runs them compiled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, UsageError

# ranx's numba kernels note an int cast on every call
pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64:Warning")

MEASURES = ["AP", "nDCG@10", "P@5", "R@10", "RR", "Rprec"]
# the same measures by each tool's own name
RANX = {"map": "AP", "ndcg@10": "nDCG@10", "precision@5": "P@5", "recall@10": "R@10",
        "mrr": "RR", "r-precision": "Rprec"}
PYTREC = {"map": "AP", "ndcg_cut_10": "nDCG@10", "P_5": "P@5", "recall_10": "R@10",
          "recip_rank": "RR", "Rprec": "Rprec"}


@pytest.fixture(scope="module")
def ranx():
    return pytest.importorskip("ranx")


@pytest.fixture(scope="module")
def ir_measures():
    return pytest.importorskip("ir_measures")


@pytest.fixture(scope="module")
def pytrec_eval():
    return pytest.importorskip("pytrec_eval")


@pytest.fixture(scope="module")
def data():
    """Three runs on eight topics: distinct scores (ranx breaks ties its own way), graded qrels
    with judged documents no run retrieves and retrieved documents nobody judged."""
    rng = np.random.default_rng(20261127)
    # ids shaped as the tiny demo collection's (docs/data.md's ranx example): run compiled
    # (NUMBA_DISABLE_JIT=0), ranx's numba kernels are compiled once for both
    docs = [f"D{i:07d}" for i in range(60)]
    runs, qrels = [], []
    for t in range(1, 9):
        topic = str(t)
        judged = rng.choice(docs, size=30, replace=False)
        grades = rng.choice([0, 0, 1, 2], size=30)
        grades[0] = 1  # every topic has a relevant document
        qrels += [(topic, d, int(g)) for d, g in zip(judged, grades)]
        for s in ("bm25", "dph", "qld"):
            retrieved = rng.choice(docs, size=25, replace=False)
            scores = rng.permutation(25) + rng.uniform(0.05, 0.95, size=25)  # no ties
            runs += [(s, topic, d, float(x)) for d, x in zip(retrieved, scores)]
    runs = pd.DataFrame(runs, columns=["system", "topic", "docid", "score"])
    qrels = pd.DataFrame(qrels, columns=["topic", "docid", "rel"])
    return runs, qrels


@pytest.fixture(scope="module")
def reference(data):
    runs, qrels = data
    return irm.evaluate(runs, qrels, MEASURES)


def _nested(df, value):
    return {str(t): dict(zip(g["docid"], g[value].tolist()))
            for t, g in df.groupby("topic", sort=False)}


def _run_dicts(runs):
    return {str(s): _nested(g, "score") for s, g in runs.groupby("system", sort=False)}


def _by_name(frame, names):
    """A frame of a tool's measure names as irmodels' names (rows keyed for comparison)."""
    out = frame.assign(measure=frame["measure"].astype(str).map(names))
    assert out["measure"].notna().all()
    return _key(out)


def _key(df):
    cols = ["measure", "topic", "system"]
    out = df.assign(**{c: df[c].astype(str) for c in cols}).sort_values(cols)
    return out[cols + ["score"]].reset_index(drop=True)


def _same_scores(got, ref):
    got, ref = _key(got), _key(ref)
    pd.testing.assert_frame_equal(got[["measure", "topic", "system"]],
                                  ref[["measure", "topic", "system"]])
    np.testing.assert_allclose(got["score"], ref["score"], rtol=0, atol=1e-12)


# --- ranx --------------------------------------------------------------------------------------


def test_ranx_qrels_and_runs_into_evaluate(ranx, data, reference):
    runs, qrels = data
    rq = ranx.Qrels(_nested(qrels, "rel"))
    rruns = [ranx.Run(d, name=s) for s, d in _run_dicts(runs).items()]
    got = irm.evaluate(rruns, rq, MEASURES)  # a real Qrels was refused ("got Dict")
    pd.testing.assert_frame_equal(got, reference)
    pd.testing.assert_frame_equal(irm.evaluate({r.name: r for r in rruns}, rq, MEASURES),
                                  reference)
    one = irm.evaluate(rruns[1], rq, MEASURES)
    pd.testing.assert_frame_equal(_key(one), _key(reference[reference["system"] == "dph"]))


def test_evaluate_equals_ranx_own_values(ranx, data, reference):
    runs, qrels = data
    rq = ranx.Qrels(_nested(qrels, "rel"))
    rruns = [ranx.Run(d, name=s) for s, d in _run_dicts(runs).items()]
    for run in rruns:
        ranx.evaluate(rq, run, list(RANX), return_mean=False)
    per_query = irm.frame(rruns)  # run.scores: {metric: {qid: value}}
    assert len(per_query) == len(reference)
    _same_scores(_by_name(per_query, RANX), reference)
    # the ranx figures are not all alike (a test that could not fail would pass on zeros)
    assert per_query["score"].std() > 0.1


def test_unnamed_ranx_runs_are_never_merged(ranx, data):
    runs, qrels = data
    rq = ranx.Qrels(_nested(qrels, "rel"))
    dicts = list(_run_dicts(runs).values())
    unnamed = [ranx.Run(d) for d in dicts[:2]]
    with pytest.raises(DataFormatError, match=r"Run 1 of 2 has no name.*run\.name.*\{name: run\}"):
        irm.evaluate(unnamed, rq, ["AP"])
    twins = [ranx.Run(d, name="bm25") for d in dicts[:2]]
    with pytest.raises(DataFormatError, match="Runs 1 and 2 .* both named 'bm25'"):
        irm.evaluate(twins, rq, ["AP"])
    # a dict names them, whatever run.name says
    got = irm.evaluate({"a": twins[0], "b": twins[1]}, rq, ["AP"])
    assert sorted(got["system"].astype(str).unique()) == ["a", "b"]
    for run in unnamed + twins:
        ranx.evaluate(rq, run, ["map"], return_mean=False)
    with pytest.raises(DataFormatError, match="has no name"):
        irm.frame(unnamed)
    with pytest.raises(DataFormatError, match="both named"):
        irm.frame(twins)
    with pytest.raises(DataFormatError, match="has no name"):
        irm.frame(unnamed[0])
    one = irm.frame(unnamed[0], system="first")  # system= names a single run
    assert list(one["system"].cat.categories) == ["first"] and len(one) == 8
    with pytest.raises(UsageError, match="names a single run"):
        irm.frame([twins[0], unnamed[1]], system="x")


def test_ranx_arrays_without_query_ids_are_refused(ranx, data):
    runs, qrels = data
    rq = ranx.Qrels(_nested(qrels, "rel"))
    run = ranx.Run(_run_dicts(runs)["bm25"], name="bm25")
    arrays = ranx.evaluate(rq, run, ["map", "ndcg@10"], return_mean=False)
    with pytest.raises(DataFormatError, match="without query ids.*ranx Run itself"):
        irm.frame(arrays)


@pytest.mark.slow  # compiled (NUMBA_DISABLE_JIT=0), ranx compiles its numba kernels here
def test_dcg_against_ranx(ranx, shared_data):
    """irm.evaluate's DCG@10 on trec_eval's test files (graded qrels, tied scores) equals ranx's
    dcg@10. (Here, with the other ranx tests, rather than in tests/data/test_measures_more.py:
    compiled, ranx's kernels cost seconds in every process that uses them.)"""
    run = irm.read_run(shared_data / "trec_eval" / "results.test")
    qrels = irm.read_qrels(shared_data / "trec_eval" / "qrels.rel_level")
    f0 = irm.evaluate(run, qrels, ["DCG@10"])
    # ranx breaks ties its own way: give every document a distinct score in trec_eval's order
    # (ties: document id descending)
    ordered = run.sort_values(["topic", "score", "docid"], ascending=[True, False, False])
    ordered = ordered.assign(score=np.arange(len(ordered), 0, -1, dtype=float))
    rq = ranx.Qrels(_nested(qrels.assign(rel=qrels["rel"].clip(lower=0)), "rel"))
    rr = ranx.Run(_nested(ordered, "score"))
    ref = ranx.evaluate(rq, rr, ["dcg@10"], return_mean=False)
    assert list(rr.get_query_ids()) == ["301", "302", "303"]
    mine = f0[f0["measure"] == "DCG@10"].set_index("topic")["score"].astype(float)
    assert [str(t) for t in mine.index] == ["301", "302", "303"]
    assert np.ptp(np.asarray(ref)) > 0.5  # the three topics differ: no pass on equal values
    np.testing.assert_allclose(mine.to_numpy(), np.asarray(ref), atol=1e-12)


# --- pytrec_eval -------------------------------------------------------------------------------


def test_pytrec_eval_dicts_into_evaluate(pytrec_eval, data, reference):
    runs, qrels = data
    got = irm.evaluate(_run_dicts(runs), _nested(qrels, "rel"), MEASURES)
    pd.testing.assert_frame_equal(got, reference)
    one = irm.evaluate(_run_dicts(runs)["qld"], _nested(qrels, "rel"), ["AP"])
    assert list(one["system"].cat.categories) == ["run"]  # a single dict run has no name
    ref = reference[(reference["system"] == "qld") & (reference["measure"] == "AP")]
    np.testing.assert_array_equal(one["score"].to_numpy(), ref["score"].to_numpy())


def test_pytrec_eval_output_into_frame(pytrec_eval, data, reference):
    runs, qrels = data
    evaluator = pytrec_eval.RelevanceEvaluator(_nested(qrels, "rel"), set(PYTREC))
    out = {s: evaluator.evaluate(d) for s, d in _run_dicts(runs).items()}
    many = irm.frame(out)  # {run: {qid: {measure: value}}}
    _same_scores(_by_name(many, PYTREC), reference)
    assert set(many["measure"].astype(str)) == set(PYTREC)
    one = irm.frame(out["dph"], system="dph")  # {qid: {measure: value}} needs a name
    _same_scores(_by_name(one, PYTREC), reference[reference["system"] == "dph"])
    with pytest.raises(DataFormatError, match=r"no run name; name it with irm\.frame\(scores, "
                                              r"system='bm25'\)"):
        irm.frame(out["dph"])
    with pytest.raises(UsageError, match="names a single run.*3 runs"):
        irm.frame(out, system="dph")


def test_trec_eval_test_run_through_pytrec_eval_dicts(pytrec_eval, shared_data):
    """trec_eval's own test files (tied scores): the dicts pytrec_eval reads give irm.evaluate
    the values of pytrec_eval itself."""
    run = irm.read_run(shared_data / "trec_eval" / "results.test")
    qrels = irm.read_qrels(shared_data / "trec_eval" / "qrels.test")
    run_d, qrels_d = _nested(run, "score"), _nested(qrels, "rel")
    got = irm.evaluate({"STANDARD": run_d}, qrels_d, MEASURES)
    pd.testing.assert_frame_equal(got, irm.evaluate(run, qrels, MEASURES))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_d, set(PYTREC))
    own = irm.frame(evaluator.evaluate(run_d), system="STANDARD")
    _same_scores(_by_name(own, PYTREC), got)
    ap = got[got["measure"] == "AP"].set_index(got.loc[got["measure"] == "AP", "topic"].astype(str))
    assert ap.loc["301", "score"] == pytest.approx(0.0324253, abs=5e-8)  # the tie at 301


# --- ir_measures -------------------------------------------------------------------------------


def test_ir_measures_objects_into_evaluate(ir_measures, data, reference):
    runs, qrels = data
    tuples_q = [ir_measures.Qrel(r.topic, r.docid, r.rel) for r in qrels.itertuples()]
    tuples_r = {s: [ir_measures.ScoredDoc(r.topic, r.docid, r.score) for r in g.itertuples()]
                for s, g in runs.groupby("system", sort=False)}
    pd.testing.assert_frame_equal(irm.evaluate(tuples_r, iter(tuples_q), MEASURES), reference)
    # its frames: query_id, doc_id, relevance / query_id, doc_id, score
    frame_q = qrels.rename(columns={"topic": "query_id", "docid": "doc_id", "rel": "relevance"})
    frame_r = {s: g.rename(columns={"topic": "query_id", "docid": "doc_id"})
               [["query_id", "doc_id", "score"]] for s, g in runs.groupby("system", sort=False)}
    pd.testing.assert_frame_equal(irm.evaluate(frame_r, frame_q, MEASURES), reference)
    # one run, as ir_measures reads it (a generator of ScoredDoc, read once): the system "run"
    one = irm.evaluate(iter(tuples_r["bm25"]), tuples_q, MEASURES)
    ref = reference[reference["system"] == "bm25"].assign(system="run")
    _same_scores(one, ref)
    # and ir_measures itself gives the same numbers
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    res = {s: ir_measures.iter_calc(measures, tuples_q, r) for s, r in tuples_r.items()}
    _same_scores(irm.frame(res), reference)
    single = irm.frame(ir_measures.iter_calc(measures, tuples_q, tuples_r["qld"]), system="qld")
    _same_scores(single, reference[reference["system"] == "qld"])


def test_ir_measures_aggregates_are_refused_and_agree(ir_measures, data, reference):
    runs, qrels = data
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    agg = {s: ir_measures.calc_aggregate(measures, _nested(qrels, "rel"), d)
           for s, d in _run_dicts(runs).items()}
    with pytest.raises(DataFormatError, match="calc_aggregate results by run.*iter_calc"):
        irm.frame(agg)
    with pytest.raises(DataFormatError, match="calc_aggregate results .*means over topics"):
        irm.frame(agg["bm25"])
    means = reference.groupby(["system", "measure"], observed=True)["score"].mean()
    for s, by_measure in agg.items():
        for m, v in by_measure.items():
            assert means[(s, str(m))] == pytest.approx(v, abs=1e-12)


# --- PyTerrier frames (PyTerrier itself needs Java; its frames are built by hand) --------------


def test_pyterrier_result_frames(data, reference):
    runs, qrels = data
    res = runs.rename(columns={"topic": "qid", "docid": "docno"})
    res = res.assign(docid=np.arange(len(res)), query="some text",  # its index's own numbers
                     rank=res.groupby(["system", "qid"]).cumcount())
    pt_qrels = qrels.rename(columns={"topic": "qid", "docid": "docno", "rel": "label"})
    by_name = {s: g[["qid", "docid", "docno", "rank", "score", "query"]]
               for s, g in res.groupby("system", sort=False)}
    pd.testing.assert_frame_equal(irm.evaluate(by_name, pt_qrels, MEASURES), reference)
    named = res.rename(columns={"system": "name"})[["qid", "docno", "score", "rank", "name"]]
    pd.testing.assert_frame_equal(irm.evaluate(named, pt_qrels, MEASURES), reference)
