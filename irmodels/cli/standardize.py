"""``irmodels standardize``: fit per-topic standardization factors and apply them.

Examples::

    irmodels standardize fit adhoc8_ap.csv --out factors.csv --top 30
    irmodels standardize fit adhoc8_ap.csv --out zscores --zscores --measure map
    irmodels standardize apply new_runs.csv --factors factors.csv --out standardized.csv
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd

import irmodels as irm
from irmodels._safeio import atomic_file, check_target
from irmodels.cli._common import check_runs, column_names, load_data
from irmodels.cli._options import add_columns, add_force, add_systems, positive_int
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError, UsageError

METHODS = ("normal", "z", "t1", "uniform", "ecdf")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "standardize",
        help="per-topic score standardization: fit factors on reference systems, apply them",
        description=(
            "'fit' computes per-topic mean and SD of reference systems and saves them (CSV or "
            "JSON, or trec_eval's zscores format with --zscores); 'apply' standardizes any "
            "scores with saved factors."
        ),
    )
    sub = p.add_subparsers(title="actions", metavar="ACTION")
    f = sub.add_parser("fit", help="fit factors on reference systems and save them")
    f.add_argument("data", help="scores (long frame or wide matrix, - for standard input, or COLLECTION:MEASURE)")

    add_systems(f)
    add_columns(f)
    f.add_argument("--out", required=True, help="factors file (.csv or .json; any name with "
                   "--zscores; '-': CSV on standard output)")
    ref = f.add_mutually_exclusive_group()
    ref.add_argument("--reference", help="comma-separated reference systems (default: all)")
    ref.add_argument("--top", type=positive_int, help="use the TOP systems with the highest mean score")
    f.add_argument("--method", choices=METHODS, default="normal", help="mapping of z (default normal)")
    f.add_argument("--virtual", action="store_true", help="add virtual systems scoring 0 and 1")
    f.add_argument("--ddof", type=int, choices=(0, 1), default=1,
                   help="SD divisor n - DDOF: 1 sample SD (default), 0 population SD")
    f.add_argument("--measure", help="measure to use (data with several), or its name in --zscores")
    f.add_argument("--zscores", action="store_true", help="write trec_eval's zscores format")
    add_force(f)
    f.set_defaults(func=run_fit)
    a = sub.add_parser("apply", help="standardize scores with saved factors")
    a.add_argument("data", help="scores (long frame or wide matrix, - for standard input, or COLLECTION:MEASURE)")
    add_systems(a)
    add_columns(a)
    a.add_argument("--factors", required=True, help="factors from 'fit' or a trec_eval zscores file")
    a.add_argument("--out", required=True, help="output long frame (.csv or .parquet; '-': CSV "
                   "on standard output)")
    a.add_argument("--method", choices=METHODS,
                   help="mapping for a zscores file (default z); a saved fit keeps its own")
    a.add_argument("--measure", help="measure of the data / of the zscores file to use")
    a.add_argument("--unknown", choices=["raise", "drop"], default="raise",
                   help="topics without factors: error (default) or drop their rows")
    add_force(a)
    a.set_defaults(func=run_apply)
    p.set_defaults(func=_no_action, _parser=p)


def _no_action(args: argparse.Namespace) -> int:
    args._parser.print_help()
    return 2


def run_fit(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.data.standardize import Standardizer, write_zscores

    to_stdout = args.out == "-"  # the factors on standard output, the messages on stderr
    say = sys.stderr if to_stdout else sys.stdout
    if not to_stdout:
        check_target(args.out, force=args.force)  # refuse before the work
    data = load_data(args.data, columns=column_names(args),
                     measure=args.measure, single_measure=False,
                     systems=getattr(args, "systems", None))
    reference = args.top if args.top is not None else (
        [s.strip() for s in args.reference.split(",") if s.strip()] if args.reference else None
    )
    if reference is not None and not isinstance(reference, int):  # names typed: exit 2
        check_runs("--reference", reference, data)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = Standardizer(args.method, virtual=args.virtual, ddof=args.ddof).fit(data, reference=reference)
    for w in caught:  # shown once each, in the command's terms (irmodels.cli._hints)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    single = any("single reference score" in str(w.message) for w in caught)

    def write(tmp: Path) -> None:
        if args.zscores:
            table = s.factors.reset_index()
            if "measure" not in table.columns:
                table["measure"] = args.measure or "score"
            write_zscores(table, tmp)
        else:
            s.save(tmp)

    if to_stdout:
        with tempfile.TemporaryDirectory(prefix="irmodels-") as d:
            tmp = Path(d) / "factors.csv"
            write(tmp)
            sys.stdout.write(tmp.read_text(encoding="utf-8"))
        path = "the factors to standard output"
    else:
        with atomic_file(args.out, force=args.force) as tmp:
            write(tmp)
        path = args.out
    diag = s.diagnostics()
    print(f"fitted {len(s.factors)} topic(s) on {len(s.reference)} reference system(s); "
          f"wrote {path}", file=say)
    zero = diag.zero_sd
    if single and "n" in zero.columns:  # those with one reference score were warned about
        zero = zero[zero["n"] > args.ddof]
    if not zero.empty:  # every reference system scores the same on these topics
        warnings.warn(f"{len(zero)} topic(s) have sigma = 0: every reference system has the "
                      "same score on them, so their z is 0; --virtual avoids it",
                      DataQualityWarning, stacklevel=1)
    return 0


def run_apply(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.data.standardize import Standardizer, read_zscores

    to_stdout = args.out == "-"  # the scores as CSV on standard output, the message on stderr
    if not to_stdout:
        check_target(args.out, force=args.force)  # refuse before the work
    path = Path(args.factors)
    if path.is_dir():
        raise UsageError(f"--factors {path} is a directory; give the factors file")
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))  # "no such file"
    data = load_data(args.data, columns=column_names(args),
                     measure=args.measure, single_measure=False,
                     systems=getattr(args, "systems", None))
    try:
        s = Standardizer.load(path)
    except DataFormatError:
        z = read_zscores(path)  # raises DataFormatError when it is not that either
        if "measure" in data.columns:
            table = pd.concat(z, names=["measure"]).reset_index()
        else:
            name = args.measure or (next(iter(z)) if len(z) == 1 else None)
            if name not in z:
                raise DesignError(
                    f"the zscores file has {len(z)} measures ({', '.join(list(z)[:8])}); "
                    "choose one with --measure."
                ) from None
            table = z[name].reset_index()
        s = Standardizer.from_factors(table, method=args.method or "z")
    else:
        if args.method and args.method != s.method:
            raise DesignError(
                f"the factors were fitted with method {s.method!r}; refit to use {args.method!r}"
            )
    out = s.transform(data, unknown=args.unknown)
    if to_stdout:
        out.to_csv(sys.stdout, index=False)
        print(f"standardized {len(out)} score(s) ({s.method}) to standard output",
              file=sys.stderr)
        return 0
    target = irm.write_frame(out, args.out, force=args.force)
    print(f"standardized {len(out)} score(s) ({s.method}); wrote {target}")
    return 0
