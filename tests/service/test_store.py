"""One suite for every store: the memory store and Redis (standalone, Sentinel, 3-master Cluster),
each Redis flavour on real ``redis-server`` processes started for the session; plus failure modes
(server down, stalled, closed port), the Redis key layout, corrupt data, and a randomized model
test that the memory store and Redis answer every operation sequence identically."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis import exceptions as redis_exceptions
from redis.asyncio import Redis
from redis.asyncio.sentinel import MasterNotFoundError, SlaveNotFoundError

from gostop.service.memory_store import MemoryStore
from gostop.service.redis_store import RedisStore, _mapped_errors
from gostop.service.store_api import (
    Committed,
    Conflict,
    Duplicate,
    LogEntry,
    Missing,
    Snapshot,
    Store,
    StoreCorrupt,
    StoreUnavailable,
)
from gostop.service.stores import open_store
from testkit.redis_server import RedisClusterServers, RedisSentinelServers, RedisServer, free_port

TTL = 60_000
# Sentinel and Cluster start several redis-servers: not in make check.
BACKENDS = ["memory", "redis", pytest.param("sentinel", marks=pytest.mark.slow),
            pytest.param("cluster", marks=pytest.mark.slow)]


# -- servers (one of each per session) and stores (one per test, with a fresh key prefix) --


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_sentinel() -> Iterator[RedisSentinelServers]:
    with RedisSentinelServers() as servers:
        yield servers


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServers | None]:
    """A 3-master Cluster, or None (its tests skip) if it cannot be started within seconds."""
    cluster = RedisClusterServers(masters=3)
    try:
        cluster.start(timeout=15)
    except (RuntimeError, OSError) as error:
        cluster.stop()
        pytest.skip(f"cannot start a Redis Cluster: {error}")
    yield cluster
    cluster.stop()


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    backend: str = request.param
    if backend == "memory":
        yield MemoryStore()
        return
    server: RedisServer | RedisSentinelServers | RedisClusterServers
    server = request.getfixturevalue(f"redis_{backend}" if backend != "redis" else "redis_server")
    redis_store = RedisStore.from_url(server.url, prefix=_prefix())
    try:
        yield redis_store
    finally:
        await redis_store.close()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Redis]:
    """A plain client on the standalone server, to look at or tamper with the keys."""
    client = Redis.from_url(redis_server.url)
    try:
        yield client
    finally:
        await client.aclose()


async def log_versions(store: Store, game_id: str) -> list[int]:
    return [entry.version for entry in await store.read_log(game_id, 0, limit=100_000)]


# -- create and load --


async def test_create_and_load(store: Store) -> None:
    assert await store.load("g1") is None
    assert await store.create("g1", b"snap-1", b"entry-1", TTL) is True
    assert await store.load("g1") == Snapshot(1, b"snap-1")
    assert await store.read_log("g1", 0) == [LogEntry(1, b"entry-1")]
    assert await store.load("g2") is None


async def test_create_twice_is_refused(store: Store) -> None:
    assert await store.create("g1", b"first", b"e1", TTL) is True
    assert await store.create("g1", b"second", b"e2", TTL) is False
    assert await store.load("g1") == Snapshot(1, b"first")
    assert await store.read_log("g1", 0) == [LogEntry(1, b"e1")]


async def test_binary_payloads_round_trip(store: Store) -> None:
    blob, entry, response = bytes(range(256)), b"\x00\r\n\xff" * 50, b"\x00\x00resp\x00"
    assert await store.create("g1", blob, entry, TTL)
    assert await store.commit("g1", 1, blob[::-1], entry[::-1], TTL, "r", "fp-é", response) == Committed(2)
    assert await store.load("g1") == Snapshot(2, blob[::-1])
    assert await store.read_log("g1", 0) == [LogEntry(1, entry), LogEntry(2, entry[::-1])]
    assert await store.lookup_request("g1", "r") == Duplicate("fp-é", response)


async def test_a_commit_without_a_snapshot_keeps_the_last_one_with_its_version(store: Store) -> None:
    """``blob=None``: the game moves on, its log grows, and its snapshot stays the state at the
    version it was written at (binary bytes, a ``:`` in them included), until a commit writes one."""
    first = b"s1:\x00\xff" + bytes(range(256))
    await store.create("g1", first, b"e1", TTL)
    assert await store.commit("g1", 1, None, b"e2", TTL, "r2", "fp", b"resp2") == Committed(2)
    assert await store.load("g1") == Snapshot(2, first, 1)
    assert await store.commit("g1", 2, None, b"e3", TTL) == Committed(3)
    assert await store.load("g1") == Snapshot(3, first, 1)
    assert await store.commit("g1", 3, b"s4", b"e4", TTL) == Committed(4)
    assert await store.load("g1") == Snapshot(4, b"s4")
    assert await store.commit("g1", 4, None, b"e5", TTL) == Committed(5)
    snapshot = await store.load("g1")
    assert snapshot == Snapshot(5, b"s4", 4) and snapshot.blob_version == 4
    assert await store.commit("g1", 4, None, b"late", TTL) == Conflict(5)
    assert await store.commit("g1", 1, None, b"again", TTL, "r2", "fp", b"other") == Duplicate("fp", b"resp2")
    assert await store.read_log("g1", 0) == [LogEntry(v, f"e{v}".encode()) for v in range(1, 6)]


# -- commit --


async def test_commit_increments_version_and_appends_log(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    assert await store.commit("g1", 1, b"s2", b"e2", TTL) == Committed(2)
    assert await store.commit("g1", 2, b"s3", b"e3", TTL, "req-3", "fp3", b"resp3") == Committed(3)
    assert await store.load("g1") == Snapshot(3, b"s3")
    assert await store.read_log("g1", 0) == [LogEntry(1, b"e1"), LogEntry(2, b"e2"), LogEntry(3, b"e3")]
    assert await store.lookup_request("g1", "req-3") == Duplicate("fp3", b"resp3")


async def test_stale_version_conflicts_and_writes_nothing(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    await store.commit("g1", 1, b"s2", b"e2", TTL)
    for stale in (0, 1, 3, 99):
        assert await store.commit("g1", stale, b"bad", b"bad", TTL, f"r{stale}", "fp", b"x") == Conflict(2)
        assert await store.lookup_request("g1", f"r{stale}") is None
    assert await store.load("g1") == Snapshot(2, b"s2")
    assert await log_versions(store, "g1") == [1, 2]


async def test_commit_to_missing_game(store: Store) -> None:
    assert await store.commit("nope", 1, b"s", b"e", TTL) == Missing()
    assert await store.commit("nope", 1, b"s", b"e", TTL, "r1", "fp", b"x") == Missing()
    assert await store.load("nope") is None
    assert await store.read_log("nope", 0) == []
    assert await store.lookup_request("nope", "r1") is None


async def test_idempotent_retry_is_duplicate_and_writes_nothing(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    assert await store.commit("g1", 1, b"s2", b"e2", TTL, "req", "fp-1", b"response-1") == Committed(2)
    # The same retry, now with a stale expected version: still the stored answer.
    assert await store.commit("g1", 1, b"s2", b"e2", TTL, "req", "fp-1", b"response-1") == Duplicate(
        "fp-1", b"response-1"
    )
    # A different request reusing the id (even at the right version) gets the first fingerprint.
    assert await store.commit("g1", 2, b"other", b"other", TTL, "req", "fp-2", b"response-2") == Duplicate(
        "fp-1", b"response-1"
    )
    assert await store.load("g1") == Snapshot(2, b"s2")
    assert await store.read_log("g1", 0) == [LogEntry(1, b"e1"), LogEntry(2, b"e2")]
    assert await store.lookup_request("g1", "req") == Duplicate("fp-1", b"response-1")


async def test_lookup_request(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    await store.create("g2", b"s1", b"e1", TTL)
    assert await store.lookup_request("g1", "r") is None
    await store.commit("g1", 1, b"s2", b"e2", TTL, "r", "", b"")
    assert await store.lookup_request("g1", "r") == Duplicate("", b"")
    assert await store.lookup_request("g2", "r") is None  # request ids are per game
    assert await store.lookup_request("g1", "") is None


async def test_commit_without_request_id_stores_no_request(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    await store.commit("g1", 1, b"s2", b"e2", TTL, "", "fp", b"resp")
    assert await store.lookup_request("g1", "") is None
    assert await store.commit("g1", 2, b"s3", b"e3", TTL, "", "fp", b"resp") == Committed(3)


# -- the log --


async def test_read_log_ranges(store: Store) -> None:
    await store.create("g1", b"s", b"e1", TTL)
    for version in range(1, 10):
        await store.commit("g1", version, b"s", f"e{version + 1}".encode(), TTL)
    everything = [LogEntry(v, f"e{v}".encode()) for v in range(1, 11)]
    assert await store.read_log("g1", 0) == everything
    assert await store.read_log("g1", -5) == everything
    assert await store.read_log("g1", 4) == everything[4:]
    assert await store.read_log("g1", 4, limit=3) == everything[4:7]
    assert await store.read_log("g1", 0, limit=1) == everything[:1]
    assert await store.read_log("g1", 9) == everything[9:]
    assert await store.read_log("g1", 10) == []
    assert await store.read_log("g1", 1000) == []
    assert await store.read_log("g1", 0, limit=0) == []


async def test_wait_log_returns_at_once_when_entries_exist(store: Store) -> None:
    await store.create("g1", b"s", b"e1", TTL)
    await store.commit("g1", 1, b"s", b"e2", TTL)
    started = time.monotonic()
    assert await store.wait_log("g1", 0, timeout_ms=5000) == [LogEntry(1, b"e1"), LogEntry(2, b"e2")]
    assert await store.wait_log("g1", 1, timeout_ms=5000, limit=1) == [LogEntry(2, b"e2")]
    assert await store.wait_log("g1", 2, timeout_ms=0) == []
    assert time.monotonic() - started < 1.0


async def test_wait_log_wakes_on_commit(store: Store) -> None:
    await store.create("g1", b"s", b"e1", TTL)
    waiter = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=10_000))
    await asyncio.sleep(0.1)
    assert not waiter.done()
    started = time.monotonic()
    assert await store.commit("g1", 1, b"s", b"e2", TTL) == Committed(2)
    assert await asyncio.wait_for(waiter, 5) == [LogEntry(2, b"e2")]
    assert time.monotonic() - started < 1.0


async def test_wait_log_wakes_many_waiters_and_on_create(store: Store) -> None:
    waiters = [asyncio.create_task(store.wait_log("g1", 0, timeout_ms=10_000)) for _ in range(20)]
    await asyncio.sleep(0.1)
    assert not any(w.done() for w in waiters)
    assert await store.create("g1", b"s", b"e1", TTL)
    results = await asyncio.wait_for(asyncio.gather(*waiters), 5)
    assert results == [[LogEntry(1, b"e1")]] * 20


async def test_wait_log_times_out_empty(store: Store) -> None:
    await store.create("g1", b"s", b"e1", TTL)
    started = time.monotonic()
    assert await store.wait_log("g1", 1, timeout_ms=250) == []
    assert await store.wait_log("unknown", 0, timeout_ms=50) == []
    assert 0.25 <= time.monotonic() - started < 1.5


async def test_a_cancelled_call_ends_cancelled(store: Store) -> None:
    """A call cancelled at any moment of its run ends cancelled, never with its answer: a stream's
    task cancelled because its client went must not run on. (redis-py's socket timeout wrapped
    each send in ``asyncio.wait_for``, which on Python 3.11 drops a cancellation that arrives as
    the send completes: on a Cluster one call in twenty ran on, and a WatchGame stream whose
    client had gone kept its seat connected.)"""
    await store.create("g1", b"s", b"e1", TTL)
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.load("g1"),
        lambda: store.read_log("g1", 0, 10),
        lambda: store.wait_log("g1", 1, timeout_ms=2000),
        lambda: store.present("g1", 0),
        lambda: store.hold_presence("g1", "1:p", 2**42),
    ]
    rng = random.Random(7)
    ran_on = []
    for n in range(400):
        task = asyncio.ensure_future(calls[n % len(calls)]())
        await asyncio.sleep(rng.random() * 0.002)
        if task.done():
            continue
        task.cancel()
        await asyncio.wait([task], timeout=5)
        if not task.cancelled():
            ran_on.append((n % len(calls), task.done() and task.exception() is None))
    assert ran_on == []


# -- expiry --


async def test_ttl_expiry(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", ttl_ms=200)
    await store.commit("g1", 1, b"s2", b"e2", 200, "r", "fp", b"resp")
    assert await store.load("g1") == Snapshot(2, b"s2")
    await asyncio.sleep(0.35)
    assert await store.load("g1") is None
    assert await store.read_log("g1", 0) == []
    assert await store.lookup_request("g1", "r") is None
    assert await store.commit("g1", 2, b"s3", b"e3", TTL, "r", "fp", b"resp") == Missing()
    # The id can be reused, from scratch.
    assert await store.create("g1", b"new", b"n1", TTL) is True
    assert await store.load("g1") == Snapshot(1, b"new")
    assert await store.read_log("g1", 0) == [LogEntry(1, b"n1")]
    assert await store.lookup_request("g1", "r") is None


async def test_commit_refreshes_ttl(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", ttl_ms=500)
    await asyncio.sleep(0.3)
    assert await store.commit("g1", 1, b"s2", b"e2", 500, "r", "fp", b"resp") == Committed(2)
    await asyncio.sleep(0.3)  # past the creation's TTL, within the commit's
    assert await store.load("g1") == Snapshot(2, b"s2")
    assert await log_versions(store, "g1") == [1, 2]
    assert await store.lookup_request("g1", "r") == Duplicate("fp", b"resp")
    await asyncio.sleep(0.35)
    assert await store.load("g1") is None
    assert await store.read_log("g1", 0) == []
    assert await store.lookup_request("g1", "r") is None


# -- concurrency --


async def test_concurrent_commits_at_one_version(store: Store) -> None:
    await store.create("g1", b"s1", b"e1", TTL)
    results = await asyncio.gather(
        *(
            store.commit("g1", 1, f"s{i}".encode(), f"e{i}".encode(), TTL, f"r{i}", "fp", b"")
            for i in range(50)
        )
    )
    winners = [i for i, r in enumerate(results) if r == Committed(2)]
    assert len(winners) == 1
    assert all(r == Conflict(2) for i, r in enumerate(results) if i != winners[0])
    assert await store.read_log("g1", 0) == [LogEntry(1, b"e1"), LogEntry(2, f"e{winners[0]}".encode())]
    assert await store.load("g1") == Snapshot(2, f"s{winners[0]}".encode())
    stored = [await store.lookup_request("g1", f"r{i}") for i in range(50)]
    assert [i for i, d in enumerate(stored) if d is not None] == winners


async def test_chain_of_commits_from_concurrent_writers(store: Store) -> None:
    await store.create("g1", b"0", b"w-1", TTL)
    conflicts = 0

    async def writer(name: int) -> list[int]:
        nonlocal conflicts
        mine: list[int] = []
        for attempt in itertools.count():
            snapshot = await store.load("g1")
            assert snapshot is not None and attempt < 10_000
            if snapshot.version >= 201:
                return mine
            version = snapshot.version
            result = await store.commit("g1", version, str(version + 1).encode(), f"w{name}".encode(), TTL)
            if isinstance(result, Committed):
                assert result.version == version + 1
                mine.append(result.version)
            else:
                assert isinstance(result, Conflict) and result.current_version > version
                conflicts += 1
        raise AssertionError("unreachable")

    committed = await asyncio.wait_for(asyncio.gather(*(writer(n) for n in range(20))), 30)
    assert await store.load("g1") == Snapshot(201, b"201")
    assert await log_versions(store, "g1") == list(range(1, 202))
    assert sorted(v for versions in committed for v in versions) == list(range(2, 202))


# -- validation, shared by both stores --


async def test_invalid_arguments(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.create("", b"s", b"e", TTL)
    with pytest.raises(ValueError):
        await store.create("a{b}", b"s", b"e", TTL)
    with pytest.raises(ValueError):
        await store.create("g1", b"s", b"e", 0)
    await store.create("g1", b"s", b"e", TTL)
    with pytest.raises(ValueError):
        await store.commit("g1", 1, b"s", b"e", TTL, "r", "fp\x00x", b"")
    with pytest.raises(ValueError):
        await store.commit("g1", 1, b"s", b"e", -1)
    assert await store.load("g1") == Snapshot(1, b"s")


async def test_ping(store: Store) -> None:
    await store.ping()
    assert store.name == ("memory" if isinstance(store, MemoryStore) else "redis")


# -- Redis specifics: key layout, scripts, corrupt data --


async def test_redis_key_layout(redis_server: RedisServer, raw: Redis) -> None:
    prefix = _prefix()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    try:
        await store.create("g1", b"s1", b"e1", TTL)
        await store.commit("g1", 1, b"s2", b"e2", TTL, "r1", "fp", b"resp")
    finally:
        await store.close()
    base = f"{prefix}:{{g1}}"
    assert sorted(await raw.keys(f"{prefix}:*")) == [f"{base}:{k}".encode() for k in ("log", "req", "snap")]
    assert await raw.hgetall(f"{base}:snap") == {b"version": b"2", b"blob": b"s2"}
    assert await raw.xrange(f"{base}:log") == [(b"1-0", {b"e": b"e1"}), (b"2-0", {b"e": b"e2", b"r": b"resp"})]
    assert await raw.hgetall(f"{base}:req") == {b"r1": b"fp\x00v2"}, "the response is stored once, in the log"
    for key in ("snap", "log", "req"):
        assert 0 < await raw.pttl(f"{base}:{key}") <= TTL


async def test_redis_a_lagging_snapshot_is_no_blob_a_server_of_before_would_read(redis_server: RedisServer,
                                                                              raw: Redis) -> None:
    """``blob`` is only ever the state at ``version``: a commit without a snapshot moves it to ``base``
    (``<at>:<bytes>``), so a server of before (which reads ``version`` and ``blob``) finds no snapshot
    (corrupt, ``DATA_LOSS``) instead of serving the old state as the current one; a commit with a
    snapshot writes ``blob`` again and drops ``base``."""
    prefix = _prefix()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    snap = f"{prefix}:{{g1}}:snap"
    try:
        await store.create("g1", b"s1", b"e1", TTL)
        assert await raw.hgetall(snap) == {b"version": b"1", b"blob": b"s1"}
        await store.commit("g1", 1, None, b"e2", TTL)
        await store.commit("g1", 2, None, b"e3", TTL)
        assert await raw.hgetall(snap) == {b"version": b"3", b"base": b"1:s1"}
        await store.commit("g1", 3, b"s4", b"e4", TTL)
        assert await raw.hgetall(snap) == {b"version": b"4", b"blob": b"s4"}
    finally:
        await store.close()


async def test_redis_corrupt_base_snapshots(redis_server: RedisServer, raw: Redis) -> None:
    prefix = _prefix()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    try:
        for n, base in enumerate((b"s1", b"x:s1", b":s1", b"0:s1", b"3:s1", b"9:s1")):
            game = f"g{n}"
            await store.create(game, b"s1", b"e1", TTL)
            await store.commit(game, 1, None, b"e2", TTL)
            await store.commit(game, 2, None, b"e3", TTL)
            await raw.hset(f"{prefix}:{{{game}}}:snap", "base", base)
            with pytest.raises(StoreCorrupt):
                await store.load(game)
        # A game with a version and no snapshot at all: a load and a commit without one refuse it.
        await store.create("none", b"s1", b"e1", TTL)
        await raw.hdel(f"{prefix}:{{none}}:snap", "blob")
        with pytest.raises(StoreCorrupt):
            await store.load("none")
        with pytest.raises(StoreCorrupt):
            await store.commit("none", 1, None, b"e2", TTL)
        assert await store.read_log("none", 0) == [LogEntry(1, b"e1")], "nothing written"
    finally:
        await store.close()


async def test_redis_reads_requests_stored_before_the_log_held_responses(redis_server: RedisServer,
                                                                        raw: Redis) -> None:
    """A request stored by an older server (fingerprint NUL response in the hash) still answers."""
    prefix = _prefix()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    try:
        await store.create("g1", b"s1", b"e1", TTL)
        await raw.hset(f"{prefix}:{{g1}}:req", "old", b"fp-old\x00old response")
        assert await store.lookup_request("g1", "old") == Duplicate("fp-old", b"old response")
        assert await store.commit("g1", 1, b"s2", b"e2", TTL, "old", "fp-old", b"new") == Duplicate(
            "fp-old", b"old response")
        await store.commit("g1", 1, b"s2", b"e2", TTL, "new", "fp-new", b"its response")
        await raw.xdel(f"{prefix}:{{g1}}:log", "2-0")  # the log lost the entry the request names
        with pytest.raises(StoreCorrupt):
            await store.lookup_request("g1", "new")
    finally:
        await store.close()


async def test_redis_scripts_reload_after_script_flush(redis_server: RedisServer, raw: Redis) -> None:
    store = RedisStore.from_url(redis_server.url, prefix=_prefix())
    try:
        await store.create("g1", b"s1", b"e1", TTL)
        await raw.script_flush()
        assert await store.commit("g1", 1, b"s2", b"e2", TTL) == Committed(2)
        await raw.script_flush()
        assert await store.create("g2", b"s1", b"e1", TTL) is True
    finally:
        await store.close()


async def test_redis_corrupt_data(redis_server: RedisServer, raw: Redis) -> None:
    prefix = _prefix()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    try:
        await raw.set(f"{prefix}:{{bad}}:snap", b"not a hash")
        with pytest.raises(StoreCorrupt):
            await store.load("bad")
        with pytest.raises(StoreCorrupt):
            await store.commit("bad", 1, b"s", b"e", TTL)
        await raw.hset(f"{prefix}:{{half}}:snap", "blob", b"x")
        with pytest.raises(StoreCorrupt):
            await store.load("half")
        # A log ahead of its snapshot: the commit fails whole, nothing is written.
        await store.create("ahead", b"s1", b"e1", TTL)
        await raw.xadd(f"{prefix}:{{ahead}}:log", {"e": b"x"}, id="7-0")
        with pytest.raises(StoreCorrupt):
            await store.commit("ahead", 1, b"s2", b"e2", TTL, "r", "fp", b"resp")
        assert await store.load("ahead") == Snapshot(1, b"s1")
        assert await store.lookup_request("ahead", "r") is None
        await raw.hset(f"{prefix}:{{req}}:req", "r", b"no separator")
        with pytest.raises(StoreCorrupt):
            await store.lookup_request("req", "r")
    finally:
        await store.close()


@pytest.mark.slow  # a Redis Cluster
async def test_cluster_keys_of_a_game_share_a_slot(redis_cluster: RedisClusterServers | None) -> None:
    assert redis_cluster is not None
    node = redis_cluster.nodes[0]
    for game_id in ("g1", "abc-DEF_123", "x" * 64):
        slots = {
            node.command("CLUSTER", "KEYSLOT", f"gostop:{{{game_id}}}:{k}") for k in ("snap", "log", "req")
        }
        assert len(slots) == 1
    # and games spread over the masters: the suite's games really exercise several nodes
    slots_of = {node.command("CLUSTER", "KEYSLOT", f"gostop:{{g{i}}}:snap") for i in range(20)}
    assert len(slots_of) > 1


# -- Redis failures: fast StoreUnavailable, no hanging, no leaked connections --


async def _assert_unavailable_fast(store: Store, limit: float = 2.0) -> None:
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.ping(),
        lambda: store.load("g1"),
        lambda: store.create("g2", b"s", b"e", TTL),
        lambda: store.commit("g1", 1, b"s", b"e", TTL, "r", "fp", b""),
        lambda: store.lookup_request("g1", "r"),
        lambda: store.read_log("g1", 0),
        lambda: store.wait_log("g1", 0, timeout_ms=5000),
    ]
    for number, call in enumerate(calls):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(call(), 10)
        assert time.monotonic() - started < limit, number


async def test_unavailable_when_server_stops() -> None:
    server = RedisServer().start()
    store = RedisStore.from_url(server.url)
    try:
        assert await store.create("g1", b"s", b"e", TTL)
        assert await store.wait_log("g1", 0, timeout_ms=100) == [LogEntry(1, b"e")]
        server.stop()
        await _assert_unavailable_fast(store)
    finally:
        server.stop()
        await store.close()


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:{port}/0",
        "redis+sentinel://127.0.0.1:{port}/gostop",
        "redis+cluster://127.0.0.1:{port},127.0.0.1:{port}",
    ],
    ids=["standalone", "sentinel", "cluster"],
)
async def test_unavailable_on_closed_port(url: str) -> None:
    store = open_store(url.format(port=free_port()))
    try:
        await _assert_unavailable_fast(store)
    finally:
        await store.close()


async def test_unavailable_when_server_stalls() -> None:
    """A frozen server accepts connections but never answers: calls end at the store's deadline
    (twice the connect and read timeouts: the clients have no socket read timeout of their own)."""
    with RedisServer() as server:
        store = RedisStore.from_url(server.url, connect_timeout=0.2, read_timeout=0.3, max_block_ms=200)
        try:
            assert await store.create("g1", b"s", b"e", TTL)
            server.pause()
            try:
                await _assert_unavailable_fast(store, limit=1.5)
            finally:
                server.resume()
            # and it recovers once the server answers again
            assert await store.commit("g1", 1, b"s2", b"e2", TTL) == Committed(2)
            assert await store.wait_log("g1", 1, timeout_ms=1000) == [LogEntry(2, b"e2")]
        finally:
            await store.close()


async def test_sentinel_discovery_passes_over_a_sentinel_that_does_not_answer(
        redis_sentinel: RedisSentinelServers) -> None:
    """The first sentinel named accepts connections and never answers: each discovery gives it
    ``read_timeout`` and asks the next, so the store serves."""
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(-1)
        writer.close()

    mute = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = mute.sockets[0].getsockname()[1]
    url = redis_sentinel.url.replace("redis+sentinel://", f"redis+sentinel://127.0.0.1:{port},")
    store = RedisStore.from_url(url, prefix=_prefix(), read_timeout=0.3)
    try:
        started = time.monotonic()
        assert await store.create("g1", b"s", b"e", TTL)
        assert await store.read_log("g1", 0) == [LogEntry(1, b"e")]
        assert time.monotonic() - started < 2.0
    finally:
        await store.close()
        mute.close()


async def test_waiter_fails_fast_when_server_dies_mid_wait() -> None:
    server = RedisServer().start()
    store = RedisStore.from_url(server.url)
    try:
        assert await store.create("g1", b"s", b"e", TTL)
        waiter = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=20_000))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        server.stop()
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(waiter, 5)
        assert time.monotonic() - started < 2.0
    finally:
        server.stop()
        await store.close()


@pytest.mark.parametrize(
    "error",
    [
        redis_exceptions.ConnectionError("refused"),
        redis_exceptions.TimeoutError("read timeout"),
        redis_exceptions.BusyLoadingError("LOADING"),
        redis_exceptions.AuthenticationError("WRONGPASS"),
        redis_exceptions.MaxConnectionsError("too many"),
        redis_exceptions.ClusterDownError("CLUSTERDOWN"),
        redis_exceptions.MasterDownError("MASTERDOWN"),
        redis_exceptions.TryAgainError("TRYAGAIN"),
        redis_exceptions.ReadOnlyError("READONLY"),
        redis_exceptions.OutOfMemoryError("OOM"),
        redis_exceptions.ClusterError("TTL exhausted"),
        redis_exceptions.RedisClusterException("Redis Cluster cannot be connected"),
        redis_exceptions.ResponseError("BUSY Redis is busy running a script"),
        MasterNotFoundError("No master found for 'gostop'"),
        SlaveNotFoundError("No replica found"),
        ConnectionResetError("reset"),
        TimeoutError(),
    ],
    ids=lambda error: type(error).__name__,
)
def test_redis_errors_become_store_unavailable(error: Exception) -> None:
    with pytest.raises(StoreUnavailable) as raised, _mapped_errors():
        raise error
    assert raised.value.__cause__ is error


def test_wrong_type_becomes_store_corrupt() -> None:
    error = redis_exceptions.ResponseError(
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    with pytest.raises(StoreCorrupt), _mapped_errors():
        raise error


def _connected_clients(server: RedisServer) -> int:
    info = server.command("INFO", "clients")
    assert isinstance(info, bytes)
    fields = dict(line.split(":", 1) for line in info.decode().splitlines() if ":" in line)
    return int(fields["connected_clients"])


async def test_cancelled_waiters_release_their_connections(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, prefix=_prefix(), max_waiters=8)
    try:
        await store.create("g1", b"s", b"e1", TTL)
        before = _connected_clients(redis_server)
        waiters = [asyncio.create_task(store.wait_log("g1", 1, timeout_ms=30_000)) for _ in range(30)]
        await asyncio.sleep(0.3)
        # At most max_waiters blocking reads hold connections; the others queue for a slot.
        assert before < _connected_clients(redis_server) <= before + 8
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        await asyncio.sleep(0.1)
        assert _connected_clients(redis_server) <= before + 1
        # The store still works, waiters included, and more than max_waiters of them.
        waiters = [asyncio.create_task(store.wait_log("g1", 1, timeout_ms=5000)) for _ in range(20)]
        await asyncio.sleep(0.1)
        assert await store.commit("g1", 1, b"s", b"e2", TTL) == Committed(2)
        assert await asyncio.wait_for(asyncio.gather(*waiters), 5) == [[LogEntry(2, b"e2")]] * 20
    finally:
        await store.close()


async def test_waiters_beyond_max_waiters_fall_back_to_a_read(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, prefix=_prefix(), max_waiters=2)
    try:
        await store.create("g1", b"s", b"e1", TTL)
        started = time.monotonic()
        results = await asyncio.gather(*(store.wait_log("g1", 1, timeout_ms=300) for _ in range(5)))
        assert results == [[]] * 5
        assert time.monotonic() - started < 1.5
    finally:
        await store.close()


# -- URLs --


def test_open_store_urls() -> None:
    assert isinstance(open_store(None), MemoryStore)
    assert isinstance(open_store("", max_games=5), MemoryStore)
    for url in (
        "redis://localhost:6379/0",
        "rediss://:secret@localhost:6380/1",
        "redis+sentinel://:pw@h1:26379,h2:26380/mymaster/2",
        "redis+sentinel://h1/mymaster",
        "redis+cluster://user:pw@h1:7000,h2:7001,[::1]:7002",
    ):
        assert isinstance(open_store(url), RedisStore), url
    with pytest.raises(ValueError, match="unsupported store URL scheme 'memcached'"):
        open_store("memcached://localhost")
    with pytest.raises(ValueError, match="master_name"):
        open_store("redis+sentinel://h1:26379")
    with pytest.raises(ValueError, match="takes no path"):
        open_store("redis+cluster://h1:7000/3")
    with pytest.raises(ValueError, match="invalid port") as error:
        open_store("redis+cluster://:hunter2@h1:notaport")
    assert "hunter2" not in str(error.value)


# -- the memory store's bound --


async def test_memory_store_evicts_the_soonest_expiring_game() -> None:
    store = MemoryStore(max_games=3)
    await store.create("short", b"s", b"e", 1_000)
    await store.create("long", b"s", b"e", 60_000)
    await store.create("mid", b"s", b"e", 30_000)
    await store.create("new", b"s", b"e", 60_000)
    assert await store.load("short") is None
    assert [await store.load(g) is not None for g in ("long", "mid", "new")] == [True, True, True]
    assert store.evictions == 1
    # A commit pushes a game's expiry back, out of the way of the next eviction.
    await store.commit("mid", 1, b"s", b"e", 120_000)
    await store.create("newer", b"s", b"e", 60_000)
    assert await store.load("long") is None or await store.load("new") is None
    assert await store.load("mid") is not None
    assert len(store) == 3


async def test_memory_store_purges_expired_games_before_evicting() -> None:
    store = MemoryStore(max_games=2)
    await store.create("a", b"s", b"e", 50)
    await store.create("b", b"s", b"e", 50)
    await asyncio.sleep(0.1)
    await store.create("c", b"s", b"e", 60_000)
    await store.create("d", b"s", b"e", 60_000)
    assert store.evictions == 0
    assert len(store) == 2


async def test_memory_store_can_refuse_instead_of_evicting() -> None:
    store = MemoryStore(max_games=1, on_full="refuse")
    assert await store.create("a", b"s", b"e", TTL)
    with pytest.raises(StoreUnavailable):
        await store.create("b", b"s", b"e", TTL)
    assert await store.create("a", b"s", b"e", TTL) is False
    assert await store.commit("a", 1, b"s", b"e", TTL) == Committed(2)


async def test_memory_store_wait_log_leaves_no_waiter_behind() -> None:
    store = MemoryStore()
    await store.create("g1", b"s", b"e", TTL)
    assert await store.wait_log("g1", 1, timeout_ms=20) == []
    task = asyncio.create_task(store.wait_log("g1", 1, timeout_ms=10_000))
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert store._waiters == {}


# -- the memory store and Redis agree on any sequence of operations --

GAMES = st.sampled_from(["a", "b"])
REQUEST_IDS = st.sampled_from(["", "r1", "r2", "r3"])
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("create"), GAMES, st.binary(max_size=6), st.binary(max_size=6)),
        st.tuples(st.just("load"), GAMES),
        st.tuples(
            st.just("commit"),
            GAMES,
            st.one_of(st.none(), st.integers(0, 6)),  # None: the current version
            st.binary(max_size=6),
            st.booleans(),  # with a snapshot, or none (the last one stays)
            REQUEST_IDS,
            st.sampled_from(["f1", "f2"]),
            st.binary(max_size=4),
        ),
        st.tuples(st.just("lookup"), GAMES, REQUEST_IDS),
        st.tuples(st.just("read_log"), GAMES, st.integers(-1, 8), st.integers(0, 4)),
        st.tuples(st.just("wait_log"), GAMES, st.integers(-1, 8), st.integers(0, 4)),
    ),
    max_size=30,
)


async def _apply(store: Store, operation: tuple[Any, ...], current: int) -> object:
    kind, game, *args = operation
    if kind == "create":
        return await store.create(game, args[0], args[1], TTL)
    if kind == "load":
        return await store.load(game)
    if kind == "commit":
        expected, data, snapshot, request_id, fingerprint, response = args
        version = current if expected is None else expected
        return await store.commit(game, version, data if snapshot else None, data[::-1], TTL, request_id,
                                  fingerprint, response)
    if kind == "lookup":
        return await store.lookup_request(game, args[0])
    if kind == "read_log":
        return await store.read_log(game, args[0], args[1])
    return await store.wait_log(game, args[0], timeout_ms=1, limit=args[1])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_memory_and_redis_agree(redis_server: RedisServer, operations: list[tuple[Any, ...]]) -> None:
    async def run() -> None:
        memory = MemoryStore()
        redis_store = RedisStore.from_url(redis_server.url, prefix=_prefix())
        try:
            for step, operation in enumerate(operations):
                snapshot = await memory.load(operation[1])
                current = snapshot.version if snapshot else 1
                expected = await _apply(memory, operation, current)
                actual = await _apply(redis_store, operation, current)
                assert actual == expected, (step, operation)
            for game in ("a", "b"):
                assert await redis_store.load(game) == await memory.load(game)
                assert await redis_store.read_log(game, 0) == await memory.read_log(game, 0)
        finally:
            await redis_store.close()

    asyncio.run(run())
