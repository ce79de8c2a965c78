"""Pending bot turns: how bot workers learn that a bot seat must decide.

After every commit that leaves a bot seat to decide, the service pushes a ``BotTurn`` (game,
version, seat, bot, budget). Bot workers take turns, decide, submit the decision through the API
with the request id ``bot_request_id(turn)`` (so a turn handled twice commits once: the second
submission is answered from the first) and then acknowledge the turn.

A turn's request id is derived from (version, seat, kind), so every worker finds the same one; it
is also predictable. That is safe because request ids beginning with ``bot.`` are reserved
(``check_request_id``): a person's call may not use one, and a bot worker only the one of the
turn it submits. Nobody can commit first under the id a turn will be committed with.

Two queues honour one contract:

- ``MemoryBotQueue``: in this process, for the embedded memory store and its in-process worker.
- ``RedisBotQueue``: Redis streams read by a consumer group, one stream per shard of games
  (``gostop:bots:{s<N>}``, each its own Cluster slot, so Cluster spreads them). Delivery is
  at-least-once: a turn a worker took and never acknowledged (it died) is claimed by another worker
  once idle for ``claim_idle_ms`` (XAUTOCLAIM). Acknowledged turns are deleted, so a stream's length
  is its pending work.

The push follows the commit; it is not part of the commit's transaction (in Cluster the game's
keys and the shard's stream live in different slots). A push that fails is retried in the
background; what no retry could push (the process died between its commit and the push) is
pushed again by the next read of that game (``Games`` nudges a bot turn older than the claim time).

Turns may also be scheduled for later (``schedule``: a turn clock's deadline, docs/clock.md). A
scheduled turn waits apart from the ready turns — a heap in memory, a sorted set per shard in Redis
(``gostop:clock:{s<N>}``, in the same Cluster slot as the shard's stream) — until ``pump`` moves it,
once due, into the ready queue, from where it is an ordinary turn. Every bot worker pumps; with
Redis one script per shard moves each due turn exactly once, however many workers pump at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import heapq
import json
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import invalid
from .store_api import StoreUnavailable


@dataclass(frozen=True, slots=True)
class BotTurn:
    """One decision a bot seat owes: the seat ``seat`` of ``game_id`` at ``version``."""

    game_id: str
    version: int
    seat: int
    bot: str
    budget_ms: int
    kind: str = "act"
    """``act`` (an action of the round) or ``next_round`` (a table of bots alone deals the next round)."""
    queued_ms: int = 0
    """Wall-clock milliseconds when the turn was pushed (for its age)."""

    def fields(self) -> dict[str, str]:
        return {"game": self.game_id, "version": str(self.version), "seat": str(self.seat), "bot": self.bot,
                "budget": str(self.budget_ms), "kind": self.kind, "at": str(self.queued_ms)}

    @classmethod
    def from_fields(cls, raw: dict[Any, Any]) -> BotTurn:
        """A turn from stream fields (bytes or text keys); ``ValueError`` for anything malformed."""
        f = {(k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else str(v))
             for k, v in raw.items()}
        try:
            turn = cls(f["game"], int(f["version"]), int(f["seat"]), f["bot"], int(f["budget"]),
                       f.get("kind", "act"), int(f.get("at", "0")))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"malformed bot turn {f!r}: {exc}") from None
        if turn.kind not in ("act", "next_round") or turn.version < 1 or not 0 <= turn.seat < 8:
            raise ValueError(f"malformed bot turn {f!r}")
        return turn

    def identity(self) -> str:
        """The turn without ``queued_ms``, deterministically encoded: equal for two schedules of
        one turn (the member of a Redis clock's sorted set)."""
        fields = self.fields()
        del fields["at"]
        return json.dumps(fields, sort_keys=True, separators=(",", ":"))


RESERVED_PREFIX = "bot."
"""Request ids beginning with this are the service's own: see ``check_request_id``."""


def turn_request_id(kind: str, version: int, seat: int) -> str:
    """The request id of the turn ``seat`` owes at ``version`` (``act`` or ``next_round``): one per
    (game, version, seat, kind), so whoever commits that turn for the service (two workers handling
    it, or the service itself) commits it once, and no caller can take it first."""
    return f"{RESERVED_PREFIX}{kind}.{version}.{seat}"


def bot_request_id(turn: BotTurn) -> str:
    """The request id a worker submits ``turn``'s decision with (``turn_request_id``)."""
    return turn_request_id(turn.kind, turn.version, turn.seat)


def check_request_id(request_id: str, kind: str, expected_version: int, seat: int, bot_worker: bool) -> None:
    """Refuse (``INVALID_ARGUMENT`` / ``REQUEST_ID_RESERVED``) a request id of the reserved namespace
    that is not the caller's to use: any for a person (a seat token), and for a bot worker any but
    the one of the turn it submits (its seat, the expected version, the kind of call). A person
    who could commit under a turn's id first would make every submission of that turn a
    ``REQUEST_ID_REUSED``: the game would never move again."""
    if not request_id.startswith(RESERVED_PREFIX):
        return
    if not bot_worker:
        raise invalid("REQUEST_ID_RESERVED", f"request ids beginning with {RESERVED_PREFIX!r} are reserved for the "
                      "service's bot workers: choose another (a random UUID, say)", field="request_id")
    own = turn_request_id(kind, expected_version, seat)
    if request_id != own:
        raise invalid("REQUEST_ID_RESERVED", f"a bot worker submitting this turn may use the reserved request id "
                      f"{own!r} only (or one not beginning with {RESERVED_PREFIX!r})", field="request_id")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Taken:
    """A turn a worker holds until it acknowledges it; ``ref`` names it in the queue."""

    ref: str
    turn: BotTurn | None
    """None for an entry that could not be read (acknowledge it: it can never be played)."""


@dataclass(frozen=True, slots=True)
class Backlog:
    """Turns pushed and not yet acknowledged, and the age of the oldest (seconds; 0 when none)."""

    pending: int
    oldest_seconds: float


class BotQueue(Protocol):
    name: str

    async def push(self, turn: BotTurn) -> None:
        """Queue ``turn``; ``StoreUnavailable`` if it could not be queued."""
        ...

    async def take(self, consumer: str, count: int, block_ms: int) -> list[Taken]:
        """Up to ``count`` turns for ``consumer``: ones idle longer than the claim time first (their
        worker died), then new ones, waiting up to ``block_ms`` for one."""
        ...

    async def ack(self, taken: Sequence[Taken]) -> None:
        """The turns are done (decided, stale or unplayable): never deliver them again."""
        ...

    async def backlog(self) -> Backlog:
        """The ready and taken turns (scheduled turns not yet due are not counted: ``scheduled``)."""
        ...

    async def schedule(self, turn: BotTurn, due_ms: int) -> None:
        """Deliver ``turn`` as an ordinary turn no earlier than ``due_ms`` (Unix ms, ``now_ms``), with
        ``queued_ms`` set to ``due_ms``. A turn scheduled again while still scheduled (the same turn
        but for ``queued_ms``) is delivered once, at the earlier due time. ``StoreUnavailable`` if it
        could not be scheduled."""
        ...

    async def pump(self, now: int | None = None) -> int:
        """Move every scheduled turn due at ``now`` (default ``now_ms()``) into the ready queue; how
        many moved."""
        ...

    async def scheduled(self) -> int:
        """How many turns are scheduled and not yet moved."""
        ...

    async def close(self) -> None:
        ...


class MemoryBotQueue:
    """The queue in this process (the memory store's companion): a turn taken and not acknowledged
    within ``claim_idle_ms`` is delivered again. Scheduled turns wait in a heap; ``take`` pumps
    them itself and wakes at the earliest due time, so no one else need pump."""

    name = "memory"

    def __init__(self, claim_idle_ms: int = 15000) -> None:
        self._ready: collections.deque[tuple[str, BotTurn]] = collections.deque()
        self._taken: dict[str, tuple[float, BotTurn]] = {}
        self._seq = 0
        self._claim_idle = claim_idle_ms / 1000
        self._wakeup = asyncio.Event()
        self._heap: list[tuple[int, int, BotTurn]] = []
        """(due_ms, seq, turn); an entry no longer in ``_due`` with that (due, seq) is stale."""
        self._due: dict[BotTurn, tuple[int, int]] = {}
        """Each scheduled turn (``queued_ms`` 0) -> its current (due_ms, seq)."""

    async def push(self, turn: BotTurn) -> None:
        self._seq += 1
        self._ready.append((str(self._seq), turn))
        self._wakeup.set()

    async def schedule(self, turn: BotTurn, due_ms: int) -> None:
        key = _unqueued(turn)
        current = self._due.get(key)
        if current is not None and current[0] <= due_ms:
            return
        self._seq += 1
        self._due[key] = (due_ms, self._seq)
        heapq.heappush(self._heap, (due_ms, self._seq, key))
        self._wakeup.set()  # a blocked take recomputes when to wake

    async def pump(self, now: int | None = None) -> int:
        now = now_ms() if now is None else now
        moved = 0
        while self._heap and self._heap[0][0] <= now:
            due, seq, key = heapq.heappop(self._heap)
            if self._due.get(key) != (due, seq):
                continue  # superseded by an earlier schedule of the same turn
            del self._due[key]
            self._seq += 1
            self._ready.append((str(self._seq), BotTurn(key.game_id, key.version, key.seat, key.bot,
                                                        key.budget_ms, key.kind, due)))
            moved += 1
        if moved:
            self._wakeup.set()
        return moved

    async def scheduled(self) -> int:
        return len(self._due)

    def _next_due_in(self) -> float | None:
        """Seconds until the earliest scheduled turn is due (0 if it is), None if none is scheduled."""
        while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][:2]:
            heapq.heappop(self._heap)
        return max(0.0, (self._heap[0][0] - now_ms()) / 1000) if self._heap else None

    async def take(self, consumer: str, count: int, block_ms: int) -> list[Taken]:
        deadline = time.monotonic() + block_ms / 1000
        while True:
            await self.pump()
            now = time.monotonic()
            out: list[Taken] = []
            for ref, (since, turn) in list(self._taken.items()):
                if len(out) < count and now - since >= self._claim_idle:
                    self._taken[ref] = (now, turn)
                    out.append(Taken(ref, turn))
            while self._ready and len(out) < count:
                ref, turn = self._ready.popleft()
                self._taken[ref] = (now, turn)
                out.append(Taken(ref, turn))
            if out or now >= deadline:
                return out
            self._wakeup.clear()
            wait = min(deadline - now, self._claim_idle)
            due_in = self._next_due_in()
            if due_in is not None:
                wait = min(wait, due_in + 0.001)  # wall ms round down: wake just past the due time
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wakeup.wait()

    async def ack(self, taken: Sequence[Taken]) -> None:
        for item in taken:
            self._taken.pop(item.ref, None)

    async def backlog(self) -> Backlog:
        turns = [t for _, t in self._ready] + [t for _, t in self._taken.values()]
        if not turns:
            return Backlog(0, 0.0)
        return Backlog(len(turns), max(0.0, (now_ms() - min(t.queued_ms for t in turns)) / 1000))

    async def close(self) -> None:
        self._wakeup.set()


def _unqueued(turn: BotTurn) -> BotTurn:
    """``turn`` with ``queued_ms`` 0: what identifies a scheduled turn."""
    return BotTurn(turn.game_id, turn.version, turn.seat, turn.bot, turn.budget_ms, turn.kind)


GROUP = "gostop-bot-workers"
CLUSTER_BLOCK_MS = 50
"""A blocking read's length on one shard of a Cluster (the reads go round the shards)."""
MAX_STREAM = 1_000_000
"""Approximate cap of one shard's stream (MAXLEN ~): a bound on a backlog nobody works off."""


PUMP_BATCH = 200
"""Scheduled turns one pump script moves at most (a shard with more runs it again)."""
PUMP_LUA = """
-- KEYS: pairs of a shard's clock (sorted set: member a turn's identity, score its due ms) and the
-- shard's stream. ARGV: now_ms, batch, maxlen. Moves up to batch turns due at now_ms from each
-- clock into its stream (their "at" is their due time); returns how many moved, per pair. A member
-- that is not a turn is dropped.
local counts = {}
for k = 1, #KEYS, 2 do
  local due = redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
  local moved = 0
  for i = 1, #due, 2 do
    local ok, f = pcall(cjson.decode, due[i])
    if ok and type(f) == 'table' and type(f.game) == 'string' and type(f.version) == 'string'
        and type(f.seat) == 'string' and type(f.bot) == 'string' and type(f.budget) == 'string'
        and type(f.kind) == 'string' then
      redis.call('XADD', KEYS[k + 1], 'MAXLEN', '~', ARGV[3], '*', 'game', f.game, 'version', f.version,
        'seat', f.seat, 'bot', f.bot, 'budget', f.budget, 'kind', f.kind,
        'at', string.format('%d', tonumber(due[i + 1])))
      moved = moved + 1
    end
    redis.call('ZREM', KEYS[k], due[i])
  end
  counts[#counts + 1] = moved
end
return counts
"""
PUMP_SHA = hashlib.sha1(PUMP_LUA.encode()).hexdigest()


def shard_of(game_id: str, shards: int) -> int:
    """The shard of a game: CRC-32 of its id (the same on every server and worker)."""
    return zlib.crc32(game_id.encode()) % shards


class RedisBotQueue:
    """Turns in Redis streams, one per shard, read by the consumer group ``gostop-bot-workers``;
    scheduled turns in a sorted set per shard (``clock_keys``), moved by ``pump``.

    ``execute(*command, idempotent=..., blocking=...)`` runs one Redis command with the store's
    error mapping (``RedisStore.execute``): the pump script goes through it too (EVALSHA, then EVAL
    when the server does not know the script), routed in Cluster by its keys."""

    name = "redis"

    def __init__(self, store: Any, shards: int = 8, claim_idle_ms: int = 15000, prefix: str = "gostop") -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self._store = store
        self.keys = [f"{prefix}:bots:{{s{i}}}" for i in range(shards)]
        self.clock_keys = [f"{prefix}:clock:{{s{i}}}" for i in range(shards)]
        """Each shard's scheduled turns: the same hash tag as its stream (one Cluster slot)."""
        self._claim_idle_ms = claim_idle_ms
        self._grouped = False
        self._next = 0
        """The shard a worker's next blocking read starts from (round robin)."""
        self._cursor: dict[str, bytes | str] = {}
        """XAUTOCLAIM cursor per stream."""
        self._next_claim = 0.0
        """When (monotonic) to look for idle turns again."""

    async def _groups(self) -> None:
        if self._grouped:
            return
        for key in self.keys:
            try:
                await self._store.execute("XGROUP", "CREATE", key, GROUP, "0", "MKSTREAM", idempotent=True)
            except StoreUnavailable as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._grouped = True

    async def push(self, turn: BotTurn) -> None:
        key = self.keys[shard_of(turn.game_id, len(self.keys))]
        args: list[str] = []
        for k, v in turn.fields().items():
            args += [k, v]
        await self._store.execute("XADD", key, "MAXLEN", "~", str(MAX_STREAM), "*", *args, idempotent=False)

    async def schedule(self, turn: BotTurn, due_ms: int) -> None:
        key = self.clock_keys[shard_of(turn.game_id, len(self.keys))]
        # LT: a turn scheduled again keeps the earlier due time. Idempotent: the same ZADD twice is one.
        await self._store.execute("ZADD", key, "LT", str(due_ms), turn.identity(), idempotent=True)

    async def pump(self, now: int | None = None) -> int:
        """One script run for every shard on one server; on a Cluster, where the shards live in
        different slots, one run per shard, all at once. A shard that moved a whole batch may have
        more: it is run again."""
        now = now_ms() if now is None else now
        shards = list(zip(self.clock_keys, self.keys, strict=True))
        moved = 0
        while shards:
            if getattr(self._store, "cluster", False):
                counts = [c for batch in await asyncio.gather(*(self._pump_shards([s], now) for s in shards))
                          for c in batch]
            else:
                counts = await self._pump_shards(shards, now)
            moved += sum(counts)
            shards = [shard for shard, count in zip(shards, counts, strict=True) if count >= PUMP_BATCH]
        return moved

    async def _pump_shards(self, shards: list[tuple[str, str]], now: int) -> list[int]:
        """One run of the pump script on ``shards`` (clock, stream): how many moved on each. Running
        it again after a lost reply is safe (it moves only what is still scheduled), so it is
        retried like a read."""
        keys = [key for shard in shards for key in shard]
        args = (str(len(keys)), *keys, str(now), str(PUMP_BATCH), str(MAX_STREAM))
        try:
            reply = await self._store.execute("EVALSHA", PUMP_SHA, *args, idempotent=True)
        except StoreUnavailable as exc:
            if not any(sign in str(exc) for sign in ("NOSCRIPT", "NoScriptError")):  # as a reply, or redis-py's
                raise
            reply = await self._store.execute("EVAL", PUMP_LUA, *args, idempotent=True)
        counts = [int(count) for count in reply]
        if len(counts) != len(shards):
            raise StoreUnavailable(f"the pump script answered {len(counts)} counts for {len(shards)} shards")
        return counts

    async def scheduled(self) -> int:
        total = 0
        for key in self.clock_keys:
            total += int(await self._store.execute("ZCARD", key, idempotent=True) or 0)
        return total

    async def take(self, consumer: str, count: int, block_ms: int) -> list[Taken]:
        await self._groups()
        out: list[Taken] = []
        now = time.monotonic()
        if now >= self._next_claim:  # turns a dead worker left, first (looked for now and then)
            self._next_claim = now + max(0.5, self._claim_idle_ms / 4000)
            out = await self._claim(consumer, count)
            if len(out) >= count:
                self._next_claim = now  # there may be more: look again at the next take
        if out:
            return out
        block = min(max(block_ms, 0), self._store.max_block_ms)
        if not getattr(self._store, "cluster", False):
            # One server: one blocking read over every shard's stream at once.
            return await self._read(self.keys, consumer, count, block or None)
        # Cluster: the shards live in different slots, so one stream per read: a look at every
        # shard, then a short blocking read on the next one in turn (a turn waits at most about
        # ``shards`` short blocks for an idle worker to see it).
        for key in self._order():
            out += await self._read([key], consumer, count - len(out), None)
            if len(out) >= count:
                return out
        if out or block <= 0:
            return out
        key = self.keys[self._next % len(self.keys)]
        self._next += 1
        return await self._read([key], consumer, count, max(1, min(block, CLUSTER_BLOCK_MS)))

    async def _claim(self, consumer: str, count: int) -> list[Taken]:
        """Up to ``count`` turns idle longer than the claim time, taken over for ``consumer``."""
        out: list[Taken] = []
        for key in self.keys:
            if len(out) >= count:
                break
            reply = await self._store.execute(
                "XAUTOCLAIM", key, GROUP, consumer, str(self._claim_idle_ms), self._cursor.get(key, "0-0"),
                "COUNT", str(count - len(out)), idempotent=True)
            self._cursor[key] = reply[0]
            out += [self._taken(key, entry_id, fields) for entry_id, fields in reply[1] if fields is not None]
        return out

    def _order(self) -> list[str]:
        start = self._next % len(self.keys)
        return self.keys[start:] + self.keys[:start]

    async def _read(self, keys: list[str], consumer: str, count: int, block_ms: int | None) -> list[Taken]:
        command: list[str] = ["XREADGROUP", "GROUP", GROUP, consumer, "COUNT", str(count)]
        if block_ms is not None:
            command += ["BLOCK", str(block_ms)]
        reply = await self._store.execute(*command, "STREAMS", *keys, *(">" for _ in keys), idempotent=False,
                                          blocking=block_ms is not None)
        if not reply:
            return []
        per_key: list[tuple[Any, Any]] = list(reply.items()) if isinstance(reply, dict) else [
            (item[0], item[1]) for item in reply]
        out: list[Taken] = []
        for key, entries in per_key:
            name = key.decode() if isinstance(key, bytes) else str(key)
            if entries and isinstance(entries[0], list) and entries[0] and isinstance(entries[0][0], list):
                entries = entries[0]  # RESP3 nesting
            out += [self._taken(name, entry_id, fields) for entry_id, fields in entries or []]
        return out

    @staticmethod
    def _taken(key: str, entry_id: Any, fields: Any) -> Taken:
        entry = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
        raw = fields if isinstance(fields, dict) else dict(zip(fields[::2], fields[1::2], strict=True))
        try:
            turn: BotTurn | None = BotTurn.from_fields(raw)
        except ValueError:
            turn = None
        return Taken(f"{key}\n{entry}", turn)

    async def ack(self, taken: Sequence[Taken]) -> None:
        by_key: dict[str, list[str]] = {}
        for item in taken:
            key, _, entry = item.ref.partition("\n")
            by_key.setdefault(key, []).append(entry)

        async def done(key: str, entries: list[str]) -> None:
            await self._store.execute("XACK", key, GROUP, *entries, idempotent=True)
            await self._store.execute("XDEL", key, *entries, idempotent=True)

        await asyncio.gather(*(done(key, entries) for key, entries in by_key.items()))

    async def backlog(self) -> Backlog:
        pending, oldest = 0, None
        for key in self.keys:
            pending += int(await self._store.execute("XLEN", key, idempotent=True) or 0)
            first = await self._store.execute("XRANGE", key, "-", "+", "COUNT", "1", idempotent=True)
            if first:
                entry_id = first[0][0]
                ms = int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).split("-")[0])
                oldest = ms if oldest is None else min(oldest, ms)
        return Backlog(pending, 0.0 if oldest is None else max(0.0, (now_ms() - oldest) / 1000))

    async def close(self) -> None:
        return None
