"""Remote bots in other languages: the Go and TypeScript example ``gostop.v1.BotService`` servers
(``clients/go/examples/botserver``, ``clients/typescript/examples/botserver.ts``) each play a small
duplicate tournament against ``greedy``.

The module builds each through the Makefile (``make go-client``, ``make ts-client``, as
``test_clients_ts_go.py`` does), starts each bot server as its own process on a free loopback port
(port 0: the server prints the address it took), and runs ``gostop tournament --bots
greedy,remote:NAME --remote-bot NAME=ADDRESS`` as a separate process with its in-process game
server and duplicate deals. The report must list the remote bot under its ``remote:NAME`` with
every game it sat in, and every decision must have been the remote bot's own (no fallback).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, Final

import grpc
import pytest

from gostop.tools import tournament as t
from gostop.v1 import bot_pb2, bot_pb2_grpc
from testkit.client_programs import bot_server

# Not in make check: bot servers built with the Go and TypeScript toolchains.
pytestmark = pytest.mark.slow

ROOT: Final = Path(__file__).resolve().parents[2]
TS_DIR: Final = ROOT / "clients" / "typescript"
GO_DIR: Final = ROOT / "clients" / "go"
BUILD_TIMEOUT: Final = 900.0
RUN_TIMEOUT: Final = 300.0
DEALS: Final = 2
"""Deals of the tournament: each played in both rotations, so 2 * DEALS games."""


def build(target: str, *tools: str) -> None:
    """A Makefile target that builds an example server (a no-op when it is up to date)."""
    for tool in ("make", *tools):
        assert shutil.which(tool), f"{tool} is needed for make {target}"
    result = subprocess.run(["make", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True,
                            timeout=BUILD_TIMEOUT, check=False)
    assert result.returncode == 0, f"make {target} failed\n{result.stdout[-4000:]}{result.stderr[-4000:]}"


@pytest.fixture(scope="module")
def go_bot() -> Iterator[str]:
    build("go-client", "go")
    with bot_server([str(GO_DIR / "bin" / "botserver"), "-listen", "127.0.0.1:0"], GO_DIR) as address:
        yield address


@pytest.fixture(scope="module")
def ts_bot() -> Iterator[str]:
    build("ts-client", "npm", "node")
    with bot_server(["node", "dist/examples/botserver.js", "--listen", "127.0.0.1:0"], TS_DIR) as address:
        yield address


def tournament(out: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gostop", "tournament", "--presets", "standard", "--players", "2",
               "--games", str(DEALS), "--parallel", "2", "--seed", "3", "--no-progress", "--out", str(out), *args]
    return subprocess.run(command, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False)


def check_played(out: Path, done: subprocess.CompletedProcess[str], remote: str) -> None:
    """Every game was played, the report lists ``remote`` beside greedy, and the remote bot made
    every decision of its seats itself."""
    explain = f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == 0, explain
    games = 2 * DEALS
    assert f"{games} games played, 0 already done, 0 failed" in done.stdout, explain
    assert remote in done.stdout, explain  # the terminal table names it
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    [group] = report["groups"]
    assert group["games"] == games
    entries = {e["bot"]: e for e in group["bots"]}
    assert set(entries) == {"greedy", remote}
    assert entries[remote]["rounds"] == games  # one seat in every game
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == games
    for r in records:
        seat = r["seats"].index(remote)
        assert r["explicit_deal"], "duplicate deals: the in-process server has an operator key"
        assert r["decisions"][seat] > 0, r
        assert r["fallbacks"][seat] == 0, r


def test_the_go_bot_server_plays_a_duplicate_tournament_against_greedy(go_bot: str, tmp_path: Path) -> None:
    done = tournament(tmp_path, "--bots", "greedy,remote:go", "--remote-bot", f"go={go_bot}")
    check_played(tmp_path, done, "remote:go")


def test_the_typescript_bot_server_plays_a_duplicate_tournament_against_greedy(ts_bot: str, tmp_path: Path) -> None:
    """The address comes from GOSTOP_REMOTE_BOTS this time (the operator's setting), not a flag."""
    done = tournament(tmp_path, "--bots", "greedy,remote:ts", env={"GOSTOP_REMOTE_BOTS": f"ts={ts_bot}"})
    check_played(tmp_path, done, "remote:ts")


def test_a_remote_bot_without_an_address_is_refused_before_any_game(tmp_path: Path) -> None:
    done = tournament(tmp_path, "--bots", "greedy,remote:nobody", "--remote-bot", "other=127.0.0.1:7001",
                      env={"GOSTOP_REMOTE_BOTS": ""})
    assert done.returncode == 2, done.stderr
    assert "remote:nobody" in done.stderr and "--remote-bot nobody=HOST:PORT" in done.stderr, done.stderr
    assert not (tmp_path / "results.jsonl").exists()


def test_an_unreachable_remote_bot_fails_its_games_and_says_why(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    done = tournament(tmp_path, "--bots", "greedy,remote:gone", "--remote-bot", f"gone={address}",
                      env={"GOSTOP_REMOTE_BOTS": ""})
    assert done.returncode == 1, done.stderr
    assert f"0 games played, 0 already done, {2 * DEALS} failed" in done.stdout, done.stdout
    assert f"remote bot 'gone' at {address}: unreachable" in done.stderr, done.stderr


async def test_illegal_answers_are_played_as_the_lowest_legal_id_and_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's fallback: a remote bot (a Python BotService here) that always answers an
    illegal id still finishes its games; each of its decisions is counted as a fallback, and the
    first one is said."""
    class Illegal:
        def Decide(self, request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
            return bot_pb2.DecideResponse(action_id=255)

    add: Any = bot_pb2_grpc.add_BotServiceServicer_to_server  # generated, untyped
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    add(Illegal(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        options = t.Options(bots=("greedy", "remote:bad"), presets=("standard",), players=(2,), games=1,
                            out=tmp_path, parallel=2, remote_bots=(("bad", f"127.0.0.1:{port}"),))
        summary = await t.run_tournament(options, progress=False)
    finally:
        server.stop(None).wait()
    assert (summary.played, summary.failed) == (2, 0)
    for r in [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]:
        seat = r["seats"].index("remote:bad")
        assert r["fallbacks"][seat] == r["decisions"][seat] > 0
        assert r["fallbacks"][1 - seat] == 0
    said = capsys.readouterr().err
    assert said.count(f"remote bot 'bad' at 127.0.0.1:{port}: chose action id 255") == 1, said
