"""Exact, versioned serialization of states and events (the store's snapshot format).

The format is compact JSON: every engine dataclass becomes an object tagged with its
type name, tuples become arrays. ``state_from_bytes(state_to_bytes(s)) == s`` holds
for every reachable state, and encoding is deterministic (same state, same bytes).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from enum import Enum
from operator import attrgetter
from typing import Any, Final, cast

import orjson

from . import events as ev
from .errors import CorruptSnapshot
from .match import Match, RoundResult
from .rules import Rules
from .scoring import Score
from .settlement import Bill, Factor, Payment, Settlement
from .state import Phase, PlayRecord, SeatState, State, TurnContext
from .table_events import TABLE_EVENT_TYPES

FORMAT_VERSION: Final = 1
"""Bumped whenever the encoding of a state changes incompatibly."""

_TYPES: Final[dict[str, type]] = {
    t.__name__: t
    for t in (
        Match, RoundResult, State, SeatState, TurnContext, PlayRecord, Score, Settlement, Bill, Factor, Payment,
        *ev.EVENT_TYPES, *TABLE_EVENT_TYPES,
    )
}


_FIELDS: dict[type, tuple[tuple[str, ...], Any]] = {}
"""Per dataclass: its field names and a getter returning all their values as one tuple."""


def _fields_of(kind: type) -> tuple[tuple[str, ...], Any]:
    names = tuple(f.name for f in dataclasses.fields(kind))
    if len(names) > 1:
        getter: Any = attrgetter(*names)
    elif names:
        getter = lambda obj: (getattr(obj, names[0]),)  # noqa: E731 - attrgetter of one name returns no tuple
    else:
        getter = lambda obj: ()  # noqa: E731 - a dataclass without fields (Go, Stop...)
    _FIELDS[kind] = (names, getter)
    return names, getter


@functools.lru_cache(maxsize=64)
def _rules_data(rules: Rules) -> dict[str, Any]:
    return {"@": "Rules", **rules.to_dict()}


def to_data(obj: Any) -> Any:
    """Plain JSON-ready data for an engine value (dataclasses tagged with ``"@"``).

    The result may share (read-only) dictionaries between calls: do not mutate it. (No memo of
    encoded values across calls: in a server, such a memo keeps thousands of young objects alive
    at a time, which made the cyclic collector's pauses the slowest 1% of calls.)
    """
    kind = type(obj)
    if kind is int or kind is str or kind is bool or obj is None:
        return obj
    if kind is tuple or kind is list:
        return [x if type(x) is int else to_data(x) for x in obj]
    if kind is Rules:
        return _rules_data(obj)
    known = _FIELDS.get(kind)
    if known is None:
        if isinstance(obj, Enum):
            return obj.value
        if isinstance(obj, (frozenset, set)):
            return sorted(obj)
        if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
            return obj
        known = _fields_of(kind)
    names, getter = known
    out: dict[str, Any] = {"@": kind.__name__}
    for name, value in zip(names, getter(obj), strict=True):
        out[name] = value if type(value) is int else to_data(value)
    return out


_ENCODERS: dict[type, tuple[tuple[str, ...], str, Any]] = {}
"""Per dataclass: its JSON keys (the tag first), its tag and its field getter."""


def _encode_default(obj: Any) -> Any:
    """orjson's hook for what it does not encode itself: the ``to_data`` form of one engine value.

    orjson calls it for each dataclass (``OPT_PASSTHROUGH_DATACLASS``) and encodes the dict it
    returns, calling back for nested dataclasses; tuples of ints, strings and enums it encodes
    natively. The bytes are those of ``orjson.dumps(to_data(obj))`` in about half the time, because
    no intermediate list is built for the tuples (``tests/engine/test_serialize_match.py`` pins the
    equality on every position of sampled rounds of every preset).
    """
    kind = type(obj)
    known = _ENCODERS.get(kind)
    if known is None:
        if kind is Rules or not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
            data = to_data(obj)  # the rules, sets: what the plain form says of them
            if data is obj:
                raise TypeError(f"cannot encode {kind.__name__}")
            return data
        names, getter = _FIELDS.get(kind) or _fields_of(kind)
        known = _ENCODERS[kind] = (("@", *names), kind.__name__, getter)
    keys, tag, getter = known
    return dict(zip(keys, (tag, *getter(obj)), strict=True))


_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS


def encode(value: Any) -> bytes:
    """Compact JSON of any value holding engine values: the bytes of ``orjson.dumps(to_data(value))``.

    (orjson writes keys in insertion order, with no spaces: the same bytes as the standard
    library's ``json.dumps(data, separators=(",", ":"), ensure_ascii=False)``.)
    """
    return orjson.dumps(value, default=_encode_default, option=_OPTIONS)


_RULES_CACHE: dict[tuple[Any, ...], Rules] = {}


def _rules_from(fields: dict[str, Any]) -> Rules:
    key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in fields.items())
    rules = _RULES_CACHE.get(key)
    if rules is None:
        if len(_RULES_CACHE) > 256:
            _RULES_CACHE.clear()
        rules = _RULES_CACHE[key] = Rules.from_dict(fields)
    return rules


def from_data(data: Any) -> Any:
    """Inverse of ``to_data``."""
    kind = type(data)
    if kind is list:
        return tuple([from_data(x) for x in data])
    if kind is not dict:
        return data
    fields = dict(data)
    tag = fields.pop("@", None)
    if tag == "Rules":
        return _rules_from(fields)
    cls = _TYPES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise CorruptSnapshot(f"unknown type tag {tag!r}")
    kwargs = {k: from_data(v) for k, v in fields.items()}
    if cls is State:
        kwargs["phase"] = Phase(kwargs["phase"])
    return cls(**kwargs)


def state_to_bytes(state: State) -> bytes:
    """Serialize a round state, with the format version."""
    return encode({"format": FORMAT_VERSION, "state": state})


def _load_snapshot(blob: bytes, key: str) -> Any:
    """The decoded value under ``key`` of a versioned snapshot; ``CorruptSnapshot`` on any problem."""
    try:
        doc = orjson.loads(blob)
        if doc.get("format") != FORMAT_VERSION:
            raise CorruptSnapshot(f"unsupported snapshot format {doc.get('format')!r}")
        return from_data(doc[key])
    except CorruptSnapshot:
        raise
    except Exception as exc:
        raise CorruptSnapshot(f"cannot decode snapshot: {exc}") from exc


def state_from_bytes(blob: bytes) -> State:
    """Decode ``state_to_bytes`` output; ``CorruptSnapshot`` on any problem."""
    state = _load_snapshot(blob, "state")
    if not isinstance(state, State):
        raise CorruptSnapshot("snapshot does not hold a round state")
    return state


def event_to_json(event: ev.Event) -> str:
    """One event as compact JSON (for logs and streams)."""
    return encode(event).decode()


def event_from_json(text: str | bytes) -> ev.Event:
    """Inverse of ``event_to_json``."""
    try:
        event = from_data(orjson.loads(text))
    except CorruptSnapshot:
        raise
    except Exception as exc:
        raise CorruptSnapshot(f"cannot decode event: {exc}") from exc
    if not isinstance(event, ev.EVENT_TYPES):
        raise CorruptSnapshot("not an event")
    return cast(ev.Event, event)


def match_to_bytes(match: Match, plays: bytes | None = None) -> bytes:
    """Serialize a match (its current round included), with the format version.

    ``plays``, when given, is ``plays_json(match.round.plays)`` computed before (a round's plays
    only grow, so a server extends the previous version's): the same bytes, without encoding
    every play again.
    """
    if plays is None:
        return encode({"format": FORMAT_VERSION, "match": match})
    state = _encode_default(match.round)
    state["plays"] = orjson.Fragment(b"[" + plays + b"]")
    doc = _encode_default(match)
    doc["round"] = state
    return orjson.dumps({"format": FORMAT_VERSION, "match": doc}, default=_encode_default, option=_OPTIONS)


def plays_json(plays: Sequence[PlayRecord], prefix: bytes = b"") -> bytes:
    """The JSON of ``plays`` as the items of an array (comma-separated, no brackets), appended
    to ``prefix`` (the same for the plays before them)."""
    items = [encode(record) for record in plays]
    if prefix:
        items.insert(0, prefix)
    return b",".join(items)


def match_from_bytes(blob: bytes) -> Match:
    """Decode ``match_to_bytes`` output; ``CorruptSnapshot`` on any problem."""
    match = _load_snapshot(blob, "match")
    if not isinstance(match, Match):
        raise CorruptSnapshot("snapshot does not hold a match")
    return match
