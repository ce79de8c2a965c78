"""Wire messages of ``gostop.v1`` to engine values, on the client side.

The inverse of the server's conversion (``service/convert.py``): a ``GameView`` becomes
the ``engine.View`` its seat would get from ``engine.view(state, seat)``, so that bots
written against the engine play through the service unchanged.

>>> from engine import PlayCard, Stop
>>> action_from_pb(action_to_pb(PlayCard(5, shake=True)))
PlayCard(card=5, shake=True)
>>> action_from_pb(action_to_pb(Stop()))
Stop()
>>> event_from_pb(pb.Event(card_played=pb.CardPlayed(seat=1, card=7)))
CardPlayed(seat=1, card=7, shake=False)
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from google.protobuf.message import Message

from engine import (
    EVENT_TYPES,
    FIELDS,
    Action,
    Bill,
    Factor,
    Payment,
    Phase,
    Rules,
    Score,
    Settlement,
    View,
    action_from_id,
)
from engine.events import Event
from engine.state import PlayRecord, TurnContext
from engine.views import Pending, SeatView, Stack
from service.convert import action_from_pb, action_to_pb
from service.pb.gostop.v1 import game_pb2 as pb

__all__ = [
    "MatchSummary",
    "action_from_pb",
    "action_to_pb",
    "event_from_pb",
    "legal_actions_from_pb",
    "match_from_pb",
    "overrides_to_pb",
    "rules_from_pb",
    "settlement_from_pb",
    "view_from_pb",
]

T = TypeVar("T")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


# ---------------------------------------------------------------------------- actions

def legal_actions_from_pb(view: pb.GameView) -> tuple[Action, ...]:
    """The viewer's legal actions as engine actions, in the view's (ascending id) order."""
    out = []
    for legal in view.legal_actions:
        out.append(action_from_pb(legal.action) if legal.HasField("action") else action_from_id(legal.id))
    return tuple(out)


# ------------------------------------------------------------------------------ rules

_RULE_ENUMS: Final[dict[str, str]] = {
    fd.name: fd.enum_type.name for fd in pb.Rules.DESCRIPTOR.fields if fd.enum_type is not None
}


def _enum_prefix(enum_name: str) -> str:
    return _snake(enum_name).upper() + "_"


def _enum_name(enum_type: Any, number: int) -> str:
    value = enum_type.values_by_number.get(number)
    if value is None or value.name.endswith("_UNSPECIFIED"):
        raise ValueError(f"unknown or unspecified {enum_type.name} value {number}")
    name: str = value.name.removeprefix(_enum_prefix(enum_type.name)).lower()
    return name


def _rule_values(msg: pb.Rules) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        if fd.name == "last_turn_no_steal":
            out[fd.name] = frozenset(_enum_name(pb.LastTurnEvent.DESCRIPTOR, v) for v in value.events)
        elif fd.name == "ppeok_payments":
            out[fd.name] = tuple(value.points)
        elif fd.enum_type is not None:
            out[fd.name] = _enum_name(fd.enum_type, value)
        else:
            out[fd.name] = value
    return out


@functools.lru_cache(maxsize=64)
def _rules_from_bytes(blob: bytes) -> Rules:
    return Rules.from_dict(_rule_values(pb.Rules.FromString(blob)))


def rules_from_pb(msg: pb.Rules) -> Rules:
    """Engine rules from a fully set ``Rules`` message (views, ListRuleSets, CreateGame, GetGameLog)."""
    return _rules_from_bytes(msg.SerializeToString(deterministic=True))


def overrides_to_pb(overrides: Mapping[str, Any]) -> pb.Rules:
    """A ``Rules`` override message from engine-style values: ``{"gwangbak": False, "go_scoring":
    "additive", "ppeok_payments": (1, 2, 3), "last_turn_no_steal": {"sseul"}}``.

    >>> overrides_to_pb({"go_threshold": 5, "go_scoring": "additive"})
    go_threshold: 5
    go_scoring: GO_SCORING_ADDITIVE
    <BLANKLINE>
    """
    out = pb.Rules()
    for name, value in overrides.items():
        if name not in FIELDS:
            raise ValueError(f"no such rule {name!r}")
        if name == "last_turn_no_steal":
            out.last_turn_no_steal.SetInParent()
            events: list[Any] = [pb.LastTurnEvent.Value("LAST_TURN_EVENT_" + str(v).upper()) for v in sorted(value)]
            out.last_turn_no_steal.events.extend(events)
        elif name == "ppeok_payments":
            out.ppeok_payments.SetInParent()
            out.ppeok_payments.points.extend(value)
        elif name in _RULE_ENUMS:
            enum = pb.Rules.DESCRIPTOR.fields_by_name[name].enum_type
            assert enum is not None
            setattr(out, name, enum.values_by_name[_enum_prefix(enum.name) + str(value).upper()].number)
        else:
            setattr(out, name, value)
    return out


# ----------------------------------------------------------------- dataclasses, events

_NESTED: Final[dict[str, type]] = {
    "Score": Score, "Payment": Payment, "Settlement": Settlement, "Bill": Bill, "Factor": Factor,
}
_OPTIONAL: Final[frozenset[tuple[type, str]]] = frozenset({(Settlement, "score")})
"""Message fields that stand for an engine value that may be ``None`` (absent on the wire)."""

_Plan = tuple[tuple[str, str, Any], ...]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type, descriptor: Any) -> _Plan:
    """How to read each dataclass field of ``cls`` from a message: worked out once per type."""
    steps: list[tuple[str, str, Any]] = []
    for f in dataclasses.fields(cls):
        fd = descriptor.fields_by_name[f.name]
        if fd.message_type is not None:
            if fd.message_type.name == "Hand":
                steps.append((f.name, "hands", None))
            elif fd.is_repeated:
                steps.append((f.name, "messages", _NESTED[fd.message_type.name]))
            elif (cls, f.name) in _OPTIONAL:
                steps.append((f.name, "optional", _NESTED[fd.message_type.name]))
            else:
                steps.append((f.name, "message", _NESTED[fd.message_type.name]))
        elif fd.is_repeated:
            steps.append((f.name, "repeated", None))
        else:
            steps.append((f.name, "scalar", None))
    return tuple(steps)


def _build(cls: type[T], msg: Message) -> T:
    """An engine dataclass from the message whose fields share its field names."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls, msg.DESCRIPTOR)
    kwargs: dict[str, Any] = {}
    for name, how, nested in plan:
        value = getattr(msg, name)
        if how == "scalar":
            kwargs[name] = value
        elif how == "repeated":
            kwargs[name] = tuple(value)
        elif how == "message":
            kwargs[name] = _build(nested, value)
        elif how == "optional":
            kwargs[name] = _build(nested, value) if msg.HasField(name) else None
        elif how == "messages":
            kwargs[name] = tuple(_build(nested, item) for item in value)
        else:
            kwargs[name] = tuple(tuple(hand.cards) for hand in value)
    return cls(**kwargs)


_EVENTS: Final[dict[str, type]] = {_snake(t.__name__): t for t in EVENT_TYPES}


def event_from_pb(msg: pb.Event) -> Event:
    """The engine event of a wire event (hidden cards stay ``-1``)."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        raise ValueError("the event has no kind set")
    event: Event = _build(_EVENTS[kind], getattr(msg, kind))
    return event


def settlement_from_pb(msg: pb.Settlement) -> Settlement:
    """The engine settlement of a wire settlement."""
    return _build(Settlement, msg)


# ------------------------------------------------------------------------------ views


def _phase(number: int) -> Phase:
    return Phase(_enum_name(pb.Phase.DESCRIPTOR, number))


def _score(msg: pb.Score) -> Score:
    return _build(Score, msg)


def _seat(msg: pb.SeatView) -> SeatView:
    return SeatView(
        seat=msg.seat, active=msg.active, hand_size=msg.hand_size, hand=tuple(msg.hand),
        revealed=tuple(msg.revealed), captured=tuple(msg.captured), score=_score(msg.score), gos=msg.gos,
        last_go_base=msg.last_go_base, shakes=tuple(msg.shakes), bombs=tuple(msg.bombs),
        multiplier=msg.multiplier, spare_flips=msg.spare_flips, ppeok=msg.ppeok, turns=msg.turns,
        ppeok_turns=tuple(msg.ppeok_turns), dry_turns=msg.dry_turns, last_go_order=msg.last_go_order,
        sseul=msg.sseul,
    )


def _turn(msg: pb.TurnContext) -> TurnContext:
    return TurnContext(
        seat=msg.seat, kind=msg.kind, card=msg.card, month=msg.month, last=msg.last, before=_score(msg.before),
        matched=msg.matched, held=tuple(msg.held), flipped=msg.flipped, taken=tuple(msg.taken),
        steals=tuple(msg.steals), ppeok=msg.ppeok, ttadak=msg.ttadak,
    )


def view_from_pb(msg: pb.GameView) -> View:
    """The engine ``View`` of a wire view: equal to ``engine.view(state, msg.viewer)`` of the
    server's state, with the viewer's legal actions as engine actions."""
    pending = None
    if msg.HasField("pending"):
        p = msg.pending
        pending = Pending(_phase(p.phase), p.seat, p.played, p.flipped, tuple(p.options))
    return View(
        viewer=msg.viewer,
        rules_name=msg.preset,
        dealer=msg.dealer,
        phase=_phase(msg.phase),
        to_move=msg.to_move,
        floor=tuple(msg.floor),
        stacks=tuple(Stack(s.month, s.maker) for s in msg.stacks),
        stock_count=msg.stock_count,
        seats=tuple(_seat(s) for s in msg.seats),
        gukjin=msg.gukjin,
        carry=msg.carry,
        pending=pending,
        legal_actions=legal_actions_from_pb(msg),
        payments=tuple(Payment(p.payer, p.payee, p.points, p.reason) for p in msg.payments),
        settlement=settlement_from_pb(msg.settlement) if msg.HasField("settlement") else None,
        rules=rules_from_pb(msg.rules) if msg.HasField("rules") else None,
        go_seq=msg.go_seq,
        turn=_turn(msg.turn) if msg.HasField("turn") else None,
        steps=msg.steps,
        plays=tuple(PlayRecord(r.seat, r.action, tuple(r.floor), tuple(r.piles)) for r in msg.plays),
    )


@dataclass(frozen=True, slots=True)
class MatchSummary:
    """The running totals of a match (``GameView.match``)."""

    round_no: int
    rounds: int
    """Rounds in the match; 0 for an open-ended match."""
    points: tuple[int, ...]
    money: tuple[int, ...]
    wins: tuple[int, ...]
    losses: tuple[int, ...]
    draws: tuple[int, ...]
    finished: bool


def match_from_pb(msg: pb.MatchSummary) -> MatchSummary:
    return MatchSummary(
        msg.round_no, msg.rounds, tuple(msg.points), tuple(msg.money), tuple(msg.wins), tuple(msg.losses),
        tuple(msg.draws), msg.finished,
    )
