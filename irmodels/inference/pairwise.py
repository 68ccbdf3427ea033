"""Pairwise significance tests between systems, vectorised across pairs.

:func:`pairwise` compares systems two at a time on the same topics: paired and two-sample t
tests, the Wilcoxon signed-rank test, the sign test, the shifted bootstrap and the randomization
(permutation) test, with multiplicity adjustments (Bonferroni, Holm, Benjamini-Hochberg and the
randomised Tukey HSD). All pairs are handled at once: the T x P matrix of per-topic differences
of the P pairs is built once and every statistic is a matrix operation on it; resampling tests
draw one B x T matrix of random signs (or bootstrap counts) shared by all pairs and compute every
resampled mean with one matrix product per chunk of pairs.

References: docs/methods.md: "Power and topic-set size"; W. Webber, *Measurement in Information Retrieval
Evaluation*, PhD thesis, University of Melbourne, 2010, ch. 3 and 5; M. D. Smucker, J. Allan and
B. Carterette, "A comparison of statistical significance tests for information retrieval
evaluation", CIKM 2007; B. Carterette, "Multiple testing in statistical analysis of
systems-based information retrieval experiments", ACM TOIS 30(1), 2012; T. Sakai, "Statistical
reform in information retrieval?", SIGIR Forum 48(1), 2014.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay, TableAccess
from irmodels._validate import check_fits, check_probability, check_rng
from irmodels.data._columns import own_names, user_frame
from irmodels.data.frame import check_finite_scores, check_rows, natural_key
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.stats.effects import check_level, check_margin, paired_effects
from irmodels.stats.multiplicity import P_ADJUST_METHODS, check_option, p_adjust
from irmodels.stats.paired import (
    degenerate,
    ms_error,
    paired_t_test,
    resolve_pairs,
    sign_test,
    unit_scale,
    warn_constant,
    welch_t_test,
    wilcoxon_test,
)
from irmodels.stats.resampling import resampling_test, tukey_randomised

__all__ = ["ADJUSTMENTS", "COLUMNS", "P_ADJUST_METHODS", "TESTS", "EffectSizeResult",
           "PairwiseResult", "effect_size", "p_adjust", "pairwise", "score_matrix", "unit_scale"]

Test = Literal["t", "t2", "wilcoxon", "sign", "bootstrap", "randomization"]
Alternative = Literal["two-sided", "greater", "less"]
Adjust = Literal["bonferroni", "holm", "hochberg", "hommel", "bh", "by", "tukey"]

TESTS = ("t", "t2", "wilcoxon", "sign", "bootstrap", "randomization")
ALTERNATIVES = ("two-sided", "greater", "less")
ADJUSTMENTS = ("bonferroni", "holm", "hochberg", "hommel", "bh", "by", "tukey")
_MEAN_TESTS = ("t", "t2", "randomization", "bootstrap")  # tests of mean differences
COLUMNS = (
    "a", "b", "diff", "statistic", "p", "p_adj", "reject",
    "ci_lower", "ci_upper", "effect_sd", "effect_mse", "n",
    "dz", "dz_lower", "dz_upper", "effect_mse_lower", "effect_mse_upper",
)
#: The column appended after :data:`COLUMNS` when :func:`pairwise` is given ``equivalence=``.
EQUIVALENCE_COLUMN = "p_equiv"


_TEST_NAMES = {
    "t": "paired t test", "t2": "Welch two-sample t test", "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test", "bootstrap": "shifted bootstrap test",
    "randomization": "randomization (permutation) test",
}
_ADJUST_NAMES = {None: "no adjustment", "bonferroni": "Bonferroni", "holm": "Holm",
                 "hochberg": "Hochberg", "hommel": "Hommel", "bh": "Benjamini-Hochberg",
                 "by": "Benjamini-Yekutieli", "tukey": "randomised Tukey HSD"}


#: Pairs shown by ``summary()``, ``to_latex()`` and the HTML view (all are in ``table``).
_SHOWN_PAIRS = 45


@dataclass(frozen=True, repr=False, eq=False)
class PairwiseResult(TableAccess, ResultDisplay):
    """Result of :func:`pairwise`: one row per pair in :attr:`table`.

    It behaves like its table where code read the frame before (``res["p_adj"]``,
    ``res[["a", "b"]]``, ``len(res)``, ``res.loc[...]``, ``res.sort_values(...)`` are the
    table's); :meth:`to_frame` returns a copy of the table.

    Attributes
    ----------
    table : DataFrame
        One row per pair, columns :data:`COLUMNS` (see :func:`pairwise`).
    test, alternative : str
    adjust : str or None
    alpha : float
    topics : int
        Topics in the score matrix.
    n_resamples : int or None
        Resamples behind Monte Carlo p-values (None for the analytic tests).
    column_names : dict or None
        The user's column names (canonical name -> name) when :func:`pairwise` was given
        ``topic=``/``system=``/``score=``; the summary names them.
    equivalence : float or None
        The equivalence margin of the ``p_equiv`` column (TOST), or None.
    """

    table: pd.DataFrame
    test: str
    alternative: str
    adjust: str | None
    alpha: float
    topics: int
    n_resamples: int | None = None
    column_names: dict | None = None
    equivalence: float | None = None

    @property
    def n_pairs(self) -> int:
        """Pairs tested."""
        return len(self.table)

    @property
    def n_significant(self) -> int:
        """Pairs with ``p_adj < alpha``."""
        return int(self.table["reject"].sum())

    def significant_pairs(self) -> set[tuple[str, str]]:
        """The rejected pairs as ``(a, b)`` tuples."""
        t = self.table[self.table["reject"]]
        return set(zip(t["a"].astype(str), t["b"].astype(str)))

    def _display_title(self) -> str:
        return (
            f"Pairwise {_TEST_NAMES.get(self.test, self.test)} ({self.alternative}), "
            f"{_ADJUST_NAMES.get(self.adjust, str(self.adjust))}, alpha = {self.alpha:g}: {self.n_significant} of "
            f"{self.n_pairs} pairs significant, {self.topics} topics"
            + (f" (topics in {self.column_names['topic']!r}, systems in "
               f"{self.column_names['system']!r})" if self.column_names else "")
        )

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        shown = self.table.copy()
        shown.index = pd.Index([f"{a} - {b}" for a, b in zip(shown["a"], shown["b"])], name="pair")
        cols = ["diff", "statistic", "p", "p_adj", "reject"]
        if shown["ci_lower"].notna().any():
            cols += ["ci_lower", "ci_upper"]
        cols += ["dz", "dz_lower", "dz_upper"]
        if "p_equiv" in shown.columns:
            cols.append("p_equiv")
        title = (f"Pairs ({_TEST_NAMES.get(self.test, self.test)}, "
                 f"{_ADJUST_NAMES.get(self.adjust, str(self.adjust))})")
        if self.equivalence is not None:
            title += f", p_equiv: TOST with margin {self.equivalence:g}"
        if len(shown) > _SHOWN_PAIRS:  # a page: the pairs with the smallest adjusted p-values
            shown = shown.iloc[np.argsort(shown["p_adj"].to_numpy(), kind="stable")[:_SHOWN_PAIRS]]
            title += f", the {_SHOWN_PAIRS} smallest adjusted p-values of {self.n_pairs} pairs"
        return [(title, shown[cols])]

    def __repr__(self) -> str:
        return (
            f"<PairwiseResult {self.test} ({self.alternative}, adjust={self.adjust}): "
            f"{self.n_significant}/{self.n_pairs} pairs significant at alpha={self.alpha:g}>"
        )


def score_matrix(frame: pd.DataFrame, *, needed_by: str | None = None,
                 who: str = "pairwise tests", check_finite: bool = False
                 ) -> tuple[np.ndarray, list[str], list[str]]:
    """The topic x system score matrix of a long frame with one score per (topic, system).

    Parameters
    ----------
    frame : DataFrame
        A long frame (:func:`irmodels.frame`) with columns ``topic``, ``system``, ``score``.
        Columns ``shard``, ``sample``, ``measure`` or ``collection`` are allowed only with a
        single level.
    needed_by : str, optional
        What needs the matrix (e.g. ``"a topic-set study"``): errors then start with it.
    who : str
        The subject of the design errors' messages (``"pairwise tests need one score per
        (topic, system)"``), e.g. ``"irm.variability.variability"``.
    check_finite : bool
        Refuse a missing (NaN) or infinite score with :func:`irmodels.frame`'s message
        (:func:`pairwise`, the variability and comparability functions); otherwise they are
        left in the matrix for the caller.

    Returns
    -------
    X : ndarray of shape (T, R)
        Scores, rows in topic order, columns in system order (category order for
        categoricals, order of first appearance otherwise).
    topics, systems : list of str
        The row and column labels.

    Raises
    ------
    DesignError
        Several scores per (topic, system) (shards, samples, several measures) or missing cells.
    DataFormatError
        Not a long frame, a missing column, a missing (NaN) or infinite score (with
        ``check_finite``).

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.frame(pd.DataFrame({"topic": [1, 1, 2, 2], "system": ["a", "b", "a", "b"],
    ...                             "score": [0.1, 0.2, 0.3, 0.4]}))
    >>> X, topics, systems = score_matrix(f)
    >>> X.tolist(), topics, systems
    ([[0.1, 0.2], [0.3, 0.4]], ['1', '2'], ['a', 'b'])
    """
    if needed_by is None:
        return _score_matrix(frame, who, check_finite)
    try:
        return _score_matrix(frame, who, check_finite)
    except DesignError as exc:
        raise DesignError(f"{needed_by} needs every (topic, system) cell once: {exc}") from None
    except DataFormatError as exc:
        raise DataFormatError(f"{needed_by}: {exc}") from None


def _s(who: str) -> str:
    """The verb's ending for ``who``: "pairwise tests need", "irm.pairwise needs"."""
    return "" if who.endswith("tests") else "s"


def _score_matrix(frame: pd.DataFrame, who: str, check_finite: bool
                  ) -> tuple[np.ndarray, list[str], list[str]]:
    if not isinstance(frame, pd.DataFrame):
        raise DataFormatError(
            f"expected a long frame (pandas DataFrame), got {type(frame).__name__}; "
            "build one with irm.frame(df) or irm.from_wide(matrix)."
        )
    missing = [c for c in ("topic", "system", "score") if c not in frame.columns]
    if missing:
        raise DataFormatError(
            f"the frame has no column {', '.join(map(repr, missing))}; columns present: "
            f"{', '.join(map(repr, frame.columns))}. Build a long frame with irm.frame(df, "
            "topic=..., system=..., score=...) or irm.from_wide(matrix)."
        )
    check_rows(frame)
    if check_finite:  # as irm.frame (and so irm.compare) refuses them
        check_finite_scores(frame)
    multi = [
        c for c in ("collection", "measure", "shard", "sample")
        if c in frame.columns and frame[c].nunique(dropna=False) > 1
    ]
    if multi:
        levels = ", ".join(f"{frame[c].nunique()} {c}s" for c in multi)
        raise DesignError(
            f"{who} need{_s(who)} one score per (topic, system); the frame has {levels}. "
            f"Average them first (frame.groupby(['topic', 'system'], observed=True)['score']"
            f".mean().reset_index()) or select one {multi[0]} (frame[frame['{multi[0]}'] == ...])."
        )
    topic = frame["topic"]
    system = frame["system"]
    if isinstance(topic.dtype, pd.CategoricalDtype):
        t_cat = topic
    else:  # irm.frame's order (natural: "2" before "10"), so that a seed draws the same signs
        # and resamples for a topic whether or not the frame went through irm.frame first
        t_str = topic.astype(str)
        t_cat = pd.Categorical(t_str, categories=sorted(pd.unique(t_str), key=natural_key))
    s_cat = system if isinstance(system.dtype, pd.CategoricalDtype) else pd.Categorical(
        system.astype(str), categories=list(dict.fromkeys(system.astype(str)))
    )
    t_cat = pd.Series(t_cat).cat.remove_unused_categories()
    s_cat = pd.Series(s_cat).cat.remove_unused_categories()
    ti = t_cat.cat.codes.to_numpy().astype(np.int64)
    si = s_cat.cat.codes.to_numpy().astype(np.int64)
    topics = [str(c) for c in t_cat.cat.categories]
    systems = [str(c) for c in s_cat.cat.categories]
    n_t, n_s = len(topics), len(systems)
    flat = ti * n_s + si
    counts = np.bincount(flat, minlength=n_t * n_s)
    if counts.max() > 1:
        cell = int(np.argmax(counts > 1))
        raise DesignError(
            f"{who} need{_s(who)} one score per (topic, system); topic {topics[cell // n_s]}, "
            f"system {systems[cell % n_s]} has {int(counts[cell])}. Average the replicates "
            "(groupby(['topic', 'system']).mean()) or select one of them."
        )
    if (counts == 0).any():
        n_missing = int((counts == 0).sum())
        cell = int(np.argmax(counts == 0))
        raise DesignError(
            f"{who} need{_s(who)} every system scored on every topic; {n_missing} of "
            f"{n_t * n_s} (topic, system) cells are missing, e.g. topic {topics[cell // n_s]}, "
            f"system {systems[cell % n_s]}. Drop those systems or topics (irm.balance(frame)"
            ".missing lists the cells) or fill them (e.g. with 0 for no relevant document)."
        )
    X = np.empty(n_t * n_s, dtype=np.float64)
    X[flat] = frame["score"].to_numpy(dtype=np.float64)
    return X.reshape(n_t, n_s), topics, systems


def pairwise(
    frame: pd.DataFrame,
    test: Test = "t",
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    alternative: Alternative = "two-sided",
    adjust: Adjust | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    backend: object = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
    equivalence: float | None = None,
) -> PairwiseResult:
    r"""Significance tests for pairs of systems evaluated on the same topics.

    Parameters
    ----------
    frame : DataFrame
        Long frame (:func:`irmodels.frame`) with exactly one score per (topic, system): average
        or select shards, samples and measures first.
    test : {"t", "t2", "wilcoxon", "sign", "bootstrap", "randomization"}
        ``"t"`` paired t test; ``"t2"`` two-sample Welch t test (unequal variances, R's
        ``t.test`` default; it ignores the pairing by topic); ``"wilcoxon"`` signed-rank test;
        ``"sign"`` sign test; ``"bootstrap"`` shifted bootstrap of the mean difference;
        ``"randomization"`` paired permutation (sign-flipping) test. See Notes.
    pairs : list of (a, b), optional
        The pairs to test, by system name. Default: all ``R (R - 1) / 2`` pairs, ``a`` before
        ``b`` in the frame's system order.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the alternative is that ``a`` scores higher than ``b``.
    adjust : {None, "bonferroni", "holm", "hochberg", "hommel", "bh", "by", "tukey"}
        Multiplicity adjustment of ``p`` over the tested pairs (the family): Bonferroni, Holm,
        Hochberg, Hommel, Benjamini-Hochberg, Benjamini-Yekutieli (as R's ``p.adjust``, see
        :func:`p_adjust`), or ``"tukey"``: the randomised Tukey HSD (a two-sided test of mean
        differences: only with ``alternative="two-sided"`` and a test of means, ``"t"``,
        ``"t2"``, ``"randomization"`` or ``"bootstrap"``; see Notes). ``None``: ``p_adj``
        equals ``p``.
    alpha : float
        Significance level for ``reject`` and ``1 - alpha`` confidence intervals.
    n_resamples : int
        Resamples B of the bootstrap, the randomization test and the randomised Tukey HSD.
    seed : int, Generator or None
        Seed of the resampling (default 0, as everywhere in irmodels): the same call gives the
        same results, those of :func:`irmodels.compare`. ``None`` draws fresh entropy.
    backend : optional
        Where resampling chunks run: ``None`` (here, numpy's threads), or any backend of
        :func:`irmodels.parallel.map` (``"processes"``, a Dask client).
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`): ``irm.pairwise(df, topic="qid", system="run", score="map")``.
        The summary then names the user's columns.
    equivalence : float, optional
        An equivalence margin ``m`` in score units (e.g. 0.01): adds the column ``p_equiv``,
        the p-value of the two one-sided tests (TOST) that ``|mean difference| < m``.

    Returns
    -------
    PairwiseResult
        Its :attr:`~PairwiseResult.table` (also ``to_frame()``; the result indexes like it)
        has one row per pair, columns in this order:

        - ``a``, ``b``: system names (str).
        - ``diff``: mean over topics of ``score(a) - score(b)``.
        - ``statistic``: t (``"t"``, ``"t2"``), V = sum of the ranks of the positive differences
          (``"wilcoxon"``, as R), number of positive differences (``"sign"``), the observed
          mean difference (``"bootstrap"``, ``"randomization"``).
        - ``p``: p-value of the test, unadjusted.
        - ``p_adj``: p-value after ``adjust`` (equal to ``p`` when ``adjust=None``).
        - ``reject``: ``p_adj < alpha``.
        - ``ci_lower``, ``ci_upper``: ``1 - alpha`` confidence interval of the mean difference
          (t interval for ``"t"``/``"t2"``, basic bootstrap interval for ``"bootstrap"``; one-sided
          alternatives give a one-sided interval with an infinite end; NaN for ``"wilcoxon"``,
          ``"sign"`` and ``"randomization"``).
        - ``effect_sd``: ``diff`` / SD of the per-topic differences (sample SD, n - 1), the
          paired standardized effect (Cohen's d_z); ``+/-inf`` when the differences are
          essentially constant and not 0, NaN when they are all 0 (see Notes).
        - ``effect_mse``: ``diff`` / sqrt(MS_error) of the two-way model
          ``score ~ topic + system`` fitted on all systems of the frame (Sakai 2014).
        - ``n``: topics entering the test (non-zero differences for ``"wilcoxon"`` and
          ``"sign"``, all topics otherwise).
        - ``dz``, ``dz_lower``, ``dz_upper``: the paired standardized difference ``d_z`` (equal
          to ``effect_sd``) and its exact ``1 - alpha`` interval from the noncentral t (one-sided
          for a one-sided ``alternative``), whatever the test; NaN bounds when ``dz`` is not
          finite.
        - ``effect_mse_lower``, ``effect_mse_upper``: the ``1 - alpha`` interval of Sakai's
          ``effect_mse`` from the noncentral t with the two-way model's residual df (see Notes).
        - ``p_equiv`` (only with ``equivalence=m``): TOST p-value, ``max(P(T >= (dbar + m)/se),
          P(T <= (dbar - m)/se))`` with T - 1 df (Schuirmann 1987); ``p_equiv < alpha`` declares
          the pair equivalent within ``+/-m`` (the ``1 - 2 alpha`` t interval lies inside).

    Raises
    ------
    DesignError
        Several scores per (topic, system), or missing cells.
    DataFormatError
        Unknown test, alternative, adjustment, system names in ``pairs``; bad ``alpha``.

    Warns
    -----
    DataQualityWarning
        ``"t"`` or ``"t2"`` on pairs whose data are essentially constant (named in the
        message; see Notes), and ``"bootstrap"`` on pairs whose non-zero per-topic
        differences are constant (every resample has the same mean). Monte Carlo p-values with ``adjust="bonferroni"`` or ``"holm"`` when
        ``pairs / n_resamples > alpha``: the resampled p-values are too coarse for the
        adjusted threshold ``alpha / pairs`` (raise ``n_resamples`` to ``pairs / alpha``).

    Notes
    -----
    With d_i the difference on topic i (i = 1..T), dbar its mean and s its SD:

    - paired t: ``t = dbar / (s / sqrt(T))``, T - 1 df.
    - Welch: ``t = (mean_a - mean_b) / sqrt((s_a^2 + s_b^2) / T)``, Welch-Satterthwaite df.
    - Essentially constant data, where R's ``t.test`` stops: the standard error is below
      ``10 eps`` times |dbar| (paired t) or times the larger |system mean| (Welch), or is 0.
      There t is a ratio of rounding errors (1e16 for ``a`` against ``a - 0.1``), so such a
      pair gets, with a :class:`DataQualityWarning`: t = ``+/-inf``, p = 0 (two-sided; 0 or 1
      one-sided), an interval collapsed to ``diff`` and ``effect_sd = +/-inf`` when the shift
      is not 0; t, p, the interval and ``effect_sd`` NaN when every difference is 0 (or the
      shift is within ``10 eps`` of the larger |system mean|, rounding). NaN p-values stay
      NaN after ``adjust`` and leave the family (as R's ``p.adjust``), and are not rejected.
    - Wilcoxon signed-rank exactly as R's ``wilcox.test(a, b, paired=TRUE)``: zero differences
      are dropped, |d| ranked with average ranks; exact null distribution when fewer than 50
      differences remain and there are neither ties nor zeros, otherwise the normal
      approximation with tie correction ``sum(t^3 - t) / 48`` and continuity correction 1/2.
      A pair with only zero differences gets ``p = 1``.
    - sign test as R's ``binom.test(#{d > 0}, #{d != 0})``; zero differences are dropped;
      two-sided ``p = min(1, 2 min(P(K <= k), P(K >= k)))``.
    - shifted bootstrap: B resamples of the T topics with replacement (one index matrix for
      all pairs); with m* the resampled mean, two-sided
      ``p = (#{|m* - dbar| >= |dbar|} + 1) / (B + 1)`` (``greater``: ``#{m* - dbar >= dbar}``
      in the count), as Davison & Hinkley (1997, eq. 4.11) so that p is never 0; basic interval
      ``(2 dbar - q_{1-alpha/2}(m*), 2 dbar - q_{alpha/2}(m*))``.
    - randomization: the signs of the d_i are flipped at random (the paired permutation
      test); the statistic is the mean difference. All ``2^T`` sign vectors are enumerated when
      ``2^T <= n_resamples`` (exact ``p = count / 2^T``, the identity included); otherwise B
      random sign vectors shared by all pairs, ``p = (count + 1) / (B + 1)``, with count the
      resamples whose |mean| reaches |dbar|.
    - randomised Tukey HSD (Carterette 2012): in each of B permutations the system labels are
      permuted within every topic (all systems of the frame), and the statistic is the range
      of the system means ``max_j mean_j - min_j mean_j``; ``p_adj = (#{range >= |diff|} + 1) /
      (B + 1)``. It controls the family-wise error over all pairs of the frame.

    - effect sizes: ``dz = dbar / s``; ``t = dz sqrt(T)`` is noncentral t with T - 1 df and
      noncentrality ``delta_z sqrt(T)``, and the bounds of ``delta_z`` solve
      ``F(t; T - 1, delta sqrt(T)) = 1 - alpha/2`` and ``alpha/2``
      (:func:`irmodels.stats.effects.noncentral_t_interval`; Steiger & Fouladi 1997).
      Sakai's ``effect_mse = dbar / sqrt(V_E)`` uses the residual variance ``V_E`` of
      ``score ~ topic + system`` over all R systems of the frame, with ``(T - 1)(R - 1)`` df;
      under that model (independent errors of equal variance) ``dbar / sqrt(2 V_E / T)`` is
      noncentral t with those df and noncentrality ``ES sqrt(T / 2)``, which is inverted the
      same way (NaN when ``V_E = 0``). With two systems it is ``sqrt(2) dz`` and its interval.

    Comparisons of resampled and observed statistics allow a relative tolerance of 1e-9 so
    that rounding in the matrix products does not drop ties. References: Smucker, Allan &
    Carterette (CIKM 2007); Carterette (TOIS 2012); Webber (thesis, 2010, ch. 3); Sakai (2014).

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(1)
    >>> wide = pd.DataFrame(rng.beta(2, 5, size=(20, 3)), columns=["x", "y", "z"])
    >>> wide["x"] += 0.15
    >>> res = irm.pairwise(irm.from_wide(wide), "t", adjust="holm")
    >>> res[["a", "b", "diff", "statistic", "p_adj", "reject"]].round(4)
       a  b    diff  statistic   p_adj  reject
    0  x  y  0.1165     3.0869  0.0182    True
    1  x  z  0.0783     2.0610  0.1065   False
    2  y  z -0.0382    -1.0549  0.3047   False
    >>> r = irm.pairwise(irm.from_wide(wide), "randomization", n_resamples=2000, seed=7)
    >>> r["p"].round(3).tolist()
    [0.011, 0.064, 0.293]
    """
    check_option(test, TESTS, "test")
    check_option(alternative, ALTERNATIVES, "alternative")
    if adjust is not None:
        check_option(adjust, ADJUSTMENTS, "adjustment")
    if adjust == "tukey" and (alternative != "two-sided" or test not in _MEAN_TESTS):
        # its p-values come from the range of the permuted system means: a two-sided test of
        # mean differences; beside a one-sided or a rank/sign test it would reject pairs that
        # test never looked at (a far worse system "greater" than its partner)
        raise DataFormatError(
            f"adjust='tukey' (the randomised Tukey HSD) is a two-sided test of mean differences; "
            f"it cannot adjust the {'one-sided ' if alternative != 'two-sided' else ''}"
            f"{test!r} test. Use it with alternative='two-sided' and test 't', 't2', "
            "'randomization' or 'bootstrap', or adjust with 'holm' or 'bh'."
        )
    alpha = check_probability(alpha, "alpha")
    if isinstance(n_resamples, (bool, np.bool_)) or not (
            isinstance(n_resamples, (int, np.integer)) and n_resamples >= 1):
        raise ArgumentError(f"n_resamples must be a positive integer; got {n_resamples!r}.")
    margin = None if equivalence is None else check_margin(equivalence)
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.pairwise")
    X, _topics, systems = score_matrix(frame, check_finite=True)
    T, R = X.shape
    if R < 2:
        raise DesignError(
            f"pairwise tests need at least two systems; the frame has {R} ({systems}). "
            "Add systems or check the system column."
        )
    if T < 2:
        raise DesignError(
            f"pairwise tests need at least two topics; the frame has {T}. Add topics."
        )
    ia, ib = resolve_pairs(systems, pairs)
    P = len(ia)
    if test in ("bootstrap", "randomization") or adjust == "tukey":
        # B x T resampling weights (bootstrap counts, sign vectors: all 2**T when they fit)
        exact_rows = 2**T if test == "randomization" and T < 63 and 2**T <= n_resamples \
            else int(n_resamples)
        check_fits(exact_rows, "n_resamples", 8 * (3 * max(T, R) + 2),
                   what="the resampled statistics")
    unit = unit_scale(X)  # scores near 1e+-300: their squares under/overflow
    X = X / unit
    D = X[:, ia] - X[:, ib]
    diff = D.mean(axis=0)
    nan = np.full(P, np.nan)
    rng = check_rng(seed)
    _exact = False

    mean = X.mean(axis=0)
    scale = np.maximum(np.abs(mean[ia]), np.abs(mean[ib]))
    if test == "t":
        res = paired_t_test(D, alternative, alpha, scale)
    elif test == "t2":
        res = welch_t_test(X, ia, ib, alternative, alpha)
    elif test == "wilcoxon":
        res = wilcoxon_test(D, alternative)
        res.pop("exact")
        res.update(ci_lower=nan, ci_upper=nan)
    elif test == "sign":
        res = sign_test(D, alternative)
        res.update(ci_lower=nan, ci_upper=nan)
    else:
        res, _exact = resampling_test(test, D, alternative, alpha, n_resamples, rng, backend)
        res.update(statistic=diff.copy(), n=np.full(P, T))
        if test == "bootstrap":  # constant differences: every resample is the same
            const, zero = degenerate(D.std(axis=0, ddof=1) / np.sqrt(T), diff, diff, scale)
            if (const & ~zero).any():  # no difference at all: p = 1, nothing to warn of
                res.update(constant=const & ~zero, zero=np.zeros_like(zero))
        res.setdefault("ci_lower", nan)
        res.setdefault("ci_upper", nan)

    if "constant" in res:
        warn_constant(test, systems, ia, ib, res.pop("constant"), res.pop("zero"))
    p = np.asarray(res["p"], dtype=np.float64)
    if (
        test in ("bootstrap", "randomization")
        and adjust in ("bonferroni", "holm")
        and not _exact
        and P / n_resamples > alpha
    ):
        warnings.warn(
            f"{test} p-values from {n_resamples} resamples have a resolution of about "
            f"1/{n_resamples}, but {adjust} over {P} pairs needs p below alpha/{P} = "
            f"{alpha / P:.2g} to reject: the adjusted p-values are unreliable ("
            + "no pair can be rejected"
            + f"). Use n_resamples >= {int(np.ceil(P / alpha))}, or adjust='tukey' or 'bh'.",
            DataQualityWarning,
            stacklevel=2,
        )
    if adjust is None:
        p_adj = p.copy()
    elif adjust == "tukey":
        p_adj = tukey_randomised(X, np.abs(diff), n_resamples, rng)
    else:
        p_adj = p_adjust(p, adjust)

    sd = D.std(axis=0, ddof=1)
    const, zero = degenerate(sd / np.sqrt(T), diff, diff, scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect_sd = np.where(const, np.where(zero, np.nan, np.where(diff > 0, np.inf, -np.inf)),
                             diff / sd)
        mse = ms_error(X) if R > 1 else np.nan
        effect_mse = diff / np.sqrt(mse) if mse > 0 else np.full(P, np.nan)
    eff = paired_effects(D, level=1.0 - alpha, alternative=alternative,
                         equivalence=None if margin is None else margin / unit,
                         ms_error=mse, df_error=(T - 1) * (R - 1), constant=const, zero=zero)

    out = pd.DataFrame(
        {
            "a": pd.array([systems[i] for i in ia], dtype="str"),
            "b": pd.array([systems[i] for i in ib], dtype="str"),
            "diff": diff * unit,
            "statistic": np.asarray(res["statistic"], dtype=np.float64)
            * (unit if test in ("bootstrap", "randomization") else 1.0),
            "p": p,
            "p_adj": p_adj,
            "reject": p_adj < alpha,
            "ci_lower": np.asarray(res["ci_lower"], dtype=np.float64) * unit,
            "ci_upper": np.asarray(res["ci_upper"], dtype=np.float64) * unit,
            "effect_sd": effect_sd,
            "effect_mse": effect_mse,
            "n": np.asarray(res["n"], dtype=np.int64),
            "dz": effect_sd,
            "dz_lower": eff["dz_lower"],
            "dz_upper": eff["dz_upper"],
            "effect_mse_lower": eff["es_lower"],
            "effect_mse_upper": eff["es_upper"],
        }
    )
    if margin is not None:
        out["p_equiv"] = eff["p_equiv"]
    n_res = n_resamples if test in ("bootstrap", "randomization") or adjust == "tukey" else None
    out.attrs.update(
        test=test, alternative=alternative, adjust=adjust, alpha=alpha, topics=T,
        n_resamples=n_res, equivalence=margin,
    )
    return PairwiseResult(table=out, test=test, alternative=alternative, adjust=adjust,
                          alpha=alpha, topics=T, n_resamples=n_res,
                          column_names=own_names(names), equivalence=margin)


#: Rows of :attr:`EffectSizeResult.table`, in this order.
EFFECT_ROWS = ("diff", "dz", "effect_mse")


@dataclass(frozen=True, repr=False, eq=False)
class EffectSizeResult(TableAccess, ResultDisplay):
    """Result of :func:`effect_size`: the effect of one pair of systems, with intervals.

    Attributes
    ----------
    table : DataFrame
        Index :data:`EFFECT_ROWS` (``diff``: the mean difference in score units, ``dz``:
        ``diff / sd(d)``, ``effect_mse``: Sakai's ``diff / sqrt(V_E)``), columns
        ``estimate, lower, upper`` (the ``level`` interval).
    statistic, df, p : float
        The paired t test of ``diff = 0`` (two-sided).
    p_equiv : float
        TOST p-value for the margin ``equivalence`` (NaN without one).
    equivalence : float or None
    level : float
    n : int
        Topics.
    """

    table: pd.DataFrame
    statistic: float
    df: float
    p: float
    p_equiv: float
    equivalence: float | None
    level: float
    n: int

    @property
    def diff(self) -> float:
        """Mean of ``x - y``."""
        return float(self.table.loc["diff", "estimate"])

    @property
    def dz(self) -> float:
        """``diff / sd(x - y)``."""
        return float(self.table.loc["dz", "estimate"])

    def _display_title(self) -> str:
        eq = ("" if self.equivalence is None else
              f"; TOST with margin {self.equivalence:g}: p_equiv = {self.p_equiv:.4g}")
        return (f"Effect size of a pair over {self.n} topics ({self.level:.0%} intervals): "
                f"paired t = {self.statistic:.4g}, df = {self.df:g}, p = {self.p:.4g}{eq}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Effect sizes", self.table)]

    def to_frame(self) -> pd.DataFrame:
        """A copy of :attr:`table`."""
        return self.table.copy()

    def __repr__(self) -> str:
        return (f"<EffectSizeResult diff={self.diff:.4g}, dz={self.dz:.4g}, p={self.p:.3g}"
                + ("" if self.equivalence is None else f", p_equiv={self.p_equiv:.3g}") + ">")


def effect_size(
    x: Sequence[float] | np.ndarray | pd.Series,
    y: Sequence[float] | np.ndarray | pd.Series,
    *,
    level: float = 0.95,
    equivalence: float | None = None,
) -> EffectSizeResult:
    r"""Effect sizes with confidence intervals, and the equivalence test, of one pair of systems.

    Parameters
    ----------
    x, y : array_like
        The two systems' scores on the same topics, in the same order (paired).
    level : float
        Confidence level of the intervals (two-sided).
    equivalence : float, optional
        Equivalence margin ``m`` in score units: ``p_equiv`` is the TOST p-value that
        ``|mean(x - y)| < m``.

    Returns
    -------
    EffectSizeResult
        ``table`` with rows ``diff`` (mean difference, t interval), ``dz`` (``diff / sd(d)``,
        exact interval by inverting the noncentral t) and ``effect_mse`` (Sakai's effect size
        ``diff / sqrt(V_E)`` with ``V_E`` the residual variance of the two-way ANOVA of the two
        systems, ``var(d) / 2``, so ``sqrt(2) dz``; for ``V_E`` over all systems of a comparison
        use :func:`pairwise`), columns ``estimate, lower, upper``; ``statistic``, ``df``, ``p``
        of the paired t test; ``p_equiv``.

    Raises
    ------
    DataFormatError
        Lengths differ, fewer than two topics, a missing or infinite score, a bad ``level`` or
        margin.

    Notes
    -----
    The same numbers as the row of the pair in :func:`pairwise` with ``alpha = 1 - level``
    (see its Notes): ``t = dz sqrt(T)`` is noncentral t with ``T - 1`` df, and the bounds of
    the noncentrality solve ``F(t; T - 1, delta) = (1 +/- level) / 2`` (Steiger & Fouladi
    1997); TOST after Schuirmann (1987): ``p_equiv = max(P(T >= (dbar + m) / se),
    P(T <= (dbar - m) / se))``. Essentially constant differences give ``dz = +/-inf`` with
    NaN bounds (NaN when all are 0) and ``p_equiv`` 0 when ``|dbar| < m``, else 1.

    Examples
    --------
    >>> import irmodels as irm
    >>> x = [0.32, 0.41, 0.18, 0.55, 0.27, 0.49, 0.36, 0.22]
    >>> y = [0.30, 0.35, 0.20, 0.47, 0.22, 0.46, 0.31, 0.21]
    >>> res = irm.effect_size(x, y, equivalence=0.05)
    >>> res.table.round(4)
                estimate   lower   upper
    effect
    diff          0.0350  0.0086  0.0614
    dz            1.1068  0.1882  1.9804
    effect_mse    1.5652  0.2661  2.8007
    >>> round(res.p, 4), round(res.p_equiv, 4)
    (0.0166, 0.1108)
    """
    level = check_level(level)
    margin = None if equivalence is None else check_margin(equivalence)
    xs = np.asarray(x, dtype=np.float64).ravel()
    ys = np.asarray(y, dtype=np.float64).ravel()
    if xs.shape != ys.shape:
        raise DataFormatError(
            f"x and y must hold one score per topic each, in the same topic order; got "
            f"{xs.size} and {ys.size} scores. Align them on the topics first.")
    if xs.size < 2:
        raise DataFormatError(f"an effect size needs at least two topics; got {xs.size}.")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise DataFormatError(
            "x and y must be finite scores; got a missing (NaN) or infinite value. Drop the "
            "topic or score it (0 for no relevant document retrieved).")
    unit = unit_scale(xs, ys)
    D = ((xs - ys) / unit)[:, None]
    T = D.shape[0]
    alpha = 1.0 - level
    scale = np.array([max(abs(xs.mean()), abs(ys.mean())) / unit])
    t = paired_t_test(D, "two-sided", alpha, scale)
    sd = D.std(axis=0, ddof=1)
    const, zero = degenerate(sd / np.sqrt(T), D.mean(axis=0), D.mean(axis=0), scale)
    X = np.column_stack([xs, ys]) / unit
    mse = ms_error(X)
    eff = paired_effects(D, level=level, equivalence=None if margin is None else margin / unit,
                         ms_error=mse, df_error=T - 1, constant=const, zero=zero)
    diff = float(D.mean()) * unit
    with np.errstate(divide="ignore", invalid="ignore"):
        es = float(D.mean() / np.sqrt(mse)) if mse > 0 else np.nan
    table = pd.DataFrame(
        {"estimate": [diff, float(eff["dz"][0]), es],
         "lower": [float(t["ci_lower"][0]) * unit, float(eff["dz_lower"][0]),
                   float(eff["es_lower"][0])],
         "upper": [float(t["ci_upper"][0]) * unit, float(eff["dz_upper"][0]),
                   float(eff["es_upper"][0])]},
        index=pd.Index(list(EFFECT_ROWS), name="effect"))
    return EffectSizeResult(table=table, statistic=float(t["statistic"][0]), df=float(T - 1),
                            p=float(t["p"][0]), p_equiv=float(eff["p_equiv"][0]),
                            equivalence=margin, level=level, n=T)
