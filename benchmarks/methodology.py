"""Topic-set study and bootstrap of system effects at TREC size (TREC-8 ad hoc AP, 50 x 129).

irmodels vectorises a batch of 50 topic-set samples at once (system means, covariance matrices,
residual mean squares; Tukey's critical value computed once per size). The obvious alternative
is a loop that fits MD1 and runs Tukey's HSD (``irm.anova(...).tukey()``) on each of the two
topic sets of every sample: it is timed on a few samples and extrapolated. The bootstrap of
MD1's system effects is closed form on a balanced design (one matrix product per batch of
replicates); the alternative refits ``irm.anova`` on every replicate (``_refit=True``, the path
unbalanced designs take), timed on a few replicates and extrapolated.

Run: python benchmarks/methodology.py [--quick]   (reads adhoc8 through irm.datasets;
set IRM_DATA_MIRROR=../shared/data/ir-scores to read the local copy). ``--quick`` uses 200
samples instead of 1000.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import irmodels as irm


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def naive_topic_sets(data, size: int, n: int, seed: int = 0) -> float:
    """Seconds per sample of the loop: MD1 + Tukey on X and on Y, swap counted by hand."""
    topics = np.array(sorted(data["topic"].unique(), key=int))
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(n):
        perm = rng.permutation(topics)
        hx = irm.anova("MD1", data[data["topic"].isin(perm[:size])]).tukey("system")
        hy = irm.anova("MD1", data[data["topic"].isin(perm[size:2 * size])]).tukey("system")
        _ = (np.sign(hx.pairs["diff"].to_numpy()) != np.sign(hy.pairs["diff"].to_numpy())).mean()
    return (time.perf_counter() - start) / n


def main() -> None:
    quick = "--quick" in sys.argv
    n_samples = 200 if quick else 1000
    data = irm.datasets.load("adhoc8", "AP")
    sizes = [5, 10, 25]
    print(f"TREC-8 ad hoc AP: 50 topics x 129 systems; {n_samples} samples per size, sizes "
          f"{sizes}; {os.cpu_count()} cores")

    t_tukey, study = timed(lambda: irm.studies.topic_sets(
        data, sizes=sizes, n_samples=n_samples, test="tukey", seed=0))
    print(f"topic_sets tukey (serial)        : {t_tukey:7.2f} s "
          f"({1000 * t_tukey / (n_samples * len(sizes)):.2f} ms per sample)")
    t_proc, study_p = timed(lambda: irm.studies.topic_sets(
        data, sizes=sizes, n_samples=n_samples, test="tukey", seed=0, backend="processes",
        n_workers=2))
    same = study.to_frame().equals(study_p.to_frame())
    print(f"topic_sets tukey (2 processes)   : {t_proc:7.2f} s  (same result: {same})")
    t_t, _ = timed(lambda: irm.studies.topic_sets(
        data, sizes=sizes, n_samples=n_samples, test="t", seed=0))
    print(f"topic_sets paired t (serial)     : {t_t:7.2f} s")
    t_w, _ = timed(lambda: irm.studies.topic_sets(
        data, sizes=[25], n_samples=50, test="wilcoxon", seed=0))
    print(f"topic_sets wilcoxon, 50 samples of 25 topics: {t_w:5.2f} s")

    per = np.mean([naive_topic_sets(data, c, 3) for c in sizes])
    naive_total = per * n_samples * len(sizes)
    print(f"loop of irm.anova + tukey        : {1000 * per:7.1f} ms per sample -> "
          f"{naive_total:7.1f} s extrapolated; ratio {naive_total / t_tukey:5.1f}x")

    fit = irm.anova("MD1", data)
    t_boot, boot = timed(lambda: irm.studies.bootstrap_effects(fit, n_resamples=1000, seed=0))
    ratio = float((boot.effects["se"] / boot.effects["se_model"]).mean())
    print(f"bootstrap_effects MD1, 1000 reps : {t_boot:7.2f} s (mean bootstrap/analytic SE "
          f"{ratio:.4f})")
    t_ref, _ = timed(lambda: irm.studies.bootstrap_effects(fit, n_resamples=20, seed=0, _refit=True))
    ref_total = t_ref / 20 * 1000
    print(f"refit with irm.anova per replicate: {ref_total:7.1f} s extrapolated to 1000; "
          f"ratio {ref_total / t_boot:5.1f}x")


if __name__ == "__main__":
    main()
