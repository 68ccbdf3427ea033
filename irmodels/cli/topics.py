"""``irmodels topics``: topic-set studies (swap rates, discriminative power, rank agreement).

Examples::

    irmodels topics --dataset adhoc8 --measure AP --sizes 5,10,25 --test tukey,t --out topics/
    irmodels topics scores.csv --method bootstrap --sizes 10,50 --n-samples 500
    irmodels topics adhoc8_ap.csv --backend processes --workers 2

Prints the per-size table and, with ``--out DIR``, writes ``summary.csv``,
``swap_rates.csv``, ``discriminative_power.csv``, ``agreement.csv``, ``rank_agreement.csv``,
``asl.csv``, ``tables.tex`` and ``topic_sets.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._common import int_list, load_scores_source
from irmodels.cli._options import (
    add_force,
    add_scores_source,
    check_scheduler,
    open_unit,
    positive_float,
    seed,
)


def _tests(text: str) -> list[str]:
    # here, not at import: start-up time of the CLI
    from irmodels.studies.topic_set_study import TESTS

    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in TESTS]
    if bad or not values:
        raise argparse.ArgumentTypeError(
            f"unknown test {bad[0] if bad else text!r}; choose among {', '.join(TESTS)} "
            "(comma-separated)")
    return values


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "topics",
        help="topic-set study: swap rates, discriminative power, error rates, Kendall's tau",
        description=(
            "Draw pairs of topic sets of each size from a topic x system score matrix and "
            "report swap rates by difference bin (Voorhees & Buckley 2002), the share of "
            "significant pairs per test (Sakai 2006), error rates between the two sets and "
            "Kendall's tau against all topics. DATA is a long frame or a wide matrix; or use "
            "--dataset for a public TREC matrix."
        ),
        epilog="Example: irmodels topics --dataset adhoc8 --measure AP --sizes 5,10,25 --out t/",
    )

    add_scores_source(p, "adhoc8:AP")
    p.add_argument("--sizes", type=int_list, default=None, metavar="C,C,...",
                   help="topics per set (default 5,10,... up to half the topics)")
    p.add_argument("--n-samples", type=_positive, default=1000,
                   help="pairs of topic sets per size (default 1000)")
    p.add_argument("--method", default="disjoint", choices=["disjoint", "subsample", "bootstrap"],
                   help="how the two sets are drawn (default disjoint)")
    p.add_argument("--test", type=_tests, default=["tukey"], metavar="TEST,...",
                   help="tukey (default), t, wilcoxon, randomization; comma-separated")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--bin-width", type=positive_float, default=0.01,
                   help="width of the difference bins of the swap rates (default 0.01)")
    p.add_argument("--n-resamples", type=_positive, default=1000,
                   help="resamples of the randomization test (default 1000)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the study (default 0)")
    p.add_argument("--backend", default="serial",
                   help="serial (default), processes, or a Dask scheduler address")
    p.add_argument("--n-workers", "--workers", dest="workers", type=_positive, default=None,
                   help="processes for --backend processes")
    p.add_argument("--out", "-o", metavar="DIR", help="write tables and a figure to DIR")
    add_force(p)  # irmodels._safeio: DIR is built aside and renamed; an existing one is refused
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    if out is not None:
        check_target(out, force=args.force, kind="dir")  # refuse before the work
    check_scheduler(args.backend)  # an unreachable Dask scheduler: one line, exit status 3
    data = load_scores_source(args)
    study = irm.studies.topic_sets(
        data, sizes=args.sizes, n_samples=args.n_samples, method=args.method, test=args.test,
        alpha=args.alpha, bin_width=args.bin_width, n_resamples=args.n_resamples,
        seed=args.seed, backend=args.backend, n_workers=args.workers, progress=args.progress,
    )
    print(_summary_text(study))
    if out is not None:
        with atomic_dir(out, force=args.force) as tmp:  # complete or absent, never mixed
            study.to_frame().to_csv(tmp / "summary.csv", index=False)
            for name in ("swap_rates", "discriminative_power", "agreement", "rank_agreement",
                         "asl"):
                getattr(study, name).to_csv(tmp / f"{name}.csv", index=False)
            (tmp / "tables.tex").write_text(study.to_latex() + "\n", encoding="utf-8")
            study.plot().savefig(tmp / "topic_sets.png", dpi=120)
        print(f"wrote summary.csv, swap_rates.csv, discriminative_power.csv, agreement.csv, "
              f"rank_agreement.csv, asl.csv, tables.tex and topic_sets.png to {out}")
    return 0


_SWAPS = "Swap rates by |mean difference| bin"


def _summary_text(study) -> str:
    """The study's summary; when no pair of systems differs (identical systems), its empty swap
    table is replaced by a sentence that says why."""
    text = study.summary()
    if len(study.swap_rates) == 0:
        head, found, _ = text.partition(_SWAPS)
        if found:
            text = (head + "Swap rates: no pair of systems differs in mean score, so no swaps "
                    "can be counted.")
    return text
