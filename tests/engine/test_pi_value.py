"""``pi_value``: the 피 count of a captured pile, where 국진 (the 9월 열끗) counts as a 쌍피, 2, once
converted and as nothing while it stays a 열끗. It must agree with the 피 value ``score`` reports."""

from __future__ import annotations

import random

from gostop.engine.cards import GUKJIN
from gostop.engine.scoring import pi_value, score


def test_a_converted_gukjin_counts_two_pi_and_an_unconverted_one_none() -> None:
    assert GUKJIN == 32
    assert pi_value([GUKJIN], gukjin_converted=True) == 2
    assert pi_value([GUKJIN], gukjin_converted=False) == 0


def test_pi_value_of_a_pile_worked_example() -> None:
    # 1월 피 ×2 (1 each), 11월 쌍피 (2), bonus 쓰리피 (3), 국진, and a 광 and a 띠 (no 피).
    pile = [2, 3, 43, 50, GUKJIN, 0, 1]
    assert pi_value(pile, gukjin_converted=False) == 1 + 1 + 2 + 3
    assert pi_value(pile, gukjin_converted=True) == 1 + 1 + 2 + 3 + 2
    assert pi_value([], gukjin_converted=True) == 0


def test_pi_value_agrees_with_the_score_of_random_piles() -> None:
    rng = random.Random(136)
    for _ in range(2_000):
        pile = rng.sample(range(51), rng.randrange(52))
        for converted in (False, True):
            assert pi_value(pile, converted) == score(pile, converted).pi_value, (sorted(pile), converted)
