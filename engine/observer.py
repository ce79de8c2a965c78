"""A seat's observation as a fixed-shape vector of numbers, kept current step by step: the
research environments' hot path (``gostop.env``), compiled with the engine.

Everything here is a function of what the seat may know: the environments' tests check, position
by position, that the vector equals the encoding of the seat's ``View`` (the engine's own boundary
of a seat's knowledge). The layout (``LAYOUT``) is documented in ``gostop.env`` and
``docs/research.md``: 16 card planes of 51 entries (the observer's hand, the floor, each seat's
captured pile, the cards its 흔들기 showed and the cards it played, the turn's face-up cards in
transit, the cards the observer cannot place), per-seat flags and counts, the phase. Seats are
counted relative to the observer: ``k = 0`` is the observer, ``k`` the seat ``k`` places after it
in seat order; the slots of seats a smaller table does not have are zero, so every table size
has the same shape.

This module has no NumPy: ``Observer`` writes into ``array.array`` buffers, which the environments
share with NumPy arrays (``numpy.frombuffer``) and copy once per observation.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .cards import ALL_CARDS, BIT, MONTH, mask_of
from .rules import POINTS_MAX
from .scoring import mask_total
from .state import Phase, PlayRecord, State

if TYPE_CHECKING:
    from .working import Work

MAX_SEATS: Final = 4
"""Seat slots of every observation (the largest table)."""
N_ACTIONS: Final = 252
"""Size of the action space: every stable action id is below it (``SellGwang`` is 251)."""
PHASES: Final[tuple[Phase, ...]] = tuple(Phase)
"""The phases in the order of the one-hot ``phase`` flags."""
GUKJIN_STATES: Final[tuple[str, ...]] = ("open", "kept", "converted")


@dataclass(frozen=True)
class Field:
    """One named block of the observation vector."""

    name: str
    offset: int
    size: int
    high: float
    """The largest value an entry of the block may take (the lowest is 0)."""
    meaning: str


def _layout() -> tuple[Field, ...]:
    seats = f"{MAX_SEATS} card planes, seat +k's at +{ALL_CARDS}k: "
    blocks: list[tuple[str, int, float, str]] = [
        ("hand", ALL_CARDS, 1, "card plane: the observer's hand"),
        ("floor", ALL_CARDS, 1, "card plane: the floor"),
        ("pile", MAX_SEATS * ALL_CARDS, 1, seats + "its captured pile"),
        ("shown", MAX_SEATS * ALL_CARDS, 1, seats + "cards of its hand shown by 흔들기"),
        ("played", MAX_SEATS * ALL_CARDS, 1, seats + "cards it played from its hand (a 폭탄's three)"),
        ("pending", ALL_CARDS, 1, "card plane: the turn's face-up cards in transit (held, played or flipped)"),
        ("unseen", ALL_CARDS, 1, "card plane: cards the observer cannot place (other hands, the stock)"),
        ("present", MAX_SEATS, 1, "flag per seat (k = 0-3 in every per-seat block): the table has seat +k"),
        ("active", MAX_SEATS, 1, "flag per seat: seat +k plays this round (4 players: not sitting out)"),
        ("dealer", MAX_SEATS, 1, "flag per seat: seat +k is the 선 (plays first)"),
        ("to_move", MAX_SEATS, 1, "flag per seat: seat +k's decision is pending"),
        ("phase", len(PHASES), 1, "one-hot: " + ", ".join(p.value for p in PHASES)),
        ("gukjin", len(GUKJIN_STATES), 1, "one-hot, 국진 (card 32): " + ", ".join(GUKJIN_STATES)),
        ("carry", 1, 1, "flag: the round counts ×2 (after a 나가리)"),
        ("hand_size", MAX_SEATS, ALL_CARDS, "count per seat: cards in seat +k's hand"),
        ("score", MAX_SEATS, 1000, "per seat: seat +k's base score (the points of its pile)"),
        ("gos", MAX_SEATS, ALL_CARDS, "count per seat: gos (고) seat +k declared"),
        ("go_base", MAX_SEATS, 1000, "per seat: seat +k's base score at its last go (it may go or stop again "
         "only above it)"),
        ("shakes", MAX_SEATS, 12, "count per seat: months seat +k shook (흔들기)"),
        ("bombs", MAX_SEATS, 12, "count per seat: months seat +k bombed (폭탄)"),
        ("ppeok", MAX_SEATS, ALL_CARDS, "count per seat: 뻑 seat +k made"),
        ("spare_flips", MAX_SEATS, ALL_CARDS, "count per seat: seat +k's 빈 내기 (flip-only turns) left"),
        ("stock", 1, ALL_CARDS, "count: cards left in the stock"),
        ("go_threshold", 1, POINTS_MAX, "the rules' base score from which a seat may stop or go"),
    ]
    fields: list[Field] = []
    offset = 0
    for name, size, high, meaning in blocks:
        fields.append(Field(name, offset, size, high, meaning))
        offset += size
    return tuple(fields)


LAYOUT: Final[tuple[Field, ...]] = _layout()
"""Every block of the observation vector, in order."""
FIELDS: Final[dict[str, Field]] = {f.name: f for f in LAYOUT}
OBS_SIZE: Final[int] = LAYOUT[-1].offset + LAYOUT[-1].size
"""Length of the observation vector."""
PLANES: Final = 16
"""Card planes at the start of the vector (``PLANES × 51`` entries, plane ``p`` card ``c`` at ``51p + c``)."""
FLAGS_AT: Final[int] = FIELDS["present"].offset
"""Where the flags begin (``present``, ``active``, ``dealer``, ``to_move``, ``phase``, ``gukjin``,
``carry``: 28 entries, one bit each of ``Observer``'s flag integer)."""
COUNTS_AT: Final[int] = FIELDS["hand_size"].offset
"""Where the counts begin (eight per-seat blocks of four, then ``stock``)."""
N_COUNTS: Final = 8 * MAX_SEATS + 1
_GO_THRESHOLD_AT: Final[int] = FIELDS["go_threshold"].offset
_PHASE_FLAG: Final[dict[Phase, int]] = {p: 1 << (16 + i) for i, p in enumerate(PHASES)}
_GUKJIN_FLAG: Final[dict[str, int]] = {g: 1 << (24 + i) for i, g in enumerate(GUKJIN_STATES)}
_MONTH_CARDS: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(c for c in range(ALL_CARDS) if MONTH[c] == m) if m else () for m in range(13)
)
_INDEX: Final[tuple[object, ...]] = tuple(range(OBS_SIZE))
"""The entries' indexes as objects, and the values below: the compiled ``Observer.observe`` sets
the buffers' items with them as they are, without making a Python object for each (where most of its
time went)."""
_ONE: Final[object] = 1.0
_ZERO: Final[object] = 0.0
_TRUE: Final[object] = 1
_FALSE: Final[object] = 0
assert PLANES * ALL_CARDS == FLAGS_AT
assert FIELDS["phase"].offset == FLAGS_AT + 16 and FIELDS["gukjin"].offset == FLAGS_AT + 24
assert FIELDS["carry"].offset == FLAGS_AT + 27 and COUNTS_AT == FLAGS_AT + 28
assert FIELDS["stock"].offset == COUNTS_AT + 32


def played_cards(record: PlayRecord) -> int:
    """The card mask of the cards a play took from the seat's hand: the card, or a 폭탄's three (the
    month's cards less the one that lay on the floor); none for a 빈 내기."""
    ident = record.action
    if ident < 64 + ALL_CARDS:
        return BIT[ident % 64]
    if 128 < ident <= 140:
        on_floor = mask_of(record.floor)
        return mask_of([c for c in _MONTH_CARDS[ident - 128] if not BIT[c] & on_floor])
    return 0


class PlayedCards:
    """Per seat, the card mask of what it played from its hand this round, kept current from the
    round's public play records (which only grow within a round: ``update`` reads the new ones)."""

    __slots__ = ("done", "masks")

    def __init__(self, seats: int) -> None:
        self.masks: list[int] = [0] * seats
        self.done = 0
        """Records read so far."""

    def update(self, plays: Sequence[PlayRecord]) -> list[int]:
        masks = self.masks
        for j in range(self.done, len(plays)):
            record = plays[j]
            masks[record.seat] |= played_cards(record)
        self.done = len(plays)
        return masks


def pending_cards(src: State | Work) -> int:
    """The card mask of the turn's face-up cards in transit (as ``engine.card_places`` finds them)."""
    ctx = src.turn
    if ctx is None:
        return 0
    out = mask_of(ctx.held)
    if src.phase is Phase.CHOOSE_HAND:
        out |= BIT[ctx.card]
    elif src.phase is Phase.CHOOSE_FLIP:
        out |= BIT[ctx.flipped]
    return out


class _SeatCache:
    """A seat's hand, pile and shown cards as last read, with their masks (a tuple the engine has not
    replaced is not read again) and the pile's base score."""

    __slots__ = ("converted", "hand", "hand_mask", "pile", "pile_mask", "score", "shown", "shown_mask", "sseul")

    def __init__(self) -> None:
        self.hand: tuple[int, ...] | None = None
        self.hand_mask = 0
        self.pile: tuple[int, ...] | None = None
        self.pile_mask = 0
        self.shown: tuple[int, ...] | None = None
        self.shown_mask = 0
        self.sseul = -1
        self.converted = False
        self.score = 0


class _Seen:
    """An observer seat's vector and action mask as last written, with the integers they encode."""

    __slots__ = ("counts", "flags", "legal", "mask", "planes", "vector")

    def __init__(self, template: array[float]) -> None:
        self.vector: array[float] = array("f", template)
        self.mask: array[int] = array("b", bytes(N_ACTIONS))
        self.planes: list[int] = [0] * PLANES
        self.flags = 0
        self.counts: list[int] = [0] * N_COUNTS
        self.legal = 0


class Observer:
    """The observations of a round's seats, computed from a ``State`` or the engine's working copy
    (``Work``) and kept current: each observer seat has its own vector and action mask, and an
    observation writes only the entries that changed since that seat's last one (a step moves a
    few cards). One observer follows one round: ``reset`` at a new round.
    """

    __slots__ = ("_cache", "_deck", "_n", "_played", "_present", "_seen", "_template")

    def __init__(self, seats: int, deck_size: int, go_threshold: int) -> None:
        self._n = seats
        self._deck = mask_of(range(deck_size))
        self._present = (1 << seats) - 1
        template: array[float] = array("f", bytes(4 * OBS_SIZE))
        template[_GO_THRESHOLD_AT] = float(go_threshold)
        self._template = template
        self._played = PlayedCards(seats)
        self._cache: list[_SeatCache] = []
        self._seen: list[_Seen | None] = []
        self.reset()

    def reset(self) -> None:
        """Start a new round (the buffers ``observe`` returned before are no longer written)."""
        self._played = PlayedCards(self._n)
        self._cache = [_SeatCache() for _ in range(self._n)]
        self._seen = [None] * self._n

    def hand_mask(self, seat: int, hand: tuple[int, ...]) -> int:
        """The card mask of ``seat``'s hand ``hand`` (kept for the next observation of the seat)."""
        c = self._cache[seat]
        if hand is not c.hand:
            c.hand, c.hand_mask = hand, mask_of(hand)
        return c.hand_mask

    def observe(self, src: State | Work, seat: int, legal: int) -> tuple[array[float], array[int]]:
        """The observation of ``seat`` and its action mask (bit ``i`` of ``legal`` set for each legal
        action id ``i``): the seat's own buffers, written in place, valid until its next observation
        or ``reset`` (copy them to keep them)."""
        n = self._n
        seats = src.seats
        plays = src.plays
        tracker = self._played
        played = tracker.masks if len(plays) == tracker.done else tracker.update(plays)
        converted = src.gukjin == "converted"
        to_move = src.to_move
        dealer = src.dealer
        counts: list[int] = [0] * N_COUNTS
        planes: list[int] = [0] * PLANES
        floor = mask_of(src.floor)
        planes[1] = floor
        flags = self._present | _PHASE_FLAG[src.phase] | _GUKJIN_FLAG[src.gukjin] | int(src.carry) << 27
        visible = floor
        cache = self._cache
        for k in range(n):
            i = (seat + k) % n
            s = seats[i]
            c = cache[i]
            pile = s.captured
            sseul = s.sseul
            if pile is not c.pile or sseul != c.sseul or converted is not c.converted:
                # (the pile's base score, engine.seat_score(...).total, read again when its inputs change)
                c.pile, c.pile_mask, c.sseul, c.converted = pile, mask_of(pile), sseul, converted
                c.score = mask_total(c.pile_mask, converted, sseul)
            shown = s.revealed
            if shown is not c.shown:
                c.shown, c.shown_mask = shown, mask_of(shown)
            visible |= c.pile_mask | c.shown_mask
            planes[2 + k] = c.pile_mask
            planes[6 + k] = c.shown_mask
            planes[10 + k] = played[i]
            flags |= int(s.active) << (4 + k) | int(i == dealer) << (8 + k) | int(i == to_move) << (12 + k)
            hand = s.hand
            counts[k] = len(hand)
            counts[4 + k] = c.score
            counts[8 + k] = s.gos
            counts[12 + k] = s.last_go_base
            counts[16 + k] = len(s.shakes)
            counts[20 + k] = len(s.bombs)
            counts[24 + k] = len(s.ppeok_turns)
            counts[28 + k] = s.spare_flips
            if k == 0:
                planes[0] = self.hand_mask(i, hand)
                visible |= planes[0]
        counts[32] = len(src.stock)
        if src.turn is not None:
            pending = pending_cards(src)
            planes[14] = pending
            visible |= pending
        planes[15] = self._deck & ~visible
        seen = self._seen[seat]
        if seen is None:
            seen = _Seen(self._template)
            self._seen[seat] = seen
        out = seen.vector
        before = seen.planes
        for p in range(PLANES):
            if planes[p] != before[p]:
                _write_bits(out, ALL_CARDS * p, planes[p], before[p], _ONE, _ZERO)
        seen.planes = planes
        _write_bits(out, FLAGS_AT, flags, seen.flags, _ONE, _ZERO)
        seen.flags = flags
        old = seen.counts
        for j in range(N_COUNTS):
            value = counts[j]
            if value != old[j]:
                out[COUNTS_AT + j] = float(value)
        seen.counts = counts
        _write_bits(seen.mask, 0, legal, seen.legal, _TRUE, _FALSE)
        seen.legal = legal
        return seen.vector, seen.mask


def _write_bits(buffer: Any, first: int, now: int, before: int, on: object, off: object) -> None:
    """Entries ``first + i`` of ``buffer`` set to ``on`` or ``off`` for each bit ``i`` where ``now``
    differs from ``before`` (the integer the entries encoded). ``buffer`` is ``Any`` and the values
    boxed constants: compiled, the items are set without making a Python object for each."""
    changed = now ^ before
    first -= 1
    while changed:
        low = changed & -changed
        buffer[_INDEX[first + low.bit_length()]] = on if now & low else off
        changed ^= low
