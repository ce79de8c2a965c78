"""The fixtures every test suite may ask for by name: one real redis-server for the session, and
``api``, a client of an in-process server over each store backend. Helpers are in ``testkit``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from testkit.redis_server import RedisServer
from testkit.servers import BACKENDS, Api, config, running_server

# Servers the tests start (in process or as `gostop serve` processes) serve no HTTP port unless a
# test asks for one: the default port (8080) would be shared by every server of the run.
os.environ.setdefault("GOSTOP_HTTP_LISTEN", "off")
# Tournaments the tests run record their games in no ladder unless a test names one: the default,
# a file in the user's data folder, would collect every test run's games.
os.environ.setdefault("GOSTOP_LADDER", "off")


@pytest.fixture(scope="session", name="service_redis")
def service_redis_fixture() -> Iterator[RedisServer]:
    """``service_redis``: one real redis-server for the session (games have random ids, so tests never collide)."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session", params=BACKENDS, name="store_url")
def store_url_fixture(request: pytest.FixtureRequest) -> str:
    """``store_url``: the one store-backend parameter: "" (the embedded memory store) or the URL of
    the session's redis-server. Every fixture that builds a server over "each backend" takes it."""
    if request.param == "redis":
        redis: RedisServer = request.getfixturevalue("service_redis")
        return redis.url
    return ""


@pytest.fixture(name="api")
async def api_fixture(store_url: str) -> AsyncIterator[Api]:
    """``api``: a client of an in-process server with operator keys (and no API keys), over each
    store backend (``store_url``)."""
    async with running_server(config(store_url)) as client:
        yield client
