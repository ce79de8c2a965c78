"""Every numeric rule is bounded by what the wire and the settlement carry, and no running total of a
match can pass the wire's int64, however many rounds it lasts.

Regression: ``overrides.point_value = 2^62`` was accepted; the action that ended the round then
failed with INTERNAL every time ("Value out of range" converting the settlement), and with 2^58 an
open-ended match wedged once its running money passed int64.
"""

from __future__ import annotations

import dataclasses
import random

import grpc
import pytest

from gostop.engine import IllegalAction, InvalidRules, Playout, Rules, new_match, next_round
from gostop.engine.rules import COUNT_MAX, POINTS_MAX, ROUND_MONEY_MAX, TOTAL_MAX
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.servers import OPERATOR, Api, expect

BOUNDED = {
    "go_threshold": POINTS_MAX, "chongtong_points": POINTS_MAX, "first_ttadak_payment": POINTS_MAX,
    "heodang_points": POINTS_MAX, "gwang_sale_price": POINTS_MAX, "meongbak_min_yeol": COUNT_MAX,
    "pibak_max_pi": COUNT_MAX, "heodang_turns": COUNT_MAX,
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_numeric_rules_are_bounded(name: str) -> None:
    limit = BOUNDED[name]
    assert getattr(Rules.preset("classic", **{name: limit}), name) == limit
    with pytest.raises(InvalidRules) as err:
        Rules.preset("classic", **{name: limit + 1})
    assert err.value.field == name
    assert f"at most {limit:,}" in str(err.value)


def test_three_ppeok_points_and_ppeok_payments_are_bounded() -> None:
    Rules.preset("house", three_ppeok_points=POINTS_MAX, ppeok_payments=(POINTS_MAX,) * 3)
    with pytest.raises(InvalidRules) as err:
        Rules.preset("house", three_ppeok_points=POINTS_MAX + 1)
    assert err.value.field == "three_ppeok_points"
    with pytest.raises(InvalidRules) as err:
        Rules.preset("house", ppeok_payments=(1, POINTS_MAX + 1))
    assert err.value.field == "ppeok_payments"


@pytest.mark.parametrize("preset", ["standard", "classic", "house", "arcade"])
def test_point_value_beyond_what_a_round_can_carry_is_refused(preset: str) -> None:
    bound = Rules.preset(preset).round_points_bound
    most = ROUND_MONEY_MAX // bound
    assert Rules.preset(preset, point_value=most).point_value == most
    for value in (most + 1, 1 << 58, 1 << 62):
        with pytest.raises(InvalidRules) as err:
            Rules.preset(preset, point_value=value)
        assert err.value.field == "point_value"


def _largest_rules(preset: str, players: int) -> Rules:
    """Every point rule at its bound and the largest point value these rules allow."""
    big = Rules.preset(preset, players=players, chongtong=True, chongtong_points=POINTS_MAX,
                       first_ttadak_payment=POINTS_MAX, gwang_sale_price=POINTS_MAX,
                       ppeok_payments=(POINTS_MAX,) * 3)
    return big.replace(point_value=ROUND_MONEY_MAX // big.round_points_bound)


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 3), ("classic", 4), ("house", 2)])
def test_rounds_at_the_largest_rules_settle_within_the_bound_and_convert(preset: str, players: int) -> None:
    rules = _largest_rules(preset, players)
    rng = random.Random(preset)
    for seed in range(40):
        play = Playout(new_match(rules, seed)[0].round)
        while not play.over:
            play.apply(rng.choice(play.legal_actions()))
        settlement = play.state().settlement
        assert settlement is not None
        assert max(abs(p) for p in settlement.points) <= rules.round_points_bound
        convert.settlement_to_pb(settlement)  # every amount fits its wire field


def test_an_open_ended_match_stops_before_its_totals_could_overflow() -> None:
    rules = _largest_rules("standard", 2)
    match, _ = new_match(rules, 3, rounds=0)
    play = Playout(match.round)
    rng = random.Random(3)
    while not play.over:
        play.apply(rng.choice(play.legal_actions()))
    from gostop.engine.match import _record

    match = _record(dataclasses.replace(match, round=play.state()))
    room = TOTAL_MAX - rules.round_points_bound * rules.point_value
    near = dataclasses.replace(match, money=(room, -room))
    next_round(near)  # still room for the worst round
    over = dataclasses.replace(match, money=(room + 1, -room - 1))
    with pytest.raises(IllegalAction) as err:
        next_round(over)
    assert err.value.code == "MATCH_TOTAL_LIMIT"
    points = dataclasses.replace(match, points=(TOTAL_MAX - rules.round_points_bound + 1, 0))
    with pytest.raises(IllegalAction):
        next_round(points)


@pytest.mark.parametrize("value", [1 << 62, 1 << 58, (1 << 63) - 1])
async def test_create_refuses_a_point_value_the_settlement_cannot_carry(api: Api, value: int) -> None:
    req = pb.CreateGameRequest(preset="standard", overrides=pb.Rules(point_value=value), rounds=0)
    err = await expect(api.stub.CreateGame(req, metadata=OPERATOR), grpc.StatusCode.INVALID_ARGUMENT,
                       "INVALID_RULES")
    assert err.info.metadata["field"] == "point_value"


async def test_a_round_at_the_largest_point_value_commits(api: Api) -> None:
    """The largest accepted point value settles through the API: no INTERNAL at the round's end."""
    most = ROUND_MONEY_MAX // Rules.preset("standard").round_points_bound
    game = await api.create("standard", overrides=pb.Rules(point_value=most), rounds=2)
    rng = random.Random(5)
    for _ in range(2):
        results = await api.play_round(game, rng)
        assert results[-1].HasField("settlement")
        if game.version and (await api.get(game)).view.match.finished:
            break
        await api.next_round(game)
