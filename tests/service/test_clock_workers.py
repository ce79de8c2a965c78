"""The turn clock with real bot-worker processes (docs/clock.md, "At the deadline"): two server
processes and two ``gostop bots serve`` workers on Redis and on a 3-master Redis Cluster; clocked
games whose people never act, so every decision is a timeout. One worker is SIGKILLed while it
holds a taken turn: the other claims it after the claim time, and every game still finishes with
contiguous versions, one commit per turn's request id, each step after the deal a ``PlayedForSeat``
of cause ``timeout``, and no move before its deadline (seen from outside by polling a few games,
and by the server's own clock in the views). Two regression tests pin bugs these tests found: the
clock could not deal the next round of a longer match (its PlayedForSeat had no action to write),
and a turn delivered twice was refused, never acknowledged, once it was stale."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gostop.service.bot_queue import shard_of
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import HOST, RedisClusterServers, RedisServer, RespError, command, free_port
from testkit.servers import OPERATOR, OPERATOR_KEY, ROOT, SECRET, Api, Game, ServerProcess, client, replay, wait_serving

# Not in make check: server and worker processes for about a minute each.
pytestmark = pytest.mark.slow

BOT_KEY = "bot-key-for-clock-worker-tests-0123"
CLAIM_IDLE_MS = 2000
GAMES = 30
SHARDS = 8
WATCHED = 4
"""Games polled every ``POLL_S`` to see, from outside, when each version appears."""
POLL_S = 0.05
MARGIN_MS = 20
"""Clock resolution allowed between this process's wall clock and the server's."""
FINISH_LIMIT_S = 90.0
REQUEST_ID = re.compile(r"^bot\.(act|next_round)\.(\d+)\.(\d+)$")


# ----------------------------------------------------------------------------- processes


@dataclass
class Deployment:
    """Two servers (one metrics port each) and two bot workers on one store."""

    servers: list[ServerProcess]
    metrics_ports: list[int]
    workers: dict[str, subprocess.Popen[bytes]]
    apis: list[Api] = field(default_factory=list)


def environment(redis_url: str) -> dict[str, str]:
    return {**os.environ, "GOSTOP_REDIS_URL": redis_url, "GOSTOP_TOKEN_SECRET": SECRET,
            "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY, "GOSTOP_BOT_KEYS": BOT_KEY, "GOSTOP_BOT_KEY": BOT_KEY,
            "GOSTOP_BOT_CLAIM_IDLE_MS": str(CLAIM_IDLE_MS), "GOSTOP_BOT_SHARDS": str(SHARDS),
            "GOSTOP_LOG_FORMAT": "json", "GOSTOP_METRICS_HOST": HOST, "PYTHONPATH": str(ROOT)}


async def start_server(redis_url: str, metrics_port: int, log_dir: Path) -> ServerProcess:
    """``gostop serve`` with the bot key and its metrics on ``metrics_port``."""
    port = free_port()
    log_path = log_dir / f"server-{port}.log"
    with open(log_path, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "serve", "--listen", f"{HOST}:{port}",
             "--metrics-port", str(metrics_port)],
            cwd=ROOT, env=environment(redis_url), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    server = ServerProcess(process, port, log_path)
    try:
        await wait_serving(port, process)
    except BaseException:
        server.stop()
        raise AssertionError(f"the server did not start:\n{server.output}") from None
    return server


def start_worker(server_port: int, redis_url: str, name: str, log_dir: Path) -> subprocess.Popen[bytes]:
    """``gostop bots serve`` as consumer ``name`` (its metrics off)."""
    with open(log_dir / f"{name}.log", "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "gostop", "bots", "serve", "--server", f"{HOST}:{server_port}",
             "--redis-url", redis_url, "--metrics-port", "0", "--consumer", name],
            cwd=ROOT, env=environment(redis_url), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=5)


@contextlib.asynccontextmanager
async def deployment(redis_url: str) -> AsyncIterator[Deployment]:
    """Two servers, worker ``a`` on the first and ``b`` on the second, all stopped on the way out."""
    with tempfile.TemporaryDirectory(prefix="gostop-clock-workers-") as tmp:
        logs = Path(tmp)
        running = Deployment([], [free_port(), free_port()], {})
        try:
            for port in running.metrics_ports:
                running.servers.append(await start_server(redis_url, port, logs))
            for name, server in zip("ab", running.servers, strict=True):
                running.workers[name] = start_worker(server.port, redis_url, name, logs)
                running.apis.append(client(server.port))
            yield running
            for name, worker in running.workers.items():
                assert worker.poll() in (None, -signal.SIGKILL), \
                    f"worker {name} exited:\n{(logs / f'{name}.log').read_text()}"
        finally:
            for worker in running.workers.values():
                stop_worker(worker)
            for api in running.apis:
                await api.channel.close()
            for server in running.servers:
                server.stop()


# ----------------------------------------------------------------------------- Redis


def nodes_of(url: str, cluster: RedisClusterServers | None) -> list[int]:
    """The ports of the store's Redis servers."""
    if cluster is not None:
        return [node.port for node in cluster.nodes]
    return [int(url.rsplit(":", 1)[1].split("/")[0])]


def on_node(port: int, *args: str) -> object:
    """A command on one node; None where a Cluster node answers MOVED (another node's key) or the
    group does not exist yet."""
    try:
        return command(port, *args)
    except RespError as exc:
        assert str(exc).startswith(("MOVED", "NOGROUP")), exc
        return None


def owners(ports: list[int], key: str) -> list[int]:
    """The nodes that serve ``key`` (one in a Cluster: the others answer MOVED)."""
    return [port for port in ports if on_node(port, "EXISTS", key) is not None]


def pending_of(streams: dict[str, list[int]], consumer: str) -> int:
    """Turns ``consumer`` took and has not acknowledged, over every shard's stream (stream -> its nodes)."""
    total = 0
    for stream, ports in streams.items():
        for port in ports:
            reply = on_node(port, "XPENDING", stream, "gostop-bot-workers", "-", "+", "100", consumer)
            total += len(reply) if isinstance(reply, list) else 0
    return total


def clock_holders(ports: list[int]) -> set[int]:
    """The nodes that hold a shard's clock (sorted set of scheduled deadlines) now."""
    return {port for port in ports for shard in range(SHARDS)
            if on_node(port, "EXISTS", f"gostop:clock:{{s{shard}}}") == 1}


# ----------------------------------------------------------------------------- games


def clock_settings() -> pb.ClockSettings:
    """1 s per decision, no bank, away only after 100 timeouts: every decision is a timeout."""
    return pb.ClockSettings(decision_ms=1000, bank_ms=0, away_after=100, auto_pause_ms=0)


async def create_game(api: Api, seed: int) -> Game:
    """A clocked 2-player game whose first round is played (operator seeds from ``seed`` up)."""
    for attempt in range(seed, seed + 50):
        req = pb.CreateGameRequest(preset="standard", players=2, seed=attempt, rounds=1, clock=clock_settings())
        out = await api.stub.CreateGame(req, metadata=OPERATOR)
        if out.view.phase != pb.PHASE_OVER:
            return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)
    raise AssertionError("no seed deals a round that is played")


@dataclass
class Seen:
    """A version of a watched game as polling first saw it: when (this process's wall ms) and its view."""

    version: int
    wall_ms: float
    view: pb.GameView


async def watch(api: Api, game: Game, stop: asyncio.Event) -> list[Seen]:
    """Poll ``game``'s spectator view every ``POLL_S`` until it is over; each version once."""
    seen: list[Seen] = []
    while not stop.is_set():
        view = (await api.get(game)).view
        wall = time.time() * 1000
        if not seen or view.version != seen[-1].version:
            seen.append(Seen(view.version, wall, view))
        if view.match.finished:
            return seen
        await asyncio.sleep(POLL_S)
    return seen


async def wait_finished(apis: list[Api], games: list[Game], limit: float) -> None:
    deadline = time.monotonic() + limit
    left = list(games)
    while left:
        views = [(await apis[i % len(apis)].get(g)).view for i, g in enumerate(left)]
        left = [g for g, v in zip(left, views, strict=True) if not v.match.finished]
        if left and time.monotonic() > deadline:
            stuck = {g.id: v.version for g, v in zip(left, views, strict=False)}
            raise AssertionError(f"{len(left)} games did not finish in {limit:.0f} s: {stuck}")
        await asyncio.sleep(0.25)


async def kill_when_holding(worker: subprocess.Popen[bytes], streams: dict[str, list[int]], name: str,
                            after: float) -> int:
    """SIGKILL ``worker`` once ``after`` seconds have passed and it holds a taken turn (looked at
    while it is stopped, so that it cannot acknowledge the turn in between); how many it held."""
    await asyncio.sleep(after)
    deadline = time.monotonic() + 20
    while True:
        assert worker.poll() is None, f"worker {name} exited"
        assert time.monotonic() < deadline, f"worker {name} never held a turn"
        worker.send_signal(signal.SIGSTOP)
        held = pending_of(streams, name)
        if held:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
            return held
        worker.send_signal(signal.SIGCONT)
        await asyncio.sleep(0.005)


# ----------------------------------------------------------------------------- checks


CLOCK_EVENTS = ("played_for_seat", "seat_away", "auto_play_set")


def engine_only(log: pb.GetGameLogResponse) -> pb.GetGameLogResponse:
    """``log`` without the clock's events (the engine's alone, as a replay computes them)."""
    out = pb.GetGameLogResponse()
    out.CopyFrom(log)
    for entry in out.entries:
        kept = [e for e in entry.events if e.WhichOneof("kind") not in CLOCK_EVENTS]
        del entry.events[:]
        entry.events.extend(kept)
    return out


def check_log(log: pb.GetGameLogResponse) -> int:
    """Every step after the deal is the clock's: contiguous versions, the turn's own request id
    (distinct), a ``PlayedForSeat`` of cause timeout for the entry's seat first; the steps."""
    replay(engine_only(log), 1)  # contiguous versions, and every step gives the engine's events
    steps = log.entries[1:]
    assert len({e.request_id for e in steps}) == len(steps), "one commit per request id"
    for entry in steps:
        matched = REQUEST_ID.match(entry.request_id)
        assert matched, f"version {entry.version}: request id {entry.request_id!r} is not a turn's"
        assert int(matched.group(2)) == entry.version - 1 and int(matched.group(3)) == entry.seat, entry.request_id
        played = [e.played_for_seat for e in entry.events if e.HasField("played_for_seat")]
        assert len(played) == 1 and entry.events[0].HasField("played_for_seat"), f"version {entry.version}"
        assert (played[0].seat, played[0].cause, played[0].policy) == (entry.seat, "timeout", "greedy")
        assert not any(e.HasField("seat_away") for e in entry.events), "away only after 100 timeouts"
    return len(steps)


def check_not_early(seen: list[Seen]) -> int:
    """No version of a watched game appeared before the previous version's deadline (outside: the
    wall time it was first seen; inside: its ``started_ms``, the commit's time by the server's
    clock). Polling sees every version (each lasts at least a decision); how many were checked."""
    assert [s.version for s in seen] == list(range(seen[0].version, seen[-1].version + 1)), "a version was missed"
    for before, after in itertools.pairwise(seen):
        deadline = before.view.clock.deadline_ms
        assert before.view.clock.seat >= 0 and deadline, f"version {before.version} has no deadline"
        assert after.wall_ms >= deadline - MARGIN_MS, \
            f"version {after.version} seen {deadline - after.wall_ms:.0f} ms before its deadline"
        if after.view.clock.seat >= 0:  # (a finished match's clock runs for nobody: no times)
            assert after.view.clock.started_ms >= deadline, f"version {after.version} committed early"
    return len(seen) - 1


def scrape(port: int) -> dict[str, float]:
    """The server's clock metrics: the lag histogram's count and sum, and timeout moves."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("gostop_clock_lag_seconds_count", "gostop_clock_lag_seconds_sum"):
                out[sample.name] = sample.value
            elif sample.name == "gostop_clock_moves_total" and sample.labels.get("cause") == "timeout":
                out["timeouts"] = out.get("timeouts", 0.0) + sample.value
            elif sample.name == "gostop_clock_lag_seconds_bucket" and sample.labels.get("le") == "0.0005":
                out["first_bucket"] = sample.value
    return out


# ----------------------------------------------------------------------------- the run


@dataclass
class Outcome:
    held: int
    """Turns the killed worker held when it died."""
    shards: set[int]
    clock_nodes: set[int]


async def run(redis_url: str, cluster: RedisClusterServers | None) -> Outcome:
    ports = nodes_of(redis_url, cluster)
    streams = {key: owners(ports, key) for key in (f"gostop:bots:{{s{shard}}}" for shard in range(SHARDS))}
    async with deployment(redis_url) as running:
        apis = running.apis
        games = [await create_game(apis[i % 2], 100 * i + 1) for i in range(GAMES)]
        stop = asyncio.Event()
        watchers = [asyncio.ensure_future(watch(apis[i % 2], g, stop)) for i, g in enumerate(games[:WATCHED])]
        try:
            clock_nodes = clock_holders(ports)
            held = await kill_when_holding(running.workers["a"], streams, "a", 1.5)
            await wait_finished(apis, games, FINISH_LIMIT_S)
            watched = await asyncio.gather(*watchers)
        finally:
            stop.set()
            for task in watchers:
                task.cancel()
        assert pending_of(streams, "a") == 0, "worker b claimed what worker a held"
        steps = sum([check_log(await apis[i % 2].log(g)) for i, g in enumerate(games)])
        assert sum(check_not_early(seen) for seen in watched) >= WATCHED * 10
        metrics = [scrape(port) for port in running.metrics_ports]
        assert sum(m.get("gostop_clock_lag_seconds_count", 0.0) for m in metrics) == steps, "one lag per move"
        assert sum(m.get("timeouts", 0.0) for m in metrics) == steps
        assert all(m.get("gostop_clock_lag_seconds_sum", 0.0) >= 0 for m in metrics)
        return Outcome(held, {shard_of(g.id, SHARDS) for g in games}, clock_nodes)


@contextlib.contextmanager
def standalone() -> Iterator[tuple[str, None]]:
    with RedisServer() as redis:
        yield redis.url, None


@contextlib.contextmanager
def three_masters() -> Iterator[tuple[str, RedisClusterServers]]:
    with RedisClusterServers(3) as cluster:
        yield cluster.url, cluster


async def test_two_workers_one_killed_finish_every_clocked_game_on_redis() -> None:
    with standalone() as (url, _):
        outcome = await run(url, None)
    assert outcome.held > 0, "the killed worker held a taken turn"


async def test_two_workers_one_killed_finish_every_clocked_game_on_a_cluster() -> None:
    """The same on a 3-master Cluster, where the games spread over the shards and the shards'
    clocks over the masters."""
    with three_masters() as (url, cluster):
        outcome = await run(url, cluster)
    assert outcome.held > 0, "the killed worker held a taken turn"
    assert len(outcome.shards) >= SHARDS // 2, f"the games spread over the shards: {sorted(outcome.shards)}"
    assert len(outcome.clock_nodes) > 1, "the shards' clocks live on several masters"


async def create_game_with(api: Api, clock: pb.ClockSettings, rounds: int = 1) -> Game:
    """A game of ``rounds`` rounds with ``clock`` (operator seed 7)."""
    out = await api.stub.CreateGame(pb.CreateGameRequest(preset="standard", players=2, seed=7, rounds=rounds,
                                                         clock=clock), metadata=OPERATOR)
    return Game(out.game_id, {s.seat: s.token for s in out.seats}, out.version, out)


async def test_the_clock_deals_the_next_round_of_a_longer_match_regression() -> None:
    """At a round's end the next round is a decision too (the first person's seat owes it): with
    nobody acting, the clock deals it, under the turn's reserved request id. (Its PlayedForSeat
    has no action: the wire refused to write the id -1 it stood for, and the match stopped.)"""
    with standalone() as (url, _):
        async with deployment(url) as running:
            api = running.apis[0]
            clock = pb.ClockSettings(decision_ms=1000, bank_ms=0, away_after=1, auto_pause_ms=0)
            game = await create_game_with(api, clock, rounds=2)
            end = time.monotonic() + 60
            while (view := (await api.get(game)).view).match.round_no < 2:  # (the deal follows the round's end at once)
                assert time.monotonic() < end, f"the next round was not dealt: version {view.version}"
                await asyncio.sleep(0.1)
            [dealt] = [e for e in (await api.log(game)).entries if e.kind == "next_round"][:1]
            over = dealt.version - 1
            assert dealt.request_id == f"bot.next_round.{over}.{dealt.seat}" and not dealt.HasField("action")
            assert dealt.events[0].played_for_seat.cause in ("timeout", "away")
            assert not dealt.events[0].played_for_seat.HasField("action")


async def test_a_clock_turn_no_longer_owed_is_acknowledged_regression() -> None:
    """A turn delivered twice (a worker died between its commit and its acknowledgement, or a
    deadline scheduled again) finds the game moved on: the worker drops it as stale (the service
    answers FAILED_PRECONDITION NO_DECISION_DUE; it used to refuse it as NOT_A_BOT_SEAT, which the
    worker left unacknowledged, claimed again for ever)."""
    with standalone() as (url, _):
        async with deployment(url) as running:
            api = running.apis[0]
            clock = pb.ClockSettings(decision_ms=1000, bank_ms=0, away_after=1, auto_pause_ms=0)
            game = await create_game_with(api, clock)
            await wait_finished([api], [game], FINISH_LIMIT_S)
            port = nodes_of(url, None)[0]
            stream = f"gostop:bots:{{s{shard_of(game.id, SHARDS)}}}"
            command(port, "XADD", stream, "*", "game", game.id, "version", "2", "seat", "0", "bot", "greedy",
                    "budget", "200", "kind", "act", "at", str(int(time.time() * 1000)))
            end = time.monotonic() + 4 * CLAIM_IDLE_MS / 1000 + 5
            while command(port, "XLEN", stream) != 0:
                assert time.monotonic() < end, "the stale turn was never acknowledged"
                await asyncio.sleep(0.1)

