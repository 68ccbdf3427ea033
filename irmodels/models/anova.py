"""Crossed fixed-effects ANOVA: ``irm.anova(model, data)`` -> :class:`AnovaResult`.

Balanced crossed designs (every combination of the model's factors observed equally often) are
solved in closed form from cell means in one pass over the data (:mod:`._balanced`); unbalanced
designs or designs with empty cells by least squares with type I, II or III sums of squares
(:mod:`._lsq`). References: docs/methods.md: "Crossed ANOVA models", "Multiple comparisons", "Variance components"; Ferro & Sanderson (SIGIR 2019).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irmodels._threads import LARGE, kernel_threads
from irmodels.data.frame import check_distinct_rows, check_rows
from irmodels.errors import (
    DesignError,
    IRModelsWarning,
    NegativeVarianceWarning,
    UnbalancedDesignWarning,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design
from irmodels.models._anova_fit import (
    MAX_DENSE_CELLS,
    TINY_WORK,
    cell_groups,
    check_arguments,
    check_method,
    check_spec,
    drop_missing,
    encode_factors,
    fit_closed,
    fit_lsq,
    missing_margins,
    refuse_pooled,
    response,
    table_axes,
)
from irmodels.models._anova_table import (
    SHOWN_COLUMNS,
    TABLE_COLUMNS,
    TABLE_TITLE,
    anova_title,
    clip_omega,
    ems_components,
    table_values,
    without_rounding_noise,
)
from irmodels.models.base import FittedModel, OptSummary

if TYPE_CHECKING:
    from irmodels.models._glm import GlmResult

__all__ = ["MAX_DENSE_CELLS", "TABLE_COLUMNS", "AnovaResult", "anova"]


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True, repr=False, eq=False)
class AnovaResult(FittedModel):
    """A fitted crossed ANOVA (see :func:`anova`).

    Attributes
    ----------
    spec : ModelSpec
        The model that was fitted.
    data : DataFrame
        The data it was fitted to (not copied).
    n_obs : int
        Number of observations ``N``.
    balanced : bool
        Whether every combination of the model's factors has the same number of rows.
    method : str
        ``"balanced"`` (closed form) or ``"lstsq-type1"``, ``"lstsq-type2"``, ``"lstsq-type3"``.
    ss_type : int
        Type of the sums of squares (1, 2 or 3; on a balanced design all types coincide).
    table : DataFrame
        Index: term names in model order, then ``Residual``. Columns:

        - ``SS``: sum of squares;
        - ``df``: degrees of freedom;
        - ``MS``: mean square ``SS / df``;
        - ``F``: ``MS / MS_error`` (NaN on ``Residual``);
        - ``p``: upper tail probability of ``F`` (NaN on ``Residual``);
        - ``eta2``: ``SS / SS_total`` (``SS_total`` is the sum of the column ``SS``);
        - ``eta2_partial``: ``SS / (SS + SS_error)``;
        - ``omega2_partial``: ``df (F - 1) / (df (F - 1) + N)``, negative values set to 0
          (the terms concerned are listed in :attr:`omega2_clipped`);
        - ``cohen_f2``: ``SS / SS_error``;
        - ``power``: power of the F test at ``alpha`` with noncentrality ``cohen_f2 * N``.
    df_resid : int
        Residual degrees of freedom.
    ms_error : float
        Residual mean square.
    grand_mean : float
        Mean of the response.
    alpha : float
        Level used for ``power``.
    omega2_clipped : tuple of str
        Terms whose partial omega squared was negative and is shown as 0.
    hierarchical : bool
        Whether every interaction has all its marginal terms in the model (if not, the fit is
        sequential least squares, type I, as R's ``anova(lm())``).

    Examples
    --------
    Five topics, four systems, three shards, model MD3 (the shards are replicates):

    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(7)
    >>> d = pd.MultiIndex.from_product(
    ...     [["t1", "t2", "t3", "t4", "t5"], ["s1", "s2", "s3", "s4"], ["k1", "k2", "k3"]],
    ...     names=["topic", "system", "shard"]).to_frame(index=False)
    >>> t = d["topic"].str[1:].astype(int).to_numpy() - 1
    >>> s = d["system"].str[1:].astype(int).to_numpy() - 1
    >>> d["score"] = (0.3 + rng.normal(0, 0.15, 5)[t] + np.array([0, 0.05, 0.1, 0.2])[s]
    ...               + rng.normal(0, 0.05, (5, 4))[t, s] + rng.normal(0, 0.03, len(d))).round(3)
    >>> fit = irm.anova("MD3", irm.frame(d))
    >>> fit
    <AnovaResult score ~ topic + system + topic:system, n_obs=60, method='balanced', df_resid=40, ms_error=0.00078415>
    >>> fit.table[["SS", "df", "F"]].round(4)
                      SS    df         F
    topic         0.4440   4.0  141.5624
    system        0.3659   3.0  155.5580
    topic:system  0.0496  12.0    5.2668
    Residual      0.0314  40.0       NaN
    >>> fit.marginal_means("system").round(4).tolist()
    [0.2256, 0.2783, 0.3716, 0.4258]
    >>> fit.n_per_level("system"), fit.n_per_level("topic:system")
    (15.0, 3.0)
    >>> fit.variance_components().round(5)
                  variance       sd    share
    component
    topic          0.00891  0.09437  0.47723
    system         0.00786  0.08864  0.42099
    topic:system   0.00112  0.03340  0.05976
    Residual       0.00078  0.02800  0.04202
    >>> hsd = fit.tukey("system")
    >>> hsd.n_significant, list(hsd.top_group)
    (6, ['s4'])
    """

    spec: ModelSpec
    data: pd.DataFrame = field(repr=False)
    n_obs: int
    balanced: bool
    method: str
    ss_type: int
    table: pd.DataFrame = field(repr=False)
    df_resid: int
    ms_error: float
    grand_mean: float
    alpha: float
    omega2_clipped: tuple[str, ...]
    hierarchical: bool
    _y: np.ndarray = field(repr=False)
    _fitted: np.ndarray | tuple[np.ndarray, tuple[str, ...]] = field(repr=False)
    _codes: dict[str, np.ndarray] = field(repr=False)
    _levels: dict[str, pd.Index] = field(repr=False)
    _replicates: int | None = field(repr=False)
    #: rows left out by ``missing="drop"`` (a missing value in a column the model uses)
    n_dropped: int = 0
    #: terms left out of the table by ``aliased="drop"`` (no degree of freedom: R's NA
    #: coefficients)
    aliased_terms: tuple[str, ...] = ()
    #: the options of irm.anova that refit() passes again (ss_type, alpha, method, ...)
    _options: dict[str, Any] = field(default_factory=dict, repr=False)

    _means_kind = "marginal (least-squares)"

    def _refit_to(self, data: pd.DataFrame) -> AnovaResult:
        return anova(self.spec, data, **self._options)  # type: ignore[return-value]

    # ---- arrays aligned with the data rows
    def fitted(self) -> np.ndarray:
        """Fitted values, one per data row (in data order).

        Computed on demand: a balanced fit keeps only the fitted value of each cell. (A method
        since the fit vocabulary of :class:`~irmodels.models.base.FittedModel`; it was a
        property.)
        """
        f = self._fitted
        if isinstance(f, tuple):  # (fitted value per cell, factors of the cells)
            cells, factors = f
            codes = [self._codes[x] for x in factors]
            shape = tuple(len(self._levels[x]) for x in factors)
            flat = np.ravel_multi_index(codes, shape) if len(codes) > 1 else codes[0]
            return cells[flat]
        return f.copy()

    def residuals(self) -> np.ndarray:
        """Residuals ``y - fitted()``, one per data row (in data order), computed on demand
        (a method, as on every :class:`~irmodels.models.base.FittedModel`; it was a property)."""
        return self._y - self.fitted()

    @property
    def nobs(self) -> int:
        """Number of observations (:attr:`n_obs`)."""
        return self.n_obs

    @property
    def df_model(self) -> float:
        """Model degrees of freedom: the sum of the terms' df (``N - 1 - df_resid`` with an
        intercept)."""
        return float(self.table["df"].drop("Residual").sum())

    @property
    def opt_summary(self) -> OptSummary:
        """``method="closed form"`` for a balanced fit, ``"least squares"`` otherwise (no
        iterations, always converged, no boundary)."""
        return OptSummary(method="closed form" if self.method == "balanced" else "least squares")

    @property
    def notes(self) -> tuple[str, ...]:
        """The fit's caveats: an unbalanced design, a non-hierarchical model, clipped partial
        omega squared."""
        out = []
        if not self.balanced:
            out.append(f"unbalanced design: type {self.ss_type} sums of squares by least squares "
                       "(the marginal means are least-squares means).")
        if not self.hierarchical:
            out.append("a term's marginal terms are missing from the model: sequential "
                       "(type I) sums of squares.")
        if self.omega2_clipped:
            out.append("partial omega squared was negative and is shown as 0 for "
                       f"{', '.join(self.omega2_clipped)}.")
        if self.n_dropped:
            out.append(f"{self.n_dropped} row(s) with a missing value in a column the model uses "
                       "were dropped (missing='drop').")
        if self.aliased_terms:
            out.append(f"aliased term(s) {', '.join(self.aliased_terms)}: no degree of freedom "
                       "left (R's NA coefficients), left out of the table (aliased='drop').")
        return tuple(out)

    def contrast_df(self, L: np.ndarray, factor: str | Sequence[str] = "system") -> np.ndarray:
        """Degrees of freedom of contrasts of :meth:`marginal_means`: :attr:`df_resid` for
        every row of ``L`` (the error term of a fixed-effects model)."""
        self._factor_list(factor)
        return np.full(np.atleast_2d(np.asarray(L, dtype=float)).shape[0], float(self.df_resid))

    def _factor_label(self, factor: str | Sequence[str]) -> str:
        return ":".join(self._factor_list(factor))

    @property
    def factors(self) -> tuple[str, ...]:
        """The model's factors, in order of first appearance."""
        return tuple(self._codes)

    @property
    def levels(self) -> dict[str, int]:
        """Number of levels of each factor."""
        return {f: len(v) for f, v in self._levels.items()}

    # ---- marginal means
    def _factor_list(self, factor: str | Sequence[str]) -> list[str]:
        names = factor.split(":") if isinstance(factor, str) else list(factor)
        unknown = [f for f in names if f not in self._codes]
        if unknown or not names:
            raise DesignError(
                f"no factor {':'.join(unknown) or factor!r} in the model "
                f"({self.spec!s}); use one of {', '.join(self._codes)} or an interaction "
                "of them like 'topic:system'."
            )
        repeated = sorted({f for f in names if names.count(f) > 1})
        if repeated:
            raise DesignError(
                f"{':'.join(names)} names {', '.join(map(repr, repeated))} more than once; an "
                "interaction crosses different factors (e.g. 'topic:system')."
            )
        return names

    def _group(self, names: list[str]) -> tuple[np.ndarray, tuple[int, ...]]:
        shape = tuple(len(self._levels[f]) for f in names)
        codes = [self._codes[f] for f in names]
        flat = np.ravel_multi_index(codes, shape) if len(codes) > 1 else codes[0]
        return flat, shape

    def _ls(self, names: list[str]):
        """Least-squares means of ``names`` (see :mod:`irmodels.models._lsmeans`)."""
        # here, not at import: _lsmeans loads scipy.linalg (about 0.1 s of a fresh process, the
        # CLI's too), which a fit whose least-squares means are not asked for never needs
        from irmodels.models._lsmeans import ls_means

        terms = list(self.spec.fixed)
        covariates = tuple(getattr(self.spec, "covariates", ()))
        values = {f: _design.covariate_values(self.data, f) for f in covariates}
        return ls_means(
            self._y, terms, self._codes, self.levels, names, self.ms_error,
            full_cells=frozenset(missing_margins(self.spec)), values=values or None,
        )

    @property
    def _closed_means(self) -> bool:
        """Balanced factor model: the LS means are the raw means, with covariance MS_e/n I."""
        return bool(self.balanced and not getattr(self.spec, "covariates", ()))

    def _index(self, names: list[str]) -> pd.Index:
        if len(names) == 1:
            return pd.Index(self._levels[names[0]], name=names[0])
        return pd.MultiIndex.from_product([self._levels[f] for f in names], names=names)

    def marginal_means(
        self, factor: str | Sequence[str] = "system", kind: Literal["ls", "raw"] = "ls"
    ) -> pd.Series:
        """Mean response per level of ``factor`` (a factor or an interaction like ``topic:system``).

        Parameters
        ----------
        factor : str or sequence of str
            A factor of the model, or an interaction of factors (``"topic:system"``).
        kind : {"ls", "raw"}
            ``"ls"`` (default): least-squares (estimated marginal) means, as R's ``emmeans`` on
            the ``lm`` fit: the model's prediction in every combination of the levels of the
            model's factors, averaged with equal weights over the other factors. ``"raw"``: the
            observed mean of the rows of each level. On a balanced design the two coincide
            (and the closed form is used); on an unbalanced one (missing cells, unequal
            replication) only the least-squares means remove the other factors' effects.

        Returns
        -------
        Series
            Indexed by level (a MultiIndex for an interaction), named ``mean``. Raw means leave
            out levels without any row; least-squares means cover every level combination
            (predictions of an additive model in empty cells included).

        Raises
        ------
        DesignError
            A least-squares mean that the model cannot estimate (an empty cell in a model with
            the interaction that involves it: emmeans reports ``NA``).

        Examples
        --------
        Two systems on three topics, one score missing: the raw mean of ``b`` lacks the hard
        topic ``t3``, the least-squares mean accounts for it.

        >>> import pandas as pd, irmodels as irm
        >>> d = pd.DataFrame({"topic": ["t1", "t2", "t3", "t1", "t2", "t1", "t2", "t3"],
        ...                   "system": ["a", "a", "a", "b", "b", "c", "c", "c"],
        ...                   "score": [0.5, 0.6, 0.1, 0.7, 0.8, 0.4, 0.5, 0.05]})
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", irm.errors.UnbalancedDesignWarning)
        ...     fit = irm.anova("score ~ topic + system", d)
        >>> fit.marginal_means("system", kind="raw").round(4).tolist()
        [0.4, 0.75, 0.3167]
        >>> fit.marginal_means("system").round(4).tolist()  # R: emmeans(lm(...), ~ system)
        [0.4, 0.6083, 0.3167]
        """
        names = self._factor_list(factor)
        if kind not in ("ls", "raw"):
            raise DesignError(f"kind must be 'ls' or 'raw'; got {kind!r}.")
        if kind == "ls" and not self._closed_means:
            return self._means_and_cov(names)[0]
        flat, shape = self._group(names)
        size = int(np.prod(shape))
        counts = np.bincount(flat, minlength=size)
        sums = np.bincount(flat, weights=self._y, minlength=size)
        keep = counts > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / counts
        return pd.Series(means, index=self._index(names), name="mean")[keep]

    def marginal_means_cov(self, factor: str | Sequence[str] = "system") -> pd.DataFrame:
        """Covariance matrix of the least-squares means of ``factor`` (``MS_error``-scaled).

        ``sigma^2 L (X'X)^- L'`` with ``L`` the rows of :meth:`marginal_means`; on a balanced
        design of a single factor it is ``MS_error / n`` on the diagonal and 0 elsewhere for
        every factor of an additive model. Indexed like :meth:`marginal_means`.
        """
        names = self._factor_list(factor)
        cov = self._means_and_cov(names)[1]
        idx = self._index(names)
        return pd.DataFrame(cov, index=idx, columns=idx)

    def _means_and_cov(self, names: list[str]) -> tuple[pd.Series, np.ndarray]:
        """The least-squares means of ``names`` and their covariance, from one solve (the
        closed form ``MS_error / n`` on the diagonal for a balanced factor model); a mean that
        is not estimable raises :class:`DesignError`."""
        if self._closed_means:
            means = self.marginal_means(names)
            return means, np.eye(len(means)) * (self.ms_error / self.n_per_level(names))
        lsm = self._ls(names)
        if not lsm.estimable.all():
            idx = self._index(names)[~lsm.estimable]
            more = ", ..." if (~lsm.estimable).sum() > 5 else ""
            shown = ", ".join(map(str, idx[:5])) + more
            raise DesignError(
                f"the least-squares mean of {int((~lsm.estimable).sum())} level(s) of "
                f"{':'.join(names)} ({shown}) is not estimable under {self.spec}: empty "
                "cells of an interaction in the model leave it undetermined (emmeans "
                "reports NA). Fit a model without that interaction, fill the empty cells "
                "(irm.balance), or use kind='raw'."
            )
        return pd.Series(lsm.means, index=self._index(names), name="mean"), lsm.cov

    def n_per_level(self, factor: str | Sequence[str] = "system") -> float:
        """Observations behind each marginal mean of ``factor`` (``T*S`` for ``system``).

        Balanced: ``N / (levels of factor)``. Unbalanced: the harmonic mean of the rows per
        level (the Tukey-Kramer approximation of a common ``n``; :meth:`tukey` uses the
        model's standard errors instead).
        """
        names = self._factor_list(factor)
        flat, shape = self._group(names)
        counts = np.bincount(flat, minlength=int(np.prod(shape)))
        counts = counts[counts > 0]
        if counts.min() == counts.max():
            return float(counts[0])
        return float(len(counts) / np.sum(1.0 / counts))

    def level_sd(self, factor: str | Sequence[str] = "system") -> pd.Series:
        """Sample standard deviation (divisor ``n - 1``) of the response per level of ``factor``."""
        names = self._factor_list(factor)
        flat, shape = self._group(names)
        size = int(np.prod(shape))
        counts = np.bincount(flat, minlength=size)
        means = np.bincount(flat, weights=self._y, minlength=size) / np.maximum(counts, 1)
        dev = self._y - means[flat]
        ss = np.bincount(flat, weights=dev * dev, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            sd = np.sqrt(ss / (counts - 1))
        mm = self.marginal_means(factor, kind="raw")
        return pd.Series(sd[counts > 0], index=mm.index, name="sd")

    # ---- inference (tukey() and dunnett() are FittedModel's)
    def _tukey_inputs(self, factor: str | Sequence[str], df: str) -> dict[str, Any]:
        """Tukey HSD with this model's error term (see :meth:`FittedModel.tukey`).

        Balanced design: ``q = |m_u - m_v| / sqrt(MS_error / n)`` with ``n`` =
        :meth:`n_per_level` and ``df_resid`` degrees of freedom (Ferro & Sanderson 2019), R's
        ``TukeyHSD(aov(...))``. Unbalanced design (missing cells, unequal replication): the
        least-squares means of :meth:`marginal_means` are compared, each difference with its
        own standard error from the model's covariance (Tukey-Kramer), which is R's
        ``emmeans(lm(...), pairwise ~ factor, adjust = "tukey")``. The per-level SD of the
        response is passed on for the SEM intervals. A least-squares mean that is not
        estimable raises :class:`DesignError` (see :meth:`marginal_means`).
        """
        names = self._factor_list(factor)
        flat, shape = self._group(names)
        counts = np.bincount(flat, minlength=int(np.prod(shape)))
        if self._closed_means:
            return {"means": self.marginal_means(factor), "df_error": self.df_resid,
                    "ms_error": self.ms_error, "n": self.n_per_level(factor),
                    "sd": self.level_sd(factor)}
        means, cov = self._means_and_cov(names)
        v = np.diag(cov)
        se = np.sqrt(np.maximum(v[:, None] + v[None, :] - 2.0 * cov, 0.0))
        np.fill_diagonal(se, 0.0)
        sd = self.level_sd(factor)
        # SEM intervals need every level observed with at least two rows
        sem_ok = bool((counts > 0).all() and np.isfinite(sd.to_numpy()).all())
        return {"means": means, "df_error": self.df_resid, "se_diff": se,
                "n": counts.astype(float) if sem_ok else None, "sd": sd if sem_ok else None}

    def variance_components(self) -> pd.DataFrame:
        """Random-effects reading of a balanced model by expected mean squares.

        Every term is read as a random effect and the residual as the error. In a balanced
        crossed design with ``n`` rows per cell of the model's factors ``F``, the expected mean
        square of term ``A`` is ``sigma2_e + sum_B c_B sigma2_B`` over the model terms ``B``
        that contain ``A``, with ``c_B = n * prod(levels of the factors in F but not in B)``.
        The triangular system is solved from the highest-order terms down (the ANOVA or
        Henderson method I estimator); negative estimates are set to 0 with a
        :class:`~irmodels.errors.NegativeVarianceWarning` (other components are not re-solved).
        Terms absent from the model are pooled into ``Residual``. For a topic x system matrix
        this is ``var_s = (MS_s - MS_e) / n_t`` and ``var_t = (MS_t - MS_e) / n_s``
        (Webber 2010, ch. 4; Brennan 2001).

        Returns
        -------
        DataFrame
            Indexed by component (term names, then ``Residual``), columns ``variance``
            (estimate, >= 0), ``sd`` (its square root) and ``share`` (variance over the total).

        Raises
        ------
        DesignError
            On an unbalanced design (use ``irm.mixed`` for REML estimates).
        """
        if self.spec.covariates:
            raise DesignError(
                "variance components from expected mean squares are defined for factor models; "
                f"this one has numeric covariate(s) {', '.join(self.spec.covariates)}. Use "
                "irm.mixed(...) with random intercepts for REML estimates."
            )
        if not self.balanced:
            raise DesignError(
                "variance components from expected mean squares need a balanced design; "
                f"this one is unbalanced (fitted by {self.method}). Use irm.mixed(...) with "
                "random intercepts for REML estimates."
            )
        if not self.hierarchical:
            raise DesignError(
                "variance components from expected mean squares need a hierarchical crossed "
                f"model; {self.spec!s} leaves out margins of an interaction. Add them, or use "
                "irm.mixed(...) for nested random effects."
            )
        terms = list(self.table.index[:-1])
        sigma_e = float(self.ms_error)
        est = ems_components(terms, self.table["MS"].to_numpy()[:-1], sigma_e, self.levels,
                             self.factors, int(self._replicates or 1))
        negative = [t for t in terms if est[t] < 0]
        if negative:
            warnings.warn(
                f"negative variance estimate(s) for {', '.join(negative)} "
                f"({', '.join(f'{est[t]:.3g}' for t in negative)}) set to 0: the mean square "
                "is smaller than its expectation without that component.",
                NegativeVarianceWarning,
                stacklevel=2,
            )
        var = np.array([max(est[t], 0.0) for t in terms] + [sigma_e])
        total = var.sum()
        out = pd.DataFrame(
            {"variance": var, "sd": np.sqrt(var), "share": var / total if total > 0 else np.nan},
            index=pd.Index([*terms, "Residual"], name="component"),
        )
        return out

    # ---- display
    def _display_title(self) -> str:
        return anova_title(self.spec, self.n_obs, self.method, self.ss_type)

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        shown = self.table.rename(columns=dict(zip(TABLE_COLUMNS, SHOWN_COLUMNS)))
        return [(TABLE_TITLE, shown)]

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table`, tidy: one row per term (``Residual`` last), the term in column ``term``."""
        return self.table.rename_axis("term").reset_index()

    def __repr__(self) -> str:
        return (
            f"<AnovaResult {self.spec}, n_obs={self.n_obs}, method={self.method!r}, "
            f"df_resid={self.df_resid}, ms_error={self.ms_error:.6g}>"
        )


# --------------------------------------------------------------------------------------------
# fitting


def anova(
    model: str | ModelSpec,
    data: pd.DataFrame,
    *,
    ss_type: Literal[1, 2, 3] | None = None,
    alpha: float = 0.05,
    method: Literal["auto", "balanced", "lstsq", "sparse", "dense"] = "auto",
    missing: Literal["raise", "drop"] = "raise",
    aliased: Literal["raise", "drop"] = "raise",
    family: Literal["gaussian", "binomial", "poisson"] | None = None,
    link: str | None = None,
    trials: int | str | None = None,
    offset: str | None = None,
) -> AnovaResult | GlmResult:
    """Fit a crossed fixed-effects ANOVA of a long frame (or, with ``family=``, a GLM).

    Parameters
    ----------
    model : str or ModelSpec
        A formula (``"score ~ topic + system"``; ``*``, ``:`` and ``-`` allowed, see
        :func:`irmodels.parse_formula`), a preset name ``"MD1"`` ... ``"MD6"``, or a parsed
        :class:`~irmodels.formula.ModelSpec`. Fixed terms only, with an intercept. A model
        that leaves out margins of an interaction (``system + topic:system``) is fitted by
        sequential least squares (type I; the term spans every cell of its factors, as in R)
        and refuses ``ss_type=2`` or ``3``.
    data : DataFrame
        A long frame (:func:`irmodels.frame`): one row per measurement. Columns not in the
        model (e.g. ``shard`` under MD1) are ignored: their variation pools into the residual.
    ss_type : {1, 2, 3}, optional
        Sums of squares of the least-squares path: 1 sequential (R's ``anova(lm())``),
        2 (``car::Anova(type = 2)``; the default) or 3 (``car::Anova(type = 3)`` with
        sum-to-zero contrasts). On a balanced design all three coincide.
    alpha : float
        Significance level of the ``power`` column.
    method : {"auto", "balanced", "lstsq", "sparse", "dense"}
        ``"auto"`` uses the closed form when the design is balanced, least squares otherwise;
        ``"lstsq"`` forces least squares (to check the two agree); ``"balanced"`` raises if
        the design is not balanced. A small design (a few hundred rows and columns) is
        fitted by dense QR in numpy; a larger one by sparse least squares
        (:mod:`irmodels.models._sparse_lsq`: the largest factor term absorbed, no dense
        design); type III tables with covariates or that the sparse path cannot give exactly
        (aliasing, empty cells of the absorbed term), and aliased small designs, use the dense
        reference (QR per term block).
        ``"sparse"`` and ``"dense"`` force one of the two least-squares paths (``"dense"`` is
        the reference the others are tested against).
    missing : {"raise", "drop"}
        ``"raise"`` (default): a missing response or factor label raises. ``"drop"``
        (statsmodels' ``missing="drop"``, R's ``na.omit``): rows with a missing value in a
        column the model uses (response, factors, covariates, the columns of expressions) are
        left out, with a :class:`~irmodels.DataQualityWarning` naming how many and where;
        their number is :attr:`AnovaResult.n_dropped`. Missing values in other columns are
        ignored.
    aliased : {"raise", "drop"}
        ``"raise"`` (default): a term with no degree of freedom left (fully aliased, e.g. a
        confounded interaction) raises. ``"drop"``: R's behaviour: the aliased columns (R's
        NA coefficients) are dropped and the term is left out of the table (as
        ``anova(lm())`` for type I; ``car::Anova(type = 2)`` shows it with 0 df) and named in
        :attr:`AnovaResult.notes` and :attr:`AnovaResult.aliased_terms`. Type III with an
        aliased term is refused, as by ``car::Anova``.
    family : {None, "gaussian", "binomial", "poisson"}
        ``None`` or ``"gaussian"`` (default): the least-squares ANOVA above. ``"binomial"`` or
        ``"poisson"``: a generalised linear model fitted by IRLS as R's ``glm`` (see
        :mod:`irmodels.models._glm`), returned as a :class:`~irmodels.models._glm.GlmResult`
        with an analysis of deviance (``fit.anova()``: R's ``anova(fit, test = "Chisq")``)
        and marginal means and comparisons on the link or the response scale. ``ss_type``,
        ``method`` and ``aliased`` keep their defaults with a family.
    link : str, optional
        The family's link (``"logit"`` (default), ``"probit"``, ``"cloglog"``, ``"log"``,
        ``"identity"`` for the binomial; ``"log"`` (default), ``"identity"``, ``"sqrt"`` for
        the Poisson).
    trials : int or str, optional
        Binomial: the number of trials, a number (``10`` for P@10) or a column; the response
        is then the number of successes (``rel`` relevant documents in the top 10). Without
        it, a 0/1 response (one trial).
    offset : str, optional
        A column added to the linear predictor with coefficient 1 (link scale: the log of an
        exposure for a Poisson rate, R's ``offset(log_depth)``).

    Returns
    -------
    AnovaResult
        ``.table`` with columns ``SS, df, MS, F, p, eta2, eta2_partial, omega2_partial,
        cohen_f2, power`` (index: terms, then ``Residual``), marginal means, residuals,
        variance components and Tukey HSD. With ``family="binomial"`` or ``"poisson"`` a
        :class:`~irmodels.models._glm.GlmResult`.

    Raises
    ------
    FormulaError
        Random terms in the model, or a factor that is not a column.
    DesignError
        A factor with fewer than two levels, type II/III on a non-hierarchical model, an
        aliased term (unless ``aliased="drop"``; type III always), no
        residual degrees of freedom, ``method="balanced"`` on unbalanced data.
    DataFormatError
        Missing (NaN) or infinite responses; with a family, a response the family cannot
        take (fractional successes, more successes than trials, negative counts).
    ArgumentError
        An unknown family or link; ``link``, ``trials`` or ``offset`` without a family;
        ``ss_type``, ``method`` or ``aliased`` with one.

    Warns
    -----
    DataQualityWarning
        When rows are the same in every column but the response: nothing tells them apart,
        and they are fitted as replicates (a copy of a row adds a residual of 0). Average them,
        drop the copies, or add the column that tells the replicates apart.
    UnbalancedDesignWarning
        When the design is unbalanced and the least-squares path is taken.
    NegativeVarianceWarning
        When a partial omega squared is negative (shown as 0).

    Notes
    -----
    Balanced designs: with ``n`` rows in every cell of the model's factors, the effect of a
    term with factor set ``A`` is the inclusion-exclusion contrast of marginal means over the
    subsets of ``A`` (e.g. ``(tau alpha)_ij = mu_ij - mu_i - mu_j + mu``),
    ``SS_A = N / cells_A * sum(effect^2)``, ``df_A = prod(levels - 1)``; the residual is what
    the model's terms leave (terms not in the model pool into it). Computed in one pass with
    ``np.bincount``, no design matrix (Ferro & Sanderson 2019, models MD1-MD6).

    Unbalanced designs or empty cells: a dense least-squares fit with sum-to-zero contrasts,
    terms entered in blocks (type I: in order; type II: after the terms not containing them;
    type III: after all other terms). Terms partially aliased by empty cells lose degrees of
    freedom as in R; a fully aliased term raises.

    Effect sizes: ``eta2 = SS/SS_total``, ``eta2_partial = SS/(SS + SS_e)``,
    ``omega2_partial = df (F - 1)/(df (F - 1) + N)`` (Olejnik & Algina 2003; Ferro &
    Sanderson 2019), ``cohen_f2 = SS/SS_e`` and the power of the F test with noncentrality
    ``f2 * N`` (see :mod:`irmodels.inference.effects`).

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(1)
    >>> scores = (rng.uniform(size=(8, 1)) + np.linspace(0, 0.3, 4)
    ...           + rng.normal(0, 0.05, size=(8, 4))).clip(0, 1)
    >>> data = irm.from_wide(pd.DataFrame(scores, columns=list("abcd")))
    >>> fit = irm.anova("MD1", data)
    >>> fit.table[["SS", "df", "F", "omega2_partial"]].round(4)
                  SS    df        F  omega2_partial
    topic     2.1112   7.0  66.0338          0.9343
    system    0.2652   3.0  19.3556          0.6325
    Residual  0.0959  21.0      NaN             NaN
    >>> fit.marginal_means("system").round(3).tolist()
    [0.543, 0.642, 0.734, 0.78]
    >>> fit.variance_components().round(4)
               variance      sd   share
    component
    topic        0.0743  0.2725  0.8315
    system       0.0105  0.1024  0.1173
    Residual     0.0046  0.0676  0.0511
    """
    if family is not None or link is not None or trials is not None or offset is not None:
        # here, not at import: the GLM engine (scipy.stats, scipy.linalg: start-up time of every
        # irm.anova and of the CLI) loads only for fits that name a family
        from irmodels.models._glm import dispatch

        with kernel_threads(LARGE - 1):  # one BLAS thread (IRLS: small p x p solves)
            glm = dispatch(model, data, family, link, trials, offset, ss_type, method, aliased,
                           missing)
        if glm is not None:
            return glm
    alpha = check_arguments(data, ss_type, method, alpha, aliased)
    spec = _design.resolve_model(model, [str(c) for c in data.columns])
    data, n_dropped, _ = drop_missing(data, spec.columns, missing, "irm.anova")
    check_spec(spec, data)
    check_rows(data, "irm.anova")
    refuse_pooled(data, spec.factors)
    y, ymax = response(spec, data)
    seen: dict[str, Any] = {}
    spec = _design.classify(spec, data, seen=seen)
    covariates = spec.covariates
    values = {f: _design.covariate_values(data, f) for f in covariates}
    cells = encode_factors(spec, data, seen)
    factors, codes, levels, flat, counts = (cells.factors, cells.codes, cells.levels,
                                            cells.flat, cells.counts)
    if counts.max() > 1:
        # several rows in a cell are replicates when a column tells them apart (shard, sample,
        # a factor left out of the model); rows that nothing tells apart may be replicates of
        # an unnamed kind (irm.frame(..., duplicates="allow"), R's lm) or a frame concatenated
        # twice, whose copies add residuals of 0: warned about, naming the first cell
        check_distinct_rows(data, "irm.anova", scores=[spec.response], warn=True,
                            groups=cell_groups(data, spec.response, cells))
    balanced = bool(counts.min() > 0 and counts.min() == counts.max())
    n_obs = int(y.shape[0])
    aliased_terms: tuple[str, ...] = ()
    terms = list(spec.fixed)
    names = [t.name for t in terms]
    margins = check_method(spec, ss_type, method, factors, counts, balanced)
    if balanced and method in ("auto", "balanced") and not margins and not covariates:
        ss, df, ss_resid, df_resid, fitted = fit_closed(y, terms, factors, flat, cells.shape,
                                                        counts)
        used_method = "balanced"
        used_type = 2 if ss_type is None else int(ss_type)
    else:
        used_type = 1 if margins else (2 if ss_type is None else int(ss_type))
        if margins and ss_type is None:
            first = next(iter(margins))
            warnings.warn(
                f"the model is not hierarchical (term {first} lacks {', '.join(margins[first])}): "
                "its sums of squares are sequential (type I, as R's anova(lm())), so they depend "
                "on the order of the terms. Pass ss_type=1 to say so, or add the margins for "
                "type II.", IRModelsWarning, stacklevel=2)
        if not balanced and not covariates:
            warnings.warn(
                f"the design is unbalanced ({int((counts == 0).sum())} empty cell(s) of "
                f"{counts.size}; {int(counts[counts > 0].min())}-{int(counts.max())} rows per "
                f"observed cell): fitting by least squares with type {'I' * used_type} sums of "
                "squares.", UnbalancedDesignWarning, stacklevel=2)
        n_columns = 1 + sum(math.prod(len(levels[f]) for f in t.factors if f in levels)
                            for t in terms)  # a bound on the design's columns
        # BLAS threads by size (irmodels._threads); a tiny design runs on one thread anyway
        with kernel_threads(n_columns) if n_obs * n_columns**2 >= TINY_WORK else nullcontext():
            ss, df, ss_resid, df_resid, fitted = fit_lsq(
                y, terms, codes, levels, used_type, counts, full_cells={t for t in margins},
                values=values, solver=method, aliased_ok=aliased == "drop" and used_type != 3)
        used_method = f"lstsq-type{used_type}"
        if aliased == "drop" and np.any(df == 0):
            keep = df > 0
            aliased_terms = tuple(n for n, k in zip(names, keep) if not k)
            names = [n for n, k in zip(names, keep) if k]
            ss, df = ss[keep], df[keep]

    ss, ss_resid = without_rounding_noise(ss, ss_resid, y, ymax)
    ms_error = ss_resid / df_resid
    grid, clipped = clip_omega(table_values(ss, df, ss_resid, df_resid, n_obs, alpha), names)
    index, columns = table_axes(tuple(names))
    table = pd.DataFrame(grid, index=index, columns=columns, copy=False)
    return AnovaResult(
        spec=spec, data=data, n_obs=n_obs, balanced=balanced, method=used_method,
        ss_type=used_type, table=table, df_resid=int(df_resid), ms_error=float(ms_error),
        grand_mean=float(y.mean()), alpha=float(alpha), omega2_clipped=clipped,
        hierarchical=not margins, _y=y, _fitted=fitted, _codes=codes, _levels=levels,
        _replicates=int(counts[0]) if balanced else None, n_dropped=n_dropped,
        aliased_terms=aliased_terms, _options={"ss_type": ss_type, "alpha": alpha,
                                               "method": method, "missing": missing,
                                               "aliased": aliased},
    )
