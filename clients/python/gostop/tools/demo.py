"""``gostop demo``: a seeded round between two random players, every event printed.

It speaks as ``gostop play`` does (``render.person_voice``): cards by the names people use (똥광,
비쌍피, 4월 초단), Korean terms, the table and the settlement screen of ``gostop play`` at the end.
"""

from __future__ import annotations

import sys

from gostop.engine import Rules, apply, legal_actions, new_round, view
from gostop.engine.rng import Rng
from gostop.tools.play import event_lines, settlement_screen, table_text
from gostop.wire.convert import MatchSummary


def demo(preset: str, players: int | None, seed: int) -> int:
    """Play one round between seeded random players and print every event, then the table and the settlement."""
    write = sys.stdout.write
    rules = Rules.preset(preset, players=players)
    write(f"gostop demo: preset {rules.name}, {rules.players} players, seed {seed}\n")
    names: dict[int, str] = {}
    state, events = new_round(rules, seed)
    rng = Rng(seed ^ 0x5EED)
    while True:
        for e in events:
            for line in event_lines(e, names, hands=True):
                write(line + "\n")
        if state.over:
            break
        actions = legal_actions(state)
        state, events = apply(state, actions[rng.below(len(actions))])
    settled = state.settlement
    assert settled is not None
    n = len(state.seats)
    match = MatchSummary(1, 1, settled.points, settled.money, (0,) * n, (0,) * n, (0,) * n, True)
    write("\n" + table_text(view(state), None, names) + "\n")
    write(settlement_screen(view(state), match, names) + "\n")
    return 0
