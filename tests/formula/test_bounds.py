"""Bounded parsing: nesting, expansion size and unknown columns are refused before any
expansion; random token streams and random text raise only irmodels errors; transforms
refuse values outside their domain."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irmodels.errors import DataFormatError, FormulaError, IRModelsError
from irmodels.formula import apply_transform, parse_formula
from irmodels.formula import parser as P


def test_deep_nesting_is_a_formula_error_not_a_recursion_error() -> None:
    ok = "score ~ " + "(" * P.MAX_DEPTH + "a" + ")" * P.MAX_DEPTH
    assert parse_formula(ok).fixed_names == ("a",)
    for depth in (P.MAX_DEPTH + 1, 300, 5000):
        text = "score ~ " + "(" * depth + "a" + ")" * depth
        with pytest.raises(FormulaError, match=f"nested more than {P.MAX_DEPTH} deep") as info:
            parse_formula(text)
        start = 8 + P.MAX_DEPTH
        assert info.value.span == (start, start + 1)


def test_unclosed_deep_nesting() -> None:
    with pytest.raises(FormulaError, match="nested more than"):
        parse_formula("score ~ " + "(" * 10_000)


def test_product_of_twenty_factors_is_refused_before_expansion() -> None:
    text = "score ~ " + "*".join(f"f{i}" for i in range(20))
    with pytest.raises(FormulaError, match="would expand to 1,023 fixed terms") as info:
        parse_formula(text)
    # the caret covers the operands of the '*' that overflows (f0..f9)
    assert text[info.value.span[0]:info.value.span[1]] == "*".join(f"f{i}" for i in range(10))


def test_product_size_counts_both_sides() -> None:
    # (a1 + ... + a40) * (b1 + ... + b40): 40 + 40 + 1600 terms
    left = " + ".join(f"a{i}" for i in range(40))
    right = " + ".join(f"b{i}" for i in range(40))
    with pytest.raises(FormulaError, match="1,680 fixed terms"):
        parse_formula(f"score ~ ({left})*({right})")
    assert len(parse_formula(f"score ~ ({left})*b").fixed) == 81


def test_many_terms() -> None:
    terms = [f"x{i}" for i in range(P.MAX_TERMS)]
    assert len(parse_formula("score ~ " + " + ".join(terms)).fixed) == P.MAX_TERMS
    with pytest.raises(FormulaError, match="more than 1,000 fixed terms"):
        parse_formula("score ~ " + " + ".join(terms + ["extra"]))
    # removals of many terms are linear too
    text = "score ~ " + " + ".join(terms) + " - " + " - ".join(terms[1:])
    assert parse_formula(text).fixed_names == ("x0",)


def test_interaction_order_limit() -> None:
    ok = ":".join(f"f{i}" for i in range(P.MAX_ORDER))
    assert parse_formula(f"score ~ {ok}").fixed[0].order == P.MAX_ORDER
    with pytest.raises(FormulaError, match="interaction of 11 factors"):
        parse_formula(f"score ~ {ok}:extra")


def test_length_limit() -> None:
    with pytest.raises(FormulaError, match="more than the limit of 20,000"):
        parse_formula("score ~ a" + " " * P.MAX_LENGTH)


def test_work_limit_bounds_repeated_expansion() -> None:
    # each ':x' rebuilds 500 terms; the budget stops it long before a quadratic blow-up
    group = " + ".join(f"a{i}" for i in range(500))
    with pytest.raises(FormulaError, match="term constructions"):
        parse_formula(f"score ~ ({group})" + ":x" * 1000)


def test_unknown_column_is_reported_without_expanding() -> None:
    text = "score ~ " + "*".join(f"f{i}" for i in range(20)) + " + sytem"
    with pytest.raises(FormulaError, match="unknown column 'f0'"):
        parse_formula(text, columns=["score", "system"])
    with pytest.raises(FormulaError, match="did you mean 'system'") as info:
        parse_formula("score ~ sytem + (1|topic)", columns=["score", "system", "topic"])
    assert info.value.span == (8, 13)


def test_factor_declaration() -> None:
    spec = parse_formula("score ~ system + C(qid) + system:C(qid)")
    assert spec.fixed_names == ("system", "qid", "system:qid")
    assert spec.categorical == frozenset({"qid"})
    assert str(spec) == "score ~ system + C(qid) + system:C(qid)"
    assert parse_formula("score ~ factor(qid)").categorical == frozenset({"qid"})
    with pytest.raises(FormulaError, match="takes one column name"):
        parse_formula("score ~ C(1)")
    with pytest.raises(FormulaError, match="closing C"):
        parse_formula("score ~ C(a b)")
    with pytest.raises(FormulaError, match="functions are not allowed"):
        parse_formula("score ~ expo(qid)")
    with pytest.raises(FormulaError, match="unknown column 'qd'"):
        parse_formula("score ~ C(qd)", columns=["score", "qid"])


# ---- fuzzing: only irmodels errors, quickly -------------------------------------------------

_TOKENS = ["score", "~", "+", "-", "*", "/", ":", "|", "(", ")", ",", "=", "0", "1", "2", "0.5",
           "topic", "system", "a", "b", "logit", "log", "sqrt", "C", "factor", "eps", "`x y`", " "]


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=60))
def test_random_token_streams_raise_only_formula_errors(tokens: list[str]) -> None:
    text = " ".join(tokens)
    try:
        spec = parse_formula(text, columns=["score", "topic", "system", "a", "b", "x y"])
    except FormulaError:
        return
    assert len(spec.fixed) <= P.MAX_TERMS
    assert parse_formula(str(spec)).fixed == spec.fixed


@settings(max_examples=300, deadline=2000)
@given(st.text(max_size=200))
def test_random_text_raises_only_irmodels_errors(text: str) -> None:
    try:
        parse_formula(text)
    except IRModelsError:
        pass


@settings(max_examples=30, deadline=5000)
@given(st.integers(1, 5000), st.sampled_from(["(", "(1|", "a*", "a:", "-", "C("]))
def test_long_repetitions_stay_bounded(n: int, piece: str) -> None:
    try:
        parse_formula("score ~ " + piece * n + "a")
    except FormulaError:
        pass


# ---- transforms check their domain -----------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "bad", "message"),
    [
        ("logit", [0.5, 1.2], r"logit\(\) needs scores in \[0, 1\]; found 1 value\(s\) outside, e\.g\. 1\.2"),
        ("logit", [-0.1, 0.5], r"e\.g\. -0\.1"),
        ("log", [0.3, -2.0, -1.0], r"log\(\) needs scores >= 0; found 2 value\(s\) outside, e\.g\. -2"),
        ("sqrt", [-1e-9], r"sqrt\(\) needs scores >= 0"),
        ("asin_sqrt", [1.0001], r"asin_sqrt\(\) needs scores in \[0, 1\]"),
    ],
)
def test_transforms_refuse_values_outside_their_domain(transform, bad, message) -> None:
    with pytest.raises(DataFormatError, match=message):
        apply_transform(np.array(bad), transform)


def test_transforms_keep_the_documented_clipping_at_the_bounds() -> None:
    y = np.array([0.0, 0.25, 1.0])
    np.testing.assert_allclose(apply_transform(y, "logit", 0.01),
                               np.log([0.01 / 0.99, 0.25 / 0.75, 0.99 / 0.01]))
    np.testing.assert_allclose(apply_transform(y, "log", 0.01), np.log([0.01, 0.25, 1.0]))
    np.testing.assert_allclose(apply_transform(np.array([4.0, 0.0]), "sqrt"), [2.0, 0.0])
    assert np.isnan(apply_transform(np.array([np.nan]), "logit")[0])
    with pytest.raises(DataFormatError, match="unknown transform"):
        apply_transform(y, "exp")


def test_model_refuses_out_of_domain_response() -> None:
    import pandas as pd

    import irmodels as irm

    d = pd.DataFrame({"topic": list("aabb"), "system": list("xyxy"), "score": [0.1, 0.2, 1.4, 0.3]})
    with pytest.raises(DataFormatError, match=r"logit\(\) needs scores in \[0, 1\]"):
        irm.anova("logit(score) ~ topic + system", d)


@pytest.mark.parametrize("text", ["`x y` ~ score", "score ~ `x y` + C(`x y2`) + (1|`g h`)",
                                  "log(`x y`) ~ topic"])
def test_backquoted_names_round_trip(text: str) -> None:
    """str(spec) quotes a name that is not an identifier, so it parses back (hypothesis found
    "`x y` ~ score" printed as "x y ~ score")."""
    cols = ["score", "topic", "x y", "x y2", "g h"]
    spec = parse_formula(text, columns=cols)
    again = parse_formula(str(spec), columns=cols)
    assert (again.response, again.fixed, again.random) == (spec.response, spec.fixed, spec.random)
