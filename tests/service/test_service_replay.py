"""Whole random matches through the API for every preset and player count, over the memory store and
a real Redis; each match's log, replayed through the engine, gives the same events, the same views,
the same settlements and the very snapshot the server stored."""

from __future__ import annotations

import random

import pytest

from gostop.engine import Rules, action_id, match_to_bytes, redact, view
from gostop.engine.render import action_label
from gostop.service import compact
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.configs import CONFIGS, config_id
from testkit.servers import (
    Api,
    Game,
    replay,
    rules_from_pb,
)

ROUNDS = 3


async def _play_match(api: Api, game: Game, rng: random.Random) -> list[tuple[int, pb.TurnResult]]:
    """Play every round of the match; each step's acting seat and turn result."""
    steps: list[tuple[int, pb.TurnResult]] = []
    while True:
        results = await api.play_round(game, rng)
        for result in results:
            steps.append((result.view.viewer, result))
        spectator = (await api.get(game)).view
        assert spectator.phase == pb.PHASE_OVER
        assert results[-1].HasField("settlement") or not results, "the round-ending step carries the settlement"
        if spectator.match.finished:
            return steps
        seat = rng.randrange(len(game.tokens))
        steps.append((seat, await api.next_round(game, seat)))


async def _check_replay(api: Api, game: Game, steps: list[tuple[int, pb.TurnResult]], rules: Rules) -> None:
    log = await api.log(game)
    assert rules_from_pb(log.rules) == rules
    assert len(log.entries) == game.version == 1 + len(steps)
    match, events = replay(log, ROUNDS)
    assert match.finished and match.round_no == ROUNDS

    # What each step answered is the logged step, as its caller may see it.
    for (seat, result), entry in zip(steps, log.entries[1:], strict=True):
        assert result.version == entry.version
        assert entry.seat == seat
        assert entry.HasField("action") == (not any(e.HasField("dealt") for e in result.events))
        assert list(result.events) == [convert.event_to_pb(redact(e, seat)) for e in events[entry.version]]

    # The stored snapshot is the replayed match, byte for byte.
    assert api.server is not None
    snap = await api.server.store.load(game.id)
    assert snap is not None and snap.version == game.version
    assert compact.unpack("snap", snap.blob) == match_to_bytes(match)

    # Every viewer's view, the settlement and the match totals agree.
    for seat in [-1, *range(rules.players)]:
        served = await api.get(game, None if seat < 0 else seat)
        assert served.version == game.version
        assert served.view == convert.view_to_pb(view(match.round, seat), match, game.id, game.version)
    final = (await api.get(game)).view
    assert match.round.settlement is not None
    assert final.settlement == convert.settlement_to_pb(match.round.settlement)
    assert steps[-1][1].settlement == final.settlement
    assert final.match.finished and final.match.round_no == ROUNDS
    assert [list(final.match.points), list(final.match.money), list(final.match.wins), list(final.match.losses),
            list(final.match.draws)] == [list(match.points), list(match.money), list(match.wins),
                                         list(match.losses), list(match.draws)]


@pytest.mark.parametrize("preset_players", CONFIGS, ids=[config_id(c) for c in CONFIGS])
async def test_random_match_replays_from_its_log(api: Api, preset_players: tuple[str, int]) -> None:
    preset, players = preset_players
    seed = 1000 + CONFIGS.index(preset_players)
    game = await api.create(preset, players=players, seed=seed, rounds=ROUNDS)
    steps = await _play_match(api, game, random.Random(seed))
    await _check_replay(api, game, steps, Rules.preset(preset, players=players))


async def test_match_with_overrides_replays_from_its_log(api: Api) -> None:
    overrides = pb.Rules(go_threshold=3, point_value=500, sseul_mode=pb.SSEUL_MODE_POINT,
                         last_turn_no_steal=pb.LastTurnEvents(events=[]), ppeok_payments=pb.PpeokPayments(points=[2]))
    game = await api.create("standard", seed=77, rounds=ROUNDS, overrides=overrides)
    rules = Rules.preset("standard", go_threshold=3, point_value=500, sseul_mode="point",
                         last_turn_no_steal=frozenset(), ppeok_payments=(2,))
    steps = await _play_match(api, game, random.Random(77))
    await _check_replay(api, game, steps, rules)


def test_view_conversion_keeps_no_plays_alive_regression() -> None:
    """Regression: a memo of converted plays (50,000 of them) kept every recent play record and
    its message alive between calls, feeding the collector's slowest passes in a server.
    Converting views must leave nothing behind."""
    import gc

    from gostop.engine import legal_action_ids, match_apply, new_match
    from gostop.engine.actions import action_from_id

    rules = Rules.preset("standard", players=2)

    positions = []
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        match, _ = new_match(rules, seed, 1)
        while not match.finished:
            ids = legal_action_ids(match.round)
            match, _ = match_apply(match, action_from_id(rng.choice(ids)), match.round.to_move)
            positions.append((view(match.round, 0), match))
    convert.view_to_pb(*positions[-1], "g", 1)  # first use fills the converter's per-type tables once
    gc.collect()
    before = len(gc.get_objects())
    for seat_view, match in positions:
        convert.view_to_pb(seat_view, match, "g", 1)
    gc.collect()
    assert len(gc.get_objects()) - before < 10


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_view_conversion_writes_every_legal_action_and_seat_field(config: tuple[str, int]) -> None:
    """The legal actions come from bytes built once per action id, and fields at their default
    are not written: the message still says exactly what the engine's view says."""
    from gostop.engine import legal_action_ids, match_apply, new_match
    from gostop.engine.actions import action_from_id

    name, players = config
    rules = Rules.preset(name, players=players)
    rng = random.Random(7)
    match, _ = new_match(rules, 7, 1)
    while not match.finished:
        state = match.round
        for seat in range(-1, players):
            seat_view = view(state, seat)
            msg = convert.view_to_pb(seat_view, match, "g", 3)
            assert [(a.id, a.action, a.label) for a in msg.legal_actions] == [
                (action_id(a), convert.action_to_pb(a), action_label(a)) for a in seat_view.legal_actions
            ]
            for got, want in zip(msg.seats, seat_view.seats, strict=True):
                assert (got.seat, got.active, got.hand_size, tuple(got.hand), tuple(got.captured), got.gos) == (
                    want.seat, want.active, want.hand_size, want.hand, want.captured, want.gos
                )
                assert (got.score.pi_value, got.score.gwang, got.score.total) == (
                    want.score.pi_value, want.score.gwang, want.score.total
                )
            back = pb.GameView.FromString(msg.SerializeToString())
            assert back == msg
        ids = legal_action_ids(state)
        match, _ = match_apply(match, action_from_id(rng.choice(ids)), state.to_move)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_plays_encoded_version_by_version_match_a_fresh_encoding(config: tuple[str, int]) -> None:
    """The server keeps each game's plays encoded and extends them at every commit
    (``service.plays``): across the turns and rounds of a match, the views and snapshots built
    from them are those built from nothing."""
    from gostop.engine import legal_action_ids, match_apply, match_to_bytes, new_match, next_round
    from gostop.engine.actions import action_from_id
    from gostop.engine.serialize import plays_json
    from gostop.service.plays import round_plays

    name, players = config
    rules = Rules.preset(name, players=players)
    rng = random.Random(11)
    match, _ = new_match(rules, 11, 2)
    plays = round_plays(match)
    seen_plays = 0
    while True:
        state = match.round
        assert plays.round_no == match.round_no and plays.count == len(state.plays)
        assert plays.json == plays_json(state.plays)
        assert match_to_bytes(match, plays.json) == match_to_bytes(match)
        for seat in range(-1, players):
            seat_view = view(state, seat)
            msg = convert.view_to_pb(seat_view, match, "g", 3, plays=plays.view)
            assert msg == convert.view_to_pb(seat_view, match, "g", 3)
            assert [(p.seat, p.action, tuple(p.floor), tuple(p.piles)) for p in msg.plays] == [
                (p.seat, p.action, p.floor, p.piles) for p in state.plays
            ]
        seen_plays = max(seen_plays, len(state.plays))
        if match.finished:
            break
        if state.over:
            match, _ = next_round(match)
        else:
            ids = legal_action_ids(state)
            match, _ = match_apply(match, action_from_id(rng.choice(ids)), state.to_move)
        plays = round_plays(match, plays)
    assert seen_plays >= 5


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 3), ("classic", 4), ("house", 2)])
def test_deals_round_trip_through_the_wire(preset: str, players: int) -> None:
    from gostop.tools.tournament import make_deal

    rules = Rules.preset(preset, players=players)
    for seed in range(20):
        deal = make_deal(rules, seed)
        assert convert.deal_from_pb(convert.deal_to_pb(deal)) == deal
        assert pb.Deal.FromString(convert.deal_to_pb(deal).SerializeToString()) == convert.deal_to_pb(deal)
