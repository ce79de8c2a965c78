"""The gRPC server: the gRPC port over the per-call wrapper (``calls``), the HTTP port beside it,
health checking, reflection, TLS, and graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import grpc
import structlog
from google.protobuf.message import DecodeError
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from gostop.v1 import game_pb2 as pb

from .auth import Authenticator
from .calls import OPERATIONS, SERVICE, Calls, Operation
from .config import Config
from .errors import ServiceError, invalid
from .games import Games
from .metrics import Metrics
from .status import grpc_status
from .stores import open_bot_queue, open_store
from .workers import worker_index

if TYPE_CHECKING:
    from .http import HttpServer

log = structlog.get_logger("gostop")


class ListenError(OSError):
    """The server cannot bind one of its ports; the message names the setting that changes it."""


class GrpcTransport:
    """A call on the gRPC port, as the per-call wrapper (``calls.Calls``) sees it."""

    protocol = "grpc"

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self.context = context
        self.log_fields: dict[str, Any] = {}

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.context.invocation_metadata() or ())

    def peer(self) -> str:
        return self.context.peer() or ""

    async def abort(self, err: ServiceError) -> NoReturn:
        status = grpc_status(err)
        await self.context.abort(status.code, status.details, status.trailing_metadata)
        raise AssertionError("abort returned")  # pragma: no cover - grpc's abort raises


def _decoder(message: type[Any], raw: bytes) -> Callable[[], Any]:
    """The request of the raw request bytes, decoded inside the call: bytes that are no valid
    message are the caller's error (INVALID_ARGUMENT, logged and counted) rather than grpc's
    UNKNOWN naming a Python exception."""

    def decode() -> Any:
        try:
            return message.FromString(raw)
        except DecodeError as exc:
            raise invalid("MALFORMED_REQUEST", "the request is not a valid message of this method") from exc

    return decode


def grpc_handlers(calls: Calls) -> dict[str, grpc.RpcMethodHandler]:
    """``gostop.v1.GameService`` on the gRPC port: each method one call of ``calls``."""
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for op in OPERATIONS.values():
        if op.unary is not None:
            async def unary(raw: bytes, context: grpc.aio.ServicerContext, op: Operation = op) -> Any:
                return await calls.unary(op.name, GrpcTransport(context), _decoder(op.request, raw))

            handlers[op.name] = grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=None, response_serializer=op.response.SerializeToString)
        else:
            async def stream(raw: bytes, context: grpc.aio.ServicerContext, op: Operation = op
                             ) -> AsyncIterator[Any]:
                async for item in calls.stream(op.name, GrpcTransport(context), _decoder(op.request, raw)):
                    yield item

            handlers[op.name] = grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=None, response_serializer=op.response.SerializeToString)
    return handlers


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
        self.metrics.followed_games.set_function(lambda: self.store.followed_games)
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
        self.calls = Calls(self.games, self.metrics)
        """The per-call wrapper of both ports."""
        self.grpc = grpc.aio.server(options=options)
        handlers = grpc_handlers(self.calls)
        self.grpc.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.grpc.add_registered_method_handlers(SERVICE, handlers)
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
            self.http = HttpServer(build_app(self.calls, config), sock, config)
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
        self.games.presence.start()
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
        await self.games.presence.close()
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
