"""Several server processes on one port: ``gostop serve --workers N``.

One Python process runs one asyncio event loop, so it uses about one core. With ``--workers N``
the command becomes a small supervisor that starts N ordinary server processes, each binding
the same address with ``SO_REUSEPORT`` (the kernel spreads incoming connections over them),
and keeps them running:

- every worker gets the same configuration, passed as ``GOSTOP_*`` environment variables, and
  the same token secret (a random one is made here when none is configured, so that a seat
  token issued by one worker is accepted by all);
- worker ``i`` serves its Prometheus metrics on ``metrics_port + i``: each worker is a scrape
  target of its own (the Helm chart names one container port per worker, ``metrics``,
  ``metrics-1``, ...), so every metric is per process and a sum over workers is PromQL's ``sum``.
  (One aggregate endpoint, prometheus_client's multiprocess mode, would need the supervisor to
  serve HTTP, a shared directory cleaned of dead workers' files, and gauges that cannot be read
  when scraped; per-worker ports keep every worker an ordinary server);
- a worker that exits unexpectedly is started again (after one second); if workers keep
  failing right after starting (a port in use, a bad setting), the supervisor gives up;
- SIGTERM or SIGINT is passed on to every worker, which drains its calls as a single server
  does; the supervisor waits for them and exits.

The workers share games through the store, so more than one worker needs a Redis URL (the
embedded memory store lives inside one process).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from types import FrameType

import structlog

from .config import SETTINGS, Config

log = structlog.get_logger("gostop")

WORKER_ENV = "GOSTOP_WORKER"
"""Set by the supervisor in each worker's environment: the worker's index (0, 1, ...)."""
RESTART_DELAY = 1.0
FAST_FAILURE = 3.0
"""A worker that exits within this many seconds of starting counts as failing to start."""
MAX_FAST_FAILURES = 5


def check(config: Config) -> None:
    """Refuse configurations that cannot work with several workers (``ValueError``)."""
    if config.workers < 1:
        raise ValueError("workers must be at least 1")
    if config.workers == 1:
        return
    if not config.redis_url:
        raise ValueError(
            "several workers need a shared store: set GOSTOP_REDIS_URL (the memory store lives in one process)"
        )
    port = config.listen.rpartition(":")[2]
    if port == "0":
        raise ValueError("several workers need a fixed port to share (not port 0)")
    if config.metrics_port:
        last = config.metrics_port + config.workers - 1
        if last > 65535:
            raise ValueError(f"worker metrics ports {config.metrics_port}-{last} go past 65535: lower "
                             "GOSTOP_METRICS_PORT")
        if port.isdigit() and config.metrics_port <= int(port) <= last:
            raise ValueError(f"the listen port {port} is among the worker metrics ports {config.metrics_port}-{last} "
                             "(worker i serves metrics on GOSTOP_METRICS_PORT + i): move one of them")


def worker_index(env: Mapping[str, str] | None = None) -> int | None:
    """This process's worker index when a supervisor started it, else ``None``."""
    value = (os.environ if env is None else env).get(WORKER_ENV, "")
    return int(value) if value.isdigit() else None


def worker_env(config: Config, index: int, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of worker ``index``: ``base`` plus every setting of ``config``."""
    env = dict(base)
    for setting in SETTINGS:
        value = getattr(config, setting.name)
        env[setting.env] = str(value)
    env["GOSTOP_WORKERS"] = "1"
    if config.metrics_port:
        env["GOSTOP_METRICS_PORT"] = str(config.metrics_port + index)
    env[WORKER_ENV] = str(index)
    return env


class Supervisor:
    """Starts, watches and stops the worker processes (see the module docstring)."""

    def __init__(self, config: Config) -> None:
        check(config)
        if not config.token_secret:
            config = dataclasses.replace(config, token_secret=secrets.token_hex(32))
        self.config = config
        self.workers: list[subprocess.Popen[bytes] | None] = [None] * config.workers
        self.started: list[float] = [0.0] * config.workers
        self.fast_failures = 0
        self.stopping = False

    def _start(self, index: int) -> None:
        argv = [sys.executable, "-m", "gostop", "serve"]
        process = subprocess.Popen(argv, env=worker_env(self.config, index, os.environ), stdin=subprocess.DEVNULL)
        self.workers[index] = process
        self.started[index] = time.monotonic()
        log.info("worker started", worker=index, pid=process.pid)

    def _signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        """Run until SIGTERM/SIGINT (exit status 0) or until workers keep failing (1)."""
        previous = {sig: signal.signal(sig, self._signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            log.info("supervisor", workers=self.config.workers, listen=self.config.listen, pid=os.getpid())
            for index in range(self.config.workers):
                self._start(index)
            status = self._watch()
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return status

    def _watch(self) -> int:
        while not self.stopping:
            time.sleep(0.1)
            for index, process in enumerate(self.workers):
                if process is None or process.poll() is None or self.stopping:
                    continue
                lived = time.monotonic() - self.started[index]
                self.fast_failures = self.fast_failures + 1 if lived < FAST_FAILURE else 0
                log.warning("worker exited", worker=index, pid=process.pid, code=process.returncode,
                            seconds=round(lived, 1))
                if self.fast_failures >= MAX_FAST_FAILURES:
                    log.error("workers keep failing at start; giving up", failures=self.fast_failures)
                    return 1
                time.sleep(RESTART_DELAY)
                if not self.stopping:
                    self._start(index)
        return 0

    def _stop_all(self) -> None:
        """SIGTERM to every worker, wait for their drain, SIGKILL what is left."""
        live = [p for p in self.workers if p is not None and p.poll() is None]
        for process in live:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.config.drain_seconds + 5
        for process in live:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.info("supervisor stopped")
