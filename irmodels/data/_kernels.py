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
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from irmodels.errors import DataFormatError

__all__ = [
    "GMAP_EPSILON",
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

#: The measure grammar, one form per line (``k`` a positive integer, ``p`` in (0, 1)).
KNOWN_MEASURES = (
    "AP", "AP@k", "P@k", "R@k", "Rprec", "RR", "nDCG", "nDCG@k", "RBP(p=0.8)", "RBP(0.8)",
    "RBP_res(p=0.8)", "GMAP", "num_rel", "num_ret", "num_rel_ret",
)

# kinds whose value needs at least one relevant document (else undefined)
_NEEDS_RELEVANT = {"AP", "GMAP", "R", "Rprec", "RR"}
_NEEDS_GAIN = {"nDCG"}

_KIND_CASE = {
    "ap": "AP", "p": "P", "r": "R", "rprec": "Rprec", "rr": "RR", "ndcg": "nDCG",
    "rbp": "RBP", "rbp_res": "RBP_res", "gmap": "GMAP", "num_rel": "num_rel",
    "num_ret": "num_ret", "num_rel_ret": "num_rel_ret",
}
_CUT_RE = re.compile(r"^(AP|P|R|nDCG)@([1-9][0-9]{0,6})$", re.IGNORECASE)
_PLAIN_RE = re.compile(r"^(AP|Rprec|RR|nDCG|GMAP|num_rel|num_ret|num_rel_ret)$", re.IGNORECASE)
_RBP_RE = re.compile(
    r"^(RBP|RBP_res)(?:\(\s*(?:p\s*=\s*)?([0-9]*\.?[0-9]+(?:[eE]-?[0-9]+)?)\s*\))?$", re.IGNORECASE
)
# trec_eval spellings -> canonical forms
_TREC_CUT_RE = re.compile(r"^(P|map_cut|ndcg_cut|recall)_([1-9][0-9]{0,6})$")
_TREC_PLAIN = {"map": "AP", "gm_map": "GMAP", "recip_rank": "RR", "ndcg": "nDCG",
               "rbp": "RBP(p=0.9)", "rbp_resid": "RBP_res(p=0.9)"}
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
        ``RBP_res``, ``num_rel``, ``num_ret`` or ``num_rel_ret``.
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

    def substitute(self, value: float) -> float:
        """The value an undefined cell takes under ``undefined=value``.

        ``value`` is on the scale of the measure, except for ``GMAP``, whose per-topic value is
        ``log(max(AP, 1e-5))``: there ``value`` is an AP, so that the default 0 gives
        trec_eval's ``log(1e-5)``.

        >>> parse_measure("GMAP").substitute(0.0) == math.log(1e-5)
        True
        """
        if self.kind == "GMAP":
            return math.log(max(float(value), GMAP_EPSILON))
        return float(value)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Measure({self.name!r})"


def _unknown(text: str) -> DataFormatError:
    forms = ["AP", "P@10", "R@100", "Rprec", "RR", "nDCG", "nDCG@10", "RBP(p=0.8)",
             "RBP_res(p=0.8)", "GMAP", "num_rel", "num_ret", "num_rel_ret", "map", "gm_map",
             "P_10", "ndcg_cut_10"]
    close = difflib.get_close_matches(str(text), forms, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DataFormatError(
        f"unknown measure {text!r}{hint}. Known measures: AP, AP@k, P@k, R@k, Rprec, RR, nDCG, "
        "nDCG@k, RBP(p=0.8) (or RBP(0.8)), RBP_res(p=0.8), GMAP, num_rel, num_ret, num_rel_ret, "
        "with k a positive integer and p in (0, 1); trec_eval names (map, gm_map, P_10, "
        "ndcg_cut_10, recip_rank, map_cut_10, recall_10) are accepted too."
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


_KERNELS: dict[str, Callable[[Measure, Hits], np.ndarray]] = {
    "AP": _ap, "GMAP": _gmap, "P": _precision, "R": _recall, "Rprec": _rprec, "RR": _rr,
    "nDCG": _ndcg, "RBP": _rbp, "RBP_res": _rbp_res,
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
    values = _KERNELS[measure.kind](measure, hits)
    if measure.kind in _NEEDS_GAIN:
        undefined = _ideal(hits, measure.cutoff) <= 0
    elif measure.kind in _NEEDS_RELEVANT:
        undefined = np.asarray(hits.n_rel) == 0
    else:
        undefined = np.zeros(hits.n_cells, dtype=bool)
    return values, undefined
