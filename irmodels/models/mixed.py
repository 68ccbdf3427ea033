"""Linear mixed-effects models: ``irm.mixed(model, data)`` -> :class:`MixedResult`.

Crossed or nested random intercepts (``(1|topic)``, ``(1|topic:system)``, ``(1|topic/system)``,
``(1|topic:shard)``, ...), a fixed part with treatment contrasts (as R's default), and optionally
one residual variance per stratum (nlme's ``varIdent``). Fitted by REML or ML; likelihood-ratio
comparisons with :func:`compare_models`. References: docs/methods.md: "Linear mixed-effects models", "Variance components"; Robertson &
Kanoulas, "On Per-topic Variance in IR Evaluation", SIGIR 2012; Bates et al., "Fitting Linear
Mixed-Effects Models Using lme4", J. Stat. Softw. 67(1), 2015; Pinheiro & Bates, "Mixed-Effects
Models in S and S-PLUS", 2000 (varIdent, section 5.2); Kuznetsova, Brockhoff & Christensen,
"lmerTest Package", J. Stat. Softw. 82(13), 2017 (Satterthwaite df).
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import stdtr  # not scipy.stats: importing it costs a command ~0.5 s

from irmodels._display import ResultDisplay
from irmodels.errors import (
    ArgumentError,
    BoundaryFitWarning,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DataQualityWarning,
    DesignError,
    FormulaError,
    IRModelsWarning,
    ModelError,
)
from irmodels.formula.spec import ModelSpec, RandomTerm, Term
from irmodels.models import _design, _reml

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.inference.dunnett import DunnettResult
    from irmodels.inference.gtheory import GStudy
    from irmodels.inference.tukey import TukeyResult
    from irmodels.models._mixed_anova import MixedAnovaResult

__all__ = ["COMPARE_COLUMNS", "FIXED_COLUMNS", "MixedResult", "compare_models", "mixed"]

#: Columns of :attr:`MixedResult.fixed`, in this order.
FIXED_COLUMNS = ("estimate", "se", "df", "t", "p")
#: Columns of :func:`compare_models`, in this order.
COMPARE_COLUMNS = ("loglik", "aic", "bic", "statistic", "df", "p", "npar", "likelihood")

#: Coefficients shown by ``MixedResult.summary()`` (the rest are counted; all are in ``.fixed``).
SUMMARY_MAX_COEFFICIENTS = 10

#: Relative variance below which a component counts as estimated at the boundary (zero).
BOUNDARY_TOL = 1e-8


# --------------------------------------------------------------------------------------------
# design


def _resolve(model: str | ModelSpec, columns: list[str],
             data: pd.DataFrame | None = None) -> ModelSpec:
    """Formula, preset or ModelSpec to a ModelSpec; with ``data``, numeric covariates of the
    fixed part are marked (:func:`irmodels.models._design.classify`)."""
    spec = _design.resolve_model(model, columns)
    if data is not None and isinstance(data, pd.DataFrame):
        spec = _design.classify(spec, data)
        for f in spec.covariates:  # refuse NaN/constant covariates before anything else
            _check_covariate_scale(_design.covariate_values(data, f), f)
    return spec


#: Largest absolute covariate (lower, upper) irm.mixed accepts: its squares and products with
#: the response must stay finite and above underflow.
COVARIATE_RANGE = (1e-100, 1e100)


def _check_covariate_scale(x: np.ndarray, name: str) -> None:
    top = float(np.max(np.abs(x))) if x.size else 1.0
    if not COVARIATE_RANGE[0] < top < COVARIATE_RANGE[1]:
        raise DataFormatError(
            f"covariate {name!r} reaches magnitude {top:.3g}: its squares "
            f"{'overflow' if top >= 1 else 'underflow'} in double precision, so its slope "
            "cannot be estimated. Rescale it (multiply by a power of 10); the fit is "
            "equivariant (the slope and its SE scale inversely, t, F and p do not change)."
        )


def _encode(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of the observed levels (categorical order, else natural order)."""
    codes, levels = _design.encode(col)
    return codes, [str(v) for v in levels]


def _group(codes: dict[str, np.ndarray], levels: dict[str, list[str]],
           factors: tuple[str, ...], order: Literal["sorted", "data"] = "sorted"
           ) -> tuple[np.ndarray, list[str]]:
    """Codes and labels of the observed combinations of ``factors`` (labels joined by ':')."""
    key = np.zeros(len(next(iter(codes.values()))), dtype=np.int64)
    for f in factors:
        key = key * len(levels[f]) + codes[f]
    inv, uniq = pd.factorize(key)  # codes in order of first appearance
    inv = np.asarray(inv, dtype=np.int64)
    first = np.full(len(uniq), len(key), dtype=np.int64)
    np.minimum.at(first, inv, np.arange(len(key)))
    if order == "data":
        gcodes = inv
        reps = first
    else:
        rank = np.empty(len(uniq), dtype=np.int64)
        srt = np.argsort(np.asarray(uniq, dtype=np.int64), kind="stable")
        rank[srt] = np.arange(len(uniq))
        gcodes = rank[inv]
        reps = first[srt]
    labels = [":".join(levels[f][codes[f][i]] for f in factors) for i in reps]
    return gcodes, labels


@dataclass
class MixedDesign:
    """Stage 1 of a fit (lme4's ``lFormula``): the model's data in the form the deviance needs.

    ``codes``/``levels`` hold the integer codes and labels of every factor, ``X_idx``/``X_val``
    the row-sparse fixed-effects design (treatment contrasts; one column index and value per
    term and row), ``random_codes``/``random_labels`` the levels of each random term (formula
    order), ``strata``/``strata_labels`` the residual strata of a heteroscedastic fit. Build it
    with :func:`mixed_design`.
    """

    spec: ModelSpec
    y: np.ndarray
    codes: dict[str, np.ndarray]
    levels: dict[str, list[str]]
    fixed_names: list[str]
    fixed_cols: list[tuple[int, np.ndarray]]  # per fixed column: (kind, indicator values)
    X_idx: np.ndarray  # (n, mx) column indices into fixed columns
    X_val: np.ndarray
    random_codes: list[np.ndarray]
    random_labels: list[list[str]]
    strata: np.ndarray | None
    strata_labels: list[str] | None
    fixed_terms_of_col: list[str]
    #: the rows used (after dropping degenerate strata), for refits
    data: pd.DataFrame | None = None
    #: the residual strata factors (``("topic", "system")``), None when homoscedastic
    residual: tuple[str, ...] | None = None

    @property
    def residual_name(self) -> str | None:
        return ":".join(self.residual) if self.residual else None


_Design = MixedDesign  # the name the numerical helpers below use


def _fixed_design(spec: ModelSpec, codes: dict[str, np.ndarray], levels: dict[str, list[str]],
                  n: int, data: pd.DataFrame | None = None
                  ) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Treatment-contrast columns (R's default coding) as a row-sparse (n x mx) layout.

    Every term puts one entry per row: its column index and value. A numeric covariate
    (``spec.numeric``, read from ``data``) multiplies the value of its term: ``qlen`` is one
    column of values, ``system:qlen`` the treatment indicators of ``system`` times ``qlen``
    (named as R does: ``systems2:qlen``).
    """
    values = {f: _design.covariate_values(data, f) for f in spec.covariates} if (
        spec.covariates and data is not None) else {}
    names: list[str] = []
    term_of: list[str] = []
    idx_parts: list[np.ndarray] = []
    val_parts: list[np.ndarray] = []
    col = 0
    if spec.intercept:
        names.append("(Intercept)")
        term_of.append("(Intercept)")
        idx_parts.append(np.zeros(n, dtype=np.int64))
        val_parts.append(np.ones(n))
        col = 1
    present = {t.key for t in spec.fixed}
    full_done = spec.intercept
    for term in spec.fixed:
        for sub in range(1, term.order):
            for comb in combinations(term.factors, sub):
                if frozenset(comb) not in present:
                    raise FormulaError(
                        f"the fixed term {term.name} needs its marginal term "
                        f"{':'.join(comb)} in the model (irm.mixed codes interactions as products "
                        f"of treatment contrasts); add {':'.join(comb)} to the formula",
                        spec.formula, None,
                    )
        scale = np.ones(n)
        for f in term.numeric_factors:
            scale = scale * values[f]
        cats = term.categorical_factors
        if not cats:  # covariates only: one column
            names.append(term.name)
            term_of.append(term.name)
            idx_parts.append(np.full(n, col, dtype=np.int64))
            val_parts.append(scale)
            col += 1
            continue
        if not full_done and term.order == 1:
            # no intercept: the first factor gets all its levels (R's coding)
            full_done = True
            f = term.factors[0]
            L = len(levels[f])
            names += [f"{f}{lv}" for lv in levels[f]]
            term_of += [term.name] * L
            idx_parts.append(col + codes[f])
            val_parts.append(np.ones(n))
            col += L
            continue
        sizes = [len(levels[f]) - 1 for f in cats]
        ncol = int(np.prod(sizes))
        if ncol == 0:  # as R's lmer ("contrasts can be applied only to factors with 2 or more
            # levels") and irm.anova: a fixed factor of one level cannot be estimated
            f = next(f for f, s in zip(cats, sizes) if s == 0)
            raise DesignError(
                f"factor {f!r} of the fixed term {term.name} has 1 level "
                f"({', '.join(map(str, levels[f]))}); a fixed factor needs at least two levels "
                "to be estimated. Drop it from the model."
            )
        ok = np.ones(n, dtype=bool)
        offset = np.zeros(n, dtype=np.int64)
        for f, s in zip(cats, sizes):
            c = codes[f]
            ok &= c > 0
            offset = offset * s + np.maximum(c - 1, 0)
        grids = np.array(np.meshgrid(*[np.arange(1, s + 1) for s in sizes], indexing="ij"))
        grids = grids.reshape(len(sizes), -1).T
        for combo in grids:
            lv = dict(zip(cats, combo))
            names.append(":".join(f"{f}{levels[f][lv[f]]}" if f in lv else f
                                  for f in term.factors))
            term_of.append(term.name)
        idx_parts.append(np.where(ok, col + offset, 0))
        val_parts.append(np.where(ok, scale, 0.0))
        col += ncol
    if idx_parts:
        X_idx = np.column_stack(idx_parts)
        X_val = np.column_stack(val_parts)
    else:
        X_idx = np.zeros((n, 0), dtype=np.int64)
        X_val = np.zeros((n, 0))
    return names, term_of, X_idx, X_val


def _parse_residual(residual: str | None, data: pd.DataFrame) -> tuple[str, ...] | None:
    if residual is None:
        return None
    if not isinstance(residual, str):
        raise FormulaError(f"residual must be None or a factor name like 'topic:system'; "
                           f"got {type(residual).__name__}")
    parts = tuple(p.strip() for p in residual.replace("*", ":").split(":"))
    missing = [p for p in parts if p not in data.columns]
    if not parts or missing or any(not p for p in parts):
        raise FormulaError(
            f"residual={residual!r} must name data columns joined by ':' "
            f"(unknown: {', '.join(map(repr, missing)) or 'empty name'}); "
            f"columns present: {', '.join(map(str, data.columns))}",
            residual, (0, len(residual)),
        )
    return parts


def _degenerate_strata(y: np.ndarray, strata: np.ndarray, labels: list[str]) -> list[str]:
    n_s = np.bincount(strata, minlength=len(labels))
    s1 = np.bincount(strata, weights=y, minlength=len(labels))
    mean = s1 / np.maximum(n_s, 1)
    ss = np.bincount(strata, weights=(y - mean[strata]) ** 2, minlength=len(labels))
    scale = max(float(np.var(y)), 1e-300)
    bad = (n_s < 2) | (ss <= 1e-14 * scale * np.maximum(n_s, 1))
    return [labels[i] for i in np.flatnonzero(bad)]


#: Largest absolute response (lower, upper) irm.mixed accepts (squares must stay finite).
RESPONSE_RANGE = (1e-100, 1e100)

#: Residual variance relative to the response variance below which a fit counts as exact (an SD
#: ratio of 1e-6: scores rounded to 4 decimals stay far above it).
EXACT_FIT_TOL = 1e-12


def _check_response_varies(y: np.ndarray, spec: ModelSpec) -> None:
    """A constant response has no variance to split: refuse it instead of reporting p = 0.
    Magnitudes whose squares overflow or underflow are refused too (rescale them)."""
    if not y.size:
        return
    top = float(np.max(np.abs(y)))
    if float(np.max(y) - np.min(y)) <= 1e-12 * top:
        raise DesignError(
            f"the response {spec.response_label} is constant ({y.size} values, all "
            f"{float(y[0]):.6g}): there is no variance to model and no test to make. Check the "
            "measure (every score equal, e.g. all zero on an empty qrels) or drop the data."
        )
    if not RESPONSE_RANGE[0] < top < RESPONSE_RANGE[1]:
        raise DataFormatError(
            f"the response {spec.response_label} reaches magnitude {top:.3g}: sums of squares "
            f"of such values {'overflow' if top >= 1 else 'underflow'} in double precision. "
            "Rescale it (multiply by a power of 10); the model is scale-equivariant."
        )


def _check_exact_fit(spec: ModelSpec, y: np.ndarray, sigma2: float) -> None:
    """A residual variance of (numerically) zero: the likelihood is unbounded, no p-value."""
    if not sigma2 > EXACT_FIT_TOL * float(np.var(y)):
        raise DesignError(
            f"the model {spec} reproduces the response exactly (residual variance "
            f"{sigma2:.3g} for a response variance of {float(np.var(y)):.3g}): the likelihood "
            "is unbounded and standard errors and p-values would be meaningless. The scores "
            "are a deterministic function of the model's factors; check the data (duplicated "
            "or constant scores within cells) or drop a term."
        )


def _build(spec: ModelSpec, data: pd.DataFrame, residual: tuple[str, ...] | None,
           drop_degenerate: bool) -> tuple[_Design, pd.DataFrame]:
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    if not spec.random:
        raise FormulaError(
            "irm.mixed needs at least one random term such as (1|topic); for a model with fixed "
            "effects only use irm.anova", spec.formula, (0, len(spec.formula)),
        )
    factors = list(spec.factors) + [f for f in (residual or ()) if f not in spec.factors]
    missing = [f for f in factors if f not in data.columns]
    if missing:
        raise DataFormatError(
            f"the model names column(s) {', '.join(map(repr, missing))} that the data lack; "
            f"columns present: {', '.join(map(str, data.columns))}"
        )
    y = spec.response_values(data)
    if not np.all(np.isfinite(y)):
        raise DataFormatError(
            f"the response has {int((~np.isfinite(y)).sum())} missing or infinite value(s); "
            "drop them first (irm.frame(..., nan='drop'))"
        )
    _check_response_varies(y, spec)
    if residual is not None:
        codes0 = {}
        levels0 = {}
        for f in residual:
            codes0[f], levels0[f] = _encode(data[f])
        strata, labels = _group(codes0, levels0, residual, order="data")
        bad = _degenerate_strata(y, strata, labels)
        if bad:
            shown = ", ".join(bad[:10]) + (f", ... ({len(bad)} in all)" if len(bad) > 10 else "")
            if not drop_degenerate:
                raise DesignError(
                    f"{len(bad)} residual strata of {':'.join(residual)} have a single observation "
                    f"or no variance ({shown}); their residual variance cannot be estimated (the "
                    "likelihood is unbounded). Pass drop_degenerate=True to drop them, or use a "
                    "homoscedastic model (residual=None)."
                )
            keep = ~np.isin(strata, [labels.index(b) for b in bad])
            warnings.warn(
                f"dropped {int((~keep).sum())} observations of {len(bad)} degenerate residual "
                f"strata of {':'.join(residual)} (single observation or no variance): {shown}",
                DataQualityWarning, stacklevel=3,
            )
            data = data.loc[keep].reset_index(drop=True)
            y = y[keep]
    n = len(y)
    codes: dict[str, np.ndarray] = {}
    levels: dict[str, list[str]] = {}
    for f in factors:
        codes[f], levels[f] = _encode(data[f])
    fixed_names, term_of, X_idx, X_val = _fixed_design(spec, codes, levels, n, data)
    random_codes, random_labels = [], []
    fixed_keys = [t.key for t in spec.fixed]
    for rt in spec.random:
        gc, gl = _group(codes, levels, rt.factors)
        if len(gl) < 2:
            raise DesignError(
                f"the random term {rt} has {len(gl)} level in the data ({', '.join(gl)}); a "
                "variance needs at least 2 levels (5 or more to be useful). Drop the term or make "
                f"{rt.name} a fixed effect."
            )
        if len(gl) >= n:
            raise DesignError(
                f"the random term {rt} has {len(gl)} levels for {n} observations: one "
                "observation per level, so its variance is confounded with the residual. "
                "Drop the term, or add replicates (shards or samples)."
            )
        for fk, ft in zip(fixed_keys, spec.fixed):
            if rt.key <= fk:
                raise DesignError(
                    f"the random term {rt} is confounded with the fixed term {ft.name}: the fixed "
                    f"effects already absorb every level of {rt.name}, so its variance cannot be "
                    f"estimated. Remove {ft.name} from the fixed part or drop {rt}."
                )
        random_codes.append(gc)
        random_labels.append(gl)
    strata_idx: np.ndarray | None = None
    labels_s: list[str] | None = None
    if residual is not None:
        codes0 = {f: codes[f] for f in residual}
        strata_idx, labels_s = _group(codes0, {f: levels[f] for f in residual}, residual,
                                      order="data")
    design = _Design(spec, y, codes, levels, fixed_names, [], X_idx, X_val, random_codes,
                     random_labels, strata_idx, labels_s, term_of)
    return design, data


def _problem(d: _Design) -> tuple[_reml.Problem, list[int]]:
    """Columns [Z (largest term first) | X]; returns the problem and the term order used."""
    sizes = [len(l) for l in d.random_labels]
    order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
    offs = np.cumsum([0] + [sizes[k] for k in order])
    q = int(offs[-1])
    zcols = [d.random_codes[k] + offs[i] for i, k in enumerate(order)]
    cols = np.column_stack(zcols + ([d.X_idx + q] if d.X_idx.shape[1] else []))
    vals = np.column_stack([np.ones(len(d.y))] * len(zcols) + ([d.X_val] if d.X_val.shape[1] else []))
    strata = d.strata
    label_code = None
    if strata is not None and d.strata_labels and len(d.strata_labels) > 1:
        # Internally the reference stratum (delta = 1, the profiled sigma) is the one with the
        # median within-stratum SD, not nlme's first stratum: the deviance is the same, but the
        # relative parameters stay of order one, and an extreme first stratum no longer drives
        # theta and the weights to magnitudes where the factorisation loses positive
        # definiteness. Results are reported relative to the first stratum (nlme's reference).
        sd = _stratum_sd(d.y, strata, len(d.strata_labels))
        ref = int(np.argsort(sd, kind="stable")[(len(sd) - 1) // 2])
        label_code = np.arange(len(sd))
        label_code[[0, ref]] = label_code[[ref, 0]]
        strata = label_code[strata]
    pb = _reml.Problem(
        y=d.y, cols=cols.astype(np.int64), vals=vals.astype(float),
        term_sizes=[sizes[k] for k in order], p=len(d.fixed_names),
        strata=strata, n_strata=len(d.strata_labels) if d.strata_labels else 1,
        label_code=label_code,
    )
    return pb, order


def _stratum_sd(y: np.ndarray, s: np.ndarray, n_strata: int) -> np.ndarray:
    """SD of the response around its stratum mean, per stratum (floored at a tiny positive)."""
    n_s = np.bincount(s, minlength=n_strata).astype(float)
    mean = np.bincount(s, weights=y, minlength=n_strata) / np.maximum(n_s, 1)
    ss = np.bincount(s, weights=(y - mean[s]) ** 2, minlength=n_strata)
    sd = np.sqrt(ss / np.maximum(n_s - 1, 1))
    return np.maximum(sd, 1e-8 * max(float(sd.max()), 1e-300))


def _check_rank(pb: _reml.Problem, names: list[str], design: _Design | None = None) -> None:
    if not pb.p:
        return
    xtx = np.zeros((pb.p, pb.p))
    xi = pb.cols[:, pb.K:] - pb.q
    xv = pb.vals[:, pb.K:]
    for a in range(xi.shape[1]):
        for b in range(xi.shape[1]):
            np.add.at(xtx, (xi[:, a], xi[:, b]), xv[:, a] * xv[:, b])
    # on the columns scaled to unit length: a covariate's units (1e20) are not a deficiency
    norm = np.sqrt(np.diag(xtx))
    unit = norm > 0
    scaled = xtx / np.outer(np.where(unit, norm, 1.0), np.where(unit, norm, 1.0))
    ev, vec = np.linalg.eigh(scaled)
    if ev[0] <= 1e-10 and design is not None and design.spec.covariates and unit.all():
        # which columns make up the (near) null combination; are covariates among them?
        v = np.abs(vec[:, 0])
        involved = [names[j] for j in np.flatnonzero(v > 1e-3 * v.max())]
        cov_terms = {t.name for t in design.spec.fixed if t.numeric_factors}
        cov_cols = [n for n, t in zip(names, design.fixed_terms_of_col) if t in cov_terms]
        if any(n in cov_cols for n in involved):
            covs = [c for c in design.spec.covariates
                    if any(c in n.split(":") for n in involved if n in cov_cols)]
            raise DesignError(
                f"the covariate{'s' if len(covs) > 1 else ''} {', '.join(map(repr, covs))} "
                f"{'are' if len(covs) > 1 else 'is'} collinear with other columns of the fixed "
                f"part: the columns {', '.join(involved)} are linearly dependent in these data "
                "(one is a linear combination of the others), so their effects cannot be "
                "separated. Drop one of them (or combine them into one covariate)."
            )
    if ev[0] <= 1e-10:
        raise DesignError(
            f"the fixed-effect design ({pb.p} columns: {', '.join(names[:6])}"
            f"{', ...' if pb.p > 6 else ''}) is rank deficient: some combination of levels is "
            "never observed. Remove the interaction term or the empty level."
        )


def _check_residual_df(pb: _reml.Problem, design: _Design) -> None:
    """Refuse a model whose fixed and random columns together span every observation: no
    residual df is left, the likelihood grows without bound as the residual variance goes to 0
    (a hypothesis draw: 6 observations, 4 fixed effects, 3 topics; the optimiser stopped at
    theta 1433 and called it converged). Only possible when p + q >= n, checked densely when
    that matrix is small."""
    n, width = pb.n, pb.q + pb.p
    if width < n or n * width > 4_000_000:
        return
    M = np.zeros((n, width))
    rows = np.arange(n)
    for j in range(pb.cols.shape[1]):
        np.add.at(M, (rows, pb.cols[:, j]), pb.vals[:, j])
    if np.linalg.matrix_rank(M) >= n:
        terms = [str(t.name) for t in design.spec.fixed] + [str(rt) for rt in design.spec.random]
        raise DesignError(
            f"the model {design.spec} leaves no residual degrees of freedom: its fixed and "
            f"random terms ({', '.join(terms)}) together can reproduce all {n} observations, "
            "so the residual variance cannot be separated from them (the likelihood grows "
            "without bound as it goes to 0). Drop a term, or add replicates (shards, samples)."
        )


# --------------------------------------------------------------------------------------------
# closed form for balanced crossed designs


def _closed_form(d: _Design, pb: _reml.Problem, order: list[int], reml: bool
                 ) -> tuple[np.ndarray | None, np.ndarray]:
    """ANOVA (expected-mean-squares) estimates of theta on a balanced crossed design.

    Returns (theta or None, starting theta). theta is the exact REML/ML optimum when every
    component is positive (the likelihood then depends on the data only through the stratum
    sums of squares and is maximised by equating them to their expectations).
    """
    spec = d.spec
    K = pb.K
    start = np.full(K, 0.5)
    if d.strata is not None or spec.covariates:
        # A numeric covariate spans one direction, not the stratum subspaces the expected mean
        # squares project on: treated as a factor below it would absorb L - 1 df (sleepstudy's
        # Days: var(Subject) 1341.29 instead of lme4's 1378.18). It could stay only if it were
        # constant within every cell of the random terms' factors, but then it is a function of
        # those cells and the grid of cells below is never balanced; so every covariate takes
        # the iterative path.
        return None, start
    terms: list[Term | RandomTerm] = [*spec.fixed, *spec.random]
    factors = list(dict.fromkeys(f for t in terms for f in t.factors))
    L = [len(d.levels[f]) for f in factors]
    ncell = int(np.prod(L))
    if ncell > 5_000_000 or len(factors) > 6:
        return None, start
    cell = np.zeros(pb.n, dtype=np.int64)
    for f, lf in zip(factors, L):
        cell = cell * lf + d.codes[f]
    counts = np.bincount(cell, minlength=ncell)
    m = counts[0]
    if m == 0 or np.any(counts != m):
        return None, start
    n = pb.n
    y = d.y
    sums = np.bincount(cell, weights=y, minlength=ncell)
    means = (sums / m).reshape(L)
    ss_within = float(np.sum((y - means.ravel()[cell]) ** 2))
    df_within = n - ncell
    ax = tuple(range(len(factors)))
    fixed_sets = [frozenset(t.factors) for t in spec.fixed]
    rand_sets = [frozenset(spec.random[k].factors) for k in order]
    strata: dict[tuple, list[float]] = {}
    has_mean_fixed = spec.intercept or bool(spec.fixed)
    for size in range(len(factors) + 1):
        for S in combinations(range(len(factors)), size):
            Sset = frozenset(factors[i] for i in S)
            comp = tuple(a for a in ax if a not in S)
            eff = means.mean(axis=comp, keepdims=True) if comp else means
            for a in S:
                eff = eff - eff.mean(axis=a, keepdims=True)
            nlev = int(np.prod([L[i] for i in S])) if S else 1
            ss = float(np.sum(eff**2)) * n / nlev
            df = int(np.prod([L[i] - 1 for i in S])) if S else 1
            fixed = (not S and has_mean_fixed) or any(Sset <= fs for fs in fixed_sets)
            coef = tuple([1.0] + [n / int(np.prod([len(d.levels[f]) for f in rs]))
                                  if Sset <= rs else 0.0 for rs in rand_sets])
            if fixed:
                if reml:
                    continue
                ss = 0.0
            g = strata.setdefault(coef, [0.0, 0.0])
            g[0] += ss
            g[1] += df
    if df_within > 0:
        g = strata.setdefault(tuple([1.0] + [0.0] * K), [0.0, 0.0])
        g[0] += ss_within
        g[1] += df_within
    keys = list(strata)
    A = np.array(keys)
    lam = np.array([strata[k][0] / strata[k][1] for k in keys])
    if A.shape[0] != K + 1 or np.linalg.matrix_rank(A) < K + 1:
        return None, start
    comps = np.linalg.solve(A, lam)
    s2 = comps[0]
    if s2 <= 0:
        return None, start
    start = np.sqrt(np.clip(comps[1:], 1e-4 * s2, None) / s2)
    if np.any(lam <= 0) or np.any(comps[1:] <= 1e-10 * s2):
        return None, start
    return np.sqrt(comps[1:] / s2), start


# --------------------------------------------------------------------------------------------
# result


@dataclass(frozen=True, repr=False, eq=False)
class MixedResult(ResultDisplay):
    """A fitted linear mixed model (see :func:`mixed`).

    Attributes
    ----------
    spec : ModelSpec
        The model that was fitted.
    method : {"REML", "ML"}
        Estimation criterion.
    residual : str or None
        The residual strata (``"topic:system"``) of a heteroscedastic fit, else None.
    n_obs : int
        Observations used.
    components : DataFrame
        The variance components (what :meth:`variance_components` returns, as
        :attr:`GStudy.components <irmodels.inference.gtheory.GStudy.components>`). Index:
        random terms in formula order then ``Residual``; columns ``variance`` (the
        estimate), ``sd`` (its square root), ``share`` (variance / sum of variances). In a
        heteroscedastic fit the ``Residual`` row holds the observation-weighted mean of the
        stratum variances.
    residual_variance : float or Series
        Residual variance; per stratum (indexed by stratum label) when heteroscedastic.
    variance_ratios : Series or None
        Heteroscedastic fits: residual variance of each stratum divided by that of the reference
        (first stratum in data order), i.e. ``sd_ratios ** 2``.
    sd_ratios : Series or None
        The same as ratios of standard deviations: nlme's ``varIdent`` coefficients.
    loglik, aic, bic, deviance : float
        Log-likelihood (restricted under REML), information criteria, and ``-2 * loglik``.
    converged : bool
        Whether the optimiser met its criterion (a closed-form fit is always converged).
    n_iter : int
        Optimiser iterations (0 for a closed-form fit).
    closed_form : bool
        True when the balanced-design ANOVA estimates were the answer.
    boundary : bool
        Whether some variance component is estimated at zero; ``boundary_components`` names them.
    random_effects : dict of str -> Series
        BLUPs (conditional modes) of each random term, indexed by level.
    """

    spec: ModelSpec
    method: str
    residual: str | None
    n_obs: int
    components: pd.DataFrame
    residual_variance: Any
    variance_ratios: pd.Series | None
    sd_ratios: pd.Series | None
    loglik: float
    aic: float
    bic: float
    deviance: float
    converged: bool
    n_iter: int
    closed_form: bool
    boundary: bool
    boundary_components: tuple[str, ...]
    random_effects: dict[str, pd.Series]
    n_params: int
    fixed_estimates: pd.Series
    _state: MixedState = field(default=None)  # type: ignore[assignment]

    def variance_components(self) -> pd.DataFrame:
        """The variance components (a copy of :attr:`components`), as
        :meth:`AnovaResult.variance_components <irmodels.models.anova.AnovaResult.variance_components>`
        gives them: index component (random terms, then ``Residual``), columns ``variance``,
        ``sd``, ``share``."""
        return self.components.copy()

    def to_frame(self) -> pd.DataFrame:
        """The variance components, tidy: columns ``component, variance, sd, share``."""
        return self.components.reset_index()

    def information_criterion(self, convention: Literal["lme4", "nlme"] = "lme4") -> float:
        """BIC under a named convention: ``"lme4"`` uses ``log(n_obs)``; ``"nlme"`` uses
        ``log(n_obs - p)`` under REML (``p`` fixed effects) and ``log(n_obs)`` under ML.
        :attr:`bic` is the lme4 value for homoscedastic fits and the nlme value for
        heteroscedastic ones (the R function that fits each model)."""
        if convention not in ("lme4", "nlme"):
            raise ModelError(f"convention must be 'lme4' or 'nlme'; got {convention!r}")
        p = len(self.fixed_estimates)
        n = self.n_obs - p if (convention == "nlme" and self.method == "REML") else self.n_obs
        return self.deviance + self.n_params * math.log(n)

    # -- fixed effects -----------------------------------------------------------------------
    @cached_property
    def _satterthwaite(self) -> tuple[np.ndarray, np.ndarray]:
        """(Jacobian of Var(beta) / sigma^2 in the variance parameters, their asymptotic
        covariance), sigma measured relative to its estimate: use with :attr:`_vcov_unit`.
        Satterthwaite's df is invariant to both normalisations, which keep every quantity of
        order one whatever the response's scale (at 1e90, Var(beta)**2 overflows)."""
        st = self._state
        return _satterthwaite_parts(st["problem"], st["theta"], st["eta"], st["sigma"],
                                    self.method == "REML")

    @property
    def _vcov_unit(self) -> np.ndarray:
        """Covariance of the fixed effects divided by the residual variance (sigma^2)."""
        st = self._state
        return st["vcov"] / st["sigma"] ** 2

    def _df_for(self, L: np.ndarray) -> np.ndarray:
        """Satterthwaite df of the contrasts in the rows of ``L``."""
        jac, acov = self._satterthwaite
        vb = self._vcov_unit
        var = np.einsum("ij,jk,ik->i", L, vb, L)
        g = np.einsum("ij,pjk,ik->ip", L, jac, L)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = g / var[:, None]  # df = 2 var^2 / g'Ag, without var^2 (1e-320 for a slope on 1e80)
            den = np.einsum("ip,pq,iq->i", g, acov, g)
            df = 2.0 / den
        return np.where(np.isfinite(df) & (df > 0), df, np.nan)

    @cached_property
    def fixed(self) -> pd.DataFrame:
        """Fixed effects: index coefficient names as R prints them (``(Intercept)``,
        ``systems02``); columns ``estimate``, ``se`` (from the REML/ML covariance of the
        estimates), ``df`` (Satterthwaite, as lmerTest computes it: the Jacobian of the
        covariance of the estimates and the Hessian of the deviance in the variance parameters
        ``(theta, sigma[, log delta])``, both numerical), ``t`` and ``p`` (two-sided, t on df).
        """
        vb = self._state["vcov"]
        est = self.fixed_estimates.to_numpy()
        se = np.sqrt(np.diag(vb))
        df = self._df_for(np.eye(len(est)))
        t = est / se
        p = 2 * stdtr(df, -np.abs(t))  # = stats.t.sf(|t|, df)
        return pd.DataFrame({"estimate": est, "se": se, "df": df, "t": t, "p": p},
                            index=self.fixed_estimates.index)

    @property
    def vcov(self) -> pd.DataFrame:
        """Covariance matrix of the fixed-effect estimates."""
        idx = self.fixed_estimates.index
        return pd.DataFrame(self._state["vcov"], index=idx, columns=idx)

    def _mm_matrix(self, factor: str) -> tuple[np.ndarray, list[str]]:
        st = self._state
        names: list[str] = list(self.fixed_estimates.index)
        fixed_factors = [f for t in self.spec.fixed for f in t.factors]
        if factor not in fixed_factors:
            raise DesignError(
                f"{factor!r} is not a fixed factor of {self.spec}; marginal means exist for the "
                f"fixed factors ({', '.join(dict.fromkeys(fixed_factors)) or 'none'}). Make "
                f"{factor} a fixed term of the formula."
            )
        levels = st["levels"]
        cov = self.spec.covariates
        if factor in cov:
            raise DesignError(
                f"{factor!r} is a numeric covariate of {self.spec}; marginal means exist for "
                "factors (write C(x) to read a column as a factor)."
            )
        # covariates at their means, as emmeans does
        at = {f: float(np.mean(np.asarray(st["data"][f], dtype=float))) for f in cov}
        others = [f for f in dict.fromkeys(fixed_factors) if f != factor and f not in cov]
        grids = [range(len(levels[f])) for f in others]
        rows = []
        for lv in range(len(levels[factor])):
            acc = np.zeros(len(names))
            count = 0
            for combo in np.ndindex(*[len(g) for g in grids]) if others else [()]:
                assign = {factor: lv, **dict(zip(others, combo))}
                acc += _coding_row(self.spec, levels, assign, names, at)
                count += 1
            rows.append(acc / count)
        return np.array(rows), levels[factor]

    def marginal_means(self, factor: str = "system") -> pd.Series:
        """Estimated marginal means of a fixed factor (averaged with equal weights over the
        levels of the other fixed factors, as emmeans does), indexed by level.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.marginal_means("system").round(4).tolist()
        [0.0823, 0.3504, 0.3539]
        """
        L, labels = self._mm_matrix(factor)
        return pd.Series(L @ self.fixed_estimates.to_numpy(), index=pd.Index(labels, name=factor),
                         name="mean")

    def marginal_means_cov(self, factor: str = "system") -> pd.DataFrame:
        """Covariance matrix of :meth:`marginal_means` (from the fixed-effect covariance)."""
        L, labels = self._mm_matrix(factor)
        return pd.DataFrame(L @ self._state["vcov"] @ L.T, index=labels, columns=labels)

    def tukey(self, factor: str = "system", alpha: float = 0.05,
              df: Literal["per-contrast", "min"] = "per-contrast") -> TukeyResult:
        """Tukey HSD over the marginal means of a fixed factor.

        The standard error of each difference comes from the model's covariance of the
        marginal means (one value when all are equal, as in balanced designs, else the matrix).
        Degrees of freedom: ``df="per-contrast"`` (default) gives each pair its own
        Satterthwaite df, as R's ``emmeans(lmer_fit, pairwise ~ factor, lmer.df =
        "satterthwaite")``; ``df="min"`` uses the smallest of them for every pair
        (conservative; in a balanced design all pairs have the same df). When no finite
        Satterthwaite df exists (a boundary fit), ``n_obs`` minus the number of fixed effects
        is used.
        """
        from irmodels.inference.tukey import tukey_hsd

        if df not in ("per-contrast", "min"):
            raise DesignError(f"df must be 'per-contrast' or 'min'; got {df!r}.")
        L, labels = self._mm_matrix(factor)
        means = pd.Series(L @ self.fixed_estimates.to_numpy(), index=labels)
        cov = L @ self._state["vcov"] @ L.T
        k = len(labels)
        ia, ib = np.triu_indices(k, 1)
        D = L[ia] - L[ib]
        var = np.diag(cov)[ia] + np.diag(cov)[ib] - 2 * cov[ia, ib]
        dfs = np.asarray(self._df_for(D), dtype=float)
        fallback = float(self.n_obs - len(self.fixed_estimates))
        dfs = np.where(np.isfinite(dfs) & (dfs > 0), dfs, fallback)
        df_err: Any = dfs if df == "per-contrast" else float(dfs.min())
        se = np.sqrt(np.maximum(var, 0))
        if np.allclose(se, se[0], rtol=1e-9, atol=0):
            se_diff: Any = float(se[0])
        else:
            mat = np.zeros((k, k))
            mat[ia, ib] = se
            mat[ib, ia] = se
            se_diff = mat
        return tukey_hsd(means, df_error=df_err, se_diff=se_diff, alpha=alpha, factor=factor,
                         means_kind="marginal (model)")

    def dunnett(
        self,
        control: str,
        factor: str = "system",
        alpha: float = 0.05,
        alternative: Literal["two-sided", "greater", "less"] = "two-sided",
        df: Literal["per-contrast", "min"] = "per-contrast",
    ) -> DunnettResult:
        """Dunnett's comparisons of every level of ``factor`` with ``control``.

        Differences ``level - control`` of :meth:`marginal_means` with their covariance from
        the fit, tested with the multivariate t distribution. ``df="per-contrast"`` uses each
        comparison's Satterthwaite df (as emmeans with ``adjust = "mvt"``, which truncates them
        to integers; irmodels does not); ``"min"`` the smallest for all. See
        :func:`irmodels.inference.dunnett.dunnett`.
        """
        from irmodels.inference.dunnett import dunnett

        if df not in ("per-contrast", "min"):
            raise DesignError(f"df must be 'per-contrast' or 'min'; got {df!r}.")
        L, labels = self._mm_matrix(factor)
        if str(control) not in labels:
            shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
            raise DesignError(
                f"control level {control!r} is not a level of {factor} ({len(labels)} levels: "
                f"{shown}). Pass one of them as control (names are case-sensitive)."
            )
        means = pd.Series(L @ self.fixed_estimates.to_numpy(), index=labels)
        cov = L @ self._state["vcov"] @ L.T
        ci = labels.index(str(control))
        D = np.delete(L, ci, axis=0) - L[ci]
        dfs = np.asarray(self._df_for(D), dtype=float)
        fallback = float(self.n_obs - len(self.fixed_estimates))
        dfs = np.where(np.isfinite(dfs) & (dfs > 0), dfs, fallback)
        return dunnett(means, cov, control=control, df=dfs if df == "per-contrast" else dfs.min(),
                       alpha=alpha, alternative=alternative, factor=factor,
                       means_kind="marginal (model)")

    def anova(self, type: int = 3, ddf: Literal["satterthwaite", "kenward-roger"] = "satterthwaite"
              ) -> MixedAnovaResult:
        """F tests of the fixed terms, as lmerTest's ``anova(fit, type = 3, ddf = ...)``.

        Parameters
        ----------
        type : int
            3: type III hypotheses (each term's effects vanish, averaged with equal weights
            over the levels of the other fixed factors; SAS's and lmerTest's type III, whatever
            the coding).
        ddf : {"satterthwaite", "kenward-roger"}
            Denominator df: Satterthwaite's approximation as lmerTest's ``contestMD``, or
            Kenward-Roger as pbkrtest (REML, homoscedastic fits; adjusted covariance and scaled
            F).

        Returns
        -------
        MixedAnovaResult
            ``table`` indexed by ``term`` with columns ``F, num_df, den_df, p``; it indexes
            like the table (``res["p"]``) and has ``summary()``, ``to_frame()``, ``to_latex()``.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3", "sys4"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.anova().table.round(4)
                      F  num_df  den_df    p
        term
        system  97.4072       3   147.0  0.0
        """
        from irmodels.models._mixed_anova import anova

        return anova(self, type=type, ddf=ddf)

    def confint(self, method: Literal["profile", "bootstrap", "wald"] = "profile",
                level: float = 0.95, *, parm: Sequence[str] | None = None, n_boot: int = 500,
                seed: Any = 0, backend: Any = "serial", n_workers: int | None = None
                ) -> pd.DataFrame:
        """Confidence intervals of the standard deviations and the fixed effects (lme4's
        ``confint``).

        Parameters
        ----------
        method : {"profile", "bootstrap", "wald"}
            ``"profile"``: likelihood-profile intervals as lme4's ``confint(method =
            "profile")`` (the ML deviance, also for REML fits, as lme4; each bound a root of the
            signed square root of the deviance difference). ``"bootstrap"``: parametric
            bootstrap percentile intervals (lme4's ``method = "boot"``), refits by the fit's
            criterion. ``"wald"``: ``estimate +- z se`` for the fixed effects, NaN for the
            standard deviations (as lme4).
        level : float
            Confidence level.
        parm : sequence of str, optional
            Rows to compute (component or coefficient names); all by default.
        n_boot, seed, backend, n_workers
            Bootstrap replicates, seed (the same seed gives the same intervals on every
            backend) and where they run (:func:`irmodels.parallel.map`).

        Returns
        -------
        DataFrame
            Index ``parameter``: the standard deviation of each random term (named as in
            :meth:`variance_components`), ``Residual`` (the residual SD), then the fixed
            effects; columns ``lower, upper``. A lower bound of 0 means the profile does not
            reach the critical value before the SD is zero.

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin(["sys1", "sys2", "sys3"])]
        >>> fit = irm.mixed("score ~ system + (1|topic)", data)
        >>> fit.confint().round(4)
                      lower   upper
        parameter
        topic        0.1022  0.1642
        Residual     0.0854  0.1127
        (Intercept)  0.0370  0.1276
        systemsys2   0.2295  0.3067
        systemsys3   0.2330  0.3102
        >>> fit.confint("wald").round(4).loc["systemsys2"].tolist()
        [0.2295, 0.3067]
        """
        from irmodels.models._mixed_confint import confint

        return confint(self, method=method, level=level, parm=parm, n_boot=n_boot, seed=seed,
                       backend=backend, n_workers=n_workers)

    def gstudy(self, facets: Sequence[str] | None = None, data: pd.DataFrame | None = None,
               *, n_boot: int = 500, seed: Any = 0, level: float = 0.95,
               backend: Any = "serial", n_workers: int | None = None) -> GStudy:
        """The G-study of this fit (``irm.gstudy(fit)``) with bootstrap intervals of its ratios.

        Needed where no closed form exists (three-facet designs, unbalanced data): the
        variance components are re-estimated on ``n_boot`` parametric-bootstrap responses
        (seeded, through :func:`irmodels.parallel.map`), the shares of variance get percentile
        limits at ``level`` (``share_lower``, ``share_upper`` in ``components``) and the
        D-study's ``Erho2`` and ``Phi`` limits come from the same draws (``dstudy(alpha=...)``).
        The random terms must be the facets (``(1|system) + (1|topic) + ...``).

        Examples
        --------
        >>> import irmodels as irm
        >>> data = irm.datasets.load("adhoc3", "AP")
        >>> data = data[data["system"].isin([f"sys{i}" for i in range(1, 11)])]
        >>> fit = irm.mixed("score ~ (1|system) + (1|topic)", data)
        >>> gs = fit.gstudy(n_boot=50, seed=1)
        >>> gs.components[["share", "share_lower", "share_upper"]].round(2)
                   share  share_lower  share_upper
        component
        system      0.20         0.10         0.34
        topic       0.61         0.48         0.72
        Residual    0.19         0.14         0.26
        """
        from irmodels.models._mixed_confint import gstudy_with_intervals

        return gstudy_with_intervals(self, facets, data, n_boot=n_boot, seed=seed, level=level,
                                     backend=backend, n_workers=n_workers)

    def _refit_ml(self) -> MixedResult:
        st = self._state
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundaryFitWarning)
            return mixed(self.spec, st["data"], method="ML", residual=self.residual)

    # -- plot --------------------------------------------------------------------------------
    def conditional_sd(self, term: str | None = None) -> pd.Series:
        """Conditional standard deviations of the BLUPs of one random term, given the data and
        the estimates (lme4's ``ranef(fit, condVar = TRUE)``, as standard deviations).

        The conditional variance of the random effects ``b = Lambda u`` is
        ``sigma^2 Lambda A^-1 Lambda'`` with ``A = Lambda' Z' W Z Lambda + I`` (Bates et al.
        2015, section 3.3; the uncertainty of the fixed effects is not included, as in lme4).

        Parameters
        ----------
        term : str, optional
            A random term (``"topic"``, ``"topic:system"``); default ``topic`` when the model
            has it, else the first random term.

        Returns
        -------
        Series
            Indexed by the term's levels (the order of ``random_effects[term]``), named
            ``cond_sd``.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
        >>> sd = fit.conditional_sd("topic")
        >>> len(sd) == len(fit.random_effects["topic"]), bool((sd > 0).all())
        (True, True)
        """
        name = self._random_term(term)
        st = self._state
        pb = st.problem
        f = _reml.evaluate(pb, st.theta, st.eta, self.method == "REML")
        minv = _reml._minv_pattern(pb, f, ml=True)  # A^-1 on the pattern of T'WT
        diag = np.zeros(pb.q)
        on = (pb.pair_a == pb.pair_b) & (pb.pair_a < pb.q)
        diag[pb.pair_a[on]] = minv[on]
        off = 0
        for i, k in enumerate(st.order):
            size = pb.term_sizes[i]
            if self.spec.random[k].name == name:
                sd = st.sigma * abs(float(st.theta[i])) * np.sqrt(np.maximum(diag[off:off + size], 0))
                return pd.Series(sd, index=self.random_effects[name].index, name="cond_sd")
            off += size
        raise DesignError(f"no random term {name!r} in {self.spec}.")  # pragma: no cover

    def _random_term(self, term: str | None) -> str:
        names = [rt.name for rt in self.spec.random]
        if not names:
            raise DesignError(f"{self.spec} has no random term: there are no random effects to "
                              "show; fit a model with one, e.g. score ~ system + (1|topic).")
        if term is None:
            return "topic" if "topic" in names else names[0]
        if term not in names:
            raise DesignError(f"{term!r} is not a random term of {self.spec}; random terms: "
                              f"{', '.join(names)}.")
        return term

    def plot(self, term: str | None = None, *, level: float = 0.95, ax: Any = None) -> Any:
        """Caterpillar plot of one random term: the conditional modes (BLUPs) of its levels,
        sorted, each with the interval ``b +- z sqrt(conditional variance)``
        (:meth:`conditional_sd`), as lme4's ``dotplot(ranef(fit, condVar = TRUE))``.

        Parameters
        ----------
        term : str, optional
            A random term; default ``topic`` when the model has it, else the first one.
        level : float
            Coverage of the normal intervals.
        ax : matplotlib Axes, optional
            Draw into this Axes (the figure returned is then ``ax.figure``); by default a new
            figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.

        Examples
        --------
        >>> import irmodels as irm
        >>> fit = irm.mixed("score ~ system + (1|topic)", irm.datasets.load("adhoc3", "AP"))
        >>> fig = fit.plot()
        >>> fig.axes[0].get_xlabel()
        'conditional mode of topic (95% interval)'
        """
        from scipy.special import ndtri

        from irmodels._display import plot_text
        from irmodels._section import figure_axes
        from irmodels._validate import check_probability

        level = check_probability(level, "level")
        name = self._random_term(term)
        b = self.random_effects[name]
        sd = self.conditional_sd(name)
        order = np.argsort(b.to_numpy(), kind="stable")
        k = len(b)
        z = float(ndtri(0.5 + level / 2))
        fig, (ax,) = figure_axes(ax, figsize=(6.0, min(max(3.0, 0.9 + 0.16 * k), 12.0)),
                                 what="MixedResult.plot")
        y = np.arange(k)
        ax.errorbar(b.to_numpy()[order], y, xerr=z * sd.to_numpy()[order], fmt="o", ms=3,
                    lw=0.8, color="#4c72b0")
        ax.axvline(0, color="#666666", lw=0.8, ls="--")
        if k <= 60:
            ax.set_yticks(y, [plot_text(str(v)) for v in b.index[order]],
                          fontsize=8 if k <= 30 else 7)
            ax.set_ylabel(plot_text(name))
            ax.set_ylim(-0.8, k - 0.2)
        else:
            ax.set_yticks([])
            ax.set_ylabel(f"{k} levels of {plot_text(name)}, sorted")
        ax.set_xlabel(f"conditional mode of {plot_text(name)} ({100 * level:g}% interval)")
        ax.spines[["top", "right"]].set_visible(False)
        return fig

    # -- display -----------------------------------------------------------------------------
    def _display_title(self) -> str:
        kind = "closed form" if self.closed_form else (
            f"{self.n_iter} iterations" + ("" if self.converged else ", NOT converged"))
        het = f", residual by {self.residual}" if self.residual else ""
        b = f", boundary: {', '.join(self.boundary_components)}" if self.boundary else ""
        return (f"Linear mixed model fit by {self.method} ({kind}{het}{b}): {self.spec}\n"
                f"n = {self.n_obs}, logLik = {self.loglik:.4f}, AIC = {self.aic:.4f}, "
                f"BIC = {self.bic:.4f}")

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        tables: list[tuple[str, pd.DataFrame]] = []
        if self.spec.fixed:
            try:
                tables.append(("F tests of fixed effects (type III, Satterthwaite df)",
                               self.anova().table))
            except ModelError:  # e.g. numeric covariates: the coefficient table says it all
                pass
        fixed = self.fixed
        if len(fixed) > SUMMARY_MAX_COEFFICIENTS:
            more = len(fixed) - SUMMARY_MAX_COEFFICIENTS
            head = fixed.iloc[:SUMMARY_MAX_COEFFICIENTS]
            tail = pd.DataFrame(np.nan, columns=fixed.columns,
                                index=pd.Index([f"... {more} more (all in .fixed)"]))
            fixed = pd.concat([head, tail])
            fixed.index.name = self.fixed.index.name
            title = f"Fixed effects (first {SUMMARY_MAX_COEFFICIENTS} of {len(self.fixed)})"
        else:
            title = "Fixed effects"
        tables += [("Variance components", self.components), (title, fixed)]
        if self.sd_ratios is not None:
            r = pd.DataFrame({"sd_ratio": self.sd_ratios, "variance": self.residual_variance})
            tables.append(("Residual variance by stratum", r))
        return tables

    def __repr__(self) -> str:
        return (f"<MixedResult {self.method} {self.spec} n={self.n_obs} "
                f"logLik={self.loglik:.4f}{' heteroscedastic' if self.residual else ''}>")


def _coding_row(spec: ModelSpec, levels: dict[str, list[str]], assign: dict[str, int],
                names: list[str], covariates: dict[str, float] | None = None) -> np.ndarray:
    """Row of the fixed design for one combination of fixed-factor levels, with numeric
    covariates at the values ``covariates`` (emmeans: their means)."""
    row = np.zeros(len(names))
    pos = {n: i for i, n in enumerate(names)}
    if spec.intercept:
        row[pos["(Intercept)"]] = 1.0
    for term in spec.fixed:
        if term.is_covariate:
            if covariates is None:
                raise DesignError(
                    f"predictions at factor levels need a value for the covariate(s) of "
                    f"{term.name}; this computation is not available for models with "
                    "covariates."
                )
            value = math.prod(covariates[f] for f in term.numeric_factors)
            label = ":".join(f if f in term.numeric else f"{f}{levels[f][assign[f]]}"
                             for f in term.factors)
            if label in pos:
                row[pos[label]] = value
            continue
        lv = [assign[f] for f in term.factors]
        label = ":".join(f"{f}{levels[f][c]}" for f, c in zip(term.factors, lv))
        if label in pos:
            row[pos[label]] = 1.0
    return row


# --------------------------------------------------------------------------------------------
# Satterthwaite


def _vb(pb: _reml.Problem, theta: np.ndarray, sigma: float, eta: np.ndarray | None,
        reml: bool) -> np.ndarray:
    f = _reml.evaluate(pb, theta, eta, reml)
    return sigma**2 * _reml.fixed_cov_unscaled(pb, f)


def _unprof_grad(pb: _reml.Problem, theta: np.ndarray, sigma: float, eta: np.ndarray | None,
                 reml: bool) -> tuple[np.ndarray, np.ndarray]:
    """Analytic gradient of -2 log L in (theta, sigma, eta), sigma not profiled, and the
    covariance of the fixed effects at the same point (one factorisation for both)."""
    f = _reml.evaluate(pb, theta, eta, reml)
    dof = (pb.n - pb.p) if reml else pb.n
    g_logdet, g_r2 = _split_gradient(pb, f, reml)
    g_theta = g_logdet[: pb.K] + g_r2[: pb.K] / sigma**2
    g_sigma = 2.0 * dof / sigma - 2.0 * f.r2 / sigma**3
    out: list[np.ndarray] = [g_theta, np.array([g_sigma])]
    if pb.n_strata > 1:
        out.append(g_logdet[pb.K:] + g_r2[pb.K:] / sigma**2 + 2.0 * pb.n_per_stratum[1:])
    return np.concatenate(out), sigma**2 * _reml.fixed_cov_unscaled(pb, f)


def _split_gradient(pb: _reml.Problem, f: _reml.Fit, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    return _reml.gradient_parts(pb, f, reml)


def _satterthwaite_parts(pb: _reml.Problem, theta: np.ndarray, eta: np.ndarray | None,
                         sigma: float, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    K = pb.K
    x0 = np.concatenate([theta, [sigma], eta if eta is not None else []])
    npar = x0.size

    def unpack(x: np.ndarray) -> tuple[np.ndarray, float, np.ndarray | None]:
        return x[:K], float(x[K]), (x[K + 1:] if eta is not None else None)

    steps = 1e-4 * np.maximum(np.abs(x0), 1e-2)
    steps[K] = 1e-4 * abs(sigma)  # sigma has the response's scale; theta and eta have none
    H = np.zeros((npar, npar))
    jac = np.zeros((npar, pb.p, pb.p))
    for j in range(npar):
        e = np.zeros(npar)
        e[j] = steps[j]
        gp, vp = _unprof_grad(pb, *unpack(x0 + e), reml)
        gm, vm = _unprof_grad(pb, *unpack(x0 - e), reml)
        H[:, j] = (gp - gm) / (2 * steps[j])
        if j == K:
            th, sg, et = unpack(x0)
            jac[j] = 2.0 / sg * _vb(pb, th, sg, et, reml)
        else:
            jac[j] = (vp - vm) / (2 * steps[j])
    H = (H + H.T) / 2
    # normalise (see MixedResult._satterthwaite): Var(beta) / sigma^2, and s = sigma / sigma_hat
    # in place of sigma (dVar/ds = sigma dVar/dsigma; the Hessian in s is sigma^2 times it)
    jac = jac / sigma**2
    jac[K] *= sigma
    H[K, :] *= sigma
    H[:, K] *= sigma
    try:
        acov = 2.0 * np.linalg.inv(H)
    except np.linalg.LinAlgError:
        acov = np.full((npar, npar), np.nan)
    return jac, acov


# --------------------------------------------------------------------------------------------
# fitting


def mixed(
    model: str | ModelSpec,
    data: pd.DataFrame,
    *,
    method: Literal["REML", "ML"] = "REML",
    residual: str | None = None,
    start: dict[str, float] | None = None,
    maxiter: int = 2000,
    tol: float = 1e-9,
    drop_degenerate: bool = False,
) -> MixedResult:
    """Fit a linear mixed model with random intercepts by REML or ML.

    Parameters
    ----------
    model : str or ModelSpec
        An lme4-style formula: fixed terms (treatment contrasts, R's default, so coefficients
        equal lme4's and nlme's) plus random intercepts ``(1|g)``, ``(1|a:b)``, ``(1|a/b)``;
        any number, crossed or nested.
    data : DataFrame
        A long frame (:func:`irmodels.frame`) or any frame with the named columns. The first
        category (natural order for strings) is the reference level of a fixed factor.
    method : {"REML", "ML"}
        Restricted (default) or full maximum likelihood.
    residual : str, optional
        ``None`` for one residual variance; a factor or interaction (``"topic:system"``,
        ``"system"``) for one residual variance per stratum, nlme's
        ``varIdent(form = ~1 | topic*system)``. Ratios are relative to the first stratum in
        data order (as nlme does).
    start : dict, optional
        Starting standard deviations relative to the residual SD, by random-term name
        (``{"topic": 2.0}``); missing terms start from the moment estimates.
    maxiter : int
        Iteration limit of the optimiser (L-BFGS-B).
    tol : float
        Convergence tolerance on the projected gradient of the deviance.
    drop_degenerate : bool
        Heteroscedastic fits: drop strata with a single observation or no variance (with a
        :class:`~irmodels.DataQualityWarning` naming them) instead of raising.

    Returns
    -------
    MixedResult
        ``variance_components()`` (index component, columns ``variance, sd, share``),
        ``fixed`` (``estimate, se, df, t, p``), ``loglik``, ``aic``, ``bic``, ``deviance``,
        ``random_effects``, ``residual_variance``, ``variance_ratios``, ``converged``,
        ``n_iter``, ``boundary``; methods ``marginal_means``, ``tukey``, ``summary``,
        ``to_latex``.

    Raises
    ------
    DesignError
        A random term with one level, one observation per level, or confounded with a fixed
        term; degenerate residual strata; a rank-deficient fixed design.
    ConvergenceError
        The optimiser produced no finite likelihood.

    Warns
    -----
    BoundaryFitWarning
        A variance component is estimated at zero (a legitimate optimum on the boundary).
    ConvergenceWarning
        The iteration limit was reached before the gradient criterion was met.

    Notes
    -----
    *Estimation.* The profiled deviance of lme4 (Bates et al. 2015, eqs. 34 and 41) in the
    relative covariance parameters ``theta_k = sigma_k / sigma`` (and ``log delta_s`` for the
    stratum SD ratios), minimised by L-BFGS-B with analytic gradients and bounds
    ``theta >= 0``. Each random term's block of ``Z'Z`` is diagonal, so the largest term is
    eliminated through its diagonal and only the small remainder is factorised densely; no
    n x n matrix is formed. On a balanced crossed design with one residual variance and no
    numeric covariate the stratum sums of squares are sufficient and the REML (or ML) optimum
    equals the ANOVA (expected-mean-squares) estimates when they are all positive: those are
    returned (``closed_form=True``) and otherwise used as starting values
    (``optimize_deviance(..., closed_form=False)`` forces the iteration). A variance whose
    optimum is 0 is reported as exactly 0 (``boundary``, lme4's ``isSingular``).

    *Conventions.* ``loglik`` is the restricted log-likelihood under REML as lme4 and nlme
    report it (no ``log|X'X|`` constant). The number of parameters is the fixed effects plus
    the variance parameters (random terms, the residual, and the stratum ratios). ``aic =
    -2 loglik + 2 npar``. ``bic = -2 loglik + npar log(N)`` with ``N = n_obs`` for
    homoscedastic fits (lme4's convention, also under REML), and with ``N = n_obs - p`` under
    REML for heteroscedastic fits (nlme's convention; ``n_obs`` under ML), so that the numbers
    equal those of the R function that fits each model.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> fit = irm.mixed("score ~ (1|system) + (1|topic)", data)
    >>> fit.closed_form
    True
    >>> fit.variance_components().round(5)
               variance       sd    share
    component
    system      0.00717  0.08466  0.17596
    topic       0.02264  0.15047  0.55593
    Residual    0.01092  0.10450  0.26811
    >>> round(fit.loglik, 3)
    1497.476
    """
    if method not in ("REML", "ML"):
        raise ModelError(f"method must be 'REML' or 'ML'; got {method!r}")
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    design = mixed_design(model, data, residual=residual, drop_degenerate=drop_degenerate)
    devfun = deviance_function(design, method)
    opt = optimize_deviance(devfun, start=start, maxiter=maxiter, tol=tol)
    return mixed_result(design, devfun, opt)


# --------------------------------------------------------------------------------------------
# the stages of a fit (lme4's lFormula -> mkLmerDevfun -> optimizeLmer -> mkMerMod)


def mixed_design(model: str | ModelSpec, data: pd.DataFrame, *, residual: str | None = None,
                 drop_degenerate: bool = False) -> MixedDesign:
    """Stage 1 (lme4's ``lFormula``): resolve the formula, check and encode the data.

    Raises the data and design errors of :func:`mixed` (bad columns, degenerate strata,
    confounded or one-level random terms, a constant response).
    """
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    spec = _resolve(model, list(map(str, data.columns)), data)
    from irmodels.models.anova import refuse_pooled

    refuse_pooled(data, set(spec.factors) | {f for rt in spec.random for f in rt.factors}
                  | ({residual} if isinstance(residual, str) else set()))
    res_factors = _parse_residual(residual, data)
    design, used = _build(spec, data, res_factors, drop_degenerate)
    design.data = used
    design.residual = res_factors
    return design


@dataclass
class DevianceFunction:
    """Stage 2 (lme4's ``mkLmerDevfun``): the profiled REML or ML deviance of one design.

    Call it with ``x = (theta, eta)``: the relative SDs of the random terms (in ``order``, the
    largest term first) and the log SD ratios of the residual strata (relative to the internal
    reference stratum). :meth:`evaluate` returns everything one evaluation computes
    (:class:`irmodels.models._reml.Fit`, with the analytic gradient when asked).
    """

    design: MixedDesign
    problem: _reml.Problem
    order: list[int]
    reml: bool

    @property
    def method(self) -> str:
        return "REML" if self.reml else "ML"

    @property
    def n_theta(self) -> int:
        return self.problem.K

    @property
    def bounds(self) -> list[tuple[float | None, float | None]]:
        """L-BFGS-B bounds of ``x``: ``theta >= 0``, ``eta`` free."""
        return [(0.0, None)] * self.problem.K + [(None, None)] * (self.problem.n_strata - 1)

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        x = np.asarray(x, float)
        K = self.problem.K
        return x[:K], (x[K:] if self.problem.n_strata > 1 else None)

    def evaluate(self, x: np.ndarray, gradient: bool = False) -> _reml.Fit:
        theta, eta = self.split(x)
        return _reml.evaluate(self.problem, theta, eta, self.reml, gradient=gradient)

    def __call__(self, x: np.ndarray) -> float:
        return self.evaluate(x).deviance


def deviance_function(design: MixedDesign, method: Literal["REML", "ML"] = "REML"
                      ) -> DevianceFunction:
    """Stage 2: the deviance of ``design`` by ``method`` (checks the fixed design's rank)."""
    if method not in ("REML", "ML"):
        raise ModelError(f"method must be 'REML' or 'ML'; got {method!r}")
    pb, order = _problem(design)
    _check_rank(pb, design.fixed_names, design)
    _check_residual_df(pb, design)
    return DevianceFunction(design, pb, order, method == "REML")


@dataclass
class Optimum:
    """Stage 3 (lme4's ``optimizeLmer``): where the deviance is minimal, and how it was found."""

    theta: np.ndarray
    eta: np.ndarray | None
    deviance: float
    n_iter: int
    converged: bool
    closed_form: bool
    message: str = ""
    #: (devfun, theta, the evaluation there): mixed_result reuses it instead of evaluating again
    _evaluated: tuple[Any, np.ndarray, Any] | None = field(default=None, repr=False,
                                                           compare=False)


def optimize_deviance(devfun: DevianceFunction, *, start: dict[str, float] | None = None,
                      maxiter: int = 2000, tol: float = 1e-9, closed_form: bool = True
                      ) -> Optimum:
    """Stage 3: minimise the deviance.

    The balanced-design ANOVA estimates are the optimum when they apply (``closed_form``), else
    the start of L-BFGS-B (with restarts, and a failed heteroscedastic start retried from the
    homoscedastic fit); see :func:`mixed`. Warns :class:`ConvergenceWarning` when the gradient
    criterion is not met; raises :class:`ConvergenceError` without a finite likelihood.

    ``closed_form=False`` forces the iterative path: L-BFGS-B runs even where the ANOVA
    estimates apply (from a start of 0.5 for every relative SD, not from those estimates), a
    check that the closed form is the optimum of the deviance. The stages then give the fit
    :func:`mixed` would give without its closed form::

        design = mixed_design(model, data)
        devfun = deviance_function(design, "REML")
        fit = mixed_result(design, devfun, optimize_deviance(devfun, closed_form=False))
    """
    design, pb, order, reml = devfun.design, devfun.problem, devfun.order, devfun.reml
    spec, method, K = design.spec, devfun.method, pb.K
    if closed_form:
        closed, theta0 = _closed_form(design, pb, order, reml)
    else:
        closed, theta0 = None, np.full(K, 0.5)
    if start:
        names = [spec.random[k].name for k in order]
        unknown = [str(n) for n in start if n not in names]
        if unknown:
            raise ArgumentError(
                f"start names {', '.join(map(repr, unknown))}, which is not a random term of "
                f"{spec}; the random terms are {', '.join(map(repr, names))}"
            )
        for i, name in enumerate(names):
            if name in start:
                value = start[name]
                if (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
                        or not math.isfinite(float(value)) or float(value) < 0):
                    raise ArgumentError(
                        f"start[{name!r}] must be a finite number >= 0 (a standard deviation "
                        f"relative to the residual SD); got {value!r}"
                    )
                theta0[i] = float(value)
    if closed is not None:
        fit = devfun.evaluate(closed)
        return Optimum(closed, None, fit.deviance, 0, True, True, "closed form",
                       _evaluated=(devfun, closed.copy(), fit))
    n_iter = 0
    eta0 = _eta_start(pb) if pb.n_strata > 1 else np.zeros(0)
    x0 = np.concatenate([theta0, eta0])
    try:
        x, res, n_iter = _optimise(pb, x0, reml, maxiter, tol)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError):
        x, res = None, None
    if (res is None or not np.isfinite(res.fun)) and pb.n_strata > 1:
        # restart from the homoscedastic fit (its theta, rescaled to the reference stratum)
        x0 = np.concatenate([_homoscedastic_theta(pb, theta0, reml, maxiter, tol), eta0])
        try:
            x, res, n_iter = _optimise(pb, x0, reml, maxiter, tol)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError):
            x, res = None, None
    if res is None or x is None or not np.isfinite(res.fun):
        raise ConvergenceError(
            f"the {method} fit of {spec} produced no finite likelihood after {n_iter} "
            "iterations. Check the data for constant or near-constant strata, rescale the "
            "response, or give starting values (start={...})."
        )
    scale = max(1.0, abs(float(res.fun)))
    converged = _pg_norm(res.jac, x, K) <= 1e-4 * scale
    if not converged:
        warnings.warn(
            f"the {method} fit of {spec} did not converge in {n_iter} iterations "
            f"({res.message}); the estimates may be inaccurate. Raise maxiter, give "
            "starting values (start={...}), rescale the response, or simplify the random "
            "part.", ConvergenceWarning, stacklevel=3,
        )
    theta, eta = devfun.split(x)
    return Optimum(np.maximum(theta, 0.0), eta, float(res.fun), n_iter, bool(converged), False,
                   str(res.message))


def _response_unit(y: np.ndarray) -> float:
    """The power of 2 nearest the response's SD (1.0 for a constant or empty response)."""
    if not y.size:
        return 1.0
    with np.errstate(all="ignore"):
        sd = float(np.std(y))
    if not (np.isfinite(sd) and sd > 0):
        return 1.0
    return float(2.0 ** round(math.log2(sd)))


def _optimise(pb: _reml.Problem, x0: np.ndarray, reml: bool, maxiter: int, tol: float
              ) -> tuple[np.ndarray, Any, int]:
    """:func:`_optimise_units` on the response in units of (a power of 2 near) its SD.

    theta and eta do not depend on the response's units, but the deviance carries
    ``dof * log(unit^2)``: at 1e+-90 or 1e20 it is thousands, and the rounding of that offset
    stopped the optimiser 2e-6 short (relative) in the variances. Dividing by a power of 2 is
    exact; the deviance and gradient of the result are evaluated on the original response.
    """
    c = _response_unit(pb.y)
    if c == 1.0:
        return _optimise_units(pb, x0, reml, maxiter, tol)
    # build the design's caches (they do not depend on y) on the problem the result keeps,
    # so that the scaled copy shares them
    pb.unit_cross()
    pb.index()
    if not pb.dense_b:
        pb.sparse_layout()
    scaled = copy.copy(pb)
    scaled.y = pb.y / c
    x, res, n_iter = _optimise_units(scaled, x0, reml, maxiter, tol)
    if res is not None and np.isfinite(res.fun):
        K = pb.K
        with np.errstate(all="ignore"):
            try:
                f = _reml.evaluate(pb, x[:K], x[K:] if pb.n_strata > 1 else None, reml,
                                   gradient=True)
                res.fun, res.jac = f.deviance, f.gradient
            except np.linalg.LinAlgError:
                res.fun = math.nan
    return x, res, n_iter


def _optimise_units(pb: _reml.Problem, x0: np.ndarray, reml: bool, maxiter: int, tol: float
                    ) -> tuple[np.ndarray, Any, int]:
    """Minimise the profiled deviance from ``x0`` = (theta, eta) by L-BFGS-B.

    A point where the factorisation fails (numerically not positive definite, far from the
    optimum) gets a deviance above the best one seen, so the line search steps back instead
    of aborting the fit. A few restarts catch L-BFGS-B's early stops on flat ridges.
    Returns (x, the last scipy result, iterations).
    """
    K = pb.K
    bounds = [(0.0, None)] * K + [(None, None)] * (pb.n_strata - 1)
    best_f = [math.inf]
    best_g = [np.zeros_like(x0)]

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        et = x[K:] if pb.n_strata > 1 else None
        try:
            f = _reml.evaluate(pb, x[:K], et, reml, gradient=True)
        except np.linalg.LinAlgError:
            if not np.isfinite(best_f[0]):
                raise
            return best_f[0] + 1e3 * (1.0 + abs(best_f[0])), -best_g[0]
        assert f.gradient is not None  # asked for above
        if f.deviance < best_f[0]:
            best_f[0], best_g[0] = f.deviance, f.gradient
        return f.deviance, f.gradient

    opts = {"maxiter": maxiter, "maxfun": 5 * maxiter, "ftol": 1e-15, "gtol": tol, "maxls": 10}
    with np.errstate(all="ignore"):
        res = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                options=opts)
        x = res.x
        n_iter = int(res.nit)
        if not np.isfinite(res.fun):
            return x, res, n_iter
        scale = max(1.0, abs(float(res.fun)))
        for _ in range(3):
            if _pg_norm(res.jac, x, K) <= 1e-5 * scale or n_iter >= maxiter:
                break
            res = optimize.minimize(fun, x, jac=True, method="L-BFGS-B", bounds=bounds,
                                    options=opts)
            x = res.x
            n_iter += int(res.nit)
        # theta_k enters the deviance as theta_k**2, so its gradient is exactly 0 on the bound
        # theta_k = 0 (and tiny near it): L-BFGS-B stops there (projected gradient 0) when a step was clipped onto
        # the bound, or the start was 0, even where a positive theta_k is better (lme4's
        # derivative-free optimiser does not stop there). A component at 0 is an optimum only
        # if no probe above it lowers the deviance; otherwise restart from the best probe.
        for _ in range(2 * K + 2):
            zero = [k for k in range(K) if x[k] < _NEAR_ZERO]
            if not zero or not np.isfinite(res.fun):
                break
            best_x, best = None, float(res.fun) - 1e-10 * max(1.0, abs(float(res.fun)))
            et = x[K:] if pb.n_strata > 1 else None
            for k in zero:
                for step in _BOUNDARY_PROBES:
                    xp = x.copy()
                    xp[k] = step
                    try:
                        dev = _reml.evaluate(pb, xp[:K], et, reml).deviance
                    except np.linalg.LinAlgError:
                        continue
                    if dev < best:
                        best_x, best = xp, dev
            if best_x is None:
                break
            res = optimize.minimize(fun, best_x, jac=True, method="L-BFGS-B", bounds=bounds,
                                    options=opts)
            x = res.x
            n_iter += int(res.nit)
        # The converse: near theta_k = 0 the deviance is flat (theta_k**2), so L-BFGS-B stops a
        # little above a zero optimum (theta 1.3e-4 for a topic variance whose REML optimum is
        # 0, which moved the Satterthwaite df from lmerTest's 36 to 29.45). A small component
        # whose zero is at least as good is set to exactly 0 and the others re-polished with
        # it held there, so a boundary optimum is reported as one (lme4's isSingular).
        if np.isfinite(res.fun):
            x, res, extra = _snap_to_boundary(pb, fun, x, res, reml, bounds, opts)
            n_iter += extra
    return x, res, n_iter


#: Relative SDs below which _snap_to_boundary tries the component at exactly 0.
_SNAP_BELOW = 1e-2


def _snap_to_boundary(pb: _reml.Problem, fun: Any, x: np.ndarray, res: Any, reml: bool,
                      bounds: list[tuple[float | None, float | None]], opts: dict[str, Any]
                      ) -> tuple[np.ndarray, Any, int]:
    """Set to 0 each small theta_k (< ``_SNAP_BELOW``) whose zero does not raise the deviance,
    smallest first, re-polishing the other parameters with the zeros held (bounds (0, 0))."""
    K = pb.K
    et = x[K:] if pb.n_strata > 1 else None
    dev = float(res.fun)
    tol = 1e-12 * max(1.0, abs(dev))
    zeroed: list[int] = []
    for k in sorted(range(K), key=lambda j: x[j]):
        if not 0.0 < x[k] < _SNAP_BELOW:
            continue
        xp = x.copy()
        xp[k] = 0.0
        try:
            d0 = _reml.evaluate(pb, xp[:K], et, reml).deviance
        except np.linalg.LinAlgError:
            continue
        if d0 <= dev + tol:
            x, dev = xp, min(dev, d0)
            zeroed.append(k)
    if not zeroed:
        return x, res, 0
    held = list(bounds)
    for k in zeroed:
        held[k] = (0.0, 0.0)
    nit = 0
    if any(lo != hi for lo, hi in held):  # something left to polish
        res2 = optimize.minimize(fun, x, jac=True, method="L-BFGS-B", bounds=held,
                                 options=opts)
        nit = int(res2.get("nit", 0))
        if np.isfinite(res2.fun) and res2.fun <= dev + tol:
            x = np.asarray(res2.x, float).copy()
            x[zeroed] = 0.0
    f, g = fun(x)  # the evaluation at the returned point (scipy skips it when all are held)
    msg = f"{res.message}; {len(zeroed)} component(s) at the boundary"
    return x, optimize.OptimizeResult(x=x, fun=f, jac=g, nit=nit, message=msg,
                                      success=True), nit


#: Values of a relative SD tried above a component that the optimiser left at (or near) 0;
#: below _NEAR_ZERO (lme4's tolerance for a singular fit) the gradient is too flat to trust.
_BOUNDARY_PROBES = (1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0)
_NEAR_ZERO = 1e-4


def _homoscedastic_theta(pb: _reml.Problem, theta0: np.ndarray, reml: bool, maxiter: int,
                         tol: float) -> np.ndarray:
    """theta of the homoscedastic fit of the same problem, relative to the reference stratum's
    residual SD (the starting point of a heteroscedastic restart)."""
    homo = _reml.Problem(y=pb.y, cols=pb.cols, vals=pb.vals, term_sizes=pb.term_sizes, p=pb.p)
    x, res, _ = _optimise(homo, np.asarray(theta0, float), reml, maxiter, tol)
    sd = _stratum_sd(pb.y, pb.sidx, pb.n_strata)
    f = _reml.evaluate(homo, x, None, reml)
    return np.maximum(x, 0.0) * math.sqrt(f.sigma2) / sd[0]


def _pg_norm(g: np.ndarray, x: np.ndarray, K: int) -> float:
    g = np.asarray(g, float).copy()
    at0 = np.zeros_like(g, dtype=bool)
    at0[:K] = (x[:K] <= 0) & (g[:K] > 0)
    g[at0] = 0.0
    return float(np.max(np.abs(g))) if g.size else 0.0


def _eta_start(pb: _reml.Problem) -> np.ndarray:
    """log SD ratios from within-stratum spread of the response (around cell means)."""
    sd = _stratum_sd(pb.y, pb.sidx, pb.n_strata)
    return np.log(sd[1:] / sd[0])


@dataclass
class MixedState:
    """What a :class:`MixedResult` keeps of its fit for later computations (Satterthwaite df,
    marginal means, profiles, bootstrap): the deviance function's problem and the optimum.

    ``theta`` and ``eta`` are in the deviance function's parametrisation (terms in ``order``,
    log SD ratios relative to the internal reference stratum); ``sigma`` is the residual SD of
    that reference; ``vcov`` the covariance of the fixed effects. Item access
    (``state["vcov"]``) is kept for code written against the former dict.
    """

    problem: _reml.Problem
    theta: np.ndarray
    eta: np.ndarray | None
    sigma: float
    vcov: np.ndarray
    levels: dict[str, list[str]]
    codes: dict[str, np.ndarray]
    order: list[int]
    data: pd.DataFrame | None
    fixed_terms: list[str]
    design: MixedDesign | None = None
    devfun: DevianceFunction | None = None
    optimum: Optimum | None = None

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


def mixed_result(design: MixedDesign, devfun: DevianceFunction, opt: Optimum) -> MixedResult:
    """Stage 4 (lme4's ``mkMerMod``): the :class:`MixedResult` at the optimum."""
    ev = opt._evaluated
    fit = (ev[2] if ev is not None and ev[0] is devfun and opt.eta is None
           and np.array_equal(ev[1], opt.theta) else None)  # the closed form's evaluation
    opt._evaluated = None  # used once: the result does not keep the evaluation alive
    res = _result(design.spec, design, devfun.problem, devfun.order, opt.theta, opt.eta,
                  devfun.method, design.residual_name, opt.converged, opt.n_iter,
                  opt.closed_form, design.data, fit=fit)
    res._state.devfun = devfun
    res._state.optimum = opt
    return res


def _result(spec: ModelSpec, design: _Design, pb: _reml.Problem, order: list[int],
            theta: np.ndarray, eta: np.ndarray | None, method: str, residual: str | None,
            converged: bool, n_iter: int, closed: bool, data: pd.DataFrame | None,
            fit: _reml.Fit | None = None) -> MixedResult:
    reml = method == "REML"
    f = fit if fit is not None else _reml.evaluate(pb, theta, eta, reml)
    sigma2 = f.sigma2
    _check_exact_fit(spec, pb.y, sigma2 * float(np.mean(1.0 / f.w)))
    sigma = math.sqrt(sigma2)
    K = pb.K
    var_by_term = {}
    blups = {}
    off = 0
    for i, k in enumerate(order):
        size = pb.term_sizes[i]
        rt = spec.random[k]
        var_by_term[rt.name] = sigma2 * theta[i] ** 2
        blups[rt.name] = pd.Series(theta[i] * f.u[off:off + size],
                                   index=pd.Index(design.random_labels[k], name=rt.name),
                                   name="blup")
        off += size
    if pb.n_strata > 1:
        labels = design.strata_labels
        full = np.concatenate([[0.0], eta])  # log SD ratios to the internal reference
        full = full[pb.label_code] if pb.label_code is not None else full  # in label (data) order
        sd_r = pd.Series(np.exp(full - full[0]), index=pd.Index(labels, name=residual),
                         name="sd_ratio")
        var_r = sd_r**2
        var_r.name = "variance_ratio"
        res_var: Any = pd.Series(sigma2 * np.exp(2.0 * full), index=var_r.index,
                                 name="variance")
        resid_summary = float(np.sum(pb.n_per_stratum * res_var.to_numpy()) / pb.n)
    else:
        sd_r = var_r = None
        res_var = float(sigma2)
        resid_summary = float(sigma2)
    names = [rt.name for rt in spec.random] + ["Residual"]
    variances = np.array([var_by_term[rt.name] for rt in spec.random] + [resid_summary])
    total = variances.sum()
    vc = pd.DataFrame({"variance": variances, "sd": np.sqrt(variances),
                       "share": variances / total if total > 0 else np.nan},
                      index=pd.Index(names, name="component"))
    bnd = tuple(rt.name for rt in spec.random if var_by_term[rt.name] <= BOUNDARY_TOL * sigma2)
    if bnd:
        warnings.warn(
            f"the {method} estimate of the variance of {', '.join(bnd)} is zero (a boundary "
            "fit; the optimum lies on the edge of the parameter space, not a failed "
            f"convergence). The model is singular: consider dropping {', '.join(bnd)}.",
            BoundaryFitWarning, stacklevel=4,
        )
    n_params = pb.p + K + 1 + (pb.n_strata - 1)
    loglik = -0.5 * f.deviance
    aic = -2 * loglik + 2 * n_params
    n_bic = (pb.n - pb.p) if (reml and pb.n_strata > 1) else pb.n
    bic = -2 * loglik + n_params * math.log(n_bic)
    vcov = sigma2 * _reml.fixed_cov_unscaled(pb, f)
    state = MixedState(problem=pb, theta=theta, eta=eta, sigma=sigma, vcov=vcov,
                       levels=design.levels, codes=design.codes, order=order, data=data,
                       fixed_terms=design.fixed_terms_of_col, design=design)
    return MixedResult(
        spec=spec, method=method, residual=residual,
        n_obs=pb.n, components=vc, residual_variance=res_var,
        variance_ratios=var_r, sd_ratios=sd_r, loglik=loglik, aic=aic, bic=bic,
        deviance=-2 * loglik, converged=converged, n_iter=n_iter, closed_form=closed,
        boundary=bool(bnd), boundary_components=bnd, random_effects=blups, n_params=n_params,
        fixed_estimates=pd.Series(f.beta, index=pd.Index(design.fixed_names, name="coefficient"),
                                  name="estimate"),
        _state=state,
    )


# --------------------------------------------------------------------------------------------
# comparisons


def _label(r: MixedResult) -> str:
    return str(r.spec) + (f" | residual={r.residual}" if r.residual else "")


def compare_models(*results: MixedResult, refit: bool = True) -> pd.DataFrame:
    """Likelihood-ratio tests, AIC, BIC and log-likelihood of nested mixed models.

    Parameters
    ----------
    *results : MixedResult
        Two or more fits to the same observations.
    refit : bool
        lme4's ``anova(..., refit = TRUE)`` (the default): every REML fit is refitted by ML
        before the comparison, so that the likelihoods are comparable whatever the fixed
        parts. ``False`` compares the fits as they are: REML fits must then all be REML and
        share their fixed effects (the right test for models that differ only in their random
        terms or residual variances, as lme4's ``refit = FALSE`` and nlme's ``anova.lme``); a
        :class:`~irmodels.ModelError` says so otherwise.

    Returns
    -------
    DataFrame
        One row per model, indexed by its formula (plus ``| residual=...`` when
        heteroscedastic), ordered by number of parameters as R's ``anova`` does; columns
        ``loglik``, ``aic``, ``bic``, ``statistic`` (``2 * (loglik - loglik of the previous
        row)``, clipped at 0), ``df`` (difference in parameters), ``p`` (chi-squared upper
        tail; NaN in the first row), ``npar``, ``likelihood`` (which likelihood was compared:
        ``"ML"``, ``"ML (refitted)"`` for a REML fit refitted by ML, or ``"REML"``).
        ``attrs["likelihood"]`` is ``"ML"`` or ``"REML"``.

    Raises
    ------
    ModelError
        ``refit=False`` with REML fits whose fixed effects differ, or REML and ML fits mixed.
    DesignError
        The fits were made on different observations or responses.

    Notes
    -----
    REML likelihoods are comparable only between models with the same fixed effects, hence
    lme4's default refit. For variance components (nested random parts, or a heteroscedastic
    against a homoscedastic residual) the REML test (``refit=False``) is the better one: REML
    estimates of the variances are less biased. BIC follows nlme's convention (``log(n - p)``
    under REML) when any model is heteroscedastic, lme4's (``log(n)``) otherwise. The
    chi-squared reference is conservative for variance components tested on the boundary
    (Self & Liang 1987); it is what R reports.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc3", "AP")
    >>> m0 = irm.mixed("score ~ (1|topic)", data)
    >>> m1 = irm.mixed("score ~ (1|system) + (1|topic)", data)
    >>> cols = ["loglik", "statistic", "df", "likelihood"]
    >>> irm.compare_models(m0, m1, refit=False)[cols].round(3)
                                      loglik  statistic   df likelihood
    model
    score ~ (1|topic)               1074.150        NaN  NaN       REML
    score ~ (1|system) + (1|topic)  1497.476    846.653  1.0       REML
    >>> irm.compare_models(m0, m1)[["loglik", "statistic", "likelihood"]].round(3)
                                     loglik  statistic     likelihood
    model
    score ~ (1|topic)               1077.08        NaN  ML (refitted)
    score ~ (1|system) + (1|topic)  1500.24    846.319  ML (refitted)
    """
    from scipy import stats  # here, not at import: scipy.stats is slow to import

    if len(results) < 2 or not all(isinstance(r, MixedResult) for r in results):
        raise ModelError(
            "compare_models needs two or more MixedResult objects (fits of irm.mixed); got "
            + ", ".join(type(r).__name__ for r in results)
        )
    if not isinstance(refit, (bool, np.bool_)):
        raise ModelError(f"refit must be True or False; got {refit!r}")
    n = {r.n_obs for r in results}
    resp = {r.spec.response_label for r in results}
    if len(n) > 1 or len(resp) > 1:
        raise DesignError(
            f"the models were fitted to different data (observations: {sorted(n)}; responses: "
            f"{sorted(resp)}); likelihoods are comparable only on the same observations. Fit "
            "every model to the same frame."
        )
    fixed_parts = {(r.spec.intercept, frozenset(t.key for t in r.spec.fixed)) for r in results}
    methods = {r.method for r in results}
    if refit:
        kinds = ["ML" if r.method == "ML" else "ML (refitted)" for r in results]
        results = tuple(r if r.method == "ML" else r._refit_ml() for r in results)
        kind = "ML"
    else:
        if "REML" in methods and (len(fixed_parts) > 1 or len(methods) > 1):
            why = ("their fixed effects differ" if len(fixed_parts) > 1
                   else "some are fitted by ML and some by REML")
            raise ModelError(
                f"REML fits cannot be compared as fitted: {why}, and REML likelihoods are "
                "comparable only between models with the same fixed effects. Pass refit=True "
                "(lme4's default: refit by ML) or fit them with method='ML'."
            )
        kind = methods.pop()
        kinds = [kind] * len(results)
    order = sorted(range(len(results)), key=lambda i: results[i].n_params)
    ordered = [results[i] for i in order]
    convention: Literal["lme4", "nlme"] = (
        "nlme" if any(r.residual for r in ordered) else "lme4")
    labels: list[str] = []
    for r in ordered:
        lab = _label(r)
        while lab in labels:
            lab += " (again)"
        labels.append(lab)
    ll = np.array([r.loglik for r in ordered])
    npar = np.array([r.n_params for r in ordered], dtype=float)
    stat = np.full(len(ordered), np.nan)
    dfd = np.full(len(ordered), np.nan)
    pv = np.full(len(ordered), np.nan)
    for i in range(1, len(ordered)):
        stat[i] = 2.0 * max(0.0, ll[i] - ll[i - 1])
        dfd[i] = npar[i] - npar[i - 1]
        pv[i] = stats.chi2.sf(stat[i], dfd[i]) if dfd[i] > 0 else np.nan
    table = pd.DataFrame(
        {"loglik": ll, "aic": [r.aic for r in ordered],
         "bic": [r.information_criterion(convention) for r in ordered],
         "statistic": stat, "df": dfd, "p": pv, "npar": npar.astype(int),
         "likelihood": [kinds[i] for i in order]},
        index=pd.Index(labels, name="model"),
    )
    table.attrs["likelihood"] = kind
    return table
