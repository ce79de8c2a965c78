"""What ``observe(agent)`` shows: exactly the encoding of the seat's ``engine.View``, nothing hidden from
the seat, the legal actions as its mask, within the observation space, laid out as documented.

Secrecy is checked two ways, as tests/reliability/test_secrecy.py does for the service's messages
(against the true state, not the engine's redaction): no card plane but ``unseen`` holds a card
hidden from the seat in the true state (another seat's hand less what 흔들기 showed, the stock),
and ``unseen`` is that hidden set exactly; and redealing the hidden cards (other hands and the
stock shuffled together, hand sizes kept) changes no seat's observation at all.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from gostop.engine import PRESET_PLAYERS, Rules, State, action_id, legal_actions, view
from gostop.env import (
    FIELDS,
    OBS_SIZE,
    GostopEnv,
    encode_state,
    layout_table,
    observation_of_view,
    observation_space,
)
from gostop.env import __doc__ as env_doc
from gostop.env.observation import MAX_SEATS

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [(preset, n) for preset, ns in PRESET_PLAYERS.items() for n in sorted(ns)]
CARD_PLANES = ("hand", "floor", "pile", "shown", "played", "pending", "unseen")


def plane(obs: NDArray[np.float32], name: str, k: int = 0) -> set[int]:
    """The cards set in a card plane (``k``: the seat slot of a per-seat block)."""
    start = FIELDS[name].offset + 51 * k
    return {int(c) for c in np.flatnonzero(obs[start:start + 51])}


def hidden_from(state: State, seat: int) -> set[int]:
    """The cards ``seat`` may not know in ``state``: other hands (less what 흔들기 showed), the stock."""
    out = set(state.stock)
    for i, s in enumerate(state.seats):
        if i != seat:
            out.update(set(s.hand) - set(s.revealed))
    return out


def random_positions(env: GostopEnv, seed: int) -> list[State]:
    """Every position of a random round played through the environment."""
    chooser = random.Random(seed)
    env.reset(seed=seed)
    states = [env.round_state()]
    while not env.terminations[env.agent_selection]:
        ids = env.legal_action_ids()
        env.step(ids[chooser.randrange(len(ids))])
        states.append(env.round_state())
    return states


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[f"{p}-{n}p" for p, n in CONFIGS])
def test_observe_is_the_encoding_of_the_seats_view_at_every_step(preset: str, players: int) -> None:
    """The fast path (the engine's working copy, masks read again only when changed) against the
    plain encoding of ``engine.view``, for every agent after every step of random rounds."""
    env = GostopEnv(preset, players)
    chooser = random.Random(1)
    space = observation_space()
    positions = 0
    for seed in range(12):
        env.reset(seed=seed)
        while True:
            state = env.round_state()
            for agent in env.possible_agents:
                seat = env.seat_of(agent)
                obs = env.observe(agent)
                assert space.contains(obs)
                expected = observation_of_view(view(state, seat))
                assert np.array_equal(obs["observation"], expected), (
                    f"{agent} at step {state.steps}: entries {np.flatnonzero(obs['observation'] != expected)}"
                )
                legal = {action_id(a) for a in legal_actions(state)} if seat == state.to_move else set()
                assert set(np.flatnonzero(obs["action_mask"]).tolist()) == legal
                positions += 1
            if env.terminations[env.agent_selection]:
                break
            ids = env.legal_action_ids()
            env.step(ids[chooser.randrange(len(ids))])
    assert positions > 200


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[f"{p}-{n}p" for p, n in CONFIGS])
def test_no_plane_shows_a_hidden_card_and_unseen_is_exactly_the_hidden_cards(preset: str, players: int) -> None:
    env = GostopEnv(preset, players)
    for seed in range(8):
        for state in random_positions(env, seed):
            for seat in range(players):
                obs = encode_state(state, seat)
                hidden = hidden_from(state, seat)
                for name in CARD_PLANES[:-1]:
                    for k in range(MAX_SEATS if name in ("pile", "shown", "played") else 1):
                        leaked = plane(obs, name, k) & hidden
                        assert not leaked, f"seat {seat} sees hidden cards {sorted(leaked)} in {name}[{k}]"
                assert plane(obs, "unseen") == hidden
                assert plane(obs, "hand") == set(state.seats[seat].hand)


def redealt(state: State, seat: int, rng: random.Random) -> State:
    """``state`` with the cards hidden from ``seat`` dealt again: the other hands' unrevealed cards and
    the stock shuffled together and handed back in the same numbers (hands kept sorted)."""
    hidden = [c for c in state.stock]
    for i, s in enumerate(state.seats):
        if i != seat:
            hidden += [c for c in s.hand if c not in s.revealed]
    rng.shuffle(hidden)
    seats = list(state.seats)
    for i, s in enumerate(state.seats):
        if i != seat:
            kept = [c for c in s.hand if c in s.revealed]
            new = [hidden.pop() for _ in range(len(s.hand) - len(kept))]
            seats[i] = replace(s, hand=tuple(sorted(kept + new)))
    assert len(hidden) == len(state.stock)
    return replace(state, seats=tuple(seats), stock=tuple(hidden))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32), at=st.floats(0, 1), shuffle=st.integers(0, 2**32))
def test_the_observation_is_the_same_whatever_the_hidden_cards_are(
    config: tuple[str, int], seed: int, at: float, shuffle: int
) -> None:
    preset, players = config
    positions = random_positions(GostopEnv(preset, players), seed)
    state = positions[min(int(at * len(positions)), len(positions) - 1)]
    rng = random.Random(shuffle)
    for seat in range(players):
        other = redealt(state, seat, rng)
        assert np.array_equal(encode_state(state, seat), encode_state(other, seat))


def test_the_redeal_check_would_see_a_leak() -> None:
    """The hidden cards do matter to an encoding that shows them: seat 1's hand, read by seat 0."""
    state = random_positions(GostopEnv("standard"), 3)[4]
    other = redealt(state, 0, random.Random(1))
    assert encode_state(state, 1)[:51].tolist() != encode_state(other, 1)[:51].tolist()
    assert np.array_equal(encode_state(state, 0), encode_state(other, 0))


def test_an_observation_holds_what_the_layout_says() -> None:
    """Seat-relative slots, flags, counts: one position read field by field."""
    env = GostopEnv("classic", 3)
    env.reset(seed=11)
    for _ in range(7):
        env.step(env.legal_action_ids()[0])
    state = env.round_state()
    seat = 2
    obs = env.observe(env.possible_agents[seat])["observation"]
    assert obs.shape == (OBS_SIZE,)
    for k in range(3):
        s = state.seats[(seat + k) % 3]
        assert plane(obs, "pile", k) == set(s.captured)
        assert obs[FIELDS["present"].offset + k] == 1
        assert obs[FIELDS["hand_size"].offset + k] == len(s.hand)
        assert obs[FIELDS["dealer"].offset + k] == ((seat + k) % 3 == state.dealer)
        assert obs[FIELDS["to_move"].offset + k] == ((seat + k) % 3 == state.to_move)
    assert obs[FIELDS["present"].offset + 3] == 0 and plane(obs, "pile", 3) == set()
    assert plane(obs, "floor") == set(state.floor)
    assert obs[FIELDS["stock"].offset] == len(state.stock)
    assert obs[FIELDS["go_threshold"].offset] == Rules.preset("classic", players=3).go_threshold
    phase = FIELDS["phase"]
    assert obs[phase.offset:phase.offset + phase.size].sum() == 1


def test_the_documented_layout_is_the_layout() -> None:
    """The table in ``gostop.env``'s docstring and in docs/research.md is ``layout_table()``."""
    table = layout_table()
    assert table in (env_doc or "")
    assert table in (ROOT / "docs/research.md").read_text(encoding="utf-8")
    assert str(OBS_SIZE) in (ROOT / "docs/research.md").read_text(encoding="utf-8")
