"""The deployment artefacts: the Helm chart (helm/gostop) and the container image (Dockerfile).

The chart is linted and rendered by a pinned helm, with its defaults and with every option on
(tests/helm/all-on.yaml); every rendered manifest is validated by kubeconform against the Kubernetes
API schemas of the oldest and the newest Kubernetes the chart supports (the schemas of the PyPI
package kubernetes-validate; the custom resources against tests/schemas/); values.schema.json
refuses bad values, one test per rule; the rendered Deployment, Service, probes, settings and alerts
are compared with what the server really listens on, serves and exports (service/config.py,
service/server.py, service/metrics.py); the bot workers' command line is parsed by the parser of
`gostop bots serve` and their environment resolved as the kubelet would, and the rendered worker
is run against a server with the chart's settings on a real Redis; that server is also called on its
HTTP port as a gateway forwards browsers' requests (the web table, Connect, CORS). The tournament's
Jobs are run as rendered too: the shards against such a server (on a real Redis behind a Sentinel,
and on the memory store), recording into the release's Redis ladder or not at all, then the merge
Job's `gostop ladder --merge` (its command line parsed by the real parser), into that Redis or the
SQLite file on the results volume. The Dockerfile is
linted structurally and by hadolint, its health probe is run against a real server, and the server
is shown to write nothing outside /tmp (so that readOnlyRootFilesystem holds).

The tools come from `make helm-tools` (pinned in the Makefile, kept in .tools/); a missing tool
fails these tests with the command that installs it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import json
import os
import posixpath
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from gostop.service import config as server_config
from gostop.service.calls import SERVICE
from gostop.service.metrics import Metrics
from gostop.service.programs import botworker
from gostop.service.programs.botworker import OUTCOMES, WorkerMetrics
from gostop.service.workers import worker_env
from gostop.tools import ladder
from gostop.v1 import game_pb2 as pb

# Not in make check: the chart and the Dockerfile, with helm, kubeconform and hadolint.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "gostop"
TOOLS = ROOT / ".tools"
HELM = TOOLS / "bin" / "helm"
KUBECONFORM = TOOLS / "bin" / "kubeconform"
# The Python test tools are the lock's group helm-tests, in the project's venv.
VENV = ROOT / ".venv"
TOOLS_PYTHON = VENV / "bin" / "python"
HADOLINT = VENV / "bin" / "hadolint"
ALL_ON = ROOT / "tests" / "helm" / "all-on.yaml"
CRD_SCHEMAS = ROOT / "tests" / "schemas"
DOCKERFILE = ROOT / "Dockerfile"

RELEASE = "prod"
NAMESPACE = "games"
FULLNAME = "prod-gostop"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion: native gRPC probes are GA in
# 1.27) and the newest whose schemas kubernetes-validate ships.
KUBE_VERSIONS = ("1.27.0", "1.37.0")
EXTERNAL_REDIS = "redis+sentinel://:pw@sentinel-0.redis:26379,sentinel-1.redis:26379/mymaster/0"
SETTINGS = {s.env: s for s in server_config.SETTINGS}


def makefile_value(name: str) -> str:
    match = re.search(rf"^{name} := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"{name} is not set in the Makefile"
    return match.group(1).strip()


def tool(path: Path) -> Path:
    """A tool of `make helm-tools`; a missing one fails the test (never skips it)."""
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run `make helm-tools` (helm {makefile_value('HELM_VERSION')}"
                    f" and kubeconform {makefile_value('KUBECONFORM_VERSION')} from the Go module proxy, the Python"
                    " tools from requirements.lock); `make test` does it first")
    return path


def run(args: Sequence[str | Path], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True, timeout=120,
                          check=False)


# --- rendering ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    values: tuple[Path, ...] = ()
    sets: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out: list[str] = []
        for path in self.values:
            out += ["-f", str(path)]
        for item in self.sets:
            out += ["--set", item]
        return out


DEFAULT = Variant("default")
ALL = Variant("all-on", (ALL_ON,))
# all-on with an external Redis instead of the in-chart one (the Secret's URL, the NetworkPolicy's
# egress to it); and a plain production setup: external Redis, three replicas, nothing optional.
ESCAPED_REDIS = EXTERNAL_REDIS.replace(",", "\\,")  # --set splits on unescaped commas
ALL_EXTERNAL = Variant("all-on-external-redis", (ALL_ON,), (f"redis.url={ESCAPED_REDIS}",))
PRODUCTION = Variant("production", (), (f"redis.url={ESCAPED_REDIS}", "replicaCount=3",
                                       "secrets.tokenSecret=0123456789abcdef0123"))
# Production with bot workers at their defaults (a generated bot key, a fixed replica count) and the
# NetworkPolicies on an external Redis; and bot workers reading a Secret of the operator's own,
# which has no chart Secret to read settings from (so it is not among VARIANTS).
BOTS = Variant("bot-workers", (), (*PRODUCTION.sets, "botWorkers.enabled=true", "networkPolicy.enabled=true",
                                   "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true"))
OWN_SECRET_BOTS = Variant("bot-workers-own-secret", (), ("secrets.existingSecret=gostop-secrets",
                                                        "redis.urlFromSecret=true", "botWorkers.enabled=true"))
# Production for browsers: the HTTP port on another number, an HTTPRoute with a precise and a
# wildcard host name, a site of another origin allowed by CORS, the NetworkPolicy on.
PAGE_HOST = "play.example.com"
OTHER_SITE = "https://games.example.com"
BROWSERS = Variant("browsers", (), (
    *PRODUCTION.sets, "ports.http=8088", "httpRoute.enabled=true", "httpRoute.parentRefs[0].name=public",
    "httpRoute.parentRefs[0].namespace=gateway-system", f"httpRoute.hostnames[0]={PAGE_HOST}",
    "httpRoute.hostnames[1]=*.tables.example.com", f"config.corsOrigins[0]={OTHER_SITE}", "networkPolicy.enabled=true"))
# The HTTP port turned off: gRPC only.
NO_HTTP = Variant("no-http", (), ("ports.http=0", "networkPolicy.enabled=true"))
VARIANTS = (DEFAULT, ALL, ALL_EXTERNAL, PRODUCTION, BOTS, BROWSERS)
BOT_WORKERS = f"{FULLNAME}-bot-workers"
# A small tournament (tests/helm/tournament.yaml) on the memory store, on production's external Redis
# (a Sentinel URL) and on the Redis of the operator's own Secret; the Jobs of revision 1.
TOURNAMENT_VALUES = ROOT / "tests" / "helm" / "tournament.yaml"
TOURNAMENT_MEMORY = Variant("tournament-memory", (TOURNAMENT_VALUES,))
TOURNAMENT_SENTINEL = Variant("tournament-sentinel", (TOURNAMENT_VALUES,), PRODUCTION.sets)
TOURNAMENT_OWN_SECRET = Variant("tournament-own-secret", (TOURNAMENT_VALUES,),
                                ("secrets.existingSecret=gostop-secrets", "redis.urlFromSecret=true"))
SHARDS_JOB = f"{FULLNAME}-tournament-1"
MERGE_JOB = f"{FULLNAME}-tournament-merge-1"


@functools.cache
def template(variant: Variant, kube_version: str = KUBE_VERSIONS[0]) -> str:
    result = run([tool(HELM), "template", RELEASE, CHART, "--namespace", NAMESPACE, "--kube-version", kube_version,
                  *variant.args()])
    assert result.returncode == 0, f"helm template ({variant.name}) failed:\n{result.stderr}"
    return result.stdout


@functools.cache
def manifests(variant: Variant) -> tuple[dict[str, Any], ...]:
    """The rendered objects (YAML to JSON by the tools venv's PyYAML)."""
    code = "import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)"
    result = run([tool(TOOLS_PYTHON), "-c", code], stdin=template(variant))
    assert result.returncode == 0, result.stderr
    docs: list[dict[str, Any]] = json.loads(result.stdout)
    return tuple(docs)


def objects(variant: Variant, kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests(variant) if d["kind"] == kind]


def one(variant: Variant, kind: str, name: str = FULLNAME) -> dict[str, Any]:
    found = [d for d in objects(variant, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"{variant.name}: expected one {kind} {name}, found {len(found)}"
    return found[0]


def server_container(variant: Variant) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(variant, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["gostop"]
    return containers[0]


def bot_worker_container(variant: Variant) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(variant, "Deployment", BOT_WORKERS)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["bot-worker"]
    return containers[0]


def server_env(variant: Variant) -> dict[str, str]:
    """The environment the server container gets from the chart's ConfigMap and Secret."""
    env: dict[str, str] = dict(one(variant, "ConfigMap")["data"])
    secret = one(variant, "Secret")
    env.update({k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()})
    return env


def metrics_ports(variant: Variant) -> dict[str, int]:
    """The metrics port of every worker, by the server's own rule (service.workers.worker_env:
    worker i serves GOSTOP_METRICS_PORT + i), named as the chart names them."""
    config = server_config.load(env=server_env(variant))
    return {"metrics" if i == 0 else f"metrics-{i}": int(worker_env(config, i, {})["GOSTOP_METRICS_PORT"])
            for i in range(config.workers)}


def helm_fails(*args: str) -> str:
    """helm template with these extra arguments must fail; its error output."""
    result = run([tool(HELM), "template", RELEASE, CHART, "--namespace", NAMESPACE, *args])
    assert result.returncode != 0, f"helm template {' '.join(args)} rendered, but should have been refused"
    return result.stderr


# --- lint and schema validation ----------------------------------------------------------------


def test_tools_are_the_pinned_versions() -> None:
    version = run([tool(HELM), "version", "--template", "{{ .Version }}"]).stdout.strip()
    assert version == makefile_value("HELM_VERSION"), "stale helm in .tools/bin: run `make helm-tools`"
    assert run([tool(KUBECONFORM), "-v"]).stdout.strip() == makefile_value("KUBECONFORM_VERSION"), \
        "stale kubeconform in .tools/bin: run `make helm-tools`"


def test_chart_versions() -> None:
    chart = (CHART / "Chart.yaml").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert re.search(r"^apiVersion: v2$", chart, re.MULTILINE)
    assert re.search(rf'^appVersion: "{re.escape(project["version"])}"$', chart, re.MULTILINE), \
        "Chart.yaml appVersion must be pyproject's version"


@pytest.mark.parametrize("variant", [DEFAULT, ALL, ALL_EXTERNAL], ids=lambda v: v.name)
def test_helm_lint(variant: Variant) -> None:
    for kube_version in KUBE_VERSIONS:
        result = run([tool(HELM), "lint", "--strict", CHART, "--namespace", NAMESPACE, "--kube-version", kube_version,
                      *variant.args()])
        assert result.returncode == 0, result.stdout + result.stderr
        assert "[ERROR]" not in result.stdout and "[WARNING]" not in result.stdout, result.stdout


@pytest.fixture(scope="session")
def kubernetes_schemas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kubernetes-validate's schemas, made loadable by kubeconform from files.

    They are JSON Schema 2020-12 documents with an https `$id` and references to
    `/api/_definitions.json`, which kubernetes-validate resolves in memory; without the `$id` and
    with a relative reference they resolve to the `_definitions.json` beside them.
    """
    found = sorted(VENV.glob("lib/python3*/site-packages/kubernetes_validate/kubernetes-json-schema"))
    if not found:
        tool(VENV / "kubernetes_validate")  # fails with the install command
    out = tmp_path_factory.mktemp("kubernetes-json-schema")
    for version in KUBE_VERSIONS:
        source = found[-1] / f"v{version}-local-strict"
        assert source.is_dir(), f"kubernetes-validate has no schemas for Kubernetes {version}"
        target = out / source.name
        target.mkdir()
        for path in source.glob("*.json"):
            document = json.loads(path.read_text().replace('"/api/_definitions.json#', '"_definitions.json#'))
            document.pop("$id", None)
            (target / path.name).write_text(json.dumps(document))
    return out


def schema_locations(kubernetes_schemas: Path) -> list[str]:
    """kubeconform's schema paths: the Kubernetes kinds, then the custom resources of tests/schemas."""
    kinds = "{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
    crds = "{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"
    return ["-schema-location", f"{kubernetes_schemas}/{kinds}", "-schema-location", f"{CRD_SCHEMAS}/{crds}"]


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_manifests_validate_against_the_kubernetes_schemas(
    variant: Variant, kube_version: str, kubernetes_schemas: Path,
) -> None:
    result = run([
        tool(KUBECONFORM), "-strict", "-summary", "-kubernetes-version", kube_version,
        *schema_locations(kubernetes_schemas),
        "-",
    ], stdin=template(variant, kube_version))
    assert result.returncode == 0, result.stdout + result.stderr
    count = len(manifests(variant))
    assert f"Valid: {count}, Invalid: 0, Errors: 0, Skipped: 0" in result.stdout, result.stdout


def test_kubeconform_rejects_a_bad_manifest(kubernetes_schemas: Path) -> None:
    """The validation is real: an unknown field and a wrong type are caught, in a CRD too."""
    bad = template(DEFAULT).replace("terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: thirty")
    bad += "\n---\n" + template(ALL).split("# Source: gostop/templates/servicemonitor.yaml")[1].replace(
        "scrapeTimeout: 5s", "scrapeTimeout: 5s\n      bogus: true")
    result = run([
        tool(KUBECONFORM), "-strict", "-summary", "-kubernetes-version", KUBE_VERSIONS[0],
        *schema_locations(kubernetes_schemas),
        "-",
    ], stdin=bad)
    assert result.returncode != 0
    assert "Invalid: 2" in result.stdout, result.stdout


def test_all_on_renders_every_template() -> None:
    rendered = set(re.findall(r"^# Source: gostop/templates/(\S+)$", template(ALL) + template(ALL_EXTERNAL),
                              re.MULTILINE))
    templates = {p.name for p in (CHART / "templates").glob("*.yaml")}
    assert templates - rendered == set(), "tests/helm/all-on.yaml must turn on every template"
    kinds = {d["kind"] for d in manifests(ALL)}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap", "Secret",
            "ServiceMonitor", "PrometheusRule", "NetworkPolicy", "GRPCRoute", "HTTPRoute", "Ingress", "StatefulSet",
            "Job", "PersistentVolumeClaim", "ServiceAccount"} <= kinds


def test_generated_token_secret_is_strong() -> None:
    secret = server_env(DEFAULT)["GOSTOP_TOKEN_SECRET"]
    assert len(secret) >= 32
    assert server_env(PRODUCTION)["GOSTOP_TOKEN_SECRET"] == "0123456789abcdef0123"


def test_bot_key_only_when_asked_for_and_generated_strong() -> None:
    """No bot-worker credential exists unless secrets.botKey sets it or the chart runs bot workers,
    when it is generated: one strong key (the workers present it as it is, so no comma)."""
    assert "GOSTOP_BOT_KEYS" not in server_env(DEFAULT) and "GOSTOP_BOT_KEYS" not in server_env(PRODUCTION)
    generated = server_env(BOTS)["GOSTOP_BOT_KEYS"]
    assert len(generated) >= 32 and re.fullmatch(r"[A-Za-z0-9]+", generated)
    assert server_config.load(env=server_env(BOTS)).keys("bot_keys") == (generated,)
    assert server_env(ALL)["GOSTOP_BOT_KEYS"] == "a-bot-worker-key"


@pytest.mark.parametrize("variant", [DEFAULT, ALL, PRODUCTION, BOTS, BROWSERS], ids=lambda v: v.name)
def test_notes_render(variant: Variant, tmp_path: Path) -> None:
    """NOTES.txt (which helm template skips) renders: through tpl, in a copy of the chart."""
    chart = tmp_path / "gostop"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "NOTES.txt").rename(chart / "notes.txt")
    (chart / "templates" / "zz-notes.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n'
        '  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n')
    result = run([tool(HELM), "template", RELEASE, chart, "--namespace", NAMESPACE, "--show-only",
                  "templates/zz-notes.yaml", *variant.args()])
    assert result.returncode == 0, result.stderr
    notes: str = json.loads(result.stdout.split("  notes: ", 1)[1])
    assert f"{FULLNAME}.{NAMESPACE}.svc:50051" in notes
    assert ("WARNING: the memory store" in notes) == (variant == DEFAULT)
    assert ("token secret was generated" in notes) == (variant == DEFAULT)
    assert ("Tournament: Job" in notes) == (variant == ALL)
    assert ("worker i on port 9464 + i" in notes) == (len(metrics_ports(variant)) > 1)
    assert (f"Bot workers: Deployment {BOT_WORKERS}" in notes) == (variant in (ALL, BOTS))
    assert ("2 to 20 pods (HPA on CPU)" in notes) == (variant == ALL)
    assert ("The bot key (GOSTOP_BOT_KEYS" in notes) == (variant == BOTS), "generated: pin it for offline renders"
    http = server_config.load(env=server_env(variant)).http_address()
    assert http is not None and f"http://{FULLNAME}.{NAMESPACE}.svc:{http[1]}/ (the web table" in notes
    assert f"port-forward svc/{FULLNAME} {http[1]}:http" in notes
    assert ("Through the gateway: https://play.example.com/" in notes) == (variant == BROWSERS)
    assert "tables.example.com" not in notes, "a wildcard host name is no address to open"


# One bad value per rule of values.schema.json: (helm arguments, what the error names).
SCHEMA_RULES = {
    "negative replicas": (["--set", "replicaCount=-1"], "/replicaCount"),
    "replicas not a number": (["--set-string", "replicaCount=two"], "/replicaCount"),
    "unknown top-level key": (["--set", "replicas=2"], "additional properties 'replicas' not allowed"),
    "unknown nested key": (["--set", "config.logLevell=debug"], "additional properties 'logLevell' not allowed"),
    "unknown log level": (["--set", "config.logLevel=loud"], "/config/logLevel"),
    "unknown log format": (["--set", "config.logFormat=xml"], "/config/logFormat"),
    "port out of range": (["--set", "ports.grpc=70000"], "/ports/grpc"),
    "port as a string": (["--set-string", "ports.metrics=metrics"], "/ports/metrics"),
    "zero ttl": (["--set", "config.gameTtlSeconds=0"], "/config/gameTtlSeconds"),
    "negative drain": (["--set", "config.drainSeconds=-1"], "/config/drainSeconds"),
    "short token secret": (["--set", "secrets.tokenSecret=short"], "/secrets/tokenSecret"),
    "api keys not a list": (["--set", "secrets.apiKeys=key1"], "/secrets/apiKeys"),
    "api key with a comma": (["--set", "secrets.apiKeys[0]=a\\,b"], "/secrets/apiKeys/0"),
    "redis url scheme": (["--set", "redis.url=http://redis:6379"], "/redis/url"),
    "pull policy": (["--set", "image.pullPolicy=Sometimes"], "/image/pullPolicy"),
    "image digest": (["--set", "image.digest=latest"], "/image/digest"),
    "listen host": (["--set", "listenHost=localhost"], "/listenHost"),
    "service type": (["--set", "service.type=ExternalName"], "/service/type"),
    "cpu target over 100": (["--set", "autoscaling.targetCPUUtilizationPercentage=150"],
                            "/autoscaling/targetCPUUtilizationPercentage"),
    "boolean as a string": (["--set-string", "autoscaling.enabled=yes"], "/autoscaling/enabled"),
    "zero max replicas": (["--set", "autoscaling.maxReplicas=0"], "/autoscaling/maxReplicas"),
    "pdb not a number or percentage": (["--set", "podDisruptionBudget.maxUnavailable=half"],
                                       "/podDisruptionBudget/maxUnavailable"),
    "scrape interval": (["--set-string", "metrics.serviceMonitor.interval=30"], "/metrics/serviceMonitor/interval"),
    "error ratio over 1": (["--set", "metrics.prometheusRule.errorRatio=5"], "/metrics/prometheusRule/errorRatio"),
    "zero tournament shards": (["--set", "tournament.shards=0"], "/tournament/shards"),
    "access mode": (["--set", "tournament.results.accessModes[0]=ReadWriteSome"],
                    "/tournament/results/accessModes/0"),
    "spread policy": (["--set", "topologySpread.whenUnsatisfiable=Sometimes"], "/topologySpread/whenUnsatisfiable"),
    "tmp size": (["--set", "tmpSizeLimit=lots"], "/tmpSizeLimit"),
    "probe period": (["--set", "probes.readiness.periodSeconds=0"], "/probes/readiness/periodSeconds"),
    "required value removed": (["--set", "config=null"], "missing property 'config'"),
    "zero workers": (["--set", "config.workers=0"], "/config/workers"),
    "unknown event loop": (["--set", "config.eventLoop=trio"], "/config/eventLoop"),
    "unknown bot worker mode": (["--set", "config.botWorker=always"], "/config/botWorker"),
    "bot budget over a minute": (["--set", "config.botBudgetMaxMs=60001"], "/config/botBudgetMaxMs"),
    "zero bot shards": (["--set", "config.botShards=0"], "/config/botShards"),
    "plugin named as a built-in bot": (["--set", "config.botPlugins[0]=mcts"], "/config/botPlugins/0"),
    "plugin not a module path": (["--set", "config.botPlugins[0]=my plugin"], "/config/botPlugins/0"),
    "remote bot without a port": (["--set", "config.remoteBots.ts=ts-bot"], "/config/remoteBots/ts"),
    "remote bot port out of range": (["--set", "config.remoteBots.ts=ts-bot:70000"], "/config/remoteBots/ts"),
    "remote bot name": (["--set", "config.remoteBots.TS=ts-bot:7001"], "invalid propertyName 'TS'"),
    "bot key with a comma": (["--set", "secrets.botKey=a\\,b"], "/secrets/botKey"),
    "zero bot worker concurrency": (["--set", "botWorkers.concurrency=0"], "/botWorkers/concurrency"),
    "bot worker metrics port": (["--set", "botWorkers.metricsPort=0"], "/botWorkers/metricsPort"),
    "bot worker replicas as a string": (["--set-string", "botWorkers.replicas=two"], "/botWorkers/replicas"),
    "bot worker cpu target over 100": (["--set", "botWorkers.autoscaling.targetCPUUtilizationPercentage=101"],
                                       "/botWorkers/autoscaling/targetCPUUtilizationPercentage"),
    "unknown bot worker key": (["--set", "botWorkers.image=other"], "additional properties 'image' not allowed"),
    "fallback ratio over 1": (["--set", "metrics.prometheusRule.botFallbackRatio=2"],
                              "/metrics/prometheusRule/botFallbackRatio"),
    "http port out of range": (["--set", "ports.http=65536"], "/ports/http"),
    "negative http port": (["--set", "ports.http=-1"], "/ports/http"),
    "cors origin with a path": (["--set", "config.corsOrigins[0]=https://games.example.com/play"],
                                "/config/corsOrigins/0"),
    "cors origin without a scheme": (["--set", "config.corsOrigins[0]=games.example.com"], "/config/corsOrigins/0"),
    "cors origins as one string": (["--set", "config.corsOrigins=https://a.example.com"], "/config/corsOrigins"),
    "two cors origins in one item": (["--set", "config.corsOrigins[0]=https://a.example.com\\,https://b.example.com"],
                                     "/config/corsOrigins/0"),
    "http route host name in capitals": (["--set", "httpRoute.hostnames[0]=Play.Example.com"],
                                         "/httpRoute/hostnames/0"),
    "http route host name with a port": (["--set", "httpRoute.hostnames[0]=play.example.com:443"],
                                         "/httpRoute/hostnames/0"),
    "watch timeout not a gateway duration": (["--set", "httpRoute.watchTimeout=1d"], "/httpRoute/watchTimeout"),
    "unknown http route key": (["--set", "httpRoute.matches=all"], "additional properties 'matches' not allowed"),
}


@pytest.mark.parametrize("rule", sorted(SCHEMA_RULES))
def test_schema_rejects(rule: str) -> None:
    args, expected = SCHEMA_RULES[rule]
    error = helm_fails(*args)
    assert "values don't meet the specifications of the schema" in error, error
    assert expected in error, error


# Combinations the schema cannot express, refused by the templates: (arguments, message).
TEMPLATE_RULES = {
    "memory store with replicas": (["--set", "replicaCount=2"], "memory store"),
    "memory store with autoscaling": (["--set", "autoscaling.enabled=true"], "memory store"),
    "memory store with workers": (["--set", "config.workers=2"], "config.workers"),
    "grace period within the drain": (["--set", "terminationGracePeriodSeconds=15"], "terminationGracePeriodSeconds"),
    "tls without a secret": (["--set", "tls.enabled=true"], "tls.secretName"),
    "grpc route without a gateway": (["--set", "grpcRoute.enabled=true"], "parentRefs"),
    "autoscaling bounds": (["--set", f"redis.url={ESCAPED_REDIS}", "--set", "autoscaling.enabled=true",
                            "--set", "autoscaling.minReplicas=5", "--set", "autoscaling.maxReplicas=3"], "minReplicas"),
    "worker metrics ports over the grpc port": (["--set", f"redis.url={ESCAPED_REDIS}", "--set", "config.workers=3",
                                                "--set", "ports.grpc=9466"], "ports.grpc (9466) is among"),
    "worker metrics ports past 65535": (["--set", f"redis.url={ESCAPED_REDIS}", "--set", "config.workers=3",
                                        "--set", "ports.metrics=65534"], "go past 65535"),
    # A bot worker takes turns from Redis only (with the memory store the server plays bot seats).
    "bot workers on the memory store": (["--set", "botWorkers.enabled=true"], "botWorkers.enabled needs Redis"),
    "bot worker autoscaling bounds": (["--set", f"redis.url={ESCAPED_REDIS}", "--set", "botWorkers.enabled=true",
                                      "--set", "botWorkers.autoscaling.enabled=true",
                                      "--set", "botWorkers.autoscaling.minReplicas=4",
                                      "--set", "botWorkers.autoscaling.maxReplicas=2"],
                                     "botWorkers.autoscaling.minReplicas"),
    "default bot budget above the maximum": (["--set", "config.botBudgetMs=3000"], "config.botBudgetMs (3000)"),
    # Regression: the URL went into the chart's Secret, which an existing Secret replaces, so the
    # server silently ran the memory store (and the workers had no Redis).
    "redis url with an existing secret": (["--set", "secrets.existingSecret=mine", "--set",
                                          "redis.url=redis://redis:6379/0"], "set redis.urlFromSecret=true instead"),
    "http route without a gateway": (["--set", "httpRoute.enabled=true"], "httpRoute.parentRefs"),
    "http route with the http port off": (["--set", "ports.http=0", "--set", "httpRoute.enabled=true", "--set",
                                           "httpRoute.parentRefs[0].name=gw"], "httpRoute.enabled needs the HTTP port"),
    "http port on the grpc port": (["--set", "ports.http=50051"], "ports.http (50051) is the gRPC port"),
    "http port among the worker metrics ports": (["--set", f"redis.url={ESCAPED_REDIS}", "--set", "config.workers=3",
                                                  "--set", "ports.http=9465"], "ports.http (9465)"),
    # Gateway API accepts only one of an HTTPRoute and a GRPCRoute sharing a host on one listener.
    "both routes on one listener for every host": (
        ["--set", "grpcRoute.enabled=true", "--set", "grpcRoute.parentRefs[0].name=gw", "--set",
         "httpRoute.enabled=true", "--set", "httpRoute.parentRefs[0].name=gw"],
        "grpcRoute and httpRoute attach to the same listener"),
    "both routes on one listener, a wildcard covering the page": (
        ["--set", "grpcRoute.enabled=true", "--set", "grpcRoute.parentRefs[0].name=gw", "--set",
         "grpcRoute.hostnames[0]=*.example.com", "--set", "httpRoute.enabled=true", "--set",
         "httpRoute.parentRefs[0].name=gw", "--set", "httpRoute.parentRefs[0].sectionName=https", "--set",
         "httpRoute.hostnames[0]=play.example.com"], "grpcRoute and httpRoute attach to the same listener"),
}


@pytest.mark.parametrize("rule", sorted(TEMPLATE_RULES))
def test_templates_refuse(rule: str) -> None:
    args, expected = TEMPLATE_RULES[rule]
    assert expected in helm_fails(*args)


# --- the chart against the server ----------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_settings_are_real_and_accepted_by_the_server(variant: Variant) -> None:
    env = server_env(variant)
    unknown = {k for k in env if k.startswith("GOSTOP_")} - set(SETTINGS)
    assert not unknown, f"not settings of service/config.py: {unknown}"
    config = server_config.load(env=env)  # the server's own parsing and checks
    assert config.listen == env["GOSTOP_LISTEN"]
    assert config.log_format == "json"  # no terminal in a pod: JSON lines
    if variant in (ALL_EXTERNAL, PRODUCTION):
        assert config.redis_url == EXTERNAL_REDIS
    if variant == ALL:
        assert config.redis_url == f"redis://{FULLNAME}-redis:6379/0"
        assert config.keys("api_keys") == ("api-key-one", "api-key-two")
        assert config.keys("operator_keys") == ("operator-key-one",)
        assert config.keys("bot_plugins") == ("example_bots.strong:StrongBot", "clever")
        assert config.remote_bot_addresses() == {"go": "[fd00::12]:7002", "ts": "ts-bot.bots.svc:7001"}
        assert (config.bot_shards, config.bot_claim_idle_ms, config.bot_budget_ms) == (16, 20000, 300)
    if variant == DEFAULT:
        assert config.redis_url == "", "the defaults run the memory store (one replica)"


def test_every_setting_is_configurable_by_the_chart() -> None:
    provided = set().union(*(server_env(v) for v in VARIANTS))
    assert set(SETTINGS) <= provided, f"settings the chart cannot set: {set(SETTINGS) - provided}"
    secrets = {"GOSTOP_TOKEN_SECRET", "GOSTOP_API_KEYS", "GOSTOP_OPERATOR_KEYS", "GOSTOP_BOT_KEYS"}
    secret_keys = set().union(*(one(v, "Secret").get("data", {}) for v in VARIANTS))
    assert secrets <= secret_keys
    config_map_keys = set().union(*(one(v, "ConfigMap")["data"] for v in (*VARIANTS, OWN_SECRET_BOTS)))
    assert not config_map_keys & secrets


def test_default_settings_follow_the_server_defaults() -> None:
    """values.yaml's config mirrors service/config.py; only the pod's addresses, the log format and
    the per-address stream limit (every stream comes through the gateway's addresses) differ."""
    env = one(DEFAULT, "ConfigMap")["data"]
    deliberate = {"GOSTOP_LISTEN": "0.0.0.0:50051", "GOSTOP_HTTP_LISTEN": "0.0.0.0:8080",
                  "GOSTOP_METRICS_HOST": "0.0.0.0", "GOSTOP_LOG_FORMAT": "json", "GOSTOP_MAX_WATCH_PER_PEER": "0"}
    for key, value in env.items():
        default = SETTINGS[key].default
        if key in deliberate:
            assert value == deliberate[key]
        else:
            assert type(default)(value) == default, f"{key}: chart default {value!r}, server default {default!r}"
    assert env["GOSTOP_LISTEN"].rpartition(":")[2] == SETTINGS["GOSTOP_LISTEN"].default.rpartition(":")[2]
    assert env["GOSTOP_HTTP_LISTEN"].rpartition(":")[2] == SETTINGS["GOSTOP_HTTP_LISTEN"].default.rpartition(":")[2]
    assert env["GOSTOP_CORS_ORIGINS"] == SETTINGS["GOSTOP_CORS_ORIGINS"].default == "", "no route: no origin added"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_ports_and_probes_match_the_server(variant: Variant) -> None:
    env = server_env(variant)
    container = server_container(variant)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    grpc_port = int(env["GOSTOP_LISTEN"].rpartition(":")[2])
    # The HTTP port as the server reads GOSTOP_HTTP_LISTEN (one port, shared by every worker).
    http = server_config.load(env=env).http_address()
    assert http is not None, "the chart serves the HTTP port unless ports.http is 0"
    # One metrics port per worker: each worker process serves its own (service/workers.py).
    assert ports == {"grpc": grpc_port, "http": http[1], **metrics_ports(variant)}
    assert ports["metrics"] == int(env["GOSTOP_METRICS_PORT"])
    host = env["GOSTOP_LISTEN"].rpartition(":")[0]
    assert host in ("0.0.0.0", "[::]"), "the server must listen on the pod's address, not loopback"
    assert http[0] in ("0.0.0.0", "::") and http[0] == host.strip("[]"), "the HTTP port too"
    assert env["GOSTOP_METRICS_HOST"] in ("0.0.0.0", "::")
    # The health names the server registers: "" and the game service.
    assert pb.DESCRIPTOR.services_by_name["GameService"].full_name == SERVICE
    tls = "GOSTOP_TLS_CERT" in env
    for kind, service in (("startupProbe", SERVICE), ("readinessProbe", SERVICE), ("livenessProbe", "")):
        probe = container[kind]
        if tls:  # the kubelet's gRPC probes cannot speak TLS: the image's probe script does
            assert probe["exec"]["command"] == ["gostop-healthcheck", service]
        else:
            assert probe["grpc"]["port"] == grpc_port
            assert probe["grpc"].get("service", "") == service
    service_ports = {p["name"]: p for p in one(variant, "Service")["spec"]["ports"]}
    assert set(service_ports) == set(ports)
    for name, port in service_ports.items():
        assert port["targetPort"] == name and port["port"] == ports[name]
    if not tls:
        assert service_ports["grpc"]["appProtocol"] == "kubernetes.io/h2c"
    assert service_ports["http"]["appProtocol"] == "http", "cleartext HTTP, even with tls.enabled (gRPC only)"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_restricted_pod_security(variant: Variant) -> None:
    pods = [deployment["spec"]["template"]["spec"] for deployment in objects(variant, "Deployment")]
    assert len(pods) == (2 if variant in (ALL, ALL_EXTERNAL, BOTS) else 1), "the server, and the bot workers"
    pods += [job["spec"]["template"]["spec"] for job in objects(variant, "Job")]
    uid, gid = dockerfile_user()
    for pod in pods:
        context = pod["securityContext"]
        assert context["runAsNonRoot"] is True
        assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid), "the image's USER"
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["readOnlyRootFilesystem"] is True
            assert security["capabilities"] == {"drop": ["ALL"]}
            assert not security.get("privileged", False)
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            volumes = {v["name"]: v for v in pod["volumes"]}
            assert "emptyDir" in volumes[mounts["/tmp"]], "/tmp is the one writable path"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_termination_grace_outlasts_the_drain(variant: Variant) -> None:
    pod = one(variant, "Deployment")["spec"]["template"]["spec"]
    drain = float(server_env(variant)["GOSTOP_DRAIN_SECONDS"])
    pre_stop = pod["containers"][0].get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", ["", "0"])
    assert pre_stop[0] in ("", "sleep")
    assert pod["terminationGracePeriodSeconds"] > drain + float(pre_stop[1])


def component(obj: dict[str, Any]) -> str:
    """The app.kubernetes.io/component label of an object: server, bot-worker, redis, tournament."""
    label: str = obj["metadata"]["labels"]["app.kubernetes.io/component"]
    return label


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_selectors_and_references_agree(variant: Variant) -> None:
    deployment = one(variant, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    # Each object of the server or of the bot workers selects its own Deployment's pods, by name.
    deployments = {d["metadata"]["name"]: d for d in objects(variant, "Deployment")}
    owner = {"server": FULLNAME, "bot-worker": BOT_WORKERS}
    for name, d in deployments.items():
        assert d["spec"]["selector"]["matchLabels"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        assert owner[component(d)] == name
    selectors = {c: deployments[n]["spec"]["selector"]["matchLabels"] for c, n in owner.items() if n in deployments}
    assert selectors.get("bot-worker") != selector, "the server's objects never select the workers"
    for service in objects(variant, "Service"):
        if service["metadata"]["name"].startswith(FULLNAME + "-redis"):
            continue
        assert service["spec"]["selector"] == selectors[component(service)]
    for pdb in objects(variant, "PodDisruptionBudget"):
        assert pdb["spec"]["selector"]["matchLabels"] == selectors[component(pdb)]
        assert pdb["metadata"]["name"] == owner[component(pdb)]
    for hpa in objects(variant, "HorizontalPodAutoscaler"):
        target = owner[component(hpa)]
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}
        assert "replicas" not in deployments[target]["spec"], "the HPA owns the replica count"
    service = one(variant, "Service")
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    for monitor in objects(variant, "ServiceMonitor"):
        monitored = one(variant, "Service", owner[component(monitor)])
        assert monitor["metadata"]["name"] == monitored["metadata"]["name"], "the job label the alerts select"
        assert monitor["spec"]["selector"]["matchLabels"].items() <= monitored["metadata"]["labels"].items()
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in monitored["spec"]["ports"]}
        if component(monitor) == "server":
            # Every worker's metrics port is scraped, each as a target of its own.
            assert [e["port"] for e in monitor["spec"]["endpoints"]] == list(metrics_ports(variant))
    for route in objects(variant, "GRPCRoute"):
        backends = [b for rule in route["spec"]["rules"] for b in rule["backendRefs"]]
        assert backends == [{"name": FULLNAME, "port": ports["grpc"]}]
    for route in objects(variant, "HTTPRoute"):
        for rule in route["spec"]["rules"]:
            assert rule["backendRefs"] == [{"name": FULLNAME, "port": ports["http"]}]
    for ingress in objects(variant, "Ingress"):
        assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == "GRPC"
        backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
        assert backend == {"name": FULLNAME, "port": {"name": "grpc"}}
    for policy in objects(variant, "NetworkPolicy"):
        assert policy["spec"]["podSelector"]["matchLabels"] == selectors[component(policy)]
        assert policy["metadata"]["name"] == owner[component(policy)]
        egress_ports = {p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"]}
        assert 53 in egress_ports and 6379 in egress_ports
        if component(policy) != "server":
            continue
        container_ports = {p["name"] for p in server_container(variant)["ports"]}
        assert {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]} == container_ports
        peers = policy["spec"]["ingress"][0]["from"]
        for job in objects(variant, "Job"):
            job_labels = job["spec"]["template"]["metadata"]["labels"]
            admitted = any(p.get("podSelector", {}).get("matchLabels", {None: None}).items() <= job_labels.items()
                           for p in peers if "namespaceSelector" not in p)
            # The shards call the server; the merge only reads the volume and writes the ladder.
            assert admitted == (component(job) == "tournament"), f"{job['metadata']['name']}: {admitted}"
    env = server_env(variant)
    if env.get("GOSTOP_REDIS_URL", "").startswith(f"redis://{FULLNAME}-redis:"):
        redis = one(variant, "Service", f"{FULLNAME}-redis")
        statefulset = one(variant, "StatefulSet", f"{FULLNAME}-redis")
        assert redis["spec"]["selector"].items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()
        assert [p["port"] for p in redis["spec"]["ports"]] == [6379]


@pytest.mark.parametrize("variant", [ALL, ALL_EXTERNAL], ids=lambda v: v.name)
def test_every_worker_is_scraped(variant: Variant) -> None:
    """With config.workers N each worker serves its metrics on ports.metrics + i: the container,
    the Service, the ServiceMonitor and the NetworkPolicy name one port per worker, so Prometheus
    scrapes every worker."""
    expected = metrics_ports(variant)
    assert len(expected) >= 2, "tests/helm/all-on.yaml runs several workers"
    container = {p["name"]: p["containerPort"] for p in server_container(variant)["ports"]}
    service = {p["name"]: p for p in one(variant, "Service")["spec"]["ports"]}
    endpoints = {e["port"]: e for e in one(variant, "ServiceMonitor")["spec"]["endpoints"]}
    policy = {p["port"] for rule in one(variant, "NetworkPolicy")["spec"]["ingress"] for p in rule["ports"]}
    monitor_values = {"interval": "15s", "scrapeTimeout": "5s"}  # all-on.yaml's
    for name, port in expected.items():
        assert container[name] == port
        entry = service[name]
        assert (entry["port"], entry["targetPort"], entry["appProtocol"]) == (port, name, "http")
        assert endpoints[name] == {"port": name, "path": "/metrics", "scheme": "http", **monitor_values}
        assert name in policy
    assert set(endpoints) == set(expected)


def test_tournament_job_calls_the_service() -> None:
    from gostop.tools import tournament

    job = one(ALL, "Job", f"{FULLNAME}-tournament-1")
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == 8 and job["spec"]["parallelism"] == 4
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["command"] == ["gostop"] and container["args"][0] == "tournament"
    service = one(ALL, "Service")
    grpc_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    env = {e["name"]: "from-secret" for e in container["env"]}
    env["JOB_COMPLETION_INDEX"] = "3"
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["args"][1:]]
    parser = argparse.ArgumentParser()
    tournament.add_arguments(parser)
    parsed = parser.parse_args(args)  # the real command's flags
    assert parsed.server == f"{service['metadata']['name']}.{NAMESPACE}.svc:{grpc_port}"
    assert str(parsed.out) == "/results/shard-3"
    assert parsed.seed == 423
    assert parsed.api_key == parsed.operator_key == "from-secret"
    assert parsed.bots == ("random", "greedy") and parsed.games == 50
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    claim = next(v for v in pod["volumes"] if v["name"] == mounts["/results"])["persistentVolumeClaim"]["claimName"]
    one(ALL, "PersistentVolumeClaim", claim)
    credentials = one(ALL, "Secret", f"{FULLNAME}-tournament")
    assert set(credentials["data"]) == {"api-key", "operator-key"}


# --- the tournament's ladder and the merge of its shards -------------------------------


def job_container(variant: Variant, name: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(variant, "Job", name)["spec"]["template"]["spec"]["containers"]
    [container] = containers
    return container


def results_claim(variant: Variant, name: str) -> str:
    """The claim a Job's pods mount at /results."""
    pod = one(variant, "Job", name)["spec"]["template"]["spec"]
    [container] = pod["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volume = next(v for v in pod["volumes"] if v["name"] == mounts["/results"])
    claim: str = volume["persistentVolumeClaim"]["claimName"]
    return claim


def kubelet_args(args: Sequence[str], env: dict[str, str]) -> list[str]:
    """A container's arguments with $(VAR) expanded from its environment, as the kubelet does."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), a) for a in args]


def merge_args(container: dict[str, Any]) -> argparse.Namespace:
    """The merge container's command line, parsed by the real parser of `gostop ladder`."""
    assert container["command"] == ["gostop"] and container["args"][0] == "ladder"
    parser = argparse.ArgumentParser()
    ladder.add_arguments(parser)
    return parser.parse_args(container["args"][1:])


@pytest.mark.parametrize("variant", [ALL, ALL_EXTERNAL, TOURNAMENT_SENTINEL, TOURNAMENT_MEMORY],
                         ids=lambda v: v.name)
def test_tournament_ladder_is_the_releases_redis(variant: Variant) -> None:
    """The shards record into the release's Redis: GOSTOP_LADDER resolves, as the kubelet builds it,
    to the server's own GOSTOP_REDIS_URL (the in-chart one from the ConfigMap, an external one from
    the Secret), which the ladder opens as a Redis whatever its form (Sentinel included); the merge
    records into the same. On the memory store the shards record nothing (their root filesystem is
    read-only, and a SQLite file on the shared volume is not safe from several pods) and the merge,
    one pod, records into a SQLite file on the results volume."""
    server_url = server_env(variant).get("GOSTOP_REDIS_URL", "")
    shards = resolved_env(variant, job_container(variant, SHARDS_JOB))
    merge = resolved_env(variant, job_container(variant, MERGE_JOB))
    if server_url:
        assert shards["GOSTOP_LADDER"] == merge["GOSTOP_LADDER"] == server_url
        assert ladder.is_redis(server_url), f"the ladder would take {server_url} for a file name"
    else:
        assert shards["GOSTOP_LADDER"] == ladder.OFF
        assert merge["GOSTOP_LADDER"] == "/results/ladder.sqlite3"
    assert "--ladder" not in job_container(variant, SHARDS_JOB)["args"], "tournament.args may set it, the chart not"
    assert merge_args(job_container(variant, MERGE_JOB)).ladder is None, "GOSTOP_LADDER: no password in the args"


def test_tournament_ladder_of_the_operators_secret() -> None:
    """With redis.urlFromSecret both Jobs read GOSTOP_LADDER from the GOSTOP_REDIS_URL key of the
    operator's Secret, which the server takes whole (envFrom)."""
    expected = {"secretKeyRef": {"name": "gostop-secrets", "key": "GOSTOP_REDIS_URL"}}
    for name in (SHARDS_JOB, MERGE_JOB):
        env = {e["name"]: e.get("valueFrom") for e in job_container(TOURNAMENT_OWN_SECRET, name)["env"]}
        assert env["GOSTOP_LADDER"] == expected, name
    assert {"secretRef": {"name": "gostop-secrets"}} in server_container(TOURNAMENT_OWN_SECRET)["envFrom"]


def test_tournament_merge_job_merges_every_shard() -> None:
    """The merge Job: one pod (never two writing the ladder) mounting the shards' claim, created
    suspended, whose `gostop ladder --merge` names exactly the folders the shards write, in index
    order, then tournament.merge.args; tournament.merge.enabled false leaves it out."""
    shards = one(ALL, "Job", SHARDS_JOB)
    merge = one(ALL, "Job", MERGE_JOB)
    spec = merge["spec"]
    assert spec["suspend"] is True, "released once the shards' Job is complete"
    assert (spec["completions"], spec["parallelism"]) == (1, 1) and "completionMode" not in spec
    assert spec["backoffLimit"] == shards["spec"]["backoffLimit"]
    assert spec["ttlSecondsAfterFinished"] == shards["spec"]["ttlSecondsAfterFinished"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert results_claim(ALL, MERGE_JOB) == results_claim(ALL, SHARDS_JOB)
    container = job_container(ALL, SHARDS_JOB)
    out = kubelet_args(container["args"], {})
    written = [Path(kubelet_args(out, {"JOB_COMPLETION_INDEX": str(i)})[out.index("--out") + 1])
               for i in range(shards["spec"]["completions"])]
    assert len(written) == 8
    args = merge_args(job_container(ALL, MERGE_JOB))
    assert args.merge == written
    assert args.out == Path("/results/merged") and args.out not in written
    assert args.png == Path("/results/merged/ladder.png"), "all-on.yaml's tournament.merge.args"
    assert merge["metadata"]["labels"]["app.kubernetes.io/component"] == "tournament-merge"
    off = Variant("no-merge", (ALL_ON,), ("tournament.merge.enabled=false",))
    assert [j["metadata"]["name"] for j in objects(off, "Job")] == [SHARDS_JOB]


def test_tournament_jobs_are_named_in_the_notes_commands(tmp_path: Path) -> None:
    """NOTES.txt tells how to release the merge: wait for the shards' Job, unsuspend the merge Job
    (by their rendered names), read its log."""
    chart = tmp_path / "gostop"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "NOTES.txt").rename(chart / "notes.txt")
    (chart / "templates" / "zz-notes.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n'
        '  notes: {{ tpl (.Files.Get "notes.txt") . | toJson }}\n')
    for variant in (ALL, TOURNAMENT_MEMORY):
        result = run([tool(HELM), "template", RELEASE, chart, "--namespace", NAMESPACE, "--show-only",
                      "templates/zz-notes.yaml", *variant.args()])
        assert result.returncode == 0, result.stderr
        notes: str = json.loads(result.stdout.split("  notes: ", 1)[1])
        assert f"kubectl -n {NAMESPACE} wait --for=condition=complete --timeout=24h job/{SHARDS_JOB}\n" in notes
        patch = re.search(rf"kubectl -n {NAMESPACE} patch job/{MERGE_JOB} --type merge -p '([^']+)'", notes)
        assert patch and json.loads(patch.group(1)) == {"spec": {"suspend": False}}
        assert f"logs job/{MERGE_JOB}" in notes
        assert ("/results/ladder.sqlite3" in notes) == (variant == TOURNAMENT_MEMORY)


@pytest.mark.parametrize("variant", [TOURNAMENT_SENTINEL, TOURNAMENT_MEMORY], ids=lambda v: v.name)
def test_tournament_shards_and_merge_run_as_the_chart_runs_them(variant: Variant, tmp_path: Path) -> None:
    """The rendered Jobs, run for real: each shard's command line and environment (as the kubelet
    expands them; the server's address swapped for a loopback one, the claim's mount path for a
    folder) against a server with the chart's settings, on a real Redis behind a Sentinel (the
    production variant's URL form) or on the memory store; then the merge's. With Redis the shards
    record their games into it and the merge finds nothing new; on the memory store the shards
    record nothing and the merge records every game into the SQLite file on the volume. The merged
    report holds every shard's games, planned and done; merging again adds nothing."""
    from testkit.redis_server import RedisSentinelServers

    chart_env = server_env(variant)
    chart_url = chart_env.get("GOSTOP_REDIS_URL", "")
    assert bool(chart_url) == (variant == TOURNAMENT_SENTINEL)
    results = tmp_path / "results"
    results.mkdir()
    shards_container, merge_container = job_container(variant, SHARDS_JOB), job_container(variant, MERGE_JOB)
    completions = one(variant, "Job", SHARDS_JOB)["spec"]["completions"]
    base = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "TMPDIR": str(tmp_path),
            "PYTHONDONTWRITEBYTECODE": "1", "MPLCONFIGDIR": str(tmp_path / "mpl")}

    def local(args: Sequence[str]) -> list[str]:
        """The arguments with the claim's mount path (/results) replaced by the folder."""
        return [str(results) + a.removeprefix("/results") if a == "/results" or a.startswith("/results/") else a
                for a in args]

    def job_env(container: dict[str, Any], url: str) -> dict[str, str]:
        env = resolved_env(variant, container)
        if chart_url:
            assert env["GOSTOP_LADDER"] == chart_url
            env["GOSTOP_LADDER"] = url
        return {**base, **{k: local([v])[0] for k, v in env.items()}}

    redis = RedisSentinelServers() if chart_url else None
    with redis or contextlib.nullcontext():
        url = redis.url if redis else ""
        server = start_server(tmp_path, {**chart_env, "GOSTOP_REDIS_URL": url} if url else chart_env)
        try:
            shards = []
            for index in range(completions):
                env = {**job_env(shards_container, url), "JOB_COMPLETION_INDEX": str(index)}
                args = kubelet_args(local(shards_container["args"]), env)
                args[args.index("--server") + 1] = f"127.0.0.1:{server.port}"
                shards.append(subprocess.Popen([sys.executable, "-m", "gostop", *args], cwd=tmp_path, env=env,
                                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True))
            said = []
            for shard in shards:
                stdout, stderr = shard.communicate(timeout=300)
                assert shard.returncode == 0, stdout + stderr
                said.append(" ".join(stderr.split()))
        finally:
            assert stop_server(server) == 0
        folders = [results / f"shard-{i}" for i in range(completions)]
        records = [ladder.read_folder(f).records for f in folders]
        total = sum(map(len, records))
        assert [len(r) for r in records] == [4] * completions, "tests/helm/tournament.yaml: 2 deals x 2 rotations"
        for shard_said, shard_records in zip(said, records, strict=True):
            if url:
                assert f"ladder: {len(shard_records)} new games recorded in {url}" in shard_said, shard_said
            else:
                assert "ladder:" not in shard_said, shard_said

        merge_env = job_env(merge_container, url)
        sqlite = results / "ladder.sqlite3"
        assert merge_env["GOSTOP_LADDER"] == (url or str(sqlite))
        args = local(merge_container["args"])
        # With Redis the shards recorded every game already; on the memory store a second merge (a
        # retried pod) finds every game there.
        for attempt, new in ((1, 0),) if url else ((1, total), (2, 0)):
            merged = subprocess.run([sys.executable, "-m", "gostop", *args], cwd=tmp_path, env=merge_env,
                                    capture_output=True, text=True, timeout=120, check=False)
            assert merged.returncode == 0, merged.stdout + merged.stderr
            output = " ".join(merged.stdout.split())
            assert f"{completions} folders merged into {results / 'merged'}" in output, output
            assert f"{new} new games recorded in the ladder" in output, (attempt, output)
        store = ladder.open_store(url or str(sqlite))
        try:
            games = store.games()
        finally:
            store.close()
    assert len(games) == total and len({g.uid for g in games}) == total
    assert {g.run_id for g in games} == {r["run_id"] for rs in records for r in rs}
    assert len({g.run_id for g in games}) == completions, "one run per shard"
    report = json.loads((results / "merged" / "report.json").read_text())
    assert report["planned"] == report["done"] == total
    assert len((results / "merged" / "results.jsonl").read_text().splitlines()) == total


# --- the HTTP port: browsers through the gateway --------------------------------------


def route(variant: Variant) -> dict[str, Any]:
    [found] = objects(variant, "HTTPRoute")
    return found


def test_http_port_settings_reach_the_server() -> None:
    """ports.http and listenHost make GOSTOP_HTTP_LISTEN; config.corsOrigins and https://<host> of each
    precise route host name (not the wildcard) make GOSTOP_CORS_ORIGINS, as service/config.py reads them."""
    config = server_config.load(env=server_env(BROWSERS))
    assert config.http_address() == ("0.0.0.0", 8088)
    assert config.keys("cors_origins") == (OTHER_SITE, f"https://{PAGE_HOST}")
    everything = server_config.load(env=server_env(ALL))
    assert everything.http_address() == ("::", 8080)
    assert everything.keys("cors_origins") == ("https://games.example.com", "http://localhost:5173",
                                               "https://play.gostop.example.com")
    assert server_config.load(env=server_env(DEFAULT)).keys("cors_origins") == ()
    star = server_config.load(env=server_env(Variant("any-origin", (), (*BROWSERS.sets, "config.corsOrigins[1]=*"))))
    assert star.cors_origins == "*", "any origin: the hosts add nothing"


def test_http_port_off_is_off_everywhere() -> None:
    """ports.http 0: the server gets GOSTOP_HTTP_LISTEN=off, and no container port, Service port,
    NetworkPolicy rule or HTTPRoute names an HTTP port."""
    env = server_env(NO_HTTP)
    assert env["GOSTOP_HTTP_LISTEN"] == "off"
    assert server_config.load(env=env).http_address() is None
    assert "http" not in {p["name"] for p in server_container(NO_HTTP)["ports"]}
    assert "http" not in {p["name"] for p in one(NO_HTTP, "Service")["spec"]["ports"]}
    policy_ports = {p["port"] for rule in one(NO_HTTP, "NetworkPolicy")["spec"]["ingress"] for p in rule["ports"]}
    assert policy_ports == {"grpc", "metrics"}
    assert not objects(NO_HTTP, "HTTPRoute")


@pytest.mark.parametrize("variant", [ALL, BROWSERS], ids=lambda v: v.name)
def test_http_route_sends_the_site_to_the_http_port(variant: Variant) -> None:
    """The HTTPRoute attaches to the values' Gateway with their host names and sends every path to the
    Service's http port; WatchGame, the service's one server stream, has its own rule with the
    request timeout of httpRoute.watchTimeout (a gateway's default would end the stream)."""
    spec = route(variant)["spec"]
    values = {ALL: ([{"name": "public-gateway", "namespace": "gateway-system", "sectionName": "https"}],
                    ["play.gostop.example.com", "*.tables.gostop.example.com"], "1h"),
              BROWSERS: ([{"name": "public", "namespace": "gateway-system"}],
                         [PAGE_HOST, "*.tables.example.com"], "0s")}
    parents, hosts, timeout = values[variant]
    assert spec["parentRefs"] == parents and spec["hostnames"] == hosts
    streams = [m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods if m.server_streaming]
    assert streams == ["WatchGame"]
    watch, rest = spec["rules"]
    assert watch["matches"] == [{"path": {"type": "Exact", "value": f"/{SERVICE}/WatchGame"}}]
    assert watch["timeouts"] == {"request": timeout}
    assert rest["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}] and "timeouts" not in rest
    http_port = server_config.load(env=server_env(variant)).http_address()
    assert http_port is not None
    service_port = next(p for p in one(variant, "Service")["spec"]["ports"] if p["name"] == "http")
    assert service_port["port"] == http_port[1] and service_port["targetPort"] == "http"
    for rule in spec["rules"]:
        assert rule["backendRefs"] == [{"name": FULLNAME, "port": service_port["port"]}]
    no_timeout = template(Variant("no-watch-timeout", (), (*BROWSERS.sets, "httpRoute.watchTimeout=")))
    assert "timeouts:" not in no_timeout.split("kind: HTTPRoute")[1]


@pytest.mark.parametrize("variant", [ALL, BROWSERS], ids=lambda v: v.name)
def test_network_policy_admits_the_gateway_on_the_http_port(variant: Variant) -> None:
    """Browsers come through the gateway: the HTTP port admits the gateway's pods and extraIngress, as
    the gRPC port does, and not the tournament or the bot workers (they speak gRPC)."""
    ingress = one(variant, "NetworkPolicy")["spec"]["ingress"]
    [http_rule] = [r for r in ingress if r["ports"] == [{"port": "http", "protocol": "TCP"}]]
    grpc_peers = ingress[0]["from"]
    gateway, *_ = grpc_peers
    extra = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "bots"}}}] if variant == ALL else []
    assert http_rule["from"] == [gateway, *extra]
    assert gateway["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "gateway-system"}}


def test_routes_on_one_gateway_with_their_own_hosts_render() -> None:
    """The GRPCRoute and the HTTPRoute may share a Gateway listener when their host names do not meet
    (and a listener each with any host names: all-on.yaml)."""
    both = Variant("both-routes", (), ("grpcRoute.enabled=true", "grpcRoute.parentRefs[0].name=gw",
                                       "grpcRoute.hostnames[0]=api.example.com", "httpRoute.enabled=true",
                                       "httpRoute.parentRefs[0].name=gw", "httpRoute.hostnames[0]=play.example.com",
                                       "httpRoute.hostnames[1]=*.play.example.com"))
    assert {d["kind"] for d in manifests(both)} >= {"GRPCRoute", "HTTPRoute"}
    assert objects(ALL, "GRPCRoute") and objects(ALL, "HTTPRoute")


def http_request(port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None,
                 body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request to the server's HTTP port on loopback, as the gateway forwards it: its status,
    headers (lower-case names) and body; an error status is an answer too."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def test_the_web_tables_own_origin_behind_a_tls_gateway_is_not_refused(tmp_path: Path) -> None:
    """Regression: behind a gateway that terminates TLS, the page at https://<host>/ calls the API with
    `Origin: https://<host>` while the server sees plain HTTP for that host, so it took its own page for
    a foreign one and refused every call (403). The server now takes the origin's host and port for
    its own page's whatever the scheme (service/http.py); here it runs with the settings of a release
    with the route and of one without it, called as the gateway forwards a browser's calls, and
    answers both; a foreign origin is still refused."""
    call = {"Host": PAGE_HOST, "Origin": f"https://{PAGE_HOST}", "X-Forwarded-Proto": "https",
            "Content-Type": "application/json"}
    path = f"/{SERVICE}/ListRuleSets"
    for name, variant in (("route", BROWSERS), ("no-route", PRODUCTION)):
        folder = tmp_path / name
        folder.mkdir()
        server = start_server(folder, server_env(variant))
        try:
            status, headers, body = http_request(server.http_port, path, "POST", call, b"{}")
            assert status == 200, (name, body)
            assert headers["access-control-allow-origin"] == f"https://{PAGE_HOST}"
            assert json.loads(body)["ruleSets"]
            foreign = {**call, "Origin": f"https://{PAGE_HOST}.elsewhere.example"}
            status, _, _ = http_request(server.http_port, path, "POST", foreign, b"{}")
            assert status == 403, name
        finally:
            assert stop_server(server) == 0


def test_browsers_reach_the_table_and_the_api_as_the_chart_configures_them(tmp_path: Path) -> None:
    """The server with the chart's settings (addresses swapped for loopback ones), called as the gateway
    forwards browsers' requests for the route's host: the web table (or the page saying it is not built)
    at /, the Connect GET of ListRuleSets, a preflight and a call from the other site that
    config.corsOrigins allows (a game created on a real Redis), and a site it does not allow refused."""
    from testkit.redis_server import RedisServer

    with RedisServer() as redis:
        server = start_server(tmp_path, {**server_env(BROWSERS), "GOSTOP_REDIS_URL": redis.url})
        try:
            browse(server.http_port)
        finally:
            assert stop_server(server) == 0


def browse(port: int) -> None:
    """What test_browsers_reach_the_table_and_the_api_as_the_chart_configures_them asks of the HTTP port."""
    status, headers, body = http_request(port, "/", headers={"Host": PAGE_HOST})
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert body.lower().startswith(b"<!doctype html>"), "the web table, or the page saying it is not built"
    query = "?connect=v1&encoding=json&message=%7B%7D"
    status, headers, body = http_request(port, f"/{SERVICE}/ListRuleSets{query}",
                                         headers={"Host": PAGE_HOST})
    assert status == 200 and headers["content-type"] == "application/json"
    presets = {r["preset"] for r in json.loads(body)["ruleSets"]}
    assert "standard" in presets
    preflight = {"Host": PAGE_HOST, "Origin": OTHER_SITE, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, connect-protocol-version"}
    status, headers, _ = http_request(port, f"/{SERVICE}/CreateGame", "OPTIONS", preflight)
    assert status == 204 and headers["access-control-allow-origin"] == OTHER_SITE
    assert "POST" in headers["access-control-allow-methods"]
    assert "connect-protocol-version" in headers["access-control-allow-headers"]
    create = {"Host": PAGE_HOST, "Origin": OTHER_SITE, "Content-Type": "application/json",
              "Connect-Protocol-Version": "1"}
    status, headers, body = http_request(port, f"/{SERVICE}/CreateGame", "POST", create,
                                         json.dumps({"preset": "standard", "players": 2}).encode())
    assert status == 200 and headers["access-control-allow-origin"] == OTHER_SITE
    assert json.loads(body)["gameId"]
    foreign = {**create, "Origin": "https://elsewhere.example.net"}
    status, _, _ = http_request(port, f"/{SERVICE}/CreateGame", "POST", foreign, b"{}")
    assert status == 403


# --- the bot workers -----------------------------------------------------------------------------


def worker_reads() -> set[str]:
    """The environment variables `gostop bots serve` reads: its own (gostop.service.programs.botworker) and the
    server's settings, which it loads with service/config.py."""
    source = Path(botworker.__file__).read_text()
    own = set(re.findall(r'os\.environ\.get\("(GOSTOP_\w+)"', source))
    assert {"GOSTOP_BOT_KEY", "GOSTOP_SERVER", "GOSTOP_METRICS_PORT"} <= own
    return own | set(SETTINGS)


def resolved_env(variant: Variant, container: dict[str, Any]) -> dict[str, str]:
    """A container's environment as the kubelet builds it from the rendered ConfigMap and Secret."""
    config_map = one(variant, "ConfigMap")["data"]
    secrets = {s["metadata"]["name"]: s.get("data", {}) for s in objects(variant, "Secret")}
    env: dict[str, str] = {}
    for entry in container["env"]:
        source = entry.get("valueFrom", {})
        if "configMapKeyRef" in source:
            assert source["configMapKeyRef"]["name"] == FULLNAME
            env[entry["name"]] = config_map[source["configMapKeyRef"]["key"]]
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            env[entry["name"]] = base64.b64decode(secrets[ref["name"]][ref["key"]]).decode()
        else:
            env[entry["name"]] = entry["value"]
    return env


def worker_args(container: dict[str, Any]) -> argparse.Namespace:
    """The worker container's command line, parsed by the real parser of `gostop bots serve`."""
    assert container["command"] == ["gostop"] and container["args"][:2] == ["bots", "serve"]
    parser = argparse.ArgumentParser()
    botworker.add_arguments(parser)
    return parser.parse_args(container["args"][1:])


@pytest.mark.parametrize("variant", [ALL, ALL_EXTERNAL, BOTS], ids=lambda v: v.name)
def test_bot_worker_command_line_and_env_match_the_cli(variant: Variant) -> None:
    container = bot_worker_container(variant)
    args = worker_args(container)
    service = one(variant, "Service")
    grpc_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert args.server == f"{service['metadata']['name']}.{NAMESPACE}.svc:{grpc_port}"
    values_concurrency = 2 if variant in (ALL, ALL_EXTERNAL) else 1
    assert args.concurrency == values_concurrency
    # The metrics endpoint: on the pod's address, on the container port the probes, the Service and
    # the ServiceMonitor name.
    assert args.metrics_host in ("0.0.0.0", "::")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": args.metrics_port} and args.metrics_port == (9475 if variant != BOTS else 9465)
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    worker_service = one(variant, "Service", BOT_WORKERS)
    assert worker_service["spec"]["clusterIP"] == "None"
    assert [(p["name"], p["port"], p["targetPort"]) for p in worker_service["spec"]["ports"]] == [
        ("metrics", args.metrics_port, "metrics")]
    # The environment: only variables the worker reads (besides extraEnv), none of the server's
    # secrets: its key and the Redis URL come one by one, never by envFrom.
    assert "envFrom" not in container
    extra = {"EXTRA_BOT_SETTING"} if variant in (ALL, ALL_EXTERNAL) else set()
    names = [e["name"] for e in container["env"]]
    assert len(names) == len(set(names))
    assert set(names) - extra <= worker_reads(), set(names) - extra - worker_reads()
    env = resolved_env(variant, container)
    server = server_config.load(env=server_env(variant))
    worker = server_config.load(env=env)  # as `gostop bots serve` loads it
    assert env["GOSTOP_BOT_KEY"] in server.keys("bot_keys") and "," not in env["GOSTOP_BOT_KEY"]
    assert worker.redis_url == server.redis_url != ""
    for name in ("bot_shards", "bot_claim_idle_ms", "bot_plugins", "remote_bots", "log_format", "log_level"):
        assert getattr(worker, name) == getattr(server, name), name
    assert worker.token_secret == "" and worker.api_keys == worker.operator_keys == ""
    # TLS (all-on): the worker trusts the CA of the server's certificate Secret, and nothing else of it
    # is mounted (the server's private key stays out).
    pod = one(variant, "Deployment", BOT_WORKERS)["spec"]["template"]["spec"]
    if "GOSTOP_TLS_CERT" in server_env(variant):
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volume = next(v for v in pod["volumes"] if v["name"] in mounts and "secret" in v)
        assert volume["secret"]["secretName"] == "gostop-tls"
        assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
        assert args.tls_ca == f"{mounts[volume['name']]}/ca.crt"
    else:
        assert args.tls_ca is None and not args.tls
    # A CPU request (the HPA's base) and no CPU limit (a throttled bot would overrun its budget).
    resources = container["resources"]
    assert "cpu" in resources["requests"] and "cpu" not in resources.get("limits", {})


def test_bot_workers_use_the_operators_own_secret() -> None:
    """With secrets.existingSecret the chart makes no Secret; the workers read GOSTOP_BOT_KEYS and
    GOSTOP_REDIS_URL of the operator's Secret, the server takes it whole (envFrom), and neither key
    is in the ConfigMap."""
    assert not objects(OWN_SECRET_BOTS, "Secret")
    env = {e["name"]: e.get("valueFrom") for e in bot_worker_container(OWN_SECRET_BOTS)["env"]}
    assert env["GOSTOP_BOT_KEY"] == {"secretKeyRef": {"name": "gostop-secrets", "key": "GOSTOP_BOT_KEYS"}}
    assert env["GOSTOP_REDIS_URL"] == {"secretKeyRef": {"name": "gostop-secrets", "key": "GOSTOP_REDIS_URL"}}
    assert {"secretRef": {"name": "gostop-secrets"}} in server_container(OWN_SECRET_BOTS)["envFrom"]
    assert not {"GOSTOP_BOT_KEYS", "GOSTOP_REDIS_URL"} & set(one(OWN_SECRET_BOTS, "ConfigMap")["data"])


def test_in_chart_redis_url_reaches_the_workers_from_the_config_map() -> None:
    env = {e["name"]: e.get("valueFrom") for e in bot_worker_container(ALL)["env"]}
    assert env["GOSTOP_REDIS_URL"] == {"configMapKeyRef": {"name": FULLNAME, "key": "GOSTOP_REDIS_URL"}}
    assert resolved_env(ALL, bot_worker_container(ALL))["GOSTOP_REDIS_URL"] == f"redis://{FULLNAME}-redis:6379/0"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_server_keeps_its_bot_worker_setting_with_bot_workers(variant: Variant) -> None:
    """The chart runs the workers beside the server and leaves GOSTOP_BOT_WORKER as set: auto by
    default, so a server on Redis runs no worker of its own."""
    expected = "off" if variant in (ALL, ALL_EXTERNAL) else "auto"  # all-on.yaml sets off
    assert server_env(variant)["GOSTOP_BOT_WORKER"] == expected
    assert bool(objects(variant, "Deployment")[1:]) == (variant in (ALL, ALL_EXTERNAL, BOTS))


@pytest.mark.parametrize("variant", [ALL, ALL_EXTERNAL, BOTS], ids=lambda v: v.name)
def test_bot_worker_network_policies(variant: Variant) -> None:
    """The workers may reach the server's gRPC port, Redis and DNS (and extraEgress: the remote
    bots), nothing else; only Prometheus reaches their metrics port; the server admits their calls."""
    policy = one(variant, "NetworkPolicy", BOT_WORKERS)["spec"]
    server_policy = one(variant, "NetworkPolicy")["spec"]
    worker_labels = one(variant, "Deployment", BOT_WORKERS)["spec"]["template"]["metadata"]["labels"]
    server_labels = one(variant, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    [ingress] = policy["ingress"]
    assert ingress["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    assert ingress["from"] == server_policy["ingress"][1]["from"], "the server's Prometheus peers"
    grpc_port = int(server_env(variant)["GOSTOP_LISTEN"].rpartition(":")[2])
    egress = policy["egress"]
    to_server = egress[0]
    assert to_server["ports"] == [{"port": grpc_port, "protocol": "TCP"}]
    [peer] = to_server["to"]
    assert peer["podSelector"]["matchLabels"].items() <= server_labels.items() and "namespaceSelector" not in peer
    # DNS and Redis exactly as the server's own egress.
    assert egress[1:3] == server_policy["egress"]
    values_extra = 2 if variant in (ALL, ALL_EXTERNAL) else 0
    assert len(egress) == 3 + values_extra
    if values_extra:
        assert [r["ports"][0]["port"] for r in egress[3:]] == [7001, 7002], "all-on.yaml's remote-bot egress"
    redis_ports = {p["port"] for p in egress[2]["ports"]}
    assert redis_ports == ({6379} if variant == ALL else {6379, 26379})
    callers = server_policy["ingress"][0]
    assert callers["ports"] == [{"port": "grpc", "protocol": "TCP"}]
    assert any("namespaceSelector" not in p and p["podSelector"]["matchLabels"].items() <= worker_labels.items()
               for p in callers["from"]), "the server admits the workers' calls"


def test_bot_worker_autoscaler_and_disruption_budget() -> None:
    hpa = one(ALL, "HorizontalPodAutoscaler", BOT_WORKERS)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": BOT_WORKERS}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 20)
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 75}}}]
    assert hpa["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 120}}
    assert "replicas" not in one(ALL, "Deployment", BOT_WORKERS)["spec"]
    assert one(ALL, "PodDisruptionBudget", BOT_WORKERS)["spec"]["maxUnavailable"] == "25%"
    # Without the HPA: the values' replica count, and the defaults' budget.
    assert not [h for h in objects(BOTS, "HorizontalPodAutoscaler") if h["metadata"]["name"] == BOT_WORKERS]
    assert one(BOTS, "Deployment", BOT_WORKERS)["spec"]["replicas"] == 2
    assert one(BOTS, "PodDisruptionBudget", BOT_WORKERS)["spec"]["maxUnavailable"] == 1


def test_bot_worker_metrics_are_scraped() -> None:
    """A ServiceMonitor endpoint for the workers' metrics port, configured as the server's."""
    for variant in (ALL, BOTS):
        monitor = one(variant, "ServiceMonitor", BOT_WORKERS)
        server_endpoint = one(variant, "ServiceMonitor")["spec"]["endpoints"][0]
        [endpoint] = monitor["spec"]["endpoints"]
        assert endpoint == {**server_endpoint, "port": "metrics"}
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert one(ALL, "ServiceMonitor", BOT_WORKERS)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_bot_workers_take_turns_as_the_chart_runs_them(tmp_path: Path) -> None:
    """The rendered worker, run for real: its command line and environment (addresses swapped for
    loopback ones) against a server with the chart's settings on a real Redis play a bot-seat game;
    its probe's path answers on its metrics port with the decisions counted; SIGTERM stops it
    cleanly (exit 0)."""
    from testkit.redis_server import RedisServer

    container = bot_worker_container(BOTS)
    env = resolved_env(BOTS, container)
    chart_server_env = server_env(BOTS)
    assert env["GOSTOP_REDIS_URL"] == chart_server_env["GOSTOP_REDIS_URL"]
    metrics_port = free_port()
    probe = container["livenessProbe"]["httpGet"]
    assert container["ports"][0]["name"] == probe["port"]
    with RedisServer() as redis:
        server = start_server(tmp_path, {**chart_server_env, "GOSTOP_REDIS_URL": redis.url})
        args = list(container["args"])
        for flag, value in (("--server", f"127.0.0.1:{server.port}"), ("--metrics-port", str(metrics_port)),
                            ("--metrics-host", "127.0.0.1")):
            args[args.index(flag) + 1] = value
        log = tmp_path / "worker.log"
        variables = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "TMPDIR": str(tmp_path),
                     "PYTHONDONTWRITEBYTECODE": "1", **env, "GOSTOP_REDIS_URL": redis.url}
        with log.open("wb") as out:
            worker = subprocess.Popen([sys.executable, "-m", "gostop", *args], cwd=tmp_path, env=variables,
                                      stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                create = channel.unary_unary(f"/{SERVICE}/CreateGame", pb.CreateGameRequest.SerializeToString,
                                             pb.CreateGameResponse.FromString)
                get = channel.unary_unary(f"/{SERVICE}/GetGame", pb.GetGameRequest.SerializeToString,
                                          pb.GetGameResponse.FromString)
                request = pb.CreateGameRequest(preset="standard", players=2, seed=11)
                request.bot_seats.add(seat=0, bot="greedy")
                request.bot_seats.add(seat=1, bot="greedy")
                game_id = create(request, timeout=30).game_id
                deadline = time.monotonic() + 120
                while get(pb.GetGameRequest(game_id=game_id), timeout=30).view.version < 6:
                    assert worker.poll() is None, f"the worker exited:\n{log.read_text()}"
                    assert time.monotonic() < deadline, f"the bots did not move:\n{log.read_text()}"
                    time.sleep(0.1)
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}{probe['path']}", timeout=30) as answer:
                assert answer.status == 200
                body = answer.read().decode()
            assert 'gostop_bot_decisions_total{bot="greedy",outcome="ok"}' in body
            assert "gostop_bot_turns_pending" in body
        finally:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
            try:
                code = worker.wait(timeout=60)
            finally:
                if worker.poll() is None:
                    worker.kill()
            assert stop_server(server) == 0
        assert code == 0, f"the worker did not stop cleanly on SIGTERM:\n{log.read_text()}"
    assert '"bot decision"' in log.read_text() and '"bot worker serving"' in log.read_text()


# --- alerts ------------------------------------------------------------------------------------


def exported_series(registry: CollectorRegistry | None = None) -> set[str]:
    """The series names the server exports (or those of ``registry``), and ``up``."""
    names = {"up"}
    for family in (registry or Metrics().registry).collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names |= {family.name + suffix for suffix in ("_bucket", "_count", "_sum")}
        else:
            names.add(family.name)
    return names


@pytest.mark.parametrize("variant", [ALL, BOTS], ids=lambda v: v.name)
def test_alerts_are_valid_promql_over_exported_metrics(variant: Variant) -> None:
    """Every alert parses as PromQL and reads series its target exports, under the job label its
    ServiceMonitor gives: the server's, or the bot workers' (gostop.service.programs.botworker.WorkerMetrics)."""
    rules = [r for g in one(variant, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]
    alerts = {r["alert"] for r in rules}
    expected = {"GostopHighErrorRatio", "GostopHighLatencyP99", "GostopVersionConflicts", "GostopStoreUnavailable",
                "GostopBotTurnsStuck", "GostopBotWorkersDown", "GostopBotFallbackDecisions", "GostopClockLagging"}
    assert expected <= alerts
    expressions = [r["expr"] for r in rules]
    code = ("import json, sys, promql_parser\n"
            "for e in json.load(sys.stdin): promql_parser.parse(e)\n")
    result = run([tool(TOOLS_PYTHON), "-c", code], stdin=json.dumps(expressions))
    assert result.returncode == 0, f"an alert is not valid PromQL: {result.stderr}"
    worker_registry = CollectorRegistry()
    WorkerMetrics(worker_registry)
    exported = {"server": (exported_series(), FULLNAME), "bot worker": (exported_series(worker_registry), BOT_WORKERS)}
    codes = {c.name for c in grpc.StatusCode}
    for rule in rules:
        if rule["alert"] == "GostopNoGamesCreated":  # all-on's additional rule
            continue
        expr = rule["expr"]
        used = set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", expr))
        target = "bot worker" if rule["alert"].startswith("GostopBot") else "server"
        series, job = exported[target]
        assert used and used <= series, f"{rule['alert']}: {used - series} is not exported by the {target}"
        assert f'job="{job}", namespace="{NAMESPACE}"' in expr, "the ServiceMonitor's job label"
        for values in re.findall(r'grpc_code=~?"([^"]+)"', expr):
            assert set(values.split("|")) <= codes, values
        assert rule["labels"]["severity"] in ("critical", "warning")
    # The workers' alerts: a backlog older than 4 claim times (no worker takes turns, nor claims
    # them again); the fallback's outcomes, which are the worker's own.
    stuck = next(r for r in rules if r["alert"] == "GostopBotTurnsStuck")
    claim_seconds = int(server_env(variant)["GOSTOP_BOT_CLAIM_IDLE_MS"]) / 1000
    assert re.search(r"max by \(namespace, job\) \(gostop_bot_turn_oldest_seconds\{", stuck["expr"])
    assert float(stuck["expr"].rsplit(">", 1)[1]) == 4 * claim_seconds
    fallback = next(r for r in rules if r["alert"] == "GostopBotFallbackDecisions")["expr"]
    [failed] = re.findall(r'outcome=~"([^"]+)"', fallback)
    assert set(failed.split("|")) == set(OUTCOMES) - {"ok", "stale"}
    assert 'outcome!="stale"' in fallback and "stale" in OUTCOMES
    calls_source = (ROOT / "service" / "calls.py").read_text()  # the per-call wrapper labels the calls
    assert '"unary"' in calls_source, "the latency alert selects grpc_type=\"unary\""


# --- the container image -----------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    value: str


def dockerfile_stages() -> list[list[Instruction]]:
    """The Dockerfile's instructions by stage (comments dropped, continuation lines joined)."""
    stages: list[list[Instruction]] = []
    logical = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        logical += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if line.rstrip().endswith("\\"):
            continue
        keyword, _, value = logical.strip().partition(" ")
        logical = ""
        instruction = Instruction(keyword.upper(), value.strip())
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def dockerfile_stage(name: str) -> list[Instruction]:
    """The Dockerfile's stage ``FROM ... AS <name>``."""
    [stage] = [stage for stage in dockerfile_stages() if stage[0].value.endswith(f" AS {name}")]
    return stage


def dockerfile_env(stage: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for i in stage:
        if i.keyword == "ENV":
            env.update(dict(item.split("=", 1) for item in shlex.split(i.value)))
    return env


def dockerfile_user() -> tuple[int, int]:
    users = [i.value for i in dockerfile_stages()[-1] if i.keyword == "USER"]
    assert len(users) == 1
    uid, _, gid = users[0].partition(":")
    return int(uid), int(gid)


def test_dockerfile_is_multi_stage_with_a_small_final_stage() -> None:
    stages = dockerfile_stages()
    assert [stage[0].value.rpartition(" AS ")[2] for stage in stages] == ["web", "build", "runtime"]
    _, build, final = stages
    match = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert match and match.group(1) == "python:3.11-slim"
    assert build[0].value.startswith("${PYTHON_IMAGE} ") and final[0].value.startswith("${PYTHON_IMAGE} ")
    # The build stage installs the project with its [server] extra, non-editable (the build generates
    # the gRPC code: setup.py), its dependencies and the build tools installed before it from the lock.
    runs = " ".join(" ".join(i.value.split()) for i in build if i.keyword == "RUN")
    assert "python -m venv /opt/venv" in runs
    locked = "--constraint requirements.lock --requirements pyproject.toml --extra server --group pyproject.toml:build"
    assert runs.index(locked) < runs.index("pip install --no-build-isolation --no-deps './[server]'")
    assert "pip install -e" not in runs and "--editable" not in runs
    # The final stage: the venv and nothing else; no package installs, no compilers.
    copies = [i.value for i in final if i.keyword in ("COPY", "ADD")]
    assert copies == ["--from=build /opt/venv /opt/venv"]
    final_runs = " ".join(i.value for i in final if i.keyword == "RUN")
    for word in ("apt-get", "apk", "pip", "gcc", "g++", "make", "build-essential", "curl", "wget"):
        assert not re.search(rf"(^|[\s;&|]){re.escape(word)}($|\s)", final_runs), f"{word} in the final stage"
    assert re.search(r"useradd .*--uid 10001", final_runs)


def test_dockerfile_runs_the_server_as_a_non_root_user() -> None:
    final = dockerfile_stages()[-1]
    uid, gid = dockerfile_user()
    assert uid >= 1000 and gid >= 1000
    keywords = [i.keyword for i in final]
    assert keywords.count("USER") == 1 and "RUN" not in keywords[keywords.index("USER"):], "USER after the last RUN"
    entrypoint = [json.loads(i.value) for i in final if i.keyword == "ENTRYPOINT"]
    assert entrypoint == [["gostop", "serve"]], "exec form, so that SIGTERM reaches the server"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gostop"] == "gostop.tools.cli:main"
    assert 'sub.add_parser("serve"' in (ROOT / "clients/python/gostop/tools/cli.py").read_text()
    deployment = one(DEFAULT, "Deployment")["spec"]["template"]["spec"]
    assert "command" not in deployment["containers"][0] and "args" not in deployment["containers"][0]


def test_dockerfile_ports_and_settings_match_the_server() -> None:
    final = dockerfile_stages()[-1]
    env = dockerfile_env(final)
    assert env["GOSTOP_LISTEN"] == "0.0.0.0:50051" and env["GOSTOP_METRICS_HOST"] == "0.0.0.0"
    assert env["GOSTOP_HTTP_LISTEN"] == "0.0.0.0:8080", "the image serves the HTTP port on the container's address"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1", "the read-only root filesystem takes no bytecode"
    unknown = {k for k in env if k.startswith("GOSTOP_")} - set(SETTINGS)
    assert not unknown
    config = server_config.load(env=env)
    listen_port = int(config.listen.rpartition(":")[2])
    assert listen_port == int(SETTINGS["GOSTOP_LISTEN"].default.rpartition(":")[2])
    assert config.metrics_port == SETTINGS["GOSTOP_METRICS_PORT"].default
    http = config.http_address()
    assert http is not None and http[1] == int(SETTINGS["GOSTOP_HTTP_LISTEN"].default.rpartition(":")[2])
    exposed = {int(p) for i in final if i.keyword == "EXPOSE" for p in i.value.split()}
    assert exposed == {listen_port, http[1], config.metrics_port}
    chart = server_container(DEFAULT)
    assert {p["containerPort"] for p in chart["ports"]} == exposed
    healthchecks = [i.value for i in final if i.keyword == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and healthchecks[0].endswith('CMD ["gostop-healthcheck"]')


def test_dockerignore_keeps_the_context_to_the_sources() -> None:
    patterns = [p for p in (ROOT / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")]
    assert patterns[0] == "**", "everything is excluded first"
    included = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    sources = {word.removeprefix("./").rstrip("/") for stage in dockerfile_stages() for i in stage
               if i.keyword == "COPY" and not i.value.startswith("--from=")
               for word in i.value.split()[:-1] if not word.startswith("--")}
    assert {"pyproject.toml", "setup.py", "README.md", "proto", "engine", "service", "clients/python",
            "clients/typescript", "clients/web"} <= sources
    for source in sources:
        assert any(source == inc or source.startswith(inc + "/") for inc in included), f"{source} is not in the context"
    assert "clients/python/gostop/v1/" in patterns, "the generated code is rebuilt in the image"
    # What the web stage installs and builds is not taken from the work tree, excluded after the
    # folders are included (a later pattern wins).
    for built in ("clients/python/gostop/web/", "**/node_modules/", "clients/typescript/dist/",
                  "clients/typescript/src/gen/", "clients/web/src/generated/"):
        assert built in patterns and patterns.index(built) > patterns.index("!clients/web/"), built


def npm_steps(command: str) -> str:
    """An npm command line without the flags that only quiet npm (the Dockerfile's ENV does that)."""
    return " ".join(w for w in command.split() if w not in ("--silent", "--no-audit", "--no-fund"))


def makefile_npm_steps(directory: str) -> list[str]:
    """The npm commands the Makefile runs in ``directory`` (`cd $(VAR) && npm ...`), in its order."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+) := (\S+)$", text, re.MULTILINE))
    return [npm_steps(command) for var, command in re.findall(r"^\tcd \$\((\w+)\) && (npm .+)$", text, re.MULTILINE)
            if variables.get(var) == directory]


def test_dockerfile_builds_the_web_table_as_make_web_does() -> None:
    """The image serves the web table: the `web` stage (an official node image whose version both
    packages accept) runs the npm steps of `make ts-client` and `make web`, in their folders, with
    buf's inputs in place; Vite writes the page where the build stage copies it from, into the Python
    package, whose wheel ships it (package data) and whose installed copy the build checks."""
    text = DOCKERFILE.read_text()
    web, build = dockerfile_stage("web"), dockerfile_stage("build")
    image = re.search(r"^ARG NODE_IMAGE=node:(\d+)-slim$", text, re.MULTILINE)
    assert image and web[0].value.startswith("${NODE_IMAGE} ")
    for package in ("clients/typescript", "clients/web"):
        engines = json.loads((ROOT / package / "package.json").read_text())["engines"]["node"]
        wanted = re.fullmatch(r">=(\d+)(?:\.(\d+))?", engines)
        assert wanted, engines
        assert int(image.group(1)) > int(wanted.group(1)) or (
            int(image.group(1)) == int(wanted.group(1)) and not wanted.group(2)), f"{package} wants node {engines}"
    workdir = "/"
    steps: dict[str, list[str]] = {}
    copied: list[str] = []
    for i in web:
        if i.keyword == "WORKDIR":
            workdir = i.value
        elif i.keyword == "COPY":
            copied.append(posixpath.normpath(posixpath.join(workdir, i.value.split()[-1])))
        elif i.keyword == "RUN":
            for command in i.value.split("&&"):
                if command.strip().startswith("npm "):
                    steps.setdefault(workdir.removeprefix("/src/"), []).append(npm_steps(command.strip()))
    assert steps == {d: makefile_npm_steps(d) for d in ("clients/typescript", "clients/web")}
    assert all(steps.values())
    buf_inputs = re.findall(r"^\s+- directory: (\S+)$", (ROOT / "clients/typescript/buf.gen.yaml").read_text(),
                            re.MULTILINE)
    assert buf_inputs
    for directory in buf_inputs:
        path = posixpath.normpath(posixpath.join("/src/clients/typescript", directory))
        assert any(path == c or path.startswith(c + "/") for c in copied), f"buf's input {directory} is not copied"
    out_dir = re.search(r'outDir: resolve\(here, "([^"]+)"\)', (ROOT / "clients/web/vite.config.ts").read_text())
    assert out_dir
    page = posixpath.normpath(posixpath.join("/src/clients/web", out_dir.group(1)))
    assert page == "/src/clients/python/gostop/web"
    from_web = [i.value for i in build if i.keyword == "COPY" and i.value.startswith("--from=web ")]
    assert from_web == [f"--from=web {page} ./clients/python/gostop/web"]
    assert f"test -f {page}/index.html" in " ".join(i.value for i in web if i.keyword == "RUN")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "web/**/*" in package_data["gostop"]
    assert "graft clients/python/gostop/web" in (ROOT / "MANIFEST.in").read_text().splitlines()
    runs = " ".join(i.value for i in build if i.keyword == "RUN")
    assert "from gostop.service.http import web_root; assert web_root()" in runs


def test_hadolint() -> None:
    result = run([tool(HADOLINT), "--no-color", DOCKERFILE])
    assert result.returncode == 0, result.stdout + result.stderr


def healthcheck_script(tmp_path: Path) -> Path:
    """The image's gostop-healthcheck, as the Dockerfile writes it (RUN printf '%s\\n' ...)."""
    run_line = next(i.value for i in dockerfile_stage("build")
                    if i.keyword == "RUN" and "gostop-healthcheck" in i.value)
    words = shlex.split(run_line)
    lines = words[words.index("printf") + 2: words.index(">")]
    assert lines[0] == "#!/opt/venv/bin/python"
    script = tmp_path / "gostop-healthcheck"
    script.write_text("\n".join(lines[1:]) + "\n")
    return script


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    http_port: int = 0


def start_server(tmp_path: Path, env: dict[str, str], wrapper: Sequence[str] = ()) -> Server:
    """A server process configured by ``env`` (the chart's settings), on free loopback ports (the
    HTTP port too, unless the settings turn it off)."""
    port = free_port()
    http_port = 0 if env.get("GOSTOP_HTTP_LISTEN") == "off" else free_port()
    log = tmp_path / "server.log"
    variables = {
        "PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "TMPDIR": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1", **env,
        "GOSTOP_LISTEN": f"127.0.0.1:{port}", "GOSTOP_METRICS_HOST": "127.0.0.1",
        "GOSTOP_METRICS_PORT": str(free_port()),
        "GOSTOP_HTTP_LISTEN": f"127.0.0.1:{http_port}" if http_port else "off",
    }
    with log.open("wb") as out:
        process = subprocess.Popen([*wrapper, sys.executable, "-m", "gostop", "serve"], cwd=tmp_path, env=variables,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    server = Server(process, port, log, http_port)
    deadline = time.monotonic() + 60
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                if stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1).status == 1:
                    return server
            except grpc.RpcError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"the server did not start:\n{log.read_text()}")
            time.sleep(0.2)


def stop_server(server: Server) -> int:
    """SIGTERM to the server (not to a wrapper such as strace, which would detach); its exit code."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists() and children.read_text().split():
        pid = int(children.read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    try:
        return server.process.wait(timeout=60)
    finally:
        if server.process.poll() is None:
            server.process.kill()


@pytest.fixture
def chart_env() -> dict[str, str]:
    """The default chart's settings (start_server replaces the addresses with free loopback ports)."""
    return server_env(DEFAULT)


def test_image_healthcheck_probes_a_real_server(tmp_path: Path, chart_env: dict[str, str]) -> None:
    script = healthcheck_script(tmp_path)
    server = start_server(tmp_path, chart_env)
    probe_env = {**os.environ, "GOSTOP_LISTEN": f"0.0.0.0:{server.port}"}
    try:
        for args in ([], [SERVICE], [""]):
            result = subprocess.run([sys.executable, str(script), *args], env=probe_env, capture_output=True,
                                    text=True, timeout=30, check=False)
            assert result.returncode == 0 and result.stdout.strip() == "SERVING", result.stderr
        unknown = subprocess.run([sys.executable, str(script), "no.such.Service"], env=probe_env,
                                 capture_output=True, text=True, timeout=30, check=False)
        assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr
    finally:
        assert stop_server(server) == 0
    down = subprocess.run([sys.executable, str(script)], env=probe_env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert down.returncode == 1 and "UNAVAILABLE" in down.stderr


WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
PATH_CALL = re.compile(r'^\d+\s+(\w+)\((?:AT_FDCWD|\d+), "([^"]*)"(.*)$')
WRITE_CALLS = {"mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "link",
               "linkat", "symlink", "symlinkat", "truncate", "chmod", "fchmodat", "chown", "fchownat", "creat"}


def test_server_writes_nothing_outside_tmp(tmp_path: Path, chart_env: dict[str, str]) -> None:
    """What readOnlyRootFilesystem needs: the server, under strace, opens nothing for writing but /tmp."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is missing: run `make helm-tools` (it installs the Debian package)")
    trace = tmp_path / "strace.txt"
    work = tmp_path / "work"
    work.mkdir()
    server = start_server(work, chart_env, [strace, "-f", "-qq", "-o", str(trace), "-e", "signal=none",
                                            "-e", "trace=%file"])
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            create = channel.unary_unary(f"/{SERVICE}/CreateGame", pb.CreateGameRequest.SerializeToString,
                                         pb.CreateGameResponse.FromString)
            get = channel.unary_unary(f"/{SERVICE}/GetGame", pb.GetGameRequest.SerializeToString,
                                      pb.GetGameResponse.FromString)
            created = create(pb.CreateGameRequest(preset="standard", players=2, seed=7), timeout=30)
            assert get(pb.GetGameRequest(game_id=created.game_id), timeout=30).version == 1
    finally:
        assert stop_server(server) == 0
    calls, written = written_paths(trace)
    assert calls > 100, "strace saw the server's file calls"
    outside = {p for p in written if not p.startswith(("/tmp/", "/dev/", "/proc/")) and p != "/tmp"}
    assert not outside, f"the server writes outside /tmp (readOnlyRootFilesystem would break it): {sorted(outside)}"
    # The detector itself: a process that creates a file is caught.
    control = tmp_path / "control.txt"
    subprocess.run([strace, "-f", "-qq", "-o", str(control), "-e", "trace=%file", sys.executable, "-c",
                    f"open({str(tmp_path / 'made')!r}, 'w').close()"], check=True, timeout=60)
    assert str(tmp_path / "made") in written_paths(control)[1]


def written_paths(trace: Path) -> tuple[int, set[str]]:
    """From an strace -e trace=%file log: how many path calls it shows, and the paths written to."""
    calls = 0
    written: set[str] = set()
    for line in trace.read_text().splitlines():
        match = PATH_CALL.match(line)
        if not match:
            continue
        calls += 1
        call, path, rest = match.groups()
        if (call in ("open", "openat") and WRITE_FLAGS.search(rest)) or call in WRITE_CALLS:
            written.add(path)
    return calls, written


def iter_values(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in ("annotations", "labels", "podAnnotations", "podLabels",
                                                              "nodeSelector", "affinity", "behavior", "requests",
                                                              "limits", "namespaceSelector", "podSelector"):
            yield from iter_values(value, path + ".")
        else:
            yield path


def test_chart_readme_documents_every_value() -> None:
    result = run([tool(TOOLS_PYTHON), "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"],
                 stdin=(CHART / "values.yaml").read_text())
    values: dict[str, Any] = json.loads(result.stdout)
    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.MULTILINE))
    missing = [v for v in iter_values(values) if v not in documented and not any(
        v.startswith(d + ".") for d in documented)]
    assert not missing, f"values missing from helm/gostop/README.md: {missing}"
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(schema["properties"]) - {"global"} == set(values), "values.schema.json covers every top-level value"
