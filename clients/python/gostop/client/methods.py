"""The service's methods as flows (``gostop.client.calls``), written once for both clients.

Each flow builds its requests (a fresh request id unless the caller gives one, the expected
version from the handle unless given), picks the call's credentials, and keeps the game handles
up to date from the answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from gostop.engine import Action, action_id
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import overrides_to_pb

from .calls import Call, Choose, Flow, Metadata
from .errors import NotYourTurnError, RoundOverError, StaleVersion, client_side_error
from .games import Game, GameRef

__all__ = ["ActionLike", "BotSeats", "Methods", "Session"]

BotSeats = Mapping[int, str | tuple[str, int]]
"""Seat -> the bot the server's bot workers play it with (``"greedy"``), or (bot, CPU ms per decision)."""

ActionLike = int | Action | pb.Action | pb.LegalAction
"""What ``submit_action`` takes: a legal-action id, an engine action, a structured wire action,
or one of the view's ``legal_actions``."""


class Session(Protocol):
    """What the methods read from a client: its keys and the games whose tokens it knows."""

    api_key: str | None
    operator_key: str | None
    bot_key: str | None
    games: dict[str, Game]


def request_id(given: str | None) -> str:
    return given if given else str(uuid.uuid4())


def action_fields(action: ActionLike) -> dict[str, Any]:
    if isinstance(action, bool):
        raise TypeError("an action id must be an int, not a bool")
    if isinstance(action, int):
        return {"action_id": action}
    if isinstance(action, pb.LegalAction):
        return {"action_id": action.id}
    if isinstance(action, pb.Action):
        return {"structured": action}
    return {"action_id": action_id(action)}


def create_request(
    preset: str, players: int, overrides: pb.Rules | Mapping[str, Any] | None, seed: int | None,
    rounds: int | None, deal: pb.Deal | None, bot_seats: BotSeats | None, clock: pb.ClockSettings | None = None,
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
    if clock is not None:
        req.clock.CopyFrom(clock)
    return req


def check_choice(view: pb.GameView) -> None:
    """Refuse, before choosing, a view in which the seat has nothing to decide."""
    if view.phase == pb.PHASE_OVER:
        raise client_side_error(RoundOverError, "ROUND_OVER", "the round is over")
    if not view.legal_actions:
        raise client_side_error(NotYourTurnError, "NOT_YOUR_TURN",
                                f"seat {view.to_move} is to move, not {view.viewer}")


def key_md(token: str | None = None, key: str | None = None) -> Metadata:
    md: list[tuple[str, str]] = []
    if token:
        md.append(("authorization", f"Bearer {token}"))
    if key:
        md.append(("x-api-key", key))
    return tuple(md)


class Methods:
    """The flows of the service's methods for one client (see the clients for what each does)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def list_rule_sets(self, timeout: float | None) -> Flow[list[pb.RuleSet]]:
        response: pb.ListRuleSetsResponse = yield Call("ListRuleSets", pb.ListRuleSetsRequest(), (), timeout)
        return list(response.rule_sets)

    def create_game(self, req: pb.CreateGameRequest, timeout: float | None) -> Flow[Game]:
        s = self.session
        response: pb.CreateGameResponse = yield Call("CreateGame", req, key_md(key=s.operator_key or s.api_key),
                                                     timeout)
        game = Game(response.game_id, {seat.seat: seat.token for seat in response.seats}, response.version,
                    response.rules, response.view)
        s.games[game.game_id] = game
        return game

    def get_game(self, game: GameRef, seat: int | None, token: str | None, timeout: float | None
                 ) -> Flow[pb.GameView]:
        req = pb.GetGameRequest(game_id=self.game_id(game))
        response: pb.GetGameResponse = yield Call("GetGame", req, self.seat_md(game, seat, token), timeout)
        self._update(game, response.version, response.view)
        return response.view

    def submit_action(
        self, game: GameRef, seat: int | None, action: ActionLike, expected_version: int | None,
        given_id: str | None, token: str | None, timeout: float | None,
    ) -> Flow[pb.TurnResult]:
        req = pb.SubmitActionRequest(game_id=self.game_id(game),
                                     expected_version=self._expected(game, expected_version),
                                     request_id=request_id(given_id), **action_fields(action))
        return (yield from self._turn(Call("SubmitAction", req, self.seat_md(game, seat, token), timeout), game))

    def start_next_round(
        self, game: GameRef, seat: int | None, expected_version: int | None, given_id: str | None,
        token: str | None, timeout: float | None,
    ) -> Flow[pb.TurnResult]:
        req = pb.StartNextRoundRequest(game_id=self.game_id(game),
                                       expected_version=self._expected(game, expected_version),
                                       request_id=request_id(given_id))
        return (yield from self._turn(Call("StartNextRound", req, self.seat_md(game, seat, token), timeout), game))

    def set_auto_play(self, game: GameRef, seat: int | None, on: bool, given_id: str | None, token: str | None,
                      timeout: float | None) -> Flow[pb.SetAutoPlayResponse]:
        req = pb.SetAutoPlayRequest(game_id=self.game_id(game), on=on, request_id=request_id(given_id))
        response: pb.SetAutoPlayResponse = yield Call("SetAutoPlay", req, key_md(self._token(game, seat, token)),
                                                      timeout)
        self._update(game, response.version, response.view)
        return response

    def act(self, game: GameRef, seat: int, token: str | None, max_attempts: int) -> Flow[pb.TurnResult]:
        """Read the seat's view, ask for a choice, submit it at the view's version; choose again
        after a ``StaleVersion``."""
        stale: StaleVersion | None = None
        for _ in range(max_attempts):
            view = yield from self.get_game(game, seat, token, None)
            check_choice(view)
            try:
                action: ActionLike = yield Choose(view)
                return (yield from self.submit_action(game, seat, action, view.version, None, token, None))
            except StaleVersion as exc:
                stale = exc
        if stale is None:
            raise ValueError("max_attempts must be at least 1")
        raise stale

    def get_game_log(self, game: GameRef, after_version: int, page_size: int, seat: int | None,
                     token: str | None, timeout: float | None) -> Flow[pb.GetGameLogResponse]:
        req = pb.GetGameLogRequest(game_id=self.game_id(game), after_version=after_version, page_size=page_size)
        md = key_md(self._token(game, seat, token), self.session.operator_key)
        response: pb.GetGameLogResponse = yield Call("GetGameLog", req, md, timeout)
        return response

    def log(self, game: GameRef, seat: int | None, token: str | None, page_size: int, timeout: float | None
            ) -> Flow[pb.GetGameLogResponse]:
        out = yield from self.get_game_log(game, 0, page_size, seat, token, timeout)
        after = out.next_after_version
        while after:
            page = yield from self.get_game_log(game, after, page_size, seat, token, timeout)
            out.entries.extend(page.entries)
            out.version = page.version
            after = page.next_after_version
        out.next_after_version = 0
        return out

    def watch_request(self, game: GameRef, after_version: int, include_views: bool = False) -> pb.WatchGameRequest:
        return pb.WatchGameRequest(game_id=self.game_id(game), after_version=after_version,
                                   include_views=include_views)

    # ---------------------------------------------------------------- handles and credentials

    def _turn(self, call: Call, game: GameRef) -> Flow[pb.TurnResult]:
        response: pb.SubmitActionResponse | pb.StartNextRoundResponse = yield call
        self._update(game, response.result.version, response.result.view)
        return response.result

    def game_id(self, game: GameRef) -> str:
        return game.game_id if isinstance(game, Game) else game

    def _handle(self, game: GameRef) -> Game | None:
        return game if isinstance(game, Game) else self.session.games.get(game)

    def _token(self, game: GameRef, seat: int | None, token: str | None) -> str | None:
        if token is not None or seat is None:
            return token
        handle = self._handle(game)
        if handle is None:
            raise ValueError(f"no token for seat {seat} of game {self.game_id(game)}: pass token= or a Game")
        return handle.token(seat)

    def seat_md(self, game: GameRef, seat: int | None, token: str | None) -> Metadata:
        """The credentials of a call for ``seat``: its token, or a bot worker's key and the seat."""
        bot_key = self.session.bot_key
        if token is None and seat is not None and bot_key is not None:
            return (("x-api-key", bot_key), ("x-bot-seat", str(seat)))
        return key_md(self._token(game, seat, token))

    def _expected(self, game: GameRef, expected_version: int | None) -> int:
        if expected_version is not None:
            return expected_version
        handle = self._handle(game)
        if handle is None or handle.version <= 0:
            raise ValueError("pass expected_version (or a Game handle that has seen a version)")
        return handle.version

    def _update(self, game: GameRef, version: int, view: pb.GameView | None) -> None:
        handle = self._handle(game)
        if handle is not None:
            handle._seen(version, view)
