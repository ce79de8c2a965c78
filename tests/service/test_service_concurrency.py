"""Many clients racing on one game, over the memory store and a real Redis: every version commits
exactly once, no event is lost or duplicated, and concurrent retries of one request id all get the
one stored response."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import grpc

from gostop.engine import action_id, match_from_bytes, match_to_bytes
from gostop.service import compact
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.servers import (
    Api,
    Game,
    decode_error,
    replay,
)

CLIENTS = 32


async def _attempt(api: Api, game: Game, seat: int, action: int, version: int, request_id: str
                   ) -> pb.SubmitActionResponse | tuple[grpc.StatusCode, str]:
    try:
        return await api.submit(game, seat, action, version=version, request_id=request_id)
    except grpc.aio.AioRpcError as error:
        err = decode_error(error)
        return err.code, err.info.reason


async def _check_log(api: Api, game: Game, committed: list[str]) -> pb.GetGameLogResponse:
    """Versions 1..n each once; the committed request ids each exactly once, in the log."""
    log = await api.log(game)
    versions = [e.version for e in log.entries]
    assert versions == list(range(1, len(versions) + 1))
    assert versions[-1] == (await api.get(game)).version
    ids = Counter(e.request_id for e in log.entries[1:])
    assert all(n == 1 for n in ids.values()), "a request committed twice"
    assert sorted(ids) == sorted(committed)
    # The log replays to the stored snapshot (written at its own version, which the game's may have
    # passed): nothing lost, nothing applied twice.
    assert api.server is not None
    snap = await api.server.store.load(game.id)
    assert snap is not None and snap.version == versions[-1]
    stored = match_from_bytes(compact.unpack("snap", snap.blob))
    upto = pb.GetGameLogResponse()
    upto.CopyFrom(log)
    del upto.entries[snap.blob_version:]
    assert match_to_bytes(replay(upto, stored.rounds)[0]) == compact.unpack("snap", snap.blob)
    return log


async def test_conflicting_submissions_commit_once_per_version(api: Api) -> None:
    game = await api.create("standard", players=3, seed=101)
    rng = random.Random(101)
    committed: list[str] = []
    for step in range(6):
        seat, v = await api.to_move(game)
        version = game.version
        jobs = []
        for i in range(CLIENTS):
            if i % 4 == 3:  # a seat that is not to move
                jobs.append(_attempt(api, game, (seat + 1) % 3, 0, version, f"s{step}-wrong{i}"))
            else:
                jobs.append(_attempt(api, game, seat, rng.choice(v.legal_actions).id, version, f"s{step}-c{i}"))
        outcomes = await asyncio.gather(*jobs)
        wins = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, pb.SubmitActionResponse)]
        assert len(wins) == 1, f"step {step}: {len(wins)} commits at version {version}"
        i, won = wins[0]
        assert won.result.version == version + 1
        committed.append(f"s{step}-c{i}")
        for j, o in enumerate(outcomes):
            if j == i:
                continue
            assert not isinstance(o, pb.SubmitActionResponse)
            if j % 4 == 3:
                assert o in ((grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"),
                             (grpc.StatusCode.ABORTED, "STALE_VERSION")), o
            else:
                assert o == (grpc.StatusCode.ABORTED, "STALE_VERSION"), o
        game.version = version + 1
        assert (await api.get(game)).version == version + 1
    await _check_log(api, game, committed)


async def test_racing_clients_play_a_whole_round(api: Api) -> None:
    game = await api.create("classic", players=4, seed=202)
    committed: list[str] = []
    stale = 0

    async def client(n: int) -> None:
        nonlocal stale
        rng = random.Random(n)
        for attempt in range(10_000):
            spectator = await api.get(game)
            if spectator.view.phase == pb.PHASE_OVER:
                return
            seat = spectator.view.to_move
            own = await api.get(game, seat)
            if not own.view.legal_actions:  # the game moved between the two reads
                continue
            rid = f"c{n}-{attempt}"
            outcome = await _attempt(api, game, seat, rng.choice(own.view.legal_actions).id, own.version, rid)
            if isinstance(outcome, pb.SubmitActionResponse):
                assert outcome.result.version == own.version + 1
                committed.append(rid)
            else:
                assert outcome in ((grpc.StatusCode.ABORTED, "STALE_VERSION"),
                                   (grpc.StatusCode.FAILED_PRECONDITION, "ROUND_OVER")), outcome
                stale += 1
        raise AssertionError("the round never ended")

    await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(CLIENTS))), 60)
    assert stale > 0, "the clients never actually raced"
    log = await _check_log(api, game, committed)
    assert len(log.entries) == 1 + len(committed)


async def test_concurrent_retries_of_one_request_get_one_response(api: Api) -> None:
    game = await api.create("standard", seed=303)
    seat, v = await api.to_move(game)
    action = v.legal_actions[0].id
    outcomes = await asyncio.gather(*(_attempt(api, game, seat, action, 1, "the-one") for _ in range(CLIENTS)))
    assert all(isinstance(o, pb.SubmitActionResponse) for o in outcomes), outcomes
    blobs = {o.SerializeToString() for o in outcomes if isinstance(o, pb.SubmitActionResponse)}
    assert len(blobs) == 1
    assert (await api.get(game)).version == 2
    await _check_log(api, game, ["the-one"])


async def test_concurrent_reuse_of_one_request_id_with_different_content(api: Api) -> None:
    game = await api.create("standard", seed=404)
    seat, v = await api.to_move(game)
    choices = [a.id for a in v.legal_actions]
    outcomes = await asyncio.gather(*(
        _attempt(api, game, seat, choices[i % len(choices)], 1, "shared") for i in range(CLIENTS)))
    wins = [o for o in outcomes if isinstance(o, pb.SubmitActionResponse)]
    assert wins and all(w == wins[0] for w in wins), "every success is the one stored response"
    log = await _check_log(api, game, ["shared"])
    won = action_id(convert.action_from_pb(log.entries[1].action))
    for i, o in enumerate(outcomes):
        if choices[i % len(choices)] == won:
            assert isinstance(o, pb.SubmitActionResponse), o
        else:
            assert o == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED"), o
    assert (await api.get(game)).version == 2
