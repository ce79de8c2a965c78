"""The preset configurations every engine test runs over, and a random player."""

from __future__ import annotations

import random
from typing import Final

from gostop.engine import Event, Rules, State, apply, legal_actions, new_round

CONFIGS: Final[list[tuple[str, int]]] = [
    ("standard", 2),
    ("standard", 3),
    ("simple", 2),
    ("classic", 2),
    ("classic", 3),
    ("classic", 4),
    ("house", 3),
    ("house", 2),
    ("arcade", 2),
]
"""Every (preset, players) pair the spec defines."""


def config_id(config: tuple[str, int]) -> str:
    """A readable pytest id for a configuration: ``standard-2p``."""
    return f"{config[0]}-{config[1]}p"


def play_random(rules: Rules, seed: int, chooser_seed: int) -> tuple[State, list[Event]]:
    """Play a whole round, choosing uniformly among the legal actions with ``Random(chooser_seed)``.

    Returns the final state and every event of the round, the deal's included.
    """
    chooser = random.Random(chooser_seed)
    state, events = new_round(rules, seed)
    all_events = list(events)
    while not state.over:
        actions = legal_actions(state)
        state, events = apply(state, actions[chooser.randrange(len(actions))])
        all_events.extend(events)
    return state, all_events
