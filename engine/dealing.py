"""Setting up a round: the deal from the seed (or an explicit ``Deal``), bonus cards, redeals, and
the 총통 that ends a round before its first play.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .cards import CODE, MONTH, MONTH_CARDS, deck, four_of_a_month, is_bonus
from .errors import InvalidDeal
from .events import (
    BonusCaptured,
    Dealt,
    Event,
    InstantWin,
    RedealReason,
    Redealt,
)
from .rng import Rng
from .rules import Rules
from .scoring import EMPTY_SCORE
from .settlement import settle
from .state import START_STACK, Phase, State
from .working import Work

MAX_REDEALS: Final = 1000


@dataclass(frozen=True, slots=True, init=False)
class Deal:
    """An explicit deal: replaces the shuffle (tests, bug reports, duplicate deals).

    ``hands[i]`` is seat i's hand; ``stock`` is listed top first.
    """

    hands: tuple[tuple[int, ...], ...]
    floor: tuple[int, ...]
    stock: tuple[int, ...]
    dealer: int

    def __init__(
        self,
        hands: tuple[tuple[int, ...], ...], floor: tuple[int, ...], stock: tuple[int, ...], dealer: int,
    ) -> None:
        object.__setattr__(self, "hands", hands)
        object.__setattr__(self, "floor", floor)
        object.__setattr__(self, "stock", stock)
        object.__setattr__(self, "dealer", dealer)


# --------------------------------------------------------------------------- setup


def new_round(
    rules: Rules,
    seed: int,
    *,
    dealer: int | None = None,
    deal: Deal | None = None,
    carry: bool = False,
) -> tuple[State, list[Event]]:
    """Deal a round and return its first state and the deal's events.

    ``dealer`` (선) defaults to a draw from the seed (seat 0 under ``first_leader =
    seat0``). An explicit ``deal`` is validated, then redealt from the seed if the rules
    would throw it in. ``carry`` marks a round played ×2 after a 나가리.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0 or seed >= 1 << 64:
        raise InvalidDeal(f"seed must be an integer in [0, 2^64), not {seed!r}")
    rng = Rng(seed)
    drawn = rng.below(rules.players)
    if deal is not None:
        _validate_deal(rules, deal)
        dealer = deal.dealer
    elif dealer is None:
        dealer = 0 if rules.first_leader == "seat0" else drawn
    elif not 0 <= dealer < rules.players:
        raise InvalidDeal(f"dealer must be a seat 0-{rules.players - 1}, not {dealer}")
    redeals: list[Event] = []
    for _ in range(MAX_REDEALS):
        if deal is not None:
            hands, floor, stock = [list(h) for h in deal.hands], list(deal.floor), list(deal.stock)
            deal = None
        else:
            hands, floor, stock = _deal_cards(rules, dealer, rng.shuffled(deck(rules.bonus_cards)))
        w = Work.fresh(rules, seed, dealer, hands, floor, stock, carry)
        if not w.quiet:
            w.events.append(Dealt(dealer, tuple([s.hand for s in w.seats]), tuple(floor), len(stock), carry))
        resolve_bonuses(w, hands_too=rules.players != 4)
        why = _redeal_reason(w)
        if why is None:
            break
        redeals.append(Redealt(*why))
    else:  # pragma: no cover - probability far below 1e-100
        raise InvalidDeal("no playable deal after many reshuffles")
    on_floor = month_counts(w.floor)
    for m in range(1, 13):
        if on_floor[m] == 3:
            w.set_stack(m, START_STACK)
    w.events[:0] = redeals
    w.report_scores([EMPTY_SCORE] * rules.players)
    if not chongtong(w):
        if rules.players == 4:
            w.phase, w.to_move = Phase.SIT_OUT, (dealer + 1) % 4
        else:
            w.phase, w.to_move = Phase.PLAY, dealer
    return w.freeze(0), w.events


def _deal_cards(rules: Rules, dealer: int, cards: list[int]) -> tuple[list[list[int]], list[int], list[int]]:
    n = rules.players
    hands: list[list[int]] = [[] for _ in range(n)]
    floor: list[int] = []
    pos = 0
    if rules.packet_deal:
        first = 5 if n == 2 else 4
        packets = ((rules.floor_size // 2, first), (rules.floor_size // 2, rules.hand_size - first))
        for floor_count, hand_count in packets:
            floor += cards[pos:pos + floor_count]
            pos += floor_count
            for i in range(1, n + 1):
                seat = (dealer + i) % n
                hands[seat] += cards[pos:pos + hand_count]
                pos += hand_count
    else:
        floor += cards[:rules.floor_size]
        pos = rules.floor_size
        for i in range(n):
            hands[(dealer + i) % n] += cards[pos:pos + rules.hand_size]
            pos += rules.hand_size
    return [sorted(h) for h in hands], floor, cards[pos:]


def _validate_deal(rules: Rules, deal: Deal) -> None:
    if not isinstance(deal.dealer, int) or not 0 <= deal.dealer < rules.players:
        raise InvalidDeal(f"dealer must be a seat 0-{rules.players - 1}, not {deal.dealer!r}")
    if len(deal.hands) != rules.players:
        raise InvalidDeal(f"{rules.players} hands needed, got {len(deal.hands)}")
    for i, h in enumerate(deal.hands):
        if len(h) != rules.hand_size:
            raise InvalidDeal(f"hand {i} must hold {rules.hand_size} cards, not {len(h)}")
    if len(deal.floor) != rules.floor_size:
        raise InvalidDeal(f"the floor must hold {rules.floor_size} cards, not {len(deal.floor)}")
    everything = [c for h in deal.hands for c in h] + list(deal.floor) + list(deal.stock)
    for c in everything:
        if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < rules.deck_size:
            raise InvalidDeal(f"{c!r} is not a card of the {rules.deck_size}-card deck")
    seen: set[int] = set()
    for c in everything:
        if c in seen:
            raise InvalidDeal(f"card {c} ({CODE[c]}) is dealt twice")
        seen.add(c)
    missing = sorted(set(range(rules.deck_size)) - seen)
    if missing:
        raise InvalidDeal(f"cards missing from the deal: {', '.join(CODE[c] for c in missing)}")


def resolve_bonuses(w: Work, hands_too: bool, seats: Sequence[int] | None = None) -> None:
    """Bonus cards in hands go to their holders, on the floor to the 선; each is replaced."""
    n = len(w.seats)
    order = seats if seats is not None else [(w.dealer + i) % n for i in range(n)]
    again = True
    while again:
        again = False
        if hands_too:
            for seat in order:
                held = w.seats[seat].hand
                if not held or max(held) < MONTH_CARDS:
                    continue
                hand = list(held)
                for b in [c for c in hand if c >= MONTH_CARDS]:
                    hand.remove(b)
                    rep = w.stock.pop(0) if w.stock else -1
                    if rep >= 0:
                        hand.append(rep)
                        again = again or is_bonus(rep)
                    w.mut(seat).hand = tuple(sorted(hand))
                    w.take(seat, (b,))
                    if not w.quiet:
                        w.events.append(BonusCaptured(seat, b, "hand", rep))
        on_floor = [c for c in w.floor if c >= MONTH_CARDS] if w.floor and max(w.floor) >= MONTH_CARDS else []
        for b in on_floor:
            w.floor.remove(b)
            rep = w.stock.pop(0) if w.stock else -1
            if rep >= 0:
                w.floor.append(rep)
                again = again or is_bonus(rep)
            w.take(w.dealer, (b,))
            if not w.quiet:
                w.events.append(BonusCaptured(w.dealer, b, "floor", rep))


def month_counts(cards: Sequence[int]) -> list[int]:
    counts = [0] * 13
    for c in cards:
        counts[MONTH[c]] += 1
    return counts


def _redeal_reason(w: Work) -> tuple[RedealReason, int] | None:
    m = four_of_a_month(w.floor)
    if m:
        return ("floor_four", m)
    if not w.rules.chongtong:
        for s in w.seats:
            m = four_of_a_month(s.hand)
            if m:
                return ("hand_four", m)
    return None


def chongtong(w: Work) -> bool:
    """총통: a playing seat holding four of a month wins at once."""
    if not w.rules.chongtong:
        return False
    for seat in w.order():
        if four_of_a_month(w.seats[seat].hand):
            points = w.rules.chongtong_points
            if not w.quiet:
                w.events.append(InstantWin(seat, "chongtong", points))
            w.finish(settle(w, seat, "instant_win", "chongtong", fixed=points))
            return True
    return False
