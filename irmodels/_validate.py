"""Validation of function arguments: one set of helpers, one wording.

Every public function checks its counts, seeds, probabilities and choices through these helpers,
so the same mistake gets the same wording wherever it is made, and by default the same error
(:class:`~irmodels.errors.ArgumentError`, a ``ValueError``): a bad argument value is an
``ArgumentError`` wherever it is passed (``DesignError`` is kept for what the data cannot support,
``DataFormatError`` for malformed data). An unknown choice gets a "did you mean"
(:func:`did_you_mean`), and a renamed parameter keeps its old name for one release with a
``FutureWarning`` (:func:`renamed`).

>>> check_int(5, "n_boot", low=1)
5
>>> check_int(0, "n_boot", low=1)
Traceback (most recent call last):
...
irmodels.errors.ArgumentError: n_boot must be a whole number >= 1; got 0.
>>> check_probability(0.05, "alpha")
0.05
>>> check_choice("holm", "adjust", ("holm", "bonferroni"))
'holm'
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar, overload

import numpy as np

from irmodels.errors import ArgumentError

__all__ = [
    "is_int",
    "check_choice",
    "did_you_mean",
    "renamed",
    "check_int",
    "check_int_list",
    "check_number",
    "check_probability",
    "check_rng",
    "check_fits",
    "check_seed",
    "seed_sequence",
]

T = TypeVar("T")


def is_int(value: object) -> bool:
    """A whole number (a Python or NumPy integer), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` if it is a whole number in ``[low, high]``; booleans are refused.

    >>> check_int(np.int64(3), "k", low=2, high=3)
    3
    >>> check_int(True, "k")
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: k must be a whole number; got True.
    """
    bounds = ""
    if low is not None and high is not None:
        bounds = f" between {low} and {high}"
    elif low is not None:
        bounds = f" >= {low}"
    elif high is not None:
        bounds = f" <= {high}"
    if not is_int(value) or (low is not None and value < low) or (
            high is not None and value > high):
        raise ArgumentError(f"{name} must be a whole number{bounds}; got {value!r}.")
    return int(value)


def check_int_list(values: Any, name: str, *, low: int | None = None, unique: bool = True,
                   hint: str = "") -> tuple[int, ...]:
    """A non-empty tuple of whole numbers ``>= low`` (a single number is a list of one).

    >>> check_int_list([2, 5], "n_shards", low=2)
    (2, 5)
    >>> check_int_list(4, "sizes", low=1)
    (4,)
    """
    if is_int(values):
        values = (values,)
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ArgumentError(f"{name} must be a list of whole numbers; got {values!r}.")
    out = tuple(values)
    bound = f" >= {low}" if low is not None else ""
    if not out or any(not is_int(v) or (low is not None and v < low) for v in out):
        raise ArgumentError(
            f"{name} must be a non-empty list of whole numbers{bound}; got {list(out)}."
            + (f" {hint}" if hint else ""))
    if unique and len(set(out)) != len(out):
        raise ArgumentError(f"{name} repeats values: {list(out)}; list each once.")
    return tuple(int(v) for v in out)


def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number in the given interval (open or closed at each end).

    >>> check_number(0.5, "p", low=0, high=1, low_open=True, high_open=True)
    0.5
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)):
        raise ArgumentError(f"{name} must be a finite number; got {value!r}.")
    v = float(value)
    too_low = low is not None and (v <= low if low_open else v < low)
    too_high = high is not None and (v >= high if high_open else v > high)
    if too_low or too_high:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
        hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
        interval = f"in {lo}, {hi}" if low is not None and high is not None else (
            f"{'>' if low_open else '>='} {low:g}" if low is not None
            else f"{'<' if high_open else '<='} {high:g}")
        raise ArgumentError(f"{name} must be {interval}; got {value!r}.")
    return v


def check_probability(value: Any, name: str = "alpha", *, closed: bool = False) -> float:
    """A probability strictly between 0 and 1 (``closed=True`` allows 0 and 1).

    >>> check_probability(1.5, "target")
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: target must be in (0, 1); got 1.5.
    """
    return check_number(value, name, low=0.0, high=1.0, low_open=not closed,
                        high_open=not closed)


@overload
def check_seed(seed: int, name: str = ...) -> int: ...
@overload
def check_seed(seed: None, name: str = ...) -> None: ...
@overload
def check_seed(seed: Any, name: str = ...
               ) -> int | np.random.SeedSequence | np.random.Generator | None: ...
def check_seed(seed: Any, name: str = "seed"
               ) -> int | np.random.SeedSequence | np.random.Generator | None:
    """A seed numpy accepts: ``None``, a whole number ``>= 0``, a ``SeedSequence`` or a ``Generator``.

    >>> check_seed(0)
    0
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: seed must be None or a whole number >= 0; got -1.
    """
    if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.Generator)):
        return seed
    if not is_int(seed) or seed < 0:
        raise ArgumentError(f"{name} must be None or a whole number >= 0; got {seed!r}.")
    return int(seed)


def check_rng(seed: Any, name: str = "seed") -> np.random.Generator:
    """The random generator of a checked seed (a ``Generator`` is used as given).

    >>> int(check_rng(0).integers(10)) == int(np.random.default_rng(0).integers(10))
    True
    """
    checked = check_seed(seed, name)
    return checked if isinstance(checked, np.random.Generator) else np.random.default_rng(checked)


def did_you_mean(value: object, choices: Iterable[object]) -> str:
    """`` (did you mean 'x'?)`` naming the choices closest to a misspelt ``value``, or ``""``.

    A choice equal but for case comes first (``"Holm"`` -> ``'holm'``); else the closest by
    :func:`difflib.get_close_matches`, compared as given and then case-insensitively. Only string
    choices are suggested.

    >>> did_you_mean("Holm", ("holm", "bonferroni"))
    " (did you mean 'holm'?)"
    >>> did_you_mean("tukeyy", ("t", "wilcoxon", "tukey"))
    " (did you mean 'tukey'?)"
    >>> did_you_mean("zzz", ("holm", "bonferroni"))
    ''
    """
    if not isinstance(value, str):
        return ""
    options = [c for c in choices if isinstance(c, str)]
    close = [c for c in options if c.lower() == value.lower()]
    if not close:
        close = difflib.get_close_matches(value, options, n=3, cutoff=0.6)
    if not close:
        lower = {c.lower(): c for c in options}
        close = [lower[c] for c in difflib.get_close_matches(value.lower(), list(lower), n=3,
                                                             cutoff=0.6)]
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def check_choice(value: T, name: str, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices`` (compared by equality and type, so ``True`` is not
    ``1``), else an error listing them, with a "did you mean" for a misspelt string.

    >>> check_choice("bogus", "undefined", ("zero", "drop", "missing"))
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: undefined must be one of 'zero', 'drop', 'missing'; got 'bogus'.
    >>> try:
    ...     check_choice("Drop", "undefined", ("zero", "drop"))
    ... except ArgumentError as exc:
    ...     print(exc)
    undefined must be one of 'zero', 'drop'; got 'Drop' (did you mean 'drop'?).
    """
    for c in choices:
        if type(value) is type(c) and value == c:
            return value
    listed = ", ".join(repr(c) for c in choices)
    raise ArgumentError(
        f"{name} must be one of {listed}; got {value!r}{did_you_mean(value, choices)}.")


def renamed(kwargs: dict[str, Any], old: str, new: str, value: Any, default: Any, *,
            where: str) -> Any:
    """The value of a renamed keyword parameter: ``new``'s, or for one release the old name's
    from ``**kwargs`` with a :class:`FutureWarning` naming the new one.

    ``value`` is what the caller received under ``new`` and ``default`` that parameter's default;
    ``kwargs`` the function's ``**kwargs`` (``old`` is popped from it; anything else left in it is
    an unexpected keyword, refused as Python would). Passing both names (the new one with another
    value than its default) is an error.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     renamed({"n_boot": 50}, "n_boot", "n_resamples", 1000, 1000, where="f")
    ...     print(w[0].category.__name__, str(w[0].message)[:52])
    50
    FutureWarning f(n_boot=...) is deprecated; use n_resamples=... (th
    >>> renamed({}, "n_boot", "n_resamples", 20, 1000, where="f")
    20
    """
    if old in kwargs:
        got = kwargs.pop(old)
        if value is not default and value != default:
            raise ArgumentError(
                f"{where}() got both {old}= and {new}=; {old} is the old name of {new}: pass "
                f"{new}= only.")
        warnings.warn(
            f"{where}({old}=...) is deprecated; use {new}=... (the old name stops working in "
            "the next release).", FutureWarning, stacklevel=3)
        value = got
    if kwargs:
        raise TypeError(
            f"{where}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    return value


def seed_sequence(seed: Any, name: str = "seed", *, spawn_key: tuple[int, ...] = ()
                  ) -> np.random.SeedSequence:
    """The root ``SeedSequence`` of a checked seed, with ``spawn_key`` appended.

    A whole number or ``None`` gives ``SeedSequence(seed, spawn_key=spawn_key)``; a
    ``SeedSequence`` keeps its entropy and extends its spawn key; a ``Generator`` gives the
    sequence of 128 bits drawn from it (so it advances, as when numpy code draws from it).
    Studies that spawn one child seed per batch call this, so every seed
    :func:`check_seed` accepts works there too.

    >>> seed_sequence(3, spawn_key=(5,)).spawn_key
    (5,)
    >>> s = seed_sequence(np.random.SeedSequence(3, spawn_key=(1,)), spawn_key=(5,))
    >>> s.entropy, s.spawn_key
    (3, (1, 5))
    >>> a = seed_sequence(np.random.default_rng(0)).generate_state(2)
    >>> bool((a == seed_sequence(np.random.default_rng(0)).generate_state(2)).all())
    True
    """
    checked = check_seed(seed, name)
    if isinstance(checked, np.random.SeedSequence):
        return np.random.SeedSequence(checked.entropy,
                                      spawn_key=tuple(checked.spawn_key) + tuple(spawn_key))
    if isinstance(checked, np.random.Generator):
        entropy = [int(v) for v in checked.integers(0, 2**32, size=4, dtype=np.uint64)]
        return np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key))
    return np.random.SeedSequence(checked, spawn_key=tuple(spawn_key))


def _memory_bytes() -> int:
    """Physical memory of this machine in bytes (16 GiB when it cannot be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def _size(n: float) -> str:
    for unit, step in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= step:
            return f"{n / step:.3g} {unit}"
    return f"{n:.3g} bytes"


def check_fits(value: int, name: str, bytes_per_unit: float, *, what: str) -> int:
    """Refuse a count whose arrays (``bytes_per_unit`` per unit of ``value``) exceed this
    machine's memory, naming the largest count that fits; returns ``value``.

    >>> check_fits(1000, "n_boot", 8 * 40, what="the replicates")
    1000
    >>> try:
    ...     check_fits(10**12, "n_boot", 8 * 40, what="the replicates")
    ... except ArgumentError as exc:
    ...     print(str(exc)[:52])
    n_boot=1000000000000 needs 320 TB for the replicates
    """
    need = float(value) * float(bytes_per_unit)
    have = _memory_bytes()
    if need > have:
        most = int(have // max(float(bytes_per_unit), 1.0))
        raise ArgumentError(
            f"{name}={value} needs {_size(need)} for {what}, more than this machine's "
            f"{_size(have)} of memory; at most {name}={most:,} would fit. Use a smaller "
            f"{name}.")
    return value
