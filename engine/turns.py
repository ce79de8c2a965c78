"""Playing: one step of a round per action (a play, a flip, a capture choice, 고/스톱, the 4-player
sit-out and 광 sale), its captures, steals and special events, and the round's end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .actions import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    Go,
    PlayCard,
    SellGwang,
    SitOut,
)
from .cards import GUKJIN, KIND, MONTH, MONTH_CARDS, PI_VALUE, Kind, is_bonus
from .dealing import chongtong, resolve_bonuses
from .events import (
    Bombed,
    BonusCaptured,
    CardFlipped,
    CardLaid,
    CardPlayed,
    FlipOnlyUsed,
    GukjinDecided,
    GwangSold,
    InstantLoss,
    InstantWin,
    Jjok,
    JoinedRound,
    Nagari,
    PiStolen,
    PpeokFormed,
    PpeokRecaptured,
    SatOut,
    Shaken,
    Sseul,
    Stopped,
    Ttadak,
    WentGo,
)
from .scoring import EMPTY_SCORE, go_score
from .settlement import Payment, PaymentReason, settle
from .state import NO_STACK, Phase, PlayRecord, StealCause, TurnKind
from .working import Turn, Work

_PPEOK_PAYMENTS: Final[tuple[PaymentReason, ...]] = ("first_ppeok", "second_ppeok", "third_ppeok")
"""The payments of 첫뻑, 연뻑 and 삼연뻑, by the turn of the seat's 뻑."""


def step(w: Work, action: Action) -> None:
    """Advance the working copy by one legal action."""
    phase = w.phase
    if phase is Phase.PLAY:
        w.plays += (
            PlayRecord(w.to_move, _play_id(action), tuple(w.floor), tuple([len(s.captured) for s in w.seats])),
        )
        if isinstance(action, PlayCard):
            _play(w, action.card, _shakes(action))
        elif isinstance(action, Bomb):
            _bomb(w, action.month)
        else:
            _flip_only(w)
    elif phase is Phase.CHOOSE_HAND:
        assert isinstance(action, ChooseCapture) and w.turn is not None
        ctx = Turn.thaw(w.turn)
        w.floor.remove(action.card)
        ctx.held = (ctx.card, action.card)
        _after_play(w, ctx)
    elif phase is Phase.CHOOSE_FLIP:
        assert isinstance(action, ChooseCapture) and w.turn is not None
        ctx = Turn.thaw(w.turn)
        w.floor.remove(action.card)
        w.capture(ctx, (ctx.flipped, action.card))
        _settle_turn(w, ctx)
    elif phase is Phase.GUKJIN:
        assert w.turn is not None
        convert = isinstance(action, ConvertGukjin)
        final = convert or w.rules.gukjin == "on_capture"
        w.gukjin = "converted" if convert else ("kept" if final else "open")
        for seat in range(len(w.seats)):
            w.rescore(seat)
        if not w.quiet:
            w.events.append(GukjinDecided(w.to_move, convert, final))
        _finish_turn(w, Turn.thaw(w.turn))
    elif phase is Phase.GO_STOP:
        if isinstance(action, Go):
            _go(w)
        else:
            base = w.base(w.to_move)
            if not w.quiet:
                w.events.append(Stopped(w.to_move, base, False))
            w.finish(settle(w, w.to_move, "stop", "stop"))
    elif phase is Phase.SIT_OUT:
        if isinstance(action, SitOut):
            _sit_out(w, w.to_move, forced=False)
        else:
            if not w.quiet:
                w.events.append(JoinedRound(w.to_move))
            nxt = (w.to_move + 1) % 4
            if nxt == (w.dealer + 3) % 4:
                _sit_out(w, nxt, forced=True)
            else:
                w.to_move = nxt
    elif phase is Phase.GWANG_SALE:
        if isinstance(action, SellGwang):
            _sell_gwang(w, w.to_move)
        _begin_play(w)


def _shakes(play: PlayCard) -> bool:
    """``play.shake``, whatever value it holds (any truthy value declares 흔들기, as in the
    interpreted engine; compiled code reading it as a ``bool`` would reject a ``1``)."""
    return bool(getattr(play, "shake"))  # noqa: B009


def _play_id(action: Action) -> int:
    """``action_id`` of a legal play (``PlayCard``, ``Bomb`` or ``FlipOnly``), without its checks."""
    if isinstance(action, PlayCard):
        return action.card + 64 if _shakes(action) else action.card
    if isinstance(action, Bomb):
        return 128 + action.month
    return 150


# -------------------------------------------------------------------- 4 players


def sellable(hand: Sequence[int]) -> tuple[int, ...]:
    """Cards a forced-out seat may sell: 광, 쌍피 and bonus 피."""
    return tuple(c for c in hand if KIND[c] is Kind.GWANG or PI_VALUE[c] >= 2)


def _sit_out(w: Work, seat: int, forced: bool) -> None:
    w.mut(seat).active = False
    w.reorder()
    if not w.quiet:
        w.events.append(SatOut(seat, forced))
    if forced and sellable(w.seats[seat].hand):
        w.phase, w.to_move = Phase.GWANG_SALE, seat
    else:
        _begin_play(w)


def _sell_gwang(w: Work, seat: int) -> None:
    cards = sellable(w.seats[seat].hand)
    price = w.rules.gwang_sale_price
    if not w.quiet:
        w.events.append(GwangSold(seat, cards, price))
    for payer in w.order():
        w.pay(Payment(payer, seat, price * len(cards), "gwang_sale"))


def _begin_play(w: Work) -> None:
    before = [w.score(s) for s in range(len(w.seats))]
    resolve_bonuses(w, hands_too=True, seats=w.order())
    w.report_scores(before)
    if not chongtong(w):
        w.phase, w.to_move = Phase.PLAY, w.dealer


# ------------------------------------------------------------------------- turns


def _start_turn(w: Work, kind: TurnKind, hand_after: int, flips_after: int, card: int = -1, month: int = 0) -> Turn:
    seat = w.to_move
    me = w.mut(seat)
    me.turns += 1
    last = hand_after == 0 and flips_after == 0
    if w.quiet:
        return Turn(seat, kind, card, month, last, EMPTY_SCORE)
    return Turn(seat, kind, card, month, last, None, me.captured, me.sseul, w.gukjin == "converted")


def _play(w: Work, card: int, shake: bool) -> None:
    seat = w.to_move
    me = w.mut(seat)
    hand = me.hand
    m = MONTH[card]
    ctx = _start_turn(w, "play", len(hand) - 1, me.spare_flips, card, m)
    if shake:
        shown = tuple(sorted(c for c in hand if MONTH[c] == m))
        me.revealed += tuple(c for c in shown if c != card)
        me.shakes += (m,)
        if not w.quiet:
            w.events.append(Shaken(seat, m, shown))
    if card in me.revealed:
        me.revealed = tuple(c for c in me.revealed if c != card)
    i = hand.index(card)
    me.hand = hand[:i] + hand[i + 1:]
    if not w.quiet:
        w.events.append(CardPlayed(seat, card, shake))
    matches = [c for c in w.floor if MONTH[c] == m]
    n = len(matches)
    if n == 0:
        w.floor.append(card)
        if not w.quiet:
            w.events.append(CardLaid(seat, card))
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


def _bomb(w: Work, month: int) -> None:
    seat = w.to_move
    s = w.seats[seat]
    cards = tuple(sorted(c for c in s.hand if MONTH[c] == month))
    target = next(c for c in w.floor if MONTH[c] == month)
    spare = s.spare_flips + 2
    ctx = _start_turn(w, "bomb", len(s.hand) - 3, spare, month=month)
    ctx.matched = 1
    me = w.mut(seat)
    me.hand = tuple([c for c in me.hand if MONTH[c] != month])
    me.revealed = tuple([c for c in me.revealed if MONTH[c] != month])
    me.bombs += (month,)
    me.spare_flips = spare
    if not w.quiet:
        w.events.append(Bombed(seat, month, cards, spare))
    w.floor.remove(target)
    w.capture(ctx, (*cards, target))
    ctx.steals += ("bomb",)
    _after_play(w, ctx)


def _flip_only(w: Work) -> None:
    seat = w.to_move
    left = w.seats[seat].spare_flips - 1
    ctx = _start_turn(w, "flip", len(w.seats[seat].hand), left)
    w.mut(seat).spare_flips = left
    if not w.quiet:
        w.events.append(FlipOnlyUsed(seat, left))
    _after_play(w, ctx)


def _take_stack(w: Work, ctx: Turn, month: int) -> None:
    """Capturing a three-card stack: a 뻑 stack pays its capturer."""
    maker = w.stacks[month]
    w.set_stack(month, NO_STACK)
    if maker >= 0:
        own = maker == ctx.seat
        if not w.quiet:
            w.events.append(PpeokRecaptured(ctx.seat, month, maker, own))
        ctx.steals += ("jappeok", "jappeok") if own else ("ppeok",)


def _after_play(w: Work, ctx: Turn) -> None:
    """Flip the stock (bonus cards are taken and flipped past) and match the flip."""
    seat = ctx.seat
    flipped = -1
    while w.stock:
        c = w.stock.pop(0)
        if not w.quiet:
            w.events.append(CardFlipped(seat, c))
        if c >= MONTH_CARDS:  # a bonus card
            w.capture(ctx, (c,), event=False)
            if not w.quiet:
                w.events.append(BonusCaptured(seat, c, "flip", -1))
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
            if not w.quiet:
                w.events.append(Jjok(seat, m, steals))
            if steals:
                ctx.steals += ("jjok",)
        elif ctx.matched == 1:  # 뻑
            if ctx.last and r.last_turn_ppeok_captured:
                w.capture(ctx, (*ctx.held, flipped))
                ctx.held = ()
            else:
                stack = (*ctx.held, flipped)
                w.floor.extend(stack)
                w.set_stack(m, seat)
                me = w.mut(seat)
                me.ppeok_turns += (me.turns,)
                if not w.quiet:
                    w.events.append(PpeokFormed(seat, m, stack, len(me.ppeok_turns)))
                ctx.held, ctx.ppeok = (), True
        else:  # 따닥
            other = next(c for c in w.floor if MONTH[c] == m)
            w.floor.remove(other)
            w.capture(ctx, (*ctx.held, other, flipped))
            ctx.held = ()
            steals = not (ctx.last and "ttadak" in r.last_turn_no_steal)
            if not w.quiet:
                w.events.append(Ttadak(seat, m, steals))
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
        if not w.quiet:
            w.events.append(CardLaid(seat, flipped))
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


def _settle_turn(w: Work, ctx: Turn) -> None:
    """쓸, steals, instant payments, then the 국진 decision if one is due."""
    r = w.rules
    seat = ctx.seat
    if not w.floor and any(not is_bonus(c) for c in ctx.taken):
        if r.sseul_mode == "point":
            w.mut(seat).sseul += 1
            w.rescore(seat)
            if not w.quiet:
                w.events.append(Sseul(seat, False, 1))
        else:
            steals = not (ctx.last and "sseul" in r.last_turn_no_steal)
            if not w.quiet:
                w.events.append(Sseul(seat, steals, 0))
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
            reason = _PPEOK_PAYMENTS[t - 1]
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


def _steal(w: Work, seat: int, victim: int, reasons: tuple[StealCause, ...]) -> None:
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
    w.mut(victim).captured = tuple(pile)
    w.rescore(victim)
    if taken:
        w.take(seat, tuple(taken))
    if not w.quiet:
        w.events.append(PiStolen(seat, victim, tuple(taken), len(reasons), reasons))
    if before is not None:
        w.report_score(victim, before)


def _finish_turn(w: Work, ctx: Turn) -> None:
    """Scores, instant outcomes, then go/stop or the next seat."""
    r = w.rules
    seat = ctx.seat
    w.turn = None
    s = w.mut(seat)
    s.dry_turns = 0 if ctx.taken else s.dry_turns + 1
    w.report_turn_score(ctx)
    if ctx.ppeok and len(s.ppeok_turns) == 3 and r.three_ppeok != "none":
        if r.three_ppeok == "win":
            if not w.quiet:
                w.events.append(InstantWin(seat, "three_ppeok", r.three_ppeok_points))
            w.finish(settle(w, seat, "instant_win", "three_ppeok", fixed=r.three_ppeok_points))
        else:
            if not w.quiet:
                w.events.append(InstantLoss(seat, "three_ppeok"))
            others = [o for o in w.order() if o != seat]
            winner = max(others, key=lambda o: _final_score(w, o))
            w.finish(settle(w, winner, "instant_loss", "three_ppeok", minimum=r.go_threshold))
        return
    if r.heodang and s.dry_turns >= r.heodang_turns:
        if not w.quiet:
            w.events.append(InstantWin(seat, "heodang", r.heodang_points))
        w.finish(settle(w, seat, "instant_win", "heodang", fixed=r.heodang_points))
        return
    base = w.base(seat)
    if base >= r.go_threshold and (s.gos == 0 or base > s.last_go_base):
        if not w.has_turn_left(seat) and r.last_action_go == "auto_stop":
            if not w.quiet:
                w.events.append(Stopped(seat, base, True))
            w.finish(settle(w, seat, "stop", "stop"))
            return
        w.phase, w.to_move = Phase.GO_STOP, seat
        return
    _advance(w, seat)


def _final_score(w: Work, seat: int) -> int:
    s = w.seats[seat]
    return go_score(w.base(seat), s.gos, w.rules.go_scoring)


def _go(w: Work) -> None:
    seat = w.to_move
    base = w.base(seat)
    w.go_seq += 1
    me = w.mut(seat)
    me.gos += 1
    me.last_go_base, me.last_go_order = base, w.go_seq
    if not w.quiet:
        w.events.append(WentGo(seat, me.gos, base))
    if w.rules.last_action_go == "allowed" and not any(
        w.has_turn_left(o) for o in w.order() if o != seat
    ):
        if not w.quiet:
            w.events.append(Stopped(seat, base, True))
        w.finish(settle(w, seat, "stop", "last_go"))
        return
    _advance(w, seat)


def _advance(w: Work, seat: int) -> None:
    order = w.order()
    i = order.index(seat)
    for k in range(1, len(order) + 1):
        nxt = order[(i + k) % len(order)]
        if w.has_turn_left(nxt):
            w.phase, w.to_move = Phase.PLAY, nxt
            return
    _exhausted(w)


def _exhausted(w: Work) -> None:
    """Nobody stopped and no seat has a turn left."""
    r = w.rules
    if r.exhausted == "best_score":
        ready = [o for o in w.order() if w.base(o) >= r.go_threshold]
        if ready:
            finals = {o: _final_score(w, o) for o in ready}
            top = max(finals.values())
            best = [o for o in ready if finals[o] == top]
            if len(best) == 1:
                w.finish(settle(w, best[0], "best_score", "cards_exhausted"))
                return
            if not w.quiet:
                w.events.append(Nagari("tied_scores"))
            w.finish(settle(w, -1, "nagari", "tied_scores"))
            return
    if not w.quiet:
        w.events.append(Nagari("cards_exhausted"))
    w.finish(settle(w, -1, "nagari", "cards_exhausted"))
