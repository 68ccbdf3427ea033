"""BLAS threads of irmodels' own kernels, chosen by problem size (docs/parallel.md, "Threads").

Small dense solves and factorisations (a mixed model's Schur complement, a least-squares QR)
stall under a multi-threaded BLAS: OpenBLAS's threads spin-wait between calls, and on a loaded
machine the waiting costs 2-10x the CPU of one thread (docs/benchmarks.md, "Threads"). irmodels
therefore sets the BLAS thread count around its own kernels, once per fit, through
`threadpoolctl <https://github.com/joblib/threadpoolctl>`_, and restores it afterwards: the
user's setting (``OPENBLAS_NUM_THREADS``, ``threadpool_limits``) holds everywhere else.

The choice (``irm.set_options(threads="auto")``, the default):

* a dense dimension below :data:`LARGE`: one thread (even a 45-row, 11-column mixed model's
  profile took twice the CPU on OpenBLAS's two threads, at load 3; setting the limit costs
  about 10 us a call, and 15 ms once per process to list the libraries);
* :data:`LARGE` and above: one thread per idle core (the cores available to the process less
  the 1-minute load average, at least one), never more than the BLAS has already.

``threads=N`` uses N threads in every kernel; ``threads=None`` leaves the BLAS alone. The
environment variable ``IRM_BLAS_THREADS`` (``auto``, a positive integer, or ``none``) sets the
default before the first fit.

>>> import irmodels as irm
>>> irm.get_options()["threads"]
'auto'
>>> previous = irm.set_options(threads=1)
>>> irm.get_options()["threads"], previous
(1, {'threads': 'auto'})
>>> _ = irm.set_options(**previous)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from irmodels.errors import ArgumentError

__all__ = ["LARGE", "get_options", "kernel_threads", "set_options"]

#: Below this dense dimension the kernels run on one thread: even 36 x 36 factorisations stall
#: under a multi-threaded BLAS (a 2-core machine under load: 5 s with three BLAS threads against
#: 0.06 s with one), and so do the n x r products of an 11-column model. From it on, the kernels
#: may use the idle cores.
LARGE = 3000
#: The environment variable read for the default of ``threads``.
ENV = "IRM_BLAS_THREADS"

Threads = int | Literal["auto"] | None

_lock = threading.Lock()
_depth = 0                 # nesting depth of kernel_threads (process-wide: BLAS limits are)
_limiter: Any = None       # threadpoolctl's limiter of the outermost active block
_controller: Any = None    # threadpoolctl.ThreadpoolController, built on first use (~15 ms)


def _check_threads(value: Any, where: str) -> Threads:
    if value is None or value == "auto":
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("auto", "none", ""):
            return "auto" if text == "auto" else None
        if text.isdigit():
            value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(
            f"{where} must be 'auto', a positive number of threads, or None (leave the BLAS "
            f"alone); got {value!r}. Use threads='auto' to let irmodels choose by problem size.")
    return value


def _from_env() -> Threads:
    raw = os.environ.get(ENV)
    if raw is None:
        return "auto"
    return _check_threads(raw, f"the environment variable {ENV}")


_options: dict[str, Any] = {"threads": _from_env()}


def get_options() -> dict[str, Any]:
    """The package's options, as a new dict (``{"threads": ...}``).

    Returns
    -------
    dict
        ``threads``: ``"auto"``, a positive integer, or None (see :func:`set_options`).
    """
    return dict(_options)


class _Unset:
    def __repr__(self) -> str:
        return "<unchanged>"


_UNSET = _Unset()


def set_options(*, threads: Threads | str | _Unset = _UNSET) -> dict[str, Any]:
    """Set the package's options; returns the previous values (``set_options(**previous)``
    restores them).

    Parameters
    ----------
    threads : "auto", int or None, optional
        BLAS threads of irmodels' own kernels (mixed-model deviance evaluations, least-squares
        factorisations), set once per fit and restored afterwards. ``"auto"`` (default): one
        thread for dense dimensions below 3,000, one per idle core from there; an integer: that many threads in every kernel; None: the BLAS is left
        as the user or ``OPENBLAS_NUM_THREADS`` set it. The environment variable
        ``IRM_BLAS_THREADS`` (``auto``, an integer, ``none``) sets the default. Omitted: unchanged.

    Returns
    -------
    dict
        The options before the call.

    Raises
    ------
    ArgumentError
        ``threads`` is not ``"auto"``, a positive integer, or None.

    Examples
    --------
    >>> import irmodels as irm
    >>> previous = irm.set_options(threads=None)
    >>> irm.set_options(**previous)
    {'threads': None}
    """
    previous = dict(_options)
    if not isinstance(threads, _Unset):
        _options["threads"] = _check_threads(threads, "threads")
    return previous


def _get_controller() -> Any:
    global _controller
    if _controller is None:
        # here, not at import: start-up time (`irmodels anova` imports this module and must
        # not load scipy.linalg); scipy's BLAS is loaded before threadpoolctl lists the libraries
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController  # start-up time, as above

        _controller = ThreadpoolController()
    return _controller


def _idle_cores() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        load = 0.0
    # this process is about to run: it takes one of the idle cores itself
    return max(1, min(cores, int(cores - load + 1.5)))


def choose(dim: int) -> int | None:
    """The BLAS threads for a kernel whose largest dense matrix is ``dim`` x ``dim`` under the
    current options; None for "leave the BLAS as it is"."""
    threads = _options["threads"]
    if threads is None:
        return None
    if threads != "auto":
        return int(threads)
    if dim < LARGE:
        return 1
    current = max((lib["num_threads"] for lib in _get_controller().info()
                   if lib["user_api"] == "blas"), default=1)
    return min(current, _idle_cores())


@contextmanager
def kernel_threads(dim: int) -> Iterator[None]:
    """Run the block with the BLAS threads :func:`choose` gives for ``dim``; nested blocks
    keep the outermost block's choice (and cost a counter update)."""
    global _depth, _limiter
    with _lock:
        outer = _depth == 0
        _depth += 1
        if outer:
            n = choose(dim)
            if n is not None:
                _limiter = _get_controller().limit(limits=n, user_api="blas")
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None
