"""Regression tests of the bugs the reliability suite found, each named after its bug."""

from __future__ import annotations

import grpc

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer
from testkit.servers import (
    config,
    expect,
    failure,
    running_server,
)


async def test_stale_cached_version_is_aborted_not_illegal_action(service_redis: RedisServer) -> None:
    """Two replicas on one Redis: replica A caches the game at version 2, replica B moves it to 3.
    An action sent to A at version 2 used to be judged by the rules on A's cached (old) copy and
    answered ILLEGAL_ACTION or NOT_YOUR_TURN; the game is not at version 2, so the answer is
    ABORTED / STALE_VERSION, as documented (and what tells a client to re-read)."""
    async with running_server(config(service_redis.url)) as a, running_server(config(service_redis.url)) as b:
        game = await a.create("standard", seed=31)
        seat, v = await a.to_move(game)
        game.version = (await a.submit(game, seat, v.legal_actions[0].id)).result.version  # A caches v2
        seat2, v2 = await b.to_move(game)
        await b.submit(game, seat2, v2.legal_actions[0].id)  # B commits v3; A's cache still holds v2
        held = {c for s in v2.seats if s.seat == seat2 for c in s.hand}
        absent = next(c for c in range(48) if c not in held)
        illegal = pb.SubmitActionRequest(game_id=game.id, expected_version=2, request_id="illegal-at-2",
                                         structured=pb.Action(play_card=pb.PlayCard(card=absent)))
        err = await expect(a.stub.SubmitAction(illegal, metadata=game.md(seat2)), grpc.StatusCode.ABORTED,
                           "STALE_VERSION")
        assert err.info.metadata["current_version"] == "3"
        other = next(s for s in game.tokens if s != seat2)
        wrong_seat = pb.SubmitActionRequest(game_id=game.id, expected_version=2, request_id="wrong-seat-at-2",
                                            action_id=v2.legal_actions[0].id)
        await expect(a.stub.SubmitAction(wrong_seat, metadata=game.md(other)), grpc.StatusCode.ABORTED,
                     "STALE_VERSION")
        assert (await a.get(game)).version == 3


async def test_undecodable_request_bytes_are_invalid_argument_not_unknown() -> None:
    """Bytes that are no valid message of the method (bad wire types, truncated fields, invalid
    UTF-8 in a string) used to fail in grpc's own deserializer, answered UNKNOWN with a message
    naming a Python exception, unlogged and uncounted; they are the caller's error."""
    async with running_server(config()) as api:
        game = await api.create(seed=1)
        for method in pb.DESCRIPTOR.services_by_name["GameService"].methods:
            path = f"/gostop.v1.GameService/{method.name}"
            for raw in (b"\xff\xff\xff", b"\x0a\x05ab", b"\x08\x80"):
                if method.server_streaming:
                    call = api.channel.unary_stream(path)(raw, metadata=game.md(0), timeout=5)
                    pending = call.read()
                else:
                    pending = api.channel.unary_unary(path)(raw, metadata=game.md(0), timeout=5)
                err = await failure(pending)
                assert (err.code, err.info.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST"), (
                    method.name, raw, err)
        assert (await api.get(game)).version == 1
