"""Rank similarity: Kendall's tau against R, tau_AP and RBO against hand-worked values and slow loops."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DataFormatError, DataQualityWarning
from irmodels.inference.rank import kendall_tau, rbo, rbo_p_for_depth, rbo_top_weight, tau_ap

REF = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def ref() -> dict:
    return json.loads((REF / "pairwise.json").read_text())["kendall"]


def _means(shared_data: Path, name: str) -> pd.Series:
    # rounded as in pairwise.R, so that float noise in the means cannot make or break ties
    return pd.read_csv(shared_data / "ir-scores" / name).mean().round(12)


# ------------------------------------------------------------------------- Kendall's tau


def test_kendall_against_r(ref, shared_data) -> None:
    ap = _means(shared_data, "adhoc5_ap.csv")
    rr = _means(shared_data, "adhoc5_rr.csv")
    p10 = _means(shared_data, "adhoc5_p10.csv")
    assert len(np.unique(p10)) < len(p10)  # the P@10 means have ties: tau-b matters
    assert kendall_tau(ap, rr) == pytest.approx(ref["ap_rr"], abs=1e-12)
    assert kendall_tau(ap, p10) == pytest.approx(ref["ap_p10"], abs=1e-12)
    x = pd.Series(ref["small_x"], index=list("abcdefgh"))
    y = pd.Series(ref["small_y"], index=list("abcdefgh"))
    assert kendall_tau(x, y) == pytest.approx(ref["small"], abs=1e-12)


def _slow_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if sx == 0 and sy == 0:
            tx += 1
            ty += 1
        elif sx == 0:
            tx += 1
        elif sy == 0:
            ty += 1
        elif sx == sy:
            c += 1
        else:
            d += 1
    n0 = len(x) * (len(x) - 1) / 2
    return (c - d) / math.sqrt((n0 - tx) * (n0 - ty))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=3, max_size=25))
def test_kendall_matches_slow_tau_b(values) -> None:
    x = np.array([v[0] for v in values], dtype=float)
    y = np.array([v[1] for v in values], dtype=float)
    idx = [f"s{i}" for i in range(len(x))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        got = kendall_tau(pd.Series(x, index=idx), pd.Series(y, index=idx))
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(_slow_tau_b(x, y), abs=1e-12)
        assert kendall_tau(pd.Series(y, index=idx), pd.Series(x, index=idx)) == pytest.approx(got)


class _FakeResult:
    """Stands for AnovaResult / MixedResult: anything with marginal_means('system')."""

    def __init__(self, means: dict[str, float]):
        self._means = pd.Series(means)

    def marginal_means(self, factor: str) -> pd.Series:
        assert factor == "system"
        return self._means


def test_kendall_inputs_and_common_systems() -> None:
    a = _FakeResult({"s1": 0.3, "s2": 0.2, "s3": 0.1, "s4": 0.05})
    long = irm.frame(pd.DataFrame({"topic": [1, 1, 1, 2, 2, 2], "system": ["s1", "s2", "s3"] * 2,
                                   "score": [0.5, 0.1, 0.3, 0.7, 0.1, 0.1]}))
    with pytest.warns(DataQualityWarning, match="3 systems common"):
        tau = kendall_tau(a, long)  # s4 only in a; means s1 .6, s2 .1, s3 .2
    assert tau == pytest.approx(1 / 3)
    assert kendall_tau({"x": 1, "y": 2}, {"x": 1, "y": 2}) == 1.0
    with pytest.raises(DataFormatError, match="share 0 system"):
        kendall_tau({"a": 1, "b": 2}, {"c": 1, "d": 2})
    with pytest.raises(DataFormatError, match="must be scores"):
        kendall_tau([1, 2, 3], {"a": 1})


# ------------------------------------------------------------------------------- tau_AP


def _slow_tau_ap(truth: list[str], est: list[str]) -> float:
    """Yilmaz et al. 2008, eq. 2, literally: walk the estimated list from the top."""
    n = len(est)
    total = 0.0
    for i in range(1, n):
        item = est[i]
        correct = sum(truth.index(est[j]) < truth.index(item) for j in range(i))
        total += correct / i
    return 2.0 / (n - 1) * total - 1.0


def _scores(order: list[str]) -> pd.Series:
    return pd.Series({item: float(len(order) - k) for k, item in enumerate(order)})


@settings(max_examples=60, deadline=None)
@given(st.permutations([f"s{i}" for i in range(9)]), st.permutations([f"s{i}" for i in range(9)]))
def test_tau_ap_matches_definition(truth, est) -> None:
    got = tau_ap(_scores(truth), _scores(est))
    assert got == pytest.approx(_slow_tau_ap(truth, est), abs=1e-12)
    assert -1 - 1e-12 <= got <= 1 + 1e-12
    sym = tau_ap(_scores(truth), _scores(est), symmetric=True)
    assert sym == pytest.approx(0.5 * (got + _slow_tau_ap(est, truth)), abs=1e-12)


def test_tau_ap_hand_values() -> None:
    truth = ["a", "b", "c", "d", "e"]
    assert tau_ap(_scores(truth), _scores(truth)) == pytest.approx(1.0)
    assert tau_ap(_scores(truth), _scores(truth[::-1])) == pytest.approx(-1.0)
    # swap of the top two: C = (0, 2, 3, 4) -> 2/4 * (0 + 1 + 1 + 1) - 1 = 0.5
    assert tau_ap(_scores(truth), _scores(["b", "a", "c", "d", "e"])) == pytest.approx(0.5)
    # swap of the bottom two: C = (1, 2, 3, 3) -> 2/4 * (1 + 1 + 1 + 3/4) - 1 = 0.875
    assert tau_ap(_scores(truth), _scores(["a", "b", "c", "e", "d"])) == pytest.approx(0.875)
    # Kendall's tau sees both swaps alike: 1 - 2 * 1 / 10 = 0.8
    assert kendall_tau(_scores(truth), _scores(["b", "a", "c", "d", "e"])) == pytest.approx(0.8)


def test_tau_ap_ties_warn() -> None:
    with pytest.warns(DataQualityWarning, match="tied scores"):
        tau_ap({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 1.0, "b": 0.5, "c": 0.0})


# ---------------------------------------------------------------------------------- RBO
# Worked by hand (p = 0.9). Notation: X_d overlap at depth d, s/l short/long length.
#
# (1) identical lists abc/abc: X = 1, 2, 3.
#     min = (1-p)/p * (p + p^2 + p^3 + 3 (ln 10 - p - p^2/2 - p^3/3))
#         = (1/9) * (2.439 + 3 * (2.302585 - 1.548)) = 0.522528...
#     ext = (1-p)/p * (p + p^2 + p^3) + p^3 = (1-p)(1+p+p^2) + p^3 = 1; max = 1 too.
# (2) disjoint lists ab/cd: X = 0, 0. min = ext = 0. At most the unseen items match:
#     X_3 <= 2, X_4 <= 4 (f = l + s - X_l = 4), so
#     max = (1-p)[(2/3) p^2 + p^3] + p^4 = 0.1 * (0.54 + 0.729) + 0.6561 = 0.7830.
# (3) uneven ab / bac (s = 2, l = 3): X = 0, 2, 2.
#     min = (1/9) * (p^2 + (2/3) p^3 + 2 (ln 10 - 1.548)) = (1/9)(0.81 + 0.486 + 1.50917) = 0.311686
#     ext: agreement 0 at depth 1, then 1 forever -> ext = 1 - (1-p) = p = 0.9; max = 0.9 too.

HAND = [
    (list("abc"), list("abc"), 0.5225284, 1.0, 1.0),
    (list("ab"), list("cd"), 0.0, 0.7830, 0.0),
    (list("ab"), list("bac"), 0.3116856, 0.9, 0.9),
]


@pytest.mark.parametrize(("a", "b", "lo", "hi", "ext"), HAND)
def test_rbo_hand_worked(a, b, lo, hi, ext) -> None:
    for x, y in ((a, b), (b, a)):  # symmetric in its arguments
        r = rbo(x, y, p=0.9)
        assert r.min == pytest.approx(lo, abs=1e-6)
        assert r.max == pytest.approx(hi, abs=1e-6)
        assert r.ext == pytest.approx(ext, abs=1e-6)
        assert r.residual == pytest.approx(hi - lo, abs=1e-6)


def _direct_sum(x: list[str], y: list[str], p: float, depth: int = 800) -> float:
    """RBO = (1-p) sum_d p^(d-1) |x[:d] & y[:d]| / d, summed directly (x, y made long)."""
    total, sx, sy, overlap = 0.0, set(), set(), 0
    for d in range(1, depth + 1):
        u = x[d - 1] if d <= len(x) else None
        v = y[d - 1] if d <= len(y) else None
        if u is not None:
            overlap += u in sy
            sx.add(u)
        if v is not None:
            overlap += v in sx
            sy.add(v)
        total += (1 - p) * p ** (d - 1) * overlap / d
    return total


def _slow_bounds(a: list[str], b: list[str], p: float) -> tuple[float, float, float]:
    s_, l_ = (a, b) if len(a) <= len(b) else (b, a)
    # min: the seen lists, nothing more ever matches
    lo = _direct_sum(s_, l_, p)
    # max: extend S with L's unmatched items (in L's order) and L with S's, then shared fresh items
    fresh = [f"#fresh{i}" for i in range(800)]
    s_ext = s_ + [i for i in l_ if i not in s_] + fresh
    l_ext = l_ + [i for i in s_ if i not in l_] + fresh
    hi = _direct_sum(s_ext, l_ext, p)
    # ext by eq. 32 of the paper, written out term by term
    s, l = len(s_), len(l_)
    X = [len(set(s_[:d]) & set(l_[:d])) for d in range(1, l + 1)]
    xs, xl = X[s - 1], X[l - 1]
    sum1 = sum(X[d - 1] / d * p**d for d in range(1, l + 1))
    sum2 = sum(xs * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    ext = (1 - p) / p * (sum1 + sum2) + ((xl - xs) / l + xs / s) * p**l
    return lo, hi, ext


items = st.lists(st.sampled_from([f"d{i}" for i in range(12)]), min_size=1, max_size=12, unique=True)


@settings(max_examples=50, deadline=None)
@given(items, items, st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_rbo_matches_direct_summation(a, b, p) -> None:
    r = rbo(a, b, p=p)
    lo, hi, ext = _slow_bounds(a, b, p)
    assert r.min == pytest.approx(lo, abs=1e-9)
    assert r.max == pytest.approx(hi, abs=1e-9)
    assert r.ext == pytest.approx(ext, abs=1e-12)
    assert -1e-12 <= r.min <= r.ext + 1e-12 <= r.max + 2e-12 <= 1 + 3e-12
    assert r.depth == max(len(a), len(b)) and r.short == min(len(a), len(b))


def test_rbo_depth_scores_and_errors() -> None:
    a, b = list("abcdefgh"), list("abcdhgfe")
    assert rbo(a, b, depth=4).ext == pytest.approx(1.0)
    assert rbo(a, b, depth=4).depth == 4
    scores = pd.Series({"x": 3.0, "y": 2.0, "z": 1.0})
    assert rbo(scores, ["x", "y", "z"]).ext == pytest.approx(1.0)
    with pytest.raises(DataFormatError, match="more than once"):
        rbo(["a", "a"], ["a"])
    with pytest.raises(DataFormatError, match="p must be in"):
        rbo(a, b, p=1.0)
    with pytest.raises(DataFormatError, match="non-empty"):
        rbo([], b)
    assert "<RBOResult min=" in repr(rbo(a, b))
    assert "Rank-biased overlap" in rbo(a, b).summary()


def test_rbo_p_for_depth_and_weight() -> None:
    assert rbo_p_for_depth(10) == pytest.approx(0.9)
    assert 1 / (1 - rbo_p_for_depth(37.5)) == pytest.approx(37.5)
    with pytest.raises(DataFormatError):
        rbo_p_for_depth(1)
    # the weight of the top d ranks, by direct summation of the per-depth weights
    p, d = 0.9, 10
    w = sum((1 - p) / p * p**i / i * min(i, d) / 1 for i in range(1, 5000) if i <= d)
    w += sum((1 - p) / p * p**i * d / i for i in range(d + 1, 5000))
    assert rbo_top_weight(p, d) == pytest.approx(w, abs=1e-12)
    assert rbo_top_weight(0.9, 10) == pytest.approx(0.8556, abs=1e-4)  # "86%" in the paper


def test_kendall_and_rbo_take_fitted_results(shared_data) -> None:
    ap = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc5_ap.csv"))
    rr = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc5_rr.csv"))
    fit_ap, fit_rr = irm.anova("score ~ topic + system", ap), irm.anova("score ~ topic + system", rr)
    by_means = kendall_tau(_means(shared_data, "adhoc5_ap.csv"), _means(shared_data, "adhoc5_rr.csv"))
    assert kendall_tau(fit_ap, fit_rr) == pytest.approx(by_means, abs=1e-12)
    assert kendall_tau(ap, rr) == pytest.approx(by_means, abs=1e-12)  # long frames
    r1, r2 = rbo(fit_ap, fit_rr, p=0.9), rbo(ap, rr, p=0.9)
    assert (r1.min, r1.ext) == pytest.approx((r2.min, r2.ext))
