"""The frozen model specification that a parsed formula becomes.

A :class:`ModelSpec` says which column is the response (and its transform), which fixed terms
and which random terms (intercepts and slopes) the model has. Expressions (``log(qlen)``) are
held as trees (:mod:`irmodels.formula.expr`) and evaluated by that module's interpreter when a
model asks for values (:meth:`ModelSpec.response_values`, :meth:`ModelSpec.values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from irmodels.errors import DataFormatError
from irmodels.formula._lex import IDENTIFIER, quoted
from irmodels.formula.expr import Col, Expr, columns_of, evaluate, parse_expression

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd  # not at run time: a formula is parsed without pandas

__all__ = ["Term", "RandomTerm", "ModelSpec", "TRANSFORMS", "DEFAULT_EPSILON", "apply_transform"]

#: Epsilon of the bounded-score transforms: scores are clipped to [eps, 1 - eps] before logit,
#: and to [eps, inf) before log. 1e-3 is Robertson & Kanoulas' choice for logit(AP) is not
#: published; we use a value small against AP's resolution (1/R for R relevant documents).
DEFAULT_EPSILON = 1e-3

TRANSFORMS = ("logit", "log", "sqrt", "asin_sqrt")


@dataclass(frozen=True, order=True)
class Term:
    """A fixed-effect term: a main effect (one factor) or an interaction (several).

    ``factors`` keeps the order in which the factors were written, with duplicates removed;
    two terms with the same factors in another order are the same term (``key``).
    """

    factors: tuple[str, ...]
    #: The factors of this term that are numeric covariates (set by
    #: :meth:`ModelSpec.with_numeric` once the data are known; empty after parsing).
    numeric: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def name(self) -> str:
        """R-style label, e.g. ``topic:system``."""
        return ":".join(self.factors)

    @property
    def is_covariate(self) -> bool:
        """Whether the term involves a numeric covariate (``qlen``, ``system:qlen``)."""
        return bool(self.numeric)

    @property
    def categorical_factors(self) -> tuple[str, ...]:
        """The factors of the term that are categorical (coded by contrasts)."""
        return tuple(f for f in self.factors if f not in self.numeric)

    @property
    def numeric_factors(self) -> tuple[str, ...]:
        """The factors of the term that are numeric (entering as their values)."""
        return tuple(f for f in self.factors if f in self.numeric)

    @property
    def key(self) -> frozenset[str]:
        return frozenset(self.factors)

    @property
    def order(self) -> int:
        """1 for a main effect, 2 for a two-way interaction, ..."""
        return len(self.factors)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, order=True)
class RandomTerm:
    """A random-effects term ``(1 + x | g)`` whose grouping is the interaction of ``factors``.

    ``intercept`` says whether the term has a random intercept, ``effects`` are the columns
    with a random slope (numeric covariates, factors or expressions, in the order written).
    ``(1|g)`` is ``RandomTerm(("g",))``; ``(Days | Subject)`` is
    ``RandomTerm(("Subject",), True, ("Days",))``; ``(0 + system | topic)`` is
    ``RandomTerm(("topic",), False, ("system",))``. ``name`` and ``key`` are those of the
    grouping (``topic:system``), whatever the left side.

    >>> str(RandomTerm(("Subject",), True, ("Days",)))
    '(1 + Days | Subject)'
    >>> str(RandomTerm(("topic", "system")))
    '(1|topic:system)'
    """

    factors: tuple[str, ...]
    intercept: bool = True
    effects: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The grouping, R-style (``topic:system``)."""
        return ":".join(self.factors)

    @property
    def key(self) -> frozenset[str]:
        """The grouping factors as a set (``a:b`` and ``b:a`` are one grouping)."""
        return frozenset(self.factors)

    @property
    def is_intercept_only(self) -> bool:
        """True for a random intercept ``(1|g)`` (no slope)."""
        return self.intercept and not self.effects

    @property
    def lhs(self) -> str:
        """The left side in lme4 syntax: ``1``, ``1 + Days``, ``0 + system``."""
        return " + ".join(["1" if self.intercept else "0", *map(_label, self.effects)])

    def __str__(self) -> str:
        if self.is_intercept_only:
            return f"(1|{self.name})"
        return f"({self.lhs} | {self.name})"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model formula.

    Attributes
    ----------
    formula : str
        The text the spec was parsed from.
    response : str
        The response column (``score`` in a long frame), or the canonical text of an
        expression (``log(Days + 1)``).
    transform : str or None
        One of ``TRANSFORMS`` applied to the response, or None.
    intercept : bool
        Whether the fixed part has an intercept (``0`` or ``-1`` removes it).
    fixed : tuple of Term
        Fixed terms, ordered by interaction order then first appearance (R's order).
    random : tuple of RandomTerm
        Random terms in order of appearance (``(1|a/b)`` gives ``a`` then ``a:b``;
        ``(1 + x||g)`` gives ``(1|g)`` then ``(0 + x | g)``).
    epsilon : float
        Clipping constant for ``logit`` and ``log``.
    categorical : frozenset of str
        Columns declared factors with ``C(x)`` (read as factors even when they hold numbers).
    expressions : tuple of (str, Expr)
        The expressions of the formula (``log(qlen)``, ``I(x/10)``, a response such as
        ``log(Days + 1)``) by their canonical text, which is the name they have in terms and
        tables; their values come from :meth:`values` (see :mod:`irmodels.formula.expr`).
    numeric : frozenset of str
        Columns read as numeric covariates; empty after parsing, set by :meth:`with_numeric`
        once the data are known (see :func:`irmodels.models._design.classify`).
    """

    formula: str
    response: str
    transform: str | None
    intercept: bool
    fixed: tuple[Term, ...]
    random: tuple[RandomTerm, ...] = ()
    epsilon: float = DEFAULT_EPSILON
    categorical: frozenset[str] = frozenset()
    numeric: frozenset[str] = frozenset()
    expressions: tuple[tuple[str, Expr], ...] = ()

    def expression(self, name: str) -> Expr | None:
        """The expression named ``name`` (its canonical text), or None for a column."""
        for key, e in self.expressions:
            if key == name:
                return e
        return None

    def values(self, data: pd.DataFrame, name: str) -> np.ndarray:
        """The float64 values of the column or expression ``name`` on ``data``.

        >>> import pandas as pd
        >>> from irmodels.formula import parse_formula
        >>> spec = parse_formula("score ~ system + log(qlen)")
        >>> spec.values(pd.DataFrame({"qlen": [1.0, 100.0]}), "log(qlen)").round(3).tolist()
        [0.0, 4.605]
        """
        e = self.expression(name)
        return evaluate(e if e is not None else Col(name), data)

    @property
    def random_effects(self) -> tuple[str, ...]:
        """The slope columns of the random part (``Days`` in ``(1 + Days | Subject)``), in
        order of first appearance; empty for random intercepts only."""
        return tuple(dict.fromkeys(e for r in self.random for e in r.effects))

    @property
    def has_slopes(self) -> bool:
        """Whether a random term has a slope (is not a random intercept ``(1|g)``)."""
        return any(not r.is_intercept_only for r in self.random)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every data column the model reads (the response, factors, covariates, the columns
        inside expressions, random slopes), in order of first appearance."""
        out: dict[str, None] = {}
        for name in (self.response, *self._term_names, *self.random_effects):
            e = self.expression(name)
            for c in (columns_of(e) if e is not None else (name,)):
                out.setdefault(c, None)
        return tuple(out)

    def with_numeric(self, names: frozenset[str] | set[str] | tuple[str, ...]) -> ModelSpec:
        """A copy whose terms mark ``names`` as numeric covariates.

        >>> from irmodels.formula import parse_formula
        >>> spec = parse_formula("score ~ system*qlen").with_numeric({"qlen"})
        >>> [(t.name, t.is_covariate) for t in spec.fixed]
        [('system', False), ('qlen', True), ('system:qlen', True)]
        >>> spec.covariates
        ('qlen',)
        """
        num = frozenset(names)
        forced = num & self.categorical
        if forced:
            raise DataFormatError(
                f"column(s) {', '.join(sorted(forced))} are declared factors with C() and cannot "
                "also be numeric covariates"
            )
        fixed = tuple(Term(t.factors, frozenset(f for f in t.factors if f in num)) for t in self.fixed)
        return replace(self, fixed=fixed, numeric=num & frozenset(self._term_names))

    @property
    def covariates(self) -> tuple[str, ...]:
        """Numeric covariates of the fixed part (columns and expressions such as
        ``log(qlen)``), in order of first appearance."""
        return tuple(f for f in self._term_names if f in self.numeric)

    @property
    def _term_names(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for factors in [*(t.factors for t in self.fixed), *(t.factors for t in self.random)]:
            for f in factors:
                seen.setdefault(f, None)
        return tuple(seen)

    @property
    def factors(self) -> tuple[str, ...]:
        """Every column named in fixed or random terms, in order of first appearance.

        An expression (``log(qlen)``) is not a column: it is left out here (it is among
        :attr:`covariates` once classified, and its columns are in :attr:`columns`), so that
        ``data[f]`` is a column for every ``f`` in ``factors``.

        >>> from irmodels.formula import parse_formula
        >>> parse_formula("score ~ system*log(qlen) + (1|topic)").factors
        ('system', 'topic')
        """
        exprs = {k for k, _ in self.expressions}
        return tuple(f for f in self._term_names if f not in exprs)

    @property
    def fixed_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.fixed)

    @property
    def random_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.random)

    @property
    def is_mixed(self) -> bool:
        return bool(self.random)

    @property
    def response_label(self) -> str:
        return f"{self.transform}({self.response})" if self.transform else self.response

    def response_values(self, data: pd.DataFrame) -> np.ndarray:
        """The (transformed) response as a float64 array."""
        e = self.expression(self.response)
        if e is not None:
            return evaluate(e, data)
        if self.response not in data.columns:
            raise DataFormatError(
                f"the response column {self.response!r} is not in the data "
                f"(columns: {', '.join(map(str, data.columns))})"
            )
        # here, not at import: the pandas-free `irmodels anova MATRIX.csv` path imports the spec
        import pandas as pd

        col = data[self.response]
        dtype = col.dtype
        if (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype)
                or not pd.api.types.is_numeric_dtype(dtype)):
            raise DataFormatError(
                f"the response column {self.response!r} holds {dtype} values, not numbers; the "
                "left-hand side of the formula is the score (e.g. 'score ~ topic + system'). "
                "If it holds numbers as text, convert it first (irm.frame does)."
            )
        y = np.asarray(col, dtype="float64")
        return apply_transform(y, self.transform, self.epsilon)

    def __str__(self) -> str:
        """The formula in canonical form; it parses back to this spec (a column name that is
        not a plain identifier, e.g. ``x y``, in backquotes)."""
        exprs = {k for k, _ in self.expressions}

        def one(f: str) -> str:
            if f in exprs:
                return f
            return f"C({quoted(f)})" if f in self.categorical else quoted(f)

        def label(t: Term) -> str:
            return ":".join(map(one, t.factors))

        def rand(r: RandomTerm) -> str:
            group = ":".join(map(quoted, r.factors))
            if r.is_intercept_only:
                return f"(1|{group})"
            return f"({' + '.join(['1' if r.intercept else '0', *map(one, r.effects)])} | {group})"

        rhs = [label(t) for t in self.fixed] + [rand(r) for r in self.random]
        if not self.intercept:
            rhs = ["0", *rhs]
        response = self.response if self.response in exprs else quoted(self.response)
        lhs = f"{self.transform}({response})" if self.transform else response
        return f"{lhs} ~ {' + '.join(rhs) if rhs else '1'}"


def _label(name: str) -> str:
    """A slope name as written: an expression's canonical text bare, a column quoted."""
    if not IDENTIFIER.fullmatch(name):
        try:
            e = parse_expression(name)
        except Exception:  # noqa: BLE001 - not an expression: a column to quote
            return quoted(name)
        if not isinstance(e, Col) and str(e) == name:
            return name
    return quoted(name)


def apply_transform(y: np.ndarray, transform: str | None, epsilon: float = DEFAULT_EPSILON) -> np.ndarray:
    """Apply a whitelisted response transform; values outside its domain raise.

    - ``logit``: ``log(x / (1 - x))`` for ``x`` in [0, 1], after clipping ``x`` to
      ``[eps, 1 - eps]`` (so that the bounds 0 and 1, common for AP, stay finite);
    - ``log``: ``log(x)`` for ``x >= 0``, after clipping to ``[eps, inf)``;
    - ``sqrt``: ``sqrt(x)`` for ``x >= 0``;
    - ``asin_sqrt``: ``arcsin(sqrt(x))`` for ``x`` in [0, 1].

    A value outside the domain (a negative score under ``log``, a score above 1 under
    ``logit``) raises :class:`~irmodels.DataFormatError` rather than being clipped: clipping it
    would hide a wrong column or a wrong measure. NaN passes through (the models refuse it).

    >>> apply_transform(np.array([0.0, 0.5, 1.0]), "logit", 1e-3).round(4)
    array([-6.9068,  0.    ,  6.9068])
    >>> apply_transform(np.array([0.2, 1.5]), "logit")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: logit() needs scores in [0, 1]; found 1 value(s) outside, e.g. 1.5. Use a bounded measure (AP, nDCG, P@k) or another transform (log, sqrt).
    """
    y = np.asarray(y, dtype="float64")
    if transform is None:
        return y
    if transform not in TRANSFORMS:
        raise DataFormatError(f"unknown transform {transform!r}; use one of {', '.join(TRANSFORMS)}")
    if transform in ("logit", "asin_sqrt"):
        _check_domain(y, transform, (y < 0) | (y > 1), "in [0, 1]",
                      "Use a bounded measure (AP, nDCG, P@k) or another transform (log, sqrt).")
    else:
        _check_domain(y, transform, y < 0, ">= 0",
                      "Shift the scores, or use no transform.")
    if transform == "logit":
        c = np.clip(y, epsilon, 1 - epsilon)
        return np.log(c / (1 - c))
    if transform == "log":
        return np.log(np.clip(y, epsilon, None))
    if transform == "sqrt":
        return np.sqrt(y)
    return np.arcsin(np.sqrt(y))


def _check_domain(y: np.ndarray, transform: str, bad: np.ndarray, domain: str, way_out: str) -> None:
    if bad.any():
        first = float(y[np.flatnonzero(bad)[0]])
        raise DataFormatError(
            f"{transform}() needs scores {domain}; found {int(bad.sum())} value(s) outside, "
            f"e.g. {first:g}. {way_out}"
        )
