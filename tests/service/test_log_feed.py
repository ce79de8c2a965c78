"""Commit notices on Redis (``service.log_feed``): a process follows each game once, waiters take
announced entries from memory, and nothing is missed when the subscription is lost, refused or
remade."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from gostop.service.redis_store import RedisStore
from gostop.service.store_api import LogEntry
from testkit.redis_server import RedisSentinelServers, RedisServer

TTL = 60_000


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def store(redis_server: RedisServer) -> AsyncIterator[RedisStore]:
    store = RedisStore.from_url(redis_server.url, prefix=f"t{uuid.uuid4().hex[:12]}")
    yield store
    await store.close()


def _calls(server: RedisServer, command: str) -> int:
    """How many times the server ran ``command`` (INFO commandstats)."""
    info = server.command("INFO", "commandstats")
    assert isinstance(info, bytes)
    for line in info.decode().splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


async def _until(condition: object, seconds: float = 5.0) -> None:
    assert callable(condition)
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_waiters_of_one_game_share_one_subscription(store: RedisStore, redis_server: RedisServer) -> None:
    assert await store.create("g1", b"s", b"e1", TTL)
    waiters = [asyncio.create_task(store.wait_log("g1", 1, timeout_ms=10_000)) for _ in range(50)]
    await asyncio.sleep(0.2)
    assert store.followed_games == 1
    assert await store.commit("g1", 1, b"s2", b"e2", TTL)
    assert await asyncio.gather(*waiters) == [[LogEntry(2, b"e2")]] * 50


async def test_an_announced_entry_is_taken_without_reading_the_log(store: RedisStore,
                                                                    redis_server: RedisServer) -> None:
    """The steady state of a stream: after the first read, every next entry comes with its notice."""
    assert await store.create("g1", b"s", b"e1", TTL)
    assert await store.wait_log("g1", 0, timeout_ms=5_000) == [LogEntry(1, b"e1")]
    first = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=5_000))
    await asyncio.sleep(0.2)  # subscribed, and the log read once more
    assert await store.commit("g1", 1, None, b"e2", TTL)
    assert await first == [LogEntry(2, b"e2")]
    reads = _calls(redis_server, "xrange")
    for version in range(2, 12):
        waiter = asyncio.create_task(store.wait_log("g1", version, timeout_ms=5_000))
        await asyncio.sleep(0.01)
        assert await store.commit("g1", version, None, b"e%d" % (version + 1), TTL)
        assert await waiter == [LogEntry(version + 1, b"e%d" % (version + 1))]
    assert _calls(redis_server, "xrange") == reads
    # a waiter a few versions behind is served from the recent entries too
    assert await store.wait_log("g1", 8, timeout_ms=5_000) == [LogEntry(v, b"e%d" % v) for v in (9, 10, 11, 12)]
    assert _calls(redis_server, "xrange") == reads


async def test_a_lost_subscription_loses_no_entry(store: RedisStore, redis_server: RedisServer) -> None:
    """The subscriber's connection is killed between commits: waiters read the log until the
    feed is back, and every version still arrives once, in order."""
    assert await store.create("g1", b"s", b"e1", TTL)
    seen: list[int] = []

    async def follow() -> None:
        after = 0
        while after < 30:
            for item in await store.wait_log("g1", after, timeout_ms=10_000):
                seen.append(item.version)
                after = item.version

    follower = asyncio.create_task(follow())
    for version in range(1, 30):
        if version % 7 == 0:
            redis_server.command("CLIENT", "KILL", "TYPE", "pubsub")
        assert await store.commit("g1", version, None, b"e", TTL)
        await asyncio.sleep(0.03)
    await asyncio.wait_for(follower, 10)
    assert seen == list(range(1, 31))


async def test_a_refused_subscription_falls_back_to_blocking_reads(redis_server: RedisServer) -> None:
    """A user without the right to sharded pub/sub (Redis ACL: no channels), like a server
    before Redis 7 without the command: commits stand and watchers get them."""
    user = f"u{uuid.uuid4().hex[:8]}"
    redis_server.command("ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "+@all")
    try:
        store = RedisStore.from_url(f"redis://{user}:pw@127.0.0.1:{redis_server.port}/0")
        try:
            assert await store.create("g1", b"s", b"e1", TTL)
            waiter = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=10_000))
            await asyncio.sleep(0.3)
            assert await store.commit("g1", 1, None, b"e2", TTL)
            assert await asyncio.wait_for(waiter, 5) == [LogEntry(2, b"e2")]
            later = asyncio.create_task(store.wait_log("g1", 2, timeout_ms=10_000))
            await asyncio.sleep(0.1)
            assert await store.commit("g1", 2, None, b"e3", TTL)
            assert await asyncio.wait_for(later, 5) == [LogEntry(3, b"e3")]
        finally:
            await store.close()
    finally:
        redis_server.command("ACL", "DELUSER", user)


async def test_a_game_nobody_waits_on_is_unsubscribed(store: RedisStore, redis_server: RedisServer) -> None:
    feed = store._feed
    assert feed is not None
    feed._linger_s = 0.0
    feed._ping_s = 0.05
    assert await store.create("g1", b"s", b"e1", TTL)
    assert await store.wait_log("g1", 1, timeout_ms=100) == []
    await _until(lambda: store.followed_games == 0)
    channels = redis_server.command("PUBSUB", "SHARDCHANNELS", "*")
    assert isinstance(channels, list)
    assert not [c for c in channels if isinstance(c, bytes) and b"{g1}" in c and store._channel("g1").encode() == c]


async def test_a_game_created_again_is_followed_from_its_first_version(store: RedisStore) -> None:
    """An expired game's id used again: its version 1 follows no earlier announcement."""
    assert await store.create("g1", b"s", b"e1", 100)
    assert await store.commit("g1", 1, None, b"e2", 100)
    assert await store.wait_log("g1", 1, timeout_ms=1_000) == [LogEntry(2, b"e2")]
    await asyncio.sleep(0.25)
    waiter = asyncio.create_task(store.wait_log("g1", 0, timeout_ms=5_000))
    await asyncio.sleep(0.05)
    assert await store.create("g1", b"s", b"new", TTL)
    assert await waiter == [LogEntry(1, b"new")]


@pytest.mark.slow  # a Sentinel group of several redis-servers
async def test_a_sentinel_groups_master_announces_commits() -> None:
    """Behind Sentinel the notices' connection goes to the master the sentinels name."""
    with RedisSentinelServers() as servers:
        store = RedisStore.from_url(servers.url)
        try:
            assert store._feed is not None
            assert await store.create("g1", b"s", b"e1", TTL)
            assert await store.wait_log("g1", 0, timeout_ms=5_000) == [LogEntry(1, b"e1")]
            waiter = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=10_000))
            await _until(lambda: store._feed is not None and store._feed.live and store.followed_games == 1)
            assert await store.commit("g1", 1, None, b"e2", TTL)
            assert await asyncio.wait_for(waiter, 5) == [LogEntry(2, b"e2")]
        finally:
            await store.close()
