"""Who holds the streams of a clocked table's seats, across the service's processes.

Each process counts its own open ``WatchGame`` streams per (game, seat). A seat's first stream
in a process registers the process as a holder in the store (refreshed while it holds one, so a
process that dies drops out when its registration runs out); its last stream ending starts a
grace period, after which, if no process holds a stream of the seat, the seat is disconnected.
A stream that comes back within the grace changes nothing. Connecting and disconnecting are
steps of the table's log (``SeatPresence``), committed by ``commit`` (``Games``), which does
nothing when the table already says so. Only clocked tables are followed.

A process that dies leaves its registrations to run out. Every process looks for registrations
that ran out (``Store.lapsed_presence``, each handed to one process) once per grace, and
disconnects their seats unless another process holds a stream of them: a dead process's seats
are disconnected a few graces after it died, whoever serves their games.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

import structlog

from .clock import now_ms
from .store_api import Store

log = structlog.get_logger("gostop")

SWEEP_BATCH = 200
"""Registrations that ran out one look takes at most (the next look takes the rest)."""

Commit = Callable[[str, int, bool], Awaitable[None]]
"""``commit(game_id, seat, connected)``: log the seat's presence, if the table does not say so yet."""


class Presence:
    """This process's holders of clocked tables' streams (see the module docstring)."""

    def __init__(self, store: Store, grace_ms: int, commit: Commit) -> None:
        self.store = store
        self.grace_ms = grace_ms
        self.commit = commit
        self.process = uuid.uuid4().hex[:12]
        self._streams: dict[tuple[str, int], int] = {}
        self._leaving: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._refresher: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Look for the registrations of dead processes from now on (until ``close``)."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.ensure_future(self._sweep())

    def _holder(self, seat: int) -> str:
        return f"{seat}:{self.process}"

    def _until(self) -> int:
        return now_ms() + 3 * self.grace_ms

    async def enter(self, game_id: str, seat: int) -> None:
        """A stream of ``seat`` opened here."""
        key = (game_id, seat)
        self._streams[key] = self._streams.get(key, 0) + 1
        leaving = self._leaving.pop(key, None)
        if leaving is not None:
            leaving.cancel()
        if self._streams[key] > 1:
            return
        try:
            await self._quietly(self.store.hold_presence(game_id, self._holder(seat), self._until()))
            if self._refresher is None or self._refresher.done():
                self._refresher = asyncio.ensure_future(self._refresh())
            await self._quietly(self.commit(game_id, seat, True))
        except BaseException:  # cancelled on the way (the caller went): the stream never opened
            self.leave(game_id, seat)
            raise

    def leave(self, game_id: str, seat: int) -> None:
        """A stream of ``seat`` ended here: after the grace, the seat may be disconnected."""
        key = (game_id, seat)
        left = self._streams.get(key, 0) - 1
        if left > 0:
            self._streams[key] = left
            return
        self._streams.pop(key, None)
        if key not in self._leaving:
            self._leaving[key] = asyncio.ensure_future(self._after_grace(game_id, seat))

    async def connected(self, game_id: str, seat: int) -> bool:
        """Whether any process holds a stream of ``seat`` now."""
        holders = await self.store.present(game_id, now_ms())
        return any(h.split(":", 1)[0] == str(seat) for h in holders)

    async def _after_grace(self, game_id: str, seat: int) -> None:
        try:
            await asyncio.sleep(self.grace_ms / 1000)
            if (game_id, seat) in self._streams:
                return
            await self._quietly(self.store.drop_presence(game_id, self._holder(seat)))
            if not await self.connected(game_id, seat):
                await self._quietly(self.commit(game_id, seat, False))
        except Exception as exc:  # the store is down: the next deadline finds the seat gone
            log.warning("presence not updated", game_id=game_id, seat=seat, error=str(exc)[:200])
        finally:
            self._leaving.pop((game_id, seat), None)

    async def _refresh(self) -> None:
        """Renew this process's registrations while it holds streams."""
        while self._streams:
            await asyncio.sleep(self.grace_ms / 1000)
            until = self._until()
            for game_id, seat in list(self._streams):
                await self._quietly(self.store.hold_presence(game_id, self._holder(seat), until))

    async def _sweep(self) -> None:
        """Once per grace: disconnect the seats of registrations that ran out (see the module
        docstring); one that is this process's own (renewed late) is registered again."""
        while True:
            await asyncio.sleep(self.grace_ms / 1000)
            try:
                lapsed = await self.store.lapsed_presence(now_ms(), SWEEP_BATCH)
            except Exception as exc:  # the store is down: look again at the next beat
                log.warning("presence not swept", error=f"{type(exc).__name__}: {exc}"[:200])
                continue
            for game_id, holder in lapsed:
                seat_text, _, process = holder.partition(":")
                if not seat_text.isdigit():
                    continue
                seat = int(seat_text)
                if process == self.process and (game_id, seat) in self._streams:
                    await self._quietly(self.store.hold_presence(game_id, holder, self._until()))
                    continue
                try:
                    if not await self.connected(game_id, seat):
                        await self.commit(game_id, seat, False)
                except Exception as exc:  # the game ended or expired meanwhile, or the store is down
                    log.info("lapsed presence not logged", game_id=game_id, seat=seat,
                             error=f"{type(exc).__name__}: {exc}"[:200])

    async def _quietly(self, call: Awaitable[None]) -> None:
        """Presence never fails a stream: a store or commit error is logged and left."""
        try:
            await call
        except Exception as exc:
            log.warning("presence not updated", error=f"{type(exc).__name__}: {exc}"[:200])

    async def close(self) -> None:
        tasks = [self._refresher, self._sweeper]
        for task in [*self._leaving.values(), *(t for t in tasks if t is not None)]:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
