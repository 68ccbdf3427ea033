"""Labels, cells and shapes that once came back as a wrong frame without a word (or as a raw
pandas error): labels equal as text, empty labels, a subset's unused levels, repeated cells,
rows with a field too many, an id column read as a system."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError, UsageError


def _long(**cols) -> pd.DataFrame:
    return pd.DataFrame(cols)


# --- frame -----------------------------------------------------------------------------------


@pytest.mark.parametrize("topic", [
    [1, "1"],
    pd.Categorical([1, "1"], categories=[1, "1"]),
    [2.0, "2.0"],
])
def test_labels_equal_as_text_are_refused(topic) -> None:
    # merged, 1 and "1" were one topic with two rows for system a: a duplicate key at best, a
    # pooled topic at worst
    with pytest.raises(DataFormatError, match=r"column 'topic' has the labels .* which are the "
                                              r"same as text"):
        irm.frame(_long(topic=topic, system=["a", "b"], score=[0.1, 0.2]))


def test_categorical_labels_become_text() -> None:
    f = irm.frame(_long(topic=pd.Categorical([10, 2, 10]), system=["a", "a", "b"],
                        score=[0.1, 0.2, 0.3]))
    assert list(f["topic"].cat.categories) == ["2", "10"]  # the categorical's order, as text
    assert f["topic"].astype(str).tolist() == ["10", "2", "10"]


@pytest.mark.parametrize("label", ["", "  "])
def test_empty_labels_are_refused(label) -> None:
    with pytest.raises(DataFormatError, match=r"column 'system' \(system\) has 1 empty label"):
        irm.frame(_long(topic=["1", "2"], system=["a", label], score=[0.1, 0.2]))


# --- to_wide / from_wide / balance ------------------------------------------------------------


def _grid() -> pd.DataFrame:
    return irm.frame(_long(topic=[1, 1, 2, 2], system=["a", "b", "a", "b"],
                           score=[0.1, 0.2, 0.3, 0.4]))


def test_to_wide_of_a_subset_has_no_phantom_columns(tmp_path: Path) -> None:
    f = _grid()
    sub = f[f["system"] == "a"]
    w = irm.to_wide(sub)
    assert list(w.columns) == ["a"] and w["a"].tolist() == [0.1, 0.3]
    # and the matrix written from it reads back (an all-NA column used to be refused)
    back = irm.read_matrix(irm.write_matrix(sub, tmp_path / "m.csv"))
    assert back["system"].astype(str).tolist() == ["a", "a"]


def test_to_wide_refuses_to_average_repeated_cells() -> None:
    dup = irm.frame(_long(topic=[1, 1], system=["a", "a"], score=[0.1, 0.3]), duplicates="allow")
    with pytest.raises(DesignError, match=r"2 rows share a \(topic, system\) cell, e\.g\. topic 1, "
                                          r"system a; pass aggregate='mean'"):
        irm.to_wide(dup)
    assert irm.to_wide(dup, aggregate="mean").loc["1", "a"] == pytest.approx(0.2, abs=1e-15)
    with pytest.raises(UsageError, match="aggregate must be 'raise' or 'mean', got 'sum'"):
        irm.to_wide(dup, aggregate="sum")


@pytest.mark.parametrize("wide, message", [
    (pd.DataFrame({"a": [0.1, 0.2]}, index=["t1", np.nan]), r"1 missing topic ids"),
    (pd.DataFrame([[0.1, 0.2]], columns=pd.Index(["a", None], dtype=object)),
     r"1 missing system names"),
    (pd.DataFrame([[0.1, 0.2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("b", "y")])),
     r"system names have several levels \(a MultiIndex\)"),
    ({"a": [0.1]}, r"expected a wide matrix as a pandas DataFrame .* got dict"),
    (np.array([[0.1]]), r"got ndarray"),
])
def test_from_wide_refuses_labels_it_cannot_keep(wide, message) -> None:
    with pytest.raises(DataFormatError, match=message):
        irm.from_wide(wide)


def test_balance_arguments() -> None:
    f = _grid()
    assert irm.balance(f, factors="topic").levels == {"topic": 2}  # one name, not letters
    with pytest.raises(UsageError, match="factors names 'topic' more than once"):
        irm.balance(f, factors=["topic", "topic"])
    with pytest.raises(DataFormatError, match="the data have no rows"):
        irm.balance(f.iloc[:0])
    raw = _long(topic=["1", None], system=["a", "a"], score=[0.1, 0.2])
    with pytest.raises(DataFormatError, match=r"column 'topic' has 1 missing value"):
        irm.balance(raw, factors=["topic", "system"])


# --- read_frame -------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_frame_rows_with_a_field_more(tmp_path: Path) -> None:
    # every row one field more: pandas made the first column an index and shifted the rest
    path = _write(tmp_path, "shift.csv", "topic,system,score\n1,a,0.5,1\n2,a,0.25,3\n")
    with pytest.raises(DataFormatError, match=r"shift\.csv, line 2: the rows have more fields "
                                              r"than the header's 3 columns"):
        irm.read_frame(path)
    path = _write(tmp_path, "some.csv", "topic,system,score\n1,a,0.5\n2,a,0.25,3\n")
    with pytest.raises(DataFormatError, match=r"some\.csv, line 3: the row has 4 fields but the "
                                              r"header has 3"):
        irm.read_frame(path)


def test_read_frame_header_and_labels(tmp_path: Path) -> None:
    path = _write(tmp_path, "dup.csv", "topic,system,score,score\n1,a,0.5,0.6\n")
    with pytest.raises(DataFormatError, match=r"dup\.csv, line 1: the header names the "
                                              r"column\(s\) 'score' more than once"):
        irm.read_frame(path)
    path = _write(tmp_path, "space.csv", "topic,system,score\n1,a,0.5\n2, a,0.6\n1,b,0.1\n"
                                         "2,b ,0.2\n")
    f = irm.read_frame(path)
    assert list(f["system"].cat.categories) == ["a", "b"] and irm.balance(f).balanced
    path = _write(tmp_path, "empty.csv", "topic,system,score\n,a,0.5\n2,a,0.6\n")
    with pytest.raises(DataFormatError, match=r"empty\.csv: column 'topic' \(topic\) has 1 empty "
                                              r"label"):
        irm.read_frame(path)
    path = _write(tmp_path, "quote.csv", 'topic,system,score\n1,"a,0.5\n2,a,0.6\n')
    with pytest.raises(DataFormatError, match=r"quote\.csv: cannot parse the frame file"):
        irm.read_frame(path)


# --- read_matrix ------------------------------------------------------------------------------


def test_read_matrix_topic_header_wins_over_row_names(tmp_path: Path) -> None:
    # header "topic,a,b" and rows of 4 cells made a system called "topic"
    path = _write(tmp_path, "m.csv", "topic,a,b\n1,0.1,0.2,0.3\n2,0.4,0.5,0.6\n")
    with pytest.raises(DataFormatError, match=r"m\.csv, line 2: the row has 4 cells but the "
                                              r"header \(line 1\) has 3"):
        irm.read_matrix(path)


def test_read_matrix_overflow_names_the_cell(tmp_path: Path) -> None:
    path = _write(tmp_path, "m.csv", "topic,a,b\n1,1e400,0.2\n2,0.4,0.5\n")
    with pytest.raises(DataFormatError, match=r"m\.csv, line 2: cell '1e400' for topic 1, "
                                              r"system a is beyond the range of a float64"):
        irm.read_matrix(path)


def test_read_matrix_warns_on_an_id_like_first_column(tmp_path: Path, shared_data: Path) -> None:
    path = _write(tmp_path, "qno.csv", "qno,s1,s2\n301,0.1,0.2\n302,0.4,0.5\n303,0.2,0.3\n")
    with pytest.warns(DataQualityWarning, match=r"the first column 'qno' holds distinct whole "
                                                r"numbers \(301 to 303\) above every score"):
        f = irm.read_matrix(path)
    assert f["system"].nunique() == 3  # still read as asked: the warning says what to do
    with warnings.catch_warnings():  # the public TREC matrices do not trigger it
        warnings.simplefilter("error", DataQualityWarning)
        for name in ("adhoc8_ap.csv", "robust2004_p10.csv"):
            irm.read_matrix(shared_data / "ir-scores" / name)


def test_read_frame_names_the_line_of_a_bad_score(tmp_path: Path) -> None:
    # frame() says "row 2"; the file's line is 4 (a header and a blank line before it)
    path = _write(tmp_path, "abc.csv", "topic,system,score\n1,a,0.5\n\n2,a,abc\n")
    with pytest.raises(DataFormatError, match=r"abc\.csv, line 4: score column 'score' has "
                                              r"non-numeric value 'abc'; scores must be numbers"):
        irm.read_frame(path)
    path = _write(tmp_path, "inf.csv", "topic,system,score\n1,a,0.5\n2,a,1e400\n")
    with pytest.raises(DataFormatError, match=r"inf\.csv, line 3: score column 'score' has 1 "
                                              r"infinite value\(s\), the first inf; scores must"):
        irm.read_frame(path)
