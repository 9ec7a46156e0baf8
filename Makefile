# icepark: `make run` runs the main job, `make test` runs every check. Both install first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JAVAREF := .venv-javaref
JAVAREF_STAMP := $(JAVAREF)/.installed

.PHONY: install javaref run test test-slow lint typecheck unit bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "icepark needs Python >= 3.11 (found $$($(PYTHON) --version))"; exit 1; }
	@command -v java >/dev/null || { echo "icepark needs Java 17 on PATH for Spark"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# The Java reference runtime's own environment (PySpark 3.5 and Iceberg's Spark runtime jar):
# it cannot share a process or a venv with icepark's PySpark 4. Tests drive it in a subprocess.
javaref: $(JAVAREF_STAMP)

$(JAVAREF_STAMP): tools/javaref/requirements.txt
	$(PYTHON) -m venv $(JAVAREF)
	$(JAVAREF)/bin/python -m pip install --quiet -r tools/javaref/requirements.txt
	@touch $(JAVAREF_STAMP)

run: $(STAMP)
	$(BIN)/icepark quickstart

lint: $(STAMP)
	$(BIN)/ruff check

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers, a file's tests on one of them: each worker shares one Spark session (and one
# Java reference session) across its files. The suite waits on JVMs far more than it computes,
# so two keep both cores busy. Files are handed out in collection order, the longest first
# (tests/conftest.py). Tests marked `slow` (minutes each: they restart Spark many times; or
# variants whose code paths the other variants take) run with `make test-slow`.
unit: $(STAMP) $(JAVAREF_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not slow"

# The two environments install side by side (each pip mostly waits on one core or the disk).
test:
	@$(MAKE) --no-print-directory -j2 install javaref
	@$(MAKE) --no-print-directory lint typecheck unit

test-slow: $(STAMP) $(JAVAREF_STAMP)
	$(BIN)/python -m pytest -m slow

bench: $(STAMP)
	PYTHONPATH=src:. $(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(JAVAREF) warehouse build src/*.egg-info
