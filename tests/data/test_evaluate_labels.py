"""irm.evaluate and the adapters on malformed labels, scores, grades and options.

Labels are compared as text (5 and "5" are one document), a missing label is refused instead of
being filed under another topic or system, scores and grades that would only become numbers by
losing information are refused, and the adapters turn decoding and parsing failures into
DataFormatError naming the line or the entry.
"""

from __future__ import annotations

import io
import warnings
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.data._encode import factorize_labels
from irmodels.errors import ArgumentError, DataFormatError, UndefinedValueWarning, UsageError

Metric = namedtuple("Metric", "query_id measure value")
ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")

QRELS = pd.DataFrame({"topic": ["1", "1", "1"], "docid": ["a", "b", "c"], "rel": [1, 0, 2]})
RUN = pd.DataFrame({"system": "s", "topic": "1", "docid": ["a", "b", "c"],
                    "score": [3.0, 2.0, 1.0]})
AP_RUN = 0.8333333333333333  # AP of RUN against QRELS: (1/1 + 2/3) / 2


def _evaluate(runs, qrels, measures=("AP",), **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        warnings.simplefilter("error", RuntimeWarning)  # no raw numpy warning may leak
        return irm.evaluate(runs, qrels, list(measures), **kw)


def _scores(frame):
    return {(str(m), str(s)): v for m, s, v in
            zip(frame["measure"], frame["system"], frame["score"])}


# --------------------------------------------------------------------------------------------
# 1. labels are text: 5 and "5" are one document


def test_int_and_str_docids_from_two_sources_are_the_same_documents():
    q = pd.DataFrame({"topic": ["1", "1"], "docid": ["5", "7"], "rel": [1, 1]})
    a = pd.DataFrame({"system": "A", "topic": "1", "docid": [5, 7], "score": [2.0, 1.0]})
    b = pd.DataFrame({"system": "B", "topic": "1", "docid": ["5", "7"], "score": [2.0, 1.0]})
    assert _evaluate(a, q)["score"].tolist() == [1.0]
    assert _evaluate(b, q)["score"].tolist() == [1.0]
    both = _evaluate(pd.concat([a, b], ignore_index=True), q, ["AP", "P@2"])
    assert _scores(both) == {("AP", "A"): 1.0, ("AP", "B"): 1.0,
                             ("P@2", "A"): 1.0, ("P@2", "B"): 1.0}
    # the dict form concatenates the runs into one object column as well
    d = _evaluate({"A": a.drop(columns="system"), "B": b.drop(columns="system")}, q)
    assert _scores(d) == {("AP", "A"): 1.0, ("AP", "B"): 1.0}


def test_int_and_str_spelling_of_one_docid_in_a_ranking_is_a_duplicate():
    q = pd.DataFrame({"topic": ["1", "1"], "docid": ["5", "7"], "rel": [1, 1]})
    c = pd.DataFrame({"system": "C", "topic": "1",
                      "docid": pd.Series([5, "5"], dtype=object), "score": [2.0, 1.0]})
    with pytest.raises(DataFormatError, match=r"appear twice in one ranking, e.g. '5'"):
        _evaluate(c, q)


def test_int_and_str_system_labels_are_one_system():
    both = pd.concat([RUN.assign(system=1), RUN.assign(system="1")], ignore_index=True)
    with pytest.raises(DataFormatError, match=r"appear twice in one ranking.*system '1'"):
        _evaluate(both, QRELS)
    # a categorical whose categories are 1 and "1": the same
    with pytest.raises(DataFormatError, match=r"appear twice in one ranking.*system '1'"):
        _evaluate(both.assign(system=both["system"].astype("category")), QRELS)
    # different systems with int labels are fine
    two = pd.concat([RUN.assign(system=1), RUN.assign(system=2)], ignore_index=True)
    assert _scores(_evaluate(two, QRELS)) == {("AP", "1"): AP_RUN, ("AP", "2"): AP_RUN}


def test_int_topics_in_runs_match_str_topics_in_qrels():
    out = _evaluate(pd.concat([RUN.assign(topic=1)]).astype({"topic": object}), QRELS)
    assert out["score"].tolist() == [AP_RUN]


def test_factorize_merges_labels_of_the_same_text():
    codes, labels = factorize_labels(pd.Series([5, "5", "7", 7], dtype=object, name="docid"))
    assert codes.tolist() == [0, 0, 1, 1] and labels.tolist() == ["5", "7"]


# --------------------------------------------------------------------------------------------
# 2. missing labels are refused, whatever the column's dtype


@pytest.mark.parametrize("dtype", [object, "category", "string[pyarrow]", "str",
                                   "string[python]"])
@pytest.mark.parametrize("column", ["system", "topic", "docid"])
def test_missing_run_label_is_refused(dtype, column):
    col = pd.Series(list(RUN[column]), dtype=object)
    col[2] = None
    runs = RUN.assign(**{column: col.astype(dtype)})
    with pytest.raises(DataFormatError,
                       match=rf"runs column '{column}' has 1 missing value\(s\).*first at row 2"):
        _evaluate(runs, QRELS)


@pytest.mark.parametrize("dtype", [object, "category", "string[pyarrow]", "str"])
@pytest.mark.parametrize("column", ["topic", "docid"])
def test_missing_qrels_label_is_refused(dtype, column):
    col = pd.Series(list(QRELS[column]), dtype=object)
    col[1] = np.nan
    qrels = QRELS.assign(**{column: col.astype(dtype)})
    with pytest.raises(DataFormatError,
                       match=rf"qrels column '{column}' has 1 missing value\(s\).*first at row 1"):
        _evaluate(RUN, qrels)


def test_missing_topic_is_not_scored_under_another_topic():
    # the tester's case: the third row's topic None used to be scored under topic '2'
    qrels = pd.DataFrame({"topic": ["1", "2"], "docid": ["a", "b"], "rel": [1, 1]})
    runs = pd.DataFrame({"system": "s", "topic": pd.Series(["1", "2", None], dtype=object),
                         "docid": ["x", "y", "b"], "score": [3.0, 2.0, 1.0]})
    with pytest.raises(DataFormatError, match=r"runs column 'topic' has 1 missing"):
        _evaluate(runs, qrels)
    with pytest.raises(DataFormatError, match=r"runs column 'system' has 1 missing"):
        _evaluate(runs.assign(topic=["1", "2", "2"],
                              system=pd.Series(["s", "t", None], dtype=object)), qrels)


def test_missing_label_in_a_single_row_and_a_float_column():
    one = RUN.iloc[:1].assign(docid=pd.Series([None], dtype=object))
    with pytest.raises(DataFormatError, match=r"runs column 'docid' has 1 missing.*row 0"):
        _evaluate(one, QRELS)
    with pytest.raises(DataFormatError, match=r"runs column 'topic' has 2 missing.*row 1"):
        _evaluate(RUN.assign(topic=[1.0, np.nan, np.nan]), QRELS)


def test_missing_label_with_the_processes_backend():
    runs = RUN.assign(topic=pd.Series(["1", "1", None], dtype=object))
    with pytest.raises(DataFormatError, match=r"runs column 'topic' has 1 missing"):
        _evaluate(runs, QRELS, backend="processes", n_workers=1)


def test_missing_shard_or_shard_document_is_refused():
    with pytest.raises(DataFormatError,
                       match=r"shard assignment has 1 missing shard\(s\).*document 'b'"):
        _evaluate(RUN, QRELS, shards={"a": "x", "b": None, "c": "x"})
    with pytest.raises(DataFormatError, match=r"shard assignment has 1 missing document id"):
        _evaluate(RUN, QRELS, shards=pd.Series(["x", "x", "y"], index=["a", None, "c"]))
    ok = _evaluate(RUN, QRELS, shards={"a": "x", "b": "x", "c": "x"})
    assert ok["shard"].astype(str).tolist() == ["x"] and ok["score"].tolist() == [AP_RUN]


# --------------------------------------------------------------------------------------------
# 3. scores irm.frame refuses are refused by evaluate too


@pytest.mark.parametrize("score, match", [
    (pd.Series([True, 2.0, 1.0], dtype=object), "boolean True"),
    (pd.to_datetime(["2020-01-03", "2020-01-01", "2020-01-02"]), "dates or durations"),
    (pd.Series([1 + 5j, 2 + 0j, 3 + 0j]), "complex numbers"),
    (pd.Series([3.0, "x", 1.0], dtype=object), "non-numeric value 'x'"),
    (pd.Series([True, False, True]), "is boolean"),
])
def test_scores_that_are_not_numbers_are_refused(score, match):
    with pytest.raises(DataFormatError, match=match):
        _evaluate(RUN.assign(score=score), QRELS)


@pytest.mark.parametrize("score", [
    [3, 2, 1],
    np.array([3, 2, 1], dtype=np.float32),
    pd.Series([3.0, 2.0, 1.0], dtype=object),
    pd.Series(["3", "2", "1"], dtype=object),
    pd.array([3.0, 2.0, 1.0], dtype="Float64"),
])
def test_numeric_scores_of_any_dtype_still_work(score):
    assert _evaluate(RUN.assign(score=score), QRELS)["score"].tolist() == [AP_RUN]


def test_missing_or_infinite_scores_are_still_refused():
    with pytest.raises(DataFormatError, match=r"1 missing, non-numeric or infinite value"):
        _evaluate(RUN.assign(score=pd.array([3, 2, None], dtype="Int64")), QRELS)
    with pytest.raises(DataFormatError, match=r"infinite"):
        _evaluate(RUN.assign(score=[np.inf, 2.0, 1.0]), QRELS)


# --------------------------------------------------------------------------------------------
# 4. grades beyond trec_eval's int range


@pytest.mark.parametrize("grade", [2**32 + 1, 2**31, -(2**31) - 1, 1e19])
def test_grades_outside_int32_are_refused(grade):
    qrels = QRELS.assign(rel=pd.Series([1, grade, 2], dtype=object).astype(type(grade)))
    with pytest.raises(DataFormatError,
                       match=r"grade .* for topic '1', document 'b' \(row 1.*32-bit"):
        _evaluate(RUN, qrels, ["AP", "nDCG"])


def test_grades_at_the_int32_limits_are_scored():
    out = _evaluate(RUN, QRELS.assign(rel=[2**31 - 1, -(2**31), 0]), ["AP", "nDCG"])
    assert _scores(out) == {("AP", "s"): 1.0, ("nDCG", "s"): 1.0}


# --------------------------------------------------------------------------------------------
# 5. complete= takes booleans only


@pytest.mark.parametrize("value", ["no", "yes", 1, 0, None])
def test_complete_must_be_a_boolean(value):
    with pytest.raises(UsageError, match=r"complete must be True or False"):
        _evaluate(RUN, QRELS, complete=value)
    assert issubclass(UsageError, ArgumentError)


def test_complete_accepts_python_and_numpy_booleans():
    qrels = pd.concat([QRELS, pd.DataFrame({"topic": ["2"], "docid": ["a"], "rel": [1]})])
    assert len(_evaluate(RUN, qrels, complete=False)) == 1
    out = _evaluate(RUN, qrels, complete=np.True_)
    assert out["score"].tolist() == [AP_RUN, 0.0]


# --------------------------------------------------------------------------------------------
# 6. a column given twice


def test_repeated_columns_are_refused():
    with pytest.raises(DataFormatError, match=r"column 'score' appears more than once"):
        _evaluate(pd.concat([RUN, RUN[["score"]]], axis=1), QRELS)
    with pytest.raises(DataFormatError, match=r"column 'rel' appears more than once"):
        _evaluate(RUN, pd.concat([QRELS, QRELS[["rel"]]], axis=1))
    with pytest.raises(DataFormatError, match=r"run 'x': column 'docid' appears more than once"):
        _evaluate({"x": pd.concat([RUN.drop(columns="system"), RUN[["docid"]]], axis=1)},
                  QRELS)


# --------------------------------------------------------------------------------------------
# 7. adapters


def test_file_like_bytes_that_are_not_utf8():
    utf16 = io.BytesIO("topic,system,score\n1,a,0.5\n".encode("utf-16"))
    with pytest.raises(DataFormatError, match=r"not UTF-8 text \(byte 0xff at line 1.*UTF-16"):
        irm.frame(utf16)
    latin1 = io.BytesIO("topic,system,score\n1,é,0.5\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"not UTF-8 text \(byte 0xe9 at line 2, column 3"):
        irm.frame(latin1)
    with pytest.raises(DataFormatError, match=r"not UTF-8 text"):
        _evaluate(RUN, io.BytesIO("1 0 é 1\n".encode("latin-1")))
    # UTF-8 with a byte-order mark is read
    bom = io.BytesIO("\ufefftopic,system,score\n1,é,0.5\n".encode("utf-8"))
    assert irm.frame(bom)["system"].astype(str).tolist() == ["é"]


@pytest.mark.parametrize("value, match", [
    (None, r"result 0 .* has the value None; a score must be a number"),
    ("x", r"result 0 .* has the value 'x'; a score must be a number"),
    (True, r"result 0 .* has the value True"),
])
def test_metric_values_that_are_not_numbers(value, match):
    with pytest.raises(DataFormatError, match=rf"run 'bm25', {match}"):
        irm.frame({"bm25": [Metric("2", "AP", value)]})


def test_metric_without_query_id_is_refused():
    with pytest.raises(DataFormatError, match=r"run 'bm25', result 1 .* has no query_id"):
        irm.frame({"bm25": [Metric("1", "AP", 0.5), Metric(None, "AP", 0.5)]})
    ok = irm.frame({"bm25": [Metric("1", "AP", 0.5), Metric("2", "AP", "0.25")]})
    assert ok["score"].tolist() == [0.5, 0.25]


def test_table_text_with_a_row_longer_or_shorter_than_the_header():
    longer = r"CSV text, line 2: the row has 4 field\(s\) but the header has 3 \(topic, system"
    with pytest.raises(DataFormatError, match=longer):
        irm.frame(io.StringIO("topic,system,score\n1,a,0.5,1\n2,a,0.6,1\n"))
    with pytest.raises(DataFormatError, match=r"CSV text, line 3: the row has 4 field"):
        irm.frame(io.StringIO("topic,system,score\n1,a,0.5\n2,a,0.6,1\n"))
    with pytest.raises(DataFormatError, match=r"TSV text, line 3: the row has 2 field"):
        irm.frame(io.StringIO("topic\tsystem\tscore\n1\ta\t0.5\n2\ta\n"))
    # blank lines and quoted separators are not rows of another width
    ok = irm.frame(io.StringIO('topic,system,score\n\n1,"a,b",0.5\n\n2,"a,b",0.25\n'))
    assert ok["system"].astype(str).tolist() == ["a,b", "a,b"]
    assert ok["score"].tolist() == [0.5, 0.25]


def test_table_text_with_an_unclosed_quote():
    with pytest.raises(DataFormatError,
                       match=r"not a readable CSV table \(a quote that is never closed\)"):
        irm.frame(io.StringIO('topic,system,score\n1,"a,0.5\n'))


def test_dict_of_runs_mixing_a_frame_and_scored_docs():
    runs = {"x": RUN.drop(columns="system"),
            "y": [ScoredDoc("1", "b", 2.0), ScoredDoc("1", "a", 1.0)]}
    assert _scores(_evaluate(runs, QRELS)) == {("AP", "x"): AP_RUN, ("AP", "y"): 0.25}
    bad = {"x": RUN.drop(columns="system"), "y": [("1", "a", 1.0)]}
    with pytest.raises(DataFormatError, match=r"run 'y' is builtins.list"):
        _evaluate(bad, QRELS)


def test_topic_ids_written_as_floats_are_named() -> None:
    # a topic id that went through a float column is written "2.0": never matched to "2",
    # now said (when no topic matches at all, evaluate refuses and shows both lists)
    runs = pd.DataFrame({"system": "A", "topic": ["2", "2", "3"], "docid": ["d1", "d2", "d1"],
                         "score": [2.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"topic": pd.Series([2.0, 2.0, "3"], dtype=object),
                          "docid": ["d1", "d2", "d1"], "rel": [1, 0, 1]})
    with pytest.warns(irm.DataQualityWarning, match=r"leading zeros or a trailing \.0 \(run vs "
                                                     r"qrels: '2' vs '2\.0'\)"):
        out = irm.evaluate(runs, qrels, ["AP"])
    assert out["topic"].astype(str).tolist() == ["3"] and out["score"].tolist() == [1.0]
