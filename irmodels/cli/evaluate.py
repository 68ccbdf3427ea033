"""``irmodels evaluate``: per-topic scores of TREC runs against qrels, as a long frame.

Examples::

    irmodels evaluate runs/ --qrels qrels.txt --measure AP --measure P@10 --out scores.csv
    irmodels evaluate bm25.run lm.run --qrels qrels.txt --measure nDCG@10 --out scores.parquet
    irmodels evaluate runs/ --qrels qrels.txt --measure AP --shards shards.csv --out sharded.csv
    irmodels evaluate runs/ --qrels qrels.txt --measures bpref,infAP,AP --judged-only
    irmodels evaluate runs/ --qrels qrels.txt --measures AP,bpref --aggregate gmean
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

import irmodels as irm
from irmodels._safeio import atomic_file, check_target
from irmodels.cli._common import input_file as _input_file
from irmodels.cli._common import (
    parse_undefined,
    progress,
    read_stdin_bytes,
    save_stdin,
    stdin_errors,
)
from irmodels.cli._options import add_force, output_suffix, positive_int, usage
from irmodels.data._lines import iter_lines, read_bytes
from irmodels.errors import DataFormatError, IRModelsError, UsageError, require

_DEFAULT = ["AP", "P@10", "nDCG@10", "RBP(p=0.8)"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="score TREC runs against qrels per topic (AP, P@k, nDCG@k, RBP, ...)",
        description=(
            "Score every run on every topic, the way trec_eval -q does (same tie-breaking, "
            "same values), and write the long frame (measure, topic, system[, shard], score) "
            "as CSV or parquet. RUNS are TREC run files (topic Q0 docid rank score tag) or "
            "directories of them; each run is named after its tag."
        ),
        epilog=(
            "Measures: AP, AP@k, P@k, R@k, Rprec, RR, nDCG, nDCG@k, RBP(p=0.8), "
            "RBP_res(p=0.8), GMAP, num_rel, num_ret, num_rel_ret, Bpref, gm_bpref, infAP, "
            "IPrec@0.1, 11pt_avg, SP, SP@k, DCG, DCG@k; AP(judged_only=True) scores the "
            "condensed list (trec_eval names such as map, P_10, ndcg_cut_10, bpref, "
            "iprec_at_recall_0.10 work too). Example: irmodels evaluate runs/ --qrels qrels.txt "
            "--measure AP --measure P@10 --out scores.csv"
        ),
    )
    p.add_argument("runs", nargs="+", metavar="RUNS",
                   help="run files or directories of runs; - reads one run from standard input")
    p.add_argument("--qrels", required=True, help="qrels file (topic iter docid rel)")
    p.add_argument("--measure", "--measures", "-m", action="append", dest="measures",
                   metavar="NAME",
                   help=f"a measure; repeat for several, or separate by commas "
                        f"(default: {', '.join(_DEFAULT)})")
    p.add_argument("--out", "-o", help="output file, .csv/.tsv or .parquet "
                                       "(default: CSV on standard output)")
    p.add_argument("--shards", metavar="FILE",
                   help="evaluate per shard: a CSV/whitespace file 'docid shard' (one document a "
                        "line) assigning every document to a shard")
    p.add_argument("--undefined", default="0",
                   help="policy for topics without relevant documents (in a shard): a number "
                        "to substitute (default 0, as trec_eval), 'drop' or 'missing'")
    p.add_argument("--depth", type=positive_int, help="evaluate the top DEPTH documents only (trec_eval -M)")
    p.add_argument("--relevance-level", type=positive_int, default=1,
                   help="grade from which a document is relevant (trec_eval -l, default 1)")
    p.add_argument("--complete", action="store_true",
                   help="score topics a run missed as empty rankings (trec_eval -c)")
    p.add_argument("--judged-only", action="store_true",
                   help="score the condensed lists: each ranking without its unjudged "
                        "documents (trec_eval -J; measures named AP(judged_only=True), ...)")
    p.add_argument("--aggregate", choices=["mean", "gmean", "hmean", "median"],
                   help="write one score per system (and measure, shard) instead of one per "
                        "topic: the mean (trec_eval's 'all' line), the geometric mean "
                        "(gm_map), the harmonic mean or the median over topics")
    p.add_argument("--epsilon", type=float, default=1e-5,
                   help="floor of the scores under --aggregate gmean/hmean (default 1e-5, "
                        "trec_eval's)")
    p.add_argument("--system-from", choices=["tag", "file"], default="tag",
                   help="name runs after their tag (default) or their file name")
    add_force(p)
    p.set_defaults(func=run)


def measure_list(values: list[str] | None) -> list[str]:
    if not values:
        return list(_DEFAULT)
    out: list[str] = []
    for v in values:
        # split on commas that are not inside parentheses (RBP(p=0.8) has none, but be safe)
        depth, cur = 0, ""
        for ch in v:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out


def _read_shards(path: str):
    """The shard assignment file: one document a line, ``docid shard`` separated by a comma,
    a tab or spaces (an optional header ``docid,shard``, ``#`` comments)."""
    p = Path(path)  # checked by run() before the work
    docids: list[str] = []
    shards: list[str] = []
    try:  # the checks of every reader: empty, control characters, odd whitespace, UTF-8
        data = read_bytes(p, "file")
        lines = list(iter_lines(data, p))
    except DataFormatError as exc:
        raise DataFormatError(f"cannot parse the shard assignment: {exc.reason}", path=path,
                              line=exc.line) from None
    for lineno, text in lines:
        line = text.split("#", 1)[0].strip()
        if not line:
            continue
        fields = ([f.strip().strip('"') for f in line.split(",")] if "," in line
                  else line.split())
        if len(fields) != 2 or not all(fields):
            raise DataFormatError(
                f"cannot parse the shard assignment: expected two columns 'docid shard' "
                f"(separated by a comma, a tab or spaces), found {len(fields)} field(s) in "
                f"{line[:60]!r}", path=path, line=lineno,
            )
        if not docids and fields[0].lower() in ("docid", "doc", "document", "docno"):
            continue  # a header
        docids.append(fields[0])
        shards.append(fields[1])
    if not docids:
        raise DataFormatError("cannot parse the shard assignment: the file is empty; expected "
                              "one line 'docid shard' per document", path=path)
    return pd.Series(shards, index=docids)


def _strip_zeros(topic: str) -> str:
    """A numeric topic id without its leading zeros ("0302" -> "302", "000" -> "0")."""
    return (topic.lstrip("0") or "0") if topic.isdigit() else topic


def _check_topics_match(runs, qrels, qrels_path: str) -> None:
    """Refuse runs none of whose topics are in the qrels, or whose topics match the qrels'
    only once leading zeros are stripped (``0302`` against ``302``): evaluating them would
    score every unmatched topic as unjudged (or drop it) with no more than a warning."""
    run_topics = [str(t) for t in dict.fromkeys(runs["topic"].astype(str))]
    qrel_topics = {str(t) for t in qrels["topic"].astype(str)}
    matched = [t for t in run_topics if t in qrel_topics]
    stripped = {_strip_zeros(t) for t in qrel_topics}
    unmatched = [t for t in run_topics if t not in qrel_topics]
    zeros = [t for t in unmatched if _strip_zeros(t) in stripped]
    eg_q = sorted(qrel_topics)[:3]
    if zeros and len(zeros) >= len(matched):
        t = zeros[0]
        q = next(x for x in sorted(qrel_topics) if _strip_zeros(x) == _strip_zeros(t))
        raise DataFormatError(
            f"the run topic ids and the qrels topic ids differ by leading zeros: {len(zeros)} "
            f"of the runs' {len(run_topics)} topics (e.g. run {t!r}, qrels {q!r}) match "
            f"{qrels_path} only without them, {len(matched)} match as written. Normalise the "
            "ids of one file (e.g. strip the zeros: sed -E 's/^0+([0-9])/\\1/' RUN) and run "
            "again")
    if not matched:
        raise DataFormatError(
            f"none of the runs' {len(run_topics)} topics (e.g. {', '.join(run_topics[:3])}) "
            f"is in {qrels_path} (topics {', '.join(eg_q)}{', ...' if len(qrel_topics) > 3 else ''}"
            "): every score would be that of an unjudged topic. Check that the qrels belong to "
            "these runs")


def run(args: argparse.Namespace) -> int:
    measures = measure_list(args.measures)
    # here, not at import: start-up time of the CLI
    from irmodels.data.measures import parse_measure

    for m in measures:  # fail on a bad name before reading large files
        usage(parse_measure, m)
    if args.out == "-":  # standard output: the CSV goes there, as without --out
        args.out = None
    output_suffix(args.out, (".csv", ".tsv", ".tab", ".parquet", ".pq"))
    policy = parse_undefined(args.undefined)
    if args.epsilon != 1e-5 and not args.aggregate:
        raise UsageError("--epsilon is the floor of --aggregate gmean/hmean; give --aggregate "
                         "too, or drop --epsilon")
    if not (args.epsilon > 0 and args.epsilon < float("inf")):
        raise UsageError(f"--epsilon must be a positive number, got {args.epsilon!r}")
    _input_file(args.qrels, "--qrels", "qrels")  # the options, before the runs are read
    if args.shards:
        _input_file(args.shards, "--shards", "shard assignment")
    if args.out:
        check_target(args.out, force=args.force)  # refuse an existing output before the work
    if list(args.runs) != ["-"]:
        return _run(args, measures, policy)
    # one run file on standard input: saved as it came (bytes: the run reader names a line
    # that is not UTF-8), errors say "standard input", the copy is always removed

    data = read_stdin_bytes()
    if not data.strip():
        raise UsageError("RUNS is '-' but standard input is empty; pipe a TREC run into "
                         "the command (cat run.txt | irmodels evaluate - --qrels Q).")
    tmp = save_stdin(data, "stdin")
    with stdin_errors(tmp, (IRModelsError,)):
        args.runs = [str(tmp)]
        return _run(args, measures, policy)


def _run(args: argparse.Namespace, measures: list[str], policy) -> int:
    for path in args.runs:
        if not Path(path).exists():
            raise UsageError(f"run file or directory {path} does not exist")
    if len(args.runs) == 1 and Path(args.runs[0]).is_dir():
        runs = irm.read_runs(args.runs[0], system_from=args.system_from)
    else:
        files = []
        for path in args.runs:
            pth = Path(path)
            if pth.is_dir():
                files += sorted(q for q in pth.iterdir()
                                if q.is_file() and not q.name.startswith("."))
            else:
                files.append(pth)
        runs = irm.read_runs(files, system_from=args.system_from)
    qrels = irm.read_qrels(args.qrels)
    _check_topics_match(runs, qrels, args.qrels)
    shards = _read_shards(args.shards) if args.shards else None

    progress(f"evaluating {', '.join(measures)} on {runs['system'].nunique()} run(s), "
             f"{runs['topic'].nunique()} topic(s){' per shard' if shards is not None else ''} ...")
    data = irm.evaluate(runs, qrels, measures, shards=shards, undefined=policy,
                        depth=args.depth, relevance_level=args.relevance_level,
                        complete=args.complete, judged_only=args.judged_only)
    if args.aggregate:
        data = irm.aggregate(data, args.aggregate, epsilon=args.epsilon)
    if args.out and args.aggregate:  # not a long frame (no topic): written as a table
        write_table(data, args.out, force=args.force)
    elif args.out:
        irm.write_frame(data, args.out, force=args.force)
    if args.out:
        n_sys = data["system"].nunique()
        n_top = data["n_topics"].max() if args.aggregate else data["topic"].nunique()
        print(f"wrote {len(data):,} {args.aggregate + ' ' if args.aggregate else ''}scores "
              f"({len(measures)} measure(s), {n_top} topics, {n_sys} systems) to {args.out}",
              file=sys.stderr)
    else:
        data.to_csv(sys.stdout, index=False)
    return 0


def write_table(data, path: str, *, force: bool) -> None:
    """The per-system table of --aggregate as CSV/TSV or parquet, by extension, written
    beside its target and renamed into place (as irm.write_frame)."""

    target = Path(path)
    suffix = target.suffix.lower()
    if suffix in (".parquet", ".pq"):
        require("pyarrow", "parquet")
    with atomic_file(target, force=force) as tmp:
        if suffix in (".parquet", ".pq"):
            data.to_parquet(tmp, index=False)
        else:
            data.to_csv(tmp, sep="\t" if suffix in (".tsv", ".tab") else ",", index=False,
                        lineterminator="\n")
