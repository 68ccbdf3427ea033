"""Notebook 08 section: Webber's design workflow (trial sizing, sequential designs, common sigma)."""

from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell(
        "## Designing an experiment from a trial\n\n"
        "Webber (2010, ch. 5) sizes an experiment from a small trial: estimate the SD sigma of "
        "the per-topic differences on a few topics, take its one-sided upper confidence bound "
        "`sigma_u = sigma_hat sqrt((n-1) / qchisq(alpha, n-1))`, and find the topics the paired "
        "t-test needs at `sigma_u`. Here the trial is the first 12 TREC-8 topics, with sigma the "
        "90th percentile of the pairs' SDs, to detect a difference of 0.05 in AP. "
        "Page: `docs/design.md`."
    ),
    new_code_cell(
        "trial = ap[ap['topic'].isin(ap['topic'].cat.categories[:12])]\n"
        "sizing = irm.design.size_from_trial(trial, delta=0.05, quantile=0.9)\n"
        "sizing.table.T.round(4)"
    ),
    new_markdown_cell(
        "Sizing on the point estimate would give fewer topics, whose power is well below 0.8 if "
        "sigma is at its upper bound (`power_point_at_upper`). The sizing also assumes the pairs "
        "share one sigma; the resampling test (pooled centred differences drawn for every pair) "
        "says the ten best TREC-8 runs' pairs do not:"
    ),
    new_code_cell(
        "top = ap.groupby('system', observed=True)['score'].mean().nlargest(10).index\n"
        "common = irm.design.common_sigma_test(ap[ap['system'].isin(top)], n_resamples=500, seed=0)\n"
        "common"
    ),
    new_markdown_cell(
        "The tempting alternative, adding topics until the difference is significant, tests the "
        "same null hypothesis many times. Simulated under the null (no true difference), testing "
        "at 10, 15, ..., 50 topics rejects far more often than the nominal 5%, while one test on "
        "all 50 topics keeps it:"
    ),
    new_code_cell(
        "seq = irm.design.sequential(start=10, step=5, max_topics=50, n_sim=10000, seed=0)\n"
        "print(round(seq.rate, 4), round(seq.fixed_rate, 4))\n"
        "seq.plot()"
    ),
]
