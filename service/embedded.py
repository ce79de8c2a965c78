"""The one embedded server: a gostop server inside the calling process, for `gostop play`,
tournaments without ``--server``, the tests and the benchmarks.

Two forms over the same ``Server``: ``serving(config)`` for code that runs an event loop already
(``async with serving(cfg) as server``), and ``EmbeddedServer`` for synchronous code, which runs
the server on its own event loop in a background thread. Without a config both use
``local_config()``: the memory store on a free loopback port, no metrics port, a random token
secret and a random operator key — whoever starts an embedded server is its operator, so a seed
given to it replays the same deal.

This module imports the server only when one starts, so a program that merely offers an embedded
server pays for nothing until it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .config import Config

if TYPE_CHECKING:
    from .server import Server


def local_config(**settings: Any) -> Config:
    """Settings of a private server on loopback (``settings`` override them)."""
    values: dict[str, Any] = {
        "listen": "127.0.0.1:0", "http_listen": "off", "metrics_port": 0, "token_secret": secrets.token_hex(24),
        "operator_keys": secrets.token_urlsafe(24),
    }
    values.update(settings)
    return Config(**values)


@contextlib.asynccontextmanager
async def serving(config: Config | None = None) -> AsyncIterator[Server]:
    """A started server on the running event loop, stopped (without a drain) on exit."""
    from .server import Server

    server = Server(config if config is not None else local_config())
    await server.start()
    try:
        yield server
    finally:
        await server.stop(0)


def operator_key_of(config: Config) -> str:
    """The first operator key of ``config`` ("" when it has none)."""
    keys = config.keys("operator_keys")
    return keys[0] if keys else ""


class EmbeddedServer:
    """A server in a background thread with its own event loop: ``start()``/``stop()``, or a
    ``with`` block. ``port``, ``http_port`` (0 when its HTTP port is off, the default),
    ``target`` and ``operator_key`` are set once it has started."""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config if config is not None else local_config(log_format="json", log_level="error")
        self.operator_key = operator_key_of(self.config)
        self.port = 0
        self.http_port = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> EmbeddedServer:
        ready = threading.Event()

        async def serve() -> None:
            async with serving(self.config) as server:
                self.port, self._loop, self._stop = server.port, asyncio.get_running_loop(), asyncio.Event()
                self.http_port = server.http_port
                ready.set()
                await self._stop.wait()

        def main() -> None:
            try:
                asyncio.run(serve())
            except BaseException as exc:  # reported by start()
                self._error = exc
                ready.set()

        self._thread = threading.Thread(target=main, name="gostop-embedded-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or self._error is not None:
            raise RuntimeError(f"the embedded server did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
