"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


def run_rscript(code: str, *args: str, timeout: float = 1200) -> str | None:
    """The standard output of ``Rscript`` running ``code`` (an R script's text) with ``args``
    (``commandArgs(TRUE)``), or None when Rscript is not installed."""
    if shutil.which("Rscript") is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(code)
    try:
        return subprocess.run(["Rscript", fh.name, *args], capture_output=True, text=True,
                              check=True, timeout=timeout).stdout
    finally:
        os.unlink(fh.name)


def best_of(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """The fastest of ``repeat`` calls of ``fn`` in seconds, and the last call's result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return float(best), out


@contextmanager
def dask_client(n_workers: int = 2, *, trim: bool = False) -> Iterator[Any]:
    """A Dask client on a local cluster of ``n_workers`` processes, 1 thread each.

    ``trim=False`` (what docs/parallel.md recommends for irmodels' studies): the workers start
    without the ``MALLOC_TRIM_THRESHOLD_=65536`` that Dask's nanny sets by default, so glibc keeps
    its adaptive allocator. ``trim=True``: Dask's default environment. The nanny also leaves the
    variable in this process's environment, where later workers would inherit it: it is removed
    before and after.
    """
    import dask
    from distributed import Client, LocalCluster

    os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    key = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
    with dask.config.set({} if trim else {key: None}), \
            LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                         host="127.0.0.1", dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        try:
            yield client
        finally:
            os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
