"""``irmodels shards``: the shard study of Ferro & Sanderson (SIGIR 2019) from the command line.

Examples::

    irmodels shards --demo --preset small --n-shards 2,3,5 --n-splits 5 --out study/
    irmodels shards --runs runs/ --qrels qrels.txt --docids docids.txt --backend processes
    irmodels shards --demo --backend tcp://127.0.0.1:8786        # a running Dask scheduler

Writes to ``--out``: ``runs.csv`` (one row per model x S x split), ``summary.csv`` (per S for
MD6), ``by_model.csv`` (per model for one S), ``tables.tex`` (both tables, booktabs),
``intervals.png`` (Tukey intervals per model) and ``report.html`` (the variance-component
report of MD1 with the shard-study section).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._common import input_file, parse_undefined, select_systems
from irmodels.cli._options import (
    add_force,
    add_systems,
    check_scheduler,
    open_unit,
    positive_int,
    seed,
    usage,
)
from irmodels.errors import DesignError, IRModelsWarning, UsageError


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers like 2,3,5; got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer, e.g. 2,3,5")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "shards",
        help="shard study: models MD1-MD6 on random collection shards (Ferro & Sanderson 2019)",
        description=(
            "Split the document collection at random into S shards (several times for each S), "
            "score every run per (topic, shard), fit MD1 on the whole collection and MD2-MD6 "
            "on the shards, and compare effect sizes, Tukey HSD and Kendall's tau. Writes CSV "
            "and LaTeX tables, a figure and an HTML report to --out."
        ),
        epilog="Example: irmodels shards --demo --preset small --n-shards 2,3,5 --out study/",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--demo", action="store_true",
                     help="use the synthetic demo collection (see irmodels demo)")
    src.add_argument("--runs", metavar="DIR", help="directory (or file) of TREC run files")
    p.add_argument("--qrels", metavar="FILE", help="TREC qrels file (with --runs)")

    add_systems(p)
    p.add_argument("--docids", metavar="FILE",
                   help="the collection's document ids, one per line (with --runs; without it "
                        "the ids of the runs and qrels are used, with a warning)")
    p.add_argument("--preset", default="trec8", choices=["trec8", "small", "tiny"],
                   help="demo collection size (default trec8)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the splits and the demo (0)")
    p.add_argument("--n-shards", type=_int_list, default=[2, 3, 4, 5, 10, 25, 50],
                   metavar="S,S,...", help="shard counts (default 2,3,4,5,10,25,50)")
    p.add_argument("--n-splits", type=positive_int, default=10, help="random splits per S (default 10)")
    p.add_argument("--models", default="MD1,MD2,MD3,MD4,MD5,MD6",
                   help="models to fit (default MD1,...,MD6)")
    p.add_argument("--measure", default="AP", help="measure (default AP)")
    p.add_argument("--undefined", default="0",
                   help="undefined cells: a number to substitute (default 0), drop or missing")
    p.add_argument("--alpha", type=open_unit, default=0.05, help="Tukey HSD level (default 0.05)")
    p.add_argument("--backend", default="serial",
                   help="serial (default), processes, or a Dask scheduler address")
    p.add_argument("--n-workers", "--workers", dest="workers", type=positive_int, default=None, help="processes for --backend processes")
    p.add_argument("--out", "-o", default="shards", metavar="DIR",
                   help="output directory (default ./shards)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    add_force(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.data.io import warn_topic_id_mismatch
    from irmodels.replicates.sharding import read_docids  # idem

    out = Path(args.out)
    check_target(out, force=args.force, kind="dir")  # refuse before the work
    undefined = parse_undefined(args.undefined)
    # here, not at import: start-up time of the CLI
    from irmodels.data.measures import parse_measure

    usage(parse_measure, args.measure)  # a name typed wrong: exit 2, before the work
    bad = [s for s in args.n_shards if s < 2]
    if bad:
        raise UsageError(f"--n-shards must be integers >= 2 (a split needs two shards); got {bad[0]}")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m.upper() not in {f"MD{i}" for i in range(1, 7)}]
    if unknown or not models:
        raise UsageError(f"unknown model {(unknown or [args.models])[0]!r} in --models; choose "
                         "among MD1, MD2, MD3, MD4, MD5, MD6")
    if args.backend not in ("serial", "processes") and "://" not in args.backend and (
        ":" not in args.backend
    ):
        raise UsageError(f"unknown backend {args.backend!r}; use serial, processes or a Dask "
                         "scheduler address such as tcp://127.0.0.1:8786")
    check_scheduler(args.backend)
    t0 = time.perf_counter()
    if args.demo:
        if args.qrels or args.docids:
            raise UsageError("--qrels and --docids go with --runs, not with --demo")
        collection: Any = irm.collection.generate(preset=args.preset, seed=args.seed)
        source = f"demo collection ({args.preset}, seed {args.seed})"
    else:
        if not args.qrels:
            raise UsageError("--runs needs --qrels FILE (the relevance judgments)")

        input_file(args.qrels, "--qrels", "qrels")
        if args.docids:
            input_file(args.docids, "--docids", "document ids")
        runs = irm.read_runs(args.runs)
        qrels = irm.read_qrels(args.qrels)
        warn_topic_id_mismatch(runs["topic"], qrels["topic"])  # "051" vs "51"
        docids = read_docids(args.docids) if args.docids else None
        collection = (runs, qrels, docids)
        source = f"runs {args.runs}, qrels {args.qrels}"
    if args.systems:
        if not isinstance(collection, tuple):
            collection = (collection.runs, collection.qrels, collection.docids)
        collection = (select_systems(collection[0], args.systems), *collection[1:])
    if isinstance(collection, tuple):
        _check_levels(collection[0], collection[1])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study = irm.studies.shards(
            collection, n_shards=args.n_shards, n_splits=args.n_splits, models=models,
            measure=args.measure, undefined=undefined, alpha=args.alpha, seed=args.seed,
            backend=args.backend, n_workers=args.workers, progress=args.progress,
        )
    for w in caught:  # the API's words for the API, the files' names on the command line
        text = str(w.message).replace(".runs['n_undefined']",
                                      f"the column n_undefined of {args.out}/runs.csv")
        warnings.warn_explicit(text, w.category, w.filename, w.lineno)
    elapsed = time.perf_counter() - t0
    final = out
    # written beside --out and renamed into place when complete: an existing study is kept
    # (or, with --force, replaced whole), never mixed, never half written
    with atomic_dir(final, force=args.force) as out:
        study.runs.to_csv(out / "runs.csv", index=False)
        written = ["runs.csv"]
        has_shard_model = any(m != "MD1" for m in study.models)
        if has_shard_model:
            study.summary_table().to_csv(out / "summary.csv")
            written.append("summary.csv")
        s = 5 if 5 in study.n_shards else study.n_shards[0]
        study.by_model(s).to_csv(out / "by_model.csv")
        (out / "tables.tex").write_text(
            study.to_latex(caption=f"Shard study ({study.measure})", label="tab:shards") + "\n",
            encoding="utf-8",
        )
        fig = study.plot_intervals(s, 0)
        fig.savefig(out / "intervals.png", dpi=110)
        written += ["by_model.csv", "tables.tex", "intervals.png"]

        # here, not at import: start-up time of the CLI
        from irmodels.analysis import build_report

        # silenced, not steering: the report refits MD1 on scores the study already warned
        # about above; its notes list them on the page
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IRModelsWarning)
            whole = _whole_collection_scores(collection, study)
            report = build_report(whole, model="MD1", alpha=study.alpha,
                                  title=f"Shard study: {study.measure} on {source}",
                                  sections=[study.to_section()])
        (out / "report.html").write_text(report.to_html(), encoding="utf-8")
        written.append("report.html")
    print(study.summary(), file=sys.stdout)
    out = final
    print(f"\nwrote {', '.join(written)} to {out} ({len(study.runs)} fits in {elapsed:.1f} s)",
          file=sys.stderr)
    return 0


def _check_levels(runs, qrels) -> None:
    """The study compares systems over topics: two runs and two judged topics at least, said
    before the work in the command's words."""

    systems = list(dict.fromkeys(runs["system"].astype(str)))
    if len(systems) < 2:
        raise DesignError(
            f"the shard study needs at least two runs (systems) to compare; the runs hold "
            f"{len(systems)}" + (f" ({', '.join(systems[:5])})." if systems else ".")
            + " Give a directory of runs (or more run files) with --runs.")
    judged = set(qrels["topic"].astype(str))
    topics = [t for t in dict.fromkeys(runs["topic"].astype(str)) if t in judged]
    if len(topics) < 2:
        raise DesignError(
            f"the shard study needs at least two topics with judgments; the runs and the qrels "
            f"share {len(topics)}" + (f" ({', '.join(topics[:5])})." if topics else ".")
        )


def _whole_collection_scores(collection, study):
    if isinstance(collection, tuple):
        runs, qrels = collection[0], collection[1]
    else:
        runs, qrels = collection.runs, collection.qrels
    return irm.evaluate(runs, qrels, [study.measure], undefined=study.undefined)
