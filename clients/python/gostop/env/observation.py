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
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gostop.engine import Action, PlayCard, Playout, State, View, action_id
from gostop.engine.cards import ALL_CARDS
from gostop.engine.observer import (
    FIELDS,
    GUKJIN_STATES,
    LAYOUT,
    MAX_SEATS,
    N_ACTIONS,
    OBS_SIZE,
    PHASES,
    PLANES,
    Field,
    Observer,
    PlayedCards,
    played_cards,
)
from gostop.engine.rules import POINTS_MAX

__all__ = [
    "FIELDS", "GUKJIN_STATES", "LAYOUT", "MAX_SEATS", "N_ACTIONS", "OBS_HIGH", "OBS_SIZE", "PHASES", "PLANES",
    "Encoder", "Field", "PlayedCards", "action_ids", "action_mask", "encode_state", "layout_table",
    "observation_of_view", "played_cards",
]

OBS_HIGH: NDArray[np.float32] = np.concatenate([np.full(f.size, f.high, dtype=np.float32) for f in LAYOUT])
"""Upper bound of each entry (the observation space's ``high``)."""

_PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}
_GUKJIN_INDEX = {g: i for i, g in enumerate(GUKJIN_STATES)}


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


# ------------------------------------------------------------------------ the encoder


class Encoder:
    """The observation of a seat, computed from a ``State`` or a ``Playout``'s live position
    by the engine's ``Observer`` (compiled with the engine), as NumPy arrays.

    One encoder follows one round (``reset`` at a new round): each observer seat's vector is kept
    from its last observation and only what changed since is written (a step moves a few cards),
    then copied out. The vector equals ``observation_of_view(view(state, seat))``: the
    environments' hot path.
    """

    __slots__ = ("_arrays", "_observer")

    def __init__(self, seats: int, deck_size: int, go_threshold: int) -> None:
        self._observer = Observer(seats, deck_size, go_threshold)
        self._arrays: list[tuple[Any, NDArray[np.float32], NDArray[np.int8]] | None] = [None] * seats
        """Per seat: the observer's vector buffer and NumPy arrays sharing its and the mask's memory."""

    def reset(self) -> None:
        """Start a new round."""
        self._observer.reset()
        self._arrays = [None] * len(self._arrays)

    def hand_mask(self, seat: int, hand: tuple[int, ...]) -> int:
        """The card mask of ``seat``'s hand ``hand`` (kept for the next observation of the seat)."""
        return self._observer.hand_mask(seat, hand)

    def encode(self, src: State | Playout, seat: int) -> NDArray[np.float32]:
        """The observation of ``seat`` (a new array)."""
        return self.observe(src, seat, 0)[0]

    def observe(
        self, src: State | Playout, seat: int, legal: int
    ) -> tuple[NDArray[np.float32], NDArray[np.int8]]:
        """The observation of ``seat`` and the action mask with bit ``i`` of ``legal`` set for each
        legal action id ``i`` (new arrays)."""
        if isinstance(src, Playout):
            vector, mask = src.observe(self._observer, seat, legal)
        else:
            vector, mask = self._observer.observe(src, seat, legal)
        arrays = self._arrays[seat]
        if arrays is None or arrays[0] is not vector:
            arrays = (vector, np.frombuffer(vector, np.float32), np.frombuffer(mask, np.int8))
            self._arrays[seat] = arrays
        return arrays[1].copy(), arrays[2].copy()


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
