"""Helpers shared by the subcommands: reading DATA, selecting systems, progress, list and
policy options.

DATA is, everywhere a command reads scores: a file (long frame CSV/TSV/parquet, wide matrix
CSV, trec_eval -q output), a directory of trec_eval -q files, ``-`` for standard input (CSV/TSV
or trec_eval -q text), or a registry dataset ``COLLECTION:MEASURE`` (``adhoc8:AP``; see
``irmodels datasets``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import irmodels as irm
from irmodels.cli._options import float_option, usage
from irmodels.cli._sniff import data_kind, is_trec_eval_line, long_guess, table_header
from irmodels.data._lines import missing_file
from irmodels.errors import DataFormatError, DesignError, FormulaError, IRModelsError, UsageError

__all__ = ["check_runs", "float_list", "float_list_type", "input_file", "int_list", "load_data",
           "load_scores_source", "parse_undefined", "progress",
           "select_systems"]

_DATASET = re.compile(r"^(?P<collection>[A-Za-z][A-Za-z0-9_.-]*):(?P<measure>[^/\\:]+)$")


def _registry_spec(text: str) -> tuple[str, str] | None:
    """``("adhoc8", "AP")`` for ``adhoc8:AP`` when that collection is in the registry."""
    m = _DATASET.match(text)
    if m is None or Path(text).exists():
        return None

    known = {str(c).lower() for c in irm.datasets.list()["collection"]}
    if m.group("collection").lower() not in known:
        return None
    return m.group("collection"), m.group("measure")


def read_stdin_bytes(stream: io.IOBase | None = None) -> bytes:
    """Standard input as bytes, undecoded: the file readers judge the encoding (and name the
    line of a byte that is not UTF-8), not the locale of the terminal."""
    source: Any = stream if stream is not None else sys.stdin
    buffer = getattr(source, "buffer", None)
    data = buffer.read() if buffer is not None else source.read()
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)


def _stdin_to_file(stream: io.IOBase | None = None) -> Path:
    """Standard input saved to a temporary file whose suffix says what it holds: ``.csv`` /
    ``.tsv`` for a table with a header, none for trec_eval -q text (3 fields, last numeric).
    The bytes are saved as they came (the readers report a byte that is not UTF-8 by line);
    the caller removes the file's directory (:func:`_remove_stdin_file`)."""
    data = read_stdin_bytes(stream)
    if not data.strip():
        raise DataFormatError("DATA is '-' but standard input is empty; pipe scores into the "
                              "command (e.g. cat scores.csv | irmodels anova -).")
    # only the first line, to guess the format
    first = data.lstrip().split(b"\n", 1)[0].decode("utf-8", errors="replace")
    suffix = "" if is_trec_eval_line(first) else ".csv"
    if suffix and "\t" in first and "," not in first:
        suffix = ".tsv"
    return save_stdin(data, f"stdin{suffix}")


def save_stdin(data: bytes, name: str) -> Path:
    """The bytes of standard input saved as they came (the readers report a byte that is not
    UTF-8 by line) to ``name`` in a fresh temporary directory, which the caller removes
    (:func:`stdin_errors`)."""
    tmp = Path(tempfile.mkdtemp(prefix="irmodels-stdin-")) / name
    try:
        tmp.write_bytes(data)
    except BaseException:
        _remove_stdin_file(tmp)
        raise
    return tmp


def _remove_stdin_file(tmp: Path) -> None:
    """Remove the temporary copy of standard input and its directory."""

    shutil.rmtree(tmp.parent, ignore_errors=True)


@contextlib.contextmanager
def stdin_errors(tmp: Path, kinds: tuple[type[BaseException], ...]) -> Iterator[None]:
    """Around the reading of ``tmp``, the copy of standard input: an error of ``kinds`` names
    "standard input" instead of the temporary path, and the copy is removed in any case."""
    try:
        yield
    except kinds as exc:
        new = _as_stdin_error(exc, tmp)
        if new is None:
            raise
        raise new from None
    finally:
        _remove_stdin_file(tmp)


def _as_stdin_error(exc: BaseException, tmp: Path) -> BaseException | None:
    """``exc`` with the temporary path of standard input replaced by "standard input" (None
    when ``exc`` is not an error about the data)."""

    if not isinstance(exc, IRModelsError):
        return None
    msg = (str(exc).replace(str(tmp), "standard input")
           .replace(str(tmp.parent), "standard input").replace(tmp.name, "standard input"))
    try:
        new = type(exc)(msg)
    except Exception:  # noqa: BLE001 - an error class with another signature: keep it
        return None
    return new


def column_names(args: argparse.Namespace) -> dict[str, str]:
    """The names given by ``--topic``/``--system``/``--score`` (canonical -> column), each
    defaulting to its canonical name."""
    return {role: (getattr(args, role, None) or role) for role in ("topic", "system", "score")}


def user_named(data: pd.DataFrame, args: argparse.Namespace) -> tuple[pd.DataFrame, dict]:
    """``data`` (a canonical long frame from :func:`load_data`) under the user's column names
    of ``--topic``/``--system``/``--score`` and the keywords that name them, for a library
    function whose result then names the user's columns; ``(data, {})`` without such
    options."""
    names = column_names(args)
    own = {role: name for role, name in names.items() if name != role}
    if not own:
        return data, {}
    keep = ["topic", "system", "score"] + [c for c in ("measure", "collection", "shard",
                                                        "sample") if c in data.columns]
    out = data[keep].rename(columns=names)
    out.attrs.update(data.attrs)
    return out, names


def load_data(
    path: str | Path, *, measure: str | None = None, single_measure: bool = True,
    systems: Sequence[str] | None = None, columns: dict[str, str] | None = None,
    keep_columns: bool = False,
) -> pd.DataFrame:
    """DATA as a long frame: parquet or a CSV/TSV with topic, system, score columns is a long
    frame, any other CSV/TSV a wide matrix (rows = topics, columns = systems); a directory or a
    file without a CSV/TSV/parquet extension is trec_eval -q output; ``-`` reads standard input;
    ``COLLECTION:MEASURE`` (``adhoc8:AP``) loads a registry dataset. ``measure`` selects one
    measure; with ``single_measure`` several measures without ``measure`` are an error;
    ``systems`` keeps those runs (``--systems``). ``columns`` names the topic, system and score
    columns of a long frame (``--topic``/``--system``/``--score``, see :func:`column_names`).
    With ``keep_columns`` (the commands with ``--formula``) a long frame keeps the file's other
    columns (covariates such as ``qlen``), and the columns named by ``columns`` stay
    available under the user's names too, so a formula may use either name.

    A CSV/TSV without the long frame's columns whose columns after the first hold labels is a
    long frame with other names, not a matrix: refused with the options that name them."""

    names = {"topic": "topic", "system": "system", "score": "score", **(columns or {})}
    own = {role: name for role, name in names.items() if name != role}
    if str(path) != "-":
        spec = _registry_spec(str(path))
        if spec is not None:
            if own:
                raise UsageError(
                    f"{_options_text(own)}: these options name the columns of a long-frame "
                    f"file; DATA {path} is a registry dataset, whose columns are topic, "
                    "system, score: leave them out.")
            if measure is not None and measure.lower() != spec[1].lower():
                raise UsageError(f"DATA {path} names measure {spec[1]} but --measure is "
                                 f"{measure}; give one of them.")

            usage(irm.datasets.info, *spec)  # a measure typed wrong: exit status 2
            return select_systems(irm.datasets.load(*spec), systems)
    if str(path) == "-":
        tmp = _stdin_to_file()
        with stdin_errors(tmp, (DataFormatError, DesignError)):
            return load_data(tmp, measure=measure, single_measure=single_measure,
                             systems=systems, columns=columns, keep_columns=keep_columns)
    p = Path(path)
    if not p.exists():
        if _DATASET.match(str(path)):  # a dataset name typed wrong: a usage error
            raise UsageError(
                f"{path} is neither a file nor a registry dataset; list the datasets with "
                "'irmodels datasets list' (DATA COLLECTION:MEASURE, e.g. adhoc8:AP)."
            )
        raise missing_file(p, "DATA file")
    kind = data_kind(p, set(names.values()))
    if own and kind != "frame":
        _refuse_columns(p, kind, names, own)
    if kind == "trec_eval":
        data = irm.read_trec_eval(p)
    elif kind == "frame":
        data = irm.read_frame(p, **names)
        if keep_columns:
            data = _with_file_columns(p, data, names)
    else:
        guess = long_guess(p)
        if guess is not None:  # qid,run,map: a long frame under other names, not a matrix
            _, header = table_header(p)
            raise DataFormatError(
                f"{p.name} looks like a long frame (one row per topic and system; column "
                f"{guess['system']!r} holds labels, which a wide matrix never has), but its "
                f"header ({', '.join(header[:8])}{', ...' if len(header) > 8 else ''}) has no "
                f"topic, system, score columns. Name them: --topic {guess['topic']} --system "
                f"{guess['system']} --score {guess['score']} (in Python irm.read_frame(path, "
                f"topic={guess['topic']!r}, system={guess['system']!r}, score="
                f"{guess['score']!r})). A wide matrix has one row per topic and one column of "
                "numbers per system.")
        data = irm.read_matrix(p, measure=measure)
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


def _options_text(own: dict[str, str]) -> str:
    return " ".join(f"--{role} {name}" for role, name in own.items())


def _refuse_columns(p: Path, kind: str, names: dict[str, str], own: dict[str, str]) -> None:
    """``--topic``/``--system``/``--score`` given for DATA that is not a long frame with those
    columns: a usage error for trec_eval output, else the missing column with a "did you
    mean" (exit status 1, the file's header is named)."""
    if kind == "trec_eval":
        raise UsageError(
            f"{_options_text(own)}: these options name the columns of a long-frame "
            f"CSV/TSV/parquet file; DATA {p.name} is trec_eval -q output (measure, topic, score "
            "per line): leave them out.")
    # here, not at import: start-up time of the CLI
    from irmodels.data._columns import refuse_missing

    _, header = table_header(p)
    if not set(header) & set(own.values()) and long_guess(p) is None:
        raise UsageError(
            f"{_options_text(own)}: these options name the columns of a long frame, but DATA "
            f"{p.name} is a wide matrix (rows = topics, one column of numbers per system: "
            f"{', '.join(header[:6])}{', ...' if len(header) > 6 else ''}), read as topic, "
            "system, score: leave them out.")
    refuse_missing(pd.DataFrame(columns=header), names, "", owner=f"{p.name}'s header")


def _with_file_columns(p: Path, data: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``data`` (read by :func:`irmodels.read_frame`, one row per row of the file, in order)
    with the file's other columns (covariates for a formula) and the user's names of the
    topic, system and score columns beside the canonical ones."""
    # here, not at import: start-up time of the CLI
    from irmodels.data.frame import CANONICAL_ORDER

    if p.suffix.lower() in (".parquet", ".pq"):
        # here, not at import: pyarrow is optional and slow to import
        import pyarrow.parquet as pq

        header = list(pq.read_schema(p).names)
    else:
        sep, header = table_header(p)
    used = set(CANONICAL_ORDER) | set(names.values())
    extra = [c for c in header if c not in used and c not in data.columns]
    out = data.copy()
    if extra:
        if p.suffix.lower() in (".parquet", ".pq"):
            raw = pd.read_parquet(p, columns=extra)
        else:
            raw = pd.read_csv(p, sep=sep, usecols=extra, index_col=False)
        if len(raw) == len(out):  # the rows correspond one to one (read_frame drops none)
            for c in extra:
                out[c] = raw[c].to_numpy()
    for role, name in names.items():
        if name != role and name not in out.columns:
            out[name] = out[role]
    out.attrs.update(data.attrs)
    return out


def check_runs(option: str, names: Sequence[str], data: pd.DataFrame) -> None:
    """Raise :class:`UsageError` (exit status 2) naming the runs of ``names`` (typed after
    ``option`` on the command line) that are not systems of ``data``.

    >>> import irmodels as irm, pandas as pd
    >>> d = irm.from_wide(pd.DataFrame({"a": [.1, .2], "b": [.3, .4]}))
    >>> check_runs("--baseline", ["a"], d)
    >>> check_runs("--baseline", ["A"], d)
    Traceback (most recent call last):
    ...
    irmodels.errors.UsageError: --baseline: A not in DATA, which has 2 runs (a, b); names are case-sensitive.
    """
    present = [str(s) for s in pd.unique(data["system"].astype(str))]
    known = set(present)
    unknown = list(dict.fromkeys(n for n in names if n not in known))
    if unknown:
        raise UsageError(
            f"{option}: {', '.join(unknown[:5])} not in DATA, which has {len(present)} runs "
            f"({', '.join(present[:6])}{', ...' if len(present) > 6 else ''}); names are "
            "case-sensitive."
        )


def system_names(systems: Sequence[str], data: pd.DataFrame) -> list[str]:
    """The runs named by ``--systems`` (``a b`` or ``a,b``), each once, in order; unknown
    names or fewer than two are a usage error (exit status 2).

    >>> import irmodels as irm, pandas as pd
    >>> d = irm.from_wide(pd.DataFrame({"a": [.1, .2], "b": [.3, .4], "c": [.5, .6]}))
    >>> system_names(["c,a", "c"], d)
    ['c', 'a']
    """
    names = [n.strip() for item in systems for n in str(item).split(",") if n.strip()]
    check_runs("--systems", names, data)
    if len(set(names)) < 2:
        raise UsageError(f"--systems needs at least two runs to compare; got {names}.")
    return list(dict.fromkeys(names))


def select_systems(data: pd.DataFrame, systems: Sequence[str] | None) -> pd.DataFrame:
    """The rows of ``systems`` (all rows for None); unknown names are a one-line error.

    >>> import irmodels as irm, pandas as pd
    >>> d = irm.from_wide(pd.DataFrame({"a": [.1, .2], "b": [.3, .4], "c": [.5, .6]}))
    >>> sorted(select_systems(d, ["a", "c"])["system"].unique().tolist())
    ['a', 'c']
    """
    if not systems:
        return data
    names = system_names(systems, data)
    out = data.loc[data["system"].astype(str).isin(names)].reset_index(drop=True)
    if isinstance(out["system"].dtype, pd.CategoricalDtype):
        out["system"] = out["system"].cat.remove_unused_categories()
    return out


def input_file(path: str | Path, option: str, what: str) -> Path:
    """An input file named by ``option`` (``--qrels``): a missing path or a directory is a
    usage error (exit status 2) that says which."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {path} is a directory; give the {what} file")
    if not p.is_file():
        raise UsageError(f"{what} file {path} does not exist")
    return p


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


def float_list(text: str, *, finite: bool = False, nonzero: bool = False,
               low: float | None = None, high: float | None = None) -> list[float]:
    """Parse ``0.01,0.05`` (argparse type). With ``finite`` NaN and infinities are refused,
    with ``nonzero`` zero, with ``low`` / ``high`` values outside ``[low, high]``; use
    :func:`float_list_type` to make such a type.

    >>> float_list("0.01, 0.05")
    [0.01, 0.05]
    """

    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    finite = finite or low is not None or high is not None
    for v in values:
        bad = ((finite and not math.isfinite(v)) or (nonzero and v == 0)
               or (low is not None and v < low) or (high is not None and v > high))
        if bad:
            what = " and ".join(w for w in ("finite" if finite else "",
                                            "non-zero" if nonzero else "") if w)
            span = (f" from {low:g} to {high:g}" if low is not None and high is not None
                    else f" >= {low:g}" if low is not None
                    else f" <= {high:g}" if high is not None else "")
            raise argparse.ArgumentTypeError(
                f"expected {what + ' ' if what else ''}numbers{span} separated by commas, got "
                f"{v:g} in {text!r}")
    return values


def float_list_type(**checks):
    """An argparse type: :func:`float_list` with ``checks`` (``finite``, ``nonzero``, ``low``,
    ``high``).

    >>> float_list_type(low=0, high=1)("0.5,0.95")
    [0.5, 0.95]
    """
    def parse(text: str) -> list[float]:
        return float_list(text, **checks)

    parse.__name__ = "float_list"  # argparse names the type in its messages
    return parse


def parse_undefined(text: str) -> float | str:
    """The ``--undefined`` policy: a number to substitute, ``drop`` or ``missing``.

    >>> parse_undefined("0"), parse_undefined("drop")
    (0.0, 'drop')
    """

    if text in ("drop", "missing"):
        return text
    value = float_option(text)  # None: not a number, or not finite
    if value is None:
        raise UsageError(
            f"--undefined {text!r} is not a policy; give a finite number (e.g. 0), 'drop' or "
            "'missing'"
        )
    return value


def formula_error(exc: Exception, path: str | Path, args: argparse.Namespace) -> Exception:
    """``exc`` (an error of ``--formula``) with the way out when the formula names a column
    that DATA, a wide matrix, cannot have: a matrix is read into ``topic, system, score``."""

    if not isinstance(exc, FormulaError) or "unknown column" not in exc.reason:
        return exc
    p = Path(path)
    if str(path) == "-" or not p.is_file() or data_kind(p, set(column_names(args).values())) != "matrix":
        return exc
    return FormulaError(
        f"{exc.reason}; DATA {p.name} is a wide matrix (rows = topics, one column per system), "
        "read into the columns topic, system, score: write the formula with those names, or "
        "give a long frame (topic, system, score and the other columns)", exc.formula, exc.span)


def load_scores_source(args: argparse.Namespace) -> pd.DataFrame:
    """The scores named by :func:`irmodels.cli._options.add_scores_source`'s options: a public
    dataset (``--dataset``, ``--measure``; a name typed wrong exits 2) or DATA, with the column
    options and ``--systems``."""

    if args.dataset:
        usage(irm.datasets.info, args.dataset, args.measure)
        return select_systems(irm.datasets.load(args.dataset, args.measure), args.systems)
    return load_data(args.data, columns=column_names(args), measure=args.measure,
                     systems=args.systems)
