"""Bootstrap ANOVA of the topic x system design: a bootstrap analogue of Tukey's HSD.

:func:`bootstrap_anova` fits MD1 (``score ~ topic + system``) to a complete topic x system
matrix, then resamples the topics with replacement ``n_resamples`` times. Each resample is
refitted (in closed form: the system means and the residual mean square of the two-way
layout) and gives the studentized range of its centred system means,

    Q* = max_{i,j} |(m*_i - m_i) - (m*_j - m_j)| / sqrt(MS*_error / T),

the largest studentized pairwise difference the resampled topics produce when the systems'
true means are the observed ones. The ``1 - alpha`` quantile of Q* is the bootstrap critical
value: a pair is declared different when ``q = |m_i - m_j| / sqrt(MS_error / T)`` exceeds
it, as Tukey's HSD does with the quantile of the studentized range distribution. The
bootstrap makes no normality assumption about the residuals and keeps the topics' dependence
between systems (a topic is drawn with all its scores).

Where :func:`irmodels.studies.bootstrap_effects` resamples the residuals of a fitted model,
this resamples the topics, the sampling units of a test collection (Voorhees, Samarov &
Soboroff 2017).

References: E. M. Voorhees, D. Samarov and I. Soboroff, "Using replicates in information
retrieval evaluation", ACM TOIS 36(2), 2017; N. Ferro and M. Sanderson, "Improving the
accuracy of system performance estimation by using shards", SIGIR 2019 (MD1 and Tukey's HSD);
docs/methods.md, "Bootstrap ANOVA".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels._section import figure_axes
from irmodels._validate import check_fits, check_int, check_probability, check_seed
from irmodels.data._columns import user_frame
from irmodels.errors import DesignError
from irmodels.inference.pairwise import score_matrix, unit_scale
from irmodels.stats.tukey import tukey_hsd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["PAIR_COLUMNS", "BootstrapAnova", "bootstrap_anova"]

#: Columns of :attr:`BootstrapAnova.pairs`, in order.
PAIR_COLUMNS = ("a", "b", "diff", "q", "p_adj", "reject", "tukey_p_adj", "tukey_reject")


@dataclass(frozen=True, repr=False, eq=False)
class BootstrapAnova(ResultDisplay):
    """Result of :func:`bootstrap_anova`.

    Attributes
    ----------
    pairs : DataFrame
        One row per pair of systems (``a`` before ``b`` in system order), columns
        :data:`PAIR_COLUMNS`: ``diff`` (``mean[a] - mean[b]``), ``q`` (``|diff| /
        sqrt(MS_error / T)``), ``p_adj`` (share of resamples with ``Q* >= q``), ``reject``
        (``q > critical_value``), ``tukey_p_adj`` and ``tukey_reject`` (Tukey's HSD on the
        same MD1 fit, :func:`irmodels.tukey_hsd`).
    means : Series
        System means (index: systems).
    critical_value, tukey_critical_value : float
        The bootstrap ``1 - alpha`` quantile of ``Q*`` and Tukey's ``Q(alpha; S, (T-1)(S-1))``.
    ms_error : float
        MD1's residual mean square.
    statistics : ndarray
        ``Q*`` of every resample.
    n_topics, n_systems, n_resamples, alpha, seed
    """

    pairs: pd.DataFrame
    means: pd.Series = field(repr=False)
    critical_value: float
    tukey_critical_value: float
    ms_error: float
    statistics: np.ndarray = field(repr=False)
    n_topics: int
    n_systems: int
    n_resamples: int
    alpha: float
    seed: Any

    @property
    def agreement(self) -> pd.Series:
        """Counts of pairs by decision: ``both``, ``bootstrap_only``, ``tukey_only``,
        ``neither``, and ``agree`` (``both + neither``) and ``n_pairs``."""
        b = self.pairs["reject"].to_numpy(bool)
        t = self.pairs["tukey_reject"].to_numpy(bool)
        return pd.Series({"both": int((b & t).sum()), "bootstrap_only": int((b & ~t).sum()),
                          "tukey_only": int((~b & t).sum()), "neither": int((~b & ~t).sum()),
                          "agree": int((b == t).sum()), "n_pairs": len(b)}, name="pairs")

    @property
    def n_significant(self) -> int:
        """Pairs the bootstrap declares different."""
        return int(self.pairs["reject"].sum())

    def to_frame(self) -> pd.DataFrame:
        """:attr:`pairs`."""
        return self.pairs.copy()

    def _display_title(self) -> str:
        a = self.agreement
        return (f"Bootstrap ANOVA (MD1, topics resampled {self.n_resamples} times): "
                f"{self.n_systems} systems, {self.n_topics} topics; critical value "
                f"{self.critical_value:.4f} (Tukey {self.tukey_critical_value:.4f}); "
                f"{a['agree']} of {a['n_pairs']} decisions agree")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        agree = self.agreement.to_frame("pairs")
        return [("Pairs", self.pairs), ("Agreement with Tukey's HSD", agree)]

    def __repr__(self) -> str:
        return (f"<BootstrapAnova systems={self.n_systems}, topics={self.n_topics}, "
                f"critical_value={self.critical_value:.4f}, "
                f"tukey={self.tukey_critical_value:.4f}, significant={self.n_significant}>")

    def plot(self, *, ax: Any = None) -> Figure:
        """Histogram of the bootstrap studentized ranges with both critical values.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there (the figure returned is then ``ax.figure``); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """

        fig, (ax,) = figure_axes(ax, figsize=(5.0, 3.2), what="BootstrapAnova.plot")
        ax.hist(self.statistics, bins=40, color="0.75", density=True)
        ax.axvline(self.critical_value, color="C3", lw=1.2,
                   label=f"bootstrap {self.critical_value:.3f}")
        ax.axvline(self.tukey_critical_value, color="C0", lw=1.2, ls="--",
                   label=f"Tukey {self.tukey_critical_value:.3f}")
        ax.set_xlabel("studentized range of the resampled system means")
        ax.set_ylabel("density")
        ax.legend(fontsize=8)
        ax.set_title(f"{100 * (1 - self.alpha):g}% critical values", fontsize=9)
        return fig


def _md1(Xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """System means and residual SS of MD1 for a stack of matrices (B x T x S)."""
    col = Xb.mean(axis=1)
    row = Xb.mean(axis=2)
    grand = row.mean(axis=1)
    R = Xb - row[:, :, None] - col[:, None, :] + grand[:, None, None]
    return col, (R * R).sum(axis=(1, 2))


def bootstrap_anova(
    data: Any,
    *,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> BootstrapAnova:
    """All pairwise system comparisons with a bootstrap critical value (topics resampled).

    Parameters
    ----------
    data : DataFrame
        Long frame, one score per (topic, system), every cell present.
    n_resamples : int
        Bootstrap resamples of the topics (default 1000).
    alpha : float
        Family-wise level.
    seed : int
        Seed of the resampling.
    topic, system, score : str
        Column names (as in :func:`irmodels.frame`).

    Returns
    -------
    BootstrapAnova
        ``.pairs`` (columns :data:`PAIR_COLUMNS`), ``.critical_value``,
        ``.tukey_critical_value``, ``.agreement``, ``.statistics``, ``plot()``.

    Raises
    ------
    DesignError
        Fewer than 3 topics or 2 systems, missing cells, bad ``n_resamples`` or ``alpha``,
        or scores without residual variation (``MS_error = 0``).

    Notes
    -----
    MD1 on a complete matrix: system means ``m_i``, ``MS_error = SS_resid / ((T-1)(S-1))``.
    Each resample draws ``T`` topics with replacement (a topic keeps all its scores),
    recomputes the system means ``m*`` and ``MS*_error`` (the same formula, the repeated
    topics counted as drawn) and ``Q* = (max_i d_i - min_i d_i) / sqrt(MS*_error / T)`` with
    ``d = m* - m``. The critical value is the ``ceil((1 - alpha) B)``-th smallest ``Q*``;
    ``reject`` is ``q > critical_value`` (equivalently ``p_adj <= alpha`` but for exact ties)
    (Voorhees, Samarov & Soboroff 2017). Tukey's HSD compares the same ``q`` with the
    studentized range quantile (Ferro & Sanderson 2019). A resample with ``MS*_error = 0``
    (every drawn topic the same one) counts as an infinite ``Q*``.

    Examples
    --------
    >>> import irmodels as irm
    >>> ap = irm.datasets.load("adhoc3", "AP")
    >>> r = irm.studies.bootstrap_anova(ap, n_resamples=500, seed=1)
    >>> r
    <BootstrapAnova systems=40, topics=50, critical_value=6.1751, tukey=5.5071, significant=336>
    >>> r.agreement[["both", "bootstrap_only", "tukey_only"]].tolist()
    [336, 0, 42]
    """

    seed = check_seed(seed)
    n_resamples = check_int(n_resamples, "n_resamples", low=2)
    alpha = check_probability(alpha, "alpha")
    data, _ = user_frame(data, topic=topic, system=system, score=score,
                         what="irm.studies.bootstrap_anova")
    X, _, systems = score_matrix(data, needed_by="irm.studies.bootstrap_anova",
                                 check_finite=True)
    T, S = X.shape
    if T < 3 or S < 2:
        raise DesignError(f"the bootstrap ANOVA needs at least 3 topics and 2 systems; got "
                          f"{T} topics x {S} systems.")
    check_fits(n_resamples, "n_resamples", 8 * (S + 1), what="the resampled means")
    # scale-free: work on scores divided by a power of two near their spread

    unit = unit_scale(X)
    Z = X / unit
    df = (T - 1) * (S - 1)
    m, ss = _md1(Z[None])
    m, mse = m[0], float(ss[0]) / df
    if not mse > 0:
        raise DesignError(
            "MD1 leaves no residual variation (every system differs from every other by a "
            "constant on all topics), so the studentized range is undefined; there is nothing "
            "to resample. Check the scores.")
    rng = np.random.default_rng(seed)
    stat = np.empty(n_resamples)
    chunk = max(1, 4_000_000 // (T * S))
    for s0 in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - s0)
        idx = rng.integers(0, T, size=(k, T))
        mb, ssb = _md1(Z[idx])
        d = mb - m[None, :]
        rng_d = d.max(axis=1) - d.min(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = rng_d / np.sqrt(ssb / df / T)
        stat[s0:s0 + k] = np.where(ssb > 0, q, math.inf)
    crit = float(np.quantile(stat, 1 - alpha, method="inverted_cdf"))
    i, j = np.triu_indices(S, k=1)
    diff = m[i] - m[j]
    qobs = np.abs(diff) / math.sqrt(mse / T)
    srt = np.sort(stat)
    p_adj = (n_resamples - np.searchsorted(srt, qobs * (1 - 1e-12), side="left")) / n_resamples
    means = pd.Series(m * unit, index=pd.Index(systems, name="system"), name="mean")
    tk = tukey_hsd(means, df_error=df, ms_error=mse * unit * unit, n=T, alpha=alpha)
    tp = tk.pairs
    names = np.asarray(systems, dtype=object)
    pairs = pd.DataFrame({"a": names[i], "b": names[j], "diff": diff * unit, "q": qobs,
                          "p_adj": p_adj, "reject": qobs > crit,
                          "tukey_p_adj": tp["p_adj"].to_numpy(float),
                          "tukey_reject": tp["reject"].to_numpy(bool)},
                         columns=list(PAIR_COLUMNS))
    return BootstrapAnova(pairs=pairs, means=means, critical_value=crit,
                          tukey_critical_value=float(tk.critical_value),
                          ms_error=mse * unit * unit, statistics=stat, n_topics=T,
                          n_systems=S, n_resamples=n_resamples, alpha=alpha, seed=seed)
