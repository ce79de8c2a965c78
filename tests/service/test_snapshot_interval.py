"""Snapshots only every ``SNAPSHOT_EVERY`` versions: a commit in between writes its
log entry and stored response and keeps the last snapshot; a load that finds the snapshot behind the
game's version replays the log entries after it. These tests hold that against the real stores
(memory and Redis): a process without the game in its cache gets, at every version, the very match
the committing process holds; games written with a snapshot at every version (the layout of before)
load and play on; a log entry that cannot be replayed is corrupt data (``DATA_LOSS``), never
``INTERNAL``."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable

import grpc
import orjson
import pytest
from redis.asyncio import Redis

from gostop.engine import Match, legal_actions, match_apply, match_to_bytes
from gostop.engine.actions import action_id
from gostop.service import compact
from gostop.service import config as config_module
from gostop.service.auth import Authenticator, Caller
from gostop.service.config import Config
from gostop.service.games import Games
from gostop.service.memory_store import MemoryStore
from gostop.service.metrics import Metrics
from gostop.service.repository import SNAPSHOT_EVERY
from gostop.service.store_api import Store
from gostop.service.stores import open_store
from gostop.v1 import game_pb2 as pb
from testkit.servers import Api, Game, config, expect, running_server

AUTH = Authenticator(b"k" * 32, (), ())


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    opened = open_store(store_url or None)
    try:
        yield opened
    finally:
        await opened.close()


def _games(store: Store) -> Games:
    """A fresh ``Games`` over ``store``: another process, its cache empty."""
    return Games(store, AUTH, Config(), Metrics())


class _Player:
    """Plays one game through a ``Games`` with random legal actions, rounds and next rounds."""

    def __init__(self, games: Games, created: pb.CreateGameResponse, rng: random.Random) -> None:
        self.games, self.id, self.rng = games, created.game_id, rng
        self.seats: dict[int, Caller] = {
            s.seat: AUTH.caller((("authorization", f"Bearer {s.token}"),)) for s in created.seats}
        self.version = 1

    @classmethod
    async def create(cls, games: Games, seed: int, rounds: int) -> _Player:
        request = pb.CreateGameRequest(preset="standard", players=2, seed=seed, rounds=rounds)
        return cls(games, await games.create(request, AUTH.caller(())), random.Random(seed))

    async def held(self) -> Match:
        """The match the playing process holds (its cache, at the version it last committed); a
        finished match is not kept, so that one is read from the store."""
        hit = self.games.repository.cache.get(self.id)
        if hit is None:
            version, match, *_ = await self.games.repository.load(self.id)
            assert version == self.version and match.finished
            return match
        assert hit.version == self.version
        return hit.match

    async def step(self) -> bool:
        """One step (an action, or the next round once a round is over); False when the match is over."""
        match = await self.held()
        if match.finished:
            return False
        if match.round.over:
            deal = pb.StartNextRoundRequest(game_id=self.id, expected_version=self.version,
                                            request_id=f"next-{self.version}")
            result = (await self.games.start_next_round(deal, self.seats[0])).result
        else:
            seat = match.round.to_move
            action = self.rng.choice(legal_actions(match.round))
            request = pb.SubmitActionRequest(game_id=self.id, expected_version=self.version,
                                             request_id=f"r-{self.version}", action_id=action_id(action))
            result = (await self.games.submit(request, self.seats[seat])).result
        assert result.version == self.version + 1
        self.version = result.version
        return True


async def test_a_load_without_the_cache_is_at_every_version_the_match_the_committing_process_holds(
        store: Store) -> None:
    """A two-round match played to its end: after every commit, a process that never saw the game
    loads it (the snapshot, then the log entries after it replayed) and holds the same match, byte for
    byte; the snapshot lags by up to ``SNAPSHOT_EVERY - 1`` versions and never at a round's end."""
    player = await _Player.create(_games(store), seed=11, rounds=2)
    lags: list[int] = []
    while True:
        snapshot = await store.load(player.id)
        assert snapshot is not None and snapshot.version == player.version
        lags.append(player.version - snapshot.blob_version)
        held = await player.held()
        if held.round.over:
            assert snapshot.at is None, f"version {player.version} ends a round: its snapshot is written"
        version, loaded, *_ = await _games(store).repository.load(player.id)
        assert version == player.version
        assert match_to_bytes(loaded) == match_to_bytes(held), f"version {player.version}"
        if not await player.step():
            break
    assert held.finished and held.round_no == 2
    assert max(lags) == SNAPSHOT_EVERY - 1 and lags.count(0) < len(lags) // 2, lags


async def test_a_process_without_the_cache_plays_on_and_answers_retries_alike(store: Store) -> None:
    """Turns alternate between two processes (each commit is a cache miss for the other, which
    replays the log): the match is the one a single process plays, and a retry of any acknowledged
    request, on either process, answers the very bytes of its first answer."""
    one, other = _games(store), _games(store)
    player = await _Player.create(one, seed=5, rounds=1)
    expected = await player.held()
    answers: dict[int, tuple[pb.SubmitActionRequest, Caller, pb.SubmitActionResponse]] = {}
    while not expected.finished:
        seat = expected.round.to_move
        action = player.rng.choice(legal_actions(expected.round))
        expected = match_apply(expected, action, seat)[0]
        request = pb.SubmitActionRequest(game_id=player.id, expected_version=player.version,
                                         request_id=f"r-{player.version}", action_id=action_id(action))
        response = await player.games.submit(request, player.seats[seat])
        answers[player.version] = (request, player.seats[seat], response)
        player.version = response.result.version
        assert match_to_bytes(await player.held()) == match_to_bytes(expected)
        # The other process makes the next move: its cache is a version behind (or empty).
        player.games = other if player.games is one else one
        version, loaded, *_ = await player.games.repository.load(player.id, player.version)
        assert (version, match_to_bytes(loaded)) == (player.version, match_to_bytes(expected))
    assert len(answers) > SNAPSHOT_EVERY
    for request, caller, response in answers.values():
        for games in (one, other, _games(store)):
            assert await games.submit(request, caller) == response


async def test_games_stored_with_a_snapshot_at_every_version_load_and_play_on(store: Store) -> None:
    """A game written as before (a snapshot at every version, Redis's ``blob`` at the version) is
    read by the code of now, which plays it on with fewer snapshots; both kinds of load agree."""
    before = _games(store)
    before.repository.snapshot_every = 1
    player = await _Player.create(before, seed=23, rounds=1)
    for _ in range(5):
        assert await player.step()
        snapshot = await store.load(player.id)
        assert snapshot is not None and snapshot.at is None
    now = _games(store)
    version, match, *_ = await now.repository.load(player.id)
    assert (version, match_to_bytes(match)) == (player.version, match_to_bytes(await player.held()))
    player.games = now
    while await player.step():
        version, loaded, *_ = await _games(store).repository.load(player.id)
        assert match_to_bytes(loaded) == match_to_bytes(await player.held())
    assert player.version > 6


async def test_gostop_snapshot_every_sets_the_interval_and_1_leaves_no_snapshot_lagging(store: Store) -> None:
    """``GOSTOP_SNAPSHOT_EVERY`` is the interval: 7 lets a snapshot lag by up to six versions; a
    process set to 1 (what an operator does before deploying an engine that plays a step
    differently) writes a snapshot at its first commit of a game, and none lags from then on."""
    sparse = Games(store, AUTH, config_module.load(env={"GOSTOP_SNAPSHOT_EVERY": "7"}), Metrics())
    player = await _Player.create(sparse, seed=31, rounds=1)
    lags = []
    for _ in range(12):
        assert await player.step()
        snapshot = await store.load(player.id)
        assert snapshot is not None
        lags.append(player.version - snapshot.blob_version)
    assert lags[:6] == [1, 2, 3, 4, 5, 0] and max(lags) <= 6, lags  # (created at version 1, a snapshot at 7)
    player.games = Games(store, AUTH, config_module.load(env={"GOSTOP_SNAPSHOT_EVERY": "1"}), Metrics())
    await player.games.repository.load(player.id)  # (the new process reads the game: a replay of the lagging versions)
    while await player.step():
        snapshot = await store.load(player.id)
        assert snapshot is not None and snapshot.at is None and snapshot.version == player.version
    with pytest.raises(ValueError, match="GOSTOP_SNAPSHOT_EVERY must be 1-64"):
        config_module.load(env={"GOSTOP_SNAPSHOT_EVERY": "0"})
    with pytest.raises(ValueError, match="GOSTOP_SNAPSHOT_EVERY must be 1-64"):
        config_module.load(env={"GOSTOP_SNAPSHOT_EVERY": "65"})


# ------------------------------------------------------------------ corrupt log entries


Rewrite = Callable[[bytes], bytes | None]
"""A corruption of one stored log entry: its new bytes, or None to remove it."""


def _doc(raw: bytes) -> dict[str, object]:
    doc: dict[str, object] = orjson.loads(compact.unpack("entry", raw))
    return doc


def _edited(**changes: object) -> Rewrite:
    return lambda raw: compact.pack("entry", orjson.dumps({**_doc(raw), **changes}))


async def _rewrite_log(api: Api, store_url: str, game: Game, version: int, rewrite: Rewrite) -> None:
    """Corrupt the stored log entry of ``version`` in place, in the real store's own data."""
    assert api.server is not None
    store = api.server.store
    if isinstance(store, MemoryStore):
        log = store._games[game.id].log
        new = rewrite(log[version - 1])
        assert new is not None or version == len(log), "the memory store can lose only its last entry"
        if new is None:
            del log[version - 1]
        else:
            log[version - 1] = new
        return
    raw = Redis.from_url(store_url)
    try:
        key = f"gostop:{{{game.id}}}:log"
        entries: list[tuple[bytes, dict[bytes, bytes]]] = await raw.xrange(key)  # type: ignore[assignment]
        await raw.delete(key)
        for stream_id, fields in entries:
            if stream_id == f"{version}-0".encode():
                new = rewrite(fields[b"e"])
                if new is None:
                    continue
                fields = {**fields, b"e": new}
            await raw.xadd(key, dict(fields), id=stream_id)  # type: ignore[arg-type]
        await raw.expire(key, 3600)
    finally:
        await raw.aclose()


@pytest.mark.parametrize("label, rewrite", [
    ("undecodable", lambda raw: b"\xff\x01not deflate"),
    ("not JSON", lambda raw: compact.pack("entry", b"{not json")),
    ("no action", _edited(action=None)),
    ("unknown action id", _edited(action=9999)),
    ("another seat", lambda raw: _edited(seat=1 - int(_doc(raw)["seat"]))(raw)),  # type: ignore[call-overload]
    ("another version", _edited(v=2)),
    ("another kind", _edited(kind="create")),
    ("other events", _edited(events=[])),
    ("removed", lambda raw: None),
])
async def test_a_log_entry_that_does_not_replay_is_data_loss(store_url: str, label: str, rewrite: Rewrite) -> None:
    """The log entries between the snapshot and the game's version are replayed on a cache miss: one
    that cannot be decoded, is of another version or kind, names a step the rules refuse or whose
    step gives other events than it logged (the engine is deterministic: a stored step replays to
    its events, unless the engine is not the one that committed it) is ``DATA_LOSS`` /
    ``SNAPSHOT_CORRUPT`` for that game, as a corrupt snapshot is; other games stay readable."""
    async with running_server(config(store_url, snapshot_cache=0)) as api:
        game = await api.create("standard", players=2, seed=31)
        other = await api.create("standard", players=2, seed=32)
        rng = random.Random(31)
        for _ in range(SNAPSHOT_EVERY + 2):
            seat, view = await api.to_move(game)
            assert seat >= 0, "the round lasts longer than this test plays"
            game.version = (await api.submit(game, seat, rng.choice(view.legal_actions).id)).result.version
        assert api.server is not None
        snapshot = await api.server.store.load(game.id)
        assert snapshot is not None and snapshot.at == SNAPSHOT_EVERY and snapshot.version == game.version
        target = game.version if label == "removed" else game.version - 1
        await _rewrite_log(api, store_url, game, target, rewrite)
        await expect(api.get(game), grpc.StatusCode.DATA_LOSS, "SNAPSHOT_CORRUPT")
        await expect(api.submit(game, 0, 0), grpc.StatusCode.DATA_LOSS, "SNAPSHOT_CORRUPT")
        assert (await api.get(other)).version == other.version
