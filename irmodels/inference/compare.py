"""The comparison table of a paper: systems x measures, best in bold, significance letters.

:func:`compare` takes a long frame with one score per (topic, system, measure) and builds the
table IR papers print (as ``ranx.compare`` does), with the statistics done right: for each
measure, the topic-blocked Tukey HSD of the two-way model ``score ~ topic + system``
(:meth:`irmodels.models.anova.AnovaResult.tukey`), or a paired test between every two systems
with a multiplicity adjustment (:func:`irmodels.inference.pairwise.pairwise`), or each system
against a baseline. Every system gets a letter; a superscript on a mean lists the letters of the
systems it is significantly better than on that measure.

References: J. W. Tukey's HSD with the topic x system model is the test recommended by
B. Carterette, "Multiple testing in statistical analysis of systems-based information retrieval
experiments", ACM TOIS 30(1), 2012, and T. Sakai, *Statistical Reform in Information Retrieval?*,
SIGIR Forum 48(1), 2014; the layout follows E. Bassani, "ranx: A Blazing-Fast Python Library for
Ranking Evaluation and Comparison", ECIR 2022.
"""

from __future__ import annotations

import html
import itertools
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from irmodels._display import ResultDisplay, frame_to_latex, frame_to_text
from irmodels._section import Section
from irmodels._validate import check_seed, did_you_mean
from irmodels.data._columns import own_names, user_frame
from irmodels.data.frame import check_rows
from irmodels.data.frame import frame as make_frame
from irmodels.data.measures import parse_measure
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.inference.pairwise import pairwise, score_matrix, unit_scale
from irmodels.models.anova import anova
from irmodels.stats.effects import check_margin, paired_effects
from irmodels.stats.paired import degenerate

__all__ = ["CompareResult", "compare", "system_letters"]

CompareTest = Literal["tukey", "t", "wilcoxon", "randomization"]
TESTS = ("tukey", "t", "wilcoxon", "randomization")
ADJUSTMENTS = (None, "none", "bonferroni", "holm", "hochberg", "hommel", "bh", "by")

_TEST_TEXT = {
    "tukey": "Tukey HSD of the two-way topic + system model",
    "t": "paired t test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "paired randomization test",
}
_TEST_PHRASE = {
    "tukey": "the Tukey HSD of the two-way topic + system model",
    "t": "a paired t test",
    "wilcoxon": "a Wilcoxon signed-rank test",
    "randomization": "a paired randomization test",
}
_ADJUST_TEXT = {None: "no adjustment", "bonferroni": "Bonferroni adjustment",
                "holm": "Holm adjustment", "hochberg": "Hochberg adjustment",
                "hommel": "Hommel adjustment", "bh": "Benjamini-Hochberg adjustment",
                "by": "Benjamini-Yekutieli adjustment"}

#: Columns of :meth:`CompareResult.to_frame`, in this order.
FRAME_COLUMNS = ("system", "letter", "measure", "mean", "best", "better_than", "n_topics")
#: Columns of :attr:`CompareResult.pairs`, in this order.
PAIR_COLUMNS = ("measure", "a", "b", "diff", "p_adj", "reject", "better",
                "dz", "dz_lower", "dz_upper")


def system_letters(n: int) -> list[str]:
    """Letters for ``n`` systems: ``a`` ... ``z``, then ``aa``, ``ab``, ...

    >>> system_letters(3), system_letters(28)[-3:]
    (['a', 'b', 'c'], ['z', 'aa', 'ab'])
    """
    out: list[str] = []
    width = 1
    while len(out) < n:
        for combo in itertools.product(string.ascii_lowercase, repeat=width):
            out.append("".join(combo))
            if len(out) == n:
                break
        width += 1
    return out


@dataclass(frozen=True, repr=False, eq=False)
class CompareResult(ResultDisplay):
    """Result of :func:`compare`.

    Attributes
    ----------
    means : DataFrame
        Index ``system`` (in the frame's order, or ``systems``), one column per measure: the
        mean score over topics.
    letters : Series
        The letter of each system (``a``, ``b``, ...), indexed by system.
    pairs : DataFrame
        Every pair tested, columns :data:`PAIR_COLUMNS`: ``measure``, ``a``, ``b`` (``a``
        before ``b`` in system order; with a baseline ``a`` is the baseline), ``diff`` = mean of
        ``a`` minus mean of ``b``, ``p_adj`` (Tukey-adjusted, or adjusted by ``adjust``),
        ``reject`` (``p_adj < alpha``) and ``better`` (the system with the higher mean when
        rejected, else empty), ``dz`` = ``diff / sd`` of the per-topic differences with its exact
        ``1 - alpha`` interval ``dz_lower``, ``dz_upper`` (noncentral t, as in
        :func:`irmodels.pairwise`), and ``p_equiv`` (TOST p-value, after them) when
        :func:`compare` was given ``equivalence=``.
    test : str
        ``"tukey"``, ``"t"``, ``"wilcoxon"`` or ``"randomization"``.
    adjust : str or None
        The adjustment of the paired tests (None for Tukey, whose p-values are adjusted by
        construction).
    alpha : float
        Significance level (family-wise within each measure).
    baseline : str or None
        The system every other one is compared with, or None for all pairs.
    n_topics : Series
        Topics per measure.
    equivalence : float or None
        The equivalence margin of ``p_equiv``, or None.
    column_names : dict or None
        The user's column names (canonical -> name) when :func:`compare` was given
        ``topic=``/``system=``/``score=``: the summary's rows are then headed by the user's
        system column; the attributes keep the canonical names.
    """

    means: pd.DataFrame
    letters: pd.Series
    pairs: pd.DataFrame
    test: str
    adjust: str | None
    alpha: float
    baseline: str | None
    n_topics: pd.Series = field(repr=False)
    column_names: dict | None = field(default=None, repr=False)
    equivalence: float | None = field(default=None, repr=False)

    # ---------------------------------------------------------------- questions
    @property
    def measures(self) -> list[str]:
        """The measures, in column order."""
        return [str(m) for m in self.means.columns]

    @property
    def systems(self) -> list[str]:
        """The systems, in row order."""
        return [str(s) for s in self.means.index]

    def significant_pairs(self, measure: str | None = None) -> set[tuple[str, str]]:
        """Significant pairs of one measure (default: the first) as ``(a, b)`` tuples, ``a``
        before ``b`` in system order (the baseline first with a baseline)."""
        m = self._measure(measure)
        p = self.pairs[(self.pairs["measure"] == m) & self.pairs["reject"]]
        return set(zip(p["a"].astype(str), p["b"].astype(str)))

    def better_than(self, measure: str | None = None) -> dict[str, list[str]]:
        """For each system, the systems it is significantly better than on ``measure``."""
        m = self._measure(measure)
        p = self.pairs[(self.pairs["measure"] == m) & self.pairs["reject"]]
        out: dict[str, list[str]] = {s: [] for s in self.systems}
        order = {s: i for i, s in enumerate(self.systems)}
        for a, b, win in zip(p["a"].astype(str), p["b"].astype(str), p["better"].astype(str)):
            loser = b if win == a else a
            out[win].append(loser)
        return {k: sorted(v, key=order.__getitem__) for k, v in out.items()}

    def best(self, measure: str | None = None) -> list[str]:
        """The system(s) with the highest mean on ``measure``."""
        col = self.means[self._measure(measure)]
        return [str(s) for s in col.index[col == col.max()]]

    def _measure(self, measure: str | None) -> str:
        if measure is None:
            return self.measures[0]
        if str(measure) not in self.measures:
            raise DataFormatError(
                f"measure {measure!r} is not in the comparison; it has {', '.join(self.measures)}."
            )
        return str(measure)

    # ---------------------------------------------------------------- marks
    def marks(self) -> pd.DataFrame:
        """The superscript of every cell (system x measure): the letters of the systems it is
        significantly better than (comma-separated beyond 26 systems), or with a baseline ``"+"`` (significantly better than the
        baseline) / ``"-"`` (significantly worse); empty when nothing is significant."""
        out = pd.DataFrame("", index=self.means.index, columns=self.means.columns)
        for m in self.measures:
            if self.baseline is None:
                sep = "," if len(self.systems) > 26 else ""
                for s, losers in self.better_than(m).items():
                    out.loc[s, m] = sep.join(self.letters[x] for x in losers)
            else:
                p = self.pairs[(self.pairs["measure"] == m) & self.pairs["reject"]]
                for b, win in zip(p["b"].astype(str), p["better"].astype(str)):
                    out.loc[b, m] = "+" if win == b else "-"
        return out

    def _is_best(self) -> pd.DataFrame:
        return self.means.eq(self.means.max(axis=0), axis=1)

    def caption(self) -> str:
        """The caption of the table: what was tested, how, at which level."""
        topics = sorted(set(int(v) for v in self.n_topics))
        t_text = " or ".join(map(str, topics))
        how = _TEST_PHRASE[self.test]
        if self.test != "tukey":
            how += f" with {_ADJUST_TEXT[self.adjust]}"
        if self.baseline is None:
            marks = ("A superscript lists the letters of the systems a system is significantly "
                     "better than")
        else:
            marks = (f"A dagger marks a significant difference from the baseline "
                     f"{self.baseline}, with an arrow up when better and down when worse")
        return (f"Mean over {t_text} topics; best per measure in bold. {marks}, by {how} "
                f"(alpha = {self.alpha:g} per measure).")

    # ---------------------------------------------------------------- display
    def _display_title(self) -> str:
        base = f", baseline {self.baseline}" if self.baseline else ""
        adj = "" if self.test == "tukey" else f", {_ADJUST_TEXT[self.adjust]}"
        return (f"Comparison of {len(self.systems)} systems on {', '.join(self.measures)}: "
                f"{_TEST_TEXT[self.test]}{adj}, alpha = {self.alpha:g}{base}")

    def _cells(self, decimals: int, style: Literal["text", "html", "latex"]) -> pd.DataFrame:
        marks = self.marks()
        best = self._is_best()
        out = pd.DataFrame("", index=self.means.index, columns=self.means.columns, dtype=object)
        for m in self.measures:
            for s in self.means.index:
                v = self.means.loc[s, m]
                num = "" if pd.isna(v) else f"{v:.{decimals}f}"
                mk = marks.loc[s, m]
                b = bool(best.loc[s, m])
                if style == "latex":
                    cell = rf"\textbf{{{num}}}" if b else num
                    if mk in ("+", "-"):
                        arrow = r"\uparrow" if mk == "+" else r"\downarrow"
                        cell += rf"$^{{\dagger{arrow}}}$"
                    elif mk:
                        cell += rf"$^{{\mathrm{{{mk}}}}}$"
                elif style == "html":
                    cell = f"<b>{num}</b>" if b else num
                    if mk:
                        sup = {"+": "&dagger;&uarr;", "-": "&dagger;&darr;"}.get(mk, html.escape(mk))
                        cell += f"<sup>{sup}</sup>"
                else:
                    cell = num + ("*" if b else "")
                    if mk:
                        cell += "^" + {"+": "+", "-": "-"}.get(mk, mk)
                out.loc[s, m] = cell
        return out

    def _table(self, decimals: int, style: Literal["text", "html", "latex"]) -> pd.DataFrame:
        cells = self._cells(decimals, style)
        cells.insert(0, "#", [str(self.letters[s]) for s in cells.index])
        cells.columns = pd.Index([str(c) for c in cells.columns])
        cells.index = pd.Index([str(s) for s in cells.index],
                               name=(self.column_names or {}).get("system", "system"))
        return cells

    def summary(self, digits: int = 4, *, pairs: bool = False) -> str:
        """The table as text: ``*`` marks the best mean of a measure, ``^bc`` the letters of the
        systems a system is significantly better than (``^+`` / ``^-`` against a baseline).
        ``pairs=True`` adds the pairs with their effect sizes (:meth:`effects`)."""
        text = (f"{self._display_title()}\n\n{self._table(digits, 'text').to_string()}\n\n"
                f"{self.caption()}")
        if pairs:
            eff = self.effects()
            eff.index = pd.Index([f"{m}: {p}" for m, p in eff.index], name="pair")
            text += f"\n\n{self.effects_caption()}\n\n{frame_to_text(eff, digits)}"
        return text

    def effects(self, measure: str | None = None) -> pd.DataFrame:
        """The pairs beside their effect sizes: index ``measure, pair`` (``a - b``), columns
        ``diff, p_adj, reject, dz, dz_lower, dz_upper`` (and ``p_equiv`` with an equivalence
        margin); all measures, or one."""
        t = self.pairs if measure is None else self.pairs[
            self.pairs["measure"] == self._measure(measure)]
        cols = ["diff", "p_adj", "reject", "dz", "dz_lower", "dz_upper"]
        if "p_equiv" in t.columns:
            cols.append("p_equiv")
        out = t[cols].copy()
        out.index = pd.MultiIndex.from_arrays(
            [t["measure"].astype(str), [f"{a} - {b}" for a, b in zip(t["a"], t["b"])]],
            names=["measure", "pair"])
        return out

    def effects_caption(self) -> str:
        """What :meth:`effects` shows: the test, the interval level and the margin."""
        how = _TEST_PHRASE[self.test] + ("" if self.test == "tukey"
                                         else f" with {_ADJUST_TEXT[self.adjust]}")
        eq = ("" if self.equivalence is None else
              f"; p_equiv: two one-sided t tests of equivalence within +/-{self.equivalence:g}")
        return (f"Pairs: mean difference, adjusted p by {how}; standardized difference d_z "
                f"(mean / SD of the per-topic differences) with its exact "
                f"{1 - self.alpha:.0%} interval (noncentral t){eq}.")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Mean per system and measure", self.means)]

    def to_frame(self) -> pd.DataFrame:
        """Tidy: one row per (system, measure), columns :data:`FRAME_COLUMNS` (``best`` is
        True for the highest mean of the measure; ``better_than`` the systems it is
        significantly better than, comma-separated)."""
        rows = []
        best = self._is_best()
        for m in self.measures:
            wins = self.better_than(m)
            for s in self.systems:
                rows.append((s, str(self.letters[s]), m, float(self.means.loc[s, m]),
                             bool(best.loc[s, m]), ",".join(wins[s]), int(self.n_topics[m])))
        return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))

    def to_latex(
        self,
        *,
        caption: str | None = None,
        label: str | None = None,
        digits: int = 4,
        columns: Sequence[str] | None = None,
        pairs: bool = False,
    ) -> str:
        r"""The comparison table in booktabs LaTeX: one row per system (with its letter), one
        column per measure, the best mean in bold, superscript letters for significant
        differences (a dagger with an arrow against a baseline). It compiles in a plain
        ``article`` with ``\usepackage{booktabs}`` and fits the text width.

        Parameters
        ----------
        caption : str, optional
            Default :meth:`caption` (which test, which adjustment, which alpha).
        label : str, optional
            Default ``tab:compare``.
        digits : int
            Decimals of the means.
        columns : sequence of str, optional
            The measures to print, in this order.
        pairs : bool
            Print instead the pairs with their effect sizes (:meth:`effects`: difference,
            adjusted p, ``d_z`` with its interval, ``p_equiv``), of the measures ``columns``;
            caption default :meth:`effects_caption`, label ``tab:compare-pairs``.
        """
        if pairs:
            eff = self.effects()
            if columns is not None:
                for c in columns:
                    self._measure(c)
                eff = eff[eff.index.get_level_values("measure").isin([str(c) for c in columns])]
            return frame_to_latex(eff, caption=caption or self.effects_caption(),
                                  label=label or "tab:compare-pairs", digits=digits)
        table = self._table(digits, "latex")
        if columns is not None:
            missing = [c for c in columns if c not in self.measures]
            if missing:
                raise KeyError(f"no measure(s) {', '.join(map(repr, missing))} in the "
                               f"comparison; it has {', '.join(self.measures)}.")
            table = table[["#", *columns]]
        # frame_to_latex escapes the index (and the headers) itself: not here too
        table.index = pd.Index([str(s) for s in table.index], name="System")
        return frame_to_latex(table, caption=caption or self.caption(),
                              label=label or "tab:compare", raw_cells=True)

    def to_section(self, *, digits: int = 4) -> Any:
        """The report section: the table (HTML with bold and superscripts, Markdown, LaTeX)
        and its caption."""
        text = self._table(digits, "text").to_string()
        return Section(title="Comparison of systems", html=self._repr_html_(digits),
                       markdown=f"{self._display_title()}\n\n```\n{text}\n```\n\n{self.caption()}",
                       latex=self.to_latex(digits=digits))

    def _repr_html_(self, digits: int = 4) -> str:
        table = self._table(digits, "html")
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
        rows = "".join(
            f"<tr><th>{html.escape(str(s))}</th>"
            + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
            for s, row in zip(table.index, table.itertuples(index=False))
        )
        return (f"<div class='irmodels-result'><strong>{html.escape(self._display_title())}"
                "</strong><div class='irm-table-wrap' style='overflow-x:auto;max-width:100%'>"
                f"<table class='irm-table'><thead><tr><th>system</th>{head}</tr></thead>"
                f"<tbody>{rows}</tbody></table></div><p>{html.escape(self.caption())}</p></div>")

    def __repr__(self) -> str:
        base = f", baseline={self.baseline!r}" if self.baseline else ""
        n_sig = int(self.pairs["reject"].sum())
        return (f"<CompareResult {len(self.systems)} systems x {len(self.measures)} measures, "
                f"test={self.test!r}, alpha={self.alpha:g}{base}: {n_sig} significant "
                f"pair-measures>")


def _canonical(name: str) -> str:
    try:
        return str(parse_measure(name))
    except ValueError:  # not a measure irmodels knows (DataFormatError): compared by its name
        return name


def measure_frames(frame: pd.DataFrame, measures: Sequence[str] | None) -> dict[str, pd.DataFrame]:
    """The long frame split by measure, in the order asked (or the frame's order): name ->
    rows of that measure. A measure may be named by another of its names (``map`` for ``AP``).
    Raises :class:`DataFormatError` for a frame that is not long, a missing column or an
    unknown measure; ``irmodels compare`` checks ``--measures`` with it before any work."""
    if not isinstance(frame, pd.DataFrame):
        raise DataFormatError(
            f"compare expects a long frame (topic, system, score[, measure]); got "
            f"{type(frame).__name__}. Build one with irm.frame(...) or irm.evaluate(...)."
        )
    check_rows(frame, "irm.compare")
    missing = [c for c in ("topic", "system", "score") if c not in frame.columns]
    if missing:
        raise DataFormatError(
            f"the frame has no column(s) {', '.join(missing)}; compare needs topic, system, "
            f"score (and measure for several measures). Columns seen: "
            f"{', '.join(map(str, frame.columns))}."
        )
    if "measure" not in frame.columns:
        name = str(frame.attrs.get("measure", "score")) if not measures else str(measures[0])
        if measures is not None and len(measures) > 1:
            raise DataFormatError(
                f"the frame has no measure column, so it holds one measure; got measures="
                f"{list(measures)}. Pass a frame with a measure column (irm.evaluate output)."
            )
        return {name: frame}
    have = [str(m) for m in pd.unique(frame["measure"].astype(str))]
    if measures is None:
        if isinstance(frame["measure"].dtype, pd.CategoricalDtype):
            cats = [str(c) for c in frame["measure"].cat.categories]
            have = [c for c in cats if c in set(have)]
        chosen = have
    else:
        # a measure may be asked by another of its names (AP for trec_eval's map)
        canon = {_canonical(h): h for h in have}
        chosen = [m if m in have else canon.get(_canonical(m), m) for m in map(str, measures)]
        unknown = [m for m in chosen if m not in have]
        if unknown:
            raise DataFormatError(
                f"measure(s) {', '.join(map(repr, unknown))} not in the frame; it has "
                f"{', '.join(have)}."
            )
    key = frame["measure"].astype(str)
    return {m: frame[key == m] for m in chosen}


def compare(
    frame: pd.DataFrame,
    measures: Sequence[str] | None = None,
    *,
    test: CompareTest = "tukey",
    adjust: Literal["holm", "bonferroni", "hochberg", "hommel", "bh", "by", "none"] | None = "holm",
    alpha: float = 0.05,
    baseline: str | None = None,
    seed: int | None = 0,
    systems: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
    equivalence: float | None = None,
) -> CompareResult:
    r"""The comparison table of a paper: mean per system and measure, with significance marks.

    Parameters
    ----------
    frame : DataFrame
        Long frame (``irm.evaluate`` output, ``irm.frame``) with one score per (topic, system)
        for each measure; a ``measure`` column when there are several.
    measures : sequence of str, optional
        Measures (columns of the table), in this order. Default: all, in the frame's order.
    test : {"tukey", "t", "wilcoxon", "randomization"}
        ``"tukey"``: Tukey HSD on the two-way model ``score ~ topic + system`` of each measure,
        exactly ``irm.anova("score ~ topic + system", frame_m).tukey("system", alpha=alpha)``
        (topics block the comparison; the family is all pairs). Otherwise a paired test of
        every pair (:func:`irmodels.pairwise`) adjusted by ``adjust``.
    adjust : {"holm", "bonferroni", "hochberg", "hommel", "bh", "by", "none", None}
        Multiplicity adjustment of the paired tests over the pairs of one measure, as in
        :func:`irmodels.pairwise` (ignored by Tukey's HSD, which controls the family-wise error
        itself).
    alpha : float
        Significance level, per measure.
    baseline : str, optional
        Compare every system with this one only: the marks are daggers (up: significantly
        better than the baseline, down: worse). With ``"tukey"`` the Tukey family is still all
        pairs (conservative).
    seed : int, optional
        Seed of the randomization test.
    systems : sequence of str, optional
        The systems (rows), in this order; default all, in the frame's order.
    n_resamples : int
        Resamples of the randomization test.
    topic, system, score : str
        The names of the topic, system and score columns of ``frame`` (as in
        :func:`irmodels.frame`): ``irm.compare(df, topic="qid", system="run", score="map")``;
        the table's rows are then headed by the user's system column.
    equivalence : float, optional
        An equivalence margin in score units: the pairs get ``p_equiv``, the p-value of the two
        one-sided paired t tests (TOST) that ``|diff| < equivalence``.

    Returns
    -------
    CompareResult
        ``summary()``, ``to_latex()``, ``to_frame()``, ``_repr_html_``; ``significant_pairs``,
        ``better_than``, ``marks()``; the pairs with their effect sizes ``d_z`` (and
        ``p_equiv``) in ``pairs`` and :meth:`~CompareResult.effects`, printed by
        ``summary(pairs=True)`` and ``to_latex(pairs=True)``.

    Raises
    ------
    DataFormatError
        Unknown test, adjustment, measure, system or baseline; bad ``alpha``.
    DesignError
        Several scores per (topic, system) within a measure, missing cells, fewer than two
        systems.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(3)
    >>> base = rng.beta(2, 5, size=(30, 1))
    >>> ap = pd.DataFrame(base + [0.0, 0.05, 0.12] + rng.normal(0, 0.03, (30, 3)),
    ...                   columns=["bm25", "rm3", "dense"])
    >>> p10 = (ap + rng.normal(0, 0.05, ap.shape)).clip(0, 1)
    >>> data = pd.concat([irm.from_wide(ap).assign(measure="AP"),
    ...                   irm.from_wide(p10).assign(measure="P@10")], ignore_index=True)
    >>> res = irm.compare(data)
    >>> print(res.summary())  # doctest: +NORMALIZE_WHITESPACE
    Comparison of 3 systems on AP, P@10: Tukey HSD of the two-way topic + system model, alpha = 0.05
    <BLANKLINE>
            #          AP        P@10
    system
    bm25    a      0.2913      0.2916
    rm3     b    0.3420^a    0.3458^a
    dense   c  0.4101*^ab  0.4116*^ab
    <BLANKLINE>
    Mean over 30 topics; best per measure in bold. A superscript lists the letters of the systems a system is significantly better than, by the Tukey HSD of the two-way topic + system model (alpha = 0.05 per measure).
    >>> res.significant_pairs("AP") == {
    ...     (str(a), str(b)) for a, b, r in irm.anova("score ~ topic + system",
    ...     data[data["measure"] == "AP"]).tukey().pairs[["a", "b", "reject"]].itertuples(index=False) if r}
    True
    """
    seed = check_seed(seed)
    margin = None if equivalence is None else check_margin(equivalence)
    if test not in TESTS:
        raise ArgumentError(f"unknown test {test!r}{did_you_mean(test, TESTS)}; choose one of "
                            f"{', '.join(map(repr, TESTS))}.")
    if adjust not in ADJUSTMENTS:
        raise ArgumentError(
            f"unknown adjustment {adjust!r}{did_you_mean(adjust, ADJUSTMENTS)}; choose one of "
            "'holm', 'bonferroni', 'hochberg', 'hommel', 'bh', 'by', 'none'."
        )
    adj = None if adjust in (None, "none") else adjust
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ArgumentError(f"alpha must be in (0, 1); got {alpha!r}.")
    frame, names = user_frame(frame, topic=topic, system=system, score=score,
                              what="irm.compare")
    if own_names(names) and "measure" not in frame.columns and "measure" not in frame.attrs:
        frame.attrs["measure"] = names["score"]  # the table's column: the user's score name
    per_measure = measure_frames(frame, measures)

    # the systems, in order
    first = next(iter(per_measure.values()))
    if isinstance(first["system"].dtype, pd.CategoricalDtype):
        seen = set(first["system"].astype(str))
        all_systems = [str(c) for c in first["system"].cat.categories if str(c) in seen]
    else:
        all_systems = [str(s) for s in pd.unique(first["system"].astype(str))]
    if systems is not None:
        chosen = [str(s) for s in systems]
        unknown = [s for s in chosen if s not in set(all_systems)]
        if unknown:
            raise DataFormatError(
                f"system(s) {', '.join(map(repr, unknown))} not in the frame; it has "
                f"{', '.join(all_systems[:20])}{' ...' if len(all_systems) > 20 else ''}."
            )
        twice = [s for s in dict.fromkeys(chosen) if chosen.count(s) > 1]
        if twice:
            raise DataFormatError(
                f"systems lists {', '.join(map(repr, twice))} more than once ({chosen}); a "
                "system is one row of the table: list each system once.")
        all_systems = chosen
    if len(all_systems) < 2:
        raise DesignError(f"a comparison needs at least two systems; got {all_systems}.")
    if baseline is not None and str(baseline) not in set(all_systems):
        raise DataFormatError(
            f"baseline {baseline!r} is not one of the systems compared "
            f"({', '.join(all_systems[:20])})."
        )
    means = {}
    n_topics = {}
    pair_tables = []
    for m, sub in per_measure.items():
        sub = sub[sub["system"].astype(str).isin(all_systems)]
        sub = sub[[c for c in sub.columns if c != "measure"]].copy()
        sub["system"] = pd.Categorical(sub["system"].astype(str), categories=all_systems)
        sub["topic"] = sub["topic"].astype(str)
        sub = make_frame(sub, duplicates="allow")
        if sub.duplicated(["topic", "system"]).any():
            extra = [c for c in ("shard", "sample", "collection") if c in sub.columns]
            raise DesignError(
                f"compare needs one score per (topic, system) for each measure; {m} has "
                f"several{' (columns ' + ', '.join(extra) + ')' if extra else ''}. Average them "
                "first: frame.groupby(['measure', 'topic', 'system'], observed=True)['score']"
                ".mean().reset_index(), or select one shard or sample."
            )
        per_system = sub.groupby("system", observed=False)["topic"].nunique()
        n_top = int(sub["topic"].nunique())
        if n_top < 2:  # the tests compare systems over topics
            where = f" on {m}" if len(per_measure) > 1 else ""
            shown = ", ".join(map(str, pd.unique(sub["topic"])))
            raise DesignError(
                f"a comparison needs at least two topics{where} (the tests compare systems over "
                f"topics); the data have {n_top}" + (f" ({shown})." if shown else ".")
            )
        short = per_system[per_system < n_top]
        if len(short):
            raise DesignError(
                f"compare needs every system scored on every topic; on {m}, "
                f"{', '.join(f'{s} has {int(k)}' for s, k in short.head(3).items())} of "
                f"{n_top} topics. Score the missing topics (e.g. 0 for a topic a run did not "
                "answer, as trec_eval -c) or keep the topics every system has."
            )
        mean = sub.groupby("system", observed=True)["score"].mean().reindex(all_systems)
        means[m] = mean
        n_topics[m] = int(sub["topic"].nunique())
        pair_tables.append(_test_measure(m, sub, all_systems, test, adj, alpha,
                                         None if baseline is None else str(baseline),
                                         seed, n_resamples, margin))
    means_df = pd.DataFrame(means)
    means_df.index = pd.Index(all_systems, name="system")
    means_df.columns = pd.Index(list(means), name="measure")
    pairs = pd.concat(pair_tables, ignore_index=True)
    letters = pd.Series(system_letters(len(all_systems)), index=means_df.index, name="letter")
    return CompareResult(
        means=means_df, letters=letters, pairs=pairs, test=test,
        adjust=None if test == "tukey" else adj, alpha=float(alpha),
        baseline=None if baseline is None else str(baseline),
        n_topics=pd.Series(n_topics, name="n_topics"), column_names=own_names(names),
        equivalence=margin,
    )


def _test_measure(measure: str, sub: pd.DataFrame, systems: list[str], test: str,
                  adjust: str | None, alpha: float, baseline: str | None, seed: int | None,
                  n_resamples: int, margin: float | None = None) -> pd.DataFrame:
    """The pairs of one measure: ``measure, a, b, diff (a - b), p_adj, reject, better, dz,
    dz_lower, dz_upper`` (and ``p_equiv`` with a margin)."""
    if test == "tukey":
        fit = anova("score ~ topic + system", sub)
        hsd = fit.tukey("system", alpha=alpha)
        pr = hsd.pairs
        a = pr["a"].astype(str).to_numpy()
        b = pr["b"].astype(str).to_numpy()
        means = hsd.means
        diff = means.loc[a].to_numpy() - means.loc[b].to_numpy()
        p_adj = pr["p_adj"].to_numpy(dtype=float)
        reject = pr["reject"].to_numpy(dtype=bool)
        if baseline is not None:
            keep = (a == baseline) | (b == baseline)
            flip = b == baseline
            a, b = np.where(flip, b, a), np.where(flip, a, b)
            diff = np.where(flip, -diff, diff)
            a, b, diff, p_adj, reject = a[keep], b[keep], diff[keep], p_adj[keep], reject[keep]
    else:
        pairs = None if baseline is None else [(baseline, s) for s in systems if s != baseline]
        res = pairwise(sub, test, pairs=pairs, adjust=adjust,  # type: ignore[arg-type]
                       alpha=alpha, n_resamples=n_resamples, seed=seed,
                       equivalence=margin).table
        eff = {c: res[c].to_numpy(dtype=float) for c in ("dz", "dz_lower", "dz_upper")}
        if margin is not None:
            eff["p_equiv"] = res["p_equiv"].to_numpy(dtype=float)
        a = res["a"].astype(str).to_numpy()
        b = res["b"].astype(str).to_numpy()
        diff = res["diff"].to_numpy(dtype=float)
        p_adj = res["p_adj"].to_numpy(dtype=float)
        reject = res["reject"].to_numpy(dtype=bool)
    better = np.where(reject, np.where(diff > 0, a, b), "")
    if test == "tukey":
        eff = _pair_effects(sub, a, b, alpha, margin)
    out = pd.DataFrame({
        "measure": measure, "a": a, "b": b, "diff": diff, "p_adj": p_adj,
        "reject": reject, "better": better, "dz": eff["dz"], "dz_lower": eff["dz_lower"],
        "dz_upper": eff["dz_upper"],
    }, columns=list(PAIR_COLUMNS))
    if margin is not None:
        out["p_equiv"] = eff["p_equiv"]
    return out


def _pair_effects(sub: pd.DataFrame, a: np.ndarray, b: np.ndarray, alpha: float,
                  margin: float | None) -> dict[str, np.ndarray]:
    """d_z with its ``1 - alpha`` interval and the TOST p-value of the pairs ``a - b`` of one
    measure, as :func:`irmodels.pairwise` computes them (the same degenerate cases)."""
    X, _topics, names = score_matrix(sub)
    unit = unit_scale(X)
    X = X / unit
    index = {s: i for i, s in enumerate(names)}
    ia = np.array([index[s] for s in a], dtype=np.int64)
    ib = np.array([index[s] for s in b], dtype=np.int64)
    D = X[:, ia] - X[:, ib]
    mean = X.mean(axis=0)
    dbar = D.mean(axis=0)
    const, zero = degenerate(D.std(axis=0, ddof=1) / np.sqrt(D.shape[0]), dbar, dbar,
                              np.maximum(np.abs(mean[ia]), np.abs(mean[ib])))
    return paired_effects(D, level=1.0 - alpha,
                          equivalence=None if margin is None else margin / unit,
                          constant=const, zero=zero)
