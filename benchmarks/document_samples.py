"""Benchmark: scoring simulated document samples in bulk vs pytrec_eval, and the per-pair mixed fits.

Run: ``python benchmarks/document_samples.py`` (``--quick`` for a smaller run; ``--fits-only``
for section 0 alone, ``--simulator-only`` for the serial and 2-process simulator runs of section 1
alone). Prints, in one run:

0. score-model fitting of every (topic, run) pair of 50 topics x 40 runs: the batched fits of
   the simulator (``fit_score_models``: batched EM for ``gmg``, FFT-binned survival functions for
   ``kde``) against the one-pair-at-a-time reference computations they replaced
   (``irmodels.replicates._reference``), timed on a random subset of pairs and compared per
   pair (goal: at least 20x);
1. the simulator's throughput (rankings scored per second, C x T x R rankings of depth 1000) on
   the TREC-8-sized demo collection cut to 40 runs x 50 topics: ``model="bootstrap"`` at
   C = 100 and C = 1000 (goal: C = 1000 in under 30 s on 2 cores), then ``--repeat`` pairs of
   serial and 2-process runs at C = 1000, interleaved (median speed-up; goal >= 1.6x), and
   ``kde`` and ``gmg`` at C = 100 on 10 runs;
2. the obvious alternative: draw each simulated ranking explicitly (every one of its ~1000
   scores, from the same fitted bootstrap score models) and score it with pytrec_eval-terrier
   (``map``). Only pytrec_eval's evaluation is timed (building the rankings and the
   ``RelevanceEvaluator`` is not counted, which favours pytrec_eval); the time per ranking is
   extrapolated to C x T x R and the ratio printed. The mean AP of the two routes is printed as a
   sanity check (same model, so equal up to Monte Carlo error);
3. ``compare_tests`` with the two mixed models per pair (50 topics x 10 samples per pair): a
   few pairs serially in this process, with the time per pair of the homoscedastic and of the
   heteroscedastic fit (and of the Satterthwaite df, not needed by the default df), then all
   780 pairs of the 40 runs with ``backend="processes"`` on 2 workers (goal: under 5 minutes).
   Small dense linear algebra is sensitive to BLAS threading on a loaded machine: run with
   ``--blas-threads 1`` (re-executes with ``OPENBLAS_NUM_THREADS=1`` etc.; the process workers
   always use one thread) to compare with the default.

Wall and CPU seconds are printed with the 1-minute load average: the development machine is
shared, so wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import warnings

import numpy as np
import pandas as pd

import irmodels as irm
from irmodels.formula.spec import apply_transform
from irmodels.replicates.documents import fit_score_model


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Timer:
    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu = _cpu() - self.c0
        self.load = os.getloadavg()[0]


def score_model_fits(coll, n_ref: int) -> None:
    from irmodels.replicates import _reference
    from irmodels.replicates.documents import _observed, _silverman, fit_score_models

    obs = _observed(coll.runs, coll.qrels, 1000, 1, None, None)
    rel, non = [], []
    for _, _, r, n in obs.groups():
        if len(r):
            rel.append(r)
        non.append(n)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(rel), size=min(n_ref, len(rel)), replace=False)
    pick_non = rng.choice(len(non), size=min(n_ref, len(non)), replace=False)

    def reference_gmg(x):
        if len(x) < 3 or np.ptp(x) == 0:
            return
        for k in (1, 2, 3):
            if k > 1 and len(x) < 3 * k:
                break
            _reference.em_one_sample(x, k)

    for model, cls, data, sub, ref in (
            ("gmg", "relevant", rel, pick, reference_gmg),
            ("kde", "nonrelevant", non, pick_non,
             lambda x: _reference.kde_spline_exact(x, _silverman(x)))):
        fit_score_models(data[:5], model, cls)  # warm imports and caches
        with Timer() as t_new:
            fit_score_models(data, model, cls)
        with Timer() as t_ref:
            for i in sub:
                ref(data[i])
        new_pp, ref_pp = t_new.cpu / len(data), t_ref.cpu / len(sub)
        print(f"  {model} {cls:11s}: batched {len(data)} pairs in {t_new.wall:5.2f} s wall "
              f"({new_pp * 1e3:6.2f} ms CPU per pair); reference {ref_pp * 1e3:7.1f} ms CPU per "
              f"pair ({len(sub)} pairs); {ref_pp / new_pp:5.1f}x (load {t_ref.load:.1f})")


def simulator(coll, model: str, C: int, systems: list[str], backend: str = "serial"
              ) -> tuple[float, int, pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        with Timer() as t:
            sims = irm.replicates.document_samples(coll.runs, coll.qrels, model=model,
                                                   n_samples=C, systems=systems, seed=1,
                                                   backend=backend, n_workers=2)
    n = C * len(coll.topics) * len(systems)
    simulator.wall = t.wall  # type: ignore[attr-defined]
    label = model if backend == "serial" else f"{model} ({backend})"
    print(f"  {label:9s} C = {C:4d}: {n:>9,} rankings in {t.wall:6.1f} s wall "
          f"({t.cpu:6.1f} s CPU, load {t.load:.1f}): {n / t.wall:>10,.0f} rankings/s wall, "
          f"{n / t.cpu:>10,.0f} /s CPU")
    return t.cpu, n, sims


def pytrec_eval_route(coll, systems: list[str], n_units: int, C: int, seed: int = 2
                      ) -> tuple[float, int, float, pd.DataFrame]:
    """Explicit rankings from the bootstrap score models, scored by pytrec_eval (map)."""
    import pytrec_eval

    rng = np.random.default_rng(seed)
    runs = coll.runs.loc[coll.runs["system"].astype(str).isin(systems)]
    q = coll.qrels.loc[coll.qrels["rel"] > 0]
    rel_keys = set(zip(q["topic"].astype(str), q["docid"].astype(str)))
    n_rel = q.groupby(q["topic"].astype(str)).size()
    units = runs[["system", "topic"]].drop_duplicates()
    units = units.sample(n=n_units, random_state=seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for sy, tp in units.itertuples(index=False):
        g = runs.loc[(runs["system"] == sy) & (runs["topic"] == tp)]
        g = g.sort_values(["score", "docid"], ascending=[False, False]).head(1000)
        is_rel = np.array([(str(tp), str(d)) in rel_keys for d in g["docid"]])
        sc = g["score"].to_numpy(float)
        r, n, R = int(is_rel.sum()), len(g), int(n_rel.get(str(tp), 0))
        if r == 0:
            continue
        rel_m, _ = fit_score_model(sc[is_rel], "bootstrap", "relevant")
        non_m, _ = fit_score_model(sc[~is_rel], "bootstrap", "nonrelevant")
        for c in range(C):
            r_s = 0
            while r_s == 0:
                r_s = int(rng.poisson(r))
            r_s = min(r_s, n)
            R_s = r_s + int(rng.poisson(max(R - r, 0)))
            scores = np.concatenate([rel_m.sample(rng, r_s), non_m.sample(rng, n - r_s)])
            scores = scores + 1e-9 * rng.random(n)  # random tie-breaking, as the simulator
            qid = f"{tp}_{sy}_{c}"
            run[qid] = {f"d{i}": float(s) for i, s in enumerate(scores)}
            qrels[qid] = {f"d{i}": 1 for i in range(r_s)} | {f"m{i}": 1 for i in range(R_s - r_s)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map"})
    with Timer() as t:
        res = evaluator.evaluate(run)
    mean_ap = float(np.mean([v["map"] for v in res.values()]))
    done = pd.DataFrame([k.split("_")[:2] for k in res], columns=["topic", "system"]).drop_duplicates()
    return t.cpu, len(run), mean_ap, done


def mixed_fits(coll, systems: list[str], n_pairs: int, all_pairs: int) -> None:
    import itertools

    from irmodels.studies import document_samples as ds

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        sims = irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=10,
                                               systems=systems, seed=3)
        pairs = [(systems[0], s) for s in systems[1 : n_pairs + 1]]
        with Timer() as t:
            res = ds.compare_tests(coll.runs, coll.qrels, pairs=pairs, samples=sims)
    per_pair = t.cpu / len(pairs)
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"  serial (this process, OPENBLAS_NUM_THREADS={blas}): {len(pairs)} pairs "
          f"({res['n_topics'].min()}-{res['n_topics'].max()} topics x 10 samples): {t.wall:.1f} s "
          f"wall, {t.cpu:.1f} s CPU (load {t.load:.1f}): {per_pair:.3f} s CPU per pair; "
          f"780 pairs on 2 cores: {780 * per_pair / 2 / 60:.1f} min")
    sub = systems[:all_pairs]
    pairs = list(itertools.combinations(sub, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        with Timer() as t:
            res = ds.compare_tests(coll.runs, coll.qrels, systems=sub, samples=sims,
                                   backend="processes", n_workers=2)
    print(f"  backend='processes', 2 workers (one BLAS thread each): all {len(pairs)} pairs of "
          f"{len(sub)} runs in {t.wall:.1f} s wall, {t.cpu:.1f} s CPU (load {t.load:.1f}); "
          f"{res['p_mixed_hetero'].notna().sum()} heteroscedastic p-values; "
          f"{(res['lrt_p'] < 0.05).mean():.0%} of pairs prefer the heteroscedastic model")
    if len(pairs) < 780:
        print(f"    extrapolated to 780 pairs: {780 / len(pairs) * t.wall / 60:.1f} min wall "
              "(goal < 5 min)")
    # the two fits separately
    y = sims.assign(y=apply_transform(sims["score"].to_numpy(), "logit"),
                    topic=sims["topic"].astype(str), system=sims["system"].astype(str))
    homo_t, het_t, satt_t, iters = [], [], [], []
    formula = "y ~ system + (1|topic) + (1|topic:system)"
    for a, b in pairs:
        d = y.loc[y["system"].isin([a, b])]
        sd = d.groupby(["topic", "system"])["y"].std()
        bad = set(sd[~(sd > 0)].reset_index()["topic"])
        d = d.loc[~d["topic"].isin(bad)]
        d = d.assign(system=pd.Categorical(d["system"], categories=[a, b]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Timer() as t0:
                irm.mixed(formula, d)
            with Timer() as t1:
                h = irm.mixed(formula, d, residual="topic:system")
            with Timer() as t2:
                h.fixed  # noqa: B018 - Satterthwaite df (df="satterthwaite" only)
        homo_t.append(t0.cpu)
        het_t.append(t1.cpu)
        satt_t.append(t2.cpu)
        iters.append(h.n_iter)
    print(f"    per pair: homoscedastic fit {np.mean(homo_t) * 1e3:.0f} ms CPU; heteroscedastic "
          f"({2 * 50} strata at most) {np.mean(het_t):.2f} s CPU ({np.mean(iters):.0f} L-BFGS-B "
          f"iterations); its Satterthwaite df {np.mean(satt_t):.2f} s CPU more")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller C and fewer pairs")
    parser.add_argument("--fits-only", action="store_true", help="only section 0 (score models)")
    parser.add_argument("--simulator-only", action="store_true",
                        help="only section 1 (simulator throughput, serial against 2 processes)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="serial / 2-process simulator pairs (section 1; median reported)")
    parser.add_argument("--pairs", type=int, default=6, help="pairs timed serially")
    parser.add_argument("--runs", type=int, default=40,
                        help="runs whose pairs go through compare_tests on 2 processes (40: 780 pairs)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="set OPENBLAS_NUM_THREADS etc. for this process (re-executes)")
    args = parser.parse_args()
    if args.blas_threads is not None and os.environ.get("OPENBLAS_NUM_THREADS") != str(args.blas_threads):
        import sys

        from irmodels.parallel import THREAD_ENV

        env = dict(os.environ, **{k: str(args.blas_threads) for k in THREAD_ENV})
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    with Timer() as t:
        coll = irm.collection.generate(preset="trec8", systems=40, seed=0)
    print(f"{coll!r} generated in {t.wall:.1f} s (not counted)")
    systems = list(coll.systems)
    if not args.simulator_only:
        print("0. score-model fitting, every (topic, run) pair (50 topics x 40 runs, depth 1000)")
        score_model_fits(coll, 30 if args.quick else 100)
    if args.fits_only:
        return
    Cs = (20, 100) if args.quick else (100, 1000)
    print("1. simulator throughput (50 topics x 40 runs, depth 1000, AP)")
    best = None
    for C in Cs:
        cpu, n, serial_sims = simulator(coll, "bootstrap", C, systems)
        best = n / cpu
    serial_wall = simulator.wall  # type: ignore[attr-defined]
    ratios = []
    for k in range(args.repeat):
        if k:  # the first pair reuses the serial run above
            _, _, serial_sims = simulator(coll, "bootstrap", Cs[-1], systems)
            serial_wall = simulator.wall  # type: ignore[attr-defined]
        _, _, proc_sims = simulator(coll, "bootstrap", Cs[-1], systems, backend="processes")
        pd.testing.assert_frame_equal(serial_sims, proc_sims)
        ratios.append(serial_wall / simulator.wall)  # type: ignore[attr-defined]
    print(f"  processes (2 workers) over serial at C = {Cs[-1]}, {args.repeat} interleaved "
          f"pairs: median {statistics.median(ratios):.2f}x (pairs: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; goal >= 1.6x; identical samples)")
    small_C = 20 if args.quick else 100
    if args.simulator_only:
        return
    for model in ("kde", "gmg"):
        simulator(coll, model, small_C, systems[:10])
    print("2. pytrec_eval-terrier on explicit rankings (bootstrap score models)")
    n_units, C = (20, 5) if args.quick else (50, 10)
    cpu, n, mean_ap, done = pytrec_eval_route(coll, systems, n_units, C)
    per = cpu / n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        sims = irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=200, seed=4,
                                               systems=sorted(set(done["system"])),
                                               topics=sorted(set(done["topic"])))
    sims = sims.assign(topic=sims["topic"].astype(str), system=sims["system"].astype(str))
    sims = sims.merge(done, on=["topic", "system"])
    print(f"  {n} rankings scored in {cpu:.2f} s CPU: {1 / per:,.0f} rankings/s "
          f"({per * 1e3:.2f} ms each); C = 1000 x 50 x 40 would take {per * 2e6 / 60:.0f} min CPU")
    print(f"  mean AP: pytrec_eval route {mean_ap:.4f}, simulator {sims['score'].mean():.4f} "
          f"(same (topic, run) pairs, C = 200; equal up to "
          f"Monte Carlo error, SE about {sims['score'].std() / np.sqrt(n):.4f})")
    assert best is not None
    print(f"  ratio (simulator bootstrap C = {Cs[-1]} rankings/s CPU over pytrec_eval's): "
          f"{best * per:,.0f}x")
    print("3. mixed models per pair (compare_tests, df='containment')")
    mixed_fits(coll, systems, 2 if args.quick else args.pairs, 10 if args.quick else args.runs)


if __name__ == "__main__":
    main()
