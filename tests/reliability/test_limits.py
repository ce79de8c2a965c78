"""The service's bounds, exercised on the memory store and a real Redis: request and response size
(``max_message_bytes`` → RESOURCE_EXHAUSTED), committed steps per game (``max_actions_per_game`` →
GAME_TOO_LONG, also under concurrent calls), stream and page length, expiry of abandoned and of
finished games (short TTLs), and many concurrent WatchGame streams on one connection that do not
starve commits."""

from __future__ import annotations

import asyncio
import random
import time

import grpc
import pytest

from gostop.service.auth import Caller
from gostop.service.games import LOG_PAGE_MAX
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer
from testkit.servers import (
    OPERATOR,
    Api,
    config,
    expect,
    running_server,
)

from .harness import record

EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


async def test_message_size_is_bounded(store_url: str) -> None:
    async with running_server(config(store_url, max_message_bytes=2048)) as api:
        game = await api.create(seed=1)
        seat, v = await api.to_move(game)
        big = "r" * 3000
        await expect_size(api.stub.SubmitAction(pb.SubmitActionRequest(
            game_id=game.id, expected_version=1, request_id=big, action_id=v.legal_actions[0].id),
            metadata=game.md(seat)))
        await expect_size(api.stub.CreateGame(pb.CreateGameRequest(preset="standard" + " " * 3000), metadata=OPERATOR))
        # A response over the limit is refused too (ListRuleSets is larger than 2 KiB).
        async with running_server(config(store_url, max_message_bytes=512)) as small:
            await expect_size(small.stub.ListRuleSets(pb.ListRuleSetsRequest()))
        assert (await api.get(game)).version == 1, "an oversized request changed the game"
        record(bad_inputs_oversized=3)


async def expect_size(call: object) -> None:
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as error:
        assert error.code() == EXHAUSTED, error
        return
    raise AssertionError("an oversized message was accepted")


async def test_actions_per_game_are_bounded(store_url: str) -> None:
    limit = 6
    async with running_server(config(store_url, max_actions_per_game=limit)) as api:
        game = await api.create("standard", seed=61)
        rng = random.Random(61)
        while game.version < limit:
            seat, v = await api.to_move(game)
            game.version = (await api.submit(game, seat, rng.choice(v.legal_actions).id)).result.version
        seat, v = await api.to_move(game)
        outcomes = await asyncio.gather(*(
            expect(api.submit(game, seat, a.id, request_id=f"late-{i}-{a.id}"), PRECONDITION, "GAME_TOO_LONG")
            for i in range(4) for a in v.legal_actions))
        assert outcomes
        assert (await api.get(game)).version == limit
        log = await api.log(game)
        assert [e.version for e in log.entries] == list(range(1, limit + 1))
        # The stream of a game is bounded by its steps: every event of the six versions, then nothing.
        call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=game.md(0))
        total = sum(len(e.events) for e in log.entries)
        streamed = [await asyncio.wait_for(call.read(), 5) for _ in range(total)]
        assert [m.version for m in streamed] == [e.version for e in log.entries for _ in e.events]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(call.read(), 0.3)
        call.cancel()


async def test_log_pages_are_bounded() -> None:
    """An open-ended game past 1000 steps: a page holds at most 1000 entries whatever the request
    asks for, and stays far below the message size limit."""
    async with running_server(config()) as api:
        assert api.server is not None
        game = await api.create("simple", seed=51, rounds=0)
        version = await _play_directly(api, game.id, 1005, random.Random(51))
        for size in (0, 1, 999, 1000, 1001, 2**31 - 1):
            page = await api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id, page_size=size), metadata=OPERATOR)
            expected = min(size or 500, LOG_PAGE_MAX)
            assert len(page.entries) == expected, size
            assert page.next_after_version == expected
            assert page.ByteSize() < api.server.config.max_message_bytes // 2
        last = await api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id, after_version=1000, page_size=10**6),
                                         metadata=OPERATOR)
        assert [e.version for e in last.entries] == list(range(1001, version + 1)) and last.next_after_version == 0


async def _play_directly(api: Api, game_id: str, steps: int, rng: random.Random) -> int:
    """``steps`` random steps through the domain layer (fast); the version reached."""
    assert api.server is not None
    games = api.server.games
    version = 1
    current = (await games.get(pb.GetGameRequest(game_id=game_id), Caller(None, None, False, False))).view
    for _ in range(steps):
        if current.phase == pb.PHASE_OVER:
            result = (await games.start_next_round(pb.StartNextRoundRequest(game_id=game_id, expected_version=version),
                                                   Caller(game_id, 0, False, False))).result
        else:
            seat = current.to_move
            if current.viewer != seat:
                own = await games.get(pb.GetGameRequest(game_id=game_id), Caller(game_id, seat, False, False))
                current = own.view
            req = pb.SubmitActionRequest(game_id=game_id, expected_version=version,
                                         action_id=rng.choice(current.legal_actions).id)
            result = (await games.submit(req, Caller(game_id, seat, False, False))).result
        version, current = result.version, result.view
    return version


async def test_abandoned_and_finished_games_expire(store_url: str) -> None:
    async with running_server(config(store_url, game_ttl_seconds=1, finished_ttl_seconds=1)) as api:
        abandoned = await api.create(seed=71)
        seat, v = await api.to_move(abandoned)
        await api.submit(abandoned, seat, v.legal_actions[0].id)  # a commit renews the TTL, for 1 s
        finished = await api.create(seed=72)
        await api.play_round(finished, random.Random(72))
        assert (await api.get(finished)).view.match.finished
        if store_url:
            redis = _redis(store_url)
            for gid in (abandoned.id, finished.id):
                for key in ("snap", "log", "req"):
                    ttl = redis.command("PTTL", f"gostop:{{{gid}}}:{key}")
                    assert isinstance(ttl, int) and 0 < ttl <= 1000, (key, ttl)
        await asyncio.sleep(1.3)
        for game in (abandoned, finished):
            await expect(api.get(game), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
            # Its tokens die with it: a seat token of an expired game finds nothing.
            await expect(api.get(game, 0), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
            await expect(api.submit(game, 0, 0, version=2), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
            await expect(api.log(game), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
            if store_url:
                keys = [f"gostop:{{{game.id}}}:{k}" for k in ("snap", "log", "req")]
                assert _redis(store_url).command("EXISTS", *keys) == 0
        record(games_expired=2)


def _redis(url: str) -> RedisServer:
    server = RedisServer()
    server.port = int(url.rsplit(":", 1)[1].split("/")[0])
    return server


async def test_many_watchers_on_one_connection_do_not_starve_commits(service_redis: RedisServer) -> None:
    """150 WatchGame streams on one connection (more than the store's 100 blocking reads): a commit
    still goes through at once, and every stream gets its events."""
    watchers = 150
    # Only the store's bound is under test here: the per-game, per-peer and per-connection stream
    # limits (tests/service/test_watch_limits.py) are lifted.
    unlimited = config(service_redis.url, max_watch_per_game=0, max_watch_per_peer=0, max_concurrent_streams=1000)
    async with running_server(unlimited) as api:
        game = await api.create(seed=81)
        calls = [api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=1)) for _ in range(watchers)]
        await asyncio.sleep(0.5)  # let them all block
        seat, v = await api.to_move(game)
        started = time.monotonic()
        result = (await api.submit(game, seat, v.legal_actions[0].id)).result
        assert time.monotonic() - started < 1.0, "a commit waited behind the watchers"
        firsts = await asyncio.wait_for(asyncio.gather(*(_first(c) for c in calls)), 20)
        assert all(m.version == result.version for m in firsts)
        for c in calls:
            c.cancel()
        record(streams_on_one_connection=watchers)


async def _first(call: grpc.aio.UnaryStreamCall) -> pb.WatchGameResponse:
    item: pb.WatchGameResponse = await call.read()
    return item
