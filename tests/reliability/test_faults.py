"""Faults injected for real while a storm plays: Redis killed (SIGKILL) and restarted on its port
from its append-only file, one of two server processes killed with SIGKILL, and one terminated
with SIGTERM while calls are in flight. Calls must fail fast with UNAVAILABLE (never reach their
deadline), recover when the component returns, and every game must verify by replay afterwards."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

import grpc
import pytest

from gostop.service.stores import open_store
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer
from testkit.servers import (
    client,
    start_process,
)

from .harness import (
    DEADLINE,
    PersistentRedis,
    Storm,
    budget,
    closing,
    create_games,
    record,
    record_max,
    sized,
    soak,
    verify,
)

# Not in make check: faults injected under load, servers and Redis killed.
pytestmark = pytest.mark.slow

GAMES = 16
CLIENTS = 24


async def _with_faults(storm: Storm, inject: Callable[[int], Awaitable[None]], share: float = 0.0) -> int:
    """Run ``storm`` and call ``inject(n)`` for fault n = 0, 1, ..., each after a random pause: once,
    or under a soak until its ``share`` of the budget is spent; the number of faults injected."""
    ends = time.monotonic() + budget(share)
    runner = asyncio.ensure_future(storm.run(CLIENTS, seconds=sized(120, int(budget(share)) + 120)))
    faults = 0
    try:
        while True:
            # Strike once the storm is well under way (some commits acknowledged, most games open).
            mark = len(storm.acked) + 60 + storm.rng.randrange(60)
            while len(storm.acked) < mark and not runner.done():
                await asyncio.sleep(0.02)
            if runner.done():
                break
            await inject(faults)
            faults += 1
            if not soak() or not share or time.monotonic() > ends:
                break
        await runner
    finally:
        storm.stop = True
        await asyncio.gather(runner, return_exceptions=True)
    record(faults_injected=faults)
    return faults


def _failed_fast(storm: Storm) -> None:
    """Every failed call failed with UNAVAILABLE well before its deadline (``Storm`` lets no other
    failure through), and there were some."""
    assert storm.failed_seconds, "the fault made no call fail"
    slowest = max(storm.failed_seconds)
    record(failed_calls_under_faults=len(storm.failed_seconds))
    record_max(slowest_failed_call_seconds=round(slowest, 3))
    assert slowest < DEADLINE / 2, f"a failed call took {slowest:.2f} s"


async def test_redis_killed_and_restarted_mid_load() -> None:
    with PersistentRedis() as redis:
        server = await start_process(redis.url)
        store = open_store(redis.url)
        try:
            async with closing([client(server.port)]) as apis:
                rng = random.Random(21)
                storm = Storm(list(apis), await create_games(apis[0], sized(GAMES, 100), rng), rng, faults=True)

                async def crash_and_restart(n: int) -> None:
                    storm.phase = f"down {n}"
                    redis.crash()
                    await asyncio.sleep(1.0)
                    await asyncio.to_thread(redis.restart)
                    storm.phase = f"after {n}"

                faults = await _with_faults(storm, crash_and_restart, share=0.08)
                assert faults >= 1
                assert storm.ok_after[f"after {faults - 1}"] > 0, "the service did not recover with Redis"
                _failed_fast(storm)
                await verify(storm, store, recover_lost=True)
        finally:
            await store.close()
            server.stop()
    assert server.process.returncode == 0, server.log()


async def test_one_of_two_server_processes_killed(service_redis: RedisServer) -> None:
    ends = time.monotonic() + budget(0.08)
    seed = 22
    while True:
        await _kill_one_of_two(service_redis.url, seed)
        seed += 1
        if not soak() or time.monotonic() > ends:
            return


async def _kill_one_of_two(url: str, seed: int) -> None:
    a, b = await asyncio.gather(start_process(url), start_process(url))
    store = open_store(url)
    try:
        async with closing([client(a.port), client(b.port)]) as apis:
            rng = random.Random(seed)
            storm = Storm(list(apis), await create_games(apis[0], sized(GAMES, 60), rng), rng, faults=True)

            async def kill_a(n: int) -> None:
                a.process.kill()
                storm.phase = "after"

            assert await _with_faults(storm, kill_a) == 1
            assert storm.ok_after["after"] > 0, "the surviving process did not keep serving"
            _failed_fast(storm)
            storm.apis = [apis[1]]
            await verify(storm, store, recover_lost=True)
    finally:
        await store.close()
        a.stop()
        b.stop()
    assert b.process.returncode == 0, b.log()


async def test_sigterm_under_load_finishes_in_flight_calls() -> None:
    ends = time.monotonic() + budget(0.04)
    seed = 23
    while True:
        await _sigterm_under_load(seed)
        seed += 1
        if not soak() or time.monotonic() > ends:
            return


async def _sigterm_under_load(seed: int) -> None:
    with RedisServer() as redis:
        a, b = await asyncio.gather(start_process(redis.url), start_process(redis.url))
        store = open_store(redis.url)
        try:
            async with closing([client(a.port), client(b.port)]) as apis:
                rng = random.Random(seed)
                storm = Storm(list(apis), await create_games(apis[0], sized(GAMES, 100), rng), rng, faults=True)
                storm.trace = []
                sigterm_at = 0.0
                probes: list[asyncio.Task[pb.GetGameResponse]] = []

                async def terminate_a(n: int) -> None:
                    nonlocal sigterm_at
                    redis.pause()  # every call now waits on the store: many are in flight
                    try:
                        # Calls of our own on A, so that some are surely in flight at SIGTERM even
                        # when a loaded machine leaves the storm's clients all waiting on B.
                        probes.extend(asyncio.ensure_future(apis[0].get(t.game)) for t in storm.games[:4])
                        await asyncio.sleep(0.3)
                        sigterm_at = time.monotonic()
                        a.terminate()
                        await asyncio.sleep(0.3)
                    finally:
                        redis.resume()
                    storm.phase = "after"

                assert await _with_faults(storm, terminate_a) == 1
                answers = await asyncio.gather(*probes, return_exceptions=True)
                cut_probes = [a for a in answers if isinstance(a, BaseException)]
                assert not cut_probes, f"calls in flight at SIGTERM were cut off: {cut_probes}"
                in_flight = [(start, end, code) for i, start, end, code in storm.trace
                             if i == 0 and start < sigterm_at - 0.1 and end > sigterm_at]
                assert probes, "no call was in flight at SIGTERM"
                cut = [code.name for _, _, code in in_flight if code in (
                    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED)]
                assert not cut, f"in-flight calls were cut off at SIGTERM: {cut}"
                record(in_flight_calls_at_sigterm=len(in_flight) + len(probes))
                deadline = time.monotonic() + 10
                while a.process.poll() is None and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert a.process.returncode == 0, a.log()
                assert '"draining"' in a.log() and '"stopped"' in a.log()
                assert storm.ok_after["after"] > 0
                storm.apis = [apis[1]]
                # A graceful stop loses no reply: every commit was acknowledged to its caller.
                await verify(storm, store, recover_lost=False)
        finally:
            await store.close()
            a.stop()
            b.stop()
