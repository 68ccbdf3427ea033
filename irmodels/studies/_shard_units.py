"""The unit of work of :func:`irmodels.studies.shard_study.shards`: one split of the
collection into shards, evaluated and fitted by every model (:func:`split_seed`, the context a
worker receives, the per-unit record); re-exported by :mod:`irmodels.studies.shard_study`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from irmodels._validate import check_seed
from irmodels.data.frame import require_columns
from irmodels.data.measures import UndefinedPolicy, evaluate, undefined_cells
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DesignError,
    IRModelsWarning,
    UndefinedValueWarning,
)
from irmodels.formula import PRESETS
from irmodels.inference.rank import kendall_tau
from irmodels.models.anova import AnovaResult, anova
from irmodels.replicates.sharding import as_docids, docids_from, shard_labels
from irmodels.studies._sharded import evaluate_assignment

DEFAULT_MODELS = ("MD1", "MD2", "MD3", "MD4", "MD5", "MD6")


# --------------------------------------------------------------------------------------------
# input


@dataclass(frozen=True)
class CollectionInputs:
    runs: pd.DataFrame
    qrels: pd.DataFrame
    docids: pd.Index


def collection_inputs(collection: Any) -> CollectionInputs:
    if isinstance(collection, tuple):
        if len(collection) not in (2, 3):
            raise DataFormatError(
                f"a tuple collection must be (runs, qrels) or (runs, qrels, docids); got "
                f"{len(collection)} items."
            )
        runs, qrels = collection[0], collection[1]
        docids = collection[2] if len(collection) == 3 else None
    elif all(hasattr(collection, a) for a in ("runs", "qrels")):
        runs, qrels = collection.runs, collection.qrels
        docids = getattr(collection, "docids", None)
    else:
        raise DataFormatError(
            f"the collection must have .runs, .qrels and .docids (e.g. "
            f"irm.collection.generate(preset='small')) or be a tuple (runs, qrels, docids); got "
            f"{type(collection).__name__}."
        )
    for name, df, cols in (("runs", runs, ("system", "topic", "docid", "score")),
                           ("qrels", qrels, ("topic", "docid", "rel"))):
        if not isinstance(df, pd.DataFrame):
            raise DataFormatError(f"{name} must be a DataFrame; got {type(df).__name__}.")
        require_columns(df, cols, name, hint="Read them with irm.read_runs / irm.read_qrels.")
    if docids is None:
        docids = docids_from(runs, qrels)
    return CollectionInputs(runs=runs, qrels=qrels, docids=as_docids(docids))


def check_int_list(values: Any, name: str, low: int) -> tuple[int, ...]:
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    try:
        out = tuple(values)
    except TypeError:
        raise DesignError(f"{name} must be a list of integers; got {values!r}.") from None
    if not out or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low
                      for v in out):
        raise DesignError(
            f"{name} must be a non-empty list of integers >= {low}; got {list(out)}. "
            + ("Shard models need at least 2 shards (MD4-MD6 have a shard factor)."
               if name == "n_shards" else "")
        )
    if len(set(out)) != len(out):
        raise DesignError(f"{name} repeats values: {list(out)}; list each once.")
    return tuple(int(v) for v in out)


def resolve_models(models: Sequence[str]) -> tuple[str, ...]:
    if isinstance(models, str):
        models = (models,)
    out = []
    for m in models:
        name = str(m).strip().upper()
        if name not in PRESETS:
            raise DesignError(
                f"unknown model {m!r} in the shard study; use presets among "
                f"{', '.join(DEFAULT_MODELS)}."
            )
        out.append(name)
    if not out:
        raise DesignError("models is empty; pass e.g. models=('MD1', 'MD6').")
    if len(set(out)) != len(out):
        raise DesignError(f"models repeats names: {out}.")
    return tuple(sorted(out, key=lambda n: int(n[2:])))


# --------------------------------------------------------------------------------------------
# the unit of work


def split_seed(seed: int, n_shards: int) -> np.random.SeedSequence:
    """The seed whose ``k``-th spawned child shards the collection for split ``k`` of S.

    ``SeedSequence(seed, spawn_key=(S,))``: it depends only on the study's seed and S.

    >>> from irmodels.parallel import spawn_seeds
    >>> child = spawn_seeds(split_seed(0, 5), 10)[3]
    >>> child.spawn_key
    (5, 3)
    """
    checked = check_seed(seed)
    if not (checked is None or isinstance(checked, int)):
        raise ArgumentError(f"the shard study's seed must be None or a whole number >= 0; got "
                            f"{seed!r}.")
    return np.random.SeedSequence(checked, spawn_key=(int(n_shards),))


@dataclass(frozen=True)
class ShardContext:
    """What every unit needs; pickled once per worker (not once per unit)."""

    prepared: Any  # PreparedCollection or None (then the slow path below)
    inputs: CollectionInputs | None
    measure: str
    undefined: float | str
    models: tuple[str, ...]
    alpha: float
    reference: pd.Series  # MD1 system means on the whole collection


@dataclass(frozen=True)
class ShardUnit:
    n_shards: int
    split: int
    seed: np.random.SeedSequence


def _kendall_tau(a: pd.Series, b: pd.Series) -> float:
    with warnings.catch_warnings():
        # silenced, not steering: a constant ranking's tau is NaN, which the study reports
        warnings.simplefilter("ignore", IRModelsWarning)
        return float(kendall_tau(a, b))


def pair_levels(reference: pd.Series) -> pd.Index:
    """The systems of the whole collection, sorted by name: the order of the packed pairs."""
    return pd.Index(sorted(str(x) for x in reference.index))


def column_values(column: pd.Series) -> np.ndarray:
    """A column of :attr:`ShardStudy.runs` as floats, missing (``<NA>`` of Int64) as NaN."""
    return column.to_numpy(dtype=np.float64, na_value=np.nan)


def nanmean_column(column: pd.Series) -> float:
    """Mean of the non-missing values of a :attr:`ShardStudy.runs` column (NaN if none)."""
    v = column_values(column)
    v = v[~np.isnan(v)]
    return float(v.mean()) if len(v) else math.nan


def _pack_pairs(a: np.ndarray, b: np.ndarray, levels: pd.Index) -> np.ndarray:
    """Significant pairs as bits over the pairs (i < j) of ``levels`` (``np.triu_indices``).

    619 bytes for 100 systems instead of a set of 4,950 name tuples: a unit's result crosses
    the process boundary in microseconds (the sets took 13 ms a unit to pickle and unpickle).
    """
    ia, ib = levels.get_indexer(a), levels.get_indexer(b)
    if (ia < 0).any() or (ib < 0).any():  # pragma: no cover - shard fits keep every system
        raise RuntimeError("a shard fit compared a system absent from the whole collection")
    i, j = np.minimum(ia, ib), np.maximum(ia, ib)
    r = len(levels)
    bits = np.zeros(r * (r - 1) // 2, dtype=bool)
    bits[i * (2 * r - i - 1) // 2 + (j - i - 1)] = True
    return np.packbits(bits)


def fit_record(model: str, data: pd.DataFrame, alpha: float, reference: pd.Series
                ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, float]:
    # silenced, not steering: each shard fit's own warnings (unbalanced shards under
    # undefined='missing', a clipped omega^2) would repeat once per unit; the study's records
    # carry what they say (irm.anova has no warn= keyword)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        fit = anova(model, data)
        assert isinstance(fit, AnovaResult)  # no family=: an ANOVA, never a GLM
        try:
            tk = fit.tukey("system", alpha=alpha)
        except DesignError:
            # undefined="missing" leaves whole (topic, shard) cells empty: under a model with
            # topic:shard the least-squares system means are not estimable, so there is no
            # Tukey test or ranking for this fit (NaN), only its ANOVA row
            return _anova_only_record(model, fit, reference)
        iv = tk.intervals("tukey")
    row = fit.table.loc["system"]
    means = fit.marginal_means("system")
    pairs = tk.pairs
    reject = pairs["reject"].to_numpy(dtype=bool)
    sig_set = _pack_pairs(pairs["a"].astype(str).to_numpy(dtype=object)[reject],
                          pairs["b"].astype(str).to_numpy(dtype=object)[reject],
                          pair_levels(reference))
    half = float(iv["halfwidth"].mean())
    rec = {
        "model": model,
        "n_topics": int(fit.levels.get("topic", 0)),
        "n_systems": len(means),
        "F_system": float(row["F"]),
        "p_system": float(row["p"]),
        "omega2_system": float(row["omega2_partial"]),
        "ms_error": float(fit.ms_error),
        "df_error": int(fit.df_resid),
        "n_significant": int(tk.n_significant),
        "n_not_significant": int(tk.n_not_significant),
        "top_group": len(tk.top_group),
        "ci_width": 2.0 * half,
        "tau": _kendall_tau(means, reference),
    }
    return rec, sig_set, means.reindex(reference.index).to_numpy(dtype=float), half


def _anova_only_record(model: str, fit: Any, reference: pd.Series
                       ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, float]:
    row = fit.table.loc["system"]
    rec = {
        "model": model, "n_topics": int(fit.levels.get("topic", 0)),
        "n_systems": int(fit.levels.get("system", 0)), "F_system": float(row["F"]),
        "p_system": float(row["p"]), "omega2_system": float(row["omega2_partial"]),
        "ms_error": float(fit.ms_error), "df_error": int(fit.df_resid),
        "n_significant": np.nan, "n_not_significant": np.nan, "top_group": np.nan,
        "ci_width": np.nan, "tau": np.nan,
    }
    r = len(reference)
    return rec, np.packbits(np.zeros(r * (r - 1) // 2, dtype=bool)), np.full(r, np.nan), np.nan


def _evaluate_unit(ctx: ShardContext, labels: np.ndarray, n_shards: int) -> tuple[pd.DataFrame, int]:
    if ctx.prepared is not None:
        data, undef = evaluate_assignment(ctx.prepared, labels, n_shards, ctx.undefined)
        return data, len(undef)
    assert ctx.inputs is not None
    assignment = pd.Series(labels, index=ctx.inputs.docids)
    # silenced, not steering: the study counts the undefined cells itself (n_undefined) and
    # warns once for them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        data = evaluate(ctx.inputs.runs, ctx.inputs.qrels, [ctx.measure], shards=assignment,
                        undefined=UndefinedPolicy.parse(ctx.undefined))
    return data, len(undefined_cells(data))


def run_unit(ctx: ShardContext, unit: ShardUnit) -> dict[str, Any]:
    """Shard the collection, score it and fit every shard model: one (S, split)."""
    if ctx.prepared is not None:
        n_docs = ctx.prepared.n_docs
    else:
        assert ctx.inputs is not None
        n_docs = len(ctx.inputs.docids)
    labels = shard_labels(n_docs, unit.n_shards, unit.seed)
    data, n_undef = _evaluate_unit(ctx, labels, unit.n_shards)
    # pandas deep-copies a frame's attrs on every operation: with many undefined cells their
    # lists cost more than the fits (60 ms a unit at S = 50); the unit needs only their count
    data.attrs = {}
    records, sig, means, half = [], {}, {}, {}
    for model in ctx.models:
        if model == "MD1":
            continue
        rec, s, m, h = fit_record(model, data, ctx.alpha, ctx.reference)
        rec.update(n_shards=unit.n_shards, split=unit.split, n_undefined=n_undef)
        records.append(rec)
        sig[model], means[model], half[model] = s, m, h
    return {"records": records, "sig": sig, "means": means, "half": half,
            "n_cells": int(data["topic"].nunique()) * unit.n_shards}
