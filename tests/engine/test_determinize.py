"""Determinization completes a seat's view into a consistent full state."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gostop.engine import Rules, apply, card_places, legal_actions, new_round, view
from gostop.engine.determinize import determinize, unknown_cards
from gostop.engine.play import Playout
from testkit.configs import CONFIGS, config_id


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_samples_agree_with_everything_the_seat_sees(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)
    rng = random.Random(7)
    for seed in range(25):
        state, _ = new_round(rules, seed)
        while not state.over:
            for seat in range(players):
                seen = view(state, seat)
                sample = determinize(seen, rng)
                card_places(sample)
                assert view(sample, seat) == seen
                if seat == state.to_move:
                    assert legal_actions(sample) == legal_actions(state)
            state, _ = apply(state, rng.choice(legal_actions(state)))


def test_sampled_playouts_reach_a_settlement() -> None:
    rng = random.Random(3)
    state, _ = new_round(Rules.preset("standard"), 21)
    for _ in range(50):
        playout = Playout(determinize(view(state, state.to_move), rng))
        while not playout.over:
            playout.apply(rng.choice(playout.legal_actions()))
        assert playout.state().settlement is not None


def test_every_unknown_card_can_land_in_the_opponents_hand() -> None:
    state, _ = new_round(Rules.preset("simple"), 5)
    seen = view(state, 0)
    unknown = unknown_cards(seen)
    assert len(unknown) == len(state.seats[1].hand) + len(state.stock)
    counts: Counter[int] = Counter()
    rng = random.Random(11)
    samples = 2000
    for _ in range(samples):
        counts.update(determinize(seen, rng).seats[1].hand)
    assert set(counts) == set(unknown)
    expected = samples * len(state.seats[1].hand) / len(unknown)
    assert all(0.7 * expected < counts[c] < 1.3 * expected for c in unknown)


def test_revealed_cards_stay_with_their_holder() -> None:
    rng = random.Random(2)
    for seed in range(400):
        state, _ = new_round(Rules.preset("standard"), seed)
        shakes = [a for a in legal_actions(state) if getattr(a, "shake", False)]
        if not shakes:
            continue
        state, _ = apply(state, shakes[0])
        shown = state.seats[state.dealer].revealed
        if not shown:
            continue
        observer = 1 - state.dealer
        for _ in range(20):
            sample = determinize(view(state, observer), rng)
            assert set(shown) <= set(sample.seats[state.dealer].hand)
        return
    pytest.fail("no seed with a 흔들기 found")


def test_fixed_hidden_hands_are_honoured() -> None:
    rules = Rules.preset("standard", players=3)
    state, _ = new_round(rules, 12)
    seen = view(state, 0)
    pool = unknown_cards(seen)
    want = tuple(pool[-seen.seats[2].hand_size:])
    rng = random.Random(4)
    for _ in range(20):
        sample = determinize(seen, rng, {2: want})
        assert sample.seats[2].hand == tuple(sorted(want))
        assert not set(want) & set(sample.seats[1].hand) and not set(want) & set(sample.stock)
        card_places(sample)
        assert view(sample, 0) == seen


def test_fixed_hidden_hands_must_fit_the_view() -> None:
    from gostop.engine import EngineError

    state, _ = new_round(Rules.preset("standard"), 12)
    seen = view(state, 0)
    pool = unknown_cards(seen)
    size = seen.seats[1].hand_size
    rng = random.Random(0)
    with pytest.raises(EngineError):
        determinize(seen, rng, {1: tuple(pool[: size - 1])})  # too few
    with pytest.raises(EngineError):
        determinize(seen, rng, {1: (seen.seats[0].hand[0], *pool[: size - 1])})  # a card the viewer holds
    with pytest.raises(EngineError):
        determinize(seen, rng, {0: seen.seats[0].hand})  # the viewer's own hand
