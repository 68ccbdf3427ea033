"""Random-effects terms as lme4 writes them (issue 27): (1 + x | g), (x | g), (0 + x | g),
(1 + x || g), factor slopes, crossed and nested groupings; the errors with their caret."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irmodels.errors import DesignError, FormulaError
from irmodels.formula import RandomTerm, parse_formula
from irmodels.formula import parser as formula_parser

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


def terms(formula: str) -> list[tuple[tuple[str, ...], bool, tuple[str, ...]]]:
    return [(r.factors, r.intercept, r.effects) for r in parse_formula(formula).random]


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("y ~ (1|g)", [(("g",), True, ())]),
        ("y ~ (1 + x | g)", [(("g",), True, ("x",))]),
        ("y ~ (x | g)", [(("g",), True, ("x",))]),  # the intercept is implied
        ("y ~ (0 + x | g)", [(("g",), False, ("x",))]),
        ("y ~ (-1 + x | g)", [(("g",), False, ("x",))]),
        ("y ~ (x - 1 | g)", [(("g",), False, ("x",))]),
        ("y ~ (x + 0 | g)", [(("g",), False, ("x",))]),
        ("y ~ (1 + x + z | g)", [(("g",), True, ("x", "z"))]),
        ("y ~ (1 + x || g)", [(("g",), True, ()), (("g",), False, ("x",))]),
        ("y ~ (x + z || g)", [(("g",), True, ()), (("g",), False, ("x",)), (("g",), False, ("z",))]),
        ("y ~ (0 + x || g)", [(("g",), False, ("x",))]),
        ("y ~ (0 + system | topic)", [(("topic",), False, ("system",))]),
        ("score ~ system + shard + (1 + shard | topic) + (1 | system)",
         [(("topic",), True, ("shard",)), (("system",), True, ())]),
        ("y ~ (1 + x | a/b)", [(("a",), True, ("x",)), (("a", "b"), True, ("x",))]),
        ("y ~ (1 + x | a:b)", [(("a", "b"), True, ("x",))]),
        ("y ~ (1 + x || a/b)", [(("a",), True, ()), (("a", "b"), True, ()),
                                (("a",), False, ("x",)), (("a", "b"), False, ("x",))]),
        ("y ~ (1 + load | subj) + (1 + load | item)",
         [(("subj",), True, ("load",)), (("item",), True, ("load",))]),
        ("y ~ (1 | g) + (0 + x | g)", [(("g",), True, ()), (("g",), False, ("x",))]),
        ("y ~ (1 + log(x) | g)", [(("g",), True, ("log(x)",))]),
    ],
)
def test_expansions(formula: str, expected: list) -> None:
    assert terms(formula) == expected
    spec = parse_formula(formula)
    again = parse_formula(str(spec))
    assert again.random == spec.random


def test_intercept_terms_keep_their_names_and_printing() -> None:
    spec = parse_formula("score ~ system + (1|topic/system) + (1|topic:shard)")
    assert [(r.name, str(r), r.key) for r in spec.random] == [
        ("topic", "(1|topic)", frozenset({"topic"})),
        ("topic:system", "(1|topic:system)", frozenset({"topic", "system"})),
        ("topic:shard", "(1|topic:shard)", frozenset({"topic", "shard"}))]
    assert all(r.is_intercept_only for r in spec.random)
    assert spec.random[0] == RandomTerm(("topic",))
    assert not spec.has_slopes
    assert str(spec) == "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)"


def test_slope_terms_print_in_lme4_syntax() -> None:
    spec = parse_formula("Reaction ~ Days + (Days | Subject) + (0 + C(f) || g)")
    assert [str(r) for r in spec.random] == ["(1 + Days | Subject)", "(0 + f | g)"]
    assert [r.name for r in spec.random] == ["Subject", "g"]
    assert spec.random[0].lhs == "1 + Days" and not spec.random[0].is_intercept_only
    assert spec.has_slopes and spec.random_effects == ("Days", "f")
    assert spec.categorical == frozenset({"f"})
    assert str(spec) == "Reaction ~ Days + (1 + Days | Subject) + (0 + C(f) | g)"
    assert spec.factors == ("Days", "Subject", "g")  # groupings and fixed factors; slopes apart
    assert spec.columns == ("Reaction", "Days", "Subject", "g", "f")


def test_double_bar_keeps_a_factor_whole_as_lme4() -> None:
    """lme4 does not split a factor under ||: (1 + f || g) is (1|g) + (0 + f|g), one block of
    correlated level effects. We expand it the same way (documented in docs/mixed.md)."""
    spec = parse_formula("y ~ (1 + C(f) || g)")
    assert [(r.intercept, r.effects) for r in spec.random] == [(True, ()), (False, ("f",))]
    assert "f" in spec.categorical


def test_the_reference_formulas_of_lme4_slopes_parse() -> None:
    text = (REFERENCE / "lme4_slopes.R").read_text()
    import re

    formulas = sorted(set(re.findall(r'formula = "([^"]+)"', text)))
    assert len(formulas) >= 5
    for f in formulas:
        spec = parse_formula(f)
        assert spec.has_slopes or any(not r.intercept for r in spec.random) or len(spec.random) > 1
        assert parse_formula(str(spec)).random == spec.random


@pytest.mark.parametrize(
    ("formula", "message", "caret"),
    [
        ("y ~ ( | g)", "the left side of a random term is empty", (4, 7)),
        ("y ~ (0 | g)", "neither an intercept nor a slope", (5, 6)),
        ("y ~ (-1 | g)", "neither an intercept nor a slope", (5, 7)),
        ("y ~ (1 + x + x | g)", "the effect 'x' appears twice", (13, 14)),
        ("y ~ (1 + x | g) + (0 + x | g)", "the effect 'x' of grouping 'g' appears in two", (18, 29)),
        ("y ~ (1 + x | g) + (1 | g)", "the intercept of grouping 'g' appears in two", (18, 25)),
        ("y ~ (1 + x || g) + (0 + x | g)", "random term (0 + x | g) appears twice", (19, 30)),
        ("y ~ (1|g) + (1|g)", "random term (1|g) appears twice", (12, 17)),
        ("y ~ (1 - x | g)", "cannot remove 'x' from a random term", (9, 10)),
        ("y ~ (1 + x:z | g)", "':' is not supported on the left of a random term", (10, 11)),
        ("y ~ (1 + foo(x) | g)", "unknown function 'foo' in a random term", (9, 12)),
        ("y ~ (1 + 2 | g)", "expected 1, 0 or a column", (9, 10)),
        ("y ~ (1 + | g)", "expected an effect after the sign", (9, 10)),
        ("y ~ (1 + x | )", "expected a grouping factor", (13, 14)),
        ("y ~ (1 + x | g", "expected ')' closing the random term", (14, 15)),
        ("y ~ (1 + x | g) * z", "cannot be multiplied", (16, 17)),
        ("y ~ z - (1 + x | g)", "cannot be removed", (8, 9)),
    ],
)
def test_errors_point_at_the_span(formula: str, message: str, caret: tuple[int, int]) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(formula)
    err = info.value
    assert message in err.reason
    assert err.span == caret
    lines = str(err).splitlines()
    assert lines[1] == "  " + formula
    assert lines[2] == "  " + " " * caret[0] + "^" * (caret[1] - caret[0])


def test_a_slope_column_that_does_not_exist() -> None:
    cols = ["Reaction", "Days", "Subject"]
    with pytest.raises(FormulaError) as info:
        parse_formula("Reaction ~ Days + (1 + Dayz | Subject)", columns=cols)
    assert "unknown column 'Dayz' (did you mean 'Days'?)" in str(info.value)
    assert info.value.span == (23, 27)
    with pytest.raises(FormulaError, match="unknown column 'qq'"):
        parse_formula("Reaction ~ Days + (1 + log(qq) | Subject)", columns=cols)
    spec = parse_formula("Reaction ~ Days + (Days | Subject)", columns=cols)
    with pytest.raises(FormulaError, match="unknown column 'Days'"):
        formula_parser.resolve(spec, ["Reaction", "Subject"])


def test_bounds_hold_for_random_terms(monkeypatch) -> None:
    monkeypatch.setattr(formula_parser, "MAX_TERMS", 3)
    parse_formula("y ~ (1 + x || g)")  # 2 terms
    with pytest.raises(FormulaError, match="expands to 4 terms, more than the limit of 3"):
        parse_formula("y ~ (1 + x || a/b)")
    with pytest.raises(FormulaError, match="4 random terms, more than the limit of 3"):
        parse_formula("y ~ (1|a) + (1|b) + (1|c) + (1|d)")
    with pytest.raises(FormulaError, match="4 slopes, more than the limit of 3"):
        parse_formula("y ~ (1 + a + b + c + d | g)")
    monkeypatch.setattr(formula_parser, "MAX_ORDER", 2)
    with pytest.raises(FormulaError, match="interaction of 3 factors"):
        parse_formula("y ~ (1 + x | a/b/c)")


# ---- round trip: parse -> str -> parse -------------------------------------------------------

_cols = st.sampled_from(["x", "z", "Days", "shard", "`x y`"])
_groups = st.lists(st.sampled_from(["g", "topic", "system", "`h k`"]), min_size=1, max_size=3,
                   unique=True)


@st.composite
def _random_term(draw) -> str:
    effects = draw(st.lists(_cols, max_size=3, unique=True))
    if draw(st.booleans()):
        effects = [f"log({e})" if i == 0 else e for i, e in enumerate(effects)]
    icpt = draw(st.sampled_from(["1", "0", "-1", ""])) if effects else "1"
    lhs = " + ".join(([icpt] if icpt else []) + effects) if icpt != "-1" else " + ".join(
        ["-1", *effects])
    sep = draw(st.sampled_from(["|", "||"]))
    group = draw(st.sampled_from([":", "/"])).join(draw(_groups))
    return f"({lhs} {sep} {group})"


@settings(max_examples=150, deadline=None)
@given(st.lists(_random_term(), min_size=1, max_size=3), st.sampled_from(["", "Days + ", "C(q) + "]))
def test_round_trip(rterms: list[str], fixed: str) -> None:
    text = "y ~ " + fixed + " + ".join(rterms)
    try:
        spec = parse_formula(text)
    except FormulaError as err:  # a drawn formula may repeat an effect of a grouping
        assert "appears" in err.reason
        return
    again = parse_formula(str(spec))
    assert (again.random, again.fixed, again.categorical, again.expressions) == (
        spec.random, spec.fixed, spec.categorical, spec.expressions)
    assert str(again) == str(spec)
    for r in spec.random:
        assert r.intercept or r.effects
        assert r.is_intercept_only == (r.intercept and not r.effects)
        if " " not in r.name and all(" " not in e for e in r.effects):  # str(r) quotes nothing
            assert parse_formula(f"y ~ {r}").random[0] == r


# ---- as lme4 expands them (live when R is installed) ----------------------------------------

_LME4_CASES = ["y ~ x + (1 + x || g)", "y ~ (1 + x | a/b)", "y ~ (x + f || g)", "y ~ (0 + x || g)",
               "y ~ (1 + x + z || a/b)", "y ~ (-1 + x | g)", "y ~ (x - 1 | g)", "y ~ (x | g)",
               "y ~ (1 + x | a) + (1 | b)"]


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs R with lme4")
def test_expansions_match_lme4_findbars(tmp_path) -> None:
    script = tmp_path / "bars.R"
    script.write_text(
        "suppressPackageStartupMessages(library(lme4))\n"
        "for (f in commandArgs(TRUE)) { b <- findbars(as.formula(f)); "
        "cat(paste(sapply(b, function(t) paste(deparse(t), collapse = '')), collapse = ';'), '\\n') }\n")
    out = subprocess.run(["Rscript", str(script), *_LME4_CASES], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip().splitlines()
    assert len(out) == len(_LME4_CASES)
    for formula, line in zip(_LME4_CASES, out):
        lme4 = []
        for bar in line.strip().split(";"):
            lhs, group = bar.split("|")
            lme4 += [(r.key, r.intercept, r.effects) for r in parse_formula(f"y ~ ({lhs}|{group})").random]
        ours = [(r.key, r.intercept, r.effects) for r in parse_formula(formula).random]
        # lme4 lists b:a first; sorted by the sorted factor names (a frozenset's repr follows
        # the process's string hashing, so sorting by repr flipped with PYTHONHASHSEED)
        def order(t: tuple) -> tuple:
            return (sorted(t[0]), t[1], t[2])

        assert sorted(ours, key=order) == sorted(lme4, key=order), formula


# ---- irm.mixed refuses slopes until the general engine lands -------------------------------

def test_mixed_refuses_slope_terms_naming_the_term() -> None:
    rng = np.random.default_rng(7)
    d = pd.DataFrame({"topic": np.repeat([f"t{i}" for i in range(6)], 4),
                      "system": np.tile(list("abcd"), 6), "x": rng.normal(size=24),
                      "score": rng.uniform(0.2, 0.8, 24)})
    from irmodels.models._mixed_design import mixed_design, refuse_slopes

    with pytest.raises(DesignError, match=r"the term \(1 \+ x \| topic\) has a random slope"):
        refuse_slopes(parse_formula("score ~ x + (1 + x | topic)"))
    with pytest.raises(DesignError, match=r"the term \(0 \+ system \| topic\) has a random slope"):
        mixed_design("score ~ x + (0 + system | topic)", d)  # the intercepts-only stage
    refuse_slopes(parse_formula("score ~ x + (1|topic) + (1|topic:system)"))  # no error
    assert mixed_design("score ~ x + (1|topic)", d).spec.random == (RandomTerm(("topic",)),)
