"""Bytes no gRPC library would send, sent over a raw HTTP/2 connection: every one ends in a status
with an ``ErrorInfo`` reason (never INTERNAL or UNKNOWN), and nothing a caller sends can make the
server log a traceback per call."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest
import structlog

from gostop.service.auth import Authenticator
from gostop.service.errors import ServiceError
from gostop.v1 import game_pb2 as pb
from testkit.h2_raw import RawReply, get_game, raw_call
from testkit.servers import API_KEY, Api, config, running_server

UNAUTHENTICATED = 16
INVALID_ARGUMENT = 3


@pytest.fixture
async def server() -> AsyncIterator[Api]:
    async with running_server(config(api_keys=API_KEY)) as api:
        yield api


async def _raw(api: Api, method: str, request: bytes, *headers: tuple[bytes, bytes]) -> RawReply:
    return await asyncio.to_thread(raw_call, api.port, method, request, list(headers))


async def _game(api: Api) -> tuple[str, str]:
    created = await api.stub.CreateGame(pb.CreateGameRequest(preset="standard"), metadata=(("x-api-key", API_KEY),))
    return created.game_id, created.seats[0].token


@pytest.mark.parametrize("method", ["CreateGame", "GetGame", "SubmitAction", "WatchGame", "GetGameLog"])
async def test_non_ascii_api_key_is_unauthenticated_not_internal(server: Api, method: str) -> None:
    """Regression: ``x-api-key: \\xe9`` made ``hmac.compare_digest`` raise TypeError: INTERNAL and a
    traceback per call."""
    game_id, _ = await _game(server)
    request = {"CreateGame": pb.CreateGameRequest(preset="standard")}.get(method)
    body = request.SerializeToString() if request is not None else get_game(game_id)
    reply = await _raw(server, method, body, (b"x-api-key", b"\xe9"))
    assert reply.status == UNAUTHENTICATED, reply
    assert reply.reason == "BAD_CREDENTIALS"


async def test_token_with_non_ascii_mac_is_unauthenticated(server: Api) -> None:
    game_id, token = await _game(server)
    forged = token[:-3].encode() + b"\xe9\xe9\xe9"
    reply = await _raw(server, "GetGame", get_game(game_id), (b"authorization", b"Bearer " + forged))
    assert (reply.status, reply.reason) == (UNAUTHENTICATED, "BAD_CREDENTIALS"), reply
    assert "malformed seat token" in reply.message


async def test_token_seat_beyond_64_bits_is_unauthenticated_not_unknown(server: Api) -> None:
    """Regression: a validly signed token for seat 2^70 passed the parse; the log line's seat did not fit
    orjson's 64 bits and the call ended UNKNOWN, skipping the error mapping."""
    game_id, _ = await _game(server)
    secret = server.server.games.auth._secret  # type: ignore[union-attr]
    seat = 1 << 70
    token = f"gst1.{game_id}.{seat}.{Authenticator(secret)._sign(game_id, seat)}"
    reply = await _raw(server, "GetGame", get_game(game_id), (b"authorization", f"Bearer {token}".encode()))
    assert (reply.status, reply.reason) == (UNAUTHENTICATED, "BAD_CREDENTIALS"), reply


@pytest.mark.parametrize("alias", ["00", "000000000", "+0", "0 ", "٠"])
def test_token_aliases_are_refused(alias: str) -> None:
    """Regression: ``gst1.<id>.00.<mac>`` acted as seat 0. One canonical form only."""
    auth = Authenticator(b"0123456789abcdef0123")
    game_id = "abcdefghijklmnop"
    token = auth.issue(game_id, 0)
    assert auth.caller((("authorization", f"Bearer {token}"),)).seat == 0
    mac = token.rsplit(".", 1)[1]
    with pytest.raises(ServiceError) as err:
        auth.caller((("authorization", f"Bearer gst1.{game_id}.{alias}.{mac}"),))
    assert err.value.reason == "BAD_CREDENTIALS"


async def test_game_id_with_trailing_newline_is_malformed(server: Api) -> None:
    """Regression: ``^...$`` let ``"<id>\\n"`` through, answered NOT_FOUND instead of MALFORMED_GAME_ID."""
    game_id, _ = await _game(server)
    reply = await _raw(server, "GetGame", get_game(game_id + "\n"))
    assert (reply.status, reply.reason) == (INVALID_ARGUMENT, "MALFORMED_GAME_ID"), reply


async def test_api_key_on_a_server_without_keys_says_so() -> None:
    async with running_server(config(operator_keys="")) as api:
        reply = await _raw(api, "CreateGame", pb.CreateGameRequest(preset="standard").SerializeToString(),
                           (b"x-api-key", b"my-api-key"))
    assert (reply.status, reply.reason) == (UNAUTHENTICATED, "BAD_CREDENTIALS"), reply
    assert "this server has no API keys configured" in reply.message


@pytest.mark.parametrize("value", [b"\xff\xfe", b"Bearer \x80\x81", b"Bearer " + b"a" * 5000,
                                   b"Bearer gst1." + base64.b64encode(bytes(range(256)))])
async def test_any_authorization_bytes_end_in_bad_credentials(server: Api, value: bytes) -> None:
    game_id, _ = await _game(server)
    reply = await _raw(server, "GetGame", get_game(game_id), (b"authorization", value))
    assert (reply.status, reply.reason) == (UNAUTHENTICATED, "BAD_CREDENTIALS"), reply


def test_internal_tracebacks_are_rate_limited() -> None:
    """A bug a caller can trigger once per call must not write a traceback per call."""
    from gostop.service.calls import TracebackLimiter

    limiter = TracebackLimiter(interval=60.0)
    with structlog.testing.capture_logs() as logs:
        for _ in range(50):
            try:
                raise TypeError("boom")
            except TypeError as exc:
                limiter.report("GetGame", exc)
        limiter.report("GetGame", ValueError("other"))
    errors = [line for line in logs if line["event"] == "internal error"]
    assert len(errors) == 2, errors
    limiter.interval = 0.0
    with structlog.testing.capture_logs() as logs:
        limiter.report("GetGame", TypeError("again"))
    assert logs[0]["tracebacks_left_out"] == 49
