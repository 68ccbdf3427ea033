"""Benchmark: all 8,256 system pairs of TREC-8 ad hoc AP (129 systems x 50 topics).

irmodels' vectorised ``irm.pairwise`` against the obvious alternative, scipy called once per
pair (``scipy.stats.ttest_rel``, ``wilcoxon``; ``permutation_test`` timed on a sample of pairs
and extrapolated). Checks that the p-values agree, prints times and ratios.

Run from the repository root: ``python benchmarks/pairwise.py`` (reads
``../shared/data/ir-scores/adhoc8_ap.csv`` or ``$IRM_DATA_MIRROR/adhoc8_ap.csv``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from _timing import best_of
from scipy import stats

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("IRM_DATA_MIRROR", ROOT.parent / "shared" / "data" / "ir-scores"))
B = 10_000


def timed(fn, repeat: int = 1):
    return best_of(fn, repeat)


def main() -> None:
    wide = pd.read_csv(MIRROR / "adhoc8_ap.csv")
    data = irm.from_wide(wide)
    X = wide.to_numpy()
    ia, ib = np.triu_indices(X.shape[1], k=1)
    P = len(ia)
    print(f"TREC-8 ad hoc AP: {X.shape[0]} topics x {X.shape[1]} systems = {P} pairs; "
          f"{os.cpu_count()} cores\n")
    rows = []

    t_irm, res = timed(lambda: irm.pairwise(data, "t"), 3)
    t_sp, p_sp = timed(lambda: np.array([stats.ttest_rel(X[:, a], X[:, b]).pvalue
                                         for a, b in zip(ia, ib)]))
    # scipy gives NaN for the pairs of identical systems (irmodels: p = 1); compare the rest
    rows.append(("paired t", t_irm, t_sp, np.nanmax(np.abs(res["p"].to_numpy() - p_sp))))

    t_irm, res = timed(lambda: irm.pairwise(data, "wilcoxon"), 3)
    # every pair has 50 topics or zeros, so R (and irmodels) use the normal approximation
    # with continuity and tie corrections, as scipy's method="approx", correction=True
    t_sp, p_sp = timed(lambda: np.array([
        stats.wilcoxon(X[:, a], X[:, b], zero_method="wilcox", correction=True,
                       method="approx").pvalue if np.any(X[:, a] != X[:, b]) else 1.0
        for a, b in zip(ia, ib)]))
    rows.append(("Wilcoxon signed-rank", t_irm, t_sp, np.abs(res["p"].to_numpy() - p_sp).max()))

    t_irm, res = timed(lambda: irm.pairwise(data, "sign"), 3)
    t_sp, p_sp = timed(lambda: np.array([
        stats.binomtest(int(np.sum(X[:, a] > X[:, b])), int(np.sum(X[:, a] != X[:, b]))).pvalue
        if np.any(X[:, a] != X[:, b]) else 1.0 for a, b in zip(ia, ib)]))
    rows.append(("sign", t_irm, t_sp, np.abs(res["p"].to_numpy() - p_sp).max()))

    # resampling: scipy.stats.permutation_test per pair, timed on 40 pairs and extrapolated
    sample = np.random.default_rng(0).choice(P, 40, replace=False)

    def scipy_perm(idx):
        return np.array([stats.permutation_test(
            (X[:, ia[k]] - X[:, ib[k]],), np.mean, permutation_type="samples", n_resamples=B,
            vectorized=True, random_state=1).pvalue for k in idx])

    t_irm, res = timed(lambda: irm.pairwise(data, "randomization", n_resamples=B, seed=1))
    t_sp, p_sp = timed(lambda: scipy_perm(sample))
    t_sp *= P / len(sample)
    rows.append((f"randomization, B={B} (scipy extrapolated from 40 pairs)", t_irm, t_sp,
                 np.abs(res["p"].to_numpy()[sample] - p_sp).max()))

    t_irm, res = timed(lambda: irm.pairwise(data, "bootstrap", n_resamples=B, seed=1))
    rows.append((f"shifted bootstrap + basic CI, B={B}", t_irm, np.nan, np.nan))

    t_irm, res = timed(lambda: irm.pairwise(data, "t", adjust="tukey", n_resamples=B, seed=1))
    rows.append((f"randomised Tukey HSD, B={B}", t_irm, np.nan, np.nan))

    width = max(len(r[0]) for r in rows)
    print(f"{'test':{width}}  irmodels (s)  scipy loop (s)   ratio  max |p diff|")
    for name, a, b, d in rows:
        ratio = f"{b / a:7.0f}x" if np.isfinite(b) else "       -"
        bs = f"{b:14.2f}" if np.isfinite(b) else f"{'-':>14}"
        ds = f"{d:.1e}" if np.isfinite(d) else "-"
        print(f"{name:{width}}  {a:12.3f}  {bs}  {ratio}  {ds}")


if __name__ == "__main__":
    main()
