"""Every command block of ``docs/kubernetes.md``, run as written, with real helm and no cluster.

Regression: the page's install recipe was refused by the chart (its store check looked only at
``redis.url``, not at the ``GOSTOP_REDIS_URL`` the recipe puts in your own Secret), and its
rollback line did not parse in a shell. Here each ```` ```sh ```` block runs in order under bash
(``set -euo pipefail``) from the repository root, with:

- ``helm`` real, except that ``install`` and ``upgrade`` render with ``helm template`` (an upgrade
  with ``--reuse-values`` reuses the install's values, as helm would) and ``history`` and
  ``rollback`` are recorded: there is no cluster to talk to;
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

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "kubernetes.md"
HELM = ROOT / ".tools" / "bin" / "helm"
TOOLS_PYTHON = ROOT / ".tools" / "venv" / "bin" / "python"
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
    exec "$REAL_HELM" template "$name" "$chart" "${args[@]}" > "$state/upgrade.yaml" ;;
  history|rollback) echo "helm $*" >> "$state/calls.log" ;;
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
        if m.group(1) == "sh":
            out.append((start, "\n".join(body) + "\n"))
        i += 1
    return out


def manifests(path: Path) -> list[dict[str, Any]]:
    result = subprocess.run([str(TOOLS_PYTHON), "-c", "import json, sys, yaml; "
                             "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)"],
                            input=path.read_text(), capture_output=True, text=True, check=True)
    docs: list[dict[str, Any]] = json.loads(result.stdout)
    return docs


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind]
    return found


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

    # The upgrade keeps those values and changes the image tag.
    upgraded = one(manifests(state / "upgrade.yaml"), "Deployment")
    assert upgraded["spec"]["replicas"] == 3
    assert upgraded["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/gostop:0.2.0"
    calls = (state / "calls.log").read_text()
    assert "helm rollback gostop 1 -n games" in calls and "kubectl -n games create secret generic gostop" in calls


def test_the_chart_refuses_a_secret_url_without_a_secret() -> None:
    result = subprocess.run([str(HELM), "template", "gostop", str(ROOT / "helm/gostop"), "--set",
                             "redis.urlFromSecret=true"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    expected = "redis.urlFromSecret reads GOSTOP_REDIS_URL from your own Secret: set secrets.existingSecret"
    assert expected in result.stderr
