"""The unit of work of :func:`irmodels.studies.topic_set_study.topic_sets`: one batch of
pairs of topic sets, drawn and tested with a few array operations (the system means, the
covariance matrices behind the paired t statistics and the residual mean squares behind Tukey's
HSD of a whole batch at once); re-exported by :mod:`irmodels.studies.topic_set_study`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from irmodels.stats.paired import ESSENTIALLY_CONSTANT, wilcoxon_test
from irmodels.stats.resampling import resampling_test
from irmodels.stats.studentized import sf

__all__ = ["TopicSetContext", "pair_differences", "pair_pvalues", "rounding_tolerance",
           "run_unit", "t_table", "tukey_sf_table"]


# --------------------------------------------------------------------------------------------
# vectorised statistics of one batch of topic sets


# p-values are interpolated in z = x / (1 + x) (x = |t| or q >= 0), which maps [0, inf) onto
# [0, 1): dense where p changes fast, and covering every tail whatever the df
_Z = np.linspace(0.0, 1.0, 20001)[:-1]
_X = _Z / (1.0 - _Z)


def _interp(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    return np.interp(x / (1.0 + x), _Z, table, right=0.0)


def t_table(df: float, alpha: float) -> tuple[float, np.ndarray]:
    """Critical |t| and the two-sided p-value of a t statistic on the z grid."""
    return float(special.stdtrit(df, 1 - alpha / 2)), 2.0 * special.stdtr(df, -_X)


def tukey_sf_table(k: int, df: float) -> np.ndarray:
    """The studentized-range upper tail on the z grid (for the ASL curves)."""

    return np.asarray(sf(_X, k, df), dtype=np.float64)


@dataclass(frozen=True)
class TopicSetContext:
    X: np.ndarray  # topics x systems
    ia: np.ndarray
    ib: np.ndarray
    full_sign: np.ndarray  # sign of the full-set differences per pair
    method: str
    tests: tuple[str, ...]
    alpha: float
    bin_width: float
    n_bins: int
    n_resamples: int
    tukey: dict[int, tuple[float, np.ndarray]]  # size -> (critical q, sf on the z grid)
    t_tables: dict[int, tuple[float, np.ndarray]]  # size -> (critical |t|, p on the z grid)
    scale: float = 1.0  # largest |score|: the scale of the rounding error of a mean difference


def rounding_tolerance(scale: float, c: int) -> float:
    """The most rounding can move a difference of two means of ``c`` scores of at most
    ``scale`` (a generous bound: 8 (c + 1) eps scale). A difference within it is a tie, and a
    difference within it below a bin edge is on the edge: with a discrete measure (P@10 in
    tenths) the means differ by exact multiples of 1/(10 c), which floating point misses by an
    ulp either way."""
    return 8.0 * (c + 1) * float(np.finfo(float).eps) * scale


def pair_differences(m: np.ndarray, ia: np.ndarray, ib: np.ndarray, tol: float) -> np.ndarray:
    """``m[..., ia] - m[..., ib]`` with differences within ``tol`` of 0 set to exactly 0."""
    d = m[..., ia] - m[..., ib]
    d[np.abs(d) <= tol] = 0.0
    return d


def _draw(rng: np.random.Generator, method: str, T: int, c: int, n: int
          ) -> tuple[np.ndarray, np.ndarray]:
    if method == "disjoint":
        perm = rng.permuted(np.broadcast_to(np.arange(T), (n, T)), axis=1)
        return perm[:, :c], perm[:, c:2 * c]
    # X and Y of sample i are rows 2i and 2i + 1 of one draw, so that the first samples of a
    # batch do not depend on its size (a study with more samples extends one with fewer)
    if method == "subsample":
        rows = rng.permuted(np.broadcast_to(np.arange(T), (2 * n, T)), axis=1)[:, :c]
    else:
        rows = rng.integers(0, T, size=(2 * n, c))
    return rows[0::2], rows[1::2]


def pair_pvalues(ctx: TopicSetContext, S: np.ndarray, means: np.ndarray, d: np.ndarray, test: str,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """p-values and rejections (n x P) of every pair in every sample of a batch, and the
    number of degenerate tests among them (t or Tukey tests of a non-zero difference whose
    standard error is 0 up to rounding: t = +/-inf, counted significant as irm.pairwise does).

    ``S`` holds the batch's scores (n x c x R), ``means`` its system means, ``d`` the pairs'
    mean differences.
    """

    n, c, R = S.shape
    ia, ib = ctx.ia, ctx.ib
    if test == "t":
        centred = S - means[:, None, :]
        cov = np.matmul(centred.transpose(0, 2, 1), centred) / (c - 1)
        diag = np.einsum("nrr->nr", cov)
        var = np.maximum(diag[:, ia] + diag[:, ib] - 2.0 * cov[:, ia, ib], 0.0)
        se = np.sqrt(var / c)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = d / se
        t = np.where((se == 0) & (d == 0), 0.0, t)
        crit, table = ctx.t_tables[c]
        at = np.abs(t)
        # R's "essentially constant" test (irm.pairwise's): a set of one topic drawn c times
        degenerate = int(((se < ESSENTIALLY_CONSTANT * np.abs(d)) & (d != 0)).sum())
        return _interp(np.where(np.isfinite(at), at, 1e300), table), at >= crit, degenerate
    if test == "tukey":
        grand = means.mean(axis=1)
        tmeans = S.mean(axis=2)
        resid = S - means[:, None, :] - tmeans[:, :, None] + grand[:, None, None]
        mse = (resid**2).sum(axis=(1, 2)) / ((c - 1) * (R - 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.abs(d) / np.sqrt(mse / c)[:, None]
        q = np.where(np.abs(d) == 0, 0.0, q)
        crit, table = ctx.tukey[c]
        se = np.sqrt(mse / c)[:, None]
        degenerate = int(((se < ESSENTIALLY_CONSTANT * np.abs(d)) & (d != 0)).sum())
        return _interp(np.where(np.isfinite(q), q, 1e300), table), q > crit, degenerate
    p = np.empty_like(d)
    for k in range(n):
        D = S[k][:, ia] - S[k][:, ib]
        if test == "wilcoxon":
            p[k] = wilcoxon_test(D, "two-sided")["p"]
        else:
            p[k] = resampling_test("randomization", D, "two-sided", ctx.alpha,
                                   ctx.n_resamples, rng, None)[0]["p"]
    return p, p <= ctx.alpha, 0


def _tau_b(sign: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of pair signs against the reference signs."""
    num = (sign * ref[None, :]).sum(axis=1)
    den = np.sqrt((sign != 0).sum(axis=1) * float((ref != 0).sum()))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / den, np.nan)


def run_unit(ctx: TopicSetContext, unit: tuple[int, int, np.random.SeedSequence]) -> dict[str, Any]:
    c, n, seq = unit
    rng = np.random.default_rng(seq)
    T = ctx.X.shape[0]
    ix, iy = _draw(rng, ctx.method, T, c, n)
    SX, SY = ctx.X[ix], ctx.X[iy]  # n x c x R
    mX, mY = SX.mean(axis=1), SY.mean(axis=1)
    tol = rounding_tolerance(ctx.scale, c)
    dX = pair_differences(mX, ctx.ia, ctx.ib, tol)  # a tie is a tie, not a rounding error's sign
    dY = pair_differences(mY, ctx.ia, ctx.ib, tol)
    opposite = dX * dY < 0
    valid = dX != 0
    # a difference on a bin edge (k bin widths, an ulp short) belongs to bin k
    bins = np.minimum(((np.abs(dX) + tol) / ctx.bin_width).astype(np.int64), ctx.n_bins - 1)
    out: dict[str, Any] = {
        "n_pairs": np.bincount(bins[valid], minlength=ctx.n_bins),
        "n_swaps": np.bincount(bins[valid & opposite], minlength=ctx.n_bins),
        "tau": np.concatenate([_tau_b(np.sign(dX), ctx.full_sign),
                               _tau_b(np.sign(dY), ctx.full_sign)]),
    }
    for test in ctx.tests:
        pX, sX, gX = pair_pvalues(ctx, SX, mX, dX, test, rng)
        pY, sY, gY = pair_pvalues(ctx, SY, mY, dY, test, rng)
        both = sX & sY
        out[test] = {
            "n_sig": int(sX.sum() + sY.sum()),
            "both_same": int(2 * (both & ~opposite).sum()),
            "both_reversed": int(2 * (both & opposite).sum()),
            "swap_sig": int((sX & opposite).sum() + (sY & opposite).sum()),
            "asl": np.sort(pX, axis=1).sum(axis=0) + np.sort(pY, axis=1).sum(axis=0),
            "degenerate": gX + gY,
        }
    return out
