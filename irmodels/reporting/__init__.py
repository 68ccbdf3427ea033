"""Reporting: the variance-component report, its figures and its extension point.

``build_report(data, model="MD1")`` fits the model and returns a :class:`Report`
(``to_html()``, ``to_markdown()``, ``latex_tables()``, ``save()``); other analyses add their
own :class:`Section` through ``sections=``. Nothing here computes a statistic.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Report", "Section", "build_report", "plots"]

_NAMES = {
    "build_report": "irmodels.reporting.report",
    "Report": "irmodels.reporting.report",
    "Section": "irmodels.reporting.report",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name == "plots":
        return importlib.import_module("irmodels.reporting.plots")
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'irmodels.reporting' has no attribute {name!r}")
