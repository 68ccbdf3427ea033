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
