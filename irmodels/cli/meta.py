"""``irmodels meta``: meta-analysis of one effect across collections, measures or studies.

Examples::

    irmodels meta differences.csv                        # REML random effects
    irmodels meta differences.csv --method DL --level 0.9
    irmodels meta differences.csv --estimate diff --se se --label collection --plot forest.png

The CSV has one row per study: an estimate (column ``estimate`` or ``yi``), its sampling
variance (``variance`` or ``vi``) or standard error (``se`` or ``sei``), and optionally a label
(``label``, ``study`` or ``collection``); ``--estimate``, ``--variance``, ``--se`` and
``--label`` name other columns.
"""

from __future__ import annotations

import argparse
import sys

from irmodels._safeio import atomic_file, check_target
from irmodels.cli._options import add_force, open_unit, output_suffix
from irmodels.errors import DataFormatError, UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "meta",
        help="meta-analysis of an effect across collections: FE, DL or REML, Q, I2, forest plot",
        description=(
            "Pool one estimate per study (e.g. the mean AP difference of two systems on each "
            "collection, with its variance = variance of the per-topic differences / topics): "
            "fixed effect, or random effects with tau^2 by REML or DerSimonian-Laird, as R's "
            "metafor rma(). Prints the pooled estimate, its CI and the prediction interval, "
            "Q, I2, H2 and tau2, and the studies with their weights."
        ),
        epilog="Example: irmodels meta differences.csv --method REML --plot forest.png",
    )
    p.add_argument("file", metavar="FILE.csv", help="one row per study (- for standard input)")
    p.add_argument("--method", choices=["REML", "DL", "FE"], default="REML",
                   help="REML (default), DL (DerSimonian-Laird) or FE (fixed effect)")
    p.add_argument("--level", type=open_unit, default=0.95,
                   help="confidence level of the intervals (default 0.95)")
    p.add_argument("--estimate", metavar="COLUMN", help="column of the estimates")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--variance", metavar="COLUMN", help="column of the sampling variances")
    group.add_argument("--se", metavar="COLUMN", help="column of the standard errors")
    p.add_argument("--label", metavar="COLUMN", help="column of the study labels")
    p.add_argument("--latex", action="store_true", help="print LaTeX (booktabs) instead of text")
    p.add_argument("--plot", metavar="FILE", help="write the forest plot (.png, .pdf or .svg)")
    p.add_argument("--out", metavar="FILE", help="write the studies with their weights as CSV")
    add_force(p)
    p.set_defaults(func=run)


def _read(path: str):
    # here, not at import: start-up time of the CLI
    import pandas as pd

    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import input_file

    source = sys.stdin if path == "-" else input_file(path, "FILE", "studies CSV")
    try:
        return pd.read_csv(source)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"cannot read {path} as CSV ({exc}); give one row per study "
                              "with a header line (estimate,variance).") from None


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.inference.meta import meta_analysis

    output_suffix(args.plot, (".png", ".pdf", ".svg"), "--plot")
    output_suffix(args.out, (".csv",), "--out")
    for target in (args.plot, args.out):
        if target:
            check_target(target, force=args.force)  # refuse before the work
    data = _read(args.file)
    wanted = {args.estimate: "estimate", args.variance: "variance", args.se: "se",
              args.label: "label"}
    wanted.pop(None, None)
    missing = [c for c in wanted if c not in data.columns]
    if missing:
        raise UsageError(f"{args.file} has no column {missing[0]!r}; its columns are "
                         f"{list(map(str, data.columns))}")
    if wanted:
        # the named columns take the canonical names; others with those names step aside
        clash = [c for c in data.columns if c in wanted.values() and c not in wanted]
        data = data.drop(columns=clash).rename(columns=wanted)
        if args.variance:
            data = data.drop(columns=[c for c in ("se", "sei", "vi") if c in data.columns])
        if args.se:
            data = data.drop(columns=[c for c in ("variance", "vi", "sei") if c in data.columns])
        if args.estimate:
            data = data.drop(columns=[c for c in ("yi",) if c in data.columns])
        if args.label:
            data = data.drop(columns=[c for c in ("study", "collection") if c in data.columns])
    res = meta_analysis(data, method=args.method, level=args.level)
    if args.latex:
        print(res.to_latex(caption=f"Meta-analysis ({args.method})", label="tab:meta"))
    else:
        print(res.summary())
    if args.out:
        with atomic_file(args.out, force=args.force) as tmp:
            res.to_frame().to_csv(tmp, index=False, float_format="%.17g")
        print(f"wrote {res.k} studies to {args.out}", file=sys.stderr)
    if args.plot:
        fig = res.plot()
        with atomic_file(args.plot, force=args.force) as tmp:
            fig.savefig(tmp, dpi=120, format=args.plot.rsplit(".", 1)[-1].lower())
        print(f"wrote the forest plot to {args.plot}", file=sys.stderr)
    return 0
