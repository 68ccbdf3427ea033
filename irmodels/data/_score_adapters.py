"""Per-topic scores from other tools (:func:`scores_input`, :func:`adapt_scores`, the path of
:func:`irmodels.frame`) and the duck-typing helpers the run and qrels adapters share; the forms
read are listed in :mod:`irmodels.data.adapters`, which re-exports these names. Apart from
:mod:`irmodels.data.adapters` so that ``irm.frame`` reaches it without the readers of
:mod:`irmodels.data.io` (which build long frames: the import cycle frame -> adapters -> io ->
frame).
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irmodels.errors import DataFormatError, UsageError

_SCORE_FORMS = (
    "a pandas DataFrame (topic, system, score[, measure] or columns you name), a PyTerrier "
    "perquery frame (name, qid, measure, value), a dict {run name: ir_measures results}, "
    "pytrec_eval's evaluate(run) output {query id: {measure: value}} (with system='run name') or "
    "a dict {run name: that}, ranx Run objects with per-query scores, a polars DataFrame or a "
    "file-like CSV/TSV"
)


def describe(obj: object) -> str:
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if isinstance(obj, pd.DataFrame):
        return f"a DataFrame with columns {list(map(str, obj.columns))[:10]}"
    fields = getattr(obj, "_fields", None)
    if fields:
        return f"{kind} with fields {list(fields)}"
    return kind


def is_polars(obj: object) -> bool:
    return type(obj).__module__.split(".")[0] == "polars" and hasattr(obj, "to_pandas")


def has_fields(obj: object, *names: str) -> bool:
    """A record with these fields (a namedtuple such as ir_measures' ``ScoredDoc``); a frame is
    not one, though its columns read as attributes."""
    return not isinstance(obj, (pd.DataFrame, pd.Series)) and all(hasattr(obj, n) for n in names)


def is_ranx_run(obj: object) -> bool:
    return hasattr(obj, "to_dict") and hasattr(obj, "name") and hasattr(obj, "scores") and (
        type(obj).__name__ == "Run")


def is_ranx_qrels(obj: object) -> bool:
    return hasattr(obj, "to_dict") and type(obj).__name__ == "Qrels"


def ranx_names(runs: list[Any], given: str | None = None) -> list[str]:
    """The system names of ranx Runs: ``run.name``, each distinct. A run without a name (ranx's
    default) or a name two runs share would merge their rankings or scores into one system, so
    either is refused with the way out. ``given`` names a single run (``irm.frame(run,
    system=...)``)."""
    if given is not None and len(runs) == 1:
        return [given]
    names = []
    for i, run in enumerate(runs):
        name = run.name
        if name is None or str(name) == "":
            how = ("set run.name = '...' on each, or pass a dict {name: run}"
                   if len(runs) > 1 else "set run.name = '...', or pass a dict {name: run}")
            raise DataFormatError(
                f"ranx Run {i + 1} of {len(runs)} has no name (run.name is {name!r}), and the name is "
                f"what tells systems apart; {how}.")
        names.append(str(name))
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise DataFormatError(
                f"ranx Runs {seen[name] + 1} and {i + 1} (of {len(runs)}) are both named {name!r}; their rankings would "
                "become one system. Give each run its own run.name, or pass a dict {name: run}.")
        seen[name] = i
    return names


def nesting(obj: object) -> int:
    """How deep the dicts go along their first non-empty entries: 0 for a non-mapping, 1 for
    ``{k: v}``, 2 for ``{k: {k2: v}}`` (a pytrec_eval run or qrels, or its per-run output), 3 for
    ``{k: {k2: {k3: v}}}`` (a dict of those)."""
    depth = 0
    while isinstance(obj, Mapping) and obj:
        depth += 1
        obj = next((v for v in obj.values() if not (isinstance(v, Mapping) and not v)),
                   next(iter(obj.values())))
    return depth + (isinstance(obj, Mapping))


def _is_ir_measures_measure(obj: object) -> bool:
    return type(obj).__module__.split(".")[0] == "ir_measures"


def _refuse_means(data: Mapping[Any, Any]) -> None:
    """A dict of numbers (``ir_measures.calc_aggregate``, ranx's mean scores) or of number
    arrays (``ranx.evaluate(..., return_mean=False)``) has no query ids: refuse it by name."""
    values = list(data.values())
    if values and all(isinstance(v, np.ndarray) for v in values):
        raise DataFormatError(
            f"irm.frame got a dict of arrays ({', '.join(map(str, list(data)[:3]))}): per-query "
            "scores without query ids, as ranx.evaluate(..., return_mean=False) returns them. "
            "Pass the ranx Run itself (its run.scores keeps the query ids), or its runs and qrels "
            "to irm.evaluate.")
    if values and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                      for v in values):
        origin = ("ir_measures.calc_aggregate results" if any(map(_is_ir_measures_measure, data))
                  else "one number per key")
        raise DataFormatError(
            f"irm.frame got {origin} ({', '.join(f'{k}: {v!r}' for k, v in list(data.items())[:3])}"
            "): means over topics, not per-topic scores. Pass per-topic scores: "
            "ir_measures.iter_calc(...) results as {run name: results}, or pytrec_eval's "
            "evaluate(run) output with system='run name'.")


def read_text(obj: Any) -> str:
    text = obj.read()
    if isinstance(text, bytes):
        text = _decode_utf8(text)
    if not isinstance(text, str):
        raise DataFormatError(f"the file-like object's read() returned {type(text).__name__}; "
                              "expected text or bytes.")
    return text


def _decode_utf8(raw: bytes) -> str:
    """The bytes of a file-like object as text: UTF-8 (a byte-order mark is dropped), or a
    :class:`DataFormatError` naming the first byte that is not, as the file readers do."""
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        guess = "UTF-16?" if raw[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else (
            "Latin-1 or Windows-1252?")
        raise DataFormatError(
            f"the file-like object's bytes are not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
            f"line {line}, column {column}; {guess}); re-save the file as UTF-8, or decode it "
            "yourself and pass the text (io.StringIO).", line=line,
        ) from None


def via_file(text: str, reader: Any, what: str) -> pd.DataFrame:
    """Read TREC text with a path-based reader; errors name "the file-like <what>"."""
    with tempfile.TemporaryDirectory(prefix="irmodels-") as tmp:
        p = Path(tmp) / what
        p.write_text(text, encoding="utf-8")
        try:
            return reader(p)
        except DataFormatError as exc:
            raise DataFormatError(str(exc).replace(str(p), f"the file-like {what}")) from None


def _table_from_text(text: str) -> pd.DataFrame:
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if not first:
        raise DataFormatError("the file-like object is empty; nothing to read.")
    sep = "\t" if ("\t" in first and "," not in first) else ","
    kind = "TSV" if sep == "\t" else "CSV"
    try:
        with warnings.catch_warnings(record=True) as caught:  # rows longer than the header
            warnings.simplefilter("always", pd.errors.ParserWarning)
            # index_col=False: a row with one field more than the header must not turn the
            # first column into the index (every column would shift by one)
            table = pd.read_csv(io.StringIO(text), sep=sep, index_col=False)
    except (pd.errors.ParserError, csv.Error) as exc:
        message = str(exc).strip()
        if "EOF inside string" not in message:  # a row of another width: say which line
            _check_field_counts(text, sep, kind)
        hint = " (a quote that is never closed)" if "EOF inside string" in message else ""
        raise DataFormatError(
            f"the file-like object is not a readable {kind} table{hint}: {message}"
        ) from None
    long_rows = False
    for w in caught:
        if issubclass(w.category, pd.errors.ParserWarning):
            long_rows = True
        else:  # anything else pandas said is the caller's to see
            warnings.warn(w.message, w.category, stacklevel=2)
    # pandas drops the extra fields of long rows (with a ParserWarning) and pads short rows
    # with NaN, so the rows are counted one by one only when one of the two may have happened
    if long_rows or (table.shape[1] and table.iloc[:, -1].isna().any()):
        _check_field_counts(text, sep, kind)
    return table


def _check_field_counts(text: str, sep: str, kind: str) -> None:
    """Every row has as many fields as the header (pandas would pad a short row with NaN and
    drop the extra fields of a long one)."""
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    header: list[str] | None = None
    for fields in reader:
        if not fields:  # a blank line, skipped as pandas skips it
            continue
        if header is None:
            header = fields
        elif len(fields) != len(header):
            raise DataFormatError(
                f"the file-like {kind} text, line {reader.line_num}: the row has {len(fields)} "
                f"field(s) but the header has {len(header)} ({', '.join(header)}); every row "
                "needs one value per column (a stray separator, or a missing value?)",
                line=reader.line_num,
            )


def _number(value: object, where: str) -> float:
    """A score as a float, or a :class:`DataFormatError` naming ``where`` it comes from."""
    if value is None or isinstance(value, (bool, np.bool_, complex, np.complexfloating)):
        raise DataFormatError(f"{where} has the value {value!r}; a score must be a number.")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise DataFormatError(f"{where} has the value {value!r}; a score must be a number.") \
            from None


def _label(value: object, what: str, where: str) -> str:
    """A topic / measure label as text; None or NaN is refused (it would become "None")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise DataFormatError(f"{where} has no {what} ({value!r}); every result needs one.")
    return str(value)


def _metric_rows(results: Iterable[Any], system: str) -> list[tuple[str, str, str, float]]:
    rows = []
    for i, r in enumerate(results):
        if not has_fields(r, "query_id", "measure", "value"):
            raise DataFormatError(
                f"run {system!r}: expected ir_measures Metric(query_id, measure, value) items; "
                f"found {describe(r)}."
            )
        where = f"run {system!r}, result {i} ({r!r})"
        rows.append((_label(r.query_id, "query_id", where), system,
                     _label(r.measure, "measure", where), _number(r.value, where)))
    return rows


def _is_metric_iterable(obj: object) -> bool:
    if isinstance(obj, (pd.DataFrame, str, bytes, Mapping)) or not isinstance(obj, Iterable):
        return False
    return True


_SCORE_COLUMNS = ["topic", "system", "measure", "score"]


def _pytrec_rows(per_query: Mapping[Any, Any], system: str,
                 where: str) -> list[tuple[str, str, str, float]]:
    """Rows of pytrec_eval's ``evaluate(run)`` output ``{qid: {measure: value}}``."""
    rows = []
    for q, by_measure in per_query.items():
        if not isinstance(by_measure, Mapping):
            raise DataFormatError(
                f"{where}: query {q!r} holds {describe(by_measure)}; expected {{measure: value}} "
                "for every query, as pytrec_eval's RelevanceEvaluator(...).evaluate(run) gives.")
        at = f"{where}, query {q!r}"
        topic = _label(q, "query id", at)
        rows += [(topic, system, _label(m, "measure", at), _number(v, f"{at}, measure {m!r}"))
                 for m, v in by_measure.items()]
    return rows


def _refuse_system_for_many(system: str | None, n: int, what: str, names: list[str]) -> None:
    if system is not None:
        raise UsageError(
            f"system={system!r} names a single run, but irm.frame got {n} {what} that carry their "
            f"own names ({', '.join(map(repr, names[:3]))}{', ...' if n > 3 else ''}); drop "
            "system= (the names become the system column).")


def scores_input(data: object, *, system: str | None = None) -> pd.DataFrame | object:
    """Per-topic scores from another tool as a frame with ``topic, system, score[, measure]``
    columns; a pandas frame in any other layout is returned unchanged (``irm.frame`` then reads
    the columns it is told). ``system`` names a single run that carries no name of its own
    (pytrec_eval's ``evaluate(run)`` output, a list of ir_measures results, a ranx Run); it is
    required there and refused for several runs.

    Examples
    --------
    A PyTerrier ``pt.Experiment(..., perquery=True)`` frame:

    >>> import pandas as pd
    >>> pt = pd.DataFrame({"name": ["BM25", "BM25", "DPH", "DPH"], "qid": ["1", "2", "1", "2"],
    ...                    "measure": ["map"] * 4, "value": [0.5, 0.25, 0.75, 1.0]})
    >>> scores_input(pt).columns.tolist()
    ['topic', 'system', 'measure', 'score']

    ir_measures results, one entry per run:

    >>> from collections import namedtuple
    >>> Metric = namedtuple("Metric", "query_id measure value")
    >>> scores_input({"bm25": [Metric("1", "AP", 0.5), Metric("2", "AP", 0.2)]}).values.tolist()
    [['1', 'bm25', 'AP', 0.5], ['2', 'bm25', 'AP', 0.2]]

    pytrec_eval's ``RelevanceEvaluator(qrels, measures).evaluate(run)`` output for one run
    (named by ``system``), or a dict of them by run name:

    >>> one = {"1": {"map": 0.5, "P_10": 0.3}, "2": {"map": 0.2, "P_10": 0.1}}
    >>> scores_input(one, system="bm25").values.tolist()[:2]
    [['1', 'bm25', 'map', 0.5], ['1', 'bm25', 'P_10', 0.3]]
    >>> len(scores_input({"bm25": one, "dph": one}))
    8
    """
    return adapt_scores(data, system)[0]


def adapt_scores(data: object, system: str | None = None) -> tuple[pd.DataFrame | object, bool]:
    """:func:`scores_input`, and whether ``system`` was taken as the name of the single run
    (``irm.frame`` then reads the ``system`` column it made, not a column named ``system``)."""
    if isinstance(data, pd.DataFrame):
        cols = set(map(str, data.columns))
        if {"name", "qid", "measure", "value"} <= cols and "topic" not in cols:
            out = data.rename(columns={"qid": "topic", "name": "system", "value": "score"})
            return out[_SCORE_COLUMNS], False
        return data, False
    if is_polars(data):
        return adapt_scores(data.to_pandas())  # type: ignore[attr-defined]
    if hasattr(data, "read"):
        return adapt_scores(_table_from_text(read_text(data)))
    if is_ranx_run(data):
        data = [data]
    if isinstance(data, (list, tuple)) and data and all(is_ranx_run(r) for r in data):
        if len(data) > 1:
            _refuse_system_for_many(system, len(data), "ranx Runs",
                                    [str(r.name) for r in data])
        names = ranx_names(list(data), system)
        rows = []
        for run, name in zip(data, names):
            per_query = {k: v for k, v in dict(run.scores).items() if isinstance(v, Mapping)}
            if not per_query:
                raise DataFormatError(
                    f"ranx Run {name!r} holds no per-query scores (run.scores has "
                    f"{sorted(dict(run.scores))[:5] or 'nothing'}); evaluate it with "
                    "ranx.evaluate(qrels, run, metrics, return_mean=False) first, or pass the "
                    "run and its qrels to irm.evaluate."
                )
            for metric, by_q in per_query.items():
                rows += [(_label(q, "query id", f"ranx Run {name!r}, {metric}"), name,
                          str(metric), _number(v, f"ranx Run {name!r}, {metric}, query {q!r}"))
                         for q, v in by_q.items()]
        return pd.DataFrame(rows, columns=_SCORE_COLUMNS), system is not None
    if isinstance(data, Mapping) and data:
        depth = nesting(data)
        if depth == 1:
            _refuse_means(data)
        values = list(data.values())
        names = [str(k) for k in data]
        if all(_is_metric_iterable(v) for v in values):  # {run: ir_measures results}
            _refuse_system_for_many(system, len(data), "runs (a dict)", names)
            rows = []
            for name, results in data.items():
                rows += _metric_rows(results, str(name))
            return pd.DataFrame(rows, columns=_SCORE_COLUMNS), False
        if depth == 2:  # pytrec_eval's evaluate(run): {qid: {measure: value}}, one run
            inner = [k for v in values if isinstance(v, Mapping) for k in v]
            if any(map(_is_ir_measures_measure, inner)):
                raise DataFormatError(
                    "irm.frame got ir_measures.calc_aggregate results by run ({run: {measure: "
                    "mean}}): means over topics, not per-topic scores. Pass "
                    "{run name: ir_measures.iter_calc(...)} instead.")
            if system is None:
                raise DataFormatError(
                    f"irm.frame got one run's per-query scores {{query id: {{measure: value}}}} "
                    f"(pytrec_eval's evaluate(run) output; {len(data)} queries, e.g. "
                    f"{names[0]!r}) but no run name; name it with irm.frame(scores, "
                    "system='bm25'), or pass a dict {run name: scores} for several runs. (If the "
                    "outer keys are run names and the values means over topics: irm.frame needs "
                    "per-topic scores.)")
            rows = _pytrec_rows(data, system, f"run {system!r}")
            return pd.DataFrame(rows, columns=_SCORE_COLUMNS), True
        if depth == 3:  # {run name: pytrec_eval evaluate(run) output}
            _refuse_system_for_many(system, len(data), "runs (a dict)", names)
            rows = []
            for name, per_query in data.items():
                if not isinstance(per_query, Mapping):
                    raise DataFormatError(
                        f"run {name!r} is {describe(per_query)}; in a dict of pytrec_eval "
                        "outputs every run needs {query id: {measure: value}}.")
                rows += _pytrec_rows(per_query, str(name), f"run {name!r}")
            return pd.DataFrame(rows, columns=_SCORE_COLUMNS), False
    if _is_metric_iterable(data):
        items = list(data)  # type: ignore[call-overload]
        if items and all(has_fields(r, "query_id", "measure") for r in items[:5]):
            if system is None:
                raise DataFormatError(
                    "these ir_measures results carry no run name; name the run with "
                    "irm.frame(results, system='bm25'), or pass a dict {run name: results} "
                    "(e.g. irm.frame({'bm25': list(ir_measures.iter_calc(...))})).")
            return pd.DataFrame(_metric_rows(items, system), columns=_SCORE_COLUMNS), True
        raise DataFormatError(
            f"expected a pandas DataFrame, got {type(data).__name__} (a sequence of "
            f"{describe(items[0]) if items else 'nothing'}, not per-topic scores); irm.frame "
            f"reads {_SCORE_FORMS}."
        )
    raise DataFormatError(f"expected a pandas DataFrame, got {type(data).__name__} "
                          f"(irm.frame got {describe(data)}); it reads {_SCORE_FORMS}.")
