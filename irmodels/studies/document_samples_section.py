"""The document-sample study rendered as a report section: validation and the four tests.

The study renders its own section (reporting only assembles sections): this formats the tables
that :func:`irmodels.studies.document_samples.validate` and
:func:`~irmodels.studies.document_samples.compare_tests` already returned (shares, counts, the
2 x 2 agreement tables and the study's own figures); fits nothing. Pass it to
``irm.build_report(..., sections=[document_samples_section(v, res)])``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from irmodels._display import frame_to_html, frame_to_latex
from irmodels._section import Section, figure_to_data_uri, figure_to_png, frame_to_markdown
from irmodels.data.frame import natural_key
from irmodels.errors import DataFormatError
from irmodels.studies import document_samples as ds

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["document_samples_section"]


def _img(fig: Figure, alt: str) -> str:
    import matplotlib.pyplot as plt  # here, not at import: pyplot is slow (CLI start-up time)

    uri = figure_to_data_uri(figure_to_png(fig))
    plt.close(fig)
    return f'<img alt="{html.escape(alt)}" src="{html.escape(uri)}">'


def document_samples_section(
    validation: pd.DataFrame | None = None,
    comparison: pd.DataFrame | None = None,
    *,
    systems: Sequence[str] | None = None,
    alpha: float = 0.05,
    plot: bool = True,
    ylabel: str = "logit(AP)",
    digits: int = 4,
) -> Section:
    """A report :class:`~irmodels._section.Section` for a document-sample study.

    Parameters
    ----------
    validation : DataFrame, optional
        From :func:`irmodels.studies.document_samples.validate`.
    comparison : DataFrame, optional
        From :func:`irmodels.studies.document_samples.compare_tests`.
    systems : sequence of str, optional
        Runs whose validation plot is shown (default: the first three in natural order).
    alpha : float
        Significance level of the agreement tables and of the shares of significant pairs.
    plot : bool
        Embed the figures (validation per run, p-value scatter plots, power curve) as PNG.
    ylabel : str
        Axis label of the validation plot (the scale of the study).
    digits : int
        Significant digits shown.

    Returns
    -------
    Section
        Title ``"Document samples"``; HTML (tables and images), Markdown and LaTeX (tables).
        Validation: a table per run (topics, share within 1 and 2 simulated SD, mean of
        simulated mean - observed, degenerate topics). Comparison: a table per test (pairs
        tested, share significant at ``alpha``), the 2 x 2 agreement table of each test with the
        paired t-test on observed values, the share of pairs where the heteroscedastic model
        fits significantly better (likelihood-ratio test) and the excluded topics.

    Raises
    ------
    DataFormatError
        Neither table given, or a table without the columns of its producer.

    Examples
    --------
    >>> import pandas as pd
    >>> from irmodels.studies.document_samples_section import document_samples_section
    >>> v = pd.DataFrame({"topic": ["1", "2"] * 2, "system": ["a", "a", "b", "b"],
    ...                   "observed": [0.1, -1.0, 0.5, 0.2], "sim_mean": [0.0, -1.2, 0.4, 0.3],
    ...                   "sim_sd": [0.2, 0.1, 0.3, 0.2], "z": [0.5, 2.0, 0.33, -0.5],
    ...                   "within_1sd": [True, False, True, True],
    ...                   "within_2sd": [True, True, True, True], "degenerate": [False] * 4})
    >>> s = document_samples_section(v, plot=False)
    >>> s.title, s.markdown.splitlines()[0]
    ('Document samples', 'Validation: 4 (topic, run) pairs, 75.0% of observed values within 1 simulated SD, 100.0% within 2 SD; mean of simulated mean - observed: -0.0750.')
    """

    if validation is None and comparison is None:
        raise DataFormatError("document_samples_section needs a validation table, a comparison "
                              "table, or both (from validate and compare_tests)")
    parts_html: list[str] = []
    parts_md: list[str] = []
    parts_tex: list[str] = []
    if validation is not None:
        need = ["topic", "system", "observed", "sim_mean", "within_1sd", "within_2sd",
                "degenerate"]
        missing = [c for c in need if c not in validation.columns]
        if missing:
            raise DataFormatError(f"the validation table lacks column(s) {missing}; pass the "
                                  "output of irmodels.studies.document_samples.validate")
        v = validation
        ok = v.loc[~v["degenerate"]]
        bias = float((ok["sim_mean"] - ok["observed"]).mean()) if len(ok) else float("nan")
        text = (f"Validation: {len(v)} (topic, run) pairs, {ok['within_1sd'].mean():.1%} of "
                f"observed values within 1 simulated SD, {ok['within_2sd'].mean():.1%} within "
                f"2 SD; mean of simulated mean - observed: {bias:.4f}."
                + (f" {int(v['degenerate'].sum())} pairs never vary in simulation (excluded)."
                   if v["degenerate"].any() else ""))
        g = v.assign(diff=v["sim_mean"] - v["observed"]).groupby("system", observed=True)
        per_run = pd.DataFrame({
            "topics": g.size(),
            "within_1sd": g["within_1sd"].mean(),
            "within_2sd": g["within_2sd"].mean(),
            "mean_sim_minus_obs": g["diff"].mean(),
            "degenerate": g["degenerate"].sum().astype(int),
        })
        per_run = per_run.loc[sorted(per_run.index, key=natural_key)]
        per_run.index.name = "system"
        parts_html += [f"<p>{html.escape(text)}</p>",
                       frame_to_html(per_run, title="Validation per run", digits=digits)]
        parts_md += [text, "**Validation per run**", frame_to_markdown(per_run, digits=digits)]
        parts_tex.append(frame_to_latex(per_run, caption="Document samples: validation per run",
                                        digits=digits))
        if plot:
            shown = list(systems) if systems is not None else sorted(
                set(v["system"].astype(str)), key=natural_key)[:3]
            parts_html.append(_img(ds.plot_validation(v, shown, ylabel=ylabel),
                                   "observed vs simulated mean and SD per topic"))
    if comparison is not None:
        missing = [c for c in ("a", "b", "p_t_observed", "lrt_p", "excluded_topics")
                   if c not in comparison.columns]
        if missing:
            raise DataFormatError(f"the comparison table lacks column(s) {missing}; pass the "
                                  "output of irmodels.studies.document_samples.compare_tests")
        c = comparison
        tests = [t for t in ds.TEST_COLUMNS if t in c.columns and c[t].notna().any()]
        shares = pd.DataFrame({
            "pairs": [int(c[t].notna().sum()) for t in tests],
            "significant": [float((c[t].dropna() < alpha).mean()) for t in tests],
        }, index=pd.Index(tests, name="test"))
        n_excl = int((c["excluded_topics"].fillna("") != "").sum())
        text = f"{len(c)} pairs of systems, significance at alpha = {alpha:g}."
        if c["lrt_p"].notna().any():
            text += (f" The heteroscedastic model fits significantly better than the "
                     f"homoscedastic one (likelihood-ratio test) for "
                     f"{(c['lrt_p'].dropna() < alpha).mean():.1%} of the pairs.")
        if n_excl:
            text += (f" {n_excl} pairs lost topics whose simulated values never vary "
                     "(excluded from the mixed models).")
        parts_html += [f"<p>{html.escape(text)}</p>",
                       frame_to_html(shares, title="Share of significant pairs", digits=digits)]
        parts_md += [text, "**Share of significant pairs**", frame_to_markdown(shares, digits=digits)]
        parts_tex.append(frame_to_latex(shares, caption="Document samples: share of significant "
                                        "pairs", digits=digits))
        for test, table in ds.agreement(c, alpha=alpha).items():
            title = f"{test} vs p_t_observed"
            parts_html.append(frame_to_html(table, title=title, digits=digits))
            parts_md += [f"**{title}**", frame_to_markdown(table, digits=digits)]
            parts_tex.append(frame_to_latex(table, caption=f"Agreement: {title}", digits=digits))
        if plot and len(tests) > 1:
            parts_html.append(_img(ds.plot_pvalues(c, alpha=alpha), "p-value scatter plots"))
            parts_html.append(_img(ds.plot_power_curve(c), "sorted p-values (power curve)"))
    return Section(title="Document samples", html="".join(parts_html),
                   markdown="\n\n".join(parts_md), latex="\n\n".join(parts_tex))
