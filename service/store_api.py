"""The storage contract of the game service.

A game is a version, a snapshot (the serialized engine ``Match``) at that version or an earlier
one, a log of committed entries (one per version, each holding the step that made it and its
unredacted events), and the stored responses of idempotent requests. The state at the version is
the snapshot's with the log entries after the snapshot's version replayed (the engine is
deterministic), so a commit need not write a snapshot every time. Every commit is atomic: the
version check, the new snapshot (if any), the log entry and the idempotent response are written
together or not at all. Two implementations honour this contract: an in-process memory store (the
embedded default) and Redis (standalone, Sentinel or Cluster), where all keys of one
game share a Cluster hash slot through the ``{game_id}`` tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class StoreUnavailable(Exception):
    """The store cannot serve the call now (unreachable, failover, no free connection, full).

    Raised as such from ``create`` or ``commit``, it means the write was not applied: it was
    refused before it was sent, or the store answered that it did not run it.
    """


class StoreOutcomeUnknown(StoreUnavailable):
    """A write was sent but its answer never came (timeout, connection lost after sending): it may
    have been applied or not. A retry with the same request id tells: ``Duplicate`` if it was."""


class StoreCorrupt(Exception):
    """Stored data for a game cannot be decoded."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A game's latest committed version and its latest snapshot."""

    version: int
    blob: bytes
    at: int | None = None
    """The version ``blob`` is the state of when it is older than ``version`` (the log entries
    after ``at`` lead from it to ``version``); None when ``blob`` is the state at ``version``."""

    @property
    def blob_version(self) -> int:
        """The version ``blob`` is the state of."""
        return self.version if self.at is None else self.at


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One committed step: ``version`` and the opaque entry bytes written with it."""

    version: int
    entry: bytes


@dataclass(frozen=True, slots=True)
class Committed:
    """The commit was applied; the game is now at ``version``."""

    version: int


@dataclass(frozen=True, slots=True)
class Conflict:
    """The game is not at the expected version; nothing was written."""

    current_version: int


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The request id was already committed; nothing was written.

    ``fingerprint`` is the one stored with the first request (compare it to tell a
    retry from a different request reusing the id) and ``response`` its stored response.
    """

    fingerprint: str
    response: bytes


@dataclass(frozen=True, slots=True)
class Missing:
    """No such game (never created, or expired)."""


CommitResult = Committed | Conflict | Duplicate | Missing


class Store(Protocol):
    """Atomic storage of games. Every method raises ``StoreUnavailable`` when the backend
    cannot be reached, never a backend-specific exception."""

    name: str
    """``memory`` or ``redis``: shown in logs and metrics."""

    async def create(self, game_id: str, blob: bytes, entry: bytes, ttl_ms: int) -> bool:
        """Create a game at version 1 with its first log entry; False if the id exists."""
        ...

    async def load(self, game_id: str) -> Snapshot | None:
        """The latest snapshot, or None for an unknown or expired game."""
        ...

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
        """Atomically: if ``request_id`` is non-empty and already stored, return
        ``Duplicate``; if the game is missing, ``Missing``; if it is not at
        ``expected_version``, ``Conflict``; otherwise move the game to ``expected_version + 1``
        with ``blob`` as its snapshot at that version (``None``: the last snapshot stays, as the
        state at its own version), append ``entry`` to the log under that version, store
        (fingerprint, response) under ``request_id`` when given, set every key of the game
        to expire in ``ttl_ms``, and return ``Committed``."""
        ...

    async def lookup_request(self, game_id: str, request_id: str) -> Duplicate | None:
        """The stored fingerprint and response of a request id, if any."""
        ...

    async def read_log(self, game_id: str, after_version: int, limit: int = 1000) -> list[LogEntry]:
        """Log entries with version > ``after_version``, ascending, at most ``limit``
        ([] for a missing game)."""
        ...

    async def wait_log(
        self, game_id: str, after_version: int, timeout_ms: int, limit: int = 1000
    ) -> list[LogEntry]:
        """Like ``read_log`` but waits up to ``timeout_ms`` for at least one entry;
        returns [] on timeout (a game that does not exist yet is waited for)."""
        ...

    async def hold_presence(self, game_id: str, holder: str, until_ms: int) -> None:
        """Record that ``holder`` (a process and seat) holds a stream of the game until ``until_ms``
        (Unix ms) unless it says so again; kept no longer than the game."""
        ...

    async def drop_presence(self, game_id: str, holder: str) -> None:
        """``holder`` holds no stream of the game any more."""
        ...

    async def present(self, game_id: str, now_ms: int) -> list[str]:
        """The holders of the game's streams whose time has not run out at ``now_ms``."""
        ...

    async def lapsed_presence(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        """Registrations whose time ran out by ``now_ms`` without being dropped (their process
        stopped renewing them: it died), as (game id, holder), at most ``limit``; each is handed
        to one caller only, whichever process asks."""
        ...

    @property
    def followed_games(self) -> int:
        """How many games this process waits on commits of with one shared subscription (0 where
        every waiter waits on its own)."""
        ...

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the backend answers."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
