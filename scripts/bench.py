"""Benchmark: random-vs-random full rounds per second on one core, per preset and player count.

Usage: ``python scripts/bench.py [--seconds S] [--unchecked]``. Prints one line per
configuration. Figures are for comparison within one run on one machine.
"""

from __future__ import annotations

import argparse
import time

from engine import Rules, apply, apply_unchecked, legal_actions, new_round
from engine.rng import Rng

CONFIGS = [
    ("standard", 2), ("standard", 3), ("simple", 2), ("classic", 2), ("classic", 3),
    ("classic", 4), ("house", 3), ("house", 2), ("arcade", 2),
]


def play_rounds(preset: str, players: int, seconds: float, checked: bool) -> tuple[int, int, float]:
    """Play seeded random rounds for about ``seconds``; return (rounds, steps, elapsed)."""
    rules = Rules.preset(preset, players=players)
    step = apply if checked else apply_unchecked
    chooser = Rng(12345)
    rounds = steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state, _ = new_round(rules, rounds)
        while not state.over:
            actions = legal_actions(state)
            state, _ = step(state, actions[chooser.below(len(actions))])
            steps += 1
        rounds += 1
        if rounds % 50 == 0 and time.perf_counter() >= deadline:
            break
    return rounds, steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per configuration")
    parser.add_argument("--unchecked", action="store_true", help="skip validation (apply_unchecked)")
    args = parser.parse_args()
    mode = "apply_unchecked" if args.unchecked else "apply (validated)"
    print(f"random-vs-random full rounds, one core, {mode}")
    print(f"{'preset':<10}{'players':>8}{'rounds/s':>12}{'steps/s':>12}{'steps/round':>13}")
    for preset, players in CONFIGS:
        rounds, steps, elapsed = play_rounds(preset, players, args.seconds, not args.unchecked)
        print(
            f"{preset:<10}{players:>8}{rounds / elapsed:>12.0f}{steps / elapsed:>12.0f}"
            f"{steps / rounds:>13.1f}"
        )


if __name__ == "__main__":
    main()
