"""Benchmark: the shard study serially, on 2 local processes and on a 2-worker Dask cluster.

Run: ``python benchmarks/shards.py`` (add ``--full`` to also time the full study once).
Prints, in one run:

1. the serial step every backend shares, encoding the runs, with 1 thread and with 2 (the
   ``"processes"`` backend encodes in ``n_workers`` threads);
2. a reduced study on the TREC-8-sized demo collection (50 topics x 100 systems, depth 1000;
   S in {2, 5, 10, 25, 50}, 4 splits each, MD1-MD6 with Tukey HSD for every fit) with
   ``backend="serial"``, ``backend="processes"`` (2 workers) and a Dask ``LocalCluster`` on
   127.0.0.1 (2 worker processes, 1 thread each), the latter twice: with the workers'
   ``MALLOC_TRIM_THRESHOLD_`` unset (docs/parallel.md) and with Dask's default environment (the
   workers' page faults are printed); asserts they all give identical tables and prints the
   times and the speed-ups over serial (goal >= 1.7x on 2 cores);
3. with ``--full``: the full study (S in {2, 3, 4, 5, 10, 25, 50}, 10 splits each: 350 shard
   fits + MD1) serially and on 2 processes, interleaved, ``--repeat`` times; the median
   speed-up is printed (goal >= 1.8x on 2 cores; the full study under 5 minutes).

Run it with ``OPENBLAS_NUM_THREADS=1`` (as CI does): the process is then single-threaded and
the workers are forked (``irm.parallel.start_method()``), so they start at once and inherit
the encoded collection; otherwise they are spawned and import irmodels first.

The baseline is the same study run serially: there is no other implementation of it to time
against. The collection is generated once and not counted. Each study also encodes the runs
once (the serial part every backend shares) before mapping its (S, split) units.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import warnings

import pandas as pd

import irmodels as irm

REDUCED = {"n_shards": (2, 5, 10, 25, 50), "n_splits": 4}


def _cpu() -> float:
    """CPU seconds of this process and of its finished child processes (the pool workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _minor_faults() -> int:
    """Minor page faults of the calling process so far (run on each Dask worker)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(collection, backend, **kwargs):
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        study = irm.studies.shards(collection, backend=backend, n_workers=2, progress=False,
                                   **kwargs)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return study, wall, cpu, max(load, os.getloadavg()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also time the full study")
    parser.add_argument("--repeat", type=int, default=3,
                        help="serial/processes pairs of the full study (median reported)")
    parser.add_argument("--preset", default="trec8", choices=["trec8", "small", "tiny"])
    args = parser.parse_args()

    t0 = time.perf_counter()
    col = irm.collection.generate(preset=args.preset, seed=0)
    print(f"{col!r}: {len(col.runs):,} retrieved rows, {len(col.docids):,} documents "
          f"(generated in {time.perf_counter() - t0:.1f} s)")
    units = len(REDUCED["n_shards"]) * REDUCED["n_splits"]
    print(f"reduced study: S in {REDUCED['n_shards']}, {REDUCED['n_splits']} splits "
          f"({units} units, {units * 5 + 1} fits)")

    # the one serial step of every backend: encoding the runs (in n_workers threads on the
    # "processes" backend), interleaved, medians
    from irmodels.studies._shard_units import collection_inputs
    from irmodels.studies._sharded import prepare

    inputs = collection_inputs(col)
    enc: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(5):
        for threads in (1, 2):
            t = time.perf_counter()
            prepare(inputs.runs, inputs.qrels, inputs.docids, "AP", threads=threads)
            enc[threads].append(time.perf_counter() - t)
    one, two = (statistics.median(enc[k]) for k in (1, 2))
    print(f"encoding the runs (serial step; median of 5): 1 thread {one:.3f} s, 2 threads "
          f"{two:.3f} s ({one / two:.2f}x)")

    print("  backend            wall (s)  speed-up  CPU (s, incl. workers)  load average")
    serial, t_serial, cpu, load = timed(col, "serial", **REDUCED)
    print(f"  serial            {t_serial:8.1f}     1.00x  {cpu:10.1f}              {load:5.1f}")
    procs, t_procs, cpu, load = timed(col, "processes", **REDUCED)
    print(f"  processes (2)     {t_procs:8.1f}  {t_serial / t_procs:7.2f}x  {cpu:10.1f}"
          f"              {load:5.1f}")
    pd.testing.assert_frame_equal(serial.runs, procs.runs)

    if args.full:
        print(f"full study (S in {(2, 3, 4, 5, 10, 25, 50)}, 10 splits: 70 units, 351 fits), "
              f"serial and 2 processes interleaved, {args.repeat} times "
              f"(workers {irm.parallel.start_method()}ed; OPENBLAS_NUM_THREADS="
              f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})")
        ratios, walls = [], {"serial": [], "processes": []}
        for _ in range(args.repeat):
            for backend in ("serial", "processes"):
                full, wall, cpu, load = timed(col, backend)
                walls[backend].append(wall)
                print(f"  {backend:10s} {wall:6.1f} s wall, {cpu:6.1f} s CPU, load {load:.1f}")
            ratios.append(walls["serial"][-1] / walls["processes"][-1])
        print(f"  median: serial {statistics.median(walls['serial']):.1f} s, 2 processes "
              f"{statistics.median(walls['processes']):.1f} s; speed-up median "
              f"{statistics.median(ratios):.2f}x (runs: {', '.join(f'{r:.2f}' for r in ratios)}; "
              "goal >= 1.8x)")
        print(full.summary_table().round(4).to_string())

    # Dask last: its client leaves threads in this process, after which workers are spawned
    try:
        import distributed  # noqa: F401
    except ImportError:  # pragma: no cover
        print("  dask              (distributed not installed: pip install 'irmodels[dask]')")
    else:
        from _timing import dask_client

        print("reduced study on a Dask LocalCluster (2 worker processes, 1 thread each; cluster "
              "start-up not counted)")
        for trim, label in ((False, "MALLOC_TRIM_THRESHOLD_ unset"),
                            (True, "Dask's default env")):
            with dask_client(2, trim=trim) as client:
                client.run(lambda: __import__("irmodels.studies.shard_study"))  # warm imports
                faults0 = client.run(_minor_faults)
                dask, t_dask, _, load = timed(col, client, **REDUCED)
                faults = sum(client.run(_minor_faults).values()) - sum(faults0.values())
            print(f"  dask ({label:28s}) {t_dask:6.1f} s  {t_serial / t_dask:5.2f}x  "
                  f"workers' page faults {faults:,}  load {load:.1f}")
            pd.testing.assert_frame_equal(serial.runs, dask.runs)
    print("  dask, processes and serial gave identical tables")
    print("  (a load average above 2 means other jobs shared the 2 cores: wall times and "
          "speed-ups are then pessimistic)")


if __name__ == "__main__":
    main()
