"""The analysis driver behind the report: fit, infer, then hand the results to reporting.

:func:`build_report` fits one model to a long frame (``irm.anova``), asks it for its variance
components and Tukey's HSD on systems, runs the G-study and the residual diagnostics of the same
fit, and passes every result to :func:`irmodels.reporting.report.assemble_report`, which only
formats them. :func:`demo_report` is the package's main job on the built-in demo collection:
MD1 on the whole collection beside MD6 on shards, the G-study and the comparison table.

This module sits above ``studies`` and ``reporting`` and below ``cli`` in the import order.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd

import irmodels as irm
from irmodels.data.frame import require_columns
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.formula.parser import default_preset
from irmodels.inference.compare import compare
from irmodels.inference.diagnostics import residual_diagnostics
from irmodels.inference.gtheory import gstudy as _gstudy
from irmodels.models.anova import AnovaResult, anova
from irmodels.models.base import FittedModel
from irmodels.reporting.report import Report, assemble_report
from irmodels.studies.shard_study import shards

if TYPE_CHECKING:  # pragma: no cover
    from irmodels._section import Section
    from irmodels.formula.spec import ModelSpec

__all__ = ["build_report", "comparison_table", "demo_report", "select_measure"]


def build_report(
    data: pd.DataFrame | FittedModel,
    *,
    fit: FittedModel | None = None,
    model: str | ModelSpec | None = None,
    measure: str | None = None,
    alpha: float = 0.05,
    title: str | None = None,
    sections: Sequence[Section] = (),
    gstudy: bool = True,
    diagnostics: bool = True,
    comparison: Any = None,
) -> Report:
    """Fit a model (or take one already fitted) and build the variance-component report.

    Parameters
    ----------
    data : DataFrame or FittedModel
        A long frame (``irm.frame``, ``irm.read_matrix``, ``irm.evaluate``...), or a fitted
        model (``irm.anova(...)``), which is reported as it is, without refitting.
    fit : FittedModel, optional
        A model already fitted to ``data``: reported without refitting (``build_report(fit)``
        is the same).
    model : str or ModelSpec, optional
        A preset ``"MD1"`` ... ``"MD6"``, a formula (``"score ~ topic + system"``) or a spec.
        Default ``"MD6"`` when the data have a ``shard`` column with more than one level (the
        G-study of shards needs every two-way interaction), else ``"MD1"``; as ``irmodels
        anova``.
    measure : str, optional
        Which measure to analyse when ``data`` holds several (column ``measure``).
    alpha : float, default 0.05
        Family-wise level of the Tukey HSD (and of the diagnostics' sentence).
    title : str, optional
        Title; by default names the measure, the collection and the model.
    sections : sequence of Section
        Extra sections appended after the core ones, in order.
    gstudy : bool, default True
        Add the G-study of the same fit (E rho^2 and Phi, D-study, topics needed for 0.95);
        skipped with a note when the design does not allow it.
    diagnostics : bool, default True
        Add the residual diagnostics (normal QQ plot, residuals vs fitted, per-topic spread,
        Shapiro-Wilk, Jarque-Bera, Breusch-Pagan).
    comparison : object, optional
        An ``irm.compare`` result to show as the comparison table.

    Returns
    -------
    Report
        With ``to_html()``, ``to_markdown()``, ``latex_tables()``, ``save()`` and
        ``conclusions()``.

    Raises
    ------
    ArgumentError
        ``model`` or ``measure`` together with a fitted model (the fit has its own); a fitted
        model other than an ``irm.anova`` ANOVA (a mixed model or a GLM: ``irm.report(fit)``).
    DesignError
        Several measures and no ``measure``; errors of ``irm.anova``.
    DataFormatError
        Not a DataFrame, or an unknown ``measure``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.beta(2, 5, (20, 6)) + rng.uniform(0, .3, (20, 1))
    ...                     + np.linspace(0, .2, 6), columns=[f"run{i}" for i in range(1, 7)])
    >>> rep = irm.build_report(irm.from_wide(wide, measure="AP"))
    >>> rep.tukey.top_group, rep.tukey.n_significant
    (['run6', 'run5', 'run3', 'run4'], 3)
    >>> rep.components.round(4)
               variance      sd   share
    component
    topic        0.0050  0.0704  0.1622
    system       0.0045  0.0674  0.1486
    Residual     0.0211  0.1452  0.6892
    >>> print(rep.conclusions().split(". ")[0])
    Of the variance of the scores, topic 16%, system 15% and 69% is residual (which, with one score per topic and system, is the topic:system interaction: systems that suit some topics more than others)
    >>> "data:image/png;base64" in rep.to_html()
    True
    >>> fit = irm.anova("MD1", irm.from_wide(wide, measure="AP"))
    >>> irm.build_report(fit).anova is fit       # the fit, not a new one
    True
    """
    if isinstance(data, FittedModel):
        if fit is not None and fit is not data:
            raise ArgumentError("build_report got two fits (data and fit=); pass one: "
                                "build_report(fit) or build_report(data, fit=fit).")
        fit, data = data, data.data
    if fit is not None:
        if not isinstance(fit, FittedModel):
            raise ArgumentError(f"fit must be a fitted model (irm.anova); got "
                                f"{type(fit).__name__}.")
        if not isinstance(fit, AnovaResult):
            # the report's core is the ANOVA table (and its method text): a mixed model or a
            # GLM built a Report whose to_html/to_markdown failed on the missing table
            raise ArgumentError(
                f"build_report reports an irm.anova fit; got a {type(fit).__name__}, which "
                "has no ANOVA table. Report it with "
                "irm.report(fit, ...), which assembles the sections of any results, or pass "
                "the data to build_report to fit the ANOVA.")
        if model is not None or measure is not None:
            raise ArgumentError("model= and measure= choose what to fit; a fit= already has "
                                "both. Drop them, or drop fit= to refit.")
        data = fit.data
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(
            f"build_report needs a long frame (a pandas DataFrame); got {type(data).__name__}. "
            "Read your data with irm.read_matrix, irm.read_frame or irm.read_trec_eval."
        )
    require_columns(data, ["topic", "system", "score"])
    data = select_measure(data, measure)
    if measure is None and "measure" in data.columns and len(data):
        measure = str(data["measure"].iloc[0])

    notes: list[str] = []
    g = diag = None
    # recorded, not steering: every warning of the fit and the analyses is listed in the
    # report's notes and raised again below, unchanged
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if fit is None:
            fit = anova(default_preset(data) if model is None else model, data)
            assert isinstance(fit, AnovaResult)  # no family=: an ANOVA, never a GLM
        components: pd.DataFrame | None
        try:
            components = fit.variance_components()
        except DesignError as exc:
            components = None
            notes.append(f"Variance components not reported: {exc}")
        tukey = fit.tukey("system", alpha=alpha) if "system" in fit.spec.factors else None
        if gstudy:
            try:
                g = _gstudy(fit)
            except (DesignError, DataFormatError) as exc:
                notes.append(f"G-study not reported: {exc}")
        if diagnostics:
            try:
                diag = residual_diagnostics(fit, alpha=alpha)
            except DesignError as exc:
                notes.append(f"Residual diagnostics not reported: {exc}")
    for w in caught:
        notes.append(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return assemble_report(
        fit, tukey=tukey, components=components, gstudy=g, diagnostics=diag,
        comparison=comparison, sections=sections, measure=measure, alpha=alpha, title=title,
        notes=notes,
    )


def demo_report(
    measure: str = "AP",
    *,
    seed: int = 0,
    n_shards: int = 5,
    n_splits: int = 1,
    compare_measures: Sequence[str] = ("AP", "nDCG@10"),
    compare_top: int = 10,
    alpha: float = 0.05,
    title: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The main job on the built-in demo collection (synthetic, TREC-8-like).

    MD1 on the whole collection (ANOVA, variance components, Tukey HSD, G-study, residual
    diagnostics), MD6 on ``n_shards`` shards beside it (the shard study's section: the Tukey
    intervals of both models on the same systems), and the comparison table of
    ``compare_measures`` (``irm.compare``, when this installation has it).

    Parameters
    ----------
    measure : str
        Measure of the variance-component analysis.
    seed : int
        Seed of the collection and of the shard split.
    n_shards, n_splits : int
        The shard study (S and random splits).
    compare_measures : sequence of str
        Measures of the comparison table (empty: none).
    compare_top : int
        The comparison table shows the ``compare_top`` systems of highest mean ``measure``
        (a paper's table compares a handful of runs, not a whole collection).
    alpha : float
        Family-wise level.
    title : str, optional
        Title of the report.
    progress : callable, optional
        Called with a short message before each stage (the CLI prints them on stderr).

    Returns
    -------
    Report
    """
    say = progress or (lambda _msg: None)
    say(f"generating the demo collection (seed {seed})")
    coll = irm.collection.generate(seed=seed)
    wanted = list(dict.fromkeys([measure, *compare_measures]))
    say(f"evaluating {', '.join(wanted)} on {coll.runs['system'].nunique()} runs")
    scores = irm.evaluate(coll.runs, coll.qrels, measures=wanted)
    sections: list[Section] = []
    notes: list[str] = []
    comparison = None
    if len(compare_measures) > 1:
        say(f"comparison table of {', '.join(compare_measures)}")
        sub = scores[scores["measure"].astype(str).isin(list(compare_measures))]
        comparison = comparison_table(sub, measure, top=compare_top, alpha=alpha)
    say(f"shard study: MD1 on the whole collection, MD6 on S = {n_shards} shards")
    # silenced, not steering: the demo collection's shard section is an illustration (its
    # undefined cells and shard fits' notes are the synthetic collection's, not the user's)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = shards(coll, n_shards=[n_shards], n_splits=n_splits, models=["MD1", "MD6"],
                       measure=measure, alpha=alpha, seed=seed, progress=False)
    sections.append(study.to_section())
    say("fitting MD1, G-study and residual diagnostics")
    rep = build_report(
        scores, model="MD1", measure=measure, alpha=alpha, sections=sections,
        comparison=comparison,
        title=title or f"Demo collection (synthetic, TREC-8-like): {measure}, MD1 and MD6",
    )
    if notes:
        rep = replace(rep, notes=tuple(rep.notes) + tuple(notes))
    return rep


def comparison_table(scores: pd.DataFrame, measure: str, *, top: int = 10,
                     alpha: float = 0.05) -> Any:
    """``irm.compare`` of the ``top`` systems of highest mean ``measure``, on every measure of
    ``scores`` (topic-blocked Tukey HSD): the comparison table of the report.

    Examples
    --------
    >>> import numpy as np, pandas as pd, irmodels as irm
    >>> rng = np.random.default_rng(0)
    >>> w = pd.DataFrame(rng.random((10, 5)) + np.linspace(0, 0.4, 5), columns=list("abcde"))
    >>> two = pd.concat([irm.from_wide(w, measure="AP"), irm.from_wide(w ** 2, measure="P@10")])
    >>> comparison_table(irm.frame(two), "AP", top=3).systems
    ['e', 'c', 'd']
    """
    first = scores[scores["measure"].astype(str) == measure]
    if first.empty:
        raise DataFormatError(f"measure {measure!r} is not in the scores; measures present: "
                              f"{', '.join(map(str, pd.unique(scores['measure'].astype(str))))}.")
    means = first.groupby("system", observed=True)["score"].mean()
    best = [str(s) for s in means.sort_values(ascending=False, kind="stable").index[:top]]
    return compare(scores, alpha=alpha, systems=best)


def select_measure(data: pd.DataFrame, measure: str | None) -> pd.DataFrame:
    """The rows of one measure (all rows when the frame has no ``measure`` column).

    Raises
    ------
    DesignError
        Several measures and ``measure`` None.
    DataFormatError
        ``measure`` not in the data.
    """
    if "measure" not in data.columns:
        return data
    present = [str(m) for m in pd.unique(data["measure"].astype(str))]
    if measure is None:
        if len(present) > 1:
            raise DesignError(
                f"the data hold {len(present)} measures ({', '.join(present[:6])}); a report "
                "analyses one. Pass measure=... (CLI: --measure)."
            )
        return data
    if measure not in present:
        raise DataFormatError(
            f"measure {measure!r} is not in the data; measures present: {', '.join(present)}."
        )
    out = data.loc[data["measure"].astype(str) == measure].reset_index(drop=True)
    for col in out.columns:
        if isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = out[col].cat.remove_unused_categories()
    return out
