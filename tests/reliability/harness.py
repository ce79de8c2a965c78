"""The reliability harness: sizes (fast in ``make test``, longer under ``make soak``), the figures
every test reports, a Redis that can be crashed and restarted on its port with its data, and the
conflict storm — many clients playing many games through real gRPC while provoking conflicts,
stale versions, wrong seats, retries and reused request ids — with its verification: every game's
log replays through the engine to the stored snapshot, versions are 1..n each once, every
acknowledged request is in the log, every commit was acknowledged and every retry of an
acknowledged request id gets the identical response back.

Sizes: ``GOSTOP_SOAK_SECONDS`` (set by ``scripts/soak.py``) is the time budget of a soak run;
unset or 0 means the fast sizes of ``make test``. ``GOSTOP_FIGURES_FILE``, when set, receives the
figures of the run as JSON (merged across tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gostop.engine import match_to_bytes, redact, view
from gostop.service import compact
from gostop.service.store_api import Store
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from testkit.redis_server import HOST, RedisServer, find_redis_server
from testkit.servers import OPERATOR, Api, Game, Metadata, replay, seat_md

T = TypeVar("T")

SOAK_SECONDS = float(os.environ.get("GOSTOP_SOAK_SECONDS", "0") or 0)
"""The soak run's time budget in seconds (0: the fast sizes of ``make test``)."""

DEADLINE = 8.0
"""Client deadline of every call: a call that has not ended by then hung."""

FIGURES: Counter[str] = Counter()
"""Figures of this run: requests, conflicts provoked, faults injected, bad inputs, games verified..."""

MAX_FIGURES: dict[str, float] = {}
"""Maxima of this run (e.g. the slowest failed call), merged by ``max``."""


def soak() -> bool:
    return SOAK_SECONDS > 0


def sized(fast: int, soak_size: int) -> int:
    """``fast`` in ``make test``, ``soak_size`` under ``make soak``."""
    return soak_size if soak() else fast


def scaled(fast: int, per_soak_second: float) -> int:
    """``fast`` in ``make test``; under a soak, ``per_soak_second`` times its budget (at least ``fast``)."""
    return max(fast, int(SOAK_SECONDS * per_soak_second)) if soak() else fast


def budget(share: float) -> float:
    """Seconds a soak test may run (its ``share`` of the soak budget); 0 in the fast run (one pass)."""
    return SOAK_SECONDS * share


def record(**counts: int) -> None:
    """Add to the run's figures (and write them to ``GOSTOP_FIGURES_FILE`` when set)."""
    FIGURES.update(counts)
    _write()


def record_max(**values: float) -> None:
    for name, value in values.items():
        MAX_FIGURES[name] = max(MAX_FIGURES.get(name, 0.0), value)
    _write()


def _write() -> None:
    path = os.environ.get("GOSTOP_FIGURES_FILE")
    if path:
        Path(path).write_text(json.dumps({"counts": dict(FIGURES), "max": MAX_FIGURES}, indent=1, sort_keys=True))


# ------------------------------------------------------------------------------- Redis


class PersistentRedis(RedisServer):
    """A redis-server with an append-only file fsynced on every write, so that it can be killed
    (SIGKILL, a crash) and started again on the same port and directory without losing any
    acknowledged write."""

    def __init__(self) -> None:
        super().__init__("--appendonly", "yes", "--appendfsync", "always")

    def crash(self) -> None:
        """SIGKILL the process (no shutdown, no final save), keeping its directory."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def restart(self, timeout: float = 10.0) -> None:
        """Start again on the same port, from the same directory (its append-only file)."""
        assert self.process is None and self.port
        options = [
            "--bind", HOST, "--port", str(self.port), "--dir", str(self.dir),
            "--protected-mode", "no", "--logfile", str(self.dir / f"redis-{self.port}.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            [find_redis_server(), *options, "--save", "", *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        if not self._wait_ready(timeout):
            raise RuntimeError(f"redis-server did not restart: {self._log_tail()}")


# ------------------------------------------------------------------------------ outcomes


@dataclass(frozen=True)
class Outcome:
    """How one call ended: a response, or a status code and its ``ErrorInfo`` reason."""

    response: Any
    code: grpc.StatusCode
    reason: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.code is grpc.StatusCode.OK


def reason_of(error: grpc.aio.AioRpcError) -> str:
    """The ``ErrorInfo`` reason of a failure; ``TRANSPORT`` for a failure the transport made (no
    details: a dead process, a refused connection)."""
    status = rpc_status.from_call(error)
    if status is None:
        return "TRANSPORT"
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return "NO_ERROR_INFO"


async def call(method: Callable[..., Awaitable[Any]], request: Any, metadata: Metadata = ()) -> Outcome:
    """One unary call with the client deadline; its outcome (never raises for a status)."""
    FIGURES["requests"] += 1
    started = time.monotonic()
    try:
        response = await method(request, metadata=metadata, timeout=DEADLINE)
    except grpc.aio.AioRpcError as error:
        return Outcome(None, error.code(), reason_of(error), time.monotonic() - started)
    return Outcome(response, grpc.StatusCode.OK, "", time.monotonic() - started)


# --------------------------------------------------------------------------------- storm

MIX: tuple[tuple[str, int, int], ...] = (
    ("standard", 2, 1), ("classic", 3, 1), ("simple", 2, 2), ("house", 3, 1),
    ("arcade", 2, 1), ("classic", 4, 1), ("house", 2, 2), ("standard", 3, 1),
)  # fmt: skip
"""(preset, players, rounds) of the storm's games, in turn."""

ANSWERS = {
    "SubmitAction": {
        grpc.StatusCode.ABORTED: {"STALE_VERSION"},
        grpc.StatusCode.FAILED_PRECONDITION: {"NOT_YOUR_TURN", "ROUND_OVER"},
        grpc.StatusCode.INVALID_ARGUMENT: {"REQUEST_ID_REUSED"},
    },
    "StartNextRound": {
        grpc.StatusCode.ABORTED: {"STALE_VERSION"},
        grpc.StatusCode.FAILED_PRECONDITION: {"ROUND_IN_PROGRESS", "ROUND_OVER"},
    },
    "GetGame": {},
}
"""The failures each call of the storm may meet (besides UNAVAILABLE under faults)."""


@dataclass
class Tracked:
    """A game of the storm."""

    game: Game
    rounds: int
    finished: bool = False
    to_move: int = -1
    """The seat last seen to move (-1: unknown)."""


@dataclass
class Sent:
    """The first request sent with a request id (retries resend exactly this)."""

    game_id: str
    seat: int
    method: str
    request: Any


@dataclass
class Storm:
    """Many clients on many games, and the ledger of everything they sent and got back."""

    apis: list[Api]
    games: list[Tracked]
    rng: random.Random
    faults: bool = False
    """Whether UNAVAILABLE may happen (a fault is being injected): such calls are retried with the
    same request id, on another server when there is one, until they get a definite answer."""
    hot: int = 10
    """Half of the picks go to the first ``hot`` unfinished games (many clients on one game)."""
    sent: dict[str, Sent] = field(default_factory=dict)
    acked: dict[str, bytes] = field(default_factory=dict)
    """Request id -> the serialized response it got (every later OK answer must be identical)."""
    dead: set[int] = field(default_factory=set)
    """Indexes of ``apis`` whose server is known to be gone."""
    unexpected: list[str] = field(default_factory=list)
    failed_seconds: list[float] = field(default_factory=list)
    ok_after: dict[str, int] = field(default_factory=Counter)
    """OK calls per phase label (``mark``)."""
    phase: str = "before"
    stop: bool = False
    trace: list[tuple[int, float, float, grpc.StatusCode]] | None = None
    """When a list: every call as (index of its server in ``apis``, start, end, code)."""
    _ids: int = 0

    def rid(self, client: int) -> str:
        self._ids += 1
        return f"c{client}-{self._ids}-{self.rng.getrandbits(24):06x}"

    def api(self, rng: random.Random) -> tuple[int, Api]:
        live = [i for i in range(len(self.apis)) if i not in self.dead] or list(range(len(self.apis)))
        i = rng.choice(live)
        return i, self.apis[i]

    def pick(self, rng: random.Random) -> Tracked | None:
        open_games = [t for t in self.games if not t.finished]
        if not open_games:
            return None
        if rng.random() < 0.5:
            return rng.choice(open_games[: self.hot])
        return rng.choice(open_games)

    def _check(self, method: str, outcome: Outcome) -> None:
        if outcome.ok:
            self.ok_after[self.phase] += 1
            return
        if outcome.code is grpc.StatusCode.ABORTED:
            FIGURES["conflicts"] += 1
        if outcome.code is grpc.StatusCode.UNAVAILABLE and self.faults:
            self.failed_seconds.append(outcome.seconds)
            return
        if outcome.code is grpc.StatusCode.UNAVAILABLE and outcome.reason in ("STORE_UNAVAILABLE", "STORE_TIMEOUT"):
            # No fault injected, but the store timed out (an overloaded machine): the documented
            # answer, retried by ``send`` with the same request id; counted, not a failure.
            FIGURES["store_unavailable_without_fault"] += 1
            return
        allowed = ANSWERS[method].get(outcome.code, set())
        if outcome.reason not in allowed:
            self.unexpected.append(f"{method}: {outcome.code.name} {outcome.reason} after {outcome.seconds:.2f} s")

    async def read(self, rng: random.Random, game: Game, seat: int | None) -> pb.GetGameResponse | None:
        """A seat's (or the spectator's) view; None when the call failed."""
        i, api = self.api(rng)
        md = () if seat is None else game.md(seat)
        outcome = await call(api.stub.GetGame, pb.GetGameRequest(game_id=game.id), md)
        self._note_transport(i, outcome)
        self._check("GetGame", outcome)
        return outcome.response if outcome.ok else None

    def _note_transport(self, i: int, outcome: Outcome) -> None:
        if self.trace is not None:
            end = time.monotonic()
            self.trace.append((i, end - outcome.seconds, end, outcome.code))
        if outcome.code is grpc.StatusCode.UNAVAILABLE and outcome.reason == "TRANSPORT" and self.faults:
            self.dead.add(i)

    async def send(self, rng: random.Random, rid: str, retry: bool = False) -> Outcome:
        """Send (or resend) the request of ``rid``; under faults, retry UNAVAILABLE with the same id
        until a definite answer. Every OK answer of one id must carry the same bytes."""
        sent = self.sent[rid]
        deadline = time.monotonic() + 60
        while True:
            i, api = self.api(rng)
            method = getattr(api.stub, sent.method)
            if retry:
                FIGURES["duplicates"] += 1
            outcome = await call(method, sent.request, seat_md(self._token(sent)))
            self._note_transport(i, outcome)
            self._check(sent.method, outcome)
            if outcome.ok:
                raw = outcome.response.SerializeToString()
                first = self.acked.setdefault(rid, raw)
                if first != raw:
                    self.unexpected.append(f"{rid}: a retry got another response")
            retryable = outcome.code is grpc.StatusCode.UNAVAILABLE and (
                self.faults or outcome.reason in ("STORE_UNAVAILABLE", "STORE_TIMEOUT"))
            if not retryable or time.monotonic() > deadline:
                return outcome
            retry = True
            await asyncio.sleep(0.05 + rng.random() * 0.1)

    def _token(self, sent: Sent) -> str:
        tracked = next(t for t in self.games if t.game.id == sent.game_id)
        return tracked.game.tokens[sent.seat]

    async def client(self, n: int, until: float) -> None:
        """One client: pick a game, read it, act on it (sometimes badly), until every game is
        finished, ``until`` passes or the storm is stopped."""
        rng = random.Random(self.rng.getrandbits(64))
        while not self.stop and time.monotonic() < until:
            tracked = self.pick(rng)
            if tracked is None:
                return
            try:
                await self._turn(n, rng, tracked)
            except Exception as error:  # a broken invariant: report it rather than hang the storm
                self.unexpected.append(f"client {n}: {type(error).__name__}: {error}")
                return

    async def _turn(self, n: int, rng: random.Random, tracked: Tracked) -> None:
        game = tracked.game
        seat = tracked.to_move
        if seat < 0:
            spectator = await self.read(rng, game, None)
            if spectator is None:
                await asyncio.sleep(0.02)
                return
            if spectator.view.match.finished:
                tracked.finished = True
                return
            seat = spectator.view.to_move
            if spectator.view.phase == pb.PHASE_OVER or seat < 0:
                seat = rng.randrange(len(game.tokens))
        own = await self.read(rng, game, seat)
        if own is None:
            await asyncio.sleep(0.02)
            return
        v = own.view
        if v.match.finished:
            tracked.finished = True
            return
        if v.phase == pb.PHASE_OVER:
            starter = rng.randrange(len(game.tokens))
            rid = self.rid(n)
            self.sent[rid] = Sent(game.id, starter, "StartNextRound", pb.StartNextRoundRequest(
                game_id=game.id, expected_version=own.version, request_id=rid))
            outcome = await self.send(rng, rid)
            tracked.to_move = outcome.response.result.view.to_move if outcome.ok else -1
            return
        if not v.legal_actions:
            tracked.to_move = -1 if v.to_move == seat else v.to_move
            return
        action = rng.choice(v.legal_actions).id
        version, actor = own.version, seat
        mode = rng.random()
        if mode < 0.08 and version > 1:
            version = rng.randint(max(1, version - 3), version - 1)  # a stale version, on purpose
            FIGURES["stale_sent"] += 1
        elif mode < 0.14:
            actor = (seat + rng.randrange(1, len(game.tokens))) % len(game.tokens)  # not this seat's turn
            FIGURES["wrong_seat_sent"] += 1
        rid = self.rid(n)
        self.sent[rid] = Sent(game.id, actor, "SubmitAction", pb.SubmitActionRequest(
            game_id=game.id, expected_version=version, request_id=rid, action_id=action))
        outcome = await self.send(rng, rid)
        if outcome.ok:
            result = outcome.response.result
            tracked.to_move = -1 if result.view.phase == pb.PHASE_OVER else result.view.to_move
        elif outcome.code is grpc.StatusCode.ABORTED:
            tracked.to_move = -1
        if rng.random() < 0.25:  # the reply "was lost": retry the very same request
            await self.send(rng, rid, retry=True)
        if rng.random() < 0.04:  # reuse an acknowledged id of this game for another request
            mine = [r for r, s in self.sent.items() if s.game_id == game.id and r in self.acked
                    and s.method == "SubmitAction"]
            if mine:
                old = self.sent[rng.choice(mine)]
                other = pb.SubmitActionRequest()
                other.CopyFrom(old.request)
                other.expected_version += 1
                i, api = self.api(rng)
                FIGURES["request_ids_reused"] += 1
                reused = await call(api.stub.SubmitAction, other, seat_md(game.tokens[old.seat]))
                self._note_transport(i, reused)
                self._check("SubmitAction", reused)
                if not (reused.code is grpc.StatusCode.INVALID_ARGUMENT or (
                        self.faults and reused.code is grpc.StatusCode.UNAVAILABLE)):
                    self.unexpected.append(f"reused request id answered {reused.code.name} {reused.reason}")

    async def run(self, clients: int, seconds: float) -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(*(self.client(n, until) for n in range(clients)))


async def create_games(api: Api, count: int, rng: random.Random) -> list[Tracked]:
    """``count`` games of the preset mix, created concurrently (a few at a time); UNAVAILABLE is
    retried, as the documented client policy says (an orphan game may be left: harmless here)."""
    semaphore = asyncio.Semaphore(16)

    async def one(i: int) -> Tracked:
        preset, players, rounds = MIX[i % len(MIX)]
        seed = rng.getrandbits(63)
        async with semaphore:
            for attempt in range(30):
                try:
                    game = await api.create(preset, players=players, seed=seed, rounds=rounds)
                    break
                except grpc.aio.AioRpcError as error:
                    if error.code() is not grpc.StatusCode.UNAVAILABLE or attempt == 29:
                        raise
                    FIGURES["store_unavailable_without_fault"] += 1
                    await asyncio.sleep(0.1)
        return Tracked(game, rounds)

    return list(await asyncio.gather(*(one(i) for i in range(count))))


# -------------------------------------------------------------------------------- verify


@dataclass
class Verified:
    games: int = 0
    versions: int = 0
    acknowledged: int = 0
    recovered: int = 0
    """Commits whose reply was lost to a fault, recovered by a retry with the same request id."""


async def verify(storm: Storm, store: Store, recover_lost: bool = False) -> Verified:
    """Check every game of ``storm`` against the log, the engine and the store (module docstring).
    ``recover_lost``: a commit that no client saw acknowledged (its reply lost to a fault) must be
    recoverable by a retry of its request id; otherwise every commit must have been acknowledged."""
    assert not storm.unexpected, "unexpected answers:\n" + "\n".join(storm.unexpected[:20])
    storm.faults = False
    storm.dead.clear()
    result = Verified()
    rng = random.Random(7)
    semaphore = asyncio.Semaphore(8)

    async def one(tracked: Tracked) -> None:
        async with semaphore:
            await _verify_game(storm, store, tracked, rng, recover_lost, result)

    await asyncio.gather(*(one(t) for t in storm.games))
    assert not storm.unexpected, "unexpected answers:\n" + "\n".join(storm.unexpected[:20])
    record(games_verified=result.games, versions_verified=result.versions, acknowledged=result.acknowledged,
           lost_replies_recovered=result.recovered)
    return result


async def _verify_game(storm: Storm, store: Store, tracked: Tracked, rng: random.Random, recover_lost: bool,
                       result: Verified) -> None:
    game = tracked.game
    api = storm.apis[0]
    log = await _retrying(lambda: api.log(game, OPERATOR))
    FIGURES["requests"] += 1 + len(log.entries) // 500
    versions = [e.version for e in log.entries]
    assert versions == list(range(1, len(versions) + 1)), f"{game.id}: versions skipped or repeated"
    spectator = await _retrying(lambda: api.get(game))
    snap = await store.load(game.id)
    assert snap is not None and snap.version == versions[-1] == spectator.version == log.version, game.id
    match, by_version = replay(log, log.rounds)
    upto = pb.GetGameLogResponse()  # the log up to the stored snapshot's own version
    upto.CopyFrom(log)
    del upto.entries[snap.blob_version:]
    assert match_to_bytes(replay(upto, log.rounds)[0]) == compact.unpack("snap", snap.blob), \
        f"{game.id}: the log does not replay to the stored snapshot"
    assert spectator.view == convert.view_to_pb(view(match.round), match, game.id, snap.version)

    rids = Counter(e.request_id for e in log.entries[1:])
    assert all(rids.values()) and "" not in rids, f"{game.id}: a commit without a request id"
    assert max(rids.values(), default=1) == 1, f"{game.id}: a request committed twice"
    at = {e.request_id: e for e in log.entries[1:]}
    for rid, entry in at.items():
        sent = storm.sent.get(rid)
        assert sent is not None and sent.game_id == game.id, f"{game.id}: a commit nobody sent ({rid})"
        assert entry.seat == sent.seat, f"{game.id}: {rid} committed for another seat"
        if rid not in storm.acked:
            assert recover_lost, f"{game.id}: the reply of {rid} was lost"
            outcome = await storm.send(rng, rid, retry=True)
            assert outcome.ok, f"{game.id}: {rid} is committed but its retry answers {outcome.code.name}"
            result.recovered += 1
    mine = [rid for rid, s in storm.sent.items() if s.game_id == game.id and rid in storm.acked]
    for rid in mine:
        assert rid in at, f"{game.id}: acknowledged {rid} is not in the log"
        entry = at[rid]
        response = pb.SubmitActionResponse.FromString(storm.acked[rid])
        assert response.result.version == entry.version
        seat = storm.sent[rid].seat
        assert list(response.result.events) == [convert.event_to_pb(redact(e, seat)) for e in by_version[entry.version]]
        # No response is lost: a retry, now that the game has moved on, gets the very same bytes.
        outcome = await storm.send(rng, rid, retry=True)
        assert outcome.ok and outcome.response.SerializeToString() == storm.acked[rid], f"{game.id}: {rid}"
    result.games += 1
    result.versions += len(versions)
    result.acknowledged += len(mine)


# -------------------------------------------------------------------------------- misc


async def _retrying(call: Callable[[], Awaitable[T]]) -> T:
    """A read, retried on UNAVAILABLE (the store timing out on an overloaded machine)."""
    for attempt in range(30):
        try:
            return await call()
        except grpc.aio.AioRpcError as error:
            if error.code() is not grpc.StatusCode.UNAVAILABLE or attempt == 29:
                raise
            FIGURES["store_unavailable_without_fault"] += 1
            await asyncio.sleep(0.1)
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def closing(apis: Sequence[Api]) -> Any:
    try:
        yield apis
    finally:
        for api in apis:
            await api.channel.close()
