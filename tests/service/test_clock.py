"""The turn clock (docs/clock.md) on real servers over each store (memory, Redis and a 3-master
Redis Cluster): games whose people never act finish by timeouts, away and back, auto-play, the
bank, the race at the deadline, the bot-worker key before a deadline, settings refused, presence,
and replays of clocked games."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisClusterServers
from testkit.servers import OPERATOR, Api, Game, expect, key_md, replay, running_bot_server

BOT_KEY = "bot-key-for-clock-tests-0123456789"


def clocked(decision_ms: int = 1000, bank_ms: int = 0, away_after: int = 0, auto_pause_ms: int | None = 0,
            policy: str = "") -> pb.ClockSettings:
    clock = pb.ClockSettings(decision_ms=decision_ms, bank_ms=bank_ms, away_after=away_after, policy=policy)
    if auto_pause_ms is not None:
        clock.auto_pause_ms = auto_pause_ms
    return clock


async def create(api: Api, clock: pb.ClockSettings, seed: int = 7, rounds: int = 1, **fields: Any) -> Game:
    """A clocked game whose first round is played (operator seeds from ``seed`` up)."""
    for attempt in range(seed, seed + 50):
        req = pb.CreateGameRequest(preset="standard", seed=attempt, rounds=rounds, clock=clock, **fields)
        out = await api.stub.CreateGame(req, metadata=OPERATOR)
        if out.view.phase != pb.PHASE_OVER:
            return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)
    raise AssertionError("no seed deals a round that is played")


async def until(api: Api, game: Game, done: Any, limit: float = 30.0) -> pb.GameView:
    """The spectator's view once ``done(view)`` holds (the clock's moves happen meanwhile)."""
    deadline = time.monotonic() + limit
    while True:
        view = (await api.get(game)).view
        if done(view):
            return view
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {limit} s: version {view.version}, phase {view.phase}")
        await asyncio.sleep(0.02)


def logged(log: pb.GetGameLogResponse, kind: str) -> list[tuple[int, Any]]:
    return [(entry.version, getattr(e, kind)) for entry in log.entries for e in entry.events if e.HasField(kind)]


@pytest.fixture(scope="module", name="cluster_url")
def cluster_url_fixture() -> Iterator[str]:
    """``cluster_url``: a 3-master Redis Cluster for this module's games (clock zsets per shard)."""
    with RedisClusterServers(3) as cluster:
        yield cluster.url


@pytest.fixture(scope="module", name="store_url",
                params=["memory", "redis", pytest.param("cluster", marks=pytest.mark.slow)])
def store_url_fixture(request: pytest.FixtureRequest) -> str:
    """``store_url`` over the session's backends and a Redis Cluster as well (the clock keeps its
    deadlines per shard, and the shards spread over the masters)."""
    if request.param == "redis":
        return str(request.getfixturevalue("service_redis").url)
    if request.param == "cluster":
        return str(request.getfixturevalue("cluster_url"))
    return ""


@pytest.fixture(name="api")
async def api_fixture(store_url: str) -> Any:
    async with running_bot_server(store_url, BOT_KEY) as api:
        yield api


@pytest.mark.parametrize(("field", "value"), [
    ("decision_ms", 999), ("decision_ms", 600_001), ("decision_ms", -1), ("bank_ms", -1), ("bank_ms", 600_001),
    ("away_after", 101), ("away_after", -3), ("auto_pause_ms", 10_001), ("auto_pause_ms", -1),
])
async def test_clock_settings_out_of_range_are_refused(api: Api, field: str, value: int) -> None:
    clock = clocked(decision_ms=2000)
    setattr(clock, field, value)
    failure = await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard", clock=clock),
                                               metadata=OPERATOR), grpc.StatusCode.INVALID_ARGUMENT, "BAD_CLOCK")
    assert field in failure.message


@pytest.mark.parametrize("policy", ["remote:anything", "nosuchbot", "greedy:depth=3", "mcts:iterations=x"])
async def test_a_clock_policy_the_server_does_not_offer_is_refused(api: Api, policy: str) -> None:
    await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard", clock=clocked(policy=policy)),
                                     metadata=OPERATOR), grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_view_tells_the_deadline_and_the_banks(api: Api) -> None:
    before = int(time.time() * 1000)
    game = await create(api, clocked(decision_ms=60_000, bank_ms=30_000, auto_pause_ms=None))
    view = (await api.get(game, 0)).view
    clock = view.clock
    assert clock.settings == pb.ClockSettings(decision_ms=60_000, bank_ms=30_000, policy="greedy", away_after=2,
                                              auto_pause_ms=1000)
    assert clock.seat == view.to_move
    assert before <= clock.started_ms <= int(time.time() * 1000)
    assert clock.bank_from_ms == clock.started_ms + 60_000
    assert clock.deadline_ms == clock.bank_from_ms + 30_000
    assert [(s.bank_ms, s.away, s.auto_play, s.timeouts) for s in view.seats] == [(30_000, False, False, 0)] * 2
    unclocked = await api.create()
    assert not (await api.get(unclocked, 0)).view.HasField("clock")


async def test_people_who_never_act_finish_by_timeouts_away_after_two(api: Api) -> None:
    game = await create(api, clocked(decision_ms=1000, away_after=2, auto_pause_ms=0))
    final = await until(api, game, lambda v: v.match.finished, limit=60)
    log = await api.log(game)
    assert [e.version for e in log.entries] == list(range(1, final.version + 1))
    played = logged(log, "played_for_seat")
    assert len(played) == final.version - 1  # every step after the deal was the clock's
    causes = {seat: [p.cause for _, p in played if p.seat == seat] for seat in range(2)}
    for seat in range(2):
        assert causes[seat][:2] == ["timeout", "timeout"] and set(causes[seat][2:]) <= {"away"}
    assert sorted((a.seat, a.away) for _, a in logged(log, "seat_away")) == [(0, True), (1, True)]
    assert all(p.policy == "greedy" and p.action.WhichOneof("kind") for _, p in played)
    assert len({entry.request_id for entry in log.entries[1:]}) == len(log.entries) - 1
    assert [(s.away, s.timeouts) for s in final.seats] == [(True, 2), (True, 2)]


async def test_the_worker_key_is_refused_before_the_deadline(api: Api) -> None:
    game = await create(api, clocked(decision_ms=30_000))
    view = (await api.get(game, 0)).view
    mover = view.clock.seat
    worker = key_md(BOT_KEY) + (("x-bot-seat", str(mover)),)
    failure = await expect(api.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=worker),
                           grpc.StatusCode.PERMISSION_DENIED, "NOT_A_BOT_SEAT")
    assert failure.info.metadata["deadline_ms"] == str(view.clock.deadline_ms)
    legal = (await api.get(game, mover)).view.legal_actions
    req = pb.SubmitActionRequest(game_id=game.id, expected_version=game.version, action_id=legal[0].id,
                                 request_id=f"bot.act.{game.version}.{mover}")
    await expect(api.stub.SubmitAction(req, metadata=worker), grpc.StatusCode.PERMISSION_DENIED, "NOT_A_BOT_SEAT")
    assert (await api.get(game)).view.version == game.version  # nothing moved
    other = key_md(BOT_KEY) + (("x-bot-seat", str(1 - mover)),)  # owes nothing: a stale turn, dropped
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=other),
                 grpc.StatusCode.FAILED_PRECONDITION, "NO_DECISION_DUE")
    plain = await api.create()
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id=plain.id), metadata=worker),
                 grpc.StatusCode.PERMISSION_DENIED, "NOT_A_BOT_SEAT")


async def test_a_person_late_to_the_deadline_gets_turn_timed_out(api: Api) -> None:
    game = await create(api, clocked(decision_ms=1000, away_after=5))
    view = (await api.get(game, 0)).view
    mover = view.clock.seat
    legal = (await api.get(game, mover)).view.legal_actions
    await until(api, game, lambda v: v.version > game.version)
    failure = await expect(api.submit(game, mover, legal[0].id, version=game.version),
                           grpc.StatusCode.ABORTED, "TURN_TIMED_OUT")
    assert int(failure.info.metadata["current_version"]) > game.version


async def test_a_person_who_acts_comes_back_and_spends_the_bank(api: Api) -> None:
    game = await create(api, clocked(decision_ms=1000, bank_ms=1500, away_after=1, auto_pause_ms=3000))
    first = (await api.get(game)).view
    timed_out = first.clock.seat
    # The first decision times out after its time and its whole bank: the seat is away at once.
    view = await until(api, game, lambda v: v.seats[timed_out].away)
    assert view.seats[timed_out].bank_ms == 0 and view.seats[timed_out].timeouts == 1
    assert view.version == first.version + 1
    rng = random.Random(3)
    for _ in range(20):  # the people act in time (the away seat too, before its pause ends)
        view = (await api.get(game)).view
        if view.phase == pb.PHASE_OVER:
            break
        own = (await api.get(game, view.to_move)).view
        if view.seats[view.to_move].bank_ms and own.clock.seat == view.to_move:
            pass
        result = await api.submit(game, view.to_move, rng.choice(own.legal_actions).id, version=own.version)
        if view.to_move == timed_out:
            assert not result.result.view.seats[timed_out].away
            assert any(e.HasField("seat_away") and not e.seat_away.away for e in result.result.events)
            return
    raise AssertionError("the away seat never had a decision")


async def test_bank_is_charged_with_the_time_past_the_decision(api: Api) -> None:
    game = await create(api, clocked(decision_ms=1000, bank_ms=5000))
    view = (await api.get(game)).view
    mover = view.clock.seat
    own = (await api.get(game, mover)).view
    await asyncio.sleep(1.6)
    result = await api.submit(game, mover, own.legal_actions[0].id, version=own.version)
    bank = result.result.view.seats[mover].bank_ms
    assert 3000 <= bank <= 4400
    assert result.result.view.seats[mover].timeouts == 0


async def test_auto_play_makes_decisions_after_the_pause_and_an_action_turns_it_off(api: Api) -> None:
    game = await create(api, clocked(decision_ms=60_000, auto_pause_ms=200))
    view = (await api.get(game)).view
    seat = view.clock.seat
    request = pb.SetAutoPlayRequest(game_id=game.id, on=True, request_id="auto-on-1")
    turned = await api.stub.SetAutoPlay(request, metadata=game.md(seat))
    assert turned.version == view.version + 1 and turned.view.seats[seat].auto_play
    assert turned.view.clock.deadline_ms == turned.view.clock.started_ms + 200
    again = await api.stub.SetAutoPlay(request, metadata=game.md(seat))  # the same request: the same answer
    assert again.version == turned.version
    moved = await until(api, game, lambda v: v.version > turned.version, limit=10)
    log = await api.log(game)
    assert logged(log, "auto_play_set") == [(turned.version, pb.AutoPlaySet(seat=seat, on=True))]
    assert [p.cause for _, p in logged(log, "played_for_seat")][:1] == ["auto_play"]
    # The person acts: auto-play goes off.
    while moved.to_move != seat and moved.phase != pb.PHASE_OVER:
        other = (await api.get(game, moved.to_move)).view
        await api.submit(game, moved.to_move, other.legal_actions[0].id, version=other.version)
        moved = (await api.get(game)).view
    if moved.phase == pb.PHASE_OVER:
        pytest.skip("the round ended before the seat decided again")
    own = (await api.get(game, seat)).view
    if own.version != moved.version or not own.legal_actions:
        pytest.skip("the clock moved first")
    result = await api.submit(game, seat, own.legal_actions[0].id, version=own.version)
    assert not result.result.view.seats[seat].auto_play
    assert any(e.HasField("auto_play_set") and not e.auto_play_set.on for e in result.result.events)


async def test_auto_play_steps_do_not_make_a_pending_move_stale(api: Api) -> None:
    game = await create(api, clocked(decision_ms=60_000, auto_pause_ms=10_000))
    view = (await api.get(game)).view
    mover = view.clock.seat
    own = (await api.get(game, mover)).view
    other = 1 - mover
    for on in (True, False):
        await api.stub.SetAutoPlay(pb.SetAutoPlayRequest(game_id=game.id, on=on), metadata=game.md(other))
    result = await api.submit(game, mover, own.legal_actions[0].id, version=own.version)
    assert result.result.version == own.version + 3


async def test_set_auto_play_needs_a_clock_and_a_seat_token(api: Api) -> None:
    plain = await api.create()
    await expect(api.stub.SetAutoPlay(pb.SetAutoPlayRequest(game_id=plain.id, on=True), metadata=plain.md(0)),
                 grpc.StatusCode.FAILED_PRECONDITION, "NO_CLOCK")
    game = await create(api, clocked(decision_ms=60_000))
    await expect(api.stub.SetAutoPlay(pb.SetAutoPlayRequest(game_id=game.id, on=True)),
                 grpc.StatusCode.UNAUTHENTICATED)
    worker = key_md(BOT_KEY) + (("x-bot-seat", "0"),)
    await expect(api.stub.SetAutoPlay(pb.SetAutoPlayRequest(game_id=game.id, on=True), metadata=worker),
                 grpc.StatusCode.PERMISSION_DENIED)


async def test_a_clocked_game_reads_the_same_from_the_store(api: Api) -> None:
    """A process that did not play the game (its cache forgotten) reads the same views: the clock
    comes from the log entries."""
    game = await create(api, clocked(decision_ms=1000, away_after=1, auto_pause_ms=0), rounds=1)
    await until(api, game, lambda v: v.version >= 6)
    assert api.server is not None
    games = api.server.games
    views = [(await api.get(game, seat)).view for seat in range(2)]
    games.repository.cache.clear()
    games._views.clear()
    again = [(await api.get(game, seat)).view for seat in range(2)]
    for before, after in zip(views, again, strict=True):
        if before.version == after.version:
            assert before == after


async def test_a_seat_is_connected_while_a_stream_of_it_is_open(store_url: str) -> None:
    async with running_bot_server(store_url, BOT_KEY, presence_grace_ms=300) as api:
        game = await create(api, clocked(decision_ms=60_000))
        assert [s.connected for s in (await api.get(game)).view.seats] == [False, False]
        request = pb.WatchGameRequest(game_id=game.id, after_version=game.version, include_views=True,
                                      whole_versions=True)
        stream = api.stub.WatchGame(request, metadata=game.md(1))
        await until(api, game, lambda v: v.seats[1].connected)
        stream.cancel()
        # Back within the grace: nothing changes.
        again = api.stub.WatchGame(request, metadata=game.md(1))
        version = (await api.get(game)).view.version
        await asyncio.sleep(0.6)
        assert (await api.get(game)).view.version == version
        again.cancel()
        view = await until(api, game, lambda v: not v.seats[1].connected)
        log = await api.log(game)
        assert [(p.seat, p.connected) for _, p in logged(log, "seat_presence")] == [(1, True), (1, False)]
        assert view.version == version + 1


async def test_a_seat_held_by_a_process_that_died_is_disconnected_by_another(store_url: str) -> None:
    """The process holding a seat's stream dies (it neither ends the stream nor renews its
    registration): another process disconnects the seat once the registration ran out."""
    if not store_url:
        pytest.skip("one process holds every stream of the memory store")
    async with running_bot_server(store_url, BOT_KEY, presence_grace_ms=300) as api, \
            running_bot_server(store_url, BOT_KEY, presence_grace_ms=300) as dying:
        game = await create(api, clocked(decision_ms=60_000))
        request = pb.WatchGameRequest(game_id=game.id, after_version=game.version, whole_versions=True)
        stream = dying.stub.WatchGame(request, metadata=game.md(1))
        await until(api, game, lambda v: v.seats[1].connected)
        assert dying.server is not None
        presence = dying.server.games.presence
        for task in (presence._refresher, presence._sweeper):  # the process dies: nothing renews,
            assert task is not None
            task.cancel()
        presence.leave = lambda game_id, seat: None  # type: ignore[method-assign]  # nor says the stream ended
        stream.cancel()
        await until(api, game, lambda v: not v.seats[1].connected)
        log = await api.log(game)
        assert [(p.seat, p.connected) for _, p in logged(log, "seat_presence")] == [(1, True), (1, False)]


async def test_a_replay_of_a_game_with_timeouts_gives_the_same_events(api: Api) -> None:
    """Timeouts, away seats, auto-play and presence in the log: the engine's steps replayed from
    the log give exactly its events, twice, and the table's steps are marked as such."""
    game = await create(api, clocked(decision_ms=1000, away_after=1, auto_pause_ms=0))
    await api.stub.SetAutoPlay(pb.SetAutoPlayRequest(game_id=game.id, on=True), metadata=game.md(0))
    await until(api, game, lambda v: v.match.finished, limit=60)
    log = await api.log(game)
    assert {e.kind for e in log.entries} == {"create", "action", "table"}
    table_steps = [e for e in log.entries if e.kind == "table"]
    assert table_steps and all(not e.HasField("action") for e in table_steps)
    first, by_version = replay(log, 1)
    again, by_version_again = replay(log, 1)
    assert by_version == by_version_again and first == again
    assert first.finished


def test_the_next_round_dealt_for_a_seat_is_written_without_an_action_regression() -> None:
    """The clock's move at a round's end deals the next round: its PlayedForSeat has no action (the
    wire refused to write the id -1 standing for it, and the match stopped there)."""
    from gostop.engine.table_events import PlayedForSeat
    from gostop.wire.convert import event_from_pb, event_to_pb

    dealt = event_to_pb(PlayedForSeat(1, "greedy", -1, "away"))
    assert not dealt.played_for_seat.HasField("action") and dealt.played_for_seat.cause == "away"
    assert event_from_pb(dealt) == PlayedForSeat(1, "greedy", -1, "away")
    played = event_to_pb(PlayedForSeat(0, "greedy", 7, "timeout"))
    assert played.played_for_seat.HasField("action")
    assert event_from_pb(played) == PlayedForSeat(0, "greedy", 7, "timeout")
