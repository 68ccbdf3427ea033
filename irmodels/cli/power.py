"""``irmodels power``: power of the paired t-test and topic-set size.

Examples::

    irmodels power --n 50 --delta 0.05 --sigma 0.1          # -> power
    irmodels power --delta 0.05 --sigma 0.1 --power 0.8     # -> topics needed
    irmodels power --data adhoc8_ap.csv --deltas 0.02,0.05  # tables from the collection's pairs
"""

from __future__ import annotations

import argparse

from irmodels._display import frame_to_text
from irmodels.cli._common import column_names, float_list_type, load_data
from irmodels.cli._options import (
    add_columns,
    add_systems,
    finite_float,
    int_option,
    open_unit,
    positive_float,
    usage,
)
from irmodels.errors import UsageError


def _topics(text: str) -> int:
    """--n: a whole number of topics >= 2 (the paired t test has n - 1 degrees of freedom)."""
    return int_option(text, 2, None,
                "a whole number of topics >= 2 (the test has n - 1 degrees of freedom)")


def _difference(text: str) -> float:
    """--delta: a finite non-zero difference (zero has no power above alpha)."""
    value = finite_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(
            "expected a non-zero difference (with a zero difference the power is alpha, "
            f"whatever the topics), got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "power",
        help="paired t-test power: solve for topics, difference, SD or power",
        description=(
            "Give three of --n, --delta, --sigma, --power and get the fourth (exact noncentral t, "
            "or --method normal). With --data, estimate the SD of per-topic differences from "
            "every system pair of a collection and tabulate the topics needed for --deltas and "
            "the detectable difference at the collection's size."
        ),
        epilog="Example: irmodels power --delta 0.05 --sigma 0.1 --power 0.8",
    )
    p.add_argument("--n", type=_topics, help="number of topics (a whole number >= 2)")
    p.add_argument("--delta", type=_difference,
                   help="true mean difference between two systems (non-zero)")
    p.add_argument("--sigma", type=positive_float, help="SD of the per-topic differences")
    p.add_argument("--power", type=open_unit,
                   help="power (default 0.8 when solving for n, delta or sigma, and with --data)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--alternative", choices=["two-sided", "greater", "less"], default="two-sided")
    p.add_argument("--method", choices=["exact", "normal"], default="exact")
    p.add_argument("--data", help="scores of a collection (long frame or wide matrix, - for "
                   "standard input, or a dataset COLLECTION:MEASURE such as adhoc8:AP)")

    add_systems(p)
    add_columns(p)
    p.add_argument("--measure", help="measure to use when --data holds several")
    p.add_argument("--deltas", type=float_list_type(finite=True, nonzero=True),
                   default=[0.01, 0.02, 0.05, 0.1],
                   help="differences for the --data table (default 0.01,0.02,0.05,0.1)")
    p.add_argument("--quantiles", type=float_list_type(low=0.0, high=1.0), default=[0.5, 0.95],
                   help="quantiles of the per-pair SD for the --data table (default 0.5,0.95)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.inference import power

    kw = dict(alpha=args.alpha, alternative=args.alternative, method=args.method)
    if args.power is not None and args.power <= args.alpha:
        raise UsageError(
            f"--power {args.power:g} is not above --alpha {args.alpha:g}, what a zero difference "
            "already gives; ask for more power (0.8 is customary)"
        )
    if args.data:
        if any(v is not None for v in (args.n, args.delta, args.sigma)):
            raise UsageError(
                "with --data the SD comes from the collection; drop --n, --delta and --sigma "
                "(use --deltas and --power)."
            )
        data = load_data(args.data, columns=column_names(args),
                         measure=args.measure, systems=args.systems)
        t = power.topics_table(data, deltas=args.deltas, powers=[args.power or 0.8],
                               quantiles=args.quantiles, **kw)
        print(t.summary())
        return 0
    target = args.power
    if target is None and sum(v is None for v in (args.n, args.delta, args.sigma)) == 1:
        target = 0.8  # the customary power when solving for n, delta or sigma
    if sum(v is None for v in (args.n, args.delta, args.sigma, target)) != 1:
        raise UsageError(
            "give exactly one unknown: three of --n, --delta, --sigma, --power (or --data); "
            "e.g. irmodels power --delta 0.05 --sigma 0.1 --power 0.8"
        )
    # every value comes from an option: what the function refuses is a usage error
    r = usage(power.paired_t, n=args.n, delta=args.delta, sigma=args.sigma, power=target, **kw)
    print(r._display_title())
    print(frame_to_text(r.to_frame().iloc[0].rename("value").to_frame(), 6))
    if r.solved_for == "n":
        print(f"\n{r.n_topics} topics (the real solution is n = {r.n:.4f})")
    return 0
