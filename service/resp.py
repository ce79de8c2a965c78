"""A lean, pipelined Redis connection for the store's hot path (standalone Redis only).

Every SubmitAction is one ``EVALSHA`` and most reads are one ``HMGET``; through redis-py's
asyncio client each costs, in connection-pool, command-packing and parsing code, as much CPU
as the engine's own work on a turn. This module sends those
commands over one long-lived connection per process, pipelined: a command is written as
soon as it is issued, replies come back in order and are matched to their callers first in,
first out, and the replies are parsed by hiredis (Redis's own C parser). Many requests in
flight share one socket, so a burst of commands costs one write and one read wake-up each
way instead of one per command.

Failure model (the same as the store's for redis-py): any connection failure, and any call
that has not been answered within ``op_timeout`` (``TimeoutError``), closes the connection and
fails every command still waiting on it with ``ConnectionError``; the next command reconnects (bounded
by ``connect_timeout``). Replies come in order, so only the oldest command in flight can be the
first to time out: one timer per connection watches it (cheaper than a timer per command).
A command's outcome is then unknown, which is why the store never retries writes. Error replies
are returned as ``hiredis.ReplyError`` values, not raised, so that the caller decides what they
mean.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import hiredis

Arg = bytes | str | int


class NotSent(ConnectionError):
    """The command was never written to the server (connecting failed, the connection was already
    closed, too many in flight): it certainly did not run. Every other failure of ``call`` may
    come after the server ran the command."""


def pack(args: tuple[Arg, ...]) -> bytes:
    """One command in RESP2 (an array of bulk strings), packed by hiredis.

    >>> pack(("HGET", "key", 7))
    b'*3\\r\\n$4\\r\\nHGET\\r\\n$3\\r\\nkey\\r\\n$1\\r\\n7\\r\\n'
    """
    packed: bytes = hiredis.pack_command(cast(Any, args))  # its stub types a 1-tuple only
    return packed


class _Connection(asyncio.Protocol):
    """One socket: writes commands, hands each parsed reply to the oldest waiting future."""

    def __init__(self, op_timeout: float = 6.0) -> None:
        self.reader = hiredis.Reader()
        self.pending: deque[asyncio.Future[Any]] = deque()
        self.deadlines: deque[float] = deque()
        """When each pending command times out (event-loop time), in the same order."""
        self.op_timeout = op_timeout
        self.watchdog: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def expect(self, future: asyncio.Future[Any]) -> None:
        """Wait for one more reply, due within ``op_timeout``."""
        loop = asyncio.get_running_loop()
        self.pending.append(future)
        self.deadlines.append(loop.time() + self.op_timeout)
        if self.watchdog is None:
            self.watchdog = loop.call_at(self.deadlines[0], self._watch)

    def _watch(self) -> None:
        self.watchdog = None
        if not self.deadlines or self.closed:
            return
        loop = asyncio.get_running_loop()
        if self.deadlines[0] > loop.time():  # the command it was set for was answered
            self.watchdog = loop.call_at(self.deadlines[0], self._watch)
            return
        oldest = self.pending.popleft()
        self.deadlines.popleft()
        if not oldest.done():
            oldest.set_exception(TimeoutError(f"redis did not answer within {self.op_timeout} s"))
        self.abort(ConnectionError("an earlier command on this connection timed out"))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's do not derive from asyncio.Transport, hence no isinstance).
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        pending = self.pending
        try:
            while True:
                reply = self.reader.gets()
                if reply is False:  # RESP2 has no booleans: False means "incomplete"
                    return
                if not pending:
                    raise hiredis.ProtocolError("a reply nobody asked for")
                future = pending.popleft()
                self.deadlines.popleft()
                if not future.done():  # a caller that gave up (cancelled) is skipped
                    future.set_result(reply)
        except hiredis.ProtocolError as error:
            self.abort(ConnectionError(f"redis protocol error: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(f"connection to redis lost: {exc}" if exc else "connection to redis closed"))

    def abort(self, error: Exception) -> None:
        """Close now and fail everything in flight with ``error``."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        self._fail(error)

    def _fail(self, error: Exception) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        self.deadlines.clear()
        while self.pending:
            future = self.pending.popleft()
            if not future.done():
                future.set_exception(error)


def setup_commands(username: str | None, password: str | None, db: int) -> list[tuple[Arg, ...]]:
    """What a new connection sends first: AUTH (with a password), SELECT (another db than 0).

    >>> setup_commands("app", "secret", 2)
    [('AUTH', 'app', 'secret'), ('SELECT', 2)]
    """
    setup: list[tuple[Arg, ...]] = []
    if password is not None:
        setup.append(("AUTH", username, password) if username else ("AUTH", password))
    if db:
        setup.append(("SELECT", db))
    return setup


class RespClient:
    """Pipelined commands to one standalone Redis server (see the module docstring).

    ``host``/``port`` or a Unix socket ``path``; ``username``/``password`` are sent with AUTH
    and ``db`` with SELECT on every (re)connect. ``max_pending`` bounds the commands in flight:
    one more fails at once with ``ConnectionError`` rather than queueing without limit.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 6379,
        *,
        path: str = "",
        username: str | None = None,
        password: str | None = None,
        db: int = 0,
        connect_timeout: float = 1.0,
        op_timeout: float = 6.0,
        max_pending: int = 10_000,
    ) -> None:
        if connect_timeout <= 0 or op_timeout <= 0 or max_pending < 1:
            raise ValueError("connect_timeout, op_timeout and max_pending must be positive")
        self.host, self.port, self.path = host, port, path
        self._setup = setup_commands(username, password, db)
        self.connect_timeout = connect_timeout
        self.op_timeout = op_timeout
        self.max_pending = max_pending
        self._conn: _Connection | None = None
        self._connecting: asyncio.Task[_Connection] | None = None

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout):
            if self.path:
                _, conn = await loop.create_unix_connection(lambda: _Connection(self.op_timeout), self.path)
            else:
                _, conn = await loop.create_connection(lambda: _Connection(self.op_timeout), self.host, self.port)
            try:
                for command in self._setup:
                    reply = await self._send(conn, command)
                    if isinstance(reply, hiredis.ReplyError):
                        raise ConnectionError(f"redis refused {command[0]!r}: {reply}")
            except BaseException:
                conn.abort(ConnectionError("setup failed"))
                raise
        return conn

    @property
    def setup(self) -> list[tuple[Arg, ...]]:
        """The commands every new connection sends first (AUTH, SELECT)."""
        return list(self._setup)

    async def open_protocol(self, protocol: Callable[[], asyncio.Protocol]) -> asyncio.BaseTransport:
        """A new connection to this client's server with another ``protocol`` (a subscriber),
        bounded by ``connect_timeout``; ``setup`` is for the caller to send."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout):
            if self.path:
                transport, _ = await loop.create_unix_connection(protocol, self.path)
            else:
                transport, _ = await loop.create_connection(protocol, self.host, self.port)
        return transport

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        if self._connecting is None:  # one connect at a time; concurrent callers share it
            self._connecting = asyncio.ensure_future(self._open())
        connecting = self._connecting
        try:
            conn = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        self._conn = conn
        return conn

    def _send(self, conn: _Connection, command: tuple[Arg, ...]) -> asyncio.Future[Any]:
        if conn.transport is None or conn.closed:
            raise NotSent("connection to redis closed")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        conn.expect(future)
        conn.transport.write(pack(command))
        return future

    async def call(self, *command: Arg) -> Any:
        """Send one command, return its reply (an error reply as a ``hiredis.ReplyError``).

        Raises ``NotSent`` (a ``ConnectionError``) if it was never sent: connecting failed or
        took too long, or too many are in flight; ``ConnectionError`` if the connection failed
        after it was sent, and ``TimeoutError`` if no reply came within ``op_timeout`` (which
        also closes the connection): then the command may have run.
        """
        conn = self._conn
        if conn is None or conn.closed:
            try:
                conn = await self._connection()
            except OSError as error:  # refused, unreachable, or connecting timed out
                raise NotSent(f"cannot connect to redis: {type(error).__name__}: {error}") from error
        if len(conn.pending) >= self.max_pending:
            raise NotSent("too many redis commands in flight")
        return await self._send(conn, command)

    async def close(self) -> None:
        """Close the connection (commands in flight fail); a later call reconnects."""
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            conn.abort(ConnectionError("client closed"))
