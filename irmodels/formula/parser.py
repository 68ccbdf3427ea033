"""Tokenizer and recursive-descent parser for the model formula language.

The language is the subset of R/lme4 formulas that IR evaluation models need::

    formula   := response "~" sum
    response  := NAME | TRANSFORM "(" NAME ["," ["eps" "="] NUMBER] ")"
    sum       := ["-"] product (("+" | "-") product)*
    product   := inter (("*" | "/") inter)*
    inter     := atom (":" atom)*
    atom      := NAME | "0" | "1" | "(" sum ")" | "(" "1" "|" group ")"
    group     := NAME ((":" | "/") NAME)*

``a*b`` is ``a + b + a:b``; ``a/b`` is ``a + a:b``; ``- term`` removes a term; ``0`` or ``-1``
removes the intercept; ``(1|g)`` is a random intercept for the levels of ``g``;
``(1|a/b)`` expands to ``(1|a) + (1|a:b)``. Response transforms come from a whitelist
(``logit``, ``log``, ``sqrt``, ``asin_sqrt``). Nothing is ever evaluated.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from irmodels.errors import FormulaError
from irmodels.formula.spec import DEFAULT_EPSILON, TRANSFORMS, ModelSpec, RandomTerm, Term

__all__ = ["parse_formula", "resolve", "PRESETS"]

#: The six models of Ferro & Sanderson (SIGIR 2019), METHODS.md section 2.
PRESETS: dict[str, str] = {
    "MD1": "score ~ topic + system",
    "MD2": "score ~ topic + system",
    "MD3": "score ~ topic + system + topic:system",
    "MD4": "score ~ topic + system + shard + topic:system",
    "MD5": "score ~ topic + system + shard + topic:system + system:shard",
    "MD6": "score ~ topic + system + shard + topic:system + topic:shard + system:shard",
}

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*|`[^`]+`)
  | (?P<op>[~+\-*/:|(),=])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str  # "name", "number", "op", "end"
    text: str
    start: int
    end: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise FormulaError(f"unexpected character {text[pos]!r}", text, (pos, pos + 1))
        kind = m.lastgroup or ""
        if kind != "ws":
            value = m.group(kind)
            if kind == "name" and value.startswith("`"):
                value = value[1:-1]
            toks.append(_Tok(kind, value, m.start(), m.end()))
        pos = m.end()
    toks.append(_Tok("end", "", len(text), len(text)))
    return toks


# An expression evaluates to an ordered list of terms; each term is a tuple of factor names.
_TermList = list[tuple[str, ...]]


@dataclass
class _Item:
    """What a sub-expression denotes: fixed terms, removals, intercept flags, random terms."""

    terms: _TermList
    spans: dict[tuple[str, ...], tuple[int, int]]
    random: list[tuple[tuple[str, ...], tuple[int, int]]]
    intercept: bool | None = None  # True: "1" seen, False: "0" seen


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # -- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def _advance(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def _expect(self, text: str, what: str) -> _Tok:
        t = self.tok
        if t.kind == "op" and t.text == text:
            return self._advance()
        found = "the end of the formula" if t.kind == "end" else repr(t.text)
        raise FormulaError(f"expected {what}, found {found}", self.text, (t.start, max(t.end, t.start + 1)))

    def _error(self, message: str, tok: _Tok | None = None) -> FormulaError:
        t = tok or self.tok
        return FormulaError(message, self.text, (t.start, max(t.end, t.start + 1)))

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
        return response, transform, eps, item

    def _response(self) -> tuple[str, str | None, float]:
        t = self._advance()
        if t.kind != "name":
            raise self._error("the response must be a column name, e.g. 'score'", t)
        nxt = self.tok
        if nxt.kind == "op" and nxt.text == "(":
            if t.text not in TRANSFORMS:
                raise self._error(
                    f"unknown response transform {t.text!r}; allowed: {', '.join(TRANSFORMS)}", t
                )
            self._advance()
            inner = self._advance()
            if inner.kind != "name":
                raise self._error("expected a column name inside the transform", inner)
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
        out = _Item([], {}, [], None)
        sign = "+"
        if self.tok.kind == "op" and self.tok.text in "+-":
            sign = self._advance().text
        while True:
            start_tok = self.tok
            item = self._product()
            if sign == "+":
                _merge(out, item)
            else:
                if item.random:
                    raise self._error("a random term cannot be removed with '-'", start_tok)
                if item.intercept is True:
                    out.intercept = False
                elif item.intercept is False:
                    out.intercept = True
                for term in item.terms:
                    key = frozenset(term)
                    kept = [x for x in out.terms if frozenset(x) != key]
                    if len(kept) == len(out.terms):
                        span = item.spans.get(term, (start_tok.start, start_tok.end))
                        raise FormulaError(
                            f"cannot remove {':'.join(term)!r}: it is not among the terms before it",
                            self.text,
                            span,
                        )
                    out.terms = kept
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
            cross = [_join(a, b) for a in left.terms for b in right.terms]
            spans = {**left.spans, **right.spans}
            span = (min(s[0] for s in spans.values()), max(s[1] for s in spans.values()))
            if op_tok.text == "*":
                terms = left.terms + right.terms + cross
            else:  # a/b = a + a:b, with all of a's factors
                whole: tuple[str, ...] = ()
                for t in left.terms:
                    whole = _join(whole, t)
                terms = left.terms + [_join(whole, b) for b in right.terms]
            for t in terms:
                spans.setdefault(t, span)
            left = _Item(_dedupe(terms), spans, [], None)
        return left

    def _inter(self) -> _Item:
        left = self._atom()
        while self.tok.kind == "op" and self.tok.text == ":":
            op_tok = self._advance()
            right = self._atom()
            for side in (left, right):
                if side.random or (side.intercept is not None and not side.terms):
                    raise self._error("':' joins factors, e.g. topic:system", op_tok)
            spans = {**left.spans, **right.spans}
            span = (min(s[0] for s in spans.values()), max(s[1] for s in spans.values()))
            terms = _dedupe([_join(a, b) for a in left.terms for b in right.terms])
            left = _Item(terms, {t: span for t in terms}, [], None)
        return left

    def _atom(self) -> _Item:
        t = self.tok
        if t.kind == "name":
            self._advance()
            if self.tok.kind == "op" and self.tok.text == "(":
                raise self._error(
                    f"functions are not allowed on the right-hand side ({t.text!r}); "
                    "use factor columns, ':' and '*'",
                    t,
                )
            return _Item([(t.text,)], {(t.text,): (t.start, t.end)}, [], None)
        if t.kind == "number":
            self._advance()
            if t.text in ("0", "1"):
                return _Item([], {}, [], t.text == "1")
            raise self._error(f"unexpected number {t.text}; only 0 and 1 (the intercept) are allowed", t)
        if t.kind == "op" and t.text == "(":
            open_tok = self._advance()
            # random term?
            j = self.i
            depth = 0
            is_random = False
            while self.toks[j].kind != "end":
                tx = self.toks[j]
                if tx.kind == "op" and tx.text == "(":
                    depth += 1
                elif tx.kind == "op" and tx.text == ")":
                    if depth == 0:
                        break
                    depth -= 1
                elif tx.kind == "op" and tx.text == "|" and depth == 0:
                    is_random = True
                    break
                j += 1
            if is_random:
                return self._random(open_tok)
            inner = self._sum()
            self._expect(")", "')'")
            return inner
        if t.kind == "end":
            raise self._error("the formula ends where a term was expected")
        raise self._error(f"unexpected {t.text!r} where a term was expected", t)

    def _random(self, open_tok: _Tok) -> _Item:
        lhs = self.tok
        if not (lhs.kind == "number" and lhs.text == "1"):
            # find the extent of the left-hand side for the caret
            end = lhs.end
            k = self.i
            while not (self.toks[k].kind == "op" and self.toks[k].text == "|"):
                end = self.toks[k].end
                k += 1
            raise FormulaError(
                "only random intercepts (1|group) are supported; random slopes are not",
                self.text,
                (lhs.start, end),
            )
        self._advance()
        self._expect("|", "'|' in a random term (1|group)")
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
            if op.text == ":":
                current = _join(current, (nm.text,))
                groups[-1] = current
            else:  # nesting: keep the outer group, add the inner interaction
                current = _join(current, (nm.text,))
                groups.append(current)
        close = self._expect(")", "')' closing the random term")
        span = (open_tok.start, close.end)
        return _Item([], {}, [(g, span) for g in groups], None)


def _join(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    out = list(a)
    for f in b:
        if f not in out:
            out.append(f)
    return tuple(out)


def _dedupe(terms: Iterable[tuple[str, ...]]) -> _TermList:
    seen: set[frozenset[str]] = set()
    out: _TermList = []
    for t in terms:
        k = frozenset(t)
        if k and k not in seen:
            seen.add(k)
            out.append(t)
    return out


def _merge(into: _Item, item: _Item) -> None:
    into.terms = _dedupe(into.terms + item.terms)
    for k, v in item.spans.items():
        into.spans.setdefault(k, v)
    into.random.extend(item.random)
    if item.intercept is not None:
        into.intercept = item.intercept


def _check_columns(
    text: str, names: Iterable[tuple[str, tuple[int, int]]], columns: Sequence[str]
) -> None:
    available = [str(c) for c in columns]
    for name, span in names:
        if name not in available:
            close = difflib.get_close_matches(name, available, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (columns: {', '.join(available)})"
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
    response, transform, eps, item = parser.parse()
    if epsilon is not None:
        eps = float(epsilon)

    # order of first appearance of every factor name (for labels like topic:system)
    order: dict[str, int] = {}
    for tok in parser.toks:
        if tok.kind == "name" and tok.text not in TRANSFORMS and tok.text != "eps":
            order.setdefault(tok.text, len(order))
    fixed_terms = [tuple(sorted(t, key=lambda f: order[f])) for t in item.terms]
    # R's order: by interaction order, then order of appearance
    appearance = {frozenset(t): i for i, t in enumerate(_dedupe(item.terms))}
    fixed_terms = sorted(fixed_terms, key=lambda t: (len(t), appearance[frozenset(t)]))

    random_seen: set[frozenset[str]] = set()
    random_terms: list[RandomTerm] = []
    for group, span in item.random:
        key = frozenset(group)
        if key in random_seen:
            raise FormulaError(f"random term (1|{':'.join(group)}) appears twice", formula, span)
        random_seen.add(key)
        random_terms.append(RandomTerm(group))

    if response in {f for t in fixed_terms for f in t} | {f for g, _ in item.random for f in g}:
        raise FormulaError(f"the response {response!r} also appears as a term", formula, None)

    if columns is not None:
        names: list[tuple[str, tuple[int, int]]] = []
        for tok in parser.toks:
            if tok.kind == "name" and tok.text not in TRANSFORMS and tok.text != "eps":
                names.append((tok.text, (tok.start, tok.end)))
        _check_columns(formula, names, columns)

    return ModelSpec(
        formula=formula,
        response=response,
        transform=transform,
        intercept=item.intercept is not False,
        fixed=tuple(Term(t) for t in fixed_terms),
        random=tuple(random_terms),
        epsilon=eps,
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
            _check_columns(model.formula, [(f, (0, 0)) for f in (model.response, *model.factors)], columns)
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
