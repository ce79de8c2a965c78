"""The call plumbing both clients share, free of blocking or asyncio code.

A client method is written once, as a ``Flow``: a generator that yields the unary ``Call``\\ s to
make (and ``Choose`` when the caller's chooser must pick an action) and returns the method's
result. Each client drives flows its own way (``grpc`` or ``grpc.aio``); failed calls come back
into the flow as typed ``GostopError``\\ s. ``Backoff`` decides whether and when a failed call is
retried; ``WatchSession`` is everything a watch stream does apart from waiting.
"""

from __future__ import annotations

import random
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc

from gostop.v1 import game_pb2 as pb

from .errors import error_from_rpc

T = TypeVar("T")

Metadata = tuple[tuple[str, str], ...]
"""The gRPC metadata (credentials) of a call."""


# ----------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to retry a call that failed with one of ``codes``.

    Attempt n (from 0) waits ``min(max_backoff, initial_backoff * multiplier**n)`` with equal
    jitter (half fixed, half random) before the next; at most ``max_attempts`` attempts and
    ``max_elapsed`` seconds from the first one. ``RetryPolicy(max_attempts=1)`` never retries.
    A retry sends the very same request, request id included: when ``UNAVAILABLE`` says the
    outcome is unknown (``outcome=unknown``), the retry is what learns it, applied at most once.
    """

    max_attempts: int = 10
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    max_elapsed: float = 20.0
    codes: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})

    def start(self) -> Backoff:
        return Backoff(self)


class Backoff:
    """The retry state of one call (or of one watch, reset by every delivered event)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.reset()

    def reset(self) -> None:
        self.attempt = 0
        self.started = time.monotonic()

    def after(self, failure: grpc.RpcError) -> float:
        """Seconds to wait before retrying after ``failure``; its typed error is raised when it
        must not be retried."""
        error = error_from_rpc(failure)
        delay = self._next_delay(error.code)
        if delay is None:
            raise error from failure
        return delay

    def _next_delay(self, code: grpc.StatusCode) -> float | None:
        p = self.policy
        if code not in p.codes:
            return None
        self.attempt += 1
        if self.attempt >= p.max_attempts:
            return None
        cap = min(p.max_backoff, p.initial_backoff * p.multiplier ** (self.attempt - 1))
        delay = cap / 2 + random.uniform(0, cap / 2)
        if time.monotonic() + delay - self.started > p.max_elapsed:
            return None
        return delay


# ------------------------------------------------------------------------------- flows


@dataclass(frozen=True)
class Call:
    """One unary call to make: the service's method, its request and credentials, and its
    deadline (None: the client's)."""

    method: str
    request: Any
    metadata: Metadata = ()
    timeout: float | None = None


@dataclass(frozen=True)
class Choose:
    """Ask the caller's chooser for an action from ``view``."""

    view: pb.GameView


Step = Call | Choose
Flow = Generator[Step, Any, T]
"""A client method: yields its steps, is sent each step's answer, returns the method's result."""


class Steps(Generic[T]):
    """Walks a flow for a driver: ``next()`` gives the step to answer (None once the flow has
    returned its ``result``); ``answer`` or ``fail`` says how the step went."""

    def __init__(self, flow: Flow[T]) -> None:
        self._flow = flow
        self._answer: Any = None
        self._error: Exception | None = None
        self.result: T

    def next(self) -> Step | None:
        try:
            step = self._flow.throw(self._error) if self._error is not None else self._flow.send(self._answer)
        except StopIteration as stop:
            self.result = stop.value
            return None
        self._answer, self._error = None, None
        return step

    def answer(self, value: Any) -> None:
        self._answer = value

    def fail(self, error: Exception) -> None:
        self._error = error


# ------------------------------------------------------------------------------- watch


class WatchCursor:
    """Where a watch stands, so that a resumed stream neither loses nor repeats an event.

    Events of one version arrive as several messages, so a stream cut in the middle of a
    version is resumed after the last version known complete (the one before the version in
    progress), and the events of the version in progress already delivered are dropped.
    """

    def __init__(self, after_version: int) -> None:
        self.done = after_version
        """Last version whose events were all delivered."""
        self.version: int | None = None
        """Version in progress (its events may not all have been delivered)."""
        self.count = 0
        """Events of ``version`` delivered."""
        self._skip = 0

    def resume(self) -> int:
        """The ``after_version`` of a (re)connection."""
        self._skip = self.count if self.version is not None else 0
        return self.done

    def accept(self, item: pb.WatchGameResponse) -> bool:
        """Whether to deliver ``item`` (False for a repeat of an event already delivered)."""
        if item.version == self.version and self._skip > 0:
            self._skip -= 1
            return False
        if item.version != self.version:
            if self.version is not None:
                self.done = self.version
            self.version, self.count, self._skip = item.version, 0, 0
        self.count += 1
        return True

    def finish(self) -> None:
        """The stream ended normally: the version in progress was complete."""
        if self.version is not None:
            self.done = self.version


class WatchSession:
    """One watch across its connections: the request of each (re)connection, which events to
    deliver, and whether a broken stream is resumed (and after how long)."""

    def __init__(self, request: pb.WatchGameRequest, metadata: Metadata, timeout: float | None,
                 policy: RetryPolicy) -> None:
        self.game_id = request.game_id
        self.include_views = request.include_views
        self.metadata = metadata
        self.timeout = timeout
        self.cursor = WatchCursor(request.after_version)
        self.backoff = policy.start()
        self.reconnects = 0

    def connect(self, stub: Any) -> Any:
        """A (re)connection's call, resuming after the last complete version."""
        request = pb.WatchGameRequest(game_id=self.game_id, after_version=self.cursor.resume(),
                                      include_views=self.include_views, whole_versions=True)
        return stub.WatchGame(request, metadata=self.metadata, timeout=self.timeout)

    def items(self, message: pb.WatchGameResponse) -> list[pb.WatchGameResponse]:
        """The items to deliver of a message: a version's message (``whole_versions``) is
        delivered an event at a time, then its view, as a server without it sends them."""
        if not message.events:
            return [message] if self.deliver(message) else []
        version = message.version
        items = [pb.WatchGameResponse(version=version, event=event) for event in message.events]
        if message.HasField("view"):
            items.append(pb.WatchGameResponse(version=version, view=message.view))
        return [item for item in items if self.deliver(item)]

    def deliver(self, item: pb.WatchGameResponse) -> bool:
        """Whether to deliver ``item``; progress makes a later failure start a fresh backoff."""
        if not self.cursor.accept(item):
            return False
        self.backoff.reset()
        return True

    def broken(self, failure: grpc.RpcError) -> float:
        """Seconds to wait before reconnecting; the typed error is raised when the watch ends."""
        delay = self.backoff.after(failure)
        self.reconnects += 1
        return delay
