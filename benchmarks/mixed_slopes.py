"""Benchmark: random slopes, irm.mixed vs lme4 (when Rscript is present) vs statsmodels MixedLM.

Run from the repository root: ``python benchmarks/mixed_slopes.py [--repeat 5]``.

Cases (issue 27): lme4's sleepstudy, ``Reaction ~ Days + (Days | Subject)`` by REML (180
rows, 18 subjects; statsmodels: ``groups=Subject, re_formula="~Days"``), and the simulated
kb07-shaped design of the fixtures (``tests/reference/make_slopes_data.py``: 1,792 rows,
``rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)``), and a large IR design
(``ir_large``: 50 topics x 50 systems x 4 shards, 10,000 rows, ``score ~ system + x + (1 + x |
topic) + (1 | topic:system)``, q = 2,600: the sparse solver). statsmodels has no crossed random
slopes, so it runs on sleepstudy only. Times are wall-clock seconds of the fit
alone, best of ``--repeat``; R's are measured inside R with ``system.time`` (start-up
excluded), lme4's default optimiser (bobyqa then its checks). irmodels' time includes the
Satterthwaite df of the coefficients (``fit.fixed``), which lme4 alone does not compute:
lmerTest's ``summary`` is timed as well. BLAS is pinned to one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _timing import best_of, run_rscript

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "reference" / "data" / "lme4"
CASES = {
    "sleepstudy": ("sleepstudy.csv", "Reaction ~ Days + (Days | Subject)"),
    "kb07sim": ("kb07sim.csv", "rt ~ spkr + prec + load + (1 + load | subj) + (1 + load | item)"),
    "ir_large": (None, "score ~ system + x + (1 + x | topic) + (1 | topic:system)"),
}


def make_ir_large(seed: int = 5) -> pd.DataFrame:
    """50 topics x 50 systems x 4 shards (10,000 rows; q = 2,600 random effects): per-topic
    intercepts and slopes of the shard contrast ``x``, a topic:system interaction."""
    rng = np.random.default_rng(seed)
    T, S, K = 50, 50, 4
    t, s, k = (a.ravel() for a in np.meshgrid(np.arange(T), np.arange(S), np.arange(K),
                                               indexing="ij"))
    x = (k - 1.5) / 3
    bt = rng.normal(0, [0.15, 0.05], (T, 2))
    y = (0.3 + 0.002 * s + bt[t, 0] + bt[t, 1] * x + rng.normal(0, 0.05, (T, S))[t, s]
         + rng.normal(0, 0.05, len(t)))
    return pd.DataFrame({"topic": [f"t{i}" for i in t], "system": [f"s{j}" for j in s],
                         "x": x, "score": y})

R_CODE = r"""
suppressPackageStartupMessages({library(lme4); library(lmerTest)})
args <- commandArgs(TRUE); rep <- as.integer(args[3])
d <- read.csv(args[1], stringsAsFactors = TRUE)
for (f in c("Subject", "subj", "item")) if (!is.null(d[[f]])) d[[f]] <- factor(d[[f]])
t1 <- Inf; t2 <- Inf; c1 <- Inf; c2 <- Inf
cpu <- function(st) st[["user.self"]] + st[["sys.self"]]
for (i in seq_len(rep)) {
  st <- system.time(m <- lme4::lmer(as.formula(args[2]), data = d))
  t1 <- min(t1, st[["elapsed"]]); c1 <- min(c1, cpu(st))
  st <- system.time({m2 <- lmerTest::lmer(as.formula(args[2]), data = d); s <- summary(m2)})
  t2 <- min(t2, st[["elapsed"]]); c2 <- min(c2, cpu(st))
}
cat(t1, t2, sprintf("%.8f", as.numeric(logLik(m))), c1, c2, "\n")
"""


def best_cpu(fn: Any, repeat: int) -> float:
    """The least CPU time (this process) of ``repeat`` calls of ``fn``, in seconds."""
    best = np.inf
    for _ in range(repeat):
        c0 = time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
    return float(best)


def time_irmodels(data: pd.DataFrame, formula: str, repeat: int) -> tuple[float, ...]:
    """(fit wall, fit + df wall, logLik, fit CPU, fit + df CPU)."""
    def fit() -> object:
        return irm.mixed(formula, data)

    t_fit, res = best_of(fit, repeat)

    def with_df() -> object:
        r = irm.mixed(formula, data)
        return r.fixed

    t_df, _ = best_of(with_df, repeat)
    return (t_fit, t_df, float(res.loglik), best_cpu(fit, repeat),  # type: ignore[attr-defined]
            best_cpu(with_df, repeat))


def time_lme4(path: Path, formula: str, repeat: int) -> tuple[float, ...] | None:
    """(fit wall, lmerTest + summary wall, logLik, fit CPU, lmerTest + summary CPU)."""
    out = run_rscript(R_CODE, str(path), formula, str(repeat), timeout=600)
    if out is None:
        return None
    return tuple(float(v) for v in out.split())


def time_statsmodels(data: pd.DataFrame, repeat: int) -> tuple[float, float] | None:
    try:
        import statsmodels.formula.api as smf
    except ImportError:  # pragma: no cover
        return None

    def fit() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return smf.mixedlm("Reaction ~ Days", data, groups=data["Subject"],
                               re_formula="~Days").fit(reml=True)

    t, res = best_of(fit, repeat)
    return t, float(res.llf)  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("load average (1, 5, 15 min) at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    tmp = Path(tempfile.mkdtemp())
    for name, (file, formula) in CASES.items():
        if file is None:
            path = tmp / f"{name}.csv"
            make_ir_large().to_csv(path, index=False)
        else:
            path = DATA / file
        data = pd.read_csv(path, dtype={"Subject": str})
        t_fit, t_df, ll, c_fit, c_df = time_irmodels(data, formula, args.repeat)
        print(f"{name}: {formula}  ({len(data)} rows)")
        print(f"  irmodels       fit {t_fit:8.4f} s  fit + Satterthwaite df {t_df:8.4f} s  "
              f"logLik {ll:.6f}   CPU: fit {c_fit:.4f} s, with df {c_df:.4f} s")
        r = time_lme4(path, formula, args.repeat)
        if r is not None:
            print(f"  lme4::lmer     fit {r[0]:8.4f} s  lmerTest fit + summary {r[1]:8.4f} s  "
                  f"logLik {r[2]:.6f}   CPU: fit {r[3]:.4f} s, with df {r[4]:.4f} s")
            print(f"  speed-up lme4 / irmodels: wall fit {r[0] / t_fit:.1f}x, with df "
                  f"{r[1] / t_df:.1f}x; CPU fit {r[3] / c_fit:.1f}x, with df "
                  f"{r[4] / c_df:.1f}x")
        else:
            print("  lme4: Rscript not found, not run")
        if name == "sleepstudy":
            s = time_statsmodels(data, args.repeat)
            if s is not None:
                print(f"  statsmodels    fit {s[0]:8.4f} s  logLik {s[1]:.6f}")
                print(f"  ratio irmodels / statsmodels: {t_fit / s[0]:.2f}x")
        else:
            print("  statsmodels: no crossed random slopes (MixedLM has one grouping factor)")
    print("load average (1, 5, 15 min) at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
