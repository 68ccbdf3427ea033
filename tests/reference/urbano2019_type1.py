"""Write ``urbano2019_type1_irmodels.json``: irmodels' type I error rates on the TREC ad hoc AP
matrices the way Urbano, Lima & Hanjalic (SIGIR 2019) pool them.

The paper (its ``R/11-type_1.R``) draws, in each trial, a collection with probability
proportional to its number of runs among adhoc5-8, two of its runs, and simulates both through
run 1's margin and the pair's bivariate (vine family) copula. Here each collection is fitted with
:func:`irmodels.replicates.fit_simulator` (its own margin per system, a Gaussian copula) inside
:func:`irmodels.studies.test_errors`, given ``n_trials`` proportional to its runs, and the counts
are pooled. As the paper (``R/01-margins.R``) does, runs with identical per-topic scores (within
1e-5) are dropped and then the runs whose mean is below the 10% quantile of the means.

With ``--design pairs`` it simulates the paper's way instead (``test_errors(design="pairs",
sign_ties=0.01)``: run 1's margin for both runs, each pair's bivariate copula chosen by AIC as
VineCopula's ``BiCopSelect``, the sign test's ``|d| <= 0.01`` ties) and writes
``urbano2019_type1_pairs.json``, with the copula families chosen per collection.

Compared with ``urbano2019_type1.json`` (the paper's published rates) by
``tests/studies/test_urbano2019.py``. Run from ``tests/reference/``:
``IRM_DATA_MIRROR=../../../shared/data/ir-scores python urbano2019_type1.py [N_TOTAL]
[--design pairs]`` (about 2 minutes on 2 loaded cores for the default 48,000 trials per size;
the pairs design: see ``seconds`` in its JSON); ``--smoke-only`` recomputes only the JSON's
``smoke`` entry (the short runs the test repeats bit for bit).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

COLLECTIONS = ("adhoc5", "adhoc6", "adhoc7", "adhoc8")
TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation")
SIZES = (25, 50, 100)
ALPHAS = (0.01, 0.05)
N_RESAMPLES = 5000
SEED = 2019
N_TOTAL = 48000  # trials per size (under the null) over the four collections
N_TOTAL_PAIRS = 40000  # the pairs design: Monte Carlo SE 0.0011 at a rate of 0.05
#: The bit-for-bit live check: per collection this many trials, t/wilcoxon/sign, 25 topics, on
#: the collection's first 25 runs (300 pairs: on adhoc5 the pairs design chooses the same 13
#: copula families as on all 55 runs, the four Tawn families among them).
SMOKE = {"n_trials": 50, "tests": ("t", "wilcoxon", "sign"), "sizes": (25,), "seed": SEED,
         "runs": 25}
#: test_errors' options of each design
DESIGNS = {"systems": {}, "pairs": {"design": "pairs", "sign_ties": 0.01}}
OUTPUT = {"systems": "urbano2019_type1_irmodels.json", "pairs": "urbano2019_type1_pairs.json"}


def prepare(collection: str):
    """The collection's AP matrix without duplicate runs and without the bottom 10% by mean."""
    import irmodels as irm

    data = irm.datasets.load(collection, "AP")
    wide = data.pivot(index="topic", columns="system", values="score")
    wide = wide[[s for s in data["system"].cat.categories if s in wide.columns]]
    X = wide.to_numpy(dtype=float)
    keep: list[int] = []
    for j in range(X.shape[1]):  # R's removeDuplicates: drop j if equal to an earlier kept run
        if not any(np.all(np.abs(X[:, i] - X[:, j]) <= 1e-5) for i in keep):
            keep.append(j)
    mu = X[:, keep].mean(axis=0)
    keep = [j for j, m in zip(keep, mu) if m >= np.quantile(mu, 0.1)]
    systems = [wide.columns[j] for j in keep]
    return data[data["system"].isin(systems)].reset_index(drop=True)


def allocate(n_total: int, runs: dict[str, int]) -> dict[str, int]:
    """Trials per collection proportional to its runs (largest remainders)."""
    total = sum(runs.values())
    raw = {c: n_total * r / total for c, r in runs.items()}
    out = {c: int(np.floor(v)) for c, v in raw.items()}
    for c in sorted(raw, key=lambda c: out[c] - raw[c])[: n_total - sum(out.values())]:
        out[c] += 1
    return out


def run(collection: str, data, *, n_trials: int, tests, sizes, seed: int, backend="serial",
        design: str = "systems", families: dict | None = None):
    """The type I counts by ``test|topics|alpha``; with ``families`` (a dict), the copula
    families chosen over the collection's pairs are stored in it (design "pairs")."""
    import irmodels as irm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # systems that cannot reach the null mean are left out
        st = irm.studies.test_errors(
            data, tests=list(tests), sizes=list(sizes), alpha=list(ALPHAS), n_trials=n_trials,
            n_resamples=N_RESAMPLES, seed=seed, backend=backend, **DESIGNS[design])
    if families is not None and st.pair_copulas is not None:
        families.update({str(k): int(v) for k, v in
                         st.pair_copulas["family"].value_counts().sort_index().items()})
    t = st.table
    return {f"{r.test}|{r.topics}|{r.alpha}": int(r.n_type_I) for r in t.itertuples()}


def first_runs(data, k: int):
    """The collection's first ``k`` runs (in its order of systems)."""
    present = set(data["system"].unique())
    systems = [s for s in data["system"].cat.categories if s in present][:k]
    return data[data["system"].isin(systems)].reset_index(drop=True)


def smoke(collection: str, data, index: int, design: str = "systems",
          families: dict | None = None) -> dict[str, int]:
    return run(collection, first_runs(data, SMOKE["runs"]), n_trials=SMOKE["n_trials"],
               tests=SMOKE["tests"], sizes=SMOKE["sizes"], seed=SMOKE["seed"] + index,
               design=design, families=families)


def smoke_entry(datas: dict, design: str) -> dict:
    """The JSON's ``smoke`` entry: the settings and every collection's short run."""
    return {"settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in SMOKE.items()},
            "counts": {c: smoke(c, datas[c], i, design) for i, c in enumerate(COLLECTIONS)}}


def rewrite_smoke(design: str = "systems") -> None:
    """Recompute only the ``smoke`` entry of the design's JSON (``--smoke-only``); the long run's
    entries are left as they are."""
    path = Path(__file__).resolve().parent / OUTPUT[design]
    out = json.loads(path.read_text())
    out["smoke"] = smoke_entry({c: prepare(c) for c in COLLECTIONS}, design)
    path.write_text(json.dumps(out, indent=1) + "\n")


def main(n_total: int = N_TOTAL, design: str = "systems") -> None:
    t0 = time.time()
    datas = {c: prepare(c) for c in COLLECTIONS}
    runs = {c: int(d["system"].nunique()) for c, d in datas.items()}
    alloc = allocate(n_total, runs)
    counts: dict[str, int] = {}
    per_collection = {}
    families: dict[str, dict] = {c: {} for c in COLLECTIONS}
    for i, c in enumerate(COLLECTIONS):
        k = run(c, datas[c], n_trials=alloc[c], tests=TESTS, sizes=SIZES, seed=SEED + i,
                backend="processes", design=design, families=families[c])
        per_collection[c] = k
        for key, v in k.items():
            counts[key] = counts.get(key, 0) + v
        print(c, runs[c], alloc[c], round(time.time() - t0), flush=True)
    rates = []
    for key, v in counts.items():
        test, size, alpha = key.split("|")
        rates.append({"test": test, "topics": int(size), "alpha": float(alpha),
                      "n_type_I": v, "n_trials": n_total, "type_I": v / n_total})
    out = {
        "source": "tests/reference/urbano2019_type1.py",
        "collections": list(COLLECTIONS), "runs_after_cleaning": runs, "trials": alloc,
        "n_total": n_total, "n_resamples": N_RESAMPLES, "seed": SEED,
        "seeds": {c: SEED + i for i, c in enumerate(COLLECTIONS)},
        "rates": rates, "per_collection": per_collection,
        "smoke": smoke_entry(datas, design),
        "seconds": round(time.time() - t0),
    }
    if design != "systems":
        out["design"] = {"design": design, **DESIGNS[design]}
        out["copula_families"] = families
    path = Path(__file__).resolve().parent / OUTPUT[design]
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    chosen = "pairs" if "--design" in sys.argv and "pairs" in sys.argv else "systems"
    if chosen == "pairs":
        args = [a for a in args if a != "pairs"]
    default = N_TOTAL if chosen == "systems" else N_TOTAL_PAIRS
    if "--smoke-only" in sys.argv:
        rewrite_smoke(chosen)
    else:
        main(int(args[0]) if args else default, chosen)
