"""The fitting behind :func:`irmodels.anova`: the checks of a model against its data (margins,
pooled frames, zero-df terms) and the least-squares fits (sparse, and dense for small designs)
that give the sums of squares of every term. :mod:`irmodels.models.anova` re-exports
:func:`refuse_pooled`. References: docs/methods.md: "ANOVA".
"""

from __future__ import annotations

import functools
import math
import warnings
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from irmodels._validate import check_choice
from irmodels.data.frame import pooled_levels
from irmodels.errors import DataQualityWarning, DesignError, FormulaError
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._anova_table import TABLE_COLUMNS
from irmodels.models._lsq import sequential_ss, term_block

#: Largest dense design (rows x columns) the least-squares path builds (about 400 MB).
MAX_DENSE_CELLS = 50_000_000


def _resolve(model: str | ModelSpec, columns: list[str]) -> ModelSpec:
    """Formula, preset or ModelSpec to a ModelSpec (one implementation: :mod:`._design`)."""
    return _design.resolve_model(model, columns)


def _encode(col: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes 0..L-1 of the observed levels (categorical order, else natural order)."""
    return _design.encode(col)


def _check_spec(spec: ModelSpec, data: pd.DataFrame) -> None:
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


def _missing_margins(spec: ModelSpec) -> dict[str, list[str]]:
    """Terms whose marginal terms are not all in the model (non-hierarchical), and those margins."""
    keys = {t.key for t in spec.fixed}
    out: dict[str, list[str]] = {}
    for t in spec.fixed:
        miss = [":".join(sub) for r in range(1, t.order) for sub in combinations(t.factors, r)
                if frozenset(sub) not in keys]
        if miss:
            out[t.name] = miss
    return out


def _zero_df_message(term: str, counts: np.ndarray) -> str:
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


def _fit_lsq(y, terms, codes, levels, ss_type, counts, full_cells=frozenset(), values=None,
             solver="auto", aliased_ok=False):
    """Least-squares table: sparse (:mod:`._sparse_lsq`) unless ``solver="dense"`` or the
    sparse path cannot give it exactly (type III with covariates or aliasing)."""
    if solver != "dense":
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


def _fit_dense(y, terms, codes, levels, ss_type, counts, full_cells=frozenset(), values=None,
               aliased_ok=False):
    n_obs = y.shape[0]
    n_cols = 1 + sum(
        math.prod(len(levels[f]) - (t.name not in full_cells) for f in t.categorical_factors)
        for t in terms
    )
    if n_obs * n_cols > MAX_DENSE_CELLS:
        raise DesignError(
            f"the least-squares path would build a dense {n_obs:,} x {n_cols:,} design, larger "
            f"than the limit of {MAX_DENSE_CELLS:,} cells. Balance the design (irm.balance shows "
            "the empty cells), drop high-order interactions, or fit irm.mixed(...)."
        )
    blocks = {}
    present = {t.key for t in terms}
    for t in terms:
        if t.is_covariate:  # R's model.matrix coding, times the covariates
            blocks[t.key] = _design.term_columns(
                t, codes, {f: len(levels[f]) for f in codes}, values or {},
                _design.coding(t, present), contrasts="sum")
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
            blocks[t.key] = block[:, block.any(axis=0)]
        else:
            blocks[t.key] = term_block(tc, tl)
    ones = np.ones((n_obs, 1))
    yc = y
    full = sequential_ss([ones, *[blocks[t.key] for t in terms]], yc)
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
        for i, t in enumerate(terms):
            if ss_type == 2:
                others = [u for u in terms if u != t and not t.key <= u.key]
            else:
                others = [u for u in terms if u != t]
            fit = sequential_ss([ones, *[blocks[u.key] for u in others], blocks[t.key]], y)
            ss[i] = fit.ss[-1]
            df[i] = fit.df[-1]
        _check_lsq(terms, df, df_resid, ss_type, counts, aliased_ok)
    return ss, df, ss_resid, df_resid, fitted


@functools.lru_cache(maxsize=64)
def _table_axes(names: tuple[str, ...]) -> tuple[pd.Index, pd.Index]:
    # immutable Index objects, shared by the tables of repeated fits of one model
    return pd.Index([*names, "Residual"]), pd.Index(TABLE_COLUMNS)
