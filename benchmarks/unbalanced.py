"""Benchmark: unbalanced least-squares ANOVA (irmodels' sparse path) against statsmodels and R.

Run: ``python benchmarks/unbalanced.py [--full]``. Prints, in one run, medians of repeats and the
load average (the machine is shared; ratios are what matter):

1. MD6, 5% of the rows dropped at random, type II: irmodels against statsmodels
   ``ols(...).fit()`` + ``anova_lm(typ=2)`` (sum-to-zero contrasts) on 20 topics x 40 systems x
   5 shards (statsmodels builds and decomposes the dense 3,800 x 1,185 design; it takes
   seconds), with every SS checked equal to 1e-9; then irmodels alone, types I/II/III, on
   50 x 100 x 10 (47,500 rows, 6,340 columns: about 300M dense cells, formerly refused).
   ``--full`` also runs statsmodels on 50 x 100 x 10 (a dense 47,500 x 6,340 design, about
   2.4 GB, and a pseudo-inverse of it: tens of minutes).
2. MD1 (topic + system) on 50 x 129 with 5% dropped, type II: irmodels against R's
   ``aov`` + ``summary`` (timed inside one Rscript process, so R's start-up is not counted),
   when ``Rscript`` is on the PATH.
3. MD6 with 50 shards and the "missing" policy (20% of the topic x shard cells empty for
   every system: 198,400 rows), type II, irmodels alone (one run).

Wall times and, where noted, the process CPU time (what a quiet machine would show: with
``OPENBLAS_NUM_THREADS=1`` the work runs on one thread). Scores are seeded random numbers with topic, system and topic:system effects.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm

MD6 = "score ~ topic + system + shard + topic:system + topic:shard + system:shard"


def make(t: int, r: int, s: int, drop: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ti, si, ki = np.meshgrid(np.arange(t), np.arange(r), np.arange(s), indexing="ij")
    ti, si, ki = ti.ravel(), si.ravel(), ki.ravel()
    score = (0.3 + rng.normal(0, 0.15, t)[ti] + rng.normal(0, 0.05, r)[si]
             + rng.normal(0, 0.05, (t, r))[ti, si] + rng.normal(0, 0.08, ti.size))
    d = pd.DataFrame({
        "topic": pd.Categorical.from_codes(ti, [f"t{i}" for i in range(t)]),
        "system": pd.Categorical.from_codes(si, [f"s{j}" for j in range(r)]),
        "shard": pd.Categorical.from_codes(ki, [f"k{k}" for k in range(s)]),
        "score": score,
    })
    return d[rng.uniform(size=len(d)) >= drop].reset_index(drop=True)


CPU: list[float] = []  # process CPU time of the last median_of (robust to a loaded machine)


def median_of(fn, repeat: int) -> tuple[float, object]:
    times, cpu, out = [], [], None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[:] = [float(np.median(cpu))]
    return float(np.median(times)), out


def fit(model: str, data: pd.DataFrame, ss_type: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return irm.anova(model, data, ss_type=ss_type)


def statsmodels_md6(data: pd.DataFrame) -> pd.DataFrame:
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    f = ("score ~ C(topic, Sum) + C(system, Sum) + C(shard, Sum) + C(topic, Sum):C(system, Sum)"
         " + C(topic, Sum):C(shard, Sum) + C(system, Sum):C(shard, Sum)")
    return anova_lm(smf.ols(f, data=data).fit(), typ=2)


def md6_against_statsmodels(full: bool) -> None:
    print("1. MD6, 5% dropped, type II")
    sizes = [(20, 40, 5)] + ([(50, 100, 10)] if full else [])
    for t, r, s in sizes:
        data = make(t, r, s, 0.05)
        fit(MD6, data, 2)  # warm-up (imports)
        t_irm, res = median_of(lambda: fit(MD6, data, 2), 5)
        t_sm, ref = median_of(lambda: statsmodels_md6(data), 1)
        err = np.max(np.abs(ref["sum_sq"].to_numpy() - res.table["SS"].to_numpy())
                     / res.table["SS"].to_numpy())
        assert err < 1e-9, err
        print(f"   {t}x{r}x{s} ({len(data):,} rows): irmodels {t_irm * 1e3:8.1f} ms   "
              f"statsmodels {t_sm * 1e3:9.1f} ms   ratio {t_sm / t_irm:7.1f}x   "
              f"(max rel. SS difference {err:.1e})")
    data = make(50, 100, 10, 0.05)
    for typ in (1, 2, 3):
        t_irm, _ = median_of(lambda: fit(MD6, data, typ), 3)
        print(f"   50x100x10 ({len(data):,} rows) type {'I' * typ:<3}: irmodels {t_irm * 1e3:8.1f} ms"
              f" (CPU {CPU[0] * 1e3:.0f} ms)")


R_SCRIPT = r"""
d <- read.csv(commandArgs(TRUE)[1])
d$topic <- factor(d$topic); d$system <- factor(d$system)
options(contrasts = c("contr.sum", "contr.poly"))
times <- replicate(7, system.time(s <- summary(aov(score ~ topic + system, data = d)))[["elapsed"]])
cat(median(times), "\n")
"""


def md1_against_r() -> None:
    print("2. MD1 on 50 x 129, 5% dropped")
    data = make(50, 129, 1, 0.05)
    fit("MD1", data, 1)
    t_irm, res = median_of(lambda: fit("MD1", data, 1), 21)
    t_irm2, _ = median_of(lambda: fit("MD1", data, 2), 21)
    print(f"   irmodels type I {t_irm * 1e3:.2f} ms, type II {t_irm2 * 1e3:.2f} ms "
          f"({len(data):,} rows)")
    if shutil.which("Rscript") is None:
        print("   Rscript not found: R comparison skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "md1.csv"
        data[["topic", "system", "score"]].to_csv(csv, index=False)
        script = Path(tmp) / "aov.R"
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv)], capture_output=True, text=True,
                             check=True)
    t_r = float(out.stdout.split()[0])
    print(f"   R aov + summary (type I, in-process median of 7): {t_r * 1e3:.1f} ms   "
          f"ratio {t_r / t_irm:.1f}x (system.time has 1 ms resolution)")


def md6_missing_policy() -> None:
    print("3. MD6 with 50 shards, 'missing' policy (20% of topic x shard cells empty)")
    data = make(50, 100, 50, 0.0)
    rng = np.random.default_rng(5)
    empty = rng.uniform(size=(50, 50)) < 0.2
    ti, ki = data["topic"].cat.codes.to_numpy(), data["shard"].cat.codes.to_numpy()
    data = data[~empty[ti, ki]].reset_index(drop=True)
    t_irm, res = median_of(lambda: fit(MD6, data, 2), 1)
    print(f"   {len(data):,} rows, type II: irmodels {t_irm:.1f} s (CPU {CPU[0]:.1f} s; "
          f"topic:shard df {int(res.table.loc['topic:shard', 'df'])})")


def main() -> None:
    full = "--full" in sys.argv
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    md6_against_statsmodels(full)
    md1_against_r()
    md6_missing_policy()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
