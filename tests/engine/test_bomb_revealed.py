"""A 폭탄 takes the bombed month's cards out of the bomber's revealed cards (they are captured now,
no longer in hand), and leaves the revealed cards of any other month as they were: what the other
seats see of the bomber's hand is exactly what it still holds of its shaken months.

The bombed month can have revealed cards only after a 흔들기 of all four cards of that month, which
needs a hand of four of a month that is not a 총통: here a 4-player table without 총통, where a bonus
card in hand is replaced by the fourth card after the sit-out.
"""

from __future__ import annotations

from gostop.engine import Bomb, JoinRound, PlayCard, Rules, SitOut, apply, legal_actions, new_round
from gostop.engine.events import Bombed, BonusCaptured, Captured, Shaken
from gostop.engine.testing import scripted_deal
from gostop.engine.views import view

A, B, C, D = 0, 1, 2, 3


def test_bomb_of_a_shaken_month_takes_its_cards_out_of_the_revealed_hand() -> None:
    rules = Rules.preset("classic", players=4, chongtong=False)
    # B holds three 1월 and a bonus 쌍피; once C sits out, the bonus is replaced by the 4th 1월.
    deal = scripted_deal(rules, [[], [0, 1, 2, 48]], [5, 9, 13, 17, 21, 25], [3])
    state, _ = new_round(rules, 1, deal=deal)
    state, _ = apply(state, JoinRound())
    state, events = apply(state, SitOut())
    assert BonusCaptured(B, 48, "hand", 3) in events
    assert state.order == (A, B, D) and state.seats[B].hand == (0, 1, 2, 3, 6, 11, 16)

    state, _ = apply(state, PlayCard(4))
    state, events = apply(state, PlayCard(0, shake=True))  # no 1월 on the floor: 흔들기, 0 is laid
    assert Shaken(B, 1, (0, 1, 2, 3)) in events
    assert state.seats[B].revealed == (1, 2, 3)
    state, _ = apply(state, PlayCard(8))
    state, _ = apply(state, PlayCard(10))
    assert state.to_move == B and 0 in state.floor and Bomb(1) in legal_actions(state)

    state, events = apply(state, Bomb(1))
    assert Bombed(B, 1, (1, 2, 3), 2) in events and Captured(B, (1, 2, 3, 0)) in events
    assert state.seats[B].hand == (6, 11, 16)
    assert state.seats[B].revealed == ()
    for viewer in (A, C, D):
        seen = view(state, viewer).seats[B]
        assert (seen.hand, seen.revealed, seen.hand_size) == ((), (), 3)
    own = view(state, B).seats[B]
    assert (own.hand, own.revealed) == ((6, 11, 16), ())


def test_bomb_keeps_the_revealed_cards_of_another_shaken_month() -> None:
    rules = Rules.preset("standard", players=3)
    # A shakes 6월 (21 and 22 stay revealed), then bombs 7월.
    deal = scripted_deal(rules, [[20, 21, 22, 24, 25, 26, 4], [28, 29], [40, 41]], [1, 9, 5, 27, 12, 16],
                         [0, 36, 44, 8, 38, 46, 34])
    state, _ = new_round(rules, 1, deal=deal)
    for action in (PlayCard(20, shake=True), PlayCard(28), PlayCard(40)):
        state, _ = apply(state, action)
    assert state.seats[A].revealed == (21, 22)
    state, events = apply(state, Bomb(7))
    assert Bombed(A, 7, (24, 25, 26), 2) in events
    assert state.seats[A].hand == (4, 21, 22)
    assert state.seats[A].revealed == (21, 22)
    for viewer in (B, C):
        seen = view(state, viewer).seats[A]
        assert (seen.hand, seen.revealed, seen.hand_size) == ((21, 22), (21, 22), 3)
