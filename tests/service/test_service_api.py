"""The API, every RPC and every error path, over the memory store and over a real Redis, and over
the HTTP port's Connect protocol and gRPC-Web: rule sets, creation with overrides, views,
actions by id and structured, the error codes with their ``google.rpc.ErrorInfo`` details,
idempotent retries, stale versions and WatchGame streams."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import grpc
import pytest

from gostop.engine import FIELDS, HIDDEN, PRESET_PLAYERS, Rules
from gostop.service.auth import Authenticator, Caller
from gostop.v1 import game_pb2 as pb
from testkit.connect import running_http_server
from testkit.redis_server import RedisServer
from testkit.servers import (
    OPERATOR,
    SECRET,
    Api,
    Game,
    config,
    expect,
    redacted,
    replay,
    rules_from_pb,
    running_server,
    seat_md,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION

SERVERS = [("memory", "grpc"), ("redis", "grpc"), ("memory", "connect"), ("memory", "grpc-web")]


@pytest.fixture(params=SERVERS, ids=["-".join(s) for s in SERVERS], name="api")
async def api_fixture(request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    """This module's ``api``: the gRPC port over each store, and the HTTP port's protocols (the same
    domain layer behind them: one store is enough there)."""
    store, protocol = request.param
    url = request.getfixturevalue("service_redis").url if store == "redis" else ""
    if protocol == "grpc":
        async with running_server(config(url)) as api:
            yield api
    else:
        async with running_http_server(config(url), protocol) as api:
            yield api


# ------------------------------------------------------------------------------- rule sets


async def test_list_rule_sets_every_preset_and_count_with_every_field(api: Api) -> None:
    out = await api.stub.ListRuleSets(pb.ListRuleSetsRequest())
    pairs = [(r.preset, r.players) for r in out.rule_sets]
    assert sorted(pairs) == sorted((p, n) for p, counts in PRESET_PLAYERS.items() for n in counts)
    assert len(set(pairs)) == len(pairs)
    names = [f.name for f in pb.Rules.DESCRIPTOR.fields]
    assert sorted(names) == sorted(FIELDS)
    for rule_set in out.rule_sets:
        missing = [n for n in names if not rule_set.rules.HasField(n)]
        assert not missing, f"{rule_set.preset}/{rule_set.players}: unset {missing}"
        assert rule_set.rules.name == rule_set.preset and rule_set.rules.players == rule_set.players
        assert rules_from_pb(rule_set.rules) == Rules.preset(rule_set.preset, players=rule_set.players)


# -------------------------------------------------------------------------------- creation


async def test_create_returns_tokens_view_and_rules(api: Api) -> None:
    game = await api.create("classic", players=3, seed=11, rounds=2)
    created = game.created
    assert created.version == 1 and created.view.version == 1 and created.view.game_id == game.id
    assert sorted(game.tokens) == [0, 1, 2] and len(set(game.tokens.values())) == 3
    assert rules_from_pb(created.rules) == Rules.preset("classic", players=3)
    spectator = created.view
    assert spectator.viewer == -1 and spectator.preset == "classic"
    assert not spectator.legal_actions
    assert all(not s.hand and s.hand_size > 0 for s in spectator.seats if s.active)
    assert spectator.match.rounds == 2 and spectator.match.round_no == 1 and not spectator.match.finished
    assert (await api.get(game)).view == spectator


async def test_create_defaults_and_seed_determinism(api: Api) -> None:
    a = await api.create("house", seed=99)
    b = await api.create("house", seed=99)
    assert a.id != b.id
    assert len(a.tokens) == PRESET_PLAYERS["house"][0]
    assert a.created.view.match.rounds == 1
    va, vb = pb.GameView(), pb.GameView()
    va.CopyFrom(a.created.view)
    vb.CopyFrom(b.created.view)
    va.game_id = vb.game_id = ""
    assert va == vb, "the same seed deals the same game"
    open_ended = await api.create("standard", seed=3, rounds=0)
    assert open_ended.created.view.match.rounds == 0


async def test_create_with_overrides(api: Api) -> None:
    overrides = pb.Rules(go_threshold=5, point_value=250, pibak=False,
                         gukjin=pb.GUKJIN_MODE_NEVER, ppeok_payments=pb.PpeokPayments(points=[]),
                         last_turn_no_steal=pb.LastTurnEvents(events=[pb.LAST_TURN_EVENT_JJOK]))
    game = await api.create("standard", seed=5, overrides=overrides)
    expected = Rules.preset("standard", go_threshold=5, point_value=250, pibak=False, gukjin="never",
                            ppeok_payments=(), last_turn_no_steal=frozenset({"jjok"}))
    assert rules_from_pb(game.created.rules) == expected
    assert rules_from_pb((await api.log(game)).rules) == expected
    players = await api.create("classic", seed=5, overrides=pb.Rules(players=4))
    assert len(players.tokens) == 4
    same_name = await api.create("house", seed=5, overrides=pb.Rules(name="house"))
    assert same_name.created.rules.name == "house"


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(go_threshold=0)), "go_threshold"),
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(bonus_cards=1)), "bonus_cards"),
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(gukjin=99)), "gukjin"),  # type: ignore[arg-type]
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(gukjin=pb.GUKJIN_MODE_UNSPECIFIED)), "gukjin"),
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(
            last_turn_no_steal=pb.LastTurnEvents(events=[pb.LAST_TURN_EVENT_UNSPECIFIED]))), "last_turn_no_steal"),
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(
            ppeok_payments=pb.PpeokPayments(points=[1, 2, 3, 4]))), "ppeok_payments"),
        (pb.CreateGameRequest(preset="standard", players=5), "players"),
        (pb.CreateGameRequest(preset="mahjong"), "preset"),
        (pb.CreateGameRequest(preset=""), "preset"),
        (pb.CreateGameRequest(preset="standard", rounds=-1), "rounds"),
        (pb.CreateGameRequest(preset="standard", overrides=pb.Rules(name="custom")), "name"),
        (pb.CreateGameRequest(preset="arcade", players=3), "players"),
    ],
    ids=["threshold", "bonus", "enum-unknown", "enum-unspecified", "last-turn", "ppeok", "players",
         "preset", "no-preset", "rounds", "name", "arcade-3"],
)
async def test_bad_create_names_the_field(api: Api, request_: pb.CreateGameRequest, field: str) -> None:
    err = await expect(api.stub.CreateGame(request_, metadata=OPERATOR), INVALID)
    assert err.info.metadata["field"] == field


async def test_arcade_for_three_players_says_it_is_a_two_player_preset_regression(api: Api) -> None:
    """Regression: CreateGame(arcade, players=3) answered "INVALID_RULES: last_action_go: 'allowed' is
    defined for two players only", naming a rule nobody set, where a person needs to hear that arcade
    is a two-player preset."""
    err = await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="arcade", players=3), metadata=OPERATOR),
                       INVALID, "INVALID_RULES")
    assert err.info.metadata["field"] == "players"
    assert "arcade is a two-player preset: play it with 2 players" in err.message
    assert "last_action_go" not in err.message


async def test_bad_explicit_deal_is_invalid(api: Api) -> None:
    deal = pb.Deal(hands=[pb.Hand(cards=[0, 1])], floor=[2], stock=[3], dealer=0)
    await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard", deal=deal), metadata=OPERATOR),
                 INVALID, "INVALID_DEAL")


# ------------------------------------------------------------------------------ views, acts


async def test_seat_views_show_own_hand_only(api: Api) -> None:
    game = await api.create("standard", players=3, seed=21)
    for seat in game.tokens:
        v = (await api.get(game, seat)).view
        assert v.viewer == seat
        for s in v.seats:
            if s.seat == seat:
                assert len(s.hand) == s.hand_size > 0 and HIDDEN not in s.hand
            else:
                assert list(s.hand) == list(s.revealed)
        assert bool(v.legal_actions) == (seat == v.to_move)
        ids = [a.id for a in v.legal_actions]
        assert ids == sorted(ids)


async def test_submit_by_id_and_structured(api: Api) -> None:
    game = await api.create("standard", seed=4)
    seat, v = await api.to_move(game)
    first = v.legal_actions[0]
    result = (await api.submit(game, seat, first.id)).result
    assert result.version == 2 and result.view.version == 2 and result.view.viewer == seat
    played = [e.card_played for e in result.events if e.HasField("card_played")]
    assert played and played[0].seat == seat and played[0].card == first.action.play_card.card
    game.version = 2
    seat, v = await api.to_move(game)
    chosen = v.legal_actions[-1]
    req = pb.SubmitActionRequest(game_id=game.id, expected_version=2, request_id="s1", structured=chosen.action)
    result = (await api.stub.SubmitAction(req, metadata=game.md(seat))).result
    assert result.version == 3
    assert (await api.get(game)).version == 3


async def test_malformed_requests(api: Api) -> None:
    game = await api.create("standard", seed=4)
    seat, _ = await api.to_move(game)
    md = game.md(seat)
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id="no such/game"), metadata=()), INVALID,
                 "MALFORMED_GAME_ID")
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id=""), metadata=()), INVALID, "MALFORMED_GAME_ID")
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id="{x}"), metadata=()), INVALID, "MALFORMED_GAME_ID")
    await expect(api.submit(game, seat, 999), INVALID, "MALFORMED_ACTION")
    await expect(api.submit(game, seat, -1), INVALID, "MALFORMED_ACTION")
    no_action = pb.SubmitActionRequest(game_id=game.id, expected_version=1)
    err = await expect(api.stub.SubmitAction(no_action, metadata=md), INVALID, "MISSING_ACTION")
    assert err.info.metadata["field"] == "action"
    empty = pb.SubmitActionRequest(game_id=game.id, expected_version=1, structured=pb.Action())
    await expect(api.stub.SubmitAction(empty, metadata=md), INVALID, "MALFORMED_ACTION")
    off_deck = pb.SubmitActionRequest(game_id=game.id, expected_version=1,
                                      structured=pb.Action(play_card=pb.PlayCard(card=77)))
    await expect(api.stub.SubmitAction(off_deck, metadata=md), INVALID, "MALFORMED_ACTION")
    await expect(api.submit(game, seat, 0, request_id="x" * 129), INVALID, "REQUEST_ID_TOO_LONG")
    watch = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=-1))
    await expect(_drain(watch), INVALID, "BAD_VERSION")
    log = api.stub.GetGameLog(pb.GetGameLogRequest(game_id="bad game"), metadata=OPERATOR)
    await expect(log, INVALID, "MALFORMED_GAME_ID")
    assert (await api.get(game)).version == 1, "nothing was applied"


async def test_failed_preconditions(api: Api) -> None:
    game = await api.create("standard", seed=8, rounds=2)
    seat, v = await api.to_move(game)
    other = 1 - seat
    own_hand = {c for s in v.seats if s.seat == seat for c in s.hand}
    not_held = next(c for c in range(48) if c not in own_hand)
    err = await expect(api.submit(game, seat, not_held), PRECONDITION, "ILLEGAL_ACTION")
    assert "not in your hand" in err.message
    await expect(api.submit(game, seat, 230), PRECONDITION, "ILLEGAL_ACTION")  # Go while playing
    other_hand = (await api.get(game, other)).view.seats[other].hand
    await expect(api.submit(game, other, other_hand[0]), PRECONDITION, "NOT_YOUR_TURN")
    next_req = pb.StartNextRoundRequest(game_id=game.id, expected_version=1)
    await expect(api.stub.StartNextRound(next_req, metadata=game.md(0)), PRECONDITION, "ROUND_IN_PROGRESS")
    assert (await api.get(game)).version == 1

    await api.play_round(game, random.Random(8))
    over = await api.get(game, 0)
    assert over.view.phase == pb.PHASE_OVER and over.view.HasField("settlement")
    assert not over.view.match.finished
    await expect(api.submit(game, 0, 0), PRECONDITION, "ROUND_OVER")
    await api.next_round(game, seat=1)
    await api.play_round(game, random.Random(9))
    assert (await api.get(game)).view.match.finished
    await expect(api.submit(game, 0, 0), PRECONDITION, "ROUND_OVER")
    next_req = pb.StartNextRoundRequest(game_id=game.id, expected_version=game.version)
    await expect(api.stub.StartNextRound(next_req, metadata=game.md(0)), PRECONDITION, "ROUND_OVER")


async def test_unknown_game_is_not_found(api: Api) -> None:
    forged = Authenticator(SECRET.encode()).issue("NoSuchGame", 0)
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id="NoSuchGame")), grpc.StatusCode.NOT_FOUND,
                 "GAME_NOT_FOUND")
    err = await expect(
        api.stub.SubmitAction(pb.SubmitActionRequest(game_id="NoSuchGame", expected_version=1, action_id=0),
                              metadata=seat_md(forged)), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND")
    assert err.info.metadata["game_id"] == "NoSuchGame"
    await expect(api.stub.StartNextRound(pb.StartNextRoundRequest(game_id="NoSuchGame", expected_version=1),
                                         metadata=seat_md(forged)), grpc.StatusCode.NOT_FOUND)
    await expect(api.stub.GetGameLog(pb.GetGameLogRequest(game_id="NoSuchGame"), metadata=OPERATOR),
                 grpc.StatusCode.NOT_FOUND)
    await expect(_drain(api.stub.WatchGame(pb.WatchGameRequest(game_id="NoSuchGame"))), grpc.StatusCode.NOT_FOUND)


# ------------------------------------------------------------------------- stale versions


async def test_a_left_out_expected_version_is_named_in_the_error(api: Api) -> None:
    """Regression: leaving expected_version out (proto3: 0) answered "...not 0" and no more."""
    game = await api.create("simple", seed=13)
    seat, v = await api.to_move(game)
    request = pb.SubmitActionRequest(game_id=game.id, action_id=v.legal_actions[0].id, request_id="r-missing")
    err = await expect(api.stub.SubmitAction(request, metadata=seat_md(game.tokens[seat])), grpc.StatusCode.ABORTED,
                       "STALE_VERSION")
    assert "expected_version is required" in err.message and "version 1" in err.message
    err = await expect(api.submit(game, seat, v.legal_actions[0].id, version=5), grpc.StatusCode.ABORTED)
    assert "required" not in err.message


async def test_stale_version_is_aborted_with_current_version(api: Api) -> None:
    game = await api.create("simple", seed=13)
    seat, v = await api.to_move(game)
    for wrong in (0, 2, 7):
        err = await expect(api.submit(game, seat, v.legal_actions[0].id, version=wrong), grpc.StatusCode.ABORTED,
                           "STALE_VERSION")
        assert err.info.metadata["current_version"] == "1"
        assert err.info.metadata["expected_version"] == str(wrong)
    await api.submit(game, seat, v.legal_actions[0].id, version=1)
    # The same choice again at the old version: the game moved on.
    err = await expect(api.submit(game, seat, v.legal_actions[1].id, version=1), grpc.StatusCode.ABORTED)
    assert err.info.metadata["current_version"] == "2"
    next_req = pb.StartNextRoundRequest(game_id=game.id, expected_version=1)
    err = await expect(api.stub.StartNextRound(next_req, metadata=game.md(0)), grpc.StatusCode.ABORTED)
    assert err.info.metadata["current_version"] == "2"
    assert (await api.get(game)).version == 2


# ----------------------------------------------------------------------------- idempotency


async def test_idempotent_retry_returns_the_stored_response(api: Api) -> None:
    game = await api.create("standard", seed=17)
    seat, v = await api.to_move(game)
    action = v.legal_actions[0].id
    first = await api.submit(game, seat, action, version=1, request_id="req-1")
    for _ in range(3):
        again = await api.submit(game, seat, action, version=1, request_id="req-1")
        assert again.SerializeToString() == first.SerializeToString()
    assert (await api.get(game)).version == 2
    assert len((await api.log(game)).entries) == 2

    # Different content under the same id: another action, another version, another seat.
    err = await expect(api.submit(game, seat, v.legal_actions[1].id, version=1, request_id="req-1"), INVALID,
                       "REQUEST_ID_REUSED")
    assert "request_id" in err.message
    await expect(api.submit(game, seat, action, version=2, request_id="req-1"), INVALID, "REQUEST_ID_REUSED")
    game.version = 2
    nxt, v2 = await api.to_move(game)
    await expect(api.submit(game, nxt, v2.legal_actions[0].id, version=2, request_id="req-1"), INVALID,
                 "REQUEST_ID_REUSED")
    assert (await api.get(game)).version == 2

    # The game moves on; the retry still gets the first response.
    await api.submit(game, nxt, v2.legal_actions[0].id, version=2, request_id="req-2")
    late = await api.submit(game, seat, action, version=1, request_id="req-1")
    assert late.SerializeToString() == first.SerializeToString()
    assert (await api.get(game)).version == 3


async def test_without_request_id_a_repeat_is_stale(api: Api) -> None:
    game = await api.create("standard", seed=17)
    seat, v = await api.to_move(game)
    await api.submit(game, seat, v.legal_actions[0].id, version=1, request_id="")
    await expect(api.submit(game, seat, v.legal_actions[0].id, version=1, request_id=""), grpc.StatusCode.ABORTED)


async def test_start_next_round_is_idempotent(api: Api) -> None:
    game = await api.create("simple", seed=23, rounds=3)
    await api.play_round(game, random.Random(1))
    at = game.version
    req = pb.StartNextRoundRequest(game_id=game.id, expected_version=at, request_id="next")
    first = await api.stub.StartNextRound(req, metadata=game.md(0))
    assert first.result.version == at + 1
    dealt = [e for e in first.result.events if e.HasField("dealt")]
    assert dealt and all(c == HIDDEN for h in dealt[0].dealt.hands[1:] for c in h.cards)
    again = await api.stub.StartNextRound(req, metadata=game.md(0))
    assert again == first
    assert (await api.get(game)).version == at + 1
    # Another seat retrying seat 0's request id is a different request.
    await expect(api.stub.StartNextRound(req, metadata=game.md(1)), INVALID, "REQUEST_ID_REUSED")
    # The id of an action cannot be reused for a next round.
    game.version = at + 1
    seat, v = await api.to_move(game)
    await expect(api.submit(game, seat, v.legal_actions[0].id, version=at + 1, request_id="next"), INVALID,
                 "REQUEST_ID_REUSED")


async def test_retry_of_a_rejected_action_is_rejected_again(api: Api) -> None:
    """A request that failed commits nothing, so its id stays free."""
    game = await api.create("standard", seed=31)
    seat, v = await api.to_move(game)
    await expect(api.submit(game, 1 - seat, 0, version=1, request_id="r"), PRECONDITION, "NOT_YOUR_TURN")
    ok = await api.submit(game, seat, v.legal_actions[0].id, version=1, request_id="r")
    assert ok.result.version == 2


# ---------------------------------------------------------------------------------- watch


async def _drain(call: grpc.aio.UnaryStreamCall) -> list[pb.WatchGameResponse]:
    """Read a stream to its end."""
    out = []
    while (item := await call.read()) is not grpc.aio.EOF:
        out.append(item)
    return out


async def _read(call: grpc.aio.UnaryStreamCall, n: int) -> list[pb.WatchGameResponse]:
    out = []
    for _ in range(n):
        item = await asyncio.wait_for(call.read(), 10)
        assert item is not grpc.aio.EOF, "the stream ended early"
        out.append(item)
    return out


async def test_watch_streams_redacted_events_and_resumes(api: Api) -> None:
    game = await api.create("standard", seed=41, rounds=2)
    rng = random.Random(41)
    md = game.md(0)
    seen: list[tuple[int, pb.Event]] = []

    call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=0), metadata=md)
    deal = (await api.log(game)).entries[0]
    seen += [(m.version, m.event) for m in await _read(call, len(deal.events))]
    steps = 0
    while True:
        seat, v = await api.to_move(game)
        if v.phase == pb.PHASE_OVER:
            if v.match.finished:
                break
            result = await api.next_round(game, seat=1)
        else:
            result = (await api.submit(game, seat, rng.choice(v.legal_actions).id)).result
            game.version = result.version
        steps += 1
        got = await _read(call, len(result.events))
        assert {m.version for m in got} == {result.version}
        seen += [(m.version, m.event) for m in got]
        if steps % 7 == 0:
            # Disconnect at a version boundary and resume from the last version seen.
            call.cancel()
            call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=seen[-1][0]), metadata=md)
    rest = await asyncio.wait_for(_drain(call), 10)
    assert rest == [], "the stream ends once the match is finished, with nothing left over"

    log = await api.log(game)
    assert seen == redacted(log, 2, 0)
    for _, event in seen:
        if event.HasField("dealt"):
            assert all(c == HIDDEN for h in event.dealt.hands[1:] for c in h.cards)
            assert all(c != HIDDEN for c in event.dealt.hands[0].cards)

    # A finished match: a new stream replays everything (as the viewer may see it) and ends.
    replayed = await asyncio.wait_for(_drain(api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id))), 10)
    assert [(m.version, m.event) for m in replayed] == redacted(log, 2, -1)
    middle = game.version // 2
    tail = await asyncio.wait_for(
        _drain(api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=middle), metadata=md)), 10)
    assert [(m.version, m.event) for m in tail] == redacted(log, 2, 0, after=middle)
    assert await asyncio.wait_for(_drain(api.stub.WatchGame(
        pb.WatchGameRequest(game_id=game.id, after_version=game.version), metadata=md)), 10) == []


async def test_watch_resume_mid_version_with_last_complete_version(api: Api) -> None:
    """A client cut off inside a version's events resumes after its last complete version."""
    game = await api.create("standard", seed=43)
    full_deal = len((await api.log(game)).entries[0].events)
    assert full_deal >= 1
    call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id))
    seat, v = await api.to_move(game)
    result = (await api.submit(game, seat, v.legal_actions[0].id)).result
    got = await _read(call, full_deal + 1)  # the deal and the first event of version 2
    call.cancel()
    complete = max(m.version for m in got[:-1] if m.version < got[-1].version)
    resumed = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=complete))
    again = await _read(resumed, len(result.events))
    resumed.cancel()
    assert [m.event for m in again] == list(result.events)


async def test_watch_of_a_spectator_hides_every_hand(api: Api) -> None:
    game = await api.create("classic", players=4, seed=47)
    items = await _read(api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id)),
                        len((await api.log(game)).entries[0].events))
    dealt = [m.event.dealt for m in items if m.event.HasField("dealt")]
    assert dealt
    for d in dealt:
        assert all(c == HIDDEN for h in d.hands for c in h.cards)


async def test_watch_of_another_games_token_is_denied(api: Api) -> None:
    a = await api.create(seed=1)
    b = await api.create(seed=2)
    call = api.stub.WatchGame(pb.WatchGameRequest(game_id=a.id), metadata=b.md(0))
    await expect(_drain(call), grpc.StatusCode.PERMISSION_DENIED, "WRONG_GAME")



# ------------------------------------------------------------------------------ long games


async def _play_directly(api: Api, game: Game, until: int, rng: random.Random) -> None:
    """Play an open-ended match through the domain layer (no transport: fast) to version ``until``."""
    assert api.server is not None
    games = api.server.games
    current = (await games.get(pb.GetGameRequest(game_id=game.id), Caller(None, None, False, False))).view
    while game.version < until:
        seat = max(current.to_move, 0)
        caller = Caller(game.id, seat, False, False)
        if current.phase == pb.PHASE_OVER:
            req = pb.StartNextRoundRequest(game_id=game.id, expected_version=game.version)
            result = (await games.start_next_round(req, caller)).result
        else:
            if current.viewer != seat:
                current = (await games.get(pb.GetGameRequest(game_id=game.id), caller)).view
            req_a = pb.SubmitActionRequest(game_id=game.id, expected_version=game.version,
                                           action_id=rng.choice(current.legal_actions).id)
            result = (await games.submit(req_a, caller)).result
        game.version = result.version
        current = result.view


async def test_long_logs_are_read_in_pages(api: Api) -> None:
    """Stores answer at most 1000 log entries a call: the log and watch page through longer games."""
    game = await api.create("simple", seed=51, rounds=0)
    await _play_directly(api, game, 1010, random.Random(51))
    log = await api.log(game)
    assert [e.version for e in log.entries] == list(range(1, game.version + 1))
    call = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=0), metadata=game.md(1))
    streamed = await _read(call, sum(len(e.events) for e in log.entries))
    call.cancel()
    assert [(m.version, m.event) for m in streamed] == redacted(log, 0, 1)


async def test_action_limit(api: Api) -> None:
    async with running_server(config(api.server.config.redis_url if api.server else "",
                                     max_actions_per_game=4)) as limited:
        game = await limited.create("standard", seed=61)
        rng = random.Random(61)
        for _ in range(3):
            seat, v = await limited.to_move(game)
            game.version = (await limited.submit(game, seat, rng.choice(v.legal_actions).id)).result.version
        seat, v = await limited.to_move(game)
        assert game.version == 4
        await expect(limited.submit(game, seat, v.legal_actions[0].id), PRECONDITION, "GAME_TOO_LONG")


async def test_without_snapshot_cache(api: Api) -> None:
    async with running_server(config(api.server.config.redis_url if api.server else "",
                                     snapshot_cache=0)) as uncached:
        game = await uncached.create("house", players=3, seed=71, rounds=2)
        await uncached.play_round(game, random.Random(71))
        await uncached.next_round(game, 2)
        await uncached.play_round(game, random.Random(72))
        log = await uncached.log(game)
        match, _ = replay(log, 2)
        assert match.finished and len(log.entries) == game.version


async def test_corrupt_stored_game_is_data_loss(service_redis: RedisServer) -> None:
    async with running_server(config(service_redis.url)) as api:
        game = await api.create(seed=3)
        # A new version with a corrupt blob (same-version snapshots are served from the process cache).
        service_redis.command("HSET", f"gostop:{{{game.id}}}:snap", "version", "2", "blob", b"not a snapshot")
        loss = grpc.StatusCode.DATA_LOSS
        await expect(api.get(game), loss, "SNAPSHOT_CORRUPT")
        await expect(api.log(game), loss, "SNAPSHOT_CORRUPT")
        await expect(_drain(api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id))), loss, "SNAPSHOT_CORRUPT")


async def test_repeated_get_game_is_served_from_the_view_cache_until_the_game_moves(api: Api) -> None:
    """GetGame answers per (game, viewer, version) are kept: a poll at the same version gets the
    same view, a commit makes the next poll see the new version, and seats never share views."""
    game = await api.create(seed=77)
    seat, view = await api.to_move(game)
    first = await api.get(game, seat)
    again = await api.get(game, seat)
    assert again == first and again.version == game.version
    other = await api.get(game, 1 - seat)
    assert other.view.viewer == 1 - seat and other.view.seats[seat].hand != first.view.seats[seat].hand
    spectator = await api.get(game)
    assert spectator.view.viewer == -1 and not spectator.view.seats[seat].hand
    result = await api.submit(game, seat, view.legal_actions[0].id)
    moved = await api.get(game, seat)
    assert moved.version == result.result.version == game.version + 1
    assert moved.view == result.result.view


async def test_start_next_round_retried_with_its_request_id_returns_the_stored_answer(api: Api) -> None:
    game = await api.create(seed=5, rounds=2)
    await api.play_round(game, random.Random(8))
    game.version = (await api.get(game)).version
    request = pb.StartNextRoundRequest(game_id=game.id, expected_version=game.version, request_id="next-1")
    first = await api.stub.StartNextRound(request, metadata=game.md(1))
    again = await api.stub.StartNextRound(request, metadata=game.md(1))
    assert again == first and first.result.version == game.version + 1
    assert (await api.get(game)).version == game.version + 1
    other = pb.StartNextRoundRequest(game_id=game.id, expected_version=game.version, request_id="next-1")
    await expect(api.stub.StartNextRound(other, metadata=game.md(0)), INVALID, "REQUEST_ID_REUSED")


async def test_a_watcher_leaving_at_its_own_deadline_is_logged_at_info(api: Api) -> None:
    """Regression: a client's own deadline on WatchGame (the server sees CANCELLED) was a warning."""
    from structlog.testing import capture_logs

    game = await api.create("simple", seed=5)
    with capture_logs() as logs:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for _ in api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=game.version),
                                              metadata=seat_md(game.tokens[0]), timeout=0.3):
                pass
        assert err.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        for _ in range(50):
            if any(e.get("rpc") == "WatchGame" for e in logs):
                break
            await asyncio.sleep(0.05)
    [entry] = [e for e in logs if e.get("rpc") == "WatchGame"]
    assert entry["code"] == "CANCELLED" and entry["log_level"] == "info", entry
