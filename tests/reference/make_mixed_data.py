"""Seeded data for the mixed-model fixtures (run from tests/reference/: python make_mixed_data.py).

Writes under ``data/``:

- ``mixed_crossed.csv``: 5 systems x 12 topics x 3 replicates, topic, system and topic:system
  effects plus noise (crossed models with replicates);
- ``mixed_crossed_unbalanced.csv``: the same with 10% of the rows removed at random;
- ``mixed_shards.csv``: 8 systems x 10 topics x 4 shards with topic, topic:system and
  topic:shard effects;
- ``mixed_shards_unbalanced.csv``: the same with 10% of the rows removed;
- ``mixed_hetero.csv``: 2 systems x 50 topics x 10 replicates whose noise SD differs by
  (topic, system) stratum (Robertson & Kanoulas' heteroscedastic model).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data"


def _labels(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i + 1:02d}" for i in range(n)]


def crossed(rng: np.random.Generator) -> pd.DataFrame:
    systems, topics, reps = _labels("s", 5), _labels("t", 12), 3
    a = rng.normal(0, 0.05, len(systems))
    t = rng.normal(0, 0.15, len(topics))
    ts = rng.normal(0, 0.06, (len(topics), len(systems)))
    rows = []
    for i, tp in enumerate(topics):
        for j, sy in enumerate(systems):
            for k in range(reps):
                y = 0.3 + a[j] + t[i] + ts[i, j] + rng.normal(0, 0.04)
                rows.append((tp, sy, k + 1, round(float(y), 6)))
    return pd.DataFrame(rows, columns=["topic", "system", "sample", "score"])


def shards(rng: np.random.Generator) -> pd.DataFrame:
    systems, topics, shards_ = _labels("s", 8), _labels("t", 10), _labels("h", 4)
    a = rng.normal(0, 0.04, len(systems))
    t = rng.normal(0, 0.12, len(topics))
    ts = rng.normal(0, 0.05, (len(topics), len(systems)))
    th = rng.normal(0, 0.07, (len(topics), len(shards_)))
    rows = []
    for i, tp in enumerate(topics):
        for j, sy in enumerate(systems):
            for k, sh in enumerate(shards_):
                y = 0.25 + a[j] + t[i] + ts[i, j] + th[i, k] + rng.normal(0, 0.05)
                rows.append((tp, sy, sh, round(float(y), 6)))
    return pd.DataFrame(rows, columns=["topic", "system", "shard", "score"])


def hetero(rng: np.random.Generator) -> pd.DataFrame:
    systems, topics, reps = ["s1", "s2"], _labels("t", 50), 10
    a = np.array([0.0, 0.08])
    t = rng.normal(0, 0.5, len(topics))
    ts = rng.normal(0, 0.15, (len(topics), len(systems)))
    sd = np.exp(rng.normal(np.log(0.2), 0.6, (len(topics), len(systems))))
    rows = []
    for i, tp in enumerate(topics):
        for j, sy in enumerate(systems):
            for k in range(reps):
                y = -1.0 + a[j] + t[i] + ts[i, j] + rng.normal(0, sd[i, j])
                rows.append((tp, sy, k + 1, round(float(y), 6)))
    return pd.DataFrame(rows, columns=["topic", "system", "sample", "score"])


def drop(df: pd.DataFrame, rng: np.random.Generator, fraction: float = 0.1) -> pd.DataFrame:
    keep = np.sort(rng.choice(len(df), size=len(df) - int(round(fraction * len(df))), replace=False))
    return df.iloc[keep].reset_index(drop=True)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(4)
    c = crossed(rng)
    c.to_csv(OUT / "mixed_crossed.csv", index=False)
    drop(c, rng).to_csv(OUT / "mixed_crossed_unbalanced.csv", index=False)
    s = shards(rng)
    s.to_csv(OUT / "mixed_shards.csv", index=False)
    drop(s, rng).to_csv(OUT / "mixed_shards_unbalanced.csv", index=False)
    hetero(rng).to_csv(OUT / "mixed_hetero.csv", index=False)


if __name__ == "__main__":
    main()
