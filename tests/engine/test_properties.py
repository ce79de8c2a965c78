"""Property tests: random rounds of every preset, with the engine's invariants checked after every step.

Hypothesis draws the seed and every choice of the round, so a failure shrinks to a short, replayable
sequence: the config, the seed, and the choices as indices into ``legal_actions``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Sequence
from typing import Final, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gostop.engine import (
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    EngineError,
    Event,
    FlipOnly,
    Go,
    IllegalAction,
    JoinRound,
    KeepGukjin,
    MalformedAction,
    NotYourTurn,
    Phase,
    PlayCard,
    RoundOver,
    Rules,
    Score,
    SellGwang,
    SitOut,
    State,
    Stop,
    action_from_id,
    action_id,
    apply,
    card_places,
    event_from_json,
    event_to_json,
    legal_action_ids,
    legal_actions,
    new_round,
    seat_score,
    state_from_bytes,
    state_to_bytes,
)
from gostop.engine.events import RoundSettled, ScoreChanged
from testkit.configs import CONFIGS, config_id

MID_TURN: Final = frozenset({Phase.CHOOSE_FLIP, Phase.GUKJIN})
"""Decisions taken inside a turn after some captures. Scores are reported when the turn settles
(spec §3.4: steals, 국진 decision, score, then go/stop), so here the piles may be ahead of the last
``ScoreChanged``; every other phase lies between two settled turns."""

SEEDS: Final = st.integers(min_value=0, max_value=(1 << 64) - 1)
RANDOM_IDS_PER_STEP: Final = 6
STRUCTURAL_PER_STEP: Final = 6
USED_IDS: Final = frozenset({
    *range(51), *range(64, 64 + 51), *range(129, 141), 150, *range(160, 160 + 51),
    220, 221, 230, 231, 240, 241, 250, 251,
})
"""The action id table of ``engine.actions``."""

MALFORMED: Final[tuple[object, ...]] = (
    PlayCard(-1), PlayCard(51), PlayCard(True), PlayCard(cast(int, 5.0)), PlayCard(cast(int, "5")),
    Bomb(0), Bomb(13), ChooseCapture(-1), ChooseCapture(200), "play", 5, None,
)
"""Values that are not well-formed actions at all."""


class ScoreBoard:
    """The latest ``ScoreChanged`` breakdown of each seat (an empty score until one is reported)."""

    def __init__(self, seats: int) -> None:
        self.scores: list[Score] = [Score()] * seats

    def feed(self, events: Iterable[Event]) -> None:
        for e in events:
            if isinstance(e, ScoreChanged):
                assert e.total == e.score.total, e
                self.scores[e.seat] = e.score

    def check(self, state: State) -> None:
        if state.phase in MID_TURN:
            return
        for seat in range(len(state.seats)):
            assert seat_score(state, seat) == self.scores[seat], (
                f"seat {seat}: its pile scores {seat_score(state, seat)}, last reported {self.scores[seat]}"
            )


def check_events_json(events: Sequence[Event]) -> None:
    for e in events:
        text = event_to_json(e)
        back = event_from_json(text)
        assert back == e
        assert event_to_json(back) == text


def check_snapshot(state: State) -> None:
    blob = state_to_bytes(state)
    back = state_from_bytes(blob)
    assert back == state
    assert state_to_bytes(back) == blob


def check_legal(state: State) -> list[Action]:
    """The legal actions, checked against their ids; empty exactly when the round is over."""
    actions = legal_actions(state)
    ids = legal_action_ids(state)
    assert ids == [action_id(a) for a in actions]
    assert ids == sorted(set(ids)), "legal action ids must be unique and ascending"
    assert all(0 <= i < 256 and action_from_id(i) == a for i, a in zip(ids, actions, strict=True))
    if state.over:
        assert actions == [], "a finished round has no legal action"
        assert state.to_move == -1
    else:
        assert actions, f"no legal action in phase {state.phase.value}"
        assert 0 <= state.to_move < len(state.seats)
        # 4 players: the forced-out seat decides its own 광팔기; every other decision is a playing seat's.
        assert state.seats[state.to_move].active == (state.phase is not Phase.GWANG_SALE)
    return actions


def structural_candidates(state: State) -> list[Action]:
    """Well-formed actions of every kind: cards not in hand, 흔들기/폭탄 and captures of any card."""
    deck = range(state.rules.deck_size)
    hand = state.seats[state.to_move].hand if state.to_move >= 0 else ()
    out: list[Action] = [PlayCard(c) for c in deck if c not in hand]
    out += [PlayCard(c, shake=True) for c in deck]
    out += [Bomb(m) for m in range(1, 13)]
    out += [ChooseCapture(c) for c in deck]
    out += [
        FlipOnly(), KeepGukjin(), ConvertGukjin(), Go(), Stop(), JoinRound(), SitOut(), SellGwang(),
        DeclineGwangSale(),
    ]
    return out


def assert_rejected(
    state: State,
    twin: State,
    action: object,
    expected: type[EngineError] | tuple[type[EngineError], ...],
    *,
    seat: int | None = None,
) -> None:
    """``apply`` raises ``expected``, says why, and leaves the state equal to ``twin``."""
    with pytest.raises(expected) as info:
        apply(state, cast(Action, action), seat)
    assert str(info.value), "an engine error must say why"
    assert state == twin, f"rejected {action!r} changed the state"


def check_rejections(state: State, legal: list[Action], probe: random.Random) -> None:
    """Illegal ids from the whole id space, structurally illegal and malformed actions all fail,
    and a failed ``apply`` leaves the state (and its snapshot) exactly as it was."""
    blob = state_to_bytes(state)
    twin = copy.deepcopy(state)
    illegal = RoundOver if state.over else IllegalAction
    legal_ids = {action_id(a) for a in legal}
    for ident in probe.sample([i for i in range(256) if i not in legal_ids], RANDOM_IDS_PER_STEP):
        if ident in USED_IDS:
            assert_rejected(state, twin, action_from_id(ident), illegal)
        else:
            with pytest.raises(MalformedAction):
                action_from_id(ident)
    wrong = [a for a in structural_candidates(state) if a not in legal]
    for action in probe.sample(wrong, STRUCTURAL_PER_STEP):
        assert_rejected(state, twin, action, illegal)
    for bad in MALFORMED:
        assert_rejected(state, twin, bad, (RoundOver, MalformedAction) if state.over else MalformedAction)
    if not state.over:
        assert_rejected(state, twin, legal[0], NotYourTurn, seat=(state.to_move + 1) % len(state.seats))
        for no_seat in len(state.seats), -1:
            assert_rejected(state, twin, legal[0], EngineError, seat=no_seat)
    assert state_to_bytes(state) == blob, "a rejected action changed the snapshot"


def check_settlement(state: State, events: Sequence[Event]) -> None:
    settled = [e for e in events if isinstance(e, RoundSettled)]
    assert len(settled) == 1, "a round is settled exactly once"
    assert isinstance(events[-1], RoundSettled), "the settlement is the last event of a round"
    s = state.settlement
    assert s is not None and s == settled[0].settlement
    assert sum(s.points) == 0, s.points
    assert max(abs(p) for p in s.points) <= state.rules.round_points_bound, (s.points, state.rules)
    assert s.money == tuple(p * s.point_value for p in s.points)
    assert s.payments == state.payments
    net = [0] * len(state.seats)
    for p in s.payments:
        net[p.payer] -= p.points
        net[p.payee] += p.points
    for b in s.bills:
        net[b.seat] -= b.pays
        net[s.winner] += b.pays
    assert tuple(net) == s.points, "net points = instant payments + bills paid"
    if s.winner >= 0:
        assert s.winner in state.order
        assert sorted(b.seat for b in s.bills) == sorted(o for o in state.order if o != s.winner)
        assert sum(b.pays for b in s.bills) == sum(b.points for b in s.bills)
    else:
        assert s.bills == ()


def play_checked(rules: Rules, seed: int, data: st.DataObject) -> tuple[list[int], list[Event]]:
    """Play a round on hypothesis' choices, checking every invariant after every step."""
    probe = random.Random(data.draw(st.integers(0, 2**32 - 1), label="probe seed"))
    state, events = new_round(rules, seed)
    stream = list(events)
    board = ScoreBoard(rules.players)
    board.feed(events)
    check_snapshot(state)
    choices: list[int] = []
    while True:
        card_places(state)
        board.check(state)
        legal = check_legal(state)
        check_rejections(state, legal, probe)
        if state.over:
            break
        for action in legal:
            apply(state, action)
        choice = data.draw(st.integers(0, len(legal) - 1))
        choices.append(choice)
        steps = state.steps
        state, events = apply(state, legal[choice], state.to_move)
        assert state.steps == steps + 1
        board.feed(events)
        stream += events
        if probe.random() < 0.25:
            check_snapshot(state)
    check_snapshot(state)
    check_events_json(stream)
    check_settlement(state, stream)
    return choices, stream


def replay(rules: Rules, seed: int, choices: Sequence[int]) -> list[Event]:
    state, events = new_round(rules, seed)
    stream = list(events)
    for choice in choices:
        state, events = apply(state, legal_actions(state)[choice])
        stream += events
    assert state.over
    return stream


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, data=st.data())
def test_random_round_invariants(config: tuple[str, int], seed: int, data: st.DataObject) -> None:
    rules = Rules.preset(*config)
    choices, stream = play_checked(rules, seed, data)
    again = replay(rules, seed, choices)
    assert [event_to_json(e) for e in again] == [event_to_json(e) for e in stream], (
        "the same seed and the same choices must give the same events"
    )


@settings(max_examples=200, deadline=None)
@given(ident=st.integers(min_value=-5, max_value=300))
def test_action_ids_round_trip(ident: int) -> None:
    if ident not in USED_IDS:
        with pytest.raises(MalformedAction):
            action_from_id(ident)
        return
    assert action_id(action_from_id(ident)) == ident
