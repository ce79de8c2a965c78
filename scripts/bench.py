"""Engine benchmark: random-vs-random full rounds per second on one core.

Three ways of playing the same seeded rounds, per preset and player count:
``apply`` (validated, with events: what the service runs), ``apply_unchecked`` (events,
no validation) and ``Playout`` (the in-place fast path bots use: no events, no frozen
copies). Usage: ``python scripts/bench.py [--seconds S]``. Figures compare within one run.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from engine import Rules, apply, apply_unchecked, legal_actions, new_round
from engine.game import Playout

CONFIGS = [
    ("standard", 2), ("standard", 3), ("simple", 2), ("classic", 2), ("classic", 3),
    ("classic", 4), ("house", 3), ("house", 2), ("arcade", 2),
]


def rounds_with_apply(rules: Rules, seconds: float, checked: bool) -> tuple[int, int, float]:
    """Play seeded random rounds through ``apply``; return (rounds, steps, elapsed)."""
    step = apply if checked else apply_unchecked
    chooser = random.Random(12345)
    rounds = steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state, _ = new_round(rules, rounds)
        while not state.over:
            actions = legal_actions(state)
            state, _ = step(state, actions[chooser.randrange(len(actions))])
            steps += 1
        rounds += 1
        if rounds % 50 == 0 and time.perf_counter() >= deadline:
            break
    return rounds, steps, time.perf_counter() - start


def rounds_with_playout(rules: Rules, seconds: float) -> tuple[int, int, float]:
    """Play seeded random rounds in place with ``Playout``."""
    chooser = random.Random(12345)
    rounds = steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        p = Playout(new_round(rules, rounds)[0])
        while not p.over:
            actions = p.legal_actions()
            p.apply(actions[chooser.randrange(len(actions))])
            steps += 1
        rounds += 1
        if rounds % 50 == 0 and time.perf_counter() >= deadline:
            break
    return rounds, steps, time.perf_counter() - start


MODES: dict[str, Callable[[Rules, float], tuple[int, int, float]]] = {
    "apply": lambda rules, s: rounds_with_apply(rules, s, True),
    "unchecked": lambda rules, s: rounds_with_apply(rules, s, False),
    "playout": rounds_with_playout,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per configuration and mode")
    parser.add_argument("--modes", default="apply,unchecked,playout", help="comma-separated: " + ", ".join(MODES))
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    print("engine: random-vs-random full rounds per second, one core")
    print(f"{'preset':<10}{'players':>8}" + "".join(f"{m + ' r/s':>16}" for m in modes) + f"{'steps/round':>13}")
    for preset, players in CONFIGS:
        rules = Rules.preset(preset, players=players)
        cells = []
        per_round = 0.0
        for mode in modes:
            rounds, steps, elapsed = MODES[mode](rules, args.seconds)
            cells.append(f"{rounds / elapsed:>16.0f}")
            per_round = steps / rounds
        print(f"{preset:<10}{players:>8}" + "".join(cells) + f"{per_round:>13.1f}")
    print("goal: standard 2p >= 3000 rounds/s per core (first step)")


if __name__ == "__main__":
    main()
