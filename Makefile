# Developer targets; CI (.ci/run) runs `make lint type test` after installing.
#   make install   the test environment (.venv): memwell, every plugin, the dev tools
#   make lint      ruff, ruff format --check, the import contracts (lint-imports)
#   make type      mypy --strict on core and on every first-party plugin and example
#   make test      the test suite (PYTEST_ARGS="tests/core -x" for a part of it)
#   make format    apply ruff's formatting and fixes
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
PLUGIN_PACKAGES := $(filter-out %.egg-info,$(wildcard plugins/*/memwell_* \
	plugins/providers/*/memwell_* examples/*/memwell_*))

.PHONY: install lint type test format check

install:
	bash scripts/install.sh --test $(VENV)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

type:
	$(BIN)/mypy
	$(BIN)/mypy --strict $(PLUGIN_PACKAGES)

test:
	$(BIN)/python -m pytest $(PYTEST_ARGS)

format:
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

check: lint type test
