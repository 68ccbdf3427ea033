"""Topic-set studies: how conclusions change with the number of topics.

:func:`topic_sets` draws many pairs of topic sets X, Y of each size c from a topic x system
score matrix and measures, for every pair of systems:

- **swap rates** (Voorhees & Buckley 2002): among the system pairs whose mean difference on X
  falls in a bin of width ``bin_width``, the share whose difference on Y has the other sign;
- **discriminative power** (Sakai 2006): the share of system pairs found significant at
  ``alpha`` by a test on topic sets of size c, and the achieved-significance-level (ASL)
  curve, the pairs' p-values sorted in increasing order (averaged over samples);
- **agreement between halves** (Sanderson & Zobel 2005; Voorhees 2009): among pairs
  significant on one set, the share significant with the opposite sign on the other
  (``error_rate``) and the share whose difference merely has the opposite sign
  (``swap_rate_significant``);
- **rank agreement**: Kendall's tau-b between the system ranking on a topic set and on all
  topics.

Work is vectorised across samples and pairs: the system means, the covariance matrices
behind the paired t statistics and the residual mean squares behind Tukey's HSD are computed
for a whole batch of samples with a few array operations. Batches of ``_CHUNK`` samples are
the units mapped by :func:`irmodels.parallel.map`; each gets its own seed
(``SeedSequence(seed, spawn_key=(c,)).spawn(...)``), so the result is the same on every
backend and a study with more samples extends one with fewer.

References: E. M. Voorhees and C. Buckley, "The effect of topic set size on retrieval
experiment error", SIGIR 2002; T. Sakai, "Evaluating evaluation metrics based on the
bootstrap", SIGIR 2006; M. Sanderson and J. Zobel, "Information retrieval system evaluation:
effort, sensitivity, and reliability", SIGIR 2005; docs/methods.md (topic-set studies).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels._section import Section, figure_axes, figure_to_png
from irmodels._validate import (
    check_fits,
    check_number,
    check_probability,
    check_seed,
    did_you_mean,
    seed_sequence,
)
from irmodels.data._columns import user_frame
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.inference.pairwise import score_matrix, unit_scale
from irmodels.parallel import map as parallel_map
from irmodels.stats.studentized import qtukey
from irmodels.studies._topic_set_units import (
    TopicSetContext,
    pair_differences,
    rounding_tolerance,
    run_unit,
    t_table,
    tukey_sf_table,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels._section import Section

__all__ = [
    "AGREEMENT_COLUMNS",
    "METHODS",
    "POWER_COLUMNS",
    "RANK_COLUMNS",
    "SWAP_COLUMNS",
    "TESTS",
    "TopicSetStudy",
    "topic_sets",
]

TESTS = ("tukey", "t", "wilcoxon", "randomization")
METHODS = ("disjoint", "subsample", "bootstrap")
#: Columns of :attr:`TopicSetStudy.swap_rates`, in order.
SWAP_COLUMNS = ("size", "diff_bin", "swap_rate", "n_pairs", "n_swaps")
#: Columns of :attr:`TopicSetStudy.discriminative_power`, in order.
POWER_COLUMNS = ("size", "test", "fraction_significant")
#: Columns of :attr:`TopicSetStudy.agreement`, in order.
AGREEMENT_COLUMNS = ("size", "test", "n_significant", "both_same", "both_reversed",
                     "error_rate", "swap_rate_significant")
#: Columns of :attr:`TopicSetStudy.rank_agreement`, in order.
RANK_COLUMNS = ("size", "tau_mean", "tau_sd", "tau_lower", "tau_upper", "share_tau_0_9")
#: Columns of :meth:`TopicSetStudy.to_frame`, in order.
SUMMARY_COLUMNS = ("size", "test", "fraction_significant", "error_rate", "swap_rate",
                   "tau_mean")

# samples per unit of work: fixed, so seeds (one per unit) never depend on the backend
_CHUNK = 50
# most bins of the swap-rate histogram (a bin_width far below the score range's scale would
# allocate one counter per bin)
_MAX_BINS = 1_000_000


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True, repr=False, eq=False)
class TopicSetStudy(ResultDisplay):
    """Result of :func:`topic_sets`.

    Attributes
    ----------
    swap_rates : DataFrame
        One row per (size, bin of the mean difference) with at least one pair. Columns:
        ``size`` (topics per set, c), ``diff_bin`` (lower edge of the bin of ``|mean
        difference|`` on X), ``swap_rate`` (``n_swaps / n_pairs``), ``n_pairs`` (system pairs
        over all samples whose difference on X fell in the bin; pairs with a zero difference
        are left out), ``n_swaps`` (those whose difference on Y has the other sign).
    discriminative_power : DataFrame
        Columns ``size``, ``test``, ``fraction_significant``: the share of system pairs
        significant at ``alpha`` over the topic sets of that size (both sets of every sample).
    agreement : DataFrame
        Columns ``size``, ``test``; ``n_significant`` (mean number of significant pairs per
        topic set); ``both_same``, ``both_reversed`` (pairs significant on both sets of a
        sample with the same / opposite sign, counted from both sides, over all samples);
        ``error_rate`` (``both_reversed`` over the significant pairs: significant on one set,
        reversed and significant on the other); ``swap_rate_significant`` (significant on one
        set, opposite sign on the other, significant or not).
    rank_agreement : DataFrame
        Columns ``size``; ``tau_mean``, ``tau_sd``, ``tau_lower``, ``tau_upper`` (mean, SD,
        2.5% and 97.5% quantiles of Kendall's tau-b between the system means on a topic set
        and on all topics, over the topic sets where tau is defined); ``share_tau_0_9``
        (share of those topic sets with tau >= 0.9). NaN for a size where no topic set has a
        defined tau (every pair of systems tied).
    asl : DataFrame
        Sakai's ASL curves: columns ``size``, ``test``, ``rank`` (1 = smallest p-value),
        ``p`` (the p-value at that rank, averaged over topic sets).
    taus : DataFrame
        Kendall's tau-b of every topic set: columns ``size``, ``sample`` (the X sets of the
        samples first, then the Y sets), ``tau``.
    sizes, tests, method, n_samples, alpha, seed, bin_width, n_topics, n_systems
        The study's settings and the matrix's shape.
    """

    swap_rates: pd.DataFrame
    discriminative_power: pd.DataFrame
    agreement: pd.DataFrame
    rank_agreement: pd.DataFrame
    asl: pd.DataFrame = field(repr=False)
    taus: pd.DataFrame = field(repr=False)
    sizes: tuple[int, ...]
    tests: tuple[str, ...]
    method: str
    n_samples: int
    alpha: float
    seed: int | None
    bin_width: float
    n_topics: int
    n_systems: int

    def to_frame(self) -> pd.DataFrame:
        """One row per (size, test): ``size, test, fraction_significant, error_rate,
        swap_rate, tau_mean`` (``swap_rate`` over all pairs of that size, every bin)."""
        sw = self.swap_rates.groupby("size")[["n_swaps", "n_pairs"]].sum()
        swap = (sw["n_swaps"] / sw["n_pairs"].where(sw["n_pairs"] > 0)).rename("swap_rate")
        out = self.discriminative_power.merge(
            self.agreement[["size", "test", "error_rate"]], on=["size", "test"])
        out = out.merge(swap.reset_index(), on="size", how="left")
        out = out.merge(self.rank_agreement[["size", "tau_mean"]], on="size", how="left")
        return out[list(SUMMARY_COLUMNS)]

    def extrapolate(self, sizes: Sequence[int], *, min_pairs: int = 10) -> pd.DataFrame:
        """Swap rates at other topic-set sizes from an exponential fit (Voorhees & Buckley).

        For every difference bin observed with a non-zero swap rate (and at least ``min_pairs``
        pairs) at two or more sizes, ``log(swap_rate)`` is fitted by least squares as a linear
        function of the size, ``swap_rate(c) = exp(a + b c)``, as Voorhees & Buckley (SIGIR
        2002) do to predict the error of topic sets larger than half the collection.

        Parameters
        ----------
        sizes : sequence of int
            Topic-set sizes to predict (e.g. ``[50, 100]``).
        min_pairs : int
            Fewest pairs behind an observed rate used in the fit (default 10).

        Returns
        -------
        DataFrame
            One row per (bin, size): ``diff_bin``, ``size``, ``swap_rate`` (predicted),
            ``a``, ``b`` (the fit), ``n_sizes`` (sizes in the fit).

        Examples
        --------
        >>> import irmodels as irm
        >>> study = irm.studies.topic_sets(irm.datasets.load("adhoc3", "AP"), sizes=[5, 10, 25],
        ...                                n_samples=100, test="t", seed=1)
        >>> study.extrapolate([50]).head(3).round(3)
           diff_bin  size  swap_rate      a      b  n_sizes
        0      0.00    50      0.349 -0.728 -0.006        3
        1      0.01    50      0.185 -0.769 -0.018        3
        2      0.02    50      0.085 -0.820 -0.033        3
        """
        try:
            targets = [int(c) for c in sizes]
        except (TypeError, ValueError):
            raise DesignError(f"sizes must be whole numbers; got {sizes!r}.") from None
        sw = self.swap_rates
        sw = sw[(sw["n_pairs"] >= min_pairs) & (sw["swap_rate"] > 0)]
        rows = []
        for b, g in sw.groupby("diff_bin", sort=True):
            if g["size"].nunique() < 2:
                continue
            slope, intercept = np.polyfit(g["size"].to_numpy(float),
                                          np.log(g["swap_rate"].to_numpy()), 1)
            for c in targets:
                rows.append((float(b), c, float(np.exp(intercept + slope * c)),
                             float(intercept), float(slope), int(g["size"].nunique())))
        return pd.DataFrame(rows, columns=["diff_bin", "size", "swap_rate", "a", "b", "n_sizes"])

    def swap_table(self) -> pd.DataFrame:
        """Swap rates as a table: one row per ``diff_bin``, one column per size."""
        return self.swap_rates.pivot(index="diff_bin", columns="size", values="swap_rate")

    def _display_title(self) -> str:
        return (f"Topic-set study ({self.method}): {self.n_topics} topics x {self.n_systems} "
                f"systems, sizes {', '.join(map(str, self.sizes))}, {self.n_samples} samples "
                f"each, tests {', '.join(self.tests)}, alpha={self.alpha}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        summary = self.to_frame().set_index("size")
        ranks = self.rank_agreement.set_index("size")
        swaps = self.swap_table()
        swaps = swaps.loc[swaps.index < 0.1 + 1e-12] if len(swaps) > 10 else swaps
        swaps.columns = [f"c={c}" for c in swaps.columns]
        return [("Per topic-set size and test", summary),
                ("Rank agreement with the full topic set (Kendall's tau-b)", ranks),
                (f"Swap rates by |mean difference| bin (width {self.bin_width:g})", swaps)]

    def __repr__(self) -> str:
        return (f"<TopicSetStudy method={self.method!r}, sizes={self.sizes}, tests={self.tests}, "
                f"n_samples={self.n_samples}, topics={self.n_topics}, "
                f"systems={self.n_systems}>")

    # ---- plots
    def plot(self, *, ax: Any = None) -> Figure:
        """Three panels: swap rate by difference bin (one line per size), discriminative power
        by size (one line per test), Kendall's tau by size (mean and 95% band).

        Parameters
        ----------
        ax : sequence of three matplotlib Axes, optional
            Draw there (the figure returned is then the first one's); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """

        fig, (ax1, ax2, ax3) = figure_axes(ax, figsize=(12, 3.6), shape=(1, 3),
                                           what="TopicSetStudy.plot")
        for c, g in self.swap_rates.groupby("size"):
            g = g[g["n_pairs"] >= 10]
            ax1.plot(g["diff_bin"] + self.bin_width / 2, g["swap_rate"], marker=".",
                     label=f"{c} topics")
        ax1.set_xlabel("|difference of means| on X")
        ax1.set_ylabel("swap rate")
        ax1.legend(fontsize=7)
        for test, g in self.discriminative_power.groupby("test", sort=False):
            ax2.plot(g["size"], g["fraction_significant"], marker="o", label=test)
        ax2.set_xlabel("topics per set")
        ax2.set_ylabel(f"share of pairs significant (alpha={self.alpha})")
        ax2.legend(fontsize=7)
        r = self.rank_agreement
        ax3.plot(r["size"], r["tau_mean"], marker="o")
        ax3.fill_between(r["size"], r["tau_lower"], r["tau_upper"], alpha=0.25)
        ax3.axhline(0.9, ls="--", lw=0.8, color="grey")
        ax3.set_xlabel("topics per set")
        ax3.set_ylabel("Kendall's tau vs all topics")
        return fig

    def plot_asl(self, test: str | None = None, *, ax: Any = None) -> Figure:
        """Sakai's ASL curves: sorted p-values of the system pairs, one line per size.

        Parameters
        ----------
        test : str, optional
            One of the study's tests (default the first).
        ax : matplotlib Axes, optional
            Draw there (the figure returned is then ``ax.figure``); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """

        test = self.tests[0] if test is None else test
        if test not in self.tests:
            raise DesignError(f"the study ran no {test!r} test; tests run: "
                              f"{', '.join(self.tests)}.")
        fig, (ax,) = figure_axes(ax, figsize=(5, 3.6), what="TopicSetStudy.plot_asl")
        for c, g in self.asl[self.asl["test"] == test].groupby("size"):
            ax.plot(g["rank"], g["p"], label=f"{c} topics")
        ax.axhline(self.alpha, ls="--", lw=0.8, color="grey")
        ax.set_xlabel("system pairs, sorted by p-value")
        ax.set_ylabel(f"achieved significance level ({test})")
        ax.legend(fontsize=7)
        return fig

    # ---- report
    def to_section(self, *, digits: int = 4) -> Section:
        """This study as a report :class:`~irmodels._section.Section`: the design, the tables
        and the figure of :meth:`plot`.

        Pass it to ``irm.build_report(data, sections=[study.to_section()])``.
        """

        intro = (
            f"{self.n_samples} pairs of {self.method} topic sets of each size "
            f"({', '.join(map(str, self.sizes))} topics) drawn from {self.n_topics} topics; "
            f"{self.n_systems} systems. Swap rates after Voorhees & Buckley (SIGIR 2002), "
            f"discriminative power after Sakai (SIGIR 2006) with the "
            f"{', '.join(self.tests)} test(s) at alpha = {self.alpha}, error rates between "
            "halves and Kendall's tau against the full topic set."
        )
        return Section.from_tables(
            "Topic-set study", intro, self._display_tables(), png=figure_to_png(self.plot()),
            alt="Topic-set study", caption="Swap rates, discriminative power and rank agreement "
            "by topic-set size.", digits=digits)



# --------------------------------------------------------------------------------------------
# the study


def _check_sizes(sizes: Any, T: int, method: str) -> tuple[int, ...]:
    limit = T // 2 if method == "disjoint" else T
    if sizes is None:
        step = 5 if limit >= 10 else 1
        out = tuple(range(step if step > 1 else 2, limit + 1, step))
        if not out:
            raise DesignError(f"{T} topics are too few for a {method} topic-set study; "
                              "it needs at least 4 (two disjoint sets of 2).")
        return out
    if isinstance(sizes, (int, np.integer)):
        sizes = [sizes]
    try:
        values = [int(s) for s in sizes]
    except (TypeError, ValueError):
        raise DesignError(f"sizes must be whole numbers of topics; got {sizes!r}.") from None
    if not values or any(v != s for v, s in zip(values, sizes)):
        raise DesignError(f"sizes must be whole numbers of topics; got {sizes!r}.")
    small = [v for v in values if v < 2]
    if small:
        raise DesignError(f"topic-set sizes must be at least 2 (a test needs a variance); got "
                          f"{small[0]}.")
    if method != "bootstrap":
        big = [v for v in values if v > limit]
        if big:
            if method == "disjoint":
                raise DesignError(
                    f"disjoint topic sets of size {big[0]} need {2 * big[0]} topics; the frame "
                    f"has {T}, so sizes can be at most {limit} (half the topics). Use smaller "
                    "sizes, or method='subsample' / 'bootstrap' (sets may share topics).")
            raise DesignError(f"cannot subsample {big[0]} of {T} topics without replacement; "
                              f"use sizes up to {T} or method='bootstrap'.")
    return tuple(sorted(set(values)))


def topic_sets(
    frame: pd.DataFrame,
    *,
    sizes: Sequence[int] | int | None = None,
    n_samples: int = 1000,
    method: Literal["disjoint", "subsample", "bootstrap"] = "disjoint",
    test: str | Sequence[str] = "tukey",
    alpha: float = 0.05,
    bin_width: float = 0.01,
    n_resamples: int = 1000,
    seed: int = 0,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> TopicSetStudy:
    """Swap rates, discriminative power, error rates and rank agreement by topic-set size.

    Parameters
    ----------
    frame : DataFrame
        A long frame with one score per (topic, system) and every cell present
        (:func:`irmodels.frame`, ``irm.datasets.load``).
    sizes : int or sequence of int, optional
        Topics per set, c. Default: 5, 10, ... up to half the topics (``disjoint``) or all of
        them; 2, 3, ... when there are fewer than 10.
    n_samples : int
        Pairs of topic sets (X, Y) drawn per size (default 1000). Not ``n_resamples``, which
        is the randomization test's count (as in :func:`irmodels.pairwise`).
    method : {"disjoint", "subsample", "bootstrap"}
        ``disjoint``: X and Y are disjoint random subsets (Voorhees & Buckley; c at most
        half the topics). ``subsample``: two independent random subsets without replacement
        (they may share topics). ``bootstrap``: two samples of c topics drawn with replacement
        (Sakai's bootstrap; any c).
    test : str or sequence of str
        Significance test(s) among ``"tukey"`` (Tukey HSD with the error term of the two-way
        model ``score ~ topic + system`` on the set, MD1), ``"t"`` (paired t), ``"wilcoxon"``
        (signed-rank) and ``"randomization"`` (paired permutation test with ``n_resamples``
        random sign flips, exact enumeration when ``2**c <= n_resamples``; slow at TREC size).
        All two-sided.
    alpha : float
        Significance level (default 0.05).
    bin_width : float
        Width of the bins of the absolute mean difference for the swap rates (default 0.01,
        as Voorhees & Buckley for MAP).
    n_resamples : int
        Resamples of the randomization test.
    seed : int
        Seed of the study: the samples of size c come from ``SeedSequence(seed,
        spawn_key=(c,))``, split in fixed batches of 50 samples with one child seed each.
    backend, n_workers, progress
        Where the batches run (:func:`irmodels.parallel.map`); the result does not depend on
        it.
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    TopicSetStudy
        ``.swap_rates``, ``.discriminative_power``, ``.agreement``, ``.rank_agreement``,
        ``.asl``, ``to_frame()``, ``plot()``, ``plot_asl()``, ``to_section()``.

    Raises
    ------
    DataFormatError
        A missing (NaN) or infinite score.
    DesignError
        A frame with missing (topic, system) cells or several scores per cell, fewer than two
        systems or topics, a disjoint size above half the topics, unknown tests or methods,
        bad ``alpha``, ``n_samples`` or ``bin_width`` (a positive number that cuts the scores'
        range into fewer than a million bins).

    Warns
    -----
    DataQualityWarning
        Kendall's tau is undefined on every topic set of a size (every pair of systems tied:
        identical systems, a constant measure); that size's ``rank_agreement`` is NaN. Also
        when t or Tukey tests compare a non-zero mean difference whose per-topic differences
        are constant (a ``bootstrap`` set that drew one topic every time): counted
        significant, as :func:`irmodels.pairwise` counts them.

    Notes
    -----
    Scores are divided by a power of two near their largest magnitude first when it is outside
    [2**-10, 2**100] (exact in floating point), so scores near 1e-300 or 1e300 give the study
    of the same scores near 1 (``bin_width`` is in the scores' units). A pair with a zero difference on X has no order and is left out of the swap counts; a
    swap is a strictly opposite sign on Y. Discriminative power and the error rates use both
    sets of every sample (X against Y and Y against X). Tukey's p-values for the ASL curves
    and the paired t test's are interpolated on a grid of 20000 points of ``x / (1 + x)``
    (error below 1e-6); significance itself compares the statistic with the exact critical
    value. Kendall's
    tau-b is computed from the signs of the pairwise differences (ties on either side as in
    tau-b), for X and Y alike.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> study = irm.studies.topic_sets(data, sizes=[5, 10, 25], n_samples=100,
    ...                                test=["tukey", "t"], seed=1)
    >>> study
    <TopicSetStudy method='disjoint', sizes=(5, 10, 25), tests=('tukey', 't'), n_samples=100, topics=50, systems=40>
    >>> study.to_frame().round(3)
       size   test  fraction_significant  error_rate  swap_rate  tau_mean
    0     5  tukey                 0.060         0.0      0.206     0.717
    1     5      t                 0.240         0.0      0.206     0.717
    2    10  tukey                 0.153         0.0      0.154     0.805
    3    10      t                 0.455         0.0      0.154     0.805
    4    25  tukey                 0.333         0.0      0.090     0.910
    5    25      t                 0.647         0.0      0.090     0.910
    """
    seed = check_seed(seed)

    frame, _ = user_frame(frame, topic=topic, system=system, score=score,
                          what="irm.studies.topic_sets")
    X, topics, systems = score_matrix(frame, needed_by="a topic-set study")
    T, R = X.shape
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise DataFormatError(
            f"a topic-set study needs a finite score in every (topic, system) cell; "
            f"{int(bad.sum())} score(s) are missing or infinite, e.g. {X[i, j]} for topic "
            f"{topics[i]!r}, system {systems[j]!r}. Fix or drop them first (irm.frame refuses "
            "them when it builds the frame).")
    if R < 2:
        raise DesignError(f"a topic-set study compares systems; the frame has {R}.")
    if T < 2:
        raise DesignError(f"a topic-set study draws sets of topics and tests on them; the frame "
                          f"has {T} topic(s), it needs at least 2.")
    if method not in METHODS:
        raise ArgumentError(f"unknown method {method!r}{did_you_mean(method, METHODS)}; choose "
                            f"one of {', '.join(map(repr, METHODS))}.")
    if not isinstance(test, (str, list, tuple)):
        raise ArgumentError(f"unknown test {test!r}; choose among {', '.join(map(repr, TESTS))}.")
    tests = (test,) if isinstance(test, str) else tuple(test)
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise ArgumentError(f"unknown test {bad[0] if bad else test!r}"
                            f"{did_you_mean(bad[0] if bad else test, TESTS)}; choose among "
                            f"{', '.join(map(repr, TESTS))}.")
    tests = tuple(dict.fromkeys(tests))
    alpha = check_probability(alpha, "alpha")
    bin_width = check_number(bin_width, "bin_width", low=0.0, low_open=True)
    for name, v in (("n_samples", n_samples), ("n_resamples", n_resamples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ArgumentError(f"{name} must be a positive integer; got {v!r}.")
    size_list = _check_sizes(sizes, T, method)
    # Kendall's tau of both sets of every sample (a frame of 3 columns) per size
    check_fits(int(n_samples), "n_samples", 2 * 3 * 8 * len(size_list) + 64,
               what="the topic sets' results")
    if "randomization" in tests:  # sign vectors: all 2**c when they fit in n_resamples
        rows = max(2**c if c < 63 and 2**c <= n_resamples else int(n_resamples)
                   for c in size_list)
        check_fits(rows, "n_resamples", 16 * max(size_list),
                   what="the sign vectors of the randomization test")

    ia, ib = np.triu_indices(R, 1)
    full = X.mean(axis=0)
    span = float(X.max() - X.min())
    if span / bin_width >= _MAX_BINS:
        raise DesignError(
            f"bin_width={bin_width:g} cuts the scores' range ({span:g}) into more than "
            f"{_MAX_BINS:,} bins of the swap-rate histogram; use a bin_width of at least "
            f"{span / _MAX_BINS:.3g} (the default 0.01 suits scores in [0, 1]).")
    n_bins = int(math.floor(span / bin_width)) + 2
    tukey: dict[int, tuple[float, np.ndarray]] = {}
    if "tukey" in tests:
        if (size_list[0] - 1) * (R - 1) < 2:
            raise DesignError(
                f"Tukey's HSD on {size_list[0]} topics x {R} systems leaves "
                f"{(size_list[0] - 1) * (R - 1)} error degree of freedom; it needs 2. Use larger "
                "sizes or another test.")
        for c in size_list:
            df = (c - 1) * (R - 1)
            tukey[c] = (float(qtukey(1 - alpha, R, df)), tukey_sf_table(R, df))
    t_tables = {c: t_table(c - 1, float(alpha)) for c in size_list} if "t" in tests else {}
    # scores near 1e+-300 would under/overflow in the squares of the tests: divided by a power
    # of two (exact), with the bin width, the study is that of scores near 1
    unit = unit_scale(X)
    X = X / unit
    full = full / unit
    scale = float(np.max(np.abs(X))) if X.size else 0.0
    full_sign = np.sign(pair_differences(full, ia, ib, rounding_tolerance(scale, T)))
    ctx = TopicSetContext(X=X, ia=ia, ib=ib, full_sign=full_sign, method=method,
                   tests=tests, alpha=float(alpha), bin_width=float(bin_width) / unit,
                   n_bins=n_bins,
                   n_resamples=int(n_resamples), tukey=tukey, t_tables=t_tables, scale=scale)
    units = []
    root = seed_sequence(seed)  # a Generator or SeedSequence too, as check_seed accepts
    for c in size_list:
        n_chunks = -(-int(n_samples) // _CHUNK)
        children = seed_sequence(root, spawn_key=(c,)).spawn(n_chunks)
        for k, child in enumerate(children):
            units.append((c, min(_CHUNK, int(n_samples) - k * _CHUNK), child))
    parts = parallel_map(functools.partial(run_unit, ctx), units, backend=backend,
                         n_workers=n_workers, progress=progress, desc="topic sets")

    P = len(ia)
    no_tau: list[int] = []
    degenerate: list[str] = []
    swap_rows, power_rows, agree_rows, rank_rows, asl_rows, tau_rows = [], [], [], [], [], []
    for c in size_list:
        mine = [p for u, p in zip(units, parts) if u[0] == c]
        n_pairs = np.sum([p["n_pairs"] for p in mine], axis=0)
        n_swaps = np.sum([p["n_swaps"] for p in mine], axis=0)
        for b in np.flatnonzero(n_pairs):
            # the bin's edge to 12 significant digits (not decimals: a bin_width of 1e-302
            # would round every edge to 0)
            swap_rows.append((c, float(f"{b * bin_width:.12g}"), n_swaps[b] / n_pairs[b],
                              int(n_pairs[b]), int(n_swaps[b])))
        taus = np.concatenate([p["tau"] for p in mine])
        tau_rows.append(pd.DataFrame({"size": c, "sample": np.arange(len(taus)), "tau": taus}))
        ok = taus[np.isfinite(taus)]
        if len(ok):
            rank_rows.append((c, float(ok.mean()),
                              float(ok.std(ddof=1)) if len(ok) > 1 else math.nan,
                              float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)),
                              float((ok >= 0.9).mean())))
        else:
            rank_rows.append((c, math.nan, math.nan, math.nan, math.nan, math.nan))
            no_tau.append(c)
        n_sets = 2 * int(n_samples)
        for test_name in tests:
            n_sig = sum(p[test_name]["n_sig"] for p in mine)
            same = sum(p[test_name]["both_same"] for p in mine)
            rev = sum(p[test_name]["both_reversed"] for p in mine)
            swap_sig = sum(p[test_name]["swap_sig"] for p in mine)
            n_degenerate = sum(p[test_name].get("degenerate", 0) for p in mine)
            if n_degenerate:
                degenerate.append(f"{n_degenerate} of {n_sets * P} {test_name} tests at size {c}")
            power_rows.append((c, test_name, n_sig / (n_sets * P)))
            agree_rows.append((c, test_name, n_sig / n_sets, same, rev,
                               rev / n_sig if n_sig else math.nan,
                               swap_sig / n_sig if n_sig else math.nan))
            asl = np.sum([p[test_name]["asl"] for p in mine], axis=0) / n_sets
            asl_rows.append(pd.DataFrame({"size": c, "test": test_name,
                                          "rank": np.arange(1, P + 1), "p": asl}))
    swap = pd.DataFrame(swap_rows, columns=list(SWAP_COLUMNS))
    power = pd.DataFrame(power_rows, columns=list(POWER_COLUMNS))
    agree = pd.DataFrame(agree_rows, columns=list(AGREEMENT_COLUMNS))
    for col in ("both_same", "both_reversed"):
        agree[col] = agree[col].astype("int64")
    if degenerate:
        warnings.warn(
            f"{'; '.join(degenerate)} compare a non-zero mean difference whose per-topic "
            "differences are essentially constant (standard error 0 up to rounding; e.g. a "
            f"{method} set that drew one topic every time): t or q is +/-inf there and counted "
            "significant, as irm.pairwise does (R's t.test stops with 'data are essentially "
            "constant'). Use larger sizes"
            + (" or method='subsample' or 'disjoint'" if method == "bootstrap" else "")
            + ", or check for duplicated or shifted runs.",
            DataQualityWarning, stacklevel=2)
    if no_tau:
        tied = not (full_sign != 0).any()
        why = ("every pair of systems ties on the mean over all topics (identical systems or a "
               "constant measure), so the reference ranking has no order" if tied else
               "every pair of systems ties on every topic set drawn")
        warnings.warn(
            f"Kendall's tau is undefined for every topic set of size(s) "
            f"{', '.join(map(str, no_tau))}: {why}. rank_agreement is NaN there.",
            DataQualityWarning, stacklevel=2)
    return TopicSetStudy(
        swap_rates=swap, discriminative_power=power, agreement=agree,
        rank_agreement=pd.DataFrame(rank_rows, columns=list(RANK_COLUMNS)),
        asl=pd.concat(asl_rows, ignore_index=True) if asl_rows else pd.DataFrame(),
        taus=pd.concat(tau_rows, ignore_index=True), sizes=size_list, tests=tests,
        method=method, n_samples=int(n_samples), alpha=float(alpha), seed=seed,
        bin_width=float(bin_width), n_topics=T, n_systems=R,
    )
