"""The one per-call wrapper of both ports: who calls (auth), the metrics, the log line and the
error mapping of every call of ``gostop.v1.GameService``, and the table of its operations.

A port is a thin adapter: it gives a ``Transport`` (the call's metadata, peer, protocol label and
how it sends an error) and the decoded request; everything else happens here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import structlog

from gostop.v1 import game_pb2 as pb

from .auth import Caller
from .errors import Code, ServiceError, classify
from .games import Games
from .metrics import Metrics
from .watch import client_address

log = structlog.get_logger("gostop")

SERVICE = "gostop.v1.GameService"


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


class Transport(Protocol):
    """What a port tells the wrapper about one call."""

    protocol: str
    """The ``protocol`` label of the call's metrics: ``grpc``, ``connect`` or ``grpc-web``."""
    log_fields: dict[str, Any]
    """Fields of every log line of the call (the HTTP port's name the protocol)."""

    def metadata(self) -> Sequence[tuple[str, str]]: ...

    def peer(self) -> str: ...

    async def abort(self, err: ServiceError) -> NoReturn:
        """End the call with ``err`` (raises)."""
        ...


def bind(**fields: Any) -> None:
    """Add the fields that are set to the call's log context."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in fields.items() if v not in ("", None)})


class _Method:
    """The labelled metrics of one method on one protocol, looked up once."""

    def __init__(self, metrics: Metrics, kind: str, name: str, protocol: str) -> None:
        labels = (kind, SERVICE, name, protocol)
        self.labels = labels
        self.metrics = metrics
        self.started = metrics.started.labels(*labels)
        self.received = metrics.msg_received.labels(*labels)
        self.sent = metrics.msg_sent.labels(*labels)
        self.in_flight = metrics.in_flight.labels(*labels)
        self.handling = metrics.handling.labels(*labels)
        self._handled: dict[Code, Any] = {}

    def handled(self, code: Code) -> Any:
        counter = self._handled.get(code)
        if counter is None:
            counter = self._handled[code] = self.metrics.handled.labels(*self.labels, code.name)
        return counter


class Call:
    """One call in progress: its caller, its metrics and its one log line."""

    def __init__(self, calls: Calls, name: str, method: _Method, transport: Transport) -> None:
        self.calls = calls
        self.name = name
        self.method = method
        self.transport = transport
        self.streaming = method.labels[0] == "server_stream"
        self.done = False
        structlog.contextvars.clear_contextvars()
        if transport.log_fields:
            bind(**transport.log_fields)
        method.started.inc()
        method.received.inc()  # a call's one request, as grpc-go's interceptors count it
        method.in_flight.inc()
        self.started = time.perf_counter()

    def caller(self, **fields: Any) -> Caller:
        """The caller's credentials; ``fields`` and the caller's seat join the log context."""
        bind(**fields)
        caller = self.calls.games.auth.caller(tuple(self.transport.metadata()))
        if caller.seat is not None:
            bind(seat=caller.seat)
        return caller

    def peer(self) -> str:
        """The caller's address, one spelling for both ports (``client_address``)."""
        return client_address(self.transport.peer())

    def sent(self) -> None:
        self.method.sent.inc()

    def finish(self, code: Code) -> None:
        """Count the call's outcome and write its log line (once)."""
        if self.done:
            return
        self.done = True
        elapsed = time.perf_counter() - self.started
        self.method.in_flight.dec()
        self.method.handled(code).inc()
        self.method.handling.observe(elapsed)
        # A watcher leaving (its own deadline, a closed tab) is how a stream normally ends.
        quiet = code is Code.OK or (self.streaming and code is Code.CANCELLED)
        (log.info if quiet else log.warning)("rpc", rpc=self.name, code=code.name,
                                             duration_ms=round(elapsed * 1000, 3))

    def close(self) -> None:
        """The call is over: no longer in flight, whether or not it finished."""
        if not self.done:
            self.done = True
            self.method.in_flight.dec()

    async def fail(self, exc: BaseException) -> NoReturn:
        """Map ``exc`` to its service error, count and log it, and end the call with it."""
        err = classify(exc)
        if err.code is Code.INTERNAL:
            self.calls.tracebacks.report(self.name, exc)
        bind(reason=err.reason)
        self.finish(err.code)
        await self.transport.abort(err)


Unary = Callable[[Games, Any, Call], Awaitable[Any]]
Streaming = Callable[[Games, Any, Call], Awaitable[AsyncGenerator[Any, None]]]
"""A streaming method: checks the request, then gives the stream (or raises the refusal)."""


async def _list_rule_sets(games: Games, req: pb.ListRuleSetsRequest, call: Call) -> pb.ListRuleSetsResponse:
    return games.list_rule_sets()


async def _create_game(games: Games, req: pb.CreateGameRequest, call: Call) -> pb.CreateGameResponse:
    response = await games.create(req, call.caller(preset=req.preset))
    bind(game_id=response.game_id)
    return response


async def _get_game(games: Games, req: pb.GetGameRequest, call: Call) -> pb.GetGameResponse:
    return await games.get(req, call.caller(game_id=req.game_id))


async def _submit_action(games: Games, req: pb.SubmitActionRequest, call: Call) -> pb.SubmitActionResponse:
    return await games.submit(req, call.caller(game_id=req.game_id, request_id=req.request_id))


async def _start_next_round(games: Games, req: pb.StartNextRoundRequest, call: Call) -> pb.StartNextRoundResponse:
    return await games.start_next_round(req, call.caller(game_id=req.game_id, request_id=req.request_id))


async def _set_auto_play(games: Games, req: pb.SetAutoPlayRequest, call: Call) -> pb.SetAutoPlayResponse:
    return await games.set_auto_play(req, call.caller(game_id=req.game_id, request_id=req.request_id))


async def _get_game_log(games: Games, req: pb.GetGameLogRequest, call: Call) -> pb.GetGameLogResponse:
    return await games.log(req, call.caller(game_id=req.game_id))


async def _watch_game(games: Games, req: pb.WatchGameRequest, call: Call) -> AsyncGenerator[pb.WatchGameResponse, None]:
    return await games.watch(req, call.caller(game_id=req.game_id), peer=call.peer())


@dataclass(frozen=True)
class Operation:
    """One method of the service: its messages and what it does."""

    name: str
    request: type[Any]
    response: type[Any]
    unary: Unary | None = None
    stream: Streaming | None = None

    @property
    def kind(self) -> str:
        return "unary" if self.unary is not None else "server_stream"


OPERATIONS = {op.name: op for op in (
    Operation("ListRuleSets", pb.ListRuleSetsRequest, pb.ListRuleSetsResponse, unary=_list_rule_sets),
    Operation("CreateGame", pb.CreateGameRequest, pb.CreateGameResponse, unary=_create_game),
    Operation("GetGame", pb.GetGameRequest, pb.GetGameResponse, unary=_get_game),
    Operation("SubmitAction", pb.SubmitActionRequest, pb.SubmitActionResponse, unary=_submit_action),
    Operation("StartNextRound", pb.StartNextRoundRequest, pb.StartNextRoundResponse, unary=_start_next_round),
    Operation("GetGameLog", pb.GetGameLogRequest, pb.GetGameLogResponse, unary=_get_game_log),
    Operation("WatchGame", pb.WatchGameRequest, pb.WatchGameResponse, stream=_watch_game),
    Operation("SetAutoPlay", pb.SetAutoPlayRequest, pb.SetAutoPlayResponse, unary=_set_auto_play),
)}
"""Every method of ``gostop.v1.GameService``, by name."""


class Calls:
    """Runs the service's operations for a port: the per-call wrapper both ports share."""

    def __init__(self, games: Games, metrics: Metrics, tracebacks: TracebackLimiter | None = None) -> None:
        self.games = games
        self.metrics = metrics
        self.tracebacks = tracebacks or TracebackLimiter()
        self._methods: dict[tuple[str, str], _Method] = {}

    def _start(self, op: Operation, transport: Transport) -> Call:
        key = (op.name, transport.protocol)
        method = self._methods.get(key)
        if method is None:
            method = self._methods[key] = _Method(self.metrics, op.kind, op.name, transport.protocol)
        return Call(self, op.name, method, transport)

    async def unary(self, name: str, transport: Transport, request: Callable[[], Any]) -> Any:
        """Run the unary method ``name`` on the request ``request()`` decodes (its failure to
        decode is the call's error, observed like any other)."""
        op = OPERATIONS[name]
        assert op.unary is not None
        call = self._start(op, transport)
        try:
            try:
                response = await op.unary(self.games, request(), call)
            except asyncio.CancelledError:
                call.finish(Code.CANCELLED)
                raise
            except Exception as exc:
                await call.fail(exc)
            call.finish(Code.OK)
            call.sent()
            return response
        finally:
            call.close()

    async def stream(self, name: str, transport: Transport, request: Callable[[], Any]) -> AsyncIterator[Any]:
        """Run the streaming method ``name`` (as ``unary``), counting each message sent."""
        op = OPERATIONS[name]
        assert op.stream is not None
        call = self._start(op, transport)
        try:
            try:
                items = await op.stream(self.games, request(), call)
                async with contextlib.aclosing(items):
                    async for item in items:
                        call.sent()
                        yield item
            except (asyncio.CancelledError, GeneratorExit):
                call.finish(Code.CANCELLED)
                raise
            except Exception as exc:
                await call.fail(exc)
            call.finish(Code.OK)
        finally:
            call.close()

    def refused(self, name: str, protocol: str, code: str, reason: str, started: float) -> None:
        """Count and log a call that a port refused before it reached an operation (``name`` is
        ``unknown`` for no method of the service)."""
        kind = "server_stream" if name == "WatchGame" else "unary"
        labels = (kind, SERVICE, name, protocol)
        m = self.metrics
        m.started.labels(*labels).inc()
        m.msg_received.labels(*labels).inc()
        m.handled.labels(*labels, code).inc()
        m.handling.labels(*labels).observe(time.perf_counter() - started)
        structlog.contextvars.clear_contextvars()
        log.warning("rpc", rpc=name, code=code, duration_ms=round((time.perf_counter() - started) * 1000, 3),
                    protocol=protocol, **({"reason": reason} if reason else {}))
