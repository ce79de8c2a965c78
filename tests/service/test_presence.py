"""Presence on its own: this process's count of a seat's streams, and what it logs."""

from __future__ import annotations

import asyncio

import pytest

from gostop.service.presence import Presence
from gostop.service.stores import open_store


async def test_a_stream_cancelled_while_its_seat_connects_leaves_the_seat() -> None:
    """Regression: a WatchGame cancelled while its seat's connection was being logged stayed
    counted as open, so the seat was never disconnected afterwards."""
    store = open_store(None)
    await store.create("g1", b"state", b"entry", 60_000)
    logged: list[bool] = []
    slow = asyncio.Event()

    async def commit(game_id: str, seat: int, connected: bool) -> None:
        logged.append(connected)
        if connected:
            await slow.wait()  # the commit is on its way when the caller goes

    presence = Presence(store, grace_ms=20, commit=commit)
    entering = asyncio.ensure_future(presence.enter("g1", 1))
    while not logged:
        await asyncio.sleep(0.001)
    entering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await entering
    for _ in range(500):
        if logged[-1] is False:
            break
        await asyncio.sleep(0.01)
    assert logged == [True, False]
    assert not await store.present("g1", 0)
    await presence.close()
