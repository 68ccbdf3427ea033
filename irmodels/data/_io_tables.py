"""The table machinery shared by the readers of :mod:`irmodels.data.io`: the whitespace
formats' field layouts, pandas' (and pyarrow's) fast parse with the line-by-line fallback that
locates the first problem, and the listing of a directory of files.
"""

from __future__ import annotations

import csv
import io
import math
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from irmodels.data._lines import (
    FLOAT,
    INT,
    NOT_BLANK,
    iter_lines,
    read_bytes,
    shorten,
    split_fields,
)
from irmodels.data.frame import natural_key
from irmodels.errors import DataFormatError

PathLike = str | os.PathLike


# --------------------------------------------------------------------------------------
# shared line machinery


@dataclass(frozen=True)
class _Format:
    what: str  # "run file"
    fields: tuple[str, ...]
    kinds: tuple[str, ...]  # "str" | "int" | "float" per field
    layout: str  # "topic Q0 docid rank score tag"


RUN = _Format(
    "run file",
    ("topic", "q0", "docid", "rank", "score", "tag"),
    ("str", "str", "str", "int", "float", "str"),
    "topic Q0 docid rank score tag",
)
QRELS = _Format(
    "qrels file",
    ("topic", "iter", "docid", "rel"),
    ("str", "str", "str", "int"),
    "topic iteration docid relevance",
)


def _count_error(fmt: _Format, toks: list[str], text: str, path: PathLike, line: int) -> None:
    n = len(fmt.fields)
    hint = "the line looks truncated" if len(toks) < n else "there are extra fields"
    raise DataFormatError(
        f"expected {n} fields ({fmt.layout}), found {len(toks)} in {shorten(text)}; {hint}. "
        f"Each line of a {fmt.what} must have exactly {n} whitespace-separated fields.",
        path=str(path),
        line=line,
    )


def _convert(kind: str, tok: str, name: str, fmt: _Format, path: PathLike, line: int):
    if kind == "int":
        # integers, also in float notation when integral ("3.0", "1e3"), as pandas reads them
        if INT.fullmatch(tok) and "." not in tok:
            value = int(tok)
        elif FLOAT.fullmatch(tok) and float(tok).is_integer():
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
        if not FLOAT.fullmatch(tok):
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
    for line, text in iter_lines(data, path, first_line=first_line):
        toks = split_fields(text)
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
        # here, not at import: pyarrow is optional (not a dependency of irmodels)
        import pyarrow as pa
        import pyarrow.csv as pacsv  # optional, as above
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
    for line, text in iter_lines(data, ""):
        if text.strip(" \t\r"):
            seen += 1
            if seen == row:
                return line
    return line  # pragma: no cover


def read_table(
    path: PathLike, fmt: _Format, key: tuple[str, ...], single: str | None = None
) -> pd.DataFrame:
    """Parse and validate chunk by chunk: memory stays bounded by the data (a compact typed
    table), whatever line holds an error; the first malformed line is reported with its
    number."""
    data = read_bytes(path, fmt.what)
    parts: list[pd.DataFrame] = []
    for first_line, chunk in _chunks(data):
        part = _fast_table(chunk, fmt) if NOT_BLANK.search(chunk) else None
        if part is None:
            if NOT_BLANK.search(chunk) is None:
                continue
            part = _slow_table(chunk, path, fmt, (), None, first_line=first_line)
        parts.append(part.drop(columns=[f for f in ("q0", "iter") if f in part.columns]))
    if not parts:  # pragma: no cover - blank files are caught in read_bytes
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


def files_in(path_or_dir: PathLike | Iterable[PathLike], what: str) -> list[Path]:
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


# read_csv parses decimal numbers exactly (round trip) by default from pandas 3.1 on, which
# deprecates the option; before, the default "high" precision can be 1 ulp off
EXACT_FLOATS: dict[str, str] = (
    {} if tuple(int(x) for x in pd.__version__.split(".")[:2]) >= (3, 1)
    else {"float_precision": "round_trip"}
)
