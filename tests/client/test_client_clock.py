"""The Python clients and the turn clock: ``clock`` in ``create_game``, ``set_auto_play`` (blocking
and asyncio) and the clock's typed errors, against an in-process server (memory store).

The clock's decision time is ten minutes, so nothing times out while a test runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from gostop.client import (
    AsyncGostopClient,
    FailedPrecondition,
    GostopClient,
    InvalidRequest,
    RequestIdReused,
    StaleVersion,
    TurnTimedOut,
)
from gostop.service.embedded import EmbeddedServer
from gostop.v1 import game_pb2 as pb
from testkit.servers import OPERATOR_KEY, ROOT, config

SLOW_CLOCK = pb.ClockSettings(decision_ms=600_000, bank_ms=30_000)


@pytest.fixture(scope="module", name="target")
def target_fixture() -> Iterator[str]:
    with EmbeddedServer(config()) as server:
        yield server.target


def test_set_auto_play_sync(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", seed=3, clock=SLOW_CLOCK)
        assert game.view is not None
        clock = game.view.clock
        assert (clock.settings.policy, clock.settings.away_after, clock.settings.auto_pause_ms) == ("greedy", 2, 1000)
        idle = 1 - game.view.to_move
        answer = client.set_auto_play(game, idle, True, request_id="auto-on")
        assert answer.version == 2 and game.version == 2 and answer.view.seats[idle].auto_play
        assert client.set_auto_play(game, idle, True, request_id="auto-on") == answer  # a replay
        with pytest.raises(RequestIdReused):
            client.set_auto_play(game, idle, False, request_id="auto-on")
        assert client.set_auto_play(game, idle, True).version == 2  # already on: nothing changes
        off = client.set_auto_play(game, idle, False)
        assert off.version == 3 and not off.view.seats[idle].auto_play
        events = [e for e in client.log(game).entries[-1].events]
        assert events == [pb.Event(auto_play_set=pb.AutoPlaySet(seat=idle, on=False))]


def test_clock_errors_are_typed(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        with pytest.raises(InvalidRequest) as bad:
            client.create_game("standard", clock=pb.ClockSettings(decision_ms=999))
        assert bad.value.reason == "BAD_CLOCK" and bad.value.metadata == {"field": "clock.decision_ms"}
        plain = client.create_game("standard", seed=4)
        with pytest.raises(FailedPrecondition) as no_clock:
            client.set_auto_play(plain, 0, True)
        assert no_clock.value.reason == "NO_CLOCK" and no_clock.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_turn_timed_out_is_a_stale_version() -> None:
    timed_out = TurnTimedOut(grpc.StatusCode.ABORTED, "TURN_TIMED_OUT", "late", {"current_version": "5"})
    assert isinstance(timed_out, StaleVersion) and timed_out.current_version == 5


async def test_set_auto_play_async(target: str) -> None:
    async with AsyncGostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = await client.create_game("standard", seed=3, clock=SLOW_CLOCK)
        assert game.view is not None
        idle = 1 - game.view.to_move
        on = await client.set_auto_play(game, idle, True)
        assert on.version == 2 and on.view.seats[idle].auto_play and on.view.viewer == idle
        off = await client.set_auto_play(game.game_id, idle, False, token=game.token(idle))
        assert off.version == 3 and not off.view.seats[idle].auto_play


def test_the_documented_clock_calls_run(target: str) -> None:
    """docs/clients.md's turn-clock example, run as the page shows it."""
    text = (ROOT / "docs/clients.md").read_text()
    [block] = [b for b in text.split("```python\n")[1:] if "client.set_auto_play(game, idle, True)" in b]
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        scope: dict[str, Any] = {"client": client, "pb": pb}
        exec(block.split("```")[0], scope)  # the page's own code
        assert scope["game"].version == 3
