"""The Gymnasium environment: one seat learns, named bots play the others; the example and the
benchmark run (on fewer rounds and a short window: no figure is checked here)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from gostop.bots import BotSpecError
from gostop.engine import new_round
from gostop.env import GYM_ID, GostopGymEnv

ROOT = Path(__file__).resolve().parents[2]


def play(env: GostopGymEnv, seed: int, chooser: random.Random) -> tuple[float, dict[str, object], int]:
    """One episode on random legal actions; (final reward, final info, the learner's decisions)."""
    obs, _ = env.reset(seed=seed)
    decisions = 0
    while True:
        assert env.game.agent_selection == env.agent, "the learner is asked only for its own decisions"
        legal = np.flatnonzero(obs["action_mask"])
        assert legal.tolist() == env.game.legal_action_ids() == np.flatnonzero(env.action_masks()).tolist()
        obs, reward, terminated, truncated, info = env.step(int(legal[chooser.randrange(len(legal))]))
        decisions += 1
        assert not truncated
        if terminated:
            assert not obs["action_mask"].any() and not env.action_masks().any()
            return reward, info, decisions
        assert reward == 0.0


@pytest.mark.parametrize(("preset", "players", "opponents"), [
    ("standard", 2, "greedy"), ("standard", 3, ("greedy", "random")), ("classic", 4, "random"),
    ("house", 2, "mcts:iterations=20"),
])
def test_the_learner_plays_its_seat_and_gets_its_settlement_points(
    preset: str, players: int, opponents: str | tuple[str, ...]
) -> None:
    env = GostopGymEnv(preset, players, opponents=opponents, seat=None)
    chooser = random.Random(3)
    seats = set()
    for seed in range(12 if "mcts" not in str(opponents) else 3):
        reward, info, decisions = play(env, seed, chooser)
        settlement = env.game.settlement
        assert settlement is not None and decisions > 0
        assert reward == settlement.points[env.seat] == info["points"]
        seats.add(env.seat)
    assert len(seats) > 1, "seat=None draws the learner's seat"


def test_reset_with_a_seed_deals_that_seed_and_replays() -> None:
    env = GostopGymEnv("standard", opponents="greedy")
    _obs, info = env.reset(seed=77)
    assert info == {"round_seed": 77, "seat": 0, "skipped": 0}
    assert env.game.round_state().seats[0].hand == new_round(env.game.rules, 77)[0].seats[0].hand
    first = play(env, 77, random.Random(1))
    assert play(GostopGymEnv("standard", opponents="greedy"), 77, random.Random(1)) == first
    env.reset(seed=5)
    unseeded = [env.reset()[1]["round_seed"] for _ in range(3)]
    env.reset(seed=5)
    assert [env.reset()[1]["round_seed"] for _ in range(3)] == unseeded
    assert len(set(unseeded)) == 3


def test_an_illegal_action_ends_the_episode_or_raises() -> None:
    env = GostopGymEnv("standard", opponents="random", illegal_reward=-5.0)
    obs, _ = env.reset(seed=1)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info) == (-5.0, True, False, {"illegal_action": illegal})
    assert not obs["action_mask"].any()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    strict = GostopGymEnv("standard", opponents="random", illegal_action="raise")
    strict.reset(seed=1)
    with pytest.raises(ValueError, match="not a legal action"):
        strict.step(illegal)


def test_bad_arguments_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="2 opponents needed"):
        GostopGymEnv("standard", 3, opponents=("greedy",))
    with pytest.raises(BotSpecError):
        GostopGymEnv("standard", opponents="no-such-bot")
    with pytest.raises(ValueError, match="seat"):
        GostopGymEnv("standard", seat=2)


def test_gymnasium_make_builds_it() -> None:
    env = gymnasium.make(GYM_ID, preset="classic", players=3, opponents="greedy", render_mode="ansi")
    obs, info = env.reset(seed=3)
    assert obs["observation"].shape == (878,) and info["seat"] == 0
    text = env.render()
    assert isinstance(text, str) and "floor:" in text


def test_the_example_plays_random_against_greedy() -> None:
    """The example of docs/research.md, on 40 rounds instead of 1,000."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "clients/python/examples/env_random_vs_greedy.py"), "--rounds", "40"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "40 rounds of standard (2 players)" in result.stdout
    wins, draws, losses = (int(result.stdout.split(word)[0].split()[-1]) for word in (" wins", " draws", " losses"))
    assert wins + draws + losses == 40
    assert "mean points per round: random" in result.stdout


def test_the_environment_benchmark_runs_a_short_window() -> None:
    """``make bench``'s environment figures come from a run that works (one short run, one table)."""
    command = [sys.executable, "-m", "bench.env", "--seconds", "0.2", "--repeats", "1",
               "--configs", "standard:2,classic:4"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith(("standard ", "classic "))]
    assert [r[:2] for r in rows] == [["standard", "2"], ["classic", "4"]]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)
    assert "goal: standard 2p env overhead" in result.stdout
