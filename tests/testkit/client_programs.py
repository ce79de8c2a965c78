"""What the tests of our clients in other languages share: a server with both ports for their
programs, and a bot server program run until the test is over."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from gostop.service.config import Config
from gostop.service.embedded import EmbeddedServer
from testkit.redis_server import free_port

LISTENING: Final = re.compile(r"^botserver listening on (\S+:\d+)$")
"""The line every example bot server prints once it listens."""

RUN_TIMEOUT: Final = 180.0
"""How long one run of a client program may take."""


def run(args: list[str], cwd: Path, timeout: float = RUN_TIMEOUT, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """A program run to its end, its output captured (``env`` on top of this process's)."""
    return subprocess.run(args, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def explain(result: subprocess.CompletedProcess[str]) -> str:
    """A finished program's exit code and the end of its output, for an assertion's message."""
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"


@dataclass(frozen=True, slots=True)
class Ports:
    """The server's gRPC port and HTTP port (Connect and gRPC-Web), each as host:port."""

    grpc: str
    http: str

    def of(self, protocol: str) -> str:
        """The port a program speaking ``protocol`` (grpc, connect, grpcweb) calls."""
        return self.grpc if protocol == "grpc" else self.http


@contextlib.contextmanager
def both_ports(secret: str, operator_key: str) -> Iterator[Ports]:
    """The embedded server (memory store) with both ports on free loopback ports."""
    http = f"127.0.0.1:{free_port()}"
    cfg = Config(listen="127.0.0.1:0", http_listen=http, metrics_port=0, token_secret=secret,
                 operator_keys=operator_key, log_level="warning", log_format="json")
    with EmbeddedServer(cfg) as embedded:
        yield Ports(embedded.target, http)


@contextlib.contextmanager
def bot_server(command: list[str], cwd: Path) -> Iterator[str]:
    """Run a bot server program on a free loopback port until the block ends; its host:port."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()  # printed once the server listens (EOF if it died)
        found = LISTENING.match(first)
        if found is None:
            process.kill()
            _, err = process.communicate(timeout=30)
            pytest.fail(f"{command[0]} did not start: {first!r}\n{err[-4000:]}")
        yield found.group(1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
