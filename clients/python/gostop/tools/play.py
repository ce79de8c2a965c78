"""``gostop play``: a person against bots, in a plain-text terminal, through the game service.

Without ``--server`` it starts an in-process server (memory store) on a free loopback port.
It creates the game, lets the bot runner play the other seats, and shows the human the
table (hand, floor with 뻑 stacks, every seat's captured piles by kind with scores, 고
counts and multipliers, the stock), the events as they happen, numbered choices, and a
settlement screen that explains the points. ``q`` or end of input quits.

    gostop play --preset standard --players 2 --bots greedy --seed 7 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from gostop.bots.base import Bot
from gostop.client import Game, GostopClient, GostopError, RoundOverError, StaleVersion
from gostop.client.runner import SeatRunner
from gostop.engine import (
    CODE,
    KIND,
    PRESETS,
    Action,
    Kind,
    Phase,
    View,
)
from gostop.engine import events as ev
from gostop.engine.cards import GUKJIN, month_name
from gostop.engine.render import action_text, card_text, event_line, settlement_text
from gostop.engine.views import SeatView
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import MatchSummary, event_from_pb, match_from_pb, view_from_pb

__all__ = [
    "Quit",
    "action_text",
    "add_play_arguments",
    "card_text",
    "play",
    "play_command",
    "settlement_screen",
    "table_text",
]

WIDTH = 80


# ------------------------------------------------------------------------------- text


def _width(text: str) -> int:
    """Terminal columns of ``text`` (Hangul and other wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _wrap(head: str, items: Sequence[str], width: int = WIDTH, sep: str = "  ") -> list[str]:
    """``head`` then ``items`` on as many lines as needed, continuation lines indented under the items."""
    indent = " " * _width(head)
    lines, line, fresh = [], head, True
    for item in items:
        piece = item if fresh else sep + item
        if not fresh and _width(line + piece) > width - 1:
            lines.append(line)
            line, piece = indent, item
        line += piece
        fresh = False
    lines.append(line)
    return lines


def _wrap_text(text: str, width: int = WIDTH) -> list[str]:
    """A line of text broken at spaces to fit ``width`` (continuations keep its indentation)."""
    stripped = text.lstrip(" ")
    indent = text[: len(text) - len(stripped)]
    return _wrap(indent, stripped.split(" "), width, sep=" ")


def _cards(cards: Iterable[int]) -> list[str]:
    return [card_text(c) for c in cards]


_KINDS = ((Kind.GWANG, "광"), (Kind.YEOL, "열끗"), (Kind.TTI, "띠"), (Kind.PI, "피"))


def _piles(seat: SeatView, gukjin: str) -> dict[Kind, list[int]]:
    piles: dict[Kind, list[int]] = {k: [] for k, _ in _KINDS}
    for c in seat.captured:
        kind = Kind.PI if c == GUKJIN and gukjin == "converted" else KIND[c]
        piles[kind].append(c)
    return piles


def _seat_head(seat: SeatView, view: View, names: dict[int, str]) -> list[str]:
    parts = [f"seat {seat.seat} {names.get(seat.seat, '')}".rstrip()]
    if seat.seat == view.dealer:
        parts.append("선")
    if not seat.active:
        return [*parts, "sitting out"]
    cats = ", ".join(f"{name} {points}" for name, points in seat.score.categories())
    parts.append(f"score {seat.score.total}" + (f" ({cats})" if cats else ""))
    if seat.gos:
        parts.append(f"{seat.gos}고")
    if seat.multiplier > 1:
        parts.append(f"×{seat.multiplier}")
    if seat.ppeok:
        parts.append(f"뻑 {seat.ppeok}")
    if seat.seat != view.viewer:
        parts.append(f"hand {seat.hand_size}")
    return parts


def table_text(view: View, match: MatchSummary | None = None, names: dict[int, str] | None = None,
               version: int = 0) -> str:
    """The table as ``view.viewer`` sees it, in at most 80 columns."""
    names = names or {}
    head = f"== {view.rules_name}, {len(view.seats)} players"
    if match is not None:
        head += f", round {match.round_no}" + (f" of {match.rounds}" if match.rounds else "")
    if version:
        head += f", version {version}"
    lines = [head + " " + "=" * max(0, WIDTH - 1 - _width(head))]
    extra = [f"stock {view.stock_count}"]
    if view.carry:
        extra.append("this round counts ×2 (나가리 carry)")
    if view.gukjin != "open":
        extra.append(f"국진 {view.gukjin}")
    lines.append(" | ".join(extra))
    if view.payments:
        paid = [f"seat {p.payer} -> seat {p.payee} {p.points} ({p.reason})" for p in view.payments]
        lines += _wrap("paid at once: ", paid, sep=", ")
    lines += _wrap("floor: ", _cards(sorted(view.floor)) or ["(empty)"])
    for stack in view.stacks:
        who = f"뻑 of seat {stack.maker}" if stack.maker >= 0 else "dealt three"
        lines.append(f"       stack month {stack.month} {month_name(stack.month)}: {who} (take all with the 4th)")
    for seat in view.seats:
        lines.append("-" * 40)
        lines += _wrap("", _seat_head(seat, view, names), sep=" | ")
        if not seat.active:
            continue
        piles = _piles(seat, view.gukjin)
        for kind, label in _KINDS:
            cards = piles[kind]
            if not cards:
                continue
            count = f"{label} {seat.score.pi_value}" if kind is Kind.PI else f"{label} {len(cards)}"
            lines += _wrap(f"  {_pad(count, 7)} ", [CODE[c] for c in cards], sep=" ")
        declared = (("흔들기", seat.shakes), ("폭탄", seat.bombs))
        shown = [f"{label} month {m} {month_name(m)}" for label, months in declared for m in months]
        if shown:
            lines += _wrap("  ", shown, sep=", ")
        if seat.revealed and seat.seat != view.viewer:
            lines += _wrap("  shown: ", _cards(seat.revealed))
    me = view.seats[view.viewer] if 0 <= view.viewer < len(view.seats) else None
    lines.append("-" * 40)
    if me is not None and me.active:
        lines += _wrap(f"your hand ({len(me.hand)}): ", _cards(sorted(me.hand)))
        if me.spare_flips:
            lines.append(f"빈 내기 left: {me.spare_flips}")
    if match is not None and match.round_no > 1:
        lines.append(f"match points so far: {list(match.points)}")
    return "\n".join(lines)


def _decision_text(view: View) -> str:
    p = view.pending
    if p is None:
        return ""
    if p.phase is Phase.CHOOSE_HAND:
        return f"your {card_text(p.played)} matches two floor cards: which one do you take?"
    if p.phase is Phase.CHOOSE_FLIP:
        return f"the flipped {card_text(p.flipped)} matches two floor cards: which one do you take?"
    if p.phase is Phase.GO_STOP:
        me = view.seats[view.viewer]
        return f"you have {me.score.total} points ({me.gos}고 so far): go on or stop?"
    if p.phase is Phase.GUKJIN:
        return "you took 국진 (9월 열끗): keep it as a 열끗 or count it as a 쌍피?"
    if p.phase is Phase.SIT_OUT:
        return "four players: play this round or sit it out?"
    if p.phase is Phase.GWANG_SALE:
        return "you sit out: sell your 광 and 쌍피 to the players?"
    return "your turn:"


def _names_in(text: str, names: dict[int, str]) -> str:
    for seat, name in names.items():
        text = text.replace(f"seat {seat} ", f"seat {seat} {name} ").replace(f"seat {seat})", f"seat {seat} {name})")
    return text


def _event_text(event: ev.Event, viewer: int, names: dict[int, str]) -> str | None:
    if isinstance(event, ev.Dealt):
        return f"* new deal: 선 seat {event.dealer}" + (", ×2 carry" if event.carry else "") + (
            f", stock {event.stock_count}")
    if isinstance(event, ev.RoundSettled):
        return None  # the settlement screen explains it
    line = event_line(event)
    return _names_in(line, names)


def settlement_screen(settlement: pb.Settlement, match: MatchSummary, names: dict[int, str], viewer: int) -> str:
    """The end of a round: who won, how the points were counted, who pays what, the match so far."""
    from gostop.wire.convert import settlement_from_pb

    s = settlement_from_pb(settlement)
    lines = ["=" * 30 + " round over " + "=" * 37]
    if s.winner >= 0:
        who = "you win" if s.winner == viewer else f"seat {s.winner} {names.get(s.winner, '')} wins".replace("  ", " ")
        lines.append(f"{who} ({s.outcome}, {s.reason})")
        if s.score is not None:
            cats = ", ".join(f"{n} {v}" for n, v in s.score.categories()) or "-"
            lines.append(f"  base score {s.base}: {cats}")
            lines.append(f"  counts: 광 {s.score.gwang_count}, 열끗 {s.score.yeol_count}, 띠 {s.score.tti_count}, "
                         f"피 {s.score.pi_value}")
        if s.gos:
            lines.append(f"  {s.gos}고: base {s.base} becomes {s.go_score}")
    else:
        lines.append(f"나가리: nobody wins ({s.outcome}, {s.reason})")
    for text in settlement_text(s).splitlines():
        lines += _wrap_text(_names_in(text, names))
    mine = s.points[viewer] if 0 <= viewer < len(s.points) else 0
    lines.append(f"you {'win' if mine > 0 else 'lose' if mine < 0 else 'neither win nor lose'} "
                 f"{abs(mine)} point(s) this round")
    rounds = f"{match.round_no} of {match.rounds}" if match.rounds else f"{match.round_no}"
    lines.append(f"match after round {rounds}: points {list(match.points)}, wins {list(match.wins)}")
    return "\n".join(lines)


# ------------------------------------------------------------------------ the local server

"""The embedded server (``service.embedded``), under the name this module has always offered."""


# --------------------------------------------------------------------------------- the game


class Quit(Exception):
    """The person quit (``q`` or end of input)."""


_END = object()


class _Feed:
    """The human seat's event stream, read in a background thread into a queue."""

    def __init__(self, client: GostopClient, game: Game, seat: int) -> None:
        self.items: queue.Queue[Any] = queue.Queue()
        self.stream = client.watch(game, 0, seat)
        self.shown = 0
        """Highest version of an event taken."""
        self._head: pb.WatchGameResponse | None = None
        self.thread = threading.Thread(target=self._pump, name="gostop-events", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            for item in self.stream:
                self.items.put(item)
        except BaseException as exc:
            self.items.put(exc)
        self.items.put(_END)

    def peek(self, timeout: float) -> pb.WatchGameResponse | None:
        """The next event (left in place), or None after ``timeout`` seconds or at the end of the stream."""
        if self._head is None:
            try:
                item = self.items.get(timeout=timeout)
            except queue.Empty:
                return None
            if item is _END:
                self.items.put(_END)
                return None
            if isinstance(item, BaseException):
                raise item
            self._head = item
        return self._head

    def take(self) -> pb.WatchGameResponse:
        """The event ``peek`` returned."""
        item, self._head = self._head, None
        assert item is not None
        self.shown = max(self.shown, item.version)
        return item

    def close(self) -> None:
        self.stream.cancel()


@dataclass
class _Screen:
    out: IO[str]
    read: Callable[[str], str]
    names: dict[int, str]
    seat: int

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def ask(self, prompt: str) -> str:
        try:
            answer = self.read(prompt)
        except EOFError:
            raise Quit from None
        if answer.strip().lower() in ("q", "quit", "exit"):
            raise Quit
        return answer.strip()


def _say_event(screen: _Screen, item: pb.WatchGameResponse) -> None:
    text = _event_text(event_from_pb(item.event), screen.seat, screen.names)
    if text is not None:
        for line in text.splitlines():
            for part in _wrap_text(line):
                screen.say(part)


def _show_events(screen: _Screen, feed: _Feed, until: int, wait: float = 2.0) -> None:
    """Print the events of the versions up to ``until``: wait at most ``wait`` s for the first of
    ``until``, then take what is there (a later version's events stay for later)."""
    deadline = time.monotonic() + wait
    while True:
        timeout = max(0.0, deadline - time.monotonic()) if feed.shown < until else 0.05
        item = feed.peek(timeout)
        if item is None or item.version > until:
            return
        _say_event(screen, feed.take())


def _choose(screen: _Screen, view: View) -> Action:
    screen.say(_decision_text(view))
    actions = view.legal_actions
    for i, action in enumerate(actions, 1):
        screen.say(f"  {i:>2}) {action_text(action, view.seats[view.viewer].hand if view.viewer >= 0 else ())}")
    while True:
        answer = screen.ask(f"choose 1-{len(actions)} (q quits): ")
        if answer.isdigit() and 1 <= int(answer) <= len(actions):
            return actions[int(answer) - 1]
        screen.say(f"type a number from 1 to {len(actions)}, or q to quit")


def play(client: GostopClient, game: Game, seat: int, screen: _Screen) -> int:
    """The human's side of a game: returns when the match is finished (or raises ``Quit``)."""
    feed = _Feed(client, game, seat)
    try:
        while True:
            msg = client.get_game(game, seat)
            _show_events(screen, feed, msg.version)
            view, match = view_from_pb(msg), match_from_pb(msg.match)
            if msg.phase == pb.PHASE_OVER:
                screen.say(table_text(view, match, screen.names, msg.version))
                screen.say(settlement_screen(msg.settlement, match, screen.names, seat))
                if match.finished:
                    money = f", money {list(match.money)}" if any(match.money) else ""
                    screen.say(f"match over: points {list(match.points)}{money}")
                    return 0
                screen.ask("press Enter for the next round (q quits): ")
                with contextlib.suppress(StaleVersion, RoundOverError):
                    client.start_next_round(game, seat, expected_version=msg.version)
                continue
            if msg.to_move == seat and msg.legal_actions:
                screen.say(table_text(view, match, screen.names, msg.version))
                action = _choose(screen, view)
                try:
                    client.submit_action(game, seat, action, expected_version=msg.version)
                except StaleVersion:
                    screen.say("the game moved on meanwhile: look again")
                continue
            screen.say(f"... seat {msg.to_move} {screen.names.get(msg.to_move, '')} to move")
            while True:  # until the game moves on
                item = feed.peek(1.0)
                if item is not None and item.version > msg.version:
                    break
                if item is not None:
                    _say_event(screen, feed.take())
                elif client.get_game(game, seat).version > msg.version:
                    break
    finally:
        feed.close()


# -------------------------------------------------------------------------- command line


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop play``."""
    parser.add_argument("--server", default=None,
                        help="HOST:PORT of a game service (default: start one in this process)")
    parser.add_argument("--preset", choices=PRESETS, default="standard")
    parser.add_argument("--players", type=int, default=0, help="seats (default: the preset's)")
    parser.add_argument("--bots", default="greedy",
                        help="bot of the other seats; a comma-separated list gives one per seat in turn")
    parser.add_argument("--seed", type=int, default=None, help="deal seed (default: random)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds in the match (0: open-ended)")
    parser.add_argument("--seat", type=int, default=0, help="your seat")
    parser.add_argument("--api-key", default=None, help="API key for CreateGame on a server that needs one")
    parser.add_argument("--tls-ca", default=None, help="PEM root certificates: connect with TLS")


def play_command(args: argparse.Namespace, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """``gostop play``."""
    from gostop.bots import BotSpecError, check_bot, make_bot, split_specs

    out = stdout or sys.stdout
    source = stdin or sys.stdin
    try:
        for spec in split_specs(args.bots):
            check_bot(spec)
    except BotSpecError as exc:
        sys.stderr.write(f"gostop play: --bots: {exc}\n")
        return 2

    def read(prompt: str) -> str:
        out.write(prompt)
        out.flush()
        line = source.readline()
        if not line:
            raise EOFError
        return line

    if args.server is None:
        from gostop.service.logs import configure

        configure("json", "error")  # the embedded server's failed calls would clutter the screen
    local = None
    if args.server is None:
        from gostop.service.embedded import EmbeddedServer

        local = EmbeddedServer().start()
    target = local.target if local is not None else args.server
    roots = open(args.tls_ca, "rb").read() if args.tls_ca else None  # noqa: SIM115
    failure: list[BaseException] = []
    try:
        operator_key = local.operator_key if local is not None else None
        with GostopClient(target, api_key=args.api_key, operator_key=operator_key, root_certificates=roots) as client, \
                GostopClient(target, root_certificates=roots) as bot_client:
            game = client.create_game(args.preset, args.players, seed=args.seed, rounds=args.rounds)
            players = len(game.tokens)
            if not 0 <= args.seat < players:
                raise SystemExit(f"--seat must be 0-{players - 1}")
            kinds = split_specs(args.bots) or ["greedy"]
            bots: dict[int, tuple[str, Bot]] = {}
            names = {args.seat: "(you)"}
            others = [s for s in range(players) if s != args.seat]
            for i, s in enumerate(others):
                name = kinds[i % len(kinds)]
                bots[s] = (game.token(s), make_bot(name, seed=(args.seed or 0) + s))
                names[s] = f"({name})"
            out.write(f"gostop play: {args.preset}, {players} players, you are seat {args.seat}\n"
                      f"game {game.game_id} on {target}\n")
            runner = SeatRunner(bot_client, game.game_id, bots, start_next_rounds=False)

            def run_bots() -> None:
                try:
                    runner.run()
                except BaseException as exc:
                    failure.append(exc)

            thread = threading.Thread(target=run_bots, name="gostop-bots", daemon=True)
            thread.start()
            try:
                return play(client, game, args.seat, _Screen(out, read, names, args.seat))
            except Quit:
                out.write("\nbye\n")
                return 0
            except GostopError as exc:
                out.write(f"\nerror: {exc}\n")
                return 1
            finally:
                runner.stop()
                thread.join(10)
                if failure:
                    out.write(f"the bots stopped: {failure[0]!r}\n")
    finally:
        out.flush()
        if local is not None:
            local.stop()
