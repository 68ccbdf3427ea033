"""Seeded generator of the unbalanced designs behind tests/reference/emmeans.R and dunnett.R.

Run from anywhere: ``python tests/reference/make_lsmeans_data.py``. Writes CSVs (``topic,
system[, shard], score``) into ``tests/reference/data/``; rerunning gives identical files (PCG64
with a fixed seed, scores rounded to 6 decimals so R and Python read the same numbers).

- ``lsm_md1_missing.csv``: 12 topics x 6 systems, one score per cell, 7 cells removed
  (model MD1, ``score ~ topic + system``).
- ``lsm_shards.csv``: 10 topics x 5 systems x 3 shards with about 20% of the rows removed at
  random (unequal replication, no empty topic x system cell): MD2/MD3-like models.
- ``lsm_balanced.csv``: 8 topics x 5 systems x 2 shards, complete (balanced Dunnett).
- ``lsm_covariate.csv``: 10 topics x 4 systems x 2 replicates with a numeric covariate ``qlen``
  and 9 rows removed (least-squares means at the covariate's mean, as emmeans).
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data"
SEED = 20261122


def _grid(topics: int, systems: int, shards: int | None) -> pd.DataFrame:
    axes = [range(topics), range(systems)] + ([range(shards)] if shards else [])
    names = ["topic", "system"] + (["shard"] if shards else [])
    d = pd.DataFrame(list(product(*axes)), columns=names)
    d["topic"] = [f"t{v + 1:02d}" for v in d["topic"]]
    d["system"] = [f"s{v + 1}" for v in d["system"]]
    if shards:
        d["shard"] = [f"k{v + 1}" for v in d["shard"]]
    return d


def _scores(d: pd.DataFrame, rng: np.random.Generator, inter: float) -> np.ndarray:
    t = d["topic"].str[1:].astype(int).to_numpy() - 1
    s = d["system"].str[1:].astype(int).to_numpy() - 1
    nt, ns = t.max() + 1, s.max() + 1
    y = 0.3 + rng.normal(0, 0.12, nt)[t] + np.linspace(0, 0.08, ns)[s]
    y += rng.normal(0, inter, (nt, ns))[t, s]
    if "shard" in d:
        k = d["shard"].str[1:].astype(int).to_numpy() - 1
        y += rng.normal(0, 0.03, k.max() + 1)[k]
    y += rng.normal(0, 0.04, len(d))
    return np.round(y, 6)


def main() -> None:
    rng = np.random.default_rng(SEED)
    OUT.mkdir(exist_ok=True)
    d = _grid(12, 6, None)
    d["score"] = _scores(d, rng, 0.0)
    drop = rng.choice(len(d), size=7, replace=False)
    d.drop(index=drop).to_csv(OUT / "lsm_md1_missing.csv", index=False)

    d = _grid(10, 5, 3)
    d["score"] = _scores(d, rng, 0.04)
    keep = rng.uniform(size=len(d)) > 0.2
    cell = d["topic"] + "|" + d["system"]
    # keep at least one row of every topic x system cell
    first = ~cell.duplicated()
    d[keep | first.to_numpy()].to_csv(OUT / "lsm_shards.csv", index=False)

    d = _grid(8, 5, 2)
    d["score"] = _scores(d, rng, 0.03)
    d.to_csv(OUT / "lsm_balanced.csv", index=False)

    # a numeric covariate per row (query length like), effect differing by system
    d = _grid(10, 4, 2)
    d["qlen"] = np.round(rng.uniform(2, 12, len(d)), 3)
    s = d["system"].str[1:].astype(int).to_numpy() - 1
    d["score"] = np.round(_scores(d, rng, 0.02) + (0.01 + 0.004 * s) * d["qlen"], 6)
    d = d.drop(index=rng.choice(len(d), 9, replace=False))
    d.drop(columns="shard").to_csv(OUT / "lsm_covariate.csv", index=False)


if __name__ == "__main__":
    main()
