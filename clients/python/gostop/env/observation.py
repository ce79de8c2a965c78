"""The observation of one seat as a fixed-shape vector, and the action mask over the stable action ids.

Everything here is a function of what the seat may know: ``observation_of_view`` encodes an
``engine.View`` (the engine's own boundary of a seat's knowledge, the very object bots and service
clients get), and ``Encoder.encode`` computes the same vector straight from a frozen ``State`` or
from the engine's in-place working copy (the fast path the environments run on). The tests check
that the two agree on every position they play, so the fast path shows no more than the view.

The layout (``LAYOUT``; the table in ``gostop.env``'s docstring and ``docs/research.md`` is
``layout_table()``): seats are counted *relative to the observer*: ``k = 0`` is the observer, ``k``
the seat ``k`` places after it in seat order (the turn order); the slots of seats a smaller table
does not have are zero, so every table size has the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from gostop.engine import MONTH, Action, PlayCard, State, View, action_id
from gostop.engine.cards import ALL_CARDS, BIT, mask_of
from gostop.engine.rules import POINTS_MAX
from gostop.engine.scoring import mask_total
from gostop.engine.state import Phase, PlayRecord
from gostop.engine.working import Work

MAX_SEATS: Final = 4
"""Seat slots of every observation (the largest table)."""
N_ACTIONS: Final = 252
"""Size of the action space: every stable action id is below it (``SellGwang`` is 251)."""
PHASES: Final[tuple[Phase, ...]] = tuple(Phase)
"""The phases in the order of the one-hot ``phase`` flags."""
GUKJIN_STATES: Final = ("open", "kept", "converted")


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
    fields: list[Field] = []

    def add(name: str, size: int, high: float, meaning: str) -> None:
        offset = fields[-1].offset + fields[-1].size if fields else 0
        fields.append(Field(name, offset, size, high, meaning))

    add("hand", ALL_CARDS, 1, "card plane: the observer's hand")
    add("floor", ALL_CARDS, 1, "card plane: the floor")
    seats = f"{MAX_SEATS} card planes, seat +k's at +{ALL_CARDS}k: "
    add("pile", MAX_SEATS * ALL_CARDS, 1, seats + "its captured pile")
    add("shown", MAX_SEATS * ALL_CARDS, 1, seats + "cards of its hand shown by 흔들기")
    add("played", MAX_SEATS * ALL_CARDS, 1, seats + "cards it played from its hand (a 폭탄's three)")
    add("pending", ALL_CARDS, 1, "card plane: the turn's face-up cards in transit (held, played or flipped)")
    add("unseen", ALL_CARDS, 1, "card plane: cards the observer cannot place (other hands, the stock)")
    add("present", MAX_SEATS, 1, "flag per seat (k = 0-3 in every per-seat block): the table has seat +k")
    add("active", MAX_SEATS, 1, "flag per seat: seat +k plays this round (4 players: not sitting out)")
    add("dealer", MAX_SEATS, 1, "flag per seat: seat +k is the 선 (plays first)")
    add("to_move", MAX_SEATS, 1, "flag per seat: seat +k's decision is pending")
    add("phase", len(PHASES), 1, "one-hot: " + ", ".join(p.value for p in PHASES))
    add("gukjin", len(GUKJIN_STATES), 1, "one-hot, 국진 (card 32): " + ", ".join(GUKJIN_STATES))
    add("carry", 1, 1, "flag: the round counts ×2 (after a 나가리)")
    add("hand_size", MAX_SEATS, ALL_CARDS, "count per seat: cards in seat +k's hand")
    add("score", MAX_SEATS, 1000, "per seat: seat +k's base score (the points of its pile)")
    add("gos", MAX_SEATS, ALL_CARDS, "count per seat: gos (고) seat +k declared")
    add("go_base", MAX_SEATS, 1000, "per seat: seat +k's base score at its last go (it may go or stop again "
        "only above it)")
    add("shakes", MAX_SEATS, 12, "count per seat: months seat +k shook (흔들기)")
    add("bombs", MAX_SEATS, 12, "count per seat: months seat +k bombed (폭탄)")
    add("ppeok", MAX_SEATS, ALL_CARDS, "count per seat: 뻑 seat +k made")
    add("spare_flips", MAX_SEATS, ALL_CARDS, "count per seat: seat +k's 빈 내기 (flip-only turns) left")
    add("stock", 1, ALL_CARDS, "count: cards left in the stock")
    add("go_threshold", 1, POINTS_MAX, "the rules' base score from which a seat may stop or go")
    return tuple(fields)


LAYOUT: Final[tuple[Field, ...]] = _layout()
"""Every block of the observation vector, in order."""
FIELDS: Final[dict[str, Field]] = {f.name: f for f in LAYOUT}
OBS_SIZE: Final = LAYOUT[-1].offset + LAYOUT[-1].size
"""Length of the observation vector."""
PLANES: Final = 16
"""Card planes at the start of the vector (``PLANES × 51`` entries, plane ``p`` card ``c`` at ``51p + c``)."""
OBS_HIGH: Final[NDArray[np.float32]] = np.concatenate(
    [np.full(f.size, f.high, dtype=np.float32) for f in LAYOUT]
)
"""Upper bound of each entry (the observation space's ``high``)."""

_FLAGS = FIELDS["present"].offset
_N_FLAGS = FIELDS["hand_size"].offset - _FLAGS
_COUNTS = FIELDS["hand_size"].offset
_PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}
_GUKJIN_INDEX = {g: i for i, g in enumerate(GUKJIN_STATES)}
_MONTH_CARDS = tuple(tuple(c for c in range(ALL_CARDS) if MONTH[c] == m) if m else () for m in range(13))
assert PLANES * ALL_CARDS == _FLAGS


def layout_table() -> str:
    """The layout as a Markdown table (the one in the docs; a test keeps them equal)."""
    rows = ["| entries | name | max | meaning |", "|---|---|---|---|"]
    for f in LAYOUT:
        span = str(f.offset) if f.size == 1 else f"{f.offset}–{f.offset + f.size - 1}"
        high = f"{f.high:g}" if f.high < POINTS_MAX else f"{POINTS_MAX:,}"
        rows.append(f"| {span} | `{f.name}` | {high} | {f.meaning} |")
    return "\n".join(rows)


# ------------------------------------------------------------------------------ actions


def action_ids(legal: Sequence[Action]) -> list[int]:
    """The stable ids of legal actions (a plain card play's id is its card, the commonest case)."""
    return [a.card if type(a) is PlayCard and not a.shake else action_id(a) for a in legal]


def action_mask(ids: Sequence[int]) -> NDArray[np.int8]:
    """The ``int8`` mask over the ``N_ACTIONS`` ids: 1 for each id in ``ids``."""
    mask = np.zeros(N_ACTIONS, dtype=np.int8)
    mask[list(ids)] = 1
    return mask


# ----------------------------------------------------------------------- played cards


def played_cards(record: PlayRecord) -> int:
    """The card mask of the cards a play took from the seat's hand: the card, or a 폭탄's three (the
    month's cards less the one that lay on the floor); none for a 빈 내기."""
    ident = record.action
    if ident < 64 + ALL_CARDS:
        return BIT[ident % 64]
    if 128 < ident <= 140:
        on_floor = mask_of(record.floor)
        return mask_of(c for c in _MONTH_CARDS[ident - 128] if not BIT[c] & on_floor)
    return 0


class PlayedCards:
    """Per seat, the card mask of what it played from its hand this round, kept current from the
    round's public play records (which only grow within a round: ``update`` reads the new ones)."""

    __slots__ = ("done", "masks")

    def __init__(self, seats: int) -> None:
        self.masks = [0] * seats
        self.done = 0
        """Records read so far."""

    def update(self, plays: Sequence[PlayRecord]) -> list[int]:
        masks = self.masks
        for record in plays[self.done:]:
            masks[record.seat] |= played_cards(record)
        self.done = len(plays)
        return masks


# ------------------------------------------------------------------------ the encoders


class Encoder:
    """The observation of a seat, computed from a ``State`` or the engine's working copy (``Work``).

    One encoder follows one round: it keeps the cards each seat played (the round's play records
    only grow) and the card masks of the hands and piles it last read (a hand or pile the engine
    has not replaced is not read again): call ``reset`` at a new round. The vector equals
    ``observation_of_view(view(state, seat))``.

    The vector's card planes and flags, and the action mask after them, are built as the bits of
    one integer, which NumPy unpacks in one call: the environments' hot path.
    """

    __slots__ = ("_deck", "_masks", "_n", "_played", "_present", "_template")

    def __init__(self, seats: int, deck_size: int, go_threshold: int) -> None:
        self._n = seats
        self._deck = mask_of(range(deck_size))
        self._present = ((1 << seats) - 1) << _PACKED_FLAGS
        template = np.zeros(OBS_SIZE, dtype=np.float32)
        template[FIELDS["go_threshold"].offset] = go_threshold
        self._template = template
        self.reset()

    def reset(self) -> None:
        """Start a new round."""
        self._played = PlayedCards(self._n)
        self._masks: list[list[Any]] = [[None, 0, None, 0, None, 0, -1, None, 0] for _ in range(self._n)]
        """Per seat, as last read: hand, its mask, pile, its mask, shown cards, their mask, 쓸 count,
        국진 converted, the pile's base score."""

    def hand_mask(self, seat: int, hand: tuple[int, ...]) -> int:
        """The card mask of ``seat``'s hand ``hand`` (kept for the next observation of the seat)."""
        c = self._masks[seat]
        if hand is not c[0]:
            c[0], c[1] = hand, mask_of(hand)
        mask: int = c[1]
        return mask

    def encode(self, src: State | Work, seat: int) -> NDArray[np.float32]:
        """The observation of ``seat`` (a new array)."""
        return self.observe(src, seat, 0)[0]

    def observe(
        self, src: State | Work, seat: int, legal: int
    ) -> tuple[NDArray[np.float32], NDArray[np.int8]]:
        """The observation of ``seat`` and the action mask with bit ``i`` of ``legal`` set for each
        legal action id ``i`` (new arrays)."""
        n = self._n
        seats = src.seats
        plays = src.plays
        played = self._played.masks if len(plays) == self._played.done else self._played.update(plays)
        converted = src.gukjin == "converted"
        to_move, dealer = src.to_move, src.dealer
        counts = [0] * (8 * MAX_SEATS + 1)
        floor = mask_of(src.floor)
        packed = floor << 51 | self._present | legal << _PACKED_MASK
        visible = floor
        cache = self._masks
        for k in range(n):
            i = (seat + k) % n
            s = seats[i]
            c = cache[i]
            pile = s.captured
            if pile is not c[2] or s.sseul != c[6] or converted is not c[7]:
                # (the pile's base score, engine.seat_score(...).total, read again when its inputs change)
                c[2], c[3], c[6], c[7] = pile, mask_of(pile), s.sseul, converted
                c[8] = mask_total(c[3], converted, s.sseul)
            shown = s.revealed
            if shown is not c[4]:
                c[4], c[5] = shown, mask_of(shown)
            visible |= c[3] | c[5]
            packed |= c[3] << (102 + 51 * k) | c[5] << (306 + 51 * k) | played[i] << (510 + 51 * k) | (
                s.active << (_PACKED_FLAGS + 4 + k) | (i == dealer) << (_PACKED_FLAGS + 8 + k)
                | (i == to_move) << (_PACKED_FLAGS + 12 + k))
            hand = s.hand
            counts[k:32:4] = (
                len(hand), c[8], s.gos, s.last_go_base, len(s.shakes), len(s.bombs), len(s.ppeok_turns), s.spare_flips,
            )
            if k == 0:
                if hand is not c[0]:
                    c[0], c[1] = hand, mask_of(hand)
                packed |= c[1]
                visible |= c[1]
        counts[32] = len(src.stock)
        ctx = src.turn
        if ctx is not None:
            pending = _pending(src)
            visible |= pending
            packed |= pending << (51 * 14)
        packed |= (self._deck & ~visible) << (51 * 15) | _PHASE_BITS[src.phase] | _GUKJIN_BITS[src.gukjin] | (
            src.carry << (_PACKED_FLAGS + 27))
        raw = np.frombuffer(packed.to_bytes(_PACKED_BYTES, "little"), np.uint8)
        bits = np.unpackbits(raw, bitorder="little").view(np.int8)
        out = self._template.copy()
        out[:_COUNTS] = bits[:_COUNTS]
        try:
            out[_COUNTS:_COUNTS + 33] = np.frombuffer(bytes(counts), np.uint8)
        except ValueError:  # a count above 255 (a score of a house rule's making)
            out[_COUNTS:_COUNTS + 33] = counts
        return out, bits[_PACKED_MASK:_PACKED_MASK + N_ACTIONS]


_PACKED_FLAGS = _FLAGS
"""Bit of the packed integer where the flags begin: its bits are the vector's entries up to the
counts (card plane ``p``'s card ``c`` is bit ``51p + c``), and then the action mask."""
_PACKED_MASK = _COUNTS
"""Bit where the action mask begins."""
_PACKED_BYTES = (_PACKED_MASK + N_ACTIONS + 7) // 8
_PHASE_BITS = {p: 1 << (_PACKED_FLAGS + 16 + i) for i, p in enumerate(PHASES)}
_GUKJIN_BITS = {g: 1 << (_PACKED_FLAGS + 24 + i) for i, g in enumerate(GUKJIN_STATES)}
assert FIELDS["phase"].offset == _FLAGS + 16 and FIELDS["gukjin"].offset == _FLAGS + 24
assert FIELDS["carry"].offset == _FLAGS + 27 and FIELDS["hand_size"].offset == _FLAGS + _N_FLAGS


def _pending(src: State | Work) -> int:
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


def encode_state(state: State, seat: int) -> NDArray[np.float32]:
    """The observation of ``seat`` in ``state`` (a one-off ``Encoder``)."""
    rules = state.rules
    return Encoder(rules.players, rules.deck_size, rules.go_threshold).encode(state, seat)


def observation_of_view(v: View) -> NDArray[np.float32]:
    """The observation of the seat ``v.viewer`` from its view: the definition the fast ``Encoder``
    is tested against, and the way to encode the views a service client receives."""
    if v.viewer < 0:
        raise ValueError("a spectator's view has no observer seat")
    rules = v.rules
    if rules is None:
        raise ValueError("the view carries no rules")
    n = len(v.seats)
    out = np.zeros(OBS_SIZE, dtype=np.float32)

    def plane(name: str, cards: Any, k: int = 0) -> None:
        for c in cards:
            out[FIELDS[name].offset + ALL_CARDS * k + c] = 1

    def put(name: str, k: int, value: float) -> None:
        out[FIELDS[name].offset + k] = value

    me = v.seats[v.viewer]
    plane("hand", me.hand)
    plane("floor", v.floor)
    known: set[int] = set(me.hand) | set(v.floor)
    played: list[set[int]] = [set() for _ in range(n)]
    for record in v.plays:
        mask = played_cards(record)
        played[record.seat].update(c for c in range(ALL_CARDS) if mask >> c & 1)
    for k in range(n):
        s = v.seats[(v.viewer + k) % n]
        plane("pile", s.captured, k)
        plane("shown", s.revealed, k)
        plane("played", played[s.seat], k)
        known |= set(s.captured) | set(s.revealed)
        put("present", k, 1)
        put("active", k, s.active)
        put("dealer", k, s.seat == v.dealer)
        put("to_move", k, s.seat == v.to_move)
        put("hand_size", k, s.hand_size)
        put("score", k, s.score.total)
        put("gos", k, s.gos)
        put("go_base", k, s.last_go_base)
        put("shakes", k, len(s.shakes))
        put("bombs", k, len(s.bombs))
        put("ppeok", k, s.ppeok)
        put("spare_flips", k, s.spare_flips)
    pending: set[int] = set(v.turn.held) if v.turn is not None else set()
    if v.pending is not None:
        pending.update(c for c in (v.pending.played, v.pending.flipped) if c >= 0)
    plane("pending", pending)
    plane("unseen", set(range(rules.deck_size)) - known - pending)
    put("phase", _PHASE_INDEX[v.phase], 1)
    put("gukjin", _GUKJIN_INDEX[v.gukjin], 1)
    put("carry", 0, v.carry)
    put("stock", 0, v.stock_count)
    put("go_threshold", 0, rules.go_threshold)
    return out
