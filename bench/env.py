"""Environment benchmark: random-policy steps per second through the PettingZoo API, beside the
engine's own ``Playout`` in the same run (the environment's overhead; the goal is at most 2×).

For every preset and player count (``--configs``), two ways of playing the same random rounds on
one core, alternated run by run (so that a slow moment of a shared machine hits both alike):

* ``env``: ``gostop.env.GostopEnv`` driven as PettingZoo's docs drive an AEC environment:
  ``for agent in env.agent_iter(): obs, reward, terminated, truncated, info = env.last()``, a
  uniformly random legal action id read off ``obs["action_mask"]`` (its ``nonzero()``), ``env.step(action)`` (and
  ``None`` for the terminated agents at the end, which cost time but are not counted as steps);
* ``playout``: ``engine.Playout`` with the same random choices among ``legal_actions()`` (the
  fast path bots use: no observation, no mask);
* ``no-obs``: the environment's loop again, but with ``env.last(observe=False)`` and the choice
  among ``env.legal_action_ids()``: the API's bookkeeping without the observation, which tells
  what the observation itself costs (columns, not part of the goal). Its ratio to ``playout``
  (``no-obs ratio``) is the least the goal's ratio could be with an observation that cost nothing.

Rounds are dealt from seeds 0, 1, 2... in both, and the choices come from the same seeded
generator in the same order (the mask's ids ascend as the legal actions do), so both play the
very same games. Steps per second counts decisions (actions applied); each figure is the median of
``--repeats`` runs of ``--seconds``, timed on the process's CPU clock (``--clock wall`` for
elapsed time). The ratio is ``playout`` steps/s over ``env`` steps/s (median of the per-run
pairs): 1.0 means no overhead. ``observe us`` is the environment's time per step less its time
without observations (microseconds).

Usage: ``python -m bench.env [--seconds S] [--repeats R] [--configs standard:2,classic:4]
[--clock cpu|wall] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from gostop.engine import PRESET_PLAYERS, Rules
from gostop.env import GostopEnv

from .engine import rounds_with_playout

CONFIGS: list[tuple[str, int]] = [(p, n) for p, ns in PRESET_PLAYERS.items() for n in sorted(ns)]
GOAL_RATIO = 2.0
"""The environment's steps/s at least half the engine's own (``Playout``), standard 2 players."""
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086)
"""Student's t 97.5% quantile for 1-20 degrees of freedom (the normal's 1.96 beyond)."""


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """The mean of the per-run values and its 95% confidence interval (Student's t over the runs).

    >>> tuple(round(x, 3) for x in mean_ci([2.0, 2.2, 2.4]))
    (2.2, 1.703, 2.697)
    """
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    df = len(values) - 1
    half = (_T975[df - 1] if df <= len(_T975) else 1.96) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half
clock = time.process_time


def env_steps(rules: Rules, seconds: float) -> tuple[int, int, float]:
    """Random rounds through the PettingZoo API; (rounds, steps, elapsed)."""
    env = GostopEnv(rules=rules)
    chooser = random.Random(12345)
    rounds = steps = 0
    start = clock()
    deadline = start + seconds
    while True:
        env.reset(seed=rounds)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[chooser.randrange(len(legal))]))
            steps += 1
        rounds += 1
        if rounds % 20 == 0 and clock() >= deadline:
            break
    return rounds, steps, clock() - start


def api_steps(rules: Rules, seconds: float) -> tuple[int, int, float]:
    """The environment's loop without observations; (rounds, steps, elapsed)."""
    env = GostopEnv(rules=rules)
    chooser = random.Random(12345)
    rounds = steps = 0
    start = clock()
    deadline = start + seconds
    while True:
        env.reset(seed=rounds)
        for _agent in env.agent_iter():
            _obs, _reward, terminated, truncated, _info = env.last(observe=False)
            if terminated or truncated:
                env.step(None)
                continue
            ids = env.legal_action_ids()
            env.step(ids[chooser.randrange(len(ids))])
            steps += 1
        rounds += 1
        if rounds % 20 == 0 and clock() >= deadline:
            break
    return rounds, steps, clock() - start


MODES: dict[str, Callable[[Rules, float], tuple[int, int, float]]] = {
    "env": env_steps, "playout": rounds_with_playout, "no-obs": api_steps,
}


def parse_configs(text: str) -> list[tuple[str, int]]:
    if text == "all":
        return CONFIGS
    out = []
    for item in text.split(","):
        preset, _, players = item.partition(":")
        out.append((preset, int(players) if players else PRESET_PLAYERS[preset][0]))
    return out


def conditions(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "load_average_1m_at_start": round(os.getloadavg()[0], 2), "clock": args.clock,
        "seconds": args.seconds, "repeats": args.repeats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one run (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--configs", default="all", help="preset:players list, e.g. standard:2,classic:4 (default all)")
    parser.add_argument("--clock", choices=CLOCKS, default="cpu", help="cpu (process time, default) or wall")
    parser.add_argument("--json", metavar="PATH", help="also write every figure (and run) as JSON")
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    cond = conditions(args)
    report: dict[str, Any] = {"conditions": cond, "configs": []}
    print(f"environment benchmark: Python {cond['python']} on {cond['machine']}, {cond['cpus']} cpus, "
          f"load {cond['load_average_1m_at_start']}; {args.clock} clock, median of {args.repeats} runs of "
          f"{args.seconds:g} s, the modes alternated")
    print("\nrandom-policy steps per second, one core: PettingZoo AEC API (GostopEnv) beside engine.Playout")
    print(f"{'preset':<10}{'players':>8}{'env steps/s':>14}{'playout steps/s':>17}{'ratio':>8}{'steps/round':>13}"
          f"{'no-obs steps/s':>16}{'no-obs ratio':>14}{'observe us':>12}")
    for preset, players in parse_configs(args.configs):
        rules = Rules.preset(preset, players=players)
        runs: dict[str, list[float]] = {m: [] for m in MODES}
        per_round = 0.0
        for _ in range(args.repeats):
            for mode, run in MODES.items():
                rounds, steps, elapsed = run(rules, args.seconds)
                runs[mode].append(steps / elapsed)
                per_round = steps / rounds
        ratios = [p / e for p, e in zip(runs["playout"], runs["env"], strict=True)]
        medians = {m: statistics.median(v) for m, v in runs.items()}
        ratio = statistics.median(ratios)
        floor = statistics.median([p / a for p, a in zip(runs["playout"], runs["no-obs"], strict=True)])
        mean, low, high = mean_ci(ratios)
        # What the observation costs a step: the environment's time per step less that without it.
        observe_us = 1e6 / medians["env"] - 1e6 / medians["no-obs"]
        print(f"{preset:<10}{players:>8}{medians['env']:>14.0f}{medians['playout']:>17.0f}{ratio:>8.2f}"
              f"{per_round:>13.1f}{medians['no-obs']:>16.0f}{floor:>14.2f}{observe_us:>12.1f}")
        report["configs"].append({
            "preset": preset, "players": players, "steps_per_round": round(per_round, 2),
            "steps_per_second": {m: round(v, 1) for m, v in medians.items()}, "ratio": round(ratio, 3),
            "runs": {m: [round(x, 1) for x in v] for m, v in runs.items()}, "ratios": [round(r, 3) for r in ratios],
            "observe_microseconds": round(observe_us, 2), "no_obs_ratio": round(floor, 3),
            "ratio_mean_ci95": [round(mean, 3), round(low, 3), round(high, 3)],
        })
    standard = next((c for c in report["configs"] if (c["preset"], c["players"]) == ("standard", 2)), None)
    if standard is not None:
        met = standard["ratio"] <= GOAL_RATIO
        mean, low, high = standard["ratio_mean_ci95"]
        print(f"goal: standard 2p env overhead <= {GOAL_RATIO:g}x Playout: {'met' if met else 'not met'} "
              f"({standard['ratio']:.2f}x, the median; mean {mean:.2f}x, 95% CI {low:.2f}-{high:.2f}; "
              f"per-run ratios {', '.join(f'{r:.2f}' for r in standard['ratios'])})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
