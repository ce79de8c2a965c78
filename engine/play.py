"""Playing a round: ``apply`` (checked, typed events, a new frozen state) and ``Playout`` (the
same rules in place, for search and environments).

Pure functions over frozen states: no I/O, no clock, no global randomness; the only randomness
is the round's seed, fed to the engine's own generator at the deal.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .actions import Action
from .errors import InvalidDeal
from .events import Event
from .legality import check, legal_actions_of
from .state import Phase, Position, State
from .turns import step
from .working import Work

if TYPE_CHECKING:
    from .observer import Observer


def apply(state: State, action: Action, seat: int | None = None) -> tuple[State, list[Event]]:
    """Apply ``action`` of the seat to move; return the new state and the step's events.

    Raises ``MalformedAction``, ``RoundOver``, ``NotYourTurn`` or ``IllegalAction``
    (with the precise reason) and leaves ``state`` untouched. ``seat``, when given, is
    the seat claiming to act.
    """
    check(state, action, seat)
    return apply_unchecked(state, action)


def apply_unchecked(state: State, action: Action) -> tuple[State, list[Event]]:
    """``apply`` for an action already known to be legal."""
    w = Work.of(state)
    step(w, action)
    return w.freeze(state.steps + 1), w.events




class Playout:
    """A round played in place for search and simulation: the fast path of bots.

    No events are built and no frozen copy is made per step; the rules applied are
    exactly those of ``apply`` (the same step functions). ``state()`` freezes the
    current position at any time.

    >>> from gostop.engine import Rules, new_round
    >>> p = Playout(new_round(Rules.preset("standard"), seed=3)[0])
    >>> while not p.over:
    ...     p.apply(p.legal_actions()[0])
    >>> p.state().settlement is not None
    True
    """

    __slots__ = ("_steps", "_w")

    def __init__(self, state: State) -> None:
        self._w = Work.of(state)
        self._w.quiet = True
        self._steps = state.steps

    @property
    def over(self) -> bool:
        return self._w.phase is Phase.OVER

    @property
    def to_move(self) -> int:
        return self._w.to_move

    def legal_actions(self) -> list[Action]:
        """``legal_actions`` of the current position."""
        return legal_actions_of(self._w)

    def apply(self, action: Action) -> None:
        """Apply an action known to be legal (from ``legal_actions``)."""
        step(self._w, action)
        self._steps += 1

    def state(self) -> State:
        """The current position as a frozen state."""
        return self._w.freeze(self._steps)

    @property
    def position(self) -> Position:
        """The current position read in place, without a copy (it changes with every ``apply``):
        the fields of ``State``, for search code that reads many positions and freezes few."""
        return self._w

    def order_stock(self, top: Sequence[int]) -> None:
        """Put the cards ``top`` on the top of the stock, in that order (the others keep theirs):
        a determinization fixing the cards chance draws next.

        Raises ``InvalidDeal`` unless ``top`` names distinct cards of the stock.
        """
        stock = self._w.stock
        first = list(top)
        if stock[:len(first)] == first:
            return
        chosen = set(first)
        if len(chosen) != len(first) or not chosen.issubset(stock):
            raise InvalidDeal(f"not distinct cards of the stock: {first}")
        stock[:] = first + [c for c in stock if c not in chosen]

    def observe(self, observer: Observer, seat: int, legal: int) -> tuple[array[float], array[int]]:
        """``observer.observe`` of the current position (without freezing it): a seat's observation
        vector and action mask, for the research environments."""
        return observer.observe(self._w, seat, legal)


__all__ = ["Playout", "apply", "apply_unchecked"]
