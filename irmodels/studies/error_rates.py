"""Error rates of significance tests on simulated test collections.

:func:`test_errors` fits a stochastic simulator to an observed topic x system matrix
(:func:`irmodels.replicates.fit_simulator`: a margin per system and a Gaussian copula) and
transforms every margin to one expected value ``m`` (the mean of the fitted ones), and again to
``m + delta``. Each trial draws a pair of systems (a, b) at random and simulates topic sets of
every size twice:

- under the **null**, both systems (and all others) have expected value ``m``: a significant
  result is a **type I** error;
- under the **alternative**, system b has expected value ``m + delta``: a result that is not
  significant is a **type II** error, a significant one with b below a a **type III** error
  (the wrong sign).

With ``design="pairs"`` a trial simulates its pair the way Urbano, Lima & Hanjalic do: both
runs through the first run's margin, joined by the pair's bivariate copula (a family chosen by
AIC, :mod:`irmodels.replicates._copulas`). Under the alternative it follows their
``R/02-margins_transform.R`` and ``R/12-type_2.R``: a baseline run b among all but the top
quarter by expected score, an experimental run e among the 10 whose expected scores are nearest
b's plus ``delta``, e's margin transformed to b's expected score plus ``delta``, and the copula
of the pair (b, e).

The tests reuse the kernels of :func:`irmodels.pairwise` (paired t, Wilcoxon signed-rank,
sign, bootstrap, permutation) on the per-topic differences of the pair, Tukey's HSD with the
MD1 error term (``score ~ topic + system``) over all the simulated systems, and the mixed model
``score ~ system + (1|topic)`` over all of them (its closed-form REML fit, equal to
:func:`irmodels.mixed` on a balanced matrix).

Trials run in batches of 50, one child seed each (``SeedSequence(seed, spawn_key=(c,))`` per
topic-set size c), mapped by :func:`irmodels.parallel.map`: the result is the same on every
backend.

References: J. Urbano, H. Lima and A. Hanjalic, "Statistical significance testing in
information retrieval: an empirical analysis of type I, type II and type III errors", SIGIR
2019; J. Urbano and T. Nagler, "Stochastic simulation of test collections: evaluation
scores", SIGIR 2018; docs/methods.md (error rates of tests).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._section import Section, figure_axes, figure_to_png
from irmodels._validate import (
    check_number,
    check_probability,
    check_seed,
    did_you_mean,
    seed_sequence,
)
from irmodels.data._columns import user_frame
from irmodels.data.frame import to_wide
from irmodels.errors import ArgumentError, DataQualityWarning, DesignError
from irmodels.parallel import map as parallel_map
from irmodels.replicates import _copulas
from irmodels.replicates._margins import Margin, quantiles
from irmodels.replicates.simulation import TopicSimulator, fit_simulator
from irmodels.stats.paired import paired_t_test, sign_test, wilcoxon_test
from irmodels.stats.resampling import resampling_test
from irmodels.stats.studentized import sf as studentized_sf

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DESIGNS", "ERROR_COLUMNS", "TESTS", "ErrorRateStudy", "test_errors"]

TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation", "tukey", "mixed")
#: How a trial simulates its pair: ``"systems"`` (every system's margin moved to one mean, a
#: Gaussian copula of all systems) or ``"pairs"`` (Urbano, Lima & Hanjalic's: run 1's margin
#: for both runs, a bivariate copula family chosen by AIC per pair).
DESIGNS = ("systems", "pairs")
_FULL = ("tukey", "mixed")  # tests that need every system of a trial simulated
#: Columns of :meth:`ErrorRateStudy.to_frame`, in order.
ERROR_COLUMNS = ("test", "topics", "alpha", "type_I", "type_II", "type_III", "n_trials")
#: Columns of :attr:`ErrorRateStudy.table`, in order (the counts appended).
TABLE_COLUMNS = ERROR_COLUMNS + ("n_type_I", "n_type_II", "n_type_III")
_CHUNK = 50  # trials per unit of work: fixed, so the seeds never depend on the backend
#: The paper's alternative (``R/02-margins_transform.R``): baselines are all runs but the top
#: quarter by expected score; each is paired with the 10 runs nearest its expected score + delta.
_TOP_SHARE = 0.25
_NEAREST = 10


@dataclass(frozen=True)
class _PairModel:
    """The paper's design: per system its margin; per pair (i < j) the bivariate copula chosen
    by AIC (VineCopula's family numbers); the alternatives (:func:`_paper_alternatives`)."""

    margins: tuple[Margin, ...]
    alternatives: tuple[tuple[int, int, Margin], ...]
    family: np.ndarray  # R x R, the upper triangle used
    par: np.ndarray
    par2: np.ndarray

    @functools.cached_property
    def groups(self) -> tuple[np.ndarray, ...]:
        """Per baseline (in order of first appearance) the indices of its alternatives."""
        first: dict[int, list[int]] = {}
        for k, (b, _, _) in enumerate(self.alternatives):
            first.setdefault(b, []).append(k)
        return tuple(np.asarray(v, dtype=np.int64) for v in first.values())


@dataclass(frozen=True)
class _Context:
    null: TopicSimulator
    alt: TopicSimulator
    tests: tuple[str, ...]
    alphas: tuple[float, ...]
    n_resamples: int
    pairs: _PairModel | None = None
    sign_ties: float = 0.0


def _full_stats(S: np.ndarray, ia: np.ndarray, ib: np.ndarray
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Tukey's and the mixed model's p-values and directions of pair (a, b) in every trial.

    ``S``: trials x topics x systems. Tukey: q = |mean_b - mean_a| / sqrt(MS_E / c) with the
    MD1 residual mean square on (c - 1)(R - 1) df, p from the studentized range with R means.
    Mixed ``score ~ system + (1|topic)`` (balanced, REML): sigma_e^2 = MS_E when MS_topic >=
    MS_E, else (topic variance on the boundary, 0) the pooled (SS_topic + SS_E) / ((c - 1) R);
    t = diff / sqrt(2 sigma_e^2 / c) on (c - 1)(R - 1) df, or (c - 1) R at the boundary.
    """
    B, c, R = S.shape
    means = S.mean(axis=1)  # B x R
    tmeans = S.mean(axis=2)  # B x c
    grand = means.mean(axis=1)
    resid = S - means[:, None, :] - tmeans[:, :, None] + grand[:, None, None]
    df_e = (c - 1) * (R - 1)
    ss_e = (resid**2).sum(axis=(1, 2))
    ss_t = R * ((tmeans - grand[:, None]) ** 2).sum(axis=1)
    ms_e = ss_e / df_e
    ms_t = ss_t / (c - 1)
    rows = np.arange(B)
    d = means[rows, ib] - means[rows, ia]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.abs(d) / np.sqrt(ms_e / c)
        q = np.where(d == 0, 0.0, q)
        out["tukey"] = (np.asarray(studentized_sf(np.where(np.isfinite(q), q, 1e300), R, df_e), float),
                        np.sign(d))
        interior = ms_t >= ms_e
        var = np.where(interior, ms_e, (ss_t + ss_e) / ((c - 1) * R))
        df = np.where(interior, df_e, (c - 1) * R)
        t = d / np.sqrt(2.0 * var / c)
        t = np.where(d == 0, 0.0, t)
        out["mixed"] = (2.0 * stats.t.sf(np.abs(t), df), np.sign(d))
    return out


def _pair_stats(D: np.ndarray, test: str, rng: np.random.Generator, n_resamples: int,
                sign_ties: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided p-values and the direction (sign of b - a) of every column of ``D``.

    ``sign_ties``: the sign test counts a difference with ``|d| <= sign_ties`` as a tie (when
    positive; 0 counts only ``d = 0``), as the paper's ``test_sign(min_d = .01)``."""
    if test == "t":
        with np.errstate(divide="ignore", invalid="ignore"):
            res = paired_t_test(D, "two-sided", 0.05)
        return res["p"], np.sign(D.mean(axis=0))
    if test == "wilcoxon":
        res = wilcoxon_test(D, "two-sided")
        n = res["n"]
        return res["p"], np.sign(res["statistic"] - n * (n + 1) / 4.0)
    if test == "sign":
        res = sign_test(D, "two-sided", ties=sign_ties)
        return res["p"], np.sign(res["statistic"] - res["n"] / 2.0)
    kind = "bootstrap" if test == "bootstrap" else "randomization"
    res, _ = resampling_test(kind, D, "two-sided", 0.05, n_resamples, rng, None)
    return res["p"], np.sign(D.mean(axis=0))


def _pair_differences(model: _PairModel, c: int, ia: np.ndarray, ib: np.ndarray,
                      rng: np.random.Generator) -> np.ndarray:
    """The paper's null trials (``R/11-type_1.R``): c topics of each pair (a, b) from the
    copula of the pair (fitted with the lower index first) and a's margin for both runs:
    D = b - a, c x n."""
    lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
    U1, U2 = _copulas.simulate(model.family[lo, hi], model.par[lo, hi], model.par2[lo, hi], c,
                               rng)
    base = [model.margins[int(a)] for a in ia]
    return quantiles(base, U2) - quantiles(base, U1)


def _alt_differences(model: _PairModel, c: int, n: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's alternative trials (``R/12-type_2.R``): a baseline b drawn uniformly among
    those with an alternative, one of its experimental runs e uniformly, c topics from the
    copula of the pair (b, e) (its first margin the lower index's), b through its margin and e
    through its own margin transformed to b's expected score + delta. Returns D = e - b (c x
    n) and the indices of b and e."""
    groups = model.groups
    g = rng.integers(0, len(groups), n)
    sizes = np.array([len(x) for x in groups])
    pick = np.minimum((rng.random(n) * sizes[g]).astype(np.int64), sizes[g] - 1)
    k = np.array([groups[gi][p] for gi, p in zip(g, pick)], dtype=np.int64)
    b = np.array([model.alternatives[x][0] for x in k], dtype=np.int64)
    e = np.array([model.alternatives[x][1] for x in k], dtype=np.int64)
    lo, hi = np.minimum(b, e), np.maximum(b, e)
    U1, U2 = _copulas.simulate(model.family[lo, hi], model.par[lo, hi], model.par2[lo, hi], c,
                               rng)
    first = b < e  # the copula's first component is the lower index
    Ub, Ue = np.where(first, U1, U2), np.where(first, U2, U1)
    Xb = quantiles([model.margins[int(x)] for x in b], Ub)
    Xe = quantiles([model.alternatives[x][2] for x in k], Ue)
    return Xe - Xb, b, e


def _paper_alternatives(margins: Sequence[Margin], delta: float, systems: Sequence[str]
                        ) -> tuple[tuple[int, int, Margin], ...]:
    """``R/02-margins_transform.R``: the baselines are the runs but the top quarter by
    expected score (``round(R / 4)`` of them, R's round); each baseline i is paired with the
    10 other runs j whose expected scores are nearest ``mu_i + delta``, and j's margin is
    transformed to expected score ``mu_i + delta`` (simIReff's ``effTransform``; a margin that
    cannot reach it is skipped). Returns ``(i, j, transformed margin)`` by i, then nearness."""
    mu = np.array([m.mean for m in margins])
    R = len(mu)
    top = int(round(R * _TOP_SHARE))  # Python's round, like R's, rounds half to even
    baselines = sorted(int(i) for i in np.argsort(-mu, kind="stable")[top:])
    out: list[tuple[int, int, Margin]] = []
    for i in baselines:
        target = float(mu[i] + delta)
        if not 0 < target < 1:
            continue
        js = np.argsort(np.abs(mu - mu[i] - delta), kind="stable")
        for j in [int(x) for x in js if x != i][:_NEAREST]:
            try:
                out.append((i, j, margins[j].with_mean(target, systems[j])))
            except DesignError:
                continue
    return tuple(out)


def _fit_pair_model(X: np.ndarray, margins: tuple[Margin, ...], delta: float,
                    seed: np.random.SeedSequence, systems: Sequence[str]
                    ) -> tuple[_PairModel, pd.DataFrame]:
    """Pseudo-observations of ``X`` (topics x systems; ties broken at random, from ``seed``),
    every pair's copula by AIC (:func:`irmodels.replicates._copulas.select_families`), also as
    a frame (one row per pair), and the alternatives of ``delta``
    (:func:`_paper_alternatives`)."""
    U = _copulas.pseudo_observations(X, np.random.default_rng(seed))
    R = X.shape[1]
    lo, hi = np.triu_indices(R, k=1)
    sel = _copulas.select_families(U[:, lo], U[:, hi])
    fam, par, par2 = np.zeros((R, R), np.int64), np.zeros((R, R)), np.zeros((R, R))
    fam[lo, hi], par[lo, hi], par2[lo, hi] = sel["family"], sel["par"], sel["par2"]
    names = np.asarray(systems, dtype=object)
    table = pd.DataFrame({"system_a": names[lo], "system_b": names[hi],
                          "family": [_copulas.SHORT_NAMES[int(f)] for f in sel["family"]],
                          "par": sel["par"], "par2": sel["par2"], "loglik": sel["loglik"],
                          "aic": sel["aic"], "tau": sel["tau"]})
    alternatives = _paper_alternatives(margins, delta, systems)
    if not alternatives:
        raise DesignError(
            f"no run can be transformed to a baseline's expected score plus delta={delta:g} "
            "(the paper's alternative); use a smaller delta or drop the runs whose scores are "
            "all near 0 (irm.filter_systems).")
    return (_PairModel(margins=margins, alternatives=alternatives, family=fam, par=par,
                       par2=par2), table)


def _run_unit(ctx: _Context, unit: tuple[int, int, np.random.SeedSequence]
              ) -> dict[tuple[str, float, str], int]:
    c, n, seq = unit
    rng = np.random.default_rng(seq)
    R = len(ctx.null.systems)
    full = any(t in _FULL for t in ctx.tests)
    pairs = np.array([rng.choice(R, size=2, replace=False) for _ in range(n)])
    ia, ib = pairs[:, 0], pairs[:, 1]
    out: dict[tuple[str, float, str], int] = {}
    paired = _pair_differences(ctx.pairs, c, ia, ib, rng) if ctx.pairs is not None else None
    for hyp in ("null", "alt"):
        S: np.ndarray | None = None
        if ctx.pairs is not None and paired is not None:
            # the alternative's pairs drawn after the null's tests: the null's draws are the
            # same with or without it
            D = paired if hyp == "null" else _alt_differences(ctx.pairs, c, n, rng)[0]
        elif full:
            S = np.stack([
                (ctx.null if hyp == "null" else ctx.null.with_margins_of(ctx.alt, [b]))
                .sample_matrix(c, rng) for b in ib])  # trials x c x R
            D = (S[np.arange(n), :, ib] - S[np.arange(n), :, ia]).T  # c x trials
        else:
            cols = []
            for a, b in zip(ia, ib):
                sim = ctx.null if hyp == "null" else ctx.null.with_margins_of(ctx.alt, [b])
                cols.append(sim.sample_matrix(c, rng, columns=[a, b]))
            D = np.column_stack([x[:, 1] - x[:, 0] for x in cols])
        full_stats = _full_stats(S, ia, ib) if S is not None else {}
        for test in ctx.tests:
            if test in _FULL:
                p, direction = full_stats[test]
            else:
                p, direction = _pair_stats(D, test, rng, ctx.n_resamples, ctx.sign_ties)
            for alpha in ctx.alphas:
                sig = p <= alpha  # NaN (a pair identical on every topic) is not significant
                if hyp == "null":
                    out[(test, alpha, "I")] = int(sig.sum())
                else:
                    out[(test, alpha, "II")] = int((~sig).sum())
                    out[(test, alpha, "III")] = int((sig & (direction < 0)).sum())
    return out


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True, repr=False, eq=False)
class ErrorRateStudy(ResultDisplay):
    """Result of :func:`test_errors`.

    Attributes
    ----------
    table : DataFrame
        One row per (test, topics, alpha): ``test``; ``topics`` (topics per simulated
        collection); ``alpha``; ``type_I`` (share of the null trials found significant);
        ``type_II`` (share of the alternative trials not significant); ``type_III`` (share
        of the alternative trials significant with the wrong sign); ``n_trials`` (trials under
        each hypothesis); ``n_type_I``, ``n_type_II``, ``n_type_III`` (the counts).
    simulator : TopicSimulator
        The simulator fitted to the data (untransformed margins).
    null_mean, delta : float
        The expected value of every system under the null, and system b's true advantage under
        the alternative.
    tests, sizes, alphas, n_trials, seed, n_topics, n_systems
        The study's settings and the data's shape.
    design : str
        ``"systems"`` or ``"pairs"`` (see :func:`test_errors`).
    pair_copulas : DataFrame or None
        With ``design="pairs"``: one row per pair of systems, ``system_a, system_b, family``
        (VineCopula's short name: N, t, C, G, F, J, SC, ..., Tawn, Tawn2, ...), ``par, par2,
        loglik, aic, tau``; None otherwise.
    """

    table: pd.DataFrame
    simulator: TopicSimulator = field(repr=False)
    null_mean: float
    delta: float
    tests: tuple[str, ...]
    sizes: tuple[int, ...]
    alphas: tuple[float, ...]
    n_trials: int
    seed: Any
    n_topics: int
    n_systems: int
    design: str = "systems"
    pair_copulas: pd.DataFrame | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """``test, topics, alpha, type_I, type_II, type_III, n_trials``, one row per (test,
        topics, alpha)."""
        return self.table[list(ERROR_COLUMNS)].copy()

    def intervals(self, level: float = 0.95) -> pd.DataFrame:
        """Clopper-Pearson intervals of the three rates: :meth:`to_frame` with ``lower_I``,
        ``upper_I``, ``lower_II``, ``upper_II``, ``lower_III``, ``upper_III`` appended."""
        level = check_probability(level, "level")
        out = self.to_frame()
        n = self.table["n_trials"].to_numpy(float)
        a = (1 - level) / 2
        for kind in ("I", "II", "III"):
            k = self.table[f"n_type_{kind}"].to_numpy(float)
            lo = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
            hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
            out[f"lower_{kind}"], out[f"upper_{kind}"] = lo, hi
        return out

    def _display_title(self) -> str:
        return (f"Error rates of tests on simulated collections: {self.n_trials} trials per "
                f"size, pairs of {self.n_systems} systems fitted on {self.n_topics} topics; "
                f"null mean {self.null_mean:.4f}, true difference {self.delta:g}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Type I, II and III error rates", self.to_frame().set_index("test"))]

    def __repr__(self) -> str:
        return (f"<ErrorRateStudy tests={self.tests}, sizes={self.sizes}, alphas={self.alphas}, "
                f"n_trials={self.n_trials}, delta={self.delta:g}>")

    def plot(self, *, ax: Any = None) -> Figure:
        """Three panels (type I, II, III): the error rate against the topics per collection,
        one line per test (line style per alpha); the type I panel marks each alpha.

        Parameters
        ----------
        ax : sequence of three matplotlib Axes, optional
            Draw there (the figure returned is then the first one's); by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """
        fig, axes = figure_axes(ax, figsize=(12, 3.6), shape=(1, 3),
                                what="ErrorRateStudy.plot")
        styles = ["-", "--", ":", "-."]
        colors = {t: f"C{i}" for i, t in enumerate(self.tests)}
        for k, (col, title) in enumerate((("type_I", "type I (significant under H0)"),
                                          ("type_II", "type II (not significant under H1)"),
                                          ("type_III", "type III (significant, wrong sign)"))):
            a = axes[k]
            for j, alpha in enumerate(self.alphas):
                for test in self.tests:
                    g = self.table[(self.table["test"] == test) & (self.table["alpha"] == alpha)]
                    a.plot(g["topics"], g[col], marker="o", ls=styles[j % len(styles)],
                           color=colors[test],
                           label=f"{test}" + (f", alpha={alpha:g}" if len(self.alphas) > 1
                                               else ""))
                if k == 0:
                    a.axhline(alpha, color="grey", lw=0.8, ls=styles[j % len(styles)])
            a.set_xlabel("topics")
            a.set_ylabel("error rate")
            a.set_title(title, fontsize=9)
        axes[0].legend(fontsize=7)
        return fig

    def to_section(self, *, digits: int = 4) -> Section:
        """This study as a report :class:`~irmodels._section.Section` (tables and figure)."""
        if self.design == "pairs":
            model = ("the first system's margin for both and the pair's bivariate copula "
                     "(family by AIC), fitted to the data, under the null (equal expected "
                     "scores) and with the second system's")
        else:
            model = ("margins and a Gaussian copula fitted to the data (Urbano & Nagler, "
                     f"SIGIR 2018), under the null (every system's expected score "
                     f"{self.null_mean:.4f}) and with system b")
        intro = (
            f"{self.n_trials} trials per topic-set size ({', '.join(map(str, self.sizes))} "
            f"topics): a random pair of the {self.n_systems} systems simulated from {model} "
            f"{self.delta:g} better; type I, II and III errors after Urbano, Lima & Hanjalic "
            "(SIGIR 2019).")
        return Section.from_tables(
            "Error rates of significance tests", intro, self._display_tables(),
            png=figure_to_png(self.plot()), alt="Error rates by topic-set size",
            caption="Type I, II and III error rates against the number of topics.",
            digits=digits)



# --------------------------------------------------------------------------------------------
# the study


def _as_tuple(values: Any, name: str) -> tuple[Any, ...]:
    if isinstance(values, (str, int, float, np.integer, np.floating)):
        return (values,)
    try:
        return tuple(values)
    except TypeError:
        raise DesignError(f"{name} must be a value or a sequence of values; got "
                          f"{values!r}.") from None


def test_errors(
    data: pd.DataFrame | TopicSimulator,
    *,
    tests: Sequence[str] | str = TESTS,
    sizes: Sequence[int] | int = (25, 50),
    alpha: Sequence[float] | float = (0.01, 0.05),
    n_trials: int = 1000,
    delta: float = 0.02,
    margins: Literal["auto", "truncnorm", "beta", "kernel", "betabinom"] | Mapping[str, str]
    = "auto",
    n_resamples: int = 1000,
    design: Literal["systems", "pairs"] = "systems",
    sign_ties: float = 0.0,
    seed: Any = 0,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    k: int | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> ErrorRateStudy:
    """Type I, II and III error rates of significance tests on simulated collections.

    Parameters
    ----------
    data : DataFrame or TopicSimulator
        A long frame with one score in [0, 1] per (topic, system), every cell present; the
        simulator is fitted to it (:func:`irmodels.replicates.fit_simulator`). Or a simulator
        already fitted (``margins``, ``k`` and the column names are then unused).
    tests : sequence of str
        Among ``"t"`` (paired t), ``"wilcoxon"`` (signed-rank), ``"sign"``, ``"bootstrap"``
        (paired bootstrap of the mean difference), ``"permutation"`` (random sign flips),
        ``"tukey"`` (Tukey HSD over all systems, MD1 error term) and ``"mixed"``
        (``score ~ system + (1|topic)``, unadjusted t of the pair). All two-sided.
    sizes : int or sequence of int
        Topics per simulated collection (default 25 and 50).
    alpha : float or sequence of float
        Significance levels (default 0.01 and 0.05); every trial is judged at each.
    n_trials : int
        Trials per size under each hypothesis (default 1000).
    delta : float
        True difference of the pair under the alternative (default 0.02): b's expected value
        is the null mean plus ``delta`` (``design="pairs"``: e's is b's plus ``delta``).
    margins : {"auto", "truncnorm", "beta", "kernel", "betabinom"} or mapping
        Margin family (``auto``: by AIC per system), or a mapping system -> family.
    n_resamples : int
        Resamples of the bootstrap and permutation tests (default 1000).
    design : {"systems", "pairs"}
        How a trial simulates its pair. ``"systems"`` (the default): every system's margin
        moved to one mean ``m`` and a Gaussian copula of all systems. ``"pairs"``: Urbano,
        Lima & Hanjalic's (SIGIR 2019, ``R/11-type_1.R``): the pair's first run's margin for
        both runs and the pair's own bivariate copula, its family chosen by AIC as
        VineCopula's ``BiCopSelect`` does (Gaussian, t, Clayton, Gumbel, Frank, Joe and
        their rotations; :mod:`irmodels.replicates._copulas`) on the pair's
        pseudo-observations. Its alternative is theirs too (``R/02-margins_transform.R``,
        ``R/12-type_2.R``): a baseline b drawn among all runs but the top quarter by
        expected score, an experimental run e among the 10 runs whose expected scores are
        nearest b's plus ``delta``, e's own margin transformed to b's expected score plus
        ``delta``, and the copula of (b, e). Needs a data frame, and only the paired tests.
    sign_ties : float
        The sign test counts a difference with ``|d| <= sign_ties`` as a tie (default 0:
        only ``d = 0``). The paper uses 0.01 (``R/ir_tests.R``).
    seed : int
        Seed of the study; the trials of size c come from ``SeedSequence(seed,
        spawn_key=(c,))``, in batches of 50 with one child seed each.
    backend, n_workers, progress
        Where the batches run (:func:`irmodels.parallel.map`); the result does not depend on
        it.
    k : int, optional
        ``k`` of a ``P@k`` measure (read from the ``measure`` column when not given).
    topic, system, score : str
        Column names, as in :func:`irmodels.frame`.

    Returns
    -------
    ErrorRateStudy
        ``to_frame()``: ``test``, ``topics``, ``alpha``, ``type_I`` (share of null trials
        significant), ``type_II`` (share of alternative trials not significant),
        ``type_III`` (share of alternative trials significant with the wrong sign),
        ``n_trials``; ``intervals()``, ``plot()``, ``to_section()``.

    Raises
    ------
    ArgumentError
        Unknown tests or design, ``tukey``/``mixed`` or a fitted simulator with
        ``design="pairs"``, a negative ``sign_ties``.
    DesignError
        Sizes below 3, bad alpha, ``n_trials``, ``delta`` (the null mean plus
        ``delta`` must stay inside (0, 1)), and the simulator's refusals.

    Notes
    -----
    Every system's margin is transformed (simIReff's ``effTransform``) to the mean ``m`` of
    the fitted expected values, and to ``m + delta``; the copula fitted to the data is kept,
    so the pair's correlation is the data's. A trial draws the pair (a, b) at random,
    simulates c topics with every expected value ``m`` (null) and again with b's ``m +
    delta`` (alternative). Tukey and the mixed model simulate every system of the trial
    (the others at ``m``); the paired tests only the pair. The bootstrap and permutation
    tests of a batch share one matrix of resamples (:func:`irmodels.pairwise`'s kernels). The
    mixed model is fitted in closed form (the balanced REML solution: the residual variance
    is MD1's mean square unless the topic variance is on its boundary 0), which equals
    :func:`irmodels.mixed`; its t of the pair is not adjusted for the other pairs, Tukey's
    is.

    Examples
    --------
    >>> import irmodels as irm
    >>> study = irm.studies.test_errors(irm.datasets.load("adhoc3", "AP"),
    ...                                 tests=["t", "sign"], sizes=[10, 25], alpha=0.05,
    ...                                 n_trials=100, seed=1)
    >>> study.to_frame()
       test  topics  alpha  type_I  type_II  type_III  n_trials
    0     t      10   0.05    0.04     0.88      0.02       100
    1     t      25   0.05    0.09     0.87      0.00       100
    2  sign      10   0.05    0.05     0.94      0.02       100
    3  sign      25   0.05    0.10     0.91      0.00       100

    The paper's design, and its sign test (``|d| <= 0.01`` a tie), on the first 10 systems
    (it fits a copula per pair: 45 pairs here, 780 on all 40):

    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> ten = irm.filter_systems(data, systems=data["system"].cat.categories[:10])
    >>> paper = irm.studies.test_errors(ten, tests=["t", "sign"], sizes=25, alpha=0.05,
    ...                                 n_trials=100, seed=1, design="pairs", sign_ties=0.01)
    >>> paper.to_frame()
       test  topics  alpha  type_I  type_II  type_III  n_trials
    0     t      25   0.05    0.04     0.83       0.0       100
    1  sign      25   0.05    0.01     0.88       0.0       100
    """
    seed = check_seed(seed)
    test_list = _as_tuple(tests, "tests")
    bad = [t for t in test_list if t not in TESTS]
    if bad or not test_list:
        raise ArgumentError(f"unknown test {bad[0] if bad else tests!r}"
                            f"{did_you_mean(bad[0] if bad else tests, TESTS)}; choose among "
                            f"{', '.join(map(repr, TESTS))}.")
    test_list = tuple(dict.fromkeys(test_list))
    if design not in DESIGNS:
        raise ArgumentError(f"unknown design {design!r}{did_you_mean(design, DESIGNS)}; choose "
                            f"one of {', '.join(map(repr, DESIGNS))}.")
    sign_ties = check_number(sign_ties, "sign_ties")
    if sign_ties < 0:
        raise ArgumentError(f"sign_ties is the largest |difference| counted as a tie and "
                            f"cannot be negative; got {sign_ties!r} (the paper uses 0.01).")
    if design == "pairs":
        full = [t for t in test_list if t in _FULL]
        if full:
            raise ArgumentError(
                f"design='pairs' simulates only the pair, and {full[0]!r} needs every system; "
                "use design='systems' for 'tukey' and 'mixed'.")
        if isinstance(data, TopicSimulator):
            raise ArgumentError(
                "design='pairs' fits each pair's copula to the scores: pass the data frame, "
                "not a fitted TopicSimulator.")
    try:
        size_list = tuple(sorted({int(s) for s in _as_tuple(sizes, "sizes")}))
    except (TypeError, ValueError):
        raise DesignError(f"sizes must be whole numbers of topics; got {sizes!r}.") from None
    if not size_list or size_list[0] < 3:
        raise DesignError(f"sizes must be at least 3 topics (a test needs a variance); got "
                          f"{sizes!r}.")
    alphas = tuple(sorted({float(check_probability(a, "alpha"))
                           for a in _as_tuple(alpha, "alpha")}))
    for name, v in (("n_trials", n_trials), ("n_resamples", n_resamples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ArgumentError(f"{name} must be a positive integer; got {v!r}.")
    delta = check_number(delta, "delta")
    if delta == 0:
        raise DesignError("delta must be a non-zero true difference (the null is simulated "
                          "anyway); got 0.")
    if delta < 0:
        raise DesignError(f"delta is b's advantage over a and must be positive; got {delta!r} "
                          "(the pair is drawn at random, so the sign adds nothing).")

    if isinstance(data, TopicSimulator):
        sim = data
    else:
        sim = fit_simulator(data, margins=margins, k=k, topic=topic, system=system,
                            score=score)
    m = float(sim.expected_means.mean())
    if not 0 < m + delta < 1:
        raise DesignError(f"the null mean {m:.4f} plus delta={delta:g} leaves (0, 1); use a "
                          "smaller delta.")
    # the systems left out are named in one warning below
    null = sim.with_means(m, unreachable="drop", warn=False)
    alt = sim.with_means(m + delta, unreachable="drop", warn=False)
    if design == "pairs":  # every run in the null; the alternatives skip the margins that fail
        common = list(sim.systems)
    else:
        common = [s for s in sim.systems if s in null.systems and s in alt.systems]
    if len(common) < 2:
        raise DesignError(
            f"fewer than 2 systems can be moved to the null mean {m:.4f} and to {m + delta:.4f}; "
            "drop the systems far from the others (irm.filter_systems) or use a smaller delta.")
    if len(common) < len(sim.systems):
        left = [s for s in sim.systems if s not in common]
        where = f"to the null mean {m:.4f} or to {m + delta:.4f}"
        warnings.warn(
            f"{len(left)} of {len(sim.systems)} systems cannot be moved {where} and are left "
            f"out of the trials: {', '.join(left[:8])}{', ...' if len(left) > 8 else ''} (their margins reach too "
            "little of [0, 1], e.g. scores all near 0). Drop them first (irm.filter_systems) "
            "to silence this.", DataQualityWarning, stacklevel=2)
    root = seed_sequence(seed)
    pair_model, pair_table = None, None
    if design == "pairs":
        frame_, _ = user_frame(data, topic=topic, system=system, score=score,
                               what="irm.studies.test_errors")
        wide = to_wide(frame_)
        wide.columns = [str(x) for x in wide.columns]
        # spawn key 0: the sizes' keys are >= 3
        pair_model, pair_table = _fit_pair_model(
            wide[common].to_numpy(dtype=np.float64),
            tuple(sim._margins[sim.systems.index(s)] for s in common), float(delta),
            seed_sequence(root, spawn_key=(0,)), common)
        m = float(np.mean([mg.mean for mg in pair_model.margins]))
    ctx = _Context(null=(null if design == "systems" else sim).select(common),
                   alt=(alt if design == "systems" else sim).select(common), tests=test_list,
                   alphas=alphas, n_resamples=int(n_resamples), pairs=pair_model,
                   sign_ties=float(sign_ties))
    units = []
    for c in size_list:
        n_chunks = -(-int(n_trials) // _CHUNK)
        for k, child in enumerate(seed_sequence(root, spawn_key=(c,)).spawn(n_chunks)):
            units.append((c, min(_CHUNK, int(n_trials) - k * _CHUNK), child))
    parts = parallel_map(functools.partial(_run_unit, ctx), units, backend=backend,
                         n_workers=n_workers, progress=progress, desc="test errors")
    rows = []
    N = int(n_trials)
    for test in test_list:
        for c in size_list:
            mine = [p for u, p in zip(units, parts) if u[0] == c]
            for a in alphas:
                k1, k2, k3 = (sum(p[(test, a, kind)] for p in mine)
                              for kind in ("I", "II", "III"))
                rows.append((test, c, a, k1 / N, k2 / N, k3 / N, N, k1, k2, k3))
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return ErrorRateStudy(table=table, simulator=sim, null_mean=m, delta=float(delta),
                          tests=test_list, sizes=size_list, alphas=alphas, n_trials=N,
                          seed=seed, n_topics=sim.n_topics, n_systems=len(common),
                          design=design, pair_copulas=pair_table)


# a study, not a test: a test module that imports it must not have pytest call it
test_errors.__test__ = False  # type: ignore[attr-defined]
