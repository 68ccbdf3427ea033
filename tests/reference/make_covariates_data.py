"""Seeded data for the covariate fixtures (run from tests/reference/: python make_covariates_data.py).

Writes ``data/covariates.csv``: 6 systems x 15 topics x 2 samples, about 12% of the rows
removed at random (unbalanced). Columns: ``topic``, ``system`` (labels), ``sample``,
``qlen`` (query length: a numeric covariate constant within a topic, integer valued),
``depth`` (a numeric covariate varying by row), ``score``. The score has topic and system
effects, a slope in ``qlen``, a per-system slope in ``depth`` and noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data"


def covariates(rng: np.random.Generator) -> pd.DataFrame:
    systems = [f"s{i + 1:02d}" for i in range(6)]
    topics = [f"t{i + 1:02d}" for i in range(15)]
    qlen = rng.integers(1, 9, len(topics))
    a = rng.normal(0, 0.05, len(systems))
    slope = rng.normal(0, 0.01, len(systems))
    t = rng.normal(0, 0.12, len(topics))
    rows = []
    for i, tp in enumerate(topics):
        for j, sy in enumerate(systems):
            for k in range(2):
                depth = float(rng.uniform(10, 100))
                y = (0.35 + a[j] + t[i] - 0.02 * qlen[i] + (0.002 + slope[j] / 10) * depth
                     + rng.normal(0, 0.05))
                rows.append((tp, sy, k + 1, int(qlen[i]), round(depth, 3), round(float(y), 6)))
    d = pd.DataFrame(rows, columns=["topic", "system", "sample", "qlen", "depth", "score"])
    keep = rng.uniform(size=len(d)) > 0.12
    return d[keep].reset_index(drop=True)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    covariates(np.random.default_rng(20261122)).to_csv(OUT / "covariates.csv", index=False)


if __name__ == "__main__":
    main()
