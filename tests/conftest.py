"""The fixtures every test suite may ask for by name: one real redis-server for the session, and
``api``, a client of an in-process server over each store backend. Helpers are in ``testkit``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from testkit.redis_server import RedisServer
from testkit.servers import BACKENDS, Api, config, running_server


@pytest.fixture(scope="session", name="service_redis")
def service_redis_fixture() -> Iterator[RedisServer]:
    """``service_redis``: one real redis-server for the session (games have random ids, so tests never collide)."""
    with RedisServer() as server:
        yield server


@pytest.fixture(params=BACKENDS, name="api")
async def api_fixture(request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    """``api``: a client of an in-process server with operator keys (and no API keys), over the memory
    store or the session's Redis."""
    url = request.getfixturevalue("service_redis").url if request.param == "redis" else ""
    async with running_server(config(url)) as client:
        yield client
