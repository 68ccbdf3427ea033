"""Variability of effectiveness across topics (Hosseini, Cox, Milic-Frayling & Vinay).

Two systems with the same mean score can differ in how consistently they perform: a system
that is mediocre on every topic and one that is excellent on some and fails on others. This
module measures the variability (the SD of scores across topics), tests whether two systems
differ in it, and reproduces the analyses of the paper: the share of mean-tied pairs that
variability separates ("tie-breaking") and the error rate of variability comparisons against
the topic-set size.

Scores bounded in [0, 1] have ``(mean - 1/2)^2 + SD^2 <= 1/4`` (population SD): the SD is
capped by the mean, so raw SDs of systems with different means are not comparable. Transform
first: ``"logit"`` (``log((x + eps) / (1 - x + eps))``) or ``"z"`` (per-topic z-scores across
systems, Webber, Moffat & Zobel 2008).

References: docs/methods.md: "Variability of effectiveness"; M. Hosseini, I. J. Cox, N. Milic-Frayling and V. Vinay,
"Measuring the variability in effectiveness of a retrieval system", IRFC 2010 (LNCS 6107);
H. Levene, "Robust tests for equality of variances", 1960; M. B. Brown and A. B. Forsythe,
"Robust tests for the equality of variances", JASA 69, 1974.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay, TableAccess, plot_text
from irmodels._section import figure_axes
from irmodels._validate import check_int_list, check_probability, check_rng
from irmodels.data._columns import own_names, user_frame
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.inference.pairwise import pairwise, score_matrix, unit_scale
from irmodels.stats.multiplicity import check_option
from irmodels.stats.paired import paired_t_test, resolve_pairs
from irmodels.stats.variance_tests import abs_dev_stats, f_test, levene_test, pair_variance_tests

__all__ = [
    "TieBreaking",
    "VariabilityResult",
    "VariabilityTest",
    "compare",
    "error_rate",
    "plot_mean_sd",
    "tie_breaking",
    "transform_scores",
    "variability",
]

Transform = Literal["logit", "z"]
VarTest = Literal["f", "levene_mean", "levene_median"]
_TESTS = ("f", "levene_mean", "levene_median")


def transform_scores(
    X: np.ndarray, transform: Transform | None = "logit", epsilon: float = 0.01
) -> np.ndarray:
    """Transform a topic x system score matrix.

    Parameters
    ----------
    X : ndarray (T, R)
        Scores, rows = topics.
    transform : {"logit", "z", None}
        ``"logit"``: ``log((x + epsilon) / (1 - x + epsilon))``, finite on [0, 1];
        ``"z"``: per topic, ``(x - topic mean) / topic SD`` across systems (sample SD; a topic
        where every system scores the same gets z = 0 and a warning; with exactly two systems
        the z-scores carry no information on variability, and a warning says so); ``None``:
        unchanged.
    epsilon : float
        Offset of the logit (> 0).

    Examples
    --------
    >>> transform_scores(np.array([[0.0, 0.5, 1.0]]), "logit", 0.01).round(4).tolist()
    [[-4.6151, 0.0, 4.6151]]
    """
    check_option(transform, ("logit", "z", None), "transform")
    X = np.asarray(X, dtype=np.float64)
    if transform is None:
        return X.copy()
    if transform == "logit":
        if isinstance(epsilon, (bool, np.bool_)) or not (
                isinstance(epsilon, (int, float, np.integer, np.floating))
                and 0 < epsilon < float("inf")):
            raise ArgumentError(f"epsilon must be a positive finite number; got {epsilon!r}.")
        if X.min() < 0 or X.max() > 1:
            raise DataFormatError(
                f"the logit transform needs scores in [0, 1]; found values in "
                f"[{X.min():.4g}, {X.max():.4g}]. Use transform='z' or None."
            )
        return np.log((X + epsilon) / (1.0 - X + epsilon))
    if X.ndim == 2 and X.shape[1] == 2:
        # (x_a - m) / s = sign(x_a - x_b) / sqrt(2) and z_b = -z_a on every topic: the two
        # systems get the same SD (and absolute deviations) whatever their scores, so F = 1,
        # Levene's W = 0 and p = 1 always
        warnings.warn(
            "with exactly two systems the per-topic z-scores are +-0.707 (or 0 on a tied topic) "
            "and z_b = -z_a on every topic, so both systems get the same spread: the z "
            "transform erases all information on variability (F = 1, and every variability "
            "test gives p = 1, whatever the scores). Use transform='logit' or None, or "
            "standardize over more systems.",
            DataQualityWarning,
            stacklevel=3,
        )
    X = X / unit_scale(X)  # z-scores are scale-free: scores near 1e+-300 under/overflow
    mean = X.mean(axis=1, keepdims=True)
    sd = X.std(axis=1, ddof=1, keepdims=True)
    flat = np.ptp(X, axis=1) == 0
    if flat.any():
        warnings.warn(
            f"{int(flat.sum())} topic(s) have the same score for every system; their z-scores "
            "are set to 0",
            DataQualityWarning,
            stacklevel=3,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        Z = (X - mean) / sd
    Z[flat, :] = 0.0
    return Z


@dataclass(frozen=True, repr=False, eq=False)
class VariabilityResult(TableAccess, ResultDisplay):
    """Result of :func:`variability`: mean and SD across topics of every system.

    It indexes like its :attr:`table` (``res["sd"]``, ``res.loc["bm25"]``, ``res.round(4)``).

    Attributes
    ----------
    table : DataFrame
        Indexed by ``system``; columns ``mean``, ``sd``, ``sd_pop``, ``n`` (see
        :func:`variability`).
    transform : str or None
        The transform applied to the scores first.
    epsilon : float
        Offset of the logit.
    """

    table: pd.DataFrame
    transform: str | None
    epsilon: float = 0.01
    #: The user's column names (canonical -> name) when :func:`variability` was given
    #: ``topic=``/``system=``/``score=``: the summary's rows are headed by the user's system
    #: column (the table keeps the canonical ``system`` index).
    column_names: dict | None = None

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`, tidy: columns ``system, mean, sd, sd_pop, n``."""
        return self.table.reset_index()

    def plot(self, *, label: bool = False, ax: Any = None):
        """Scatter of each system's mean against its population SD; for raw scores with the
        semicircle bound ``(mean - 1/2)^2 + SD^2 <= 1/4`` (see :func:`plot_mean_sd`).

        Parameters
        ----------
        label : bool
            Write the system names next to the points.
        ax : matplotlib Axes, optional
            Draw into this Axes (the figure returned is then ``ax.figure``); by default a new
            figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """
        table = self.table
        fig, (ax,) = figure_axes(ax, figsize=(5.5, 3.6), what="VariabilityResult.plot")
        ax.scatter(table["mean"], table["sd_pop"], s=14, color="C0", zorder=3)
        if label:
            for name, row in table.iterrows():
                ax.annotate(plot_text(name), (row["mean"], row["sd_pop"]), fontsize=7,
                            xytext=(3, 2), textcoords="offset points")
        if self.transform is None:
            theta = np.linspace(0, np.pi, 200)
            ax.plot(0.5 + 0.5 * np.cos(theta), 0.5 * np.sin(theta), ls="--", color="0.5",
                    label=r"bound $(\mu-\frac{1}{2})^2+\sigma^2=\frac{1}{4}$")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 0.55)
            ax.set_aspect("equal")
            ax.legend(loc="upper right", fontsize=8, frameon=False)
            ax.set_xlabel("mean score")
            ax.set_ylabel("SD across topics (population)")
        else:
            ax.set_xlabel(f"mean of {self.transform} scores")
            ax.set_ylabel(f"SD of {self.transform} scores (population)")
        ax.set_title("Mean and variability of systems")
        return fig

    def _display_title(self) -> str:
        return (f"Mean and variability across {int(self.table['n'].max()) if len(self.table) else 0} "
                f"topics of {len(self.table)} systems (transform: {self.transform})")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        table = self.table
        if self.column_names:
            table = table.rename_axis(self.column_names["system"])
        return [("Mean and SD per system", table)]

    def __repr__(self) -> str:
        return (f"<VariabilityResult {len(self.table)} systems, transform={self.transform!r}>")


def _unit(Y: np.ndarray) -> tuple[np.ndarray, float]:
    """``Y`` divided by the power of two that brings it into the safe range, and that power:
    means, SDs and spreads are scale-equivariant and the tests scale-free, while squares of
    untransformed scores near 1e+-300 under/overflow (every SD 0, or inf)."""
    s = unit_scale(Y)
    return (Y / s if s != 1.0 else Y), s


#: Trials per topic-set size that :func:`error_rate` accepts: each trial splits the topics and
#: tests every pair, so 10**7 already take hours on one core.
MAX_TRIALS = 10**7


def _spread(Y: np.ndarray, spread: str) -> np.ndarray:
    """Per column: sample SD, interquartile range (R's type 7 quantiles) or scaled MAD."""
    if spread == "sd":
        return Y.std(axis=0, ddof=1)
    if spread == "iqr":
        q1, q3 = np.quantile(Y, [0.25, 0.75], axis=0)
        return q3 - q1
    med = np.median(Y, axis=0)
    return 1.4826 * np.median(np.abs(Y - med), axis=0)


def variability(
    frame: pd.DataFrame, transform: Transform | None = "logit", *, epsilon: float = 0.01,
    robust: bool = False, topic: str = "topic", system: str = "system", score: str = "score",
) -> VariabilityResult:
    """Mean and SD across topics of every system's (transformed) scores.

    Parameters
    ----------
    frame : DataFrame
        Long frame with one score per (topic, system).
    transform : {"logit", "z", None}
        See :func:`transform_scores`. Default ``"logit"`` (Hosseini et al.).
    epsilon : float
        Offset of the logit.
    robust : bool
        Also report two robust measures of spread: ``iqr`` and ``mad`` (columns appended).
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    VariabilityResult
        Its :attr:`~VariabilityResult.table` (the result indexes like it) is indexed by
        ``system``, columns:

        - ``mean``: mean over topics of the transformed scores.
        - ``sd``: sample SD (divisor T - 1) over topics, the variability compared by the tests.
        - ``sd_pop``: population SD (divisor T), the one in the bound
          ``(mean - 1/2)^2 + sd_pop^2 <= 1/4`` for raw scores in [0, 1].
        - ``n``: number of topics.
        - with ``robust=True``: ``iqr``, the interquartile range (quantiles as R's default,
          type 7), and ``mad``, the median absolute deviation from the median scaled by
          1.4826 (R's ``mad()``, consistent with the SD for normal scores).

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> w = pd.DataFrame({"steady": [0.3, 0.35, 0.3, 0.35], "erratic": [0.0, 0.7, 0.0, 0.6]})
    >>> irm.variability.variability(irm.from_wide(w), None).round(4)
               mean      sd  sd_pop  n
    system
    steady   0.3250  0.0289  0.0250  4
    erratic  0.3250  0.3775  0.3269  4
    >>> res = irm.variability.variability(irm.from_wide(w), None, robust=True)
    >>> res.to_frame()[["system", "iqr", "mad"]].round(4)
        system    iqr     mad
    0   steady  0.050  0.0371
    1  erratic  0.625  0.4448
    """
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.variability.variability")
    X, _, systems = score_matrix(frame, who="irm.variability.variability", check_finite=True)
    Y, unit = _unit(transform_scores(X, transform, epsilon))
    T = Y.shape[0]
    table = pd.DataFrame(
        {
            "mean": Y.mean(axis=0) * unit,
            "sd": Y.std(axis=0, ddof=1) * unit if T > 1 else np.full(Y.shape[1], np.nan),
            "sd_pop": Y.std(axis=0, ddof=0) * unit,
            "n": np.full(Y.shape[1], T, dtype=np.int64),
        },
        index=pd.Index(systems, name="system", dtype="str"),
    )
    if robust:
        table["iqr"] = _spread(Y, "iqr") * unit
        table["mad"] = _spread(Y, "mad") * unit
    return VariabilityResult(table=table, transform=transform, epsilon=epsilon,
                             column_names=own_names(names))


@dataclass(frozen=True)
class VariabilityTest(ResultDisplay):
    """Test of equal variability of two systems (see :func:`compare`).

    Attributes
    ----------
    a, b : str
        The systems.
    test : str
        ``"f"`` (variance ratio), ``"levene_mean"`` (W0) or ``"levene_median"`` (W50).
    statistic : float
        F = var_a / var_b, or Levene's W.
    df1, df2 : float
        Degrees of freedom of the F reference distribution.
    p : float
        p-value.
    sd_a, sd_b : float
        Sample SDs of the (transformed) scores.
    ratio : float
        var_a / var_b.
    ci_lower, ci_upper : float
        ``1 - alpha`` interval of the variance ratio (F test only; NaN for Levene).
    transform : str or None
        The transform applied before testing.
    """

    a: str
    b: str
    test: str
    statistic: float
    df1: float
    df2: float
    p: float
    sd_a: float
    sd_b: float
    ratio: float
    ci_lower: float
    ci_upper: float
    transform: str | None

    def to_frame(self) -> pd.DataFrame:
        """One row: ``a, b, test, statistic, df1, df2, p, sd_a, sd_b, ratio, ci_lower, ci_upper``."""
        cols = ["a", "b", "test", "statistic", "df1", "df2", "p", "sd_a", "sd_b", "ratio",
                "ci_lower", "ci_upper"]
        return pd.DataFrame([[getattr(self, c) for c in cols]], columns=cols)

    def _display_title(self) -> str:
        names = {"f": "F test of the variance ratio", "levene_mean": "Levene's test W0 (mean)",
                 "levene_median": "Brown-Forsythe test W50 (median)"}
        return f"{names[self.test]}: {self.a} vs {self.b} (transform: {self.transform})"

    def _display_tables(self):
        return [("Test", self.to_frame().drop(columns=["a", "b", "test"]))]

    def __repr__(self) -> str:
        return (f"<VariabilityTest {self.test}: {self.a} vs {self.b}, "
                f"statistic={self.statistic:.4g}, "
                f"p={self.p:.4g}>")


def compare(
    frame: pd.DataFrame,
    a: str,
    b: str,
    test: VarTest = "f",
    *,
    transform: Transform | None = "logit",
    epsilon: float = 0.01,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    alpha: float = 0.05,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> VariabilityTest:
    """Test whether systems ``a`` and ``b`` differ in variability across topics.

    Parameters
    ----------
    frame : DataFrame
        Long frame with one score per (topic, system).
    a, b : str
        System names.
    test : {"f", "levene_mean", "levene_median"}
        ``"f"``: F test of the ratio of variances, as R's ``var.test``;
        ``"levene_mean"``: Levene's W0 (absolute deviations from the system mean);
        ``"levene_median"``: W50, the Brown-Forsythe test (deviations from the median);
        both as ``car::leveneTest(y ~ group, center = mean | median)``.
    transform, epsilon
        See :func:`transform_scores`.
    alternative : {"two-sided", "greater", "less"}
        For the F test (``"greater"``: a is more variable). Levene's tests are two-sided.
    alpha : float
        For the confidence interval of the variance ratio, in (0, 1).
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    VariabilityTest

    Notes
    -----
    As in Hosseini et al., the two systems' scores are treated as two samples of T topics
    (the pairing by topic is not used). F = s_a^2 / s_b^2 with (T - 1, T - 1) df; the F test
    assumes normal scores, Levene's tests are robust to non-normality (W50 most of all).
    Levene: W = (2T - 2) sum_g T (zbar_g - zbar)^2 / sum_g sum_i (z_gi - zbar_g)^2 with
    z_gi = |y_gi - center_g|, compared with F(1, 2T - 2).

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> w = pd.DataFrame({"steady": [0.3, 0.35, 0.3, 0.35, 0.32, 0.31],
    ...                   "erratic": [0.0, 0.7, 0.0, 0.6, 0.9, 0.1]})
    >>> r = irm.variability.compare(irm.from_wide(w), "erratic", "steady", "levene_median")
    >>> round(r.statistic, 3), round(r.p, 4)
    (23.49, 0.0007)
    """
    alpha = check_probability(alpha, "alpha")
    check_option(test, _TESTS, "test")
    check_option(alternative, ("two-sided", "greater", "less"), "alternative")
    if test != "f" and alternative != "two-sided":
        raise DataFormatError(
            f"Levene's tests are two-sided; got alternative={alternative!r}. Use test='f' for a "
            "one-sided comparison."
        )
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.variability.compare")
    X, _, systems = score_matrix(frame, who="irm.variability.compare", check_finite=True)
    ia, ib = resolve_pairs(systems, [(a, b)])
    Y, unit = _unit(transform_scores(X, transform, epsilon))
    n = Y.shape[0]
    if n < 3:
        raise DesignError(f"comparing variability needs at least 3 topics; the frame has {n}.")
    ya, yb = Y[:, ia[0]], Y[:, ib[0]]
    va, vb = ya.var(ddof=1), yb.var(ddof=1)
    if test == "f":
        F, p, lo, hi = f_test(va, vb, n, alternative, alpha)
        stat, df1, df2 = float(F), n - 1.0, n - 1.0
    else:
        m, v = abs_dev_stats(np.column_stack([ya, yb]), test.split("_")[1])
        W, p = levene_test(m[0], v[0], m[1], v[1], n)
        stat, df1, df2, lo, hi = float(W), 1.0, 2.0 * n - 2, np.nan, np.nan
    return VariabilityTest(
        a=str(a), b=str(b), test=test, statistic=stat, df1=df1, df2=df2, p=float(p),
        sd_a=float(np.sqrt(va)) * unit, sd_b=float(np.sqrt(vb)) * unit, ratio=float(va / vb) if vb > 0 else np.inf,
        ci_lower=float(lo), ci_upper=float(hi), transform=transform,
    )


# --------------------------------------------------------------------------- tie-breaking


@dataclass(frozen=True)
class TieBreaking(ResultDisplay):
    """Pairs tied in mean that variability separates (see :func:`tie_breaking`).

    Attributes
    ----------
    pairs : DataFrame
        One row per pair: ``a, b, diff, p_mean, sd_a, sd_b, p_var, tied, broken``
        (``diff`` the mean difference on the scale of the mean test, ``p_mean`` its paired t
        p-value, ``sd_*``
        the SDs of the transformed scores, ``p_var`` the variability test's p-value,
        ``tied`` = ``p_mean >= alpha`` or NaN (identical systems), ``broken`` = tied and
        ``p_var < alpha``).
    alpha : float
    test : str
    transform : str or None
    means : str
        ``"raw"`` or ``"transformed"``: the scores the paired t test of the means used.
    """

    pairs: pd.DataFrame = field(repr=False)
    alpha: float
    test: str
    transform: str | None
    means: str = "transformed"

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def n_tied(self) -> int:
        """Pairs not significantly different in mean."""
        return int(self.pairs["tied"].sum())

    @property
    def n_broken(self) -> int:
        """Tied pairs with significantly different variability."""
        return int(self.pairs["broken"].sum())

    @property
    def share(self) -> float:
        """``n_broken / n_tied`` (NaN when no pair is tied)."""
        return self.n_broken / self.n_tied if self.n_tied else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """:attr:`pairs` (one row per pair), a copy."""
        return self.pairs.copy()

    def _display_title(self) -> str:
        return (f"Tie-breaking by variability ({self.test}, transform {self.transform}, "
                f"means on {self.means} scores, alpha {self.alpha:g})")

    def _display_tables(self):
        return [("Summary", pd.DataFrame(
            {"pairs": [self.n_pairs], "tied": [self.n_tied], "broken": [self.n_broken],
             "share": [self.share]}, index=pd.Index(["all"])))]

    def __repr__(self) -> str:
        return (f"<TieBreaking {self.n_broken} of {self.n_tied} tied pairs broken, "
                f"share={self.share:.3f}>")


def tie_breaking(
    frame: pd.DataFrame,
    *,
    alpha: float = 0.05,
    test: VarTest = "f",
    transform: Transform | None = "logit",
    epsilon: float = 0.01,
    pairs: Sequence[tuple[str, str]] | None = None,
    means: Literal["raw", "transformed"] = "transformed",
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> TieBreaking:
    """Among pairs not significantly different in mean, the share that differ in variability.

    Parameters
    ----------
    frame : DataFrame
        Long frame with one score per (topic, system).
    alpha : float
        Level of both tests, in (0, 1).
    test : {"f", "levene_mean", "levene_median"}
        Variability test, see :func:`compare`.
    transform, epsilon
        Transform for the variability test (:func:`transform_scores`).
    pairs : list of (a, b), optional
        Default all pairs.
    means : {"raw", "transformed"}
        Scores on which the paired t test compares the means: the transformed ones (default),
        as Hosseini et al. do, so both tests look at the same scale, or the raw scores (the
        behaviour of irmodels 0.1). With ``transform=None`` the two coincide.
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    TieBreaking
        ``.pairs`` per pair, ``.n_tied``, ``.n_broken``, ``.share``.

    Notes
    -----
    Hosseini et al. (2010), section on breaking ties: a pair is *tied* when the paired t test
    of the means gives ``p >= alpha``; it is *broken* when, in addition, the variability test
    on the transformed scores gives ``p < alpha``. Hosseini et al. compare the means after the
    transformation (``means="transformed"``). No multiplicity adjustment is applied.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(0)
    >>> base = rng.uniform(0.3, 0.5, 30)
    >>> w = pd.DataFrame({"a": base, "b": np.clip(base + rng.normal(0, 0.25, 30), 0, 1),
    ...                   "c": base + rng.normal(0, 0.01, 30)})
    >>> tb = irm.variability.tie_breaking(irm.from_wide(w), test="levene_median")
    >>> tb.n_tied, tb.n_broken, round(float(tb.pairs["p_mean"].iloc[0]), 4)
    (3, 2, 0.3132)
    >>> tb = irm.variability.tie_breaking(irm.from_wide(w), test="levene_median", means="raw")
    >>> tb.n_tied, tb.n_broken
    (3, 2)
    """
    alpha = check_probability(alpha, "alpha")
    check_option(test, _TESTS, "test")
    check_option(means, ("raw", "transformed"), "means")
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.variability.tie_breaking")
    X, _, systems = score_matrix(frame, who="irm.variability.tie_breaking", check_finite=True)
    ia, ib = resolve_pairs(systems, pairs)
    Y, unit = _unit(transform_scores(X, transform, epsilon))
    if means == "raw":
        mean_tests = pairwise(frame, "t", pairs=pairs).table
        diff, p_mean = mean_tests["diff"].to_numpy(), mean_tests["p"].to_numpy()
    else:
        D = Y[:, ia] - Y[:, ib]
        diff, p_mean = D.mean(axis=0) * unit, paired_t_test(D, "two-sided", alpha)["p"]
    _, p_var = pair_variance_tests(Y, ia, ib, test)
    sd = Y.std(axis=0, ddof=1) * unit
    # NaN: every topic's difference is 0 (t is 0/0, as in R's t.test), the most tied pair
    tied = np.isnan(p_mean) | (p_mean >= alpha)
    out = pd.DataFrame(
        {
            "a": [systems[i] for i in ia], "b": [systems[i] for i in ib], "diff": diff,
            "p_mean": p_mean, "sd_a": sd[ia], "sd_b": sd[ib], "p_var": p_var,
            "tied": tied, "broken": tied & (p_var < alpha),
        }
    )
    return TieBreaking(pairs=out, alpha=alpha, test=test, transform=transform, means=means)


# ----------------------------------------------------------------------------- error rate


def error_rate(
    frame: pd.DataFrame,
    *,
    sizes: Sequence[int] | None = None,
    n_trials: int = 50,
    seed: int | np.random.Generator | None = 0,
    test: VarTest = "f",
    alpha: float = 0.05,
    transform: Transform | None = "logit",
    epsilon: float = 0.01,
    pairs: Sequence[tuple[str, str]] | None = None,
    spread: Literal["sd", "iqr", "mad"] = "sd",
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> pd.DataFrame:
    """Swap rate of variability comparisons against the topic-set size (docs/methods.md: "Variability of effectiveness").

    For each size c and each of ``n_trials`` trials, the topics are shuffled and split into two
    disjoint sets X and Y of c topics. For every pair of systems (A, B) whose variability
    differs significantly on X (``test`` at ``alpha``), the trial counts as a *swap* when
    ``sign(SD_A(X) - SD_B(X)) != sign(SD_A(Y) - SD_B(Y))``.

    Parameters
    ----------
    frame : DataFrame
        Long frame with one score per (topic, system).
    sizes : sequence of int, optional
        Topic-set sizes; each needs ``2 c <= T``. Default ``10, 20, ...`` up to ``T // 2``.
    n_trials : int
        Trials (random splits) per size.
    seed : int, Generator or None
        Seed of the splits (default 0: the same call gives the same rates; ``None`` draws
        fresh entropy).
    test, alpha, transform, epsilon, pairs
        As in :func:`tie_breaking`. The transform is applied to the whole matrix first (the
        per-topic z-scores do not depend on the split).
    spread : {"sd", "iqr", "mad"}
        The variability whose sign is compared between X and Y: the SD (default, as Hosseini
        et al.), the interquartile range or the scaled MAD (see :func:`variability`).
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`), e.g. ``topic="qid", system="run", score="map"``.

    Returns
    -------
    DataFrame
        One row per size: ``topics`` (c), ``trials``, ``pairs``, ``n_significant`` (pair-trials
        significant on X), ``n_swapped`` (of those, with the sign reversed on Y), ``error_rate``
        (``n_swapped / n_significant``, NaN when nothing is significant).

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(0)
    >>> w = pd.DataFrame({"steady": rng.beta(8, 12, 50), "erratic": rng.beta(0.8, 1.2, 50),
    ...                   "other": rng.beta(4, 6, 50)})
    >>> er = irm.variability.error_rate(irm.from_wide(w), sizes=[10, 20], n_trials=20, seed=1)
    >>> er[["topics", "n_significant", "n_swapped"]]
       topics  n_significant  n_swapped
    0      10             28          1
    1      20             50          0
    """
    alpha = check_probability(alpha, "alpha")
    check_option(test, _TESTS, "test")
    check_option(spread, ("sd", "iqr", "mad"), "spread")
    if isinstance(n_trials, (bool, np.bool_)) or not (
            isinstance(n_trials, (int, np.integer)) and n_trials >= 1):
        raise ArgumentError(f"n_trials must be a positive integer; got {n_trials!r}.")
    if n_trials > MAX_TRIALS:
        raise ArgumentError(
            f"n_trials={n_trials} would run for days or more: each trial splits the topics and "
            f"tests every pair. At most n_trials={MAX_TRIALS:,} per topic-set size are accepted; "
            "a few thousand give error rates to about 0.01.")
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.variability.error_rate")
    X, _, systems = score_matrix(frame, who="irm.variability.error_rate", check_finite=True)
    ia, ib = resolve_pairs(systems, pairs)
    Y = _unit(transform_scores(X, transform, epsilon))[0]  # only p-values and signs are used
    T = Y.shape[0]
    if sizes is None:
        sizes = list(range(10, T // 2 + 1, 10)) or [T // 2]
    sizes = list(check_int_list(sizes, "sizes", unique=False))  # 2.5 is refused, not truncated
    bad = [c for c in sizes if c < 3 or 2 * c > T]
    if bad:
        raise DesignError(
            f"topic-set sizes {bad} do not fit: each trial needs two disjoint sets of c >= 3 "
            f"topics and the frame has {T}. Use sizes up to {T // 2}."
        )
    rng = check_rng(seed)
    rows = []
    for c in sizes:
        n_sig = n_swap = 0
        for _ in range(n_trials):
            perm = rng.permutation(T)
            YX, YY = Y[perm[:c]], Y[perm[c : 2 * c]]
            _, p = pair_variance_tests(YX, ia, ib, test)
            sdx, sdy = _spread(YX, spread), _spread(YY, spread)
            sig = p < alpha
            swap = np.sign(sdx[ia] - sdx[ib]) != np.sign(sdy[ia] - sdy[ib])
            n_sig += int(sig.sum())
            n_swap += int((sig & swap).sum())
        rows.append((c, n_trials, len(ia), n_sig, n_swap, n_swap / n_sig if n_sig else np.nan))
    return pd.DataFrame(
        rows, columns=["topics", "trials", "pairs", "n_significant", "n_swapped", "error_rate"]
    )


# ----------------------------------------------------------------------------------- plot


def plot_mean_sd(
    frame: pd.DataFrame,
    *,
    transform: Transform | None = None,
    epsilon: float = 0.01,
    label: bool = False,
    ax: Any = None,
):
    """Scatter of each system's mean against its SD across topics, with the semicircle bound.

    For raw scores in [0, 1] every system lies inside the semicircle
    ``(mean - 1/2)^2 + SD^2 <= 1/4`` (population SD), drawn as a dashed line: systems with
    means near 0 or 1 cannot have a large SD, which is why raw SDs are compared only after a
    transform. With ``transform`` the transformed scores are plotted and the bound is omitted.

    Parameters
    ----------
    frame : DataFrame
        Long frame with one score per (topic, system).
    transform, epsilon
        See :func:`transform_scores`; default ``None`` (raw scores, bound drawn).
    label : bool
        Write the system names next to the points.
    ax : matplotlib Axes, optional
        Draw into this Axes; by default a new figure is made (closed in pyplot: a notebook
        shows it once, as an image, from the returned value).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> w = pd.DataFrame({"a": [0.1, 0.5, 0.9], "b": [0.2, 0.3, 0.2]})
    >>> fig = irm.variability.plot_mean_sd(irm.from_wide(w))
    >>> fig.axes[0].get_xlabel()
    'mean score'
    """
    return variability(frame, transform, epsilon=epsilon).plot(label=label, ax=ax)
