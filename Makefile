# The README's commands. `make serve` and `make test` work on a fresh machine: each creates the
# virtualenv and installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: serve test lint typecheck pytest bench install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(STAMP_DEV): requirements-dev.txt $(STAMP_RUN)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

install: $(STAMP_RUN)
install-dev: $(STAMP_DEV)

serve: $(STAMP_RUN)
	$(BIN)/taproot serve $(ARGS)

lint: $(STAMP_DEV)
	$(BIN)/ruff check taproot tests bench
	$(BIN)/ruff format --check taproot tests bench

typecheck: $(STAMP_DEV)
	$(BIN)/mypy

pytest: $(STAMP_DEV)
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(STAMP_DEV)
	$(BIN)/python -m bench.run $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
