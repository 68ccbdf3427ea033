"""The shard study of Ferro & Sanderson (SIGIR 2019): models MD1-MD6 on random collection shards.

For every shard count S and every one of ``n_splits`` random splits of the collection into S
shards, the runs and qrels are split by the same assignment, every (topic, system, shard) is
scored, and models MD2-MD6 are fitted (MD1 is fitted once on the whole collection). Each fit
gives the system effect size, Tukey's HSD with the model's own error term (significant pairs,
top group, interval width) and the system ranking, compared with MD1's by Kendall's tau.

Each (S, split) is one unit of work, mapped through :func:`irmodels.parallel.map`, so the study
runs serially, on local processes or on a Dask cluster with the same results (every unit gets
its own seed, spawned from ``seed``).

References: N. Ferro and M. Sanderson, "Improving the Accuracy of System Performance Estimation
by Using Shards", SIGIR 2019 (sections 3-5, Tables 2-4); docs/methods.md: "Crossed ANOVA models", "Multiple comparisons", "Shards and undefined values".
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._section import Section, figure_axes, figure_to_png
from irmodels._validate import check_fits, check_probability, check_seed
from irmodels.data.measures import UndefinedPolicy, evaluate, parse_measure, undefined_cells
from irmodels.errors import ArgumentError, DesignError, IRModelsWarning, UndefinedValueWarning
from irmodels.models.anova import anova
from irmodels.parallel import check_workers, default_workers, prestarted, spawn_seeds
from irmodels.parallel import map as parallel_map
from irmodels.studies._shard_units import (
    DEFAULT_MODELS,
    ShardContext,
    ShardUnit,
    check_int_list,
    collection_inputs,
    column_values,
    fit_record,
    nanmean_column,
    pair_levels,
    resolve_models,
    run_unit,
    split_seed,
)
from irmodels.studies._sharded import evaluate_assignment, fast_measure, prepare

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from irmodels._section import Section

__all__ = [
    "BY_MODEL_COLUMNS",
    "DEFAULT_MODELS",
    "DEFAULT_N_SHARDS",
    "RUN_COLUMNS",
    "SUMMARY_COLUMNS",
    "ShardStudy",
    "shards",
    "split_seed",
]

DEFAULT_N_SHARDS = (2, 3, 4, 5, 10, 25, 50)
# what a unit imports, loaded by process workers while the parent prepares the collection
_WORKER_MODULES = ("irmodels.studies.shard_study", "irmodels.studies._sharded",
                   "irmodels.models.anova", "irmodels.stats.tukey",
                   "irmodels.inference.rank", "irmodels.replicates.sharding")

#: Columns of :attr:`ShardStudy.runs`, in this order.
RUN_COLUMNS = ("model", "n_shards", "split", "n_topics", "n_systems", "n_undefined",
               "F_system", "p_system", "omega2_system", "ms_error", "df_error",
               "n_significant", "n_not_significant", "top_group", "ci_width", "tau")
#: Columns of :meth:`ShardStudy.summary_table`, in this order.
SUMMARY_COLUMNS = ("n_splits", "tau", "tau_lower", "tau_upper", "ci_width", "n_significant",
                   "n_not_significant", "top_group", "omega2_system", "sig_all_splits",
                   "frac_sig_all_splits")
_METRICS = ("omega2_system", "n_significant", "n_not_significant", "top_group", "ci_width", "tau")
#: Columns of :meth:`ShardStudy.by_model`, in this order.
BY_MODEL_COLUMNS = tuple(c for m in _METRICS for c in (m, f"{m}_change"))


# --------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, repr=False, eq=False)
class ShardStudy(ResultDisplay):
    """Result of :func:`shards`: models MD1-MD6 on random shards of a collection.

    Attributes
    ----------
    runs : DataFrame
        One row per model x S x split (MD1 once, with ``n_shards = 1`` and ``split = 0``: the
        whole collection). Columns, in order:

        - ``model``: ``MD1`` ... ``MD6``;
        - ``n_shards``: S; ``split``: 0-based index of the random split;
        - ``n_topics``, ``n_systems``: levels in the fit;
        - ``n_undefined``: undefined (topic, shard) cells of that split (before the policy);
        - ``F_system``, ``p_system``, ``omega2_system``: F, p and partial omega squared of the
          system factor;
        - ``ms_error``, ``df_error``: the model's error term;
        - ``n_significant``, ``n_not_significant``: system pairs (Tukey HSD at ``alpha``);
        - ``top_group``: systems not significantly different from the best one (itself
          included);
        - ``ci_width``: width of the Tukey interval of a system mean,
          ``Q(alpha; R, df_error) * sqrt(MS_error / (T*S))``;
        - ``tau``: Kendall's tau of the system ranking (marginal means) against MD1 on the
          whole collection.

        With ``undefined="missing"``, a fit whose least-squares system means are not
        estimable (empty (topic, shard) cells under MD6) has NaN Tukey columns and ``tau``.
    n_shards : tuple of int
        The shard counts S.
    n_splits : int
        Random splits per S.
    models : tuple of str
        Models fitted.
    measure : str
        Measure scored.
    undefined : float or str
        Undefined-value policy.
    alpha : float
        Level of the Tukey HSD.
    seed : int
        Seed of the study.
    reference : Series
        System means of MD1 on the whole collection (the reference ranking), indexed by
        system.
    """

    runs: pd.DataFrame
    n_shards: tuple[int, ...]
    n_splits: int
    models: tuple[str, ...]
    measure: str
    undefined: float | str
    alpha: float
    seed: int | None
    reference: pd.Series = field(repr=False)
    _sig: dict[tuple[str, int, int], np.ndarray] = field(repr=False)  # packed: _pack_pairs
    _means: dict[tuple[str, int, int], np.ndarray] = field(repr=False)
    _half: dict[tuple[str, int, int], float] = field(repr=False)

    # ---- tables
    def _check_s(self, n_shards: int) -> int:
        if n_shards not in self.n_shards:
            raise DesignError(
                f"the study has no S = {n_shards!r}; shard counts run: "
                f"{', '.join(map(str, self.n_shards))}."
            )
        return int(n_shards)

    def _check_model(self, model: str) -> str:
        name = str(model).strip().upper()
        if name not in self.models:
            raise DesignError(
                f"the study did not fit {model!r}; models fitted: {', '.join(self.models)}."
            )
        return name

    def significant_pairs(self, model: str = "MD6", n_shards: int | None = None) -> pd.DataFrame:
        """How often each system pair is significant over the splits of one S.

        Returns
        -------
        DataFrame
            One row per pair significant in at least one split: ``a``, ``b`` (``a < b``),
            ``n_splits`` (splits where it is significant) and ``all_splits`` (in every split
            with a Tukey result: with ``undefined="missing"``, a split whose least-squares
            system means are not estimable has no Tukey test and is left out).
            Sorted by ``n_splits`` descending, then ``a``, ``b``.
        """
        model = self._check_model(model)
        if model == "MD1":
            keys = [("MD1", 1, 0)]
        else:
            s = self._check_s(self.n_shards[0] if n_shards is None else n_shards)
            runs = self.runs[(self.runs["model"] == model) & (self.runs["n_shards"] == s)]
            tested = runs["split"][runs["n_significant"].notna()]
            keys = [(model, s, int(k)) for k in tested]
        levels = pair_levels(self.reference)
        r = len(levels)
        n_pairs = r * (r - 1) // 2
        counts = np.zeros(n_pairs, dtype=np.int64)
        for key in keys:
            counts += np.unpackbits(self._sig[key], count=n_pairs)
        hit = np.flatnonzero(counts)
        i, j = np.triu_indices(r, 1)
        names = levels.to_numpy(dtype=object)
        out = pd.DataFrame({"a": pd.Series(names[i[hit]], dtype="str"),
                            "b": pd.Series(names[j[hit]], dtype="str"),
                            "n_splits": counts[hit]})
        out["all_splits"] = out["n_splits"] == len(keys)
        return out.sort_values(["n_splits", "a", "b"], ascending=[False, True, True],
                               kind="stable").reset_index(drop=True)

    def summary_table(self, model: str | None = None) -> pd.DataFrame:
        """Per shard count S for one model (the paper's second table form).

        ``model`` defaults to MD6 (or the highest shard model fitted). The text summary is
        :meth:`summary`; this is the table.

        Returns
        -------
        DataFrame
            Indexed by ``n_shards``; columns, in order:

            - ``n_splits``: splits of S;
            - ``tau``, ``tau_lower``, ``tau_upper``: mean Kendall's tau against MD1 on the
              whole collection and its 95% confidence interval
              (``mean +- t(0.975; n-1) * sd / sqrt(n)`` over the ``n`` splits with a tau,
              clipped to [-1, 1]; NaN for one such split);
            - ``ci_width``, ``n_significant``, ``n_not_significant``, ``top_group``,
              ``omega2_system``: means over splits;
            - ``sig_all_splits``: pairs significant in every split with a Tukey result;
            - ``frac_sig_all_splits``: that count over all ``R(R-1)/2`` pairs.

            A split without a Tukey result (``undefined="missing"``: the least-squares system
            means are not estimable, so that row of :attr:`runs` has missing Tukey columns and
            ``tau``) is left out of the means of ``tau``, ``ci_width``, ``n_significant``,
            ``n_not_significant`` and ``top_group`` and of ``sig_all_splits``; its
            ``omega2_system`` still counts. With no Tukey result at any split of S, those means
            are NaN and ``sig_all_splits`` is 0.
        """
        model = self._check_model(self._default_shard_model() if model is None else model)
        if model == "MD1":
            raise DesignError("MD1 is fitted on the whole collection only; pick a shard model "
                              "(MD2..MD6) for the per-S table, or see by_model().")
        runs = self.runs[self.runs["model"] == model]
        rows = []
        for s in self.n_shards:
            g = runs[runs["n_shards"] == s]
            tau = column_values(g["tau"])
            tau = tau[~np.isnan(tau)]
            n = len(tau)
            mean = float(tau.mean()) if n else math.nan
            if n > 1:
                half = float(stats.t.ppf(0.975, n - 1) * tau.std(ddof=1) / math.sqrt(n))
            else:
                half = math.nan
            r = int(g["n_systems"].iloc[0])
            sig_all = self.significant_pairs(model, s)["all_splits"].sum()
            rows.append({
                "n_shards": s, "n_splits": len(g), "tau": mean,
                "tau_lower": max(mean - half, -1.0), "tau_upper": min(mean + half, 1.0),
                **{c: nanmean_column(g[c]) for c in ("ci_width", "n_significant",
                                               "n_not_significant", "top_group",
                                               "omega2_system")},
                "sig_all_splits": int(sig_all),
                "frac_sig_all_splits": float(sig_all) / (r * (r - 1) / 2),
            })
        out = pd.DataFrame(rows).set_index("n_shards")
        return out[list(SUMMARY_COLUMNS)]

    def _default_shard_model(self) -> str:
        shard_models = [m for m in self.models if m != "MD1"]
        if not shard_models:
            raise DesignError("the study fitted no shard model (only MD1).")
        return "MD6" if "MD6" in shard_models else shard_models[-1]

    def by_model(self, n_shards: int | None = None) -> pd.DataFrame:
        """Per model for one S, with percentage changes between consecutive models.

        The paper's first table form: MD1 on the whole collection, then MD2..MD6 averaged over
        the splits of S.

        Parameters
        ----------
        n_shards : int, optional
            S (default: 5 when studied, else the first S).

        Returns
        -------
        DataFrame
            Indexed by ``model``; for each of ``omega2_system``, ``n_significant``,
            ``n_not_significant``, ``top_group``, ``ci_width``, ``tau`` (means over splits)
            a column with the value and one ``<name>_change`` with the change from the model in
            the previous row, in percent (``100 * (this - previous) / previous``; NaN in the
            first row or when the previous value is 0).
        """
        if n_shards is None:
            n_shards = 5 if 5 in self.n_shards else self.n_shards[0]
        s = self._check_s(n_shards)
        runs = self.runs
        sel = runs[(runs["model"] == "MD1") | (runs["n_shards"] == s)]
        means = sel.groupby("model", sort=False)[list(_METRICS)].mean()
        means = means.reindex([m for m in self.models if m in means.index])
        out = pd.DataFrame(index=pd.Index(means.index, name="model"))
        for m in _METRICS:
            v = means[m].astype(float)
            prev = v.shift(1)
            with np.errstate(divide="ignore", invalid="ignore"):
                change = 100.0 * (v - prev) / prev.where(prev != 0)
            out[m] = v
            out[f"{m}_change"] = change
        return out

    # ---- display
    def _display_title(self) -> str:
        return (f"Shard study: {self.measure}, S in {{{', '.join(map(str, self.n_shards))}}}, "
                f"{self.n_splits} split(s) each, models {', '.join(self.models)}, "
                f"undefined={self.undefined!r}, alpha={self.alpha}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables = []
        if any(m != "MD1" for m in self.models):
            name = "MD6" if "MD6" in self.models else [m for m in self.models if m != "MD1"][-1]
            tables.append((f"{name} per number of shards", self.summary_table(name)))
        s = 5 if 5 in self.n_shards else self.n_shards[0]
        tables.append((f"Models on S = {s} shards (change from the previous model, %)",
                       self.by_model(s)))
        return tables

    def to_frame(self) -> pd.DataFrame:
        """:attr:`runs`, one row per fit (model x S x split), a copy."""
        return self.runs.copy()

    def __repr__(self) -> str:
        return (f"<ShardStudy measure={self.measure!r}, n_shards={self.n_shards}, "
                f"n_splits={self.n_splits}, models={self.models}, fits={len(self.runs)}>")

    # ---- plots
    def plot(self, n_shards: int | None = None, split: int = 0, *, ax: Any = None) -> Figure:
        """The figure of the study: :meth:`plot_intervals` (Tukey intervals per model)."""
        return self.plot_intervals(n_shards, split, ax=ax)

    def plot_intervals(self, n_shards: int | None = None, split: int = 0, *,
                       ax: Any = None) -> Figure:
        """Tukey intervals of every system mean, one panel per model (one split of one S).

        Systems are ordered by their MD1 mean on the whole collection (best first); each
        panel shows ``m +- 0.5 Q sqrt(MS_e / (T S))``: two systems differ significantly
        exactly when their intervals do not overlap. MD1 is the whole collection.

        Parameters
        ----------
        ax : matplotlib Axes (one per model), optional
            Draw there (the figure returned is then the first one's); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """

        if n_shards is None:
            n_shards = 5 if 5 in self.n_shards else self.n_shards[0]
        s = self._check_s(n_shards)
        if isinstance(split, bool) or not isinstance(split, (int, np.integer)) \
                or not 0 <= split < self.n_splits:
            raise DesignError(f"split must be in 0..{self.n_splits - 1}; got {split!r}.")
        order = np.argsort(-self.reference.to_numpy(), kind="stable")
        x = np.arange(len(order))
        n = len(self.models)
        fig, axes = figure_axes(ax, figsize=(7.5, 1.2 + 1.6 * n), shape=(n, 1), sharex=True,
                                what="ShardStudy.plot_intervals")
        for ax, model in zip(axes, self.models):
            key = ("MD1", 1, 0) if model == "MD1" else (model, s, int(split))
            m = self._means[key][order]
            h = self._half[key]
            ax.errorbar(x, m, yerr=h, fmt="o", ms=2.5, lw=0.8, capsize=0)
            label = "whole collection" if model == "MD1" else f"S = {s}, split {split}"
            ax.set_ylabel(f"{model}\n{self.measure}")
            ax.set_title(f"{model} ({label}): Tukey interval width {2 * h:.4f}", fontsize=9)
        axes[-1].set_xlabel("systems, ordered by MD1 mean on the whole collection")
        return fig

    # ---- report
    def to_section(self, *, digits: int = 4) -> Section:
        """This study as a report :class:`irmodels._section.Section` (HTML, Markdown, LaTeX):
        the design, the tables and the Tukey intervals per model.

        Pass it to ``irm.build_report(data, sections=[study.to_section()])``.
        """

        intro = (
            f"Models MD1-MD6 of Ferro & Sanderson (SIGIR 2019) on {self.measure}: MD1 on the "
            f"whole collection, the shard models on {self.n_splits} random split(s) of the "
            f"collection into S = {', '.join(map(str, self.n_shards))} shards. Undefined "
            f"(topic, shard) cells: policy {self.undefined!r}. Tukey HSD at alpha = "
            f"{self.alpha} with each model's error term; Kendall's tau against MD1."
        )
        s = 5 if 5 in self.n_shards else self.n_shards[0]
        return Section.from_tables(
            "Shard study", intro, self._display_tables(),
            png=figure_to_png(self.plot_intervals(s, 0)), alt="Tukey intervals per model",
            caption=f"Tukey intervals per model (S = {s}, split 0).", digits=digits)



# --------------------------------------------------------------------------------------------
# the study


def shards(
    collection: Any,
    *,
    n_shards: Sequence[int] = DEFAULT_N_SHARDS,
    n_splits: int = 10,
    models: Sequence[str] = DEFAULT_MODELS,
    measure: str = "AP",
    undefined: float | Literal["drop", "missing"] = 0.0,
    alpha: float = 0.05,
    seed: int = 0,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
) -> ShardStudy:
    """Run the shard study of Ferro & Sanderson (SIGIR 2019) on a collection.

    Parameters
    ----------
    collection : DemoCollection, object or tuple
        Anything with ``.runs`` (``system, topic, docid, score``), ``.qrels``
        (``topic, docid, rel``) and ``.docids`` (every document of the collection), such as
        ``irm.collection.generate(preset="small")``; or a tuple ``(runs, qrels, docids)``.
        Without doc ids (``(runs, qrels)`` or ``docids=None``) the list is the union of the
        runs and qrels, with a :class:`~irmodels.errors.DataQualityWarning`.
    n_shards : sequence of int
        Shard counts S (each >= 2), default ``(2, 3, 4, 5, 10, 25, 50)``.
    n_splits : int
        Random splits per S (default 10).
    models : sequence of str
        Presets among ``MD1`` ... ``MD6``. MD1 is fitted on the whole collection; the others
        on every split. MD1's system ranking is always computed: it is the reference of tau.
    measure : str
        Measure to score (``irm.evaluate`` names). Measures of binary relevance (``AP``,
        ``AP@k``, ``GMAP``, ``P@k``, ``R@k``, ``Rprec``, ``RR``, ``RBP``) use a fast path with
        the same kernels and values as ``irm.evaluate``; other measures call ``irm.evaluate``
        for every split.
    undefined : float, "drop" or "missing"
        Policy for (topic, shard) cells without a relevant document (see ``irm.evaluate``):
        substitute a constant (default 0), drop those topics, or leave the cells missing
        (unbalanced: the least-squares path of ``irm.anova``, slow for large S and refused
        with a ``DesignError`` when its dense design would exceed ``MAX_DENSE_CELLS``).
    alpha : float
        Family-wise level of Tukey's HSD.
    seed : int
        Seed of the study. Split ``k`` of S uses child ``k`` of
        ``SeedSequence(seed, spawn_key=(S,))`` (see :func:`split_seed`), so a split does not
        depend on the other shard counts or on ``n_splits``: a larger study extends a smaller
        one.
    backend : {"serial", "processes"}, dask Client or str
        Where the (S, split) units run (:func:`irmodels.parallel.map`).
    n_workers : int, optional
        Processes for ``backend="processes"`` (default: the cores available). That backend
        also encodes the runs (the step before the units run in parallel) in ``n_workers``
        threads, a part of the runs each, with the result of one thread.
    progress : bool, optional
        Progress bar (default: when stderr is a terminal).

    Returns
    -------
    ShardStudy
        ``.runs`` (one row per model x S x split), ``.summary_table()`` (per S for MD6),
        ``.by_model(S)``, ``.significant_pairs(model, S)``, ``.plot_intervals(S)``,
        ``to_latex()`` and ``to_section()``.

    Raises
    ------
    DesignError
        Bad shard counts (< 2, or more than the documents), split counts, models or alpha.
    DataFormatError
        Malformed runs or qrels, documents missing from the doc-id list.

    Warns
    -----
    UndefinedValueWarning
        Once, when some (topic, shard) cells were undefined: how many, and the policy.

    Notes
    -----
    Models (docs/methods.md: "Crossed ANOVA models"): MD1 ``topic + system`` on the whole collection; on shards
    MD2 ``topic + system``, MD3 ``+ topic:system``, MD4 ``+ shard``, MD5 ``+ system:shard``,
    MD6 ``+ topic:shard``. Tukey's HSD uses the model's ``MS_error`` and ``df_error`` with
    ``n = T*S`` observations per system mean (docs/methods.md: "Multiple comparisons"). With a constant
    substituted for undefined cells, MD6's system effect, error term and Tukey intervals do
    not depend on the constant (the topic:shard interaction absorbs the undefined cells;
    Ferro & Sanderson, Propositions 7.2-7.4); under MD2-MD5 only the differences of system
    means are free of it.

    Examples
    --------
    >>> import warnings, irmodels as irm
    >>> col = irm.collection.generate(preset="tiny", seed=0)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", irm.UndefinedValueWarning)
    ...     study = irm.studies.shards(col, n_shards=[2, 3], n_splits=2, seed=1)
    >>> study
    <ShardStudy measure='AP', n_shards=(2, 3), n_splits=2, models=('MD1', 'MD2', 'MD3', 'MD4', 'MD5', 'MD6'), fits=21>
    >>> study.summary_table()[["tau", "ci_width", "n_significant"]].round(3)
              tau  ci_width  n_significant
    n_shards
    2         1.0     0.166            0.0
    3         1.0     0.085            1.0
    """
    seed = check_seed(seed)

    inputs = collection_inputs(collection)
    s_list = check_int_list(n_shards, "n_shards", 2)
    if max(s_list) > len(inputs.docids):
        raise DesignError(
            f"cannot split {len(inputs.docids)} documents into {max(s_list)} shards; use at "
            f"most {len(inputs.docids)}."
        )
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
        raise ArgumentError(f"n_splits must be a positive integer; got {n_splits!r}.")
    model_names = resolve_models(models)
    alpha = check_probability(alpha, "alpha")  # numpy floats too
    # each split's seed, shard labels and per-model results, for every number of shards
    check_fits(int(n_splits), "n_splits",
               len(s_list) * (8 * len(inputs.docids) + 4096 * len(model_names)),
               what="the splits' shard labels and results")
    canonical = parse_measure(measure).name
    parsed = UndefinedPolicy.parse(undefined)  # refuses True, "bogus", NaN as irm.evaluate does
    undefined = parsed.value if parsed.kind == "constant" else parsed.kind  # type: ignore[assignment]

    # workers are spawned (and import irmodels) while this process encodes the collection
    with prestarted(backend, n_workers, _WORKER_MODULES):
        fast = fast_measure(canonical)
        prepared = None
        if fast is not None:
            # integer encoding once (validates the inputs as irm.evaluate does)
            threads = 1
            if isinstance(backend, str) and backend == "processes":
                threads = check_workers(n_workers) or default_workers()
            prepared = prepare(inputs.runs, inputs.qrels, inputs.docids, fast, threads=threads)
            whole, whole_undef = evaluate_assignment(
                prepared, np.ones(prepared.n_docs, dtype=np.int64), 1, undefined)
            whole = whole.drop(columns="shard")
            n_whole_undef = len(whole_undef)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedValueWarning)  # one summary warning below
                whole = evaluate(inputs.runs, inputs.qrels, [canonical], undefined=undefined)
            n_whole_undef = len(undefined_cells(whole))

        # MD1 on the whole collection: the reference ranking

        # silenced, not steering: the reference fit's warnings (a clipped omega^2) say nothing
        # about the study, which reports MD1's record itself
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IRModelsWarning)
            reference = anova("MD1", whole).marginal_means("system")
        rec, sig, means_arr, half = fit_record("MD1", whole, alpha, reference)
        rec.update(n_shards=1, split=0, n_undefined=n_whole_undef)

        ctx = ShardContext(prepared=prepared, inputs=None if prepared is not None else inputs,
                           measure=canonical, undefined=undefined, models=model_names,
                           alpha=float(alpha), reference=reference)
        units = [
            ShardUnit(n_shards=s, split=k, seed=child)
            for s in s_list
            for k, child in enumerate(spawn_seeds(split_seed(seed, s), int(n_splits)))
        ]
        # the units of many shards cost most: handed out first, they do not leave one worker
        # busy at the end while the other waits (each unit has its own seed: same results)
        by_cost = sorted(range(len(units)), key=lambda i: -units[i].n_shards)
        done = parallel_map(functools.partial(run_unit, ctx), [units[i] for i in by_cost],
                            backend=backend, n_workers=n_workers, progress=progress,
                            desc="shard study")
        results: list[dict[str, Any]] = [{}] * len(units)
        for i, res in zip(by_cost, done):
            results[i] = res

    records = [rec] if "MD1" in model_names else []
    sig_d: dict[tuple[str, int, int], np.ndarray] = {("MD1", 1, 0): sig}
    means_d: dict[tuple[str, int, int], np.ndarray] = {("MD1", 1, 0): means_arr}
    half_d: dict[tuple[str, int, int], float] = {("MD1", 1, 0): half}
    n_undef_total = n_cells_total = 0
    for unit, res in zip(units, results):
        records.extend(res["records"])
        for model in res["sig"]:
            key = (model, unit.n_shards, unit.split)
            sig_d[key] = res["sig"][model]
            means_d[key] = res["means"][model]
            half_d[key] = res["half"][model]
        if res["records"]:
            n_undef_total += res["records"][0]["n_undefined"]
        n_cells_total += res["n_cells"]
    runs = pd.DataFrame(records)
    if len(runs) == 0:
        runs = pd.DataFrame(columns=list(RUN_COLUMNS))
    runs = runs[list(RUN_COLUMNS)].reset_index(drop=True)
    runs["model"] = runs["model"].astype("str")
    for c in ("n_shards", "split", "n_topics", "n_systems", "n_undefined", "df_error",
              "n_significant", "n_not_significant", "top_group"):
        # nullable where a fit had no estimable system means (undefined="missing")
        runs[c] = runs[c].astype("Int64" if runs[c].isna().any() else "int64")
    order = {m: i for i, m in enumerate(DEFAULT_MODELS)}
    runs = runs.sort_values(
        ["n_shards", "split", "model"], key=lambda c: c.map(order) if c.name == "model" else c,
        kind="stable",
    ).reset_index(drop=True)
    if n_undef_total or n_whole_undef:
        policy = (f"replaced by {undefined}" if not isinstance(undefined, str)
                  else {"drop": "their topics dropped", "missing": "left missing"}[undefined])
        warnings.warn(
            f"{n_undef_total} of {n_cells_total} (topic, shard) cells over all splits (and "
            f"{n_whole_undef} topic(s) of the whole collection) had no relevant document, so "
            f"{canonical} is undefined there for every system; they were {policy}. Under MD6 the system effect and Tukey's HSD do not depend on a "
            "substituted constant (docs/methods.md, 'Shards and undefined values'); see .runs['n_undefined'] per split.",
            UndefinedValueWarning,
            stacklevel=2,
        )
    return ShardStudy(
        runs=runs, n_shards=s_list, n_splits=int(n_splits), models=model_names,
        measure=canonical, undefined=undefined, alpha=float(alpha), seed=seed,
        reference=reference.rename("mean"), _sig=sig_d, _means=means_d, _half=half_d,
    )
