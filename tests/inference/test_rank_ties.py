"""Tie-aware tau_AP (Urbano & Marrero 2017), expected RBO under random tie-breaking and average
overlap: checked against brute-force averages over every order of the tied items and against
literal loop implementations of the definitions."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.inference.rank import average_overlap, rbo, tau_ap


def _series(values) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=float), index=[f"s{i}" for i in range(len(values))])


def _tie_orders(s: pd.Series):
    """Every way of breaking the ties of ``s`` (as untied score Series)."""
    groups: dict[float, list[str]] = {}
    for k, v in s.items():
        groups.setdefault(v, []).append(k)
    blocks = [list(itertools.permutations(g)) for g in groups.values()]
    for choice in itertools.product(*blocks):
        out = s.copy()
        for perm in choice:
            for rank, k in enumerate(perm):
                out[k] = s[k] - 1e-9 * rank
        yield out


def _tie_order_lists(s: pd.Series):
    """Every way of breaking the ties of ``s``, as ranked lists of names (best first): the
    orders of :func:`_tie_orders`, given to rbo and average_overlap as the rankings that
    they rank untied scores into (about 20 times faster than passing the score Series)."""
    groups: dict[float, list[str]] = {}
    for k, v in s.items():
        groups.setdefault(v, []).append(k)
    blocks = [list(itertools.permutations(groups[v])) for v in sorted(groups, reverse=True)]
    for choice in itertools.product(*blocks):
        yield [k for perm in choice for k in perm]


tied_scores = st.lists(st.integers(0, 3), min_size=3, max_size=6)
small_tied = st.lists(st.integers(0, 2), min_size=3, max_size=5)


@settings(max_examples=40, deadline=None)
@given(ref=st.permutations(list(range(7))), est=tied_scores)
def test_tau_ap_a_is_the_expectation_over_tie_orders(ref, est):
    n = len(est)
    x = _series(ref[:n])
    y = _series(est)
    if y.nunique() == 1:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.DataQualityWarning)
        brute = np.mean([tau_ap(x, yy) for yy in _tie_orders(y)])
    assert tau_ap(x, y, ties="a") == pytest.approx(brute, abs=1e-12)


def _slow_tau_ap_b(x: pd.Series, y: pd.Series) -> float:
    def one(u, v):  # u reference, walk v
        keys = list(u.index)
        total, count = 0.0, 0
        for i in keys:
            above_group = [j for j in keys if v[j] > v[i]]
            if not above_group:
                continue
            first = len(above_group) + 1  # 1-based start of i's tie group in v
            conc = sum(1 for j in above_group if u[j] > u[i])
            total += conc / (first - 1)
            count += 1
        return 2 * total / count - 1

    return 0.5 * (one(x, y) + one(y, x))


@settings(max_examples=40, deadline=None)
@given(a=tied_scores, b=tied_scores)
def test_tau_ap_b_matches_its_definition(a, b):
    n = min(len(a), len(b))
    x, y = _series(a[:n]), _series(b[:n])
    if x.nunique() == 1 or y.nunique() == 1:
        return
    assert tau_ap(x, y, ties="b") == pytest.approx(_slow_tau_ap_b(x, y), abs=1e-12)


def test_without_ties_the_variants_reduce_to_tau_ap(rng):
    x, y = _series(rng.permutation(12)), _series(rng.permutation(12))
    plain = tau_ap(x, y)
    assert tau_ap(x, y, ties="a") == pytest.approx(plain, abs=1e-12)
    assert tau_ap(x, y, ties="b") == pytest.approx(tau_ap(x, y, symmetric=True), abs=1e-12)
    assert tau_ap(x, x, ties="b") == pytest.approx(1.0)
    with pytest.raises(irm.DataFormatError, match="without ties"):
        tau_ap(_series([1, 1, 2]), _series([1, 2, 3]), ties="a")
    with pytest.raises(irm.ArgumentError, match="unknown ties"):
        tau_ap(x, y, ties="random")


@settings(max_examples=25, deadline=None)
@given(a=small_tied, b=small_tied, p=st.sampled_from([0.5, 0.8, 0.9]),
       depth=st.sampled_from([None, 2, 4]))
def test_expected_rbo_and_ao_average_over_tie_orders(a, b, p, depth):
    x = _series(a)
    y = _series(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.DataQualityWarning)
        runs = [(rbo(xx, yy, p=p, depth=depth), average_overlap(xx, yy, depth=depth))
                for xx in _tie_order_lists(x) for yy in _tie_order_lists(y)]
    got = rbo(x, y, p=p, depth=depth, ties="expected")
    assert got.ext == pytest.approx(np.mean([r.ext for r, _ in runs]), abs=1e-12)
    assert got.min == pytest.approx(np.mean([r.min for r, _ in runs]), abs=1e-12)
    assert average_overlap(x, y, depth=depth, ties="expected") == pytest.approx(
        np.mean([ao for _, ao in runs]), abs=1e-12)


def test_average_overlap_by_hand():
    # X_d = 0, 2, 3 for a top swap: AO@3 = (0 + 2/2 + 3/3) / 3
    assert average_overlap(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(2 / 3)
    # uneven lists: the shorter one's whole list is its prefix beyond its length
    assert average_overlap(["a"], ["b", "a"]) == pytest.approx((0 + 1 / 2) / 2)
    assert average_overlap(["a", "b", "c", "d"], ["a", "b", "x", "y"], depth=2) == 1.0
    # lists without ties: "expected" changes nothing
    r1 = rbo(["a", "b", "c"], ["c", "a", "b"], ties="expected")
    r2 = rbo(["a", "b", "c"], ["c", "a", "b"])
    assert (r1.min, r1.ext, r1.residual) == pytest.approx((r2.min, r2.ext, r2.residual))
    with pytest.raises(irm.ArgumentError, match="unknown ties"):
        average_overlap(["a"], ["a"], ties="a")


def test_expected_ties_on_trec_rankings():
    """P@10 means of TREC-8 have many ties: the expected RBO lies between the extremes of two
    opposite tie orders, and tau_AP,b is symmetric."""
    ap = irm.datasets.load("adhoc8", "AP").groupby("system", observed=True)["score"].mean()
    p10 = irm.datasets.load("adhoc8", "P@10").groupby("system", observed=True)["score"].mean()
    assert p10.nunique() < len(p10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.DataQualityWarning)
        fwd = rbo(ap, p10, p=0.9).ext
        rev = rbo(ap, p10.iloc[::-1], p=0.9).ext
    mid = rbo(ap, p10, p=0.9, ties="expected").ext
    assert min(fwd, rev) - 1e-3 <= mid <= max(fwd, rev) + 1e-3 or abs(fwd - rev) < 1e-3
    assert tau_ap(ap, p10, ties="b") == pytest.approx(tau_ap(p10, ap, ties="b"))
    assert -1 <= tau_ap(ap.rank(method="first"), p10, ties="a") <= 1
