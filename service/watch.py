"""WatchGame: a seat's (or a spectator's) events as they are committed, over streams bounded per
game, seat and client address, which all end when the server begins to drain."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
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
    again after expiry has other entries at the same versions."""

    def __init__(self, size: int = 4096) -> None:
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
    """The WatchGame streams of this process."""

    def __init__(self, repository: Repository, config: Config) -> None:
        self.repository = repository
        self.streams = StreamSlots(config.max_watch_per_game, config.max_watch_per_seat,
                                   config.max_watch_per_peer)
        self.closing = asyncio.Event()
        """Set when the server begins to drain: open WatchGame streams end at once."""
        self.renders = Renders()

    def begin_shutdown(self) -> int:
        """End every open stream and refuse new ones; how many were open."""
        self.closing.set()
        return self.streams.total

    async def watch(self, req: pb.WatchGameRequest, seat: int | None, peer: str, view_of: ViewOf | None = None
                    ) -> AsyncIterator[pb.WatchGameResponse]:
        """The events ``seat`` may see after ``after_version``, as they are committed; with
        ``view_of``, the seat's view after the events of each version read (and at once, when
        the stream starts at the game's version).

        ``after_version`` beyond the game's version is refused (``VERSION_AHEAD``): such a stream
        could only wait for versions nobody has played."""
        viewer = -1 if seat is None else seat
        if req.after_version < 0:
            raise invalid("BAD_VERSION", "after_version must not be negative")
        if self.closing.is_set():
            raise shutting_down(req.after_version)
        version, match, *_ = await self.repository.load(req.game_id)
        after = req.after_version
        if after > version:
            raise ServiceError(Code.OUT_OF_RANGE, "VERSION_AHEAD",
                               f"after_version {after} is beyond the game's version {version}",
                               {"current_version": str(version)})
        if match.finished and after >= version:
            return  # nothing will ever come after the entry that finished the match
        with self.streams.hold(req.game_id, seat, peer):
            if view_of is not None and after == version:
                first = await view_of(version, [])
                if first is not None:
                    yield pb.WatchGameResponse(version=version, view=first)
            follow = self._follow_whole if req.whole_versions else self._follow
            async with contextlib.aclosing(follow(req.game_id, after, viewer, view_of)) as items:
                async for item in items:
                    yield item

    async def _follow(self, game_id: str, after: int, viewer: int, view_of: ViewOf | None
                      ) -> AsyncGenerator[pb.WatchGameResponse, None]:
        """The log after ``after``, an event per message, then the view of the newest version read."""
        async for batch, view in self._batches(game_id, after, viewer, view_of):
            for whole in batch:
                for event in whole.events:
                    yield pb.WatchGameResponse(version=whole.version, event=event)
            if view is not None:
                yield pb.WatchGameResponse(version=batch[-1].version, view=view)

    async def _follow_whole(self, game_id: str, after: int, viewer: int, view_of: ViewOf | None
                            ) -> AsyncGenerator[pb.WatchGameResponse, None]:
        """The log after ``after``, a version per message, the newest one read with its view."""
        async for batch, view in self._batches(game_id, after, viewer, view_of):
            last = len(batch) - 1
            for i, whole in enumerate(batch):
                if i == last and view is not None:
                    with_view = pb.WatchGameResponse()
                    with_view.CopyFrom(whole)
                    with_view.view.CopyFrom(view)
                    yield with_view
                else:
                    yield whole

    async def _batches(self, game_id: str, after: int, viewer: int, view_of: ViewOf | None
                       ) -> AsyncGenerator[tuple[Batch, pb.GameView | None], None]:
        """The log after ``after`` as it comes, each read's entries with the viewer's messages of
        each and (``view_of``) the view after the newest, until the match finishes (or the server
        drains: ``SHUTTING_DOWN`` with the last version sent)."""
        repo = self.repository
        closing = asyncio.ensure_future(self.closing.wait())
        wait: asyncio.Future[list[Any]] | None = None
        try:
            while True:
                wait = asyncio.ensure_future(repo.timed("watch", repo.store.wait_log(game_id, after, WATCH_POLL_MS)))
                await asyncio.wait((wait, closing), return_when=asyncio.FIRST_COMPLETED)
                if not wait.done():
                    wait.cancel()
                    with contextlib.suppress(BaseException):
                        await wait
                    raise shutting_down(after)
                entries = wait.result()
                if not entries:
                    if await repo.version(game_id) is None:
                        raise not_found(game_id)
                    continue
                finished = False
                batch: Batch = []
                for item in entries:
                    whole, finished = self.renders.whole(game_id, item, viewer)
                    batch.append(whole)
                    after = item.version
                    if finished:
                        break
                yield batch, None if view_of is None else await view_of(after, entries)
                if finished:
                    return
        finally:
            closing.cancel()
            if wait is not None and not wait.done():
                wait.cancel()
