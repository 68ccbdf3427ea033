"""Benchmark: BLAS threads of irmodels' kernels, default settings against fixed ones (issue 29,
item 1).

Run from the repository root: ``python benchmarks/threads.py [--repeat 5] [--cases ...]
[--insteval]``.

Each case runs in a fresh child process per setting (BLAS reads ``OPENBLAS_NUM_THREADS`` at
start-up):

* ``default``: no variable set; irmodels chooses its kernels' threads (``threads="auto"``);
* ``blas-own``: ``IRM_BLAS_THREADS=none``, the BLAS left alone (the behaviour before, with
  OpenBLAS's default of one thread per core);
* ``1``: ``OPENBLAS_NUM_THREADS=1`` (what ``.ci/run`` used to set);
* ``2``: ``IRM_BLAS_THREADS=2``, two threads in every kernel.

Cases: ``hetero`` (varIdent on 2 systems x 50 topics x 10 samples, ``residual="topic:system"``),
``sleepstudy`` (``Reaction ~ Days + (Days | Subject)``), ``anova`` (a 50 x 100 matrix with 10%
of the cells removed, least squares), ``anova-dense`` (the same, ``method="dense"``),
``unbalanced`` (the 50 x 100 x 10 shard model with 10% of the rows removed, q1 = 5,000, r = 650),
and with ``--insteval`` lme4's InstEval (``y ~ service + (1|s) + (1|d) + (1|dept)``, the CSV
cached by ``benchmarks/mixed_insteval.py``). The time is the fit alone, best of ``--repeat``,
wall and CPU (all threads); printed with the ratio of each setting to the best one. The machine's
load (``os.getloadavg``) is printed before and after: on a loaded machine a multi-threaded BLAS
spins, and that is what the default must avoid.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "default": {},
    "blas-own": {"IRM_BLAS_THREADS": "none"},
    "1": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "2": {"IRM_BLAS_THREADS": "2"},
}
CASES = ["hetero", "sleepstudy", "anova", "anova-dense", "unbalanced"]


def _case(name: str):  # -> a function that fits once
    import warnings

    import numpy as np
    import pandas as pd

    import irmodels as irm

    warnings.simplefilter("ignore")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if name == "hetero":
        from mixed import make_hetero

        d = make_hetero()
        return lambda: irm.mixed("score ~ system + (1|topic/system)", d, residual="topic:system")
    if name == "sleepstudy":
        d = pd.read_csv(ROOT / "tests" / "reference" / "data" / "lme4" / "sleepstudy.csv")
        return lambda: irm.mixed("Reaction ~ Days + (Days | Subject)", d)
    if name in ("anova", "anova-dense"):
        rng = np.random.default_rng(0)
        d = pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(50)], 100),
                          "system": np.tile([f"s{j:03d}" for j in range(100)], 50),
                          "score": rng.random(5000)})
        d = d[rng.random(len(d)) >= 0.1].reset_index(drop=True)
        method = "dense" if name == "anova-dense" else "auto"
        return lambda: irm.anova("score ~ system + topic", d, method=method).table
    if name == "unbalanced":
        from mixed import make_unbalanced

        d = make_unbalanced()
        return lambda: irm.mixed(
            "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)", d)
    if name == "insteval":
        csv = Path(os.environ.get("IRM_BENCH_CACHE", Path.home() / ".cache" / "irmodels-bench"))
        d = pd.read_csv(csv / "InstEval.csv")
        for c in ["s", "d", "studage", "lectage", "service", "dept"]:
            d[c] = d[c].astype(str).astype("category")
        return lambda: irm.mixed("y ~ service + (1|s) + (1|d) + (1|dept)", d)
    raise SystemExit(f"unknown case {name!r}")


def child(name: str, repeat: int) -> None:
    fit = _case(name)
    fit()  # warm: imports, caches
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fit()
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    print(json.dumps({"wall": wall, "cpu": cpu}))


def run(name: str, setting: str, repeat: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                        "IRM_BLAS_THREADS")}
    env.update(SETTINGS[setting])
    out = subprocess.run([sys.executable, __file__, "--child", name, str(repeat)], env=env,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", nargs="*", default=CASES, choices=CASES + ["insteval"])
    ap.add_argument("--insteval", action="store_true", help="add lme4's InstEval (slow)")
    args = ap.parse_args()
    cases = list(args.cases) + (["insteval"] if args.insteval else [])
    print(f"{os.cpu_count()} cores; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':12s} " + " ".join(f"{s:>21s}" for s in SETTINGS) + "   default / best (wall, CPU)")
    for name in cases:
        repeat = 2 if name == "insteval" else args.repeat
        res = {s: run(name, s, repeat) for s in SETTINGS}
        best_wall = min(r["wall"] for r in res.values())
        best_cpu = min(r["cpu"] for r in res.values())
        cells = " ".join(f"{r['wall']:9.4f}s ({r['cpu']:7.4f})" for r in res.values())
        print(f"{name:12s} {cells}   {res['default']['wall'] / best_wall:.2f}x, "
              f"{res['default']['cpu'] / best_cpu:.2f}x", flush=True)
    print("cells: wall seconds (CPU seconds), best of --repeat; load average after "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
