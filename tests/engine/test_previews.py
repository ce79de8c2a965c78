"""Previews (``engine.previews``): the stop settlement, what a 고 adds, 국진 either way, what a play
takes and the sets within reach are the engine's own values, and no hidden card changes any of them.

The hidden cards (other hands, the stock) are redealt in every way ``determinize`` may draw them,
consistent with the view: each preview stays the same, and what the play or decision then does in
the redealt round agrees with it.
"""

from __future__ import annotations

import random
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gostop.engine import (
    SPECTATOR,
    Action,
    Bomb,
    ConvertGukjin,
    FlipOnly,
    Go,
    KeepGukjin,
    Phase,
    PlayCard,
    Rules,
    State,
    Stop,
    apply,
    go_score,
    legal_actions,
    new_round,
    seat_score,
    view,
)
from gostop.engine.cards import MONTH
from gostop.engine.determinize import determinize
from gostop.engine.events import Jjok, PpeokFormed, Ttadak
from gostop.engine.previews import (
    SETS,
    CaptureHint,
    GukjinPreview,
    Reach,
    StopPreview,
    capture_hint,
    capture_hints,
    go_terms,
    gukjin_preview,
    reach,
    stop_preview,
)
from gostop.engine.views import View
from testkit.configs import CONFIGS, config_id

REDEALS: Final = 3
"""Redeals of the hidden cards per view checked."""


Previews = tuple[StopPreview | None, GukjinPreview | None, tuple[CaptureHint | None, ...], tuple[Reach, ...]]


def previews(v: View) -> Previews:
    return stop_preview(v), gukjin_preview(v), capture_hints(v), reach(v)


def month_of(action: Action) -> int:
    """The month a play plays (0 for a 빈 내기)."""
    if isinstance(action, Bomb):
        return action.month
    return MONTH[action.card] if isinstance(action, PlayCard) else 0


def check_hint(state: State, action: Action, hint: CaptureHint) -> None:
    """What ``action`` does in ``state`` (one redeal) agrees with its hint."""
    seat = state.to_move
    after, events = apply(state, action)
    pile = set(after.seats[seat].captured)
    month = month_of(action)
    same_month_flip = any(isinstance(e, (PpeokFormed, Jjok, Ttadak)) for e in events)
    if same_month_flip:
        assert hint.month_unseen > 0, "a flip of the month came from no unseen card"
    if isinstance(action, FlipOnly):
        assert hint == CaptureHint()
        return
    if hint.choose_from:
        assert after.phase is Phase.CHOOSE_HAND and after.turn is not None
        assert tuple(sorted(c for c in state.floor if MONTH[c] == month)) == hint.choose_from
        return
    if len(hint.takes) == 1 and isinstance(action, PlayCard):
        assert set(hint.takes) <= pile or any(isinstance(e, PpeokFormed) for e in events)
    else:
        assert set(hint.takes) <= pile
    if not hint.takes and not same_month_flip and isinstance(action, PlayCard):
        assert action.card in after.floor, "a card with nothing to take is laid"


def check_view(state: State, seat: int, rng: random.Random) -> None:
    seen = view(state, seat)
    want = previews(seen)
    stop, gukjin, hints, _ = want
    if stop is not None:
        assert stop.settlement == apply(state, Stop())[0].settlement
        went, _ = apply(state, Go())
        assert stop.go_settlement == went.settlement
    if gukjin is not None:
        keep, _ = apply(state, KeepGukjin())
        assert seat_score(keep, seat) == gukjin.keep
        converted, _ = apply(state, ConvertGukjin())
        assert seat_score(converted, seat) == gukjin.convert
    for _ in range(REDEALS):
        sample = determinize(seen, rng)
        again = view(sample, seat)
        assert previews(again) == want
        if stop is not None:
            assert stop.settlement == apply(sample, Stop())[0].settlement
        for action, hint in zip(seen.legal_actions, hints, strict=True):
            if hint is not None:
                check_hint(sample, action, hint)


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), data=st.data())
def test_no_hidden_card_changes_a_preview(config: tuple[str, int], seed: int, data: st.DataObject) -> None:
    rules = Rules.preset(*config)
    state, _ = new_round(rules, seed)
    rng = random.Random(seed)
    while not state.over:
        public = reach(view(state, SPECTATOR))
        for seat in range(rules.players):
            assert reach(view(state, seat)) == public, "every viewer sees the same reach"
        check_view(state, state.to_move, rng)
        actions = legal_actions(state)
        choice = data.draw(st.integers(min_value=0, max_value=len(actions) - 1), label="choice")
        if state.phase is Phase.GO_STOP and data.draw(st.booleans(), label="go on"):
            choice = actions.index(Go())
        state, _ = apply(state, actions[choice])


def test_previews_only_for_the_seat_deciding() -> None:
    rules = Rules.preset("standard")
    for seed in range(60):
        state, _ = new_round(rules, seed)
        while not state.over and state.phase is not Phase.GO_STOP:
            state, _ = apply(state, legal_actions(state)[-1])
        if state.phase is Phase.GO_STOP:
            break
    else:
        pytest.fail("no seed reached a go/stop decision")
    assert stop_preview(view(state, state.to_move)) is not None
    assert stop_preview(view(state, 1 - state.to_move)) is None
    assert stop_preview(view(state, SPECTATOR)) is None
    assert capture_hints(view(state, state.to_move)) == (None, None)


def test_go_terms_make_the_go_score() -> None:
    for scoring in ("standard", "additive"):
        for base in range(0, 40):
            for gos in range(0, 10):
                t = go_terms(base, gos, scoring)
                assert (base + t.add) * t.multiplier == t.go_score == go_score(base, gos, scoring)
    assert go_terms(7, 2, "standard").add == 2 and go_terms(7, 3, "standard").multiplier == 2
    assert go_terms(7, 3, "standard").go_score == 18 and go_terms(7, 3, "additive").go_score == 20


def test_reach_counts_piles() -> None:
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 11)
    rng = random.Random(0)
    while not state.over:
        state, _ = apply(state, rng.choice(legal_actions(state)))
        got = reach(view(state))
        for seat, r in enumerate(got):
            mine = set(state.seats[seat].captured)
            others: set[int] = set().union(*(set(s.captured) for i, s in enumerate(state.seats) if i != seat))
            for name, cards in SETS:
                sr = getattr(r, name)
                assert sr.captured == len(cards & mine)
                assert sr.open == len(cards) - len(cards & mine) - len(cards & others)


def test_a_hint_per_play() -> None:
    state, _ = new_round(Rules.preset("standard"), 4)
    seen = view(state, state.to_move)
    hints = capture_hints(seen)
    assert len(hints) == len(seen.legal_actions) and all(h is not None for h in hints)
    for action, hint in zip(seen.legal_actions, hints, strict=True):
        assert hint == capture_hint(seen, action)
        assert hint is not None
        floor = tuple(c for c in seen.floor if MONTH[c] == month_of(action))
        two = len(floor) == 2 and isinstance(action, PlayCard)
        assert (hint.choose_from if two else hint.takes) == tuple(sorted(floor))
