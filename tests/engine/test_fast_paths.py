"""The engine's fast paths agree with the plain definitions they stand in for."""

from __future__ import annotations

import random

from gostop.engine.cards import ALL_CARDS, mask_of
from gostop.engine.scoring import mask_score, mask_total, score


def test_mask_total_is_the_score_total() -> None:
    rng = random.Random(2024)
    for _ in range(20_000):
        pile = rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1))
        converted = rng.random() < 0.3
        sseul = rng.randrange(3)
        assert mask_total(mask_of(pile), converted, sseul) == score(pile, converted, sseul).total, pile


def test_mask_score_is_the_score() -> None:
    rng = random.Random(2025)
    for _ in range(20_000):
        pile = rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1))
        converted = rng.random() < 0.3
        sseul = rng.randrange(3)
        assert mask_score(mask_of(pile), converted, sseul) == score(pile, converted, sseul), pile
