"""Tukey's honestly significant difference on the error term of a fitted model.

Given the marginal means of one factor (usually ``system``) and the error term of a fitted
multi-factor model (``MS_error`` with ``df_error`` degrees of freedom, ``n`` observations behind
each mean), every pair of levels is compared with the studentized range: this is the test of
Ferro & Sanderson (SIGIR 2019) and of R's ``TukeyHSD(aov(score ~ topic + system))``, not the
one-way Tukey of generic packages, whose error term ignores the topic (and shard) effects.

References: docs/methods.md: "Multiple comparisons"; Tukey (1949); Piepho (2004) for the letter display.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # t quantiles without importing scipy.stats

from irmodels._display import ResultDisplay, format_number
from irmodels._validate import check_probability
from irmodels.errors import DataFormatError, DesignError
from irmodels.stats.studentized import ptukey, qtukey

__all__ = ["TukeyResult", "compact_letters", "tukey_hsd"]

PAIR_COLUMNS = ("a", "b", "diff", "q", "p_adj", "lower", "upper", "reject")
INTERVAL_COLUMNS = ("mean", "lower", "upper", "halfwidth")


@dataclass(frozen=True, repr=False, eq=False)
class TukeyResult(ResultDisplay):
    """All pairwise comparisons of one factor's levels by Tukey's HSD.

    Attributes
    ----------
    factor : str
        The factor compared (``"system"``).
    means : Series
        Marginal mean per level, in the factor's level order (name ``mean``).
    pairs : DataFrame
        One row per pair, in R's ``TukeyHSD`` order (for each level ``a`` in level order, every
        later level ``b``), with columns

        - ``a``, ``b``: the two levels (categoricals in the factor's level order);
        - ``diff``: ``mean[a] - mean[b]``, first minus second, the convention of
          ``irm.pairwise`` and ``irm.compare`` (R's ``TukeyHSD`` labels the same pair ``"b-a"``
          and reports the negated difference and interval);
        - ``q``: studentized range statistic ``|diff| / sqrt(MS_error / n)``;
        - ``p_adj``: adjusted p-value ``P[Q(k, df_error) >= q]``;
        - ``lower``, ``upper``: simultaneous ``1 - alpha`` interval for ``diff``;
        - ``reject``: ``p_adj < alpha``.
    critical_value : float
        ``Q(alpha; k, df_error)``, the upper ``alpha`` quantile of the studentized range.
    alpha : float
        Family-wise significance level.
    df_error : float
        Error degrees of freedom of the model.
    ms_error : float or None
        Error mean square of the model (None when ``se_diff`` was given).
    n : float, ndarray or None
        Observations behind each mean.
    se_diff : ndarray
        ``k x k`` matrix of standard errors of the differences of means.
    sd : Series or None
        Per-level standard deviation of the observations (for ``intervals("sem")``).
    means_kind : str
        Which means were compared: ``"marginal (least-squares)"`` from a fitted model (on an
        unbalanced design the least-squares means, not the raw ones), ``"given"`` when the
        means were passed to :func:`tukey_hsd`.
    df_pairs : ndarray or None
        Degrees of freedom of each pair (in ``pairs`` order) when they differ (mixed models,
        Satterthwaite per contrast); then ``pairs`` has a column ``df``, ``df_error`` is their
        minimum and ``critical_value`` the one at that minimum (each pair's interval uses its
        own df).
    """

    factor: str
    means: pd.Series
    pairs: pd.DataFrame
    critical_value: float
    alpha: float
    df_error: float
    ms_error: float | None
    n: float | np.ndarray | None
    se_diff: np.ndarray = field(repr=False)
    sd: pd.Series | None = None
    means_kind: str = "given"
    df_pairs: np.ndarray | None = field(default=None, repr=False)

    # -- summaries of the pairs ---------------------------------------------------------------
    @property
    def k(self) -> int:
        """Number of levels compared."""
        return len(self.means)

    @property
    def n_pairs(self) -> int:
        """Number of pairs, ``k (k - 1) / 2``."""
        return len(self.pairs)

    @property
    def n_significant(self) -> int:
        """Number of pairs whose difference is significant at ``alpha``."""
        return int(self.pairs["reject"].sum())

    @property
    def n_not_significant(self) -> int:
        """Number of pairs whose difference is not significant at ``alpha``."""
        return self.n_pairs - self.n_significant

    @property
    def best(self) -> str:
        """The level with the highest mean (the first one in level order on ties)."""
        return str(self.means.index[int(np.argmax(self.means.to_numpy()))])

    @functools.cached_property
    def _reject_matrix(self) -> np.ndarray:
        k = self.k
        iu, ju = _pair_indices(k)
        m = np.zeros((k, k), dtype=bool)
        r = self.pairs["reject"].to_numpy()
        m[iu, ju] = r
        m[ju, iu] = r
        return m

    @functools.cached_property
    def top_group(self) -> list[str]:
        """Levels not significantly different from the best one (itself included), by mean
        descending (ties in level order)."""
        best = int(np.argmax(self.means.to_numpy()))
        inside = ~self._reject_matrix[best]
        order = _order_desc(self.means.to_numpy())
        return [str(self.means.index[i]) for i in order if inside[i]]

    @functools.cached_property
    def letters(self) -> pd.Series:
        """Compact letter display: levels sharing a letter are not significantly different.

        A Series indexed by level (in the order of ``means``), named ``letters``; ``a`` marks
        the group of the best level. Computed with Piepho's (2004) insert-absorb algorithm.
        """
        return compact_letters(self.means, self._reject_matrix)

    # -- intervals of single means ------------------------------------------------------------
    def intervals(self, kind: Literal["tukey", "anova", "sem"] = "tukey") -> pd.DataFrame:
        """Confidence intervals for each level's mean (docs/methods.md: "Multiple comparisons").

        Parameters
        ----------
        kind : {"tukey", "anova", "sem"}
            - ``"tukey"``: ``m +- Q(alpha; k, df_error) / 2 * sqrt(MS_error / n)``; two levels'
              intervals overlap exactly when their difference is not significant.
            - ``"anova"``: ``m +- t(1 - alpha/2; df_error) * sqrt(MS_error / n)``.
            - ``"sem"``: ``m +- t(1 - alpha/2; n - 1) * s / sqrt(n)`` with ``s`` the level's own
              standard deviation (needs ``sd``; the model is not used).

            When the model gave ``se_diff`` instead of ``MS_error``, ``sqrt(MS_error / n)`` is
            replaced by ``se / sqrt(2)``, ``se`` the mean standard error of the level's
            differences with the others.

        Returns
        -------
        DataFrame
            Indexed by level (order of ``means``), columns ``mean``, ``lower``, ``upper``,
            ``halfwidth``.

        Raises
        ------
        DesignError
            ``kind="sem"`` without per-level standard deviations or ``n``.

        Examples
        --------
        >>> import irmodels as irm
        >>> hsd = irm.tukey_hsd({"bm25": 0.30, "lm": 0.28, "tfidf": 0.21}, df_error=98,
        ...                     ms_error=0.012, n=50, sd={"bm25": 0.2, "lm": 0.25, "tfidf": 0.2})
        >>> hsd.intervals("tukey").round(4)
                mean   lower   upper  halfwidth
        system
        bm25    0.30  0.2739  0.3261     0.0261
        lm      0.28  0.2539  0.3061     0.0261
        tfidf   0.21  0.1839  0.2361     0.0261
        >>> hsd.intervals("sem")["halfwidth"].round(4).tolist()
        [0.0568, 0.071, 0.0568]
        """
        m = self.means.to_numpy()
        se_mean = self._se_mean()
        if kind == "tukey":
            half = 0.5 * self.critical_value * se_mean
        elif kind == "anova":
            half = stdtrit(self.df_error, 1 - self.alpha / 2) * se_mean  # = stats.t.ppf
        elif kind == "sem":
            if self.sd is None or self.n is None:
                raise DesignError(
                    "the SEM interval needs each level's standard deviation and the number of "
                    "observations; this result has "
                    + ("no sd" if self.sd is None else "no n")
                    + ". Pass sd= (and n=) to tukey_hsd, or use kind='tukey' or 'anova'."
                )
            n = np.broadcast_to(np.asarray(self.n, dtype=float), m.shape)
            sd = self.sd.reindex(self.means.index).to_numpy(dtype=float)
            half = stdtrit(n - 1, 1 - self.alpha / 2) * sd / np.sqrt(n)
        else:
            raise DataFormatError(
                f"unknown interval kind {kind!r}; use 'tukey', 'anova' or 'sem'."
            )
        half = np.broadcast_to(half, m.shape).astype(float)
        out = pd.DataFrame(
            {"mean": m, "lower": m - half, "upper": m + half, "halfwidth": half},
            index=self.means.index.copy(),
        )
        return out

    def _se_mean(self) -> np.ndarray:
        k = self.k
        off = ~np.eye(k, dtype=bool)
        return (self.se_diff * off).sum(axis=1) / (k - 1) / math.sqrt(2.0)

    # -- display ------------------------------------------------------------------------------
    def _display_title(self) -> str:
        return (
            f"Tukey HSD on {self.factor}: {self.k} levels, {self.n_pairs} pairs, "
            f"{self.n_significant} significant at alpha = {self.alpha:g} "
            f"(Q = {format_number(self.critical_value)}, df = {format_number(self.df_error)})"
        )

    def _summary_table(self) -> pd.DataFrame:
        """The headline numbers as a one-column DataFrame (the first display table)."""
        rows = {
            "levels": self.k,
            "pairs": self.n_pairs,
            "significant pairs": self.n_significant,
            "not significant pairs": self.n_not_significant,
            "critical value Q": self.critical_value,
            "error df": self.df_error,
            "alpha": self.alpha,
            "means compared": self.means_kind,
            "best": self.best,
            "top group size": len(self.top_group),
        }
        if self.df_pairs is not None:
            rows["error df"] = (f"per pair, {format_number(float(np.min(self.df_pairs)))} to "
                                f"{format_number(float(np.max(self.df_pairs)))}")
        if self.ms_error is not None:
            rows["MS error"] = self.ms_error
        return pd.DataFrame({"value": pd.Series(rows, dtype=object)})

    def _display_tables(self) -> Sequence[tuple[str, pd.DataFrame]]:
        means = pd.DataFrame(
            {
                "mean": self.means,
                "letters": self.letters,
                "top group": [str(lv) in set(self.top_group) for lv in self.means.index],
            }
        )
        means = means.iloc[_order_desc(self.means.to_numpy())]
        tables: list[tuple[str, pd.DataFrame]] = [
            ("Summary", self._summary_table()),
            ("Means (descending)", means),
        ]
        if self.n_pairs <= 45:
            shown = self.pairs.copy()
            # labelled as the numbers read: diff = a - b (R's TukeyHSD labels "b-a" and
            # negates diff and the interval; a label "b-a" beside a - b had the wrong sign)
            shown.index = [f"{a}-{b}" for a, b in zip(shown["a"], shown["b"])]
            tables.append(("Pairs", shown.drop(columns=["a", "b"])))
        return tables

    def to_frame(self) -> pd.DataFrame:
        """:attr:`pairs` (one row per pair of levels), a copy."""
        return self.pairs.copy()

    def __repr__(self) -> str:
        return (
            f"<TukeyResult {self.factor}: {self.k} levels, {self.n_significant}/{self.n_pairs} "
            f"pairs significant at alpha={self.alpha:g}, top group of {len(self.top_group)}>"
        )


def _pair_indices(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a, b) of R's TukeyHSD pair order: for a in 0..k-1, b in a+1..k-1."""
    a, b = np.triu_indices(k, 1)
    return a, b


@functools.lru_cache(maxsize=256)
def _critical_value(alpha: float, k: int, df: float) -> float:
    """``Q(alpha; k, df)``, cached: a study runs Tukey thousands of times on one design."""
    return float(qtukey(1.0 - alpha, k, df))


def _order_desc(values: np.ndarray) -> np.ndarray:
    return np.argsort(-values, kind="stable")


def check_alpha(alpha: object) -> float:
    """``alpha`` as a float in (0, 1) (numpy scalars too; not a bool, a string or NaN); the
    multiple-comparison functions raise :class:`~irmodels.errors.ArgumentError` for a bad one."""
    return check_probability(alpha, "alpha")


#: Error variance below this share of the variance of the means compared counts as zero.
#: Rounding alone leaves a residual mean square of order (2.2e-16 * scale)^2 ~ 1e-32 * scale^2
#: when the scores are a perfect fit of the model, while any real error variance is many orders
#: above 1e-12 * Var(means) (at 1e-12 a difference of one SD of the means would be a million
#: standard errors away from 0). Between the two, the tolerance separates "no error at all"
#: from "little error" with room to spare on both sides.
_ZERO_ERROR_RTOL = 1e-12


def check_error_variance(var_diff: np.ndarray, means: np.ndarray) -> None:
    """Refuse an error term that is zero: every difference would be "significant".

    ``var_diff`` holds the error variances of the differences compared (``se^2``), ``means``
    the means. The error term is zero when even the largest of them is 0 or at most
    :data:`_ZERO_ERROR_RTOL` times the variance of the means (scale-free: both are variances of
    the same scores); then the statistics are infinite or rounding noise.
    """
    v = float(np.max(var_diff)) if np.size(var_diff) else 0.0
    spread = float(np.var(means)) if np.size(means) > 1 else 0.0
    if v > 0 and v > _ZERO_ERROR_RTOL * spread:
        return
    raise DesignError(
        f"the residual variance is zero (largest error variance of a difference {v:.3g}, 0 or "
        f"rounding noise against a variance of the {np.size(means)} means of {spread:.3g}): "
        "every difference would be 'significant'; the scores are a perfect fit of the model "
        "(for instance every system scores its topic's score plus a constant), so there is no "
        "error to test the differences against. Check the data for systems that are copies "
        "of each other, or fit a model with fewer terms."
    )


def tukey_hsd(
    means: pd.Series | Mapping[str, float] | Sequence[float] | np.ndarray,
    *,
    df_error: float,
    ms_error: float | None = None,
    n: float | Sequence[float] | np.ndarray | None = None,
    se_diff: float | np.ndarray | pd.DataFrame | None = None,
    alpha: float = 0.05,
    sd: pd.Series | Mapping[str, float] | Sequence[float] | np.ndarray | None = None,
    factor: str = "system",
    means_kind: str = "given",
) -> TukeyResult:
    """Tukey's HSD for all pairs of means, on a fitted model's error term.

    Parameters
    ----------
    means : Series, mapping or array
        Marginal mean of each level; the index (keys) names the levels, in the factor's order.
    df_error : float or array
        Degrees of freedom of the model's error term; or one value per pair (in ``pairs``
        order), as emmeans does for mixed models (Satterthwaite df of each contrast).
    ms_error : float, optional
        The model's error mean square; with ``n``, the standard error of a mean is
        ``sqrt(MS_error / n)``.
    n : float or array, optional
        Observations behind each mean (``T * S`` for systems; per level for Tukey-Kramer).
    se_diff : float or (k, k) array, optional
        Standard error of each difference of means, when the model provides it (mixed
        models); used instead of ``ms_error`` and ``n``: ``q = sqrt(2) |diff| / se_diff``.
    alpha : float, default 0.05
        Family-wise significance level.
    sd : Series, mapping or array, optional
        Standard deviation of each level's observations, for ``intervals(kind="sem")``.
    factor : str, default "system"
        Name of the factor (for display).
    means_kind : str, default "given"
        Which means these are (shown in ``summary()``), e.g. ``"marginal (least-squares)"``.

    Returns
    -------
    TukeyResult
        ``pairs`` has the columns ``a, b, diff, q, p_adj, lower, upper, reject`` (see
        :class:`TukeyResult`), plus ``critical_value``, ``top_group``, ``letters``,
        ``n_significant``, ``n_pairs`` and ``intervals()``.

    Raises
    ------
    DataFormatError
        Missing, non-numeric or non-finite means, a bad ``alpha``, ``ms_error`` or ``n``,
        inconsistent shapes.
    DesignError
        Neither (``ms_error``, ``n``) nor ``se_diff`` given, fewer than 2 levels, or an error
        variance of zero (a perfect fit: ``ms_error = 0``, or one at rounding level, at most
        1e-12 times the variance of the means), which would make every difference
        "significant".

    Notes
    -----
    Systems ``u`` and ``v`` differ when ``|m_u - m_v| / sqrt(MS_error / n) > Q(alpha; k,
    df_error)`` (Ferro & Sanderson, SIGIR 2019, section 3; docs/methods.md: "Multiple comparisons"). The adjusted
    p-value is ``P[Q_{k, df_error} >= q]`` from :func:`irmodels.ptukey`, and the simultaneous
    interval of a difference is ``diff +- Q / sqrt(2) * SE_diff``, ``SE_diff = sqrt(2 MS_error /
    n)`` (Tukey-Kramer ``sqrt(MS_error (1/n_a + 1/n_b))`` when ``n`` varies). With the error
    term of ``aov(score ~ topic + system)`` this is exactly R's ``TukeyHSD(..., "system")``,
    including its pair order (R's row ``"b-a"`` is the pair ``(a, b)``); the sign is the
    package's one convention, first minus second (``diff = m_a - m_b``, the negation of R's).

    Examples
    --------
    >>> import irmodels as irm
    >>> hsd = irm.tukey_hsd({"bm25": 0.30, "lm": 0.28, "tfidf": 0.21}, df_error=98,
    ...                     ms_error=0.012, n=50)
    >>> hsd.pairs.round(4)
          a      b  diff       q   p_adj   lower   upper  reject
    0  bm25     lm  0.02  1.2910  0.6335 -0.0321  0.0721   False
    1  bm25  tfidf  0.09  5.8095  0.0002  0.0379  0.1421    True
    2    lm  tfidf  0.07  4.5185  0.0053  0.0179  0.1221    True
    >>> hsd.top_group, round(hsd.critical_value, 4)
    (['bm25', 'lm'], 3.3656)
    >>> hsd.letters.tolist()
    ['a', 'a', 'b']
    """
    mean_s = _as_series(means, "means")
    k = len(mean_s)
    if k < 2:
        raise DesignError(
            f"Tukey's HSD compares at least 2 levels; {factor} has {k}. "
            "Check that the factor varies in the data."
        )
    alpha = check_alpha(alpha)
    ia, ib = _pair_indices(k)
    df_pairs: np.ndarray | None = None
    if np.ndim(df_error) == 1:
        df_pairs = np.asarray(df_error, dtype=float)
        if df_pairs.shape != (len(ia),) or not (np.isfinite(df_pairs).all() and (df_pairs > 0).all()):
            raise DataFormatError(
                f"df_error per pair must hold {len(ia)} positive numbers (one per pair); got "
                f"shape {df_pairs.shape}."
            )
        df_error = float(df_pairs.min())
        if np.all(df_pairs == df_pairs[0]):
            df_pairs = None
    if not isinstance(df_error, (int, float, np.integer, np.floating)) or np.isnan(df_error):
        raise DataFormatError(f"df_error must be a number; got {df_error!r}.")
    m = mean_s.to_numpy(dtype=float)
    se = _se_matrix(k, ms_error, n, se_diff)
    diff = m[ia] - m[ib]  # first minus second, as irm.pairwise and irm.compare
    se_pair = se[ia, ib]
    check_error_variance(se_pair**2, m)
    if not (se_pair > 0).all():
        raise DataFormatError("se_diff must be positive and finite for every pair.")
    qstat = math.sqrt(2.0) * np.abs(diff) / se_pair
    df_used = df_error if df_pairs is None else df_pairs
    p_adj = ptukey(qstat, k, df_used, lower_tail=False)
    crit = _critical_value(alpha, k, float(df_error))
    crit_pair = crit if df_pairs is None else qtukey(1.0 - alpha, k, df_pairs)
    half = crit_pair / math.sqrt(2.0) * se_pair
    levels = pd.CategoricalDtype([str(x) for x in mean_s.index], ordered=False)
    pairs = pd.DataFrame(
        {  # labels from the integer pair indices: no string lookups (k = 1000: 500k pairs)
            "a": pd.Categorical.from_codes(ia, dtype=levels),
            "b": pd.Categorical.from_codes(ib, dtype=levels),
            "diff": diff,
            "q": qstat,
            "p_adj": p_adj,
            "lower": diff - half,
            "upper": diff + half,
            "reject": p_adj < alpha,
        }
    )
    if df_pairs is not None:
        pairs.insert(4, "df", df_pairs)
    mean_s = pd.Series(m, index=pd.Index([str(x) for x in mean_s.index], name=factor), name="mean")
    sd_s = None
    if sd is not None:
        sd_s = _as_series(sd, "sd")
        if len(sd_s) != k:
            raise DataFormatError(f"sd has {len(sd_s)} values for {k} means; give one per level.")
        if isinstance(sd, (pd.Series, Mapping)):
            sd_s.index = [str(x) for x in sd_s.index]
            missing = set(mean_s.index) - set(sd_s.index)
            if missing:
                raise DataFormatError(
                    f"sd has no value for level(s) {sorted(missing)[:5]}; index it like means."
                )
            sd_s = sd_s.reindex(mean_s.index)
        else:
            sd_s.index = mean_s.index
        sd_s = sd_s.rename("sd")
    n_out: float | np.ndarray | None
    if n is None:
        n_out = None
    elif np.ndim(n) == 0:
        n_out = float(n)  # type: ignore[arg-type]
    else:
        n_out = np.asarray(n, dtype=float)
    return TukeyResult(
        factor=factor,
        means=mean_s,
        pairs=pairs,
        critical_value=crit,
        alpha=float(alpha),
        df_error=float(df_error),
        ms_error=None if ms_error is None else float(ms_error),
        n=n_out,
        se_diff=se,
        sd=sd_s,
        means_kind=str(means_kind),
        df_pairs=df_pairs,
    )


def _as_series(values: object, what: str) -> pd.Series:
    try:
        if isinstance(values, pd.Series):
            s = values.astype(float)
        elif isinstance(values, Mapping):
            s = pd.Series({str(k_): float(v) for k_, v in values.items()}, dtype=float)
        else:
            arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{what} must be numbers, one per level; {exc}.") from None
    if not isinstance(values, (pd.Series, Mapping)):
        if arr.ndim != 1:
            raise DataFormatError(f"{what} must be one-dimensional; got shape {arr.shape}.")
        s = pd.Series(arr, index=[str(i + 1) for i in range(len(arr))])
    if not np.isfinite(s.to_numpy()).all():
        bad = s.index[~np.isfinite(s.to_numpy())][:3].tolist()
        raise DataFormatError(
            f"{what} has missing or infinite values (levels {bad}); every level needs a value."
        )
    if s.index.has_duplicates:
        raise DataFormatError(f"{what} repeats level(s) {s.index[s.index.duplicated()][:3].tolist()}.")
    return s


def _se_matrix(k: int, ms_error: object, n: object, se_diff: object) -> np.ndarray:
    """Standard errors of all differences of means as a ``k x k`` matrix."""
    if se_diff is not None:
        if ms_error is not None:
            raise DesignError(
                "give either ms_error (with n) or se_diff, not both; se_diff already contains "
                "the error term."
            )
        arr = np.asarray(se_diff, dtype=float)
        if arr.ndim == 0:
            se = np.full((k, k), float(arr))
        elif arr.shape == (k, k):
            se = arr.copy()
        else:
            raise DataFormatError(
                f"se_diff must be a number or a {k} x {k} matrix; got shape {arr.shape}."
            )
        off = ~np.eye(k, dtype=bool)
        if not (np.isfinite(se[off]).all() and (se[off] >= 0).all()):  # 0: see tukey_hsd
            raise DataFormatError("se_diff must be positive and finite for every pair.")
        return se
    if ms_error is None or n is None:
        raise DesignError(
            "Tukey's HSD needs the model's error term: pass ms_error= and n= (observations per "
            "mean), or se_diff=. Fitted models do this for you: irm.anova(...).tukey()."
        )
    try:
        ms = float(ms_error)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        ms = float("nan")
    if not (np.isfinite(ms) and ms >= 0):  # 0: refused by tukey_hsd with the reason
        raise DataFormatError(f"ms_error must be a finite number >= 0; got {ms_error!r}.")
    try:
        n_arr = np.asarray(n, dtype=float)
    except (TypeError, ValueError):
        n_arr = np.full(k, np.nan)
    if n_arr.ndim == 0:
        n_arr = np.full(k, float(n_arr))
    if n_arr.shape != (k,):
        raise DataFormatError(
            f"n must be one number or one per level ({k} levels); got {np.size(n_arr)} "
            f"value(s): {n!r}."
        )
    if not (np.isfinite(n_arr).all() and (n_arr > 0).all()):
        raise DataFormatError(f"n must be positive and finite; got {n!r}.")
    return np.sqrt(ms * (1.0 / n_arr[:, None] + 1.0 / n_arr[None, :]))


def compact_letters(means: pd.Series, different: np.ndarray) -> pd.Series:
    """Compact letter display by Piepho's (2004) insert-absorb algorithm.

    Parameters
    ----------
    means : Series
        Mean per level (levels as index); letters are assigned from the highest mean down, so
        ``a`` marks the best level's group.
    different : (k, k) bool array
        ``different[i, j]`` when levels ``i`` and ``j`` differ significantly.

    Returns
    -------
    Series
        Letters per level, in the order of ``means``. Two levels share a letter exactly when
        they are not significantly different. Up to 52 groups use ``a-z`` then ``A-Z`` with no
        separator; more groups use ``a1, a2, ...`` joined by ``.``.

    Notes
    -----
    Piepho, H.-P. (2004). An algorithm for a letter-based representation of all-pairwise
    comparisons. *Journal of Computational and Graphical Statistics* 13(2), 456-466.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> d = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    >>> compact_letters(pd.Series([3.0, 2.0, 1.0], index=["x", "y", "z"]), d).tolist()
    ['a', 'ab', 'b']
    """
    k = len(means)
    diff = np.asarray(different, dtype=bool)
    order = _order_desc(means.to_numpy(dtype=float))
    pos = np.empty(k, dtype=np.int64)
    pos[order] = np.arange(k)
    # work in rank space (level order[r] is rank r); a column is a bit mask of ranks
    d = diff[np.ix_(order, order)]
    cols: list[int] = [(1 << k) - 1]
    ri, rj = np.nonzero(np.triu(d, 1))
    for i, j in zip(ri.tolist(), rj.tolist()):
        both = (1 << i) | (1 << j)
        hit = [c for c in cols if c & both == both]
        if not hit:
            continue
        kept = [c for c in cols if c & both != both]
        # insert: split every column holding both levels; absorb: drop columns contained in
        # another (old columns cannot be contained in the new, smaller ones)
        new = [c & ~(1 << i) for c in hit] + [c & ~(1 << j) for c in hit]
        for pos_new, c in enumerate(new):
            if any(c | o == o for o in kept):
                continue
            if any(c | o == o and o != c for o in new[pos_new + 1 :]):
                continue
            kept.append(c)
        cols = kept
    # order the letters by the best level each column contains, then the next ones
    def _key(c: int) -> tuple[int, ...]:
        return tuple(r for r in range(k) if c >> r & 1)

    cols.sort(key=_key)
    names = _letter_names(len(cols))
    sep = "" if len(cols) <= 52 else "."
    out = []
    for lv in range(k):
        r = int(pos[lv])
        out.append(sep.join(names[c] for c, col in enumerate(cols) if col >> r & 1))
    return pd.Series(out, index=means.index.copy(), name="letters", dtype=object)


def _letter_names(n: int) -> list[str]:
    alphabet = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [
        chr(c) for c in range(ord("A"), ord("Z") + 1)
    ]
    if n <= len(alphabet):
        return alphabet[:n]
    return [f"{alphabet[i % 26]}{i // 26 + 1}" for i in range(n)]
