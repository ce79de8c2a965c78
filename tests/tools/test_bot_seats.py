"""Bot seats: games where the server's bot workers play some seats.

Real servers over each store backend: the memory store with its in-process worker, and Redis
(its streams and consumer group) with the same worker inside the server (``bot_worker=on``). A
person's seat plays random legal actions through the API; the bot seats' turns are the workers'.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from gostop.engine import PRESET_PLAYERS, action_from_id
from gostop.v1 import bot_pb2, bot_pb2_grpc
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.redis_server import RedisClusterServers, RespError
from testkit.servers import OPERATOR, ROOT, Api, Game, expect, replay, running_bot_server, start_process

BOT_KEY = "bot-key-for-tests-0123456789"


def bot_server(store_url: str, **settings: Any) -> contextlib.AbstractAsyncContextManager[Api]:
    """A server with its in-process bot worker and this module's bot key."""
    return running_bot_server(store_url, BOT_KEY, **settings)


async def create(api: Api, preset: str, players: int, bots: dict[int, str], rounds: int = 1,
                 budget_ms: int = 0, metadata: Any = OPERATOR, seed: int | None = None) -> Game:
    """A new game; with the operator's key and no ``seed``, the first operator seed from 1 up whose
    first round does not end at its deal (a 총통 or a misdeal would leave the bots nothing to play)."""
    for attempt in range(1, 50):
        req = pb.CreateGameRequest(preset=preset, players=players, rounds=rounds)
        if seed is not None or metadata == OPERATOR:
            req.seed = seed if seed is not None else attempt
        for seat, bot in bots.items():
            req.bot_seats.add(seat=seat, bot=bot, budget_ms=budget_ms)
        out = await api.stub.CreateGame(req, metadata=metadata)
        if out.view.phase != pb.PHASE_OVER or seed is not None or metadata != OPERATOR:
            return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)
    raise AssertionError("no seed from 1 to 49 deals a round that is played")


async def wait_for_person(api: Api, game: Game, people: set[int], limit: float = 60.0) -> pb.GameView:
    """The spectator's view once a person must decide or the round is over (bots play meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        view = (await api.get(game)).view
        if view.phase == pb.PHASE_OVER or view.to_move in people:
            game.version = view.version
            return view
        if loop.time() > deadline:
            raise AssertionError(f"the bot seats did not move from version {view.version} (to move: {view.to_move})")
        await asyncio.sleep(0.01)


async def play_with_bots(api: Api, game: Game, people: set[int], rng: random.Random) -> pb.GameView:
    """Play the people's seats at random until the round is over; the final spectator view."""
    for _ in range(1000):
        view = await wait_for_person(api, game, people)
        if view.phase == pb.PHASE_OVER:
            return view
        own = (await api.get(game, view.to_move)).view
        assert own.legal_actions
        await api.submit(game, view.to_move, rng.choice(own.legal_actions).id, version=own.version)
    raise AssertionError("the round did not end")


def bot_entries(log: pb.GetGameLogResponse, seats: set[int]) -> list[pb.LogEntry]:
    return [e for e in log.entries if e.seat in seats]


@pytest.mark.parametrize("preset", sorted(PRESET_PLAYERS))
async def test_a_person_plays_a_bot_seat_to_the_settlement(store_url: str, preset: str) -> None:
    async with bot_server(store_url) as api:
        game = await create(api, preset, 2, {1: "greedy"})
        assert sorted(game.tokens) == [0], "a bot seat gets no token"
        assert [(b.seat, b.bot) for b in game.created.bot_seats] == [(1, "greedy")]
        assert game.created.bot_seats[0].budget_ms == 200, "the server's default budget"
        assert [(b.seat, b.bot) for b in (await api.get(game, 0)).view.bot_seats] == [(1, "greedy")]
        final = await play_with_bots(api, game, {0}, random.Random(preset))
        assert final.HasField("settlement")
        log = await api.log(game)
        replayed, _ = replay(log, 1)  # the engine re-applies every entry: each bot move was legal
        assert replayed.round.over
        moves = bot_entries(log, {1})
        assert moves, "the bot seat moved"
        assert all(e.request_id.startswith("bot.act.") for e in moves)
        spectator = await api.get(game)
        assert spectator.view.settlement == final.settlement


async def test_two_bot_seats_at_a_three_player_table(store_url: str) -> None:
    async with bot_server(store_url) as api:
        game = await create(api, "classic", 3, {1: "greedy", 2: "random"})
        assert sorted(game.tokens) == [0]
        await play_with_bots(api, game, {0}, random.Random(3))
        log = await api.log(game)
        replay(log, 1)
        assert {e.seat for e in bot_entries(log, {1, 2})} == {1, 2}


async def test_a_table_of_bots_alone_plays_its_whole_match(store_url: str) -> None:
    async with bot_server(store_url) as api:
        game = await create(api, "standard", 2, {0: "random", 1: "greedy"}, rounds=2)
        assert not game.tokens
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not (view := (await api.get(game)).view).match.finished:
            assert loop.time() < deadline, f"the match stopped at version {view.version}"
            await asyncio.sleep(0.02)
        log = await api.log(game)
        replay(log, 2)
        assert any(e.request_id.startswith("bot.next_round.") for e in log.entries)


async def test_bot_seats_are_checked_at_creation() -> None:
    async with bot_server("", remote_bots="ts=127.0.0.1:1") as api:
        cases = [
            ({5: "greedy"}, 0, "BAD_BOT_SEAT"),
            ({1: "nosuchbot"}, 0, "UNKNOWN_BOT"),
            ({1: "remote:127.0.0.1:9"}, 0, "UNKNOWN_BOT"),
            ({1: "remote:other"}, 0, "UNKNOWN_BOT"),
            ({1: "os:system"}, 0, "UNKNOWN_BOT"),
            ({1: "greedy"}, 999_999, "BOT_BUDGET_TOO_LARGE"),
            ({1: "greedy"}, -1, "BAD_BOT_BUDGET"),
            ({1: "mcts:iterations=1;rm"}, 0, "BAD_BOT_SPEC"),
            ({1: "gr eedy"}, 0, "BAD_BOT_SPEC"),
        ]
        for bots, budget, reason in cases:
            failure = await expect(create(api, "standard", 2, bots, budget_ms=budget),
                                   grpc.StatusCode.INVALID_ARGUMENT, reason)
            assert "127.0.0.1:1" not in failure.message, "the operator's addresses stay private"
        req = pb.CreateGameRequest(preset="standard")
        req.bot_seats.add(seat=1, bot="greedy")
        req.bot_seats.add(seat=1, bot="random")
        await expect(api.stub.CreateGame(req, metadata=OPERATOR), grpc.StatusCode.INVALID_ARGUMENT, "BAD_BOT_SEAT")
        game = await create(api, "standard", 2, {1: "remote:ts"})
        assert game.created.bot_seats[0].bot == "remote:ts"


async def test_a_plugin_bot_is_refused_unless_the_operator_allows_it() -> None:
    async with bot_server("") as api:
        await expect(create(api, "standard", 2, {1: "my_bot:MyBot"}), grpc.StatusCode.INVALID_ARGUMENT,
                     "UNKNOWN_BOT")
    async with bot_server("", bot_plugins="my_bot:MyBot") as api:
        game = await create(api, "standard", 2, {1: "my_bot:MyBot"})
        assert game.created.bot_seats[0].bot == "my_bot:MyBot"


async def test_the_bot_key_acts_only_for_bot_seats() -> None:
    async with bot_server("", bot_worker="off", api_keys="player-key") as api:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await create(api, "standard", 2, {1: "greedy"})
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION, "no queue: no bot seats"
    async with bot_server("", api_keys="player-key") as api:
        game = await create(api, "standard", 2, {1: "greedy"})
        bot = (("x-api-key", BOT_KEY), ("x-bot-seat", "0"))
        await expect(api.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=bot),
                     grpc.StatusCode.PERMISSION_DENIED, "NOT_A_BOT_SEAT")
        seat0 = (await api.get(game, 0)).view
        if seat0.legal_actions:
            await expect(api.stub.SubmitAction(pb.SubmitActionRequest(
                game_id=game.id, expected_version=seat0.version, request_id="x",
                action_id=seat0.legal_actions[0].id), metadata=bot), grpc.StatusCode.PERMISSION_DENIED,
                "NOT_A_BOT_SEAT")
        await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard"), metadata=(("x-api-key", BOT_KEY),)),
                     grpc.StatusCode.UNAUTHENTICATED)
        await expect(api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id),
                                         metadata=(("x-api-key", BOT_KEY), ("x-bot-seat", "1"))),
                     grpc.StatusCode.PERMISSION_DENIED)
        for md in ((("x-bot-seat", "1"),), (("x-api-key", "player-key"), ("x-bot-seat", "1")),
                   (("x-api-key", BOT_KEY), ("x-bot-seat", "12")),
                   (("x-api-key", BOT_KEY), ("x-bot-seat", "1"), ("authorization", f"Bearer {game.tokens[0]}"))):
            await expect(api.stub.GetGame(pb.GetGameRequest(game_id=game.id), metadata=md),
                         grpc.StatusCode.UNAUTHENTICATED)
        view = (await api.stub.GetGame(pb.GetGameRequest(game_id=game.id),
                                       metadata=(("x-api-key", BOT_KEY), ("x-bot-seat", "1")))).view
        assert view.viewer == 1


FALLBACK_BOTS = '''
"""Bots that fail in each way a bot seat's bot can (the bot-seat fallback tests)."""
import time


class Raiser:
    name = "raiser"

    def __init__(self, seed=0):
        pass

    def choose(self, view, legal):
        raise RuntimeError("this bot always fails")


class Sleeper:
    name = "sleeper"

    def __init__(self, seed=0):
        pass

    def choose(self, view, legal):
        time.sleep(3)
        return legal[0]


class Cheater:
    name = "cheater"

    def __init__(self, seed=0):
        self.calls = 0

    def choose(self, view, legal):
        from gostop.engine import action_from_id
        return action_from_id(0) if action_from_id(0) not in legal else legal[-1]
'''


@pytest.mark.parametrize(("bot", "outcome"), [
    ("fallbackbots:Raiser", "error"), ("fallbackbots:Sleeper", "timeout"), ("fallbackbots:Cheater", "illegal"),
    ("not_installed:Bot", "unknown_bot")])
async def test_a_bot_that_cannot_decide_falls_back_and_is_counted(
        bot: str, outcome: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fallbackbots.py").write_text(FALLBACK_BOTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    async with bot_server("", bot_plugins=bot, bot_budget_ms=100) as api:
        game = await create(api, "standard", 2, {1: bot})
        if outcome == "timeout":  # one slow decision is enough: let the person's seat be a bot too
            await wait_for_person(api, game, {0})
        else:
            await play_with_bots(api, game, {0}, random.Random(bot))
        assert api.server is not None
        registry = api.server.metrics.registry
        label = bot.split(":")[0] + ":" + bot.split(":")[1]
        counted = registry.get_sample_value("gostop_bot_decisions_total", {"bot": label, "outcome": outcome})
        assert counted and counted >= 1, f"no {outcome} decision counted for {bot}"
        assert not registry.get_sample_value("gostop_bot_decisions_total", {"bot": label, "outcome": "ok"})
        log = await api.log(game)
        replay(log, 1)
        assert bot_entries(log, {1}), "the fallback moved for the bot"


async def test_the_documented_bot_seat_game_plays_against_make_run() -> None:
    """docs/bot-seats.md's Python block, run as written against ``gostop serve`` on the memory store
    (as ``make run`` starts it: its in-process worker plays the bot seat)."""
    text = (ROOT / "docs/bot-seats.md").read_text()
    source = text.split("```python\n", 1)[1].split("```", 1)[0]
    request = text.split("-d '", 1)[1].split("'", 1)[0]
    json_format.Parse(request, pb.CreateGameRequest())  # the grpcurl example's fields exist
    server = await start_process("", GOSTOP_OPERATOR_KEYS="")
    try:
        script = source.replace("127.0.0.1:50051", f"127.0.0.1:{server.port}")
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script], capture_output=True,
                                       text=True, timeout=120, cwd=ROOT)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert "my seats: [0] bots: [(1, 'greedy')]" in done.stdout
    assert "settlement: " in done.stdout
    assert '"bot decision"' in server.output, "the in-process worker logged its decisions"


def test_gostop_bots_serve_says_what_it_needs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOSTOP_")}
    run = subprocess.run([sys.executable, "-m", "gostop", "bots", "serve"], capture_output=True, text=True,
                         env=env, timeout=60, cwd=ROOT)
    assert run.returncode == 2 and "set GOSTOP_REDIS_URL" in run.stderr, run.stderr
    run = subprocess.run([sys.executable, "-m", "gostop", "bots", "serve", "--redis-url", "redis://127.0.0.1:1/0"],
                         capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert run.returncode == 2 and "set GOSTOP_BOT_KEY" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


class HighestBot:
    """A ``gostop.v1.BotService`` in Python (as a bot author would write one): the highest legal id."""

    def __init__(self) -> None:
        self.calls: list[bot_pb2.DecideRequest] = []

    def Decide(self, request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
        self.calls.append(request)
        return bot_pb2.DecideResponse(action_id=max(a.id for a in request.view.legal_actions))


async def test_a_remote_bot_plays_a_bot_seat(store_url: str) -> None:
    bot = HighestBot()
    remote = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    bot_pb2_grpc.add_BotServiceServicer_to_server(bot, remote)  # type: ignore[no-untyped-call]
    port = remote.add_insecure_port("127.0.0.1:0")
    remote.start()
    try:
        async with bot_server(store_url, remote_bots=f"highest=127.0.0.1:{port}", bot_budget_ms=500) as api:
            game = await create(api, "standard", 2, {1: "remote:highest"})
            await play_with_bots(api, game, {0}, random.Random(11))
            log = await api.log(game)
            replay(log, 1)
            moves = bot_entries(log, {1})
            assert moves and len(bot.calls) == len(moves), "every bot move was the remote bot's"
            for entry, call in zip(moves, bot.calls, strict=True):
                assert call.view.viewer == 1 and call.view.game_id == game.id
                assert call.deadline_ms == 500
                assert entry.action == convert.action_to_pb(action_from_id(max(a.id for a in call.view.legal_actions)))
                person = next(s for s in call.view.seats if s.seat == 0)
                assert person.hand_size == 0 or len(person.hand) < person.hand_size, \
                    "the remote bot never sees the person's whole hand"
            assert api.server is not None
            assert api.server.metrics.registry.get_sample_value(
                "gostop_bot_decisions_total", {"bot": "remote:highest", "outcome": "ok"}) == len(moves)
    finally:
        remote.stop(None)


@pytest.mark.slow  # a Redis Cluster
async def test_bot_seats_on_a_redis_cluster_spread_their_streams() -> None:
    """On a Cluster the shards' streams live on several masters (each its own slot) and the worker
    reads them in turn: a person still plays a whole round against two bot seats."""
    with RedisClusterServers(3) as cluster:
        async with bot_server(cluster.url) as api:
            game = await create(api, "classic", 3, {1: "greedy", 2: "greedy"})
            await play_with_bots(api, game, {0}, random.Random(5))
            log = await api.log(game)
            replay(log, 1)
            assert {e.seat for e in bot_entries(log, {1, 2})} == {1, 2}
            holders = {node.port for node in cluster.nodes for shard in range(8)
                       if holds(node, f"gostop:bots:{{s{shard}}}")}
            assert len(holders) > 1, "the shards' streams are spread over the masters"


def holds(node: Any, key: str) -> bool:
    """Whether a Cluster node holds ``key`` (another node's key answers MOVED)."""
    try:
        return bool(node.command("EXISTS", key) == 1)
    except RespError as exc:
        assert str(exc).startswith("MOVED"), exc
        return False


async def test_a_worker_with_a_wrong_key_says_so_and_leaves_the_turn(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a refused call (here a wrong bot key) escaped the worker's task unreported."""
    from prometheus_client import CollectorRegistry

    from gostop.service.bot_queue import MemoryBotQueue
    from gostop.service.programs.botworker import BotWorker, ClientApi, Decider

    async with bot_server("", bot_worker="off") as api:
        assert api.server is not None
        queue = MemoryBotQueue(claim_idle_ms=60_000)
        api.server.games.bot_queue = queue
        game = await create(api, "standard", 2, {0: "greedy", 1: "greedy"})
        client = ClientApi(f"127.0.0.1:{api.port}", "not-the-bot-key")
        registry = CollectorRegistry()
        worker = BotWorker(queue, client, Decider(), registry=registry)
        await worker.start()
        try:
            for _ in range(500):
                if registry.get_sample_value("gostop_bot_turn_failures_total"):
                    break
                await asyncio.sleep(0.01)
        finally:
            await worker.stop()
            await client.close()
        assert registry.get_sample_value("gostop_bot_turn_failures_total") == 1
        assert (await queue.backlog()).pending == 1, "the turn is left to be claimed again"
        assert (await api.get(game)).view.version == 1
    assert "bot turn failed" in capsys.readouterr().out
