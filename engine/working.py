"""The mutable working copy of a round: what ``apply`` and ``Playout`` change in place between two
frozen states, with the scores and turn order it keeps current and the events it reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Final

from .cards import mask_of
from .events import Captured, Event, InstantPaid, RoundSettled, ScoreChanged
from .rules import Rules
from .scoring import Score, mask_total, pile_score, same_score
from .settlement import Payment, Settlement
from .state import (
    NO_STACK,
    TURN_ORDER,
    Gukjin,
    Phase,
    PlayRecord,
    SeatState,
    State,
    StealCause,
    TurnContext,
    TurnKind,
    has_turn_left,
)

_NO_STACKS: Final = (NO_STACK,) * 13
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
    kind: TurnKind
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
    steals: tuple[StealCause, ...]
    ppeok: bool
    ttadak: bool

    def __init__(
        self, seat: int, kind: TurnKind, card: int, month: int, last: bool, before: Score | None,
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
        floor: list[int], stacks: tuple[int, ...], stock: list[int], gukjin: Gukjin, turn: TurnContext | None,
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
            turns = TURN_ORDER[len(seats)][self.dealer]
            order = self._order = tuple([s for s in turns if seats[s].active])
        return order

    def has_turn_left(self, seat: int) -> bool:
        """``State.has_turn_left`` of the working copy."""
        s = self.seats[seat]
        return has_turn_left(s.active, s.hand, s.spare_flips, bool(self.stock))

    def report_scores(self, before: Sequence[Score]) -> None:
        """``report_score`` of every seat, from the scores ``before`` (one per seat)."""
        for i, b in enumerate(before):
            self.report_score(i, b)

    def report_score(self, seat: int, before: Score) -> None:
        """A ``ScoreChanged`` event if ``seat``'s score differs from ``before``."""
        if self.quiet:
            return
        now = self.score(seat)
        if not same_score(now, before):
            self.events.append(ScoreChanged(seat, now, now.total))

    def report_turn_score(self, ctx: Turn) -> None:
        """``report_score`` of the mover at the end of its turn, from the score it began with."""
        if self.quiet:
            return
        if ctx.before is None:
            s = self.seats[ctx.seat]
            converted = self.gukjin == "converted"
            if s.captured is ctx.pile and s.sseul == ctx.pile_sseul and converted == ctx.pile_converted:
                return  # the inputs of the score are those the turn began with: so is the score
        self.report_score(ctx.seat, ctx.before_score())

    def finish(self, settlement: Settlement) -> None:
        """End the round with ``settlement``."""
        self.settlement = settlement
        self.phase, self.to_move, self.turn = Phase.OVER, -1, None
        if not self.quiet:
            self.events.append(RoundSettled(settlement))
