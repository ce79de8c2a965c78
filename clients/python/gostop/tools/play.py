"""``gostop play``: a person against bots, in a plain-text terminal, through the game service.

Without ``--server`` it starts an in-process server (memory store) on a free loopback port.
It creates the game, lets the bot runner play the other seats, and shows the human the
table (hand, floor with 뻑 stacks, every seat's captured cards by kind with their counts and
its score by category, 고 counts and multipliers, the stock), the events as they happen,
numbered choices (each hand card with the floor cards it would take), and a settlement screen
that explains the points, payer by payer. Cards go by the names people use (똥광, 비광, ...)
and the terms are the Korean ones (피박, 광박, 자뻑, ...). ``q`` or end of input quits.

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
    KIND,
    MONTH,
    PRESETS,
    Action,
    Bomb,
    FlipOnly,
    Go,
    Kind,
    Phase,
    PlayCard,
    Stop,
    View,
)
from gostop.engine import events as ev
from gostop.engine.cards import GUKJIN, NAME, PI_VALUE, month_name
from gostop.engine.determinize import stop_settlement
from gostop.engine.render import (
    card_name,
    card_names,
    event_line,
    explain,
    menu_text,
    person_voice,
    score_text,
    seat_label,
    term,
)
from gostop.engine.rules import Rules
from gostop.engine.scoring import Score, go_score
from gostop.engine.settlement import Bill, Settlement
from gostop.engine.table_events import TableEvent
from gostop.engine.views import SeatView
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import MatchSummary, event_from_pb, match_from_pb, view_from_pb

__all__ = [
    "Quit",
    "add_play_arguments",
    "event_lines",
    "play",
    "play_command",
    "prompt_text",
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


def _wrap_text(text: str, width: int = WIDTH, hang: int = 0) -> list[str]:
    """A line of text broken at spaces to fit ``width`` (continuations keep its indentation,
    ``hang`` columns deeper)."""
    stripped = text.lstrip(" ")
    indent = text[: len(text) - len(stripped)]
    lines = _wrap(indent, stripped.split(" "), width - hang, sep=" ")
    return lines[:1] + [" " * hang + line for line in lines[1:]]


def _grouped(cards: Iterable[int]) -> list[str]:
    """Card names in id order, a name held more than once shown once with its count: ``4월 피 ×2``."""
    counts: dict[str, int] = {}
    for c in sorted(cards):
        counts[card_name(c)] = counts.get(card_name(c), 0) + 1
    return [name if n == 1 else f"{name} ×{n}" for name, n in counts.items()]


def _listed(head: str, names: Sequence[str]) -> list[str]:
    """``head`` then ``names`` separated by commas, wrapped under the first name (under the head's
    indentation instead when a long head would leave the names a narrow column)."""
    items = [f"{n}," for n in names[:-1]] + list(names[-1:])
    lines = _wrap(head, items, sep=" ")
    if len(lines) > 1 and _width(head) > 24:
        indent = " " * (4 + len(head) - len(head.lstrip(" ")))
        return [head.rstrip(), *_wrap(indent, items, sep=" ")]
    return lines


_KINDS = ((Kind.GWANG, "광"), (Kind.YEOL, "열끗"), (Kind.TTI, "띠"), (Kind.PI, "피"))


def _piles(seat: SeatView, gukjin: str) -> dict[Kind, list[int]]:
    piles: dict[Kind, list[int]] = {k: [] for k, _ in _KINDS}
    for c in seat.captured:
        kind = Kind.PI if c == GUKJIN and gukjin == "converted" else KIND[c]
        piles[kind].append(c)
    return piles


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _pile_lines(seat: SeatView, gukjin: str) -> list[str]:
    """A seat's captured cards by kind, each kind with its card count and the cards' names
    (the 피 line also with its 피 value, which the score counts: a 쌍피 is 2 피, a 쓰리피 3)."""
    lines: list[str] = []
    piles = _piles(seat, gukjin)
    for kind, label in _KINDS:
        cards = piles[kind]
        if not cards:
            continue
        head = f"  {label} {_plural(len(cards), 'card')}"
        if kind is Kind.PI and seat.score.pi_value != len(cards):
            doubled = ["쌍피 = 2" if any(PI_VALUE[c] == 2 or c == GUKJIN for c in cards) else "",
                       "쓰리피 = 3" if any(PI_VALUE[c] == 3 for c in cards) else ""]
            head += f" = {seat.score.pi_value} 피 ({', '.join(d for d in doubled if d)})"
        names = [n.replace(NAME[GUKJIN], f"{NAME[GUKJIN]} (쌍피)") for n in _grouped(cards)] \
            if kind is Kind.PI else _grouped(cards)
        lines += _listed(head + ": ", names)
    return lines


def _seat_head(seat: SeatView, view: View, names: dict[int, str]) -> list[str]:
    parts = [f"seat {seat.seat} {names.get(seat.seat, '')}".rstrip()]
    if seat.seat == view.dealer:
        parts.append("선")
    if not seat.active:
        return [*parts, "sitting out"]
    parts.append(score_text(seat.score))
    if seat.gos:
        parts.append(f"{seat.gos}고")
    if seat.multiplier > 1:
        parts.append(f"×{seat.multiplier} 흔들기/폭탄")
    if seat.ppeok:
        parts.append(f"뻑 {seat.ppeok}")
    if seat.seat != view.viewer:
        parts.append(f"hand {seat.hand_size}")
    return parts


def table_text(view: View, match: MatchSummary | None = None, names: dict[int, str] | None = None) -> str:
    """The table as ``view.viewer`` sees it, in at most 80 columns: cards by their everyday names."""
    names = names or {}
    head = f"== {view.rules_name}, {len(view.seats)} players"
    if match is not None:
        head += f", round {match.round_no}" + (f" of {match.rounds}" if match.rounds else "")
    lines = [head + " " + "=" * max(0, WIDTH - 1 - _width(head))]
    extra = [f"stock {view.stock_count}"]
    if view.carry:
        extra.append("this round counts ×2 (나가리 carry)")
    if view.gukjin != "open":
        extra.append(f"국진 {view.gukjin}")
    lines.append(" | ".join(extra))
    if view.payments:
        paid = [_names_in(f"seat {p.payer} -> seat {p.payee} {p.points} ({term(p.reason)})", names)
                for p in view.payments]
        lines += _listed("paid at once: ", paid)
    lines += _wrap("floor: ", [card_name(c) for c in sorted(view.floor)] or ["(empty)"])
    for stack in view.stacks:
        who = _names_in(f"뻑 of seat {stack.maker} ", names).rstrip() if stack.maker >= 0 else "dealt three"
        lines.append(f"       stack month {stack.month} {month_name(stack.month)}: {who} (take all with the 4th)")
    for seat in view.seats:
        lines.append("-" * 40)
        lines += _wrap("", _seat_head(seat, view, names), sep=" | ")
        if not seat.active:
            continue
        lines += _pile_lines(seat, view.gukjin)
        declared = (("흔들기", seat.shakes), ("폭탄", seat.bombs))
        shown = [f"{label} month {m} {month_name(m)}" for label, months in declared for m in months]
        if shown:
            lines += _wrap("  ", shown, sep=", ")
        if seat.revealed and seat.seat != view.viewer:
            lines += _listed("  shown: ", [card_name(c) for c in seat.revealed])
    me = view.seats[view.viewer] if 0 <= view.viewer < len(view.seats) else None
    lines.append("-" * 40)
    if me is not None and me.active:
        lines += _wrap(f"your hand ({len(me.hand)}): ", [card_name(c) for c in sorted(me.hand)])
        if me.spare_flips:
            lines.append(f"빈 내기 left: {me.spare_flips}")
    if match is not None and match.round_no > 1:
        lines += _by_seat("match points so far: ", match.points, view.viewer, names)
    return "\n".join(lines)


def _decision_text(view: View) -> str:
    p = view.pending
    if p is None:
        return ""
    if p.phase is Phase.CHOOSE_HAND:
        return f"your {card_name(p.played)} matches two floor cards: which one do you take?"
    if p.phase is Phase.CHOOSE_FLIP:
        return f"the flipped {card_name(p.flipped)} matches two floor cards: which one do you take?"
    if p.phase is Phase.GO_STOP:
        me = view.seats[view.viewer]
        so_far = f"{me.gos}고 so far" if me.gos else "no 고 yet"
        return f"you have {me.score.total} points ({so_far}): go on (고) or stop (스톱)?"
    if p.phase is Phase.GUKJIN:
        return "you took 국진 (9월 열끗): keep it as a 열끗 or count it as a 쌍피?"
    if p.phase is Phase.SIT_OUT:
        return "four players: play this round or sit it out?"
    if p.phase is Phase.GWANG_SALE:
        return "you sit out: sell your 광 and 쌍피 to the players (광팔기)?"
    return "your turn (-> what each card takes from the floor):"


def _takes(view: View, month: int, with_three: bool = False) -> str:
    """What a card of ``month`` played now takes from the floor (before the flip)."""
    same = sorted(c for c in view.floor if MONTH[c] == month)
    if not same:
        return "stays on the floor"
    if len(same) == 2 and not with_three:
        return f"takes {card_name(same[0])} or {card_name(same[1])} (you choose)"
    taken = f"takes {card_names(same)}"
    stack = next((s for s in view.stacks if s.month == month), None)
    if stack is not None and stack.maker >= 0:
        own = stack.maker == view.viewer
        taken += f" ({'자뻑' if own else '뻑'}: +{2 if own else 1} 피 from each)"
    return taken


def _hint(view: View, action: Action) -> str:
    """What an action does, for the menu: the floor cards a hand card takes, the points of a stop."""
    if isinstance(action, PlayCard):
        return _takes(view, MONTH[action.card]) if MONTH[action.card] else ""
    if isinstance(action, Bomb):
        return _takes(view, action.month, with_three=True) + " with your three, +1 피 from each"
    if isinstance(action, FlipOnly):
        return "plays no card: flips from the stock"
    me = view.seats[view.viewer]
    if isinstance(action, Stop):
        return f"ends the round: you win {_plural(_won(stop_settlement(view)), 'point')} (the bill above)"
    if isinstance(action, Go) and view.rules is not None:
        more = "" if not view.rules.gobak else f"; {_gobak(view.rules)} if you lose"
        return f"play on as {me.gos + 1}고{more}"
    return ""


def _menu(view: View) -> list[str]:
    """The numbered legal actions, each with its hint aligned after it."""
    hand = view.seats[view.viewer].hand if 0 <= view.viewer < len(view.seats) else ()
    texts = [f"  {i:>2}) {menu_text(a, hand)}" for i, a in enumerate(view.legal_actions, 1)]
    hints = [_hint(view, a) for a in view.legal_actions]
    hinted = [(_width(t), _width(h)) for t, h in zip(texts, hints, strict=True) if h]
    column = max((t for t, _ in hinted), default=0) + 1
    column = min(column, WIDTH - 4 - max((h for _, h in hinted), default=0))
    lines = []
    for text, hint in zip(texts, hints, strict=True):
        if not hint:
            lines.append(text)
        elif _width(text) < column and column + 3 + _width(hint) <= WIDTH - 1:
            lines.append(f"{_pad(text, column)}-> {hint}")
        else:
            lines += [text, f"{' ' * 8}-> {hint}"]
    return lines


def _names_in(text: str, names: dict[int, str]) -> str:
    for seat, name in names.items():
        text = text.replace(f"seat {seat} ", f"seat {seat} {name} ").replace(f"seat {seat})", f"seat {seat} {name})")
    return text


def event_lines(event: ev.Event | TableEvent, names: dict[int, str], *, hands: bool = False) -> list[str]:
    """One event as a person reads it (``render.person_voice``), in lines that fit the screen; none
    for the settlement, which has its screen (``settlement_screen``). ``hands``: a deal also lists
    every hand and the floor, for a watcher who sees them all (``gostop demo``)."""
    if isinstance(event, ev.RoundSettled):
        return []
    lines = [part for line in event_line(event, person_voice(names)).splitlines() for part in _wrap_text(line)]
    if hands and isinstance(event, ev.Dealt):
        for seat, hand in enumerate(event.hands):
            lines += _listed(f"  {seat_label(seat, names)} holds: ", [card_name(c) for c in sorted(hand)])
        lines += _listed("  floor: ", [card_name(c) for c in sorted(event.floor)] or ["(empty)"])
    return lines


def _by_seat(head: str, values: Sequence[int], viewer: int, names: dict[int, str]) -> list[str]:
    """``head`` then ``you -9, seat 1 (greedy) +9`` (a signed number per seat), wrapped between seats."""
    items = [f"{'you' if s == viewer else seat_label(s, names)} {v:+d}" for s, v in enumerate(values)]
    return _wrap(head, [*(f"{i}," for i in items[:-1]), items[-1]], sep=" ")


class _Speaker:
    """Seats in sentences: the viewer is "you" (``you have``), the others "seat 1 (greedy)" (``has``)."""

    def __init__(self, viewer: int, names: dict[int, str]) -> None:
        self.viewer, self.names = viewer, names

    def __call__(self, seat: int, verb: str = "", third: str = "") -> str:
        """The seat, then ``verb`` conjugated (``third``: its third-person form, default verb + s)."""
        you = seat == self.viewer
        name = "you" if you else seat_label(seat, self.names)
        if not verb:
            return name
        return f"{name} {verb if you else third or verb + 's'}"


def _outcome_text(s: Settlement, view: View, say: _Speaker) -> str:
    """The first line of the settlement: who won, and how."""
    w = say(s.winner, "win")
    if s.outcome == "stop":
        how = "by a 고 on the last turn, which counts as a stop" if s.reason == "last_go" else \
            f"by stopping (스톱) at {s.base}"
        return f"{w} {how}"
    if s.outcome == "best_score":
        return f"{w} with the best score ({s.base}) when the cards ran out"
    if s.outcome == "instant_win":
        return f"{w} at once: {explain(s.reason)}"
    if s.outcome == "instant_loss":
        losers = [seat.seat for seat in view.seats if seat.ppeok >= 3 and seat.seat != s.winner]
        loser = say(losers[0], "lose") if losers else "a seat loses"
        return f"{loser} at once, {explain(s.reason)}; {say(s.winner, 'win')} with {s.base}"
    return f"{w} ({s.outcome}, {s.reason})"


def _score_row(score: Score) -> str:
    """A base score by category, each with the cards that make it, on as many lines as it needs:
    ``score 9 = 광 3 (3 광) + 피 6 (15 피 - 9)``."""
    detail = {
        "gwang": f"{score.gwang_count} 광" + (" with 비광" if score.has_bigwang and score.gwang_count == 3 else ""),
        "yeol": f"{score.yeol_count} 열끗 - 4", "tti": f"{score.tti_count} 띠 - 4", "pi": f"{score.pi_value} 피 - 9",
    }
    parts = [f"{term(n)} {v}" + (f" ({detail[n]})" if n in detail else "") for n, v in score.categories()]
    items = [*(f"{p} +" for p in parts[:-1]), *parts[-1:]] or ["0"]
    return "\n".join(_wrap(f"score {score.total} = ", items, width=WIDTH - 2, sep=" "))


def _go_line(s: Settlement, rules: Rules | None) -> str:
    """The 고 addition: ``2고: 9 + 2 = 11`` (``no 고``)."""
    if not s.gos:
        return "no 고"
    base, n = s.base, s.gos
    formula = ""
    if rules is not None:
        add = 2 if rules.go_scoring == "standard" and n > 2 else n
        formula = f"{base} + {n}" if n <= 2 else f"({base} + {add}) × {1 << (n - 2)}"
    plain = go_score(base, n, rules.go_scoring) if rules is not None else s.go_score
    text = f"{n}고: " + (f"{formula} = {plain}" if formula else f"{plain}")
    if plain != s.go_score:
        text += f", raised to {s.go_score} (the least such a win pays)"
    return text


def _winner_lines(s: Settlement, view: View, say: _Speaker) -> list[str]:
    """What the winner's side brings to every bill: score by category, 고, the winner's multipliers."""
    rules, w = view.rules, s.winner
    applied = {f.name: f.value for f in s.winner_factors}
    lines = []
    if s.outcome == "instant_win":
        lines.append(f"a fixed {s.go_score} points: no 고, 흔들기/폭탄, 멍박 or 박 count")
    else:
        assert s.score is not None
        lines.append(_score_row(s.score))
        lines.append(_go_line(s, rules))
        seat = view.seats[w]
        declared = [f"{label} month {m} {month_name(m)}" for label, months in (("흔들기", seat.shakes),
                                                                             ("폭탄", seat.bombs)) for m in months]
        if "shake_bomb" in applied:
            lines.append(f"×{applied['shake_bomb']} 흔들기/폭탄: {', '.join(declared) or 'declared'}")
        elif rules is not None and rules.shake_bomb:
            lines.append(f"no 흔들기/폭탄: {say(w, 'did', 'did')} not shake or bomb")
        yeol = s.score.yeol_count
        if "meongbak" in applied:
            lines.append(f"×2 멍박 (멍따): {say(w, 'have', 'has')} {yeol} 열끗"
                         + (f", {rules.meongbak_min_yeol} or more" if rules is not None else ""))
        elif rules is not None and rules.meongbak:
            lines.append(f"no 멍박: {say(w, 'have', 'has')} {yeol} 열끗, fewer than {rules.meongbak_min_yeol}")
    if "nagari_carry" in applied:
        lines.append("×2 나가리: this round follows a 나가리 and counts double")
    return lines


def _bak_lines(s: Settlement, bill: Bill, view: View, say: _Speaker) -> list[str]:
    """Each 박 of one loser, applied (×2 and why) or not (and why not)."""
    rules, w, loser = view.rules, s.winner, bill.seat
    applied = {f.name: f.value for f in bill.factors}
    seat = view.seats[loser]
    pi, gwang = seat.score.pi_value, seat.score.gwang_count
    lines = []
    span = ""  # the 피 values that make a 피박
    if rules is not None:
        low = 1 if rules.pibak_zero_exempt else 0
        span = f"{low}-{rules.pibak_max_pi}" if low < rules.pibak_max_pi else f"{rules.pibak_max_pi}"
    if "pibak" in applied:
        needs_pi = rules is not None and rules.pibak_requires_winner_pi
        scored = f"{say(w, 'scored', 'scored')} with 피 and " if needs_pi else ""
        lines.append(f"×2 피박: {scored}{say(loser, 'have', 'has')} {pi} 피" + (f" (피박: {span})" if span else ""))
    elif rules is not None and rules.pibak:
        if rules.pibak_requires_winner_pi and s.score is not None and s.score.pi == 0:
            why = f"{say(w, 'did', 'did')} not score with 피"
        elif pi == 0 and rules.pibak_zero_exempt:
            why = f"{say(loser, 'have', 'has')} no 피 at all (exempt)"
        else:
            why = f"{say(loser, 'have', 'has')} {pi} 피 (피박: {span})"
        lines.append(f"no 피박: {why}")
    if "gwangbak" in applied:
        lines.append(f"×2 광박: {say(w, 'scored', 'scored')} with 광 and {say(loser, 'have', 'has')} no 광")
    elif rules is not None and rules.gwangbak:
        why = f"{say(w, 'did', 'did')} not score with 광" if s.score is not None and s.score.gwang == 0 else \
            f"{say(loser, 'have', 'has')} {gwang} 광"
        lines.append(f"no 광박: {why}")
    gobak = _gobak(rules)
    if "gobak" in applied:
        lines.append(f"×2 {gobak}: {say(loser, 'went', 'went')} {seat.gos}고 and lost")
    elif bill.covers != (loser,) and len(s.bills) > 1:  # 3 players: one loser pays both bills, or none
        if bill.covers:
            others = ", ".join(say(o) for o in bill.covers if o != loser)
            pays = "pay" if loser == view.viewer else "pays"
            lines.append(f"{gobak}: {say(loser, 'went', 'went')} 고 last and {pays} for {others} too")
    elif rules is not None and rules.gobak:
        lines.append(f"no {gobak}: {say(loser, 'did', 'did')} not go")
    if "own_shake_bomb" in applied:
        shook = say(loser, "shook or bombed", "shook or bombed")
        lines.append(f"×{applied['own_shake_bomb']} own 흔들기/폭탄: {shook} (counts even when losing)")
    return lines


def _gobak(rules: Rules | None) -> str:
    """The name of 고박 in these rules (``classic`` calls it 독박)."""
    return "독박" if rules is not None and rules.name == "classic" else "고박"


def _bill_lines(s: Settlement, bill: Bill, view: View, say: _Speaker) -> list[str]:
    """One payer's breakdown: this loser's 박 (each applied or not, and why), then the product of
    the winner's points and every multiplier, and what this seat pays."""
    head = f"{say(bill.seat, 'pay', 'pays')} {say(s.winner)} {_plural(bill.pays, 'point')}{_money(s, bill.pays)}:"
    payer = next((b.seat for b in s.bills if bill.seat in b.covers and b.seat != bill.seat), -1)
    if payer >= 0:
        head = (f"{say(bill.seat, 'owe', 'owes')} {say(s.winner)} {_plural(bill.points, 'point')}, "
                f"paid by {say(payer)} ({_gobak(view.rules)}):")
    rows = [] if s.outcome == "instant_win" else _bak_lines(s, bill, view, say)  # a fixed win has no 박
    factors = [*s.winner_factors, *bill.factors]
    product = "".join(f" × {f.value} ({term(f.name)})" for f in factors)
    rows.append(f"points: {s.go_score}{product} = {bill.points}" if product else f"points: {bill.points}")
    covered = [b for b in s.bills if b.seat in bill.covers and b.seat != bill.seat]
    if covered:
        rows.append(f"total: {bill.points} + " + " + ".join(f"{b.points} for {say(b.seat)}" for b in covered)
                    + f" = {bill.pays}")
    return [head] + [f"  {r}" for r in rows]


def _money(s: Settlement, points: int) -> str:
    """`` (money 1400)``: the money of ``points`` where the rules give a point a value (else nothing)."""
    return f" (money {points * s.point_value})" if s.point_value else ""


def _won(s: Settlement) -> int:
    """The points the winner's bills pay it (instant payments aside)."""
    return sum(b.pays for b in s.bills)


def _stop_bill(view: View, names: dict[int, str]) -> list[str]:
    """The whole bill of a stop now, as the engine would settle it (``determinize.stop_settlement``),
    in the words of the settlement screen: what the win is worth (score by category, 고, the
    winner's multipliers, each applied or not and why), then each payer's bill (its 박, the product
    with every factor named, the points and their money)."""
    s = stop_settlement(view)
    say = _Speaker(view.viewer, names)
    lines = [f"if you stop (스톱) now, you win {_plural(_won(s), 'point')}{_money(s, _won(s))}:"]
    lines += [f"  {line}" for row in _winner_lines(s, view, say) for line in row.split("\n")]
    for bill in s.bills:
        lines += [f"  {line}" for line in _bill_lines(s, bill, view, say)]
    return lines


def settlement_screen(view: View, match: MatchSummary, names: dict[int, str]) -> str:
    """The end of a round: who won and how, what the win is worth (score by category, 고, the
    winner's multipliers), then one breakdown per payer (each 박 applied with its reason or not
    applied and why, the product, the points paid), instant payments, the round's net points and
    the match so far."""
    s = view.settlement
    assert s is not None, "the round is not over"
    say = _Speaker(view.viewer, names)
    lines = ["=" * 31 + " round over " + "=" * 36]
    if s.winner >= 0:
        lines.append(_outcome_text(s, view, say) + ":")
        lines += [f"  {line}" for row in _winner_lines(s, view, say) for line in row.split("\n")]
        for bill in s.bills:
            lines += _bill_lines(s, bill, view, say)
    else:
        lines.append(f"나가리: nobody wins ({explain(s.reason)})"
                     + ("; the next round counts double" if s.carry_next else ""))
    if s.payments:
        lines.append("paid at once during the round:")
    for p in s.payments:
        lines.append(f"  {say(p.payer, 'pay', 'pays')} {say(p.payee)} {_plural(p.points, 'point')} ({term(p.reason)})")
    if any(s.points):
        lines += _by_seat("net points this round: ", s.points, view.viewer, names)
    if s.point_value:
        lines += _by_seat("money this round: ", s.money, view.viewer, names)
    if match.round_no > 1:  # after the first round the match's points are the round's
        rounds = f"{match.round_no} of {match.rounds}" if match.rounds else f"{match.round_no}"
        lines += _by_seat(f"match points after round {rounds}: ", match.points, view.viewer, names)
    wrapped: list[str] = []
    for line in lines:
        wrapped += [line] if _width(line) < WIDTH else _wrap_text(line, hang=2)
    return "\n".join(wrapped)


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
    for line in event_lines(event_from_pb(item.event), screen.names):
        screen.say(line)


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


def prompt_text(view: View, names: dict[int, str]) -> str:
    """The viewer's decision: what it is about (at 고 or 스톱, the whole bill of a stop now), then
    the numbered legal actions, each with what it does."""
    lines = [_decision_text(view)]
    if view.pending is not None and view.pending.phase is Phase.GO_STOP:
        lines += _stop_bill(view, names)
    lines += _menu(view)
    wrapped: list[str] = []
    for line in lines:
        wrapped += [line] if _width(line) < WIDTH else _wrap_text(line, hang=2)
    return "\n".join(wrapped)


def _choose(screen: _Screen, view: View) -> Action:
    screen.say(prompt_text(view, screen.names))
    actions = view.legal_actions
    while True:
        answer = screen.ask(f"choose 1-{len(actions)} (q quits): ")
        if answer.isdigit() and 1 <= int(answer) <= len(actions):
            return actions[int(answer) - 1]
        screen.say(f"type a number from 1 to {len(actions)}, or q to quit")


def play(client: GostopClient, game: Game, seat: int, screen: _Screen) -> int:
    """The human's side of a game: returns when the match is finished (or raises ``Quit``)."""
    feed = _Feed(client, game, seat)
    waiting_for = -1
    """The seat the last "... to move" line named: a turn of several decisions is announced once."""
    try:
        while True:
            msg = client.get_game(game, seat)
            _show_events(screen, feed, msg.version)
            view, match = view_from_pb(msg), match_from_pb(msg.match)
            if msg.phase == pb.PHASE_OVER:
                waiting_for = -1
                screen.say(table_text(view, match, screen.names))
                screen.say(settlement_screen(view, match, screen.names))
                if match.finished:
                    screen.say(_match_over(match, seat, screen.names))
                    return 0
                screen.ask("press Enter for the next round (q quits): ")
                with contextlib.suppress(StaleVersion, RoundOverError):
                    client.start_next_round(game, seat, expected_version=msg.version)
                continue
            if msg.to_move == seat and msg.legal_actions:
                waiting_for = -1
                screen.say(table_text(view, match, screen.names))
                action = _choose(screen, view)
                try:
                    client.submit_action(game, seat, action, expected_version=msg.version)
                except StaleVersion:
                    screen.say("the game moved on meanwhile: look again")
                continue
            if msg.to_move != waiting_for and msg.to_move >= 0:
                screen.say(f"... {seat_label(msg.to_move, screen.names)} to move")
                waiting_for = msg.to_move
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


def _match_over(match: MatchSummary, viewer: int, names: dict[int, str]) -> str:
    """The last line of a match: who won it (most points), and the money if the match had a point value."""
    best = max(match.points)
    leaders = [s for s, p in enumerate(match.points) if p == best]
    who = "you win" if leaders == [viewer] else f"{seat_label(leaders[0], names)} wins" if len(leaders) == 1 else \
        "a draw between " + " and ".join("you" if s == viewer else seat_label(s, names) for s in leaders)
    text = f"match over: {who} the match" if len(leaders) == 1 else f"match over: {who}"
    if any(match.money):
        return "\n".join([text, *_by_seat("money: ", match.money, viewer, names)])
    return text


# -------------------------------------------------------------------------- command line


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop play``."""
    parser.description = (
        "Play Go-Stop (고스톱) against bots in this terminal. At each of your decisions you see the table "
        "and the numbered choices, each hand card with the floor cards it would take; after each round, "
        "who pays what and why. Type a number and Enter; q or Ctrl-D quits.")
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
