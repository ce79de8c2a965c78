"""The PettingZoo environment's game: rewards (zero-sum, the settlement's), seeding, illegal actions,
rendering, and the deal it plays (the engine's for that seed)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gostop.engine import CODE, PRESET_PLAYERS, Playout, Rules, new_round
from gostop.env import GostopEnv, round_rewards

CONFIGS = [(preset, n) for preset, ns in PRESET_PLAYERS.items() for n in sorted(ns)]


def play_out(env: GostopEnv, chooser: random.Random) -> dict[str, float]:
    """Play the round on random legal actions through the AEC loop; each agent's final reward."""
    final: dict[str, float] = {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _info = env.last()
        if terminated or truncated:
            final[agent] = reward
            env.step(None)
        else:
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[chooser.randrange(len(legal))]))
    return final


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[f"{p}-{n}p" for p, n in CONFIGS])
@pytest.mark.parametrize("reward", ["points", "win_loss"])
def test_rewards_are_zero_sum_and_the_settlements(preset: str, players: int, reward: str) -> None:
    env = GostopEnv(preset, players, reward=reward)  # type: ignore[arg-type]
    chooser = random.Random(5)
    outcomes = set()
    for seed in range(40):
        env.reset(seed=seed)
        final = play_out(env, chooser)
        settlement = env.settlement
        assert settlement is not None and env.agents == []
        assert set(final) == set(env.possible_agents)
        assert sum(final.values()) == pytest.approx(0.0)
        seats = {a: env.seat_of(a) for a in env.possible_agents}
        if reward == "points":
            assert final == {a: float(settlement.points[s]) for a, s in seats.items()}
        else:
            winner = settlement.winner
            for agent, seat in seats.items():
                assert (final[agent] > 0) == (seat == winner)
                assert final[agent] <= 0 or final[agent] == 1.0
            if winner < 0:
                assert set(final.values()) == {0.0}
        outcomes.add(settlement.outcome)
    assert "stop" in outcomes


def test_win_loss_shares_the_loss_between_the_losers() -> None:
    rules = Rules.preset("standard", players=3)
    for seed in range(30):
        p = Playout(new_round(rules, seed)[0])
        while not p.over:
            p.apply(p.legal_actions()[-1])
        s = p.state().settlement
        assert s is not None
        rewards = round_rewards(s, [True] * 3, "win_loss")
        if s.winner >= 0:
            assert sorted(rewards) == [-0.5, -0.5, 1.0]
            return
    raise AssertionError("no decided round")


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 4), ("house", 3)])
def test_reset_with_a_seed_replays_the_round_identically(preset: str, players: int) -> None:
    """Two environments reset with one seed and given the same actions show every agent the same
    observations; unseeded resets after a seeded one replay too."""
    def trace(env: GostopEnv, seed: int | None) -> list[tuple[str, bytes, bytes, float]]:
        env.reset(seed=seed)
        chooser = random.Random(9)
        out = []
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            out.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward))
            if terminated or truncated:
                env.step(None)
            else:
                legal = np.flatnonzero(obs["action_mask"])
                env.step(int(legal[chooser.randrange(len(legal))]))
        return out

    a, b = GostopEnv(preset, players), GostopEnv(preset, players)
    first = trace(a, 123)
    assert first == trace(b, 123)
    later = [trace(a, None), trace(a, None)]
    assert later == [trace(b, None), trace(b, None)]
    assert later[0] != first and later[0] != later[1]
    assert trace(a, 123) == first


def test_a_seeded_reset_deals_the_engines_round_of_that_seed() -> None:
    """The same deal as ``engine.new_round``, the arena and ``gostop tournament`` give the seed; a
    deal that ends the round at once (총통) is passed over for a drawn one."""
    rules = Rules.preset("classic", players=2)  # classic plays 총통
    env = GostopEnv(rules=rules)
    skipped = 0
    for seed in range(300):
        env.reset(seed=seed)
        state, _ = new_round(rules, seed)
        if state.over:
            skipped += 1
            assert env.skipped_deals >= 1 and env.round_seed != seed
            assert not env.round_state().over
        else:
            assert env.skipped_deals == 0 and env.round_seed == seed
            assert env.round_state() == state
    assert skipped > 0, "no 총통 in 300 deals: pick a larger range"


def test_an_illegal_action_is_refused_and_changes_nothing() -> None:
    env = GostopEnv("standard")
    env.reset(seed=4)
    before = env.round_state()
    agent = env.agent_selection
    illegal = next(i for i in range(252) if i not in env.legal_action_ids())
    for action in (illegal, -1, 252, 231, "play", None):
        with pytest.raises(ValueError, match="not a legal action"):
            env.step(action)
    assert env.round_state() == before and env.agent_selection == agent
    env.step(np.int64(env.legal_action_ids()[0]))  # NumPy integers are ids too
    assert env.round_state().steps == 1


def test_the_agents_not_to_move_have_an_empty_mask() -> None:
    env = GostopEnv("classic", 4)
    env.reset(seed=2)
    for agent in env.possible_agents:
        mask = env.observe(agent)["action_mask"]
        assert (mask.sum() > 0) == (agent == env.agent_selection)


def test_render_shows_the_table_as_a_spectator_and_the_settlement() -> None:
    env = GostopEnv("standard", render_mode="ansi")
    env.reset(seed=8)
    hands = [c for s in env.round_state().seats for c in s.hand]
    text = env.render()
    assert text is not None and "seat 0: hand 10 cards" in text and "floor:" in text
    assert not [CODE[c] for c in hands if CODE[c] in text]
    play_out(env, random.Random(1))
    final = env.render()
    assert final is not None and "settlement:" in final and "net points" in final
    with pytest.warns(UserWarning, match="render_mode"):
        assert GostopEnv("standard").render() is None


def test_an_environment_must_be_reset_first() -> None:
    env = GostopEnv("standard")
    with pytest.raises(RuntimeError, match="reset"):
        env.observe("seat_0")
    with pytest.raises(ValueError, match="reward"):
        GostopEnv("standard", reward="money")  # type: ignore[arg-type]
