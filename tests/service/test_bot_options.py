"""Bot options against the budget: a bot seat's options cannot buy more work than its budget, and a
decision past its deadline stops its work instead of running on where nobody waits for it.

``CreateGame`` through a real in-process server (the memory store and its in-process worker); the
worker's decider on real views of a real game, with a real bot (``mcts``, or a plugin written to a
temporary module).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from gostop.bots import MctsBot, make_bot
from gostop.engine import Rules, legal_actions, new_round, view
from gostop.service.bot_queue import BotTurn
from gostop.service.programs.botworker import Decider
from gostop.v1 import game_pb2 as pb
from testkit.servers import OPERATOR, Api, config, expect, running_server

SLACK = 2.0
"""The decider's wall-clock allowance: it waits ``budget × SLACK + 1 s`` for a decision."""


@contextlib.asynccontextmanager
async def bot_server(**settings: Any) -> AsyncIterator[Api]:
    async with running_server(config("", bot_keys="bot-key-for-option-tests-0123", **settings)) as api:
        yield api


async def create(api: Api, bot: str, budget_ms: int = 0) -> pb.CreateGameResponse:
    req = pb.CreateGameRequest(preset="standard", players=2, seed=1)
    req.bot_seats.add(seat=1, bot=bot, budget_ms=budget_ms)
    response: pb.CreateGameResponse = await api.stub.CreateGame(req, metadata=OPERATOR)
    return response


async def seat_view(api: Api) -> tuple[str, pb.GameView]:
    """A game of two people a few plays in (so a bot has plays to infer hands from) and the view
    of the seat to move, with several legal actions to search."""
    game = await api.create("standard", 2, seed=3)
    for _ in range(40):
        seat, own = await api.to_move(game)
        assert seat >= 0, "the round ended early"
        if len(own.plays) >= 4 and len(own.legal_actions) > 2:
            return game.id, own
        game.version = (await api.submit(game, seat, own.legal_actions[0].id)).result.version
    raise AssertionError("no position with plays and a choice")


async def test_regression_bot_options_that_outrun_the_budget_are_refused() -> None:
    """Options that set a bot's work beyond the seat's budget, or that no bot reads, are refused at
    ``CreateGame`` with a reason, instead of being accepted and burning a core after the decision
    has timed out."""
    async with bot_server(bot_budget_ms=200) as api:
        refused = [
            ("mcts:millis=86400000", 0, "BOT_OPTION_OVER_BUDGET"),
            ("mcts:cpu_millis=inf", 0, "BAD_BOT_OPTION"),
            ("mcts:cpu_millis=nan", 0, "BAD_BOT_OPTION"),
            ("mcts:cpu_millis=300", 0, "BOT_OPTION_OVER_BUDGET"),
            ("mcts:millis=150", 100, "BOT_OPTION_OVER_BUDGET"),
            ("mcts:cpu_millis=0", 0, "BAD_BOT_OPTION"),
            ("mcts:iterations=0", 0, "BAD_BOT_OPTION"),
            ("mcts:iterations=1.5", 0, "BAD_BOT_OPTION"),
            ("mcts:belief_samples=1000000000", 0, "BAD_BOT_OPTION"),
            ("mcts:reply_depth=100000", 0, "BAD_BOT_OPTION"),
            ("mcts:mode=deep", 0, "BAD_BOT_OPTION"),
            ("mcts:infer=maybe", 0, "BAD_BOT_OPTION"),
            ("mcts:epsilon=2", 0, "BAD_BOT_OPTION"),
            ("mcts:no_such_option=1", 0, "BAD_BOT_OPTION"),
            ("mcts:seed=5", 0, "BAD_BOT_OPTION"),
            ("greedy:depth=3", 0, "BAD_BOT_OPTION"),
            ("random:cpu_millis=10", 0, "BAD_BOT_OPTION"),
        ]
        for bot, budget, reason in refused:
            failure = await expect(create(api, bot, budget), grpc.StatusCode.INVALID_ARGUMENT, reason)
            assert failure.info.metadata["field"] == "bot_seats", bot
            assert failure.message.startswith(f"bot {bot!r}: "), failure.message
        over = await expect(create(api, "mcts:millis=86400000"), grpc.StatusCode.INVALID_ARGUMENT)
        assert over.info.metadata["budget_ms"] == "200" and "86400000" in over.message
        for bot, budget in [("mcts:iterations=100000000000", 0), ("mcts:cpu_millis=200", 0),
                            ("mcts:millis=100,cpu_millis=50,mode=uct,infer=false", 100),
                            ("mcts:belief_samples=64,reply_depth=2,epsilon=0.1", 0), ("mcts", 0)]:
            created = await create(api, bot, budget)
            assert created.bot_seats[0].bot == bot


@pytest.mark.parametrize("bot", ["mcts:iterations=100000", "mcts:millis=30000", "mcts:cpu_millis=30000",
                                 "mcts:belief_samples=100000,iterations=10"])
async def test_regression_a_stored_bot_option_cannot_outrun_the_budget(bot: str) -> None:
    """A bot seat whose options ask for more than its budget (stored by a game created before the
    service refused them): the worker bounds the search by the budget, so the decision is the bot's
    own (``ok``, not a timeout) and no search outlives it."""
    budget_ms = 50
    async with bot_server() as api:
        game_id, own = await seat_view(api)
    turn = BotTurn(game_id, own.version, own.viewer, bot, budget_ms)
    decider = Decider(slack=SLACK)
    try:
        decision = await decider.decide(turn, own)
        assert decision.outcome == "ok", f"{bot}: {decision.outcome} after {decision.seconds:.2f} s"
        assert decision.seconds < budget_ms / 1000 * SLACK + 1.0
        cpu = time.process_time()
        await asyncio.sleep(0.5)
        assert time.process_time() - cpu < 0.15, "a search is still running after its decision"
    finally:
        decider.close()


SPINNER = '''
"""A plugin bot that works until it is told to stop (the deadline test)."""
import threading
import time

BOTS = []


class Spinner:
    name = "spinner"

    def __init__(self, seed=0):
        self.stop = threading.Event()
        self.done = threading.Event()
        BOTS.append(self)

    def cancel(self):
        self.stop.set()

    def choose(self, view, legal):
        end = time.monotonic() + 20.0
        try:
            while not self.stop.is_set() and time.monotonic() < end:
                sum(range(1000))
            return legal[0]
        finally:
            self.done.set()
'''


async def test_regression_a_decision_past_its_deadline_is_told_to_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bot that overruns its deadline is decided by the fallback, and the bot is told to stop
    (``cancel()``): its work ends, instead of running on in a thread nobody waits for."""
    (tmp_path / "spinbots.py").write_text(SPINNER)
    monkeypatch.syspath_prepend(str(tmp_path))
    async with bot_server() as api:
        game_id, own = await seat_view(api)
    decider = Decider(("spinbots:Spinner",), slack=SLACK)
    try:
        decision = await decider.decide(BotTurn(game_id, own.version, own.viewer, "spinbots:Spinner", 20), own)
        assert decision.outcome == "timeout"
        bots = sys.modules["spinbots"].BOTS
        assert len(bots) == 1
        assert await asyncio.to_thread(bots[0].done.wait, 1.0), "the bot still works after its deadline"
    finally:
        decider.close()
        for bot in sys.modules["spinbots"].BOTS:
            bot.cancel()


def test_regression_a_cancelled_mcts_search_stops() -> None:
    """``MctsBot.cancel()`` from another thread ends its search at the next batch: the decision
    returns at once with the best action so far (a legal one)."""
    state, _ = new_round(Rules.preset("standard", players=2), 5)
    seat_view_ = view(state, state.to_move)
    legal = legal_actions(state)
    bot = make_bot("mcts", seed=1, iterations=10_000_000)
    assert isinstance(bot, MctsBot)
    result: list[Any] = []

    def search() -> None:
        result.append(bot.choose(seat_view_, legal))

    import threading

    thread = threading.Thread(target=search, daemon=True)
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    bot.cancel()
    thread.join(5.0)
    assert not thread.is_alive(), "the search ran on after cancel()"
    assert time.monotonic() - started < 0.5
    assert result and result[0] in legal
    assert 0 < bot.last_iterations < 10_000_000
