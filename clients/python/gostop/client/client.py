"""Typed clients of the gostop game service: ``GostopClient`` (blocking, ``grpc``) and
``AsyncGostopClient`` (asyncio, ``grpc.aio``), with the same methods.

Every call has a deadline (``timeout``, 5 s by default). ``UNAVAILABLE`` is retried with
exponential backoff and jitter, within ``RetryPolicy``'s bounds on attempts and time;
``SubmitAction``, ``StartNextRound`` and ``SetAutoPlay`` always carry a request id (a fresh uuid4
unless the caller gives one), so a retried action is applied at most once. Failures are raised as
``GostopError`` subclasses chosen by the status's ``ErrorInfo`` reason (``StaleVersion``
carries the game's current version). ``watch`` resumes a broken event stream without losing
or repeating an event; ``log`` reads every page of the log.

>>> client = GostopClient("127.0.0.1:50051")          # doctest: +SKIP
>>> game = client.create_game("standard", seed=7)     # doctest: +SKIP
>>> view = client.get_game(game, seat=game.view.to_move)  # doctest: +SKIP
>>> client.submit_action(game, view.viewer, view.legal_actions[0])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Final, Self, TypeVar

import grpc
import grpc.aio

from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc

from .calls import Call, Choose, Flow, Metadata, RetryPolicy, Steps, WatchCursor, WatchSession
from .games import Game, GameRef, seat_of_token
from .methods import ActionLike, BotSeats, Methods, create_request

__all__ = [
    "DEFAULT_TIMEOUT",
    "ActionLike",
    "AsyncGostopClient",
    "AsyncWatchStream",
    "Game",
    "GameRef",
    "GostopClient",
    "RetryPolicy",
    "WatchStream",
    "seat_of_token",
]

_STUB: Any = game_pb2_grpc.GameServiceStub
T = TypeVar("T")

DEFAULT_TIMEOUT: Final = 5.0
"""Seconds: the deadline of each attempt of a unary call."""


_AsyncChooser = Callable[[pb.GameView], ActionLike] | Callable[[pb.GameView], Awaitable[ActionLike]]
"""What ``AsyncGostopClient.act`` takes: a function or a coroutine function."""


def _no_chooser(view: pb.GameView) -> ActionLike:
    raise TypeError("this call has no chooser")


# ------------------------------------------------------------------------- common part


def _channel_options(options: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    # Reconnect quickly after a server restart (gRPC's default backoff starts at 1 s and grows to 120 s).
    defaults: list[tuple[str, Any]] = [
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 2000),
        ("grpc.max_receive_message_length", 16 << 20),
    ]
    given = {name for name, _ in options}
    return [o for o in defaults if o[0] not in given] + list(options)


class _Base:
    """A client's configuration, its channel and the games whose tokens it knows."""

    def __init__(
        self,
        target: str,
        *,
        root_certificates: bytes | None = None,
        tls: bool = False,
        api_key: str | None = None,
        operator_key: str | None = None,
        bot_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        options: Sequence[tuple[str, Any]] = (),
        interceptors: Sequence[Any] = (),
    ) -> None:
        """``target`` is ``host:port``. TLS is on when ``root_certificates`` (PEM) is given, or with
        ``tls=True`` (the system's roots). ``api_key`` is sent with ``CreateGame``; ``operator_key``
        with ``CreateGame`` and ``GetGameLog``. ``bot_key`` is a bot worker's: with it a call naming a
        seat and no token acts for that seat, which the game must have declared a bot seat.
        ``timeout`` is each attempt's deadline in seconds. ``options`` are gRPC channel options;
        ``interceptors`` gRPC client interceptors (``grpc``'s for ``GostopClient``, ``grpc.aio``'s
        for ``AsyncGostopClient``)."""
        self.target = target
        self.api_key = api_key
        self.operator_key = operator_key
        self.bot_key = bot_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.games: dict[str, Game] = {}
        """Games whose tokens this client knows (created by it, or given to ``join``)."""
        self._secure = tls or root_certificates is not None
        self._root_certificates = root_certificates
        self._options = _channel_options(options)
        self._interceptors = tuple(interceptors)
        self._channel: Any = None
        self._stub: Any = None
        self._methods = Methods(self)
        self._open()

    def _open(self) -> None:
        raise NotImplementedError

    def join(self, game: Game | str, tokens: Mapping[int, str] | Iterable[str] = ()) -> Game:
        """Register a game's seat tokens with the client, so that methods find them by game id and seat."""
        handle = (self.games.get(game) or Game(game)) if isinstance(game, str) else game
        items = tokens.items() if isinstance(tokens, Mapping) else (
            (seat_of_token(t)[1], t) for t in tokens)
        handle.tokens.update(items)
        self.games[handle.game_id] = handle
        return handle


# ------------------------------------------------------------------------- sync client


class _WatchProgress:
    """What a watch stream (blocking or asyncio) tells of its progress, from its ``WatchSession``."""

    _session: WatchSession

    @property
    def cursor(self) -> WatchCursor:
        return self._session.cursor

    @property
    def reconnects(self) -> int:
        """Connections made again after a break."""
        return self._session.reconnects

    @property
    def last_complete_version(self) -> int:
        """The last version whose events were all delivered."""
        return self._session.cursor.done


class WatchStream(_WatchProgress, Iterator[pb.WatchGameResponse]):
    """The events of a game after a version, one ``WatchGameResponse`` (version, event) at a time.

    Reconnects when the stream breaks with a retryable status (``UNAVAILABLE``: a server restart,
    a lost connection) and resumes exactly where it was. Iteration ends when the server ends the
    stream (the match is finished) or after ``cancel()`` (thread-safe).
    """

    def __init__(self, client: GostopClient, request: pb.WatchGameRequest, metadata: Metadata,
                 timeout: float | None) -> None:
        self._session = WatchSession(request, metadata, timeout, client.retry)
        self._stub = client._stub
        self._call: Any = None
        self._cancelled = threading.Event()
        self._items = self._run()


    def __next__(self) -> pb.WatchGameResponse:
        return next(self._items)

    def cancel(self) -> None:
        """Stop the stream (from any thread); iteration ends without an error."""
        self._cancelled.set()
        call = self._call
        if call is not None:
            call.cancel()

    def close(self) -> None:
        self.cancel()
        self._items.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> Generator[pb.WatchGameResponse, None, None]:
        session = self._session
        while not self._cancelled.is_set():
            call = self._call = session.connect(self._stub)
            if self._cancelled.is_set():
                call.cancel()
                return
            try:
                for message in call:
                    yield from session.items(message)
                session.cursor.finish()
                return
            except grpc.RpcError as exc:
                if self._cancelled.is_set() or self._cancelled.wait(session.broken(exc)):
                    return
            finally:
                call.cancel()


class GostopClient(_Base):
    """A blocking client of ``gostop.v1.GameService``; a context manager that closes its channel."""

    def _open(self) -> None:
        if self._secure:
            creds = grpc.ssl_channel_credentials(root_certificates=self._root_certificates)
            self._channel = grpc.secure_channel(self.target, creds, options=self._options)
        else:
            self._channel = grpc.insecure_channel(self.target, options=self._options)
        channel = grpc.intercept_channel(self._channel, *self._interceptors) if self._interceptors else self._channel
        self._stub = _STUB(channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, flow: Flow[T], choose: Callable[[pb.GameView], ActionLike] = _no_chooser) -> T:
        """Drive ``flow``: make its calls, ask ``choose`` its choices, send back answers and errors."""
        steps = Steps(flow)
        while (step := steps.next()) is not None:
            try:
                steps.answer(self._unary(step) if isinstance(step, Call) else choose(step.view))
            except Exception as error:
                steps.fail(error)
        return steps.result

    def _unary(self, call: Call) -> Any:
        """One unary call with its deadline, retried per the policy; typed errors."""
        backoff = self.retry.start()
        rpc = getattr(self._stub, call.method)
        timeout = self.timeout if call.timeout is None else call.timeout
        while True:
            try:
                return rpc(call.request, metadata=call.metadata, timeout=timeout)
            except grpc.RpcError as exc:
                time.sleep(backoff.after(exc))

    def list_rule_sets(self, *, timeout: float | None = None) -> list[pb.RuleSet]:
        """Every preset at every player count it supports, with every rule set."""
        return self._run(self._methods.list_rule_sets(timeout))

    def create_game(
        self, preset: str = "standard", players: int = 0, *, overrides: pb.Rules | Mapping[str, Any] | None = None,
        seed: int | None = None, rounds: int | None = None, deal: pb.Deal | None = None,
        bot_seats: BotSeats | None = None, clock: pb.ClockSettings | None = None, timeout: float | None = None,
    ) -> Game:
        """Create a match (``rounds`` absent: 1; 0: open-ended); a handle with every seat's token.

        ``overrides`` are rule fields to change, as a ``Rules`` message or engine-style values
        (``{"gwangbak": False}``). ``bot_seats`` are seats the server's bot workers play (no token
        comes back for them): ``{1: "greedy"}`` or ``{1: ("mcts", 300)}`` with a CPU budget in ms per
        decision. ``clock`` is a turn clock the server enforces (``pb.ClockSettings``; out of range:
        ``InvalidRequest`` ``BAD_CLOCK``). A retry after a lost reply may leave an unused game behind
        (it expires).
        """
        req = create_request(preset, players, overrides, seed, rounds, deal, bot_seats, clock)
        return self._run(self._methods.create_game(req, timeout))

    def get_game(self, game: GameRef, seat: int | None = None, *, token: str | None = None,
                 timeout: float | None = None) -> pb.GameView:
        """The view of ``seat`` (its token from the handle, the client's games or ``token``), with its
        legal actions; a spectator's view without a seat. ``view.version`` is the game's version."""
        return self._run(self._methods.get_game(game, seat, token, timeout))

    def submit_action(
        self, game: GameRef, seat: int | None, action: ActionLike, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        """Apply one action of ``seat`` at ``expected_version`` (default: the handle's version), at
        most once: the request id (a fresh uuid4 unless given) makes retries safe.
        ``StaleVersion`` when the game is at another version."""
        return self._run(self._methods.submit_action(game, seat, action, expected_version, request_id, token,
                                                     timeout))

    def start_next_round(
        self, game: GameRef, seat: int | None, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        """Deal the next round of the match once the current one is over (idempotent like ``submit_action``)."""
        return self._run(self._methods.start_next_round(game, seat, expected_version, request_id, token, timeout))

    def set_auto_play(
        self, game: GameRef, seat: int | None, on: bool, *, request_id: str | None = None, token: str | None = None,
        timeout: float | None = None,
    ) -> pb.SetAutoPlayResponse:
        """Turn auto-play (자동치기) on or off for ``seat`` (its token: a person's choice) of a game
        with a turn clock: while on, the table's bot makes the seat's decisions, each after the
        clock's pause, until the seat acts itself. A step of the log of its own (an ``AutoPlaySet``
        event), at most once per request id (a fresh uuid4 unless given); asking for the state the
        seat is already in changes nothing. The response holds the version and the seat's view.
        ``FailedPrecondition`` (``NO_CLOCK``) on a game without a clock."""
        return self._run(self._methods.set_auto_play(game, seat, on, request_id, token, timeout))

    def act(
        self, game: GameRef, seat: int, choose: Callable[[pb.GameView], ActionLike], *, token: str | None = None,
        max_attempts: int = 10,
    ) -> pb.TurnResult:
        """Read ``seat``'s view, let ``choose`` pick an action from it (``view.legal_actions``), and
        submit it at the view's version; when the game moved on meanwhile (``StaleVersion``), read
        it again and let ``choose`` choose again. ``NotYourTurnError`` / ``RoundOverError`` (checked before
        ``choose`` is called) when the seat has nothing to decide."""
        return self._run(self._methods.act(game, seat, token, max_attempts), choose)

    def watch(self, game: GameRef, after_version: int = 0, seat: int | None = None, *, token: str | None = None,
              timeout: float | None = None, include_views: bool = False) -> WatchStream:
        """The events (as ``seat`` may see them; a spectator's without a seat) of every version after
        ``after_version``, as they are committed; ends when the match is finished. Resumes by itself
        after a server restart or a lost connection. ``timeout`` bounds each connection (none by default).
        ``include_views``: also the caller's view after each version's events (messages with
        ``view`` set and no ``event``), so that a seat needs no GetGame to learn its moves."""
        return WatchStream(self, self._methods.watch_request(game, after_version, include_views),
                           self._methods.seat_md(game, seat, token), timeout)

    def get_game_log(
        self, game: GameRef, *, after_version: int = 0, page_size: int = 0, seat: int | None = None,
        token: str | None = None, timeout: float | None = None,
    ) -> pb.GetGameLogResponse:
        """One page of the full log (operators; seats once the match is over)."""
        return self._run(self._methods.get_game_log(game, after_version, page_size, seat, token, timeout))

    def log(self, game: GameRef, *, seat: int | None = None, token: str | None = None, page_size: int = 0,
            timeout: float | None = None) -> pb.GetGameLogResponse:
        """The whole log: every page (``next_after_version``) merged into one response."""
        return self._run(self._methods.log(game, seat, token, page_size, timeout))


# ------------------------------------------------------------------------ async client


class AsyncWatchStream(_WatchProgress, AsyncIterator[pb.WatchGameResponse]):
    """``WatchStream`` for asyncio: ``async for item in client.watch(...)``."""

    def __init__(self, client: AsyncGostopClient, request: pb.WatchGameRequest, metadata: Metadata,
                 timeout: float | None) -> None:
        self._session = WatchSession(request, metadata, timeout, client.retry)
        self._stub = client._stub
        self._call: Any = None
        self._cancelled = False
        self._items = self._run()


    def __anext__(self) -> Awaitable[pb.WatchGameResponse]:
        return self._items.__anext__()

    def cancel(self) -> None:
        """Stop the stream; iteration ends without an error."""
        self._cancelled = True
        call = self._call
        if call is not None:
            call.cancel()

    async def aclose(self) -> None:
        self.cancel()
        await self._items.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[pb.WatchGameResponse, None]:
        session = self._session
        while not self._cancelled:
            call = self._call = session.connect(self._stub)
            try:
                async for message in call:
                    for item in session.items(message):
                        yield item
                session.cursor.finish()
                return
            except grpc.RpcError as exc:
                if self._cancelled:
                    return
                await asyncio.sleep(session.broken(exc))
            except asyncio.CancelledError:
                if self._cancelled:
                    return
                raise
            finally:
                call.cancel()


class AsyncGostopClient(_Base):
    """An asyncio client of ``gostop.v1.GameService`` (create it inside the running loop);
    ``async with`` closes its channel. Its methods are ``GostopClient``'s, awaited."""

    def _open(self) -> None:
        if self._secure:
            creds = grpc.ssl_channel_credentials(root_certificates=self._root_certificates)
            self._channel = grpc.aio.secure_channel(self.target, creds, options=self._options,
                                                    interceptors=self._interceptors or None)
        else:
            self._channel = grpc.aio.insecure_channel(self.target, options=self._options,
                                                      interceptors=self._interceptors or None)
        self._stub = _STUB(self._channel)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, flow: Flow[T], choose: _AsyncChooser = _no_chooser) -> T:
        """``GostopClient._run``, awaiting calls and choices."""
        steps = Steps(flow)
        while (step := steps.next()) is not None:
            try:
                steps.answer(await self._unary(step) if isinstance(step, Call) else await self._choose(choose, step))
            except Exception as error:
                steps.fail(error)
        return steps.result

    @staticmethod
    async def _choose(choose: _AsyncChooser, step: Choose) -> ActionLike:
        chosen = choose(step.view)
        return await chosen if inspect.isawaitable(chosen) else chosen

    async def _unary(self, call: Call) -> Any:
        backoff = self.retry.start()
        rpc = getattr(self._stub, call.method)
        timeout = self.timeout if call.timeout is None else call.timeout
        while True:
            try:
                return await rpc(call.request, metadata=call.metadata, timeout=timeout)
            except grpc.RpcError as exc:
                await asyncio.sleep(backoff.after(exc))

    async def list_rule_sets(self, *, timeout: float | None = None) -> list[pb.RuleSet]:
        return await self._run(self._methods.list_rule_sets(timeout))

    async def create_game(
        self, preset: str = "standard", players: int = 0, *, overrides: pb.Rules | Mapping[str, Any] | None = None,
        seed: int | None = None, rounds: int | None = None, deal: pb.Deal | None = None,
        bot_seats: BotSeats | None = None, clock: pb.ClockSettings | None = None, timeout: float | None = None,
    ) -> Game:
        req = create_request(preset, players, overrides, seed, rounds, deal, bot_seats, clock)
        return await self._run(self._methods.create_game(req, timeout))

    async def get_game(self, game: GameRef, seat: int | None = None, *, token: str | None = None,
                       timeout: float | None = None) -> pb.GameView:
        return await self._run(self._methods.get_game(game, seat, token, timeout))

    async def submit_action(
        self, game: GameRef, seat: int | None, action: ActionLike, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        return await self._run(self._methods.submit_action(game, seat, action, expected_version, request_id, token,
                                                           timeout))

    async def start_next_round(
        self, game: GameRef, seat: int | None, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        return await self._run(self._methods.start_next_round(game, seat, expected_version, request_id, token,
                                                              timeout))

    async def set_auto_play(
        self, game: GameRef, seat: int | None, on: bool, *, request_id: str | None = None, token: str | None = None,
        timeout: float | None = None,
    ) -> pb.SetAutoPlayResponse:
        """``GostopClient.set_auto_play``."""
        return await self._run(self._methods.set_auto_play(game, seat, on, request_id, token, timeout))

    async def act(
        self, game: GameRef, seat: int, choose: _AsyncChooser, *, token: str | None = None, max_attempts: int = 10,
    ) -> pb.TurnResult:
        """``GostopClient.act``; ``choose`` may be a coroutine function."""
        return await self._run(self._methods.act(game, seat, token, max_attempts), choose)

    def watch(self, game: GameRef, after_version: int = 0, seat: int | None = None, *, token: str | None = None,
              timeout: float | None = None, include_views: bool = False) -> AsyncWatchStream:
        return AsyncWatchStream(self, self._methods.watch_request(game, after_version, include_views),
                                self._methods.seat_md(game, seat, token), timeout)

    async def get_game_log(
        self, game: GameRef, *, after_version: int = 0, page_size: int = 0, seat: int | None = None,
        token: str | None = None, timeout: float | None = None,
    ) -> pb.GetGameLogResponse:
        return await self._run(self._methods.get_game_log(game, after_version, page_size, seat, token, timeout))

    async def log(self, game: GameRef, *, seat: int | None = None, token: str | None = None, page_size: int = 0,
                  timeout: float | None = None) -> pb.GetGameLogResponse:
        return await self._run(self._methods.log(game, seat, token, page_size, timeout))
