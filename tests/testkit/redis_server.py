"""Real Redis servers for tests: a standalone server, a 3-master Cluster and a Sentinel, each on
free loopback ports, in a temporary directory, without persistence.

Import it from a test module (``tests/`` is on ``sys.path`` under pytest)::

    from testkit.redis_server import RedisServer

    with RedisServer() as server:
        url = server.url  # redis://127.0.0.1:<port>/0

``redis-server`` is looked up on PATH; without it, ``find_redis_server`` fails with a message
saying how to install it (``make test`` does, on Debian: ``apt-get install -y redis-server``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

import pytest

HOST = "127.0.0.1"

MISSING = (
    "redis-server is not installed (not found on PATH). Run `make test`, which installs it, or "
    "install it yourself (Debian/Ubuntu: `apt-get install -y redis-server`)."
)

RespValue = bytes | int | str | None | list["RespValue"]


class RespError(Exception):
    """An error reply."""


def find_redis_server() -> str:
    """The path of ``redis-server``, or a test failure telling how to install it."""
    path = shutil.which("redis-server")
    if path is None:
        pytest.fail(MISSING, pytrace=False)
    return path


def find_redis_cli() -> str:
    path = shutil.which("redis-cli")
    if path is None:
        pytest.fail(MISSING.replace("redis-server is", "redis-cli is"), pytrace=False)
    return path


def free_port() -> int:
    """A TCP port that was free on loopback a moment ago (redis-server has no ``--port 0``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def command(port: int, *args: str | bytes | int, timeout: float = 2.0) -> RespValue:
    """Send one command to ``HOST:port`` with a throwaway connection and return the reply."""
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        request = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        sock.sendall(request)
        with sock.makefile("rb") as reader:
            return _read_reply(reader)


def _read_reply(reader: BinaryIO) -> RespValue:
    line = reader.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, payload = line[:1], line[1:-2]
    if kind == b"+":
        return payload.decode()
    if kind == b"-":
        raise RespError(payload.decode())
    if kind == b":":
        return int(payload)
    if kind == b"$":
        size = int(payload)
        if size < 0:
            return None
        return reader.read(size + 2)[:-2]
    if kind == b"*":
        count = int(payload)
        return None if count < 0 else [_read_reply(reader) for _ in range(count)]
    raise ConnectionError(f"unexpected reply {line!r}")


def _info_field(info: RespValue, name: str) -> str | None:
    text = info.decode() if isinstance(info, bytes) else str(info)
    for row in text.splitlines():
        key, _, value = row.partition(":")
        if key == name:
            return value.strip()
    return None


class RedisServer:
    """One ``redis-server`` process on a free loopback port (``start``/``stop``, or ``with``).

    ``args`` are extra command-line options (``"--cluster-enabled", "yes"``...); ``bus_port``
    asks for a second free port, passed as ``--cluster-port`` (Cluster node bus).
    """

    def __init__(self, *args: str, bus_port: bool = False, sentinel: bool = False) -> None:
        self.args = list(args)
        self.bus_port_wanted = bus_port
        self.sentinel = sentinel
        self.port = 0
        self.bus_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    @property
    def dir(self) -> Path:
        assert self._tmp is not None, "server not started"
        return Path(self._tmp.name)

    def start(self, timeout: float = 10.0) -> Self:
        """Start on a fresh free port (retrying on a port collision) and wait for PING."""
        binary = find_redis_server()
        self._tmp = tempfile.TemporaryDirectory(prefix="gostop-redis-")
        last_error = ""
        for _ in range(5):
            self.port = free_port()
            self.bus_port = free_port() if self.bus_port_wanted else 0
            while self.bus_port == self.port:
                self.bus_port = free_port()
            options = [
                "--bind", HOST, "--port", str(self.port), "--dir", str(self.dir),
                "--protected-mode", "no", "--logfile", str(self.dir / f"redis-{self.port}.log"),
            ]  # fmt: skip
            if self.sentinel:  # a Sentinel needs a config file it can rewrite
                config = self.dir / f"sentinel-{self.port}.conf"
                config.write_text("")
                argv = [binary, str(config), "--sentinel", *options, *self.args]
            else:
                argv = [binary, *options, "--save", "", "--appendonly", "no", *self.args]
                if self.bus_port:
                    argv += ["--cluster-port", str(self.bus_port)]
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            if self._wait_ready(timeout):
                return self
            last_error = self._log_tail()
            self.stop(keep_dir=True)
            if "Address already in use" not in last_error:
                break
        self.stop()
        raise RuntimeError(f"redis-server did not start: {last_error}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            with contextlib.suppress(OSError, RespError):
                # Our process answers (not some other server that took the port meanwhile).
                info = command(self.port, "INFO", "server", timeout=0.5)
                return _info_field(info, "process_id") == str(self.process.pid)
            time.sleep(0.01)
        return False

    def _log_tail(self) -> str:
        text = ""
        if self.process is not None and self.process.stderr is not None and self.process.poll() is not None:
            text += self.process.stderr.read().decode(errors="replace")
        with contextlib.suppress(OSError):
            text += (self.dir / f"redis-{self.port}.log").read_text(errors="replace")[-2000:]
        return text.strip()

    def command(self, *args: str | bytes | int) -> RespValue:
        return command(self.port, *args)

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): it keeps its sockets but answers nothing."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self, keep_dir: bool = False) -> None:
        """Terminate (then kill) the process and remove its directory."""
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
            if process.stderr is not None:
                process.stderr.close()
        if not keep_dir and self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class RedisClusterServers:
    """``masters`` Cluster-enabled servers joined with ``redis-cli --cluster create`` (no replicas);
    ``start`` returns once every node reports ``cluster_state:ok``."""

    def __init__(self, masters: int = 3) -> None:
        self.nodes = [
            RedisServer(
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000", bus_port=True,
            )
            for _ in range(masters)
        ]  # fmt: skip

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{HOST}:{node.port}" for node in self.nodes)

    def start(self, timeout: float = 20.0) -> Self:
        try:
            for node in self.nodes:
                node.start()
            created = subprocess.run(
                [find_redis_cli(), "--cluster", "create"]
                + [f"{HOST}:{node.port}" for node in self.nodes]
                + ["--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True,
                timeout=timeout,
                check=False,
            )
            if created.returncode != 0:
                raise RuntimeError(
                    f"redis-cli --cluster create failed: {created.stdout!r} {created.stderr!r}"
                )
            deadline = time.monotonic() + timeout
            while not all(
                _info_field(n.command("CLUSTER", "INFO"), "cluster_state") == "ok" for n in self.nodes
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class RedisSentinelServers:
    """A master and one Sentinel monitoring it as ``master_name`` (quorum 1)."""

    def __init__(self, master_name: str = "gostop") -> None:
        self.master_name = master_name
        self.master = RedisServer()
        self.sentinel = RedisServer(sentinel=True)

    @property
    def url(self) -> str:
        return f"redis+sentinel://{HOST}:{self.sentinel.port}/{self.master_name}"

    def start(self, timeout: float = 10.0) -> Self:
        try:
            self.master.start()
            self.sentinel.start()
            self.sentinel.command("SENTINEL", "MONITOR", self.master_name, HOST, self.master.port, 1)
            deadline = time.monotonic() + timeout
            while True:
                with contextlib.suppress(RespError):
                    address = self.sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name)
                    if isinstance(address, list) and address[1:] == [str(self.master.port).encode()]:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("the sentinel does not know the master")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.sentinel.stop()
        self.master.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextlib.contextmanager
def running(*servers: RedisServer | RedisClusterServers | RedisSentinelServers) -> Iterator[None]:
    """Start ``servers`` for the duration of a ``with`` block."""
    started: list[RedisServer | RedisClusterServers | RedisSentinelServers] = []
    try:
        for server in servers:
            started.append(server.start())
        yield
    finally:
        for server in reversed(started):
            server.stop()
