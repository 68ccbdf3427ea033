"""``irmodels simulate documents``: document-sample simulation, validation and test comparison."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import irmodels as irm
from irmodels._safeio import atomic_dir, check_target
from irmodels.cli._options import add_force, check_scheduler, seed, usage
from irmodels.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate replicates (document samples) of an evaluation",
        description="Simulate replicates of an evaluation.",
    )
    kinds = p.add_subparsers(title="what to simulate", metavar="KIND")
    d = kinds.add_parser(
        "documents",
        help="document samples per (topic, run) (Robertson & Kanoulas, SIGIR 2012)",
        description=(
            "Simulate other document samples per (topic, run), score them, and optionally "
            "validate the simulation (C = 1000) or compare significance tests across all pairs "
            "of systems (C = 10, mixed models with per-topic noise)."
        ),
    )
    src = d.add_mutually_exclusive_group(required=True)
    src.add_argument("--demo", action="store_true", help="use the built-in demo collection")
    src.add_argument("--runs", help="a TREC run file or a directory of run files")
    d.add_argument("--qrels", help="qrels file (with --runs)")
    d.add_argument("--preset", default="small", help="demo preset: trec8, small, tiny (default small)")
    d.add_argument("--systems", nargs="+", metavar="NAME", default=None,
                   help="simulate only these runs (names, comma-separated also accepted), or a "
                        "number N for the first N runs (e.g. 40, as in the paper)")
    d.add_argument("--model", default="bootstrap", choices=["bootstrap", "kde", "gmg"])
    d.add_argument("--n-samples", type=int, default=10, help="samples per (topic, run) (default 10)")
    d.add_argument("--measure", default="AP", help="AP, P@k, RR, Rprec, nDCG@k or RBP(p)")
    d.add_argument("--zeros", default="redraw", choices=["redraw", "keep", "skip"])
    d.add_argument("--seed", type=seed, default=0, help="random seed, >= 0 (default 0)")
    d.add_argument("--validate", action="store_true",
                   help="also write validation.csv (observed vs simulated mean and SD per topic)")
    d.add_argument("--compare", action="store_true",
                   help="also write tests.csv and agreement.csv (four tests for every pair of "
                        "systems); with --validate also report.html")
    d.add_argument("--df", default="containment", choices=["containment", "satterthwaite"],
                   help="df of the mixed models' t-tests (default containment, as nlme)")
    d.add_argument("--backend", default="serial",
                   help="serial, processes or a Dask scheduler address; 'processes' is advised "
                        "for --compare on many systems (its workers use one BLAS thread: a "
                        "multi-threaded BLAS slows the small mixed-model fits on a busy machine)")
    d.add_argument("--out", default="irmodels-simulation", help="output directory")
    add_force(d)
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # here, not at import: start-up time of the CLI
    from irmodels.data.frame import natural_key
    from irmodels.data.io import warn_topic_id_mismatch  # idem
    from irmodels.studies import document_samples as ds  # idem

    if args.n_samples < 1:
        raise UsageError(f"--n-samples {args.n_samples}: n_samples must be at least 1")
    if args.demo and args.qrels:
        raise UsageError("--qrels goes with --runs, not with --demo")
    if not args.demo and not args.qrels:
        raise UsageError("--runs needs --qrels")
    # here, not at import: start-up time of the CLI
    from irmodels.data.measures import parse_measure

    usage(parse_measure, args.measure)  # a name typed wrong: exit 2, before the work
    check_target(args.out, force=args.force, kind="dir")  # refuse before the work
    check_scheduler(args.backend)
    if args.demo:
        coll = irm.collection.generate(preset=args.preset, seed=args.seed)
        runs, qrels = coll.runs, coll.qrels
    else:
        runs = irm.read_runs(args.runs) if Path(args.runs).is_dir() else irm.read_run(args.runs)
        qrels = irm.read_qrels(args.qrels)
        warn_topic_id_mismatch(runs["topic"], qrels["topic"])  # "051" vs "51"
    systems = None
    if args.systems is not None:
        names = sorted(runs["system"].astype(str).unique(), key=natural_key)
        if len(args.systems) == 1 and args.systems[0].isdigit():  # the first N runs
            count = int(args.systems[0])
            if count < 2:
                raise UsageError(f"--systems {count}: simulate at least 2 runs")
            systems = names[:count]
        else:
            # here, not at import: start-up time of the CLI
            from irmodels.cli._common import select_systems

            chosen = select_systems(runs, args.systems)["system"].astype(str).unique()
            systems = [n for n in names if n in set(chosen)]
            if len(systems) < 2:
                raise UsageError(f"--systems {' '.join(args.systems)}: name at least 2 runs")
    final = Path(args.out)
    # every output is written beside --out and renamed into place when all are complete: an
    # interrupted simulation leaves nothing, an existing directory is kept (or replaced
    # whole with --force)
    from irmodels.cli._common import progress

    n_sys = len(systems) if systems is not None else runs["system"].nunique()
    with atomic_dir(final, force=args.force) as out:
        progress(f"simulating {args.n_samples} {args.model} document samples per (topic, run) "
                 f"for {n_sys} runs ({args.measure}) ...")
        samples = irm.replicates.document_samples(
            runs, qrels, model=args.model, n_samples=args.n_samples, measure=args.measure,
            zeros=args.zeros, seed=args.seed, systems=systems, backend=args.backend,
            progress=None,  # a bar when standard error is a terminal
        )
        samples.to_csv(out / "samples.csv", index=False)
        irm.replicates.sample_record(samples).to_csv(out / "record.csv", index=False)
        print(f"simulated {len(samples)} scores")
        v = res = None
        if args.validate:
            progress(f"validating the simulation ({max(args.n_samples, 1000)} samples per "
                     "(topic, run)) ...")
            v = ds.validate(runs, qrels, model=args.model, n_samples=max(args.n_samples, 1000),
                            measure=args.measure, systems=systems, seed=args.seed, backend=args.backend)
            v.to_csv(out / "validation.csv", index=False)
            # the same figure as the report's section: pairs whose simulated values vary
            ok = v["degenerate"].to_numpy() == False  # noqa: E712 - array comparison
            print(f"validation: {v['within_1sd'][ok].mean():.1%} of (topic, run) observed values "
                  f"within 1 SD of the simulated mean, {v['within_2sd'][ok].mean():.1%} within "
                  f"2 SD ({int((~ok).sum())} pairs that never vary excluded)")
        if args.compare:
            progress("comparing the four tests on every pair of runs ...")
            # silenced, not steering: the per-pair fits' notes; failures are in tests.csv
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = ds.compare_tests(runs, qrels, systems=systems, samples=samples,
                                       measure=args.measure, backend=args.backend, df=args.df)
            res.to_csv(out / "tests.csv", index=False)
            tables = ds.agreement(res)
            rows = []
            for test, t in tables.items():
                rows.append(t.assign(test=test))
                print(f"\n{test} vs p_t_observed (alpha 0.05):\n{t.to_string()}")
            if rows:
                # here, not at import: start-up time of the CLI
                import pandas as pd

                pd.concat(rows).to_csv(out / "agreement.csv")
        if v is not None and res is not None:
            _report(runs, qrels, args.measure, systems, v, res, out / "report.html")
    print(f"wrote {', '.join(sorted(p.name for p in final.iterdir()))} to {final}")
    return 0


def _report(runs, qrels, measure, systems, validation, comparison, path: Path) -> None:  # type: ignore[no-untyped-def]
    """report.html: the MD1 report of the observed scores plus the document-sample section."""

    # here, not at import: start-up time of the CLI
    from irmodels.analysis import build_report
    from irmodels.studies.document_samples_section import document_samples_section  # idem

    observed = irm.evaluate(runs, qrels, measures=[measure])
    if systems is not None:
        observed = irm.filter_systems(observed, systems=systems)
    section = document_samples_section(validation, comparison, ylabel=f"logit({measure})")
    # silenced, not steering: the report's notes list the fit's warnings on the page
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = build_report(observed, model="MD1", measure=measure, sections=[section])
    path.write_text(report.to_html(), encoding="utf-8")
