"""The reason an illegal action is refused, word for word, for every branch of the explanation:
an action of the wrong kind in each phase, and each way a play, a 흔들기, a 폭탄, a 빈 내기 or a
capture choice can be wrong. Clients show these messages to players (``ILLEGAL_ACTION``).

States are reached by real play from scripted deals (``scripted_deal``), except the one position
play never reaches (a 빈 내기 left with the stock empty), which is the reached position with its
stock emptied. Card ids: ``(month - 1) * 4 + slot``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    FlipOnly,
    Go,
    IllegalAction,
    JoinRound,
    KeepGukjin,
    NotYourTurn,
    Phase,
    PlayCard,
    RoundOver,
    Rules,
    SellGwang,
    SitOut,
    State,
    Stop,
    apply,
    legal_actions,
    new_round,
)
from gostop.engine.testing import scripted_deal

A, B, C, D = 0, 1, 2, 3
STANDARD = Rules.preset("standard")
STANDARD3 = Rules.preset("standard", players=3)
SIMPLE = Rules.preset("simple")
CLASSIC4 = Rules.preset("classic", players=4)
FOUR_FLOOR = [1, 5, 9, 13, 17, 21]


def start(rules: Rules, hands: Sequence[Sequence[int]], floor: Sequence[int], stock: Sequence[int] = ()) -> State:
    state, _ = new_round(rules, 1, deal=scripted_deal(rules, hands, floor, stock))
    return state


def play(state: State, *actions: Action) -> State:
    for action in actions:
        state, _ = apply(state, action)
    return state


def refusal(state: State, action: Action) -> str:
    """The message ``action`` is refused with, by the seat to move."""
    assert action not in legal_actions(state)
    with pytest.raises(IllegalAction) as caught:
        apply(state, action, state.to_move)
    return str(caught.value)


# ------------------------------------------------------------------ the wrong kind of action


def _play_state() -> State:
    """Standard, A to move: three 6월 (none on the floor), three 7월 (7월 피 on the floor), two 8월
    (8월 피 on the floor), a 2월 (2월 띠 on the floor) and 9월 띠 (no 9월 on the floor)."""
    state = start(STANDARD, [[20, 21, 22, 24, 25, 26, 28, 29, 4, 33]], [27, 30, 5, 1, 9, 13, 17, 37])
    assert (state.phase, state.to_move) == (Phase.PLAY, A)
    return state


def _choose_hand_state() -> State:
    state = play(start(STANDARD, [[0]], [1, 2, 5, 9, 13, 17, 21, 25], [40]), PlayCard(0))
    assert (state.phase, state.to_move) == (Phase.CHOOSE_HAND, A)
    return state


def _choose_flip_state() -> State:
    state = play(start(STANDARD, [[4]], [5, 1, 2, 9, 13, 17, 21, 25], [0]), PlayCard(4))
    assert (state.phase, state.to_move) == (Phase.CHOOSE_FLIP, A)
    return state


def _gukjin_state() -> State:
    # A's 9월 띠 takes 국진 from the floor.
    state = play(start(STANDARD, [[33, 0, 4], [40, 41]], [32, 1, 5, 17, 21, 25, 29, 37], [8, 44, 12, 45, 13]),
                 PlayCard(33))
    assert (state.phase, state.to_move) == (Phase.GUKJIN, A)
    return state


def _go_stop_state() -> State:
    # 3 players: B and C lay cards; A's 2월 열끗 takes the 2월 띠, completing 홍단 (3 points).
    state = start(STANDARD3, [[20, 21, 22, 4], [28, 29, 30], [40]], [1, 5, 9, 12, 16, 24], [0, 36, 44, 8])
    state = play(state, PlayCard(20), PlayCard(28), PlayCard(40), PlayCard(4))
    assert (state.phase, state.to_move) == (Phase.GO_STOP, A)
    return state


def _sit_out_state() -> State:
    state = start(CLASSIC4, [[0]], FOUR_FLOOR, [2])
    assert (state.phase, state.to_move) == (Phase.SIT_OUT, B)
    return state


def _gwang_sale_state() -> State:
    # D, forced out, holds a 광 to sell.
    state = play(start(CLASSIC4, [[], [49], [], [0, 43, 48]], FOUR_FLOOR, [45]), JoinRound(), JoinRound())
    assert (state.phase, state.to_move) == (Phase.GWANG_SALE, D)
    return state


WRONG_KIND = [
    (_play_state, Go(), "play a card, bomb or use a 빈 내기"),
    (_play_state, ChooseCapture(27), "play a card, bomb or use a 빈 내기"),
    (_choose_hand_state, PlayCard(5), "choose which floor card the played card captures"),
    (_choose_flip_state, Stop(), "choose which floor card the flipped card captures"),
    (_gukjin_state, Go(), "keep or convert 국진"),
    (_go_stop_state, KeepGukjin(), "go or stop"),
    (_sit_out_state, PlayCard(0), "join the round or sit out"),
    (_sit_out_state, SellGwang(), "join the round or sit out"),
    (_gwang_sale_state, SitOut(), "sell 광 or decline"),
    (_gwang_sale_state, ConvertGukjin(), "sell 광 or decline"),
]


@pytest.mark.parametrize(("reach", "action", "decision"), [
    pytest.param(reach, action, decision, id=f"{reach.__name__.strip('_')}-{type(action).__name__}")
    for reach, action, decision in WRONG_KIND
])
def test_an_action_of_the_wrong_kind_names_the_pending_decision(
    reach: Callable[[], State], action: Action, decision: str
) -> None:
    message = f"{type(action).__name__} is not possible now: the pending decision is to {decision}"
    assert refusal(reach(), action) == message


def test_every_phase_has_a_wrong_kind_case() -> None:
    phases = {reach().phase for reach, _, _ in WRONG_KIND}
    assert phases == set(Phase) - {Phase.OVER}


def test_the_right_kinds_of_each_phase_are_accepted() -> None:
    """The states above: each phase's own decision is legal there (the refusals are not vacuous)."""
    assert Bomb(7) in legal_actions(_play_state()) and PlayCard(20, shake=True) in legal_actions(_play_state())
    assert legal_actions(_choose_hand_state()) == [ChooseCapture(1), ChooseCapture(2)]
    assert legal_actions(_choose_flip_state()) == [ChooseCapture(1), ChooseCapture(2)]
    assert legal_actions(_gukjin_state()) == [KeepGukjin(), ConvertGukjin()]
    assert legal_actions(_go_stop_state()) == [Go(), Stop()]
    assert legal_actions(_sit_out_state()) == [JoinRound(), SitOut()]
    assert legal_actions(_gwang_sale_state()) == [DeclineGwangSale(), SellGwang()]


# --------------------------------------------------------------------- plays and 흔들기


def test_a_card_not_in_hand_is_named() -> None:
    state = _play_state()
    assert refusal(state, PlayCard(23)) == "card 23 (06-pi-b) is not in your hand"
    assert refusal(state, PlayCard(0, shake=True)) == "card 0 (01-gwang) is not in your hand"


def test_a_shake_needs_three_of_the_month_in_hand() -> None:
    state = _play_state()
    assert refusal(state, PlayCard(28, shake=True)) == "흔들기 needs three cards of month 8 in hand; you hold 2"
    assert refusal(state, PlayCard(4, shake=True)) == "흔들기 needs three cards of month 2 in hand; you hold 1"


def test_a_shake_needs_no_card_of_the_month_on_the_floor() -> None:
    state = _play_state()
    assert refusal(state, PlayCard(24, shake=True)) == "흔들기 needs no month-7 card on the floor"


def test_shake_and_bomb_refused_where_the_rules_have_neither() -> None:
    state = start(SIMPLE, [[20, 21, 22, 24, 25, 26]], [27, 1, 5, 9, 13, 17, 29, 37])
    assert refusal(state, PlayCard(20, shake=True)) == "흔들기 is not part of these rules"
    assert refusal(state, Bomb(7)) == "폭탄 is not part of these rules"


def test_a_play_with_an_empty_hand_points_to_the_flip_only_turn() -> None:
    state = _empty_hand_with_flips()
    assert refusal(state, PlayCard(0)) == "your hand is empty: use a 빈 내기 (FlipOnly)"


# -------------------------------------------------------------------------------- 폭탄


def test_a_bomb_names_what_is_held_and_what_is_on_the_floor() -> None:
    state = _play_state()
    expected = ("폭탄 needs three cards of month {} in hand and exactly one on the floor; "
                "you hold {} and the floor has {}")
    assert refusal(state, Bomb(6)) == expected.format(6, 3, 0)
    assert refusal(state, Bomb(8)) == expected.format(8, 2, 1)
    assert refusal(state, Bomb(12)) == expected.format(12, 0, 0)


# ---------------------------------------------------------------------------- 빈 내기


def _empty_hand_with_flips() -> State:
    """Standard: A bombs 7월 on its first turn (two 빈 내기 granted) and plays out the rest of its
    hand (keeping 국진 each time it is asked); B goes once at 3 points. Then A is to move with an
    empty hand and both 빈 내기 left."""
    state = start(STANDARD, [[24, 25, 26]], [27, 1, 5, 9, 13, 17, 29, 37])
    assert state.seats[A].hand == (0, 3, 6, 8, 11, 14, 16, 24, 25, 26)
    state = play(state, Bomb(7), PlayCard(2), PlayCard(0), PlayCard(4), PlayCard(3), PlayCard(7), PlayCard(6))
    for b, a in ((10, 8), (12, 11), (15, 14), (18, 16)):
        state = play(state, KeepGukjin(), PlayCard(b), PlayCard(a))
    state = play(state, KeepGukjin(), PlayCard(19), Go())
    assert (state.phase, state.to_move, state.seats[A].hand, state.seats[A].spare_flips) == (Phase.PLAY, A, (), 2)
    assert legal_actions(state) == [FlipOnly()] and len(state.stock) == 7
    return state


def test_a_flip_only_turn_needs_one_left() -> None:
    state = _play_state()
    assert state.seats[A].spare_flips == 0
    assert refusal(state, FlipOnly()) == "you have no 빈 내기 (flip-only turn) left"


def test_a_flip_only_turn_needs_a_card_in_the_stock() -> None:
    state = _empty_hand_with_flips()
    assert FlipOnly() in legal_actions(state)
    emptied = dataclasses.replace(state, stock=())
    assert refusal(emptied, FlipOnly()) == "the stock is empty"


# ---------------------------------------------------------------------------- capture choice


def test_a_capture_choice_lists_the_cards_to_choose_from() -> None:
    options = "1 (01-tti), 2 (01-pi-a)"
    assert refusal(_choose_hand_state(), ChooseCapture(5)) == (
        f"card 5 (02-tti) is not one of the cards to choose from: {options}")
    assert refusal(_choose_flip_state(), ChooseCapture(3)) == (
        f"card 3 (01-pi-b) is not one of the cards to choose from: {options}")


# ------------------------------------------------------------------- turn and round over


def test_another_seat_and_a_finished_round_are_refused_with_their_reasons() -> None:
    state = _play_state()
    with pytest.raises(NotYourTurn) as caught:
        apply(state, PlayCard(0), B)
    assert str(caught.value) == "it is seat 0's turn, not seat 1's"
    over = play(_go_stop_state(), Stop())
    assert over.over
    with pytest.raises(RoundOver) as ended:
        apply(over, Go())
    assert str(ended.value) == "the round is over"
