"""A bot turn whose push was lost is pushed again by the next read of its game once it has waited
the claim time, and not before: a bot seat's game cannot stall because a process died between its
commit and the push.

The loss is made for real: the server pushes the turn into its Redis stream and the test deletes
the entry (``XDEL``), as if the push had never arrived. No bot worker runs (the server's Redis
store has none in process), so the streams hold only what the server pushed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer, command
from testkit.servers import OPERATOR, Api, config, running_server

CLAIM_IDLE_MS = 2000
SHARDS = 8


@pytest.fixture
async def bot_server(service_redis: RedisServer) -> AsyncIterator[Api]:
    """A server over Redis with a short claim time and no bot worker."""
    cfg = config(service_redis.url, bot_claim_idle_ms=CLAIM_IDLE_MS, bot_shards=SHARDS)
    async with running_server(cfg) as api:
        yield api


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def queued_turns(redis: RedisServer, game_id: str) -> list[tuple[str, str, dict[str, str]]]:
    """The queued bot turns of ``game_id``: (stream, entry id, fields), over every shard."""
    out = []
    for shard in range(SHARDS):
        key = f"gostop:bots:{{s{shard}}}"
        reply = command(redis.port, "XRANGE", key, "-", "+")
        assert isinstance(reply, list)
        for entry in reply:
            assert isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], list)
            flat = [_text(v) for v in entry[1]]
            fields = dict(zip(flat[::2], flat[1::2], strict=True))
            if fields["game"] == game_id:
                out.append((key, _text(entry[0]), fields))
    return out


async def test_a_lost_bot_turn_is_pushed_again_by_a_read_after_the_claim_time(
    bot_server: Api, service_redis: RedisServer
) -> None:
    req = pb.CreateGameRequest(preset="standard", players=2, seed=7)
    req.bot_seats.add(seat=0, bot="mcts", budget_ms=150)
    req.bot_seats.add(seat=1, bot="mcts", budget_ms=150)
    created = await bot_server.stub.CreateGame(req, metadata=OPERATOR)
    pushed_at = time.monotonic()
    game_id, seat = created.game_id, created.view.to_move
    expected = {"game": game_id, "version": "1", "seat": str(seat), "bot": "mcts", "budget": "150", "kind": "act"}

    turns = queued_turns(service_redis, game_id)
    assert [{k: f[k] for k in expected} for _, _, f in turns] == [expected], "the creation pushed the first turn"
    key, entry_id, _ = turns[0]
    assert command(service_redis.port, "XDEL", key, entry_id) == 1  # the push is lost

    get = pb.GetGameRequest(game_id=game_id)
    claim = CLAIM_IDLE_MS / 1000

    async def read_at(since: float, after: float) -> None:
        """GetGame ``after`` seconds past ``since`` (a spectator's read nudges like any other)."""
        await asyncio.sleep(max(0.0, since + after - time.monotonic()))
        assert (await bot_server.stub.GetGame(get)).version == 1

    # Reads before the claim time: the turn may still be on its way to a worker; nothing is pushed.
    await read_at(pushed_at, 0)
    await read_at(pushed_at, claim / 2)
    assert time.monotonic() - pushed_at < claim, "the machine is too slow for this test"
    assert queued_turns(service_redis, game_id) == []

    # A read after the claim time pushes the turn again, once.
    await read_at(pushed_at, claim + 0.1)
    repushed_at = time.monotonic()
    repushed = queued_turns(service_redis, game_id)
    assert [{k: f[k] for k in expected} for _, _, f in repushed] == [expected]
    await read_at(repushed_at, 0)
    await read_at(repushed_at, claim / 2)
    assert time.monotonic() - repushed_at < claim, "the machine is too slow for this test"
    assert len(queued_turns(service_redis, game_id)) == 1, "a read within the claim time pushed it again"

    # Still unanswered a claim time later: pushed once more.
    await read_at(repushed_at, claim + 0.1)
    assert [f["version"] for _, _, f in queued_turns(service_redis, game_id)] == ["1", "1"]
