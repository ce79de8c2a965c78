"""The turn clocks of the games of one process: who may make a decision for a seat and when,
the scheduling of every decision's deadline with the bot queue, and the clock's metrics.

The clock's rules (banks, timeouts, away, auto-play) are ``service.clock``'s; the moves at a
deadline are the bot workers', submitted through the API like any other (docs/clock.md).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence

from gostop.engine import Match

from .bot_queue import BotTurn
from .bot_seats import BotSeatSpec
from .bot_turns import BotTurns
from .clock import Due, Table, now_ms
from .config import Config
from .errors import Code, ServiceError, denied, precondition
from .metrics import Metrics
from .repository import Loaded, Repository, bounded_put
from .store_api import StoreUnavailable


class Clocks:
    """The clocks of the games this process serves (``Games`` calls them around each commit)."""

    def __init__(self, repository: Repository, bot_turns: BotTurns, config: Config, metrics: Metrics) -> None:
        self.repository = repository
        self.bot_turns = bot_turns
        self.config = config
        self.metrics = metrics
        self._background: set[asyncio.Task[None]] = set()
        self._nudged: OrderedDict[str, tuple[int, int]] = OrderedDict()
        """Per game: the version whose decision this process last scheduled again, and when (ms)."""
        metrics.clock_seats.labels("away").set_function(lambda: self._count("away"))
        metrics.clock_seats.labels("auto_play").set_function(lambda: self._count("auto_play"))
        metrics.clock_seats.labels("connected").set_function(lambda: self._count("connected"))

    async def table(self, game_id: str, loaded: Loaded) -> Table | None:
        """The game's clock at ``loaded``'s version (None: the game has none)."""
        if loaded.table is not None:
            return loaded.table
        if await self.bot_turns.clock(game_id) is None:
            return None
        return await self.repository.table(game_id, loaded)

    @staticmethod
    def forced(table: Table | None, match: Match, bots: Sequence[BotSeatSpec], seat: int, kind: str | None,
               worker: bool) -> Due | None:
        """The decision a bot worker makes for a person's ``seat`` (None when the caller acts for its
        own seat or a bot seat); ``NOT_A_BOT_SEAT`` unless that decision (of ``kind``, or any) is
        due now."""
        if not worker or any(b.seat == seat for b in bots):
            return None
        if table is None:
            raise denied("NOT_A_BOT_SEAT", f"seat {seat} is a person's: a bot-worker key acts only for bot seats, "
                         "and for a person's seat of a clocked game past its deadline")
        due = table.due(match, bots)
        if due is None or due.seat != seat or kind not in (None, due.kind):
            raise precondition("NO_DECISION_DUE", f"seat {seat} owes no decision now: the clock's turn is stale "
                               "(the game moved on)")
        if now_ms() < due.deadline_ms:
            raise ServiceError(Code.PERMISSION_DENIED, "NOT_A_BOT_SEAT",
                               f"seat {seat}'s decision is not due before its deadline",
                               {"deadline_ms": str(due.deadline_ms)})
        return due

    def count(self, forced: Due, table: Table, at_ms: int) -> None:
        """A decision made for a seat, in the metrics."""
        self.metrics.clock_moves.labels(table.settings.policy.split(":")[0][:64], forced.cause).inc()
        self.metrics.clock_lag.observe(max(0, at_ms - forced.deadline_ms) / 1000)

    async def schedule(self, game_id: str, version: int, match: Match, bots: Sequence[BotSeatSpec],
                       table: Table | None) -> None:
        """Schedule the deadline of the decision the game now waits for, if a person's seat owes one.
        A failed schedule is retried in the background: the commit stands whatever happens."""
        due = None if table is None else table.due(match, bots)
        queue = self.bot_turns.queue
        if due is None or queue is None:
            return
        turn = BotTurn(game_id, version, due.seat, table.settings.policy if table else "",
                       self.config.bot_budget_ms, due.kind, now_ms())
        try:
            await queue.schedule(turn, due.deadline_ms)
        except StoreUnavailable:
            self.metrics.bot_push_failures.inc()
            task = asyncio.ensure_future(self._schedule_later(turn, due.deadline_ms))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _schedule_later(self, turn: BotTurn, due_ms: int) -> None:
        queue = self.bot_turns.queue
        assert queue is not None
        for delay in (0.1, 0.5, 1, 2, 5, 10):
            await asyncio.sleep(delay)
            try:
                await queue.schedule(turn, due_ms)
                return
            except StoreUnavailable:
                self.metrics.bot_push_failures.inc()

    async def nudge(self, game_id: str, loaded: Loaded, bots: Sequence[BotSeatSpec], table: Table | None) -> None:
        """Schedule again a decision past its deadline by more than the claim time (its schedule
        was lost with a process that died right after the commit), once per claim time: reads of
        a late game must not flood the workers with copies of its turn."""
        due = None if table is None else table.due(loaded.match, bots)
        if due is None:
            return
        now, wait = now_ms(), self.config.bot_claim_idle_ms
        last = self._nudged.get(game_id)
        if now <= due.deadline_ms + wait or (last is not None and last[0] == loaded.version and now < last[1] + wait):
            return
        bounded_put(self._nudged, game_id, (loaded.version, now), self.config.snapshot_cache)
        await self.schedule(game_id, loaded.version, loaded.match, bots, table)

    def _count(self, state: str) -> int:
        total = 0
        for loaded in self.repository.cache.values():
            table = loaded.table
            if table is not None:
                total += sum({"away": table.away, "auto_play": table.auto}.get(state, table.connected))
        return total
