"""``irmodels design``: size an experiment from a trial (Webber's workflow).

Examples::

    irmodels design --sigma 0.1 --n 10 --delta 0.05             # trial SD of 10 topics
    irmodels design --data trial.csv --pair base,new --delta 0.05
    irmodels design --data adhoc8:AP --quantile 0.9 --delta 0.05 --sequential 10,5,50
"""

from __future__ import annotations

import argparse

from irmodels._display import frame_to_text
from irmodels.cli._common import column_names, load_data
from irmodels.cli._options import add_columns, int_option, open_unit, positive_float, usage
from irmodels.errors import UsageError


def _topics(text: str) -> int:
    """--n: trial topics, a whole number >= 2."""
    return int_option(text, 2, None, "a whole number of trial topics >= 2")


def _looks(text: str) -> tuple[int, int, int]:
    """--sequential START,STEP,MAX."""
    parts = text.split(",")
    try:
        start, step, top = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected START,STEP,MAX (three whole numbers, e.g. 10,5,50), got {text!r}"
        ) from None
    if start < 2 or step < 1 or top < start:
        raise argparse.ArgumentTypeError(
            f"expected START >= 2, STEP >= 1 and MAX >= START, got {text!r}")
    return start, step, top


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "design",
        help="size an experiment from a trial: upper confidence bound on sigma, topics needed",
        description=(
            "Webber's design workflow: from a trial's SD of per-topic differences (--sigma with "
            "--n, or --data with --pair or --quantile), the one-sided upper confidence bound "
            "sigma_u = sigma sqrt((n-1)/qchisq(1-confidence, n-1)) and the topics the paired "
            "t-test needs for --power to detect --delta, at the estimate and at the bound. "
            "--sequential START,STEP,MAX also simulates adding topics until significant and "
            "prints its false-positive rate."
        ),
        epilog="Example: irmodels design --sigma 0.1 --n 10 --delta 0.05",
    )
    p.add_argument("--delta", type=positive_float, required=True,
                   help="the difference to detect (> 0)")
    p.add_argument("--sigma", type=positive_float, help="the trial's SD of the differences")
    p.add_argument("--n", type=_topics, help="topics in the trial (with --sigma)")
    p.add_argument("--data", help="scores of the trial (long frame or wide matrix, - for "
                   "standard input, or a dataset COLLECTION:MEASURE such as adhoc8:AP)")
    p.add_argument("--pair", help="with --data: the two systems A,B whose differences give sigma")
    p.add_argument("--quantile", type=float, default=0.5,
                   help="with --data and no --pair: quantile of the pairs' SDs (default 0.5)")
    p.add_argument("--power", type=open_unit, default=0.8, help="target power (default 0.8)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--confidence", type=open_unit, default=0.95,
                   help="confidence of the upper bound on sigma (default 0.95)")
    p.add_argument("--sequential", type=_looks, metavar="START,STEP,MAX",
                   help="also simulate a sequential design under the null (its false positives)")
    p.add_argument("--n-sim", type=lambda t: int_option(t, 1, None, "a whole number >= 1"),
                   default=10000, help="simulations for --sequential (default 10000)")
    p.add_argument("--seed", type=lambda t: int_option(t, 0, None, "a whole number >= 0"),
                   default=0,
                   help="seed of --sequential (default 0)")

    add_columns(p)
    p.add_argument("--measure", help="measure to use when --data holds several")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.inference import design

    kw = dict(delta=args.delta, power=args.power, alpha=args.alpha,
              level=args.confidence)
    if args.power <= args.alpha:
        raise UsageError(f"--power {args.power:g} is not above --alpha {args.alpha:g}; ask for "
                         "more power (0.8 is customary)")
    if args.data:
        if args.sigma is not None or args.n is not None:
            raise UsageError("with --data the trial's SD and size come from the data; drop "
                             "--sigma and --n.")
        data = load_data(args.data, columns=column_names(args), measure=args.measure)
        pair = None
        if args.pair:
            pair = tuple(s.strip() for s in args.pair.split(","))
            if len(pair) != 2:
                raise UsageError(f"--pair takes two systems A,B; got {args.pair!r}")
        r = usage(design.size_from_trial, data, pair=pair, quantile=args.quantile, **kw)
    else:
        if args.sigma is None or args.n is None:
            raise UsageError("give the trial: --sigma and --n (its SD and topics), or --data; "
                             "e.g. irmodels design --sigma 0.1 --n 10 --delta 0.05")
        r = usage(design.size_from_trial, args.sigma, n=args.n, **kw)
    print(r._display_title())
    print(frame_to_text(r.table.T.rename(columns={0: "value"}), 6))
    if args.sequential:
        start, step, top = args.sequential
        s = usage(design.sequential, start=start, step=step, max_topics=top, alpha=args.alpha,
                  n_sim=args.n_sim, seed=args.seed)
        print()
        print(s._display_title())
        print(frame_to_text(s.looks, 4))
    return 0
