"""irmodels.data."""
