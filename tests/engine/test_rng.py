"""The inlined shuffle draws exactly what ``Rng.below`` would."""

from __future__ import annotations

from gostop.engine.rng import Rng


def _reference_shuffle(seed: int, n: int) -> tuple[list[int], int]:
    rng = Rng(seed)
    out = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        out[i], out[j] = out[j], out[i]
    return out, rng.next_u64()


def test_shuffled_matches_fisher_yates_over_below() -> None:
    for seed in [*range(300), 2**64 - 1, 2**63, 123456789]:
        for n in (1, 2, 48, 50, 51):
            rng = Rng(seed)
            assert (rng.shuffled(range(n)), rng.next_u64()) == _reference_shuffle(seed, n)
