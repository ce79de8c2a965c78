"""Service benchmark with ghz, the standard gRPC load tool (a Go program), beside the Python one.

Usage: ``PYTHONPATH=tests python -m bench.ghz [--ghz PATH] [--seconds S] [--inflight 1,8,32,64]
[--server-workers N] [--connections C] [--max-games G]``.

Starts a ``redis-server`` and the gostop server as bench_service.py does (its helpers), then, for each
in-flight level (ghz ``-c``), runs ghz against the same server:

- ``Health/Check`` for ``--seconds``: the ceiling of this server with this load tool;
- ``GetGame`` for ``--seconds``, round-robin over a pool of games created beforehand;
- ``SubmitAction``: ghz replays fixed requests, so it cannot play a game on; instead ``G`` fresh
  standard 2-player games are created beforehand through the API with known seeds and mirrored with
  the engine, and ghz sends the first move of each, exactly once (``-n G``): request ``i`` carries
  game ``i``'s first legal move (a random one) at its version with a unique request id, and that
  game's seat token. The figure is for first moves of fresh games (each a full SubmitAction: load,
  validate, apply, commit), not whole rounds; bench_service.py plays whole rounds. ``G`` follows
  the Health rate, so that a run lasts about ``--seconds``; afterwards every game is read back to
  check that it moved exactly once.

ghz takes the requests as a JSON array (``-D``), used round-robin by request number. Its metadata
is one map, not an array: a seat token per request is picked by a template,
``{{ env (printf "GZT%d" (mod .RequestNumber G)) }}``, from environment variables ``GZT0``...
set for the ghz process; the same request number picks the data, so request ``i`` gets game
``i``'s move and token (a mismatch would be refused: the status codes are printed). Health/Check
and GetGame carry the same kind of template, so ghz does the same work per call in every
measurement. The message types come from a protoset written from the generated Python modules
(ghz's reflection client does not resolve this server's services).

Prints requests/s, p50 and p99 (from ghz), errors and status codes, SubmitAction and GetGame as a
percentage of the Health ceiling at the same level, and the CPU per request of the server and of
ghz. ghz, the server and Redis share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from grpc_health.v1 import health_pb2

from gostop.engine import legal_action_ids
from gostop.v1 import game_pb2 as pb

from .load import Game, Games, game_stub, spread
from .measure import cpu_seconds
from .processes import ServerProcess, services
from .service import inflight_list, wait_serving
from .settings import CALL_TIMEOUT, PLAYERS, ROOT, Metadata

HEALTH_CALL = "grpc.health.v1.Health/Check"
SUBMIT_CALL = "gostop.v1.GameService/SubmitAction"
GET_CALL = "gostop.v1.GameService/GetGame"
TOKEN_ENV = "GZT"
"""Prefix of the environment variables that hold the seat tokens of one ghz run (GZT0, GZT1...)."""
ENV_LIMIT = 1_500_000
"""Bytes of tokens in ghz's environment at most (Linux refuses an exec past about 2 MB of
arguments and environment)."""
DEFAULT_GHZ = ROOT / ".tools" / "bin" / "ghz"


# ----------------------------------------------------------------------------- ghz runs


def write_protoset(path: Path) -> None:
    """A FileDescriptorSet of the game service and the health service, from the generated modules."""
    out = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(fd: FileDescriptor) -> None:
        if fd.name in seen:
            return
        for dependency in fd.dependencies:
            add(dependency)
        seen.add(fd.name)
        fd.CopyToProto(out.file.add())

    add(health_pb2.DESCRIPTOR)
    add(pb.DESCRIPTOR)
    path.write_bytes(out.SerializeToString())


@dataclasses.dataclass
class GhzResult:
    """One ghz run, from its JSON report (latencies there are nanoseconds)."""

    rpc: str
    inflight: int
    report: dict[str, Any]
    server_cpu: float
    """Server CPU seconds (supervisor and workers) during the ghz process."""
    ghz_cpu: float
    """CPU seconds of the ghz process."""
    note: str = ""

    @property
    def count(self) -> int:
        return int(self.report.get("count", 0))

    @property
    def rate(self) -> float:
        return float(self.report.get("rps", 0.0))

    @property
    def statuses(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in (self.report.get("statusCodeDistribution") or {}).items()}

    @property
    def errors(self) -> int:
        return self.count - self.statuses.get("OK", 0)

    def quantile_ms(self, percentage: int) -> float:
        for row in self.report.get("latencyDistribution") or []:
            if int(row["percentage"]) == percentage:
                return float(row["latency"]) / 1e6
        return float("nan")


def token_template(count: int) -> str:
    """ghz metadata: the seat token of game ``RequestNumber mod count``, from the environment."""
    pick = f"{{{{ env (printf `{TOKEN_ENV}%d` (mod .RequestNumber {count})) }}}}"
    return json.dumps({"authorization": "Bearer " + pick})


def run_ghz(
    args: argparse.Namespace, server: ServerProcess, workdir: Path, rpc: str, call: str, inflight: int,
    data: Sequence[dict[str, Any]], tokens: Sequence[str], total: int | None,
) -> GhzResult:
    """One ghz run of ``call`` at ``inflight`` (``-c``): ``data[i]`` with ``tokens[i]`` for request
    number ``i`` (mod their count); ``total`` requests (``-n``), or ``--seconds`` when ``None``."""
    if len(data) != len(tokens):
        raise ValueError("one seat token per request")
    if sum(len(t) + len(TOKEN_ENV) + 8 for t in tokens) > ENV_LIMIT:
        raise ValueError(f"{len(tokens)} seat tokens do not fit in ghz's environment: lower --max-games")
    data_file, metadata_file = workdir / "data.json", workdir / "metadata.json"
    data_file.write_text(json.dumps(list(data)))
    metadata_file.write_text(token_template(len(tokens)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(TOKEN_ENV)}
    env.update({f"{TOKEN_ENV}{i}": token for i, token in enumerate(tokens)})
    argv = [
        str(args.ghz), "--insecure", "--protoset", str(workdir / "gostop.protoset"), "--call", call,
        "-c", str(inflight), "--connections", str(min(args.connections, inflight)),
        "-D", str(data_file), "-M", str(metadata_file), "-t", f"{CALL_TIMEOUT:g}s", "-O", "json",
    ]  # fmt: skip
    if total is None:
        # Calls in flight when the time is up are left out (not reported as cancelled errors).
        argv += ["-z", f"{args.seconds:g}s", "--duration-stop", "ignore"]
    else:
        argv += ["-n", str(total)]
    argv.append(server.target)
    pids = server.pids()
    server_before = sum(cpu_seconds(pid) or 0.0 for pid in pids)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=args.seconds * 10 + 120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = sum(cpu_seconds(pid) or 0.0 for pid in pids) - server_before
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"ghz failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    ghz_cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return GhzResult(rpc, inflight, json.loads(done.stdout), server_cpu, ghz_cpu)


# ----------------------------------------------------------------------------- games


async def create_games(games: Games, count: int, parallel: int = 16) -> list[Game]:
    """``count`` fresh games (mirrored locally), created ``parallel`` at a time."""
    out: list[Game] = []

    async def some(n: int) -> None:
        for _ in range(n):
            out.append(await games.create())

    await asyncio.gather(*(some(n) for n in spread(count, parallel)))
    return out


async def versions(stub: Any, games: Sequence[Game], parallel: int = 16) -> list[int]:
    """The current version of each game, read with GetGame (-1 when the call fails)."""
    out = [-1] * len(games)

    async def some(indexes: range) -> None:
        for i in indexes:
            game = games[i]
            with contextlib.suppress(grpc.aio.AioRpcError):
                reply = await stub.GetGame(pb.GetGameRequest(game_id=game.game_id), metadata=game.seats[0],
                                           timeout=CALL_TIMEOUT)
                out[i] = reply.view.version

    await asyncio.gather(*(some(range(i, len(games), parallel)) for i in range(parallel)))
    return out


def token_of(metadata: Metadata) -> str:
    return metadata[0][1].removeprefix("Bearer ")


# ----------------------------------------------------------------------------- main


async def bench(args: argparse.Namespace, server: ServerProcess, workdir: Path) -> list[GhzResult]:
    await wait_serving(server)
    loop = asyncio.get_running_loop()
    results: list[GhzResult] = []
    async with grpc.aio.insecure_channel(server.target) as channel:
        pool = Games(game_stub(channel), seed=7)
        chooser = random.Random(7)
        known = await create_games(pool, args.get_games)
        get_data = [{"game_id": g.game_id} for g in known]
        get_tokens = [token_of(g.seats[chooser.randrange(PLAYERS)]) for g in known]
        health_data = [{"service": ""}] * len(known)
        for inflight in args.inflight:
            health = await loop.run_in_executor(None, functools.partial(
                run_ghz, args, server, workdir, "Health/Check", HEALTH_CALL, inflight, health_data, get_tokens, None))
            results.append(health)
            results.append(await loop.run_in_executor(None, functools.partial(
                run_ghz, args, server, workdir, "GetGame", GET_CALL, inflight, get_data, get_tokens, None)))
            # About --seconds of SubmitAction, guessed from the ceiling: one game per request.
            count = max(8 * inflight, min(args.max_games, int(0.5 * health.rate * args.seconds)))
            fresh = await create_games(pool, count)
            data: list[dict[str, Any]] = []
            tokens: list[str] = []
            for i, game in enumerate(fresh):
                data.append({"game_id": game.game_id, "expected_version": str(game.version),
                             "request_id": f"ghz-c{inflight}-{i}",
                             "action_id": chooser.choice(legal_action_ids(game.state))})
                tokens.append(token_of(game.seats[game.state.to_move]))
            submit = await loop.run_in_executor(None, functools.partial(
                run_ghz, args, server, workdir, "SubmitAction", SUBMIT_CALL, inflight, data, tokens, len(fresh)))
            now = await versions(pool.stub, fresh)
            moved = sum(1 for game, v in zip(fresh, now, strict=True) if v == game.version + 1)
            submit.note = (f"first moves of {len(fresh)} fresh games, one request each; "
                           f"{moved}/{len(fresh)} games moved exactly once")
            results.append(submit)
            if not server.running():
                raise RuntimeError("the gostop server exited:\n" + server.log_tail())
    return results


def report(results: Sequence[GhzResult], args: argparse.Namespace, version: str) -> None:
    ceilings = {r.inflight: r.rate for r in results if r.rpc == "Health/Check"}
    print(f"ghz {version} against the gostop server over loopback, store redis, {args.server_workers} server "
          f"worker process(es), {args.seconds:g} s per Health/GetGame run, up to {args.connections} "
          f"connection(s); {os.cpu_count()} CPUs shared by ghz, server and Redis, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'RPC':<14}{'in-flight':>10}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'% Health':>10}{'errors':>8}"
          f"{'requests':>10}{'server ms/req':>15}{'ghz ms/req':>12}  status codes")
    for r in results:
        share = f"{r.rate / ceilings[r.inflight] * 100:.0f}%" if ceilings.get(r.inflight) else "-"
        server = f"{r.server_cpu / r.count * 1000:.3f}" if r.count else "-"
        ghz = f"{r.ghz_cpu / r.count * 1000:.3f}" if r.count else "-"
        codes = " ".join(f"{k}={v}" for k, v in sorted(r.statuses.items()))
        print(f"{r.rpc:<14}{r.inflight:>10}{r.rate:>12.0f}{r.quantile_ms(50):>9.2f}{r.quantile_ms(99):>9.2f}"
              f"{share:>10}{r.errors:>8}{r.count:>10}{server:>15}{ghz:>12}  {codes}")
    print("SubmitAction here is the first move of fresh games, one request per game (ghz replays fixed "
          "requests and cannot play a round on); server/ghz ms/req: CPU per request of the server processes "
          "and of ghz over the whole ghz run")
    for r in results:
        if r.note:
            print(f"  {r.rpc} @{r.inflight}: {r.note}")
        for message, n in (r.report.get("errorDistribution") or {}).items():
            print(f"  {r.rpc} @{r.inflight} error x{n}: {message}")


def find_ghz(path: str) -> Path:
    found = Path(path) if Path(path).is_file() else Path(shutil.which(path) or "")
    if not found.is_file():
        raise SystemExit(f"ghz not found at {path!r}: `make bench` installs it into .tools/bin "
                         "(go install github.com/bojand/ghz/cmd/ghz), or pass --ghz PATH")
    return found.resolve()


def ghz_version(ghz: Path) -> str:
    """The module version a ``go install`` build carries (``go version -m``), else ghz's own answer."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        info = subprocess.run(["go", "version", "-m", str(ghz)], capture_output=True, text=True, timeout=30)
        for line in info.stdout.splitlines():
            fields = line.split()
            if fields[:2] == ["mod", "github.com/bojand/ghz"] and len(fields) > 2:
                return fields[2]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run([str(ghz), "--version"], capture_output=True, text=True, timeout=30)
        return (done.stdout + done.stderr).strip() or "(version unknown)"
    return "(version unknown)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ghz", default=str(DEFAULT_GHZ), help="the ghz binary (default .tools/bin/ghz)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each Health/GetGame run")
    parser.add_argument("--inflight", type=inflight_list, default=[1, 8, 32, 64],
                        help="comma-separated in-flight levels, ghz -c (default 1,8,32,64)")
    parser.add_argument("--server-workers", type=int, default=1, help="server processes (gostop serve --workers)")
    parser.add_argument("--connections", type=int, default=1,
                        help="ghz --connections at most (TCP connections; several spread over server workers)")
    parser.add_argument("--max-games", type=int, default=5000,
                        help="fresh games (SubmitAction requests) per level at most")
    parser.add_argument("--get-games", type=int, default=256, help="games GetGame reads round-robin")
    args = parser.parse_args()
    if args.seconds <= 0 or not 1 <= args.server_workers <= 64 or args.connections < 1:
        parser.error("need --seconds > 0, 1 <= --server-workers <= 64 and --connections >= 1")
    if args.max_games < 8 or args.get_games < 1:
        parser.error("need --max-games >= 8 and --get-games >= 1")
    args.ghz = find_ghz(args.ghz)
    version = ghz_version(args.ghz)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gostop-ghz-") as tmp:
        workdir = Path(tmp)
        write_protoset(workdir / "gostop.protoset")
        try:
            with services("redis", False, workers=args.server_workers) as server:
                results = asyncio.run(bench(args, server, workdir))
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130) from None
    report(results, args, version)
    print(f"({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
