"""``irmodels gstudy``: variance components and D-study of a score collection.

Examples::

    irmodels gstudy adhoc8_ap.csv --topics 25,50,100 --target 0.95
    irmodels gstudy scores.parquet --measure AP --alpha 0.1
"""

from __future__ import annotations

import argparse

import pandas as pd

from irmodels._display import frame_to_text
from irmodels.cli._common import column_names, float_list, int_list, load_data, user_named  # noqa: F401 (re-exported)
from irmodels.cli._options import add_columns, add_systems, digits, open_unit
from irmodels.errors import DesignError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "gstudy",
        help="generalizability theory: variance components, E rho^2 and Phi, topics needed",
        description=(
            "G-study of a collection (systems x topics, or x shards with a shard column) and the "
            "D-study: E rho^2 and Phi with confidence intervals for other numbers of topics, and "
            "the topics needed to reach a target stability."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (topic, system, score[, shard, measure]) or a "
            "wide matrix CSV (rows = topics, columns = systems). "
            "Example: irmodels gstudy adhoc8_ap.csv --topics 25,50,100 --target 0.95"
        ),
    )
    p.add_argument("data", help="scores: a file, a trec_eval directory, - (standard input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")

    add_systems(p)
    add_columns(p)
    p.add_argument("--measure", help="measure to analyse when the data hold several")
    p.add_argument("--topics", type=int_list, help="numbers of topics for the D-study, e.g. 25,50,100")
    p.add_argument("--shards", type=int_list, help="numbers of shards for the D-study (shard data only)")
    p.add_argument("--target", type=open_unit, default=0.95,
                   help="target stability, strictly between 0 and 1 (default 0.95)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="1 - confidence level (default 0.05)")
    p.add_argument("--digits", type=digits, default=4,
                   help="significant digits shown, 1 to 17 (default 4)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.inference.gtheory import gstudy

    data = load_data(args.data, columns=column_names(args),
                     measure=args.measure, systems=args.systems)

    named, names = user_named(data, args)  # the components then name the user's columns
    g = gstudy(named, **names)
    topics = args.topics or sorted({10, 25, 50, 100, g.n_topics})
    d = g.dstudy(topics, args.shards, level=1 - args.alpha)
    print(g._display_title())
    print("\nVariance components")
    print(frame_to_text(g._display_tables()[0][1], args.digits))
    print(f"\nD-study (confidence {1 - args.alpha:g}, two-sided)")
    print(frame_to_text(d.set_index("topics"), args.digits))
    rows = {}
    for index in ("Erho2", "Phi"):
        try:
            if g.facet is None:
                rows[index] = g.topics_needed(args.target, index=index,
                                                level=1 - args.alpha)
            else:
                rows[index] = pd.Series({"topics": g.topics_needed(args.target, index=index)})
        except DesignError as exc:
            rows[index] = pd.Series({"topics": pd.NA})
            print(f"\n{index}: {exc}")
    table = pd.DataFrame(rows).T
    table.index.name = "index"
    print(f"\nTopics needed for {args.target:g}")
    print(table.to_string())
    return 0
