"""What one seat (or a spectator) may know: views and redacted events.

A view never reveals another seat's hand (beyond cards shown by 흔들기 or sold by
광팔기), a sitting-out hand, or the stock order. ``redact`` applies the same rule to
events, so a seat's event stream can be sent to it as is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .actions import Action
from .cards import HIDDEN, MONTH
from .events import BonusCaptured, Dealt, Event
from .legality import choice_cards, legal_actions
from .rules import Rules
from .scoring import Score, seat_score
from .settlement import Payment, Settlement, shake_bomb_count
from .state import NO_STACK, Gukjin, Phase, PlayRecord, State, TurnContext

SPECTATOR = -1


@dataclass(frozen=True, slots=True)
class SeatView:
    """One seat as seen by the viewer."""

    seat: int
    active: bool
    hand_size: int
    hand: tuple[int, ...]
    """The whole hand for the viewer's own seat; otherwise only revealed cards."""
    revealed: tuple[int, ...]
    captured: tuple[int, ...]
    score: Score
    gos: int
    last_go_base: int
    shakes: tuple[int, ...]
    bombs: tuple[int, ...]
    multiplier: int
    """흔들기/폭탄 doubling this seat would get if it won (×2^k)."""
    spare_flips: int
    ppeok: int
    turns: int
    ppeok_turns: tuple[int, ...] = ()
    """Own turn numbers on which this seat made a 뻑 (첫뻑/연뻑 are public)."""
    dry_turns: int = 0
    """Consecutive own turns capturing nothing (허당 is public)."""
    last_go_order: int = 0
    sseul: int = 0


@dataclass(frozen=True, slots=True)
class Stack:
    """Three cards of a month stacked on the floor: a 뻑 (maker ≥ 0) or the starting triple (-1)."""

    month: int
    maker: int


@dataclass(frozen=True, slots=True)
class Pending:
    """The decision the round waits for, and what the viewer may see of it."""

    phase: Phase
    seat: int
    played: int
    """Card played this turn and not settled yet (-1 none)."""
    flipped: int
    options: tuple[int, ...]
    """Floor cards to choose from (capture choices)."""


@dataclass(frozen=True, slots=True)
class View:
    viewer: int
    """Seat, or ``SPECTATOR`` (-1)."""
    rules_name: str
    dealer: int
    phase: Phase
    to_move: int
    floor: tuple[int, ...]
    stacks: tuple[Stack, ...]
    stock_count: int
    seats: tuple[SeatView, ...]
    gukjin: Gukjin
    carry: bool
    pending: Pending | None
    legal_actions: tuple[Action, ...]
    """The viewer's legal actions (empty unless it is the viewer's decision)."""
    payments: tuple[Payment, ...]
    settlement: Settlement | None
    rules: Rules | None = None
    go_seq: int = 0
    turn: TurnContext | None = None
    """The turn in progress (every card in it is face up)."""
    steps: int = 0
    plays: tuple[PlayRecord, ...] = ()
    """Every play of the round so far, oldest first: seat, action, and the floor and pile
    sizes it was decided on (all public; see ``engine.state.PlayRecord``)."""


def view(state: State, seat: int = SPECTATOR) -> View:
    """The round as ``seat`` sees it (``SPECTATOR`` for a spectator)."""
    if not SPECTATOR <= seat < len(state.seats):
        raise ValueError(f"no seat {seat}")
    seats = []
    for i, s in enumerate(state.seats):
        own = i == seat
        seats.append(
            SeatView(
                seat=i,
                active=s.active,
                hand_size=len(s.hand),
                hand=s.hand if own else s.revealed,
                revealed=s.revealed,
                captured=s.captured,
                score=seat_score(state, i),
                gos=s.gos,
                last_go_base=s.last_go_base,
                shakes=s.shakes,
                bombs=s.bombs,
                multiplier=1 << shake_bomb_count(state.rules, s.shakes, s.bombs),
                spare_flips=s.spare_flips,
                ppeok=len(s.ppeok_turns),
                turns=s.turns,
                ppeok_turns=s.ppeok_turns,
                dry_turns=s.dry_turns,
                last_go_order=s.last_go_order,
                sseul=s.sseul,
            )
        )
    stacks = tuple(
        Stack(m, maker) for m, maker in enumerate(state.stacks) if m and maker != NO_STACK
    )
    pending = None
    if state.phase is not Phase.OVER:
        ctx = state.turn
        played = ctx.card if ctx is not None and state.phase is Phase.CHOOSE_HAND else -1
        flipped = ctx.flipped if ctx is not None and state.phase is Phase.CHOOSE_FLIP else -1
        options = (
            tuple(choice_cards(state))
            if state.phase in (Phase.CHOOSE_HAND, Phase.CHOOSE_FLIP)
            else ()
        )
        pending = Pending(state.phase, state.to_move, played, flipped, options)
    mine = tuple(legal_actions(state)) if seat == state.to_move and seat != SPECTATOR else ()
    return View(
        viewer=seat,
        rules_name=state.rules.name,
        dealer=state.dealer,
        phase=state.phase,
        to_move=state.to_move,
        floor=state.floor,
        stacks=stacks,
        stock_count=len(state.stock),
        seats=tuple(seats),
        gukjin=state.gukjin,
        carry=state.carry,
        pending=pending,
        legal_actions=mine,
        payments=state.payments,
        settlement=state.settlement,
        rules=state.rules,
        go_seq=state.go_seq,
        turn=state.turn,
        steps=state.steps,
        plays=state.plays,
    )


def redact(event: Event, seat: int = SPECTATOR) -> Event:
    """The event as ``seat`` may see it: other hands and hidden draws become ``HIDDEN``."""
    if isinstance(event, Dealt):
        hands = tuple(h if i == seat else (HIDDEN,) * len(h) for i, h in enumerate(event.hands))
        return replace(event, hands=hands)
    if isinstance(event, BonusCaptured) and event.source == "hand" and event.seat != seat:
        return replace(event, replacement=HIDDEN)
    return event


def redact_all(events: list[Event] | tuple[Event, ...], seat: int = SPECTATOR) -> list[Event]:
    """``redact`` over a list of events."""
    return [redact(e, seat) for e in events]


def months_of(cards: tuple[int, ...]) -> tuple[int, ...]:
    """Months of a card tuple (bonus cards: 0); a small helper for frontends."""
    return tuple(MONTH[c] for c in cards)
