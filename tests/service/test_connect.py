"""The HTTP port: ``gostop.v1.GameService`` over the Connect protocol and gRPC-Web.

The calls go through ``testkit.connect``'s stub, so the same helpers as the gRPC tests play whole
rounds, read logs and decode errors (the ``ErrorInfo`` a browser client would read from the Connect
error's details). Raw HTTP/1.1 requests pin what a browser sends and receives: CORS, Connect GET, a
``WatchGame`` stream over HTTP/1.1, the web table's files.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import http.client
import json
import os
import random
import signal
import struct
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from gostop.service.config import Config
from gostop.service.server import ListenError, Server
from gostop.v1 import game_pb2 as pb
from testkit.connect import running_http_server
from testkit.redis_server import RedisServer, free_port
from testkit.servers import OPERATOR, ROOT, Api, Game, config, expect, replay

PROTOCOLS = ["connect", "grpc-web"]


@pytest.fixture(params=PROTOCOLS, name="http_api")
async def http_api_fixture(request: pytest.FixtureRequest, store_url: str) -> AsyncIterator[Api]:
    async with running_http_server(config(store_url), request.param) as api:
        yield api


async def test_a_whole_match_over_the_http_port(http_api: Api) -> None:
    rules = await http_api.stub.ListRuleSets(pb.ListRuleSetsRequest())
    assert len(rules.rule_sets) >= 5
    game = await http_api.create("standard", players=2, seed=7, rounds=2)
    assert sorted(game.tokens) == [0, 1]
    watched: list[pb.WatchGameResponse] = []

    async def watch() -> None:
        async for item in http_api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=game.md(0)):
            watched.append(item)

    watcher = asyncio.ensure_future(watch())
    rng = random.Random(7)
    await http_api.play_round(game, rng)
    await http_api.next_round(game, 1)
    await http_api.play_round(game, rng)
    await asyncio.wait_for(watcher, 20)  # the stream ends with the match
    log = await http_api.log(game)
    match, _ = replay(log, 2)
    assert match.finished
    assert watched and watched[-1].version == log.entries[-1].version
    assert (await http_api.get(game, 0)).view.match.finished


async def test_errors_carry_their_reason(http_api: Api) -> None:
    game = await http_api.create("standard", players=2, seed=3)
    await expect(http_api.stub.GetGame(pb.GetGameRequest(game_id="no such!")), grpc.StatusCode.INVALID_ARGUMENT,
                 "MALFORMED_GAME_ID")
    await expect(http_api.get(Game("NoSuchGame", {}, 1, pb.CreateGameResponse())), grpc.StatusCode.NOT_FOUND,
                 "GAME_NOT_FOUND")
    await expect(http_api.stub.GetGame(pb.GetGameRequest(game_id=game.id),
                                       metadata=(("authorization", "Bearer gst1.x.0.bad"),)),
                 grpc.StatusCode.UNAUTHENTICATED, "BAD_CREDENTIALS")
    seat, view = await http_api.to_move(game)
    other = 1 - seat
    await expect(http_api.submit(game, other, view.legal_actions[0].id), grpc.StatusCode.FAILED_PRECONDITION,
                 "NOT_YOUR_TURN")
    await expect(http_api.submit(game, seat, view.legal_actions[0].id, version=game.version + 5),
                 grpc.StatusCode.ABORTED, "STALE_VERSION")
    await expect(http_api.stub.SubmitAction(pb.SubmitActionRequest(game_id=game.id, expected_version=game.version),
                                            metadata=game.md(seat)), grpc.StatusCode.INVALID_ARGUMENT, "MISSING_ACTION")
    await expect(http_api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game.id), metadata=game.md(0)),
                 grpc.StatusCode.PERMISSION_DENIED, "LOG_NOT_AVAILABLE")
    await expect(http_api.stub.CreateGame(pb.CreateGameRequest(preset="nosuch"), metadata=OPERATOR),
                 grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_PRESET")
    await expect(http_api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id, after_version=99)).__anext__(),
                 grpc.StatusCode.OUT_OF_RANGE, "VERSION_AHEAD")


async def test_the_same_credentials_as_the_grpc_port() -> None:
    async with running_http_server(config("", api_keys="player-key"), "connect") as api:
        await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard")), grpc.StatusCode.UNAUTHENTICATED)
        await expect(api.stub.CreateGame(pb.CreateGameRequest(preset="standard"), metadata=(("x-api-key", "x"),)),
                     grpc.StatusCode.UNAUTHENTICATED)
        created = await api.stub.CreateGame(pb.CreateGameRequest(preset="standard"),
                                            metadata=(("x-api-key", "player-key"),))
        other = await api.stub.CreateGame(pb.CreateGameRequest(preset="standard"),
                                          metadata=(("x-api-key", "player-key"),))
        await expect(api.stub.GetGame(pb.GetGameRequest(game_id=created.game_id),
                                      metadata=(("authorization", f"Bearer {other.seats[0].token}"),)),
                     grpc.StatusCode.PERMISSION_DENIED, "WRONG_GAME")


# ------------------------------------------------------------------------ raw HTTP/1.1


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
            ) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


@pytest.fixture(name="http_server")
async def http_server_fixture() -> AsyncIterator[Server]:
    server = Server(config("", http_listen="127.0.0.1:0", cors_origins="https://games.example.com"))
    await server.start()
    try:
        yield server
    finally:
        await server.stop(0)


LIST = "/gostop.v1.GameService/ListRuleSets"


async def test_cors_allows_listed_origins_and_refuses_others(http_server: Server) -> None:
    port = http_server.http_port
    preflight = {"origin": "https://games.example.com", "access-control-request-method": "POST",
                 "access-control-request-headers": "content-type,connect-protocol-version,authorization"}
    status, headers, _ = await asyncio.to_thread(request, port, "OPTIONS", LIST, headers=preflight)
    assert status == 204
    assert headers["access-control-allow-origin"] == "https://games.example.com"
    assert "authorization" in headers["access-control-allow-headers"]
    assert "connect-protocol-version" in headers["access-control-allow-headers"]
    status, headers, body = await asyncio.to_thread(
        request, port, "POST", LIST, b"{}", {"origin": "https://games.example.com", "content-type": "application/json"})
    assert status == 200 and b"ruleSets" in body
    assert headers["access-control-allow-origin"] == "https://games.example.com"
    assert "grpc-status-details-bin" in headers["access-control-expose-headers"]
    for origin in ("https://evil.example.com", "null", "http://games.example.com"):
        status, headers, _ = await asyncio.to_thread(
            request, port, "POST", LIST, b"{}", {"origin": origin, "content-type": "application/json"})
        assert status == 403 and "access-control-allow-origin" not in headers, origin
        status, headers, _ = await asyncio.to_thread(request, port, "OPTIONS", LIST,
                                                     headers={**preflight, "origin": origin})
        assert status == 403 and "access-control-allow-origin" not in headers, origin
    # The page's own origin needs no listing, also as https: behind a gateway that ends TLS.
    for own in (f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}"):
        status, _, _ = await asyncio.to_thread(request, port, "POST", LIST, b"{}",
                                               {"origin": own, "content-type": "application/json"})
        assert status == 200, own
    status, _, _ = await asyncio.to_thread(request, port, "POST", LIST, b"{}",
                                           {"origin": f"https://127.0.0.1:{port}.evil.example",
                                            "content-type": "application/json"})
    assert status == 403


async def test_list_rule_sets_by_connect_get(http_server: Server) -> None:
    message = base64.urlsafe_b64encode(b"{}").decode().rstrip("=")
    status, _, body = await asyncio.to_thread(
        request, http_server.http_port, "GET", f"{LIST}?connect=v1&encoding=json&base64=1&message={message}")
    assert status == 200, body
    assert {r["preset"] for r in json.loads(body)["ruleSets"]} == {"standard", "simple", "classic", "house", "arcade"}


def envelope(message: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(message)) + message


def read_envelopes(reply: http.client.HTTPResponse) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    while True:
        head = reply.read(5)
        if len(head) < 5:
            return out
        flags, size = struct.unpack(">BI", head)
        out.append((flags, reply.read(size)))
        if flags & 0x02:
            return out


async def test_watch_game_streams_over_http_1_1(http_server: Server) -> None:
    port = http_server.http_port
    create = pb.CreateGameRequest(preset="standard", seed=11)
    status, _, body = await asyncio.to_thread(
        request, port, "POST", "/gostop.v1.GameService/CreateGame", create.SerializeToString(),
        {"content-type": "application/proto", "x-api-key": "operator-key-for-tests"})
    assert status == 200
    created = pb.CreateGameResponse.FromString(body)

    def watch() -> list[tuple[int, bytes]]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/gostop.v1.GameService/WatchGame",
                           body=envelope(pb.WatchGameRequest(game_id=created.game_id).SerializeToString()),
                           headers={"content-type": "application/connect+proto",
                                    "authorization": f"Bearer {created.seats[0].token}",
                                    "connect-timeout-ms": "1500"})
        reply = connection.getresponse()
        assert reply.status == 200 and reply.version == 11  # HTTP/1.1, chunked
        try:
            return read_envelopes(reply)
        finally:
            connection.close()

    frames = await asyncio.to_thread(watch)
    events = [pb.WatchGameResponse.FromString(data) for flags, data in frames if not flags & 0x02]
    assert events and all(e.version == 1 for e in events), "the deal's events, then the stream waits"
    end = json.loads(frames[-1][1])
    assert frames[-1][0] & 0x02 and end["error"]["code"] == "deadline_exceeded", end


async def test_the_web_table_is_served_at_the_root(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>table</title>")
    (tmp_path / "assets" / "app-1234.js").write_text("console.log('hi')")
    (tmp_path.parent / "secret.txt").write_text("secret")
    from gostop.service import http as http_module

    server = Server(config("", http_listen="127.0.0.1:0"))
    assert server.http is not None
    server.http.app = http_module.build_app(server.calls, server.config, web=tmp_path)
    await server.start()
    try:
        port = server.http_port
        status, headers, body = await asyncio.to_thread(request, port, "GET", "/")
        assert status == 200 and b"<title>table</title>" in body
        assert headers["content-type"].startswith("text/html") and headers["cache-control"] == "no-cache"
        assert "default-src 'self'" in headers["content-security-policy"]
        status, headers, body = await asyncio.to_thread(request, port, "GET", "/assets/app-1234.js")
        assert status == 200 and "immutable" in headers["cache-control"]
        assert headers["content-type"].startswith(("text/javascript", "application/javascript"))
        assert body == b"console.log('hi')" and "content-encoding" not in headers
        status, headers, body = await asyncio.to_thread(request, port, "GET", "/assets/app-1234.js",
                                                        headers={"accept-encoding": "gzip, br"})
        assert status == 200 and headers["content-encoding"] == "gzip" and headers["vary"] == "accept-encoding"
        assert gzip.decompress(body) == b"console.log('hi')"
        status, _, body = await asyncio.to_thread(request, port, "GET", "/join/abc")  # the page's own route
        assert status == 200 and b"<title>table</title>" in body
        for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/missing.js"):
            status, _, body = await asyncio.to_thread(request, port, "GET", path)
            assert status == 404 and b"secret" not in body, path
    finally:
        await server.stop(0)


async def test_without_a_built_table_the_root_says_how_to_build_it(http_server: Server) -> None:
    from gostop.service.http import web_root

    status, _, body = await asyncio.to_thread(request, http_server.http_port, "GET", "/")
    if web_root() is None:
        assert status == 200 and b"make web" in body
    else:
        assert status == 200 and b"<html" in body.lower()


async def test_metrics_and_logs_say_the_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    async with running_http_server(config(""), "grpc-web") as api:
        await api.stub.ListRuleSets(pb.ListRuleSetsRequest())
        await expect(api.stub.GetGame(pb.GetGameRequest(game_id="x")), grpc.StatusCode.NOT_FOUND)
        assert api.server is not None
        registry = api.server.metrics.registry
        labels = {"grpc_type": "unary", "grpc_service": "gostop.v1.GameService", "grpc_method": "GetGame",
                  "protocol": "grpc-web", "grpc_code": "NOT_FOUND"}
        assert registry.get_sample_value("grpc_server_handled_total", labels) == 1
        assert registry.get_sample_value("grpc_server_in_flight_calls", {
            k: v for k, v in labels.items() if k != "grpc_code"}) == 0
    out = capsys.readouterr().out
    assert "protocol=grpc-web" in out and "rpc=GetGame" in out


async def test_a_port_in_use_is_one_line_naming_the_flag() -> None:
    port = free_port()
    first = Server(config("", http_listen=f"127.0.0.1:{port}"))
    await first.start()
    try:
        with pytest.raises(ListenError, match="--http-listen HOST:PORT"):
            Server(config("", http_listen=f"127.0.0.1:{port}"))
    finally:
        await first.stop(0)


def test_http_listen_and_cors_origins_are_checked() -> None:
    for bad in ({"http_listen": "8080"}, {"http_listen": "host:port"}, {"cors_origins": "games.example.com"},
                {"cors_origins": "https://games.example.com/path"}):
        with pytest.raises(ValueError):
            Config(**bad)  # type: ignore[arg-type]
    assert Config(http_listen="off").http_address() is None
    assert Config(http_listen="[::1]:8080").http_address() == ("::1", 8080)



@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_nothing_hidden_reaches_a_browser(protocol: str) -> None:
    """The secrecy check of the gRPC port (views, turn results, streams, error messages, every seat
    and a spectator, several presets) over the browsers' protocols."""
    from reliability.test_secrecy import _grpc_game, check

    rng = random.Random(f"secrecy-{protocol}")
    async with running_http_server(config(""), protocol) as api:
        checked = 0
        for _ in range(3):
            received, log = await _grpc_game(api, rng, [])
            checked += check(received, log)
    assert checked > 100


@pytest.mark.slow  # several server processes
async def test_every_worker_shares_the_http_port(service_redis: RedisServer) -> None:
    """``--workers 2``: both worker processes listen on the HTTP port (SO_REUSEPORT) and answer."""
    port, http_port = free_port(), free_port()
    env = {**os.environ, "GOSTOP_REDIS_URL": service_redis.url, "PYTHONPATH": str(ROOT), "GOSTOP_LOG_FORMAT": "json",
           "GOSTOP_HTTP_LISTEN": f"127.0.0.1:{http_port}", "GOSTOP_METRICS_PORT": "0"}
    process = subprocess.Popen([sys.executable, "-m", "gostop", "serve", "--workers", "2", "--listen",
                                f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while listeners(http_port) < 2:
            assert process.poll() is None and loop.time() < deadline, "the workers did not both listen"
            await asyncio.sleep(0.1)
        for _ in range(8):  # fresh connections, spread over the workers by the kernel
            status, _, body = await asyncio.to_thread(request, http_port, "POST", LIST, b"{}",
                                                      {"content-type": "application/json"})
            assert status == 200 and b"ruleSets" in body
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def listeners(port: int) -> int:
    """Sockets listening on a loopback TCP port (``/proc/net/tcp``)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
            count += 1
    return count


G = "/gostop.v1.GameService/"
NOT_A_MESSAGE = b"not a valid message of this method"
HOSTILE = [
    # (method, path, body, headers, HTTP status, Connect code or gRPC status in the body)
    ("POST", G + "CreateGame", b"\xff\xff\xff", {"content-type": "application/proto"}, 400, b"invalid_argument"),
    ("POST", G + "CreateGame", b"{not json", {"content-type": "application/json"}, 400, NOT_A_MESSAGE),
    ("POST", G + "CreateGame", b"x" * 5000, {"content-type": "application/proto"}, 429, b"resource_exhausted"),
    ("POST", G + "CreateGame", b"{}", {"content-type": "text/plain"}, 415, b""),
    ("POST", G + "Nope", b"{}", {"content-type": "application/json"}, 404, b""),
    ("POST", G + "GetGame", b'{"gameId":"abc"}',
     {"content-type": "application/json", "authorization": "Bearer \xff\xfe"}, 401, b"malformed seat token"),
    ("POST", G + "GetGame", b'{"gameId":"abc"}', {"content-type": "application/json", "x-api-key": "k\xc3\xa9"},
     401, b"unknown API key"),
    ("POST", G + "GetGame", b'{"gameId":"abc"}', {"content-type": "application/json", "connect-timeout-ms": "-5"},
     400, b"invalid_argument"),
    ("POST", G + "SubmitAction", b'{"gameId":"abc","expectedVersion":"99999999999999999999999"}',
     {"content-type": "application/json"}, 400, NOT_A_MESSAGE),
    ("POST", G + "WatchGame", b"\x00\x00\x00\x00\x05hello", {"content-type": "application/connect+proto"}, 200,
     NOT_A_MESSAGE),
    ("POST", G + "WatchGame", b"\x00\xff\xff\xff\xff", {"content-type": "application/connect+proto"}, 200,
     b"resource_exhausted"),
    ("POST", G + "GetGame", b"\x01\x00\x00\x00\x02\x0a\x00",
     {"content-type": "application/grpc-web+proto", "grpc-encoding": "gzip"}, 200, b"grpc-status: 3"),
    ("POST", G + "GetGame", b"junk", {"content-type": "application/json", "content-encoding": "gzip"}, 400,
     b"invalid_argument"),
    ("GET", G + "ListRuleSets?connect=v1&encoding=json&message=%ZZ", b"", {}, 400, NOT_A_MESSAGE),
    ("GET", G + "GetGame?connect=v1&encoding=json&message=%7B%7D", b"", {}, 405, b""),
    ("PUT", G + "GetGame", b"{}", {"content-type": "application/json"}, 405, b""),
]


def raw(port: int, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """A request with header values sent as the bytes given (latin-1), as a hostile client may."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for key, value in headers.items():
            connection.putheader(key, value.encode("latin-1"))
        connection.putheader("content-length", str(len(body)))
        connection.endheaders()
        connection.send(body)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


async def test_hostile_http_requests_get_the_callers_error_and_are_counted() -> None:
    """Regression: header bytes that are not UTF-8 gave the library's 500 (code unknown), and refusals
    made before any handler ran (bad bodies, sizes, timeouts, compression) were neither logged nor
    counted and carried no ErrorInfo."""
    server = Server(config("", http_listen="127.0.0.1:0", max_message_bytes=1000))
    await server.start()
    try:
        for method, path, body, headers, status, marker in HOSTILE:
            got, reply = await asyncio.to_thread(raw, server.http_port, method, path, body, headers)
            assert got == status, (path, headers, got, reply[:300])
            assert marker in reply, (path, headers, reply[:300])
            assert b'"unknown"' not in reply and b'"internal"' not in reply, reply[:300]
        registry = server.metrics.registry
        total = sum(s.value for family in registry.collect() if family.name == "grpc_server_handled"
                    for s in family.samples if s.name == "grpc_server_handled_total")
        assert total == len(HOSTILE), "every refused call is counted"
        assert not any(s.labels.get("grpc_code") in ("INTERNAL", "UNKNOWN") for family in registry.collect()
                       for s in family.samples)
    finally:
        await server.stop(0)
