"""Determinization: complete a seat's view into a full state by sampling the hidden cards.

Information-set search (a bot that must not peek) samples the cards it cannot see —
other hands and the stock order — uniformly among the arrangements consistent with
everything its view shows, then searches the sampled states.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from .actions import Stop
from .errors import EngineError
from .play import apply
from .settlement import Settlement
from .state import NO_STACK, Phase, SeatState, State
from .views import SeatView, View


def unknown_cards(v: View) -> list[int]:
    """Cards the viewer cannot place: other hands (minus revealed cards) and the stock."""
    if v.rules is None:
        raise EngineError("the view carries no rules")
    known: set[int] = set(v.floor)
    for s in v.seats:
        known.update(s.captured)
        known.update(s.revealed)
        if s.seat == v.viewer:
            known.update(s.hand)
    ctx = v.turn
    if ctx is not None:
        known.update(ctx.held)
        if v.phase is Phase.CHOOSE_HAND and ctx.card >= 0:
            known.add(ctx.card)
        if v.phase is Phase.CHOOSE_FLIP and ctx.flipped >= 0:
            known.add(ctx.flipped)
    return sorted(set(range(v.rules.deck_size)) - known)


def determinize(v: View, rng: random.Random, hidden: Mapping[int, tuple[int, ...]] | None = None) -> State:
    """A full state consistent with view ``v``, hidden cards drawn uniformly by ``rng``.

    ``hidden`` fixes the unrevealed hand cards of some seats (a search that weighs its
    samples by what the opponents' plays say about their hands chooses them); each must be
    the right number of distinct cards among ``unknown_cards(v)``, else ``EngineError``. The
    other seats' hands and the stock are drawn uniformly from the remaining unknown cards.

    >>> from gostop.engine import Rules, new_round, view
    >>> state, _ = new_round(Rules.preset("standard"), seed=5)
    >>> sample = determinize(view(state, 0), random.Random(1))
    >>> sample.seats[0].hand == state.seats[0].hand, len(sample.stock) == len(state.stock)
    (True, True)
    """
    if v.rules is None:
        raise EngineError("the view carries no rules")
    pool = unknown_cards(v)
    if hidden:
        if v.viewer in hidden:
            raise EngineError("the viewer's own hand is not hidden from it")
        chosen = [c for s, cards in hidden.items() for c in cards]
        free = set(pool).difference(chosen)
        if len(free) + len(chosen) != len(pool) or len(set(chosen)) != len(chosen):
            raise EngineError("fixed hidden cards must be distinct unknown cards")
        pool = sorted(free)
    rng.shuffle(pool)
    seats = []
    for s in v.seats:
        if s.seat == v.viewer:
            hand = s.hand
        else:
            missing = s.hand_size - len(s.revealed)
            if hidden and s.seat in hidden:
                mine = hidden[s.seat]
                if len(mine) != missing:
                    raise EngineError(f"seat {s.seat} hides {missing} cards, not {len(mine)}")
                hand = tuple(sorted(s.revealed + tuple(mine)))
                seats.append(_sampled_seat(s, hand))
                continue
            hand = tuple(sorted(s.revealed + tuple(pool[:missing])))
            del pool[:missing]
        seats.append(_sampled_seat(s, hand))
    if len(pool) != v.stock_count:
        raise EngineError(f"view inconsistent: {len(pool)} unknown cards for a stock of {v.stock_count}")
    stacks = [NO_STACK] * 13
    for st in v.stacks:
        stacks[st.month] = st.maker
    return State(
        rules=v.rules, seed=0, dealer=v.dealer, phase=v.phase, to_move=v.to_move, seats=tuple(seats),
        floor=v.floor, stacks=tuple(stacks), stock=tuple(pool), gukjin=v.gukjin, turn=v.turn,
        go_seq=v.go_seq, payments=v.payments, carry=v.carry, settlement=v.settlement, steps=v.steps,
        plays=v.plays,
    )


def _sampled_seat(s: SeatView, hand: tuple[int, ...]) -> SeatState:
    return SeatState(
        hand=hand, captured=s.captured, revealed=s.revealed, shakes=s.shakes, bombs=s.bombs,
        spare_flips=s.spare_flips, gos=s.gos, last_go_base=s.last_go_base,
        last_go_order=s.last_go_order, turns=s.turns, ppeok_turns=s.ppeok_turns,
        dry_turns=s.dry_turns, sseul=s.sseul, active=s.active,
    )


def stop_settlement(v: View) -> Settlement:
    """The settlement a stop (스톱) would bring now, for the viewer of ``v`` deciding 고 or 스톱: the
    engine's own settlement of the stop, applied to the view completed by a fixed sample (no hidden
    card counts in a settlement: it reads piles, 고, 흔들기/폭탄, the carry and the payments, all public).

    >>> from gostop.engine import Phase, Rules, Stop, apply, legal_actions, new_round, view
    >>> state, _ = new_round(Rules.preset("standard"), seed=1)
    >>> while state.phase is not Phase.GO_STOP:
    ...     state, _ = apply(state, legal_actions(state)[0])
    >>> stop_settlement(view(state, state.to_move)) == apply(state, Stop())[0].settlement
    True
    """
    if v.phase is not Phase.GO_STOP or v.viewer != v.to_move:
        raise EngineError("only the seat deciding 고 or 스톱 has a stop to settle")
    done, _ = apply(determinize(v, random.Random(0)), Stop())
    assert done.settlement is not None
    return done.settlement
