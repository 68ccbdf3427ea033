"""Similarity of two rankings: Kendall's tau, tau_AP and rank-biased overlap.

Used to ask whether two measures, two collections or two experimental conditions rank the
same systems the same way (Voorhees 1998 calls tau >= 0.9 "equivalent" rankings).

Inputs are either scores or ranked lists:

- :func:`kendall_tau` and :func:`tau_ap` take *scores* per item: a Series indexed by system, a
  mapping, a long frame (mean score per system), or a fitted result with
  ``.marginal_means("system")`` (``AnovaResult``, ``MixedResult``). Higher score = better.
  Items present in only one input are dropped (with a warning).
- :func:`rbo` takes *ranked lists* (best first, possibly of different lengths, items need not
  be shared) or any of the score inputs above, which are turned into lists by descending score.

References: docs/methods.md: "Rank similarity"; M. G. Kendall, "A new measure of rank correlation",
Biometrika 1938 (tau-b: Kendall 1945); E. Yilmaz, J. A. Aslam and S. Robertson, "A new rank
correlation coefficient for information retrieval", SIGIR 2008; W. Webber, A. Moffat and
J. Zobel, "A similarity measure for indefinite rankings", ACM TOIS 28(4), 2010.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._validate import did_you_mean
from irmodels.data._columns import user_columns
from irmodels.data.frame import check_finite_scores, pooled_levels
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning

__all__ = ["RBOResult", "average_overlap", "kendall_tau", "rbo", "rbo_p_for_depth",
           "rbo_top_weight", "tau_ap"]


def _scores(x: object, what: str, names: Mapping[str, str] | None = None) -> pd.Series:
    """Scores per item (index = item name as str) from the accepted inputs; ``names`` maps
    ``system`` and ``score`` to the user's columns of a frame."""
    if names and isinstance(x, pd.DataFrame):
        x = user_columns(x, names, what=what)
    if hasattr(x, "marginal_means") and not isinstance(x, pd.DataFrame):
        s = x.marginal_means("system")
    elif isinstance(x, pd.Series):
        s = x
    elif isinstance(x, pd.DataFrame):
        if not {"system", "score"} <= set(x.columns):
            raise DataFormatError(
                f"{what} is a DataFrame without 'system' and 'score' columns; pass a long frame, "
                "a Series of scores indexed by system, or a fitted result."
            )
        # the mean would skip a NaN (and an infinity would rank first): refused, naming a or b
        check_finite_scores(x, what)
        pooled = pooled_levels(x)  # the means would pool them
        if pooled is not None:
            col, n, shown = pooled
            raise DataFormatError(
                f"{what} holds {n} {col}s ({shown}); the system means would pool them. Select "
                f"one first, e.g. {what}[{what}['{col}'] == '...']."
            )
        s = x.groupby("system", observed=True)["score"].mean()
    elif isinstance(x, Mapping):
        s = pd.Series(dict(x))
    else:
        raise DataFormatError(
            f"{what} must be scores per system (Series indexed by system, dict, long frame) or a "
            f"fitted result with marginal_means('system'); got {type(x).__name__}."
        )
    try:
        values = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError):
        raw = np.asarray(s, dtype=object)
        bad = []
        for i, v in enumerate(raw):
            try:
                float(v)
            except (TypeError, ValueError):
                bad.append(f"{s.index[i]}={v!r}")
        raise DataFormatError(
            f"{what} has non-numeric scores ({', '.join(bad[:5])}); give one number per "
            "system."
        ) from None
    s = pd.Series(values, index=[str(i) for i in s.index])
    if s.index.has_duplicates:
        raise DataFormatError(f"{what} names some systems more than once: "
                              f"{sorted(set(s.index[s.index.duplicated()]))[:5]}.")
    if s.isna().any():
        raise DataFormatError(f"{what} has missing scores for {list(s.index[s.isna()])[:5]}.")
    inf = np.isinf(s.to_numpy())
    if inf.any():
        raise DataFormatError(
            f"{what} has infinite scores for {list(s.index[inf])[:5]}; scores must be finite."
        )
    return s


def _common(a: object, b: object, names: Mapping[str, str] | None = None
            ) -> tuple[pd.Series, pd.Series]:
    sa, sb = _scores(a, "a", names), _scores(b, "b", names)
    common = sa.index[sa.index.isin(sb.index)]  # a's order
    if len(common) < 2:
        raise DataFormatError(
            f"the two rankings share {len(common)} system(s) (a has {len(sa)}, b has {len(sb)}); "
            "at least 2 are needed. Check that both use the same system names."
        )
    dropped = len(sa) + len(sb) - 2 * len(common)
    if dropped:
        warnings.warn(
            f"compared on the {len(common)} systems common to both rankings; {dropped} "
            "system(s) present in only one were dropped",
            DataQualityWarning,
            stacklevel=3,
        )
    return sa.loc[common], sb.loc[common]


def kendall_tau(a: object, b: object, *, system: str = "system", score: str = "score"
                ) -> float:
    """Kendall's tau-b between the system rankings given by two sets of scores.

    Parameters
    ----------
    a, b : Series, dict, long frame, or fitted result
        Scores per system (higher = better); compared on the systems common to both.
    system, score : str
        The names of the system and score columns of a long frame (as in
        :func:`irmodels.frame`), e.g. ``system="run", score="map"``; the topic column is not
        used (the mean per system is).

    Returns
    -------
    float
        tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)), with C and D the concordant and discordant
        pairs, n0 = n(n-1)/2 and n1, n2 the pairs tied in a and in b. Without ties it is tau-a.
        Equal to R's ``cor(a, b, method = "kendall")``. NaN when one ranking is constant.

    Raises
    ------
    DataFormatError
        Fewer than two systems in common; a missing (NaN), infinite or non-numeric score.

    Notes
    -----
    Computed in O(n log n) (Knight's algorithm, through ``scipy.stats.kendalltau``).
    A tau of 0.9 or more is the customary threshold for "equivalent" rankings
    (Voorhees, "Variations in relevance judgments...", SIGIR 1998). Kendall, Biometrika 1938
    and "The treatment of ties in ranking problems", Biometrika 1945.

    Examples
    --------
    >>> import pandas as pd
    >>> ap = pd.Series({"s1": 0.30, "s2": 0.25, "s3": 0.20, "s4": 0.10})
    >>> p10 = pd.Series({"s1": 0.50, "s2": 0.50, "s3": 0.40, "s4": 0.45})
    >>> round(kendall_tau(ap, p10), 4)
    0.5477
    """
    sa, sb = _common(a, b, {"system": system, "score": score})
    x, y = sa.to_numpy(), sb.to_numpy()
    if _all_tied(x, y, "Kendall's tau"):
        return float("nan")
    return float(stats.kendalltau(x, y, variant="b").statistic)


def _all_tied(x: np.ndarray, y: np.ndarray, what: str) -> bool:
    """True (with a warning: ``what`` is undefined) when a ranking ties every system."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        warnings.warn(
            f"one ranking gives every system the same score; {what} is undefined (NaN)",
            DataQualityWarning,
            stacklevel=3,
        )
        return True
    return False


def _order(s: pd.Series, what: str, stacklevel: int = 4) -> np.ndarray:
    """Positions sorted by descending score, ties kept in input order (with a warning)."""
    values = s.to_numpy()
    order = np.argsort(-values, kind="stable")
    n_tied = len(values) - len(np.unique(values))
    if n_tied:
        warnings.warn(
            f"{what} has tied scores ({n_tied} system(s) share a score with another); ties are "
            "broken by the order of the systems in the input",
            DataQualityWarning,
            stacklevel=stacklevel,
        )
    return order


def _tau_ap_one(ref: pd.Series, est: pd.Series) -> float:
    n = len(ref)
    ref_pos = np.empty(n, dtype=np.int64)
    ref_pos[_order(ref, "the reference ranking")] = np.arange(n)
    seq = ref_pos[_order(est, "the compared ranking")]  # reference position, in compared order
    above = np.tril(seq[None, :] < seq[:, None], k=-1)  # [i, j]: j above i in both rankings
    c = above.sum(axis=1)[1:]
    return float(2.0 / (n - 1) * np.sum(c / np.arange(1, n)) - 1.0)


def _tie_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the first (1-based) position of its tie group in descending order, and the
    group's size."""
    order = np.argsort(-values, kind="stable")
    sorted_v = values[order]
    new = np.ones(len(values), dtype=bool)
    new[1:] = sorted_v[1:] != sorted_v[:-1]
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new) + 1
    sizes = np.diff(np.append(np.flatnonzero(new), len(values)))
    first = np.empty(len(values), dtype=np.int64)
    size = np.empty(len(values), dtype=np.int64)
    first[order] = starts[group]
    size[order] = sizes[group]
    return first, size


def _tau_ap_a(x: np.ndarray, y: np.ndarray) -> float:
    """Urbano & Marrero's tau_AP,a: reference x without ties, ties in y averaged over their
    orders (the expected tau_AP when y's ties are broken at random)."""
    n = len(x)
    p, t = _tie_ranks(y)
    above_y = p[None, :] < p[:, None]  # [i, j]: j's group is above i's in y
    above_x = x[None, :] > x[:, None]  # [i, j]: j above i in x
    c_above = (above_y & above_x).sum(axis=1)
    total = 0.0
    for pi, ti, ci in zip(p, t, c_above):
        k = np.arange(1, ti + 1)
        if pi != 1:
            total += ci * float(np.sum(1.0 / (pi + k - 2))) / ti
        kk = np.arange(1, ti)
        total += float(np.sum(kk / (pi + kk - 1))) / (2.0 * ti)
    return float(2.0 / (n - 1) * total - 1.0)


def _tau_ap_b_one(x: np.ndarray, y: np.ndarray) -> float:
    p, _ = _tie_ranks(y)
    not_top = p != 1
    if not not_top.any():
        return float("nan")
    above = (p[None, :] < p[:, None]) & (x[None, :] > x[:, None])
    c = above.sum(axis=1)[not_top] / (p[not_top] - 1)
    return float(2.0 / not_top.sum() * c.sum() - 1.0)


def tau_ap(a: object, b: object, *, symmetric: bool = False,
           ties: Literal["input", "a", "b"] = "input", system: str = "system",
           score: str = "score") -> float:
    r"""AP rank correlation tau_AP (Yilmaz, Aslam & Robertson 2008), top-weighted.

    Parameters
    ----------
    a : Series, dict, long frame, or fitted result
        Scores of the reference ("true") ranking.
    b : same kinds
        Scores of the ranking being compared with it.
    symmetric : bool
        Return the average of ``tau_ap(a, b)`` and ``tau_ap(b, a)`` (the symmetric version,
        for when neither ranking is the reference). Ignored by ``ties="b"`` (symmetric by
        definition).
    ties : {"input", "a", "b"}
        How tied scores are treated (Urbano & Marrero, ICTIR 2017). ``"input"`` (default):
        ordered by their position in the input, with a warning. ``"a"``: tau_AP,a, for when
        ``a`` is the true ranking (without ties) and ``b`` an estimate whose ties are not
        meaningful: the expected tau_AP over the orders of ``b``'s tied systems. ``"b"``:
        tau_AP,b, for when ties in both rankings mean equality: a pair tied in either ranking
        is never concordant, each system is compared with those strictly above its tie group
        in the other ranking, and the two directions are averaged (NaN, with a warning, when
        one ranking ties every system, as :func:`kendall_tau`). Without ties ``"a"`` equals
        tau_AP and ``"b"`` the symmetric tau_AP.
    system, score : str
        The names of the system and score columns of a long frame, as in
        :func:`kendall_tau`.

    Returns
    -------
    float
        ``tau_AP = 2 / (n - 1) * sum_{i=2..n} C(i) / (i - 1) - 1``, where ``b``'s ranking is
        walked from the top and ``C(i)`` counts the systems above position ``i`` in ``b`` that
        are also above that system in ``a``. 1 for identical rankings, -1 for reversed ones;
        swaps near the top cost more than swaps near the bottom (unlike Kendall's tau).

    Notes
    -----
    tau_AP is defined for rankings without ties. With ``ties="input"`` tied scores are
    ordered by their position in the input (stable sort) and a
    :class:`~irmodels.errors.DataQualityWarning` says so; ``ties="a"`` and ``"b"`` are the
    tie-aware coefficients of J. Urbano and M. Marrero, "The treatment of ties in AP
    correlation", ICTIR 2017. O(n^2) time and memory.

    Examples
    --------
    >>> import pandas as pd
    >>> truth = pd.Series({"s1": 4.0, "s2": 3.0, "s3": 2.0, "s4": 1.0})
    >>> top_swap = pd.Series({"s1": 3.0, "s2": 4.0, "s3": 2.0, "s4": 1.0})
    >>> bottom_swap = pd.Series({"s1": 4.0, "s2": 3.0, "s3": 1.0, "s4": 2.0})
    >>> round(tau_ap(truth, top_swap), 4), round(tau_ap(truth, bottom_swap), 4)
    (0.3333, 0.7778)
    >>> round(kendall_tau(truth, top_swap), 4), round(kendall_tau(truth, bottom_swap), 4)
    (0.6667, 0.6667)

    Ties in the estimate, averaged over their orders:

    >>> tied = pd.Series({"s1": 3.0, "s2": 3.0, "s3": 2.0, "s4": 1.0})
    >>> round(tau_ap(truth, tied, ties="a"), 4), round(tau_ap(truth, tied, ties="b"), 4)
    (0.6667, 0.6667)
    """
    if ties not in ("input", "a", "b"):
        raise ArgumentError(f"unknown ties {ties!r}{did_you_mean(ties, ('input', 'a', 'b'))}; "
                            "choose 'input', 'a' or 'b'.")
    sa, sb = _common(a, b, {"system": system, "score": score})
    if ties == "a":
        x = sa.to_numpy()
        if len(np.unique(x)) < len(x):
            raise DataFormatError(
                "tau_AP,a (ties='a') needs a reference ranking a without ties; a has tied "
                "scores. Use ties='b' when ties in both rankings mean equality.")
        return _tau_ap_a(x, sb.to_numpy())
    if ties == "b":
        x, y = sa.to_numpy(), sb.to_numpy()
        if _all_tied(x, y, "tau_AP,b"):  # no system is below another's tie group
            return float("nan")
        return 0.5 * (_tau_ap_b_one(x, y) + _tau_ap_b_one(y, x))
    if symmetric:
        return 0.5 * (_tau_ap_one(sa, sb) + _tau_ap_one(sb, sa))
    return _tau_ap_one(sa, sb)


# ---------------------------------------------------------------------------------------- RBO


@dataclass(frozen=True)
class RBOResult(ResultDisplay):
    """Rank-biased overlap of two (possibly truncated) rankings.

    Attributes
    ----------
    min : float
        Lower bound RBO_min: no further overlap beyond the seen prefixes.
    residual : float
        RBO_res: the most the unseen part can add (``max - min``).
    ext : float
        RBO_ext: the point estimate extrapolating the agreement seen at the end of the lists.
    p : float
        Persistence parameter.
    depth : int
        Length of the longer list evaluated (l); ``short`` the shorter one (s).
    short : int
        Length of the shorter list evaluated.
    """

    min: float
    residual: float
    ext: float
    p: float
    depth: int
    short: int

    @property
    def max(self) -> float:
        """Upper bound ``min + residual``."""
        return self.min + self.residual

    def to_frame(self) -> pd.DataFrame:
        """One-row DataFrame with columns ``min, residual, max, ext, p, depth, short``."""
        return pd.DataFrame(
            [[self.min, self.residual, self.max, self.ext, self.p, self.depth, self.short]],
            columns=["min", "residual", "max", "ext", "p", "depth", "short"],
        )

    def _display_title(self) -> str:
        return f"Rank-biased overlap (p = {self.p:g}, depths {self.short} and {self.depth})"

    def _display_tables(self):
        return [("RBO", self.to_frame().set_index(pd.Index(["RBO"])))]

    def __repr__(self) -> str:
        return (
            f"<RBOResult min={self.min:.4f}, residual={self.residual:.4f}, ext={self.ext:.4f}, "
            f"p={self.p:g}, depth={self.depth}>"
        )


def _as_list(x: object, what: str, stacklevel: int = 4,
             names: Mapping[str, str] | None = None) -> list[str]:
    if isinstance(x, (pd.Series, Mapping, pd.DataFrame)) or hasattr(x, "marginal_means"):
        s = _scores(x, what, names)
        return [str(i) for i in s.index[_order(s, what, stacklevel)]]
    if isinstance(x, str) or not isinstance(x, (Sequence, np.ndarray, pd.Index)):
        raise DataFormatError(
            f"{what} must be a ranked list of items (best first) or scores per item; "
            f"got {type(x).__name__}."
        )
    items = [str(i) for i in x]
    if len(set(items)) != len(items):
        dup = sorted({i for i in items if items.count(i) > 1})[:5]
        raise DataFormatError(
            f"{what} lists item(s) {dup} more than once; a ranking names each item once."
        )
    return items


def _positions(x: object, what: str, ties: str, names: Mapping[str, str] | None = None
               ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Items in ranked order with the 0-based start and size of each one's tie group."""
    if ties == "expected" and (isinstance(x, (pd.Series, Mapping, pd.DataFrame))
                               or hasattr(x, "marginal_means")):
        sc = _scores(x, what, names)
        values = sc.to_numpy()
        first, size = _tie_ranks(values)
        order = np.argsort(first, kind="stable")
        return [str(sc.index[i]) for i in order], first[order] - 1.0, size[order].astype(float)
    items = _as_list(x, what, stacklevel=6, names=names)  # warn at rbo's / average_overlap's caller
    return items, np.arange(len(items), dtype=np.float64), np.ones(len(items))


def _overlaps(a: object, b: object, depth: int | None, ties: str,
              names: Mapping[str, str] | None = None) -> tuple[np.ndarray, int, int]:
    """X_d for d = 1..l (the shorter list S contributes its s items beyond depth s)."""
    if ties not in ("input", "expected"):
        raise ArgumentError(f"unknown ties {ties!r}{did_you_mean(ties, ('input', 'expected'))}; "
                            "choose 'input' or 'expected'.")
    la, sa, ta = _positions(a, "a", ties, names)
    lb, sb, tb = _positions(b, "b", ties, names)
    if depth is not None:
        if not (isinstance(depth, (int, np.integer)) and depth >= 1):
            raise DataFormatError(f"depth must be a positive integer; got {depth!r}.")
    na = len(la) if depth is None else min(len(la), depth)
    nb = len(lb) if depth is None else min(len(lb), depth)
    if not na or not nb:
        raise DataFormatError("RBO needs two non-empty rankings; one of them is empty.")
    s, l_ = min(na, nb), max(na, nb)
    pos_b = {item: i for i, item in enumerate(lb)}
    shared = [(i, pos_b[item]) for i, item in enumerate(la) if item in pos_b]
    d = np.arange(1, l_ + 1, dtype=np.float64)
    da = np.minimum(d, na) if na <= nb else d  # the shorter list stops growing at s
    db = np.minimum(d, nb) if nb < na else d
    if not shared:
        return np.zeros(l_), s, l_
    ia = np.array([i for i, _ in shared])
    ib = np.array([j for _, j in shared])
    pa = np.clip((da[None, :] - sa[ia][:, None]) / ta[ia][:, None], 0.0, 1.0)
    pb = np.clip((db[None, :] - sb[ib][:, None]) / tb[ib][:, None], 0.0, 1.0)
    return (pa * pb).sum(axis=0), s, l_


def rbo(a: object, b: object, *, p: float = 0.9, depth: int | None = None,
        ties: Literal["input", "expected"] = "input", system: str = "system",
        score: str = "score") -> RBOResult:
    r"""Rank-biased overlap (Webber, Moffat & Zobel 2010) with its bounds.

    Parameters
    ----------
    a, b : sequence of items, or scores per item
        Ranked lists, best first (the lengths may differ and the items need not be the same),
        or scores (Series, dict, long frame, fitted result), ranked by descending score.
    p : float in (0, 1)
        Persistence: the user model looks at depth d + 1 with probability p; the expected depth
        is ``1 / (1 - p)`` (see :func:`rbo_p_for_depth`).
    depth : int, optional
        Evaluate only the first ``depth`` items of each list.
    ties : {"input", "expected"}
        Score inputs with tied scores: ``"input"`` (default) orders tied items by their position
        in the input, with a warning; ``"expected"`` averages over the orders of the ties: every
        overlap X_d is replaced by its expectation when each list's ties are broken uniformly
        at random (independently in the two lists). RBO_min and RBO_ext are linear in the
        X_d, so they are the exact expectations; the residual uses the expected X_l.
    system, score : str
        The names of the system and score columns when ``a`` or ``b`` is a long frame (as in
        :func:`irmodels.frame`), e.g. ``system="run", score="map"``.

    Returns
    -------
    RBOResult
        ``min``, ``residual``, ``ext`` (and ``max``), ``p``, ``depth`` (l, the longer list's
        evaluated length) and ``short`` (s).

    Notes
    -----
    With X_d the overlap of the top d of both lists (the shorter list S contributes its s items
    for d > s), A_d = X_d / d and RBO = (1 - p) sum_d p^{d-1} A_d (eq. 7):

    - RBO_min = (1-p)/p [ sum_{d=1}^{l} X_d p^d / d + X_l (ln(1/(1-p)) - sum_{d=1}^{l} p^d/d) ]
      (eq. 11, uneven lengths as in section 4.3): no overlap beyond what is seen.
    - RBO_max assumes every unseen item matches: X_d + (d - s) for s < d <= l,
      2d - l - s + X_l for l < d <= f = l + s - X_l, and d beyond f; RBO_res = RBO_max - RBO_min.
    - RBO_ext = (1-p)/p [ sum_{d=1}^{l} X_d p^d / d + sum_{d=s+1}^{l} X_s (d - s) p^d / (s d) ]
      + ((X_l - X_s) / l + X_s / s) p^l (eq. 32): the agreement at the end of the seen lists is
      extrapolated to infinite depth.

    Ties (score inputs): with ``ties="input"`` RBO is the untied measure on the input order of
    tied items (a :class:`~irmodels.errors.DataQualityWarning` says so); with
    ``ties="expected"``, ``E[X_d] = sum_i P_a(i in top d) P_b(i in top d)`` where an item of a
    tie group occupying positions p+1..p+t is in the top d with probability
    ``clip((d - p) / t, 0, 1)``. This is the expected RBO under random tie-breaking; the
    treatments of Webber et al. (section 5) and Corsi & Urbano (SIGIR 2024), which let tied
    items share a rank, are not implemented.

    Examples
    --------
    Identical lists: ext = max = 1, the minimum is what three items guarantee.

    >>> r = rbo(["a", "b", "c"], ["a", "b", "c"], p=0.9)
    >>> round(r.min, 4), round(r.residual, 4), round(r.ext, 4)
    (0.5225, 0.4775, 1.0)

    A swap at the top of uneven lists:

    >>> r = rbo(["a", "b"], ["b", "a", "c"], p=0.9)
    >>> round(r.min, 4), round(r.max, 4), round(r.ext, 4)
    (0.3117, 0.9, 0.9)

    Tied scores, averaged over their orders:

    >>> x = {"a": 3.0, "b": 2.0, "c": 1.0}
    >>> y = {"a": 2.0, "b": 2.0, "c": 1.0}
    >>> round(rbo(x, y, p=0.9, ties="expected").ext, 4)  # mean of 1.0 (a, b) and 0.9 (b, a)
    0.95
    """
    if not (isinstance(p, (int, float)) and 0 < p < 1):
        raise DataFormatError(f"p must be in (0, 1); got {p!r}. Try rbo_p_for_depth(10) = 0.9.")
    X, s, l_ = _overlaps(a, b, depth, ties, {"system": system, "score": score})
    d = np.arange(1, l_ + 1, dtype=np.float64)
    pd_ = p**d
    Xs, Xl = X[s - 1], X[l_ - 1]
    k = (1.0 - p) / p
    ln_term = math.log(1.0 / (1.0 - p)) - float(np.sum(pd_ / d))
    base = float(np.sum(X * pd_ / d))
    rbo_min = k * (base + Xl * ln_term)

    tail = d > s
    ext_mid = float(np.sum((Xs * (d - s) / (s * d) * pd_)[tail]))
    rbo_ext = k * (base + ext_mid) + ((Xl - Xs) / l_ + Xs / s) * p**l_

    x_max = np.where(tail, X + (d - s), X)
    f = int(round(l_ + s - Xl))
    dd = np.arange(l_ + 1, f + 1, dtype=np.float64)
    sec3 = float(np.sum((2 * dd - l_ - s + Xl) / dd * p**dd)) + p ** (f + 1) / (1.0 - p)
    rbo_max = k * (float(np.sum(x_max * pd_ / d)) + sec3)
    return RBOResult(
        min=float(rbo_min), residual=float(rbo_max - rbo_min), ext=float(rbo_ext), p=float(p),
        depth=l_, short=s,
    )


def average_overlap(a: object, b: object, *, depth: int | None = None,
                    ties: Literal["input", "expected"] = "input", system: str = "system",
                    score: str = "score") -> float:
    r"""Average overlap of two rankings: ``AO@k = (1/k) sum_{d=1}^{k} X_d / d``.

    The top-weighted overlap measure that RBO generalises (Fagin, Kumar & Sivakumar 2003; Webber,
    Moffat & Zobel 2010, section 3): the proportion of the top d items the two rankings share,
    averaged over depths 1..k. Unlike RBO it is not convergent: its value depends on ``k``.

    Parameters
    ----------
    a, b : sequence of items, or scores per item
        As in :func:`rbo`.
    depth : int, optional
        k (default: the longer list's length). When one list is shorter than d, its whole
        list is its prefix.
    ties : {"input", "expected"}
        As in :func:`rbo`: ``"expected"`` averages over random orders of tied scores (exact,
        AO being linear in the X_d).
    system, score : str
        As in :func:`rbo`: the system and score columns of a long frame.

    Returns
    -------
    float
        In [0, 1]; 1 for identical prefixes.

    Examples
    --------
    >>> average_overlap(["a", "b", "c"], ["b", "a", "c"])
    0.6666666666666666
    >>> round(average_overlap({"a": 2.0, "b": 2.0, "c": 1.0}, ["a", "b", "c"], ties="expected"), 4)
    0.8333
    """
    X, _, l_ = _overlaps(a, b, depth, ties, {"system": system, "score": score})
    d = np.arange(1, l_ + 1, dtype=np.float64)
    return float(np.mean(X / d))


def rbo_p_for_depth(expected_depth: float) -> float:
    """The RBO persistence p whose user model looks ``expected_depth`` items deep on average.

    In RBO's user model the depth examined is geometric, with mean ``1 / (1 - p)``, so
    ``p = 1 - 1 / expected_depth`` (Webber, Moffat & Zobel 2010, section 4.1).

    Examples
    --------
    >>> rbo_p_for_depth(10), rbo_p_for_depth(100)
    (0.9, 0.99)
    """
    if isinstance(expected_depth, (bool, np.bool_)) or not (
            isinstance(expected_depth, (int, float, np.integer, np.floating))
            and expected_depth > 1):
        raise DataFormatError(
            f"expected_depth must be a number greater than 1; got {expected_depth!r}."
        )
    p = 1.0 - 1.0 / float(expected_depth)
    if not p < 1.0:  # inf, or so deep that 1 - 1/depth rounds to 1: rbo refuses p = 1
        raise DataFormatError(
            f"expected_depth={expected_depth!r} gives p = 1 in double precision, which RBO "
            "cannot use (p must be below 1); give an expected depth below 1e15.")
    return p


def rbo_top_weight(p: float, depth: int) -> float:
    """Share of RBO's total weight that falls on the top ``depth`` ranks (eq. 21).

    ``W(1:d) = 1 - p^(d-1) + (1-p)/p * d * (ln(1/(1-p)) - sum_{i=1}^{d-1} p^i / i)``; the paper
    notes that p = 0.9 puts about 86% of the weight on the top 10.

    Examples
    --------
    >>> round(rbo_top_weight(0.9, 10), 4)
    0.8556
    """
    if not 0 < p < 1:
        raise DataFormatError(f"p must be in (0, 1); got {p!r}.")
    i = np.arange(1, depth, dtype=np.float64)
    return float(
        1 - p ** (depth - 1)
        + (1 - p) / p * depth * (math.log(1 / (1 - p)) - float(np.sum(p**i / i)))
    )
