"""The turn clock of a table: its settings, each seat's bank, timeouts, away and auto-play flags,
and when the decision in progress falls due.

The engine knows no time. A clocked game's log entries carry the table's state after each step
(``Table.to_doc``), stamped with the server's clock, so the state at any version is read from the
entry of that version, and replays see the same events. What happens at a deadline is an
ordinary step submitted through the API by a bot worker (``service.games``); this module only says
who is due when, and what a step does to the clock. The design is in docs/clock.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gostop.engine import Match
from gostop.engine.table_events import AutoPlaySet, PlayCause, PlayedForSeat, SeatAway, TableEvent
from gostop.v1 import game_pb2 as pb

from .bot_seats import BotSeatSpec, check_bot_options, check_bot_spec
from .config import Config
from .errors import invalid

DECISION_MS = (1_000, 600_000)
BANK_MS = (0, 600_000)
AWAY_AFTER = (1, 100)
AUTO_PAUSE_MS = (0, 10_000)
DEFAULT_POLICY = "greedy"
DEFAULT_AWAY_AFTER = 2
DEFAULT_AUTO_PAUSE_MS = 1_000


def now_ms() -> int:
    """The server's clock, Unix milliseconds."""
    return int(time.time() * 1000)


def _refused(field: str, message: str) -> Exception:
    return invalid("BAD_CLOCK", message, field=f"clock.{field}")


@dataclass(frozen=True, slots=True)
class ClockSettings:
    """A table's clock, as ``CreateGame`` asked for it with defaults filled in."""

    decision_ms: int
    bank_ms: int
    policy: str
    away_after: int
    auto_pause_ms: int

    @classmethod
    def from_pb(cls, msg: pb.ClockSettings, config: Config) -> ClockSettings:
        """The settings of a request, each value held to its range (``BAD_CLOCK`` otherwise)."""
        checks = (("decision_ms", msg.decision_ms, DECISION_MS), ("bank_ms", msg.bank_ms, BANK_MS))
        for name, value, (low, high) in checks:
            if not low <= value <= high:
                raise _refused(name, f"{name} must be {low:,} to {high:,} milliseconds (got {value:,})")
        away_after = msg.away_after or DEFAULT_AWAY_AFTER
        if not AWAY_AFTER[0] <= away_after <= AWAY_AFTER[1]:
            raise _refused("away_after", f"away_after must be {AWAY_AFTER[0]} to {AWAY_AFTER[1]} timeouts "
                           f"(0 takes {DEFAULT_AWAY_AFTER}; got {msg.away_after})")
        pause = msg.auto_pause_ms if msg.HasField("auto_pause_ms") else DEFAULT_AUTO_PAUSE_MS
        if not AUTO_PAUSE_MS[0] <= pause <= AUTO_PAUSE_MS[1]:
            raise _refused("auto_pause_ms", f"auto_pause_ms must be {AUTO_PAUSE_MS[0]:,} to {AUTO_PAUSE_MS[1]:,} "
                           f"milliseconds (got {pause:,})")
        policy = msg.policy or DEFAULT_POLICY
        if policy.startswith("remote:"):
            raise _refused("policy", "the clock's policy is a built-in bot (random, greedy, mcts) or a plugin "
                           "the server allows, not a remote bot")
        check_bot_spec(policy, config, field="clock.policy")
        check_bot_options(policy, config.bot_budget_ms, field="clock.policy")
        return cls(msg.decision_ms, msg.bank_ms, policy, away_after, pause)

    def to_pb(self) -> pb.ClockSettings:
        return pb.ClockSettings(decision_ms=self.decision_ms, bank_ms=self.bank_ms, policy=self.policy,
                                away_after=self.away_after, auto_pause_ms=self.auto_pause_ms)

    def to_doc(self) -> list[Any]:
        return [self.decision_ms, self.bank_ms, self.policy, self.away_after, self.auto_pause_ms]

    @classmethod
    def from_doc(cls, doc: Sequence[Any]) -> ClockSettings:
        decision, bank, policy, away_after, pause = doc
        return cls(int(decision), int(bank), str(policy), int(away_after), int(pause))


@dataclass(frozen=True, slots=True)
class Due:
    """The decision the clock runs for: ``seat``'s, of ``kind`` (``act`` or ``next_round``),
    begun at ``started_ms``; its bank starts at ``bank_from_ms``; the table's bot makes it at
    ``deadline_ms`` (for ``cause``) if the seat has not."""

    seat: int
    kind: str
    started_ms: int
    bank_from_ms: int
    deadline_ms: int
    cause: PlayCause


@dataclass(frozen=True, slots=True)
class Table:
    """A clocked table after a step: its settings, when the decision in progress began, and per
    seat the bank left this round, the timeouts in a row, the away and auto-play flags, and
    whether someone holds a stream of it (``connected``)."""

    settings: ClockSettings
    started_ms: int
    banks: tuple[int, ...]
    timeouts: tuple[int, ...]
    away: tuple[bool, ...]
    auto: tuple[bool, ...]
    connected: tuple[bool, ...]

    @classmethod
    def new(cls, settings: ClockSettings, players: int, at_ms: int) -> Table:
        return cls(settings, at_ms, (settings.bank_ms,) * players, (0,) * players, (False,) * players,
                   (False,) * players, (False,) * players)

    def to_doc(self) -> dict[str, Any]:
        return {"s": self.settings.to_doc(), "at": self.started_ms, "bank": list(self.banks),
                "out": list(self.timeouts), "away": [int(a) for a in self.away], "auto": [int(a) for a in self.auto],
                "on": [int(c) for c in self.connected]}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Table:
        players = len(doc["bank"])
        return cls(ClockSettings.from_doc(doc["s"]), int(doc["at"]), tuple(int(b) for b in doc["bank"]),
                   tuple(int(t) for t in doc["out"]), tuple(bool(a) for a in doc["away"]),
                   tuple(bool(a) for a in doc["auto"]), tuple(bool(c) for c in doc.get("on", [0] * players)))

    def due(self, match: Match, bots: Sequence[BotSeatSpec]) -> Due | None:
        """The decision a person's seat owes now and when it falls due (None: nobody's, or a bot
        seat's, which its own bot makes)."""
        seat, kind = _decider(match, bots)
        if seat is None:
            return None
        if self.away[seat] or self.auto[seat]:
            deadline = self.started_ms + self.settings.auto_pause_ms
            return Due(seat, kind, self.started_ms, deadline, deadline, "away" if self.away[seat] else "auto_play")
        bank_from = self.started_ms + self.settings.decision_ms
        return Due(seat, kind, self.started_ms, bank_from, bank_from + self.banks[seat], "timeout")

    def after_step(self, seat: int, action: int | None, forced: Due | None, new_round: bool, at_ms: int
                   ) -> tuple[Table, list[TableEvent], list[TableEvent]]:
        """The table after ``seat``'s step at ``at_ms`` (``action``'s id; None: the next round
        dealt), made by the table's bot when ``forced`` (the decision that fell due); and the
        events to log before and after the step's own."""
        before: list[TableEvent] = []
        after: list[TableEvent] = []
        banks, timeouts, away, auto = list(self.banks), list(self.timeouts), list(self.away), list(self.auto)
        if forced is not None:
            before.append(PlayedForSeat(seat, self.settings.policy, -1 if action is None else action, forced.cause))
            if forced.cause == "timeout":
                banks[seat] = 0
                timeouts[seat] += 1
                if timeouts[seat] >= self.settings.away_after and not away[seat]:
                    away[seat] = True
                    after.append(SeatAway(seat, True))
        else:
            over = at_ms - self.started_ms - self.settings.decision_ms
            if over > 0:
                banks[seat] = max(0, banks[seat] - over)
            timeouts[seat] = 0
            if away[seat]:
                away[seat] = False
                after.append(SeatAway(seat, False))
            if auto[seat]:
                auto[seat] = False
                after.append(AutoPlaySet(seat, False))
        if new_round:
            banks = [self.settings.bank_ms] * len(banks)
        return (replace(self, started_ms=at_ms, banks=tuple(banks), timeouts=tuple(timeouts), away=tuple(away),
                        auto=tuple(auto)), before, after)

    def with_connected(self, seat: int, connected: bool) -> Table:
        """The table with ``seat`` connected or not."""
        flags = list(self.connected)
        flags[seat] = connected
        return replace(self, connected=tuple(flags))

    def with_auto_play(self, seat: int, on: bool) -> Table:
        """The table with ``seat``'s auto-play turned ``on`` or off (the decision in progress keeps
        its start: turning auto-play on makes it fall due a pause after it began)."""
        auto = list(self.auto)
        auto[seat] = on
        return replace(self, auto=tuple(auto))

    def to_pb(self, match: Match, bots: Sequence[BotSeatSpec], out: pb.GameView) -> None:
        """The clock's part of a view: ``out.clock`` and each seat's bank and flags."""
        clock = out.clock
        clock.settings.CopyFrom(self.settings.to_pb())
        due = self.due(match, bots)
        if due is None:
            clock.seat = -1
        else:
            clock.seat = due.seat
            clock.started_ms = due.started_ms
            clock.bank_from_ms = due.bank_from_ms
            clock.deadline_ms = due.deadline_ms
        for seat_view in out.seats:
            n = seat_view.seat
            seat_view.bank_ms = self.banks[n]
            seat_view.away = self.away[n]
            seat_view.auto_play = self.auto[n]
            seat_view.timeouts = self.timeouts[n]
            seat_view.connected = self.connected[n]


def _decider(match: Match, bots: Sequence[BotSeatSpec]) -> tuple[int | None, str]:
    """The seat that decides next and how (``act``, or ``next_round`` at a finished round: the first
    person's seat deals it), None when the match is over."""
    if match.finished:
        return None, "act"
    bot_seats = {b.seat for b in bots}
    if match.round.over:
        people = [s for s in range(match.rules.players) if s not in bot_seats]
        return (people[0], "next_round") if people else (None, "next_round")
    seat = match.round.to_move
    return (None, "act") if seat in bot_seats else (seat, "act")
