"""The rules engine's entry points: ``apply`` (checked, typed events, a new frozen state) and
``Playout`` (the same rules in place, for search), over the parts that read like a rule book:

- ``dealing``: the deal from the seed or an explicit ``Deal``, bonus cards, redeals, 총통;
- ``legality``: the legal actions and the one check that says why an action is illegal;
- ``turns``: one step per action, captures, steals, special events, 고/스톱, the round's end;
- ``settle``: the settlement arithmetic (``settlement.py`` holds its values);
- ``working``: the mutable working copy a step changes between two frozen states.

Pure functions over frozen states: no I/O, no clock, no global randomness. The
only randomness is the round's seed, fed to the engine's own generator at the deal.
"""

from __future__ import annotations

from .actions import Action
from .cards import ALL_CARDS
from .dealing import Deal, new_round
from .events import Event
from .legality import check, legal_action_ids, legal_actions, legal_actions_of
from .settle import shake_bomb_count
from .state import Phase, State
from .turns import sellable, step
from .working import Work, card_places, seat_score


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


__all__ = [
    "ALL_CARDS", "Deal", "apply", "apply_unchecked", "card_places", "check", "legal_action_ids",
    "legal_actions", "new_round", "seat_score", "sellable", "shake_bomb_count",
]
