"""Helpers for tests and scenarios: scripted deals, an explicit ``Deal`` built from the few cards a
test names."""

from __future__ import annotations

from collections.abc import Sequence

from .cards import MONTH, is_bonus
from .dealing import Deal
from .errors import InvalidDeal
from .rules import Rules


def scripted_deal(
    rules: Rules,
    hands: Sequence[Sequence[int]],
    floor: Sequence[int],
    stock: Sequence[int] = (),
    *,
    dealer: int = 0,
    allow_four: bool = False,
) -> Deal:
    """An explicit deal: ``floor`` complete, ``hands`` topped up, ``stock`` listed top first.

    Every card not named anywhere is a filler. Hands are topped up with fillers in ascending id
    order, one card per seat in turn; the remaining month cards follow ``stock`` in ascending order
    and the unnamed bonus cards go to the very bottom, so a short script never flips them. A hand
    holding four of a month is refused unless ``allow_four`` (총통 and redeal scripts).

    >>> d = scripted_deal(Rules.preset("simple"), [[0, 1]], list(range(40, 48)), [2])
    >>> d.hands[0][:3], d.stock[0], len(d.stock)
    ((0, 1, 3), 2, 20)
    """
    if len(floor) != rules.floor_size:
        raise InvalidDeal(f"give the whole floor: {rules.floor_size} cards, not {len(floor)}")
    named = [c for h in hands for c in h] + list(floor) + list(stock)
    if len(named) != len(set(named)):
        raise InvalidDeal("a card is named twice")
    taken = set(named)
    rest = [c for c in range(rules.deck_size) if c not in taken]
    fillers = [c for c in rest if not is_bonus(c)]
    bonus = [c for c in rest if is_bonus(c)]
    full = [list(h) for h in hands] + [[] for _ in range(rules.players - len(hands))]
    seat = 0
    while any(len(h) < rules.hand_size for h in full):
        if len(full[seat]) < rules.hand_size:
            full[seat].append(fillers.pop(0))
        seat = (seat + 1) % len(full)
    if not allow_four:
        for h in full:
            months = [MONTH[c] for c in h if not is_bonus(c)]
            if any(months.count(m) >= 4 for m in months):
                raise InvalidDeal(f"four of a month in hand {sorted(h)}")
    return Deal(tuple(tuple(sorted(h)) for h in full), tuple(floor), tuple(stock) + tuple(fillers) + tuple(bonus),
                dealer)
