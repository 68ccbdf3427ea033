"""Bootstrap of the system effects of a fitted model (MATTERS' ``compute_bootstrap_effects``).

:func:`bootstrap_effects` takes a fitted ANOVA (MD1-MD6 or any :func:`irmodels.anova` model) or
mixed model, generates ``n_boot`` new response vectors from it, refits (``fit.refit(y)``: the
same formula, options and criterion), and collects the
marginal means of one factor (``system`` by default). From the replicates it reports each
level's bootstrap standard error and percentile interval, and for every pair of levels the
share of replicates in which the observed order holds.

- **ANOVA fits: residual bootstrap.** ``y* = fitted + e*``, with ``e*`` drawn with replacement
  from the model's residuals over the whole design (as MATTERS does). Residuals are rescaled by
  ``sqrt(N / df_error)`` first (``rescale=True``, the default; Davison & Hinkley 1997, section
  6.2.3), so that their variance is ``MS_error`` rather than the biased ``SS_error / N``; then
  the bootstrap SE of a marginal mean of a balanced design equals the model's
  ``sqrt(MS_error / n)`` in expectation. On a balanced design the refit is closed form (the
  marginal means of ``y*`` are its level means: one matrix product for a whole batch of
  replicates); an unbalanced design is refitted (:meth:`~irmodels.models.base.FittedModel.refit`,
  least-squares means) for each replicate.
- **Mixed fits: parametric bootstrap** at the observation level (as lme4's ``bootMer`` with
  ``use.u = FALSE``): ``y* = X beta + sum_k Z_k b*_k + e*`` with ``b*_k ~ N(0, sigma_k^2)``
  for every random term and ``e* ~ N(0, sigma^2)``, refitted by ``fit.refit`` (the same
  formula and criterion). Resampling raw residuals would ignore the random effects'
  variability, which is what the SE of a marginal mean of a mixed model contains. Only
  homoscedastic fits (one residual variance) of random intercepts are supported.

Only the fit vocabulary (:class:`~irmodels.models.base.FittedModel`) is read: a model without
random terms gets the residual bootstrap, one with random intercepts the parametric one (from
``fixed_fitted()``, ``variance_components()`` and ``residual_strata``); a model with a link
function (GLM, GLMM) or random slopes is refused. A new model class gets the closed form from
the abstract members, and the refitted paths by implementing ``refit`` (its ``_refit_to``).

Batches of replicates are the units mapped by :func:`irmodels.parallel.map`, each with its own
seed (``SeedSequence(seed).spawn``), so the result does not depend on the backend.

References: N. Ferro and M. Sanderson, "Improving the accuracy of system performance
estimation by using shards", SIGIR 2019 (the MATTERS library); A. C. Davison and
D. V. Hinkley, *Bootstrap Methods and their Application*, Cambridge, 1997 (ch. 6);
D. Bates et al., "Fitting linear mixed-effects models using lme4", JSS 2015 (``bootMer``).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay
from irmodels._section import figure_axes
from irmodels._validate import check_fits, check_probability, check_seed, renamed, seed_sequence
from irmodels.data.frame import natural_key
from irmodels.errors import ArgumentError, DesignError, IRModelsWarning
from irmodels.models._design import encode
from irmodels.models._lmm_design import is_slope_spec
from irmodels.models.base import FittedModel
from irmodels.parallel import map as parallel_map

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["EFFECT_COLUMNS", "PAIR_COLUMNS", "BootstrapEffects", "bootstrap_effects"]

#: Columns of :attr:`BootstrapEffects.effects`, in order (index: the factor's levels).
EFFECT_COLUMNS = ("mean", "se", "lower", "upper", "effect", "effect_se", "effect_lower",
                  "effect_upper", "se_model")
#: Columns of :attr:`BootstrapEffects.pairs`, in order.
PAIR_COLUMNS = ("a", "b", "diff", "diff_se", "diff_lower", "diff_upper", "order_rate")

_CHUNK = 50


@dataclass(frozen=True)
class _AnovaContext:
    fitted: np.ndarray
    residuals: np.ndarray
    codes: np.ndarray  # level code of every observation
    n_levels: int
    closed: bool
    fit: FittedModel | None  # refits each replicate (None: the closed form needs no refit)
    factor: str
    order: np.ndarray  # the observations in canonical order (_canonical_order)


@dataclass(frozen=True)
class _MixedContext:
    fixed: np.ndarray  # X beta per observation
    random_codes: tuple[np.ndarray, ...]
    random_sd: tuple[float, ...]
    sigma: float
    fit: FittedModel  # refits each replicate (fit.refit: same formula, options, criterion)
    factor: str
    order: np.ndarray  # the observations in canonical order (_canonical_order)


def _anova_unit(ctx: _AnovaContext, unit: tuple[int, np.random.SeedSequence]) -> np.ndarray:
    n, seq = unit
    rng = np.random.default_rng(seq)
    N = len(ctx.fitted)
    # the draws go to the observations in the design's canonical order (ctx.order), so the
    # result does not depend on the order of the data's rows
    idx = rng.integers(0, N, size=(n, N))
    Y = np.empty((n, N))
    Y[:, ctx.order] = ctx.fitted[ctx.order][None, :] + ctx.residuals[ctx.order][idx]
    if ctx.closed:
        counts = np.bincount(ctx.codes, minlength=ctx.n_levels).astype(np.float64)
        G = np.zeros((N, ctx.n_levels))
        G[np.arange(N), ctx.codes] = 1.0 / counts[ctx.codes]
        return Y @ G
    assert ctx.fit is not None
    out = np.empty((n, ctx.n_levels))
    for k in range(n):
        # silenced, not steering: every replicate's refit repeats the fit's own warnings
        # (an unbalanced design), which the user saw when fitting it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IRModelsWarning)
            out[k] = ctx.fit.refit(Y[k]).marginal_means(ctx.factor).to_numpy()
    return out


def _mixed_unit(ctx: _MixedContext, unit: tuple[int, np.random.SeedSequence]) -> np.ndarray:
    n, seq = unit
    rng = np.random.default_rng(seq)
    rows = []
    for _ in range(n):
        y = ctx.fixed.copy()  # the noise goes to the observations in canonical order
        y[ctx.order] += rng.normal(0.0, ctx.sigma, size=len(ctx.fixed))
        for codes, sd in zip(ctx.random_codes, ctx.random_sd):
            y = y + rng.normal(0.0, sd, size=int(codes.max()) + 1)[codes]
        # silenced, not steering: a replicate's refit may sit on the boundary (a variance of
        # 0): its marginal means are still the replicate's, and the warning would repeat
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IRModelsWarning)
            fit = ctx.fit.refit(y)
        rows.append(fit.marginal_means(ctx.factor).to_numpy())
    return np.array(rows)


@dataclass(frozen=True, repr=False, eq=False)
class BootstrapEffects(ResultDisplay):
    """Result of :func:`bootstrap_effects`.

    Attributes
    ----------
    effects : DataFrame
        Indexed by level of the factor, columns in order: ``mean`` (the fit's marginal mean),
        ``se`` (bootstrap SD of the replicated means), ``lower``, ``upper`` (percentile
        interval at ``level``), ``effect`` (mean minus the average of the means), ``effect_se``,
        ``effect_lower``, ``effect_upper`` (the same for the effect), ``se_model`` (the fit's
        own SE of the mean: the square root of the diagonal of the fit's
        :meth:`~irmodels.models.anova.AnovaResult.marginal_means_cov` for an ANOVA, which is
        ``sqrt(MS_error / n)`` on a balanced design and each least-squares mean's own SE on an
        unbalanced one; the model-based SE of the marginal mean for a mixed model).
    pairs : DataFrame
        One row per pair ``a < b`` (factor order): ``a``, ``b``, ``diff`` (mean of a minus mean
        of b), ``diff_se``, ``diff_lower``, ``diff_upper`` (bootstrap SE and percentile
        interval of the difference), ``order_rate`` (share of replicates whose difference has
        the observed sign; 1 means the order always held; NaN when the observed means tie).
    replicates : DataFrame
        ``n_boot`` rows (replicates) x levels: the replicated marginal means.
    n_resamples, level, seed, kind, factor
        Settings; ``kind`` is ``"residual"`` (ANOVA) or ``"parametric"`` (mixed model).
    """

    effects: pd.DataFrame
    pairs: pd.DataFrame
    replicates: pd.DataFrame = field(repr=False)
    n_resamples: int
    level: float
    seed: int | None
    kind: str
    factor: str
    model: str

    @property
    def n_boot(self) -> int:
        """Deprecated name of :attr:`n_resamples` (for one release)."""
        warnings.warn("BootstrapEffects.n_boot is deprecated; use n_resamples (the old name "
                      "stops working in the next release).", FutureWarning, stacklevel=2)
        return self.n_resamples

    def to_frame(self) -> pd.DataFrame:
        """:attr:`effects` with the level as a column (the main tidy table)."""
        return self.effects.reset_index()

    def _display_title(self) -> str:
        return (f"Bootstrap of {self.factor} effects ({self.kind}, {self.n_resamples} replicates, "
                f"{100 * self.level:g}% percentile intervals): {self.model}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        worst = self.pairs.sort_values("order_rate", kind="stable").head(10)
        worst = worst.set_index(worst["a"].astype(str) + " vs " + worst["b"].astype(str))
        worst.index.name = "pair"
        return [(f"{self.factor} means and effects", self.effects),
                ("Least stable pairs", worst[["diff", "diff_se", "order_rate"]])]

    def __repr__(self) -> str:
        return (f"<BootstrapEffects kind={self.kind!r}, factor={self.factor!r}, "
                f"levels={len(self.effects)}, n_resamples={self.n_resamples}>")

    def plot(self, *, ax: Any = None) -> Figure:
        """Marginal means with their percentile intervals, best first.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there (the figure returned is then ``ax.figure``); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """
        e = self.effects.sort_values("mean", ascending=False, kind="stable")
        fig, (ax,) = figure_axes(ax, figsize=(max(5.0, 0.08 * len(e) + 3), 3.5),
                                 what="BootstrapEffects.plot")
        x = np.arange(len(e))
        ax.errorbar(x, e["mean"], yerr=[e["mean"] - e["lower"], e["upper"] - e["mean"]],
                    fmt="o", ms=3, lw=0.8)
        ax.set_xlabel(f"{self.factor} (sorted by mean)")
        ax.set_ylabel("marginal mean")
        ax.set_title(f"{100 * self.level:g}% bootstrap intervals ({self.kind})", fontsize=9)
        return fig


def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ArgumentError(f"{name} must be a whole number >= {low}; got {value!r}.")
    return int(value)


def _check_replicates(n_boot: int, k: int) -> None:
    """The replicates (n_boot x k), their centred copy and a block of 2000 pairs' differences
    must fit in memory."""
    check_fits(n_boot, "n_resamples", 8 * (2 * k + 2 * min(k * (k - 1) // 2, 2000)),
               what=f"the replicates of {k} means")


def _canonical_order(codes: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    """The observations sorted by their factors' level codes (levels in natural order), then
    by the response: an order of the design that does not depend on the data's row order."""
    return np.lexsort([np.asarray(y, dtype=float)] + [np.asarray(c) for c in reversed(codes)])


def _factor_codes(fit: FittedModel, factors: list[str]
                  ) -> tuple[dict[str, np.ndarray], dict[str, pd.Index]]:
    """Integer codes and levels of ``factors`` in the fit's data, by the encoding every model
    uses (:func:`irmodels.models._design.encode`: category order, else natural order)."""
    codes: dict[str, np.ndarray] = {}
    levels: dict[str, pd.Index] = {}
    for f in factors:
        codes[f], levels[f] = encode(fit.data[f])
    return codes, levels


def _anova_context(fit: FittedModel, factor: str, rescale: bool, refit: bool
                   ) -> tuple[Any, Any, Any]:
    means = fit.marginal_means(factor)  # refuses a factor the model does not have
    if ":" in factor:
        raise DesignError(f"bootstrap_effects needs a single factor; got {factor!r}.")
    if not any(t.factors == (factor,) for t in fit.spec.fixed):
        raise DesignError(f"{factor!r} is not a main effect of {fit.spec!s}; the bootstrap "
                          "collects the marginal means of a main effect.")
    fitted = fit.fitted()
    resid = fit.residuals()
    raw = fitted + resid
    if rescale:
        if fit.df_resid <= 0:
            raise DesignError("the model has no residual degrees of freedom: there are no "
                              "residuals to resample. Use a smaller model.")
        resid = resid * math.sqrt(fit.nobs / fit.df_resid)
    numeric = set(fit.spec.numeric)
    codes, levels = _factor_codes(fit, [f for f in fit.spec.factors if f not in numeric])
    counts = np.bincount(np.ravel_multi_index(list(codes.values()),
                                              tuple(len(v) for v in levels.values())),
                         minlength=math.prod(len(v) for v in levels.values()))
    balanced = bool(counts.min() > 0 and counts.min() == counts.max())
    # closed form: the LS means are the level means (balanced, no numeric covariate)
    closed = balanced and not fit.spec.covariates and not refit
    if not closed and fit.spec.transform is not None:
        raise DesignError(f"the response of {fit.spec!s} is transformed; the refit path of an "
                          "unbalanced design needs an untransformed response. Transform the "
                          "scores first and fit score ~ ...")
    ctx = _AnovaContext(fitted=fitted, residuals=resid, codes=codes[factor],
                        n_levels=len(levels[factor]), closed=closed,
                        fit=None if closed else fit, factor=factor,
                        order=_canonical_order(list(codes.values()), raw))
    # each least-squares mean's own SE (a harmonic-mean n would give one common value)
    cov = fit.marginal_means_cov(factor).to_numpy()
    return ctx, means, np.sqrt(np.clip(np.diag(cov), 0.0, None))


def _mixed_context(fit: FittedModel, factor: str) -> tuple[Any, Any, Any]:
    if fit.residual_strata is not None:
        raise DesignError("bootstrap_effects supports mixed models with one residual variance; "
                          f"this fit has strata by {fit.residual_strata}. Refit without "
                          "residual=.")
    if fit.data is None:
        raise DesignError("bootstrap_effects needs the rows the model was fitted to, and this fit "
                          "does not keep them; refit it with irm.mixed(model, data).")
    data = fit.data.reset_index(drop=True)
    fixed_factors = sorted({f for t in fit.spec.fixed for f in t.factors})
    if factor not in fixed_factors:
        raise DesignError(f"{factor!r} is not a fixed factor of {fit.spec!s}.")
    if fit.spec.transform is not None:
        raise DesignError(f"the response of {fit.spec!s} is transformed; the parametric "
                          "bootstrap simulates the response the model is fitted to. Transform "
                          "the scores first and fit score ~ ...")
    fixed = fit.fixed_fitted()  # X beta per observation
    levels = {f: [str(v) for v in lv] for f, lv in _factor_codes(fit, fixed_factors)[1].items()}
    codes = {}
    for f in fixed_factors:
        labels = {str(v): i for i, v in enumerate(levels[f])}
        codes[f] = np.array([labels[str(v)] for v in data[f].astype(str)])
    vc = fit.variance_components()
    rcodes, rsd = [], []
    for rt in fit.spec.random:
        key = data[list(rt.factors)].astype(str).agg("\x1f".join, axis=1)
        # levels in natural order, not in order of appearance: row-order invariant
        levels_rt = sorted(pd.unique(key), key=natural_key)
        rcodes.append(pd.Index(levels_rt).get_indexer(key).astype(np.int64))
        rsd.append(float(vc.loc[rt.name, "sd"]))
    by_column = {f: codes[f] for f in fixed_factors}
    for rt, c in zip(fit.spec.random, rcodes):
        by_column[":".join(rt.factors)] = c
    first = {name: min((list(data.columns).index(f) for f in name.split(":")
                        if f in data.columns), default=len(data.columns)) for name in by_column}
    keys = [by_column[name] for name in sorted(by_column, key=lambda k: (first[k], k))]
    # sigma: the Residual row's sd (the square root of the one residual variance)
    ctx = _MixedContext(fixed=fixed, random_codes=tuple(rcodes), random_sd=tuple(rsd),
                        sigma=float(vc.loc["Residual", "sd"]), fit=fit, factor=factor,
                        order=_canonical_order(keys, data[fit.spec.response].to_numpy(float)
                                               if fit.spec.response in data.columns
                                               else np.zeros(len(data))))
    cov = fit.marginal_means_cov(factor)
    return ctx, fit.marginal_means(factor), np.sqrt(np.diag(cov.to_numpy()))


def _bootstrap_kind(fit: Any) -> Literal["residual", "parametric"]:
    """How ``fit`` is resampled, from the fit vocabulary alone: a model with random terms by
    simulation from its variance components, a fixed-effects model by its residuals."""
    if not isinstance(fit, FittedModel):
        raise DesignError(f"bootstrap_effects needs a fitted model (irm.anova or irm.mixed); "
                          f"got {type(fit).__name__}.")
    link = getattr(fit, "link", None)
    if link is not None:
        raise DesignError(f"bootstrap_effects resamples normal errors; {type(fit).__name__} is "
                          f"a model with a link function ({link}), whose errors are not. Use "
                          "a linear fit (irm.anova or irm.mixed without family=).")
    if not fit.spec.random:
        return "residual"
    if is_slope_spec(fit.spec):
        raise DesignError(f"bootstrap_effects simulates random intercepts; {fit.spec!s} has "
                          "random slopes. Fit the random intercepts only, or bootstrap the "
                          "slopes with fit.confint(method='bootstrap').")
    return "parametric"


def bootstrap_effects(
    fit: FittedModel,
    *,
    n_resamples: int = 1000,
    factor: str = "system",
    level: float = 0.95,
    rescale: bool = True,
    seed: int = 0,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    _refit: bool = False,
    **deprecated: Any,
) -> BootstrapEffects:
    """Bootstrap SEs, percentile intervals and order stability of a factor's marginal means.

    Parameters
    ----------
    fit : FittedModel
        A fitted model (:func:`irmodels.anova`, e.g. MD1-MD6, :func:`irmodels.mixed` with
        random intercepts, or any :class:`~irmodels.models.base.FittedModel`) with ``factor``
        among its fixed main effects.
    n_resamples : int
        Replicates (default 1000). Was ``n_boot`` (still accepted for one release, with a
        ``FutureWarning``); so is the result's attribute ``n_boot`` (now ``n_resamples``).
    factor : str
        The factor whose marginal means are bootstrapped (default ``system``).
    level : float
        Coverage of the percentile intervals (default 0.95).
    rescale : bool
        ANOVA fits: multiply the residuals by ``sqrt(N / df_error)`` before resampling
        (default True; see the module notes). Ignored for mixed fits.
    seed : int
        Seed; batch ``k`` of 50 replicates uses child ``k`` of ``SeedSequence(seed)``.
    backend, n_workers, progress
        Where the batches run (:func:`irmodels.parallel.map`); the result does not depend on
        it.

    Returns
    -------
    BootstrapEffects
        ``.effects`` (per level: ``mean, se, lower, upper, effect, effect_se, effect_lower,
        effect_upper, se_model``), ``.pairs`` (``a, b, diff, diff_se, diff_lower,
        diff_upper, order_rate``), ``.replicates``, ``to_frame()``, ``plot()``.

    Raises
    ------
    DesignError
        Not a fitted model; a model with a link function or random slopes; ``factor`` not a
        fixed main effect; no residual df; a heteroscedastic mixed fit; a transformed
        response where replicates are refitted; a model that needs refits and does not
        implement :meth:`~irmodels.models.base.FittedModel.refit`.
    ArgumentError
        Bad ``n_resamples`` or ``level``.

    Notes
    -----
    ANOVA: residual bootstrap (``y* = fitted + e*``) with rescaled residuals; closed form on
    balanced designs, a least-squares refit per replicate otherwise (``fit.refit``). Mixed
    models: parametric bootstrap from the fitted variance components, refitted by
    ``fit.refit`` (REML/ML as the original fit).
    ``effect`` is the marginal mean minus the mean of all marginal means (the sum-to-zero
    system effect alpha_j of MD1-MD6).

    Examples
    --------
    >>> import irmodels as irm
    >>> fit = irm.anova("MD1", irm.datasets.load("adhoc3", "AP"))
    >>> boot = irm.studies.bootstrap_effects(fit, n_resamples=500, seed=1)
    >>> boot
    <BootstrapEffects kind='residual', factor='system', levels=40, n_resamples=500>
    >>> boot.to_frame()[["system", "mean", "se", "se_model", "lower", "upper"]].head(3).round(4)
      system    mean      se  se_model   lower   upper
    0   sys1  0.0823  0.0145    0.0148  0.0544  0.1090
    1   sys2  0.3504  0.0143    0.0148  0.3241  0.3791
    2   sys3  0.3539  0.0154    0.0148  0.3241  0.3847
    """
    seed = check_seed(seed)
    n_boot = _check_int(renamed(deprecated, "n_boot", "n_resamples", n_resamples, 1000,
                                where="irm.studies.bootstrap_effects"), "n_resamples", 2)
    level = check_probability(level, "level")  # numpy floats too
    # only the fit vocabulary: the kind from the spec, the replicates refitted by fit.refit
    kind = _bootstrap_kind(fit)
    if kind == "residual":
        ctx, means, se_model = _anova_context(fit, factor, rescale, _refit)
        unit_fn: Any = functools.partial(_anova_unit, ctx)
    else:
        ctx, means, se_model = _mixed_context(fit, factor)
        unit_fn = functools.partial(_mixed_unit, ctx)
    _check_replicates(n_boot, len(means))
    n_chunks = -(-n_boot // _CHUNK)
    children = seed_sequence(seed).spawn(n_chunks)
    units = [(min(_CHUNK, n_boot - k * _CHUNK), child) for k, child in enumerate(children)]
    M = np.vstack(parallel_map(unit_fn, units, backend=backend, n_workers=n_workers,
                               progress=progress, desc="bootstrap"))
    labels = [str(v) for v in means.index]
    m = means.to_numpy(dtype=np.float64)
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    E = M - M.mean(axis=1, keepdims=True)
    lo, hi = np.quantile(M, q, axis=0)
    elo, ehi = np.quantile(E, q, axis=0)
    effects = pd.DataFrame({
        "mean": m, "se": M.std(axis=0, ddof=1), "lower": lo, "upper": hi,
        "effect": m - m.mean(), "effect_se": E.std(axis=0, ddof=1), "effect_lower": elo,
        "effect_upper": ehi, "se_model": se_model,
    }, index=pd.Index(labels, name=factor))
    ia, ib = np.triu_indices(len(m), 1)
    rows = []
    for start in range(0, len(ia), 2000):
        a, b = ia[start:start + 2000], ib[start:start + 2000]
        D = M[:, a] - M[:, b]
        d = m[a] - m[b]
        dlo, dhi = np.quantile(D, q, axis=0)
        rows.append(pd.DataFrame({
            "a": [labels[i] for i in a], "b": [labels[i] for i in b], "diff": d,
            "diff_se": D.std(axis=0, ddof=1), "diff_lower": dlo, "diff_upper": dhi,
            "order_rate": np.where(d != 0, (np.sign(D) == np.sign(d)[None, :]).mean(axis=0),
                                   np.nan),
        }))
    pairs = (pd.concat(rows, ignore_index=True) if rows
             else pd.DataFrame(columns=list(PAIR_COLUMNS)))
    return BootstrapEffects(
        effects=effects, pairs=pairs,
        replicates=pd.DataFrame(M, columns=pd.Index(labels, name=factor)),
        n_resamples=n_boot, level=float(level), seed=seed, kind=kind, factor=factor,
        model=str(fit.spec),
    )
