"""Residual diagnostics of a fitted model: normality, constant variance, per-topic spread.

:func:`residual_diagnostics` takes a fit that exposes ``residuals``, ``fitted`` and ``data``
(``irm.anova`` results do) and returns a :class:`ResidualDiagnostics`: the Shapiro-Wilk and
Jarque-Bera tests of normality (``scipy.stats``), the Breusch-Pagan test of a variance that
changes with the fitted value (``statsmodels.stats.diagnostic.het_breuschpagan``), the residual
standard deviation of every topic, a three-panel figure (normal QQ plot, residuals against fitted
values, per-topic residual spread) and one sentence that says what they show.

With one score per (topic, system) cell the residual of ``score ~ topic + system`` *is* the
topic:system interaction (plus measurement noise): the two cannot be separated without replicates
(shards, document samples).
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay, frame_to_html, frame_to_latex
from irmodels._section import Section, figure_axes, frame_to_markdown, img_tag, png_tag
from irmodels.errors import DesignError

if TYPE_CHECKING:
    from irmodels.models.base import FittedModel

__all__ = ["ResidualDiagnostics", "residual_diagnostics"]


@dataclass(frozen=True, eq=False)
class ResidualDiagnostics(ResultDisplay):
    """Residual diagnostics of one fit (see :func:`residual_diagnostics`).

    Attributes
    ----------
    tests : DataFrame
        Index ``Shapiro-Wilk``, ``Jarque-Bera``, ``Breusch-Pagan``; columns ``statistic``,
        ``p`` and ``checks`` (what the test is about).
    topic_sd : Series
        Residual standard deviation per topic (ddof 1), in the data's topic order.
    skewness, excess_kurtosis : float
        Of the residuals.
    alpha : float
        Level at which the sentence calls a test significant.
    interaction_in_residual : bool
        True when the data have one row per (topic, system) cell and the model has no
        topic:system term: the residual then contains the interaction.
    """

    tests: pd.DataFrame
    topic_sd: pd.Series
    skewness: float
    excess_kurtosis: float
    alpha: float
    interaction_in_residual: bool
    residuals: np.ndarray = field(repr=False)
    fitted: np.ndarray = field(repr=False)
    topics: np.ndarray = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """The tests table (statistic, p, what it checks)."""
        return self.tests.copy()

    def text(self) -> str:
        """One paragraph, in plain words, on what the diagnostics show."""
        p = self.tests["p"]
        a = self.alpha
        parts = []
        if p["Shapiro-Wilk"] < a or p["Jarque-Bera"] < a:
            parts.append(
                f"The residuals are not normal (Shapiro-Wilk p {_p(p['Shapiro-Wilk'])}, "
                f"Jarque-Bera p {_p(p['Jarque-Bera'])}; skewness {self.skewness:.2f}, excess "
                f"kurtosis {self.excess_kurtosis:.2f}): the QQ plot bends away from the line in "
                "the tails."
            )
        else:
            parts.append(
                f"The residuals are compatible with a normal distribution (Shapiro-Wilk p "
                f"{_p(p['Shapiro-Wilk'])}, Jarque-Bera p {_p(p['Jarque-Bera'])})."
            )
        if p["Breusch-Pagan"] < a:
            parts.append(
                f"Their spread changes with the fitted value (Breusch-Pagan p "
                f"{_p(p['Breusch-Pagan'])}), as expected of scores bounded by 0 and 1."
            )
        else:
            parts.append(
                f"Their spread does not change detectably with the fitted value (Breusch-Pagan "
                f"p {_p(p['Breusch-Pagan'])})."
            )
        sd = self.topic_sd.dropna()
        if len(sd) > 1 and sd.min() > 0:
            parts.append(
                f"The per-topic residual SD ranges from {sd.min():.3f} to {sd.max():.3f} "
                f"(ratio {sd.max() / sd.min():.1f})."
            )
        parts.append(
            "With large samples these tests flag small departures; F tests and Tukey HSD on "
            "balanced data are robust to moderate non-normality, less so to unequal variances "
            "(a heteroscedastic mixed model, irm.mixed with varIdent strata, relaxes the latter)."
        )
        return " ".join(parts)

    def plot(self, *, ax: Any = None) -> Any:
        """Normal QQ plot, residuals against fitted values, per-topic residual SD (sorted).

        Parameters
        ----------
        ax : sequence of three matplotlib Axes, optional
            Draw the three panels there (the figure returned is then the first one's); by
            default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """
        fig, (ax1, ax2, ax3) = figure_axes(ax, figsize=(11, 3.6), shape=(1, 3),
                                           what="ResidualDiagnostics.plot")
        r = self.residuals
        (osm, osr), (slope, intercept, _) = stats.probplot(r, dist="norm")
        ax1.plot(osm, osr, "o", ms=2, color="#4c72b0", alpha=0.6)
        ax1.plot(osm, slope * osm + intercept, color="#c44e52", lw=1)
        ax1.set_xlabel("normal quantiles")
        ax1.set_ylabel("ordered residuals")
        ax1.set_title("Normal QQ plot", fontsize=10)
        ax2.plot(self.fitted, r, "o", ms=2, color="#4c72b0", alpha=0.4)
        ax2.axhline(0, color="#c44e52", lw=1)
        ax2.set_xlabel("fitted value")
        ax2.set_ylabel("residual")
        ax2.set_title("Residuals vs fitted", fontsize=10)
        sd = self.topic_sd.sort_values(kind="stable")
        ax3.bar(np.arange(len(sd)), sd.to_numpy(), color="#4c72b0", width=0.85)
        ax3.set_xlabel(f"{len(sd)} topics, by residual SD")
        ax3.set_ylabel("residual SD")
        ax3.set_xticks([])
        ax3.set_title("Per-topic residual spread", fontsize=10)
        for a in (ax1, ax2, ax3):
            a.spines[["top", "right"]].set_visible(False)
        return fig

    def to_section(self, *, plot: bool = True, digits: int = 4, png: bytes | None = None) -> Any:
        """This result as a report section (``irmodels._section.Section``); with ``plot``, the
        figure of :meth:`plot` embedded as a PNG, or ``png`` when given (that figure already
        rendered, a report's ``figures["residuals"]``: it is not drawn again)."""
        note = (
            "With one score per (topic, system) the residual contains the topic:system "
            "interaction: the model cannot tell a system that suits some topics from noise."
            if self.interaction_in_residual else ""
        )
        text = self.text()
        body = f"<p>{html.escape(text)}</p>"
        if note:
            body += f'<p class="note">{html.escape(note)}</p>'
        body += frame_to_html(self.tests, digits=digits)
        if plot:
            caption = ("Left: normal QQ plot (points on the line = normal residuals). Middle: "
                       "residuals against fitted values (a funnel = unequal variances). Right: "
                       "residual SD of each topic, sorted.")
            body += (img_tag(self.plot(), "residual diagnostics", caption) if png is None
                     else png_tag(png, "residual diagnostics", caption))
        md = text + ("\n\n" + note if note else "") + "\n\n" + frame_to_markdown(
            self.tests, digits=digits)
        tex = frame_to_latex(self.tests, caption="Residual diagnostics",
                             label="tab:residual-diagnostics", digits=digits)
        return Section(title="Residual diagnostics", html=body, markdown=md, latex=tex)

    def _display_title(self) -> str:
        return f"Residual diagnostics ({len(self.residuals)} residuals, alpha = {self.alpha:g})"

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Tests", self.tests)]

    def __repr__(self) -> str:
        p = self.tests["p"]
        return (f"<ResidualDiagnostics n={len(self.residuals)}, shapiro_p={p['Shapiro-Wilk']:.3g}, "
                f"breusch_pagan_p={p['Breusch-Pagan']:.3g}>")


def _p(p: float) -> str:
    return "< 1e-4" if p < 1e-4 else f"= {p:.3g}"


def residual_diagnostics(fit: FittedModel, *, alpha: float = 0.05) -> ResidualDiagnostics:
    """Residual diagnostics of a fitted model.

    Parameters
    ----------
    fit : FittedModel
        Any fitted model (``irm.anova``, ``irm.mixed``, ...): its ``residuals()``,
        ``fitted()``, ``data`` and ``spec`` are used (a mixed fit's are the conditional ones,
        as lme4's ``residuals()``). ``data`` needs a ``topic`` column for the per-topic
        spread.
    alpha : float
        Level at which the summary sentence calls a test significant.

    Returns
    -------
    ResidualDiagnostics

    Raises
    ------
    DesignError
        Fewer than 3 residuals, or residuals that are all zero.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> from irmodels.inference.diagnostics import residual_diagnostics
    >>> rng = np.random.default_rng(1)
    >>> w = pd.DataFrame(rng.normal(0.3, 0.1, (30, 5)), columns=list("abcde"))
    >>> d = residual_diagnostics(irm.anova("MD1", irm.from_wide(w)))
    >>> d.tests.index.tolist(), bool(d.interaction_in_residual)
    (['Shapiro-Wilk', 'Jarque-Bera', 'Breusch-Pagan'], True)
    >>> bool(d.tests.loc["Shapiro-Wilk", "p"] > 0.05)
    True
    """
    # statsmodels (about a second to import, most of it patsy) loads when the test runs, not
    # when the report's driver (irmodels.analysis) imports this module
    from statsmodels.stats.diagnostic import het_breuschpagan

    r = np.asarray(fit.residuals(), dtype=float)
    f = np.asarray(fit.fitted(), dtype=float)
    if r.size < 3 or not np.any(np.abs(r) > 1e-12):
        raise DesignError(
            f"residual diagnostics need at least 3 non-zero residuals; got {r.size} residuals"
            + (" all zero (a saturated model)" if r.size >= 3 else "")
            + ". Fit a model with residual degrees of freedom."
        )
    data = fit.data
    # scipy's UserWarning "for N > 5000 the p-value may not be accurate": harmless here, the
    # table's "checks" column says so for N > 5000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sw = stats.shapiro(r)
    jb = stats.jarque_bera(r)
    exog = np.column_stack([np.ones_like(f), f])
    if np.ptp(f) > 0:
        bp_stat, bp_p, _, _ = het_breuschpagan(r, exog)
    else:
        bp_stat, bp_p = float("nan"), float("nan")
    tests = pd.DataFrame(
        {
            "statistic": [float(sw.statistic), float(jb.statistic), float(bp_stat)],
            "p": [float(sw.pvalue), float(jb.pvalue), float(bp_p)],
            "checks": ["normality" + (" (N > 5000: p approximate)" if r.size > 5000 else ""),
                       "normality (skewness, kurtosis)",
                       "variance constant in the fitted value"],
        },
        index=pd.Index(["Shapiro-Wilk", "Jarque-Bera", "Breusch-Pagan"], name="test"),
    )
    if "topic" in data.columns:
        topics = data["topic"].to_numpy()
        topic_sd = pd.Series(r).groupby(data["topic"].to_numpy(), sort=False).std(ddof=1)
        topic_sd.index.name = "topic"
    else:
        topics = np.zeros(r.size)
        topic_sd = pd.Series(dtype=float)
    terms = {t.name for t in fit.spec.fixed}
    single = (
        {"topic", "system"} <= set(data.columns)
        and not data.duplicated(["topic", "system"]).any()
        and not any(("topic" in t and "system" in t) for t in terms)
    )
    return ResidualDiagnostics(
        tests=tests, topic_sd=topic_sd, skewness=float(stats.skew(r)),
        excess_kurtosis=float(stats.kurtosis(r)), alpha=float(alpha),
        interaction_in_residual=bool(single), residuals=r, fitted=f, topics=topics,
    )
