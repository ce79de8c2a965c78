"""Command line: ``gostop demo`` plays a seeded round in the terminal."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .game import apply, legal_actions, new_round
from .render import event_line, state_text
from .rng import Rng
from .rules import PRESETS, Rules


def demo(preset: str, players: int | None, seed: int) -> int:
    """Play one round between two seeded random players and print every event."""
    write = sys.stdout.write
    rules = Rules.preset(preset, players=players)
    write(f"gostop demo: preset {rules.name}, {rules.players} players, seed {seed}\n")
    state, events = new_round(rules, seed)
    for e in events:
        write(event_line(e) + "\n")
    rng = Rng(seed ^ 0x5EED)
    while not state.over:
        actions = legal_actions(state)
        action = actions[rng.below(len(actions))]
        state, events = apply(state, action)
        for e in events:
            write(event_line(e) + "\n")
    write("\n" + state_text(state) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gostop", description="Go-Stop rules engine")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="play a seeded demo round in the terminal")
    d.add_argument("--preset", choices=PRESETS, default="standard")
    d.add_argument("--players", type=int, default=None)
    d.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.preset, args.players, args.seed)
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
