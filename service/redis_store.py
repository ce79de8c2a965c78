"""The Redis store: standalone, Sentinel or Cluster, on ``redis.asyncio``.

Every key of a game carries its ``{game_id}`` hash tag, so a game lives in one Cluster slot and a
create or commit is one Lua script on that slot: all or nothing. Redis errors become
``StoreUnavailable`` (``StoreCorrupt`` for data of the wrong shape) under short timeouts, so a dead
server fails calls fast. The key layout, the scripts, retries and blocking reads: docs/service.md
("The Redis store's keys, scripts and waits").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

import hiredis
from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gostop.service.bot_queue import shard_of
from gostop.service.log_feed import FollowedGame, LogFeed, Opener
from gostop.service.memory_store import (
    REQUEST_SEPARATOR,
    check_fingerprint,
    check_game_id,
    check_ttl,
)
from gostop.service.resp import NotSent, RespClient, setup_commands
from gostop.service.store_api import (
    CommitResult,
    Committed,
    Conflict,
    Duplicate,
    LogEntry,
    Missing,
    Snapshot,
    StoreCorrupt,
    StoreOutcomeUnknown,
    StoreUnavailable,
)

T = TypeVar("T")
Client = Redis | RedisCluster

_SEPARATOR: Final = REQUEST_SEPARATOR.encode()

CREATE_LUA: Final = """
-- KEYS: snap, log, req, feed (a channel). ARGV: blob, entry, ttl_ms. Returns 1 if created, 0 if
-- the game exists.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
-- Leftovers of an expired game with the same id (keys expire together, but be safe).
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('XADD', KEYS[2], '1-0', 'e', ARGV[2])
redis.call('HSET', KEYS[1], 'version', '1', 'blob', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.pcall('SPUBLISH', KEYS[4], '1:' .. ARGV[2])
return 1
"""

_COMMITTED, _CONFLICT, _DUPLICATE, _MISSING, _CORRUPT = 1, 2, 3, 4, 5

RESOLVE_LUA: Final = """
-- A stored request (KEYS[2] is the log) as fingerprint NUL response, or nil if its response is
-- missing from the log.
local function resolve(stored)
  local sep = string.find(stored, '\0', 1, true)
  if not sep or string.sub(stored, sep + 1, sep + 1) ~= 'v' then
    return stored
  end
  local id = string.sub(stored, sep + 2) .. '-0'
  local found = redis.call('XRANGE', KEYS[2], id, id)
  local fields = found[1] and found[1][2]
  if fields then
    for i = 1, #fields, 2 do
      if fields[i] == 'r' then
        return string.sub(stored, 1, sep) .. fields[i + 1]
      end
    end
  end
  return nil
end
"""

LOOKUP_LUA: Final = RESOLVE_LUA + """
-- KEYS: req, log. ARGV: request_id. Returns {0} | {3, stored request} | {5, reason}.
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  return {0}
end
local resolved = resolve(stored)
if not resolved then
  return {5, 'the stored response is missing from the log'}
end
return {3, resolved}
"""

COMMIT_LUA: Final = RESOLVE_LUA + """
-- KEYS: snap, log, req, feed (a channel: the entry is announced there, as "<version>:<entry>").
-- ARGV: expected_version, blob, entry, ttl_ms, request_id, fingerprint, response, has_blob ('1': blob
-- is the snapshot at the new version; '0': no snapshot, the last one stays).
-- Returns {1, new_version} | {2, current_version} | {3, stored request} | {4} | {5, reason}.
local request_id = ARGV[5]
if request_id ~= '' then
  local stored = redis.call('HGET', KEYS[3], request_id)
  if stored then
    local resolved = resolve(stored)
    if not resolved then
      return {5, 'the stored response is missing from the log'}
    end
    return {3, resolved}
  end
end
local current = redis.call('HGET', KEYS[1], 'version')
if not current then
  return {4}
end
local version = tonumber(current)
if not version then
  return {5, 'snapshot version is not a number'}
end
if version ~= tonumber(ARGV[1]) then
  return {2, version}
end
local next_version = string.format('%d', version + 1)
-- Without a new snapshot, the current one (the state at this version) becomes the base.
local moved
if ARGV[8] ~= '1' then
  local blob = redis.call('HGET', KEYS[1], 'blob')
  if blob then
    moved = string.format('%d', version) .. ':' .. blob
  elseif redis.call('HEXISTS', KEYS[1], 'base') == 0 then
    return {5, 'the game has no snapshot'}
  end
end
-- The only write that can fail on well-typed keys (a log ahead of the snapshot): do it first,
-- since a failing script keeps the writes it already made.
local added
if request_id ~= '' then
  added = redis.pcall('XADD', KEYS[2], next_version .. '-0', 'e', ARGV[3], 'r', ARGV[7])
else
  added = redis.pcall('XADD', KEYS[2], next_version .. '-0', 'e', ARGV[3])
end
if type(added) == 'table' and added.err then
  return {5, 'log append failed: ' .. added.err}
end
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'version', next_version, 'blob', ARGV[2])
  redis.call('HDEL', KEYS[1], 'base')
elseif moved then
  redis.call('HSET', KEYS[1], 'version', next_version, 'base', moved)
  redis.call('HDEL', KEYS[1], 'blob')
else
  redis.call('HSET', KEYS[1], 'version', next_version)
end
if request_id ~= '' then
  redis.call('HSET', KEYS[3], request_id, ARGV[6] .. '\0v' .. next_version)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
-- A notice, not a write: on a server without sharded pub/sub (or without the right to it) the
-- commit stands and watchers read the log instead.
redis.pcall('SPUBLISH', KEYS[4], next_version .. ':' .. ARGV[3])
return {1, version + 1}
"""


@contextlib.contextmanager
def _mapped_errors() -> Iterator[None]:
    """Turn every redis-py failure into ``StoreUnavailable`` or ``StoreCorrupt``."""
    try:
        yield
    except (StoreUnavailable, StoreCorrupt):
        raise
    except ResponseError as error:
        # Data of the wrong shape is corruption; any other error reply (LOADING, READONLY,
        # CLUSTERDOWN, TRYAGAIN, OOM, BUSY, MASTERDOWN...) means the store cannot serve now.
        if "WRONGTYPE" in str(error):
            raise StoreCorrupt(f"redis: {error}") from error
        raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error
    except (RedisError, RedisClusterException, OSError) as error:
        # OSError covers socket errors and asyncio's TimeoutError (our own deadlines).
        raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error


def _maybe_sent(cause: BaseException | None) -> bool:
    """Whether a failed redis-py write may have reached the server: anything but an error reply
    (the server answered: our scripts write nothing before their last check) or a failure to
    connect (redis-py's message says "connecting")."""
    if cause is None or isinstance(cause, ResponseError):
        return False
    return "connecting" not in str(cause).lower()


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _version_of(stream_id: object) -> int:
    text = _text(stream_id)
    head, _, tail = text.partition("-")
    if tail != "0" or not head.isdigit():
        raise StoreCorrupt(f"unexpected log entry id {text!r}")
    return int(head)


def _entries(raw: Sequence[Any]) -> list[LogEntry]:
    entries = []
    for stream_id, fields in raw:
        entry = fields.get(b"e") if isinstance(fields, dict) else None
        if not isinstance(entry, bytes):
            raise StoreCorrupt(f"log entry {_text(stream_id)!r} has no field 'e'")
        entries.append(LogEntry(_version_of(stream_id), entry))
    return entries


def _pairs(fields: object) -> dict[Any, Any] | None:
    """A stream entry's fields as hiredis returns them (``[name, value, ...]``) as a dict."""
    if not isinstance(fields, list) or len(fields) % 2:
        return None
    return dict(zip(fields[::2], fields[1::2], strict=True))


def _duplicate(stored: object) -> Duplicate:
    if not isinstance(stored, bytes) or _SEPARATOR not in stored:
        raise StoreCorrupt("stored request has no fingerprint separator")
    fingerprint, _, response = stored.partition(_SEPARATOR)
    try:
        return Duplicate(fingerprint.decode("utf-8"), response)
    except UnicodeDecodeError as error:
        raise StoreCorrupt("stored request fingerprint is not UTF-8") from error


PRESENCE_SHARDS = 8
"""Shards of the index of stream registrations (``lapsed_presence``): sorted sets by expiry, each
in a Cluster slot of its own."""
DIRECT_COMMANDS = frozenset({"ZADD", "ZREM", "ZCARD", "ZRANGEBYSCORE", "PEXPIREAT", "XACK", "XDEL", "XLEN",
                             "XADD", "EVALSHA", "EVAL"})
"""Raw commands (``execute``) sent over the pipelined connection when there is one: those whose
reply is the same there as through redis-py (integers, lists of integers or bytes); the stream
reads, whose replies redis-py reshapes, go through redis-py."""


def _end_wait(waiter: asyncio.Future[None]) -> None:
    """A wait's time is up: it looks at the log once more."""
    if not waiter.done():
        waiter.set_result(None)


class RedisStore:
    """The ``Store`` protocol on Redis (docs/service.md). Build one with ``from_url``."""

    name = "redis"

    def __init__(
        self,
        client: Client,
        *,
        blocking_client: Client | None = None,
        prefix: str = "gostop",
        max_connections: int = 100,
        max_waiters: int = 100,
        max_block_ms: int = 1000,
        poll_ms: int = 200,
        connect_timeout: float = 1.0,
        read_timeout: float = 2.0,
        retries: int = 1,
        closers: Sequence[Callable[[], Awaitable[None]]] = (),
        fast: RespClient | None = None,
        notices: bool = True,
        subscriber: tuple[Opener, list[tuple[Any, ...]]] | None = None,
    ) -> None:
        """Wrap ready clients (``from_url`` builds them). ``blocking_client`` serves ``wait_log``
        (default: ``client``); a socket read timeout of the clients, if any, must exceed
        ``max_block_ms``. ``max_connections`` and ``max_waiters`` cap concurrent commands and
        blocking reads. The store derives its deadlines from ``connect_timeout`` and
        ``read_timeout`` (waiting for a free slot: their sum; a whole call: twice that, as a
        script call may take a few round trips: NOSCRIPT fallback, Cluster redirects or topology
        refresh; a blocking read: its block plus their sum).
        ``retries``: how many times reads are retried after a connection error. ``closers``
        are awaited by ``close`` after the clients (e.g. a Sentinel manager's). ``fast``, for a
        standalone server, carries the hot commands (create, load, commit, request lookup) over
        one pipelined connection instead of ``client`` (see ``service.resp``). With ``notices``,
        ``wait_log`` waits on commit notices (``service.log_feed``) instead of blocking reads,
        over a connection opened like ``fast``'s, or by ``subscriber`` (how to open one, and its
        setup commands)."""
        if "{" in prefix or "}" in prefix:
            raise ValueError("prefix must not contain '{' or '}' (the game id is the hash tag)")
        if max_connections < 1 or max_waiters < 1 or max_block_ms < 1:
            raise ValueError("max_connections, max_waiters and max_block_ms must be positive")
        self._client = client
        self._blocking = blocking_client if blocking_client is not None else client
        self._prefix = prefix
        self._lapse_keys = [f"{prefix}:presence:{{p{i}}}" for i in range(PRESENCE_SHARDS)]
        """The index of stream registrations by expiry (``lapsed_presence``), by shard."""
        self._commands = asyncio.Semaphore(max_connections)
        self._waiters = asyncio.Semaphore(max_waiters)
        self._max_block_ms = max_block_ms
        self._poll_ms = max(1, poll_ms)
        self._pool_timeout = connect_timeout + read_timeout
        self._op_timeout = 2 * (connect_timeout + read_timeout)
        self._block_margin = connect_timeout + read_timeout
        self._retries = retries
        self._closers = list(closers)
        self._ready: set[int] = set()
        self._ready_lock = asyncio.Lock()
        self._create = client.register_script(CREATE_LUA)
        self._commit = client.register_script(COMMIT_LUA)
        self._lookup = client.register_script(LOOKUP_LUA)
        self._fast = fast
        self._feed: LogFeed | None = None
        if fast is not None:
            self._closers.insert(0, fast.close)
            if subscriber is None:
                subscriber = (fast.open_protocol, fast.setup)
        if subscriber is not None and notices:
            self._feed = LogFeed(subscriber[0], self._channel, setup=subscriber[1])
            self._closers.insert(0, self._feed.close)

    # -- construction --

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "gostop",
        connect_timeout: float = 1.0,
        read_timeout: float = 2.0,
        max_connections: int = 100,
        max_waiters: int = 100,
        max_block_ms: int = 10_000,
        retries: int = 1,
        sentinel_password: str | None = None,
    ) -> RedisStore:
        """A store for one of these URLs:

        - ``redis://[[user]:password@]host[:port][/db]`` and ``rediss://...`` (TLS): standalone;
          query-string options are passed to redis-py's connections.
        - ``redis+sentinel://[[user]:password@]host:port[,host:port...]/<master_name>[/db]``: the
          master of a Sentinel-monitored group; the password is the master's (and, unless
          ``sentinel_password`` is given, not sent to the sentinels).
        - ``redis+cluster://[[user]:password@]host:port[,host:port...]``: a Cluster, from these
          startup nodes.

        ``connect_timeout`` and ``read_timeout`` (seconds) bound every connect and every call (a
        call: see ``__init__``); blocking reads get their sum on top of their block, which lasts at
        most ``max_block_ms``. A sentinel's answer is bounded by ``read_timeout`` alone, so that
        discovery moves on from a sentinel that does not answer.
        """
        if connect_timeout <= 0 or read_timeout <= 0:
            raise ValueError("connect_timeout and read_timeout must be positive")
        scheme = urlsplit(url).scheme.lower()
        pools = _Pools.of(connect_timeout, read_timeout, max_connections, max_waiters)
        common: dict[str, Any] = {
            "prefix": prefix,
            "max_connections": max_connections,
            "max_waiters": max_waiters,
            "max_block_ms": max_block_ms,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "retries": retries,
        }
        if scheme in ("redis", "rediss", "unix"):
            client, blocking = _standalone_clients(url, pools)
            fast = _fast_client(url, connect_timeout, read_timeout, max_connections)
            return cls(client, blocking_client=blocking, fast=fast, **common)
        if scheme == "redis+sentinel":
            client, blocking, sentinel = _sentinel_clients(url, pools, sentinel_password)
            return cls(client, blocking_client=blocking, closers=[sentinel.aclose],
                       subscriber=_sentinel_subscriber(url, sentinel, connect_timeout), **common)
        if scheme == "redis+cluster":
            cluster, blocking_cluster = _cluster_clients(url, pools)
            return cls(cluster, blocking_client=blocking_cluster, **common)
        raise ValueError(
            f"unsupported Redis URL scheme {scheme!r}: use redis://, rediss://, unix://, "
            "redis+sentinel:// or redis+cluster://"
        )

    # -- keys and plumbing --

    def _keys(self, game_id: str) -> list[str]:
        check_game_id(game_id)
        base = f"{self._prefix}:{{{game_id}}}"
        return [f"{base}:snap", f"{base}:log", f"{base}:req"]

    def _channel(self, game_id: str) -> str:
        """The shard channel a game's commits are announced on (``service.log_feed``)."""
        return f"{self._prefix}:{{{game_id}}}:feed"

    @contextlib.asynccontextmanager
    async def _slot(self, semaphore: asyncio.Semaphore, timeout: float) -> AsyncIterator[bool]:
        """Hold one of ``semaphore``'s slots; yields False if none was free within ``timeout``."""
        try:
            async with asyncio.timeout(timeout):
                await semaphore.acquire()
        except TimeoutError:
            yield False
            return
        try:
            yield True
        finally:
            semaphore.release()

    async def _initialized(self, client: Client) -> Client:
        """``client``, its Cluster topology discovered first, by one task: redis-py (8.1) routes
        the commands of concurrent first users of a fresh ``RedisCluster`` wrongly (before it
        knows a node) and they fail with closed connections."""
        if isinstance(client, RedisCluster) and id(client) not in self._ready:
            async with self._ready_lock:
                if id(client) not in self._ready:
                    await client.initialize()
                    self._ready.add(id(client))
        return client

    async def _run(self, call: Callable[[], Awaitable[T]], idempotent: bool) -> T:
        """One command on the main client, bounded in concurrency and time, errors mapped."""
        attempts = 1 + (self._retries if idempotent else 0)
        for attempt in range(attempts):
            async with self._slot(self._commands, self._pool_timeout) as ok:
                if not ok:
                    raise StoreUnavailable("redis: no free connection (too many concurrent requests)")
                try:
                    with _mapped_errors():
                        async with asyncio.timeout(self._op_timeout):
                            await self._initialized(self._client)
                            return await call()
                except StoreUnavailable as error:
                    if not idempotent and _maybe_sent(error.__cause__):
                        raise StoreOutcomeUnknown(f"{error} (the write may have been applied)") from error.__cause__
                    if attempt + 1 == attempts or not isinstance(error.__cause__, RedisConnectionError):
                        raise
            await asyncio.sleep(0.05)
        raise AssertionError("unreachable")

    # -- the Store protocol --

    async def _direct(self, command: tuple[bytes | str | int, ...], idempotent: bool) -> Any:
        """One command over the pipelined connection: error replies and connection failures
        mapped like ``_mapped_errors``; reads retried once after a connection failure."""
        assert self._fast is not None
        attempts = 1 + (self._retries if idempotent else 0)
        for attempt in range(attempts):
            try:
                reply = await self._fast.call(*command)
            except OSError as error:  # ConnectionError; TimeoutError (no answer, or connecting)
                if attempt + 1 < attempts and isinstance(error, ConnectionError):
                    await asyncio.sleep(0.05)
                    continue
                if not idempotent and not isinstance(error, NotSent):
                    raise StoreOutcomeUnknown(f"redis: sent, no answer: {type(error).__name__}: {error}") from error
                raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error
            if isinstance(reply, hiredis.ReplyError):
                if str(reply).startswith("WRONGTYPE"):
                    raise StoreCorrupt(f"redis: {reply}")
                raise StoreUnavailable(f"redis: {reply}")
            return reply
        raise AssertionError("unreachable")

    async def _script(self, script: Any, keys: list[str], args: list[Any], idempotent: bool = False) -> Any:
        """EVALSHA ``script`` (a redis-py ``Script``, for its text and SHA); on NOSCRIPT (a
        restarted or flushed server), SCRIPT LOAD and once more (NOSCRIPT means nothing ran).
        ``idempotent``: a read-only script, retried like any read after a connection error."""
        if self._fast is None:
            return await self._run(lambda: script(keys=keys, args=args), idempotent=idempotent)
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            return await self._direct(command, idempotent=idempotent)
        except StoreUnavailable as error:
            if not str(error).startswith("redis: NOSCRIPT"):
                raise
        await self._direct(("SCRIPT", "LOAD", script.script), idempotent=True)
        return await self._direct(command, idempotent=idempotent)

    async def create(self, game_id: str, blob: bytes, entry: bytes, ttl_ms: int) -> bool:
        keys = [*self._keys(game_id), self._channel(game_id)]
        check_ttl(ttl_ms)
        result = await self._script(self._create, keys, [blob, entry, ttl_ms])
        return bool(result)

    async def load(self, game_id: str) -> Snapshot | None:
        snap = self._keys(game_id)[0]
        if self._fast is not None:
            reply = await self._direct(("HMGET", snap, "version", "blob", "base"), idempotent=True)
        else:
            reply = await self._run(lambda: self._client.hmget(snap, ["version", "blob", "base"]), idempotent=True)
        version, blob, base = reply
        if version is None and blob is None and base is None:
            return None
        if not isinstance(version, bytes) or not version.isdigit():
            raise StoreCorrupt(f"game {game_id!r}: snapshot without a valid version")
        if isinstance(blob, bytes):
            return Snapshot(int(version), blob)
        if isinstance(base, bytes):
            at, _, blob = base.partition(b":")
            if not at.isdigit() or not 0 < int(at) < int(version):
                raise StoreCorrupt(f"game {game_id!r}: a base snapshot without a valid version")
            return Snapshot(int(version), blob, int(at))
        raise StoreCorrupt(f"game {game_id!r}: no snapshot")

    async def commit(
        self,
        game_id: str,
        expected_version: int,
        blob: bytes | None,
        entry: bytes,
        ttl_ms: int,
        request_id: str = "",
        fingerprint: str = "",
        response: bytes = b"",
    ) -> CommitResult:
        keys = [*self._keys(game_id), self._channel(game_id)]
        check_ttl(ttl_ms)
        check_fingerprint(fingerprint)
        args: list[bytes | str | int] = [expected_version, b"" if blob is None else blob, entry, ttl_ms, request_id,
                                         fingerprint, response, "0" if blob is None else "1"]
        result = await self._script(self._commit, keys, args)
        try:
            code = int(result[0])
            if code == _COMMITTED:
                return Committed(int(result[1]))
            if code == _CONFLICT:
                return Conflict(int(result[1]))
            if code == _DUPLICATE:
                return _duplicate(result[1])
            if code == _MISSING:
                return Missing()
            if code == _CORRUPT:
                raise StoreCorrupt(f"game {game_id!r}: {_text(result[1])}")
        except (TypeError, ValueError, IndexError) as error:
            raise StoreCorrupt(f"game {game_id!r}: unexpected commit reply {result!r}") from error
        raise StoreCorrupt(f"game {game_id!r}: unexpected commit reply {result!r}")

    async def lookup_request(self, game_id: str, request_id: str) -> Duplicate | None:
        _, log, req = self._keys(game_id)
        if not request_id:
            return None
        result = await self._script(self._lookup, [req, log], [request_id], idempotent=True)
        try:
            code = int(result[0])
            if code == 0:
                return None
            if code == _DUPLICATE:
                return _duplicate(result[1])
            if code == _CORRUPT:
                raise StoreCorrupt(f"game {game_id!r}: {_text(result[1])}")
        except (TypeError, ValueError, IndexError) as error:
            raise StoreCorrupt(f"game {game_id!r}: unexpected lookup reply {result!r}") from error
        raise StoreCorrupt(f"game {game_id!r}: unexpected lookup reply {result!r}")

    async def read_log(self, game_id: str, after_version: int, limit: int = 1000) -> list[LogEntry]:
        log = self._keys(game_id)[1]
        if limit <= 0:
            return []
        start = f"({max(after_version, 0)}-0"
        if self._fast is not None:  # one pipelined connection (watchers that poll use it too)
            reply = await self._direct(("XRANGE", log, start, "+", "COUNT", limit), idempotent=True)
            if not isinstance(reply, list):
                raise StoreCorrupt(f"game {game_id!r}: unexpected XRANGE reply")
            return _entries([(sid, _pairs(fields)) for sid, fields in reply])
        raw = await self._run(
            lambda: self._client.xrange(log, min=start, max="+", count=limit), idempotent=True
        )
        return _entries(raw or [])

    async def wait_log(
        self, game_id: str, after_version: int, timeout_ms: int, limit: int = 1000
    ) -> list[LogEntry]:
        check_game_id(game_id)
        if limit <= 0:
            return []
        if timeout_ms <= 0:
            return await self.read_log(game_id, after_version, limit)
        feed = self._feed
        if feed is None or feed.unsupported:
            return await self._wait_blocking(game_id, after_version, timeout_ms, limit)
        game = feed.follow(game_id)
        try:
            return await self._wait_announced(feed, game, game_id, after_version, timeout_ms, limit)
        finally:
            feed.unfollow(game)

    async def _wait_announced(self, feed: LogFeed, game: FollowedGame, game_id: str, after_version: int,
                              timeout_ms: int, limit: int) -> list[LogEntry]:
        """Entries announced after ``after_version``, from memory when the notices carried them;
        the log is read whenever the notices cannot tell (a new or remade subscription), and
        every ``poll_ms`` while the feed is down."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            entries = game.entries_after(after_version, limit)
            if entries:
                return entries
            waiter = game.waiter()  # before any await: a notice during the read still wakes it
            try:
                if entries is None:
                    confirmed, epoch = game.subscribed, game.epoch  # before the read
                    entries = await self.read_log(game_id, after_version, limit)
                    if confirmed and len(entries) < limit:
                        game.read_up_to(entries[-1].version if entries else after_version, epoch)
                    if entries:
                        return entries
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return await self.read_log(game_id, after_version, limit)  # one last look
                pause = remaining if feed.live else min(remaining, self._poll_ms / 1000)
                timer = loop.call_later(pause, _end_wait, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
            finally:
                game.drop(waiter)
            if feed.unsupported:  # the subscription was refused: block on the log instead
                left_ms = int((deadline - loop.time()) * 1000)
                return await self._wait_blocking(game_id, after_version, max(left_ms, 1), limit)

    @property
    def followed_games(self) -> int:
        """How many games this process follows commit notices of (0 without notices)."""
        return 0 if self._feed is None else self._feed.followed

    async def _wait_blocking(
        self, game_id: str, after_version: int, timeout_ms: int, limit: int
    ) -> list[LogEntry]:
        """Entries after ``after_version`` by ``XREAD BLOCK`` (a connection for each waiter), or
        by polling when every blocking slot is taken."""
        log = self._keys(game_id)[1]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        streams: dict[Any, Any] = {log: f"{max(after_version, 0)}-0"}
        failures = 0
        while True:
            remaining_ms = int((deadline - loop.time()) * 1000)
            if remaining_ms <= 0:  # one last look, without blocking
                return await self.read_log(game_id, after_version, limit)
            if self._waiters.locked():
                # Every blocking slot is taken (by other watchers, honest or not): poll instead of
                # queueing behind them, so that no watcher waits for another's block to end.
                entries = await self.read_log(game_id, after_version, limit)
                if entries:
                    return entries
                await asyncio.sleep(min(remaining_ms, self._poll_ms) / 1000)
                continue
            block = min(remaining_ms, self._max_block_ms)
            try:
                async with self._slot(self._waiters, 0.05) as ok:  # held for one block, not the whole wait
                    if not ok:
                        continue
                    with _mapped_errors():
                        async with asyncio.timeout(block / 1000 + self._block_margin):
                            client = await self._initialized(self._blocking)
                            reply = await client.xread(streams, count=limit, block=block)
            except StoreUnavailable as error:  # a read: retried like the others
                failures += 1
                if failures > self._retries or not isinstance(error.__cause__, RedisConnectionError):
                    raise
                await asyncio.sleep(0.05)
                continue
            if isinstance(reply, list) and reply:  # RESP2: [[key, entries]]
                return _entries(reply[0][1])
            if isinstance(reply, dict) and reply:  # RESP3: {key: entries} or {key: [entries]}
                value: Any = next(iter(reply.values()))
                nested = value and isinstance(value[0], list) and isinstance(value[0][0], list | tuple)
                return _entries(value[0] if nested else value)

    async def execute(self, *command: str, idempotent: bool, blocking: bool = False) -> Any:
        """One raw command (the bot queue's stream commands), bounded and mapped like the store's
        own: ``StoreUnavailable`` with Redis's error text for an error reply. ``blocking`` runs it
        on the blocking client (a ``BLOCK`` of at most the store's ``max_block_ms``)."""
        if not blocking:
            if self._fast is not None and command[0].upper() in DIRECT_COMMANDS:
                return await self._direct(command, idempotent)
            return await self._run(lambda: self._client.execute_command(*command), idempotent=idempotent)
        async with self._slot(self._waiters, self._pool_timeout) as ok:
            if not ok:
                raise StoreUnavailable("redis: no free connection for a blocking read")
            with _mapped_errors():
                async with asyncio.timeout(self._max_block_ms / 1000 + self._block_margin):
                    client = await self._initialized(self._blocking)
                    return await client.execute_command(*command)

    def _presence_key(self, game_id: str) -> str:
        check_game_id(game_id)
        return f"{self._prefix}:{{{game_id}}}:presence"

    def _lapse_key(self, game_id: str) -> str:
        """The shard of the registrations' index that lists the game's (a game's shard, as the bot queue's)."""
        return self._lapse_keys[shard_of(game_id, PRESENCE_SHARDS)]

    async def hold_presence(self, game_id: str, holder: str, until_ms: int) -> None:
        key = self._presence_key(game_id)
        await self.execute("ZADD", key, str(until_ms), holder, idempotent=True)
        await self.execute("PEXPIREAT", key, str(until_ms), "GT", idempotent=True)
        await self.execute("PEXPIREAT", key, str(until_ms), "NX", idempotent=True)
        await self.execute("ZADD", self._lapse_key(game_id), str(until_ms), f"{game_id}\n{holder}", idempotent=True)

    async def drop_presence(self, game_id: str, holder: str) -> None:
        await self.execute("ZREM", self._presence_key(game_id), holder, idempotent=True)
        await self.execute("ZREM", self._lapse_key(game_id), f"{game_id}\n{holder}", idempotent=True)

    async def present(self, game_id: str, now_ms: int) -> list[str]:
        reply = await self.execute("ZRANGEBYSCORE", self._presence_key(game_id), f"({now_ms}", "+inf",
                                   idempotent=True)
        return sorted(m.decode() if isinstance(m, bytes) else str(m) for m in reply or [])

    async def lapsed_presence(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for key in self._lapse_keys:
            if len(out) >= limit:
                break
            reply = await self.execute("ZRANGEBYSCORE", key, "-inf", str(now_ms), "LIMIT", "0",
                                       str(limit - len(out)), idempotent=True)
            for member in reply or []:
                # ZREM answers 1 to one caller only: the registration is handed out once.
                if int(await self.execute("ZREM", key, member, idempotent=False) or 0) != 1:
                    continue
                game_id, _, holder = (member.decode() if isinstance(member, bytes) else str(member)).partition("\n")
                out.append((game_id, holder))
        return out

    @property
    def max_block_ms(self) -> int:
        return self._max_block_ms

    @property
    def cluster(self) -> bool:
        """Whether the store is a Redis Cluster (a command's keys must then share one slot)."""
        return isinstance(self._client, RedisCluster)

    async def ping(self) -> None:
        await self._run(lambda: self._client.ping(), idempotent=True)

    async def close(self) -> None:
        clients = [self._client] if self._blocking is self._client else [self._client, self._blocking]
        for client in clients:
            with contextlib.suppress(Exception):
                await client.aclose()
        for closer in self._closers:
            with contextlib.suppress(Exception):
                await closer()


# -- construction: a URL's clients --

C = TypeVar("C")


@dataclass(frozen=True)
class _Pools:
    """The socket settings and pool sizes of a store's two clients: one for commands, one for
    blocking reads. The clients get no socket read timeout: every call is bounded by the store's
    own deadline (``asyncio.timeout``). redis-py applies a socket timeout to each send with
    ``asyncio.wait_for``, which on Python 3.11 loses a cancellation that arrives as the send
    completes: the cancelled caller (a stream whose client went) would run on as if never
    cancelled."""

    connect_timeout: float
    read_timeout: float
    command_pool: int
    waiter_pool: int
    socket_options: dict[str, Any]

    @classmethod
    def of(cls, connect_timeout: float, read_timeout: float, max_connections: int, max_waiters: int) -> _Pools:
        return cls(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            # Slightly larger pools than the semaphores: redis-py may briefly hold an extra connection.
            command_pool=max_connections + 4,
            waiter_pool=max_waiters + 4,
            socket_options={
                "socket_connect_timeout": connect_timeout,
                "socket_timeout": None,  # redis-py's default is a few seconds: see above
                # redis-py retries are off: reads are retried by the store, writes never.
                "retry": Retry(NoBackoff(), 0),
            },
        )

    def pair(self, make: Callable[[int], C]) -> tuple[C, C]:
        """``make(pool_size)``'s client for commands and its client for blocking reads."""
        return make(self.command_pool), make(self.waiter_pool)


def _standalone_clients(url: str, pools: _Pools) -> tuple[Redis, Redis]:
    """``redis://``, ``rediss://`` or ``unix://``: redis-py reads the URL and its query-string options."""

    def standalone(size: int) -> Redis:
        pool = ConnectionPool.from_url(url, max_connections=size, **pools.socket_options)
        return Redis.from_pool(pool)

    return pools.pair(standalone)


def _sentinel_url(url: str) -> tuple[list[tuple[str, int]], str, int, str | None, str | None]:
    """``redis+sentinel://[[user]:password@]host:port[,host:port...]/<master_name>[/db]`` -> the
    sentinels, the master's name, the db, the master's user and password."""
    hosts, path, username, password = _split_multi_host_url(url, default_port=26379)
    parts = [unquote(p) for p in path.split("/") if p]
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"redis+sentinel URL needs /<master_name>[/db]: {_redacted(url)!r}")
    db = _int_part(parts[1], "db", url) if len(parts) == 2 else 0
    return hosts, parts[0], db, username, password


class _AnsweringSentinel(Redis):
    """A sentinel whose every answer is awaited at most ``answer_timeout`` seconds, under our own
    deadline rather than a socket timeout (see ``_Pools``): master discovery moves on from a
    sentinel that accepts connections but does not answer."""

    def __init__(self, answer_timeout: float, **options: Any) -> None:
        super().__init__(**options)
        self._answer_timeout = answer_timeout

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            async with asyncio.timeout(self._answer_timeout):
                return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except TimeoutError as error:  # redis-py's own kind, which discovery passes over
            raise RedisTimeoutError(f"sentinel did not answer within {self._answer_timeout} s") from error


class _Sentinels(Sentinel):
    """redis-py's Sentinel manager over ``_AnsweringSentinel`` clients."""

    def __init__(self, hosts: list[tuple[str, int]], answer_timeout: float, options: dict[str, Any]) -> None:
        super().__init__(hosts, sentinel_kwargs=options)
        self.sentinels = [_AnsweringSentinel(answer_timeout, host=host, port=port, **self.sentinel_kwargs)
                          for host, port in hosts]


def _sentinel_clients(url: str, pools: _Pools, sentinel_password: str | None) -> tuple[Redis, Redis, Sentinel]:
    """The clients of a Sentinel-monitored group's master, and the Sentinel manager (to close after them)."""
    hosts, master, db, username, password = _sentinel_url(url)
    sentinel_options: dict[str, Any] = dict(pools.socket_options)
    if sentinel_password is not None:
        sentinel_options["password"] = sentinel_password
    sentinel = _Sentinels(hosts, pools.read_timeout, sentinel_options)
    auth: dict[str, Any] = {"username": username, "password": password, "db": db}

    def sentinel_master(size: int) -> Redis:
        client: Redis = sentinel.master_for(
            master,
            max_connections=size,
            **auth,
            **pools.socket_options,
        )
        return client

    return (*pools.pair(sentinel_master), sentinel)


def _sentinel_subscriber(url: str, sentinel: Sentinel, connect_timeout: float
                         ) -> tuple[Opener, list[tuple[Any, ...]]]:
    """How to open the commit notices' connection to a Sentinel group's master (the one the
    sentinels name at each connect, so that a failover moves it), and its setup commands."""
    _, master, db, username, password = _sentinel_url(url)

    async def open_master(protocol: Callable[[], asyncio.Protocol]) -> asyncio.BaseTransport:
        async with asyncio.timeout(connect_timeout * 2):
            host, port = await sentinel.discover_master(master)
            transport, _ = await asyncio.get_running_loop().create_connection(protocol, host, port)
        return transport

    return open_master, list(setup_commands(username, password, db))


def _cluster_url(url: str) -> tuple[list[tuple[str, int]], str | None, str | None]:
    """``redis+cluster://[[user]:password@]host:port[,host:port...]`` -> the startup nodes, user, password."""
    hosts, path, username, password = _split_multi_host_url(url, default_port=6379)
    if path.strip("/"):
        raise ValueError(
            f"redis+cluster URL takes no path (Cluster has only db 0): {_redacted(url)!r}"
        )
    return hosts, username, password


def _cluster_clients(url: str, pools: _Pools) -> tuple[RedisCluster, RedisCluster]:
    """The clients of a Cluster, from its startup nodes."""
    hosts, username, password = _cluster_url(url)

    def cluster(size: int) -> RedisCluster:
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in hosts],
            username=username,
            password=password,
            max_connections=size,
            **pools.socket_options,
        )

    return pools.pair(cluster)


def _fast_client(url: str, connect_timeout: float, read_timeout: float, max_pending: int) -> RespClient | None:
    """The pipelined connection for a plain ``redis://`` or ``unix://`` URL; ``None`` (redis-py
    only) for TLS or a URL with query-string options, which only redis-py understands."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "unix") or parts.query:
        return None
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    common: dict[str, Any] = {
        "username": username, "password": password, "connect_timeout": connect_timeout,
        "op_timeout": read_timeout, "max_pending": max_pending * 100,
    }
    if scheme == "unix":
        return RespClient(path=parts.path, **common)
    db_text = parts.path.strip("/")
    db = _int_part(db_text, "db", url) if db_text else 0
    return RespClient(parts.hostname or "localhost", parts.port or 6379, db=db, **common)


def _split_multi_host_url(
    url: str, default_port: int
) -> tuple[list[tuple[str, int]], str, str | None, str | None]:
    """``scheme://[[user]:password@]host[:port][,host[:port]...][/path]`` -> hosts, path, user,
    password (urllib cannot parse several hosts)."""
    rest = url.split("://", 1)[1].split("#", 1)[0]
    if "?" in rest:
        raise ValueError(f"query options are not supported in {_redacted(url)!r}: pass them as store options")
    netloc, slash, path = rest.partition("/")
    username = password = None
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    hosts: list[tuple[str, int]] = []
    for item in netloc.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("["):  # [ipv6]:port
            host, _, port_text = item[1:].partition("]")
            port_text = port_text.removeprefix(":")
        else:
            host, _, port_text = item.rpartition(":") if ":" in item else (item, "", "")
        hosts.append((host, _int_part(port_text, "port", url) if port_text else default_port))
    if not hosts:
        raise ValueError(f"no host in Redis URL {_redacted(url)!r}")
    return hosts, slash + path, username, password


def _redacted(url: str) -> str:
    """``url`` without its password, for error messages."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        netloc = userinfo.partition(":")[0] + ":***@" + hosts
    return scheme + sep + netloc + slash + tail


def _int_part(text: str, what: str, url: str) -> int:
    if not text.isdigit():
        raise ValueError(f"invalid {what} {text!r} in Redis URL {_redacted(url)!r}")
    return int(text)
