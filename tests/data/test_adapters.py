"""Inputs from other tools: PyTerrier, ir_measures, ranx, ir_datasets, polars, file-like objects.

Fakes reproduce each tool's public shape (fields, columns, methods); ir_measures itself is used
when installed (test extra) and must agree with irm.evaluate to 1e-12.
"""

from __future__ import annotations

import io
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError

Metric = namedtuple("Metric", "query_id measure value")
Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")  # ir_datasets' TrecQrel
ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")


@pytest.fixture(scope="module")
def demo():
    return irm.collection.generate(preset="tiny", seed=0)


@pytest.fixture(scope="module")
def reference(demo):
    return irm.evaluate(demo.runs, demo.qrels, ["AP", "nDCG@10", "P@5"])


def _key(df):
    cols = [c for c in ("measure", "topic", "system") if c in df.columns]
    out = df.assign(**{c: df[c].astype(str) for c in cols}).sort_values(cols)
    return out[cols + ["score"]].reset_index(drop=True)


class FakeRun:  # ranx.Run: name, to_dict() {qid: {docid: score}}, scores {metric: {qid: v}}
    __module__ = "ranx.data_structures.run"

    def __init__(self, name, runs, scores=None):
        self.name = name
        self._d = {str(t): dict(zip(g["docid"], g["score"])) for t, g in runs.groupby("topic", observed=True)}
        self.scores = scores or {}

    def to_dict(self):
        return self._d


FakeRun.__name__ = FakeRun.__qualname__ = "Run"


class FakeQrels:
    __module__ = "ranx.data_structures.qrels"

    def __init__(self, qrels):
        self._d = {str(t): dict(zip(g["docid"], g["rel"])) for t, g in qrels.groupby("topic", observed=True)}

    def to_dict(self):
        return self._d


FakeQrels.__name__ = FakeQrels.__qualname__ = "Qrels"


class FakePolars:  # polars.DataFrame: to_pandas()
    __module__ = "polars.dataframe.frame"

    def __init__(self, df):
        self._df = df

    def to_pandas(self):
        return self._df.copy()


def test_pyterrier_perquery_frame(reference):
    pt = reference.rename(columns={"topic": "qid", "system": "name", "score": "value"})
    pt = pt.assign(qid=pt["qid"].astype(str), name=pt["name"].astype(str),
                   measure=pt["measure"].astype(str))[["name", "qid", "measure", "value"]]
    pd.testing.assert_frame_equal(_key(irm.frame(pt)), _key(reference), check_categorical=False)


def test_ir_measures_results_by_run(reference):
    res = {str(s): [Metric(str(r.topic), str(r.measure), r.score) for r in g.itertuples()]
           for s, g in reference.groupby("system", observed=True)}
    pd.testing.assert_frame_equal(_key(irm.frame(res)), _key(reference), check_categorical=False)
    with pytest.raises(DataFormatError, match=r"no run name; name the run with .*system="):
        irm.frame(next(iter(res.values())))
    name, one = next(iter(res.items()))  # system= names the one run (a generator is read once)
    got = irm.frame(iter(one), system=name)
    pd.testing.assert_frame_equal(_key(got), _key(reference[reference["system"] == name]),
                                  check_categorical=False)


def test_real_ir_measures_agrees_with_evaluate(demo, reference):
    ir_measures = pytest.importorskip("ir_measures")
    qrels = [ir_measures.Qrel(str(r.topic), str(r.docid), int(r.rel)) for r in demo.qrels.itertuples()]
    measures = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P @ 5]
    res = {}
    for s, g in demo.runs.groupby("system", observed=True):
        run = [ir_measures.ScoredDoc(str(r.topic), str(r.docid), float(r.score)) for r in g.itertuples()]
        res[str(s)] = list(ir_measures.iter_calc(measures, qrels, run))
    got = _key(irm.frame(res))
    ref = _key(reference)
    assert got[["measure", "topic", "system"]].equals(ref[["measure", "topic", "system"]])
    np.testing.assert_allclose(got["score"], ref["score"], rtol=0, atol=1e-12)
    # and its Qrel / ScoredDoc tuples go straight into irm.evaluate
    runs = {s: [ir_measures.ScoredDoc(str(r.topic), str(r.docid), float(r.score)) for r in g.itertuples()]
            for s, g in demo.runs.groupby("system", observed=True)}
    again = irm.evaluate({str(k): v for k, v in runs.items()}, qrels, ["AP", "nDCG@10", "P@5"])
    pd.testing.assert_frame_equal(_key(again), ref)


def test_ranx_run_and_qrels_into_evaluate(demo, reference):
    runs = [FakeRun(str(s), g) for s, g in demo.runs.groupby("system", observed=True)]
    got = irm.evaluate(runs, FakeQrels(demo.qrels), ["AP", "nDCG@10", "P@5"])
    pd.testing.assert_frame_equal(_key(got), _key(reference))
    one = irm.evaluate(runs[0], FakeQrels(demo.qrels), ["AP"])
    assert set(one["system"].astype(str)) == {runs[0].name}


def test_ranx_runs_with_per_query_scores_into_frame(reference):
    ap = reference[reference["measure"] == "AP"]
    runs = []
    for s, g in ap.groupby("system", observed=True):
        scores = {"map": dict(zip(g["topic"].astype(str), g["score"])), "ndcg@10": 0.5}
        run = FakeRun(str(s), pd.DataFrame({"topic": [], "docid": [], "score": []}), scores)
        runs.append(run)
    f = irm.frame(runs)
    assert set(f["measure"].astype(str)) == {"map"} and len(f) == len(ap)
    with pytest.raises(DataFormatError, match="return_mean=False"):
        irm.frame(FakeRun("empty", pd.DataFrame({"topic": [], "docid": [], "score": []})))


def test_ir_datasets_qrels_iterator_and_dataset(demo, reference):
    tuples = [Qrel(str(r.topic), str(r.docid), int(r.rel), "0") for r in demo.qrels.itertuples()]
    got = irm.evaluate(demo.runs, iter(tuples), ["AP", "nDCG@10", "P@5"])  # read once
    pd.testing.assert_frame_equal(_key(got), _key(reference))

    class Dataset:  # ir_datasets.load(...): qrels_iter()
        def qrels_iter(self):
            return iter(tuples)

    got = irm.evaluate(demo.runs, Dataset(), ["AP"])
    pd.testing.assert_frame_equal(_key(got), _key(reference[reference["measure"] == "AP"]))


def test_pyterrier_result_frame_and_polars(demo, reference):
    pt_runs = demo.runs.rename(columns={"topic": "qid", "docid": "docno", "system": "name"})
    pt_qrels = demo.qrels.rename(columns={"topic": "qid", "docid": "docno", "rel": "label"})
    got = irm.evaluate(FakePolars(pt_runs), FakePolars(pt_qrels), ["AP", "nDCG@10", "P@5"])
    pd.testing.assert_frame_equal(_key(got), _key(reference))
    f = irm.frame(FakePolars(reference.astype({"topic": str, "system": str, "measure": str})))
    pd.testing.assert_frame_equal(_key(f), _key(reference), check_categorical=False)


def test_file_like_objects(demo, reference):
    csv = io.StringIO(reference.to_csv(index=False))
    pd.testing.assert_frame_equal(_key(irm.frame(csv)), _key(reference), check_categorical=False)
    tsv = io.BytesIO(reference.to_csv(index=False, sep="\t").encode())
    assert len(irm.frame(tsv)) == len(reference)
    one = demo.runs[demo.runs["system"].astype(str) == "sys01"]
    run_text = "".join(f"{r.topic} Q0 {r.docid} {i + 1} {r.score!r} sys01\n"
                       for i, r in enumerate(one.itertuples()))
    qrels_text = "".join(f"{r.topic} 0 {r.docid} {r.rel}\n" for r in demo.qrels.itertuples())
    got = irm.evaluate(io.StringIO(run_text), io.StringIO(qrels_text), ["AP"])
    ref = reference[(reference["measure"] == "AP") & (reference["system"].astype(str) == "sys01")]
    np.testing.assert_allclose(_key(got)["score"], _key(ref)["score"], atol=1e-12)
    with pytest.raises(DataFormatError, match="file-like qrels"):
        irm.evaluate(io.StringIO(run_text), io.StringIO("1 0 d1 notanumber\n"), ["AP"])


def test_what_is_not_understood_is_named():
    with pytest.raises(DataFormatError, match=r"irm.frame got .*int.*PyTerrier perquery"):
        irm.frame(42)
    with pytest.raises(DataFormatError, match="ScoredDoc|Metric|not per-topic scores"):
        irm.frame([ScoredDoc("1", "d", 1.0)])
    with pytest.raises(DataFormatError, match="Qrel\\(query_id, doc_id, relevance\\)"):
        irm.evaluate(pd.DataFrame({"system": ["a"], "topic": ["1"], "docid": ["d"], "score": [1.0]}),
                     [("1", "d", 1)], ["AP"])
    with pytest.raises(DataFormatError, match="run 'x' is"):
        irm.evaluate({"x": 3.5}, pd.DataFrame({"topic": ["1"], "docid": ["d"], "rel": [1]}), ["AP"])


def test_nested_dicts_refused_in_words():
    """The dicts of pytrec_eval / ir_measures: a wrong shape names the query and the way out."""
    runs = {"bm25": {"1": {"d1": 2.0, "d2": 1.0}}}
    with pytest.raises(DataFormatError, match=r"qrels dict is \{query id: \{doc id: grade\}\}"):
        irm.evaluate(runs, {"1": {"d1": {"x": 1}}}, ["AP"])
    with pytest.raises(DataFormatError, match="run 'bm25': query '2' holds builtins.int"):
        irm.evaluate({"bm25": {"1": {"d1": 2.0}, "2": 5}}, {"1": {"d1": 1}}, ["AP"])
    got = irm.evaluate(runs, {"1": {"d1": 0, "d2": 1}}, ["AP", "P@1"])
    assert got["score"].tolist() == [0.5, 0.0]  # d1 first, not relevant; d2 at rank 2
    with pytest.raises(DataFormatError, match="query '2'.*'map'.*must be a number"):
        irm.frame({"1": {"map": 0.5}, "2": {"map": "n/a"}}, system="bm25")
    with pytest.raises(DataFormatError, match=r"run 'dph': query '1' holds .*\{measure: value\}"):
        irm.frame({"bm25": {"1": {"map": 0.5}}, "dph": {"1": 0.5}})
    with pytest.raises(DataFormatError, match="one number per key.*means over topics"):
        irm.frame({"bm25": 0.31, "dph": 0.29})


def test_frame_names_one_run_with_system(reference):
    ap = reference[(reference["measure"] == "AP") & (reference["system"] == "sys01")]
    per_query = {str(t): {"AP": s} for t, s in zip(ap["topic"], ap["score"])}
    got = irm.frame(per_query, system="sys01")
    pd.testing.assert_frame_equal(_key(got), _key(ap), check_categorical=False)
    # a frame's system= is still its column's name
    renamed = ap.rename(columns={"system": "run"})
    assert irm.frame(renamed.drop(columns="measure"), system="run")["system"].iloc[0] == "sys01"
    with pytest.raises(irm.errors.UsageError, match="names a single run"):
        irm.frame({"sys01": per_query, "sys02": per_query}, system="x")


def test_pyterrier_and_ir_measures_run_frames(demo, reference):
    one = demo.runs[demo.runs["system"].astype(str) == "sys01"]
    pt_res = one.rename(columns={"topic": "qid", "docid": "docno"}).assign(
        docid=np.arange(len(one)), query="q")[["qid", "docid", "docno", "rank", "score", "query"]]
    ref = reference[reference["system"] == "sys01"]
    got = irm.evaluate({"sys01": pt_res}, demo.qrels, ["AP", "nDCG@10", "P@5"])
    pd.testing.assert_frame_equal(_key(got), _key(ref))
    im = one.rename(columns={"topic": "query_id", "docid": "doc_id"})[["query_id", "doc_id", "score"]]
    got = irm.evaluate(im, demo.qrels, ["AP", "nDCG@10", "P@5"])
    assert set(got["system"].astype(str)) == {"run"}
    np.testing.assert_allclose(_key(got)["score"], _key(ref)["score"], rtol=0, atol=1e-12)


def test_fake_ranx_runs_without_distinct_names(demo):
    runs = [FakeRun(None, g) for _, g in demo.runs.groupby("system", observed=True)]
    with pytest.raises(DataFormatError, match=r"Run 1 of 4 has no name"):
        irm.evaluate(runs, FakeQrels(demo.qrels), ["AP"])
    one = irm.evaluate(runs[0], FakeQrels(demo.qrels), ["AP"])  # a single run: the system "run"
    assert list(one["system"].cat.categories) == ["run"]


def test_frames_are_not_records():
    """A frame's columns read as attributes; a list of frames is not a list of tuples."""
    metrics = pd.DataFrame({"query_id": ["1"], "measure": ["AP"], "value": [0.5]})
    with pytest.raises(DataFormatError, match="a sequence of a DataFrame .*not per-topic"):
        irm.frame([metrics])
    qrels = pd.DataFrame({"query_id": ["1"], "doc_id": ["d"], "relevance": [1]})
    with pytest.raises(DataFormatError, match="qrels given as a sequence of a DataFrame"):
        irm.evaluate({"a": {"1": {"d": 1.0}}}, (qrels,), ["AP"])
