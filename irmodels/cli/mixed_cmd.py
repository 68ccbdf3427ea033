"""``irmodels mixed``: fit a linear mixed model and print its summary.

Examples::

    irmodels mixed adhoc3_ap.csv --formula "score ~ (1|system) + (1|topic)"
    irmodels mixed samples.csv --formula "score ~ system + (1|topic/system)" --residual topic:system
    irmodels mixed shards.csv --formula "score ~ system + (1|topic) + (1|topic:shard)" --method ML
"""

from __future__ import annotations

from irmodels.cli._options import digits

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mixed",
        help="linear mixed model (REML/ML): variance components, fixed effects, logLik/AIC/BIC",
        description=(
            "Fit a linear mixed model with crossed or nested random intercepts by REML or ML "
            "(closed form on balanced designs, iterative otherwise), optionally with one "
            "residual variance per stratum, and print variance components and fixed effects "
            "with Satterthwaite df."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (topic, system, score[, shard, sample]) or a "
            "wide matrix CSV (rows = topics, columns = systems); a long frame's other columns "
            "are kept for --formula, and --topic/--system/--score name its columns when they "
            "have other names (qid, run, map). Example: irmodels mixed "
            "adhoc3_ap.csv --formula 'score ~ (1|system) + (1|topic)'"
        ),
    )
    p.add_argument("data", help="scores: a file, a trec_eval directory, - (standard input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")
    from irmodels.cli._options import add_columns, add_systems

    add_systems(p)
    add_columns(p)
    p.add_argument("--formula", required=True,
                   help="lme4-style formula, e.g. 'score ~ system + (1|topic) + (1|topic:system)'")
    p.add_argument("--method", choices=["REML", "ML"], default="REML",
                   help="estimation criterion (default REML)")
    p.add_argument("--residual", default=None,
                   help="one residual variance per stratum of this factor, e.g. topic:system")
    p.add_argument("--drop-degenerate", action="store_true",
                   help="drop residual strata with one observation or no variance")
    p.add_argument("--measure", help="measure to analyse when the data hold several")
    p.add_argument("--latex", action="store_true", help="print LaTeX (booktabs) instead of text")
    p.add_argument("--digits", type=digits, default=4,
                   help="significant digits shown, 1 to 17 (default 4)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import irmodels as irm
    from irmodels.cli._common import column_names, load_data

    data = load_data(args.data, columns=column_names(args), keep_columns=True,
                     measure=args.measure, systems=args.systems)
    from irmodels.cli._common import formula_error
    from irmodels.errors import FormulaError

    try:
        fit = irm.mixed(args.formula, data, method=args.method, residual=args.residual,
                        drop_degenerate=args.drop_degenerate)
    except FormulaError as exc:
        raise formula_error(exc, args.data, args) from None
    if args.latex:
        print(fit.to_latex(caption=f"Mixed model: {fit.spec}", digits=args.digits))
    else:
        print(fit.summary(digits=args.digits))
    return 0
