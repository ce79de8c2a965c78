"""Base score of a captured pile, by category, as the spec's §6 defines it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .cards import BIGWANG, BIT, CHEONGDAN, CHODAN, GODORI, GUKJIN, HONGDAN, KIND, PI_VALUE, Kind, mask_of

if TYPE_CHECKING:
    from .state import State

_PI, _GUKJIN, _YEOL, _BIRD, _TTI, _HONG, _CHEONG, _CHO, _GWANG, _BIGWANG = range(10)


def _role(c: int) -> int:
    kind = KIND[c]
    if kind is Kind.PI:
        return _PI
    if c == GUKJIN:
        return _GUKJIN
    if kind is Kind.YEOL:
        return _BIRD if c in GODORI else _YEOL
    if kind is Kind.TTI:
        if c in HONGDAN:
            return _HONG
        if c in CHEONGDAN:
            return _CHEONG
        return _CHO if c in CHODAN else _TTI
    return _BIGWANG if c == BIGWANG else _GWANG


_ROLE: Final = tuple(_role(c) for c in range(len(KIND)))


def _mask(keep: Callable[[int], bool]) -> int:
    return sum(BIT[c] for c in range(len(KIND)) if keep(c))


# The card masks of the scoring categories (Final: module constants the compiled engine reads as
# C statics, not from the module's dictionary).
_GWANG_MASK: Final = _mask(lambda c: _ROLE[c] >= _GWANG)
_BIGWANG_BIT: Final = BIT[BIGWANG]
_YEOL_MASK: Final = _mask(lambda c: _GUKJIN <= _ROLE[c] <= _BIRD)
"""열끗, 국진 included (as long as it is not converted)."""
_GUKJIN_BIT: Final = BIT[GUKJIN]
_TTI_MASK: Final = _mask(lambda c: _TTI <= _ROLE[c] <= _CHO)
_PI1_MASK: Final = _mask(lambda c: _ROLE[c] == _PI and PI_VALUE[c] == 1)
_PI2_MASK: Final = _mask(lambda c: _ROLE[c] == _PI and PI_VALUE[c] == 2)
_PI3_MASK: Final = _mask(lambda c: _ROLE[c] == _PI and PI_VALUE[c] == 3)
"""피 worth 1, 2 and 3."""
_GODORI_MASK: Final = _mask(lambda c: c in GODORI)
_HONGDAN_MASK: Final = _mask(lambda c: c in HONGDAN)
_CHEONGDAN_MASK: Final = _mask(lambda c: c in CHEONGDAN)
_CHODAN_MASK: Final = _mask(lambda c: c in CHODAN)


@dataclass(frozen=True, slots=True, init=False)
class Score:
    """A seat's base score, broken down so that every point is explained.

    Counts are the raw material (for 박 tests); the other fields are points.
    """

    gwang_count: int = 0
    has_bigwang: bool = False
    yeol_count: int = 0
    tti_count: int = 0
    pi_value: int = 0
    sseul_count: int = 0
    gwang: int = 0
    yeol: int = 0
    godori: int = 0
    tti: int = 0
    hongdan: int = 0
    cheongdan: int = 0
    chodan: int = 0
    pi: int = 0
    sseul: int = 0

    def __init__(
        self,
        gwang_count: int = 0, has_bigwang: bool = False, yeol_count: int = 0, tti_count: int = 0, pi_value: int = 0,
        sseul_count: int = 0, gwang: int = 0, yeol: int = 0, godori: int = 0, tti: int = 0, hongdan: int = 0,
        cheongdan: int = 0, chodan: int = 0, pi: int = 0, sseul: int = 0,
    ) -> None:
        object.__setattr__(self, "gwang_count", gwang_count)
        object.__setattr__(self, "has_bigwang", has_bigwang)
        object.__setattr__(self, "yeol_count", yeol_count)
        object.__setattr__(self, "tti_count", tti_count)
        object.__setattr__(self, "pi_value", pi_value)
        object.__setattr__(self, "sseul_count", sseul_count)
        object.__setattr__(self, "gwang", gwang)
        object.__setattr__(self, "yeol", yeol)
        object.__setattr__(self, "godori", godori)
        object.__setattr__(self, "tti", tti)
        object.__setattr__(self, "hongdan", hongdan)
        object.__setattr__(self, "cheongdan", cheongdan)
        object.__setattr__(self, "chodan", chodan)
        object.__setattr__(self, "pi", pi)
        object.__setattr__(self, "sseul", sseul)

    @property
    def total(self) -> int:
        """The base score: every category added up."""
        return (
            self.gwang + self.yeol + self.godori + self.tti + self.hongdan
            + self.cheongdan + self.chodan + self.pi + self.sseul
        )

    def categories(self) -> tuple[tuple[str, int], ...]:
        """Non-zero point categories as (name, points), in a fixed order."""
        items = (
            ("gwang", self.gwang), ("yeol", self.yeol), ("godori", self.godori),
            ("tti", self.tti), ("hongdan", self.hongdan), ("cheongdan", self.cheongdan),
            ("chodan", self.chodan), ("pi", self.pi), ("sseul", self.sseul),
        )
        return tuple((n, v) for n, v in items if v)


def same_score(a: Score, b: Score) -> bool:
    """``a == b``, field by field: the comparison of the engine's hot path (``ScoreChanged``). The
    dataclass's own ``__eq__`` builds two tuples, and stays interpreted in the compiled engine."""
    return a is b or (
        a.gwang_count == b.gwang_count and a.has_bigwang == b.has_bigwang and a.yeol_count == b.yeol_count
        and a.tti_count == b.tti_count and a.pi_value == b.pi_value and a.sseul_count == b.sseul_count
        and a.gwang == b.gwang and a.yeol == b.yeol and a.godori == b.godori and a.tti == b.tti
        and a.hongdan == b.hongdan and a.cheongdan == b.cheongdan and a.chodan == b.chodan and a.pi == b.pi
        and a.sseul == b.sseul
    )


def pi_value(cards: Iterable[int], gukjin_converted: bool) -> int:
    """Total 피 value of a pile (a converted 국진 counts 2)."""
    total = 0
    for c in cards:
        if c == GUKJIN:
            total += 2 if gukjin_converted else 0
        else:
            total += PI_VALUE[c]
    return total


def score(cards: Iterable[int], gukjin_converted: bool = False, sseul_points: int = 0) -> Score:
    """Score a captured pile.

    ``gukjin_converted``: card 32 in this pile counts as a 쌍피, not a 열끗.
    ``sseul_points``: 쓸 points (``arcade``), added to the base score.

    >>> score([0, 8, 28]).total, score([0, 8, 44]).total
    (3, 2)
    >>> s = score([1, 5, 9, 21, 33, 37]); (s.tti, s.hongdan, s.cheongdan, s.total)
    (2, 3, 3, 8)
    """
    gwang = yeol = tti = pi = 0
    bigwang = False
    birds = hong = cheong = cho = 0
    for c in cards:
        role = _ROLE[c]
        if role == _PI:
            pi += PI_VALUE[c]
        elif role == _GUKJIN:
            if gukjin_converted:
                pi += 2
            else:
                yeol += 1
        elif role <= _BIRD:
            yeol += 1
            if role == _BIRD:
                birds += 1
        elif role <= _CHO:
            tti += 1
            if role == _HONG:
                hong += 1
            elif role == _CHEONG:
                cheong += 1
            elif role == _CHO:
                cho += 1
        else:
            gwang += 1
            if role == _BIGWANG:
                bigwang = True
    gwang_pts = _gwang_points(gwang, bigwang)
    return Score(
        gwang_count=gwang,
        has_bigwang=bigwang,
        yeol_count=yeol,
        tti_count=tti,
        pi_value=pi,
        sseul_count=sseul_points,
        gwang=gwang_pts,
        yeol=yeol - 4 if yeol >= 5 else 0,
        godori=5 if birds == 3 else 0,
        tti=tti - 4 if tti >= 5 else 0,
        hongdan=3 if hong == 3 else 0,
        cheongdan=3 if cheong == 3 else 0,
        chodan=3 if cho == 3 else 0,
        pi=pi - 9 if pi >= 10 else 0,
        sseul=sseul_points,
    )


def _gwang_points(gwang: int, bigwang: bool) -> int:
    if gwang == 5:
        return 15
    if gwang == 4:
        return 4
    if gwang == 3:
        return 2 if bigwang else 3
    return 0


def mask_total(mask: int, gukjin_converted: bool = False, sseul_points: int = 0) -> int:
    """``score(cards, gukjin_converted, sseul_points).total`` of the pile with card mask ``mask``.

    The engine's hot path needs only the total (go/stop and the end of a turn), many times
    per round: counting bits of a mask costs a fraction of building a ``Score``.

    >>> from .cards import mask_of
    >>> mask_total(mask_of([0, 8, 28])), mask_total(mask_of([1, 5, 9, 21, 33, 37]))
    (3, 8)
    """
    yeol = (mask & _YEOL_MASK).bit_count()
    pi = (mask & _PI1_MASK).bit_count() + 2 * (mask & _PI2_MASK).bit_count() + 3 * (mask & _PI3_MASK).bit_count()
    if gukjin_converted and mask & _GUKJIN_BIT:
        yeol -= 1
        pi += 2
    total = sseul_points
    gwang = (mask & _GWANG_MASK).bit_count()
    if gwang >= 3:
        total += _gwang_points(gwang, bool(mask & _BIGWANG_BIT))
    if yeol >= 5:
        total += yeol - 4
    tti = (mask & _TTI_MASK).bit_count()
    if tti >= 5:
        total += tti - 4
    if pi >= 10:
        total += pi - 9
    if mask & _GODORI_MASK == _GODORI_MASK:
        total += 5
    if mask & _HONGDAN_MASK == _HONGDAN_MASK:
        total += 3
    if mask & _CHEONGDAN_MASK == _CHEONGDAN_MASK:
        total += 3
    if mask & _CHODAN_MASK == _CHODAN_MASK:
        total += 3
    return total


def mask_score(mask: int, gukjin_converted: bool = False, sseul_points: int = 0) -> Score:
    """``score(cards, gukjin_converted, sseul_points)`` of the pile with card mask ``mask``.

    >>> from .cards import mask_of
    >>> mask_score(mask_of([1, 5, 9, 21, 33, 37])) == score([1, 5, 9, 21, 33, 37])
    True
    """
    yeol = (mask & _YEOL_MASK).bit_count()
    pi = (mask & _PI1_MASK).bit_count() + 2 * (mask & _PI2_MASK).bit_count() + 3 * (mask & _PI3_MASK).bit_count()
    if gukjin_converted and mask & _GUKJIN_BIT:
        yeol -= 1
        pi += 2
    gwang = (mask & _GWANG_MASK).bit_count()
    bigwang = bool(mask & _BIGWANG_BIT)
    tti = (mask & _TTI_MASK).bit_count()
    return Score(
        gwang, bigwang, yeol, tti, pi, sseul_points,
        _gwang_points(gwang, bigwang),
        yeol - 4 if yeol >= 5 else 0,
        5 if mask & _GODORI_MASK == _GODORI_MASK else 0,
        tti - 4 if tti >= 5 else 0,
        3 if mask & _HONGDAN_MASK == _HONGDAN_MASK else 0,
        3 if mask & _CHEONGDAN_MASK == _CHEONGDAN_MASK else 0,
        3 if mask & _CHODAN_MASK == _CHODAN_MASK else 0,
        pi - 9 if pi >= 10 else 0,
        sseul_points,
    )


def go_score(base: int, gos: int, scoring: str) -> int:
    """Final score from base score ``base`` and go count ``gos``.

    >>> go_score(8, 2, "standard"), go_score(8, 3, "standard"), go_score(7, 3, "standard")
    (10, 20, 18)
    >>> go_score(3, 1, "standard"), go_score(3, 3, "standard"), go_score(3, 3, "additive")
    (4, 10, 12)
    """
    if gos <= 0:
        return base
    if scoring == "standard":
        if gos <= 2:
            return base + gos
        return (base + 2) * (1 << (gos - 2))
    if gos <= 2:
        return base + gos
    return (base + gos) * (1 << (gos - 2))


EMPTY_SCORE: Final = Score()
"""The score of an empty pile."""

_SCORE_MEMO: Final[dict[tuple[tuple[int, ...], bool, int], Score]] = {}
_SCORE_MEMO_LIMIT: Final = 1 << 14


def pile_score(captured: tuple[int, ...], converted: bool, sseul: int) -> Score:
    """``scoring.score`` memoized: piles recur from step to step (a pure cache, bounded)."""
    key = (captured, converted, sseul)
    hit = _SCORE_MEMO.get(key)
    if hit is None:
        if len(_SCORE_MEMO) >= _SCORE_MEMO_LIMIT:
            _SCORE_MEMO.clear()
        hit = _SCORE_MEMO[key] = mask_score(mask_of(captured), converted, sseul)
    return hit


def seat_score(state: State, seat: int) -> Score:
    """A seat's base score, recomputed from its pile."""
    s = state.seats[seat]
    return pile_score(s.captured, state.gukjin == "converted", s.sseul)
