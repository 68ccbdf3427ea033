"""``irmodels anova``: the ANOVA table of a score collection.

Examples::

    irmodels anova adhoc8_ap.csv --model MD1
    irmodels anova shards.parquet --formula "score ~ topic * system + shard" --type 3
    irmodels anova scores.csv --measure AP --model MD6 --latex
    irmodels anova adhoc8_ap.csv --model MD1 --dunnett input.INQ601
    irmodels anova adhoc8_p10.csv --formula "score * 10 ~ topic + system" --family binomial \
        --trials 10 --tukey --scale response
"""

from __future__ import annotations

import argparse
import re

import irmodels as irm
from irmodels.cli._family_opts import add_family, add_scale, family_kwargs
from irmodels.cli._options import add_columns, add_systems, digits, open_unit
from irmodels.errors import FormulaError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "anova",
        help="crossed ANOVA table (SS, df, F, p, effect sizes) of a score collection",
        description=(
            "Fit a crossed fixed-effects ANOVA (closed form when balanced, least squares "
            "otherwise) and print its table with effect sizes and power; optionally the "
            "variance components by expected mean squares. With --family binomial or "
            "poisson, a generalised linear model (R's glm) and its analysis of deviance."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (topic, system, score[, shard, measure]) or a "
            "wide matrix CSV (rows = topics, columns = systems); a long frame's other columns "
            "(covariates such as qlen) are kept for --formula, and --topic/--system/--score "
            "name its columns when they have other names (qid, run, map). "
            "Models: MD1..MD6 of Ferro & Sanderson (2019), or any formula like "
            "'score ~ topic * system + shard'. Example: irmodels anova adhoc8_ap.csv --model MD1"
        ),
    )
    p.add_argument("data", help="scores: a file, a trec_eval directory, - (standard input) or a dataset COLLECTION:MEASURE (adhoc8:AP)")
    add_systems(p)
    add_columns(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--model", default=None, choices=[f"MD{i}" for i in range(1, 7)],
                       help="preset model (default MD1, or MD6 when the data have shards)")
    which.add_argument("--formula", help="model formula, e.g. 'score ~ topic + system'")
    p.add_argument("--measure", help="measure to analyse when the data hold several")
    p.add_argument("--ss-type", "--type", dest="ss_type", type=int, choices=[1, 2, 3], default=None,
                   help="type of sums of squares for unbalanced data (default 2)")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="level of the power column and of --dunnett (0.05)")
    p.add_argument("--components", action="store_true",
                   help="also print variance components (balanced designs)")
    p.add_argument("--dunnett", metavar="BASELINE", default=None,
                   help="also compare every system with BASELINE (Dunnett's many-to-one test on "
                        "the model's least-squares means, multivariate t)")
    p.add_argument("--alternative", default="two-sided", choices=["two-sided", "greater", "less"],
                   help="alternative of --dunnett: 'greater' tests system > baseline "
                        "(default two-sided)")
    p.add_argument("--tukey", action="store_true",
                   help="also print Tukey's HSD of the system means (the model's marginal means)")
    add_scale(p)
    add_family(p, ("gaussian", "binomial", "poisson"), mixed=False)
    p.add_argument("--latex", action="store_true", help="print LaTeX (booktabs) instead of text")
    p.add_argument("--digits", type=digits, default=4,
                   help="significant digits shown, 1 to 17 (default 4)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import (and the imports below): the CLI imports every command's module to
    # register it, and numpy, scipy.special and pandas load only when `irmodels anova` runs
    from irmodels.cli import _anova_fast

    glm_given = any(getattr(args, k, None) is not None for k in ("family", "link", "trials",
                                                                  "offset"))
    if not glm_given and not args.tukey and _anova_fast.eligible(args):  # no pandas
        text = _anova_fast.matrix_anova_summary(args.data, alpha=args.alpha, digits=args.digits)
        if text is not None:
            print(text)
            return 0
    # here, not at import: pandas (CLI start-up), and only off the pandas-free path above
    from irmodels._display import frame_to_latex, frame_to_text
    from irmodels.cli._common import check_runs, column_names, formula_error, load_data  # idem

    data = load_data(args.data, columns=column_names(args), keep_columns=True,
                     measure=args.measure, systems=args.systems)
    if args.dunnett is not None:  # the baseline is a name typed on the command line: exit 2
        check_runs("--dunnett", [args.dunnett], data)
    model = args.formula or args.model
    if model is None:
        from irmodels.formula.parser import default_preset  # numpy: CLI start-up

        model = default_preset(data)
    names = column_names(args)
    if args.formula is None and names != {c: c for c in names}:
        model = _in_user_names(model, names)  # the table names the user's columns
    try:
        res = irm.anova(model, data, ss_type=args.ss_type, alpha=args.alpha,
                        **family_kwargs(args))
    except FormulaError as exc:
        raise formula_error(exc, args.data, args) from None
    components = res.variance_components() if args.components else None
    scale = {"scale": args.scale} if args.scale != "link" else {}  # one-scale models unchanged
    dunnett = (res.dunnett(args.dunnett, names["system"], alpha=args.alpha,
                           alternative=args.alternative, **scale)
               if args.dunnett is not None else None)
    tukey = res.tukey(names["system"], alpha=args.alpha, **scale) if args.tukey else None
    if args.latex:
        print(res.to_latex(caption=f"ANOVA: {res.spec}", digits=args.digits))
        if components is not None:
            print()
            print(frame_to_latex(components, caption="Variance components", digits=args.digits))
        if dunnett is not None:
            print()
            print(dunnett.to_latex(caption=f"Dunnett: every system vs {args.dunnett}",
                                   digits=args.digits))
        if tukey is not None:
            print()
            print(tukey.to_latex(digits=args.digits))
        return 0
    print(res.summary(digits=args.digits))
    if components is not None:
        print("\nVariance components (expected mean squares)")
        print(frame_to_text(components, args.digits))
    if dunnett is not None:
        print()
        print(dunnett.summary(digits=args.digits))
    if tukey is not None:
        print()
        print(tukey.summary(digits=args.digits))
    return 0


def _in_user_names(preset: str, names: dict[str, str]) -> str:
    """The formula of ``preset`` (``MD1``) written with the user's column names (``--topic``,
    ``--system``, ``--score``), which :func:`irmodels.cli._common.load_data` keeps beside the
    canonical ones: ``map ~ qid + run``."""
    from irmodels.formula.parser import resolve  # numpy: CLI start-up

    def name(m: re.Match[str]) -> str:
        text = names[m.group(0)]
        return text if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", text) else f"`{text}`"

    return re.sub(r"\b(topic|system|score)\b", name, str(resolve(preset)))
