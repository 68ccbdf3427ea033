"""``irmodels compare``: the comparison table of a paper (systems x measures, significance marks).

Examples::

    irmodels compare runs/ --qrels qrels.txt --measures AP nDCG@10 --latex table.tex
    irmodels compare bm25.run rm3.run dense.run --qrels qrels.txt --measures AP --test t
    irmodels compare scores.csv --measures AP P@10 --baseline bm25
    irmodels compare bm25.treceval rm3.treceval            # trec_eval -q output files
    irmodels compare scores.csv --measures AP --equivalence 0.01   # pairs: d_z, TOST p_equiv
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import irmodels as irm
from irmodels._safeio import atomic_file, check_target, write_text
from irmodels.cli._options import (
    add_columns,
    add_force,
    decimals,
    open_unit,
    positive_float,
    seed,
    usage,
)
from irmodels.errors import IRModelsError, IRModelsWarning, NegativeVarianceWarning, UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="the comparison table: mean per system and measure, best in bold, significance "
             "letters (Tukey HSD or adjusted paired tests), LaTeX",
        description=(
            "Mean score of every system on every measure, the best in bold, and superscript "
            "letters for significant differences: each system gets a letter, and a mean lists "
            "the letters of the systems it is significantly better than. The default test is "
            "Tukey's HSD on the two-way topic + system model of each measure; --test t, "
            "wilcoxon or randomization runs paired tests adjusted by --adjust. INPUTS are TREC "
            "run files (or directories of runs) with --qrels, or without --qrels long frames "
            "(CSV/parquet with topic, system, score[, measure]) or trec_eval -q output files."
        ),
        epilog="Example: irmodels compare runs/ --qrels qrels.txt --measures AP nDCG@10 "
               "--latex table.tex",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUTS",
                   help="run files or directories with --qrels; else score files")
    p.add_argument("--qrels", help="qrels file: INPUTS are TREC runs, evaluated first")
    p.add_argument("--measures", "-m", nargs="+", metavar="NAME",
                   help="measures (columns), e.g. AP nDCG@10 (default with --qrels: AP "
                        "nDCG@10; without: every measure of the files)")
    p.add_argument("--systems", nargs="+", metavar="NAME",
                   help="systems (rows) to compare, in this order (default: all)")
    p.add_argument("--test", choices=["tukey", "t", "wilcoxon", "randomization"],
                   default="tukey", help="significance test (default tukey)")
    p.add_argument("--adjust", choices=["holm", "bonferroni", "hochberg", "hommel", "bh", "by",
                                        "none"], default="holm",
                   help="adjustment of the paired tests (default holm; Tukey needs none)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--baseline", metavar="NAME",
                   help="compare every system with this one only (dagger marks)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the randomization test")
    p.add_argument("--equivalence", type=positive_float, metavar="MARGIN",
                   help="equivalence margin in score units (e.g. 0.01): the pairs table gains "
                        "p_equiv, the TOST p-value (implies --pairs)")
    p.add_argument("--pairs", action="store_true",
                   help="also show the pairs table: difference, adjusted p and the effect size dz "
                        "with its interval (in the text summary and the LaTeX file)")
    p.add_argument("--digits", type=decimals, default=4,
                   help="decimals of the means, 0 to 17 (default 4)")
    p.add_argument("--latex", metavar="FILE",
                   help="write the LaTeX table (booktabs) to FILE ('-': standard output)")
    p.add_argument("--out", metavar="FILE",
                   help="write the tidy table (CSV) to FILE ('-': standard output)")
    add_force(p)  # irmodels._safeio: outputs are atomic, an existing one is refused
    add_columns(p)
    p.set_defaults(func=run)


def _from_runs(args: argparse.Namespace, measures: list[str]):
    # here, not at import: start-up time of the CLI
    from irmodels.data.measures import parse_measure

    for m in measures:  # a bad name fails before reading large files (a usage error)
        usage(parse_measure, m)
    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import input_file

    input_file(args.qrels, "--qrels", "qrels")
    files: list[Path] = []
    for path in args.inputs:
        pth = Path(path)
        if not pth.exists():
            raise UsageError(f"run file or directory {path} does not exist")
        if pth.is_dir():
            files += sorted(q for q in pth.iterdir() if q.is_file() and not q.name.startswith("."))
        else:
            files.append(pth)
    runs = irm.read_runs(files)
    return irm.evaluate(runs, irm.read_qrels(args.qrels), measures)


def _from_scores(args: argparse.Namespace):
    # here, not at import: start-up time of the CLI
    import pandas as pd

    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import column_names, load_data

    parts = [load_data(path, single_measure=False, columns=column_names(args))
             for path in args.inputs]
    if len(parts) == 1:
        return parts[0]
    data = pd.concat([p.astype({c: str for c in p.columns if c != "score"}) for p in parts],
                     ignore_index=True)
    return irm.frame(data)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before the work, outputs that cannot all be written: an existing file (without
    --force), both tables on standard output, both tables to one file."""
    if args.latex == "-" and args.out == "-":
        raise UsageError("--latex - and --out - both write to standard output; send one of "
                         "them to a file")
    files = [t for t in (args.latex, args.out) if t and t != "-"]
    if len(files) == 2 and os.path.realpath(files[0]) == os.path.realpath(files[1]):
        raise UsageError(f"--latex and --out name the same file ({files[0]}); the LaTeX table "
                         "and the CSV table need two files")
    for target in files:
        check_target(target, force=args.force)  # refuse before the work


def _check_names(args: argparse.Namespace, data) -> list[str] | None:
    """Check the names typed on the command line (--measures, --systems, --baseline) against
    DATA: an unknown one is a usage error (exit status 2). Returns the systems, in order."""

    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import check_runs, system_names
    from irmodels.inference.compare import measure_frames  # idem

    if args.measures and "measure" not in data.columns:
        label = data.attrs.get("measure")
        if not (label is not None and len(args.measures) == 1
                and str(args.measures[0]).lower() == str(label).lower()):
            raise UsageError(
                f"--measures {' '.join(args.measures)}: DATA has no measure column, it holds "
                "one measure (shown as 'score'); --measures selects measures of DATA: drop it, "
                "or give DATA with a measure column (irmodels evaluate output)"
            )
    if args.measures:
        try:
            measure_frames(data, args.measures)
        except IRModelsError as exc:
            raise UsageError(f"--measures: {str(exc).replace('the frame', 'DATA')}") from None
    systems = None
    if args.systems:
        systems = system_names(args.systems, data)  # unknown, fewer than two: exit status 2
    if args.baseline is not None:
        if systems and args.baseline not in set(systems):
            raise UsageError(f"--baseline {args.baseline}: not one of the --systems compared "
                             f"({', '.join(systems)})")
        check_runs("--baseline", [args.baseline], data)
    return systems


def _show_warnings(caught) -> None:
    """The warnings of the comparison, each distinct one once; the ANOVA's note on a negative
    partial omega squared is left out (the comparison table shows no effect size)."""

    seen = set()
    for w in caught:
        text = str(w.message)
        if issubclass(w.category, NegativeVarianceWarning) and "omega squared" in text:
            continue
        if (w.category, text) not in seen:
            seen.add((w.category, text))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _latex(res, digits: int, pairs: bool) -> str:  # type: ignore[no-untyped-def]
    """The comparison table, then (``pairs``) the pairs table with the effect sizes."""
    out = res.to_latex(digits=digits)
    return out + "\n\n" + res.to_latex(digits=digits, pairs=True) if pairs else out


def run(args: argparse.Namespace) -> int:
    _check_outputs(args)
    if args.qrels:
        if any(getattr(args, role) for role in ("topic", "system", "score")):
            raise UsageError("--topic/--system/--score name the columns of score files; with "
                             "--qrels INPUTS are TREC runs: leave them out.")
        data = _from_runs(args, list(args.measures or ["AP", "nDCG@10"]))
    else:
        data = _from_scores(args)
    systems = _check_names(args, data)
    with warnings.catch_warnings(record=True) as caught:
        # every irmodels warning, to show each distinct one once; other libraries' warnings
        # (deprecations) keep the filters they had
        warnings.simplefilter("always", IRModelsWarning)
        # here, not at import: start-up time of the CLI
        from irmodels.cli._common import user_named

        named, names = user_named(data, args) if not args.qrels else (data, {})
        res = irm.compare(named, args.measures, test=args.test, adjust=args.adjust,
                          alpha=args.alpha, baseline=args.baseline, seed=args.seed,
                          systems=systems, equivalence=args.equivalence, **names)
    _show_warnings(caught)
    pairs = args.pairs or args.equivalence is not None
    # standard output carries one thing: the LaTeX table (--latex -), the CSV table (--out -)
    # or else the text summary; the messages go to standard error then
    if args.latex == "-":
        print(_latex(res, args.digits, pairs))
    elif args.out == "-":
        print(res.summary(args.digits, pairs=pairs), file=sys.stderr)
    else:
        print(res.summary(args.digits, pairs=pairs))
    if args.latex and args.latex != "-":
        write_text(args.latex, _latex(res, args.digits, pairs) + "\n", force=args.force)
        print(f"wrote the LaTeX table to {args.latex}", file=sys.stderr)
    if args.out == "-":
        res.to_frame().to_csv(sys.stdout, index=False)
    elif args.out:
        with atomic_file(args.out, force=args.force) as tmp:
            res.to_frame().to_csv(tmp, index=False)
        print(f"wrote {len(res.systems)} systems x {len(res.measures)} measures to {args.out}",
              file=sys.stderr)
    return 0
