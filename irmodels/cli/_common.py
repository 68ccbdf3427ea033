"""Helpers shared by the subcommands: reading DATA, parsing list and policy options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from irmodels.errors import DataFormatError, DesignError, UsageError

__all__ = ["float_list", "int_list", "load_data", "parse_undefined"]

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
