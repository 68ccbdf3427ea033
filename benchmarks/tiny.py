"""Benchmark: a tiny unbalanced two-way ANOVA, irmodels against R's ``aov`` and ``car::Anova``
(issue 29, item 2).

Run from the repository root: ``python benchmarks/tiny.py [--loops 1000] [--starts 5]``.

Data: R's ``warpbreaks`` (``tests/reference/data/warpbreaks.csv``, written by R's
``write.csv(warpbreaks, ...)``) with the 8 rows of :data:`DROP` removed: 46 rows, 2 wools x 3
tensions, 7-8 rows per cell. Model ``breaks ~ wool * tension``, compared like for like:

- type I (sequential): ``irm.anova(..., ss_type=1).table`` against ``summary(aov(...))``;
- type II (irmodels' default): ``irm.anova(...).table`` against ``car::Anova(lm(...), type = 2)``.

1. *In process*: the CPU time of one fit and its table, the mean of ``--loops`` calls (best of 5
   batches; and the median call), against R's, timed the same way inside one Rscript by
   ``system.time`` over ``--loops`` calls (best of 5 batches).
2. *Fresh process*: ``python -c "import irmodels as irm; ...; print(fit.table)"`` against
   ``Rscript -e "...; print(summary(aov(...)))"``, both reading the CSV: wall time and the CPU of
   the child (user + system), best of ``--starts``; then what the Python start-up is made of
   (the interpreter, numpy, pandas, scipy.special, ``import irmodels``).

Printed: the figures and the ratios irmodels / R (below 1: irmodels faster), with the load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests" / "reference" / "data" / "warpbreaks.csv"
#: 0-based rows of warpbreaks removed (one or two per cell): 54 -> 46 rows, unbalanced.
DROP = [2, 9, 14, 22, 30, 37, 45, 51]
FORMULA = "breaks ~ wool * tension"

PY_FRESH = (
    "import warnings; warnings.simplefilter('ignore'); import pandas as pd; import irmodels as irm; "
    f"d = pd.read_csv({str(CSV)!r}).drop(index={DROP}).reset_index(drop=True); "
    f"print(irm.anova({FORMULA!r}, d).table)"
)
R_DATA = (f"d <- read.csv({str(CSV)!r}, stringsAsFactors = TRUE); "
          f"d <- d[-(c({', '.join(str(i + 1) for i in DROP)})), ]; ")
R_FRESH = R_DATA + f"print(summary(aov({FORMULA}, data = d)))"


def in_process(loops: int, ss_type: int | None) -> tuple[float, float]:
    import pandas as pd

    import irmodels as irm

    d = pd.read_csv(CSV).drop(index=DROP).reset_index(drop=True)
    assert len(d) == 46
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the replicates' DataQualityWarning, every call
        irm.anova(FORMULA, d, ss_type=ss_type).table  # noqa: B018  (warm: imports)
        batches, times = [], []
        for _ in range(5):  # as R is timed: the mean of a batch, best of 5 batches
            b0 = time.process_time()
            for _ in range(loops):
                c0 = time.process_time()
                irm.anova(FORMULA, d, ss_type=ss_type).table  # noqa: B018
                times.append(time.process_time() - c0)
            batches.append((time.process_time() - b0) / loops)
    return float(np.min(batches)), float(np.median(times))


#: R's calls, like for like with irmodels' ss_type (car loaded before the timing)
R_CALLS = {1: f"summary(aov({FORMULA}, data = d))",
           2: f"car::Anova(lm({FORMULA}, data = d), type = 2)"}


def r_in_process(loops: int, call: str) -> float | None:
    if not shutil.which("Rscript"):
        return None
    code = R_DATA + (
        f"suppressMessages(library(car)); f <- function() {call}; f(); best <- Inf; "
        f"for (k in 1:5) {{ t <- system.time(for (i in 1:{loops}) f()); "
        "best <- min(best, t[['user.self']] + t[['sys.self']]) }; "
        f"cat(best / {loops}, '\\n')")
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def fresh(cmd: list[str], starts: int) -> tuple[float, float]:
    env = dict(os.environ)
    best_wall = best_cpu = float("inf")
    for _ in range(starts):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


#: What a fresh ``python -c`` spends before the fit: each step is a child of its own
STARTUP = [("python -c pass", "pass"), ("import numpy", "import numpy"),
           ("import pandas", "import pandas"),
           ("import pandas, scipy.special", "import pandas, scipy.special"),
           ("import pandas, irmodels; irm.anova imported",
            "import pandas, irmodels as irm; irm.anova")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=1000)
    ap.add_argument("--starts", type=int, default=5)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for ss_type, label in ((1, "type I "), (None, "type II")):
        best, median = in_process(args.loops, ss_type)
        r = r_in_process(args.loops, R_CALLS[ss_type or 2])
        line = (f"in process, {label}, CPU per fit: irmodels {best * 1e3:.2f} ms (median call "
                f"{median * 1e3:.2f} ms)")
        if r:
            name = "aov + summary" if ss_type == 1 else "car::Anova(lm(), type = 2)"
            line += (f"; R {name} {r * 1e3:.2f} ms; ratio irmodels / R {best / r:.2f}")
        print(line)
    pw, pc = fresh([sys.executable, "-c", PY_FRESH], args.starts)
    line = f"fresh process: python -c {pw:.3f} s wall, {pc:.3f} s CPU"
    if shutil.which("Rscript"):
        rw, rc = fresh(["Rscript", "-e", R_FRESH], args.starts)
        line += (f"; Rscript -e {rw:.3f} s wall, {rc:.3f} s CPU; ratio irmodels / R "
                 f"{pw / rw:.2f} wall, {pc / rc:.2f} CPU")
        bw, bc = fresh(["Rscript", "-e", "invisible(0)"], args.starts)
        line += f" (Rscript -e 'invisible(0)' alone {bw:.3f} s wall)"
    print(line + f" (best of {args.starts})")
    parts = []
    for label, code in STARTUP:
        w, c = fresh([sys.executable, "-c", code], args.starts)
        parts.append(f"{label} {c:.3f} s")
    print("python start-up, CPU: " + "; ".join(parts))
    print(f"load average after {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
