"""The bot queue's deadline schedule (``BotQueue.schedule`` / ``pump``), the ground a turn clock
stands on (docs/clock.md): on the memory queue and on real redis-servers (standalone, and a
3-master Cluster), a scheduled turn is taken at its due time and never before, once however often
it was scheduled and however many queues pump at once, and is claimed again like any turn when its
taker dies. Then a bot worker's side: its pump loop, and a turn the service finds early
(``TurnEarly``), tried again once its deadline has passed.
"""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import grpc
import pytest
from prometheus_client import CollectorRegistry

from gostop.client import PermissionDenied
from gostop.service.bot_queue import (
    PUMP_BATCH,
    BotQueue,
    BotTurn,
    MemoryBotQueue,
    RedisBotQueue,
    Taken,
    now_ms,
    shard_of,
)
from gostop.service.errors import Code, ServiceError
from gostop.service.programs.botworker import BotWorker, ClientApi, Decider, DomainApi, TurnEarly
from gostop.service.redis_store import RedisStore
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisClusterServers, RedisServer, free_port

SHARDS = 8
BACKENDS = ["memory", "redis", pytest.param("cluster", marks=pytest.mark.slow)]


@dataclass
class Queues:
    """Makes queue objects on one backing, as workers have them: ``await queues(claim_idle_ms)``."""

    backend: str
    make: Callable[[int], Awaitable[BotQueue]]

    async def __call__(self, claim_idle_ms: int) -> BotQueue:
        return await self.make(claim_idle_ms)


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServers]:
    """A 3-master Cluster for the session (its tests skip if it cannot be started)."""
    cluster = RedisClusterServers(masters=3)
    try:
        cluster.start(timeout=15)
    except (RuntimeError, OSError) as error:
        cluster.stop()
        pytest.skip(f"cannot start a Redis Cluster: {error}")
    yield cluster
    cluster.stop()


@pytest.fixture(params=BACKENDS)
async def queues(request: pytest.FixtureRequest) -> AsyncIterator[Queues]:
    """Queue objects sharing one backing: the one memory queue, or one Redis store and queue per
    call over a fresh key prefix (as two workers would have)."""
    backend: str = request.param
    memory: MemoryBotQueue | None = None
    stores: list[RedisStore] = []
    prefix = f"t{uuid.uuid4().hex[:12]}"

    async def make(claim_idle_ms: int) -> BotQueue:
        nonlocal memory
        if backend == "memory":
            memory = memory or MemoryBotQueue(claim_idle_ms=claim_idle_ms)
            return memory
        server: RedisServer | RedisClusterServers = request.getfixturevalue(
            "service_redis" if backend == "redis" else "redis_cluster")
        store = RedisStore.from_url(server.url, prefix=prefix)
        stores.append(store)
        return RedisBotQueue(store, SHARDS, claim_idle_ms=claim_idle_ms, prefix=prefix)

    try:
        yield Queues(backend, make)
    finally:
        for store in stores:
            await store.close()


def turn(game_id: str = "g1", version: int = 3, seat: int = 1) -> BotTurn:
    return BotTurn(game_id, version, seat, "greedy", 150, "act")


def plain(item: Taken) -> BotTurn:
    """The turn of a taken entry (which must be readable), without its queue time."""
    assert item.turn is not None
    t = item.turn
    return BotTurn(t.game_id, t.version, t.seat, t.bot, t.budget_ms, t.kind)


async def take_all(queue: BotQueue, consumer: str, limit: float = 10.0) -> list[Taken]:
    """Everything ``consumer`` can take now: takes until one comes back empty."""
    out: list[Taken] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        batch = await queue.take(consumer, 100, 0)
        if not batch:
            return out
        out += batch
    raise AssertionError("the queue did not run dry")


async def test_a_scheduled_turn_is_not_taken_before_its_due_time(queues: Queues) -> None:
    queue = await queues(60_000)
    due = now_ms() + 60_000
    await queue.schedule(turn(), due)
    assert await queue.scheduled() == 1
    assert await queue.pump(due - 1) == 0
    assert await queue.take("w1", 10, 0) == []
    assert (await queue.backlog()).pending == 0, "a turn not yet due is no backlog"

    assert await queue.pump(due) == 1
    assert await queue.scheduled() == 0
    taken = await queue.take("w1", 10, 0)
    assert [plain(t) for t in taken] == [turn()]
    assert taken[0].turn is not None and taken[0].turn.queued_ms == due, "queued at its deadline"
    assert (await queue.backlog()).pending == 1
    await queue.ack(taken)
    assert (await queue.backlog()).pending == 0


async def test_a_blocked_take_returns_a_turn_that_falls_due_while_it_waits(queues: Queues) -> None:
    """Memory: the take wakes itself at the due time. Redis: the pump's XADD wakes the blocked read."""
    queue = await queues(60_000)
    pumper = await queues(60_000)
    due = now_ms() + 300
    await queue.schedule(turn(), due)

    async def take() -> list[Taken]:
        while True:
            taken = await queue.take("w1", 1, 5000)
            if taken or queues.backend != "cluster":  # Cluster: short blocks on one shard at a time
                return taken

    async def pump_until_moved() -> None:
        while not await pumper.pump():
            await asyncio.sleep(0.02)

    taking = asyncio.ensure_future(take())
    if queues.backend != "memory":
        await pump_until_moved()
    taken = await asyncio.wait_for(taking, 10)
    assert now_ms() >= due
    assert [plain(t) for t in taken] == [turn()]


async def test_a_turn_scheduled_twice_is_taken_once_at_the_earlier_time(queues: Queues) -> None:
    queue = await queues(60_000)
    due = now_ms() - 1000
    await queue.schedule(turn(), due + 10)
    await queue.schedule(BotTurn("g1", 3, 1, "greedy", 150, "act", queued_ms=12345), due)
    await queue.schedule(turn(), due + 20)
    await queue.schedule(turn(seat=0), due)  # another seat: another turn
    assert await queue.scheduled() == 2
    assert await queue.pump() == 2
    taken = await take_all(queue, "w1")
    assert sorted((t.turn.seat, t.turn.queued_ms) for t in taken if t.turn is not None) == [(0, due), (1, due)]
    assert await queue.pump() == 0
    assert await queue.take("w1", 10, 0) == []


async def test_queues_pumping_at_once_move_each_turn_once(queues: Queues) -> None:
    first, second = await queues(60_000), await queues(60_000)
    turns = [turn(f"game-{i}", version=1 + i % 5, seat=i % 4) for i in range(2 * PUMP_BATCH + 50)]
    due = now_ms() - 1
    for t in turns:
        await first.schedule(t, due)
    moved = await asyncio.gather(*(q.pump() for q in (first, second, first, second)))
    assert sum(moved) == len(turns)
    taken = await take_all(first, "w1") + await take_all(second, "w2")
    counts = collections.Counter(plain(t) for t in taken)
    assert counts == collections.Counter(turns), "every turn taken exactly once"


async def test_a_turn_its_taker_never_acknowledges_is_claimed_by_another(queues: Queues) -> None:
    # The claim time is long enough that a loaded machine's pause between the two takes below
    # does not reach it (at 300 ms a Cluster under a full test run sometimes did); the second
    # queue has met its store (a Cluster's topology) before the first take.
    first, second = await queues(1500), await queues(1500)
    await second.backlog()
    await first.schedule(turn(), now_ms() - 1)
    assert await first.pump() == 1
    held = await first.take("dead-worker", 1, 0)
    assert [plain(t) for t in held] == [turn()]
    assert await second.take("w2", 1, 0) == [], "not before the claim time"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    claimed: list[Taken] = []
    while not claimed and loop.time() < deadline:
        claimed = await second.take("w2", 1, 200)
    assert [plain(t) for t in claimed] == [turn()]
    await second.ack(claimed)
    assert (await second.backlog()).pending == 0


@pytest.mark.slow
async def test_on_a_cluster_turns_of_every_shard_move_and_are_taken(redis_cluster: RedisClusterServers) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    stores = [RedisStore.from_url(redis_cluster.url, prefix=prefix) for _ in range(2)]
    try:
        first, second = (RedisBotQueue(s, SHARDS, prefix=prefix) for s in stores)
        turns = [turn(f"cluster-{i}", version=2) for i in range(64)]
        assert {shard_of(t.game_id, SHARDS) for t in turns} == set(range(SHARDS))
        due = now_ms() - 1
        for t in turns:
            await first.schedule(t, due)
        assert await second.scheduled() == len(turns)
        assert sum(await asyncio.gather(first.pump(), second.pump())) == len(turns)
        taken = await take_all(second, "w2") + await take_all(first, "w1")
        assert collections.Counter(plain(t) for t in taken) == collections.Counter(turns)
        assert {t.ref.partition("\n")[0] for t in taken} == set(first.keys), "every shard's stream"
    finally:
        for store in stores:
            await store.close()


# -- the worker --


class RecordingApi:
    """A ``BotApi`` that answers every read with a view at the turn's version and records the
    deals of the next round it is asked for (Unix ms, request id); the first ``early`` of them are
    refused as not yet due, until ``deadline_ms``."""

    def __init__(self, version: int, early: int = 0, deadline_ms: int = 0) -> None:
        self.version = version
        self.early = early
        self.deadline_ms = deadline_ms
        self.deals: list[tuple[int, str]] = []
        self.dealt = asyncio.Event()

    async def get(self, game_id: str, seat: int) -> pb.GameView:
        return pb.GameView(game_id=game_id, version=self.version)

    async def submit(self, game_id: str, seat: int, version: int, action: int, request_id: str) -> None:
        raise AssertionError("a next_round turn submits no action")

    async def next_round(self, game_id: str, seat: int, version: int, request_id: str) -> None:
        if self.early > 0:
            self.early -= 1
            raise TurnEarly(self.deadline_ms)
        self.deals.append((now_ms(), request_id))
        self.dealt.set()


def deal_turn() -> BotTurn:
    return BotTurn("g-deal", 7, 0, "greedy", 150, "next_round")


async def test_a_worker_pumps_and_plays_a_scheduled_turn_at_its_due_time(queues: Queues) -> None:
    queue = await queues(60_000)
    api = RecordingApi(version=7)
    worker = BotWorker(queue, api, Decider(), registry=CollectorRegistry(), pump_ms=20)
    due = now_ms() + 300
    await queue.schedule(deal_turn(), due)
    await worker.start()
    try:
        await asyncio.wait_for(api.dealt.wait(), 10)
    finally:
        await worker.stop()
    assert [rid for _, rid in api.deals] == ["bot.next_round.7.0"]
    assert api.deals[0][0] >= due
    # (Only this worker pumps this key prefix, so its pump moved the turn; its ``pumped`` count may
    # still be unset here: the turn can be played before the pump's own reply is read.)
    assert await queue.scheduled() == 0


async def test_a_worker_whose_queue_is_down_keeps_pumping() -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{free_port()}", connect_timeout=0.2, read_timeout=0.2)
    try:
        worker = BotWorker(RedisBotQueue(store, SHARDS), RecordingApi(1), Decider(), registry=CollectorRegistry(),
                           pump_ms=10)
        await worker.start()
        await asyncio.sleep(0.5)
        assert all(not task.done() for task in worker._tasks), "no task ended on the queue's errors"
        await worker.stop()
    finally:
        await store.close()


async def test_a_turn_found_early_is_tried_again_past_its_deadline() -> None:
    deadline = now_ms() + 200
    api = RecordingApi(version=7, early=1, deadline_ms=deadline)
    worker = BotWorker(MemoryBotQueue(), api, Decider(), registry=CollectorRegistry())
    await worker.play(deal_turn())
    assert len(api.deals) == 1 and api.deals[0][0] >= deadline


async def test_a_turn_found_early_twice_or_far_ahead_fails() -> None:
    for early, deadline in ((2, now_ms() + 50), (1, now_ms() + 60_000)):
        api = RecordingApi(version=7, early=early, deadline_ms=deadline)
        worker = BotWorker(MemoryBotQueue(), api, Decider(), registry=CollectorRegistry())
        with pytest.raises(TurnEarly) as raised:
            await worker.play(deal_turn())
        assert raised.value.deadline_ms == deadline and api.deals == []


async def test_both_apis_map_the_refusal_of_an_early_turn() -> None:
    async def refuse_domain() -> None:
        raise ServiceError(Code.PERMISSION_DENIED, "NOT_A_BOT_SEAT", "not yet", {"deadline_ms": "1234"})

    async def refuse_client() -> None:
        raise PermissionDenied(grpc.StatusCode.PERMISSION_DENIED, "NOT_A_BOT_SEAT", "not yet",
                               {"deadline_ms": "5678"})

    async def refuse_bot_seat() -> None:  # a person's seat with no deadline: a plain refusal
        raise ServiceError(Code.PERMISSION_DENIED, "NOT_A_BOT_SEAT", "not a bot seat")

    domain = DomainApi(games=None)
    with pytest.raises(TurnEarly) as raised:
        await domain._call(refuse_domain)
    assert raised.value.deadline_ms == 1234
    with pytest.raises(ServiceError):
        await domain._call(refuse_bot_seat)
    client = ClientApi(f"127.0.0.1:{free_port()}", "bot-key")
    try:
        with pytest.raises(TurnEarly) as raised:
            await client._call(refuse_client)
        assert raised.value.deadline_ms == 5678
    finally:
        await client.close()
