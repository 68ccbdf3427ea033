"""Tokenizer and recursive-descent parser for the model formula language.

The language is the subset of R/lme4 formulas that IR evaluation models need::

    formula   := response "~" sum
    response  := NAME | TRANSFORM "(" NAME ["," ["eps" "="] NUMBER] ")" | EXPR
    sum       := ["-"] product (("+" | "-") product)*
    product   := inter (("*" | "/") inter)*
    inter     := atom (":" atom)*
    atom      := NAME | "C" "(" NAME ")" | FUNC "(" EXPR ")" | "0" | "1" | "(" sum ")"
               | "(" lhs ("|" | "||") group ")"
    lhs       := ["-"] effect (("+" | "-") effect)*
    effect    := "1" | "0" | NAME | "C" "(" NAME ")" | FUNC "(" EXPR ")"
    group     := NAME ((":" | "/") NAME)*

``a*b`` is ``a + b + a:b``; ``a/b`` is ``a + a:b``; ``- term`` removes a term; ``0`` or ``-1``
removes the intercept. ``(1|g)`` is a random intercept for the levels of ``g``;
``(1 + x|g)`` (or ``(x|g)``: the intercept is implied) adds a random slope of ``x``
correlated with it, ``(0 + x|g)`` (or ``-1``) a slope alone; ``(1 + x||g)`` is lme4's
uncorrelated form, expanded as lme4's ``expandDoubleVerts`` does into ``(1|g) + (0 + x|g)``
(a factor ``f`` stays one term ``(0 + f|g)``: its levels are not split);
``(lhs|a/b)`` expands to ``(lhs|a) + (lhs|a:b)``. Response transforms come from a whitelist
(``logit``, ``log``, ``sqrt``, ``asin_sqrt``) and apply to one column (``log(score)`` is the
clipped transform, as before). Anything else on the left (``log(Days + 1)``, ``I(x/10)``,
``-score``) and a function call of :data:`~irmodels.formula.expr.FUNCTIONS` on the right
(``log(qlen)``) is an expression ``EXPR`` of columns and numbers (grammar in
:mod:`irmodels.formula.expr`), named by its canonical text. ``C(x)`` (or ``factor(x)``)
declares the column ``x`` a factor even when it holds numbers. Nothing is ever evaluated
as Python.

Parsing is bounded: a formula longer than :data:`MAX_LENGTH` characters, parentheses nested
deeper than :data:`MAX_DEPTH`, an expansion to more than :data:`MAX_TERMS` fixed terms (checked
before the terms are built: ``a*b*...`` of 20 factors is refused at once), an interaction of
more than :data:`MAX_ORDER` factors, more than :data:`MAX_TERMS` random terms (after
expansion) or slopes in one term, or more than :data:`MAX_WORK` term constructions in all
raise :class:`~irmodels.FormulaError`. Time and memory are linear in the length of the formula.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from irmodels.errors import FormulaError
from irmodels.formula._lex import MAX_DEPTH, MAX_LENGTH, Token, tokenize
from irmodels.formula.expr import FUNCTIONS, Col, Expr, ExprParser, columns_of, function_name
from irmodels.formula.spec import DEFAULT_EPSILON, TRANSFORMS, ModelSpec, RandomTerm, Term

__all__ = ["parse_formula", "resolve", "PRESETS", "default_preset", "MAX_LENGTH", "MAX_DEPTH", "MAX_TERMS",
           "MAX_ORDER", "MAX_WORK", "FACTOR_FUNCTIONS"]

#: Most fixed terms a formula may expand to (``a*b*c`` is 7 terms); checked before expanding.
MAX_TERMS = 1_000
#: Most factors in one interaction term (``a:b:c`` has 3).
MAX_ORDER = 10
#: Most term constructions (one per term built by ``*``, ``/``, ``:`` or ``+``) in one parse.
MAX_WORK = 200_000
#: Right-hand-side functions that declare a column a factor (``C(qid)``).
FACTOR_FUNCTIONS = ("C", "factor")

#: The six models of Ferro & Sanderson (SIGIR 2019).
PRESETS: dict[str, str] = {
    "MD1": "score ~ topic + system",
    "MD2": "score ~ topic + system",
    "MD3": "score ~ topic + system + topic:system",
    "MD4": "score ~ topic + system + shard + topic:system",
    "MD5": "score ~ topic + system + shard + topic:system + system:shard",
    "MD6": "score ~ topic + system + shard + topic:system + topic:shard + system:shard",
}

def default_preset(data: Any) -> str:
    """The model fitted when none is named: ``"MD6"`` when ``data`` has a ``shard`` column with
    more than one level (a G-study of shards needs every two-way interaction), else ``"MD1"``.

    >>> import pandas as pd
    >>> default_preset(pd.DataFrame({"topic": [1], "system": ["a"], "score": [0.5]}))
    'MD1'
    >>> default_preset(pd.DataFrame({"shard": [1, 2], "topic": [1, 1], "system": ["a", "a"],
    ...                              "score": [0.5, 0.4]}))
    'MD6'
    """
    columns = getattr(data, "columns", ())
    return "MD6" if "shard" in columns and data["shard"].nunique() > 1 else "MD1"



# An expression evaluates to an ordered set of terms; each term is a tuple of factor names,
# keyed by its set of factors (``a:b`` and ``b:a`` are one term).
_TermMap = dict[frozenset[str], tuple[str, ...]]


@dataclass
class _Item:
    """What a sub-expression denotes: fixed terms, intercept flag, random terms, its span."""

    terms: _TermMap
    spans: dict[frozenset[str], tuple[int, int]]
    random: list[tuple[RandomTerm, tuple[int, int]]]
    span: tuple[int, int]
    intercept: bool | None = None  # True: "1" seen, False: "0" seen


class _Parser:
    def __init__(self, text: str):
        if len(text) > MAX_LENGTH:
            raise FormulaError(
                f"the formula has {len(text):,} characters, more than the limit of {MAX_LENGTH:,}; "
                "a model of that size cannot be fitted. Write fewer terms (a*b expands itself)."
            )
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0
        self.work = 0
        self.categorical: dict[str, tuple[int, int]] = {}
        #: expressions by canonical text, with the span of their first appearance
        self.expressions: dict[str, tuple[Expr, tuple[int, int]]] = {}
        self._is_random = _random_parens(self.toks)

    # -- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def _advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "end":
            self.i += 1
        return t

    def _expect(self, text: str, what: str) -> Token:
        t = self.tok
        if t.kind == "op" and t.text == text:
            return self._advance()
        found = "the end of the formula" if t.kind == "end" else repr(t.text)
        raise FormulaError(f"expected {what}, found {found}", self.text, (t.start, max(t.end, t.start + 1)))

    def _error(self, message: str, tok: Token | None = None) -> FormulaError:
        t = tok or self.tok
        return FormulaError(message, self.text, (t.start, max(t.end, t.start + 1)))

    def _spend(self, n: int, span: tuple[int, int]) -> None:
        """Count ``n`` term constructions against :data:`MAX_WORK` (before doing them)."""
        self.work += n
        if self.work > MAX_WORK:
            raise FormulaError(
                f"the formula needs more than {MAX_WORK:,} term constructions to expand; "
                "it is too large to be a model. Write fewer or smaller products.",
                self.text, span,
            )

    def _check_size(self, n_terms: int, op: Token, span: tuple[int, int]) -> None:
        if n_terms > MAX_TERMS:
            raise FormulaError(
                f"'{op.text}' here would expand to {n_terms:,} fixed terms, more than the limit of "
                f"{MAX_TERMS:,}; no model of that size can be fitted. Write the terms you need "
                "(e.g. a*b + c instead of a*b*c*...).",
                self.text, span,
            )

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> tuple[str, str | None, float, _Item]:
        if not self.text.strip():
            raise FormulaError("the formula is empty; write e.g. 'score ~ topic + system'")
        if not any(t.kind == "op" and t.text == "~" for t in self.toks):
            raise FormulaError(
                "a formula needs a response and '~', e.g. 'score ~ topic + system'",
                self.text,
                (0, len(self.text)),
            )
        response, transform, eps = self._response()
        self._expect("~", "'~' after the response")
        if self.tok.kind == "end":
            raise self._error("nothing after '~'; write the model terms, e.g. 'topic + system'")
        item = self._sum()
        if self.tok.kind != "end":
            raise self._error(f"unexpected {self.tok.text!r}")
        if len(item.terms) > MAX_TERMS:
            raise FormulaError(
                f"the formula has {len(item.terms):,} fixed terms, more than the limit of "
                f"{MAX_TERMS:,}; no model of that size can be fitted.", self.text, item.span,
            )
        return response, transform, eps, item

    def _is_transform(self) -> bool:
        """A whitelisted transform of one column (``logit(score)``, ``log(score, eps=0.01)``)
        rather than an expression (``log(Days + 1)``)."""
        t, toks = self.tok, self.toks
        if not (t.kind == "name" and t.text in TRANSFORMS and self.i + 3 < len(toks)):
            return False
        a, b, c = toks[self.i + 1], toks[self.i + 2], toks[self.i + 3]
        if not (a.kind == "op" and a.text == "("):
            return False
        if t.text not in FUNCTIONS:  # logit, asin_sqrt: always the transform
            return True
        if not (b.kind == "name" and c.kind == "op"):
            return False
        after = toks[self.i + 4] if self.i + 4 < len(toks) else c
        return c.text == "," or (c.text == ")" and after.kind == "op" and after.text == "~")

    def _expression(self, call_only: bool = False) -> tuple[Expr, tuple[int, int]]:
        """An expression from the current token; the parser stops at the first token that
        cannot continue it. On the right-hand side (``call_only``) it is one function call:
        '+', '*', ':' after it keep their formula meaning."""
        start = self.tok
        p = ExprParser(self.text, self.toks, self.i, MAX_DEPTH - self.depth)
        e = p.primary() if call_only else p.expr()
        self.i = p.i
        return e, (start.start, self.toks[self.i - 1].end)

    def _response(self) -> tuple[str, str | None, float]:
        t = self.tok
        nxt = self.toks[self.i + 1] if t.kind != "end" else t
        if (t.kind == "name" and nxt.kind == "op" and nxt.text == "~") or self._is_transform():
            return self._column_response()
        if (t.kind == "name" and nxt.kind == "op" and nxt.text == "("
                and function_name(t.text) is None):
            raise self._error(
                f"unknown response transform {t.text!r}; allowed: {', '.join(TRANSFORMS)} "
                f"(of a column), or an expression with {', '.join(FUNCTIONS)}", t
            )
        if t.kind == "op" and t.text == "~":
            raise self._error("the response must be a column name or an expression, e.g. 'score'", t)
        e, span = self._expression()
        if isinstance(e, Col):
            return e.name, None, DEFAULT_EPSILON
        if not columns_of(e):
            raise FormulaError(f"the response {e} reads no column; name the score column, e.g. "
                               "'score ~ topic + system'", self.text, span)
        name = str(e)
        self.expressions.setdefault(name, (e, span))
        return name, None, DEFAULT_EPSILON

    def _column_response(self) -> tuple[str, str | None, float]:
        t = self._advance()
        if t.kind != "name":
            raise self._error("the response must be a column name, e.g. 'score'", t)
        nxt = self.tok
        if nxt.kind == "op" and nxt.text == "(":
            if t.text not in TRANSFORMS:  # pragma: no cover - _response sends only transforms
                raise self._error(
                    f"unknown response transform {t.text!r}; allowed: {', '.join(TRANSFORMS)}", t
                )
            self._advance()
            inner = self._advance()
            if inner.kind != "name":
                raise self._error("expected a column name inside the transform", inner)
            if not (self.tok.kind == "op" and self.tok.text in "),"):
                raise self._error(
                    f"{t.text}() transforms one column (e.g. {t.text}(score)); for arithmetic "
                    f"use an expression with {', '.join(FUNCTIONS)}, e.g. log(score + 1)")
            eps = DEFAULT_EPSILON
            if self.tok.kind == "op" and self.tok.text == ",":
                self._advance()
                if self.tok.kind == "name":
                    kw = self._advance()
                    if kw.text != "eps":
                        raise self._error(f"unknown transform argument {kw.text!r}; only 'eps'", kw)
                    self._expect("=", "'=' after eps")
                num = self._advance()
                if num.kind != "number":
                    raise self._error("expected a number for eps", num)
                eps = float(num.text)
                if not 0 < eps < 0.5:
                    raise self._error(f"eps must be in (0, 0.5), got {num.text}", num)
                if t.text not in ("logit", "log"):
                    raise self._error(f"{t.text}() takes no eps; only logit and log do", num)
            self._expect(")", "')' closing the transform")
            return inner.text, t.text, eps
        return t.text, None, DEFAULT_EPSILON

    def _sum(self) -> _Item:
        first = self.tok
        out = _Item({}, {}, [], (first.start, first.end), None)
        sign = "+"
        if self.tok.kind == "op" and self.tok.text in "+-":
            sign = self._advance().text
        while True:
            start_tok = self.tok
            item = self._product()
            self._spend(len(item.terms) + 1, item.span)
            if sign == "+":
                _merge(out, item)
            else:
                if item.random:
                    raise self._error("a random term cannot be removed with '-'", start_tok)
                if item.intercept is True:
                    out.intercept = False
                elif item.intercept is False:
                    out.intercept = True
                for key, term in item.terms.items():
                    if key not in out.terms:
                        span = item.spans.get(key, item.span)
                        raise FormulaError(
                            f"cannot remove {':'.join(term)!r}: it is not among the terms before it",
                            self.text,
                            span,
                        )
                    del out.terms[key]
                out.span = (min(out.span[0], item.span[0]), max(out.span[1], item.span[1]))
            if len(out.terms) > MAX_TERMS:
                raise FormulaError(
                    f"the formula has more than {MAX_TERMS:,} fixed terms; no model of that size "
                    "can be fitted.", self.text, item.span,
                )
            if self.tok.kind == "op" and self.tok.text in "+-":
                sign = self._advance().text
                continue
            return out

    def _product(self) -> _Item:
        left = self._inter()
        while self.tok.kind == "op" and self.tok.text in "*/":
            op_tok = self._advance()
            right = self._inter()
            for side in (left, right):
                if side.random:
                    raise self._error("random terms (1|g) cannot be multiplied; add them with '+'", op_tok)
                if side.intercept is not None and not side.terms:
                    raise self._error(f"'{op_tok.text}' needs factors on both sides, not 0 or 1", op_tok)
            span = (min(left.span[0], right.span[0]), max(left.span[1], right.span[1]))
            nl, nr = len(left.terms), len(right.terms)
            # size before expanding: a*b has |a| + |b| + |a||b| terms, a/b has |a| + |b|
            size = nl + nr + nl * nr if op_tok.text == "*" else nl + nr
            self._check_size(size, op_tok, span)
            self._spend(size, span)
            terms: _TermMap = dict(left.terms)
            if op_tok.text == "*":
                for k, t in right.terms.items():
                    terms.setdefault(k, t)
                for a in left.terms.values():
                    for b in right.terms.values():
                        j = self._join(a, b, op_tok, span)
                        terms.setdefault(frozenset(j), j)
            else:  # a/b = a + a:b, with all of a's factors
                whole: tuple[str, ...] = ()
                for t in left.terms.values():
                    whole = self._join(whole, t, op_tok, span)
                for b in right.terms.values():
                    j = self._join(whole, b, op_tok, span)
                    terms.setdefault(frozenset(j), j)
            spans = left.spans
            spans.update({k: v for k, v in right.spans.items() if k not in spans})
            for k in terms:
                spans.setdefault(k, span)
            left = _Item(terms, spans, [], span, None)
        return left

    def _no_power(self) -> None:
        if self.tok.kind == "op" and self.tok.text in ("^", "**"):
            raise self._error(
                f"'{self.tok.text}' is a power only inside a function, e.g. I(x^2); the formula "
                "power (a + b)^2 is not supported: write the terms (a*b)")

    def _inter(self) -> _Item:
        left = self._atom()
        self._no_power()
        while self.tok.kind == "op" and self.tok.text == ":":
            op_tok = self._advance()
            right = self._atom()
            self._no_power()
            for side in (left, right):
                if side.random or (side.intercept is not None and not side.terms):
                    raise self._error("':' joins factors, e.g. topic:system", op_tok)
            span = (min(left.span[0], right.span[0]), max(left.span[1], right.span[1]))
            size = len(left.terms) * len(right.terms)
            self._check_size(size, op_tok, span)
            self._spend(size, span)
            terms: _TermMap = {}
            for a in left.terms.values():
                for b in right.terms.values():
                    j = self._join(a, b, op_tok, span)
                    terms.setdefault(frozenset(j), j)
            left = _Item(terms, {k: span for k in terms}, [], span, None)
        return left

    def _join(self, a: tuple[str, ...], b: tuple[str, ...], op: Token,
              span: tuple[int, int]) -> tuple[str, ...]:
        j = _join(a, b)
        if len(j) > MAX_ORDER:
            raise FormulaError(
                f"'{op.text}' here builds an interaction of {len(j)} factors, more than the limit "
                f"of {MAX_ORDER}; such a term cannot be estimated from IR data.",
                self.text, span,
            )
        return j

    def _atom(self) -> _Item:
        t = self.tok
        if t.kind == "name":
            self._advance()
            if self.tok.kind == "op" and self.tok.text == "(":
                if t.text in FACTOR_FUNCTIONS:
                    return self._factor_call(t)
                if function_name(t.text) is not None:
                    self.i -= 1
                    name, span = self._rhs_expression()
                    key = frozenset((name,))
                    return _Item({key: (name,)}, {key: span}, [], span, None)
                raise self._error(
                    f"functions are not allowed on the right-hand side ({t.text!r}) but "
                    f"C()/factor() (a column read as a factor) and the covariate expressions "
                    f"{', '.join(f + '()' for f in FUNCTIONS)}; use columns, ':' and '*'",
                    t,
                )
            key = frozenset((t.text,))
            return _Item({key: (t.text,)}, {key: (t.start, t.end)}, [], (t.start, t.end), None)
        if t.kind == "number":
            self._advance()
            if t.text in ("0", "1"):
                return _Item({}, {}, [], (t.start, t.end), t.text == "1")
            raise self._error(f"unexpected number {t.text}; only 0 and 1 (the intercept) are allowed", t)
        if t.kind == "op" and t.text == "(":
            open_i = self.i
            open_tok = self._advance()
            if self._is_random.get(open_i, False):
                return self._random(open_tok)
            if self.depth >= MAX_DEPTH:
                raise FormulaError(
                    f"parentheses nested more than {MAX_DEPTH} deep; simplify the formula",
                    self.text, (open_tok.start, open_tok.end),
                )
            self.depth += 1
            inner = self._sum()
            self.depth -= 1
            close = self._expect(")", "')'")
            inner.span = (open_tok.start, close.end)
            return inner
        if t.kind == "end":
            raise self._error("the formula ends where a term was expected")
        raise self._error(f"unexpected {t.text!r} where a term was expected", t)

    def _rhs_expression(self) -> tuple[str, tuple[int, int]]:
        """A covariate expression ``log(qlen)``, ``I(x/10)`` (a function call) on the right."""
        e, span = self._expression(call_only=True)
        name = str(e)
        self.expressions.setdefault(name, (e, span))
        return name, span

    def _factor_call(self, fn: Token) -> _Item:
        self._advance()  # "("
        name = self._advance()
        if name.kind != "name":
            raise self._error(f"{fn.text}() takes one column name, e.g. {fn.text}(qid)", name)
        close = self._expect(")", f"')' closing {fn.text}(")
        self.categorical.setdefault(name.text, (name.start, name.end))
        key = frozenset((name.text,))
        span = (fn.start, close.end)
        return _Item({key: (name.text,)}, {key: span}, [], span, None)

    def _lhs_end(self) -> int:
        """End of the random term's left side (the character before '|'), for a caret."""
        k, end = self.i, self.tok.start
        while self.toks[k].kind != "end" and not (self.toks[k].kind == "op" and self.toks[k].text == "|"):
            end = self.toks[k].end
            k += 1
        return end

    def _random(self, open_tok: Token) -> _Item:
        """``( lhs | group )`` or ``( lhs || group )``; lhs: ``1``, ``0``, ``-1`` and slope
        columns joined by '+' (lme4's syntax; the intercept is implied)."""
        lhs_start = self.tok
        lhs_end = self._lhs_end()
        lhs_span = (lhs_start.start, max(lhs_end, lhs_start.start + 1))
        if self.tok.kind == "op" and self.tok.text == "|":
            raise FormulaError(
                "the left side of a random term is empty; write (1|group) for a random "
                "intercept or (1 + x|group) for a random slope of x",
                self.text, (open_tok.start, self.tok.end),
            )
        intercept: bool | None = None
        effects: list[str] = []
        spans: dict[str, tuple[int, int]] = {}
        sign = "+"
        if self.tok.kind == "op" and self.tok.text in "+-":
            sign = self._advance().text
        while True:
            t = self.tok
            if t.kind == "number" and t.text in ("0", "1"):
                self._advance()
                one = t.text == "1"
                intercept = one if sign == "+" else not one
            elif t.kind == "name":
                nxt = self.toks[self.i + 1]
                if nxt.kind == "op" and nxt.text == "(":
                    if t.text in FACTOR_FUNCTIONS:
                        self._advance()
                        self._advance()
                        col = self._advance()
                        if col.kind != "name":
                            raise self._error(f"{t.text}() takes one column name, e.g. {t.text}(qid)", col)
                        close = self._expect(")", f"')' closing {t.text}(")
                        self.categorical.setdefault(col.text, (col.start, col.end))
                        name, span = col.text, (t.start, close.end)
                    elif function_name(t.text) is not None:
                        name, span = self._rhs_expression()
                    else:
                        raise self._error(
                            f"unknown function {t.text!r} in a random term; allowed: C(), factor(), "
                            f"{', '.join(f + '()' for f in FUNCTIONS)}", t)
                else:
                    self._advance()
                    name, span = t.text, (t.start, t.end)
                if sign == "-":
                    raise FormulaError(
                        f"cannot remove {name!r} from a random term; list the slopes you want",
                        self.text, span)
                if name in spans:
                    raise FormulaError(
                        f"the effect {name!r} appears twice on the left of this random term; "
                        "write it once", self.text, span)
                spans[name] = span
                effects.append(name)
            elif t.kind == "op" and t.text == "|":
                raise self._error("expected an effect after the sign, e.g. (1 + x|group)", t)
            else:
                found = "the end of the formula" if t.kind == "end" else repr(t.text)
                raise self._error(
                    f"expected 1, 0 or a column on the left of '|' in a random term, found {found}", t)
            if self.tok.kind == "op" and self.tok.text in ("^", "**", ":", "*", "/"):
                raise self._error(
                    f"'{self.tok.text}' is not supported on the left of a random term; list the "
                    "slope columns joined by '+' (an expression inside a function, e.g. I(x^2))")
            if self.tok.kind == "op" and self.tok.text in "+-":
                sign = self._advance().text
                continue
            break
        if len(effects) > MAX_TERMS:
            raise FormulaError(
                f"the random term has {len(effects):,} slopes, more than the limit of {MAX_TERMS:,}",
                self.text, lhs_span)
        has_intercept = intercept is not False
        if not has_intercept and not effects:
            raise FormulaError(
                "this random term has neither an intercept nor a slope ((0|g) is empty); write "
                "(1|group) for a random intercept or (0 + x|group) for a slope alone",
                self.text, lhs_span)
        self._expect("|", "'|' in a random term (1|group)")
        double = False
        if self.tok.kind == "op" and self.tok.text == "|":
            self._advance()
            double = True
        first = self._advance()
        if first.kind != "name":
            raise self._error("expected a grouping factor after '|'", first)
        groups: list[tuple[str, ...]] = [(first.text,)]
        current: tuple[str, ...] = (first.text,)
        while self.tok.kind == "op" and self.tok.text in ":/":
            op = self._advance()
            nm = self._advance()
            if nm.kind != "name":
                raise self._error("expected a factor name", nm)
            current = self._join(current, (nm.text,), op, (open_tok.start, nm.end))
            if op.text == ":":
                groups[-1] = current
            else:  # nesting: keep the outer group, add the inner interaction
                groups.append(current)
            self._spend(len(current), (open_tok.start, nm.end))
        close = self._expect(")", "')' closing the random term")
        span = (open_tok.start, close.end)
        if double:  # lme4's expandDoubleVerts: (1|g) + (0 + x|g) + ..., a factor kept whole
            parts: list[tuple[bool, tuple[str, ...]]]
            parts = ([(True, ())] if has_intercept else []) + [(False, (e,)) for e in effects]
        else:
            parts = [(has_intercept, tuple(effects))]
        n = len(parts) * len(groups)
        self._spend(n, span)
        if n > MAX_TERMS:
            raise FormulaError(
                f"this random term expands to {n:,} terms, more than the limit of {MAX_TERMS:,}",
                self.text, span)
        random = [(RandomTerm(g, icpt, eff), span) for icpt, eff in parts for g in groups]
        return _Item({}, {}, random, span, None)


def _random_parens(toks: list[Token]) -> dict[int, bool]:
    """One pass: for every '(' (token index), whether a '|' sits at its top level."""
    is_random: dict[int, bool] = {}
    stack: list[int] = []
    for i, t in enumerate(toks):
        if t.kind != "op":
            continue
        if t.text == "(":
            stack.append(i)
            is_random[i] = False
        elif t.text == ")":
            if stack:
                stack.pop()
        elif t.text == "|" and stack:
            is_random[stack[-1]] = True
    return is_random


def _join(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    out = list(a)
    for f in b:
        if f not in out:
            out.append(f)
    return tuple(out)


def _merge(into: _Item, item: _Item) -> None:
    for k, t in item.terms.items():
        into.terms.setdefault(k, t)
    for k, v in item.spans.items():
        into.spans.setdefault(k, v)
    into.random.extend(item.random)
    into.span = (min(into.span[0], item.span[0]), max(into.span[1], item.span[1]))
    if item.intercept is not None:
        into.intercept = item.intercept


def _column_names(toks: list[Token]) -> list[tuple[str, tuple[int, int]]]:
    """Every column name of the formula with its span, in order (functions and 'eps=' left out)."""
    out: list[tuple[str, tuple[int, int]]] = []
    for i, t in enumerate(toks):
        if t.kind != "name":
            continue
        nxt = toks[i + 1]
        if nxt.kind == "op" and nxt.text == "(":
            continue  # a transform or C(): the parser checks the function name
        if t.text == "eps" and nxt.kind == "op" and nxt.text == "=":
            continue
        out.append((t.text, (t.start, t.end)))
    return out


def _check_columns(
    text: str, names: Iterable[tuple[str, tuple[int, int]]], columns: Sequence[str]
) -> None:
    available = [str(c) for c in columns]
    known = set(available)
    for name, span in names:
        if name not in known:
            close = difflib.get_close_matches(name, available, n=1)
            shown = ", ".join(available[:20]) + (", ..." if len(available) > 20 else "")
            hint = f" (did you mean {close[0]!r}?)" if close else f" (columns: {shown})"
            raise FormulaError(f"unknown column {name!r}{hint}", text, span)


def parse_formula(
    formula: str, columns: Sequence[str] | None = None, *, epsilon: float | None = None
) -> ModelSpec:
    """Parse a model formula into a frozen :class:`~irmodels.formula.ModelSpec`.

    Parameters
    ----------
    formula : str
        E.g. ``"score ~ topic + system"``, ``"logit(score) ~ system + (1|topic/system)"``.
    columns : sequence of str, optional
        When given, every name in the formula must be one of these (else
        :class:`~irmodels.FormulaError` with a did-you-mean hint and a caret under the name).
    epsilon : float, optional
        Clipping constant for ``logit``/``log``; overrides an ``eps=`` written in the formula.

    Returns
    -------
    ModelSpec
        Fixed terms in R's order (main effects, then two-way interactions, ... each in order of
        appearance; factors inside an interaction in order of first appearance in the formula),
        random terms in order of appearance.

    Examples
    --------
    >>> from irmodels.formula import parse_formula
    >>> spec = parse_formula("score ~ topic*system - topic:system + (1|topic/system)")
    >>> spec.fixed_names, spec.random_names
    (('topic', 'system'), ('topic', 'topic:system'))
    >>> str(parse_formula("logit(score, eps=0.01) ~ system + (1|topic)"))
    'logit(score) ~ system + (1|topic)'
    >>> parse_formula("score ~ sytem", columns=["topic", "system", "score"])
    Traceback (most recent call last):
    ...
    irmodels.errors.FormulaError: unknown column 'sytem' (did you mean 'system'?)
      score ~ sytem
              ^^^^^
    """
    if not isinstance(formula, str):
        raise FormulaError(f"a formula must be a string, got {type(formula).__name__}")
    parser = _Parser(formula)
    names = _column_names(parser.toks)
    if columns is not None:  # before any expansion: an unknown column costs one pass
        _check_columns(formula, names, columns)
    response, transform, eps, item = parser.parse()
    if epsilon is not None:
        eps = float(epsilon)

    # order of first appearance of every factor name (for labels like topic:system); an
    # expression counts from its first character
    order: dict[str, int] = {}
    placed = sorted([(span[0], name) for name, span in names]
                    + [(span[0], name) for name, (_, span) in parser.expressions.items()])
    for _, name in placed:
        order.setdefault(name, len(order))
    terms = list(item.terms.values())
    appearance = {frozenset(t): i for i, t in enumerate(terms)}
    fixed_terms = [tuple(sorted(t, key=lambda f: order[f])) for t in terms]
    # R's order: by interaction order, then order of appearance
    fixed_terms = sorted(fixed_terms, key=lambda t: (len(t), appearance[frozenset(t)]))

    # per grouping, the intercept ("1") and every slope at most once over all its terms
    random_seen: dict[frozenset[str], set[str]] = {}
    random_terms: list[RandomTerm] = []
    for rt, span in item.random:
        seen = random_seen.setdefault(rt.key, set())
        parts = (["1"] if rt.intercept else []) + list(rt.effects)
        dup = [p for p in parts if p in seen]
        if dup and any(r == rt for r, _ in item.random[:len(random_terms)]):
            raise FormulaError(f"random term {rt} appears twice", formula, span)
        if dup:
            what = "the intercept" if dup[0] == "1" else f"the effect {dup[0]!r}"
            raise FormulaError(
                f"{what} of grouping {rt.name!r} appears in two random terms; lme4 would fit "
                f"two variances for one effect. Keep it in one term.", formula, span)
        seen.update(parts)
        random_terms.append(rt)
    if len(random_terms) > MAX_TERMS:
        raise FormulaError(
            f"the formula has {len(random_terms):,} random terms, more than the limit of "
            f"{MAX_TERMS:,}", formula, item.span)

    in_terms = ({f for t in fixed_terms for f in t} | {f for r, _ in item.random for f in r.factors}
                | {e for r, _ in item.random for e in r.effects})
    if response in in_terms:
        raise FormulaError(f"the response {response!r} also appears as a term", formula, None)
    for name, (_, span) in parser.expressions.items():
        if columns is not None and name in columns and name != response:
            raise FormulaError(
                f"{name!r} is both an expression and a column of the data; rename the column "
                "(or write the expression differently, e.g. I(...))", formula, span)
    fixed_factors = {f for t in fixed_terms for f in t} | {e for r in random_terms for e in r.effects}
    for name, span in parser.categorical.items():
        if name not in fixed_factors:  # pragma: no cover - C(x) always yields a term
            raise FormulaError(f"C({name}) is not a fixed term", formula, span)

    return ModelSpec(
        formula=formula,
        response=response,
        transform=transform,
        intercept=item.intercept is not False,
        fixed=tuple(Term(t) for t in fixed_terms),
        random=tuple(random_terms),
        epsilon=eps,
        categorical=frozenset(parser.categorical),
        expressions=tuple((name, e) for name, (e, _) in parser.expressions.items()
                          if name in fixed_factors or name == response),
    )


def resolve(model: str | ModelSpec, columns: Sequence[str] | None = None) -> ModelSpec:
    """Turn a preset name (``"MD1"``..``"MD6"``), a formula or a ModelSpec into a ModelSpec.

    Examples
    --------
    >>> from irmodels.formula import resolve
    >>> resolve("md6").fixed_names
    ('topic', 'system', 'shard', 'topic:system', 'topic:shard', 'system:shard')
    """
    if isinstance(model, ModelSpec):
        if columns is not None:
            _check_columns(model.formula, [(f, (0, 0)) for f in model.columns], columns)
        return model
    if not isinstance(model, str):
        raise FormulaError(
            f"a model is a formula string, a preset name (MD1..MD6) or a ModelSpec; got {type(model).__name__}"
        )
    preset = PRESETS.get(model.strip().upper())
    if preset is not None:
        return parse_formula(preset, columns)
    if "~" not in model and re.fullmatch(r"\s*[A-Za-z]+\d*\s*", model):
        raise FormulaError(
            f"unknown model {model!r}; presets are {', '.join(PRESETS)}, or write a formula "
            "such as 'score ~ topic + system'"
        )
    return parse_formula(model, columns)
