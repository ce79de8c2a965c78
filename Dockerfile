# The gostop game service image: `docker build -t gostop:0.1.0 .`
#
# Three stages: `web` builds the web table (clients/web, on the TypeScript client clients/typescript)
# with Node, as `make web` does; `build` makes a virtual environment in /opt/venv and installs the
# project with its [server] extra into it (non-editable, so the venv is self-contained; the build
# generates the gRPC code of proto/ into the wheel, see setup.py, and ships the web table as package
# data); the final stage is python:3.11-slim with that venv only: no Node, no compilers, no pip
# cache, no sources, running as an unprivileged numeric user. See docs/kubernetes.md.

ARG PYTHON_IMAGE=python:3.11-slim
ARG NODE_IMAGE=node:22-slim

FROM ${NODE_IMAGE} AS web
ENV npm_config_audit=false \
    npm_config_fund=false \
    npm_config_update_notifier=false
# The TypeScript client first: the page imports its browser entry (@gostop/client, file:../typescript).
# npm ci installs the lock files' versions; the dependencies get their own layers.
WORKDIR /src/clients/typescript
COPY clients/typescript/package.json clients/typescript/package-lock.json ./
RUN npm ci --ignore-scripts
COPY proto /src/proto
COPY clients/typescript ./
RUN npm run generate && npm run build
WORKDIR /src/clients/web
COPY clients/web/package.json clients/web/package-lock.json ./
RUN npm ci --ignore-scripts
COPY clients/web ./
# vite build writes the page into the Python package's folder (clients/python/gostop/web).
RUN npm run build -- --logLevel warn && test -f /src/clients/python/gostop/web/index.html

FROM ${PYTHON_IMAGE} AS build
# pip compiles the bytecode at install time: the read-only root filesystem of the pods cannot take it later.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Every package from requirements.lock, by version and hash (docs/development.md): uv (pinned, in
# its own venv, which the final stage does not copy) installs the [server] extra's dependencies and
# the build group - grpcio-tools generates the gRPC code during the build below, protoc-gen-connectrpc
# the Connect services of the HTTP port, and mypy's mypyc compiles the engine's hot modules with the
# C compiler installed here (setup.py) - constrained to the lock, whose hashes it checks (TLS roots
# from the image's certificate store, as pip takes them). Their own
# layer: they change less often than the code. The runtime stage has no compiler: the compiled
# modules need none.
ARG UV_VERSION=0.13.8
# The official Python images carry Python's headers; a Python of Debian's packages (a base made with
# mmdebstrap, see docs/kubernetes.md) has them in libpython3.X-dev, installed here when missing.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && if [ ! -f "$(python -c 'import sysconfig; print(sysconfig.get_path("include"))')/Python.h" ]; then \
        apt-get install -y --no-install-recommends \
        "libpython$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev"; fi \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/uv && /opt/uv/bin/pip install "uv==${UV_VERSION}"
COPY pyproject.toml requirements.lock ./
RUN /opt/uv/bin/uv pip install --python /opt/venv/bin/python --no-cache --system-certs --constraint requirements.lock \
    --requirements pyproject.toml --extra server --group pyproject.toml:build
COPY setup.py MANIFEST.in README.md ./
COPY proto ./proto
COPY scripts/gen_proto.py ./scripts/gen_proto.py
COPY engine ./engine
COPY service ./service
COPY clients/python ./clients/python
COPY --from=web /src/clients/python/gostop/web ./clients/python/gostop/web
# Build and install with the tools installed above (no build isolation: nothing fetched at build
# time beyond the dependencies), then import from the venv (-I: not from /src) to prove it was
# installed, its engine compiled, the web table with it (the server serves it at / of the HTTP port).
RUN pip install --no-build-isolation --no-deps './[server]' \
    && python -I -c "import gostop.v1.game_pb2_grpc, gostop.service.server, gostop.engine" \
    && python -I -c "import gostop.engine as e; assert e.BUILD.compiled, e.BUILD.reason" \
    && python -I -c "from gostop.service.http import web_root; assert web_root(), 'no web table'" \
    && gostop settings > /dev/null
# The build tools leave the venv, which the final stage copies whole: the code generators (grpcio-tools
# carries protoc, a compiler), mypy (mypyc, a compiler) and the packages only it uses, setuptools and
# wheel. pip stays, for images built on this one (plugin bots installed beside the server). The
# server, its engine compiled, must still start without them.
RUN pip uninstall --yes grpcio-tools protoc-gen-connectrpc mypy ast-serialize pathspec setuptools wheel \
    && python -I -c "import gostop.v1.game_pb2_grpc, gostop.service.server, gostop.engine" \
    && python -I -c "import gostop.engine as e; assert e.BUILD.compiled, e.BUILD.reason" \
    && gostop settings > /dev/null
# gostop-healthcheck [SERVICE]: the probe of HEALTHCHECK (and of the Helm chart when the server
# serves TLS, which the kubelet's gRPC probes cannot speak): grpc.health.v1 Check of SERVICE
# (default gostop.v1.GameService) on the port of GOSTOP_LISTEN; exit 0 when SERVING.
RUN printf '%s\n' \
    '#!/opt/venv/bin/python' \
    'import os, sys' \
    'import grpc' \
    'from grpc_health.v1 import health_pb2, health_pb2_grpc' \
    'port = os.environ.get("GOSTOP_LISTEN", "127.0.0.1:50051").rpartition(":")[2]' \
    'service = sys.argv[1] if len(sys.argv) > 1 else "gostop.v1.GameService"' \
    'target, cert = f"127.0.0.1:{port}", os.environ.get("GOSTOP_TLS_CERT", "")' \
    'if cert:' \
    '    with open(os.environ.get("GOSTOP_HEALTHCHECK_CA") or cert, "rb") as roots:' \
    '        credentials = grpc.ssl_channel_credentials(roots.read())' \
    '    name = os.environ.get("GOSTOP_HEALTHCHECK_SERVER_NAME", "")' \
    '    channel = grpc.secure_channel(target, credentials, [("grpc.ssl_target_name_override", name)] if name else [])' \
    'else:' \
    '    channel = grpc.insecure_channel(target)' \
    'try:' \
    '    request = health_pb2.HealthCheckRequest(service=service)' \
    '    status = health_pb2_grpc.HealthStub(channel).Check(request, timeout=3).status' \
    'except grpc.RpcError as error:' \
    '    sys.exit(f"unhealthy: {error.code().name}")' \
    'print(health_pb2.HealthCheckResponse.ServingStatus.Name(status))' \
    'sys.exit(0 if status == health_pb2.HealthCheckResponse.SERVING else 1)' \
    > /opt/venv/bin/gostop-healthcheck \
    && chmod 0755 /opt/venv/bin/gostop-healthcheck

FROM ${PYTHON_IMAGE} AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="gostop" \
      org.opencontainers.image.description="Go-Stop rules engine and gRPC game service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 gostop \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin gostop
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GOSTOP_LISTEN=0.0.0.0:50051 \
    GOSTOP_HTTP_LISTEN=0.0.0.0:8080 \
    GOSTOP_METRICS_HOST=0.0.0.0 \
    GOSTOP_METRICS_PORT=9464 \
    GOSTOP_LOG_FORMAT=json
WORKDIR /tmp
USER 10001:10001
# gRPC (GOSTOP_LISTEN), HTTP: Connect, gRPC-Web and the web table (GOSTOP_HTTP_LISTEN), and
# Prometheus metrics (GOSTOP_METRICS_PORT).
EXPOSE 50051 8080 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 CMD ["gostop-healthcheck"]
# SIGTERM starts the graceful stop: NOT_SERVING, then GOSTOP_DRAIN_SECONDS of draining.
STOPSIGNAL SIGTERM
ENTRYPOINT ["gostop", "serve"]
