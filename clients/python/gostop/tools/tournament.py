"""``gostop tournament``: duplicate-deal bot tournaments played through the game service.

Every game is one round played over gRPC exactly as a remote player would play it: each seat
reads its own view with its own seat token (``GetGame`` or the ``TurnResult`` of its last
action), its bot picks one of the legal actions, and the seat submits it with the expected
version and a request id, through ``AsyncGostopClient`` (which retries ``UNAVAILABLE`` with the
same request id); ``ABORTED`` (a stale version) re-reads the game and decides again. Cheap bots
decide on the event loop; CPU-heavy ones (``mcts``) in a process pool.

**Matchups.** For each preset and each table size n, the *lineups* are the multisets of n bots
from ``--bots`` that use min(n, number of bots) distinct bots: with at least n bots, every
combination of n distinct bots (each pair in 2-player games); with fewer bots than seats, every
way of filling the table in which every bot sits (``random, greedy`` at 3 seats gives
``random+random+greedy`` and ``random+greedy+greedy``).

**Duplicate deals.** Deal i of a preset and table size is generated from a seed derived from
``--seed``: the engine deals it (``new_round``) and the cards as dealt (hands, floor, stock
order, dealer; before bonus cards are resolved) become an explicit ``Deal``, which
``CreateGame`` takes with an operator key. Each lineup plays the deal once per rotation of the
lineup over the seats, so every bot holds every hand of the deal and the luck of the cards
cancels. The same deals are used by every lineup of a preset and table size.

**Results** stream to ``results.jsonl`` (one JSON object per finished game); a run with the same
arguments and ``--out`` skips the games already there (key: matchup, deal seed, rotation). The
report (``report.json``, ``report.csv``, ``report.png`` and a table on the terminal) is built from
that file; ``--report-only`` re-renders it.

>>> lineups(("random", "greedy", "mcts"), 2)
[('random', 'greedy'), ('random', 'mcts'), ('greedy', 'mcts')]
>>> lineups(("random", "greedy"), 3)
[('random', 'random', 'greedy'), ('random', 'greedy', 'greedy')]
>>> rotate(("a", "b", "c"), 1)
('b', 'c', 'a')
>>> tuple(round(x, 3) for x in wilson(70, 100))
(0.604, 0.781)
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import csv
import itertools
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from gostop.bots.arena import wilson as wilson
from gostop.bots.schedule import deal_seed, derive_seed, rotate
from gostop.client import AsyncGostopClient, GostopError, PermissionDenied, StaleVersion, Unauthenticated
from gostop.engine import Deal, Rules, action_id, new_round
from gostop.engine.events import BonusCaptured, Dealt
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import deal_to_pb, rules_from_pb, view_from_pb

RESULTS: Final = "results.jsonl"
REPORT_JSON: Final = "report.json"
REPORT_CSV: Final = "report.csv"
REPORT_PNG: Final = "report.png"
SETTINGS_JSON: Final = "tournament.json"

HEAVY_BOTS: Final = frozenset({"mcts"})
"""Bots whose decisions run in the process pool (CPU-heavy; the event loop must not wait on them)."""

MAX_ACTIONS: Final = 2000
"""A round never takes this many actions; more means a bug (the game is abandoned as failed)."""

Z95: Final = 1.959963984540054


# ------------------------------------------------------------------------------------- plan


def lineups(bots: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """The bot lineups of an n-seat table (see the module documentation)."""
    distinct = min(players, len(set(bots)))
    out = []
    for combo in itertools.combinations_with_replacement(list(dict.fromkeys(bots)), players):
        if len(set(combo)) == distinct:
            out.append(combo)
    return out


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game of the tournament: a lineup at a table, one deal, one rotation."""

    preset: str
    players: int
    lineup: tuple[str, ...]
    deal_index: int
    deal_seed: int
    rotation: int

    @property
    def matchup(self) -> str:
        return matchup_name(self.preset, self.players, self.lineup)

    @property
    def key(self) -> str:
        return result_key(self.matchup, self.deal_seed, self.rotation)

    @property
    def seats(self) -> tuple[str, ...]:
        return rotate(self.lineup, self.rotation)


def matchup_name(preset: str, players: int, lineup: Sequence[str]) -> str:
    return f"{preset}/{players}p/{'+'.join(lineup)}"


def result_key(matchup: str, seed: int, rotation: int) -> str:
    return f"{matchup}|{seed}|{rotation}"


def plan(
    bots: Sequence[str], tables: Sequence[tuple[str, int]], games: int, seed: int,
) -> list[GameSpec]:
    """Every game of a tournament, deal by deal (so that an interrupted run is balanced)."""
    out = []
    for index in range(games):
        for preset, players in tables:
            ds = deal_seed(seed, preset, players, index)
            for lineup in lineups(bots, players):
                for rotation in range(players):
                    out.append(GameSpec(preset, players, lineup, index, ds, rotation))
    return out


# -------------------------------------------------------------------------------- the deals


def make_deal(rules: Rules, seed: int) -> Deal:
    """The deal ``new_round(rules, seed)`` plays, as an explicit ``Deal``: the cards as dealt
    (before bonus cards are resolved), the stock top first, and the dealer.

    >>> from gostop.engine import Rules, new_round
    >>> rules = Rules.preset("standard", 2)
    >>> new_round(rules, 11, deal=make_deal(rules, 11))[0] == new_round(rules, 11)[0]
    True
    """
    state, events = new_round(rules, seed)
    last = max(i for i, e in enumerate(events) if isinstance(e, Dealt))
    dealt = events[last]
    assert isinstance(dealt, Dealt)
    # Every bonus card resolved at the deal was replaced by the top card of the stock, in order.
    drawn = tuple(e.replacement for e in events[last:] if isinstance(e, BonusCaptured) and e.replacement >= 0)
    return Deal(hands=dealt.hands, floor=dealt.floor, stock=drawn + state.stock, dealer=dealt.dealer)


# -------------------------------------------------------------------------------- the bots


def _bot_options(name: str, mcts_millis: float | None) -> dict[str, Any]:
    # CPU time, not wall-clock: the pool's processes share the machine with each other and the
    # event loop, and a bot's strength should not depend on how loaded the machine is.
    return {"cpu_millis": mcts_millis} if name == "mcts" and mcts_millis is not None else {}


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
                raise GameFailed(f"game {game.id}: seat {seat} is to move without legal actions")
            if actions >= MAX_ACTIONS:
                raise GameFailed(f"game {game.id}: no end after {actions} actions")
            chosen = await players[seat].choose(current)
            if chosen not in {a.id for a in current.legal_actions}:
                raise GameFailed(f"game {game.id}: bot {players[seat].name} chose an illegal action {chosen}")
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
        client.games.pop(game.id, None)  # the client need not remember finished games
    settlement = current.settlement
    winner = settlement.winner
    return {
        "key": spec.key, "matchup": spec.matchup, "preset": spec.preset, "players": spec.players,
        "lineup": list(spec.lineup), "deal_index": spec.deal_index, "deal_seed": spec.deal_seed,
        "rotation": spec.rotation, "seats": list(spec.seats), "explicit_deal": deal is not None,
        "outcome": settlement.outcome, "reason": settlement.reason, "winner": winner,
        "winner_bot": spec.seats[winner] if winner >= 0 else None, "points": list(settlement.points),
        "game_id": game.id, "version": version, "actions": actions, "conflicts": conflicts,
        "decisions": [p.decisions for p in players], "decide_ms": [round(1000 * p.seconds, 3) for p in players],
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


def load_results(path: Path) -> list[dict[str, Any]]:
    """The records of a results file; a record cut off by a kill (no final newline) is dropped
    from the file, so that appending continues on a clean line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as f:
            f.truncate(end)
        data = data[:end]
    out = []
    for line in data.decode().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


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


async def run_tournament(
    options: Options, *, progress: bool = True, client: AsyncGostopClient | None = None,
) -> RunSummary:
    """Play every game of the tournament not yet in ``results.jsonl``, then write the report.

    ``client`` (tests) replaces the connection the options describe (its operator key, if any,
    makes the deals explicit)."""
    started = time.perf_counter()
    options.out.mkdir(parents=True, exist_ok=True)
    results_path = options.out / RESULTS
    done = {r["key"] for r in load_results(results_path)}
    (options.out / SETTINGS_JSON).write_text(json.dumps(_settings(options), indent=2) + "\n")
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
    try:
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
        todo = [s for s in specs if s.key not in done]
        skipped = len(specs) - len(todo)
        if options.max_games:
            todo = todo[:options.max_games]
        if not explicit:
            _say("no operator key: the server deals every game from its own random seed, so the deals are "
                 "not duplicated across rotations (pass --operator-key for duplicate deals)")
        if todo and any(b in HEAVY_BOTS for b in options.bots):
            workers = options.workers or os.cpu_count() or 1
            # spawn, not fork: the parent already runs gRPC threads.
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(pool, _warm_up) for _ in range(workers)))
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
                if name in HEAVY_BOTS and pool is not None:
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
                writer.write(record)
                played += 1
                if bar is not None:
                    bar.update(1)

        try:
            async with asyncio.TaskGroup() as group:  # a fatal error cancels the other workers
                for _ in range(max(1, options.parallel)):
                    group.create_task(worker())
        except ExceptionGroup as errors:
            raise errors.exceptions[0] from None
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if own_client and client is not None:
            await client.close()
        if local is not None:
            await local.server.stop(0)
    report = write_report(options.out)
    return RunSummary(len(specs), skipped, played, failed, created,
                      time.perf_counter() - started, report)


def _settings(options: Options) -> dict[str, Any]:
    return {
        "bots": list(options.bots), "presets": list(options.presets), "players": list(options.players),
        "games": options.games, "seed": options.seed, "parallel": options.parallel,
        "server": options.server or "in-process", "mcts_millis": options.mcts_millis,
    }


# ------------------------------------------------------------------------------ statistics


_T975: Final = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
                2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
                2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (a table to 30, then the
    Cornish-Fisher expansion around the normal quantile).

    >>> t975(1), round(t975(60), 3), round(t975(10**6), 3)
    (12.706, 2.0, 1.96)
    """
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def clustered_mean(samples: Iterable[tuple[Any, float]]) -> tuple[float, float, float, int]:
    """Mean of values grouped in clusters, with a 95 % CI from the cluster-robust standard error
    (t with clusters − 1 degrees of freedom): ``(mean, low, high, clusters)``; NaN bounds with
    fewer than two clusters.

    >>> m, lo, hi, g = clustered_mean([(1, 1.0), (2, 3.0), (3, 2.0), (4, 2.0)])
    >>> m, round(lo, 3), round(hi, 3), g
    (2.0, 0.701, 3.299, 4)
    """
    sums: dict[Any, float] = defaultdict(float)
    counts: dict[Any, int] = defaultdict(int)
    for cluster, value in samples:
        sums[cluster] += value
        counts[cluster] += 1
    n = sum(counts.values())
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    mean = sum(sums.values()) / n
    g = len(sums)
    if g < 2:
        return (mean, math.nan, math.nan, g)
    var = g / (g - 1) * sum((sums[c] - mean * counts[c]) ** 2 for c in sums) / (n * n)
    half = t975(g - 1) * math.sqrt(var)
    return (mean, mean - half, mean + half, g)


# ---------------------------------------------------------------------------------- report


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _ranks(points: Sequence[int]) -> list[int]:
    """Rank 1 for the most points; equal points share a rank."""
    return [1 + sum(1 for q in points if q > p) for p in points]


def _ratings(records: Sequence[Mapping[str, Any]], bots: Sequence[str]) -> dict[str, tuple[float, float, float]]:
    """openskill Plackett-Luce ratings: each round's seats ranked by points; a bot holding several
    seats of a round gets the mean of their updates. ``bot → (mu, sigma, ordinal)``."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {b: model.rating(name=b) for b in bots}
    for r in records:
        seats: list[str] = r["seats"]
        teams = [[model.rating(mu=ratings[b].mu, sigma=ratings[b].sigma, name=b)] for b in seats]
        new = model.rate(teams, ranks=[float(x) for x in _ranks(r["points"])])
        updates: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for b, team in zip(seats, new, strict=True):
            updates[b].append((team[0].mu, team[0].sigma))
        for b, ups in updates.items():
            ratings[b] = model.rating(mu=statistics.fmean(u[0] for u in ups),
                                      sigma=statistics.fmean(u[1] for u in ups), name=b)
    return {b: (r.mu, r.sigma, r.ordinal()) for b, r in ratings.items()}


def _order(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record["deal_index"], record["matchup"], record["rotation"])


def build_report(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report of a set of results (see docs/tournaments.md for each figure)."""
    unique: dict[str, Mapping[str, Any]] = {}
    for r in records:
        unique.setdefault(r["key"], r)
    by_group: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for r in sorted(unique.values(), key=_order):
        by_group[r["preset"], r["players"]].append(r)
    groups = []
    for (preset, players), rows in sorted(by_group.items()):
        bots = sorted({b for r in rows for b in r["seats"]})
        ratings = _ratings(rows, bots)
        entries = []
        for bot in bots:
            wins = draws = losses = decisions = 0
            ms = 0.0
            points: list[tuple[Any, float]] = []
            for r in rows:
                for seat, name in enumerate(r["seats"]):
                    if name != bot:
                        continue
                    if r["winner"] < 0:
                        draws += 1
                    elif r["winner"] == seat:
                        wins += 1
                    else:
                        losses += 1
                    points.append((r["deal_seed"], float(r["points"][seat])))
                    decisions += r["decisions"][seat]
                    ms += r["decide_ms"][seat]
            mean, lo, hi, _ = clustered_mean(points)
            wlo, whi = wilson(wins, wins + losses)
            mu, sigma, ordinal = ratings[bot]
            entries.append({
                "bot": bot, "rounds": wins + draws + losses, "wins": wins, "draws": draws, "losses": losses,
                "win_rate": _num(wins / (wins + losses)) if wins + losses else None,
                "win_ci": [_num(wlo), _num(whi)], "points_mean": _num(mean), "points_ci": [_num(lo), _num(hi)],
                "mu": _num(mu), "sigma": _num(sigma), "ordinal": _num(ordinal),
                "decide_ms": _num(ms / decisions) if decisions else None,
            })
        entries.sort(key=lambda e: -(e["ordinal"] or 0.0))
        groups.append({
            "preset": preset, "players": players, "games": len(rows),
            "deals": len({r["deal_seed"] for r in rows}),
            "outcomes": dict(sorted(_count(r["outcome"] for r in rows).items())),
            "bots": entries, "head_to_head": _head_to_head(rows) if players == 2 else [],
        })
    return {"results": RESULTS, "games": len(unique), "groups": groups}


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return dict(out)


def _head_to_head(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each 2-player lineup of two different bots, from the first bot's side."""
    by_lineup: dict[tuple[str, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        lineup = tuple(r["lineup"])
        if len(set(lineup)) == 2:
            by_lineup[lineup].append(r)
    out = []
    for (a, b), games in sorted(by_lineup.items()):
        a_wins = sum(1 for r in games if r["winner"] >= 0 and r["seats"][r["winner"]] == a)
        b_wins = sum(1 for r in games if r["winner"] >= 0 and r["seats"][r["winner"]] == b)
        draws = len(games) - a_wins - b_wins
        lo, hi = wilson(a_wins, a_wins + b_wins)
        mean, plo, phi, _ = clustered_mean((r["deal_seed"], float(r["points"][r["seats"].index(a)])) for r in games)
        out.append({
            "a": a, "b": b, "rounds": len(games), "a_wins": a_wins, "b_wins": b_wins, "draws": draws,
            "a_win_rate": _num(a_wins / (a_wins + b_wins)) if a_wins + b_wins else None,
            "a_win_ci": [_num(lo), _num(hi)], "a_points_mean": _num(mean), "a_points_ci": [_num(plo), _num(phi)],
        })
    return out


CSV_COLUMNS: Final = ("preset", "players", "bot", "rounds", "wins", "draws", "losses", "win_rate", "win_low",
                      "win_high", "points_mean", "points_low", "points_high", "mu", "sigma", "ordinal",
                      "decide_ms")


def _csv_rows(report: Mapping[str, Any]) -> Iterator[list[Any]]:
    for g in report["groups"]:
        for e in g["bots"]:
            yield [g["preset"], g["players"], e["bot"], e["rounds"], e["wins"], e["draws"], e["losses"],
                   e["win_rate"], e["win_ci"][0], e["win_ci"][1], e["points_mean"], e["points_ci"][0],
                   e["points_ci"][1], e["mu"], e["sigma"], e["ordinal"], e["decide_ms"]]


def _pct(x: float | None) -> str:
    return "  -  " if x is None else f"{100 * x:5.1f}"


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2f}"


def format_report(report: Mapping[str, Any]) -> str:
    """The terminal tables."""
    lines = [f"{report['games']} games"]
    for g in report["groups"]:
        outcomes = ", ".join(f"{k} {v}" for k, v in g["outcomes"].items())
        lines += ["", f"{g['preset']}, {g['players']} players: {g['games']} games on {g['deals']} deals ({outcomes})"]
        header = (f"  {'bot':<10} {'rounds':>6} {'wins':>6} {'draws':>6} {'losses':>6}  {'win %':>5} {'(95% CI)':<13}"
                  f" {'pts/round':>9} {'(95% CI)':<19} {'mu':>6} {'sigma':>6} {'ordinal':>7} {'ms/dec':>7}")
        lines += [header, "  " + "-" * (len(header) - 2)]
        for e in g["bots"]:
            ci = f"({_pct(e['win_ci'][0]).strip()}-{_pct(e['win_ci'][1]).strip()})"
            pci = f"({_pts(e['points_ci'][0])}..{_pts(e['points_ci'][1])})"
            ms = "-" if e["decide_ms"] is None else f"{e['decide_ms']:.2f}"
            lines.append(
                f"  {e['bot']:<10} {e['rounds']:>6} {e['wins']:>6} {e['draws']:>6} {e['losses']:>6}  "
                f"{_pct(e['win_rate'])} {ci:<13} {_pts(e['points_mean']):>9} {pci:<19} {e['mu']:>6.2f} "
                f"{e['sigma']:>6.3f} {e['ordinal']:>7.2f} {ms:>7}")
        for h in g["head_to_head"]:
            ci = f"{_pct(h['a_win_ci'][0]).strip()}-{_pct(h['a_win_ci'][1]).strip()}"
            lines.append(
                f"  head to head {h['a']} vs {h['b']}: {h['a_wins']}-{h['b_wins']}, {h['draws']} draws; "
                f"{h['a']} wins {_pct(h['a_win_rate']).strip()}% of decided rounds (95% CI {ci}), "
                f"{_pts(h['a_points_mean'])} points per round "
                f"(95% CI {_pts(h['a_points_ci'][0])}..{_pts(h['a_points_ci'][1])})")
    return "\n".join(lines)


def plot_report(report: Mapping[str, Any], path: Path) -> None:
    """``report.png``: points per round (95 % CI error bars) and win rate over decided rounds
    (Wilson 95 % CI), one bar per bot and preset/table size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels: list[str] = []
    means: list[float] = []
    perr: list[list[float]] = [[], []]
    rates: list[float] = []
    werr: list[list[float]] = [[], []]
    colors: list[Any] = []
    chance: list[float] = []
    palette = plt.get_cmap("tab10")
    names = sorted({e["bot"] for g in report["groups"] for e in g["bots"]})
    for g in report["groups"]:
        for e in sorted(g["bots"], key=lambda e: names.index(e["bot"])):
            labels.append(f"{e['bot']}\n{g['preset']} {g['players']}p")
            colors.append(palette(names.index(e["bot"]) % 10))
            mean = e["points_mean"] if e["points_mean"] is not None else 0.0
            lo, hi = e["points_ci"]
            means.append(mean)
            perr[0].append(mean - lo if lo is not None else 0.0)
            perr[1].append(hi - mean if hi is not None else 0.0)
            rate = e["win_rate"] if e["win_rate"] is not None else 0.0
            rates.append(100 * rate)
            werr[0].append(100 * (rate - e["win_ci"][0]))
            werr[1].append(100 * (e["win_ci"][1] - rate))
            chance.append(100 / g["players"])
    width = max(6.0, 1.1 * len(labels) + 2)
    fig, (left, right) = plt.subplots(1, 2, figsize=(2 * width, 4.8))
    x = list(range(len(labels)))
    left.bar(x, means, yerr=perr, color=colors, capsize=4, ecolor="dimgray")
    left.axhline(0, color="black", linewidth=0.8)
    left.set_ylabel("points per round")
    left.set_title("Points per round (95% CI, clustered by deal)")
    right.bar(x, rates, yerr=werr, color=colors, capsize=4, ecolor="dimgray")
    right.hlines(chance, [i - 0.45 for i in x], [i + 0.45 for i in x], colors="red", linestyles="dashed",
                 label="1 / players", zorder=3)
    right.set_ylim(0, 100)
    right.set_ylabel("win rate over decided rounds (%)")
    right.set_title("Win rate (Wilson 95% CI)")
    right.legend(loc="upper right")
    for ax in (left, right):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"gostop tournament: {report['games']} games")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: Path) -> dict[str, Any]:
    """Build the report from ``out/results.jsonl`` and write report.json, report.csv and report.png."""
    report = build_report(load_results(out / RESULTS))
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with (out / REPORT_CSV).open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for row in _csv_rows(report):
            w.writerow(["" if v is None else v for v in row])
    plot_report(report, out / REPORT_PNG)
    return report


# --------------------------------------------------------------------------- command line


def _names(text: str) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def _counts(text: str) -> tuple[int, ...]:
    try:
        out = tuple(dict.fromkeys(int(t) for t in text.split(",") if t.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not out or any(n not in (2, 3, 4) for n in out):
        raise argparse.ArgumentTypeError("player counts are 2, 3 or 4")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``gostop tournament`` flags."""
    parser.add_argument("--bots", type=_names, default=("random", "greedy"),
                        help="comma-separated bot names (random, greedy, mcts); default random,greedy")
    parser.add_argument("--presets", type=_names, default=("standard",), help="comma-separated presets")
    parser.add_argument("--players", type=_counts, default=(2,), help="comma-separated table sizes, e.g. 2,3")
    parser.add_argument("--games", type=int, default=100, help="deals per matchup (each played in every rotation)")
    parser.add_argument("--parallel", type=int, default=8, help="games played at once")
    parser.add_argument("--server", default="", help="HOST:PORT of a game server (default: an in-process server)")
    parser.add_argument("--api-key", default="", help="API key for CreateGame (when the server requires one)")
    parser.add_argument("--operator-key", default="", help="operator key (explicit deals)")
    parser.add_argument("--tls", action="store_true", help="connect to --server over TLS")
    parser.add_argument("--out", type=Path, default=Path("tournament"), help="directory for results and report")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals")
    parser.add_argument("--mcts-millis", type=float, default=None,
                        help="mcts budget per decision (ms of CPU time)")
    parser.add_argument("--workers", type=int, default=0, help="processes for mcts decisions (0: one per CPU)")
    parser.add_argument("--max-games", type=int, default=0,
                        help="stop after this many new games (a later run resumes); 0: play all")
    parser.add_argument("--report-only", action="store_true", help="only re-render the report from results.jsonl")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``gostop tournament`` from parsed arguments; the exit code."""
    out: Path = args.out
    if args.report_only:
        if not (out / RESULTS).exists():
            _say(f"no {RESULTS} in {out}")
            return 2
        print(format_report(write_report(out)))
        return 0
    from gostop.bots import BOT_NAMES

    unknown = [b for b in args.bots if b not in BOT_NAMES]
    if unknown:
        _say(f"unknown bot(s) {', '.join(unknown)}; known: {', '.join(BOT_NAMES)}")
        return 2
    if args.games < 1 or args.parallel < 1:
        _say("--games and --parallel must be at least 1")
        return 2
    if not args.server:
        # The in-process server logs every call at info level: keep only its problems.
        from gostop.service.logs import configure

        configure("auto", "warning")
    options = Options(
        bots=args.bots, presets=args.presets, players=args.players, games=args.games, out=out,
        parallel=args.parallel, seed=args.seed, server=args.server, api_key=args.api_key,
        operator_key=args.operator_key, tls=args.tls, mcts_millis=args.mcts_millis, workers=args.workers,
        max_games=args.max_games,
    )
    try:
        summary = asyncio.run(run_tournament(options, progress=not args.no_progress))
    except (Unauthenticated, PermissionDenied, ValueError) as error:
        _say(f"gostop tournament: {error}")
        return 2
    assert summary.report is not None
    print(format_report(summary.report))
    print(f"\n{summary.played} games played, {summary.skipped} already done, {summary.failed} failed, "
          f"of {summary.planned}; {summary.wall_seconds:.1f} s; results and report in {out}")
    return 1 if summary.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gostop tournament", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
