"""The encodings of a round's plays, kept with each cached game and extended version by version.

Every view carries every play of the round so far (``GameView.plays``, public), and so does every
snapshot: late in a round they are half of what a turn encodes. A round's plays only grow, so
the encodings of one version are those of the version before plus the plays just made.
"""

from __future__ import annotations

from dataclasses import dataclass

from gostop.engine import Match
from gostop.engine.serialize import plays_json
from gostop.v1 import game_pb2 as pb
from gostop.wire.convert import fill


@dataclass(frozen=True, slots=True)
class RoundPlays:
    """The first ``count`` plays of round ``round_no``: as ``GameView`` wire bytes (field
    ``plays``, to merge into a view) and as the items of the snapshot's JSON array."""

    round_no: int
    count: int
    view: bytes
    json: bytes


def round_plays(match: Match, before: RoundPlays | None = None) -> RoundPlays:
    """The encodings of ``match``'s current round's plays.

    ``before``: those of an earlier version of the same game (a state ``match`` was reached
    from), reused when it is of the same round; plays made since are encoded and appended.
    """
    plays = match.round.plays
    if before is not None and before.round_no == match.round_no and before.count <= len(plays):
        if before.count == len(plays):
            return before
        new = plays[before.count:]
        view, json = before.view, before.json
    else:
        new = plays
        view = json = b""
    message = pb.GameView()
    add = message.plays.add
    for record in new:
        fill(add(), record)
    return RoundPlays(match.round_no, len(plays), view + message.SerializeToString(), plays_json(new, json))
