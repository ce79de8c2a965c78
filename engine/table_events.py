"""Typed events of the table around a round: what a turn clock, auto-play and away seats did.

The engine never makes these: the service logs them beside the engine's events of the same step
(a decision the table's bot made for a seat, a seat going away or coming back, auto-play turned
on or off). They are data like every event, in the log, the streams and the replays; none holds
a hidden card.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PlayCause = Literal["timeout", "away", "auto_play"]
"""Why the table's bot made a seat's decision: its time (and bank) ran out, it is away, or its
person turned auto-play on."""


@dataclass(frozen=True, slots=True)
class PlayedForSeat:
    """The table's bot (``policy``) made ``seat``'s decision: the action with id ``action`` (-1: it
    dealt the next round, a decision of the first person's seat at a round's end)."""

    seat: int
    policy: str
    action: int
    cause: PlayCause


@dataclass(frozen=True, slots=True)
class SeatAway:
    """``seat`` went away (``away``: its timeouts in a row reached the table's limit) or came back
    (its person acted)."""

    seat: int
    away: bool


@dataclass(frozen=True, slots=True)
class AutoPlaySet:
    """``seat``'s person turned auto-play on or off."""

    seat: int
    on: bool


@dataclass(frozen=True, slots=True)
class SeatPresence:
    """``seat`` connected (someone opened a stream of it) or disconnected (its last stream ended
    and none came back within the grace period)."""

    seat: int
    connected: bool


TableEvent = PlayedForSeat | SeatAway | AutoPlaySet | SeatPresence

TABLE_EVENT_TYPES: tuple[type, ...] = (PlayedForSeat, SeatAway, AutoPlaySet, SeatPresence)
