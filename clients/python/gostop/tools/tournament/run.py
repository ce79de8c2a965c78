"""Running a tournament: the players (in-line or a process pool), one game through the service, and
the resumable run that appends every game's record to the results file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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
    addresses = dict(options.remote_bots)
    for spec in options.bots:
        target = remote_target(spec)
        if target is not None and target[0] not in addresses:
            raise ValueError(f"bot {spec!r}: no address for the remote bot {target[0]!r} (pass --remote-bot "
                             f"{target[0]}=HOST:PORT, or set GOSTOP_REMOTE_BOTS)")
    options.out.mkdir(parents=True, exist_ok=True)
    # For the ladder (gostop.tools.ladder): the run's id (kept when the run is resumed) and what each
    # bot is (name, options, code version), named in every record, so a game is counted once and a
    # changed bot is a new entry.
    from gostop.tools.ladder import bot_identity, run_id_of, save_identities

    run_id = run_id_of(options.out)
    identities = {spec: bot_identity(spec, _bot_options(spec, options.mcts_millis)) for spec in options.bots}
    save_identities(options.out, identities.values())
    results_path = options.out / RESULTS
    done = {r["key"] for r in load_results(results_path)}
    local: _Running | None = None
    own_client = client is None
    if client is None:
        if options.server:
            client = AsyncGostopClient(options.server, tls=options.tls, api_key=options.api_key or None,
                                       operator_key=options.operator_key or None)
        else:
            local = await _start_local_server()
            client = AsyncGostopClient(f"127.0.0.1:{local.server.port}", operator_key=local.operator_key)
    explicit = bool(client.operator_key)
    created = played = failed = 0
    specs: list[GameSpec] = []
    skipped = 0
    pool: concurrent.futures.ProcessPoolExecutor | None = None
    writer: ResultWriter | None = None
    bar: Any = None
    remotes: dict[str, RemoteBot] = {}  # spec -> its bot, shared by every game of the run
    said: set[str] = set()
    try:
        for spec in options.bots:
            if (target := remote_target(spec)) is not None:
                remotes[spec] = RemoteBot(target[0], addresses[target[0]], options=target[1])
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
        if not explicit:
            _say("no operator key: the server deals every game from its own random seed, so the deals are "
                 "not duplicated across rotations (pass --operator-key for duplicate deals)")
        if todo and any(_heavy(b) for b in options.bots):
            pool, warm = _start_pool(options.workers or os.cpu_count() or 1)
            await asyncio.gather(*warm)
        writer = ResultWriter(results_path)
        if progress:
            from tqdm import tqdm  # type: ignore[import-untyped]

            bar = tqdm(total=len(specs), initial=skipped, unit="game", desc="tournament", dynamic_ncols=True,
                       mininterval=0.5, smoothing=0.05)
        deals: dict[tuple[str, int, int], pb.Deal] = {}
        queue: Iterator[GameSpec] = iter(todo)

        def players_of(spec: GameSpec) -> list[Player]:
            out: list[Player] = []
            for seat, name in enumerate(spec.seats):
                seed = derive_seed(spec.deal_seed, spec.rotation, seat)
                bot_options = _bot_options(name, options.mcts_millis)
                if name in remotes:
                    out.append(RemotePlayer(name, remotes[name], seed, options.remote_deadline_ms, said))
                elif _heavy(name) and pool is not None:
                    out.append(PoolPlayer(name, seed, bot_options, pool))
                else:
                    out.append(InlinePlayer(name, seed, bot_options))
            return out

        async def worker() -> None:
            nonlocal created, played, failed
            assert client is not None and writer is not None
            for spec in queue:
                deal = None
                if explicit:
                    cache_key = (spec.preset, spec.players, spec.deal_seed)
                    if cache_key not in deals:
                        deals[cache_key] = deal_to_pb(make_deal(offered[spec.preset, spec.players], spec.deal_seed))
                    deal = deals[cache_key]
                created += 1
                try:
                    record = await play_game(client, spec, deal, players_of(spec))
                except (Unauthenticated, PermissionDenied):
                    raise  # wrong keys: no game can be created, stop the run
                except (GameFailed, GostopError) as error:
                    failed += 1
                    message = f"game {spec.key} failed: {type(error).__name__}: {error}"
                    if bar is not None:
                        bar.write(message, file=sys.stderr)
                    else:
                        _say(message)
                    continue
                record.update(run_id=run_id, bot_ids=[identities[name].id for name in spec.seats],
                              ended_at=round(time.time(), 3))
                writer.write(record)
                played += 1
                if bar is not None:
                    bar.update(1)

        async def watch(event: asyncio.Event) -> None:
            await event.wait()
            raise _Stopped

        try:
            async with asyncio.TaskGroup() as group:  # a fatal error (or a stop) cancels the other workers
                watcher = group.create_task(watch(stop)) if stop is not None else None
                workers = [group.create_task(worker()) for _ in range(max(1, options.parallel))]
                await asyncio.wait(workers)
                if watcher is not None:
                    watcher.cancel()
        except ExceptionGroup as errors:
            fatal = [e for e in errors.exceptions if not isinstance(e, _Stopped)]
            if fatal:
                raise fatal[0] from None
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for remote in remotes.values():
            remote.close()
        if own_client and client is not None:
            await client.close()
        if local is not None:
            await local.server.stop(0)
    interrupted = stop is not None and stop.is_set()
    report = None if interrupted else write_report(options.out)
    return RunSummary(len(specs), skipped, played, failed, created,
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
