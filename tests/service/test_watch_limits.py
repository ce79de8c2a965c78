"""Watchers cannot starve each other, stuck connections are closed, and a drain does not wait for
open streams.

Regressions: 150 spectator streams with ``after_version = 10^12`` held every blocking-read slot of a
process, so honest watchers saw commits 12.7-14.5 s late; half-sent HTTP/2 requests stayed open
forever; with any WatchGame stream open, SIGTERM waited the whole drain time.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from gostop.service.redis_store import RedisStore
from gostop.service.watch import WATCH_POLL_MS
from gostop.v1 import game_pb2 as pb
from testkit.h2_raw import RawConnection, frame, get_game
from testkit.redis_server import RedisServer
from testkit.servers import (
    Api,
    client,
    config,
    decode_error,
    expect,
    running_server,
    start_process,
)

EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_watch_after_a_version_beyond_the_game_is_refused(api: Api) -> None:
    game = await api.create("standard")
    for after in (10**12, 2):  # (before the fix, such a stream waited for ever, holding a blocking read)
        call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=after))
        err = await expect(asyncio.wait_for(call.read(), 10), grpc.StatusCode.OUT_OF_RANGE, "VERSION_AHEAD")
        assert err.info.metadata["current_version"] == "1"


async def _opened(api: Api, count: int) -> None:
    """Wait until the server holds ``count`` open streams."""
    assert api.server is not None
    for _ in range(400):
        if api.server.games.streams.total == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{api.server.games.streams.total} streams open, not {count}")


@pytest.fixture
async def limited() -> AsyncIterator[Api]:
    async with running_server(config(max_watch_per_game=3, max_watch_per_seat=2, max_watch_per_peer=5)) as api:
        yield api


async def test_watch_streams_are_bounded_per_game_seat_and_peer(limited: Api) -> None:
    api = limited
    game = await api.create("standard")
    watch = api.stub.WatchGame
    calls = [watch(pb.WatchGameRequest(game_id=game.id, after_version=1), metadata=game.md(0)) for _ in range(2)]
    await _opened(api, 2)
    err = await expect(watch(pb.WatchGameRequest(game_id=game.id, after_version=1), metadata=game.md(0)).read(),
                       EXHAUSTED, "TOO_MANY_STREAMS")
    assert err.info.metadata["scope"] == "seat"
    calls.append(watch(pb.WatchGameRequest(game_id=game.id, after_version=1)))  # a spectator
    await _opened(api, 3)
    err = await expect(watch(pb.WatchGameRequest(game_id=game.id, after_version=1)).read(), EXHAUSTED)
    assert err.info.metadata["scope"] == "game"
    other = await api.create("standard")
    calls += [watch(pb.WatchGameRequest(game_id=other.id, after_version=1)) for _ in range(2)]
    await _opened(api, 5)
    third = await api.create("standard")
    err = await expect(watch(pb.WatchGameRequest(game_id=third.id, after_version=1)).read(), EXHAUSTED)
    assert err.info.metadata["scope"] == "peer"
    for call in calls:
        call.cancel()
    await _opened(api, 0)  # closed streams give their places back
    fresh = watch(pb.WatchGameRequest(game_id=third.id, after_version=1))
    await _opened(api, 1)
    fresh.cancel()


async def test_a_watcher_is_not_starved_when_every_blocking_read_is_held(service_redis: RedisServer) -> None:
    """Two blocking-read slots, four waits holding them on other games: a wait on a fifth game still
    learns of its commit at once (it polls), instead of queueing for the whole wait behind them."""
    store = RedisStore.from_url(service_redis.url, max_waiters=2, prefix="starve")
    try:
        for n in range(5):
            assert await store.create(f"g{n}", b"snap", b"entry", 60_000)
        holders = [asyncio.ensure_future(store.wait_log(f"g{n}", 1, 15_000)) for n in range(4)]
        await asyncio.sleep(0.3)
        started = time.monotonic()
        waiter = asyncio.ensure_future(store.wait_log("g4", 1, 15_000))
        await asyncio.sleep(0.1)
        await store.commit("g4", 1, b"snap2", b"entry2", 60_000)
        entries = await asyncio.wait_for(waiter, 20)
        waited = time.monotonic() - started
        assert [e.version for e in entries] == [2]
        assert waited < 5, f"the commit reached its watcher after {waited:.1f} s"
        for holder in holders:
            holder.cancel()
        await asyncio.gather(*holders, return_exceptions=True)
    finally:
        await store.close()


async def test_watchers_see_commits_while_other_streams_hold_every_blocking_read(
        service_redis: RedisServer) -> None:
    cfg = config(service_redis.url, redis_blocking_reads=2, max_watch_per_peer=0)
    async with running_server(cfg) as api:
        held = [await api.create("standard") for _ in range(4)]
        calls = [api.stub.WatchGame(pb.WatchGameRequest(game_id=g.id, after_version=1)) for g in held]
        await _opened(api, 4)
        game = await api.create("standard")
        stream = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=1))
        await _opened(api, 5)
        seat, view = await api.to_move(game)
        started = time.monotonic()
        await api.submit(game, seat, view.legal_actions[0].id)
        first = await asyncio.wait_for(stream.read(), 20)
        waited = time.monotonic() - started
        assert first.version == 2
        assert waited < 5, f"the commit reached its watcher after {waited:.1f} s"
        for call in [*calls, stream]:
            call.cancel()


async def test_half_sent_requests_are_closed_by_the_connection_age_limit() -> None:
    """A request whose message never completes holds its connection only until the age limit."""
    async with running_server(config(max_connection_age_seconds=1.0, max_connection_age_grace_seconds=1.0)) as api:
        game = await api.create("standard")

        def half_sent() -> bool:
            conn = RawConnection(api.port)
            try:
                stream = conn.start("GetGame", [], api.port)
                whole = frame(get_game(game.id) + b"\x00" * 100)
                conn.send(stream, whole[:12], end=False)  # the prefix declares more than is ever sent
                return conn.wait_closed(timeout=20)
            finally:
                conn.close()

        assert await asyncio.to_thread(half_sent), "the server kept a half-sent request open"


async def test_sigterm_ends_open_watch_streams_instead_of_waiting_the_drain() -> None:
    server = await start_process("", GOSTOP_DRAIN_SECONDS="30")
    try:
        api = client(server.port)
        game = await api.create("standard")
        stream = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=1), metadata=game.md(0))
        await asyncio.sleep(0.5)  # the stream is open and waiting
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await asyncio.wait_for(stream.read(), 20)
        ended = time.monotonic() - started
        failure = decode_error(raised.value)
        assert failure.code == grpc.StatusCode.UNAVAILABLE and failure.info.reason == "SHUTTING_DOWN"
        assert failure.info.metadata["resume_after_version"] == "1"
        code = await asyncio.to_thread(server.process.wait, 25)
        took = time.monotonic() - started
        assert code == 0
        # The stream's pending store read is cancelled, not waited for: well within one watch
        # poll (WATCH_POLL_MS, 15 s), which a drain that let the read run out would take.
        assert ended < 5, f"the stream ended {ended:.1f} s after SIGTERM (the watch poll is {WATCH_POLL_MS} ms)"
        assert took < 10, f"the drain waited {took:.1f} s for an open stream (drain time 30 s)"
        await api.channel.close()
    finally:
        server.stop()
