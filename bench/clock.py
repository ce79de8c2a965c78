"""Turn-clock benchmark: how late the clock's forced moves are, with N clocked games at once.

Usage: ``PYTHONPATH=tests python -m bench.clock [--games 1000] [--seconds 60] [--warmup 10]
[--decision-ms 2000] [--rounds 1] [--workers 2] [--server-workers 1] [--concurrency 8] [--sample 100] [--poll-seconds 5]
[--json PATH]``.

For each size of ``--games``: starts its own ``redis-server``, a ``gostop serve`` process (its
metrics on a free port) and ``--workers`` bot-worker processes (``gostop bots serve``), creates the
games (standard, 2 players, ``--rounds``, clock ``decision_ms``, no bank, away only after 100
timeouts: nobody acts, so every decision is a timeout made by a worker at its deadline), keeps
that many in play (each game is looked at every ``--poll-seconds`` once it could have finished; a
finished one is replaced by a new one), waits the warm-up, then measures one window:

- **lag** (a forced move's commit time minus its deadline): bounds of p50/p99 from the server's
  histogram ``gostop_clock_lag_seconds`` (its buckets), and precise figures from a sample of games
  watched with ``WatchGame`` (a view per version: the commit's time is the next decision's
  ``clock.started_ms``, the deadline the previous view's ``clock.deadline_ms``, both the server's
  clock), with the moves seen earlier than their deadline by this process's clock (none may be);
- **moves**: the histogram's count over the window (moves per second, against the games' due
  rate), each game's pace (moves per decision time while the window saw it: a lost turn leaves its
  game behind) and the most any game was past its deadline when looked at;
- **twice**: the sample's logs (``GetGameLog``): contiguous versions, one commit per turn's
  request id, every step after the deal a ``PlayedForSeat`` of cause ``timeout``;
- **CPU** per forced move of the bot workers together, of the server (with the polling's
  ``GetGame`` calls) and of Redis (``/proc``).

Prints one row per size and writes them as JSON with ``--json``; exits 1 when a move was early,
committed twice or was not the clock's. The goal is a lag p99 of at most 250 ms at 1,000 games.
Workers, server, Redis and this process share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.redis_server import HOST, RedisServer

from .players import cpu_between, cpu_of, int_list
from .processes import ServerProcess
from .service import wait_serving
from .settings import CHANNEL_OPTIONS, OPERATOR, ROOT

BOT_KEY = "bench-clock-bot-key-0123456789abcdef"
GOAL_P99_MS = 250.0
WATCHES_PER_CHANNEL = 50
MARGIN_MS = 20
"""Clock resolution allowed between this process's wall clock and the server's (the same machine's)."""
YOUNGEST_FINISH = 8
"""Decisions before which no standard two-player round can end (but at its deal): a stop needs 7
points, and nobody scores that in fewer than four plays of their own."""
REQUEST_ID = re.compile(r"^bot\.(act|next_round)\.(\d+)\.(\d+)$")


def now_ms() -> float:
    return time.time() * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# ----------------------------------------------------------------------------- processes


class Worker:
    """``gostop bots serve`` against the benchmark's server and Redis, its log in a temporary file."""

    def __init__(self, server: ServerProcess, redis_url: str, name: str, concurrency: int, log_level: str) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile(prefix="gostop-bench-clock-")  # noqa: SIM115 (closed by stop)
        env = {**os.environ, "GOSTOP_BOT_KEY": BOT_KEY, "GOSTOP_LOG_FORMAT": "json", "GOSTOP_LOG_LEVEL": log_level}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "bots", "serve", "--server", server.target, "--redis-url", redis_url,
             "--metrics-port", "0", "--consumer", name, "--concurrency", str(concurrency)],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def log_tail(self, size: int = 3000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-size:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.log.close()


Calls = dict[str, float]
"""The server's handled calls by ``method code`` (e.g. ``SubmitAction OK``)."""


@dataclass
class Lag:
    """The server's lag histogram at one moment: cumulative counts by upper bound, count, sum."""

    buckets: dict[float, float] = field(default_factory=dict)
    count: float = 0.0
    total: float = 0.0

    def minus(self, before: Lag) -> Lag:
        return Lag({le: n - before.buckets.get(le, 0.0) for le, n in self.buckets.items()},
                   self.count - before.count, self.total - before.total)

    def bound_ms(self, q: float) -> float:
        """The upper bound of the bucket the ``q`` quantile falls in (inf: past the last bound)."""
        for le, cumulative in sorted(self.buckets.items()):
            if self.count and cumulative >= q * self.count:
                return le * 1000
        return float("nan")


def scrape(ports: list[int]) -> tuple[Lag, Calls]:
    """The server's lag histogram and its handled calls, summed over its processes."""
    lag, calls = Lag(), Calls()
    for port in ports:
        with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "gostop_clock_lag_seconds_bucket":
                    le = float(sample.labels["le"])
                    lag.buckets[le] = lag.buckets.get(le, 0.0) + sample.value
                elif sample.name == "gostop_clock_lag_seconds_count":
                    lag.count += sample.value
                elif sample.name == "gostop_clock_lag_seconds_sum":
                    lag.total += sample.value
                elif sample.name == "grpc_server_handled_total":
                    key = f"{sample.labels.get('grpc_method')} {sample.labels.get('grpc_code')}"
                    calls[key] = calls.get(key, 0.0) + sample.value
    return lag, calls


def calls_between(before: Calls, after: Calls) -> Calls:
    return {key: n - before.get(key, 0.0) for key, n in sorted(after.items()) if n > before.get(key, 0.0)}


# ----------------------------------------------------------------------------- games


@dataclass
class Seen:
    """A version of a watched game: when its message arrived (this process's ms) and its clock."""

    version: int
    arrived_ms: float
    started_ms: int
    deadline_ms: int


async def watch(stub: pb_grpc.GameServiceStub, game_id: str, seen: list[Seen]) -> None:
    """Append each version of ``game_id``'s spectator stream (with its view) to ``seen`` until the
    match is over or the watch is cancelled."""
    stream = stub.WatchGame(pb.WatchGameRequest(game_id=game_id, include_views=True, whole_versions=True))
    try:
        async for item in stream:
            if item.HasField("view") and item.view.match.finished:
                return
            if item.HasField("view") and item.view.clock.seat >= 0:
                seen.append(Seen(item.version, now_ms(), item.view.clock.started_ms, item.view.clock.deadline_ms))
    finally:
        stream.cancel()


def clock_settings(decision_ms: int) -> pb.ClockSettings:
    return pb.ClockSettings(decision_ms=decision_ms, bank_ms=0, away_after=100, auto_pause_ms=0)


@dataclass
class Span:
    """A game's versions as the poller saw them inside the window: first and last (version, ms)."""

    first: tuple[int, float]
    last: tuple[int, float]


@dataclass
class Tracker:
    """The games in play: polled in turn (``poll``) to find the finished ones, which are replaced
    by new games, and, inside the window, how far each advanced and how long past its deadline."""

    stub: pb_grpc.GameServiceStub
    target: str
    args: argparse.Namespace
    channels: list[grpc.aio.Channel] = field(default_factory=list)
    """The watches' channels."""
    games: list[str] = field(default_factory=list)
    seeds: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    sample: set[str] = field(default_factory=set)
    seen: dict[str, list[Seen]] = field(default_factory=dict)
    watchers: list[asyncio.Task[None]] = field(default_factory=list)
    window: tuple[float, float] = (math.inf, math.inf)
    spans: dict[str, Span] = field(default_factory=dict)
    max_overdue_ms: float = 0.0
    replaced: int = 0
    polls: int = 0
    failed_polls: int = 0
    born: dict[str, float] = field(default_factory=dict)
    """When (monotonic) each game was created: a game is not looked at before it could have
    finished (``YOUNGEST_FINISH`` decisions), so the polls cost the server less."""

    async def create(self) -> str:
        req = pb.CreateGameRequest(preset="standard", players=2, seed=next(self.seeds), rounds=self.args.rounds,
                                   clock=clock_settings(self.args.decision_ms))
        reply: pb.CreateGameResponse = await self.stub.CreateGame(req, metadata=OPERATOR, timeout=60)
        self.born[reply.game_id] = time.monotonic()
        return reply.game_id

    async def fill(self, count: int, inflight: int = 16) -> None:
        """``count`` games at first (operator seeds, so every run deals the same), one in
        ``count / sample`` of them watched."""
        slots = asyncio.Semaphore(inflight)

        async def one() -> str:
            async with slots:
                return await self.create()

        self.games = list(await asyncio.gather(*(one() for _ in range(count))))
        for game_id in self.games[:: max(1, count // self.args.sample)][: self.args.sample]:
            self.watch(game_id)

    def watch(self, game_id: str) -> None:
        """Watch ``game_id`` on a channel of its own kind: the server takes ``max_concurrent_streams``
        (100) calls at once per connection, and the polls must not wait behind the streams."""
        if len(self.watchers) % WATCHES_PER_CHANNEL == 0:
            self.channels.append(grpc.aio.insecure_channel(self.target, options=CHANNEL_OPTIONS))
        stub = pb_grpc.GameServiceStub(self.channels[-1])
        self.sample.add(game_id)
        self.seen[game_id] = []
        self.watchers.append(asyncio.ensure_future(watch(stub, game_id, self.seen[game_id])))

    async def poll(self, index: int) -> None:
        """Look at game ``index``: in the window, note its version and lateness; replace it once finished."""
        game_id = self.games[index]
        try:
            reply: pb.GetGameResponse = await self.stub.GetGame(pb.GetGameRequest(game_id=game_id), timeout=60)
        except grpc.aio.AioRpcError:
            self.failed_polls += 1
            return
        at, view = now_ms(), reply.view
        self.polls += 1
        if self.window[0] <= at <= self.window[1]:
            span = self.spans.setdefault(game_id, Span((view.version, at), (view.version, at)))
            span.last = (view.version, at)
            if view.clock.seat >= 0:
                self.max_overdue_ms = max(self.max_overdue_ms, at - view.clock.deadline_ms)
        if view.match.finished:
            self.born.pop(game_id, None)
            self.games[index] = await self.create()
            self.replaced += 1
            if game_id in self.sample:
                self.watch(self.games[index])

    async def run(self, stop: asyncio.Event, inflight: int = 8) -> None:
        """Poll every game once per ``--poll-seconds`` (or as fast as the server answers) until ``stop``."""
        slots = asyncio.Semaphore(inflight)

        youngest = YOUNGEST_FINISH * self.args.decision_ms / 1000

        async def one(index: int) -> None:
            if time.monotonic() - self.born.get(self.games[index], -math.inf) < youngest:
                return
            async with slots:
                if not stop.is_set():
                    await self.poll(index)

        while not stop.is_set():
            started = time.monotonic()
            await asyncio.gather(*(one(i) for i in range(len(self.games))))
            await asyncio.sleep(max(0.0, self.args.poll_seconds - (time.monotonic() - started)))

    async def close(self) -> None:
        for task in self.watchers:
            task.cancel()
        await asyncio.gather(*self.watchers, return_exceptions=True)
        for channel in self.channels:
            await channel.close()

    def paces(self) -> list[float]:
        """Each game's moves per decision time over its span in the window (1.0: a move at every
        deadline, no lag); games seen over less than a third of the window are left out."""
        out = []
        for span in self.spans.values():
            elapsed = span.last[1] - span.first[1]
            if elapsed >= self.args.seconds * 1000 / 3:
                out.append((span.last[0] - span.first[0]) * self.args.decision_ms / elapsed)
        return out


@dataclass
class Watched:
    """The sample's forced moves committed inside the window: precise lags and early moves."""

    lags_ms: list[float] = field(default_factory=list)
    arrivals_ms: list[float] = field(default_factory=list)
    """Each move's arrival on the stream minus its deadline (the lag plus the stream's delay)."""
    early: int = 0
    gaps: int = 0
    """Versions the stream skipped (it sends the newest view only when it catches up)."""


def lags(seen: list[Seen], start_ms: float, end_ms: float, out: Watched) -> None:
    for before, after in itertools.pairwise(seen):
        if after.version != before.version + 1:
            out.gaps += 1
            continue
        if not start_ms <= after.started_ms < end_ms:
            continue
        lag = after.started_ms - before.deadline_ms
        out.lags_ms.append(lag)
        out.arrivals_ms.append(after.arrived_ms - before.deadline_ms)
        if lag < 0 or after.arrived_ms < before.deadline_ms - MARGIN_MS:
            out.early += 1


def log_faults(log: pb.GetGameLogResponse) -> list[str]:
    """What is wrong with a game's log: versions not contiguous, a request id twice or not a
    turn's, a step after the deal that is not the clock's timeout."""
    faults = []
    if [e.version for e in log.entries] != list(range(1, len(log.entries) + 1)):
        faults.append("versions not contiguous")
    steps = log.entries[1:]
    if len({e.request_id for e in steps}) != len(steps):
        faults.append("a request id committed twice")
    for entry in steps:
        matched = REQUEST_ID.match(entry.request_id)
        if not matched or int(matched.group(2)) != entry.version - 1 or int(matched.group(3)) != entry.seat:
            faults.append(f"version {entry.version}: request id {entry.request_id!r}")
        first = entry.events[0] if entry.events else pb.Event()
        if not first.HasField("played_for_seat") or first.played_for_seat.cause != "timeout":
            faults.append(f"version {entry.version}: not a timeout of the clock")
    return faults


async def check_logs(stub: pb_grpc.GameServiceStub, games: list[str]) -> tuple[int, list[str]]:
    """The steps of the games' logs (every page), and their faults."""
    steps, faults = 0, []
    for game_id in games:
        log = pb.GetGameLogResponse()
        after = 0
        while True:
            page = await stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id, after_version=after, page_size=1000),
                                         metadata=OPERATOR, timeout=30)
            log.entries.extend(page.entries)
            after = page.next_after_version
            if not after:
                break
        steps += len(log.entries) - 1
        faults += [f"{game_id}: {f}" for f in log_faults(log)]
    return steps, faults


# ----------------------------------------------------------------------------- one run


@dataclass
class Stack:
    redis: RedisServer
    server: ServerProcess
    workers: list[Worker]

    def pids(self) -> dict[str, list[int]]:
        assert self.redis.process is not None
        return {"server": self.server.pids(), "workers": [w.process.pid for w in self.workers],
                "redis": [self.redis.process.pid]}

    def check(self) -> None:
        if not self.server.running():
            raise RuntimeError("the gostop server exited:\n" + self.server.log_tail())
        for worker in self.workers:
            if worker.process.poll() is not None:
                raise RuntimeError("a bot worker exited:\n" + worker.log_tail())


def start_stack(args: argparse.Namespace) -> Stack:
    redis = RedisServer().start()
    assert redis.process is not None
    os.environ.update(GOSTOP_BOT_KEYS=BOT_KEY, GOSTOP_MAX_WATCH_PER_PEER="0")
    server = ServerProcess(redis.url, metrics=True, redis_pid=redis.process.pid, log_level=args.log_level,
                           workers=args.server_workers)
    server.start()
    return Stack(redis, server, [])


def stop_stack(stack: Stack) -> None:
    for worker in stack.workers:
        worker.stop()
    stack.server.stop()
    stack.redis.stop()


async def window(tracker: Tracker, stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    """The measured window: the lag histogram and CPU at both ends (the tracker polls meanwhile)."""
    ports = stack.server.metrics_ports
    (lag_before, calls_before), cpu_before = scrape(ports), {k: cpu_of(p) for k, p in stack.pids().items()}
    polls_before, started = tracker.polls, time.monotonic()
    tracker.window = (now_ms(), now_ms() + args.seconds * 1000)
    await asyncio.sleep(args.seconds)
    (lag_after, calls_after), cpu_after = scrape(ports), {k: cpu_of(p) for k, p in stack.pids().items()}
    elapsed = time.monotonic() - started
    stack.check()
    return {"elapsed": elapsed, "lag": lag_after.minus(lag_before),
            "cpu": {k: cpu_between(cpu_before[k], cpu_after[k]) for k in cpu_before},
            "polls_per_second": (tracker.polls - polls_before) / elapsed,
            "calls": calls_between(calls_before, calls_after)}


async def measure(stack: Stack, size: int, args: argparse.Namespace) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(stack.server.target, options=CHANNEL_OPTIONS) as channel:
        tracker = Tracker(pb_grpc.GameServiceStub(channel), stack.server.target, args)
        await tracker.fill(size)
        stop = asyncio.Event()
        poller = asyncio.ensure_future(tracker.run(stop))
        try:
            await asyncio.sleep(args.warmup)
            measured = await window(tracker, stack, args)
        finally:
            stop.set()
            await poller
            await tracker.close()
            for worker in stack.workers:  # the games stop moving: the logs are read from a quiet server
                worker.stop()
        watched = Watched()
        for versions in tracker.seen.values():
            lags(versions, *tracker.window, watched)
        steps, faults = await check_logs(tracker.stub, sorted(tracker.sample))
    return summary(size, args, measured, tracker, watched, steps, faults)


async def run_one(size: int, args: argparse.Namespace) -> dict[str, Any]:
    stack = start_stack(args)
    try:
        await wait_serving(stack.server)
        stack.workers = [Worker(stack.server, stack.redis.url, f"bench-{i}", args.concurrency, args.log_level)
                         for i in range(args.workers)]
        return await measure(stack, size, args)
    finally:
        stop_stack(stack)


def summary(size: int, args: argparse.Namespace, measured: dict[str, Any], tracker: Tracker, watched: Watched,
            steps: int, faults: list[str]) -> dict[str, Any]:
    lag: Lag = measured["lag"]
    moves, elapsed = lag.count, measured["elapsed"]
    paces = tracker.paces()
    median = statistics.median(paces) if paces else float("nan")
    per_move = {k: (1000 * cpu / moves if moves else float("nan")) for k, cpu in measured["cpu"].items()}
    return {
        "games": size, "seconds": round(elapsed, 2), "decision_ms": args.decision_ms, "rounds": args.rounds,
        "workers": args.workers, "server_workers": args.server_workers, "concurrency": args.concurrency, "moves": moves,
        "moves_per_second": moves / elapsed if elapsed else 0.0,
        "due_per_second": size * 1000 / args.decision_ms,
        "lag_histogram": {"p50_at_most_ms": lag.bound_ms(0.5), "p99_at_most_ms": lag.bound_ms(0.99),
                          "mean_ms": 1000 * lag.total / moves if moves else float("nan"),
                          "buckets": {str(le): n for le, n in sorted(lag.buckets.items())}},
        "lag_sample": {"moves": len(watched.lags_ms), "p50_ms": percentile(watched.lags_ms, 0.5),
                       "p99_ms": percentile(watched.lags_ms, 0.99), "max_ms": max(watched.lags_ms, default=0.0),
                       "arrival_p99_ms": percentile(watched.arrivals_ms, 0.99), "stream_gaps": watched.gaps},
        "early": watched.early,
        "pace": {"games": len(paces), "min": min(paces, default=float("nan")), "median": median,
                 "below_80_percent_of_median": sum(1 for p in paces if p < 0.8 * median)},
        "max_overdue_ms": tracker.max_overdue_ms,
        "replaced_games": tracker.replaced, "failed_polls": tracker.failed_polls,
        "polls_per_second": measured["polls_per_second"],
        "server_calls_per_move": {k: n / moves for k, n in measured["calls"].items()} if moves else {},
        "log_sample": {"games": len(tracker.sample), "steps": steps, "faults": faults[:20], "fault_count": len(faults)},
        "cpu_ms_per_move": per_move,
        "cpu_percent": {k: 100 * cpu / elapsed for k, cpu in measured["cpu"].items()},
        "load_average": list(os.getloadavg()),
    }


# ----------------------------------------------------------------------------- report


HEADER = (f"{'games':>6}{'moves/s':>9}{'(due/s)':>8}{'hist p50/p99 <=':>17}{'sample p50/p99/max':>20}"
          f"{'early':>6}{'pace min/med':>13}{'overdue':>9}{'twice':>6}{'worker ms':>10}{'server ms':>10}"
          f"{'redis ms':>9}{'load':>6}")


def row(r: dict[str, Any]) -> str:
    h, s, a, cpu = r["lag_histogram"], r["lag_sample"], r["pace"], r["cpu_ms_per_move"]
    return (f"{r['games']:>6}{r['moves_per_second']:>9.1f}{r['due_per_second']:>8.0f}"
            f"{h['p50_at_most_ms']:>9.0f}/{h['p99_at_most_ms']:<7.0f}"
            f"{s['p50_ms']:>8.0f}/{s['p99_ms']:.0f}/{s['max_ms']:<7.0f}{r['early']:>6}"
            f"{a['min']:>7.2f}/{a['median']:<5.2f}{r['max_overdue_ms']:>8.0f}ms{r['log_sample']['fault_count']:>5}"
            f"{cpu['workers']:>10.2f}{cpu['server']:>10.2f}{cpu['redis']:>9.2f}{r['load_average'][0]:>6.1f}")


def verdict(r: dict[str, Any]) -> str:
    p99 = r["lag_sample"]["p99_ms"]
    met = "met" if p99 <= GOAL_P99_MS and r["lag_histogram"]["p99_at_most_ms"] <= GOAL_P99_MS else "NOT met"
    return (f"  goal at {r['games']} games: lag p99 <= {GOAL_P99_MS:.0f} ms: {met} (sample p99 {p99:.0f} ms over "
            f"{r['lag_sample']['moves']} moves; histogram p99 <= {r['lag_histogram']['p99_at_most_ms']:.0f} ms "
            f"over {r['moves']:.0f}; mean {r['lag_histogram']['mean_ms']:.0f} ms)\n    server calls per move: "
            + ", ".join(f"{k} {n:.2f}" for k, n in r["server_calls_per_move"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int_list, default=[1000], help="concurrent clocked games, comma-separated")
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window of each run")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after the games are created")
    parser.add_argument("--decision-ms", type=int, default=2000, help="the clock's time per decision")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds per match (0: open-ended); a finished game is replaced by a new one")
    parser.add_argument("--poll-seconds", type=float, default=5.0, help="how often each game is looked at")
    parser.add_argument("--workers", type=int, default=2, help="bot-worker processes")
    parser.add_argument("--server-workers", type=int, default=1, help="server processes (gostop serve --workers)")
    parser.add_argument("--concurrency", type=int, default=8, help="turns each worker plays at once")
    parser.add_argument("--sample", type=int, default=100, help="games watched for precise lags and logs")
    parser.add_argument("--log-level", default="info", help="the server's and workers' (info: as deployed)")
    parser.add_argument("--json", default=None, help="write the rows as JSON to this file")
    args = parser.parse_args()
    if (args.seconds <= 0 or args.warmup < 0 or args.workers < 1 or args.server_workers < 1 or args.sample < 1
            or args.poll_seconds <= 0):
        parser.error("the window, workers and sample must be positive and the warm-up not negative")
    print(f"Turn clock: {args.seconds:.0f} s windows after {args.warmup:.0f} s, decision {args.decision_ms} ms, "
          f"{args.server_workers} server process(es), {args.workers} bot workers x {args.concurrency}; "
          "lag = commit - deadline; CPU in ms per forced move")
    print(HEADER, flush=True)
    rows = []
    for size in args.games:
        result = asyncio.run(run_one(size, args))
        rows.append(result)
        print(row(result), flush=True)
    for result in rows:
        print(verdict(result))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    if any(r["early"] or r["log_sample"]["fault_count"] for r in rows):
        print("a move was early, committed twice or not the clock's", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
