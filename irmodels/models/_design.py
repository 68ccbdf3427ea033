"""Design helpers shared by the fixed-effects models (:mod:`.anova`, :mod:`.mixed`, least-squares
means): resolving a model, encoding factor columns, telling factors from numeric covariates, and
building the columns of a term.

A column of the fixed part is a **numeric covariate** when its dtype is numeric (integer or
float, not boolean) and it is not declared a factor: ``C(x)`` in the formula, a categorical
dtype, or one of the id columns of a long frame (:data:`ID_FACTORS`: ``topic``, ``system``,
``shard``, ``sample``, always factors even when their labels are integers). Everything else is a
factor. No string is evaluated: columns are built with numpy.

Public helpers (importable by other model modules):

- :func:`resolve_model` -- formula, preset or ModelSpec to a ModelSpec (columns checked);
- :func:`encode` -- integer codes and level labels of a factor column;
- :func:`classify` -- the spec with its numeric covariates marked (:meth:`ModelSpec.with_numeric`);
- :func:`covariate_values` -- a validated float64 covariate column;
- :func:`coding` -- how R codes each categorical factor of a term (contrasts or indicators);
- :func:`term_columns` -- the dense design columns of one term (sum-to-zero or treatment
  contrasts, times the covariates).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from irmodels.data.frame import natural_key
from irmodels.errors import DataFormatError, DesignError, FormulaError
from irmodels.formula.expr import evaluate, parse_expression
from irmodels.formula.parser import resolve
from irmodels.formula.spec import ModelSpec, Term

__all__ = ["ID_FACTORS", "resolve_model", "encode", "classify", "covariate_values", "coding",
           "term_columns"]

#: Columns of a long frame that are always factors, whatever their dtype.
ID_FACTORS = ("topic", "system", "shard", "sample", "collection", "measure")


def resolve_model(model: str | ModelSpec, columns: Sequence[str] | None = None) -> ModelSpec:
    """A ModelSpec from a formula, a preset name (``"MD1"``..``"MD6"``) or a ModelSpec.

    >>> resolve_model("MD1").fixed_names
    ('topic', 'system')
    """
    if isinstance(model, ModelSpec):
        return model
    if not isinstance(model, str):
        raise FormulaError(
            f"model must be a formula string, a preset name (MD1..MD6) or a ModelSpec; "
            f"got {type(model).__name__}"
        )
    return _resolve_cached(model, None if columns is None else tuple(str(c) for c in columns))


@functools.lru_cache(maxsize=256)
def _resolve_cached(model: str, columns: tuple[str, ...] | None) -> ModelSpec:
    # a study refits one formula thousands of times: parse it once (ModelSpec is frozen)
    return resolve(model, None if columns is None else list(columns))


def encode(col: pd.Series, *, known: tuple[list[object], dict[object, int]] | None = None
           ) -> tuple[np.ndarray, pd.Index]:
    """Integer codes 0..L-1 of the observed levels and the level labels.

    Categorical columns keep their category order (unused categories dropped); other columns
    are read as text and ordered naturally (``t2`` before ``t10``). ``known``: the column's
    values and distinct values as :func:`classify` read them (``seen``), not read again.

    >>> codes, levels = encode(pd.Series(["t10", "t2", "t2", "t1"]))
    >>> codes.tolist(), list(levels)
    ([2, 1, 1, 0], ['t1', 't2', 't10'])
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        if codes.size and codes.min() < 0:
            _missing_labels(col.name, int((codes < 0).sum()))
        cats = col.cat.categories
        used = np.bincount(codes, minlength=len(cats)) > 0
        if used.all():
            return codes, cats
        remap = np.cumsum(used) - 1
        return remap[codes], cats[used]
    small = _small_factorize(col, known)
    if small is not None:
        inv, labels = small
    else:
        missing = col.isna()
        if missing.any():
            _missing_labels(col.name, int(missing.sum()))
        inv, uniq = pd.factorize(col, sort=False)  # labels as text: the distinct values' only
        labels = [str(u) for u in uniq]
        if len(set(labels)) < len(labels):  # distinct values with one text (1 and "1"): merged
            inv, uniq = pd.factorize(col.astype(str), sort=False)
            labels = [str(u) for u in uniq]
    order = sorted(range(len(labels)), key=lambda i: natural_key(labels[i]))
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    ordered = tuple(labels[i] for i in order)
    index = _level_index(ordered) if len(ordered) <= 256 else pd.Index(list(ordered))
    return rank[np.asarray(inv, dtype=np.int64)], index


@functools.lru_cache(maxsize=512)
def _level_index(labels: tuple[str, ...]) -> pd.Index:
    # an immutable Index shared by the repeated fits of one data set (a study refits thousands
    # of times): building one from text costs tens of microseconds, a 46-row fit's whole
    # encoding budget
    return pd.Index(list(labels))


#: Columns of at most this many rows are factorised in Python (:func:`_small_factorize`):
#: pandas' factorisation and missing-value scan cost tens of microseconds a column, which a
#: 46-row fit notices; above it, pandas is faster.
SMALL_ROWS = 5_000


def _small_distinct(col: pd.Series) -> tuple[list[object], dict[object, int]] | None:
    """The values of a short text or integer column and its distinct values numbered in order
    of appearance, or None (a long column, another dtype, or a value that is not a ``str`` or
    an ``int``: a missing one, mixed types), for which pandas decides."""
    if len(col) > SMALL_ROWS or isinstance(col.dtype, pd.CategoricalDtype):
        return None
    if not (pd.api.types.is_string_dtype(col.dtype) or col.dtype == object
            or pd.api.types.is_integer_dtype(col.dtype)):
        return None
    values = col.to_numpy(dtype=object).tolist()  # Python str and int (NaN, NA: others)
    index: dict[object, int] = {}
    for v in values:
        if v not in index:
            index[v] = len(index)
    kinds = {type(v) for v in index}
    if len(kinds) != 1 or not kinds <= {str, int}:  # NaN, None, 1 and "1", bools: pandas' way
        return None
    return values, index


def _small_factorize(col: pd.Series, known: tuple[list[object], dict[object, int]] | None = None
                     ) -> tuple[np.ndarray, list[str]] | None:
    """``pd.factorize`` of a short column of ``str`` (or of ``int``) values, in Python: codes in
    order of first appearance and the labels as text; None where :func:`_small_distinct` is."""
    got = known if known is not None else _small_distinct(col)
    if got is None:
        return None
    values, index = got
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    return codes, [str(v) for v in index]


def _reads_as_number(text: str) -> bool:
    """Whether ``pd.to_numeric`` could read ``text`` as a number: only a text with a digit or
    an infinity can (so "A", "low", "" cannot)."""
    return any(c.isdigit() for c in text) or "inf" in text.lower()


def _missing_labels(name: object, count: int) -> None:
    raise DataFormatError(
        f"factor column {name!r} has {count} missing label(s); every row needs a level. Drop "
        "those rows or label them."
    )


def _is_numeric(col: pd.Series) -> bool:
    dt = col.dtype
    if isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt):
        return False
    return bool(pd.api.types.is_numeric_dtype(dt)) and not pd.api.types.is_complex_dtype(dt)


#: numpy dtype kinds :func:`classify` decides without pandas' dtype functions (the same
#: answers, a few microseconds less a column): integers and floats are covariates, booleans
#: factors, text (object, unicode) is checked for numbers; other kinds take the general path.
_NUMPY_KINDS = {"i": "numeric", "u": "numeric", "f": "numeric", "b": "factor", "O": "text",
                "U": "text"}


def classify(spec: ModelSpec, data: pd.DataFrame, *,
             seen: dict[str, tuple[pd.Series, tuple[list[object], dict[object, int]] | None]]
             | None = None) -> ModelSpec:
    """``spec`` with the numeric covariates of its fixed part marked (see the module notes).

    A text column whose every value reads as a number is refused: it is most likely a
    covariate read as text (convert it with ``pd.to_numeric``) or a factor to declare with
    ``C(x)``. ``seen`` (a dict) receives the text columns read, with their values and distinct
    values when short (for :func:`encode`'s ``known``).

    >>> d = pd.DataFrame({"topic": [401, 402], "system": ["a", "b"], "qlen": [3, 5],
    ...                   "score": [0.1, 0.2]})
    >>> classify(resolve_model("score ~ topic + system + qlen"), d).covariates
    ('qlen',)
    >>> classify(resolve_model("score ~ system + C(qlen)"), d).covariates
    ()
    """
    numeric: set[str] = set()
    for f in dict.fromkeys(f for t in spec.fixed for f in t.factors):
        if spec.expression(f) is not None:  # log(qlen), I(x/10): numeric by construction
            numeric.add(f)
            continue
        if f in spec.categorical or f in ID_FACTORS or f not in data.columns:
            continue
        col = data[f]
        kind = _NUMPY_KINDS.get(getattr(col.dtype, "kind", ""), "") if isinstance(
            col.dtype, np.dtype) else ("text" if isinstance(col.dtype, pd.StringDtype) else "")
        if kind == "numeric" or (not kind and _is_numeric(col)):
            numeric.add(f)
        elif kind == "factor":
            continue
        elif pd.api.types.is_complex_dtype(col.dtype):
            raise DataFormatError(
                f"column {f!r} holds complex numbers; a covariate must be real. Convert it."
            )
        elif (pd.api.types.is_datetime64_any_dtype(col.dtype)
              or pd.api.types.is_timedelta64_dtype(col.dtype)):
            raise DataFormatError(
                f"column {f!r} holds dates or durations ({col.dtype}); the model would read each "
                f"distinct value as a level. Convert it to numbers for a covariate (e.g. days "
                f"since a start), or write C({f}) to use it as a factor."
            )
        elif (pd.api.types.is_string_dtype(col.dtype) or col.dtype == object) and len(col):
            small = _small_distinct(col)
            if seen is not None:
                seen[f] = (col, small)
            if small is not None and (len(small[1]) <= 2 or any(
                    isinstance(v, str) and not _reads_as_number(v) for v in small[1])):
                continue  # a distinct text that is no number (or two levels at most)
            distinct = pd.Series(col.unique())  # the distinct values decide (a NaN among them)
            as_num = pd.to_numeric(distinct, errors="coerce")
            if as_num.notna().all() and len(distinct) > 2:
                raise DataFormatError(
                    f"column {f!r} holds numbers stored as text (e.g. {col.iloc[0]!r}); the "
                    "model would read it as a factor with "
                    f"{col.nunique()} levels. Convert it to numbers for a covariate "
                    f"(data[{f!r}] = pd.to_numeric(data[{f!r}])), or write C({f}) to use it "
                    "as a factor."
                )
    if not numeric and not spec.numeric:
        return spec
    return spec.with_numeric(numeric)


def covariate_values(data: pd.DataFrame, name: str) -> np.ndarray:
    """The covariate ``name`` as float64, refusing missing, infinite and constant values.

    ``name`` is a column, or the canonical text of an expression of the formula
    (``log(qlen)``), evaluated by :func:`irmodels.formula.expr.evaluate` (never ``eval``).
    """
    if name in data.columns:
        x = np.asarray(data[name], dtype="float64")
    else:
        x = evaluate(parse_expression(name), data)
    bad = ~np.isfinite(x)
    if bad.any():
        n_nan = int(np.isnan(x).sum())
        raise DataFormatError(
            f"covariate {name!r} has {n_nan} missing (NaN) and {int(bad.sum()) - n_nan} infinite "
            f"value(s) of {len(x)} (first at row {int(np.flatnonzero(bad)[0])}). Drop or impute "
            "those rows first."
        )
    if len(x) and np.ptp(x) == 0:
        raise DesignError(
            f"covariate {name!r} is constant ({x[0]:g} on every row): its slope cannot be "
            "separated from the intercept. Drop it from the model."
        )
    return x


def coding(term: Term, present: set[frozenset[str]] | frozenset[frozenset[str]],
           intercept: bool = True) -> dict[str, str]:
    """R's coding of each categorical factor of ``term``: ``"contrast"`` when the term without
    that factor is in the model (or is empty and the model has an intercept), else
    ``"indicator"`` (all levels), as ``model.matrix`` does.

    >>> from irmodels.formula import parse_formula
    >>> s = parse_formula("score ~ topic + system:depth").with_numeric({"depth"})
    >>> coding(s.fixed[1], {t.key for t in s.fixed})
    {'system': 'indicator'}
    """
    out = {}
    for f in term.categorical_factors:
        rest = term.key - {f}
        ok = (rest in present) if rest else intercept
        out[f] = "contrast" if ok else "indicator"
    return out


def _contrast(codes: np.ndarray, n_levels: int, kind: str) -> np.ndarray:
    n = codes.shape[0]
    rows = np.arange(n)
    if kind == "indicator":
        m = np.zeros((n, n_levels))
        m[rows, codes] = 1.0
        return m
    m = np.zeros((n, n_levels - 1))
    if kind == "sum":  # contr.sum: last level coded -1
        last = codes == n_levels - 1
        m[rows[~last], codes[~last]] = 1.0
        m[last, :] = -1.0
    else:  # contr.treatment: first level is the reference
        keep = codes > 0
        m[rows[keep], codes[keep] - 1] = 1.0
    return m


def term_columns(term: Term, codes: Mapping[str, np.ndarray], n_levels: Mapping[str, int],
                 values: Mapping[str, np.ndarray], codings: Mapping[str, str],
                 contrasts: str = "sum") -> np.ndarray:
    """Dense columns of ``term``: the row-wise Kronecker product of the codings of its
    categorical factors (``contrasts`` = ``"sum"`` or ``"treatment"`` where :func:`coding`
    says contrast, indicators elsewhere), times the product of its covariates.

    >>> from irmodels.formula import Term
    >>> t = Term(("system", "depth"), frozenset({"depth"}))
    >>> term_columns(t, {"system": np.array([0, 1, 2])}, {"system": 3},
    ...              {"depth": np.array([2.0, 3.0, 4.0])}, {"system": "contrast"})
    array([[ 2.,  0.],
           [ 0.,  3.],
           [-4., -4.]])
    """
    n = len(next(iter(codes.values()))) if codes else len(next(iter(values.values())))
    block = np.ones((n, 1))
    for f in term.categorical_factors:
        kind = contrasts if codings.get(f, "contrast") == "contrast" else "indicator"
        x = _contrast(codes[f], int(n_levels[f]), kind)
        block = (block[:, :, None] * x[:, None, :]).reshape(n, -1)
    for f in term.numeric_factors:
        block = block * values[f][:, None]
    return block
