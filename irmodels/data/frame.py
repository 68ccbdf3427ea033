"""The long-format contract: one row per measurement.

Canonical columns, in this order when present::

    collection, measure, topic, system, shard, sample, score

``topic``, ``system``, ``shard``, ``sample``, ``measure`` and ``collection`` are pandas
categoricals whose categories are the observed levels in *natural* order ("2" before "10",
"run2" before "run10"), so the same data give the same frame whatever the row order.
``score`` is float64 with no NaN. Every later stage takes such a frame.

References: docs/methods.md: "Long-format evaluation data".
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from irmodels.data._frame_checks import (  # noqa: F401 - the row checks, re-exported
    as_scores,
    check_distinct_rows,
    check_finite_scores,
    check_labels,
    check_rows,
    pooled_levels,
)
from irmodels.data._score_adapters import adapt_scores
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError, UsageError

__all__ = [
    "CANONICAL_ORDER",
    "FACTOR_COLUMNS",
    "frame",
    "to_wide",
    "from_wide",
    "balance",
    "BalanceReport",
    "filter_systems",
    "natural_key",
    "factor_columns",
    "require_columns",
]

FACTOR_COLUMNS = ("collection", "measure", "topic", "system", "shard", "sample")
CANONICAL_ORDER = ("collection", "measure", "topic", "system", "shard", "sample", "score")

_NUM_RE = re.compile(r"(\d+)")


def natural_key(value: object) -> tuple:
    """Sort key that orders embedded numbers numerically: ``run2`` < ``run10``.

    >>> sorted(["run10", "run2", "run1"], key=natural_key)
    ['run1', 'run2', 'run10']
    """
    parts = _NUM_RE.split(str(value))
    # the digits themselves break ties between equal numbers ("0" < "00"), so that the order
    # never depends on the order in which values were seen
    return tuple((0, int(p), p) if p.isdecimal() else (1, 0, p) for p in parts if p != "")


def _text_collision(labels: Sequence[object], owner: str) -> None:
    """Refuse two of the (distinct) ``labels`` with the same text (``1`` and ``"1"``): a long
    frame's labels are text, and merging them would pool two topics or systems without a word.
    ``owner`` says whose labels they are (``column 'topic' has the labels``)."""
    first: dict[str, object] = {}
    for label in labels:
        text = str(label)
        if text in first:
            raise DataFormatError(
                f"{owner} {first[text]!r} and {label!r}, which are the same as text ({text!r}); "
                "labels are text in a long frame, so they would be merged; rename one of them."
            )
        first[text] = label


def _natural_categorical(values: pd.Series) -> pd.Categorical:
    if isinstance(values.dtype, pd.CategoricalDtype):
        # keep the categories' order, drop the unused ones: a remap of the integer codes (the
        # values are never turned into Python objects)
        codes = np.asarray(values.cat.codes, dtype=np.int64)
        old = values.cat.categories
        used = np.zeros(len(old), dtype=bool)
        used[codes[codes >= 0]] = True
        remap = np.cumsum(used) - 1
        new_codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
        kept = list(old[used])
        texts = [str(c) for c in kept]  # labels are text, whatever the categories' dtype
        if len(set(texts)) < len(texts):
            _text_collision(kept, f"column {values.name!r} has the labels")
        return pd.Categorical.from_codes(new_codes, categories=pd.Index(texts))
    as_str = values.astype(str)
    levels = sorted(pd.unique(as_str), key=natural_key)
    if values.dtype == object and len(levels) < values.nunique(dropna=False):
        _text_collision(pd.unique(values), f"column {values.name!r} has the labels")
    return pd.Categorical(as_str, categories=levels)


def require_columns(df: pd.DataFrame, columns: Iterable[str], what: str = "data", *,
                    hint: str | None = None) -> None:
    """Raise :class:`DataFormatError` naming every missing column and the ones available;
    ``hint`` replaces the default way out (renaming the columns with :func:`frame`)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        way_out = hint or ("Pass the right names (e.g. irm.frame(df, topic='qid', system='run', "
                           "score='value')).")
        raise DataFormatError(
            f"{what} has no column {', '.join(repr(c) for c in missing)}; "
            f"columns present: {', '.join(map(repr, df.columns))}. {way_out}"
        )


def factor_columns(df: pd.DataFrame) -> list[str]:
    """The canonical factor columns present in ``df``, in canonical order."""
    return [c for c in FACTOR_COLUMNS if c in df.columns]


def frame(
    data: pd.DataFrame,
    *,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
    shard: str | None = None,
    sample: str | None = None,
    measure: str | None = None,
    collection: str | None = None,
    nan: Literal["raise", "drop"] = "raise",
    duplicates: Literal["raise", "allow"] = "raise",
    warn: bool = True,
) -> pd.DataFrame:
    """Validate a DataFrame and return it as a canonical long frame.

    Parameters
    ----------
    data : DataFrame
        One row per measurement, with any column names.
    topic, system, score : str
        Names of the topic, system and score columns in ``data``. When ``data`` is one run's
        scores from a tool that records no run name (pytrec_eval's ``evaluate(run)`` output, a
        list of ir_measures results, a ranx Run), ``system`` is that run's name.
    shard, sample, measure, collection : str, optional
        Names of the optional columns. A column already called ``shard``, ``sample``,
        ``measure`` or ``collection`` is picked up without being named.
    nan : {"raise", "drop"}
        What to do with missing scores: raise :class:`DataFormatError` (default) or drop
        those rows (and say how many in a :class:`DataQualityWarning`).
    duplicates : {"raise", "allow"}
        Rows that repeat a (collection, measure, topic, system, shard, sample) key raise by
        default; ``"allow"`` keeps them (they are then replicates of an unnamed kind).
    warn : bool
        ``False`` leaves out the warning of ``nan="drop"`` (for a caller that reports the
        dropped rows itself, as :func:`irmodels.read_matrix` does, naming the file).

    Returns
    -------
    DataFrame
        Columns among ``collection, measure, topic, system, shard, sample, score`` in that
        order; factors are categoricals in natural order, ``score`` is float64. The index is
        a fresh RangeIndex.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> raw = pd.DataFrame({"qid": [2, 10, 2, 10], "run": ["b", "b", "a", "a"],
    ...                     "map": [0.5, 0.25, 0.75, 1.0]})
    >>> f = irm.frame(raw, topic="qid", system="run", score="map")
    >>> f
      topic system  score
    0     2      b   0.50
    1    10      b   0.25
    2     2      a   0.75
    3    10      a   1.00
    >>> list(f["topic"].cat.categories), list(f["system"].cat.categories)
    (['2', '10'], ['a', 'b'])
    """
    if not isinstance(data, pd.DataFrame) or {"name", "qid", "measure", "value"} <= set(
            map(str, data.columns)):
        # other tools' outputs (PyTerrier, ir_measures, pytrec_eval, ranx, polars, file-like):
        # _score_adapters.py; system= names a single run that carries no name of its own
        data, named = adapt_scores(data, None if system == "system" else system)
        if named:
            system = "system"
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"expected a pandas DataFrame, got {type(data).__name__}")
    if nan not in ("raise", "drop"):
        raise UsageError(f"nan must be 'raise' or 'drop', got {nan!r}")
    if duplicates not in ("raise", "allow"):
        raise UsageError(f"duplicates must be 'raise' or 'allow', got {duplicates!r}")
    for name_given in (topic, system, score, shard, sample, measure, collection):
        if name_given is not None and not isinstance(name_given, str):
            raise UsageError(f"column names are strings; got {name_given!r}")
    names: dict[str, str] = {"topic": topic, "system": system, "score": score}
    optional = {"shard": shard, "sample": sample, "measure": measure, "collection": collection}
    for canon, given in optional.items():
        if given is not None:
            names[canon] = given
        elif canon in data.columns:
            names[canon] = canon
    require_columns(data, names.values())

    out = pd.DataFrame(index=pd.RangeIndex(len(data)))
    for canon in CANONICAL_ORDER:
        if canon not in names:
            continue
        col = data[names[canon]]
        if isinstance(col, pd.DataFrame):
            raise DataFormatError(f"column {names[canon]!r} appears more than once in the data")
        col = col.reset_index(drop=True)
        if canon == "score":
            out["score"] = as_scores(col, names["score"])
        else:
            if col.isna().any():
                bad = int(col.isna().sum())
                raise DataFormatError(
                    f"column {names[canon]!r} ({canon}) has {bad} missing value(s); "
                    "every row needs a " + canon + " label."
                )
            out[canon] = col
    nan_rows = out["score"].isna()
    if nan_rows.any():
        n_bad = int(nan_rows.sum())
        if nan == "raise":
            first = out.loc[nan_rows].head(3)
            show = ", ".join(
                f"(topic {r.topic}, system {r.system})" for r in first.itertuples(index=False)
            )
            raise DataFormatError(
                f"{n_bad} score(s) are missing (NaN), e.g. {show}. Drop or impute them first, "
                "or pass nan='drop' to drop those rows (the design may become unbalanced)."
            )
        if n_bad == len(out):
            raise DataFormatError(
                f"every score is missing (NaN, {n_bad} row(s)): nothing is left after "
                "nan='drop'. Check that the score column (or the matrix's cells) holds numbers."
            )
        if warn:
            warnings.warn(
                f"dropped {n_bad} row(s) with a missing score", DataQualityWarning, stacklevel=2
            )
        out = out.loc[~nan_rows].reset_index(drop=True)
    for canon in FACTOR_COLUMNS:
        if canon in out.columns:
            out[canon] = _natural_categorical(out[canon])
            check_labels(out[canon].array, names[canon], canon)
    check_rows(out)
    if duplicates == "raise":
        key = factor_columns(out)
        dup = out.duplicated(subset=key, keep=False)
        if dup.any():
            first = out.loc[dup, key].drop_duplicates().head(3)
            show = "; ".join(
                ", ".join(f"{k}={v}" for k, v in zip(key, row)) for row in first.itertuples(index=False)
            )
            raise DataFormatError(
                f"{int(dup.sum())} rows repeat the same ({', '.join(key)}) key, e.g. {show}. "
                "Each measurement needs its own row: remove duplicates, or name the column that "
                "tells replicates apart (shard=... or sample=...)."
            )
    return out


def to_wide(data: pd.DataFrame, *, aggregate: Literal["raise", "mean"] = "raise") -> pd.DataFrame:
    """Long frame -> wide matrix: rows = topics, columns = systems.

    A frame with shards, samples or several measures has more than one score per
    (topic, system); pass ``aggregate="mean"`` to average them, otherwise this raises.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 1, 2, 2], "system": ["a", "b", "a", "b"],
    ...                             "score": [0.1, 0.2, 0.3, 0.4]}))
    >>> irm.to_wide(f)
    system    a    b
    topic
    1       0.1  0.2
    2       0.3  0.4
    """
    if aggregate not in ("raise", "mean"):
        raise UsageError(f"aggregate must be 'raise' or 'mean', got {aggregate!r}")
    require_columns(data, ["topic", "system", "score"])
    extra = [c for c in ("collection", "measure", "shard", "sample") if c in data.columns]
    multi = [c for c in extra if data[c].nunique() > 1]
    if multi and aggregate == "raise":
        raise DesignError(
            f"the frame has several {', '.join(multi)} per (topic, system); "
            "pass aggregate='mean' to average them, or select one first."
        )
    if aggregate == "raise":
        repeated = data.duplicated(subset=["topic", "system"], keep=False)
        if repeated.any():
            first = data.loc[repeated, ["topic", "system"]].iloc[0]
            raise DesignError(
                f"{int(repeated.sum())} rows share a (topic, system) cell, e.g. topic "
                f"{first['topic']}, system {first['system']}; pass aggregate='mean' to average "
                "them, or select one row per cell first."
            )
    data = data.copy(deep=False)
    for col in ("topic", "system"):  # a subset's unused levels are not rows or columns
        if isinstance(data[col].dtype, pd.CategoricalDtype):
            data[col] = data[col].cat.remove_unused_categories()
    wide = data.pivot_table(
        index="topic", columns="system", values="score", aggfunc="mean", observed=False,
        dropna=False,
    )
    wide.columns = pd.Index([str(c) for c in wide.columns], name="system")
    wide.index = pd.Index([str(i) for i in wide.index], name="topic")
    return wide


def from_wide(
    wide: pd.DataFrame,
    *,
    measure: str | None = None,
    collection: str | None = None,
    topic_column: str | None = None,
    nan: Literal["raise", "drop"] = "raise",
    warn: bool = True,
) -> pd.DataFrame:
    """Wide matrix (rows = topics, columns = systems) -> canonical long frame.

    Parameters
    ----------
    wide : DataFrame
        Scores; the index holds topic ids unless ``topic_column`` names a column that does.
        A default RangeIndex becomes topics ``1..T``.
    measure, collection : str, optional
        Constant labels added as columns.
    topic_column : str, optional
        Column holding the topic ids.
    nan, warn
        Passed to :func:`frame`.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> w = pd.DataFrame({"a": [0.1, 0.3], "b": [0.2, 0.4]})
    >>> irm.from_wide(w, measure="AP")
      measure topic system  score
    0      AP     1      a    0.1
    1      AP     1      b    0.2
    2      AP     2      a    0.3
    3      AP     2      b    0.4
    """
    if not isinstance(wide, pd.DataFrame):
        raise DataFormatError(
            f"expected a wide matrix as a pandas DataFrame (rows = topics, columns = systems), "
            f"got {type(wide).__name__}; wrap it with pd.DataFrame(...) first"
        )
    w = wide.copy()
    if topic_column is not None:
        require_columns(w, [topic_column], "wide matrix")
        w = w.set_index(topic_column)
    elif isinstance(w.index, pd.RangeIndex):
        w.index = pd.RangeIndex(1, len(w) + 1)
    if w.index.has_duplicates:
        dups = w.index[w.index.duplicated()].unique()[:3].tolist()
        raise DataFormatError(f"the wide matrix repeats topic id(s) {dups}")
    if w.columns.has_duplicates:
        dups = w.columns[w.columns.duplicated()].unique()[:3].tolist()
        raise DataFormatError(f"the wide matrix repeats system name(s) {dups}")
    for what, axis in (("topic ids", w.index), ("system names", w.columns)):
        if isinstance(axis, pd.MultiIndex):
            raise DataFormatError(
                f"the wide matrix's {what} have several levels (a MultiIndex); flatten them to "
                "one label each first"
            )
        if axis.hasnans:
            raise DataFormatError(
                f"the wide matrix has {int(axis.isna().sum())} missing {what} (NaN or None); "
                "every row needs a topic id and every column a system name"
            )
    topics = [str(t) for t in w.index]
    systems = [str(s) for s in w.columns]
    for what, labels, given in (("topic id", topics, w.index), ("system name", systems, w.columns)):
        if len(set(labels)) < len(labels):
            _text_collision(list(given), f"the wide matrix has the {what}s")
    values = w.to_numpy()
    n_t, n_s = len(topics), len(systems)
    # categoricals in the matrix's order, from integer codes (frame() keeps a categorical's
    # order): no string per cell, and no numpy string array, which drops a label's trailing NULs
    long = pd.DataFrame({
        "topic": pd.Categorical.from_codes(np.repeat(np.arange(n_t), n_s),
                                           categories=pd.Index(topics)),
        "system": pd.Categorical.from_codes(np.tile(np.arange(n_s), n_t),
                                            categories=pd.Index(systems)),
        "score": values.reshape(-1),
    })
    if measure is not None:
        long["measure"] = measure
    if collection is not None:
        long["collection"] = collection
    return frame(long, nan=nan, warn=warn)


@dataclass(frozen=True)
class BalanceReport:
    """How complete a crossed design is.

    Attributes
    ----------
    factors : tuple of str
        The crossed factors examined.
    balanced : bool
        True when every combination of levels has the same number of rows (>= 1).
    levels : dict
        Number of levels per factor.
    replicates : int or None
        Rows per cell when balanced, else None.
    n_cells, n_observed_cells : int
        Possible and observed combinations.
    missing : DataFrame
        The combinations with no row (one column per factor).
    counts : Series
        Rows per observed cell when unbalanced (empty when balanced).
    """

    factors: tuple[str, ...]
    balanced: bool
    levels: dict[str, int]
    replicates: int | None
    n_cells: int
    n_observed_cells: int
    missing: pd.DataFrame = field(repr=False)
    counts: pd.Series = field(repr=False)

    def __str__(self) -> str:
        lv = " x ".join(f"{n} {f}s" for f, n in self.levels.items())
        if self.balanced:
            return f"balanced: {lv}, {self.replicates} row(s) per cell"
        return (
            f"unbalanced: {lv}; {self.n_observed_cells} of {self.n_cells} cells observed, "
            f"{len(self.missing)} missing; rows per observed cell range "
            f"{int(self.counts.min()) if len(self.counts) else 0}-"
            f"{int(self.counts.max()) if len(self.counts) else 0}"
        )


def balance(data: pd.DataFrame, factors: Sequence[str] | None = None) -> BalanceReport:
    """Report whether ``data`` is a balanced crossed design over ``factors``.

    ``factors`` defaults to the factor columns present (excluding ``sample``, which is the
    replicate index, and constant ``measure``/``collection`` columns).

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 1, 2], "system": ["a", "b", "a"],
    ...                             "score": [0.1, 0.2, 0.3]}))
    >>> r = irm.balance(f)
    >>> r.balanced, len(r.missing)
    (False, 1)
    >>> print(r)
    unbalanced: 2 topics x 2 systems; 3 of 4 cells observed, 1 missing; rows per observed cell range 1-1
    """
    if factors is None:
        factors = [
            c
            for c in factor_columns(data)
            if c != "sample" and not (c in ("measure", "collection") and data[c].nunique() <= 1)
        ]
    factors = [factors] if isinstance(factors, str) else list(factors)
    require_columns(data, factors)
    repeated = sorted({f for f in factors if factors.count(f) > 1})
    if repeated:
        raise UsageError(f"factors names {', '.join(map(repr, repeated))} more than once")
    check_rows(data)
    for f in factors:
        if data[f].isna().any():
            raise DataFormatError(
                f"column {f!r} has {int(data[f].isna().sum())} missing value(s); every row needs "
                f"a {f} label (irm.frame checks this)"
            )
    codes = []
    levels = {}
    for f in factors:
        cat = data[f] if isinstance(data[f].dtype, pd.CategoricalDtype) else data[f].astype("category")
        cat = cat.cat.remove_unused_categories()
        codes.append(cat.cat.codes.to_numpy().astype(np.int64))
        levels[f] = len(cat.cat.categories)
    shape = tuple(levels.values())
    n_cells = int(np.prod(shape)) if shape else 1
    flat = np.ravel_multi_index(codes, shape) if factors else np.zeros(len(data), dtype=np.int64)
    counts = np.bincount(flat, minlength=n_cells)
    observed = counts > 0
    balanced = bool(observed.all() and counts.min() == counts.max())
    missing_idx = np.flatnonzero(~observed)
    if len(missing_idx) and factors:
        un = np.unravel_index(missing_idx, shape)
        cats = [
            (data[f].astype("category") if not isinstance(data[f].dtype, pd.CategoricalDtype) else data[f])
            .cat.remove_unused_categories()
            .cat.categories
            for f in factors
        ]
        missing = pd.DataFrame({f: np.asarray(c)[u] for f, c, u in zip(factors, cats, un)})
    else:
        missing = pd.DataFrame(columns=factors)
    count_series = pd.Series(counts[observed], dtype="int64") if not balanced else pd.Series(dtype="int64")
    return BalanceReport(
        factors=tuple(factors),
        balanced=balanced,
        levels=levels,
        replicates=int(counts[0]) if balanced else None,
        n_cells=n_cells,
        n_observed_cells=int(observed.sum()),
        missing=missing,
        counts=count_series,
    )


def filter_systems(
    data: pd.DataFrame,
    *,
    min_mean: float | None = None,
    top_fraction: float | None = None,
    top_k: int | None = None,
    systems: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Keep a subset of systems, the way researchers prune TREC runs.

    Parameters
    ----------
    data : DataFrame
        A long frame (:func:`frame`). A plain DataFrame (``system`` not categorical) goes
        through ``irm.frame(data)`` first, with its rules: columns named ``topic``, ``system``,
        ``score`` (and ``shard``, ``sample``, ``measure``, ``collection`` when present), other
        columns dropped, one row per key.
    min_mean : float, optional
        Drop systems whose mean score is below this value.
    top_fraction : float in (0, 1], optional
        Keep the best ``floor(top_fraction * R)`` systems by mean score, where ``R`` is the
        number of systems in ``data``, and at least one: the usual pruning of the literature
        (the best 75% of the 110 Robust 2004 runs are 82, as Hosseini et al. keep).
    top_k : int, optional
        Keep the best ``top_k`` systems by mean score.
    systems : sequence of str, optional
        Keep exactly these systems (unknown names raise).

    Returns
    -------
    DataFrame
        The rows of the kept systems, a long frame whose ``system`` categories are the kept
        systems. Systems with equal means are ranked in the frame's (natural) level order.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 1, 1], "system": ["a", "b", "c"],
    ...                             "score": [0.1, 0.5, 0.3]}))
    >>> list(irm.filter_systems(f, top_k=2)["system"].cat.categories)
    ['b', 'c']
    >>> plain = pd.DataFrame({"topic": [1, 1, 1, 1], "system": ["a", "b", "c", "d"],
    ...                       "score": [0.1, 0.5, 0.3, 0.2]})
    >>> list(irm.filter_systems(plain, top_fraction=0.6)["system"])  # floor(0.6 * 4) = 2
    ['b', 'c']
    """
    require_columns(data, ["system", "score"])
    if not isinstance(data["system"].dtype, pd.CategoricalDtype):
        data = frame(data)
    means = data.groupby("system", observed=True)["score"].mean()
    keep = pd.Index(means.index)
    if systems is not None:
        wanted = [str(s) for s in systems]
        unknown = [s for s in wanted if s not in set(map(str, means.index))]
        if unknown:
            raise DataFormatError(f"unknown system(s) {unknown[:5]}; the data have {len(means)} systems")
        keep = keep[[str(s) in set(wanted) for s in keep]]
    if min_mean is not None:
        keep = keep[means.loc[keep].to_numpy() >= min_mean]
    ranked = means.loc[keep].sort_values(ascending=False, kind="mergesort")
    if top_fraction is not None:
        if not 0 < top_fraction <= 1:
            raise DataFormatError(f"top_fraction must be in (0, 1], got {top_fraction}")
        # floor, not ceil (82 of 110 at 0.75); 1e-9 so that 0.29 * 100 (28.999...) keeps 29
        ranked = ranked.iloc[: max(1, int(np.floor(top_fraction * len(means) + 1e-9)))]
    if top_k is not None:
        if top_k < 1:
            raise DataFormatError(f"top_k must be at least 1, got {top_k}")
        ranked = ranked.iloc[:top_k]
    chosen = set(ranked.index)
    if not chosen:
        raise DataFormatError("no system is left after filtering")
    out = data.loc[data["system"].isin(chosen)].reset_index(drop=True)
    out["system"] = out["system"].cat.remove_unused_categories()
    return out
