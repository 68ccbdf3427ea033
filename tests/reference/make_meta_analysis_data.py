"""Write ``meta_analysis_trec.csv``: one system difference per public TREC collection (AP).

For each collection with an AP matrix in ``irm.datasets`` (runs differ between collections), the
difference between the collection's best run and its median run (by mean AP; the median is the
run at position ``(n - 1) // 2`` when the runs are sorted by mean AP, ties by name): the
estimate is the mean of the per-topic paired differences and its sampling variance their
variance (``ddof=1``) divided by the number of topics. ``meta_analysis.R`` pools these with
metafor.

Run from ``tests/reference/`` with ``IRM_DATA_MIRROR`` pointing at the shared scores:
``python make_meta_analysis_data.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm

COLLECTIONS = ("adhoc3", "adhoc5", "adhoc6", "adhoc7", "adhoc8", "robust2004", "terabyte2006",
               "web2010", "web2011", "web2012", "web2013", "web2014")


def best_minus_median(collection: str) -> tuple[float, float, int]:
    """(mean of the paired differences, their variance / n, n topics) for one collection."""
    wide = irm.to_wide(irm.datasets.load(collection, "AP"))
    means = wide.mean(axis=0)
    order = sorted(means.index, key=lambda s: (-means[s], str(s)))
    best, median = order[0], order[(len(order) - 1) // 2]
    d = (wide[best] - wide[median]).to_numpy(dtype=float)
    return float(d.mean()), float(d.var(ddof=1) / len(d)), len(d)


def main() -> None:
    rows = []
    for c in COLLECTIONS:
        est, var, n = best_minus_median(c)
        rows.append({"collection": c, "estimate": est, "variance": var, "topics": n})
    out = Path(__file__).with_name("meta_analysis_trec.csv")
    pd.DataFrame(rows).to_csv(out, index=False, float_format="%.17g")
    print(f"wrote {out}")


if __name__ == "__main__":
    np.seterr(all="raise")
    main()
