"""Property tests of irm.parallel, in a module without a Dask cluster.

A running ``distributed`` cluster draws from Python's global ``random`` in its IO-loop thread
(``dask.sizeof`` samples long messages), and Hypothesis, which checks that the global state does
not change while it draws an example, then fails the test at random with "Do not use the
`random` module inside strategies". tests/test_parallel.py keeps a cluster for its whole module
(the module-scoped ``dask_client``), so the property tests live here, where none runs.
"""

from __future__ import annotations

import pickle
import random
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.parallel import spawn_seeds


def _square(x: int) -> int:
    return x * x


@pytest.fixture(autouse=True)
def _no_dask_thread():
    """No thread of a Dask cluster runs beside these tests (each could move ``random``)."""
    alive = [t.name for t in threading.enumerate() if t.name == "IO loop"]
    assert not alive, f"a Dask cluster is still running ({alive}): its thread draws from random"
    state = random.getstate()
    yield
    assert random.getstate() == state, "something drew from the global random during the test"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-1000, 1000), max_size=30), st.integers(0, 2**32 - 1))
def test_serial_map_is_the_list_comprehension(xs: list[int], seed: int) -> None:
    assert irm.parallel.map(_square, xs) == [x * x for x in xs]
    seeds = spawn_seeds(seed, len(xs))
    assert [pickle.loads(pickle.dumps(s)).entropy for s in seeds] == [seed] * len(xs)
