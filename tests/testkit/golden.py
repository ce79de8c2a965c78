"""Regenerate the golden transcripts in ``tests/golden/`` (``make golden``).

Each transcript is one whole seeded round of one (preset, players) configuration, the choices
drawn from the engine's own generator with a fixed seed: a header line, every event as
``engine.render.event_line`` writes it, and the final table as ``engine.render.state_text``.
``tests/engine/test_golden.py`` renders the same rounds with ``render_round`` and compares them with the
files, so any change to the engine's behaviour or its text shows up there. Run this script only
after checking that such a change is intended.

The seeds are chosen so that the set shows 뻑, 쪽, 따닥, 쓸, 폭탄, 흔들기, 국진, go, stop, 나가리,
instant wins and payments, and the 4-player sit-out and 광팔기.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from gostop.engine import Event, Rules, State, apply, legal_actions, new_round
from gostop.engine.render import event_line, state_text
from gostop.engine.rng import Rng

GOLDEN_DIR: Final = Path(__file__).resolve().parents[2] / "tests" / "golden"
CHOOSER_SALT: Final = 0x5EED_C401CE
"""The choices of round ``seed`` come from ``Rng(seed ^ CHOOSER_SALT)``."""

GOLDEN_CASES: Final[tuple[tuple[str, int, int], ...]] = (
    ("standard", 2, 925),  # 따닥, 뻑 and 자뻑 recapture, 쪽, 흔들기, 국진 converted, go, stop
    ("standard", 2, 947),  # redeal, 폭탄 and 빈 내기, automatic stop
    ("standard", 3, 249),  # 쓸, 흔들기, go, 나가리
    ("standard", 3, 1398),  # 폭탄 and 빈 내기, 뻑 recapture
    ("simple", 2, 150),  # redeal, 쓸, 자뻑 recapture, go, stop
    ("simple", 2, 559),  # 뻑, 쪽, automatic stop
    ("classic", 2, 1096),  # 첫뻑 and 연뻑 payments, 흔들기
    ("classic", 2, 1102),  # 3뻑 instant win
    ("classic", 3, 27),  # 허당 instant win
    ("classic", 3, 50),  # 총통 at the deal
    ("classic", 4, 14),  # forced sit-out and 광팔기, 첫뻑, go
    ("classic", 4, 570),  # voluntary sit-out, 따닥 and 첫따닥
    ("house", 3, 27),  # 폭탄, 첫뻑, 쓸
    ("house", 3, 1389),  # 흔들기, 쓸, go
    ("house", 2, 1302),  # 폭탄, 흔들기, 첫뻑, go, stop
    ("house", 2, 405),  # 폭탄, 쓸, go
    ("arcade", 2, 19),  # 쓸 points, 폭탄, a go on the last action that ends the round
    ("arcade", 2, 912),  # 3뻑 instant loss
)
"""(preset, players, seed) of every golden transcript."""


def golden_name(preset: str, players: int, seed: int) -> str:
    """File name of a transcript: ``standard-2p-0.txt``."""
    return f"{preset}-{players}p-{seed}.txt"


def play_round(preset: str, players: int, seed: int) -> tuple[State, list[Event]]:
    """Play the seeded round, choosing among the legal actions with ``Rng(seed ^ CHOOSER_SALT)``.

    Returns the final state and every event of the round, the deal's included.
    """
    chooser = Rng(seed ^ CHOOSER_SALT)
    state, events = new_round(Rules.preset(preset, players), seed)
    stream = list(events)
    while not state.over:
        actions = legal_actions(state)
        state, events = apply(state, actions[chooser.below(len(actions))])
        stream += events
    return state, stream


def render_round(preset: str, players: int, seed: int) -> str:
    """The transcript of one round, as stored in ``tests/golden/``."""
    state, events = play_round(preset, players, seed)
    lines = [f"# preset {preset}, {players} players, seed {seed}, chooser Rng({seed ^ CHOOSER_SALT})"]
    lines += [event_line(e) for e in events]
    lines.append("# final table")
    lines.append(state_text(state))
    return "\n".join(lines) + "\n"


def main() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    wanted = {golden_name(*case) for case in GOLDEN_CASES}
    for stale in sorted(GOLDEN_DIR.glob("*.txt")):
        if stale.name not in wanted:
            stale.unlink()
            print(f"removed {stale.name}")
    for case in GOLDEN_CASES:
        path = GOLDEN_DIR / golden_name(*case)
        text = render_round(*case)
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8")
        print(f"{'unchanged' if old == text else 'written'}: {path.name}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
