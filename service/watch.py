"""WatchGame: a seat's (or a spectator's) events as they are committed, over streams bounded per
game, seat and client address, which all end when the server begins to drain."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import Any

from gostop.engine import redact
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert

from .config import Config
from .errors import Code, ServiceError, invalid, not_found
from .repository import Repository, read_entry
from .store_api import LogEntry

WATCH_POLL_MS = 15000
"""How long one wait for new log entries lasts before the game is checked to still exist."""


def client_address(peer: str) -> str:
    """The client's IP address in one spelling for both ports, the key of the per-address stream
    limit: gRPC's ``ipv4:10.0.0.5:41234`` / ``ipv6:[::1]:41234`` and the HTTP port's
    ``10.0.0.5:41234`` / ``::1:41234`` give ``10.0.0.5`` / ``::1`` (an IPv4-mapped IPv6 address
    gives its IPv4 address); anything else (a Unix socket) is kept whole; "" when unknown."""
    if not peer:
        return ""
    text = peer.removeprefix("ipv4:").removeprefix("ipv6:")
    host = text.rpartition(":")[0] if ":" in text else text
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return peer
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def shutting_down(after: int) -> ServiceError:
    return ServiceError(Code.UNAVAILABLE, "SHUTTING_DOWN",
                        "the server is shutting down: reconnect and resume after the last version received",
                        {"resume_after_version": str(after)})


class StreamSlots:
    """Open WatchGame streams of this process, counted per game, per seat token and per client
    address (``client_address``: one key for both ports), each bounded (0: no bound), so that
    nobody can hold what other watchers need."""

    def __init__(self, per_game: int, per_seat: int, per_peer: int) -> None:
        self._limits = {"game": per_game, "seat": per_seat, "peer": per_peer}
        self._open: dict[tuple[str, str], int] = {}
        self.total = 0

    @contextlib.contextmanager
    def hold(self, game_id: str, seat: int | None, peer: str) -> Iterator[None]:
        keys = [("game", game_id)]
        if seat is not None:
            keys.append(("seat", f"{game_id}/{seat}"))
        if peer:
            keys.append(("peer", peer))
        for key in keys:
            limit = self._limits[key[0]]
            if limit and self._open.get(key, 0) >= limit:
                what = {"game": "this game", "seat": "this seat", "peer": "your address"}[key[0]]
                raise ServiceError(Code.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS",
                                   f"{what} has {limit} WatchGame streams open already: close one first",
                                   {"scope": key[0], "limit": str(limit)})
        for key in keys:
            self._open[key] = self._open.get(key, 0) + 1
        self.total += 1
        try:
            yield
        finally:
            self.total -= 1
            for key in keys:
                left = self._open[key] - 1
                if left:
                    self._open[key] = left
                else:
                    del self._open[key]


ViewOf = Callable[[int, list[LogEntry]], Awaitable[pb.GameView | None]]
"""The watcher's view at a version (None: the game has moved on), given the entries just read."""


Batch = list[pb.WatchGameResponse]
"""The entries of one read of the log: each version's events the viewer may see, one message each."""


class Renders:
    """Each log entry's events for each viewer, as one ``WatchGameResponse`` (its version and
    events) made once per process however many streams send them (a seat's own streams,
    spectators), the most recent ``size`` kept; one message per entry, not one per event, keeps
    the objects the collector walks few. The entry's bytes are kept with them: a game id used
    again after expiry has other entries at the same versions. The streams of an entry read it
    within moments of its commit, so a few hundred entries serve them: every entry kept is
    objects each young-generation collection walks again, and a miss only decodes once more."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._docs: OrderedDict[tuple[str, int], tuple[bytes, dict[str, Any]]] = OrderedDict()
        self._views: OrderedDict[tuple[str, int, int], tuple[bytes, pb.WatchGameResponse, bool]] = OrderedDict()

    def whole(self, game_id: str, item: LogEntry, viewer: int) -> tuple[pb.WatchGameResponse, bool]:
        """The events ``viewer`` may see of ``item`` in one message (shared: never to be changed),
        and whether it finished the match."""
        key = (game_id, item.version, viewer)
        view = self._views.get(key)
        if view is not None and view[0] == item.entry:
            self._views.move_to_end(key)
            return view[1], view[2]
        doc = self._doc(game_id, item)
        whole = pb.WatchGameResponse(version=item.version,
                                     events=[convert.event_to_pb(redact(e, viewer)) for e in doc["events"]])
        finished = bool(doc["finished"])
        self._views[key] = (item.entry, whole, finished)
        if len(self._views) > self._size:
            self._views.popitem(last=False)
        return whole, finished

    def _doc(self, game_id: str, item: LogEntry) -> dict[str, Any]:
        key = (game_id, item.version)
        cached = self._docs.get(key)
        if cached is not None and cached[0] == item.entry:
            return cached[1]
        doc = read_entry(item.entry)
        self._docs[key] = (item.entry, doc)
        if len(self._docs) > self._size:
            self._docs.popitem(last=False)
        return doc


class Watches:
    """The WatchGame streams of this process. A stream is one async generator over the store's
    waits, with nothing of its own between versions but its frame and the wait in progress: at a
    few thousand streams, what lives from one version to the next is what the collector walks."""

    def __init__(self, repository: Repository, config: Config) -> None:
        self.repository = repository
        self.streams = StreamSlots(config.max_watch_per_game, config.max_watch_per_seat,
                                   config.max_watch_per_peer)
        self.closing = asyncio.Event()
        """Set when the server begins to drain: open WatchGame streams end at once."""
        self.renders = Renders()
        self._waiting: set[asyncio.Task[Any]] = set()
        """The tasks of the streams waiting for the log now: those the drain interrupts."""
        self._ended: set[asyncio.Task[Any]] = set()

    def begin_shutdown(self) -> int:
        """End every open stream and refuse new ones; how many were open. A stream waiting for
        the log is interrupted there; one sending ends before its next wait."""
        self.closing.set()
        for task in self._waiting:
            self._ended.add(task)
            task.cancel()
        return self.streams.total

    async def watch(self, req: pb.WatchGameRequest, seat: int | None, peer: str, view_of: ViewOf | None = None,
                    on_end: Callable[[], None] | None = None) -> AsyncGenerator[pb.WatchGameResponse, None]:
        """The events ``seat`` may see after ``after_version``, as they are committed; with
        ``view_of``, the seat's view after the events of each version read (and at once, when
        the stream starts at the game's version). ``on_end`` runs when the stream ends, however.

        ``after_version`` beyond the game's version is refused (``VERSION_AHEAD``): such a stream
        could only wait for versions nobody has played."""
        try:
            version, finished = await self._start(req)
            if finished:
                return  # nothing will ever come after the entry that finished the match
            with self.streams.hold(req.game_id, seat, peer):
                if view_of is not None and req.after_version == version:
                    first = await view_of(version, [])
                    if first is not None:
                        yield pb.WatchGameResponse(version=version, view=first)
                cursor = _Cursor(req.game_id, req.after_version, -1 if seat is None else seat, view_of)
                messages = _whole_messages if req.whole_versions else _event_messages
                while not cursor.finished:
                    batch, view = await self._next_batch(cursor)
                    for message in messages(batch, view):
                        yield message
        finally:
            if on_end is not None:
                on_end()

    async def _start(self, req: pb.WatchGameRequest) -> tuple[int, bool]:
        """The game's version, and whether the stream has nothing to wait for; a refusal for a
        stream that may not start."""
        if req.after_version < 0:
            raise invalid("BAD_VERSION", "after_version must not be negative")
        if self.closing.is_set():
            raise shutting_down(req.after_version)
        version, match, *_ = await self.repository.load(req.game_id)
        if req.after_version > version:
            raise ServiceError(Code.OUT_OF_RANGE, "VERSION_AHEAD",
                               f"after_version {req.after_version} is beyond the game's version {version}",
                               {"current_version": str(version)})
        return version, match.finished and req.after_version >= version

    async def _next_batch(self, cursor: _Cursor) -> tuple[Batch, pb.GameView | None]:
        """The next read of the log after the cursor, each entry's message for the viewer and
        (``view_of``) the view after the newest; the cursor moves past it. The wait is in the
        stream's own task (no task per wait): the drain cancels it, and that cancellation ends
        the stream with ``SHUTTING_DOWN`` (the last version sent)."""
        repo = self.repository
        task = asyncio.current_task()
        assert task is not None
        while True:
            if self.closing.is_set():
                raise shutting_down(cursor.after)
            self._waiting.add(task)
            try:
                entries = await repo.timed("watch", repo.store.wait_log(cursor.game_id, cursor.after, WATCH_POLL_MS))
            except asyncio.CancelledError:
                if task not in self._ended:
                    raise
                self._ended.discard(task)
                task.uncancel()
                raise shutting_down(cursor.after) from None
            finally:
                self._waiting.discard(task)
            if entries:
                break
            if await repo.version(cursor.game_id) is None:
                raise not_found(cursor.game_id)
        batch: Batch = []
        for item in entries:
            whole, finished = self.renders.whole(cursor.game_id, item, cursor.viewer)
            batch.append(whole)
            cursor.after = item.version
            if finished:
                cursor.finished = True
                break
        view = None if cursor.view_of is None else await cursor.view_of(cursor.after, entries)
        return batch, view


class _Cursor:
    """Where a stream is in the game's log, and for whom."""

    __slots__ = ("after", "finished", "game_id", "view_of", "viewer")

    def __init__(self, game_id: str, after: int, viewer: int, view_of: ViewOf | None) -> None:
        self.game_id = game_id
        self.after = after
        self.viewer = viewer
        self.view_of = view_of
        self.finished = False


def _event_messages(batch: Batch, view: pb.GameView | None) -> Iterator[pb.WatchGameResponse]:
    """A read's messages an event each, then the view of the newest version read."""
    for whole in batch:
        for event in whole.events:
            yield pb.WatchGameResponse(version=whole.version, event=event)
    if view is not None:
        yield pb.WatchGameResponse(version=batch[-1].version, view=view)


def _whole_messages(batch: Batch, view: pb.GameView | None) -> Iterator[pb.WatchGameResponse]:
    """A read's messages a version each (shared, never changed), the newest with its view."""
    last = len(batch) - 1
    for i, whole in enumerate(batch):
        if i == last and view is not None:
            with_view = pb.WatchGameResponse()
            with_view.CopyFrom(whole)
            with_view.view.CopyFrom(view)
            yield with_view
        else:
            yield whole
