"""Wide matrices and long frames on disk: :func:`read_matrix`, :func:`write_matrix`,
:func:`read_frame`, :func:`write_frame`; re-exported by :mod:`irmodels.data.io`.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path
from typing import Literal, cast

import numpy as np
import pandas as pd

from irmodels._safeio import atomic_file
from irmodels.data._columns import user_frame
from irmodels.data._io_tables import EXACT_FLOATS, PathLike
from irmodels.data._lines import (
    BLANK_LINES,
    FIRST_LINE,
    LINE_BREAK,
    NA_TOKENS,
    check_utf8,
    missing_file,
    parse_matrix,
    read_bytes,
    sep_for,
)
from irmodels.data.frame import FACTOR_COLUMNS, frame, from_wide, to_wide
from irmodels.errors import DataFormatError, DataQualityWarning, require

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
        # the dropped cells are reported here, naming the file
        out = from_wide(wide, measure=measure, collection=collection, nan="drop", warn=False)
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
    delim = sep if sep is not None else sep_for(target)
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
        data = read_bytes(p, "frame file")  # the BOM is removed there
        check_utf8(data, p)
        text = data.decode("utf-8")  # decoded once: pandas parses this text, not the file again
        delim = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
        # both patterns match the empty string, so match() never returns None here
        blank = cast(re.Match[str], BLANK_LINES.match(text))
        header_line = 1 + len(LINE_BREAK.findall(blank.group(0)))
        header = cast(re.Match[str], FIRST_LINE.match(text, blank.end())).group(0)
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
                    index_col=False, na_values={score: sorted(NA_TOKENS)}, **EXACT_FLOATS,
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
