"""The Python client (``gostop.client`` and ``.convert``) against real servers: every RPC
through the sync and async clients (memory store and Redis), typed errors, retries of UNAVAILABLE
(a client started before its server; a reply lost after the commit, retried with the same request
id and applied once; a server process killed and restarted on the same port), the ABORTED re-read
path of ``act``, ``watch`` resuming without losing or repeating an event (streams cut inside
versions, and a server restart), log paging, and client-side views equal to the engine's views of
the server's states (replayed from the log)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from gostop.client import (
    AsyncGostopClient,
    Game,
    GameNotFound,
    GostopClient,
    IllegalActionError,
    InvalidRequest,
    NotYourTurnError,
    PermissionDenied,
    RequestIdReused,
    RetryPolicy,
    RoundInProgress,
    RoundOverError,
    StaleVersion,
    Unauthenticated,
    Unavailable,
    seat_of_token,
)
from gostop.client.calls import WatchCursor as _WatchCursor
from gostop.engine import (
    SPECTATOR,
    Match,
    PlayCard,
    Rules,
    action_id,
    legal_actions,
    match_apply,
    new_match,
    next_round,
    view,
)
from gostop.service.embedded import EmbeddedServer
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert as client_convert
from gostop.wire import convert as server_convert
from gostop.wire.convert import (
    action_from_pb,
    action_to_pb,
    event_from_pb,
    legal_actions_from_pb,
    match_from_pb,
    view_from_pb,
)
from testkit.configs import CONFIGS, config_id
from testkit.redis_server import RedisServer, free_port
from testkit.servers import (
    OPERATOR_KEY,
    ROOT,
    SECRET,
    ServerProcess,
    config,
    redacted,
    replay,
    rules_from_pb,
    wait_serving,
)

FAST = RetryPolicy(initial_backoff=0.01, max_backoff=0.2, max_attempts=50, max_elapsed=30)


@pytest.fixture(scope="module", name="target")
def target_fixture(store_url: str) -> Iterator[str]:
    """``target``: an in-process server (its own thread and loop) over each store backend."""
    with EmbeddedServer(config(store_url)) as server:
        yield server.target


@pytest.fixture(scope="module", name="memory_target")
def memory_target_fixture() -> Iterator[str]:
    with EmbeddedServer(config()) as server:
        yield server.target


def _choose_round_robin() -> Any:
    """A ``choose`` for ``act`` naming its action each of the four ways in turn."""
    forms = iter(range(10**6))

    def choose(v: pb.GameView) -> Any:
        legal = v.legal_actions[len(v.legal_actions) // 2]
        form = next(forms) % 4
        if form == 0:
            return legal.id
        if form == 1:
            return action_from_pb(legal.action)
        if form == 2:
            return legal
        return legal.action

    return choose


def _play_match(client: GostopClient, game: Game) -> int:
    """Play every round of the match with ``act``; the steps taken."""
    choose = _choose_round_robin()
    steps = 0
    while True:
        spectator = client.get_game(game)
        if spectator.phase == pb.PHASE_OVER:
            if spectator.match.finished:
                return steps
            result = client.start_next_round(game, steps % len(game.tokens))
            assert result.version == spectator.version + 1
        else:
            client.act(game, spectator.to_move, choose)
        steps += 1


# ------------------------------------------------------------------------------ sync client


def test_every_rpc_sync(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        sets = client.list_rule_sets()
        assert sorted((s.preset, s.players) for s in sets) == sorted(CONFIGS)
        assert all(rules_from_pb(s.rules) == Rules.preset(s.preset, players=s.players) for s in sets)

        game = client.create_game("standard", 3, overrides={"gwangbak": False, "go_scoring": "additive"},
                                  seed=11, rounds=2)
        assert sorted(game.tokens) == [0, 1, 2] and game.version == 1 and game.rules is not None
        assert client_convert.rules_from_pb(game.rules) == Rules.preset("standard", 3, gwangbak=False,
                                                                 go_scoring="additive")
        assert all(seat_of_token(t) == (game.id, s) for s, t in game.tokens.items())
        assert client.games[game.id] is game
        spectator = client.get_game(game.id)
        assert spectator.viewer == SPECTATOR and not spectator.legal_actions and spectator.version == 1
        mover = client.get_game(game.id, spectator.to_move)  # the token from the client's games
        assert mover.viewer == spectator.to_move and mover.legal_actions

        steps = _play_match(client, game)
        final = client.get_game(game, 0)
        assert final.match.finished and final.match.round_no == 2 and game.version == final.version
        assert steps + 1 == game.version

        log = client.log(game)
        assert [e.version for e in log.entries] == list(range(1, game.version + 1))
        match, _ = replay(log, 2)
        assert match.finished
        page = client.get_game_log(game, page_size=7)
        assert len(page.entries) == 7 and page.next_after_version == 7 and page.version == game.version
        assert client.log(game, page_size=7) == log
        with GostopClient(target) as seat_client:  # no operator key: a seat may read a finished match's log
            assert seat_client.log(game, token=game.token(2), page_size=9) == log

        for seat in (0, 2, None):
            viewer = SPECTATOR if seat is None else seat
            with client.watch(game, 0, seat) as stream:
                items = [(i.version, i.event) for i in stream]
            assert items == redacted(log, 2, viewer)
        tail = [(i.version, i.event) for i in client.watch(game, 9, 1)]
        assert tail == redacted(log, 2, 1, after=9)
        assert list(client.watch(game, game.version, 1)) == []

        with pytest.raises(RoundOverError):
            client.start_next_round(game, 0)
        with pytest.raises(RoundOverError):
            client.act(game, 0, lambda v: 0)


def test_errors_are_typed_sync(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client, GostopClient(target) as plain:
        game = client.create_game("standard", seed=5)
        other = client.create_game("standard", seed=6)
        view0 = game.view
        assert view0 is not None
        mover = view0.to_move
        legal = client.get_game(game, mover).legal_actions

        with pytest.raises(GameNotFound) as not_found:
            client.get_game("no-such-game")
        assert not_found.value.reason == "GAME_NOT_FOUND" and not_found.value.code == grpc.StatusCode.NOT_FOUND
        with pytest.raises(InvalidRequest) as bad_id:
            client.get_game("bad id!")
        assert bad_id.value.reason == "MALFORMED_GAME_ID"
        with pytest.raises(InvalidRequest) as bad_preset:
            client.create_game("nope")
        assert bad_preset.value.reason == "UNKNOWN_PRESET" and bad_preset.value.metadata == {"field": "preset"}
        with pytest.raises(Unauthenticated):
            client.get_game(game.id, token=f"gst1.{game.id}.0.forged")
        with pytest.raises(PermissionDenied) as wrong:
            client.get_game(other.id, token=game.token(0))
        assert wrong.value.reason == "WRONG_GAME"
        with pytest.raises(PermissionDenied) as closed:
            plain.log(game, seat=0, token=game.token(0))
        assert closed.value.reason == "LOG_NOT_AVAILABLE"
        with pytest.raises(NotYourTurnError):
            client.submit_action(game, 1 - mover, legal[0])
        with pytest.raises(NotYourTurnError):  # checked by the client before choosing
            client.act(game, 1 - mover, lambda v: 0)
        hand = set(client.get_game(game, mover).seats[mover].hand)
        with pytest.raises(IllegalActionError):
            client.submit_action(game, mover, PlayCard(next(c for c in range(48) if c not in hand)))
        with pytest.raises(InvalidRequest) as malformed:
            client.submit_action(game, mover, 999)
        assert malformed.value.reason == "MALFORMED_ACTION"
        with pytest.raises(RoundInProgress):
            client.start_next_round(game, 0)
        with pytest.raises(StaleVersion) as stale:
            client.submit_action(game, mover, legal[0], expected_version=7)
        assert (stale.value.current_version, stale.value.expected_version) == (1, 7)

        first = client.submit_action(game, mover, legal[0], request_id="same-id")
        again = client.submit_action(game, mover, legal[0], request_id="same-id", expected_version=1)
        assert again == first and game.version == 2  # a replay, applied once
        with pytest.raises(RequestIdReused):
            client.submit_action(game, mover, legal[-1], request_id="same-id", expected_version=1)
        with pytest.raises(ValueError):
            client.get_game(Game("unknown-game"), 0)


def test_create_game_arcade_for_three_says_it_is_a_two_player_preset_regression(memory_target: str) -> None:
    """Regression: ``create_game("arcade", players=3)`` answered "INVALID_RULES: last_action_go: 'allowed'
    is defined for two players only", a rule the caller never set."""
    with GostopClient(memory_target, operator_key=OPERATOR_KEY) as client, pytest.raises(InvalidRequest) as err:
        client.create_game("arcade", players=3)
    assert err.value.reason == "INVALID_RULES" and err.value.metadata == {"field": "players"}
    assert "arcade is a two-player preset: play it with 2 players, or choose another preset for 3" in str(err.value)
    assert "last_action_go" not in str(err.value)


def test_unavailable_is_retried_then_raised() -> None:
    policy = RetryPolicy(max_attempts=4, initial_backoff=0.02, max_backoff=0.05)
    started = time.monotonic()
    with GostopClient(f"127.0.0.1:{free_port()}", retry=policy, timeout=1) as client, \
            pytest.raises(Unavailable) as failed:
        client.list_rule_sets()
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert time.monotonic() - started < 5


def test_client_started_before_the_server_retries_until_it_is_up() -> None:
    port = free_port()
    results: list[Any] = []
    with GostopClient(f"127.0.0.1:{port}", retry=FAST, operator_key=OPERATOR_KEY) as client:
        thread = threading.Thread(target=lambda: results.append(client.create_game("simple", seed=3)))
        thread.start()
        time.sleep(0.6)  # the first attempts fail: nothing listens yet
        with EmbeddedServer(config(listen=f"127.0.0.1:{port}")):
            thread.join(20)
            assert results and isinstance(results[0], Game)
            assert client.get_game(results[0], 0).version == 1


def test_tls_with_root_certificates(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=30)
    with EmbeddedServer(config(tls_cert=str(cert), tls_key=str(key))) as server:
        with GostopClient(server.target, root_certificates=cert.read_bytes(), operator_key=OPERATOR_KEY) as client:
            game = client.create_game("simple", seed=1)
            assert client.get_game(game, 0).viewer == 0
        with GostopClient(server.target, retry=RetryPolicy(max_attempts=2), timeout=2) as plain, \
                pytest.raises(Unavailable):
            plain.list_rule_sets()  # a plaintext client cannot talk to the TLS port


class _InjectedError(grpc.RpcError):  # type: ignore[misc]
    """A failure injected by a test interceptor (as if the connection broke)."""

    def __init__(self, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "injected by the test"

    def trailing_metadata(self) -> tuple[()]:
        return ()


class _LoseReplies(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Lets the first ``lose`` calls of ``method`` reach the server (and commit), then loses the reply."""

    def __init__(self, method: str, lose: int) -> None:
        self.method = method
        self.lose = lose
        self.requests: list[Any] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith("/" + self.method):
            self.requests.append(request)
            if self.lose > 0:
                self.lose -= 1
                outcome.result()  # the server has answered: the commit happened
                raise _InjectedError()
        return outcome


def test_a_retried_submit_with_a_lost_reply_is_applied_once(target: str) -> None:
    lose = _LoseReplies("SubmitAction", lose=2)
    with GostopClient(target, operator_key=OPERATOR_KEY, retry=FAST, interceptors=[lose]) as client:
        game = client.create_game("standard", seed=21)
        mover = client.get_game(game).to_move
        action = client.get_game(game, mover).legal_actions[0]
        result = client.submit_action(game, mover, action)  # no request id given: the client draws one
        assert result.version == 2 and game.version == 2
        assert len(lose.requests) == 3 and len({r.request_id for r in lose.requests}) == 1
        assert lose.requests[0].request_id  # a uuid4
        log = client.log(game)
        assert [e.version for e in log.entries] == [1, 2]
        assert log.entries[1].request_id == lose.requests[0].request_id
        # StartNextRound carries a request id the same way.
        lose_next = _LoseReplies("StartNextRound", lose=1)
        with GostopClient(target, operator_key=OPERATOR_KEY, retry=FAST, interceptors=[lose_next]) as other:
            small = other.create_game("standard", seed=22, rounds=2)
            while other.get_game(small).phase != pb.PHASE_OVER:
                other.act(small, other.get_game(small).to_move, lambda v: v.legal_actions[0])
            before = small.version
            assert other.start_next_round(small, 1).version == before + 1
            assert len({r.request_id for r in lose_next.requests}) == 1 and len(lose_next.requests) == 2
            assert other.log(small).entries[-1].version == before + 1


def _seat_staying_to_move(seed: int) -> tuple[list[int], int, int]:
    """Engine search: a standard 2-player deal, the action ids leading to a state whose seat to move
    has an action after which it is still to move (a capture choice, go/stop...)."""
    match, _ = new_match(Rules.preset("standard"), seed, 1)
    rng = random.Random(seed)
    path: list[int] = []
    while not match.round.over:
        seat = match.round.to_move
        for action in legal_actions(match.round):
            after, _ = match_apply(match, action)
            if not after.round.over and after.round.to_move == seat:
                return path, seat, action_id(action)
        action = rng.choice(legal_actions(match.round))
        path.append(action_id(action))
        match, _ = match_apply(match, action)
    raise LookupError


def test_act_rereads_after_a_stale_version(memory_target: str) -> None:
    for seed in range(1, 200):
        with contextlib.suppress(LookupError):
            path, seat, first = _seat_staying_to_move(seed)
            break
    else:  # pragma: no cover
        pytest.fail("no deal with a seat that stays to move")
    with GostopClient(memory_target, operator_key=OPERATOR_KEY) as client, \
            GostopClient(memory_target) as rival:
        game = client.create_game("standard", seed=seed)
        for ident in path:
            client.submit_action(game, client.get_game(game).to_move, ident)
        seen: list[int] = []

        def choose(v: pb.GameView) -> int:
            seen.append(v.version)
            if len(seen) == 1:  # meanwhile, another client of the same seat moves first
                rival.submit_action(game.id, None, first, expected_version=v.version, token=game.token(seat))
                return first
            return v.legal_actions[0].id

        result = client.act(game, seat, choose)
        start = len(path) + 1
        assert seen == [start, start + 1] and result.version == start + 2


# ----------------------------------------------------------------------------- async client


async def test_every_rpc_async(target: str) -> None:
    async with AsyncGostopClient(target, operator_key=OPERATOR_KEY) as client:
        sets = await client.list_rule_sets()
        assert len(sets) == len(CONFIGS)
        game = await client.create_game("classic", 4, seed=17, rounds=2)
        assert sorted(game.tokens) == [0, 1, 2, 3]
        watched: list[tuple[int, pb.Event]] = []

        async def watch() -> None:
            async for item in client.watch(game, 0, 3):
                watched.append((item.version, item.event))

        task = asyncio.create_task(watch())
        steps = 0
        choose = _choose_round_robin()

        async def choose_async(v: pb.GameView) -> Any:
            return choose(v)

        while True:
            spectator = await client.get_game(game)
            if spectator.phase == pb.PHASE_OVER:
                if spectator.match.finished:
                    break
                await client.start_next_round(game, 2)
            elif steps % 2:
                await client.act(game, spectator.to_move, choose)
            else:
                await client.act(game, spectator.to_move, choose_async)
            steps += 1
        await asyncio.wait_for(task, 10)
        log = await client.log(game, page_size=5)
        assert log == await client.log(game)
        assert watched == redacted(log, 2, 3)
        assert replay(log, 2)[0].finished
        page = await client.get_game_log(game, after_version=3, page_size=2)
        assert [e.version for e in page.entries] == [4, 5] and page.next_after_version == 5

        with pytest.raises(GameNotFound):
            await client.get_game("missing-game")
        with pytest.raises(RoundOverError):
            await client.start_next_round(game, 0)
        fresh = await client.create_game("standard", seed=9)
        view0 = await client.get_game(fresh, (await client.get_game(fresh)).to_move)
        with pytest.raises(StaleVersion) as stale:
            await client.submit_action(fresh, view0.viewer, view0.legal_actions[0], expected_version=3)
        assert stale.value.current_version == 1
        with pytest.raises(NotYourTurnError):
            await client.submit_action(fresh, 1 - view0.viewer, view0.legal_actions[0])
        first = await client.submit_action(fresh, view0.viewer, view0.legal_actions[0], request_id="a-1")
        assert await client.submit_action(fresh, view0.viewer, view0.legal_actions[0], request_id="a-1",
                                          expected_version=1) == first
        with pytest.raises(Unauthenticated):
            await client.get_game(fresh.id, token="gst1.x.0.y")
        # A watch waiting for the next version ends quietly when cancelled.
        waiting = client.watch(fresh, fresh.version, 0)
        received: list[pb.WatchGameResponse] = []

        async def wait_for_more() -> None:
            async for item in waiting:
                received.append(item)

        pending = asyncio.create_task(wait_for_more())
        await asyncio.sleep(0.2)
        assert not pending.done()
        waiting.cancel()
        await asyncio.wait_for(pending, 5)
        assert received == []
        async with client.watch(fresh, 0, 1) as again:  # async with closes the stream
            first_item = await again.__anext__()
        assert first_item.version == 1
    async with AsyncGostopClient(f"127.0.0.1:{free_port()}", retry=RetryPolicy(max_attempts=3)) as down:
        with pytest.raises(Unavailable):
            await down.list_rule_sets()


# ------------------------------------------------------------------------- watch resumption


def test_watch_cursor_drops_the_repeated_part_of_a_version() -> None:
    def item(v: int) -> pb.WatchGameResponse:
        return pb.WatchGameResponse(version=v)

    cursor = _WatchCursor(0)
    assert cursor.resume() == 0
    assert [cursor.accept(item(v)) for v in (1, 1, 2)] == [True, True, True]
    assert cursor.resume() == 1  # version 2 may be incomplete
    assert [cursor.accept(item(v)) for v in (2, 2, 2, 3)] == [False, True, True, True]
    assert (cursor.done, cursor.version, cursor.count) == (2, 3, 1)
    cursor.finish()
    assert cursor.resume() == 3


class _CutStreams(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Breaks every stream after a random number of messages, as a lost connection would."""

    def __init__(self, seed: int, longest: int, whole_versions: bool = True) -> None:
        self.rng = random.Random(seed)
        self.longest = longest
        self.whole_versions = whole_versions
        self.cuts = 0

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        if not self.whole_versions:  # as a server from before whole versions answers
            request = pb.WatchGameRequest(game_id=request.game_id, after_version=request.after_version,
                                          include_views=request.include_views)
        return _CutCall(self, continuation(details, request), self.rng.randint(1, self.longest))


class _CutCall:
    def __init__(self, owner: _CutStreams, call: Any, left: int) -> None:
        self.owner, self.call, self.left = owner, call, left

    def __iter__(self) -> _CutCall:
        return self

    def __next__(self) -> Any:
        if self.left == 0:
            self.call.cancel()
            self.owner.cuts += 1
            raise _InjectedError()
        self.left -= 1
        return next(self.call)

    def cancel(self) -> bool:
        return bool(self.call.cancel())


@pytest.mark.parametrize("whole_versions", [True, False], ids=["whole-versions", "event-messages"])
def test_watch_resumes_streams_cut_inside_versions(memory_target: str, whole_versions: bool) -> None:
    """Cut between versions (a message per version) or inside them (a message per event, as a
    server from before whole versions sends), the stream delivers every event once."""
    with GostopClient(memory_target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", 3, seed=31, rounds=2)
        _play_match(client, game)
        log = client.log(game)
    cutter = _CutStreams(seed=5, longest=20 if not whole_versions else 5, whole_versions=whole_versions)
    with GostopClient(memory_target, retry=FAST, interceptors=[cutter]) as flaky:
        for seat in (1, None):
            stream = flaky.watch(game.id, 0, token=None if seat is None else game.token(seat))
            got = [(i.version, i.event) for i in stream]
            assert got == redacted(log, 2, SPECTATOR if seat is None else seat)
            assert stream.reconnects >= 3 and stream.last_complete_version == game.version
    assert cutter.cuts >= 10


def _start_on(port: int, redis_url: str) -> ServerProcess:
    """``python -m gostop serve`` on a given port with Redis and the shared token secret."""
    handle, name = tempfile.mkstemp(prefix="gostop-client-test-", suffix=".log")
    os.close(handle)
    env = {**os.environ, "GOSTOP_REDIS_URL": redis_url, "GOSTOP_TOKEN_SECRET": SECRET,
           "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY, "GOSTOP_LOG_FORMAT": "json", "GOSTOP_LOG_LEVEL": "warning",
           "PYTHONPATH": str(ROOT)}
    with open(name, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "serve", "--listen", f"127.0.0.1:{port}", "--metrics-port", "0"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
        )
    return ServerProcess(process, port, Path(name))


def _kill(server: ServerProcess) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    server.stop()


@pytest.mark.slow  # a server process restarted
async def test_watch_and_submit_survive_a_server_restart(service_redis: RedisServer) -> None:
    port = free_port()
    first = _start_on(port, service_redis.url)
    servers = [first]
    policy = RetryPolicy(initial_backoff=0.05, max_backoff=0.5, max_attempts=100, max_elapsed=40)
    try:
        await wait_serving(port, first.process)
        target = f"127.0.0.1:{port}"
        async with AsyncGostopClient(target, operator_key=OPERATOR_KEY, retry=policy) as client:
            game = await client.create_game("standard", 2, seed=77, rounds=2)
            spectator_seen: list[tuple[int, pb.Event]] = []
            sync_seen: list[tuple[int, pb.Event]] = []
            sync_client = GostopClient(target, retry=policy)
            sync_stream = sync_client.watch(game.id, 0, token=game.token(1))
            sync_thread = threading.Thread(target=lambda: sync_seen.extend((i.version, i.event) for i in sync_stream))
            sync_thread.start()
            stream = client.watch(game, 0)

            async def watch() -> None:
                async for item in stream:
                    spectator_seen.append((item.version, item.event))

            task = asyncio.create_task(watch())
            rng = random.Random(77)
            submitted = 0

            async def step() -> None:
                nonlocal submitted
                v = await client.get_game(game)
                if v.phase == pb.PHASE_OVER:
                    await client.start_next_round(game, 0)
                else:
                    await client.act(game, v.to_move, lambda mine: rng.choice(mine.legal_actions))
                submitted += 1

            for _ in range(9):
                await step()
            # The seat to move has read its view; the server dies before its action is sent.
            seat = (await client.get_game(game)).to_move
            mine = await client.get_game(game, seat)
            _kill(first)
            pending = asyncio.create_task(client.submit_action(game, seat, mine.legal_actions[0],
                                                               expected_version=mine.version))
            await asyncio.sleep(0.5)
            assert not pending.done()  # retrying UNAVAILABLE
            second = _start_on(port, service_redis.url)
            servers.append(second)
            result = await asyncio.wait_for(pending, 30)
            assert result.version == mine.version + 1
            submitted += 1
            while not (await client.get_game(game)).match.finished:
                await step()
            await asyncio.wait_for(task, 20)
            await asyncio.get_running_loop().run_in_executor(None, sync_thread.join, 20)
            sync_client.close()
            log = await client.log(game)
            assert len(log.entries) == submitted + 1  # every step applied exactly once
            assert spectator_seen == redacted(log, 2, SPECTATOR)
            assert sync_seen == redacted(log, 2, 1)
            assert stream.reconnects >= 1 and sync_stream.reconnects >= 1
    finally:
        for server in servers:
            server.stop()


# ---------------------------------------------------------------------------- conversions


def _replayed_states(log: pb.GetGameLogResponse) -> dict[int, Match]:
    """The match after every version, rebuilt from the log with the engine."""
    match, _ = new_match(rules_from_pb(log.rules), log.seed, log.rounds)
    states = {1: match}
    for entry in log.entries[1:]:
        if entry.HasField("action"):
            match, _ = match_apply(match, server_convert.action_from_pb(entry.action), entry.seat)
        else:
            match, _ = next_round(match)
        states[entry.version] = match
    return states


@pytest.mark.parametrize("preset_players", CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_client_views_equal_engine_views_of_the_server_state(memory_target: str,
                                                             preset_players: tuple[str, int]) -> None:
    preset, players = preset_players
    seed = 500 + CONFIGS.index(preset_players)
    rng = random.Random(seed)
    seen: dict[tuple[int, int], pb.GameView] = {}
    with GostopClient(memory_target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game(preset, players, seed=seed, rounds=2)
        while True:
            views = {seat: client.get_game(game, None if seat == SPECTATOR else seat)
                     for seat in range(-1, players)}
            version = views[SPECTATOR].version
            for seat, v in views.items():
                assert v.version == version
                seen[(version, seat)] = v
            spectator = views[SPECTATOR]
            if spectator.phase == pb.PHASE_OVER:
                if spectator.match.finished:
                    break
                client.start_next_round(game, 0)
            else:
                choice = rng.choice(views[spectator.to_move].legal_actions)
                client.submit_action(game, spectator.to_move, choice, expected_version=version)
        log = client.log(game)
    states = _replayed_states(log)
    assert set(states) == {v for v, _ in seen}
    for (version, seat), wire in seen.items():
        match = states[version]
        expected = view(match.round, seat)
        got = view_from_pb(wire)
        assert got == expected, f"version {version}, seat {seat}"
        assert legal_actions_from_pb(wire) == expected.legal_actions
        assert match_from_pb(wire.match).points == match.points
        assert match_from_pb(wire.match).finished == match.finished
    for entry in log.entries:
        for event in entry.events:
            engine_event = event_from_pb(event)
            assert server_convert.event_to_pb(engine_event) == event
        if entry.HasField("action"):
            assert action_to_pb(action_from_pb(entry.action)) == entry.action


def test_the_documented_submit_action_calls_run(memory_target: str) -> None:
    """Regression: docs/clients.md showed no submit_action call (a guessed one was a TypeError)."""
    text = (ROOT / "docs/clients.md").read_text()
    [block] = [b for b in text.split("```python\n")[1:] if "client.submit_action(game, seat," in b]
    with GostopClient(memory_target, operator_key=OPERATOR_KEY) as client:
        scope: dict[str, Any] = {"client": client}
        exec(block.split("```")[0], scope)  # the page's own code
        assert scope["result"].version == scope["game"].version == scope["game"].view.version == 3
