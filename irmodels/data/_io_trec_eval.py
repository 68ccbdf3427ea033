"""Reading ``trec_eval -q`` output (:func:`read_trec_eval`); re-exported by
:mod:`irmodels.data.io`, whose docstring states the whitespace rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, overload

import pandas as pd

from irmodels.data._io_tables import PathLike, files_in
from irmodels.data._lines import FLOAT, iter_lines, read_bytes, shorten, split_fields
from irmodels.data.frame import frame
from irmodels.errors import DataFormatError

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
    files = files_in(path_or_dir, "trec_eval output file")
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
    data = read_bytes(path, "trec_eval output file")
    measures: list[str] = []
    topics: list[str] = []
    scores: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    s_measure: list[str] = []
    s_topic: list[str] = []
    s_value: list[str] = []
    runid = None
    layout = "measure topic value, as printed by trec_eval -q"
    for line, text in iter_lines(data, path):
        toks = split_fields(text)
        if not toks:
            continue
        if len(toks) != 3:
            hint = "the line looks truncated" if len(toks) < 3 else "there are extra fields"
            raise DataFormatError(
                f"expected 3 fields ({layout}), found {len(toks)} in {shorten(text)}; {hint}",
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
        if not FLOAT.fullmatch(value):
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
