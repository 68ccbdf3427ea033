"""Reporting: the variance-component report, its figures and its extension point.

``assemble_report(fit, tukey=..., components=..., gstudy=..., ...)`` assembles results that
already exist into a :class:`Report` (``to_html()``, ``to_markdown()``, ``latex_tables()``,
``save()``); other results render their own :class:`Section` and are passed through
``sections=``. ``irm.report(*results)`` (``irmodels.reporting.report.report``) assembles a page
from any results' ``to_section()``. Nothing here fits a model or computes a statistic: the driver that does is
``irm.build_report`` (:mod:`irmodels.analysis`).
"""

from __future__ import annotations

from irmodels._lazy import attach

__all__ = ["Report", "Section", "assemble_report", "plots"]

__getattr__, __dir__ = attach(
    __name__,
    {
        "assemble_report": "irmodels.reporting.report:assemble_report",
        "Report": "irmodels.reporting.report:Report",
        "Section": "irmodels._section:Section",
        "plots": "irmodels.reporting.plots",
    },
    removed={
        "build_report": (
            "irmodels.reporting no longer fits models: use irm.build_report(data, ...) "
            "(irmodels.analysis), or irmodels.reporting.assemble_report(fit, ...) with results "
            "you computed."
        ),
    },
)
