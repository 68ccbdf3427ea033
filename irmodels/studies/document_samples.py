"""Significance with per-topic noise: the document-sample study of Robertson & Kanoulas (SIGIR 2012).

Two steps, docs/methods.md: "Document-sample simulation":

- :func:`validate` simulates many samples (C = 1000) per (topic, run) and compares the observed
  value with the simulated mean and SD, per topic: does the simulator reproduce the collection?
- :func:`compare_tests` simulates a few samples (C = 10) per (topic, run) and, for every pair of
  systems, compares four tests of "the two systems differ": (a) the paired t-test on the
  observed values, (b) the paired t-test on the per-topic means of the samples, (c) the mixed
  model ``y ~ system + (1|topic) + (1|topic:system)`` on the samples, (d) the same model with
  one residual variance per (topic, system) stratum (nlme's ``varIdent``), plus the
  likelihood-ratio test of (d) against (c). :func:`agreement` makes the 2 x 2 tables of each test
  against (a), :func:`plot_pvalues` and :func:`plot_power_curve` the figures of the paper.

All values are on the logit scale by default (``transform="logit"``, clipping to
``[epsilon, 1 - epsilon]`` with ``epsilon = 1e-3``, see :mod:`irmodels.formula.spec`).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from irmodels import parallel
from irmodels._display import ResultDisplay, TableAccess
from irmodels._section import figure_axes
from irmodels._validate import check_number, check_seed
from irmodels.data.frame import frame as make_frame
from irmodels.data.frame import natural_key
from irmodels.data.measures import evaluate
from irmodels.errors import ConvergenceWarning, DataFormatError, DataQualityWarning, IRModelsError
from irmodels.formula.spec import DEFAULT_EPSILON, apply_transform
from irmodels.inference.pairwise import pairwise
from irmodels.replicates.documents import document_samples

__all__ = [
    "DocumentSampleTests",
    "DocumentSampleValidation",
    "TEST_COLUMNS",
    "agreement",
    "compare_tests",
    "plot_power_curve",
    "plot_pvalues",
    "plot_validation",
    "sd_correlation",
    "validate",
]

#: p-value columns of :func:`compare_tests`, in the paper's order.
TEST_COLUMNS = ("p_t_observed", "p_t_means", "p_mixed", "p_mixed_hetero")


def _observed_scores(runs: pd.DataFrame, qrels: pd.DataFrame, measure: str, depth: int) -> pd.DataFrame:
    # the top ``depth`` of each ranking in trec_eval's order (scores as C floats), as trec_eval -M
    return evaluate(runs, qrels, measures=[measure], depth=depth)


@dataclass(frozen=True, repr=False, eq=False)
class DocumentSampleValidation(TableAccess, ResultDisplay):
    """Result of :func:`validate`: observed values against their simulated distribution.

    It indexes like its :attr:`table` (``v["within_1sd"]``, ``v.columns``, ``len(v)``).

    Attributes
    ----------
    table : DataFrame
        One row per (topic, system), columns listed in :func:`validate`.
    transform : str or None
        Scale of the comparison.
    """

    table: pd.DataFrame
    transform: str | None = "logit"

    def per_run(self) -> pd.DataFrame:
        """Per run: ``topics``, shares ``within_1sd`` / ``within_2sd`` (non-degenerate topics),
        ``mean_sim_minus_obs`` and the number of ``degenerate`` topics."""

        v = self.table
        ok = v.loc[~v["degenerate"]].assign(diff=lambda d: d["sim_mean"] - d["observed"])
        g = ok.groupby("system", observed=True)
        out = pd.DataFrame({
            "topics": v.groupby("system", observed=True).size(),
            "within_1sd": g["within_1sd"].mean(),
            "within_2sd": g["within_2sd"].mean(),
            "mean_sim_minus_obs": g["diff"].mean(),
            "degenerate": v.groupby("system", observed=True)["degenerate"].sum().astype(int),
        })
        out = out.loc[sorted(out.index, key=natural_key)]
        out.index.name = "system"
        return out

    def sd_correlation(self) -> pd.DataFrame:
        """:func:`sd_correlation` of the table."""
        return sd_correlation(self.table)

    def plot(self, systems: Sequence[str] | None = None, *, ylabel: str | None = None,
             ax: Any = None):
        """:func:`plot_validation` for ``systems`` (default: the first three runs); ``ax``: one
        matplotlib Axes per system (default a new figure, returned)."""

        shown = list(systems) if systems is not None else sorted(
            set(self.table["system"].astype(str)), key=natural_key)[:3]
        label = ylabel or (f"{self.transform}(score)" if self.transform else "score")
        return plot_validation(self.table, shown, ylabel=label, ax=ax)

    def _display_title(self) -> str:
        v = self.table
        ok = v.loc[~v["degenerate"]]
        return (f"Validation of document samples: {len(v)} (topic, run) pairs, "
                f"{ok['within_1sd'].mean():.1%} within 1 simulated SD, "
                f"{ok['within_2sd'].mean():.1%} within 2 SD")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Validation per run", self.per_run())]

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table` (one row per (topic, system)), a copy."""
        return self.table.copy()

    def __repr__(self) -> str:
        return (f"<DocumentSampleValidation {len(self.table)} (topic, run) pairs, "
                f"transform={self.transform!r}>")


def validate(
    runs: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    model: Literal["bootstrap", "kde", "gmg"] = "bootstrap",
    n_samples: int = 1000,
    measure: str = "AP",
    transform: Literal["logit"] | None = "logit",
    epsilon: float = DEFAULT_EPSILON,
    depth: int = 1000,
    systems: Sequence[str] | None = None,
    seed: int | None = 0,
    backend: object = "serial",
    n_workers: int | None = None,
) -> DocumentSampleValidation:
    """Observed value vs simulated mean and SD for every (topic, run).

    Parameters
    ----------
    runs, qrels : DataFrame
        As for :func:`irmodels.replicates.document_samples`.
    model, n_samples, measure, depth, seed, backend, n_workers
        Passed to the simulator (``n_samples = 1000`` is the paper's validation setting).
        ``n_samples`` counts simulated document samples: replicates of the evaluation drawn
        from the fitted score model, not resamples of the data, so it keeps the simulator's
        name (not ``n_resamples``).
    transform : {"logit", None}
        Scale of the comparison (logit with ``epsilon`` clipping, or the raw measure).
    systems : sequence of str, optional
        Runs to validate (all by default).

    Returns
    -------
    DocumentSampleValidation
        Its :attr:`~DocumentSampleValidation.table` (the result indexes like it) has one row per
        (topic, system): ``topic, system, observed, sim_mean, sim_sd, z, within_1sd,
        within_2sd, degenerate`` where ``z = (observed - sim_mean) / sim_sd`` (NaN when the
        simulated values never vary).

    Examples
    --------
    >>> import irmodels as irm
    >>> from irmodels.studies import document_samples as ds
    >>> coll = irm.collection.generate(preset="tiny", seed=1)
    >>> v = ds.validate(coll.runs, coll.qrels, n_samples=50, seed=1)
    >>> list(v.columns)
    ['topic', 'system', 'observed', 'sim_mean', 'sim_sd', 'z', 'within_1sd', 'within_2sd', 'degenerate']
    """
    seed = check_seed(seed)
    # the logit's clipping: 0 < epsilon < 0.5 (infinity made every score NaN)
    epsilon = check_number(epsilon, "epsilon", low=0.0, high=0.5, low_open=True,
                           high_open=True)

    # silenced, not steering: the simulator's note on degenerate (topic, run) pairs is the
    # validation's own 'degenerate' column
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        sims = document_samples(runs, qrels, model=model, n_samples=n_samples, measure=measure,
                                depth=depth, seed=seed, systems=systems, backend=backend,
                                n_workers=n_workers)
    obs = _observed_scores(runs, qrels, measure, depth)
    if systems is not None:
        obs = obs.loc[obs["system"].isin([str(s) for s in systems])]
    sims = sims.assign(y=apply_transform(sims["score"].to_numpy(), transform, epsilon))
    agg = sims.groupby(["topic", "system"], observed=True)["y"].agg(sim_mean="mean", sim_sd="std")
    agg = agg.reset_index()
    agg["topic"] = agg["topic"].astype(str)
    agg["system"] = agg["system"].astype(str)
    o = pd.DataFrame({
        "topic": obs["topic"].astype(str),
        "system": obs["system"].astype(str),
        "observed": apply_transform(obs["score"].to_numpy(), transform, epsilon),
    })
    out = o.merge(agg, on=["topic", "system"], how="inner")
    sd = out["sim_sd"].to_numpy()
    degenerate = ~(sd > 0)
    z = np.divide(out["observed"] - out["sim_mean"], sd, out=np.full(len(out), np.nan), where=~degenerate)
    out["z"] = z
    out["within_1sd"] = np.abs(z) <= 1
    out["within_2sd"] = np.abs(z) <= 2
    out["degenerate"] = degenerate
    table = out.sort_values(["system", "topic"], key=_natural).reset_index(drop=True)
    return DocumentSampleValidation(table=table, transform=transform)


def _natural(col: pd.Series) -> pd.Series:
    return col.map(natural_key)


def sd_correlation(validation: pd.DataFrame) -> pd.DataFrame:
    """Pearson correlations between runs of the per-topic simulated SDs (topics as observations).

    High correlations mean the per-topic noise is a property of the topic more than of the run,
    the paper's argument for per-topic variance components.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"topic": ["1", "2", "3"] * 2, "system": ["a"] * 3 + ["b"] * 3,
    ...                   "sim_sd": [0.1, 0.5, 0.3, 0.2, 0.9, 0.5]})
    >>> c = sd_correlation(v)
    >>> list(c.columns), round(float(c.loc["a", "b"]), 3)
    (['a', 'b'], 0.997)
    """
    wide = validation.pivot_table(index="topic", columns="system", values="sim_sd", aggfunc="first")
    return wide.corr()


def plot_validation(validation: pd.DataFrame, systems: Sequence[str], *, ylabel: str = "logit(AP)",
                    ax: Any = None):
    """Observed value vs simulated mean +- 1 SD per topic, one panel per run.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure is closed in pyplot before it is returned: a notebook shows it once, as
        an image, from the returned value. With ``ax`` (one matplotlib Axes per system) it draws
        there and returns the figure of the first.
    """

    systems = [str(s) for s in systems]
    fig, axes = figure_axes(ax, figsize=(8, 2.6 * len(systems)), shape=(len(systems), 1),
                            what="plot_validation")
    for ax, s in zip(axes, systems):
        d = validation.loc[validation["system"] == s]
        if d.empty:
            raise DataFormatError(f"system {s!r} is not in the validation table")
        d = d.sort_values("sim_mean", kind="stable").reset_index(drop=True)
        x = np.arange(len(d))
        ax.errorbar(x, d["sim_mean"], yerr=d["sim_sd"], fmt="o", ms=3, color="tab:blue",
                    label="simulated mean ± 1 SD")
        ax.plot(x, d["observed"], "x", color="tab:red", label="observed")
        ax.set_title(f"{s}: {int(d['within_1sd'].sum())}/{len(d)} topics within 1 SD")
        ax.set_ylabel(ylabel)
        ax.set_xticks([])
    axes[0].legend(loc="upper left", fontsize=8)
    axes[-1].set_xlabel("topics, sorted by simulated mean")
    return fig


# ---------------------------------------------------------------------------------------------
# the comparison of tests
# ---------------------------------------------------------------------------------------------
def _pair_unit(args: tuple) -> dict:
    """Fit the two mixed models for one pair (a module-level function: picklable for workers)."""
    a, b, data, degenerate_topics, df_method = args
    # here, not at import: models.mixed loads scipy.optimize and scipy.sparse, which only the
    # mixed-model tests need (`irmodels simulate` imports this module: CLI start-up time)
    from irmodels.models.mixed import compare_models, mixed

    d = data.loc[~data["topic"].isin(degenerate_topics)]
    n_topics = int(d["topic"].nunique())
    rec: dict = {"a": a, "b": b, "n_topics": n_topics,
                 "excluded_topics": ",".join(sorted(degenerate_topics))}
    d = d.assign(system=pd.Categorical(d["system"].astype(str), categories=[a, b]))
    d["topic"] = d["topic"].astype(str)
    rec["failure"] = ""
    try:
        # silenced, not steering: the per-pair fits' boundary and convergence notes (ours)
        # and scipy's optimiser chatter; a failed fit raises and is recorded below
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            homo = mixed("y ~ system + (1|topic) + (1|topic:system)", d, method="REML")
            rec["p_mixed"] = _system_p(homo, df_method, n_topics)
            hetero = mixed("y ~ system + (1|topic) + (1|topic:system)", d, method="REML",
                           residual="topic:system")
            lrt = compare_models(homo, hetero, refit=False)  # same fixed part: REML LRT (nlme)
            rec["p_mixed_hetero"] = _system_p(hetero, df_method, n_topics)
    except (IRModelsError, np.linalg.LinAlgError) as exc:  # a failed pair is recorded, not fatal
        rec["failure"] = f"{type(exc).__name__}: {exc}"
        return rec
    rec["lrt_statistic"] = float(lrt["statistic"].iloc[-1])
    rec["lrt_df"] = float(lrt["df"].iloc[-1])
    rec["lrt_p"] = float(lrt["p"].iloc[-1])
    return rec


def _system_p(result: object, df_method: str = "satterthwaite", n_topics: int = 0) -> float:
    """Two-sided p of the system coefficient, t on the chosen df.

    ``"containment"``: nlme's between/within df for ``y ~ system, random = ~1|topic/system``:
    system varies between topic:system groups within topics, so its df is the number of
    topic:system groups (``2 T``) minus the topics (``T``) minus the one coefficient: ``T - 1``.
    ``"satterthwaite"``: the df of :attr:`irmodels.MixedResult.fixed`.
    """
    # here, not at import: scipy.stats is slow to import and only the mixed models' p-values
    # need it (`irmodels simulate` imports this module: CLI start-up time)
    from scipy import stats

    est = result.fixed_estimates  # type: ignore[attr-defined]
    rows = [i for i, name in enumerate(est.index) if str(name).startswith("system")]
    if len(rows) != 1:
        raise DataFormatError(f"expected one system coefficient, found {list(est.index)}")
    if df_method == "satterthwaite":
        return float(result.fixed["p"].iloc[rows[0]])  # type: ignore[attr-defined]
    # containment df needs no Satterthwaite derivatives: t from the estimate and its SE only
    se = float(np.sqrt(result.vcov.to_numpy()[rows[0], rows[0]]))  # type: ignore[attr-defined]
    t = float(est.iloc[rows[0]]) / se
    return float(2 * stats.t.sf(abs(t), n_topics - 1))


@dataclass(frozen=True, repr=False, eq=False)
class DocumentSampleTests(TableAccess, ResultDisplay):
    """Result of :func:`compare_tests`: the p-values of the four tests for every pair.

    It indexes like its :attr:`table` (``res["p_mixed"]``, ``res.columns``, ``len(res)``).

    Attributes
    ----------
    table : DataFrame
        One row per pair (columns listed in :func:`compare_tests`).
    samples : DataFrame or None
        The simulated document samples the tests were run on.
    """


    table: pd.DataFrame
    samples: pd.DataFrame | None = field(default=None, repr=False)

    def tests(self) -> list[str]:
        """The p-value columns that were computed (all NaN when not run)."""
        return [t for t in TEST_COLUMNS if t in self.table.columns and self.table[t].notna().any()]

    def significance(self, *, alpha: float = 0.05) -> pd.DataFrame:
        """Per test: ``pairs`` with a p-value and the share ``significant`` at ``alpha``."""
        t = self.table
        tests = self.tests()
        return pd.DataFrame({
            "pairs": [int(t[c].notna().sum()) for c in tests],
            "significant": [float((t[c].dropna() < alpha).mean()) for c in tests],
        }, index=pd.Index(tests, name="test"))

    def agreement(self, *, alpha: float = 0.05, reference: str = "p_t_observed"
                  ) -> dict[str, pd.DataFrame]:
        """The 2 x 2 tables of :func:`agreement`."""
        return agreement(self.table, alpha=alpha, reference=reference)

    def plot(self, *, alpha: float = 0.05, ax: Any = None):
        """Each test's p-values against the paired t test on observed values (:func:`plot_pvalues`;
        ``ax``: one matplotlib Axes per test, default a new figure, returned)."""
        return plot_pvalues(self.table, alpha=alpha, ax=ax)

    def _display_title(self) -> str:
        return (f"Tests of {len(self.table)} system pairs on document samples: "
                f"{', '.join(self.tests())}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables = [("Share of significant pairs (alpha = 0.05)", self.significance())]
        for test, table in self.agreement().items():
            tables.append((f"Agreement: {test} vs p_t_observed", table))
        return tables

    def __repr__(self) -> str:
        return f"<DocumentSampleTests {len(self.table)} pairs, tests {', '.join(self.tests())}>"


def compare_tests(
    runs: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    model: Literal["bootstrap", "kde", "gmg"] = "bootstrap",
    n_samples: int = 10,
    measure: str = "AP",
    transform: Literal["logit"] | None = "logit",
    epsilon: float = DEFAULT_EPSILON,
    depth: int = 1000,
    seed: int | None = 0,
    mixed_models: bool = True,
    backend: object = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    samples: pd.DataFrame | None = None,
    df: Literal["containment", "satterthwaite"] = "containment",
) -> DocumentSampleTests:
    """p-values of four tests of a system difference for every pair of systems.

    Parameters
    ----------
    runs, qrels : DataFrame
        Runs (with scores) and qrels.
    systems : sequence of str, optional
        Systems to compare (all pairs among them); ``pairs`` names pairs directly instead.
    model, n_samples, measure, depth, seed
        Passed to :func:`irmodels.replicates.document_samples` (``n_samples = 10`` as in the
        paper; simulated replicates, not resamples: hence not ``n_resamples``).
    transform, epsilon
        Scale of every test (logit of the measure by default).
    mixed_models : bool
        Fit the mixed models (c) and (d); without them only the t-tests are computed.
    backend, n_workers, progress
        Where the per-pair mixed fits run (:func:`irmodels.parallel.map`).
    samples : DataFrame, optional
        Simulated samples already drawn (the output of ``document_samples``, with a ``score``
        column on the measure's scale; ``transform`` is applied here) to reuse.
    df : {"containment", "satterthwaite"}
        Degrees of freedom of the mixed models' t-tests of the system effect (c, d).
        ``"containment"`` (default) is nlme's between/within rule, ``n_topics - 1`` for this
        design, as ``summary(lme(...))`` reports and the paper used; ``"satterthwaite"`` takes
        the df of :attr:`irmodels.MixedResult.fixed` (lmerTest's approximation; it costs a
        numerical Hessian, about three times the heteroscedastic fit itself). The two agree for the
        homoscedastic model on balanced data; for the heteroscedastic model they differ
        (16.7 instead of 19 on the first pair of the nlme fixture).

    Returns
    -------
    DocumentSampleTests
        Its :attr:`~DocumentSampleTests.table` (the result indexes like it) has one row per pair:
        ``a, b, diff`` (mean of a - b over topics, observed, transformed),
        ``p_t_observed`` (a), ``p_t_means`` (b), ``p_mixed`` (c), ``p_mixed_hetero`` (d),
        ``lrt_statistic, lrt_df, lrt_p`` (heteroscedastic vs homoscedastic, REML, as nlme's
        ``anova``), ``n_topics`` (used by the mixed models) and ``excluded_topics`` (topics
        where a system's simulated values never vary: a stratum with zero variance cannot enter
        the mixed models), ``failure`` (empty, or why the mixed models of the pair could not be
        fitted: their p-values are then NaN, a ``ConvergenceWarning`` names the pairs, and the
        other pairs go on). ``.samples`` holds the simulated samples.

    Notes
    -----
    The paired t-test on observed values equals the mixed model ``y ~ system + (1|topic)`` on
    them (docs/methods.md: "Linear mixed-effects models"). The mixed models are fitted by REML with :func:`irmodels.mixed`
    (``residual="topic:system"`` for (d)); their t statistic is the estimate of the system
    coefficient over its model-based SE, referred to a t distribution on ``df`` (see above). The
    results equal nlme's ``lme(y ~ system, random = ~1|topic/system)`` and the same with
    ``weights = varIdent(form = ~1|topic*system)``, and ``anova`` of the two
    (``tests/reference/document_samples.R``).

    Examples
    --------
    >>> import irmodels as irm
    >>> from irmodels.studies import document_samples as ds
    >>> coll = irm.collection.generate(preset="tiny", seed=1)
    >>> res = ds.compare_tests(coll.runs, coll.qrels, n_samples=4, mixed_models=False, seed=2)
    >>> list(res.columns[:5])
    ['a', 'b', 'diff', 'p_t_observed', 'p_t_means']
    """
    seed = check_seed(seed)
    # the logit's clipping: 0 < epsilon < 0.5 (infinity made every score NaN)
    epsilon = check_number(epsilon, "epsilon", low=0.0, high=0.5, low_open=True,
                           high_open=True)

    if df not in ("containment", "satterthwaite"):
        raise DataFormatError(f"df must be 'containment' or 'satterthwaite', got {df!r}")
    if samples is None:
        # silenced, not steering: degenerate topics are excluded per pair and listed in the
        # result (excluded_topics)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataQualityWarning)
            samples = document_samples(runs, qrels, model=model, n_samples=n_samples, measure=measure,
                                       depth=depth, seed=seed, systems=systems)
    sims = samples.assign(y=apply_transform(samples["score"].to_numpy(), transform, epsilon))
    # without samples.attrs["record"] (lists per (topic, system)): pandas deep-copies attrs into
    # every frame derived from sims, and the per-pair frames were pickled with them
    sims.attrs = {}
    sims["topic"] = sims["topic"].astype(str)
    sims["system"] = sims["system"].astype(str)
    obs = _observed_scores(runs, qrels, measure, depth)
    obs = obs.assign(score=apply_transform(obs["score"].to_numpy(), transform, epsilon))
    all_systems = sorted(set(sims["system"]), key=_natural_key)
    if systems is not None:
        all_systems = [str(s) for s in systems]
    if pairs is None:
        pairs = list(itertools.combinations(all_systems, 2))
    pairs = [(str(a), str(b)) for a, b in pairs]
    if not pairs:
        raise DataFormatError("no pair of systems to compare: give at least two systems")
    topics = sorted(set(sims["topic"]), key=_natural_key)
    obs = obs.loc[obs["topic"].astype(str).isin(topics)]

    obs_frame = make_frame(obs[["topic", "system", "score"]])
    means = sims.groupby(["topic", "system"], as_index=False)["y"].mean().rename(columns={"y": "score"})
    means_frame = make_frame(means)
    pa = pairwise(obs_frame, test="t", pairs=pairs).table
    pb = pairwise(means_frame, test="t", pairs=pairs).table
    out = pd.DataFrame({
        "a": [a for a, _ in pairs],
        "b": [b for _, b in pairs],
    })
    key_a = pa.set_index(["a", "b"])
    key_b = pb.set_index(["a", "b"])
    idx = pd.MultiIndex.from_tuples(pairs)
    out["diff"] = _aligned(key_a, idx, "diff")
    out["p_t_observed"] = _aligned(key_a, idx, "p")
    out["p_t_means"] = _aligned(key_b, idx, "p")
    for col in ("p_mixed", "p_mixed_hetero", "lrt_statistic", "lrt_df", "lrt_p"):
        out[col] = np.nan
    sd = sims.groupby(["topic", "system"])["y"].std()
    degenerate = sd[~(sd > 0)].reset_index()[["topic", "system"]]
    deg_by_system = degenerate.groupby("system")["topic"].apply(set).to_dict()
    out["excluded_topics"] = [
        ",".join(sorted(deg_by_system.get(a, set()) | deg_by_system.get(b, set()), key=_natural_key))
        for a, b in pairs
    ]
    out["n_topics"] = [
        len(topics) - len(deg_by_system.get(a, set()) | deg_by_system.get(b, set())) for a, b in pairs
    ]
    if mixed_models:
        # rows of each system located once (not one scan of the samples per pair); pairs sent
        # in chunks (a few round trips per worker instead of one per pair)
        cols = sims[["topic", "system", "sample", "y"]]
        rows_of = pd.Series(np.arange(len(cols))).groupby(cols["system"].to_numpy()).indices
        empty = np.zeros(0, dtype=np.int64)
        units = []
        for a, b in pairs:
            rows = np.sort(np.concatenate([rows_of.get(a, empty), rows_of.get(b, empty)]))
            excl = deg_by_system.get(a, set()) | deg_by_system.get(b, set())
            units.append((a, b, cols.iloc[rows], excl, df))
        chunk = max(1, len(units) // (4 * (n_workers or 2)))
        recs = parallel.map(_pair_unit, units, backend=backend, n_workers=n_workers,
                            progress=progress, chunksize=chunk)
        fitted = pd.DataFrame.from_records(recs).set_index(["a", "b"])
        for col in ("p_mixed", "p_mixed_hetero", "lrt_statistic", "lrt_df", "lrt_p"):
            if col in fitted.columns:
                out[col] = fitted.loc[idx, col].to_numpy(dtype=float)
        out["failure"] = fitted.loc[idx, "failure"].to_numpy()
        failed = out["failure"] != ""
        if failed.any():
            warnings.warn(
                f"the mixed models of {int(failed.sum())} of {len(out)} pairs could not be "
                "fitted; their p-values are NaN and the 'failure' column says why: "
                + "; ".join(f"{a}-{b}: {r}" for a, b, r in
                            out.loc[failed, ["a", "b", "failure"]].head(3).to_numpy()),
                ConvergenceWarning, stacklevel=2,
            )
    else:
        out["failure"] = ""
    cols = ["a", "b", "diff", *TEST_COLUMNS, "lrt_statistic", "lrt_df", "lrt_p", "n_topics",
            "excluded_topics", "failure"]
    return DocumentSampleTests(table=out[cols].reset_index(drop=True), samples=samples)


def _natural_key(value: object) -> tuple:
    return natural_key(value)


def _aligned(table: pd.DataFrame, idx: pd.MultiIndex, col: str) -> np.ndarray:
    missing = [p for p in idx if p not in table.index]
    if missing:
        raise DataFormatError(f"pair(s) {missing[:3]} could not be tested (system missing from the data)")
    return table.loc[idx, col].to_numpy()


def agreement(results: pd.DataFrame, *, alpha: float = 0.05, reference: str = "p_t_observed") -> dict[str, pd.DataFrame]:
    """2 x 2 tables of significance at ``alpha``: each test (rows) against the reference (columns).

    Returns
    -------
    dict
        Test column -> DataFrame with index ``[f"{test} sig", f"{test} not sig"]`` and columns
        ``["reference sig", "reference not sig"]`` holding pair counts. Pairs with a NaN p-value
        in either test are left out; tests that were not run (all NaN) get no table.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"p_t_observed": [0.01, 0.2, 0.03, 0.5], "p_t_means": [0.02, 0.01, 0.3, 0.6]})
    >>> agreement(r)["p_t_means"]
                       reference sig  reference not sig
    p_t_means sig                  1                  1
    p_t_means not sig              1                  1
    """
    if reference not in results.columns:
        raise DataFormatError(f"no column {reference!r} in the results")
    tables = {}
    for col in [c for c in TEST_COLUMNS
                if c in results.columns and c != reference and results[c].notna().any()]:
        ok = results[col].notna() & results[reference].notna()
        t = results.loc[ok, col] < alpha
        r = results.loc[ok, reference] < alpha
        tables[col] = pd.DataFrame(
            [[int((t & r).sum()), int((t & ~r).sum())], [int((~t & r).sum()), int((~t & ~r).sum())]],
            index=[f"{col} sig", f"{col} not sig"],
            columns=["reference sig", "reference not sig"],
        )
    return tables


def plot_pvalues(results: pd.DataFrame, *, reference: str = "p_t_observed", alpha: float = 0.05,
                 ax: Any = None):
    """Scatter plots (log-log) of each test's p-values against the reference test's.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure is closed in pyplot before it is returned: a notebook shows it once, as
        an image, from the returned value. With ``ax`` (one matplotlib Axes per test) it draws
        there and returns the figure of the first.
    """

    cols = [c for c in TEST_COLUMNS if c in results.columns and c != reference and results[c].notna().any()]
    k = max(1, len(cols))
    fig, axes = figure_axes(ax, figsize=(4.2 * k, 4), shape=(1, k), what="plot_pvalues")
    floor = 1e-16
    for ax, col in zip(axes, cols):
        ax.loglog(np.maximum(results[reference], floor), np.maximum(results[col], floor), ".", ms=4)
        ax.axhline(alpha, color="grey", lw=0.8, ls="--")
        ax.axvline(alpha, color="grey", lw=0.8, ls="--")
        lims = [floor, 1]
        ax.plot(lims, lims, color="black", lw=0.6)
        ax.set_xlabel(reference)
        ax.set_ylabel(col)
    return fig


def plot_power_curve(results: pd.DataFrame, *, ax: Any = None):
    """Sorted p-values of each test (the paper's power curve): lower curves reject more often.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure is closed in pyplot before it is returned: a notebook shows it once, as
        an image, from the returned value. With ``ax`` (a matplotlib Axes) it draws
        there and returns the figure of that Axes.
    """

    fig, (ax,) = figure_axes(ax, figsize=(6, 4), what="plot_power_curve")
    for col in TEST_COLUMNS:
        if col in results.columns and results[col].notna().any():
            p = np.sort(results[col].dropna().to_numpy())
            ax.semilogy(np.arange(1, len(p) + 1), np.maximum(p, 1e-16), label=col)
    ax.axhline(0.05, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("pairs, sorted by p-value")
    ax.set_ylabel("p-value")
    ax.legend(fontsize=8)
    return fig
