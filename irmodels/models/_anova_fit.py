"""The fitting behind :func:`irmodels.anova`: the checks of a model against its data (margins,
pooled frames, zero-df terms) and the least-squares fits (sparse, and dense for small designs)
that give the sums of squares of every term. :mod:`irmodels.models.anova` re-exports
:func:`refuse_pooled`. References: docs/methods.md: "ANOVA".
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from irmodels._validate import check_choice, check_probability, did_you_mean
from irmodels.data.frame import pooled_levels
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DataQualityWarning,
    DesignError,
    FormulaError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._anova_table import TABLE_COLUMNS, check_scores
from irmodels.models._balanced import cell_layout, fit_balanced
from irmodels.models._lsq import RANK_TOL, sequential_ss, term_block

#: Largest dense design (rows x columns) the least-squares path builds (about 400 MB).
MAX_DENSE_CELLS = 50_000_000


def check_spec(spec: ModelSpec, data: pd.DataFrame) -> None:
    if spec.random:
        raise FormulaError(
            f"irm.anova fits fixed effects only, but the model has random term(s) "
            f"{', '.join(map(str, spec.random))}. Use irm.mixed(...) for random effects, or "
            "write them as fixed terms (e.g. 'score ~ topic + system').",
            spec.formula,
        )
    if not spec.fixed:
        raise FormulaError(
            f"the model {str(spec)!r} has no term to test; add factors like 'topic + system'.",
            spec.formula,
        )
    if not spec.intercept:
        raise DesignError(
            f"irm.anova needs a model with an intercept; {str(spec)!r} removes it. "
            "Drop the '0 +' / '- 1'."
        )
    missing = [f for f in spec.factors if f not in data.columns]
    if missing:
        raise FormulaError(
            f"factor(s) {', '.join(map(repr, missing))} are not columns of the data "
            f"(columns: {', '.join(map(str, data.columns))}). Fix the formula or rename the columns.",
            spec.formula,
        )


METHODS = ("auto", "balanced", "lstsq", "sparse", "dense")


def check_arguments(data: Any, ss_type: Any, method: Any, alpha: Any, aliased: Any) -> float:
    """Refuse what :func:`irmodels.anova` cannot take before reading the data; returns
    ``alpha``."""
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame (a long frame), got {type(data).__name__}")
    if ss_type is not None and (isinstance(ss_type, bool) or ss_type not in (1, 2, 3)):
        raise DesignError(
            f"ss_type must be 1, 2 or 3 (or None for the default, 2); got {ss_type!r}."
        )
    if method not in METHODS:
        raise ArgumentError(
            f"method must be 'auto', 'balanced', 'lstsq', 'sparse' or 'dense'; got {method!r}"
            f"{did_you_mean(method, METHODS)}."
        )
    alpha = check_probability(alpha, "alpha")
    check_choice(aliased, "aliased", ("raise", "drop"))
    return alpha


def response(spec: ModelSpec, data: pd.DataFrame) -> tuple[np.ndarray, float]:
    """The response as float64 (missing or infinite values refused, see
    :func:`~irmodels.models._anova_table.check_scores`) and its largest absolute value."""
    y = spec.response_values(data)
    if not np.isfinite(y).all():
        n_nan = int(np.isnan(y).sum())
        n_inf = int(np.isinf(y).sum())
        raise DataFormatError(
            f"the response {spec.response_label} has {n_nan} missing (NaN) and {n_inf} infinite "
            f"value(s) of {len(y)}. Drop or impute them first (irm.frame(..., nan='drop'))."
        )
    return y, check_scores(y, spec.response_label)


@dataclass(frozen=True)
class FactorCells:
    """The model's factors (its columns less the covariates), their integer codes and levels
    (:func:`irmodels.models._design.encode`), the shape of their cell table, the flat cell of
    every row (None without factors), the rows per cell (one cell without factors), and whether
    the codes tell exactly the distinct values apart (categorical, text or integer columns: an
    object column may merge 1 and "1" into one level)."""

    factors: tuple[str, ...]
    codes: dict[str, np.ndarray]
    levels: dict[str, pd.Index]
    shape: tuple[int, ...]
    flat: np.ndarray | None
    counts: np.ndarray
    exact: bool


def encode_factors(spec: ModelSpec, data: pd.DataFrame, seen: dict[str, Any] | None = None
                   ) -> FactorCells:
    """The :class:`FactorCells` of ``spec``'s factors in ``data`` (a factor of one level is
    refused); ``seen``: the columns :func:`irmodels.models._design.classify` read."""
    factors = tuple(f for f in spec.factors if f not in spec.numeric)
    codes: dict[str, np.ndarray] = {}
    levels: dict[str, pd.Index] = {}
    exact = True
    for f in factors:
        col, known = (seen or {}).get(f) or (data[f], None)
        codes[f], levels[f] = _design.encode(col, known=known)  # missing labels: DataFormatError
        if len(levels[f]) < 2:
            raise DesignError(
                f"factor {f!r} has {len(levels[f])} level(s) ({', '.join(map(str, levels[f]))}); "
                "a factor needs at least two levels to be tested. Drop it from the model."
            )
        dt = col.dtype
        exact = exact and (isinstance(dt, (pd.CategoricalDtype, pd.StringDtype))
                           or (isinstance(dt, np.dtype) and dt.kind in "iu"))
    shape = tuple(len(levels[f]) for f in factors)
    if not factors:  # covariates only: one cell
        return FactorCells(factors, codes, levels, shape, None, np.array([len(data)]), exact)
    flat, counts = cell_layout([codes[f] for f in factors], shape)
    return FactorCells(factors, codes, levels, shape, flat, counts, exact)


def cell_groups(data: pd.DataFrame, response_name: str, cells: FactorCells
                ) -> np.ndarray | None:
    """The cells as the row groups of :func:`~irmodels.data.frame.check_distinct_rows` when
    the factors are exactly the columns besides the response and their codes tell exactly the
    distinct labels apart (:attr:`FactorCells.exact`), else None (the check groups the rows
    itself)."""
    if (cells.flat is None or not cells.exact
            or set(cells.factors) != {c for c in data.columns if c != response_name}):
        return None
    return cells.flat


def check_method(spec: ModelSpec, ss_type: int | None, method: str, factors: tuple[str, ...],
                 counts: np.ndarray, balanced: bool) -> dict[str, list[str]]:
    """Refuse a type II/III table or the closed form of a non-hierarchical model and the
    closed form of an unbalanced design or of covariates; returns the missing margins
    (:func:`missing_margins`)."""
    margins = missing_margins(spec)
    if margins:
        first = next(iter(margins))
        if ss_type in (2, 3) or method == "balanced":
            raise DesignError(
                f"the model is not hierarchical: term {first} lacks its marginal term(s) "
                f"{', '.join(margins[first])}. Type II/III sums of squares and the closed form "
                "need every margin of an interaction in the model; add them (e.g. "
                f"{'*'.join(first.split(':'))}) or use ss_type=1 (sequential, as R's anova(lm()))."
            )
    if method == "balanced" and spec.covariates:
        raise DesignError(
            f"method='balanced' is the closed form of factor models; this model has numeric "
            f"covariate(s) {', '.join(spec.covariates)} (fitted by least squares). Use method='auto', "
            "or write C(x) to read a column as a factor."
        )
    if method == "balanced" and not balanced:
        raise DesignError(
            f"method='balanced' needs every combination of {', '.join(factors)} observed equally "
            f"often; found {int((counts == 0).sum())} empty cell(s) and between {int(counts[counts > 0].min())} "
            f"and {int(counts.max())} rows per observed cell. Use method='auto'."
        )
    return margins


def missing_margins(spec: ModelSpec) -> dict[str, list[str]]:
    """Terms whose marginal terms are not all in the model (non-hierarchical), and those margins."""
    keys = {t.key for t in spec.fixed}
    out: dict[str, list[str]] = {}
    for t in spec.fixed:
        miss = [":".join(sub) for r in range(1, t.order) for sub in combinations(t.factors, r)
                if frozenset(sub) not in keys]
        if miss:
            out[t.name] = miss
    return out


def zero_df_message(term: str, counts: np.ndarray) -> str:
    cells = int(counts.size)
    return (
        f"{term} needs replicates to be separated from the residual; found 1 per cell in all "
        f"{cells:,} cells. Drop the term or add shards or samples."
    )


def refuse_pooled(data: pd.DataFrame, factors: Any) -> None:
    """Refuse a frame with several measures (or collections) that the model's ``factors`` do
    not separate: their scores would be pooled as if one measure (irm.anova, irm.mixed)."""
    pooled = pooled_levels(data, factors)
    if pooled is not None:
        col, n, shown = pooled
        raise DesignError(
            f"the data hold {n} {col}s ({shown}) and the model does not separate them; scores "
            f"of different {col}s would be pooled. Select one first, e.g. "
            f"data[data['{col}'] == '...'], or add {col} to the model."
        )


def drop_missing(data: pd.DataFrame, columns: Any, missing: str, where: str
                 ) -> tuple[pd.DataFrame, int, tuple[str, ...]]:
    """``missing="raise"``: ``data`` unchanged (the fit raises on a missing value, as before);
    ``"drop"``: the rows of ``data`` with a missing value (NaN, None, NaT) in one of ``columns``
    (the columns the model reads) left out, with a :class:`DataQualityWarning` naming how many
    and in which columns (statsmodels' ``missing="drop"``, R's ``na.omit``). Returns the frame,
    the number of rows dropped and the columns that had missing values. Columns the model does
    not read are not looked at.

    >>> import numpy as np, pandas as pd, warnings
    >>> d = pd.DataFrame({"y": [1.0, np.nan, 3.0], "g": ["a", "b", None], "z": [np.nan] * 3})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kept, n, cols = drop_missing(d, ("y", "g"), "drop", "irm.anova")
    >>> len(kept), n, cols
    (1, 2, ('y', 'g'))
    """
    check_choice(missing, "missing", ("raise", "drop"))
    if missing == "raise":
        return data, 0, ()
    cols = [c for c in dict.fromkeys(columns) if c in data.columns]
    na = data[cols].isna()
    rows = na.any(axis=1).to_numpy()
    n = int(rows.sum())
    if not n:
        return data, 0, ()
    bad = tuple(c for c in cols if na[c].any())
    counts = ", ".join(f"{c} ({int(na[c].sum())})" for c in bad)
    warnings.warn(
        f"{where}: dropped {n} of {len(data)} row(s) with a missing value in a column the model "
        f"uses: {counts} (missing='drop'). The fit uses the remaining {len(data) - n} row(s); "
        "pass missing='raise' to be stopped instead.",
        DataQualityWarning,
        stacklevel=3,
    )
    return data.loc[~rows], n, bad


#: The least-squares path fits a design of fewer columns than this (a bound: the columns of
#: every term's contrasts) and of fewer than :data:`SMALL_WORK` rows x columns^2 (the
#: multiply-adds of one QR factorisation) by dense QR in numpy (:func:`fit_small`): a 46-row
#: two-way table in about 0.1 ms, where the sparse path's set-up costs 1 ms. The two break even
#: near 3M (146 x 99: 2.0 ms against 2.9 ms; 278 x 121: 2.7 against 2.9; 638 x 169: 7.6 against
#: 3.3, at load 10); larger designs take the sparse path.
SMALL_COLUMNS = 200
SMALL_WORK = 2_000_000


def is_small(n_obs: int, n_columns: int) -> bool:
    """Whether a least-squares design of ``n_obs`` rows and (at most) ``n_columns`` columns
    takes the dense small path (:data:`SMALL_COLUMNS`, :data:`SMALL_WORK`)."""
    return n_columns < SMALL_COLUMNS and n_obs * n_columns**2 < SMALL_WORK


#: Below this many multiply-adds (rows x columns^2 of the design), OpenBLAS runs a least-squares
#: factorisation on one thread whatever its setting (its threading thresholds are far above), so
#: :func:`irmodels.anova` does not set the BLAS threads (threadpoolctl costs 10-30 us a fit).
TINY_WORK = 65_536


def fit_closed(y, terms, factors, flat, shape, counts):
    """The balanced closed form (:func:`irmodels.models._balanced.fit_balanced`) as the
    least-squares fits return it: ``ss, df, ss_resid, df_resid`` and the fitted value of each
    cell with the factors of the cells."""
    bf = fit_balanced(y, factors, flat, shape, int(counts[0]), [t.key for t in terms])
    if bf.df_resid == 0:
        top = max(terms, key=lambda t: t.order)
        raise DesignError(zero_df_message(top.name, counts))
    ss = np.array([bf.ss[t.key] for t in terms])
    df = np.array([bf.df[t.key] for t in terms], dtype=float)
    assert bf.cell_fitted is not None  # fit_balanced always sets it
    return ss, df, bf.ss_resid, bf.df_resid, (bf.cell_fitted, factors)


def fit_lsq(y, terms, codes, levels, ss_type, counts, *, full_cells=frozenset(), values=None,
            solver="auto", aliased_ok=False):
    """Least-squares table ``ss, df, ss_resid, df_resid, fitted``: a small design by dense QR
    (:func:`fit_small`), a larger one by the sparse path (:mod:`._sparse_lsq`), the dense
    reference (per-block pivoted QR) when ``solver="dense"`` or the sparse path cannot give the
    table exactly (type III with covariates or aliasing). ``solver="sparse"`` forces the
    sparse path."""
    if solver in ("auto", "lstsq") and is_small(
            y.shape[0], _n_dense_columns(terms, levels, full_cells)):
        return fit_small(y, terms, codes, levels, ss_type, counts, full_cells=full_cells,
                         values=values, aliased_ok=aliased_ok)
    if solver != "dense":
        # here, not at import: scipy.sparse and scipy.linalg cost a fresh process about 0.1 s,
        # which a small fit (the dense path in numpy) and the CLI on a small frame never pay
        from irmodels.models._sparse_lsq import SparseUnavailable, fit_sparse

        try:
            ss, df, ss_resid, df_resid, fitted = fit_sparse(
                y, terms, codes, {f: len(v) for f, v in levels.items()}, ss_type, values)
        except SparseUnavailable as exc:
            if solver == "sparse" or "columns remain" in str(exc):
                raise DesignError(
                    f"the sparse path cannot give type {'I' * ss_type} sums of squares exactly "
                    f"here ({exc}). Use method='dense' for a small design; for a large one drop "
                    "high-order interactions, balance the design (irm.balance), or fit "
                    "irm.mixed(...)."
                ) from exc
        else:
            if ss_type != 1 and (np.any(df == 0) or df_resid <= 0):
                # the dense path's order of checks: sequential aliasing first
                seq_df = fit_sparse(y, terms, codes, {f: len(v) for f, v in levels.items()}, 1,
                                    values)[1]
                _check_lsq(terms, seq_df, 1, 1, counts, aliased_ok)
            _check_lsq(terms, df, df_resid, ss_type, counts, aliased_ok)
            return ss, df, ss_resid, df_resid, fitted
    return _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells, values, aliased_ok)


def _check_lsq(terms, df, df_resid, ss_type, counts, aliased_ok=False) -> None:
    """Refuse a term with no degree of freedom (aliased; kept, with 0 df, when ``aliased_ok``:
    ``irm.anova(..., aliased="drop")``), then a fit with no residual degree of freedom."""
    if ss_type != 1 and df_resid <= 0:
        _check_lsq(terms, [1] * len(terms), df_resid, 1, counts)
    for t, d in zip(terms, df):
        if d == 0 and not aliased_ok:
            if ss_type == 1:
                raise DesignError(
                    f"term {t.name} is aliased: in these data it is fully determined by the terms "
                    "before it (no degree of freedom left). Drop it from the model or add the "
                    "missing combinations of levels, or pass aliased='drop' (R's lm: the term is "
                    "left out of the table)."
                )
            other = "ss_type=1" if ss_type == 2 else "ss_type=1 or 2"
            raise DesignError(
                f"term {t.name} has no degree of freedom left under type "
                f"{'I' * ss_type} sums of squares: in these data it is aliased with the other "
                "terms (empty cells, or a factor nested in another). Use "
                f"{other}, drop the term, or add the missing combinations of levels."
            )
    if df_resid <= 0:
        top = max(terms, key=lambda t: t.order)
        raise DesignError(
            f"{top.name} needs replicates to be separated from the residual; every observed "
            f"cell has {int(counts[counts > 0].max())} row(s), leaving no residual degree of "
            "freedom. Drop the term or add shards or samples."
        )


def dense_blocks(n_obs, terms, codes, levels, full_cells=frozenset(), values=None
                 ) -> list[np.ndarray]:
    """The dense design columns of every term, in order: ``contr.sum`` contrasts, a term
    without its margins (named in ``full_cells``) by the indicators of its observed cells, a
    covariate term as R's ``model.matrix`` codes it."""
    blocks = []
    present = {t.key for t in terms}
    for t in terms:
        if t.is_covariate:  # R's model.matrix coding, times the covariates
            blocks.append(_design.term_columns(
                t, codes, {f: len(levels[f]) for f in codes}, values or {},
                _design.coding(t, present), contrasts="sum"))
            continue
        tc = [codes[f] for f in t.factors]
        tl = [len(levels[f]) for f in t.factors]
        if t.name in full_cells:
            # a term without its margins spans every cell of its factors (R's model.matrix codes
            # the factors whose margin is absent by indicators); the sequential fit keeps what
            # the terms before it do not already explain
            cell = np.ravel_multi_index(tc, tl) if len(tc) > 1 else tc[0]
            block = np.zeros((n_obs, math.prod(tl)))
            block[np.arange(n_obs), cell] = 1.0
            blocks.append(block[:, block.any(axis=0)])
        else:
            blocks.append(term_block(tc, tl))
    return blocks


def _n_dense_columns(terms, levels, full_cells) -> int:
    return 1 + sum(
        math.prod(len(levels[f]) - (t.name not in full_cells) for f in t.categorical_factors)
        for t in terms
    )


def _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells=frozenset(), values=None,
               aliased_ok=False):
    n_obs = y.shape[0]
    n_cols = _n_dense_columns(terms, levels, full_cells)
    if n_obs * n_cols > MAX_DENSE_CELLS:
        raise DesignError(
            f"the least-squares path would build a dense {n_obs:,} x {n_cols:,} design, larger "
            f"than the limit of {MAX_DENSE_CELLS:,} cells. Balance the design (irm.balance shows "
            "the empty cells), drop high-order interactions, or fit irm.mixed(...)."
        )
    blocks = dense_blocks(n_obs, terms, codes, levels, full_cells, values)
    ones = np.ones((n_obs, 1))
    yc = y
    full = sequential_ss([ones, *blocks], yc)
    df_resid = n_obs - full.rank
    _check_lsq(terms, full.df[1:], df_resid, 1, counts, aliased_ok)  # aliasing, residual df
    fitted = full.fitted
    resid = y - fitted
    ss_resid = float(np.dot(resid, resid))
    if ss_type == 1:
        ss = np.array(full.ss[1:])
        df = np.array(full.df[1:], dtype=float)
    else:
        ss = np.empty(len(terms))
        df = np.empty(len(terms))
        for i in range(len(terms)):
            fit = sequential_ss([ones, *[blocks[j] for j in _reduced(terms, i, ss_type)],
                                 blocks[i]], y)
            ss[i] = fit.ss[-1]
            df[i] = fit.df[-1]
        _check_lsq(terms, df, df_resid, ss_type, counts, aliased_ok)
    return ss, df, ss_resid, df_resid, fitted


def _reduced(terms, i: int, ss_type: int) -> list[int]:
    """The terms (indices) term ``i`` enters after: type II those not containing it, type III
    all the others."""
    t = terms[i]
    if ss_type == 2:
        return [j for j, u in enumerate(terms) if j != i and not t.key <= u.key]
    return [j for j in range(len(terms)) if j != i]


def fit_small(y, terms, codes, levels, ss_type, counts, *, full_cells=frozenset(), values=None,
              aliased_ok=False):
    """The least-squares table of a small design (a few hundred columns at most: see
    :func:`is_small`) from Householder QR factorisations of its dense design, in numpy.

    The columns (those of :func:`dense_blocks`, scaled to unit norm) are factorised once in
    model order: the effects ``Q'y`` of a term's columns give its type I sum of squares, the
    residual and the fitted values. A type II or III sum of squares is the effects of the
    term's columns entered after its reduced model (the terms not containing it, or all the
    others): the full factorisation when those are the terms before it, else one more
    factorisation with the term last. A design that is not of full column rank (empty cells,
    aliasing) or has no residual degree of freedom goes to the reference path (per-block
    pivoted QR, :func:`irmodels.models._lsq.sequential_ss`), which drops aliased columns as R
    does and says what is wrong. Returns ``ss, df, ss_resid, df_resid, fitted``.

    >>> from irmodels.formula import Term
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.integers(0, 3, 40), rng.integers(0, 4, 40)
    >>> y = a + 0.5 * b + rng.normal(size=40)
    >>> ss, df, ssr, dfr, _ = fit_small(y, [Term(("a",)), Term(("b",))], {"a": a, "b": b},
    ...                                 {"a": range(3), "b": range(4)}, 2, np.bincount(3 * a + b))
    >>> df.tolist(), dfr
    ([2.0, 3.0], 34)
    """
    n_obs = y.shape[0]
    blocks = dense_blocks(n_obs, terms, codes, levels, full_cells, values)
    widths = [b.shape[1] for b in blocks]
    p = 1 + sum(widths)
    starts = np.cumsum([1, *widths])
    x = np.empty((n_obs, p))
    x[:, 0] = 1.0
    for block, a, b in zip(blocks, starts[:-1], starts[1:]):
        x[:, a:b] = block
    norms = np.sqrt(np.einsum("ij,ij->j", x, x))
    if p >= n_obs or not norms.all():
        return _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells, values,
                          aliased_ok)
    x /= norms

    def effects(order: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
        """Q and Q'y of the intercept then the columns of the terms ``order``; None when the
        columns are not of full rank (a diagonal of R below R's lm tolerance)."""
        if len(order) == len(terms) and order == sorted(order):
            xs = x
        else:
            xs = x[:, np.concatenate([[0], *[np.arange(starts[j], starts[j + 1]) for j in order]])]
        q, r = np.linalg.qr(xs)
        if np.abs(np.diagonal(r)).min() <= RANK_TOL:
            return None
        return q, q.T @ y

    full = effects(list(range(len(terms))))
    if full is None:
        return _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells, values,
                          aliased_ok)
    q, e = full
    fitted = q @ e
    resid = y - fitted
    ss = np.empty(len(terms))
    for i in range(len(terms)):
        if ss_type == 1 or _reduced(terms, i, ss_type) == list(range(i)):
            part = e[starts[i]:starts[i + 1]]
        else:
            got = effects([*_reduced(terms, i, ss_type), i])
            if got is None:  # pragma: no cover - a subset of full-rank columns has full rank
                return _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells, values,
                                  aliased_ok)
            part = got[1][-widths[i]:]
        ss[i] = float(part @ part)
    df = np.array(widths, dtype=float)
    _check_lsq(terms, df, n_obs - p, ss_type, counts, aliased_ok)
    return ss, df, float(resid @ resid), n_obs - p, fitted


@functools.lru_cache(maxsize=64)
def table_axes(names: tuple[str, ...]) -> tuple[pd.Index, pd.Index]:
    # immutable Index objects, shared by the tables of repeated fits of one model
    return pd.Index([*names, "Residual"]), pd.Index(TABLE_COLUMNS)
