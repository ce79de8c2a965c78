"""Commit notices: one Redis subscription per process for every game it has waiters on.

Every create and commit also publishes its log entry on the game's shard channel, in the same
script (``SPUBLISH <prefix>:{<game_id>}:feed "<version>:<entry bytes>"``), so a notice is exactly
a log entry. A process subscribes once per game, however many of its streams watch that game,
over one connection (``LogFeed``), and wakes the game's waiters; a waiter whose next entry came
with a notice takes it from memory instead of reading the log. Pub/sub delivers at most once:
whenever a subscription is (re)made, every waiter of the game reads the log again, and while
the connection is down waiters poll, so the log stays the truth and nothing is missed.
Which games this process follows is also which games it has watchers of.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import hiredis
import structlog

from gostop.service.resp import pack
from gostop.service.store_api import LogEntry

log = structlog.get_logger("gostop")

KEEP_ENTRIES = 16
"""How many announced entries a followed game keeps, for waiters a few versions behind."""

Opener = Callable[[Callable[[], asyncio.Protocol]], Awaitable[asyncio.BaseTransport]]
"""Opens a connection to the server with a protocol and returns its transport."""


@dataclass(slots=True)
class FollowedGame:
    """A game this process has waiters on: its channel, what was announced, and a wake-up."""

    channel: bytes
    followers: int = 0
    idle_since: float = 0.0
    subscribed: bool = False
    """The subscription is confirmed on the current connection: every commit since is announced."""
    head: int = -1
    """The newest version known since the subscription (-1: none)."""
    epoch: int = 0
    """How many times the subscription was lost (or never made): a read begun in an earlier
    epoch proves nothing about this one."""
    recent: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=KEEP_ENTRIES))
    """Announced entries of consecutive versions, oldest first."""
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    """The futures of the waits in progress, each done at the next notice (one future per wait:
    nothing else of a waiting stream is made for it, so thousands of waits stay cheap)."""

    def entries_after(self, version: int, limit: int) -> list[LogEntry] | None:
        """The entries after ``version`` as far as they are known; ``[]`` when certainly none
        exist yet; ``None`` when only the log can tell."""
        if not self.subscribed:
            return None
        recent = self.recent
        if recent and recent[0].version <= version + 1 <= recent[-1].version:
            start = version + 1 - recent[0].version
            return [recent[i] for i in range(start, min(len(recent), start + limit))]
        return [] if self.head == version else None

    def announce(self, entry: LogEntry) -> None:
        if self.recent and self.recent[-1].version + 1 != entry.version:
            self.recent.clear()  # a gap (or a game created again): only consecutive versions are kept
        self.recent.append(entry)
        self.head = entry.version
        self.notify()

    def read_up_to(self, version: int, epoch: int) -> None:
        """A read of the log begun in ``epoch`` found it ends at ``version``: if the subscription
        was confirmed before the read and still is, every later commit will be announced."""
        if self.subscribed and epoch == self.epoch and version > self.head:
            self.head = version

    def forget(self) -> None:
        """The subscription is gone (or not yet confirmed): nothing known is certain."""
        self.subscribed = False
        self.epoch += 1
        self.head = -1
        self.recent.clear()
        self.notify()

    def notify(self) -> None:
        """Wake every wait in progress."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def waiter(self) -> asyncio.Future[None]:
        """A future done at the next notice (``drop`` it when the wait ends otherwise)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return waiter

    def drop(self, waiter: asyncio.Future[None]) -> None:
        """Forget a wait that ended without a notice (its time ran out, or it was cancelled)."""
        if not waiter.done():
            waiter.cancel()
        with contextlib.suppress(ValueError):
            self.waiters.remove(waiter)


class _Subscriber(asyncio.Protocol):
    """One subscribed connection: parses replies and hands each to the feed."""

    def __init__(self, feed: LogFeed) -> None:
        self.feed = feed
        self.reader = hiredis.Reader()
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                self.feed.received(reply)
        except hiredis.ProtocolError as error:
            self.close(ConnectionError(f"redis protocol error: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    def send(self, *command: bytes | str | int) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(pack(command))

    def close(self, error: Exception | None = None) -> None:
        if self.transport is not None:
            self.transport.abort()
        if not self.lost.done():
            self.lost.set_result(error)


class LogFeed:
    """The commit notices of the games this process waits on (see the module docstring).

    ``open`` connects to the server (a fresh connection each time, setup commands included in
    ``setup``); ``channel`` names a game's channel. Unfollowed games stay subscribed for
    ``linger_s`` (a stream's next wait follows at once), then are dropped."""

    def __init__(self, open: Opener, channel: Callable[[str], str], *, setup: list[tuple[Any, ...]],
                 linger_s: float = 10.0, retry_s: float = 0.5, ping_s: float = 5.0) -> None:
        self._open = open
        self._channel = channel
        self._setup = setup
        self._linger_s = linger_s
        self._retry_s = retry_s
        self._ping_s = ping_s
        self._games: dict[str, FollowedGame] = {}
        self._by_channel: dict[bytes, FollowedGame] = {}
        self._conn: _Subscriber | None = None
        self._setup_left = 0
        self._pongs = 0
        self._pongs_seen = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.unsupported = False
        """The server has no sharded pub/sub (before Redis 7): waiters must do without notices."""

    @property
    def live(self) -> bool:
        """Whether commits are being announced now (else waiters poll)."""
        return self._conn is not None and not self._setup_left

    def follow(self, game_id: str) -> FollowedGame:
        """Count a waiter of ``game_id``, subscribing when it is the first."""
        game = self._games.get(game_id)
        if game is None:
            channel = self._channel(game_id).encode()
            game = self._games[game_id] = self._by_channel[channel] = FollowedGame(channel)
            if self._conn is not None:  # else the next connection subscribes it
                self._conn.send("SSUBSCRIBE", channel)
        game.followers += 1
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="log-feed")
        return game

    def unfollow(self, game: FollowedGame) -> None:
        game.followers -= 1
        if not game.followers:
            game.idle_since = asyncio.get_running_loop().time()

    @property
    def followed(self) -> int:
        return len(self._games)

    def received(self, reply: Any) -> None:
        """One reply or push from the subscribed connection."""
        if self._setup_left:
            self._setup_left -= 1
            if isinstance(reply, hiredis.ReplyError) and self._conn is not None:
                self._conn.close(ConnectionError(f"redis refused the subscriber's setup: {reply}"))
            return
        if isinstance(reply, hiredis.ReplyError):
            text = str(reply)
            # No sharded pub/sub (before Redis 7) or no right to it (ACL): waiters do without.
            # Anything else (a server loading or failing over) is worth another connection.
            self.unsupported = text.startswith("NOPERM") or "unknown command" in text.lower()
            log.warning("commit notices refused" + (": watchers use blocking reads" if self.unsupported else ""),
                        reply=text)
            if self._conn is not None:
                self._conn.close(None if self.unsupported else ConnectionError(f"redis refused a subscription: {text}"))
            return
        if reply == b"PONG":
            self._pongs += 1
            return
        if not isinstance(reply, list) or len(reply) < 2:
            return
        kind = reply[0]
        if kind == b"smessage" and len(reply) == 3:
            game = self._by_channel.get(reply[1])
            version, sep, entry = reply[2].partition(b":")
            if game is not None and sep and version.isdigit():
                game.announce(LogEntry(int(version), entry))
        elif kind == b"ssubscribe":
            game = self._by_channel.get(reply[1])
            if game is not None:
                game.subscribed = True
                game.notify()  # its waiters read the log once: commits before this were not announced
        elif kind == b"pong":
            self._pongs += 1

    async def _run(self) -> None:
        """Connect, subscribe every followed game, keep the connection checked; again on failure."""
        delay = self._retry_s
        while not self._closed and not self.unsupported:
            try:
                await self._serve()
            except Exception as error:  # connecting (also finding a Sentinel's master) or the connection failed
                log.warning("commit notices lost: watchers read the log until they are back",
                            error=f"{type(error).__name__}: {error}", retry_seconds=delay)
            for game in self._games.values():
                game.forget()
            if not self._closed:
                await asyncio.sleep(delay)
                delay = self._retry_s if self._pongs_seen else min(delay * 2, 8 * self._retry_s)
            self._pongs_seen = False

    async def _serve(self) -> None:
        conn = _Subscriber(self)
        await self._open(lambda: conn)
        self._conn = conn
        try:
            self._setup_left = len(self._setup)
            for command in self._setup:
                conn.send(*command)
            if self._games:
                conn.send("SSUBSCRIBE", *(game.channel for game in self._games.values()))
            while not conn.lost.done():
                pongs = self._pongs
                conn.send("PING")
                done, _ = await asyncio.wait((conn.lost,), timeout=self._ping_s)
                if done:
                    break
                if pongs == self._pongs:
                    conn.close(TimeoutError("the subscriber's PING went unanswered"))
                    break
                self._pongs_seen = True  # the connection worked: a later failure retries soon
                self._drop_idle(conn)
            error = conn.lost.result() if conn.lost.done() else None
            if isinstance(error, OSError | TimeoutError):
                raise error
            if not self._closed and not self.unsupported:
                raise ConnectionError(f"the subscriber's connection closed: {error}")
        finally:
            conn.close()
            self._conn = None
            self._setup_left = 0

    def _drop_idle(self, conn: _Subscriber) -> None:
        now = asyncio.get_running_loop().time()
        idle = [gid for gid, game in self._games.items()
                if not game.followers and now - game.idle_since >= self._linger_s]
        for game_id in idle:
            game = self._games.pop(game_id)
            del self._by_channel[game.channel]
            conn.send("SUNSUBSCRIBE", game.channel)

    async def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            self._conn.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        for game in self._games.values():
            game.forget()
