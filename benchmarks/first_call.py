"""Benchmark: ``irm.evaluate``'s first call in a fresh process against its repeat calls.

Run: ``python benchmarks/first_call.py [--processes 11] [--preset tiny]``

Each of ``--processes`` fresh Python processes imports pandas and irmodels, generates the
demo collection (``irm.collection.generate(preset=...)``, not timed), then times:

1. resolving ``irm.evaluate`` (``import irmodels`` is lazy: this imports the evaluation
   modules, about what ``from irmodels import evaluate`` costs);
2. the first call ``evaluate(runs, qrels, ["AP", "P@10", "nDCG@10"])``;
3. five repeat calls (their median).

``--hugepages off`` stops numpy from asking Linux for transparent huge pages for its large
arrays (``madvise``), to show how much of a large first call is the kernel supplying them.

Printed: the medians over the processes, and the ratio first call / repeat (goal: 1x, the
first call as fast as a repeat). The baseline is the same call repeated in the same process.

The peer: the same ``--processes`` fresh processes time, after ``irm.evaluate``, a plain pandas
computation of AP on other frames of the same size (merge with the qrels, sort, grouped cumulative
sums: what one writes without irmodels), asserted equal to irmodels' AP, first call against its
repeats. Any Python code pays something the first time it runs in a process (CPython specialises
its bytecode as it runs, pandas and pyarrow fill caches of dtypes, kernels and index engines); the
peer's ratio shows how much of that plain pandas pays on this work. Children run with bytecode
caching (``PYTHONDONTWRITEBYTECODE`` removed), as on a user's machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import pandas as pd
if sys.argv[2] == "off":  # numpy's madvise(MADV_HUGEPAGE) on large arrays (Linux), off
    multiarray = getattr(np, "_core", getattr(np, "core", None)).multiarray
    multiarray._set_madvise_hugepage(False)
import irmodels as irm
col = irm.collection.generate(preset=sys.argv[1], seed=0)
runs, qrels, measures = col.runs, col.qrels, ["AP", "P@10", "nDCG@10"]
t0 = time.perf_counter()
evaluate = irm.evaluate
t1 = time.perf_counter()
first = evaluate(runs, qrels, measures)
t2 = time.perf_counter()
repeats = []
for _ in range(5):
    t = time.perf_counter()
    again = evaluate(runs, qrels, measures)
    repeats.append(time.perf_counter() - t)
assert first.equals(again)


def pandas_ap(runs, qrels):
    # AP per (system, topic) in plain pandas, trec_eval's order (score desc, then docid desc)
    d = runs.merge(qrels, on=["topic", "docid"], how="left")
    d["hit"] = (d["rel"].fillna(0) > 0).astype(float)
    d = d.sort_values(["system", "topic", "score", "docid"],
                      ascending=[True, True, False, False], kind="stable")
    g = d.groupby(["system", "topic"], sort=False)
    d["prec"] = d["hit"] * g["hit"].cumsum() / (g.cumcount() + 1)
    n_rel = qrels[qrels["rel"] > 0].groupby("topic").size()
    ap = d.groupby(["system", "topic"])["prec"].sum()
    return ap / n_rel.reindex(ap.index.get_level_values("topic")).to_numpy()


other = irm.collection.generate(preset=sys.argv[1], seed=1)  # fresh frames for the peer
t3 = time.perf_counter()
peer = pandas_ap(other.runs, other.qrels)
t4 = time.perf_counter()
peer_repeats = []
for _ in range(5):
    t = time.perf_counter()
    pandas_ap(other.runs, other.qrels)
    peer_repeats.append(time.perf_counter() - t)
ours = evaluate(other.runs, other.qrels, ["AP"]).set_index(["system", "topic"])["score"]
assert np.allclose(peer.reindex(ours.index).to_numpy(), ours.to_numpy(), atol=1e-12)
print(json.dumps({"resolve": t1 - t0, "first": t2 - t1, "repeat": statistics.median(repeats),
                  "peer_first": t4 - t3, "peer_repeat": statistics.median(peer_repeats)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=11)
    parser.add_argument("--preset", default="tiny", choices=["tiny", "small", "trec8"])
    parser.add_argument("--hugepages", default="on", choices=["on", "off"],
                        help="off: numpy does not ask Linux for transparent huge pages for its "
                             "large arrays (shows where the first call's extra time goes on "
                             "large collections)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rows = []
    load = os.getloadavg()[0]
    for _ in range(args.processes):
        out = subprocess.run([sys.executable, "-c", CHILD, args.preset, args.hugepages], env=env, check=True,
                             capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    load = max(load, os.getloadavg()[0])
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    ratios = sorted(r["first"] / r["repeat"] for r in rows)
    print(f"irm.evaluate on the {args.preset} demo, AP + P@10 + nDCG@10, {args.processes} fresh "
          f"processes (load average {load:.1f}; numpy huge pages {args.hugepages}); medians:")
    print(f"  resolving irm.evaluate (imports the evaluation modules) {med['resolve'] * 1e3:7.1f} ms")
    print(f"  first call                                              {med['first'] * 1e3:7.1f} ms")
    print(f"  repeat call                                             {med['repeat'] * 1e3:7.1f} ms")
    print(f"  first / repeat: median {statistics.median(ratios):.2f}x "
          f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}x; goal 1x); first - repeat "
          f"{(med['first'] - med['repeat']) * 1e3:.1f} ms")
    peer = sorted(r["peer_first"] / r["peer_repeat"] for r in rows)
    print("peer: AP in plain pandas (merge, sort, grouped cumsum), equal to irmodels' AP, on "
          "fresh frames of the same size:")
    print(f"  first call                                              {med['peer_first'] * 1e3:7.1f} ms")
    print(f"  repeat call                                             {med['peer_repeat'] * 1e3:7.1f} ms")
    print(f"  first / repeat: median {statistics.median(peer):.2f}x "
          f"(range {peer[0]:.2f}-{peer[-1]:.2f}x); first - repeat "
          f"{(med['peer_first'] - med['peer_repeat']) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
