"""Data of the GLM fixtures (``glm.R``): run from ``tests/reference/`` with ``IRM_DATA_MIRROR``
pointing at the shared scores: ``python make_glm_data.py``. Writes ``data/glmm/glm_*.csv``.

- ``glm_p10.csv``: a TREC-8 (adhoc8) P@10 subset from ``irm.datasets``: 6 runs spread over the
  ranking by mean P@10 (ranks 1, 20, 40, 60, 80, 100), and the first 24 topics (in natural
  order) on which those runs retrieve at least one relevant document in their top 10 and not
  10 of 10 all together (no topic fitted at probability 0 or 1). Columns ``topic, system,
  score`` (P@10) and ``rel`` (the relevant documents in the top 10, ``round(10 * P@10)``).
- ``glm_counts.csv``: seeded Poisson counts (``numpy.random.default_rng(2808)``): 20 topics x 5
  systems, each row judged to a depth ``depth`` in {20, 50, 100} (cycling), relevant documents
  found ``found ~ Poisson(depth * exp(eta))`` with topic and system effects; ``log_depth`` is
  the offset (``glm(found ~ topic + system + offset(log_depth), family = poisson)``);
  ``depth_level`` is the depth as a factor (``d020``, ``d050``, ``d100``) for a model with an
  interaction (``found ~ system * depth_level``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data" / "glmm"


def p10_subset() -> pd.DataFrame:
    import irmodels as irm
    from irmodels.data.frame import natural_key

    d = irm.datasets.load("adhoc8", "P@10")
    wide = irm.to_wide(d)
    means = wide.mean(axis=0)
    order = sorted(means.index, key=lambda s: (-means[s], natural_key(str(s))))
    systems = [order[r - 1] for r in (1, 20, 40, 60, 80, 100)]
    systems = sorted(systems, key=lambda s: natural_key(str(s)))  # rows in irmodels' order
    sub = wide[systems]
    rel = np.round(sub.to_numpy(dtype=float) * 10).astype(int)
    keep = [t for t, row in zip(sub.index, rel) if 0 < row.sum() < 10 * len(systems)]
    topics = sorted(keep, key=lambda t: natural_key(str(t)))[:24]
    rows = []
    for t in topics:
        for s in systems:
            p = float(sub.loc[t, s])
            rows.append({"topic": f"t{t}", "system": str(s), "score": p,
                         "rel": int(round(10 * p))})
    return pd.DataFrame(rows)


def counts(seed: int = 2808) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    T, S = 20, 5
    topic_eff = rng.normal(0.0, 0.5, T)
    system_eff = np.array([0.0, 0.15, 0.3, -0.2, 0.45])
    depths = np.array([20, 50, 100])
    rows = []
    k = 0
    for t in range(T):
        for s in range(S):
            depth = int(depths[k % 3])
            k += 1
            mu = depth * np.exp(-2.5 + topic_eff[t] + system_eff[s])
            rows.append({"topic": f"q{t + 1}", "system": f"sys{s + 1}", "depth": depth,
                         "depth_level": f"d{depth:03d}", "log_depth": float(np.log(depth)),
                         "found": int(rng.poisson(mu))})
    return pd.DataFrame(rows)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    p10_subset().to_csv(OUT / "glm_p10.csv", index=False, float_format="%.17g")
    counts().to_csv(OUT / "glm_counts.csv", index=False, float_format="%.17g")
    print(f"wrote {OUT / 'glm_p10.csv'} and {OUT / 'glm_counts.csv'}")


if __name__ == "__main__":
    main()
