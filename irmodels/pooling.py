"""Pooling bias: adjust a run that did not contribute to a collection's pool.

:func:`adjust` applies the topic-based adjustment of Webber & Park (SIGIR 2009; Webber's thesis,
Algorithm 6.2) to a researcher's own run: the run is scored against the collection's qrels on
every topic (its *unpooled* scores ``u``), and on a few *common topics* its unjudged documents
were judged too (its *pooled* scores ``t``). The mean gap ``a = mean(t - u)`` over the common
topics is added to the unpooled scores of the other topics. :func:`pooling_bias` (re-exported
from :mod:`irmodels.studies.pooling`) simulates how well that works on a collection.

References: W. Webber and L. A. F. Park, "Score adjustment for correction of pooling bias",
SIGIR 2009; W. Webber, *Measurement in Information Retrieval Evaluation*, PhD thesis,
University of Melbourne, 2010, ch. 6 (Algorithm 6.2, Eq. 6.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels.errors import DataFormatError, DesignError
from irmodels.studies.pooling import PoolingBiasStudy, pooling_bias, rank_weights

__all__ = ["PoolingAdjustment", "PoolingBiasStudy", "adjust", "pooling_bias", "rank_weights"]


def _series(x: Any, what: str) -> pd.Series:
    if isinstance(x, pd.DataFrame):
        if {"topic", "score"} <= set(x.columns):
            if x["topic"].duplicated().any():
                raise DataFormatError(f"{what} has several scores for topic "
                                      f"{x['topic'][x['topic'].duplicated()].iloc[0]}; give one "
                                      "score per topic (one run).")
            x = pd.Series(x["score"].to_numpy(), index=x["topic"].astype(str).to_numpy())
        else:
            raise DataFormatError(f"{what} must be a Series indexed by topic or a frame with "
                                  f"topic and score columns; got columns "
                                  f"{', '.join(map(str, x.columns))}.")
    elif isinstance(x, dict):
        x = pd.Series(x)
    if not isinstance(x, pd.Series):
        raise DataFormatError(f"{what} must be a Series indexed by topic (or a dict, or a frame "
                              f"with topic and score columns); got {type(x).__name__}.")
    s = pd.Series(x.to_numpy(dtype=np.float64), index=x.index.astype(str))
    if s.index.duplicated().any():
        raise DataFormatError(f"{what} has several scores for topic "
                              f"{s.index[s.index.duplicated()][0]}.")
    if s.isna().any():
        raise DataFormatError(f"{what} has a missing score for topic {s.index[s.isna()][0]}.")
    return s


@dataclass(frozen=True, repr=False, eq=False)
class PoolingAdjustment(ResultDisplay):
    """Result of :func:`adjust`.

    Attributes
    ----------
    adjustment : float
        ``a = mean(t - u)`` over the common topics.
    se : float
        Standard error of ``a`` (Eq. 6.5 with ``s_a^2`` estimated on the common topics,
        divisor ``n - 1``): ``sqrt(((N - n) / N) * s_a^2 / n)``; NaN with one common topic.
    n_common, n_topics : int
        Common topics and all topics (N).
    mean_unadjusted, mean_adjusted : float
        Mean over all topics of ``u``, and of the adjusted scores (``t`` on the common topics,
        ``u + a`` on the others).
    scores : DataFrame
        One row per topic: ``topic``, ``unpooled``, ``pooled`` (NaN off the common topics),
        ``adjusted``, ``common``.
    """

    adjustment: float
    se: float
    n_common: int
    n_topics: int
    mean_unadjusted: float
    mean_adjusted: float
    scores: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """:attr:`scores`."""
        return self.scores.copy()

    def _display_title(self) -> str:
        return (f"Topic-based pooling adjustment: a = {self.adjustment:.4f} (SE {self.se:.4f}) "
                f"from {self.n_common} common topics of {self.n_topics}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        stats = pd.DataFrame({"value": [self.mean_unadjusted, self.mean_adjusted,
                                        self.adjustment, self.se]},
                             index=["mean unadjusted", "mean adjusted", "adjustment", "SE"])
        return [("Adjusted mean score", stats)]

    def __repr__(self) -> str:
        return (f"PoolingAdjustment(adjustment={self.adjustment:.4f}, se={self.se:.4f}, "
                f"n_common={self.n_common}, mean_adjusted={self.mean_adjusted:.4f})")


def adjust(unpooled: Any, pooled: Any, *, min_common: int = 2) -> PoolingAdjustment:
    """Topic-based adjustment of an unpooled run's scores (Algorithm 6.2).

    Parameters
    ----------
    unpooled : Series, dict or DataFrame
        The run's scores on every topic against the collection's qrels (documents only it
        retrieved unjudged), indexed by topic (or a frame with ``topic, score``).
    pooled : Series, dict or DataFrame
        Its scores on the common topics after its own documents were judged as well.
    min_common : int
        Fewest common topics accepted (default 2, the least that gives a standard error).

    Returns
    -------
    PoolingAdjustment
        ``.adjustment``, ``.se``, ``.mean_adjusted``, ``.scores``.

    Raises
    ------
    DesignError
        Fewer common topics than ``min_common``; a pooled topic without an unpooled score.

    Examples
    --------
    >>> import irmodels as irm
    >>> u = {"1": 0.20, "2": 0.30, "3": 0.25, "4": 0.40}
    >>> t = {"1": 0.26, "2": 0.34}
    >>> res = irm.pooling.adjust(u, t)
    >>> res
    PoolingAdjustment(adjustment=0.0500, se=0.0071, n_common=2, mean_adjusted=0.3375)
    >>> res.scores["adjusted"].round(2).tolist()
    [0.26, 0.34, 0.3, 0.45]
    """
    u = _series(unpooled, "unpooled")
    t = _series(pooled, "pooled")
    extra = [k for k in t.index if k not in u.index]
    if extra:
        raise DesignError(f"topic {extra[0]} has a pooled score but no unpooled one; give the "
                          "run's unpooled scores on every topic (common ones included).")
    if isinstance(min_common, bool) or not isinstance(min_common, (int, np.integer)) \
            or min_common < 1:
        raise DesignError(f"min_common must be a positive whole number; got {min_common!r}.")
    n, N = len(t), len(u)
    if n < min_common:
        raise DesignError(f"the adjustment needs at least {min_common} common topics (topics "
                          f"where the run was judged); got {n}. Judge the run's documents on "
                          "more topics, or lower min_common.")
    if n >= N:
        raise DesignError(f"every one of the {N} topics is a common topic: there is nothing to "
                          "adjust (use the pooled scores).")
    gap = t - u.loc[t.index]
    a = float(gap.mean())
    s2 = float(((gap - a) ** 2).sum() / (n - 1)) if n > 1 else math.nan
    se = math.sqrt((N - n) / N * s2 / n) if n > 1 else math.nan
    common = u.index.isin(t.index)
    adjusted = np.where(common, t.reindex(u.index).to_numpy(), u.to_numpy() + a)
    scores = pd.DataFrame({"topic": u.index.to_numpy(), "unpooled": u.to_numpy(),
                           "pooled": t.reindex(u.index).to_numpy(), "adjusted": adjusted,
                           "common": common})
    return PoolingAdjustment(adjustment=a, se=se, n_common=n, n_topics=N,
                             mean_unadjusted=float(u.mean()), mean_adjusted=float(adjusted.mean()),
                             scores=scores)
