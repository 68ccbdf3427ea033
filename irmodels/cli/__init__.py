"""The ``irmodels`` command.

Each subcommand lives in its own module ``irmodels.cli.<name>`` with two functions:
``register(subparsers)`` adds its parser (and sets ``func`` to its handler with
``parser.set_defaults(func=run)``) and ``run(args) -> int``. Handlers call the public API and
render; errors derived from :class:`irmodels.IRModelsError` are printed without a traceback and
the command exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence

from irmodels.errors import IRModelsError, IRModelsWarning

# subcommand -> module; a module that does not exist yet is simply not offered
COMMANDS: dict[str, str] = {
    "evaluate": "irmodels.cli.evaluate",
    "demo": "irmodels.cli.demo",
    "report": "irmodels.cli.report",
    "anova": "irmodels.cli.anova_cmd",
    "mixed": "irmodels.cli.mixed_cmd",
    "shards": "irmodels.cli.shards",
    "simulate": "irmodels.cli.simulate",
    "gstudy": "irmodels.cli.gstudy",
    "power": "irmodels.cli.power",
    "standardize": "irmodels.cli.standardize",
    "pairwise": "irmodels.cli.pairwise",
    "datasets": "irmodels.cli.datasets_cmd",
    "topics": "irmodels.cli.topics",
}


def build_parser() -> argparse.ArgumentParser:
    from irmodels import __version__

    parser = argparse.ArgumentParser(
        prog="irmodels",
        description=(
            "Statistics of IR evaluation: per-topic scores, ANOVA and mixed models, Tukey HSD, "
            "variance components and reports."
        ),
        epilog="Run 'irmodels COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"irmodels {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``irmodels`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("default", IRModelsWarning)
        warnings.formatwarning = _format_warning  # type: ignore[assignment]
        try:
            return int(args.func(args) or 0)
        except IRModelsError as exc:
            print(f"irmodels: error: {exc}", file=sys.stderr)
            return 2
        except FileNotFoundError as exc:
            print(f"irmodels: error: no such file: {exc.filename}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # output piped into `head` and closed early: not an error
            import os

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0
        except KeyboardInterrupt:  # pragma: no cover
            print("irmodels: interrupted", file=sys.stderr)
            return 130


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"irmodels: warning: {message}\n"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
