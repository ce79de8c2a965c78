"""The playout fast path applies exactly the rules of ``apply``."""

from __future__ import annotations

import random

import pytest

from gostop.engine import Rules, apply, legal_actions, new_round, state_to_bytes
from gostop.engine.play import Playout
from testkit.configs import CONFIGS, config_id


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_playout_matches_apply_step_by_step(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)
    for seed in range(150):
        state, _ = new_round(rules, seed)
        playout = Playout(state)
        chooser = random.Random(seed)
        while not state.over:
            actions = legal_actions(state)
            assert playout.legal_actions() == actions
            action = actions[chooser.randrange(len(actions))]
            state, _ = apply(state, action)
            playout.apply(action)
            assert playout.to_move == state.to_move
        assert playout.over
        assert state_to_bytes(playout.state()) == state_to_bytes(state)


def test_playout_leaves_its_starting_state_untouched() -> None:
    state, _ = new_round(Rules.preset("classic", players=3), 11)
    before = state_to_bytes(state)
    playout = Playout(state)
    while not playout.over:
        playout.apply(playout.legal_actions()[-1])
    assert state_to_bytes(state) == before
