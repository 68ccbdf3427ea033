"""The malformed-input corpus: every file in tests/data/malformed/ gives a precise error (class,
file name, line number, what was seen) or a documented tolerance (the exact frame read)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.data.io import check_topics
from irmodels.errors import DataFormatError, DataQualityWarning

CORPUS = Path(__file__).resolve().parent / "malformed"


@dataclass(frozen=True)
class Fails:
    reader: Callable
    line: int | None
    fragments: tuple[str, ...]


@dataclass(frozen=True)
class Reads:
    reader: Callable
    expected: pd.DataFrame


def _run(rows, system="bm25"):
    return pd.DataFrame(
        {
            "system": pd.Series([system] * len(rows), dtype="str"),
            "topic": pd.Series([r[0] for r in rows], dtype="str"),
            "docid": pd.Series([r[1] for r in rows], dtype="str"),
            "score": np.array([r[3] for r in rows], dtype="float64"),
            "rank": np.array([r[2] for r in rows], dtype="int64"),
        }
    )


RUN3 = _run([("301", "d1", 1, 2.5), ("301", "d2", 2, 2.0), ("302", "d3", 1, 1.5)])
QRELS3 = pd.DataFrame(
    {"topic": pd.Series(["301", "301", "302"], dtype="str"),
     "docid": pd.Series(["d1", "d2", "d3"], dtype="str"),
     "rel": np.array([1, 0, 3], dtype="int64")}
)
QRELS_NEG = QRELS3.assign(rel=np.array([1, -1, 3], dtype="int64"))


def _matrix(wide: dict, topics: list[str]) -> pd.DataFrame:
    return irm.from_wide(pd.DataFrame(wide, index=pd.Index(topics, name="topic")))


CASES: dict[str, Fails | Reads] = {
    # TREC runs
    "run_truncated.txt": Fails(irm.read_run, 3, ("expected 6 fields", "found 5", "truncated")),
    "run_extra_column.txt": Fails(irm.read_run, 2, ("found 7", "extra fields")),
    "run_nonnumeric_score.txt": Fails(irm.read_run, 4, ("score 'high' is not a number",)),
    "run_nonnumeric_rank.txt": Fails(irm.read_run, 2, ("rank 'first' is not an integer",)),
    "run_float_rank.txt": Fails(irm.read_run, 2, ("rank '2.5' is not an integer",)),
    "run_nan_score.txt": Fails(irm.read_run, 3, ("score 'nan' is not a finite number",)),
    "run_duplicate_docid.txt": Fails(
        irm.read_run, 4, ("duplicate entry (topic 301, docid d1)", "already given on line 1")
    ),
    "run_several_tags.txt": Fails(
        irm.read_run, 3, ("run tag 'lm'", "line 1 has 'bm25'", "tags='split'")
    ),
    "run_empty.txt": Fails(irm.read_run, None, ("is empty (0 bytes)",)),
    "run_only_blank.txt": Fails(irm.read_run, None, ("only blank lines (5)",)),
    "run_nbsp.txt": Fails(irm.read_run, 2, ("U+00A0 (no-break space)", "spaces or tabs")),
    "run_latin1.txt": Fails(irm.read_run, 2, ("not UTF-8", "byte 0xe9 at column 11")),
    "run_crlf.txt": Reads(irm.read_run, RUN3),
    "run_bom.txt": Reads(irm.read_run, RUN3),
    "run_mixed_whitespace.txt": Reads(irm.read_run, RUN3),
    "run_no_final_newline.txt": Reads(irm.read_run, RUN3),
    "run_trailing_blank_lines.txt": Reads(irm.read_run, RUN3),
    "run_topic_not_in_qrels.txt": Reads(
        irm.read_run, _run([("301", "d1", 1, 2.5), ("302", "d2", 1, 2.0), ("999", "d3", 1, 1.5)])
    ),
    # qrels
    "qrels_duplicate.txt": Fails(
        irm.read_qrels, 3, ("duplicate entry (topic 301, docid d1)", "line 1")
    ),
    "qrels_nonnumeric_rel.txt": Fails(irm.read_qrels, 2, ("rel 'yes' is not an integer",)),
    "qrels_float_rel.txt": Fails(irm.read_qrels, 2, ("rel '0.5' is not an integer",)),
    "qrels_wrong_columns.txt": Fails(irm.read_qrels, 2, ("expected 4 fields", "found 3")),
    "qrels_negative_rel.txt": Reads(irm.read_qrels, QRELS_NEG),
    "qrels_bom_crlf.txt": Reads(irm.read_qrels, QRELS3),
    # trec_eval -q output
    "treceval_two_fields.txt": Fails(irm.read_trec_eval, 3, ("expected 3 fields", "found 2")),
    "treceval_duplicate.txt": Fails(
        irm.read_trec_eval, 5, ("measure 'map' for topic '301' already appears on line 1",)
    ),
    "treceval_nonnumeric.txt": Fails(irm.read_trec_eval, 2, ("value 'n/a'", "not a number")),
    "treceval_summary_only.txt": Fails(irm.read_trec_eval, None, ("no per-topic lines", "-q")),
    "treceval_crlf.txt": Reads(
        irm.read_trec_eval,
        irm.frame(pd.DataFrame({"measure": ["map", "map"], "topic": ["301", "302"],
                                "system": ["bm25", "bm25"], "score": [0.25, 0.5]})),
    ),
    # wide matrices
    "matrix_nonnumeric.csv": Fails(
        irm.read_matrix, 3, ("cell 'zero' for topic 2, system sysB is not a number",)
    ),
    "matrix_duplicate_system.csv": Fails(
        irm.read_matrix, 1, ("system 'sysA' appears twice in the header (columns 1 and 3)",)
    ),
    "matrix_ragged.csv": Fails(irm.read_matrix, 4, ("the row has 2 cells", "header (line 1) has 3")),
    "matrix_nan.csv": Fails(
        irm.read_matrix, 3, ("missing score (cell 'NA') for topic 402, system sysA", "nan='drop'")
    ),
    "matrix_duplicate_topic.csv": Fails(
        irm.read_matrix, 4, ("topic '401' already has a row on line 2",)
    ),
    "matrix_header_only.csv": Fails(irm.read_matrix, 1, ("header but no data rows",)),
    "matrix_bom_crlf.tsv": Reads(
        irm.read_matrix, _matrix({"sysA": [0.1, 0.3], "sysB": [0.2, 0.4]}, ["1", "2"])
    ),
    "matrix_rownames.csv": Reads(
        irm.read_matrix, _matrix({"sysA": [0.1, 0.3], "sysB": [0.2, 0.4]}, ["301", "302"])
    ),
}


def test_corpus_is_complete() -> None:
    files = {p.name for p in CORPUS.iterdir() if not p.name.startswith(".")}
    assert files == set(CASES)
    assert sum(isinstance(c, Fails) for c in CASES.values()) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_file(name: str) -> None:
    case = CASES[name]
    path = CORPUS / name
    if isinstance(case, Fails):
        with pytest.raises(DataFormatError) as info:
            case.reader(path)
        err = info.value
        message = str(err)
        assert err.path == str(path)
        assert message.startswith(f"{path}")
        assert err.line == case.line
        if case.line is not None:
            assert f"{name}, line {case.line}: " in message
        for fragment in case.fragments:
            assert fragment in message, (fragment, message)
    else:
        got = case.reader(path)
        pd.testing.assert_frame_equal(got, case.expected, check_exact=True)


def test_several_tags_split_and_named() -> None:
    path = CORPUS / "run_several_tags.txt"
    split = irm.read_run(path, tags="split")
    assert split["system"].tolist() == ["bm25", "bm25", "lm"]
    # d1 appears for both tags: not a duplicate when the tags are split
    assert split["docid"].tolist() == ["d1", "d2", "d1"]
    # one named run: the tags are ignored, so d1 of topic 301 is then a duplicate (line 3)
    with pytest.raises(DataFormatError, match=r"line 3: duplicate entry \(topic 301, docid d1\)"):
        irm.read_run(path, system="merged")


def test_matrix_nan_drop() -> None:
    path = CORPUS / "matrix_nan.csv"
    with pytest.warns(DataQualityWarning, match="dropped 1 missing cell"):
        got = irm.read_matrix(path, nan="drop")
    assert len(got) == 5
    assert not ((got["topic"] == "402") & (got["system"] == "sysA")).any()
    assert got["score"].sum() == pytest.approx(0.1 + 0.2 + 0.4 + 0.5 + 0.6, abs=1e-12)
    assert not irm.balance(got).balanced


def test_check_topics_warns_about_unjudged_run_topics() -> None:
    runs = irm.read_run(CORPUS / "run_topic_not_in_qrels.txt")
    qrels = irm.read_qrels(CORPUS / "qrels_negative_rel.txt")
    with pytest.warns(DataQualityWarning, match=r"1 run topic\(s\) have no relevance judgments in the qrels: 999"):
        missing = check_topics(runs, qrels)
    assert missing == ["999"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_topics(runs[runs["topic"] != "999"], qrels) == []


def test_check_topics_lists_many_in_natural_order() -> None:
    runs = pd.DataFrame({"topic": [str(t) for t in range(20, 0, -1)]})
    qrels = pd.DataFrame({"topic": ["1"]})
    with pytest.warns(DataQualityWarning, match=r"19 run topic\(s\).*: 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, \.\.\."):
        missing = check_topics(runs, qrels)
    assert missing == [str(t) for t in range(2, 21)]
