"""One home for the evaluation kernels: measure names, the undefined-value policy, the measures.

Three paths score rankings: :func:`irmodels.evaluate` (every retrieved document of every run),
the shard study's fast path (:mod:`irmodels.studies._sharded`, one collection under many shard
assignments) and the document-sample simulator (:mod:`irmodels.replicates.documents`, the ranks
of the relevant documents in simulated rankings). They share what is here:

- :func:`parse_measure` (the one measure grammar) and :class:`Measure`;
- :class:`UndefinedPolicy` (the one validation of ``undefined=`` and its application);
- :func:`trec_order_key` (trec_eval's ranking order: scores as C ``float``);
- :class:`Hits` and :func:`score` (every measure from the ranks of the relevant documents of each
  ranking, as weighted ``np.bincount`` calls).

A *cell* is one ranking: a (topic, system) pair, a (topic, system, shard) triple, or one
simulated sample. Each path reduces its rankings to :class:`Hits`, the relevant retrieved
documents (cell, 1-based rank, relevant documents at or above that rank), and calls
:func:`score`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from irmodels.errors import DataFormatError

__all__ = [
    "ELEVEN_POINTS",
    "GMAP_EPSILON",
    "INFAP_EPSILON",
    "KNOWN_MEASURES",
    "Hits",
    "Measure",
    "UndefinedPolicy",
    "binary_ideal_dcg",
    "hits_from_ranks",
    "parse_measure",
    "parse_measures",
    "score",
    "trec_order_key",
]

#: trec_eval's ``MIN_GEO_MEAN``: AP is floored here before the logarithm of ``gm_map``.
GMAP_EPSILON = 1e-5

#: trec_eval's ``INFAP_EPSILON``, the smoothing of infAP's estimate of precision.
INFAP_EPSILON = 1e-5

#: The 11 standard recall points of ``IPrec@r`` and ``11pt_avg`` (trec_eval's defaults).
ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

#: The measure grammar, one form per line (``k`` a positive integer, ``p`` in (0, 1)).
KNOWN_MEASURES = (
    "AP", "AP@k", "P@k", "R@k", "Rprec", "RR", "nDCG", "nDCG@k", "RBP(p=0.8)", "RBP(0.8)",
    "RBP_res(p=0.8)", "GMAP", "num_rel", "num_ret", "num_rel_ret", "Bpref", "gm_bpref",
    "infAP", "IPrec@0.1", "11pt_avg", "SP", "SP@k", "DCG", "DCG@k", "AP(judged_only=True)",
    "P(judged_only=True)@k",
)

# kinds whose value needs at least one relevant document (else undefined)
_NEEDS_RELEVANT = {"AP", "GMAP", "R", "Rprec", "RR", "Bpref", "gm_bpref", "infAP", "IPrec",
                   "11pt_avg"}
# kinds whose per-topic value is a logarithm (the mean over topics is a geometric mean)
LOG_KINDS = frozenset({"GMAP", "gm_bpref"})
_NEEDS_GAIN = {"nDCG"}

_KIND_CASE = {
    "ap": "AP", "p": "P", "r": "R", "rprec": "Rprec", "rr": "RR", "ndcg": "nDCG",
    "rbp": "RBP", "rbp_res": "RBP_res", "gmap": "GMAP", "num_rel": "num_rel",
    "num_ret": "num_ret", "num_rel_ret": "num_rel_ret", "bpref": "Bpref",
    "gm_bpref": "gm_bpref", "infap": "infAP", "iprec": "IPrec", "11pt_avg": "11pt_avg",
    "sp": "SP", "dcg": "DCG",
}
_CUT_RE = re.compile(r"^(AP|P|R|nDCG|SP|DCG)@([1-9][0-9]{0,6})$", re.IGNORECASE)
_PLAIN_RE = re.compile(r"^(AP|Rprec|RR|nDCG|GMAP|num_rel|num_ret|num_rel_ret|Bpref|gm_bpref|"
                       r"infAP|11pt_avg|SP|DCG)$", re.IGNORECASE)
# IPrec@r (ir_measures) and iprec_at_recall_r (trec_eval): interpolated precision at recall r
_IPREC_RE = re.compile(r"^(?:IPrec@|iprec_at_recall_)([01](?:\.[0-9]{1,6})?|\.[0-9]{1,6})$",
                       re.IGNORECASE)
# ir_measures' measure parameter judged_only=True (a condensed list): AP(judged_only=True)@10
_JUDGED_RE = re.compile(r"(?:,\s*)?\bjudged_only\s*=\s*(True|False|true|false|1|0)\s*(?:,\s*)?")
_RBP_RE = re.compile(
    r"^(RBP|RBP_res)(?:\(\s*(?:p\s*=\s*)?([0-9]*\.?[0-9]+(?:[eE]-?[0-9]+)?)\s*\))?$", re.IGNORECASE
)
# trec_eval spellings -> canonical forms
_TREC_CUT_RE = re.compile(r"^(P|map_cut|ndcg_cut|recall)_([1-9][0-9]{0,6})$")
_TREC_PLAIN = {"map": "AP", "gm_map": "GMAP", "recip_rank": "RR", "ndcg": "nDCG",
               "rbp": "RBP(p=0.9)", "rbp_resid": "RBP_res(p=0.9)", "11-pt_avg": "11pt_avg"}
_TREC_CUT_KIND = {"P": "P", "map_cut": "AP", "ndcg_cut": "nDCG", "recall": "R"}


# ---------------------------------------------------------------------------------------------
# measure names


@dataclass(frozen=True)
class Measure:
    """One effectiveness measure: a kind, an optional rank cutoff, an optional persistence.

    Build measures with :func:`parse_measure`; ``str(m)`` (or ``m.name``) is the canonical name,
    which parses back to an equal measure.

    Attributes
    ----------
    kind : str
        ``AP``, ``GMAP``, ``P``, ``R`` (recall), ``Rprec``, ``RR``, ``nDCG``, ``RBP``,
        ``RBP_res``, ``num_rel``, ``num_ret``, ``num_rel_ret``, ``Bpref``, ``gm_bpref``,
        ``infAP``, ``IPrec``, ``11pt_avg``, ``SP`` or ``DCG``.
    cutoff : int or None
        Rank cutoff ``k`` of ``AP@k``, ``P@k``, ``R@k``, ``nDCG@k``, ``SP@k``, ``DCG@k``.
    p : float or None
        Persistence of ``RBP`` and ``RBP_res``.
    recall : float or None
        Recall level of ``IPrec@r`` (in [0, 1]).
    judged_only : bool
        Score the condensed list (the ranking without its unjudged documents; ir_measures'
        ``judged_only=True``, trec_eval ``-J``).

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
    recall: float | None = None
    judged_only: bool = False

    @property
    def name(self) -> str:
        """The canonical name (ir_measures spelling; trec_eval's for ``gm_bpref``,
        ``11pt_avg``)."""
        judged = "judged_only=True" if self.judged_only else ""
        if self.kind in ("RBP", "RBP_res"):
            return f"{self.kind}(p={format(self.p, '.12g')}{', ' + judged if judged else ''})"
        head = f"{self.kind}({judged})" if judged else self.kind
        if self.kind == "IPrec":
            return f"{head}@{float(self.recall or 0.0)!r}"
        if self.cutoff is not None:
            return f"{head}@{self.cutoff}"
        return head

    @property
    def undefined_without_relevant(self) -> bool:
        """True when the value is undefined for a topic with no relevant document."""
        return self.kind in _NEEDS_RELEVANT or self.kind in _NEEDS_GAIN

    def substitute(self, value: float) -> float:
        """The value an undefined cell takes under ``undefined=value``.

        ``value`` is on the scale of the measure, except for ``GMAP`` and ``gm_bpref``, whose
        per-topic values are ``log(max(AP, 1e-5))`` and ``log(max(bpref, 1e-5))``: there
        ``value`` is an AP (a bpref), so that the default 0 gives trec_eval's ``log(1e-5)``.

        >>> parse_measure("GMAP").substitute(0.0) == math.log(1e-5)
        True
        """
        if self.kind in LOG_KINDS:
            return math.log(max(float(value), GMAP_EPSILON))
        return float(value)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Measure({self.name!r})"


def _unknown(text: str) -> DataFormatError:
    forms = ["AP", "P@10", "R@100", "Rprec", "RR", "nDCG", "nDCG@10", "RBP(p=0.8)",
             "RBP_res(p=0.8)", "GMAP", "num_rel", "num_ret", "num_rel_ret", "map", "gm_map",
             "P_10", "ndcg_cut_10", "Bpref", "bpref", "gm_bpref", "infAP", "IPrec@0.1",
             "iprec_at_recall_0.10", "11pt_avg", "SP", "SP@10", "DCG", "DCG@10"]
    close = difflib.get_close_matches(str(text), forms, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DataFormatError(
        f"unknown measure {text!r}{hint}. Known measures: AP, AP@k, P@k, R@k, Rprec, RR, nDCG, "
        "nDCG@k, RBP(p=0.8) (or RBP(0.8)), RBP_res(p=0.8), GMAP, num_rel, num_ret, num_rel_ret, "
        "Bpref, gm_bpref, infAP, IPrec@r, 11pt_avg, SP, SP@k, DCG, DCG@k, with k a positive "
        "integer, p in (0, 1) and r in [0, 1]; add (judged_only=True) for a condensed list "
        "(AP(judged_only=True), nDCG(judged_only=True)@10); trec_eval names (map, gm_map, "
        "P_10, ndcg_cut_10, recip_rank, map_cut_10, recall_10, bpref, iprec_at_recall_0.10) "
        "are accepted too."
    )


def parse_measure(text: str | Measure) -> Measure:
    """Parse a measure name with a whitelisted grammar (nothing is evaluated).

    Parameters
    ----------
    text : str or Measure
        ``AP``, ``AP@k``, ``P@k``, ``R@k`` (recall at k), ``Rprec``, ``RR``, ``nDCG``, ``nDCG@k``,
        ``RBP(p=0.8)`` / ``RBP(0.8)`` / ``RBP`` (p = 0.8), ``RBP_res(p=0.8)`` (the RBP residual),
        ``GMAP`` (per topic ``log(max(AP, 1e-5))``, trec_eval's ``gm_map``), ``num_rel``,
        ``num_ret``, ``num_rel_ret``. Names are case-insensitive (``ndcg@10``). trec_eval
        spellings are accepted: ``map``, ``gm_map``, ``map_cut_k``, ``P_k``, ``recall_k``,
        ``ndcg``, ``ndcg_cut_k``, ``recip_rank``, ``rbp`` (trec_eval's default p = 0.9).
        Measures for incomplete judgements and the older literature: ``Bpref`` (``bpref``),
        ``gm_bpref`` (per topic ``log(max(bpref, 1e-5))``), ``infAP``, ``IPrec@r``
        (``iprec_at_recall_r``, interpolated precision at recall r in [0, 1]), ``11pt_avg``,
        ``SP`` / ``SP@k`` (sum precision) and ``DCG`` / ``DCG@k`` (DCG without normalisation).
        ``(judged_only=True)`` after the name scores the condensed list (ir_measures'
        parameter: ``AP(judged_only=True)``, ``nDCG(judged_only=True)@10``).

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
    >>> [parse_measure(s).name for s in ["map", "P_10", "RBP(0.8)", "ndcg_cut_20", "rr", "gm_map"]]
    ['AP', 'P@10', 'RBP(p=0.8)', 'nDCG@20', 'RR', 'GMAP']
    >>> [parse_measure(s).name for s in ["bpref", "iprec_at_recall_0.10", "IPrec@1",
    ...                                  "ndcg(judged_only=True)@10", "dcg@5"]]
    ['Bpref', 'IPrec@0.1', 'IPrec@1.0', 'nDCG(judged_only=True)@10', 'DCG@5']
    """
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise DataFormatError(
            f"a measure name must be a string, got {type(text).__name__} {text!r}; "
            "pass names such as 'AP' or 'nDCG@10'"
        )
    s = text.strip()
    if "judged_only" in s:
        return _parse_judged_only(text, s)
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
    m = _IPREC_RE.match(s)
    if m:
        r = float(m.group(1))
        if not 0.0 <= r <= 1.0:
            raise DataFormatError(
                f"the recall level of IPrec must be in [0, 1], got {m.group(1)} in {text!r}; "
                "use e.g. IPrec@0.1 (or iprec_at_recall_0.10)"
            )
        return Measure("IPrec", recall=r)
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


def _parse_judged_only(text: str, s: str) -> Measure:
    """A name with ir_measures' ``judged_only=`` parameter: the measure without it, condensed."""
    found = _JUDGED_RE.findall(s)
    rest = _JUDGED_RE.sub("", s).replace("()", "")
    if len(found) != 1 or "judged_only" in rest:
        raise _unknown(text)
    measure = parse_measure(rest)
    if found[0].lower() not in ("true", "1"):
        return measure
    if measure.kind in ("RBP_res", "num_rel"):
        why = ("RBP_res measures the unjudged documents, and a condensed list has none"
               if measure.kind == "RBP_res" else "num_rel counts the qrels, not the ranking")
        raise DataFormatError(
            f"{measure.kind} with judged_only=True in {text!r} is not a measure: {why}; "
            f"request {measure.name} without judged_only"
        )
    return replace(measure, judged_only=True)


def parse_measures(measures: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Parse one name or many; duplicates (after canonicalisation) are kept once, in order.

    >>> [m.name for m in parse_measures(["map", "AP", "P_5"])]
    ['AP', 'P@5']
    """
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
# the undefined-value policy


@dataclass(frozen=True)
class UndefinedPolicy:
    """What to do with a cell whose measure is undefined (no relevant document).

    ``kind`` is ``"constant"`` (substitute ``value`` for every system), ``"drop"`` (drop the
    topic for that measure everywhere) or ``"missing"`` (leave the cell out: unbalanced).
    Build it with :meth:`parse`, which validates ``undefined=`` once for every path.

    Examples
    --------
    >>> UndefinedPolicy.parse(0), UndefinedPolicy.parse("drop").kind
    (UndefinedPolicy(kind='constant', value=0.0), 'drop')
    >>> UndefinedPolicy.parse("bogus")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: undefined='bogus' is not a policy; use a finite number (substitute it), 'drop' or 'missing'
    """

    kind: Literal["constant", "drop", "missing"]
    value: float = 0.0

    @classmethod
    def parse(cls, undefined: object) -> UndefinedPolicy:
        """Validate ``undefined=`` (a finite number, ``"drop"``, ``"missing"`` or a policy)."""
        if isinstance(undefined, UndefinedPolicy):
            return undefined
        if isinstance(undefined, str):
            if undefined in ("drop", "missing"):
                return cls(undefined)  # type: ignore[arg-type]
        elif (not isinstance(undefined, (bool, np.bool_))
              and isinstance(undefined, (int, float, np.integer, np.floating))
              and math.isfinite(float(undefined))):
            return cls("constant", float(undefined))
        raise DataFormatError(
            f"undefined={undefined!r} is not a policy; use a finite number (substitute it), "
            "'drop' or 'missing'"
        )

    @property
    def public(self) -> float | str:
        """The policy as the ``undefined=`` keyword takes it (a float or a string)."""
        return self.value if self.kind == "constant" else self.kind

    def describe(self) -> str:
        """What the policy did, for warnings."""
        if self.kind == "constant":
            return f"substituted {self.value!r}"
        if self.kind == "drop":
            return "dropped those topics everywhere"
        return "left those cells out (unbalanced)"

    def apply(self, measure: Measure, values: np.ndarray, undefined: np.ndarray,
              topic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and the mask of cells kept, for cells whose topic code is ``topic``.

        ``undefined`` flags the undefined cells among those given (only scored cells should be
        passed: a topic is dropped when undefined for a cell that is scored).
        """
        keep = np.ones(len(values), dtype=bool)
        if not undefined.any():
            return values, keep
        if self.kind == "missing":
            return values, ~undefined
        if self.kind == "drop":
            return values, ~np.isin(topic, np.unique(topic[undefined]))
        return np.where(undefined, measure.substitute(self.value), values), keep


# ---------------------------------------------------------------------------------------------
# trec_eval's ranking order


def trec_order_key(scores: np.ndarray) -> np.ndarray:
    """Scores as trec_eval compares them: C ``float`` (single precision).

    trec_eval stores each run score in a ``float``, so two scores equal in single precision
    tie (and the document id decides, descending). Sort by ``-key`` then by document id
    descending to get trec_eval's order. Scores beyond the float range become +-inf, as in C.

    >>> s = np.array([5000.0001, 5000.0002])
    >>> bool(s[0] < s[1]), trec_order_key(s).tolist()
    (True, [5000.0, 5000.0])
    """
    with np.errstate(over="ignore"):
        return np.asarray(scores, dtype=np.float64).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# the kernels


@dataclass
class Hits:
    """The relevant retrieved documents of ``n_cells`` rankings: what every measure needs.

    Attributes
    ----------
    cell : int array (H,)
        Ranking (cell) of each relevant retrieved document.
    rank : float array (H,)
        Its 1-based rank in that ranking.
    nrel : float array (H,)
        Relevant documents at or above it in that ranking (1-based).
    n_rel : array (n_cells,)
        Relevant documents of the cell (the recall base R).
    n_cells : int
        Number of rankings.
    n_ret : array (n_cells,), optional
        Documents retrieved per cell (``num_ret``, ``RBP_res``).
    gain_cell, gain_rank, gain : arrays, optional
        The retrieved documents with a positive grade, their ranks and grades (graded nDCG);
        default: the relevant documents with gain 1.
    ideal_dcg : callable k -> array (n_cells,), optional
        Ideal DCG of each cell at cutoff k (None: no cutoff); default: binary, from ``n_rel``.
    unjudged_cell, unjudged_rank : arrays, optional
        The retrieved documents not in the qrels and their ranks (``RBP_res``).
    judged : callable () -> (nonrel_above, pooled_above, n_nonrel), optional
        For ``Bpref``, ``gm_bpref`` and ``infAP``: for each hit, the judged non-relevant
        documents (grade 0 .. level - 1) and the pooled but unjudged documents (negative
        grade) ranked above it; and each cell's judged non-relevant documents in the qrels.
    judged_only : bool
        The rankings are condensed lists (unjudged documents removed): the hits of the
        ``judged_only=True`` measures.
    """

    cell: np.ndarray
    rank: np.ndarray
    nrel: np.ndarray
    n_rel: np.ndarray
    n_cells: int
    n_ret: np.ndarray | None = None
    gain_cell: np.ndarray | None = None
    gain_rank: np.ndarray | None = None
    gain: np.ndarray | None = None
    ideal_dcg: Callable[[int | None], np.ndarray] | None = None
    unjudged_cell: np.ndarray | None = None
    unjudged_rank: np.ndarray | None = None
    judged: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    judged_only: bool = False
    _cache: dict = field(default_factory=dict, repr=False)

    def sum(self, weights: np.ndarray | None = None, where: np.ndarray | None = None,
            cell: np.ndarray | None = None) -> np.ndarray:
        """Per-cell sums of ``weights`` (default 1) over the hits selected by ``where``."""
        c = self.cell if cell is None else cell
        if where is not None:
            c = c[where]
            weights = None if weights is None else weights[where]
        return np.asarray(np.bincount(c, weights=weights, minlength=self.n_cells),
                          dtype=np.float64)


def hits_from_ranks(ranks: np.ndarray, n_rel: np.ndarray) -> Hits:
    """:class:`Hits` from a dense ``(C, K)`` array of increasing ranks padded with ``inf``.

    >>> h = hits_from_ranks(np.array([[1.0, 3.0, np.inf]]), np.array([4]))
    >>> h.cell.tolist(), h.rank.tolist(), h.nrel.tolist()
    ([0, 0], [1.0, 3.0], [1.0, 2.0])
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    cell, col = np.nonzero(np.isfinite(ranks))
    return Hits(cell=cell, rank=ranks[cell, col], nrel=col + 1.0,
                n_rel=np.asarray(n_rel, dtype=np.float64), n_cells=ranks.shape[0])


def binary_ideal_dcg(n_rel: np.ndarray, k: int | None) -> np.ndarray:
    """Ideal DCG of binary rankings with ``n_rel`` relevant documents, at cutoff ``k``.

    >>> binary_ideal_dcg(np.array([0, 1, 3]), 2).round(4).tolist()
    [0.0, 1.0, 1.6309]
    """
    n = np.asarray(n_rel, dtype=np.int64)
    top = int(n.max()) if len(n) else 0
    if k is not None:
        n = np.minimum(n, k)
        top = min(top, k)
    disc = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2.0, top + 2.0)))])
    return disc[n]


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _within(h: Hits, k: int | None, rank: np.ndarray | None = None) -> np.ndarray | None:
    if k is None:
        return None
    return (h.rank if rank is None else rank) <= k


def _ap(m: Measure, h: Hits) -> np.ndarray:
    return _divide(h.sum(h.nrel / h.rank, _within(h, m.cutoff)), h.n_rel)


def _gmap(m: Measure, h: Hits) -> np.ndarray:
    return np.log(np.maximum(_ap(m, h), GMAP_EPSILON))


def _precision(m: Measure, h: Hits) -> np.ndarray:
    assert m.cutoff is not None
    return h.sum(where=_within(h, m.cutoff)) / m.cutoff


def _recall(m: Measure, h: Hits) -> np.ndarray:
    return _divide(h.sum(where=_within(h, m.cutoff)), h.n_rel)


def _rprec(m: Measure, h: Hits) -> np.ndarray:
    return _divide(h.sum(where=h.rank <= h.n_rel[h.cell]), h.n_rel)


def _rr(m: Measure, h: Hits) -> np.ndarray:
    return h.sum(1.0 / h.rank, h.nrel == 1)


def _ideal(h: Hits, k: int | None) -> np.ndarray:
    if k not in h._cache:
        h._cache[k] = (binary_ideal_dcg(h.n_rel, k) if h.ideal_dcg is None
                       else np.asarray(h.ideal_dcg(k), dtype=np.float64))
    return h._cache[k]


def _ndcg(m: Measure, h: Hits) -> np.ndarray:
    cell, rank, gain = h.cell, h.rank, np.ones(len(h.rank))
    if h.gain is not None:
        assert h.gain_cell is not None and h.gain_rank is not None
        cell, rank, gain = h.gain_cell, h.gain_rank, h.gain
    dcg = h.sum(gain / np.log2(rank + 1.0), _within(h, m.cutoff, rank), cell=cell)
    return _divide(dcg, _ideal(h, m.cutoff))


def _rbp(m: Measure, h: Hits) -> np.ndarray:
    p = 0.8 if m.p is None else float(m.p)
    return (1.0 - p) * h.sum(p ** (h.rank - 1.0))


def _n_ret(h: Hits) -> np.ndarray:
    if h.n_ret is None:
        raise DataFormatError("num_ret and RBP_res need the number of retrieved documents")
    return np.asarray(h.n_ret, dtype=np.float64)


def _rbp_res(m: Measure, h: Hits) -> np.ndarray:
    p = 0.8 if m.p is None else float(m.p)
    if h.unjudged_cell is None or h.unjudged_rank is None:
        raise DataFormatError("RBP_res needs the unjudged retrieved documents")
    return ((1.0 - p) * h.sum(p ** (h.unjudged_rank - 1.0), cell=h.unjudged_cell)
            + p ** _n_ret(h))


def _judged(h: Hits, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if h.judged is None:
        raise DataFormatError(
            f"{name} needs the judged non-relevant documents of each ranking, which this "
            "evaluation path does not have; compute it with irm.evaluate"
        )
    if "judged" not in h._cache:
        h._cache["judged"] = h.judged()
    return h._cache["judged"]


def _bpref(m: Measure, h: Hits) -> np.ndarray:
    """trec_eval's ``bpref``: sum over relevant retrieved of 1 - min(N_above, R) / min(N, R)."""
    nonrel, _, n_nonrel = _judged(h, "Bpref")
    r = np.asarray(h.n_rel, dtype=np.float64)[h.cell]
    den = np.minimum(np.asarray(n_nonrel, dtype=np.float64)[h.cell], r)
    frac = np.zeros(len(r))
    np.divide(np.minimum(nonrel, r), den, out=frac, where=den > 0)
    return _divide(h.sum(np.where(nonrel > 0, 1.0 - frac, 1.0)), h.n_rel)


def _gm_bpref(m: Measure, h: Hits) -> np.ndarray:
    return np.log(np.maximum(_bpref(m, h), GMAP_EPSILON))


def _infap(m: Measure, h: Hits) -> np.ndarray:
    """trec_eval's ``infAP`` (Yilmaz & Aslam, CIKM 2006), term by term as ``m_infap.c``."""
    nonrel, pooled, _ = _judged(h, "infAP")
    j = h.rank - 1.0  # 0-based rank: every document above counts, in the pool or not
    before = h.nrel - 1.0  # relevant documents above
    safe_j = np.where(j > 0, j, 1.0)
    term = (1.0 / (j + 1.0) + (j / (j + 1.0)) * ((before + nonrel + pooled) / safe_j)
            * ((before + INFAP_EPSILON) / (before + nonrel + 2 * INFAP_EPSILON)))
    return _divide(h.sum(np.where(j == 0, 1.0, term)), h.n_rel)


def _lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround`` for x >= 0: halves away from zero (numpy rounds them to even)."""
    f = np.floor(x)
    return np.where(x - f >= 0.5, f + 1.0, f).astype(np.int64)


def _interpolated(h: Hits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interpolated precision at each hit, max over the hits at or below it in its cell; the
    hits' cells (sorted) and the first hit of each cell. Exact: the maxima are taken over the
    integer codes of the distinct precisions, offset by cell so that no maximum crosses one."""
    if "iprec" in h._cache:
        return h._cache["iprec"]
    cell, rank, nrel = h.cell, h.rank, h.nrel
    if len(cell) > 1 and not (np.all(cell[1:] >= cell[:-1])
                              and np.all((cell[1:] > cell[:-1]) | (rank[1:] > rank[:-1]))):
        o = np.lexsort((rank, cell))
        cell, rank, nrel = cell[o], rank[o], nrel[o]
    uniq, code = np.unique(nrel / rank, return_inverse=True)
    width = np.int64(len(uniq) + 1)
    key = code.astype(np.int64) - cell.astype(np.int64) * width
    best = np.maximum.accumulate(key[::-1])[::-1] + cell.astype(np.int64) * width
    first = np.searchsorted(cell, np.arange(h.n_cells), side="left")
    h._cache["iprec"] = (uniq[best] if len(best) else np.zeros(0), cell, first)
    return h._cache["iprec"]


def _iprec_at(h: Hits, recall: float) -> np.ndarray:
    """trec_eval's ``iprec_at_recall``: the interpolated precision where the m-th relevant
    document is retrieved, m = lround(recall * R) (at least the first; 0 if fewer than m are
    retrieved)."""
    ip, cell, first = _interpolated(h)
    n_rel = np.asarray(h.n_rel, dtype=np.float64)
    need = np.maximum(_lround(recall * n_rel), 1)
    found = np.bincount(cell, minlength=h.n_cells)
    ok = (need <= found) & (n_rel > 0)
    out = np.zeros(h.n_cells)
    out[ok] = ip[first[ok] + need[ok] - 1]
    return out


def _iprec(m: Measure, h: Hits) -> np.ndarray:
    return _iprec_at(h, float(m.recall or 0.0))


def _eleven_point(m: Measure, h: Hits) -> np.ndarray:
    total = np.zeros(h.n_cells)
    for r in reversed(ELEVEN_POINTS):  # trec_eval adds them from recall 1.0 down
        total += _iprec_at(h, r)
    return total / len(ELEVEN_POINTS)


def _sp(m: Measure, h: Hits) -> np.ndarray:
    """Sum precision: the sum of P@i at the ranks i of the relevant retrieved documents."""
    return h.sum(h.nrel / h.rank, _within(h, m.cutoff))


def _dcg(m: Measure, h: Hits) -> np.ndarray:
    """DCG without normalisation: the numerator of nDCG (grades as gains, log2(i + 1))."""
    cell, rank, gain = h.cell, h.rank, np.ones(len(h.rank))
    if h.gain is not None:
        assert h.gain_cell is not None and h.gain_rank is not None
        cell, rank, gain = h.gain_cell, h.gain_rank, h.gain
    return h.sum(gain / np.log2(rank + 1.0), _within(h, m.cutoff, rank), cell=cell)


_KERNELS: dict[str, Callable[[Measure, Hits], np.ndarray]] = {
    "AP": _ap, "GMAP": _gmap, "P": _precision, "R": _recall, "Rprec": _rprec, "RR": _rr,
    "nDCG": _ndcg, "RBP": _rbp, "RBP_res": _rbp_res, "Bpref": _bpref, "gm_bpref": _gm_bpref,
    "infAP": _infap, "IPrec": _iprec, "11pt_avg": _eleven_point, "SP": _sp, "DCG": _dcg,
    "num_rel": lambda m, h: np.asarray(h.n_rel, dtype=np.float64),
    "num_ret": lambda m, h: _n_ret(h),
    "num_rel_ret": lambda m, h: h.sum(),
}


def score(measure: Measure, hits: Hits) -> tuple[np.ndarray, np.ndarray]:
    """Values of ``measure`` for every cell of ``hits`` and the mask of undefined cells.

    Undefined cells (no relevant document for the measures that need one; no positive gain for
    nDCG) hold the value of an empty sum (0, or ``log(1e-5)`` for GMAP): an
    :class:`UndefinedPolicy` decides what they become.

    >>> h = hits_from_ranks(np.array([[1.0, 3.0], [2.0, np.inf]]), np.array([4, 0]))
    >>> v, u = score(parse_measure("AP"), h)
    >>> v.round(4).tolist(), u.tolist()
    ([0.4167, 0.0], [False, True])
    """
    if measure.judged_only != hits.judged_only:
        raise DataFormatError(
            f"{measure.name} needs {'condensed' if measure.judged_only else 'full'} rankings "
            f"and these are {'condensed' if hits.judged_only else 'full'}; compute it with "
            "irm.evaluate"
        )
    values = _KERNELS[measure.kind](measure, hits)
    if measure.kind in _NEEDS_GAIN:
        undefined = _ideal(hits, measure.cutoff) <= 0
    elif measure.kind in _NEEDS_RELEVANT:
        undefined = np.asarray(hits.n_rel) == 0
    else:
        undefined = np.zeros(hits.n_cells, dtype=bool)
    return values, undefined
