"""Benchmark: the deviance gradient of a large unbalanced mixed model, sparse vs dense.

Run from the repository root: ``python benchmarks/mixed_sparse_gradient.py [--topics 100]``.

Design: T topics x S systems x H shards with 10% of the rows removed (unbalanced),
``score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)``. The largest term
(topic:system, T*S levels) is eliminated through its diagonal; the gradient needs the entries of
``M^-1`` on the sparsity pattern of ``Z'Z``. The former code formed the dense (T*S) x r product
``F S^-1`` (r = the other random levels plus the fixed effects); the sparse path (used when
``q1 * r`` exceeds 1e5) reads only the entries it needs from ``S^-1``. Prints seconds per
evaluation (deviance + gradient) of both paths, their ratio and the largest difference of the
gradients.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time
import tracemalloc

import numpy as np
import pandas as pd

from irmodels.models import _reml
from irmodels.models.mixed import deviance_function, mixed_design


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--systems", type=int, default=60)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    T, S, H = a.topics, a.systems, a.shards
    grid = np.meshgrid(np.arange(T), np.arange(S), np.arange(H), indexing="ij")
    t, s, h = (g.ravel() for g in grid)
    y = (rng.normal(0, 0.3, T)[t] + rng.normal(0, 0.1, S)[s] + rng.normal(0, 0.1, (T, S))[t, s]
         + rng.normal(0, 0.1, (T, H))[t, h] + rng.normal(0, 0.2, t.size))
    d = pd.DataFrame({"topic": t.astype(str), "system": [f"s{i:03d}" for i in s],
                      "shard": h.astype(str), "score": y})
    d = d.sample(frac=0.9, random_state=1).reset_index(drop=True)
    design = mixed_design("score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)", d)
    pb = deviance_function(design, "REML").problem
    print(f"n = {pb.n}, q1 = {pb.q1} (topic:system), r = {pb.r}, q1 * r = {pb.q1 * pb.r:,}")
    theta = np.array([1.0, 0.5, 0.5])
    out = {}
    for label, dense in (("sparse (now)", False), ("dense B, F S^-1 (before)", True)):
        pb.dense_b = dense
        times = []
        tracemalloc.start()
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            f = _reml.evaluate(pb, theta, None, True, gradient=True)
            times.append(time.perf_counter() - t0)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out[label] = (min(times), f.gradient, peak)
        print(f"{label:24s} {min(times):8.3f} s per evaluation, peak {peak / 2**20:8.1f} MiB")
    (ts, gs, _), (td, gd, _) = out.values()
    print(f"ratio dense / sparse: {td / ts:.2f}; max |gradient difference| = "
          f"{np.max(np.abs(gs - gd)):.2e}")


if __name__ == "__main__":
    main()
