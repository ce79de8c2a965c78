"""Remote bots: a bot in any language, served as a ``gostop.v1.BotService`` gRPC server.

The caller owns the game; it asks the remote bot for one decision at a time and submits the action
itself (``proto/gostop/v1/bot.proto`` is the contract)::

    bot = RemoteBot("ts", "127.0.0.1:7001")
    try:
        action_id = bot.decide(view, deadline_ms=2000)   # view: the seat's pb.GameView
    except RemoteBotError as error:
        action_id = min(a.id for a in view.legal_actions)   # a safe fallback, the caller's choice
    finally:
        bot.close()

``decide`` never returns anything but one of the view's legal action ids: an unreachable server, a
late answer, an error status or an id outside the legal actions raise ``RemoteBotError`` (its
``kind`` says which), and falling back is the caller's choice. Who may be dialled is the caller's
operator's choice (a server's ``remote_bots`` setting, a tournament's ``--remote-bot`` flags),
never a request's: this module dials whatever address it is given.

Every ``RemoteBot`` of one address shares one gRPC channel (counted: the last ``close()`` closes
it), so many games' seats can each hold their own ``RemoteBot`` at no cost; ``decide`` may be
called from any thread, and ``decide_async`` runs it in a worker thread for an event loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Final, Literal, Self

import grpc

from gostop.v1 import bot_pb2, bot_pb2_grpc
from gostop.v1 import game_pb2 as pb

from .client import _channel_options

__all__ = ["DEFAULT_GRACE_MS", "Failure", "RemoteBot", "RemoteBotError"]

DEFAULT_GRACE_MS: Final = 500
"""Added to a decision's ``deadline_ms`` for the gRPC deadline: the network's share of the time."""

Failure = Literal["unreachable", "deadline", "status", "illegal", "closed"]
"""Why a remote decision failed: the server could not be reached; it did not answer in time; it
answered with an error status; it answered an id outside the view's legal actions; the
``RemoteBot`` was closed."""

_STUB: Any = bot_pb2_grpc.BotServiceStub


class RemoteBotError(RuntimeError):
    """A remote bot gave no usable decision; ``kind`` says why (``Failure``), ``code`` is the gRPC
    status of a failed call (``None`` for an illegal id or a closed bot)."""

    def __init__(self, bot: str, address: str, kind: Failure, message: str,
                 code: grpc.StatusCode | None = None) -> None:
        super().__init__(f"remote bot {bot!r} at {address}: {message}")
        self.bot = bot
        self.address = address
        self.kind: Failure = kind
        self.code = code


class _Channels:
    """One gRPC channel per address, shared by every ``RemoteBot`` of it and counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Any, Any, int]] = {}  # address -> (channel, stub, users)

    def acquire(self, address: str) -> Any:
        """The stub of ``address``'s channel (opened on first use)."""
        with self._lock:
            channel, stub, users = self._open.get(address, (None, None, 0))
            if channel is None:
                channel = grpc.insecure_channel(address, options=_channel_options(()))
                stub = _STUB(channel)
            self._open[address] = (channel, stub, users + 1)
            return stub

    def release(self, address: str) -> None:
        with self._lock:
            channel, stub, users = self._open[address]
            if users > 1:
                self._open[address] = (channel, stub, users - 1)
                return
            del self._open[address]
        channel.close()


_CHANNELS: Final = _Channels()


class RemoteBot:
    """A ``BotService`` server at ``address`` (``host:port``, plaintext gRPC), known as ``name``.

    ``options`` is sent with every decision (``DecideRequest.options``: what follows the name in
    ``remote:NAME:key=value,...``); ``grace_ms`` is added to each decision's ``deadline_ms`` for
    the gRPC deadline."""

    def __init__(self, name: str, address: str, *, options: str = "", grace_ms: int = DEFAULT_GRACE_MS) -> None:
        if not name or not address:
            raise ValueError("a remote bot needs a name and an address")
        if grace_ms < 0:
            raise ValueError("grace_ms must not be negative")
        self.name = name
        self.address = address
        self.options = options
        self.grace_ms = grace_ms
        self._stub: Any = _CHANNELS.acquire(address)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def spec(self) -> str:
        """How a tournament or a bot seat names this bot: ``remote:NAME``."""
        return f"remote:{self.name}"

    def _error(self, kind: Failure, message: str, code: grpc.StatusCode | None = None) -> RemoteBotError:
        return RemoteBotError(self.name, self.address, kind, message, code)

    def decide(self, view: pb.GameView, deadline_ms: int, *, seed: int = 0) -> int:
        """The id of one of ``view.legal_actions`` as the remote bot chose it, within
        ``deadline_ms`` (plus ``grace_ms``); ``RemoteBotError`` on any failure. ``view`` is the seat's
        own view (``viewer`` is the seat to move) and must list legal actions; ``seed`` goes to
        the bot (``DecideRequest.seed``)."""
        if deadline_ms <= 0:
            raise ValueError("deadline_ms must be positive")
        legal = {a.id for a in view.legal_actions}
        if not legal:
            raise ValueError("the view lists no legal actions: there is nothing to decide")
        with self._lock:
            if self._closed:
                raise self._error("closed", "closed")
            stub = self._stub
        request = bot_pb2.DecideRequest(deadline_ms=deadline_ms, options=self.options, seed=seed)
        request.view.CopyFrom(view)
        try:
            response = stub.Decide(request, timeout=(deadline_ms + self.grace_ms) / 1000)
        except grpc.RpcError as exc:
            raise self._call_error(exc, deadline_ms) from None
        except ValueError as exc:  # grpc raises this for a call on a channel closed meanwhile
            raise self._error("closed", f"closed during the call ({exc})") from None
        chosen = int(response.action_id)
        if chosen not in legal:
            raise self._error("illegal", f"chose action id {chosen}, not one of the legal ids {sorted(legal)}")
        return chosen

    def _call_error(self, exc: grpc.RpcError, deadline_ms: int) -> RemoteBotError:
        code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
        details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        if code == grpc.StatusCode.UNAVAILABLE:
            return self._error("unreachable", f"unreachable ({details})", code)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return self._error("deadline", f"no answer within {deadline_ms} ms (+{self.grace_ms} ms grace)", code)
        if code == grpc.StatusCode.CANCELLED and self._closed:
            return self._error("closed", "closed during the call", code)
        return self._error("status", f"answered {getattr(code, 'name', code)}: {details}", code)

    async def decide_async(self, view: pb.GameView, deadline_ms: int, *, seed: int = 0) -> int:
        """``decide`` in a worker thread, so that an event loop goes on meanwhile."""
        return await asyncio.to_thread(self.decide, view, deadline_ms, seed=seed)

    def close(self) -> None:
        """Release the shared channel (closed with its last user); later decisions raise
        ``RemoteBotError`` (kind ``closed``). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _CHANNELS.release(self.address)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteBot({self.name!r}, {self.address!r})"
