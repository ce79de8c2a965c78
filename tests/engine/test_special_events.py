"""Scripted rounds for every special event and instant outcome of every preset.

Each test deals an explicit ``Deal`` (hands, floor and the stock order chosen by the test), plays a
script of actions and checks the events and the resulting state against the product spec
(``rulesets.md``). Seat 0 is "A", seat 1 "B", seat 2 "C". Card ids are the spec's canonical ids:
``(month - 1) * 4 + slot``; 48 and 49 are the bonus 쌍피, 50 the bonus 쓰리피.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pytest

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    Deal,
    DeclineGwangSale,
    Event,
    FlipOnly,
    Go,
    JoinRound,
    KeepGukjin,
    Phase,
    PlayCard,
    Rules,
    SellGwang,
    SitOut,
    State,
    Stop,
    apply,
    legal_actions,
    new_round,
    seat_score,
)
from gostop.engine.cards import MONTH, is_bonus
from gostop.engine.events import (
    Bombed,
    BonusCaptured,
    Captured,
    CardFlipped,
    CardLaid,
    CardPlayed,
    Dealt,
    FlipOnlyUsed,
    GukjinDecided,
    GwangSold,
    InstantLoss,
    InstantPaid,
    InstantWin,
    Jjok,
    JoinedRound,
    Nagari,
    PiStolen,
    PpeokFormed,
    PpeokRecaptured,
    Redealt,
    RoundSettled,
    SatOut,
    Shaken,
    Sseul,
    Stopped,
    Ttadak,
    WentGo,
)
from gostop.engine.settlement import Factor, Payment, Settlement, shake_bomb_count
from gostop.engine.state import NO_STACK, START_STACK
from gostop.engine.testing import scripted_deal

E = TypeVar("E")
A, B, C, D = 0, 1, 2, 3

# ----------------------------------------------------------------------------- helpers


make_deal = scripted_deal


def start(rules: Rules, deal: Deal, seed: int = 1, carry: bool = False) -> tuple[State, list[Event]]:
    return new_round(rules, seed, deal=deal, carry=carry)


def play(state: State, *actions: Action) -> tuple[State, list[Event]]:
    """Apply the actions in order (each must be legal); return the last state and all events."""
    events: list[Event] = []
    for action in actions:
        state, new = apply(state, action)
        events.extend(new)
    return state, events


def of(events: Sequence[Event], kind: type[E]) -> list[E]:
    """The events of one type, in order."""
    return [e for e in events if isinstance(e, kind)]


def settled(state: State) -> Settlement:
    assert state.over and state.settlement is not None
    return state.settlement


def factors(items: Sequence[Factor]) -> dict[str, int]:
    return {f.name: f.value for f in items}


STANDARD = Rules.preset("standard")
STANDARD3 = Rules.preset("standard", players=3)
SIMPLE = Rules.preset("simple")
CLASSIC = Rules.preset("classic")
CLASSIC3 = Rules.preset("classic", players=3)
CLASSIC4 = Rules.preset("classic", players=4)
HOUSE = Rules.preset("house")
HOUSE2 = Rules.preset("house", players=2)
ARCADE = Rules.preset("arcade")


# ------------------------------------------------------------------------ 뻑 and stacks


def test_ppeok_formed_leaves_three_cards_stacked_and_marked() -> None:
    # Floor: 1월 띠 alone in month 1. A plays 1월 광 onto it and flips 1월 피: 뻑.
    deal = make_deal(STANDARD, [[0]], [1, 4, 12, 16, 20, 24, 28, 36], [2])
    state, _ = start(STANDARD, deal)
    state, events = play(state, PlayCard(0))
    assert of(events, PpeokFormed) == [PpeokFormed(A, 1, (0, 1, 2), 1)]
    assert of(events, Captured) == []
    assert {0, 1, 2} <= set(state.floor)
    assert state.stacks[1] == A
    assert state.seats[A].captured == ()
    assert state.seats[A].ppeok_turns == (1,)
    assert (state.phase, state.to_move) == (Phase.PLAY, B)


def test_ppeok_recaptured_by_another_seat_steals_one_pi() -> None:
    deal = make_deal(STANDARD, [[6, 0], [13, 3]], [1, 7, 12, 16, 20, 24, 28, 36], [8, 40, 2, 44])
    state, _ = start(STANDARD, deal)
    state, _ = play(state, PlayCard(6), PlayCard(13))  # A takes 2월 피 ×2, B takes 4월 cards
    state, events = play(state, PlayCard(0))  # A: 뻑 of month 1
    assert of(events, PpeokFormed) == [PpeokFormed(A, 1, (0, 1, 2), 1)]
    state, events = play(state, PlayCard(3))  # B takes the stack with the 4th card
    assert of(events, PpeokRecaptured) == [PpeokRecaptured(B, 1, A, False)]
    assert Captured(B, (3, 0, 1, 2)) in events
    assert of(events, PiStolen) == [PiStolen(B, A, (6,), 1, ("ppeok",))]
    assert state.stacks[1] == NO_STACK
    assert 6 in state.seats[B].captured and 6 not in state.seats[A].captured


def test_own_ppeok_recaptured_jappeok_steals_two_pi() -> None:
    deal = make_deal(STANDARD, [[0, 3], [14]], [1, 15, 17, 20, 24, 28, 36, 44], [2, 8, 40])
    state, _ = start(STANDARD, deal)
    state, _ = play(state, PlayCard(0), PlayCard(14))  # A: 뻑; B takes 4월 피 ×2
    state, events = play(state, PlayCard(3))  # A takes its own stack: 자뻑
    assert of(events, PpeokRecaptured) == [PpeokRecaptured(A, 1, A, True)]
    assert of(events, PiStolen) == [PiStolen(A, B, (14, 15), 2, ("jappeok", "jappeok"))]
    assert state.seats[B].captured == ()


def test_starting_floor_triple_taken_with_fourth_card_gives_no_reward() -> None:
    deal = make_deal(STANDARD, [[6], [3]], [0, 1, 2, 7, 12, 16, 20, 24], [8, 40])
    state, _ = start(STANDARD, deal)
    assert state.stacks[1] == START_STACK
    state, _ = play(state, PlayCard(6))  # A takes 2월 피 ×2
    state, events = play(state, PlayCard(3))
    assert Captured(B, (3, 0, 1, 2)) in events
    assert of(events, PpeokRecaptured) == []
    assert of(events, PiStolen) == []
    assert state.seats[A].captured == (6, 7)
    assert state.stacks[1] == NO_STACK


# --------------------------------------------------------------------------- 쪽, 따닥, 쓸


def test_jjok_captures_both_and_steals_one_pi() -> None:
    deal = make_deal(STANDARD, [[4, 20], [14]], [1, 15, 17, 24, 28, 36, 40, 44], [8, 33, 21])
    state, _ = start(STANDARD, deal)
    state, _ = play(state, PlayCard(4), PlayCard(14))  # A lays two cards; B takes 4월 피 ×2
    state, events = play(state, PlayCard(20))  # no 6월 on the floor; the flip is 6월 청단
    assert of(events, Jjok) == [Jjok(A, 6, True)]
    assert Captured(A, (21, 20)) in events
    assert of(events, PiStolen) == [PiStolen(A, B, (14,), 1, ("jjok",))]


def test_ttadak_captures_four_and_steals_one_pi() -> None:
    deal = make_deal(STANDARD, [[4, 22], [14]], [20, 21, 15, 17, 24, 28, 36, 40], [8, 33, 23])
    state, _ = start(STANDARD, deal)
    state, _ = play(state, PlayCard(4), PlayCard(14))
    state, events = play(state, PlayCard(22))
    assert state.phase is Phase.CHOOSE_HAND
    assert legal_actions(state) == [ChooseCapture(20), ChooseCapture(21)]
    state, events = play(state, ChooseCapture(21))
    assert of(events, Ttadak) == [Ttadak(A, 6, True)]
    assert Captured(A, (22, 21, 20, 23)) in events
    assert of(events, PiStolen) == [PiStolen(A, B, (14,), 1, ("ttadak",))]
    assert not any(MONTH[c] == 6 for c in state.floor)


SSEUL_FLOOR = [2, 6, 10, 14, 18, 22, 26, 30]
"""The 피 of months 1-8, one each: four turns of two captures empty it."""


def _sseul_round(rules: Rules) -> tuple[State, list[Event]]:
    deal = make_deal(rules, [[3, 19], [11, 27]], SSEUL_FLOOR, [7, 15, 23, 31])
    state, _ = start(rules, deal)
    state, _ = play(state, PlayCard(3), PlayCard(11), PlayCard(19))
    assert len(state.floor) == 2
    return play(state, PlayCard(27))


def test_sseul_steals_one_pi() -> None:
    state, events = _sseul_round(STANDARD)
    assert state.floor == ()
    assert of(events, Sseul) == [Sseul(B, True, 0)]
    assert of(events, PiStolen) == [PiStolen(B, A, (2,), 1, ("sseul",))]


def test_arcade_sseul_adds_one_point_and_steals_nothing() -> None:
    state, events = _sseul_round(ARCADE)
    assert of(events, Sseul) == [Sseul(B, False, 1)]
    assert of(events, PiStolen) == []
    assert state.seats[B].sseul == 1
    score = seat_score(state, B)
    assert (score.sseul, score.total) == (1, 1)
    assert seat_score(state, A).pi_value == 8


def test_steal_order_plain_then_ssangpi_then_converted_gukjin_then_sseuripi() -> None:
    # B (the 선) holds the bonus 쓰리피 from the deal, then takes 국진 with a 9월 피 and the 12월
    # 쌍피 with the 비띠, converting 국진. A then makes five 쪽 in a row.
    deal = make_deal(
        STANDARD,
        [[8, 12, 16, 10, 14], [32, 50, 44, 28, 36, 25]],
        [34, 46, 0, 1, 2, 4, 5, 6],
        [45, 47, 9, 40, 13, 24, 17, 20, 11, 21, 15],
        dealer=B,
    )
    state, events = start(STANDARD, deal)
    assert of(events, BonusCaptured) == [BonusCaptured(B, 50, "hand", 45)]
    state, events = play(state, PlayCard(32))
    assert state.phase is Phase.GUKJIN and state.to_move == B
    state, events = play(state, ConvertGukjin())
    assert of(events, GukjinDecided) == [GukjinDecided(B, True, True)]
    assert sorted(state.seats[B].captured) == [32, 34, 46, 47, 50]
    taken: list[tuple[int, ...]] = []
    for mine, theirs in ((8, 44), (12, 28), (16, 36), (10, 25), (14, None)):
        state, events = play(state, PlayCard(mine))
        (jjok,) = of(events, Jjok)
        assert jjok.steals
        (stolen,) = of(events, PiStolen)
        assert stolen.requested == 1
        taken.append(stolen.cards)
        if theirs is not None:
            state, _ = play(state, PlayCard(theirs))
    assert taken == [(34,), (47,), (32,), (50,), ()]
    assert sorted(state.seats[B].captured) == [20, 21, 24, 25, 46]
    assert seat_score(state, A).pi_value == 5 + 2 + 2 + 3


# ------------------------------------------------------------------ whole 2-player rounds
#
# Last-action rules need whole rounds (20 turns). ``cycle_round`` builds them from a quiet
# pattern over eleven months: on turn t the player to move plays the partner of the oldest
# floor card (capturing it) and flips a card of a month absent from the floor (laying it). A
# month's first pair goes to one seat and its second pair to the other (eleven is odd). The
# twelfth month ("reserved", R1-R4) and the last turns are scripted by each test: its tail.

Quad = tuple[int, int, int, int]

CYCLE: tuple[Quad, ...] = (
    (6, 5, 4, 7), (22, 21, 23, 20), (36, 37, 39, 38), (25, 24, 27, 26), (34, 33, 32, 35),
    (44, 47, 46, 45), (12, 13, 14, 15), (1, 0, 3, 2), (31, 28, 30, 29), (18, 19, 16, 17),
    (42, 41, 43, 40),
)
"""Per month in cycle order: (a, b, c, d) = first floor card, its captor, second floor card, its
captor."""
RESERVED: Quad = (10, 11, 8, 9)
"""Month 3, kept out of the cycle for the tails."""

CYCLE_NAGARI: tuple[Quad, ...] = (
    (40, 42, 41, 43), (7, 4, 5, 6), (30, 29, 31, 28), (8, 10, 11, 9), (19, 16, 17, 18),
    (13, 15, 14, 12), (44, 45, 46, 47), (22, 23, 21, 20), (3, 1, 0, 2), (39, 38, 37, 36),
    (34, 35, 33, 32),
)
RESERVED_NAGARI: Quad = (26, 27, 25, 24)
"""A second arrangement of the pattern (month 7 reserved): with the "sseul" tail B goes at 11 on
its 9th turn and scores no more, A stays below 7."""


def cycle_round(
    rules: Rules,
    tail_a: Sequence[int],
    tail_b: Sequence[int],
    tail_flips: Sequence[int],
    *,
    parked: int = 0,
    cycle: Sequence[Quad] = CYCLE,
    reserved: Quad = RESERVED,
) -> tuple[Deal, list[Action]]:
    """A deal for seats A (the 선) and B, and the plays of the quiet part (14 + ``parked`` turns).

    ``parked`` reserved cards lie on the starting floor next to the first ``8 - parked`` cycle
    months. The hands end with ``tail_a`` / ``tail_b`` and the stock with ``tail_flips``.
    """
    f = rules.floor_size - parked
    floor = [q[0] for q in cycle[:f]] + list(reserved[:parked])
    plays, flips = _cycle_turns(cycle, f)
    hands = [plays[0::2] + list(tail_a), plays[1::2] + list(tail_b)]
    return make_deal(rules, hands, floor, flips + list(tail_flips)), [PlayCard(c) for c in plays]


def _cycle_turns(cycle: Sequence[Quad], f: int) -> tuple[list[int], list[int]]:
    """Played and flipped cards of the quiet turns, with ``f`` cycle months on the floor."""
    plays: list[int] = []
    flips: list[int] = []
    for t in range(1, 23 - f):
        plays.append(cycle[(t - 1) % 11][1 if t <= 11 else 3])
        flips.append(cycle[(t + f - 1) % 11][0 if t <= 11 - f else 2])
    return plays, flips


def d(k: int, cycle: Sequence[Quad] = CYCLE) -> int:
    """The second captor of the k-th cycle month (0-based)."""
    return cycle[k][3]


R1, R2, R3, R4 = RESERVED


def drive(state: State, actions: Sequence[Action]) -> tuple[State, list[Event]]:
    """Apply ``actions``; a pending go/stop or 국진 decision that the script does not answer is
    answered with Go or KeepGukjin while scripted actions remain (tests check the WentGo events)."""
    events: list[Event] = []
    todo = list(actions)
    while todo and not state.over:
        nxt = todo[0]
        if state.phase is Phase.GO_STOP and not isinstance(nxt, (Go, Stop)):
            action: Action = Go()
        elif state.phase is Phase.GUKJIN and not isinstance(nxt, (KeepGukjin, ConvertGukjin)):
            action = KeepGukjin()
        else:
            action = todo.pop(0)
        state, new = apply(state, action)
        events.extend(new)
    assert not todo, f"the round ended with {todo} left to play"
    return state, events


def turn_of(events: Sequence[Event], card: int) -> list[Event]:
    """The events of the turn that played ``card`` (up to the next play)."""
    starts = [i for i, e in enumerate(events) if isinstance(e, CardPlayed)]
    for n, i in enumerate(starts):
        played = events[i]
        assert isinstance(played, CardPlayed)
        if played.card == card:
            end = starts[n + 1] if n + 1 < len(starts) else len(events)
            return list(events[i:end])
    raise AssertionError(f"card {card} was not played")


# Tail "sseul": the last two reserved cards are captured by B's last flip, emptying the floor.
SSEUL_TAIL = ([d(3), d(7), d(9)], [d(5), R2, d(10)], [d(4), d(6), R1, d(8), R3, R4])
SSEUL_SCRIPT: list[Action] = [PlayCard(c) for c in (d(3), d(5), d(7), R2, d(9), d(10))]
# Tail "jjok": A's last play finds no month 3 on the floor and the flip matches it.
JJOK_TAIL = ([d(3), d(6), R3], [d(5), R2, d(9)], [d(4), R1, d(7), d(8), R4, d(10)])
JJOK_SCRIPT: list[Action] = [PlayCard(c) for c in (d(3), d(5), d(6), R2, R3, d(9))]
# Tail "ppeok": A's last play takes the single R1 and the flip is R3.
PPEOK_TAIL = ([d(3), d(7), R2], [d(5), d(8), R4], [d(4), d(6), R1, d(9), R3, d(10)])
PPEOK_SCRIPT: list[Action] = [PlayCard(c) for c in (d(3), d(5), d(7), d(8), R2, R4)]
# Tail "ttadak" (R1, R2 parked on the floor): B's last play and flip take them: 따닥 and 쓸.
TTADAK_TAIL = ([d(5), d(9)], [d(7), R3], [d(6), d(8), d(10), R4])
TTADAK_SCRIPT: list[Action] = [*(PlayCard(c) for c in (d(5), d(7), d(9), R3)), ChooseCapture(R1)]


def _tail_round(
    rules: Rules, tail: tuple[list[int], list[int], list[int]], script: Sequence[Action], parked: int = 0
) -> tuple[State, list[Event]]:
    deal, steady = cycle_round(rules, *tail, parked=parked)
    state, _ = start(rules, deal)
    return drive(state, steady + list(script))


def _last_action(state: State, seat: int) -> None:
    assert state.seats[seat].hand == () and state.seats[seat].spare_flips == 0


@pytest.mark.parametrize("rules", [STANDARD, SIMPLE, CLASSIC, HOUSE2], ids=lambda r: r.name)
def test_last_action_sseul_steals_nothing(rules: Rules) -> None:
    state, events = _tail_round(rules, SSEUL_TAIL, SSEUL_SCRIPT)
    _last_action(state, B)
    last = turn_of(events, d(10))
    assert of(last, Sseul) == [Sseul(B, False, 0)]
    assert of(last, PiStolen) == []
    assert state.floor == ()
    # B reaches 7 for the first time on its own last action: it stops automatically.
    assert of(events, WentGo) == []
    assert of(last, Stopped) == [Stopped(B, 11, True)]
    assert settled(state).winner == B


def test_arcade_last_action_sseul_still_scores_its_point() -> None:
    state, events = _tail_round(ARCADE, SSEUL_TAIL, SSEUL_SCRIPT)
    _last_action(state, B)
    last = turn_of(events, d(10))
    assert of(last, Sseul) == [Sseul(B, False, 1)]
    assert state.seats[B].sseul == 1
    assert seat_score(state, B).sseul == 1


@pytest.mark.parametrize(
    ("rules", "steals"),
    [(STANDARD, True), (SIMPLE, True), (ARCADE, True), (CLASSIC, False), (HOUSE2, False)],
    ids=["standard", "simple", "arcade", "classic", "house"],
)
def test_last_action_jjok(rules: Rules, steals: bool) -> None:
    _, events = _tail_round(rules, JJOK_TAIL, JJOK_SCRIPT)
    last = turn_of(events, R3)
    assert of(last, Jjok) == [Jjok(A, 3, steals)]
    assert Captured(A, (R4, R3)) in last
    stolen = of(last, PiStolen)
    if steals:
        assert [(p.seat, p.victim, len(p.cards), p.reasons) for p in stolen] == [(A, B, 1, ("jjok",))]
    else:
        assert stolen == []


@pytest.mark.parametrize(
    ("rules", "ttadak_steals", "sseul_point"),
    [(STANDARD, True, 0), (SIMPLE, True, 0), (CLASSIC, True, 0), (HOUSE2, False, 0), (ARCADE, True, 1)],
    ids=["standard", "simple", "classic", "house", "arcade"],
)
def test_last_action_ttadak(rules: Rules, ttadak_steals: bool, sseul_point: int) -> None:
    state, events = _tail_round(rules, TTADAK_TAIL, TTADAK_SCRIPT, parked=2)
    _last_action(state, B)
    last = turn_of(events, R3)
    assert of(last, Ttadak) == [Ttadak(B, 3, ttadak_steals)]
    assert Captured(B, (R3, R1, R2, R4)) in last
    assert of(last, Sseul) == [Sseul(B, False, sseul_point)]
    stolen = of(last, PiStolen)
    if ttadak_steals:
        assert [(p.victim, len(p.cards), p.reasons) for p in stolen] == [(A, 1, ("ttadak",))]
    else:
        assert stolen == []


def test_classic_last_action_would_be_ppeok_is_captured() -> None:
    state, events = _tail_round(CLASSIC, PPEOK_TAIL, PPEOK_SCRIPT)
    last = turn_of(events, R2)
    assert of(last, PpeokFormed) == []
    assert Captured(A, (R2, R1, R3)) in last
    assert state.seats[A].ppeok_turns == ()
    # B's last card of month 3 then finds nothing to take.
    assert CardLaid(B, R4) in turn_of(events, R4)


@pytest.mark.parametrize("rules", [STANDARD, SIMPLE, HOUSE2, ARCADE], ids=lambda r: r.name)
def test_last_action_ppeok_stays_a_ppeok_outside_classic(rules: Rules) -> None:
    _, events = _tail_round(rules, PPEOK_TAIL, PPEOK_SCRIPT)
    last = turn_of(events, R2)
    assert of(last, PpeokFormed) == [PpeokFormed(A, 3, (R2, R1, R3), 1)]
    recapture = turn_of(events, R4)
    assert of(recapture, PpeokRecaptured) == [PpeokRecaptured(B, 3, A, False)]
    assert [(p.victim, len(p.cards), p.reasons) for p in of(recapture, PiStolen)] == [(A, 1, ("ppeok",))]


# ------------------------------------------------------------- go / stop at the end of a round


def test_standard_reaching_the_threshold_on_own_last_action_stops_automatically() -> None:
    state, events = _tail_round(STANDARD, SSEUL_TAIL, SSEUL_SCRIPT)
    assert of(events, WentGo) == []
    assert of(events, Stopped) == [Stopped(B, 11, True)]
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.base, s.gos, s.go_score) == ("stop", "stop", B, 11, 0, 11)


def test_arcade_go_is_allowed_on_own_last_action_and_ends_the_round_as_a_stop() -> None:
    state, events = _tail_round(ARCADE, SSEUL_TAIL, SSEUL_SCRIPT)
    assert [(g.seat, g.count, g.base) for g in of(events, WentGo)] == [(B, 1, 4), (A, 1, 4)]
    # B's last card took it to 12 (쓸 point included): go or stop is still offered.
    assert (state.phase, state.to_move) == (Phase.GO_STOP, B)
    assert not state.has_turn_left(A) and not state.has_turn_left(B)
    assert legal_actions(state) == [Go(), Stop()]
    state, events = play(state, Go())
    assert of(events, WentGo) == [WentGo(B, 2, 12)]
    assert of(events, Stopped) == [Stopped(B, 12, True)]
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.gos, s.go_score) == ("stop", "last_go", B, 2, 14)


NAGARI_TAIL = (
    [d(3, CYCLE_NAGARI), d(7, CYCLE_NAGARI), d(9, CYCLE_NAGARI)],
    [d(5, CYCLE_NAGARI), RESERVED_NAGARI[1], d(10, CYCLE_NAGARI)],
    [d(4, CYCLE_NAGARI), d(6, CYCLE_NAGARI), RESERVED_NAGARI[0], d(8, CYCLE_NAGARI), *RESERVED_NAGARI[2:]],
)
NAGARI_SCRIPT: list[Action] = [
    PlayCard(c)
    for c in (
        d(3, CYCLE_NAGARI), d(5, CYCLE_NAGARI), d(7, CYCLE_NAGARI), RESERVED_NAGARI[1],
        d(9, CYCLE_NAGARI), d(10, CYCLE_NAGARI),
    )
]


def _nagari_round(rules: Rules) -> tuple[State, list[Event]]:
    deal, steady = cycle_round(rules, *NAGARI_TAIL, cycle=CYCLE_NAGARI, reserved=RESERVED_NAGARI)
    state, _ = start(rules, deal)
    state, events = drive(state, steady + NAGARI_SCRIPT)
    if rules.gukjin == "on_settlement":
        # B's last flip took 국진: it is asked to keep or convert before the round can end.
        assert (state.phase, state.to_move) == (Phase.GUKJIN, B)
        state, more = play(state, KeepGukjin())
        events += more
    return state, events


@pytest.mark.parametrize(("rules", "carry"), [(STANDARD, True), (SIMPLE, False)], ids=["standard", "simple"])
def test_nagari_when_nobody_stops(rules: Rules, carry: bool) -> None:
    # B goes at 11 on its 9th turn and never scores more; A never reaches 7.
    state, events = _nagari_round(rules)
    assert of(events, WentGo) == [WentGo(B, 1, 11)]
    assert seat_score(state, B).total == 11 and seat_score(state, A).total < 7
    assert of(events, Nagari) == [Nagari("cards_exhausted")]
    s = settled(state)
    assert (s.outcome, s.winner, s.bills, s.points) == ("nagari", -1, (), (0, 0))
    assert s.carry_next is carry


def test_arcade_best_score_wins_when_the_cards_run_out() -> None:
    tail = (
        [d(3, CYCLE_NAGARI), d(6, CYCLE_NAGARI), RESERVED_NAGARI[2]],
        [d(5, CYCLE_NAGARI), RESERVED_NAGARI[1], d(9, CYCLE_NAGARI)],
        [d(4, CYCLE_NAGARI), RESERVED_NAGARI[0], d(7, CYCLE_NAGARI), d(8, CYCLE_NAGARI),
         RESERVED_NAGARI[3], d(10, CYCLE_NAGARI)],
    )
    script: list[Action] = [
        PlayCard(c)
        for c in (
            d(3, CYCLE_NAGARI), d(5, CYCLE_NAGARI), d(6, CYCLE_NAGARI), RESERVED_NAGARI[1],
            RESERVED_NAGARI[2], d(9, CYCLE_NAGARI),
        )
    ]
    deal, steady = cycle_round(ARCADE, *tail, cycle=CYCLE_NAGARI, reserved=RESERVED_NAGARI)
    state, _ = start(ARCADE, deal)
    state, events = drive(state, steady + script)
    assert [(g.seat, g.count, g.base) for g in of(events, WentGo)] == [
        (A, 1, 3), (B, 1, 3), (A, 2, 7), (B, 2, 9), (A, 3, 10),
    ]
    # B's last flip took 국진: arcade asks at capture, once.
    assert (state.phase, state.to_move) == (Phase.GUKJIN, B)
    state, events = play(state, KeepGukjin())
    assert of(events, GukjinDecided) == [GukjinDecided(B, False, True)]
    # Both seats are at 3 or more (A 10 with 3 goes, B 9 with 2 goes, not above its last go).
    assert seat_score(state, B).total == 9
    assert of(events, Nagari) == [] and of(events, Stopped) == []
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.base, s.gos, s.go_score) == (
        "best_score", "cards_exhausted", A, 10, 3, (10 + 3) * 2,
    )
    (bill,) = s.bills
    assert factors(bill.factors) == {"gobak": 2}
    assert s.points == (52, -52)


# ------------------------------------------------------------------------ 흔들기 and 폭탄


def _shake_round(rules: Rules, a_shakes: bool, b_shakes: bool) -> tuple[State, list[Event]]:
    """3 players: A plays 6월 열끗 (holding three 6월), B plays 8월 광 (holding three 8월), C lays
    two cards, then A completes 홍단 (3 points) and stops."""
    deal = make_deal(
        rules, [[20, 21, 22, 4], [28, 29, 30], [40]], [1, 5, 9, 12, 16, 24], [0, 36, 44, 8]
    )
    state, _ = start(rules, deal)
    assert PlayCard(20, shake=True) in legal_actions(state)
    state, events = play(state, PlayCard(20, shake=a_shakes), PlayCard(28, shake=b_shakes), PlayCard(40))
    state, more = play(state, PlayCard(4))
    assert state.phase is Phase.GO_STOP and seat_score(state, A).total == 3
    state, last = play(state, Stop())
    return state, events + more + last


def test_shake_reveals_the_three_cards_and_doubles_the_winners_score() -> None:
    state, events = _shake_round(STANDARD3, a_shakes=True, b_shakes=False)
    assert of(events, Shaken) == [Shaken(A, 6, (20, 21, 22))]
    assert CardPlayed(A, 20, True) in events and CardLaid(A, 20) in events
    assert state.seats[A].revealed == (21, 22)
    assert state.seats[A].shakes == (6,)
    s = settled(state)
    assert factors(s.winner_factors) == {"shake_bomb": 2}
    assert [b.points for b in s.bills] == [6, 6]


@pytest.mark.parametrize(("when_losing", "owed"), [(False, 3), (True, 6)])
def test_shake_of_a_losing_seat_counts_only_with_the_override(when_losing: bool, owed: int) -> None:
    rules = Rules.preset("standard", players=3, shake_bomb_when_losing=when_losing)
    state, events = _shake_round(rules, a_shakes=False, b_shakes=True)
    assert of(events, Shaken) == [Shaken(B, 8, (28, 29, 30))]
    s = settled(state)
    assert s.winner == A and s.winner_factors == ()
    bills = {b.seat: b for b in s.bills}
    assert bills[B].points == owed and bills[C].points == 3
    assert factors(bills[B].factors) == ({"own_shake_bomb": 2} if when_losing else {})


@pytest.mark.parametrize("rules", [STANDARD3, CLASSIC3], ids=lambda r: r.name)
def test_shake_and_bomb_of_different_months_multiply(rules: Rules) -> None:
    # 3 players. A shakes 6월, later bombs 7월, and stops with 홍단 (3): ×2 × ×2.
    deal = make_deal(rules, [[20, 21, 22, 24, 25, 26, 4], [28, 29], [40, 41]], [1, 9, 5, 27, 12, 16],
                     [0, 36, 44, 8, 38, 46, 34])
    state, _ = start(rules, deal)
    state, events = play(state, PlayCard(20, shake=True), PlayCard(28), PlayCard(40), Bomb(7))
    assert of(events, Shaken) == [Shaken(A, 6, (20, 21, 22))]
    assert of(events, Bombed) == [Bombed(A, 7, (24, 25, 26), 2)]
    state, _ = play(state, PlayCard(29), PlayCard(41), PlayCard(4))
    assert seat_score(state, A).total == 3
    state, _ = play(state, Stop())
    s = settled(state)
    assert factors(s.winner_factors) == {"shake_bomb": 4}
    assert [b.points for b in s.bills] == [12, 12]


def test_shake_and_bomb_multipliers_per_month_or_per_declaration() -> None:
    # Shaking a month needs none of it on the floor, a 폭탄 needs one: the two cannot fall on the
    # same month in play, so the counting rule is checked on the seat's declarations directly.
    classic = Rules.preset("classic")
    assert shake_bomb_count(STANDARD, (6,), (6,)) == 1
    assert shake_bomb_count(classic, (6,), (6,)) == 2
    assert shake_bomb_count(STANDARD, (6,), (7,)) == 2
    assert shake_bomb_count(classic, (6,), (7,)) == 2
    assert shake_bomb_count(SIMPLE, (6,), (7,)) == 0


def test_simple_has_neither_shake_nor_bomb() -> None:
    # Three 6월 in hand: none on the floor (would be 흔들기), then one on the floor (would be 폭탄).
    for floor in ([1, 5, 9, 13, 17, 25, 29, 37], [23, 1, 5, 9, 13, 17, 25, 29]):
        state, _ = start(SIMPLE, make_deal(SIMPLE, [[20, 21, 22]], floor))
        actions = legal_actions(state)
        assert all(isinstance(a, PlayCard) and not a.shake for a in actions)
        assert len(actions) == 10


def test_bomb_captures_four_steals_and_grants_two_flip_only_turns() -> None:
    # B's bonus 쌍피 from the deal steals nothing; A's 폭탄 then takes it.
    deal = make_deal(
        STANDARD, [[24, 25, 26], [48, 40]], [27, 1, 5, 9, 13, 17, 21, 37], [45, 28, 44, 0]
    )
    state, events = start(STANDARD, deal)
    assert of(events, BonusCaptured) == [BonusCaptured(B, 48, "hand", 45)]
    assert of(events, PiStolen) == []
    assert Bomb(7) in legal_actions(state)
    state, events = play(state, Bomb(7))
    assert of(events, Bombed) == [Bombed(A, 7, (24, 25, 26), 2)]
    assert Captured(A, (24, 25, 26, 27)) in events
    assert CardLaid(A, 28) in events  # the flip of the 폭탄 turn
    assert of(events, PiStolen) == [PiStolen(A, B, (48,), 1, ("bomb",))]
    assert state.seats[A].spare_flips == 2 and state.seats[A].bombs == (7,)
    assert len(state.seats[A].hand) == 7
    state, _ = play(state, PlayCard(40))
    assert FlipOnly() in legal_actions(state)
    hand = state.seats[A].hand
    state, events = play(state, FlipOnly())
    assert of(events, FlipOnlyUsed) == [FlipOnlyUsed(A, 1)]
    assert of(events, CardPlayed) == []
    assert of(events, CardFlipped) == [CardFlipped(A, 0)]
    assert Captured(A, (0, 1)) in events
    assert state.seats[A].hand == hand
    assert (state.seats[A].spare_flips, state.seats[A].turns) == (1, 2)


def test_bomb_leaves_flip_only_turns_as_the_only_moves_once_the_hand_is_empty() -> None:
    # A bombs month 3 (R1 on the floor) on its first turn; the flip lays the 8th cycle month, after
    # which the quiet cycle runs with B moving first. A's hand runs out two turns early.
    plays, flips = _cycle_turns(CYCLE, 8)
    floor = [q[0] for q in CYCLE[:7]] + [R1]
    hands = [[R2, R3, R4, *plays[1::2]], [*plays[0::2], d(3), d(6), d(9)]]
    stock = [CYCLE[7][0], *flips, d(4), d(5), d(7), d(8), d(10)]
    state, _ = start(STANDARD, make_deal(STANDARD, hands, floor, stock))
    state, events = play(state, Bomb(3))
    assert of(events, Bombed) == [Bombed(A, 3, (8, 9, 11), 2)]
    assert Captured(A, (8, 9, 11, 10)) in events
    assert of(events, PiStolen) == [PiStolen(A, B, (), 1, ("bomb",))]  # B has no 피 yet
    state, _ = drive(state, [PlayCard(c) for c in plays] + [PlayCard(d(3))])
    assert (state.phase, state.to_move) == (Phase.GUKJIN, B)  # B's flip just took 국진
    state, _ = play(state, KeepGukjin())
    assert state.to_move == A and state.seats[A].hand == ()
    assert legal_actions(state) == [FlipOnly()]
    state, events = play(state, FlipOnly())
    assert of(events, FlipOnlyUsed) == [FlipOnlyUsed(A, 1)]
    state, _ = play(state, PlayCard(d(6)), KeepGukjin())
    assert legal_actions(state) == [FlipOnly()]
    state, events = play(state, FlipOnly())
    assert of(events, FlipOnlyUsed) == [FlipOnlyUsed(A, 0)]
    assert not state.has_turn_left(A)
    state, events = play(state, PlayCard(d(9)), KeepGukjin())
    assert of(events, Sseul) == [Sseul(B, False, 0)]  # B's own last action
    s = settled(state)
    assert (s.winner, s.winner_factors) == (B, ())  # A's 폭탄 doubles only its own win


# ----------------------------------------------------------------------------- bonus cards


def test_bonus_cards_at_the_deal_go_to_the_holder_and_to_the_dealer() -> None:
    # B holds a bonus 쌍피, a bonus 쌍피 lies on the floor, and the stock top is the 쓰리피: it
    # replaces B's card and is itself resolved on the next pass.
    deal = make_deal(STANDARD, [[], [48]], [49, 4, 8, 12, 16, 20, 24, 28], [50, 36, 40])
    state, events = start(STANDARD, deal)
    assert isinstance(events[0], Dealt) and 48 in events[0].hands[B]
    assert of(events, BonusCaptured) == [
        BonusCaptured(B, 48, "hand", 50),
        BonusCaptured(A, 49, "floor", 36),
        BonusCaptured(B, 50, "hand", 40),
    ]
    assert of(events, PiStolen) == []
    assert state.seats[B].captured == (48, 50) and state.seats[A].captured == (49,)
    assert 40 in state.seats[B].hand and not any(is_bonus(c) for c in state.seats[B].hand)
    assert 36 in state.floor and 49 not in state.floor
    assert len(state.seats[B].hand) == 10 and len(state.floor) == 8
    assert len(state.stock) == 23 - 3
    assert seat_score(state, B).pi_value == 5


def test_classic_floor_bonus_goes_to_the_dealer() -> None:
    deal = make_deal(CLASSIC, [], [48, 4, 8, 12, 16, 20, 24, 28], [36], dealer=B)
    state, events = start(CLASSIC, deal)
    assert of(events, BonusCaptured) == [BonusCaptured(B, 48, "floor", 36)]
    assert state.seats[B].captured == (48,) and state.to_move == B


def test_flipped_bonus_is_captured_and_the_player_flips_again_even_before_a_ppeok() -> None:
    deal = make_deal(STANDARD, [[0]], [1, 4, 8, 12, 16, 20, 24, 28], [48, 2])
    state, _ = start(STANDARD, deal)
    state, events = play(state, PlayCard(0))
    assert of(events, CardFlipped) == [CardFlipped(A, 48), CardFlipped(A, 2)]
    assert of(events, BonusCaptured) == [BonusCaptured(A, 48, "flip", -1)]
    assert of(events, PpeokFormed) == [PpeokFormed(A, 1, (0, 1, 2), 1)]
    assert state.seats[A].captured == (48,)
    assert of(events, PiStolen) == []


# ----------------------------------------------------------------------------------- 국진

GUKJIN_FLOOR = [32, 1, 5, 17, 21, 25, 29, 37]


def _gukjin_deal(rules: Rules) -> Deal:
    # A: 9월 청단 takes 국진, then 1월 광 takes 1월 띠, then 2월 열끗 takes 2월 띠.
    return make_deal(rules, [[33, 0, 4], [40, 41]], GUKJIN_FLOOR, [8, 44, 12, 45, 13])


def test_standard_gukjin_is_asked_at_each_own_settlement_until_converted() -> None:
    state, _ = start(STANDARD, _gukjin_deal(STANDARD))
    state, _ = play(state, PlayCard(33))
    assert (state.phase, state.to_move) == (Phase.GUKJIN, A)
    assert legal_actions(state) == [KeepGukjin(), ConvertGukjin()]
    state, events = play(state, KeepGukjin())
    assert of(events, GukjinDecided) == [GukjinDecided(A, False, False)]
    assert state.gukjin == "open" and seat_score(state, A).yeol_count == 1
    state, _ = play(state, PlayCard(40))  # B is never asked: it does not hold 국진
    assert state.phase is Phase.PLAY and state.to_move == A
    state, _ = play(state, PlayCard(0))
    assert (state.phase, state.to_move) == (Phase.GUKJIN, A)
    state, events = play(state, ConvertGukjin())
    assert of(events, GukjinDecided) == [GukjinDecided(A, True, True)]
    assert state.gukjin == "converted"
    score = seat_score(state, A)
    assert (score.yeol_count, score.pi_value) == (0, 2)
    state, _ = play(state, PlayCard(41), PlayCard(4))
    assert state.phase is Phase.PLAY and state.to_move == B


@pytest.mark.parametrize("convert", [False, True])
def test_arcade_gukjin_is_chosen_once_at_capture(convert: bool) -> None:
    state, _ = start(ARCADE, _gukjin_deal(ARCADE))
    state, _ = play(state, PlayCard(33))
    assert (state.phase, state.to_move) == (Phase.GUKJIN, A)
    state, events = play(state, ConvertGukjin() if convert else KeepGukjin())
    assert of(events, GukjinDecided) == [GukjinDecided(A, convert, True)]
    assert state.gukjin == ("converted" if convert else "kept")
    state, _ = play(state, PlayCard(40), PlayCard(0))
    assert state.phase is Phase.PLAY and state.to_move == B
    assert seat_score(state, A).yeol_count == (0 if convert else 1)


def test_simple_gukjin_is_never_converted() -> None:
    state, _ = start(SIMPLE, _gukjin_deal(SIMPLE))
    state, _ = play(state, PlayCard(33))
    assert state.phase is Phase.PLAY and state.to_move == B
    assert state.gukjin == "open"
    score = seat_score(state, A)
    assert (score.yeol_count, score.pi_value) == (1, 0)


# ------------------------------------------------------------------ 총통 and redeals


@pytest.mark.parametrize(
    ("rules", "holder"),
    [(CLASSIC, A), (CLASSIC, B), (HOUSE, C), (ARCADE, B)],
    ids=["classic-dealer", "classic-other", "house-3p", "arcade"],
)
def test_chongtong_wins_at_once_before_any_card_is_played(rules: Rules, holder: int) -> None:
    hands: list[list[int]] = [[] for _ in range(rules.players)]
    hands[holder] = [0, 1, 2, 3]
    floor = [4, 8, 12, 16, 20, 24, 28, 36][: rules.floor_size]
    state, events = start(rules, make_deal(rules, hands, floor, allow_four=True))
    assert of(events, InstantWin) == [InstantWin(holder, "chongtong", 10)]
    assert of(events, Redealt) == [] and of(events, CardPlayed) == []
    assert isinstance(events[-1], RoundSettled)
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.go_score) == ("instant_win", "chongtong", holder, 10)
    assert sorted(b.seat for b in s.bills) == [x for x in range(rules.players) if x != holder]
    assert all(b.points == 10 and b.factors == () for b in s.bills)
    assert s.points[holder] == 10 * (rules.players - 1)
    assert s.money == tuple(p * rules.point_value for p in s.points)


@pytest.mark.parametrize("rules", [STANDARD, SIMPLE], ids=lambda r: r.name)
def test_four_of_a_month_in_a_hand_is_redealt_from_the_seed_without_chongtong(rules: Rules) -> None:
    deal = make_deal(rules, [[], [0, 1, 2, 3]], [4, 8, 12, 16, 20, 24, 28, 36], allow_four=True)
    state, events = start(rules, deal, seed=5)
    assert events[0] == Redealt("hand_four", 1)
    assert of(events, InstantWin) == []
    assert of(events, Dealt)[0].hands != deal.hands
    assert state.phase is Phase.PLAY
    # The redeal is the seed's own shuffle.
    fresh, _ = new_round(rules, 5, dealer=0)
    assert (state.seats, state.floor, state.stock) == (fresh.seats, fresh.floor, fresh.stock)


@pytest.mark.parametrize("rules", [STANDARD, SIMPLE, CLASSIC, HOUSE, ARCADE], ids=lambda r: r.name)
def test_four_of_a_month_on_the_starting_floor_is_redealt(rules: Rules) -> None:
    floor = [0, 1, 2, 3, 4, 8, 12, 16][: rules.floor_size]
    _, events = start(rules, make_deal(rules, [], floor), seed=11)
    assert events[0] == Redealt("floor_four", 1)
    assert of(events, Dealt)[0].floor != tuple(floor)


# ------------------------------------------------------------ 뻑 payments and instant outcomes


def test_house_first_ppeok_is_paid_without_escalation_and_a_third_ppeok_wins() -> None:
    # 3 players, 100 won a point. A makes a 뻑 on each of its first three turns.
    deal = make_deal(HOUSE, [[0, 4, 8], [14, 26], [22, 29]], [1, 5, 9, 15, 19, 23],
                     [2, 18, 24, 6, 28, 36, 10])
    state, _ = start(HOUSE, deal)
    state, events = play(state, PlayCard(0))
    assert of(events, InstantPaid) == [
        InstantPaid(Payment(B, A, 3, "first_ppeok")), InstantPaid(Payment(C, A, 3, "first_ppeok"))
    ]
    state, _ = play(state, PlayCard(14), PlayCard(22))
    state, events = play(state, PlayCard(4))
    assert of(events, PpeokFormed) == [PpeokFormed(A, 2, (4, 5, 6), 2)]
    assert of(events, InstantPaid) == []  # no 연뻑 escalation in house
    state, _ = play(state, PlayCard(26), PlayCard(29))
    state, events = play(state, PlayCard(8))
    assert of(events, PpeokFormed) == [PpeokFormed(A, 3, (8, 9, 10), 3)]
    assert of(events, InstantWin) == [InstantWin(A, "three_ppeok", 3)]
    s = settled(state)
    assert (s.outcome, s.reason, s.go_score) == ("instant_win", "three_ppeok", 3)
    assert [(b.seat, b.pays) for b in s.bills] == [(B, 3), (C, 3)]
    assert s.points == (12, -6, -6)
    assert s.money == (1200, -600, -600)


def test_classic_three_ppeok_not_in_a_row_pays_only_the_first_ppeok_and_wins() -> None:
    # A: 뻑 on turn 1, an ordinary capture on turn 2, 뻑 on turns 3 and 4.
    deal = make_deal(CLASSIC, [[0, 14, 4, 8], [18, 26, 33]], [1, 5, 9, 13, 17, 21, 25, 29],
                     [2, 22, 40, 30, 6, 36, 10])
    state, _ = start(CLASSIC, deal)
    state, events = play(state, PlayCard(0))
    assert of(events, InstantPaid) == [InstantPaid(Payment(B, A, 7, "first_ppeok"))]
    state, events = play(state, PlayCard(18), PlayCard(14), PlayCard(26), PlayCard(4))
    assert [p.count for p in of(events, PpeokFormed)] == [2]
    assert of(events, InstantPaid) == []
    state, events = play(state, PlayCard(33), PlayCard(8))
    assert state.seats[A].ppeok_turns == (1, 3, 4)
    assert of(events, InstantPaid) == []
    assert of(events, InstantWin) == [InstantWin(A, "three_ppeok", 7)]
    assert settled(state).points == (14, -14)


def test_arcade_third_ppeok_loses_at_once() -> None:
    # B makes a 뻑 on each of its first three turns; A, with 0 points, wins with at least T (3).
    deal = make_deal(ARCADE, [[15, 23, 33], [0, 4, 8]], [1, 5, 9, 14, 18, 22, 26, 30],
                     [19, 2, 27, 6, 36, 10])
    state, _ = start(ARCADE, deal)
    state, events = play(state, PlayCard(15), PlayCard(0), PlayCard(23), PlayCard(4), PlayCard(33))
    assert [(p.seat, p.count) for p in of(events, PpeokFormed)] == [(B, 1), (B, 2)]
    assert of(events, InstantPaid) == []
    state, events = play(state, PlayCard(8))
    assert of(events, InstantLoss) == [InstantLoss(B, "three_ppeok")]
    assert seat_score(state, A).total == 0
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.go_score) == ("instant_loss", "three_ppeok", A, 3)
    # Arcade's 피박 spares no one: B has no 피 at all.
    (bill,) = s.bills
    assert factors(bill.factors) == {"pibak": 2}
    assert s.points == (6, -6)


@pytest.mark.parametrize(("rules", "points"), [(CLASSIC, 7), (CLASSIC3, 3)], ids=["2p", "3p"])
def test_classic_first_ttadak_is_paid_at_once(rules: Rules, points: int) -> None:
    floor = [20, 21, 1, 5, 9, 13, 17, 25][: rules.floor_size]
    state, _ = start(rules, make_deal(rules, [[22]], floor, [23]))
    state, _ = play(state, PlayCard(22))
    state, events = play(state, ChooseCapture(20))
    assert of(events, Ttadak) == [Ttadak(A, 6, True)]
    opponents = list(range(1, rules.players))
    # Nobody else has a 피 yet: each steal takes nothing.
    assert of(events, PiStolen) == [PiStolen(A, o, (), 1, ("ttadak",)) for o in opponents]
    paid = [Payment(o, A, points, "first_ttadak") for o in opponents]
    assert [e.payment for e in of(events, InstantPaid)] == paid
    assert state.payments == tuple(paid)


def test_classic_heodang_five_turns_without_a_capture_win_three_points() -> None:
    # A lays its play and its flip five times; B takes them back each time.
    deal = make_deal(CLASSIC, [[0, 8, 16, 6, 14], [1, 9, 17, 7]],
                     [20, 24, 28, 32, 36, 40, 44, 45],
                     [4, 5, 12, 13, 2, 3, 10, 11, 18])
    state, _ = start(CLASSIC, deal)
    for mine, theirs in ((0, 1), (8, 9), (16, 17), (6, 7)):
        state, events = play(state, PlayCard(mine))
        assert of(events, Captured) == []
        state, _ = play(state, PlayCard(theirs))
    assert state.seats[A].dry_turns == 4
    state, events = play(state, PlayCard(14))
    assert of(events, Captured) == []
    assert of(events, InstantWin) == [InstantWin(A, "heodang", 3)]
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.go_score, s.points) == ("instant_win", "heodang", A, 3, (3, -3))


# ---------------------------------------------------------------------------- go / stop

# A (the 선) collects 3 광 and 홍단 (6 after its 2nd turn), reaches 7 with a 5th 띠 on its 3rd
# turn, takes two 피 on its 4th (still 7) and a 6th 띠 on its 5th (8). B only lays cards.
REGO_HANDS = [[0, 28, 13, 38, 21], [40, 24, 10, 2]]
REGO_FLOOR = [1, 9, 29, 4, 14, 18, 39, 22]
REGO_STOCK = [8, 44, 5, 32, 17, 30, 6, 16, 36]


def test_go_stop_threshold_and_a_new_go_only_above_the_last_go() -> None:
    state, _ = start(STANDARD, make_deal(STANDARD, REGO_HANDS, REGO_FLOOR, REGO_STOCK))
    state, _ = play(state, PlayCard(0), PlayCard(40), PlayCard(28))
    assert seat_score(state, A).total == 6
    assert (state.phase, state.to_move) == (Phase.PLAY, B)  # 6 < 7: no decision
    state, _ = play(state, PlayCard(24), PlayCard(13))
    assert seat_score(state, A).total == 7
    assert (state.phase, state.to_move) == (Phase.GO_STOP, A)
    assert legal_actions(state) == [Go(), Stop()]
    state, events = play(state, Go())
    assert of(events, WentGo) == [WentGo(A, 1, 7)]
    assert (state.phase, state.to_move) == (Phase.PLAY, B)
    state, _ = play(state, PlayCard(10), PlayCard(38))
    assert seat_score(state, A).total == 7  # not above the last go: no decision
    assert (state.phase, state.to_move) == (Phase.PLAY, B)
    state, _ = play(state, PlayCard(2), PlayCard(21))
    assert seat_score(state, A).total == 8
    assert (state.phase, state.to_move) == (Phase.GO_STOP, A)
    state, events = play(state, Stop())
    assert of(events, Stopped) == [Stopped(A, 8, False)]
    s = settled(state)
    assert (s.outcome, s.winner, s.base, s.gos, s.go_score) == ("stop", A, 8, 1, 9)
    (bill,) = s.bills
    assert factors(bill.factors) == {"gwangbak": 2}  # 3 광 scored, B holds no 광
    assert s.points == (18, -18)


# ----------------------------------------------------------------------------------- 박


def test_pibak_and_gwangbak_are_judged_per_loser() -> None:
    # 3 players. A stops with 3 광 (3) and exactly 10 피 (1). B: 3 피, no 광 (피박, 광박).
    # C: a 광 and no 피 (0 피 is exempt from 피박).
    deal = make_deal(STANDARD3, [[43, 6, 10], [18, 12], [44, 24]], [41, 3, 19, 45, 7, 21],
                     [2, 40, 14, 42, 8, 30, 28])
    state, _ = start(STANDARD3, deal)
    state, _ = play(state, PlayCard(43), PlayCard(18), PlayCard(44), PlayCard(6), PlayCard(12), PlayCard(24))
    state, _ = play(state, PlayCard(10))
    score = seat_score(state, A)
    assert (score.gwang, score.pi, score.total) == (3, 1, 4)
    assert state.phase is Phase.GO_STOP
    state, _ = play(state, Stop())
    assert seat_score(state, B).pi_value == 3 and seat_score(state, C).pi_value == 0
    s = settled(state)
    bills = {b.seat: b for b in s.bills}
    assert factors(bills[B].factors) == {"pibak": 2, "gwangbak": 2}
    assert bills[B].points == 16
    assert bills[C].factors == () and bills[C].points == 4
    assert s.points == (20, -16, -4)


MEONGBAK_DEAL = ([[16, 24, 4, 29], [0, 40, 17]], [18, 22, 26, 38, 6, 14, 30, 35], [20, 8, 36, 44, 12, 21, 37])


def _meongbak_round(carry: bool) -> State:
    # A collects seven 열끗, the third 고도리 bird last: 3 + 5 = 8. B only lays cards.
    state, _ = start(STANDARD, make_deal(STANDARD, *MEONGBAK_DEAL), carry=carry)
    state, _ = play(state, PlayCard(16), PlayCard(0), PlayCard(24), PlayCard(40), PlayCard(4), PlayCard(17))
    state, _ = play(state, PlayCard(29))
    assert seat_score(state, A).yeol_count == 7 and seat_score(state, A).total == 8
    state, _ = play(state, Stop())
    return state


def test_meongbak_doubles_for_seven_yeol() -> None:
    s = settled(_meongbak_round(carry=False))
    assert factors(s.winner_factors) == {"meongbak": 2}
    assert [b.points for b in s.bills] == [16]


def test_round_after_a_nagari_is_doubled() -> None:
    s = settled(_meongbak_round(carry=True))
    assert factors(s.winner_factors) == {"meongbak": 2, "nagari_carry": 2}
    assert [b.points for b in s.bills] == [32]
    assert s.carry_next is False


def test_two_player_gobak_doubles_the_loser_who_went() -> None:
    # B reaches 8 (고도리 + 홍단) and goes; A then reaches 8 (청단 + 초단 + 6 띠) and stops.
    deal = make_deal(STANDARD, [[21, 33, 13, 17, 25], [4, 1, 29, 12]], [22, 5, 34, 2, 38, 10, 15, 31],
                     [45, 42, 37, 9, 18, 14, 26, 20, 36])
    state, _ = start(STANDARD, deal)
    state, _ = play(state, *(PlayCard(c) for c in (21, 4, 33, 1, 13, 29, 17, 12)))
    assert (state.phase, state.to_move) == (Phase.GO_STOP, B)
    state, _ = play(state, Go(), PlayCard(25))
    assert (state.phase, state.to_move) == (Phase.GO_STOP, A)
    state, _ = play(state, Stop())
    s = settled(state)
    assert (s.winner, s.go_score) == (A, 8)
    (bill,) = s.bills
    assert factors(bill.factors) == {"gobak": 2}
    assert s.points == (16, -16)


def test_three_player_gobak_the_most_recent_goer_pays_both_bills() -> None:
    # B goes with 홍단, then C with 초단; A stops with 3 광. C holds no 광 (광박), B does.
    deal = make_deal(STANDARD3, [[8, 28, 40], [1, 9], [13, 17]], [11, 0, 6, 14, 30, 36],
                     [18, 5, 10, 26, 41, 25, 20])
    state, _ = start(STANDARD3, deal)
    state, _ = play(state, PlayCard(8), PlayCard(1), PlayCard(13), PlayCard(28), PlayCard(9))
    state, events = play(state, Go(), PlayCard(17), Go(), PlayCard(40))
    assert of(events, WentGo) == [WentGo(B, 1, 3), WentGo(C, 1, 3)]
    state, _ = play(state, Stop())
    s = settled(state)
    assert s.winner == A and s.go_score == 3
    bills = {b.seat: b for b in s.bills}
    assert (bills[B].points, bills[B].pays, bills[B].covers) == (3, 0, ())
    assert factors(bills[C].factors) == {"gwangbak": 2}  # no extra ×2 for 고박
    assert (bills[C].points, bills[C].pays, bills[C].covers) == (6, 9, (B, C))
    assert s.points == (9, 0, -9)


# ------------------------------------------------------------------ 4 players: sitting out

FOUR_FLOOR = [1, 5, 9, 13, 17, 21]


def test_four_players_second_seat_sits_out() -> None:
    state, events = start(CLASSIC4, make_deal(CLASSIC4, [[0]], FOUR_FLOOR, [2]))
    assert (state.phase, state.to_move) == (Phase.SIT_OUT, B)
    assert legal_actions(state) == [JoinRound(), SitOut()]
    hand = state.seats[B].hand
    state, events = play(state, SitOut())
    assert of(events, SatOut) == [SatOut(B, False)]
    assert (state.phase, state.to_move) == (Phase.PLAY, A)
    assert state.order == (A, C, D)
    assert not state.seats[B].active and not state.has_turn_left(B)
    # A's 첫뻑 is paid by the two playing seats only, at the 3-player rate.
    state, events = play(state, PlayCard(0))
    assert of(events, InstantPaid) == [
        InstantPaid(Payment(C, A, 3, "first_ppeok")), InstantPaid(Payment(D, A, 3, "first_ppeok"))
    ]
    assert state.to_move == C
    assert state.seats[B].hand == hand


def test_four_players_third_seat_sits_out_after_the_second_joins() -> None:
    state, _ = start(CLASSIC4, make_deal(CLASSIC4, [], FOUR_FLOOR))
    state, events = play(state, JoinRound())
    assert of(events, JoinedRound) == [JoinedRound(B)]
    assert (state.phase, state.to_move) == (Phase.SIT_OUT, C)
    state, events = play(state, SitOut())
    assert of(events, SatOut) == [SatOut(C, False)]
    assert (state.phase, state.to_move) == (Phase.PLAY, A)
    assert state.order == (A, B, D)


@pytest.mark.parametrize("sell", [True, False])
def test_four_players_fourth_seat_is_forced_out_and_may_sell_gwang(sell: bool) -> None:
    # D holds a 광, a 쌍피 and a bonus 쌍피; B holds a bonus 쌍피, resolved once B plays.
    deal = make_deal(CLASSIC4, [[], [49], [], [0, 43, 48]], FOUR_FLOOR, [45])
    state, events = start(CLASSIC4, deal)
    assert of(events, BonusCaptured) == []  # hand bonus cards wait for the sit-out
    state, _ = play(state, JoinRound())
    state, events = play(state, JoinRound())
    assert of(events, SatOut) == [SatOut(D, True)]
    assert (state.phase, state.to_move) == (Phase.GWANG_SALE, D)
    assert legal_actions(state) == [DeclineGwangSale(), SellGwang()]
    state, events = play(state, SellGwang() if sell else DeclineGwangSale())
    if sell:
        assert of(events, GwangSold) == [GwangSold(D, (0, 43, 48), 1)]
        assert [e.payment for e in of(events, InstantPaid)] == [
            Payment(A, D, 3, "gwang_sale"), Payment(B, D, 3, "gwang_sale"), Payment(C, D, 3, "gwang_sale")
        ]
    else:
        assert of(events, GwangSold) == [] and of(events, InstantPaid) == []
    assert of(events, BonusCaptured) == [BonusCaptured(B, 49, "hand", 45)]
    assert (state.phase, state.to_move) == (Phase.PLAY, A)
    assert state.order == (A, B, C)


def test_four_players_forced_out_seat_with_nothing_to_sell_goes_straight_to_play() -> None:
    deal = make_deal(CLASSIC4, [[0, 8, 28, 40, 44, 43, 47], [], [], [2, 3, 6, 7, 10, 11, 14]], FOUR_FLOOR)
    state, _ = start(CLASSIC4, deal)
    state, events = play(state, JoinRound(), JoinRound())
    assert of(events, SatOut) == [SatOut(D, True)]
    assert (state.phase, state.to_move) == (Phase.PLAY, A)


def test_instant_payments_are_kept_when_the_payee_loses() -> None:
    # Classic: A's 첫뻑 earns 7 from B; then B captures nothing on five turns (허당) and wins 3.
    deal = make_deal(CLASSIC, [[0, 5, 13, 21, 11], [4, 12, 20, 10, 18]],
                     [1, 24, 28, 32, 36, 40, 44, 45], [2, 8, 9, 16, 17, 6, 7, 14, 15, 22])
    state, _ = start(CLASSIC, deal)
    state, events = play(state, PlayCard(0))
    assert of(events, InstantPaid) == [InstantPaid(Payment(B, A, 7, "first_ppeok"))]
    state, _ = play(state, *(PlayCard(c) for c in (4, 5, 12, 13, 20, 21, 10, 11)))
    assert state.seats[B].dry_turns == 4
    state, events = play(state, PlayCard(18))
    assert of(events, InstantWin) == [InstantWin(B, "heodang", 3)]
    s = settled(state)
    assert s.winner == B and s.payments == (Payment(B, A, 7, "first_ppeok"),)
    assert s.points == (7 - 3, -7 + 3)


def test_instant_win_after_a_nagari_is_doubled() -> None:
    deal = make_deal(CLASSIC, [[0, 1, 2, 3]], [4, 8, 12, 16, 20, 24, 28, 36], allow_four=True)
    state, _ = start(CLASSIC, deal, carry=True)
    s = settled(state)
    assert factors(s.winner_factors) == {"nagari_carry": 2}
    assert [b.points for b in s.bills] == [20]


def test_four_players_chongtong_made_after_the_sit_out_is_paid_by_the_playing_seats_only() -> None:
    # B holds three 1월 and a bonus 쌍피; the bonus is replaced after C sits out, by the 4th 1월.
    deal = make_deal(CLASSIC4, [[], [0, 1, 2, 48]], FOUR_FLOOR[1:] + [25], [3])
    state, events = start(CLASSIC4, deal)
    assert of(events, InstantWin) == []
    state, events = play(state, JoinRound(), SitOut())
    assert of(events, BonusCaptured) == [BonusCaptured(B, 48, "hand", 3)]
    assert of(events, InstantWin) == [InstantWin(B, "chongtong", 10)]
    s = settled(state)
    assert sorted(b.seat for b in s.bills) == [A, D]
    assert s.points == (-10, 20, 0, -10)


def test_four_players_chongtong_at_the_deal_is_paid_by_all_three_others() -> None:
    # Engine choice (docs/rules.md §6): a 총통 dealt to any of the four hands ends the round before
    # anyone sits out, so all three other seats pay.
    deal = make_deal(CLASSIC4, [[], [], [], [0, 1, 2, 3]], FOUR_FLOOR[1:] + [25], allow_four=True)
    state, events = start(CLASSIC4, deal)
    assert of(events, InstantWin) == [InstantWin(D, "chongtong", 10)]
    assert settled(state).points == (-10, -10, -10, 30)
