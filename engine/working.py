"""The mutable working copy of a round: what ``apply`` and ``Playout`` change in place between two
frozen states, and the card masks and scores it keeps current.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Final

from .cards import MONTH_CARDS, mask_of
from .events import (
    Captured,
    Event,
    InstantPaid,
    ScoreChanged,
)
from .rules import Rules
from .scoring import Score, mask_score, mask_total, same_score
from .settlement import Payment, Settlement
from .state import NO_STACK, Phase, PlayRecord, SeatState, State, TurnContext

EMPTY_SCORE: Final = Score()


# ---------------------------------------------------------------------- card masks

_MONTH_BITS: Final = mask_of(range(MONTH_CARDS))
_PAIR_LOW: Final = sum(0b0101 << (4 * i) for i in range(12))
"""Bits 0 and 2 of each month's four bits."""
_NIBBLE_LOW: Final = sum(1 << (4 * i) for i in range(12))
"""Bit 0 of each month's four bits."""


def holds_three_of_a_month(cards: Sequence[int]) -> bool:
    """Some month has three or four cards among ``cards`` (흔들기 and 폭탄 are possible).

    On the card mask, where each month is four adjacent bits: a month has three of its
    cards iff one of its bit pairs is full and the other is not empty.
    """
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & _PAIR_LOW
    some = (mask | (mask >> 1)) & _PAIR_LOW
    return bool(((full & (some >> 2)) | ((full >> 2) & some)) & _NIBBLE_LOW)


def four_of_a_month(cards: Sequence[int]) -> int:
    """The first month all four cards of which are among ``cards`` (0: none)."""
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & (mask >> 2) & (mask >> 3) & _NIBBLE_LOW
    return (full & -full).bit_length() // 4 + 1 if full else 0


def report_scores(w: Work, before: Sequence[Score]) -> None:
    for i, b in enumerate(before):
        report_score(w, i, b)


def report_score(w: Work, seat: int, before: Score) -> None:
    """A ``ScoreChanged`` event if ``seat``'s score differs from ``before``."""
    if w.quiet:
        return
    now = w.score(seat)
    if not same_score(now, before):
        w.events.append(ScoreChanged(seat, now, now.total))


def report_turn_score(w: Work, ctx: Turn) -> None:
    """``report_score`` of the mover at the end of its turn, from the score it began with."""
    if w.quiet:
        return
    if ctx.before is None:
        s = w.seats[ctx.seat]
        if s.captured is ctx.pile and s.sseul == ctx.pile_sseul and (w.gukjin == "converted") == ctx.pile_converted:
            return  # the inputs of the score are those the turn began with: so is the score
    report_score(w, ctx.seat, ctx.before_score())


# ------------------------------------------------------------------ working copy


_NO_STACKS: Final = (NO_STACK,) * 13
_TURN_ORDER: Final = tuple(tuple(tuple((d + i) % n for i in range(n)) for d in range(n)) for n in range(5))
"""``_TURN_ORDER[n][dealer]``: the n seats in turn order from the dealer."""
_SEAT_FIELDS: Final = tuple(f.name for f in fields(SeatState))
_TURN_FIELDS: Final = tuple(f.name for f in fields(TurnContext))


class _Seat:
    """Mutable twin of ``SeatState`` for the seats a step changes."""

    __slots__ = _SEAT_FIELDS
    hand: tuple[int, ...]
    captured: tuple[int, ...]
    revealed: tuple[int, ...]
    shakes: tuple[int, ...]
    bombs: tuple[int, ...]
    spare_flips: int
    gos: int
    last_go_base: int
    last_go_order: int
    turns: int
    ppeok_turns: tuple[int, ...]
    dry_turns: int
    sseul: int
    active: bool

    def __init__(self, s: SeatState) -> None:
        self.hand, self.captured, self.revealed, self.shakes = s.hand, s.captured, s.revealed, s.shakes
        self.bombs, self.spare_flips, self.gos = s.bombs, s.spare_flips, s.gos
        self.last_go_base = s.last_go_base
        self.last_go_order, self.turns, self.ppeok_turns = s.last_go_order, s.turns, s.ppeok_turns
        self.dry_turns, self.sseul, self.active = s.dry_turns, s.sseul, s.active

    def freeze(self) -> SeatState:
        return SeatState(
            self.hand, self.captured, self.revealed, self.shakes, self.bombs, self.spare_flips,
            self.gos, self.last_go_base, self.last_go_order, self.turns, self.ppeok_turns,
            self.dry_turns, self.sseul, self.active,
        )


class Turn:
    """Mutable twin of ``TurnContext`` while a turn runs inside one step.

    ``before`` (the mover's score when the turn began) is computed only when needed: from the pile,
    쓸 count and 국진 state the turn began with (``pile``, ...), when the turn waits for a decision
    (``freeze``) or ends with the mover's pile changed (``report_turn_score``).
    """

    __slots__ = (*_TURN_FIELDS, "pile", "pile_sseul", "pile_converted")
    seat: int
    kind: str
    card: int
    month: int
    last: bool
    before: Score | None
    """``None``: not computed yet (see above)."""
    pile: tuple[int, ...]
    pile_sseul: int
    pile_converted: bool
    matched: int
    held: tuple[int, ...]
    flipped: int
    taken: tuple[int, ...]
    steals: tuple[str, ...]
    ppeok: bool
    ttadak: bool

    def __init__(
        self, seat: int, kind: str, card: int, month: int, last: bool, before: Score | None,
        pile: tuple[int, ...] = (), pile_sseul: int = 0, pile_converted: bool = False,
    ) -> None:
        self.seat, self.kind, self.card, self.month = seat, kind, card, month
        self.last, self.before = last, before
        self.pile, self.pile_sseul, self.pile_converted = pile, pile_sseul, pile_converted
        self.matched, self.held, self.flipped, self.taken, self.steals = 0, (), -1, (), ()
        self.ppeok = self.ttadak = False

    def before_score(self) -> Score:
        before = self.before
        if before is None:
            before = self.before = pile_score(self.pile, self.pile_converted, self.pile_sseul)
        return before

    @staticmethod
    def thaw(t: TurnContext) -> Turn:
        ctx = Turn(t.seat, t.kind, t.card, t.month, t.last, t.before)
        ctx.matched, ctx.held, ctx.flipped, ctx.taken = t.matched, t.held, t.flipped, t.taken
        ctx.steals, ctx.ppeok, ctx.ttadak = t.steals, t.ppeok, t.ttadak
        return ctx

    def freeze(self) -> TurnContext:
        return TurnContext(
            self.seat, self.kind, self.card, self.month, self.last, self.before_score(), self.matched, self.held,
            self.flipped, self.taken, self.steals, self.ppeok, self.ttadak,
        )


class Work:
    """A mutable working copy of a state for the duration of one step (``apply``) or of a whole
    round (``Playout``).

    ``seats`` holds each seat's frozen ``SeatState`` until a step changes it (``mut``), then its
    mutable twin; ``freeze`` rebuilds only the changed seats and shares the others. The parts a
    step seldom changes (``stacks``, ``payments``) and the one it only extends (``plays``) are the
    state's tuples, replaced when changed (``set_stack``, ``pay``, ``+=``): a step that leaves them
    shares them with the state it came from. ``events``
    collects the step's events unless ``quiet`` (a playout builds none: every event is built
    under ``if not w.quiet``).
    """

    __slots__ = (
        "_order",
        "_scores",
        "carry",
        "dealer",
        "events",
        "floor",
        "go_seq",
        "gukjin",
        "payments",
        "phase",
        "plays",
        "quiet",
        "rules",
        "seats",
        "seed",
        "settlement",
        "stacks",
        "stock",
        "to_move",
        "turn",
    )

    def __init__(
        self, rules: Rules, seed: int, dealer: int, phase: Phase, to_move: int, seats: list[SeatState | _Seat],
        floor: list[int], stacks: tuple[int, ...], stock: list[int], gukjin: str, turn: TurnContext | None,
        go_seq: int, payments: tuple[Payment, ...], carry: bool, settlement: Settlement | None,
        plays: tuple[PlayRecord, ...],
    ) -> None:
        self.rules, self.seed, self.dealer, self.phase, self.to_move = rules, seed, dealer, phase, to_move
        self.seats, self.floor, self.stacks, self.stock = seats, floor, stacks, stock
        self.gukjin, self.turn, self.go_seq, self.payments = gukjin, turn, go_seq, payments
        self.carry, self.settlement, self.plays = carry, settlement, plays
        self.events: list[Event] = []
        self.quiet = False
        self._scores: list[Score | None] = [None] * len(seats)
        """Each seat's score while its pile and 쓸 count are unchanged (``None``: not known)."""
        self._order: tuple[int, ...] | None = None

    @staticmethod
    def of(s: State) -> Work:
        """A working copy of ``s`` (a direct constructor call: compiled, ``cls(...)`` would be a
        generic call parsing its sixteen arguments)."""
        return Work(
            s.rules, s.seed, s.dealer, s.phase, s.to_move, list(s.seats), list(s.floor), s.stacks,
            list(s.stock), s.gukjin, s.turn, s.go_seq, s.payments, s.carry, s.settlement, s.plays,
        )

    @staticmethod
    def fresh(
        rules: Rules, seed: int, dealer: int, hands: list[list[int]], floor: list[int], stock: list[int],
        carry: bool,
    ) -> Work:
        """The working copy of a deal: every hand sorted, nothing played."""
        seats: list[SeatState | _Seat] = [SeatState(hand=tuple(sorted(h))) for h in hands]
        return Work(
            rules, seed, dealer, Phase.PLAY, dealer, seats, floor, _NO_STACKS, stock, "open", None, 0, (), carry,
            None, (),
        )

    def freeze(self, steps: int) -> State:
        return State(
            self.rules, self.seed, self.dealer, self.phase, self.to_move,
            tuple([s.freeze() if isinstance(s, _Seat) else s for s in self.seats]),
            tuple(self.floor), self.stacks, tuple(self.stock), self.gukjin, self.turn, self.go_seq,
            self.payments, self.carry, self.settlement, steps, self.plays,
        )

    def mut(self, seat: int) -> _Seat:
        """The seat as a mutable record (callers changing ``captured`` or ``sseul`` call ``rescore``,
        ``active``: ``reorder``)."""
        s = self.seats[seat]
        if isinstance(s, _Seat):
            return s
        m = _Seat(s)
        self.seats[seat] = m
        return m

    def rescore(self, seat: int) -> None:
        """The seat's pile or 쓸 count changed: its score is to be computed again."""
        self._scores[seat] = None

    def reorder(self) -> None:
        """A seat joined or left the round: the turn order is to be computed again."""
        self._order = None

    def take(self, seat: int, cards: tuple[int, ...]) -> None:
        m = self.mut(seat)
        m.captured += cards
        self._scores[seat] = None

    def capture(self, ctx: Turn, cards: tuple[int, ...], event: bool = True) -> None:
        seat = ctx.seat
        m = self.mut(seat)
        m.captured += cards
        self._scores[seat] = None
        if event and not self.quiet:
            self.events.append(Captured(seat, cards))
        ctx.taken += cards

    def set_stack(self, month: int, value: int) -> None:
        """``stacks[month] = value`` (the tuple is replaced: a step that leaves it shares it)."""
        stacks = self.stacks
        self.stacks = (*stacks[:month], value, *stacks[month + 1:])

    def pay(self, payment: Payment) -> None:
        self.payments += (payment,)
        if not self.quiet:
            self.events.append(InstantPaid(payment))

    def score(self, seat: int) -> Score:
        cached = self._scores[seat]
        if cached is None:
            s = self.seats[seat]
            cached = pile_score(s.captured, self.gukjin == "converted", s.sseul)
            self._scores[seat] = cached
        return cached

    def base(self, seat: int) -> int:
        """The seat's base score (``score(seat).total``), without building a ``Score``."""
        cached = self._scores[seat]
        if cached is not None:
            return cached.total
        s = self.seats[seat]
        return mask_total(mask_of(s.captured), self.gukjin == "converted", s.sseul)

    def order(self) -> tuple[int, ...]:
        order = self._order
        if order is None:
            seats = self.seats
            turns = _TURN_ORDER[len(seats)][self.dealer]
            order = self._order = tuple([s for s in turns if seats[s].active])
        return order

    def has_turn_left(self, seat: int) -> bool:
        s = self.seats[seat]
        return s.active and (bool(s.hand) or (s.spare_flips > 0 and bool(self.stock)))


_SCORE_MEMO: Final[dict[tuple[tuple[int, ...], bool, int], Score]] = {}
_SCORE_MEMO_LIMIT: Final = 1 << 14


def pile_score(captured: tuple[int, ...], converted: bool, sseul: int) -> Score:
    """``scoring.score`` memoized: piles recur from step to step (a pure cache, bounded)."""
    key = (captured, converted, sseul)
    hit = _SCORE_MEMO.get(key)
    if hit is None:
        if len(_SCORE_MEMO) >= _SCORE_MEMO_LIMIT:
            _SCORE_MEMO.clear()
        hit = _SCORE_MEMO[key] = mask_score(mask_of(captured), converted, sseul)
    return hit


def seat_score(state: State, seat: int) -> Score:
    """A seat's base score, recomputed from its pile."""
    s = state.seats[seat]
    return pile_score(s.captured, state.gukjin == "converted", s.sseul)


def card_places(state: State) -> dict[int, str]:
    """Where every card is (``hand:N``, ``pile:N``, ``floor``, ``stock``, ``turn``).

    Raises ``AssertionError`` if a card is in two places or missing: the invariant
    that property tests check after every step.
    """
    places: dict[int, str] = {}

    def put(cards: Sequence[int], where: str) -> None:
        for c in cards:
            assert c not in places, f"card {c} is both in {places[c]} and {where}"
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
    assert set(places) == expected, f"cards missing: {sorted(expected - set(places))}"
    return places
