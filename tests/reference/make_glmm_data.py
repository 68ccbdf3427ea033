"""Seeded data for the GLMM fixtures (run from tests/reference/: python make_glmm_data.py;
writes data/glmm/poisson_depth.csv and data/glmm/binom_slopes.csv; glmer.R writes
data/glmm/cbpp.csv from lme4's ``cbpp`` and reads the TREC-8 P@10 matrix from the shared data).

- ``poisson_depth``: 30 topics x 5 systems x 3 depths (20, 50, 100) = 450 rows: the number of
  relevant documents a system retrieves for a topic down to ``depth``, Poisson with mean
  ``depth * exp(a_system + b_topic)``, ``b_topic ~ N(0, 0.6^2)``, system rates 0.05 to 0.12;
  ``log_depth`` is the offset. Fitted as ``rel ~ system + (1|topic)`` with ``offset = log_depth``.
- ``binom_slopes``: 25 groups x 8 values of ``x`` (0 to 1.75 by 0.25) with 6 trials each:
  successes binomial with ``logit p = -0.5 + 1.2 x + a_g + b_g x``, ``(a, b)`` normal with SDs
  (0.8, 0.6) and correlation 0.3. Fitted as ``succ ~ x + (1 + x | g)`` with ``trials = n``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data" / "glmm"


def poisson_depth(seed: int = 2811) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    topics = [f"t{k:02d}" for k in range(1, 31)]
    systems = ["s1", "s2", "s3", "s4", "s5"]
    rate = np.log([0.05, 0.07, 0.08, 0.10, 0.12])
    b = rng.normal(0, 0.6, len(topics))
    rows = []
    for ti, t in enumerate(topics):
        for si, s in enumerate(systems):
            for depth in (20, 50, 100):
                mu = depth * np.exp(rate[si] + b[ti])
                rows.append((t, s, depth, float(np.log(depth)), int(rng.poisson(mu))))
    return pd.DataFrame(rows, columns=["topic", "system", "depth", "log_depth", "rel"])


def binom_slopes(seed: int = 2812) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sd = np.array([0.8, 0.6])
    cov = np.outer(sd, sd) * np.array([[1, 0.3], [0.3, 1]])
    ab = rng.multivariate_normal(np.zeros(2), cov, size=25)
    rows = []
    for g in range(25):
        for x in np.arange(8) * 0.25:
            eta = -0.5 + 1.2 * x + ab[g, 0] + ab[g, 1] * x
            p = 1 / (1 + np.exp(-eta))
            rows.append((f"g{g + 1:02d}", float(x), 6, int(rng.binomial(6, p))))
    return pd.DataFrame(rows, columns=["g", "x", "n", "succ"])


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    poisson_depth().to_csv(OUT / "poisson_depth.csv", index=False)
    binom_slopes().to_csv(OUT / "binom_slopes.csv", index=False)
