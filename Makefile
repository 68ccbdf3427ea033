# Two commands do all set-up on a fresh machine:
#   make report   -> builds the environment and writes the variance-component report on the demo collection
#   make test     -> builds the environment and runs the whole test suite (doctests and notebooks included)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
IRM_DATA_MIRROR ?= $(abspath ../shared/data/ir-scores)
export IRM_DATA_MIRROR
# The README's test command draws the same property-test examples on every run and machine (a fresh
# clone's verdict must not depend on the luck of the draw); `pytest` run directly draws new ones.
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE

# The oldest supported Python (pyenv's, when python3.11 is not on PATH) for `make test-min`.
PYMIN ?= $(shell for p in python3.11 $$HOME/.pyenv/versions/3.11*/bin/python3.11; do \
	$$p -c 'import sys' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV_MIN ?= .venv-min

.PHONY: env report test test-min bench docs lint

$(BIN)/irmodels: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(BIN)/irmodels

env: $(BIN)/irmodels

report: env
	$(BIN)/irmodels report --demo --out irmodels-report --force

# --no-loadscope-reorder keeps the file order of conftest.py (the slowest files first).
# PYTHONDONTWRITEBYTECODE is emptied for the suite: the notebook kernels and the CLI subprocesses
# then load irmodels from the bytecode the first process wrote instead of compiling it each time.
test: env
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder

# The suite on the declared minimum versions (.ci/constraints-min.txt) and the oldest Python.
test-min:
	@test -n "$(PYMIN)" || { echo "make test-min: no python3.11 found (set PYMIN=...)"; exit 2; }
	test -x $(VENV_MIN)/bin/python || $(PYMIN) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/python -m pip install -q --upgrade pip
	$(VENV_MIN)/bin/python -m pip install -q -c .ci/constraints-min.txt -e ".[test]"
	$(VENV_MIN)/bin/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -p no:cacheprovider

# Lint and types (ruff and mypy, the `dev` extra; configured in pyproject.toml). CI runs it.
lint: env
	$(BIN)/python -m pip install -q -e ".[dev]"
	$(BIN)/ruff check irmodels tests benchmarks notebooks scripts conftest.py
	$(BIN)/mypy irmodels

# The documentation site (MkDocs, strict) in site/.
docs: env
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -d site

bench: env
	for f in benchmarks/*.py; do $(BIN)/python $$f || exit 1; done
