"""The numbers the web table's prompts show are the API's.

At go/stop the page shows the settlement a stop would give now and what the next 고 makes of the
score, at 국진 the score either way, and on a selected hand card what it takes from the floor: all
read from the view (``GameView.stop_preview``, ``gukjin_preview``, ``LegalAction.capture``) by
``clients/web/src/preview.ts``, which holds no scoring or settlement of its own. Here that
TypeScript, bundled from the page's own sources with its own packages (rolldown), runs under Node on
the views (as the page receives them) that random play reaches in every preset and player count —
with the 나가리 carry on some deals — and must show what the engine then does: the settlement after
that seat's Stop, the go score after one more 고, the seat's score after KeepGukjin or ConvertGukjin,
and each play's capture hint.
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
    PlayCard,
    Rules,
    Stop,
    apply,
    go_score,
    legal_actions,
    new_match,
    new_round,
    seat_score,
    view,
)
from gostop.engine.cards import MONTH
from gostop.engine.previews import capture_hint
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
SEEDS = 25

RUNNER = """
import { readFileSync } from "node:fs";
import { captureOf, gukjinScores, previewGo, previewStop } from "./preview.mjs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map((c) => c.kind === "go_stop"
  ? { stop: previewStop(c.view), go: previewGo(c.view) }
  : c.kind === "gukjin" ? { gukjin: gukjinScores(c.view) }
  : { hints: c.cards.map(([card, month]) => captureOf(c.view, card, month) ?? null) });
process.stdout.write(JSON.stringify(out));
"""


def view_json(state: Any, seat: int, match: Any) -> dict[str, Any]:
    """The seat's GameView as the page receives it (JSON names, enums as numbers)."""
    message = convert.view_to_pb(view(state, seat), match, "game", 1)
    return json_format.MessageToDict(message, use_integers_for_enums=True, always_print_fields_with_no_presence=True)


def collect() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cases for the page's functions and what the engine does in each."""
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
                where = f"{preset} {players}p seed {seed} seat {seat} step {state.steps}"
                if state.phase is Phase.GO_STOP:
                    stopped, _ = apply(state, Stop())
                    s = stopped.settlement
                    assert s is not None
                    base = seat_score(state, seat).total
                    cases.append({"kind": "go_stop", "view": view_json(state, seat, match)})
                    expected.append({
                        "where": where,
                        "go_points": s.go_score,
                        "winner_factors": [[f.name, f.value] for f in s.winner_factors],
                        "bills": [[b.seat, [[f.name, f.value] for f in b.factors], b.points, b.pays, list(b.covers)]
                                  for b in s.bills],
                        "after_go": go_score(base, state.seats[seat].gos + 1, rules.go_scoring),
                    })
                    action = Go() if Go() in actions and rng.random() < 0.6 else Stop()
                elif state.phase is Phase.GUKJIN:
                    kept, _ = apply(state, KeepGukjin())
                    converted, _ = apply(state, ConvertGukjin())
                    cases.append({"kind": "gukjin", "view": view_json(state, seat, match)})
                    expected.append({
                        "where": where,
                        "keep": seat_score(kept, seat).total,
                        "convert": seat_score(converted, seat).total,
                    })
                    action = rng.choice(actions)
                else:
                    if state.phase is Phase.PLAY and seed % 5 == 0:
                        seen = view(state, seat)
                        hand = seen.seats[seat].hand
                        cases.append({"kind": "play", "view": view_json(state, seat, match),
                                      "cards": [[c, MONTH[c]] for c in hand]})
                        expected.append({"where": where, "hints": [capture_hint(seen, PlayCard(c)) for c in hand]})
                    action = rng.choice(actions)
                state, _ = apply(state, action)
                match = dataclasses.replace(match, round=state)
    return cases, expected


def test_the_prompts_show_the_apis_values(tmp_path: Path) -> None:
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
    go_stops = gukjins = plays = 0
    for got, want in zip(results, expected, strict=True):
        where = want["where"]
        if "gukjin" in got:
            gukjins += 1
            assert got["gukjin"]["keep"]["total"] == want["keep"], where
            assert got["gukjin"]["convert"]["total"] == want["convert"], where
            continue
        if "hints" in got:
            for hint, engine_hint in zip(got["hints"], want["hints"], strict=True):
                plays += 1
                assert hint is not None, where
                assert list(hint["takes"]) == list(engine_hint.takes), where
                assert list(hint["chooseFrom"]) == list(engine_hint.choose_from), where
                assert hint["monthUnseen"] == engine_hint.month_unseen, where
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
    # The random play reached what the prompts must show.
    assert go_stops >= 50 and gukjins > 0 and plays > 100, (go_stops, gukjins, plays)
    assert {"pibak", "gwangbak", "gobak", "shake_bomb", "nagari_carry"} <= seen_factors, seen_factors
