"""Volume: 10,000 seeded random rounds of every (preset, players) configuration.

Each round is played with validated ``apply`` and must end settled; only cheap invariants are
checked per round (the per-step ones are in ``test_properties.py``). Seeds and choices are fixed,
so the run is deterministic: the outcome counts are checked for structure only (which outcomes the
rules allow, and how many rounds there were), never for their distribution.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

import pytest

from gostop.engine import Rules, State, card_places, legal_actions
from gostop.engine.events import RoundSettled
from testkit.configs import CONFIGS, config_id, play_random

# Not in make check: ten thousand rounds per table.
pytestmark = pytest.mark.slow

ROUNDS: Final = 10_000


def allowed_outcomes(rules: Rules) -> set[str]:
    """Settlement outcomes the rules can produce."""
    out = {"stop", "nagari"}
    if rules.chongtong or rules.three_ppeok == "win" or rules.heodang:
        out.add("instant_win")
    if rules.three_ppeok == "lose":
        out.add("instant_loss")
    if rules.exhausted == "best_score":
        out.add("best_score")
    return out


def check_final(state: State) -> str:
    """Cheap invariants of a finished round; returns its outcome."""
    assert state.over and state.to_move == -1 and legal_actions(state) == []
    card_places(state)
    s = state.settlement
    assert s is not None
    assert sum(s.points) == 0, s.points
    assert s.money == tuple(p * state.rules.point_value for p in s.points)
    playing = state.order
    if len(playing) != state.rules.playing_seats:
        # 4 players: a 총통 at the deal ends the round before anyone sits out (docs/rules.md §6).
        assert len(playing) == state.rules.players and s.reason == "chongtong" and state.steps == 0
    assert s.winner == -1 or s.winner in playing, f"winner {s.winner} is not a playing seat {playing}"
    assert (s.winner == -1) == (s.outcome == "nagari")
    for seat in range(len(state.seats)):
        if seat not in playing:  # 4 players: the seat sitting out only ever receives 광팔기 money
            assert s.points[seat] >= 0
    if not s.payments:  # no instant payment: only the bills move points
        for seat in range(len(state.seats)):
            if seat == s.winner:
                assert s.points[seat] > 0
            elif s.winner >= 0 and seat in playing:
                assert s.points[seat] <= 0
            else:
                assert s.points[seat] == 0
    return s.outcome


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_ten_thousand_random_rounds(config: tuple[str, int]) -> None:
    rules = Rules.preset(*config)
    outcomes: Counter[str] = Counter()
    for seed in range(ROUNDS):
        state, events = play_random(rules, seed, chooser_seed=seed)
        assert isinstance(events[-1], RoundSettled) and events[-1].settlement == state.settlement
        outcomes[check_final(state)] += 1
    assert sum(outcomes.values()) == ROUNDS
    assert set(outcomes) <= allowed_outcomes(rules), outcomes
