"""The in-process store: the embedded default, with the same semantics as the Redis store.

Everything lives in one dict per process. Each game expires ``ttl_ms`` after its creation or
last commit (measured with ``time.monotonic``); an expired game behaves exactly like a missing
one and is purged lazily (when touched, and by a cheap sweep of the expiry heap on every write).

Atomicity comes from the single asyncio event loop: every operation yields once to the loop
*before* its critical section (like a network round trip would, so that concurrent callers
interleave fairly) and then runs the whole check-and-write without awaiting anything.

``wait_log`` parks on a per-game ``asyncio.Event`` that ``create`` and ``commit`` set; it never
polls.

The store is bounded by ``max_games``. When a new game would exceed it, expired games are purged
first; if the store is still full, the policy ``on_full`` decides: ``"evict"`` (default) drops
the live game that expires soonest (with a uniform TTL, the one idle the longest), like Redis'
``volatile-ttl`` eviction; ``"refuse"`` makes ``create`` raise ``StoreUnavailable`` instead, like
Redis' ``noeviction``. Commits never evict.

>>> import asyncio
>>> async def demo() -> list[int]:
...     store = MemoryStore()
...     await store.create("g1", b"s1", b"e1", ttl_ms=60_000)
...     await store.commit("g1", 1, b"s2", b"e2", ttl_ms=60_000)
...     return [e.version for e in await store.read_log("g1", 0)]
>>> asyncio.run(demo())
[1, 2]
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from gostop.service.store_api import (
    CommitResult,
    Committed,
    Conflict,
    Duplicate,
    LogEntry,
    Missing,
    Snapshot,
    StoreUnavailable,
)

REQUEST_SEPARATOR: Final = "\x00"
"""Separates the fingerprint from the response in a stored request (the Redis ``req`` hash);
a fingerprint may therefore not contain it. Both stores enforce it so they accept the same input."""


def check_game_id(game_id: str) -> None:
    """Reject ids that cannot be stored: empty ones, and ones with ``{`` or ``}``, which would
    break the Cluster hash tag ``{game_id}`` that keeps all keys of one game in one slot."""
    if not game_id:
        raise ValueError("game_id must not be empty")
    if "{" in game_id or "}" in game_id:
        raise ValueError(f"game_id must not contain '{{' or '}}': {game_id!r}")


def check_ttl(ttl_ms: int) -> None:
    """A TTL must be a positive number of milliseconds (Redis deletes a key given TTL <= 0)."""
    if ttl_ms <= 0:
        raise ValueError(f"ttl_ms must be positive, got {ttl_ms}")


def check_fingerprint(fingerprint: str) -> None:
    """The fingerprint is stored in front of the response, before a separator it may not contain."""
    if REQUEST_SEPARATOR in fingerprint:
        raise ValueError("fingerprint must not contain a NUL character")


@dataclass(slots=True)
class _Game:
    version: int
    blob: bytes
    """The latest snapshot: the state at version ``at``."""
    at: int
    expires_at: float
    log: list[bytes] = field(default_factory=list)
    """Entry of version ``i + 1`` at index ``i``."""
    requests: dict[str, Duplicate] = field(default_factory=dict)


@dataclass(slots=True)
class _Waiters:
    """The event the current waiters on one game park on, and how many of them there are."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    count: int = 0


class MemoryStore:
    """The ``Store`` protocol in process memory (see the module docstring)."""

    name = "memory"

    def __init__(
        self,
        max_games: int | None = 100_000,
        on_full: Literal["evict", "refuse"] = "evict",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_games is not None and max_games < 1:
            raise ValueError(f"max_games must be at least 1, got {max_games}")
        if on_full not in ("evict", "refuse"):
            raise ValueError(f"on_full must be 'evict' or 'refuse', got {on_full!r}")
        self.max_games = max_games
        self.on_full = on_full
        self._clock = clock
        self._games: dict[str, _Game] = {}
        # (expires_at, tie-breaker, game_id); an entry is stale once the game's expires_at moved.
        self._expiry: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._waiters: dict[str, _Waiters] = {}
        self._presence: dict[str, dict[str, int]] = {}
        """Per game: who holds its streams, and until when (Unix ms)."""
        self.evictions = 0
        """Live games dropped because the store was full (for metrics)."""

    def __len__(self) -> int:
        """Games held, expired ones not yet purged included."""
        return len(self._games)

    # -- internals (all synchronous: never await between a check and a write) --

    def _live(self, game_id: str) -> _Game | None:
        game = self._games.get(game_id)
        if game is not None and game.expires_at <= self._clock():
            del self._games[game_id]
            return None
        return game

    def _set_expiry(self, game_id: str, game: _Game, ttl_ms: int) -> None:
        game.expires_at = self._clock() + ttl_ms / 1000
        heapq.heappush(self._expiry, (game.expires_at, next(self._seq), game_id))
        if len(self._expiry) > 2 * len(self._games) + 64:
            self._expiry = [(g.expires_at, next(self._seq), gid) for gid, g in self._games.items()]
            heapq.heapify(self._expiry)

    def _pop_soonest(self, only_expired: bool) -> str | None:
        """Remove and return the live game that expires first (``only_expired``: if expired)."""
        now = self._clock()
        while self._expiry:
            expires_at, _, game_id = self._expiry[0]
            game = self._games.get(game_id)
            if game is None or game.expires_at != expires_at:
                heapq.heappop(self._expiry)  # stale entry
                continue
            if only_expired and expires_at > now:
                return None
            heapq.heappop(self._expiry)
            del self._games[game_id]
            return game_id
        return None

    def _sweep(self) -> None:
        while self._pop_soonest(only_expired=True) is not None:
            pass

    def _make_room(self) -> None:
        self._sweep()
        if self.max_games is None or len(self._games) < self.max_games:
            return
        if self.on_full == "refuse":
            raise StoreUnavailable(f"memory store full ({self.max_games} games)")
        while len(self._games) >= self.max_games and self._pop_soonest(only_expired=False) is not None:
            self.evictions += 1

    def _notify(self, game_id: str) -> None:
        waiters = self._waiters.pop(game_id, None)
        if waiters is not None:
            waiters.event.set()

    def _read(self, game_id: str, after_version: int, limit: int) -> list[LogEntry]:
        game = self._live(game_id)
        if game is None or limit <= 0:
            return []
        start = max(after_version, 0)
        return [
            LogEntry(version, entry)
            for version, entry in enumerate(game.log[start : start + limit], start=start + 1)
        ]

    # -- the Store protocol --

    async def create(self, game_id: str, blob: bytes, entry: bytes, ttl_ms: int) -> bool:
        check_game_id(game_id)
        check_ttl(ttl_ms)
        await asyncio.sleep(0)
        if self._live(game_id) is not None:
            return False
        self._make_room()
        game = _Game(version=1, blob=blob, at=1, expires_at=0.0, log=[entry])
        self._games[game_id] = game
        self._set_expiry(game_id, game, ttl_ms)
        self._notify(game_id)
        return True

    async def load(self, game_id: str) -> Snapshot | None:
        check_game_id(game_id)
        await asyncio.sleep(0)
        game = self._live(game_id)
        if game is None:
            return None
        return Snapshot(game.version, game.blob, None if game.at == game.version else game.at)

    async def commit(
        self,
        game_id: str,
        expected_version: int,
        blob: bytes | None,
        entry: bytes,
        ttl_ms: int,
        request_id: str = "",
        fingerprint: str = "",
        response: bytes = b"",
    ) -> CommitResult:
        check_game_id(game_id)
        check_ttl(ttl_ms)
        check_fingerprint(fingerprint)
        await asyncio.sleep(0)
        self._sweep()
        game = self._live(game_id)
        if game is None:
            return Missing()
        if request_id:
            stored = game.requests.get(request_id)
            if stored is not None:
                return stored
        if game.version != expected_version:
            return Conflict(game.version)
        game.version += 1
        if blob is not None:
            game.blob, game.at = blob, game.version
        game.log.append(entry)
        if request_id:
            game.requests[request_id] = Duplicate(fingerprint, response)
        self._set_expiry(game_id, game, ttl_ms)
        self._notify(game_id)
        return Committed(game.version)

    async def lookup_request(self, game_id: str, request_id: str) -> Duplicate | None:
        check_game_id(game_id)
        await asyncio.sleep(0)
        game = self._live(game_id)
        return None if game is None else game.requests.get(request_id)

    async def read_log(self, game_id: str, after_version: int, limit: int = 1000) -> list[LogEntry]:
        check_game_id(game_id)
        await asyncio.sleep(0)
        return self._read(game_id, after_version, limit)

    async def wait_log(
        self, game_id: str, after_version: int, timeout_ms: int, limit: int = 1000
    ) -> list[LogEntry]:
        check_game_id(game_id)
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        while True:
            entries = self._read(game_id, after_version, limit)
            remaining = deadline - loop.time()
            if entries or remaining <= 0 or limit <= 0:
                return entries
            waiters = self._waiters.get(game_id)
            if waiters is None:
                waiters = self._waiters[game_id] = _Waiters()
            waiters.count += 1
            try:
                async with asyncio.timeout(remaining):
                    await waiters.event.wait()
            except TimeoutError:
                pass
            finally:
                waiters.count -= 1
                if waiters.count == 0 and self._waiters.get(game_id) is waiters:
                    del self._waiters[game_id]

    async def hold_presence(self, game_id: str, holder: str, until_ms: int) -> None:
        if self._live(game_id) is not None:
            self._presence.setdefault(game_id, {})[holder] = until_ms

    async def drop_presence(self, game_id: str, holder: str) -> None:
        holders = self._presence.get(game_id)
        if holders is not None:
            holders.pop(holder, None)
            if not holders:
                del self._presence[game_id]

    async def lapsed_presence(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for game_id, holders in list(self._presence.items()):
            for holder, until in list(holders.items()):
                if until <= now_ms and len(out) < limit:
                    out.append((game_id, holder))
                    await self.drop_presence(game_id, holder)
        return out

    async def present(self, game_id: str, now_ms: int) -> list[str]:
        if self._live(game_id) is None:
            self._presence.pop(game_id, None)
            return []
        holders = self._presence.get(game_id, {})
        return sorted(h for h, until in holders.items() if until > now_ms)

    @property
    def followed_games(self) -> int:
        return len(self._waiters)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        return None
