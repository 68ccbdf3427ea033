"""irm.studies.test_errors against Urbano, Lima & Hanjalic (SIGIR 2019), their type I rates.

The paper's rates (``tests/reference/urbano2019_type1.json``: AP over TREC adhoc5-8, two-tailed,
25, 50 and 100 topics, alpha 0.01 and 0.05, 1,667,000 trials each) are copied from its repository;
irmodels' side (``tests/reference/urbano2019_type1_irmodels.json``) comes from the seeded script
``tests/reference/urbano2019_type1.py`` (48,000 trials per size, pooled over the four collections
in proportion to their runs, as the paper draws them). The long run is committed; one short run of
the script is repeated here bit for bit.

Tolerances. Both rates are binomial proportions: SE = sqrt(p (1 - p) / n) each, combined in
quadrature, and three of them are allowed. On top, a model allowance, because the two simulators
differ (docs/test_errors.md, "Against the paper"): the paper passes both runs of a pair through
run 1's margin and joins them with a bivariate copula of a chosen family; irmodels gives each run
its own margin moved to a common mean and joins all runs with a Gaussian copula.

- t, bootstrap, permutation test the mean difference, which is exactly zero in both designs: their
  rates depend on the simulators only through the shape of the differences (the tests'
  approximations). Allowance: a tenth of alpha (0.005 at 0.05), below which no conclusion about a
  test's calibration changes.
- Wilcoxon tests symmetry about zero, and the sign test a zero median; neither design implies
  them, so their rates grow with the asymmetry of the differences, which the copula family and the
  margins set. They are not compared number to number: with the Gaussian copula, irmodels'
  Wilcoxon excess over alpha is a third to a half of the paper's (0.061 against 0.072 at 0.05 on
  50 topics), and the paper's sign test counts |d| <= 0.01 as ties (``R/ir_tests.R``),
  irmodels' only d == 0.
  Their qualitative findings are asserted: above nominal at 50 and 100 topics in both, and
  Wilcoxon's excess growing with the topics.

The paper's design (``test_errors(design="pairs", sign_ties=0.01)``; the same script with
``--design pairs``, 40,000 trials per size, ``urbano2019_type1_pairs.json``) simulates as the
paper does: run 1's margin for both runs, a bivariate copula per pair chosen by AIC among
VineCopula's families (without the BB families). There all five tests are compared number to
number, with the same 3 combined SEs plus a tenth of alpha (see PAIRS_ALLOWANCE).

Type II and III (``tests/reference/urbano2019_type2.json``: the paper's power and type III rates
for AP, deltas 0.01, 0.02, 0.03, 167,000 trials each; ``urbano2019_type2_irmodels.json`` from
``tests/reference/urbano2019_type2.py``, the paper's alternative with ``design="pairs"``): power
with the same 3 combined SEs plus a tenth of alpha; type III likewise for the tests whose
direction is the mean's (t, bootstrap, permutation), as the paper's ``R/13-type_3.R`` counts
``mean(e - b) < 0`` for every test.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REF = Path(__file__).resolve().parents[1] / "reference"
PAPER_TRIALS = 1_667_000
Z = 3.0
ALLOWANCE = {"t": 0.1, "bootstrap": 0.1, "permutation": 0.1}  # x alpha


def _load(name: str) -> dict:
    return json.loads((REF / name).read_text())


PAPER = {(r["test"], r["topics"], r["alpha"]): r["type_I"]
         for r in _load("urbano2019_type1.json")["rates"]}
OURS_JSON = _load("urbano2019_type1_irmodels.json")
OURS = {(r["test"], r["topics"], r["alpha"]): r for r in OURS_JSON["rates"]}
KEYS = sorted(PAPER)


PAIRS_JSON = _load("urbano2019_type1_pairs.json")
PAIRS = {(r["test"], r["topics"], r["alpha"]): r for r in PAIRS_JSON["rates"]}
#: x alpha, on top of 3 combined standard errors: the same small allowance for every test
PAIRS_ALLOWANCE = 0.1


@functools.cache
def _reference_script(name: str) -> ModuleType:
    """tests/reference/<name>.py, loaded once (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REF / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _script() -> ModuleType:
    return _reference_script("urbano2019_type1")


@pytest.fixture(scope="module")
def adhoc5():
    """adhoc5's AP matrix cleaned as the scripts clean it (once for the module)."""
    return _script().prepare("adhoc5")


def _se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def test_the_two_sides_cover_the_same_cells() -> None:
    assert len(PAPER) == 30 and set(PAPER) == set(OURS)
    fixture = _load("urbano2019_type1.json")
    assert fixture["commit"] == "4dd2c8e770fcc54f3babe37233a64510cd948245"
    # the paper's t test at 0.05 on 25 topics, as printed in output/type_1/type_1_ap_25.csv
    assert PAPER[("t", 25, 0.05)] == pytest.approx(0.0509202159568086, abs=1e-15)
    for r in OURS.values():
        assert r["n_trials"] == OURS_JSON["n_total"] >= 40_000  # SE below 0.0011 at 0.05
        assert r["type_I"] == r["n_type_I"] / r["n_trials"]
    assert sum(OURS_JSON["trials"].values()) == OURS_JSON["n_total"]


@pytest.mark.parametrize("key", [k for k in KEYS if k[0] in ALLOWANCE],
                         ids=lambda k: f"{k[0]}-{k[1]}-{k[2]}")
def test_type_i_rate_agrees_with_the_paper(key: tuple[str, int, float]) -> None:
    test, _, alpha = key
    ours, paper = OURS[key]["type_I"], PAPER[key]
    se = math.hypot(_se(ours, OURS[key]["n_trials"]), _se(paper, PAPER_TRIALS))
    tol = Z * se + ALLOWANCE[test] * alpha
    assert abs(ours - paper) <= tol, (key, ours, paper, tol)


@pytest.mark.parametrize("topics", [25, 50, 100])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_t_and_permutation_are_near_nominal_in_both(topics: int, alpha: float) -> None:
    # the paper's finding: t holds its level (here within a tenth of alpha), the permutation
    # test nearly (the paper's is 0.0123 at 0.01 on 25 topics: within a quarter of alpha)
    for test, share in (("t", 0.1), ("permutation", 0.25)):
        for rate, n in ((OURS[(test, topics, alpha)]["type_I"], OURS_JSON["n_total"]),
                        (PAPER[(test, topics, alpha)], PAPER_TRIALS)):
            assert abs(rate - alpha) <= Z * _se(alpha, n) + share * alpha, (test, rate)


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_bootstrap_is_liberal_on_few_topics_in_both(alpha: float) -> None:
    # the paper's finding: the bootstrap rejects too often, less so with more topics
    n = OURS_JSON["n_total"]
    for rates, trials in (({c: OURS[("bootstrap", c, alpha)]["type_I"] for c in (25, 50)}, n),
                          ({c: PAPER[("bootstrap", c, alpha)] for c in (25, 50)}, PAPER_TRIALS)):
        assert rates[25] - alpha > Z * _se(alpha, trials)
        assert rates[25] - rates[50] > Z * math.sqrt(2) * _se(rates[25], trials)


@pytest.mark.parametrize("topics", [50, 100])
def test_rank_tests_exceed_nominal_on_many_topics_in_both(topics: int) -> None:
    # the paper's finding: Wilcoxon and sign reject a true null of equal means too often
    n = OURS_JSON["n_total"]
    for test in ("wilcoxon", "sign"):
        for alpha in (0.01, 0.05):
            assert OURS[(test, topics, alpha)]["type_I"] - alpha > Z * _se(alpha, n)
            assert PAPER[(test, topics, alpha)] - alpha > Z * _se(alpha, PAPER_TRIALS)


def test_wilcoxon_excess_grows_with_the_topics_in_both() -> None:
    # at 0.05, where both simulations resolve it
    n = OURS_JSON["n_total"]
    for rates, trials in (({c: OURS[("wilcoxon", c, 0.05)]["type_I"] for c in (25, 50, 100)}, n),
                          ({c: PAPER[("wilcoxon", c, 0.05)] for c in (25, 50, 100)},
                           PAPER_TRIALS)):
        for lo, hi in ((25, 50), (50, 100)):
            assert rates[hi] - rates[lo] > Z * math.sqrt(2) * _se(rates[hi], trials), (lo, hi)


def test_cleaning_and_allocation_follow_the_paper() -> None:
    mod = _script()
    runs = {c: int(mod.prepare(c)["system"].nunique()) for c in mod.COLLECTIONS}
    assert runs == OURS_JSON["runs_after_cleaning"]
    assert mod.allocate(OURS_JSON["n_total"], runs) == OURS_JSON["trials"]
    assert mod.allocate(10, {"a": 1, "b": 1, "c": 1}) in (
        {"a": 4, "b": 3, "c": 3}, {"a": 3, "b": 4, "c": 3}, {"a": 3, "b": 3, "c": 4})


def test_a_short_run_of_the_script_is_reproduced_bit_for_bit(adhoc5) -> None:
    mod = _script()
    counts = mod.smoke("adhoc5", adhoc5, 0)
    assert counts == OURS_JSON["smoke"]["counts"]["adhoc5"]
    assert sum(counts.values()) > 0


# --------------------------------------------------------------------------------------------
# the paper's design


def test_pairs_design_run_is_the_papers_setup() -> None:
    assert set(PAIRS) == set(PAPER)
    assert PAIRS_JSON["design"] == {"design": "pairs", "sign_ties": 0.01}
    assert PAIRS_JSON["runs_after_cleaning"] == OURS_JSON["runs_after_cleaning"]
    for r in PAIRS.values():
        # Monte Carlo SE at most 0.0011 at a rate of 0.05
        assert r["n_trials"] == PAIRS_JSON["n_total"] >= 40_000
        assert r["type_I"] == r["n_type_I"] / r["n_trials"]
    assert sum(PAIRS_JSON["trials"].values()) == PAIRS_JSON["n_total"]
    # every collection's pairs got a copula, Tawn families among them
    runs = PAIRS_JSON["runs_after_cleaning"]
    for c, fams in PAIRS_JSON["copula_families"].items():
        assert sum(fams.values()) <= runs[c] * (runs[c] - 1) // 2
        assert sum(v for k, v in fams.items() if k.startswith("Tawn")) > 0


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0]}-{k[1]}-{k[2]}")
def test_pairs_design_type_i_rate_agrees_with_the_paper(key: tuple[str, int, float]) -> None:
    _, _, alpha = key
    ours, paper = PAIRS[key]["type_I"], PAPER[key]
    se = math.hypot(_se(ours, PAIRS[key]["n_trials"]), _se(paper, PAPER_TRIALS))
    tol = Z * se + PAIRS_ALLOWANCE * alpha
    assert abs(ours - paper) <= tol, (key, ours, paper, tol)


def test_pairs_design_short_run_is_reproduced_bit_for_bit(adhoc5) -> None:
    mod = _script()
    families: dict[str, int] = {}
    counts = mod.smoke("adhoc5", adhoc5, 0, "pairs", families)
    assert counts == PAIRS_JSON["smoke"]["counts"]["adhoc5"]
    # the short run (adhoc5's first 25 runs: 300 pairs) chooses the very families the long run
    # chose over adhoc5's 55 runs, the four Tawn families among them
    assert sum(families.values()) == 25 * 24 // 2
    assert set(families) == set(PAIRS_JSON["copula_families"]["adhoc5"])
    assert {"Tawn", "Tawn180", "Tawn2", "Tawn2_180"} <= set(families)


# --------------------------------------------------------------------------------------------
# type II and III: the paper's alternative (R/02-margins_transform.R, R/12-type_2.R)

PAPER2_JSON = _load("urbano2019_type2.json")
PAPER2_TRIALS = PAPER2_JSON["n_trials"]
PAPER2 = {(r["delta"], r["test"], r["topics"], r["alpha"]): r for r in PAPER2_JSON["rates"]}
OURS2_JSON = _load("urbano2019_type2_irmodels.json")
OURS2 = {(float(d), r["test"], r["topics"], r["alpha"]): r
         for d, v in OURS2_JSON["deltas"].items() for r in v["rates"]}
KEYS2 = sorted(PAPER2)
#: x alpha, on top of 3 combined standard errors, as for the type I rates
TYPE2_ALLOWANCE = 0.1
#: type III is compared number to number where both count "significant with the mean below 0":
#: the tests of the mean (their direction is the sign of the mean difference); Wilcoxon's and
#: the sign test's direction here is their own statistic's
SAME_DIRECTION = ("t", "bootstrap", "permutation")


def _script2() -> ModuleType:
    return _reference_script("urbano2019_type2")


def test_type2_fixtures_cover_the_same_cells() -> None:
    assert PAPER2_JSON["commit"] == "4dd2c8e770fcc54f3babe37233a64510cd948245"
    assert PAPER2_TRIALS == 167_000 and len(PAPER2) == 90 and set(OURS2) == set(PAPER2)
    # output/type_2_by_alpha/delta0.01/type_2_by_alpha_ap_25_delta0.01.csv, t2 at 0.05
    assert PAPER2[(0.01, "t", 25, 0.05)]["power"] == pytest.approx(0.0737125748502994,
                                                                    abs=1e-15)
    # output/type_3_by_alpha/delta0.01/type_3_by_alpha_ap_100_delta0.01.csv, s2 at 0.05
    assert PAPER2[(0.01, "sign", 100, 0.05)]["type_III"] == pytest.approx(0.0183053892215569,
                                                                           abs=1e-15)
    assert OURS2_JSON["design"] == {"design": "pairs", "sign_ties": 0.01}
    for r in OURS2.values():
        assert r["n_trials"] == OURS2_JSON["n_total"] >= 30_000  # SE at most 0.0029
        assert r["power"] == 1 - r["n_type_II"] / r["n_trials"]
    for v in OURS2_JSON["deltas"].values():
        assert sum(v["trials"].values()) == OURS2_JSON["n_total"]


def test_paper_alternatives_follow_margins_transform(adhoc5) -> None:
    """R/02-margins_transform.R: baselines are all runs but the top round(R / 4) by expected
    score; each is paired with the (at most) 10 other runs nearest its expected score + delta,
    whose margins are transformed to exactly that expected score."""
    import irmodels as irm
    from irmodels.studies.error_rates import _paper_alternatives

    sim = irm.replicates.fit_simulator(adhoc5)
    mu = np.array([m.mean for m in sim._margins])
    R = len(mu)
    delta = 0.01
    alts = _paper_alternatives(sim._margins, delta, sim.systems)
    top = set(np.argsort(-mu)[: round(R / 4)].tolist())
    by_base: dict[int, list[int]] = {}
    for b, e, margin in alts:
        by_base.setdefault(b, []).append(e)
        assert margin.mean == pytest.approx(mu[b] + delta, abs=1e-9)
        assert margin.family == sim._margins[e].family  # e's own margin, transformed
    # every transform succeeds on adhoc5: 55 runs, round(13.75) = 14 on top, 41 baselines
    assert not set(by_base) & top and len(by_base) == R - len(top) == 41
    for b, es in by_base.items():
        near = [j for j in np.argsort(np.abs(mu - mu[b] - delta), kind="stable") if j != b][:10]
        assert es == near, (b, es)
    # the script's allocation uses the same count of baselines (the paper's effs_c)
    assert len(by_base) == OURS2_JSON["deltas"]["0.01"]["baselines"]["adhoc5"]


#: The cells that do not agree (irmodels' power higher by 1.1 to 1.24 tolerances, all at alpha
#: 0.01 with 50 or 100 topics; docs/test_errors.md "Type II and III"): not widened, recorded.
#: strict: they fail the suite if a rerun brings them within the tolerance, to be re-examined.
TYPE2_OFF = {(0.02, "wilcoxon", 50, 0.01), (0.02, "wilcoxon", 100, 0.01),
             (0.03, "wilcoxon", 50, 0.01), (0.03, "sign", 50, 0.01)}


@pytest.mark.parametrize(
    "key", [pytest.param(k, marks=pytest.mark.xfail(
        strict=True, reason="irmodels' power above the paper's by more than the tolerance"))
        if k in TYPE2_OFF else k for k in KEYS2],
    ids=lambda k: f"d{k[0]}-{k[1]}-{k[2]}-{k[3]}")
def test_type_ii_power_agrees_with_the_paper(key: tuple[float, str, int, float]) -> None:
    alpha = key[3]
    ours, paper = OURS2[key]["power"], PAPER2[key]["power"]
    se = math.hypot(_se(ours, OURS2[key]["n_trials"]), _se(paper, PAPER2_TRIALS))
    tol = Z * se + TYPE2_ALLOWANCE * alpha
    assert abs(ours - paper) <= tol, (key, ours, paper, tol)


def test_type_ii_disagreements_are_small_and_one_sided() -> None:
    # the 4 cells off: irmodels higher, by at most 1.25 tolerances (0.011 in power)
    for key in TYPE2_OFF:
        ours, paper = OURS2[key]["power"], PAPER2[key]["power"]
        se = math.hypot(_se(ours, OURS2[key]["n_trials"]), _se(paper, PAPER2_TRIALS))
        tol = Z * se + TYPE2_ALLOWANCE * key[3]
        assert tol < ours - paper <= 1.25 * tol, (key, ours, paper, tol)


def test_type_ii_findings_of_the_paper_hold_in_both() -> None:
    # power grows with the topics and with delta, for every test and alpha, in both
    for rates in (OURS2, PAPER2):
        for (d, test, c, a) in KEYS2:
            if c < 100:
                bigger = 50 if c == 25 else 100
                assert rates[(d, test, bigger, a)]["power"] > rates[(d, test, c, a)]["power"]
            if d < 0.03:
                assert (rates[(round(d + 0.01, 2), test, c, a)]["power"]
                        > rates[(d, test, c, a)]["power"])


@pytest.mark.parametrize("key", [k for k in KEYS2 if k[1] in SAME_DIRECTION],
                         ids=lambda k: f"d{k[0]}-{k[1]}-{k[2]}-{k[3]}")
def test_type_iii_rate_agrees_with_the_paper(key: tuple[float, str, int, float]) -> None:
    alpha = key[3]
    ours = OURS2[key]["n_type_III"] / OURS2[key]["n_trials"]
    paper = PAPER2[key]["type_III"]
    se = math.hypot(_se(ours, OURS2[key]["n_trials"]), _se(paper, PAPER2_TRIALS))
    tol = Z * se + TYPE2_ALLOWANCE * alpha
    assert abs(ours - paper) <= tol, (key, ours, paper, tol)


def test_type2_short_run_is_reproduced_bit_for_bit(adhoc5) -> None:
    mod = _script2()
    counts = mod.smoke(adhoc5)
    assert counts == OURS2_JSON["smoke"]["counts"]
    assert any(v[0] < mod.SMOKE["n_trials"] for v in counts.values())
