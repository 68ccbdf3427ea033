"""The ``irmodels`` command.

Each subcommand lives in its own module ``irmodels.cli.<name>`` with two functions:
``register(subparsers)`` adds its parser (and sets ``func`` to its handler with
``parser.set_defaults(func=run)``) and ``run(args) -> int``. Handlers call the public API and
render. Every failure is one line on standard error (``irmodels: error: ...``), never a
traceback, and an exit status that tells its kind (see :data:`EXIT_CODES` and docs/refusals.md):

* 0: success;
* 1: the input data are wrong (a malformed file: its path and line are named), or the model
  cannot be fitted on them;
* 2: usage: an unknown or invalid option value, a combination of options that does not go
  together, an input path that does not exist, an output that exists (without ``--force``);
* 3: the environment: an output cannot be written (read-only folder, full disk, a directory in
  the way), a Dask scheduler does not answer, an optional dependency is missing;
* 130: interrupted (Ctrl-C); no partial output is left behind.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from irmodels import __version__
from irmodels.errors import (
    ArgumentError,
    FormulaError,
    IRModelsError,
    IRModelsWarning,
    MissingDependencyError,
    OutputExistsError,
    ResourceError,
)

EXIT_OK, EXIT_DATA, EXIT_USAGE, EXIT_ENVIRONMENT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_SOFTWARE = 70  # an internal error (a bug), as sysexits.h EX_SOFTWARE
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_DATA: "the input data are wrong (file and line named) or cannot be modelled",
    EXIT_USAGE: "usage: bad option value or combination, missing input path, existing output "
                "without --force",
    EXIT_ENVIRONMENT: "environment: output not writable, disk full, scheduler unreachable, "
                      "missing optional dependency",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); no partial output is left",
    EXIT_SOFTWARE: "internal error (a bug in irmodels: please report it)",
}
_EXIT_NOTE = ("Exit status: 0 success, 1 bad input data, 2 usage error, 3 environment "
              "(cannot write, scheduler unreachable), 130 interrupted.")
_EPILOG = (
    "Run 'irmodels COMMAND --help' for the options of a command. Exit status: 0 success; "
    "1 bad input data (file:line named); 2 usage error (bad option, missing input path, "
    "existing output without --force); 3 environment (cannot write, disk full, scheduler "
    "unreachable, missing dependency); 70 internal error (a bug); 130 interrupted. See "
    "docs/refusals.md."
)

# subcommand -> module; a module that does not exist yet is simply not offered
COMMANDS: dict[str, str] = {
    "evaluate": "irmodels.cli.evaluate",
    "aggregate": "irmodels.cli.aggregate",
    "demo": "irmodels.cli.demo",
    "report": "irmodels.cli.report",
    "anova": "irmodels.cli.anova_cmd",
    "mixed": "irmodels.cli.mixed_cmd",
    "shards": "irmodels.cli.shards",
    "simulate": "irmodels.cli.simulate",
    "gstudy": "irmodels.cli.gstudy",
    "power": "irmodels.cli.power",
    "design": "irmodels.cli.design",
    "standardize": "irmodels.cli.standardize",
    "pairwise": "irmodels.cli.pairwise",
    "compare": "irmodels.cli.compare",
    "datasets": "irmodels.cli.datasets_cmd",
    "topics": "irmodels.cli.topics",
    "meta": "irmodels.cli.meta",
    "errors": "irmodels.cli.errors",
}


# one-line help of each command, shown by `irmodels --help` without importing any command module
# (tests/cli/test_cli_startup.py checks that each equals the help the module registers)
SUMMARIES: dict[str, str] = {
    "evaluate": "score TREC runs against qrels per topic (AP, P@k, nDCG@k, RBP, ...)",
    "aggregate": "one score per system over topics: mean, geometric mean (GMAP), harmonic "
                 "mean, median",
    "demo": "generate the synthetic demo collection (qrels, runs) and its per-topic scores",
    "report": "write the variance-component report (HTML, Markdown, LaTeX) of a collection",
    "anova": "crossed ANOVA table (SS, df, F, p, effect sizes) of a score collection",
    "mixed": "mixed model, linear (REML/ML) or generalised (--family): variance components, "
             "fixed effects, logLik/AIC/BIC",
    "shards": "shard study: models MD1-MD6 on random collection shards (Ferro & Sanderson 2019)",
    "simulate": "simulate replicates (document samples) of an evaluation",
    "gstudy": "generalizability theory: variance components, E rho^2 and Phi, topics needed",
    "power": "paired t-test power: solve for topics, difference, SD or power",
    "design": "size an experiment from a trial: upper confidence bound on sigma, topics needed",
    "standardize": "per-topic score standardization: fit factors on reference systems, apply them",
    "pairwise": "pairwise significance tests between systems, with multiplicity adjustment",
    "compare": "the comparison table: mean per system and measure, best in bold, significance "
               "letters (Tukey HSD or adjusted paired tests), LaTeX",
    "datasets": "list and load the public per-topic score matrices of TREC tracks",
    "topics": "topic-set study: swap rates, discriminative power, error rates, Kendall's tau",
    "meta": "meta-analysis of an effect across collections: FE, DL or REML, Q, I2, forest plot",
    "errors": "type I/II/III error rates of significance tests on simulated topics",
}


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The ``irmodels`` parser. Every command module is imported and registered, unless ``lazy``:
    then only ``command`` is, and the others appear in ``--help`` by their one-line summary
    (so ``irmodels --help`` and each command start without importing the others' dependencies).
    """

    parser = argparse.ArgumentParser(
        prog="irmodels",
        description=(
            "Statistics of IR evaluation: per-topic scores, ANOVA and mixed models, Tukey HSD, "
            "variance components and reports."
        ),
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"irmodels {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if lazy and name != command and name in SUMMARIES:
            sub.add_parser(name, help=SUMMARIES[name], add_help=False)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    for sub_parser in sub.choices.values():  # every command's --help ends with the exit statuses
        text = (sub_parser.epilog or "").rstrip()
        sub_parser.epilog = (text + ("" if not text or text.endswith(".") else ".") + " "
                          + _EXIT_NOTE).lstrip()
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irmodels`` command; returns the exit status (see :data:`EXIT_CODES`)."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(words), lazy=True)
    args = parser.parse_args(words)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    saved_format = warnings.formatwarning
    options: dict | None = None

    def in_cli_terms(text: str) -> str:
        """``text`` with the API's Python hints as this command's options (cli._hints)."""
        nonlocal options
        try:
            # here, not at import: `irmodels --help` imports no cli submodule (start-up time)
            from irmodels.cli._hints import cli_message, command_options

            if options is None:
                options = command_options(parser, words)
            return cli_message(text, options)
        except Exception:  # noqa: BLE001 - a message is never lost to its rewording
            return text

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        _show_warning(in_cli_terms(str(message)), category, filename, lineno, file, line)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default", IRModelsWarning)
            warnings.formatwarning = _format_warning  # type: ignore[assignment]
            # shown on stderr even when an outer context records warnings (a notebook, pytest)
            warnings.showwarning = show_warning
            try:
                return int(args.func(args) or 0)
            except BrokenPipeError:  # output piped into `head` and closed early: not an error
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                return EXIT_OK
            except KeyboardInterrupt:
                print("irmodels: interrupted; no partial output was left", file=sys.stderr)
                return EXIT_INTERRUPTED
            except Exception as exc:  # noqa: BLE001 - every failure is one line, no traceback
                message, status = describe_failure(exc)
                if status is None:
                    if os.environ.get("IRMODELS_TRACEBACK"):
                        raise
                    message = (f"internal error {type(exc).__name__}: {exc}. This is a bug in "
                               "irmodels; please report it (set IRMODELS_TRACEBACK=1 to see "
                               "the traceback)")
                    status = EXIT_SOFTWARE
                print(f"irmodels: error: {in_cli_terms(message)}", file=sys.stderr)
                return status
    finally:
        warnings.formatwarning = saved_format


def describe_failure(exc: BaseException) -> tuple[str, int | None]:
    """One line and the exit status for an exception a command raised; status None for a bug
    (an exception that is not about the input, the options or the environment)."""

    text = str(exc)
    if isinstance(exc, (ArgumentError, OutputExistsError, FormulaError)):
        return text, EXIT_USAGE
    if isinstance(exc, (ResourceError, MissingDependencyError)):
        return text, EXIT_ENVIRONMENT
    if isinstance(exc, FileNotFoundError):  # irmodels.errors.MissingFileError included
        hint = getattr(exc, "suggestion", "")
        name = exc.filename if exc.filename is not None else text
        return f"no such file: {name}" + (f"; {hint}" if hint else ""), EXIT_USAGE
    if isinstance(exc, IRModelsError):
        if type(exc).__name__ == "ParallelError":  # an unknown --backend value
            return text, EXIT_USAGE
        return text, EXIT_DATA
    if isinstance(exc, (IsADirectoryError, NotADirectoryError, PermissionError)):
        return f"cannot use {exc.filename}: {exc.strerror}", EXIT_DATA
    if isinstance(exc, UnicodeDecodeError):
        return (f"the input is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); re-save it as UTF-8"), EXIT_DATA
    if isinstance(exc, csv.Error):
        return f"the CSV input cannot be parsed: {exc}", EXIT_DATA
    if type(exc).__module__.startswith("pyarrow"):
        return f"the input cannot be read by pyarrow: {str(exc).splitlines()[0] if str(exc) else exc!r}", EXIT_DATA
    if isinstance(exc, MemoryError):
        return "out of memory; use a smaller input or a machine with more memory", EXIT_ENVIRONMENT
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}", EXIT_ENVIRONMENT
    return "", None


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"irmodels: warning: {message}\n"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    try:
        (file or sys.stderr).write(_format_warning(message, category, filename, lineno, line))
    except OSError:  # stderr closed: nothing to tell
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
