"""Figures of the report: variance components and system means with Tukey intervals.

Every function draws results that already exist (no statistic is computed here) on a new
:class:`matplotlib.figure.Figure`, closed in pyplot at once (no pyplot state, works with the Agg
backend, shown once in a notebook), and returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from irmodels._display import plot_text
from irmodels._section import figure_to_data_uri, figure_to_png

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels.inference.tukey import TukeyResult

__all__ = ["figure_to_data_uri", "figure_to_png", "tukey_means_plot", "variance_components_plot"]

_BAR = "#4c72b0"
_TOP = "#dd8452"


def _figure(width: float, height: float) -> Figure:
    import matplotlib.pyplot as plt

    # created through pyplot (so a notebook's inline backend knows how to show it) and closed
    # at once: the caller gets the figure, pyplot keeps no state, nothing is shown twice
    fig = plt.figure(figsize=(width, height), layout="constrained")
    plt.close(fig)
    return fig


def variance_components_plot(components: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Bar chart of variance components (share of the total variance, in percent).

    Parameters
    ----------
    components : DataFrame
        Indexed by component, with columns ``variance`` and ``share`` (the shape returned by
        ``AnovaResult.variance_components()`` and ``MixedResult.variance_components``).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import pandas as pd

from irmodels._section import figure_to_data_uri, figure_to_png
    >>> vc = pd.DataFrame({"variance": [0.02, 0.005, 0.01], "share": [4/7, 1/7, 2/7]},
    ...                   index=["topic", "system", "Residual"])
    >>> fig = variance_components_plot(vc)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['topic', 'system', 'Residual']
    """
    names = [plot_text(i) for i in components.index]
    share = 100.0 * components["share"].to_numpy(dtype=float)
    fig = _figure(max(4.0, 1.0 + 0.9 * len(names)), 3.2)
    ax = fig.add_subplot()
    bars = ax.bar(names, share, color=_BAR)
    for bar, s, v in zip(bars, share, components["variance"].to_numpy(dtype=float)):
        ax.annotate(
            f"{s:.1f}%\n({v:.3g})",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center", va="bottom", fontsize=8,
        )
    ax.set_ylabel("share of total variance (%)")
    ax.set_ylim(0, max(100.0, float(np.nanmax(share)) * 1.15) if len(share) else 100.0)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(plot_text(title))
    return fig


def tukey_means_plot(
    tukey: TukeyResult,
    *,
    kind: Literal["tukey", "anova", "sem"] = "tukey",
    title: str | None = None,
    measure: str | None = None,
    n_named: int = 5,
) -> Figure:
    """Level means sorted in decreasing order, with their intervals; the top group highlighted.

    With ``kind="tukey"`` two intervals overlap exactly when the two levels are not
    significantly different (Tukey 1953; Hochberg & Tamhane 1987, section 3). The dashed line
    is the lower end of the best level's interval: a level whose interval reaches above it is
    not significantly different from the best (the top group).

    Parameters
    ----------
    tukey : TukeyResult
        The result of :func:`irmodels.tukey_hsd` or ``AnovaResult.tukey()``.
    kind : {"tukey", "anova", "sem"}
        Which interval to draw (see ``TukeyResult.intervals``).
    title : str, optional
        Figure title.
    measure : str, optional
        The measure, written on the y axis.
    n_named : int
        With more than 40 levels the tick labels are dropped and the ``n_named`` best and the
        ``n_named`` worst levels are marked and named on the plot.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import irmodels as irm
    >>> hsd = irm.tukey_hsd({"a": 0.3, "b": 0.25, "c": 0.1}, df_error=40, ms_error=0.01, n=21)
    >>> fig = tukey_means_plot(hsd, measure="AP")
    >>> fig.axes[0].get_ylabel()
    'mean AP (Tukey interval)'
    """
    iv = tukey.intervals(kind).sort_values("mean", ascending=False, kind="stable")
    top = set(tukey.top_group)
    k = len(iv)
    x = np.arange(k)
    in_top = np.array([str(i) in top for i in iv.index])
    fig = _figure(9.0 if k > 12 else 6.0, 4.6)
    ax = fig.add_subplot()
    for mask, color, label in ((~in_top, _BAR, "significantly below the best"),
                               (in_top, _TOP, "top group (not different from the best)")):
        if mask.any():
            ax.errorbar(
                x[mask], iv["mean"].to_numpy()[mask],
                yerr=iv["halfwidth"].to_numpy()[mask],
                fmt="o", ms=3.5, lw=1, color=color, label=label,
            )
    if kind == "tukey" and k:
        # levels whose interval reaches above this line overlap the best one (top group)
        ax.axhline(float(iv["lower"].iloc[0]), ls="--", lw=0.9, color="#666666",
                   label="lower end of the best level's interval")
    if k <= 40:
        ax.set_xticks(x, [plot_text(i) for i in iv.index], rotation=90, fontsize=9)
    else:
        ax.set_xticks([])
        ax.set_xlabel(plot_text(f"{k} {tukey.factor} levels, by mean (descending)"),
                      fontsize=11)
        lower = iv["lower"].to_numpy()
        upper = iv["upper"].to_numpy()
        n = min(n_named, k // 2)
        names = [plot_text(i) for i in iv.index]
        ax.scatter(x[:n], upper[:n] + 0.0, marker="v", s=14, color="#333333", zorder=3)
        ax.scatter(x[k - n:], lower[k - n:], marker="^", s=14, color="#333333", zorder=3)
        ax.text(0.01, 0.03, "best (▼): " + ", ".join(names[:n]), transform=ax.transAxes,
                fontsize=9, ha="left", va="bottom")
        ax.text(0.99, 0.97 if k else 0.5, "worst (▲): " + ", ".join(names[k - n:]),
                transform=ax.transAxes, fontsize=9, ha="right", va="top")
        span = float(np.nanmax(upper) - np.nanmin(lower)) if k else 1.0
        ax.set_ylim(float(np.nanmin(lower)) - 0.15 * span, float(np.nanmax(upper)) + 0.15 * span)
    what = plot_text(f"mean {measure}" if measure else "mean")
    ax.set_ylabel(f"{what} ({kind} interval)" if kind != "tukey" else f"{what} (Tukey interval)",
                  fontsize=11)
    ax.tick_params(axis="y", labelsize=10)
    ax.legend(frameon=False, fontsize=9, loc="upper right", bbox_to_anchor=(1, 0.9))
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(plot_text(title), fontsize=12)
    return fig
