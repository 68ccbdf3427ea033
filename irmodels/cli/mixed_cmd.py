"""``irmodels mixed``: fit a linear mixed model and print its summary.

Examples::

    irmodels mixed adhoc3_ap.csv --formula "score ~ (1|system) + (1|topic)"
    irmodels mixed samples.csv --formula "score ~ system + (1|topic/system)" --residual topic:system
    irmodels mixed shards.csv --formula "score ~ system + (1|topic) + (1|topic:shard)" --method ML
    irmodels mixed adhoc8_p10.csv --formula "score * 10 ~ system + (1|topic)" --family binomial \
        --trials 10 --tukey --scale response
    irmodels mixed adhoc8_ap.csv --formula "score ~ system + (1|topic)" --family beta --squeeze
"""

from __future__ import annotations

import argparse

import irmodels as irm
from irmodels.cli._family_opts import add_family, add_scale, family_kwargs
from irmodels.cli._options import add_columns, add_systems, digits, open_unit
from irmodels.errors import ArgumentError, FormulaError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mixed",
        help="mixed model, linear (REML/ML) or generalised (--family): variance components, "
             "fixed effects, logLik/AIC/BIC",
        description=(
            "Fit a linear mixed model with crossed or nested random intercepts by REML or ML "
            "(closed form on balanced designs, iterative otherwise), optionally with one "
            "residual variance per stratum, and print variance components and fixed effects "
            "with Satterthwaite df. With --family, a generalised linear mixed model (lme4's "
            "glmer for binomial and poisson, glmmTMB's beta_family for beta) fitted by maximum "
            "likelihood (Laplace or adaptive Gauss-Hermite quadrature): fixed effects with Wald "
            "z tests and variance components on the latent (link) scale."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (topic, system, score[, shard, sample]) or a "
            "wide matrix CSV (rows = topics, columns = systems); a long frame's other columns "
            "are kept for --formula, and --topic/--system/--score name its columns when they "
            "have other names (qid, run, map). Example: irmodels mixed "
            "adhoc3_ap.csv --formula 'score ~ (1|system) + (1|topic)'. P@10 as a binomial "
            "count of 10: --formula 'score * 10 ~ system + (1|topic)' --family binomial "
            "--trials 10."
        ),
    )
    p.add_argument("data", help="scores: a file, a trec_eval directory, - (standard input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")

    add_systems(p)
    add_columns(p)
    p.add_argument("--formula", required=True,
                   help="lme4-style formula, e.g. 'score ~ system + (1|topic) + (1|topic:system)'")
    p.add_argument("--method", choices=["REML", "ML"], default=None,
                   help="estimation criterion of a linear mixed model (default REML; a "
                        "--family model is always fitted by ML)")
    p.add_argument("--residual", default=None,
                   help="one residual variance per stratum of this factor, e.g. topic:system")
    p.add_argument("--drop-degenerate", action="store_true",
                   help="drop residual strata with one observation or no variance")
    p.add_argument("--measure", help="measure to analyse when the data hold several")
    p.add_argument("--tukey", action="store_true",
                   help="also print Tukey's HSD of the system means (system a fixed term)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="level of --tukey (0.05)")

    add_scale(p)
    add_family(p, ("gaussian", "binomial", "poisson", "beta"), mixed=True)
    p.add_argument("--latex", action="store_true", help="print LaTeX (booktabs) instead of text")
    p.add_argument("--digits", type=digits, default=4,
                   help="significant digits shown, 1 to 17 (default 4)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import column_names, load_data

    data = load_data(args.data, columns=column_names(args), keep_columns=True,
                     measure=args.measure, systems=args.systems)
    # here, not at import: start-up time of the CLI
    from irmodels.cli._common import formula_error

    glm = family_kwargs(args)
    if args.method is not None and glm.get("family", "gaussian") != "gaussian":
        raise ArgumentError(
            f"--method {args.method} chooses between REML and ML for a linear mixed model; a "
            f"--family {glm['family']} model is fitted by maximum likelihood (as glmer). Drop "
            "--method.")
    try:
        fit = irm.mixed(args.formula, data, method=args.method,
                        residual=args.residual, drop_degenerate=args.drop_degenerate, **glm)
    except FormulaError as exc:
        raise formula_error(exc, args.data, args) from None
    tukey = (fit.tukey("system", alpha=args.alpha, scale=args.scale) if args.tukey else None)
    if args.latex:
        print(fit.to_latex(caption=f"Mixed model: {fit.spec}", digits=args.digits))
        if tukey is not None:
            print()
            print(tukey.to_latex(digits=args.digits))
        return 0
    print(fit.summary(digits=args.digits))
    if glm.get("family", "gaussian") != "gaussian":  # a singular GLMM fit says so
        for note in fit.notes:
            print(f"Note: {note}")
    if tukey is not None:
        print()
        print(tukey.summary(digits=args.digits))
    return 0
