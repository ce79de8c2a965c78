"""The server as a process and as a service: two real server processes sharing one Redis (stateless
replicas, stale caches caught by the store's version check), SIGTERM draining an in-flight call,
an unreachable store failing calls fast with UNAVAILABLE, health checking through a graceful stop,
server reflection and the Prometheus metrics endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from gostop.engine import PRESET_PLAYERS, PRESETS
from gostop.service.bot_seats import BUILTIN_BOTS
from gostop.service.store_api import Snapshot
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer, free_port
from testkit.servers import (
    Api,
    Game,
    client,
    config,
    expect,
    replay,
    running_server,
    start_process,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test only (it gets stopped or paused)."""
    with RedisServer() as server:
        yield server


# ------------------------------------------------------------------------ two processes


async def test_two_processes_share_one_redis(service_redis: RedisServer) -> None:
    a, b = await asyncio.gather(start_process(service_redis.url), start_process(service_redis.url))
    apis = [client(a.port), client(b.port)]
    try:
        game = await apis[0].create("standard", players=3, seed=606, rounds=2)
        watch = apis[1].stub.WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=game.md(2))
        rng = random.Random(606)
        n = 0
        while True:
            api = apis[n % 2]  # alternate between the processes, reads and writes alike
            seat, v = await api.to_move(game)
            if v.phase == pb.PHASE_OVER:
                if v.match.finished:
                    break
                await apis[(n + 1) % 2].next_round(game, seat=n % 3)
            else:
                result = (await apis[(n + 1) % 2].submit(game, seat, rng.choice(v.legal_actions).id)).result
                game.version = result.version
            n += 1
            if n % 5 == 0:
                await _stale_cache_conflict(apis, game, n % 2)
        # The other process streamed every commit, across processes, and ended with the match.
        streamed = []
        while (item := await asyncio.wait_for(watch.read(), 10)) is not grpc.aio.EOF:
            streamed.append(item)
        log = await apis[0].log(game)
        assert log == await apis[1].log(game)
        match, _ = replay(log, 2)
        assert match.finished and len(log.entries) == game.version
        assert [m.version for m in streamed] == [e.version for e in log.entries for _ in e.events]
        for api in apis:
            assert (await api.get(game)).view.match.finished
    finally:
        for api in apis:
            await api.channel.close()
        a.stop()
        b.stop()
    assert a.process.returncode == 0 and b.process.returncode == 0, a.log() + b.log()


async def _stale_cache_conflict(apis: list[Api], game: Game, first: int) -> None:
    """Process ``first`` caches the game at version v; the other commits v+1; an action sent to
    ``first`` at v must be refused by the store's version check, not applied from the stale cache."""
    cached, other = apis[first], apis[1 - first]
    seat, v = await cached.to_move(game)
    if v.phase == pb.PHASE_OVER:
        return
    version = game.version
    probe = v.legal_actions[0].id
    # Make ``cached`` commit (so its cache holds the latest snapshot)...
    committed = (await cached.submit(game, seat, probe)).result
    game.version = committed.version
    seat, v = await other.to_move(game)
    if v.phase == pb.PHASE_OVER:
        return
    # ... let ``other`` move the game on ...
    moved = (await other.submit(game, seat, v.legal_actions[-1].id)).result
    assert moved.version == version + 2
    # ... and replay the step ``other`` just made through ``cached``, at the version its cache holds.
    err = await expect(cached.submit(game, seat, v.legal_actions[0].id, version=version + 1), grpc.StatusCode.ABORTED,
                       "STALE_VERSION")
    assert err.info.metadata["current_version"] == str(version + 2)
    game.version = version + 2
    assert (await cached.get(game)).version == version + 2
    log = await cached.log(game)
    assert [e.version for e in log.entries] == list(range(1, version + 3))


# ------------------------------------------------------------------------------- SIGTERM


async def test_sigterm_lets_an_in_flight_call_finish(own_redis: RedisServer) -> None:
    server = await start_process(own_redis.url, GOSTOP_DRAIN_SECONDS="10")
    api = client(server.port)
    health_channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        game = await api.create(seed=7)
        watch = health_pb2_grpc.HealthStub(health_channel).Watch(health_pb2.HealthCheckRequest(service=""))
        assert (await watch.read()).status == SERVING
        own_redis.pause()  # the next store read hangs: the call stays in flight
        try:
            in_flight = asyncio.ensure_future(api.get(game, 0))
            await asyncio.sleep(0.3)
            assert not in_flight.done()
            server.terminate()
            assert (await asyncio.wait_for(watch.read(), 5)).status == NOT_SERVING
            watch.cancel()  # an open stream would hold the stop for the whole grace period
            await asyncio.sleep(0.2)
            assert server.process.poll() is None, "the server waits for its in-flight call"
        finally:
            own_redis.resume()
        answer = await asyncio.wait_for(in_flight, 10)
        assert answer.version == 1 and answer.view.viewer == 0
        deadline = time.monotonic() + 3  # well under the 10 s grace: nothing else is in flight
        while server.process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert server.process.returncode == 0, server.log()
        assert '"draining"' in server.log() and '"stopped"' in server.log()
    finally:
        await health_channel.close()
        await api.channel.close()
        server.stop()


# ----------------------------------------------------------------------------- store down


async def test_unreachable_store_fails_calls_fast(own_redis: RedisServer) -> None:
    async with running_server(config(own_redis.url)) as api:
        game = await api.create(seed=9)
        seat, v = await api.to_move(game)
        open_watch = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id))
        deal = await open_watch.read()
        assert deal.version == 1
        own_redis.stop()
        calls = {
            "GetGame": api.get(game, seat),
            "SubmitAction": api.submit(game, seat, v.legal_actions[0].id),
            "CreateGame": api.create(seed=10),
            "GetGameLog": api.log(game),
            "StartNextRound": api.next_round(game),
        }
        for name, call in calls.items():
            started = time.monotonic()
            err = await expect(call, grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
            assert time.monotonic() - started < 3, f"{name} took too long to fail"
            assert "unreachable" in err.message
            assert err.info.metadata["outcome"] == "not_applied"
        watch = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id))
        await expect(watch.read(), grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
        # A stream that was already open fails too, once its store read fails (not hanging on).
        started = time.monotonic()
        await expect(asyncio.wait_for(_rest(open_watch), 10), grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
        assert time.monotonic() - started < 8


async def _rest(call: grpc.aio.UnaryStreamCall) -> None:
    """Read a stream to its end (its error, if it fails, propagates)."""
    while (await call.read()) is not grpc.aio.EOF:
        pass


async def test_a_write_without_an_answer_is_store_timeout_and_its_retry_tells_the_outcome(
        own_redis: RedisServer) -> None:
    """Regression: calls answered UNAVAILABLE/STORE_UNAVAILABLE while Redis was paused were committed
    when it resumed. A write that was sent but not answered now says so (STORE_TIMEOUT, outcome
    unknown), and its retry with the same request id gives the committed answer."""
    async with running_server(config(own_redis.url)) as api:
        game = await api.create(seed=9)
        seat, v = await api.to_move(game)
        action = v.legal_actions[0].id
        own_redis.pause()
        try:
            err = await expect(api.submit(game, seat, action, request_id="paused-1"), grpc.StatusCode.UNAVAILABLE,
                               "STORE_TIMEOUT")
            assert err.info.metadata["outcome"] == "unknown"
            assert "may have been applied" in err.message
        finally:
            own_redis.resume()
        retried = await api.submit(game, seat, action, request_id="paused-1")
        assert retried.result.version == 2
        log = await api.log(game)
        assert [(e.version, e.request_id) for e in log.entries] == [(1, ""), (2, "paused-1")], \
            "the unanswered write was applied once, and its retry was answered from it"
        again = await api.submit(game, seat, action, request_id="paused-1")
        assert again == retried


async def test_stalled_store_fails_calls_within_the_timeouts(own_redis: RedisServer) -> None:
    async with running_server(config(own_redis.url)) as api:
        game = await api.create(seed=9)
        own_redis.pause()
        try:
            started = time.monotonic()
            await expect(api.get(game), grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
            assert time.monotonic() - started < 7
        finally:
            own_redis.resume()
        assert (await api.get(game)).version == 1, "the server recovers with the store"


# -------------------------------------------------------------------- health, reflection


@contextlib.asynccontextmanager
async def _gated_loads(api: Api) -> AsyncIterator[asyncio.Event]:
    """Make the store's ``load`` wait for the yielded event (to keep a call in flight)."""
    assert api.server is not None
    store = api.server.store
    original = store.load
    gate = asyncio.Event()

    async def load(game_id: str) -> Snapshot | None:
        await gate.wait()
        return await original(game_id)

    store.load = load  # type: ignore[method-assign]
    try:
        yield gate
    finally:
        store.load = original  # type: ignore[method-assign]


async def test_health_serving_then_not_serving_during_graceful_stop() -> None:
    async with running_server(config()) as api:
        assert api.server is not None
        health = health_pb2_grpc.HealthStub(api.channel)
        for name in ("", "gostop.v1.GameService"):
            assert (await health.Check(health_pb2.HealthCheckRequest(service=name))).status == SERVING
        await expect_code(health.Check(health_pb2.HealthCheckRequest(service="nope")), grpc.StatusCode.NOT_FOUND)
        game = await api.create(seed=1)
        watch = health.Watch(health_pb2.HealthCheckRequest(service="gostop.v1.GameService"))
        assert (await watch.read()).status == SERVING
        async with _gated_loads(api) as gate:
            in_flight = asyncio.ensure_future(api.get(game))
            await asyncio.sleep(0.05)
            stopping = asyncio.ensure_future(api.server.stop(5))
            assert (await asyncio.wait_for(watch.read(), 5)).status == NOT_SERVING
            watch.cancel()  # an open stream would hold the stop for the whole grace period
            assert not in_flight.done() and not stopping.done()
            gate.set()
            assert (await asyncio.wait_for(in_flight, 5)).version == 1
            started = time.monotonic()
            await asyncio.wait_for(stopping, 5)
            assert time.monotonic() - started < 2, "the stop waits for the call only, not the whole grace"


async def expect_code(call: object, code: grpc.StatusCode) -> None:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        assert error.code() == code
    else:
        raise AssertionError("the call succeeded")


async def test_reflection_lists_the_game_service(api_memory: Api) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(api_memory.channel)

    async def ask(request: reflection_pb2.ServerReflectionRequest) -> reflection_pb2.ServerReflectionResponse:
        call = stub.ServerReflectionInfo(iter([request]))
        replies = [reply async for reply in call]
        assert len(replies) == 1
        reply: reflection_pb2.ServerReflectionResponse = replies[0]
        return reply

    listed = await ask(reflection_pb2.ServerReflectionRequest(list_services=""))
    names = {s.name for s in listed.list_services_response.service}
    assert {"gostop.v1.GameService", "grpc.health.v1.Health"} <= names
    found = await ask(reflection_pb2.ServerReflectionRequest(file_containing_symbol="gostop.v1.GameService"))
    assert found.file_descriptor_response.file_descriptor_proto


@pytest.fixture
async def api_memory() -> AsyncIterator[Api]:
    async with running_server(config()) as api:
        yield api


# -------------------------------------------------------------------------------- metrics

_LABEL_VALUES = {
    "grpc_type": {"unary", "server_stream"},
    "grpc_service": {"gostop.v1.GameService"},
    "grpc_method": {m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods},
    "grpc_code": {c.name for c in grpc.StatusCode},
    "protocol": {"grpc", "connect", "grpc-web"},
    "preset": set(PRESETS),
    "players": {str(n) for counts in PRESET_PLAYERS.values() for n in counts},
    "outcome": {"stop", "best_score", "instant_win", "instant_loss", "nagari"},
    "kind": {"play", "bomb", "flip", "capture", "keep", "convert", "go", "stop", "join", "sit", "sell", "decline",
             "next_round"},
    "store": {"memory", "redis"},
    "op": {"create", "load", "commit", "lookup", "read_log", "watch"},
    "state": {"away", "auto_play", "connected"},
    "policy": set(BUILTIN_BOTS),
    "cause": {"timeout", "away", "auto_play"},
}


async def test_metrics_endpoint(service_redis: RedisServer) -> None:
    port = free_port()
    async with running_server(config(service_redis.url, metrics_port=port)) as api:
        assert api.server is not None and api.server.metrics_port == port
        game = await api.create("house", players=2, seed=5, rounds=2)
        await api.play_round(game, random.Random(5))
        await api.next_round(game)
        await expect(api.submit(game, 0, 0, version=1), grpc.StatusCode.ABORTED)
        await expect(api.get(Game("Missing", {}, 1, pb.CreateGameResponse())), grpc.StatusCode.NOT_FOUND)
        await api.stub.ListRuleSets(pb.ListRuleSetsRequest())
        text = await asyncio.to_thread(_fetch, f"http://127.0.0.1:{port}/metrics")
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    by_name: dict[str, list[dict[str, str]]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(dict(s.labels))
        for label, value in s.labels.items():
            if label == "le":
                continue
            assert label in _LABEL_VALUES, f"unexpected label {label} on {s.name}"
            assert value in _LABEL_VALUES[label], f"{s.name}{{{label}={value!r}}}"
            assert not re.search(r"\d\d-", value), "a card code in a label"
    handled = by_name["grpc_server_handled_total"]
    assert {"grpc_type": "unary", "grpc_service": "gostop.v1.GameService", "grpc_method": "CreateGame",
            "protocol": "grpc", "grpc_code": "OK"} in handled
    assert any(h["grpc_method"] == "SubmitAction" and h["grpc_code"] == "ABORTED" for h in handled)
    assert any(h["grpc_method"] == "GetGame" and h["grpc_code"] == "NOT_FOUND" for h in handled)
    for name in ("gostop_games_created_total", "gostop_actions_total", "gostop_rounds_finished_total",
                 "gostop_version_conflicts_total", "gostop_store_seconds_bucket", "grpc_server_handling_seconds_bucket",
                 "grpc_server_started_total"):
        assert name in by_name, f"{name} missing"
    assert {"preset": "house", "players": "2"} in by_name["gostop_games_created_total"]
    assert {"kind": "next_round"} in by_name["gostop_actions_total"]
    assert {"store": "redis", "op": "commit"} in [
        {k: v for k, v in labels.items() if k != "le"} for labels in by_name["gostop_store_seconds_bucket"]]


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body.decode()




# ------------------------------------------------------------------------ logs


async def test_every_call_logs_one_json_line_with_its_context(service_redis: RedisServer) -> None:
    """At the default level every finished call writes one JSON line: the RPC, its status code and
    duration, and the game, seat and request id it was about; a failed call is a
    warning with the error's reason. Lines of other writers (the standard library's) stay whole."""
    server = await start_process(service_redis.url, GOSTOP_LOG_LEVEL="info")
    api = client(server.port)
    try:
        game = await api.create("standard", players=2, seed=77)
        seat, view = await api.to_move(game)
        await api.submit(game, seat, view.legal_actions[0].id, request_id="req-ok")
        await expect(api.submit(game, seat, view.legal_actions[0].id, version=1, request_id="req-stale"),
                     grpc.StatusCode.ABORTED)
        await api.get(game, 1 - seat)
    finally:
        await api.channel.close()
        server.stop()
    text = server.log()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    rpcs = [line for line in lines if line.get("event") == "rpc"]
    by_request = {line.get("request_id"): line for line in rpcs if line["rpc"] == "SubmitAction"}
    ok, stale = by_request["req-ok"], by_request["req-stale"]
    assert ok["level"] == "info" and ok["code"] == "OK"
    assert ok["game_id"] == game.id and ok["seat"] == seat
    assert stale["level"] == "warning" and stale["code"] == "ABORTED" and stale["reason"] == "STALE_VERSION"
    assert stale["game_id"] == game.id and stale["seat"] == seat
    gets = [line for line in rpcs if line["rpc"] == "GetGame"]
    # to_move reads the game as a spectator (no seat), then as the seat to move
    assert [(g["game_id"], g.get("seat"), g["code"]) for g in gets] == [
        (game.id, None, "OK"), (game.id, seat, "OK"), (game.id, 1 - seat, "OK")]
    creates = [line for line in rpcs if line["rpc"] == "CreateGame"]
    assert [(c["game_id"], c["preset"]) for c in creates] == [(game.id, "standard")]
    for line in rpcs:
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
        assert line["timestamp"].endswith("Z")
    assert '"stopped"' in text


async def test_serve_says_where_to_point_the_browser_and_grpc() -> None:
    """``make run`` (log format auto) says in plain words where the web table and gRPC are; the
    JSON log lines are still there, and with GOSTOP_LOG_FORMAT=json only they are."""
    http_port = free_port()
    server = await start_process("", GOSTOP_LOG_FORMAT="auto", GOSTOP_HTTP_LISTEN=f"127.0.0.1:{http_port}")
    server.stop()
    text = server.log()
    assert f"open http://127.0.0.1:{http_port}/ in a browser" in text
    assert re.search(rf"gRPC: +127\.0\.0\.1:{server.port}\n", text)
    assert "gone when it stops" in text, "the memory store's games do not outlive the process"
    server = await start_process("", GOSTOP_HTTP_LISTEN=f"127.0.0.1:{free_port()}")
    server.stop()
    assert "in a browser" not in server.log()
    assert all(line.startswith("{") for line in server.log().splitlines() if line.strip())


class _HeldStart:
    """A companion whose start waits until the test lets it go: the server is then half started."""

    def __init__(self) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()

    async def start(self) -> None:
        self.started.set()
        await self.release.wait()

    async def stop(self) -> None:
        return None


async def test_regression_health_is_not_serving_until_the_server_serves() -> None:
    """grpc's health servicer says SERVING for "" from its creation: probes and wait loops took a
    server still starting for a ready one (and a SIGTERM then killed it before its handler was set)."""
    from gostop.service.server import Server

    server = Server(config(""))
    held = _HeldStart()
    server.companions.append(held)
    starting = asyncio.ensure_future(server.start())
    try:
        await asyncio.wait_for(held.started.wait(), 10)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "gostop.v1.GameService"):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
                assert reply.status == NOT_SERVING, f"{service or 'the server'} is SERVING while starting"
            held.release.set()
            await asyncio.wait_for(starting, 10)
            reply = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
            assert reply.status == SERVING
    finally:
        held.release.set()
        await starting
        await server.stop(0)


async def test_regression_sigterm_as_soon_as_serving_stops_gracefully() -> None:
    """grpc's health servicer said SERVING for "" before the server had started, and SIGTERM's
    handler came after the start: a stop right after that answer killed the process (-15, no log).
    Health says SERVING only once the server serves, and a SIGTERM then is a graceful stop."""
    for _ in range(5):
        server = await start_process("")
        server.stop()
        assert server.process.returncode == 0, f"exit {server.process.returncode}:\n{server.log()}"
        assert '"event":"stopped"' in server.log()
