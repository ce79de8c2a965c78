"""Typed, frozen events: the log, the replay and the audit trail of a round.

Every step of ``apply`` (and the deal) returns the events it produced, in order.
Card fields hold canonical ids; ``HIDDEN`` (-1) marks a card a redacted viewer may
not see (see ``views.redact``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .scoring import Score
from .settlement import Payment, Settlement
from .state import StealCause

RedealReason = Literal["floor_four", "hand_four"]
"""Why a deal was thrown in: four of a month on the floor, or in a hand."""
BonusSource = Literal["hand", "floor", "flip"]
"""Where a bonus 피 came from."""
InstantReason = Literal["chongtong", "three_ppeok", "heodang"]
"""What ends a round at once: 총통, 3뻑, 허당."""
NagariReason = Literal["cards_exhausted", "tied_scores"]
"""Why a round is a draw."""


@dataclass(frozen=True, slots=True, init=False)
class Redealt:
    """The deal was thrown in and reshuffled from the round's seed."""

    reason: RedealReason
    month: int

    def __init__(self, reason: RedealReason, month: int) -> None:
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "month", month)


@dataclass(frozen=True, slots=True, init=False)
class Dealt:
    """The cards as dealt, before bonus cards are resolved."""

    dealer: int
    hands: tuple[tuple[int, ...], ...]
    floor: tuple[int, ...]
    stock_count: int
    carry: bool
    """This round is ×2 because the previous one was 나가리."""

    def __init__(
        self,
        dealer: int, hands: tuple[tuple[int, ...], ...], floor: tuple[int, ...], stock_count: int, carry: bool,
    ) -> None:
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "hands", hands)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "stock_count", stock_count)
        object.__setattr__(self, "carry", carry)


@dataclass(frozen=True, slots=True, init=False)
class BonusCaptured:
    """A bonus 피 went to ``seat``'s pile (from a hand, the floor or a flip)."""

    seat: int
    card: int
    source: BonusSource
    replacement: int
    """Stock card that replaced it in the hand or on the floor (-1 for a flip)."""

    def __init__(self, seat: int, card: int, source: BonusSource, replacement: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "replacement", replacement)


@dataclass(frozen=True, slots=True, init=False)
class SatOut:
    """4 players: ``seat`` does not play this round; its hand is out of play."""

    seat: int
    forced: bool

    def __init__(self, seat: int, forced: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "forced", forced)


@dataclass(frozen=True, slots=True, init=False)
class JoinedRound:
    """4 players: ``seat`` chose to play this round."""

    seat: int

    def __init__(self, seat: int) -> None:
        object.__setattr__(self, "seat", seat)


@dataclass(frozen=True, slots=True, init=False)
class GwangSold:
    """광팔기: the sitting-out seat sold these cards to each active seat."""

    seat: int
    cards: tuple[int, ...]
    price: int
    """Points each active seat pays per card."""

    def __init__(self, seat: int, cards: tuple[int, ...], price: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "price", price)


@dataclass(frozen=True, slots=True, init=False)
class CardPlayed:
    seat: int
    card: int
    shake: bool

    def __init__(self, seat: int, card: int, shake: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "shake", shake)


@dataclass(frozen=True, slots=True, init=False)
class Shaken:
    """흔들기: three cards of ``month`` revealed to every seat."""

    seat: int
    month: int
    cards: tuple[int, ...]

    def __init__(self, seat: int, month: int, cards: tuple[int, ...]) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "cards", cards)


@dataclass(frozen=True, slots=True, init=False)
class Bombed:
    """폭탄: three hand cards played onto the floor card of ``month``."""

    seat: int
    month: int
    cards: tuple[int, ...]
    spare_flips: int
    """빈 내기 the seat now holds."""

    def __init__(self, seat: int, month: int, cards: tuple[int, ...], spare_flips: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "spare_flips", spare_flips)


@dataclass(frozen=True, slots=True, init=False)
class FlipOnlyUsed:
    """A 빈 내기 turn: no hand card is played."""

    seat: int
    spare_flips: int
    """빈 내기 left."""

    def __init__(self, seat: int, spare_flips: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "spare_flips", spare_flips)


@dataclass(frozen=True, slots=True, init=False)
class CardFlipped:
    seat: int
    card: int

    def __init__(self, seat: int, card: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)


@dataclass(frozen=True, slots=True, init=False)
class CardLaid:
    """A played or flipped card found no match and lies on the floor."""

    seat: int
    card: int

    def __init__(self, seat: int, card: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "card", card)


@dataclass(frozen=True, slots=True, init=False)
class Captured:
    """Cards that go to ``seat``'s pile (the capturing card first)."""

    seat: int
    cards: tuple[int, ...]

    def __init__(self, seat: int, cards: tuple[int, ...]) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "cards", cards)


@dataclass(frozen=True, slots=True, init=False)
class PpeokFormed:
    """뻑: three cards of ``month`` stay stacked on the floor, made by ``seat``."""

    seat: int
    month: int
    cards: tuple[int, ...]
    count: int
    """뻑 made by this seat in this round so far."""

    def __init__(self, seat: int, month: int, cards: tuple[int, ...], count: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "count", count)


@dataclass(frozen=True, slots=True, init=False)
class PpeokRecaptured:
    """A 뻑 stack captured with its 4th card; ``own`` is 자뻑 (2 피 per opponent)."""

    seat: int
    month: int
    maker: int
    own: bool

    def __init__(self, seat: int, month: int, maker: int, own: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "maker", maker)
        object.__setattr__(self, "own", own)


@dataclass(frozen=True, slots=True, init=False)
class Jjok:
    """쪽: the flip matched the card just laid on an empty month."""

    seat: int
    month: int
    steals: bool
    """False when a last-turn exception voids the steal."""

    def __init__(self, seat: int, month: int, steals: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "steals", steals)


@dataclass(frozen=True, slots=True, init=False)
class Ttadak:
    """따닥: played and flipped cards took both floor cards of ``month``."""

    seat: int
    month: int
    steals: bool

    def __init__(self, seat: int, month: int, steals: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "steals", steals)


@dataclass(frozen=True, slots=True, init=False)
class Sseul:
    """쓸 (싹쓸이): the floor is empty after the turn's captures."""

    seat: int
    steals: bool
    points: int
    """쓸 points added to the base score (``sseul_mode = point``)."""

    def __init__(self, seat: int, steals: bool, points: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "steals", steals)
        object.__setattr__(self, "points", points)


@dataclass(frozen=True, slots=True, init=False)
class PiStolen:
    """``seat`` took these 피 from ``victim`` (``requested`` steals, fewer if it ran out)."""

    seat: int
    victim: int
    cards: tuple[int, ...]
    requested: int
    reasons: tuple[StealCause, ...]

    def __init__(
        self,
        seat: int, victim: int, cards: tuple[int, ...], requested: int, reasons: tuple[StealCause, ...],
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "victim", victim)
        object.__setattr__(self, "cards", cards)
        object.__setattr__(self, "requested", requested)
        object.__setattr__(self, "reasons", reasons)


@dataclass(frozen=True, slots=True, init=False)
class GukjinDecided:
    """국진 kept as 열끗 or converted to 쌍피 (``final``: no later change possible)."""

    seat: int
    converted: bool
    final: bool

    def __init__(self, seat: int, converted: bool, final: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "converted", converted)
        object.__setattr__(self, "final", final)


@dataclass(frozen=True, slots=True, init=False)
class ScoreChanged:
    seat: int
    score: Score
    total: int

    def __init__(self, seat: int, score: Score, total: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "total", total)


@dataclass(frozen=True, slots=True, init=False)
class WentGo:
    seat: int
    count: int
    base: int

    def __init__(self, seat: int, count: int, base: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "base", base)


@dataclass(frozen=True, slots=True, init=False)
class Stopped:
    seat: int
    base: int
    automatic: bool
    """True when the stop was forced (own last action, or arcade's last go)."""

    def __init__(self, seat: int, base: int, automatic: bool) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "automatic", automatic)


@dataclass(frozen=True, slots=True, init=False)
class InstantPaid:
    """An instant payment (첫뻑, 연뻑, 첫따닥, 광팔기), kept whatever the outcome."""

    payment: Payment

    def __init__(self, payment: Payment) -> None:
        object.__setattr__(self, "payment", payment)


@dataclass(frozen=True, slots=True, init=False)
class InstantWin:
    seat: int
    reason: InstantReason
    points: int

    def __init__(self, seat: int, reason: InstantReason, points: int) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "points", points)


@dataclass(frozen=True, slots=True, init=False)
class InstantLoss:
    seat: int
    reason: InstantReason

    def __init__(self, seat: int, reason: InstantReason) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "reason", reason)


@dataclass(frozen=True, slots=True, init=False)
class Nagari:
    """나가리: the round is a draw."""

    reason: NagariReason

    def __init__(self, reason: NagariReason) -> None:
        object.__setattr__(self, "reason", reason)


@dataclass(frozen=True, slots=True, init=False)
class RoundSettled:
    settlement: Settlement

    def __init__(self, settlement: Settlement) -> None:
        object.__setattr__(self, "settlement", settlement)


Event = (
    Redealt | Dealt | BonusCaptured | SatOut | JoinedRound | GwangSold | CardPlayed | Shaken
    | Bombed | FlipOnlyUsed | CardFlipped | CardLaid | Captured | PpeokFormed | PpeokRecaptured
    | Jjok | Ttadak | Sseul | PiStolen | GukjinDecided | ScoreChanged | WentGo | Stopped
    | InstantPaid | InstantWin | InstantLoss | Nagari | RoundSettled
)

EVENT_TYPES: tuple[type, ...] = (
    Redealt, Dealt, BonusCaptured, SatOut, JoinedRound, GwangSold, CardPlayed, Shaken, Bombed,
    FlipOnlyUsed, CardFlipped, CardLaid, Captured, PpeokFormed, PpeokRecaptured, Jjok, Ttadak,
    Sseul, PiStolen, GukjinDecided, ScoreChanged, WentGo, Stopped, InstantPaid, InstantWin,
    InstantLoss, Nagari, RoundSettled,
)
