"""The operations of the API over the games repository: create, read, act, watch and log games.

Each call loads the game (``repository``), applies the engine, and commits the new version, its log
entry and the idempotent response in one atomic compare-and-set; bot seats' turns are queued after
the commit (``bot_turns``), streams are ``watch``'s. Errors are ``ServiceError``s: no transport here.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from typing import Any

from google.protobuf.message import DecodeError

from gostop.engine import (
    PRESET_PLAYERS,
    Action,
    Deal,
    EngineError,
    Match,
    Rules,
    action_from_id,
    action_id,
    match_apply,
    match_to_bytes,
    new_match,
    next_round,
    redact,
    view,
)
from gostop.engine.events import Event, RoundSettled
from gostop.engine.render import action_label
from gostop.engine.table_events import TABLE_EVENT_TYPES, AutoPlaySet, PlayedForSeat, SeatPresence, TableEvent
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert

from . import compact
from .auth import Authenticator, Caller, seat_in
from .bot_queue import BotQueue, check_request_id
from .bot_seats import bot_seats_to_doc, parse_bot_seats
from .bot_turns import BotSeats, BotTurns
from .clock import ClockSettings, Due, Table, now_ms
from .clocks import Clocks
from .config import Config
from .errors import Code, ServiceError, denied, invalid, not_found, precondition, stale, unauthenticated
from .fairness import FAIR_SCHEME, choose_seed, reveal
from .metrics import Metrics
from .plays import RoundPlays, round_plays
from .presence import Presence
from .repository import Loaded, Repository, bounded_put, pack_entry, read_entry
from .store_api import Committed, Conflict, Duplicate, LogEntry, Missing, Store, StoreCorrupt
from .watch import StreamSlots, ViewOf, Watches

_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A game id, matched whole (``fullmatch``: ``$`` would let a trailing newline through)."""
MAX_REQUEST_ID = 128
LOG_PAGE = 500
LOG_PAGE_MAX = 1000


def _check_game_id(game_id: str) -> None:
    if not _GAME_ID.fullmatch(game_id):
        raise invalid("MALFORMED_GAME_ID", "game_id must be 1-64 characters of A-Z a-z 0-9 _ -")


def action_kind(action: Action | None) -> str:
    """The metrics label of an action: play, bomb, capture, go, stop... (next_round for none)."""
    if action is None:
        return "next_round"
    kind = _KINDS.get(type(action))
    if kind is None:
        kind = _KINDS[type(action)] = action_label(action).split(" ")[0]
    return kind


_KINDS: dict[type, str] = {}


class Games:
    """Every operation of the API, over a ``Store``."""

    def __init__(self, store: Store, auth: Authenticator, config: Config, metrics: Metrics) -> None:
        self.store = store
        self.auth = auth
        self.config = config
        self.metrics = metrics
        self.repository = Repository(store, config, metrics)
        self.bot_turns = BotTurns(self.repository, config, metrics)
        self.watches = Watches(self.repository, config)
        self.clocks = Clocks(self.repository, self.bot_turns, config, metrics)
        self.presence = Presence(store, config.presence_grace_ms, self._set_presence)
        self._views: OrderedDict[tuple[str, int], tuple[int, pb.GetGameResponse]] = OrderedDict()
        """The last ``GetGame`` answer per (game, viewer), valid while the game is at its version:
        clients that poll a game they wait on get it without rebuilding the view."""

    @property
    def bot_queue(self) -> BotQueue | None:
        """Where bot seats' turns go (None: this server has no bot seats)."""
        return self.bot_turns.queue

    @bot_queue.setter
    def bot_queue(self, queue: BotQueue | None) -> None:
        self.bot_turns.queue = queue

    @property
    def streams(self) -> StreamSlots:
        return self.watches.streams

    def begin_shutdown(self) -> int:
        """End every open WatchGame stream (UNAVAILABLE, ``SHUTTING_DOWN``: clients resume from their
        last version, on another replica or once this one is back) and refuse new ones, so that a
        drain waits only for unary calls. Returns how many streams were open."""
        return self.watches.begin_shutdown()

    async def _caller_seat(self, caller: Caller, game_id: str, clock_move: bool = False
                           ) -> tuple[int | None, BotSeats | None]:
        _check_game_id(game_id)
        return await self.bot_turns.caller_seat(caller, game_id, clock_move)

    async def _seat(self, caller: Caller, game_id: str, clock_move: bool = False) -> tuple[int, BotSeats | None]:
        seat, bots = await self._caller_seat(caller, game_id, clock_move)
        if seat is None:
            raise unauthenticated("this call needs a seat token (authorization: Bearer <token>)")
        return seat, bots

    def list_rule_sets(self) -> pb.ListRuleSetsResponse:
        out = pb.ListRuleSetsResponse()
        for preset, counts in PRESET_PLAYERS.items():
            for players in sorted(counts):
                out.rule_sets.add(preset=preset, players=players, rules=convert.rules_to_pb(
                    Rules.preset(preset, players=players)))
        return out

    async def create(self, req: pb.CreateGameRequest, caller: Caller) -> pb.CreateGameResponse:
        if self.auth.api_keys_required and not caller.api_key:
            raise unauthenticated("CreateGame needs an API key (x-api-key)")
        if req.HasField("deal") and not caller.operator:
            raise denied("OPERATOR_ONLY", "an explicit deal needs an operator key")
        rules, rounds = self._rules_of(req)
        deal = convert.deal_from_pb(req.deal) if req.HasField("deal") else None
        bots = parse_bot_seats(req.bot_seats, rules.players, self.config)
        if bots and self.bot_queue is None:
            raise precondition("NO_BOT_WORKERS", "this server has no bot queue: bot seats are not available")
        clock = ClockSettings.from_pb(req.clock, self.config) if req.HasField("clock") else None
        if clock is not None and self.bot_queue is None:
            raise precondition("NO_BOT_WORKERS", "this server has no bot queue: a turn clock is not available")
        client_seed = req.seed if req.HasField("seed") else None
        commitment = pb.DealCommitment(scheme=FAIR_SCHEME)
        repo = self.repository
        for _ in range(5):
            extra: dict[str, Any] = {"rounds": rounds}
            if bots:
                extra["bots"] = bot_seats_to_doc(bots)
            if clock is not None:
                extra["clock"] = clock.to_doc()
            game_id, seed = choose_seed(caller.operator, deal is not None, client_seed, commitment, extra)
            match, events = new_match(rules, seed, rounds, deal=deal)
            if deal is not None:
                extra["deal"] = {"hands": [list(h) for h in deal.hands], "floor": list(deal.floor),
                                 "stock": list(deal.stock), "dealer": deal.dealer}
            table = None if clock is None else Table.new(clock, rules.players, now_ms())
            if table is not None:
                extra["t"] = table.to_doc()
            entry = pack_entry(1, "create", -1, None, "", events, match.finished, **extra)
            blob = compact.pack("snap", match_to_bytes(match))
            if await repo.timed("create", self.store.create(game_id, blob, entry, repo.ttl_ms(match))):
                break
        else:  # pragma: no cover - 96-bit ids do not collide
            raise ServiceError(Code.INTERNAL, "ID_EXHAUSTED", "could not allocate a game id")
        repo.remember(game_id, 1, match, table=table)
        self.bot_turns.remember(game_id, bots, clock)
        self.metrics.games_created.labels(rules.name, str(rules.players)).inc()
        self._count_round(match, events)
        out = pb.CreateGameResponse(game_id=game_id, version=1, rules=convert.rules_to_pb(rules),
                                    deal_commitment=commitment)
        bot_seat_numbers = {b.seat for b in bots}
        for seat in range(rules.players):
            if seat not in bot_seat_numbers:
                out.seats.add(seat=seat, token=self.auth.issue(game_id, seat))
        out.bot_seats.extend(b.to_pb() for b in bots)
        self._view(game_id, 1, match, None, out.view, round_plays(match), bots, table)
        await self.bot_turns.push(game_id, 1, match, bots)
        await self.clocks.schedule(game_id, 1, match, bots, table)
        return out

    @staticmethod
    def _rules_of(req: pb.CreateGameRequest) -> tuple[Rules, int]:
        """The rules and the number of rounds a ``CreateGame`` asks for."""
        if not req.preset:
            raise invalid("MISSING_PRESET", "preset is required", field="preset")
        if req.preset not in PRESET_PLAYERS:
            raise invalid("UNKNOWN_PRESET", f"unknown preset {req.preset!r}; presets are {', '.join(PRESET_PLAYERS)}",
                          field="preset")
        overrides = convert.overrides_from_pb(req.overrides) if req.HasField("overrides") else {}
        if overrides.pop("name", req.preset) != req.preset:
            raise invalid("INVALID_RULES", "name is the preset's and cannot be overridden", field="name")
        players = req.players or overrides.pop("players", None)
        overrides.pop("players", None)
        rules = Rules.preset(req.preset, players=players, **overrides)
        rounds = req.rounds if req.HasField("rounds") else 1
        if rounds < 0:
            raise invalid("BAD_ROUNDS", "rounds must be 0 (open-ended) or more", field="rounds")
        return rules, rounds

    async def get(self, req: pb.GetGameRequest, caller: Caller) -> pb.GetGameResponse:
        seat, bots = await self._caller_seat(caller, req.game_id, clock_move=True)
        loaded = await self.repository.load(req.game_id)
        if bots is None:
            bots = await self.bot_turns.seats(req.game_id)
        table = await self.clocks.table(req.game_id, loaded)
        if seat is not None:
            Clocks.forced(table, loaded.match, bots, seat, None, caller.bot_seat is not None)
        await self.bot_turns.nudge(req.game_id, loaded.version, loaded.match, bots)
        await self.clocks.nudge(req.game_id, loaded, bots, table)
        return self._response(req.game_id, seat, loaded._replace(table=table), bots)

    def _response(self, game_id: str, seat: int | None, loaded: Loaded, bots: BotSeats) -> pb.GetGameResponse:
        """``seat``'s view of the game at ``loaded`` (its clock resolved), built once per seat and version."""
        version, match, plays, *_ = loaded
        key = (game_id, -1 if seat is None else seat)
        hit = self._views.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        if plays is None:
            plays = round_plays(match)
            self.repository.remember(game_id, version, match, plays)
        response = pb.GetGameResponse(version=version)
        self._view(game_id, version, match, seat, response.view, plays, bots, loaded.table)
        if match.finished:  # a finished match's views are asked for a few times, not kept
            self._views.pop(key, None)
        else:
            bounded_put(self._views, key, (version, response), 2 * self.config.snapshot_cache)
        return response

    def _view(self, game_id: str, version: int, match: Match, seat: int | None, out: pb.GameView,
              plays: RoundPlays, bots: BotSeats, table: Table | None) -> None:
        """``seat``'s view into ``out``: the engine's, the bot seats, and the table's clock."""
        if seat is not None and not 0 <= seat < match.rules.players:
            raise denied("NO_SUCH_SEAT", "the seat token names a seat this game does not have")
        convert.view_to_pb(view(match.round, -1 if seat is None else seat), match, game_id, version, out, plays.view)
        out.bot_seats.extend(b.to_pb() for b in bots)
        if table is not None:
            table.to_pb(match, bots, out)

    async def submit(self, req: pb.SubmitActionRequest, caller: Caller) -> pb.SubmitActionResponse:
        seat, bots = await self._seat(caller, req.game_id, clock_move=True)
        check_request_id(req.request_id, "act", req.expected_version, seat, caller.bot_seat is not None)
        which = req.WhichOneof("action")
        if which == "action_id":
            action = action_from_id(req.action_id)
        elif which == "structured":
            action = convert.action_from_pb(req.structured)
        else:
            raise invalid("MISSING_ACTION", "set action_id or structured", field="action")
        fingerprint = f"act|{seat}|{req.expected_version}|{action_id(action)}"

        def step(match: Match) -> tuple[Match, list[Event]]:
            return match_apply(match, action, seat)

        response = pb.SubmitActionResponse()
        await self._commit(req.game_id, seat, req.expected_version, req.request_id, fingerprint, "action",
                           action, step, response, bots, caller.bot_seat is not None)
        return response

    async def start_next_round(self, req: pb.StartNextRoundRequest, caller: Caller) -> pb.StartNextRoundResponse:
        seat, bots = await self._seat(caller, req.game_id, clock_move=True)
        check_request_id(req.request_id, "next_round", req.expected_version, seat, caller.bot_seat is not None)
        fingerprint = f"next|{seat}|{req.expected_version}"
        response = pb.StartNextRoundResponse()
        await self._commit(req.game_id, seat, req.expected_version, req.request_id, fingerprint, "next_round",
                           None, next_round, response, bots, caller.bot_seat is not None)
        return response

    async def _commit(
        self, game_id: str, seat: int, expected: int, request_id: str, fingerprint: str, kind: str,
        action: Action | None, step: Callable[[Match], tuple[Match, list[Event]]],
        response: pb.SubmitActionResponse | pb.StartNextRoundResponse, bots: BotSeats | None = None,
        worker: bool = False, attempts: int = 3,
    ) -> None:
        """Apply ``step`` at version ``expected`` and commit it atomically (idempotent by request id),
        filling ``response.result``. The idempotent answer stored with the commit is ``response``'s
        bytes: both response messages are ``TurnResult result = 1``, so they share one encoding.
        ``worker``: a bot worker acts (for a person's seat only once its decision is due)."""
        result = response.result
        if len(request_id) > MAX_REQUEST_ID:
            raise invalid("REQUEST_ID_TOO_LONG", f"request_id is limited to {MAX_REQUEST_ID} characters")
        digest = compact.digest(fingerprint)
        repo = self.repository
        loaded = await repo.load(game_id, expected)
        if loaded.version != expected:
            if await self._replay(game_id, request_id, digest, result):
                return
            await self._only_table_steps(game_id, seat, loaded.version, expected)
        version, match, plays, cached, _ = loaded
        if bots is None:
            bots = await self.bot_turns.seats(game_id)
        table = await self.clocks.table(game_id, loaded)
        forced = Clocks.forced(table, match, bots, seat, "next_round" if action is None else "act", worker)
        if version >= self.config.max_actions_per_game:
            raise precondition("GAME_TOO_LONG", "this game has reached its action limit")
        try:
            new, events = step(match)
        except EngineError:
            if await self._replay(game_id, request_id, digest, result):
                return
            # A cached copy may be behind the store (another replica moved the game on): the rules'
            # verdict on an old version is no answer, the version conflict is.
            if cached:
                current = await repo.version(game_id)
                if current is not None and current != version:
                    await self._only_table_steps(game_id, seat, current, expected)
            raise
        at_ms = now_ms()
        new_table, logged = self._table_after(table, seat, action, forced, events, kind, at_ms)
        if forced is not None and new_table is not None and new_table.connected[seat] \
                and not await self.presence.connected(game_id, seat):  # its holders died with their process
            new_table = new_table.with_connected(seat, False)
            logged.append(SeatPresence(seat, False))
        new_version = version + 1
        result.version = new_version
        result.events.extend(convert.event_to_pb(_redact(e, seat)) for e in logged)
        new_plays = round_plays(new, plays)  # ``new`` is reached from ``match``: its plays extend
        self._view(game_id, new_version, new, seat, result.view, new_plays, bots, new_table)
        for e in events:
            if isinstance(e, RoundSettled):
                result.settlement.CopyFrom(convert.settlement_to_pb(e.settlement))
        extra = {} if new_table is None else {"t": new_table.to_doc()}
        entry = pack_entry(new_version, kind, seat, action, request_id, logged, new.finished, **extra)
        blob = None  # the store keeps the last snapshot; a load replays this entry after it
        if repo.snapshot_due(new_version, new):
            blob = compact.pack("snap", match_to_bytes(new, new_plays.json))
        outcome = await repo.timed("commit", self.store.commit(
            game_id, version, blob, entry, repo.ttl_ms(new),
            request_id, digest, compact.pack("resp", response.SerializeToString()) if request_id else b"",
        ))
        if isinstance(outcome, Committed):
            repo.remember(game_id, new_version, new, new_plays, new_table)
            if not new.finished:  # the actor's own stream sends this view next: build it once
                bounded_put(self._views, (game_id, seat), (new_version, pb.GetGameResponse(
                    version=new_version, view=result.view)), 2 * self.config.snapshot_cache)
            self.metrics.actions.labels(action_kind(action)).inc()
            self._count_round(new, events)
            if forced is not None and new_table is not None:
                self.clocks.count(forced, new_table, at_ms)
            await self.bot_turns.push(game_id, new_version, new, bots)
            await self.clocks.schedule(game_id, new_version, new, bots, new_table)
            return
        repo.forget(game_id)
        if isinstance(outcome, Duplicate):
            self._answer_duplicate(outcome, digest, result)
            return
        if isinstance(outcome, Conflict):
            await self._only_table_steps(game_id, seat, outcome.current_version, expected)
            if attempts <= 1:
                raise stale(outcome.current_version, expected)
            result.Clear()
            await self._commit(game_id, seat, expected, request_id, fingerprint, kind, action, step, response,
                               bots, worker, attempts - 1)
            return
        assert isinstance(outcome, Missing)
        raise not_found(game_id)

    @staticmethod
    def _table_after(table: Table | None, seat: int, action: Action | None, forced: Due | None,
                     events: list[Event], kind: str, at_ms: int) -> tuple[Table | None, list[Event | TableEvent]]:
        """The table's clock after a step, and the step's events with the table's around them."""
        if table is None:
            return None, list(events)
        new_table, before, after = table.after_step(
            seat, None if action is None else action_id(action), forced, kind == "next_round", at_ms)
        return new_table, [*before, *events, *after]

    async def _only_table_steps(self, game_id: str, seat: int, current: int, expected: int) -> None:
        """Return when every step after ``expected`` up to ``current`` is the table's alone (auto-play
        turned on or off: the game is as it was at ``expected``); otherwise raise the conflict:
        ``TURN_TIMED_OUT`` when the clock made ``seat``'s decision first, else ``STALE_VERSION``."""
        if current < expected or await self.bot_turns.clock(game_id) is None:
            self.metrics.conflicts.inc()
            raise stale(current, expected)
        repo = self.repository
        entries = await repo.timed("read_log", self.store.read_log(game_id, expected, current - expected))
        docs = [read_entry(item.entry) for item in entries]
        if len(docs) == current - expected and all(doc["kind"] == "table" for doc in docs):
            return
        self.metrics.conflicts.inc()
        if docs and any(isinstance(e, PlayedForSeat) and e.seat == seat for e in docs[0]["events"]):
            raise ServiceError(Code.ABORTED, "TURN_TIMED_OUT",
                               f"seat {seat}'s time ran out: the table's bot made its decision at version "
                               f"{expected + 1} first; re-read the game",
                               {"current_version": str(current), "expected_version": str(expected)})
        raise stale(current, expected)

    async def set_auto_play(self, req: pb.SetAutoPlayRequest, caller: Caller) -> pb.SetAutoPlayResponse:
        """Turn auto-play on or off for the caller's seat: a step of the table alone (docs/clock.md)."""
        if caller.bot_seat is not None:
            raise denied("SEAT_TOKEN_ONLY", "auto-play is a person's choice: SetAutoPlay needs the seat's token")
        seat, bots = await self._seat(caller, req.game_id)
        if len(req.request_id) > MAX_REQUEST_ID:
            raise invalid("REQUEST_ID_TOO_LONG", f"request_id is limited to {MAX_REQUEST_ID} characters")
        check_request_id(req.request_id, "auto", 0, seat, False)
        digest = compact.digest(f"auto|{seat}|{int(req.on)}")
        for _ in range(5):
            loaded = await self.repository.load(req.game_id)
            if bots is None:
                bots = await self.bot_turns.seats(req.game_id)
            table = await self.clocks.table(req.game_id, loaded)
            if table is None:
                raise precondition("NO_CLOCK", "this game has no turn clock: auto-play needs one (CreateGame's clock)")
            if table.auto[seat] == req.on or loaded.match.finished:
                current = self._response(req.game_id, seat, loaded._replace(table=table), bots)
                return pb.SetAutoPlayResponse(version=current.version, view=current.view)
            answer = await self._commit_table_step(req.game_id, seat, loaded, table.with_auto_play(seat, req.on),
                                                   AutoPlaySet(seat, req.on), bots, req.request_id, digest)
            if answer is not None:
                return answer
        raise ServiceError(Code.ABORTED, "CONTENDED", "the game kept moving: try again")

    async def _set_presence(self, game_id: str, seat: int, connected: bool) -> None:
        """Log that ``seat`` connected or disconnected, unless its table says so already."""
        bots = await self.bot_turns.seats(game_id)
        for _ in range(5):
            loaded = await self.repository.load(game_id)
            table = await self.clocks.table(game_id, loaded)
            if table is None or loaded.match.finished or table.connected[seat] == connected:
                return
            event = SeatPresence(seat, connected)
            if await self._commit_table_step(game_id, seat, loaded, table.with_connected(seat, connected), event,
                                             bots) is not None:
                return

    async def _commit_table_step(self, game_id: str, seat: int, loaded: Loaded, table: Table, event: TableEvent,
                                 bots: BotSeats, request_id: str = "", digest: str = ""
                                 ) -> pb.SetAutoPlayResponse | None:
        """Commit a step of the table alone after ``loaded`` (``seat``'s view in the answer); None
        when the game moved on first."""
        version, match, plays, *_ = loaded
        new_version = version + 1
        out = pb.SetAutoPlayResponse(version=new_version)
        if plays is None:
            plays = round_plays(match)
        self._view(game_id, new_version, match, seat, out.view, plays, bots, table)
        entry = pack_entry(new_version, "table", seat, None, request_id, [event], match.finished, t=table.to_doc())
        repo = self.repository
        outcome = await repo.timed("commit", self.store.commit(
            game_id, version, None, entry, repo.ttl_ms(match), request_id, digest,
            compact.pack("resp", out.SerializeToString()) if request_id else b""))
        if isinstance(outcome, Committed):
            repo.remember(game_id, new_version, match, plays, table)
            await self.clocks.schedule(game_id, new_version, match, bots, table)
            return out
        repo.forget(game_id)
        if isinstance(outcome, Duplicate):
            if not compact.same_digest(outcome.fingerprint, digest):
                raise invalid("REQUEST_ID_REUSED", "this request_id was used for a different request")
            try:
                return pb.SetAutoPlayResponse.FromString(compact.unpack("resp", outcome.response))
            except (compact.CompactError, DecodeError) as exc:
                raise StoreCorrupt(f"cannot decode a stored response: {exc}") from exc
        if isinstance(outcome, Missing):
            raise not_found(game_id)
        return None

    async def _replay(self, game_id: str, request_id: str, digest: str, result: pb.TurnResult) -> bool:
        """If ``request_id`` was committed before, fill ``result`` with its stored response."""
        if not request_id:
            return False
        dup = await self.repository.timed("lookup", self.store.lookup_request(game_id, request_id))
        if dup is None:
            return False
        self._answer_duplicate(dup, digest, result)
        return True

    def _answer_duplicate(self, dup: Duplicate, digest: str, result: pb.TurnResult) -> None:
        if not compact.same_digest(dup.fingerprint, digest):
            raise invalid("REQUEST_ID_REUSED", "this request_id was used for a different request")
        try:
            stored = pb.SubmitActionResponse.FromString(compact.unpack("resp", dup.response))
        except (compact.CompactError, DecodeError) as exc:
            raise StoreCorrupt(f"cannot decode a stored response: {exc}") from exc
        result.CopyFrom(stored.result)
        self.metrics.idempotent_replays.inc()

    def _count_round(self, match: Match, events: list[Event]) -> None:
        for e in events:
            if isinstance(e, RoundSettled):
                self.metrics.rounds_finished.labels(match.rules.name, e.settlement.outcome).inc()

    async def watch(self, req: pb.WatchGameRequest, caller: Caller, peer: str = ""
                    ) -> AsyncGenerator[pb.WatchGameResponse, None]:
        """The caller's stream of redacted events after ``after_version``, as they are committed;
        streams are bounded per game, seat and ``peer`` and end when the server begins to drain
        (``watch``). A person's seat at a clocked table is present while the stream is open."""
        seat, bots = await self._caller_seat(caller, req.game_id)
        view_of = None
        if req.include_views:
            if bots is None:
                bots = await self.bot_turns.seats(req.game_id)
            view_of = self._view_of(req.game_id, seat, bots)
        present = seat is not None and caller.bot_seat is None and await self.bot_turns.clock(req.game_id) is not None
        if not present or seat is None:
            return self.watches.watch(req, seat, peer, view_of)
        await self.presence.enter(req.game_id, seat)
        return self.watches.watch(req, seat, peer, view_of, on_end=functools.partial(self.presence.leave,
                                                                                   req.game_id, seat))

    def _view_of(self, game_id: str, seat: int | None, bots: BotSeats) -> ViewOf:
        """A stream's views: GetGame's, from this process's copy of the game brought forward by
        the entries the stream read (the store's only when that cannot be done)."""

        async def view_of(version: int, entries: list[LogEntry]) -> pb.GameView | None:
            loaded = await self.repository.at(game_id, version, entries)
            if loaded is None:
                return None
            table = await self.clocks.table(game_id, loaded)
            return self._response(game_id, seat, loaded._replace(table=table), bots).view

        return view_of

    async def log(self, req: pb.GetGameLogRequest, caller: Caller) -> pb.GetGameLogResponse:
        _check_game_id(req.game_id)
        seat = seat_in(caller, req.game_id)
        repo = self.repository
        version, match, *_ = await repo.load(req.game_id)
        if not caller.operator and not (seat is not None and match.finished):
            raise denied("LOG_NOT_AVAILABLE",
                         "the full log is for operators, or for the seats once the match is over")
        if req.after_version < 0 or req.page_size < 0:
            raise invalid("BAD_PAGE", "after_version and page_size must not be negative")
        page = min(req.page_size or LOG_PAGE, LOG_PAGE_MAX)
        out = pb.GetGameLogResponse(rules=convert.rules_to_pb(match.rules), seed=match.seed,
                                    rounds=match.rounds, version=version)
        batch = await repo.timed("read_log", self.store.read_log(req.game_id, req.after_version, page))
        docs = [read_entry(item.entry) for item in batch]
        # The explicit deal (if any) is in the first entry: already in hand on the first page.
        if req.after_version == 0:
            first_doc = docs[0] if docs else None
        else:
            first_doc = await repo.first_entry(req.game_id)
        deal = first_doc.get("deal") if first_doc is not None else None
        if deal is not None:
            out.deal.CopyFrom(convert.deal_to_pb(Deal(tuple(tuple(h) for h in deal["hands"]), tuple(deal["floor"]),
                                                      tuple(deal["stock"]), deal["dealer"])))
        if first_doc is not None:
            reveal(first_doc, out)
        last = req.after_version
        for item, doc in zip(batch, docs, strict=True):
            entry = out.entries.add(version=item.version, seat=doc["seat"], request_id=doc["rid"], kind=doc["kind"])
            if doc["action"] is not None:
                entry.action.CopyFrom(convert.action_to_pb(action_from_id(doc["action"])))
            entry.events.extend(convert.event_to_pb(e) for e in doc["events"])
            last = item.version
        out.next_after_version = last if batch and last < version else 0
        return out


def _redact(event: Event | TableEvent, seat: int) -> Event | TableEvent:
    """The event as ``seat`` may see it (the table's events hide nothing)."""
    return event if isinstance(event, TABLE_EVENT_TYPES) else redact(event, seat)  # type: ignore[arg-type]
