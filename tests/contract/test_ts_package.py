"""The TypeScript client as a package that runs in browsers and in Node.

``clients/typescript`` is one npm package, ``@gostop/client``: its main entry is browser-safe (the
wrapper over a Connect transport and ``createBrowserClient`` over ``fetch``), its ``/node`` entry
adds the Node client (gRPC over HTTP/2, or Connect over HTTP/1.1 or 2). The module builds it
through the Makefile (``make ts-client``) and checks:

- the browser entry bundles for browsers (esbuild, ``platform: "browser"``) with no Node built-in
  module reachable from it, while the same check fails on the Node entry (so it can fail);
- ``package.json`` is publishable: not private, a version, ES modules, ``exports`` with types,
  ``files`` and a README;
- ``npm pack`` makes a tarball that installs into an empty project (its dependencies from the npm
  cache or registry), where both entries import, type-check as their users compile them (the
  browser entry against the DOM library without Node's types), a page importing the package
  bundles for browsers, and the installed package plays against a live server (gRPC from Node,
  Connect through fetch);
- request ids are UUIDs also where ``crypto.randomUUID`` is missing (pages over plain HTTP).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from gostop.service.config import Config
from gostop.service.embedded import EmbeddedServer

# Not in make check: the TypeScript package, built and packed with npm.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
TS_DIR: Final = ROOT / "clients" / "typescript"
CHECK_BUNDLE: Final = TS_DIR / "tools" / "check-browser-bundle.mjs"
TSC: Final = TS_DIR / "node_modules" / ".bin" / "tsc"
SECRET: Final = "ts-package-token-secret-0123456789abcdef"
OPERATOR_KEY: Final = "ts-package-operator-key"
BUILD_TIMEOUT: Final = 900.0
RUN_TIMEOUT: Final = 300.0
UUID_V4: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False)


def explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"


def node_script(source: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``source`` run by Node as an ES module in ``cwd`` (so that bare imports resolve from there)."""
    return run(["node", "--input-type=module", "-e", source, *args], cwd)


@pytest.fixture(scope="module")
def built() -> None:
    """The package, built by the Makefile rule (a no-op when it is up to date)."""
    for tool in ("make", "npm", "node"):
        assert shutil.which(tool), f"{tool} is needed to build the TypeScript client"
    result = subprocess.run(["make", "--no-print-directory", "ts-client"], cwd=ROOT, capture_output=True,
                            text=True, timeout=BUILD_TIMEOUT, check=False)
    assert result.returncode == 0, "make ts-client failed\n" + explain(result)


@pytest.fixture(scope="module")
def installed(built: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty project with the ``npm pack`` tarball installed; returns the project's folder."""
    packed = tmp_path_factory.mktemp("pack")
    result = run(["npm", "pack", "--json", "--pack-destination", str(packed)], TS_DIR)
    assert result.returncode == 0, explain(result)
    tarball = packed / json.loads(result.stdout)[0]["filename"]
    assert tarball.is_file(), explain(result)
    project = tmp_path_factory.mktemp("consumer")
    (project / "package.json").write_text(json.dumps({"name": "consumer", "private": True, "type": "module"}))
    result = run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", str(tarball)], project)
    assert result.returncode == 0, "the tarball did not install\n" + explain(result)
    return project


def free_port() -> int:
    """A loopback port nobody listens on now (the embedded server does not report its HTTP port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(built: None) -> Iterator[tuple[str, str]]:
    """The embedded server (memory store); yields its gRPC port and its HTTP port as host:port."""
    http = f"127.0.0.1:{free_port()}"
    cfg = Config(listen="127.0.0.1:0", http_listen=http, metrics_port=0, token_secret=SECRET,
                 operator_keys=OPERATOR_KEY, log_level="warning", log_format="json")
    with EmbeddedServer(cfg) as embedded:
        yield embedded.target, http


def check_bundle(entry: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run(["node", str(CHECK_BUNDLE), str(entry)], cwd)


# ------------------------------------------------------------------------------ the browser entry


def test_the_browser_entry_bundles_without_node_modules(built: None) -> None:
    result = check_bundle(TS_DIR / "dist" / "src" / "index.js", TS_DIR)
    assert result.returncode == 0, explain(result)
    assert re.search(r"browser bundle of \S+index\.js: \d+ modules, \d+ bytes, no Node built-in", result.stdout), (
        explain(result))


def test_the_bundle_check_fails_on_the_node_entry(built: None) -> None:
    """The check above can fail: the Node entry reaches node:http2 (through connect-node) and node:http."""
    result = check_bundle(TS_DIR / "dist" / "src" / "node.js", TS_DIR)
    assert result.returncode == 1, explain(result)
    assert 'Could not resolve "node:http2"' in result.stdout, explain(result)
    assert re.search(r"dist/src/node\.js:\d+: Could not resolve \"node:http\"", result.stdout), explain(result)


def test_request_ids_are_uuids_without_crypto_random_uuid(built: None) -> None:
    """Browsers give ``crypto.randomUUID`` to secure contexts only: a page over plain HTTP builds the id itself."""
    script = """
import { newRequestId } from "./dist/src/index.js";
const native = newRequestId("a");
Object.defineProperty(globalThis.crypto, "randomUUID", { value: undefined, configurable: true });
const ids = Array.from({ length: 100 }, () => newRequestId("b"));
console.log(native);
console.log(ids[0]);
console.log(new Set(ids).size);
"""
    result = node_script(script, TS_DIR)
    assert result.returncode == 0, explain(result)
    native, built_id, distinct = result.stdout.splitlines()
    assert re.fullmatch(f"a-{UUID_V4}", native), explain(result)
    assert re.fullmatch(f"b-{UUID_V4}", built_id), explain(result)
    assert distinct == "100", explain(result)


# ------------------------------------------------------------------------------ the package


def test_package_json_is_publishable() -> None:
    package = json.loads((TS_DIR / "package.json").read_text())
    assert package["name"] == "@gostop/client"
    assert "private" not in package
    assert re.fullmatch(r"\d+\.\d+\.\d+", package["version"])
    assert package["type"] == "module"
    for entry, stem in ((".", "index"), ("./node", "node")):
        conditions = package["exports"][entry]
        assert list(conditions) == ["types", "default"], conditions  # types first, as TypeScript reads them
        assert conditions["types"] == f"./dist/src/{stem}.d.ts"
        assert conditions["default"] == f"./dist/src/{stem}.js"
    assert "README.md" in package["files"]
    assert set(package["dependencies"]) >= {"@connectrpc/connect-web", "@connectrpc/connect-node"}
    readme = (TS_DIR / "README.md").read_text()
    for topic in ("## Install", "## In a browser", "## In Node", "## Errors", "## Watch", "## Close"):
        assert topic in readme, f"README.md has no {topic!r} section"


def test_npm_pack_installs_into_an_empty_project(installed: Path) -> None:
    """Both entries import from the installed tarball; the Node client is the browser-safe client, specialised."""
    script = """
import * as web from "@gostop/client";
import * as node from "@gostop/client/node";
import pkg from "@gostop/client/package.json" with { type: "json" };
const client = node.createBrowserClient({ baseUrl: "http://127.0.0.1:9" });
const nodeClient = new node.GostopClient({ address: "127.0.0.1:9", protocol: "connect" });
console.log(pkg.name, pkg.version);
console.log(typeof web.createBrowserClient, typeof web.GostopError, "node" in web ? "leak" : "ok");
console.log(client instanceof web.GostopClient, nodeClient instanceof web.GostopClient);
nodeClient.close();
console.log(nodeClient.closed);
"""
    result = node_script(script, installed)
    assert result.returncode == 0, explain(result)
    package = json.loads((TS_DIR / "package.json").read_text())
    assert result.stdout.splitlines() == [
        f"@gostop/client {package['version']}", "function function ok", "true true", "true"], explain(result)
    shipped = installed / "node_modules" / "@gostop" / "client"
    assert (shipped / "README.md").is_file()
    assert not (shipped / "dist" / "src" / "conformance.js").exists(), "the conformance runner is not for users"
    assert not (shipped / "dist" / "examples").exists()


BROWSER_USER: Final = """
import { createBrowserClient, GostopClient, GostopError, Code, Phase, newRequestId, seatToken, type GameView,
  type CreateGameResponse } from "@gostop/client";
const client: GostopClient = createBrowserClient({ baseUrl: location.origin, protocol: "grpc-web" });
export async function firstMove(game: CreateGameResponse): Promise<GameView | undefined> {
  try {
    const { view } = await client.getGame(game.gameId, { token: seatToken(game, 0) });
    return view?.phase === Phase.OVER ? undefined : view;
  } catch (error) {
    if (GostopError.from(error).code === Code.NotFound) return undefined;
    throw error;
  }
}
export const id: string = newRequestId();
"""

NODE_USER: Final = """
import { GostopClient, type NodeClientOptions } from "@gostop/client/node";
import type { GostopClient as BrowserSafeClient } from "@gostop/client";
const options: NodeClientOptions = { address: "127.0.0.1:50051", protocol: "grpc" };
export const client: BrowserSafeClient = new GostopClient(options);
"""


def type_check(project: Path, name: str, source: str, options: dict[str, object]) -> subprocess.CompletedProcess[str]:
    (project / f"{name}.ts").write_text(source)
    config = {"compilerOptions": {"target": "es2022", "strict": True, "noEmit": True, "types": [], **options},
              "files": [f"{name}.ts"]}
    (project / f"tsconfig.{name}.json").write_text(json.dumps(config))
    return run([str(TSC), "-p", f"tsconfig.{name}.json"], project)


@pytest.mark.parametrize("resolution", ["bundler", "nodenext"])
def test_the_installed_browser_entry_type_checks_in_a_page(installed: Path, resolution: str) -> None:
    """As a page compiles it: the DOM library, no Node types, and the package's own declarations checked too."""
    module = "esnext" if resolution == "bundler" else "nodenext"
    result = type_check(installed, f"page_{resolution}", BROWSER_USER, {
        "module": module, "moduleResolution": resolution, "lib": ["es2022", "dom"], "skipLibCheck": False})
    assert result.returncode == 0, explain(result)


def test_the_installed_node_entry_type_checks(installed: Path) -> None:
    result = type_check(installed, "program", NODE_USER, {
        "module": "nodenext", "moduleResolution": "nodenext", "lib": ["es2022"], "skipLibCheck": True})
    assert result.returncode == 0, explain(result)


def test_a_page_importing_the_installed_package_bundles_for_browsers(installed: Path) -> None:
    page = installed / "page.js"
    page.write_text('import { createBrowserClient } from "@gostop/client";\n'
                    "const client = createBrowserClient();\n"
                    "client.listRuleSets().then((sets) => console.log(sets.length));\n")
    result = check_bundle(page, installed)
    assert result.returncode == 0, explain(result)
    assert "no Node built-in" in result.stdout, explain(result)


PLAY: Final = """
import { GostopClient } from "@gostop/client/node";
import { createBrowserClient, seatToken } from "@gostop/client";
const [grpc, http, apiKey] = process.argv.slice(1);
// Node over gRPC creates the game; the browser entry (Connect over fetch) plays its first move.
const node = new GostopClient({ address: grpc, apiKey });
const web = createBrowserClient({ baseUrl: `http://${http}` });
const sets = await web.listRuleSets();
const game = await node.createGame({ preset: "standard", players: 2, seed: 7n });
const seat = game.view.toMove;
const { view, version } = await web.getGame(game.gameId, { token: seatToken(game, seat) });
const result = await web.submitAction({
  gameId: game.gameId, token: seatToken(game, seat), expectedVersion: version, action: view.legalActions[0].id });
console.log(`${sets.some((s) => s.preset === "standard")} ${game.version} ${result.version}`);
node.close();
"""


def test_the_installed_package_plays_against_a_live_server(installed: Path, server: tuple[str, str]) -> None:
    """Both entries of the installed package call the live server: gRPC from Node, Connect through fetch."""
    grpc, http = server
    result = node_script(PLAY, installed, grpc, http, OPERATOR_KEY)
    assert result.returncode == 0, explain(result)
    assert result.stdout.splitlines() == ["true 1 2"], explain(result)
