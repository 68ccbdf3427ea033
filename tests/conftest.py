"""Shared fixtures: the reference data folder, a seeded random generator, R availability."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT.parent / "shared" / "data").resolve()
REFERENCE = Path(__file__).resolve().parent / "reference"
#: The scripts that write the reference fixtures are run by hand (some need R or a reference
#: library such as pyvinecopulib); they are not tests and hold no doctests.
collect_ignore_glob = ["reference/*.py"]

# The dataset registry reads the public matrices from this mirror instead of the network.
os.environ.setdefault("IRM_DATA_MIRROR", str(SHARED_DATA / "ir-scores"))
os.environ.setdefault("MPLBACKEND", "Agg")

# Property tests draw new examples on every run on a developer's machine (that is how they find
# bugs); CI sets HYPOTHESIS_PROFILE=ci to draw the same examples every time, so that a commit's
# verdict does not depend on the luck of the draw.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])

# One BLAS thread per pytest process, for the whole session (numpy's and scipy's OpenBLAS: both
# are loaded first). `make test` runs one xdist worker per core, so the cores are already busy
# and one thread each is the right setting: a multi-threaded BLAS makes the tests' own small
# solves (statsmodels, numpy) spin-wait, and tests/models cost about 3x the CPU without it. This
# replaces OPENBLAS_NUM_THREADS=1 in .ci/run. irmodels' kernels set their own threads on top
# (irmodels/_threads.py); tests/models/test_threads.py sets its own limits inside the tests.
import scipy.linalg  # noqa: E402,F401  (load scipy's BLAS before limiting it)
from threadpoolctl import threadpool_limits  # noqa: E402

_ONE_BLAS_THREAD = threadpool_limits(limits=1, user_api="blas")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real TREC matrices, trec_eval files, Brennan's example)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data folder {SHARED_DATA} is missing")
    return SHARED_DATA


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``tests/reference``: R scripts and the fixtures they produced."""
    return REFERENCE


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator; every test gets its own, so tests do not depend on order."""
    return np.random.default_rng(20190721)


HAVE_R = shutil.which("Rscript") is not None
requires_r = pytest.mark.skipif(not HAVE_R, reason="Rscript not installed (fixtures still tested)")


@pytest.fixture(scope="module")
def dask_client():
    """A Dask client on an in-process ``LocalCluster`` (2 workers, 1 thread each), per module."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, host="127.0.0.1",
        protocol="tcp://", dashboard_address=None,
    )
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
