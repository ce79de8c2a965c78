"""Conversion between engine values and the wire messages of ``gostop.v1``.

Engine dataclasses and proto messages share field names, so most conversion is
generic: each dataclass field is copied to the message field of the same name.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from enum import Enum
from typing import Any, Final

from google.protobuf.message import Message

from engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    Deal,
    DeclineGwangSale,
    FlipOnly,
    Go,
    InvalidRules,
    JoinRound,
    KeepGukjin,
    MalformedAction,
    Match,
    PlayCard,
    Rules,
    SellGwang,
    SitOut,
    Stop,
    View,
    action_from_id,
    action_id,
)
from engine.events import Event
from engine.render import action_label
from engine.rules import FIELDS
from engine.scoring import Score
from engine.settlement import Settlement

from .pb.gostop.v1 import game_pb2 as pb

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


@functools.cache
def _snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


def _enum_prefix(enum_name: str) -> str:
    return _snake(enum_name).upper() + "_"


_SCALAR, _REPEATED, _MESSAGE, _MESSAGES, _HANDS, _ENUM = range(6)
_Plan = tuple[tuple[str, int, Any], ...]
"""Per field: its name, how it is copied and, for an enum, its numbers by value; for a scalar,
whether the field has presence (then a zero is written, not skipped)."""


def _plan(msg: Message, obj: Any) -> _Plan:
    """How to copy ``obj``'s dataclass fields into ``msg``: worked out once per pair of types."""
    fields = msg.DESCRIPTOR.fields_by_name
    steps: list[tuple[str, int, Any]] = []
    for f in dataclasses.fields(obj):
        fd = fields.get(f.name)
        if fd is None:
            continue
        if fd.message_type is not None:
            if fd.is_repeated:
                steps.append((f.name, _HANDS if fd.message_type.name == "Hand" else _MESSAGES, None))
            else:
                steps.append((f.name, _MESSAGE, None))
        elif fd.enum_type is not None:
            prefix = _enum_prefix(fd.enum_type.name)
            numbers = {v.name.removeprefix(prefix).lower(): v.number for v in fd.enum_type.values}
            steps.append((f.name, _ENUM, numbers))
        else:
            steps.append((f.name, _REPEATED if fd.is_repeated else _SCALAR, fd.has_presence))
    return tuple(steps)


_FILLERS: dict[tuple[type, type], Callable[[Any, Any], None]] = {}


def _compile(msg: Message, obj: Any) -> Callable[[Any, Any], None]:
    """``_plan`` as straight-line code, one statement per field (views and events are converted
    on every call of the API, and a loop that interprets the plan costs twice as much)."""
    env: dict[str, Any] = {"fill": fill, "Enum": Enum}
    lines = ["def filler(msg, obj):"]
    for index, (name, how, extra) in enumerate(_plan(msg, obj)):
        lines.append(f"    v = obj.{name}")
        # A zero, empty or false value without presence is the field's default: nothing to write.
        skip_default = how == _REPEATED or (how == _SCALAR and not extra)
        lines.append("    if v:" if skip_default else "    if v is not None:")
        if how == _SCALAR:
            lines.append(f"        msg.{name} = v")
        elif how == _REPEATED:
            lines.append(f"        msg.{name}.extend(v)")
        elif how == _MESSAGE:
            lines.append(f"        fill(msg.{name}, v)")
        elif how == _MESSAGES:
            lines.append(f"        add = msg.{name}.add")
            lines.append("        for item in v:")
            lines.append("            fill(add(), item)")
        elif how == _HANDS:
            lines.append(f"        add = msg.{name}.add")
            lines.append("        for item in v:")
            lines.append("            add().cards.extend(item)")
        else:
            env[f"numbers{index}"] = extra
            lines.append(f"        msg.{name} = numbers{index}[v.value if isinstance(v, Enum) else v]")
    if isinstance(obj, Score):
        lines.append("    msg.total = obj.total")
    lines.append("    return None")
    exec("\n".join(lines), env)  # generated from dataclass field names only
    filler: Callable[[Any, Any], None] = env["filler"]
    return filler


def fill(msg: Message, obj: Any) -> Message:
    """Copy the fields of an engine dataclass into a message with the same field names."""
    key = (type(msg), type(obj))
    filler = _FILLERS.get(key)
    if filler is None:
        filler = _FILLERS[key] = _compile(msg, obj)
    filler(msg, obj)
    return msg


# ----------------------------------------------------------------------------- rules

_ENUM_RULES: Final = {
    "go_scoring", "last_action_go", "exhausted", "shake_bomb_count", "sseul_mode", "gukjin",
    "three_ppeok", "first_leader",
}


def rules_to_pb(rules: Rules) -> pb.Rules:
    """Every rule field, set (a fresh message: callers may change it)."""
    out = pb.Rules()
    out.CopyFrom(_rules_pb(rules))
    return out


@functools.lru_cache(maxsize=256)
def _rules_pb(rules: Rules) -> pb.Rules:
    out = pb.Rules()
    for name in FIELDS:
        value = getattr(rules, name)
        if name == "last_turn_no_steal":
            out.last_turn_no_steal.SetInParent()
            out.last_turn_no_steal.events.extend(
                [pb.LastTurnEvent.Value("LAST_TURN_EVENT_" + v.upper()) for v in sorted(value)]  # type: ignore[misc]
            )
        elif name == "ppeok_payments":
            out.ppeok_payments.SetInParent()
            out.ppeok_payments.points.extend(value)
        elif name in _ENUM_RULES:
            enum = out.DESCRIPTOR.fields_by_name[name].enum_type
            assert enum is not None
            setattr(out, name, enum.values_by_name[_enum_prefix(enum.name) + value.upper()].number)
        else:
            setattr(out, name, value)
    return out


def overrides_from_pb(msg: pb.Rules) -> dict[str, Any]:
    """The fields set in an override message, as engine values (unknown enum values rejected
    with ``InvalidRules`` naming the field)."""
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        name = fd.name
        if name == "last_turn_no_steal":
            events = []
            for v in value.events:
                if v == pb.LAST_TURN_EVENT_UNSPECIFIED or v not in pb.LastTurnEvent.values():
                    raise InvalidRules(name, f"unknown event {v}")
                events.append(pb.LastTurnEvent.Name(v).removeprefix("LAST_TURN_EVENT_").lower())
            out[name] = frozenset(events)
        elif name == "ppeok_payments":
            out[name] = tuple(value.points)
        elif fd.enum_type is not None:
            prefix = _enum_prefix(fd.enum_type.name)
            enum_value = fd.enum_type.values_by_number.get(value)
            if enum_value is None or enum_value.name.endswith("_UNSPECIFIED"):
                raise InvalidRules(name, f"unknown or unspecified value {value}")
            out[name] = enum_value.name.removeprefix(prefix).lower()
        else:
            out[name] = value
    return out


# ---------------------------------------------------------------------------- actions

_SIMPLE_ACTIONS: Final[dict[str, Action]] = {
    "flip_only": FlipOnly(), "keep_gukjin": KeepGukjin(), "convert_gukjin": ConvertGukjin(), "go": Go(),
    "stop": Stop(), "join_round": JoinRound(), "sit_out": SitOut(), "sell_gwang": SellGwang(),
    "decline_gwang_sale": DeclineGwangSale(),
}
_SIMPLE_FIELDS: Final[dict[type, str]] = {type(a): name for name, a in _SIMPLE_ACTIONS.items()}


def action_to_pb(action: Action) -> pb.Action:
    """The structured wire form of an engine action; ``MalformedAction`` for anything else."""
    if isinstance(action, PlayCard):
        return pb.Action(play_card=pb.PlayCard(card=action.card, shake=action.shake))
    if isinstance(action, Bomb):
        return pb.Action(bomb=pb.Bomb(month=action.month))
    if isinstance(action, ChooseCapture):
        return pb.Action(choose_capture=pb.ChooseCapture(card=action.card))
    name = _SIMPLE_FIELDS.get(type(action))
    if name is None:
        raise MalformedAction(f"not an action: {action!r}")
    out = pb.Action()
    getattr(out, name).SetInParent()
    return out


def action_from_pb(msg: pb.Action) -> Action:
    """The engine action of a structured action; ``MalformedAction`` if no kind is set."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        raise MalformedAction("the action has no kind set")
    if kind == "play_card":
        return PlayCard(msg.play_card.card, msg.play_card.shake)
    if kind == "bomb":
        return Bomb(msg.bomb.month)
    if kind == "choose_capture":
        return ChooseCapture(msg.choose_capture.card)
    return _SIMPLE_ACTIONS[kind]


# ----------------------------------------------------------------------------- events

def event_to_pb(event: Event) -> pb.Event:
    kind = type(event)
    name = _EVENT_FIELDS.get(kind)
    if name is None:
        name = _EVENT_FIELDS[kind] = _snake(kind.__name__)
    out = pb.Event()
    part = getattr(out, name)
    fill(part, event)
    part.SetInParent()  # set even when every field is at its default
    return out


_EVENT_FIELDS: dict[type, str] = {}
"""Per event type: its field of ``pb.Event`` (the type name in snake case)."""


def settlement_to_pb(settlement: Settlement) -> pb.Settlement:
    out = pb.Settlement()
    fill(out, settlement)
    return out


def deal_to_pb(deal: Deal) -> pb.Deal:
    """The message of an explicit deal (the inverse of ``deal_from_pb``)."""
    return pb.Deal(hands=[pb.Hand(cards=h) for h in deal.hands], floor=deal.floor, stock=deal.stock,
                   dealer=deal.dealer)


def deal_from_pb(msg: pb.Deal) -> Deal:
    return Deal(
        hands=tuple(tuple(h.cards) for h in msg.hands),
        floor=tuple(msg.floor),
        stock=tuple(msg.stock),
        dealer=msg.dealer,
    )


# ------------------------------------------------------------------------------ views

def _legal_action_views() -> dict[int, bytes]:
    """Per action id: the bytes of a ``GameView`` holding only that legal action (id, action and
    label). A view's legal actions are the concatenation of theirs: built once, not per call."""
    out: dict[int, bytes] = {}
    for ident in range(256):
        try:
            action = action_from_id(ident)
        except MalformedAction:
            continue
        legal = pb.LegalAction(id=ident, action=action_to_pb(action), label=action_label(action))
        out[ident] = pb.GameView(legal_actions=[legal]).SerializeToString()
    return out


_LEGAL_VIEWS: Final = _legal_action_views()


def view_to_pb(
    view: View, match: Match, game_id: str, version: int, out: pb.GameView | None = None, plays: bytes | None = None
) -> pb.GameView:
    """A seat's (or spectator's) view of a game, with its legal actions and the match totals;
    written into ``out`` (an empty message, e.g. a field of a response: no copy) if given.
    ``plays``: the view's plays already encoded (``service.plays.RoundPlays.view``)."""
    if out is None:
        out = pb.GameView()
    out.game_id = game_id
    out.viewer = view.viewer
    out.preset = view.rules_name
    out.dealer = view.dealer
    out.to_move = view.to_move
    out.stock_count = view.stock_count
    out.gukjin = view.gukjin
    out.carry = view.carry
    out.version = version
    out.phase = pb.Phase.Value("PHASE_" + view.phase.value.upper())  # type: ignore[assignment]
    out.floor.extend(view.floor)
    for stack in view.stacks:
        fill(out.stacks.add(), stack)
    for seat in view.seats:
        fill(out.seats.add(), seat)
    if view.pending is not None:
        fill(out.pending, view.pending)
    # Merging serialized GameViews appends to their repeated fields: one parse for them all.
    merged = [_LEGAL_VIEWS[action_id(a)] for a in view.legal_actions]
    if plays:
        merged.append(plays)
    if merged:
        out.MergeFromString(b"".join(merged))
    for payment in view.payments:
        fill(out.payments.add(), payment)
    if view.settlement is not None:
        fill(out.settlement, view.settlement)
    if view.rules is not None:
        out.rules.CopyFrom(_rules_pb(view.rules))
    out.go_seq, out.steps = view.go_seq, view.steps
    if view.turn is not None:
        fill(out.turn, view.turn)
    if view.plays and plays is None:
        add = out.plays.add
        for record in view.plays:
            fill(add(), record)
    m = out.match
    m.round_no, m.rounds, m.finished = match.round_no, match.rounds, match.finished
    m.points.extend(match.points)
    m.money.extend(match.money)
    m.wins.extend(match.wins)
    m.losses.extend(match.losses)
    m.draws.extend(match.draws)
    return out
