"""Generate the shared conformance scenarios in ``tests/conformance/scenarios/`` (``make conformance-data``).

Each scenario is an explicit deal (or a seed) and a script of actions, taken from the scripted rounds
of ``tests/engine/test_special_events.py`` and ``tests/engine/test_seed_examples.py``. This script plays each one
through the ENGINE (``new_match`` / ``match_apply``, never the server) and writes what any client
of the gRPC service must then observe: the request that creates the game, the steps to submit, the
whole unredacted log (engine events converted with ``gostop.wire.convert.event_to_pb``), the settlement
and the spectator's final view, all as proto3 JSON. ``tests/conformance/README.md`` documents the
format; ``tests/contract/test_conformance_python.py`` runs the files against a live server and checks that
they are up to date (``render_all`` here gives the exact text of every file).

Usage: ``PYTHONPATH=tests python -m testkit.conformance [--check] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.message import Message

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    Deal,
    FlipOnly,
    Go,
    JoinRound,
    KeepGukjin,
    Match,
    Phase,
    PlayCard,
    Rules,
    SellGwang,
    SitOut,
    Stop,
    action_id,
    legal_actions,
    match_apply,
    new_match,
    next_round,
    view,
)
from gostop.engine.events import Event, RoundSettled
from gostop.engine.testing import scripted_deal
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert

ROOT: Final = Path(__file__).resolve().parents[2]
SCENARIO_DIR: Final = ROOT / "tests" / "conformance" / "scenarios"
FORMAT: Final = 1
"""Bumped when the file format changes incompatibly (clients may check ``format``)."""

A, B, C, D = 0, 1, 2, 3
JsonObject = dict[str, Any]


# ------------------------------------------------------------------------------ deals
# The same construction as the tests' ``make_deal``: named cards where the script needs them,
# every other card a filler in ascending id order.


make_deal = scripted_deal


# Whole 2-player rounds from a quiet pattern over eleven months (see tests/engine/test_special_events.py):
# each turn captures the partner of the oldest floor card and lays its flip; the twelfth month
# (R1-R4) and the last turns are each scenario's tail.

Quad = tuple[int, int, int, int]

CYCLE: Final[tuple[Quad, ...]] = (
    (6, 5, 4, 7), (22, 21, 23, 20), (36, 37, 39, 38), (25, 24, 27, 26), (34, 33, 32, 35),
    (44, 47, 46, 45), (12, 13, 14, 15), (1, 0, 3, 2), (31, 28, 30, 29), (18, 19, 16, 17),
    (42, 41, 43, 40),
)
RESERVED: Final[Quad] = (10, 11, 8, 9)
CYCLE_NAGARI: Final[tuple[Quad, ...]] = (
    (40, 42, 41, 43), (7, 4, 5, 6), (30, 29, 31, 28), (8, 10, 11, 9), (19, 16, 17, 18),
    (13, 15, 14, 12), (44, 45, 46, 47), (22, 23, 21, 20), (3, 1, 0, 2), (39, 38, 37, 36),
    (34, 35, 33, 32),
)
RESERVED_NAGARI: Final[Quad] = (26, 27, 25, 24)
R1, R2, R3, R4 = RESERVED


def d(k: int, cycle: Sequence[Quad] = CYCLE) -> int:
    """The second captor of the k-th cycle month (0-based)."""
    return cycle[k][3]


def cycle_turns(cycle: Sequence[Quad], f: int) -> tuple[list[int], list[int]]:
    """Played and flipped cards of the quiet turns, with ``f`` cycle months on the floor."""
    plays: list[int] = []
    flips: list[int] = []
    for t in range(1, 23 - f):
        plays.append(cycle[(t - 1) % 11][1 if t <= 11 else 3])
        flips.append(cycle[(t + f - 1) % 11][0 if t <= 11 - f else 2])
    return plays, flips


Tail = tuple[Sequence[int], Sequence[int], Sequence[int]]


def cycle_round(
    rules: Rules, tail: Tail, *, parked: int = 0, cycle: Sequence[Quad] = CYCLE, reserved: Quad = RESERVED,
) -> tuple[Deal, list[Action]]:
    """A deal for seats A (the 선) and B, and the plays of the quiet part of the round."""
    f = rules.floor_size - parked
    floor = [q[0] for q in cycle[:f]] + list(reserved[:parked])
    plays, flips = cycle_turns(cycle, f)
    hands = [plays[0::2] + list(tail[0]), plays[1::2] + list(tail[1])]
    return make_deal(rules, hands, floor, flips + list(tail[2])), [PlayCard(c) for c in plays]


@dataclass(frozen=True)
class NextRound:
    """A script step that deals the next round of the match (``StartNextRound``) as ``seat``."""

    seat: int = 0


@dataclass(frozen=True)
class AutoPlay:
    """A script step that turns auto-play on or off for ``seat`` (``SetAutoPlay``): a step of the
    table alone, in a game with a clock."""

    seat: int
    on: bool


Step = Action | NextRound | AutoPlay


@dataclass(frozen=True)
class Refusal:
    """A call the server must refuse after the script: ``create`` (a ``CreateGame``), or an
    auto-play change of ``seat``; the gRPC code's name, the ``ErrorInfo`` reason and metadata."""

    code: str
    reason: str
    create: JsonObject | None = None
    auto_play: AutoPlay | None = None
    metadata: JsonObject = field(default_factory=dict)


def cards(*ids: int) -> list[Step]:
    return [PlayCard(c) for c in ids]


SSEUL_TAIL: Final[Tail] = ([d(3), d(7), d(9)], [d(5), R2, d(10)], [d(4), d(6), R1, d(8), R3, R4])
SSEUL_SCRIPT: Final = cards(d(3), d(5), d(7), R2, d(9), d(10))
JJOK_TAIL: Final[Tail] = ([d(3), d(6), R3], [d(5), R2, d(9)], [d(4), R1, d(7), d(8), R4, d(10)])
JJOK_SCRIPT: Final = cards(d(3), d(5), d(6), R2, R3, d(9))
PPEOK_TAIL: Final[Tail] = ([d(3), d(7), R2], [d(5), d(8), R4], [d(4), d(6), R1, d(9), R3, d(10)])
PPEOK_SCRIPT: Final = cards(d(3), d(5), d(7), d(8), R2, R4)
TTADAK_TAIL: Final[Tail] = ([d(5), d(9)], [d(7), R3], [d(6), d(8), d(10), R4])
TTADAK_SCRIPT: Final = [*cards(d(5), d(7), d(9), R3), ChooseCapture(R1)]


def nd(k: int) -> int:
    return d(k, CYCLE_NAGARI)


NAGARI_TAIL: Final[Tail] = (
    [nd(3), nd(7), nd(9)], [nd(5), RESERVED_NAGARI[1], nd(10)],
    [nd(4), nd(6), RESERVED_NAGARI[0], nd(8), *RESERVED_NAGARI[2:]],
)
NAGARI_SCRIPT: Final = cards(nd(3), nd(5), nd(7), RESERVED_NAGARI[1], nd(9), nd(10))
BEST_TAIL: Final[Tail] = (
    [nd(3), nd(6), RESERVED_NAGARI[2]], [nd(5), RESERVED_NAGARI[1], nd(9)],
    [nd(4), RESERVED_NAGARI[0], nd(7), nd(8), RESERVED_NAGARI[3], nd(10)],
)
BEST_SCRIPT: Final = cards(nd(3), nd(5), nd(6), RESERVED_NAGARI[1], RESERVED_NAGARI[2], nd(9))


# -------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    """One scenario as Python data: a game to create and the actions to play in it.

    ``script`` is applied in order by whichever seat is to move. A go/stop decision the script does
    not answer (its next action is neither Go nor Stop) is answered with Go, a 국진 decision with
    KeepGukjin, as in the tests' ``drive``. With ``finish``, the round is then played to its end:
    Stop at every go/stop decision, otherwise the legal action with the lowest id. A ``NextRound``
    step deals the next round of a match once the current one is over.
    """

    name: str
    description: str
    preset: str
    players: int
    deal: Deal | None
    script: Sequence[Step] = ()
    seed: int = 1
    overrides: JsonObject = field(default_factory=dict)
    finish: bool = True
    rounds: int | None = None
    """``CreateGameRequest.rounds``; absent (None) means 1."""
    clock: JsonObject | None = None
    """``CreateGameRequest.clock`` as proto3 JSON; None: no clock."""
    refusals: Sequence[Refusal] = ()


def rules_of(preset: str, players: int) -> Rules:
    return Rules.preset(preset, players=players)


STANDARD = rules_of("standard", 2)
STANDARD3 = rules_of("standard", 3)
SIMPLE = rules_of("simple", 2)
CLASSIC = rules_of("classic", 2)
CLASSIC3 = rules_of("classic", 3)
CLASSIC4 = rules_of("classic", 4)
HOUSE = rules_of("house", 3)
HOUSE2 = rules_of("house", 2)
ARCADE = rules_of("arcade", 2)


def scenario(name: str, description: str, rules: Rules, deal: Deal | None, script: Sequence[Step] = (),
             **options: Any) -> Scenario:
    return Scenario(name, description, rules.name, rules.players, deal, tuple(script), **options)


def tail_scenario(name: str, description: str, rules: Rules, tail: Tail, script: Sequence[Step],
                  more: Sequence[Step] = (), **options: Any) -> Scenario:
    parked = options.pop("parked", 0)
    cycle = options.pop("cycle", CYCLE)
    reserved = options.pop("reserved", RESERVED)
    deal, steady = cycle_round(rules, tail, parked=parked, cycle=cycle, reserved=reserved)
    return scenario(name, description, rules, deal, [*steady, *script, *more], **options)


def chongtong_deal(rules: Rules, holder: int) -> Deal:
    hands: list[list[int]] = [[] for _ in range(rules.players)]
    hands[holder] = [0, 1, 2, 3]
    return make_deal(rules, hands, [4, 8, 12, 16, 20, 24, 28, 36][: rules.floor_size], allow_four=True)


SSEUL_FLOOR: Final = [2, 6, 10, 14, 18, 22, 26, 30]
GUKJIN_FLOOR: Final = [32, 1, 5, 17, 21, 25, 29, 37]
REGO: Final = ([[0, 28, 13, 38, 21], [40, 24, 10, 2]], [1, 9, 29, 4, 14, 18, 39, 22], [8, 44, 5, 32, 17, 30, 6, 16, 36])
SHAKE3: Final = ([[20, 21, 22, 4], [28, 29, 30], [40]], [1, 5, 9, 12, 16, 24], [0, 36, 44, 8])
FOUR_FLOOR: Final = [1, 5, 9, 13, 17, 21]


def scenarios() -> list[Scenario]:
    """Every scenario, in file-name order."""
    out = [
        # ------------------------------------------------------------------ 뻑 and stacks
        scenario(
            "standard-2p-ppeok-recaptured",
            "뻑: A plays 1월 광 onto the lone 1월 띠 and flips 1월 피 (PpeokFormed, nothing captured); B takes "
            "the stack with the fourth 1월 card (PpeokRecaptured, own=false) and steals one 피 from A.",
            STANDARD, make_deal(STANDARD, [[6, 0], [13, 3]], [1, 7, 12, 16, 20, 24, 28, 36], [8, 40, 2, 44]),
            cards(6, 13, 0, 3)),
        scenario(
            "standard-2p-jappeok",
            "자뻑: A makes a 뻑 of month 1 and takes its own stack back with the fourth card on its next turn: "
            "two 피 stolen from B (reasons jappeok, jappeok).",
            STANDARD, make_deal(STANDARD, [[0, 3], [14]], [1, 15, 17, 20, 24, 28, 36, 44], [2, 8, 40]),
            cards(0, 14, 3)),
        scenario(
            "standard-2p-starting-floor-triple",
            "Three 1월 cards on the starting floor form a stack (maker -1); B takes it with the fourth card: "
            "captured, but no PpeokRecaptured and no steal.",
            STANDARD, make_deal(STANDARD, [[6], [3]], [0, 1, 2, 7, 12, 16, 20, 24], [8, 40]), cards(6, 3)),
        # ----------------------------------------------------------------- 쪽, 따닥, 쓸
        scenario(
            "standard-2p-jjok",
            "쪽: A plays a 6월 card with no 6월 on the floor and flips the other 6월 card: both captured, one 피 "
            "stolen from B.",
            STANDARD, make_deal(STANDARD, [[4, 20], [14]], [1, 15, 17, 24, 28, 36, 40, 44], [8, 33, 21]),
            cards(4, 14, 20)),
        scenario(
            "standard-2p-ttadak",
            "따닥: two 6월 on the floor; A plays the third (choose_hand: ChooseCapture 21) and flips the fourth: "
            "all four captured, one 피 stolen from B.",
            STANDARD, make_deal(STANDARD, [[4, 22], [14]], [20, 21, 15, 17, 24, 28, 36, 40], [8, 33, 23]),
            [*cards(4, 14, 22), ChooseCapture(21)]),
        scenario(
            "standard-2p-sseul-steal",
            "쓸 in steal mode: B's fourth capture empties the floor (Sseul steals=true) and steals one 피 from A.",
            STANDARD, make_deal(STANDARD, [[3, 19], [11, 27]], SSEUL_FLOOR, [7, 15, 23, 31]), cards(3, 11, 19, 27)),
        scenario(
            "arcade-2p-sseul-point",
            "쓸 in arcade's point mode: the same sweep gives B +1 point (Sseul points=1, Score.sseul) and steals "
            "nothing.",
            ARCADE, make_deal(ARCADE, [[3, 19], [11, 27]], SSEUL_FLOOR, [7, 15, 23, 31]), cards(3, 11, 19, 27)),
        scenario(
            "standard-2p-steal-order",
            "Steal order and 국진 conversion: B (the 선) gets the bonus 쓰리피 at the deal, takes 국진 and converts "
            "it (GukjinDecided converted, final), takes a 쌍피; A then makes five 쪽 in a row and steals plain "
            "피, then the 쌍피, then the converted 국진, then the 쓰리피, then nothing.",
            STANDARD,
            make_deal(STANDARD, [[8, 12, 16, 10, 14], [32, 50, 44, 28, 36, 25]], [34, 46, 0, 1, 2, 4, 5, 6],
                      [45, 47, 9, 40, 13, 24, 17, 20, 11, 21, 15], dealer=B),
            [PlayCard(32), ConvertGukjin(), *cards(8, 44, 12, 28, 16, 36, 10, 25, 14)]),
        # ------------------------------------------------------------ 흔들기 and 폭탄
        scenario(
            "standard-3p-shake",
            "흔들기: A plays 6월 열끗 declaring a shake (action id 84; Shaken reveals 20, 21, 22), completes 홍단 "
            "and stops: the winner's shake_bomb factor doubles both bills.",
            STANDARD3, make_deal(STANDARD3, *SHAKE3), [PlayCard(20, shake=True), *cards(28, 40, 4), Stop()]),
        scenario(
            "standard-3p-losing-shake-override",
            "A rules override in CreateGame (shake_bomb_when_losing=true): B shakes and loses, and its own "
            "declaration doubles its bill (own_shake_bomb).",
            STANDARD3, make_deal(STANDARD3, *SHAKE3), [PlayCard(20), PlayCard(28, shake=True), *cards(40, 4), Stop()],
            overrides={"shake_bomb_when_losing": True}),
        scenario(
            "classic-3p-shake-and-bomb",
            "흔들기 of 6월 and 폭탄 of 7월 by the same seat (per_declaration): ×4 for the winner; the bomb steals "
            "and grants two 빈 내기.",
            CLASSIC3,
            make_deal(CLASSIC3, [[20, 21, 22, 24, 25, 26, 4], [28, 29], [40, 41]], [1, 9, 5, 27, 12, 16],
                      [0, 36, 44, 8, 38, 46, 34]),
            [PlayCard(20, shake=True), *cards(28, 40), Bomb(7), *cards(29, 41, 4), Stop()]),
        scenario(
            "standard-2p-bomb-flip-only",
            "폭탄 and 빈 내기: B's bonus 쌍피 from the deal (BonusCaptured source hand) steals nothing; A bombs 7월 "
            "(action id 135), captures four, steals that 쌍피 and gains two flip-only turns, then uses one "
            "(FlipOnly, action id 150).",
            STANDARD, make_deal(STANDARD, [[24, 25, 26], [48, 40]], [27, 1, 5, 9, 13, 17, 21, 37], [45, 28, 44, 0]),
            [Bomb(7), PlayCard(40), FlipOnly()]),
        # -------------------------------------------------------------------- bonus cards
        scenario(
            "standard-2p-bonus-at-the-deal",
            "Bonus cards at the deal: B's hand bonus 쌍피 is replaced by the 쓰리피, the floor bonus goes to the "
            "선 (A), and the 쓰리피 replacement is resolved on the next pass (redacted replacement -1 only in "
            "seat views; the log is unredacted).",
            STANDARD, make_deal(STANDARD, [[], [48]], [49, 4, 8, 12, 16, 20, 24, 28], [50, 36, 40])),
        scenario(
            "standard-2p-bonus-flip-then-ppeok",
            "A bonus card flipped during play is captured (BonusCaptured source flip) and A flips again; the "
            "second flip makes a 뻑, and the bonus card stays captured.",
            STANDARD, make_deal(STANDARD, [[0]], [1, 4, 8, 12, 16, 20, 24, 28], [48, 2]), [PlayCard(0)]),
        # ----------------------------------------------------------------------- 국진
        scenario(
            "standard-2p-gukjin-keep-then-convert",
            "국진 on_settlement: A takes 국진 and keeps it as a 열끗 (KeepGukjin, final=false), is asked again at "
            "its next own settlement and converts it (ConvertGukjin, final=true).",
            STANDARD, make_deal(STANDARD, [[33, 0, 4], [40, 41]], GUKJIN_FLOOR, [8, 44, 12, 45, 13]),
            [PlayCard(33), KeepGukjin(), *cards(40, 0), ConvertGukjin(), *cards(41, 4)]),
        # ------------------------------------------------------------ 총통 and redeals
        scenario(
            "classic-2p-chongtong",
            "총통 (classic): B is dealt the four 1월 cards and wins 10 points at once, before any card is "
            "played; the game is over at version 1 with no steps.",
            CLASSIC, chongtong_deal(CLASSIC, B)),
        scenario(
            "house-3p-chongtong",
            "총통 (house, 3 players, 100 won a point): C wins 10 points from each opponent at the deal.",
            HOUSE, chongtong_deal(HOUSE, C)),
        scenario(
            "arcade-2p-chongtong",
            "총통 (arcade): B wins 10 points at the deal.",
            ARCADE, chongtong_deal(ARCADE, B)),
        scenario(
            "standard-2p-redeal-hand-four",
            "Redeal without 총통 (standard): the explicit deal gives B four 1월 cards, so it is thrown in "
            "(Redealt hand_four, month 1) and redealt from the seed (5); the round is then played out.",
            STANDARD, make_deal(STANDARD, [[], [0, 1, 2, 3]], [4, 8, 12, 16, 20, 24, 28, 36], allow_four=True),
            seed=5),
        # ------------------------------------------------ 뻑 payments and instant outcomes
        scenario(
            "classic-2p-three-ppeok-in-a-row",
            "Classic 첫뻑, 2연뻑 and 3연뻑 payments (7, 14, 21) and the 3뻑 instant win (7): 49 points in all.",
            CLASSIC, make_deal(CLASSIC, [[0, 4, 8], [12, 20]], [1, 5, 9, 28, 33, 36, 40, 44], [2, 16, 6, 24, 10]),
            cards(0, 12, 4, 20, 8)),
        scenario(
            "house-3p-first-ppeok-three-ppeok",
            "House: 첫뻑 paid by both opponents (3 each), no 연뻑 escalation, and the third 뻑 wins at once "
            "(three_ppeok, 3 points each); money at 100 won a point.",
            HOUSE, make_deal(HOUSE, [[0, 4, 8], [14, 26], [22, 29]], [1, 5, 9, 15, 19, 23], [2, 18, 24, 6, 28, 36, 10]),
            cards(0, 14, 22, 4, 26, 29, 8)),
        scenario(
            "arcade-2p-go-then-three-ppeok-loss",
            "Arcade: A takes 3 광 and goes (3 points, 1 go); B then makes three 뻑 and loses at once "
            "(InstantLoss three_ppeok); A wins with its go score 4 and B's 피박 doubles it.",
            ARCADE,
            make_deal(ARCADE, [[8, 40, 20, 36], [47, 4, 12, 16]], [10, 30, 44, 3, 41, 5, 13, 17],
                      [28, 2, 1, 6, 24, 14, 33, 18]),
            [*cards(8, 47, 40), Go(), *cards(4, 20, 12, 36, 16)]),
        scenario(
            "classic-2p-first-ttadak",
            "Classic 첫따닥: a 따닥 on A's first turn is paid at once (7 from B); B has no 피 to steal.",
            CLASSIC, make_deal(CLASSIC, [[22]], [20, 21, 1, 5, 9, 13, 17, 25], [23]),
            [PlayCard(22), ChooseCapture(20)]),
        scenario(
            "classic-2p-heodang",
            "Classic 허당: A captures nothing on five consecutive own turns and wins 3 points at once.",
            CLASSIC,
            make_deal(CLASSIC, [[0, 8, 16, 6, 14], [1, 9, 17, 7]], [20, 24, 28, 32, 36, 40, 44, 45],
                      [4, 5, 12, 13, 2, 3, 10, 11, 18]),
            cards(0, 1, 8, 9, 16, 17, 6, 7, 14)),
        # ---------------------------------------------------------------- go / stop
        scenario(
            "standard-2p-go-then-stop",
            "A reaches 7 and goes (WentGo 1), is not asked again at 7, reaches 8 and stops: go score 9, 광박 on B.",
            STANDARD, make_deal(STANDARD, *REGO), [*cards(0, 40, 28, 24, 13), Go(), *cards(10, 38, 2, 21), Stop()]),
        # -------------------------------------------------- last actions and the end of a round
        tail_scenario(
            "standard-2p-last-action-sseul-auto-stop",
            "A whole round. B's own last action sweeps the floor: the 쓸 steals nothing (standard's last-turn "
            "exception) and B, at 11 for the first time with no turn left, stops automatically (Stopped "
            "automatic=true).",
            STANDARD, SSEUL_TAIL, SSEUL_SCRIPT),
        tail_scenario(
            "arcade-2p-last-go",
            "A whole arcade round: both seats go at 4 on the way; B's last action sweeps the floor (the 쓸 point "
            "counts on the last action) and B may still go: that go counts and ends the round as a stop "
            "(reason last_go, 2 gos).",
            ARCADE, SSEUL_TAIL, SSEUL_SCRIPT, [Go()]),
        tail_scenario(
            "simple-2p-last-action-jjok",
            "A whole simple round: A's own last action is a 쪽, which still steals in simple.",
            SIMPLE, JJOK_TAIL, JJOK_SCRIPT),
        tail_scenario(
            "classic-2p-last-action-ppeok-captured",
            "A whole classic round: A's own last action would be a 뻑; classic captures the three cards instead "
            "(no PpeokFormed), and B's last 3월 card then finds nothing.",
            CLASSIC, PPEOK_TAIL, PPEOK_SCRIPT),
        tail_scenario(
            "house-2p-last-action-ttadak",
            "A whole 2-player house round: B's own last action is a 따닥 and a 쓸; house voids both steals.",
            HOUSE2, TTADAK_TAIL, TTADAK_SCRIPT, parked=2),
        tail_scenario(
            "standard-2p-nagari-then-carry",
            "A match of two rounds. In the first, B goes at 11 and never scores more and A never reaches 7: "
            "나가리 (cards_exhausted), carry_next set; B's last flip takes 국진 and it is kept first. A "
            "start_next_round step (StartNextRound) deals round 2 from the match seed with the 선 kept and the "
            "carry on; it is played out and its winner collects ×2 (nagari_carry).",
            STANDARD, NAGARI_TAIL, NAGARI_SCRIPT, [KeepGukjin(), NextRound(B)], cycle=CYCLE_NAGARI,
            reserved=RESERVED_NAGARI, rounds=2),
        tail_scenario(
            "arcade-2p-best-score",
            "A whole arcade round where the cards run out with both seats at 3 or more: the higher go score "
            "wins (best_score): A with 10 and 3 gos, 고박 on B; B keeps 국진 once, at capture.",
            ARCADE, BEST_TAIL, BEST_SCRIPT, [KeepGukjin()], cycle=CYCLE_NAGARI, reserved=RESERVED_NAGARI),
        # ----------------------------------------------------------------------- 박
        scenario(
            "standard-3p-pibak-gwangbak",
            "3 players: A stops with 3 광 and 10 피; B (3 피, no 광) owes 피박 and 광박, C (no 피: exempt, holds a 광) "
            "owes neither.",
            STANDARD3,
            make_deal(STANDARD3, [[43, 6, 10], [18, 12], [44, 24]], [41, 3, 19, 45, 7, 21], [2, 40, 14, 42, 8, 30, 28]),
            [*cards(43, 18, 44, 6, 12, 24, 10), Stop()]),
        scenario(
            "standard-2p-meongbak",
            "멍박: A stops with seven 열끗 (고도리 included): the winner's meongbak factor doubles the bill.",
            STANDARD,
            make_deal(STANDARD, [[16, 24, 4, 29], [0, 40, 17]], [18, 22, 26, 38, 6, 14, 30, 35],
                      [20, 8, 36, 44, 12, 21, 37]),
            [*cards(16, 0, 24, 40, 4, 17, 29), Stop()]),
        scenario(
            "standard-2p-gobak",
            "2-player 고박: B goes at 8, then A reaches 8 and stops; B's bill is doubled (gobak).",
            STANDARD,
            make_deal(STANDARD, [[21, 33, 13, 17, 25], [4, 1, 29, 12]], [22, 5, 34, 2, 38, 10, 15, 31],
                      [45, 42, 37, 9, 18, 14, 26, 20, 36]),
            [*cards(21, 4, 33, 1, 13, 29, 17, 12), Go(), PlayCard(25), Stop()]),
        scenario(
            "standard-3p-gobak-transfer",
            "3-player 고박: B goes, then C goes; A stops with 3 광: C, the most recent goer, pays both bills "
            "(pays 9, covers B and C) and B pays 0.",
            STANDARD3,
            make_deal(STANDARD3, [[8, 28, 40], [1, 9], [13, 17]], [11, 0, 6, 14, 30, 36], [18, 5, 10, 26, 41, 25, 20]),
            [*cards(8, 1, 13, 28, 9), Go(), PlayCard(17), Go(), PlayCard(40), Stop()]),
        # ------------------------------------------------------------ 4 players
        scenario(
            "classic-4p-sit-out",
            "4 players: the seat after the 선 sits out (SitOut, action id 241; SatOut forced=false); A's 첫뻑 is "
            "then paid by the two playing seats at the 3-player rate.",
            CLASSIC4, make_deal(CLASSIC4, [[0]], FOUR_FLOOR, [2]), [SitOut(), PlayCard(0)]),
        scenario(
            "classic-4p-gwang-sale",
            "4 players: B and C join (JoinRound 240), D is forced out (SatOut forced=true) and sells its 광, "
            "쌍피 and bonus 쌍피 (SellGwang 251: 3 points from each playing seat); B's hand bonus card is "
            "resolved only after the sit-out.",
            CLASSIC4, make_deal(CLASSIC4, [[], [49], [], [0, 43, 48]], FOUR_FLOOR, [45]),
            [JoinRound(), JoinRound(), SellGwang()]),
        scenario(
            "classic-4p-chongtong-after-sit-out",
            "4 players: B holds three 1월 and a bonus card; after C sits out the bonus is replaced by the fourth "
            "1월: 총통, paid by the two other playing seats only.",
            CLASSIC4, make_deal(CLASSIC4, [[], [0, 1, 2, 48]], [*FOUR_FLOOR[1:], 25], [3]), [JoinRound(), SitOut()]),
        # ------------------------------------------------------------ the turn clock
        scenario(
            "standard-2p-clock-auto-play",
            "A turn clock (CreateGame clock: ten minutes a decision, a 30 s bank; the view fills in the "
            "defaults: greedy, away after 2, a 1 s pause). B turns auto-play on and off while A is to move "
            "(SetAutoPlay: a step of the table alone, one AutoPlaySet event, no action); A plays, and turns "
            "auto-play on while B is to move. The round goes on: the spectator's view shows the clock running "
            "for B, both banks full, and A on auto-play.",
            STANDARD, make_deal(STANDARD, [[6, 0], [13, 3]], [1, 7, 12, 16, 20, 24, 28, 36], [8, 40, 2, 44]),
            [*cards(6, 13), AutoPlay(B, True), AutoPlay(B, False), PlayCard(0), AutoPlay(A, True)],
            finish=False, clock={"decisionMs": 600_000, "bankMs": 30_000}),
        scenario(
            "standard-2p-clock-refusals",
            "What the clock refuses: SetAutoPlay on a game without a clock (FAILED_PRECONDITION NO_CLOCK), and "
            "CreateGame with clock settings out of range (INVALID_ARGUMENT BAD_CLOCK, the field in the "
            "metadata): a decision time under 1 s, away after more than 100 timeouts, a pause over 10 s, a "
            "remote bot as the policy. The game itself is the 쪽 round.",
            STANDARD, make_deal(STANDARD, [[4, 20], [14]], [1, 15, 17, 24, 28, 36, 40, 44], [8, 33, 21]),
            cards(4, 14, 20),
            refusals=(
                Refusal("FAILED_PRECONDITION", "NO_CLOCK", auto_play=AutoPlay(B, True)),
                *(Refusal("INVALID_ARGUMENT", "BAD_CLOCK", metadata={"field": f"clock.{name}"},
                          create={"preset": "standard", "clock": {"decisionMs": 1000, **bad}})
                  for name, bad in (("decision_ms", {"decisionMs": 999}), ("away_after", {"awayAfter": 101}),
                                    ("auto_pause_ms", {"autoPauseMs": 10_001}), ("policy", {"policy": "remote:x"}))),
            )),
        # ------------------------------------------------------------ seeded games
        scenario(
            "standard-2p-seeded",
            "No explicit deal: the seed (2026) shuffles the deck and draws the 선; the round is played out with "
            "the lowest legal action id (Stop at every go/stop decision).",
            STANDARD, None, seed=2026),
    ]
    names = [s.name for s in out]
    assert len(names) == len(set(names)), "scenario names must be unique"
    return sorted(out, key=lambda s: s.name)


# ------------------------------------------------------------------------ rendering


def to_json(msg: Message) -> JsonObject:
    """proto3 JSON (lowerCamelCase names, defaults omitted, 64-bit integers as strings)."""
    return json_format.MessageToDict(msg, preserving_proto_field_name=False)


def create_request(s: Scenario) -> pb.CreateGameRequest:
    req = pb.CreateGameRequest(preset=s.preset, players=s.players, seed=s.seed)
    if s.clock is not None:
        json_format.ParseDict(s.clock, req.clock)
    if s.rounds is not None:
        req.rounds = s.rounds
    if s.overrides:
        req.overrides.CopyFrom(pb.Rules(**s.overrides))
    if s.deal is not None:
        req.deal.CopyFrom(pb.Deal(hands=[pb.Hand(cards=h) for h in s.deal.hands], floor=s.deal.floor,
                                  stock=s.deal.stock, dealer=s.deal.dealer))
    return req


def start(req: pb.CreateGameRequest) -> tuple[Match, list[Event]]:
    """The match the server creates for ``req`` (as ``service.games.Games.create`` builds it)."""
    overrides = convert.overrides_from_pb(req.overrides) if req.HasField("overrides") else {}
    overrides.pop("name", None)
    players = req.players or overrides.pop("players", None)
    overrides.pop("players", None)
    rules = Rules.preset(req.preset, players=players, **overrides)
    deal = convert.deal_from_pb(req.deal) if req.HasField("deal") else None
    return new_match(rules, req.seed, req.rounds if req.HasField("rounds") else 1, deal=deal)


def next_step(match: Match, todo: list[Step], finish: bool) -> Step | None:
    """The next step to take: the script's, an automatic answer, the finishing policy's, or None."""
    state = match.round
    nxt = todo[0] if todo else None
    if isinstance(nxt, AutoPlay):
        return todo.pop(0)
    if state.over:
        return todo.pop(0) if isinstance(nxt, NextRound) else None
    if nxt is not None:
        if state.phase is Phase.GO_STOP and not isinstance(nxt, (Go, Stop)):
            return Go()
        if state.phase is Phase.GUKJIN and not isinstance(nxt, (KeepGukjin, ConvertGukjin)):
            return KeepGukjin()
        return todo.pop(0)
    if not finish:
        return None
    if state.phase is Phase.GO_STOP:
        return Stop()
    return min(legal_actions(state), key=action_id)


# ------------------------------------------------------------------------ the clock
# The runs are short and the decision time long, so no decision runs over: every bank stays full,
# nobody times out or goes away, and the table's bot never moves. What the clock's part of a view
# says is then the settings (defaults filled), the seat it runs for, each seat's full bank and its
# auto-play flag. The times (started_ms, bank_from_ms, deadline_ms) are the server's: runners check
# how they relate and compare the rest.

DEFAULT_CLOCK: Final[JsonObject] = {"policy": "greedy", "awayAfter": 2, "autoPauseMs": 1000}


@dataclass(frozen=True)
class TableModel:
    """A clocked table as a scenario leaves it: its settings (defaults filled) and auto-play flags."""

    settings: pb.ClockSettings
    auto: tuple[bool, ...]

    @classmethod
    def new(cls, req: pb.CreateGameRequest, players: int) -> TableModel | None:
        if not req.HasField("clock"):
            return None
        settings = pb.ClockSettings()
        json_format.ParseDict({**DEFAULT_CLOCK, **{k: v for k, v in to_json(req.clock).items() if v}}, settings)
        if req.clock.HasField("auto_pause_ms"):
            settings.auto_pause_ms = req.clock.auto_pause_ms
        return cls(settings, (False,) * players)

    def with_auto_play(self, seat: int, on: bool) -> TableModel:
        assert self.auto[seat] != on, f"seat {seat}'s auto-play is already {on}: SetAutoPlay would change nothing"
        return TableModel(self.settings, tuple(on if n == seat else a for n, a in enumerate(self.auto)))

    def clock_seat(self, match: Match) -> int:
        """The seat the clock runs for (no bot seats in the scenarios: the first seat deals a next round)."""
        if match.finished:
            return -1
        return 0 if match.round.over else match.round.to_move

    def check_still(self, match: Match, name: str) -> None:
        """No seat on auto-play owes the decision: the table's bot would make it during the run."""
        seat = self.clock_seat(match)
        assert seat < 0 or not self.auto[seat], f"{name}: seat {seat} decides while on auto-play"

    def fill(self, match: Match, out: pb.GameView) -> None:
        out.clock.settings.CopyFrom(self.settings)
        out.clock.seat = self.clock_seat(match)
        for seat_view in out.seats:
            seat_view.bank_ms = self.settings.bank_ms
            seat_view.auto_play = self.auto[seat_view.seat]


def spectator_view(match: Match, version: int, table: TableModel | None = None) -> JsonObject:
    """The spectator's GameView as proto3 JSON: every top-level field but ``gameId`` and ``rules``,
    fields at their default value included (0, false, "", [] or null)."""
    msg = convert.view_to_pb(view(match.round), match, "", version)
    if table is not None:
        table.fill(match, msg)
    full = to_json(msg)
    out: JsonObject = {}
    for fd in msg.DESCRIPTOR.fields:
        if fd.name in ("game_id", "rules"):
            continue
        if fd.json_name in full:
            out[fd.json_name] = full[fd.json_name]
        elif fd.is_repeated:
            out[fd.json_name] = []
        elif fd.message_type is not None:
            out[fd.json_name] = None
        elif fd.enum_type is not None:
            out[fd.json_name] = fd.enum_type.values_by_number[0].name
        elif fd.type == fd.TYPE_BOOL:
            out[fd.json_name] = False
        elif fd.type == fd.TYPE_STRING:
            out[fd.json_name] = ""
        else:
            out[fd.json_name] = 0
    return out


def build(s: Scenario) -> JsonObject:
    """Play ``s`` through the engine and return its scenario document."""
    req = create_request(s)
    match, events = start(req)
    log: list[JsonObject] = [{"version": 1, "kind": "create", "seat": -1, "actionId": None, "action": None,
                              "events": [to_json(convert.event_to_pb(e)) for e in events]}]
    last_events = events
    steps: list[JsonObject] = []
    todo = list(s.script)
    version = 1
    table = TableModel.new(req, match.rules.players)
    while (step := next_step(match, todo, s.finish)) is not None:
        version += 1
        if isinstance(step, AutoPlay):
            assert table is not None and not match.finished, f"{s.name}: auto-play needs a clock and a match on"
            table = table.with_auto_play(step.seat, step.on)
            table.check_still(match, s.name)
            steps.append({"seat": step.seat, "set_auto_play": step.on})
            log.append({"version": version, "kind": "table", "seat": step.seat, "actionId": None, "action": None,
                        "events": [to_json(pb.Event(auto_play_set=pb.AutoPlaySet(seat=step.seat, on=step.on)))]})
            continue
        if isinstance(step, NextRound):
            match, last_events = next_round(match)
            steps.append({"seat": step.seat, "start_next_round": True})
            log.append({"version": version, "kind": "next_round", "seat": step.seat, "actionId": None,
                        "action": None, "events": [to_json(convert.event_to_pb(e)) for e in last_events]})
            continue
        seat = match.round.to_move
        match, last_events = match_apply(match, step, seat)
        steps.append({"seat": seat, "action_id": action_id(step)})
        log.append({"version": version, "kind": "action", "seat": seat, "actionId": action_id(step),
                    "action": to_json(convert.action_to_pb(step)),
                    "events": [to_json(convert.event_to_pb(e)) for e in last_events]})
        if table is not None:
            table.check_still(match, s.name)
    assert not todo, f"{s.name}: the round ended with {todo} left to play"
    settled = [e.settlement for e in last_events if isinstance(e, RoundSettled)]
    assert bool(settled) == match.round.over
    doc: JsonObject = {
        "format": FORMAT,
        "name": s.name,
        "description": s.description,
        "create": to_json(req),
        "steps": steps,
        "expect": {
            "final_version": version,
            "log": log,
            "settlement": to_json(convert.settlement_to_pb(settled[-1])) if settled else None,
            "final_view_spectator": spectator_view(match, version, table),
        },
    }
    if s.refusals:
        doc["refusals"] = [refusal_doc(r) for r in s.refusals]
    return doc


def refusal_doc(r: Refusal) -> JsonObject:
    """A refusal as the file holds it: the call (``create``, or a seat's step) and its ``error``."""
    error: JsonObject = {"code": r.code, "reason": r.reason}
    if r.metadata:
        error["metadata"] = r.metadata
    if r.create is not None:
        return {"create": r.create, "error": error}
    assert r.auto_play is not None
    return {"seat": r.auto_play.seat, "set_auto_play": r.auto_play.on, "error": error}


def render(doc: JsonObject) -> str:
    """The stable text of a scenario file: indent 1, sorted keys, UTF-8, a final newline."""
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def render_all() -> dict[str, str]:
    """File name → exact text, for every scenario."""
    return {f"{s.name}.json": render(build(s)) for s in scenarios()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=SCENARIO_DIR, help="directory of the scenario files")
    parser.add_argument("--check", action="store_true", help="only report files that differ; exit 1 if any")
    args = parser.parse_args(argv)
    out: Path = args.out
    files = render_all()
    stale = sorted(p.name for p in out.glob("*.json") if p.name not in files) if out.is_dir() else []
    changed = sorted(n for n, text in files.items()
                     if not (out / n).is_file() or (out / n).read_text(encoding="utf-8") != text)
    if args.check:
        for name in changed + stale:
            print(f"out of date: {out / name}")
        return 1 if changed or stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name in changed:
        (out / name).write_text(files[name], encoding="utf-8")
    for name in stale:
        (out / name).unlink()
    print(f"{len(files)} scenarios in {out}: {len(changed)} written, {len(stale)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
