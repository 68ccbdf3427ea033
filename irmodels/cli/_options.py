"""Option types and output helpers shared by the subcommands (argparse level validation).

Each type raises :class:`argparse.ArgumentTypeError`, so a bad value is a usage error: argparse
prints one line naming the option and exits with status 2.

>>> digits("3"), seed("0"), open_unit("0.95")
(3, 0, 0.95)
>>> digits("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected a whole number from 1 to 17, got '0'
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from irmodels.errors import IRModelsError, ResourceError, UsageError

__all__ = [
    "add_columns",
    "add_scores_source",
    "add_force",
    "add_systems",
    "check_scheduler",
    "decimals",
    "digits",
    "finite_float",
    "nonnegative_int",
    "open_unit",
    "output_suffix",
    "usage",
    "positive_float",
    "positive_int",
    "seed",
    "wrote",
]


def int_option(text: str, lo: int, hi: int | None, what: str) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = None
    if value is None or value < lo or (hi is not None and value > hi):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def digits(text: str) -> int:
    """Significant digits: a whole number from 1 to 17."""
    return int_option(text, 1, 17, "a whole number from 1 to 17")


def decimals(text: str) -> int:
    """Decimals shown: a whole number from 0 to 17."""
    return int_option(text, 0, 17, "a whole number from 0 to 17")


def seed(text: str) -> int:
    """A random seed: a whole number from 0 to 2**63 - 1."""
    return int_option(text, 0, 2**63 - 1, "a whole number >= 0 (a seed)")


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    return int_option(text, 1, None, "a whole number >= 1")


def nonnegative_int(text: str) -> int:
    """A whole number >= 0."""
    return int_option(text, 0, None, "a whole number >= 0")


def float_option(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def finite_float(text: str) -> float:
    """A finite number."""
    value = float_option(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def open_unit(text: str) -> float:
    """A number strictly between 0 and 1 (a level, a probability, a target)."""
    value = float_option(text)
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = float_option(text)
    if value is None or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def add_force(parser: argparse.ArgumentParser) -> None:
    """Add ``--force``: replace an existing output (whole) instead of refusing it."""
    parser.add_argument(
        "--force", action="store_true",
        help="replace an existing output (a directory is replaced whole, never mixed); "
             "without it an existing output is refused",
    )


def usage(fn, *args, **kwargs):
    """Call ``fn`` (a check of something typed on the command line: a measure name, a dataset
    name); an irmodels error it raises becomes a :class:`UsageError` (exit status 2), except
    an environment error (:class:`ResourceError`: a download that failed, exit status 3)."""
    try:
        return fn(*args, **kwargs)
    except ResourceError:
        raise
    except IRModelsError as exc:
        raise UsageError(str(exc)) from None


def output_suffix(path: str | Path | None, allowed: tuple[str, ...], what: str = "--out") -> None:
    """Refuse an output name whose extension the writer cannot honour, before any work."""
    if path is None:
        return
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        raise UsageError(
            f"{what} {str(path)!r}: cannot tell the format from the extension {suffix!r}; use "
            + ", ".join(allowed)
        )


def wrote(path: str | Path, what: str = "") -> str:
    """The line that says where the output went."""
    p = Path(path)
    return f"wrote {what + ' ' if what else ''}{p.resolve() if not p.is_absolute() else p}"


def check_scheduler(backend: str | None, timeout: float = 5.0) -> None:
    """Fail fast, in one line, when ``backend`` is a Dask scheduler address nobody answers
    (:func:`irmodels.parallel.check_scheduler`, which :func:`irmodels.parallel.map` calls too)."""
    if not backend or backend in ("serial", "processes"):
        return
    # here, not at import: start-up time of the CLI (numpy; _options is on the pandas-free anova path)
    from irmodels.parallel import check_scheduler as check

    check(backend, timeout=timeout)


def add_systems(parser: argparse.ArgumentParser) -> None:
    """Add ``--systems NAME [NAME ...]``: analyse only these runs."""
    parser.add_argument(
        "--systems", nargs="+", metavar="NAME", default=None,
        help="analyse only these runs (names as in DATA; comma-separated also accepted)",
    )


def add_columns(parser: argparse.ArgumentParser) -> None:
    """Add ``--topic``, ``--system``, ``--score``: the names of those columns in a long-frame
    DATA file whose header uses other names (``--topic qid --system run --score map``)."""
    group = parser.add_argument_group(
        "columns of a long-frame DATA file (when they are not called topic, system, score)")
    for role, example in (("topic", "qid"), ("system", "run"), ("score", "map")):
        group.add_argument(f"--{role}", metavar="COLUMN", default=None,
                           help=f"the column holding the {role} (default {role}; e.g. "
                                f"{example})")


def add_scores_source(p: argparse.ArgumentParser, example: str) -> None:
    """DATA or ``--dataset`` (one of them), ``--measure``, ``--systems`` and the column options of a
    command that reads one score collection; ``example`` is a dataset spec such as ``adhoc8:AP``."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("data", metavar="DATA", nargs="?",
                     help="scores: long frame or wide matrix, - (standard input) or a dataset "
                          f"COLLECTION:MEASURE ({example})")
    add_systems(p)
    add_columns(p)
    src.add_argument("--dataset", help="a public matrix of irm.datasets (e.g. adhoc8)")
    p.add_argument("--measure", help="measure (with --dataset, or when DATA holds several)")
