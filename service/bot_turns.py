"""Bot turns: each game's bot seats, and the turns they owe pushed to the bot queue after the
commit that makes them due (pushed again when one waits longer than the claim time)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

from gostop.engine import Match

from .auth import Caller, seat_in
from .bot_queue import BotQueue, BotTurn, now_ms
from .bot_seats import BotSeatSpec, bot_seats_from_doc, decider
from .clock import ClockSettings
from .config import Config
from .errors import denied, not_found
from .metrics import Metrics
from .repository import Repository, bounded_put
from .store_api import StoreUnavailable

BotSeats = tuple[BotSeatSpec, ...]


class BotTurns:
    """The bot seats of recent games and the pushes of their turns."""

    def __init__(self, repository: Repository, config: Config, metrics: Metrics) -> None:
        self.repository = repository
        self.config = config
        self.metrics = metrics
        self.queue: BotQueue | None = None
        """Where turns of bot seats are pushed for the bot workers (None: this server has no bot seats)."""
        self._seats: OrderedDict[str, BotSeats] = OrderedDict()
        """Each recent game's bot seats (fixed at creation)."""
        self._clocks: OrderedDict[str, ClockSettings | None] = OrderedDict()
        """Each recent game's clock settings, None for a game without a clock (fixed at creation)."""
        self._seen: OrderedDict[str, tuple[int, float]] = OrderedDict()
        """Per game: the version at which this process last saw (or pushed) a bot turn, and when
        (monotonic seconds): a turn seen waiting longer than the claim time is pushed again."""
        self._background: set[asyncio.Task[None]] = set()

    def remember(self, game_id: str, bots: BotSeats, clock: ClockSettings | None = None) -> None:
        bounded_put(self._seats, game_id, bots, self.config.snapshot_cache)
        bounded_put(self._clocks, game_id, clock, self.config.snapshot_cache)

    async def seats(self, game_id: str) -> BotSeats:
        """The game's bot seats: remembered, or read from its first log entry (``not_found`` for no game)."""
        known = self._seats.get(game_id)
        if known is not None:
            return known
        return (await self._setup(game_id))[0]

    async def clock(self, game_id: str) -> ClockSettings | None:
        """The game's clock settings (None: it has no clock), as ``seats``."""
        if game_id in self._clocks and game_id in self._seats:
            return self._clocks[game_id]
        return (await self._setup(game_id))[1]

    async def _setup(self, game_id: str) -> tuple[BotSeats, ClockSettings | None]:
        first = await self.repository.first_entry(game_id)
        if first is None:
            raise not_found(game_id)
        seats = bot_seats_from_doc(first.get("bots"))
        clock = ClockSettings.from_doc(first["clock"]) if first.get("clock") else None
        self.remember(game_id, seats, clock)
        return seats, clock

    async def caller_seat(self, caller: Caller, game_id: str, clock_move: bool = False
                          ) -> tuple[int | None, BotSeats | None]:
        """The caller's seat in the game (None: a spectator), a bot worker's only if it is a bot
        seat (or, with ``clock_move``, a person's seat of a clocked game: whether its decision is
        due is the caller's to check); and the game's bot seats when finding the seat read them."""
        if caller.bot_seat is None:
            return seat_in(caller, game_id), None
        bots = await self.seats(game_id)
        if not any(b.seat == caller.bot_seat for b in bots):
            if clock_move and await self.clock(game_id) is not None:
                return caller.bot_seat, bots
            raise denied("NOT_A_BOT_SEAT", f"seat {caller.bot_seat} of this game is not a bot seat: "
                         "a bot-worker key acts only for bot seats")
        return caller.bot_seat, bots

    async def push(self, game_id: str, version: int, match: Match, bots: BotSeats) -> None:
        """Queue the bot turn the game now waits for, if any. A failed push is retried in the
        background: the commit it follows stands whatever happens to the push."""
        due = decider(match, bots)
        if due is None or self.queue is None:
            return
        spec, kind = due
        turn = BotTurn(game_id, version, spec.seat, spec.bot, spec.budget_ms, kind, now_ms())
        bounded_put(self._seen, game_id, (version, time.monotonic()), self.config.snapshot_cache)
        try:
            await self.queue.push(turn)
        except StoreUnavailable:
            self.metrics.bot_push_failures.inc()
            task = asyncio.ensure_future(self._push_later(turn))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _push_later(self, turn: BotTurn) -> None:
        assert self.queue is not None
        for delay in (0.1, 0.5, 1, 2, 5, 10):
            await asyncio.sleep(delay)
            try:
                await self.queue.push(turn)
                return
            except StoreUnavailable:
                self.metrics.bot_push_failures.inc()

    async def nudge(self, game_id: str, version: int, match: Match, bots: BotSeats) -> None:
        """Push a bot turn again when this process has seen it wait longer than the claim time
        (its push was lost with a process that died right after its commit)."""
        if self.queue is None or decider(match, bots) is None:
            return
        seen = self._seen.get(game_id)
        now = time.monotonic()
        if seen is None or seen[0] != version:
            bounded_put(self._seen, game_id, (version, now), self.config.snapshot_cache)
        elif now - seen[1] >= self.config.bot_claim_idle_ms / 1000:
            await self.push(game_id, version, match, bots)
