"""Processes of the service benchmark: CPU and connection accounting from /proc, free ports, and the
server process (with its Redis) that each measurement runs against.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

from testkit.redis_server import HOST, RedisServer, free_port

from .settings import OPERATOR_KEY, ROOT, TOKEN_SECRET

# ----------------------------------------------------------------------------- processes


def child_pids(pid: int) -> list[int]:
    """The child processes of ``pid``: the union of its threads' ``/proc/<pid>/task/*/children``."""
    out: list[int] = []
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            out.extend(int(x) for x in path.read_text().split())
    return sorted(set(out))


def tcp_sockets(port: int) -> dict[int, str]:
    """Loopback TCP sockets whose local port is ``port``: socket inode -> state (``0A`` listening,
    ``01`` established), from ``/proc/net/tcp`` and ``tcp6``."""
    out: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    out[int(fields[9])] = fields[3]
    return out


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets that process ``pid`` holds open."""
    out: set[int] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    out.add(int(link[8:-1]))
    return out


def connections_by_pid(port: int, pids: Sequence[int]) -> list[int]:
    """Established connections to ``port`` held by each of ``pids``."""
    established = {inode for inode, state in tcp_sockets(port).items() if state == "01"}
    return [len(socket_inodes(pid) & established) for pid in pids]


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive TCP ports that were free on loopback a moment ago."""
    for _ in range(50):
        base = free_port()
        if base + count > 65535:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count):
                    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    sock.bind((HOST, port))
            return int(base)
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports")


class ServerProcess:
    """``python -m gostop serve`` on a free loopback port, its log in a temporary file.

    With ``workers > 1`` the process is the supervisor of ``service.workers``; its workers are its
    child processes, worker ``i`` serving metrics on ``metrics_port + i``."""

    def __init__(
        self, redis_url: str, metrics: bool, profile: str = "", redis_pid: int | None = None, workers: int = 1,
        log_level: str = "info", domain_free: bool = False, program: str = "",
    ) -> None:
        if workers > 1 and not redis_url:
            raise ValueError("several server workers need Redis (--store redis)")
        if workers > 1 and profile:
            raise ValueError("--profile-server profiles a single server process (not with several workers)")
        if workers > 1 and domain_free:
            raise ValueError("--domain-free runs a single server process (not with several workers)")
        self.domain_free = domain_free
        self.program = program
        """A module run instead of ``gostop`` (``bench.asgi_servers``); empty: the real server."""
        self.redis_url = redis_url
        self.redis_pid = redis_pid
        self.metrics = metrics
        self.profile = profile
        self.workers = workers
        self.log_level = log_level
        self.port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def target(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def metrics_ports(self) -> list[int]:
        """The metrics port of each server process (none when metrics are off)."""
        return [self.metrics_port + i for i in range(self.workers)] if self.metrics_port else []

    def start(self) -> None:
        self.port = free_port()
        self.metrics_port = free_ports(self.workers) if self.metrics else 0
        env = dict(os.environ)
        env.update(
            GOSTOP_REDIS_URL=self.redis_url,
            GOSTOP_TOKEN_SECRET=TOKEN_SECRET,
            GOSTOP_OPERATOR_KEYS=OPERATOR_KEY,
            GOSTOP_LOG_LEVEL=self.log_level,
            GOSTOP_LOG_FORMAT="json",
            GOSTOP_METRICS_HOST=HOST,
            GOSTOP_HTTP_LISTEN=os.environ.get("GOSTOP_HTTP_LISTEN", "off"),
        )
        self._log = tempfile.TemporaryFile(prefix="gostop-bench-server-")  # noqa: SIM115 (closed by stop)
        profiler = ["-m", "cProfile", "-o", self.profile] if self.profile else []
        program = ["-m", self.program or ("bench.domain_free" if self.domain_free else "gostop")]
        argv = [
            sys.executable, *profiler, *program, "serve", "--listen", self.target,
            "--metrics-port", str(self.metrics_port), "--workers", str(self.workers),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )

    def worker_pids(self) -> list[int]:
        """The processes that serve calls: the workers of a supervisor, or the one server."""
        if self.process is None:
            return []
        return child_pids(self.process.pid) if self.workers > 1 else [self.process.pid]

    def pids(self) -> list[int]:
        """Every server process (a supervisor and its workers): their CPU is the server's."""
        if self.process is None:
            return []
        return sorted({self.process.pid, *self.worker_pids()})

    def listeners(self) -> int:
        """Listening sockets on the server's port (one per worker once they are all up)."""
        return sum(1 for state in tcp_sockets(self.port).values() if state == "0A")

    def connections(self) -> list[int]:
        """Established client connections held by each worker, in the order of ``worker_pids``."""
        return connections_by_pid(self.port, self.worker_pids())

    def log_tail(self, size: int = 3000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-size:]

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM (the server, or the supervisor and its workers, drain), then SIGKILL after a while."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            workers = child_pids(process.pid) if self.workers > 1 else []
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
            for pid in workers:  # only if the supervisor could not stop them
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None


@contextlib.contextmanager
def services(
    store: str, metrics: bool, profile: str = "", workers: int = 1, log_level: str = "info",
    domain_free: bool = False,
) -> Iterator[ServerProcess]:
    """A redis-server (for ``store == "redis"``) and a gostop server, stopped on the way out."""
    redis: RedisServer | None = None
    server: ServerProcess | None = None
    try:
        redis_url = ""
        if store == "redis":
            redis = RedisServer().start()
            redis_url = redis.url
        redis_pid = redis.process.pid if redis and redis.process else None
        server = ServerProcess(redis_url, metrics, profile, redis_pid, workers, log_level, domain_free)
        server.start()
        yield server
    finally:
        if server is not None:
            server.stop()
        if redis is not None:
            redis.stop()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
