"""The metrics a real ``gostop serve`` exports over HTTP.

The gauges operators look for move with what the server holds (games in its snapshot cache, open
WatchGame streams, calls in flight); games created carry a ``players`` label; no ``*_created``
series is exported; ``grpc_server_msg_received_total`` and ``grpc_server_msg_sent_total`` count
unary calls' messages too; and with ``--workers 2`` every worker's endpoint
(``metrics_port + i``) is scraped and together they account for every call.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gostop.v1 import game_pb2 as pb
from testkit.redis_server import RedisServer, free_port
from testkit.servers import OPERATOR_KEY, ROOT, Api, Game, client, expect, stub, wait_serving

HOST = "127.0.0.1"
SERVICE = "gostop.v1.GameService"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics_port: int) -> Samples:
    """Every sample of one metrics endpoint, keyed by (sample name, labels)."""
    with urllib.request.urlopen(f"http://{HOST}:{metrics_port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name`` with exactly these labels (0 when the server has not exported it yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def rpc(method: str, kind: str = "unary", protocol: str = "grpc") -> dict[str, str]:
    """The labels of the ``grpc_server_*`` series of one GameService method (on the gRPC port by default)."""
    return {"grpc_type": kind, "grpc_service": SERVICE, "grpc_method": method, "protocol": protocol}


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include these."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


async def until(metrics_port: int, name: str, expected: float, **labels: str) -> Samples:
    """Scrape until the sample reaches ``expected`` (a stream's end reaches the server
    asynchronously); fails with the last value after 20 s."""
    deadline = time.monotonic() + 20
    while True:
        samples = await asyncio.to_thread(scrape, metrics_port)
        if value(samples, name, **labels) == expected:
            return samples
        assert time.monotonic() < deadline, f"{name}{labels} stayed {value(samples, name, **labels)}, not {expected}"
        await asyncio.sleep(0.05)


def no_created_series(samples: Samples) -> None:
    created = sorted({name for name, _ in samples if name.endswith("_created")})
    assert not created, f"_created series are exported: {created}"


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m gostop serve ARGS`` with its output in ``log``."""
    variables = {**os.environ, "GOSTOP_OPERATOR_KEYS": OPERATOR_KEY, "GOSTOP_LOG_FORMAT": "json",
                 "PYTHONPATH": str(ROOT), **env}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "gostop", "serve", *args], cwd=ROOT, env=variables,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes], log: Path) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.unlink(missing_ok=True)


@pytest.fixture
async def server() -> AsyncIterator[tuple[Api, int]]:
    """One ``gostop serve`` process (memory store) with its metrics endpoint; a client and that port."""
    port, metrics = free_port(), free_port()
    log = Path(tempfile.mkstemp(prefix="gostop-metrics-", suffix=".log")[1])
    process = start(["--listen", f"{HOST}:{port}", "--metrics-port", str(metrics), "--metrics-host", HOST],
                    {"GOSTOP_REDIS_URL": ""}, log)
    try:
        await wait_serving(port, process, timeout=30)
        api = client(port)
        try:
            yield api, metrics
        finally:
            await api.channel.close()
    finally:
        stop(process, log)


async def test_gauges_players_label_unary_messages_and_no_created_series(server: tuple[Api, int]) -> None:
    api, metrics = server
    before = await asyncio.to_thread(scrape, metrics)
    no_created_series(before)
    assert value(before, "gostop_games_cached") == 0
    assert value(before, "gostop_watch_streams") == 0

    game = await api.create("standard", players=3, seed=11)
    after_create = await asyncio.to_thread(scrape, metrics)
    assert value(after_create, "gostop_games_cached") == 1
    assert value(after_create, "gostop_games_created_total", preset="standard", players="3") == 1
    assert value(after_create, "gostop_games_created_total", preset="standard", players="2") == 0
    # A unary call: one message in, one out; no longer in flight once answered.
    assert value(after_create, "grpc_server_msg_received_total", **rpc("CreateGame")) == 1
    assert value(after_create, "grpc_server_msg_sent_total", **rpc("CreateGame")) == 1
    assert value(after_create, "grpc_server_in_flight_calls", **rpc("CreateGame")) == 0

    # A failed unary call received its request and sent no response message.
    await expect(api.stub.GetGame(pb.GetGameRequest(game_id="NoSuchGame12345")), grpc.StatusCode.NOT_FOUND)
    failed = await asyncio.to_thread(scrape, metrics)
    assert value(failed, "grpc_server_msg_received_total", **rpc("GetGame")) == 1
    assert value(failed, "grpc_server_msg_sent_total", **rpc("GetGame")) == 0

    # An open WatchGame stream: counted while it is open, by the stream gauge and in flight.
    stream = api.stub.WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=game.md(0))
    first = await stream.read()
    assert isinstance(first, pb.WatchGameResponse) and first.version == 1
    watching = await asyncio.to_thread(scrape, metrics)
    assert value(watching, "gostop_watch_streams") == 1
    assert value(watching, "grpc_server_in_flight_calls", **rpc("WatchGame", "server_stream")) == 1
    assert value(watching, "grpc_server_msg_received_total", **rpc("WatchGame", "server_stream")) == 1
    assert value(watching, "grpc_server_msg_sent_total", **rpc("WatchGame", "server_stream")) >= 1
    no_created_series(watching)
    await until(metrics, "gostop_followed_games", 1)  # the stream waits on the game's commits

    stream.cancel()
    await until(metrics, "gostop_watch_streams", 0)
    await until(metrics, "grpc_server_in_flight_calls", 0, **rpc("WatchGame", "server_stream"))


# ------------------------------------------------------------------------------ --workers 2


def consecutive_free_ports(count: int) -> int:
    """A port p with p+1 ... p+count-1 free too (the workers' metrics ports)."""
    for _ in range(50):
        port = free_port()
        try:
            for offset in range(1, count):
                with socket.create_server((HOST, port + offset)):
                    pass
        except OSError:
            continue
        return port
    raise RuntimeError(f"no {count} consecutive free ports")


@pytest.fixture
def workers(service_redis: RedisServer) -> Iterator[tuple[subprocess.Popen[bytes], int, int, Path]]:
    """``gostop serve --workers 2`` over the session's Redis: the supervisor, the gRPC port, the first
    metrics port (worker i serves metrics_port + i) and the log."""
    port, metrics = free_port(), consecutive_free_ports(2)
    log = Path(tempfile.mkstemp(prefix="gostop-metrics-workers-", suffix=".log")[1])
    process = start(["--workers", "2", "--listen", f"{HOST}:{port}", "--metrics-port", str(metrics),
                     "--metrics-host", HOST],
                    {"GOSTOP_REDIS_URL": service_redis.url, "GOSTOP_TOKEN_SECRET": "", "GOSTOP_DRAIN_SECONDS": "2"},
                    log)
    try:
        yield process, port, metrics, log
    finally:
        stop(process, log)


def answers(metrics_port: int) -> bool:
    try:
        scrape(metrics_port)
    except OSError:
        return False
    return True


async def create_on_a_fresh_connection(port: int, seed: int) -> Game:
    """A game created over a new connection (which the kernel hands to either worker)."""
    async with grpc.aio.insecure_channel(f"{HOST}:{port}") as channel:
        return await Api(channel, stub(channel), port).create("classic", players=4, seed=seed)


@pytest.mark.slow  # several server processes
async def test_every_worker_serves_its_metrics(workers: tuple[subprocess.Popen[bytes], int, int, Path]) -> None:
    process, port, metrics, log = workers
    await wait_serving(port, process, timeout=30)
    ports = [metrics, metrics + 1]
    deadline = time.monotonic() + 30
    while not all(answers(p) for p in ports):
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.1)

    # Create games over fresh connections until both workers have created some (the kernel spreads
    # connections over the workers; 200 tries without reaching one of them would be a bug).
    created = 0
    for seed in range(200):
        await create_on_a_fresh_connection(port, seed)
        created += 1
        scraped = [await asyncio.to_thread(scrape, p) for p in ports]
        per_worker = [value(s, "gostop_games_created_total", preset="classic", players="4") for s in scraped]
        if all(per_worker) and created >= 4:
            break
    else:
        raise AssertionError(f"the games did not reach both workers: {per_worker}")

    assert sum(per_worker) == created, per_worker
    for samples, made in zip(scraped, per_worker, strict=True):
        no_created_series(samples)
        assert value(samples, "gostop_games_cached") == made  # each worker caches what it created
        assert value(samples, "grpc_server_msg_received_total", **rpc("CreateGame")) == made
        assert value(samples, "grpc_server_msg_sent_total", **rpc("CreateGame")) == made
        assert total(samples, "grpc_server_in_flight_calls") == 0

    # One open stream, on whichever worker its connection went to: the workers' gauges sum to 1.
    game = await create_on_a_fresh_connection(port, 999)
    async with grpc.aio.insecure_channel(f"{HOST}:{port}") as channel:
        stream = stub(channel).WatchGame(pb.WatchGameRequest(game_id=game.id), metadata=game.md(1))
        assert (await stream.read()).version == 1
        open_streams = [value(await asyncio.to_thread(scrape, p), "gostop_watch_streams") for p in ports]
        assert sorted(open_streams) == [0, 1], open_streams
        stream.cancel()


def test_worker_metrics_ports_must_not_cover_the_listen_port() -> None:
    """Worker i serves metrics on metrics_port + i: a range that takes in the gRPC port, or runs
    past 65535, is refused at the start, naming the settings, instead of workers failing to bind."""
    for flags, message in (
        (["--listen", f"{HOST}:9465", "--metrics-port", "9464"], "listen port 9465 is among the worker metrics ports"),
        (["--listen", f"{HOST}:50051", "--metrics-port", "65535"], "go past 65535"),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "gostop", "serve", "--workers", "3", "--redis-url", "redis://127.0.0.1:1/0",
             *flags], cwd=ROOT, capture_output=True, timeout=60, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert run.returncode == 2, run
        assert message in run.stderr, run.stderr


def test_the_metric_table_lists_every_metric() -> None:
    """docs/service.md's metric table names exactly the metrics the server exports, with their labels."""
    from prometheus_client.metrics import MetricWrapperBase

    from gostop.service.metrics import Metrics

    text = (ROOT / "docs" / "service.md").read_text()
    section = text.split("**Metrics.**", 1)[1].split("\n\n**", 1)[0]
    documented = {name: set(re.findall(r"`([a-z_]+)`", labels))
                  for name, labels in re.findall(r"^\| `([a-z_]+)` \|[^|]+\|([^|]*)\|$", section, re.MULTILINE)}
    exported: dict[str, set[str]] = {}
    for metric in vars(Metrics()).values():
        if isinstance(metric, MetricWrapperBase):
            suffix = "_total" if metric._type == "counter" else ""
            exported[metric._name + suffix] = set(metric._labelnames)
    assert set(documented) == set(exported), (
        f"missing from docs/service.md: {sorted(set(exported) - set(documented))}; "
        f"documented but not exported: {sorted(set(documented) - set(exported))}")
    for name, labels in exported.items():
        assert labels <= documented[name], f"{name}: labels {sorted(labels - documented[name])} not documented"
