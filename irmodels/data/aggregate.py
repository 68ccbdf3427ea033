"""A system's score over topics: the arithmetic, geometric or harmonic mean, or the median.

``irm.aggregate(frame, how="gmean")`` reduces per-topic scores (a long frame, or a wide matrix
topics x systems) to one score per system, and per measure, shard or sample when the frame
has them. The geometric mean is trec_eval's ``gm_map`` / ``gm_bpref``: each score is floored at
``epsilon`` (trec_eval's ``MIN_GEO_MEAN``, 1e-5) before its logarithm.

References: Robertson, "On GMAP", CIKM 2006 (the geometric mean of AP); Voorhees, TREC 2004
Robust track overview (GMAP as a measure of the poorly performing topics).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd

from irmodels.data._kernels import GMAP_EPSILON, LOG_KINDS, parse_measure
from irmodels.errors import DataFormatError, UsageError

__all__ = ["AGGREGATIONS", "aggregate"]

#: The values ``how=`` takes.
AGGREGATIONS = ("mean", "gmean", "hmean", "median")

_GROUPS = ("collection", "measure", "system", "shard", "sample")


def _long(data: object) -> pd.DataFrame:
    """The frame as rows (group columns..., topic, score): a long frame as it is, a wide
    matrix (index topics, one numeric column per system) stacked."""
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(
            f"aggregate takes a long frame (topic, system, score) or a wide matrix (topics x "
            f"systems) as a DataFrame; got {type(data).__name__}. Read a file with "
            "irm.read_frame or irm.read_matrix first."
        )
    if {"topic", "system", "score"} <= set(map(str, data.columns)):
        return data
    if "score" in data.columns or "system" in data.columns:
        missing = [c for c in ("topic", "system", "score") if c not in data.columns]
        raise DataFormatError(
            f"the frame has no column {', '.join(map(repr, missing))}; a long frame needs "
            "topic, system and score (rename with irm.frame(df, topic=..., system=..., "
            "score=...)), a wide matrix one numeric column per system and the topics as index"
        )
    bad = [c for c in data.columns if not pd.api.types.is_numeric_dtype(data[c])
           or pd.api.types.is_bool_dtype(data[c])]
    if bad or data.shape[1] == 0:
        raise DataFormatError(
            f"a wide matrix needs one numeric column per system; column(s) "
            f"{', '.join(map(repr, map(str, bad[:3])))} are not numeric"
            if bad else "the matrix has no column (no system)"
        )
    values = data.to_numpy(dtype=np.float64)
    systems = [str(c) for c in data.columns]
    return pd.DataFrame({
        "system": pd.Categorical(np.tile(systems, data.shape[0]), categories=systems),
        "topic": np.repeat(data.index.astype(str).to_numpy(), data.shape[1]),
        "score": values.reshape(-1),
    })


def aggregate(
    data: pd.DataFrame,
    how: Literal["mean", "gmean", "hmean", "median"] = "mean",
    *,
    epsilon: float = GMAP_EPSILON,
) -> pd.DataFrame:
    """One score per system (and measure, shard, sample): a mean over the topics.

    Parameters
    ----------
    data : DataFrame
        A long frame (``topic, system, score`` and any of ``collection, measure, shard,
        sample``; e.g. :func:`irmodels.evaluate`'s output), or a wide matrix (index topics,
        one numeric column per system). Missing scores (NaN) are left out: each system is
        averaged over the topics it has (``n_topics`` says how many).
    how : {"mean", "gmean", "hmean", "median"}
        ``mean``: the arithmetic mean (trec_eval's ``all`` line: ``map``, ``bpref``, ...).
        ``gmean``: ``exp(mean(log(max(x, epsilon))))``, the geometric mean (trec_eval's
        ``gm_map`` of AP, ``gm_bpref`` of bpref). ``hmean``: ``1 / mean(1 / max(x,
        epsilon))``, the harmonic mean. ``median``: the median.
    epsilon : float
        The floor of the geometric and harmonic means (default 1e-5, trec_eval's
        ``MIN_GEO_MEAN``), so that one topic scored 0 does not make the mean 0.

    Returns
    -------
    DataFrame
        One row per group, columns in this order:

        - ``collection``, ``measure``, ``system``, ``shard``, ``sample``: those of the frame
          (``system`` always), categoricals in the frame's order;
        - ``n_topics``: the topics averaged;
        - ``score``: the aggregated score.

    Raises
    ------
    UsageError
        ``how`` is not one of the four, ``epsilon`` is not a positive finite number, or
        ``how`` is not ``"mean"`` for ``GMAP`` / ``gm_bpref`` rows.
    DataFormatError
        Not a long frame or a wide matrix; negative scores under ``gmean`` or ``hmean`` (a
        standardized score has no geometric mean).

    Notes
    -----
    ``GMAP`` and ``gm_bpref`` rows of :func:`irmodels.evaluate` already hold the per-topic
    logarithms ``log(max(x, 1e-5))``: their ``mean`` is reported as ``exp`` of the mean of the
    logarithms, the geometric mean trec_eval prints; so ``aggregate(evaluate(runs, qrels,
    ["AP", "GMAP"]))`` gives trec_eval's ``map`` and ``gm_map``, equal to
    ``aggregate(evaluate(runs, qrels, ["AP"]), how="gmean")``.

    The geometric mean weighs improvements on poorly performing topics more than the
    arithmetic mean does (Robertson, CIKM 2006; Voorhees, TREC 2004 Robust track); the
    harmonic mean still more. Both depend on ``epsilon`` when a topic scores below it.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> m = pd.DataFrame({"bm25": [0.5, 0.2, 0.0], "lm": [0.3, 0.3, 0.3]},
    ...                  index=pd.Index(["401", "402", "403"], name="topic"))
    >>> irm.aggregate(m, "gmean").round(4)
      system  n_topics   score
    0   bm25         3  0.0100
    1     lm         3  0.3000
    >>> ap = irm.datasets.load("adhoc8", "AP")
    >>> irm.aggregate(ap, "gmean").nlargest(2, "score").round(4)   # TREC-8 GMAP
       collection measure system  n_topics   score
    94     adhoc8      AP  run95        50  0.4038
    82     adhoc8      AP  run83        50  0.3202
    """
    if how not in AGGREGATIONS:
        raise UsageError(f"how must be one of {', '.join(map(repr, AGGREGATIONS))}; got {how!r}")
    if (isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (int, float, np.number))
            or not math.isfinite(float(epsilon)) or float(epsilon) <= 0):
        raise UsageError(f"epsilon must be a positive finite number (trec_eval: 1e-5); got "
                         f"{epsilon!r}")
    eps = float(epsilon)
    rows = _long(data)
    groups = [c for c in _GROUPS if c in rows.columns]
    score = pd.to_numeric(rows["score"], errors="coerce").to_numpy(dtype=np.float64)
    keep = ~np.isnan(score)
    log_rows = np.zeros(len(rows), dtype=bool)
    if "measure" in rows.columns:
        names = pd.Series(rows["measure"].astype(str).unique())
        logs = [n for n in names if _is_log(n)]
        if logs:
            log_rows = rows["measure"].astype(str).isin(logs).to_numpy()
            if how != "mean" and log_rows[keep].any():
                raise UsageError(
                    f"{', '.join(logs)} rows hold log(max(x, 1e-5)) per topic already: "
                    f"how='mean' gives their geometric mean (trec_eval's value). For "
                    f"how={how!r} aggregate the AP (bpref) rows instead"
                )
    x = score.copy()
    if how in ("gmean", "hmean"):
        neg = keep & ~log_rows & (x < 0)
        if neg.any():
            i = int(np.flatnonzero(neg)[0])
            where = "".join(f"{c} {str(rows[c].iloc[i])!r}, " for c in ("measure", "system")
                            if c in rows.columns)
            raise DataFormatError(
                f"how={how!r} needs scores >= 0; found {int(neg.sum())} negative score(s), "
                f"e.g. {float(x[i])!r} ({where}topic {str(rows['topic'].iloc[i])!r}). A "
                "standardized or differenced score has no geometric or harmonic mean: select "
                "the measures that have one, or use how='mean' or 'median'"
            )
        floored = np.maximum(x, eps)
        x = np.where(log_rows, x, np.log(floored) if how == "gmean" else 1.0 / floored)
    work = pd.DataFrame({c: rows[c] for c in groups})
    work["x"] = x
    work = work[keep]
    if len(work) == 0:
        raise DataFormatError("the frame has no score to aggregate (no row, or every score "
                              "is missing)")
    g = work.groupby(groups, observed=True, sort=True)["x"]
    out = g.median() if how == "median" else g.mean()
    n = g.size()
    result = out.reset_index()
    result.insert(len(groups), "n_topics", n.to_numpy().astype(np.int64))
    value = result.pop("x").to_numpy(dtype=np.float64)
    if how == "gmean":
        value = np.exp(value)
    elif how == "hmean":
        value = 1.0 / value
    if "measure" in result.columns and how == "mean":
        is_log = result["measure"].astype(str).map(_is_log).to_numpy(dtype=bool)
        value = np.where(is_log, np.exp(value), value)
    result["score"] = value
    return result


def _is_log(name: str) -> bool:
    """True for a measure whose per-topic value is a logarithm (GMAP, gm_bpref)."""
    try:
        return parse_measure(name).kind in LOG_KINDS
    except DataFormatError:
        return False
