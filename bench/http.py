"""HTTP-port benchmark: SubmitAction over the Connect protocol beside the same server's
gRPC SubmitAction and its Health/Check ceiling, in one run.

Usage: ``PYTHONPATH=tests python -m bench.http [--seconds S] [--inflight 1,8] [--pairs N]
[--asgi hypercorn,uvicorn,granian] [--json PATH]``.

Starts its own ``redis-server`` and a server process with both ports, then, at each in-flight
level, alternates windows of: Health/Check (gRPC), SubmitAction over gRPC, and SubmitAction over
the Connect protocol (``connectrpc``'s client, binary protobuf), ``--pairs`` times, each worker
playing its own games with random legal actions (``bench.load``'s workers; the Connect calls go
through ``testkit.connect``'s stub). Prints requests/s and p50/p99 per protocol (medians over the
windows) and Connect's share of gRPC and of the Health ceiling.

``--asgi`` repeats the Connect measurement against servers whose HTTP port is served by each
named ASGI server (``bench.asgi_servers``): what chose Hypercorn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2_grpc

from testkit.connect import ConnectStub
from testkit.redis_server import RedisServer, free_port

from .load import Games, game_stub, health_worker, submit_worker
from .measure import Clock, Tally, run_workers
from .processes import ServerProcess
from .service import wait_serving


def summary(tallies: list[tuple[Tally, float]]) -> dict[str, float]:
    """Median requests/s, p50 and p99 (ms) over windows of (tally, seconds)."""
    rates, p50s, p99s = [], [], []
    for tally, seconds in tallies:
        lat = sorted(tally.latencies)
        if not lat:
            continue
        rates.append(len(lat) / seconds)
        p50s.append(lat[len(lat) // 2] * 1000)
        p99s.append(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000)
    if not rates:
        return {"rps": 0.0, "p50_ms": float("nan"), "p99_ms": float("nan"), "errors": 0}
    return {"rps": statistics.median(rates), "p50_ms": statistics.median(p50s), "p99_ms": statistics.median(p99s),
            "errors": sum(t.errors for t, _ in tallies)}


async def window(inflight: int, seconds: float, warmup: float, worker: Any) -> tuple[Tally, float]:
    clock = Clock.after(warmup, seconds)
    tally = await run_workers(inflight, clock, worker)
    return tally, seconds


async def measure_server(program: str, args: argparse.Namespace, redis: RedisServer, rpcs: list[str]
                         ) -> dict[str, Any]:
    http_port = free_port()
    os.environ["GOSTOP_HTTP_LISTEN"] = f"127.0.0.1:{http_port}"
    server = ServerProcess(redis.url, metrics=False, log_level=args.log_level, program=program)
    server.start()
    out: dict[str, Any] = {}
    try:
        await wait_serving(server)
        async with grpc.aio.insecure_channel(server.target) as channel:
            grpc_games = Games(game_stub(channel), seed=1)
            connect_games = Games(ConnectStub(f"http://127.0.0.1:{http_port}", "connect"), seed=2)
            health = health_worker(health_pb2_grpc.HealthStub(channel))
            for inflight in args.inflight:
                await grpc_games.prepare(inflight * 4)
                await connect_games.prepare(inflight * 4)
                windows: dict[str, list[tuple[Tally, float]]] = {rpc: [] for rpc in rpcs}
                for pair in range(args.pairs):
                    workers = {"health": health, "grpc": submit_worker(grpc_games, f"g{inflight}-{pair}"),
                               "connect": submit_worker(connect_games, f"c{inflight}-{pair}")}
                    order = rpcs if pair % 2 == 0 else list(reversed(rpcs))
                    for rpc in order:
                        windows[rpc].append(await window(inflight, args.seconds, args.warmup, workers[rpc]))
                out[str(inflight)] = {rpc: summary(w) for rpc, w in windows.items()}
    finally:
        server.stop()
    return out


def report(results: dict[str, Any]) -> str:
    lines = []
    main = results["hypercorn"]
    lines.append("HTTP port: SubmitAction over Connect beside gRPC on the same server (medians of the windows)")
    lines.append(f"  {'in flight':<10}{'Health req/s':>14}{'gRPC req/s':>12}{'p50/p99 ms':>14}"
                 f"{'Connect req/s':>15}{'p50/p99 ms':>14}{'Connect/gRPC':>14}{'of Health':>11}")
    for inflight, r in main.items():
        h, g, c = r["health"], r["grpc"], r["connect"]
        lines.append(f"  {inflight:<10}{h['rps']:>14.0f}{g['rps']:>12.0f}{g['p50_ms']:>7.2f}/{g['p99_ms']:<6.2f}"
                     f"{c['rps']:>15.0f}{c['p50_ms']:>7.2f}/{c['p99_ms']:<6.2f}"
                     f"{c['rps'] / g['rps'] if g['rps'] else 0:>14.0%}{c['rps'] / h['rps'] if h['rps'] else 0:>11.0%}")
    others = [name for name in results if name != "hypercorn"]
    if others:
        lines.append("  the HTTP port's ASGI server (Connect SubmitAction req/s, p99 ms):")
        for name in ["hypercorn", *others]:
            lines.append("    " + name + ": " + ", ".join(
                f"{inflight} in flight {r['connect']['rps']:.0f} ({r['connect']['p99_ms']:.2f})"
                for inflight, r in results[name].items()))
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with RedisServer() as redis:
        results["hypercorn"] = await measure_server("", args, redis, ["health", "grpc", "connect"])
        for name in args.asgi:
            if name != "hypercorn":
                os.environ["BENCH_ASGI"] = name
                results[name] = await measure_server("bench.asgi_servers", args, redis, ["connect"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--inflight", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--pairs", type=int, default=3, help="windows of each kind per in-flight level")
    parser.add_argument("--asgi", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=[],
                        help="also serve the HTTP port with these ASGI servers (uvicorn, granian)")
    parser.add_argument("--log-level", default="info", help="the server's (info: a log line per call, as deployed)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
