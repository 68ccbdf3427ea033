"""Inputs from the tools researchers already use, recognised by shape (duck typing).

Nothing here imports those tools: an object is recognised by its columns, fields or methods, so
irmodels keeps no dependency on them. :func:`irmodels.frame` passes its input through
:func:`scores_input` and :func:`irmodels.evaluate` its runs and qrels through :func:`runs_input`
and :func:`qrels_input`; a plain pandas frame in irmodels' own layout passes unchanged.

Per-topic scores (``irm.frame``):

- a PyTerrier ``pt.Experiment(..., perquery=True)`` frame: columns ``name, qid, measure, value``;
- ir_measures results (``ir_measures.iter_calc``): ``Metric(query_id, measure, value)`` tuples,
  as a dict ``{run name: results}``, or one run's with ``system=`` (a bare list has no run name:
  without ``system=`` it is refused with the way out);
- pytrec_eval's ``RelevanceEvaluator(...).evaluate(run)`` output ``{qid: {measure: value}}``
  (one run: ``system=`` names it) and a dict ``{run name: that}``;
- ranx ``Run`` objects evaluated per query (``ranx.evaluate(qrels, run, metrics,
  return_mean=False)`` fills ``run.scores``), one or a list, each with its own ``run.name``;
- a polars DataFrame (``to_pandas()``), and a file-like object (CSV or TSV text with a header).

Runs and qrels (``irm.evaluate``):

- ranx ``Run`` / ``Qrels`` (``to_dict()``: ``{qid: {docid: score}}``); several Runs need
  distinct names (``run.name`` or a dict ``{name: run}``): they are never merged;
- the dicts pytrec_eval and ir_measures read: qrels ``{qid: {docid: grade}}``, a run
  ``{qid: {docid: score}}`` and a dict ``{name: run}``;
- ir_datasets / ir_measures qrels: ``(query_id, doc_id, relevance[, iteration])`` tuples or a
  frame with those columns; ir_measures ``ScoredDoc(query_id, doc_id, score)`` tuples or a
  ``query_id, doc_id, score`` frame as a run (alone, or in a dict name -> run);
- a PyTerrier result frame (``qid, docno, score[, rank, name, docid, query]``: ``docno`` is the
  document id); polars frames; file-like TREC run / qrels text.

A single run without a name is the system ``run`` in ``irm.evaluate``.

Anything else is refused by a :class:`~irmodels.errors.DataFormatError` that names what was
seen and the forms understood.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pandas as pd

from irmodels.data._score_adapters import (
    describe,
    has_fields,
    is_polars,
    is_ranx_qrels,
    is_ranx_run,
    nesting,
    ranx_names,
    read_text,
    scores_input,
    via_file,
)
from irmodels.data.io import read_qrels, read_run
from irmodels.errors import DataFormatError

__all__ = ["qrels_input", "runs_input", "scores_input"]


def _nested_to_frame(nested: Mapping[Any, Mapping[Any, Any]], value: str,
                     what: str = "") -> pd.DataFrame:
    """``{qid: {docid: value}}`` (ranx's ``to_dict()``, pytrec_eval's and ir_measures' dicts)
    as ``topic, docid, <value>``."""
    for q, docs in nested.items():
        if not isinstance(docs, Mapping):
            raise DataFormatError(
                f"{what or 'the dict'}: query {q!r} holds {describe(docs)}; expected "
                f"{{doc id: {value}}} for every query ({{query id: {{doc id: {value}}}}}, as "
                "pytrec_eval and ir_measures read them).")
    rows = [(str(q), str(d), v) for q, docs in nested.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=["topic", "docid", value])


def _tuples_frame(items: list[Any], fields: tuple[str, ...], names: list[str]) -> pd.DataFrame:
    return pd.DataFrame([tuple(getattr(r, f) for f in fields) for r in items], columns=names)


_QRELS_FORMS = (
    "irm.evaluate reads qrels as a DataFrame (topic, docid, rel; or ir_measures' query_id, "
    "doc_id, relevance; or PyTerrier's qid, docno, label), ir_datasets / ir_measures "
    "Qrel(query_id, doc_id, relevance) tuples, a dict {query id: {doc id: grade}} (pytrec_eval), "
    "a ranx Qrels, a polars frame or a file-like TREC qrels text.")


def qrels_input(qrels: object) -> object:
    """Qrels from another tool as ``topic, docid, rel``; anything else unchanged.

    >>> from collections import namedtuple
    >>> Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
    >>> qrels_input([Qrel("1", "d1", 2, "0"), Qrel("1", "d2", 0, "0")]).values.tolist()
    [['1', 'd1', 2], ['1', 'd2', 0]]

    pytrec_eval's (and ir_measures') qrels dict ``{query id: {doc id: grade}}``:

    >>> qrels_input({"1": {"d1": 2, "d2": 0}}).values.tolist()
    [['1', 'd1', 2], ['1', 'd2', 0]]
    """
    if isinstance(qrels, pd.DataFrame):
        cols = set(map(str, qrels.columns))
        if {"qid", "docno", "label"} <= cols and "topic" not in cols:  # PyTerrier qrels
            return qrels.rename(columns={"qid": "topic", "docno": "docid", "label": "rel"})
        if {"query_id", "doc_id", "relevance"} <= cols and "topic" not in cols:
            return qrels.rename(columns={"query_id": "topic", "doc_id": "docid",
                                         "relevance": "rel"})
        return qrels
    if is_polars(qrels):
        return qrels_input(qrels.to_pandas())  # type: ignore[attr-defined]
    if is_ranx_qrels(qrels):
        return _nested_to_frame(qrels.to_dict(), "rel")  # type: ignore[attr-defined]
    if hasattr(qrels, "read"):
        return via_file(read_text(qrels), read_qrels, "qrels")
    if isinstance(qrels, Mapping):  # pytrec_eval / ir_measures dict {qid: {docid: grade}}
        if nesting(qrels) == 2:
            return _nested_to_frame(qrels, "rel", "the qrels dict")
        raise DataFormatError(
            f"qrels given as a dict {nesting(qrels)} level(s) deep (e.g. key "
            f"{next(iter(qrels), None)!r}); a qrels dict is {{query id: {{doc id: grade}}}}, as "
            f"pytrec_eval and ir_measures read it. {_QRELS_FORMS}")
    if hasattr(qrels, "qrels_iter"):  # an ir_datasets dataset
        qrels = qrels.qrels_iter()  # type: ignore[attr-defined]
    if isinstance(qrels, Iterable) and not isinstance(qrels, (str, bytes, Mapping)):
        items = list(qrels)
        if items and all(has_fields(r, "query_id", "doc_id", "relevance") for r in items):
            return _tuples_frame(items, ("query_id", "doc_id", "relevance"),
                                 ["topic", "docid", "rel"])
        raise DataFormatError(
            f"qrels given as a sequence of {describe(items[0]) if items else 'nothing'}; "
            f"{_QRELS_FORMS}")
    return qrels


_RUN_COLUMNS = ["system", "topic", "docid", "score"]


def _run_frame(run: object, name: str | None = None) -> pd.DataFrame | None:
    """One run as ``system, topic, docid, score``, or None when not recognised."""
    if is_polars(run):
        run = run.to_pandas()  # type: ignore[attr-defined]
    if isinstance(run, pd.DataFrame):
        cols = set(map(str, run.columns))
        if {"qid", "docno", "score"} <= cols and "topic" not in cols:  # PyTerrier results
            # PyTerrier's docid is the index's internal number; docno is the document's id, the
            # one qrels use (kept as two columns named docid, every score would be refused)
            out = run.drop(columns=["docid"] if "docid" in cols else [])
            out = out.rename(columns={"qid": "topic", "docno": "docid"})
            if "name" in cols and name is None:
                out = out.rename(columns={"name": "system"})
            elif "system" not in cols:
                out = out.assign(system=name or "run")
            return out[_RUN_COLUMNS]
        if {"query_id", "doc_id", "score"} <= cols and "topic" not in cols:  # ir_measures
            out = run.rename(columns={"query_id": "topic", "doc_id": "docid"})
            if name is not None or "system" not in cols:
                out = out.assign(system=name or "run")
            return out[_RUN_COLUMNS]
        if name is not None and {"topic", "docid", "score"} <= cols:  # irmodels' own layout
            return run.assign(system=name)[_RUN_COLUMNS]
        if {"system", "topic", "docid", "score"} <= cols:
            return run
        return None
    if is_ranx_run(run):
        out = _nested_to_frame(run.to_dict(), "score")  # type: ignore[attr-defined]
        return out.assign(system=name or str(run.name or "run"))[  # type: ignore[attr-defined]
            _RUN_COLUMNS]
    if isinstance(run, Mapping) and nesting(run) == 2:  # pytrec_eval / ir_measures run dict
        out = _nested_to_frame(run, "score", f"run {name or 'run'!r}")
        return out.assign(system=name or "run")[_RUN_COLUMNS]
    if isinstance(run, Iterable) and not isinstance(run, (str, bytes, Mapping)):
        items = list(run)
        if items and all(has_fields(r, "query_id", "doc_id", "score") for r in items):
            out = _tuples_frame(items, ("query_id", "doc_id", "score"),
                                ["topic", "docid", "score"])
            return out.assign(system=name or "run")[_RUN_COLUMNS]
    return None


def runs_input(runs: object) -> object:
    """Runs from another tool as ``system, topic, docid, score``; anything else unchanged.

    A single run that carries no name (a pytrec_eval run dict, ir_measures ScoredDoc tuples, a
    PyTerrier or ir_measures frame, a ranx Run without ``name``) is the system ``run``; several
    are named by a dict ``{name: run}`` (or ranx's ``run.name``, which must then be set and
    distinct: runs are never merged under one name).

    >>> from collections import namedtuple
    >>> ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")
    >>> runs_input({"bm25": [ScoredDoc("1", "d1", 2.5)]}).values.tolist()
    [['bm25', '1', 'd1', 2.5]]
    >>> runs_input({"bm25": {"1": {"d1": 2.5, "d2": 1.0}}}).values.tolist()  # pytrec_eval's
    [['bm25', '1', 'd1', 2.5], ['bm25', '1', 'd2', 1.0]]
    """
    if isinstance(runs, pd.DataFrame):
        out = _run_frame(runs)
        return runs if out is None else out
    if hasattr(runs, "read"):
        return via_file(read_text(runs), read_run, "run")
    if isinstance(runs, Mapping) and runs:
        if all(isinstance(v, pd.DataFrame) for v in runs.values()) and all(
                {"topic", "docid", "score"} <= set(map(str, v.columns)) for v in runs.values()):
            return runs  # irmodels' own dict form
        if nesting(runs) == 2:  # one run as pytrec_eval / ir_measures read it
            return _run_frame(runs)
        parts = []
        for name, run in runs.items():
            out = _run_frame(run, str(name))
            if out is None:
                raise DataFormatError(
                    f"run {name!r} is {describe(run)}; expected a DataFrame (topic, docid, "
                    "score), a PyTerrier result frame (qid, docno, score), an ir_measures frame "
                    "(query_id, doc_id, score), a ranx Run, ir_measures ScoredDoc(query_id, "
                    "doc_id, score) tuples or a dict {query id: {doc id: score}} (pytrec_eval)."
                )
            parts.append(out.assign(system=str(name)))
        return pd.concat(parts, ignore_index=True)
    if is_polars(runs) or is_ranx_run(runs):
        return _run_frame(runs)
    if isinstance(runs, (list, tuple, Iterator)):
        items = list(runs)
        if items and all(is_ranx_run(r) for r in items):
            return pd.concat([_run_frame(r, n) for r, n in zip(items, ranx_names(items))],
                             ignore_index=True)
        out = _run_frame(items)  # ir_measures ScoredDoc tuples: one run
        if out is not None:
            return out
        return items if isinstance(runs, Iterator) else runs  # an iterator is read once
    return runs
