"""Which reader a DATA file needs, decided without pandas (``irmodels anova`` on a matrix file
starts without importing it, see :mod:`irmodels.cli._anova_fast`).

- a directory, or a file whose extension is not CSV/TSV/parquet/txt: trec_eval -q output;
- ``.txt`` whose first non-blank line is a trec_eval line: trec_eval -q output;
- parquet: a long frame;
- CSV/TSV (and other ``.txt``): a long frame when the header names ``topic``, ``system`` and
  ``score`` (or the columns given by ``--topic``/``--system``/``--score``), else a wide matrix
  (rows = topics, columns = systems).

:func:`long_guess` tells a long frame with other column names (``qid,run,map``) from a matrix:
a matrix has numbers in every column but the first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["LONG_COLUMNS", "data_kind", "is_trec_eval_line", "long_guess", "table_header"]

#: The columns that make a CSV/TSV header a long frame.
LONG_COLUMNS = frozenset({"topic", "system", "score"})

_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")
_PARQUET_SUFFIXES = (".parquet", ".pq")


def is_trec_eval_line(line: str) -> bool:
    """A line of ``trec_eval -q`` output: measure, topic, value (3 fields, no comma, the last
    a number).

    >>> is_trec_eval_line("map\t301\t0.2381"), is_trec_eval_line("topic,a,b")
    (True, False)
    """
    fields = line.split()
    if len(fields) != 3 or "," in line:
        return False
    try:
        float(fields[2])
    except ValueError:
        return False
    return True


def data_kind(path: str | Path, columns: frozenset[str] | set[str] = LONG_COLUMNS
              ) -> Literal["trec_eval", "frame", "matrix"]:
    """The reader of an existing DATA path (see the module notes); ``columns`` are the names
    of the topic, system and score columns of a long frame.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "m.csv").write_text("topic,a,b\\n1,0.1,0.2\\n")
    >>> _ = (d / "l.csv").write_text("topic,system,score\\n1,a,0.1\\n")
    >>> _ = (d / "q.txt").write_text("map\\t1\\t0.25\\n")
    >>> [data_kind(d / n) for n in ("m.csv", "l.csv", "q.txt")], data_kind(d)
    (['matrix', 'frame', 'trec_eval'], 'trec_eval')
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir() or suffix not in (*_TABLE_SUFFIXES, *_PARQUET_SUFFIXES):
        return "trec_eval"
    if suffix in _PARQUET_SUFFIXES:
        return "frame"
    if suffix == ".txt" and p.is_file():  # trec_eval -q output saved as .txt: look inside
        with p.open(encoding="utf-8", errors="replace") as fh:
            first = next((line for line in fh if line.strip()), "")
        if is_trec_eval_line(first):
            return "trec_eval"
    _, names = table_header(p)
    return "frame" if set(columns) <= set(names) else "matrix"


def _fields(line: str, sep: str) -> list[str]:
    return [h.strip().strip('"').strip("'") for h in line.rstrip("\r\n").split(sep)]


def table_header(path: str | Path) -> tuple[str, list[str]]:
    """The separator and the column names of a CSV/TSV file's first line."""
    with Path(path).open(encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline()
    sep = "\t" if ("\t" in header and "," not in header) else ","
    return sep, _fields(header, sep)


_NA = {"", "na", "nan", "n/a", "null", "none"}
_TOPIC_NAMES = ("topic", "topics", "qid", "query", "query_id", "topic_id", "qno", "num")


def _number(text: str) -> bool:
    if text.lower() in _NA:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def long_guess(path: str | Path, rows: int = 50) -> dict[str, str] | None:
    """For a CSV/TSV whose header lacks ``topic, system, score``: the guessed topic, system
    and score columns when the file is a long frame (a column after the first holds labels,
    which a wide matrix never has); None when it looks like a matrix.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "l.csv").write_text("qid,run,map\\n301,bm25,0.25\\n301,rm3,0.5\\n")
    >>> _ = (d / "m.csv").write_text("qid,bm25,rm3\\n301,0.25,0.5\\n")
    >>> long_guess(d / "l.csv"), long_guess(d / "m.csv")
    ({'topic': 'qid', 'system': 'run', 'score': 'map'}, None)
    """
    sep, names = table_header(path)
    if len(names) < 2:
        return None
    seen: list[list[str]] = []
    with Path(path).open(encoding="utf-8-sig", errors="replace") as fh:
        next(fh, None)
        for line in fh:
            if line.strip():
                seen.append(_fields(line, sep))
            if len(seen) >= rows:
                break
    cells = [[r[j] for r in seen if j < len(r) and r[j].lower() not in _NA]
             for j in range(len(names))]
    numeric = [all(_number(c) for c in col) for col in cells]
    # a column of labels only (run names): a matrix has none, even with a mistyped cell
    is_label = [bool(col) and not any(_number(c) for c in col) for col in cells]
    if not seen or not any(is_label[1:]):
        return None
    labels = [n for n, lab in zip(names, is_label) if lab]
    numbers = [n for n, num in zip(names, numeric) if num]
    topic = next((n for n in names if n.lower() in _TOPIC_NAMES), names[0])
    system = next((n for n in labels if n != topic), None)
    score = next((n for n in numbers if n not in (topic, system)), None)
    if system is None or score is None:
        return None
    return {"topic": topic, "system": system, "score": score}
