"""The pipelined Redis connection of the store's hot path (``service.resp``), against a real
``redis-server``: ordering under many concurrent commands, AUTH and SELECT from the URL, lost
connections, limits, and which URLs use it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import hiredis
import pytest

from gostop.service.redis_store import RedisStore, _fast_client
from gostop.service.resp import RespClient
from gostop.service.store_api import Committed, StoreUnavailable
from testkit.redis_server import HOST, RedisServer

TTL = 60_000


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """This module's own server: some tests kill every client connection of it."""
    with RedisServer() as server:
        yield server


async def test_replies_match_their_commands_under_concurrency(redis_server: RedisServer) -> None:
    client = RespClient(HOST, redis_server.port)
    try:
        await asyncio.gather(*(client.call("SET", f"resp:k{i}", i) for i in range(300)))
        replies = await asyncio.gather(*(client.call("GET", f"resp:k{i}") for i in range(300)))
        assert replies == [str(i).encode() for i in range(300)]
        assert await client.call("HMGET", "resp:none", "a", "b") == [None, None]
        error = await client.call("INCR", "resp:k1", "extra")
        assert isinstance(error, hiredis.ReplyError)
        assert await client.call("PING") == b"PONG"  # an error reply leaves the connection usable
    finally:
        await client.close()


async def test_auth_and_select_from_the_url(redis_server: RedisServer) -> None:
    redis_server.command("ACL", "SETUSER", "player", "on", ">s3cret pass", "~*", "+@all")
    url = f"redis://player:s3cret%20pass@{HOST}:{redis_server.port}/3"
    store = RedisStore.from_url(url)
    try:
        assert await store.create("g1", b"s", b"e", TTL)
        assert await store.commit("g1", 1, b"s2", b"e2", TTL, "r", "fp", b"resp") == Committed(2)
    finally:
        await store.close()
    assert redis_server.command("SELECT", "3") == "OK"
    # the keys went to db 3, not db 0
    assert redis_server.command("EXISTS", "gostop:{g1}:snap") == 0
    wrong = RedisStore.from_url(f"redis://player:wrong@{HOST}:{redis_server.port}/0")
    try:
        with pytest.raises(StoreUnavailable, match="AUTH"):
            await wrong.load("g1")
    finally:
        await wrong.close()


async def test_a_killed_connection_fails_in_flight_calls_and_reconnects(redis_server: RedisServer) -> None:
    client = RespClient(HOST, redis_server.port)
    try:
        assert await client.call("CLIENT", "SETNAME", "victim") == b"OK"
        blocked = asyncio.ensure_future(client.call("BLPOP", "resp:never", 5))
        await asyncio.sleep(0.1)
        assert redis_server.command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal") >= 1  # type: ignore[operator]
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(blocked, 3)
        assert await client.call("PING") == b"PONG"  # a fresh connection
    finally:
        await client.close()


async def test_reads_retry_once_after_a_lost_connection(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url)
    try:
        assert await store.create("g1", b"s", b"e", TTL)
        redis_server.command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
        snapshot = await store.load("g1")  # the dead connection is noticed and replaced
        assert snapshot is not None and snapshot.version == 1
    finally:
        await store.close()


async def test_too_many_in_flight_fails_fast(redis_server: RedisServer) -> None:
    client = RespClient(HOST, redis_server.port, max_pending=2)
    try:
        await client.call("PING")
        first = [asyncio.ensure_future(client.call("BLPOP", f"resp:wait{i}", 1)) for i in range(2)]
        await asyncio.sleep(0.05)
        with pytest.raises(ConnectionError, match="too many"):
            await client.call("PING")
        assert await asyncio.gather(*first) == [None, None]
    finally:
        await client.close()


async def test_unanswered_call_times_out_and_the_next_reconnects(redis_server: RedisServer) -> None:
    client = RespClient(HOST, redis_server.port, op_timeout=0.2)
    try:
        with pytest.raises(TimeoutError):
            await client.call("BLPOP", "resp:never", 2)
        assert await client.call("PING") == b"PONG"
    finally:
        await client.close()


async def test_each_command_gets_its_own_timeout_from_when_it_was_sent(redis_server: RedisServer) -> None:
    """One timer watches the oldest command in flight: a command answered in time never trips
    it, a later one times out ``op_timeout`` after it was sent (not after the first command),
    and the commands behind the one that timed out fail with ConnectionError."""
    client = RespClient(HOST, redis_server.port, op_timeout=0.4)
    loop = asyncio.get_running_loop()
    try:
        assert await client.call("PING") == b"PONG"
        assert await client.call("BLPOP", "resp:slow", "0.2") is None  # half the timeout: in time
        await asyncio.sleep(0.1)  # the BLPOP's deadline is 0.1 s away: it must not count for the next
        sent = loop.time()
        stuck = asyncio.ensure_future(client.call("BLPOP", "resp:never", 5))
        behind = asyncio.ensure_future(client.call("PING"))
        with pytest.raises(TimeoutError, match=r"0\.4 s"):
            await stuck
        assert 0.35 <= loop.time() - sent < 2.0
        with pytest.raises(ConnectionError, match="timed out"):
            await behind
        assert await client.call("PING") == b"PONG"  # a new connection
    finally:
        await client.close()


async def test_unix_socket(tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("sock") / "redis.sock"
    with RedisServer("--unixsocket", str(path), "--unixsocketperm", "700"):
        store = RedisStore.from_url(f"unix://{path}")
        try:
            assert await store.create("g1", b"s", b"e", TTL)
            assert (await store.load("g1")) is not None
        finally:
            await store.close()


def test_which_urls_take_the_pipelined_path() -> None:
    assert _fast_client("redis://h:1/2", 1, 1, 1) is not None
    assert _fast_client("unix:///tmp/r.sock", 1, 1, 1) is not None
    # TLS and query-string options are redis-py's to interpret
    assert _fast_client("rediss://h:1/0", 1, 1, 1) is None
    assert _fast_client("redis://h:1/0?health_check_interval=2", 1, 1, 1) is None
    assert _fast_client("redis+cluster://h:1", 1, 1, 1) is None


def test_on_uvloop(redis_server: RedisServer) -> None:
    """The server runs on uvloop by default, whose transports are not asyncio's classes."""
    import uvloop

    async def main() -> None:
        store = RedisStore.from_url(redis_server.url, prefix="uv")
        try:
            assert await store.create("g1", b"s", b"e", TTL)
            replies = await asyncio.gather(*(store.load("g1") for _ in range(50)))
            assert all(r is not None and r.version == 1 for r in replies)
            assert await store.commit("g1", 1, b"s2", b"e2", TTL, "r", "fp", b"x") == Committed(2)
            redis_server.command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
            snapshot = await store.load("g1")
            assert snapshot is not None and snapshot.version == 2
        finally:
            await store.close()

    uvloop.run(main())
