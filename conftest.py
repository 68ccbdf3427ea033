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
