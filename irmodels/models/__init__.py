"""Model fitting: crossed ANOVA (``irm.anova``) and linear mixed models (``irm.mixed``).

The six models of Ferro & Sanderson (SIGIR 2019) are available as formula strings
``MD1`` ... ``MD6`` (see :data:`irmodels.formula.PRESETS`).
"""

from __future__ import annotations

MD1 = "score ~ topic + system"
MD2 = "score ~ topic + system"
MD3 = "score ~ topic + system + topic:system"
MD4 = "score ~ topic + system + shard + topic:system"
MD5 = "score ~ topic + system + shard + topic:system + system:shard"
MD6 = "score ~ topic + system + shard + topic:system + topic:shard + system:shard"

__all__ = ["MD1", "MD2", "MD3", "MD4", "MD5", "MD6"]
