"""Running a tournament: the players (in-line or a process pool), one game through the service, and
the resumable run that appends every game's record to the results file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gostop.bots.arena import wilson as wilson
from gostop.bots.schedule import derive_seed
from gostop.client import (
    AsyncGostopClient,
    GostopError,
    PermissionDenied,
    RemoteBot,
    RemoteBotError,
    StaleVersion,
    Unauthenticated,
)
from gostop.engine import Rules, action_id
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import deal_to_pb, rules_from_pb, view_from_pb

from .plan import HEAVY_BOTS, MAX_ACTIONS, RESULTS, SETTINGS_JSON, GameSpec, load_results, make_deal, plan
from .report import write_report

if TYPE_CHECKING:
    from gostop.tools.ladder import Identity as BotIdentity

# -------------------------------------------------------------------------------- the bots


def _bot_options(name: str, mcts_millis: float | None) -> dict[str, Any]:
    # CPU time, not wall-clock: the pool's processes share the machine with each other and the
    # event loop, and a bot's strength should not depend on how loaded the machine is.
    from gostop.bots import parse_spec

    target, options = parse_spec(name)
    if target == "mcts" and mcts_millis is not None and "cpu_millis" not in options:
        return {"cpu_millis": mcts_millis}
    return {}


def _heavy(spec: str) -> bool:
    """Whether the bot of ``spec`` decides in the process pool (``HEAVY_BOTS``, options or not)."""
    from gostop.bots import parse_spec

    return parse_spec(spec)[0] in HEAVY_BOTS


def _choose_id(name: str, options: Mapping[str, Any], seed: int, view_blob: bytes) -> int:
    """One decision of a freshly built bot (the process-pool task): the chosen legal-action id."""
    from gostop.bots import make_bot

    msg = pb.GameView()
    msg.ParseFromString(view_blob)
    view = view_from_pb(msg)
    return action_id(make_bot(name, seed=seed, **options).choose(view, view.legal_actions))


def _warm_up() -> None:
    """Start a pool process and import the bots before the clock of the first decision runs."""
    import gostop.bots  # noqa: F401


class Player(Protocol):
    """Picks the action of one seat of one game."""

    name: str
    decisions: int
    seconds: float

    async def choose(self, view: pb.GameView) -> int: ...


class InlinePlayer:
    """A cheap bot, kept for the whole game and run on the event loop."""

    def __init__(self, name: str, seed: int, options: Mapping[str, Any]) -> None:
        from gostop.bots import make_bot

        self.name = name
        self.bot = make_bot(name, seed=seed, **options)
        self.decisions = 0
        self.seconds = 0.0

    async def choose(self, view: pb.GameView) -> int:
        start = time.perf_counter()
        engine_view = view_from_pb(view)
        chosen = action_id(self.bot.choose(engine_view, engine_view.legal_actions))
        self.decisions += 1
        self.seconds += time.perf_counter() - start
        return chosen


class PoolPlayer:
    """A CPU-heavy bot: each decision is a task of the process pool (a bot built per decision, seeded
    from the seat's seed and the game version, so the game stays reproducible)."""

    def __init__(self, name: str, seed: int, options: Mapping[str, Any], pool: concurrent.futures.Executor) -> None:
        self.name = name
        self.seed = seed
        self.options = dict(options)
        self.pool = pool
        self.decisions = 0
        self.seconds = 0.0

    async def choose(self, view: pb.GameView) -> int:
        start = time.perf_counter()
        loop = asyncio.get_running_loop()
        chosen = await loop.run_in_executor(
            self.pool, _choose_id, self.name, self.options, derive_seed(self.seed, view.version),
            view.SerializeToString())
        self.decisions += 1
        self.seconds += time.perf_counter() - start
        return chosen


def remote_target(spec: str) -> tuple[str, str] | None:
    """``remote:NAME[:options]`` as (NAME, the options as written); None for any other spec.

    >>> remote_target("remote:ts:style=random")
    ('ts', 'style=random')
    """
    if not spec.startswith("remote:"):
        return None
    name, _, options = spec.removeprefix("remote:").partition(":")
    return name, options


class RemotePlayer:
    """A remote bot (a ``gostop.v1.BotService`` server, ``remote:NAME``): each decision is one
    ``Decide`` call in a worker thread, seeded from the seat's seed and the game version.

    As the contract says, a late answer, an error status or an illegal id is played as the lowest
    legal id and counted (``fallbacks``, in the game's record; the first of each bot is said); an
    unreachable server fails the game (a rerun plays it)."""

    def __init__(self, name: str, bot: RemoteBot, seed: int, deadline_ms: int, said: set[str]) -> None:
        self.name = name
        self.bot = bot
        self.seed = seed
        self.deadline_ms = deadline_ms
        self.said = said
        self.decisions = 0
        self.seconds = 0.0
        self.fallbacks = 0

    async def choose(self, view: pb.GameView) -> int:
        start = time.perf_counter()
        try:
            chosen = await self.bot.decide_async(view, self.deadline_ms, seed=derive_seed(self.seed, view.version))
        except RemoteBotError as error:
            if error.kind in ("unreachable", "closed"):
                raise GameFailed(str(error)) from None
            self.fallbacks += 1
            chosen = min(a.id for a in view.legal_actions)
            if self.name not in self.said:
                self.said.add(self.name)
                _say(f"{error}; played the lowest legal id instead (counted as fallbacks in {RESULTS})")
        self.decisions += 1
        self.seconds += time.perf_counter() - start
        return chosen


# ------------------------------------------------------------------------------- the service


class GameFailed(RuntimeError):
    """A game could not be played to its end."""


async def list_tables(client: AsyncGostopClient) -> dict[tuple[str, int], Rules]:
    """Every (preset, players) the server offers, with its rules."""
    return {(rs.preset, rs.players): rules_from_pb(rs.rules) for rs in await client.list_rule_sets()}


async def play_game(
    client: AsyncGostopClient, spec: GameSpec, deal: pb.Deal | None, players: Sequence[Player],
) -> dict[str, Any]:
    """Create the game of ``spec`` (with the explicit ``deal``, or from the deal seed when there is
    none) and play every seat through the API, each with its own token, to the end of the round;
    the game's record."""
    start = time.perf_counter()
    game = await client.create_game(spec.preset, spec.players, seed=spec.deal_seed, rounds=1, deal=deal)
    try:
        assert game.view is not None
        current: pb.GameView = game.view  # the spectator's view
        version = game.version
        actions = conflicts = 0
        while current.phase != pb.PHASE_OVER:
            seat = current.to_move
            if current.viewer != seat:  # the seat to move reads its own view, with its legal actions
                current = await client.get_game(game, seat)
                version = current.version
                continue
            if not current.legal_actions:
                raise GameFailed(f"game {game.game_id}: seat {seat} is to move without legal actions")
            if actions >= MAX_ACTIONS:
                raise GameFailed(f"game {game.game_id}: no end after {actions} actions")
            chosen = await players[seat].choose(current)
            if chosen not in {a.id for a in current.legal_actions}:
                raise GameFailed(f"game {game.game_id}: bot {players[seat].name} chose an illegal action {chosen}")
            try:
                result = await client.submit_action(game, seat, chosen, expected_version=version,
                                                    request_id=f"s{seat}-v{version}")
            except StaleVersion:
                conflicts += 1  # the game moved on without us: re-read it and decide again
                current = await client.get_game(game, seat)
                version = current.version
                continue
            actions += 1
            current, version = result.view, result.version
        if not current.HasField("settlement"):
            current = await client.get_game(game)
    finally:
        client.games.pop(game.game_id, None)  # the client need not remember finished games
    settlement = current.settlement
    winner = settlement.winner
    return {
        "key": spec.key, "matchup": spec.matchup, "preset": spec.preset, "players": spec.players,
        "lineup": list(spec.lineup), "deal_index": spec.deal_index, "deal_seed": spec.deal_seed,
        "rotation": spec.rotation, "seats": list(spec.seats), "explicit_deal": deal is not None,
        "outcome": settlement.outcome, "reason": settlement.reason, "winner": winner,
        "winner_bot": spec.seats[winner] if winner >= 0 else None, "points": list(settlement.points),
        "game_id": game.game_id, "version": version, "actions": actions, "conflicts": conflicts,
        "decisions": [p.decisions for p in players], "decide_ms": [round(1000 * p.seconds, 3) for p in players],
        "fallbacks": [getattr(p, "fallbacks", 0) for p in players],
        "seconds": round(time.perf_counter() - start, 4),
    }


# -------------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Options:
    bots: tuple[str, ...]
    presets: tuple[str, ...]
    players: tuple[int, ...]
    games: int
    out: Path
    parallel: int = 8
    seed: int = 0
    server: str = ""
    api_key: str = ""
    operator_key: str = ""
    tls: bool = False
    mcts_millis: float | None = None
    workers: int = 0
    """Processes of the pool for CPU-heavy bots (0: one per CPU)."""
    max_games: int = 0
    """Play at most this many new games in this run (0: all); the rest is left for a later run."""
    remote_bots: tuple[tuple[str, str], ...] = ()
    """(NAME, HOST:PORT) of the BotService servers the bots ``remote:NAME`` are."""
    remote_deadline_ms: int = 2000
    """Milliseconds a remote bot has per decision."""


@dataclass
class RunSummary:
    planned: int
    skipped: int
    """Already in results.jsonl when the run began."""
    played: int
    failed: int
    created: int
    """Games created (CreateGame calls) by this run."""
    wall_seconds: float
    report: dict[str, Any] | None = None
    """None when the run was interrupted (the report is not rendered then: ``--report-only``)."""
    interrupted: bool = False
    """The run was stopped (``stop``) before it played every game it meant to."""

    @property
    def saved(self) -> int:
        """Games of the tournament in results.jsonl: those found there and those played now."""
        return self.skipped + self.played


class ResultWriter:
    """Appends one JSON line per finished game, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", encoding="utf-8")

    def write(self, record: Mapping[str, Any]) -> None:
        self.file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


@dataclass
class _Running:
    """The in-process server of a run without ``--server``."""

    server: Any
    operator_key: str


async def _start_local_server() -> _Running:
    from gostop.service.embedded import local_config, operator_key_of
    from gostop.service.server import Server

    config = local_config()
    server = Server(config)
    await server.start()
    return _Running(server, operator_key_of(config))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Stopped(Exception):
    """Raised in the task group of the games when the run is asked to stop."""


def _start_pool(workers: int) -> tuple[concurrent.futures.ProcessPoolExecutor, list[asyncio.Future[None]]]:
    """A process pool of ``workers`` spawned processes, each started (importing the bots) by a
    warm-up task: the pool and those tasks.

    The processes are started with SIGINT ignored, which they keep: Ctrl-C at the terminal signals
    the whole foreground process group, and the pool's processes must leave it to the tournament,
    which stops them itself, instead of each dying with a ``KeyboardInterrupt`` traceback (and
    breaking the pool under the games in flight). ``ProcessPoolExecutor`` spawns a process on
    ``submit`` while fewer than ``workers`` are idle, so submitting ``workers`` warm-ups at once
    starts them all here. (A Ctrl-C in the few milliseconds of the spawns is lost.)
    """
    # spawn, not fork: the parent already runs gRPC threads.
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    loop = asyncio.get_running_loop()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
    try:
        warm = [loop.run_in_executor(pool, _warm_up) for _ in range(workers)]
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return pool, warm


# ------------------------------------------------------------------------- the run's parts


def _remote_addresses(options: Options) -> dict[str, str]:
    """NAME -> HOST:PORT of the remote bots; ``ValueError`` when a ``remote:NAME`` bot has none."""
    addresses = dict(options.remote_bots)
    for spec in options.bots:
        target = remote_target(spec)
        if target is not None and target[0] not in addresses:
            raise ValueError(f"bot {spec!r}: no address for the remote bot {target[0]!r} (pass --remote-bot "
                             f"{target[0]}=HOST:PORT, or set GOSTOP_REMOTE_BOTS)")
    return addresses


def _identities(options: Options) -> tuple[str, dict[str, BotIdentity]]:
    """The run's id (kept when the run is resumed) and what each bot is (name, options, code
    version), saved for the ladder (``gostop.tools.ladder``): every record names them, so a game
    is counted once and a changed bot is a new entry."""
    from gostop.tools.ladder import bot_identity, run_id_of, save_identities

    run_id = run_id_of(options.out)
    identities = {spec: bot_identity(spec, _bot_options(spec, options.mcts_millis)) for spec in options.bots}
    save_identities(options.out, identities.values())
    return run_id, identities


async def _connect(options: Options, stack: contextlib.AsyncExitStack) -> AsyncGostopClient:
    """A client of the server the options name, or of an in-process server started for the run;
    both are closed with ``stack``."""
    if options.server:
        client = AsyncGostopClient(options.server, tls=options.tls, api_key=options.api_key or None,
                                   operator_key=options.operator_key or None)
    else:
        local = await _start_local_server()
        stack.push_async_callback(local.server.stop, 0)
        client = AsyncGostopClient(f"127.0.0.1:{local.server.port}", operator_key=local.operator_key)
    stack.push_async_callback(client.close)
    return client


@dataclass
class _Plan:
    """The games of the tournament on the tables the server offers, and those this run plays."""

    offered: dict[tuple[str, int], Rules]
    specs: list[GameSpec]
    todo: list[GameSpec]
    skipped: int
    """Games of the plan already in the results file."""


async def _plan_run(options: Options, client: AsyncGostopClient, run_id: str, done: Set[str]) -> _Plan:
    """Plan the tournament on the tables the server offers, save its settings, and leave out the
    games already recorded (and those past ``max_games``)."""
    offered = await list_tables(client)
    tables = []
    for preset in options.presets:
        for players in options.players:
            if (preset, players) in offered:
                tables.append((preset, players))
            else:
                _say(f"skipping {preset} with {players} players: the server does not offer it")
    if not tables:
        raise ValueError("no preset is offered at the requested player counts")
    specs = plan(options.bots, tables, options.games, options.seed)
    (options.out / SETTINGS_JSON).write_text(json.dumps(_settings(options, tables, run_id), indent=2) + "\n")
    todo = [s for s in specs if s.key not in done]
    skipped = len(specs) - len(todo)
    if options.max_games:
        todo = todo[:options.max_games]
    return _Plan(offered, specs, todo, skipped)


class _Seating:
    """The player of each seat of a game: a remote bot, a task of the process pool, or in-line."""

    def __init__(self, options: Options, remotes: Mapping[str, RemoteBot],
                 pool: concurrent.futures.Executor | None) -> None:
        self.options = options
        self.remotes = remotes
        self.pool = pool
        self.said: set[str] = set()
        """Remote bots whose first fallback was said."""

    def players(self, spec: GameSpec) -> list[Player]:
        out: list[Player] = []
        for seat, name in enumerate(spec.seats):
            seed = derive_seed(spec.deal_seed, spec.rotation, seat)
            bot_options = _bot_options(name, self.options.mcts_millis)
            if name in self.remotes:
                out.append(RemotePlayer(name, self.remotes[name], seed, self.options.remote_deadline_ms, self.said))
            elif _heavy(name) and self.pool is not None:
                out.append(PoolPlayer(name, seed, bot_options, self.pool))
            else:
                out.append(InlinePlayer(name, seed, bot_options))
        return out


def _open_remotes(options: Options, addresses: Mapping[str, str],
                  stack: contextlib.AsyncExitStack) -> dict[str, RemoteBot]:
    """Spec -> its remote bot, shared by every game of the run (closed with ``stack``)."""
    remotes: dict[str, RemoteBot] = {}
    for spec in options.bots:
        if (target := remote_target(spec)) is not None:
            remotes[spec] = RemoteBot(target[0], addresses[target[0]], options=target[1])
            stack.callback(remotes[spec].close)
    return remotes


async def _open_pool(options: Options, stack: contextlib.AsyncExitStack) -> concurrent.futures.Executor:
    """The started process pool of the heavy bots (shut down with ``stack``)."""
    pool, warm = _start_pool(options.workers or os.cpu_count() or 1)
    stack.callback(pool.shutdown, wait=True, cancel_futures=True)
    await asyncio.gather(*warm)
    return pool


class _Recorder:
    """Appends each finished game's record to the results file, says each failure, and moves the
    progress bar."""

    def __init__(self, path: Path, run_id: str, identities: Mapping[str, BotIdentity]) -> None:
        self.writer = ResultWriter(path)
        self.run_id = run_id
        self.identities = identities
        self.bar: Any = None
        self.played = self.failed = 0

    def show_progress(self, work: _Plan) -> None:
        from tqdm import tqdm  # type: ignore[import-untyped]

        self.bar = tqdm(total=len(work.specs), initial=work.skipped, unit="game", desc="tournament",
                        dynamic_ncols=True, mininterval=0.5, smoothing=0.05)

    def played_game(self, spec: GameSpec, record: dict[str, Any]) -> None:
        record.update(run_id=self.run_id, bot_ids=[self.identities[name].id for name in spec.seats],
                      ended_at=round(time.time(), 3))
        self.writer.write(record)
        self.played += 1
        if self.bar is not None:
            self.bar.update(1)

    def failed_game(self, spec: GameSpec, error: Exception) -> None:
        self.failed += 1
        message = f"game {spec.key} failed: {type(error).__name__}: {error}"
        if self.bar is not None:
            self.bar.write(message, file=sys.stderr)
        else:
            _say(message)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.writer.close()


class _Games:
    """Plays the games of a plan, ``parallel`` at a time, until they are done or the run is stopped."""

    def __init__(self, client: AsyncGostopClient, offered: Mapping[tuple[str, int], Rules],
                 seating: _Seating, recorder: _Recorder) -> None:
        self.client = client
        self.offered = offered
        self.seating = seating
        self.recorder = recorder
        self.explicit = bool(client.operator_key)
        """With an operator key the deals are explicit, so every rotation plays the same deal."""
        self.deals: dict[tuple[str, int, int], pb.Deal] = {}
        self.created = 0

    async def run(self, todo: Sequence[GameSpec], parallel: int, stop: asyncio.Event | None) -> None:
        """Play ``todo``; a fatal error (or ``stop``) cancels the games in flight."""
        queue = iter(todo)
        try:
            async with asyncio.TaskGroup() as group:
                watcher = group.create_task(self._watch(stop)) if stop is not None else None
                workers = [group.create_task(self._work(queue)) for _ in range(max(1, parallel))]
                await asyncio.wait(workers)
                if watcher is not None:
                    watcher.cancel()
        except ExceptionGroup as errors:
            fatal = [e for e in errors.exceptions if not isinstance(e, _Stopped)]
            if fatal:
                raise fatal[0] from None

    @staticmethod
    async def _watch(stop: asyncio.Event) -> None:
        await stop.wait()
        raise _Stopped

    async def _work(self, queue: Iterator[GameSpec]) -> None:
        for spec in queue:
            deal = self._deal(spec)
            self.created += 1
            try:
                record = await play_game(self.client, spec, deal, self.seating.players(spec))
            except (Unauthenticated, PermissionDenied):
                raise  # wrong keys: no game can be created, stop the run
            except (GameFailed, GostopError) as error:
                self.recorder.failed_game(spec, error)
                continue
            self.recorder.played_game(spec, record)

    def _deal(self, spec: GameSpec) -> pb.Deal | None:
        """The explicit deal of ``spec`` (one per preset, players and deal seed), or None."""
        if not self.explicit:
            return None
        key = (spec.preset, spec.players, spec.deal_seed)
        if key not in self.deals:
            self.deals[key] = deal_to_pb(make_deal(self.offered[spec.preset, spec.players], spec.deal_seed))
        return self.deals[key]


# -------------------------------------------------------------------------------- the run


async def run_tournament(
    options: Options, *, progress: bool = True, client: AsyncGostopClient | None = None,
    stop: asyncio.Event | None = None,
) -> RunSummary:
    """Play every game of the tournament not yet in ``results.jsonl``, then write the report.

    ``client`` (tests) replaces the connection the options describe (its operator key, if any,
    makes the deals explicit). Setting ``stop`` (``gostop tournament`` sets it on Ctrl-C) ends the
    run early: the games in flight are abandoned (a rerun plays them), the pool and the in-process
    server are stopped, no report is written, and the summary says ``interrupted``."""
    started = time.perf_counter()
    addresses = _remote_addresses(options)
    options.out.mkdir(parents=True, exist_ok=True)
    run_id, identities = _identities(options)
    done = {r["key"] for r in load_results(options.out / RESULTS)}
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await _connect(options, stack)
        remotes = _open_remotes(options, addresses, stack)
        work = await _plan_run(options, client, run_id, done)
        if not client.operator_key:
            _say("no operator key: the server deals every game from its own random seed, so the deals are "
                 "not duplicated across rotations (pass --operator-key for duplicate deals)")
        heavy = bool(work.todo) and any(_heavy(b) for b in options.bots)
        pool = await _open_pool(options, stack) if heavy else None
        recorder = _Recorder(options.out / RESULTS, run_id, identities)
        stack.callback(recorder.close)
        if progress:
            recorder.show_progress(work)
        games = _Games(client, work.offered, _Seating(options, remotes, pool), recorder)
        await games.run(work.todo, options.parallel, stop)
    interrupted = stop is not None and stop.is_set()
    report = None if interrupted else write_report(options.out)
    return RunSummary(len(work.specs), work.skipped, recorder.played, recorder.failed, games.created,
                      time.perf_counter() - started, report, interrupted)


def _settings(options: Options, tables: Sequence[tuple[str, int]], run_id: str) -> dict[str, Any]:
    """``tournament.json``: the settings of the run, with the tables it plays (the report of an
    interrupted run recomputes its plan from them: ``plan.planned_keys``) and its id (the ladder's)."""
    return {
        "run_id": run_id,
        "bots": list(options.bots), "presets": list(options.presets), "players": list(options.players),
        "games": options.games, "seed": options.seed, "parallel": options.parallel,
        "server": options.server or "in-process", "mcts_millis": options.mcts_millis,
        "tables": [list(table) for table in tables],
        "remote_bots": dict(options.remote_bots), "remote_deadline_ms": options.remote_deadline_ms,
    }
