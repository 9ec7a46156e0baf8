# icepark: `make run` runs the main job, `make test` runs every check. Both install first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint typecheck unit bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "icepark needs Python >= 3.11 (found $$($(PYTHON) --version))"; exit 1; }
	@command -v java >/dev/null || { echo "icepark needs Java 17 on PATH for Spark"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/icepark quickstart

lint: $(STAMP)
	$(BIN)/ruff check

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest

test: lint typecheck unit

bench: $(STAMP)
	PYTHONPATH=src:. $(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) warehouse build src/*.egg-info
