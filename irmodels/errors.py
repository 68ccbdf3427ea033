"""Exceptions and warnings raised by irmodels.

Every error a user can trigger with bad input is an :class:`IRModelsError`; every warning is an
:class:`IRModelsWarning`. Messages say what is wrong, what was observed, and the way out.
"""

from __future__ import annotations

import errno
import importlib
import os
from types import ModuleType

__all__ = [
    "IRModelsError",
    "DataFormatError",
    "MissingFileError",
    "DesignError",
    "FormulaError",
    "ModelError",
    "ConvergenceError",
    "DatasetError",
    "MissingDependencyError",
    "UsageError",
    "ResourceError",
    "OutputError",
    "OutputExistsError",
    "DatasetDownloadError",
    "IRModelsWarning",
    "UnbalancedDesignWarning",
    "BoundaryFitWarning",
    "NegativeVarianceWarning",
    "UndefinedValueWarning",
    "DataQualityWarning",
    "ConvergenceWarning",
    "require",
]


class IRModelsError(Exception):
    """Base class of every error irmodels raises on purpose."""


class DataFormatError(IRModelsError, ValueError):
    """Input data is malformed: a file line, a missing column, a NaN, a duplicate row.

    Readers fill ``path`` and ``line`` (1-based) when the problem is in a file; ``reason`` is
    the message without them.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}" + (f", line {line}" if line is not None else "") + ": "
        super().__init__(where + message)


class MissingFileError(IRModelsError, FileNotFoundError):
    """An input file or directory does not exist.

    An irmodels error and a :class:`FileNotFoundError`, so ``except FileNotFoundError`` keeps
    working: ``errno``, ``strerror`` and ``filename`` are set as for the built-in error. Like
    :class:`DataFormatError` it has ``path`` and ``reason`` (the message without the path).
    ``suggestion`` names files of the same directory with a similar name ("did you mean
    'scores.csv'?"), or is empty.
    """

    def __init__(self, message: str = "no such file or directory", *, path: str | None = None,
                 suggestion: str = ""):
        self.path = None if path is None else str(path)
        self.line = None
        self.reason = message
        self.suggestion = suggestion
        where = f"{self.path}: " if self.path is not None else ""
        super().__init__(where + message + (f"; {suggestion}" if suggestion else ""))
        self.errno = errno.ENOENT
        self.strerror = os.strerror(errno.ENOENT)
        self.filename = self.path

    def __str__(self) -> str:  # the message, not OSError's "[Errno 2] ..."
        return str(self.args[0]) if self.args else ""

    def __reduce__(self):  # rebuilt from its fields (through Dask and multiprocessing too)
        return (_missing_file, (self.reason, self.path, self.suggestion))


def _missing_file(reason: str, path: str | None, suggestion: str) -> MissingFileError:
    return MissingFileError(reason, path=path, suggestion=suggestion)


class DesignError(IRModelsError, ValueError):
    """The design cannot support the requested analysis (unbalanced, aliased, no residual df...)."""


class FormulaError(IRModelsError, ValueError):
    """A model formula could not be parsed or refers to unknown columns.

    ``span`` is the (start, end) character range of the offending text in ``formula``.
    """

    def __init__(self, message: str, formula: str | None = None, span: tuple[int, int] | None = None):
        self.formula = formula
        self.span = span
        self.reason = message
        text = message
        if formula is not None and span is not None:
            start, end = span
            text += "\n  " + formula + "\n  " + " " * start + "^" * max(1, end - start)
        super().__init__(text)


class ModelError(IRModelsError, RuntimeError):
    """A model could not be fitted."""


class ConvergenceError(ModelError):
    """An iterative fit did not converge."""


class DatasetError(IRModelsError, RuntimeError):
    """A dataset could not be found, downloaded or verified."""


class MissingDependencyError(IRModelsError, ImportError):
    """An optional dependency is needed; the message says how to install it."""


class ArgumentError(IRModelsError, ValueError):
    """A function argument has an invalid value: a negative count or seed, a probability outside
    (0, 1), an unknown option (the helpers in ``irmodels._validate`` raise it)."""


class UsageError(ArgumentError):
    """A command-line option or a combination of options is invalid (exit status 2)."""


class ResourceError(IRModelsError, RuntimeError):
    """Something outside the data failed: a Dask scheduler does not answer, an output cannot be
    written (exit status 3)."""


class OutputError(ResourceError):
    """An output could not be written (a directory in the way, a read-only folder, a full disk).

    Nothing was changed at the target: irmodels writes beside it and renames into place.
    """


class OutputExistsError(OutputError):
    """The output target exists; irmodels does not overwrite it without ``force=True``
    (``--force`` on the command line)."""


class DatasetDownloadError(DatasetError, ResourceError):
    """A dataset could not be downloaded (offline, server unreachable): the environment, not
    the data (exit status 3)."""


class IRModelsWarning(UserWarning):
    """Base class of every warning irmodels issues."""


class UnbalancedDesignWarning(IRModelsWarning):
    """The design is unbalanced; a slower or approximate path is used."""


class BoundaryFitWarning(IRModelsWarning):
    """A variance component was estimated on the boundary (zero)."""


class NegativeVarianceWarning(IRModelsWarning):
    """A moment estimate of a variance component was negative and was set to zero."""


class UndefinedValueWarning(IRModelsWarning):
    """Some measure values are undefined (e.g. no relevant document) and were handled by a policy."""


class DataQualityWarning(IRModelsWarning):
    """The data are usable but something looks off (zero-variance topics, ties, ...)."""


class ConvergenceWarning(IRModelsWarning):
    """An iterative fit stopped with a weak convergence criterion."""


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency or raise :class:`MissingDependencyError` saying how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise MissingDependencyError(
            f"this feature needs the optional package '{module}'. "
            f"Install it with: pip install 'irmodels[{extra}]'"
        ) from exc
