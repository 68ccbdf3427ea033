"""Random unbalanced topic x system x shard designs shared by the least-squares tests (the sparse
path, tests/models/test_sparse_lsq.py, and the small dense path, tests/models/test_anova_small.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def random_design(seed: int, t: int, s: int, k: int, reps: int, drop: float) -> pd.DataFrame:
    """``t`` topics x ``s`` systems x ``k`` shards x ``reps`` replicates with topic and system
    effects and noise (seeded), a share ``drop`` of the rows removed at random."""
    rng = np.random.default_rng(seed)
    d = pd.MultiIndex.from_product(
        [[f"t{i}" for i in range(t)], [f"s{i}" for i in range(s)], [f"k{i}" for i in range(k)],
         range(reps)], names=["topic", "system", "shard", "rep"]).to_frame(index=False)
    ti = d["topic"].str[1:].astype(int).to_numpy()
    si = d["system"].str[1:].astype(int).to_numpy()
    d["score"] = (rng.normal(0, 0.2, t)[ti] + rng.normal(0, 0.1, s)[si]
                  + rng.normal(0, 0.05, len(d))).round(4)
    keep = rng.uniform(size=len(d)) > drop
    return d[keep].reset_index(drop=True)
