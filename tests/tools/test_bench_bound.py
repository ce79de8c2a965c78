"""``bench.domain_free``, the benchmark's bound with no domain work: after a game's first
turn every SubmitAction commits that turn's bytes again, through the real store, at the next version."""

from __future__ import annotations

import pytest

from bench.domain_free import DomainFreeGames
from gostop.engine import Match, match_from_bytes
from gostop.service import compact
from gostop.service.auth import Authenticator
from gostop.service.config import Config
from gostop.service.errors import Code, ServiceError
from gostop.service.metrics import Metrics
from gostop.service.stores import open_store
from gostop.v1 import game_pb2 as pb


async def test_later_turns_commit_the_first_turns_bytes_at_the_next_version() -> None:
    store = open_store(None)
    auth = Authenticator(b"k" * 32, (), ())
    games = DomainFreeGames(store, auth, Config(), Metrics())
    games.repository.snapshot_every = 2  # a snapshot at versions 2 and 4, none at 3
    created = await games.create(pb.CreateGameRequest(preset="standard", players=2, seed=7), auth.caller(()))
    seats = [auth.caller((("authorization", f"Bearer {s.token}"),)) for s in created.seats]
    mover = created.view.to_move

    async def submit(version: int, action: int, request_id: str) -> pb.SubmitActionResponse:
        req = pb.SubmitActionRequest(game_id=created.game_id, expected_version=version, request_id=request_id,
                                     action_id=action)
        response: pb.SubmitActionResponse = await games.submit(req, seats[mover])
        return response

    own = await games.get(pb.GetGameRequest(game_id=created.game_id), seats[mover])
    played = own.view.legal_actions[0].id
    first = await submit(1, played, "r1")
    assert first.result.version == 2
    snapshot = await store.load(created.game_id)
    assert snapshot is not None and snapshot.version == 2 and snapshot.at is None
    after_first: Match = match_from_bytes(compact.unpack("snap", snapshot.blob))

    # Later turns: no engine (the card already played is taken again, which the game would refuse),
    # the same bytes.
    second = await submit(2, played, "r2")
    between = await store.load(created.game_id)
    assert between is not None and (between.version, between.at) == (3, 2), "version 3 writes no snapshot"
    third = await submit(3, played, "r3")
    assert (second.result.version, third.result.version) == (3, 4)
    for later in (second, third):
        again = pb.SubmitActionResponse()
        again.CopyFrom(later)
        again.result.version = 2
        assert again == first
    snapshot = await store.load(created.game_id)
    assert snapshot is not None and snapshot.version == 4 and snapshot.at is None
    assert match_from_bytes(compact.unpack("snap", snapshot.blob)) == after_first

    # What it keeps of the service: the version check and the idempotent answer.
    assert await submit(3, played, "r3") == third
    with pytest.raises(ServiceError) as stale:
        await submit(2, played, "r-new")
    assert stale.value.code is Code.ABORTED
