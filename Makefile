# Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck bench golden clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m engine demo $(ARGS)

test: $(STAMP)
	$(PY) -m ruff check engine tests scripts
	$(PY) -m mypy
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check engine tests scripts

typecheck: $(STAMP)
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) scripts/bench.py $(ARGS)

golden: $(STAMP)
	$(PY) scripts/regen_golden.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
