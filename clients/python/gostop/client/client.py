"""Typed clients of the gostop game service: ``GostopClient`` (blocking, ``grpc``) and
``AsyncGostopClient`` (asyncio, ``grpc.aio``), with the same methods.

Every call has a deadline (``timeout``, 5 s by default). ``UNAVAILABLE`` is retried with
exponential backoff and jitter, within ``RetryPolicy``'s bounds on attempts and time;
``SubmitAction`` and ``StartNextRound`` always carry a request id (a fresh uuid4 unless the
caller gives one), so a retried action is applied at most once. Failures are raised as
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
import random
import threading
import time
import uuid
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
from dataclasses import dataclass, field
from typing import Any, Final, Self

import grpc
import grpc.aio

from gostop.engine import Action, action_id
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc
from gostop.wire.convert import overrides_to_pb

from .errors import (
    GostopError,
    NotYourTurnError,
    RoundOverError,
    StaleVersion,
    client_side_error,
    error_from_rpc,
)

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

DEFAULT_TIMEOUT: Final = 5.0
BotSeats = Mapping[int, str | tuple[str, int]]
"""Seat -> the bot the server's bot workers play it with (``"greedy"``), or (bot, CPU ms per decision)."""
"""Seconds: the deadline of each attempt of a unary call."""

ActionLike = int | Action | pb.Action | pb.LegalAction
"""What ``submit_action`` takes: a legal-action id, an engine action, a structured wire action,
or one of the view's ``legal_actions``."""

# ----------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to retry a call that failed with one of ``codes``.

    Attempt n (from 0) waits ``min(max_backoff, initial_backoff * multiplier**n)`` with equal
    jitter (half fixed, half random) before the next; at most ``max_attempts`` attempts and
    ``max_elapsed`` seconds from the first one. ``RetryPolicy(max_attempts=1)`` never retries.
    """

    max_attempts: int = 10
    initial_backoff: float = 0.05
    max_backoff: float = 2.0
    multiplier: float = 2.0
    max_elapsed: float = 20.0
    codes: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})

    def start(self) -> _Backoff:
        return _Backoff(self)


class _Backoff:
    """The retry state of one call (or of one watch, reset by every delivered event)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.reset()

    def reset(self) -> None:
        self.attempt = 0
        self.started = time.monotonic()

    def next_delay(self, error: GostopError) -> float | None:
        """Seconds to wait before retrying after ``error``; None when it must not be retried."""
        p = self.policy
        if error.code not in p.codes:
            return None
        self.attempt += 1
        if self.attempt >= p.max_attempts:
            return None
        cap = min(p.max_backoff, p.initial_backoff * p.multiplier ** (self.attempt - 1))
        delay = cap / 2 + random.uniform(0, cap / 2)
        if time.monotonic() + delay - self.started > p.max_elapsed:
            return None
        return delay


# ------------------------------------------------------------------------------ games


def seat_of_token(token: str) -> tuple[str, int]:
    """The game id and seat a seat token names (``gst1.<game_id>.<seat>.<mac>``); ``ValueError``
    for a string that is not shaped like a token. The server still checks its signature."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != "gst1" or not (parts[2].isascii() and parts[2].isdigit()):
        raise ValueError("not a gostop seat token")
    return parts[1], int(parts[2])


@dataclass
class Game:
    """A handle on one game: its ``game_id`` (as on the wire), the seat tokens the holder has, and
    the last version seen.

    ``create_game`` returns one with every seat's token; to join a game created elsewhere,
    build one from tokens: ``Game.from_tokens([token])``. Client methods keep ``version`` up to
    date (it is the default ``expected_version`` of ``submit_action``).
    """

    game_id: str
    tokens: dict[int, str] = field(default_factory=dict)
    version: int = 0
    rules: pb.Rules | None = None
    view: pb.GameView | None = None
    """The latest view a call returned (whoever's it was)."""

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], version: int = 0) -> Game:
        """A handle from seat tokens (all of one game)."""
        ids, seats = set(), {}
        for token in tokens:
            game_id, seat = seat_of_token(token)
            ids.add(game_id)
            seats[seat] = token
        if len(ids) != 1:
            raise ValueError("the tokens must name exactly one game")
        return cls(ids.pop(), seats, version)

    @property
    def id(self) -> str:
        """``game_id`` under its earlier name."""
        return self.game_id

    def token(self, seat: int) -> str:
        try:
            return self.tokens[seat]
        except KeyError:
            raise ValueError(f"no token for seat {seat} of game {self.game_id}") from None

    def _seen(self, version: int, view: pb.GameView | None = None) -> None:
        if version >= self.version:
            self.version = version
            if view is not None:
                self.view = view


GameRef = Game | str
"""A game handle, or a bare game id (its tokens then come from ``token=`` or the client's
games: those it created or was told about with ``join``)."""


def _request_id(request_id: str | None) -> str:
    return request_id if request_id else str(uuid.uuid4())


def _action_fields(action: ActionLike) -> dict[str, Any]:
    if isinstance(action, bool):
        raise TypeError("an action id must be an int, not a bool")
    if isinstance(action, int):
        return {"action_id": action}
    if isinstance(action, pb.LegalAction):
        return {"action_id": action.id}
    if isinstance(action, pb.Action):
        return {"structured": action}
    return {"action_id": action_id(action)}


class _WatchCursor:
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
    """Configuration, credentials and requests shared by the sync and async clients."""

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

    def _game(self, game: GameRef) -> tuple[str, Game | None]:
        if isinstance(game, Game):
            return game.game_id, game
        return game, self.games.get(game)

    def _token(self, game: GameRef, seat: int | None, token: str | None) -> str | None:
        if token is not None or seat is None:
            return token
        game_id, handle = self._game(game)
        if handle is None:
            raise ValueError(f"no token for seat {seat} of game {game_id}: pass token= or a Game")
        return handle.token(seat)

    def _seat_md(self, game: GameRef, seat: int | None, token: str | None) -> tuple[tuple[str, str], ...]:
        """The credentials of a call for ``seat``: its token, or a bot worker's key and the seat."""
        if token is None and seat is not None and self.bot_key is not None:
            return (("x-api-key", self.bot_key), ("x-bot-seat", str(seat)))
        return self._md(self._token(game, seat, token))

    def _md(self, token: str | None = None, key: str | None = None) -> tuple[tuple[str, str], ...]:
        md: list[tuple[str, str]] = []
        if token:
            md.append(("authorization", f"Bearer {token}"))
        if key:
            md.append(("x-api-key", key))
        return tuple(md)

    def _create_request(
        self, preset: str, players: int, overrides: pb.Rules | Mapping[str, Any] | None, seed: int | None,
        rounds: int | None, deal: pb.Deal | None, bot_seats: BotSeats | None = None,
    ) -> pb.CreateGameRequest:
        req = pb.CreateGameRequest(preset=preset, players=players)
        for seat, bot in (bot_seats or {}).items():
            name, budget = (bot, 0) if isinstance(bot, str) else bot
            req.bot_seats.add(seat=seat, bot=name, budget_ms=budget)
        if overrides is not None:
            req.overrides.CopyFrom(overrides if isinstance(overrides, pb.Rules) else overrides_to_pb(overrides))
        if seed is not None:
            req.seed = seed
        if rounds is not None:
            req.rounds = rounds
        if deal is not None:
            req.deal.CopyFrom(deal)
        return req

    def _created(self, response: pb.CreateGameResponse) -> Game:
        game = Game(response.game_id, {s.seat: s.token for s in response.seats}, response.version,
                    response.rules, response.view)
        self.games[game.game_id] = game
        return game

    def _expected(self, game: GameRef, expected_version: int | None) -> int:
        if expected_version is not None:
            return expected_version
        _, handle = self._game(game)
        if handle is None or handle.version <= 0:
            raise ValueError("pass expected_version (or a Game handle that has seen a version)")
        return handle.version

    def _update(self, game: GameRef, version: int, view: pb.GameView | None) -> None:
        _, handle = self._game(game)
        if handle is not None:
            handle._seen(version, view)

    def _check_choice(self, view: pb.GameView) -> None:
        if view.phase == pb.PHASE_OVER:
            raise client_side_error(RoundOverError, "ROUND_OVER", "the round is over")
        if not view.legal_actions:
            raise client_side_error(NotYourTurnError, "NOT_YOUR_TURN",
                                    f"seat {view.to_move} is to move, not {view.viewer}")


# ------------------------------------------------------------------------- sync client


class WatchStream(Iterator[pb.WatchGameResponse]):
    """The events of a game after a version, one ``WatchGameResponse`` (version, event) at a time.

    Reconnects when the stream breaks with a retryable status (``UNAVAILABLE``: a server restart,
    a lost connection) and resumes exactly where it was. Iteration ends when the server ends the
    stream (the match is finished) or after ``cancel()`` (thread-safe).
    """

    def __init__(self, client: GostopClient, request: pb.WatchGameRequest, metadata: tuple[tuple[str, str], ...],
                 timeout: float | None) -> None:
        self._client = client
        self._request = request
        self._metadata = metadata
        self._timeout = timeout
        self.cursor = _WatchCursor(request.after_version)
        self.reconnects = 0
        self._call: Any = None
        self._cancelled = threading.Event()
        self._items = self._run()

    @property
    def last_complete_version(self) -> int:
        """The last version whose events were all delivered."""
        return self.cursor.done

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
        backoff = self._client.retry.start()
        stub = self._client._stub
        while not self._cancelled.is_set():
            request = pb.WatchGameRequest(game_id=self._request.game_id, after_version=self.cursor.resume())
            call = stub.WatchGame(request, metadata=self._metadata, timeout=self._timeout)
            self._call = call
            if self._cancelled.is_set():
                call.cancel()
                return
            try:
                for item in call:
                    if self.cursor.accept(item):
                        backoff.reset()  # progress: a later failure starts a fresh backoff
                        yield item
                self.cursor.finish()
                return
            except grpc.RpcError as exc:
                if self._cancelled.is_set():
                    return
                error = error_from_rpc(exc)
                delay = backoff.next_delay(error)
                if delay is None:
                    raise error from exc
                self.reconnects += 1
                if self._cancelled.wait(delay):
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

    def _call(self, method: str, request: Any, metadata: tuple[tuple[str, str], ...] = (),
              timeout: float | None = None) -> Any:
        """One unary call with its deadline, retried per the policy; typed errors."""
        backoff = self.retry.start()
        rpc = getattr(self._stub, method)
        while True:
            try:
                return rpc(request, metadata=metadata, timeout=self.timeout if timeout is None else timeout)
            except grpc.RpcError as exc:
                error = error_from_rpc(exc)
                delay = backoff.next_delay(error)
                if delay is None:
                    raise error from exc
                time.sleep(delay)

    def list_rule_sets(self, *, timeout: float | None = None) -> list[pb.RuleSet]:
        """Every preset at every player count it supports, with every rule set."""
        response: pb.ListRuleSetsResponse = self._call("ListRuleSets", pb.ListRuleSetsRequest(), timeout=timeout)
        return list(response.rule_sets)

    def create_game(
        self, preset: str = "standard", players: int = 0, *, overrides: pb.Rules | Mapping[str, Any] | None = None,
        seed: int | None = None, rounds: int | None = None, deal: pb.Deal | None = None,
        bot_seats: BotSeats | None = None, timeout: float | None = None,
    ) -> Game:
        """Create a match (``rounds`` absent: 1; 0: open-ended); a handle with every seat's token.

        ``overrides`` are rule fields to change, as a ``Rules`` message or engine-style values
        (``{"gwangbak": False}``). ``bot_seats`` are seats the server's bot workers play (no token
        comes back for them): ``{1: "greedy"}`` or ``{1: ("mcts", 300)}`` with a CPU budget in ms per
        decision. A retry after a lost reply may leave an unused game behind (it expires).
        """
        req = self._create_request(preset, players, overrides, seed, rounds, deal, bot_seats)
        response = self._call("CreateGame", req, self._md(key=self.operator_key or self.api_key), timeout)
        return self._created(response)

    def get_game(self, game: GameRef, seat: int | None = None, *, token: str | None = None,
                 timeout: float | None = None) -> pb.GameView:
        """The view of ``seat`` (its token from the handle, the client's games or ``token``), with its
        legal actions; a spectator's view without a seat. ``view.version`` is the game's version."""
        game_id, _ = self._game(game)
        md = self._seat_md(game, seat, token)
        response: pb.GetGameResponse = self._call("GetGame", pb.GetGameRequest(game_id=game_id), md, timeout)
        self._update(game, response.version, response.view)
        return response.view

    def submit_action(
        self, game: GameRef, seat: int | None, action: ActionLike, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        """Apply one action of ``seat`` at ``expected_version`` (default: the handle's version), at
        most once: the request id (a fresh uuid4 unless given) makes retries safe.
        ``StaleVersion`` when the game is at another version."""
        game_id, _ = self._game(game)
        req = pb.SubmitActionRequest(game_id=game_id, expected_version=self._expected(game, expected_version),
                                     request_id=_request_id(request_id), **_action_fields(action))
        response: pb.SubmitActionResponse = self._call(
            "SubmitAction", req, self._seat_md(game, seat, token), timeout)
        self._update(game, response.result.version, response.result.view)
        return response.result

    def start_next_round(
        self, game: GameRef, seat: int | None, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        """Deal the next round of the match once the current one is over (idempotent like ``submit_action``)."""
        game_id, _ = self._game(game)
        req = pb.StartNextRoundRequest(game_id=game_id, expected_version=self._expected(game, expected_version),
                                       request_id=_request_id(request_id))
        response: pb.StartNextRoundResponse = self._call(
            "StartNextRound", req, self._seat_md(game, seat, token), timeout)
        self._update(game, response.result.version, response.result.view)
        return response.result

    def act(
        self, game: GameRef, seat: int, choose: Callable[[pb.GameView], ActionLike], *, token: str | None = None,
        max_attempts: int = 10,
    ) -> pb.TurnResult:
        """Read ``seat``'s view, let ``choose`` pick an action from it (``view.legal_actions``), and
        submit it at the view's version; when the game moved on meanwhile (``StaleVersion``), read
        it again and let ``choose`` choose again. ``NotYourTurnError`` / ``RoundOverError`` (checked before
        ``choose`` is called) when the seat has nothing to decide."""
        stale: StaleVersion | None = None
        for _ in range(max_attempts):
            view = self.get_game(game, seat, token=token)
            self._check_choice(view)
            try:
                return self.submit_action(game, seat, choose(view), expected_version=view.version, token=token)
            except StaleVersion as exc:
                stale = exc
        assert stale is not None
        raise stale

    def watch(self, game: GameRef, after_version: int = 0, seat: int | None = None, *, token: str | None = None,
              timeout: float | None = None) -> WatchStream:
        """The events (as ``seat`` may see them; a spectator's without a seat) of every version after
        ``after_version``, as they are committed; ends when the match is finished. Resumes by itself
        after a server restart or a lost connection. ``timeout`` bounds each connection (none by default)."""
        game_id, _ = self._game(game)
        return WatchStream(self, pb.WatchGameRequest(game_id=game_id, after_version=after_version),
                           self._seat_md(game, seat, token), timeout)

    def get_game_log(
        self, game: GameRef, *, after_version: int = 0, page_size: int = 0, seat: int | None = None,
        token: str | None = None, timeout: float | None = None,
    ) -> pb.GetGameLogResponse:
        """One page of the full log (operators; seats once the match is over)."""
        game_id, _ = self._game(game)
        req = pb.GetGameLogRequest(game_id=game_id, after_version=after_version, page_size=page_size)
        md = self._md(self._token(game, seat, token), self.operator_key)
        response: pb.GetGameLogResponse = self._call("GetGameLog", req, md, timeout)
        return response

    def log(self, game: GameRef, *, seat: int | None = None, token: str | None = None, page_size: int = 0,
            timeout: float | None = None) -> pb.GetGameLogResponse:
        """The whole log: every page (``next_after_version``) merged into one response."""
        out = self.get_game_log(game, page_size=page_size, seat=seat, token=token, timeout=timeout)
        after = out.next_after_version
        while after:
            page = self.get_game_log(game, after_version=after, page_size=page_size, seat=seat, token=token,
                                     timeout=timeout)
            out.entries.extend(page.entries)
            out.version = page.version
            after = page.next_after_version
        out.next_after_version = 0
        return out


# ------------------------------------------------------------------------ async client


class AsyncWatchStream(AsyncIterator[pb.WatchGameResponse]):
    """``WatchStream`` for asyncio: ``async for item in client.watch(...)``."""

    def __init__(self, client: AsyncGostopClient, request: pb.WatchGameRequest,
                 metadata: tuple[tuple[str, str], ...], timeout: float | None) -> None:
        self._client = client
        self._request = request
        self._metadata = metadata
        self._timeout = timeout
        self.cursor = _WatchCursor(request.after_version)
        self.reconnects = 0
        self._call: Any = None
        self._cancelled = False
        self._items = self._run()

    @property
    def last_complete_version(self) -> int:
        return self.cursor.done

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
        backoff = self._client.retry.start()
        stub = self._client._stub
        while not self._cancelled:
            request = pb.WatchGameRequest(game_id=self._request.game_id, after_version=self.cursor.resume())
            call = stub.WatchGame(request, metadata=self._metadata, timeout=self._timeout)
            self._call = call
            try:
                async for item in call:
                    if self.cursor.accept(item):
                        backoff.reset()
                        yield item
                self.cursor.finish()
                return
            except grpc.RpcError as exc:
                if self._cancelled:
                    return
                error = error_from_rpc(exc)
                delay = backoff.next_delay(error)
                if delay is None:
                    raise error from exc
                self.reconnects += 1
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                if self._cancelled:
                    return
                raise
            finally:
                call.cancel()


class AsyncGostopClient(_Base):
    """An asyncio client of ``gostop.v1.GameService`` (create it inside the running loop);
    ``async with`` closes its channel."""

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

    async def _call(self, method: str, request: Any, metadata: tuple[tuple[str, str], ...] = (),
                    timeout: float | None = None) -> Any:
        backoff = self.retry.start()
        rpc = getattr(self._stub, method)
        while True:
            try:
                return await rpc(request, metadata=metadata, timeout=self.timeout if timeout is None else timeout)
            except grpc.RpcError as exc:
                error = error_from_rpc(exc)
                delay = backoff.next_delay(error)
                if delay is None:
                    raise error from exc
                await asyncio.sleep(delay)

    async def list_rule_sets(self, *, timeout: float | None = None) -> list[pb.RuleSet]:
        response: pb.ListRuleSetsResponse = await self._call("ListRuleSets", pb.ListRuleSetsRequest(),
                                                             timeout=timeout)
        return list(response.rule_sets)

    async def create_game(
        self, preset: str = "standard", players: int = 0, *, overrides: pb.Rules | Mapping[str, Any] | None = None,
        seed: int | None = None, rounds: int | None = None, deal: pb.Deal | None = None,
        bot_seats: BotSeats | None = None, timeout: float | None = None,
    ) -> Game:
        req = self._create_request(preset, players, overrides, seed, rounds, deal, bot_seats)
        response = await self._call("CreateGame", req, self._md(key=self.operator_key or self.api_key), timeout)
        return self._created(response)

    async def get_game(self, game: GameRef, seat: int | None = None, *, token: str | None = None,
                       timeout: float | None = None) -> pb.GameView:
        game_id, _ = self._game(game)
        md = self._seat_md(game, seat, token)
        response: pb.GetGameResponse = await self._call("GetGame", pb.GetGameRequest(game_id=game_id), md, timeout)
        self._update(game, response.version, response.view)
        return response.view

    async def submit_action(
        self, game: GameRef, seat: int | None, action: ActionLike, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        game_id, _ = self._game(game)
        req = pb.SubmitActionRequest(game_id=game_id, expected_version=self._expected(game, expected_version),
                                     request_id=_request_id(request_id), **_action_fields(action))
        response: pb.SubmitActionResponse = await self._call(
            "SubmitAction", req, self._seat_md(game, seat, token), timeout)
        self._update(game, response.result.version, response.result.view)
        return response.result

    async def start_next_round(
        self, game: GameRef, seat: int | None, *, expected_version: int | None = None,
        request_id: str | None = None, token: str | None = None, timeout: float | None = None,
    ) -> pb.TurnResult:
        game_id, _ = self._game(game)
        req = pb.StartNextRoundRequest(game_id=game_id, expected_version=self._expected(game, expected_version),
                                       request_id=_request_id(request_id))
        response: pb.StartNextRoundResponse = await self._call(
            "StartNextRound", req, self._seat_md(game, seat, token), timeout)
        self._update(game, response.result.version, response.result.view)
        return response.result

    async def act(
        self, game: GameRef, seat: int,
        choose: Callable[[pb.GameView], ActionLike] | Callable[[pb.GameView], Awaitable[ActionLike]], *,
        token: str | None = None, max_attempts: int = 10,
    ) -> pb.TurnResult:
        """``GostopClient.act``; ``choose`` may be a coroutine function."""
        stale: StaleVersion | None = None
        for _ in range(max_attempts):
            view = await self.get_game(game, seat, token=token)
            self._check_choice(view)
            chosen = choose(view)
            action: ActionLike = await chosen if inspect.isawaitable(chosen) else chosen
            try:
                return await self.submit_action(game, seat, action, expected_version=view.version, token=token)
            except StaleVersion as exc:
                stale = exc
        assert stale is not None
        raise stale

    def watch(self, game: GameRef, after_version: int = 0, seat: int | None = None, *, token: str | None = None,
              timeout: float | None = None) -> AsyncWatchStream:
        game_id, _ = self._game(game)
        return AsyncWatchStream(self, pb.WatchGameRequest(game_id=game_id, after_version=after_version),
                                self._seat_md(game, seat, token), timeout)

    async def get_game_log(
        self, game: GameRef, *, after_version: int = 0, page_size: int = 0, seat: int | None = None,
        token: str | None = None, timeout: float | None = None,
    ) -> pb.GetGameLogResponse:
        game_id, _ = self._game(game)
        req = pb.GetGameLogRequest(game_id=game_id, after_version=after_version, page_size=page_size)
        md = self._md(self._token(game, seat, token), self.operator_key)
        response: pb.GetGameLogResponse = await self._call("GetGameLog", req, md, timeout)
        return response

    async def log(self, game: GameRef, *, seat: int | None = None, token: str | None = None, page_size: int = 0,
                  timeout: float | None = None) -> pb.GetGameLogResponse:
        out = await self.get_game_log(game, page_size=page_size, seat=seat, token=token, timeout=timeout)
        after = out.next_after_version
        while after:
            page = await self.get_game_log(game, after_version=after, page_size=page_size, seat=seat, token=token,
                                           timeout=timeout)
            out.entries.extend(page.entries)
            out.version = page.version
            after = page.next_after_version
        out.next_after_version = 0
        return out
