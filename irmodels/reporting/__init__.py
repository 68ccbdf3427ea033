"""irmodels.reporting."""
