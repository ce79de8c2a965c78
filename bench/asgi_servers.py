"""The service with another ASGI server on its HTTP port, for ``bench.http --asgi``.

``BENCH_ASGI=uvicorn|granian python -m bench.asgi_servers serve ...`` takes the arguments of
``python -m gostop serve`` and serves the same ASGI application (``gostop.service.http``) with
Uvicorn (HTTP/1.1 only) or Granian's embedded server (HTTP/1.1 and HTTP/2, on the running loop;
experimental in Granian) instead of Hypercorn, so that the choice of Hypercorn is a measurement.
A measuring instrument, never a way to run the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from typing import Any

from gostop.service import http as http_module
from gostop.tools import cli


class UvicornServer(http_module.HttpServer):
    async def start(self) -> None:
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_keep_alive=int(self.keep_alive))
        self._uvicorn = uvicorn.Server(config)
        self._uvicorn.config.setup_event_loop = lambda: None  # type: ignore[method-assign]
        self._task = asyncio.ensure_future(self._uvicorn.serve(sockets=[self.sock]))
        while not self._uvicorn.started:
            await asyncio.sleep(0.005)

    async def stop(self, grace: float) -> None:
        self._uvicorn.should_exit = True
        if self._task is not None:
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(grace + 1):
                    await self._task


class GranianServer(http_module.HttpServer):
    async def start(self) -> None:
        from granian.constants import Interfaces
        from granian.server.embed import Server

        host, port = self.sock.getsockname()[:2]
        self.sock.close()  # Granian binds its own socket
        self._granian = Server(self.app, address=host, port=port, interface=Interfaces.ASGINL, log_enabled=False)
        self._task = asyncio.ensure_future(self._granian.serve())
        for _ in range(1000):
            with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
                return
            await asyncio.sleep(0.01)

    async def stop(self, grace: float) -> None:
        self._granian.stop()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(grace + 1):
                    await self._task


SERVERS: dict[str, Any] = {"uvicorn": UvicornServer, "granian": GranianServer}


def main() -> int:
    http_module.HttpServer = SERVERS[os.environ["BENCH_ASGI"]]  # type: ignore[misc]
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
