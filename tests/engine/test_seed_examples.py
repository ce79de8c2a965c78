"""Every worked example of the five seed rule documents (``/work/shared/seeds``), as tests.

Each test is named after its seed (000-004, in the order of the spec's preset table: 000 standard,
001 simple, 002 classic, 003 house, 004 arcade) and its example. Examples about a whole round are
played as real rounds from an explicit ``Deal`` with scripted actions; examples that are pure
arithmetic call the scoring functions. Seat 0 is "A", seat 1 "B", seat 2 "C".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pytest

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    Event,
    FlipOnly,
    Go,
    Phase,
    PlayCard,
    Rules,
    State,
    Stop,
    apply,
    go_score,
    legal_actions,
    new_round,
    score,
    seat_score,
)
from gostop.engine.events import (
    Bombed,
    Captured,
    InstantLoss,
    InstantPaid,
    InstantWin,
    PiStolen,
    PpeokFormed,
    PpeokRecaptured,
    RoundSettled,
    ScoreChanged,
    Shaken,
    Stopped,
    Ttadak,
    WentGo,
)
from gostop.engine.settlement import Factor, Payment, Settlement
from gostop.engine.testing import scripted_deal

E = TypeVar("E")
A, B, C = 0, 1, 2


make_deal = scripted_deal


def play(state: State, *actions: Action) -> tuple[State, list[Event]]:
    """Apply the actions in order (each must be legal); return the last state and all events."""
    events: list[Event] = []
    for action in actions:
        state, new = apply(state, action)
        events.extend(new)
    return state, events


def plays(*cards: int) -> list[Action]:
    return [PlayCard(c) for c in cards]


def of(events: Sequence[Event], kind: type[E]) -> list[E]:
    """The events of one type, in order."""
    return [e for e in events if isinstance(e, kind)]


def settled(state: State) -> Settlement:
    assert state.over and state.settlement is not None
    return state.settlement


def factors(items: Sequence[Factor]) -> dict[str, int]:
    return {f.name: f.value for f in items}


# -------------------------------------------------------------- 000: standard (full rule book)


def test_seed_000_hongdan_only_base_3_with_one_go_is_4_and_three_goes_10() -> None:
    assert Rules.preset("standard", players=3).go_threshold == 3
    assert score([1, 5, 9]).total == 3
    assert go_score(3, 1, "standard") == 4
    assert go_score(3, 3, "standard") == 10


def test_seed_000_base_7_with_three_goes_is_18() -> None:
    assert go_score(7, 3, "standard") == (7 + 2) * 2 == 18
    # "4고 4배, 5고 8배"
    assert go_score(7, 4, "standard") == 9 * 4
    assert go_score(7, 5, "standard") == 9 * 8


def test_seed_000_scoring_table() -> None:
    assert score([0, 8, 28]).gwang == 3
    assert score([0, 8, 44]).gwang == 2  # 비광 포함 3광
    assert score([0, 8, 28, 44]).gwang == 4
    assert score([0, 8, 28, 40, 44]).gwang == 15
    assert score([4, 12, 29, 16, 20]).total == 5 + 1  # 고도리 + 열끗 5장
    assert score([4, 12, 29, 16, 20, 24]).yeol == 2  # 이후 장당 1점
    assert score([13, 17, 25, 21, 46]).total == 3 + 1  # 초단 + 띠 5장; 비띠 is a 띠 in no 단
    assert score([43, 47, 50, 2, 3, 6]).pi == 1  # 쌍피 2, 쓰리피 3: 피 수 10
    assert score([32], gukjin_converted=True).pi_value == 2  # 국진 as 쌍피 ...
    assert score([32], gukjin_converted=True).yeol_count == 0  # ... and not also a 열끗


# ------------------------------------------------------------------- 001: simple (beginner)

# A (the 선) takes 3 광 and 홍단 (6), then a 5th 띠 (7: go), then two 피 (still 7), then a 6th 띠.
REGO_HANDS = [[0, 28, 13, 38, 21], [40, 24, 10, 2]]
REGO_FLOOR = [1, 9, 29, 4, 14, 18, 39, 22]
REGO_STOCK = [8, 44, 5, 32, 17, 30, 6, 16, 36]


def test_seed_001_go_at_7_no_new_choice_at_7_stop_at_8_scores_9() -> None:
    simple = Rules.preset("simple")
    state, _ = new_round(simple, 1, deal=make_deal(simple, REGO_HANDS, REGO_FLOOR, REGO_STOCK))
    state, _ = play(state, *plays(0, 40, 28, 24, 13))
    assert seat_score(state, A).total == 7 and state.phase is Phase.GO_STOP
    state, events = play(state, Go(), *plays(10, 38))
    assert of(events, WentGo) == [WentGo(A, 1, 7)]
    assert seat_score(state, A).total == 7
    assert (state.phase, state.to_move) == (Phase.PLAY, B)  # still 7: no choice
    state, _ = play(state, *plays(2, 21))
    assert seat_score(state, A).total == 8 and state.phase is Phase.GO_STOP
    state, events = play(state, Stop())
    assert of(events, Stopped) == [Stopped(A, 8, False)]
    s = settled(state)
    assert (s.base, s.gos, s.go_score, s.winner_factors) == (8, 1, 9, ())
    assert [b.points for b in s.bills] == [9]  # simple: no 박, only the go score
    assert s.points == (9, -9)


def test_seed_001_base_8_with_two_goes_is_10_and_three_goes_20() -> None:
    assert go_score(8, 2, "standard") == 10
    assert go_score(8, 3, "standard") == 20


def test_seed_001_godori_with_five_yeol_is_6_and_with_11_pi_base_8() -> None:
    yeol = [4, 12, 29, 16, 20]
    assert score(yeol).total == 6
    pi = [2, 3, 6, 7, 10, 11, 14, 15, 18, 43]  # 11월 쌍피 counts two: 피 11
    s = score(yeol + pi)
    assert (s.pi_value, s.pi, s.total) == (11, 2, 8)


def test_seed_001_choosing_the_2_yeol_completes_godori() -> None:
    # Floor: 2월 열끗 and 2월 피. A already holds the 4월 and 8월 birds and plays 2월 띠.
    simple = Rules.preset("simple")
    deal = make_deal(simple, [[12, 5], [24]], [4, 6, 14, 30, 0, 8, 16, 20], [29, 36, 40])
    state, _ = new_round(simple, 1, deal=deal)
    state, _ = play(state, *plays(12, 24))
    state, _ = play(state, PlayCard(5))
    assert state.phase is Phase.CHOOSE_HAND
    assert legal_actions(state) == [ChooseCapture(4), ChooseCapture(6)]
    state, events = play(state, ChooseCapture(4))
    assert Captured(A, (5, 4)) in events
    (change,) = [e for e in of(events, ScoreChanged) if e.seat == A]
    assert (change.score.godori, change.total) == (5, 5)


# ------------------------------------------------------------ 002: classic (online 맞고/고스톱)


def test_seed_002_three_ppeok_in_a_row_two_players_7_14_21_7_is_49() -> None:
    classic = Rules.preset("classic")
    deal = make_deal(classic, [[0, 4, 8], [12, 20]], [1, 5, 9, 28, 33, 36, 40, 44], [2, 16, 6, 24, 10])
    state, _ = new_round(classic, 1, deal=deal)
    state, events = play(state, *plays(0, 12, 4, 20, 8))
    assert [(p.seat, p.month, p.count) for p in of(events, PpeokFormed)] == [(A, 1, 1), (A, 2, 2), (A, 3, 3)]
    assert [e.payment for e in of(events, InstantPaid)] == [
        Payment(B, A, 7, "first_ppeok"), Payment(B, A, 14, "second_ppeok"), Payment(B, A, 21, "third_ppeok"),
    ]
    assert of(events, InstantWin) == [InstantWin(A, "three_ppeok", 7)]
    assert isinstance(events[-1], RoundSettled)
    s = settled(state)
    assert (s.outcome, s.reason, s.winner, s.go_score) == ("instant_win", "three_ppeok", A, 7)
    assert s.points == (7 + 14 + 21 + 7, -49)


def test_seed_002_three_ppeok_in_a_row_three_players_3_6_9_3_is_21_each() -> None:
    classic3 = Rules.preset("classic", players=3)
    deal = make_deal(classic3, [[0, 4, 8], [12, 44], [20, 13]], [1, 5, 9, 28, 36, 40],
                     [2, 17, 25, 6, 33, 21, 10])
    state, _ = new_round(classic3, 1, deal=deal)
    state, events = play(state, *plays(0, 12, 20, 4, 44, 13, 8))
    assert len(of(events, PpeokFormed)) == 3
    paid = [(e.payment.payer, e.payment.points) for e in of(events, InstantPaid)]
    assert paid == [(B, 3), (C, 3), (B, 6), (C, 6), (B, 9), (C, 9)]
    assert of(events, InstantWin) == [InstantWin(A, "three_ppeok", 3)]
    assert settled(state).points == (42, -21, -21)


def test_seed_002_go_scoring_one_point_per_go_then_doubling_from_three() -> None:
    assert [go_score(7, n, "standard") for n in range(6)] == [7, 8, 9, 18, 36, 72]


# -------------------------------------------------------------------- 003: house (home game)

HOUSE = Rules.preset("house")


def test_seed_003_tti_6_with_hongdan_and_cheongdan_is_8() -> None:
    s = score([1, 5, 9, 21, 33, 37])
    assert (s.tti, s.hongdan, s.cheongdan, s.total) == (2, 3, 3, 8)


def test_seed_003_combination_table() -> None:
    assert score([0, 8, 28]).total == 3  # 3광
    assert score([44, 0, 8]).total == 2  # 비3광
    assert score([4, 12, 29]).godori == 5
    assert score([45, 12, 29]).godori == 0  # 12월 열끗 is no 고도리 bird
    assert score([13, 17, 46]).chodan == 0  # 비띠 is in no 단


def test_seed_003_capture_example_3_gwang_and_10_yeol_take_four_cards() -> None:
    # Floor 3피, 7초단, 10피; A plays 3광 and flips 10열끗.
    deal = make_deal(HOUSE, [[8]], [10, 25, 38, 0, 14, 18], [36])
    state, _ = new_round(HOUSE, 1, deal=deal)
    state, events = play(state, PlayCard(8))
    assert of(events, Captured) == [Captured(A, (8, 10)), Captured(A, (36, 38))]
    assert sorted(state.seats[A].captured) == [8, 10, 36, 38]
    assert 25 in state.floor


def test_seed_003_ppeok_example_then_the_fourth_card_takes_a_pi_from_each_opponent() -> None:
    # A, B, C take some 피; then A plays 5열끗 on 5피 and flips 5초단: 뻑. B takes the stack with
    # the last 5피 and one 피 from each opponent.
    deal = make_deal(HOUSE, [[2, 16], [6, 19], [10]], [18, 3, 7, 11, 24, 28], [40, 44, 36, 17, 12])
    state, _ = new_round(HOUSE, 1, deal=deal)
    state, _ = play(state, *plays(2, 6, 10))
    state, events = play(state, PlayCard(16))
    assert of(events, PpeokFormed) == [PpeokFormed(A, 5, (16, 18, 17), 1)]
    assert of(events, Captured) == []
    state, events = play(state, PlayCard(19))
    assert of(events, PpeokRecaptured) == [PpeokRecaptured(B, 5, A, False)]
    assert Captured(B, (19, 16, 18, 17)) in events
    assert of(events, PiStolen) == [PiStolen(B, A, (2,), 1, ("ppeok",)), PiStolen(B, C, (10,), 1, ("ppeok",))]


def test_seed_003_ttadak_example_no_pi_pays_nothing_and_a_ssangpi_is_given_whole() -> None:
    # Floor 8광 and 8피; A plays 8고도리 and flips the other 8피. B has no 피; C has only a 쌍피.
    deal = make_deal(HOUSE, [[4, 29], [0], [43]], [28, 30, 1, 40, 13, 17], [8, 12, 16, 31])
    state, _ = new_round(HOUSE, 1, deal=deal)
    state, _ = play(state, *plays(4, 0, 43))
    assert seat_score(state, B).pi_value == 0 and state.seats[C].captured[:2] == (43, 40)
    state, _ = play(state, PlayCard(29))
    state, events = play(state, ChooseCapture(28))
    assert of(events, Ttadak) == [Ttadak(A, 8, True)]
    assert Captured(A, (29, 28, 30, 31)) in events
    assert of(events, PiStolen) == [PiStolen(A, B, (), 1, ("ttadak",)), PiStolen(A, C, (43,), 1, ("ttadak",))]


@pytest.mark.parametrize("on_floor", [True, False], ids=["bomb", "shake"])
def test_seed_003_three_of_june_shake_or_bomb(on_floor: bool) -> None:
    # Hand 6열끗 6청단 6피: with 6피 on the floor it is a 폭탄 (four cards, two flip-only turns);
    # with none, the three can be shown (흔들기).
    floor = [23 if on_floor else 3, 1, 5, 9, 13, 17]
    state, _ = new_round(HOUSE, 1, deal=make_deal(HOUSE, [[20, 21, 22]], floor, [36]))
    actions = legal_actions(state)
    if on_floor:
        assert Bomb(6) in actions
        state, events = play(state, Bomb(6))
        assert of(events, Bombed) == [Bombed(A, 6, (20, 21, 22), 2)]
        assert Captured(A, (20, 21, 22, 23)) in events
        state, _ = play(state, *plays(state.seats[B].hand[0], state.seats[C].hand[0]))
        # "손패가 남보다 2장 적어집니다" ... "두 번은 ... 더미만 뒤집는 차례를 쓸 수 있습니다"
        assert [len(s.hand) for s in state.seats] == [4, 6, 6]
        assert state.seats[A].spare_flips == 2 and FlipOnly() in legal_actions(state)
    else:
        assert PlayCard(20, shake=True) in actions and Bomb(6) not in actions
        state, events = play(state, PlayCard(20, shake=True))
        assert of(events, Shaken) == [Shaken(A, 6, (20, 21, 22))]


def test_seed_003_three_player_settlement_400_and_800_won() -> None:
    # A stops with 홍단 + 피 10 = 4 points; B has 7 피 (no 피박), C 4 피 (피박); 100 won a point.
    deal = make_deal(HOUSE, [[43, 2, 27, 6], [14, 22, 23], [34, 35, 0]], [41, 45, 15, 19, 1, 5],
                     [47, 18, 38, 26, 30, 39, 10, 29, 44, 9])
    state, _ = new_round(HOUSE, 1, deal=deal)
    state, _ = play(state, *plays(43, 14, 34, 2, 22, 35, 27, 23, 0, 6))
    a = seat_score(state, A)
    assert (a.hongdan, a.pi_value, a.pi, a.total) == (3, 10, 1, 4)
    assert seat_score(state, B).pi_value == 7 and seat_score(state, C).pi_value == 4
    assert (state.phase, state.to_move) == (Phase.GO_STOP, A)
    state, _ = play(state, Stop())
    s = settled(state)
    assert (s.winner, s.go_score, s.winner_factors, s.point_value) == (A, 4, (), 100)
    bills = {b.seat: b for b in s.bills}
    assert (bills[B].factors, bills[B].points) == ((), 4)
    assert (factors(bills[C].factors), bills[C].points) == ({"pibak": 2}, 8)
    assert s.money == (1200, -400, -800)


# --------------------------------------------------------------------- 004: arcade (3점 맞고)


def test_seed_004_three_gwang_one_go_loser_with_4_pi_pays_8() -> None:
    arcade = Rules.preset("arcade")
    assert (go_score(3, 1, "additive") * 2) == 8
    # A takes 3 광 (3 points, exactly) and goes. B takes 4 피 and the 비광, then makes three 뻑:
    # arcade's 3뻑 loses at once and A wins with its current go score, 3 + 1.
    deal = make_deal(arcade, [[8, 40, 20, 36], [47, 4, 12, 16]], [10, 30, 44, 3, 41, 5, 13, 17],
                     [28, 2, 1, 6, 24, 14, 33, 18])
    state, _ = new_round(arcade, 1, deal=deal)
    state, _ = play(state, *plays(8, 47, 40))
    assert seat_score(state, A).total == 3 and state.phase is Phase.GO_STOP
    state, events = play(state, Go(), *plays(4, 20, 12, 36, 16))
    assert of(events, WentGo) == [WentGo(A, 1, 3)]
    assert [p.count for p in of(events, PpeokFormed)] == [1, 2, 3]
    assert of(events, InstantLoss) == [InstantLoss(B, "three_ppeok")]
    b = seat_score(state, B)
    assert (b.pi_value, b.gwang_count) == (4, 1)
    s = settled(state)
    assert (s.winner, s.base, s.gos, s.go_score) == (A, 3, 1, 4)
    (bill,) = s.bills
    assert factors(bill.factors) == {"pibak": 2}  # B holds a 광: no 광박
    assert bill.points == 8
