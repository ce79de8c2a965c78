"""Bot seats' options, as a hostile caller writes them, against a real server process (the memory
store, whose bot worker runs inside the server): hypothesis-generated bot specs (known and unknown
options; huge, negative, non-finite and ill-typed values; budgets) are refused with
``INVALID_ARGUMENT`` and a reason, or accepted and then decided by the bot itself within the budget
(never a timeout, an error or a fallback). And tables of bots whose options ask for far more than
their budgets play their rounds, every decision the bot's own and none timed out.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gostop.service.bot_queue import BotTurn
from gostop.service.bot_seats import MCTS_OPTIONS
from gostop.service.programs.botworker import Decider
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.servers import OPERATOR_KEY, ServerProcess, decode_error, seat_md, start_process
from testkit.servers import stub as make_stub

from .harness import record, scaled

BUDGET_MS = 30
MAX_BUDGET_MS = 60
OPERATOR = (("x-api-key", OPERATOR_KEY),)
REASONS = {"BAD_BOT_SPEC", "BAD_BOT_OPTION", "BOT_OPTION_OVER_BUDGET", "UNKNOWN_BOT", "BAD_BOT_BUDGET",
           "BOT_BUDGET_TOO_LARGE"}
"""The reasons a bot seat may be refused for."""


@dataclass
class Target:
    """A server process and a view of a seat to move (a few plays in) for the worker's decider."""

    server: ServerProcess
    channel: grpc.Channel
    stub: pb_grpc.GameServiceStub
    game_id: str
    view: pb.GameView


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    server = asyncio.run(start_process("", GOSTOP_BOT_BUDGET_MS=str(BUDGET_MS),
                                       GOSTOP_BOT_BUDGET_MAX_MS=str(MAX_BUDGET_MS)))
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = make_stub(channel)
    try:
        game = stub.CreateGame(pb.CreateGameRequest(preset="standard", players=2, seed=3), metadata=OPERATOR,
                               timeout=5)
        tokens = {s.seat: s.token for s in game.seats}
        for _ in range(40):
            seat = stub.GetGame(pb.GetGameRequest(game_id=game.game_id), timeout=5).view.to_move
            own = stub.GetGame(pb.GetGameRequest(game_id=game.game_id), metadata=seat_md(tokens[seat]), timeout=5)
            if len(own.view.plays) >= 4 and len(own.view.legal_actions) > 2:
                break
            stub.SubmitAction(pb.SubmitActionRequest(game_id=game.game_id, expected_version=own.version,
                                                     request_id=f"setup-{own.version}",
                                                     action_id=own.view.legal_actions[0].id),
                              metadata=seat_md(tokens[seat]), timeout=5)
        else:
            raise AssertionError("no position with plays and a choice")
        yield Target(server, channel, stub, game.game_id, own.view)
    finally:
        channel.close()
        server.stop()
    assert server.process.returncode == 0, server.log()
    assert '"internal error"' not in server.log()


# ------------------------------------------------------------------------- strategies

KEYS = st.one_of(st.sampled_from([*sorted(MCTS_OPTIONS), "seed", "depth"]),
                 st.from_regex(r"[a-z_][a-z_0-9]{0,6}", fullmatch=True))
VALUES = st.one_of(
    st.integers(-5, 10**13).map(str),
    st.integers(0, 70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr).filter(lambda text: len(text) <= 64),
    st.floats(0, 2, allow_nan=False).map(repr),
    st.sampled_from(["true", "false", "True", "flat", "uct", "inf", "-inf", "nan", "1e309", "1_000", "0x10", "-0"]),
    st.from_regex(r"[A-Za-z0-9_.+-]{1,10}", fullmatch=True),
)
OPTIONS = st.dictionaries(KEYS, VALUES, max_size=4).map(lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
SPECS = st.tuples(st.sampled_from(["mcts", "mcts", "mcts", "greedy", "random", "mcts:extra"]), OPTIONS).map(
    lambda pair: f"{pair[0]}:{pair[1]}" if pair[1] else pair[0])
BUDGETS = st.one_of(st.just(0), st.integers(1, MAX_BUDGET_MS), st.integers(-2, MAX_BUDGET_MS + 100))


# ------------------------------------------------------------------------------- tests


@settings(max_examples=scaled(60, 0.5), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(spec=SPECS, budget_ms=BUDGETS)
def test_generated_bot_options_get_a_reason_or_a_decision_within_the_budget(
        target: Target, spec: str, budget_ms: int) -> None:
    req = pb.CreateGameRequest(preset="standard", players=2, seed=1)
    req.bot_seats.add(seat=1, bot=spec, budget_ms=budget_ms)
    try:
        created = target.stub.CreateGame(req, metadata=OPERATOR, timeout=5)
    except grpc.RpcError as error:
        refused = decode_error(error)
        assert refused.code == grpc.StatusCode.INVALID_ARGUMENT, (spec, budget_ms, refused)
        assert refused.info.reason in REASONS, (spec, refused)
        assert refused.info.metadata["field"] == "bot_seats" and refused.message, (spec, refused)
        record(bot_specs_refused=1)
        return
    seat = created.bot_seats[0]
    assert seat.bot == spec and 1 <= seat.budget_ms <= MAX_BUDGET_MS
    turn = BotTurn(target.game_id, target.view.version, target.view.viewer, spec, seat.budget_ms)
    decider = Decider(slack=2.0)
    try:
        decision = asyncio.run(decider.decide(turn, target.view))
    finally:
        decider.close()
    assert decision.outcome == "ok", f"{spec} (budget {seat.budget_ms} ms): {decision.outcome}"
    assert decision.action in {a.id for a in target.view.legal_actions}
    record(bot_specs_accepted=1)


def test_bots_whose_options_ask_for_more_than_their_budget_play_within_it(target: Target) -> None:
    """Tables of bots alone whose options ask for days of search (accepted: the budget bounds
    them): their rounds are played to the end, and every decision is the bot's own, none a
    timeout (a decision past its deadline would leave its search running in the server)."""
    games = []
    for seed, (bot0, bot1) in enumerate([("mcts:iterations=100000000000", "mcts:iterations=100000000000,mode=uct"),
                                         ("mcts:iterations=99999999999,belief_samples=64,reply_depth=8",
                                          f"mcts:millis={BUDGET_MS},cpu_millis={BUDGET_MS}")], start=1):
        req = pb.CreateGameRequest(preset="standard", players=2, seed=seed)
        req.bot_seats.add(seat=0, bot=bot0)
        req.bot_seats.add(seat=1, bot=bot1)
        games.append(target.stub.CreateGame(req, metadata=OPERATOR, timeout=5).game_id)
    deadline = time.monotonic() + 120
    for game_id in games:
        while (target.stub.GetGame(pb.GetGameRequest(game_id=game_id), timeout=5)
               .view.phase != pb.PHASE_OVER):
            assert time.monotonic() < deadline, f"game {game_id} did not finish"
            time.sleep(0.05)
    outcomes = [str(line["outcome"]) for line in map(_json, target.server.log().splitlines())
                if line.get("event") == "bot decision" and line.get("game_id") in games]
    assert outcomes and set(outcomes) == {"ok"}, sorted(set(outcomes))
    record(bot_decisions_bounded=len(outcomes))


def _json(line: str) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
