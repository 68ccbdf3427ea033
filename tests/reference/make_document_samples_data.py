"""Seeded simulated document samples for the nlme fixture of the document-sample study.

Run from ``tests/reference/``: ``python make_document_samples_data.py`` (then
``Rscript document_samples.R``). Writes:

- ``data/document_samples.csv``: ``topic, system, sample, score, y`` for the systems of the
  pairs below, C = 10 bootstrap samples per (topic, system) of the small demo collection
  (``irm.collection.generate(preset="small", seed=1)``, simulation seed 11). ``score`` is AP
  written with 17 significant digits (it reads back to the same double), ``y`` is
  ``logit(AP)`` after clipping AP to ``[1e-3, 1 - 1e-3]`` (irmodels' ``DEFAULT_EPSILON``):
  exactly the response ``compare_tests`` builds from ``score``.
- ``data/document_samples_pairs.csv``: the pairs fitted in R (``a, b``). One pair (sys04 vs
  sys10) has a topic where sys10's simulated values never vary (topic 15), so the exclusion
  rule is exercised; the others span p-values from 1e-5 to 0.2.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

import irmodels as irm
from irmodels.formula.spec import DEFAULT_EPSILON, apply_transform

OUT = Path(__file__).resolve().parent / "data"
COLLECTION_SEED = 1
SIMULATION_SEED = 11
N_SAMPLES = 10
PAIRS = [("sys01", "sys02"), ("sys01", "sys03"), ("sys02", "sys09"), ("sys04", "sys10")]


def simulate() -> pd.DataFrame:
    coll = irm.collection.generate(preset="small", seed=COLLECTION_SEED)
    systems = sorted({s for pair in PAIRS for s in pair})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.DataQualityWarning)
        sims = irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=N_SAMPLES,
                                               measure="AP", seed=SIMULATION_SEED,
                                               systems=systems)
    out = pd.DataFrame({
        "topic": sims["topic"].astype(str),
        "system": sims["system"].astype(str),
        "sample": sims["sample"].astype(int),
        "score": sims["score"].astype(float),
    })
    out["y"] = apply_transform(out["score"].to_numpy(), "logit", DEFAULT_EPSILON)
    return out


def main() -> None:
    OUT.mkdir(exist_ok=True)
    simulate().to_csv(OUT / "document_samples.csv", index=False, float_format="%.17g")
    pd.DataFrame(PAIRS, columns=["a", "b"]).to_csv(OUT / "document_samples_pairs.csv", index=False)


if __name__ == "__main__":
    main()
