"""Write ``urbano2019_type2_irmodels.json``: irmodels' type II and III error rates on the TREC ad
hoc AP matrices the way Urbano, Lima & Hanjalic (SIGIR 2019) simulate them.

The paper (``R/02-margins_transform.R``, ``R/12-type_2.R``, ``R/13-type_3.R``) draws, in each
trial, a collection with probability proportional to its number of baselines (runs but the top
quarter by expected score that have an alternative), a baseline b uniformly, an experimental run e
uniformly among the 10 runs whose expected scores are nearest b's plus delta, whose margin is
transformed to b's expected score plus delta, and simulates the pair through the copula of (b, e).
Here ``test_errors(design="pairs", sign_ties=0.01, delta=...)`` does the same per collection (the
cleaning of ``urbano2019_type1.py``), given ``n_trials`` proportional to its baselines, and the
counts are pooled. Its null trials are run too (test_errors always runs both) but not used here.

Compared with ``urbano2019_type2.json`` (the paper's published rates) by
``tests/studies/test_urbano2019.py``. Run from ``tests/reference/``:
``IRM_DATA_MIRROR=../../../shared/data/ir-scores python urbano2019_type2.py [N_TOTAL]`` (see
``seconds`` in the JSON); ``--smoke-only`` recomputes only the JSON's ``smoke`` entry.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation")
SIZES = (25, 50, 100)
ALPHAS = (0.01, 0.05)
DELTAS = (0.01, 0.02, 0.03)
N_RESAMPLES = 2000
SEED = 2019
N_TOTAL = 30000  # trials per size and delta over the four collections
#: The bit-for-bit live check: adhoc5's first 25 runs (as urbano2019_type1.py's), this many
#: trials, t/wilcoxon/sign, 25 topics, delta 0.01.
SMOKE = {"n_trials": 50, "tests": ("t", "wilcoxon", "sign"), "sizes": (25,), "seed": SEED,
         "delta": 0.01, "runs": 25}


def type1_script():
    spec = importlib.util.spec_from_file_location("urbano2019_type1", HERE / "urbano2019_type1.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def baselines(data, delta: float) -> int:
    """The collection's baselines with at least one alternative (the paper's ``effs_c``)."""
    import irmodels as irm
    from irmodels.studies.error_rates import _paper_alternatives

    sim = irm.replicates.fit_simulator(data)
    return len({b for b, _, _ in _paper_alternatives(sim._margins, delta, sim.systems)})


def run(data, *, n_trials: int, tests, sizes, seed: int, delta: float, backend="serial"):
    """The type II and III counts by ``test|topics|alpha``."""
    import irmodels as irm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st = irm.studies.test_errors(
            data, tests=list(tests), sizes=list(sizes), alpha=list(ALPHAS), n_trials=n_trials,
            n_resamples=N_RESAMPLES, seed=seed, backend=backend, design="pairs", sign_ties=0.01,
            delta=delta)
    return {f"{r.test}|{r.topics}|{r.alpha}": [int(r.n_type_II), int(r.n_type_III)]
            for r in st.table.itertuples()}


def smoke(data) -> dict[str, list[int]]:
    return run(type1_script().first_runs(data, SMOKE["runs"]), n_trials=SMOKE["n_trials"],
               tests=SMOKE["tests"], sizes=SMOKE["sizes"], seed=SMOKE["seed"],
               delta=SMOKE["delta"])


def smoke_entry(data) -> dict:
    """The JSON's ``smoke`` entry: the settings and adhoc5's short run."""
    return {"settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in SMOKE.items()},
            "counts": smoke(data)}


def rewrite_smoke() -> None:
    """Recompute only the ``smoke`` entry of the JSON (``--smoke-only``)."""
    path = HERE / "urbano2019_type2_irmodels.json"
    out = json.loads(path.read_text())
    out["smoke"] = smoke_entry(type1_script().prepare("adhoc5"))
    path.write_text(json.dumps(out, indent=1) + "\n")


def main(n_total: int = N_TOTAL) -> None:
    t0 = time.time()
    t1 = type1_script()
    datas = {c: t1.prepare(c) for c in t1.COLLECTIONS}
    out_deltas = {}
    for di, delta in enumerate(DELTAS):
        nb = {c: baselines(d, delta) for c, d in datas.items()}
        alloc = t1.allocate(n_total, nb)
        counts: dict[str, list[int]] = {}
        for i, c in enumerate(t1.COLLECTIONS):
            k = run(datas[c], n_trials=alloc[c], tests=TESTS, sizes=SIZES,
                    seed=SEED + 10 * di + i, delta=delta, backend="processes")
            for key, (n2, n3) in k.items():
                old = counts.get(key, [0, 0])
                counts[key] = [old[0] + n2, old[1] + n3]
            print(delta, c, nb[c], alloc[c], round(time.time() - t0), flush=True)
        rates = []
        for key, (n2, n3) in counts.items():
            test, size, alpha = key.split("|")
            rates.append({"test": test, "topics": int(size), "alpha": float(alpha),
                          "n_type_II": n2, "n_type_III": n3, "n_trials": n_total,
                          "power": 1 - n2 / n_total, "type_III": n3 / n_total})
        out_deltas[str(delta)] = {"baselines": nb, "trials": alloc, "rates": rates,
                                  "seeds": {c: SEED + 10 * di + i
                                            for i, c in enumerate(t1.COLLECTIONS)}}
    out = {
        "source": "tests/reference/urbano2019_type2.py",
        "design": {"design": "pairs", "sign_ties": 0.01},
        "collections": list(t1.COLLECTIONS), "n_total": n_total, "n_resamples": N_RESAMPLES,
        "seed": SEED, "deltas": out_deltas,
        "smoke": smoke_entry(datas["adhoc5"]),
        "seconds": round(time.time() - t0),
    }
    (HERE / "urbano2019_type2_irmodels.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--smoke-only" in sys.argv:
        rewrite_smoke()
    else:
        main(int(args[0]) if args else N_TOTAL)
