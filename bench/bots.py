"""Bot-seat benchmark: what going through the service costs a bot.

Usage: ``PYTHONPATH=tests python -m bench.bots [--seconds S] [--bots random,greedy,mcts] [--json PATH]``.

Starts its own ``redis-server``, a gostop server process and one bot worker process
(``gostop bots serve``, concurrency 1) on loopback, and measures:

- **latency**: a person's seat plays random legal actions against a ``greedy`` bot seat; for each
  of the person's commits, the time from its answer to the bot's commit arriving on a
  ``WatchGame`` stream (p50/p99 over the window);
- **throughput** per worker process: tables of bots alone (both seats the same bot, several games
  at once) for each bot, counted from the worker's own metrics: decisions per second, and the
  worker's CPU per decision;
- the same bots **in process**: decisions per CPU-second of ``bot.choose`` on the views of random
  rounds, with no service in between.

The overhead of the service is the in-process rate against the worker's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from gostop.bots import make_bot
from gostop.engine import Rules, apply, legal_actions, new_round, view
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.redis_server import HOST, RedisServer, free_port

from .measure import cpu_seconds
from .processes import ServerProcess
from .service import wait_serving
from .settings import OPERATOR, ROOT

BOT_KEY = "bench-bot-key-0123456789abcdef"
BUDGET_MS = 200
"""Each bot seat's budget (``mcts`` searches for this much CPU per decision)."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class Worker:
    """``gostop bots serve`` against the benchmark's server and Redis, its metrics on a free port."""

    def __init__(self, server: ServerProcess, redis_url: str) -> None:
        self.metrics_port = free_port()
        self.log = tempfile.TemporaryFile(prefix="gostop-bench-bots-")  # noqa: SIM115 (closed by stop)
        env = {**os.environ, "GOSTOP_BOT_KEY": BOT_KEY, "GOSTOP_LOG_FORMAT": "json", "GOSTOP_METRICS_HOST": HOST}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "bots", "serve", "--server", server.target, "--redis-url", redis_url,
             "--metrics-port", str(self.metrics_port), "--concurrency", "1"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def decisions(self, bot: str) -> float:
        """Decisions the worker made for ``bot`` so far (its metrics; turns no longer owed left out)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.metrics_port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        return sum(sample.value for family in text_string_to_metric_families(text)
                   for sample in family.samples
                   if sample.name == "gostop_bot_decisions_total" and sample.labels.get("bot") == bot
                   and sample.labels.get("outcome") != "stale")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


async def create(stub: pb_grpc.GameServiceStub, bots: dict[int, str], seed: int) -> pb.CreateGameResponse:
    req = pb.CreateGameRequest(preset="standard", players=2, seed=seed, rounds=1)
    for seat, bot in bots.items():
        req.bot_seats.add(seat=seat, bot=bot, budget_ms=BUDGET_MS)
    response: pb.CreateGameResponse = await stub.CreateGame(req, metadata=OPERATOR)
    return response


async def latency(stub: pb_grpc.GameServiceStub, seconds: float) -> list[float]:
    """Milliseconds from each of a person's commits to the bot's commit, over ``seconds``."""
    rng = random.Random(7)
    out: list[float] = []
    end = time.perf_counter() + seconds
    seed = 0
    while time.perf_counter() < end:
        seed += 1
        created = await create(stub, {1: "greedy"}, seed)
        token = (("authorization", f"Bearer {created.seats[0].token}"),)
        game_id = created.game_id
        watch = stub.WatchGame(pb.WatchGameRequest(game_id=game_id, after_version=created.version))
        seen = created.version
        try:
            while time.perf_counter() < end:
                own = await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=token)
                while own.view.phase != pb.PHASE_OVER and not own.view.legal_actions:  # the bot moves first
                    item = await watch.read()
                    seen = max(seen, item.version)
                    own = await stub.GetGame(pb.GetGameRequest(game_id=game_id), metadata=token)
                if own.view.phase == pb.PHASE_OVER:
                    break
                choice = rng.choice(own.view.legal_actions).id
                result = (await stub.SubmitAction(pb.SubmitActionRequest(
                    game_id=game_id, expected_version=own.version, request_id=f"p{own.version}", action_id=choice),
                    metadata=token)).result
                committed = time.perf_counter()
                if result.view.phase == pb.PHASE_OVER or result.view.to_move != 1:
                    continue  # the person moves again (or the round ended): no bot turn to time
                while seen <= result.version:
                    item = await watch.read()
                    if item is grpc.aio.EOF:
                        break
                    seen = max(seen, item.version)
                if seen > result.version:
                    out.append((time.perf_counter() - committed) * 1000)
        finally:
            watch.cancel()
    return out


async def throughput(stub: pb_grpc.GameServiceStub, worker: Worker, bot: str, seconds: float,
                     tables: int) -> tuple[float, float]:
    """Decisions per second of the worker on tables of ``bot`` alone, and its CPU ms per decision."""
    seed = 10_000
    games: list[str] = []

    async def refill() -> None:
        nonlocal seed
        for index, game_id in enumerate(list(games)):
            view_ = (await stub.GetGame(pb.GetGameRequest(game_id=game_id))).view
            if view_.phase == pb.PHASE_OVER:
                seed += 1
                games[index] = (await create(stub, {0: bot, 1: bot}, seed)).game_id
        while len(games) < tables:
            seed += 1
            games.append((await create(stub, {0: bot, 1: bot}, seed)).game_id)

    await refill()
    await asyncio.sleep(min(1.0, seconds / 4))  # warm up
    start_count, start_cpu, start = worker.decisions(bot), cpu_seconds(worker.process.pid), time.perf_counter()
    while time.perf_counter() - start < seconds:
        await refill()
        await asyncio.sleep(0.05)
    count, cpu = worker.decisions(bot) - start_count, (cpu_seconds(worker.process.pid) or 0) - (start_cpu or 0)
    elapsed = time.perf_counter() - start
    return count / elapsed, (cpu * 1000 / count) if count else float("nan")


def in_process(bot: str, seconds: float) -> float:
    """Decisions per CPU-second of ``bot.choose`` itself, on the views of random standard rounds."""
    rules = Rules.preset("standard", players=2)
    rng = random.Random(3)
    made, cpu = 0, 0.0
    options: dict[str, Any] = {"cpu_millis": BUDGET_MS} if bot == "mcts" else {}
    deadline = time.perf_counter() + seconds
    seed = 0
    while time.perf_counter() < deadline:
        seed += 1
        state, _ = new_round(rules, seed=seed)
        player = make_bot(bot, seed=seed, **options)
        while not state.over and time.perf_counter() < deadline:
            legal = legal_actions(state)
            seen = view(state, state.to_move)
            started = time.thread_time()
            player.choose(seen, seen.legal_actions)
            cpu += time.thread_time() - started
            made += 1
            state, _ = apply(state, legal[rng.randrange(len(legal))])
    return made / cpu if cpu else float("nan")


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    redis = RedisServer().start()
    os.environ["GOSTOP_BOT_KEYS"] = BOT_KEY
    server = ServerProcess(redis.url, metrics=False, log_level="warning")
    worker: Worker | None = None
    try:
        server.start()
        await wait_serving(server)
        worker = Worker(server, redis.url)
        results: dict[str, Any] = {"budget_ms": BUDGET_MS, "seconds": args.seconds}
        async with grpc.aio.insecure_channel(server.target) as channel:
            stub = pb_grpc.GameServiceStub(channel)
            times = await latency(stub, args.seconds)
            results["latency_ms"] = {"turns": len(times), "p50": percentile(times, 0.5),
                                     "p99": percentile(times, 0.99),
                                     "mean": statistics.fmean(times) if times else float("nan")}
            results["bots"] = {}
            for bot in bots:
                tables = 1 if bot == "mcts" else 4
                rate, cpu_ms = await throughput(stub, worker, bot, args.seconds, tables)
                local = in_process(bot, args.seconds)
                results["bots"][bot] = {"service_decisions_per_s": rate, "worker_cpu_ms_per_decision": cpu_ms,
                                        "in_process_decisions_per_cpu_s": local,
                                        "in_process_cpu_ms_per_decision": 1000 / local}
        return results
    finally:
        if worker is not None:
            worker.stop()
        server.stop()
        redis.stop()


def report(results: dict[str, Any]) -> str:
    lat = results["latency_ms"]
    lines = [
        f"bot seats (one worker process, concurrency 1; budget {results['budget_ms']} ms; "
        f"windows of {results['seconds']:g} s)",
        f"  latency, a person's commit -> the greedy bot's commit: p50 {lat['p50']:.1f} ms, "
        f"p99 {lat['p99']:.1f} ms over {lat['turns']} turns",
        f"  {'bot':<8} {'through the service':>20} {'worker CPU/decision':>20} {'in process':>11}"
        f" {'service overhead':>17}",
    ]
    for bot, r in results["bots"].items():
        worker, local = r["worker_cpu_ms_per_decision"], r["in_process_cpu_ms_per_decision"]
        lines.append(f"  {bot:<8} {r['service_decisions_per_s']:>14.1f} dec/s {worker:>17.2f} ms {local:>8.2f} ms"
                     f" {worker - local:>14.2f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="each measurement's window")
    parser.add_argument("--bots", default="random,greedy,mcts")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    results = asyncio.run(measure(args))
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
