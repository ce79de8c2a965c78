"""The HTTP port: ``gostop.v1.GameService`` over the Connect protocol and gRPC-Web, and the web table.

Browsers cannot speak gRPC over HTTP/2 directly, so the service also answers on an HTTP port
(HTTP/1.1 and HTTP/2 cleartext) through ``connectrpc``'s ASGI application, which speaks the
Connect protocol, gRPC-Web and gRPC. Every call goes through the same per-call wrapper
(``calls.Calls``) as the gRPC port's: the same credentials, errors (Connect codes, with the
``google.rpc.ErrorInfo`` in the details), limits, metrics (labelled by ``protocol``) and log line.

Around it: CORS for the origins the operator allows (``GOSTOP_CORS_ORIGINS``; a page of another
origin is refused unless listed) and the web table's files at ``/`` (the built page, shipped in
the package as ``gostop/web``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import gzip
import json
import mimetypes
import socket
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import structlog
from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from google.rpc import error_details_pb2, status_pb2

from gostop.v1 import game_pb2 as pb
from gostop.v1.game_connect import GameServiceASGIApplication

from .calls import SERVICE, Calls
from .config import Config
from .errors import DOMAIN, Code, ServiceError, invalid
from .metrics import Metrics
from .status import connect_code, connect_error

log = structlog.get_logger("gostop")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

class _Checked:
    """A codec whose decoding failure is the service's own error (``MALFORMED_REQUEST``, with its
    ``ErrorInfo``), as on the gRPC port, rather than the library's bare one."""

    def __init__(self, inner: Codec[Any, Any]) -> None:
        self.inner = inner

    def name(self) -> str:
        return self.inner.name()

    def encode(self, message: Any) -> bytes:
        return self.inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            return self.inner.decode(data, message_class)
        except Exception:
            raise connect_error(invalid("MALFORMED_REQUEST", "the request is not a valid message of this "
                                        "method")) from None


CODECS = [_Checked(google_protobuf_binary_codec()), _Checked(google_protobuf_json_codec())]


def protocol_of(content_type: str) -> str:
    """The protocol label of a call from its content type: ``connect``, ``grpc-web`` or ``grpc``."""
    if content_type.startswith("application/grpc-web"):
        return "grpc-web"
    if content_type.startswith("application/grpc"):
        return "grpc"
    return "connect"


_HANDLED: contextvars.ContextVar[list[bool]] = contextvars.ContextVar("gostop_http_handled")
"""Set per request by ``Refusals``: whether the call reached a handler (and so was observed there)."""


class ConnectTransport:
    """A call on the HTTP port, as the per-call wrapper (``calls.Calls``) sees it."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        headers = ctx.request_headers
        self.protocol = protocol_of(headers.get("content-type", "") if ctx.http_method == "POST" else "")
        self.log_fields = {"protocol": self.protocol}
        seen = _HANDLED.get(None)
        if seen is not None:
            seen.append(True)

    def metadata(self) -> list[tuple[str, str]]:
        return [(k.lower(), v) for k, v in self.ctx.request_headers.allitems()]

    def peer(self) -> str:
        return self.ctx.client_address or ""

    async def abort(self, err: ServiceError) -> NoReturn:
        raise connect_error(err) from None


class ConnectGameService:
    """``gostop.v1.GameService`` for ``connectrpc``: each method one call of ``calls``."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    async def _unary(self, name: str, request: Any, ctx: Any) -> Any:
        return await self.calls.unary(name, ConnectTransport(ctx), lambda: request)

    async def list_rule_sets(self, request: pb.ListRuleSetsRequest, ctx: Any) -> pb.ListRuleSetsResponse:
        return await self._unary("ListRuleSets", request, ctx)  # type: ignore[no-any-return]

    async def create_game(self, request: pb.CreateGameRequest, ctx: Any) -> pb.CreateGameResponse:
        return await self._unary("CreateGame", request, ctx)  # type: ignore[no-any-return]

    async def get_game(self, request: pb.GetGameRequest, ctx: Any) -> pb.GetGameResponse:
        return await self._unary("GetGame", request, ctx)  # type: ignore[no-any-return]

    async def submit_action(self, request: pb.SubmitActionRequest, ctx: Any) -> pb.SubmitActionResponse:
        return await self._unary("SubmitAction", request, ctx)  # type: ignore[no-any-return]

    async def start_next_round(self, request: pb.StartNextRoundRequest, ctx: Any) -> pb.StartNextRoundResponse:
        return await self._unary("StartNextRound", request, ctx)  # type: ignore[no-any-return]

    async def set_auto_play(self, request: pb.SetAutoPlayRequest, ctx: Any) -> pb.SetAutoPlayResponse:
        return await self._unary("SetAutoPlay", request, ctx)  # type: ignore[no-any-return]

    async def get_game_log(self, request: pb.GetGameLogRequest, ctx: Any) -> pb.GetGameLogResponse:
        return await self._unary("GetGameLog", request, ctx)  # type: ignore[no-any-return]

    async def watch_game(self, request: pb.WatchGameRequest, ctx: Any) -> AsyncIterator[pb.WatchGameResponse]:
        async for item in self.calls.stream("WatchGame", ConnectTransport(ctx), lambda: request):
            yield item


_STATUS_CODES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "UNIMPLEMENTED",
                 405: "UNIMPLEMENTED", 408: "DEADLINE_EXCEEDED", 413: "RESOURCE_EXHAUSTED", 415: "INVALID_ARGUMENT",
                 429: "RESOURCE_EXHAUSTED"}
_METHODS = frozenset(m.name for m in pb.DESCRIPTOR.services_by_name["GameService"].methods)


def _refusal(status: int, body: bytes, trailers: dict[bytes, bytes]) -> tuple[str, str]:
    """The gRPC code name and ErrorInfo reason of a refused call, from what was sent back: a Connect
    error body, a Connect end-of-stream message, a gRPC-Web trailer frame, gRPC trailers, or the
    HTTP status."""
    error: Any = None
    text = body
    if status == 200 and len(body) >= 5 and body[0] & 0x80:  # gRPC-Web trailers
        lines = dict(line.split(b":", 1) for line in body[5:].split(b"\r\n") if b":" in line)
        trailers = {k.strip().lower(): v.strip() for k, v in lines.items()}
    elif status == 200 and len(body) >= 5 and body[0] & 0x02:  # Connect end of stream
        text = body[5:]
    if b"grpc-status" in trailers:
        code = int(trailers[b"grpc-status"]) if trailers[b"grpc-status"].strip().isdigit() else 2
        name = next((c.name for c in Code if c.value == code), "UNKNOWN")
        reason = ""
        with contextlib.suppress(Exception):
            details = trailers.get(b"grpc-status-details-bin", b"").strip()
            for detail in status_pb2.Status.FromString(base64.b64decode(details + b"=" * (-len(details) % 4))).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason = info.reason
        return name, reason
    with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
        doc = json.loads(text)
        error = doc.get("error", doc)
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        name = error["code"].upper()
        name = "CANCELLED" if name == "CANCELED" else name
        reason = ""
        for detail in error.get("details", []) or []:
            with contextlib.suppress(Exception):
                if detail.get("type") == "google.rpc.ErrorInfo":
                    value = detail["value"]
                    reason = error_details_pb2.ErrorInfo.FromString(
                        base64.b64decode(value + "=" * (-len(value) % 4))).reason
        return (name if name in Code.__members__ else "UNKNOWN"), reason
    return _STATUS_CODES.get(status, "UNKNOWN"), ""


class Refusals:
    """Calls the Connect application refused before any handler ran (a body too large, bytes that are
    no message of the method, a bad timeout or compression, an unknown method) are counted and logged
    like every other failed call; header values that are not UTF-8 reach the service as text that
    fails its checks (a malformed credential), never as the library's decoding error."""

    def __init__(self, app: ASGIApp, calls: Calls) -> None:
        self.app = app
        self.calls = calls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(f"/{SERVICE}/"):
            await self.app(scope, receive, send)
            return
        headers = []
        for key, value in scope.get("headers", ()):
            try:
                bytes(value).decode("utf-8")
            except UnicodeDecodeError:
                value = bytes(value).decode("latin-1").encode("utf-8")
            headers.append((key, value))
        scope = {**scope, "headers": headers}
        try:
            scope["query_string"].decode("utf-8")
        except (KeyError, UnicodeDecodeError, AttributeError):
            scope["query_string"] = b""
        name = path.rsplit("/", 1)[1]
        handled: list[bool] = []
        token = _HANDLED.set(handled)
        status = 0
        head = bytearray()
        trailers: dict[bytes, bytes] = {}
        started = time.perf_counter()

        async def watching(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                trailers.update((bytes(k).lower(), bytes(v)) for k, v in message.get("headers", ())
                                if bytes(k).lower() in (b"grpc-status", b"grpc-status-details-bin"))
            elif message["type"] == "http.response.body" and not handled and len(head) < 4096:
                head.extend(message.get("body", b"")[:4096])
            elif message["type"] == "http.response.trailers":
                trailers.update((bytes(k).lower(), bytes(v)) for k, v in message.get("headers", ()))
            await send(message)

        try:
            await self.app(scope, receive, watching)
        finally:
            _HANDLED.reset(token)
        if handled or not status:
            return
        code, reason = _refusal(status, bytes(head), trailers)
        content_type = next((bytes(v).decode("latin-1") for k, v in headers if k == b"content-type"), "")
        self.calls.refused(name if name in _METHODS else "unknown", protocol_of(content_type), code, reason, started)


# ------------------------------------------------------------------------- framing the library misreads

_ENVELOPED = ("application/grpc", "application/connect+")
"""Content types whose body is length-prefixed messages (gRPC, gRPC-Web, Connect streaming)."""


def _error_headers(code: Code, reason: str, message: str) -> list[tuple[bytes, bytes]]:
    """A gRPC Trailers-Only answer's status headers: code, message and the ``ErrorInfo``."""
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN)
    status = status_pb2.Status(code=code.value, message=message)
    status.details.add().Pack(info)
    return [(b"grpc-status", str(code.value).encode()),
            (b"grpc-message", urllib.parse.quote(message, safe=" ").encode()),
            (b"grpc-status-details-bin", base64.b64encode(status.SerializeToString()).rstrip(b"="))]


async def protocol_error(scope: Scope, send: Send, code: Code, reason: str, message: str,
                         extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer a call with a service error in the call's own protocol: gRPC and gRPC-Web as
    Trailers-Only, Connect streaming as an end-of-stream message, Connect unary as its JSON error."""
    content_type = _header(scope, b"content-type") or ""
    if content_type.startswith("application/grpc"):
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", content_type.split(";")[0].encode("latin-1")), *_error_headers(code, reason, message),
            *extra]})
        await send({"type": "http.response.body", "body": b""})
        return
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN)
    doc = {"code": connect_code(code).name.lower(), "message": message,
           "details": [{"type": "google.rpc.ErrorInfo",
                        "value": base64.b64encode(info.SerializeToString()).decode().rstrip("=")}]}
    if content_type.startswith("application/connect+"):
        body = json.dumps({"error": doc}).encode()
        await _plain(send, 200, struct_prefix(0x02, body), content_type.split(";")[0].encode("latin-1"), extra)
        return
    status = {Code.INVALID_ARGUMENT: 400, Code.UNIMPLEMENTED: 501}.get(code, 400)
    await _plain(send, status, json.dumps(doc).encode(), b"application/json", extra)


def struct_prefix(flags: int, body: bytes) -> bytes:
    """An enveloped message: flags, big-endian length, body."""
    return bytes([flags]) + len(body).to_bytes(4, "big") + body


class Framing:
    """Requests of the API whose framing ``connectrpc`` answers UNKNOWN or INTERNAL are answered here
    with the caller's error and its reason: gRPC over HTTP/1.1 (which cannot carry trailers) is
    UNIMPLEMENTED (``GRPC_NEEDS_HTTP2``); a message flagged compressed in a request naming no
    compression is INVALID_ARGUMENT (``MALFORMED_REQUEST``), not an INTERNAL that any caller could
    count up."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = _header(scope, b"content-type") or ""
        api_call = scope["type"] == "http" and str(scope.get("path", "")).startswith(f"/{SERVICE}/")
        grpc_web = content_type.startswith("application/grpc-web")
        if api_call and content_type.startswith("application/grpc") and not grpc_web \
                and scope.get("http_version") != "2":
            await protocol_error(scope, send, Code.UNIMPLEMENTED, "GRPC_NEEDS_HTTP2",
                                 "gRPC needs HTTP/2: call the gRPC port, or use Connect or gRPC-Web on this port")
            return
        if not api_call or scope.get("method") != "POST" or not content_type.startswith(_ENVELOPED):
            await self.app(scope, receive, send)
            return
        buffered: list[dict[str, Any]] = []
        first = b""
        while True:  # the first byte of the body: the first message's flags
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            first = bytes(message.get("body", b""))[:1]
            if first or not message.get("more_body", False):
                break
        encoding_header = b"connect-content-encoding" if content_type.startswith("application/connect+") \
            else b"grpc-encoding"
        encoding = (_header(scope, encoding_header) or "identity").strip().lower()
        if first and first[0] & 0x01 and encoding == "identity":
            await protocol_error(scope, send, Code.INVALID_ARGUMENT, "MALFORMED_REQUEST",
                                 f"the message is flagged compressed but the request names no compression "
                                 f"({encoding_header.decode()})")
            return

        async def replay() -> dict[str, Any]:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)


# ------------------------------------------------------------------------------------ the edge


class Edge:
    """The outermost layer of the HTTP port: what no protocol library should see.

    - a WebSocket request is refused (400, this port speaks none) instead of failing inside the API;
    - with ``GOSTOP_HTTP_HOSTS`` set, a request naming another ``Host`` is refused 421 (a page of a
      rebound DNS name sends its own name as Host and Origin, so CORS alone cannot tell);
    - a request body that stops arriving for ``GOSTOP_HTTP_READ_TIMEOUT_SECONDS`` is answered 408
      and its connection closed;
    - an exception escaping the application is logged (rate-limited, as on the gRPC port) and
      answered 500 if nothing was sent yet, never left to the HTTP server's silent 500.
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[str], read_timeout: float, tracebacks: Any,
                 metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.hosts = frozenset(h.lower() for h in hosts)
        self.read_timeout = read_timeout
        self.tracebacks = tracebacks

    def host_allowed(self, scope: Scope) -> bool:
        if not self.hosts:
            return True
        host = (_header(scope, b"host") or "").strip().lower()
        if host in self.hosts:
            return True
        name, sep, port = host.rpartition(":")
        return bool(sep) and port.isdigit() and not name.endswith(":") and name in self.hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            self.metrics.http_refused.labels("WEBSOCKET_NOT_SERVED").inc()
            await _refuse_websocket(scope, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.host_allowed(scope):
            self.metrics.http_refused.labels("HOST_NOT_SERVED").inc()
            log.warning("http refused", status=421, reason="HOST_NOT_SERVED")
            await _plain(send, 421, b"this server does not answer for this Host (GOSTOP_HTTP_HOSTS)\n")
            return
        body_done = False
        timed_out = False
        started = False

        async def timed_receive() -> dict[str, Any]:
            nonlocal body_done, timed_out
            if body_done or timed_out:
                return await receive() if not timed_out else {"type": "http.disconnect"}
            try:
                async with asyncio.timeout(self.read_timeout):
                    message = await receive()
            except TimeoutError:
                timed_out = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the answer is the 408 below
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, tracked_send)
        except Exception as exc:
            self.tracebacks.report(f"HTTP {scope.get('method', '')}", exc)
            if not started and not timed_out:
                started = True
                await _plain(send, 500, b"internal error\n")
        if timed_out and not started:
            self.metrics.http_refused.labels("REQUEST_BODY_TIMEOUT").inc()
            log.warning("http refused", status=408, reason="REQUEST_BODY_TIMEOUT",
                        read_timeout_seconds=self.read_timeout)
            close = [(b"connection", b"close")] if scope.get("http_version") in ("1.0", "1.1") else []
            content_type = _header(scope, b"content-type") or ""
            if str(scope.get("path", "")).startswith(f"/{SERVICE}/") and content_type.startswith(_ENVELOPED):
                # gRPC clients read a bare 408 as UNKNOWN: answer in the call's protocol
                await protocol_error(scope, send, Code.DEADLINE_EXCEEDED, "REQUEST_BODY_TIMEOUT",
                                     "the request body stopped arriving (GOSTOP_HTTP_READ_TIMEOUT_SECONDS)", close)
            else:
                await _plain(send, 408, b"the request body stopped arriving (GOSTOP_HTTP_READ_TIMEOUT_SECONDS)\n",
                             extra=close)


async def _refuse_websocket(scope: Scope, send: Send) -> None:
    """Refuse a WebSocket handshake with a 400 and why (Hypercorn's denial response), or a plain
    close where the server offers no such response."""
    log.warning("http refused", status=400, reason="WEBSOCKET_NOT_SERVED")
    body = b"this server speaks no WebSocket: call it with Connect or gRPC-Web\n"
    if "websocket.http.response" in (scope.get("extensions") or {}):
        await send({"type": "websocket.http.response.start", "status": 400, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1003})


# ------------------------------------------------------------------------------------- CORS

_ALLOW_HEADERS = ("content-type, connect-protocol-version, connect-timeout-ms, connect-accept-encoding, "
                  "connect-content-encoding, grpc-timeout, grpc-accept-encoding, grpc-encoding, x-grpc-web, "
                  "x-user-agent, authorization, x-api-key")
_EXPOSE_HEADERS = ("grpc-status, grpc-message, grpc-status-details-bin, grpc-encoding, grpc-accept-encoding, "
                   "connect-content-encoding, connect-accept-encoding")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class Cors:
    """CORS around ``app``: the page's own origin always; others only if listed (``*``: any).

    A request from an origin not allowed is refused (403) before the application sees it, so a
    foreign page cannot make a browser act with credentials it holds, even where no preflight would
    be sent."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(origins)

    def allowed(self, scope: Scope, origin: str) -> bool:
        """A listed origin, or the page's own: the origin's host and port are the request's
        ``Host``, whatever its scheme (behind a gateway that ends TLS, the page is https while the
        request reaching the server is plain http)."""
        if "*" in self.origins or origin in self.origins:
            return True
        host = _header(scope, b"host")
        scheme, sep, authority = origin.partition("://")
        return host is not None and sep == "://" and scheme in ("http", "https") and authority == host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to set up or tear down: the server owns its resources
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        origin = _header(scope, b"origin") if scope["type"] == "http" else None
        if origin is None:
            await self.app(scope, receive, send)
            return
        if not self.allowed(scope, origin):
            await _plain(send, 403, b"this origin may not call this server (GOSTOP_CORS_ORIGINS)\n")
            return
        vary = [(b"vary", b"origin")]
        allow = [(b"access-control-allow-origin", origin.encode("latin-1")), *vary]
        if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method") is not None:
            await send({"type": "http.response.start", "status": 204, "headers": [
                *allow, (b"access-control-allow-methods", b"POST, GET"),
                (b"access-control-allow-headers", _ALLOW_HEADERS.encode()),
                (b"access-control-max-age", b"7200")]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *allow,
                                                   (b"access-control-expose-headers", _EXPOSE_HEADERS.encode())]}
            await send(message)

        await self.app(scope, receive, with_cors)


async def _plain(send: Send, status: int, body: bytes, content_type: bytes = b"text/plain; charset=utf-8",
                 extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type), (b"content-length", str(len(body)).encode()), *extra]})
    await send({"type": "http.response.body", "body": body})


# ------------------------------------------------------------------------------- the web table

_NOT_BUILT = b"""<!doctype html><meta charset="utf-8"><title>gostop</title>
<p>The web table is not built into this installation. In a source checkout, <code>make web</code>
builds it (it needs <code>npm</code>); the Connect and gRPC-Web API is served here all the same.</p>
"""
_SECURITY = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
             (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self' "
              b"'unsafe-inline'; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")]


def web_root() -> Path | None:
    """The built web table in the installed package (``gostop/web``), if it is there."""
    try:
        root = Path(str(resources.files("gostop") / "web"))
    except (ModuleNotFoundError, TypeError):
        return None
    return root if (root / "index.html").is_file() else None


class WebTable:
    """The web table's files (GET and HEAD), the API elsewhere: ``/`` is ``index.html``, a path
    with no such file and no extension too (the page's own routes), anything else 404."""

    def __init__(self, api: ASGIApp, root: Path | None) -> None:
        self.api = api
        self.root = root.resolve() if root is not None else None
        self._gzipped: dict[Path, bytes] = {}
        """Text files gzipped once (the package's files never change while it runs)."""

    def _file(self, path: str) -> Path | None:
        assert self.root is not None
        relative = path.lstrip("/") or "index.html"
        try:  # a NUL byte or a name too long for the file system is a file that is not there
            candidate = (self.root / relative).resolve()
            if not candidate.is_relative_to(self.root):
                return None
            if candidate.is_file():
                return candidate
        except (ValueError, OSError):
            return None
        if "." not in relative.rsplit("/", 1)[-1]:
            return self.root / "index.html"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(f"/{SERVICE}/") or scope["method"] not in ("GET", "HEAD"):
            await self.api(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        if self.root is None:
            await _plain(send, 200 if path == "/" else 404, b"" if head else _NOT_BUILT, b"text/html; charset=utf-8",
                         _SECURITY)
            return
        found = self._file(path)
        if found is None:
            await _plain(send, 404, b"" if head else b"not found\n")
            return
        body = found.read_bytes()
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        text = kind.startswith("text/") or kind in ("application/javascript", "image/svg+xml", "application/json")
        if text:
            kind += "; charset=utf-8"
        immutable = found.parent.name == "assets"  # Vite's content-hashed files
        cache = b"public, max-age=31536000, immutable" if immutable else b"no-cache"
        extra = [(b"vary", b"accept-encoding")] if text else []
        if text and "gzip" in (_header(scope, b"accept-encoding") or ""):
            packed = self._gzipped.get(found)
            if packed is None:
                packed = self._gzipped[found] = gzip.compress(body, 9, mtime=0)
            body = packed
            extra.append((b"content-encoding", b"gzip"))
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
            (b"cache-control", cache), *extra, *_SECURITY]})
        await send({"type": "http.response.body", "body": b"" if head else body})


def build_app(calls: Calls, config: Config, web: Path | None = None) -> ASGIApp:
    """The whole HTTP application: the edge (WebSocket, Host, read timeout) around CORS around the
    web table around the framing checks around the Connect application."""
    api: ASGIApp = GameServiceASGIApplication(ConnectGameService(calls), read_max_bytes=config.max_message_bytes,
                                              codecs=CODECS)
    table = WebTable(Framing(api), web if web is not None else web_root())
    return Edge(Cors(Refusals(table, calls), config.keys("cors_origins")), config.keys("http_hosts"),
                config.http_read_timeout_seconds, calls.tracebacks, calls.metrics)


# --------------------------------------------------------------------------------- serving it


def http_socket(host: str, port: int, reuse_port: bool) -> socket.socket:
    """A bound, listening-ready TCP socket (SO_REUSEPORT among the workers of one supervisor)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class HttpServer:
    """The ASGI application served on one socket by Hypercorn's connection handling (HTTP/1.1 and
    HTTP/2 cleartext) on the server's own event loop.

    The serving loop is this class's own rather than Hypercorn's ``worker_serve`` so that the port
    closes connections like the gRPC port does: an idle connection after the idle time, any
    connection once older than the connection age (at once when no request is in progress, else when
    its requests end or after the grace), and on stop every connection still open after the drain,
    each ending by being closed, never by a cancelled task writing a traceback outside the log."""

    def __init__(self, app: ASGIApp, sock: socket.socket, config: Config) -> None:
        self.app = app
        self.sock = sock
        self.port = int(sock.getsockname()[1])
        self.grace = config.drain_seconds
        self.keep_alive = config.max_connection_idle_seconds
        self.max_age = config.max_connection_age_seconds
        self.age_grace = config.max_connection_age_grace_seconds
        self._server: asyncio.AbstractServer | None = None
        self._connections: dict[asyncio.Task[None], Any] = {}
        self._context: Any = None
        self._previous_handler: Any = None
        self._handler_set = False

    async def start(self) -> None:
        from hypercorn.asyncio.worker_context import WorkerContext
        from hypercorn.config import Config as HypercornConfig
        from hypercorn.utils import wrap_app

        cfg = HypercornConfig()
        cfg.accesslog = None
        cfg.errorlog = None
        cfg.graceful_timeout = self.grace
        cfg.keep_alive_timeout = self.keep_alive
        cfg.include_server_header = False
        app = wrap_app(self.app, cfg.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
        self._context = WorkerContext(None)
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() is None:
            loop.set_exception_handler(_log_loop_error)
            self._handler_set = True
        connection_class = _connection_class()

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connection = connection_class(app, loop, cfg, self._context, {}, reader, writer)
            self._connections[task] = connection
            aging = loop.call_later(self.max_age, connection.age_out, self.age_grace)
            try:
                await connection
            except Exception as exc:  # a connection's own failure ends that connection only
                log.warning("http connection failed", error=type(exc).__name__)
            finally:
                aging.cancel()
                connection.cancel_grace()
                self._connections.pop(task, None)

        self._server = await asyncio.start_server(connected, sock=self.sock, backlog=cfg.backlog)

    async def stop(self, grace: float) -> None:
        """Stop accepting, let the calls in progress finish for ``grace`` seconds (idle connections
        close at once), then close the connections still open and wait for them to end."""
        if self._server is not None:
            self._server.close()
        if self._context is not None:
            await self._context.terminated.set()  # idle keep-alive connections close now
        tasks = set(self._connections)
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for connection in list(self._connections.values()):
            await connection.close_now()
        left = set(self._connections)
        if left:
            _, pending = await asyncio.wait(left, timeout=2.0)
            for task in pending:  # only a connection stuck in the application: end it
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)
        if self._server is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await self._server.wait_closed()
        with contextlib.suppress(OSError):
            self.sock.close()
        if self._handler_set:
            asyncio.get_running_loop().set_exception_handler(None)
            self._handler_set = False


def _log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's errors (a callback or a task failing where nothing awaits it) as one JSON log
    line, instead of the loop's raw traceback on stderr."""
    exc = context.get("exception")
    log.error("event loop error", message=str(context.get("message", "")),
              **({"exc_info": exc} if isinstance(exc, BaseException) else {}))


def _connection_class() -> Any:
    """Hypercorn's connection (``TCPServer``) with a connection age, built on first use so that
    importing this module does not import Hypercorn."""
    from hypercorn.asyncio.tcp_server import TCPServer
    from hypercorn.events import Event, Updated

    class Connection(TCPServer):
        """One client connection: Hypercorn's, plus its age limit and an idempotent close."""

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.busy = False
            self.aged = False
            self.closing = False
            self._grace: asyncio.TimerHandle | None = None
            self._closer: asyncio.Future[None] | None = None

        async def protocol_send(self, event: Event) -> None:
            if isinstance(event, Updated):
                self.busy = not event.idle
            await super().protocol_send(event)
            if self.aged and isinstance(event, Updated) and event.idle:
                await self.close_now()

        def age_out(self, grace: float) -> None:
            """The connection is older than the connection age: close it when idle, or after ``grace``."""
            self.aged = True
            if not self.busy:
                self._closer = asyncio.ensure_future(self.close_now())
            else:
                self._grace = asyncio.get_running_loop().call_later(grace, self._close_later)

        def _close_later(self) -> None:
            self._closer = asyncio.ensure_future(self.close_now())

        def cancel_grace(self) -> None:
            if self._grace is not None:
                self._grace.cancel()

        async def close_now(self) -> None:
            """Close the connection (its open requests see the client gone); once."""
            if self.closing:
                return
            self.closing = True
            with contextlib.suppress(Exception):
                if hasattr(self, "protocol"):
                    await self.protocol.handle(Closed())
            with contextlib.suppress(Exception):
                self.writer.close()

    from hypercorn.events import Closed

    return Connection
