"""``irmodels errors``: type I, II and III error rates of significance tests on simulated topics.

Examples::

    irmodels errors adhoc3:AP --tests t,wilcoxon --sizes 25,50
    irmodels errors scores.csv --tests t,sign,tukey --alpha 0.01,0.05 --trials 2000 --out err/
    irmodels errors --dataset adhoc8 --measure P@10 --delta 0.05 --backend processes

Prints the rates per (test, topics, alpha) and, with ``--out DIR``, writes ``errors.csv``
(with Clopper-Pearson intervals), ``margins.csv`` (the fitted simulator), ``tables.tex`` and
``errors.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._common import float_list_type, int_list, load_scores_source
from irmodels.cli._options import (
    add_force,
    add_scores_source,
    check_scheduler,
    positive_float,
    positive_int,
    seed,
)

_TESTS = ("t", "wilcoxon", "sign", "bootstrap", "permutation", "tukey", "mixed")


def _tests(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in _TESTS]
    if bad or not values:
        raise argparse.ArgumentTypeError(
            f"unknown test {bad[0] if bad else text!r}; choose among {', '.join(_TESTS)} "
            "(comma-separated)")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "errors",
        help="type I/II/III error rates of significance tests on simulated topics",
        description=(
            "Fit a stochastic simulator to a topic x system score matrix (a margin per system, "
            "chosen by AIC, and a Gaussian copula; Urbano & Nagler 2018), simulate pairs of "
            "systems under the null (equal expected scores) and with a true difference, and "
            "report how often each test is significant when it should not be (type I), is not "
            "when it should be (type II), or is with the wrong sign (type III) (Urbano, Lima & "
            "Hanjalic 2019). DATA is a long frame or a wide matrix of scores in [0, 1]; or use "
            "--dataset for a public TREC matrix."
        ),
        epilog="Example: irmodels errors adhoc3:AP --tests t,wilcoxon --sizes 25,50",
    )

    add_scores_source(p, "adhoc3:AP")
    p.add_argument("--tests", type=_tests, default=["t", "wilcoxon", "sign"],
                   metavar="TEST,...",
                   help=f"comma-separated among {', '.join(_TESTS)} (default t,wilcoxon,sign)")
    p.add_argument("--sizes", type=int_list, default=[25, 50], metavar="C,C,...",
                   help="topics per simulated collection (default 25,50)")
    p.add_argument("--alpha", type=float_list_type(low=1e-12, high=1 - 1e-12),
                   default=[0.01, 0.05], metavar="A,A,...",
                   help="significance levels (default 0.01,0.05)")
    p.add_argument("--trials", type=positive_int, default=1000,
                   help="trials per size under each hypothesis (default 1000)")
    p.add_argument("--delta", type=positive_float, default=0.02,
                   help="true difference of the pair under the alternative (default 0.02)")
    p.add_argument("--margins", default="auto",
                   choices=["auto", "truncnorm", "beta", "kernel", "betabinom"],
                   help="margin family (default auto: by AIC per system)")
    p.add_argument("--k", dest="k", type=positive_int, default=None,
                   help="trials k of a P@k measure (read from a measure column named P@k)")
    p.add_argument("--n-resamples", type=positive_int, default=1000,
                   help="resamples of the bootstrap and permutation tests (default 1000)")
    p.add_argument("--design", default="systems", choices=["systems", "pairs"],
                   help="systems (default: margins at one mean, a Gaussian copula) or pairs "
                        "(Urbano et al. 2019: run 1's margin for both, a copula per pair)")
    p.add_argument("--sign-ties", type=float, default=0.0, metavar="D",
                   help="the sign test counts |d| <= D as a tie (default 0; the paper: 0.01)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the study (default 0)")
    p.add_argument("--backend", default="serial",
                   help="serial (default), processes, or a Dask scheduler address")
    p.add_argument("--n-workers", "--workers", dest="workers", type=positive_int, default=None,
                   help="processes for --backend processes")
    p.add_argument("--out", "-o", metavar="DIR", help="write tables and a figure to DIR")
    add_force(p)
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    if out is not None:
        check_target(out, force=args.force, kind="dir")  # refuse before the work
    check_scheduler(args.backend)
    data = load_scores_source(args)
    study = irm.studies.test_errors(
        data, tests=args.tests, sizes=args.sizes, alpha=args.alpha, n_trials=args.trials,
        delta=args.delta, margins=args.margins, n_resamples=args.n_resamples, seed=args.seed,
        backend=args.backend, n_workers=args.workers, progress=args.progress, k=args.k,
        design=args.design, sign_ties=args.sign_ties,
    )
    print(study.summary())
    if out is not None:
        with atomic_dir(out, force=args.force) as tmp:  # complete or absent, never mixed
            study.intervals().to_csv(tmp / "errors.csv", index=False)
            study.simulator.margins.to_csv(tmp / "margins.csv", index=False)
            (tmp / "tables.tex").write_text(study.to_latex() + "\n", encoding="utf-8")
            study.plot().savefig(tmp / "errors.png", dpi=120)
        print(f"wrote errors.csv, margins.csv, tables.tex and errors.png to {out}")
    return 0
