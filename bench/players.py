"""Connected-players benchmark: N people holding WatchGame streams, thinking 1-3 s and playing
when their stream says it is their turn, against a real server on Redis.

Usage: ``PYTHONPATH=tests python -m bench.players [--players 250,500] [--workers 1,2]
[--seconds S | --minutes M] [--connect-share 0.25] [--three-share 0] [--json PATH]``.

Builds the Go load generator (``clients/go/cmd/players``, with ``go build``), then for each worker
count and each size: starts its own ``redis-server`` and ``gostop serve`` (``--workers N``, gRPC and
the HTTP port; ``GOSTOP_MAX_WATCH_PER_PEER=0``, since every stream comes from one loopback address),
runs the generator for the window and stops both. Prints one row per run (players, workers,
actions/s, the actor's submit p50/p99, the fan-out p50/p99/max, lost and duplicated stream
versions, errors, server CPU and its share per action, Redis CPU, server RSS and Redis memory at
the window's end, and the generator's CPU per player-second; the memory per player is the slope
between sizes, since a fresh server's own memory moves by more than a small run adds) and writes
them as JSON with ``--json``. ``--minutes`` is one long window (a soak): ``make soak`` runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from testkit.redis_server import RedisServer, command, free_port

from .measure import cpu_seconds
from .processes import ServerProcess
from .service import wait_serving
from .settings import OPERATOR_KEY, ROOT

GO_MODULE = ROOT / "clients" / "go"


def build_generator(out: Path) -> None:
    """``go build`` the generator into ``out``."""
    go = shutil.which("go")
    if go is None:
        raise SystemExit("bench.players needs the Go toolchain (go) to build clients/go/cmd/players")
    subprocess.run([go, "build", "-o", str(out), "./cmd/players"], cwd=GO_MODULE, check=True, timeout=600)


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def redis_memory(port: int) -> int:
    """``used_memory`` of the redis-server on ``port``."""
    info = command(port, "INFO", "memory")
    text = info.decode() if isinstance(info, bytes) else str(info)
    for row in text.splitlines():
        key, _, value = row.partition(":")
        if key == "used_memory":
            return int(value.strip())
    return 0


def cpu_of(pids: list[int]) -> dict[int, float]:
    out: dict[int, float] = {}
    for pid in pids:
        seconds = cpu_seconds(pid)
        if seconds is not None:
            out[pid] = seconds
    return out


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[pid] - start for pid, start in before.items() if pid in after)


def sample_memory(server: ServerProcess, redis_port: int, until: float) -> list[dict[str, float]]:
    """Server RSS and Redis memory once a minute (at least ten times a window) until ``until``:
    what a soak's flatness is judged on."""
    start = time.monotonic()
    every = min(60.0, (until - start) / 10)
    samples = []
    while (now := time.monotonic()) < until:
        time.sleep(min(every, until - now))
        samples.append({"seconds": round(time.monotonic() - start, 1),
                        "server_rss_bytes": sum(rss_bytes(pid) for pid in server.pids()),
                        "redis_memory_bytes": redis_memory(redis_port)})
    return samples


def run_one(generator: Path, players: int, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """One window: a fresh Redis and server, the generator at ``players``, every figure of the row."""
    with RedisServer() as redis:
        http_port = free_port()
        saved = {k: os.environ.get(k) for k in ("GOSTOP_HTTP_LISTEN", "GOSTOP_MAX_WATCH_PER_PEER",
                                                "GOSTOP_FINISHED_TTL_SECONDS")}
        os.environ["GOSTOP_HTTP_LISTEN"] = f"127.0.0.1:{http_port}"
        os.environ["GOSTOP_MAX_WATCH_PER_PEER"] = "0"
        if args.finished_ttl is not None:
            os.environ["GOSTOP_FINISHED_TTL_SECONDS"] = str(args.finished_ttl)
        assert redis.process is not None
        server = ServerProcess(redis.url, metrics=False, redis_pid=redis.process.pid, workers=workers,
                               log_level=args.log_level)
        try:
            server.start()
            asyncio.run(wait_serving(server))
            redis_base = redis_memory(redis.port)
            server_pids = server.pids()
            rss_base = sum(rss_bytes(pid) for pid in server_pids)
            with tempfile.TemporaryDirectory(prefix="gostop-players-") as tmp:
                out = Path(tmp) / "players.json"
                argv = [str(generator), "-grpc", server.target, "-http", f"127.0.0.1:{http_port}",
                        "-players", str(players), "-connect-share", str(args.connect_share),
                        "-three-share", str(args.three_share), "-think-min", f"{args.think_min}s",
                        "-think-max", f"{args.think_max}s", "-warmup", f"{args.warmup}s",
                        "-duration", f"{args.window}s", "-json", str(out), f"-views={str(args.views).lower()}",
                        f"-whole-versions={str(args.whole_versions).lower()}",
                        "-rounds", str(args.rounds)]
                env = dict(os.environ, GOSTOP_API_KEY=OPERATOR_KEY)
                proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                output: list[str] = []
                reader = threading.Thread(target=lambda: output.extend(proc.stdout or []), daemon=True)
                reader.start()
                try:
                    time.sleep(args.warmup)
                    groups = {"server": server_pids, "redis": [redis.process.pid]}
                    before = {name: cpu_of(pids) for name, pids in groups.items()}
                    started = time.monotonic()
                    memory = sample_memory(server, redis.port, started + args.window)
                    elapsed = time.monotonic() - started
                    after = {name: cpu_of(pids) for name, pids in groups.items()}
                    rss = sum(rss_bytes(pid) for pid in server.pids())
                    redis_used = redis_memory(redis.port)
                    proc.wait(timeout=args.warmup + 120)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait(timeout=10)
                    reader.join(timeout=5)
                if proc.returncode != 0 or not out.exists():
                    raise RuntimeError(f"the generator failed ({proc.returncode}):\n" + "".join(output)[-3000:])
                gen = json.loads(out.read_text())
            if not server.running():
                raise RuntimeError("the gostop server exited:\n" + server.log_tail())
        finally:
            server.stop()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    server_cpu = cpu_between(before["server"], after["server"]) / elapsed
    redis_cpu = cpu_between(before["redis"], after["redis"]) / elapsed
    rate = gen["actions_per_second"]
    return {
        "players": players, "workers": workers, "generator": gen,
        "server_cpu_percent": 100 * server_cpu, "redis_cpu_percent": 100 * redis_cpu,
        "server_cpu_ms_per_action": 1000 * server_cpu / rate if rate else None,
        "server_rss_bytes": rss, "server_rss_per_player_kb": (rss - rss_base) / players / 1024,
        "redis_memory_bytes": redis_used, "redis_memory_per_player_kb": (redis_used - redis_base) / players / 1024,
        "memory_samples": memory,
    }


HEADER = (f"{'players':>8}{'workers':>8}{'act/s':>8}{'submit p50/p99':>16}{'fan-out p50/p99/max':>22}"
          f"{'lost':>6}{'dup':>5}{'errors':>7}{'breaks':>7}{'server CPU':>11}{'ms/act':>8}{'redis':>7}"
          f"{'RSS MB':>8}{'redis MB':>9}{'gen ms/pl-s':>12}")


def row(r: dict[str, Any]) -> str:
    g = r["generator"]
    s, f = g["submit"], g["fanout"]
    per_action = r["server_cpu_ms_per_action"]
    return (f"{r['players']:>8}{r['workers']:>8}{g['actions_per_second']:>8.1f}"
            f"{s['p50_ms']:>8.1f}/{s['p99_ms']:<7.1f}{f['p50_ms']:>9.1f}/{f['p99_ms']:.1f}/{f['max_ms']:<7.0f}"
            f"{g['lost']:>6}{g['duplicated']:>5}{g['error_count']:>7}{sum(g.get('stream_breaks', {}).values()):>7}"
            f"{r['server_cpu_percent']:>10.0f}%"
            f"{per_action if per_action is not None else float('nan'):>8.2f}{r['redis_cpu_percent']:>6.0f}%"
            f"{r['server_rss_bytes'] / 2**20:>8.0f}{r['redis_memory_bytes'] / 2**20:>9.1f}"
            f"{g['generator_cpu_ms_per_player_second']:>12.3f}")


def memory_table(samples: list[dict[str, float]]) -> str:
    """A soak's memory over time, one line per sample."""
    lines = ["  minute  server RSS MB  redis MB"]
    lines += [f"{s['seconds'] / 60:>8.1f}{s['server_rss_bytes'] / 2**20:>15.1f}{s['redis_memory_bytes'] / 2**20:>10.1f}"
              for s in samples]
    return "\n".join(lines)


def int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("give positive integers, e.g. 250,500")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int_list, default=[100, 250], help="sizes, comma-separated")
    parser.add_argument("--workers", type=int_list, default=[1], help="server worker processes, comma-separated")
    parser.add_argument("--seconds", type=float, default=30.0, help="the measured window of each run")
    parser.add_argument("--minutes", type=float, default=None, help="one long window instead (a soak)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds to seat everyone before the window")
    parser.add_argument("--connect-share", type=float, default=0.25, help="players on the HTTP port (Connect)")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds per match (0: open-ended); a table whose match is over starts a new one")
    parser.add_argument("--finished-ttl", type=int, default=None,
                        help="the server's GOSTOP_FINISHED_TTL_SECONDS (how long a finished match stays in Redis)")
    parser.add_argument("--views", action=argparse.BooleanOptionalAction, default=True,
                        help="players learn their views from their streams (--no-views: GetGame after every event)")
    parser.add_argument("--whole-versions", action=argparse.BooleanOptionalAction, default=True,
                        help="a stream message per version (--no-whole-versions: one per event and one per view)")
    parser.add_argument("--three-share", type=float, default=0.0, help="players seated at three-player tables")
    parser.add_argument("--think-min", type=float, default=1.0, help="shortest think time, seconds")
    parser.add_argument("--think-max", type=float, default=3.0, help="longest think time, seconds")
    parser.add_argument("--log-level", default="info", help="the server's (info: a log line per call, as deployed)")
    parser.add_argument("--json", default=None, help="write the rows as JSON to this file")
    args = parser.parse_args()
    args.window = args.minutes * 60 if args.minutes is not None else args.seconds
    if args.window <= 0 or args.warmup < 0:
        parser.error("the window must be positive and the warm-up not negative")
    with tempfile.TemporaryDirectory(prefix="gostop-players-bin-") as tmp:
        generator = Path(tmp) / "players"
        build_generator(generator)
        print(f"Connected players: {args.window:.0f} s windows, think {args.think_min}-{args.think_max} s, "
              f"{args.connect_share:.0%} Connect, {args.three_share:.0%} in three-player games")
        print(HEADER, flush=True)
        rows = []
        for workers in args.workers:
            for players in args.players:
                result = run_one(generator, players, workers, args)
                rows.append(result)
                print(row(result), flush=True)
                retries = result["generator"].get("retries") or {}
                if retries:
                    print(f"    calls sent again (same request id): {retries}", flush=True)
                for code, messages in sorted(result["generator"].get("error_examples", {}).items()):
                    print("\n".join(f"    {code}, e.g. {m}" for m in messages), flush=True)
                if args.minutes is not None:
                    print(memory_table(result["memory_samples"]), flush=True)
    failed = [r for r in rows if r["generator"]["lost"] or r["generator"]["duplicated"]]
    if args.json:
        Path(args.json).write_text(json.dumps({"window_seconds": args.window, "rows": rows}, indent=2))
    if failed:
        print("streams lost or duplicated versions", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
