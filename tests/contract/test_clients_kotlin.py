"""The Kotlin client (``clients/kotlin``) against a live server.

The module builds the client through the Makefile (``make kotlin-client``: Maven with its local
repository in ``clients/kotlin/.m2``; protoc and protoc-gen-connect-kotlin from Maven Central
generate the code from ``proto/``; ``mvn install`` compiles, runs the unit tests and installs the
library), starts the embedded server on a free loopback port (gRPC) and a free HTTP port (Connect
and gRPC-Web) with a token secret and an operator key, and runs the client's programs with
``java`` on the class path Maven wrote (``examples/target/classpath.txt``), over each protocol:

- the conformance runner: every ``tests/conformance/scenarios/*.json``, closing with ``N passed,
  N failed``;
- the typed errors: a missing game, a wrong preset, a stale version, a seat that is not to move, a
  token of another game's seat, a token that is no token and a watch of a missing game (a stream's
  error), each with its code, ErrorInfo reason and metadata;
- the watch Flow: leaving it early, resuming after a proxy cut every connection every 7 events
  (every event once, in order) and ``close()`` ending an open watch and later calls; the program
  must exit by itself (nothing of the client may keep the JVM running);
- a step whose reply is lost (a proxy closes the connection once the server answers): retried
  with the same request id, applied once (Connect and gRPC-Web, over HTTP/1.1);
- the random bot: a whole round watched by a spectator.

The example ``BotService`` server (grpc-java) plays a small duplicate tournament against
``greedy``, as the Go and TypeScript ones do in ``test_remote_bots.py``.

The first build downloads the Maven artifacts into ``clients/kotlin/.m2`` (a minute or two); later
runs reuse them and take a few seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from testkit.client_programs import RUN_TIMEOUT, Ports, bot_server, both_ports, explain, run

# Not in make check: the Kotlin client, built with Maven and run on the JVM.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
KT_DIR: Final = ROOT / "clients" / "kotlin"
EXAMPLES: Final = KT_DIR / "examples"
SCENARIOS: Final = ROOT / "tests" / "conformance" / "scenarios"
SECRET: Final = "clients-kotlin-token-secret-0123456789"
OPERATOR_KEY: Final = "clients-kotlin-operator-key"
BUILD_TIMEOUT: Final = 900.0
# A program that must exit by itself: what the bound catches is a thread of the client left running.
EXIT_TIMEOUT: Final = 60.0
SUMMARY: Final = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)
DEALS: Final = 2
"""Deals of the tournament: each played in both rotations, so 2 * DEALS games."""
PROTOCOLS: Final = ["connect", "grpc", "grpc-web"]
# The programs are short-lived: the JVM's quick compiler alone and the serial collector start them faster.
JAVA_OPTIONS: Final = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


@pytest.fixture(scope="module")
def classpath() -> str:
    """The client and its programs, built by the Makefile rule (a no-op when up to date); their class path."""
    for tool in ("make", "mvn", "java"):
        assert shutil.which(tool), f"{tool} is needed to build the Kotlin client"
    result = run(["make", "--no-print-directory", "kotlin-client"], ROOT, timeout=BUILD_TIMEOUT)
    assert result.returncode == 0, "make kotlin-client failed\n" + explain(result)
    dependencies = (EXAMPLES / "target" / "classpath.txt").read_text().strip()
    return os.pathsep.join([str(EXAMPLES / "target" / "classes"), dependencies])


def java(classpath: str, program: str, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``gostop.examples.<program>Kt`` run to its end, which it must reach by itself."""
    command = ["java", *JAVA_OPTIONS, "-cp", classpath, f"gostop.examples.{program}Kt", *args]
    try:
        return run(command, EXAMPLES, timeout=timeout)
    except subprocess.TimeoutExpired as hung:
        out = hung.stdout.decode() if isinstance(hung.stdout, bytes) else hung.stdout or ""
        pytest.fail(f"{program} did not exit within {timeout} s (something keeps the JVM running)\n--- stdout\n{out}")


@pytest.fixture(scope="module")
def ports(classpath: str) -> Iterator[Ports]:
    """The embedded server (memory store) with both ports on free loopback ports."""
    with both_ports(SECRET, OPERATOR_KEY) as found:
        yield found


def scenario_count() -> int:
    return len(list(SCENARIOS.glob("*.json")))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kotlin_conformance(classpath: str, ports: Ports, protocol: str) -> None:
    """Every scenario passes over the Connect protocol, gRPC and gRPC-Web."""
    assert scenario_count() > 0, f"no scenarios in {SCENARIOS}"
    result = java(classpath, "Conformance", "--server", ports.of(protocol), "--protocol", protocol,
                  "--operator-key", OPERATOR_KEY, "--scenarios", str(SCENARIOS))
    assert result.stdout.startswith(f"conformance: {protocol} (Kotlin, OkHttp) to http://{ports.of(protocol)}"), \
        explain(result)
    found = SUMMARY.findall(result.stdout)
    assert found, "no 'N passed, N failed' line\n" + explain(result)
    passed, failed = (int(n) for n in found[-1])
    assert failed == 0, f"{failed} scenario(s) failed\n" + explain(result)
    assert passed == scenario_count(), f"{passed} passed of {scenario_count()} files\n" + explain(result)
    assert result.returncode == 0, explain(result)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kotlin_typed_errors(classpath: str, ports: Ports, protocol: str) -> None:
    """Each failure is a GostopException with the status code, the ErrorInfo reason and its metadata."""
    result = java(classpath, "Errors", "--server", ports.of(protocol), "--protocol", protocol,
                  "--api-key", OPERATOR_KEY)
    assert result.returncode == 0, explain(result)
    assert result.stdout.splitlines() == [
        "missing game: NOT_FOUND GAME_NOT_FOUND gostop.v1 game_id=no-such-game retryable=false",
        "wrong preset: INVALID_ARGUMENT UNKNOWN_PRESET gostop.v1 field=preset retryable=false",
        "stale version: ABORTED STALE_VERSION gostop.v1 current_version=2 expected_version=1 retryable=false",
        "not your turn: FAILED_PRECONDITION NOT_YOUR_TURN gostop.v1 retryable=false",
        "foreign seat token: PERMISSION_DENIED WRONG_GAME gostop.v1 retryable=false",
        "bad token: UNAUTHENTICATED BAD_CREDENTIALS gostop.v1 retryable=false",
        "watch of a missing game: NOT_FOUND GAME_NOT_FOUND gostop.v1 game_id=no-such-game retryable=false",
    ], explain(result)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kotlin_watch_leaves_resumes_and_closes(classpath: str, ports: Ports, protocol: str) -> None:
    """Leaving the Flow early, resuming after cut connections, close(); the JVM then exits by itself."""
    result = java(classpath, "Watch", "--server", ports.of(protocol), "--protocol", protocol,
                  "--api-key", OPERATOR_KEY, timeout=EXIT_TIMEOUT)
    assert result.returncode == 0, explain(result)
    closed = "CANCELED client closed: GostopClient.close() was called"
    assert result.stdout.splitlines() == [
        "first(): version 1",
        "throw: thrown at 1",
        "resumed: every event once, in order, reconnected after breaks, last version the game's",
        f"watch: {closed}",
        f"after: {closed}",
    ], explain(result)


@pytest.mark.parametrize("protocol", ["connect", "grpc-web"])
def test_kotlin_retries_a_lost_reply_with_the_same_request_id(classpath: str, ports: Ports, protocol: str) -> None:
    """A SubmitAction whose reply a proxy drops (applied, then the connection closed) is retried by the client with
    the same request id on a new connection, and applied once. (HTTP/1.1 only: the proxy drops the first bytes the
    server sends on the connection, which on HTTP/2 are its settings, before any request.)"""
    result = java(classpath, "Retry", "--server", ports.of(protocol), "--protocol", protocol,
                  "--api-key", OPERATOR_KEY, timeout=EXIT_TIMEOUT)
    assert result.returncode == 0, explain(result)
    assert result.stdout.splitlines() == ["lost reply: applied once, answered on a new connection"], explain(result)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_kotlin_random_bot_plays_a_whole_round(classpath: str, ports: Ports, protocol: str) -> None:
    result = java(classpath, "RandomBot", "--server", ports.of(protocol), "--protocol", protocol,
                  "--api-key", OPERATOR_KEY, timeout=EXIT_TIMEOUT)
    assert result.returncode == 0, explain(result)
    assert "round over:" in result.stdout, explain(result)
    assert re.search(r"^done: \d+ actions, final version \d+$", result.stdout, re.MULTILINE), explain(result)


# ------------------------------------------------------------------------------ the bot server


@pytest.fixture(scope="module")
def kotlin_bot(classpath: str) -> Iterator[str]:
    """The example BotService server on a free loopback port until the module is over; its host:port."""
    with bot_server(["java", "-cp", classpath, "gostop.examples.BotServerKt", "--listen", "127.0.0.1:0"],
                    EXAMPLES) as address:
        yield address


def test_the_kotlin_bot_server_plays_a_duplicate_tournament_against_greedy(kotlin_bot: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "gostop", "tournament", "--presets", "standard", "--players", "2",
               "--games", str(DEALS), "--parallel", "2", "--seed", "3", "--no-progress", "--out", str(tmp_path),
               "--bots", "greedy,remote:kotlin", "--remote-bot", f"kotlin={kotlin_bot}"]
    done = run(command, ROOT, timeout=300.0)
    assert done.returncode == 0, explain(done)
    games = 2 * DEALS
    assert f"{games} games played, 0 already done, 0 failed" in done.stdout, explain(done)
    report: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    [group] = report["groups"]
    assert group["games"] == games
    entries = {e["bot"]: e for e in group["bots"]}
    assert set(entries) == {"greedy", "remote:kotlin"}
    assert entries["remote:kotlin"]["rounds"] == games  # one seat in every game
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(records) == games
    for r in records:
        seat = r["seats"].index("remote:kotlin")
        assert r["decisions"][seat] > 0, r
        assert r["fallbacks"][seat] == 0, r  # every decision was the Kotlin bot's own
