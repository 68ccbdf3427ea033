"""Tukey HSD: fixed cost and scaling in the number of systems, against R and statsmodels.

Default run (the sweep): k = 10, 100, 1000 systems x 25 topics, seeded balanced scores, model
``score ~ topic + system`` (MD1). For each k:

- **irmodels, cold**: the first ``fit.tukey("system")`` in a fresh Python process (irmodels and
  the fit already made; includes the lazy import of the Tukey module, the ptukey interpolation
  table for this k and the critical value), wall and CPU, median of 3 processes;
- **irmodels, warm**: later calls in the same process (median of repeats): a study re-running
  Tukey on one design pays this; the critical value ``Q(alpha; k, df)`` is cached;
- **R** ``TukeyHSD(fit, "system")`` on ``aov(score ~ topic + system)`` (when Rscript is
  present), timed inside R with ``system.time`` (start-up and the aov fit excluded); the script
  checks that R's p-values and differences equal irmodels' (max abs difference printed);
- **statsmodels** ``pairwise_tukeyhsd`` (one-way Tukey, no topic term: its numbers differ), in a
  subprocess stopped after ``--sm-timeout`` seconds (statsmodels >= 0.14 calls scipy's
  adaptive ``studentized_range.sf`` for every pair: minutes at k = 100).

``--trec8``: the earlier TREC-8 case (129 systems x 50 topics, 8,256 pairs): ptukey alone,
the compact letter display, and scipy's ``studentized_range.sf`` per value.

Run: python benchmarks/tukey.py [--quick] [--trec8] [--sm-timeout 60] [--no-r]
(the data of --trec8: ../shared/data/ir-scores/adhoc8_ap.csv or $IRM_DATA_MIRROR/adhoc8_ap.csv)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import multiprocessing as mp
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn, repeat: int = 7) -> float:
    """Best wall time of ``repeat`` runs (the CPU time of that run is kept in CPU_TIMES)."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - start, time.process_time() - cpu))
    CPU_TIMES.append(best[1])
    return best[0]


CPU_TIMES: list[float] = []


def median_of(fn, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu))


def make_data(k: int, topics: int = 25, seed: int = 0) -> pd.DataFrame:
    """Balanced seeded scores: topic + system effects + noise (k systems x ``topics``)."""
    rng = np.random.default_rng(seed)
    y = (0.25 + rng.normal(0, 0.03, k)[None, :] + rng.normal(0, 0.1, topics)[:, None]
         + rng.normal(0, 0.08, (topics, k)))
    return pd.DataFrame({
        "topic": np.repeat([f"t{i + 1:03d}" for i in range(topics)], k),
        "system": np.tile([f"s{j + 1:04d}" for j in range(k)], topics),
        "score": y.ravel(),
    })


_COLD = """
import sys, time
import pandas as pd
import irmodels as irm
data = pd.read_csv(sys.argv[1])
fit = irm.anova("score ~ topic + system", data)
t0, c0 = time.perf_counter(), time.process_time()
fit.tukey("system")
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def time_cold(csv: Path, processes: int = 3) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(processes):
        out = subprocess.run([sys.executable, "-c", _COLD, str(csv)], capture_output=True,
                             text=True, check=True).stdout.split()
        wall.append(float(out[0]))
        cpu.append(float(out[1]))
    return float(np.median(wall)), float(np.median(cpu))


_R_SCRIPT = """
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); d$topic <- factor(d$topic); d$system <- factor(d$system)
fit <- aov(score ~ topic + system, data = d)
reps <- as.integer(args[3]); times <- numeric(reps)
for (i in seq_len(reps)) times[i] <- system.time(h <- TukeyHSD(fit, "system"))[["elapsed"]]
tab <- h$system
write.csv(data.frame(pair = rownames(tab), diff = tab[, "diff"], p = tab[, "p adj"]),
          args[2], row.names = FALSE)
cat(sprintf("%.6f %.6f\\n", median(times), min(times)))
"""


def time_r(csv: Path, repeats: int) -> tuple[float, pd.DataFrame] | None:
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        script, out = Path(tmp) / "tukey.R", Path(tmp) / "out.csv"
        script.write_text(_R_SCRIPT)
        try:
            res = subprocess.run(["Rscript", str(script), str(csv), str(out), str(repeats)],
                                 capture_output=True, text=True, timeout=3600, check=True)
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"  R failed: {exc}")
            return None
        return float(res.stdout.split()[0]), pd.read_csv(out)


def _sm_worker(csv: str, out: mp.Queue) -> None:
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    d = pd.read_csv(csv)
    t0 = time.perf_counter()
    pairwise_tukeyhsd(d["score"].to_numpy(), d["system"].to_numpy(), alpha=0.05)
    out.put(time.perf_counter() - t0)


def time_statsmodels(csv: Path, timeout: float) -> float | None:
    """Seconds of one pairwise_tukeyhsd call, or None when stopped at ``timeout``."""
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_sm_worker, args=(str(csv), q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.terminate()
        p.join()
        return None
    return q.get() if not q.empty() else None


def sweep(ks: list[int], sm_timeout: float, use_r: bool) -> list[dict]:
    rows = []
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for k in ks:
        data = make_data(k)
        fit = irm.anova("score ~ topic + system", data)
        n_pairs = k * (k - 1) // 2
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "d.csv"
            data.to_csv(csv, index=False)
            cold = time_cold(csv)
            hsd = fit.tukey("system")
            repeat = 21 if k <= 100 else 7
            warm = median_of(lambda: fit.tukey("system"), repeat)
            means = fit.marginal_means("system")
            kw = dict(df_error=fit.df_resid, ms_error=fit.ms_error, n=fit.n_per_level("system"))
            bare = median_of(lambda: irm.tukey_hsd(means, **kw), repeat)
            r = time_r(csv, 3 if k <= 100 else 1) if use_r else None
            sm = time_statsmodels(csv, sm_timeout) if sm_timeout > 0 and k <= 100 else None
        row = {"k": k, "pairs": n_pairs, "cold": cold, "warm": warm, "tukey_hsd": bare,
               "R": r[0] if r else None, "statsmodels": sm, "load": os.getloadavg()[0]}
        print(f"\nk = {k} systems x 25 topics ({n_pairs} pairs), error df {fit.df_resid}")
        print(f"  irmodels fit.tukey, cold (fresh process): {1e3 * cold[0]:9.1f} ms wall"
              f" {1e3 * cold[1]:9.1f} ms CPU")
        print(f"  irmodels fit.tukey, warm (median):        {1e3 * warm[0]:9.1f} ms wall"
              f" {1e3 * warm[1]:9.1f} ms CPU")
        print(f"    tukey_hsd alone, warm (median):         {1e3 * bare[0]:9.1f} ms wall"
              f" {1e3 * bare[1]:9.1f} ms CPU")
        if r is not None:
            t_r, tab = r
            # R's row "b-a" is the pair (a, b) with diff = m_b - m_a: the negation of ours
            d_err = np.abs(tab["diff"].to_numpy() + hsd.pairs["diff"].to_numpy()).max()
            p_err = np.abs(tab["p"].to_numpy() - hsd.pairs["p_adj"].to_numpy()).max()
            print(f"  R TukeyHSD (median, inside R):            {1e3 * t_r:9.1f} ms"
                  f"   R / warm {t_r / warm[0]:7.1f}x   R / cold {t_r / cold[0]:6.1f}x")
            print(f"    agreement with R: max |diff| error {d_err:.1e}, max |p| error {p_err:.1e}")
        elif use_r:
            print("  R: Rscript not available")
        if sm is not None:
            print(f"  statsmodels pairwise_tukeyhsd (one-way):  {1e3 * sm:9.1f} ms"
                  f"   / warm {sm / warm[0]:7.1f}x")
        elif sm_timeout > 0:
            why = f"stopped after {sm_timeout:.0f} s" if k <= 100 else "not run (hours)"
            print(f"  statsmodels pairwise_tukeyhsd (one-way):  {why}")
        rows.append(row)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return rows


def trec8() -> None:
    mirror = os.environ.get("IRM_DATA_MIRROR") or ROOT.parent / "shared/data/ir-scores"
    wide = pd.read_csv(Path(mirror) / "adhoc8_ap.csv")
    data = irm.from_wide(wide, measure="AP")
    t = wide.shape[0]
    fit = irm.anova("MD1", data)
    means = fit.marginal_means("system")
    k, df, mse, n = len(means), fit.df_resid, fit.ms_error, fit.n_per_level("system")

    hsd = irm.tukey_hsd(means, df_error=df, ms_error=mse, n=n)  # warm-up (interpolation table)
    q = hsd.pairs["q"].to_numpy()
    t_hsd = best_of(lambda: irm.tukey_hsd(means, df_error=df, ms_error=mse, n=n))
    t_ptukey = best_of(lambda: irm.ptukey(q, k, df, lower_tail=False))
    t_letters = best_of(lambda: irm.tukey_hsd(means, df_error=df, ms_error=mse, n=n).letters, 3)

    from scipy.stats import studentized_range

    rng = np.random.default_rng(0)
    sub = rng.choice(len(q), 10, replace=False)
    start = time.perf_counter()
    p_scipy = np.array([studentized_range.sf(v, k, df) for v in q[sub]])
    t_scipy_each = (time.perf_counter() - start) / len(sub)
    p_ours = irm.ptukey(q[sub], k, df, lower_tail=False)

    print(f"\nTREC-8: Tukey HSD, {k} systems x {t} topics ({len(q)} pairs), error df = {df}")
    c_hsd, c_ptukey, c_letters = CPU_TIMES[-3:]
    print(f"  irmodels tukey_hsd (model error term):        {1e3 * t_hsd:8.1f} ms (CPU {1e3 * c_hsd:.1f} ms)")
    print(f"    of which ptukey for all {len(q)} pairs:       {1e3 * t_ptukey:8.1f} ms (CPU {1e3 * c_ptukey:.1f} ms)")
    print(f"  irmodels tukey_hsd + compact letter display:  {1e3 * t_letters:8.1f} ms (CPU {1e3 * c_letters:.1f} ms)")
    print(f"  scipy studentized_range.sf, per value:        {1e3 * t_scipy_each:8.1f} ms"
          f"   x {len(q)} = {t_scipy_each * len(q):6.1f} s, ratio {t_scipy_each * len(q) / t_ptukey:7.0f}x")
    print(f"  max |irmodels - scipy| on the subsample:      {np.abs(p_ours - p_scipy).max():.1e}")
    print(f"  goal: 129 systems in < 0.1 s -> {'met' if t_hsd < 0.1 else 'NOT met'} (wall), "
          f"{'met' if c_hsd < 0.1 else 'NOT met'} (CPU)")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="k = 10 and 100 only")
    ap.add_argument("--trec8", action="store_true", help="also the TREC-8 129-system case")
    ap.add_argument("--sm-timeout", type=float, default=60.0,
                    help="seconds before statsmodels is stopped (0: skip it)")
    ap.add_argument("--no-r", action="store_true", help="skip R's TukeyHSD")
    ap.add_argument("--json", help="write the sweep figures to this JSON file")
    args = ap.parse_args()
    ks = [10, 100] if args.quick else [10, 100, 1000]
    rows = sweep(ks, args.sm_timeout, not args.no_r)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    if args.trec8:
        trec8()


if __name__ == "__main__":
    main()
