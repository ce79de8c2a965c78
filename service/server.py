"""The gRPC server: a thin servicer over ``Games``, one interceptor for errors, metrics
and logs, health checking, reflection, TLS, and graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import grpc
import structlog
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc

from .auth import Authenticator
from .config import Config
from .errors import classify, invalid, to_status
from .games import Games, client_address
from .metrics import Metrics
from .stores import open_bot_queue, open_store
from .workers import worker_index

if TYPE_CHECKING:
    from .http import HttpServer

log = structlog.get_logger("gostop")
SERVICE = "gostop.v1.GameService"


def _decode(deserialize: Callable[[bytes], Any] | None, raw: Any) -> Any:
    """The request message of the raw request bytes. The handlers decode requests themselves, so
    that bytes that are no valid message are the caller's error (INVALID_ARGUMENT, logged and
    counted) rather than grpc's UNKNOWN naming a Python exception."""
    if deserialize is None:
        return raw
    try:
        return deserialize(raw)
    except DecodeError as exc:
        raise invalid("MALFORMED_REQUEST", "the request is not a valid message of this method") from exc



class ListenError(OSError):
    """The server cannot bind one of its ports; the message names the setting that changes it."""

class TracebackLimiter:
    """At most one traceback a minute per (RPC, exception type) at error level.

    An unexpected exception is a bug; if a caller can trigger it, it must not also be able to
    flood the logs with a traceback per call. The calls whose traceback is left out are still
    answered INTERNAL and counted (``grpc_server_handled_total``); the next traceback logged for
    the same key says how many were left out since the last.
    """

    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self._last: dict[tuple[str, str], tuple[float, int]] = {}

    def report(self, rpc: str, exc: BaseException) -> None:
        key = (rpc, type(exc).__qualname__)
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval:
            self._last[key] = (last[0], last[1] + 1)
            return
        if len(self._last) > 1024:
            self._last.clear()
        self._last[key] = (now, 0)
        log.error("internal error", rpc=rpc, exc_info=exc, tracebacks_left_out=last[1] if last else 0)


class ObservingInterceptor(grpc.aio.ServerInterceptor):
    """The one place where every call is timed, counted, logged and its errors mapped.

    Wrapped handlers and their labelled metrics are built once per method, not per call.
    """

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._wrapped: dict[str, tuple[Any, Any]] = {}
        self.tracebacks = TracebackLimiter()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        method: str = details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: Any) -> Any:
        service, _, name = method.lstrip("/").rpartition("/")
        if service != SERVICE:
            return handler
        m = self.metrics
        kind = "unary" if handler.unary_unary is not None else "server_stream"
        streaming = kind == "server_stream"
        started_count = m.started.labels(kind, service, name, "grpc")
        handling = m.handling.labels(kind, service, name, "grpc")
        received = m.msg_received.labels(kind, service, name, "grpc")
        sent = m.msg_sent.labels(kind, service, name, "grpc")
        in_flight = m.in_flight.labels(kind, service, name, "grpc")
        handled: dict[grpc.StatusCode, Any] = {}
        deserialize = handler.request_deserializer

        def finish(started: float, code: grpc.StatusCode) -> None:
            elapsed = time.perf_counter() - started
            counter = handled.get(code)
            if counter is None:
                counter = handled[code] = m.handled.labels(kind, service, name, "grpc", code.name)
            counter.inc()
            handling.observe(elapsed)
            if code is grpc.StatusCode.OK or (streaming and code is grpc.StatusCode.CANCELLED):
                # A watcher leaving (its own deadline, a closed tab) is how a stream normally ends.
                log.info("rpc", rpc=name, code=code.name, duration_ms=round(elapsed * 1000, 3))
            else:
                log.warning("rpc", rpc=name, code=code.name, duration_ms=round(elapsed * 1000, 3))

        async def fail(started: float, exc: BaseException, context: grpc.aio.ServicerContext) -> None:
            err = classify(exc)
            if err.code is grpc.StatusCode.INTERNAL:
                self.tracebacks.report(name, exc)
            structlog.contextvars.bind_contextvars(reason=err.reason)
            finish(started, err.code)
            status = to_status(err)
            await context.abort(status.code, status.details, status.trailing_metadata)

        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                structlog.contextvars.clear_contextvars()
                started_count.inc()
                received.inc()  # a unary call's one request, as grpc-go's interceptors count it
                in_flight.inc()
                started = time.perf_counter()
                try:
                    try:
                        response = await inner(_decode(deserialize, request), context)
                    except asyncio.CancelledError:
                        finish(started, grpc.StatusCode.CANCELLED)
                        raise
                    except Exception as exc:
                        await fail(started, exc, context)
                    finish(started, grpc.StatusCode.OK)
                    sent.inc()
                    return response
                finally:
                    in_flight.dec()

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=None,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                structlog.contextvars.clear_contextvars()
                started_count.inc()
                received.inc()
                in_flight.inc()
                started = time.perf_counter()
                try:
                    try:
                        async for item in inner_stream(_decode(deserialize, request), context):
                            sent.inc()
                            yield item
                    except asyncio.CancelledError:
                        finish(started, grpc.StatusCode.CANCELLED)
                        raise
                    except Exception as exc:
                        await fail(started, exc, context)
                    finish(started, grpc.StatusCode.OK)
                finally:
                    in_flight.dec()

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=None,
                response_serializer=handler.response_serializer,
            )
        return handler


class GameServicer(pb_grpc.GameServiceServicer):
    """Transport only: identify the caller, bind log context, call ``Games``."""

    def __init__(self, games: Games) -> None:
        self.games = games

    def _caller(self, context: grpc.aio.ServicerContext, **bind: Any) -> Any:
        structlog.contextvars.bind_contextvars(**{k: v for k, v in bind.items() if v not in ("", None)})
        caller = self.games.auth.caller(tuple(context.invocation_metadata() or ()))
        if caller.seat is not None:
            structlog.contextvars.bind_contextvars(seat=caller.seat)
        return caller

    async def ListRuleSets(self, request: pb.ListRuleSetsRequest, context: grpc.aio.ServicerContext
                           ) -> pb.ListRuleSetsResponse:
        return self.games.list_rule_sets()

    async def CreateGame(self, request: pb.CreateGameRequest, context: grpc.aio.ServicerContext
                         ) -> pb.CreateGameResponse:
        response = await self.games.create(request, self._caller(context, preset=request.preset))
        structlog.contextvars.bind_contextvars(game_id=response.game_id)
        return response

    async def GetGame(self, request: pb.GetGameRequest, context: grpc.aio.ServicerContext) -> pb.GetGameResponse:
        return await self.games.get(request, self._caller(context, game_id=request.game_id))

    async def SubmitAction(self, request: pb.SubmitActionRequest, context: grpc.aio.ServicerContext
                           ) -> pb.SubmitActionResponse:
        caller = self._caller(context, game_id=request.game_id, request_id=request.request_id)
        return await self.games.submit(request, caller)

    async def StartNextRound(self, request: pb.StartNextRoundRequest, context: grpc.aio.ServicerContext
                             ) -> pb.StartNextRoundResponse:
        caller = self._caller(context, game_id=request.game_id, request_id=request.request_id)
        return await self.games.start_next_round(request, caller)

    async def WatchGame(self, request: pb.WatchGameRequest, context: grpc.aio.ServicerContext
                        ) -> AsyncIterator[pb.WatchGameResponse]:
        caller = self._caller(context, game_id=request.game_id)
        async for item in self.games.watch(request, caller, peer=client_address(context.peer() or "")):
            yield item

    async def GetGameLog(self, request: pb.GetGameLogRequest, context: grpc.aio.ServicerContext
                         ) -> pb.GetGameLogResponse:
        return await self.games.log(request, self._caller(context, game_id=request.game_id))


class Companion(Protocol):
    """A task that lives and dies with a server (``Server.companions``)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Server:
    """A running gostop server (gRPC port, metrics port, store)."""

    def __init__(self, config: Config, metrics: Metrics | None = None) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        store_options = {"max_waiters": config.redis_blocking_reads} if config.redis_url else {}
        self.store = open_store(config.redis_url or None, **store_options)
        secret = config.token_secret.encode() if config.token_secret else secrets.token_bytes(32)
        self.ephemeral_secret = not config.token_secret
        auth = Authenticator(secret, config.keys("api_keys"), config.keys("operator_keys"), config.keys("bot_keys"))
        self.games = Games(self.store, auth, config, self.metrics)
        self.games.bot_queue = open_bot_queue(self.store, config)
        self.companions: list[Companion] = []
        """What runs beside the server in its process (the in-process bot worker): started after
        the server, stopped before it drains."""
        self.metrics.watch_streams.set_function(lambda: self.games.streams.total)
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            ("grpc.max_send_message_length", config.max_message_bytes),
            # Port sharing only among the workers of one supervisor (service.workers): a lone
            # server must fail to start on a port that another process holds.
            ("grpc.so_reuseport", 1 if worker_index() is not None else 0),
            # Connections that hold resources without finishing anything are closed: a request
            # sent half-way (its stream never ends) by max age, a silent peer by keepalive, an
            # idle one by max idle; one connection cannot open more than so many streams.
            ("grpc.max_connection_age_ms", int(config.max_connection_age_seconds * 1000)),
            ("grpc.max_connection_age_grace_ms", int(config.max_connection_age_grace_seconds * 1000)),
            ("grpc.max_connection_idle_ms", int(config.max_connection_idle_seconds * 1000)),
            ("grpc.keepalive_time_ms", int(config.keepalive_seconds * 1000)),
            ("grpc.keepalive_timeout_ms", 20_000),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.max_concurrent_streams", config.max_concurrent_streams),
            # The limit above is the one the server sends (HTTP/2 SETTINGS) and the clients queue by.
            # grpc-core's "overload protection" would also refuse (RST_STREAM REFUSED_STREAM, no
            # reason) streams beyond it that the server has finished but not yet freed, which no
            # client can see: a client keeping many calls in flight on one connection had some fail.
            # Without it, a client that respects the limit it was sent is never refused.
            ("grpc.http.overload_protection", 0),
        ]
        self.observer = ObservingInterceptor(self.metrics)
        self.grpc = grpc.aio.server(interceptors=[self.observer], options=options)
        pb_grpc.add_GameServiceServicer_to_server(GameServicer(self.games), self.grpc)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        names = (pb.DESCRIPTOR.services_by_name["GameService"].full_name, health.SERVICE_NAME,
                 reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, self.grpc)
        try:
            if config.tls_cert:
                with open(config.tls_cert, "rb") as cert, open(config.tls_key, "rb") as key:
                    creds = grpc.ssl_server_credentials([(key.read(), cert.read())])
                self.port = self.grpc.add_secure_port(config.listen, creds)
            else:
                self.port = self.grpc.add_insecure_port(config.listen)
        except RuntimeError:  # grpc's "Failed to bind to address"
            self.port = 0
        if self.port == 0:
            raise ListenError(f"cannot listen on {config.listen} (the port is in use, or the address is not "
                              "this machine's): choose another with --listen HOST:PORT (GOSTOP_LISTEN)")
        self.http: HttpServer | None = None
        self.http_port = 0
        address = config.http_address()
        if address is not None:
            from .http import HttpServer, build_app, http_socket

            try:
                sock = http_socket(*address, reuse_port=worker_index() is not None)
            except OSError as exc:
                raise ListenError(f"cannot listen on {config.http_listen} ({exc.strerror or exc}): choose another "
                                  "with --http-listen HOST:PORT (GOSTOP_HTTP_LISTEN), or off for none") from None
            self.http = HttpServer(build_app(self.games, self.metrics, config, self.observer.tracebacks), sock, config)
            self.http_port = self.http.port
        self.metrics_port = 0

    async def start(self) -> None:
        # grpc's health servicer answers SERVING for "" from the start: not before the server is.
        for name in ("", pb.DESCRIPTOR.services_by_name["GameService"].full_name):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.grpc.start()
        if self.http is not None:
            await self.http.start()
        if self.config.metrics_port:
            try:
                server, _ = start_http_server(self.config.metrics_port, self.config.metrics_host,
                                              registry=self.metrics.registry)
            except OSError as exc:
                await self.grpc.stop(0)
                where = f"{self.config.metrics_host}:{self.config.metrics_port}"
                raise ListenError(f"cannot serve metrics on {where} ({exc.strerror or exc}): choose another port "
                                  "with --metrics-port (GOSTOP_METRICS_PORT), or 0 for none") from None
            self.metrics_port = server.server_port
            self._metrics_server = server
        for companion in self.companions:
            await companion.start()
        for name in ("", pb.DESCRIPTOR.services_by_name["GameService"].full_name):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info(
            "serving", listen=self.config.listen, port=self.port, store=self.store.name,
            store_note="embedded in-process memory store (no Redis URL set)" if self.store.name == "memory" else "",
            tls=bool(self.config.tls_cert), metrics_port=self.metrics_port, http_port=self.http_port,
            ephemeral_token_secret=self.ephemeral_secret, worker=worker_index(),
            event_loop=type(asyncio.get_running_loop()).__module__.split(".")[0],
        )

    async def stop(self, grace: float | None = None) -> None:
        """Graceful stop: NOT_SERVING, drain in-flight calls for ``grace`` seconds, close the store."""
        grace = self.config.drain_seconds if grace is None else grace
        for companion in reversed(self.companions):
            with contextlib.suppress(Exception):
                await companion.stop()
        await self.health.enter_graceful_shutdown()
        ended = self.games.begin_shutdown()  # open WatchGame streams end now: clients resume elsewhere
        log.info("draining", grace_seconds=grace, watch_streams_ended=ended)
        if self.http is not None:
            await asyncio.gather(self.grpc.stop(grace), self.http.stop(grace))
        else:
            await self.grpc.stop(grace)
        with contextlib.suppress(Exception):
            await self.store.close()
        server = getattr(self, "_metrics_server", None)
        if server is not None:
            server.shutdown()
        log.info("stopped")

    async def serve_forever(self) -> None:
        """Run until SIGTERM or SIGINT, then stop gracefully (also when one comes while starting)."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        waiter = asyncio.ensure_future(self.grpc.wait_for_termination())
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        await self.stop()
        waiter.cancel()
        stopper.cancel()
