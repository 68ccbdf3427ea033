"""Moved to :mod:`irmodels.stats.effects` (issue 26: the kernels the models call live below
them); this module re-exports its public names so that old imports keep working."""

from irmodels.stats.effects import (
    ROUNDING,
    anova_power,
    check_margin,
    cohen_f2,
    eta_squared,
    noncentral_t_interval,
    omega2_magnitude,
    paired_effects,
    partial_eta_squared,
    partial_omega_squared,
    rounding_noise,
)

__all__ = ["ROUNDING", "anova_power", "check_margin", "cohen_f2", "eta_squared",
           "noncentral_t_interval", "omega2_magnitude", "paired_effects", "partial_eta_squared",
           "partial_omega_squared", "rounding_noise"]
