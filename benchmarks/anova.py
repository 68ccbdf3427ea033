"""Benchmark: irm.anova (closed form) against statsmodels' ols + anova_lm on model MD6.

Run: ``python benchmarks/anova.py``. Prints, in one run:

1. MD6 on T=50 topics x R=40 systems x S=5 shards (10,000 rows): irmodels vs
   ``statsmodels.formula.api.ols(...).fit()`` + ``anova_lm(typ=1)``; asserts every SS, df, F and
   p agree to 1e-8 (relative) and prints the times and the speed-up (goal >= 1000x);
2. MD6 on T=50 x R=129 x S=50 (322,500 rows), irmodels alone (goal < 0.2 s);
3. fixed cost: MD1 on 50 topics x 20 systems (1,000 rows), ``irm.anova`` against a plain numpy
   pass that reads the columns and computes the same sums of squares (goal: within 5x), medians
   of 300 calls, with the load average.

Scores are seeded random numbers with topic, system and shard effects. Times are the best of
several repetitions (statsmodels: one run, it takes seconds).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

import irmodels as irm

MD6 = "score ~ topic + system + shard + topic:system + topic:shard + system:shard"


def make(t: int, r: int, s: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ti, si, ki = np.meshgrid(np.arange(t), np.arange(r), np.arange(s), indexing="ij")
    ti, si, ki = ti.ravel(), si.ravel(), ki.ravel()
    score = (0.3 + rng.normal(0, 0.15, t)[ti] + rng.normal(0, 0.05, r)[si]
             + rng.normal(0, 0.02, s)[ki] + rng.normal(0, 0.05, (t, r))[ti, si]
             + rng.normal(0, 0.08, ti.size))
    return pd.DataFrame({
        "topic": pd.Categorical.from_codes(ti, [f"t{i}" for i in range(t)]),
        "system": pd.Categorical.from_codes(si, [f"s{j}" for j in range(r)]),
        "shard": pd.Categorical.from_codes(ki, [f"k{k}" for k in range(s)]),
        "score": score,
    })


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def compare_statsmodels() -> dict[str, float]:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    data = make(50, 40, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_irm, res = best_of(lambda: irm.anova(MD6, data), 7)
    formula = ("score ~ C(topic) + C(system) + C(shard) + C(topic):C(system) + "
               "C(topic):C(shard) + C(system):C(shard)")
    t0 = time.perf_counter()
    sm = anova_lm(smf.ols(formula, data=data).fit(), typ=1)
    t_sm = time.perf_counter() - t0
    ours = res.table
    np.testing.assert_allclose(ours["SS"].to_numpy(), sm["sum_sq"].to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(ours["df"].to_numpy(), sm["df"].to_numpy(), rtol=0)
    np.testing.assert_allclose(ours["F"].to_numpy()[:-1], sm["F"].to_numpy()[:-1], rtol=1e-8)
    np.testing.assert_allclose(ours["p"].to_numpy()[:-1], sm["PR(>F)"].to_numpy()[:-1], rtol=1e-8,
                               atol=1e-300)
    print(f"MD6, T=50 R=40 S=5 ({len(data):,} rows)")
    print(f"  irmodels     {t_irm * 1e3:10.2f} ms")
    print(f"  statsmodels  {t_sm * 1e3:10.2f} ms   (ols + anova_lm, typ=1)")
    print(f"  speed-up     {t_sm / t_irm:10.0f} x   (goal >= 1000x); SS, df, F, p equal to 1e-8")
    return {"irmodels": t_irm, "statsmodels": t_sm}


def large() -> float:
    data = make(50, 129, 50, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_irm, res = best_of(lambda: irm.anova(MD6, data), 5)
    print(f"MD6, T=50 R=129 S=50 ({len(data):,} rows)")
    print(f"  irmodels     {t_irm * 1e3:10.2f} ms   (goal < 200 ms), df_resid = {res.df_resid:,}")
    return t_irm


def fixed_cost() -> float:
    import os

    t, r = 50, 20
    rng = np.random.default_rng(3)
    data = pd.DataFrame({
        "topic": pd.Categorical.from_codes(np.repeat(np.arange(t), r), [f"t{i}" for i in range(t)]),
        "system": pd.Categorical.from_codes(np.tile(np.arange(r), t), [f"s{j}" for j in range(r)]),
        "score": rng.uniform(size=t * r),
    })

    def numpy_pass():
        y = data["score"].to_numpy()
        tc = data["topic"].cat.codes.to_numpy()
        sc = data["system"].cat.codes.to_numpy()
        g = y.mean()
        mt = np.bincount(tc, weights=y) / np.bincount(tc)
        ms = np.bincount(sc, weights=y) / np.bincount(sc)
        res = y - mt[tc] - ms[sc] + g
        return r * ((mt - g) ** 2).sum(), t * ((ms - g) ** 2).sum(), res @ res

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", data)
        ref = numpy_pass()
        np.testing.assert_allclose(fit.table["SS"].to_numpy(), ref, rtol=1e-10)
        times_irm, times_np = [], []
        for _ in range(300):  # interleaved, so that load changes hit both alike
            t0 = time.perf_counter()
            irm.anova("MD1", data)
            t1 = time.perf_counter()
            numpy_pass()
            t2 = time.perf_counter()
            times_irm.append(t1 - t0)
            times_np.append(t2 - t1)
    t_irm, t_np = float(np.median(times_irm)), float(np.median(times_np))
    print(f"MD1, T=50 R=20 (1,000 rows, balanced), load average {os.getloadavg()[0]:.2f}")
    print(f"  irmodels     {t_irm * 1e6:10.0f} us")
    print(f"  numpy pass   {t_np * 1e6:10.0f} us")
    print(f"  ratio        {t_irm / t_np:10.1f} x   (goal <= 5x)")
    return t_irm / t_np


if __name__ == "__main__":
    import sys

    if "--fixed-cost" not in sys.argv:
        compare_statsmodels()
        large()
    fixed_cost()
