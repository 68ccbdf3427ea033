"""Benchmark: GLMMs, irm.mixed(family=...) vs lme4's glmer and glmmTMB (when Rscript is present).

Run from the repository root: ``python benchmarks/glmm.py [--repeat 3]``.

Cases (issue 28):

- ``cbpp`` / ``cbpp_agq10``: lme4's cbpp, ``cbind(incidence, size - incidence) ~ period +
  (1 | herd)``, binomial, Laplace and ``nAGQ = 10`` (56 rows, 15 herds);
- ``p10_topic`` / ``p10_crossed``: the fixtures' TREC-8 P@10 matrix (8 systems x 50 topics,
  successes ``round(10 P@10)`` out of 10): ``rel ~ system + (1 | topic)`` and ``rel ~ 1 +
  (1 | topic) + (1 | system)``;
- ``p10_olre``: ``rel ~ system + (1 | topic) + (1 | topic:system)`` on the 8 x 50 matrix (an
  observation-level term: 450 random effects);
- ``p10_large_topic`` / ``p10_large_crossed``: the same models on 40 TREC-8 systems x 50 topics
  (2,000 rows; the 40 best runs by mean P@10);
- ``beta_ap`` (glmmTMB's ``beta_family()``): the fixtures' AP design (``ap ~ system +
  (1 | topic)``, 400 rows) and ``beta_large``: 40 TREC-8 runs x 50 topics of AP (2,000 rows,
  Smithson & Verkuilen's squeeze on both sides, as there are zeros);
- ``cbpp_profile``: profile intervals of the cbpp fit, ``fit.confint()`` against lme4's
  ``confint(method = "profile")``.

Times are wall-clock seconds of the fit alone (the fit's summary quantities included: irmodels
computes its SEs during the fit), best of ``--repeat``; R's are measured inside R with
``system.time`` (start-up and data loading excluded), glmer's and glmmTMB's default settings.
The log-likelihoods are printed beside the times so that the fits can be seen to agree. BLAS is
pinned to one thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _timing import best_of, run_rscript

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
GLMM = ROOT / "tests" / "reference" / "data" / "glmm"
SHARED = Path(os.environ.get("IRM_DATA_MIRROR", ROOT.parent / "shared" / "data" / "ir-scores"))
P10_SYSTEMS = ["run123", "run105", "run89", "run128", "run65", "run46", "run32", "run23"]

# name: (data, irmodels formula, irm.mixed keywords, R formula, R family, nAGQ, engine)
CASES: dict[str, tuple[str, str, dict, str, str, int, str]] = {
    "cbpp": ("cbpp", "incidence ~ C(period) + (1|herd)", dict(family="binomial", trials="size"),
             "cbind(incidence, size - incidence) ~ period + (1 | herd)", "binomial", 1, "glmer"),
    "cbpp_agq10": ("cbpp", "incidence ~ C(period) + (1|herd)",
                   dict(family="binomial", trials="size", nagq=10),
                   "cbind(incidence, size - incidence) ~ period + (1 | herd)", "binomial", 10,
                   "glmer"),
    "p10_topic": ("p10", "rel ~ system + (1|topic)", dict(family="binomial", trials=10),
                  "cbind(rel, 10 - rel) ~ system + (1 | topic)", "binomial", 1, "glmer"),
    "p10_crossed": ("p10", "rel ~ 1 + (1|topic) + (1|system)",
                    dict(family="binomial", trials=10),
                    "cbind(rel, 10 - rel) ~ 1 + (1 | topic) + (1 | system)", "binomial", 1,
                    "glmer"),
    "p10_large_topic": ("p10_large", "rel ~ system + (1|topic)",
                        dict(family="binomial", trials=10),
                        "cbind(rel, 10 - rel) ~ system + (1 | topic)", "binomial", 1, "glmer"),
    "p10_large_crossed": ("p10_large", "rel ~ 1 + (1|topic) + (1|system)",
                          dict(family="binomial", trials=10),
                          "cbind(rel, 10 - rel) ~ 1 + (1 | topic) + (1 | system)", "binomial",
                          1, "glmer"),
    # observation-level random effects (one per topic x system cell: 450 random effects)
    "p10_olre": ("p10", "rel ~ system + (1|topic) + (1|topic:system)",
                 dict(family="binomial", trials=10),
                 "cbind(rel, 10 - rel) ~ system + (1 | topic) + (1 | topic:system)", "binomial",
                 1, "glmer"),
    "beta_ap": ("beta_ap", "ap ~ system + (1|topic)", dict(family="beta"),
                "ap ~ system + (1 | topic)", "beta", 1, "glmmTMB"),
    "beta_large": ("ap_large", "ap ~ system + (1|topic)", dict(family="beta"),
                   "ap ~ system + (1 | topic)", "beta", 1, "glmmTMB"),
}

R_CODE = r"""
suppressPackageStartupMessages({library(lme4); library(glmmTMB)})
args <- commandArgs(TRUE); rep <- as.integer(args[5])
d <- read.csv(args[1], stringsAsFactors = FALSE)
for (v in c("herd", "period", "topic", "system")) if (!is.null(d[[v]])) d[[v]] <- factor(d[[v]])
f <- as.formula(args[2]); t <- Inf
for (i in seq_len(rep)) {
  if (args[3] == "beta") {
    t <- min(t, system.time(m <- glmmTMB(f, data = d, family = beta_family()))[["elapsed"]])
  } else {
    t <- min(t, system.time(m <- suppressMessages(glmer(f, data = d, family = binomial,
                                                        nAGQ = as.integer(args[4]))))[["elapsed"]])
  }
}
cat(t, format(as.numeric(logLik(m)), digits = 12), "\n")
"""


R_PROFILE = r"""
suppressPackageStartupMessages(library(lme4))
args <- commandArgs(TRUE); rep <- as.integer(args[2])
d <- read.csv(args[1], stringsAsFactors = FALSE)
d$herd <- factor(d$herd); d$period <- factor(d$period)
m <- glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), d, family = binomial)
t <- Inf
for (i in seq_len(rep))
  t <- min(t, system.time(ci <- suppressMessages(confint(m, method = "profile")))[["elapsed"]])
cat(t, "\n")
"""


def profile_case(tmp: Path, repeat: int) -> None:
    """Profile intervals on cbpp: ``fit.confint()`` against lme4's ``confint(method =
    "profile")`` (the fit excluded on both sides)."""
    data = load("cbpp")
    path = tmp / "cbpp.csv"
    data.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed("incidence ~ C(period) + (1|herd)", data, family="binomial",
                        trials="size")
    t, _ = best_of(fit.confint, repeat)
    print("cbpp_profile: confint(method = 'profile') of the cbpp fit (5 parameters)")
    print(f"  irmodels      {t:8.4f} s")
    out = run_rscript(R_PROFILE, str(path), str(repeat))
    if out is None:
        print("  glmer: Rscript not found, not run")
        return
    r = float(out.split()[0])
    print(f"  lme4          {r:8.4f} s")
    print(f"  ratio irmodels / lme4: {t / r:.2f}x")


def load(name: str) -> pd.DataFrame:
    """The benchmark's data sets (topic, system as strings)."""
    if name == "cbpp":
        return pd.read_csv(GLMM / "cbpp.csv", dtype={"herd": str, "period": str})
    if name == "beta_ap":
        return pd.read_csv(GLMM / "beta_ap.csv", dtype={"topic": str, "system": str})
    measure = "p10" if name.startswith("p10") else "ap"
    w = pd.read_csv(SHARED / f"adhoc8_{measure}.csv")
    systems = P10_SYSTEMS if name == "p10" else list(w.mean().sort_values().index[-40:])
    d = pd.DataFrame({"topic": np.tile([str(t + 1) for t in range(len(w))], len(systems)),
                      "system": np.repeat(systems, len(w)),
                      "score": np.concatenate([w[s].to_numpy(float) for s in systems])})
    if measure == "p10":
        d["rel"] = np.round(d.pop("score") * 10)
    else:  # Smithson & Verkuilen's squeeze (zeros present), the same on both sides
        n = len(d)
        d["ap"] = (d.pop("score") * (n - 1) + 0.5) / n
    return d


def time_irmodels(data: pd.DataFrame, formula: str, kw: dict, repeat: int
                  ) -> tuple[float, float]:
    def fit() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return irm.mixed(formula, data, **kw)

    t, res = best_of(fit, repeat)
    return t, float(res.loglik)  # type: ignore[attr-defined]


def time_r(path: Path, formula: str, family: str, nagq: int, repeat: int
           ) -> tuple[float, float] | None:
    out = run_rscript(R_CODE, str(path), formula, family, str(nagq), str(repeat))
    if out is None:
        return None
    t, ll = out.split()
    return float(t), float(ll)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=list(CASES) + ["cbpp_profile"])
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    irm.mixed("y ~ (1|g)", pd.DataFrame({"y": [0, 1, 1, 0, 1, 0], "g": list("aabbcc")}),
              family="binomial")  # imports and first-call set-up out of the timings
    for name in args.cases:
        if name == "cbpp_profile":
            profile_case(tmp, args.repeat)
            continue
        src, formula, kw, r_formula, family, nagq, engine = CASES[name]
        data = load(src)
        path = tmp / f"{src}.csv"
        data.to_csv(path, index=False)
        t, ll = time_irmodels(data, formula, kw, args.repeat)
        print(f"{name}: {r_formula}, {family}{'' if nagq == 1 else f', nAGQ = {nagq}'}  "
              f"({len(data)} rows)")
        print(f"  irmodels      fit {t:8.4f} s  logLik {ll:.6f}")
        r = time_r(path, r_formula, family, nagq, args.repeat)
        if r is None:
            print(f"  {engine}: Rscript not found, not run")
            continue
        print(f"  {engine:<13} fit {r[0]:8.4f} s  logLik {r[1]:.6f}")
        print(f"  ratio irmodels / {engine}: {t / r[0]:.2f}x")


if __name__ == "__main__":
    main()
