"""Figures of linear mixed fits: residual diagnostics and the caterpillar plot of random slopes.

The methods :meth:`MixedResult.plot_residuals`, :meth:`SlopeMixedResult.plot_residuals` and
:meth:`SlopeMixedResult.plot` draw here. Each draws quantities the fit already has (residuals,
fitted values, conditional modes and their conditional SDs) on a new figure made through pyplot
and closed there at once, or into the Axes passed as ``ax=`` (one per panel), and returns the
figure (the contract of every ``plot()``: :func:`irmodels._section.figure_axes`). The pictures
are those of Robertson & Kanoulas, "On Per-topic Variance in IR Evaluation", SIGIR 2012
(residuals by topic and system, residuals against fitted values) and lme4's
``dotplot(ranef(fit, condVar = TRUE))`` and ``qqmath(ranef(fit))``.

This module lives beside the models (not in :mod:`irmodels.reporting`) because the fits' own
methods call it, and models never import the reporting layer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy.special import ndtri

from irmodels._display import plot_text
from irmodels._section import figure_axes
from irmodels._validate import check_choice, check_probability
from irmodels.data.frame import natural_key
from irmodels.errors import DataFormatError, DesignError
from irmodels.models._mixed_residuals import check_type

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels.models._mixed_residuals import ResidualType

__all__ = ["RESIDUAL_PLOT_KINDS", "MixedResidualPlots", "ResidualPlotKind", "caterpillar",
           "plot_residuals"]

ResidualPlotKind = Literal["fitted", "boxplot", "qq"]
#: The pictures of ``plot_residuals(kind=...)``.
RESIDUAL_PLOT_KINDS: tuple[str, ...] = ("fitted", "boxplot", "qq")

_POINT = "#4c72b0"
_LINE = "#666666"
#: Most levels whose names are written on an axis; beyond, the levels are only counted.
MAX_NAMED_LEVELS = 60


class MixedResidualPlots:
    """Mixin of :class:`~irmodels.models.mixed.MixedResult` and
    :class:`~irmodels.models._lmm.SlopeMixedResult`: their residual pictures."""

    def plot_residuals(self, kind: ResidualPlotKind = "fitted", *,
                       type: ResidualType = "standardized", by: str | None = None,
                       ax: Any = None) -> Figure:
        """Residual diagnostics pictures (Robertson & Kanoulas, SIGIR 2012, show the first
        two).

        Parameters
        ----------
        kind : {"fitted", "boxplot", "qq"}
            ``"fitted"``: residuals against the conditional fitted values, with a reference
            line at 0 and dotted lines at +-2 (no smoother). ``"boxplot"``: one box of
            residuals per level of ``by``, a panel per factor. ``"qq"``: normal QQ plot of the
            conditional modes (BLUPs) of every random term and effect, a panel each, with the
            line ``0 + sd * z`` (the modes' SD).
        type : {"standardized", "pearson", "response", "conditional", "marginal"}
            The residuals drawn by ``"fitted"`` and ``"boxplot"`` (see ``residuals()``).
        by : str, optional
            ``"boxplot"``: a column of the data, or several joined by ``:``
            (``"topic:system"``, one box per cell). Default: one panel for ``topic`` and one
            for ``system`` when the data have them, else the grouping factors of the random
            terms (at most two).
        ax : matplotlib Axes or sequence of Axes, optional
            Draw there (one Axes per panel); by default a new figure, closed in pyplot.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
        >>> fig = fit.plot_residuals()
        >>> fig.axes[0].get_ylabel(), fig.axes[0].get_xlabel()
        ('standardized residual', 'fitted value (conditional)')
        >>> len(fit.plot_residuals("boxplot").axes)
        2
        """
        return plot_residuals(self, kind, type=type, by=by, ax=ax)


def _residual_label(type: str) -> str:
    return {"response": "residual", "conditional": "residual", "marginal": "marginal residual",
            "pearson": "Pearson residual", "standardized": "standardized residual"}[type]


def plot_residuals(fit: Any, kind: str = "fitted", *, type: str = "standardized",
                   by: str | None = None, ax: Any = None) -> Figure:
    """The residual pictures of a mixed fit (see ``MixedResult.plot_residuals``)."""
    kind = check_choice(kind, "kind", RESIDUAL_PLOT_KINDS)
    type = check_type(type)
    if kind == "qq":
        return _qq_modes(fit, ax)
    r = np.asarray(fit.residuals(type), dtype=float)
    if kind == "fitted":
        return _against_fitted(fit, r, type, ax)
    return _boxplots(fit, r, type, by, ax)


def _against_fitted(fit: Any, r: np.ndarray, type: str, ax: Any) -> Figure:
    fig, (ax,) = figure_axes(ax, figsize=(6.0, 4.0), what="plot_residuals(kind='fitted')")
    fv = np.asarray(fit.fitted(), dtype=float)
    n = len(r)
    alpha = float(min(0.8, max(0.15, 60.0 / math.sqrt(max(n, 1)) / 4)))
    ax.scatter(fv, r, s=8 if n <= 2000 else 4, alpha=alpha, color=_POINT, linewidths=0)
    ax.axhline(0.0, color=_LINE, lw=0.9)
    if type in ("standardized", "pearson"):
        for v in (-2.0, 2.0):
            ax.axhline(v, color=_LINE, lw=0.7, ls=":")
    ax.set_xlabel("fitted value (conditional)")
    ax.set_ylabel(_residual_label(type))
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _box_factors(fit: Any, data: pd.DataFrame, by: str | None) -> list[str]:
    if by is not None:
        if not isinstance(by, str) or not by:
            raise DataFormatError(f"by must be a column name (or names joined by ':'); got "
                                  f"{by!r}")
        missing = [c for c in by.split(":") if c not in data.columns]
        if missing:
            raise DataFormatError(
                f"by={by!r} names column(s) {', '.join(map(repr, missing))} that the data of "
                f"the fit lack; columns: {', '.join(map(str, data.columns))}")
        return [by]
    present = [c for c in ("topic", "system") if c in data.columns]
    if present:
        return present
    groups = [":".join(rt.factors) for rt in fit.spec.random]
    out = [g for g in dict.fromkeys(groups) if all(c in data.columns for c in g.split(":"))]
    if not out:
        raise DesignError("no factor to draw residual boxes by: pass by= (a column of the "
                          "data)")
    return out[:2]


def _labels(data: pd.DataFrame, factor: str) -> tuple[np.ndarray, list[str]]:
    """Level code of every row and the levels in natural order."""
    cols = factor.split(":")
    lab = data[cols[0]].astype(str)
    for c in cols[1:]:
        lab = lab + ":" + data[c].astype(str)
    first = {c: (list(data[c].cat.categories.astype(str))
                 if isinstance(data[c].dtype, pd.CategoricalDtype) else None) for c in cols}
    levels = list(dict.fromkeys(lab))
    if all(v is None for v in first.values()):
        levels = sorted(levels, key=natural_key)
    else:
        rank = {c: {v: i for i, v in enumerate(first[c] or sorted(set(data[c].astype(str)),
                                                                  key=natural_key))}
                for c in cols}
        levels = sorted(levels, key=lambda s: tuple(rank[c].get(p, 0)
                                                    for c, p in zip(cols, s.split(":"))))
    pos = {v: i for i, v in enumerate(levels)}
    return np.array([pos[v] for v in lab]), levels


def _boxplots(fit: Any, r: np.ndarray, type: str, by: str | None, ax: Any) -> Figure:
    data = fit.data
    if data is None:
        raise DataFormatError("this fit keeps no data (built without them): the residual boxes "
                              "need the factor of every row; refit with irm.mixed(model, data)")
    factors = _box_factors(fit, data, by)
    coded = [_labels(data, f) for f in factors]
    most = max(len(lv) for _, lv in coded)
    width = float(min(14.0, max(6.0, 1.5 + 0.16 * most)))
    fig, axes = figure_axes(ax, figsize=(width, 2.9 * len(factors)), shape=(len(factors), 1),
                            what="plot_residuals(kind='boxplot')")
    for a, f, (codes, levels) in zip(axes, factors, coded):
        groups = [r[codes == k] for k in range(len(levels))]
        groups = [g[np.isfinite(g)] for g in groups]
        a.boxplot(groups, positions=np.arange(len(levels)), widths=0.6, showfliers=True,
                  patch_artist=True, medianprops={"color": "#dd8452"},
                  boxprops={"facecolor": "#dbe4f0", "edgecolor": _POINT},
                  flierprops={"markersize": 2.5, "markeredgecolor": _POINT})
        a.axhline(0.0, color=_LINE, lw=0.8)
        k = len(levels)
        if k <= MAX_NAMED_LEVELS:
            a.set_xticks(np.arange(k), [plot_text(v) for v in levels],
                         rotation=90 if k > 8 else 0, fontsize=8 if k > 20 else 9)
            a.set_xlabel(plot_text(f))
        else:
            a.set_xticks([])
            a.set_xlabel(plot_text(f"{k} levels of {f}"))
        a.set_ylabel(_residual_label(type))
        a.spines[["top", "right"]].set_visible(False)
    return fig


def _mode_panels(fit: Any) -> list[tuple[str, np.ndarray]]:
    """(label, conditional modes) of every random term and effect."""
    out = []
    for g, v in fit.random_effects.items():
        if isinstance(v, pd.DataFrame):
            for col in v.columns:
                out.append((f"{g}: {col}", v[col].to_numpy(dtype=float)))
        else:
            out.append((str(g), np.asarray(v, dtype=float)))
    return out


def _ppoints(n: int) -> np.ndarray:
    """R's ``ppoints(n)``: ``(i - a) / (n + 1 - 2a)``, ``a = 3/8`` for n <= 10, else 1/2."""
    a = 3.0 / 8.0 if n <= 10 else 0.5
    return (np.arange(1, n + 1) - a) / (n + 1 - 2 * a)


def _qq_modes(fit: Any, ax: Any) -> Figure:
    panels = _mode_panels(fit)
    k = len(panels)
    ncol = min(k, 3)
    nrow = -(-k // ncol)
    fig, axes = figure_axes(ax, figsize=(3.3 * ncol, 3.0 * nrow) if ax is None else (1, 1),
                            shape=(nrow, ncol) if ax is None else (1, k),
                            what="plot_residuals(kind='qq')")
    for a, (label, b) in zip(axes, panels):
        z = ndtri(_ppoints(len(b)))
        a.scatter(z, np.sort(b), s=9, color=_POINT, linewidths=0)
        sd = float(np.std(b, ddof=1)) if len(b) > 1 else 0.0
        a.plot(z[[0, -1]], sd * z[[0, -1]], color=_LINE, lw=0.9)
        a.set_title(plot_text(label), fontsize=9)
        a.set_xlabel("normal quantile")
        a.set_ylabel("conditional mode")
        a.spines[["top", "right"]].set_visible(False)
    for a in axes[k:]:
        a.set_visible(False)
    return fig


def caterpillar(fit: Any, term: str | None = None, *, level: float = 0.95,
                ax: Any = None) -> Figure:
    """Caterpillar plot of the conditional modes of one grouping factor of a random-slopes fit:
    a panel per effect (``(Intercept)``, the slopes), the levels sorted by the first effect in
    every panel, each mode with the interval ``b +- z condsd`` (lme4's
    ``dotplot(ranef(fit, condVar = TRUE))``)."""
    level = check_probability(level, "level")
    frames = fit.random_effects
    names = list(frames)
    if term is None:
        term = "topic" if "topic" in names else names[0]
    if term not in frames:
        raise DesignError(f"{term!r} is not a grouping factor of {fit.spec}; grouping factors: "
                          f"{', '.join(names)}.")
    b = frames[term]
    sd = fit.conditional_sd(term)
    effects = list(b.columns)
    k = len(b)
    order = np.argsort(b[effects[0]].to_numpy(dtype=float), kind="stable")
    zq = float(ndtri(0.5 + level / 2))
    fig, axes = figure_axes(ax, figsize=(min(3.4 * len(effects) + 1.2, 14.0),
                                         min(max(3.0, 0.9 + 0.16 * k), 12.0)),
                            shape=(1, len(effects)), what="SlopeMixedResult.plot")
    y = np.arange(k)
    for j, (a, e) in enumerate(zip(axes, effects)):
        a.errorbar(b[e].to_numpy(dtype=float)[order], y,
                   xerr=zq * sd[e].to_numpy(dtype=float)[order], fmt="o", ms=3, lw=0.8,
                   color=_POINT)
        a.axvline(0, color=_LINE, lw=0.8, ls="--")
        a.set_title(plot_text(e), fontsize=10)
        a.set_ylim(-0.8, k - 0.2)
        if j == 0 and k <= MAX_NAMED_LEVELS:
            a.set_yticks(y, [plot_text(str(v)) for v in b.index[order]],
                         fontsize=8 if k <= 30 else 7)
            a.set_ylabel(plot_text(term))
        elif j == 0:
            a.set_yticks([])
            a.set_ylabel(plot_text(f"{k} levels of {term}, sorted"))
        else:
            a.set_yticks(y, [""] * k) if k <= MAX_NAMED_LEVELS else a.set_yticks([])
        a.set_xlabel(f"conditional mode ({100 * level:g}% interval)", fontsize=9)
        a.spines[["top", "right"]].set_visible(False)
    return fig
