"""Rule variants as data: one frozen, self-validating ``Rules`` object and its presets.

Every rule of the product spec is a field. A preset is nothing but a set of field
values (``Rules.preset("classic", players=3)``); any field can be overridden per game
(``Rules.preset("standard", gwangbak=False)``). Construction validates the whole
object, so an impossible combination never reaches the engine.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from .cards import deck
from .errors import InvalidRules
from .scoring import go_score, score

GoScoring = Literal["standard", "additive"]
"""``standard``: 1고 B+1, 2고 B+2, n≥3 (B+2)×2^(n−2). ``additive``: B+n, ×2^(n−2) when n≥3."""
ShakeCount = Literal["per_month", "per_declaration"]
SseulMode = Literal["steal", "point"]
GukjinMode = Literal["on_settlement", "on_capture", "never"]
ThreePpeok = Literal["none", "win", "lose"]
LastActionGo = Literal["auto_stop", "allowed"]
Exhausted = Literal["nagari", "best_score"]
FirstLeader = Literal["seeded", "seat0"]
LastTurnEvent = Literal["sseul", "jjok", "ttadak"]

PRESETS: Final = ("standard", "simple", "classic", "house", "arcade")
PRESET_PLAYERS: Final[dict[str, tuple[int, ...]]] = {
    "standard": (2, 3),
    "simple": (2,),
    "classic": (2, 3, 4),
    "house": (3, 2),
    "arcade": (2,),
}
"""Player counts each preset's seed describes; the first is the default."""

_LAST_TURN_EVENTS: Final = frozenset(get_args(LastTurnEvent))

POINTS_MAX: Final = 1_000_000
"""Largest value of a rule that is a number of points (payments, prices, instant wins)."""
COUNT_MAX: Final = 100
"""Largest value of a rule that counts cards or turns (a round has at most 51 cards and 10 turns)."""
ROUND_MONEY_MAX: Final = (1 << 53) - 1
"""The most money one round may move to or from a seat: ``round_points_bound × point_value``
stays within it, so a round's money fits an int64 and also a JavaScript number exactly."""
TOTAL_MAX: Final = (1 << 63) - 1
"""The wire's int64: no running total of a match (points or money) may pass it."""
_LIMITS: Final[dict[str, int]] = {
    "go_threshold": POINTS_MAX, "meongbak_min_yeol": COUNT_MAX, "pibak_max_pi": COUNT_MAX,
    "chongtong_points": POINTS_MAX, "three_ppeok_points": POINTS_MAX, "first_ttadak_payment": POINTS_MAX,
    "heodang_turns": COUNT_MAX, "heodang_points": POINTS_MAX, "gwang_sale_price": POINTS_MAX,
    "point_value": ROUND_MONEY_MAX,
}
"""Upper bound of each numeric rule that is not a small choice (players, bonus_cards): what the
wire's int32 fields and the settlement's arithmetic carry with room to spare."""


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rule of a round and a match. Defaults are the ``standard`` 2-player preset.

    >>> Rules.preset("classic", players=3).go_threshold
    3
    >>> Rules.preset("simple", pibak=True).pibak
    True
    >>> Rules(players=5)
    Traceback (most recent call last):
    ...
    gostop.engine.errors.InvalidRules: players: must be 2, 3 or 4, not 5
    """

    name: str = "standard"
    """Preset the object was built from (informational; overrides keep the name)."""
    players: int = 2
    """Seats at the table: 2, 3, or 4 (one sits out each round and may sell 광)."""
    bonus_cards: int = 3
    """0 (48-card deck), 2 (two bonus 쌍피: 50) or 3 (two 쌍피 and a 쓰리피: 51)."""
    packet_deal: bool = False
    """Deal in the traditional packets (floor 4, 5, 5, floor 4, 5, 5 for two players)."""
    go_threshold: int = 7
    """Base score T from which a player may go or stop."""
    go_scoring: GoScoring = "standard"
    last_action_go: LastActionGo = "auto_stop"
    """``auto_stop``: reaching T on one's own last action stops. ``allowed``: a go is
    allowed there; if no other seat has a turn left it counts and ends the round."""
    exhausted: Exhausted = "nagari"
    """Nobody stopped by the end: ``nagari`` (draw) or ``best_score`` (a seat with base
    score ≥ T wins, the higher go score wins, ties draw)."""
    shake_bomb: bool = True
    """흔들기 and 폭탄 exist."""
    shake_bomb_count: ShakeCount = "per_month"
    """``per_month``: 흔들기 and 폭탄 of one month ×2 once; ``per_declaration``: ×2 each."""
    shake_bomb_when_losing: bool = False
    """Also multiply what a losing seat pays by its own 흔들기/폭탄."""
    meongbak: bool = True
    meongbak_min_yeol: int = 7
    pibak: bool = True
    pibak_max_pi: int = 5
    """Loser's 피 value at most this (and, unless ``pibak_zero_exempt`` is off, ≥ 1)."""
    pibak_requires_winner_pi: bool = True
    """피박 only when the winner scored with 피."""
    pibak_zero_exempt: bool = True
    """A loser with no 피 at all escapes 피박."""
    gwangbak: bool = True
    gobak: bool = True
    """2 players: a losing seat that declared go pays ×2. 3 players: the loser who
    declared go most recently pays what both losers owe."""
    nagari_carry: bool = True
    """The round after a 나가리 is ×2 (never more)."""
    sseul_mode: SseulMode = "steal"
    """쓸: steal 1 피 from each opponent, or add 1 point to the base score."""
    last_turn_no_steal: frozenset[LastTurnEvent] = frozenset({"sseul"})
    """Events that steal nothing on a seat's own last action."""
    last_turn_ppeok_captured: bool = False
    """On a seat's own last action a would-be 뻑 is captured instead."""
    gukjin: GukjinMode = "on_settlement"
    """국진 (card 32): convertible to 쌍피 at the holder's settlements, chosen at capture,
    or never."""
    chongtong: bool = False
    """Four of a month in a starting hand wins at once (otherwise: redeal)."""
    chongtong_points: int = 10
    ppeok_payments: tuple[int, ...] = ()
    """첫뻑 / 연뻑: payment k (from 0) is paid by each opponent when the seat made 뻑 on
    each of its own turns 1..k+1. ``(7, 14, 21)`` is classic's 첫뻑, 2연뻑, 3연뻑."""
    three_ppeok: ThreePpeok = "none"
    """A seat's third 뻑 of the round wins, loses, or does nothing."""
    three_ppeok_points: int = 0
    first_ttadak_payment: int = 0
    """첫따닥: paid by each opponent for a 따닥 on the seat's first turn (0: off)."""
    heodang: bool = False
    """허당: capturing nothing on ``heodang_turns`` consecutive own turns wins."""
    heodang_turns: int = 5
    heodang_points: int = 3
    point_value: int = 0
    """Money per point (0: points only)."""
    gwang_sale_price: int = 1
    """4 players: points each active seat pays the sitting-out seat per card sold."""
    first_leader: FirstLeader = "seeded"
    """First round's 선: drawn from the seed, or seat 0."""

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def deck_size(self) -> int:
        """48, 50 or 51."""
        return 48 + self.bonus_cards

    @property
    def hand_size(self) -> int:
        """Cards dealt to each seat: 10 for two players, 7 otherwise."""
        return 10 if self.players == 2 else 7

    @property
    def floor_size(self) -> int:
        """Cards dealt face up: 8 for two players, 6 otherwise."""
        return 8 if self.players == 2 else 6

    @property
    def playing_seats(self) -> int:
        """Seats that play a round (4 players: one sits out)."""
        return 3 if self.players == 4 else self.players

    @property
    def round_points_bound(self) -> int:
        """An upper bound of the points any one seat can win or lose in one round under these rules.

        Derived from the rules alone, never from a deal (so it holds for every round): the base
        score of the whole deck (every category is at its largest with every card), a go on each of
        the seat's turns, every multiplier of the winner and of a loser at once, each loser's bill
        (three players: one loser may pay both), and every instant payment every seat could make.
        The rules' validation keeps ``round_points_bound × point_value`` within ``ROUND_MONEY_MAX``.

        >>> Rules.preset("standard").round_points_bound
        35127316
        >>> Rules.preset("standard").round_points_bound * 100 < ROUND_MONEY_MAX
        True
        """
        return _round_points_bound(self)

    @staticmethod
    def preset(name: str, players: int | None = None, **overrides: Any) -> Rules:
        """The named preset for ``players`` seats, with per-game ``overrides``.

        Fields whose preset value depends on the player count (threshold, payments)
        take the value for ``players`` unless overridden.
        """
        if name not in PRESET_PLAYERS:
            raise InvalidRules("name", f"unknown preset {name!r}; presets are {', '.join(PRESETS)}")
        n = PRESET_PLAYERS[name][0] if players is None else players
        if not isinstance(n, int) or isinstance(n, bool) or n not in (2, 3, 4):
            raise InvalidRules("players", f"must be 2, 3 or 4, not {n!r}")
        unknown = sorted(set(overrides) - set(FIELDS))
        if unknown:
            raise InvalidRules(unknown[0], "no such rule")
        base = _preset_fields(name, n)
        base.update(_normalize(overrides))
        try:
            return Rules(**base)
        except InvalidRules as exc:
            if n in PRESET_PLAYERS[name] or exc.field in overrides:
                raise
            # The preset's own rules do not hold for this many players: say so, not which of its rules.
            raise InvalidRules("players", _not_for(name, n)) from exc

    def replace(self, **overrides: Any) -> Rules:
        """A copy with some fields changed (validated again)."""
        unknown = sorted(set(overrides) - set(FIELDS))
        if unknown:
            raise InvalidRules(unknown[0], "no such rule")
        return dataclasses.replace(self, **_normalize(overrides))

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON-ready data (sets as sorted lists)."""
        out: dict[str, Any] = {}
        for name in FIELDS:
            value = getattr(self, name)
            if isinstance(value, frozenset):
                value = sorted(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Rules:
        """Inverse of ``to_dict``; validates like the constructor."""
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise InvalidRules(unknown[0], "no such rule")
        return Rules(**_normalize(data))


_COUNT_WORDS: Final = {2: "two", 3: "three", 4: "four"}


def _not_for(name: str, players: int) -> str:
    """Why preset ``name`` cannot seat ``players``, for a person: ``arcade is a two-player preset ...``."""
    seats = sorted(PRESET_PLAYERS[name])
    words = [_COUNT_WORDS[n] for n in seats]
    counts = words[0] if len(words) == 1 else f"{'-, '.join(words[:-1])}- or {words[-1]}"
    return (f"{name} is a {counts}-player preset: play it with {' or '.join(map(str, seats))} players, "
            f"or choose another preset for {players}")


def _normalize(values: dict[str, Any]) -> dict[str, Any]:
    """Accept JSON-shaped values: lists for the set and tuple fields."""
    out = dict(values)
    steal = out.get("last_turn_no_steal")
    if isinstance(steal, (list, tuple, set)):
        out["last_turn_no_steal"] = frozenset(steal)
    payments = out.get("ppeok_payments")
    if isinstance(payments, list):
        out["ppeok_payments"] = tuple(payments)
    return out


FIELDS: Final[tuple[str, ...]] = tuple(f.name for f in dataclasses.fields(Rules))
"""Rule field names in declaration order."""


def _preset_fields(name: str, n: int) -> dict[str, Any]:
    two = n == 2
    if name == "standard":
        return {"name": name, "players": n, "go_threshold": 7 if two else 3}
    if name == "simple":
        return {
            "name": name, "players": n, "bonus_cards": 0, "go_threshold": 7 if two else 3,
            "shake_bomb": False, "meongbak": False, "pibak": False, "gwangbak": False,
            "gobak": False, "nagari_carry": False, "gukjin": "never",
        }
    if name == "classic":
        k = 7 if two else 3
        return {
            "name": name, "players": n, "bonus_cards": 2, "packet_deal": True,
            "go_threshold": k, "shake_bomb_count": "per_declaration",
            "pibak_max_pi": 7 if two else 5,
            "last_turn_no_steal": frozenset({"sseul", "jjok"}), "last_turn_ppeok_captured": True,
            "chongtong": True, "ppeok_payments": (k, 2 * k, 3 * k),
            "three_ppeok": "win", "three_ppeok_points": k, "first_ttadak_payment": k,
            "heodang": True,
        }
    if name == "house":
        k = 7 if two else 3
        return {
            "name": name, "players": n, "bonus_cards": 0, "go_threshold": k,
            "go_scoring": "additive", "shake_bomb_count": "per_declaration",
            "last_turn_no_steal": frozenset({"sseul", "ttadak", "jjok"}),
            "chongtong": True, "ppeok_payments": (k,), "three_ppeok": "win",
            "three_ppeok_points": k, "point_value": 100,
        }
    # arcade
    return {
        "name": name, "players": n, "bonus_cards": 0, "go_threshold": 3,
        "go_scoring": "additive", "last_action_go": "allowed", "exhausted": "best_score",
        "shake_bomb_count": "per_declaration", "pibak_max_pi": 4,
        "pibak_requires_winner_pi": False, "pibak_zero_exempt": False,
        "sseul_mode": "point", "last_turn_no_steal": frozenset(), "gukjin": "on_capture",
        "chongtong": True, "three_ppeok": "lose", "first_leader": "seat0",
    }


_INT_FIELDS: Final = (
    "players", "bonus_cards", "go_threshold", "meongbak_min_yeol", "pibak_max_pi",
    "chongtong_points", "three_ppeok_points", "first_ttadak_payment", "heodang_turns",
    "heodang_points", "point_value", "gwang_sale_price",
)
_BOOL_FIELDS: Final = (
    "packet_deal", "shake_bomb", "shake_bomb_when_losing", "meongbak", "pibak",
    "pibak_requires_winner_pi", "pibak_zero_exempt", "gwangbak", "gobak", "nagari_carry",
    "last_turn_ppeok_captured", "chongtong", "heodang",
)
_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "go_scoring": get_args(GoScoring),
    "last_action_go": get_args(LastActionGo),
    "exhausted": get_args(Exhausted),
    "shake_bomb_count": get_args(ShakeCount),
    "sseul_mode": get_args(SseulMode),
    "gukjin": get_args(GukjinMode),
    "three_ppeok": get_args(ThreePpeok),
    "first_leader": get_args(FirstLeader),
}


@functools.cache
def _deck_score(bonus_cards: int, sseul: int) -> int:
    """The largest base score of a pile holding the whole deck (국진 either way) and ``sseul`` 쓸."""
    cards = deck(bonus_cards)
    return max(score(cards, converted, sseul).total for converted in (False, True))


def _round_points_bound(r: Rules) -> int:
    turns = r.hand_size  # a hand never grows, and each turn plays at least one of its cards
    base = _deck_score(r.bonus_cards, turns if r.sseul_mode == "point" else 0)
    go_max = max(max(go_score(base, gos, r.go_scoring) for gos in range(turns + 1)), r.go_threshold)
    declarations = turns // 3 if r.shake_bomb else 0  # each 흔들기 / 폭탄 takes three cards of a month
    winner_mult = (1 << declarations) * 2 * 2  # 흔들기/폭탄, 멍박, 나가리 carry
    loser_mult = 2 * 2 * 2 * (1 << declarations)  # 피박, 광박, 고박, own 흔들기/폭탄
    fixed = max(r.chongtong_points, r.three_ppeok_points, r.heodang_points) * 2  # × carry
    bill = max(go_max * winner_mult * loser_mult, fixed)
    playing = r.playing_seats
    bills = (playing - 1) * bill
    instant = playing * (playing - 1) * (sum(r.ppeok_payments) + r.first_ttadak_payment)
    sale = r.gwang_sale_price * turns * playing
    return bills + instant + sale


def _validate(r: Rules) -> None:
    if not isinstance(r.name, str) or not r.name:
        raise InvalidRules("name", "must be a non-empty string")
    for name in _INT_FIELDS:
        value = getattr(r, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidRules(name, f"must be an integer, not {value!r}")
        if value < 0:
            raise InvalidRules(name, f"must not be negative, not {value}")
        limit = _LIMITS.get(name)
        if limit is not None and value > limit:
            raise InvalidRules(name, f"must be at most {limit:,}, not {value:,}")
    for name in _BOOL_FIELDS:
        if not isinstance(getattr(r, name), bool):
            raise InvalidRules(name, f"must be true or false, not {getattr(r, name)!r}")
    for name, choices in _CHOICES.items():
        if getattr(r, name) not in choices:
            raise InvalidRules(name, f"must be one of {', '.join(choices)}, not {getattr(r, name)!r}")
    if r.players not in (2, 3, 4):
        raise InvalidRules("players", f"must be 2, 3 or 4, not {r.players}")
    if r.bonus_cards not in (0, 2, 3):
        raise InvalidRules("bonus_cards", f"must be 0, 2 or 3, not {r.bonus_cards}")
    if r.go_threshold < 1:
        raise InvalidRules("go_threshold", "must be at least 1")
    if not isinstance(r.last_turn_no_steal, frozenset) or not r.last_turn_no_steal <= _LAST_TURN_EVENTS:
        raise InvalidRules(
            "last_turn_no_steal", f"must be a set drawn from {', '.join(sorted(_LAST_TURN_EVENTS))}"
        )
    if r.sseul_mode == "point" and "sseul" in r.last_turn_no_steal:
        raise InvalidRules("last_turn_no_steal", "sseul steals nothing when sseul_mode is 'point'")
    if not isinstance(r.ppeok_payments, tuple) or any(
        not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in r.ppeok_payments
    ):
        raise InvalidRules("ppeok_payments", "must be a list of non-negative integers")
    if len(r.ppeok_payments) > 3:
        raise InvalidRules("ppeok_payments", "at most three payments (첫뻑, 2연뻑, 3연뻑)")
    if any(p > POINTS_MAX for p in r.ppeok_payments):
        raise InvalidRules("ppeok_payments", f"each payment must be at most {POINTS_MAX:,}")
    if not r.shake_bomb and r.shake_bomb_when_losing:
        raise InvalidRules("shake_bomb_when_losing", "needs shake_bomb")
    if r.three_ppeok == "win" and r.three_ppeok_points < 1:
        raise InvalidRules("three_ppeok_points", "a winning 3뻑 must be worth at least 1 point")
    if r.three_ppeok != "win" and r.three_ppeok_points:
        raise InvalidRules("three_ppeok_points", "only meaningful when three_ppeok is 'win'")
    if r.chongtong and r.chongtong_points < 1:
        raise InvalidRules("chongtong_points", "must be at least 1 when chongtong is on")
    if r.heodang and (r.heodang_turns < 1 or r.heodang_points < 1):
        raise InvalidRules("heodang_turns" if r.heodang_turns < 1 else "heodang_points", "must be at least 1")
    if r.pibak and not r.pibak_zero_exempt and r.pibak_max_pi < 0:
        raise InvalidRules("pibak_max_pi", "must not be negative")
    if r.meongbak and r.meongbak_min_yeol < 1:
        raise InvalidRules("meongbak_min_yeol", "must be at least 1")
    if r.last_action_go == "allowed" and r.players != 2:
        raise InvalidRules("last_action_go", "'allowed' is defined for two players only")
    dealt = r.hand_size * r.players + r.floor_size
    if dealt > r.deck_size:
        raise InvalidRules("players", f"{r.players} players need {dealt} cards; the deck has {r.deck_size}")
    bound = _round_points_bound(r) if r.point_value else 0
    if bound * r.point_value > ROUND_MONEY_MAX:
        raise InvalidRules(
            "point_value",
            f"at most {ROUND_MONEY_MAX // bound:,} with these rules: a round can move up to {bound:,} points, "
            f"and a round's money must stay within {ROUND_MONEY_MAX:,}",
        )
