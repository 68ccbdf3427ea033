"""``irmodels report``: the variance-component report of a score collection.

Examples::

    irmodels report --demo --out irmodels-report
    irmodels report adhoc8_ap.csv --measure AP --model MD1 --latex
    irmodels report runs-eval/ --measure map --formula "score ~ topic + system"
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._common import column_names, load_data, select_systems
from irmodels.cli._options import add_columns, add_force, add_systems
from irmodels.errors import DatasetError, UsageError

PRESETS = ("MD1", "MD2", "MD3", "MD4", "MD5", "MD6")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="write the variance-component report (HTML, Markdown, LaTeX) of a collection",
        description=(
            "Fit a crossed ANOVA model to per-topic scores and write a self-contained report: "
            "data and balance, ANOVA table with effect sizes, variance components, Tukey HSD on "
            "systems with the model's error term, and a plot of system means."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (columns topic, system, score[, shard, "
            "measure]), a wide matrix CSV (rows = topics, columns = systems), or a trec_eval -q "
            "output file or directory. Example: irmodels report --demo --out irmodels-report"
        ),
    )
    p.add_argument("data", nargs="?", help="scores to analyse (see below; - for standard input, "
                   "COLLECTION:MEASURE for a dataset such as adhoc8:AP); omit with --demo")
    p.add_argument(
        "--demo", action="store_true",
        help="use the built-in synthetic TREC-8-like collection (AP, model MD1)",
    )
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", choices=PRESETS,
                       help="preset model of Ferro & Sanderson (default MD1, or MD6 when the "
                            "data have shards)")
    model.add_argument("--formula", help='model formula, e.g. "score ~ topic + system"')
    p.add_argument("--measure", help="measure to analyse when the data hold several (e.g. AP)")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise level of Tukey HSD (default 0.05)")
    p.add_argument("--out", default="irmodels-report", help="output directory (default irmodels-report)")
    p.add_argument("--latex", action="store_true", help="also write the tables as LaTeX (tables.tex)")
    p.add_argument("--title", help="title of the report")

    add_systems(p)
    add_columns(p)
    add_force(p)
    p.set_defaults(func=run)


def demo_scores(measure: str | None = None) -> pd.DataFrame:
    """Scores of the built-in demo collection (seed 0), evaluated with ``measure`` (AP)."""

    try:
        generate = irm.collection.generate
    except ModuleNotFoundError as exc:  # pragma: no cover - only in a partial installation
        raise DatasetError(
            f"the demo collection is not available in this installation ({exc}). "
            "Report on a score file instead: irmodels report DATA."
        ) from None
    coll = generate(seed=0)
    return irm.evaluate(coll.runs, coll.qrels, measures=[measure or "AP"])


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.analysis import build_report, demo_report

    start = time.perf_counter()
    if args.demo and args.data:
        raise UsageError(
            f"give either DATA ({args.data!r}) or --demo, not both. "
            "Run 'irmodels report --help' for the forms DATA can take."
        )
    if not args.demo and not args.data:
        raise UsageError(
            "no data to report on: pass DATA (a score file or trec_eval directory) or --demo."
        )
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be in (0, 1); got {args.alpha}.")
    model = args.formula or args.model  # None: MD1, or MD6 on data with shards
    out = check_target(args.out, force=args.force, kind="dir")  # refuse before the work

    def say(msg: str) -> None:
        print(f"irmodels report: {msg} ...", file=sys.stderr, flush=True)

    if args.demo and model in (None, "MD1") and not args.systems:
        measure = args.measure or "AP"
        report = demo_report(measure, alpha=args.alpha, title=args.title, progress=say)
    else:
        comparison = None
        if args.demo:
            say("generating and evaluating the demo collection")
            data = demo_scores(args.measure)
            if args.systems:
                data = select_systems(data, args.systems)
            measure = args.measure or "AP"
            model = model or "MD1"
            title = args.title or f"Demo collection (synthetic, TREC-8-like): {measure}, {model}"
        else:
            data = load_data(args.data, columns=column_names(args), keep_columns=True,
                             measure=None, single_measure=False,
                             systems=args.systems)
            measure = args.measure
            title = args.title
            n_measures = data["measure"].nunique() if "measure" in data.columns else 1
            if n_measures > 1 and measure is not None:
                # here, not at import: start-up time of the CLI
                from irmodels.analysis import comparison_table

                say(f"comparison table of the 10 best systems on {n_measures} measures")
                comparison = comparison_table(data, measure, alpha=args.alpha)
        if model is None:
            # here, not at import: start-up time of the CLI
            from irmodels.formula.parser import default_preset

            model = default_preset(data)
        say(f"fitting {model}, Tukey HSD, G-study and residual diagnostics")
        report = build_report(data, model=model, measure=measure, alpha=args.alpha, title=title,
                              comparison=comparison)
    say("writing the report")
    with atomic_dir(out, force=args.force) as tmp:
        written = report.save(tmp, formats=("html", "md"), latex=args.latex)
    paths = [out / p.relative_to(tmp) for p in written]
    tk = report.tukey
    fit = report.anova
    if fit is not None:
        print(f"irmodels report: {fit.spec}  (N = {fit.n_obs})")
    if report.components is not None:
        shares = ", ".join(
            f"{name} {100 * share:.1f}%" for name, share in report.components["share"].items()
        )
        print(f"  variance components: {shares}")
    if tk is not None:
        print(
            f"  Tukey HSD (alpha = {args.alpha:g}): {tk.n_significant} of {tk.n_pairs} pairs "
            f"significant; top group of {len(tk.top_group)}: {', '.join(tk.top_group[:8])}"
            + (" ..." if len(tk.top_group) > 8 else "")
        )
    for note in report.notes:
        print(f"  note: {note}")
    for path in paths:
        if path.suffix in (".html", ".md", ".tex"):
            print(f"  wrote {path}")
    print(f"  done in {time.perf_counter() - start:.1f} s")
    return 0
