"""``gostop.client.RemoteBot`` against a real ``gostop.v1.BotService`` server: a tiny Python one,
started here on a free loopback port, that answers as each test tells it (a legal id, an illegal
id, an error status, no answer until released). The TypeScript and Go example servers are played
in tournaments by ``tests/contract/test_remote_bots.py``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from gostop.client import RemoteBot, RemoteBotError
from gostop.client import remote_bot as remote_bot_module
from gostop.engine import Rules, new_match, view
from gostop.v1 import bot_pb2, bot_pb2_grpc
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import view_to_pb

ADD_SERVICER: Any = bot_pb2_grpc.add_BotServiceServicer_to_server  # generated, untyped
Answer = Callable[[bot_pb2.DecideRequest, Any], bot_pb2.DecideResponse]


@dataclass
class BotServer:
    """A BotService on a free loopback port; ``answer`` decides each call, ``requests`` records them."""

    answer: Answer
    requests: list[bot_pb2.DecideRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: Any = None
    address: str = ""

    def Decide(self, request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
        with self.lock:
            self.requests.append(request)
        return self.answer(request, context)

    def start(self) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        ADD_SERVICER(self, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.address = f"127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.stop(None).wait()


def lowest(request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
    return bot_pb2.DecideResponse(action_id=min(a.id for a in request.view.legal_actions))


@pytest.fixture(name="seat_view")
def seat_view_fixture() -> pb.GameView:
    """The view of the seat to move at the start of a standard 2-player round, as GetGame gives it."""
    match, _ = new_match(Rules.preset("standard", 2), 11)
    seat = match.round.to_move
    out = view_to_pb(view(match.round, seat), match, "remote-bot-test", 1)
    assert out.viewer == seat and len(out.legal_actions) > 1
    return out


@pytest.fixture(name="serve")
def serve_fixture() -> Iterator[Callable[[Answer], BotServer]]:
    started: list[BotServer] = []

    def serve(answer: Answer) -> BotServer:
        server = BotServer(answer)
        server.start()
        started.append(server)
        return server

    yield serve
    for server in started:
        server.stop()


def test_decide_returns_the_bots_legal_id_and_sends_the_view_options_and_seed(
        serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    server = serve(lowest)
    with RemoteBot("py", server.address, options="depth=3,style=safe") as bot:
        assert bot.spec == "remote:py"
        chosen = bot.decide(seat_view, 1500, seed=42)
    assert chosen == min(a.id for a in seat_view.legal_actions)
    [request] = server.requests
    assert request.view == seat_view
    assert (request.deadline_ms, request.options, request.seed) == (1500, "depth=3,style=safe", 42)


def test_an_illegal_id_is_a_remote_bot_error(serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    server = serve(lambda request, context: bot_pb2.DecideResponse(action_id=255))
    legal = sorted(a.id for a in seat_view.legal_actions)
    assert 255 not in legal
    with RemoteBot("py", server.address) as bot, pytest.raises(RemoteBotError) as caught:
        bot.decide(seat_view, 1000)
    assert caught.value.kind == "illegal" and caught.value.code is None
    assert str(caught.value) == (f"remote bot 'py' at {server.address}: chose action id 255, "
                                 f"not one of the legal ids {legal}")


def test_a_server_that_is_down_is_unreachable(serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    server = serve(lowest)
    server.stop()  # the address served a bot a moment ago; nothing listens there now
    with RemoteBot("gone", server.address) as bot, pytest.raises(RemoteBotError) as caught:
        bot.decide(seat_view, 1000)
    assert caught.value.kind == "unreachable" and caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert str(caught.value).startswith(f"remote bot 'gone' at {server.address}: unreachable (")


def test_no_answer_within_the_deadline(serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    release = threading.Event()

    def stuck(request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
        release.wait()  # answers only once the test is over: the deadline always passes first
        return lowest(request, context)

    server = serve(stuck)
    try:
        with RemoteBot("slow", server.address, grace_ms=0) as bot, pytest.raises(RemoteBotError) as caught:
            bot.decide(seat_view, 50)
    finally:
        release.set()
    assert caught.value.kind == "deadline" and caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "no answer within 50 ms" in str(caught.value)


def test_an_error_status_names_its_code_and_message(
        serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    def failing(request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
        context.abort(grpc.StatusCode.INTERNAL, "the bot crashed")
        raise AssertionError("abort returns no answer")

    server = serve(failing)
    with RemoteBot("py", server.address) as bot, pytest.raises(RemoteBotError) as caught:
        bot.decide(seat_view, 1000)
    assert caught.value.kind == "status" and caught.value.code == grpc.StatusCode.INTERNAL
    assert str(caught.value).endswith("answered INTERNAL: the bot crashed")


def test_a_closed_bot_refuses_and_its_address_channel_is_shared_until_the_last_close(
        serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    server = serve(lowest)
    first, second = RemoteBot("a", server.address), RemoteBot("b", server.address)
    channels = remote_bot_module._CHANNELS._open
    assert channels[server.address][2] == 2, "one channel for both bots of the address"
    first.close()
    first.close()  # idempotent
    with pytest.raises(RemoteBotError) as caught:
        first.decide(seat_view, 1000)
    assert caught.value.kind == "closed"
    assert second.decide(seat_view, 1000) in {a.id for a in seat_view.legal_actions}
    second.close()
    assert server.address not in channels


def test_decide_from_many_threads_at_once(serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    """One bot (one channel) shared by eight threads: every answer is the server's, for its own seed."""

    def by_seed(request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideResponse:
        ids = [a.id for a in request.view.legal_actions]
        return bot_pb2.DecideResponse(action_id=ids[request.seed % len(ids)])

    server = serve(by_seed)
    ids = [a.id for a in seat_view.legal_actions]
    with RemoteBot("py", server.address) as bot, futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda seed: (seed, bot.decide(seat_view, 2000, seed=seed)), range(80)))
    assert answers == [(seed, ids[seed % len(ids)]) for seed in range(80)]
    assert len(server.requests) == 80


def test_a_view_without_legal_actions_is_refused_before_any_call(
        serve: Callable[[Answer], BotServer], seat_view: pb.GameView) -> None:
    server = serve(lowest)
    spectator = pb.GameView()
    spectator.CopyFrom(seat_view)
    del spectator.legal_actions[:]
    with RemoteBot("py", server.address) as bot, pytest.raises(ValueError, match="no legal actions"):
        bot.decide(spectator, 1000)
    assert server.requests == []
