"""Reporting: the variance-component report, its figures and its extension point.

``assemble_report(fit, tukey=..., components=..., gstudy=..., ...)`` assembles results that
already exist into a :class:`Report` (``to_html()``, ``to_markdown()``, ``latex_tables()``,
``save()``); other results render their own :class:`Section` and are passed through
``sections=``. Nothing here fits a model or computes a statistic: the driver that does is
``irm.build_report`` (:mod:`irmodels.analysis`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Report", "Section", "assemble_report", "plots"]

_NAMES = {
    "assemble_report": "irmodels.reporting.report",
    "Report": "irmodels.reporting.report",
    "Section": "irmodels._section",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name == "plots":
        return importlib.import_module("irmodels.reporting.plots")
    if name == "build_report":
        raise AttributeError(
            "irmodels.reporting no longer fits models: use irm.build_report(data, ...) "
            "(irmodels.analysis), or irmodels.reporting.assemble_report(fit, ...) with results "
            "you computed."
        )
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'irmodels.reporting' has no attribute {name!r}")
