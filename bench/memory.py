"""Memory benchmark: Redis bytes per game and server process memory, with projections.

Usage: ``PYTHONPATH=tests python -m bench.memory [--games N] [--json PATH]``.

Starts its own ``redis-server`` and a gostop server process (``python -m gostop serve``) on
loopback, then plays ``--games`` standard 2-player games through the API with random legal
actions, every action with a request id (as the client library sends them), and measures:

- Redis ``used_memory`` per game, and ``MEMORY USAGE`` of each key of a game (snapshot hash,
  log stream, idempotency hash) at three points of its life: just created, mid-round (after
  ``--moves`` actions) and finished (the round played to its end);
- the server's resident memory (RSS) before and after, i.e. per game kept in its snapshot and
  view caches;

and prints what 100,000 concurrent games and a 10-million-round tournament would need, from
these figures and the throughput given with ``--rounds-per-second`` (measure it with
``bench/service.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc
from testkit.redis_server import RedisServer

from .processes import ServerProcess
from .service import wait_serving
from .settings import OPERATOR


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def redis_int(redis: RedisServer, *command: str) -> int:
    reply = redis.command(*command)
    return int(reply) if isinstance(reply, int | str | bytes) and str(reply).lstrip("-").isdigit() else 0


def used_memory(redis: RedisServer) -> int:
    info = redis.command("INFO", "memory")
    text = info.decode() if isinstance(info, bytes) else str(info)
    for row in text.splitlines():
        if row.startswith("used_memory:"):
            return int(row.split(":")[1])
    raise RuntimeError("no used_memory in INFO")


def key_sizes(redis: RedisServer, game_id: str) -> dict[str, int]:
    """``MEMORY USAGE`` of each key of one game (SAMPLES 0: every element counted)."""
    return {
        part: redis_int(redis, "MEMORY", "USAGE", f"gostop:{{{game_id}}}:{part}", "SAMPLES", "0")
        for part in ("snap", "log", "req")
    }


@dataclass
class Played:
    game_id: str
    moves: int
    finished: bool


async def play(stub: Any, rng: random.Random, moves: int | None) -> Played:
    """Create a game and play ``moves`` random legal actions (None: to the end of the round)."""
    created = await stub.CreateGame(pb.CreateGameRequest(preset="standard", players=2, seed=rng.getrandbits(63)),
                                    metadata=OPERATOR)
    tokens = {s.seat: (("authorization", "Bearer " + s.token),) for s in created.seats}
    view, version, done = created.view, created.version, 0
    while view.phase != pb.PHASE_OVER and (moves is None or done < moves):
        seat = view.to_move
        own = (await stub.GetGame(pb.GetGameRequest(game_id=created.game_id), metadata=tokens[seat])).view
        action = rng.choice(own.legal_actions).id
        reply = await stub.SubmitAction(
            pb.SubmitActionRequest(game_id=created.game_id, expected_version=version,
                                   request_id=f"m{done}-{rng.getrandbits(32)}", action_id=action),
            metadata=tokens[seat],
        )
        view, version, done = reply.result.view, reply.result.version, done + 1
    return Played(created.game_id, done, view.phase == pb.PHASE_OVER)


async def measure(args: argparse.Namespace, redis: RedisServer, server: ServerProcess) -> dict[str, Any]:
    rng = random.Random(args.seed)
    assert server.process is not None
    pid = server.process.pid
    async with grpc.aio.insecure_channel(server.target) as channel:
        stub = pb_grpc.GameServiceStub(channel)
        await play(stub, rng, 3)  # warm the server up (imports, caches)
        redis.command("FLUSHALL")
        base_redis, base_rss = used_memory(redis), rss_bytes(pid)
        fresh = await play(stub, rng, 0)
        middle = await play(stub, rng, args.moves)
        whole = await play(stub, rng, None)
        samples = {
            "created": key_sizes(redis, fresh.game_id),
            f"after {middle.moves} actions": key_sizes(redis, middle.game_id),
            f"finished ({whole.moves} actions)": key_sizes(redis, whole.game_id),
        }

        async def batch(count: int, moves: int | None) -> list[Played]:
            out = []
            for _ in range(count):
                out.append(await play(stub, rng, moves))
            return out

        before = used_memory(redis)
        parallel = 8
        share = args.games // parallel
        played = [p for group in await asyncio.gather(*(batch(share, args.moves) for _ in range(parallel)))
                  for p in group]
        per_game_redis = (used_memory(redis) - before) / len(played)
        per_game_rss = (rss_bytes(pid) - base_rss) / (len(played) + 3)
    return {
        "games": len(played), "moves_per_game": args.moves,
        "redis_bytes_per_game": round(per_game_redis), "redis_base_bytes": base_redis,
        "server_rss_base_bytes": base_rss, "server_rss_bytes_per_game": round(per_game_rss),
        "key_bytes": samples,
    }


def projections(figures: dict[str, Any], rounds_per_second: float, rss_budget: int) -> list[str]:
    per_game = figures["redis_bytes_per_game"]
    finished = sum(list(figures["key_bytes"].values())[-1].values())
    live = 100_000 * per_game
    cached = max(0, rss_budget - figures["server_rss_base_bytes"]) // max(1, figures["server_rss_bytes_per_game"])
    lines = [
        f"100,000 concurrent games (each mid-round, {figures['moves_per_game']} actions in): Redis "
        f"~{live / 2**30:.2f} GiB of data ({per_game:,} B per game) plus Redis overhead; "
        f"finished games kept for GOSTOP_FINISHED_TTL_SECONDS cost ~{finished:,} B each.",
        f"server processes: each keeps up to GOSTOP_SNAPSHOT_CACHE games in memory "
        f"(~{figures['server_rss_bytes_per_game']:,} B per cached game measured; base RSS "
        f"{figures['server_rss_base_bytes'] / 2**20:.0f} MiB), so a {rss_budget / 2**20:.0f} MiB worker "
        f"caches ~{cached:,} games;"
        " the cache only saves decoding: a miss costs one snapshot decode and the replay of at most three"
        " log entries after it, not correctness.",
    ]
    if rounds_per_second > 0:
        seconds = 10_000_000 / rounds_per_second
        lines.append(
            f"10,000,000 tournament rounds at {rounds_per_second:,.0f} rounds/s per worker: "
            f"{seconds / 3600:,.1f} worker-hours (e.g. {seconds / 3600 / 16:,.1f} h on 16 workers); "
            f"if finished games are kept, Redis holds ~{10_000_000 * finished / 2**30:,.0f} GiB for their TTL "
            "- set GOSTOP_FINISHED_TTL_SECONDS low (or read the logs out) for a tournament."
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=400, help="games played for the per-game averages")
    parser.add_argument("--moves", type=int, default=20, help="actions into each measured game (mid-round)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds-per-second", type=float, default=0.0,
                        help="whole rounds per second one worker plays (from bench_service) for the projection")
    parser.add_argument("--rss-budget-mib", type=int, default=512, help="worker memory for the cache projection")
    parser.add_argument("--json", metavar="PATH", default="", help="also write the figures as JSON")
    args = parser.parse_args()
    with RedisServer() as redis:
        server = ServerProcess(redis.url, metrics=False)
        server.start()
        try:
            asyncio.run(wait_serving(server))
            figures = asyncio.run(measure(args, redis, server))
        finally:
            server.stop()
    print(f"gostop memory, {figures['games']} standard 2-player games, {args.moves} actions each, every action "
          "with a request id")
    print(f"Redis: {figures['redis_bytes_per_game']:,} bytes per game (used_memory growth / games)")
    print(f"{'key bytes (MEMORY USAGE)':<28}{'snap':>10}{'log':>10}{'req':>10}{'total':>10}")
    for when, sizes in figures["key_bytes"].items():
        print(f"{when:<28}{sizes['snap']:>10,}{sizes['log']:>10,}{sizes['req']:>10,}{sum(sizes.values()):>10,}")
    print(f"server RSS: {figures['server_rss_base_bytes'] / 2**20:.1f} MiB at start, "
          f"+{figures['server_rss_bytes_per_game']:,} bytes per game played (snapshot and view caches)")
    print("projections:")
    for line in projections(figures, args.rounds_per_second, args.rss_budget_mib * 2**20):
        print("  " + line)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
