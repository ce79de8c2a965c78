"""``gostop serve``: the game service in this process (or a supervisor of server processes), with a
bot worker inside it on the memory store, saying where it serves."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from typing import Any

from gostop.service import config as cfg
from gostop.service.config import Config

GC_THRESHOLDS = (1_000, 50, 100)
"""Collector thresholds of a server process. Reference counting frees nearly everything a call
allocates (engine states hold no cycles); the collector is there for the few cycles each gRPC call
leaves behind. A young-generation collection pauses the event loop for as long as it walks, so the
first threshold stays small: with tens of thousands, every player holding a stream felt the
pauses (the p99 of SubmitAction with a few thousand streams open), for no CPU saved per call."""


def tune_gc() -> None:
    """Move everything alive after start-up (modules, the server) out of the collector's sight and
    collect less often: less CPU per call for the same work."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``gostop serve``: the server's settings."""
    cfg.add_flags(parser)


def serve_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``gostop serve``: its exit status (a setting refused is ``parser``'s usage error)."""
    try:
        config = cfg.load(args)
    except ValueError as exc:
        parser.error(str(exc))
    from gostop.service.logs import configure

    configure(config.log_format, config.log_level)
    if config.workers > 1:
        from gostop.service.workers import Supervisor

        try:
            supervisor = Supervisor(config)
        except ValueError as exc:
            parser.error(str(exc))
        return supervisor.run()
    return run_serve(config)


def run_serve(config: Config) -> int:
    """Serve in this process until SIGTERM or SIGINT; 1 if a port could not be bound."""
    from gostop.service.server import ListenError

    try:
        if config.event_loop == "uvloop":
            import uvloop

            uvloop.run(run_server(config))
        else:
            asyncio.run(run_server(config))
    except ListenError as exc:
        sys.stderr.write(f"gostop serve: {exc}\n")
        return 1
    return 0


async def run_server(config: Config) -> None:
    """The server with its in-process bot worker (and ``Welcome``), until it stops."""
    # Build the server inside the running loop: grpc.aio binds to the loop current at construction.
    from gostop.service.programs.botworker import attach_in_process_worker
    from gostop.service.server import Server

    server = Server(config)
    attach_in_process_worker(server)
    if config.log_format != "json":  # an explicit json keeps the output machine-readable only
        server.companions.append(Welcome(server))
    tune_gc()
    await server.serve_forever()


class Welcome:
    """Says on stderr, in plain words beside the log, where a person points a browser and a gRPC
    client, once the server serves (a companion: it starts after the ports). Not with
    ``GOSTOP_LOG_FORMAT=json``, where every line must be JSON."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def start(self) -> None:
        sys.stderr.write(welcome_text(self.server))
        sys.stderr.flush()

    async def stop(self) -> None:
        return None


def welcome_text(server: Any) -> str:
    """The lines ``Welcome`` prints: the web table's address, gRPC's, the metrics' and the store."""
    config = server.config

    def address(host: str, port: int) -> str:
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, host)
        return f"{host}:{port}" if ":" not in host or host.startswith("[") else f"[{host}]:{port}"

    lines = ["", "gostop is serving."]
    if server.http_port:
        where = address(config.http_listen.rpartition(":")[0], server.http_port)
        lines.append(f"  The web table:  open http://{where}/ in a browser (Connect and gRPC-Web answer there too)")
    tls = " (TLS)" if config.tls_cert else ""
    lines.append(f"  gRPC:           {address(config.listen.rpartition(':')[0], server.port)}{tls}")
    if server.metrics_port:
        lines.append(f"  Metrics:        http://{address(config.metrics_host, server.metrics_port)}/metrics")
    if server.store.name == "memory":
        lines.append("  Games are kept in this process's memory: they are gone when it stops (Ctrl-C).")
    return "\n".join(lines) + "\n\n"
