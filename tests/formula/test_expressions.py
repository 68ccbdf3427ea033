"""Response and covariate expressions (issue 27): parsed into irmodels.formula.expr's AST,
printed canonically, evaluated by the package's own interpreter on numpy (never eval)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DataFormatError, FormulaError
from irmodels.formula import parse_formula
from irmodels.formula.expr import (
    FUNCTIONS,
    BinOp,
    Call,
    Col,
    Neg,
    Num,
    columns_of,
    evaluate,
    parse_expression,
)
from irmodels.models import _design

PACKAGE = Path(__file__).resolve().parents[2] / "irmodels" / "formula"
LME4 = Path(__file__).resolve().parents[1] / "reference" / "data" / "lme4"


# ---- parsing and the canonical name ---------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("log(Days+1)", "log(Days + 1)"),
        ("log( Days + 1 )", "log(Days + 1)"),
        ("I(x / 10)", "I(x/10)"),
        ("x - 3.5", "x - 3.5"),
        ("(a * b) / 2", "a * b/2"),
        ("a * (b / 2)", "a * (b/2)"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("-x", "-x"),
        ("-x^2", "-x^2"),
        ("(-x)^2", "(-x)^2"),
        ("x**2", "x^2"),
        ("a^b^c", "a^b^c"),
        ("(a^b)^c", "(a^b)^c"),
        ("x^-1", "x^(-1)"),
        ("2.50", "2.5"),
        ("1e-3 * x", "0.001 * x"),
        ("log10(abs(x - 1)) + exp(-y)", "log10(abs(x - 1)) + exp(-y)"),
        ("sqrt(`x y`)", "sqrt(`x y`)"),
        ("np.log(x+1) * numpy.exp(y)", "log(x + 1) * exp(y)"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    e = parse_expression(text)
    assert str(e) == canonical
    assert parse_expression(canonical) == e


def test_the_tree() -> None:
    assert parse_expression("log(Days + 1)") == Call("log", BinOp("+", Col("Days"), Num(1.0)))
    assert parse_expression("-x^2") == Neg(BinOp("^", Col("x"), Num(2.0)))
    assert parse_expression("-2") == Num(-2.0)
    assert columns_of(parse_expression("log(b + a * b) / c")) == ("b", "a", "c")


def test_statsmodels_test_formula_is_accepted() -> None:
    """statsmodels' MixedLM tests fit ``log(Days + 1) ~ ...`` style responses (a formula with an
    expression on the left); it parses, prints canonically and reads its columns."""
    spec = parse_formula("log(Days + 1) ~ Reaction + (1|Subject)")
    assert spec.response == "log(Days + 1)" and spec.transform is None
    assert spec.response_label == "log(Days + 1)"
    assert str(spec) == "log(Days + 1) ~ Reaction + (1|Subject)"
    assert spec.columns == ("Days", "Reaction", "Subject")


def test_statsmodels_kidney_anova_with_its_numpy_spelling() -> None:
    """statsmodels' own test (stats/tests/test_anova.py): ``np.log(Days+1) ~ C(Duration) *
    C(Weight)`` on the kidney data; the numpy spelling is read as ``log`` and the sums of
    squares equal statsmodels' anova_lm (type I) and the R values its test records."""
    sm_anova = pytest.importorskip("statsmodels.stats.tests.test_anova")
    kidney = sm_anova.kidney_table
    spec = parse_formula("np.log(Days+1) ~ C(Duration) * C(Weight)")
    assert str(spec) == "log(Days + 1) ~ C(Duration) + C(Weight) + C(Duration):C(Weight)"
    fit = irm.anova(spec, kidney, ss_type=1)
    ref = sm_anova.anova_lm(sm_anova.ols("np.log(Days+1) ~ C(Duration) * C(Weight)", kidney).fit())
    np.testing.assert_allclose(fit.table["SS"].to_numpy(), ref["sum_sq"].to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(fit.table["F"].to_numpy()[:3], ref["F"].to_numpy()[:3], rtol=1e-10)
    np.testing.assert_allclose(fit.table["SS"].to_numpy(), [2.339693, 16.97129, 0.6356584, 28.9892],
                               rtol=1e-6)  # R's, as statsmodels' test records them


def test_the_transforms_keep_working_and_printing_as_before() -> None:
    for text, transform in [("log(score) ~ system", "log"), ("logit(score) ~ system", "logit"),
                            ("sqrt(score) ~ system", "sqrt"), ("asin_sqrt(score) ~ system", "asin_sqrt"),
                            ("logit(score, eps=0.01) ~ system", "logit")]:
        spec = parse_formula(text)
        assert (spec.response, spec.transform, spec.expressions) == ("score", transform, ())
        assert str(spec) == f"{transform}(score) ~ system"
    y = pd.DataFrame({"score": [0.0, 0.5]})
    np.testing.assert_allclose(parse_formula("log(score) ~ 1").response_values(y), np.log([1e-3, 0.5]))


def test_covariate_expressions_on_the_right() -> None:
    spec = parse_formula("score ~ system*log(qlen) + I(depth/10) + sqrt(x + 1):system")
    assert spec.fixed_names == ("system", "log(qlen)", "I(depth/10)", "system:log(qlen)",
                                "system:sqrt(x + 1)")
    assert [k for k, _ in spec.expressions] == ["log(qlen)", "I(depth/10)", "sqrt(x + 1)"]
    assert spec.columns == ("score", "system", "qlen", "depth", "x")
    again = parse_formula(str(spec))
    assert (again.fixed, again.expressions) == (spec.fixed, spec.expressions)


@pytest.mark.parametrize(
    ("formula", "message", "caret"),
    [
        ("y ~ x^2", "'^' is a power only inside a function", (5, 6)),
        ("y ~ log(x)^2", "'^' is a power only inside a function", (10, 11)),
        ("y ~ log(x", "expected ')' closing log(", (9, 10)),
        ("y ~ log()", "expected a column, a number or a function", (8, 9)),
        ("y ~ log(x) + foo(x)", "functions are not allowed on the right-hand side ('foo')", (13, 16)),
        ("y ~ log(C(x))", "unknown function 'C' in an expression", (8, 9)),
        ("logit(y + 1) ~ x", "logit() transforms one column", (8, 9)),
        ("foo(y) ~ x", "unknown response transform 'foo'", (0, 3)),
        ("1e999 ~ x", "too large for double precision", (0, 5)),
        ("y + ~ x", "expected a column, a number or a function", (4, 5)),
        ("2 * 3 ~ x", "the response 2 * 3 reads no column", (0, 5)),
        ("log(y) + z x ~ x", "expected '~' after the response", (11, 12)),
    ],
)
def test_errors_point_at_the_span(formula: str, message: str, caret: tuple[int, int]) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(formula)
    assert message in info.value.reason
    assert info.value.span == caret
    assert str(info.value).splitlines()[2] == "  " + " " * caret[0] + "^" * (caret[1] - caret[0])


def test_columns_are_checked_inside_expressions() -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula("score ~ system + log(qlem + 1)", columns=["score", "system", "qlen"])
    assert "unknown column 'qlem' (did you mean 'qlen'?)" in str(info.value)
    assert info.value.span == (21, 25)
    with pytest.raises(FormulaError, match="both an expression and a column"):
        parse_formula("score ~ log(qlen)", columns=["score", "qlen", "log(qlen)"])


def test_nesting_is_bounded() -> None:
    from irmodels.formula import parser

    deep = "log(" * (parser.MAX_DEPTH + 1) + "x" + ")" * (parser.MAX_DEPTH + 1)
    with pytest.raises(FormulaError, match="nested more than"):
        parse_formula(f"y ~ {deep}")
    with pytest.raises(FormulaError, match="nested more than"):
        parse_formula(f"{deep} ~ z")
    parse_formula("y ~ " + "log(" * 10 + "x" + ")" * 10)


# ---- round trip: hypothesis builds trees, str -> parse gives them back -------------------

_names = st.sampled_from(["x", "y", "Days", "q.len", "`x y`", "log", "I"]).map(
    lambda n: Col(n.strip("`")))
_numbers = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False).map(Num)


def _extend(children):
    not_num = children.filter(lambda e: not isinstance(e, Num))
    return st.one_of(
        st.builds(Neg, not_num),
        st.builds(BinOp, st.sampled_from(["+", "-", "*", "/", "^"]), children, children),
        st.builds(Call, st.sampled_from(sorted(FUNCTIONS)), children),
    )


_trees = st.recursive(st.one_of(_names, _numbers), _extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_trees)
def test_round_trip_of_expressions(e) -> None:
    text = str(e)
    assert parse_expression(text) == e
    assert str(parse_expression(text)) == text


@settings(max_examples=100, deadline=None)
@given(_trees.filter(lambda e: isinstance(e, Call)), _trees)
def test_round_trip_in_formulas(rhs, lhs) -> None:
    assume(str(lhs) != str(rhs) and columns_of(lhs))
    spec = parse_formula(f"{lhs} ~ system + {rhs} + (1 + {rhs} | topic)")
    again = parse_formula(str(spec))
    assert (again.response, again.fixed, again.random, again.expressions) == (
        spec.response, spec.fixed, spec.random, spec.expressions)


# ---- evaluation against numpy ---------------------------------------------------------------

_CASES = [
    ("log(x + 1)", lambda x, y: np.log(x + 1)),
    ("log2(x) - log10(y)", lambda x, y: np.log2(x) - np.log10(y)),
    ("exp(-x/10)", lambda x, y: np.exp(-x / 10)),
    ("sqrt(x) * abs(y - 2)", lambda x, y: np.sqrt(x) * np.abs(y - 2)),
    ("I(x^2 + 2*x*y)", lambda x, y: x**2 + 2 * x * y),
    ("(x * y) / 2 - 3.5", lambda x, y: (x * y) / 2 - 3.5),
    ("-x^0.5", lambda x, y: -(x**0.5)),
    ("x^y^0.5", lambda x, y: x ** (y**0.5)),
]

_positive = st.lists(st.floats(min_value=0.01, max_value=50), min_size=1, max_size=20)


@pytest.mark.parametrize(("text", "reference"), _CASES, ids=[c[0] for c in _CASES])
@settings(max_examples=30, deadline=None)
@given(xs=_positive)
def test_evaluation_matches_numpy(text, reference, xs) -> None:
    x = np.array(xs)
    y = x[::-1] + 0.5
    got = evaluate(parse_expression(text), pd.DataFrame({"x": x, "y": y}))
    np.testing.assert_allclose(got, reference(x, y), rtol=1e-13, atol=0)
    same = evaluate(parse_expression(text), {"x": x, "y": y})  # any mapping of arrays
    np.testing.assert_array_equal(same, got)


@pytest.mark.parametrize(
    ("text", "x", "message"),
    [
        ("log(x)", [1.0, 0.0, -2.0, 3.0],
         r"log\(x\): x is not positive on 2 row\(s\) \(row position\(s\) 1, 2\), e\.g\. 0"),
        ("log10(x - 1)", [1.0, 2.0], r"x - 1 is not positive on 1 row\(s\) \(row position\(s\) 0\)"),
        ("sqrt(x - 2)", [3.0, 1.0, 0.0, 5.0, 1.5, 1.0, 0.0],
         r"x - 2 is negative on 5 row\(s\) \(row position\(s\) 1, 2, 4, 5, 6\)"),
        ("I(1/x)", [1.0, 0.0, 2.0], r"I\(1/x\): division by zero, x is 0 on 1 row\(s\) \(row position\(s\) 1\)"),
        ("I(x^0.5)", [4.0, -1.0], r"I\(x\^0\.5\): x\^0\.5 produced NaN on 1 row\(s\) \(row position\(s\) 1\)"),
        ("exp(x)", [1.0, 1000.0], r"exp\(x\) produced an infinite value on 1 row\(s\)"),
        ("I(x * 1e308 * 10)", [0.5, 1.0], r"produced an infinite value on 2 row\(s\)"),
        ("log(x)", [1.0] * 6 + [-1.0] * 7, r"on 7 row\(s\) \(row position\(s\) 6, 7, 8, 9, 10, \.\.\.\)"),
    ],
)
def test_domain_errors_name_the_rows(text: str, x: list, message: str) -> None:
    with pytest.raises(DataFormatError, match=message):
        evaluate(parse_expression(text), pd.DataFrame({"x": x}))


def test_missing_values_pass_through_and_bad_columns_are_refused() -> None:
    got = evaluate(parse_expression("log(x)"), {"x": np.array([np.nan, 1.0])})
    assert np.isnan(got[0]) and got[1] == 0.0
    with pytest.raises(DataFormatError, match="reads column 'z', which the data lack"):
        evaluate(parse_expression("log(z)"), pd.DataFrame({"x": [1.0]}))
    with pytest.raises(DataFormatError, match="holds str values, not numbers"):
        evaluate(parse_expression("log(s)"), pd.DataFrame({"s": ["a", "b"]}))
    with pytest.raises(DataFormatError, match="holds category values"):
        evaluate(parse_expression("I(c)"), pd.DataFrame({"c": pd.Categorical([1, 2])}))
    with pytest.raises(DataFormatError, match="holds bool values"):
        evaluate(parse_expression("I(b)"), pd.DataFrame({"b": [True, False]}))


# ---- wired into the models ------------------------------------------------------------------

@pytest.fixture
def scores() -> pd.DataFrame:
    rng = np.random.default_rng(27)
    d = pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(12)], 5),
                      "system": np.tile([f"s{j}" for j in range(5)], 12)})
    d["qlen"] = rng.integers(1, 12, len(d)).astype(float)
    d["score"] = np.clip(0.3 + 0.05 * np.log(d["qlen"]) + rng.normal(0, 0.1, len(d)), 0.01, 0.99)
    return d


def test_classify_and_covariate_values_read_expressions(scores) -> None:
    spec = _design.classify(parse_formula("score ~ system + log(qlen)"), scores)
    assert spec.covariates == ("log(qlen)",)
    np.testing.assert_array_equal(_design.covariate_values(scores, "log(qlen)"), np.log(scores["qlen"]))
    np.testing.assert_array_equal(spec.values(scores, "log(qlen)"), np.log(scores["qlen"]))
    with pytest.raises(irm.DesignError, match=r"covariate 'I\(qlen \* 0\)' is constant"):
        _design.covariate_values(scores, "I(qlen * 0)")


def test_anova_with_an_expression_equals_a_precomputed_column(scores) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        fit = irm.anova("score ~ system + log(qlen)", scores)
        ref = irm.anova("score ~ system + lq", scores.assign(lq=np.log(scores["qlen"])))
    assert list(fit.table.index) == ["system", "log(qlen)", "Residual"]
    np.testing.assert_allclose(fit.table.to_numpy(), ref.table.to_numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fit.marginal_means("system"), ref.marginal_means("system"), rtol=1e-12)


def test_anova_response_expression_equals_a_precomputed_column(scores) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        fit = irm.anova("I(score * 100) ~ topic + system", scores)
        ref = irm.anova("s100 ~ topic + system", scores.assign(s100=scores["score"] * 100))
    np.testing.assert_allclose(fit.table.to_numpy(), ref.table.to_numpy(), rtol=1e-12, atol=1e-15)
    assert fit.spec.response_label == "I(score * 100)"


def test_mixed_with_expressions_equals_precomputed_columns() -> None:
    d = pd.read_csv(LME4 / "sleepstudy.csv", dtype={"Subject": str})
    pre = d.assign(lr=np.log(d["Reaction"]), ld=np.log(d["Reaction"] + 1), dd=d["Days"] / 10)
    pairs = [("log(Reaction) ~ Days + (1|Subject)", "lr ~ Days + (1|Subject)"),
             ("log(Reaction + 1) ~ I(Days/10) + (1|Subject)", "ld ~ dd + (1|Subject)")]
    for formula, precomputed in pairs:
        fit, ref = irm.mixed(formula, d), irm.mixed(precomputed, pre)
        np.testing.assert_allclose(fit.fixed.to_numpy(), ref.fixed.to_numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(fit.variance_components().to_numpy(),
                                   ref.variance_components().to_numpy(), rtol=1e-12)
        assert fit.loglik == pytest.approx(ref.loglik, rel=1e-12)
    assert list(irm.mixed(pairs[1][0], d).fixed.index) == ["(Intercept)", "I(Days/10)"]


def test_a_domain_error_reaches_the_user_from_a_model(scores) -> None:
    with pytest.raises(DataFormatError, match=r"log\(qlen - 3\): qlen - 3 is not positive on \d+ row"):
        irm.anova("score ~ system + log(qlen - 3)", scores)


# ---- nothing is evaluated, and the formula package stays without pandas -------------------

def test_no_eval_exec_or_compile_in_the_formula_package() -> None:
    pattern = re.compile(r"(?<![\w.])(eval|exec|compile|__import__)\s*\(")
    found = {p.name: pattern.findall(p.read_text()) for p in PACKAGE.glob("*.py")}
    assert set(found) >= {"parser.py", "spec.py", "expr.py"}
    assert all(not hits for hits in found.values()), found
    assert re.search(r"re\.compile\(", (PACKAGE / "_lex.py").read_text())  # the grep sees calls


def test_formula_package_imports_no_pandas() -> None:
    code = ("import sys, irmodels.formula.expr, irmodels.formula.parser; "
            "from irmodels.formula.expr import evaluate, parse_expression; import numpy as np; "
            "evaluate(parse_expression('log(x + 1)'), {'x': np.ones(2)}); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
