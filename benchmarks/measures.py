"""Benchmark: irm.evaluate against pytrec_eval-terrier on the demo collection.

Usage: ``python benchmarks/measures.py [--preset trec8] [--systems N] [--repeat 3]``

The demo collection (preset ``trec8``: 100 runs x 50 topics x depth 1000 = 5,000,000 ranked
documents) is generated once. Then, for the measures AP, P@10 and nDCG@10, in one run:

* ``irmodels``: ``irm.evaluate(col.runs, col.qrels, measures)`` from the DataFrames to the long
  frame (validation, trec_eval ordering, all measures);
* ``pytrec_eval``: (a) converting the DataFrames to the nested dicts pytrec_eval needs
  (``{topic: {docid: score}}`` per run and ``{topic: {docid: rel}}``), timed separately because
  a user holding DataFrames pays it; (b) ``RelevanceEvaluator(qrels, measures)`` and
  ``evaluate(run)`` for every run (results left as pytrec_eval's dicts).

Each side is timed ``--repeat`` times (best time reported); values are checked to be equal
(max absolute difference). The ratios printed: pytrec_eval (conversion + evaluation) /
irmodels, and pytrec_eval (evaluation only) / irmodels; > 1 means irmodels is faster.
"""

from __future__ import annotations

import argparse
import time
import warnings

import irmodels as irm
from irmodels.errors import UndefinedValueWarning

MEASURES = ["AP", "P@10", "nDCG@10"]
PTE_NAMES = {"AP": "map", "P@10": "P_10", "nDCG@10": "ndcg_cut_10"}


def to_dicts(runs, qrels):
    """DataFrames -> pytrec_eval's nested dicts (one run dict per system)."""
    qd: dict = {}
    for t, d, r in zip(qrels["topic"].tolist(), qrels["docid"].tolist(), qrels["rel"].tolist()):
        qd.setdefault(t, {})[d] = int(r)
    rd: dict = {}
    for s, t, d, sc in zip(runs["system"].tolist(), runs["topic"].tolist(),
                           runs["docid"].tolist(), runs["score"].tolist()):
        rd.setdefault(s, {}).setdefault(t, {})[d] = sc
    return rd, qd


def run_pytrec(rd, qd):
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qd, {"map", "P_10", "ndcg_cut_10"})
    return {s: ev.evaluate(run) for s, run in rd.items()}


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="trec8", choices=["trec8", "small", "tiny"])
    ap.add_argument("--systems", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    col = irm.collection.generate(preset=args.preset, systems=args.systems, seed=args.seed)
    gen = time.perf_counter() - t0
    n = len(col.runs)
    print(f"collection: {col!r}; {n:,} ranked documents; generated in {gen:.2f} s")

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedValueWarning)
            return irm.evaluate(col.runs, col.qrels, MEASURES)

    t_irm, frame = best(ours, args.repeat)
    t_conv, (rd, qd) = best(lambda: to_dicts(col.runs, col.qrels), args.repeat)
    t_pte, res = best(lambda: run_pytrec(rd, qd), args.repeat)

    # equal values
    diff = 0.0
    count = 0
    for m, t, s, v in frame[["measure", "topic", "system", "score"]].itertuples(index=False):
        ref = res[str(s)][str(t)][PTE_NAMES[str(m)]]
        diff = max(diff, abs(v - ref))
        count += 1
    expected = sum(len(r) for r in res.values()) * len(MEASURES)
    assert count == expected, (count, expected)
    assert diff < 1e-12, diff

    print(f"measures: {', '.join(MEASURES)}; {count:,} values equal (max |diff| = {diff:.1e})")
    print(f"irmodels  irm.evaluate (DataFrames -> long frame): {t_irm:8.2f} s")
    print(f"pytrec_eval  DataFrames -> dicts:                   {t_conv:8.2f} s")
    print(f"pytrec_eval  RelevanceEvaluator + evaluate:          {t_pte:8.2f} s")
    print(f"ratio pytrec_eval (conversion + evaluation) / irmodels: {(t_conv + t_pte) / t_irm:6.2f}x")
    print(f"ratio pytrec_eval (evaluation only) / irmodels:         {t_pte / t_irm:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
