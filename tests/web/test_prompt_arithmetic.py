"""The numbers the web table's prompts promise, against the engine.

At go/stop the page shows the settlement a stop would give now and what the next 고 makes of the
score; at 국진, the score either way (clients/web/src/preview.ts, on the view alone). Here that
TypeScript, bundled from the page's own sources with its own packages (rolldown), runs under Node
on the views that random play reaches in every preset and player count — with the 나가리 carry on
some deals — and must give what the engine gives: the settlement after that seat's Stop (go score,
the winner's factors, each bill's 박, what each loser pays, 3-player 고박 included), the go score
after one more 고, and the seat's score after KeepGukjin or ConvertGukjin.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from gostop.engine import (
    Action,
    ConvertGukjin,
    Go,
    KeepGukjin,
    Rules,
    Stop,
    apply,
    go_score,
    legal_actions,
    new_match,
    new_round,
    view,
)
from gostop.engine.state import Phase
from gostop.wire import convert

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "clients" / "web"
ROLLDOWN = WEB / "node_modules" / ".bin" / "rolldown"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.slow,  # not in make check: Node and the web table's packages
    pytest.mark.skipif(NODE is None or not ROLLDOWN.exists(), reason="needs node and clients/web's packages: make web"),
]

TABLES = [("standard", 2), ("standard", 3), ("classic", 2), ("classic", 3), ("classic", 4), ("house", 2),
          ("house", 3), ("arcade", 2), ("simple", 2)]
SEEDS = 40

RUNNER = """
import { readFileSync } from "node:fs";
import { gukjinScores, previewGo, previewStop } from "./preview.mjs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map((c) => c.kind === "go_stop"
  ? { stop: previewStop(c.view, c.seat), go: previewGo(c.view, c.seat) }
  : { gukjin: gukjinScores(c.view, c.seat) });
process.stdout.write(JSON.stringify(out));
"""


def view_json(state: Any, seat: int, match: Any) -> dict[str, Any]:
    """The seat's GameView as the page receives it (JSON names, enums as numbers)."""
    message = convert.view_to_pb(view(state, seat), match, "game", 1)
    return json_format.MessageToDict(message, use_integers_for_enums=True, always_print_fields_with_no_presence=True)


def collect() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cases for the page's functions and what the engine says of each."""
    cases: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    for preset, players in TABLES:
        rules = Rules.preset(preset, players=players)
        for seed in range(SEEDS):
            match, _ = new_match(rules, seed)
            state, _ = new_round(rules, seed, carry=rules.nagari_carry and seed % 4 == 0)
            match = dataclasses.replace(match, round=state)
            rng = random.Random(seed)
            while not state.over:
                seat = state.to_move
                actions = legal_actions(state)
                action: Action
                if state.phase is Phase.GO_STOP:
                    stopped, _ = apply(state, Stop())
                    s = stopped.settlement
                    assert s is not None
                    mine = state.seats[seat]
                    base = view(state, seat).seats[seat].score.total
                    cases.append({"kind": "go_stop", "seat": seat, "view": view_json(state, seat, match)})
                    expected.append({
                        "where": f"{preset} {players}p seed {seed} seat {seat}",
                        "go_points": s.go_score,
                        "winner_factors": [[f.name, f.value] for f in s.winner_factors],
                        "bills": [[b.seat, [[f.name, f.value] for f in b.factors], b.points, b.pays, list(b.covers)]
                                  for b in s.bills],
                        "after_go": go_score(base, mine.gos + 1, rules.go_scoring),
                    })
                    action = Go() if Go() in actions and rng.random() < 0.6 else Stop()
                elif state.phase is Phase.GUKJIN:
                    kept, _ = apply(state, KeepGukjin())
                    converted, _ = apply(state, ConvertGukjin())
                    cases.append({"kind": "gukjin", "seat": seat, "view": view_json(state, seat, match)})
                    expected.append({
                        "where": f"{preset} {players}p seed {seed} seat {seat} (국진)",
                        "keep": view(kept, seat).seats[seat].score.total,
                        "convert": view(converted, seat).seats[seat].score.total,
                    })
                    action = rng.choice(actions)
                else:
                    action = rng.choice(actions)
                state, _ = apply(state, action)
                match = dataclasses.replace(match, round=state)
    return cases, expected


def test_the_prompts_promise_what_the_engine_settles(tmp_path: Path) -> None:
    assert NODE is not None
    bundle = subprocess.run([str(ROLLDOWN), "src/preview.ts", "--format", "esm", "--platform", "node",
                             "-o", str(tmp_path / "preview.mjs")], cwd=WEB, capture_output=True, text=True,
                            timeout=300)
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    (tmp_path / "run.mjs").write_text(RUNNER)
    cases, expected = collect()
    ran = subprocess.run([NODE, str(tmp_path / "run.mjs")], input=json.dumps(cases), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    results = json.loads(ran.stdout)
    assert len(results) == len(cases)

    seen_factors: set[str] = set()
    go_stops = moved = 0
    for got, want in zip(results, expected, strict=True):
        where = want["where"]
        if "gukjin" in got:
            assert got["gukjin"]["keep"]["total"] == want["keep"], where
            assert got["gukjin"]["convert"]["total"] == want["convert"], where
            continue
        go_stops += 1
        stop = got["stop"]
        assert stop["goPoints"] == want["go_points"], where
        assert [[f["name"], f["value"]] for f in stop["winnerFactors"]] == want["winner_factors"], where
        bills = [[b["seat"], [[f["name"], f["value"]] for f in b["factors"]], b["points"], b["pays"], b["covers"]]
                 for b in stop["bills"]]
        assert bills == want["bills"], where
        assert stop["total"] == sum(b[3] for b in want["bills"]), where
        assert got["go"]["afterGo"] == want["after_go"], where
        seen_factors |= {f[0] for f in want["winner_factors"]} | {f[0] for b in want["bills"] for f in b[1]}
        moved += any(b[2] != b[3] for b in want["bills"])
    # The random play reached what the prompts must get right.
    assert go_stops >= 100, go_stops
    assert {"pibak", "gwangbak", "gobak", "shake_bomb", "nagari_carry"} <= seen_factors, seen_factors
    assert moved > 0, "no 3-player 고박 moved a bill"
    assert any(c["kind"] == "gukjin" for c in cases)
