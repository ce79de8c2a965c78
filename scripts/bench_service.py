"""Service benchmark: the gRPC server's requests per second and latency, over loopback.

Usage: ``python scripts/bench_service.py [--seconds S] [--inflight 1,8,32,64] [--store memory|redis]``.

Starts its own ``redis-server`` (``--store redis``, the default) and the gostop server as a separate
OS process (``python -m service serve``), so that the asyncio gRPC client here and the server do not
share a GIL, waits for health SERVING, then measures, for each in-flight level:

- ``Health/Check``: the ceiling of this server and this client (the cheapest RPC there is);
- ``SubmitAction``: workers, one per in-flight call, each play their own standard 2-player games
  with random legal actions, at the expected version and with a request id; a worker mirrors its
  game with the engine from the game's seed (CreateGame takes one), so it knows the next seat's
  legal actions without a GetGame per action; when a round ends the worker takes the next game
  created beforehand, or creates one. Only SubmitAction calls are counted;
- ``GetGame``: a seat's view of one of those games.

Prints requests/s, p50 and p99 (client side: they include the client's own gRPC overhead),
SubmitAction as a percentage of the Health ceiling, the CPU that client, server and Redis used
during each window (from ``/proc``) and the server's CPU per call, then the goal check at 8 in
flight. ``--server-metrics`` adds the server's own per-call means (RPC and store operations) from
its Prometheus endpoint; ``--profile-server FILE`` runs the server under cProfile. Client, server
and Redis share the machine's cores: compare figures within one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine import Rules, State, action_from_id, apply_unchecked, legal_action_ids, new_match
from service.pb.gostop.v1 import game_pb2 as pb
from service.pb.gostop.v1 import game_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))
from redis_server import HOST, RedisServer, free_port  # noqa: E402  (tests/ is not a package)

PRESET = "standard"
PLAYERS = 2
GOAL_INFLIGHT = 8
GOAL_SHARE = 0.50
GOAL_P99_MS = 5.0
CALL_TIMEOUT = 10.0
"""Deadline of every call (seconds): a stalled server fails the call instead of hanging the run."""
TOKEN_SECRET = "bench-service-token-secret-0123456789"
Metadata = tuple[tuple[str, str], ...]
RPCS = ("health", "submit", "get")


# ----------------------------------------------------------------------------- processes


class ServerProcess:
    """``python -m service serve`` on a free loopback port, its log in a temporary file."""

    def __init__(self, redis_url: str, metrics: bool, profile: str = "", redis_pid: int | None = None) -> None:
        self.redis_url = redis_url
        self.redis_pid = redis_pid
        self.metrics = metrics
        self.profile = profile
        self.port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def target(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        self.metrics_port = free_port() if self.metrics else 0
        env = dict(os.environ)
        env.update(
            GOSTOP_REDIS_URL=self.redis_url,
            GOSTOP_TOKEN_SECRET=TOKEN_SECRET,
            GOSTOP_LOG_LEVEL="warning",
            GOSTOP_LOG_FORMAT="json",
            GOSTOP_METRICS_HOST=HOST,
        )
        self._log = tempfile.TemporaryFile(prefix="gostop-bench-server-")  # noqa: SIM115 (closed by stop)
        profiler = ["-m", "cProfile", "-o", self.profile] if self.profile else []
        argv = [
            sys.executable, *profiler, "-m", "service", "serve", "--listen", self.target,
            "--metrics-port", str(self.metrics_port),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )

    def log_tail(self, size: int = 3000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-size:]

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM (the server drains), then SIGKILL after a few seconds."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None


@contextlib.contextmanager
def services(store: str, metrics: bool, profile: str = "") -> Iterator[ServerProcess]:
    """A redis-server (for ``store == "redis"``) and a gostop server, stopped on the way out."""
    redis: RedisServer | None = None
    server: ServerProcess | None = None
    try:
        redis_url = ""
        if store == "redis":
            redis = RedisServer().start()
            redis_url = redis.url
        server = ServerProcess(redis_url, metrics, profile, redis.process.pid if redis and redis.process else None)
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
class Result:
    rpc: str
    inflight: int
    seconds: float
    latencies: list[float]
    errors: int = 0
    note: str = ""
    cpu: dict[str, float] = dataclasses.field(default_factory=dict)
    """CPU seconds per second of the window (1.0 = one core busy), by process: client, server, redis."""

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds > 0 else 0.0

    def quantile_ms(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Clock:
    """The measurement window: calls that start inside it and end before its end are counted."""

    def __init__(self, warmup: float, seconds: float) -> None:
        now = time.perf_counter()
        self.start = now + warmup
        self.end = self.start + seconds

    def over(self) -> bool:
        return time.perf_counter() >= self.end


Worker = Callable[[int, Clock, list[float]], Awaitable[int]]
"""A worker: (index, window, latencies out) -> errors; it loops until the window closes."""


async def timed(call: Awaitable[Any], clock: Clock, out: list[float]) -> Any:
    """Await ``call``; record its latency if it fell inside the window."""
    started = time.perf_counter()
    response = await call
    ended = time.perf_counter()
    if started >= clock.start and ended <= clock.end:
        out.append(ended - started)
    return response


async def run_workers(rpc: str, inflight: int, clock: Clock, worker: Worker) -> Result:
    """Run ``inflight`` copies of ``worker`` until the window closes; each returns its error count."""
    samples: list[list[float]] = [[] for _ in range(inflight)]
    errors = await asyncio.gather(*(worker(i, clock, samples[i]) for i in range(inflight)))
    latencies = [x for s in samples for x in s]
    return Result(rpc, inflight, clock.end - clock.start, latencies, sum(errors))


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; the client's own via ``process_time``)."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def cpu_during(clock: Clock, pids: dict[str, int | None]) -> dict[str, float]:
    """CPU seconds per second of each process over the measurement window."""
    await asyncio.sleep(max(0.0, clock.start - time.perf_counter()))
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    await asyncio.sleep(max(0.0, clock.end - time.perf_counter()))
    after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    out = {}
    for name, start in before.items():
        end = after[name]
        if start is not None and end is not None:
            out[name] = (end - start) / (clock.end - clock.start)
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


def submit_worker(games: Games, tag: str) -> Worker:
    stub = games.stub

    async def worker(index: int, clock: Clock, out: list[float]) -> int:
        chooser = random.Random(index)
        errors = 0
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
                response = await timed(call, clock, out)
            except grpc.aio.AioRpcError:
                errors += 1
                game = await games.take()
                continue
            game.state, _ = apply_unchecked(game.state, action_from_id(choice))
            game.version = response.result.version
            view = response.result.view
            if not game.state.over and view.to_move != game.state.to_move:
                raise RuntimeError(f"game {game.game_id}: the server and the local mirror disagree")
        return errors

    return worker


def get_worker(games: Games) -> Worker:
    stub = games.stub

    async def worker(index: int, clock: Clock, out: list[float]) -> int:
        chooser = random.Random(1000 + index)
        errors = 0
        while not clock.over():
            game = chooser.choice(games.known)
            seat = chooser.randrange(PLAYERS)
            try:
                request = pb.GetGameRequest(game_id=game.game_id)
                await timed(stub.GetGame(request, metadata=game.seats[seat], timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                errors += 1
        return errors

    return worker


def health_worker(stub: Any) -> Worker:
    request = health_pb2.HealthCheckRequest(service="")

    async def worker(index: int, clock: Clock, out: list[float]) -> int:
        errors = 0
        while not clock.over():
            try:
                await timed(stub.Check(request, timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                errors += 1
        return errors

    return worker


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
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if not server.running():
                raise RuntimeError("the gostop server exited:\n" + server.log_tail())
            with contextlib.suppress(grpc.aio.AioRpcError):
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("the gostop server did not become SERVING:\n" + server.log_tail())
            await asyncio.sleep(0.1)


def game_stub(channel: grpc.aio.Channel) -> Any:
    return pb_grpc.GameServiceStub(channel)  # type: ignore[no-untyped-call]


async def measure(
    rpc: str, inflight: int, workers: Sequence[tuple[int, Worker]], args: argparse.Namespace, server: ServerProcess
) -> Result:
    """One measurement: ``workers`` lists (count, worker) per channel; the counts add up to ``inflight``."""
    before = scrape(server.metrics_port) if server.metrics_port else {}
    clock = Clock(args.warmup, args.seconds)
    pids: dict[str, int | None] = {"client": None}
    if server.process is not None:
        pids["server"] = server.process.pid
    if server.redis_pid is not None:
        pids["redis"] = server.redis_pid
    cpu = asyncio.ensure_future(cpu_during(clock, pids))
    done = await asyncio.gather(*(run_workers(rpc, count, clock, worker) for count, worker in workers if count))
    latencies = [x for r in done for x in r.latencies]
    result = Result(rpc, inflight, args.seconds, latencies, sum(r.errors for r in done), cpu=await cpu)
    if server.metrics_port:
        result.note = server_breakdown(before, scrape(server.metrics_port))
    if not server.running():
        raise RuntimeError("the gostop server exited:\n" + server.log_tail())
    return result


async def bench(args: argparse.Namespace, server: ServerProcess) -> list[Result]:
    await wait_serving(server)
    channels = [grpc.aio.insecure_channel(server.target) for _ in range(args.channels)]
    try:
        for channel in channels:
            await channel.channel_ready()
        health_stubs = [health_pb2_grpc.HealthStub(c) for c in channels]
        results: list[Result] = []
        for inflight in args.inflight:
            # Workers spread over the channels, each channel with its own game pool.
            per = [inflight // len(channels) + (i < inflight % len(channels)) for i in range(len(channels))]
            pools = [Games(game_stub(c), seed=inflight * 100 + i) for i, c in enumerate(channels)]
            for pool, count in zip(pools, per, strict=True):
                await pool.prepare(max(args.games // len(channels), 2 * count))
            if "health" in args.rpcs:
                health = [(count, health_worker(stub)) for count, stub in zip(per, health_stubs, strict=True)]
                results.append(await measure("Health/Check", inflight, health, args, server))
            if "submit" in args.rpcs:
                created = sum(p.created_inline for p in pools)
                submit = [(count, submit_worker(pool, f"c{i}-f{inflight}"))
                          for i, (count, pool) in enumerate(zip(per, pools, strict=True))]
                result = await measure("SubmitAction", inflight, submit, args, server)
                created = sum(p.created_inline for p in pools) - created
                result.note = f"{created} games created during the run" + (f"; {result.note}" if result.note else "")
                results.append(result)
            if "get" in args.rpcs:
                get = [(count, get_worker(pool)) for count, pool in zip(per, pools, strict=True)]
                results.append(await measure("GetGame", inflight, get, args, server))
        return results
    finally:
        for channel in channels:
            await channel.close()


def report(results: Sequence[Result], args: argparse.Namespace) -> None:
    ceilings = {r.inflight: r.rate for r in results if r.rpc == "Health/Check"}
    print(f"gostop service over loopback, store {args.store}, {args.seconds:g} s per measurement, "
          f"{args.channels} channel(s), {os.cpu_count()} CPUs shared by client, server and Redis, "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'RPC':<14}{'in-flight':>10}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'% Health':>10}{'errors':>8}"
          f"{'CPU client':>12}{'server':>8}{'redis':>7}{'server ms/req':>15}")
    for r in results:
        share = f"{r.rate / ceilings[r.inflight] * 100:.0f}%" if ceilings.get(r.inflight) else "-"
        cpu = "".join(f"{f'{r.cpu[k] * 100:.0f}%' if k in r.cpu else '-':>{w}}"
                      for k, w in (("client", 12), ("server", 8), ("redis", 7)))
        per_request = f"{r.cpu['server'] / r.rate * 1000:.3f}" if "server" in r.cpu and r.rate else "-"
        print(f"{r.rpc:<14}{r.inflight:>10}{r.rate:>12.0f}{r.quantile_ms(0.50):>9.2f}{r.quantile_ms(0.99):>9.2f}"
              f"{share:>10}{r.errors:>8}{cpu}{per_request:>15}")
    print("CPU: share of one core over the window (100% = one core busy); server ms/req: server CPU per counted call")
    notes = [r for r in results if r.note]
    if notes:
        print("notes (server-side means per call, from its metrics):" if args.server_metrics else "notes:")
        for r in notes:
            print(f"  {r.rpc} @{r.inflight}: {r.note}")
    goal = [r for r in results if r.rpc == "SubmitAction" and r.inflight == GOAL_INFLIGHT]
    if not goal:
        print(f"goal check: n/a (measure at --inflight {GOAL_INFLIGHT})")
        return
    submit = goal[0]
    p99 = submit.quantile_ms(0.99)
    if ceilings.get(GOAL_INFLIGHT):
        ratio = submit.rate / ceilings[GOAL_INFLIGHT]
        print(f"goal: SubmitAction >= {GOAL_SHARE:.0%} of the Health ceiling at {GOAL_INFLIGHT} in flight: "
              f"{ratio:.0%} -> {'met' if ratio >= GOAL_SHARE else 'not met'}")
    else:
        print("goal: SubmitAction share of the Health ceiling: n/a (Health/Check not measured)")
    print(f"goal: SubmitAction p99 <= {GOAL_P99_MS:g} ms at {GOAL_INFLIGHT} in flight: "
          f"{p99:.2f} ms -> {'met' if p99 <= GOAL_P99_MS else 'not met'}")


def inflight_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or any(v < 1 or v > 1024 for v in values):
        raise argparse.ArgumentTypeError("in-flight counts must be between 1 and 1024")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per RPC and in-flight level")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured time before each measurement")
    parser.add_argument("--inflight", type=inflight_list, default=[GOAL_INFLIGHT],
                        help="comma-separated in-flight levels, e.g. 1,8,32,64 (default 8)")
    parser.add_argument("--store", choices=("memory", "redis"), default="redis",
                        help="memory: the embedded store; redis: a redis-server started for the run")
    parser.add_argument("--channels", type=int, default=1, help="gRPC channels the client spreads calls over")
    parser.add_argument("--games", type=int, default=128, help="games created before each SubmitAction run")
    parser.add_argument("--rpcs", type=lambda t: {x.strip() for x in t.split(",") if x.strip()},
                        default=set(RPCS), help="which measurements: " + ",".join(RPCS) + " (default all)")
    parser.add_argument("--server-metrics", action="store_true",
                        help="enable the server's metrics endpoint and print its per-call means")
    parser.add_argument("--profile-server", metavar="FILE", default="",
                        help="run the server under cProfile and write its stats to FILE (slows it down)")
    args = parser.parse_args()
    if args.seconds <= 0 or args.warmup < 0 or not 1 <= args.channels <= 16 or args.games < 1:
        parser.error("need --seconds > 0, --warmup >= 0, 1 <= --channels <= 16 and --games >= 1")
    if not args.rpcs or not args.rpcs <= set(RPCS):
        parser.error("--rpcs takes a comma-separated subset of " + ",".join(RPCS))
    profile = str(Path(args.profile_server).resolve()) if args.profile_server else ""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with services(args.store, args.server_metrics, profile) as server:
            results = asyncio.run(bench(args, server))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    report(results, args)
    if profile:
        print(f"server profile (cProfile; figures above are slowed by it): {profile}")


if __name__ == "__main__":
    main()
