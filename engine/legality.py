"""What a seat may do: the legal actions in stable-id order, and the one check of an action that says
precisely why it is illegal.
"""

from __future__ import annotations

from typing import Final

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
from .cards import ALL_CARDS, CODE, MONTH, holds_three_of_a_month
from .errors import IllegalAction, NotYourTurn, RoundOver
from .state import Phase, State
from .working import Work

# ------------------------------------------------------------------------ actions


def legal_actions(state: State) -> list[Action]:
    """What the seat to move may do, in ascending stable-id order (empty when over)."""
    return legal_actions_of(state)


def legal_actions_of(state: State | Work) -> list[Action]:
    """``legal_actions`` of a frozen state or of a working copy (``Playout``)."""
    phase = state.phase
    if phase is Phase.PLAY:
        return _play_actions(state)
    if phase is Phase.CHOOSE_HAND or phase is Phase.CHOOSE_FLIP:
        return [ChooseCapture(c) for c in choice_cards(state)]
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


_PLAY: Final = tuple(PlayCard(c) for c in range(ALL_CARDS))
_SHAKE: Final = tuple(PlayCard(c, shake=True) for c in range(ALL_CARDS))
_BOMB: Final = tuple(Bomb(m) if m else None for m in range(13))
_FLIP_ONLY: Final = FlipOnly()


def _play_actions(state: State | Work) -> list[Action]:
    seat = state.seats[state.to_move]
    hand = seat.hand
    out: list[Action] = [_PLAY[c] for c in hand]
    if state.rules.shake_bomb and len(hand) >= 3 and holds_three_of_a_month(hand):
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


def choice_cards(state: State | Work) -> list[int]:
    ctx = state.turn
    assert ctx is not None
    month = ctx.month if state.phase is Phase.CHOOSE_HAND else MONTH[ctx.flipped]
    return sorted(c for c in state.floor if MONTH[c] == month)


def check(state: State, action: Action, seat: int | None = None) -> None:
    """Raise the precise reason why ``action`` is not legal now; return if it is.

    The single validation path of every action kind: ``apply`` calls it first.
    """
    phase = state.phase
    if phase is Phase.PLAY and type(action) is PlayCard and (seat is None or seat == state.to_move):
        # The commonest action, checked without listing: a plain play is legal iff held. Its
        # fields are read untyped (getattr): they are not known to be well formed yet, and the
        # compiled engine would reject a wrongly typed one before MalformedAction could.
        card, shake = getattr(action, "card"), getattr(action, "shake")  # noqa: B009
        if type(card) is int and not shake and card in state.seats[state.to_move].hand:
            return
    if phase is Phase.OVER:
        raise RoundOver("the round is over")
    action_id(action)  # raises MalformedAction for a malformed action
    if seat is not None and seat != state.to_move:
        raise NotYourTurn(f"it is seat {state.to_move}'s turn, not seat {seat}'s")
    # ``action in legal_actions(state)``, without listing them where the phase's actions are few
    # (a plain play of a held card returned above: one that reaches here is looked up in the list).
    if phase is Phase.CHOOSE_HAND or phase is Phase.CHOOSE_FLIP:
        if type(action) is ChooseCapture and action.card in choice_cards(state):
            return
    elif phase in _PAIRS:
        if type(action) in _PAIRS[phase]:
            return
    elif action in legal_actions(state):
        return
    raise IllegalAction(_explain(state, action))


_PAIRS: Final[dict[Phase, tuple[type, type]]] = {
    Phase.GO_STOP: (Go, Stop), Phase.GUKJIN: (KeepGukjin, ConvertGukjin), Phase.SIT_OUT: (JoinRound, SitOut),
    Phase.GWANG_SALE: (DeclineGwangSale, SellGwang),
}
"""The phases whose legal actions are always the same two (``legal_actions``), by class."""


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
        options = ", ".join(f"{c} ({CODE[c]})" for c in choice_cards(state))
        return f"card {action.card} ({CODE[action.card]}) is not one of the cards to choose from: {options}"
    return f"{name} is not possible now"  # pragma: no cover - every phase's actions are always legal
