"""Which reader a DATA file needs, decided without pandas (``irmodels anova`` on a matrix file
starts without importing it, see :mod:`irmodels.cli._anova_fast`).

- a directory, or a file whose extension is not CSV/TSV/parquet/txt: trec_eval -q output;
- ``.txt`` whose first non-blank line is a trec_eval line: trec_eval -q output;
- parquet: a long frame;
- CSV/TSV (and other ``.txt``): a long frame when the header names ``topic``, ``system`` and
  ``score``, else a wide matrix (rows = topics, columns = systems).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["LONG_COLUMNS", "data_kind", "is_trec_eval_line"]

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


def data_kind(path: str | Path) -> Literal["trec_eval", "frame", "matrix"]:
    """The reader of an existing DATA path (see the module notes).

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
    with p.open(encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline()
    sep = "\t" if ("\t" in header and "," not in header) else ","
    names = {h.strip().strip('"').strip("'") for h in header.split(sep)}
    return "frame" if LONG_COLUMNS <= names else "matrix"
