"""Benchmark: crossed REML at scale, irm.mixed against lme4 on lme4's InstEval (issue 29, item 3).

Run from the repository root: ``python benchmarks/mixed_insteval.py [--repeat 3]
[--threads both|unset|1] [--no-r]``.

InstEval (73,421 lecture ratings; 2,972 students ``s``, 1,128 lecturers ``d``, 14 departments)
comes from R: ``Rscript -e 'write.csv(lme4::InstEval, ...)'`` writes it once into a cache folder
(``$IRM_BENCH_CACHE``, default ``~/.cache/irmodels-bench``), never into the repository. Without
R and without a cached copy the benchmark says so and exits 0.

Models (REML, as ``lmer``'s default):

1. ``y ~ service + (1|s) + (1|d) + (1|dept)``
2. ``y ~ service + (1|s) + (1|d) + (1|dept) + (1|dept:service)`` (a boundary fit: dept's
   variance is 0)

Each fit runs in a fresh child process (so that ``OPENBLAS_NUM_THREADS`` is read at start-up:
unset, and =1) on a frame whose factor columns are already categorical, as lme4's are already
factors; the time is the ``irm.mixed`` call alone, CPU (``time.process_time``, all threads) and
wall, the best of ``--repeat``. Memory: the child's peak resident set (``ru_maxrss``) and its size
before the fit (imports and data), and ``tracemalloc``'s peak during one more fit (numpy reports
its buffers to tracemalloc). lme4: ``system.time(lmer(...))`` inside one Rscript (user + system
CPU, elapsed; R start-up and ``read.csv`` excluded), R's ``gc()`` "max used" during the fit and
the Rscript child's ``ru_maxrss``. Printed: times, the CPU ratio lme4 / irmodels, logLik of both
and their difference, and the memory figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FORMULAS = {
    "3 intercepts": "y ~ service + (1|s) + (1|d) + (1|dept)",
    "+ dept:service": "y ~ service + (1|s) + (1|d) + (1|dept) + (1|dept:service)",
}
FACTORS = ["s", "d", "studage", "lectage", "service", "dept"]


def cache_dir() -> Path:
    return Path(os.environ.get("IRM_BENCH_CACHE", Path.home() / ".cache" / "irmodels-bench"))


def insteval_csv() -> Path | None:
    """The cached InstEval CSV, written by R on first use; None without R and without a cache."""
    path = cache_dir() / "InstEval.csv"
    if path.exists():
        return path
    if not shutil.which("Rscript"):
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    subprocess.run(["Rscript", "-e", f"write.csv(lme4::InstEval, {json.dumps(str(tmp))}, "
                    "row.names = FALSE)"], check=True)
    tmp.replace(path)
    return path


def _wait(cmd: list[str], env: dict[str, str]) -> tuple[str, float]:
    """Run ``cmd``; its stdout and its peak resident set in MB (this child's own rusage)."""
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{err}")
        out.seek(0)
        return out.read(), usage.ru_maxrss / 1024.0


# --- the irmodels child -------------------------------------------------------------------------


def child(csv: str, formula: str, repeat: int) -> None:
    import tracemalloc

    import numpy as np
    import pandas as pd

    import irmodels as irm

    data = pd.read_csv(csv, dtype={f: str for f in FACTORS})
    for f in FACTORS:
        data[f] = data[f].astype("category")
    data["y"] = data["y"].astype(float)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    best_cpu = best_wall = float("inf")
    fit = None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fit = irm.mixed(formula, data)
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    tracemalloc.start()
    irm.mixed(formula, data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert fit is not None
    comps = fit.variance_components()
    print(json.dumps({
        "cpu": best_cpu, "wall": best_wall, "loglik": float(fit.loglik),
        "sd": {str(k): float(v) for k, v in comps["sd"].items()},
        "rss_before": rss_before, "traced_peak": peak / 2**20,
        "blas": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
        "numpy": np.__version__,
    }))


def run_irmodels(csv: Path, formula: str, repeat: int, threads: str | None) -> dict:
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
        if threads is not None:
            env[var] = threads
    out, rss = _wait([sys.executable, __file__, "--child", str(csv), formula, str(repeat)], env)
    res = json.loads(out.strip().splitlines()[-1])
    res["maxrss"] = rss
    return res


# --- lme4 -----------------------------------------------------------------------------------------

R_SCRIPT = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
for (v in c("s", "d", "studage", "lectage", "service", "dept")) d[[v]] <- factor(d[[v]])
invisible(gc(reset = TRUE))
t <- system.time(m <- lmer(as.formula(args[2]), data = d, REML = TRUE))
g <- gc()
vc <- as.data.frame(VarCorr(m))
fmt <- paste0('{"cpu": %.4f, "wall": %.4f, "loglik": %.12f, "gc_max_mb": %.1f, ',
              '"sd": {%s}, "r": "%s", "lme4": "%s"}\n')
cat(sprintf(fmt,
    t[["user.self"]] + t[["sys.self"]], t[["elapsed"]], as.numeric(logLik(m)), sum(g[, 6]),
    paste(sprintf('"%s": %.10f', vc$grp, vc$sdcor), collapse = ", "),
    R.version.string, as.character(packageVersion("lme4"))))
"""


def run_lme4(csv: Path, formula: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_SCRIPT)
        script = fh.name
    try:
        out, rss = _wait(["Rscript", script, str(csv), formula], dict(os.environ))
    finally:
        os.unlink(script)
    res = json.loads(out.strip().splitlines()[-1])
    res["maxrss"] = rss
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="irmodels fits per setting (best of)")
    ap.add_argument("--threads", choices=["both", "unset", "1"], default="both",
                    help="OPENBLAS_NUM_THREADS of the irmodels child: unset, 1 or both")
    ap.add_argument("--no-r", action="store_true", help="skip lme4")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    csv = insteval_csv()
    if csv is None:
        print("skipped: InstEval needs R (Rscript with lme4) to be exported once; no cached copy "
              f"in {cache_dir()}")
        return 0
    have_r = bool(shutil.which("Rscript")) and not args.no_r
    settings = {"both": [None, "1"], "unset": [None], "1": ["1"]}[args.threads]
    print(f"InstEval from {csv}; {os.cpu_count()} cores, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, formula in FORMULAS.items():
        print(f"\n{label}: {formula}")
        ref = run_lme4(csv, formula) if have_r else None
        if ref is not None:
            print(f"  lme4 {ref['lme4']} ({ref['r']}): CPU {ref['cpu']:.2f} s, wall "
                  f"{ref['wall']:.2f} s, logLik {ref['loglik']:.6f}; memory: gc max used "
                  f"{ref['gc_max_mb']:.0f} MB, Rscript peak RSS {ref['maxrss']:.0f} MB")
        for threads in settings:
            res = run_irmodels(csv, formula, args.repeat, threads)
            tag = f"OPENBLAS_NUM_THREADS={res['blas']}"
            print(f"  irmodels [{tag}]: CPU {res['cpu']:.2f} s, wall {res['wall']:.2f} s "
                  f"(best of {args.repeat}), logLik {res['loglik']:.6f}; memory: tracemalloc "
                  f"peak {res['traced_peak']:.0f} MB, peak RSS {res['maxrss']:.0f} MB "
                  f"({res['rss_before']:.0f} MB before the fit)")
            if ref is not None:
                diff = res["loglik"] - ref["loglik"]
                sd = max(abs(res["sd"][k] / ref["sd"][k] - 1.0) for k in ref["sd"]
                         if k in res["sd"] and ref["sd"][k] > 1e-3)
                print(f"    lme4 / irmodels: {ref['cpu'] / res['cpu']:.1f}x CPU, "
                      f"{ref['wall'] / res['wall']:.1f}x wall; logLik difference {diff:.2e} "
                      f"(relative {abs(diff / ref['loglik']):.1e}); largest relative SD "
                      f"difference {sd:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
