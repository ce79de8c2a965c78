"""The engine's fast paths agree with the plain definitions they stand in for."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from gostop.engine import (
    PRESET_PLAYERS,
    PRESETS,
    Action,
    Bomb,
    ChooseCapture,
    EngineError,
    IllegalAction,
    MalformedAction,
    NotYourTurn,
    Phase,
    PlayCard,
    RoundOver,
    Rules,
    State,
    action_from_id,
    action_id,
    apply,
    check,
    legal_actions,
    new_round,
)
from gostop.engine.cards import ALL_CARDS, mask_of
from gostop.engine.legality import _explain as explain
from gostop.engine.scoring import mask_score, mask_total, same_score, score


def test_mask_total_is_the_score_total() -> None:
    rng = random.Random(2024)
    for _ in range(20_000):
        pile = rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1))
        converted = rng.random() < 0.3
        sseul = rng.randrange(3)
        assert mask_total(mask_of(pile), converted, sseul) == score(pile, converted, sseul).total, pile


def test_mask_score_is_the_score() -> None:
    rng = random.Random(2025)
    for _ in range(20_000):
        pile = rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1))
        converted = rng.random() < 0.3
        sseul = rng.randrange(3)
        assert mask_score(mask_of(pile), converted, sseul) == score(pile, converted, sseul), pile


def test_same_score_is_equality() -> None:
    rng = random.Random(2026)
    scores = [score(rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1)), rng.random() < 0.3, rng.randrange(2))
              for _ in range(300)]
    for a in scores:
        for b in scores[:40]:
            assert same_score(a, b) == (a == b)
        assert same_score(a, replace(a))


def test_mask_of_is_the_sum_of_the_cards_bits() -> None:
    rng = random.Random(2027)
    for _ in range(2_000):
        cards = rng.sample(range(ALL_CARDS), rng.randrange(ALL_CARDS + 1))
        assert mask_of(cards) == sum(1 << c for c in cards)
    assert mask_of(()) == 0 and mask_of((-1,)) == 1 << 50, "an index of BIT, as before"


def reference_check(state: State, action: Action, seat: int | None = None) -> None:
    """``check`` as it was before its fast paths: the action checked, then looked for in the list."""
    if state.phase is Phase.OVER:
        raise RoundOver("the round is over")
    action_id(action)
    if seat is not None and seat != state.to_move:
        raise NotYourTurn(f"it is seat {state.to_move}'s turn, not seat {seat}'s")
    if state.phase is Phase.PLAY and type(action) is PlayCard and not action.shake:
        if action.card in state.seats[state.to_move].hand:
            return
    elif action in legal_actions(state):
        return
    raise IllegalAction(explain(state, action))


def outcome(check_fn: Callable[..., None], state: State, action: Action, seat: int | None) -> tuple[str, str]:
    try:
        check_fn(state, action, seat)
    except EngineError as error:
        return type(error).__name__, str(error)
    return "legal", ""


def test_check_is_the_reference_check_on_every_action_of_random_positions() -> None:
    """``check`` lists no actions for the commonest ones (a held card, a capture choice, 고/스톱,
    국진, the 4-player decisions): its verdict and message are those of the plain definition, on
    every action id, malformed actions and wrong seats, at every position of random rounds."""
    chooser = random.Random(26)
    malformed: list[Any] = [PlayCard(True), PlayCard(cast(int, "5")), PlayCard(5, shake=cast(bool, 1)),
                            ChooseCapture(cast(int, None)), ChooseCapture(51), Bomb(13), PlayCard(cast(int, 5.0))]
    candidates = [action_from_id(i) for i in range(256) if _is_id(i)] + malformed
    checked = 0
    for preset in PRESETS:
        for players in PRESET_PLAYERS[preset]:
            rules = Rules.preset(preset, players=players)
            for seed in range(3):
                state, _ = new_round(rules, seed)
                while True:
                    for action in candidates:
                        for seat in (None, state.to_move, (state.to_move + 1) % players):
                            assert outcome(check, state, action, seat) == outcome(reference_check, state, action, seat)
                            checked += 1
                    if state.over:
                        break
                    legal = legal_actions(state)
                    state, _ = apply(state, legal[chooser.randrange(len(legal))])
    assert checked > 100_000


def _is_id(ident: int) -> bool:
    try:
        action_from_id(ident)
    except MalformedAction:
        return False
    return True
