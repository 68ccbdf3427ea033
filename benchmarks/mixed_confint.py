"""Benchmark: profile intervals of linear mixed models, ``fit.confint("profile")`` against lme4's
``confint(method = "profile")`` (when Rscript is present).

Run from the repository root: ``python benchmarks/mixed_confint.py [--repeat 3]``.

Cases:

- ``fixture``: the design of ``tests/reference/mixed_confint.json`` (162 rows, 5 systems x
  topics x samples), ``score ~ system + (1|topic) + (1|topic:system)`` by REML: two SDs, the
  residual SD and five fixed effects profiled;
- ``trec8``: TREC-8 AP, 20 runs x 50 topics (1,000 rows, the 20 best by mean AP), ``score ~ 1 +
  (1|topic) + (1|system)``: the crossed variance components and the intercept.

Times are wall-clock seconds of the intervals alone (the fit excluded on both sides; irmodels
refits by ML as lme4's profile does), best of ``--repeat``; R's measured inside R with
``system.time``. lme4 interpolates its profile on a grid with splines; irmodels solves each
bound as a root, so the bounds are printed beside the times (they agree to about 1e-6). BLAS is
pinned to one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _timing import best_of, run_rscript

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "tests" / "reference"
SHARED = Path(os.environ.get("IRM_DATA_MIRROR", ROOT.parent / "shared" / "data" / "ir-scores"))

CASES = {
    "fixture": "score ~ system + (1|topic) + (1|topic:system)",
    "trec8": "score ~ 1 + (1|topic) + (1|system)",
}

R_CODE = r"""
suppressPackageStartupMessages(library(lme4))
args <- commandArgs(TRUE); rep <- as.integer(args[3])
d <- read.csv(args[1], stringsAsFactors = FALSE)
d$topic <- factor(d$topic); d$system <- factor(d$system)
m <- lmer(as.formula(args[2]), d)
t <- Inf
for (i in seq_len(rep))
  t <- min(t, system.time(ci <- suppressMessages(confint(m, method = "profile")))[["elapsed"]])
cat(t, format(as.vector(t(ci)), digits = 10), "\n")
"""


def load(name: str) -> pd.DataFrame:
    if name == "fixture":
        spec = json.loads((REF / "mixed_confint.json").read_text())
        return pd.read_csv(REF / spec["file"], dtype={"sample": str, "topic": str})
    w = pd.read_csv(SHARED / "adhoc8_ap.csv")
    systems = list(w.mean().sort_values().index[-20:])
    return pd.DataFrame({"topic": np.tile([str(t + 1) for t in range(len(w))], len(systems)),
                         "system": np.repeat(systems, len(w)),
                         "score": np.concatenate([w[s].to_numpy(float) for s in systems])})


def time_r(path: Path, formula: str, repeat: int) -> tuple[float, np.ndarray] | None:
    out = run_rscript(R_CODE, str(path), formula, str(repeat))
    if out is None:
        return None
    vals = [float(v) for v in out.split()]
    return vals[0], np.array(vals[1:]).reshape(-1, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    for name in args.cases:
        formula = CASES[name]
        data = load(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = irm.mixed(formula, data)
            fit.confint("profile")  # first-call set-up (scipy.stats) out of the timing
            t, ci = best_of(lambda: fit.confint("profile"), args.repeat)
        print(f"{name}: {formula} ({len(data)} rows), confint(method = 'profile')")
        print(f"  irmodels  {t:8.4f} s")
        path = tmp / f"{name}.csv"
        data.to_csv(path, index=False)
        r = time_r(path, formula, args.repeat)
        if r is None:
            print("  lme4: Rscript not found, not run")
            continue
        rt, rci = r
        # lme4's rows: the SDs (its order), sigma, the fixed effects; compared as sorted bounds
        gap = np.max(np.abs(np.sort(ci.to_numpy().ravel()) - np.sort(rci.ravel())))
        print(f"  lme4      {rt:8.4f} s")
        print(f"  ratio irmodels / lme4: {t / rt:.2f}x  (largest difference of a bound: "
              f"{gap:.1e})")


if __name__ == "__main__":
    main()
