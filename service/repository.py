"""The games repository: a game's state at its latest version, from this process's cache or the
store, and the policy of what a commit writes (a snapshot now and then, the log entry always) and
how long the store keeps a game. The design is in docs/service.md#stores."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from typing import Any, NamedTuple, TypeVar

import orjson

from gostop.engine import (
    Action,
    EngineError,
    Match,
    action_from_id,
    action_id,
    match_apply,
    match_from_bytes,
    next_round,
)
from gostop.engine.events import Event
from gostop.engine.serialize import encode, from_data
from gostop.engine.table_events import TABLE_EVENT_TYPES, TableEvent

from . import compact
from .clock import Table
from .config import Config
from .errors import not_found
from .metrics import Metrics
from .plays import RoundPlays
from .store_api import LogEntry, Store, StoreCorrupt, StoreUnavailable

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

SNAPSHOT_EVERY = Config().snapshot_every
"""The default of ``GOSTOP_SNAPSHOT_EVERY``: a commit writes the game's snapshot when its version is
a multiple of it (and whenever a round ends, and at creation); a load replays at most this many
minus one log entries after the snapshot."""


def bounded_put(cache: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    """Keep ``value`` as the most recent entry of an LRU ``cache`` of at most ``limit`` entries
    (nothing is kept when ``limit`` is 0)."""
    if limit <= 0:
        return
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > limit:
        cache.popitem(last=False)


def pack_entry(version: int, kind: str, seat: int, action: Action | None, request_id: str,
               events: Sequence[Event | TableEvent], finished: bool, **extra: Any) -> bytes:
    """A log entry: the step of one version (``create``, ``action`` or ``next_round``), its events,
    and what the first entry alone keeps (the rounds, the bot seats, the deal's source)."""
    doc = {
        "v": version, "kind": kind, "seat": seat,
        "action": action_id(action) if action is not None else None,
        "rid": request_id, "finished": finished, "events": events, **extra,
    }
    return compact.pack("entry", encode(doc))


def read_entry(raw: bytes) -> dict[str, Any]:
    """A log entry's fields, its events decoded (``StoreCorrupt`` if it cannot be read)."""
    try:
        doc = orjson.loads(compact.unpack("entry", raw))
        doc["events"] = [from_data(e) for e in doc["events"]]
    except Exception as exc:
        raise StoreCorrupt(f"cannot decode a log entry: {exc}") from exc
    return doc  # type: ignore[no-any-return]


TABLE_TAGS = frozenset(t.__name__ for t in TABLE_EVENT_TYPES)
"""The type tags of the table's events in a logged entry: logged beside a step's events, not made by it."""


def replay_step(match: Match, item: LogEntry) -> Match:
    """The state after the step logged in ``item`` from ``match``, the state before it."""
    return replay(match, item)[0]


def replay(match: Match, item: LogEntry) -> tuple[Match, Table | None]:
    """The state after the step logged in ``item`` from ``match``, the state before it, and the
    table's clock after it (None for a game without a clock). A step of the table alone (auto-play
    turned on or off) leaves the state as it was.

    ``StoreCorrupt`` for an entry that is not such a step of this game at its version, or whose
    step gives other events than it logged: the state it would rebuild is not the one whose events
    the seats were sent (the entry is damaged, or the rules changed while the game was in play)."""
    try:
        doc = orjson.loads(compact.unpack("entry", item.entry))
        kind, version, seat, action, logged = doc["kind"], doc["v"], doc["seat"], doc["action"], doc["events"]
        table = Table.from_doc(doc["t"]) if "t" in doc else None
    except Exception as exc:
        raise StoreCorrupt(f"cannot decode the log entry of version {item.version}: {exc}") from exc
    if version != item.version:
        raise StoreCorrupt(f"the log entry of version {item.version} says it is of version {version!r}")
    if kind == "table":
        return match, table
    try:
        if kind == "action" and type(seat) is int:
            match, events = match_apply(match, action_from_id(action), seat)
        elif kind == "next_round":
            match, events = next_round(match)
        else:
            raise StoreCorrupt(f"the log entry of version {item.version} is no step ({kind!r}, seat {seat!r})")
    except EngineError as exc:
        raise StoreCorrupt(f"the log entry of version {item.version} does not replay: {exc}") from exc
    if table is not None:
        logged = [e for e in logged if e.get("@") not in TABLE_TAGS]
    if orjson.loads(encode(events)) != logged:
        raise StoreCorrupt(f"the step logged at version {item.version} replays with other events than it logged")
    return match, table


def table_of_entry(raw: bytes) -> Table | None:
    """The table's clock after a logged step (None for a game without a clock)."""
    try:
        doc = orjson.loads(compact.unpack("entry", raw))
        return Table.from_doc(doc["t"]) if "t" in doc else None
    except Exception as exc:
        raise StoreCorrupt(f"cannot decode a log entry: {exc}") from exc


class Loaded(NamedTuple):
    """A game at a version; ``cached`` when it is this process's copy, not read from the store now;
    ``table``: its clock at that version when known (``Repository.table``)."""

    version: int
    match: Match
    plays: RoundPlays | None
    cached: bool = False
    table: Table | None = None


class Repository:
    """The games of one store, with this process's cache of each recent game's last version."""

    def __init__(self, store: Store, config: Config, metrics: Metrics) -> None:
        self.store = store
        self.config = config
        self.metrics = metrics
        self.snapshot_every = config.snapshot_every
        """A snapshot at every this many versions (``GOSTOP_SNAPSHOT_EVERY``; a test may change it)."""
        self.cache: OrderedDict[str, Loaded] = OrderedDict()
        """The last committed (or read) version of each recent game, with its round's plays
        encoded once that version was viewed or reached by a commit (``service.plays``)."""
        metrics.games_cached.set_function(lambda: len(self.cache))
        self._latency: dict[str, Any] = {}
        """The labelled store-latency histogram per operation (a labels() lookup per call is costly)."""

    async def timed(self, op: str, call: Awaitable[T]) -> T:
        """``call``'s result, its latency and its store failure counted under ``op``."""
        start = time.perf_counter()
        try:
            return await call
        except (StoreUnavailable, StoreCorrupt):
            self.metrics.store_errors.labels(self.store.name, op).inc()
            raise
        finally:
            histogram = self._latency.get(op)
            if histogram is None:
                histogram = self._latency[op] = self.metrics.store_latency.labels(self.store.name, op)
            histogram.observe(time.perf_counter() - start)

    def remember(self, game_id: str, version: int, match: Match, plays: RoundPlays | None = None,
                 table: Table | None = None) -> None:
        """Keep this process's copy of the game at ``version``; a finished match is dropped instead
        (nothing more is played in it, and a night's thousands of finished games would fill the
        cache to its bound, and every garbage collection with them)."""
        if match.finished:
            self.cache.pop(game_id, None)
            return
        bounded_put(self.cache, game_id, Loaded(version, match, plays, True, table), self.config.snapshot_cache)

    async def at(self, game_id: str, version: int, entries: list[LogEntry]) -> Loaded | None:
        """The game at ``version``, or None when it has moved on: this process's copy at that
        version, or its copy of an earlier version brought to it by replaying ``entries`` (log
        entries just read, ending at ``version``), or else the store's."""
        hit = self.cache.get(game_id)
        if hit is not None and hit.version == version:
            return hit
        if hit is not None and hit.version < version:
            steps = [item for item in entries if item.version > hit.version]
            if steps and steps[0].version == hit.version + 1 and steps[-1].version == version:
                match, table = hit.match, hit.table
                for item in steps:
                    match, table = replay(match, item)
                self.remember(game_id, version, match, table=table)
                return Loaded(version, match, None, True, table)
        loaded = await self.load(game_id)
        return loaded if loaded.version == version else None

    async def table(self, game_id: str, loaded: Loaded) -> Table | None:
        """The game's clock at ``loaded``'s version (None without one): known with it, or read from
        the log entry of that version."""
        if loaded.table is not None:
            return loaded.table
        entries = await self.timed("read_log", self.store.read_log(game_id, loaded.version - 1, 1))
        if not entries or entries[0].version != loaded.version:
            return None
        table = table_of_entry(entries[0].entry)
        hit = self.cache.get(game_id)
        if table is not None and hit is not None and hit.version == loaded.version:
            self.cache[game_id] = hit._replace(table=table)
        return table

    def forget(self, game_id: str) -> None:
        self.cache.pop(game_id, None)

    async def load(self, game_id: str, expected: int | None = None) -> Loaded:
        """The game at its latest version; the cached copy when it is at ``expected`` (or when the
        store is at the cached version). Otherwise the store's snapshot, brought from its own
        version to the game's by replaying the log entries in between."""
        if expected is not None:
            hit = self.cache.get(game_id)
            if hit is not None and hit.version == expected:
                return hit
        snap = await self.timed("load", self.store.load(game_id))
        if snap is None:
            self.cache.pop(game_id, None)
            raise not_found(game_id)
        hit = self.cache.get(game_id)
        if hit is not None and hit.version == snap.version:
            return hit._replace(cached=False)  # a version names one snapshot: no need to decode it again
        try:
            match = match_from_bytes(compact.unpack("snap", snap.blob))
        except (EngineError, compact.CompactError) as exc:
            raise StoreCorrupt(str(exc)) from exc
        table = None
        if snap.at is not None:
            match, table = await self._catch_up(game_id, match, snap.at, snap.version)
        self.remember(game_id, snap.version, match, table=table)
        return Loaded(snap.version, match, None, table=table)

    async def version(self, game_id: str) -> int | None:
        """The game's version in the store now (None: no such game)."""
        snap = await self.timed("load", self.store.load(game_id))
        return None if snap is None else snap.version

    async def _catch_up(self, game_id: str, match: Match, at: int, version: int) -> tuple[Match, Table | None]:
        """The state at ``version`` from ``match``, the snapshot at ``at``: the log entries of
        versions ``at + 1`` to ``version`` replayed (entries are never rewritten, so reading them
        after the snapshot is as good as reading them with it)."""
        entries = await self.timed("read_log", self.store.read_log(game_id, at, version - at))
        if [item.version for item in entries] != list(range(at + 1, version + 1)):
            if await self.timed("load", self.store.load(game_id)) is None:
                raise not_found(game_id)  # expired since the snapshot was read
            raise StoreCorrupt(f"the log lacks entries between the snapshot (version {at}) and version {version}")
        table = None
        for item in entries:
            match, table = replay(match, item)
        return match, table

    async def first_entry(self, game_id: str) -> dict[str, Any] | None:
        """The game's first log entry (its creation), None if there is none."""
        first = await self.timed("read_log", self.store.read_log(game_id, 0, 1))
        return read_entry(first[0].entry) if first else None

    def snapshot_due(self, version: int, match: Match) -> bool:
        """Whether the commit of ``version``, reaching ``match``, writes a snapshot: at every
        ``snapshot_every``-th version, and when a round ends (whatever came before it is then
        never replayed again; a finished match is always over)."""
        return version % self.snapshot_every == 0 or match.round.over

    def ttl_ms(self, match: Match) -> int:
        """How long the store keeps the game after this commit."""
        seconds = self.config.finished_ttl_seconds if match.finished else self.config.game_ttl_seconds
        return seconds * 1000
