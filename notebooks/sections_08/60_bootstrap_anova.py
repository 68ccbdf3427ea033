"""Notebook 08 section: bootstrap ANOVA (topics resampled) beside Tukey's HSD."""

from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell(
        "## Bootstrap ANOVA: a topic-bootstrap analogue of Tukey's HSD\n\n"
        "Voorhees, Samarov & Soboroff (2017) resample the topics, refit the topic x system "
        "model (MD1) and take the studentized range of each resample's centred system means; "
        "its 95% quantile replaces Tukey's studentized-range quantile as the critical value "
        "for all pairwise differences. On TREC-8 AP (1000 resamples):"
    ),
    new_code_cell(
        "boot = irm.studies.bootstrap_anova(ap, n_resamples=1000, seed=0)\n"
        "print(repr(boot))\n"
        "boot.agreement"
    ),
    new_code_cell("boot.plot()"),
    new_markdown_cell(
        "Tukey's HSD assumes normal residuals with one variance; TREC runs' per-topic "
        "differences have unequal variances, and the bootstrap, which keeps each topic's scores "
        "together, gives a larger critical value: the pairs only Tukey declares different are "
        "those whose `q` falls between the two values. Page: `docs/bootstrap.md`."
    ),
    new_code_cell(
        "boot.pairs[boot.pairs['tukey_reject'] & ~boot.pairs['reject']]"
        ".sort_values('q').head().round(4)"
    ),
]
