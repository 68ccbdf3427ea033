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
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

import numpy as np
import pandas as pd

from irmodels._safeio import atomic_file, check_target, output_error
from irmodels.data._lines import (  # noqa: F401 - the text-file layer, shared by the readers
    _ANY_CONTROL_LUT,
    _BLANK_LINES,
    _BOM,
    _CONTROL,
    _CONTROL_LUT,
    _FIRST_LINE,
    _FLOAT,
    _INT,
    _LINE_BREAK,
    _NA_TOKENS,
    _NOT_BLANK,
    _ODD_ASCII,
    _ODD_WS_BYTES,
    _ODD_WS_CHARS,
    _SPLIT,
    _TOPIC_HEADERS,
    _byte_table,
    _check_utf8,
    _describe,
    _fields,
    _first_byte_in,
    _iter_lines,
    _line_at,
    _overflow,
    _read_bytes,
    _sep_for,
    _short,
    _warn_id_like_first_column,
    missing_file,
    parse_matrix,
)
from irmodels.data.frame import (
    FACTOR_COLUMNS,
    frame,
    from_wide,
    natural_key,
    require_columns,
    to_wide,
)
from irmodels.errors import DataFormatError, DataQualityWarning, require

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

PathLike = str | os.PathLike


# --------------------------------------------------------------------------------------
# shared line machinery


@dataclass(frozen=True)
class _Format:
    what: str  # "run file"
    fields: tuple[str, ...]
    kinds: tuple[str, ...]  # "str" | "int" | "float" per field
    layout: str  # "topic Q0 docid rank score tag"


_RUN = _Format(
    "run file",
    ("topic", "q0", "docid", "rank", "score", "tag"),
    ("str", "str", "str", "int", "float", "str"),
    "topic Q0 docid rank score tag",
)
_QRELS = _Format(
    "qrels file",
    ("topic", "iter", "docid", "rel"),
    ("str", "str", "str", "int"),
    "topic iteration docid relevance",
)


def _count_error(fmt: _Format, toks: list[str], text: str, path: PathLike, line: int) -> None:
    n = len(fmt.fields)
    hint = "the line looks truncated" if len(toks) < n else "there are extra fields"
    raise DataFormatError(
        f"expected {n} fields ({fmt.layout}), found {len(toks)} in {_short(text)}; {hint}. "
        f"Each line of a {fmt.what} must have exactly {n} whitespace-separated fields.",
        path=str(path),
        line=line,
    )


def _convert(kind: str, tok: str, name: str, fmt: _Format, path: PathLike, line: int):
    if kind == "int":
        # integers, also in float notation when integral ("3.0", "1e3"), as pandas reads them
        if _INT.fullmatch(tok) and "." not in tok:
            value = int(tok)
        elif _FLOAT.fullmatch(tok) and float(tok).is_integer():
            value = int(float(tok))
        else:
            raise DataFormatError(
                f"{name} {tok!r} is not an integer; the {fmt.what} layout is {fmt.layout}",
                path=str(path),
                line=line,
            )
        if not -(2**63) <= value < 2**63:
            raise DataFormatError(f"{name} {tok!r} is too large", path=str(path), line=line)
        return value
    if kind == "float":
        if not _FLOAT.fullmatch(tok):
            what = "not a finite number" if tok.lower().lstrip("+-") in {
                "nan", "inf", "infinity"} else "not a number"
            raise DataFormatError(
                f"{name} {tok!r} is {what}; the {fmt.what} layout is {fmt.layout}",
                path=str(path),
                line=line,
            )
        number = float(tok)
        if not math.isfinite(number):
            raise DataFormatError(f"{name} {tok!r} overflows", path=str(path), line=line)
        return number
    return tok


def _slow_table(
    data: bytes,
    path: PathLike,
    fmt: _Format,
    key: tuple[str, ...],
    single: str | None,
    *,
    first_line: int = 1,
) -> pd.DataFrame:
    """Line-by-line parse and validation; raises at the first problem in file order.

    ``first_line`` is the number of the first line of ``data`` in the file (for chunks)."""
    n = len(fmt.fields)
    columns: list[list] = [[] for _ in range(n)]
    key_idx = [fmt.fields.index(k) for k in key]
    seen: dict[tuple, int] = {}
    single_idx = fmt.fields.index(single) if single else None
    first_single: tuple[str, int] | None = None
    for line, text in _iter_lines(data, path, first_line=first_line):
        toks = _fields(text)
        if not toks:
            continue
        if len(toks) != n:
            _count_error(fmt, toks, text, path, line)
        values = [
            _convert(kind, tok, name, fmt, path, line)
            for kind, tok, name in zip(fmt.kinds, toks, fmt.fields)
        ]
        if single_idx is not None:
            tag = values[single_idx]
            if first_single is None:
                first_single = (tag, line)
            elif tag != first_single[0]:
                raise DataFormatError(
                    f"this line has run tag {tag!r} but line {first_single[1]} has "
                    f"{first_single[0]!r}; a run file holds one run. Pass tags='split' to "
                    "read each tag as its own system, or system='NAME' to read the file as "
                    "one run whatever its tags.",
                    path=str(path),
                    line=line,
                )
        k = tuple(values[i] for i in key_idx)
        if key_idx and k in seen:
            shown = ", ".join(f"{name} {v}" for name, v in zip(key, k))
            raise DataFormatError(
                f"duplicate entry ({shown}): already given on line {seen[k]}. "
                f"Each ({', '.join(key)}) may appear once in a {fmt.what}; remove one of "
                "the two lines.",
                path=str(path),
                line=line,
            )
        seen[k] = line
        for col, v in zip(columns, values):
            col.append(v)
    df = pd.DataFrame({name: col for name, col in zip(fmt.fields, columns)})
    return _typed(df, fmt)


def _typed(df: pd.DataFrame, fmt: _Format) -> pd.DataFrame:
    for name, kind in zip(fmt.fields, fmt.kinds):
        if kind == "str":
            df[name] = df[name].astype(str)
        elif kind == "int":
            df[name] = df[name].astype("int64")
        else:
            df[name] = df[name].astype("float64")
    return df


def _simple_layout(data: bytes) -> bytes | None:
    """The single delimiter of a file laid out with exactly one space (or one tab) between
    fields and none around them, else None."""
    if b"\r" in data or data[:1] in (b" ", b"\t"):
        return None
    for delim, other in ((b" ", b"\t"), (b"\t", b" ")):
        if other in data:
            continue
        d = delim
        if d + d in data or d + b"\n" in data or b"\n" + d in data:
            return None
        return delim
    return None


def _fast_arrow(data: bytes, fmt: _Format, delim: bytes) -> pd.DataFrame | None:
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    # integers are parsed as floats and checked below: arrow's integer parser accepts hex
    # ("0x10"), which the line-by-line rules reject
    kinds = {"str": pa.string(), "int": pa.float64(), "float": pa.float64()}
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(column_names=list(fmt.fields)),
            parse_options=pacsv.ParseOptions(
                delimiter=delim.decode(), quote_char=False, double_quote=False,
                escape_char=False, newlines_in_values=False, ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f: kinds[k] for f, k in zip(fmt.fields, fmt.kinds)},
                strings_can_be_null=False, quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, ValueError):
        return None
    df = table.to_pandas()
    for name, kind in zip(fmt.fields, fmt.kinds):
        if kind == "int":
            values = df[name].to_numpy()
            if not (np.isfinite(values).all() and (values == np.floor(values)).all()
                    and (np.abs(values) < 2.0**53).all()):
                return None
            df[name] = values.astype("int64")
    return df


def _fast_table(data: bytes, fmt: _Format) -> pd.DataFrame | None:
    delim = _simple_layout(data)
    df = _fast_arrow(data, fmt, delim) if delim is not None else None
    if df is None:
        dtype = {
            i: ("str" if k == "str" else "int64" if k == "int" else "float64")
            for i, k in enumerate(fmt.kinds)
        }
        try:
            with warnings.catch_warnings():  # overflowing numbers: handled by the slow path
                warnings.simplefilter("ignore", RuntimeWarning)
                df = pd.read_csv(
                    io.BytesIO(data),
                    sep=r"\s+",
                    header=None,
                    engine="c",
                    na_filter=False,
                    dtype=dtype,
                    encoding="utf-8",
                    skip_blank_lines=True,
                    quoting=csv.QUOTE_NONE,
                    **EXACT_FLOATS,  # exact, as the arrow path, on every pandas
                )
        except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OverflowError):
            return None
        if df.shape[1] != len(fmt.fields):
            return None
        df.columns = list(fmt.fields)
    if len(df) == 0:
        return None
    for name, kind in zip(fmt.fields, fmt.kinds):
        if kind == "str" and (df[name] == "").any():
            return None  # a short line: pandas filled the last field with ""
        if kind == "float" and not np.isfinite(df[name].to_numpy()).all():
            return None
    return _typed(df, fmt)


_CHUNK_BYTES = 8 << 20  # validate run and qrels files 8 MiB at a time


def _chunks(data: bytes, size: int = _CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """(1-based number of the first line, bytes) of consecutive whole-line chunks."""
    eol = b"\n" if (b"\n" in data or b"\r" not in data) else b"\r"
    start, line = 0, 1
    n = len(data)
    while start < n:
        end = n if n - start <= size else data.find(eol, start + size)
        end = n if end < 0 else end + 1
        chunk = data[start:end]
        yield line, chunk
        line += chunk.count(eol)
        start = end


def _line_of_row(data: bytes, row: int) -> int:
    """The 1-based line of the ``row``-th (0-based) non-blank line."""
    seen = -1
    for line, text in _iter_lines(data, ""):
        if text.strip(" \t\r"):
            seen += 1
            if seen == row:
                return line
    return line  # pragma: no cover


def _read_table(
    path: PathLike, fmt: _Format, key: tuple[str, ...], single: str | None = None
) -> pd.DataFrame:
    """Parse and validate chunk by chunk: memory stays bounded by the data (a compact typed
    table), whatever line holds an error; the first malformed line is reported with its
    number."""
    data = _read_bytes(path, fmt.what)
    parts: list[pd.DataFrame] = []
    for first_line, chunk in _chunks(data):
        part = _fast_table(chunk, fmt) if _NOT_BLANK.search(chunk) else None
        if part is None:
            if _NOT_BLANK.search(chunk) is None:
                continue
            part = _slow_table(chunk, path, fmt, (), None, first_line=first_line)
        parts.append(part.drop(columns=[f for f in ("q0", "iter") if f in part.columns]))
    if not parts:  # pragma: no cover - blank files are caught in _read_bytes
        raise DataFormatError(f"the {fmt.what} has no data lines", path=str(path))
    df = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    del parts
    if single is not None:
        tags = df[single]
        if tags.nunique() > 1:
            row = int(np.flatnonzero((tags != tags.iloc[0]).to_numpy())[0])
            line = _line_of_row(data, row)
            first = _line_of_row(data, 0)
            raise DataFormatError(
                f"this line has run tag {tags.iloc[row]!r} but line {first} has "
                f"{tags.iloc[0]!r}; a run file holds one run. Pass tags='split' to "
                "read each tag as its own system, or system='NAME' to read the file as "
                "one run whatever its tags.",
                path=str(path),
                line=line,
            )
    dup = df.duplicated(subset=list(key), keep="first").to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        values = tuple(df[k].iloc[row] for k in key)
        same = np.ones(len(df), dtype=bool)
        for k, v in zip(key, values):
            same &= (df[k] == v).to_numpy()
        first_row = int(np.flatnonzero(same)[0])
        shown = ", ".join(f"{name} {v}" for name, v in zip(key, values))
        raise DataFormatError(
            f"duplicate entry ({shown}): already given on line {_line_of_row(data, first_row)}. "
            f"Each ({', '.join(key)}) may appear once in a {fmt.what}; remove one of "
            "the two lines.",
            path=str(path),
            line=_line_of_row(data, row),
        )
    return df


def _files_in(path_or_dir: PathLike | Iterable[PathLike], what: str) -> list[Path]:
    if isinstance(path_or_dir, (str, os.PathLike)):
        p = Path(path_or_dir)
        if p.is_dir():
            files = sorted(
                (f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")),
                key=lambda f: natural_key(f.name),
            )
            if not files:
                raise DataFormatError(
                    f"the directory holds no {what}s (hidden files are skipped)", path=str(p)
                )
            return files
        return [p]
    files = [Path(f) for f in path_or_dir]
    if not files:
        raise DataFormatError(f"no {what} given; pass one or more paths or a directory")
    return files


# --------------------------------------------------------------------------------------
# trec_eval -q output


@overload
def read_trec_eval(
    path_or_dir: PathLike | Iterable[PathLike],
    *,
    system: str | None = None,
    summary: Literal[False] = False,
) -> pd.DataFrame: ...


@overload
def read_trec_eval(
    path_or_dir: PathLike | Iterable[PathLike],
    *,
    system: str | None = None,
    summary: Literal[True],
) -> tuple[pd.DataFrame, pd.DataFrame]: ...


def read_trec_eval(
    path_or_dir: PathLike | Iterable[PathLike],
    *,
    system: str | None = None,
    summary: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    r"""Read ``trec_eval -q`` output (one run per file) into a long frame.

    Each line is ``measure<ws>topic<ws>value``. Lines whose topic is ``all`` are the
    run's summary (``runid all NAME``, ``num_q all 50``, ``map all 0.25``...); they are kept
    apart from the per-topic rows and returned only with ``summary=True``, together with
    per-topic values written in single quotes (text, like ``relstring 301 '0110'`` of
    ``trec_eval -a``). Every other per-topic value must be a number.

    Parameters
    ----------
    path_or_dir : path, directory or iterable of paths
        One output file, a directory whose (non-hidden) files are each the output of one run,
        or a list of files.
    system : str, optional
        Name of the run (one file only). By default the value of the ``runid all NAME`` line,
        or the file name without extension when that line is absent.
    summary : bool
        Also return the ``all`` rows.

    Returns
    -------
    DataFrame or (DataFrame, DataFrame)
        The per-topic long frame, columns ``measure, topic, system, score`` (see
        :func:`irmodels.frame`; measures keep trec_eval's names such as ``map``, ``P_10``,
        ``ndcg_cut_10``). With ``summary=True`` a tuple ``(perquery, summary)`` where
        ``summary`` has one row per ``all`` line or quoted per-topic value:

        - ``system`` : str, the run
        - ``measure`` : str, trec_eval's name
        - ``topic`` : str, ``all`` (or the topic of a quoted text value)
        - ``value`` : str, the value as written (``runid`` holds a name)
        - ``score`` : float64, the value as a number, NaN when it is not one

    Raises
    ------
    DataFormatError
        With the file and line: a line without exactly three fields, a non-numeric
        per-topic value, the same (measure, topic) twice, an empty file, a file without
        per-topic rows (trec_eval was run without ``-q``), two files with the same run name.

    Examples
    --------
    >>> import pathlib, tempfile, irmodels as irm
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "bm25.txt").write_text(
    ...     "map    301  0.0324\nP_10   301  0.2000\nmap    302  0.4024\n"
    ...     "P_10   302  0.6000\nrunid  all  BM25\nmap    all  0.2174\n")
    >>> per_topic, totals = irm.read_trec_eval(tmp / "bm25.txt", summary=True)
    >>> per_topic
      measure topic system   score
    0     map   301   BM25  0.0324
    1    P_10   301   BM25  0.2000
    2     map   302   BM25  0.4024
    3    P_10   302   BM25  0.6000
    >>> totals
      system measure topic   value   score
    0   BM25   runid   all    BM25     NaN
    1   BM25     map   all  0.2174  0.2174
    """
    files = _files_in(path_or_dir, "trec_eval output file")
    if system is not None and len(files) > 1:
        raise DataFormatError(
            f"system={system!r} names one run but {len(files)} files were given; "
            "leave system=None to name each run after its runid line or file"
        )
    per_parts: list[pd.DataFrame] = []
    sum_parts: list[pd.DataFrame] = []
    owner: dict[str, Path] = {}
    for f in files:
        per, summ, runid = _read_one_trec_eval(f)
        name = system if system is not None else (runid if runid is not None else f.stem)
        if name in owner:
            raise DataFormatError(
                f"run {name!r} is read from both {owner[name]} and {f}; run names must be "
                "unique. Give the runs distinct runid values, or read them separately with "
                "system='NAME'.",
                path=str(f),
            )
        owner[name] = f
        per["system"] = name
        summ["system"] = name
        per_parts.append(per)
        sum_parts.append(summ)
    long = frame(pd.concat(per_parts, ignore_index=True), measure="measure")
    if not summary:
        return long
    summ_all = pd.concat(sum_parts, ignore_index=True)[["system", "measure", "topic", "value"]]
    summ_all["score"] = pd.to_numeric(summ_all["value"], errors="coerce").astype("float64")
    for col in ("system", "measure", "topic", "value"):
        summ_all[col] = summ_all[col].astype(str)
    return long, summ_all


def _read_one_trec_eval(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    data = _read_bytes(path, "trec_eval output file")
    measures: list[str] = []
    topics: list[str] = []
    scores: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    s_measure: list[str] = []
    s_topic: list[str] = []
    s_value: list[str] = []
    runid = None
    layout = "measure topic value, as printed by trec_eval -q"
    for line, text in _iter_lines(data, path):
        toks = _fields(text)
        if not toks:
            continue
        if len(toks) != 3:
            hint = "the line looks truncated" if len(toks) < 3 else "there are extra fields"
            raise DataFormatError(
                f"expected 3 fields ({layout}), found {len(toks)} in {_short(text)}; {hint}",
                path=str(path),
                line=line,
            )
        measure, topic, value = toks
        k = (measure, topic)
        if k in seen:
            raise DataFormatError(
                f"measure {measure!r} for topic {topic!r} already appears on line {seen[k]}; "
                "one file holds one run. Was the output of several runs concatenated? Put "
                "each run in its own file and pass the directory.",
                path=str(path),
                line=line,
            )
        seen[k] = line
        text_value = len(value) >= 2 and value[0] == value[-1] == "'"
        if topic == "all" or text_value:
            s_measure.append(measure)
            s_topic.append(topic)
            s_value.append(value)
            if measure == "runid":
                runid = value
            continue
        if not _FLOAT.fullmatch(value):
            raise DataFormatError(
                f"value {value!r} of measure {measure!r} for topic {topic!r} is not a number; "
                "only the 'all' summary lines and values in single quotes (like trec_eval's "
                "relstring) may hold text",
                path=str(path),
                line=line,
            )
        measures.append(measure)
        topics.append(topic)
        scores.append(float(value))
    if not measures:
        raise DataFormatError(
            "the file has no per-topic lines, only 'all' summary lines; run trec_eval with "
            "-q to print per-topic values",
            path=str(path),
        )
    per = pd.DataFrame({"measure": measures, "topic": topics, "score": scores})
    summ = pd.DataFrame({"measure": s_measure, "topic": s_topic, "value": s_value}, dtype=object)
    return per, summ, runid


# --------------------------------------------------------------------------------------
# TREC runs


def read_run(
    path: PathLike,
    *,
    system: str | None = None,
    tags: Literal["error", "split"] = "error",
) -> pd.DataFrame:
    r"""Read a TREC run file (``topic Q0 docid rank score tag`` per line).

    Parameters
    ----------
    path : path
        The run file. See the module notes for the tolerated whitespace, line endings and
        byte-order mark. The second field (``Q0``) is ignored, whatever it holds.
    system : str, optional
        Name of the run. By default the tag (6th field). When given, the tags are ignored:
        the whole file is one run (as trec_eval reads it).
    tags : {"error", "split"}
        A file whose lines carry several tags (several runs concatenated) raises by default,
        at the first line whose tag differs; ``"split"`` reads each tag as its own system.

    Returns
    -------
    DataFrame
        One row per line, in file order:

        - ``system`` : str
        - ``topic`` : str
        - ``docid`` : str
        - ``score`` : float64
        - ``rank`` : int64, as written (measures rank by score, not by this field)

    Raises
    ------
    DataFormatError
        With the file and line: a line without six fields, a rank that is not an integer, a
        score that is not a finite number, a document retrieved twice for one topic (by one
        system), several tags (``tags="error"``), an empty file.

    Examples
    --------
    >>> import pathlib, tempfile, irmodels as irm
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "bm25.run"
    >>> _ = path.write_text("301 Q0 FR940202-2-00150 1 2.129 BM25\n"
    ...                     "301\tQ0\tFR940203-1-00036 2 1.912 BM25\r\n"
    ...                     "302 Q0 LA010189-0003 1 7.5 BM25\n\n")
    >>> irm.read_run(path)
      system topic             docid  score  rank
    0   BM25   301  FR940202-2-00150  2.129     1
    1   BM25   301  FR940203-1-00036  1.912     2
    2   BM25   302     LA010189-0003  7.500     1
    """
    if tags not in ("error", "split"):
        raise DataFormatError(f"tags must be 'error' or 'split', got {tags!r}")
    key: tuple[str, ...]
    single: str | None
    if system is not None:
        key, single = ("topic", "docid"), None
    elif tags == "split":
        key, single = ("tag", "topic", "docid"), None
    else:
        key, single = ("topic", "docid"), "tag"
    df = _read_table(path, _RUN, key, single)
    out = pd.DataFrame(
        {
            "system": df["tag"] if system is None else pd.Series(str(system), index=df.index),
            "topic": df["topic"],
            "docid": df["docid"],
            "score": df["score"],
            "rank": df["rank"],
        }
    )
    out["system"] = out["system"].astype(str)
    return out


def read_runs(
    paths_or_dir: PathLike | Iterable[PathLike],
    *,
    system_from: Literal["tag", "file"] = "tag",
) -> pd.DataFrame:
    r"""Read many TREC run files into one runs frame.

    Parameters
    ----------
    paths_or_dir : directory, path or iterable of paths
        A directory (every non-hidden file in it, in natural order of file names) or files.
    system_from : {"tag", "file"}
        Name each run after its tag (default) or after its file name.

    Returns
    -------
    DataFrame
        Columns ``system, topic, docid, score, rank`` as in :func:`read_run`, runs one after
        the other.

    Raises
    ------
    DataFormatError
        Anything :func:`read_run` raises, and two files that hold runs of the same name.

    Examples
    --------
    >>> import pathlib, tempfile, irmodels as irm
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "run10.txt").write_text("1 Q0 d1 1 0.9 lm\n1 Q0 d2 2 0.5 lm\n")
    >>> _ = (folder / "run2.txt").write_text("1 Q0 d2 1 3.0 bm25\n")
    >>> irm.read_runs(folder)
      system topic docid  score  rank
    0   bm25     1    d2    3.0     1
    1     lm     1    d1    0.9     1
    2     lm     1    d2    0.5     2
    """
    if system_from not in ("tag", "file"):
        raise DataFormatError(f"system_from must be 'tag' or 'file', got {system_from!r}")
    files = _files_in(paths_or_dir, "run file")
    parts = []
    owner: dict[str, Path] = {}
    for f in files:
        run = read_run(f, system=f.name if system_from == "file" else None)
        for name in pd.unique(run["system"]):
            if name in owner:
                raise DataFormatError(
                    f"run {name!r} is in both {owner[name]} and {f}; system names must be "
                    "unique. Give the runs distinct tags, or pass system_from='file' to name "
                    "each run after its file.",
                    path=str(f),
                )
            owner[name] = f
        parts.append(run)
    return pd.concat(parts, ignore_index=True)


# read_csv parses decimal numbers exactly (round trip) by default from pandas 3.1 on, which
# deprecates the option; before, the default "high" precision can be 1 ulp off
EXACT_FLOATS: dict[str, str] = (
    {} if tuple(int(x) for x in pd.__version__.split(".")[:2]) >= (3, 1)
    else {"float_precision": "round_trip"}
)

# every character str.isspace() accepts, and the C0 controls and DEL
# (regex escapes for the ASCII ones, the characters themselves for the others: both Python's re
# and pyarrow's RE2 read that)
_SPACE_OR_CONTROL = (r"[\s\x00-\x1f\x7f"
                     "\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _check_no_space(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    for col in columns:
        values = df[col].astype(str)
        # any whitespace (ASCII or Unicode) or control character breaks the line format
        # (Unicode spaces spelled out: the pyarrow regex engine's \s is ASCII-only on some pandas)
        bad = (values == "") | values.str.contains(_SPACE_OR_CONTROL, regex=True)
        if bad.any():
            v = values[bad].iloc[0]
            raise DataFormatError(
                f"{what} column {col!r} has the value {v!r}, which is empty or contains "
                "whitespace or a control character and cannot be written in a "
                "whitespace-separated file; rename it"
            )


def _trec_order_rank(df: pd.DataFrame) -> pd.Series:
    order = df.sort_values(
        ["system", "topic", "score", "docid"], ascending=[True, True, False, False],
        kind="mergesort",
    )
    ranks = order.groupby(["system", "topic"], sort=False).cumcount() + 1
    return ranks.reindex(df.index).astype("int64")


def write_run(runs: pd.DataFrame, path_or_dir: PathLike, *, force: bool = False) -> list[Path]:
    """Write runs as TREC run files (``topic Q0 docid rank score system``).

    Parameters
    ----------
    runs : DataFrame
        Columns ``system, topic, docid, score`` and optionally ``rank``; without ``rank`` the
        rank is the position in trec_eval order (score descending, ties by docid descending).
    path_or_dir : path
        A file (all systems in it, the tag telling them apart: read it back with
        ``read_run(path, tags="split")``), or an existing directory (or a path ending with a
        separator), which gets one file per system named after the system.
    force : bool
        Replace existing files. By default an existing target file is refused
        (:class:`~irmodels.errors.OutputExistsError`) and nothing is written. Files are written
        beside their target and renamed into place, so an interrupted write leaves no
        partial file.

    Returns
    -------
    list of Path
        The files written.

    Examples
    --------
    >>> import pandas as pd, tempfile, os, irmodels as irm
    >>> runs = pd.DataFrame({"system": ["a", "a"], "topic": ["1", "1"],
    ...                      "docid": ["d1", "d2"], "score": [2.5, 1.0]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     [f.name for f in irm.write_run(runs, tmp)]
    ...     print(open(os.path.join(tmp, "a")).read(), end="")
    ['a']
    1 Q0 d1 1 2.5 a
    1 Q0 d2 2 1.0 a
    """
    require_columns(runs, ["system", "topic", "docid", "score"], "runs")
    df = runs.reset_index(drop=True)
    _check_no_space(df, ["system", "topic", "docid"], "runs")
    if "rank" not in df.columns:
        df = df.assign(rank=_trec_order_rank(df))
    out = pd.DataFrame(
        {
            "topic": df["topic"].astype(str),
            "q0": "Q0",
            "docid": df["docid"].astype(str),
            "rank": df["rank"].astype("int64"),
            "score": df["score"].astype("float64"),
            "tag": df["system"].astype(str),
        }
    )
    target = Path(path_or_dir)
    as_dir = target.is_dir() or str(path_or_dir).endswith((os.sep, "/"))
    if not as_dir:
        with atomic_file(target, force=force) as tmp:
            out.to_csv(tmp, sep=" ", header=False, index=False, lineterminator="\n")
        return [target]
    parts = []
    for name, part in out.groupby("tag", sort=False):
        if name.startswith(".") or "/" in name or "\\" in name or name in ("", "..") or (
            _CONTROL.search(name)
        ):
            raise DataFormatError(
                f"system {name!r} cannot be used as a file name; write to a single file instead"
            )
        check_target(target / name, force=force)  # refuse before writing anything
        parts.append((target / name, part))
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(exc, target) from None
    with contextlib.ExitStack() as stack:
        for f, part in parts:
            tmp = stack.enter_context(atomic_file(f, force=force))
            part.to_csv(tmp, sep=" ", header=False, index=False, lineterminator="\n")
    return [f for f, _ in parts]


# --------------------------------------------------------------------------------------
# qrels


def read_qrels(path: PathLike) -> pd.DataFrame:
    r"""Read a TREC qrels file (``topic iteration docid relevance`` per line).

    Relevance is an integer; graded values are kept as written. Negative values are allowed
    and kept, as trec_eval accepts them: trec_eval (``form_res_rels.c``) reads a negative
    value as "in the pool but not judged" (the sampled pools of infAP): such a document is
    never relevant and is not counted among the judged documents (bpref and infAP treat it
    as unjudged). A document is relevant when its value is at least the relevance level (1 by
    default). The iteration field is ignored.

    Returns
    -------
    DataFrame
        - ``topic`` : str
        - ``docid`` : str
        - ``rel`` : int64

    Raises
    ------
    DataFormatError
        With the file and line: a line without four fields, a non-integer relevance, a
        (topic, docid) judged twice, an empty file.

    Examples
    --------
    >>> import pathlib, tempfile, irmodels as irm
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"
    >>> _ = path.write_text("301 0 CR93E-10279 0\n301 0 CR93E-1282 3\n302 0 FT911-1 -1\n")
    >>> irm.read_qrels(path)
      topic        docid  rel
    0   301  CR93E-10279    0
    1   301   CR93E-1282    3
    2   302      FT911-1   -1
    """
    df = _read_table(path, _QRELS, ("topic", "docid"))
    return df[["topic", "docid", "rel"]].reset_index(drop=True)


def write_qrels(qrels: pd.DataFrame, path: PathLike, *, force: bool = False) -> Path:
    """Write qrels as a TREC qrels file (``topic 0 docid rel``).

    Parameters
    ----------
    qrels : DataFrame
        Columns ``topic, docid, rel`` (``rel`` integer; other columns are ignored).
    path : path
        The file to write (parent folders are created).
    force : bool
        Replace an existing file (refused by default with
        :class:`~irmodels.errors.OutputExistsError`). The file is written beside its target and
        renamed into place: never half written.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    DataFormatError
        A missing column, a non-integer ``rel``, a topic or docid that is empty or contains
        whitespace or control characters.
    OutputExistsError, OutputError
        The file exists (without ``force``), or cannot be written.

    Examples
    --------
    >>> import pandas as pd, tempfile, os, irmodels as irm
    >>> q = pd.DataFrame({"topic": ["1", "1"], "docid": ["d1", "d2"], "rel": [2, 0]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     f = irm.write_qrels(q, os.path.join(tmp, "qrels.txt"))
    ...     print(f.read_text(), end="")
    ...     irm.read_qrels(f).equals(q)
    1 0 d1 2
    1 0 d2 0
    True
    """
    require_columns(qrels, ["topic", "docid", "rel"], "qrels")
    df = qrels.reset_index(drop=True)
    _check_no_space(df, ["topic", "docid"], "qrels")
    rel = pd.to_numeric(df["rel"], errors="coerce")
    if rel.isna().any() or (rel != np.round(rel)).any():
        raise DataFormatError("qrels column 'rel' must hold integers")
    out = pd.DataFrame(
        {"topic": df["topic"].astype(str), "iter": "0", "docid": df["docid"].astype(str),
         "rel": rel.astype("int64")}
    )
    target = Path(path)
    with atomic_file(target, force=force) as tmp:
        out.to_csv(tmp, sep=" ", header=False, index=False, lineterminator="\n")
    return target


def _utf8_buffers(values: pd.Series) -> Iterator[memoryview]:
    """The UTF-8 data buffers of ``values`` as text (no per-value Python work when pyarrow can
    hold them)."""
    try:
        import pyarrow as pa

        arr = getattr(values.array, "_pa_array", None)  # pandas' pyarrow-backed str: no copy
        if not isinstance(arr, pa.ChunkedArray) or not pa.types.is_large_string(arr.type) and (
            not pa.types.is_string(arr.type)
        ):
            arr = pa.chunked_array([pa.array(values.astype(str), from_pandas=True)])
    except Exception:  # noqa: BLE001 - pyarrow absent or an exotic dtype: join in Python
        yield memoryview("\x1e".join(values.astype(str).tolist()).replace("\x1e", " ").encode())
        return
    for chunk in arr.chunks:
        buffers = chunk.buffers()
        if len(buffers) > 2 and buffers[2] is not None:
            yield memoryview(buffers[2])
        elif len(buffers) > 1 and buffers[-1] is not None:  # pragma: no cover - views
            yield memoryview("".join(map(str, chunk.to_pylist())).encode())


def refuse_control_ids(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    r"""Raise :class:`DataFormatError` when an id in ``columns`` holds a control character.

    A NUL (or any control byte) in a docid, topic or system id compares differently in C
    (trec_eval stops at a NUL) and in Python, so ids read from frames are checked the way the
    file readers check them. The scan runs over pyarrow's data buffers (memchr speed); only a
    hit is located value by value.

    >>> import pandas as pd
    >>> from irmodels.data.io import refuse_control_ids
    >>> refuse_control_ids(pd.DataFrame({"docid": ["d1", "d\x002"]}), ["docid"], "runs")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: runs column 'docid' has the id 'd\x002' with the control character U+0000 (row 1); ids may not hold control characters (a NUL often comes from a binary or UTF-16 file)
    """
    for col in columns:
        if col not in df.columns:
            continue
        values = df[col]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = pd.Series(values.cat.categories)
        if all(_first_byte_in(buf, _ANY_CONTROL_LUT) < 0 for buf in _utf8_buffers(values)):
            continue
        text = values.astype(str)
        hit = text.str.contains(r"[\x00-\x1f\x7f]", regex=True).to_numpy()
        if not hit.any():  # pragma: no cover - a control byte outside the values (a slice)
            continue
        i = int(np.flatnonzero(hit)[0])
        ch = _CONTROL_CHARS_RE.search(text.iloc[i]).group(0)  # type: ignore[union-attr]
        raise DataFormatError(
            f"{what} column {col!r} has the id {text.iloc[i]!r} with the control character "
            f"U+{ord(ch):04X} (row {i}); ids may not hold control characters (a NUL often "
            "comes from a binary or UTF-16 file)"
        )


_CONTROL_CHARS_RE = re.compile(r"[\x00-\x1f\x7f]")


def _no_leading_zeros(topic: str) -> str:
    """The id as a number would be written: no leading zeros, and no ``.0`` of a whole number
    written as a float (``"2.0"`` from a float column, ``"002"``, ``"2"`` -> ``"2"``)."""
    head, dot, tail = topic.partition(".")
    if dot and head.isdigit() and tail and set(tail) == {"0"}:
        topic = head
    stripped = topic.lstrip("0")
    return stripped if stripped and stripped[0].isdigit() else (stripped or "0")


def warn_topic_id_mismatch(
    run_topics: Iterable[object], qrels_topics: Iterable[object], *, stacklevel: int = 2
) -> list[tuple[str, str]]:
    """Warn when topic ids of the runs and of the qrels differ only by leading zeros (or a
    trailing ``.0``, as ids read into a float column are written).

    ``"051"`` and ``"51"`` (or ``"51.0"`` and ``"51"``) are different ids (trec_eval compares them as text, so such a run
    topic is never matched to its judgments and is silently skipped). irmodels does not guess:
    it keeps them apart and says so in one :class:`DataQualityWarning`. Called by
    :func:`irmodels.evaluate`, :func:`check_topics` and the ``evaluate`` command.

    Returns the (run id, qrels id) pairs found.

    Examples
    --------
    >>> import warnings
    >>> from irmodels.data.io import warn_topic_id_mismatch
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_topic_id_mismatch(["051", "52"], ["51", "52"])
    [('051', '51')]
    >>> "leading zeros" in str(w[0].message)
    True
    """
    runs = {str(t) for t in pd.unique(pd.Series(list(run_topics), dtype=object))}
    judged = {str(t) for t in pd.unique(pd.Series(list(qrels_topics), dtype=object))}
    only_runs, only_qrels = runs - judged, judged - runs
    if not only_runs or not only_qrels:
        return []
    by_key: dict[str, str] = {}
    for t in sorted(only_qrels, key=natural_key):
        by_key.setdefault(_no_leading_zeros(t), t)
    pairs = [(t, by_key[_no_leading_zeros(t)]) for t in sorted(only_runs, key=natural_key)
             if _no_leading_zeros(t) in by_key]
    if pairs:
        shown = ", ".join(f"{a!r} vs {b!r}" for a, b in pairs[:5]) + (", ..." if len(pairs) > 5 else "")
        warnings.warn(
            f"{len(pairs)} topic id(s) of the runs differ from topic ids of the qrels only by "
            f"leading zeros or a trailing .0 (run vs qrels: {shown}); they are different ids, "
            "so those run topics have no judgments and are not scored. Write the ids the same "
            "way in both files.",
            DataQualityWarning,
            stacklevel=stacklevel,
        )
    return pairs


def check_topics(runs: pd.DataFrame, qrels: pd.DataFrame) -> list[str]:
    """Warn about run topics that have no relevance judgments.

    A topic retrieved by a run but absent from the qrels has undefined measures (trec_eval
    silently skips it). This helper lists such topics in one :class:`DataQualityWarning`.

    Returns
    -------
    list of str
        The run topics absent from the qrels, in natural order (empty when all are judged).

    Examples
    --------
    >>> import pandas as pd, warnings, irmodels as irm
    >>> from irmodels.data.io import check_topics
    >>> runs = pd.DataFrame({"system": "a", "topic": ["1", "2", "10"], "docid": "d",
    ...                      "score": 1.0, "rank": 1})
    >>> qrels = pd.DataFrame({"topic": ["1"], "docid": ["d"], "rel": [1]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     check_topics(runs, qrels)
    ['2', '10']
    """
    require_columns(runs, ["topic"], "runs")
    require_columns(qrels, ["topic"], "qrels")
    warn_topic_id_mismatch(runs["topic"], qrels["topic"], stacklevel=3)
    judged = set(qrels["topic"].astype(str))
    missing = sorted(set(runs["topic"].astype(str)) - judged, key=natural_key)
    if missing:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        warnings.warn(
            f"{len(missing)} run topic(s) have no relevance judgments in the qrels: {shown}. "
            "Their measures are undefined (trec_eval skips them); check that the qrels belong "
            "to these runs, or drop those topics.",
            DataQualityWarning,
            stacklevel=2,
        )
    return missing


# --------------------------------------------------------------------------------------
# wide matrices


def read_matrix(
    path: PathLike,
    *,
    measure: str | None = None,
    collection: str | None = None,
    topic_column: str | Literal["auto"] | None = "auto",
    nan: Literal["raise", "drop"] = "raise",
    sep: str | None = None,
) -> pd.DataFrame:
    r"""Read a wide score matrix (rows = topics, columns = systems) as a long frame.

    The first non-blank line is the header (system names, quoted or not). Values are
    numbers; missing cells are written empty or as ``NA``, ``NaN``, ``N/A``, ``NULL``.

    Parameters
    ----------
    path : path
        CSV (``,``) or TSV (``\t``): chosen by extension (``.csv``, ``.tsv``/``.tab``) or,
        for other extensions, from the header line; ``sep`` overrides.
    measure, collection : str, optional
        Constant labels added as columns.
    topic_column : "auto", str or None
        ``"auto"`` (default): the first column holds topic ids when its header is ``topic``,
        ``topics``, ``qid``, ``query``, ``query_id``, ``topic_id`` (any case) or empty, or
        when data rows have one field more than the header (R's ``write.csv`` row names).
        A string names the topic column; ``None``: no topic column, topics are ``1..T``.
    nan : {"raise", "drop"}
        A missing cell raises (naming the line, topic and system) or is dropped (with a
        :class:`DataQualityWarning`; the design becomes unbalanced).
    sep : str, optional
        Field separator.

    Returns
    -------
    DataFrame
        Long frame ``[collection,] [measure,] topic, system, score``; topic and system
        categories keep the matrix's order.

    Raises
    ------
    DataFormatError
        With the file and line: a row with a different number of cells than the header, a
        non-numeric cell, a missing cell (``nan="raise"``), a system named twice in the
        header, a topic id given twice, an empty file or a header without data rows.

    Examples
    --------
    >>> import pathlib, tempfile, irmodels as irm
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ap.csv"
    >>> _ = path.write_text('"topic","sys1","sys2"\n301,0.0372,0.3471\n302,0.3806,0.6155\n')
    >>> irm.read_matrix(path, measure="AP")
      measure topic system   score
    0      AP   301   sys1  0.0372
    1      AP   301   sys2  0.3471
    2      AP   302   sys1  0.3806
    3      AP   302   sys2  0.6155
    """
    p = Path(path)
    m = parse_matrix(p, sep=sep, topic_column=topic_column, nan=nan)
    topics, systems, values = m.topics, m.systems, m.values
    wide = pd.DataFrame(values, index=pd.Index(topics, name="topic"), columns=systems)
    if nan == "drop" and np.isnan(values).any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataQualityWarning)
            out = from_wide(wide, measure=measure, collection=collection, nan="drop")
        warnings.warn(
            f"{p}: dropped {int(np.isnan(values).sum())} missing cell(s); the design is now "
            "unbalanced",
            DataQualityWarning,
            stacklevel=2,
        )
        return out
    return from_wide(wide, measure=measure, collection=collection, nan=nan)


def write_matrix(
    data: pd.DataFrame,
    path: PathLike,
    *,
    topic_column: bool = True,
    sep: str | None = None,
    force: bool = False,
) -> Path:
    """Write a long frame as a wide matrix (rows = topics, columns = systems).

    Parameters
    ----------
    data : DataFrame
        A long frame with one score per (topic, system) (see :func:`irmodels.to_wide`).
    path : path
        ``.tsv``/``.tab`` files are tab-separated, others comma-separated (``sep`` overrides).
    topic_column : bool
        Write the topic ids as a first column named ``topic`` (default).
    force : bool
        Replace an existing file (refused by default with
        :class:`~irmodels.errors.OutputExistsError`); the write is atomic.

    Examples
    --------
    >>> import pandas as pd, tempfile, os, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 1, 2, 2], "system": ["a", "b", "a", "b"],
    ...                             "score": [0.1, 0.2, 0.3, 0.4]}))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = irm.write_matrix(f, os.path.join(tmp, "m.csv"))
    ...     print(out.read_text(), end="")
    ...     irm.read_matrix(out).equals(f)
    topic,a,b
    1,0.1,0.2
    2,0.3,0.4
    True
    """
    target = Path(path)
    if target.suffix.lower() in (".parquet", ".pq"):
        raise DataFormatError(
            f"wide matrices are written as CSV or TSV, not {target.suffix!r}; use a .csv or "
            ".tsv name, or write_frame() to store the long frame as parquet"
        )
    wide = to_wide(data)
    delim = sep if sep is not None else _sep_for(target)
    with atomic_file(target, force=force) as tmp:
        wide.to_csv(tmp, sep=delim, index=topic_column, index_label="topic",
                    lineterminator="\n", na_rep="NA")
    return target


# --------------------------------------------------------------------------------------
# long frames


def _frame_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv", ".tab"):
        return "csv"
    raise DataFormatError(
        f"cannot tell the format from the extension {suffix!r}; use .csv, .tsv or .parquet",
        path=str(path),
    )


def read_frame(path: PathLike, *, topic: str = "topic", system: str = "system",
               score: str = "score") -> pd.DataFrame:
    """Read a long frame written by :func:`write_frame` (CSV/TSV or parquet by extension).

    Parquet keeps the categorical levels and their order exactly. CSV keeps the values only:
    factor levels come back in natural order (as :func:`irmodels.frame` gives them); use
    parquet for frames whose level order is not natural.

    Parameters
    ----------
    path : path
        ``.csv``, ``.tsv``/``.tab`` or ``.parquet``/``.pq`` (parquet needs pyarrow).
    topic, system, score : str
        The names of the topic, system and score columns in the file (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``; the frame
        returned has the canonical names.

    Returns
    -------
    DataFrame
        The long frame (see :func:`irmodels.frame`).

    Raises
    ------
    DataFormatError
        An unknown extension, a directory, a file that does not parse, or content that breaks
        the long-frame contract (missing or duplicate rows, non-numeric scores), with the path
        (and the line of the first offending row). A file that does not exist is a
        :class:`~irmodels.errors.MissingFileError` (also a ``FileNotFoundError``).

    Examples
    --------
    >>> import pandas as pd, tempfile, os, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": ["2", "10"], "system": ["a", "a"],
    ...                             "score": [0.5, 0.25]}))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = irm.write_frame(f, os.path.join(tmp, "scores.csv"))
    ...     irm.read_frame(path).equals(f)
    True
    """
    p = Path(path)
    if p.is_dir():
        raise DataFormatError(
            "expected a frame file (CSV/TSV or parquet), found a directory; pass a file path",
            path=str(p),
        )
    if not p.exists():
        raise missing_file(p, "frame file")
    kind = _frame_format(p)
    text: str | None = None  # the CSV/TSV text (None for parquet)
    if kind == "parquet":
        require("pyarrow", "parquet")
        if p.is_dir():
            raise DataFormatError("expected a parquet file, found a directory", path=str(p))
        with open(p, "rb") as fh:
            head = fh.read(4)
        if head != b"PAR1":
            raise DataFormatError(
                "the file is not parquet (it does not start with the parquet magic bytes "
                f"PAR1 but with {head!r}); is it a CSV file with a .parquet name? Rename it.",
                path=str(p),
            )
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataFormatError(
                f"the parquet file cannot be read ({first}); it is damaged or truncated: "
                "write it again", path=str(p)
            ) from None
    else:
        data = _read_bytes(p, "frame file")  # the BOM is removed there
        _check_utf8(data, p)
        text = data.decode("utf-8")  # decoded once: pandas parses this text, not the file again
        delim = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
        blank = _BLANK_LINES.match(text)
        header_line = 1 + len(_LINE_BREAK.findall(blank.group(0)))
        header = _FIRST_LINE.match(text, blank.end()).group(0)
        names = next(csv.reader([header], delimiter=delim), [])
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise DataFormatError(
                f"the header names the column(s) {', '.join(map(repr, twice))} more than once; "
                "each column needs its own name", path=str(p), line=header_line,
            )
        dtypes = {c: str for c in names if c in FACTOR_COLUMNS or c in (topic, system)}
        try:
            with warnings.catch_warnings():
                # index_col=False: rows with a field more than the header are an error, not
                # an index that shifts every column by one (pandas' default)
                warnings.simplefilter("error", pd.errors.ParserWarning)
                df = pd.read_csv(
                    io.StringIO(text), sep=delim, dtype=dtypes, keep_default_na=False,
                    index_col=False, na_values={score: sorted(_NA_TOKENS)}, **EXACT_FLOATS,
                )
        except pd.errors.ParserWarning:
            raise DataFormatError(
                f"the rows have more fields than the header's {len(names)} columns "
                f"({', '.join(names)}); every row needs one value per column",
                path=str(p), line=header_line + 1,
            ) from None
        except (ValueError, pd.errors.ParserError) as exc:
            m = re.search(r"in line (\d+), saw (\d+)", str(exc))
            if m is not None:
                raise DataFormatError(
                    f"the row has {m.group(2)} fields but the header has {len(names)} "
                    f"({', '.join(names)}); every row needs one value per column",
                    path=str(p), line=int(m.group(1)),
                ) from None
            raise DataFormatError(f"cannot parse the frame file: {exc}", path=str(p)) from None
        for c in dtypes:  # labels as read_matrix reads them: without surrounding spaces
            df[c] = df[c].str.strip()
    try:
        from irmodels.data._columns import user_frame

        # a missing column is named with a "did you mean" (or irm.from_wide for a matrix)
        named, _ = user_frame(df, topic=topic, system=system, score=score, what="",
                              owner="the file")
        return frame(named) if named is df else named
    except DataFormatError as exc:
        msg, line = str(exc), None
        if text is not None:
            # the file line of each row, when rows and non-blank lines correspond one to one
            # (no line break inside a quoted field)
            rows = [i for i, t in enumerate(text.splitlines()[header_line:],
                                             start=header_line + 1) if t.strip()]
            lines = rows if len(rows) == len(df) else None
            m = re.search(r" \(row (\d+)\)", msg)
            if m is not None:
                if lines is not None and int(m.group(1)) < len(lines):
                    msg, line = msg.replace(m.group(0), ""), lines[int(m.group(1))]
            elif lines is not None:
                msg, line = _frame_error_line(df.rename(columns={score: "score"}), msg, lines)
        raise DataFormatError(msg, path=str(p), line=line) from None


def _frame_error_line(df: pd.DataFrame, msg: str, lines: list[int]) -> tuple[str, int | None]:
    """The message of :func:`frame`'s error about ``df`` (read from a file whose row ``i`` is on
    line ``lines[i]``) and the line of the first offending row: a missing score, or the first
    row that repeats the key of an earlier one (whose line the message then names)."""
    if "are missing (NaN)" in msg and "score" in df.columns:
        bad = np.flatnonzero(pd.to_numeric(df["score"], errors="coerce").isna().to_numpy())
        if len(bad):
            return msg, lines[int(bad[0])]
    if "rows repeat the same" in msg:
        key = [c for c in FACTOR_COLUMNS if c in df.columns]
        if key:
            labels = df[key].astype(str)
            dup = np.flatnonzero(labels.duplicated(keep="first").to_numpy())
            if len(dup):
                row = int(dup[0])
                same = (labels == labels.iloc[row]).all(axis=1).to_numpy()
                first = int(np.flatnonzero(same)[0])
                return f"{msg} This line repeats the key of line {lines[first]}.", lines[row]
    return msg, None


def write_frame(data: pd.DataFrame, path: PathLike, *, force: bool = False) -> Path:
    """Write a long frame as CSV/TSV or parquet (by extension).

    Parquet (``.parquet``/``.pq``) needs pyarrow (``pip install 'irmodels[parquet]'``) and
    keeps categorical levels exactly. Scores are written with full precision.

    Parameters
    ----------
    data : DataFrame
        A long frame (validated with :func:`irmodels.frame` first).
    path : path
        ``.csv``, ``.tsv``/``.tab`` or ``.parquet``/``.pq``; parent folders are created.
    force : bool
        Replace an existing file (refused by default with
        :class:`~irmodels.errors.OutputExistsError`). The file is written beside its target
        and renamed into place: an interrupted or failed write (full disk) leaves the old
        file as it was and no partial file.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import pandas as pd, tempfile, os, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 2], "system": ["z", "z"], "score": [0.1, 0.2]}))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     print(irm.write_frame(f, os.path.join(tmp, "f.csv")).read_text(), end="")
    topic,system,score
    1,z,0.1
    2,z,0.2
    """
    target = Path(path)
    kind = _frame_format(target)
    df = frame(data)
    if kind == "parquet":
        require("pyarrow", "parquet")
    with atomic_file(target, force=force) as tmp:
        if kind == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            delim = "\t" if target.suffix.lower() in (".tsv", ".tab") else ","
            df.to_csv(tmp, sep=delim, index=False, lineterminator="\n")
    return target
