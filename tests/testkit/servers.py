"""Helpers for the gRPC service tests: in-process servers over the memory store or a real Redis, a
client wrapper, error decoding (``google.rpc.Status`` / ``ErrorInfo``), a random player that plays
through the API, a replay of a game's log through the engine, and server processes. The fixtures
built on them (``api``, ``service_redis``) are in ``tests/conftest.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from gostop.engine import Match, Rules, match_apply, new_match, next_round, redact
from gostop.engine.events import Event
from gostop.service.config import Config
from gostop.service.embedded import serving
from gostop.service.errors import DOMAIN
from gostop.service.server import Server
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from gostop.wire import convert
from testkit.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SECRET = "service-tests-token-secret-0123456789"
API_KEY = "api-key-for-tests"
OPERATOR_KEY = "operator-key-for-tests"
BACKENDS = ["memory", "redis"]

Metadata = tuple[tuple[str, str], ...]


def seat_md(token: str) -> Metadata:
    return (("authorization", f"Bearer {token}"),)


def key_md(key: str) -> Metadata:
    return (("x-api-key", key),)


OPERATOR: Metadata = key_md(OPERATOR_KEY)


# ------------------------------------------------------------------------------------ errors


@dataclass(frozen=True)
class RpcFailure:
    """A failed call: its code, message and the ``ErrorInfo`` of its ``google.rpc.Status`` details."""

    code: grpc.StatusCode
    message: str
    info: error_details_pb2.ErrorInfo


def decode_error(error: grpc.RpcError) -> RpcFailure:
    """The code, message and ``ErrorInfo`` of a failed call; fails the test if the details are missing."""
    status = rpc_status.from_call(error)
    assert status is not None, f"no grpc-status-details-bin in {error!r}"
    assert status.code == error.code().value[0]
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, f"expected one ErrorInfo in {status}"
    assert infos[0].domain == DOMAIN
    return RpcFailure(error.code(), status.message, infos[0])


async def failure(call: Awaitable[Any]) -> RpcFailure:
    """Await ``call``, which must fail; its decoded error."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return decode_error(error)
    raise AssertionError("the call succeeded but was expected to fail")


async def expect(call: Awaitable[Any], code: grpc.StatusCode, reason: str | None = None) -> RpcFailure:
    """Await ``call``, which must fail with ``code`` (and ``reason`` when given)."""
    err = await failure(call)
    assert err.code == code, f"expected {code.name}, got {err.code.name}: {err.message} ({err.info.reason})"
    if reason is not None:
        assert err.info.reason == reason, f"expected reason {reason}, got {err.info.reason}: {err.message}"
    return err


# ----------------------------------------------------------------------------------- client


@dataclass
class Game:
    """A created game as the test knows it: id, tokens, current version."""

    id: str
    tokens: dict[int, str]
    version: int
    created: pb.CreateGameResponse

    def md(self, seat: int) -> Metadata:
        return seat_md(self.tokens[seat])


@dataclass
class Api:
    """A gRPC client of one server, with a few conveniences."""

    channel: grpc.aio.Channel
    stub: pb_grpc.GameServiceStub
    port: int
    server: Server | None = None
    """The in-process server (None for a server process)."""
    requests: int = field(default=0)

    async def create(
        self, preset: str = "standard", players: int = 0, seed: int | None = 1, rounds: int | None = None,
        overrides: pb.Rules | None = None, deal: pb.Deal | None = None, metadata: Metadata = OPERATOR,
    ) -> Game:
        req = pb.CreateGameRequest(preset=preset, players=players)
        if seed is not None:
            req.seed = seed
        if rounds is not None:
            req.rounds = rounds
        if overrides is not None:
            req.overrides.CopyFrom(overrides)
        if deal is not None:
            req.deal.CopyFrom(deal)
        out = await self.stub.CreateGame(req, metadata=metadata)
        return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)

    async def get(self, game: Game, seat: int | None = None) -> pb.GetGameResponse:
        md = () if seat is None else game.md(seat)
        response: pb.GetGameResponse = await self.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=md)
        return response

    async def submit(
        self, game: Game, seat: int, action_id: int, version: int | None = None, request_id: str | None = None,
    ) -> pb.SubmitActionResponse:
        self.requests += 1
        req = pb.SubmitActionRequest(
            game_id=game.id, expected_version=game.version if version is None else version,
            request_id=f"r{self.requests}-{random.getrandbits(32)}" if request_id is None else request_id,
            action_id=action_id,
        )
        response: pb.SubmitActionResponse = await self.stub.SubmitAction(req, metadata=game.md(seat))
        return response

    async def log(self, game: Game, metadata: Metadata = OPERATOR) -> pb.GetGameLogResponse:
        """The whole log, every page of it merged into one response."""
        response: pb.GetGameLogResponse = await self.stub.GetGameLog(
            pb.GetGameLogRequest(game_id=game.id), metadata=metadata)
        after = response.next_after_version
        while after:
            page = await self.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id, after_version=after),
                                              metadata=metadata)
            response.entries.extend(page.entries)
            after = page.next_after_version
        response.next_after_version = 0
        return response

    async def to_move(self, game: Game) -> tuple[int, pb.GameView]:
        """The seat to move and its view (with its legal actions); refreshes ``game.version``.
        Once the round is over: -1 and the spectator's view."""
        spectator = await self.get(game)
        seat = spectator.view.to_move
        if spectator.view.phase == pb.PHASE_OVER:
            game.version = spectator.version
            return -1, spectator.view
        own = await self.get(game, seat)
        game.version = own.version
        return seat, own.view

    async def play_round(self, game: Game, rng: random.Random, max_steps: int = 500) -> list[pb.TurnResult]:
        """Play the current round to its end with random legal actions; the turn results."""
        results: list[pb.TurnResult] = []
        seat, current = await self.to_move(game)
        for _ in range(max_steps):
            if current.phase == pb.PHASE_OVER:
                return results
            assert current.legal_actions, f"seat {seat} to move without legal actions"
            choice = rng.choice(current.legal_actions)
            result = (await self.submit(game, seat, choice.id)).result
            assert result.version == game.version + 1
            game.version = result.version
            results.append(result)
            if result.view.phase == pb.PHASE_OVER:
                return results
            if result.view.to_move == seat:
                current = result.view
            else:
                seat = result.view.to_move
                current = (await self.get(game, seat)).view
        raise AssertionError("the round did not end")

    async def next_round(self, game: Game, seat: int = 0) -> pb.TurnResult:
        req = pb.StartNextRoundRequest(game_id=game.id, expected_version=game.version,
                                       request_id=f"next-{game.version}")
        result: pb.TurnResult = (await self.stub.StartNextRound(req, metadata=game.md(seat))).result
        game.version = result.version
        return result


def stub(channel: grpc.aio.Channel) -> pb_grpc.GameServiceStub:
    return pb_grpc.GameServiceStub(channel)


def config(redis_url: str = "", **settings: Any) -> Config:
    values: dict[str, Any] = {"listen": "127.0.0.1:0", "http_listen": "off", "metrics_port": 0, "token_secret": SECRET,
                              "operator_keys": OPERATOR_KEY, "redis_url": redis_url}
    values.update(settings)
    return Config(**values)


@contextlib.asynccontextmanager
async def running_server(cfg: Config) -> AsyncIterator[Api]:
    """An in-process server (the embedded one) and a client channel to it."""
    async with serving(cfg) as server:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            yield Api(channel, stub(channel), server.port, server)
        finally:
            await channel.close()


@contextlib.asynccontextmanager
async def running_bot_server(store_url: str, bot_key: str, **settings: Any) -> AsyncIterator[Api]:
    """An in-process server with its in-process bot worker (on Redis too: ``bot_worker=on``) that
    takes the bot-worker key ``bot_key``, and a client channel to it."""
    from gostop.service.programs.botworker import attach_in_process_worker

    settings.setdefault("bot_worker", "on")
    server = Server(config(store_url, bot_keys=bot_key, **settings))
    attach_in_process_worker(server)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Api(channel, stub(channel), server.port, server)
    finally:
        await channel.close()
        await server.stop(0)


def internal_or_unknown_calls(server: Server) -> float:
    """Calls ``server`` counted as INTERNAL or UNKNOWN, on any method and protocol: what no caller's
    bytes may produce."""
    total = 0.0
    for metric in server.metrics.handled.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels.get("grpc_code") in ("INTERNAL", "UNKNOWN"):
                total += sample.value
    return total


# ------------------------------------------------------------------------------------ replay


def rules_from_pb(msg: pb.Rules) -> Rules:
    """Engine rules from a fully set ``Rules`` message (ListRuleSets, CreateGame, GetGameLog)."""
    return Rules.from_dict(convert.overrides_from_pb(msg))


def events_pb(events: Sequence[Event]) -> list[pb.Event]:
    return [convert.event_to_pb(e) for e in events]


def replay(log: pb.GetGameLogResponse, rounds: int) -> tuple[Match, dict[int, list[Event]]]:
    """Rebuild a match from its log (rules, seed, then each action or next-round entry), checking
    that versions are 1, 2, 3... each once and that every step gives exactly the logged events.
    Returns the match and the engine events of each version."""
    assert [e.version for e in log.entries] == list(range(1, len(log.entries) + 1))
    first = log.entries[0]
    assert first.seat == -1 and not first.HasField("action")
    match, events = new_match(rules_from_pb(log.rules), log.seed, rounds)
    by_version = {1: events}
    assert events_pb(events) == list(first.events), "the deal differs"
    for entry in log.entries[1:]:
        if entry.kind == "table":  # a clocked table's own step: the game is as it was
            events = []
        elif entry.HasField("action"):
            match, events = match_apply(match, convert.action_from_pb(entry.action), entry.seat)
        else:
            match, events = next_round(match)
        engine_events = [e for e in entry.events if e.WhichOneof("kind") not in TABLE_EVENT_FIELDS]
        assert events_pb(events) == engine_events, f"version {entry.version}: the events differ"
        by_version[entry.version] = events
    return match, by_version


TABLE_EVENT_FIELDS = frozenset({"played_for_seat", "seat_away", "auto_play_set", "seat_presence"})
"""The events of a clocked table's own, logged beside (or without) an engine step's."""


def redacted(log: pb.GetGameLogResponse, rounds: int, seat: int, after: int = 0) -> list[tuple[int, pb.Event]]:
    """What a WatchGame stream of ``seat`` from ``after`` should carry, by the engine's redaction."""
    _, by_version = replay(log, rounds)
    return [(v, convert.event_to_pb(redact(e, seat))) for v, events in sorted(by_version.items()) if v > after
            for e in events]


# ----------------------------------------------------------------------------- processes


@dataclass
class ServerProcess:
    """``python -m gostop serve`` as a separate OS process, its output in a temporary file."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    output: str = ""

    def log(self) -> str:
        """What the process wrote (JSON log lines), also after ``stop``."""
        with contextlib.suppress(FileNotFoundError):
            self.output = self.log_path.read_text(errors="replace")
        return self.output

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM (a graceful stop), then SIGKILL if it takes too long; removes the log file."""
        self.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.log()
        self.log_path.unlink(missing_ok=True)


async def wait_serving(port: int, process: subprocess.Popen[bytes] | None = None, timeout: float = 20.0) -> None:
    """Poll grpc.health.v1 until the server answers SERVING."""
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no SERVING health on port {port}")
            await asyncio.sleep(0.05)


async def start_process(redis_url: str, **env: str) -> ServerProcess:
    """Start a server process on a free port and wait until it is SERVING."""
    port = free_port()
    handle, name = tempfile.mkstemp(prefix="gostop-server-", suffix=".log")
    os.close(handle)
    variables = {
        **os.environ,
        "GOSTOP_REDIS_URL": redis_url,
        "GOSTOP_TOKEN_SECRET": SECRET,
        "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY,
        "GOSTOP_LOG_FORMAT": "json",
        "PYTHONPATH": str(ROOT),
        **env,
    }
    with open(name, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "serve", "--listen", f"127.0.0.1:{port}", "--metrics-port", "0"],
            cwd=ROOT, env=variables, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
        )
    server = ServerProcess(process, port, Path(name))
    try:
        await wait_serving(port, process)
    except BaseException:
        server.stop()
        raise AssertionError(f"server process did not start:\n{server.log()}") from None
    return server


def client(port: int) -> Api:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    return Api(channel, stub(channel), port)
