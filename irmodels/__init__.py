"""irmodels: statistics of information-retrieval evaluation.

Long-format evaluation data in, ANOVA and mixed-effects models, Tukey HSD, effect sizes,
generalizability theory, standardization, pairwise tests, power and rank similarity out.

Public names are resolved lazily (on first access), so ``import irmodels`` stays fast and an
optional dependency is only imported by the feature that needs it.

>>> import irmodels as irm
>>> irm.IRModelsError.__name__
'IRModelsError'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from irmodels._lazy import attach
from irmodels.errors import (
    ArgumentError,
    BoundaryFitWarning,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DataQualityWarning,
    DatasetError,
    DesignError,
    FormulaError,
    IRModelsError,
    IRModelsWarning,
    MissingDependencyError,
    MissingFileError,
    ModelError,
    NegativeVarianceWarning,
    UnbalancedDesignWarning,
    UndefinedValueWarning,
)

__version__ = "0.2.0"

# public name -> "module:attribute" (or "module" for a submodule)
_LAZY: dict[str, str] = {
    # data: the long-format contract
    "frame": "irmodels.data.frame:frame",
    "to_wide": "irmodels.data.frame:to_wide",
    "from_wide": "irmodels.data.frame:from_wide",
    "balance": "irmodels.data.frame:balance",
    "filter_systems": "irmodels.data.frame:filter_systems",
    # data: readers and writers
    "read_matrix": "irmodels.data.io:read_matrix",
    "write_matrix": "irmodels.data.io:write_matrix",
    "read_trec_eval": "irmodels.data.io:read_trec_eval",
    "read_run": "irmodels.data.io:read_run",
    "read_runs": "irmodels.data.io:read_runs",
    "write_run": "irmodels.data.io:write_run",
    "read_qrels": "irmodels.data.io:read_qrels",
    "write_qrels": "irmodels.data.io:write_qrels",
    "read_frame": "irmodels.data.io:read_frame",
    "write_frame": "irmodels.data.io:write_frame",
    # data: measures, datasets, demo collection, standardization
    "evaluate": "irmodels.data.measures:evaluate",
    "aggregate": "irmodels.data.aggregate:aggregate",
    "datasets": "irmodels.data.datasets",
    "collection": "irmodels.data.collection",
    "Standardizer": "irmodels.data.standardize:Standardizer",
    "read_zscores": "irmodels.data.standardize:read_zscores",
    "write_zscores": "irmodels.data.standardize:write_zscores",
    # formulas and models
    "parse_formula": "irmodels.formula:parse_formula",
    "models": "irmodels.models",
    "anova": "irmodels.models.anova:anova",
    "mixed": "irmodels.models.mixed:mixed",
    "compare_models": "irmodels.models.mixed:compare_models",
    # inference
    "tukey_hsd": "irmodels.stats.tukey:tukey_hsd",
    "dunnett": "irmodels.stats.dunnett:dunnett",
    "p_adjust": "irmodels.stats.multiplicity:p_adjust",
    "ptukey": "irmodels.stats.studentized:ptukey",
    "qtukey": "irmodels.stats.studentized:qtukey",
    "gstudy": "irmodels.inference.gtheory:gstudy",
    "pairwise": "irmodels.inference.pairwise:pairwise",
    "effect_size": "irmodels.inference.pairwise:effect_size",
    "compare": "irmodels.inference.compare:compare",
    "power": "irmodels.inference.power",
    "design": "irmodels.inference.design",
    "variability": "irmodels.inference.variability",
    "kendall_tau": "irmodels.inference.rank:kendall_tau",
    "tau_ap": "irmodels.inference.rank:tau_ap",
    "rbo": "irmodels.inference.rank:rbo",
    "rbo_p_for_depth": "irmodels.inference.rank:rbo_p_for_depth",
    "average_overlap": "irmodels.inference.rank:average_overlap",
    "comparability": "irmodels.inference.comparability:comparability",
    "meta_analysis": "irmodels.inference.meta:meta_analysis",
    "pooling": "irmodels.studies.pooling",
    # replicates, studies, parallel, reporting
    "replicates": "irmodels.replicates",
    "studies": "irmodels.studies",
    "parallel": "irmodels.parallel",
    "reporting": "irmodels.reporting",
    "build_report": "irmodels.analysis:build_report",
    "report": "irmodels.reporting.report:report",
    # options
    "set_options": "irmodels._threads:set_options",
    "get_options": "irmodels._threads:get_options",
}

if TYPE_CHECKING:  # static view of the lazy names (scripts/sync_lazy_types.py)
    from irmodels.data.frame import frame
    from irmodels.data.frame import to_wide
    from irmodels.data.frame import from_wide
    from irmodels.data.frame import balance
    from irmodels.data.frame import filter_systems
    from irmodels.data.io import read_matrix
    from irmodels.data.io import write_matrix
    from irmodels.data.io import read_trec_eval
    from irmodels.data.io import read_run
    from irmodels.data.io import read_runs
    from irmodels.data.io import write_run
    from irmodels.data.io import read_qrels
    from irmodels.data.io import write_qrels
    from irmodels.data.io import read_frame
    from irmodels.data.io import write_frame
    from irmodels.data.measures import evaluate
    from irmodels.data.aggregate import aggregate
    from irmodels.data import datasets
    from irmodels.data import collection
    from irmodels.data.standardize import Standardizer
    from irmodels.data.standardize import read_zscores
    from irmodels.data.standardize import write_zscores
    from irmodels.formula import parse_formula
    from irmodels import models
    from irmodels.models.anova import anova
    from irmodels.models.mixed import mixed
    from irmodels.models.mixed import compare_models
    from irmodels.stats.tukey import tukey_hsd
    from irmodels.stats.dunnett import dunnett
    from irmodels.stats.multiplicity import p_adjust
    from irmodels.stats.studentized import ptukey
    from irmodels.stats.studentized import qtukey
    from irmodels.inference.gtheory import gstudy
    from irmodels.inference.pairwise import pairwise
    from irmodels.inference.pairwise import effect_size
    from irmodels.inference.compare import compare
    from irmodels.inference import power
    from irmodels.inference import design
    from irmodels.inference import variability
    from irmodels.inference.rank import kendall_tau
    from irmodels.inference.rank import tau_ap
    from irmodels.inference.rank import rbo
    from irmodels.inference.rank import rbo_p_for_depth
    from irmodels.inference.rank import average_overlap
    from irmodels.inference.comparability import comparability
    from irmodels.inference.meta import meta_analysis
    from irmodels.studies import pooling
    from irmodels import replicates
    from irmodels import studies
    from irmodels import parallel
    from irmodels import reporting
    from irmodels.analysis import build_report
    from irmodels.reporting.report import report
    from irmodels._threads import set_options
    from irmodels._threads import get_options
# end of the static view

__all__ = sorted(
    [*_LAZY, "ArgumentError", "IRModelsError", "IRModelsWarning", "DataFormatError", "DesignError", "FormulaError",
     "ModelError", "ConvergenceError", "DatasetError", "MissingDependencyError", "MissingFileError",
     "UnbalancedDesignWarning", "BoundaryFitWarning", "NegativeVarianceWarning",
     "UndefinedValueWarning", "DataQualityWarning", "ConvergenceWarning", "__version__"]
)


__getattr__, __dir__ = attach(__name__, _LAZY, eager=__all__)
