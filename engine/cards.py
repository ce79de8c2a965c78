"""Hwatu cards: canonical ids, codes, kinds and the deck of each preset.

Card ids are the spec's canonical integers: ``(month - 1) * 4 + slot`` for the 48
month cards and 48, 49, 50 for the bonus cards. They are the identity of a card
everywhere: engine, wire protocol, logs and tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import Final


class Kind(IntEnum):
    """Scoring category of a card (bonus cards are 피)."""

    GWANG = 0
    YEOL = 1
    TTI = 2
    PI = 3


HIDDEN: Final = -1
"""Placeholder for a card a viewer may not see (redacted views and events)."""

GUKJIN: Final = 32
"""9월 열끗 (국진): a 열끗 that may be converted to a 쌍피."""

BIGWANG: Final = 44
BONUS_SSANGPI_A: Final = 48
BONUS_SSANGPI_B: Final = 49
BONUS_SSEURIPI: Final = 50
MONTH_CARDS: Final = 48
ALL_CARDS: Final = 51

_MONTH_NAMES: Final = (
    "송학", "매조", "벚꽃", "흑싸리", "난초", "모란",
    "홍싸리", "공산", "국화", "단풍", "오동", "비",
)

# (kind, code suffix, korean name) for each month card, in id order.
_LAYOUT: Final[tuple[tuple[Kind, str, str], ...]] = (
    (Kind.GWANG, "gwang", "1월 광"), (Kind.TTI, "tti", "1월 홍단"),
    (Kind.PI, "pi-a", "1월 피"), (Kind.PI, "pi-b", "1월 피"),
    (Kind.YEOL, "yeol", "2월 고도리"), (Kind.TTI, "tti", "2월 홍단"),
    (Kind.PI, "pi-a", "2월 피"), (Kind.PI, "pi-b", "2월 피"),
    (Kind.GWANG, "gwang", "3월 광"), (Kind.TTI, "tti", "3월 홍단"),
    (Kind.PI, "pi-a", "3월 피"), (Kind.PI, "pi-b", "3월 피"),
    (Kind.YEOL, "yeol", "4월 고도리"), (Kind.TTI, "tti", "4월 초단"),
    (Kind.PI, "pi-a", "4월 피"), (Kind.PI, "pi-b", "4월 피"),
    (Kind.YEOL, "yeol", "5월 열끗"), (Kind.TTI, "tti", "5월 초단"),
    (Kind.PI, "pi-a", "5월 피"), (Kind.PI, "pi-b", "5월 피"),
    (Kind.YEOL, "yeol", "6월 열끗"), (Kind.TTI, "tti", "6월 청단"),
    (Kind.PI, "pi-a", "6월 피"), (Kind.PI, "pi-b", "6월 피"),
    (Kind.YEOL, "yeol", "7월 열끗"), (Kind.TTI, "tti", "7월 초단"),
    (Kind.PI, "pi-a", "7월 피"), (Kind.PI, "pi-b", "7월 피"),
    (Kind.GWANG, "gwang", "8월 광"), (Kind.YEOL, "yeol", "8월 고도리"),
    (Kind.PI, "pi-a", "8월 피"), (Kind.PI, "pi-b", "8월 피"),
    (Kind.YEOL, "yeol", "9월 국진"), (Kind.TTI, "tti", "9월 청단"),
    (Kind.PI, "pi-a", "9월 피"), (Kind.PI, "pi-b", "9월 피"),
    (Kind.YEOL, "yeol", "10월 열끗"), (Kind.TTI, "tti", "10월 청단"),
    (Kind.PI, "pi-a", "10월 피"), (Kind.PI, "pi-b", "10월 피"),
    (Kind.GWANG, "gwang", "11월 광"), (Kind.PI, "pi-a", "11월 피"),
    (Kind.PI, "pi-b", "11월 피"), (Kind.PI, "ssangpi", "11월 쌍피"),
    (Kind.GWANG, "bigwang", "12월 비광"), (Kind.YEOL, "yeol", "12월 열끗"),
    (Kind.TTI, "tti", "12월 비띠"), (Kind.PI, "ssangpi", "12월 쌍피"),
)

KIND: Final[tuple[Kind, ...]] = tuple(k for k, _, _ in _LAYOUT) + (Kind.PI,) * 3
"""Kind of each card id."""

MONTH: Final[tuple[int, ...]] = tuple(i // 4 + 1 for i in range(MONTH_CARDS)) + (0, 0, 0)
"""Month (1-12) of each card id; 0 for bonus cards, which match nothing."""

PI_VALUE: Final[tuple[int, ...]] = tuple(
    (2 if suffix == "ssangpi" else 1) if kind is Kind.PI else 0 for kind, suffix, _ in _LAYOUT
) + (2, 2, 3)
"""피 value of each card (0 for non-피; 국진 counts 2 only once converted)."""

CODE: Final[tuple[str, ...]] = tuple(
    f"{i // 4 + 1:02d}-{suffix}" for i, (_, suffix, _) in enumerate(_LAYOUT)
) + ("bonus-ssangpi-a", "bonus-ssangpi-b", "bonus-sseuripi")
"""Human-readable code of each card id."""

NAME: Final[tuple[str, ...]] = tuple(n for _, _, n in _LAYOUT) + (
    "보너스 쌍피", "보너스 쌍피", "보너스 쓰리피",
)
"""Korean display name of each card id."""

_BY_CODE: Final = {c: i for i, c in enumerate(CODE)}

GWANG_CARDS: Final = frozenset({0, 8, 28, 40, 44})
GODORI: Final = frozenset({4, 12, 29})
HONGDAN: Final = frozenset({1, 5, 9})
CHEONGDAN: Final = frozenset({21, 33, 37})
CHODAN: Final = frozenset({13, 17, 25})
BONUS_CARDS: Final = (BONUS_SSANGPI_A, BONUS_SSANGPI_B, BONUS_SSEURIPI)

BIT: Final[tuple[int, ...]] = tuple(1 << c for c in range(ALL_CARDS))
"""The bit of each card id in a card mask: a set of cards as one integer (bit ``c`` = card ``c``).

A month's four cards are four adjacent bits, and set tests become single integer operations
(the hot paths of scoring and legal moves).
"""


def mask_of(cards: Iterable[int]) -> int:
    """The card mask of distinct cards.

    >>> mask_of((0, 3, 50)) == 1 | 8 | 1 << 50
    True
    """
    mask = 0
    for c in cards:
        mask += BIT[c]
    return mask


def month_name(month: int) -> str:
    """Korean name of a month (1-12)."""
    return _MONTH_NAMES[month - 1]


def is_bonus(card: int) -> bool:
    """True for the bonus 피 cards, which have no month."""
    return card >= MONTH_CARDS


def card_code(card: int) -> str:
    """The code of a card id (``HIDDEN`` renders as ``??``)."""
    return "??" if card == HIDDEN else CODE[card]


def card_from_code(code: str) -> int:
    """The card id of a code; raises ``KeyError`` for an unknown code."""
    return _BY_CODE[code]


def deck(bonus_cards: int) -> tuple[int, ...]:
    """The deck in id order: 48 month cards plus the first ``bonus_cards`` bonus cards.

    >>> len(deck(0)), len(deck(2)), len(deck(3))
    (48, 50, 51)
    """
    if bonus_cards not in (0, 2, 3):
        raise ValueError(f"bonus_cards must be 0, 2 or 3, not {bonus_cards}")
    return tuple(range(MONTH_CARDS + bonus_cards))


# ------------------------------------------------------------------ months in a card mask

_MONTH_BITS: Final = mask_of(range(MONTH_CARDS))
_PAIR_LOW: Final = sum(0b0101 << (4 * i) for i in range(12))
"""Bits 0 and 2 of each month's four bits."""
_NIBBLE_LOW: Final = sum(1 << (4 * i) for i in range(12))
"""Bit 0 of each month's four bits."""


def holds_three_of_a_month(cards: Sequence[int]) -> bool:
    """Some month has three or four cards among ``cards`` (흔들기 and 폭탄 are possible).

    On the card mask, where each month is four adjacent bits: a month has three of its
    cards iff one of its bit pairs is full and the other is not empty.
    """
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & _PAIR_LOW
    some = (mask | (mask >> 1)) & _PAIR_LOW
    return bool(((full & (some >> 2)) | ((full >> 2) & some)) & _NIBBLE_LOW)


def four_of_a_month(cards: Sequence[int]) -> int:
    """The first month all four cards of which are among ``cards`` (0: none)."""
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & (mask >> 2) & (mask >> 3) & _NIBBLE_LOW
    return (full & -full).bit_length() // 4 + 1 if full else 0
