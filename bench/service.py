"""Service benchmark: the gRPC server's requests per second and latency, over loopback.

Usage: ``PYTHONPATH=tests python -m bench.service [--seconds S] [--inflight 1,8,32,64] [--store memory|redis]
[--server-workers N | --compare-workers 1,2] [--channels C] [--client-processes K]``.

Starts its own ``redis-server`` (``--store redis``, the default) and the gostop server as a separate
OS process (``python -m gostop serve``, with ``--workers N`` for ``--server-workers N``: a
supervisor and N worker processes sharing the port with ``SO_REUSEPORT``), so that the asyncio
gRPC client here and the server do not share a GIL, waits for health SERVING, then measures, for
each in-flight level:

- ``Health/Check``: the ceiling of this server and this client (the cheapest RPC there is);
- ``SubmitAction``: workers, one per in-flight call, each play their own standard 2-player games
  with random legal actions, at the expected version and with a request id; a worker mirrors its
  game with the engine from the game's seed (CreateGame takes one), so it knows the next seat's
  legal actions without a GetGame per action; when a round ends the worker takes the next game
  created beforehand (enough for the window by default, ``--games``), or creates one. Only
  SubmitAction calls are counted, and the rounds whose
  last action ended inside the window give the whole games per second played through the service;
- ``GetGame``: a seat's view of one of those games.

Prints requests/s, p50 and p99 (client side: they include the client's own gRPC overhead),
SubmitAction as a percentage of the Health ceiling, the CPU that client, server and Redis used
during each window (from ``/proc``; the server's is the sum over the supervisor and its workers)
and the server's CPU per call, then the goal check at 8 in flight. ``--server-metrics`` adds the
server's own per-call means (RPC and store operations) from its Prometheus endpoints;
``--profile-server FILE`` runs a single server under cProfile. ``--domain-free`` measures a bound
instead of the service: the server of ``bench/domain_free.py``, whose SubmitActions after
a game's first skip the turn's domain work (engine step, view, events, log entry, snapshot) and
commit that first turn's bytes again, so that its figures are what any faster domain code could
reach at most.

``--compare-workers 1,2`` runs the whole measurement once per worker count, each against a fresh
server, and prints the throughput ratio of each count to the first (issue 7's goal: at least 1.6x
with 2 workers on two cores). The client spreads its calls over ``--channels`` gRPC channels, each
its own TCP connection (the kernel hands each connection to one worker, so one channel would
keep one worker busy and the other idle), and over ``--client-processes`` OS processes (one
Python process is one core of load at most). Client, server and Redis share the machine's cores:
compare figures within one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import multiprocessing
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gostop.engine import Rules, State, action_from_id, apply_unchecked, legal_action_ids, new_match
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.redis_server import HOST, RedisServer, free_port

ROOT = Path(__file__).resolve().parent.parent

PRESET = "standard"
PLAYERS = 2
GOAL_INFLIGHT = 8
GOAL_SHARE = 0.50
GOAL_P99_MS = 5.0
GOAL_WORKERS = 2
GOAL_WORKERS_RATIO = 1.6
CALL_TIMEOUT = 10.0
"""Deadline of every call (seconds): a stalled server fails the call instead of hanging the run."""
GAMES_PER_SECOND = 150
"""Games created before each SubmitAction run, per second of warm-up and window (the default of ``--games``):
above the 80-100 rounds a second one server plays here, so that the window measures SubmitAction
alone. A run that outpaces them creates more inline (CreateGame calls that the server serves
inside the window, uncounted: 128 games made them ~4 % of its CPU at 8 in flight) and says how many."""
TOKEN_SECRET = "bench-service-token-secret-0123456789"
CHANNEL_OPTIONS = (("grpc.use_local_subchannel_pool", 1),)
"""Each channel keeps its own connection: by default gRPC shares one TCP connection among the
channels of a process that have the same target and options, and a connection goes to one worker."""
Metadata = tuple[tuple[str, str], ...]
RPCS = ("health", "submit", "get")
RPC_NAMES = {"health": "Health/Check", "submit": "SubmitAction", "get": "GetGame"}


# ----------------------------------------------------------------------------- processes


def child_pids(pid: int) -> list[int]:
    """The child processes of ``pid``: the union of its threads' ``/proc/<pid>/task/*/children``."""
    out: list[int] = []
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            out.extend(int(x) for x in path.read_text().split())
    return sorted(set(out))


def tcp_sockets(port: int) -> dict[int, str]:
    """Loopback TCP sockets whose local port is ``port``: socket inode -> state (``0A`` listening,
    ``01`` established), from ``/proc/net/tcp`` and ``tcp6``."""
    out: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    out[int(fields[9])] = fields[3]
    return out


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets that process ``pid`` holds open."""
    out: set[int] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    out.add(int(link[8:-1]))
    return out


def connections_by_pid(port: int, pids: Sequence[int]) -> list[int]:
    """Established connections to ``port`` held by each of ``pids``."""
    established = {inode for inode, state in tcp_sockets(port).items() if state == "01"}
    return [len(socket_inodes(pid) & established) for pid in pids]


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive TCP ports that were free on loopback a moment ago."""
    for _ in range(50):
        base = free_port()
        if base + count > 65535:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count):
                    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    sock.bind((HOST, port))
            return int(base)
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports")


class ServerProcess:
    """``python -m gostop serve`` on a free loopback port, its log in a temporary file.

    With ``workers > 1`` the process is the supervisor of ``service.workers``; its workers are its
    child processes, worker ``i`` serving metrics on ``metrics_port + i``."""

    def __init__(
        self, redis_url: str, metrics: bool, profile: str = "", redis_pid: int | None = None, workers: int = 1,
        log_level: str = "info", domain_free: bool = False,
    ) -> None:
        if workers > 1 and not redis_url:
            raise ValueError("several server workers need Redis (--store redis)")
        if workers > 1 and profile:
            raise ValueError("--profile-server profiles a single server process (not with several workers)")
        if workers > 1 and domain_free:
            raise ValueError("--domain-free runs a single server process (not with several workers)")
        self.domain_free = domain_free
        self.redis_url = redis_url
        self.redis_pid = redis_pid
        self.metrics = metrics
        self.profile = profile
        self.workers = workers
        self.log_level = log_level
        self.port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def target(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def metrics_ports(self) -> list[int]:
        """The metrics port of each server process (none when metrics are off)."""
        return [self.metrics_port + i for i in range(self.workers)] if self.metrics_port else []

    def start(self) -> None:
        self.port = free_port()
        self.metrics_port = free_ports(self.workers) if self.metrics else 0
        env = dict(os.environ)
        env.update(
            GOSTOP_REDIS_URL=self.redis_url,
            GOSTOP_TOKEN_SECRET=TOKEN_SECRET,
            GOSTOP_LOG_LEVEL=self.log_level,
            GOSTOP_LOG_FORMAT="json",
            GOSTOP_METRICS_HOST=HOST,
        )
        self._log = tempfile.TemporaryFile(prefix="gostop-bench-server-")  # noqa: SIM115 (closed by stop)
        profiler = ["-m", "cProfile", "-o", self.profile] if self.profile else []
        program = ["-m", "bench.domain_free"] if self.domain_free else ["-m", "gostop"]
        argv = [
            sys.executable, *profiler, *program, "serve", "--listen", self.target,
            "--metrics-port", str(self.metrics_port), "--workers", str(self.workers),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )

    def worker_pids(self) -> list[int]:
        """The processes that serve calls: the workers of a supervisor, or the one server."""
        if self.process is None:
            return []
        return child_pids(self.process.pid) if self.workers > 1 else [self.process.pid]

    def pids(self) -> list[int]:
        """Every server process (a supervisor and its workers): their CPU is the server's."""
        if self.process is None:
            return []
        return sorted({self.process.pid, *self.worker_pids()})

    def listeners(self) -> int:
        """Listening sockets on the server's port (one per worker once they are all up)."""
        return sum(1 for state in tcp_sockets(self.port).values() if state == "0A")

    def connections(self) -> list[int]:
        """Established client connections held by each worker, in the order of ``worker_pids``."""
        return connections_by_pid(self.port, self.worker_pids())

    def log_tail(self, size: int = 3000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-size:]

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM (the server, or the supervisor and its workers, drain), then SIGKILL after a while."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            workers = child_pids(process.pid) if self.workers > 1 else []
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
            for pid in workers:  # only if the supervisor could not stop them
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None


@contextlib.contextmanager
def services(
    store: str, metrics: bool, profile: str = "", workers: int = 1, log_level: str = "info",
    domain_free: bool = False,
) -> Iterator[ServerProcess]:
    """A redis-server (for ``store == "redis"``) and a gostop server, stopped on the way out."""
    redis: RedisServer | None = None
    server: ServerProcess | None = None
    try:
        redis_url = ""
        if store == "redis":
            redis = RedisServer().start()
            redis_url = redis.url
        redis_pid = redis.process.pid if redis and redis.process else None
        server = ServerProcess(redis_url, metrics, profile, redis_pid, workers, log_level, domain_free)
        server.start()
        yield server
    finally:
        if server is not None:
            server.stop()
        if redis is not None:
            redis.stop()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


# ----------------------------------------------------------------------------- measuring


@dataclasses.dataclass
class Tally:
    """What the workers of one measurement saw: latencies of the calls inside the window (seconds),
    errors, rounds finished inside the window, and games created during the measurement."""

    latencies: list[float] = dataclasses.field(default_factory=list)
    errors: int = 0
    rounds: int = 0
    created: int = 0

    def add(self, other: Tally) -> None:
        self.latencies.extend(other.latencies)
        self.errors += other.errors
        self.rounds += other.rounds
        self.created += other.created

    def to_wire(self) -> tuple[list[float], int, int, int]:
        """Plain values, for the pipe from a client process."""
        return self.latencies, self.errors, self.rounds, self.created

    @classmethod
    def from_wire(cls, wire: tuple[list[float], int, int, int]) -> Tally:
        return cls(*wire)


@dataclasses.dataclass
class Result:
    rpc: str
    inflight: int
    seconds: float
    tally: Tally
    note: str = ""
    cpu: dict[str, float] = dataclasses.field(default_factory=dict)
    """CPU seconds per second of the window (1.0 = one core busy), by process group: client, server,
    redis, and for several workers each worker (``w0``, ``w1``...) and the supervisor."""
    connections: list[int] = dataclasses.field(default_factory=list)
    """Client connections held by each server worker during the measurement."""
    pair: int = 0
    """0: a row of the main table; k: the k-th extra Health/SubmitAction pair (``--goal-pairs``)."""

    @property
    def rate(self) -> float:
        return len(self.tally.latencies) / self.seconds if self.seconds > 0 else 0.0

    @property
    def games_rate(self) -> float:
        return self.tally.rounds / self.seconds if self.seconds > 0 else 0.0

    @property
    def errors(self) -> int:
        return self.tally.errors

    def quantile_ms(self, q: float) -> float:
        if not self.tally.latencies:
            return float("nan")
        ordered = sorted(self.tally.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Clock:
    """The measurement window: calls that start inside it and end before its end are counted.

    Its bounds are ``time.perf_counter`` values (the system-wide monotonic clock on Linux), so a
    window chosen here holds in the client processes too."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    @classmethod
    def after(cls, warmup: float, seconds: float) -> Clock:
        start = time.perf_counter() + warmup
        return cls(start, start + seconds)

    def over(self) -> bool:
        return time.perf_counter() >= self.end

    def inside(self, started: float, ended: float) -> bool:
        return started >= self.start and ended <= self.end


Worker = Callable[[int, Clock, Tally], Awaitable[None]]
"""A worker: (index, window, tally out); it loops until the window closes."""


async def timed(call: Awaitable[Any], clock: Clock, out: Tally) -> tuple[Any, bool]:
    """Await ``call``; record its latency if it fell inside the window (and say whether it did)."""
    started = time.perf_counter()
    response = await call
    ended = time.perf_counter()
    inside = clock.inside(started, ended)
    if inside:
        out.latencies.append(ended - started)
    return response, inside


async def run_workers(inflight: int, clock: Clock, worker: Worker) -> Tally:
    """Run ``inflight`` copies of ``worker`` until the window closes."""
    tallies = [Tally() for _ in range(inflight)]
    await asyncio.gather(*(worker(i, clock, tallies[i]) for i in range(inflight)))
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; this process's own for ``None``)."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def cpu_during(clock: Clock, groups: dict[str, list[int | None]]) -> dict[str, float]:
    """CPU seconds per second of each group of processes over the window (the processes of a group
    alive at both ends; ``None`` is this process)."""
    await asyncio.sleep(max(0.0, clock.start - time.perf_counter()))
    before = {name: {pid: cpu_seconds(pid) for pid in pids} for name, pids in groups.items()}
    await asyncio.sleep(max(0.0, clock.end - time.perf_counter()))
    out: dict[str, float] = {}
    for name, starts in before.items():
        total, seen = 0.0, False
        for pid, start in starts.items():
            end = cpu_seconds(pid)
            if start is not None and end is not None:
                total, seen = total + end - start, True
        if seen:
            out[name] = total / (clock.end - clock.start)
    return out


# ----------------------------------------------------------------------------- games


@dataclasses.dataclass
class Game:
    """A game on the server, mirrored locally from its seed."""

    game_id: str
    seats: list[Metadata]
    version: int
    state: State


class Games:
    """Creates standard 2-player games with known seeds and hands them out to workers."""

    def __init__(self, stub: Any, seed: int) -> None:
        self.stub = stub
        self.rules = Rules.preset(PRESET, players=PLAYERS)
        self.seeds = random.Random(seed)
        self.ready: deque[Game] = deque()
        self.known: list[Game] = []
        self.created_inline = 0

    async def create(self) -> Game:
        seed = self.seeds.getrandbits(63)
        response = await self.stub.CreateGame(
            pb.CreateGameRequest(preset=PRESET, players=PLAYERS, seed=seed), timeout=CALL_TIMEOUT
        )
        match, _ = new_match(self.rules, seed, 1)
        seats: list[Metadata] = [(("authorization", "Bearer " + s.token),) for s in response.seats]
        game = Game(response.game_id, seats, response.version, match.round)
        self.known.append(game)
        return game

    async def prepare(self, count: int, parallel: int = 8) -> None:
        async def some(n: int) -> None:
            for _ in range(n):
                self.ready.append(await self.create())

        share, extra = divmod(count, parallel)
        await asyncio.gather(*(some(share + (i < extra)) for i in range(parallel)))

    async def take(self) -> Game:
        if self.ready:
            return self.ready.popleft()
        self.created_inline += 1
        return await self.create()


def submit_worker(games: Games, tag: str, verify: bool = True) -> Worker:
    """``verify``: check each answer's next seat against the worker's mirror of the game (off for
    ``--domain-free``, whose server does not move its games)."""
    stub = games.stub

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        chooser = random.Random(index)
        n = 0
        game = await games.take()
        while not clock.over():
            if game.state.over:
                game = await games.take()
                continue
            seat = game.state.to_move
            choice = chooser.choice(legal_action_ids(game.state))
            n += 1
            request = pb.SubmitActionRequest(
                game_id=game.game_id, expected_version=game.version, request_id=f"{tag}-{index}-{n}",
                action_id=choice,
            )
            call = stub.SubmitAction(request, metadata=game.seats[seat], timeout=CALL_TIMEOUT)
            try:
                response, inside = await timed(call, clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1
                game = await games.take()
                continue
            game.state, _ = apply_unchecked(game.state, action_from_id(choice))
            game.version = response.result.version
            if game.state.over:
                out.rounds += inside
            elif verify and response.result.view.to_move != game.state.to_move:
                raise RuntimeError(f"game {game.game_id}: the server and the local mirror disagree")

    return worker


def get_worker(games: Games) -> Worker:
    stub = games.stub

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        chooser = random.Random(1000 + index)
        while not clock.over():
            game = chooser.choice(games.known)
            seat = chooser.randrange(PLAYERS)
            try:
                request = pb.GetGameRequest(game_id=game.game_id)
                await timed(stub.GetGame(request, metadata=game.seats[seat], timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1

    return worker


def health_worker(stub: Any) -> Worker:
    request = health_pb2.HealthCheckRequest(service="")

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        while not clock.over():
            try:
                await timed(stub.Check(request, timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1

    return worker


def game_stub(channel: grpc.aio.Channel) -> Any:
    return pb_grpc.GameServiceStub(channel)


def spread(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal shares, the larger ones first."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@dataclasses.dataclass(frozen=True)
class Balance:
    """What a client needs to spread its connections evenly over the server's workers."""

    port: int
    pids: tuple[int, ...]
    channels: int
    """Channels of the whole load generator (all its processes)."""


class LoadGen:
    """The load of one client process: its channels, a game pool per channel, and the workers of
    one measurement spread over the channels."""

    def __init__(
        self, target: str, channels: int, games: int, seed: int, balance: Balance | None = None, verify: bool = True,
    ) -> None:
        self.target = target
        self.verify = verify
        self.balance = balance
        self.count = channels
        self.games = games
        self.seed = seed
        self.channels: list[grpc.aio.Channel] = []
        self.pools: list[Games] = []
        self.per: list[int] = []
        self.tag = ""

    async def open(self) -> None:
        """Open the channels. With ``balance``, a channel whose connection went to a worker that
        already holds its share of all the client's connections is closed and opened again (the
        kernel hashes each connection to one worker: a few connections often land unevenly)."""
        attempts = 0
        while len(self.channels) < self.count:
            before = connections_by_pid(self.balance.port, self.balance.pids) if self.balance else []
            channel = grpc.aio.insecure_channel(self.target, options=CHANNEL_OPTIONS)
            await channel.channel_ready()
            attempts += 1
            if self.balance is not None and attempts < 20 * self.count:
                after = connections_by_pid(self.balance.port, self.balance.pids)
                gained = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if b > a]
                share = -(-self.balance.channels // len(self.balance.pids))
                if len(gained) == 1 and after[gained[0]] > share:
                    await channel.close()
                    continue
            self.channels.append(channel)

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()

    async def prepare(self, inflight: int) -> None:
        """Spread ``inflight`` workers over the channels; create each channel's games beforehand."""
        self.per = spread(inflight, len(self.channels))
        self.tag = f"s{self.seed}-f{inflight}"
        self.pools = [Games(game_stub(c), seed=self.seed * 1_000_003 + inflight * 100 + i)
                      for i, c in enumerate(self.channels)]
        for pool, count in zip(self.pools, self.per, strict=True):
            await pool.prepare(max(self.games // len(self.channels), 2 * count))

    async def run(self, rpc: str, clock: Clock) -> Tally:
        workers: list[tuple[int, Worker]]
        if rpc == "health":
            workers = [(n, health_worker(health_pb2_grpc.HealthStub(c)))
                       for n, c in zip(self.per, self.channels, strict=True)]
        elif rpc == "submit":
            workers = [(n, submit_worker(pool, f"{self.tag}-c{i}", self.verify))
                       for i, (n, pool) in enumerate(zip(self.per, self.pools, strict=True))]
        else:
            workers = [(n, get_worker(pool)) for n, pool in zip(self.per, self.pools, strict=True)]
        created = sum(p.created_inline for p in self.pools)
        done = await asyncio.gather(*(run_workers(n, clock, worker) for n, worker in workers if n))
        total = Tally(created=sum(p.created_inline for p in self.pools) - created)
        for tally in done:
            total.add(tally)
        return total


def _client_process(
    conn: Connection, target: str, channels: int, games: int, seed: int, balance: Balance | None, verify: bool
) -> None:
    """A client process (``--client-processes``): runs the parent's commands on its own LoadGen."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and stops the children

    async def serve() -> None:
        load = LoadGen(target, channels, games, seed, balance, verify)
        await load.open()
        loop = asyncio.get_running_loop()
        try:
            while True:
                command = await loop.run_in_executor(None, conn.recv)
                if command[0] == "prepare":
                    await load.prepare(command[1])
                    conn.send(None)
                elif command[0] == "run":
                    tally = await load.run(command[1], Clock(command[2], command[3]))
                    conn.send(tally.to_wire())
                else:
                    return
        finally:
            await load.close()

    asyncio.run(serve())


class Clients:
    """The load generator: one LoadGen in this process, or one in each of ``processes`` child
    processes (spawned, each with its own event loop, channels and games), driven in step."""

    def __init__(
        self, target: str, channels: int, processes: int, games: int, balance: Balance | None, verify: bool = True,
    ) -> None:
        self.target = target
        self.verify = verify
        self.balance = balance
        self.processes = processes
        self.channels = spread(max(channels, processes), processes)
        self.games = games
        self.local: LoadGen | None = None
        self.children: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        self.shares: list[int] = []

    async def open(self) -> None:
        if self.processes == 1:
            self.local = LoadGen(self.target, self.channels[0], self.games, seed=1, balance=self.balance,
                                 verify=self.verify)
            await self.local.open()
            return
        context = multiprocessing.get_context("spawn")
        for i, channels in enumerate(self.channels):
            parent, child = context.Pipe()
            process = context.Process(
                target=_client_process,
                args=(child, self.target, channels, self.games // self.processes + 1, i + 1, self.balance,
                      self.verify),
                daemon=True,
            )
            process.start()
            child.close()
            self.children.append((process, parent))

    async def _ask(self, conn: Connection, command: tuple[Any, ...]) -> Any:
        conn.send(command)
        return await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    async def prepare(self, inflight: int) -> None:
        if self.local is not None:
            await self.local.prepare(inflight)
            return
        self.shares = spread(inflight, self.processes)
        await asyncio.gather(*(self._ask(conn, ("prepare", share))
                               for share, (_, conn) in zip(self.shares, self.children, strict=True) if share))

    async def run(self, rpc: str, clock: Clock) -> Tally:
        if self.local is not None:
            return await self.local.run(rpc, clock)
        wires = await asyncio.gather(*(self._ask(conn, ("run", rpc, clock.start, clock.end))
                                       for share, (_, conn) in zip(self.shares, self.children, strict=True) if share))
        total = Tally()
        for wire in wires:
            total.add(Tally.from_wire(wire))
        return total

    def pids(self) -> list[int | None]:
        """The client's processes (``None``: this one)."""
        return [None, *(p.pid for p, _ in self.children if p.pid is not None)]

    async def close(self) -> None:
        if self.local is not None:
            await self.local.close()
        for _, conn in self.children:
            with contextlib.suppress(OSError):
                conn.send(("stop",))
        for process, conn in self.children:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
            conn.close()


# ----------------------------------------------------------------------------- server metrics

_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$")


def scrape(port: int) -> dict[tuple[str, str], float]:
    """Sums and counts of the server's RPC and store histograms: (metric, label) -> value."""
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or not m.group(1).endswith(("_sum", "_count")):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if m.group(1).startswith("grpc_server_handling_seconds"):
            key = labels.get("grpc_method", "")
        elif m.group(1).startswith("gostop_store_seconds"):
            key = "store." + labels.get("op", "")
        else:
            continue
        out[(m.group(1).rsplit("_", 1)[1], key)] = float(m.group(3))
    return out


def scrape_all(ports: Sequence[int]) -> dict[tuple[str, str], float]:
    """``scrape`` summed over the metrics endpoints of every worker."""
    out: dict[tuple[str, str], float] = {}
    for port in ports:
        for key, value in scrape(port).items():
            out[key] = out.get(key, 0.0) + value
    return out


def server_breakdown(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> str:
    """Mean server-side time per call between two scrapes, e.g. ``SubmitAction 1.20 ms, store.commit 0.40 ms``."""
    parts = []
    for (kind, key), count in sorted(after.items()):
        if kind != "count":
            continue
        calls = count - before.get(("count", key), 0.0)
        if calls <= 0:
            continue
        total = after.get(("sum", key), 0.0) - before.get(("sum", key), 0.0)
        parts.append(f"{key} {total / calls * 1000:.3f} ms x{calls:.0f}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------- main


async def wait_serving(server: ServerProcess, timeout: float = 30.0) -> None:
    """Wait until every worker listens on the port and a health check answers SERVING."""
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if not server.running():
                raise RuntimeError("the gostop server exited:\n" + server.log_tail())
            if server.listeners() >= server.workers:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
            if time.monotonic() > deadline:
                raise RuntimeError("the gostop server did not become SERVING:\n" + server.log_tail())
            await asyncio.sleep(0.1)


async def measure(rpc: str, inflight: int, clients: Clients, args: argparse.Namespace,
                  server: ServerProcess) -> Result:
    """One measurement of ``rpc`` at ``inflight`` calls in flight (the clients are prepared for it)."""
    before = scrape_all(server.metrics_ports)
    clock = Clock.after(args.warmup, args.seconds)
    groups: dict[str, list[int | None]] = {"client": clients.pids(), "server": list(server.pids())}
    if server.redis_pid is not None:
        groups["redis"] = [server.redis_pid]
    if server.workers > 1 and server.process is not None:
        groups["supervisor"] = [server.process.pid]
        for i, pid in enumerate(server.worker_pids()):
            groups[f"w{i}"] = [pid]
    cpu = asyncio.ensure_future(cpu_during(clock, groups))
    tally = await clients.run(rpc, clock)
    result = Result(RPC_NAMES[rpc], inflight, args.seconds, tally, cpu=await cpu)
    if server.workers > 1:
        result.connections = server.connections()
    if server.metrics_ports:
        result.note = server_breakdown(before, scrape_all(server.metrics_ports))
    if not server.running():
        raise RuntimeError("the gostop server exited:\n" + server.log_tail())
    return result


async def bench(args: argparse.Namespace, server: ServerProcess) -> list[Result]:
    await wait_serving(server)
    balance = Balance(server.port, tuple(server.worker_pids()), max(args.channels, args.client_processes))
    clients = Clients(server.target, args.channels, args.client_processes, args.games,
                      balance if server.workers > 1 else None, verify=not args.domain_free)
    try:
        await clients.open()
        results: list[Result] = []
        for inflight in args.inflight:
            await clients.prepare(inflight)
            for rpc in RPCS:
                if rpc in args.rpcs:
                    results.append(await measure(rpc, inflight, clients, args, server))
        for k in range(1, args.goal_pairs + 1):
            await clients.prepare(GOAL_INFLIGHT)
            for rpc in ("health", "submit"):
                result = await measure(rpc, GOAL_INFLIGHT, clients, args, server)
                result.pair = k
                results.append(result)
        return results
    finally:
        await clients.close()


def header(args: argparse.Namespace, workers: int) -> str:
    bound = " WITH NO DOMAIN WORK (bench/domain_free.py: a bound, not the service)" if args.domain_free else ""
    return (f"gostop service{bound} over loopback, store {args.store}, {workers} server worker process(es), "
            f"{args.seconds:g} s per measurement, {args.channels} channel(s) from {args.client_processes} "
            f"client process(es), server log level {args.log_level}; {os.cpu_count()} CPUs shared by client, "
            f"server and Redis, "
            f"load average {os.getloadavg()[0]:.2f}")


def report(everything: Sequence[Result], args: argparse.Namespace, workers: int = 1) -> None:
    results = [r for r in everything if not r.pair]
    pairs = [r for r in everything if r.pair]
    ceilings = {r.inflight: r.rate for r in results if r.rpc == "Health/Check"}
    print(header(args, workers))
    print(f"{'RPC':<14}{'in-flight':>10}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'% Health':>10}{'errors':>8}"
          f"{'games/s':>9}{'CPU client':>12}{'server':>8}{'redis':>7}{'server ms/req':>15}")
    for r in results:
        share = f"{r.rate / ceilings[r.inflight] * 100:.0f}%" if ceilings.get(r.inflight) else "-"
        games = f"{r.games_rate:.1f}" if r.rpc == "SubmitAction" else "-"
        cpu = "".join(f"{f'{r.cpu[k] * 100:.0f}%' if k in r.cpu else '-':>{w}}"
                      for k, w in (("client", 12), ("server", 8), ("redis", 7)))
        per_request = f"{r.cpu['server'] / r.rate * 1000:.3f}" if "server" in r.cpu and r.rate else "-"
        print(f"{r.rpc:<14}{r.inflight:>10}{r.rate:>12.0f}{r.quantile_ms(0.50):>9.2f}{r.quantile_ms(0.99):>9.2f}"
              f"{share:>10}{r.errors:>8}{games:>9}{cpu}{per_request:>15}")
    print("CPU: share of one core over the window (100% = one core busy; server: supervisor and workers); "
          "server ms/req: server CPU per counted call; games/s: standard 2-player rounds finished by the "
          "SubmitAction workers inside the window (random legal actions, one round per game)")
    notes: list[str] = []
    for r in results:
        parts = []
        if r.rpc == "SubmitAction" and r.tally.created:
            parts.append(f"{r.tally.created} games created during the run")
        if workers > 1:
            each = " ".join(f"{r.cpu[f'w{i}'] * 100:.0f}%" for i in range(workers) if f"w{i}" in r.cpu)
            parts.append(f"worker CPU {each}, supervisor {r.cpu.get('supervisor', 0) * 100:.0f}%, "
                         f"connections per worker {' '.join(map(str, r.connections))}")
        if r.note:
            parts.append(r.note)
        if parts:
            notes.append(f"  {r.rpc} @{r.inflight}: " + "; ".join(parts))
    if notes:
        print("notes:" + (" (server-side means per call from its metrics)" if args.server_metrics else ""))
        print("\n".join(notes))
    goal = [r for r in results if r.rpc == "SubmitAction" and r.inflight == GOAL_INFLIGHT]
    if not goal:
        print(f"goal check: n/a (measure SubmitAction at --inflight {GOAL_INFLIGHT})")
        return
    submit = goal[0]
    p99 = submit.quantile_ms(0.99)
    goal_label = "bound with no domain work (not the service)" if args.domain_free else "goal"
    if ceilings.get(GOAL_INFLIGHT):
        ratio = submit.rate / ceilings[GOAL_INFLIGHT]
        if pairs:
            ratios, tails = [ratio], [p99]
            for k in range(1, args.goal_pairs + 1):
                health, again = (next(r for r in pairs if r.pair == k and r.rpc == name)
                                 for name in ("Health/Check", "SubmitAction"))
                ratios.append(again.rate / health.rate if health.rate else 0.0)
                tails.append(again.quantile_ms(0.99))
            print(f"goal pairs at {GOAL_INFLIGHT} in flight (the table's, then {args.goal_pairs} more, each "
                  f"Health/Check then SubmitAction): shares {' '.join(f'{x:.0%}' for x in ratios)}; "
                  f"p99 {' '.join(f'{x:.2f}' for x in tails)} ms; the goals below use the medians")
            ratio, p99 = statistics.median(ratios), statistics.median(tails)
        print(f"{goal_label}: SubmitAction >= {GOAL_SHARE:.0%} of the Health ceiling at {GOAL_INFLIGHT} in flight: "
              f"{ratio:.0%} -> {'met' if ratio >= GOAL_SHARE else 'not met'}")
    else:
        print(f"{goal_label}: SubmitAction share of the Health ceiling: n/a (Health/Check not measured)")
    print(f"{goal_label}: SubmitAction p99 <= {GOAL_P99_MS:g} ms at {GOAL_INFLIGHT} in flight: "
          f"{p99:.2f} ms -> {'met' if p99 <= GOAL_P99_MS else 'not met'}")


def report_comparison(runs: dict[int, list[Result]], args: argparse.Namespace) -> None:
    """The throughput of each worker count as a ratio to the first one's, RPC by RPC and level by level."""
    counts = list(runs)
    base = counts[0]
    print(f"server workers compared: {', '.join(map(str, counts))} (each against a fresh server, one after "
          f"the other); {os.cpu_count()} CPUs shared by the load generator ({args.client_processes} "
          f"process(es), {args.channels} channel(s)), the server and Redis; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'RPC':<14}{'in-flight':>10}" + "".join(f"{f'{n}w req/s':>12}" for n in counts)
          + "".join(f"{f'{n}w/{base}w':>9}" for n in counts[1:])
          + "".join(f"{f'client {n}w':>11}" for n in counts) + "".join(f"{f'server {n}w':>11}" for n in counts))
    by_key = {n: {(r.rpc, r.inflight): r for r in results if not r.pair} for n, results in runs.items()}
    ratios: dict[tuple[str, int], float] = {}
    for key in by_key[base]:
        row = [by_key[n].get(key) for n in counts]
        rates = "".join(f"{r.rate:>12.0f}" if r else f"{'-':>12}" for r in row)
        first = row[0]
        parts = []
        for n, r in zip(counts[1:], row[1:], strict=True):
            if r and first and first.rate:
                ratio = r.rate / first.rate
                parts.append(f"{ratio:>8.2f}x")
                if n == GOAL_WORKERS and base == 1:
                    ratios[key] = ratio
            else:
                parts.append(f"{'-':>9}")
        cpu = "".join(f"{r.cpu.get('client', 0) * 100:>10.0f}%" if r else f"{'-':>11}" for r in row)
        cpu += "".join(f"{r.cpu.get('server', 0) * 100:>10.0f}%" if r else f"{'-':>11}" for r in row)
        print(f"{key[0]:<14}{key[1]:>10}{rates}{''.join(parts)}{cpu}")
    print("client/server: CPU of the load generator and of the server processes (100% = one core). "
          "When the client's CPU plus the server's reaches the machine's cores, the workers compete with "
          "the load generator and the ratio understates what a second worker gives on a machine of its own.")
    uneven = sorted({f"{r.rpc} @{r.inflight} {' '.join(map(str, r.connections))}" for results in runs.values()
                     for r in results if len(r.connections) > 1 and max(r.connections) > 1.5 * min(r.connections)})
    if uneven:
        print("uneven connections per worker (the kernel hashes each connection to a worker; more --channels "
              "even them out): " + "; ".join(uneven))
    for (rpc, inflight), ratio in sorted(ratios.items()):
        if rpc == "SubmitAction":
            print(f"goal: SubmitAction with {GOAL_WORKERS} workers >= {GOAL_WORKERS_RATIO:g}x one worker "
                  f"at {inflight} in flight: {ratio:.2f}x -> {'met' if ratio >= GOAL_WORKERS_RATIO else 'not met'}")


def inflight_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or any(v < 1 or v > 1024 for v in values):
        raise argparse.ArgumentTypeError("in-flight counts must be between 1 and 1024")
    return values


def workers_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if len(values) < 2 or any(v < 1 or v > 64 for v in values):
        raise argparse.ArgumentTypeError("give at least two worker counts between 1 and 64, e.g. 1,2")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per RPC and in-flight level")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured time before each measurement")
    parser.add_argument("--inflight", type=inflight_list, default=[GOAL_INFLIGHT],
                        help="comma-separated in-flight levels, e.g. 1,8,32,64 (default 8)")
    parser.add_argument("--store", choices=("memory", "redis"), default="redis",
                        help="memory: the embedded store; redis: a redis-server started for the run")
    parser.add_argument("--server-workers", type=int, default=1,
                        help="server processes on the port (gostop serve --workers N; needs --store redis)")
    parser.add_argument("--compare-workers", type=workers_list, default=None, metavar="1,2",
                        help="measure once per worker count (fresh server each) and print the throughput ratios")
    parser.add_argument("--channels", type=int, default=1,
                        help="gRPC channels (one TCP connection each) the client spreads calls over")
    parser.add_argument("--client-processes", type=int, default=1,
                        help="OS processes the load generator runs in (the in-flight calls spread over them)")
    parser.add_argument("--games", type=int, default=0,
                        help="games created before each SubmitAction run (default: enough for the warm-up and "
                             f"window at {GAMES_PER_SECOND} games/s)")
    parser.add_argument("--rpcs", type=lambda t: {x.strip() for x in t.split(",") if x.strip()},
                        default=set(RPCS), help="which measurements: " + ",".join(RPCS) + " (default all)")
    parser.add_argument("--server-metrics", action="store_true",
                        help="enable the server's metrics endpoints and print its per-call means")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                        help="the server's GOSTOP_LOG_LEVEL (default info, as deployed: a JSON line per call)")
    parser.add_argument("--goal-pairs", type=int, default=0, metavar="N",
                        help=f"measure Health/Check and SubmitAction at {GOAL_INFLIGHT} in flight N more times "
                             "(alternately) and check the goals on the medians: one window's ceiling varies "
                             "by ±10%% on a shared machine")
    parser.add_argument("--domain-free", action="store_true",
                        help="measure a bound instead of the service: the server of bench/domain_free.py, "
                             "whose SubmitActions after a game's first skip the engine step, view, events and "
                             "snapshot and commit that first turn's bytes again (everything else as served)")
    parser.add_argument("--profile-server", metavar="FILE", default="",
                        help="run the server under cProfile and write its stats to FILE (slows it down)")
    args = parser.parse_args()
    if args.seconds <= 0 or args.warmup < 0 or not 1 <= args.channels <= 64 or args.games < 0:
        parser.error("need --seconds > 0, --warmup >= 0, 1 <= --channels <= 64 and --games >= 0")
    if not args.games:
        args.games = max(128, math.ceil(GAMES_PER_SECOND * (args.warmup + args.seconds)))
    if not 1 <= args.client_processes <= 16 or not 1 <= args.server_workers <= 64:
        parser.error("need 1 <= --client-processes <= 16 and 1 <= --server-workers <= 64")
    if not 0 <= args.goal_pairs <= 20:
        parser.error("need 0 <= --goal-pairs <= 20")
    if not args.rpcs or not args.rpcs <= set(RPCS):
        parser.error("--rpcs takes a comma-separated subset of " + ",".join(RPCS))
    counts = args.compare_workers or [args.server_workers]
    if max(counts) > 1 and args.store != "redis":
        parser.error("several server workers need --store redis (the memory store lives in one process)")
    if args.domain_free and max(counts) > 1:
        parser.error("--domain-free runs a single server process (not with several workers)")
    if args.profile_server and max(counts) > 1:
        parser.error("--profile-server profiles a single server process (not with several workers)")
    profile = str(Path(args.profile_server).resolve()) if args.profile_server else ""
    signal.signal(signal.SIGTERM, _terminate)
    runs: dict[int, list[Result]] = {}
    try:
        for workers in counts:
            with services(args.store, args.server_metrics, profile, workers, args.log_level,
                          args.domain_free) as server:
                runs[workers] = asyncio.run(bench(args, server))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    for workers, results in runs.items():
        report(results, args, workers)
        print()
    if args.compare_workers:
        report_comparison(runs, args)
    if profile:
        print(f"server profile (cProfile; figures above are slowed by it): {profile}")


if __name__ == "__main__":
    main()
