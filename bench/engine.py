"""Engine benchmark: random rounds per second per core, the cost of each API call, snapshot size.

Two tables, for every preset and player count:

* rounds per second on one core, random-vs-random full rounds (the deal included), played
  ``apply`` (validated, with events: what the service runs), ``unchecked`` (``apply_unchecked``:
  events, no validation; not run by default) and ``playout`` (``Playout``, the in-place fast
  path bots use: no events, no frozen copies);
* microseconds per call of ``legal_actions``, ``apply``, ``view`` (the mover's), ``serialize``
  (``match_to_bytes``, the service's snapshot) and ``deserialize`` (``match_from_bytes``),
  measured over every position of a sample of random rounds, and the mean snapshot size in
  bytes over those positions.

Every figure is the median of ``--repeats`` runs of ``--seconds`` each (modes and calls are
interleaved run by run, so that a slow moment of a shared machine hits all of them alike).
``--clock cpu`` (the default) times the process's CPU time, which is what "per core" means and
what other processes on a shared machine disturb least; ``--clock wall`` times elapsed time.
The rounds and choices are seeded: every run plays the same rounds. ``--json PATH`` also
writes the figures, each run included, as JSON.

Usage: ``python -m bench.engine [--seconds S] [--repeats R] [--clock cpu|wall]
[--modes apply,playout] [--configs standard:2,classic:4] [--calls-seconds S] [--no-calls]
[--json PATH] [--require-native] [--baseline REF [--compare-pairs N] [--compare-seconds S]
[--compare-only]]``.

The engine measured is the one ``import gostop.engine`` loads: the compiled build (mypyc) where it
was built, else the pure-Python sources (``GOSTOP_PURE_PYTHON=1`` asks for them). The header says
which; ``--require-native`` stops if it is not the compiled one.

``--baseline REF`` also measures the compiled engine's bar (``make bench`` passes the commit before
the engine was compiled):
the engine of the git commit ``REF`` (its sources, extracted with ``git archive`` into a
temporary folder: "today's" pure-Python engine) against the engine loaded here (the shipped
build), standard 2-player rounds through validated ``apply`` and ``Playout``, in separate
processes run alternately (``--compare-pairs`` pairs, ABBA order, ``--compare-seconds`` of CPU
time per mode and run). It reports the medians and the median of the pairs' ratios, against the
bars: ``apply`` at least ``APPLY_BAR`` times the baseline's, ``Playout`` ``PLAYOUT_BAR`` times.
``--compare-only`` skips the tables.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gostop.engine import (
    Action,
    Match,
    Playout,
    Rules,
    State,
    apply,
    apply_unchecked,
    legal_actions,
    match_from_bytes,
    match_to_bytes,
    new_match,
    new_round,
    view,
)

CONFIGS: list[tuple[str, int]] = [
    ("standard", 2), ("standard", 3), ("simple", 2), ("classic", 2), ("classic", 3),
    ("classic", 4), ("house", 3), ("house", 2), ("arcade", 2),
]
GOAL = 5800
"""Random standard 2-player rounds per second on one core: a public TypeScript engine under Node 20."""
APPLY_BAR = 2.9
"""The bar: validated ``apply`` of the shipped build, in rounds/s, at least this many times today's
pure-Python ``apply`` (where the public TypeScript engine's validated step stands)."""
PLAYOUT_BAR = 2.0
"""The bar: ``Playout`` of the shipped build at least this many times today's pure-Python one."""
COMPARE_CONFIG = ("standard", 2)
ROOT = Path(__file__).resolve().parent.parent
CALLS = ("legal_actions", "apply", "view", "serialize", "deserialize")
SAMPLE_ROUNDS = 40
"""Random rounds whose positions the per-call figures are measured over."""
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
clock = time.process_time
"""The clock of every measurement (``--clock``)."""


# ------------------------------------------------------------------ rounds per second


def rounds_with_apply(rules: Rules, seconds: float, checked: bool) -> tuple[int, int, float]:
    """Play seeded random rounds through ``apply``; return (rounds, steps, elapsed)."""
    step = apply if checked else apply_unchecked
    chooser = random.Random(12345)
    rounds = steps = 0
    start = clock()
    deadline = start + seconds
    while True:
        state, _ = new_round(rules, rounds)
        while not state.over:
            actions = legal_actions(state)
            state, _ = step(state, actions[chooser.randrange(len(actions))])
            steps += 1
        rounds += 1
        if rounds % 50 == 0 and clock() >= deadline:
            break
    return rounds, steps, clock() - start


def rounds_with_playout(rules: Rules, seconds: float) -> tuple[int, int, float]:
    """Play seeded random rounds in place with ``Playout``."""
    chooser = random.Random(12345)
    rounds = steps = 0
    start = clock()
    deadline = start + seconds
    while True:
        p = Playout(new_round(rules, rounds)[0])
        while not p.over:
            actions = p.legal_actions()
            p.apply(actions[chooser.randrange(len(actions))])
            steps += 1
        rounds += 1
        if rounds % 50 == 0 and clock() >= deadline:
            break
    return rounds, steps, clock() - start


MODES: dict[str, Callable[[Rules, float], tuple[int, int, float]]] = {
    "apply": lambda rules, s: rounds_with_apply(rules, s, True),
    "unchecked": lambda rules, s: rounds_with_apply(rules, s, False),
    "playout": rounds_with_playout,
}


# --------------------------------------------------------------------- cost per call


@dataclass(frozen=True)
class Position:
    """One position of a sampled round: the match, its state and the action taken there."""

    match: Match
    state: State
    action: Action
    blob: bytes


def sample_positions(rules: Rules, rounds: int) -> list[Position]:
    """Every position (before each action) of ``rounds`` seeded random rounds."""
    chooser = random.Random(777)
    out: list[Position] = []
    for seed in range(rounds):
        match, _ = new_match(rules, 1000 + seed)
        state = match.round
        while not state.over:
            actions = legal_actions(state)
            action = actions[chooser.randrange(len(actions))]
            out.append(Position(match, state, action, match_to_bytes(match)))
            state, _ = apply(state, action)
            match = replace(match, round=state)
    return out


def call_runners(positions: list[Position]) -> dict[str, Callable[[], int]]:
    """One pass over the sample per call kind; each returns how many calls it made."""
    states = [p.state for p in positions]
    moves = [(p.state, p.action) for p in positions]
    seated = [(p.state, p.state.to_move) for p in positions]
    matches = [p.match for p in positions]
    blobs = [p.blob for p in positions]

    def run_legal() -> int:
        for s in states:
            legal_actions(s)
        return len(states)

    def run_apply() -> int:
        for s, a in moves:
            apply(s, a)
        return len(moves)

    def run_view() -> int:
        for s, seat in seated:
            view(s, seat)
        return len(seated)

    def run_serialize() -> int:
        for m in matches:
            match_to_bytes(m)
        return len(matches)

    def run_deserialize() -> int:
        for b in blobs:
            match_from_bytes(b)
        return len(blobs)

    return {
        "legal_actions": run_legal, "apply": run_apply, "view": run_view,
        "serialize": run_serialize, "deserialize": run_deserialize,
    }


def time_calls(runner: Callable[[], int], seconds: float) -> float:
    """Microseconds per call: passes over the sample for at least ``seconds``."""
    calls = 0
    start = clock()
    deadline = start + seconds
    while True:
        calls += runner()
        now = clock()
        if now >= deadline:
            return (now - start) / calls * 1e6


# ------------------------------------------------------------------------------ main


# ------------------------------------------------------------- the bar against a baseline


def extract_baseline(ref: str, into: Path) -> str:
    """The engine of git commit ``ref`` (``engine/`` and the ``gostop`` package around it) under
    ``into``, to import with ``into/clients/python`` first on the path; returns the full hash."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    paths = ["engine", "clients/python/gostop/__init__.py", "clients/python/gostop/engine"]
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, *paths],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return commit


def run_worker(pythonpath: list[str], seconds: float, modes: list[str], pure: bool) -> dict[str, Any]:
    """One process measuring standard 2-player rounds/s of each mode (``--worker``); its JSON.
    ``pure``: with ``GOSTOP_PURE_PYTHON=1`` (else this process's environment decides the build)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
    if pure:
        env["GOSTOP_PURE_PYTHON"] = "1"
    out = subprocess.run(
        [sys.executable, "-P", "-m", "bench.engine", "--worker", "--modes", ",".join(modes),
         "--seconds", str(seconds)],
        check=True, capture_output=True, text=True, env=env, cwd=ROOT,
    ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def worker_main(args: argparse.Namespace) -> None:
    """``--worker``: a short warm-up, then each mode once for ``--seconds``; JSON on stdout."""
    global clock
    clock = CLOCKS[args.clock]
    rules = Rules.preset(COMPARE_CONFIG[0], players=COMPARE_CONFIG[1])
    modes = [m for m in args.modes.split(",") if m]
    for mode in modes:
        MODES[mode](rules, 0.1)
    rates = {}
    for mode in modes:
        rounds, _, elapsed = MODES[mode](rules, args.seconds)
        rates[mode] = rounds / elapsed
    json.dump({"engine": engine_build(), "rounds_per_second": rates}, sys.stdout)


def compare(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """The bar: ``--baseline``'s engine (pure Python) against the engine loaded here, alternately."""
    modes = ["apply", "playout"]
    bars = {"apply": APPLY_BAR, "playout": PLAYOUT_BAR}
    with tempfile.TemporaryDirectory(prefix="gostop-baseline-") as tmp:
        try:
            commit = extract_baseline(args.baseline, Path(tmp))
        except (OSError, subprocess.CalledProcessError) as error:  # no git, or not this repository's history
            detail = getattr(error, "stderr", None) or error
            if isinstance(detail, bytes):
                detail = detail.decode(errors="replace")
            print(f"\nthe bar (compiled against pure Python): skipped, no engine of {args.baseline} to compare with: "
                  f"{str(detail).strip()}")
            return
        import gostop

        sides = {  # bench/ from this tree; gostop from the baseline, or where this process found it
            "baseline": [str(Path(tmp) / "clients" / "python"), str(ROOT)],
            "shipped": [str(Path(gostop.__file__).resolve().parent.parent), str(ROOT)],
        }
        runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "shipped": []}
        print(f"\nthe bar (compiled against pure Python):"
              f" {COMPARE_CONFIG[0]} {COMPARE_CONFIG[1]}p rounds per CPU-second, the engine of "
              f"{commit[:10]} (pure Python) against the shipped build, {args.compare_pairs} pairs of processes "
              f"alternated, {args.compare_seconds:g} s per mode and run", flush=True)
        for pair in range(args.compare_pairs):
            order = ("baseline", "shipped") if pair % 2 == 0 else ("shipped", "baseline")
            for side in order:
                runs[side].append(run_worker(sides[side], args.compare_seconds, modes, pure=side == "baseline"))
    engines = {side: runs[side][0]["engine"] for side in runs}
    print(f"baseline: {engines['baseline']}; shipped: {engines['shipped']}")
    print(f"{'mode':<10}{'baseline r/s':>14}{'shipped r/s':>14}{'ratio':>9}{'bar':>7}  pairs' ratios")
    result: dict[str, Any] = {"baseline_commit": commit, "engines": engines, "modes": {}}
    for mode in modes:
        before = [r["rounds_per_second"][mode] for r in runs["baseline"]]
        after = [r["rounds_per_second"][mode] for r in runs["shipped"]]
        ratios = [a / b for a, b in zip(after, before, strict=True)]
        ratio = statistics.median(ratios)
        verdict = "met" if ratio >= bars[mode] else "NOT met"
        print(f"{mode:<10}{statistics.median(before):>14,.0f}{statistics.median(after):>14,.0f}{ratio:>8.2f}x"
              f"{bars[mode]:>6.1f}x  {verdict}: " + " ".join(f"{r:.2f}" for r in ratios))
        result["modes"][mode] = {
            "baseline": [round(x, 1) for x in before], "shipped": [round(x, 1) for x in after],
            "ratio_median_of_pairs": round(ratio, 3), "bar": bars[mode], "met": ratio >= bars[mode],
        }
    report["bar"] = result


def engine_build() -> str:
    """Which engine build is imported: its ``BUILD`` (engines that have one), else by its files."""
    import gostop.engine

    build = getattr(gostop.engine, "BUILD", None)
    if build is not None:
        kind = "mypyc-compiled" if build.kind == "mypyc" else "pure Python"
        return f"{kind} ({build.reason})"
    compiled = compiled_modules()
    return "mypyc-compiled (" + ", ".join(m.removeprefix("gostop.engine.") for m in compiled) + ")" \
        if compiled else "pure Python"


def compiled_modules() -> list[str]:
    """The engine modules imported from compiled extensions, by name."""
    return sorted(
        name for name, module in sys.modules.items()
        if name.startswith("gostop.engine.") and str(getattr(module, "__file__", "")).endswith((".so", ".pyd"))
    )


def conditions(args: argparse.Namespace) -> dict[str, Any]:
    """What the figures were measured on and how."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "engine": engine_build(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1m_at_start": load,
        "clock": "process CPU time" if args.clock == "cpu" else "wall-clock time",
        "seconds_per_run": args.seconds,
        "repeats": args.repeats,
        "calls_seconds_per_run": args.calls_seconds,
        "statistic": "median of the runs",
    }


def parse_configs(text: str) -> list[tuple[str, int]]:
    """``standard:2,classic:4`` (or ``all``) as (preset, players) pairs."""
    if text == "all":
        return list(CONFIGS)
    out = []
    for item in text.split(","):
        preset, _, players = item.partition(":")
        out.extend([(preset, int(players))] if players else [c for c in CONFIGS if c[0] == preset])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one rounds/s run (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--clock", choices=CLOCKS, default="cpu", help="cpu (process time, default) or wall")
    parser.add_argument("--modes", default="apply,playout", help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--configs", default="all", help="preset:players list, e.g. standard:2,classic:4 (default all)")
    parser.add_argument("--calls-seconds", type=float, default=0.2, help="length of one per-call run (default 0.2)")
    parser.add_argument("--no-calls", action="store_true", help="skip the per-call table")
    parser.add_argument("--json", metavar="PATH", help="also write every figure (and run) as JSON")
    parser.add_argument("--require-native", action="store_true",
                        help="stop unless the engine imported is the compiled one")
    parser.add_argument("--baseline", metavar="REF",
                        help="also measure the bar: the engine of git commit REF against this one (see above)")
    parser.add_argument("--compare-pairs", type=int, default=6, help="pairs of processes for --baseline (default 6)")
    parser.add_argument("--compare-seconds", type=float, default=1.5,
                        help="CPU seconds per mode and process for --baseline (default 1.5)")
    parser.add_argument("--compare-only", action="store_true", help="with --baseline: skip the tables")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args)
        return
    global clock
    clock = CLOCKS[args.clock]
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}; modes are {', '.join(MODES)}")
    configs = parse_configs(args.configs)
    report: dict[str, Any] = {"conditions": conditions(args), "rounds": [], "calls": []}
    cond = report["conditions"]
    if args.require_native and "gostop.engine.play" not in compiled_modules():
        parser.error(f"the engine imported is not compiled: {cond['engine']}")
    print(f"engine: {cond['engine']}")
    print(
        f"engine benchmark: Python {cond['python']} on {cond['machine']}, {cond['cpus']} cpus, "
        f"load {cond['load_average_1m_at_start']}; {cond['clock']}, median of {args.repeats} runs"
    )

    if args.baseline and args.compare_only:
        compare(args, report)
        write_json(args, report)
        return

    print(f"\nrandom-vs-random full rounds per second, one core ({args.seconds:g} s per run)")
    print(f"{'preset':<10}{'players':>8}" + "".join(f"{m + ' r/s':>16}" for m in modes) + f"{'steps/round':>13}")
    for preset, players in configs:
        rules = Rules.preset(preset, players=players)
        runs: dict[str, list[float]] = {m: [] for m in modes}
        per_round = 0.0
        for _ in range(args.repeats):
            for mode in modes:
                rounds, steps, elapsed = MODES[mode](rules, args.seconds)
                runs[mode].append(rounds / elapsed)
                per_round = steps / rounds
        medians = {m: statistics.median(runs[m]) for m in modes}
        print(f"{preset:<10}{players:>8}" + "".join(f"{medians[m]:>16.0f}" for m in modes) + f"{per_round:>13.1f}")
        report["rounds"].append({
            "preset": preset, "players": players, "steps_per_round": round(per_round, 2),
            "rounds_per_second": {m: round(medians[m], 1) for m in modes},
            "runs": {m: [round(r, 1) for r in runs[m]] for m in modes},
        })
    standard = next((r for r in report["rounds"] if (r["preset"], r["players"]) == ("standard", 2)), None)
    if standard is not None:
        best = max(standard["rounds_per_second"].values())
        print(f"goal: standard 2p >= {GOAL} rounds/s per core: {'met' if best >= GOAL else 'not met'} ({best:.0f})")

    if not args.no_calls:
        print(f"\nmicroseconds per call over every position of {SAMPLE_ROUNDS} random rounds "
              f"({args.calls_seconds:g} s per run); mean snapshot (match_to_bytes) size")
        print(f"{'preset':<10}{'players':>8}" + "".join(f"{c + ' us':>17}" for c in CALLS) + f"{'snapshot B':>12}")
        for preset, players in configs:
            positions = sample_positions(Rules.preset(preset, players=players), SAMPLE_ROUNDS)
            runners = call_runners(positions)
            samples: dict[str, list[float]] = {c: [] for c in CALLS}
            for _ in range(args.repeats):
                for c in CALLS:
                    samples[c].append(time_calls(runners[c], args.calls_seconds))
            medians = {c: statistics.median(samples[c]) for c in CALLS}
            size = statistics.fmean(len(p.blob) for p in positions)
            print(f"{preset:<10}{players:>8}" + "".join(f"{medians[c]:>17.1f}" for c in CALLS) + f"{size:>12.0f}")
            report["calls"].append({
                "preset": preset, "players": players, "positions": len(positions),
                "microseconds": {c: round(medians[c], 2) for c in CALLS},
                "runs": {c: [round(x, 2) for x in samples[c]] for c in CALLS},
                "snapshot_bytes_mean": round(size, 1),
            })

    if args.baseline:
        compare(args, report)
    write_json(args, report)


def write_json(args: argparse.Namespace, report: dict[str, Any]) -> None:
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
