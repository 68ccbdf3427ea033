"""Model fitting: crossed ANOVA (``irm.anova``) and linear mixed models (``irm.mixed``).

The six models of Ferro & Sanderson (SIGIR 2019) are available as formula strings
``MD1`` ... ``MD6``; ``irm.anova("MD6", data)`` accepts the preset names directly.

>>> import irmodels as irm
>>> irm.models.MD6
'score ~ topic + system + shard + topic:system + topic:shard + system:shard'
"""

from __future__ import annotations

from irmodels.formula.parser import PRESETS

MD1 = PRESETS["MD1"]
MD2 = PRESETS["MD2"]
MD3 = PRESETS["MD3"]
MD4 = PRESETS["MD4"]
MD5 = PRESETS["MD5"]
MD6 = PRESETS["MD6"]

__all__ = ["MD1", "MD2", "MD3", "MD4", "MD5", "MD6", "PRESETS"]
