"""The TypeScript and Go clients (``clients/typescript``, ``clients/go``) against a live server.

The module builds both clients through the Makefile (``make ts-client go-client``: ``npm ci`` from
the lock, code generation with buf and protoc-gen-es, ``tsc``; the Go protoc plugins at pinned
versions in ``.tools/bin``, ``go build`` and ``go vet``), starts the embedded server on a free
loopback port with a token secret and an operator key, and runs each client's example bot (a whole
standard 2-player round with random legal actions, watched by a spectator) and conformance runner
(every ``tests/conformance/scenarios/*.json``, closing with ``N passed, N failed``). It also checks
that the committed Go code in ``clients/go/gen`` is what the pinned generators produce now, runs
the Go unit tests and a typed error of the TypeScript wrapper. The TypeScript programs that leave a
watch early (``break``, ``return``, a throw, ``return()``) or close the client while a watch is
open must exit by themselves: an open stream or connection would keep Node running.

The server also serves its HTTP port, and the TypeScript client's programs run over each of its
ways there: the Node client with the Connect protocol (HTTP/1.1 and HTTP/2) and
gRPC-Web, and the browser entry (``createBrowserClient``: Connect or gRPC-Web over ``fetch``, as
in a page), beside gRPC on the gRPC port: the conformance scenarios, the typed errors, leaving a
watch early and ``close()``.

The first build downloads the npm packages and Go modules (about a minute); later runs reuse
``node_modules``, ``.tools`` and the Go caches and take a few seconds.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from testkit.client_programs import Ports, both_ports, explain, run

# Not in make check: the TypeScript and Go clients, built with their toolchains.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
TS_DIR: Final = ROOT / "clients" / "typescript"
GO_DIR: Final = ROOT / "clients" / "go"
SCENARIOS: Final = ROOT / "tests" / "conformance" / "scenarios"
BUF: Final = ROOT / ".tools" / "node_modules" / ".bin" / "buf"
SECRET: Final = "clients-ts-go-token-secret-0123456789"
OPERATOR_KEY: Final = "clients-ts-go-operator-key"
BUILD_TIMEOUT: Final = 900.0
# A program that must exit by itself: it takes well under a second; what the bound catches is a
# stream or connection left open, which keeps Node running for as long as the game stays open.
EXIT_TIMEOUT: Final = 60.0
SUMMARY: Final = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)


def run_to_exit(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``args`` run to their end, which they must reach by themselves (killed after EXIT_TIMEOUT)."""
    try:
        return run(args, cwd, timeout=EXIT_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as hung:
        out = hung.stdout.decode() if isinstance(hung.stdout, bytes) else hung.stdout or ""
        pytest.fail(f"{' '.join(args)} did not exit by itself (something keeps Node running)\n--- stdout\n{out}")


@pytest.fixture(scope="module")
def built() -> None:
    """Both clients, built by the Makefile rules (a no-op when they are up to date)."""
    for tool in ("make", "npm", "node", "go"):
        assert shutil.which(tool), f"{tool} is needed to build the TypeScript and Go clients"
    result = run(["make", "--no-print-directory", "ts-client", "go-client"], ROOT, timeout=BUILD_TIMEOUT)
    assert result.returncode == 0, "make ts-client go-client failed\n" + explain(result)


@pytest.fixture(scope="module")
def ports(built: None) -> Iterator[Ports]:
    """The embedded server (memory store) with both ports on free loopback ports."""
    with both_ports(SECRET, OPERATOR_KEY) as found:
        yield found


@pytest.fixture(scope="module")
def server(ports: Ports) -> str:
    """The server's gRPC host:port."""
    return ports.grpc


def scenario_count() -> int:
    return len(list(SCENARIOS.glob("*.json")))


def check_conformance(result: subprocess.CompletedProcess[str]) -> None:
    found = SUMMARY.findall(result.stdout)
    assert found, "no 'N passed, N failed' line\n" + explain(result)
    passed, failed = (int(n) for n in found[-1])
    assert passed + failed > 0, "the runner found no scenario\n" + explain(result)
    assert failed == 0, f"{failed} scenario(s) failed\n" + explain(result)
    assert passed == scenario_count(), f"{passed} passed of {scenario_count()} files\n" + explain(result)
    assert result.returncode == 0, explain(result)


def check_bot(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, explain(result)
    assert "round over:" in result.stdout, explain(result)
    assert re.search(r"^done: \d+ actions, final version \d+$", result.stdout, re.MULTILINE), explain(result)


# ------------------------------------------------------------------------------ TypeScript


@dataclass(frozen=True, slots=True)
class TsTransport:
    """One way for the TypeScript client to reach the server."""

    protocol: str  # grpc, connect or grpc-web
    http_version: str = ""  # "1.1" or "2" for the Node client's Connect and gRPC-Web; "" otherwise
    fetch: bool = False  # the browser entry (createBrowserClient over fetch) instead of the Node client

    def address(self, ports: Ports) -> str:
        return ports.grpc if self.protocol == "grpc" else ports.http

    def conformance_options(self) -> list[str]:
        options = ["--protocol", self.protocol]
        if self.http_version:
            options += ["--http-version", self.http_version]
        return options + (["--fetch"] if self.fetch else [])

    def description(self) -> str:
        """How the conformance runner says it reaches the server."""
        if self.fetch:
            return f"{self.protocol} over fetch (the browser entry)"
        return f"{self.protocol} over HTTP/{self.http_version or '2'} (Node)"

    def script_args(self, ports: Ports) -> list[str]:
        """The arguments of TS_CONNECT's scripts: address, protocol, HTTP version, node or fetch."""
        return [self.address(ports), self.protocol, self.http_version or "-", "fetch" if self.fetch else "node"]


TS_TRANSPORTS: Final = {
    "grpc": TsTransport("grpc"),
    "connect": TsTransport("connect", "1.1"),
    "connect-h2": TsTransport("connect", "2"),
    "grpc-web": TsTransport("grpc-web", "1.1"),
    "fetch-connect": TsTransport("connect", fetch=True),
    "fetch-grpc-web": TsTransport("grpc-web", fetch=True),
}
# The examples take the Node client's protocol from GOSTOP_PROTOCOL (HTTP/1.1 for the HTTP port).
TS_EXAMPLE_TRANSPORTS: Final = ["grpc", "connect", "grpc-web"]

# The start of the scripts below: `connect(key)` makes the client of the transport in process.argv
# (TsTransport.script_args, then the operator key).
TS_CONNECT: Final = """
import { GostopClient, GostopError, Code, createBrowserClient } from "./dist/src/node.js";
const [address, protocol, httpVersion, via, operatorKey] = process.argv.slice(1);
function connect(apiKey) {
  return via === "fetch"
    ? createBrowserClient({ baseUrl: `http://${address}`, protocol, apiKey })
    : new GostopClient({ address, protocol, ...(httpVersion === "-" ? {} : { httpVersion }), apiKey });
}
"""


def ts_script(source: str, transport: TsTransport, ports: Ports) -> list[str]:
    return ["node", "--input-type=module", "-e", TS_CONNECT + source, *transport.script_args(ports), OPERATOR_KEY]


def ts_example(name: str, transport: str, ports: Ports) -> subprocess.CompletedProcess[str]:
    """``examples/<name>.ts`` run to its end over ``transport`` (one of TS_EXAMPLE_TRANSPORTS)."""
    ts_example_source(name)
    chosen = TS_TRANSPORTS[transport]
    return run_to_exit(["node", f"dist/examples/{name}.js", chosen.address(ports)], TS_DIR,
                       env={"GOSTOP_API_KEY": OPERATOR_KEY, "GOSTOP_PROTOCOL": chosen.protocol})


def ts_example_source(name: str) -> str:
    """The source of ``examples/<name>.ts``, which must end without process.exit (the point of the test)."""
    source = (TS_DIR / "examples" / f"{name}.ts").read_text()
    assert "process.exit(" not in source, f"examples/{name}.ts must exit by itself, not by process.exit"
    return source


@pytest.mark.parametrize("transport", TS_EXAMPLE_TRANSPORTS)
def test_ts_random_bot_plays_a_whole_round(ports: Ports, transport: str) -> None:
    """The bot plays a round while a spectator watches, closes its client and exits by itself."""
    check_bot(ts_example("random-bot", transport, ports))


@pytest.mark.parametrize("transport", list(TS_TRANSPORTS))
def test_ts_conformance(ports: Ports, transport: str) -> None:
    """Every scenario passes over each protocol: gRPC, and Connect and gRPC-Web from Node and through fetch."""
    assert scenario_count() > 0, f"no scenarios in {SCENARIOS}"
    chosen = TS_TRANSPORTS[transport]
    result = run(["node", "dist/src/conformance.js", "--server", chosen.address(ports), *chosen.conformance_options(),
                  "--operator-key", OPERATOR_KEY, "--scenarios", str(SCENARIOS)], TS_DIR)
    assert result.stdout.startswith(f"conformance: {chosen.description()} to "), explain(result)
    check_conformance(result)


TS_ERROR_SCRIPT: Final = """
const client = connect(operatorKey);
try {
  await client.getGame("no-such-game");
  console.log("no error");
} catch (error) {
  const e = GostopError.from(error);
  console.log(`${Code[e.code]} ${e.reason} ${e.domain} ${e.metadata["game_id"]}`);
}
try {
  await client.createGame({ preset: "standard", players: 2 }, { timeoutMs: 5000 });
  const other = connect(undefined);
  await other.createGame({ preset: "standard" });
  console.log("no error");
} catch (error) {
  const e = GostopError.from(error);
  console.log(`${Code[e.code]} ${e.reason}`);
}
process.exit(0);
"""


@pytest.mark.parametrize("transport", list(TS_TRANSPORTS))
def test_ts_typed_errors(ports: Ports, transport: str) -> None:
    result = run(ts_script(TS_ERROR_SCRIPT, TS_TRANSPORTS[transport], ports), TS_DIR)
    assert result.returncode == 0, explain(result)
    assert result.stdout.splitlines() == [
        "NotFound GAME_NOT_FOUND gostop.v1 no-such-game",
        "Unauthenticated BAD_CREDENTIALS",
    ], explain(result)


@pytest.mark.parametrize("transport", TS_EXAMPLE_TRANSPORTS)
def test_ts_break_from_watch_kept_node_alive(ports: Ports, transport: str) -> None:
    """Regression: ``break`` in a ``for await`` over ``client.watch()`` left the stream open."""
    result = ts_example("first-event", transport, ports)
    assert result.returncode == 0, explain(result)
    lines = result.stdout.splitlines()
    assert len(lines) == 3, explain(result)
    assert re.fullmatch(r"watching game \S+", lines[0]), explain(result)
    assert re.fullmatch(r"first event: version 1 [a-zA-Z]+", lines[1]), explain(result)  # dealt, or redealt
    assert lines[2] == "left the watch", explain(result)
    assert result.stderr == "", explain(result)


TS_LEAVE_WATCH_SCRIPT: Final = """
const client = connect(operatorKey);
const { gameId } = await client.createGame({ preset: "standard", players: 2 });
async function firstVersion() {
  for await (const { version } of client.watch(gameId)) {
    return version;
  }
}
console.log(`return: ${await firstVersion()}`);
try {
  for await (const { version } of client.watch(gameId)) {
    throw new Error(`thrown at ${version}`);
  }
} catch (error) {
  console.log(`throw: ${error.message}`);
}
const watch = client.watch(gameId, { afterVersion: 0 });
const first = await watch.next();
await watch.return();
console.log(`return(): ${first.value.version} then done=${(await watch.next()).done}`);
"""


@pytest.mark.parametrize("transport", list(TS_TRANSPORTS))
def test_ts_return_or_throw_from_watch_kept_node_alive(ports: Ports, transport: str) -> None:
    """Regression: leaving a watch by ``return``, a throw or the iterator's ``return()`` left the stream open."""
    result = run_to_exit(ts_script(TS_LEAVE_WATCH_SCRIPT, TS_TRANSPORTS[transport], ports), TS_DIR)
    assert result.returncode == 0, explain(result)
    wanted = ["return: 1", "throw: thrown at 1", "return(): 1 then done=true"]
    assert result.stdout.splitlines() == wanted, explain(result)
    assert result.stderr == "", explain(result)


TS_CLOSE_SCRIPT: Final = """
const client = connect(operatorKey);
const { gameId } = await client.createGame({ preset: "standard", players: 2 });
const failure = (error) => { const e = GostopError.from(error); return `${Code[e.code]} ${e.rawMessage}`; };
let first;
const opened = new Promise((resolve) => (first = resolve));
const watched = (async () => {
  try {
    for await (const _ of client.watch(gameId)) first();
    return "ended";
  } catch (error) {
    return failure(error);
  }
})();
await opened;
client.close();
console.log(`watch: ${await watched}`);
console.log(`after: ${await client.getGame(gameId).then(() => "no error", failure)}`);
console.log(`raw: ${await client.raw.listRuleSets({}).then(() => "no error", failure)}`);
"""


@pytest.mark.parametrize("transport", list(TS_TRANSPORTS))
def test_ts_close_ends_every_transport(ports: Ports, transport: str) -> None:
    """``close()`` aborts an open watch and refuses later calls (also raw ones) on every transport; Node exits."""
    result = run_to_exit(ts_script(TS_CLOSE_SCRIPT, TS_TRANSPORTS[transport], ports), TS_DIR)
    assert result.returncode == 0, explain(result)
    closed = "Canceled client closed: GostopClient.close() was called"
    assert result.stdout.splitlines() == [f"watch: {closed}", f"after: {closed}", f"raw: {closed}"], explain(result)
    assert result.stderr == "", explain(result)


@pytest.mark.parametrize("transport", TS_EXAMPLE_TRANSPORTS)
def test_ts_close_aborts_the_open_watch_and_fails_later_calls(ports: Ports, transport: str) -> None:
    """``close()`` with a watch open: the watch, the call in flight and every later call fail as closed; Node exits."""
    result = ts_example("close-watch", transport, ports)
    assert result.returncode == 0, explain(result)
    closed = "Canceled client closed: GostopClient.close() was called"
    lines = result.stdout.splitlines()
    assert len(lines) == 7, explain(result)
    assert re.fullmatch(r"game \S+ created at version 1", lines[0]), explain(result)
    # Version 1 may hold several events (the deal, bonus cards captured...): close() comes after the
    # first, and the others may already have arrived in the same read.
    assert re.fullmatch(rf"watch aborted after [1-9][0-9]* event\(s\): {re.escape(closed)}", lines[2]), explain(result)
    assert lines[1:2] + lines[3:] == [
        "closed: true",
        f"call in flight: {closed}",
        f"getGame after close: {closed}",
        f"watch after close: {closed}",
        f"raw call after close: {closed}",
    ], explain(result)
    assert result.stderr == "", explain(result)


def test_ts_watch_docs_show_the_example(built: None) -> None:
    """docs/clients.md's early-exit snippet is the one examples/first-event.ts runs (in the test above)."""
    docs = (ROOT / "docs" / "clients.md").read_text()
    snippet = re.search(r"```ts\n(for await \(const \{ version, event \} of client\.watch\(gameId\)\) \{\n.*?)```",
                        docs, re.DOTALL)
    assert snippet, "docs/clients.md has no early-exit watch snippet"
    example = [line.strip() for line in ts_example_source("first-event").splitlines()]
    wanted = [line.strip() for line in snippet.group(1).splitlines()]
    assert any(example[i:i + len(wanted)] == wanted for i in range(len(example))), (wanted, example)


# ------------------------------------------------------------------------------ Go


def test_go_random_bot_plays_a_whole_round(server: str) -> None:
    result = run([str(GO_DIR / "bin" / "randombot"), "-server", server, "-api-key", OPERATOR_KEY], GO_DIR)
    check_bot(result)


def test_go_conformance(server: str) -> None:
    assert scenario_count() > 0, f"no scenarios in {SCENARIOS}"
    result = run([str(GO_DIR / "bin" / "conformance"), "-server", server, "-operator-key", OPERATOR_KEY,
                  "-scenarios", str(SCENARIOS)], GO_DIR)
    check_conformance(result)


def test_go_unit_tests(built: None) -> None:
    result = run(["go", "test", "-buildvcs=false", "./..."], GO_DIR, timeout=BUILD_TIMEOUT)
    assert result.returncode == 0, explain(result)


def test_go_generated_code_is_up_to_date(built: None, tmp_path: Path) -> None:
    """``clients/go/gen`` is committed: regenerating it with the pinned plugins changes nothing."""
    result = run([str(BUF), "generate", "--template", "buf.gen.yaml", "--output", str(tmp_path)], GO_DIR)
    assert result.returncode == 0, explain(result)
    fresh = sorted(p.relative_to(tmp_path / "gen") for p in (tmp_path / "gen").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(GO_DIR / "gen") for p in (GO_DIR / "gen").rglob("*") if p.is_file())
    assert fresh, "buf generated nothing"
    assert fresh == committed, f"generated files differ: {fresh} vs {committed}; run `make go-generate`"
    stale = [str(p) for p in fresh if not filecmp.cmp(tmp_path / "gen" / p, GO_DIR / "gen" / p, shallow=False)]
    assert not stale, f"clients/go/gen is out of date ({stale}); run `make go-generate`"
