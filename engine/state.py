"""The state of a round: frozen, complete, and serializable.

A ``State`` holds everything the rules need and nothing derived that could drift
(scores are recomputed from the piles). ``apply`` never mutates a state; it returns
a new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal, Protocol

from .errors import CorruptSnapshot
from .rules import Rules
from .scoring import Score
from .settlement import Payment, Settlement

NO_STACK: Final = -2
"""``State.stacks`` entry: no 뻑 stack of that month on the floor."""
START_STACK: Final = -1
"""``State.stacks`` entry: three cards of the month lay on the starting floor."""
NO_SCORE: Final = Score()
"""``TurnContext.before`` by default: no cards."""

TURN_ORDER: Final = tuple(tuple(tuple((d + i) % n for i in range(n)) for d in range(n)) for n in range(5))
"""``TURN_ORDER[n][dealer]``: the n seats in turn order from the dealer (선), active or not."""


def has_turn_left(active: bool, hand: tuple[int, ...], spare_flips: int, stock_left: bool) -> bool:
    """A seat still has a turn: it plays this round and holds a card or a usable 빈 내기."""
    return active and (bool(hand) or (spare_flips > 0 and stock_left))


Gukjin = Literal["open", "kept", "converted"]
"""국진 (card 32): ``open`` (a 열끗 that may still convert), ``kept`` (a 열끗 for good), ``converted`` (a 쌍피)."""
TurnKind = Literal["play", "bomb", "flip"]
"""What began a turn: a hand card played, a 폭탄, or a 빈 내기 (flip only)."""
StealCause = Literal["bomb", "ppeok", "jappeok", "jjok", "ttadak", "sseul"]
"""Why a seat takes a 피 from each opponent: 폭탄, a recaptured 뻑 (자뻑: two), 쪽, 따닥, 쓸."""


class Phase(StrEnum):
    """The pending decision of a round."""

    SIT_OUT = "sit_out"
    """4 players: the seat to move joins or sits out."""
    GWANG_SALE = "gwang_sale"
    """4 players: the forced-out seat sells its 광/쌍피/bonus or not."""
    PLAY = "play"
    """Play a hand card (optionally shaking), bomb, or use a 빈 내기."""
    CHOOSE_HAND = "choose_hand"
    """The played card matched two floor cards: choose one (before the flip)."""
    CHOOSE_FLIP = "choose_flip"
    """The flipped card matched two floor cards: choose one."""
    GUKJIN = "gukjin"
    """Keep 국진 as 열끗 or convert it to 쌍피."""
    GO_STOP = "go_stop"
    OVER = "over"


@dataclass(frozen=True, slots=True, init=False)
class SeatState:
    """One seat's part of the round."""

    hand: tuple[int, ...] = ()
    captured: tuple[int, ...] = ()
    """The pile, in the order the cards arrived."""
    revealed: tuple[int, ...] = ()
    """Hand cards shown to every seat by 흔들기."""
    shakes: tuple[int, ...] = ()
    """Months shaken (흔들기)."""
    bombs: tuple[int, ...] = ()
    """Months bombed (폭탄)."""
    spare_flips: int = 0
    """빈 내기 left (flip-only turns)."""
    gos: int = 0
    last_go_base: int = 0
    last_go_order: int = 0
    """Sequence number of this seat's latest go in the round (0: none); for 3p 고박."""
    turns: int = 0
    """Own turns taken (play, bomb or flip-only)."""
    ppeok_turns: tuple[int, ...] = ()
    """Own turn numbers on which this seat made a 뻑."""
    dry_turns: int = 0
    """Consecutive own turns on which this seat captured nothing (허당)."""
    sseul: int = 0
    active: bool = True
    """Plays this round (4 players: False for the seat sitting out)."""

    def __init__(
        self,
        hand: tuple[int, ...] = (), captured: tuple[int, ...] = (), revealed: tuple[int, ...] = (),
        shakes: tuple[int, ...] = (), bombs: tuple[int, ...] = (), spare_flips: int = 0, gos: int = 0,
        last_go_base: int = 0, last_go_order: int = 0, turns: int = 0, ppeok_turns: tuple[int, ...] = (),
        dry_turns: int = 0, sseul: int = 0, active: bool = True,
    ) -> None:
        object.__setattr__(self, "hand", hand)
        object.__setattr__(self, "captured", captured)
        object.__setattr__(self, "revealed", revealed)
        object.__setattr__(self, "shakes", shakes)
        object.__setattr__(self, "bombs", bombs)
        object.__setattr__(self, "spare_flips", spare_flips)
        object.__setattr__(self, "gos", gos)
        object.__setattr__(self, "last_go_base", last_go_base)
        object.__setattr__(self, "last_go_order", last_go_order)
        object.__setattr__(self, "turns", turns)
        object.__setattr__(self, "ppeok_turns", ppeok_turns)
        object.__setattr__(self, "dry_turns", dry_turns)
        object.__setattr__(self, "sseul", sseul)
        object.__setattr__(self, "active", active)


@dataclass(frozen=True, slots=True, init=False)
class TurnContext:
    """A turn in progress, kept while it waits for a decision.

    ``matched`` is how many floor cards of the played card's month there were (0-3);
    ``held`` are the cards the played card took pending the flip.
    """

    seat: int
    kind: TurnKind
    card: int = -1
    month: int = 0
    last: bool = False
    """This is the seat's own last action."""
    before: Score = NO_SCORE
    """The mover's score when the turn began (to report the change)."""
    matched: int = 0
    held: tuple[int, ...] = ()
    flipped: int = -1
    taken: tuple[int, ...] = ()
    """Cards captured this turn so far."""
    steals: tuple[StealCause, ...] = ()
    """One entry per 피 to take from each opponent, naming its cause."""
    ppeok: bool = False
    ttadak: bool = False

    def __init__(
        self,
        seat: int, kind: TurnKind, card: int = -1, month: int = 0, last: bool = False, before: Score = NO_SCORE,
        matched: int = 0, held: tuple[int, ...] = (), flipped: int = -1, taken: tuple[int, ...] = (),
        steals: tuple[StealCause, ...] = (), ppeok: bool = False, ttadak: bool = False,
    ) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "month", month)
        object.__setattr__(self, "last", last)
        object.__setattr__(self, "before", before)
        object.__setattr__(self, "matched", matched)
        object.__setattr__(self, "held", held)
        object.__setattr__(self, "flipped", flipped)
        object.__setattr__(self, "taken", taken)
        object.__setattr__(self, "steals", steals)
        object.__setattr__(self, "ppeok", ppeok)
        object.__setattr__(self, "ttadak", ttadak)


@dataclass(frozen=True, slots=True, init=False)
class PlayRecord:
    """One play of the round (a hand card, a 폭탄 or a 빈 내기), as every seat saw it.

    Public information only: who played, what, and the floor and pile sizes the play was
    decided on. Search bots read it to infer what an opponent is likely to hold from the
    choices it made (an opponent that laid a card down with a matching card in hand would
    have played differently).
    """

    seat: int
    action: int
    """``action_id`` of the play (``PlayCard``, ``Bomb`` or ``FlipOnly``)."""
    floor: tuple[int, ...]
    """The floor before the play."""
    piles: tuple[int, ...]
    """Per seat: the size of its captured pile before the play."""

    def __init__(self, seat: int, action: int, floor: tuple[int, ...], piles: tuple[int, ...]) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "action", action)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "piles", piles)


@dataclass(frozen=True, slots=True, init=False)
class State:
    """A round of Go-Stop at one moment."""

    rules: Rules
    seed: int
    dealer: int
    """선: the first seat to play."""
    phase: Phase
    to_move: int
    """Seat whose decision is pending (-1 when the round is over)."""
    seats: tuple[SeatState, ...]
    floor: tuple[int, ...]
    stacks: tuple[int, ...]
    """Per month (index 0 unused): who made the 뻑 stack, ``START_STACK`` or ``NO_STACK``."""
    stock: tuple[int, ...]
    """Top of the stock first."""
    gukjin: Gukjin = "open"
    turn: TurnContext | None = None
    go_seq: int = 0
    payments: tuple[Payment, ...] = ()
    carry: bool = False
    """This round is ×2 after a 나가리."""
    settlement: Settlement | None = None
    steps: int = 0
    """Actions applied so far."""
    plays: tuple[PlayRecord, ...] = ()
    """Every play of the round so far, oldest first (public: see ``PlayRecord``)."""

    def __init__(
        self,
        rules: Rules, seed: int, dealer: int, phase: Phase, to_move: int, seats: tuple[SeatState, ...],
        floor: tuple[int, ...], stacks: tuple[int, ...], stock: tuple[int, ...], gukjin: Gukjin = "open",
        turn: TurnContext | None = None, go_seq: int = 0, payments: tuple[Payment, ...] = (), carry: bool = False,
        settlement: Settlement | None = None, steps: int = 0, plays: tuple[PlayRecord, ...] = (),
    ) -> None:
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "dealer", dealer)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "to_move", to_move)
        object.__setattr__(self, "seats", seats)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "stacks", stacks)
        object.__setattr__(self, "stock", stock)
        object.__setattr__(self, "gukjin", gukjin)
        object.__setattr__(self, "turn", turn)
        object.__setattr__(self, "go_seq", go_seq)
        object.__setattr__(self, "payments", payments)
        object.__setattr__(self, "carry", carry)
        object.__setattr__(self, "settlement", settlement)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "plays", plays)

    @property
    def over(self) -> bool:
        return self.phase is Phase.OVER

    @property
    def order(self) -> tuple[int, ...]:
        """Playing seats in turn order, starting with the 선."""
        seats = self.seats
        return tuple([s for s in TURN_ORDER[len(seats)][self.dealer] if seats[s].active])

    def has_turn_left(self, seat: int) -> bool:
        """The seat still has a hand card to play or a usable 빈 내기."""
        s = self.seats[seat]
        return has_turn_left(s.active, s.hand, s.spare_flips, bool(self.stock))


def card_places(state: State) -> dict[int, str]:
    """Where every card is (``hand:N``, ``pile:N``, ``floor``, ``stock``, ``turn``).

    Raises ``CorruptSnapshot`` if a card is in two places or missing: the invariant that
    property tests check after every step.
    """
    places: dict[int, str] = {}

    def put(cards: Sequence[int], where: str) -> None:
        for c in cards:
            if c in places:
                raise CorruptSnapshot(f"card {c} is both in {places[c]} and {where}")
            places[c] = where

    for i, s in enumerate(state.seats):
        put(s.hand, f"hand:{i}")
        put(s.captured, f"pile:{i}")
    put(state.floor, "floor")
    put(state.stock, "stock")
    ctx = state.turn
    if ctx is not None:
        if state.phase is Phase.CHOOSE_HAND:
            put((ctx.card,), "turn")
        put(ctx.held, "turn")
        if state.phase is Phase.CHOOSE_FLIP:
            put((ctx.flipped,), "turn")
    expected = set(range(state.rules.deck_size))
    if set(places) != expected:
        raise CorruptSnapshot(f"cards missing: {sorted(expected - set(places))}")
    return places


class SeatPosition(Protocol):
    """A seat as ``Position`` reads it: the fields of ``SeatState``."""

    @property
    def hand(self) -> tuple[int, ...]: ...
    @property
    def captured(self) -> tuple[int, ...]: ...
    @property
    def revealed(self) -> tuple[int, ...]: ...
    @property
    def shakes(self) -> tuple[int, ...]: ...
    @property
    def bombs(self) -> tuple[int, ...]: ...
    @property
    def spare_flips(self) -> int: ...
    @property
    def gos(self) -> int: ...
    @property
    def sseul(self) -> int: ...
    @property
    def active(self) -> bool: ...


class Position(Protocol):
    """A round's position, read-only: what a frozen ``State`` and a playout's live position
    (``Playout.position``) both offer, so that search code reads either without a copy."""

    @property
    def rules(self) -> Rules: ...
    @property
    def dealer(self) -> int: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def to_move(self) -> int: ...
    @property
    def seats(self) -> Sequence[SeatPosition]: ...
    @property
    def floor(self) -> Sequence[int]: ...
    @property
    def stacks(self) -> tuple[int, ...]: ...
    @property
    def stock(self) -> Sequence[int]: ...
    @property
    def gukjin(self) -> Gukjin: ...
    @property
    def turn(self) -> TurnContext | None: ...
    @property
    def carry(self) -> bool: ...
    @property
    def settlement(self) -> Settlement | None: ...
    @property
    def plays(self) -> tuple[PlayRecord, ...]: ...
