"""Plain-text rendering of events, states and settlements (transcripts and the demo)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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
    action_from_id,
)
from .cards import CODE, HIDDEN, MONTH, NAME, card_code, month_name
from .scoring import Score
from .settlement import Settlement
from .state import State
from .table_events import AutoPlaySet, PlayedForSeat, SeatAway, SeatPresence, TableEvent
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


@dataclass(frozen=True, slots=True)
class Voice:
    """How a sentence about an event names its parts: the transcript's voice (seat numbers, card
    codes, the engine's names) or a person's (seats by name, everyday card names, Korean terms).

    Both voices fill the same sentences (``_SENTENCES``) on one code path (``event_line``).
    """

    form: int
    """Which column of ``_SENTENCES``: ``0`` the transcript's, ``1`` a person's."""
    seat: Callable[[int], str]
    card: Callable[[int], str]
    """A card met in passing: a bonus card, a card laid, a replacement."""
    named: Callable[[int], str]
    """A card played or flipped."""
    cards: Callable[[Iterable[int]], str]
    explain: Callable[[str], str]
    """The reason of a redeal, an instant win or loss, a 나가리."""
    term: Callable[[str], str]
    """The reason of an instant payment."""
    reasons: Callable[[Sequence[str]], str]
    """The reasons of a 피 steal."""
    score: Callable[[int, Score], str]
    """A seat's score (its total, then its categories)."""


_SENTENCES: Final[Mapping[str, str | tuple[str, str]]] = {
    # key: the sentence of both voices, or (the transcript's, a person's)
    "dealt": (
        "deal (선 {dealer}{carry}): {hands} | floor: {floor} | stock {stock}",
        "* new deal: 선 {dealer}{carry}, stock {stock}",
    ),
    "carry": (" ×2 carry", ", ×2 carry"),
    "redealt": ("redeal: {reason} month {month}", "redeal: {reason} (month {month})"),
    "bonus": ("{seat} takes bonus {card} from {source}{replaced}", "{seat} takes {card} from the {source}{replaced}"),
    "replaced": ", replaced by {card}",
    "replaced_unseen": (", replaced by ??", ", replaced from the stock (unseen)"),
    "sat_out": "{seat} sits out{forced}",
    "forced": " (forced)",
    "joined": "{seat} plays this round",
    "gwang_sold": ("{seat} sells {cards} at {price} each", "{seat} sells {cards} at {price} each (광팔기)"),
    "played": "{seat} plays {card}{shaking}",
    "shaking": (" shaking", " shaking (흔들기)"),
    "shaken": "{seat} 흔들기 month {month}: {cards}",
    "bombed": "{seat} 폭탄 month {month}: {cards} ({spare} 빈 내기)",
    "flip_only": "{seat} uses a 빈 내기 ({spare} left)",
    "flipped": "{seat} flips {card}",
    "laid": ("  {card} lies on the floor", "  {card} stays on the floor"),
    "captured": ("  {seat} captures {cards}", "  {seat} takes {cards}"),
    "ppeok": "  뻑! {seat} stacks month {month}: {cards} (#{count})",
    "recaptured": ("  {seat} recaptures {stack} of month {month}", "  {seat} takes {stack} of month {month}"),
    "own_ppeok": "자뻑",
    "ppeok_of": ("{maker}'s 뻑", "the 뻑 of {maker}"),
    "jjok": "  쪽 month {month}{steal}",
    "ttadak": "  따닥 month {month}{steal}",
    "no_steal": " (no steal)",
    "sseul": "  쓸 by {seat}{extra}",
    "sseul_points": " +{points} point",
    "pi_stolen": "  {seat} takes {cards} from {victim} ({reasons})",
    "nothing_stolen": ("-", "no 피 (none left)"),
    "gukjin_converted": ("{seat} converts 국진 to 쌍피", "{seat} counts 국진 as a 쌍피"),
    "gukjin_kept": ("{seat} keeps 국진 as 열끗", "{seat} keeps 국진 as a 열끗"),
    "score": ("  score {seat}: {score}", "  {seat}: {score}"),
    "went_go": ("{seat} goes ({count}고 at {base})", "{seat} goes: {count}고 at {base}"),
    "stopped": ("{seat} stops at {base}{automatic}", "{seat} stops (스톱) at {base}{automatic}"),
    "automatic": " (automatic)",
    "instant_paid": (
        "  {payer} pays {payee} {points} points ({reason})",
        "  {payer} pays {payee} {points} at once ({reason})",
    ),
    "instant_win": (
        "{seat} wins at once: {reason} ({points} points)",
        "{seat} wins at once with {points} points: {reason}",
    ),
    "instant_loss": "{seat} loses at once: {reason}",
    "nagari": ("나가리 ({reason})", "나가리: {reason}"),
    "played_for": ("{seat} {why}: {policy} decides ({action})", "{seat} {why}: the table's {policy} bot decides"),
    "why_timeout": "timed out",
    "why_away": "is away",
    "why_auto_play": "is on auto-play",
    "went_away": "{seat} is away",
    "came_back": "{seat} is back",
    "auto_on": "{seat} turns auto-play on",
    "auto_off": "{seat} turns auto-play off",
    "connected": "{seat} is connected",
    "disconnected": "{seat} is disconnected",
}
"""The sentence of each event and of its optional parts: one for both voices, or the two side by side."""


def _say(voice: Voice, key: str, **fields: object) -> str:
    sentence = _SENTENCES[key]
    return (sentence if isinstance(sentence, str) else sentence[voice.form]).format(**fields)


def _if(voice: Voice, key: str, present: object) -> str:
    """The optional part ``key`` where ``present``, else nothing."""
    return _say(voice, key) if present else ""


def event_line(e: ev.Event | TableEvent, voice: Voice | None = None) -> str:
    """One line describing an event, in ``voice`` (the transcript's by default)."""
    v = TRANSCRIPT if voice is None else voice
    seat = v.seat
    if isinstance(e, PlayedForSeat):
        action = action_label(action_from_id(e.action)) if e.action >= 0 else "next round"
        return _say(v, "played_for", seat=seat(e.seat), why=_say(v, f"why_{e.cause}"), policy=e.policy,
                    action=action)
    if isinstance(e, SeatAway):
        return _say(v, "went_away" if e.away else "came_back", seat=seat(e.seat))
    if isinstance(e, AutoPlaySet):
        return _say(v, "auto_on" if e.on else "auto_off", seat=seat(e.seat))
    if isinstance(e, SeatPresence):
        return _say(v, "connected" if e.connected else "disconnected", seat=seat(e.seat))
    if isinstance(e, ev.Dealt):
        hands = " | ".join(f"{seat(i)}: {v.cards(h)}" for i, h in enumerate(e.hands))
        return _say(v, "dealt", dealer=seat(e.dealer), carry=_if(v, "carry", e.carry), hands=hands,
                    floor=v.cards(e.floor), stock=e.stock_count)
    if isinstance(e, ev.Redealt):
        return _say(v, "redealt", reason=v.explain(e.reason), month=e.month)
    if isinstance(e, ev.BonusCaptured):
        replaced = "" if e.replacement == HIDDEN and e.source != "hand" else (
            _say(v, "replaced", card=v.card(e.replacement)) if e.replacement != HIDDEN
            else _say(v, "replaced_unseen"))
        return _say(v, "bonus", seat=seat(e.seat), card=v.card(e.card), source=e.source, replaced=replaced)
    if isinstance(e, ev.SatOut):
        return _say(v, "sat_out", seat=seat(e.seat), forced=_if(v, "forced", e.forced))
    if isinstance(e, ev.JoinedRound):
        return _say(v, "joined", seat=seat(e.seat))
    if isinstance(e, ev.GwangSold):
        return _say(v, "gwang_sold", seat=seat(e.seat), cards=v.cards(e.cards), price=e.price)
    if isinstance(e, ev.CardPlayed):
        return _say(v, "played", seat=seat(e.seat), card=v.named(e.card), shaking=_if(v, "shaking", e.shake))
    if isinstance(e, ev.Shaken):
        return _say(v, "shaken", seat=seat(e.seat), month=e.month, cards=v.cards(e.cards))
    if isinstance(e, ev.Bombed):
        return _say(v, "bombed", seat=seat(e.seat), month=e.month, cards=v.cards(e.cards), spare=e.spare_flips)
    if isinstance(e, ev.FlipOnlyUsed):
        return _say(v, "flip_only", seat=seat(e.seat), spare=e.spare_flips)
    if isinstance(e, ev.CardFlipped):
        return _say(v, "flipped", seat=seat(e.seat), card=v.named(e.card))
    if isinstance(e, ev.CardLaid):
        return _say(v, "laid", card=v.card(e.card))
    if isinstance(e, ev.Captured):
        return _say(v, "captured", seat=seat(e.seat), cards=v.cards(e.cards))
    if isinstance(e, ev.PpeokFormed):
        return _say(v, "ppeok", seat=seat(e.seat), month=e.month, cards=v.cards(e.cards), count=e.count)
    if isinstance(e, ev.PpeokRecaptured):
        stack = _say(v, "own_ppeok") if e.own else _say(v, "ppeok_of", maker=seat(e.maker))
        return _say(v, "recaptured", seat=seat(e.seat), stack=stack, month=e.month)
    if isinstance(e, ev.Jjok):
        return _say(v, "jjok", month=e.month, steal=_if(v, "no_steal", not e.steals))
    if isinstance(e, ev.Ttadak):
        return _say(v, "ttadak", month=e.month, steal=_if(v, "no_steal", not e.steals))
    if isinstance(e, ev.Sseul):
        extra = _say(v, "sseul_points", points=e.points) if e.points else _if(v, "no_steal", not e.steals)
        return _say(v, "sseul", seat=seat(e.seat), extra=extra)
    if isinstance(e, ev.PiStolen):
        taken = v.cards(e.cards) if e.cards else _say(v, "nothing_stolen")
        return _say(v, "pi_stolen", seat=seat(e.seat), cards=taken, victim=seat(e.victim),
                    reasons=v.reasons(e.reasons))
    if isinstance(e, ev.GukjinDecided):
        return _say(v, "gukjin_converted" if e.converted else "gukjin_kept", seat=seat(e.seat))
    if isinstance(e, ev.ScoreChanged):
        return _say(v, "score", seat=seat(e.seat), score=v.score(e.total, e.score))
    if isinstance(e, ev.WentGo):
        return _say(v, "went_go", seat=seat(e.seat), count=e.count, base=e.base)
    if isinstance(e, ev.Stopped):
        return _say(v, "stopped", seat=seat(e.seat), base=e.base, automatic=_if(v, "automatic", e.automatic))
    if isinstance(e, ev.InstantPaid):
        p = e.payment
        return _say(v, "instant_paid", payer=seat(p.payer), payee=seat(p.payee), points=p.points,
                    reason=v.term(p.reason))
    if isinstance(e, ev.InstantWin):
        return _say(v, "instant_win", seat=seat(e.seat), reason=v.explain(e.reason), points=e.points)
    if isinstance(e, ev.InstantLoss):
        return _say(v, "instant_loss", seat=seat(e.seat), reason=v.explain(e.reason))
    if isinstance(e, ev.Nagari):
        return _say(v, "nagari", reason=v.explain(e.reason))
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


def card_names(cs: Iterable[int]) -> str:
    """Everyday names of cards, joined by commas (``nothing`` for none)."""
    return ", ".join(card_name(c) for c in cs) or "nothing"


def score_text(score: Score) -> str:
    """``score 5 = 광 3 + 피 2`` (``score 0``)."""
    return f"score {score.total}" + (f" = {score_terms(score)}" if score.total else "")


REASONS: Final[Mapping[str, str]] = {
    "floor_four": "four of a month on the floor", "hand_four": "four of a month in a hand",
    "chongtong": "총통 (four of a month in the starting hand)", "three_ppeok": "3뻑 (a third 뻑 in the round)",
    "heodang": "허당 (turns on end without a capture)", "cards_exhausted": "the cards ran out",
    "tied_scores": "tied scores when the cards ran out",
}
"""The reasons of redeals, instant wins and losses and 나가리, explained for a person."""


def explain(reason: str) -> str:
    """A reason explained for a person (``REASONS``), else its Korean term."""
    return REASONS.get(reason, term(reason))


def counted_terms(reasons: Sequence[str]) -> str:
    """Korean terms of steal reasons, a repeated one counted: ``자뻑 ×2, 쓸``."""
    counts: dict[str, int] = {}
    for r in reasons:
        counts[term(r)] = counts.get(term(r), 0) + 1
    return ", ".join(t if n == 1 else f"{t} ×{n}" for t, n in counts.items())


def seat_label(seat: int, names: Mapping[int, str]) -> str:
    """``seat 1 (greedy)``: the seat's number and its name in ``names`` (``seat 1`` without one)."""
    return f"seat {seat} {names.get(seat, '')}".rstrip()


def _as_is(name: str) -> str:
    return name


def _seat_number(seat: int) -> str:
    return f"seat {seat}"


def _score_numbers(total: int, score: Score) -> str:
    parts = ", ".join(f"{n} {v}" for n, v in score.categories())
    return f"{total}" + (f" ({parts})" if parts else "")


def _person_score(total: int, score: Score) -> str:
    return score_text(score)


TRANSCRIPT: Final = Voice(
    form=0, seat=_seat_number, card=card_code, named=named, cards=cards, explain=_as_is, term=_as_is,
    reasons=", ".join, score=_score_numbers,
)
"""The transcripts' voice (the golden files, the demo): seat numbers, card codes, the engine's names."""


def person_voice(names: Mapping[int, str]) -> Voice:
    """A person's voice: seats with their ``names``, everyday card names, Korean terms, reasons explained.

    >>> event_line(ev.CardLaid(0, 40), person_voice({})), event_line(ev.CardLaid(0, 40))
    ('  똥광 stays on the floor', '  11-gwang lies on the floor')
    """
    return Voice(
        form=1, seat=lambda seat: seat_label(seat, names), card=card_name, named=card_name, cards=card_names,
        explain=explain, term=term, reasons=counted_terms, score=_person_score,
    )
