"""TREC runs and qrels: :func:`read_run`, :func:`read_runs`, :func:`write_run`,
:func:`read_qrels`, :func:`write_qrels`, and the checks of their ids
(:func:`refuse_control_ids`, :func:`warn_topic_id_mismatch`, :func:`check_topics`); re-exported
by :mod:`irmodels.data.io`, whose docstring states the whitespace rules.

"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from irmodels._safeio import atomic_file, check_target, output_error
from irmodels.data._io_tables import QRELS, RUN, PathLike, files_in, read_table
from irmodels.data._lines import ANY_CONTROL_LUT, CONTROL, first_byte_in
from irmodels.data.frame import natural_key, require_columns
from irmodels.errors import DataFormatError, DataQualityWarning

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
    df = read_table(path, RUN, key, single)
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
    files = files_in(paths_or_dir, "run file")
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
            CONTROL.search(name)
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
    df = read_table(path, QRELS, ("topic", "docid"))
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
        # here, not at import: pyarrow is optional (not a dependency of irmodels)
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
        if all(first_byte_in(buf, ANY_CONTROL_LUT) < 0 for buf in _utf8_buffers(values)):
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
