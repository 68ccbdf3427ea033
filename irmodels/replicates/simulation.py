"""Stochastic simulation of test collections: new topics whose true system means are known.

From an observed topic x system matrix, :func:`fit_simulator` fits

- each system's **margin**, the distribution of its scores over topics: a normal truncated to
  [0, 1], a beta, or a Gaussian kernel density reflected at 0 and 1 for continuous measures
  (AP, nDCG); a beta-binomial or a kernel on the support for ``P@k`` (``k`` trials); chosen
  by AIC per system as simIReff does, or named by the user;
- a **Gaussian copula** for the dependence between systems: the scores' average ranks become
  normal scores, whose correlation matrix is the copula's.

Sampling draws correlated normal vectors, maps them to uniforms and through each margin's
quantile function. Every margin's expected value is known (by numerical integration), so the
true mean of every system, and every true difference, is known. :meth:`TopicSimulator.with_means`
transforms the margins to chosen expected values with simIReff's ``effTransform`` family: the
new CDF is ``B(F(x))`` with ``B`` the CDF of a Beta(a, 1) (raises the mean) or Beta(1, b)
(lowers it), a, b >= 1 found by root finding. ``null=True`` gives every system the same
expected value (the mean of the fitted ones): every difference is 0 by construction.

References: J. Urbano and T. Nagler, "Stochastic simulation of test collections: evaluation
scores", SIGIR 2018; J. Urbano, H. Lima and A. Hanjalic, "Statistical significance testing
in information retrieval: an empirical analysis of type I, type II and type III errors",
SIGIR 2019; docs/methods.md (stochastic simulation).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from irmodels._display import ResultDisplay
from irmodels._validate import check_int, did_you_mean, seed_sequence
from irmodels.data._columns import user_frame
from irmodels.data.frame import frame, to_wide
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.replicates._margins import (
    CONTINUOUS_FAMILIES,
    DISCRETE_FAMILIES,
    Margin,
    fit_margin,
    quantiles,
)

__all__ = [
    "CONTINUOUS_FAMILIES",
    "DISCRETE_FAMILIES",
    "MARGIN_COLUMNS",
    "TopicSimulator",
    "fit_simulator",
    "simulate_topics",
]

COPULAS = ("gaussian", "independent")
#: Columns of :attr:`TopicSimulator.margins`, in order.
MARGIN_COLUMNS = ("system", "family", "expected_mean", "observed_mean", "loglik", "df", "aic",
                  "transform")



# --------------------------------------------------------------------------------------------
# the simulator


def _normal_scores(X: np.ndarray) -> np.ndarray:
    T = X.shape[0]
    return special.ndtri(stats.rankdata(X, axis=0) / (T + 1))


def _factor(C: np.ndarray) -> np.ndarray:
    """L with L L' = C (C a correlation matrix, possibly singular: T < systems)."""
    w, V = np.linalg.eigh(C)
    L = V * np.sqrt(np.clip(w, 0.0, None))
    # rows rescaled so the diagonal of L L' is exactly 1 (the clipped eigenvalues' share)
    norm = np.sqrt((L**2).sum(axis=1))
    return L / np.where(norm > 0, norm, 1.0)[:, None]


@dataclass(frozen=True, repr=False, eq=False)
class TopicSimulator(ResultDisplay):
    """A fitted simulator of topics: one margin per system and a Gaussian copula.

    Made by :func:`fit_simulator`.

    Attributes
    ----------
    systems : tuple of str
        The systems, in the data's order (the columns of every sample).
    correlation : ndarray
        The copula's correlation matrix (systems x systems).
    copula : str
        ``"gaussian"`` or ``"independent"``.
    k : int or None
        ``k`` of a ``P@k`` measure (discrete margins, ``k`` trials), None for a continuous
        measure.
    n_topics : int
        Topics behind the fit.
    measure, collection : str or None
        Copied from the data (and into every sample).
    """

    systems: tuple[str, ...]
    _margins: tuple[Margin, ...] = field(repr=False)
    correlation: np.ndarray = field(repr=False)
    copula: str
    k: int | None
    n_topics: int
    observed: np.ndarray = field(repr=False)  # observed mean per system
    measure: str | None = None
    collection: str | None = None
    _factor: np.ndarray | None = field(default=None, repr=False)

    # ---- what it knows
    @property
    def expected_means(self) -> pd.Series:
        """The true mean score of every system (indexed by system): the expected value of its
        margin, by numerical integration."""
        return pd.Series([m.mean for m in self._margins], index=pd.Index(self.systems,
                         name="system"), name="expected_mean")

    @property
    def margins(self) -> pd.DataFrame:
        """One row per system: ``system``; ``family`` (``truncnorm``, ``beta``, ``kernel``,
        ``betabinom``); ``expected_mean`` (the margin's expected value); ``observed_mean``
        (the data's mean); ``loglik``, ``df`` (parameters, or a kernel's effective degrees of
        freedom), ``aic`` of the fit; ``transform`` (the Beta applied to the CDF to move the
        mean: ``Beta(a,1)``, ``Beta(1,b)``, or empty)."""
        rows = []
        for s, m, o in zip(self.systems, self._margins, self.observed):
            tr = ("" if m.direction == 0 else f"Beta({m.theta:.4g},1)" if m.direction > 0
                  else f"Beta(1,{m.theta:.4g})")
            rows.append((s, m.family, m.mean, float(o), m.loglik, m.df,
                         2 * m.df - 2 * m.loglik, tr))
        return pd.DataFrame(rows, columns=list(MARGIN_COLUMNS))

    @property
    def parameters(self) -> dict[str, dict[str, float]]:
        """The fitted parameters of every system's margin (system -> name -> value)."""
        return {s: dict(m.params) for s, m in zip(self.systems, self._margins)}

    def margin(self, system: str) -> Margin:
        """The margin of one system (``.cdf(x)``, ``.ppf(u)``, ``.mean``, ``.params``)."""
        try:
            return self._margins[self.systems.index(str(system))]
        except ValueError:
            raise DesignError(f"no system {system!r} in the simulator; systems: "
                              f"{', '.join(self.systems[:10])}"
                              f"{', ...' if len(self.systems) > 10 else ''}.") from None

    # ---- transformations
    def with_means(self, means: float | Sequence[float] | Mapping[str, float] | pd.Series,
                   *, unreachable: Literal["raise", "drop"] = "raise", warn: bool = True
                   ) -> TopicSimulator:
        """A simulator whose margins are transformed to the given expected values.

        ``means``: one value for every system, a sequence in :attr:`systems` order, or a
        mapping / Series system -> value (systems not named keep their margin). The copula is
        unchanged. The transform is simIReff's: the CDF becomes ``B(F)``, ``B`` a Beta(a, 1)
        or Beta(1, b) CDF with a, b >= 1 found by root finding (expected means within 1e-10).
        A margin cannot always reach a far target (a system whose scores are all near 0 has a
        CDF that is 1, in floating point, a little above 0): ``unreachable="raise"`` (the
        default) refuses, ``"drop"`` leaves such systems out of the simulator (as simIReff's
        ``effTransformAll`` returns NA for them) and names them in a
        :class:`~irmodels.errors.DataQualityWarning` (``warn=False``: silently, for a caller
        that reports them itself).
        """
        if unreachable not in ("raise", "drop"):
            raise DesignError(f"unreachable must be 'raise' or 'drop'; got {unreachable!r}.")
        current = self.expected_means
        if isinstance(means, (Mapping, pd.Series)):
            keys = means.index if isinstance(means, pd.Series) else means
            unknown = [k for k in keys if str(k) not in self.systems]
            if unknown:
                raise DesignError(f"no system {unknown[0]!r} in the simulator.")
            target = current.copy()
            for k, v in means.items():
                target[str(k)] = float(v)
        elif np.ndim(means) == 0:
            target = pd.Series(float(means), index=current.index)  # type: ignore[arg-type]
        else:
            vals = np.asarray(means, dtype=float)
            if vals.shape != (len(self.systems),):
                raise DesignError(f"means must have one value per system ({len(self.systems)}); "
                                  f"got {vals.shape[0] if vals.ndim == 1 else vals.shape}.")
            target = pd.Series(vals, index=current.index)
        bad = target[~np.isfinite(target) | (target <= 0) | (target >= 1)]
        if len(bad):
            raise DesignError(f"expected means must lie strictly inside (0, 1); got "
                              f"{bad.iloc[0]!r} for system {bad.index[0]!r}.")
        margins: list[Margin] = []
        dropped: list[str] = []
        for s, m, t, c in zip(self.systems, self._margins, target, current):
            try:
                margins.append(m.with_mean(float(t), s) if t != c or m.direction else m)
            except DesignError:
                if unreachable == "raise":
                    raise
                dropped.append(s)
                margins.append(m)
        out = dataclasses.replace(self, _margins=tuple(margins))
        if not dropped:
            return out
        keep = [i for i, s in enumerate(self.systems) if s not in dropped]
        if len(keep) < 2:
            raise DesignError(
                f"only {len(keep)} system(s) can be moved to the expected means asked for; "
                f"{len(dropped)} cannot ({', '.join(dropped[:5])}"
                f"{', ...' if len(dropped) > 5 else ''}). Choose means nearer the systems'.")
        if warn:
            warnings.warn(
                f"{len(dropped)} of {len(self.systems)} systems cannot be moved to the expected "
                f"mean(s) asked for and are left out of the simulator: {', '.join(dropped[:8])}"
                f"{', ...' if len(dropped) > 8 else ''} (their margins reach too little or too "
                "much of [0, 1]; e.g. scores all near 0). Drop them first "
                "(irm.filter_systems) to silence this.", DataQualityWarning, stacklevel=3)
        return out._subset(keep)

    def select(self, systems: Sequence[str]) -> TopicSimulator:
        """The simulator of some of the systems (their margins and copula), in that order."""
        missing = [str(x) for x in systems if str(x) not in self.systems]
        if missing:
            raise DesignError(f"no system {missing[0]!r} in the simulator.")
        return self._subset([self.systems.index(str(x)) for x in systems])

    def _subset(self, keep: Sequence[int]) -> TopicSimulator:
        idx = np.asarray(keep, dtype=np.int64)
        C = self.correlation[np.ix_(idx, idx)]
        return dataclasses.replace(
            self, systems=tuple(self.systems[i] for i in idx),
            _margins=tuple(self._margins[i] for i in idx), correlation=C,
            observed=self.observed[idx], _factor=_factor(C))

    def with_margins_of(self, other: TopicSimulator, columns: Sequence[int]) -> TopicSimulator:
        """This simulator with the margins of the systems at positions ``columns`` taken from
        ``other`` (a transform of the same fit: ``sim.with_means(...)``); the copula is kept."""
        if other.systems != self.systems:
            raise DesignError("with_margins_of needs a simulator of the same systems.")
        margins = list(self._margins)
        for c in columns:
            margins[int(c)] = other._margins[int(c)]
        return dataclasses.replace(self, _margins=tuple(margins))

    def null(self) -> TopicSimulator:
        """Every system transformed to the same expected value, the mean of the fitted ones
        (systems that cannot reach it are left out, with a warning: ``with_means(...,
        unreachable="drop")``)."""
        return self.with_means(float(np.mean([m.mean for m in self._margins])),
                               unreachable="drop")

    # ---- sampling
    def sample_matrix(self, n: int, rng: np.random.Generator,
                      columns: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """``n`` simulated topics as an ``n x systems`` array (or only ``columns``)."""
        cols = np.arange(len(self.systems)) if columns is None else np.asarray(columns)
        if self.copula == "independent":
            Z = rng.standard_normal((n, len(cols)))
        else:
            L = self._factor if self._factor is not None else _factor(self.correlation)
            L = L[cols]
            Z = rng.standard_normal((n, L.shape[1])) @ L.T
        return quantiles([self._margins[c] for c in cols], special.ndtr(Z))

    def sample(self, n: int, seed: Any = 0) -> pd.DataFrame:
        """``n`` new topics: a long frame (``collection, measure, topic, system, score``;
        topics ``s1``, ``s2``, ...), reproducible from ``seed``.

        Examples
        --------
        >>> import irmodels as irm
        >>> sim = irm.replicates.fit_simulator(irm.datasets.load("adhoc3", "AP"))
        >>> sim.sample(3, seed=1).shape
        (120, 5)
        """
        n = check_int(n, "n", low=1)
        rng = np.random.default_rng(seed_sequence(seed))
        X = self.sample_matrix(n, rng)
        topics = [f"s{i + 1}" for i in range(n)]
        df = pd.DataFrame({"topic": np.repeat(topics, len(self.systems)),
                           "system": np.tile(np.asarray(self.systems, dtype=object), n),
                           "score": X.ravel()})
        if self.measure is not None:
            df["measure"] = self.measure
        if self.collection is not None:
            df["collection"] = self.collection
        return frame(df, measure="measure" if self.measure is not None else None,
                     collection="collection" if self.collection is not None else None)

    # ---- display
    def _display_title(self) -> str:
        fams = self.margins["family"].value_counts()
        return (f"Topic simulator: {len(self.systems)} systems fitted on {self.n_topics} topics, "
                f"{self.copula} copula; margins "
                + ", ".join(f"{k} x{v}" for k, v in fams.items()))

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        shown = self.margins.set_index("system").drop(columns=["loglik"])
        return [("Margins (AIC = 2 df - 2 loglik)", shown)]

    def to_frame(self) -> pd.DataFrame:
        """:attr:`margins`."""
        return self.margins

    def __repr__(self) -> str:
        return (f"<TopicSimulator systems={len(self.systems)}, topics={self.n_topics}, "
                f"copula={self.copula!r}, k={self.k}>")


def _k_of(data: pd.DataFrame, k: int | None, X: np.ndarray) -> int | None:
    """``k`` of a ``P@k`` measure: as given, or from a ``measure`` column named ``P@k`` whose
    scores are on the lattice 0, 1/k, ..., 1 (off it, e.g. averaged over shards, the measure is
    treated as continuous)."""
    if k is None and "measure" in data.columns:
        names = pd.unique(data["measure"].astype(str))
        if len(names) == 1:
            m = re.fullmatch(r"\s*P(?:@|_)(\d+)\s*", str(names[0]), flags=re.IGNORECASE)
            if m:
                guess = int(m.group(1))
                on = np.abs(X * guess - np.rint(X * guess)).max() <= 1e-6 if guess else False
                return guess if on else None
    if k is None:
        return None
    trials = check_int(k, "k", low=1)
    off = np.abs(X * trials - np.rint(X * trials))
    if off.max() > 1e-6:
        i, j = np.unravel_index(int(np.argmax(off)), X.shape)
        raise DataFormatError(
            f"discrete margins with {trials} trials need scores in 0, 1/{trials}, ..., 1 (P@"
            f"{trials}); found {X[i, j]!r}. Pass k=None for a continuous measure, or the "
            "right k.")
    return trials


def fit_simulator(
    data: pd.DataFrame,
    *,
    margins: Literal["auto", "truncnorm", "beta", "kernel", "betabinom"] | Mapping[str, str]
    = "auto",
    copula: Literal["gaussian", "independent"] = "gaussian",
    null: bool = False,
    k: int | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> TopicSimulator:
    """Fit a stochastic simulator of topics to a topic x system score matrix.

    Parameters
    ----------
    data : DataFrame
        A long frame with one score in [0, 1] per (topic, system), every cell present.
    margins : {"auto", "truncnorm", "beta", "kernel", "betabinom"} or mapping
        Family of every system's margin, or a mapping system -> family (systems not named:
        ``auto``). ``auto`` picks per system the smallest AIC among ``truncnorm``, ``beta``,
        ``kernel`` (continuous measures) or ``betabinom``, ``kernel`` (``P@k``), as
        simIReff's ``effContFitAndSelect`` does.
    copula : {"gaussian", "independent"}
        ``gaussian``: the correlation of the normal scores ``Phi^-1(rank / (T + 1))`` of the
        systems (average ranks for ties); ``independent``: no dependence between systems.
    null : bool
        Transform every margin to one expected value, the mean of the fitted ones
        (:meth:`TopicSimulator.null`): every true difference is 0.
    k : int, optional
        ``k`` of a ``P@k`` measure (discrete margins on 0, 1/k, ..., 1, ``k`` trials); read
        from a ``measure`` column named ``P@k`` (with scores on that lattice) when not given.
    topic, system, score : str
        Column names, as in :func:`irmodels.frame`.

    Returns
    -------
    TopicSimulator
        ``.expected_means``, ``.margins`` (per system: ``system, family, expected_mean,
        observed_mean, loglik, df, aic, transform``), ``.correlation``, ``.sample(n, seed)``,
        ``.with_means(...)``, ``.null()``.

    Raises
    ------
    DataFormatError
        A score outside [0, 1], missing or infinite, or off the ``P@k`` lattice.
    DesignError
        Missing (topic, system) cells, fewer than 3 topics or 2 systems, a constant system,
        an unknown family, copula, or a family that does not fit the measure's type.

    Notes
    -----
    Truncated normal: MLE of (mu, sigma) of a normal truncated to [0, 1], sigma >= 0.05.
    Beta: MLE on scores capped to [1e-6, 1 - 1e-6] with both shapes >= 1 (simIReff's bounds:
    a capped zero would otherwise dominate the likelihood). Kernel: a Gaussian kernel with
    R's ``bw.nrd0`` bandwidth reflected at 0 and 1, its effective degrees of freedom
    ``mean(K_h(0) / f(x_i))`` in the AIC. Beta-binomial: MLE of the two shapes (>= 1) on the
    success counts ``k x``. Expected values come from ``int_0^1 (1 - G(x)) dx`` by
    composite Gauss-Legendre quadrature (4096 nodes). Urbano & Nagler (SIGIR 2018) fit
    vine copulas; a Gaussian copula keeps the pairwise rank correlations, which is what
    paired tests see.

    Examples
    --------
    >>> import irmodels as irm
    >>> sim = irm.replicates.fit_simulator(irm.datasets.load("adhoc3", "AP"), null=True)
    >>> sim
    <TopicSimulator systems=40, topics=50, copula='gaussian', k=None>
    >>> round(float(sim.expected_means.std()), 8)
    0.0
    """
    what = "irm.replicates.fit_simulator"
    if copula not in COPULAS:
        raise ArgumentError(f"unknown copula {copula!r}{did_you_mean(copula, COPULAS)}; choose "
                            f"one of {', '.join(map(repr, COPULAS))}.")
    families = ("auto",) + tuple(dict.fromkeys(CONTINUOUS_FAMILIES + DISCRETE_FAMILIES))
    named = ({str(key): v for key, v in margins.items()} if isinstance(margins, Mapping)
             else None)
    for fam in (named.values() if named is not None else [margins]):
        if not isinstance(fam, str) or fam not in families:
            raise ArgumentError(f"unknown margins {fam!r}{did_you_mean(fam, families)}; choose "
                                f"one of {', '.join(map(repr, families))} (or a mapping "
                                "system -> one of them).")
    frame_, _ = user_frame(data, topic=topic, system=system, score=score, what=what)
    if not isinstance(frame_, pd.DataFrame):
        raise DataFormatError(f"{what} needs a long frame of scores; got "
                              f"{type(frame_).__name__}.")
    wide = to_wide(frame_)
    X = wide.to_numpy(dtype=np.float64)
    T, R = X.shape
    if not np.isfinite(X).all():
        raise DesignError(f"{what} needs a score in every (topic, system) cell; "
                          f"{int((~np.isfinite(X)).sum())} are missing or not finite. Drop or "
                          "fill them first (irm.balance shows which).")
    if T < 3 or R < 2:
        raise DesignError(f"{what} needs at least 3 topics and 2 systems; the data has {T} "
                          f"topic(s) and {R} system(s).")
    if X.min() < 0 or X.max() > 1:
        bad = X.min() if X.min() < 0 else X.max()
        raise DataFormatError(
            f"the margins live on [0, 1]; a score of {bad!r} is outside. Simulate a measure "
            "bounded by [0, 1] (AP, nDCG, P@k, RR), or rescale the scores first.")
    k = _k_of(frame_, k, X)
    systems = tuple(str(s) for s in wide.columns)
    if named is not None:
        unknown = [key for key in named if key not in systems]
        if unknown:
            raise DesignError(f"margins names system {unknown[0]!r}, which the data does not "
                              f"have; systems: {', '.join(systems[:8])}"
                              f"{', ...' if len(systems) > 8 else ''}.")
    chosen = [named.get(sy, "auto") if named is not None else str(margins) for sy in systems]
    for fam in set(chosen):
        if k is None and fam == "betabinom":
            raise DesignError("margins='betabinom' needs a discrete measure (P@k): pass k "
                              "or data whose measure column is 'P@k'.")
        if k is not None and fam in ("truncnorm", "beta"):
            raise DesignError(f"margins={fam!r} is continuous but the measure is discrete "
                              f"(P@{k}); use 'betabinom', 'kernel' or 'auto'.")
    fitted = tuple(fit_margin(X[:, j], chosen[j], k, systems[j]) for j in range(R))
    if copula == "gaussian":
        C = np.corrcoef(_normal_scores(X), rowvar=False)
        C = np.atleast_2d(np.nan_to_num(C, nan=0.0))
        np.fill_diagonal(C, 1.0)
    else:
        C = np.eye(R)

    def one(col: str) -> str | None:
        if col in frame_.columns:
            vals = pd.unique(frame_[col].astype(str))
            return str(vals[0]) if len(vals) == 1 else None
        return None

    sim = TopicSimulator(systems=systems, _margins=fitted, correlation=C, copula=copula,
                         k=k, n_topics=T, observed=X.mean(axis=0),
                         measure=one("measure"), collection=one("collection"),
                         _factor=_factor(C))
    return sim.null() if null else sim


def simulate_topics(
    data: pd.DataFrame,
    n_topics: int,
    *,
    margins: Literal["auto", "truncnorm", "beta", "kernel", "betabinom"] = "auto",
    copula: Literal["gaussian", "independent"] = "gaussian",
    null: bool = False,
    seed: Any = 0,
    k: int | None = None,
) -> pd.DataFrame:
    """Simulate ``n_topics`` new topics for the systems of ``data``.

    The same as ``fit_simulator(data, margins=..., copula=..., null=..., k=...)
    .sample(n_topics, seed)``; fit once with :func:`fit_simulator` to sample many times and
    to read the true means (``.expected_means``).

    Returns
    -------
    DataFrame
        A long frame: ``collection``, ``measure`` (when the data has one of each), ``topic``
        (``s1``, ``s2``, ...), ``system``, ``score``.

    Examples
    --------
    >>> import irmodels as irm
    >>> sim = irm.replicates.simulate_topics(irm.datasets.load("adhoc3", "AP"), 100, seed=1)
    >>> sim["topic"].nunique(), sim["system"].nunique()
    (100, 40)
    """
    sim = fit_simulator(data, margins=margins, copula=copula, null=null, k=k)
    return sim.sample(n_topics, seed)
