"""Experiment drivers that combine the stages: shards, document samples, topic sets.

``irm.studies.shards(...)`` runs the shard study; ``irm.studies.document_samples`` is a module
with ``validate`` and ``compare_tests``.
"""

from __future__ import annotations

from irmodels._lazy import attach

_LAZY = {
    "shards": "irmodels.studies.shard_study:shards",
    "ShardStudy": "irmodels.studies.shard_study:ShardStudy",
    "document_samples": "irmodels.studies.document_samples",
    "topic_sets": "irmodels.studies.topic_set_study:topic_sets",
    "TopicSetStudy": "irmodels.studies.topic_set_study:TopicSetStudy",
    "bootstrap_effects": "irmodels.studies.bootstrap:bootstrap_effects",
    "BootstrapEffects": "irmodels.studies.bootstrap:BootstrapEffects",
    "bootstrap_anova": "irmodels.studies.anova_bootstrap:bootstrap_anova",
    "BootstrapAnova": "irmodels.studies.anova_bootstrap:BootstrapAnova",
    "pooling_bias": "irmodels.studies.pooling:pooling_bias",
    "PoolingBiasStudy": "irmodels.studies.pooling:PoolingBiasStudy",
    "test_errors": "irmodels.studies.error_rates:test_errors",
    "ErrorRateStudy": "irmodels.studies.error_rates:ErrorRateStudy",
}


__getattr__, __dir__ = attach(__name__, _LAZY)
