"""Bot seats against a hostile person at the table: the request ids bot workers rely on, and what
a bot turn that cannot commit does.

Real servers over each store backend (the memory store with its in-process worker; Redis with the
same worker inside the server, ``bot_worker=on``); the person plays through the gRPC API.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from gostop.engine import action_from_id, match_apply
from gostop.service.bot_queue import BotTurn, MemoryBotQueue, bot_request_id
from gostop.service.programs.botworker import BotWorker, Decider, DomainApi
from gostop.v1 import game_pb2 as pb
from testkit.servers import OPERATOR, Api, Game, decode_error, expect, replay, running_bot_server

BOT_KEY = "bot-key-for-security-tests-0123"


def turn_request_id(kind: str, version: int, seat: int) -> str:
    """The request id a bot worker submits the turn of ``seat`` at ``version`` with."""
    return bot_request_id(BotTurn("any-game", version, seat, "greedy", 200, kind))


def bot_server(store_url: str, **settings: Any) -> contextlib.AbstractAsyncContextManager[Api]:
    """A server with its in-process bot worker and this module's bot key."""
    return running_bot_server(store_url, BOT_KEY, **settings)


async def person_vs_greedy(api: Api, person_first: bool = False) -> Game:
    """A standard game, seat 0 a person and seat 1 ``greedy``, from the first operator seed whose
    first round is played (not ended at its deal) and, with ``person_first``, starts with seat 0."""
    for seed in range(1, 50):
        req = pb.CreateGameRequest(preset="standard", players=2, seed=seed)
        req.bot_seats.add(seat=1, bot="greedy")
        out = await api.stub.CreateGame(req, metadata=OPERATOR)
        if out.view.phase != pb.PHASE_OVER and (out.view.to_move == 0 or not person_first):
            return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)
    raise AssertionError("no seed from 1 to 49 deals a round that is played")


async def person_to_move(api: Api, game: Game, limit: float) -> pb.GameView:
    """The person's own view once the person must decide or the round is over (the bot plays meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        spectator = (await api.get(game)).view
        if spectator.phase == pb.PHASE_OVER:
            return spectator
        if spectator.to_move == 0:
            return (await api.get(game, 0)).view
        if loop.time() > deadline:
            raise AssertionError(f"the bot seat did not move from version {spectator.version} within {limit} s: "
                                 "the game stalled")
        await asyncio.sleep(0.01)


async def test_regression_person_cannot_squat_the_bot_request_id(store_url: str) -> None:
    """A person who commits their own move with the request id the bot will use next (the turn's
    id, ``bot.act.<version>.<seat>``) is refused; the bot keeps playing and the round ends."""
    async with bot_server(store_url) as api:
        game = await person_vs_greedy(api)
        rng = random.Random(7)
        squats = refusals = 0
        for _ in range(200):
            own = await person_to_move(api, game, limit=8.0)
            if own.phase == pb.PHASE_OVER:
                break
            action = rng.choice(own.legal_actions).id
            squat = turn_request_id("act", own.version + 1, 1)
            request = pb.SubmitActionRequest(game_id=game.id, expected_version=own.version, request_id=squat,
                                             action_id=action)
            squats += 1
            try:
                await api.stub.SubmitAction(request, metadata=game.md(0))
            except grpc.aio.AioRpcError as error:
                refused = decode_error(error)
                assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, refused
                assert refused.info.reason == "REQUEST_ID_RESERVED", refused
                assert "bot." in refused.message and refused.info.metadata["field"] == "request_id"
                refusals += 1
                await api.submit(game, 0, action, version=own.version)
        else:
            raise AssertionError("the round did not end")
        assert squats >= 2 and refusals == squats
        log = await api.log(game)
        replay(log, 1)
        assert all(e.request_id == turn_request_id("act", e.version - 1, 1) for e in log.entries if e.seat == 1), \
            "every bot move carries its turn's request id"


async def test_regression_a_bot_worker_uses_only_its_own_turns_request_id() -> None:
    """The bot-worker key acts for a bot seat; even so, of the reserved ids it may use only the one
    of the turn it plays (its seat, the expected version, the kind of call)."""
    async with bot_server("", bot_worker="off", bot_claim_idle_ms=60_000) as api:
        assert api.server is not None
        api.server.games.bot_queue = MemoryBotQueue(claim_idle_ms=60_000)
        req = pb.CreateGameRequest(preset="standard", players=2, seed=1)
        req.bot_seats.add(seat=0, bot="greedy")
        req.bot_seats.add(seat=1, bot="greedy")
        created = await api.stub.CreateGame(req, metadata=OPERATOR)
        seat = created.view.to_move
        bot = (("x-api-key", BOT_KEY), ("x-bot-seat", str(seat)))
        own = (await api.stub.GetGame(pb.GetGameRequest(game_id=created.game_id), metadata=bot)).view
        action = own.legal_actions[0].id
        for wrong in (turn_request_id("act", own.version + 1, seat), turn_request_id("act", own.version, 1 - seat),
                      turn_request_id("next_round", own.version, seat), "bot.anything"):
            await expect(api.stub.SubmitAction(pb.SubmitActionRequest(
                game_id=created.game_id, expected_version=own.version, request_id=wrong, action_id=action),
                metadata=bot), grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_RESERVED")
        right = turn_request_id("act", own.version, seat)
        first = await api.stub.SubmitAction(pb.SubmitActionRequest(
            game_id=created.game_id, expected_version=own.version, request_id=right, action_id=action), metadata=bot)
        again = await api.stub.SubmitAction(pb.SubmitActionRequest(
            game_id=created.game_id, expected_version=own.version, request_id=right, action_id=action), metadata=bot)
        assert again == first, "a turn handled twice commits once: the second gets the first one's answer"


async def test_regression_a_bot_turn_refused_for_its_request_id_does_not_stall_the_game(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A game whose bot turn's request id was taken before the service reserved them (a person's
    commit holds ``bot.act.<v>.1``): the worker's submission is refused; the worker logs and counts
    it, looks at the game again and commits the turn at that version under an id of its own,
    instead of leaving the turn to fail the same way forever."""
    async with bot_server("", bot_worker="off") as api:
        assert api.server is not None
        games = api.server.games
        queue = MemoryBotQueue(claim_idle_ms=60_000)
        games.bot_queue = queue
        game = await person_vs_greedy(api, person_first=True)
        own = (await api.get(game, 0)).view
        # The person's move, committed through the domain layer below the request-id check, as a
        # server of before the check stored it.
        version = own.version
        chosen = next(a.id for a in own.legal_actions)
        squat = turn_request_id("act", version + 1, 1)
        taken = pb.SubmitActionResponse()
        await games._commit(game.id, 0, version, squat, f"act|0|{version}|{chosen}", "action",
                            action_from_id(chosen), lambda m: match_apply(m, action_from_id(chosen), 0), taken)
        after = (await api.get(game)).view
        assert after.to_move == 1 and after.version == version + 1, "the bot's turn is owed at the squatted id"
        registry = CollectorRegistry()
        worker = BotWorker(queue, DomainApi(games), Decider(), registry=registry)
        await worker.start()
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 8.0
            while (await api.get(game)).view.version == version + 1:
                assert loop.time() < deadline, "the bot turn never committed: the game stalled"
                await asyncio.sleep(0.02)
        finally:
            await worker.stop()
        assert registry.get_sample_value("gostop_bot_turn_failures_total") == 1, "the refusal is counted"
        assert (await queue.backlog()).pending == 0, "the turn was done, not left to fail again"
        log = await api.log(game)
        replay(log, 1)
        bot_move = next(e for e in log.entries if e.version == version + 2)
        assert bot_move.seat == 1 and bot_move.request_id != squat
    out = capsys.readouterr().out
    assert "bot turn refused" in out and "REQUEST_ID_REUSED" in out
