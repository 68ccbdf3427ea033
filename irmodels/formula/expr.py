"""Arithmetic expressions of columns in a formula: a small AST and its interpreter over numpy.

An expression is written where a column is (``log(Days + 1) ~ ...``, ``score ~ system +
log(qlen)``, ``I(x / 10)``). It is parsed by the formula parser into the dataclasses below and
evaluated here on numpy arrays; no user text is ever handed to Python's ``eval``.

Grammar (``^`` and ``**`` are the same power)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := "-" unary | "+" unary | power
    power   := primary (("^" | "**") unary)?        # right-associative, binds tighter than "-"
    primary := NUMBER | NAME | FUNC "(" expr ")" | "(" expr ")"

with ``FUNC`` one of :data:`FUNCTIONS`. Precedence is R's (``-x^2`` is ``-(x^2)``). The
printed form (``str``) is canonical, as R deparses: spaces around ``+``, ``-`` and ``*``, none
around ``/`` and ``^``, parentheses only where needed; it parses back to the same tree and is
the column label of the expression in tables.

Evaluation refuses, with :class:`~irmodels.DataFormatError` naming the rows, a logarithm of a
non-positive value, a square root of a negative one, a division by zero, and any NaN or
infinity produced from finite values (``exp(1000)``, ``(-8)^(1/3)``). Missing values (NaN) in
a column pass through unchanged: the models refuse them with their own messages.

This module imports no pandas (see CONTRIBUTING.md, "Start-up").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from irmodels.errors import DataFormatError, FormulaError
from irmodels.formula._lex import MAX_DEPTH, MAX_LENGTH, quoted, tokenize

__all__ = ["Num", "Col", "Neg", "BinOp", "Call", "Expr", "FUNCTIONS", "ALIASES", "columns_of",
           "evaluate", "function_name", "parse_expression", "is_plain_column"]

#: Functions allowed in an expression (``I`` is the identity, as R's ``I()``).
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log": np.log, "log2": np.log2, "log10": np.log10, "exp": np.exp, "sqrt": np.sqrt,
    "abs": np.abs, "I": lambda x: x,
}

#: numpy spellings accepted for the same functions (``np.log(Days+1)``, as in statsmodels'
#: formulas); they print without the prefix.
ALIASES: dict[str, str] = {f"{m}.{f}": f for m in ("np", "numpy") for f in FUNCTIONS if f != "I"}


def function_name(name: str) -> str | None:
    """The canonical name of the expression function ``name`` (``np.log`` -> ``log``), or None."""
    return name if name in FUNCTIONS else ALIASES.get(name)


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "^": 4}


@dataclass(frozen=True)
class Num:
    """A numeric constant."""

    value: float

    def __str__(self) -> str:
        v = float(self.value)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(v)


@dataclass(frozen=True)
class Col:
    """A column of the data."""

    name: str

    def __str__(self) -> str:
        return quoted(self.name)


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Expr

    def __str__(self) -> str:
        return "-" + _wrap(self.operand, _PREC["neg"], strict=False)


@dataclass(frozen=True)
class BinOp:
    """``left op right`` with ``op`` one of ``+ - * / ^``."""

    op: str
    left: Expr
    right: Expr

    def __str__(self) -> str:
        p = _PREC[self.op]
        if self.op == "^":  # right-associative: a^b^c is a^(b^c)
            return f"{_wrap(self.left, p, strict=True)}^{_wrap(self.right, p, strict=False)}"
        sep = self.op if self.op == "/" else f" {self.op} "
        return f"{_wrap(self.left, p, strict=False)}{sep}{_wrap(self.right, p, strict=True)}"


@dataclass(frozen=True)
class Call:
    """``fn(arg)`` with ``fn`` in :data:`FUNCTIONS`."""

    fn: str
    arg: Expr

    def __str__(self) -> str:
        return f"{self.fn}({self.arg})"


Expr = Num | Col | Neg | BinOp | Call


def _prec(e: Expr) -> int:
    if isinstance(e, BinOp):
        return _PREC[e.op]
    if isinstance(e, Neg):
        return _PREC["neg"]
    if isinstance(e, Num) and e.value < 0:
        return _PREC["neg"]
    return 99


def _wrap(e: Expr, p: int, *, strict: bool) -> str:
    q = _prec(e)
    return f"({e})" if (q < p or (strict and q == p)) else str(e)


def is_plain_column(e: Expr) -> bool:
    return isinstance(e, Col)


def columns_of(e: Expr) -> tuple[str, ...]:
    """The columns an expression reads, in order of first appearance."""
    out: dict[str, None] = {}
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Col):
            out.setdefault(x.name, None)
        elif isinstance(x, Neg):
            stack.append(x.operand)
        elif isinstance(x, BinOp):
            stack.extend((x.right, x.left))
        elif isinstance(x, Call):
            stack.append(x.arg)
    return tuple(out)


# ---- parsing (over the formula tokenizer's tokens) -----------------------------------------

class ExprParser:
    """Recursive descent over ``toks`` (the formula tokenizer's output) from index ``i``.

    ``depth`` counts nesting against the formula's ``MAX_DEPTH``; errors are
    :class:`~irmodels.FormulaError` with a caret in ``text``.
    """

    def __init__(self, text: str, toks: list[Any], i: int, max_depth: int):
        self.text, self.toks, self.i, self.max_depth = text, toks, i, max_depth
        self.depth = 0

    @property
    def tok(self) -> Any:
        return self.toks[self.i]

    def _is(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def _error(self, message: str, tok: Any = None) -> FormulaError:
        t = tok or self.tok
        return FormulaError(message, self.text, (t.start, max(t.end, t.start + 1)))

    def _enter(self, tok: Any) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise FormulaError(f"the expression is nested more than {self.max_depth} deep; simplify it",
                               self.text, (tok.start, tok.end))

    def expr(self) -> Expr:
        self._enter(self.tok)
        left = self.term()
        while self._is("+", "-"):
            op = self.toks[self.i].text
            self.i += 1
            left = BinOp(op, left, self.term())
        self.depth -= 1
        return left

    def term(self) -> Expr:
        left = self.unary()
        while self._is("*", "/"):
            op = self.toks[self.i].text
            self.i += 1
            left = BinOp(op, left, self.unary())
        return left

    def unary(self) -> Expr:
        if self._is("-", "+"):
            sign = self.tok
            self._enter(sign)
            self.i += 1
            inner = self.unary()
            self.depth -= 1
            if sign.text == "+":
                return inner
            if isinstance(inner, Num):
                return Num(-inner.value)
            return Neg(inner)
        return self.power()

    def power(self) -> Expr:
        base = self.primary()
        if self._is("^", "**"):
            self._enter(self.tok)
            self.i += 1
            exponent = self.unary()
            self.depth -= 1
            return BinOp("^", base, exponent)
        return base

    def primary(self) -> Expr:
        t = self.tok
        if t.kind == "number":
            value = float(t.text)
            if not np.isfinite(value):
                raise self._error(f"the number {t.text} is too large for double precision", t)
            self.i += 1
            return Num(value)
        if t.kind == "name":
            self.i += 1
            if self._is("("):
                fn = function_name(t.text)
                if fn is None:
                    raise self._error(
                        f"unknown function {t.text!r} in an expression; allowed: "
                        f"{', '.join(FUNCTIONS)}", t)
                self._enter(self.tok)
                self.i += 1
                arg = self.expr()
                self._close(f"')' closing {t.text}(")
                self.depth -= 1
                return Call(fn, arg)
            return Col(t.text)
        if self._is("("):
            self._enter(t)
            self.i += 1
            inner = self.expr()
            self._close("')'")
            self.depth -= 1
            return inner
        found = "the end of the formula" if t.kind == "end" else repr(t.text)
        raise self._error(f"expected a column, a number or a function in the expression, found {found}", t)

    def _close(self, what: str) -> None:
        if self._is(")"):
            self.i += 1
            return
        found = "the end of the formula" if self.tok.kind == "end" else repr(self.tok.text)
        raise self._error(f"expected {what}, found {found}")


@lru_cache(maxsize=256)
def parse_expression(text: str) -> Expr:
    """Parse ``text`` (e.g. a canonical label ``log(qlen + 1)``) as one expression.

    >>> str(parse_expression("log( Days+1 )"))
    'log(Days + 1)'
    >>> parse_expression("I(x/10)")
    Call(fn='I', arg=BinOp(op='/', left=Col(name='x'), right=Num(value=10.0)))
    """
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"the expression has {len(text):,} characters, more than {MAX_LENGTH:,}")
    toks = tokenize(text)
    p = ExprParser(text, toks, 0, MAX_DEPTH)
    e = p.expr()
    if p.tok.kind != "end":
        raise p._error(f"unexpected {p.tok.text!r} after the expression")
    return e


# ---- evaluation ------------------------------------------------------------------------------

def _column(data: Any, name: str, label: str) -> np.ndarray:
    try:
        col = data[name]
    except (KeyError, IndexError, TypeError, ValueError):
        cols = getattr(data, "columns", None)
        shown = f" (columns: {', '.join(map(str, cols))})" if cols is not None else ""
        raise DataFormatError(
            f"the expression {label} reads column {name!r}, which the data lack{shown}. "
            "Fix the formula or rename the column."
        ) from None
    dtype = getattr(col, "dtype", None)
    arr = np.asarray(col)
    kind = arr.dtype.kind
    if kind not in "iuf" or str(dtype) == "category":
        raise DataFormatError(
            f"the expression {label} does arithmetic on column {name!r}, which holds "
            f"{dtype if dtype is not None else arr.dtype} values, not numbers. Convert it to "
            "numbers first, or use the column as a factor without a function."
        )
    return arr.astype("float64")


def _rows(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    shown = ", ".join(map(str, idx[:5])) + (", ..." if idx.size > 5 else "")
    return f"{idx.size} row(s) (row position(s) {shown})"


def evaluate(e: Expr, data: Any) -> np.ndarray:
    """Evaluate ``e`` on ``data`` (a DataFrame or a mapping of column name -> array) as float64.

    >>> evaluate(parse_expression("log(x + 1)"), {"x": np.array([0.0, np.e - 1])})
    array([0., 1.])
    >>> evaluate(parse_expression("log(x)"), {"x": np.array([1.0, 0.0, -2.0])})
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: log(x): x is not positive on 2 row(s) (row position(s) 1, 2), e.g. 0; a logarithm needs positive values. Shift the values (e.g. log(x + 1)) or drop those rows.
    """
    label = str(e)
    with np.errstate(all="ignore"):
        return _eval(e, data, label)


def _eval(e: Expr, data: Any, label: str) -> np.ndarray:
    if isinstance(e, Num):
        return np.asarray(float(e.value))
    if isinstance(e, Col):
        return _column(data, e.name, label)
    if isinstance(e, Neg):
        return -_eval(e.operand, data, label)
    if isinstance(e, Call):
        x = _eval(e.arg, data, label)
        if e.fn in ("log", "log2", "log10", "sqrt"):
            bad = (x <= 0) if e.fn != "sqrt" else (x < 0)
            if bad.any():
                first = float(np.broadcast_to(x, bad.shape)[bad][0])
                need = "positive values" if e.fn != "sqrt" else "values >= 0"
                hint = f"e.g. {e.fn}({_wrap(e.arg, 1, strict=False)} + 1)"
                what = "a logarithm" if e.fn != "sqrt" else "a square root"
                cond = "is not positive" if e.fn != "sqrt" else "is negative"
                raise DataFormatError(
                    f"{label}: {e.arg} {cond} on {_rows(np.atleast_1d(bad))}, e.g. {first:g}; "
                    f"{what} needs {need}. Shift the values ({hint}) or drop those rows."
                )
        return _checked(FUNCTIONS[e.fn](x), (x,), label, f"{e.fn}({e.arg})")
    assert isinstance(e, BinOp)  # the parser builds nothing else
    a = _eval(e.left, data, label)
    b = _eval(e.right, data, label)
    if e.op == "/":
        zero = np.broadcast_to(b == 0, np.broadcast(a, b).shape)
        if zero.any():
            raise DataFormatError(
                f"{label}: division by zero, {e.right} is 0 on {_rows(np.atleast_1d(zero))}. "
                "Shift the divisor or drop those rows."
            )
    op = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "^": np.power}[e.op]
    return _checked(op(a, b), (a, b), label, str(e))


def _checked(out: np.ndarray, inputs: tuple[np.ndarray, ...], label: str, part: str) -> np.ndarray:
    """Refuse NaN or infinity that ``part`` produced from finite inputs."""
    out = np.asarray(out, dtype="float64")
    ok_in = np.ones(out.shape, dtype=bool)
    for x in inputs:
        ok_in &= np.broadcast_to(np.isfinite(x), out.shape)
    bad = ok_in & ~np.isfinite(out)
    if bad.any():
        kind = "NaN" if np.isnan(out[bad]).any() else "an infinite value"
        raise DataFormatError(
            f"{label}: {part} produced {kind} on {_rows(np.atleast_1d(bad))} from finite values "
            "(an overflow, or a power outside its domain). Rescale the column or change the "
            "expression."
        )
    return out
