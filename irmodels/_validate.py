"""Validation of function arguments: one set of helpers, one wording.

Every public function checks its counts, seeds, probabilities and choices through these helpers,
so the same mistake gets the same wording wherever it is made, and by default the same error
(:class:`~irmodels.errors.ArgumentError`, a ``ValueError``). ``error=`` gives a module whose
documented error for a bad setting is another class (``DesignError``, ``DataFormatError``) the
same check with its own class.

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

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from irmodels.errors import ArgumentError

__all__ = [
    "check_choice",
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
#: The class a check raises (a subclass of IRModelsError taking the message).
Error = type[Exception]


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None,
              error: Error = ArgumentError) -> int:
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
    if not _is_int(value) or (low is not None and value < low) or (
            high is not None and value > high):
        raise error(f"{name} must be a whole number{bounds}; got {value!r}.")
    return int(value)


def check_int_list(values: Any, name: str, *, low: int | None = None, unique: bool = True,
                   hint: str = "", error: Error = ArgumentError) -> tuple[int, ...]:
    """A non-empty tuple of whole numbers ``>= low`` (a single number is a list of one).

    >>> check_int_list([2, 5], "n_shards", low=2)
    (2, 5)
    >>> check_int_list(4, "sizes", low=1)
    (4,)
    """
    if _is_int(values):
        values = (values,)
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise error(f"{name} must be a list of whole numbers; got {values!r}.")
    out = tuple(values)
    bound = f" >= {low}" if low is not None else ""
    if not out or any(not _is_int(v) or (low is not None and v < low) for v in out):
        raise error(
            f"{name} must be a non-empty list of whole numbers{bound}; got {list(out)}."
            + (f" {hint}" if hint else ""))
    if unique and len(set(out)) != len(out):
        raise error(f"{name} repeats values: {list(out)}; list each once.")
    return tuple(int(v) for v in out)


def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False,
                 error: Error = ArgumentError) -> float:
    """A finite real number in the given interval (open or closed at each end).

    >>> check_number(0.5, "p", low=0, high=1, low_open=True, high_open=True)
    0.5
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)):
        raise error(f"{name} must be a finite number; got {value!r}.")
    v = float(value)
    too_low = low is not None and (v <= low if low_open else v < low)
    too_high = high is not None and (v >= high if high_open else v > high)
    if too_low or too_high:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
        hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
        interval = f"in {lo}, {hi}" if low is not None and high is not None else (
            f"{'>' if low_open else '>='} {low:g}" if low is not None
            else f"{'<' if high_open else '<='} {high:g}")
        raise error(f"{name} must be {interval}; got {value!r}.")
    return v


def check_probability(value: Any, name: str = "alpha", *, closed: bool = False,
                      error: Error = ArgumentError) -> float:
    """A probability strictly between 0 and 1 (``closed=True`` allows 0 and 1).

    >>> check_probability(1.5, "target")
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: target must be in (0, 1); got 1.5.
    """
    return check_number(value, name, low=0.0, high=1.0, low_open=not closed,
                        high_open=not closed, error=error)


def check_seed(seed: Any, name: str = "seed", *, error: Error = ArgumentError
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
    if not _is_int(seed) or seed < 0:
        raise error(f"{name} must be None or a whole number >= 0; got {seed!r}.")
    return int(seed)


def check_rng(seed: Any, name: str = "seed", *, error: Error = ArgumentError
              ) -> np.random.Generator:
    """The random generator of a checked seed (a ``Generator`` is used as given).

    >>> int(check_rng(0).integers(10)) == int(np.random.default_rng(0).integers(10))
    True
    """
    checked = check_seed(seed, name, error=error)
    return checked if isinstance(checked, np.random.Generator) else np.random.default_rng(checked)


def check_choice(value: T, name: str, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices`` (compared by equality and type, so ``True`` is not
    ``1``), else an error listing them.

    >>> check_choice("bogus", "undefined", ("zero", "drop", "missing"))
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: undefined must be one of 'zero', 'drop', 'missing'; got 'bogus'.
    """
    for c in choices:
        if type(value) is type(c) and value == c:
            return value
    listed = ", ".join(repr(c) for c in choices)
    raise ArgumentError(f"{name} must be one of {listed}; got {value!r}.")


def seed_sequence(seed: Any, name: str = "seed", *, spawn_key: tuple[int, ...] = (),
                  error: Error = ArgumentError) -> np.random.SeedSequence:
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
    checked = check_seed(seed, name, error=error)
    if isinstance(checked, np.random.SeedSequence):
        return np.random.SeedSequence(checked.entropy,
                                      spawn_key=tuple(checked.spawn_key) + tuple(spawn_key))
    if isinstance(checked, np.random.Generator):
        entropy = [int(v) for v in checked.integers(0, 2**32, size=4, dtype=np.uint64)]
        return np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key))
    return np.random.SeedSequence(checked, spawn_key=tuple(spawn_key))


def _memory_bytes() -> int:
    """Physical memory of this machine in bytes (16 GiB when it cannot be read)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def _size(n: float) -> str:
    for unit, step in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= step:
            return f"{n / step:.3g} {unit}"
    return f"{n:.3g} bytes"


def check_fits(value: int, name: str, bytes_per_unit: float, *, what: str,
               error: Error = ArgumentError) -> int:
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
        raise error(
            f"{name}={value} needs {_size(need)} for {what}, more than this machine's "
            f"{_size(have)} of memory; at most {name}={most:,} would fit. Use a smaller "
            f"{name}.")
    return value
