"""Benchmark: the comparison table of TREC-8 ad hoc (129 runs x 50 topics, AP, P@10, RR).

``irm.compare`` (Tukey HSD of the two-way topic + system model of each measure; and Holm-adjusted
paired t tests) against what ``ranx.compare``-style code does: statsmodels' one-way
``pairwise_tukeyhsd`` per measure (each run's scores an independent group, no topic blocking)
and unadjusted ``scipy.stats.ttest_rel`` per pair. Prints times, ratios and how many pairs each
approach calls significant (statsmodels' one-way Tukey, minutes per measure with 129 groups, on
AP only; it loses the pairs that only the blocking on topics
reveals; unadjusted t tests call far more).

Run from the repository root: ``python benchmarks/compare.py`` (reads ``adhoc8_*.csv`` from
``$IRM_DATA_MIRROR`` or ``../shared/data/ir-scores``).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pandas as pd
from _timing import best_of
from scipy import stats

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("IRM_DATA_MIRROR", ROOT.parent / "shared" / "data" / "ir-scores"))
FILES = {"AP": "adhoc8_ap.csv", "P@10": "adhoc8_p10.csv", "RR": "adhoc8_rr.csv"}


def timed(fn, repeat: int = 3):
    return best_of(fn, repeat)


def main() -> None:
    wides = {m: pd.read_csv(MIRROR / f) for m, f in FILES.items()}
    data = pd.concat([irm.from_wide(w).assign(measure=m) for m, w in wides.items()],
                     ignore_index=True)
    t_tukey, res = timed(lambda: irm.compare(data))
    t_t, res_t = timed(lambda: irm.compare(data, test="t", adjust="holm"))
    t_ap, _ = timed(lambda: irm.compare(data, measures=["AP"]))

    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    def one_way() -> dict[str, int]:  # AP only: statsmodels needs minutes per measure here
        long = wides["AP"].melt(var_name="system", value_name="score")
        return {"AP": int(pairwise_tukeyhsd(long["score"], long["system"]).reject.sum())}

    def unadjusted_t() -> dict[str, int]:
        out = {}
        for m, w in wides.items():
            X = w.to_numpy()
            n = 0
            for i, j in itertools.combinations(range(X.shape[1]), 2):
                n += stats.ttest_rel(X[:, i], X[:, j]).pvalue < 0.05
            out[m] = int(n)
        return out

    t_ow, ow = timed(one_way, 1)
    t_ut, ut = timed(unadjusted_t, 1)
    pairs = 129 * 128 // 2
    print(f"TREC-8 ad hoc, 129 runs x 50 topics, {len(FILES)} measures, {pairs} pairs each")
    print(f"irm.compare, Tukey HSD (topic-blocked):   {t_tukey:7.2f} s")
    print(f"irm.compare, paired t + Holm:             {t_t:7.2f} s")
    print(f"irm.compare, Tukey HSD, AP only:          {t_ap:7.2f} s")
    print(f"statsmodels one-way pairwise_tukeyhsd, AP: {t_ow:6.2f} s  "
          f"(ratio {t_ow / t_ap:.1f}x)")
    print(f"scipy ttest_rel per pair, unadjusted:     {t_ut:7.2f} s  "
          f"(ratio {t_ut / t_t:.1f}x)")
    print("significant pairs per measure:")
    for m in FILES:
        n_tk = len(res.significant_pairs(m))
        n_t = len(res_t.significant_pairs(m))
        one = f"{ow[m]:5d}" if m in ow else "    -"
        print(f"  {m:5s} Tukey blocked {n_tk:5d} | one-way Tukey {one} | "
              f"t + Holm {n_t:5d} | t unadjusted {ut[m]:5d}")


if __name__ == "__main__":
    main()
