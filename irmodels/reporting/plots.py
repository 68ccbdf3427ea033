"""Figures of the report: variance components and system means with Tukey intervals.

Every function draws results that already exist (no statistic is computed here) on a new
:class:`matplotlib.figure.Figure` made through pyplot and closed there at once (no pyplot state;
a notebook shows it once, as an image, from the returned value), or into the Axes passed as
``ax=``, and returns the figure: the contract of every result's ``plot()`` method
(:func:`irmodels._section.figure_axes`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import plot_text
from irmodels._section import figure_axes, figure_to_data_uri, figure_to_png

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels.stats.tukey import TukeyResult

__all__ = ["MAX_LABEL", "figure_to_data_uri", "figure_to_png", "short_labels", "tukey_means_plot",
           "variance_components_plot"]

_BAR = "#4c72b0"
_TOP = "#dd8452"

#: Longest tick label (characters) of the figures: a longer level name is shortened with an
#: ellipsis in the middle (``short_labels``), so that a long run name neither collapses the plot
#: area nor is clipped at the figure's edge. Realistic TREC run names (about 24 characters)
#: are shown whole.
MAX_LABEL = 30

# inches taken by one character of a rotated tick label at font size 9 (DejaVu Sans)
_CHAR_IN = 0.075


def short_labels(names: Sequence[object], *, limit: int = MAX_LABEL) -> list[str]:
    """The names as plot labels of at most ``limit`` characters, still unique: a longer name
    keeps its beginning and its end around an ellipsis (run names usually differ at the end),
    moved along the name when two would collide, and numbered as a last resort.

    >>> short_labels(["run1", "a" * 20 + "-team-x", "a" * 20 + "-team-y"], limit=12)
    ['run1', 'aaaaa…team-x', 'aaaaa…team-y']
    >>> short_labels(["a" * 40 + "1" + "b" * 40, "a" * 40 + "2" + "b" * 40], limit=10)
    ['aaa…bbbb~1', 'aaa…bbbb~2']
    """
    limit = max(int(limit), 5)
    full = [str(n) for n in names]
    head = (limit - 1) // 2

    def window(n: str, h: int, tag: str = "") -> str:
        if len(n) <= limit and not tag:
            return n
        rest = limit - 1 - len(tag) - h
        return n[:h] + "…" + n[len(n) - rest:] + tag

    out = [window(n, head) for n in full]
    groups: dict[str, list[int]] = {}
    for i, label in enumerate(out):
        groups.setdefault(label, []).append(i)
    for label, rows in groups.items():
        rows = [i for i in rows if len(full[i]) > limit]  # a short name keeps itself
        if len(rows) < 2 and not (rows and len(groups[label]) > 1):
            continue
        taken = set(out) - {label}
        # slide the ellipsis to where these names differ, keeping more of the end first
        for h in [*range(head - 1, 0, -1), *range(head + 1, limit - 1)]:
            cand = [window(full[i], h) for i in rows]
            if len(set(cand)) == len(cand) and not taken.intersection(cand):
                for i, c in zip(rows, cand):
                    out[i] = c
                break
        else:  # no window tells them apart: number them
            for k, i in enumerate(rows, 1):
                tag = f"~{k}"
                out[i] = window(full[i], (limit - 1 - len(tag)) // 2, tag)
    final: set[str] = set()
    for i, label in enumerate(out):  # numbers may meet across groups (tiny limits)
        k = 1
        while label in final:
            tag = f"~{k}"
            label = window(full[i], max((limit - 1 - len(tag)) // 2, 0), tag)
            k += 1
            if label in out:
                label = out[i]
        out[i] = label
        final.add(label)
    return out


def variance_components_plot(components: pd.DataFrame, *, title: str | None = None,
                             ax: Any = None) -> Figure:
    """Bar chart of variance components (share of the total variance, in percent).

    Component names wider than their bar are tilted (and shortened beyond :data:`MAX_LABEL`
    characters, see :func:`short_labels`).

    Parameters
    ----------
    components : DataFrame
        Indexed by component, with columns ``variance`` and ``share`` (the shape returned by
        ``AnovaResult.variance_components()`` and ``MixedResult.variance_components``).
    title : str, optional
        Figure title.
    ax : matplotlib Axes, optional
        Draw into this Axes (the figure returned is then ``ax.figure``); by default a new
        figure.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure is closed in pyplot before it is returned: a notebook shows it once, as
        an image, from the returned value.

    Examples
    --------
    >>> import pandas as pd
    >>> vc = pd.DataFrame({"variance": [0.02, 0.005, 0.01], "share": [4/7, 1/7, 2/7]},
    ...                   index=["topic", "system", "Residual"])
    >>> fig = variance_components_plot(vc)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['topic', 'system', 'Residual']
    """
    names = [plot_text(s) for s in short_labels(components.index)]
    share = 100.0 * components["share"].to_numpy(dtype=float)
    # names wider than the space of a bar (a character is about 0.08 in at font size 10) are
    # tilted, and the figure is made taller for them
    width = max(4.0, 1.0 + 0.9 * len(names))
    longest = max((len(s) for s in names), default=0)
    tilt = 0.08 * longest > 0.95 * (width - 0.8) / max(len(names), 1)
    fig, (ax,) = figure_axes(
        ax, figsize=(width, 3.2 + (0.7 * _CHAR_IN * max(longest - 4, 0) if tilt else 0.0)),
        what="variance_components_plot")
    bars = ax.bar(np.arange(len(names)), share, color=_BAR)
    ax.set_xticks(np.arange(len(names)), names)
    if tilt:
        ax.tick_params(axis="x", labelrotation=35)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
            t.set_rotation_mode("anchor")
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
    ax: Any = None,
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
    ax : matplotlib Axes, optional
        Draw into this Axes (the figure returned is then ``ax.figure``); by default a new
        figure, closed in pyplot before it is returned.
    n_named : int
        With more than 40 levels the tick labels are dropped and the ``n_named`` best and the
        ``n_named`` worst levels are marked and named on the plot.

    A name longer than :data:`MAX_LABEL` characters is shortened with an ellipsis in the middle
    (:func:`short_labels`: the labels stay unique), and the figure is made taller for names
    longer than TREC's (about 24 characters), so that the plot area keeps its height.

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
    labels = [plot_text(s) for s in short_labels(iv.index)]
    # rotated tick labels below the axes: taller figure for names longer than TREC's (24 chars)
    longest = max((len(s) for s in labels), default=0) if k <= 40 else 0
    fig, (ax,) = figure_axes(ax, figsize=(9.0 if k > 12 else 6.0,
                                          4.6 + _CHAR_IN * max(0, longest - 24)),
                             what="tukey_means_plot")
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
    legend_top = 0.9
    if k <= 40:
        ax.set_xticks(x, labels, rotation=90, fontsize=9)
    else:
        ax.set_xticks([])
        ax.set_xlabel(plot_text(f"{k} {tukey.factor} levels, by mean (descending)"),
                      fontsize=11)
        lower = iv["lower"].to_numpy()
        upper = iv["upper"].to_numpy()
        n = min(n_named, k // 2)
        ax.scatter(x[:n], upper[:n] + 0.0, marker="v", s=14, color="#333333", zorder=3)
        ax.scatter(x[k - n:], lower[k - n:], marker="^", s=14, color="#333333", zorder=3)
        # the names, wrapped to the width of the axes (about 100 characters at font size 9)
        best = textwrap.fill("best (▼): " + ", ".join(labels[:n]), 100)
        worst = textwrap.fill("worst (▲): " + ", ".join(labels[k - n:]), 100)
        ax.text(0.01, 0.03, best, transform=ax.transAxes, fontsize=9, ha="left",
                va="bottom").set_in_layout(False)
        ax.text(0.99, 0.97 if k else 0.5, worst, transform=ax.transAxes, fontsize=9,
                ha="right", va="top", multialignment="right").set_in_layout(False)
        extra = max(best.count("\n"), worst.count("\n"))  # lines beyond one: more room
        legend_top -= 0.05 * worst.count("\n")
        span = float(np.nanmax(upper) - np.nanmin(lower)) if k else 1.0
        pad = (0.15 + 0.08 * extra) * span
        ax.set_ylim(float(np.nanmin(lower)) - pad, float(np.nanmax(upper)) + pad)
    what = plot_text(f"mean {measure}" if measure else "mean")
    ax.set_ylabel(f"{what} ({kind} interval)" if kind != "tukey" else f"{what} (Tukey interval)",
                  fontsize=11)
    ax.tick_params(axis="y", labelsize=10)
    ax.legend(frameon=False, fontsize=9, loc="upper right", bbox_to_anchor=(1, legend_top))
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(plot_text(title), fontsize=12)
    return fig
