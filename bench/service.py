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
commit that first turn's bytes again (its snapshot at the versions where the service writes one),
so that its figures are what any faster domain code could reach at most.

``--compare-workers 1,2`` runs the whole measurement once per worker count, each against a fresh
server, and prints the throughput ratio of each count to the first (the goal: at least 1.6x with 2
workers on two cores). The client spreads its calls over ``--channels`` gRPC channels, each
its own TCP connection (the kernel hands each connection to one worker, so one channel would
keep one worker busy and the other idle), and over ``--client-processes`` OS processes (one
Python process is one core of load at most). Client, server and Redis share the machine's cores:
compare figures within one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .load import Balance, Clients
from .measure import Clock, Result, cpu_during
from .processes import ServerProcess, _terminate, services
from .scrape import scrape_all, server_breakdown
from .settings import (
    GAMES_PER_SECOND,
    GOAL_INFLIGHT,
    GOAL_P99_MS,
    GOAL_SHARE,
    GOAL_WORKERS,
    GOAL_WORKERS_RATIO,
    RPC_NAMES,
    RPCS,
)

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
