"""The web table's sentences, run under Node from the page's own sources (as test_prompt_arithmetic).

Every sentence built from parts agrees in person and number with the seat it names — the viewer is
"You" in English ("You play … and shake", "your 뻑", "you have none", "1 point") — and Korean ones
carry no "은(는)"-style particle guesses. The log's "Round over" line gives what the winner was paid,
and the settlement shows how a 피 count becomes its points ("16 − 9 = 7").
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "clients" / "web"
ROLLDOWN = WEB / "node_modules" / ".bin" / "rolldown"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.slow,  # not in make check: Node and the web table's packages
    pytest.mark.skipif(NODE is None or not ROLLDOWN.exists(), reason="needs node and clients/web's packages: make web"),
]

ENTRY = """
export {{ eventLine, seatNamer }} from "{src}/events";
export {{ categoryDetail, notApplied, reason }} from "{src}/settlement-text";
export {{ setLang }} from "{src}/i18n";
"""

RUNNER = """
import { categoryDetail, eventLine, notApplied, reason, seatNamer, setLang } from "./wording.mjs";
const view = { viewer: 0, botSeats: [{ seat: 1, bot: "random" }], seats: [
  { seat: 0, gos: 0, shakes: [5], bombs: [], score: { piValue: 3, gwangCount: 0 } },
  { seat: 1, gos: 0, shakes: [], bombs: [], score: { piValue: 12, gwangCount: 0 } }],
  rules: { pibak: true, gwangbak: true, gobak: true, pibakMaxPi: 5, pibakRequiresWinnerPi: false } };
const ev = (kind, value) => ({ kind: { case: kind, value } });
const events = [
  ev("cardPlayed", { seat: 0, card: 18, shake: true }),
  ev("ppeokRecaptured", { seat: 1, maker: 0, own: false, month: 2 }),
  ev("ppeokRecaptured", { seat: 0, maker: 0, own: true, month: 2 }),
  ev("scoreChanged", { seat: 0, total: 1 }),
  ev("scoreChanged", { seat: 1, total: 2 }),
  ev("sseul", { seat: 0, points: 1, steals: true }),
  ev("instantPaid", { payment: { payer: 1, payee: 0, points: 3, reason: "first_ppeok" } }),
  ev("instantPaid", { payment: { payer: 0, payee: 1, points: 3, reason: "first_ppeok" } }),
  ev("piStolen", { seat: 1, victim: 0, cards: [2], reasons: ["jjok"] }),
  ev("roundSettled", { settlement: { winner: 1, goScore: 7n,
                                     bills: [{ seat: 0, pays: 14n, points: 14n, factors: [] }] } }),
];
const settlement = { winner: 1, outcome: "stop", score: { gwang: 3, pi: 0, yeolCount: 0 },
  bills: [{ seat: 0, factors: [], points: 7n, pays: 7n, covers: [0] }] };
const lostTo = { ...settlement, winner: 0, bills: [{ seat: 1, factors: [], points: 7n, pays: 7n, covers: [1] }] };
const out = {};
for (const lang of ["en", "ko"]) {
  setLang(lang);
  const namer = seatNamer(view);
  out[lang] = {
    events: events.map((e) => eventLine(e, namer)),
    reasons: ["pibak", "gwangbak", "gobak", "own_shake_bomb"].map((n) => reason(n, settlement, view, 0, namer)),
    winnerReasons: ["shake_bomb"].map((n) => reason(n, lostTo, view, 1, namer)),
    notApplied: notApplied(settlement, { ...view, rules: { ...view.rules, pibak: false } }, 0, namer),
  };
}
out.detail = [categoryDetail(16, 7), categoryDetail(5, 1), categoryDetail(3, 0)];
process.stdout.write(JSON.stringify(out, (k, v) => (typeof v === "bigint" ? String(v) : v)));
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert NODE is not None
    tmp = tmp_path_factory.mktemp("wording")
    entry = tmp / "entry.ts"
    entry.write_text(ENTRY.format(src=(WEB / "src").as_posix()))
    bundle = subprocess.run([str(ROLLDOWN), str(entry), "--format", "esm", "--platform", "node",
                             "-o", str(tmp / "wording.mjs")], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    (tmp / "run.mjs").write_text(RUNNER)
    ran = subprocess.run([NODE, str(tmp / "run.mjs")], cwd=tmp, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


def test_english_sentences_agree_with_you(said: dict[str, Any]) -> None:
    played, taken, own, one, two, sweep, paid, pays, stolen, _ = said["en"]["events"]
    assert played.startswith("You play ") and played.endswith(" and shake (흔들기)"), played
    assert taken == "  Seat 1 · random takes your 뻑 of month 2 (매조)", taken
    assert own.strip().startswith("You take your own 뻑"), own
    assert one.strip() == "You: 1 point" and two.strip() == "Seat 1 · random: 2 points", (one, two)
    assert sweep.strip().endswith("You +1 point") or "you +1 point" in sweep, sweep
    assert paid.strip().startswith("Seat 1 · random pays you 3"), paid
    assert pays.strip().startswith("You pay Seat 1 · random 3"), pays
    assert "from you" in stolen, stolen
    pibak, gwangbak, gobak, own_shake = said["en"]["reasons"]
    assert pibak.startswith("You have 피 worth 3"), pibak
    assert gwangbak.endswith("and you have none"), gwangbak
    assert gobak.startswith("You went"), gobak
    assert own_shake.startswith("Your own 흔들기/폭탄"), own_shake
    assert said["en"]["notApplied"][-1] == "no 고박: you did not go"
    everything = json.dumps(said["en"])
    for wrong in ("You plays", "You's", "You has", " 1 points", "it did not go", "and shakes"):
        assert wrong not in everything, wrong


def test_korean_sentences_guess_no_particles(said: dict[str, Any]) -> None:
    everything = json.dumps(said["ko"], ensure_ascii=False)
    for guess in ("은(는)", "이(가)", "을(를)", "(는)", "(가)", "(를)"):
        assert guess not in everything, guess
    assert said["ko"]["events"][3].strip() == "나: 1점"


def test_round_over_says_what_the_winner_was_paid(said: dict[str, Any]) -> None:
    over = said["en"]["events"][-1]
    assert over == "Round over: Seat 1 · random wins 14 points", over
    assert "14점" in said["ko"]["events"][-1]


def test_the_settlement_shows_how_a_count_makes_its_points(said: dict[str, Any]) -> None:
    assert said["detail"] == ["16 − 9 = 7", "5 − 4 = 1", ""]
