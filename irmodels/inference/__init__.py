"""irmodels.inference: the analyses that take data or a fitted model, above ``irmodels.models``.

``irm.gstudy`` (:mod:`~irmodels.inference.gtheory`), pairwise tests and effect sizes
(:mod:`~irmodels.inference.pairwise`), the comparison table (:mod:`~irmodels.inference.compare`),
power and topic-set size (:mod:`~irmodels.inference.power`, :mod:`~irmodels.inference.design`),
score variability, rank correlations, comparability, meta-analysis and residual diagnostics. The
kernels they and the models call live in :mod:`irmodels.stats`; ``irmodels.inference.tukey``,
``.dunnett``, ``.studentized`` and ``.effects`` re-export them under their old paths.
"""
