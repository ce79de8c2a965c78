"""Server settings: environment variables, overridable by command-line flags.

``SETTINGS`` is the single table of every setting (name, variable, default, meaning);
the operations documentation is generated from the same table.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    env: str
    default: Any
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("listen", "GOSTOP_LISTEN", "127.0.0.1:50051", "gRPC listen address (host:port; [::]:50051 for all)"),
    Setting("http_listen", "GOSTOP_HTTP_LISTEN", "127.0.0.1:8080",
            "HTTP listen address of the Connect and gRPC-Web protocols and the web table (HTTP/1.1 and "
            "HTTP/2; off: none)"),
    Setting("cors_origins", "GOSTOP_CORS_ORIGINS", "",
            "comma-separated origins (https://games.example.com) whose pages may call the HTTP port; * for "
            "any; empty: only the web table's own origin"),
    Setting("metrics_port", "GOSTOP_METRICS_PORT", 9464, "Prometheus metrics HTTP port (0: off)"),
    Setting("metrics_host", "GOSTOP_METRICS_HOST", "127.0.0.1", "address the metrics endpoint binds"),
    Setting("redis_url", "GOSTOP_REDIS_URL", "",
            "redis://, rediss://, redis+sentinel://h:p[,h:p]/master or redis+cluster://h:p[,h:p]; "
            "empty: embedded in-process memory store"),
    Setting("game_ttl_seconds", "GOSTOP_GAME_TTL_SECONDS", 86400, "an untouched game expires after this"),
    Setting("finished_ttl_seconds", "GOSTOP_FINISHED_TTL_SECONDS", 604800, "a finished match is kept this long"),
    Setting("token_secret", "GOSTOP_TOKEN_SECRET", "",
            "HMAC secret of seat tokens (≥ 16 bytes; must be shared by all replicas); "
            "empty: random per process"),
    Setting("api_keys", "GOSTOP_API_KEYS", "", "comma-separated keys; when set, CreateGame needs one"),
    Setting("operator_keys", "GOSTOP_OPERATOR_KEYS", "", "comma-separated keys for explicit deals and full logs"),
    Setting("tls_cert", "GOSTOP_TLS_CERT", "", "PEM certificate chain file (TLS on when cert and key are set)"),
    Setting("tls_key", "GOSTOP_TLS_KEY", "", "PEM private key file"),
    Setting("max_message_bytes", "GOSTOP_MAX_MESSAGE_BYTES", 1 << 20, "largest request or response message"),
    Setting("max_actions_per_game", "GOSTOP_MAX_ACTIONS_PER_GAME", 100000, "actions a game may commit in all"),
    Setting("drain_seconds", "GOSTOP_DRAIN_SECONDS", 10.0, "grace period for in-flight calls on SIGTERM"),
    Setting("log_format", "GOSTOP_LOG_FORMAT", "auto", "json, console, or auto (console on a terminal)"),
    Setting("log_level", "GOSTOP_LOG_LEVEL", "info", "debug, info, warning or error"),
    Setting("snapshot_cache", "GOSTOP_SNAPSHOT_CACHE", 10000, "games whose last snapshot a process keeps"),
    Setting("snapshot_every", "GOSTOP_SNAPSHOT_EVERY", 4,
            "a commit writes the game's snapshot at every Nth version and at each round's end (1-64); a load "
            "replays the log entries after it; 1: at every version (before deploying an engine that plays "
            "some step differently)"),
    Setting("event_loop", "GOSTOP_EVENT_LOOP", "uvloop",
            "uvloop (faster; the default) or asyncio (the standard library's event loop)"),
    Setting("workers", "GOSTOP_WORKERS", 1,
            "server processes sharing the listen port (SO_REUSEPORT); more than 1 needs a Redis URL"),
    Setting("max_watch_per_game", "GOSTOP_MAX_WATCH_PER_GAME", 64,
            "open WatchGame streams one game may have in one process (0: no limit)"),
    Setting("max_watch_per_seat", "GOSTOP_MAX_WATCH_PER_SEAT", 4,
            "open WatchGame streams one seat token may have in one process (0: no limit)"),
    Setting("max_watch_per_peer", "GOSTOP_MAX_WATCH_PER_PEER", 256,
            "open WatchGame streams from one client address in one process (0: no limit; behind a "
            "gateway every stream comes from the gateway's addresses)"),
    Setting("redis_blocking_reads", "GOSTOP_REDIS_BLOCKING_READS", 100,
            "blocking Redis reads (WatchGame waits) at once per process; beyond them watchers poll"),
    Setting("max_connection_age_seconds", "GOSTOP_MAX_CONNECTION_AGE_SECONDS", 600.0,
            "a client connection is closed (GOAWAY, then after the grace below) once this old; "
            "clients reconnect, and WatchGame resumes"),
    Setting("max_connection_age_grace_seconds", "GOSTOP_MAX_CONNECTION_AGE_GRACE_SECONDS", 30.0,
            "time the calls of an aged-out connection get to finish before it is closed"),
    Setting("max_connection_idle_seconds", "GOSTOP_MAX_CONNECTION_IDLE_SECONDS", 300.0,
            "a client connection with no call for this long is closed"),
    Setting("keepalive_seconds", "GOSTOP_KEEPALIVE_SECONDS", 60.0,
            "the server pings a connection silent for this long, and closes it if no answer comes "
            "within 20 s"),
    Setting("max_concurrent_streams", "GOSTOP_MAX_CONCURRENT_STREAMS", 100,
            "calls (streams) open at once on one gRPC connection; a client's further calls wait for one to "
            "end (HTTP/2 SETTINGS), they do not fail (1-10000)"),
    Setting("http_read_timeout_seconds", "GOSTOP_HTTP_READ_TIMEOUT_SECONDS", 30.0,
            "a request on the HTTP port whose body stops arriving for this long is answered 408 and its "
            "connection closed (0.1-3600); the HTTP port also closes connections by the connection age, "
            "grace and idle settings above"),
    Setting("http_hosts", "GOSTOP_HTTP_HOSTS", "",
            "comma-separated Host names (games.example.com, or with :PORT for that port only) the HTTP port "
            "answers; others get 421 (a DNS-rebinding guard); empty: any Host"),
    Setting("bot_keys", "GOSTOP_BOT_KEYS", "",
            "comma-separated bot-worker keys: a bot worker acts with one (x-api-key) for the bot seats only"),
    Setting("bot_worker", "GOSTOP_BOT_WORKER", "auto",
            "auto (an in-process bot worker with the memory store, none with Redis: run gostop bots serve), "
            "on or off"),
    Setting("bot_budget_ms", "GOSTOP_BOT_BUDGET_MS", 200,
            "a bot seat's CPU budget per decision when CreateGame names none (ms)"),
    Setting("bot_budget_max_ms", "GOSTOP_BOT_BUDGET_MAX_MS", 2000,
            "the largest budget per decision a bot seat may ask for (ms)"),
    Setting("bot_plugins", "GOSTOP_BOT_PLUGINS", "",
            "plugin bots bot seats may name, comma-separated (module:attribute, or a name of the gostop.bots "
            "entry points), installed on the bot workers; empty: built-in and remote bots only"),
    Setting("remote_bots", "GOSTOP_REMOTE_BOTS", "",
            "remote bots bot seats may name as remote:NAME: comma-separated NAME=HOST:PORT (BotService servers)"),
    Setting("bot_shards", "GOSTOP_BOT_SHARDS", 8,
            "Redis streams the pending bot turns are spread over (one Cluster slot each); the same on "
            "every server and bot worker"),
    Setting("bot_claim_idle_ms", "GOSTOP_BOT_CLAIM_IDLE_MS", 15000,
            "a bot turn a worker took and did not finish in this long is claimed by another worker"),
    Setting("presence_grace_ms", "GOSTOP_PRESENCE_GRACE_MS", 5000,
            "a seat of a clocked table whose last stream ended is disconnected when none comes back in this long"),
)


@dataclass(frozen=True, slots=True)
class Config:
    listen: str = "127.0.0.1:50051"
    http_listen: str = "127.0.0.1:8080"
    cors_origins: str = ""
    metrics_port: int = 9464
    metrics_host: str = "127.0.0.1"
    redis_url: str = ""
    game_ttl_seconds: int = 86400
    finished_ttl_seconds: int = 604800
    token_secret: str = ""
    api_keys: str = ""
    operator_keys: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    max_message_bytes: int = 1 << 20
    max_actions_per_game: int = 100000
    drain_seconds: float = 10.0
    log_format: str = "auto"
    log_level: str = "info"
    snapshot_cache: int = 10000
    snapshot_every: int = 4
    event_loop: str = "uvloop"
    workers: int = 1
    max_watch_per_game: int = 64
    max_watch_per_seat: int = 4
    max_watch_per_peer: int = 256
    redis_blocking_reads: int = 100
    max_connection_age_seconds: float = 600.0
    max_connection_age_grace_seconds: float = 30.0
    max_connection_idle_seconds: float = 300.0
    keepalive_seconds: float = 60.0
    max_concurrent_streams: int = 100
    http_read_timeout_seconds: float = 30.0
    http_hosts: str = ""
    bot_keys: str = ""
    bot_worker: str = "auto"
    bot_budget_ms: int = 200
    bot_budget_max_ms: int = 2000
    bot_plugins: str = ""
    remote_bots: str = ""
    bot_shards: int = 8
    bot_claim_idle_ms: int = 15000
    presence_grace_ms: int = 5000

    def keys(self, name: str) -> tuple[str, ...]:
        return tuple(k.strip() for k in getattr(self, name).split(",") if k.strip())

    def http_address(self) -> tuple[str, int] | None:
        """``http_listen`` as (host, port), or None when it is off."""
        if self.http_listen in ("off", ""):
            return None
        host, _, port = self.http_listen.rpartition(":")
        return host.strip("[]"), int(port)

    def remote_bot_addresses(self) -> dict[str, str]:
        """``remote_bots`` as NAME -> HOST:PORT."""
        return parse_remote_bots(self.remote_bots)

    def __post_init__(self) -> None:
        if self.http_listen not in ("off", ""):
            host, sep, port = self.http_listen.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
                raise ValueError(f"GOSTOP_HTTP_LISTEN must be HOST:PORT or off, not {self.http_listen!r}")
        for origin in self.keys("cors_origins"):
            if origin != "*" and not _ORIGIN.fullmatch(origin):
                raise ValueError(f"GOSTOP_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port], no path)")
        if self.bot_worker not in ("auto", "on", "off"):
            raise ValueError("GOSTOP_BOT_WORKER must be auto, on or off")
        for plugin in self.keys("bot_plugins"):
            if not _PLUGIN.fullmatch(plugin) or plugin.split(":")[0] in ("random", "greedy", "mcts", "remote"):
                raise ValueError(f"GOSTOP_BOT_PLUGINS: {plugin!r} is not a plugin name or module:attribute")
        if not 1 <= self.bot_budget_max_ms <= MAX_BOT_BUDGET_MS:
            raise ValueError(f"bot_budget_max_ms must be 1-{MAX_BOT_BUDGET_MS}")
        if not 1 <= self.bot_budget_ms <= self.bot_budget_max_ms:
            raise ValueError("bot_budget_ms must be 1 to bot_budget_max_ms")
        if not 1 <= self.bot_shards <= 1024:
            raise ValueError("bot_shards must be 1-1024")
        if not 1 <= self.snapshot_every <= MAX_SNAPSHOT_EVERY:
            raise ValueError(f"GOSTOP_SNAPSHOT_EVERY must be 1-{MAX_SNAPSHOT_EVERY}")
        parse_remote_bots(self.remote_bots)
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("set both GOSTOP_TLS_CERT and GOSTOP_TLS_KEY, or neither")
        if self.event_loop not in ("uvloop", "asyncio"):
            raise ValueError("GOSTOP_EVENT_LOOP must be uvloop or asyncio")
        if self.log_format not in ("auto", "json", "console"):
            raise ValueError("GOSTOP_LOG_FORMAT must be auto, json or console")
        if self.token_secret and len(self.token_secret.encode()) < 16:
            raise ValueError("GOSTOP_TOKEN_SECRET must be at least 16 bytes")
        for name in ("game_ttl_seconds", "finished_ttl_seconds", "max_message_bytes", "max_actions_per_game",
                     "workers", "redis_blocking_reads", "max_connection_age_seconds",
                     "max_connection_age_grace_seconds", "max_connection_idle_seconds", "keepalive_seconds",
                     "max_concurrent_streams", "bot_claim_idle_ms", "presence_grace_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if not 1 <= self.max_concurrent_streams <= MAX_CONCURRENT_STREAMS:
            raise ValueError(f"max_concurrent_streams must be 1-{MAX_CONCURRENT_STREAMS}")
        if not 0.1 <= self.http_read_timeout_seconds <= 3600:
            raise ValueError("http_read_timeout_seconds must be 0.1-3600")
        for host in self.keys("http_hosts"):
            if not _HOST.fullmatch(host):
                raise ValueError(f"GOSTOP_HTTP_HOSTS: {host!r} is not a host name or address (host[:port])")
        for name in ("max_watch_per_game", "max_watch_per_seat", "max_watch_per_peer"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


MAX_SNAPSHOT_EVERY = 64
"""The most versions a snapshot may lag by (a cache miss replays up to one less log entries)."""
MAX_CONCURRENT_STREAMS = 10000
"""The most calls one gRPC connection may have open (each holds a task and its buffers)."""
MAX_BOT_BUDGET_MS = 60000
"""The largest per-decision budget any server may allow (a minute: a bot seat is for playing)."""
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")
_PLUGIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,127}(:[A-Za-z_][A-Za-z0-9_.]{0,127})?")
_REMOTE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_ADDRESS = re.compile(r"[A-Za-z0-9._-]{1,253}:[0-9]{1,5}|\[[0-9A-Fa-f:.]{2,45}\]:[0-9]{1,5}")


def parse_remote_bots(text: str) -> dict[str, str]:
    """``NAME=HOST:PORT,...`` as NAME -> HOST:PORT; ``ValueError`` naming the first bad item.

    >>> parse_remote_bots("ts=127.0.0.1:7001, go=bots.games.svc:7002")
    {'ts': '127.0.0.1:7001', 'go': 'bots.games.svc:7002'}
    """
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, address = item.partition("=")
        name, address = name.strip(), address.strip()
        if not sep or not _REMOTE_NAME.fullmatch(name):
            raise ValueError(f"remote bot {item!r}: write NAME=HOST:PORT, NAME of a-z 0-9 _ - (at most 32)")
        if not _ADDRESS.fullmatch(address) or not 0 < int(address.rpartition(":")[2]) < 65536:
            raise ValueError(f"remote bot {name!r}: {address!r} is not HOST:PORT")
        if name in out:
            raise ValueError(f"remote bot {name!r} is named twice")
        out[name] = address
    return out


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One ``--flag`` per setting (defaults come from the environment)."""
    for s in SETTINGS:
        parser.add_argument(
            "--" + s.name.replace("_", "-"), dest=s.name, default=None, type=type(s.default),
            help=f"{s.help} [env {s.env}, default {s.default!r}]",
        )


def load(args: argparse.Namespace | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Settings from ``env`` (default: the process environment), then flags."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for s in SETTINGS:
        raw = env.get(s.env)
        if raw is not None and raw != "":
            try:
                values[s.name] = type(s.default)(raw)
            except ValueError:
                raise ValueError(f"{s.env}: cannot read {raw!r} as {type(s.default).__name__}") from None
        flag = getattr(args, s.name, None) if args is not None else None
        if flag is not None:
            values[s.name] = flag
    return Config(**values)


def settings_table(settings: Sequence[Setting] = SETTINGS) -> str:
    """The settings as a Markdown table (for the operations documentation)."""
    lines = ["| variable | flag | default | meaning |", "|---|---|---|---|"]
    for s in settings:
        lines.append(f"| `{s.env}` | `--{s.name.replace('_', '-')}` | `{s.default!r}` | {s.help} |")
    return "\n".join(lines)


assert [f.name for f in fields(Config)] == [s.name for s in SETTINGS]
