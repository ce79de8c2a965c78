"""Game handles: a game's id, the seat tokens its holder has, and the last version seen."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gostop.v1 import game_pb2 as pb

__all__ = ["Game", "GameRef", "seat_of_token"]


def seat_of_token(token: str) -> tuple[str, int]:
    """The game id and seat a seat token names (``gst1.<game_id>.<seat>.<mac>``); ``ValueError``
    for a string that is not shaped like a token. The server still checks its signature."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != "gst1" or not (parts[2].isascii() and parts[2].isdigit()):
        raise ValueError("not a gostop seat token")
    return parts[1], int(parts[2])


@dataclass
class Game:
    """A handle on one game: its ``game_id`` (as on the wire), the seat tokens the holder has, and
    the last version seen.

    ``create_game`` returns one with every seat's token; to join a game created elsewhere,
    build one from tokens: ``Game.from_tokens([token])``. Client methods keep ``version`` up to
    date (it is the default ``expected_version`` of ``submit_action``).
    """

    game_id: str
    tokens: dict[int, str] = field(default_factory=dict)
    version: int = 0
    rules: pb.Rules | None = None
    view: pb.GameView | None = None
    """The latest view a call returned (whoever's it was)."""

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], version: int = 0) -> Game:
        """A handle from seat tokens (all of one game)."""
        ids, seats = set(), {}
        for token in tokens:
            game_id, seat = seat_of_token(token)
            ids.add(game_id)
            seats[seat] = token
        if len(ids) != 1:
            raise ValueError("the tokens must name exactly one game")
        return cls(ids.pop(), seats, version)

    @property
    def id(self) -> str:
        """``game_id`` under its earlier name."""
        return self.game_id

    def token(self, seat: int) -> str:
        try:
            return self.tokens[seat]
        except KeyError:
            raise ValueError(f"no token for seat {seat} of game {self.game_id}") from None

    def _seen(self, version: int, view: pb.GameView | None = None) -> None:
        if version >= self.version:
            self.version = version
            if view is not None:
                self.view = view



GameRef = Game | str
"""A game handle, or a bare game id (its tokens then come from ``token=`` or the client's
games: those it created or was told about with ``join``)."""
