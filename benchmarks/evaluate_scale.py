"""Benchmark: irm.evaluate on runs too large for memory, partition by partition.

Run: ``python benchmarks/evaluate_scale.py`` (a scaled-down collection; the figures are
extrapolated linearly in the number of retrieved rows, which is how every step of the
evaluation scales), or ``python benchmarks/evaluate_scale.py --full`` for the target size of the
issue, 1,000 runs x 250 topics x depth 1000 (250M retrieved rows, 12 GB of run files; about
25 minutes on 2 cores).

A collection is generated with ``irm.collection.generate`` and its runs written as one TREC run
file per system into a temporary directory (``--tmp`` chooses where). With ``--replicate K``
each run file is then copied K - 1 times under new run tags (``sys001`` -> ``sys001x2``, ...),
so the directory holds K times the systems while only the generated collection has to fit in
memory: ``--full`` is ``--systems 100 --topics 250 --replicate 10``. Then, in one run:

1. the whole runs frame in memory (``irm.evaluate(runs, qrels)``, the reference);
2. the directory evaluated file by file, serially (memory: one run file at a time);
3. the directory on 2 processes (``backend="processes"``);
4. the directory on a Dask ``LocalCluster`` (2 workers, 1 thread each; start-up not counted), twice:
   with the workers' ``MALLOC_TRIM_THRESHOLD_`` unset (docs/parallel.md) and with Dask's default
   environment.

``--full-stream`` runs the target size without holding it anywhere: 1,000 *distinct* runs x 250
topics x depth 1000 written by ``irm.collection.write_runs`` (topic by topic; generation time,
CPU, peak memory and the size on disk are printed), ``qrels.txt`` read back, then the directory
evaluated on 2 processes and on a Dask ``LocalCluster`` (2 workers; ``--serial`` adds the
serial route). Printed per route: wall and CPU seconds, this process's peak memory (``VmHWM``,
reset before each route) and each worker's (the forked workers' sampled by a watcher process,
the Dask workers' asked directly); the routes' frames must be equal, and ``--sample`` runs (10)
are read into memory and evaluated there, to the same scores exactly. ``--stream`` does the same
at the sizes of ``--systems/--topics/--depth``.

Each result is checked equal to the in-memory frame (with ``--replicate``, every copy's scores
equal to its original's, exactly). Printed: wall and CPU seconds (CPU
including child processes), the peak resident memory of this process and of its children
(``ru_maxrss``; for the children, the largest child so far: a forked worker starts with this
process's peak (``ru_maxrss`` survives fork and exec), so for the memory of a partition read the
Dask workers' own peaks (``VmHWM``), printed after their run), the 1-minute load average (the
machine is shared: at a load above 2 wall times are upper bounds, and the CPU extrapolation is
the better guide), and the extrapolation to the target size.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import warnings

import numpy as np
import pandas as pd

import irmodels as irm

MEASURES = ["AP", "P@10", "nDCG@10", "RR"]


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _rss_mb() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def timed(label: str, fn, n_rows: int, target_rows: int, ref: pd.DataFrame | None):
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        out = fn()
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    me, kids = _rss_mb()
    load = max(load, os.getloadavg()[0])
    scale = target_rows / n_rows
    print(f"  {label:42s} {wall:7.1f} s wall {cpu:7.1f} s CPU  peak RSS {me:6.0f} MB self, "
          f"{kids:6.0f} MB largest child  load {load:4.1f}  -> target {wall * scale / 60:6.1f} "
          f"min wall, {cpu * scale / 60:6.1f} min CPU")
    if ref is not None:
        check(out, ref)
    return out


def _worker_rss_mb() -> float:
    """Peak resident memory of the calling process (a Dask worker), in MB: ``VmHWM`` (Linux),
    which starts afresh at exec, unlike ``ru_maxrss``, which keeps the parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


def _replicate(directory: str, tags: list[str], k: int) -> None:
    """Copy every run file k - 1 times, the run tag (last field of each line) renamed."""
    for tag in tags:
        with open(os.path.join(directory, tag), "rb") as f:
            data = f.read()
        old = f" {tag}\n".encode()
        assert data.count(old) == data.count(b"\n"), tag
        for r in range(2, k + 1):
            with open(os.path.join(directory, f"{tag}x{r}"), "wb") as f:
                f.write(data.replace(old, f" {tag}x{r}\n".encode()))


def check(out: pd.DataFrame, ref: pd.DataFrame) -> None:
    """``out`` holds ``ref``'s scores for every system and for each of its copies, exactly."""
    if len(out) == len(ref):
        pd.testing.assert_frame_equal(out, ref, check_exact=True)
        return
    system = out["system"].astype(str)
    base = system.str.replace(r"x\d+$", "", regex=True)
    expected = ref.set_index(["measure", "topic", "system"])["score"]
    key = pd.MultiIndex.from_arrays([out["measure"].astype(str), out["topic"].astype(str), base])
    expected.index = expected.index.set_levels(
        [lvl.astype(str) for lvl in expected.index.levels])
    want = expected.reindex(key).to_numpy()
    assert len(out) % len(ref) == 0 and not np.isnan(want).any()
    assert np.array_equal(out["score"].to_numpy(), want), "a copy's scores differ"


_MONITOR = r"""
import json, os, sys, time
root, out = int(sys.argv[1]), sys.argv[2]
me, peak = os.getpid(), {}
def status(pid):
    got = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("PPid", "VmHWM", "Name"):
                    got[k] = v.strip()
    except OSError:
        pass
    return got
while os.path.exists(f"/proc/{root}"):
    table = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) not in (me, root):
            st = status(d)
            if "PPid" in st:
                table[int(d)] = st
    def below(pid):
        seen = 0
        while pid in table and seen < 50:
            pid, seen = int(table[pid]["PPid"]), seen + 1
            if pid == root:
                return True
        return False
    for pid, st in table.items():
        if "VmHWM" in st and below(pid):
            kb = int(st["VmHWM"].split()[0])
            if kb > peak.get(pid, (0, ""))[0]:
                peak[pid] = (kb, st.get("Name", ""))
    with open(out + ".tmp", "w") as f:
        json.dump(peak, f)
    os.replace(out + ".tmp", out)
    time.sleep(0.2)
"""


class _Descendants:
    """Peak memory (``VmHWM``) of every process below this one, sampled every 0.2 s by a
    separate watcher process (a thread here would stop ``backend="processes"`` from forking).
    ``since()`` gives the peaks of the processes that appeared after ``mark()``."""

    def __init__(self, tmp: str) -> None:
        import subprocess
        import sys

        self.path = os.path.join(tmp, ".peaks.json")
        self.proc = subprocess.Popen([sys.executable, "-c", _MONITOR, str(os.getpid()),
                                      self.path])
        self.before: set[str] = set()

    def _read(self) -> dict:
        import json

        time.sleep(0.5)
        try:
            with open(self.path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def mark(self) -> None:
        self.before = set(self._read())

    def since(self) -> dict[str, float]:
        return {f"{pid} ({name})": kb / 1024 for pid, (kb, name) in self._read().items()
                if pid not in self.before and name.startswith("python")}

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _self_hwm_mb(reset: bool = False) -> float:
    """This process's peak resident memory (``VmHWM``) in MB; ``reset`` starts a new peak
    (``/proc/self/clear_refs``, Linux 4.0+) after reading it."""
    with open("/proc/self/status") as f:
        mb = next(int(x.split()[1]) / 1024 for x in f if x.startswith("VmHWM:"))
    if reset:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    return mb


def main_stream(args: argparse.Namespace) -> None:
    """The target size without memory: run files written by ``irm.collection.write_runs``
    (1,000 distinct runs), then evaluated from the directory on each backend."""
    n_s, n_t, depth = args.systems, args.topics, args.depth
    n_rows = n_s * n_t * depth
    print(f"uptime: {os.popen('uptime').read().strip()}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        watch = _Descendants(tmp)
        try:
            _stream_routes(args, tmp, watch, n_s, n_t, depth, n_rows)
        finally:
            watch.close()


def _stream_routes(args, tmp, watch, n_s, n_t, depth, n_rows) -> None:
    _self_hwm_mb(reset=True)
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    out = irm.collection.write_runs(os.path.join(tmp, "col"), n_t, n_s, depth=depth, seed=0)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    run_dir = out / "runs"
    files = sorted(run_dir.iterdir())
    size = sum(f.stat().st_size for f in files)
    print(f"write_runs: {len(files):,} run files, {n_rows:,} rows, {size / 1e9:.2f} GB, qrels "
          f"{(out / 'qrels.txt').stat().st_size / 1e6:.1f} MB; {wall:.1f} s wall, {cpu:.1f} s "
          f"CPU, peak RSS {_self_hwm_mb(reset=True):.0f} MB, load {load:.1f}-"
          f"{os.getloadavg()[0]:.1f}")
    qrels = irm.read_qrels(out / "qrels.txt")
    print(f"  qrels: {len(qrels):,} judgements; this process holds "
          f"{_self_hwm_mb(reset=True):.0f} MB after reading them")

    def route(label: str, fn):
        load = os.getloadavg()[0]
        watch.mark()
        _self_hwm_mb(reset=True)
        t0, c0 = time.perf_counter(), _cpu()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", irm.IRModelsWarning)
            res = fn()
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        me = _self_hwm_mb(reset=True)
        load = max(load, os.getloadavg()[0])
        print(f"  {label:44s} {wall:7.1f} s wall {cpu:7.1f} s CPU (this process and reaped "
              f"children)  peak RSS here {me:5.0f} MB  load {load:4.1f}")
        return res

    results = {}
    if args.serial:
        results["serial"] = route("directory, file by file, serial",
                                  lambda: irm.evaluate(run_dir, qrels, MEASURES))
    how = irm.parallel.start_method()
    results["processes"] = route(
        f"directory, 2 processes ({how}ed)",
        lambda: irm.evaluate(run_dir, qrels, MEASURES, backend="processes", n_workers=2))
    peaks = watch.since()
    print(f"    workers' peak RSS (VmHWM{', from this process RSS at the fork' * (how == 'fork')}"
          "; the resource tracker is the small one): "
          + ", ".join(f"{v:.0f} MB" for v in sorted(peaks.values())))
    if not args.no_dask:
        from _timing import dask_client

        with dask_client(2) as client:
            client.run(lambda: __import__("irmodels.data.measures"))  # warm imports
            base = client.run(_worker_rss_mb)
            results["dask"] = route(
                "directory, Dask LocalCluster (2 workers)",
                lambda c=client: irm.evaluate(run_dir, qrels, MEASURES, backend=c))
            cpu = client.run(lambda: sum(os.times()[:2]))
            peak = client.run(_worker_rss_mb)
        print("    Dask workers' peak RSS (VmHWM): " + ", ".join(
            f"{peak[w]:.0f} MB (idle {base[w]:.0f} MB)" for w in sorted(peak))
            + "; workers' CPU since start " + ", ".join(f"{cpu[w]:.0f} s" for w in sorted(cpu)))
    first = next(iter(results.values()))
    assert len(first) == n_s * n_t * len(MEASURES), len(first)
    for name, res in results.items():
        pd.testing.assert_frame_equal(res, first, check_exact=True, obj=name)
    # a sample of runs read into memory and evaluated there: the same scores, exactly
    pick = [files[i] for i in np.linspace(0, len(files) - 1, args.sample).astype(int)]
    t0 = time.perf_counter()
    mem = irm.evaluate(irm.read_runs(pick), qrels, MEASURES)
    names = set(mem["system"].astype(str))
    part = first[first["system"].astype(str).isin(names)]
    key = ["measure", "system", "topic"]
    a = part.assign(**{k: part[k].astype(str) for k in key}).sort_values(key)
    b = mem.assign(**{k: mem[k].astype(str) for k in key}).sort_values(key)
    assert len(a) == len(b) == len(pick) * n_t * len(MEASURES)
    assert (a[key].to_numpy() == b[key].to_numpy()).all()
    assert np.array_equal(a["score"].to_numpy(), b["score"].to_numpy())
    print(f"  {len(results)} routes equal; {len(pick)} runs read into memory and evaluated there "
          f"({time.perf_counter() - t0:.1f} s): {len(b):,} scores equal, exactly; "
          f"mean AP {first[first['measure'] == 'AP']['score'].mean():.4f}")
    print(f"uptime: {os.popen('uptime').read().strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--replicate", type=int, default=1, metavar="K",
                        help="copy every run file K - 1 times under new run tags")
    parser.add_argument("--full", action="store_true",
                        help="the issue's target: --systems 100 --topics 250 --replicate 10")
    parser.add_argument("--tmp", default=None, help="directory for the run files")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--full-stream", action="store_true",
                        help="the target, 1,000 distinct runs x 250 topics x depth 1000, written "
                             "by irm.collection.write_runs without holding them (or the sizes "
                             "given with --stream)")
    parser.add_argument("--stream", action="store_true",
                        help="write_runs with --systems/--topics/--depth, then the routes")
    parser.add_argument("--serial", action="store_true",
                        help="with --stream/--full-stream: also the serial route")
    parser.add_argument("--sample", type=int, default=10,
                        help="with --stream/--full-stream: runs checked in memory")
    args = parser.parse_args()
    if args.full_stream:
        args.systems, args.topics, args.depth = 1000, 250, 1000
    if args.full_stream or args.stream:
        main_stream(args)
        return
    if args.full:
        args.systems, args.topics, args.depth, args.replicate = 100, 250, 1000, 10
    target_rows = 1000 * 250 * 1000

    t0 = time.perf_counter()
    col = irm.collection.generate(args.topics, args.systems, depth=args.depth, seed=0)
    gen_rows = len(col.runs)
    n_rows = gen_rows * args.replicate
    print(f"{col!r}: {gen_rows:,} retrieved rows (generated in {time.perf_counter() - t0:.1f} s); "
          f"target 1,000 runs x 250 topics x depth 1000 = {target_rows:,} rows")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        t0 = time.perf_counter()
        irm.write_run(col.runs, tmp + os.sep)
        if args.replicate > 1:
            _replicate(tmp, list(col.systems), args.replicate)
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
        print(f"  {len(os.listdir(tmp))} run files, {n_rows:,} rows, {size / 1e9:.1f} GB, written "
              f"in {time.perf_counter() - t0:.1f} s (not counted); timed rows {n_rows:,} "
              f"({target_rows / n_rows:.0f}x to the target)")
        qrels = col.qrels
        runs = col.runs
        ref = timed("in memory, serial (reference)",
                    lambda r=runs: irm.evaluate(r, qrels, MEASURES), gen_rows, target_rows, None)
        del runs
        timed("directory, file by file, serial",
              lambda: irm.evaluate(tmp, qrels, MEASURES), n_rows, target_rows, ref)
        timed("directory, 2 processes",
              lambda: irm.evaluate(tmp, qrels, MEASURES, backend="processes", n_workers=2),
              n_rows, target_rows, ref)
        if not args.no_dask:
            try:
                import distributed  # noqa: F401
            except ImportError:  # pragma: no cover
                print("  dask: distributed is not installed (pip install 'irmodels[dask]')")
            else:
                from _timing import dask_client

                for trim, label in ((False, "MALLOC_TRIM_THRESHOLD_ unset"),
                                    (True, "Dask's default env")):
                    with dask_client(2, trim=trim) as client:
                        client.run(lambda: __import__("irmodels.data.measures"))  # warm imports
                        base = client.run(_worker_rss_mb)
                        timed(f"directory, Dask LocalCluster (2 workers, {label})",
                              lambda c=client: irm.evaluate(tmp, qrels, MEASURES, backend=c),
                              n_rows, target_rows, ref)
                        peak = client.run(_worker_rss_mb)
                    print("  Dask workers' peak RSS: " + ", ".join(
                        f"{peak[w]:.0f} MB (idle {base[w]:.0f} MB)" for w in sorted(peak))
                        + " - what one run file and the qrels cost a worker")
    print("  every partitioned result equals the in-memory frame; memory per worker is one "
          "run file plus the qrels")


if __name__ == "__main__":
    main()
