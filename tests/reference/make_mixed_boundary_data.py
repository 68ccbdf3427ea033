"""Seeded data for the boundary-fit fixtures (run from tests/reference/:
python make_mixed_boundary_data.py; writes data/mixed_boundary.csv).

Small unbalanced topic x system x shard designs on which irm.mixed once stopped at a variance
component of 0 that was not the REML optimum: the deviance depends on a relative SD theta only
through theta**2, so its gradient is 0 on the bound and L-BFGS-B stopped wherever a step had
been clipped onto it (or the start was 0). lme4's derivative-free optimiser finds the better
interior optimum. Each design is one value of the ``design`` column:

- ``h<seed>``: random topic, system, topic:system and shard effects with SDs drawn from
  {0, 0.05, 0.2, 1}, noise SD 0.5, 5-50% of the rows removed at random;
- ``m1``: 6 topics x 4 systems x 3 shards with 20% of the rows removed (one random term).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data" / "mixed_boundary.csv"
SEEDS = (77, 84, 105, 107, 111)


def grid(T: int, S: int, K: int, seed: int, drop: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.MultiIndex.from_product(
        [[f"t{i}" for i in range(T)], [f"s{j}" for j in range(S)], [f"k{k}" for k in range(K)]],
        names=["topic", "system", "shard"]).to_frame(index=False)
    ti = d.topic.str[1:].astype(int).to_numpy()
    si = d.system.str[1:].astype(int).to_numpy()
    d["score"] = (rng.normal(0, 1, T)[ti] + np.arange(S)[si] * 0.2
                  + rng.normal(0, 0.3, (T, S))[ti, si] + rng.normal(0, 0.5, len(d)))
    if drop > 0:
        d = d[rng.uniform(size=len(d)) > drop]
    return d.reset_index(drop=True)


def hunted(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(1000 + seed)
    T, S, K = int(rng.integers(4, 12)), int(rng.integers(3, 6)), int(rng.integers(2, 4))
    d = grid(T, S, K, seed, float(rng.uniform(0.05, 0.5)))
    ti = d.topic.str[1:].astype(int).to_numpy()
    si = d.system.str[1:].astype(int).to_numpy()
    ki = d.shard.str[1:].astype(int).to_numpy()
    sdt, sdts, sdk = rng.choice([0, 0.05, 0.2, 1.0], 3)
    d["score"] = (rng.normal(0, sdt, T)[ti] + si * 0.1 + rng.normal(0, sdts, (T, S))[ti, si]
                  + rng.normal(0, sdk, K)[ki] + rng.normal(0, 0.5, len(d)))
    return d


def main() -> None:
    parts = [hunted(s).assign(design=f"h{s}") for s in SEEDS]
    parts.append(grid(6, 4, 3, 70, 0.2).assign(design="m1"))
    out = pd.concat(parts, ignore_index=True)[["design", "topic", "system", "shard", "score"]]
    out["score"] = out["score"].round(10)
    out.to_csv(OUT, index=False)
    print(f"wrote {OUT.name}: {len(out)} rows")


if __name__ == "__main__":
    main()
