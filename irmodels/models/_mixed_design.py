"""Stage 1 of a mixed-model fit (lme4's ``lFormula``): :class:`MixedDesign` and
:func:`mixed_design`.

Resolves the formula, checks the data (covariate and response scale, degenerate residual
strata, confounded or one-level random terms, the rank of the fixed part, the residual df) and
encodes it in the row-sparse form the deviance (:mod:`irmodels.models._mixed_deviance`) needs.
The public entry is :func:`irmodels.mixed`; the stages are re-exported by
:mod:`irmodels.models.mixed`. References: docs/methods.md: "Linear mixed-effects models".
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from irmodels.errors import (
    DataFormatError,
    DataQualityWarning,
    DesignError,
    FormulaError,
)
from irmodels.formula.spec import ModelSpec
from irmodels.models import _design, _reml
from irmodels.models._anova_fit import drop_missing, refuse_pooled

__all__ = ["MixedDesign", "mixed_design"]

# --------------------------------------------------------------------------------------------
# design


def resolve_spec(model: str | ModelSpec, columns: list[str],
                 data: pd.DataFrame | None = None) -> ModelSpec:
    """Formula, preset or ModelSpec to a ModelSpec; with ``data``, numeric covariates of the
    fixed part are marked (:func:`irmodels.models._design.classify`)."""
    spec = _design.resolve_model(model, columns)
    if data is not None and isinstance(data, pd.DataFrame):
        spec = _design.classify(spec, data)
        for f in spec.covariates:  # refuse NaN/constant covariates before anything else
            _check_covariate_scale(_design.covariate_values(data, f), f)
    return spec


def refuse_slopes(spec: ModelSpec) -> None:
    """Refuse random slopes ``(1 + x|g)`` in the staged intercept-only fit: ``irm.mixed`` fits
    them with the general engine (:mod:`irmodels.models._lmm`) before reaching this stage."""
    slopes = [r for r in spec.random if not r.is_intercept_only]
    if slopes:
        raise DesignError(
            f"the staged fit (mixed_design -> deviance_function -> optimize_deviance) takes "
            f"random intercepts (1|group) only; the term {slopes[0]} has a random slope "
            f"({', '.join(slopes[0].effects)}). Fit it with irm.mixed, which routes random "
            "slopes to the general engine (irmodels.models._lmm.fit_lmm)."
        )


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


def encode_levels(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of the observed levels (categorical order, else natural order)."""
    codes, levels = _design.encode(col)
    return codes, [str(v) for v in levels]


def group_codes(codes: dict[str, np.ndarray], levels: dict[str, list[str]],
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
    #: rows :func:`mixed_design` dropped for a missing value (``missing="drop"``)
    n_dropped: int = 0

    @property
    def residual_name(self) -> str | None:
        return ":".join(self.residual) if self.residual else None


def fixed_design(spec: ModelSpec, codes: dict[str, np.ndarray], levels: dict[str, list[str]],
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


def check_response_varies(y: np.ndarray, spec: ModelSpec) -> None:
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


def check_exact_fit(spec: ModelSpec, y: np.ndarray, sigma2: float) -> None:
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
           drop_degenerate: bool) -> tuple[MixedDesign, pd.DataFrame]:
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")
    if not spec.random:
        raise FormulaError(
            "irm.mixed needs at least one random term such as (1|topic); for a model with fixed "
            "effects only use irm.anova", spec.formula, (0, len(spec.formula)),
        )
    factors = [f for f in spec.factors if spec.expression(f) is None]  # log(x): values, no codes
    factors += [f for f in (residual or ()) if f not in factors]
    missing = [f for f in [*factors, *spec.columns] if f not in data.columns]
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
    check_response_varies(y, spec)
    if residual is not None:
        codes0 = {}
        levels0 = {}
        for f in residual:
            codes0[f], levels0[f] = encode_levels(data[f])
        strata, labels = group_codes(codes0, levels0, residual, order="data")
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
        codes[f], levels[f] = encode_levels(data[f])
    fixed_names, term_of, X_idx, X_val = fixed_design(spec, codes, levels, n, data)
    random_codes, random_labels = [], []
    fixed_keys = [t.key for t in spec.fixed]
    for rt in spec.random:
        gc, gl = group_codes(codes, levels, rt.factors)
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
        strata_idx, labels_s = group_codes(codes0, {f: levels[f] for f in residual}, residual,
                                      order="data")
    design = MixedDesign(spec, y, codes, levels, fixed_names, [], X_idx, X_val, random_codes,
                     random_labels, strata_idx, labels_s, term_of)
    return design, data


def stratum_sd(y: np.ndarray, s: np.ndarray, n_strata: int) -> np.ndarray:
    """SD of the response around its stratum mean, per stratum (floored at a tiny positive)."""
    n_s = np.bincount(s, minlength=n_strata).astype(float)
    mean = np.bincount(s, weights=y, minlength=n_strata) / np.maximum(n_s, 1)
    ss = np.bincount(s, weights=(y - mean[s]) ** 2, minlength=n_strata)
    sd = np.sqrt(ss / np.maximum(n_s - 1, 1))
    return np.maximum(sd, 1e-8 * max(float(sd.max()), 1e-300))


def check_rank(pb: _reml.Problem, names: list[str], design: MixedDesign | None = None) -> None:
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


def check_residual_df(pb: _reml.Problem, design: MixedDesign) -> None:
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


def coding_row(spec: ModelSpec, levels: dict[str, list[str]], assign: dict[str, int],
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
# the stages of a fit (lme4's lFormula -> mkLmerDevfun -> optimizeLmer -> mkMerMod)


def model_columns(model: str | ModelSpec, data: pd.DataFrame, residual: str | None = None
                  ) -> tuple[str, ...]:
    """The data columns a mixed model reads: the formula's (:attr:`ModelSpec.columns`: response,
    factors, covariates, the columns of expressions, grouping factors) and ``residual``'s."""
    spec = _design.resolve_model(model, list(map(str, data.columns)))
    extra = (tuple(p.strip() for p in residual.replace("*", ":").split(":"))
             if isinstance(residual, str) else ())
    return (*spec.columns, *spec.factors, *extra)


def mixed_design(model: str | ModelSpec, data: pd.DataFrame, *, residual: str | None = None,
                 drop_degenerate: bool = False, missing: str = "raise") -> MixedDesign:
    """Stage 1 (lme4's ``lFormula``): resolve the formula, check and encode the data.

    Raises the data and design errors of :func:`mixed` (bad columns, degenerate strata,
    confounded or one-level random terms, a constant response). ``missing="drop"`` leaves out
    the rows with a missing value in a column the model uses, as :func:`mixed` does (their
    number is ``design.n_dropped``).
    """
    if not isinstance(data, pd.DataFrame):
        raise DataFormatError(f"data must be a pandas DataFrame; got {type(data).__name__}")

    data, n_dropped, _ = drop_missing(data, model_columns(model, data, residual), missing,
                                      "irm.mixed")
    spec = resolve_spec(model, list(map(str, data.columns)), data)
    refuse_slopes(spec)

    refuse_pooled(data, set(spec.factors) | {f for rt in spec.random for f in rt.factors}
                  | ({residual} if isinstance(residual, str) else set()))
    res_factors = _parse_residual(residual, data)
    design, used = _build(spec, data, res_factors, drop_degenerate)
    design.data = used
    design.residual = res_factors
    design.n_dropped = n_dropped
    return design


