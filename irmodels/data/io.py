"""Readers and writers: trec_eval output, TREC runs and qrels, wide matrices, long frames.

Every reader reports malformed input with a :class:`~irmodels.errors.DataFormatError` that
names the file and the 1-based line (``err.path``, ``err.line``), says what was seen and how
to fix it.

Whitespace-separated formats (runs, qrels, ``trec_eval -q`` output) share these rules:

* fields are separated by runs of spaces and/or tabs; leading and trailing spaces or tabs
  are ignored, so mixed tabs and spaces are fine;
* Windows (CRLF) and old Mac (CR) line endings, a UTF-8 byte-order mark, blank lines
  (anywhere, including trailing ones) and a missing final newline are tolerated;
* other whitespace characters (no-break space U+00A0, form feed, vertical tab, ...) are an
  error naming the line and the character, because tools disagree on whether they separate
  fields;
* the text must be UTF-8 (ASCII is UTF-8).

Large files are parsed by pandas' C parser; only when that parse or the validation fails is
the file read again line by line to locate the first problem precisely.

The readers live in sibling modules, one per format (``_io_trec_eval``: ``trec_eval -q``
output; ``_io_runs``: runs, qrels and their id checks; ``_io_frames``: wide matrices and long
frames; ``_io_tables``: the machinery they share); this module re-exports their public names.
"""

from __future__ import annotations

from irmodels.data._io_frames import read_frame, read_matrix, write_frame, write_matrix
from irmodels.data._io_runs import (
    check_topics,
    read_qrels,
    read_run,
    read_runs,
    refuse_control_ids,
    warn_topic_id_mismatch,
    write_qrels,
    write_run,
)
from irmodels.data._io_tables import EXACT_FLOATS, PathLike  # noqa: F401 (data.standardize)
from irmodels.data._io_trec_eval import read_trec_eval

__all__ = [
    "check_topics",
    "read_frame",
    "read_matrix",
    "read_qrels",
    "read_run",
    "read_runs",
    "read_trec_eval",
    "refuse_control_ids",
    "warn_topic_id_mismatch",
    "write_frame",
    "write_matrix",
    "write_qrels",
    "write_run",
]
