"""The formula language's lexical layer: the tokenizer, the identifier rule and the quoting of a
name, and the two bounds every parse checks first.

The formula parser (:mod:`irmodels.formula.parser`), the expression grammar
(:mod:`irmodels.formula.expr`) and the model spec's canonical text (:mod:`irmodels.formula.spec`)
all read names the same way; they import these pieces from here, below all three.

>>> [t.text for t in tokenize("log(`x y` + 1)")]
['log', '(', 'x y', '+', '1', ')', '']
>>> quoted("x y"), quoted("qlen")
('`x y`', 'qlen')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irmodels.errors import FormulaError

__all__ = ["MAX_LENGTH", "MAX_DEPTH", "IDENTIFIER", "Token", "tokenize", "quoted"]

#: Longest formula accepted, in characters.
MAX_LENGTH = 20_000
#: Deepest nesting of parentheses accepted.
MAX_DEPTH = 50

#: A name written bare in a formula; any other column name is written in backquotes.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*|`[^`]+`)
  | (?P<op>\*\*|[~+\-*/:|(),=^])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    """One token of a formula: its kind, its text (a backquoted name without the quotes) and
    its span in the formula."""

    kind: str  # "name", "number", "op", "end"
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``"end"`` token; an unexpected character raises
    :class:`~irmodels.FormulaError` pointing at it."""
    toks: list[Token] = []
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
            toks.append(Token(kind, value, m.start(), m.end()))
        pos = m.end()
    toks.append(Token("end", "", len(text), len(text)))
    return toks


def quoted(name: str) -> str:
    """``name`` as the formula grammar reads it: bare when an identifier, else in backquotes."""
    return name if IDENTIFIER.fullmatch(name) else f"`{name}`"
