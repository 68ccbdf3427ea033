"""Evaluation of runs too large for memory, one partition at a time (private; see
:func:`irmodels.evaluate`).

Every measure of a (topic, system) pair depends only on that system's ranking and the qrels, and
whether a cell is undefined depends only on the qrels (and the shards). So runs partitioned by
system (a directory of run files, a list of files or frames, a Dask DataFrame whose partitions
each hold whole systems) are evaluated partition by partition on any backend of
:func:`irmodels.parallel.map`, and the results concatenated give exactly the frame of an
in-memory evaluation: memory is bounded by one partition per worker (plus the qrels).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from irmodels import parallel
from irmodels.data._encode import as_qrels
from irmodels.data._evaluation import evaluate_in_memory, undefined_cells
from irmodels.data._kernels import UndefinedPolicy, parse_measures
from irmodels.data.frame import natural_key
from irmodels.data.io import read_run
from irmodels.errors import DataFormatError, UndefinedValueWarning

__all__ = ["evaluate_partitioned", "is_partitioned", "partitions", "split_by_system"]

_ALL_DROPPED = "every cell was dropped"


def is_partitioned(runs: object) -> bool:
    """True for a directory or list of run files, a list of frames, or a Dask DataFrame."""
    if isinstance(runs, (str, Path)):
        return Path(runs).is_dir()
    if isinstance(runs, pd.DataFrame):  # not hasattr: a frame looks its columns up first
        return False
    if hasattr(runs, "to_delayed") and hasattr(runs, "npartitions"):
        return True
    return isinstance(runs, (list, tuple)) and len(runs) > 0 and all(
        isinstance(p, (str, Path, pd.DataFrame)) for p in runs)


def partitions(runs: object) -> list[Any]:
    """The partitions of ``runs``: run files, frames or Dask delayed partitions."""
    if isinstance(runs, (str, Path)):
        files = [p for p in Path(runs).iterdir() if p.is_file() and not p.name.startswith(".")]
        if not files:
            raise DataFormatError(f"the directory {str(runs)!r} holds no run file")
        return sorted(files, key=lambda p: natural_key(p.name))
    if hasattr(runs, "to_delayed"):
        return list(runs.to_delayed())  # type: ignore[attr-defined]
    return list(runs)  # type: ignore[call-overload]


def split_by_system(runs: pd.DataFrame, n_workers: int | None) -> list[pd.DataFrame]:
    """An in-memory runs frame as about ``4 * n_workers`` frames of whole systems."""
    codes, uniques = pd.factorize(runs["system"])
    n_parts = max(1, min(len(uniques), 4 * (n_workers or 2)))
    part_of_row = codes % n_parts
    order = np.argsort(part_of_row, kind="stable")
    bounds = np.searchsorted(part_of_row[order], np.arange(n_parts + 1))
    return [runs.iloc[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _evaluate_part(qrels: pd.DataFrame, measures: Any, options: dict[str, Any],
                   part: Any) -> pd.DataFrame | None:
    """One partition. The qrels, measures and options are bound with ``functools.partial``, so
    that :func:`irmodels.parallel.map` sends them once per worker, not once per partition.
    The undefined cells are not warned about here: :func:`evaluate_partitioned` warns once for
    the union of the partitions' cells."""
    if isinstance(part, (str, Path)):
        frame = read_run(part)
    elif isinstance(part, pd.DataFrame):
        frame = part
    else:  # a Dask delayed partition: computed here, on the worker
        frame = part.compute(scheduler="sync")
    if len(frame) == 0:
        return None
    try:
        return evaluate_in_memory(frame, qrels, measures, warn_undefined=False, **options)
    except DataFormatError as exc:
        if _ALL_DROPPED in str(exc) or "no topic of the runs is in the qrels" in str(exc):
            return None  # nothing of this partition is scored; others may be
        raise


def _categorical(values: np.ndarray, levels: Sequence[str]) -> pd.Categorical:
    return pd.Categorical(values, categories=list(levels))


def evaluate_partitioned(
    runs: object,
    qrels: pd.DataFrame,
    measures: Any,
    *,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Evaluate partitioned runs partition by partition; the frame of an in-memory evaluation.

    ``options`` are :func:`irmodels.evaluate`'s (``shards``, ``undefined``, ``depth``,
    ``relevance_level``, ``complete``). A system split across two partitions is refused.
    """
    qrels = as_qrels(qrels)
    ms = parse_measures(measures)
    policy = UndefinedPolicy.parse(options.get("undefined", 0.0))
    parts = partitions(runs)
    fn = functools.partial(_evaluate_part, qrels, ms, options)
    results = parallel.map(fn, parts, backend=backend, n_workers=n_workers,
                           progress=progress, desc="evaluate")
    frames = [f for f in results if f is not None]
    if not frames:
        raise DataFormatError(
            "no partition has a scored cell: no topic of the runs is in the qrels, or every "
            "cell was dropped by the undefined-value policy (use undefined=0.0 or 'missing')"
        )
    cols = [c for c in ("measure", "topic", "system", "shard") if c in frames[0].columns]
    values = {c: np.concatenate([f[c].astype(str).to_numpy(dtype=object) for f in frames])
              for c in cols}
    names = [m.name for m in ms]
    levels = {c: sorted(set(values[c]), key=natural_key) for c in cols if c != "measure"}
    levels["measure"] = [n for n in names if n in set(values["measure"])]
    out = pd.DataFrame({c: _categorical(values[c], levels[c]) for c in cols})
    out["score"] = np.concatenate([f["score"].to_numpy(dtype=np.float64) for f in frames])
    keys = [out[c].cat.codes.to_numpy() for c in ("measure", "topic", "system", "shard")
            if c in cols]
    order = np.lexsort(keys[::-1])
    out = out.iloc[order].reset_index(drop=True)
    if out.duplicated(cols).any():
        row = out.loc[out.duplicated(cols)].iloc[0]
        raise DataFormatError(
            f"system {row['system']!r} is in more than one partition (topic {row['topic']!r}); "
            "partition the runs by system (one or more whole runs per partition)"
        )
    out.attrs["undefined"] = _union_undefined(frames, names, "shard" in cols)
    n_cells = len(out.attrs["undefined"]["topic"])
    if n_cells:
        where = "(measure, topic, shard)" if "shard" in cols else "(measure, topic)"
        warnings.warn(
            f"{n_cells} {where} cell(s) have no relevant document; {policy.describe()}. The "
            "cells are listed by undefined_cells(frame) (frame.attrs['undefined']).",
            UndefinedValueWarning,
            stacklevel=3,
        )
    return out


def _union_undefined(frames: list[pd.DataFrame], names: list[str], sharded: bool) -> dict:
    cols = ["measure", "topic"] + (["shard"] if sharded else [])
    cells = pd.concat([undefined_cells(f) for f in frames], ignore_index=True)
    out: dict[str, list[str]] = {c: [] for c in cols}
    if len(cells) == 0:
        return out
    cells = cells[cols].astype(str).drop_duplicates()
    rank = {n: i for i, n in enumerate(names)}
    cells = cells.sort_values(
        cols, key=lambda c: c.map(rank) if c.name == "measure" else c.map(natural_key))
    return {c: cells[c].tolist() for c in cols}
