"""Benchmark: irm.mixed vs statsmodels MixedLM vs lme4/nlme (when Rscript is present).

Run from the repository root: ``python benchmarks/mixed.py [--quick] [--sm-timeout 300]``.

Cases (docs/methods.md: "Linear mixed-effects models"; issue 4):

1. ``hetero``: 2 systems x 50 topics x 10 samples, ``score ~ system + (1|topic/system)`` with one
   residual variance per topic:system stratum (nlme's varIdent). statsmodels has no varIdent:
   its homoscedastic fit is timed instead (said in the output); R side: ``nlme::lme`` with
   ``varIdent`` (lme4 has no variance functions either).
2. ``crossed``: TREC-8 ad hoc AP (129 systems x 50 topics, ``adhoc8_ap.csv``),
   ``score ~ (1|system) + (1|topic)``; statsmodels through one group with ``vc_formula``.
3. ``shards``: 40 systems x 50 topics x 10 shards (simulated, balanced),
   ``score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)``.
4. ``unbalanced``: the same model on 100 systems x 50 topics x 10 shards with 10% of the rows
   removed at random (45,000 rows; REML by L-BFGS-B with the sparse gradient, no closed form).
   statsmodels is not run (its dense design would be 45,000 x 5,650); lme4 once.

5. ``--fixed-cost``: the fixed cost of a small fit, ``score ~ system + (1|topic)`` on 1,000
   rows (50 topics x 20 systems): medians of many fits, wall and CPU, irmodels with text and
   with categorical factor columns, statsmodels MixedLM (REML, topic as group), lme4 ``lmer``
   timed inside R.

Times are wall-clock seconds of the fit alone (best of 3 for irmodels and lme4, one nlme run
(minutes each); one run for statsmodels, stopped after ``--sm-timeout`` seconds). R times are measured inside R with
``system.time`` so R's start-up is excluded. BLAS is pinned to one thread (as R's reference
BLAS): on a busy shared machine a multi-threaded OpenBLAS spends its time spinning.
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
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "ir-scores"


def make_hetero(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    t = rng.normal(0, 0.5, 50)
    ts = rng.normal(0, 0.15, (50, 2))
    sd = np.exp(rng.normal(np.log(0.2), 0.6, (50, 2)))
    for i in range(50):
        for j in range(2):
            y = -1 + 0.08 * j + t[i] + ts[i, j] + rng.normal(0, sd[i, j], 10)
            rows += [(f"t{i + 1:02d}", f"s{j + 1}", str(k + 1), v) for k, v in enumerate(y)]
    return pd.DataFrame(rows, columns=["topic", "system", "sample", "score"])


def make_crossed() -> pd.DataFrame:
    wide = pd.read_csv(SHARED / "adhoc8_ap.csv")
    n_t, n_s = wide.shape
    return pd.DataFrame({"topic": np.tile([f"t{i + 1:02d}" for i in range(n_t)], n_s),
                         "system": np.repeat(wide.columns.to_numpy(), n_t),
                         "score": wide.to_numpy().T.ravel()})


def make_shards(seed: int = 2, T: int = 50, S: int = 40, H: int = 10,
                drop: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 0.04, S)
    t = rng.normal(0, 0.12, T)
    ts = rng.normal(0, 0.05, (T, S))
    th = rng.normal(0, 0.07, (T, H))
    y = (0.25 + a[None, :, None] + t[:, None, None] + ts[:, :, None] + th[:, None, :]
         + rng.normal(0, 0.05, (T, S, H)))
    ti, si, hi = np.meshgrid(np.arange(T), np.arange(S), np.arange(H), indexing="ij")
    data = pd.DataFrame({"topic": [f"t{i + 1:02d}" for i in ti.ravel()],
                         "system": [f"s{j + 1:03d}" for j in si.ravel()],
                         "shard": [f"h{k + 1:02d}" for k in hi.ravel()],
                         "score": y.ravel()})
    if drop:  # unbalanced: a random share of the rows removed
        keep = rng.random(len(data)) >= drop
        data = data[keep].reset_index(drop=True)
    return data


def make_unbalanced(seed: int = 3) -> pd.DataFrame:
    return make_shards(seed, T=50, S=100, H=10, drop=0.1)


SHARD_MODEL = dict(
    formula="score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)",
    residual=None, sm_fixed="C(system)",
    sm_vc={"topic": "0 + C(topic)", "ts": "0 + C(topic):C(system)", "th": "0 + C(topic):C(shard)"},
    r_fit="lmer(score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard), data = d)",
    r_label="lme4::lmer",
)

CASES = {
    "hetero": dict(make=make_hetero, formula="score ~ system + (1|topic/system)",
                   residual="topic:system", sm_fixed="C(system)",
                   sm_vc={"topic": "0 + C(topic)", "ts": "0 + C(topic):C(system)"},
                   r_fit=("lme(score ~ system, random = ~1|topic/system, data = d, "
                          "weights = varIdent(form = ~1|topic*system))"),
                   r_label="nlme::lme varIdent", r_repeats=1),
    "crossed": dict(make=make_crossed, formula="score ~ (1|system) + (1|topic)", residual=None,
                    sm_fixed="1", sm_vc={"system": "0 + C(system)", "topic": "0 + C(topic)"},
                    r_fit="lmer(score ~ (1|system) + (1|topic), data = d)",
                    r_label="lme4::lmer"),
    "shards": dict(make=make_shards, **SHARD_MODEL),
    # the same model, unbalanced: REML by L-BFGS-B (no closed form); lme4 once, no statsmodels
    "unbalanced": dict(make=make_unbalanced, **SHARD_MODEL, r_repeats=1, statsmodels=False),
}


def time_irmodels(data: pd.DataFrame, case: dict, repeats: int = 3) -> tuple[float, float, object]:
    best = np.inf
    fit = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fit = irm.mixed(case["formula"], data, residual=case["residual"])
            best = min(best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        _ = fit.fixed  # Satterthwaite df (lazy)
        t_df = time.perf_counter() - t0
    return best, t_df, fit


def _sm_worker(data: pd.DataFrame, case: dict, out: mp.Queue) -> None:
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = smf.mixedlm(f"score ~ {case['sm_fixed']}", data, groups=np.ones(len(data)),
                            re_formula="0", vc_formula=case["sm_vc"])
        res = model.fit(reml=True)
        el = time.perf_counter() - t0
    out.put((el, float(res.llf), [float(v) for v in res.vcomp], float(res.scale)))


def time_statsmodels(data: pd.DataFrame, case: dict, timeout: float) -> tuple[float, dict | None]:
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_sm_worker, args=(data, case, q))
    t0 = time.perf_counter()
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.terminate()
        p.join()
        return time.perf_counter() - t0, None
    if q.empty():
        return float("nan"), None
    el, llf, vc, scale = q.get()
    return el, {"loglik": llf, "vcomp": vc, "scale": scale}


def time_r(data: pd.DataFrame, case: dict, repeats: int = 3) -> tuple[float, float] | None:
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "d.csv"
        data.to_csv(csv, index=False)
        script = f"""
suppressPackageStartupMessages({{library(lme4); library(nlme)}})
d <- read.csv("{csv.as_posix()}", colClasses = "character"); d$score <- as.numeric(d$score)
for (f in intersect(c("topic", "system", "shard"), names(d))) d[[f]] <- factor(d[[f]])
best <- Inf
for (i in seq_len({repeats})) {{
  tm <- system.time(m <- {case['r_fit']})[["elapsed"]]
  best <- min(best, tm)
}}
cat(sprintf("%.6f %.10f\\n", best, as.numeric(logLik(m))))
"""
        try:
            out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True,
                                 timeout=1800, check=True).stdout.split()
        except (subprocess.SubprocessError, OSError):
            return None
    return float(out[0]), float(out[1])


# -- fixed cost of a small fit ---------------------------------------------------------------
FIXED_FORMULA = "score ~ system + (1|topic)"


def make_small(seed: int = 5, topics: int = 50, systems: int = 20) -> pd.DataFrame:
    """1,000 rows: 50 topics x 20 systems, one score each (balanced)."""
    rng = np.random.default_rng(seed)
    y = (0.3 + rng.normal(0, 0.03, systems)[None, :] + rng.normal(0, 0.1, topics)[:, None]
         + rng.normal(0, 0.08, (topics, systems)))
    return pd.DataFrame({"topic": np.repeat([f"t{i + 1:02d}" for i in range(topics)], systems),
                         "system": np.tile([f"s{j + 1:02d}" for j in range(systems)], topics),
                         "score": y.ravel()})


def _median_fit(fn, repeat: int) -> tuple[float, float, object]:
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu)), out


def fixed_cost(repeat: int, use_r: bool) -> None:
    """Median time of one small fit: irmodels (text and categorical factor columns), statsmodels
    MixedLM (REML, topic as the group) and lme4's lmer timed inside R."""
    import statsmodels.formula.api as smf

    data = make_small()
    cat = data.astype({"topic": "category", "system": "category"})
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    irm.mixed(FIXED_FORMULA, data)  # warm-up (imports)
    t_str = _median_fit(lambda: irm.mixed(FIXED_FORMULA, data), repeat)
    t_cat = _median_fit(lambda: irm.mixed(FIXED_FORMULA, cat), repeat)
    fit = t_cat[2]
    t_df = _median_fit(lambda: irm.mixed(FIXED_FORMULA, cat).fixed, max(3, repeat // 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_sm = _median_fit(lambda: smf.mixedlm("score ~ C(system)", data,
                                               groups=data["topic"]).fit(reml=True),
                           max(3, repeat // 4))
    r = None
    if use_r and shutil.which("Rscript"):
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "d.csv"
            data.to_csv(csv, index=False)
            script = f"""
suppressPackageStartupMessages(library(lme4))
d <- read.csv("{csv.as_posix()}"); d$topic <- factor(d$topic); d$system <- factor(d$system)
m <- lmer(score ~ system + (1|topic), data = d)
reps <- {repeat}; times <- numeric(reps)
for (i in seq_len(reps)) times[i] <- system.time(m <- lmer(score ~ system + (1|topic), data = d))[["elapsed"]]
cat(sprintf("%.6f %.10f\\n", median(times), as.numeric(logLik(m))))
"""
            try:
                out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True,
                                     timeout=600, check=True).stdout.split()
                r = (float(out[0]), float(out[1]))
            except (subprocess.SubprocessError, OSError):
                r = None
    print(f"\n== fixed cost: {FIXED_FORMULA}, {len(data)} rows (50 topics x 20 systems), "
          f"medians of {repeat} fits")
    print(f"  irmodels, text columns          {1e3 * t_str[0]:8.2f} ms wall {1e3 * t_str[1]:8.2f} ms CPU"
          f"  logLik {fit.loglik:.6f} ({'closed form' if fit.closed_form else 'iterative'})")
    print(f"  irmodels, categorical columns   {1e3 * t_cat[0]:8.2f} ms wall {1e3 * t_cat[1]:8.2f} ms CPU")
    print(f"    + Satterthwaite df (fit.fixed) {1e3 * (t_df[0] - t_cat[0]):7.2f} ms wall (lazy: only when read)")
    print(f"  statsmodels MixedLM (REML)      {1e3 * t_sm[0]:8.2f} ms wall {1e3 * t_sm[1]:8.2f} ms CPU"
          f"  ratio {t_sm[0] / t_cat[0]:6.1f}x  logLik {t_sm[2].llf:.6f}")
    if r is not None:
        print(f"  lme4::lmer (inside R)           {1e3 * r[0]:8.2f} ms wall"
              f"                   ratio {r[0] / t_cat[0]:6.1f}x  logLik {r[1]:.6f}")
    elif use_r:
        print("  lme4: Rscript not available")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sm-timeout", type=float, default=600.0,
                    help="seconds before statsmodels is stopped (default 600)")
    ap.add_argument("--no-r", action="store_true", help="skip lme4/nlme")
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES),
                    help="cases to run (default all)")
    ap.add_argument("--r-repeats", type=int, default=3, help="R fits per case (best of)")
    ap.add_argument("--json", help="write the figures to this JSON file")
    ap.add_argument("--fixed-cost", action="store_true",
                    help="only the fixed cost of a small fit (1,000 rows) vs statsmodels and lme4")
    ap.add_argument("--repeat", type=int, default=41, help="fits per median (--fixed-cost)")
    args = ap.parse_args()
    if args.fixed_cost:
        fixed_cost(args.repeat, not args.no_r)
        return
    results = {}
    for name in args.cases:
        case = CASES[name]
        data = case["make"]()
        t_irm, t_df, fit = time_irmodels(data, case)
        if case.get("statsmodels", True):
            t_sm, sm = time_statsmodels(data, case, args.sm_timeout)
        else:
            t_sm, sm = float("nan"), None
        reps = min(args.r_repeats, case.get("r_repeats", args.r_repeats))
        r = None if args.no_r else time_r(data, case, reps)
        row = {"n": len(data), "irmodels": t_irm, "irmodels_with_df": t_irm + t_df,
               "closed_form": fit.closed_form, "loglik": fit.loglik,
               "statsmodels": t_sm if sm is not None else None,
               "statsmodels_timeout": sm is None, "statsmodels_loglik": sm and sm["loglik"],
               "R": r and r[0], "R_loglik": r and r[1], "R_label": case["r_label"]}
        results[name] = row
        print(f"\n== {name}: {case['formula']}"
              + (f", residual={case['residual']}" if case["residual"] else "")
              + f"  (n = {len(data)})")
        how = "closed form" if fit.closed_form else f"{fit.n_iter} iterations"
        print(f"  irmodels      {t_irm:9.4f} s  ({how}; +{t_df:.3f} s for Satterthwaite df)"
              f"  logLik {fit.loglik:.6f}")
        note = " (homoscedastic: statsmodels has no varIdent)" if case["residual"] else ""
        if not case.get("statsmodels", True):
            print("  statsmodels   not run (dense design)")
        elif sm is None:
            print(f"  statsmodels   >{t_sm:8.1f} s  (stopped){note}  ratio > {t_sm / t_irm:.0f}x")
        else:
            print(f"  statsmodels   {t_sm:9.4f} s  ratio {t_sm / t_irm:8.1f}x{note}"
                  f"  logLik {sm['loglik']:.6f}")
        if r is not None:
            print(f"  {case['r_label']:<13} {r[0]:9.4f} s  ratio {r[0] / t_irm:8.2f}x"
                  f"  logLik {r[1]:.6f}")
        elif not args.no_r:
            print("  R             (Rscript not available)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
