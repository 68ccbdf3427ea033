"""The checks of a long frame's rows and scores (private module; the names are re-exported by
:mod:`irmodels.data.frame`).

:func:`as_scores` and :func:`check_labels` are the column checks of :func:`irmodels.frame`;
:func:`check_rows`, :func:`check_finite_scores` and :func:`check_distinct_rows` are what a model
or a test checks of the rows it is given (one design, finite scores, one row per cell), and
:func:`pooled_levels` names a factor whose levels were pooled over.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from irmodels.errors import DataFormatError, DataQualityWarning

__all__ = ["as_scores", "check_distinct_rows", "check_finite_scores", "check_labels",
           "check_rows", "pooled_levels"]


_EXACT_INT = 2**53  # integers beyond this do not survive the conversion to float64
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def as_scores(col: pd.Series, name: str) -> pd.Series:
    """The score column as float64, or a :class:`DataFormatError` for anything that would
    become a number only by losing information: booleans (also inside an object column),
    complex numbers (today's numpy would drop the imaginary part), dates and durations (they
    would become nanoseconds), integers beyond 2**53 (they would be rounded), infinities."""
    dtype = col.dtype
    if pd.api.types.is_bool_dtype(dtype):
        raise DataFormatError(f"score column {name!r} is boolean; expected numbers")
    if pd.api.types.is_complex_dtype(dtype):
        raise DataFormatError(
            f"score column {name!r} holds complex numbers ({dtype}); scores must be real "
            "numbers. Take the real part (or the modulus) explicitly first."
        )
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype) or (
        isinstance(dtype, pd.PeriodDtype)
    ):
        raise DataFormatError(
            f"score column {name!r} holds dates or durations ({dtype}), not scores; convert "
            "them to numbers explicitly (e.g. seconds) first."
        )
    if pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
        if pd.api.types.is_integer_dtype(dtype):
            big = (col.astype("float64").abs() > _EXACT_INT).to_numpy()
            if big.any():
                i = int(np.flatnonzero(big)[0])
                raise DataFormatError(
                    f"score column {name!r} has the integer {col.iloc[i]} (row {i}), beyond "
                    "2**53: it cannot be held exactly as a float64 score. Rescale the scores."
                )
        values = col.astype("float64")
    else:
        obj = col.astype(object)
        kind = pd.api.types.infer_dtype(obj, skipna=True)
        suspect = kind not in ("floating", "string", "empty", "decimal")
        for i, v in enumerate(obj.to_numpy() if suspect else ()):
            if isinstance(v, (bool, np.bool_)):
                raise DataFormatError(
                    f"score column {name!r} has the boolean {v!r} (row {i}); expected numbers"
                )
            if isinstance(v, (complex, np.complexfloating)):
                raise DataFormatError(
                    f"score column {name!r} has the complex number {v!r} (row {i}); scores must "
                    "be real numbers"
                )
            if isinstance(v, (int, np.integer)) and abs(int(v)) > _EXACT_INT:
                raise DataFormatError(
                    f"score column {name!r} has the integer {v} (row {i}), beyond 2**53: it "
                    "cannot be held exactly as a float64 score. Rescale the scores."
                )
            if isinstance(v, (pd.Timestamp, pd.Timedelta, np.datetime64, np.timedelta64)) or (
                type(v).__module__ == "datetime"
            ):
                raise DataFormatError(
                    f"score column {name!r} has the date or duration {v!r} (row {i}); expected "
                    "numbers"
                )
        values = pd.to_numeric(obj, errors="coerce")
        bad = values.isna() & obj.notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(
                f"score column {name!r} has non-numeric value {col.iloc[i]!r} (row {i}); "
                "scores must be numbers."
            )
        values = values.astype("float64")
    inf = np.isinf(values.to_numpy())
    if inf.any():
        i = int(np.flatnonzero(inf)[0])
        raise _infinite(name, int(inf.sum()), float(values.iloc[i]), f"row {i}")
    return values


def _infinite(column: object, n: int, first: float, where: str, prefix: str = ""
              ) -> DataFormatError:
    """The error for infinite scores (:func:`irmodels.frame` and :func:`check_finite_scores`)."""
    return DataFormatError(
        f"{prefix}score column {column!r} has {n} infinite value(s), the first {first} "
        f"({where}); scores must be finite (a number beyond the float64 range reads as infinite)"
    )


def check_labels(values: pd.Categorical, column: str, canon: str) -> None:
    """Refuse labels with control characters (a NUL, an escape, a line break...)."""
    for level in values.categories:
        text = str(level)
        if not text.strip():
            n = int((np.asarray(values.codes) == values.categories.get_loc(level)).sum())
            raise DataFormatError(
                f"column {column!r} ({canon}) has {n} empty label(s) ({text!r}); every row needs "
                f"a {canon} label (an empty cell in a file is a missing label). Fill them in or "
                "drop those rows first."
            )
        m = _CONTROL_CHARS.search(text)
        if m is not None:
            raise DataFormatError(
                f"column {column!r} ({canon}) has the label {text!r} with the control character "
                f"U+{ord(m.group(0)):04X}; labels may not hold control characters (a NUL often "
                "comes from a binary or UTF-16 file). Clean the labels first."
            )


def _cells_shown(rows: pd.DataFrame, columns: Sequence[str]) -> str:
    """``(topic 2, system b), ...`` for the first (up to) three ``rows``; empty without
    ``columns``."""
    if not columns:
        return ""
    return ", ".join(
        "(" + ", ".join(f"{c} {v}" for c, v in zip(columns, r)) + ")"
        for r in rows[list(columns)].head(3).itertuples(index=False)
    )


def pooled_levels(data: pd.DataFrame, factors: Collection[str] = ()) -> tuple[str, int, str] | None:
    """The first of ``measure`` and ``collection`` that has several levels in ``data`` and is
    not among ``factors``, as ``(column, number of levels, the first five shown)``; None when
    there is none. A model or a mean over such a frame would pool measures.

    >>> pooled_levels(pd.DataFrame({"measure": ["AP", "P@10"], "score": [0.1, 0.2]}))
    ('measure', 2, 'AP, P@10')
    """
    for col in ("measure", "collection"):
        if col in data.columns and col not in factors and data[col].nunique() > 1:
            shown = ", ".join(map(str, pd.unique(data[col].astype(str))[:5]))
            return col, int(data[col].nunique()), shown
    return None


def check_rows(data: pd.DataFrame, what: str | None = None) -> None:
    """Refuse a frame with no rows (a filter that matched nothing) before any computation
    meets an empty array; ``what`` starts the message.

    >>> check_rows(pd.DataFrame({"topic": [], "system": [], "score": []}), "irm.anova")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: irm.anova: the data have no rows (did a selection match nothing? check the system or topic names used to filter).
    """
    if len(data) == 0:
        prefix = f"{what}: " if what else ""
        raise DataFormatError(f"{prefix}the data have no rows (did a selection match nothing? "
                              "check the system or topic names used to filter).")


def check_finite_scores(data: pd.DataFrame, what: str | None = None, *,
                        column: str = "score") -> None:
    """Refuse missing (NaN) or infinite scores in a frame that did not go through
    :func:`frame`, in :func:`frame`'s words (so that every function taking a plain DataFrame
    says the same thing); ``what`` (a function or argument name) starts the message.

    A column that does not read as numbers is left to the caller.

    >>> import pandas as pd
    >>> check_finite_scores(pd.DataFrame({"topic": ["1", "2"], "system": ["a", "a"],
    ...                                   "score": [0.5, float("nan")]}), "pairwise")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: pairwise: 1 score(s) are missing (NaN), e.g. (topic 2, system a). Drop or impute them first, or drop those rows with irm.frame(data, nan='drop') (the design may become unbalanced).
    """
    try:
        y = data[column].to_numpy(dtype="float64", na_value=np.nan)
    except (TypeError, ValueError):  # text, dates...: the caller's own checks say what is wrong
        return
    finite = np.isfinite(y)
    if finite.all():
        return
    prefix = f"{what}: " if what else ""
    labels = [c for c in ("topic", "system") if c in data.columns]
    missing = np.isnan(y)
    if missing.any():
        shown = _cells_shown(data.loc[missing], labels)
        raise DataFormatError(
            f"{prefix}{int(missing.sum())} score(s) are missing (NaN)"
            f"{', e.g. ' + shown if shown else ''}. Drop or impute them first, or drop those rows "
            "with irm.frame(data, nan='drop') (the design may become unbalanced)."
        )
    inf = ~finite
    i = int(np.flatnonzero(inf)[0])
    shown = _cells_shown(data.iloc[[i]], labels)
    raise _infinite(column, int(inf.sum()), float(y[i]),
                    f"row {i}{', ' + shown[1:-1] if shown else ''}", prefix)


def _duplicated_rows(data: pd.DataFrame, key: Sequence[object]) -> np.ndarray | None:
    """``data.duplicated(subset=key, keep=False)`` as a boolean array (None when a cell cannot
    be hashed); see :func:`_row_groups`."""
    groups = _row_groups(data, key)
    if groups is None:
        return None
    return np.bincount(groups)[groups] > 1


def _row_groups(data: pd.DataFrame, key: Sequence[object]) -> np.ndarray | None:
    """A group number per row, equal for rows equal on ``key`` (missing equal to missing, as
    ``DataFrame.duplicated``), numbered 0..groups-1; None when a cell cannot be hashed.
    Categorical columns (every :func:`frame`) by their codes, others through one
    ``pd.factorize`` each (a tiny frame's check costs microseconds, not pandas' milliseconds)."""
    codes, sizes = [], []
    try:
        for c in key:
            col = data[c]
            if isinstance(col.dtype, pd.CategoricalDtype):
                codes.append(np.asarray(col.cat.codes, dtype=np.int64))
                sizes.append(len(col.cat.categories) + 1)  # + 1: code -1 (missing)
            else:
                code, uniq = pd.factorize(col, use_na_sentinel=True)
                codes.append(np.asarray(code, dtype=np.int64))
                sizes.append(len(uniq) + 1)
    except TypeError:  # unhashable cells (lists): such a column is not a label
        return None
    flat = np.zeros(len(data), dtype=np.int64)
    cells = 1
    for code, n in zip(codes, sizes):
        if cells * n >= 2**62:  # renumber the combinations so far before they overflow
            flat = np.unique(flat, return_inverse=True)[1].ravel().astype(np.int64)
            cells = int(flat.max()) + 1 if len(flat) else 1
        flat = flat * n + (code + 1)
        cells *= n
    if cells <= 8.0 * len(data) + 1024:  # a slot per cell, in memory like the data
        present = np.zeros(int(cells), dtype=np.int64)
        present[flat] = 1
        number = np.cumsum(present) - 1
        return number[flat]
    _, inverse = np.unique(flat, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def check_distinct_rows(data: pd.DataFrame, what: str | None = None, *,
                        scores: Sequence[str] = ("score",), warn: bool = False,
                        stacklevel: int = 3, groups: np.ndarray | None = None) -> None:
    """Rows that are the same in every column but the ``scores``: two measurements that nothing
    tells apart (a frame concatenated twice, a run read from two files), which a model would
    take for replicates. Refused in the words of :func:`frame`'s repeated key, or with
    ``warn=True`` a :class:`DataQualityWarning` (for functions that also take replicates of an
    unnamed kind, ``frame(..., duplicates="allow")``). ``what`` starts the message.

    >>> import pandas as pd
    >>> check_distinct_rows(pd.DataFrame({"topic": ["1", "2", "2"], "system": ["a", "b", "b"],
    ...                                   "score": [0.1, 0.4, 0.4]}), "irm.pairwise")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: irm.pairwise: 2 rows repeat the same (topic, system) key, e.g. topic=2, system=b, and no other column tells them apart (exact copies: the same score too). Each measurement needs its own row: average them (data.groupby(['topic', 'system'], observed=True)['score'].mean().reset_index()), drop the copies (data.drop_duplicates()), or add the column that tells replicates apart (shard, sample).
    """
    skip = set(scores)
    key = [c for c in data.columns if c not in skip]
    if not key or len(data) < 2:
        return
    if groups is None:  # else the caller's group of every row over the key (irm.anova's cells)
        groups = _row_groups(data, key)
    if groups is None:
        return
    sizes = np.bincount(groups)
    if sizes.max() < 2:
        return
    dup = sizes[groups] > 1
    i = int(np.flatnonzero(dup)[0])
    show = ", ".join(f"{k}={data[k].iat[i]}" for k in key)
    same = groups == groups[i]
    score = next(iter(scores), "score")
    copies = score in data.columns and bool(
        len(pd.unique(data[score].to_numpy()[same])) < int(same.sum()))
    prefix = f"{what}: " if what else ""
    head = (
        f"{prefix}{int(dup.sum())} rows repeat the same ({', '.join(map(str, key))}) key, e.g. "
        f"{show}, and no other column tells them apart"
        f"{' (exact copies: the same ' + str(score) + ' too)' if copies else ''}"
    )
    average = (f"average them (data.groupby({[str(k) for k in key]}, observed=True)[{score!r}]"
               ".mean().reset_index()), drop the copies (data.drop_duplicates())")
    if not warn:
        raise DataFormatError(
            f"{head}. Each measurement needs its own row: {average}, or add the column that "
            "tells replicates apart (shard, sample)."
        )
    warnings.warn(
        f"{head}; they are fitted as replicates of one cell (a copy adds a residual of 0 and a "
        f"degree of freedom: F too large, p too small). If they are not replicates, {average}; "
        "if they are, add the column that tells them apart (shard, sample, replicate).",
        DataQualityWarning, stacklevel=stacklevel,
    )
