"""The G-study result and the variance components of a fit or of balanced data.

:class:`GStudy` (the variance components, the D-study and the topics needed) is built here, below
the models: from balanced data (:func:`from_data`, the moment estimates of the crossed
random-effects ANOVA) or from the variance components a fitted model reports (:func:`from_fit`,
which reads ``variance_components()``, ``random_effects`` and ``data`` of any fit and imports
no model). :func:`irmodels.gstudy` (:mod:`irmodels.inference.gtheory`) is the user's entry.

References: docs/methods.md: "Variance components"; Brennan, *Generalizability Theory* (2001), ch. 3-6;
Webber, *Measurement in Information Retrieval Evaluation* (PhD thesis, 2010), ch. 4;
Urbano, Marrero & Martin, "On the Measurement of Test Collection Reliability", SIGIR 2013.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

# scipy.special's functions, which stats.f.ppf and stats.chi2.ppf evaluate (scipy.stats costs
# `irmodels gstudy` ~0.5 s to import)
from scipy.special import fdtri, gammaincinv

from irmodels._display import ResultDisplay
from irmodels._section import figure_axes
from irmodels._validate import check_probability, renamed
from irmodels.data._columns import relabel, user_frame
from irmodels.data.frame import check_rows, require_columns
from irmodels.errors import DataFormatError, DesignError, ModelError
from irmodels.stats._gtheory_kernels import (
    DSTUDY_COLUMNS,
    as_counts,
    ceil_count,
    check_scores,
    check_sided,
    coefficient,
    components_frame,
    dense_scores,
    draw_limits,
    level_codes,
    step_up,
    term_name,
    three_way,
    truncate_negative,
    two_way,
    warn_degenerate,
)

__all__ = ["GStudy", "alpha_of_level", "from_data", "from_fit", "term_name"]


def alpha_of_level(level: float) -> float:
    """The one-minus-coverage of a confidence ``level``: ``1 - level`` rounded to 12
    significant digits, so that a level gives the alpha it was written for exactly (the
    float ``1 - 0.95`` is ``0.050000000000000044``): ``level=0.95`` gives the numbers of the
    former ``alpha=0.05`` bit for bit. Every alpha written with up to four decimals (and every
    one from 1e-4 up written with six) is given back exactly by the level ``1 - alpha``.

    >>> alpha_of_level(0.95), alpha_of_level(0.9), alpha_of_level(0.999), 1 - 0.95
    (0.05, 0.1, 0.001, 0.050000000000000044)
    """
    return float(f"{1.0 - float(level):.12g}")


@dataclass(frozen=True)
class GStudy(ResultDisplay):
    """Result of :func:`irmodels.gstudy`: variance components and the D-study built on them.

    Attributes
    ----------
    components : DataFrame
        Indexed by component, columns ``variance`` (estimate, negatives set to 0), ``sd`` and
        ``share`` (of the total). See :func:`gstudy` for the component names.
    n_topics, n_systems : int
        Topics and systems in the G-study.
    n_facet : int or None
        Levels of the third facet (shards or samples), None for a system x topic design.
    facet : str or None
        Name of the third facet (``"shard"`` or ``"sample"``), None without one.
    mean_squares : Series or None
        Mean squares by component (``Residual`` last) when the data were available; the
        confidence intervals of the two-facet D-study need them.
    source : str
        ``"data"``, ``"anova"`` or ``"mixed"``.
    """

    components: pd.DataFrame
    n_topics: int
    n_systems: int
    n_facet: int | None = None
    facet: str | None = None
    mean_squares: pd.Series | None = field(default=None, repr=False)
    source: str = "data"
    #: Bootstrap draws of the variance components (one row per replicate, columns as
    #: ``components.index``), set by ``MixedResult.gstudy(n_resamples=...)``: the D-study's
    #: intervals are then their percentiles where no closed form applies.
    component_draws: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    #: The user's column names (canonical -> name) when :func:`gstudy` was given ``topic=`` /
    #: ``system=`` / ``score=``: the displayed components name them (``run``, ``qid:run``);
    #: :attr:`components` keeps the canonical index.
    column_names: dict | None = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ indices
    def _var(self, name: str) -> float:
        return float(self.components["variance"].get(name, 0.0))

    def _error_terms(self) -> list[tuple[str, frozenset[str], bool]]:
        """(component, facets other than system, enters relative error?) for every non-system term."""
        facets = {"topic"} | ({self.facet} if self.facet else set())
        out = []
        for name in self.components.index:
            if name == "system":
                continue
            parts = set(facets | {"system"}) if name == "Residual" else set(str(name).split(":"))
            out.append((str(name), frozenset(parts - {"system"}), "system" in parts))
        return out

    def _errors(self, topics: float, shards: float | None) -> tuple[float, float]:
        """Relative and absolute error variances for ``topics`` topics (and ``shards``)."""
        n: dict[str, float] = {"topic": float(topics)}
        if self.facet:
            n[self.facet] = float(self.n_facet or 1) if shards is None else float(shards)
        rel = absolute = 0.0
        for name, others, with_system in self._error_terms():
            div = math.prod(n[f] for f in others) if others else 1.0
            v = self._var(name) / div
            absolute += v
            if with_system:
                rel += v
        return rel, absolute

    @property
    def phi(self) -> float:
        """Dependability index for one topic (and one shard): ``var_s / (var_s + absolute error)``
        (NaN when both are 0)."""
        return coefficient(self._var("system"), self._errors(1, 1)[1])

    @property
    def rho_I(self) -> float:
        """Generalizability (intraclass) coefficient for one topic: ``var_s / (var_s + relative
        error)``; NaN when both are 0 (the systems do not differ at all)."""
        return coefficient(self._var("system"), self._errors(1, 1)[0])

    # ------------------------------------------------------------------ D-study
    def _single_topic_bounds(self, p: float) -> tuple[float, float]:
        """(signal/noise ratio for E rho^2, Phi for one topic) at F quantile probability ``p``.

        Feldt (1965): MS_s / MS_e ~ (1 + n_t var_s/var_e) F(df_s, df_e). Arteaga, Jeyaratnam &
        Franklin (1982) in Brennan (2001, eq. 6.14-6.15) for Phi.
        """
        ms = self.mean_squares
        assert ms is not None
        n_s, n_t = self.n_systems, self.n_topics
        df_s, df_t = n_s - 1, n_t - 1
        df_e = df_s * df_t
        m_s, m_t, m_e = float(ms["system"]), float(ms["topic"]), float(ms["Residual"])
        f2 = fdtri(df_s, df_e, p)  # = stats.f.ppf(p, df_s, df_e)
        if m_e > 0:
            ratio = (m_s / (m_e * f2) - 1.0) / n_t
        else:
            # no error at all: E rho^2 is 1 for any number of topics (NaN if MS_s is 0 too)
            ratio = math.inf if m_s > 0 else math.nan
        # = stats.chi2.ppf(p, df_s) / df_s, F(df_s, inf)
        f1 = (2.0 * gammaincinv(df_s / 2.0, p) if df_s > 0 else np.float64(math.nan)) / df_s
        f3 = fdtri(df_s, df_t, p)  # = stats.f.ppf(p, df_s, df_t)
        num = m_s**2 - f1 * m_s * m_e + (f1 - f2) * f2 * m_e**2
        den = (n_s - 1) * f1 * m_s * m_e + f3 * m_s * m_t
        # den = 0 with num > 0: MS_e = MS_t = 0 < MS_s, no absolute error, Phi = 1
        lam = num / den if den > 0 else (math.inf if num > 0 else 0.0)
        # a non-positive ratio means the limit is at (or below) 0 for every number of topics
        ratio = ratio if math.isnan(ratio) else max(ratio, 0.0)
        phi1 = 1.0 if math.isinf(lam) else n_s * lam / (n_s * lam + n_t) if lam > 0 else 0.0
        return ratio, phi1

    def _has_intervals(self) -> bool:
        return self.facet is None and self.mean_squares is not None

    def dstudy(
        self,
        topics: int | Sequence[int] | None = None,
        shards: int | Sequence[int] | None = None,
        *,
        level: float = 0.95,
        sided: Literal["two", "lower", "upper"] = "two",
        **deprecated: Any,
    ) -> pd.DataFrame:
        """Stability of the system comparison with ``n'`` topics (and shards).

        Parameters
        ----------
        topics : int or sequence of int, optional
            Numbers of topics ``n'`` (default: the G-study's own number).
        shards : int or sequence of int, optional
            Numbers of levels of the third facet (shards or samples); only with one. Default:
            the G-study's own number. Every combination of ``topics`` and ``shards`` is a row.
        level : float
            Confidence level of the intervals (default 0.95). Their tail probability ``alpha``
            is :func:`alpha_of_level` (``1 - level`` to 12 significant digits). Was ``alpha``
            (one minus the level; still accepted for one release, with a ``FutureWarning``,
            and used as given).
        sided : {"two", "lower", "upper"}
            Two-sided interval (``alpha/2`` in each tail), a lower bound only (the upper bound is
            then 1) or an upper bound only (the lower bound is then 0).

        Returns
        -------
        DataFrame
            One row per design, columns:

            - ``topics``: number of topics ``n'``;
            - ``Erho2``: generalizability coefficient ``var_s / (var_s + relative error)``;
            - ``Erho2_lower``, ``Erho2_upper``: Feldt (1965) confidence limits;
            - ``Phi``: dependability index ``var_s / (var_s + absolute error)``;
            - ``Phi_lower``, ``Phi_upper``: Arteaga, Jeyaratnam & Franklin (1982) limits;
            - ``shards`` (only with a third facet): number of shards or samples.

            Erho2 (and its limits) is NaN when the system variance and the relative error
            are both 0 (0/0). Limits are truncated to [0, 1]. They need the mean squares of a
            system x topic design; with a third facet, or components from a mixed model
            without data, they are NaN.

        Notes
        -----
        With ``n'`` topics the relative error variance is ``var_st,e / n'`` and the absolute one
        ``(var_t + var_st,e) / n'``; with a third facet ``h`` and ``n'_h`` levels every
        component is divided by the sample sizes of its non-system facets (Brennan 2001, ch. 4).
        For the intervals, the single-topic signal-to-noise ratio at the F quantile
        ``F(p; df_s, df_e)`` is ``r = (MS_s / (MS_e F) - 1) / n_t`` and
        ``E rho^2_L = n' r / (1 + n' r)`` (Feldt 1965; Brennan 2001, eq. 6.11-6.12); for
        Phi the one-topic limit of Arteaga et al. (1982) (Brennan 2001, eq. 6.14-6.15) is
        stepped up to ``n'`` topics by Spearman-Brown. Brennan's Table 6.5 gives the values
        for his Table 3.2 data. See Urbano, Marrero & Martin (SIGIR 2013) for the IR reading.

        Examples
        --------
        >>> import pandas as pd, irmodels as irm
        >>> w = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
        ...                   "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})
        >>> g = irm.gstudy(irm.from_wide(w))
        >>> g.dstudy(topics=[5, 50]).round(3)
           topics  Erho2  Erho2_lower  Erho2_upper    Phi  Phi_lower  Phi_upper
        0       5  0.946        0.759        0.996  0.707      0.183      0.974
        1      50  0.994        0.969        1.000  0.960      0.691      0.997
        """
        check_sided(sided)
        was_alpha = "alpha" in deprecated
        got = renamed(deprecated, "alpha", "level", level, 0.95, where="GStudy.dstudy")
        alpha = (check_probability(got, "alpha") if was_alpha
                 else alpha_of_level(check_probability(level, "level")))
        return self._dstudy(topics, shards, alpha, sided)

    def _dstudy(self, topics: int | Sequence[int] | None, shards: int | Sequence[int] | None,
                alpha: float, sided: str) -> pd.DataFrame:
        """:meth:`dstudy` at the tail probability ``alpha`` (checked)."""
        t_list = as_counts(self.n_topics if topics is None else topics, "topics")  # type: ignore[arg-type]
        if self.facet is None:
            if shards is not None:
                raise DesignError(
                    "shards= needs a G-study with a shard (or sample) facet; this one is "
                    "system x topic. Fit the G-study on data with a shard column."
                )
            h_list: list[int | None] = [None]
        else:
            h_list = list(as_counts(int(self.n_facet or 1) if shards is None else shards, "shards"))
        rows = []
        var_s = self._var("system")
        for h in h_list:
            for t in t_list:
                rel, absolute = self._errors(t, h)
                rows.append({
                    "topics": int(t),
                    "Erho2": coefficient(var_s, rel),
                    "Phi": coefficient(var_s, absolute),
                    "shards": h,
                })
        out = pd.DataFrame(rows)
        n = np.asarray(out["topics"], dtype=float)
        nan = np.full(len(out), np.nan)
        lo_e = up_e = lo_p = up_p = nan
        if self.component_draws is not None and not self._has_intervals():
            lo_e, up_e, lo_p, up_p = draw_limits(self, out, alpha, sided)
        elif self._has_intervals():
            tail = alpha / 2 if sided == "two" else alpha
            if sided in ("two", "lower"):
                r, p1 = self._single_topic_bounds(1 - tail)
                lo_e, lo_p = step_up(r, p1, n)
            else:
                lo_e = lo_p = np.zeros(len(out))
            if sided in ("two", "upper"):
                r, p1 = self._single_topic_bounds(tail)
                up_e, up_p = step_up(r, p1, n)
            else:
                up_e = up_p = np.ones(len(out))
        out["Erho2_lower"], out["Erho2_upper"] = lo_e, up_e
        out["Phi_lower"], out["Phi_upper"] = lo_p, up_p
        cols = DSTUDY_COLUMNS + (["shards"] if self.facet else [])
        out = out[cols]
        if self.facet:
            out["shards"] = out["shards"].astype("int64")
        return out

    def topics_needed(
        self,
        target: float = 0.95,
        *,
        index: Literal["Erho2", "Phi"] = "Erho2",
        level: float | None = None,
        sided: Literal["two", "lower", "upper"] = "two",
        shards: int | None = None,
        **deprecated: Any,
    ) -> Any:
        """Smallest number of topics whose ``index`` reaches ``target``.

        Parameters
        ----------
        target : float in (0, 1)
            Required E rho^2 or Phi.
        index : {"Erho2", "Phi"}
            Which coefficient must reach the target.
        level : float, optional
            When given (e.g. 0.95), also the topics needed according to each confidence limit
            at this level (as in :meth:`dstudy`, with ``sided``). Was ``alpha`` (one minus the
            level; still accepted for one release, with a ``FutureWarning``).
        sided : {"two", "lower", "upper"}
            How ``alpha`` is split (see :meth:`dstudy`).
        shards : int, optional
            Levels of the third facet in the D-study (default: the G-study's own number).

        Returns
        -------
        int or Series
            Without ``alpha``: the smallest integer ``n'``. With ``alpha``: a Series with
            ``topics`` (the point estimate), ``topics_lower`` (topics needed for the *lower*
            confidence limit to reach the target: the conservative answer) and
            ``topics_upper`` (for the upper limit), dtype ``Int64``; ``<NA>`` where a limit
            can never reach the target (a limit not in (0, 1), or a side not requested).

        Raises
        ------
        DesignError
            When no number of topics reaches the target (system variance 0, or errors that
            do not shrink with topics already too large), or the index is undefined (0/0:
            identical systems).
        ArgumentError
            ``alpha`` not in (0, 1).

        Notes
        -----
        Inverting ``E rho^2 = var_s / (var_s + A/n' + B)``, where ``A`` collects the error
        components divided by the number of topics and ``B`` the others (0 without a third
        facet): ``n' = ceil(A / (var_s (1 - target) / target - B))``. For two facets this is
        ``ceil(target var_e / (var_s (1 - target)))`` (``var_t + var_e`` for Phi).

        Examples
        --------
        >>> import pandas as pd, irmodels as irm
        >>> w = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
        ...                   "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})
        >>> g = irm.gstudy(irm.from_wide(w))
        >>> g.topics_needed(0.95), g.topics_needed(0.95, index="Phi")
        (6, 40)
        >>> g.topics_needed(0.95, level=0.95).tolist()
        [6, 31, 1]
        """
        target = check_probability(target, "target")
        if index not in ("Erho2", "Phi"):
            raise DesignError(f"index must be 'Erho2' or 'Phi'; got {index!r}")
        was_alpha = "alpha" in deprecated
        got = renamed(deprecated, "alpha", "level", level, None, where="GStudy.topics_needed")
        if was_alpha:
            alpha = None if got is None else check_probability(got, "alpha")
        else:
            alpha = None if level is None else alpha_of_level(check_probability(level, "level"))
        check_sided(sided)
        var_s = self._var("system")
        n: dict[str, float] = {"topic": 1.0}
        if self.facet:
            n[self.facet] = float(self.n_facet or 1) if shards is None else float(shards)
        a = b = 0.0
        for name, others, with_system in self._error_terms():
            if index == "Erho2" and not with_system:
                continue
            div = math.prod(n[f] for f in others if f != "topic")
            if "topic" in others:
                a += self._var(name) / div
            else:
                b += self._var(name) / div
        room = var_s * (1 - target) / target - b
        if var_s <= 0 and a <= 0 and b <= 0:
            raise DesignError(
                f"{index} is undefined (0/0): the system variance and the error variance are "
                "both 0, i.e. the systems have the same score on every topic (up to rounding), "
                "so no number of topics is 'needed' to tell them apart. Check that the runs "
                "differ (a duplicated run, or a measure that does not vary)."
            )
        if var_s <= 0:
            raise DesignError(
                f"no number of topics reaches {index} = {target}: the system variance is 0 (the "
                f"systems do not differ), so {index} is 0 for any number of topics."
            )
        if room <= 0:
            raise DesignError(
                f"no number of topics reaches {index} = {target}: the system variance is "
                f"{var_s:.4g} and the error that more topics cannot remove is {b:.4g}. Lower the "
                "target, or add shards/samples to the D-study (shards=...)."
            )
        point = ceil_count(a / room)
        if alpha is None:
            return point
        if not self._has_intervals():
            raise DesignError(
                "confidence limits of the topics needed require a system x topic G-study fitted "
                "from data (mean squares); this one has "
                + (f"a {self.facet} facet" if self.facet else "no mean squares")
                + f". Call topics_needed without {'alpha' if was_alpha else 'level'}."
            )
        tail = alpha / 2 if sided == "two" else alpha
        res: dict[str, Any] = {"topics": point, "topics_lower": pd.NA, "topics_upper": pd.NA}
        for key, p, on in (
            ("topics_lower", 1 - tail, sided in ("two", "lower")),
            ("topics_upper", tail, sided in ("two", "upper")),
        ):
            if not on:
                continue
            r, phi1 = self._single_topic_bounds(p)
            if index == "Erho2":
                if r > 0:
                    res[key] = ceil_count(target / ((1 - target) * r))
            elif 0 < phi1 <= 1:
                res[key] = ceil_count(target * (1 - phi1) / (phi1 * (1 - target)))
        return pd.Series(res, dtype="Int64", name=index)

    # ------------------------------------------------------------------ plot
    def plot(
        self,
        topics: Sequence[int] | None = None,
        *,
        level: float | None = 0.95,
        target: float | None = None,
        ax: Any = None,
        **deprecated: Any,
    ) -> Any:
        """D-study curves of E rho^2 and Phi against the number of topics.

        Parameters
        ----------
        topics : sequence of int, optional
            Numbers of topics on the x axis (default 1 to twice the G-study's number).
        level : float or None
            Shade the two-sided confidence bands at this level (default 0.95, when
            available); None for none. Was ``alpha`` (one minus the level; still accepted for
            one release, with a ``FutureWarning``).
        target : float, optional
            Draw a horizontal line at this stability.
        ax : matplotlib Axes, optional
            Draw here instead of on a new figure (the figure returned is then ``ax.figure``).

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned (the matplotlib idiom for
            functions that return figures): a notebook displays it once, as an image, from the
            returned value; ``fig.savefig`` works as usual.
        """
        if topics is None:
            topics = range(1, 2 * self.n_topics + 1)
        was_alpha = "alpha" in deprecated
        got = renamed(deprecated, "alpha", "level", level, 0.95, where="GStudy.plot")
        if was_alpha:
            alpha = None if got is None else check_probability(got, "alpha")
        else:
            alpha = None if level is None else alpha_of_level(check_probability(level, "level"))
        d = self._dstudy(list(topics), None, 0.05 if alpha is None else alpha, "two")
        fig, (ax,) = figure_axes(ax, figsize=(6, 4), what="GStudy.plot")
        for col, color in (("Erho2", "C0"), ("Phi", "C1")):
            label = "E\u03c1\u00b2" if col == "Erho2" else "\u03a6"
            ax.plot(d["topics"], d[col], color=color, label=label)
            if alpha is not None and d[f"{col}_lower"].notna().all():
                ax.fill_between(d["topics"], d[f"{col}_lower"], d[f"{col}_upper"],
                                color=color, alpha=0.2, linewidth=0)
        if target is not None:
            ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.axvline(self.n_topics, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("topics")
        ax.set_ylabel("stability")
        ax.set_ylim(0, 1)
        ax.legend(loc="lower right")
        return fig

    # ------------------------------------------------------------------ display
    def _display_title(self) -> str:
        facet = f" x {self.n_facet} {self.facet}s" if self.facet else ""
        if self.column_names:
            facet += f" ({self.column_names['system']} x {self.column_names['topic']})"
        return (
            f"G-study: {self.n_systems} systems x {self.n_topics} topics{facet} "
            f"(from {self.source}); per-topic phi = {self.phi:.4f}, rho_I = {self.rho_I:.4f}"
        )

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        shown = self.components
        if self.column_names:
            shown = shown.rename(index=lambda c: relabel(self.column_names, c))
        tables = [("Variance components", shown)]
        if self._has_intervals() or self.facet is None or self.component_draws is not None:
            tables.append(("D-study", self.dstudy(sorted({10, 25, 50, 100, self.n_topics}))))
        return tables

    def __repr__(self) -> str:
        facet = f", {self.facet}s={self.n_facet}" if self.facet else ""
        return (
            f"<GStudy systems={self.n_systems}, topics={self.n_topics}{facet}, "
            f"phi={self.phi:.4f}, rho_I={self.rho_I:.4f}>"
        )



def pick_facet(data: pd.DataFrame, facets: Sequence[str] | None) -> str | None:
    if facets is not None:
        facets = [facets] if isinstance(facets, str) else list(facets)
        unknown = [f for f in facets if f not in ("shard", "sample")]
        if unknown or len(facets) > 1:
            raise DesignError(
                f"facets must name at most one of 'shard' and 'sample'; got {list(facets)}. "
                "A G-study here has systems, topics and optionally one more random facet."
            )
        if facets:
            require_columns(data, facets)
            return facets[0]
        return None
    present = [c for c in ("shard", "sample") if c in data.columns and data[c].nunique() > 1]
    if len(present) > 1:
        raise DesignError(
            "the data have both shards and samples; pick the facet with facets=['shard'] or "
            "facets=['sample'] after averaging the other one."
        )
    return present[0] if present else None


def check_frame(df: pd.DataFrame) -> None:
    require_columns(df, ["topic", "system", "score"])
    check_rows(df, "irm.gstudy")
    for col in ("measure", "collection"):
        if col in df.columns and df[col].nunique() > 1:
            raise DesignError(
                f"the frame has {df[col].nunique()} levels of {col!r}; a G-study is for one "
                f"{col} at a time. Select one first, e.g. data[data[{col!r}] == ...]."
            )


def from_data(df: pd.DataFrame, facets: Sequence[str] | None = None) -> GStudy:
    """The G-study of balanced data in canonical columns (``topic``, ``system``, ``score``, and
    ``shard`` or ``sample`` for a third facet): the moment estimates of the crossed
    random-effects ANOVA (see :func:`irmodels.gstudy`)."""
    check_frame(df)
    facet = pick_facet(df, facets)
    axes = ["system", "topic"] + ([facet] if facet else [])
    y = dense_scores(df, axes)
    check_scores(y)
    if min(y.shape) < 2:
        raise DesignError(
            f"a G-study needs at least 2 levels of every facet; found {dict(zip(axes, y.shape))}."
        )
    ms, var = three_way(y, facet) if facet else two_way(y)
    if not all(np.isfinite(v) for v in ms.values()):
        raise DataFormatError(
            f"the scores are too large for double precision: the mean squares overflow "
            f"(largest |score| {float(np.max(np.abs(y))):.3g}). Rescale the scores first; the "
            "shares of variance and the coefficients do not change under rescaling."
        )
    var = truncate_negative(var, stacklevel=4)
    gs = GStudy(
        components=components_frame(var),
        n_topics=y.shape[1],
        n_systems=y.shape[0],
        n_facet=y.shape[2] if facet else None,
        facet=facet,
        mean_squares=pd.Series(ms, name="MS"),
        source="data",
    )
    warn_degenerate(gs, stacklevel=4)
    return gs


def refuse_slopes(result: Any, vc: pd.DataFrame) -> None:
    """A fit with random slopes (components indexed by group and effect) has no G-study."""
    slopes = [f"{g}: {e}" for g, e in vc.index if e not in ("", "(Intercept)")]
    raise ModelError(
        f"a G-study needs variance components that are constant over the design, and "
        f"{getattr(result, 'spec', 'this model')} has random slopes ({'; '.join(slopes)}): the "
        "variance of a topic's effect then depends on the value of x (Var(b0 + b1 x) = s0^2 + "
        "2 x s01 + x^2 s1^2), so no single phi or Erho2 exists. Fit the intercept model (e.g. "
        "score ~ system + (1|topic) + (1|topic:system)) for the G coefficients, or read the "
        "variances at a value of x from fit.variance_components() and fit.correlations().")


def from_fit(result: Any, facets: Sequence[str] | None = None, data: pd.DataFrame | None = None,
             *, topic: str = "topic", system: str = "system", score: str = "score") -> GStudy:
    """The G-study of a fitted model's variance components (``irm.gstudy(fit)``).

    ``result`` is any fit with ``variance_components()`` (a frame with a ``variance`` column),
    and ``data`` (or ``random_effects``, one entry per level of each factor); ``data`` given
    here overrides the fit's own, with the user's ``topic`` / ``system`` / ``score`` columns.
    A fit with random slopes is refused (:class:`~irmodels.ModelError`). See
    :func:`irmodels.gstudy` for the components and the errors.
    """
    if data is not None:
        data, _ = user_frame(data, topic=topic, system=system, score=score, what="irm.gstudy")
    vc = result.variance_components()
    if isinstance(vc, pd.DataFrame) and "effect" in (vc.index.names or ()):
        refuse_slopes(result, vc)
    if not isinstance(vc, pd.DataFrame) or "variance" not in vc.columns:
        raise DataFormatError(
            "the result's variance_components is not a DataFrame with a 'variance' column; "
            "pass the data instead: irm.gstudy(frame)."
        )
    if data is None and getattr(result, "random_effects", None) is None:
        # a fit that predicts random effects (a mixed model) gives the levels from them, and
        # the mean-square intervals only with data passed explicitly
        data = getattr(result, "data", None)
    if data is None:
        # a mixed model keeps its predicted random effects: one per level of each factor
        levels = {str(k): len(v) for k, v in (getattr(result, "random_effects", None) or {}).items()}
        if not {"system", "topic"} <= set(levels):
            raise DesignError(
                "this result does not carry its data; pass them too: "
                "irm.gstudy(result, data=frame)."
            )
        extra = [f for f in ("shard", "sample") if f in levels]
        facet = extra[0] if (facets is None and extra) else (list(facets)[0] if facets else None)
        skeleton = {f: pd.Series(pd.Categorical(range(levels[f])))
                    for f in ["system", "topic"] + ([facet] if facet else [])}
        return assemble(vc, facet, skeleton, None, result)
    check_frame(data)
    facet = pick_facet(data, facets)
    ms = None
    if facet is None:
        try:
            ms, _ = two_way(dense_scores(data, ["system", "topic"]))
        except DesignError:
            ms = None
    cols = {f: data[f] for f in ["system", "topic"] + ([facet] if facet else [])}
    return assemble(vc, facet, cols, ms, result)


def assemble(vc: pd.DataFrame, facet: str | None, cols: dict[str, pd.Series],
              ms: dict[str, float] | None, result: Any) -> GStudy:
    known = {"topic", "system"} | ({facet} if facet else set())
    var: dict[str, float] = {}
    for name, v in vc["variance"].items():
        if name == "Residual":
            continue
        parts = str(name).split(":")
        if not set(parts) <= known or "(Intercept)" in parts:
            raise DesignError(
                f"component {name!r} of the fitted model is not a facet of this G-study "
                f"({', '.join(sorted(known))}). Fit a model whose random terms are the facets, "
                "or pass facets=[...]."
            )
        var[term_name(parts)] = var.get(term_name(parts), 0.0) + float(v)
    if "system" not in var:
        raise DesignError(
            "the fitted model has no 'system' component; the object of measurement must be a "
            "(random) term, e.g. irm.anova('score ~ system + topic', data)."
        )
    ordered = ["system", "topic"] + ([facet] if facet else []) + ["topic:system"]
    if facet:
        ordered += [term_name(["system", facet]), term_name(["topic", facet])]
    # the D-study divides each component by the facets it crosses; the residual is divided by
    # them all, so it must be the highest-order term alone: every lower term must be in the model
    needed = ["topic"] + ([facet] + ordered[3:] if facet else [])
    pooled = [k for k in needed if k not in var]
    if pooled:
        design = "system x topic" + (f" x {facet}" if facet else "")
        full = ("MD6 (or a mixed model with every main effect and two-way interaction)" if facet
                else "MD1 (score ~ system + topic)")
        raise DesignError(
            f"the fitted model has no {', '.join(pooled)} term(s): their variance is pooled into "
            f"the residual, which a G-study of the {design} design treats as the "
            f"{'three-way interaction' if facet else 'system x topic interaction'} and divides "
            f"by the numbers of {'topics and ' + facet + 's' if facet else 'topics'}, so the "
            f"coefficients would be wrong. Fit {full}, or pass the data: irm.gstudy(frame)."
        )
    ordered += sorted((k for k in var if k not in ordered), key=lambda k: (k.count(":"), k))
    var = {k: var[k] for k in ordered if k in var}
    var["Residual"] = float(vc["variance"].get("Residual", 0.0))
    var = truncate_negative(var, stacklevel=5)
    codes = {f: level_codes(c)[1] for f, c in cols.items()}
    if "topic:system" in var:
        ms = None  # the interaction is separated: the two-way intervals do not apply
    source = "mixed" if "mixed" in type(result).__name__.lower() else "anova"
    gs = GStudy(
        components=components_frame(var),
        n_topics=codes["topic"],
        n_systems=codes["system"],
        n_facet=codes[facet] if facet else None,
        facet=facet,
        mean_squares=None if ms is None else pd.Series(ms, name="MS"),
        source=source,
    )
    warn_degenerate(gs, stacklevel=5)
    return gs
