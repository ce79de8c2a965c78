"""What a decision is worth before it is made, from a view alone: the settlement a stop would bring
and what a 고 adds, 국진's score either way, what each legal play takes from the floor, and how near
every seat is to the sets that score (고도리, 홍단, 청단, 초단, 광).

Every value is a function of a ``View`` (nothing else goes in), so it holds only what the viewer may
know; the tests redeal the hidden cards and find each value unchanged. Scoring and settling are the
engine's own (``scoring``, ``settlement``, through ``determinize.stop_settlement``), never a copy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from .actions import Action, Bomb, FlipOnly, Go, PlayCard
from .cards import CHEONGDAN, CHODAN, GODORI, GWANG_CARDS, HONGDAN, MONTH, mask_of
from .determinize import determinize, stop_settlement, unknown_cards
from .errors import EngineError
from .play import apply
from .scoring import Score, go_score, score
from .settlement import Settlement
from .state import Phase
from .views import View

# ------------------------------------------------------------------------------ 고 and 스톱


@dataclass(frozen=True, slots=True)
class GoTerms:
    """How a go count turns a base score into the go score: ``go_score = (base + add) × multiplier``
    (``scoring.go_score``, by the rules' ``go_scoring``)."""

    gos: int
    add: int
    """Points the gos add to the base."""
    multiplier: int
    """The doubling of the gos (1 up to two gos, then ×2 per go)."""
    go_score: int
    """The go score of the seat's current base with ``gos`` gos."""


def go_terms(base: int, gos: int, scoring: str) -> GoTerms:
    """The terms of ``scoring.go_score(base, gos, scoring)``; each go up to the second adds a point,
    each go from the third doubles (``standard``: on base + 2; ``additive``: on base + gos).

    >>> go_terms(8, 1, "standard"), go_terms(8, 3, "standard").go_score, go_terms(8, 3, "additive").add
    (GoTerms(gos=1, add=1, multiplier=1, go_score=9), 20, 3)
    """
    add = gos if gos <= 2 or scoring != "standard" else 2
    multiplier = 1 << (gos - 2) if gos > 2 else 1
    total = go_score(base, gos, scoring)
    if (base + add) * multiplier != total:  # pragma: no cover - the terms are go_score's own
        raise EngineError(f"go terms of {gos} gos do not make the go score {total}")
    return GoTerms(gos, add, multiplier, total)


@dataclass(frozen=True, slots=True)
class StopPreview:
    """At the viewer's 고/스톱 decision: what a stop now brings, and what one more 고 adds."""

    settlement: Settlement
    """The engine's settlement of a stop now: every payer's bill with its factors named (피박, 광박,
    멍박, 고박, 흔들기/폭탄, the 나가리 carry), points and money; a payer pays ``pays`` points, that is
    ``pays × point_value`` money."""
    now: GoTerms
    """The go terms of the stop now (the gos declared so far)."""
    next_go: GoTerms
    """The go terms after one more 고, at the current base: what a later stop would be paid on at
    the least (before the factors), and what a round that ends with the 고 is paid on."""
    next_base: int
    """After the 고, the seat decides again only once its base reaches this (above the current base)."""
    gobak: bool
    """Under these rules, a seat that has gone and then loses pays 고박 (×2 in 2 players; in 3, the
    bills of every loser)."""
    go_settlement: Settlement | None
    """Set when a 고 now ends the round at once (arcade's last 고, or no seat has a turn left):
    the settlement it brings."""


def stop_preview(v: View) -> StopPreview | None:
    """The viewer's ``StopPreview`` when it decides 고 or 스톱; otherwise ``None``.

    >>> from gostop.engine import Phase, Rules, Stop, apply, legal_actions, new_round, view
    >>> state, _ = new_round(Rules.preset("standard"), seed=1)
    >>> while state.phase is not Phase.GO_STOP:
    ...     state, _ = apply(state, legal_actions(state)[0])
    >>> p = stop_preview(view(state, state.to_move))
    >>> p.settlement == apply(state, Stop())[0].settlement, p.next_go.gos == p.now.gos + 1
    (True, True)
    """
    if v.phase is not Phase.GO_STOP or v.viewer != v.to_move or v.rules is None:
        return None
    settlement = stop_settlement(v)
    me = v.seats[v.viewer]
    base = me.score.total
    scoring = v.rules.go_scoring
    after, _ = apply(determinize(v, random.Random(0)), Go())
    return StopPreview(
        settlement=settlement,
        now=go_terms(base, me.gos, scoring),
        next_go=go_terms(base, me.gos + 1, scoring),
        next_base=base + 1,
        gobak=v.rules.gobak,
        go_settlement=after.settlement,
    )


@dataclass(frozen=True, slots=True)
class GukjinPreview:
    """At the viewer's 국진 decision: its base score with 국진 kept as a 열끗 and made a 쌍피."""

    keep: Score
    convert: Score


def gukjin_preview(v: View) -> GukjinPreview | None:
    """The viewer's ``GukjinPreview`` when it decides 국진; otherwise ``None``."""
    if v.phase is not Phase.GUKJIN or v.viewer != v.to_move:
        return None
    me = v.seats[v.viewer]
    return GukjinPreview(score(me.captured, False, me.sseul), score(me.captured, True, me.sseul))


# ------------------------------------------------------------------------------ plays


@dataclass(frozen=True, slots=True)
class CaptureHint:
    """What a play takes from the floor with the played cards themselves, before the flip (the flip
    comes from the stock, unknown until it is made).

    - no card of the month on the floor: ``takes`` and ``choose_from`` are empty (the card is laid);
    - one: ``takes`` is it (a flip of the same month would make it a 뻑 instead);
    - two: ``choose_from`` holds both; the seat chooses one (``ChooseCapture``) before the flip (a
      flip of the same month would take the other too: 따닥);
    - three (a stack): ``takes`` is all three;
    - 폭탄: ``takes`` is the month's one floor card; 빈 내기 (``FlipOnly``) takes nothing.
    """

    takes: tuple[int, ...] = ()
    choose_from: tuple[int, ...] = ()
    month_unseen: int = 0
    """Cards of the played month the viewer cannot see (other hands, the stock): 0 means the flip
    cannot be of that month (no 쪽, 뻑 or 따닥 on this play)."""


def capture_hint(v: View, action: Action) -> CaptureHint | None:
    """The ``CaptureHint`` of a play (``PlayCard``, ``Bomb``, ``FlipOnly``) in the viewer's
    ``PLAY`` decision; ``None`` for any other action or phase."""
    if v.phase is not Phase.PLAY:
        return None
    return _hint(action, *_months(v))


def capture_hints(v: View) -> tuple[CaptureHint | None, ...]:
    """``capture_hint`` of each of the view's legal actions, in their order."""
    if v.phase is not Phase.PLAY or not v.legal_actions:
        return (None,) * len(v.legal_actions)
    floor, unseen = _months(v)
    return tuple(_hint(a, floor, unseen) for a in v.legal_actions)


def _months(v: View) -> tuple[list[tuple[int, ...]], list[int]]:
    """Per month: its floor cards (ascending), and how many of its cards the viewer cannot see."""
    floor: list[tuple[int, ...]] = [()] * 13
    for c in sorted(v.floor):
        floor[MONTH[c]] += (c,)
    unseen = [0] * 13
    for c in unknown_cards(v):
        unseen[MONTH[c]] += 1
    return floor, unseen


def _hint(action: Action, floor: list[tuple[int, ...]], unseen: list[int]) -> CaptureHint | None:
    if isinstance(action, PlayCard):
        month = MONTH[action.card]
        if len(floor[month]) == 2:
            return CaptureHint((), floor[month], unseen[month])
    elif isinstance(action, Bomb):
        month = action.month
    elif isinstance(action, FlipOnly):
        return CaptureHint()
    else:
        return None
    return CaptureHint(floor[month], (), unseen[month])


# ------------------------------------------------------------------------------ sets within reach


@dataclass(frozen=True, slots=True)
class SetReach:
    """One seat's progress on one set."""

    captured: int
    """Cards of the set in the seat's pile."""
    open: int
    """Cards of the set in no seat's pile yet: the most the seat could still add (a set is within
    reach while ``captured + open`` is its size; 광 score from three)."""


@dataclass(frozen=True, slots=True)
class Reach:
    """A seat's 고도리, 홍단, 청단, 초단 (three cards each) and 광 (five), from public cards only:
    the captured piles, which every viewer sees alike (a set's cards are never stolen)."""

    godori: SetReach
    hongdan: SetReach
    cheongdan: SetReach
    chodan: SetReach
    gwang: SetReach


SETS: Final[tuple[tuple[str, frozenset[int]], ...]] = (
    ("godori", GODORI), ("hongdan", HONGDAN), ("cheongdan", CHEONGDAN), ("chodan", CHODAN),
    ("gwang", GWANG_CARDS),
)
"""The sets of ``Reach``, by field name, with their cards."""
_SET_MASKS: Final = tuple(mask_of(cards) for _, cards in SETS)


def reach(v: View) -> tuple[Reach, ...]:
    """Every seat's ``Reach``, in seat order: the same for every viewer of the same round.

    >>> from gostop.engine import Rules, new_round, view
    >>> state, _ = new_round(Rules.preset("standard"), seed=3)
    >>> reach(view(state))[0].godori
    SetReach(captured=0, open=3)
    """
    piles = [mask_of(s.captured) for s in v.seats]
    everyone = 0
    for pile in piles:
        everyone |= pile
    return tuple(
        Reach(*[SetReach((mask & pile).bit_count(), (mask & ~everyone).bit_count()) for mask in _SET_MASKS])
        for pile in piles
    )
