"""Root pytest configuration: applies to the tests and to the doctests in irmodels/.

The dataset registry reads the public TREC matrices from the shared reference folder instead of
the network, and matplotlib draws off-screen.
"""

import os
from pathlib import Path

_SHARED = Path(__file__).resolve().parent.parent / "shared" / "data" / "ir-scores"
os.environ.setdefault("IRM_DATA_MIRROR", str(_SHARED))
os.environ.setdefault("MPLBACKEND", "Agg")
# `backend="processes"` in the suite: a pytest-xdist worker runs a second thread (execnet's), so
# irmodels would spawn fresh interpreters for every pool, each importing numpy, pandas, scipy
# and irmodels again (about 1.5 s of CPU per worker, some 80 times: a fifth of the suite's CPU).
# The suite uses the fork server instead: it starts once per pytest process with those modules
# preloaded (irmodels.parallel.FORKSERVER_PRELOAD) and forks each worker from itself. The
# workers run the same code path as spawned ones (the function is pickled and sent once per
# worker); tests/test_parallel.py tests the automatic choice (fork or spawn) and each start
# method by name, and the notebook kernels run without this setting, as a user's do.
os.environ.setdefault("IRMODELS_START_METHOD", "forkserver")
# OpenBLAS starts with one thread in every pytest process (tests/conftest.py holds the session's
# limit; tests/models/test_threads.py raises it inside its tests).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# ranx (tests/data/test_adapters_real.py, docs/data.md's example) is a numba library: its
# functions are compiled on first use, about 45 s of CPU in a fresh environment (23 s to build
# one Qrels and its Runs, 2-7 s per measure) and 5 s in every process after that, for eight
# topics. The suite runs ranx's own code with numba's compiler off: the same functions, run by
# Python, the same objects and values for irmodels to read (ranx's to_dict(), name and scores
# are Python dicts either way). `NUMBA_DISABLE_JIT=0 make test` runs them compiled.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")


# `make test` hands whole files to its two workers (`--dist loadfile --no-loadscope-reorder`), in
# the order of the items below. A file that takes long and starts last sets the suite's wall
# time while the other worker idles (xdist's default queue, by number of tests, put the nine
# notebooks last: 46 s). The slowest files, measured (`--durations=0`, seconds of their tests on
# 2 workers), start first; the many short ones after them fill both workers to the end. The
# order changes no result: every file's tests keep their own order.
SLOW_FIRST = (
    "tests/test_notebooks.py",  # 46 s: nine Jupyter kernels
    "tests/test_docs.py",  # 26 s: the docs pages' blocks, a page's in one namespace
    "tests/models/test_glmm_inference.py",  # 12 s
    "tests/reporting/test_plots_jupyter.py",  # 10 s: two kernels
    "tests/studies/test_shard_study.py",  # 8 s
    "tests/reporting/test_report.py",  # 7 s
    "tests/test_docs_site.py",  # 6 s: the MkDocs build
)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    root = Path(__file__).resolve().parent

    def key(item):  # type: ignore[no-untyped-def]
        try:
            rel = Path(str(item.path)).resolve().relative_to(root).as_posix()
        except ValueError:
            return len(SLOW_FIRST)
        return rank.get(rel, len(SLOW_FIRST))

    items.sort(key=key)  # stable: the rest keep their collection order
