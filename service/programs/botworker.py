"""Bot workers: they play the turns of bot seats (``CreateGame``'s ``bot_seats``).

A worker takes pending bot turns from the bot queue (``gostop.service.bot_queue``: Redis streams
read by a consumer group, or the in-process queue of the memory store), reads the seat's view
through the service's API with a bot-worker credential, lets the seat's bot decide within its
budget, submits the decision with the turn's request id (so a turn handled twice commits once)
and acknowledges the turn. Workers hold no game state: any number of them, anywhere, share the
work, and a turn a worker took and never acknowledged is claimed by another after the claim time.

A turn that cannot be decided — the bot raised, overran its budget, is unknown to this worker, or
chose an action that is not legal — is decided by the fallback, ``greedy`` (or the first legal
action if even that fails), and counted by outcome, so a game never stalls on a bot. A built-in
bot's search is bounded by the seat's budget whatever its options ask, and a bot past its deadline
is told to stop (``cancel()``), so no decision keeps a core busy after it was given up.

A worker also pumps the queue (``BotQueue.pump``, every ``pump_ms``): it moves scheduled turns
that fell due — a turn clock's deadlines (docs/clock.md) — into the ready queue. A deadline's turn
acts for a person's seat; the service refuses it before the deadline by its own clock
(``NOT_A_BOT_SEAT`` with ``deadline_ms``), and a worker whose clock runs a little ahead waits until
then and tries once more (``TurnEarly``).

``gostop bots serve`` runs a worker against a Redis-backed deployment; ``gostop serve`` on the
memory store runs one inside the server (``InProcessWorker``), so a person can play against bot
seats through any client with nothing else running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import math
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gostop.bots import BotSpecError, GreedyBot, make_bot, parse_spec
from gostop.bots.schedule import derive_seed
from gostop.engine import Action, action_id
from gostop.service.bot_queue import BotQueue, BotTurn, Taken, bot_request_id, now_ms
from gostop.service.bot_seats import BUILTIN_BOTS, MCTS_OPTIONS
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import view_from_pb

log = structlog.get_logger("gostop.bots")

FALLBACK = "greedy"
"""The bot that decides a turn its own bot could not (then the first legal action)."""
INLINE_BOTS = frozenset({"greedy", "random"})
"""Built-in bots whose decision takes well under a millisecond: decided on the event loop, where
handing the decision to a thread would cost more than the decision."""
OUTCOMES = ("ok", "error", "timeout", "unknown_bot", "illegal", "stale")
_DECISION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class TurnGone(Exception):
    """The turn is no longer owed (the game moved on, ended or expired): acknowledge it."""


class TurnLater(Exception):
    """The service could not be reached: leave the turn unacknowledged, to be claimed again."""


class TurnRefused(Exception):
    """The service refused a call as invalid (``INVALID_ARGUMENT``): the same call would be refused
    again, so the worker does not leave it to be retried as it is."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}" if reason else message)
        self.reason = reason


class TurnEarly(Exception):
    """The service refused the turn as not yet due (a turn clock's deadline, ``NOT_A_BOT_SEAT``):
    it is due at ``deadline_ms`` (Unix ms, the service's clock)."""

    def __init__(self, deadline_ms: int) -> None:
        super().__init__(f"the turn is not due before {deadline_ms} (Unix ms)")
        self.deadline_ms = deadline_ms


EARLY_WAIT_MS = 10_000
"""How far ahead a deadline the service names may be for a worker to wait for it and try again."""
EARLY_MARGIN_MS = 5
"""How long past the deadline the worker tries again."""
EARLY_REASON = "NOT_A_BOT_SEAT"
PUMP_LOG_EVERY = 10.0
"""Seconds between two logs of a failing pump (it runs every few milliseconds)."""


def early_deadline(code_name: str, reason: str, metadata: dict[str, str]) -> int | None:
    """The deadline of a refusal that says the turn is not due yet (``PERMISSION_DENIED``,
    ``NOT_A_BOT_SEAT``, with ``deadline_ms``), else None."""
    if code_name != "PERMISSION_DENIED" or reason != EARLY_REASON:
        return None
    try:
        return int(metadata["deadline_ms"])
    except (KeyError, ValueError):
        return None


REQUEST_ID_REFUSALS = ("REQUEST_ID_REUSED", "REQUEST_ID_RESERVED")
"""Refusals of a submission for its request id: the turn is submitted again under an id of the
worker's own (the expected version still lets it commit at most once)."""


class BotApi(Protocol):
    """The three calls a worker makes, as one bot seat (errors as ``TurnGone`` / ``TurnLater``)."""

    async def get(self, game_id: str, seat: int) -> pb.GameView: ...

    async def submit(self, game_id: str, seat: int, version: int, action: int, request_id: str) -> None: ...

    async def next_round(self, game_id: str, seat: int, version: int, request_id: str) -> None: ...


class WorkerMetrics:
    """The bot worker's metrics (in the registry it is given: the server's, in process)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.decisions = Counter("gostop_bot_decisions_total", "Bot-seat decisions, by bot and outcome (ok, "
                                 "error, timeout, unknown_bot, illegal: decided by the fallback; stale: no "
                                 "longer owed).", ("bot", "outcome"), registry=registry)
        self.latency = Histogram("gostop_bot_decision_seconds", "Time from taking a bot turn to its commit.",
                                 ("bot",), buckets=_DECISION_BUCKETS, registry=registry)
        self.pending = Gauge("gostop_bot_turns_pending", "Bot turns queued and not yet done (every worker "
                             "sees the same queue: take the max over workers, not the sum).", registry=registry)
        self.oldest = Gauge("gostop_bot_turn_oldest_seconds", "Age of the oldest bot turn not yet done.",
                            registry=registry)
        self.turn_failures = Counter("gostop_bot_turn_failures_total", "Bot turns the service refused or the "
                                     "worker could not play (a bug): each is logged, and looked at again at once "
                                     "(a refused request id) or claimed again later.", registry=registry)


def bot_label(spec: str) -> str:
    """The metrics label of a bot spec: its name without options (bounded: names an operator allows)."""
    try:
        return parse_spec(spec)[0][:64]
    except ValueError:
        return "invalid"


@dataclass(frozen=True)
class Decision:
    action: int
    outcome: str
    seconds: float


class Decider:
    """Builds a turn's bot and decides, falling back as the module docstring says.

    ``plugins``: the plugin bots this worker may build (module:attribute or entry-point names);
    ``remote_bots``: NAME -> HOST:PORT of the BotService servers ``remote:NAME`` may call."""

    def __init__(self, plugins: tuple[str, ...] = (), remote_bots: dict[str, str] | None = None,
                 slack: float = 2.0) -> None:
        self.plugins = plugins
        self.remote_bots = dict(remote_bots or {})
        self.slack = slack
        self._remote: dict[str, Any] = {}

    def _allowed(self, target: str) -> bool:
        return target in BUILTIN_BOTS or target in self.plugins

    async def decide(self, turn: BotTurn, view: pb.GameView) -> Decision:
        start = time.perf_counter()
        legal = [la.id for la in view.legal_actions]
        outcome = "ok"
        chosen: int | None = None
        # The budget is CPU time; the wall-clock wait allows for a loaded machine.
        timeout = turn.budget_ms / 1000 * self.slack + 1.0
        running = _Running()
        try:
            target, _ = parse_spec(turn.bot)
            if target.startswith("remote:"):
                async with asyncio.timeout(timeout):
                    chosen = await self._remote_choice(target[7:], view, turn)
            elif target in INLINE_BOTS:
                chosen = self._local_choice(turn, view, running)
            elif self._allowed(target):
                async with asyncio.timeout(timeout):
                    chosen = await asyncio.to_thread(self._local_choice, turn, view, running)
            else:
                outcome = "unknown_bot"
        except TimeoutError:
            outcome = "timeout"
            if not running.stop():
                log.warning("bot cannot be stopped", game_id=turn.game_id, seat=turn.seat, bot=turn.bot,
                            detail="past its deadline, it has no cancel(): it works on until it returns")
        except (_UnknownBot, BotSpecError):  # not configured here, or not installed on this worker
            outcome = "unknown_bot"
        except Exception as exc:  # a bot's own failure: any exception of any plugin
            outcome = "error"
            log.warning("bot failed", game_id=turn.game_id, seat=turn.seat, bot=turn.bot,
                        error=f"{type(exc).__name__}: {exc}"[:300])
        finally:
            running.stop()  # a decision given up (a timeout, the worker stopping) ends its work
        if outcome == "ok" and chosen not in legal:
            outcome = "illegal"
        if outcome != "ok":
            chosen = self._fallback(turn, view, legal)
        assert chosen is not None
        return Decision(chosen, outcome, time.perf_counter() - start)

    def _local_choice(self, turn: BotTurn, view_pb: pb.GameView, running: _Running) -> int:
        target, options = parse_spec(turn.bot)
        if target == "mcts":
            options = bounded_mcts_options(options, turn.budget_ms)
        bot = make_bot(_strip_options(turn.bot),
                       seed=derive_seed("bot-seat", turn.game_id, turn.version, turn.seat), **options)
        running.started(bot)
        view = view_from_pb(view_pb)
        return action_id(bot.choose(view, view.legal_actions))

    async def _remote_choice(self, name: str, view: pb.GameView, turn: BotTurn) -> int:
        address = self.remote_bots.get(name)
        if address is None:
            raise _UnknownBot(name)
        bot = self._remote.get(name)
        if bot is None:
            from gostop.client.remote_bot import RemoteBot

            bot = self._remote[name] = RemoteBot(name, address)
        seed = derive_seed("bot-seat", turn.game_id, turn.version, turn.seat)
        return int(await bot.decide_async(view, turn.budget_ms, seed=seed))

    @staticmethod
    def _fallback(turn: BotTurn, view_pb: pb.GameView, legal: list[int]) -> int:
        try:
            view = view_from_pb(view_pb)
            action: Action = GreedyBot(derive_seed("fallback", turn.game_id, turn.version)).choose(
                view, view.legal_actions)
            chosen = action_id(action)
            if chosen in legal:
                return chosen
        except Exception:  # the first legal action is the fallback's own fallback
            pass
        return legal[0]

    def close(self) -> None:
        for bot in self._remote.values():
            with contextlib.suppress(Exception):
                bot.close()


def bounded_mcts_options(options: dict[str, Any], budget_ms: int) -> dict[str, Any]:
    """``mcts``'s options with its work bounded by the seat's budget, whatever they ask (a game
    created before the service checked them may hold any): the search ends at ``budget_ms`` of CPU
    time at the latest (or its own lower ``cpu_millis``), its ``millis`` is at most the budget, and
    the options that size its work per decision are held to their ranges (``MCTS_OPTIONS``)."""
    out = dict(options)

    def number(key: str) -> float | None:
        value = out.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            return None
        return float(value)

    cpu = number("cpu_millis")
    out["cpu_millis"] = min(cpu, float(budget_ms)) if cpu is not None else float(budget_ms)
    if "millis" in out:
        wall = number("millis")
        out["millis"] = min(wall, float(budget_ms)) if wall is not None else float(budget_ms)
    for key in ("belief_samples", "reply_depth"):
        value, allowed = out.get(key), MCTS_OPTIONS[key]
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = int(min(max(value, allowed.low), allowed.high))
    return out


class _Running:
    """The bot of one decision, so that the event loop can stop it (``cancel()``) once the decision
    is given up, whether its thread has built the bot yet or not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bot: Any = None
        self._stopped = False

    def started(self, bot: Any) -> None:
        with self._lock:
            self._bot = bot
            stopped = self._stopped
        if stopped:
            _cancel(bot)

    def stop(self) -> bool:
        """Tell the bot to stop; False when it is a bot that cannot be told (no ``cancel()``)."""
        with self._lock:
            self._stopped = True
            bot = self._bot
        return bot is None or _cancel(bot)


def _cancel(bot: Any) -> bool:
    cancel = getattr(bot, "cancel", None)
    if not callable(cancel):
        return False
    try:
        cancel()
    except Exception as exc:  # a plugin's own failure
        log.warning("bot cancel failed", bot=getattr(bot, "name", "?"), error=f"{type(exc).__name__}: {exc}"[:300])
        return False
    return True


def _finished(running: set[asyncio.Task[None]], slots: asyncio.Semaphore, task: asyncio.Task[None]) -> None:
    running.discard(task)
    slots.release()


class _UnknownBot(Exception):
    pass


def _strip_options(spec: str) -> str:
    """A spec without its options (``make_bot`` takes them as keywords, already parsed)."""
    return ":".join(p for p in spec.split(":") if "=" not in p)


class BotWorker:
    """Takes bot turns from ``queue`` and plays them through ``api``, ``concurrency`` at a time."""

    def __init__(self, queue: BotQueue, api: BotApi, decider: Decider, *, registry: CollectorRegistry,
                 consumer: str | None = None, concurrency: int = 1, backlog_every: float = 5.0,
                 pump_ms: int = 50) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if pump_ms < 1:
            raise ValueError("pump_ms must be at least 1")
        self.queue = queue
        self.api = api
        self.decider = decider
        self.metrics = WorkerMetrics(registry)
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self.concurrency = concurrency
        self.backlog_every = backlog_every
        self.pump_ms = pump_ms
        self.pumped = 0
        """Scheduled turns this worker moved into the ready queue."""
        self.handled = 0
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._acks: list[tuple[Taken, asyncio.Future[None]]] = []
        """Turns done and not yet acknowledged, with what their handlers wait on."""
        self._acking: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._stopping.clear()
        self._tasks = [asyncio.ensure_future(self._loop()), asyncio.ensure_future(self._watch_backlog()),
                       asyncio.ensure_future(self._pump())]

    async def stop(self) -> None:
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []
        if self._acking is not None:
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(5.0):
                    await self._acking
        self.decider.close()

    async def _loop(self) -> None:
        slots = asyncio.Semaphore(self.concurrency)
        running: set[asyncio.Task[None]] = set()
        try:
            while not self._stopping.is_set():
                await slots.acquire()
                slots.release()
                free = self.concurrency - len(running)
                try:
                    taken = await self.queue.take(self.consumer, max(1, free), 1000)
                except Exception as exc:  # the queue's store is down: wait and try again
                    log.warning("bot queue unavailable", error=str(exc)[:300])
                    await asyncio.sleep(1.0)
                    continue
                for item in taken:
                    await slots.acquire()
                    task = asyncio.ensure_future(self._handle(item))
                    running.add(task)
                    task.add_done_callback(functools.partial(_finished, running, slots))
        finally:
            for task in running:
                task.cancel()

    async def _watch_backlog(self) -> None:
        while not self._stopping.is_set():  # (a client library may swallow the cancellation of a stop)
            with contextlib.suppress(Exception):
                backlog = await self.queue.backlog()
                self.metrics.pending.set(backlog.pending)
                self.metrics.oldest.set(backlog.oldest_seconds)
            await asyncio.sleep(self.backlog_every)

    async def _pump(self) -> None:
        """Move due scheduled turns into the ready queue every ``pump_ms``. A failing queue is
        logged at most every ``PUMP_LOG_EVERY`` seconds (with how many failures were not)."""
        logged_at, unlogged = -math.inf, 0
        while not self._stopping.is_set():  # (a client library may swallow the cancellation of a stop)
            try:
                self.pumped += await self.queue.pump()
            except Exception as exc:  # the queue's store is down: try again at the next beat
                if self._stopping.is_set():
                    return
                now = time.monotonic()
                if now - logged_at >= PUMP_LOG_EVERY:
                    log.warning("bot queue pump failed", error=str(exc)[:300], failures_not_logged=unlogged)
                    logged_at, unlogged = now, 0
                else:
                    unlogged += 1
            await asyncio.sleep(self.pump_ms / 1000)

    async def _handle(self, taken: Taken) -> None:
        turn = taken.turn
        if turn is None:
            await self._ack(taken)
            return
        try:
            await self.play(turn)
        except TurnLater as exc:
            log.warning("bot turn left for later", game_id=turn.game_id, seat=turn.seat, error=str(exc)[:300])
            return
        except TurnGone:
            self.metrics.decisions.labels(bot_label(turn.bot), "stale").inc()
        except Exception as exc:  # refused (a wrong bot key, say) or a bug: say so, leave it to be claimed again
            self.metrics.turn_failures.inc()
            log.error("bot turn failed", game_id=turn.game_id, seat=turn.seat, version=turn.version, bot=turn.bot,
                      error=f"{type(exc).__name__}: {exc}"[:500])
            return
        await self._ack(taken)
        self.handled += 1

    async def _ack(self, taken: Taken) -> None:
        """Acknowledge ``taken`` with the turns done meanwhile: one ``ack`` for every turn finished
        while the previous one was on its way (two store round trips each way, not per turn)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acks.append((taken, done))
        if self._acking is None or self._acking.done():
            self._acking = asyncio.ensure_future(self._flush_acks())
        await asyncio.shield(done)

    async def _flush_acks(self) -> None:
        while self._acks:
            batch, self._acks = self._acks, []
            with contextlib.suppress(Exception):  # an unacknowledged turn comes back, and is stale then
                await self.queue.ack([taken for taken, _ in batch])
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def play(self, turn: BotTurn) -> None:
        """Decide and submit one turn (``TurnGone`` if it is no longer owed). A turn the service
        finds early (``TurnEarly``: this worker's clock runs ahead of the service's) is tried once
        more just past its deadline, when that is at most ``EARLY_WAIT_MS`` away; else it fails as
        any refusal does (left to be claimed again)."""
        try:
            await self._play(turn)
        except TurnEarly as early:
            wait_ms = early.deadline_ms - now_ms()
            if wait_ms > EARLY_WAIT_MS:
                raise
            log.info("bot turn early, waiting for its deadline", game_id=turn.game_id, seat=turn.seat,
                     version=turn.version, deadline_ms=early.deadline_ms, wait_ms=wait_ms)
            await asyncio.sleep(max(0, wait_ms + EARLY_MARGIN_MS) / 1000)
            await self._play(turn)

    async def _play(self, turn: BotTurn) -> None:
        view = await self.api.get(turn.game_id, turn.seat)
        if view.version != turn.version:
            raise TurnGone()
        label = bot_label(turn.bot)
        if turn.kind == "next_round":
            await self._submit(turn, None)
            return
        if not view.legal_actions:
            raise TurnGone()
        decision = await self.decider.decide(turn, view)
        await self._submit(turn, decision.action)
        self.metrics.decisions.labels(label, decision.outcome).inc()
        self.metrics.latency.labels(label).observe(decision.seconds)
        log.info("bot decision", game_id=turn.game_id, seat=turn.seat, version=turn.version, bot=turn.bot,
                 ms=round(decision.seconds * 1000, 1), outcome=decision.outcome, action=decision.action)

    async def _send(self, turn: BotTurn, action: int | None, request_id: str) -> None:
        if action is None:
            await self.api.next_round(turn.game_id, turn.seat, turn.version, request_id)
        else:
            await self.api.submit(turn.game_id, turn.seat, turn.version, action, request_id)

    async def _submit(self, turn: BotTurn, action: int | None) -> None:
        """Submit the turn (``action``, or None to deal the next round) under the turn's request id.

        A refusal (``TurnRefused``) is never left to recur as it is: the game is looked at again.
        A turn no longer owed (another worker committed it) is ``TurnGone``. A turn still owed
        whose request id was refused (another request holds it) is logged, counted and submitted
        once more under an id of this worker's own; the expected version still lets at most one
        submission commit. Any other refusal of a turn still owed goes up to ``_handle`` (logged,
        counted, claimed again later)."""
        try:
            await self._send(turn, action, bot_request_id(turn))
            return
        except TurnRefused as refused:
            view = await self.api.get(turn.game_id, turn.seat)
            if view.version != turn.version or (action is not None and action not in
                                                 {a.id for a in view.legal_actions}):
                log.info("bot turn refused, no longer owed", game_id=turn.game_id, seat=turn.seat,
                         version=turn.version, reason=refused.reason)
                raise TurnGone() from None
            if refused.reason not in REQUEST_ID_REFUSALS:
                raise
            self.metrics.turn_failures.inc()
            log.error("bot turn refused", game_id=turn.game_id, seat=turn.seat, version=turn.version, bot=turn.bot,
                      kind=turn.kind, reason=refused.reason, error=str(refused)[:300],
                      detail="submitted again under the worker's own request id")
        await self._send(turn, action, f"worker.{uuid.uuid4().hex}")


# ------------------------------------------------------------------------------ the two APIs


class DomainApi:
    """The API in this process: the server's domain layer, called as a bot worker would be."""

    def __init__(self, games: Any) -> None:
        self.games = games

    async def _call(self, call: Callable[[], Any]) -> Any:
        from gostop.service.errors import Code, ServiceError
        from gostop.service.store_api import StoreUnavailable

        try:
            return await call()
        except ServiceError as exc:
            deadline = early_deadline(exc.code.name, exc.reason, exc.metadata)
            if deadline is not None:
                raise TurnEarly(deadline) from None
            if exc.code in (Code.NOT_FOUND, Code.ABORTED, Code.FAILED_PRECONDITION):
                raise TurnGone(str(exc)) from None
            if exc.code is Code.UNAVAILABLE:
                raise TurnLater(str(exc)) from None
            if exc.code is Code.INVALID_ARGUMENT:
                raise TurnRefused(exc.reason, exc.message) from None
            raise
        except StoreUnavailable as exc:
            raise TurnLater(str(exc)) from None

    def _caller(self, seat: int) -> Any:
        from gostop.service.auth import Caller

        return Caller(None, None, False, False, seat)

    async def get(self, game_id: str, seat: int) -> pb.GameView:
        response = await self._call(lambda: self.games.get(pb.GetGameRequest(game_id=game_id), self._caller(seat)))
        return response.view  # type: ignore[no-any-return]

    async def submit(self, game_id: str, seat: int, version: int, action: int, request_id: str) -> None:
        req = pb.SubmitActionRequest(game_id=game_id, expected_version=version, request_id=request_id,
                                     action_id=action)
        await self._call(lambda: self.games.submit(req, self._caller(seat)))

    async def next_round(self, game_id: str, seat: int, version: int, request_id: str) -> None:
        req = pb.StartNextRoundRequest(game_id=game_id, expected_version=version, request_id=request_id)
        await self._call(lambda: self.games.start_next_round(req, self._caller(seat)))


class ClientApi:
    """The API over gRPC, with a bot-worker key (``x-api-key``) and the seat (``x-bot-seat``)."""

    def __init__(self, target: str, bot_key: str, *, tls: bool = False, root_certificates: bytes | None = None
                 ) -> None:
        from gostop.client import AsyncGostopClient

        self.client = AsyncGostopClient(target, bot_key=bot_key, tls=tls, root_certificates=root_certificates)

    async def _call(self, call: Callable[[], Any]) -> Any:
        from gostop.client import (
            FailedPrecondition,
            GameNotFound,
            GostopError,
            StaleVersion,
            Unavailable,
        )

        try:
            return await call()
        except (GameNotFound, StaleVersion, FailedPrecondition) as exc:
            raise TurnGone(str(exc)) from None
        except Unavailable as exc:
            raise TurnLater(str(exc)) from None
        except GostopError as exc:
            deadline = early_deadline(exc.code.name, exc.reason, exc.metadata)
            if deadline is not None:
                raise TurnEarly(deadline) from None
            if exc.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TurnLater(str(exc)) from None
            if exc.code == grpc.StatusCode.INVALID_ARGUMENT:
                raise TurnRefused(exc.reason, str(exc)) from None
            raise

    async def get(self, game_id: str, seat: int) -> pb.GameView:
        return await self._call(lambda: self.client.get_game(game_id, seat))  # type: ignore[no-any-return]

    async def submit(self, game_id: str, seat: int, version: int, action: int, request_id: str) -> None:
        await self._call(lambda: self.client.submit_action(game_id, seat, action, expected_version=version,
                                                           request_id=request_id))

    async def next_round(self, game_id: str, seat: int, version: int, request_id: str) -> None:
        await self._call(lambda: self.client.start_next_round(game_id, seat, expected_version=version,
                                                              request_id=request_id))

    async def close(self) -> None:
        await self.client.close()


class InProcessWorker:
    """A bot worker inside a server (``Server.companions``): the memory store's, or ``bot_worker=on``."""

    def __init__(self, server: Any, concurrency: int = 1) -> None:
        config = server.config
        assert server.games.bot_queue is not None
        self.worker = BotWorker(server.games.bot_queue, DomainApi(server.games),
                                Decider(config.keys("bot_plugins"), config.remote_bot_addresses()),
                                registry=server.metrics.registry, consumer=f"in-process-{os.getpid()}",
                                concurrency=concurrency)

    async def start(self) -> None:
        await self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()


def attach_in_process_worker(server: Any) -> InProcessWorker | None:
    """Give ``server`` its in-process bot worker when its settings ask for one (``bot_worker``: auto
    means with the memory store)."""
    mode = server.config.bot_worker
    if server.games.bot_queue is None or mode == "off" or (mode == "auto" and server.store.name != "memory"):
        return None
    worker = InProcessWorker(server)
    server.companions.append(worker)
    return worker


# ------------------------------------------------------------------------- gostop bots serve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop bots serve`` (the queue's settings come from the same environment as the
    server's: GOSTOP_REDIS_URL, GOSTOP_BOT_SHARDS, GOSTOP_BOT_CLAIM_IDLE_MS, GOSTOP_REMOTE_BOTS,
    GOSTOP_BOT_PLUGINS)."""
    sub = parser.add_subparsers(dest="bots_command", required=True)
    serve = sub.add_parser("serve", help="play the turns of bot seats (a bot worker)")
    serve.add_argument("--server", default=os.environ.get("GOSTOP_SERVER", "127.0.0.1:50051"),
                       help="HOST:PORT of the game service [env GOSTOP_SERVER]")
    serve.add_argument("--redis-url", default=None, help="the service's Redis [env GOSTOP_REDIS_URL]")
    serve.add_argument("--concurrency", type=int, default=int(os.environ.get("GOSTOP_BOT_CONCURRENCY", "1")),
                       help="turns decided at once (1 suits a CPU-bound bot: scale with processes) "
                            "[env GOSTOP_BOT_CONCURRENCY]")
    serve.add_argument("--metrics-port", type=int, default=int(os.environ.get("GOSTOP_METRICS_PORT", "9465")),
                       help="Prometheus port (0: none) [env GOSTOP_METRICS_PORT]")
    serve.add_argument("--metrics-host", default=os.environ.get("GOSTOP_METRICS_HOST", "127.0.0.1"),
                       help="address the metrics endpoint binds [env GOSTOP_METRICS_HOST]")
    serve.add_argument("--consumer", default=None, help="this worker's name in the consumer group "
                       "(default: host-pid; a restarted worker with the same name resumes its own turns)")
    serve.add_argument("--tls", action="store_true", help="connect to the service with TLS (system roots)")
    serve.add_argument("--tls-ca", default=None, help="PEM root certificates: connect with TLS")


def serve_command(args: argparse.Namespace) -> int:
    """``gostop bots serve``: a bot worker until SIGTERM or SIGINT."""
    from gostop.service import config as cfg
    from gostop.service.logs import configure

    env = dict(os.environ)
    if args.redis_url:
        env["GOSTOP_REDIS_URL"] = args.redis_url
    try:
        config = cfg.load(None, env)
    except ValueError as exc:
        sys.stderr.write(f"gostop bots serve: {exc}\n")
        return 2
    key = os.environ.get("GOSTOP_BOT_KEY", "") or (config.keys("bot_keys") or ("",))[0]
    if not config.redis_url:
        sys.stderr.write("gostop bots serve: set GOSTOP_REDIS_URL (or --redis-url): a bot worker takes its turns "
                         "from the service's Redis (with the memory store the server plays bot seats itself)\n")
        return 2
    if not key:
        sys.stderr.write("gostop bots serve: set GOSTOP_BOT_KEY: a key of the server's GOSTOP_BOT_KEYS\n")
        return 2
    if args.concurrency < 1:
        sys.stderr.write("gostop bots serve: --concurrency must be at least 1\n")
        return 2
    configure(config.log_format, config.log_level)
    roots = open(args.tls_ca, "rb").read() if args.tls_ca else None  # noqa: SIM115

    async def run() -> None:
        from prometheus_client import start_http_server

        from gostop.service.bot_queue import RedisBotQueue
        from gostop.service.stores import open_store

        store = open_store(config.redis_url)
        queue = RedisBotQueue(store, config.bot_shards, config.bot_claim_idle_ms)
        api = ClientApi(args.server, key, tls=args.tls, root_certificates=roots)
        registry = CollectorRegistry()
        metrics_server = None
        if args.metrics_port:
            metrics_server, _ = start_http_server(args.metrics_port, args.metrics_host, registry=registry)
        worker = BotWorker(queue, api, Decider(config.keys("bot_plugins"), config.remote_bot_addresses()),
                           registry=registry, consumer=args.consumer, concurrency=args.concurrency)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await worker.start()
        log.info("bot worker serving", server=args.server, consumer=worker.consumer, concurrency=args.concurrency,
                 shards=config.bot_shards, claim_idle_ms=config.bot_claim_idle_ms,
                 metrics_port=args.metrics_port)
        await stop.wait()
        await worker.stop()
        await api.close()
        await store.close()
        if metrics_server is not None:
            metrics_server.shutdown()
        log.info("bot worker stopped", handled=worker.handled)

    try:
        asyncio.run(run())
    except OSError as exc:
        sys.stderr.write(f"gostop bots serve: {exc}\n")
        return 1
    return 0
