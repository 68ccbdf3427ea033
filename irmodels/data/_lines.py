"""The text-file layer of the readers: bytes checked (empty, blank, control characters, odd
whitespace, UTF-8), lines numbered for error messages, and the parser of wide score matrices.

numpy only, no pandas: ``irmodels anova`` on a complete matrix reads it through
:func:`parse_matrix` without importing pandas (see :mod:`irmodels.cli._anova_fast`);
:func:`irmodels.read_matrix` builds its long frame from the same parse.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re
import unicodedata
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from irmodels.errors import DataFormatError, DataQualityWarning, MissingFileError, UsageError

PathLike = str | os.PathLike

_BOM = b"\xef\xbb\xbf"
# Whitespace other than space, tab, CR and LF, as UTF-8 bytes (ASCII bytes never occur inside
# a multi-byte UTF-8 sequence, and 0xC2/0xE1/0xE2/0xE3 are always lead bytes).
_ODD_WS_BYTES = re.compile(
    rb"[\x0b\x0c\x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
    rb"|\xe2\x81\x9f|\xe3\x80\x80"
)
_ODD_ASCII = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
NOT_BLANK = re.compile(rb"[^ \t\r\n]")
_ODD_WS_CHARS = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_SPLIT = re.compile(r"[ \t]+")
CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
INT = re.compile(r"[+-]?\d+", re.ASCII)
FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
NA_TOKENS = frozenset({"", "NA", "NaN", "nan", "NAN", "N/A", "NULL", "null", "None"})
#: The columns of a long frame's header (a file :func:`parse_matrix` refuses as a matrix).
LONG_COLUMNS = frozenset({"topic", "system", "score"})
_TOPIC_HEADERS = frozenset({"", "topic", "topics", "qid", "query", "query_id", "topic_id"})


def missing_file(path: PathLike, what: str = "file") -> MissingFileError:
    """The error for an input ``path`` that does not exist, naming up to three files of its
    directory with a similar name (a near miss: ``scores.cvs`` for ``scores.csv``)."""
    p = Path(path)
    parent = p.parent
    suggestion = ""
    try:
        if parent.is_dir():
            with os.scandir(parent) as it:
                names = [e.name for _, e in zip(range(10_000), it) if not e.name.startswith(".")]
            close = difflib.get_close_matches(p.name, names, n=3, cutoff=0.8)
            if close:
                suggestion = "did you mean " + " or ".join(repr(str(parent / c)) if
                                                           str(parent) != "." else repr(c)
                                                           for c in close) + "?"
        elif str(parent) not in ("", "."):
            suggestion = f"the directory {str(parent)!r} does not exist either"
    except OSError:  # an unreadable directory: no suggestion
        suggestion = ""
    return MissingFileError(f"the {what} does not exist",
                            path=str(path), suggestion=suggestion)


def read_bytes(path: PathLike, what: str) -> bytes:
    p = Path(path)
    if p.is_dir():
        raise DataFormatError(
            f"expected a {what}, found a directory; pass a file path", path=str(path)
        )
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise missing_file(path, what) from None
    except (IsADirectoryError, PermissionError) as exc:
        raise DataFormatError(
            f"cannot read the {what}: {exc.strerror}", path=str(path)
        ) from None
    data = data.removeprefix(_BOM)
    if not data:
        raise DataFormatError(
            f"the {what} is empty (0 bytes); check that it was written completely",
            path=str(path),
        )
    if NOT_BLANK.search(data) is None:
        n = data.replace(b"\r\n", b"\n").count(b"\n") + 1
        raise DataFormatError(
            f"the {what} has only blank lines ({n}); it holds no data",
            path=str(path),
        )
    at = first_byte_in(data, _CONTROL_LUT)
    if at >= 0:
        line = _line_at(data, at)
        raise DataFormatError(
            f"the line contains the control character U+{data[at]:04X} (byte "
            f"0x{data[at]:02x}); ids, names and numbers may not hold control "
            "characters (a NUL byte often means a binary or UTF-16 file). Remove it, or "
            "re-save the file as UTF-8 text.",
            path=str(path),
            line=line,
        )
    if data.isascii() and not any(b in data for b in _ODD_ASCII):
        return data  # the common case, checked at memchr speed
    m = _ODD_WS_BYTES.search(data)
    if m is not None:
        line = _line_at(data, m.start())
        char = m.group(0).decode("utf-8")
        raise DataFormatError(
            f"the line contains the whitespace character {_describe(char)}; fields must be "
            "separated by spaces or tabs. Replace it with a space (or remove it).",
            path=str(path),
            line=line,
        )
    return data


def _byte_table(pattern: bytes) -> np.ndarray:
    lut = np.zeros(256, dtype=bool)
    lut[[b for b in range(256) if re.fullmatch(pattern, bytes([b]))]] = True
    return lut


# control bytes that are neither line endings nor separators (NUL included)
_CONTROL_LUT = _byte_table(rb"[\x00-\x08\x0e-\x1b\x7f]")
# every control byte (ids held in frames: no tab or line break either)
ANY_CONTROL_LUT = _byte_table(rb"[\x00-\x1f\x7f]")


def first_byte_in(data: bytes | memoryview, lut: np.ndarray, block: int = 1 << 22) -> int:
    """Offset of the first byte of ``data`` marked in ``lut``, or -1 (vectorised, in blocks so
    the temporary arrays stay small)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    for start in range(0, len(arr), block):
        hit = lut[arr[start:start + block]]
        if hit.any():
            return start + int(hit.argmax())
    return -1


def _line_at(data: bytes, offset: int) -> int:
    """1-based line number of byte ``offset`` (LF, CRLF or CR-only line endings)."""
    if b"\n" not in data and b"\r" in data:
        return data.count(b"\r", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1


BLANK_LINES = re.compile(r"(?:[ \t]*(?:\r\n|\r|\n))*")  # blank lines before a header
LINE_BREAK = re.compile(r"\r\n|\r|\n")
FIRST_LINE = re.compile(r"[^\r\n]*")


def check_utf8(data: bytes, path: PathLike) -> None:
    """Refuse text that is not UTF-8 (e.g. Latin-1), naming the line and column."""
    if data.isascii():
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"the line is not UTF-8 text (byte 0x{data[exc.start]:02x} at column "
            f"{exc.start - start + 1}; Latin-1 or Windows-1252?); re-save the file as UTF-8",
            path=str(path),
            line=_line_at(data, exc.start),
        ) from None


def _describe(char: str) -> str:
    return f"U+{ord(char):04X} ({unicodedata.name(char, 'control character').lower()})"


def iter_lines(data: bytes, path: PathLike, *, first_line: int = 1) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text without line ending) for every line."""
    if b"\n" not in data and b"\r" in data:
        raw_lines = data.split(b"\r")
    else:
        raw_lines = data.split(b"\n")
    for i, raw in enumerate(raw_lines, start=first_line):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataFormatError(
                f"the line is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); re-save the file as UTF-8",
                path=str(path),
                line=i,
            ) from None
        m = _ODD_WS_CHARS.search(text)
        if m is not None:  # pragma: no cover - caught earlier on the bytes
            raise DataFormatError(
                f"the line contains the whitespace character {_describe(m.group(0))}",
                path=str(path),
                line=i,
            )
        yield i, text


def split_fields(text: str) -> list[str]:
    stripped = text.strip(" \t\r")
    return _SPLIT.split(stripped) if stripped else []


def shorten(text: str, limit: int = 80) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def sep_for(path: Path, first_line: str | None = None) -> str:
    if path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    if path.suffix.lower() == ".csv":
        return ","
    if first_line is not None and "\t" in first_line and "," not in first_line:
        return "\t"
    return ","


def _overflow(cell: str, topic: str, system: str, path: Path, line: int) -> DataFormatError:
    """The error for a matrix cell that reads as an infinite float."""
    return DataFormatError(
        f"cell {cell!r} for topic {topic}, system {system} is beyond the range of a float64 "
        "score", path=str(path), line=line,
    )


def id_like_first_column_note(values: np.ndarray, name: str, path: Path) -> str | None:
    """The note (the warning's message) when the first "system" holds distinct whole numbers
    above every other score: topic ids under a header the reader does not know (``qno``),
    which would be analysed as a run; None otherwise."""
    first, rest = values[:, 0], values[:, 1:]
    if (len(first) < 2 or not np.isfinite(first).all() or np.any(first != np.round(first))
            or len(np.unique(first)) < len(first) or np.isnan(rest).all()
            or first.min() < 1 or first.min() <= np.nanmax(rest)):
        return None
    return (
        f"{path}: the first column {name!r} holds distinct whole numbers ({first.min():g} to "
        f"{first.max():g}) above every score of the other columns, like topic ids; it is read "
        f"as a system. If it holds topic ids, name the column 'topic' (or pass "
        f"topic_column={name!r})."
    )


@dataclass(frozen=True)
class Matrix:
    """A parsed wide score matrix: ``values[i, j]`` is the score of ``topics[i]`` on
    ``systems[j]`` (NaN for a missing cell when ``nan="drop"``)."""

    topics: list[str]
    systems: list[str]
    values: np.ndarray
    #: What :func:`parse_matrix` called with ``warn=False`` did not warn of (the messages of
    #: the warnings it would have raised; empty when there is nothing to say).
    notes: tuple[str, ...] = ()


def parse_matrix(
    path: PathLike,
    *,
    sep: str | None = None,
    topic_column: str | Literal["auto"] | None = "auto",
    nan: Literal["raise", "drop"] = "raise",
    stacklevel: int = 4,
    warn: bool = True,
) -> Matrix:
    r"""Parse and check a wide score matrix file (the rules and errors of
    :func:`irmodels.read_matrix`, which documents the arguments); ``stacklevel`` of the warning
    about a first column that holds topic ids (4: the caller of ``read_matrix``). With
    ``warn=False`` nothing is warned: the messages are returned in :attr:`Matrix.notes`
    instead (the CLI's fast path sends a file with a note the full way).

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ap.csv"
    >>> _ = path.write_text("topic,sys1,sys2\n301,0.25,0.5\n302,0.75,1\n")
    >>> m = parse_matrix(path)
    >>> m.topics, m.systems, m.values.tolist()
    (['301', '302'], ['sys1', 'sys2'], [[0.25, 0.5], [0.75, 1.0]])
    """
    p = Path(path)
    data = read_bytes(p, "matrix file")
    lines = list(iter_lines(data, p))  # validates UTF-8
    text = "\n".join(t for _, t in lines)
    first = next(t for _, t in lines if t.strip())
    delim = sep if sep is not None else sep_for(p, first)
    if not isinstance(delim, str) or len(delim) != 1 or delim in "\"\r\n":
        raise UsageError(f"sep must be one character (not a quote or a line break), got {delim!r}")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    header: list[str] | None = None
    header_line = 0
    rows: list[tuple[int, list[str]]] = []
    while True:
        start = reader.line_num + 1  # the line where the next record starts
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise DataFormatError(
                f"the record starting on this line cannot be read as "
                f"{'TSV' if delim == chr(9) else 'CSV'} ({exc}, at line {reader.line_num}); "
                "check the quotes on this line: a quote that is never closed swallows the "
                "lines after it",
                path=str(p),
                line=start,
            ) from None
        line = reader.line_num
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if header is None:
            header, header_line = cells, line
        else:
            rows.append((line, cells))
    if header is None:  # pragma: no cover - blank files are refused by read_bytes
        raise DataFormatError("the matrix file has no header line", path=str(p))
    if not rows:
        raise DataFormatError(
            "the matrix has a header but no data rows", path=str(p), line=header_line
        )
    ncol = len(header)
    named = [h for h in header if h != ""]
    if named and all(FLOAT.fullmatch(h) for h in named) and any(
        not INT.fullmatch(h) for h in named
    ):
        raise DataFormatError(
            f"the first line ({shorten(delim.join(header))}) looks like a row of scores, not a "
            "header: a matrix file starts with a header line naming the systems (e.g. "
            "topic,sys1,sys2). Add the header line.",
            path=str(p),
            line=header_line,
        )
    if topic_column == "auto" and LONG_COLUMNS <= set(header):
        raise DataFormatError(
            f"the header ({shorten(delim.join(header))}) is that of a long frame (one score per "
            "row, in columns topic, system and score), not of a wide matrix (one column per "
            "system); read it with irm.read_frame",
            path=str(p),
            line=header_line,
        )
    # where are the topic ids?
    row_names = False
    topic_idx: int | None = None
    if topic_column == "auto":
        if header[0].lower() in _TOPIC_HEADERS and ncol > 1:
            topic_idx = 0  # named topic column: a row with a cell more is an error, below
        elif rows and all(len(c) == ncol + 1 for _, c in rows[:5]) and header[0] != "":
            row_names = True
    elif topic_column is not None:
        if topic_column not in header:
            raise DataFormatError(
                f"topic_column {topic_column!r} is not in the header; the header has "
                f"{', '.join(map(repr, header[:8]))}{', ...' if ncol > 8 else ''}",
                path=str(p),
                line=header_line,
            )
        topic_idx = header.index(topic_column)
    systems = [h for i, h in enumerate(header) if i != topic_idx]
    seen_sys: dict[str, int] = {}
    for i, s in enumerate(header, start=1):
        if i - 1 == topic_idx:
            continue
        if s == "":
            raise DataFormatError(
                f"column {i} of the header has no system name", path=str(p), line=header_line
            )
        if s in seen_sys:
            raise DataFormatError(
                f"system {s!r} appears twice in the header (columns {seen_sys[s]} and {i}); "
                "system names must be unique: rename one of the columns",
                path=str(p),
                line=header_line,
            )
        seen_sys[s] = i
    expected = ncol + 1 if row_names else ncol
    topics: list[str] = []
    topic_line: dict[str, int] = {}
    values = np.empty((len(rows), len(systems)), dtype="float64")
    for r, (line, cells) in enumerate(rows):
        if len(cells) != expected:
            raise DataFormatError(
                f"the row has {len(cells)} cells but the header (line {header_line}) has "
                f"{expected}; every row needs one value per system"
                + (" plus the topic id" if (row_names or topic_idx is not None) else ""),
                path=str(p),
                line=line,
            )
        if row_names:
            topic, scores = cells[0], cells[1:]
        elif topic_idx is not None:
            topic, scores = cells[topic_idx], cells[:topic_idx] + cells[topic_idx + 1:]
        else:
            topic, scores = str(r + 1), cells
        if topic == "":
            raise DataFormatError("the row has no topic id", path=str(p), line=line)
        if topic in topic_line:
            raise DataFormatError(
                f"topic {topic!r} already has a row on line {topic_line[topic]}; each topic "
                "may appear once",
                path=str(p),
                line=line,
            )
        topic_line[topic] = line
        topics.append(topic)
        if NA_TOKENS.isdisjoint(scores) and all(map(FLOAT.fullmatch, scores)):
            values[r] = list(map(float, scores))  # every cell a number: no per-cell loop
            if np.isinf(values[r]).any():
                c = int(np.flatnonzero(np.isinf(values[r]))[0])
                raise _overflow(scores[c], topic, systems[c], p, line)
            continue
        for c, (cell, s) in enumerate(zip(scores, systems)):
            if cell in NA_TOKENS:
                if nan == "raise":
                    raise DataFormatError(
                        f"missing score (cell {cell!r}) for topic {topic}, system {s}; fill it "
                        "in, or pass nan='drop' to drop missing cells (the design becomes "
                        "unbalanced)",
                        path=str(p),
                        line=line,
                    )
                values[r, c] = np.nan
            elif FLOAT.fullmatch(cell):
                values[r, c] = float(cell)
                if math.isinf(values[r, c]):
                    raise _overflow(cell, topic, s, p, line)
            elif cell.lstrip("+-").lower() in ("inf", "infinity"):
                raise DataFormatError(
                    f"cell {cell!r} for topic {topic}, system {s} is an infinite value; scores "
                    "must be finite numbers",
                    path=str(p),
                    line=line,
                )
            else:
                raise DataFormatError(
                    f"cell {cell!r} for topic {topic}, system {s} is not a number",
                    path=str(p),
                    line=line,
                )
    if topic_column == "auto" and topic_idx is None and not row_names and len(systems) > 1:
        note = id_like_first_column_note(values, systems[0], p)
        if note is not None:
            if not warn:
                return Matrix(topics, systems, values, notes=(note,))
            # stacklevel counts from the frame below this one (the warning used to be raised
            # by a helper): 4 is still the caller of read_matrix
            warnings.warn(note, DataQualityWarning, stacklevel=stacklevel - 1)
    return Matrix(topics, systems, values)
