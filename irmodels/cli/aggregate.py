"""``irmodels aggregate``: one score per system from per-topic scores (mean, GMAP, ...).

Examples::

    irmodels aggregate scores.csv --how gmean
    irmodels aggregate trec_eval_q_output.txt --how median --out medians.csv
    irmodels aggregate adhoc8:AP --how gmean --epsilon 1e-5
"""

from __future__ import annotations

import argparse
import sys

import irmodels as irm
from irmodels._safeio import check_target
from irmodels.cli._options import add_columns, add_force, add_systems, output_suffix, positive_float


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "aggregate",
        help="one score per system over topics: mean, geometric mean (GMAP), harmonic mean, "
             "median",
        description=(
            "Reduce per-topic scores to one score per system (and per measure, shard, sample): "
            "the arithmetic mean (trec_eval's 'all' line), the geometric mean of the scores "
            "floored at EPSILON (trec_eval's gm_map, gm_bpref), the harmonic mean or the "
            "median. DATA is a long frame, a wide matrix, trec_eval -q output or a dataset "
            "COLLECTION:MEASURE. Writes measure, system, n_topics, score as CSV."
        ),
        epilog="Example: irmodels evaluate runs/ --qrels q.txt -m AP,bpref --out s.csv && "
               "irmodels aggregate s.csv --how gmean",
    )
    p.add_argument("data", metavar="DATA",
                   help="scores: long frame, wide matrix, trec_eval -q output, - (standard "
                        "input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")
    p.add_argument("--how", choices=["mean", "gmean", "hmean", "median"], default="mean",
                   help="mean (default), gmean (GMAP), hmean or median over topics")
    p.add_argument("--epsilon", type=positive_float, default=1e-5,
                   help="floor of the scores of gmean and hmean (default 1e-5, trec_eval's)")
    p.add_argument("--measure", help="only this measure (DATA with several)")

    add_systems(p)
    add_columns(p)
    p.add_argument("--out", "-o", help="output file, .csv/.tsv or .parquet (default: CSV on "
                                       "standard output)")
    add_force(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import column_names, load_data

    if args.out == "-":
        args.out = None
    output_suffix(args.out, (".csv", ".tsv", ".tab", ".parquet", ".pq"))
    if args.out:
        check_target(args.out, force=args.force)  # refuse an existing output before the work

    data = load_data(args.data, measure=args.measure, single_measure=False,
                     systems=args.systems, columns=column_names(args))
    table = irm.aggregate(data, args.how, epsilon=args.epsilon)
    if args.out:
        # here, not at import: start-up time of the CLI
        from irmodels.cli.evaluate import write_table

        write_table(table, args.out, force=args.force)
        print(f"wrote the {args.how} scores of {table['system'].nunique()} system(s) "
              f"({len(table):,} rows) to {args.out}", file=sys.stderr)
    else:
        table.to_csv(sys.stdout, index=False)
    return 0
