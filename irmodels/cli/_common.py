"""Helpers shared by the subcommands: reading DATA, selecting systems, progress, list and
policy options.

DATA is, everywhere a command reads scores: a file (long frame CSV/TSV/parquet, wide matrix
CSV, trec_eval -q output), a directory of trec_eval -q files, ``-`` for standard input (CSV/TSV
or trec_eval -q text), or a registry dataset ``COLLECTION:MEASURE`` (``adhoc8:AP``; see
``irmodels datasets``).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from irmodels.errors import DataFormatError, DesignError, UsageError

__all__ = ["add_systems", "float_list", "int_list", "load_data", "parse_undefined", "progress",
           "select_systems"]

_LONG_COLUMNS = {"topic", "system", "score"}


_DATASET = re.compile(r"^(?P<collection>[A-Za-z][A-Za-z0-9_.-]*):(?P<measure>[^/\\:]+)$")


def _registry_spec(text: str) -> tuple[str, str] | None:
    """``("adhoc8", "AP")`` for ``adhoc8:AP`` when that collection is in the registry."""
    m = _DATASET.match(text)
    if m is None or Path(text).exists():
        return None
    import irmodels as irm

    known = {str(c).lower() for c in irm.datasets.list()["collection"]}
    if m.group("collection").lower() not in known:
        return None
    return m.group("collection"), m.group("measure")


def _stdin_to_file(stream: io.TextIOBase | None = None) -> Path:
    """Standard input saved to a temporary file whose suffix says what it holds: ``.csv`` /
    ``.tsv`` for a table with a header, none for trec_eval -q text (3 fields, last numeric)."""
    text = (stream or sys.stdin).read()
    if not text.strip():
        raise DataFormatError("DATA is '-' but standard input is empty; pipe scores into the "
                              "command (e.g. cat scores.csv | irmodels anova -).")
    first = text.lstrip().splitlines()[0]
    fields = first.split()
    suffix = ".csv"
    if len(fields) == 3 and "," not in first:
        try:
            float(fields[2])
            suffix = ""  # trec_eval -q: measure, topic, value
        except ValueError:
            pass
    if suffix and "\t" in first and "," not in first:
        suffix = ".tsv"
    tmp = Path(tempfile.mkdtemp(prefix="irmodels-stdin-")) / f"stdin{suffix}"
    tmp.write_text(text, encoding="utf-8")
    return tmp


def load_data(
    path: str | Path, *, measure: str | None = None, single_measure: bool = True,
    systems: Sequence[str] | None = None,
) -> pd.DataFrame:
    """DATA as a long frame: parquet or a CSV/TSV with topic, system, score columns is a long
    frame, any other CSV/TSV a wide matrix (rows = topics, columns = systems); a directory or a
    file without a CSV/TSV/parquet extension is trec_eval -q output; ``-`` reads standard input;
    ``COLLECTION:MEASURE`` (``adhoc8:AP``) loads a registry dataset. ``measure`` selects one
    measure; with ``single_measure`` several measures without ``measure`` are an error;
    ``systems`` keeps those runs (``--systems``)."""
    import irmodels as irm

    if str(path) != "-":
        spec = _registry_spec(str(path))
        if spec is not None:
            if measure is not None and measure.lower() != spec[1].lower():
                raise UsageError(f"DATA {path} names measure {spec[1]} but --measure is "
                                 f"{measure}; give one of them.")
            return select_systems(irm.datasets.load(*spec), systems)
    if str(path) == "-":
        tmp = _stdin_to_file()
        try:
            return load_data(tmp, measure=measure, single_measure=single_measure,
                             systems=systems)
        except (DataFormatError, DesignError) as exc:  # say "standard input", not a temp path
            msg = str(exc).replace(str(tmp), "standard input").replace(tmp.name, "standard input")
            raise type(exc)(msg) from None
        finally:
            tmp.unlink(missing_ok=True)
            tmp.parent.rmdir()
    p = Path(path)
    if not p.exists():
        if _DATASET.match(str(path)):
            raise DataFormatError(
                f"{path} is neither a file nor a registry dataset; list the datasets with "
                "'irmodels datasets list' (DATA COLLECTION:MEASURE, e.g. adhoc8:AP)."
            )
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
    return select_systems(data, systems)


def add_systems(parser: argparse.ArgumentParser) -> None:
    """Add ``--systems NAME [NAME ...]``: analyse only these runs."""
    parser.add_argument(
        "--systems", nargs="+", metavar="NAME", default=None,
        help="analyse only these runs (names as in DATA; comma-separated also accepted)",
    )


def select_systems(data: pd.DataFrame, systems: Sequence[str] | None) -> pd.DataFrame:
    """The rows of ``systems`` (all rows for None); unknown names are a one-line error.

    >>> import irmodels as irm, pandas as pd
    >>> d = irm.from_wide(pd.DataFrame({"a": [.1, .2], "b": [.3, .4], "c": [.5, .6]}))
    >>> sorted(select_systems(d, ["a", "c"])["system"].unique().tolist())
    ['a', 'c']
    """
    if not systems:
        return data
    names = [n.strip() for item in systems for n in str(item).split(",") if n.strip()]
    present = [str(s) for s in pd.unique(data["system"].astype(str))]
    unknown = [n for n in names if n not in set(present)]
    if unknown:
        raise UsageError(
            f"--systems: {', '.join(unknown[:5])} not in DATA, which has {len(present)} runs "
            f"({', '.join(present[:6])}{', ...' if len(present) > 6 else ''})."
        )
    if len(set(names)) < 2:
        raise UsageError(f"--systems needs at least two runs to compare; got {names}.")
    out = data.loc[data["system"].astype(str).isin(names)].reset_index(drop=True)
    if isinstance(out["system"].dtype, pd.CategoricalDtype):
        out["system"] = out["system"].cat.remove_unused_categories()
    return out


def progress(message: str) -> None:
    """One progress line on standard error (kept off standard output, which may be piped)."""
    print(f"irmodels: {message}", file=sys.stderr, flush=True)


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


def parse_undefined(text: str) -> float | str:
    """The ``--undefined`` policy: a number to substitute, ``drop`` or ``missing``.

    >>> parse_undefined("0"), parse_undefined("drop")
    (0.0, 'drop')
    """
    if text in ("drop", "missing"):
        return text
    try:
        return float(text)
    except ValueError:
        raise UsageError(
            f"--undefined {text!r} is not a policy; give a number (e.g. 0), 'drop' or 'missing'"
        ) from None
