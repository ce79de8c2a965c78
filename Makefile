# Every target installs what it needs first: a virtual env in .venv, the generated gRPC
# code in service/pb, a redis-server binary (Debian package) for the tests, and the buf
# CLI (npm) for the proto lint.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PB := service/pb/gostop/v1/game_pb2.py
BUF := .tools/node_modules/.bin/buf
BUF_VERSION := 1.75.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint typecheck bench golden redis-server clean demo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(PB): $(STAMP) $(wildcard proto/gostop/v1/*.proto) scripts/gen_proto.py
	$(PY) scripts/gen_proto.py

$(BUF):
	npm install --silent --no-audit --no-fund --prefix .tools @bufbuild/buf@$(BUF_VERSION)

redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		$(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q redis-server; }

run: $(PB)
	$(PY) -m service serve $(ARGS)

demo: $(STAMP)
	$(PY) -m engine demo $(ARGS)

test: $(PB) $(BUF) redis-server
	$(PY) -m ruff check engine service tests scripts
	$(PY) -m mypy
	$(BUF) lint proto
	$(PY) -m pytest

lint: $(PB) $(BUF)
	$(PY) -m ruff check engine service tests scripts
	$(BUF) lint proto

typecheck: $(PB)
	$(PY) -m mypy

# Engine benchmark (ARGS go to it), then the service benchmark over loopback (SERVICE_ARGS go to
# it, e.g. SERVICE_ARGS="--inflight 1,8,32,64 --store memory"); it starts its own redis-server.
bench: $(PB) redis-server
	$(PY) scripts/bench.py $(ARGS)
	$(PY) scripts/bench_service.py $(SERVICE_ARGS)

golden: $(STAMP)
	$(PY) scripts/regen_golden.py

clean:
	rm -rf $(VENV) .tools service/pb .mypy_cache .pytest_cache .ruff_cache .hypothesis
