"""Seeded generator of the small designs behind tests/reference/anova.R.

Run from anywhere: ``python tests/reference/make_anova_data.py``. Writes CSVs (long format:
factor columns, then ``score``) into ``tests/reference/data/``; the R script reads them and
writes ``anova.json``. Rerunning gives byte-identical files (numpy's PCG64 with a fixed seed,
scores rounded to 6 decimals so R and Python read the same numbers).
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data"
SEED = 20191107


def _grid(**levels: int) -> pd.DataFrame:
    names = list(levels)
    rows = list(product(*[range(n) for n in levels.values()]))
    df = pd.DataFrame(rows, columns=names)
    prefix = {"topic": "t", "system": "s", "shard": "k", "sample": "r"}
    for c in names:
        df[c] = [f"{prefix[c]}{v + 1:02d}" for v in df[c]]
    return df


def _scores(df: pd.DataFrame, rng: np.random.Generator, effects: dict[str, float]) -> np.ndarray:
    y = np.full(len(df), 0.4)
    for col, scale in effects.items():
        cols = col.split(":")
        key = df[cols].astype(str).agg("|".join, axis=1)
        uniq = sorted(key.unique())
        eff = dict(zip(uniq, rng.normal(0, scale, len(uniq))))
        y += key.map(eff).to_numpy()
    y += rng.normal(0, 0.08, len(df))
    return np.round(y, 6)


def main() -> None:
    rng = np.random.default_rng(SEED)
    OUT.mkdir(exist_ok=True)
    # 1. balanced two factors with replication: 4 topics x 3 systems x 3 samples
    d = _grid(topic=4, system=3, sample=3)
    d["score"] = _scores(d, rng, {"topic": 0.15, "system": 0.05, "topic:system": 0.04})
    d.to_csv(OUT / "anova_balanced2.csv", index=False)
    # 2. balanced MD6-like: 6 topics x 5 systems x 3 shards, one row per cell
    d = _grid(topic=6, system=5, shard=3)
    d["score"] = _scores(
        d, rng, {"topic": 0.15, "system": 0.06, "shard": 0.02, "topic:system": 0.05,
                 "topic:shard": 0.04, "system:shard": 0.01}
    )
    d.to_csv(OUT / "anova_balanced3.csv", index=False)
    # 3. unbalanced, empty cells: 5 topics x 4 systems x 2 samples, 4 cells and 3 rows removed
    d = _grid(topic=5, system=4, sample=2)
    d["score"] = _scores(d, rng, {"topic": 0.15, "system": 0.06, "topic:system": 0.05})
    cells = d["topic"] + "|" + d["system"]
    empty = {"t01|s02", "t03|s04", "t04|s01", "t05|s03"}
    d = d[~cells.isin(empty)]
    drop = rng.choice(d.index.to_numpy(), size=3, replace=False)
    d = d.drop(index=drop)
    d.to_csv(OUT / "anova_missing_cells.csv", index=False)
    # 4. unbalanced, every cell observed 1-3 times: 4 topics x 3 systems x 2 shards
    d = _grid(topic=4, system=3, shard=2)
    reps = rng.integers(1, 4, size=len(d))
    d = d.loc[d.index.repeat(reps)].reset_index(drop=True)
    d["sample"] = d.groupby(["topic", "system", "shard"]).cumcount() + 1
    d["sample"] = [f"r{v:02d}" for v in d["sample"]]
    d["score"] = _scores(
        d, rng, {"topic": 0.15, "system": 0.06, "shard": 0.03, "topic:system": 0.05,
                 "topic:shard": 0.03, "system:shard": 0.02}
    )
    d.to_csv(OUT / "anova_unequal_reps.csv", index=False)


if __name__ == "__main__":
    main()
