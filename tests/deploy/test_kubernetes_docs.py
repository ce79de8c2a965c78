"""Every command block of ``docs/kubernetes.md``, run as written, with real helm and no cluster.

Regression: the page's install recipe was refused by the chart (its store check looked only at
``redis.url``, not at the ``GOSTOP_REDIS_URL`` the recipe puts in your own Secret), and its
rollback line did not parse in a shell. Here each ```` ```sh ```` block runs in order under bash
(``set -euo pipefail``) from the repository root, with:

- ``helm`` real, except that ``install`` and ``upgrade`` render with ``helm template`` (an upgrade
  with ``--reuse-values`` reuses the install's values, as helm would; each upgrade's render is kept,
  ``upgrade-<n>.yaml``, and the last is ``upgrade.yaml``) and ``history`` and ``rollback`` are
  recorded (``history -o json`` answers revision 1, the revision ``helm template`` renders): there
  is no cluster to talk to;
- ``kubectl``, ``docker``, ``grpcurl`` and ``curl`` stand-ins that record their calls (and the keys
  of a ``kubectl create secret``), since they need a cluster or a registry.

The rendered manifests are then checked against what the page says they do.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

# Not in make check: docs/kubernetes.md's commands, with helm.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "kubernetes.md"
HELM = ROOT / ".tools" / "bin" / "helm"
TOOLS_PYTHON = ROOT / ".venv" / "bin" / "python"
FENCE = re.compile(r"^```(\S*)\s*$")

HELM_WRAPPER = r"""#!/bin/bash
set -euo pipefail
state="$GOSTOP_DOCS_STATE"
case "$1" in
  install)
    name=$2 chart=$3; shift 3
    printf '%s\n' "$@" > "$state/install.args"
    exec "$REAL_HELM" template "$name" "$chart" "$@" > "$state/install.yaml" ;;
  upgrade)
    name=$2 chart=$3; shift 3
    args=()
    for a in "$@"; do
      case $a in
        --reuse-values) mapfile -t previous < "$state/install.args"; args=("${previous[@]}" "${args[@]}") ;;
        --wait|--atomic) ;;
        *) args+=("$a") ;;
      esac
    done
    n=$(find "$state" -name 'upgrade-*.yaml' | wc -l)
    "$REAL_HELM" template "$name" "$chart" "${args[@]}" > "$state/upgrade-$n.yaml"
    cp "$state/upgrade-$n.yaml" "$state/upgrade.yaml" ;;
  history|rollback)
    echo "helm $*" >> "$state/calls.log"
    # helm template renders revision 1: the history's last revision as JSON, as helm prints it.
    case " $* " in *" -o json "*) echo '[{"revision":1,"status":"deployed","chart":"gostop"}]' ;; esac ;;
  *) exec "$REAL_HELM" "$@" ;;
esac
"""

RECORDER = r"""#!/bin/bash
state="$GOSTOP_DOCS_STATE"
echo "$(basename "$0") $*" >> "$state/calls.log"
if [ "$(basename "$0")" = kubectl ] && [ "${3:-}" = create ] && [ "${4:-}" = secret ]; then
  for a in "$@"; do
    case $a in --from-literal=*) k=${a#--from-literal=}; echo "${k%%=*}" >> "$state/secret-keys" ;; esac
  done
fi
if [ "$(basename "$0")" = curl ]; then echo "gostop_games_created_total 0"; fi
exit 0
"""


def sh_blocks(text: str) -> list[tuple[int, str]]:
    return fenced_blocks(text, "sh")


def manifests(path: Path) -> list[dict[str, Any]]:
    result = subprocess.run([str(TOOLS_PYTHON), "-c", "import json, sys, yaml; "
                             "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)"],
                            input=path.read_text(), capture_output=True, text=True, check=True)
    docs: list[dict[str, Any]] = json.loads(result.stdout)
    return docs


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    return found


def fenced_blocks(text: str, language: str) -> list[tuple[int, str]]:
    """The fenced blocks of ``text`` in ``language``: (first line number, body)."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if m.group(1) == language:
            out.append((start, "\n".join(body) + "\n"))
        i += 1
    return out


def yaml_documents(text: str) -> list[Any]:
    """The documents of every ```` ```yaml ```` block of ``text`` (parsed by the tools venv's PyYAML)."""
    blocks = [body for _, body in fenced_blocks(text, "yaml")]
    result = subprocess.run([str(TOOLS_PYTHON), "-c", "import json, sys, yaml; "
                             "json.dump([list(yaml.safe_load_all(b)) for b in json.load(sys.stdin)], sys.stdout)"],
                            input=json.dumps(blocks), capture_output=True, text=True, check=True)
    parsed: list[list[Any]] = json.loads(result.stdout)
    return [doc for block in parsed for doc in block if doc]


def test_every_command_block_runs(tmp_path: Path) -> None:
    if not HELM.exists() or not TOOLS_PYTHON.exists():
        pytest.fail("helm and the tools venv are missing: run `make test` (its helm-tools rule)", pytrace=False)
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "helm").write_text(HELM_WRAPPER)
    for name in ("kubectl", "docker", "grpcurl", "curl"):
        (bin_dir / name).write_text(RECORDER)
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "REAL_HELM": str(HELM),
           "GOSTOP_DOCS_STATE": str(state)}
    blocks = sh_blocks(DOC.read_text())
    assert len(blocks) >= 4
    for line, script in blocks:
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"docs/kubernetes.md line {line}: exit {done.returncode}\n{done.stderr}"

    # The install: three replicas on the Redis of the operator's own Secret, the image given.
    installed = manifests(state / "install.yaml")
    deployment = one(installed, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("registry.example.com/gostop:")
    assert {"secretRef": {"name": "gostop"}} in container["envFrom"]
    assert not [d for d in installed if d["kind"] == "Secret"], "the operator's Secret is used, none made"
    assert "GOSTOP_REDIS_URL" not in one(installed, "ConfigMap")["data"]
    keys = set((state / "secret-keys").read_text().split())
    assert {"GOSTOP_TOKEN_SECRET", "GOSTOP_REDIS_URL", "GOSTOP_API_KEYS", "GOSTOP_OPERATOR_KEYS"} <= keys

    # The bot workers' upgrade: the key the page adds to the operator's Secret, read by the server
    # (envFrom) and by the workers (secretKeyRef) from that Secret, the Redis URL from the same
    # Secret, and the HPA asked for.
    renders = sorted(state.glob("upgrade-*.yaml"))
    assert len(renders) >= 2, "the bot-worker upgrade and the upgrade of the Upgrade section"
    with_workers = [docs for docs in map(manifests, renders)
                    if any(d["kind"] == "Deployment" and d["metadata"]["name"] == "gostop-bot-workers" for d in docs)]
    assert len(with_workers) >= 1
    bots = with_workers[0]
    assert one(bots, "Deployment", "gostop")["spec"]["replicas"] == 3, "--reuse-values kept the install's values"
    worker = one(bots, "Deployment", "gostop-bot-workers")["spec"]["template"]["spec"]["containers"][0]
    sources = {e["name"]: e.get("valueFrom") for e in worker["env"]}
    assert sources["GOSTOP_BOT_KEY"] == {"secretKeyRef": {"name": "gostop", "key": "GOSTOP_BOT_KEYS"}}
    assert sources["GOSTOP_REDIS_URL"] == {"secretKeyRef": {"name": "gostop", "key": "GOSTOP_REDIS_URL"}}
    assert "envFrom" not in worker, "the workers get their two secrets, not the token secret and API keys"
    hpa = one(bots, "HorizontalPodAutoscaler", "gostop-bot-workers")
    assert hpa["spec"]["maxReplicas"] == 20 and "replicas" not in one(bots, "Deployment", "gostop-bot-workers")["spec"]
    patch = next(line for line in (state / "calls.log").read_text().splitlines() if " patch secret gostop " in line)
    assert re.search(r'"GOSTOP_BOT_KEYS": "[0-9a-f]{48}"', patch), patch
    assert "kubectl -n games rollout restart deploy/gostop" in (state / "calls.log").read_text(), \
        "the server reads the new key at start: a Secret of your own is not watched"

    # The upgrade keeps those values and changes the image tag.
    upgraded = one(manifests(state / "upgrade.yaml"), "Deployment", "gostop")
    assert upgraded["spec"]["replicas"] == 3
    assert upgraded["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/gostop:0.2.0"
    calls = (state / "calls.log").read_text()
    assert "helm rollback gostop 1 -n games" in calls and "kubectl -n games create secret generic gostop" in calls

    check_the_browsers_section(renders, calls)
    check_the_tournaments_section(renders, calls)


def check_the_browsers_section(renders: list[Path], calls: str) -> None:
    """Browsers: the page's upgrade renders the HTTPRoute the page shows, on the listener
    of the page's example Gateway that the GRPCRoute's host names leave free; the server gets the
    route's https origin and the other site's in GOSTOP_CORS_ORIGINS; the page's curl calls go to the
    route's host name, at the Connect GET path and as a preflight of the allowed site."""
    with_route = [docs for docs in map(manifests, renders) if any(d["kind"] == "HTTPRoute" for d in docs)]
    assert len(with_route) == 1, "the Browsers section's upgrade"
    rendered = one(with_route[0], "HTTPRoute")
    documents = yaml_documents(DOC.read_text())
    [shown] = [d for d in documents if d.get("kind") == "HTTPRoute"]
    assert shown["spec"] == rendered["spec"], "the page shows the HTTPRoute the chart renders"
    assert shown["metadata"]["name"] == rendered["metadata"]["name"] == "gostop"
    assert shown["metadata"]["namespace"] == "games"
    assert one(with_route[0], "Deployment", "gostop")["spec"]["replicas"] == 3, "--reuse-values kept the install's"
    service = one(with_route[0], "Service", "gostop")
    [http_port] = [p for p in service["spec"]["ports"] if p["name"] == "http"]
    assert all(rule["backendRefs"] == [{"name": "gostop", "port": http_port["port"]}]
               for rule in rendered["spec"]["rules"])
    # The example Gateway: the route's listener is its own, with the route's host name.
    [gateway] = [d for d in documents if d.get("kind") == "Gateway"]
    [parent] = rendered["spec"]["parentRefs"]
    assert (gateway["metadata"]["name"], gateway["metadata"]["namespace"]) == (parent["name"], parent["namespace"])
    listeners = {listener["name"]: listener for listener in gateway["spec"]["listeners"]}
    [host] = rendered["spec"]["hostnames"]
    assert listeners[parent["sectionName"]]["hostname"] == host
    assert all(listener["hostname"] != host for name, listener in listeners.items() if name != parent["sectionName"])
    # CORS: the page's own origin behind TLS and the other site of config.corsOrigins.
    origins = one(with_route[0], "ConfigMap", "gostop")["data"]["GOSTOP_CORS_ORIGINS"].split(",")
    assert origins == ["https://games.example.com", f"https://{host}"]
    curls = [line for line in calls.splitlines() if line.startswith("curl ")]
    connect_get = f"https://{host}/gostop.v1.GameService/ListRuleSets?connect=v1&encoding=json&message=%7B%7D"
    assert any(connect_get in line for line in curls), curls
    preflight = next(line for line in curls if "-X OPTIONS" in line)
    assert f"https://{host}/gostop.v1.GameService/" in preflight
    origin = re.search(r"Origin: (\S+)", preflight)
    assert origin and origin.group(1) in origins


def check_the_tournaments_section(renders: list[Path], calls: str) -> None:
    """Tournaments: the page's upgrade renders the shards' Job recording into the Redis of
    the operator's Secret (GOSTOP_LADDER from its GOSTOP_REDIS_URL key, as the server's) with the keys
    of that Secret, and the merge Job, suspended; the page's kubectl calls wait for the rendered shards'
    Job, then unsuspend the rendered merge Job, wait for it and read its log."""
    with_tournament = [docs for docs in map(manifests, renders)
                       if any(d["kind"] == "Job" for d in docs)]
    assert len(with_tournament) == 1, "the Tournaments section's upgrade"
    docs = with_tournament[0]
    assert one(docs, "Deployment", "gostop")["spec"]["replicas"] == 3, "--reuse-values kept the install's"
    jobs = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in docs if d["kind"] == "Job"}
    assert set(jobs) == {"tournament", "tournament-merge"}
    shards, merge = jobs["tournament"], jobs["tournament-merge"]
    [shard] = shards["spec"]["template"]["spec"]["containers"]
    [merger] = merge["spec"]["template"]["spec"]["containers"]
    redis_url = {"secretKeyRef": {"name": "gostop", "key": "GOSTOP_REDIS_URL"}}
    for container in (shard, merger):
        assert {e["name"]: e.get("valueFrom") for e in container["env"]}["GOSTOP_LADDER"] == redis_url
    keys = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in shard["env"] if e["name"] != "GOSTOP_LADDER"}
    assert sorted(k["key"] for k in keys.values()) == ["GOSTOP_API_KEYS", "GOSTOP_OPERATOR_KEYS"]
    assert {k["name"] for k in keys.values()} == {"gostop"}
    assert shard["args"][shard["args"].index("--bots") + 1] == "random,greedy"
    assert merge["spec"]["suspend"] is True
    shards_name, merge_name = shards["metadata"]["name"], merge["metadata"]["name"]
    kubectl = [line for line in calls.splitlines() if line.startswith("kubectl -n games ")]
    wait = [i for i, line in enumerate(kubectl)
            if f"wait --for=condition=complete --timeout=24h job/{shards_name}" in line]
    patch = [i for i, line in enumerate(kubectl) if line.startswith(f"kubectl -n games patch job/{merge_name} ")]
    assert len(wait) == len(patch) == 1 and wait[0] < patch[0], kubectl
    body = re.search(r"-p (\{.*\})$", kubectl[patch[0]])
    assert body and json.loads(body.group(1)) == {"spec": {"suspend": False}}
    assert "--type merge -p" in kubectl[patch[0]]
    after = kubectl[patch[0] + 1:]
    assert any(f"wait --for=condition=complete --timeout=1h job/{merge_name}" in line for line in after), after
    assert any(line.endswith(f"logs job/{merge_name}") for line in after), after


def test_the_keda_example_scales_the_charts_workers_on_the_queue(tmp_path: Path) -> None:
    """The page's KEDA ScaledObject (an example) targets the chart's worker Deployment for the
    page's release, queries a gauge the workers export, under the job label their ServiceMonitor
    gives, as valid PromQL; and the values the page gives leave the replica count to it."""
    from prometheus_client import CollectorRegistry

    from gostop.service.programs.botworker import WorkerMetrics

    [scaled] = [d for d in yaml_documents(DOC.read_text()) if d.get("kind") == "ScaledObject"]
    args = ["--namespace", "games", "--set", "redis.url=redis://redis:6379/0", "--set", "botWorkers.enabled=true",
            "--set", "metrics.serviceMonitor.enabled=true", "--set", "botWorkers.autoscaling.enabled=false",
            "--set", "botWorkers.replicas=null"]
    rendered = subprocess.run([str(HELM), "template", "gostop", str(ROOT / "helm/gostop"), *args],
                              capture_output=True, text=True, timeout=60, check=True).stdout
    (tmp_path / "render.yaml").write_text(rendered)
    docs = manifests(tmp_path / "render.yaml")
    deployment = one(docs, "Deployment", scaled["spec"]["scaleTargetRef"]["name"])
    assert deployment["metadata"]["labels"]["app.kubernetes.io/component"] == "bot-worker"
    assert "replicas" not in deployment["spec"], "KEDA owns the replica count"
    assert not [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
    assert scaled["metadata"]["namespace"] == "games"
    [trigger] = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    query = trigger["metadata"]["query"]
    registry = CollectorRegistry()
    WorkerMetrics(registry)
    gauges = {f.name for f in registry.collect() if f.type == "gauge"}
    metric = re.match(r"max\((\w+)\{", query)
    assert metric and metric.group(1) == "gostop_bot_turns_pending" and metric.group(1) in gauges
    # The ServiceMonitor's job label is the worker Service's name (prometheus-operator's default).
    monitor = one(docs, "ServiceMonitor", "gostop-bot-workers")
    service = one(docs, "Service", "gostop-bot-workers")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert f'job="{service["metadata"]["name"]}", namespace="games"' in query
    parse = "import sys, promql_parser; promql_parser.parse(sys.stdin.read())"
    parsed = subprocess.run([str(TOOLS_PYTHON), "-c", parse], input=query, capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    assert int(trigger["metadata"]["threshold"]) > 0


def test_the_chart_refuses_a_secret_url_without_a_secret() -> None:
    result = subprocess.run([str(HELM), "template", "gostop", str(ROOT / "helm/gostop"), "--set",
                             "redis.urlFromSecret=true"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    expected = "redis.urlFromSecret reads GOSTOP_REDIS_URL from your own Secret: set secrets.existingSecret"
    assert expected in result.stderr
