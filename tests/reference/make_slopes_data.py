"""Seeded data for the random-slopes fixtures (run from tests/reference/:
python make_slopes_data.py; writes data/lme4/kb07sim.csv and data/lme4/irslopes.csv).

- ``kb07sim``: a kb07-shaped crossed design, 56 subjects x 32 items (1792 rows), three
  two-level factors as +-0.5 numeric contrasts (``spkr`` and ``prec`` vary between items,
  ``load`` within subjects and items), correlated random intercepts and ``load`` slopes on
  subjects (SDs 300, 150, correlation 0.5) and on items (250, 120, -0.3), residual SD 500.
  Fitted as ``rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)`` (not singular).
- ``irslopes``: 40 topics x 8 systems x 2 shards (640 rows): per-topic intercept and shard
  effect (SDs 0.15, 0.08, correlation 0.4), a topic:system interaction (SD 0.05), fixed system
  and shard effects, noise SD 0.06. ``shard`` is a two-level factor (``A``, ``B``) and
  ``shard_c`` the same as a -0.5/+0.5 numeric contrast.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "data" / "lme4"


def _correlated(rng: np.random.Generator, n: int, sd: tuple[float, float],
                rho: float) -> np.ndarray:
    cov = np.array([[sd[0] ** 2, rho * sd[0] * sd[1]], [rho * sd[0] * sd[1], sd[1] ** 2]])
    return rng.multivariate_normal(np.zeros(2), cov, size=n)


def kb07sim(seed: int = 2707) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    S, I = 56, 32
    s, i = np.meshgrid(np.arange(S), np.arange(I), indexing="ij")
    s, i = s.ravel(), i.ravel()
    spkr = np.where(i < I // 2, -0.5, 0.5)
    prec = np.where(i % 2 == 0, -0.5, 0.5)
    load = np.where((s + i) % 2 == 0, -0.5, 0.5)
    bs = _correlated(rng, S, (300.0, 150.0), 0.5)
    bi = _correlated(rng, I, (250.0, 120.0), -0.3)
    rt = (2200 + 60 * spkr - 330 * prec + 120 * load + bs[s, 0] + bs[s, 1] * load
          + bi[i, 0] + bi[i, 1] * load + rng.normal(0, 500, len(s)))
    return pd.DataFrame({"subj": [f"S{k:02d}" for k in s], "item": [f"I{k:02d}" for k in i],
                         "spkr": spkr, "prec": prec, "load": load, "rt": np.round(rt, 3)})


def irslopes(seed: int = 2708) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    T, S, K = 40, 8, 2
    t, s, k = np.meshgrid(np.arange(T), np.arange(S), np.arange(K), indexing="ij")
    t, s, k = t.ravel(), s.ravel(), k.ravel()
    shard_c = np.where(k == 0, -0.5, 0.5)
    bt = _correlated(rng, T, (0.15, 0.08), 0.4)
    ts = rng.normal(0, 0.05, (T, S))
    score = (0.3 + 0.02 * s + 0.05 * shard_c + bt[t, 0] + bt[t, 1] * shard_c + ts[t, s]
             + rng.normal(0, 0.06, len(t)))
    return pd.DataFrame({"topic": [f"t{x:02d}" for x in t], "system": [f"s{x}" for x in s],
                         "shard": np.where(k == 0, "A", "B"), "shard_c": shard_c,
                         "score": np.round(score, 6)})


if __name__ == "__main__":  # pragma: no cover
    OUT.mkdir(parents=True, exist_ok=True)
    kb07sim().to_csv(OUT / "kb07sim.csv", index=False)
    irslopes().to_csv(OUT / "irslopes.csv", index=False)
    print("wrote", OUT / "kb07sim.csv", OUT / "irslopes.csv")
