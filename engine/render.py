"""Plain-text rendering of events, states and settlements (transcripts and the demo)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from . import events as ev
from .actions import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    FlipOnly,
    Go,
    JoinRound,
    KeepGukjin,
    PlayCard,
    SellGwang,
    SitOut,
    Stop,
)
from .cards import CODE, MONTH, NAME, card_code, month_name
from .scoring import Score
from .settlement import Settlement
from .state import State
from .views import SPECTATOR, view


def cards(cs: Iterable[int]) -> str:
    """Card codes joined by spaces (``-`` for none)."""
    text = " ".join(card_code(c) for c in cs)
    return text or "-"


def named(c: int) -> str:
    """A card's code and Korean name."""
    return f"{card_code(c)}({NAME[c]})" if c >= 0 else "??"


_LABELS: dict[type, str] = {
    FlipOnly: "flip only", KeepGukjin: "keep gukjin", ConvertGukjin: "convert gukjin", Go: "go", Stop: "stop",
    JoinRound: "join round", SitOut: "sit out", SellGwang: "sell gwang", DeclineGwangSale: "decline gwang sale",
}
_TEXTS: dict[type, str] = {
    FlipOnly: "flip only (빈 내기)", KeepGukjin: "keep 국진 as 열끗", ConvertGukjin: "turn 국진 into 쌍피",
    Go: "go (고)", Stop: "stop (스톱)", JoinRound: "play this round", SitOut: "sit this round out",
    SellGwang: "sell 광 (광팔기)", DeclineGwangSale: "sell nothing",
}


def action_label(action: Action) -> str:
    """The short, stable English label of an action (the wire's ``LegalAction.label``, metrics).

    >>> action_label(PlayCard(13, shake=True)), action_label(Bomb(4)), action_label(SellGwang())
    ('play 04-tti and shake', 'bomb month 4', 'sell gwang')
    """
    if isinstance(action, PlayCard):
        return f"play {card_code(action.card)}" + (" and shake" if action.shake else "")
    if isinstance(action, Bomb):
        return f"bomb month {action.month}"
    if isinstance(action, ChooseCapture):
        return f"capture {card_code(action.card)}"
    return _LABELS[type(action)]


def card_text(card: int) -> str:
    """A card's code and Korean name: ``03-gwang 3월 광`` (``??`` when hidden)."""
    return f"{CODE[card]} {NAME[card]}" if card >= 0 else "??"


def action_text(action: Action, hand: Sequence[int] = ()) -> str:
    """A menu label for a person, with Korean names; a 폭탄 lists the cards of ``hand`` it plays.

    >>> action_text(Go()), action_text(Bomb(1), hand=(0, 1, 2, 9))
    ('go (고)', 'bomb (폭탄) month 1 송학: 01-gwang, 01-tti, 01-pi-a')
    """
    if isinstance(action, PlayCard):
        return f"play {card_text(action.card)}" + (" and shake (흔들기)" if action.shake else "")
    if isinstance(action, Bomb):
        held = [c for c in hand if MONTH[c] == action.month]
        shown = f": {', '.join(CODE[c] for c in held)}" if held else ""
        return f"bomb (폭탄) month {action.month} {month_name(action.month)}{shown}"
    if isinstance(action, ChooseCapture):
        return f"capture {card_text(action.card)}"
    return _TEXTS[type(action)]


def event_line(e: ev.Event) -> str:
    """One line describing an event."""
    if isinstance(e, ev.Dealt):
        hands = " | ".join(f"seat {i}: {cards(h)}" for i, h in enumerate(e.hands))
        carry = " ×2 carry" if e.carry else ""
        return f"deal (선 seat {e.dealer}{carry}): {hands} | floor: {cards(e.floor)} | stock {e.stock_count}"
    if isinstance(e, ev.Redealt):
        return f"redeal: {e.reason} month {e.month}"
    if isinstance(e, ev.BonusCaptured):
        rep = f", replaced by {card_code(e.replacement)}" if e.replacement != -1 or e.source == "hand" else ""
        return f"seat {e.seat} takes bonus {card_code(e.card)} from {e.source}{rep}"
    if isinstance(e, ev.SatOut):
        return f"seat {e.seat} sits out{' (forced)' if e.forced else ''}"
    if isinstance(e, ev.JoinedRound):
        return f"seat {e.seat} plays this round"
    if isinstance(e, ev.GwangSold):
        return f"seat {e.seat} sells {cards(e.cards)} at {e.price} each"
    if isinstance(e, ev.CardPlayed):
        return f"seat {e.seat} plays {named(e.card)}{' shaking' if e.shake else ''}"
    if isinstance(e, ev.Shaken):
        return f"seat {e.seat} 흔들기 month {e.month}: {cards(e.cards)}"
    if isinstance(e, ev.Bombed):
        return f"seat {e.seat} 폭탄 month {e.month}: {cards(e.cards)} ({e.spare_flips} 빈 내기)"
    if isinstance(e, ev.FlipOnlyUsed):
        return f"seat {e.seat} uses a 빈 내기 ({e.spare_flips} left)"
    if isinstance(e, ev.CardFlipped):
        return f"seat {e.seat} flips {named(e.card)}"
    if isinstance(e, ev.CardLaid):
        return f"  {card_code(e.card)} lies on the floor"
    if isinstance(e, ev.Captured):
        return f"  seat {e.seat} captures {cards(e.cards)}"
    if isinstance(e, ev.PpeokFormed):
        return f"  뻑! seat {e.seat} stacks month {e.month}: {cards(e.cards)} (#{e.count})"
    if isinstance(e, ev.PpeokRecaptured):
        kind = "자뻑" if e.own else f"seat {e.maker}'s 뻑"
        return f"  seat {e.seat} recaptures {kind} of month {e.month}"
    if isinstance(e, ev.Jjok):
        return f"  쪽 month {e.month}{'' if e.steals else ' (no steal)'}"
    if isinstance(e, ev.Ttadak):
        return f"  따닥 month {e.month}{'' if e.steals else ' (no steal)'}"
    if isinstance(e, ev.Sseul):
        extra = f" +{e.points} point" if e.points else ("" if e.steals else " (no steal)")
        return f"  쓸 by seat {e.seat}{extra}"
    if isinstance(e, ev.PiStolen):
        return f"  seat {e.seat} takes {cards(e.cards)} from seat {e.victim} ({', '.join(e.reasons)})"
    if isinstance(e, ev.GukjinDecided):
        return f"seat {e.seat} {'converts 국진 to 쌍피' if e.converted else 'keeps 국진 as 열끗'}"
    if isinstance(e, ev.ScoreChanged):
        parts = ", ".join(f"{n} {v}" for n, v in e.score.categories())
        return f"  score seat {e.seat}: {e.total}" + (f" ({parts})" if parts else "")
    if isinstance(e, ev.WentGo):
        return f"seat {e.seat} goes ({e.count}고 at {e.base})"
    if isinstance(e, ev.Stopped):
        return f"seat {e.seat} stops at {e.base}{' (automatic)' if e.automatic else ''}"
    if isinstance(e, ev.InstantPaid):
        p = e.payment
        return f"  seat {p.payer} pays seat {p.payee} {p.points} points ({p.reason})"
    if isinstance(e, ev.InstantWin):
        return f"seat {e.seat} wins at once: {e.reason} ({e.points} points)"
    if isinstance(e, ev.InstantLoss):
        return f"seat {e.seat} loses at once: {e.reason}"
    if isinstance(e, ev.Nagari):
        return f"나가리 ({e.reason})"
    if isinstance(e, ev.RoundSettled):
        return settlement_text(e.settlement)
    raise TypeError(f"unknown event {e!r}")  # pragma: no cover


def settlement_text(s: Settlement) -> str:
    """A settlement explained on a few lines."""
    lines = [f"settlement: {s.outcome} ({s.reason})"]
    if s.winner >= 0:
        lines.append(
            f"  winner seat {s.winner}: base {s.base}, {s.gos}고 -> {s.go_score} points"
            + "".join(f" ×{f.value} {f.name}" for f in s.winner_factors)
        )
        for b in s.bills:
            factors = "".join(f" ×{f.value} {f.name}" for f in b.factors)
            covers = f" covering seats {list(b.covers)}" if b.covers != (b.seat,) else ""
            lines.append(f"  seat {b.seat} owes {b.points}{factors}; pays {b.pays}{covers}")
    for p in s.payments:
        lines.append(f"  instant: seat {p.payer} -> seat {p.payee} {p.points} ({p.reason})")
    lines.append(f"  net points: {list(s.points)}" + (f", money: {list(s.money)}" if s.point_value else ""))
    return "\n".join(lines)


def state_text(state: State, seat: int = SPECTATOR) -> str:
    """The table as ``seat`` sees it."""
    v = view(state, seat)
    lines = [f"phase {v.phase.value}, seat {v.to_move} to move, stock {v.stock_count}"]
    lines.append(f"floor: {cards(v.floor)}")
    for s in v.seats:
        if not s.active:
            lines.append(f"seat {s.seat}: sitting out")
            continue
        hand = cards(s.hand) if s.seat == seat else f"{s.hand_size} cards" + (
            f" (shown {cards(s.revealed)})" if s.revealed else ""
        )
        lines.append(
            f"seat {s.seat}: hand {hand}; pile {cards(s.captured)}; score {s.score.total}; {s.gos}고"
        )
    return "\n".join(lines)


# ------------------------------------------------------------- Korean names, for people

_COMMON_NAMES: Final[Mapping[int, str]] = {
    40: "똥광", 41: "똥피", 42: "똥피", 43: "똥쌍피",
    44: "비광", 46: "비띠", 47: "비쌍피",
}
"""Cards whose everyday name differs from ``cards.NAME`` (the 11월 오동 cards are the 똥 cards)."""


def card_name(card: int) -> str:
    """The name people call a card by: ``cards.NAME`` with the everyday names of the 11월 and
    12월 cards (``똥광``, ``똥쌍피``, ``비광``, ``비쌍피``); ``??`` for a hidden card.

    >>> card_name(40), card_name(44), card_name(8), card_name(50), card_name(-1)
    ('똥광', '비광', '3월 광', '보너스 쓰리피', '??')
    """
    if card < 0:
        return "??"
    return _COMMON_NAMES.get(card, NAME[card])


def card_label(card: int) -> str:
    """A card's code and everyday name, for a menu: ``11-gwang 똥광`` (``??`` when hidden).

    >>> card_label(40), card_label(13)
    ('11-gwang 똥광', '04-tti 4월 초단')
    """
    return f"{CODE[card]} {card_name(card)}" if card >= 0 else "??"


TERMS: Final[Mapping[str, str]] = {
    # score categories (``Score.categories``)
    "gwang": "광", "yeol": "열끗", "godori": "고도리", "tti": "띠", "hongdan": "홍단",
    "cheongdan": "청단", "chodan": "초단", "pi": "피", "sseul": "쓸",
    # settlement factors (``Factor.name``)
    "shake_bomb": "흔들기/폭탄", "own_shake_bomb": "own 흔들기/폭탄", "meongbak": "멍박",
    "nagari_carry": "나가리", "pibak": "피박", "gwangbak": "광박", "gobak": "고박",
    # reasons of 피 steals (``PiStolen.reasons``)
    "bomb": "폭탄", "jappeok": "자뻑", "ppeok": "뻑", "jjok": "쪽", "ttadak": "따닥",
    # instant payments and outcomes (``Payment.reason``, ``InstantWin.reason``)
    "first_ppeok": "첫뻑", "second_ppeok": "연뻑", "third_ppeok": "3연뻑", "first_ttadak": "첫따닥",
    "gwang_sale": "광팔기", "chongtong": "총통", "three_ppeok": "3뻑", "heodang": "허당",
    "stop": "스톱", "nagari": "나가리",
}
"""The Korean term of each engine name a person may meet (the engine's names are romanised)."""


def term(name: str) -> str:
    """The Korean term of an engine name (``pibak`` -> ``피박``); an unknown name as it is.

    >>> term("jappeok"), term("gwangbak"), term("something_new")
    ('자뻑', '광박', 'something_new')
    """
    return TERMS.get(name, name)


def score_terms(score: Score) -> str:
    """A base score's non-zero categories with Korean terms: ``광 3 + 피 6`` (``-`` for none).

    >>> from .scoring import score as score_of
    >>> score_terms(score_of([0, 8, 28])), score_terms(score_of([]))
    ('광 3', '-')
    """
    return " + ".join(f"{term(n)} {v}" for n, v in score.categories()) or "-"


def menu_text(action: Action, hand: Sequence[int] = ()) -> str:
    """``action_text`` with everyday card names (``play 11-gwang 똥광``), for a person's menu.

    >>> menu_text(PlayCard(44, shake=True)), menu_text(Bomb(11), hand=(40, 41, 43, 9))
    ('play 12-bigwang 비광 and shake (흔들기)', 'bomb (폭탄) month 11 오동: 똥광, 똥피, 똥쌍피')
    """
    if isinstance(action, PlayCard):
        return f"play {card_label(action.card)}" + (" and shake (흔들기)" if action.shake else "")
    if isinstance(action, Bomb):
        held = [c for c in hand if MONTH[c] == action.month]
        shown = f": {', '.join(card_name(c) for c in held)}" if held else ""
        return f"bomb (폭탄) month {action.month} {month_name(action.month)}{shown}"
    if isinstance(action, ChooseCapture):
        return f"capture {card_label(action.card)}"
    return action_text(action, hand)
