"""Bot workers fail over: two ``gostop bots serve`` processes on one Redis; the one
holding pending turns is SIGKILLed; the other claims them after the claim time and finishes every
game, and no turn commits twice (versions contiguous, one commit per request id)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer, RespError, command
from testkit.servers import OPERATOR, ROOT, client, start_process

# Not in make check: bot workers killed under load.
pytestmark = pytest.mark.slow

BOT_KEY = "bot-key-for-failover-tests-0123"
CLAIM_IDLE_MS = 1500


def start_worker(server_port: int, redis: RedisServer, name: str, log_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GOSTOP_BOT_KEY": BOT_KEY, "GOSTOP_BOT_CLAIM_IDLE_MS": str(CLAIM_IDLE_MS),
           "GOSTOP_LOG_FORMAT": "json", "PYTHONPATH": str(ROOT)}
    with open(log_dir / f"{name}.log", "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "gostop", "bots", "serve", "--server", f"127.0.0.1:{server_port}",
             "--redis-url", redis.url, "--metrics-port", "0", "--consumer", name, "--concurrency", "2"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def pending_of(redis: RedisServer, consumer: str) -> int:
    """Turns ``consumer`` took and has not acknowledged, over every shard."""
    total = 0
    for shard in range(8):
        try:
            reply = command(redis.port, "XPENDING", f"gostop:bots:{{s{shard}}}", "gostop-bot-workers", "-", "+",
                            "100", consumer)
        except RespError as exc:  # no group yet: the worker is starting
            assert str(exc).startswith("NOGROUP"), exc
            continue
        total += len(reply) if isinstance(reply, list) else 0
    return total


async def test_a_killed_worker_leaves_its_turns_to_another() -> None:
    with RedisServer() as redis, tempfile.TemporaryDirectory() as tmp:
        server = await start_process(redis.url, GOSTOP_BOT_KEYS=BOT_KEY, GOSTOP_BOT_CLAIM_IDLE_MS=str(CLAIM_IDLE_MS))
        api = client(server.port)
        logs = Path(tmp)
        first = start_worker(server.port, redis, "worker-a", logs)
        second: subprocess.Popen[bytes] | None = None
        try:
            games = []
            for seed in range(1, 4):
                req = pb.CreateGameRequest(preset="standard", players=2, seed=seed)
                req.bot_seats.add(seat=0, bot="mcts", budget_ms=150)
                req.bot_seats.add(seat=1, bot="mcts", budget_ms=150)
                games.append((await api.stub.CreateGame(req, metadata=OPERATOR)).game_id)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while pending_of(redis, "worker-a") == 0:
                assert first.poll() is None, (logs / "worker-a.log").read_text()
                assert loop.time() < deadline, "worker-a never took a turn"
                await asyncio.sleep(0.01)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
            held = pending_of(redis, "worker-a")
            assert held > 0, "the killed worker held turns"
            second = start_worker(server.port, redis, "worker-b", logs)
            deadline = loop.time() + 120
            for game_id in games:
                while True:
                    view = (await api.stub.GetGame(pb.GetGameRequest(game_id=game_id))).view
                    if view.phase == pb.PHASE_OVER:
                        break
                    assert second.poll() is None, (logs / "worker-b.log").read_text()
                    assert loop.time() < deadline, f"game {game_id} stopped at version {view.version}"
                    await asyncio.sleep(0.05)
            assert pending_of(redis, "worker-a") == 0, "worker-b claimed what worker-a held"
            for game_id in games:
                log = await api.stub.GetGameLog(pb.GetGameLogRequest(game_id=game_id), metadata=OPERATOR)
                versions = [e.version for e in log.entries]
                assert versions == list(range(1, len(versions) + 1)), "versions are contiguous"
                ids = [e.request_id for e in log.entries if e.request_id]
                assert len(ids) == len(set(ids)), "one commit per request id"
                assert all(i.startswith("bot.act.") for i in ids)
                assert len(ids) == len(versions) - 1, "every step after the deal is a bot's"
        finally:
            for worker in (first, second):
                if worker is not None and worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
                    worker.wait(timeout=20)
            await api.channel.close()
            server.stop()
        decided = (logs / "worker-b.log").read_text()
        assert '"bot decision"' in decided and '"game_id"' in decided, "one log line per decision"
        assert second is not None and second.returncode == 0, "a worker stops cleanly on SIGTERM"
