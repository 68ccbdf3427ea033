"""``irmodels pairwise``: significance tests for every pair of systems (or chosen pairs).

Examples::

    irmodels pairwise adhoc8_ap.csv --test t --adjust holm
    irmodels pairwise scores.parquet --test randomization --adjust tukey --seed 1 --out pairs.csv
    irmodels pairwise adhoc8_ap.csv --test wilcoxon --pairs run1:run2,run1:run3
    irmodels pairwise sharded.csv --average          # mean over shards per (topic, system)
    irmodels pairwise adhoc8:AP --pairs run1:run2 --equivalence 0.01   # TOST p_equiv too
"""

from __future__ import annotations

import argparse
import sys

import irmodels as irm
from irmodels._display import frame_to_text
from irmodels._safeio import atomic_file, check_target
from irmodels.cli._options import (
    add_columns,
    add_force,
    add_systems,
    open_unit,
    positive_float,
    positive_int,
    seed,
)
from irmodels.errors import DesignError

_SHOW = 20


def _pairs(text: str) -> list[tuple[str, str]]:
    out = []
    for item in text.split(","):
        a, sep, b = item.strip().partition(":")
        if not sep or not a or not b:
            raise argparse.ArgumentTypeError(
                f"bad pair {item!r}: write pairs as a:b,c:d (system names separated by ':')"
            )
        if a == b:
            raise argparse.ArgumentTypeError(
                f"bad pair {item!r}: it compares a system with itself; name two systems"
            )
        out.append((a, b))
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pairwise",
        help="pairwise significance tests between systems, with multiplicity adjustment",
        description=(
            "Test every pair of systems (or --pairs) on the topics of DATA: paired t, Welch t "
            "(t2), Wilcoxon signed-rank, sign, shifted bootstrap or randomization test, with "
            "Bonferroni, Holm, Benjamini-Hochberg or randomised Tukey HSD adjustment. DATA is a "
            "long frame (CSV/TSV with topic, system, score columns, or parquet) or a wide "
            "matrix (rows = topics, columns = systems) with one score per (topic, system)."
        ),
        epilog="Example: irmodels pairwise adhoc8_ap.csv --test t --adjust holm --out pairs.csv",
    )
    p.add_argument("data", metavar="DATA", help="scores: a file, a trec_eval directory, - (standard input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")

    add_systems(p)
    add_columns(p)
    p.add_argument("--test", default="t",
                   choices=["t", "t2", "wilcoxon", "sign", "bootstrap", "randomization"],
                   help="the test (default t, the paired t test)")
    p.add_argument("--adjust", default="none",
                   choices=["none", "bonferroni", "holm", "bh", "tukey"],
                   help="multiplicity adjustment over the tested pairs (default none)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--alternative", default="two-sided", choices=["two-sided", "greater", "less"])
    p.add_argument("--pairs", type=_pairs, help="only these pairs, e.g. run1:run2,run1:run3")
    p.add_argument("--n-resamples", type=positive_int, default=10_000,
                   help="resamples of bootstrap / randomization / tukey (default 10000)")
    p.add_argument("--seed", type=seed, default=0,
                   help="seed of the resampling, a whole number >= 0 (default 0, as compare)")
    p.add_argument("--equivalence", type=positive_float, metavar="MARGIN",
                   help="equivalence margin in score units (e.g. 0.01): adds p_equiv, the "
                        "p-value of the two one-sided tests (TOST) that |diff| < MARGIN")
    p.add_argument("--measure", help="measure to use when DATA holds several")
    p.add_argument("--average", action="store_true",
                   help="average shards / samples to one score per (topic, system) first")
    p.add_argument("--out", help="write every pair to this CSV file")
    add_force(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import column_names, load_data

    to_stdout = args.out == "-"  # the pairs as CSV on standard output, the summary on stderr
    say = sys.stderr if to_stdout else sys.stdout
    if args.out and not to_stdout:
        check_target(args.out, force=args.force)  # refuse before the work
    data = load_data(args.data, columns=column_names(args),
                     measure=args.measure, systems=args.systems)
    if args.pairs:  # names typed on the command line: an unknown one is exit status 2
        # here, not at import: start-up time of the CLI
        from irmodels.cli._common import check_runs

        check_runs("--pairs", [n for pair in args.pairs for n in pair], data)
    if args.average:
        mean = data.groupby(["topic", "system"], observed=True)["score"].mean().reset_index()
        data = irm.frame(mean)
    if args.test in ("randomization", "bootstrap"):
        # here, not at import: start-up time of the CLI
        from irmodels.cli._common import progress

        progress(f"{args.test} test, {args.n_resamples} resamples per pair ...")
    try:
        # here, not at import: start-up time of the CLI
        from irmodels.cli._common import user_named

        named, names = user_named(data, args)
        res = irm.pairwise(
            named, args.test, pairs=args.pairs, alternative=args.alternative,
            adjust=None if args.adjust == "none" else args.adjust, alpha=args.alpha,
            n_resamples=args.n_resamples, seed=args.seed, equivalence=args.equivalence,
            **names,
        ).table
    except DesignError as exc:
        if "one score per (topic, system)" in str(exc) and not args.average:
            raise DesignError(f"{exc} On the command line: add --average.") from None
        raise
    n_sig = int(res["reject"].sum())
    print(
        f"{args.test} test ({args.alternative}), adjustment {args.adjust}, alpha {args.alpha:g}: "
        f"{n_sig} of {len(res)} pairs significant ({n_sig / len(res):.1%}), "
        f"{int(res['n'].max())} topics",
        file=say,
    )
    shown = res.sort_values("p_adj", kind="stable").head(_SHOW)
    cols = ["diff", "statistic", "p", "p_adj", "reject", "dz", "dz_lower", "dz_upper"]
    if args.equivalence is not None:
        cols.append("p_equiv")
    table = shown[cols].set_axis(
        [f"{a} vs {b}" for a, b in zip(shown["a"], shown["b"])]
    ).rename_axis("pair").rename(columns={"diff": "diff (first - second)"})
    print(frame_to_text(table), file=say)
    if len(res) > _SHOW:
        print(f"... {len(res) - _SHOW} more pairs" + ("" if args.out else " (use --out FILE)"),
              file=say)
    if to_stdout:
        res.to_csv(sys.stdout, index=False)
    elif args.out:
        with atomic_file(args.out, force=args.force) as tmp:
            res.to_csv(tmp, index=False)
        print(f"wrote {len(res)} pairs to {args.out}")
    return 0
