"""``irmodels datasets``: list and fetch the public TREC score matrices.

Examples::

    irmodels datasets list
    irmodels datasets load adhoc8 AP --out adhoc8_ap.parquet
    IRM_DATA_MIRROR=~/trec-matrices irmodels datasets load robust2004 p10 --wide   # offline copy
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import irmodels as irm
from irmodels._safeio import check_target
from irmodels.cli._options import add_force, output_suffix, usage
from irmodels.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "datasets",
        help="list and load the public per-topic score matrices of TREC tracks",
        description=(
            "The dataset registry: per-topic scores of the runs submitted to TREC tracks "
            "(rows = topics, columns = systems), pinned to a commit of their public source, "
            "sha256-checked, cached under the user's cache directory."
        ),
        epilog=(
            "Files come from $IRM_DATA_MIRROR (a local folder) when it is set, else from the "
            "cache ($IRM_CACHE_DIR or ~/.cache/irmodels), else they are downloaded once."
        ),
    )
    sub = p.add_subparsers(title="actions", metavar="ACTION")
    ls = sub.add_parser("list", help="one line per (collection, measure): shape, source, licence",
                        description="List the datasets of the registry.")
    ls.add_argument("--citations", action="store_true", help="also print what to cite")
    ls.set_defaults(func=run, action="list")
    ld = sub.add_parser(
        "load",
        help="write one dataset as a long frame (or a wide matrix)",
        description="Load COLLECTION/MEASURE and write it as CSV/TSV/parquet (by extension).",
        epilog="Example: irmodels datasets load adhoc8 AP --out adhoc8_ap.csv",
    )
    ld.add_argument("collection", help="collection, e.g. adhoc8 (see 'irmodels datasets list')")
    ld.add_argument("measure", nargs="?", default=None,
                    help="measure, e.g. AP, P@10, p10 (optional when there is only one)")
    ld.add_argument("--out", "-o", default=None,
                    help="output file (.csv, .tsv, .parquet); default: CSV on standard output")
    ld.add_argument("--wide", action="store_true",
                    help="write the wide matrix (rows = topics, columns = systems)")
    add_force(ld)
    ld.set_defaults(func=run, action="load")
    p.set_defaults(func=_help(p))


def _help(parser: argparse.ArgumentParser):
    def show(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return show


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        table = irm.datasets.list()
        show = table.drop(columns=["citation"])
        show["mirror_only"] = show["mirror_only"].map({True: "yes", False: ""})
        print(show.to_string(index=False))
        if args.citations:
            print()
            for source, citation in table.groupby("source", sort=False)["citation"].first().items():
                print(f"{source}: {citation}")
        return 0
    usage(irm.datasets.info, args.collection, args.measure)  # a name typed wrong: exit 2
    if args.out is not None:
        if args.wide and Path(args.out).suffix.lower() in (".parquet", ".pq"):
            raise UsageError(
                f"--out {args.out}: wide matrices are written as CSV or TSV; use a .csv or .tsv "
                "name, or drop --wide to write the long frame as parquet"
            )
        output_suffix(args.out, (".csv", ".tsv", ".tab") + (() if args.wide else (".parquet", ".pq")))
        check_target(args.out, force=args.force)  # refuse before loading
    data = irm.datasets.load(args.collection, args.measure)
    if args.out is None:
        if args.wide:
            irm.to_wide(data).to_csv(sys.stdout, lineterminator="\n")
        else:
            data.to_csv(sys.stdout, index=False, lineterminator="\n")
        return 0
    if args.wide:
        path = irm.write_matrix(data, args.out, force=args.force)
    else:
        path = irm.write_frame(data, args.out, force=args.force)
    t, s = data["topic"].nunique(), data["system"].nunique()
    print(f"wrote {path} ({t} topics x {s} systems, {len(data)} rows)", file=sys.stderr)
    return 0
