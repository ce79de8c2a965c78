"""Hostile framing on the HTTP port: fuzzed requests to every method over HTTP/1.1 (content types,
encodings, envelope flags and lengths, timeouts, truncated and mutated messages, WebSocket upgrades,
odd paths) and gRPC over cleartext HTTP/2. Nothing a caller sends may end in a 5xx, in INTERNAL or
UNKNOWN, or be counted as either in ``grpc_server_handled_total``."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
from collections import Counter

from gostop.service.server import Server
from gostop.v1 import game_pb2 as pb
from testkit.h2_raw import RawConnection
from testkit.servers import OPERATOR, config, internal_or_unknown_calls

from .harness import record, scaled

SERVICE = "gostop.v1.GameService"
METHODS = [m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods]
CONTENT_TYPES = ["application/proto", "application/json", "application/connect+proto", "application/connect+json",
                 "application/grpc-web+proto", "application/grpc-web", "application/grpc-web-text",
                 "application/grpc", "application/grpc+json", "text/plain", "application/proto; charset=\xff", ""]
ENCODING_HEADERS = ["connect-content-encoding", "grpc-encoding", "content-encoding", "connect-accept-encoding"]
ENCODINGS = ["identity", "gzip", "br", "zstd", "snappy", "", "gzip, gzip", "\xe9"]
BAD_CODES = ("internal", "unknown", "data_loss")


def _message(rng: random.Random, game_id: str) -> bytes:
    body = rng.choice([pb.GetGameRequest(game_id=game_id), pb.WatchGameRequest(game_id=game_id, after_version=1),
                       pb.CreateGameRequest(preset="standard"), pb.ListRuleSetsRequest()]).SerializeToString()
    if rng.random() < 0.3:
        data = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            if data and rng.random() < 0.5:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            else:
                data += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 6)))
        body = bytes(data)
    return body


def _body(rng: random.Random, game_id: str) -> bytes:
    message = _message(rng, game_id)
    shape = rng.randrange(6)
    if shape == 0:
        return message
    flags = rng.choice([0, 1, 2, 3, 0x80, 0x81, 0xFF])
    length = len(message)
    if shape == 1:
        length = rng.choice([0, length + 5, 1 << 31, 0xFFFFFFFF])
    frame = struct.pack(">BI", flags, length) + message
    if shape == 2:
        frame = frame[:rng.randint(0, len(frame))]
    if shape == 3:
        frame += struct.pack(">BI", rng.choice([0, 2, 0x80]), 2) + b"{}"
    return frame


def _request(rng: random.Random, game_id: str) -> bytes:
    method = rng.choice([*METHODS, "NoSuchMethod", ""])
    path = f"/{SERVICE}/{method}"
    verb = "POST"
    if rng.random() < 0.1:
        verb = rng.choice(["GET", "PUT", "OPTIONS", "HEAD"])
        path += rng.choice(["", "?message=%ff&encoding=proto", "?encoding=json&message={}", "?base64=1&message=!!"])
    headers = {"host": "127.0.0.1", "connection": "close"}
    if rng.random() < 0.9:
        headers["content-type"] = rng.choice(CONTENT_TYPES)
    for _ in range(rng.randint(0, 2)):
        headers[rng.choice(ENCODING_HEADERS)] = rng.choice(ENCODINGS)
    if rng.random() < 0.3:
        headers[rng.choice(["connect-timeout-ms", "grpc-timeout"])] = rng.choice(
            ["0", "1", "-1", "99999999999", "1S", "10m", "abc", "1H"])
    if rng.random() < 0.2:
        headers["connect-protocol-version"] = rng.choice(["1", "2", ""])
    if rng.random() < 0.2:
        headers["x-api-key"] = OPERATOR[0][1]
    body = _body(rng, game_id)
    lines = [f"{verb} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items()), f"content-length: {len(body)}"]
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body


def _exchange(port: int, data: bytes) -> bytes:
    sock = socket.create_connection(("127.0.0.1", port), timeout=15)
    received = b""
    try:
        sock.sendall(data)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except OSError:
        return received
    finally:
        sock.close()


def _verdict(reply: bytes) -> str:
    """What a reply says: its HTTP status and, where there is one, its gRPC status or Connect code."""
    if not reply.startswith(b"HTTP/1.1 "):
        return "closed" if not reply else "garbled"
    status = int(reply.split(b" ", 2)[1])
    lower = reply.lower()
    at = lower.find(b"grpc-status:")
    if at >= 0:
        value = lower[at + len(b"grpc-status:"):].split(b"\r", 1)[0].strip().decode("latin-1")
        return f"{status} grpc-status {value}"
    for code in BAD_CODES:
        if f'"code": "{code}"'.encode() in reply or f'"code":"{code}"'.encode() in reply:
            return f"{status} connect {code}"
    return str(status)


def _bad(verdict: str) -> bool:
    """A server error: a 5xx (but Connect's 501 for an unsupported compression or method, which is
    UNIMPLEMENTED), INTERNAL or UNKNOWN, or no HTTP at all."""
    server_error = verdict.split(" ")[0].startswith("5") and verdict != "501"
    return server_error or verdict.endswith(("grpc-status 2", "grpc-status 13")) \
        or any(verdict.endswith(f"connect {code}") for code in BAD_CODES) or verdict == "garbled"


async def test_fuzzed_http_framing_gets_clear_answers() -> None:
    server = Server(config(http_listen="127.0.0.1:0", http_read_timeout_seconds=1.0))
    await server.start()
    try:
        created = await server.games.create(pb.CreateGameRequest(preset="standard"), server.games.auth.caller(OPERATOR))
        rng = random.Random(2024)
        verdicts: Counter[str] = Counter()
        bad: list[tuple[bytes, str]] = []
        for _ in range(scaled(300, 5.0)):
            request = _request(rng, created.game_id)
            verdict = _verdict(await asyncio.to_thread(_exchange, server.http_port, request))
            verdicts[verdict] += 1
            if _bad(verdict):
                bad.append((request[:300], verdict))
        ws = (b"GET / HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
              b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n")
        for path in (b"/index.html%00.js", b"/%ff%fe", b"/" + b"a" * 4000, b"/..%2f..%2fetc/passwd"):
            for request in (ws.replace(b"GET / ", b"GET " + path + b" "),
                            b"GET " + path + b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"):
                verdict = _verdict(await asyncio.to_thread(_exchange, server.http_port, request))
                verdicts[verdict] += 1
                if _bad(verdict):
                    bad.append((request[:300], verdict))
        assert not bad, f"{len(bad)} requests got a server error: {bad}"
        assert internal_or_unknown_calls(server) == 0
        record(http_framing_fuzzed=sum(verdicts.values()))
        print("verdicts:", json.dumps(dict(verdicts.most_common()), ensure_ascii=True))
    finally:
        await server.stop(0)


def _grpc_h2(port: int, method: str, body: bytes, extra: list[tuple[bytes, bytes]]) -> tuple[int | None, bool]:
    conn = RawConnection(port)
    try:
        stream = conn.start(method, extra, port)
        conn.send(stream, body, end=True)
        reply = conn.reply(stream)
        return reply.status, reply.reset or conn.closed
    finally:
        conn.close()


async def test_fuzzed_grpc_over_cleartext_http2_on_the_http_port_gets_clear_answers() -> None:
    server = Server(config(http_listen="127.0.0.1:0"))
    await server.start()
    try:
        created = await server.games.create(pb.CreateGameRequest(preset="standard"), server.games.auth.caller(OPERATOR))
        rng = random.Random(7)
        statuses: Counter[int | None] = Counter()
        for _ in range(scaled(60, 1.0)):
            method = rng.choice([*METHODS, "NoSuchMethod"])
            encoding = rng.choice([b"identity", b"gzip", b"br", b"\xe9"])
            extra = [(b"grpc-encoding", encoding)] if rng.random() < 0.5 else []
            status, _ = await asyncio.to_thread(_grpc_h2, server.http_port, method, _body(rng, created.game_id),
                                                extra)
            statuses[status] += 1
            assert status not in (2, 13), (method, extra, status)
        assert internal_or_unknown_calls(server) == 0
        record(http2_framing_fuzzed=sum(statuses.values()))
    finally:
        await server.stop(0)
