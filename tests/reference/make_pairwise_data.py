"""Write ``data/pairwise_small.csv``: a small seeded long frame for the pairwise/variability fixture.

Five systems on twelve topics. ``s1`` and ``s3`` have continuous scores (their paired differences
have no ties and no zeros, so R's ``wilcox.test`` uses the exact distribution); ``s2`` and ``s4``
are ``s1`` plus noise rounded to 0.1 (ties and zero differences: normal approximation with tie
and continuity corrections); ``s5`` is a sparse system with many zero scores.

Run from ``tests/reference/``: ``python make_pairwise_data.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def main() -> None:
    rng = np.random.default_rng(20240601)
    t = 12
    s1 = np.round(rng.beta(2, 4, t), 4)
    s3 = np.round(rng.beta(3, 3, t), 4)
    s2 = np.clip(s1 + rng.choice([-0.2, -0.1, 0.0, 0.0, 0.1, 0.2, 0.3], t), 0, 1)
    s4 = np.clip(s1 + rng.choice([-0.1, 0.0, 0.1, 0.1, 0.2], t), 0, 1)
    s5 = np.where(rng.random(t) < 0.5, 0.0, np.round(rng.beta(1, 3, t), 4))
    wide = {"s1": s1, "s2": s2, "s3": s3, "s4": s4, "s5": s5}
    rows = [
        (f"q{i + 1}", name, float(np.round(v[i], 6))) for i in range(t) for name, v in wide.items()
    ]
    out = pd.DataFrame(rows, columns=["topic", "system", "score"])
    path = Path(__file__).resolve().parent / "data" / "pairwise_small.csv"
    out.to_csv(path, index=False)


if __name__ == "__main__":
    main()
