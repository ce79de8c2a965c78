"""gostop engine: the five Go-Stop rule systems, pure and deterministic.

>>> from gostop.engine import Rules, new_round, legal_actions, apply
>>> state, events = new_round(Rules.preset("standard"), seed=7)
>>> state.phase.value, len(state.seats[state.to_move].hand)
('play', 10)
>>> state2, events = apply(state, legal_actions(state)[0])
>>> state2.steps
1

The modules, one concept each: ``cards``, ``rules``, ``actions``, ``state`` (a round at one
moment), ``dealing`` (the deal), ``legality`` (what is legal), ``turns`` (one step per action),
``scoring`` (the score), ``settlement`` (who pays whom), ``events``, ``views`` (what a seat may
see), ``observer`` (a seat's view as a vector), ``play`` (``apply`` and ``Playout``), ``match``,
``serialize``, ``render``, ``determinize``, ``previews`` (what a decision is worth and what a play
takes, from a view), ``testing`` (scripted deals); ``working`` is the
mutable copy a step changes, internal to the engine.

``BUILD`` says which build runs: the modules compiled with mypyc, or the pure-Python sources
(``native.py``; both behave the same).
"""

from pathlib import Path as _Path

from . import native as _native
from .native import Build

BUILD: Build = _native.select(_Path(__file__).parent)
"""The engine build in use (``BUILD.kind``: ``mypyc`` or ``python``; ``BUILD.reason``: why)."""
__path__[:0] = BUILD.path

from .actions import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    FlipOnly,
    Go,
    JoinRound,
    KeepGukjin,
    PlayCard,
    SellGwang,
    SitOut,
    Stop,
    action_from_id,
    action_id,
    cached_action_id,
)
from .cards import CODE, HIDDEN, KIND, MONTH, NAME, PI_VALUE, Kind, card_code, card_from_code, deck
from .dealing import Deal, new_round
from .errors import (
    CorruptSnapshot,
    EngineError,
    IllegalAction,
    InvalidDeal,
    InvalidRules,
    MalformedAction,
    NotYourTurn,
    RoundOver,
)
from .events import EVENT_TYPES, Event
from .legality import check, legal_action_ids, legal_actions
from .match import Match, RoundResult, match_apply, new_match, next_round, round_seed
from .observer import Observer
from .play import Playout, apply, apply_unchecked
from .rules import FIELDS, PRESET_PLAYERS, PRESETS, Rules
from .scoring import Score, go_score, score, seat_score
from .serialize import (
    FORMAT_VERSION,
    event_from_json,
    event_to_json,
    match_from_bytes,
    match_to_bytes,
    state_from_bytes,
    state_to_bytes,
)
from .settlement import Bill, Factor, Payment, Settlement
from .state import Phase, Position, SeatState, State, card_places
from .views import SPECTATOR, View, redact, redact_all, view

_native.support_copy_and_pickle(__name__)

__all__ = [
    "BUILD",
    "CODE",
    "EVENT_TYPES",
    "FIELDS",
    "FORMAT_VERSION",
    "HIDDEN",
    "KIND",
    "MONTH",
    "NAME",
    "PI_VALUE",
    "PRESETS",
    "PRESET_PLAYERS",
    "SPECTATOR",
    "Action",
    "Bill",
    "Bomb",
    "ChooseCapture",
    "ConvertGukjin",
    "CorruptSnapshot",
    "Deal",
    "DeclineGwangSale",
    "EngineError",
    "Event",
    "Factor",
    "FlipOnly",
    "Go",
    "IllegalAction",
    "InvalidDeal",
    "InvalidRules",
    "JoinRound",
    "KeepGukjin",
    "Kind",
    "MalformedAction",
    "Match",
    "NotYourTurn",
    "Observer",
    "Payment",
    "Phase",
    "PlayCard",
    "Playout",
    "Position",
    "RoundOver",
    "RoundResult",
    "Rules",
    "Score",
    "SeatState",
    "SellGwang",
    "Settlement",
    "SitOut",
    "State",
    "Stop",
    "View",
    "action_from_id",
    "action_id",
    "apply",
    "apply_unchecked",
    "cached_action_id",
    "card_code",
    "card_from_code",
    "card_places",
    "check",
    "deck",
    "event_from_json",
    "event_to_json",
    "go_score",
    "legal_action_ids",
    "legal_actions",
    "match_apply",
    "match_from_bytes",
    "match_to_bytes",
    "new_match",
    "new_round",
    "next_round",
    "redact",
    "redact_all",
    "round_seed",
    "score",
    "seat_score",
    "state_from_bytes",
    "state_to_bytes",
    "view",
]
