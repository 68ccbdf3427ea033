"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def best_of(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """The fastest of ``repeat`` calls of ``fn`` in seconds, and the last call's result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return float(best), out
