"""irmodels.inference."""
