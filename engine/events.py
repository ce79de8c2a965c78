"""Typed, frozen events: the log, the replay and the audit trail of a round.

Every step of ``apply`` (and the deal) returns the events it produced, in order.
Card fields hold canonical ids; ``HIDDEN`` (-1) marks a card a redacted viewer may
not see (see ``views.redact``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .scoring import Score
from .settlement import Payment, Settlement


@dataclass(frozen=True, slots=True)
class Redealt:
    """The deal was thrown in and reshuffled from the round's seed."""

    reason: str
    """``floor_four`` (four of a month on the floor) or ``hand_four`` (in a hand)."""
    month: int


@dataclass(frozen=True, slots=True)
class Dealt:
    """The cards as dealt, before bonus cards are resolved."""

    dealer: int
    hands: tuple[tuple[int, ...], ...]
    floor: tuple[int, ...]
    stock_count: int
    carry: bool
    """This round is ×2 because the previous one was 나가리."""


@dataclass(frozen=True, slots=True)
class BonusCaptured:
    """A bonus 피 went to ``seat``'s pile (from a hand, the floor or a flip)."""

    seat: int
    card: int
    source: str
    """``hand``, ``floor`` or ``flip``."""
    replacement: int
    """Stock card that replaced it in the hand or on the floor (-1 for a flip)."""


@dataclass(frozen=True, slots=True)
class SatOut:
    """4 players: ``seat`` does not play this round; its hand is out of play."""

    seat: int
    forced: bool


@dataclass(frozen=True, slots=True)
class JoinedRound:
    """4 players: ``seat`` chose to play this round."""

    seat: int


@dataclass(frozen=True, slots=True)
class GwangSold:
    """광팔기: the sitting-out seat sold these cards to each active seat."""

    seat: int
    cards: tuple[int, ...]
    price: int
    """Points each active seat pays per card."""


@dataclass(frozen=True, slots=True)
class CardPlayed:
    seat: int
    card: int
    shake: bool


@dataclass(frozen=True, slots=True)
class Shaken:
    """흔들기: three cards of ``month`` revealed to every seat."""

    seat: int
    month: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Bombed:
    """폭탄: three hand cards played onto the floor card of ``month``."""

    seat: int
    month: int
    cards: tuple[int, ...]
    spare_flips: int
    """빈 내기 the seat now holds."""


@dataclass(frozen=True, slots=True)
class FlipOnlyUsed:
    """A 빈 내기 turn: no hand card is played."""

    seat: int
    spare_flips: int
    """빈 내기 left."""


@dataclass(frozen=True, slots=True)
class CardFlipped:
    seat: int
    card: int


@dataclass(frozen=True, slots=True)
class CardLaid:
    """A played or flipped card found no match and lies on the floor."""

    seat: int
    card: int


@dataclass(frozen=True, slots=True)
class Captured:
    """Cards that go to ``seat``'s pile (the capturing card first)."""

    seat: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PpeokFormed:
    """뻑: three cards of ``month`` stay stacked on the floor, made by ``seat``."""

    seat: int
    month: int
    cards: tuple[int, ...]
    count: int
    """뻑 made by this seat in this round so far."""


@dataclass(frozen=True, slots=True)
class PpeokRecaptured:
    """A 뻑 stack captured with its 4th card; ``own`` is 자뻑 (2 피 per opponent)."""

    seat: int
    month: int
    maker: int
    own: bool


@dataclass(frozen=True, slots=True)
class Jjok:
    """쪽: the flip matched the card just laid on an empty month."""

    seat: int
    month: int
    steals: bool
    """False when a last-turn exception voids the steal."""


@dataclass(frozen=True, slots=True)
class Ttadak:
    """따닥: played and flipped cards took both floor cards of ``month``."""

    seat: int
    month: int
    steals: bool


@dataclass(frozen=True, slots=True)
class Sseul:
    """쓸 (싹쓸이): the floor is empty after the turn's captures."""

    seat: int
    steals: bool
    points: int
    """쓸 points added to the base score (``sseul_mode = point``)."""


@dataclass(frozen=True, slots=True)
class PiStolen:
    """``seat`` took these 피 from ``victim`` (``requested`` steals, fewer if it ran out)."""

    seat: int
    victim: int
    cards: tuple[int, ...]
    requested: int
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GukjinDecided:
    """국진 kept as 열끗 or converted to 쌍피 (``final``: no later change possible)."""

    seat: int
    converted: bool
    final: bool


@dataclass(frozen=True, slots=True)
class ScoreChanged:
    seat: int
    score: Score
    total: int


@dataclass(frozen=True, slots=True)
class WentGo:
    seat: int
    count: int
    base: int


@dataclass(frozen=True, slots=True)
class Stopped:
    seat: int
    base: int
    automatic: bool
    """True when the stop was forced (own last action, or arcade's last go)."""


@dataclass(frozen=True, slots=True)
class InstantPaid:
    """An instant payment (첫뻑, 연뻑, 첫따닥, 광팔기), kept whatever the outcome."""

    payment: Payment


@dataclass(frozen=True, slots=True)
class InstantWin:
    seat: int
    reason: str
    """``chongtong``, ``three_ppeok`` or ``heodang``."""
    points: int


@dataclass(frozen=True, slots=True)
class InstantLoss:
    seat: int
    reason: str


@dataclass(frozen=True, slots=True)
class Nagari:
    """나가리: the round is a draw."""

    reason: str


@dataclass(frozen=True, slots=True)
class RoundSettled:
    settlement: Settlement


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
