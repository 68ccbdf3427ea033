"""The bad-input corpus: one case per (reader or command, kind of fault).

Each case builds its input in a fresh folder, runs one reader, constructor, writer or command,
and asserts the exact error class, a fragment of the message and, for files, the file and the
1-based line (or, for a documented tolerance, that it is read, with its warning). Commands are
run in-process through ``irmodels.cli.main``: they must print one line (no traceback) and exit
with the documented status (1 data, 2 usage, 3 environment; see docs/refusals.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import (
    DataFormatError,
    DataQualityWarning,
    DesignError,
    FormulaError,
    IRModelsError,
    OutputError,
    OutputExistsError,
    UsageError,
)

RUN = b"301 Q0 d1 1 2.5 bm25\n301 Q0 d2 2 2.0 bm25\n302 Q0 d3 1 1.5 bm25\n"
QRELS = b"301 0 d1 1\n301 0 d2 0\n302 0 d3 2\n"
TREC = b"map 301 0.25\nmap 302 0.5\nrunid all bm25\n"
MATRIX = b"topic,sysA,sysB\n1,0.1,0.2\n2,0.3,0.4\n3,0.5,0.7\n"
FRAME = b"topic,system,score\n1,a,0.1\n1,b,0.2\n2,a,0.3\n2,b,0.4\n"


@dataclass(frozen=True)
class Case:
    """``call(folder)`` must raise ``error`` with ``fragment`` (at ``line`` of ``name``), or,
    with ``error=None``, succeed (issuing ``warning`` when given)."""

    call: Callable[[Path], object]
    error: type[BaseException] | None
    fragment: str = ""
    name: str | None = None  # the file whose path the error names
    line: int | None = None
    warning: type[Warning] | None = None


@dataclass(frozen=True)
class Cli:
    """``irmodels ARGV`` (with {d} the case folder, files written first) exits with ``status``
    and prints ``fragment`` on standard error in one ``irmodels: error:`` line, or with argparse's
    usage message when ``argparse`` is set."""

    argv: tuple[str, ...]
    status: int
    fragment: str
    files: dict[str, bytes] = field(default_factory=dict)
    argparse: bool = False


def _file(name: str, content: bytes, reader: Callable, **kw) -> Callable[[Path], object]:
    def call(d: Path) -> object:
        p = d / name
        p.write_bytes(content)
        return reader(p, **kw)

    return call


def fails(reader: Callable, name: str, content: bytes, line: int | None, fragment: str,
          error: type[BaseException] = DataFormatError, **kw) -> Case:
    return Case(_file(name, content, reader, **kw), error, fragment, name, line)


def reads(reader: Callable, name: str, content: bytes, warning: type[Warning] | None = None,
          **kw) -> Case:
    return Case(_file(name, content, reader, **kw), None, warning=warning)


def api(fn: Callable[[], object], error: type[BaseException] | None, fragment: str = "",
        warning: type[Warning] | None = None) -> Case:
    return Case(lambda d: fn(), error, fragment, warning=warning)


def frame_of(**columns) -> Callable[[], object]:
    base = {"topic": ["1", "2"], "system": ["a", "a"], "score": [0.1, 0.2]}
    opts = columns.pop("_opts", {})
    base.update(columns)
    return lambda: irm.frame(pd.DataFrame(base), **opts)


# ----------------------------------------------------------------------------------------------
# the whitespace formats share their faults: one case per (reader, fault)

WS_READERS = {
    "run": (irm.read_run, RUN, "run file"),
    "qrels": (irm.read_qrels, QRELS, "qrels file"),
    "treceval": (irm.read_trec_eval, TREC, "trec_eval output file"),
}


def _swap_line2(good: bytes, new: bytes) -> bytes:
    lines = good.split(b"\n")
    lines[1] = new
    return b"\n".join(lines)


def _ws_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for key, (reader, good, what) in WS_READERS.items():
        line2 = good.split(b"\n")[1]
        first_field = line2.split(b" ")[0]
        rest = line2[len(first_field):]
        c = {
            "empty": fails(reader, "f.txt", b"", None, f"the {what} is empty (0 bytes)"),
            "only_blank": fails(reader, "f.txt", b"\n \n\t\n", None, "only blank lines"),
            "truncated": fails(reader, "f.txt", _swap_line2(good, line2.rsplit(b" ", 1)[0]), 2,
                               "the line looks truncated"),
            "extra_field": fails(reader, "f.txt", _swap_line2(good, line2 + b" extra"), 2,
                                 "there are extra fields"),
            "nul_in_id": fails(reader, "f.txt", _swap_line2(good, first_field + b"\x00" + rest), 2,
                               "control character U+0000"),
            "escape_byte": fails(reader, "f.txt", _swap_line2(good, b"\x1b" + line2), 2,
                                 "control character U+001B"),
            "delete_byte": fails(reader, "f.txt", _swap_line2(good, line2 + b"\x7f"), 2,
                                 "control character U+007F"),
            "bell_byte": fails(reader, "f.txt", _swap_line2(good, line2.replace(b" ", b"\x07", 1)),
                               2, "control character U+0007"),
            "nbsp": fails(reader, "f.txt", _swap_line2(good, line2.replace(b" ", b"\xc2\xa0", 1)),
                          2, "U+00A0 (no-break space)"),
            "form_feed": fails(reader, "f.txt", _swap_line2(good, line2.replace(b" ", b"\x0c", 1)),
                               2, "U+000C"),
            "vertical_tab": fails(reader, "f.txt",
                                  _swap_line2(good, line2.replace(b" ", b"\x0b", 1)), 2, "U+000B"),
            "line_separator": fails(reader, "f.txt",
                                    _swap_line2(good, line2.replace(b" ", "\u2028".encode(), 1)),
                                    2, "U+2028"),
            "ideographic_space": fails(reader, "f.txt",
                                       _swap_line2(good, line2.replace(b" ", "\u3000".encode(), 1)),
                                       2, "U+3000"),
            "latin1": fails(reader, "f.txt", _swap_line2(good, b"\xe9" + line2), 2,
                            "not UTF-8"),
            "utf16": fails(reader, "f.txt", good.decode().encode("utf-16"), 1,
                           "control character U+0000"),
            "bad_continuation": fails(reader, "f.txt", _swap_line2(good, line2 + b"\xc3("), 2,
                                      "not UTF-8"),
            "directory": Case(lambda d, r=reader: r(d), DataFormatError,
                              "holds no trec_eval output files" if key == "treceval"
                              else "found a directory"),
        }
        for fault, case in c.items():
            cases[f"{key}-{fault}"] = case
    return cases


def _ws_tolerances() -> dict[str, Case]:
    out: dict[str, Case] = {}
    for key, (reader, good, _) in WS_READERS.items():
        out[f"{key}-tolerated-crlf"] = reads(reader, "f.txt", good.replace(b"\n", b"\r\n"))
        out[f"{key}-tolerated-cr-only"] = reads(reader, "f.txt", good.replace(b"\n", b"\r"))
        out[f"{key}-tolerated-bom"] = reads(reader, "f.txt", b"\xef\xbb\xbf" + good)
        out[f"{key}-tolerated-tabs"] = reads(reader, "f.txt", good.replace(b" ", b" \t "))
        out[f"{key}-tolerated-blank-lines"] = reads(reader, "f.txt", b"\n\n" + good + b"\n\n \n")
        out[f"{key}-tolerated-no-final-newline"] = reads(reader, "f.txt", good.rstrip(b"\n"))
    return out


CASES: dict[str, Case] = {**_ws_cases(), **_ws_tolerances()}

# ---------------------------------------------------------------------------------- TREC runs
R = irm.read_run
CASES.update({
    "run-score-text": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 high bm25"), 2,
                            "score 'high' is not a number"),
    "run-score-nan": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 nan bm25"), 2,
                           "score 'nan' is not a finite number"),
    "run-score-inf": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 inf bm25"), 2,
                           "score 'inf' is not a finite number"),
    "run-score-overflow": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 1e999 bm25"), 2,
                                "score '1e999' overflows"),
    "run-score-decimal-comma": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 2,0 bm25"), 2,
                                     "score '2,0' is not a number"),
    "run-score-hex": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 0x10 bm25"), 2,
                           "score '0x10' is not a number"),
    "run-score-two-points": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 1.5.2 bm25"), 2,
                                  "score '1.5.2' is not a number"),
    "run-rank-float": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2.5 2.0 bm25"), 2,
                            "rank '2.5' is not an integer"),
    "run-rank-text": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 two 2.0 bm25"), 2,
                           "rank 'two' is not an integer"),
    "run-rank-huge": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 99999999999999999999 2.0 bm25"),
                           2, "is too large"),
    "run-rank-hex": fails(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 0x2 2.0 bm25"), 2,
                          "rank '0x2' is not an integer"),
    "run-duplicate-docid": fails(R, "r.txt", RUN + b"301 Q0 d1 3 1.0 bm25\n", 4,
                                 "duplicate entry (topic 301, docid d1): already given on line 1"),
    "run-several-tags": fails(R, "r.txt", RUN + b"303 Q0 d4 1 1.0 lm\n", 4,
                              "run tag 'lm' but line 1 has 'bm25'"),
    "run-bad-tags-option": api(lambda: irm.read_run(Path("x"), tags="merge"), DataFormatError,
                               "tags must be 'error' or 'split'"),
    "run-tolerated-rank-as-float-integral": reads(R, "r.txt",
                                                  _swap_line2(RUN, b"301 Q0 d2 2.0 2.0 bm25")),
    "run-tolerated-exponent-score": reads(R, "r.txt", _swap_line2(RUN, b"301 Q0 d2 2 2e0 bm25")),
    "runs-directory-empty": Case(lambda d: irm.read_runs(d), DataFormatError,
                                 "holds no run files"),
    "runs-same-name-two-files": Case(
        lambda d: ((d / "a.txt").write_bytes(RUN), (d / "b.txt").write_bytes(RUN),
                   irm.read_runs(d)),
        DataFormatError, "run 'bm25' is in both"),
    "runs-bad-system-from": api(lambda: irm.read_runs([Path("x")], system_from="name"),
                                DataFormatError, "system_from must be 'tag' or 'file'"),
    "runs-empty-list": api(lambda: irm.read_runs([]), DataFormatError, "no run file given"),
})

# -------------------------------------------------------------------------------------- qrels
Q = irm.read_qrels
CASES.update({
    "qrels-rel-float": fails(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 0.5"), 2,
                             "rel '0.5' is not an integer"),
    "qrels-rel-text": fails(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 yes"), 2,
                            "rel 'yes' is not an integer"),
    "qrels-rel-huge": fails(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 1" + b"0" * 25), 2,
                            "is too large"),
    "qrels-rel-nan": fails(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 nan"), 2,
                           "rel 'nan' is not an integer"),
    "qrels-duplicate": fails(Q, "q.txt", QRELS + b"301 0 d1 2\n", 4,
                             "duplicate entry (topic 301, docid d1): already given on line 1"),
    "qrels-tolerated-negative-rel": reads(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 -1")),
    "qrels-tolerated-graded": reads(Q, "q.txt", _swap_line2(QRELS, b"301 0 d2 4")),
})

# -------------------------------------------------------------------------- trec_eval -q output
T = irm.read_trec_eval
CASES.update({
    "treceval-value-text": fails(T, "t.txt", _swap_line2(TREC, b"map 302 n/a"), 2,
                                 "value 'n/a' of measure 'map' for topic '302' is not a number"),
    "treceval-duplicate": fails(T, "t.txt", TREC + b"map 301 0.3\n", 4,
                                "measure 'map' for topic '301' already appears on line 1"),
    "treceval-summary-only": fails(T, "t.txt", b"map all 0.25\nrunid all x\n", None,
                                   "no per-topic lines"),
    "treceval-two-runs-same-name": Case(
        lambda d: ((d / "a").write_bytes(TREC), (d / "b").write_bytes(TREC),
                   irm.read_trec_eval(d)),
        DataFormatError, "run 'bm25' is read from both"),
    "treceval-system-for-many": Case(
        lambda d: ((d / "a").write_bytes(TREC), (d / "b").write_bytes(TREC),
                   irm.read_trec_eval([d / "a", d / "b"], system="x")),
        DataFormatError, "system='x' names one run but 2 files were given"),
    "treceval-tolerated-quoted-text": reads(T, "t.txt", TREC + b"relstring 301 '0110'\n"),
})

# ----------------------------------------------------------------------------------- matrices
M = irm.read_matrix
CASES.update({
    "matrix-empty": fails(M, "m.csv", b"", None, "is empty (0 bytes)"),
    "matrix-only-blank": fails(M, "m.csv", b"\n\n", None, "only blank lines"),
    "matrix-header-only": fails(M, "m.csv", b"topic,a,b\n", 1, "header but no data rows"),
    "matrix-no-header": fails(M, "m.csv", b"1,0.1,0.2\n2,0.3,0.4\n", 1,
                              "looks like a row of scores, not a header"),
    "matrix-ragged": fails(M, "m.csv", MATRIX + b"4,0.1\n", 5, "the row has 2 cells"),
    "matrix-cell-text": fails(M, "m.csv", _swap_line2(MATRIX, b"1,zero,0.2"), 2,
                              "cell 'zero' for topic 1, system sysA is not a number"),
    "matrix-cell-missing": fails(M, "m.csv", _swap_line2(MATRIX, b"1,,0.2"), 2,
                                 "missing score (cell '') for topic 1, system sysA"),
    "matrix-cell-NA": fails(M, "m.csv", _swap_line2(MATRIX, b"1,NA,0.2"), 2,
                            "missing score (cell 'NA')"),
    "matrix-cell-inf": fails(M, "m.csv", _swap_line2(MATRIX, b"1,inf,0.2"), 2,
                             "cell 'inf' for topic 1, system sysA is an infinite value"),
    "matrix-duplicate-system": fails(M, "m.csv", b"topic,a,a\n1,0.1,0.2\n", 1,
                                     "system 'a' appears twice in the header"),
    "matrix-duplicate-topic": fails(M, "m.csv", MATRIX + b"1,0.5,0.5\n", 5,
                                    "topic '1' already has a row on line 2"),
    "matrix-empty-system-name": fails(M, "m.csv", b"topic,a,\n1,0.1,0.2\n", 1,
                                      "column 3 of the header has no system name"),
    "matrix-no-topic-id": fails(M, "m.csv", _swap_line2(MATRIX, b",0.1,0.2"), 2,
                                "the row has no topic id"),
    "matrix-nul-in-header": fails(M, "m.csv", b"topic,sys\x00A,sysB\n1,0.1,0.2\n", 1,
                                  "control character U+0000"),
    "matrix-latin1": fails(M, "m.csv", b"topic,syst\xe8me,b\n1,0.1,0.2\n", 1, "not UTF-8"),
    "matrix-unclosed-quote": fails(M, "m.csv", b'topic,a,b\n1,"0.1,0.2\n' + b"2,0.3,0.4\n" * 30000,
                                   2, "field larger than field limit"),
    "matrix-nbsp": fails(M, "m.csv", b"topic,a,b\n1,0.1,\xc2\xa00.2\n", 2, "U+00A0"),
    "matrix-bad-topic-column": fails(M, "m.csv", MATRIX, 1, "topic_column 'qid' is not in the header",
                                     topic_column="qid"),
    "matrix-bad-sep": Case(_file("m.csv", MATRIX, M, sep=";;"), UsageError,
                           "sep must be one character"),
    "matrix-directory": Case(lambda d: irm.read_matrix(d), DataFormatError, "found a directory"),
    "matrix-tolerated-nan-drop": reads(M, "m.csv", _swap_line2(MATRIX, b"1,NA,0.2"),
                                       DataQualityWarning, nan="drop"),
    "matrix-tolerated-quoted-header": reads(M, "m.csv", b'"topic","a","b"\n1,0.1,0.2\n'),
    "matrix-tolerated-row-names": reads(M, "m.csv", b'"a","b"\n"1",0.1,0.2\n'),
    "matrix-tolerated-integer-system-names": reads(M, "m.csv", b"topic,1,2\n1,0.1,0.2\n"),
    "matrix-tolerated-bom-crlf-tsv": reads(M, "m.tsv", b"\xef\xbb\xbftopic\ta\tb\r\n1\t0.1\t0.2\r\n"),
})

# -------------------------------------------------------------------------------- long frames
F = irm.read_frame


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


GOOD_PARQUET = _parquet_bytes(pd.DataFrame({"topic": ["1", "2"], "system": ["a", "a"],
                                            "score": [0.1, 0.2]}))
CASES.update({
    "frame-csv-empty": fails(F, "f.csv", b"", None, "is empty (0 bytes)"),
    "frame-csv-no-score": fails(F, "f.csv", b"topic,system\n1,a\n", None, "has no column 'score'"),
    "frame-csv-score-text": fails(F, "f.csv", FRAME.replace(b"0.2", b"high"), 3,
                                  "non-numeric value 'high'"),
    "frame-csv-score-nan": fails(F, "f.csv", FRAME.replace(b"0.2", b"NA"), 3,
                                 "score(s) are missing (NaN)"),
    "frame-csv-duplicate-rows": fails(F, "f.csv", FRAME + b"1,a,0.9\n", 6,
                                      "rows repeat the same (topic, system) key"),
    "frame-csv-latin1": fails(F, "f.csv", FRAME + b"3,caf\xe9,0.5\n", 6, "not UTF-8"),
    "frame-csv-nul": fails(F, "f.csv", FRAME.replace(b"system", b"sys\x00tem"), 1,
                           "control character U+0000"),
    "frame-csv-ragged": fails(F, "f.csv", FRAME + b"3,a,0.5,extra,more\n", 6,
                              "the row has 5 fields but the header has 3"),
    "frame-bad-extension": fails(F, "f.xlsx", FRAME, None, "cannot tell the format"),
    "frame-parquet-mislabelled-csv": fails(F, "f.parquet", FRAME, None,
                                           "the file is not parquet"),
    "frame-parquet-truncated": fails(F, "f.parquet", GOOD_PARQUET[: len(GOOD_PARQUET) // 2],
                                     None, "cannot be read"),
    "frame-parquet-empty": fails(F, "f.parquet", b"", None, "the file is not parquet"),
    "frame-parquet-no-score": fails(
        F, "f.parquet", _parquet_bytes(pd.DataFrame({"topic": ["1"], "system": ["a"]})), None,
        "has no column 'score'"),
    "frame-parquet-complex-score": fails(
        F, "f.parquet", _parquet_bytes(pd.DataFrame({"topic": ["1"], "system": ["a"],
                                                     "score": [True]})), None, "is boolean"),
    "frame-tolerated-tsv": reads(F, "f.tsv", FRAME.replace(b",", b"\t")),
})

# -------------------------------------------------------------------------- frame() constructor
CASES.update({
    "frame-complex-scores": api(frame_of(score=[1 + 2j, 0.5]), DataFormatError,
                                "holds complex numbers"),
    "frame-complex-in-object": api(frame_of(score=pd.Series([1 + 2j, 0.5], dtype=object)),
                                   DataFormatError, "has the complex number (1+2j)"),
    "frame-datetime-scores": api(frame_of(score=pd.to_datetime(["2020-01-01", "2020-01-02"])),
                                 DataFormatError, "holds dates or durations"),
    "frame-timedelta-scores": api(frame_of(score=pd.to_timedelta([1, 2], unit="s")),
                                  DataFormatError, "holds dates or durations"),
    "frame-date-in-object": api(frame_of(score=pd.Series([pd.Timestamp("2020-01-01"), 0.5],
                                                         dtype=object)),
                                DataFormatError, "has the date or duration"),
    "frame-bool-scores": api(frame_of(score=[True, False]), DataFormatError, "is boolean"),
    "frame-bool-in-object": api(frame_of(score=pd.Series([True, 0.5], dtype=object)),
                                DataFormatError, "has the boolean True (row 0)"),
    "frame-huge-int": api(frame_of(score=np.array([2**60, 1], dtype=np.int64)), DataFormatError,
                          "beyond 2**53"),
    "frame-huge-int-in-object": api(frame_of(score=pd.Series([2**70, 1], dtype=object)),
                                    DataFormatError, "beyond 2**53"),
    "frame-inf": api(frame_of(score=[np.inf, 0.5]), DataFormatError,
                     "has 1 infinite value(s), the first inf (row 0)"),
    "frame-text-score": api(frame_of(score=["0.5", "high"]), DataFormatError,
                            "non-numeric value 'high' (row 1)"),
    "frame-nan-raise": api(frame_of(score=[np.nan, 0.5]), DataFormatError,
                           "1 score(s) are missing (NaN)"),
    "frame-nan-unknown-option": api(frame_of(_opts={"nan": "keep"}), UsageError,
                                    "nan must be 'raise' or 'drop', got 'keep'"),
    "frame-duplicates-unknown-option": api(frame_of(_opts={"duplicates": "mean"}), UsageError,
                                           "duplicates must be 'raise' or 'allow', got 'mean'"),
    "frame-column-name-not-str": api(frame_of(_opts={"score": 3}), UsageError,
                                     "column names are strings"),
    "frame-nul-in-system": api(frame_of(system=["a\x00b", "a\x00b"]), DataFormatError,
                               "control character U+0000"),
    "frame-escape-in-topic": api(frame_of(topic=["1\x1b", "2"]), DataFormatError,
                                 "control character U+001B"),
    "frame-newline-in-system": api(frame_of(system=["a\nb", "a\nb"]), DataFormatError,
                                   "control character U+000A"),
    "frame-missing-label": api(frame_of(topic=["1", None]), DataFormatError,
                               "has 1 missing value(s)"),
    "frame-missing-column": api(frame_of(_opts={"topic": "qid"}), DataFormatError,
                                "has no column 'qid'"),
    "frame-not-a-dataframe": api(lambda: irm.frame([1, 2]), DataFormatError,
                                 "expected a pandas DataFrame, got list"),
    "frame-duplicate-key": api(frame_of(topic=["1", "1"]), DataFormatError,
                               "rows repeat the same (topic, system) key"),
    "frame-no-rows": api(lambda: irm.frame(pd.DataFrame({"topic": [], "system": [],
                                                         "score": []})),
                         DataFormatError, "the data have no rows"),
    "frame-tolerated-nan-drop": api(frame_of(score=[np.nan, 0.5], _opts={"nan": "drop"}), None,
                                    warning=DataQualityWarning),
    "frame-tolerated-numeric-text": api(frame_of(score=["0.5", "0.25"]), None),
    "frame-tolerated-nullable-int": api(frame_of(score=pd.array([1, 2], dtype="Int64")), None),
    "from-wide-duplicate-topics": api(
        lambda: irm.from_wide(pd.DataFrame({"a": [0.1, 0.2]}, index=["1", "1"])),
        DataFormatError, "repeats topic id(s)"),
    "to-wide-several-measures": api(
        lambda: irm.to_wide(irm.frame(pd.DataFrame({"topic": ["1", "1"], "system": ["a", "a"],
                                                    "measure": ["AP", "P10"],
                                                    "score": [0.1, 0.2]}))),
        DesignError, "pass aggregate='mean'"),
    "evaluate-frame-nul-docid": api(
        lambda: irm.evaluate(pd.DataFrame({"system": "s", "topic": ["1", "1"],
                                           "docid": ["d1", "d\x002"], "score": [2.0, 1.0]}),
                             pd.DataFrame({"topic": ["1"], "docid": ["d1"], "rel": [1]}), ["AP"]),
        DataFormatError, "runs column 'docid' has the id 'd\\x002' with the control character U+0000"),
    "evaluate-frame-nul-qrels-docid": api(
        lambda: irm.evaluate(pd.DataFrame({"system": "s", "topic": ["1"], "docid": ["d1"],
                                           "score": [2.0]}),
                             pd.DataFrame({"topic": ["1"], "docid": ["d\x001"], "rel": [1]}),
                             ["AP"]),
        DataFormatError, "qrels column 'docid'"),
    "evaluate-frame-tab-in-system": api(
        lambda: irm.evaluate(pd.DataFrame({"system": "a\tb", "topic": ["1"], "docid": ["d1"],
                                           "score": [2.0]}),
                             pd.DataFrame({"topic": ["1"], "docid": ["d1"], "rel": [1]}), ["AP"]),
        DataFormatError, "control character U+0009"),
    "leading-zeros-topics-warn": api(
        lambda: irm.evaluate(pd.DataFrame({"system": "s", "topic": ["051", "52"], "docid": "d",
                                           "score": 1.0}),
                             pd.DataFrame({"topic": ["51", "52"], "docid": ["d", "d"],
                                           "rel": [1, 1]}), ["AP"]),
        None, warning=DataQualityWarning),
})

# ------------------------------------------------------------------------------------ writers
_RUNS = pd.DataFrame({"system": ["a", "a"], "topic": ["1", "1"], "docid": ["d1", "d2"],
                      "score": [2.0, 1.0]})
_QR = pd.DataFrame({"topic": ["1"], "docid": ["d1"], "rel": [1]})
_F = irm.frame(pd.DataFrame({"topic": ["1", "2"], "system": ["a", "a"], "score": [0.1, 0.2]}))


def _existing(name: str, write: Callable[[Path], object]) -> Callable[[Path], object]:
    def call(d: Path) -> object:
        (d / name).write_text("keep me")
        return write(d / name)

    return call


CASES.update({
    "write-run-existing": Case(_existing("r.txt", lambda p: irm.write_run(_RUNS, p)),
                               OutputExistsError, "already exists"),
    "write-qrels-existing": Case(_existing("q.txt", lambda p: irm.write_qrels(_QR, p)),
                                 OutputExistsError, "already exists"),
    "write-frame-existing": Case(_existing("f.csv", lambda p: irm.write_frame(_F, p)),
                                 OutputExistsError, "already exists"),
    "write-matrix-existing": Case(_existing("m.csv", lambda p: irm.write_matrix(_F, p)),
                                  OutputExistsError, "already exists"),
    "write-run-dir-existing-file": Case(
        lambda d: ((d / "a").write_text("keep"), irm.write_run(_RUNS, d)),
        OutputExistsError, "already exists"),
    "write-frame-onto-directory": Case(lambda d: (d / "x.csv").mkdir() or irm.write_frame(
        _F, d / "x.csv"), OutputExistsError, "it is an existing directory"),
    "write-frame-parent-is-file": Case(
        lambda d: ((d / "f").write_text("x"), irm.write_frame(_F, d / "f" / "x.csv")),
        OutputError, "is a file, not a directory"),
    "write-run-docid-space": api(lambda: irm.write_run(_RUNS.assign(docid="d 1"), "/nonexistent/r"),
                                 DataFormatError, "contains whitespace"),
    "write-run-docid-nul": api(lambda: irm.write_run(_RUNS.assign(docid="d\x001"), "/nonexistent/r"),
                               DataFormatError, "control character"),
    "write-run-docid-unicode-space": api(
        lambda: irm.write_run(_RUNS.assign(docid="d\u30001"), "/nonexistent/r"),
        DataFormatError, "contains whitespace"),
    "write-run-system-not-filename": Case(
        lambda d: irm.write_run(_RUNS.assign(system="../up"), str(d) + "/"),
        DataFormatError, "cannot be used as a file name"),
    "write-qrels-float-rel": api(lambda: irm.write_qrels(_QR.assign(rel=0.5), "/nonexistent/q"),
                                 DataFormatError, "must hold integers"),
    "write-frame-bad-extension": api(lambda: irm.write_frame(_F, "/nonexistent/f.xlsx"),
                                     DataFormatError, "cannot tell the format"),
    "write-matrix-parquet": api(lambda: irm.write_matrix(_F, "/nonexistent/m.parquet"),
                                DataFormatError, "wide matrices are written as CSV or TSV"),
})

# ----------------------------------------------------------------------------------- commands
BAD_RUN = RUN + b"303 Q0 d4 1 high bm25\n"
CLI_CASES: dict[str, Cli] = {
    # evaluate
    "evaluate-missing-run": Cli(("evaluate", "{d}/no.run", "--qrels", "{d}/q"), 2,
                                "does not exist", {"q": QRELS}),
    "evaluate-missing-qrels": Cli(("evaluate", "{d}/r", "--qrels", "{d}/no"), 2,
                                  "qrels file {d}/no does not exist", {"r": RUN}),
    "evaluate-bad-run-line": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q"), 1,
                                 "{d}/r, line 4: score 'high' is not a number",
                                 {"r": BAD_RUN, "q": QRELS}),
    "evaluate-nul-docid": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q"), 1,
                              "{d}/r, line 1: the line contains the control character U+0000",
                              {"r": RUN.replace(b"d1", b"d\x001"), "q": QRELS}),
    "evaluate-bad-qrels-line": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q"), 1,
                                   "{d}/q, line 2: rel 'x' is not an integer",
                                   {"r": RUN, "q": _swap_line2(QRELS, b"301 0 d2 x")}),
    "evaluate-unknown-measure": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "-m", "nDGC@10"), 2,
                                    "unknown measure 'nDGC@10'", {"r": RUN, "q": QRELS}),
    "evaluate-bad-undefined": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "--undefined", "zero"),
                                  2, "--undefined 'zero' is not a policy", {"r": RUN, "q": QRELS}),
    "evaluate-depth-zero": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "--depth", "0"), 2,
                               "expected a whole number >= 1, got '0'", argparse=True),
    "evaluate-out-exists": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "-o", "{d}/s.csv"), 2,
                               "{d}/s.csv already exists",
                               {"r": RUN, "q": QRELS, "s.csv": b"keep"}),
    "evaluate-out-bad-extension": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "-o", "{d}/s.xlsx"),
                                      2, "cannot tell the format", {"r": RUN, "q": QRELS}),
    "evaluate-out-is-directory": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "-o", "{d}"), 2,
                                     "cannot tell the format", {"r": RUN, "q": QRELS}),
    "evaluate-out-parent-is-file": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "-o",
                                        "{d}/q/s.csv"), 3, "is a file, not a directory",
                                       {"r": RUN, "q": QRELS}),
    "evaluate-shards-latin1": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q", "--shards", "{d}/sh"),
                                  1, "cannot parse the shard assignment",
                                  {"r": RUN, "q": QRELS, "sh": b"d1 s\xe9\nd2 s1\nd3 s1\n"}),
    "evaluate-leading-zeros-refused": Cli(("evaluate", "{d}/r", "--qrels", "{d}/q"), 1,
                                          "topic ids differ by leading zeros",
                                        {"r": RUN.replace(b"302 ", b"0302 "), "q": QRELS}),
    # anova / mixed / gstudy / pairwise / power (score files)
    "anova-missing-file": Cli(("anova", "{d}/no.csv"), 2, "no such file: {d}/no.csv"),
    "anova-digits-zero": Cli(("anova", "{d}/m.csv", "--digits", "0"), 2,
                             "argument --digits: expected a whole number from 1 to 17, got '0'",
                             argparse=True),
    "anova-digits-negative": Cli(("anova", "{d}/m.csv", "--digits", "-1"), 2,
                                 "argument --digits: expected a whole number from 1 to 17",
                                 argparse=True),
    "anova-alpha-one": Cli(("anova", "{d}/m.csv", "--alpha", "1"), 2,
                           "argument --alpha: expected a number strictly between 0 and 1",
                           argparse=True),
    "anova-matrix-bad-cell": Cli(("anova", "{d}/m.csv"), 1,
                                 "{d}/m.csv, line 2: cell 'x' for topic 1, system sysA",
                                 {"m.csv": _swap_line2(MATRIX, b"1,x,0.2")}),
    "anova-matrix-no-header": Cli(("anova", "{d}/m.csv"), 1,
                                  "{d}/m.csv, line 1: the first line",
                                  {"m.csv": b"1,0.1,0.2\n2,0.3,0.4\n3,0.5,0.6\n"}),
    "anova-matrix-latin1": Cli(("anova", "{d}/m.csv"), 1, "{d}/m.csv, line 1: the line is not UTF-8",
                               {"m.csv": b"topic,syst\xe8me,b\n1,0.1,0.2\n2,0.3,0.5\n"}),
    "anova-matrix-field-limit": Cli(("anova", "{d}/m.csv"), 1, "field larger than field limit",
                                    {"m.csv": b'topic,a,b\n1,"0.1,0.2\n' + b"2,0.3,0.4\n" * 30000}),
    "anova-parquet-mislabelled": Cli(("anova", "{d}/f.parquet"), 1, "the file is not parquet",
                                     {"f.parquet": FRAME}),
    "anova-parquet-corrupt": Cli(("anova", "{d}/f.parquet"), 1, "cannot be read",
                                 {"f.parquet": GOOD_PARQUET[:-20]}),
    "anova-bad-formula": Cli(("anova", "{d}/m.csv", "--formula", "score ~ topic +"), 2, "",
                             {"m.csv": MATRIX}),
    "anova-unknown-column": Cli(("anova", "{d}/m.csv", "--formula", "score ~ topic + run"), 2,
                                "run", {"m.csv": MATRIX}),
    "mixed-digits-zero": Cli(("mixed", "{d}/m.csv", "--digits", "0"), 2,
                             "argument --digits", argparse=True),
    "mixed-missing-file": Cli(("mixed", "{d}/no.csv", "--formula", "score ~ (1|topic)"), 2,
                              "no such file"),
    "mixed-no-formula": Cli(("mixed", "{d}/m.csv"), 2, "required: --formula", argparse=True),
    "gstudy-target-above-one": Cli(("gstudy", "{d}/m.csv", "--target", "1.5"), 2,
                                   "argument --target: expected a number strictly between 0 and 1",
                                   argparse=True),
    "gstudy-target-zero": Cli(("gstudy", "{d}/m.csv", "--target", "0"), 2, "argument --target",
                              argparse=True),
    "gstudy-digits-negative": Cli(("gstudy", "{d}/m.csv", "--digits", "-1"), 2,
                                  "argument --digits", argparse=True),
    "gstudy-bad-topics-list": Cli(("gstudy", "{d}/m.csv", "--topics", "ten"), 2,
                                  "argument --topics", argparse=True),
    "gstudy-matrix-ragged": Cli(("gstudy", "{d}/m.csv"), 1, "{d}/m.csv, line 5: the row has 2 cells",
                                {"m.csv": MATRIX + b"4,0.1\n"}),
    "pairwise-seed-negative": Cli(("pairwise", "{d}/m.csv", "--seed", "-1"), 2,
                                  "argument --seed: expected a whole number >= 0", argparse=True),
    "pairwise-resamples-zero": Cli(("pairwise", "{d}/m.csv", "--n-resamples", "0"), 2,
                                   "argument --n-resamples", argparse=True),
    "pairwise-alpha-text": Cli(("pairwise", "{d}/m.csv", "--alpha", "five"), 2,
                               "argument --alpha", argparse=True),
    "pairwise-out-exists": Cli(("pairwise", "{d}/m.csv", "--out", "{d}/p.csv"), 2,
                               "{d}/p.csv already exists", {"m.csv": MATRIX, "p.csv": b"keep"}),
    "pairwise-matrix-nan": Cli(("pairwise", "{d}/m.csv"), 1, "{d}/m.csv, line 3: missing score",
                               {"m.csv": _swap_line2(MATRIX.replace(b"2,0.3", b"2,NA"), b"1,0.1,0.2")}),
    "power-alpha-zero": Cli(("power", "--n", "50", "--delta", "0.05", "--sigma", "0.1", "--alpha",
                             "0"), 2, "argument --alpha", argparse=True),
    "power-power-above-one": Cli(("power", "--delta", "0.05", "--sigma", "0.1", "--power", "1.5"),
                                 2, "argument --power", argparse=True),
    "power-negative-sigma": Cli(("power", "--n", "50", "--delta", "0.05", "--sigma", "-0.1"), 2,
                                "argument --sigma: expected a finite number > 0", argparse=True),
    "power-nan-delta": Cli(("power", "--n", "50", "--delta", "nan", "--sigma", "0.1"), 2,
                           "argument --delta: expected a finite number", argparse=True),
    "power-too-few": Cli(("power", "--n", "50"), 2, "give exactly one unknown"),
    # report
    "report-no-data": Cli(("report", "--out", "{d}/r"), 2, "no data to report on"),
    "report-data-and-demo": Cli(("report", "{d}/m.csv", "--demo", "--out", "{d}/r"), 2,
                                "not both", {"m.csv": MATRIX}),
    "report-alpha-two": Cli(("report", "--demo", "--alpha", "2", "--out", "{d}/r"), 2, "--alpha"),
    "report-out-exists": Cli(("report", "{d}/m.csv", "--out", "{d}/r"), 2,
                             "{d}/r already exists", {"m.csv": MATRIX, "r/report.html": b"keep"}),
    "report-out-is-file": Cli(("report", "{d}/m.csv", "--out", "{d}/m.csv"), 2,
                              "it is an existing file, not a directory", {"m.csv": MATRIX}),
    "report-bad-matrix": Cli(("report", "{d}/m.csv", "--out", "{d}/r"), 1,
                             "{d}/m.csv, line 1: system 'a' appears twice",
                             {"m.csv": b"topic,a,a\n1,0.1,0.2\n2,0.2,0.3\n"}),
    "report-trec-eval-bad": Cli(("report", "{d}/te", "--out", "{d}/r"), 1,
                                "{d}/te, line 2: value 'x'",
                                {"te": _swap_line2(TREC, b"map 302 x")}),
    # datasets
    "datasets-unknown-collection": Cli(("datasets", "load", "adhoc99", "AP"), 2,
                                       "unknown collection 'adhoc99'"),
    "datasets-unknown-measure": Cli(("datasets", "load", "adhoc8", "P20"), 2,
                                    "has no measure 'P20'"),
    "datasets-out-exists": Cli(("datasets", "load", "adhoc8", "AP", "--out", "{d}/a.csv"), 2,
                               "{d}/a.csv already exists", {"a.csv": b"keep"}),
    "datasets-out-bad-extension": Cli(("datasets", "load", "adhoc8", "AP", "--out", "{d}/a.xlsx"),
                                      2, "cannot tell the format"),
    "datasets-wide-parquet": Cli(("datasets", "load", "adhoc8", "AP", "--wide", "--out",
                                  "{d}/a.parquet"), 2, "wide matrices are written as CSV or TSV"),
    # standardize
    "standardize-fit-out-exists": Cli(("standardize", "fit", "{d}/m.csv", "--out", "{d}/f.csv"), 2,
                                      "{d}/f.csv already exists", {"m.csv": MATRIX, "f.csv": b"x"}),
    "standardize-fit-top-zero": Cli(("standardize", "fit", "{d}/m.csv", "--out", "{d}/f.csv",
                                     "--top", "0"), 2, "argument --top", argparse=True),
    "standardize-apply-bad-factors": Cli(("standardize", "apply", "{d}/m.csv", "--factors",
                                          "{d}/z", "--out", "{d}/o.csv"), 1, "{d}/z, line 1",
                                         {"m.csv": MATRIX, "z": b"not factors\n"}),
    "standardize-apply-out-exists": Cli(("standardize", "apply", "{d}/m.csv", "--factors", "{d}/z",
                                         "--out", "{d}/o.csv"), 2, "{d}/o.csv already exists",
                                        {"m.csv": MATRIX, "z": b"x", "o.csv": b"keep"}),
    # compare / topics (outputs through irmodels._safeio too)
    "compare-out-exists": Cli(("compare", "{d}/m.csv", "--out", "{d}/c.csv"), 2,
                              "{d}/c.csv already exists", {"m.csv": MATRIX, "c.csv": b"keep"}),
    "compare-latex-exists": Cli(("compare", "{d}/m.csv", "--latex", "{d}/c.tex"), 2,
                                "{d}/c.tex already exists", {"m.csv": MATRIX, "c.tex": b"keep"}),
    "topics-out-exists": Cli(("topics", "{d}/m.csv", "--out", "{d}/t"), 2,
                             "{d}/t already exists", {"m.csv": MATRIX, "t/summary.csv": b"old"}),
    "compare-seed-negative": Cli(("compare", "{d}/m.csv", "--seed", "-1"), 2, "argument --seed",
                                 argparse=True),
    "compare-alpha-one": Cli(("compare", "{d}/m.csv", "--alpha", "1"), 2, "argument --alpha",
                             argparse=True),
    "topics-seed-negative": Cli(("topics", "{d}/m.csv", "--seed", "-2"), 2, "argument --seed",
                                argparse=True),
    "topics-bin-width-zero": Cli(("topics", "{d}/m.csv", "--bin-width", "0"), 2,
                                 "argument --bin-width", argparse=True),
    "topics-unreachable-scheduler": Cli(("topics", "{d}/m.csv", "--backend", "tcp://127.0.0.1:9"),
                                        3, "cannot reach the Dask scheduler", {"m.csv": MATRIX}),
    "topics-out-is-file": Cli(("topics", "{d}/m.csv", "--out", "{d}/m.csv"), 2,
                              "not a directory", {"m.csv": MATRIX}),
    # demo
    "demo-out-exists": Cli(("demo", "--out", "{d}/demo", "--preset", "tiny"), 2,
                           "{d}/demo already exists", {"demo/old.txt": b"older collection"}),
    "demo-out-is-file": Cli(("demo", "--out", "{d}/f", "--preset", "tiny"), 2,
                            "not a directory", {"f": b"x"}),
    "demo-seed-negative": Cli(("demo", "--out", "{d}/demo", "--seed", "-1"), 2,
                              "argument --seed: expected a whole number >= 0", argparse=True),
    "demo-topics-zero": Cli(("demo", "--out", "{d}/demo", "--topics", "0"), 2, "argument --topics",
                            argparse=True),
    "demo-unknown-measure": Cli(("demo", "--out", "{d}/demo", "--measures", "AP,foo"), 2,
                                "unknown measure"),
    # shards / simulate
    "shards-one-shard": Cli(("shards", "--demo", "--preset", "tiny", "--n-shards", "1,3", "--out",
                             "{d}/s"), 2, "integers >= 2"),
    "shards-unknown-model": Cli(("shards", "--demo", "--preset", "tiny", "--models", "MD9",
                                 "--out", "{d}/s"), 2, "unknown model 'MD9'"),
    "shards-seed-negative": Cli(("shards", "--demo", "--seed", "-3"), 2, "argument --seed",
                                argparse=True),
    "shards-splits-zero": Cli(("shards", "--demo", "--n-splits", "0"), 2, "argument --n-splits",
                              argparse=True),
    "shards-unreachable-scheduler": Cli(("shards", "--demo", "--preset", "tiny", "--backend",
                                         "tcp://127.0.0.1:9", "--out", "{d}/s"), 3,
                                        "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
    "shards-unknown-backend": Cli(("shards", "--demo", "--preset", "tiny", "--backend", "threads",
                                   "--out", "{d}/s"), 2, "unknown backend 'threads'"),
    "shards-out-exists": Cli(("shards", "--demo", "--preset", "tiny", "--out", "{d}/s"), 2,
                             "{d}/s already exists", {"s/runs.csv": b"older study"}),
    "shards-runs-without-qrels": Cli(("shards", "--runs", "{d}/r", "--out", "{d}/s"), 2,
                                     "--runs needs --qrels", {"r": RUN}),
    "shards-bad-qrels-line": Cli(("shards", "--runs", "{d}/r", "--qrels", "{d}/q", "--out",
                                  "{d}/s"), 1, "{d}/q, line 3: expected 4 fields",
                                 {"r": RUN, "q": QRELS.replace(b"302 0 d3 2", b"302 0 d3")}),
    "simulate-samples-zero": Cli(("simulate", "documents", "--demo", "--n-samples", "0", "--out",
                                  "{d}/x"), 2, "n_samples must be at least 1"),
    "simulate-seed-negative": Cli(("simulate", "documents", "--demo", "--seed", "-1"), 2,
                                  "argument --seed", argparse=True),
    "simulate-out-exists": Cli(("simulate", "documents", "--demo", "--out", "{d}/x"), 2,
                               "{d}/x already exists", {"x/samples.csv": b"older"}),
    "simulate-unreachable-scheduler": Cli(("simulate", "documents", "--demo", "--backend",
                                           "tcp://127.0.0.1:9", "--out", "{d}/x"), 3,
                                          "cannot reach the Dask scheduler"),
    "simulate-bad-run": Cli(("simulate", "documents", "--runs", "{d}/r", "--qrels", "{d}/q",
                             "--out", "{d}/x"), 1, "{d}/r, line 4: score 'high'",
                            {"r": BAD_RUN, "q": QRELS}),
}

for _name, _case in list(CLI_CASES.items()):
    if not _case.files and not _case.argparse and "{d}/m.csv" in _case.argv and (
        "no.csv" not in " ".join(_case.argv)
    ):
        CLI_CASES[_name] = Cli(_case.argv, _case.status, _case.fragment, {"m.csv": MATRIX})


def test_corpus_size() -> None:
    """At least 150 cases, one per (reader or command, kind of fault)."""
    assert len(CASES) + len(CLI_CASES) >= 150
    assert sum(c.error is not None for c in CASES.values()) >= 100


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_reader_case(case_id: str, tmp_path: Path) -> None:
    case = CASES[case_id]
    if case.error is None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            case.call(tmp_path)
        kinds = [w.category for w in seen if issubclass(w.category, Warning)]
        if case.warning is not None:
            assert any(issubclass(k, case.warning) for k in kinds), kinds
        else:
            assert not [k for k in kinds if issubclass(k, IRModelsError.__mro__[0])], kinds
        return
    with pytest.raises(case.error) as info:
        case.call(tmp_path)
    err = info.value
    assert isinstance(err, IRModelsError), f"not an irmodels error: {type(err)}"
    message = str(err)
    assert case.fragment in message, (case.fragment, message)
    if case.name is not None:
        assert isinstance(err, DataFormatError)
        assert err.path == str(tmp_path / case.name), (err.path, message)
        assert err.line == case.line, (err.line, message)
        where = f"{tmp_path / case.name}" + (f", line {case.line}" if case.line else "") + ": "
        assert message.startswith(where), message


@pytest.mark.parametrize("case_id", sorted(CLI_CASES))
def test_command_case(case_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = CLI_CASES[case_id]
    for rel, content in case.files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    argv = [a.replace("{d}", str(tmp_path)) for a in case.argv]
    if case.argparse:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == case.status
        err = capsys.readouterr().err
        assert case.fragment.replace("{d}", str(tmp_path)) in err, err
        assert "Traceback" not in err
        return
    status = main(argv)
    err = capsys.readouterr().err
    assert status == case.status, (status, err)
    assert "Traceback" not in err
    fragment = case.fragment.replace("{d}", str(tmp_path))
    if case.status == 0:
        assert fragment in err, err
    else:
        lines = [ln for ln in err.splitlines() if ln.startswith("irmodels: error: ")]
        assert len(lines) == 1, err
        assert fragment in err, (fragment, err)
    # nothing the user owns was changed, and no temporary file was left behind
    for p, content in before.items():
        assert p.read_bytes() == content, p
    assert not [p for p in tmp_path.rglob(".irmodels-tmp-*")], list(tmp_path.rglob("*"))


def test_formula_error_is_a_usage_error(tmp_path: Path, capsys) -> None:
    (tmp_path / "m.csv").write_bytes(MATRIX)
    assert main(["anova", str(tmp_path / "m.csv"), "--formula", "score ~ topic +"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("irmodels: error: ") and "Traceback" not in err
    assert issubclass(FormulaError, IRModelsError)
