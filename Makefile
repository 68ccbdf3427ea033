# Two commands do all set-up on a fresh machine:
#   make report   -> builds the environment and writes the variance-component report on the demo collection
#   make test     -> builds the environment and runs the whole test suite (doctests and notebooks included)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
IRM_DATA_MIRROR ?= $(abspath ../shared/data/ir-scores)
export IRM_DATA_MIRROR

.PHONY: env report test bench

$(BIN)/irmodels: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(BIN)/irmodels

env: $(BIN)/irmodels

report: env
	$(BIN)/irmodels report --demo --out irmodels-report --force

test: env
	$(BIN)/python -m pytest -q

bench: env
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done
