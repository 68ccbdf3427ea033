"""Start-up cost of the command line: `irmodels --help` and `irmodels anova FILE` against Rscript.

Timed, each as a fresh process, interleaved, ``--repeat`` times (medians printed):

- ``irmodels --help`` (goal: under 0.3 s);
- ``irmodels anova adhoc8_ap.csv``: TREC-8 ad hoc AP, 50 topics x 129 systems, the two-way
  ANOVA table ``score ~ topic + system`` printed. A plain table of a complete matrix is answered
  without pandas (:mod:`irmodels.cli._anova_fast`);
- ``irmodels anova adhoc8_ap.csv --components``: the same table plus the variance components,
  which takes the long-frame path (pandas), as every other option does;
- the same analysis in R: ``Rscript`` reading the CSV, reshaping it long, ``aov`` and
  ``summary`` (goal: irmodels within 2x of it);
- ``python -c "import numpy, scipy.special"`` and ``python -c "import pandas, scipy.special"``:
  the floors of a Python command that computes F p-values from numpy arrays, and of one that
  also builds a pandas frame.

The machine is shared: wall times move with the load, so the load average is printed and the
user + system CPU time of each child (``resource.getrusage(RUSAGE_CHILDREN)``), which is much
less sensitive to it, is reported beside the wall time.

Run: python benchmarks/cli_startup.py [--repeat 7] [FILE]
(FILE defaults to ../shared/data/ir-scores/adhoc8_ap.csv or $IRM_DATA_MIRROR/adhoc8_ap.csv)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

R_SCRIPT = """
args <- commandArgs(trailingOnly = TRUE)
w <- read.csv(args[1], check.names = FALSE)
d <- data.frame(topic = factor(rep(seq_len(nrow(w)), ncol(w))),
                system = factor(rep(names(w), each = nrow(w))),
                score = unlist(w, use.names = FALSE))
print(summary(aov(score ~ topic + system, data = d)))
"""


def _irmodels() -> list[str]:
    exe = Path(sys.executable).with_name("irmodels")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "irmodels"]


#: The children run as on a user's machine: with bytecode caching. Some sandboxes export
#: PYTHONDONTWRITEBYTECODE=1, and an editable install then recompiles irmodels' modules from
#: source in every process (measured: about 0.05 s of every command).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=CHILD_ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mirror = os.environ.get("IRM_DATA_MIRROR") or ROOT.parent / "shared/data/ir-scores"
    ap.add_argument("file", nargs="?", default=str(Path(mirror) / "adhoc8_ap.csv"))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    irm = _irmodels()
    with tempfile.TemporaryDirectory() as tmp:
        r_file = Path(tmp) / "anova.R"
        r_file.write_text(R_SCRIPT)
        cases = {
            "irmodels --help": irm + ["--help"],
            "irmodels anova FILE": irm + ["anova", args.file],
            "irmodels anova FILE --components": irm + ["anova", args.file, "--components"],
            "python: import numpy, scipy.special": [sys.executable, "-c",
                                                    "import numpy, scipy.special"],
            "python: import pandas, scipy.special": [sys.executable, "-c",
                                                     "import pandas, scipy.special"],
            "python: start only": [sys.executable, "-c", "pass"],
        }
        if shutil.which("Rscript"):
            cases["Rscript: read.csv + aov + summary"] = ["Rscript", str(r_file), args.file]
        for cmd in cases.values():  # warm the file cache (and write the bytecode) once
            run_timed(cmd)
        load0 = os.getloadavg()[0]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, cmd in cases.items():
                times[name].append(run_timed(cmd))
        load1 = os.getloadavg()[0]
    print(f"{args.file}: medians of {args.repeat} interleaved runs; load average {load0:.1f} "
          f"at start, {load1:.1f} at end, on {os.cpu_count()} cores")
    med = {name: np.median(np.array(v), axis=0) for name, v in times.items()}
    for name, (wall, cpu) in med.items():
        print(f"  {name:<38} {wall:7.3f} s wall  {cpu:7.3f} s CPU")
    r = med.get("Rscript: read.csv + aov + summary")
    ours = med["irmodels anova FILE"]
    full = med["irmodels anova FILE --components"]
    floor_np = med["python: import numpy, scipy.special"]
    floor_pd = med["python: import pandas, scipy.special"]
    if r is not None:
        print(f"  irmodels anova / Rscript: {ours[0] / r[0]:.2f}x wall, {ours[1] / r[1]:.2f}x CPU"
              "  (goal: within 2x)")
        print(f"  irmodels anova --components / Rscript: {full[0] / r[0]:.2f}x wall, "
              f"{full[1] / r[1]:.2f}x CPU (the long-frame path)")
        print(f"  floors / Rscript: numpy + scipy.special {floor_np[0] / r[0]:.2f}x, "
              f"pandas + scipy.special {floor_pd[0] / r[0]:.2f}x")
    print(f"  irmodels' share over its floor: anova {ours[0] - floor_np[0]:.3f} s, "
          f"anova --components {full[0] - floor_pd[0]:.3f} s")
    print(f"  irmodels --help: {med['irmodels --help'][0]:.3f} s wall (goal: under 0.3 s)")


if __name__ == "__main__":
    main()
