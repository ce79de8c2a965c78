"""The bot runner: plays one or more seats of any game on any server through the API.

A bot (``gostop_client.bots.base.Bot``) sees its seat's ``engine.View`` (built from the
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

import argparse
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from engine import Action
from engine.render import action_text
from service.pb.gostop.v1 import game_pb2 as pb

from .bots.base import Bot
from .client import GameRef, GostopClient, GostopError, RoundOver, StaleVersion, WatchStream
from .convert import MatchSummary, match_from_pb, view_from_pb

__all__ = ["BotError", "RunReport", "SeatRunner", "add_bot_arguments", "bot_command", "run_seats"]

Seats = Mapping[int, tuple[str, Bot]]
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
        self.game_id = game if isinstance(game, str) else game.id
        self.seats = dict(seats)
        self.start_next_rounds = start_next_rounds
        self.max_rounds = max_rounds
        self.use_watch = watch
        self.poll_interval = poll_interval
        self.on_decision = on_decision
        self.report = RunReport(self.game_id, {seat: 0 for seat in self.seats})
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
        except (StaleVersion, RoundOver):
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


# ------------------------------------------------------------------------------ gostop bot


def add_bot_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop bot``."""
    parser.add_argument("--server", default="127.0.0.1:50051", help="HOST:PORT of the game service")
    parser.add_argument("--game", default=None, help="game id (default: the one the token names)")
    parser.add_argument("--token", action="append", required=True,
                        help="seat token of a seat to play (repeat for several seats)")
    parser.add_argument("--bot", default="greedy", help="bot name: random, greedy or mcts")
    parser.add_argument("--seed", type=int, default=0, help="bot seed (seat i's bot gets seed + i)")
    parser.add_argument("--tls-ca", default=None, help="PEM root certificates: connect with TLS")
    parser.add_argument("--tls", action="store_true", help="connect with TLS (system roots)")
    parser.add_argument("--no-next-round", action="store_true",
                        help="do not deal next rounds (wait for another seat to)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


def bot_command(args: argparse.Namespace) -> int:
    """``gostop bot``: play seats of a game with a bot until the match is finished."""
    from .bots import make_bot
    from .client import seat_of_token

    roots = open(args.tls_ca, "rb").read() if args.tls_ca else None  # noqa: SIM115
    tokens: list[str] = args.token
    try:
        game_id: str = args.game or seat_of_token(tokens[0])[0]
    except ValueError as exc:
        sys.stderr.write(f"gostop bot: --token: {exc}\n")
        return 2
    out = sys.stdout

    def said(seat: int, action: Action, result: pb.TurnResult) -> None:
        if not args.quiet:
            out.write(f"v{result.version} seat {seat} ({args.bot}): {action_text(action)}\n")
            if result.HasField("settlement"):
                out.write(f"round over: {result.settlement.outcome}, points {list(result.settlement.points)}\n")
            out.flush()

    try:
        with GostopClient(args.server, root_certificates=roots, tls=args.tls) as client:
            seats: dict[int, tuple[str, Bot]] = {}
            for token in tokens:
                seat = client.get_game(game_id, token=token).viewer
                seats[seat] = (token, make_bot(args.bot, seed=args.seed + seat))
            out.write(f"gostop bot: {args.bot} plays seat(s) {sorted(seats)} of game {game_id} on {args.server}\n")
            out.flush()
            report = run_seats(client, game_id, seats, start_next_rounds=not args.no_next_round, on_decision=said)
    except (GostopError, BotError) as exc:
        sys.stderr.write(f"gostop bot: {exc}\n")
        return 1
    summary = report.match
    totals = f", points {list(summary.points)}" if summary is not None else ""
    out.write(f"done at version {report.version}: {sum(report.decisions.values())} decisions"
              f"{', match finished' if report.finished else ''}{totals}\n")
    return 0
