"""The formula grammar: expansion rules, R's term order, errors with carets, no evaluation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irmodels.errors import FormulaError
from irmodels.formula import PRESETS, ModelSpec, parse_formula, resolve


@pytest.mark.parametrize(
    ("formula", "fixed", "random", "intercept"),
    [
        ("score ~ topic + system", ("topic", "system"), (), True),
        ("score ~ topic*system", ("topic", "system", "topic:system"), (), True),
        (
            "score ~ topic*system*shard",
            ("topic", "system", "shard", "topic:system", "topic:shard", "system:shard",
             "topic:system:shard"),
            (),
            True,
        ),
        ("score ~ topic*system - topic:system", ("topic", "system"), (), True),
        ("score ~ a/b", ("a", "a:b"), (), True),
        ("score ~ (a + b)/c", ("a", "b", "a:b:c"), (), True),
        ("score ~ (a + b)*c", ("a", "b", "c", "a:c", "b:c"), (), True),
        ("score ~ a:b + a", ("a", "a:b"), (), True),
        ("score ~ b:a + a", ("a", "b:a"), (), True),
        ("score ~ a + a + a:a", ("a",), (), True),
        ("score ~ 0 + system", ("system",), (), False),
        ("score ~ system - 1", ("system",), (), False),
        ("score ~ -1 + system", ("system",), (), False),
        ("score ~ 1", (), (), True),
        ("score ~ system + (1|topic)", ("system",), ("topic",), True),
        ("score ~ system + (1|topic/system)", ("system",), ("topic", "topic:system"), True),
        ("score ~ (1|system) + (1|topic)", (), ("system", "topic"), True),
        ("score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)", ("system",),
         ("topic", "topic:system", "topic:shard"), True),
        ("score ~ system + (1|a/b/c)", ("system",), ("a", "a:b", "a:b:c"), True),
        ("score~topic+system", ("topic", "system"), (), True),
        ("`my score` ~ `run id`", ("run id",), (), True),
    ],
)
def test_expansion(formula: str, fixed: tuple, random: tuple, intercept: bool) -> None:
    spec = parse_formula(formula)
    assert spec.fixed_names == fixed
    assert spec.random_names == random
    assert spec.intercept is intercept


def test_response_and_transforms() -> None:
    spec = parse_formula("logit(score, eps=0.01) ~ system")
    assert (spec.response, spec.transform, spec.epsilon) == ("score", "logit", 0.01)
    assert parse_formula("logit(score, 0.02) ~ system").epsilon == 0.02
    assert parse_formula("asin_sqrt(score) ~ system").transform == "asin_sqrt"
    assert parse_formula("log(score) ~ system", epsilon=1e-4).epsilon == 1e-4
    assert parse_formula("score ~ system").transform is None


def test_spec_is_frozen_and_hashable() -> None:
    spec = parse_formula("score ~ topic + system + (1|topic:system)")
    assert isinstance(spec, ModelSpec)
    with pytest.raises(AttributeError):
        spec.response = "x"  # type: ignore[misc]
    assert hash(spec) == hash(parse_formula("score ~ topic + system + (1|topic:system)"))
    assert spec.factors == ("topic", "system")
    assert spec.is_mixed


@pytest.mark.parametrize(
    ("formula", "message", "caret"),
    [
        ("", "the formula is empty", None),
        ("score topic", "needs a response and '~'", (0, 11)),
        ("score ~", "nothing after '~'", (7, 8)),
        ("score ~ topic +", "ends where a term was expected", (15, 16)),
        ("score ~ exq(topic)", "functions are not allowed", (8, 11)),
        ("foo(score) ~ a", "unknown response transform 'foo'", (0, 3)),
        ("score ~ (0|topic)", "neither an intercept nor a slope", (9, 10)),
        ("score ~ topic - system", "cannot remove 'system'", (16, 22)),
        ("score ~ topic + (1|topic", "expected ')' closing the random term", None),
        ("score ~ 2", "only 0 and 1", (8, 9)),
        ("score ~ topic $ x", "unexpected character '$'", (14, 15)),
        ("score ~ (1|topic) + (1|topic)", "appears twice", None),
        ("score ~ (1|topic)*system", "cannot be multiplied", None),
        ("score ~ topic + score", "also appears as a term", None),
        ("logit(score, eps=2) ~ a", "eps must be in (0, 0.5)", None),
        ("sqrt(score, eps=0.1) ~ a", "takes no eps", None),
        ("score ~ (topic + system", "expected ')'", None),
        ("score ~ topic )", "unexpected ')'", (14, 15)),
    ],
)
def test_errors_point_at_the_span(formula: str, message: str, caret: tuple | None) -> None:
    with pytest.raises(FormulaError, match=None) as info:
        parse_formula(formula)
    err = info.value
    assert message in err.reason
    if caret is not None:
        assert err.span == caret
        lines = str(err).splitlines()
        assert lines[1] == "  " + formula
        assert lines[2] == "  " + " " * caret[0] + "^" * (caret[1] - caret[0])


def test_unknown_column_suggests_the_closest() -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula("score ~ sytem + (1|topic)", columns=["topic", "system", "score"])
    assert "unknown column 'sytem' (did you mean 'system'?)" in str(info.value)
    assert info.value.span == (8, 13)
    with pytest.raises(FormulaError, match="unknown column 'zzz'"):
        parse_formula("zzz ~ topic", columns=["topic", "system", "score"])


def test_presets_and_resolve() -> None:
    assert set(PRESETS) == {f"MD{i}" for i in range(1, 7)}
    assert resolve("MD3").fixed_names == ("topic", "system", "topic:system")
    assert resolve(" md1 ").fixed_names == ("topic", "system")
    spec = parse_formula("score ~ system")
    assert resolve(spec) is spec
    with pytest.raises(FormulaError, match="unknown model 'MD7'"):
        resolve("MD7")
    with pytest.raises(FormulaError, match="formula string"):
        resolve(42)  # type: ignore[arg-type]


def test_nothing_is_evaluated(tmp_path) -> None:
    target = tmp_path / "bad.txt"
    with pytest.raises(FormulaError):
        parse_formula(f"y ~ open('{target}', 'w')")
    assert not target.exists()


_names = st.sampled_from(["topic", "system", "shard", "sample"])


@given(st.lists(_names, min_size=1, max_size=4, unique=True))
def test_star_expansion_has_every_subset(factors: list[str]) -> None:
    spec = parse_formula("score ~ " + "*".join(factors))
    assert len(spec.fixed) == 2 ** len(factors) - 1
    orders = [t.order for t in spec.fixed]
    assert orders == sorted(orders)


@given(st.permutations(["topic", "system", "shard"]))
def test_sum_order_is_appearance_order(perm: list[str]) -> None:
    assert parse_formula("score ~ " + " + ".join(perm)).fixed_names == tuple(perm)


def test_str_round_trips() -> None:
    for f in ["score ~ topic + system + topic:system", "logit(score) ~ system + (1|topic)",
              "score ~ 0 + system"]:
        spec = parse_formula(f)
        again = parse_formula(str(spec))
        assert (again.fixed, again.random, again.intercept, again.transform) == (
            spec.fixed, spec.random, spec.intercept, spec.transform)
