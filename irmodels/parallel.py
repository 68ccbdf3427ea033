"""One way to map independent work: serially, on local processes, or on a Dask cluster.

Studies that repeat independent fits (shard splits, document samples, topic subsets,
simulations) call :func:`map` with a function and a list of items; the caller picks where the
work runs with ``backend``. Results come back as a list in item order, and they are identical
on every backend as long as each item carries its own seed: derive them with
:func:`spawn_seeds` (``numpy.random.SeedSequence(seed).spawn(n)``), never from a generator
shared between items.

Backends
--------
``"serial"``
    A plain loop in this process (the default; easiest to debug).
``"processes"``
    A :class:`concurrent.futures.ProcessPoolExecutor`. ``fn`` and the items must be picklable
    (module-level functions, not lambdas or closures), whatever the platform. The workers are
    *forked* when that is safe: on Linux, in a process with a single thread (no Python threads,
    no BLAS thread pool: ``OPENBLAS_NUM_THREADS=1``); they then start in milliseconds and
    inherit ``fn`` and its data instead of receiving them. Otherwise they are *spawned* (as on
    macOS and Windows): ``fn`` is pickled once and sent once to each worker (through the pool
    initializer), so a ``functools.partial`` that carries a large data set costs one transfer
    per worker, not one per item. ``IRMODELS_START_METHOD`` (``fork``, ``spawn`` or
    ``forkserver``) overrides the choice. Spawned workers run their BLAS / OpenMP thread pools
    with one thread (``OMP_NUM_THREADS=1`` etc., unless already set), as Dask's workers do.
a ``dask.distributed.Client`` or a scheduler address (``"tcp://host:8786"``)
    Items are mapped with ``client.map`` and gathered in order. ``fn`` is scattered to the
    workers once. Needs the optional extra ``pip install 'irmodels[dask]'``.

A progress bar (tqdm, on stderr) is shown when ``progress=True``, or when ``progress=None``
and stderr is a terminal; it is off otherwise (in CI, in files, in notebooks' captured stderr).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import pickle
import socket
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Self, TypeVar

import numpy as np

from irmodels._validate import check_seed
from irmodels.errors import ArgumentError, IRModelsError, ResourceError, require

__all__ = ["BACKENDS", "FORK_SAFE_THREADS", "START_METHODS", "ParallelError", "check_workers",
           "default_workers", "map", "prestarted", "spawn_seeds", "start_method"]

T = TypeVar("T")
R = TypeVar("R")

BACKENDS = ("serial", "processes")


class ParallelError(IRModelsError, ValueError):
    """The work cannot be sent to the chosen backend (unknown backend, unpicklable function)."""


def default_workers() -> int:
    """Number of cores this process may use (``os.sched_getaffinity`` where available).

    >>> default_workers() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


def spawn_seeds(seed: int | np.random.SeedSequence | None, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seeds of ``seed``, one per unit of work.

    Each child is a :class:`numpy.random.SeedSequence`; build a generator from it with
    ``np.random.default_rng(child)``. The children depend only on ``seed`` and their position,
    so a unit gets the same stream whatever backend or worker runs it.

    Parameters
    ----------
    seed : int or SeedSequence
        The study's seed. ``None`` draws fresh entropy (results are then not reproducible).
    n : int
        Number of children (>= 0).

    Returns
    -------
    list of SeedSequence

    Examples
    --------
    >>> import numpy as np
    >>> from irmodels.parallel import spawn_seeds
    >>> a = [int(np.random.default_rng(s).integers(1000)) for s in spawn_seeds(42, 3)]
    >>> b = [int(np.random.default_rng(s).integers(1000)) for s in spawn_seeds(42, 3)]
    >>> a == b, len(set(a))
    (True, 3)
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ParallelError(
            f"the number of seeds must be a non-negative integer; got {n!r}. "
            "Pass the number of units of work."
        )
    if isinstance(seed, np.random.Generator):
        raise ArgumentError("seed must be None, a whole number >= 0 or a SeedSequence; got a "
                            "Generator, whose draws depend on the order of the units. Pass e.g. "
                            "seed=0.")
    checked = check_seed(seed)
    if isinstance(checked, np.random.Generator):  # refused above; narrowed for the type checker
        raise ArgumentError("seed must not be a Generator here.")
    root = checked if isinstance(checked, np.random.SeedSequence) else np.random.SeedSequence(checked)
    return root.spawn(int(n))


def _show_progress(progress: bool | None) -> bool:
    if progress is None:
        try:
            return bool(sys.stderr is not None and sys.stderr.isatty())
        except (AttributeError, ValueError):  # closed or replaced stream
            return False
    return bool(progress)


class _NoBar:
    """Stands in for a disabled tqdm bar: a tqdm object, even disabled, starts tqdm's monitor
    thread, after which forking workers is no longer safe (see :func:`start_method`)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


def _bar(total: int, progress: bool | None, desc: str | None):
    if not _show_progress(progress):
        return _NoBar()
    # here, not at import: start-up time (every study and the models' bootstraps import this
    # module; tqdm is loaded only when a progress bar is shown)
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False)


START_METHODS = ("fork", "spawn", "forkserver")


#: Native threads that survive a fork safely: jemalloc's background thread (pyarrow's allocator,
#: started when pandas loads pyarrow) is stopped and restarted by jemalloc's own at-fork handlers.
FORK_SAFE_THREADS = frozenset({"jemalloc_bg_thd"})


def _other_threads() -> list[str] | None:
    """Names of this process's other kernel threads (``None`` where they cannot be read)."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:  # pragma: no cover - not Linux
        return None
    me = str(threading.get_native_id())
    names = []
    for tid in tids:
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as fh:
                names.append(fh.read().strip())
        except OSError:  # it ended meanwhile: count it anyway
            names.append("?")
    return names


def start_method() -> str:
    """How ``backend="processes"`` starts its workers here and now: ``"fork"`` or ``"spawn"``.

    ``"fork"`` on Linux when this process runs a single thread (apart from the native threads
    in :data:`FORK_SAFE_THREADS`): forking is then safe, workers start in milliseconds and
    inherit the function and its data. ``"spawn"`` otherwise (other platforms; a notebook
    kernel, a Dask client or a BLAS thread pool running threads: set
    ``OPENBLAS_NUM_THREADS=1`` before starting Python for the fast start). The
    environment variable ``IRMODELS_START_METHOD`` (``fork``, ``spawn`` or ``forkserver``)
    overrides the choice. Results do not depend on it.

    >>> start_method() in ("fork", "spawn", "forkserver")
    True
    """
    forced = os.environ.get("IRMODELS_START_METHOD", "").strip().lower()
    if forced:
        if forced not in START_METHODS:
            raise ParallelError(
                f"IRMODELS_START_METHOD={forced!r} is not a start method; use "
                f"{', '.join(START_METHODS)}, or unset it to let irmodels choose.")
        return forced
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        # a Python thread that was just joined (a pool's manager thread) can linger in the
        # kernel's list for a moment: look again for up to 50 ms before deciding
        for attempt in range(11):
            others = _other_threads()
            if others is None:
                break
            if all(name in FORK_SAFE_THREADS for name in others):
                return "fork"
            if attempt < 10:
                time.sleep(0.005)
    return "spawn"


class _Discard:
    """A file that forgets what is written to it."""

    def write(self, data: bytes) -> int:
        return len(data)


def _check_picklable(obj: object, what: str, *, keep: bool = True) -> bytes:
    """``obj`` pickled, or :class:`ParallelError` saying why it cannot be.

    ``keep=False`` only checks (returns ``b""``): the pickle goes nowhere and array buffers are
    left out of band, so a function carrying a large data set is checked in microseconds
    (forked workers inherit it; nothing is sent).
    """
    try:
        if keep:
            return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.Pickler(_Discard(), protocol=5, buffer_callback=lambda buf: None).dump(obj)
        return b""
    except Exception as exc:
        name = getattr(obj, "__qualname__", type(obj).__name__)
        raise ParallelError(
            f"{what} {name!r} cannot be sent to worker processes: it is not picklable "
            f"({type(exc).__name__}: {exc}). Define it at module level (not a lambda, closure "
            "or method of a local class) and bind arguments with functools.partial, or use "
            "backend='serial'."
        ) from exc


def _check_item(item: object, index: int) -> None:
    """:class:`ParallelError` naming item ``index`` of the work and why it cannot be pickled."""
    try:
        pickle.Pickler(_Discard(), protocol=5, buffer_callback=lambda buf: None).dump(item)
    except Exception as exc:
        shown = repr(item)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ParallelError(
            f"item {index} of the work ({type(item).__name__} {shown}) cannot be sent to "
            f"worker processes: it is not picklable ({type(exc).__name__}: {exc}). Items must "
            "be data that pickle (numbers, strings, arrays, frames, module-level functions "
            "and classes): replace that item by the data it stands for, or use "
            "backend='serial'."
        ) from exc


def check_workers(n_workers: Any) -> int | None:
    """``n_workers`` when it is None or a positive integer; else :class:`ParallelError`.

    Studies call it before their serial preparation, so that a bad count fails at once.

    >>> check_workers(2), check_workers(None)
    (2, None)
    """
    if n_workers is not None and (
        isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1
    ):
        raise ParallelError(f"n_workers must be a positive integer; got {n_workers!r}.")
    return None if n_workers is None else int(n_workers)


def map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    backend: Any = "serial",
    n_workers: int | None = None,
    progress: bool | None = None,
    chunksize: int | None = None,
    desc: str | None = None,
) -> list[R]:
    """Apply ``fn`` to every item on the chosen backend; return the results in item order.

    Parameters
    ----------
    fn : callable
        A function of one argument. For ``"processes"`` and Dask it must be picklable: a
        module-level function, or a ``functools.partial`` of one.
    items : iterable
        The units of work (materialised as a list). Give each its own seed (see
        :func:`spawn_seeds`) so that results do not depend on the backend.
    backend : {"serial", "processes"}, dask.distributed.Client or str
        Where the work runs; any other string is taken as a Dask scheduler address
        (``"tcp://127.0.0.1:8786"``), to which a client connects for this call only.
    n_workers : int, optional
        Worker processes for ``"processes"`` (default: the cores available, at most one per
        item). Ignored by the other backends (a Dask cluster has its own workers).
    progress : bool, optional
        Show a tqdm progress bar on stderr; ``None`` (default) shows it only when stderr is a
        terminal.
    chunksize : int, optional
        Items sent to a worker at a time by ``"processes"`` (default 1: best balance when
        units are slow and uneven; raise it for many tiny units).
    desc : str, optional
        Label of the progress bar.

    Returns
    -------
    list
        ``[fn(item) for item in items]``, whatever the backend. An exception raised by ``fn``
        is re-raised here.

    Raises
    ------
    ParallelError
        Unknown backend, or a function / item that cannot be pickled for ``"processes"`` (an
        item is named by its position and the reason).
    ResourceError
        A Dask scheduler address that does not answer within :data:`CONNECT_TIMEOUT` seconds
        (:func:`check_scheduler`).
    MissingDependencyError
        A Dask backend without ``distributed`` installed.

    Examples
    --------
    >>> import irmodels as irm
    >>> irm.parallel.map(abs, [-2, 1, -3])
    [2, 1, 3]
    >>> irm.parallel.map(abs, [-2, 1, -3], backend="processes", n_workers=2)
    [2, 1, 3]
    """
    work: list[T] = list(items)
    if chunksize is not None and (not isinstance(chunksize, (int, np.integer)) or chunksize < 1):
        raise ParallelError(f"chunksize must be a positive integer; got {chunksize!r}.")
    check_workers(n_workers)
    if isinstance(backend, str):
        if backend == "serial":
            return _map_serial(fn, work, progress, desc)
        if backend == "processes":
            return _map_processes(fn, work, n_workers, progress, chunksize or 1, desc)
        if _looks_like_address(backend):
            distributed = require("distributed", "dask")
            check_scheduler(backend)  # seconds, not distributed's 30 and its OSError
            try:
                client = distributed.Client(backend, set_as_default=False,
                                            timeout=f"{CONNECT_TIMEOUT:g}s")
            except OSError as exc:  # accepted the connection, did not answer as a scheduler
                raise ResourceError(
                    f"cannot connect to the Dask scheduler at {backend} ({exc}); check that "
                    "a Dask scheduler listens there, or use backend 'serial' or 'processes'"
                ) from None
            try:
                return _map_dask(client, fn, work, progress, desc)
            finally:
                client.close()
        raise ParallelError(
            f"unknown backend {backend!r}; use 'serial', 'processes', a dask.distributed.Client, "
            "or a Dask scheduler address such as 'tcp://127.0.0.1:8786'."
        )
    if _is_dask_client(backend):
        return _map_dask(backend, fn, work, progress, desc)
    raise ParallelError(
        f"unknown backend of type {type(backend).__name__}; use 'serial', 'processes', a "
        "dask.distributed.Client, or a Dask scheduler address string."
    )


#: Seconds to wait for a Dask scheduler to accept a connection (:func:`check_scheduler`) and
#: for the client's handshake, instead of distributed's 30.
CONNECT_TIMEOUT = 5.0


def check_scheduler(backend: Any, *, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast when ``backend`` is the address of a Dask scheduler that nobody answers.

    :func:`map` checks an address before it connects (and the command line before it reads
    anything), so an unreachable scheduler is a :class:`~irmodels.errors.ResourceError` after
    at most ``timeout`` seconds, not distributed's ``OSError`` after 30. Anything that is not
    an address (``"serial"``, a Client) passes.

    >>> check_scheduler("serial")
    >>> check_scheduler("tcp://127.0.0.1:1")
    Traceback (most recent call last):
    ...
    irmodels.errors.ResourceError: cannot reach the Dask scheduler at tcp://127.0.0.1:1 ...
    """
    if not isinstance(backend, str) or backend in BACKENDS:
        return
    address = backend.split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return  # not an address: map says what it accepts
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                      timeout=timeout):
            pass
    except OSError as exc:
        raise ResourceError(
            f"cannot reach the Dask scheduler at {backend} ({exc.strerror or exc}); start it "
            "(dask scheduler) or use backend 'serial' or 'processes' (--backend serial / "
            "processes on the command line)"
        ) from None


def _looks_like_address(text: str) -> bool:
    if "://" in text:
        return True
    host, sep, port = text.rpartition(":")
    return bool(sep and host and port.isdigit())


def _is_dask_client(obj: object) -> bool:
    mod = type(obj).__module__ or ""
    if not mod.startswith("distributed"):
        return False
    return hasattr(obj, "map") and hasattr(obj, "gather") and hasattr(obj, "scatter")


def _map_serial(fn: Callable[[T], R], work: Sequence[T], progress: bool | None,
                desc: str | None) -> list[R]:
    out: list[R] = []
    with _bar(len(work), progress, desc) as bar:
        for item in work:
            out.append(fn(item))
            bar.update(1)
    return out


# --- processes -----------------------------------------------------------------------------

_WORKER_FN: Callable[[Any], Any] | None = None


def _init_worker(payload: bytes) -> None:  # runs once in each worker process
    global _WORKER_FN
    _WORKER_FN = pickle.loads(payload)


def _run_chunk(chunk: list[Any]) -> list[Any]:
    fn = _WORKER_FN
    if fn is None:  # pragma: no cover - initializer always ran
        raise RuntimeError("worker was not initialised")
    return [fn(item) for item in chunk]


#: Thread-pool variables set to 1 in worker processes (unless the caller set them): every worker
#: is one unit of parallelism, and BLAS / OpenMP pools of 2+ spinning threads per worker
#: oversubscribe the cores (measured: +50% CPU time on the shard study with OpenBLAS).
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


@contextlib.contextmanager
def _single_threaded_children() -> Iterator[None]:
    """Spawned children inherit ``os.environ``: pin their thread pools to one thread."""
    added = [k for k in THREAD_ENV if k not in os.environ]
    for k in added:
        os.environ[k] = "1"
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


# --- workers started ahead of the work ---------------------------------------------------

_PRESTARTED: list[ProcessPoolExecutor] = []
_CACHED_FN: tuple[str, Callable[[Any], Any]] | None = None


#: What the fork server imports once, before it forks each worker (``IRMODELS_START_METHOD=
#: forkserver``): workers then start without importing numpy, pandas, scipy and irmodels again.
FORKSERVER_PRELOAD = ("numpy", "pandas", "scipy.special", "scipy.stats", "irmodels",
                      "irmodels.parallel")


def _context(method: str, fn: Any = None) -> Any:
    """The multiprocessing context of ``method``. The fork server preloads
    :data:`FORKSERVER_PRELOAD` and the module of ``fn`` (read when the server starts, at its
    first use in this process; later maps fork from the same server)."""
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        target = getattr(fn, "func", fn)  # a functools.partial: its function's module
        extra = getattr(target, "__module__", None)
        ctx.set_forkserver_preload(list(dict.fromkeys(
            [*FORKSERVER_PRELOAD, *([extra] if isinstance(extra, str) and extra != "__main__"
                                    else [])])))
    return ctx


def _import_modules(modules: tuple[str, ...]) -> None:  # initializer of prestarted workers
    for name in modules:
        importlib.import_module(name)


def _noop() -> None:
    return None


def _run_chunk_from(path: str, key: str, chunk: list[Any]) -> list[Any]:
    """Run a chunk with the function pickled in ``path`` (loaded once per worker and call)."""
    global _CACHED_FN
    if _CACHED_FN is None or _CACHED_FN[0] != key:
        with open(path, "rb") as fh:
            _CACHED_FN = (key, pickle.loads(fh.read()))
    fn = _CACHED_FN[1]
    return [fn(item) for item in chunk]


@contextlib.contextmanager
def prestarted(backend: Any, n_workers: int | None = None,
               modules: Sequence[str] = ()) -> Iterator[None]:
    """Start the spawned workers of ``backend="processes"`` now, importing ``modules`` in each.

    A study that prepares its data serially before mapping its units (encoding the runs, a
    reference fit) wraps that preparation in ``with prestarted(backend, n_workers):`` so that
    spawning the workers and importing irmodels in them (seconds) overlaps the preparation
    instead of following it. The next :func:`map` with ``backend="processes"`` inside the block
    uses these workers (its function is then sent through a temporary file, read once per
    worker); they are shut down when it returns, or when the block ends. Other backends, and
    workers that :func:`start_method` forks (they start at once): no-op.

    >>> with prestarted("serial"):
    ...     map(abs, [-1, 2])
    [1, 2]
    """
    check_workers(n_workers)
    method = "fork" if backend != "processes" else start_method()
    if method == "fork":  # forked workers start at once
        yield
        return
    workers = n_workers or default_workers()
    with _single_threaded_children():
        pool = ProcessPoolExecutor(max_workers=workers,
                                   mp_context=_context(method),
                                   initializer=_import_modules, initargs=(tuple(modules),))
        for _ in range(workers):  # each submit starts one worker while none is idle
            pool.submit(_noop)
    _PRESTARTED.append(pool)
    try:
        yield
    finally:
        if pool in _PRESTARTED:
            _PRESTARTED.remove(pool)
            pool.shutdown(wait=True, cancel_futures=True)


def _map_processes(fn: Callable[[T], R], work: Sequence[T], n_workers: int | None,
                   progress: bool | None, chunksize: int, desc: str | None) -> list[R]:
    # prestarted workers were spawned; otherwise fork when that is safe
    method = "spawn" if _PRESTARTED else start_method()
    # forked workers inherit fn (and the data it carries): nothing to send, but what cannot
    # be pickled still fails here, as it would on every other platform
    payload = _check_picklable(fn, "function", keep=method != "fork")
    if not work:
        return []
    chunks = [list(work[i:i + chunksize]) for i in range(0, len(work), chunksize)]
    for k, chunk in enumerate(chunks):
        try:
            pickle.Pickler(_Discard(), protocol=5, buffer_callback=lambda buf: None).dump(chunk)
        except Exception:  # name the item, not the chunk that holds it
            for i, item in enumerate(chunk):
                _check_item(item, k * chunksize + i)
            raise
    if _PRESTARTED:
        return _map_prestarted(_PRESTARTED.pop(), payload, chunks, len(work), progress, desc)
    workers = min(n_workers or default_workers(), len(chunks))
    results: list[list[R] | None] = [None] * len(chunks)
    global _WORKER_FN
    init: dict[str, Any] = {}
    if method == "fork":  # the workers are forked at the first submit
        _WORKER_FN = fn
    else:
        init = {"initializer": _init_worker, "initargs": (payload,)}
    try:
        with _explain_broken_pool(), ProcessPoolExecutor(
                max_workers=workers, mp_context=_context(method, fn), **init) as pool:
            with _single_threaded_children(), warnings.catch_warnings():
                # workers start on the first submits. Python 3.12+ warns when it forks a process
                # running other kernel threads; start_method() chose fork only if those are in
                # FORK_SAFE_THREADS
                warnings.filterwarnings("ignore", r".*is multi-threaded, use of fork\(\)",
                                        DeprecationWarning)
                pending = {pool.submit(_run_chunk, chunk): i for i, chunk in enumerate(chunks)}
            with _bar(len(work), progress, desc) as bar:  # after the fork: tqdm starts a thread
                _drain(pending, chunks, results, bar)
    finally:
        if method == "fork":
            _WORKER_FN = None
    return [r for chunk in results for r in chunk]  # type: ignore[union-attr]


@contextlib.contextmanager
def _explain_broken_pool() -> Iterator[None]:
    """A worker that dies (not an exception of ``fn``: those come back as they are) breaks the
    pool; say what usually causes it instead of showing concurrent.futures' message."""
    try:
        yield
    except BrokenProcessPool as exc:
        raise ParallelError(
            "a worker process ended abruptly before finishing its work. Usual causes: spawned "
            "workers could not import the function (code typed at an interactive prompt or read "
            "from standard input: put it in a module, or in a script under "
            "`if __name__ == \"__main__\":`), or the operating system stopped the worker "
            "(out of memory). Run with backend='serial' to see the error in this process."
        ) from exc


def _drain(pending: dict[Any, int], chunks: list[list[Any]], results: list[Any], bar: Any) -> None:
    """Collect the chunks' results as they complete; cancel the rest on an error."""
    try:
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                results[i] = fut.result()
                bar.update(len(chunks[i]))
    except BaseException:
        for fut in pending:
            fut.cancel()
        raise


def _map_prestarted(pool: ProcessPoolExecutor, payload: bytes, chunks: list[list[Any]],
                    n_items: int, progress: bool | None, desc: str | None) -> list[Any]:
    results: list[list[Any] | None] = [None] * len(chunks)
    fd, path = tempfile.mkstemp(prefix="irmodels-fn-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        key = uuid.uuid4().hex
        with _explain_broken_pool(), _bar(n_items, progress, desc) as bar, pool:
            pending = {pool.submit(_run_chunk_from, path, key, chunk): i
                       for i, chunk in enumerate(chunks)}
            _drain(pending, chunks, results, bar)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return [r for chunk in results for r in chunk]  # type: ignore[union-attr]


# --- dask ----------------------------------------------------------------------------------

def _call(fn: Callable[[T], R], item: T) -> R:
    return fn(item)


def _map_dask(client: Any, fn: Callable[[T], R], work: Sequence[T], progress: bool | None,
              desc: str | None) -> list[R]:
    distributed = require("distributed", "dask")
    if not work:
        return []
    _check_picklable(fn, "function")
    # send fn once to every worker, then pass the future: tasks stay small
    [fn_future] = client.scatter([fn], broadcast=True, hash=False)
    futures = client.map(_call, [fn_future] * len(work), work, pure=False)
    try:
        with _bar(len(work), progress, desc) as bar:
            for fut in distributed.as_completed(futures, loop=client.loop):
                if fut.status == "error":
                    fut.result()  # re-raises the worker's exception
                bar.update(1)
        return list(client.gather(futures))
    finally:
        for fut in futures:
            fut.release()
        fn_future.release()
