"""Exact, versioned serialization of states and events (the store's snapshot format).

The format is compact JSON: every engine dataclass becomes an object tagged with its
type name, tuples become arrays. ``state_from_bytes(state_to_bytes(s)) == s`` holds
for every reachable state, and encoding is deterministic (same state, same bytes).
"""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from typing import Any, Final, cast

from . import events as ev
from .errors import CorruptSnapshot
from .match import Match, RoundResult
from .rules import Rules
from .scoring import Score
from .settlement import Bill, Factor, Payment, Settlement
from .state import Phase, SeatState, State, TurnContext

FORMAT_VERSION: Final = 1
"""Bumped whenever the encoding of a state changes incompatibly."""

_TYPES: Final[dict[str, type]] = {
    t.__name__: t
    for t in (
        Match, RoundResult, State, SeatState, TurnContext, Score, Settlement, Bill, Factor, Payment,
        *ev.EVENT_TYPES,
    )
}


def to_data(obj: Any) -> Any:
    """Plain JSON-ready data for an engine value (dataclasses tagged with ``"@"``)."""
    if isinstance(obj, Rules):
        return {"@": "Rules", **obj.to_dict()}
    if isinstance(obj, Enum):
        return obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {"@": type(obj).__name__}
        for f in dataclasses.fields(obj):
            out[f.name] = to_data(getattr(obj, f.name))
        return out
    if isinstance(obj, (tuple, list)):
        return [to_data(x) for x in obj]
    if isinstance(obj, (frozenset, set)):
        return sorted(obj)
    return obj


def from_data(data: Any) -> Any:
    """Inverse of ``to_data``."""
    if isinstance(data, list):
        return tuple(from_data(x) for x in data)
    if isinstance(data, dict):
        tag = data.get("@")
        fields = {k: v for k, v in data.items() if k != "@"}
        if tag == "Rules":
            return Rules.from_dict(fields)
        cls = _TYPES.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise CorruptSnapshot(f"unknown type tag {tag!r}")
        kwargs = {k: from_data(v) for k, v in fields.items()}
        if cls is State:
            kwargs["phase"] = Phase(kwargs["phase"])
        return cls(**kwargs)
    return data


def _dumps(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def state_to_bytes(state: State) -> bytes:
    """Serialize a round state, with the format version."""
    return _dumps({"format": FORMAT_VERSION, "state": to_data(state)})


def state_from_bytes(blob: bytes) -> State:
    """Decode ``state_to_bytes`` output; ``CorruptSnapshot`` on any problem."""
    try:
        doc = json.loads(blob)
        if doc.get("format") != FORMAT_VERSION:
            raise CorruptSnapshot(f"unsupported snapshot format {doc.get('format')!r}")
        state = from_data(doc["state"])
    except CorruptSnapshot:
        raise
    except Exception as exc:
        raise CorruptSnapshot(f"cannot decode snapshot: {exc}") from exc
    if not isinstance(state, State):
        raise CorruptSnapshot("snapshot does not hold a round state")
    return state


def event_to_json(event: ev.Event) -> str:
    """One event as compact JSON (for logs and streams)."""
    return json.dumps(to_data(event), separators=(",", ":"), ensure_ascii=False)


def event_from_json(text: str | bytes) -> ev.Event:
    """Inverse of ``event_to_json``."""
    try:
        event = from_data(json.loads(text))
    except CorruptSnapshot:
        raise
    except Exception as exc:
        raise CorruptSnapshot(f"cannot decode event: {exc}") from exc
    if not isinstance(event, ev.EVENT_TYPES):
        raise CorruptSnapshot("not an event")
    return cast(ev.Event, event)


def match_to_bytes(match: Match) -> bytes:
    """Serialize a match (its current round included), with the format version."""
    return _dumps({"format": FORMAT_VERSION, "match": to_data(match)})


def match_from_bytes(blob: bytes) -> Match:
    """Decode ``match_to_bytes`` output; ``CorruptSnapshot`` on any problem."""
    try:
        doc = json.loads(blob)
        if doc.get("format") != FORMAT_VERSION:
            raise CorruptSnapshot(f"unsupported snapshot format {doc.get('format')!r}")
        match = from_data(doc["match"])
    except CorruptSnapshot:
        raise
    except Exception as exc:
        raise CorruptSnapshot(f"cannot decode snapshot: {exc}") from exc
    if not isinstance(match, Match):
        raise CorruptSnapshot("snapshot does not hold a match")
    return match
