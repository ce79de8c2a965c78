"""Choosing the store from configuration: no URL means the embedded memory store."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .bot_queue import BotQueue, MemoryBotQueue, RedisBotQueue
from .memory_store import MemoryStore
from .redis_store import RedisStore
from .store_api import Store

REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster")


def open_store(url: str | None, **options: Any) -> Store:
    """``None`` or ``""``: a ``MemoryStore(**options)``; a Redis URL (``redis://``, ``rediss://``,
    ``unix://``, ``redis+sentinel://``, ``redis+cluster://``): ``RedisStore.from_url(url,
    **options)``. Connecting is lazy: the first call (e.g. ``ping``) reaches the server.

    >>> open_store(None).name
    'memory'
    >>> open_store("memcached://localhost")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unsupported store URL scheme 'memcached': use redis://, rediss://, unix://, ...
    """
    if not url:
        return MemoryStore(**options)
    scheme = urlsplit(url).scheme.lower()
    if scheme not in REDIS_SCHEMES:
        raise ValueError(
            f"unsupported store URL scheme {scheme!r}: use redis://, rediss://, unix://, "
            "redis+sentinel:// or redis+cluster:// (or no URL for the memory store)"
        )
    return RedisStore.from_url(url, **options)


def open_bot_queue(store: Store, config: Any) -> BotQueue | None:
    """The bot queue that goes with ``store``: Redis streams beside a Redis store; an in-process
    queue beside the memory store, unless ``bot_worker`` is off (nobody could take its turns)."""
    if isinstance(store, RedisStore):
        return RedisBotQueue(store, config.bot_shards, config.bot_claim_idle_ms)
    if config.bot_worker == "off":
        return None
    return MemoryBotQueue(config.bot_claim_idle_ms)
