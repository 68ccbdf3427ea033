"""irmodels.stats: the statistical kernels the models and the analyses call.

The studentized range (:mod:`~irmodels.stats.studentized`), Tukey's HSD and Dunnett's test on a
fitted error term (:mod:`~irmodels.stats.tukey`, :mod:`~irmodels.stats.dunnett`), effect sizes
(:mod:`~irmodels.stats.effects`), the multiplicity adjustment
(:mod:`~irmodels.stats.multiplicity`), the paired and resampling tests of all pairs at once
(:mod:`~irmodels.stats.paired`, :mod:`~irmodels.stats.resampling`), the paired t-test's power
(:mod:`~irmodels.stats.power`), the tests of equal variances
(:mod:`~irmodels.stats.variance_tests`) and the G-study result and its variance-component
kernels (:mod:`~irmodels.stats.gtheory`). Nothing here fits a model: this
layer sits below ``irmodels.models`` and imports only data, replicates, formula and the base
modules. Importing it loads nothing (each module is imported on its own).
"""
