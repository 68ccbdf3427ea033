"""The computations behind :mod:`irmodels.stats.gtheory`: the crossed random-effects
ANOVA estimates of the G-study variance components (two facets, or three with shards or
samples), their truncation at zero, and the D-study's step-up and interval helpers.
References: docs/methods.md: "Variance components"; Brennan, *Generalizability Theory* (2001),
ch. 3-6.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irmodels.errors import (
    DataFormatError,
    DataQualityWarning,
    DesignError,
    NegativeVarianceWarning,
)
from irmodels.stats.effects import rounding_noise

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.stats.gtheory import GStudy


#: canonical order of the facets; interaction names join their factors in this order
_FACET_ORDER = ("topic", "system", "shard", "sample")
DSTUDY_COLUMNS = ["topics", "Erho2", "Erho2_lower", "Erho2_upper", "Phi", "Phi_lower", "Phi_upper"]


def term_name(factors: Sequence[str]) -> str:
    order = {f: i for i, f in enumerate(_FACET_ORDER)}
    return ":".join(sorted(factors, key=lambda f: (order.get(f, len(order)), f)))


def level_codes(col: pd.Series) -> tuple[np.ndarray, int]:
    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    cat = cat.cat.remove_unused_categories()
    return cat.cat.codes.to_numpy().astype(np.int64), len(cat.cat.categories)


def dense_scores(data: pd.DataFrame, factors: Sequence[str]) -> np.ndarray:
    """Scores as a dense array with one axis per factor; raise unless exactly one per cell."""
    codes, shape = [], []
    for f in factors:
        c, n = level_codes(data[f])
        codes.append(c)
        shape.append(n)
    flat = np.ravel_multi_index(codes, shape)
    size = int(np.prod(shape))
    counts = np.bincount(flat, minlength=size)
    if counts.min() != 1 or counts.max() != 1:
        missing = int((counts == 0).sum())
        extra = int((counts > 1).sum())
        raise DesignError(
            f"a G-study from data needs exactly one score per ({', '.join(factors)}) cell; "
            f"found {missing} empty and {extra} repeated cell(s) out of {size}. Balance the "
            "data (irm.balance shows the gaps), average the replicates, or fit irm.mixed(...) "
            "and pass its result."
        )
    out = np.empty(size)
    out[flat] = data["score"].to_numpy(dtype=float)
    return out.reshape(shape)


def truncate_negative(var: dict[str, float], stacklevel: int) -> dict[str, float]:
    negative = {k: v for k, v in var.items() if v < 0}
    if negative:
        shown = ", ".join(f"{k} = {v:.4g}" for k, v in negative.items())
        warnings.warn(
            f"negative variance estimate(s) set to 0: {shown}. Moment estimates can fall below "
            "zero when a component is small; the D-study treats it as 0 (a REML fit with "
            "irm.mixed keeps estimates on the boundary instead).",
            NegativeVarianceWarning,
            stacklevel=stacklevel,
        )
    return {k: max(0.0, float(v)) for k, v in var.items()}


def warn_degenerate(gs: GStudy, stacklevel: int) -> None:
    """Warn when the relative error variance is 0: Erho2 is 1, or 0/0 (NaN) without system
    variance."""
    var_s = gs._var("system")
    rel = gs._errors(1, 1)[0]
    if rel > 0:
        return
    if var_s > 0:
        warnings.warn(
            "the relative error variance is 0 (every mean square but the systems' and the "
            "topics' is 0 up to rounding): on every topic the systems differ by the same "
            "amounts, a perfect additive fit. Erho2 and rho_I are 1 for any number of topics; "
            "check for runs that are shifted copies of each other.",
            DataQualityWarning, stacklevel=stacklevel)
        return
    warnings.warn(
        "the systems do not differ: the system variance and the relative error variance are "
        "both 0 (the systems have the same score on every topic, up to rounding), so Erho2 and "
        "rho_I are 0/0 and reported as NaN, and topics_needed for Erho2 raises. Check for "
        "duplicated runs or a measure that does not vary across systems.",
        DataQualityWarning, stacklevel=stacklevel)


def components_frame(var: dict[str, float]) -> pd.DataFrame:
    values = np.array(list(var.values()), dtype=float)
    total = values.sum()
    if not total > 0:
        raise DesignError(
            "every variance component is 0 (the scores do not vary): the shares of variance "
            "and the coefficients (Erho2, Phi) are undefined. Check the measure or the fit."
        )
    share = values / total
    out = pd.DataFrame(
        {"variance": values, "sd": np.sqrt(values), "share": share},
        index=pd.Index(list(var.keys()), name="component"),
    )
    return out


def check_scores(y: np.ndarray) -> None:
    """Refuse missing, infinite or constant scores (no variance to decompose)."""
    bad = int((~np.isfinite(y)).sum())
    if bad:
        raise DataFormatError(
            f"{bad} score(s) of {y.size} are missing or infinite; a G-study needs a finite "
            "score in every cell. Drop or impute them first (irm.frame(..., nan='drop'))."
        )
    if float(np.max(y)) == float(np.min(y)):
        raise DesignError(
            f"all {y.size} scores are equal ({float(y.flat[0]):g}); there is no variance to "
            "decompose, so the shares and the coefficients (Erho2, Phi) are undefined. Check "
            "the measure (e.g. 0 for every run) or pick another one."
        )


def _mean_squares(ss: dict[str, float], df: dict[str, int], y: np.ndarray) -> dict[str, float]:
    """Mean squares ``SS / df``; a sum of squares within rounding noise of 0 (see
    :func:`irmodels.stats.effects.rounding_noise`) is exactly 0."""
    noise = rounding_noise(np.fromiter(ss.values(), dtype=float, count=len(ss)), y)
    return {k: (0.0 if z else v) / df[k] for (k, v), z in zip(ss.items(), noise)}


def check_sided(sided: str) -> None:
    if sided not in ("two", "lower", "upper"):
        raise DesignError(f"sided must be 'two', 'lower' or 'upper'; got {sided!r}")


def two_way(y: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """Mean squares and EMS components of a system x topic array (axis 0 systems)."""
    n_s, n_t = y.shape
    grand = y.mean()
    m_s = y.mean(axis=1)
    m_t = y.mean(axis=0)
    resid = y - m_s[:, None] - m_t[None, :] + grand
    ss = {
        "system": n_t * float(((m_s - grand) ** 2).sum()),
        "topic": n_s * float(((m_t - grand) ** 2).sum()),
        "Residual": float((resid**2).sum()),
    }
    ms = _mean_squares(
        ss, {"system": n_s - 1, "topic": n_t - 1, "Residual": (n_s - 1) * (n_t - 1)}, y)
    var = {
        "system": (ms["system"] - ms["Residual"]) / n_t,
        "topic": (ms["topic"] - ms["Residual"]) / n_s,
        "Residual": ms["Residual"],
    }
    return ms, var


def three_way(y: np.ndarray, facet: str) -> tuple[dict[str, float], dict[str, float]]:
    """Mean squares and EMS components of a system x topic x facet array, all random."""
    n_s, n_t, n_h = y.shape
    g = y.mean()
    m_s, m_t, m_h = y.mean(axis=(1, 2)), y.mean(axis=(0, 2)), y.mean(axis=(0, 1))
    m_st, m_sh, m_th = y.mean(axis=2), y.mean(axis=1), y.mean(axis=0)
    e_st = m_st - m_s[:, None] - m_t[None, :] + g
    e_sh = m_sh - m_s[:, None] - m_h[None, :] + g
    e_th = m_th - m_t[:, None] - m_h[None, :] + g
    e = (
        y
        - m_st[:, :, None] - m_sh[:, None, :] - m_th[None, :, :]
        + m_s[:, None, None] + m_t[None, :, None] + m_h[None, None, :]
        - g
    )
    st, sh, th = "topic:system", term_name(["system", facet]), term_name(["topic", facet])
    ss = {
        "system": n_t * n_h * float(((m_s - g) ** 2).sum()),
        "topic": n_s * n_h * float(((m_t - g) ** 2).sum()),
        facet: n_s * n_t * float(((m_h - g) ** 2).sum()),
        st: n_h * float((e_st**2).sum()),
        sh: n_t * float((e_sh**2).sum()),
        th: n_s * float((e_th**2).sum()),
        "Residual": float((e**2).sum()),
    }
    df = {"system": n_s - 1, "topic": n_t - 1, facet: n_h - 1, st: (n_s - 1) * (n_t - 1),
          sh: (n_s - 1) * (n_h - 1), th: (n_t - 1) * (n_h - 1),
          "Residual": (n_s - 1) * (n_t - 1) * (n_h - 1)}
    ms = _mean_squares(ss, df, y)
    v_e = ms["Residual"]
    var = {
        "system": (ms["system"] - ms[st] - ms[sh] + v_e) / (n_t * n_h),
        "topic": (ms["topic"] - ms[st] - ms[th] + v_e) / (n_s * n_h),
        facet: (ms[facet] - ms[sh] - ms[th] + v_e) / (n_s * n_t),
        st: (ms[st] - v_e) / n_h,
        sh: (ms[sh] - v_e) / n_t,
        th: (ms[th] - v_e) / n_s,
        "Residual": v_e,
    }
    return ms, var


def draw_limits(gs: GStudy, out: pd.DataFrame, alpha: float, sided: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Percentile limits of Erho2 and Phi over the bootstrap draws of the components."""
    draws = gs.component_draws
    assert draws is not None
    e = np.full((len(draws), len(out)), np.nan)
    p = np.full_like(e, np.nan)
    for b, row in enumerate(draws.itertuples(index=False)):
        g = replace(gs, components=components_frame(dict(zip(draws.columns, row))),
                    component_draws=None)
        for i, (t, h) in enumerate(zip(out["topics"], out["shards"])):
            rel, absolute = g._errors(t, h)
            e[b, i] = coefficient(g._var("system"), rel)
            p[b, i] = coefficient(g._var("system"), absolute)
    tail = alpha / 2 if sided == "two" else alpha
    n = len(out)
    lo_e, lo_p = ((np.nanquantile(e, tail, axis=0), np.nanquantile(p, tail, axis=0))
                  if sided in ("two", "lower") else (np.zeros(n), np.zeros(n)))
    up_e, up_p = ((np.nanquantile(e, 1 - tail, axis=0), np.nanquantile(p, 1 - tail, axis=0))
                  if sided in ("two", "upper") else (np.ones(n), np.ones(n)))
    return lo_e, up_e, lo_p, up_p


def coefficient(var_s: float, err: float) -> float:
    total = var_s + err
    return var_s / total if total > 0 else float("nan")


def step_up(ratio: float, phi1: float, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    erho2 = np.ones_like(n) if math.isinf(ratio) else n * ratio / (1 + n * ratio)
    phi = n * phi1 / (1 + (n - 1) * phi1)
    return np.clip(erho2, 0.0, 1.0), np.clip(phi, 0.0, 1.0)


def ceil_count(x: float) -> int:
    # guard against 85.00000000001 from rounding when the exact answer is an integer
    return max(1, int(math.ceil(x - 1e-9 * max(1.0, abs(x)))))


def as_counts(value: int | Sequence[int], what: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not (np.isscalar(value) or isinstance(value, Iterable)):
        raise DesignError(f"{what} must be a positive whole number or a list of them; got "
                          f"{value!r}")
    values: list[Any] = [value] if np.isscalar(value) else list(value)  # type: ignore[arg-type]
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) \
                or not math.isfinite(float(v)) or not float(v).is_integer() or v < 1:
            raise DesignError(f"{what} must be positive whole numbers; got {v!r}")
        out.append(int(float(v)))
    if not out:
        raise DesignError(f"{what} is empty; give at least one number")
    return out
