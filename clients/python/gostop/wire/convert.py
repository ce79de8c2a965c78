"""The one conversion between engine values and the wire messages of ``gostop.v1``, both ways.

Engine dataclasses and proto messages share field names, so most conversion is generic: each
dataclass field is copied to (or read from) the message field of the same name. The server turns
engine values into messages (``*_to_pb``); clients and bots turn them back (``*_from_pb``), so that
a bot written against the engine plays through the service unchanged: ``view_from_pb`` of a wire
view equals the ``engine.view`` the server built it from.

>>> from gostop.engine import PlayCard, Stop
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, TypeVar, cast

from google.protobuf.message import Message

from gostop.engine import (
    EVENT_TYPES,
    Action,
    Bill,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    Deal,
    DeclineGwangSale,
    Factor,
    FlipOnly,
    Go,
    InvalidRules,
    JoinRound,
    KeepGukjin,
    MalformedAction,
    Match,
    Payment,
    Phase,
    PlayCard,
    Rules,
    SellGwang,
    SitOut,
    Stop,
    View,
    action_from_id,
    action_id,
)
from gostop.engine.events import Event
from gostop.engine.previews import (
    CaptureHint,
    GoTerms,
    GukjinPreview,
    Reach,
    SetReach,
    StopPreview,
    capture_hints,
    gukjin_preview,
    reach,
    stop_preview,
)
from gostop.engine.render import action_label
from gostop.engine.rules import FIELDS
from gostop.engine.scoring import Score
from gostop.engine.settlement import PaymentReason, Settlement
from gostop.engine.state import Gukjin, PlayRecord, StealCause, TurnContext, TurnKind
from gostop.engine.table_events import TABLE_EVENT_TYPES, PlayCause, PlayedForSeat, TableEvent
from gostop.engine.views import Pending, SeatView, Stack
from gostop.v1 import game_pb2 as pb

__all__ = [
    "MatchSummary",
    "action_from_pb",
    "action_to_pb",
    "capture_hints_from_pb",
    "deal_from_pb",
    "deal_to_pb",
    "event_from_pb",
    "event_to_pb",
    "fill",
    "gukjin_preview_from_pb",
    "legal_actions_from_pb",
    "match_from_pb",
    "overrides_from_pb",
    "overrides_to_pb",
    "reach_from_pb",
    "rules_from_pb",
    "rules_to_pb",
    "settlement_from_pb",
    "settlement_to_pb",
    "stop_preview_from_pb",
    "view_from_pb",
    "view_to_pb",
]

T = TypeVar("T")
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


@functools.cache
def _snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


def _enum_prefix(enum_name: str) -> str:
    return _snake(enum_name).upper() + "_"


def _enum_name(enum_type: Any, number: int, field: str) -> str:
    """The engine's name of an enum number (``GO_SCORING_ADDITIVE`` -> ``additive``); an unknown or
    unspecified number is ``InvalidRules`` naming ``field``."""
    value = enum_type.values_by_number.get(number)
    if value is None or value.name.endswith("_UNSPECIFIED"):
        raise InvalidRules(field, f"unknown or unspecified {enum_type.name} value {number}")
    name: str = value.name.removeprefix(_enum_prefix(enum_type.name)).lower()
    return name


def _enum_number(enum_type: Any, name: str) -> int:
    number: int = enum_type.values_by_name[_enum_prefix(enum_type.name) + name.upper()].number
    return number


# ------------------------------------------------------------------- engine -> message
_SCALAR, _REPEATED, _MESSAGE, _MESSAGES, _HANDS, _ENUM = range(6)
_FillPlan = tuple[tuple[str, int, Any], ...]
"""Per field: its name, how it is copied and, for an enum, its numbers by value; for a scalar,
whether the field has presence (then a zero is written, not skipped)."""


def _fill_plan(msg: Message, obj: Any) -> _FillPlan:
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
    """``_fill_plan`` as straight-line code, one statement per field (views and events are converted
    on every call of the API, and a loop that interprets the plan costs more)."""
    env: dict[str, Any] = {"fill": fill, "Enum": Enum}
    lines = ["def filler(msg, obj):"]
    for index, (name, how, extra) in enumerate(_fill_plan(msg, obj)):
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

def _rules_message(values: Mapping[str, Any]) -> pb.Rules:
    """A ``Rules`` message with the given engine values of rule fields set (unknown names refused)."""
    out = pb.Rules()
    for name, value in values.items():
        fd = pb.Rules.DESCRIPTOR.fields_by_name.get(name)
        if fd is None or name not in FIELDS:
            raise InvalidRules(name, "no such rule")
        if name == "last_turn_no_steal":
            out.last_turn_no_steal.SetInParent()
            out.last_turn_no_steal.events.extend(
                [_enum_number(pb.LastTurnEvent.DESCRIPTOR, str(v)) for v in sorted(value)]  # type: ignore[misc]
            )
        elif name == "ppeok_payments":
            out.ppeok_payments.SetInParent()
            out.ppeok_payments.points.extend(value)
        elif fd.enum_type is not None:
            setattr(out, name, _enum_number(fd.enum_type, str(value)))
        else:
            setattr(out, name, value)
    return out


def _rule_values(msg: pb.Rules) -> dict[str, Any]:
    """The engine values of the fields set in ``msg`` (unknown enum numbers: ``InvalidRules``)."""
    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        name = fd.name
        if name == "last_turn_no_steal":
            out[name] = frozenset(_enum_name(pb.LastTurnEvent.DESCRIPTOR, v, name) for v in value.events)
        elif name == "ppeok_payments":
            out[name] = tuple(value.points)
        elif fd.enum_type is not None:
            out[name] = _enum_name(fd.enum_type, value, name)
        else:
            out[name] = value
    return out


def rules_to_pb(rules: Rules) -> pb.Rules:
    """Every rule field, set (a fresh message: callers may change it)."""
    out = pb.Rules()
    out.CopyFrom(_rules_pb(rules))
    return out


@functools.lru_cache(maxsize=256)
def _rules_pb(rules: Rules) -> pb.Rules:
    return _rules_message({name: getattr(rules, name) for name in FIELDS})


def rules_from_pb(msg: pb.Rules) -> Rules:
    """Engine rules from a fully set ``Rules`` message (views, ListRuleSets, CreateGame, GetGameLog)."""
    return _rules_from_bytes(msg.SerializeToString(deterministic=True))


@functools.lru_cache(maxsize=64)
def _rules_from_bytes(blob: bytes) -> Rules:
    return Rules.from_dict(_rule_values(pb.Rules.FromString(blob)))


def overrides_to_pb(overrides: Mapping[str, Any]) -> pb.Rules:
    """A ``Rules`` override message from engine-style values: ``{"gwangbak": False, "go_scoring":
    "additive", "ppeok_payments": (1, 2, 3), "last_turn_no_steal": {"sseul"}}``.

    >>> overrides_to_pb({"go_threshold": 5, "go_scoring": "additive"})
    go_threshold: 5
    go_scoring: GO_SCORING_ADDITIVE
    <BLANKLINE>
    """
    return _rules_message(overrides)


def overrides_from_pb(msg: pb.Rules) -> dict[str, Any]:
    """The fields set in an override message, as engine values (unknown enum values rejected
    with ``InvalidRules`` naming the field)."""
    return _rule_values(msg)


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

def event_to_pb(event: Event | TableEvent) -> pb.Event:
    kind = type(event)
    if kind is PlayedForSeat:
        assert isinstance(event, PlayedForSeat)
        part = pb.PlayedForSeat(seat=event.seat, policy=event.policy, cause=event.cause)
        if event.action >= 0:  # (none when the table's bot dealt the next round)
            part.action.CopyFrom(action_to_pb(action_from_id(event.action)))
        return pb.Event(played_for_seat=part)
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
_LEGAL_BODIES: Final = {ident: pb.GameView.FromString(v).legal_actions[0].SerializeToString()
                        for ident, v in _LEGAL_VIEWS.items()}
"""Per action id: the bytes of its ``LegalAction`` alone (id, action and label)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(descriptor: Any, name: str, wire_type: int) -> bytes:
    """The encoded key of field ``name`` of a message type."""
    return _varint(descriptor.fields_by_name[name].number << 3 | wire_type)


_LEN, _INT = 2, 0
_LEGAL_KEY: Final = _key(pb.GameView.DESCRIPTOR, "legal_actions", _LEN)
_CAPTURE_KEY: Final = _key(pb.LegalAction.DESCRIPTOR, "capture", _LEN)
_TAKES_KEY: Final = _key(pb.CaptureHint.DESCRIPTOR, "takes", _LEN)
_CHOOSE_KEY: Final = _key(pb.CaptureHint.DESCRIPTOR, "choose_from", _LEN)
_UNSEEN_KEY: Final = _key(pb.CaptureHint.DESCRIPTOR, "month_unseen", _INT)
_REACH_KEY: Final = _key(pb.SeatView.DESCRIPTOR, "reach", _LEN)
_SET_KEYS: Final = tuple(_key(pb.Reach.DESCRIPTOR, f.name, _LEN) for f in dataclasses.fields(Reach))
_CAPTURED_KEY: Final = _key(pb.SetReach.DESCRIPTOR, "captured", _INT)
_OPEN_KEY: Final = _key(pb.SetReach.DESCRIPTOR, "open", _INT)
"""Keys of the fields the previews are written into as bytes: they are encoded by hand (every
value is a card id or a count below 128: one byte), which costs a fraction of building messages."""


def _legal_view(ident: int, hint: CaptureHint | None) -> bytes:
    """The bytes of a ``GameView`` holding only the legal action ``ident``, with its capture hint:
    the action's bytes built once, the hint's appended (a message's fields may come in any order,
    and the hint is set even when the play takes nothing; its card lists packed)."""
    if hint is None:
        return _LEGAL_VIEWS[ident]
    capture = b""
    if hint.takes:
        capture += _TAKES_KEY + bytes((len(hint.takes), *hint.takes))
    if hint.choose_from:
        capture += _CHOOSE_KEY + bytes((len(hint.choose_from), *hint.choose_from))
    if hint.month_unseen:
        capture += _UNSEEN_KEY + bytes((hint.month_unseen,))
    body = b"".join((_LEGAL_BODIES[ident], _CAPTURE_KEY, bytes((len(capture),)), capture))
    return b"".join((_LEGAL_KEY, _varint(len(body)), body))


_REACH_MEMO: dict[tuple[tuple[int, ...], ...], tuple[bytes, ...]] = {}
_REACH_MEMO_LIMIT: Final = 4096


def _reaches(view: View) -> tuple[bytes, ...]:
    """``_reach_bytes`` of every seat: a function of the captured piles alone, which every viewer
    of a version shares (memoized: a pure cache, bounded)."""
    key = tuple([s.captured for s in view.seats])
    hit = _REACH_MEMO.get(key)
    if hit is None:
        if len(_REACH_MEMO) >= _REACH_MEMO_LIMIT:
            _REACH_MEMO.clear()
        hit = _REACH_MEMO[key] = tuple([_reach_bytes(near) for near in reach(view)])
    return hit


def _reach_bytes(near: Reach) -> bytes:
    """The bytes of a ``SeatView`` holding only ``reach`` (every set written, even at 0 and 0)."""
    body = b""
    for key, counts in zip(_SET_KEYS, (near.godori, near.hongdan, near.cheongdan, near.chodan, near.gwang),
                           strict=True):
        inner = b""
        if counts.captured:
            inner += _CAPTURED_KEY + bytes((counts.captured,))
        if counts.open:
            inner += _OPEN_KEY + bytes((counts.open,))
        body += key + bytes((len(inner),)) + inner
    return _REACH_KEY + bytes((len(body),)) + body


def _stop_preview_pb(out: pb.StopPreview, preview: StopPreview) -> None:
    fill(out.settlement, preview.settlement)
    for msg, terms in ((out.now, preview.now), (out.next_go, preview.next_go)):
        msg.gos, msg.add, msg.multiplier, msg.go_score = terms.gos, terms.add, terms.multiplier, terms.go_score
    out.next_base, out.gobak = preview.next_base, preview.gobak
    if preview.go_settlement is not None:
        fill(out.go_settlement, preview.go_settlement)




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
    for seat, near in zip(view.seats, _reaches(view), strict=True):
        seat_msg = out.seats.add()
        fill(seat_msg, seat)
        seat_msg.MergeFromString(near)
    if view.pending is not None:
        fill(out.pending, view.pending)
    # Merging serialized GameViews appends to their repeated fields: one parse for them all.
    hints = capture_hints(view)
    merged = [_legal_view(action_id(a), h) for a, h in zip(view.legal_actions, hints, strict=True)]
    if plays:
        merged.append(plays)
    if merged:
        out.MergeFromString(b"".join(merged))
    for payment in view.payments:
        fill(out.payments.add(), payment)
    if view.settlement is not None:
        fill(out.settlement, view.settlement)
    stop = stop_preview(view)
    if stop is not None:
        _stop_preview_pb(out.stop_preview, stop)
    gukjin = gukjin_preview(view)
    if gukjin is not None:
        fill(out.gukjin_preview.keep, gukjin.keep)
        fill(out.gukjin_preview.convert, gukjin.convert)
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


# ------------------------------------------------------------------- message -> engine

def legal_actions_from_pb(view: pb.GameView) -> tuple[Action, ...]:
    """The viewer's legal actions as engine actions, in the view's (ascending id) order."""
    out = []
    for legal in view.legal_actions:
        out.append(action_from_pb(legal.action) if legal.HasField("action") else action_from_id(legal.id))
    return tuple(out)



# ----------------------------------------------------------------- dataclasses, events

_NESTED: Final[dict[str, type]] = {
    "Score": Score, "Payment": Payment, "Settlement": Settlement, "Bill": Bill, "Factor": Factor,
    "GoTerms": GoTerms, "SetReach": SetReach,
}
_OPTIONAL: Final[frozenset[tuple[type, str]]] = frozenset({(Settlement, "score"), (StopPreview, "go_settlement")})
"""Message fields that stand for an engine value that may be ``None`` (absent on the wire)."""

_BuildPlan = tuple[tuple[str, str, Any], ...]
_BUILD_PLANS: dict[type, _BuildPlan] = {}


def _build_plan(cls: type, descriptor: Any) -> _BuildPlan:
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
    plan = _BUILD_PLANS.get(cls)
    if plan is None:
        plan = _BUILD_PLANS[cls] = _build_plan(cls, msg.DESCRIPTOR)
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


_PLAY_CAUSES: Final[dict[str, PlayCause]] = {"timeout": "timeout", "away": "away", "auto_play": "auto_play"}
_EVENTS: Final[dict[str, type]] = {_snake(t.__name__): t for t in (*EVENT_TYPES, *TABLE_EVENT_TYPES)}


def event_from_pb(msg: pb.Event) -> Event | TableEvent:
    """The engine event of a wire event (hidden cards stay ``-1``)."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        raise ValueError("the event has no kind set")
    if kind == "played_for_seat":
        part = msg.played_for_seat
        cause = _PLAY_CAUSES.get(part.cause)
        if cause is None:
            raise ValueError(f"unknown cause {part.cause!r} of a decision made for a seat")
        action = action_id(action_from_pb(part.action)) if part.HasField("action") else -1
        return PlayedForSeat(part.seat, part.policy, action, cause)
    event: Event | TableEvent = _build(_EVENTS[kind], getattr(msg, kind))
    return event


def settlement_from_pb(msg: pb.Settlement) -> Settlement:
    """The engine settlement of a wire settlement."""
    return _build(Settlement, msg)


def stop_preview_from_pb(msg: pb.GameView) -> StopPreview | None:
    """The view's stop preview (``engine.previews.stop_preview``): set for the seat deciding 고 or
    스톱, otherwise ``None``."""
    return _build(StopPreview, msg.stop_preview) if msg.HasField("stop_preview") else None


def gukjin_preview_from_pb(msg: pb.GameView) -> GukjinPreview | None:
    """The view's 국진 preview (``engine.previews.gukjin_preview``): set for the seat deciding 국진,
    otherwise ``None``."""
    return _build(GukjinPreview, msg.gukjin_preview) if msg.HasField("gukjin_preview") else None


def capture_hints_from_pb(msg: pb.GameView) -> tuple[CaptureHint | None, ...]:
    """Per legal action of the view, in its order: what the play takes from the floor
    (``engine.previews.capture_hints``), or ``None`` for an action that is not a play."""
    return tuple(_build(CaptureHint, la.capture) if la.HasField("capture") else None for la in msg.legal_actions)


def reach_from_pb(msg: pb.GameView) -> tuple[Reach, ...]:
    """Every seat's sets within reach (``engine.previews.reach``), in seat order."""
    return tuple(_build(Reach, s.reach) for s in msg.seats)


# ------------------------------------------------------------------------------ views


def _phase(number: int) -> Phase:
    return Phase(_enum_name(pb.Phase.DESCRIPTOR, number, "phase"))


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
        seat=msg.seat, kind=cast(TurnKind, msg.kind), card=msg.card, month=msg.month, last=msg.last,
        before=_score(msg.before),
        matched=msg.matched, held=tuple(msg.held), flipped=msg.flipped, taken=tuple(msg.taken),
        steals=tuple(cast(list[StealCause], msg.steals)), ppeok=msg.ppeok, ttadak=msg.ttadak,
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
        gukjin=cast(Gukjin, msg.gukjin),
        carry=msg.carry,
        pending=pending,
        legal_actions=legal_actions_from_pb(msg),
        payments=tuple(Payment(p.payer, p.payee, p.points, cast(PaymentReason, p.reason)) for p in msg.payments),
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
