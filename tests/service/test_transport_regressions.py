"""What a client sees at the edges of both ports: calls beyond the per-connection stream limit, bodies
that stop half-way, old connections, bytes no client library would send to the HTTP port, the
per-address stream limit across ports, and the HTTP port's Host allow-list.

Every test starts real servers on loopback and speaks to them with real clients or raw sockets.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from gostop.service.server import Server
from gostop.v1 import game_pb2 as pb
from testkit.connect import ConnectStub
from testkit.h2_raw import RawConnection
from testkit.redis_server import free_port
from testkit.servers import OPERATOR, config, expect, internal_or_unknown_calls, running_server, start_process, stub

SERVICE = "gostop.v1.GameService"
METHODS = ("ListRuleSets", "CreateGame", "GetGame", "SubmitAction", "StartNextRound", "WatchGame", "GetGameLog")
CLOSES_WITHIN = 30.0
"""A generous bound for "the server closes it at all" (the settings under test are about a second)."""


@contextlib.asynccontextmanager
async def serving(**settings: Any) -> AsyncIterator[Server]:
    """An in-process server with both ports on loopback."""
    server = Server(config(http_listen="127.0.0.1:0", **settings))
    await server.start()
    try:
        yield server
    finally:
        await server.stop(0)


def exchange(port: int, data: bytes, wait: float = CLOSES_WITHIN) -> tuple[bytes, bool]:
    """Send ``data`` on a fresh connection, then read until the server closes it (True) or ``wait``
    passes (False); what was read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait)
    received = b""
    deadline = time.monotonic() + wait
    try:
        sock.sendall(data)
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return received, True
            if not chunk:
                return received, True
            received += chunk
        return received, False
    finally:
        sock.close()


def http_request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def status_of(reply: bytes) -> int:
    assert reply.startswith(b"HTTP/1.1 "), reply[:200]
    return int(reply.split(b" ", 2)[1])


def grpc_status(reply: bytes) -> tuple[int, str]:
    """The grpc-status and the ErrorInfo reason of a gRPC or gRPC-Web answer (headers or trailer frame)."""
    text = reply.split(b"\r\n\r\n", 1)
    fields = {k.strip().lower(): v for k, v in (ln.split(b":", 1) for ln in text[0].split(b"\r\n")[1:] if b":" in ln)}
    if b"grpc-status" not in fields:
        frame_at = text[1].find(b"\x80")
        size = struct.unpack(">I", text[1][frame_at + 1:frame_at + 5])[0]
        block = text[1][frame_at + 5:frame_at + 5 + size]
        fields = {k.strip().lower(): v for k, v in (ln.split(b":", 1) for ln in block.split(b"\r\n") if b":" in ln)}
    reason = ""
    details = fields.get(b"grpc-status-details-bin", b"").strip()
    if details:
        status = status_pb2.Status.FromString(base64.b64decode(details + b"=" * (-len(details) % 4)))
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                reason = info.reason
    return int(fields[b"grpc-status"].strip()), reason


# --------------------------------------------------------------------- calls beyond the stream limit


async def test_regression_calls_beyond_the_stream_limit_wait_instead_of_failing() -> None:
    """With a per-connection stream limit, a client with many more calls in flight on one channel had
    some refused by the transport (``UNAVAILABLE: Stream removed (RST_STREAM ... error code 7)``),
    with no reason and no log line: the server counted streams it had finished but not yet freed,
    which the client cannot know of. A client that respects the limit it was sent waits instead."""
    async with running_server(config(max_concurrent_streams=32)) as api:
        game = await api.create("standard")
        for _ in range(3):
            results = await asyncio.gather(
                *(api.stub.GetGame(pb.GetGameRequest(game_id=game.id), timeout=120) for _ in range(400)),
                return_exceptions=True)
            failed = [r for r in results if isinstance(r, BaseException)]
            assert not failed, f"{len(failed)} of 400 calls failed, the first: {failed[0]!r}"


# ------------------------------------------------------------------ half-sent bodies and old connections


def _half_sent(port: int) -> tuple[bytes, bool]:
    head = http_request("POST", f"/{SERVICE}/GetGame", {"content-type": "application/proto"})
    head = head.replace(b"content-length: 0", b"content-length: 100")
    return exchange(port, head + b"\x0a\x08partial")


async def test_regression_http_port_closes_half_sent_bodies() -> None:
    """Requests that sent their headers and part of a body stayed open for ever on the HTTP port (the
    gRPC port closes them by the connection age): each is now answered 408 and its connection closed
    once the body stops arriving for the read timeout."""
    async with serving(http_read_timeout_seconds=1.0) as server:
        results = await asyncio.gather(*(asyncio.to_thread(_half_sent, server.http_port) for _ in range(10)))
        for received, closed in results:
            assert closed, f"the connection is still open after {CLOSES_WITHIN} s: {received[:200]!r}"
            assert status_of(received) == 408, received[:300]
        assert server.metrics.http_refused.labels("REQUEST_BODY_TIMEOUT")._value.get() == 10
        for content_type in ("application/grpc-web+proto", "application/connect+proto"):
            head = http_request("POST", f"/{SERVICE}/WatchGame", {"content-type": content_type})
            received, closed = await asyncio.to_thread(
                exchange, server.http_port, head.replace(b"content-length: 0", b"content-length: 100") + b"\0\0\0")
            assert closed and status_of(received) == 200, received[:300]
            assert b"\"deadline_exceeded\"" in received or b"grpc-status: 4" in received, received[:400]
        conn = await asyncio.to_thread(RawConnection, server.http_port)  # gRPC over cleartext HTTP/2
        try:
            stream = await asyncio.to_thread(conn.start, "GetGame", [], server.http_port)
            await asyncio.to_thread(conn.send, stream, b"\0\0\0\0\x10partial", False)
            reply = await asyncio.to_thread(conn.reply, stream)
            assert (reply.status, reply.reason) == (4, "REQUEST_BODY_TIMEOUT"), reply
        finally:
            conn.close()


async def test_regression_http_connections_close_at_their_age() -> None:
    """The HTTP port had no connection age: a keep-alive connection lived as long as its client kept
    using it. Once aged, an idle connection is closed; one with a call still open gets the grace."""
    async with serving(max_connection_age_seconds=1.0, max_connection_age_grace_seconds=1.0,
                       max_connection_idle_seconds=300.0) as server:
        request = http_request("GET", "/", {"connection": "keep-alive"})
        received, closed = await asyncio.to_thread(exchange, server.http_port, request)
        assert status_of(received) == 200
        assert closed, "an aged idle keep-alive connection is still open"
        game = (await server.games.create(pb.CreateGameRequest(preset="standard"),
                                          server.games.auth.caller(OPERATOR))).game_id
        body = pb.WatchGameRequest(game_id=game, after_version=1).SerializeToString()
        watch = http_request("POST", f"/{SERVICE}/WatchGame", {"content-type": "application/connect+proto"},
                             struct.pack(">BI", 0, len(body)) + body)
        received, closed = await asyncio.to_thread(exchange, server.http_port, watch)
        assert closed, "a connection with an open WatchGame stream outlived its age and grace"
        assert not received or status_of(received) == 200  # (the stream's headers wait for its first message)


async def test_regression_http_shutdown_with_open_connections_writes_only_json() -> None:
    """Stopping a server with HTTP connections still open (half-sent bodies, an open stream) wrote raw
    tracebacks beside the JSON log; every line the process writes is now one JSON object."""
    http_port = free_port()
    process = await start_process("", GOSTOP_HTTP_LISTEN=f"127.0.0.1:{http_port}", GOSTOP_DRAIN_SECONDS="1")
    socks: list[socket.socket] = []
    try:
        for index in range(12):
            sock = socket.create_connection(("127.0.0.1", http_port), timeout=10)
            if index % 3 == 2:
                channel = grpc.aio.insecure_channel(f"127.0.0.1:{process.port}")
                async with channel:
                    created = await stub(channel).CreateGame(
                        pb.CreateGameRequest(preset="standard"), metadata=OPERATOR)
                body = pb.WatchGameRequest(game_id=created.game_id, after_version=1).SerializeToString()
                sock.sendall(http_request("POST", f"/{SERVICE}/WatchGame",
                                          {"content-type": "application/connect+proto"},
                                          struct.pack(">BI", 0, len(body)) + body))
            else:
                head = http_request("POST", f"/{SERVICE}/GetGame", {"content-type": "application/proto"})
                sock.sendall(head.replace(b"content-length: 0", b"content-length: 100") + b"\x0a\x08part")
            socks.append(sock)
        await asyncio.sleep(0.5)
        process.terminate()
        await asyncio.to_thread(process.process.wait, 30)
    finally:
        for sock in socks:
            sock.close()
        process.stop()
    output = process.log()
    raw = []
    for line in output.splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            raw.append(line)
    assert not raw, f"{len(raw)} lines outside the JSON log, the first: {raw[:5]}"
    assert '"stopped"' in output


# -------------------------------------------------------------------------- bytes on the HTTP port


async def test_regression_websocket_upgrade_is_refused_with_a_reason() -> None:
    """A WebSocket upgrade request got HTTP 500 with nothing logged."""
    async with serving() as server:
        for path in ("/", f"/{SERVICE}/GetGame"):
            request = http_request("GET", path, {"upgrade": "websocket", "connection": "Upgrade",
                                                 "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
                                                 "sec-websocket-version": "13"})
            received, _ = await asyncio.to_thread(exchange, server.http_port, request, 10.0)
            assert 400 <= status_of(received) < 500, received[:300]
            assert b"WebSocket" in received
        assert server.metrics.http_refused.labels("WEBSOCKET_NOT_SERVED")._value.get() == 2


async def test_regression_nul_in_a_web_path_is_not_found(tmp_path: Path) -> None:
    """``GET /index.html%00.js`` made the web table's file lookup raise: HTTP 500, nothing logged."""
    (tmp_path / "index.html").write_text("<!doctype html><title>table</title>")
    from gostop.service import http as http_module

    server = Server(config(http_listen="127.0.0.1:0"))
    assert server.http is not None
    server.http.app = http_module.build_app(server.calls, server.config, web=tmp_path)
    await server.start()
    try:
        for path in ("/index.html%00.js", "/%00", "/assets/a%00b", "/" + "a" * 5000 + ".js"):
            received, _ = await asyncio.to_thread(
                exchange, server.http_port, http_request("GET", path, {"connection": "close"}), 10.0)
            assert status_of(received) == 404, (path[:40], received[:300])
    finally:
        await server.stop(0)


@pytest.mark.parametrize("content_type", ["application/grpc-web+proto", "application/connect+proto"])
async def test_regression_compressed_flag_without_encoding_is_invalid_argument(content_type: str) -> None:
    """A streaming frame with the compressed flag and no encoding was INTERNAL, counted in
    ``grpc_server_handled_total{grpc_code="INTERNAL"}``: any caller could drive that alert."""
    async with serving() as server:
        game = (await server.games.create(pb.CreateGameRequest(preset="standard"),
                                          server.games.auth.caller(OPERATOR))).game_id
        for method, message in (("WatchGame", pb.WatchGameRequest(game_id=game)),
                                ("GetGame", pb.GetGameRequest(game_id=game))):
            body = message.SerializeToString()
            request = http_request("POST", f"/{SERVICE}/{method}", {"content-type": content_type,
                                                                     "connection": "close"},
                                   struct.pack(">BI", 1, len(body)) + body)
            received, _ = await asyncio.to_thread(exchange, server.http_port, request, 10.0)
            if content_type.startswith("application/grpc-web"):
                assert grpc_status(received) == (3, "MALFORMED_REQUEST"), received[:400]
            else:
                end = received[received.rfind(b"\x02\x00\x00"):]
                error = json.loads(end[5:end.index(b"}}") + 2])["error"]
                assert error["code"] == "invalid_argument", received[:400]
        assert internal_or_unknown_calls(server) == 0


@pytest.mark.parametrize("method", METHODS)
async def test_regression_grpc_over_http1_is_unimplemented_with_a_reason(method: str) -> None:
    """``application/grpc`` over HTTP/1.1 (which cannot carry trailers) ended UNKNOWN on every method."""
    async with serving() as server:
        body = b""
        request = http_request("POST", f"/{SERVICE}/{method}", {"content-type": "application/grpc",
                                                                "te": "trailers", "connection": "close"},
                               struct.pack(">BI", 0, len(body)) + body)
        received, _ = await asyncio.to_thread(exchange, server.http_port, request, 10.0)
        assert grpc_status(received) == (12, "GRPC_NEEDS_HTTP2"), received[:400]
        assert internal_or_unknown_calls(server) == 0


# -------------------------------------------------------------- stream limits across both ports


async def test_regression_stream_limits_count_both_ports() -> None:
    """With a limit of N WatchGame streams per client address, one address held N over gRPC and N
    more over the HTTP port: the limits per address, per seat and per game now count both ports."""
    async with serving(max_watch_per_peer=2, max_watch_per_seat=1, max_watch_per_game=3) as server:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        grpc_stub = stub(channel)
        http_stub = ConnectStub(f"http://127.0.0.1:{server.http_port}", "connect")
        open_calls: list[object] = []
        try:
            games = [await grpc_stub.CreateGame(pb.CreateGameRequest(preset="standard"), metadata=OPERATOR)
                     for _ in range(3)]
            for created in games[:2]:
                call = grpc_stub.WatchGame(pb.WatchGameRequest(game_id=created.game_id))
                open_calls.append(call)
            await _streams_open(server, 2)
            refused = http_stub.WatchGame(pb.WatchGameRequest(game_id=games[2].game_id))
            err = await expect(asyncio.wait_for(refused.read(), 10), grpc.StatusCode.RESOURCE_EXHAUSTED,
                               "TOO_MANY_STREAMS")
            assert err.info.metadata["scope"] == "peer"
        finally:
            for call in open_calls:
                call.cancel()  # type: ignore[attr-defined]
            await channel.close()


async def _streams_open(server: Server, count: int) -> None:
    for _ in range(500):
        if server.games.streams.total == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{server.games.streams.total} streams open, not {count}")


async def test_seat_and_game_stream_limits_count_both_ports() -> None:
    async with serving(max_watch_per_peer=0, max_watch_per_seat=1, max_watch_per_game=2) as server:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        grpc_stub = stub(channel)
        http_stub = ConnectStub(f"http://127.0.0.1:{server.http_port}", "grpc-web")
        calls = []
        try:
            created = await grpc_stub.CreateGame(pb.CreateGameRequest(preset="standard"), metadata=OPERATOR)
            seat = (("authorization", f"Bearer {created.seats[0].token}"),)
            calls.append(grpc_stub.WatchGame(pb.WatchGameRequest(game_id=created.game_id), metadata=seat))
            await _streams_open(server, 1)
            err = await expect(asyncio.wait_for(http_stub.WatchGame(
                pb.WatchGameRequest(game_id=created.game_id), metadata=seat).read(), 10),
                grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
            assert err.info.metadata["scope"] == "seat"
            calls.append(grpc_stub.WatchGame(pb.WatchGameRequest(game_id=created.game_id)))
            await _streams_open(server, 2)
            err = await expect(asyncio.wait_for(http_stub.WatchGame(
                pb.WatchGameRequest(game_id=created.game_id)).read(), 10),
                grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
            assert err.info.metadata["scope"] == "game"
        finally:
            for call in calls:
                call.cancel()
            await channel.close()


def test_client_addresses_are_one_key_on_both_ports() -> None:
    from gostop.service.watch import client_address

    assert client_address("ipv4:10.0.0.5:41234") == client_address("10.0.0.5:8080") == "10.0.0.5"
    assert client_address("ipv6:[::1]:41234") == client_address("::1:5000") == "::1"
    assert client_address("ipv6:[::ffff:10.0.0.5]:41234") == "10.0.0.5"
    assert client_address("ipv6:[2001:DB8::1]:1") == client_address("2001:db8::1:443") == "2001:db8::1"
    assert client_address("") == ""
    assert client_address("unix:/tmp/socket") == "unix:/tmp/socket"


# ------------------------------------------------------------------------------ the Host allow-list


async def test_host_allow_list_refuses_other_hosts() -> None:
    """With ``GOSTOP_HTTP_HOSTS`` set, a request naming another Host (a DNS-rebinding page, whose Origin
    equals its Host) is refused 421 before anything runs; listed hosts are served as before."""
    async with serving(http_hosts="games.example.com,127.0.0.1") as server:
        port = server.http_port
        for host, origin, expected in (("games.example.com", None, 200), ("GAMES.example.com:8080", None, 200),
                                       (f"127.0.0.1:{port}", None, 200), ("rebound.example", None, 421),
                                       ("rebound.example:8080", "http://rebound.example:8080", 421)):
            headers = {"host": host, "connection": "close", **({"origin": origin} if origin else {})}
            request = http_request("GET", "/", headers).replace(b"host: 127.0.0.1\r\n", b"", 1)
            received, _ = await asyncio.to_thread(exchange, port, request, 10.0)
            assert status_of(received) == expected, (host, received[:300])
        assert server.metrics.http_refused.labels("HOST_NOT_SERVED")._value.get() == 2


def test_host_allow_list_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="GOSTOP_HTTP_HOSTS"):
        config(http_hosts="games.example.com/path")
    with pytest.raises(ValueError, match="http_read_timeout_seconds"):
        config(http_read_timeout_seconds=0.0)
    with pytest.raises(ValueError, match="max_concurrent_streams"):
        config(max_concurrent_streams=100001)

