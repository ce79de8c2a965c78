"""The service's HTTP port as the tests' ``Api`` sees the gRPC port: a stub with the gRPC stub's
method names over ``connectrpc``'s client (the Connect protocol or gRPC-Web), whose failures are
raised as ``grpc.aio.AioRpcError`` carrying the ``google.rpc.Status`` rebuilt from the Connect
error, so that every helper of ``testkit.servers`` (``expect``, ``failure``, ``play_round``...)
and the tests written on them run unchanged over the browsers' protocols."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2

from gostop.service.config import Config
from gostop.service.server import Server
from gostop.v1.game_connect import GameServiceClient

from .servers import Api, Metadata

PROTOCOLS = {"connect": ProtocolType.CONNECT, "grpc-web": ProtocolType.GRPC_WEB}
_GRPC_CODES = {code.name: code for code in grpc.StatusCode}
_GRPC_CODES["CANCELED"] = grpc.StatusCode.CANCELLED


def rpc_error(exc: ConnectError) -> grpc.aio.AioRpcError:
    """A Connect error as the gRPC client would have raised it (its details as a ``google.rpc.Status``)."""
    code = _GRPC_CODES.get(exc.code.name, grpc.StatusCode.UNKNOWN)
    status = status_pb2.Status(code=getattr(code_pb2, code.name, code_pb2.UNKNOWN), message=exc.message)
    for detail in exc.details:
        status.details.append(any_pb2.Any(type_url=f"type.googleapis.com/{detail.type_name}",
                                          value=detail.message_bytes))
    trailing = grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, exc.message)


class _Stream:
    """A server stream with the gRPC call's face: ``async for``, ``read()`` and ``cancel()``."""

    def __init__(self, source: AsyncIterator[Any]) -> None:
        self._source = source

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._source.__anext__()
        except ConnectError as exc:
            raise rpc_error(exc) from None

    async def read(self) -> Any:
        """The next message, or ``grpc.aio.EOF`` once the stream has ended (as the gRPC call's ``read``)."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            return grpc.aio.EOF

    def cancel(self) -> bool:
        with contextlib.suppress(Exception):
            self._source.aclose().close()  # type: ignore[attr-defined]
        return True


class ConnectStub:
    """``GameServiceStub``'s methods over the HTTP port."""

    def __init__(self, base_url: str, protocol: str) -> None:
        self.client = GameServiceClient(base_url, protocol=PROTOCOLS[protocol])

    def _unary(self, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(request: Any, metadata: Metadata = (), timeout: float | None = None) -> Any:
            try:
                return await call(request, headers=_headers(metadata),
                                  timeout_ms=None if timeout is None else int(timeout * 1000))
            except ConnectError as exc:
                raise rpc_error(exc) from None

        return run

    def __getattr__(self, name: str) -> Any:
        method = {"ListRuleSets": "list_rule_sets", "CreateGame": "create_game", "GetGame": "get_game",
                  "SubmitAction": "submit_action", "StartNextRound": "start_next_round",
                  "GetGameLog": "get_game_log"}.get(name)
        if method is None:
            raise AttributeError(name)
        return self._unary(getattr(self.client, method))

    def WatchGame(self, request: Any, metadata: Metadata = (), timeout: float | None = None) -> _Stream:
        return _Stream(self.client.watch_game(request, headers=_headers(metadata),
                                              timeout_ms=None if timeout is None else int(timeout * 1000)))


def _headers(metadata: Metadata) -> dict[str, str]:
    return dict(metadata)


class _NoChannel:
    async def close(self) -> None:
        return None


@contextlib.asynccontextmanager
async def running_http_server(cfg: Config, protocol: str) -> AsyncIterator[Api]:
    """An in-process server with its HTTP port, and an ``Api`` that calls it over ``protocol``."""
    if cfg.http_address() is None:
        from dataclasses import replace

        cfg = replace(cfg, http_listen="127.0.0.1:0")
    server = Server(cfg)
    await server.start()
    try:
        stub = ConnectStub(f"http://127.0.0.1:{server.http_port}", protocol)
        yield Api(_NoChannel(), stub, server.http_port, server)  # type: ignore[arg-type]
    finally:
        await server.stop(0)
