"""The rules engine: round setup, legal actions and ``apply``.

Pure functions over frozen states: no I/O, no clock, no global randomness. The
only randomness is the round's seed, fed to the engine's own generator at the deal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any

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
    action_id,
)
from .cards import ALL_CARDS, CODE, GUKJIN, KIND, MONTH, MONTH_CARDS, PI_VALUE, Kind, deck, is_bonus, mask_of
from .errors import IllegalAction, InvalidDeal, NotYourTurn, RoundOver
from .events import (
    Bombed,
    BonusCaptured,
    Captured,
    CardFlipped,
    CardLaid,
    CardPlayed,
    Dealt,
    Event,
    FlipOnlyUsed,
    GukjinDecided,
    GwangSold,
    InstantLoss,
    InstantPaid,
    InstantWin,
    Jjok,
    JoinedRound,
    Nagari,
    PiStolen,
    PpeokFormed,
    PpeokRecaptured,
    Redealt,
    RoundSettled,
    SatOut,
    ScoreChanged,
    Shaken,
    Sseul,
    Stopped,
    Ttadak,
    WentGo,
)
from .rng import Rng
from .rules import Rules
from .scoring import Score, go_score, mask_score, mask_total
from .settlement import Bill, Factor, Payment, Settlement
from .state import NO_STACK, START_STACK, Phase, PlayRecord, SeatState, State, TurnContext

MAX_REDEALS = 1000
_EMPTY_SCORE = Score()


@dataclass(frozen=True, slots=True)
class Deal:
    """An explicit deal: replaces the shuffle (tests, bug reports, duplicate deals).

    ``hands[i]`` is seat i's hand; ``stock`` is listed top first.
    """

    hands: tuple[tuple[int, ...], ...]
    floor: tuple[int, ...]
    stock: tuple[int, ...]
    dealer: int


# ---------------------------------------------------------------------- card masks

_MONTH_BITS = mask_of(range(MONTH_CARDS))
_PAIR_LOW = sum(0b0101 << (4 * i) for i in range(12))
"""Bits 0 and 2 of each month's four bits."""
_NIBBLE_LOW = sum(1 << (4 * i) for i in range(12))
"""Bit 0 of each month's four bits."""


def _holds_three_of_a_month(cards: Sequence[int]) -> bool:
    """Some month has three or four cards among ``cards`` (흔들기 and 폭탄 are possible).

    On the card mask, where each month is four adjacent bits: a month has three of its
    cards iff one of its bit pairs is full and the other is not empty.
    """
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & _PAIR_LOW
    some = (mask | (mask >> 1)) & _PAIR_LOW
    return bool(((full & (some >> 2)) | ((full >> 2) & some)) & _NIBBLE_LOW)


def _four_of_a_month(cards: Sequence[int]) -> int:
    """The first month all four cards of which are among ``cards`` (0: none)."""
    mask = mask_of(cards) & _MONTH_BITS
    full = mask & (mask >> 1) & (mask >> 2) & (mask >> 3) & _NIBBLE_LOW
    return (full & -full).bit_length() // 4 + 1 if full else 0


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
        w = _W.fresh(rules, seed, dealer, hands, floor, stock, carry)
        w.emit(Dealt, dealer, tuple(s.hand for s in w.seats), tuple(floor), len(stock), carry)
        _resolve_bonuses(w, hands_too=rules.players != 4)
        why = _redeal_reason(w)
        if why is None:
            break
        redeals.append(Redealt(*why))
    else:  # pragma: no cover - probability far below 1e-100
        raise InvalidDeal("no playable deal after many reshuffles")
    on_floor = _month_counts(w.floor)
    for m in range(1, 13):
        if on_floor[m] == 3:
            w.stacks[m] = START_STACK
    w.events[:0] = redeals
    _report_scores(w, [_EMPTY_SCORE] * rules.players)
    if not _chongtong(w):
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


def _resolve_bonuses(w: _W, hands_too: bool, seats: Sequence[int] | None = None) -> None:
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
                    w.upd(seat, hand=tuple(sorted(hand)))
                    w.take(seat, (b,))
                    w.emit(BonusCaptured, seat, b, "hand", rep)
        on_floor = [c for c in w.floor if c >= MONTH_CARDS] if w.floor and max(w.floor) >= MONTH_CARDS else []
        for b in on_floor:
            w.floor.remove(b)
            rep = w.stock.pop(0) if w.stock else -1
            if rep >= 0:
                w.floor.append(rep)
                again = again or is_bonus(rep)
            w.take(w.dealer, (b,))
            w.emit(BonusCaptured, w.dealer, b, "floor", rep)


def _month_counts(cards: Sequence[int]) -> list[int]:
    counts = [0] * 13
    for c in cards:
        counts[MONTH[c]] += 1
    return counts


def _redeal_reason(w: _W) -> tuple[str, int] | None:
    m = _four_of_a_month(w.floor)
    if m:
        return ("floor_four", m)
    if not w.rules.chongtong:
        for s in w.seats:
            m = _four_of_a_month(s.hand)
            if m:
                return ("hand_four", m)
    return None


def _chongtong(w: _W) -> bool:
    """총통: a playing seat holding four of a month wins at once."""
    if not w.rules.chongtong:
        return False
    for seat in w.order():
        if _four_of_a_month(w.seats[seat].hand):
            points = w.rules.chongtong_points
            w.emit(InstantWin, seat, "chongtong", points)
            _finish(w, _settle(w, seat, "instant_win", "chongtong", fixed=points))
            return True
    return False


# ------------------------------------------------------------------------ actions


def legal_actions(state: State) -> list[Action]:
    """What the seat to move may do, in ascending stable-id order (empty when over)."""
    return _legal_actions(state)


def _legal_actions(state: State | _W) -> list[Action]:
    """``legal_actions`` of a frozen state or of a working copy (``Playout``)."""
    phase = state.phase
    if phase is Phase.PLAY:
        return _play_actions(state)
    if phase is Phase.CHOOSE_HAND or phase is Phase.CHOOSE_FLIP:
        return [ChooseCapture(c) for c in _choice_cards(state)]
    if phase is Phase.GO_STOP:
        return [Go(), Stop()]
    if phase is Phase.GUKJIN:
        return [KeepGukjin(), ConvertGukjin()]
    if phase is Phase.SIT_OUT:
        return [JoinRound(), SitOut()]
    if phase is Phase.GWANG_SALE:
        return [DeclineGwangSale(), SellGwang()]
    return []


def legal_action_ids(state: State) -> list[int]:
    """Stable integer ids of ``legal_actions(state)``, ascending."""
    return [action_id(a) for a in legal_actions(state)]


_PLAY = tuple(PlayCard(c) for c in range(ALL_CARDS))
_SHAKE = tuple(PlayCard(c, shake=True) for c in range(ALL_CARDS))
_BOMB = tuple(Bomb(m) if m else None for m in range(13))
_FLIP_ONLY = FlipOnly()


def _play_actions(state: State | _W) -> list[Action]:
    seat = state.seats[state.to_move]
    hand = seat.hand
    out: list[Action] = list(map(_PLAY.__getitem__, hand))
    if state.rules.shake_bomb and len(hand) >= 3 and _holds_three_of_a_month(hand):
        held = [0] * 13
        for c in hand:
            held[MONTH[c]] += 1
        triples = [m for m in range(1, 13) if held[m] >= 3]
        if triples:
            on_floor = [0] * 13
            for c in state.floor:
                on_floor[MONTH[c]] += 1
            for c in hand:
                m = MONTH[c]
                if m and held[m] >= 3 and on_floor[m] == 0:
                    out.append(_SHAKE[c])
            for m in triples:
                if held[m] == 3 and on_floor[m] == 1:
                    out.append(_BOMB[m])  # type: ignore[arg-type]
    if seat.spare_flips > 0 and state.stock:
        out.append(_FLIP_ONLY)
    return out


def _choice_cards(state: State | _W) -> list[int]:
    ctx = state.turn
    assert ctx is not None
    month = ctx.month if state.phase is Phase.CHOOSE_HAND else MONTH[ctx.flipped]
    return sorted(c for c in state.floor if MONTH[c] == month)


def check(state: State, action: Action, seat: int | None = None) -> None:
    """Raise the precise reason why ``action`` is not legal now; return if it is.

    The single validation path of every action kind: ``apply`` calls it first.
    """
    if state.phase is Phase.OVER:
        raise RoundOver("the round is over")
    action_id(action)  # raises MalformedAction for a malformed action
    if seat is not None and seat != state.to_move:
        raise NotYourTurn(f"it is seat {state.to_move}'s turn, not seat {seat}'s")
    if state.phase is Phase.PLAY and type(action) is PlayCard and not action.shake:
        # The commonest action, checked without listing: a plain play is legal iff held.
        if action.card in state.seats[state.to_move].hand:
            return
    elif action in legal_actions(state):
        return
    raise IllegalAction(_explain(state, action))


def _explain(state: State, action: Action) -> str:
    phase = state.phase
    expected = {
        Phase.PLAY: "play a card, bomb or use a 빈 내기",
        Phase.CHOOSE_HAND: "choose which floor card the played card captures",
        Phase.CHOOSE_FLIP: "choose which floor card the flipped card captures",
        Phase.GUKJIN: "keep or convert 국진",
        Phase.GO_STOP: "go or stop",
        Phase.SIT_OUT: "join the round or sit out",
        Phase.GWANG_SALE: "sell 광 or decline",
    }[phase]
    name = type(action).__name__
    wanted = {
        Phase.PLAY: (PlayCard, Bomb, FlipOnly),
        Phase.CHOOSE_HAND: (ChooseCapture,),
        Phase.CHOOSE_FLIP: (ChooseCapture,),
        Phase.GUKJIN: (KeepGukjin, ConvertGukjin),
        Phase.GO_STOP: (Go, Stop),
        Phase.SIT_OUT: (JoinRound, SitOut),
        Phase.GWANG_SALE: (DeclineGwangSale, SellGwang),
    }[phase]
    if not isinstance(action, wanted):
        return f"{name} is not possible now: the pending decision is to {expected}"
    seat = state.seats[state.to_move]
    if isinstance(action, PlayCard):
        c = action.card
        if not seat.hand:
            return "your hand is empty: use a 빈 내기 (FlipOnly)"
        if c not in seat.hand:
            return f"card {c} ({CODE[c]}) is not in your hand"
        m = MONTH[c]
        if not state.rules.shake_bomb:
            return "흔들기 is not part of these rules"
        held = sum(1 for x in seat.hand if MONTH[x] == m)
        if held < 3:
            return f"흔들기 needs three cards of month {m} in hand; you hold {held}"
        return f"흔들기 needs no month-{m} card on the floor"
    if isinstance(action, Bomb):
        m = action.month
        if not state.rules.shake_bomb:
            return "폭탄 is not part of these rules"
        held = sum(1 for x in seat.hand if MONTH[x] == m)
        floor = sum(1 for x in state.floor if MONTH[x] == m)
        return (
            f"폭탄 needs three cards of month {m} in hand and exactly one on the floor; "
            f"you hold {held} and the floor has {floor}"
        )
    if isinstance(action, FlipOnly):
        if seat.spare_flips == 0:
            return "you have no 빈 내기 (flip-only turn) left"
        return "the stock is empty"
    if isinstance(action, ChooseCapture):
        options = ", ".join(f"{c} ({CODE[c]})" for c in _choice_cards(state))
        return f"card {action.card} ({CODE[action.card]}) is not one of the cards to choose from: {options}"
    return f"{name} is not possible now"  # pragma: no cover - every phase's actions are always legal


def apply(state: State, action: Action, seat: int | None = None) -> tuple[State, list[Event]]:
    """Apply ``action`` of the seat to move; return the new state and the step's events.

    Raises ``MalformedAction``, ``RoundOver``, ``NotYourTurn`` or ``IllegalAction``
    (with the precise reason) and leaves ``state`` untouched. ``seat``, when given, is
    the seat claiming to act.
    """
    check(state, action, seat)
    return apply_unchecked(state, action)


def apply_unchecked(state: State, action: Action) -> tuple[State, list[Event]]:
    """``apply`` for an action already known to be legal."""
    w = _W.of(state)
    _step(w, action)
    return w.freeze(state.steps + 1), w.events


def _step(w: _W, action: Action) -> None:
    """Advance the working copy by one legal action."""
    phase = w.phase
    if phase is Phase.PLAY:
        w.plays.append(
            PlayRecord(w.to_move, action_id(action), tuple(w.floor), tuple([len(s.captured) for s in w.seats]))
        )
        if isinstance(action, PlayCard):
            _play(w, action.card, action.shake)
        elif isinstance(action, Bomb):
            _bomb(w, action.month)
        else:
            _flip_only(w)
    elif phase is Phase.CHOOSE_HAND:
        assert isinstance(action, ChooseCapture) and w.turn is not None
        ctx = _Turn.thaw(w.turn)
        w.floor.remove(action.card)
        ctx.held = (ctx.card, action.card)
        _after_play(w, ctx)
    elif phase is Phase.CHOOSE_FLIP:
        assert isinstance(action, ChooseCapture) and w.turn is not None
        ctx = _Turn.thaw(w.turn)
        w.floor.remove(action.card)
        w.capture(ctx, (ctx.flipped, action.card))
        _settle_turn(w, ctx)
    elif phase is Phase.GUKJIN:
        assert w.turn is not None
        convert = isinstance(action, ConvertGukjin)
        final = convert or w.rules.gukjin == "on_capture"
        w.gukjin = "converted" if convert else ("kept" if final else "open")
        w._scores.clear()
        w.emit(GukjinDecided, w.to_move, convert, final)
        _finish_turn(w, _Turn.thaw(w.turn))
    elif phase is Phase.GO_STOP:
        if isinstance(action, Go):
            _go(w)
        else:
            base = w.base(w.to_move)
            w.emit(Stopped, w.to_move, base, False)
            _finish(w, _settle(w, w.to_move, "stop", "stop"))
    elif phase is Phase.SIT_OUT:
        if isinstance(action, SitOut):
            _sit_out(w, w.to_move, forced=False)
        else:
            w.emit(JoinedRound, w.to_move)
            nxt = (w.to_move + 1) % 4
            if nxt == (w.dealer + 3) % 4:
                _sit_out(w, nxt, forced=True)
            else:
                w.to_move = nxt
    elif phase is Phase.GWANG_SALE:
        if isinstance(action, SellGwang):
            _sell_gwang(w, w.to_move)
        _begin_play(w)




class Playout:
    """A round played in place for search and simulation: the fast path of bots.

    No events are built and no frozen copy is made per step; the rules applied are
    exactly those of ``apply`` (the same step functions). ``state()`` freezes the
    current position at any time.

    >>> from gostop.engine import Rules, new_round
    >>> p = Playout(new_round(Rules.preset("standard"), seed=3)[0])
    >>> while not p.over:
    ...     p.apply(p.legal_actions()[0])
    >>> p.state().settlement is not None
    True
    """

    __slots__ = ("_steps", "_w")

    def __init__(self, state: State) -> None:
        self._w = _W.of(state)
        self._w.quiet = True
        self._steps = state.steps

    @property
    def over(self) -> bool:
        return self._w.phase is Phase.OVER

    @property
    def to_move(self) -> int:
        return self._w.to_move

    def legal_actions(self) -> list[Action]:
        """``legal_actions`` of the current position."""
        return _legal_actions(self._w)

    def apply(self, action: Action) -> None:
        """Apply an action known to be legal (from ``legal_actions``)."""
        _step(self._w, action)
        self._steps += 1

    def state(self) -> State:
        """The current position as a frozen state."""
        return self._w.freeze(self._steps)


# -------------------------------------------------------------------- 4 players


def sellable(hand: Sequence[int]) -> tuple[int, ...]:
    """Cards a forced-out seat may sell: 광, 쌍피 and bonus 피."""
    return tuple(c for c in hand if KIND[c] is Kind.GWANG or PI_VALUE[c] >= 2)


def _sit_out(w: _W, seat: int, forced: bool) -> None:
    w.upd(seat, active=False)
    w.emit(SatOut, seat, forced)
    if forced and sellable(w.seats[seat].hand):
        w.phase, w.to_move = Phase.GWANG_SALE, seat
    else:
        _begin_play(w)


def _sell_gwang(w: _W, seat: int) -> None:
    cards = sellable(w.seats[seat].hand)
    price = w.rules.gwang_sale_price
    w.emit(GwangSold, seat, cards, price)
    for payer in w.order():
        w.pay(Payment(payer, seat, price * len(cards), "gwang_sale"))


def _begin_play(w: _W) -> None:
    before = [w.score(s) for s in range(len(w.seats))]
    _resolve_bonuses(w, hands_too=True, seats=w.order())
    _report_scores(w, before)
    if not _chongtong(w):
        w.phase, w.to_move = Phase.PLAY, w.dealer


# ------------------------------------------------------------------------- turns


def _start_turn(w: _W, kind: str, hand_after: int, flips_after: int, card: int = -1, month: int = 0) -> _Turn:
    seat = w.to_move
    before = _EMPTY_SCORE if w.quiet else w.score(seat)
    w.mut(seat).turns += 1
    return _Turn(seat, kind, card, month, hand_after == 0 and flips_after == 0, before)


def _play(w: _W, card: int, shake: bool) -> None:
    seat = w.to_move
    me = w.mut(seat)
    hand = me.hand
    m = MONTH[card]
    ctx = _start_turn(w, "play", len(hand) - 1, me.spare_flips, card, m)
    if shake:
        shown = tuple(sorted(c for c in hand if MONTH[c] == m))
        me.revealed += tuple(c for c in shown if c != card)
        me.shakes += (m,)
        w.emit(Shaken, seat, m, shown)
    if card in me.revealed:
        me.revealed = tuple(c for c in me.revealed if c != card)
    i = hand.index(card)
    me.hand = hand[:i] + hand[i + 1:]
    w.emit(CardPlayed, seat, card, shake)
    matches = [c for c in w.floor if MONTH[c] == m]
    n = len(matches)
    if n == 0:
        w.floor.append(card)
        w.emit(CardLaid, seat, card)
        _after_play(w, ctx)
    elif n == 1:
        w.floor.remove(matches[0])
        ctx.matched, ctx.held = 1, (card, matches[0])
        _after_play(w, ctx)
    elif n == 2:
        ctx.matched = 2
        w.phase, w.turn = Phase.CHOOSE_HAND, ctx.freeze()
    else:
        for c in matches:
            w.floor.remove(c)
        ctx.matched = 3
        _take_stack(w, ctx, m)
        w.capture(ctx, (card, *matches))
        _after_play(w, ctx)


def _bomb(w: _W, month: int) -> None:
    seat = w.to_move
    s = w.seats[seat]
    cards = tuple(sorted(c for c in s.hand if MONTH[c] == month))
    target = next(c for c in w.floor if MONTH[c] == month)
    spare = s.spare_flips + 2
    ctx = _start_turn(w, "bomb", len(s.hand) - 3, spare, month=month)
    ctx.matched = 1
    w.upd(
        seat,
        hand=tuple(c for c in s.hand if MONTH[c] != month),
        revealed=tuple(c for c in s.revealed if MONTH[c] != month),
        bombs=s.bombs + (month,),
        spare_flips=spare,
    )
    w.emit(Bombed, seat, month, cards, spare)
    w.floor.remove(target)
    w.capture(ctx, (*cards, target))
    ctx.steals += ("bomb",)
    _after_play(w, ctx)


def _flip_only(w: _W) -> None:
    seat = w.to_move
    left = w.seats[seat].spare_flips - 1
    ctx = _start_turn(w, "flip", len(w.seats[seat].hand), left)
    w.upd(seat, spare_flips=left)
    w.emit(FlipOnlyUsed, seat, left)
    _after_play(w, ctx)


def _take_stack(w: _W, ctx: _Turn, month: int) -> None:
    """Capturing a three-card stack: a 뻑 stack pays its capturer."""
    maker = w.stacks[month]
    w.stacks[month] = NO_STACK
    if maker >= 0:
        own = maker == ctx.seat
        w.emit(PpeokRecaptured, ctx.seat, month, maker, own)
        ctx.steals += ("jappeok", "jappeok") if own else ("ppeok",)


def _after_play(w: _W, ctx: _Turn) -> None:
    """Flip the stock (bonus cards are taken and flipped past) and match the flip."""
    seat = ctx.seat
    flipped = -1
    while w.stock:
        c = w.stock.pop(0)
        w.emit(CardFlipped, seat, c)
        if c >= MONTH_CARDS:  # a bonus card
            w.capture(ctx, (c,), event=False)
            w.emit(BonusCaptured, seat, c, "flip", -1)
            continue
        flipped = c
        break
    if flipped < 0:
        if ctx.held:
            w.capture(ctx, ctx.held)
            ctx.held = ()
        _settle_turn(w, ctx)
        return
    n_month = MONTH[flipped]
    r = w.rules
    if ctx.kind == "play" and n_month == ctx.month:
        m = ctx.month
        if ctx.matched == 0:  # 쪽
            w.floor.remove(ctx.card)
            w.capture(ctx, (flipped, ctx.card))
            steals = not (ctx.last and "jjok" in r.last_turn_no_steal)
            w.emit(Jjok, seat, m, steals)
            if steals:
                ctx.steals += ("jjok",)
        elif ctx.matched == 1:  # 뻑
            if ctx.last and r.last_turn_ppeok_captured:
                w.capture(ctx, (*ctx.held, flipped))
                ctx.held = ()
            else:
                stack = (*ctx.held, flipped)
                w.floor.extend(stack)
                w.stacks[m] = seat
                s = w.seats[seat]
                made = s.ppeok_turns + (s.turns,)
                w.upd(seat, ppeok_turns=made)
                w.emit(PpeokFormed, seat, m, stack, len(made))
                ctx.held, ctx.ppeok = (), True
        else:  # 따닥
            other = next(c for c in w.floor if MONTH[c] == m)
            w.floor.remove(other)
            w.capture(ctx, (*ctx.held, other, flipped))
            ctx.held = ()
            steals = not (ctx.last and "ttadak" in r.last_turn_no_steal)
            w.emit(Ttadak, seat, m, steals)
            ctx.ttadak = True
            if steals:
                ctx.steals += ("ttadak",)
        _settle_turn(w, ctx)
        return
    if ctx.held:
        w.capture(ctx, ctx.held)
        ctx.held = ()
    matches = [c for c in w.floor if MONTH[c] == n_month]
    n = len(matches)
    if n == 0:
        w.floor.append(flipped)
        w.emit(CardLaid, seat, flipped)
    elif n == 1:
        w.floor.remove(matches[0])
        w.capture(ctx, (flipped, matches[0]))
    elif n == 2:
        ctx.flipped = flipped
        w.phase, w.turn = Phase.CHOOSE_FLIP, ctx.freeze()
        return
    else:
        for c in matches:
            w.floor.remove(c)
        _take_stack(w, ctx, n_month)
        w.capture(ctx, (flipped, *matches))
    ctx.flipped = flipped
    _settle_turn(w, ctx)


def _settle_turn(w: _W, ctx: _Turn) -> None:
    """쓸, steals, instant payments, then the 국진 decision if one is due."""
    r = w.rules
    seat = ctx.seat
    if not w.floor and any(not is_bonus(c) for c in ctx.taken):
        if r.sseul_mode == "point":
            w.upd(seat, sseul=w.seats[seat].sseul + 1)
            w.emit(Sseul, seat, False, 1)
        else:
            steals = not (ctx.last and "sseul" in r.last_turn_no_steal)
            w.emit(Sseul, seat, steals, 0)
            if steals:
                ctx.steals += ("sseul",)
    if ctx.steals:
        for victim in w.order():
            if victim != seat:
                _steal(w, seat, victim, ctx.steals)
    s = w.seats[seat]
    if ctx.ppeok and r.ppeok_payments:
        t = s.turns
        if t <= len(r.ppeok_payments) and s.ppeok_turns == tuple(range(1, t + 1)):
            reason = ("first_ppeok", "second_ppeok", "third_ppeok")[t - 1]
            for o in w.order():
                if o != seat:
                    w.pay(Payment(o, seat, r.ppeok_payments[t - 1], reason))
    if ctx.ttadak and r.first_ttadak_payment and s.turns == 1:
        opponents = [o for o in w.order() if o != seat]
        for o in opponents:
            w.pay(Payment(o, seat, r.first_ttadak_payment, "first_ttadak"))
    if w.gukjin == "open" and (
        (r.gukjin == "on_settlement" and GUKJIN in s.captured)
        or (r.gukjin == "on_capture" and GUKJIN in ctx.taken)
    ):
        w.phase, w.turn, w.to_move = Phase.GUKJIN, ctx.freeze(), seat
        return
    _finish_turn(w, ctx)


def _steal(w: _W, seat: int, victim: int, reasons: tuple[str, ...]) -> None:
    """Take ``len(reasons)`` 피 from ``victim``: plain 피 first, then the lowest value."""
    before = None if w.quiet else w.score(victim)
    pile = list(w.seats[victim].captured)
    converted = w.gukjin == "converted"
    taken: list[int] = []
    for _ in reasons:
        best = -1
        best_key = (99, 99, 99)
        for c in pile:
            value = (2 if converted else 0) if c == GUKJIN else PI_VALUE[c]
            if value == 0:
                continue
            key = (0 if value == 1 else value, 1 if c == GUKJIN else 0, c)
            if key < best_key:
                best, best_key = c, key
        if best < 0:
            break
        pile.remove(best)
        taken.append(best)
    w.upd(victim, captured=tuple(pile))
    if taken:
        w.upd(seat, captured=w.seats[seat].captured + tuple(taken))
    w.emit(PiStolen, seat, victim, tuple(taken), len(reasons), reasons)
    if before is not None:
        _report_score(w, victim, before)


def _finish_turn(w: _W, ctx: _Turn) -> None:
    """Scores, instant outcomes, then go/stop or the next seat."""
    r = w.rules
    seat = ctx.seat
    w.turn = None
    s = w.mut(seat)
    s.dry_turns = 0 if ctx.taken else s.dry_turns + 1
    _report_score(w, seat, ctx.before)
    if ctx.ppeok and len(s.ppeok_turns) == 3 and r.three_ppeok != "none":
        if r.three_ppeok == "win":
            w.emit(InstantWin, seat, "three_ppeok", r.three_ppeok_points)
            _finish(w, _settle(w, seat, "instant_win", "three_ppeok", fixed=r.three_ppeok_points))
        else:
            w.emit(InstantLoss, seat, "three_ppeok")
            others = [o for o in w.order() if o != seat]
            winner = max(others, key=lambda o: _final_score(w, o))
            _finish(w, _settle(w, winner, "instant_loss", "three_ppeok", minimum=r.go_threshold))
        return
    if r.heodang and s.dry_turns >= r.heodang_turns:
        w.emit(InstantWin, seat, "heodang", r.heodang_points)
        _finish(w, _settle(w, seat, "instant_win", "heodang", fixed=r.heodang_points))
        return
    base = w.base(seat)
    if base >= r.go_threshold and (s.gos == 0 or base > s.last_go_base):
        if not w.has_turn_left(seat) and r.last_action_go == "auto_stop":
            w.emit(Stopped, seat, base, True)
            _finish(w, _settle(w, seat, "stop", "stop"))
            return
        w.phase, w.to_move = Phase.GO_STOP, seat
        return
    _advance(w, seat)


def _final_score(w: _W, seat: int) -> int:
    s = w.seats[seat]
    return go_score(w.base(seat), s.gos, w.rules.go_scoring)


def _go(w: _W) -> None:
    seat = w.to_move
    gos = w.seats[seat].gos + 1
    base = w.base(seat)
    w.go_seq += 1
    w.upd(seat, gos=gos, last_go_base=base, last_go_order=w.go_seq)
    w.emit(WentGo, seat, gos, base)
    if w.rules.last_action_go == "allowed" and not any(
        w.has_turn_left(o) for o in w.order() if o != seat
    ):
        w.emit(Stopped, seat, base, True)
        _finish(w, _settle(w, seat, "stop", "last_go"))
        return
    _advance(w, seat)


def _advance(w: _W, seat: int) -> None:
    order = w.order()
    i = order.index(seat)
    for k in range(1, len(order) + 1):
        nxt = order[(i + k) % len(order)]
        if w.has_turn_left(nxt):
            w.phase, w.to_move = Phase.PLAY, nxt
            return
    _exhausted(w)


def _exhausted(w: _W) -> None:
    """Nobody stopped and no seat has a turn left."""
    r = w.rules
    if r.exhausted == "best_score":
        ready = [o for o in w.order() if w.base(o) >= r.go_threshold]
        if ready:
            finals = {o: _final_score(w, o) for o in ready}
            top = max(finals.values())
            best = [o for o in ready if finals[o] == top]
            if len(best) == 1:
                _finish(w, _settle(w, best[0], "best_score", "cards_exhausted"))
                return
            w.emit(Nagari, "tied_scores")
            _finish(w, _settle(w, -1, "nagari", "tied_scores"))
            return
    w.emit(Nagari, "cards_exhausted")
    _finish(w, _settle(w, -1, "nagari", "cards_exhausted"))


def _report_scores(w: _W, before: Sequence[Score]) -> None:
    for i, b in enumerate(before):
        _report_score(w, i, b)


def _report_score(w: _W, seat: int, before: Score) -> None:
    """A ``ScoreChanged`` event if ``seat``'s score differs from ``before``."""
    if w.quiet:
        return
    now = w.score(seat)
    if now != before:
        w.emit(ScoreChanged, seat, now, now.total)


# -------------------------------------------------------------------- settlement


def shake_bomb_count(rules: Rules, shakes: tuple[int, ...], bombs: tuple[int, ...]) -> int:
    """흔들기/폭탄 doublings of a seat that shook ``shakes`` and bombed ``bombs`` (months)."""
    if not rules.shake_bomb:
        return 0
    if rules.shake_bomb_count == "per_month":
        return len(set(shakes) | set(bombs))
    return len(shakes) + len(bombs)


def _settle(
    w: _W, winner: int, outcome: str, reason: str, *, fixed: int | None = None, minimum: int = 0
) -> Settlement:
    r = w.rules
    n_seats = len(w.seats)
    points = [0] * n_seats
    for p in w.payments:
        points[p.payer] -= p.points
        points[p.payee] += p.points
    if winner < 0:
        return Settlement(
            outcome, reason, -1, None, 0, 0, 0, (), (), tuple(w.payments), tuple(points),
            tuple(p * r.point_value for p in points), r.point_value, r.nagari_carry,
        )
    playing = w.order()
    losers = [o for o in playing if o != winner]
    sc = w.score(winner)
    ws = w.seats[winner]
    factors: list[Factor] = []
    if fixed is not None:
        go_pts = fixed
    else:
        go_pts = max(go_score(sc.total, ws.gos, r.go_scoring), minimum)
        k = shake_bomb_count(r, ws.shakes, ws.bombs)
        if k:
            factors.append(Factor("shake_bomb", 1 << k))
        if r.meongbak and sc.yeol_count >= r.meongbak_min_yeol:
            factors.append(Factor("meongbak", 2))
    if w.carry:
        factors.append(Factor("nagari_carry", 2))
    mult = 1
    for f in factors:
        mult *= f.value
    bills: list[Bill] = []
    for loser in losers:
        lf: list[Factor] = []
        if fixed is None:
            ls = w.score(loser)
            if (
                r.pibak
                and (sc.pi > 0 or not r.pibak_requires_winner_pi)
                and ls.pi_value <= r.pibak_max_pi
                and (ls.pi_value > 0 or not r.pibak_zero_exempt)
            ):
                lf.append(Factor("pibak", 2))
            if r.gwangbak and sc.gwang > 0 and ls.gwang_count == 0:
                lf.append(Factor("gwangbak", 2))
            if r.gobak and len(playing) == 2 and w.seats[loser].gos > 0:
                lf.append(Factor("gobak", 2))
            if r.shake_bomb_when_losing:
                k = shake_bomb_count(r, w.seats[loser].shakes, w.seats[loser].bombs)
                if k:
                    lf.append(Factor("own_shake_bomb", 1 << k))
        owed = go_pts * mult
        for f in lf:
            owed *= f.value
        bills.append(Bill(loser, tuple(lf), owed, owed, (loser,)))
    if fixed is None and r.gobak and len(playing) >= 3:
        goers = [b.seat for b in bills if w.seats[b.seat].gos > 0]
        if goers:
            payer = max(goers, key=lambda o: w.seats[o].last_go_order)
            total = sum(b.points for b in bills)
            covered = tuple(b.seat for b in bills)
            bills = [
                replace(b, pays=total, covers=covered) if b.seat == payer else replace(b, pays=0, covers=())
                for b in bills
            ]
    for b in bills:
        points[b.seat] -= b.pays
        points[winner] += b.pays
    return Settlement(
        outcome, reason, winner, sc, sc.total, ws.gos, go_pts, tuple(factors), tuple(bills),
        tuple(w.payments), tuple(points), tuple(p * r.point_value for p in points), r.point_value, False,
    )


def _finish(w: _W, settlement: Settlement) -> None:
    w.settlement = settlement
    w.phase, w.to_move, w.turn = Phase.OVER, -1, None
    w.emit(RoundSettled, settlement)


# ------------------------------------------------------------------ working copy


_TURN_ORDER = tuple(tuple(tuple((d + i) % n for i in range(n)) for d in range(n)) for n in range(5))
"""``_TURN_ORDER[n][dealer]``: the n seats in turn order from the dealer."""
_SEAT_FIELDS = tuple(f.name for f in fields(SeatState))
_TURN_FIELDS = tuple(f.name for f in fields(TurnContext))


class _Seat:
    """Mutable twin of ``SeatState`` for the seats a step changes."""

    __slots__ = _SEAT_FIELDS
    hand: tuple[int, ...]
    captured: tuple[int, ...]
    revealed: tuple[int, ...]
    shakes: tuple[int, ...]
    bombs: tuple[int, ...]
    spare_flips: int
    gos: int
    last_go_base: int
    last_go_order: int
    turns: int
    ppeok_turns: tuple[int, ...]
    dry_turns: int
    sseul: int
    active: bool

    def __init__(self, s: SeatState) -> None:
        self.hand, self.captured, self.revealed, self.shakes = s.hand, s.captured, s.revealed, s.shakes
        self.bombs, self.spare_flips, self.gos = s.bombs, s.spare_flips, s.gos
        self.last_go_base = s.last_go_base
        self.last_go_order, self.turns, self.ppeok_turns = s.last_go_order, s.turns, s.ppeok_turns
        self.dry_turns, self.sseul, self.active = s.dry_turns, s.sseul, s.active

    def freeze(self) -> SeatState:
        return SeatState(
            self.hand, self.captured, self.revealed, self.shakes, self.bombs, self.spare_flips,
            self.gos, self.last_go_base, self.last_go_order, self.turns, self.ppeok_turns,
            self.dry_turns, self.sseul, self.active,
        )


class _Turn:
    """Mutable twin of ``TurnContext`` while a turn runs inside one step."""

    __slots__ = _TURN_FIELDS
    seat: int
    kind: str
    card: int
    month: int
    last: bool
    before: Score
    matched: int
    held: tuple[int, ...]
    flipped: int
    taken: tuple[int, ...]
    steals: tuple[str, ...]
    ppeok: bool
    ttadak: bool

    def __init__(self, seat: int, kind: str, card: int, month: int, last: bool, before: Score) -> None:
        self.seat, self.kind, self.card, self.month = seat, kind, card, month
        self.last, self.before = last, before
        self.matched, self.held, self.flipped, self.taken, self.steals = 0, (), -1, (), ()
        self.ppeok = self.ttadak = False

    @staticmethod
    def thaw(t: TurnContext) -> _Turn:
        ctx = _Turn(t.seat, t.kind, t.card, t.month, t.last, t.before)
        ctx.matched, ctx.held, ctx.flipped, ctx.taken = t.matched, t.held, t.flipped, t.taken
        ctx.steals, ctx.ppeok, ctx.ttadak = t.steals, t.ppeok, t.ttadak
        return ctx

    def freeze(self) -> TurnContext:
        return TurnContext(*_turn_values(self))


_turn_values = attrgetter(*_TURN_FIELDS)
"""The fields of a ``TurnContext`` (or a ``_Turn``) as a tuple, in declaration order."""
assert _TURN_FIELDS == (
    "seat", "kind", "card", "month", "last", "before", "matched", "held", "flipped", "taken", "steals",
    "ppeok", "ttadak",
), "_Turn.freeze passes TurnContext's fields in order"


class _W:
    """A mutable working copy of a state for the duration of one step."""

    __slots__ = (
        "_order",
        "_scores",
        "carry",
        "dealer",
        "events",
        "floor",
        "go_seq",
        "gukjin",
        "payments",
        "phase",
        "plays",
        "quiet",
        "rules",
        "seats",
        "seed",
        "settlement",
        "stacks",
        "stock",
        "to_move",
        "turn",
    )
    rules: Rules
    seed: int
    dealer: int
    phase: Phase
    to_move: int
    seats: list[SeatState | _Seat]
    floor: list[int]
    stacks: list[int]
    stock: list[int]
    gukjin: str
    turn: TurnContext | None
    go_seq: int
    payments: list[Payment]
    carry: bool
    settlement: Settlement | None
    plays: list[PlayRecord]

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.quiet = False
        self._scores: dict[int, Score] = {}
        self._order: tuple[int, ...] | None = None

    def emit(self, kind: Callable[..., Event], *args: Any) -> None:
        """Record an event (not even built when the copy is ``quiet``: playouts)."""
        if not self.quiet:
            self.events.append(kind(*args))

    @classmethod
    def of(cls, s: State) -> _W:
        w = cls()
        w.rules, w.seed, w.dealer, w.phase, w.to_move = s.rules, s.seed, s.dealer, s.phase, s.to_move
        w.seats, w.floor, w.stacks, w.stock = list(s.seats), list(s.floor), list(s.stacks), list(s.stock)
        w.gukjin, w.turn, w.go_seq, w.payments = s.gukjin, s.turn, s.go_seq, list(s.payments)
        w.carry, w.settlement, w.plays = s.carry, s.settlement, list(s.plays)
        return w

    @classmethod
    def fresh(
        cls, rules: Rules, seed: int, dealer: int, hands: list[list[int]], floor: list[int],
        stock: list[int], carry: bool,
    ) -> _W:
        w = cls()
        w.rules, w.seed, w.dealer, w.phase, w.to_move = rules, seed, dealer, Phase.PLAY, dealer
        w.seats = [SeatState(hand=tuple(sorted(h))) for h in hands]
        w.floor, w.stacks, w.stock = floor, [NO_STACK] * 13, stock
        w.gukjin, w.turn, w.go_seq, w.payments = "open", None, 0, []
        w.carry, w.settlement, w.plays = carry, None, []
        return w

    def freeze(self, steps: int) -> State:
        return State(
            rules=self.rules, seed=self.seed, dealer=self.dealer, phase=self.phase,
            to_move=self.to_move,
            seats=tuple([s.freeze() if isinstance(s, _Seat) else s for s in self.seats]),
            floor=tuple(self.floor), stacks=tuple(self.stacks), stock=tuple(self.stock),
            gukjin=self.gukjin, turn=self.turn, go_seq=self.go_seq, payments=tuple(self.payments),
            carry=self.carry, settlement=self.settlement, steps=steps, plays=tuple(self.plays),
        )

    def upd(self, seat: int, **changes: object) -> None:
        s = self.seats[seat]
        if not isinstance(s, _Seat):
            s = self.seats[seat] = _Seat(s)
        for name, value in changes.items():
            setattr(s, name, value)
        if "captured" in changes or "sseul" in changes:
            self._scores.pop(seat, None)
        if "active" in changes:
            self._order = None

    def mut(self, seat: int) -> _Seat:
        """The seat as a mutable record (callers changing ``captured`` use ``take``)."""
        s = self.seats[seat]
        if type(s) is _Seat:
            return s
        m = self.seats[seat] = _Seat(s)  # type: ignore[arg-type]
        return m

    def take(self, seat: int, cards: tuple[int, ...]) -> None:
        m = self.mut(seat)
        m.captured += cards
        self._scores.pop(seat, None)

    def capture(self, ctx: _Turn, cards: tuple[int, ...], event: bool = True) -> None:
        seat = ctx.seat
        m = self.mut(seat)
        m.captured += cards
        self._scores.pop(seat, None)
        if event and not self.quiet:
            self.events.append(Captured(seat, cards))
        ctx.taken += cards

    def pay(self, payment: Payment) -> None:
        self.payments.append(payment)
        self.emit(InstantPaid, payment)

    def score(self, seat: int) -> Score:
        cached = self._scores.get(seat)
        if cached is None:
            s = self.seats[seat]
            cached = pile_score(s.captured, self.gukjin == "converted", s.sseul)
            self._scores[seat] = cached
        return cached

    def base(self, seat: int) -> int:
        """The seat's base score (``score(seat).total``), without building a ``Score``."""
        cached = self._scores.get(seat)
        if cached is not None:
            return cached.total
        s = self.seats[seat]
        return mask_total(mask_of(s.captured), self.gukjin == "converted", s.sseul)

    def order(self) -> tuple[int, ...]:
        if self._order is None:
            seats = self.seats
            turns = _TURN_ORDER[len(seats)][self.dealer]
            self._order = tuple([s for s in turns if seats[s].active])
        return self._order

    def has_turn_left(self, seat: int) -> bool:
        s = self.seats[seat]
        return s.active and (bool(s.hand) or (s.spare_flips > 0 and bool(self.stock)))


_SCORE_MEMO: dict[tuple[tuple[int, ...], bool, int], Score] = {}
_SCORE_MEMO_LIMIT = 1 << 14


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


def card_places(state: State) -> dict[int, str]:
    """Where every card is (``hand:N``, ``pile:N``, ``floor``, ``stock``, ``turn``).

    Raises ``AssertionError`` if a card is in two places or missing: the invariant
    that property tests check after every step.
    """
    places: dict[int, str] = {}

    def put(cards: Sequence[int], where: str) -> None:
        for c in cards:
            assert c not in places, f"card {c} is both in {places[c]} and {where}"
            places[c] = where

    for i, s in enumerate(state.seats):
        put(s.hand, f"hand:{i}")
        put(s.captured, f"pile:{i}")
    put(state.floor, "floor")
    put(state.stock, "stock")
    ctx = state.turn
    if ctx is not None:
        if state.phase is Phase.CHOOSE_HAND:
            put((ctx.card,), "turn")
        put(ctx.held, "turn")
        if state.phase is Phase.CHOOSE_FLIP:
            put((ctx.flipped,), "turn")
    expected = set(range(state.rules.deck_size))
    assert set(places) == expected, f"cards missing: {sorted(expected - set(places))}"
    return places


__all__ = [
    "ALL_CARDS", "Deal", "apply", "apply_unchecked", "card_places", "check", "legal_action_ids",
    "legal_actions", "new_round", "seat_score", "sellable", "shake_bomb_count",
]
