"""``irmodels gstudy``: variance components and D-study of a score collection.

Examples::

    irmodels gstudy adhoc8_ap.csv --topics 25,50,100 --target 0.95
    irmodels gstudy scores.parquet --measure AP --alpha 0.1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from irmodels.errors import DataFormatError, DesignError

_LONG_COLUMNS = {"topic", "system", "score"}


def load_data(
    path: str | Path, *, measure: str | None = None, single_measure: bool = True
) -> pd.DataFrame:
    """DATA as a long frame: parquet or a CSV/TSV with topic, system, score columns is a long
    frame, any other CSV/TSV a wide matrix (rows = topics, columns = systems); a directory or a
    file without a CSV/TSV/parquet extension is trec_eval -q output. ``measure`` selects one
    measure; with ``single_measure`` several measures without ``measure`` are an error."""
    import irmodels as irm

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(2, "No such file or directory", str(p))
    suffix = p.suffix.lower()
    if p.is_dir() or suffix not in (".parquet", ".pq", ".csv", ".tsv", ".tab", ".txt"):
        data = irm.read_trec_eval(p)
    elif suffix in (".parquet", ".pq"):
        data = irm.read_frame(p)
    else:
        with p.open(encoding="utf-8-sig", errors="replace") as fh:
            header = fh.readline()
        sep = "\t" if ("\t" in header and "," not in header) else ","
        names = {h.strip().strip('"').strip("'") for h in header.split(sep)}
        data = irm.read_frame(p) if _LONG_COLUMNS <= names else irm.read_matrix(p, measure=measure)
    if "measure" in data.columns:
        levels = [str(m) for m in pd.unique(data["measure"].astype(str))]
        if measure is not None:
            if measure not in levels:
                raise DataFormatError(
                    f"measure {measure!r} is not in {p.name}; it has {', '.join(levels[:10])}"
                )
            data = data[data["measure"].astype(str) == measure].reset_index(drop=True)
            data["measure"] = data["measure"].astype(str).astype("category")
        elif len(levels) > 1 and single_measure:
            raise DesignError(
                f"{p.name} holds {len(levels)} measures ({', '.join(levels[:10])}); pick one "
                "with --measure."
            )
    return data


def int_list(text: str) -> list[int]:
    """Parse ``25,50,100`` (argparse type)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive whole numbers, got {text!r}")
    return values


def float_list(text: str) -> list[float]:
    """Parse ``0.01,0.05`` (argparse type)."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "gstudy",
        help="generalizability theory: variance components, E rho^2 and Phi, topics needed",
        description=(
            "G-study of a collection (systems x topics, or x shards with a shard column) and the "
            "D-study: E rho^2 and Phi with confidence intervals for other numbers of topics, and "
            "the topics needed to reach a target stability."
        ),
        epilog=(
            "DATA is a long-frame CSV/TSV/parquet (topic, system, score[, shard, measure]) or a "
            "wide matrix CSV (rows = topics, columns = systems). "
            "Example: irmodels gstudy adhoc8_ap.csv --topics 25,50,100 --target 0.95"
        ),
    )
    p.add_argument("data", help="scores (see below)")
    p.add_argument("--measure", help="measure to analyse when the data hold several")
    p.add_argument("--topics", type=int_list, help="numbers of topics for the D-study, e.g. 25,50,100")
    p.add_argument("--shards", type=int_list, help="numbers of shards for the D-study (shard data only)")
    p.add_argument("--target", type=float, default=0.95, help="target stability (default 0.95)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default 0.05)")
    p.add_argument("--digits", type=int, default=4, help="significant digits shown (default 4)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from irmodels._display import frame_to_text
    from irmodels.inference.gtheory import gstudy

    data = load_data(args.data, measure=args.measure)
    g = gstudy(data)
    topics = args.topics or sorted({10, 25, 50, 100, g.n_topics})
    d = g.dstudy(topics, args.shards, alpha=args.alpha)
    print(g._display_title())
    print("\nVariance components")
    print(frame_to_text(g.components, args.digits))
    print(f"\nD-study (confidence {1 - args.alpha:g}, two-sided)")
    print(frame_to_text(d.set_index("topics"), args.digits))
    rows = {}
    for index in ("Erho2", "Phi"):
        try:
            if g.facet is None:
                rows[index] = g.topics_needed(args.target, index=index, alpha=args.alpha)
            else:
                rows[index] = pd.Series({"topics": g.topics_needed(args.target, index=index)})
        except DesignError as exc:
            rows[index] = pd.Series({"topics": pd.NA})
            print(f"\n{index}: {exc}")
    table = pd.DataFrame(rows).T
    table.index.name = "index"
    print(f"\nTopics needed for {args.target:g}")
    print(table.to_string())
    return 0
