"""Figures of the report: variance components and system means with Tukey intervals.

Every function draws results that already exist (no statistic is computed here) on a new
:class:`matplotlib.figure.Figure` (no pyplot state, works with the Agg backend) and returns it.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels.inference.tukey import TukeyResult

__all__ = ["figure_to_data_uri", "figure_to_png", "tukey_means_plot", "variance_components_plot"]

_BAR = "#4c72b0"
_TOP = "#dd8452"


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


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
    >>> vc = pd.DataFrame({"variance": [0.02, 0.005, 0.01], "share": [4/7, 1/7, 2/7]},
    ...                   index=["topic", "system", "Residual"])
    >>> fig = variance_components_plot(vc)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['topic', 'system', 'Residual']
    """
    names = [str(i) for i in components.index]
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
        ax.set_title(title)
    return fig


def tukey_means_plot(
    tukey: TukeyResult,
    *,
    kind: Literal["tukey", "anova", "sem"] = "tukey",
    title: str | None = None,
) -> Figure:
    """Level means sorted in decreasing order, with their intervals; the top group highlighted.

    With ``kind="tukey"`` two intervals overlap exactly when the two levels are not
    significantly different (METHODS section 3).

    Parameters
    ----------
    tukey : TukeyResult
        The result of :func:`irmodels.tukey_hsd` or ``AnovaResult.tukey()``.
    kind : {"tukey", "anova", "sem"}
        Which interval to draw (see ``TukeyResult.intervals``).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import irmodels as irm
    >>> hsd = irm.tukey_hsd({"a": 0.3, "b": 0.25, "c": 0.1}, df_error=40, ms_error=0.01, n=21)
    >>> fig = tukey_means_plot(hsd)
    >>> len(fig.axes[0].lines) >= 1
    True
    """
    iv = tukey.intervals(kind).sort_values("mean", ascending=False, kind="stable")
    top = set(tukey.top_group)
    k = len(iv)
    x = np.arange(k)
    in_top = np.array([str(i) in top for i in iv.index])
    fig = _figure(min(12.0, max(5.0, 0.09 * k + 3.0)), 3.8)
    ax = fig.add_subplot()
    for mask, color, label in ((~in_top, _BAR, "other"), (in_top, _TOP, "top group")):
        if mask.any():
            ax.errorbar(
                x[mask], iv["mean"].to_numpy()[mask],
                yerr=iv["halfwidth"].to_numpy()[mask],
                fmt="o", ms=3, lw=1, color=color, label=label,
            )
    if kind == "tukey" and k:
        # levels whose interval reaches above this line overlap the best one (top group)
        ax.axhline(float(iv["lower"].iloc[0]), ls="--", lw=0.8, color="#888888")
    if k <= 40:
        ax.set_xticks(x, [str(i) for i in iv.index], rotation=90, fontsize=7)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{k} {tukey.factor} levels, by mean (descending)")
    ax.set_ylabel(f"mean ({kind} interval)")
    ax.legend(frameon=False, fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    if title:
        ax.set_title(title)
    return fig


def figure_to_png(fig: Figure, *, dpi: int = 110) -> bytes:
    """PNG bytes of a figure (deterministic: no timestamp metadata)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def figure_to_data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for embedding a PNG in a self-contained HTML page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
