"""``gostop serve --workers N``: several server processes on one port (SO_REUSEPORT), one shared
token secret, restarted when they die, stopped together; a lone server refuses a taken port."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from gostop.service.config import Config
from gostop.service.workers import WORKER_ENV, worker_env
from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer, free_port
from testkit.servers import OPERATOR_KEY, ROOT, Api, Game, stub, wait_serving

# Not in make check: several server processes.
pytestmark = pytest.mark.slow

HOST = "127.0.0.1"


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(x) for x in text)
    return found


def started_calls(metrics_port: int) -> float:
    """grpc_server_started_total of the GameService on one worker's metrics endpoint."""
    with urllib.request.urlopen(f"http://{HOST}:{metrics_port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
        if line.startswith("grpc_server_started_total{") and "GameService" in line
    )


def two_free_ports() -> int:
    """A port p with p+1 also free (the second worker's metrics port)."""
    for _ in range(50):
        port = free_port()
        try:
            with socket.create_server((HOST, port + 1)):
                pass
        except OSError:
            continue
        return port
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture
def supervisor(service_redis: RedisServer) -> Iterator[tuple[subprocess.Popen[bytes], int, int, Path]]:
    port, metrics = free_port(), two_free_ports()
    log = Path(tempfile.mkstemp(prefix="gostop-workers-", suffix=".log")[1])
    env = {**os.environ, "GOSTOP_REDIS_URL": service_redis.url, "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY,
           "GOSTOP_LOG_FORMAT": "json", "GOSTOP_DRAIN_SECONDS": "2", "PYTHONPATH": str(ROOT)}
    env.pop("GOSTOP_TOKEN_SECRET", None)  # the supervisor makes one secret for all workers
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gostop", "serve", "--workers", "2", "--listen", f"{HOST}:{port}",
             "--metrics-port", str(metrics), "--metrics-host", HOST],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        yield process, port, metrics, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.unlink(missing_ok=True)


async def play_through_new_connections(port: int, moves: int) -> None:
    """Create a game, then make each move over a fresh channel (a fresh TCP connection, which the
    kernel may give to either worker): the tokens and the game must be good on both."""
    seed_rng = random.Random(5)
    game = Game("", {}, 0, pb.CreateGameResponse())  # no game yet: the first move creates one
    done = 0
    refused = 0
    while done < moves:
        try:
            done += await _one_move(port, game, seed_rng)
        except grpc.aio.AioRpcError as error:
            # A connection the kernel handed to a worker that was just killed is reset; a client
            # retries it (on a fresh connection, which goes to a live worker).
            refused += 1
            assert error.code() == grpc.StatusCode.UNAVAILABLE and refused <= 5, error
            await asyncio.sleep(0.2)


async def _one_move(port: int, game: Game, seed_rng: random.Random) -> int:
    """One move of ``game`` over a fresh channel (1), or a new game once it is over (0)."""
    async with grpc.aio.insecure_channel(f"{HOST}:{port}") as channel:
        api = Api(channel, stub(channel), port)
        seat, view = await api.to_move(game) if game.id else (-1, None)
        if seat < 0 or view is None:
            fresh = await api.create(seed=seed_rng.getrandbits(32))
            game.id, game.tokens, game.version = fresh.id, fresh.tokens, fresh.version
            return 0
        result = await api.submit(game, seat, view.legal_actions[0].id)
        game.version = result.result.version
        return 1


async def test_workers_share_a_port_restart_and_stop_together(
    supervisor: tuple[subprocess.Popen[bytes], int, int, Path],
) -> None:
    process, port, metrics, log = supervisor
    await wait_serving(port, process, timeout=30)
    deadline = time.monotonic() + 20
    while len(children(process.pid)) < 2 or not all(_answers(metrics + i) for i in range(2)):
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.1)
    await play_through_new_connections(port, 40)
    served = [started_calls(metrics + i) for i in range(2)]
    assert all(n > 0 for n in served), served  # both workers took connections

    # SIGKILL one worker: the other keeps serving, and the supervisor starts a new one.
    victim = min(children(process.pid))
    os.kill(victim, signal.SIGKILL)
    await play_through_new_connections(port, 10)
    deadline = time.monotonic() + 20
    while True:
        now = children(process.pid)
        if len(now) == 2 and victim not in now and all(_answers(metrics + i) for i in range(2)):
            break
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.1)
    await play_through_new_connections(port, 10)

    # SIGTERM: every worker drains and exits, then the supervisor, with status 0.
    workers = children(process.pid)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0, log.read_text()
    assert not any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in workers)
    text = log.read_text()
    assert '"worker exited"' in text and '"supervisor stopped"' in text


def _answers(metrics_port: int) -> bool:
    try:
        started_calls(metrics_port)
    except OSError:
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_several_workers_need_redis_and_a_fixed_port() -> None:
    for flags, message in (
        (["--workers", "2"], "GOSTOP_REDIS_URL"),
        (["--workers", "2", "--redis-url", "redis://127.0.0.1:1/0", "--listen", f"{HOST}:0"], "fixed port"),
        (["--workers", "0"], "workers must be positive"),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "gostop", "serve", *flags], cwd=ROOT, capture_output=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT), "GOSTOP_REDIS_URL": ""},
        )
        assert run.returncode == 2, run
        assert message in run.stderr.decode(), run.stderr.decode()


def test_a_lone_server_refuses_a_port_in_use_in_one_line() -> None:
    """Without --workers the port is not shared: a second server on it fails instead of silently
    splitting the traffic with the first."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GOSTOP_METRICS_PORT": "0", "GOSTOP_LOG_FORMAT": "json"}
    env.pop(WORKER_ENV, None)
    first = subprocess.Popen([sys.executable, "-m", "gostop", "serve", "--listen", f"{HOST}:{port}"],
                             cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        asyncio.run(wait_serving(port, first))
        second = subprocess.run([sys.executable, "-m", "gostop", "serve", "--listen", f"{HOST}:{port}"],
                                cwd=ROOT, env=env, capture_output=True, timeout=60, text=True)
        assert second.returncode == 1
        # One line of ours naming the address and the flag (grpc's own log line may precede it).
        assert second.stderr.splitlines()[-1] == (
            f"gostop serve: cannot listen on {HOST}:{port} (the port is in use, or the address is not this "
            "machine's): choose another with --listen HOST:PORT (GOSTOP_LISTEN)"), second.stderr
        assert "Traceback" not in second.stderr
        metrics = subprocess.run([sys.executable, "-m", "gostop", "serve", "--listen", f"{HOST}:0",
                                  "--metrics-host", HOST, "--metrics-port", str(port)],
                                 cwd=ROOT, env=env, capture_output=True, timeout=60, text=True)
        assert metrics.returncode == 1
        assert metrics.stderr.splitlines() == [
            f"gostop serve: cannot serve metrics on {HOST}:{port} (Address already in use): choose another port "
            "with --metrics-port (GOSTOP_METRICS_PORT), or 0 for none"], metrics.stderr
    finally:
        first.terminate()
        first.wait(timeout=20)


def test_worker_environment_carries_every_setting() -> None:
    config = Config(redis_url="redis://r:6379/0", workers=3, metrics_port=9000, token_secret="s" * 20,
                    listen="0.0.0.0:50051")
    env = worker_env(config, 2, {"PATH": "/bin"})
    assert env["PATH"] == "/bin"
    assert env["GOSTOP_REDIS_URL"] == "redis://r:6379/0"
    assert env["GOSTOP_TOKEN_SECRET"] == "s" * 20
    assert env["GOSTOP_WORKERS"] == "1"  # a worker is a plain server
    assert env["GOSTOP_METRICS_PORT"] == "9002"
    assert env[WORKER_ENV] == "2"
    assert env["GOSTOP_LISTEN"] == "0.0.0.0:50051"
