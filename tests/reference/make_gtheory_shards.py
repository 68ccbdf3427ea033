"""Seeded generator of the system x topic x shard data set used by gtheory.R and the tests.

Run from tests/reference/: ``python make_gtheory_shards.py`` writes ``gtheory_shards.csv``
(8 systems x 10 topics x 4 shards, one score per cell, every variance component non-zero).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def main() -> None:
    rng = np.random.default_rng(20240613)
    n_s, n_t, n_h = 8, 10, 4
    sd = {"s": 0.06, "t": 0.15, "h": 0.05, "st": 0.07, "sh": 0.03, "th": 0.06, "e": 0.05}
    s = rng.normal(0, sd["s"], n_s)[:, None, None]
    t = rng.normal(0, sd["t"], n_t)[None, :, None]
    h = rng.normal(0, sd["h"], n_h)[None, None, :]
    st = rng.normal(0, sd["st"], (n_s, n_t))[:, :, None]
    sh = rng.normal(0, sd["sh"], (n_s, n_h))[:, None, :]
    th = rng.normal(0, sd["th"], (n_t, n_h))[None, :, :]
    e = rng.normal(0, sd["e"], (n_s, n_t, n_h))
    y = 0.4 + s + t + h + st + sh + th + e
    idx = np.indices((n_s, n_t, n_h)).reshape(3, -1)
    df = pd.DataFrame(
        {
            "topic": [f"t{i + 1}" for i in idx[1]],
            "system": [f"s{i + 1}" for i in idx[0]],
            "shard": [f"h{i + 1}" for i in idx[2]],
            "score": np.round(y.reshape(-1), 6),
        }
    )
    df.to_csv("gtheory_shards.csv", index=False)


if __name__ == "__main__":
    main()
