"""The environments pass their frameworks' own checks: PettingZoo's ``api_test`` and ``seed_test`` for
every preset and table size, Gymnasium's ``check_env`` for the single-agent environment.

Every warning the checks raise fails the test, but two that PettingZoo's ``api_test`` gives every
environment whose observation is a dict with an action mask unless it is one of PettingZoo's own
classic games (it lists them by name): that is the observation PettingZoo's classic games use.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

from gostop.engine import PRESET_PLAYERS
from gostop.env import GYM_ID, GostopEnv, GostopGymEnv

CONFIGS = [(preset, n) for preset, ns in PRESET_PLAYERS.items() for n in sorted(ns)]
DICT_OBSERVATION_WARNINGS = re.compile(
    r"Observation is not a NumPy array|Observation space for each agent probably should be gymnasium.spaces.box"
)


@pytest.fixture(autouse=True)
def warnings_fail() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=DICT_OBSERVATION_WARNINGS.pattern)
        yield


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[f"{p}-{n}p" for p, n in CONFIGS])
def test_pettingzoo_api_test(preset: str, players: int) -> None:
    api_test(GostopEnv(preset, players), num_cycles=400)


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[f"{p}-{n}p" for p, n in CONFIGS])
def test_pettingzoo_seed_test(preset: str, players: int) -> None:
    seed_test(lambda: GostopEnv(preset, players), num_cycles=200)


def test_pettingzoo_api_test_with_win_loss_rewards_and_a_text_render() -> None:
    api_test(GostopEnv("classic", 3, reward="win_loss", render_mode="ansi"), num_cycles=200)


def test_the_api_checks_can_fail() -> None:
    """The checks above are real: an environment that breaks PettingZoo's reward bookkeeping fails."""

    class Broken(GostopEnv):
        def _finish(self) -> None:
            super()._finish()
            self._cumulative_rewards = dict.fromkeys(self._cumulative_rewards, 0.0)  # rewards lost

    with pytest.raises(AssertionError, match="accumulated rewards"):
        api_test(Broken("standard"), num_cycles=400)


@pytest.mark.parametrize(("preset", "players", "opponents"), [
    ("standard", 2, "greedy"), ("standard", 3, "random"), ("classic", 4, "greedy"), ("arcade", 2, "random"),
])
def test_gymnasium_check_env(preset: str, players: int, opponents: str) -> None:
    """Through ``gymnasium.make`` (the environment has a spec, so ``check_env`` checks that seeded
    resets and steps are deterministic), on the unwrapped environment as ``check_env`` asks."""
    env = gymnasium.make(GYM_ID, preset=preset, players=players, opponents=opponents)
    assert isinstance(env.unwrapped, GostopGymEnv)
    check_env(env.unwrapped)
