"""WatchGame with ``include_views``: a seat learns its moves from its stream alone, each view equal
to GetGame's at that version, over the memory store and Redis."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from gostop.client import GostopClient, WatchStream
from gostop.service.embedded import EmbeddedServer
from gostop.v1 import game_pb2 as pb
from testkit.servers import OPERATOR_KEY, config, running_server


@pytest.fixture(scope="module", name="client")
def client_fixture(store_url: str) -> Iterator[GostopClient]:
    with EmbeddedServer(config(store_url)) as server, GostopClient(server.target, operator_key=OPERATOR_KEY) as client:
        yield client


def _next_view(stream: WatchStream, events: list[pb.WatchGameResponse]) -> pb.WatchGameResponse:
    """The stream's next view message; the events before it go to ``events``."""
    for item in stream:
        if item.HasField("view"):
            assert not item.HasField("event")
            return item
        events.append(item)
    raise AssertionError("the stream ended without a view")


def test_seats_play_a_whole_match_from_their_streams_alone(client: GostopClient) -> None:
    game = client.create_game("standard", seed=20261204)
    rng = random.Random(7)
    streams = [client.watch(game, game.version, seat, include_views=True) for seat in range(2)]
    try:
        views = [_next_view(stream, []) for stream in streams]  # at once: the stream starts at the game's version
        while True:
            for seat, item in enumerate(views):
                assert item.version == views[0].version
                assert item.view == client.get_game(game, seat)
            if item.view.match.finished:
                break
            mover = next((seat for seat, item in enumerate(views) if item.view.legal_actions), None)
            if mover is None:  # the round is over: seat 0 deals the next one
                result = client.start_next_round(game, 0, expected_version=item.version)
            else:
                legal = views[mover].view.legal_actions
                result = client.submit_action(game, mover, rng.choice(legal).id, expected_version=item.version)
            events: list[list[pb.WatchGameResponse]] = [[], []]
            views = [_next_view(stream, events[seat]) for seat, stream in enumerate(streams)]
            for seat in range(2):
                assert views[seat].version == result.version
                assert {e.version for e in events[seat]} == {result.version}
        for stream in streams:
            assert list(stream) == []  # the match is over: the streams end
    finally:
        for stream in streams:
            stream.close()


def test_catching_up_sends_the_newest_view_only(client: GostopClient) -> None:
    game = client.create_game("standard", seed=5)
    for _ in range(6):
        client.act(game, next(s for s in range(2) if client.get_game(game, s).legal_actions),
                   lambda v: v.legal_actions[0].id)
    version = client.get_game(game, 0).version
    events: list[pb.WatchGameResponse] = []
    with client.watch(game, 0, 1, include_views=True) as stream:
        first = _next_view(stream, events)
    assert first.version == version
    assert first.view == client.get_game(game, 1)
    assert sorted({e.version for e in events}) == list(range(1, version + 1))


def test_a_spectators_stream_carries_the_spectators_view(client: GostopClient) -> None:
    game = client.create_game("standard", seed=11)
    with client.watch(game, game.version, None, include_views=True) as stream:
        first = _next_view(stream, [])
        assert first.view == client.get_game(game, None)
        assert not first.view.legal_actions
        assert not any(seat.hand for seat in first.view.seats)  # a spectator sees no hand



async def test_a_finished_match_leaves_nothing_cached_regression() -> None:
    """A night's thousands of finished matches filled each process's game and view caches to
    their bounds (RSS grew by ~28 kB per game in a soak): nothing of a finished match is kept."""
    async with running_server(config()) as api:
        game = await api.create("standard", seed=3, rounds=1)
        rng = random.Random(3)
        while True:
            views = [(await api.get(game, seat)).view for seat in range(2)]
            if views[0].match.finished:
                break
            mover = next(seat for seat, view in enumerate(views) if view.legal_actions)
            result = await api.submit(game, mover, rng.choice(views[mover].legal_actions).id, views[mover].version)
            game.version = result.result.version
        assert api.server is not None
        games = api.server.games
        assert game.id not in games.repository.cache
        assert not [key for key in games._views if key[0] == game.id]


def test_whole_versions_carry_what_the_event_messages_carry(client: GostopClient) -> None:
    """A stream of whole versions (one message per version) carries the same events, in the same
    order, and the same views as a stream of an event per message; each message is one version."""
    game = client.create_game("standard", seed=41, rounds=1)
    rng = random.Random(41)
    while not (view := client.get_game(game, 1)).match.finished:
        mover = next((s for s in range(2) if client.get_game(game, s).legal_actions), None)
        if mover is None:
            break
        client.act(game, mover, lambda v: rng.choice(v.legal_actions).id)
    for after in (0, 5):
        metadata = [("authorization", f"Bearer {game.token(1)}")]
        singles, wholes = ([*client._stub.WatchGame(pb.WatchGameRequest(
            game_id=game.game_id, after_version=after, include_views=True, whole_versions=whole), metadata=metadata)]
            for whole in (False, True))
        versions = [m.version for m in wholes]
        assert versions == sorted(set(versions)) == list(range(after + 1, view.version + 1))
        assert all(not m.HasField("event") for m in wholes)
        unpacked = [(m.version, "event", e) for m in wholes for e in m.events]
        unpacked += [(m.version, "view", m.view) for m in wholes if m.HasField("view")]
        assert sorted(unpacked, key=lambda x: x[0]) == [
            (m.version, "view", m.view) if m.HasField("view") else (m.version, "event", m.event) for m in singles]
