"""The model formula language: an lme4-style subset parsed by the project's own grammar.

``parse_formula(text, columns=None) -> ModelSpec``; presets ``MD1`` ... ``MD6``.
"""

from __future__ import annotations

from irmodels.formula.spec import (
    DEFAULT_EPSILON,
    TRANSFORMS,
    ModelSpec,
    RandomTerm,
    Term,
    apply_transform,
)

__all__ = ["ModelSpec", "Term", "RandomTerm", "TRANSFORMS", "DEFAULT_EPSILON", "apply_transform",
           "parse_formula", "PRESETS", "default_preset", "resolve"]

from irmodels.formula.parser import PRESETS, default_preset, parse_formula, resolve
