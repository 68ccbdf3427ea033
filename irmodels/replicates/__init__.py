"""Replicates of an evaluation: collection shards and document samples (topic subsets are drawn by
``irm.studies.topic_sets``).

Names are imported lazily: ``irm.replicates.assign_shards`` (documents to shards) and
``irm.replicates.document_samples`` (the document-sample simulation).
"""

from __future__ import annotations

from irmodels._lazy import attach

_LAZY = {
    "assign_shards": "irmodels.replicates.sharding:assign_shards",
    "shard_splits": "irmodels.replicates.sharding:shard_splits",
    "read_docids": "irmodels.replicates.sharding:read_docids",
    "docids_from": "irmodels.replicates.sharding:docids_from",
    "document_samples": "irmodels.replicates.documents:document_samples",
    "sample_record": "irmodels.replicates.documents:sample_record",
    "fit_simulator": "irmodels.replicates.simulation:fit_simulator",
    "simulate_topics": "irmodels.replicates.simulation:simulate_topics",
    "TopicSimulator": "irmodels.replicates.simulation:TopicSimulator",
}


__getattr__, __dir__ = attach(__name__, _LAZY)
