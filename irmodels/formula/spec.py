"""The frozen model specification that a parsed formula becomes.

A :class:`ModelSpec` says which column is the response (and its transform), which fixed terms
and which random-intercept terms the model has. It evaluates nothing: models read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from irmodels.errors import DataFormatError

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
    """A random intercept ``(1|g)`` whose grouping is the interaction of ``factors``."""

    factors: tuple[str, ...]

    @property
    def name(self) -> str:
        return ":".join(self.factors)

    @property
    def key(self) -> frozenset[str]:
        return frozenset(self.factors)

    def __str__(self) -> str:
        return f"(1|{self.name})"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model formula.

    Attributes
    ----------
    formula : str
        The text the spec was parsed from.
    response : str
        The response column (``score`` in a long frame).
    transform : str or None
        One of ``TRANSFORMS`` applied to the response, or None.
    intercept : bool
        Whether the fixed part has an intercept (``0`` or ``-1`` removes it).
    fixed : tuple of Term
        Fixed terms, ordered by interaction order then first appearance (R's order).
    random : tuple of RandomTerm
        Random-intercept terms in order of appearance (``(1|a/b)`` gives ``a`` then ``a:b``).
    epsilon : float
        Clipping constant for ``logit`` and ``log``.
    categorical : frozenset of str
        Columns declared factors with ``C(x)`` (read as factors even when they hold numbers).
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
        return replace(self, fixed=fixed, numeric=num & frozenset(self.factors))

    @property
    def covariates(self) -> tuple[str, ...]:
        """Numeric covariates of the fixed part, in order of first appearance."""
        return tuple(f for f in self.factors if f in self.numeric)

    @property
    def factors(self) -> tuple[str, ...]:
        """Every factor named in fixed or random terms, in order of first appearance."""
        seen: dict[str, None] = {}
        for t in (*self.fixed, *self.random):
            for f in t.factors:
                seen.setdefault(f, None)
        return tuple(seen)

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
        if self.response not in data.columns:
            raise DataFormatError(
                f"the response column {self.response!r} is not in the data "
                f"(columns: {', '.join(map(str, data.columns))})"
            )
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
        def label(t: Term) -> str:
            return ":".join(f"C({_quoted(f)})" if f in self.categorical else _quoted(f)
                            for f in t.factors)

        rhs = [label(t) for t in self.fixed] + [
            f"(1|{':'.join(map(_quoted, r.factors))})" for r in self.random]
        if not self.intercept:
            rhs = ["0", *rhs]
        response = _quoted(self.response)
        lhs = f"{self.transform}({response})" if self.transform else response
        return f"{lhs} ~ {' + '.join(rhs) if rhs else '1'}"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _quoted(name: str) -> str:
    """``name`` as the formula grammar reads it: bare when an identifier, else in backquotes."""
    return name if _IDENTIFIER.fullmatch(name) else f"`{name}`"


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
