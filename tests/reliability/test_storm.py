"""The conflict storm: 64 clients on 100 games through two real server processes sharing one real
Redis, then the same suite on a three-master Redis Cluster and on the embedded memory store, each
followed by the verification of every game (``harness.verify``): the log replays through the
engine to the stored snapshot, no version is skipped or committed twice, every acknowledged
request is in the log, every commit was acknowledged, and every retry of an acknowledged request
id gets the identical response."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from gostop.service.store_api import Store
from gostop.service.stores import open_store
from testkit.redis_server import RedisClusterServers, RedisServer
from testkit.servers import (
    Api,
    client,
    config,
    running_server,
    start_process,
)

from .harness import Storm, budget, closing, create_games, record, sized, soak, verify

# Not in make check: storms of calls on several server processes.
pytestmark = pytest.mark.slow


async def _storm_rounds(apis: list[Api], store: Store, clients: int, games: int, seed: int, share: float) -> None:
    """Storms of ``games`` fresh games until every game is finished, repeated under a soak."""
    rng = random.Random(seed)
    ends = time.monotonic() + budget(share)
    while True:
        storm = Storm(apis, await create_games(apis[0], games, rng), rng)
        await storm.run(clients, seconds=sized(90, 600))
        assert not storm.unexpected, "unexpected answers:\n" + "\n".join(storm.unexpected[:20])
        assert all(t.finished for t in storm.games), "the storm did not finish its games in time"
        checked = await verify(storm, store)
        assert checked.games == games
        record(storms=1)
        if not soak() or time.monotonic() > ends:
            return


async def test_storm_two_processes_one_redis(service_redis: RedisServer) -> None:
    a, b = await asyncio.gather(start_process(service_redis.url), start_process(service_redis.url))
    store = open_store(service_redis.url)
    try:
        async with closing([client(a.port), client(b.port)]) as apis:
            await _storm_rounds(list(apis), store, clients=64, games=100, seed=8, share=0.2)
    finally:
        await store.close()
        a.stop()
        b.stop()
    assert a.process.returncode == 0 and b.process.returncode == 0, a.log() + b.log()


async def test_storm_redis_cluster() -> None:
    with RedisClusterServers(3) as cluster:
        server = await start_process(cluster.url)
        store = open_store(cluster.url)
        try:
            async with closing([client(server.port)]) as apis:
                await _storm_rounds(list(apis), store, clients=16, games=sized(16, 40), seed=9,
                                    share=0.07)
        finally:
            await store.close()
            server.stop()
        assert server.process.returncode == 0, server.log()


async def test_storm_memory_store() -> None:
    async with running_server(config()) as api:
        assert api.server is not None
        await _storm_rounds([api], api.server.store, clients=16, games=sized(16, 40), seed=10, share=0.03)
