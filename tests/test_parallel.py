"""irm.parallel.map: same results in item order on every backend; clear errors."""

from __future__ import annotations

import functools
import io

import numpy as np
import pytest

import irmodels as irm
from irmodels.errors import IRModelsError
from irmodels.parallel import ParallelError, _looks_like_address, _show_progress, spawn_seeds


def _draw(seed: np.random.SeedSequence, size: int = 5) -> float:
    """A seeded unit of work: the result depends only on the item's own seed."""
    return float(np.random.default_rng(seed).normal(size=size).sum())


def _square(x: int) -> int:
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise KeyError("three")
    return x


def test_spawn_seeds_are_reproducible_and_distinct() -> None:
    a = [_draw(s) for s in spawn_seeds(7, 6)]
    b = [_draw(s) for s in spawn_seeds(7, 6)]
    assert a == b
    assert len(set(a)) == 6
    # the same as numpy's own spawning
    ref = [_draw(s) for s in np.random.SeedSequence(7).spawn(6)]
    assert a == ref
    # a child does not depend on how many siblings were spawned
    assert [_draw(s) for s in spawn_seeds(7, 3)] == a[:3]


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_spawn_seeds_rejects_bad_counts(bad: object) -> None:
    with pytest.raises(ParallelError, match="non-negative integer"):
        spawn_seeds(0, bad)  # type: ignore[arg-type]


def test_spawn_seeds_rejects_bad_seed() -> None:
    # the same error, class and wording, as every other seed argument (irmodels._validate)
    with pytest.raises(irm.ArgumentError, match="seed must be None or a whole number >= 0"):
        spawn_seeds("zero", 2)  # type: ignore[arg-type]
    with pytest.raises(irm.ArgumentError, match="got -3"):
        spawn_seeds(-3, 2)
    with pytest.raises(irm.ArgumentError, match="Generator"):
        spawn_seeds(np.random.default_rng(0), 2)  # type: ignore[arg-type]


def test_serial_keeps_order() -> None:
    assert irm.parallel.map(_square, range(7)) == [0, 1, 4, 9, 16, 25, 36]
    assert irm.parallel.map(_square, []) == []


def test_all_backends_give_identical_results(dask_client) -> None:
    seeds = spawn_seeds(2019, 9)
    fn = functools.partial(_draw, size=11)
    serial = irm.parallel.map(fn, seeds, backend="serial")
    procs = irm.parallel.map(fn, seeds, backend="processes", n_workers=2)
    procs_chunked = irm.parallel.map(fn, seeds, backend="processes", n_workers=2, chunksize=4)
    dask = irm.parallel.map(fn, seeds, backend=dask_client)
    assert serial == procs == procs_chunked == dask
    # and equal to the direct computation, value by value
    direct = [float(np.random.default_rng(s).normal(size=11).sum()) for s in seeds]
    assert serial == direct


def test_dask_scheduler_address(dask_client) -> None:
    address = dask_client.scheduler.address
    assert address.startswith("tcp://127.0.0.1")
    assert irm.parallel.map(_square, [3, 1, 2], backend=address) == [9, 1, 4]


def test_dask_reraises_worker_exception(dask_client) -> None:
    with pytest.raises(KeyError, match="three"):
        irm.parallel.map(_fail_on_three, [1, 2, 3, 4], backend=dask_client)


def test_processes_reraise_worker_exception() -> None:
    with pytest.raises(KeyError, match="three"):
        irm.parallel.map(_fail_on_three, [1, 2, 3, 4], backend="processes", n_workers=2)


def test_unpicklable_function_gives_clear_error() -> None:
    with pytest.raises(ParallelError, match="not picklable") as info:
        irm.parallel.map(lambda x: x, [1, 2], backend="processes")
    msg = str(info.value)
    assert "<lambda>" in msg and "functools.partial" in msg and "backend='serial'" in msg
    assert isinstance(info.value, IRModelsError)

    def local(x: int) -> int:
        return x

    with pytest.raises(ParallelError, match="'test_unpicklable_function_gives_clear_error.<locals>.local'"):
        irm.parallel.map(local, [1], backend="processes")


def test_unpicklable_function_on_dask(dask_client) -> None:
    import threading

    lock = threading.Lock()
    with pytest.raises(ParallelError, match="not picklable"):
        irm.parallel.map(functools.partial(_locked, lock), [1], backend=dask_client)


def _locked(lock: object, x: int) -> int:  # pragma: no cover - never runs
    return x


def test_unpicklable_item_gives_clear_error() -> None:
    import threading

    with pytest.raises(ParallelError, match=r"item 0 of the work \(lock .*not picklable"):
        irm.parallel.map(_square, [threading.Lock()], backend="processes")


@pytest.mark.parametrize("backend", ["threads", "cluster", "", 3, None])
def test_unknown_backend(backend: object) -> None:
    with pytest.raises(ParallelError, match="unknown backend") as info:
        irm.parallel.map(_square, [1], backend=backend)
    assert "'serial', 'processes'" in str(info.value)


@pytest.mark.parametrize("kw", [{"n_workers": 0}, {"n_workers": 1.5}, {"chunksize": 0}])
def test_bad_sizes(kw: dict) -> None:
    with pytest.raises(ParallelError, match="positive integer"):
        irm.parallel.map(_square, [1], backend="processes", **kw)


def test_address_detection() -> None:
    assert _looks_like_address("tcp://10.0.0.1:8786")
    assert _looks_like_address("127.0.0.1:8786")
    assert not _looks_like_address("processes")
    assert not _looks_like_address("host:port")


def test_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert _show_progress(None) is False
    assert _show_progress(True) is True
    monkeypatch.setattr("sys.stderr", Tty())
    assert _show_progress(None) is True
    assert _show_progress(False) is False


def test_progress_bar_is_drawn_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr("sys.stderr", buf)
    assert irm.parallel.map(_square, range(4), progress=True, desc="units") == [0, 1, 4, 9]
    assert "units" in buf.getvalue() and "/4" in buf.getvalue()
    buf2 = io.StringIO()
    monkeypatch.setattr("sys.stderr", buf2)
    irm.parallel.map(_square, range(4))
    assert buf2.getvalue() == ""


# The property test of the serial map is in tests/test_parallel_properties.py: this module's Dask
# cluster (the module-scoped dask_client) draws from the global `random` in its IO-loop thread,
# which Hypothesis reports, at random, as "Do not use the random module inside strategies".


def _thread_env(_: int) -> tuple[str | None, str | None]:
    import os

    return os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS")


def test_workers_are_single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("IRMODELS_START_METHOD", raising=False)  # fork or spawn: the caller's
    # environment at the map (a fork server keeps the one it started with)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the caller's choice is kept
    out = irm.parallel.map(_thread_env, [0, 1, 2], backend="processes", n_workers=2)
    assert out == [("1", "3")] * 3
    assert "OPENBLAS_NUM_THREADS" not in os.environ  # the parent is left as it was


def test_prestarted_workers_run_the_next_map_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    import functools

    monkeypatch.setenv("IRMODELS_START_METHOD", "spawn")  # forked workers are never prestarted

    from irmodels.parallel import _PRESTARTED, prestarted

    fn = functools.partial(np.add, np.arange(3.0))
    items = [1.0, 2.0, 3.0, 4.0, 5.0]
    expected = [fn(x) for x in items]
    with prestarted("processes", n_workers=2, modules=["irmodels.parallel"]):
        assert len(_PRESTARTED) == 1
        got = irm.parallel.map(fn, items, backend="processes", n_workers=2, chunksize=2)
        assert not _PRESTARTED  # used once, then shut down
        again = irm.parallel.map(fn, items, backend="processes", n_workers=2)  # a fresh pool
    for a, b in zip(got + again, expected + expected):
        np.testing.assert_array_equal(a, b)
    with prestarted("processes", n_workers=1):  # never used: shut down at the end of the block
        pass
    assert not _PRESTARTED


# --- how the workers start ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_every_start_method_gives_identical_results(method: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRMODELS_START_METHOD", method)
    assert irm.parallel.start_method() == method
    data = np.arange(1000.0)
    fn = functools.partial(np.dot, data)  # a function carrying data, as the studies' units do
    items = [np.full(1000, float(k)) for k in range(7)]
    got = irm.parallel.map(fn, items, backend="processes", n_workers=2, chunksize=2)
    assert got == [fn(x) for x in items]
    with pytest.raises(KeyError, match="three"):  # errors come back the same way
        irm.parallel.map(_fail_on_three, [1, 2, 3], backend="processes", n_workers=2)


def test_unpicklable_function_is_refused_when_forking_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # a forked worker would not need to unpickle it, but the same call must work on every platform
    monkeypatch.setenv("IRMODELS_START_METHOD", "fork")
    with pytest.raises(ParallelError, match="not picklable"):
        irm.parallel.map(lambda x: x, [1, 2], backend="processes")


def test_start_method_override_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRMODELS_START_METHOD", "threads")
    with pytest.raises(ParallelError, match="IRMODELS_START_METHOD='threads'.*fork, spawn"):
        irm.parallel.start_method()


def test_no_fork_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    monkeypatch.delenv("IRMODELS_START_METHOD", raising=False)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert irm.parallel.start_method() == "spawn"
    finally:
        stop.set()
        t.join()


def test_a_single_threaded_process_forks_every_time() -> None:
    # in a fresh process with one BLAS thread the workers are forked, and stay so after a map:
    # a disabled progress bar must not leave tqdm's monitor thread behind
    import os
    import subprocess
    import sys

    code = (
        "import functools, numpy as np, pandas, irmodels as irm\n"
        "m = [irm.parallel.start_method()]\n"
        "fn = functools.partial(np.add, np.arange(3.0))\n"
        "for _ in range(2):\n"
        "    out = irm.parallel.map(fn, [1.0, 2.0], backend='processes', n_workers=2)\n"
        "    assert [list(x) for x in out] == [[1, 2, 3], [2, 3, 4]]\n"
        "    m.append(irm.parallel.start_method())\n"
        "print(*m)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "IRMODELS_START_METHOD"}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    expected = "fork" if sys.platform.startswith("linux") else "spawn"
    assert res.stdout.split() == [expected] * 3


def _die(x: int) -> int:
    import os

    os._exit(3)  # a worker killed mid-task (as the OOM killer would)


def test_a_dead_worker_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    for method in ("fork", "spawn"):
        monkeypatch.setenv("IRMODELS_START_METHOD", method)
        with pytest.raises(ParallelError, match="worker process ended abruptly.*backend='serial'"):
            irm.parallel.map(_die, [1, 2], backend="processes", n_workers=1)


def test_check_scheduler_takes_the_timeout_by_keyword_only() -> None:
    """issue 26: ``timeout`` is an option (keyword-only); an in-process backend is not checked."""
    from irmodels.parallel import check_scheduler

    assert check_scheduler("serial", timeout=0.5) is None
    with pytest.raises(TypeError, match="positional argument"):
        check_scheduler("serial", 0.5)  # type: ignore[misc]


def test_the_fork_server_preloads_the_libraries_and_the_functions_module() -> None:
    import functools
    from multiprocessing import forkserver

    from irmodels.parallel import FORKSERVER_PRELOAD, _context

    ctx = _context("forkserver", functools.partial(np.add, 1.0))
    assert ctx.get_start_method() == "forkserver"
    preload = forkserver._forkserver._preload_modules
    assert list(preload[:len(FORKSERVER_PRELOAD)]) == list(FORKSERVER_PRELOAD)
    assert {"numpy", "pandas", "irmodels"} <= set(preload)
    _context("forkserver", _die)  # a function of this module: its module is preloaded too
    assert forkserver._forkserver._preload_modules[-1] == __name__
    assert _context("spawn", _die).get_start_method() == "spawn"


def test_fork_server_workers_find_the_libraries_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRMODELS_START_METHOD", "forkserver")
    out = irm.parallel.map(_modules_loaded, [0, 1], backend="processes", n_workers=2)
    assert out == [True, True]


def _modules_loaded(_: int) -> bool:
    import sys

    return all(m in sys.modules for m in ("numpy", "pandas", "scipy.special", "irmodels"))
