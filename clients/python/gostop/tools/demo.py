"""``gostop demo``: a seeded round between two random players, every event printed."""

from __future__ import annotations

import sys

from gostop.engine import Rules, apply, legal_actions, new_round
from gostop.engine.render import event_line, state_text
from gostop.engine.rng import Rng


def demo(preset: str, players: int | None, seed: int) -> int:
    """Play one round between two seeded random players and print every event."""
    write = sys.stdout.write
    rules = Rules.preset(preset, players=players)
    write(f"gostop demo: preset {rules.name}, {rules.players} players, seed {seed}\n")
    state, events = new_round(rules, seed)
    for e in events:
        write(event_line(e) + "\n")
    rng = Rng(seed ^ 0x5EED)
    while not state.over:
        actions = legal_actions(state)
        action = actions[rng.below(len(actions))]
        state, events = apply(state, action)
        for e in events:
            write(event_line(e) + "\n")
    write("\n" + state_text(state) + "\n")
    return 0
