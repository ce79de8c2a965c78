"""The bot runner: plays one or more seats of any game on any server through the API.

A bot (``gostop.bots.base.Bot``) sees its seat's ``engine.View`` (built from the
wire view with ``view_from_pb``) and its legal actions, exactly as it would in-process, so
it can sit at a table with people or other programs::

    with GostopClient("127.0.0.1:50051") as client:
        report = run_seats(client, game_id, {1: (token, make_bot("greedy"))})

The runner waits for the game to move (``WatchGame``, or polling), and whenever one of its
seats must decide it asks that seat's bot, submits the action at the view's version with a
request id, and on ``StaleVersion`` (someone else moved first) reads the game again. It
starts the next round of a match when a round ends (``start_next_rounds``) and returns when
the match is finished. ``gostop bot`` is its command line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gostop.engine import Action, View
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import MatchSummary, match_from_pb, view_from_pb

from .client import GameRef, GostopClient, WatchStream
from .errors import RoundOverError, StaleVersion

__all__ = ["BotError", "Chooser", "RunReport", "SeatRunner", "run_seats"]

class Chooser(Protocol):
    """What plays a seat: any ``gostop.bots`` bot, or anything else with a name and ``choose``."""

    name: str

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        """One of ``legal`` (never empty) for the seat ``view.viewer``."""
        ...


Seats = Mapping[int, tuple[str, Chooser]]
"""Seat → (its token, the bot that plays it)."""
DecisionHook = Callable[[int, Action, pb.TurnResult], None]


class BotError(RuntimeError):
    """A bot chose an action outside its legal actions."""


@dataclass
class RunReport:
    """What a run did."""

    game_id: str
    decisions: dict[int, int] = field(default_factory=dict)
    """Actions submitted per seat."""
    rounds_started: int = 0
    """Rounds this runner dealt with ``StartNextRound``."""
    stale: int = 0
    """Submissions refused as stale (someone moved first), each followed by a fresh read."""
    version: int = 0
    finished: bool = False
    """The match is over."""
    match: MatchSummary | None = None
    bots: dict[int, str] = field(default_factory=dict)
    """The name of the bot of each seat played."""

    def text(self) -> str:
        """The report for a person: the game and how far it went, then per seat the bot, its decisions
        and the match's points (money, wins) so far; the rounds dealt and stale submissions.

        >>> print(RunReport("g1", {1: 12}, version=30, finished=True, bots={1: "greedy"}).text())
        game g1: match finished at version 30
          seat 1 (greedy): 12 decisions
        """
        m = self.match
        head = f"game {self.game_id}: match {'finished' if self.finished else 'not finished'} at version {self.version}"
        if m is not None:
            head += f", round {m.round_no}" + (f" of {m.rounds}" if m.rounds else "")
        lines = [head]
        seats = sorted(set(self.decisions) | set(range(len(m.points) if m is not None else 0)))
        for seat in seats:
            name = self.bots.get(seat)
            parts = [_count(self.decisions[seat], "decision") if seat in self.decisions else "played elsewhere"]
            if m is not None:
                parts.append(f"{m.points[seat]:+d} points")
                if any(m.money):
                    parts.append(f"money {m.money[seat]:+d}")
                parts.append(f"{m.wins[seat]} won, {m.losses[seat]} lost, {m.draws[seat]} drawn")
            lines.append(f"  seat {seat}{f' ({name})' if name else ''}: {', '.join(parts)}")
        if self.rounds_started:
            lines.append(f"{_count(self.rounds_started, 'round')} dealt by this runner")
        if self.stale:
            lines.append(f"{_count(self.stale, 'stale submission')} (someone moved first: read again, chose again)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class SeatRunner:
    """Plays ``seats`` of one game until the match is finished (or ``stop()``, from any thread).

    ``start_next_rounds``: deal the next round when one ends (else wait for another seat to).
    ``max_rounds``: return once that round number is over (for open-ended matches).
    ``watch``: wait for others' moves with ``WatchGame`` (else poll every ``poll_interval`` s).
    ``on_decision(seat, action, result)`` is called after each committed action.
    """

    def __init__(
        self, client: GostopClient, game: GameRef, seats: Seats, *, start_next_rounds: bool = True,
        max_rounds: int | None = None, watch: bool = True, poll_interval: float = 0.2,
        on_decision: DecisionHook | None = None,
    ) -> None:
        if not seats:
            raise ValueError("no seats to play")
        self.client = client
        self.game_id = game if isinstance(game, str) else game.game_id
        self.seats = dict(seats)
        self.start_next_rounds = start_next_rounds
        self.max_rounds = max_rounds
        self.use_watch = watch
        self.poll_interval = poll_interval
        self.on_decision = on_decision
        self.report = RunReport(self.game_id, {seat: 0 for seat in self.seats},
                                bots={seat: bot.name for seat, (_, bot) in self.seats.items()})
        self._reader = self.seats[min(self.seats)][0]
        self._stopped = threading.Event()
        self._stream: WatchStream | None = None

    def stop(self) -> None:
        """End ``run()`` soon (it returns its report); safe from another thread."""
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.cancel()

    def run(self) -> RunReport:
        view: pb.GameView | None = None
        while not self._stopped.is_set():
            if view is None:
                view = self.client.get_game(self.game_id, token=self._reader)
            self._seen(view)
            if view.phase == pb.PHASE_OVER:
                if view.match.finished or (self.max_rounds is not None and view.match.round_no >= self.max_rounds):
                    self.report.finished = view.match.finished
                    break
                if self.start_next_rounds:
                    view = self._next_round(view)
                else:
                    self._wait(view.version)
                    view = None
                continue
            seat = view.to_move
            if seat not in self.seats:
                self._wait(view.version)
                view = None
            elif view.viewer != seat:
                view = self.client.get_game(self.game_id, token=self.seats[seat][0])
            else:
                view = self._decide(seat, view)
        return self.report

    def _seen(self, view: pb.GameView) -> None:
        self.report.version = max(self.report.version, view.version)
        self.report.match = match_from_pb(view.match)

    def _decide(self, seat: int, view: pb.GameView) -> pb.GameView | None:
        token, bot = self.seats[seat]
        engine_view = view_from_pb(view)
        legal = engine_view.legal_actions
        action = bot.choose(engine_view, legal)
        if action not in legal:
            raise BotError(f"bot {bot.name} of seat {seat} chose {action!r}, not one of its legal actions")
        try:
            result = self.client.submit_action(self.game_id, None, action, expected_version=view.version,
                                               token=token)
        except StaleVersion:
            self.report.stale += 1
            return None
        self.report.decisions[seat] += 1
        if self.on_decision is not None:
            self.on_decision(seat, action, result)
        return result.view

    def _next_round(self, view: pb.GameView) -> pb.GameView | None:
        try:
            result = self.client.start_next_round(self.game_id, None, expected_version=view.version,
                                                  token=self._reader)
        except (StaleVersion, RoundOverError):
            return None  # someone else dealt it (or the match just ended): read again
        self.report.rounds_started += 1
        return result.view

    def _wait(self, version: int) -> None:
        """Block until the game is past ``version`` (or the stream ends, or ``stop()``)."""
        if not self.use_watch:
            self._stopped.wait(self.poll_interval)
            return
        stream = self.client.watch(self.game_id, version, token=self._reader)
        self._stream = stream
        try:
            if not self._stopped.is_set():
                next(stream, None)
        finally:
            self._stream = None
            stream.close()


def run_seats(
    client: GostopClient, game: GameRef, seats: Seats, *, start_next_rounds: bool = True,
    max_rounds: int | None = None, watch: bool = True, on_decision: DecisionHook | None = None,
) -> RunReport:
    """Play ``seats`` ({seat: (token, bot)}) of ``game`` until the match is finished; see ``SeatRunner``."""
    return SeatRunner(client, game, seats, start_next_rounds=start_next_rounds, max_rounds=max_rounds,
                      watch=watch, on_decision=on_decision).run()
