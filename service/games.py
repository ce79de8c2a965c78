"""The game service's domain layer: create, read, act, watch and log games.

Stateless by design: each call loads the game from the store (or from this process's cache of
the last committed state, validated by the store's version check), applies the engine, and
commits the new version, its log entry and the idempotent response in one atomic compare-and-set.
A commit writes a new snapshot only every ``SNAPSHOT_EVERY`` versions and when a round ends
(``Games.snapshot_due``); in between the store keeps the last one, and a load that finds it behind
the game's version replays the log entries after it (``Games._catch_up``): the engine is
deterministic, so that is the very state the skipped snapshots would have held. Nothing here knows
about gRPC transport.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import ipaddress
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import grpc
import orjson
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
    match_from_bytes,
    match_to_bytes,
    new_match,
    next_round,
    redact,
    view,
)
from gostop.engine.events import Event, RoundSettled
from gostop.engine.render import action_label
from gostop.engine.serialize import encode, from_data
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert

from . import compact
from .auth import Authenticator, Caller, seat_in
from .bot_queue import BotQueue, BotTurn, check_request_id, now_ms
from .bot_seats import BotSeatSpec, bot_seats_from_doc, bot_seats_to_doc, decider, parse_bot_seats
from .config import Config
from .errors import ServiceError, denied, invalid, not_found, precondition, stale, unauthenticated
from .metrics import Metrics
from .plays import RoundPlays, round_plays
from .store_api import Committed, Conflict, Duplicate, LogEntry, Missing, Store, StoreCorrupt, StoreUnavailable

T = TypeVar("T")
_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A game id, matched whole (``fullmatch``: ``$`` would let a trailing newline through)."""
MAX_REQUEST_ID = 128
LOG_PAGE = 500
LOG_PAGE_MAX = 1000
WATCH_POLL_MS = 15000
SNAPSHOT_EVERY = Config().snapshot_every
"""The default of ``GOSTOP_SNAPSHOT_EVERY``: a commit writes the game's snapshot when its version is
a multiple of it (and whenever a round ends, and at creation); the others write only their log
entry, and a load replays at most this many minus one entries after the snapshot. Serializing and
deflating a snapshot is a third of a turn's domain work; replaying a step costs less than writing
one (docs/engine-performance.md)."""


FAIR_SCHEME = "gostop-fair-v1"


def fair_game_id(server_seed: bytes) -> str:
    """The game id of a server-dealt game: the first 16 characters (96 bits) of the unpadded
    base64url of SHA-256(server seed), so the id every seat holds commits to the seed."""
    return base64.urlsafe_b64encode(hashlib.sha256(server_seed).digest()).decode()[:16]


def fair_match_seed(server_seed: bytes, client_seed: int | None) -> int:
    """The match seed of a server-dealt game: HMAC-SHA256 keyed by the server seed over the scheme
    and the creator's seed (if any), its first 8 bytes big-endian. Without the server seed nobody
    can choose or predict it, whatever client seed they send."""
    message = f"{FAIR_SCHEME}|{'' if client_seed is None else client_seed}".encode()
    return int.from_bytes(hmac.new(server_seed, message, hashlib.sha256).digest()[:8], "big")


def _check_game_id(game_id: str) -> None:
    if not _GAME_ID.fullmatch(game_id):
        raise invalid("MALFORMED_GAME_ID", "game_id must be 1-64 characters of A-Z a-z 0-9 _ -")


def _entry(version: int, kind: str, seat: int, action: Action | None, request_id: str,
           events: list[Event], finished: bool, **extra: Any) -> bytes:
    doc = {
        "v": version, "kind": kind, "seat": seat,
        "action": action_id(action) if action is not None else None,
        "rid": request_id, "finished": finished, "events": events, **extra,
    }
    return compact.pack("entry", encode(doc))


def _read_entry(raw: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(compact.unpack("entry", raw))
        doc["events"] = [from_data(e) for e in doc["events"]]
    except Exception as exc:
        raise StoreCorrupt(f"cannot decode a log entry: {exc}") from exc
    return doc  # type: ignore[no-any-return]


def _replay_step(match: Match, item: LogEntry) -> Match:
    """The state after the step logged in ``item`` (an ``action`` or ``next_round`` entry) from
    ``match``, the state before it; ``StoreCorrupt`` for an entry that is not such a step of this
    game at its version (undecodable, another version, an action the rules refuse) or whose step
    gives other events than the entry logged: the engine replaying it is not the one that
    committed it (a rule fix deployed while the game was in play) or the entry was damaged, and
    the state it would rebuild is not the one whose events the seats were sent."""
    try:
        doc = orjson.loads(compact.unpack("entry", item.entry))
        kind, version, seat, action, logged = doc["kind"], doc["v"], doc["seat"], doc["action"], doc["events"]
    except Exception as exc:
        raise StoreCorrupt(f"cannot decode the log entry of version {item.version}: {exc}") from exc
    if version != item.version:
        raise StoreCorrupt(f"the log entry of version {item.version} says it is of version {version!r}")
    try:
        if kind == "action" and type(seat) is int:
            match, events = match_apply(match, action_from_id(action), seat)
        elif kind == "next_round":
            match, events = next_round(match)
        else:
            raise StoreCorrupt(f"the log entry of version {item.version} is no step ({kind!r}, seat {seat!r})")
    except EngineError as exc:
        raise StoreCorrupt(f"the log entry of version {item.version} does not replay: {exc}") from exc
    if orjson.loads(encode(events)) != logged:
        raise StoreCorrupt(f"the step logged at version {item.version} replays with other events than it logged")
    return match


def _action_kind(action: Action | None) -> str:
    """The metrics label of an action: play, bomb, capture, go, stop... (next_round for none)."""
    if action is None:
        return "next_round"
    kind = _KINDS.get(type(action))
    if kind is None:
        kind = _KINDS[type(action)] = action_label(action).split(" ")[0]
    return kind


_KINDS: dict[type, str] = {}

K = TypeVar("K")
V = TypeVar("V")


def _bounded_put(cache: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    """Keep ``value`` as the most recent entry of an LRU ``cache`` of at most ``limit`` entries
    (nothing is kept when ``limit`` is 0)."""
    if limit <= 0:
        return
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > limit:
        cache.popitem(last=False)


def _fairness(first: dict[str, Any], out: pb.GetGameLogResponse) -> None:
    """The deal commitment and its reveal, from the game's first log entry (a game created before
    the scheme has no source there, and its log says nothing of one)."""
    source = _SOURCES.get(first.get("source", ""))
    if source is None:
        return
    out.deal_commitment.scheme = FAIR_SCHEME
    out.deal_commitment.source = source
    fair = first.get("fair")
    if source == pb.DEAL_SOURCE_SERVER and fair is not None:
        server_seed = bytes.fromhex(fair["server_seed"])
        out.deal_commitment.server_seed_sha256 = hashlib.sha256(server_seed).digest()
        out.deal_reveal.server_seed = server_seed
        if fair["client_seed"] is not None:
            out.deal_reveal.client_seed = fair["client_seed"]


_SOURCES = {"server": pb.DEAL_SOURCE_SERVER, "operator_seed": pb.DEAL_SOURCE_OPERATOR_SEED,
            "operator_deal": pb.DEAL_SOURCE_OPERATOR_DEAL}


def _shutting_down(after: int) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN",
                        "the server is shutting down: reconnect and resume after the last version received",
                        {"resume_after_version": str(after)})


def client_address(peer: str) -> str:
    """The client's IP address in one spelling for both ports, the key of the per-address stream
    limit: gRPC's ``ipv4:10.0.0.5:41234`` / ``ipv6:[::1]:41234`` and the HTTP port's
    ``10.0.0.5:41234`` / ``::1:41234`` give ``10.0.0.5`` / ``::1`` (an IPv4-mapped IPv6 address
    gives its IPv4 address); anything else (a Unix socket) is kept whole; "" when unknown."""
    if not peer:
        return ""
    text = peer.removeprefix("ipv4:").removeprefix("ipv6:")
    host = text.rpartition(":")[0] if ":" in text else text
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return peer
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


class StreamSlots:
    """Open WatchGame streams of this process, counted per game, per seat token and per client
    address (``client_address``: one key for both ports), each bounded (0: no bound), so that
    nobody can hold what other watchers need."""

    def __init__(self, per_game: int, per_seat: int, per_peer: int) -> None:
        self._limits = {"game": per_game, "seat": per_seat, "peer": per_peer}
        self._open: dict[tuple[str, str], int] = {}
        self.total = 0

    @contextlib.contextmanager
    def hold(self, game_id: str, seat: int | None, peer: str) -> Iterator[None]:
        keys = [("game", game_id)]
        if seat is not None:
            keys.append(("seat", f"{game_id}/{seat}"))
        if peer:
            keys.append(("peer", peer))
        for key in keys:
            limit = self._limits[key[0]]
            if limit and self._open.get(key, 0) >= limit:
                what = {"game": "this game", "seat": "this seat", "peer": "your address"}[key[0]]
                raise ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS",
                                   f"{what} has {limit} WatchGame streams open already: close one first",
                                   {"scope": key[0], "limit": str(limit)})
        for key in keys:
            self._open[key] = self._open.get(key, 0) + 1
        self.total += 1
        try:
            yield
        finally:
            self.total -= 1
            for key in keys:
                left = self._open[key] - 1
                if left:
                    self._open[key] = left
                else:
                    del self._open[key]


class Games:
    """Every operation of the API, over a ``Store``."""

    def __init__(self, store: Store, auth: Authenticator, config: Config, metrics: Metrics) -> None:
        self.store = store
        self.auth = auth
        self.config = config
        self.metrics = metrics
        self.snapshot_every = config.snapshot_every
        """A snapshot at every this many versions (``GOSTOP_SNAPSHOT_EVERY``; a test may change it)."""
        self._cache: OrderedDict[str, tuple[int, Match, RoundPlays | None]] = OrderedDict()
        """The last committed (or read) version of each recent game, with its round's plays
        encoded once that version was viewed or reached by a commit (``service.plays``)."""
        metrics.games_cached.set_function(lambda: len(self._cache))
        self._store_latency: dict[str, Any] = {}
        """The labelled store-latency histogram per operation (a labels() lookup per call is costly)."""
        self._views: OrderedDict[tuple[str, int], tuple[int, pb.GetGameResponse]] = OrderedDict()
        """The last ``GetGame`` answer per (game, viewer), valid while the game is at its version:
        clients that poll a game they wait on get it without rebuilding the view."""
        self.streams = StreamSlots(config.max_watch_per_game, config.max_watch_per_seat,
                                   config.max_watch_per_peer)
        self._closing = asyncio.Event()
        """Set when the server begins to drain: open WatchGame streams end at once."""
        self.bot_queue: BotQueue | None = None
        """Where turns of bot seats are pushed for the bot workers (None: this server has no bot seats)."""
        self._bot_seats: OrderedDict[str, tuple[BotSeatSpec, ...]] = OrderedDict()
        """Each recent game's bot seats (fixed at creation)."""
        self._bot_turns_seen: OrderedDict[str, tuple[int, float]] = OrderedDict()
        """Per game: the version at which this process last saw (or pushed) a bot turn, and when
        (monotonic seconds): a turn seen waiting longer than the claim time is pushed again."""
        self._background: set[asyncio.Task[None]] = set()

    def begin_shutdown(self) -> int:
        """End every open WatchGame stream (UNAVAILABLE, ``SHUTTING_DOWN``: clients resume from their
        last version, on another replica or once this one is back) and refuse new ones, so that a
        drain waits only for unary calls. Returns how many streams were open."""
        self._closing.set()
        return self.streams.total

    # ------------------------------------------------------------------ store helpers

    async def _timed(self, op: str, call: Awaitable[T]) -> T:
        start = time.perf_counter()
        try:
            return await call
        except (StoreUnavailable, StoreCorrupt):
            self.metrics.store_errors.labels(self.store.name, op).inc()
            raise
        finally:
            histogram = self._store_latency.get(op)
            if histogram is None:
                histogram = self._store_latency[op] = self.metrics.store_latency.labels(self.store.name, op)
            histogram.observe(time.perf_counter() - start)

    def _remember(self, game_id: str, version: int, match: Match, plays: RoundPlays | None = None) -> None:
        _bounded_put(self._cache, game_id, (version, match, plays), self.config.snapshot_cache)

    async def _load(self, game_id: str, expected: int | None = None) -> tuple[int, Match, RoundPlays | None]:
        """The game at its latest version; the cached copy when it is at ``expected`` (or when the
        store is at the cached version). Otherwise the store's snapshot, brought from its own
        version to the game's by replaying the log entries in between."""
        if expected is not None:
            hit = self._cache.get(game_id)
            if hit is not None and hit[0] == expected:
                return hit
        snap = await self._timed("load", self.store.load(game_id))
        if snap is None:
            self._cache.pop(game_id, None)
            raise not_found(game_id)
        hit = self._cache.get(game_id)
        if hit is not None and hit[0] == snap.version:
            return hit  # a version names one snapshot: no need to decode it again
        try:
            match = match_from_bytes(compact.unpack("snap", snap.blob))
        except (EngineError, compact.CompactError) as exc:
            raise StoreCorrupt(str(exc)) from exc
        if snap.at is not None:
            match = await self._catch_up(game_id, match, snap.at, snap.version)
        self._remember(game_id, snap.version, match)
        return snap.version, match, None

    async def _catch_up(self, game_id: str, match: Match, at: int, version: int) -> Match:
        """The state at ``version`` from ``match``, the snapshot at ``at``: the log entries of
        versions ``at + 1`` to ``version`` replayed (entries are never rewritten, so reading them
        after the snapshot is as good as reading them with it)."""
        entries = await self._timed("read_log", self.store.read_log(game_id, at, version - at))
        if [item.version for item in entries] != list(range(at + 1, version + 1)):
            if await self._timed("load", self.store.load(game_id)) is None:
                raise not_found(game_id)  # expired since the snapshot was read
            raise StoreCorrupt(f"the log lacks entries between the snapshot (version {at}) and version {version}")
        for item in entries:
            match = _replay_step(match, item)
        return match

    def snapshot_due(self, version: int, match: Match) -> bool:
        """Whether the commit of ``version``, reaching ``match``, writes a snapshot: at every
        ``snapshot_every``-th version, and when a round ends (whatever came before it is then
        never replayed again; a finished match is always over)."""
        return version % self.snapshot_every == 0 or match.round.over

    def _ttl_ms(self, match: Match) -> int:
        seconds = self.config.finished_ttl_seconds if match.finished else self.config.game_ttl_seconds
        return seconds * 1000

    # --------------------------------------------------------------------- operations

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
        deal = convert.deal_from_pb(req.deal) if req.HasField("deal") else None
        bots = parse_bot_seats(req.bot_seats, rules.players, self.config)
        if bots and self.bot_queue is None:
            raise precondition("NO_BOT_WORKERS", "this server has no bot queue: bot seats are not available")
        client_seed = req.seed if req.HasField("seed") else None
        commitment = pb.DealCommitment(scheme=FAIR_SCHEME)
        for _ in range(5):
            extra: dict[str, Any] = {"rounds": rounds}
            if bots:
                extra["bots"] = bot_seats_to_doc(bots)
            if caller.operator and (deal is not None or client_seed is not None):
                # An operator's seed is the match seed (a replay); an operator's deal is used as given.
                game_id = secrets.token_urlsafe(12)
                seed = client_seed if client_seed is not None else secrets.randbits(64)
                commitment.source = pb.DEAL_SOURCE_OPERATOR_DEAL if deal is not None else pb.DEAL_SOURCE_OPERATOR_SEED
                extra["source"] = "operator_deal" if deal is not None else "operator_seed"
            else:
                server_seed = secrets.token_bytes(32)
                game_id = fair_game_id(server_seed)
                seed = fair_match_seed(server_seed, client_seed)
                commitment.source = pb.DEAL_SOURCE_SERVER
                commitment.server_seed_sha256 = hashlib.sha256(server_seed).digest()
                extra["source"] = "server"
                extra["fair"] = {"server_seed": server_seed.hex(), "client_seed": client_seed}
            match, events = new_match(rules, seed, rounds, deal=deal)
            if deal is not None:
                extra["deal"] = {"hands": [list(h) for h in deal.hands], "floor": list(deal.floor),
                                 "stock": list(deal.stock), "dealer": deal.dealer}
            entry = _entry(1, "create", -1, None, "", events, match.finished, **extra)
            blob = compact.pack("snap", match_to_bytes(match))
            if await self._timed("create", self.store.create(game_id, blob, entry, self._ttl_ms(match))):
                break
        else:  # pragma: no cover - 96-bit ids do not collide
            raise ServiceError(grpc.StatusCode.INTERNAL, "ID_EXHAUSTED", "could not allocate a game id")
        self._remember(game_id, 1, match)
        _bounded_put(self._bot_seats, game_id, bots, self.config.snapshot_cache)
        self.metrics.games_created.labels(rules.name, str(rules.players)).inc()
        self._count_round(match, events)
        out = pb.CreateGameResponse(game_id=game_id, version=1, rules=convert.rules_to_pb(rules),
                                    deal_commitment=commitment)
        bot_seat_numbers = {b.seat for b in bots}
        for seat in range(rules.players):
            if seat not in bot_seat_numbers:
                out.seats.add(seat=seat, token=self.auth.issue(game_id, seat))
        out.bot_seats.extend(b.to_pb() for b in bots)
        convert.view_to_pb(view(match.round), match, game_id, 1, out.view)
        out.view.bot_seats.extend(b.to_pb() for b in bots)
        await self._push_bot_turn(game_id, 1, match, bots)
        return out

    # ------------------------------------------------------------------ bot seats

    async def bot_seats(self, game_id: str) -> tuple[BotSeatSpec, ...]:
        """The game's bot seats: remembered, or read from its first log entry (``not_found`` for no game)."""
        known = self._bot_seats.get(game_id)
        if known is not None:
            return known
        first = await self._timed("read_log", self.store.read_log(game_id, 0, 1))
        if not first:
            raise not_found(game_id)
        seats = bot_seats_from_doc(_read_entry(first[0].entry).get("bots"))
        _bounded_put(self._bot_seats, game_id, seats, self.config.snapshot_cache)
        return seats

    async def _caller_seat(self, caller: Caller, game_id: str) -> int | None:
        """The caller's seat in the game (None: a spectator); a bot worker's only if it is a bot seat."""
        _check_game_id(game_id)
        if caller.bot_seat is None:
            return seat_in(caller, game_id)
        if not any(b.seat == caller.bot_seat for b in await self.bot_seats(game_id)):
            raise denied("NOT_A_BOT_SEAT", f"seat {caller.bot_seat} of this game is not a bot seat: "
                         "a bot-worker key acts only for bot seats")
        return caller.bot_seat

    async def _push_bot_turn(self, game_id: str, version: int, match: Match,
                             bots: tuple[BotSeatSpec, ...]) -> None:
        """Queue the bot turn the game now waits for, if any. A failed push is retried in the
        background: the commit it follows stands whatever happens to the push."""
        due = decider(match, bots)
        if due is None or self.bot_queue is None:
            return
        spec, kind = due
        turn = BotTurn(game_id, version, spec.seat, spec.bot, spec.budget_ms, kind, now_ms())
        _bounded_put(self._bot_turns_seen, game_id, (version, time.monotonic()), self.config.snapshot_cache)
        try:
            await self.bot_queue.push(turn)
        except StoreUnavailable:
            self.metrics.bot_push_failures.inc()
            task = asyncio.ensure_future(self._push_later(turn))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _push_later(self, turn: BotTurn) -> None:
        assert self.bot_queue is not None
        for delay in (0.1, 0.5, 1, 2, 5, 10):
            await asyncio.sleep(delay)
            try:
                await self.bot_queue.push(turn)
                return
            except StoreUnavailable:
                self.metrics.bot_push_failures.inc()

    async def _nudge_bot_turn(self, game_id: str, version: int, match: Match) -> None:
        """Push a bot turn again when this process has seen it wait longer than the claim time
        (its push was lost with a process that died right after its commit)."""
        if self.bot_queue is None:
            return
        bots = await self.bot_seats(game_id)
        if decider(match, bots) is None:
            return
        seen = self._bot_turns_seen.get(game_id)
        now = time.monotonic()
        if seen is None or seen[0] != version:
            _bounded_put(self._bot_turns_seen, game_id, (version, now), self.config.snapshot_cache)
        elif now - seen[1] >= self.config.bot_claim_idle_ms / 1000:
            await self._push_bot_turn(game_id, version, match, bots)

    async def get(self, req: pb.GetGameRequest, caller: Caller) -> pb.GetGameResponse:
        seat = await self._caller_seat(caller, req.game_id)
        version, match, plays = await self._load(req.game_id)
        if self.bot_queue is not None:
            await self._nudge_bot_turn(req.game_id, version, match)
        key = (req.game_id, -1 if seat is None else seat)
        hit = self._views.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        if plays is None:
            plays = round_plays(match)
            self._remember(req.game_id, version, match, plays)
        response = pb.GetGameResponse(version=version)
        self._view(req.game_id, version, match, seat, response.view, plays)
        response.view.bot_seats.extend(b.to_pb() for b in await self.bot_seats(req.game_id))
        _bounded_put(self._views, key, (version, response), 2 * self.config.snapshot_cache)
        return response

    def _view(
        self, game_id: str, version: int, match: Match, seat: int | None, out: pb.GameView, plays: RoundPlays
    ) -> None:
        if seat is not None and not 0 <= seat < match.rules.players:
            raise denied("NO_SUCH_SEAT", "the seat token names a seat this game does not have")
        convert.view_to_pb(view(match.round, -1 if seat is None else seat), match, game_id, version, out, plays.view)

    async def _seat(self, caller: Caller, game_id: str) -> int:
        seat = await self._caller_seat(caller, game_id)
        if seat is None:
            raise unauthenticated("this call needs a seat token (authorization: Bearer <token>)")
        return seat

    async def submit(self, req: pb.SubmitActionRequest, caller: Caller) -> pb.SubmitActionResponse:
        seat = await self._seat(caller, req.game_id)
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
                           action, step, response)
        return response

    async def start_next_round(self, req: pb.StartNextRoundRequest, caller: Caller) -> pb.StartNextRoundResponse:
        seat = await self._seat(caller, req.game_id)
        check_request_id(req.request_id, "next_round", req.expected_version, seat, caller.bot_seat is not None)
        fingerprint = f"next|{seat}|{req.expected_version}"
        response = pb.StartNextRoundResponse()
        await self._commit(req.game_id, seat, req.expected_version, req.request_id, fingerprint, "next_round",
                           None, next_round, response)
        return response

    async def _commit(
        self, game_id: str, seat: int, expected: int, request_id: str, fingerprint: str, kind: str,
        action: Action | None, step: Callable[[Match], tuple[Match, list[Event]]],
        response: pb.SubmitActionResponse | pb.StartNextRoundResponse,
    ) -> None:
        """Apply ``step`` at version ``expected`` and commit it atomically (idempotent by request id),
        filling ``response.result``. The idempotent answer stored with the commit is ``response``'s
        bytes: both response messages are ``TurnResult result = 1``, so they share one encoding."""
        result = response.result
        if len(request_id) > MAX_REQUEST_ID:
            raise invalid("REQUEST_ID_TOO_LONG", f"request_id is limited to {MAX_REQUEST_ID} characters")
        digest = compact.digest(fingerprint)
        version, match, plays = await self._load(game_id, expected)
        if version != expected:
            if await self._replay(game_id, request_id, digest, result):
                return
            self.metrics.conflicts.inc()
            raise stale(version, expected)
        if version >= self.config.max_actions_per_game:
            raise precondition("GAME_TOO_LONG", "this game has reached its action limit")
        try:
            new, events = step(match)
        except EngineError:
            if await self._replay(game_id, request_id, digest, result):
                return
            # The match may be this process's cached copy while another replica moved the game
            # on: the rules' verdict on an old version is no answer, the version conflict is.
            snap = await self._timed("load", self.store.load(game_id))
            if snap is not None and snap.version != expected:
                self.metrics.conflicts.inc()
                raise stale(snap.version, expected) from None
            raise
        new_version = version + 1
        result.version = new_version
        result.events.extend(convert.event_to_pb(redact(e, seat)) for e in events)
        new_plays = round_plays(new, plays)  # ``new`` is reached from ``match``: its plays extend
        self._view(game_id, new_version, new, seat, result.view, new_plays)
        bots = await self.bot_seats(game_id)
        result.view.bot_seats.extend(b.to_pb() for b in bots)
        for e in events:
            if isinstance(e, RoundSettled):
                result.settlement.CopyFrom(convert.settlement_to_pb(e.settlement))
        entry = _entry(new_version, kind, seat, action, request_id, events, new.finished)
        blob = None  # the store keeps the last snapshot; a load replays this entry after it
        if self.snapshot_due(new_version, new):
            blob = compact.pack("snap", match_to_bytes(new, new_plays.json))
        outcome = await self._timed("commit", self.store.commit(
            game_id, expected, blob, entry, self._ttl_ms(new),
            request_id, digest, compact.pack("resp", response.SerializeToString()) if request_id else b"",
        ))
        if isinstance(outcome, Committed):
            self._remember(game_id, new_version, new, new_plays)
            self.metrics.actions.labels(_action_kind(action)).inc()
            self._count_round(new, events)
            await self._push_bot_turn(game_id, new_version, new, bots)
            return
        self._cache.pop(game_id, None)
        if isinstance(outcome, Duplicate):
            self._answer_duplicate(outcome, digest, result)
            return
        if isinstance(outcome, Conflict):
            self.metrics.conflicts.inc()
            raise stale(outcome.current_version, expected)
        assert isinstance(outcome, Missing)
        raise not_found(game_id)

    async def _replay(self, game_id: str, request_id: str, digest: str, result: pb.TurnResult) -> bool:
        """If ``request_id`` was committed before, fill ``result`` with its stored response."""
        if not request_id:
            return False
        dup = await self._timed("lookup", self.store.lookup_request(game_id, request_id))
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
                    ) -> AsyncIterator[pb.WatchGameResponse]:
        """The caller's redacted events after ``after_version``, as they are committed.

        ``after_version`` beyond the game's version is refused (``VERSION_AHEAD``): such a stream
        could only wait for versions nobody has played. Streams are bounded per game, seat and
        ``peer`` (``StreamSlots``) and end when the server begins to drain."""
        seat = await self._caller_seat(caller, req.game_id)
        viewer = -1 if seat is None else seat
        if req.after_version < 0:
            raise invalid("BAD_VERSION", "after_version must not be negative")
        if self._closing.is_set():
            raise _shutting_down(req.after_version)
        version, match, _ = await self._load(req.game_id)
        after = req.after_version
        if after > version:
            raise ServiceError(grpc.StatusCode.OUT_OF_RANGE, "VERSION_AHEAD",
                               f"after_version {after} is beyond the game's version {version}",
                               {"current_version": str(version)})
        if match.finished and after >= version:
            return  # nothing will ever come after the entry that finished the match
        with self.streams.hold(req.game_id, seat, peer):
            closing = asyncio.ensure_future(self._closing.wait())
            wait: asyncio.Future[list[Any]] | None = None
            try:
                while True:
                    wait = asyncio.ensure_future(
                        self._timed("watch", self.store.wait_log(req.game_id, after, WATCH_POLL_MS)))
                    await asyncio.wait((wait, closing), return_when=asyncio.FIRST_COMPLETED)
                    if not wait.done():
                        wait.cancel()
                        with contextlib.suppress(BaseException):
                            await wait
                        raise _shutting_down(after)
                    entries = wait.result()
                    if not entries:
                        if await self._timed("load", self.store.load(req.game_id)) is None:
                            raise not_found(req.game_id)
                        continue
                    for item in entries:
                        doc = _read_entry(item.entry)
                        for e in doc["events"]:
                            yield pb.WatchGameResponse(version=item.version,
                                                       event=convert.event_to_pb(redact(e, viewer)))
                        after = item.version
                        if doc["finished"]:
                            return
            finally:
                closing.cancel()
                if wait is not None and not wait.done():
                    wait.cancel()

    async def log(self, req: pb.GetGameLogRequest, caller: Caller) -> pb.GetGameLogResponse:
        _check_game_id(req.game_id)
        seat = seat_in(caller, req.game_id)
        version, match, _ = await self._load(req.game_id)
        if not caller.operator and not (seat is not None and match.finished):
            raise denied("LOG_NOT_AVAILABLE",
                         "the full log is for operators, or for the seats once the match is over")
        if req.after_version < 0 or req.page_size < 0:
            raise invalid("BAD_PAGE", "after_version and page_size must not be negative")
        page = min(req.page_size or LOG_PAGE, LOG_PAGE_MAX)
        out = pb.GetGameLogResponse(rules=convert.rules_to_pb(match.rules), seed=match.seed,
                                    rounds=match.rounds, version=version)
        batch = await self._timed("read_log", self.store.read_log(req.game_id, req.after_version, page))
        docs = [_read_entry(item.entry) for item in batch]
        # The explicit deal (if any) is in the first entry: already in hand on the first page.
        if req.after_version == 0:
            first_doc = docs[0] if docs else None
        else:
            first = await self._timed("read_log", self.store.read_log(req.game_id, 0, 1))
            first_doc = _read_entry(first[0].entry) if first else None
        deal = first_doc.get("deal") if first_doc is not None else None
        if deal is not None:
            out.deal.CopyFrom(convert.deal_to_pb(Deal(tuple(tuple(h) for h in deal["hands"]), tuple(deal["floor"]),
                                                      tuple(deal["stock"]), deal["dealer"])))
        if first_doc is not None:
            _fairness(first_doc, out)
        last = req.after_version
        for item, doc in zip(batch, docs, strict=True):
            entry = out.entries.add(version=item.version, seat=doc["seat"], request_id=doc["rid"])
            if doc["action"] is not None:
                entry.action.CopyFrom(convert.action_to_pb(action_from_id(doc["action"])))
            entry.events.extend(convert.event_to_pb(e) for e in doc["events"])
            last = item.version
        out.next_after_version = last if batch and last < version else 0
        return out
