"""The browser tests' secrecy check reads card ids from the API's messages by field name: counts
named like card fields are not card ids."""

from __future__ import annotations

from gostop.v1 import game_pb2 as pb
from testkit.web import cards_in


def test_reach_counts_are_not_read_as_cards_regression() -> None:
    """A seat's 2 captured 광 were read as card id 2, a hidden card at that version: a false leak."""
    seat = pb.SeatView(hand=[11, 14], captured=[40, 43])
    seat.reach.gwang.captured = 2
    seat.reach.gwang.open = 3
    assert cards_in(pb.GameView(floor=[19], seats=[seat])) == {11, 14, 19, 40, 43}
