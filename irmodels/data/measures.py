"""IR effectiveness measures from runs and qrels, vectorised over systems, topics and shards.

``evaluate(runs, qrels, measures)`` scores every (topic, system) pair, or every (topic, system,
shard) triple when a document -> shard assignment is given, and returns the canonical long frame
(:func:`irmodels.frame`). All rankings are sorted once and every measure is a weighted
``np.bincount`` over ranking segments: there is no Python loop over rankings.

Conventions follow trec_eval 9/10 (the values equal ``trec_eval -q`` and pytrec_eval-terrier);
see :func:`evaluate` and ``docs/measures.md``.

References: Ferro & Sanderson, SIGIR 2019 (sharded evaluation, undefined cells; METHODS.md
section 4); Moffat & Zobel, ACM TOIS 27(1), 2008 (RBP and its residual); Jarvelin & Kekalainen,
ACM TOIS 20(4), 2002 (nDCG).
"""

from __future__ import annotations

import difflib
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from irmodels.data.frame import natural_key, require_columns
from irmodels.errors import DataFormatError, UndefinedValueWarning

__all__ = ["DEFAULT_MEASURES", "KNOWN_MEASURES", "Measure", "evaluate", "parse_measure"]

DEFAULT_MEASURES = ("AP", "P@10", "nDCG@10", "RBP(0.8)")

#: The measure grammar, one form per line (``k`` a positive integer, ``p`` in (0, 1)).
KNOWN_MEASURES = (
    "AP", "AP@k", "P@k", "R@k", "Rprec", "RR", "nDCG", "nDCG@k", "RBP(p=0.8)", "RBP(0.8)",
    "RBP_res(p=0.8)", "num_rel", "num_ret", "num_rel_ret",
)

# kinds whose value needs at least one relevant document (else undefined)
_NEEDS_RELEVANT = {"AP", "R", "Rprec", "RR"}
_NEEDS_GAIN = {"nDCG"}

_KIND_CASE = {
    "ap": "AP", "p": "P", "r": "R", "rprec": "Rprec", "rr": "RR", "ndcg": "nDCG",
    "rbp": "RBP", "rbp_res": "RBP_res", "num_rel": "num_rel", "num_ret": "num_ret",
    "num_rel_ret": "num_rel_ret",
}
_CUT_RE = re.compile(r"^(AP|P|R|nDCG)@([1-9][0-9]{0,6})$", re.IGNORECASE)
_PLAIN_RE = re.compile(r"^(AP|Rprec|RR|nDCG|num_rel|num_ret|num_rel_ret)$", re.IGNORECASE)
_RBP_RE = re.compile(
    r"^(RBP|RBP_res)(?:\(\s*(?:p\s*=\s*)?([0-9]*\.?[0-9]+(?:[eE]-?[0-9]+)?)\s*\))?$", re.IGNORECASE
)
# trec_eval spellings -> canonical forms
_TREC_CUT_RE = re.compile(r"^(P|map_cut|ndcg_cut|recall)_([1-9][0-9]{0,6})$")
_TREC_PLAIN = {"map": "AP", "recip_rank": "RR", "ndcg": "nDCG", "rbp": "RBP(p=0.9)",
               "rbp_resid": "RBP_res(p=0.9)"}
_TREC_CUT_KIND = {"P": "P", "map_cut": "AP", "ndcg_cut": "nDCG", "recall": "R"}


@dataclass(frozen=True)
class Measure:
    """One effectiveness measure: a kind, an optional rank cutoff, an optional persistence.

    Build measures with :func:`parse_measure`; ``str(m)`` (or ``m.name``) is the canonical name,
    which parses back to an equal measure.

    Attributes
    ----------
    kind : str
        ``AP``, ``P``, ``R`` (recall), ``Rprec``, ``RR``, ``nDCG``, ``RBP``, ``RBP_res``,
        ``num_rel``, ``num_ret`` or ``num_rel_ret``.
    cutoff : int or None
        Rank cutoff ``k`` of ``AP@k``, ``P@k``, ``R@k``, ``nDCG@k``.
    p : float or None
        Persistence of ``RBP`` and ``RBP_res``.

    Examples
    --------
    >>> from irmodels.data.measures import parse_measure
    >>> m = parse_measure("nDCG@10")
    >>> m, m.name, parse_measure(m.name) == m
    (Measure('nDCG@10'), 'nDCG@10', True)
    """

    kind: str
    cutoff: int | None = None
    p: float | None = None

    @property
    def name(self) -> str:
        """The canonical name (ir_measures spelling)."""
        if self.kind in ("RBP", "RBP_res"):
            return f"{self.kind}(p={format(self.p, '.12g')})"
        if self.cutoff is not None:
            return f"{self.kind}@{self.cutoff}"
        return self.kind

    @property
    def undefined_without_relevant(self) -> bool:
        """True when the value is undefined for a topic with no relevant document."""
        return self.kind in _NEEDS_RELEVANT or self.kind in _NEEDS_GAIN

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Measure({self.name!r})"


def _unknown(text: str) -> DataFormatError:
    forms = ["AP", "P@10", "R@100", "Rprec", "RR", "nDCG", "nDCG@10", "RBP(p=0.8)",
             "RBP_res(p=0.8)", "num_rel", "num_ret", "num_rel_ret", "map", "P_10", "ndcg_cut_10"]
    close = difflib.get_close_matches(str(text), forms, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DataFormatError(
        f"unknown measure {text!r}{hint}. Known measures: AP, AP@k, P@k, R@k, Rprec, RR, nDCG, "
        "nDCG@k, RBP(p=0.8) (or RBP(0.8)), RBP_res(p=0.8), num_rel, num_ret, num_rel_ret, with k a "
        "positive integer and p in (0, 1); trec_eval names (map, P_10, ndcg_cut_10, recip_rank, "
        "map_cut_10, recall_10) are accepted too."
    )


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure name with a whitelisted grammar (nothing is evaluated).

    Parameters
    ----------
    text : str or Measure
        ``AP``, ``AP@k``, ``P@k``, ``R@k`` (recall at k), ``Rprec``, ``RR``, ``nDCG``, ``nDCG@k``,
        ``RBP(p=0.8)`` / ``RBP(0.8)`` / ``RBP`` (p = 0.8), ``RBP_res(p=0.8)`` (the RBP residual),
        ``num_rel``, ``num_ret``, ``num_rel_ret``. Names are case-insensitive
        (``ndcg@10``). trec_eval spellings are accepted: ``map``, ``map_cut_k``, ``P_k``,
        ``recall_k``, ``ndcg``, ``ndcg_cut_k``, ``recip_rank``, ``rbp`` (trec_eval's default
        p = 0.9).

    Returns
    -------
    Measure
        With a canonical ``name``.

    Raises
    ------
    DataFormatError
        For an unknown name; the message lists the known measures.

    Examples
    --------
    >>> from irmodels.data.measures import parse_measure
    >>> [parse_measure(s).name for s in ["map", "P_10", "RBP(0.8)", "ndcg_cut_20", "rr"]]
    ['AP', 'P@10', 'RBP(p=0.8)', 'nDCG@20', 'RR']
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise DataFormatError(
            f"a measure name must be a string, got {type(text).__name__} {text!r}; "
            "pass names such as 'AP' or 'nDCG@10'"
        )
    s = text.strip()
    if s in _TREC_PLAIN:
        return parse_measure(_TREC_PLAIN[s])
    m = _TREC_CUT_RE.match(s)
    if m:
        return Measure(_TREC_CUT_KIND[m.group(1)], cutoff=int(m.group(2)))
    m = _CUT_RE.match(s)
    if m:
        return Measure(_KIND_CASE[m.group(1).lower()], cutoff=int(m.group(2)))
    m = _PLAIN_RE.match(s)
    if m:
        return Measure(_KIND_CASE[m.group(1).lower()])
    m = _RBP_RE.match(s)
    if m:
        p = 0.8 if m.group(2) is None else float(m.group(2))
        if not 0.0 < p < 1.0:
            raise DataFormatError(
                f"RBP persistence must be in (0, 1), got p={m.group(2)} in {text!r}; "
                "use e.g. RBP(p=0.8)"
            )
        return Measure(_KIND_CASE[m.group(1).lower()], p=p)
    raise _unknown(text)


def _parse_all(measures: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    out: list[Measure] = []
    for item in measures:
        m = parse_measure(item)
        if m not in out:
            out.append(m)
    if not out:
        raise DataFormatError("no measure requested; pass e.g. measures=['AP', 'nDCG@10']")
    return out


# ---------------------------------------------------------------------------------------------
# input normalisation


def _as_runs(runs: object) -> pd.DataFrame:
    if not isinstance(runs, (pd.DataFrame, Mapping)) and hasattr(runs, "runs"):
        runs = runs.runs  # a DemoCollection or any object holding runs
    if isinstance(runs, Mapping):
        if not runs:
            raise DataFormatError("the mapping of runs is empty; pass at least one run")
        parts = []
        for name, df in runs.items():
            if not isinstance(df, pd.DataFrame):
                raise DataFormatError(
                    f"run {name!r} is a {type(df).__name__}; expected a DataFrame with columns "
                    "topic, docid, score"
                )
            require_columns(df, ["topic", "docid", "score"], f"run {name!r}")
            parts.append(df[["topic", "docid", "score"]].assign(system=str(name)))
        runs = pd.concat(parts, ignore_index=True)
    if not isinstance(runs, pd.DataFrame):
        raise DataFormatError(
            f"runs must be a DataFrame (system, topic, docid, score), a dict name -> DataFrame or "
            f"a DemoCollection; got {type(runs).__name__}"
        )
    require_columns(runs, ["system", "topic", "docid", "score"], "runs")
    return runs


def _scores(col: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col.dtype):
        raise DataFormatError("run column 'score' is boolean; expected numbers")
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"run column 'score' has {int(bad.sum())} missing, non-numeric or infinite value(s), "
            f"e.g. {col.iloc[i]!r} at row {i}; every retrieved document needs a finite score."
        )
    return values


def _as_qrels(qrels: object) -> pd.DataFrame:
    if not isinstance(qrels, pd.DataFrame) and hasattr(qrels, "qrels"):
        qrels = qrels.qrels
    if not isinstance(qrels, pd.DataFrame):
        raise DataFormatError(
            f"qrels must be a DataFrame with columns topic, docid, rel; got {type(qrels).__name__}"
        )
    require_columns(qrels, ["topic", "docid", "rel"], "qrels")
    if len(qrels) == 0:
        raise DataFormatError("the qrels have no rows; nothing can be evaluated")
    return qrels


def _rels(col: pd.Series) -> np.ndarray:
    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"qrels column 'rel' must hold integer relevance grades; found {col.iloc[i]!r} at "
            f"row {i} ({int(bad.sum())} bad value(s))."
        )
    return values.astype(np.int64)


def _factorize(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the unique labels (object array of str) of a label column, fast.

    Categoricals give their codes; Arrow-backed strings are dictionary-encoded by Arrow;
    anything else is converted to str and hashed by pandas.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        cats = np.asarray([str(c) for c in col.cat.categories], dtype=object)
        if (codes < 0).any():
            codes = np.where(codes < 0, len(cats), codes)
            cats = np.append(cats, "nan")
        return codes, cats
    storage = str(getattr(col.dtype, "storage", ""))
    if pd.api.types.is_string_dtype(col.dtype) and "pyarrow" in storage:
        try:
            import pyarrow as pa
            import pyarrow.compute as pc

            arr = pa.array(col)
            if isinstance(arr, pa.ChunkedArray):
                arr = arr.combine_chunks()
            enc = pc.dictionary_encode(arr)
            codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            uniq = np.asarray(enc.dictionary.to_pylist(), dtype=object)
            if enc.indices.null_count:
                codes = np.where(np.asarray(enc.indices.is_null()), len(uniq), codes)
                uniq = np.append(uniq, "nan")
            return codes, uniq
        except ImportError:  # pragma: no cover
            pass
    values = col if pd.api.types.is_string_dtype(col.dtype) else col.astype(str)
    codes, uniq = pd.factorize(values.to_numpy(dtype=object))
    return codes.astype(np.int64), np.asarray([str(u) for u in uniq], dtype=object)


def _natural_codes(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes in natural order of the levels of a label column, and the levels."""
    codes, uniq = _factorize(col)
    levels = [str(u) for u in uniq]
    order = sorted(range(len(levels)), key=lambda i: natural_key(levels[i]))
    remap = np.empty(len(levels), dtype=np.int64)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(levels))
    return remap[codes], [levels[i] for i in order]


# ---------------------------------------------------------------------------------------------
# evaluation


def _segment_positions(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted ``keys``: start mask, segment index of each row, 0-based position in segment."""
    n = len(keys)
    start = np.empty(n, dtype=bool)
    if n:
        start[0] = True
        np.not_equal(keys[1:], keys[:-1], out=start[1:])
    seg = np.cumsum(start) - 1
    starts = np.flatnonzero(start)
    pos = np.arange(n, dtype=np.int64) - starts[seg]
    return start, seg, pos


def _in_trec_order(key: np.ndarray, score: np.ndarray, docrank: np.ndarray, n_keys: int) -> bool:
    """True when every ranking is contiguous and sorted by score desc, then docid desc."""
    n = len(key)
    if n < 2:
        return True
    same = key[1:] == key[:-1]
    ok = (score[1:] < score[:-1]) | ((score[1:] == score[:-1]) & (docrank[1:] < docrank[:-1]))
    if not np.all(ok | ~same):
        return False
    starts = np.r_[key[:1], key[1:][~same]]
    return bool(np.bincount(starts, minlength=n_keys).max() <= 1)


def evaluate(
    runs: pd.DataFrame | Mapping[str, pd.DataFrame] | object,
    qrels: pd.DataFrame,
    measures: str | Measure | Sequence[str | Measure] = DEFAULT_MEASURES,
    *,
    shards: Mapping[str, object] | pd.Series | None = None,
    undefined: float | Literal["drop", "missing"] = 0.0,
    depth: int | None = None,
    relevance_level: int = 1,
    complete: bool = False,
) -> pd.DataFrame:
    """Score runs against qrels per topic (and shard), the way trec_eval does.

    Parameters
    ----------
    runs : DataFrame, dict or DemoCollection
        Columns ``system, topic, docid, score`` (``rank`` is ignored, as trec_eval ignores it);
        or a dict name -> DataFrame with ``topic, docid, score``; or an object with ``.runs``
        (a :class:`~irmodels.data.collection.DemoCollection`).
    qrels : DataFrame
        Columns ``topic, docid, rel`` (integer grades; negative grades mean "in the pool but not
        judged", as in trec_eval).
    measures : str or sequence of str
        Measure names (see :func:`parse_measure`); default ``AP, P@10, nDCG@10, RBP(p=0.8)``.
    shards : mapping or Series, optional
        Document id -> shard id. Every run and the qrels are split by this assignment (each
        run keeps its order and scores) and every measure is computed per
        (topic, system, shard). Every document of the runs and qrels needs a shard.
    undefined : float, "drop" or "missing"
        Policy for undefined values (a topic, or a topic in a shard, with no relevant
        document): a constant substituted for every system (default 0.0, which is what
        trec_eval reports), ``"drop"`` (drop such topics for that measure everywhere, in every
        shard) or ``"missing"`` (leave those rows out: the design becomes unbalanced).
    depth : int, optional
        Evaluate only the top ``depth`` documents of each ranking (trec_eval ``-M``). With
        shards the cut is applied to the whole run, before it is split.
    relevance_level : int
        Grade from which a document counts as relevant for the binary measures (trec_eval
        ``-l``, default 1). nDCG uses the grades themselves as gains, as trec_eval does.
    complete : bool
        Score a topic of the qrels that a system did not retrieve anything for as an empty
        ranking (trec_eval ``-c``). Default: such (topic, system) pairs are absent, as in
        trec_eval without ``-c``.

    Returns
    -------
    DataFrame
        Canonical long frame with columns ``measure`` (canonical measure name), ``topic``,
        ``system``, ``shard`` (only with ``shards``) and ``score``. ``frame.attrs["undefined"]``
        is a DataFrame (columns ``measure, topic`` and ``shard``) of the undefined cells.

    Raises
    ------
    DataFormatError
        Unknown measures, missing columns, non-numeric scores or grades, a document retrieved
        twice in one ranking or judged twice for one topic (trec_eval refuses both), documents
        without a shard, a bad ``undefined`` policy, ``depth`` or ``relevance_level``.

    Warns
    -----
    UndefinedValueWarning
        When some cells are undefined; says how many and which policy handled them.

    Notes
    -----
    *Order.* Within each (system, topic) the documents are ranked by score descending and ties
    by document id in decreasing ``strcmp`` (byte) order, exactly as trec_eval's
    ``form_res_rels.c`` sorts them; the ``rank`` column of a run file is ignored. trec_eval's
    test run ``results.test`` has tied scores, one of them between a relevant and a
    non-relevant document of topic 301: this order reproduces trec_eval there to 1e-12
    (pytrec_eval-terrier), the opposite order does not (AP 0.032417 instead of 0.032425; the
    4 decimals of ``out.test.aq`` agree with both).

    *Topics.* A topic is scored when it is in the qrels and in the run (trec_eval without
    ``-c``; ``complete=True`` adds the qrels topics a system missed). Documents retrieved but
    not in the qrels count as non-relevant. A topic that is in the qrels but has no relevant
    document is scored 0 by trec_eval (checked with pytrec_eval-terrier 0.5.11); here such a
    cell is *undefined* for the measures that need a relevant document and the ``undefined``
    policy decides (its default, 0.0, reproduces trec_eval).

    *Measures* (R = number of documents with grade >= ``relevance_level``, rel_i = 1 when the
    document at rank i is relevant, g_i its grade when positive, else 0):

    - ``AP`` = sum_i rel_i P@i / R (trec_eval ``map``); ``AP@k`` sums over i <= k
      (``map_cut_k``). Undefined when R = 0.
    - ``P@k`` = (relevant in the top k) / k, also when fewer than k are retrieved (``P_k``).
      Defined (0) when R = 0.
    - ``R@k`` = (relevant in the top k) / R (``recall_k``); ``Rprec`` = (relevant in the top
      R) / R; ``RR`` = 1 / rank of the first relevant document, 0 if none is retrieved
      (``recip_rank``). Undefined when R = 0.
    - ``nDCG@k`` = sum_{i<=k} g_i / log2(i + 1) divided by the same sum over the ideal ranking
      of all judged grades (``ndcg_cut_k``); ``nDCG`` has no cutoff (``ndcg``). Undefined
      when no document has a positive grade.
    - ``RBP(p)`` = (1 - p) sum_i rel_i p^(i-1) (Moffat & Zobel 2008), binary at
      ``relevance_level``; defined (0) when R = 0. trec_eval's ``rbp`` is ``RBP(p=0.9)``.
    - ``RBP_res(p)`` = (1 - p) sum_{i unjudged} p^(i-1) + p^d, the residual: the most RBP could
      grow if every unjudged retrieved document and everything below depth d were relevant.
      trec_eval's ``rbp_resid`` (p = 0.9) reports 0 when no retrieved document is unjudged;
      here the tail p^d is always included.
    - ``num_rel`` (R), ``num_ret`` (retrieved, after ``depth``), ``num_rel_ret``.

    *Shards* (Ferro & Sanderson, SIGIR 2019; METHODS.md section 4). The cells are every
    shard for each (topic, system) pair that would be scored without shards: a system that
    retrieved nothing in a shard gets the values of an empty ranking there. A (topic, shard)
    with no relevant document is undefined for every system and handled by ``undefined``.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> qrels = pd.DataFrame({"topic": ["1", "1", "1", "2"], "docid": ["a", "b", "c", "a"],
    ...                       "rel": [1, 0, 2, 1]})
    >>> runs = pd.DataFrame({"system": ["s"] * 5, "topic": ["1", "1", "1", "2", "2"],
    ...                      "docid": ["a", "b", "c", "b", "a"],
    ...                      "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
    >>> irm.evaluate(runs, qrels, ["AP", "P@2", "nDCG@3"]).round(4)
      measure topic system   score
    0      AP     1      s  0.8333
    1      AP     2      s  0.5000
    2     P@2     1      s  0.5000
    3     P@2     2      s  0.5000
    4  nDCG@3     1      s  0.7602
    5  nDCG@3     2      s  0.6309
    """
    ms = _parse_all(measures)
    if isinstance(undefined, str):
        if undefined not in ("drop", "missing"):
            raise DataFormatError(
                f"undefined={undefined!r} is not a policy; use a number (substitute it), "
                "'drop' or 'missing'"
            )
    elif (isinstance(undefined, (bool, np.bool_))
          or not isinstance(undefined, (int, float, np.number))
          or not math.isfinite(float(undefined))):
        raise DataFormatError(
            f"undefined={undefined!r} is not a policy; use a finite number, 'drop' or 'missing'"
        )
    if depth is not None and (isinstance(depth, bool) or int(depth) != depth or depth < 1):
        raise DataFormatError(f"depth must be a positive integer or None, got {depth!r}")
    if isinstance(relevance_level, bool) or int(relevance_level) != relevance_level \
            or relevance_level < 1:
        raise DataFormatError(
            f"relevance_level must be an integer >= 1 (trec_eval -l), got {relevance_level!r}"
        )
    level = int(relevance_level)

    run_df = _as_runs(runs)
    q_df = _as_qrels(qrels)

    # --- qrels: topics, docids, grades
    qd_codes, qd_uniques = _factorize(q_df["docid"])
    q_rel = _rels(q_df["rel"])
    q_tcode, topics = _natural_codes(q_df["topic"])
    n_topics = len(topics)

    # --- runs: keep topics present in the qrels (trec_eval skips the others)
    if len(run_df) == 0:
        raise DataFormatError("the runs have no rows; nothing can be evaluated")
    rt_codes, rt_uniques = _factorize(run_df["topic"])
    topic_map = pd.Index(topics).get_indexer(rt_uniques)
    r_tcode_all = topic_map[rt_codes]
    keep = r_tcode_all >= 0
    s_codes_all, systems = _natural_codes(run_df["system"])
    n_sys = len(systems)
    if not keep.any():
        raise DataFormatError(
            f"no topic of the runs is in the qrels (runs: {sorted(rt_uniques)[:5]}, "
            f"qrels: {topics[:5]}); check that both files belong to the same collection"
        )
    d_codes, d_uniques = _factorize(run_df["docid"])
    r_score = _scores(run_df["score"])
    if keep.all():
        r_tcode, r_scode = r_tcode_all, s_codes_all
    else:
        r_tcode, r_scode = r_tcode_all[keep], s_codes_all[keep]
        d_codes, r_score = d_codes[keep], r_score[keep]

    # --- document ids: tie-break rank in strcmp order (code points = UTF-8 byte order)
    n_docs = len(d_uniques)
    by_name = np.argsort(d_uniques.astype(str), kind="stable")
    d_rank = np.empty(n_docs, dtype=np.int64)
    d_rank[by_name] = np.arange(n_docs)

    # --- one sort: (system, topic), score descending, docid descending. Rankings that are
    # already contiguous and in this order (run files usually are) skip the sort: the
    # measures only need each ranking contiguous and ordered, not the rankings in any order.
    st_key = r_scode.astype(np.int64) * n_topics + r_tcode
    if not _in_trec_order(st_key, r_score, d_rank[d_codes], n_sys * n_topics):
        order = np.lexsort((-d_rank[d_codes], -r_score, st_key))
        st_key, d_codes, r_score = st_key[order], d_codes[order], r_score[order]
    seg_info = _segment_positions(st_key)
    pos = seg_info[2]
    pair = st_key * n_docs + d_codes
    if n_sys * n_topics * n_docs < 2**31:  # a narrower sort when the keys fit in 32 bits
        pair = pair.astype(np.int32)
    pair = np.sort(pair)
    dup_mask = pair[1:] == pair[:-1]
    if dup_mask.any():
        k = int(pair[1:][np.flatnonzero(dup_mask)[0]])
        st, dc = divmod(k, n_docs)
        sy, tp = divmod(st, n_topics)
        raise DataFormatError(
            f"{int(dup_mask.sum())} document(s) appear twice in one ranking, e.g. "
            f"{d_uniques[dc]!r} for system {systems[sy]!r}, topic {topics[tp]!r}; trec_eval "
            "refuses such runs. Remove the duplicates (keep the best-scored copy)."
        )
    del pair
    if depth is not None:
        cut = pos < int(depth)
        if not cut.all():
            st_key, d_codes = st_key[cut], d_codes[cut]
            seg_info = _segment_positions(st_key)
            pos = seg_info[2]
    present = np.zeros(n_sys * n_topics, dtype=bool)
    present[st_key] = True
    if complete:
        present[:] = True

    # --- shards
    if shards is not None:
        shard_map = pd.Series(shards) if not isinstance(shards, pd.Series) else shards
        if len(shard_map) == 0:
            raise DataFormatError("the shard assignment is empty; pass a mapping doc id -> shard")
        shard_map = pd.Series(shard_map.to_numpy(), index=shard_map.index.astype(str))
        if shard_map.index.has_duplicates:
            d = shard_map.index[shard_map.index.duplicated()][0]
            raise DataFormatError(f"the shard assignment lists document {d!r} more than once")
        sh_codes_map, shard_levels = _natural_codes(shard_map.astype(str))
        sh_index = pd.Index(shard_map.index)
        n_shards = len(shard_levels)
        pos_in_map = sh_index.get_indexer(d_uniques)
        q_pos_in_map = sh_index.get_indexer(qd_uniques)
        missing = np.concatenate([d_uniques[pos_in_map < 0], qd_uniques[q_pos_in_map < 0]])
        if len(missing):
            miss = pd.unique(missing)
            raise DataFormatError(
                f"{len(miss)} document(s) of the runs or qrels have no shard, e.g. "
                f"{list(miss[:3])}; the assignment must cover the whole collection (build it "
                "from the collection's doc ids, or from the union of runs and qrels)."
            )
        doc_shard = sh_codes_map[pos_in_map]
        q_shard = sh_codes_map[q_pos_in_map][qd_codes]
        cell = st_key * n_shards + doc_shard[d_codes]
        o2 = np.argsort(cell, kind="stable")  # keeps each run's order inside a shard
        cell, d_codes, st_key = cell[o2], d_codes[o2], st_key[o2]
        seg_info = _segment_positions(cell)
        pos = seg_info[2]
    else:
        n_shards = 1
        shard_levels = None
        q_shard = np.zeros(len(qd_codes), dtype=np.int64)
        cell = st_key

    # --- qrels per (topic, shard) and relevance of each retrieved document
    ts_q = q_tcode * n_shards + q_shard
    q_docpos = pd.Index(d_uniques).get_indexer(qd_uniques)[qd_codes]
    qkey_all = q_tcode.astype(np.int64) * (n_docs + 1) + (q_docpos + 1)
    qpair = q_tcode.astype(np.int64) * len(qd_uniques) + qd_codes
    if len(pd.unique(qpair)) != len(qpair):
        dupq = pd.Series(qpair).duplicated().to_numpy()
        i = int(np.flatnonzero(dupq)[0])
        raise DataFormatError(
            f"the qrels judge document {qd_uniques[qd_codes[i]]!r} twice for topic "
            f"{topics[q_tcode[i]]!r} ({int(dupq.sum())} duplicate row(s)); trec_eval refuses "
            "such qrels. Keep one judgement per (topic, docid)."
        )
    n_ts = n_topics * n_shards
    is_rel_q = q_rel >= level
    num_rel_ts = np.bincount(ts_q, weights=is_rel_q, minlength=n_ts)
    judged = q_docpos >= 0
    t_of_row = (st_key % n_topics).astype(np.int64)
    if not judged.any():
        relv = np.full(len(d_codes), -1, dtype=np.int64)
    elif n_topics * (n_docs + 1) <= 20_000_000:  # dense (topic, doc) -> grade table
        table = np.full(n_topics * (n_docs + 1), -1, dtype=np.int32)
        table[qkey_all[judged]] = q_rel[judged]
        relv = table[t_of_row * (n_docs + 1) + (d_codes + 1)].astype(np.int64)
        del table
    else:  # sorted keys and a binary search
        qkeys = qkey_all[judged]
        qrel_j = q_rel[judged]
        qsort = np.argsort(qkeys)
        qkeys, qrel_j = qkeys[qsort], qrel_j[qsort]
        rkeys = t_of_row * (n_docs + 1) + (d_codes + 1)
        loc = np.minimum(np.searchsorted(qkeys, rkeys), len(qkeys) - 1)
        found = qkeys[loc] == rkeys
        relv = np.where(found, qrel_j[loc], -1)  # -1: not in the pool
    isrel = relv >= level

    n_cells = n_sys * n_topics * n_shards
    # cell index = (system * T + topic) * S + shard  ->  (topic, shard) index
    cells = np.arange(n_cells, dtype=np.int64)
    shard_of_cell = cells % n_shards
    topic_of_cell = (cells // n_shards) % n_topics
    ts_of_cell = topic_of_cell * n_shards + shard_of_cell
    num_rel_cell = num_rel_ts[ts_of_cell]

    rank1 = pos + 1.0
    c = np.cumsum(isrel, dtype=np.int64)
    start, seg, _ = seg_info
    starts = np.flatnonzero(start)
    base = (c[starts] - isrel[starts])[seg] if len(starts) else c
    cumrel = c - base
    gains = np.where(relv > 0, relv, 0).astype(np.float64)
    disc = 1.0 / np.log2(pos + 2.0)

    def bc(w: np.ndarray) -> np.ndarray:
        return np.bincount(cell, weights=w, minlength=n_cells)

    def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros_like(num, dtype=np.float64)
        np.divide(num, den, out=out, where=den > 0)
        return out

    # ideal DCG per (topic, shard), for the cutoffs needed
    ideal_cache: dict[int | None, np.ndarray] = {}

    def ideal(k: int | None) -> np.ndarray:
        if k not in ideal_cache:
            pos_g = q_rel > 0
            g_ts, g = ts_q[pos_g], q_rel[pos_g].astype(np.float64)
            o = np.lexsort((-g, g_ts))
            g_ts, g = g_ts[o], g[o]
            _, _, gp = _segment_positions(g_ts)
            w = g / np.log2(gp + 2.0)
            if k is not None:
                w = np.where(gp < k, w, 0.0)
            ideal_cache[k] = np.bincount(g_ts, weights=w, minlength=n_ts)
        return ideal_cache[k]

    results: list[tuple[Measure, np.ndarray, np.ndarray]] = []  # measure, values, undefined
    no_rel = num_rel_cell == 0
    for m in ms:
        cut_k = m.cutoff
        within = pos < cut_k if cut_k is not None else np.ones(len(pos), dtype=bool)
        undef = np.zeros(n_cells, dtype=bool)
        if m.kind == "AP":
            w = np.where(isrel, cumrel / rank1, 0.0)
            if cut_k is not None:
                w = np.where(within, w, 0.0)
            val, undef = divide(bc(w), num_rel_cell), no_rel
        elif m.kind == "P":
            val = bc(isrel & within) / cut_k
        elif m.kind == "R":
            val, undef = divide(bc(isrel & within), num_rel_cell), no_rel
        elif m.kind == "Rprec":
            val = divide(bc(isrel & (pos < num_rel_cell[cell])), num_rel_cell)
            undef = no_rel
        elif m.kind == "RR":
            val, undef = bc(np.where(isrel & (cumrel == 1), 1.0 / rank1, 0.0)), no_rel
        elif m.kind == "nDCG":
            w = gains * disc
            if cut_k is not None:
                w = np.where(within, w, 0.0)
            idcg = ideal(cut_k)[ts_of_cell]
            val, undef = divide(bc(w), idcg), idcg <= 0
        elif m.kind == "RBP":
            p = 0.8 if m.p is None else float(m.p)
            val = (1.0 - p) * bc(np.where(isrel, p**pos, 0.0))
        elif m.kind == "RBP_res":
            p = 0.8 if m.p is None else float(m.p)
            n_ret = np.bincount(cell, minlength=n_cells)
            val = (1.0 - p) * bc(np.where(relv < 0, p**pos, 0.0)) + p**n_ret
        elif m.kind == "num_rel":
            val = num_rel_cell.astype(np.float64)
        elif m.kind == "num_ret":
            val = np.bincount(cell, minlength=n_cells).astype(np.float64)
        elif m.kind == "num_rel_ret":
            val = bc(isrel.astype(np.float64))
        else:  # pragma: no cover - the parser only makes the kinds above
            raise DataFormatError(f"measure {m.name!r} is not implemented")
        results.append((m, val, np.asarray(undef, dtype=bool)))

    return _assemble(results, present, n_sys, n_topics, n_shards, systems, topics, shard_levels,
                     undefined)


def _assemble(results, present, n_sys, n_topics, n_shards, systems, topics, shard_levels,
              undefined) -> pd.DataFrame:
    n_cells = n_sys * n_topics * n_shards
    cells = np.arange(n_cells, dtype=np.int64)
    st_of_cell = cells // n_shards
    shard_of_cell = cells % n_shards
    sys_of_cell = st_of_cell // n_topics
    topic_of_cell = st_of_cell % n_topics
    present_cell = present[st_of_cell]
    # output order: measure, topic, system, shard
    out_order = np.lexsort((shard_of_cell, sys_of_cell, topic_of_cell))
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    undef_parts: list[pd.DataFrame] = []
    n_undef_total = 0
    for m, val, undef in results:
        undef_here = undef & present_cell
        # a (topic, shard) is undefined when undefined for the systems present there
        keep = present_cell.copy()
        if undef_here.any():
            n_undef_total += int(undef_here.sum())
            if undefined == "missing":
                keep &= ~undef_here
            elif undefined == "drop":
                bad_topics = np.unique(topic_of_cell[undef_here])
                keep &= ~np.isin(topic_of_cell, bad_topics)
            else:
                val = np.where(undef_here, float(undefined), val)
            ts = np.unique(topic_of_cell[undef_here] * n_shards + shard_of_cell[undef_here])
            u = {"measure": m.name, "topic": np.asarray(topics, dtype=object)[ts // n_shards]}
            if shard_levels is not None:
                u["shard"] = np.asarray(shard_levels, dtype=object)[ts % n_shards]
            undef_parts.append(pd.DataFrame(u))
        sel = out_order[keep[out_order]]
        parts.append((np.full(len(sel), len(parts), dtype=np.int64), sel, val[sel]))
    if sum(len(p[1]) for p in parts) == 0:
        raise DataFormatError(
            "every cell was dropped by the undefined-value policy; no topic has a relevant "
            "document in every shard. Use undefined=0.0 or undefined='missing'."
        )
    m_code = np.concatenate([p[0] for p in parts])
    sel = np.concatenate([p[1] for p in parts])
    score = np.concatenate([p[2] for p in parts]).astype(np.float64)
    names = [m.name for m, _, _ in results]

    def factor(codes: np.ndarray, levels: list[str]) -> pd.Categorical:
        used = np.zeros(len(levels), dtype=bool)
        used[codes] = True
        if used.all():
            return pd.Categorical.from_codes(codes, categories=levels)
        remap = np.cumsum(used) - 1
        return pd.Categorical.from_codes(remap[codes],
                                         categories=[lv for lv, u in zip(levels, used) if u])

    # the canonical long frame (irm.frame's contract: factor columns as categoricals in
    # natural order, measures in the order asked for, float64 scores, a RangeIndex), built
    # from codes directly
    out = pd.DataFrame({
        "measure": factor(m_code, names),
        "topic": factor(topic_of_cell[sel], list(topics)),
        "system": factor(sys_of_cell[sel], list(systems)),
    })
    if shard_levels is not None:
        out["shard"] = factor(shard_of_cell[sel], list(shard_levels))
    out["score"] = score
    cols = ["measure", "topic"] + (["shard"] if shard_levels is not None else [])
    undef_df = (pd.concat(undef_parts, ignore_index=True) if undef_parts
                else pd.DataFrame({c: pd.Series(dtype=object) for c in cols}))
    out.attrs["undefined"] = undef_df
    if n_undef_total:
        key = "topic, system, shard" if shard_levels is not None else "topic, system"
        cell = "(measure, topic, shard)" if shard_levels is not None else "(measure, topic)"
        policy = (f"substituted {float(undefined)!r}" if not isinstance(undefined, str)
                  else ("dropped those topics everywhere" if undefined == "drop"
                        else "left those rows out (unbalanced)"))
        warnings.warn(
            f"{n_undef_total} ({key}) value(s) are undefined: {len(undef_df)} {cell} cell(s) "
            f"have no relevant document; {policy}. The cells are listed in "
            "frame.attrs['undefined']; choose the policy with undefined=<number>|'drop'|'missing'.",
            UndefinedValueWarning,
            stacklevel=3,
        )
    return out
