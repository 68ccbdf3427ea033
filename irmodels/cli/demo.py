"""``irmodels demo``: write the synthetic demo collection and its per-topic scores.

Examples::

    irmodels demo --out demo/                       # TREC-8-like: 50 topics x 100 runs
    irmodels demo --out demo/ --preset small --seed 3 --measures AP,P@10,nDCG@10
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._options import add_force, positive_int, seed, usage
from irmodels.errors import UndefinedValueWarning


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="generate the synthetic demo collection (qrels, runs) and its per-topic scores",
        description=(
            "Generate a seeded synthetic test collection shaped like TREC-8 ad hoc and write it "
            "to DIR: docids.txt, qrels.txt, runs/<system>.txt (TREC formats) and scores.csv "
            "(the long frame measure, topic, system, score of every run)."
        ),
        epilog="Example: irmodels demo --out demo/ --preset small --measures AP,P@10",
    )
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output directory")
    p.add_argument("--preset", default="trec8", choices=["trec8", "small", "tiny"],
                   help="size: trec8 (50 topics x 100 runs, depth 1000; default), "
                        "small (20 x 12, depth 200), tiny (5 x 4, depth 50)")
    p.add_argument("--seed", type=seed, default=0, help="random seed, >= 0 (default 0)")
    p.add_argument("--topics", type=positive_int, help="number of topics (overrides the preset)")
    p.add_argument("--systems", type=positive_int, help="number of runs (overrides the preset)")
    add_force(p)
    p.add_argument("--measures", default="AP,P@10,nDCG@10,RBP(p=0.8)",
                   help="comma-separated measures for scores.csv (default AP,P@10,nDCG@10,"
                        "RBP(p=0.8))")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.cli.evaluate import measure_list
    from irmodels.data.measures import parse_measure  # idem

    measures = measure_list([args.measures])
    for m in measures:
        usage(parse_measure, m)
    out = Path(args.out)
    check_target(out, force=args.force, kind="dir")  # refuse before the work
    t0 = time.perf_counter()
    col = irm.collection.generate(args.topics, args.systems, preset=args.preset, seed=args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)  # the demo has none; be quiet
        scores = col.evaluate(measures)
    # built beside the target and renamed into place: never mixed with an older collection,
    # never half written
    with atomic_dir(out, force=args.force) as tmp:
        col.write(tmp)
        irm.write_frame(scores, tmp / "scores.csv")
    means = scores.groupby("measure", observed=True)["score"].mean()
    print(f"{col!r}", file=sys.stderr)
    print(f"wrote {out}/docids.txt, qrels.txt, runs/ ({len(col.systems)} files) and scores.csv "
          f"({len(scores):,} rows) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print("mean over topics and systems: "
          + ", ".join(f"{m} {v:.4f}" for m, v in means.items()), file=sys.stderr)
    return 0
