"""Player actions and their stable integer ids.

Every action a seat can take has one integer id, stable across versions, so that
bots, frontends and logs can name actions compactly. ``legal_actions`` returns
actions in ascending id order.

======================  ===========
action                  id
======================  ===========
PlayCard(c)             c (0-50)
PlayCard(c, shake)      64 + c
Bomb(month)             128 + month
FlipOnly                150
ChooseCapture(c)        160 + c
KeepGukjin              220
ConvertGukjin           221
Go                      230
Stop                    231
JoinRound               240
SitOut                  241
DeclineGwangSale        250
SellGwang               251
======================  ===========
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .cards import ALL_CARDS
from .errors import MalformedAction


@dataclass(frozen=True, slots=True)
class PlayCard:
    """Play a hand card; ``shake`` declares 흔들기 (three of the month held, none on the floor)."""

    card: int
    shake: bool = False


@dataclass(frozen=True, slots=True)
class Bomb:
    """폭탄: play the three held cards of ``month`` onto its single floor card."""

    month: int


@dataclass(frozen=True, slots=True)
class FlipOnly:
    """빈 내기: a turn that only flips the stock (after a 폭탄)."""


@dataclass(frozen=True, slots=True)
class ChooseCapture:
    """Which of two floor cards of the month to capture."""

    card: int


@dataclass(frozen=True, slots=True)
class KeepGukjin:
    """Keep 국진 (card 32) as a 열끗 (for now, or for good under ``on_capture``)."""


@dataclass(frozen=True, slots=True)
class ConvertGukjin:
    """Count 국진 (card 32) as a 쌍피 from now on."""


@dataclass(frozen=True, slots=True)
class Go:
    """Go on: the round continues and the go count rises."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop: the round ends and is settled with this seat as winner."""


@dataclass(frozen=True, slots=True)
class JoinRound:
    """4 players: play this round."""


@dataclass(frozen=True, slots=True)
class SitOut:
    """4 players: sit this round out."""


@dataclass(frozen=True, slots=True)
class SellGwang:
    """4 players, forced out: sell the 광, 쌍피 and bonus 피 of the hand (광팔기)."""


@dataclass(frozen=True, slots=True)
class DeclineGwangSale:
    """4 players, forced out: sell nothing."""


Action = (
    PlayCard | Bomb | FlipOnly | ChooseCapture | KeepGukjin | ConvertGukjin | Go | Stop
    | JoinRound | SitOut | SellGwang | DeclineGwangSale
)

_FIXED: Final[dict[int, Action]] = {
    150: FlipOnly(),
    220: KeepGukjin(),
    221: ConvertGukjin(),
    230: Go(),
    231: Stop(),
    240: JoinRound(),
    241: SitOut(),
    250: DeclineGwangSale(),
    251: SellGwang(),
}
_FIXED_IDS: Final[dict[type, int]] = {type(a): i for i, a in _FIXED.items()}


def action_id(action: Action) -> int:
    """The stable integer id of an action.

    >>> action_id(PlayCard(5)), action_id(PlayCard(5, shake=True)), action_id(Stop())
    (5, 69, 231)
    """
    if isinstance(action, PlayCard):
        _check_card(action.card)
        return action.card + (64 if action.shake else 0)
    if isinstance(action, Bomb):
        if not isinstance(action.month, int) or not 1 <= action.month <= 12:
            raise MalformedAction(f"bomb month must be 1-12, not {action.month!r}")
        return 128 + action.month
    if isinstance(action, ChooseCapture):
        _check_card(action.card)
        return 160 + action.card
    try:
        return _FIXED_IDS[type(action)]
    except KeyError:
        raise MalformedAction(f"not an action: {action!r}") from None


_ID_MEMO: dict[Action, int] = {}


def cached_action_id(action: Action) -> int:
    """``action_id`` of a legal action, memoized: search asks for the ids of the same few
    hundred actions over and over (actions are frozen, hashable values)."""
    ident = _ID_MEMO.get(action)
    if ident is None:
        ident = _ID_MEMO[action] = action_id(action)
    return ident


def action_from_id(ident: int) -> Action:
    """The action with a stable integer id; ``MalformedAction`` for an unknown id.

    >>> action_from_id(69)
    PlayCard(card=5, shake=True)
    """
    if not isinstance(ident, int) or isinstance(ident, bool):
        raise MalformedAction(f"action id must be an integer, not {ident!r}")
    if 0 <= ident < ALL_CARDS:
        return PlayCard(ident)
    if 64 <= ident < 64 + ALL_CARDS:
        return PlayCard(ident - 64, shake=True)
    if 129 <= ident <= 140:
        return Bomb(ident - 128)
    if 160 <= ident < 160 + ALL_CARDS:
        return ChooseCapture(ident - 160)
    try:
        return _FIXED[ident]
    except KeyError:
        raise MalformedAction(f"unknown action id {ident}") from None


def _check_card(card: object) -> None:
    if not isinstance(card, int) or isinstance(card, bool) or not 0 <= card < ALL_CARDS:
        raise MalformedAction(f"card must be an id 0-{ALL_CARDS - 1}, not {card!r}")
