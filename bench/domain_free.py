"""A bound for SubmitAction: the real server with a turn's domain work taken out.

``python -m bench.domain_free serve ...`` takes the arguments of ``python -m gostop
serve``. It is the service in every respect but one: after a game's first SubmitAction, which runs
as usual, every later SubmitAction of that game skips the engine step, the view, the events'
messages, the log entry and the snapshot, and instead commits the bytes of that first turn again
(its log entry and stored response, and its snapshot at the versions where the service writes one:
``Repository.snapshot_due``), at the new version. What is left is everything else
a SubmitAction costs: the RPC, the interceptor's metrics and log line, the caller's token, the
idempotency digest, the cached game, one compare-and-set round trip to the store with a turn's
real-sized payload, and the response message. A SubmitAction cannot cost less than this, however
fast its domain work were done (for instance by compiled code).

The games it serves do not move (each turn repeats the first one): ``bench_service.py
--domain-free`` starts it and plays from its own mirror of each game without checking the
server's answers against it. A measuring instrument, never a way to run the service.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from gostop.engine import Action, Match, match_to_bytes
from gostop.engine.events import Event
from gostop.service import compact
from gostop.service import server as server_module
from gostop.service.auth import Authenticator
from gostop.service.config import Config
from gostop.service.errors import stale
from gostop.service.games import Games, action_kind
from gostop.service.metrics import Metrics
from gostop.service.store_api import Committed, Store
from gostop.tools import cli
from gostop.v1 import game_pb2 as pb


class _Recording:
    """A store that remembers the log entry of each game's last commit."""

    def __init__(self, store: Store) -> None:
        self.inner = store
        self.last: dict[str, bytes] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def commit(self, game_id: str, expected_version: int, blob: bytes | None, entry: bytes,
                     *args: Any) -> Any:
        self.last[game_id] = entry
        return await self.inner.commit(game_id, expected_version, blob, entry, *args)


class DomainFreeGames(Games):
    """``Games`` whose SubmitActions after a game's first commit that first turn's bytes again."""

    def __init__(self, store: Store, auth: Authenticator, config: Config, metrics: Metrics) -> None:
        self._recording = _Recording(store)
        super().__init__(self._recording, auth, config, metrics)
        self._first: dict[str, tuple[bytes, bytes, bytes]] = {}

    async def _commit(
        self, game_id: str, seat: int, expected: int, request_id: str, fingerprint: str, kind: str,
        action: Action | None, step: Callable[[Match], tuple[Match, list[Event]]],
        response: pb.SubmitActionResponse | pb.StartNextRoundResponse, bots: Any = None,
        worker: bool = False, attempts: int = 3,
    ) -> None:
        first = self._first.get(game_id)
        if first is None or kind != "action":
            await super()._commit(game_id, seat, expected, request_id, fingerprint, kind, action, step, response, bots,
                                  worker, attempts)
            entry = self._recording.last.pop(game_id, None)
            reached = self.repository.cache.get(game_id)  # the state that commit reached, with its plays
            if kind == "action" and entry is not None and reached is not None and reached[2] is not None:
                # Its snapshot, as the service would write it (whether or not that commit did).
                blob = compact.pack("snap", match_to_bytes(reached[1], reached[2].json))
                self._first[game_id] = (blob, entry, response.SerializeToString())
            return
        blob, entry, answer = first
        digest = compact.digest(fingerprint)
        repo = self.repository
        version, match, plays, *_ = await repo.load(game_id, expected)
        if version != expected:
            if await self._replay(game_id, request_id, digest, response.result):
                return
            raise stale(version, expected)
        response.MergeFromString(answer)
        response.result.version = version + 1
        snapshot = blob if repo.snapshot_due(version + 1, match) else None
        outcome = await repo.timed("commit", self._recording.inner.commit(
            game_id, expected, snapshot, entry, repo.ttl_ms(match), request_id, digest,
            compact.pack("resp", response.SerializeToString()) if request_id else b"",
        ))
        if not isinstance(outcome, Committed):
            raise stale(version + 1, expected)
        repo.remember(game_id, version + 1, match, plays)
        self.metrics.actions.labels(action_kind(action)).inc()


if __name__ == "__main__":
    server_module.Games = DomainFreeGames  # type: ignore[attr-defined]  # the class server.Server builds
    sys.exit(cli.main())
