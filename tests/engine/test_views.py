"""Hidden information: views, event redaction and error messages never leak a hidden card."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from gostop.engine import (
    CODE,
    HIDDEN,
    SPECTATOR,
    Action,
    Bomb,
    ChooseCapture,
    ConvertGukjin,
    DeclineGwangSale,
    Event,
    FlipOnly,
    Go,
    IllegalAction,
    JoinRound,
    KeepGukjin,
    NotYourTurn,
    Phase,
    PlayCard,
    RoundOver,
    Rules,
    SellGwang,
    SitOut,
    State,
    Stop,
    action_id,
    apply,
    legal_actions,
    new_round,
    redact,
    redact_all,
    view,
)
from gostop.engine.events import BonusCaptured, Dealt, GwangSold
from gostop.engine.rng import Rng
from gostop.engine.serialize import to_data

CONFIGS: list[tuple[str, int]] = [
    ("standard", 2), ("standard", 3), ("classic", 4), ("house", 3), ("arcade", 2),
]


def cfg_id(config: tuple[str, int]) -> str:
    return f"{config[0]}-{config[1]}p"


Step = tuple[State, list[Event]]
"""A state and the events that produced it (the deal's events for the first state)."""


def play(rules: Rules, seed: int, chooser_seed: int) -> Iterator[Step]:
    """Every state of a random round, each with the events of the step that led to it.

    The random player always shakes when it can (흔들기 is rare otherwise), so that
    revealed hand cards are exercised.
    """
    state, events = new_round(rules, seed)
    yield state, events
    chooser = Rng(chooser_seed)
    while not state.over:
        actions = legal_actions(state)
        shakes = [a for a in actions if isinstance(a, PlayCard) and a.shake]
        pool = shakes or actions
        state, events = apply(state, pool[chooser.below(len(pool))])
        yield state, events


def hidden_from(state: State, viewer: int, sold: set[int]) -> set[int]:
    """Cards ``viewer`` may not know: the stock and other seats' unrevealed hand cards."""
    out = set(state.stock)
    for i, s in enumerate(state.seats):
        if i != viewer:
            out |= set(s.hand) - set(s.revealed) - sold
    return out


VIEW_CARD_KEYS = frozenset(
    {"hand", "revealed", "captured", "floor", "options", "played", "flipped", "card", "held", "taken"}
)
EVENT_CARD_KEYS = frozenset({"hands", "floor", "card", "cards", "replacement"})


def card_ints(data: Any, keys: frozenset[str], under_card_key: bool = False) -> Iterator[int]:
    """Every int found under one of ``keys`` (at any depth) in ``to_data`` output."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from card_ints(v, keys, k in keys)
    elif isinstance(data, list):
        for x in data:
            yield from card_ints(x, keys, under_card_key)
    elif under_card_key and isinstance(data, int) and not isinstance(data, bool):
        yield data


def all_keys(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from all_keys(v)
    elif isinstance(data, list):
        for x in data:
            yield from all_keys(x)


def check_view(state: State, viewer: int, sold: set[int]) -> None:
    v = view(state, viewer)
    assert v.viewer == viewer
    assert v.stock_count == len(state.stock)
    assert v.floor == state.floor
    assert len(v.seats) == len(state.seats)
    for i, (sv, s) in enumerate(zip(v.seats, state.seats, strict=True)):
        assert sv.hand_size == len(s.hand)
        assert sv.captured == s.captured
        assert sv.revealed == s.revealed
        assert set(s.revealed) <= set(s.hand), f"seat {i} reveals cards it no longer holds"
        if i == viewer:
            assert sv.hand == s.hand
        else:
            assert sv.hand == s.revealed, f"viewer {viewer} sees seat {i}'s hand {sv.hand}"
    if viewer != SPECTATOR and viewer == state.to_move:
        assert v.legal_actions == tuple(legal_actions(state))
    else:
        assert v.legal_actions == ()
    data = to_data(v)
    keys = set(all_keys(data))
    # The turn in progress is public (its cards are face up); the stock and the seed never are.
    assert "stock" not in keys and "seed" not in keys, sorted(keys)
    for stack in data["stacks"]:
        assert set(stack) == {"@", "month", "maker"}
    leaked = set(card_ints(data, VIEW_CARD_KEYS)) & hidden_from(state, viewer, sold)
    assert not leaked, (
        f"{state.rules.name} {state.rules.players}p seed {state.seed} step {state.steps}: "
        f"view of {viewer} shows hidden cards {sorted(leaked)}"
    )


def check_redaction(event: Event, viewer: int, after: State, sold: set[int]) -> None:
    r = redact(event, viewer)
    if isinstance(event, Dealt):
        assert isinstance(r, Dealt)
        assert len(r.hands) == len(event.hands)
        for i, (rh, eh) in enumerate(zip(r.hands, event.hands, strict=True)):
            assert rh == (eh if i == viewer else (HIDDEN,) * len(eh))
        assert (r.dealer, r.floor, r.stock_count, r.carry) == (
            event.dealer, event.floor, event.stock_count, event.carry,
        )
    elif isinstance(event, BonusCaptured) and event.source == "hand" and event.seat != viewer:
        assert isinstance(r, BonusCaptured)
        assert (r.seat, r.card, r.source, r.replacement) == (event.seat, event.card, "hand", HIDDEN)
    else:
        assert r == event
    leaked = set(card_ints(to_data(r), EVENT_CARD_KEYS)) & hidden_from(after, viewer, sold)
    assert not leaked, (
        f"{after.rules.name} {after.rules.players}p seed {after.seed} step {after.steps}: "
        f"{type(event).__name__} redacted for {viewer} shows hidden cards {sorted(leaked)}"
    )


# ------------------------------------------------------------------ views


@pytest.mark.parametrize("config", CONFIGS, ids=cfg_id)
def test_views_hide_other_hands_and_the_stock(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    seen: Counter[str] = Counter()
    for seed in range(30):
        sold: set[int] = set()
        for state, events in play(rules, seed, seed * 7919 + 1):
            for e in events:
                if isinstance(e, GwangSold):
                    sold |= set(e.cards)
            if any(s.revealed for s in state.seats):
                seen["revealed"] += 1
            for viewer in (*range(players), SPECTATOR):
                check_view(state, viewer, sold)
            seen["steps"] += 1
    assert seen["steps"] > 30 * 10
    if name != "classic":
        assert seen["revealed"] > 0, "no 흔들기 happened: the revealed-hand check was never exercised"


def test_view_rejects_bad_seat() -> None:
    state, _ = new_round(Rules.preset("standard"), 1)
    with pytest.raises(ValueError):
        view(state, 2)
    with pytest.raises(ValueError):
        view(state, -2)


def test_spectator_sees_no_hand() -> None:
    state, _ = new_round(Rules.preset("standard", players=3), 5)
    v = view(state)
    assert v.viewer == SPECTATOR
    assert all(sv.hand == () for sv in v.seats)
    assert [sv.hand_size for sv in v.seats] == [len(s.hand) for s in state.seats]
    assert v.legal_actions == ()


def test_shaken_cards_are_visible_to_everyone() -> None:
    rules = Rules.preset("standard")
    for seed in range(200):
        state, _ = new_round(rules, seed)
        shakes = [a for a in legal_actions(state) if isinstance(a, PlayCard) and a.shake]
        if shakes:
            break
    else:  # pragma: no cover
        pytest.fail("no seed up to 200 offers a 흔들기 on the first move")
    mover = state.to_move
    action = shakes[0]
    after, _ = apply(state, action)
    month = action.card // 4
    shown = tuple(sorted(c for c in state.seats[mover].hand if c != action.card and c // 4 == month))
    assert len(shown) == 2
    assert after.seats[mover].revealed == shown
    for viewer in (SPECTATOR, *(s for s in range(2) if s != mover)):
        assert view(after, viewer).seats[mover].hand == shown
    assert view(after, mover).seats[mover].hand == after.seats[mover].hand


# ------------------------------------------------------------------ redaction


@pytest.mark.parametrize("config", CONFIGS, ids=cfg_id)
def test_redaction_of_every_event(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    kinds: Counter[str] = Counter()
    for seed in range(25):
        sold: set[int] = set()
        for state, events in play(rules, seed, seed + 17):
            for e in events:
                if isinstance(e, GwangSold):
                    sold |= set(e.cards)
            for e in events:
                kinds[type(e).__name__] += 1
                if isinstance(e, BonusCaptured):
                    kinds[f"bonus-{e.source}"] += 1
                for viewer in (*range(players), SPECTATOR):
                    check_redaction(e, viewer, state, sold)
            for viewer in (*range(players), SPECTATOR):
                assert redact_all(events, viewer) == [redact(e, viewer) for e in events]
                assert redact_all(tuple(events), viewer) == [redact(e, viewer) for e in events]
    assert kinds["Dealt"] >= 25
    if rules.bonus_cards:
        assert kinds["bonus-hand"] > 0, kinds


def test_redact_dealt_hides_other_hands() -> None:
    rules = Rules.preset("standard", players=3)
    _, events = new_round(rules, 11)
    dealt = next(e for e in events if isinstance(e, Dealt))
    for viewer in range(3):
        r = redact(dealt, viewer)
        assert isinstance(r, Dealt)
        assert r.hands[viewer] == dealt.hands[viewer]
        for other in range(3):
            if other != viewer:
                assert r.hands[other] == (HIDDEN,) * 7
    spectator = redact(dealt)
    assert isinstance(spectator, Dealt)
    assert spectator.hands == ((HIDDEN,) * 7,) * 3
    assert spectator.floor == dealt.floor


def test_redact_bonus_from_hand() -> None:
    event = BonusCaptured(1, 48, "hand", 17)
    assert redact(event, 1) == event
    assert redact(event, 0) == BonusCaptured(1, 48, "hand", HIDDEN)
    assert redact(event) == BonusCaptured(1, 48, "hand", HIDDEN)
    floor = BonusCaptured(0, 49, "floor", 23)
    assert redact(floor, 1) == floor
    flip = BonusCaptured(0, 50, "flip", -1)
    assert redact(flip, 1) == flip


# ------------------------------------------------------------------ errors

CODE_PATTERNS = [
    (c, re.compile(r"(?<![0-9a-z-])" + re.escape(CODE[c]) + r"(?![0-9a-z-])")) for c in range(51)
]
CARD_NUMBER = re.compile(r"\bcard (\d+)\b")


def named_cards(message: str) -> set[int]:
    """Cards a message names, by code or as ``card N``."""
    out = {c for c, pattern in CODE_PATTERNS if pattern.search(message)}
    out |= {int(n) for n in CARD_NUMBER.findall(message)}
    return out


def every_action() -> list[Action]:
    out: list[Action] = [PlayCard(c) for c in range(51)]
    out += [PlayCard(c, shake=True) for c in range(51)]
    out += [Bomb(m) for m in range(1, 13)]
    out += [ChooseCapture(c) for c in range(51)]
    out += [FlipOnly(), KeepGukjin(), ConvertGukjin(), Go(), Stop(), JoinRound(), SitOut()]
    out += [DeclineGwangSale(), SellGwang()]
    return out


EVERY_ACTION = every_action()


def action_card(action: Action) -> int | None:
    return action.card if isinstance(action, (PlayCard, ChooseCapture)) else None


def raises(fn: Callable[[], object]) -> IllegalAction | None:
    try:
        fn()
    except IllegalAction as err:
        return err
    return None


@pytest.mark.parametrize("config", CONFIGS, ids=cfg_id)
def test_error_messages_name_no_hidden_card(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    checked = 0
    for seed in range(4):
        for state, _ in play(rules, seed, seed + 99):
            if state.over:
                for action in EVERY_ACTION[:5]:
                    with pytest.raises(RoundOver):
                        apply(state, action)
                continue
            mover = state.to_move
            me = state.seats[mover]
            visible = set(me.hand) | set(state.floor)
            for s in state.seats:
                visible |= set(s.captured) | set(s.revealed)
            legal = legal_actions(state)
            for action in EVERY_ACTION:
                if action in legal:
                    continue
                err = raises(partial(apply, state, action, mover))
                assert err is not None, f"{action} was accepted but is not legal"
                assert not isinstance(err, (NotYourTurn, RoundOver)), err
                named = named_cards(str(err))
                card = action_card(action)
                allowed = visible | ({card} if card is not None else set())
                assert named <= allowed, (
                    f"{name} {players}p seed {seed} step {state.steps} phase {state.phase}: "
                    f"{action} -> {err!s} names hidden cards {sorted(named - allowed)}"
                )
                if isinstance(action, PlayCard) and state.phase is Phase.PLAY and action.card not in me.hand:
                    assert named <= {action.card}, str(err)
                    if me.hand:
                        assert CODE[action.card] in str(err)
                checked += 1
            # another seat may not act, whatever it tries, and learns nothing
            for other in range(players):
                if other == mover:
                    continue
                tries: list[Action] = [*legal, *(PlayCard(c) for c in state.seats[other].hand)]
                for action in tries:
                    with pytest.raises(NotYourTurn) as nyt:
                        apply(state, action, other)
                    assert named_cards(str(nyt.value)) == set()
                    assert f"seat {mover}" in str(nyt.value)
    assert checked > 1000


def test_error_for_card_not_in_hand_names_only_that_card() -> None:
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 3)
    mover = state.to_move
    hand = set(state.seats[mover].hand)
    for card in range(rules.deck_size):
        if card in hand:
            continue
        with pytest.raises(IllegalAction) as err:
            apply(state, PlayCard(card), mover)
        assert str(err.value) == f"card {card} ({CODE[card]}) is not in your hand"
        assert named_cards(str(err.value)) == {card}


@pytest.mark.parametrize("config", CONFIGS, ids=cfg_id)
def test_play_history_is_public(config: tuple[str, int]) -> None:
    """``View.plays``: every play in order, the same for every viewer, naming no hidden card."""
    name, players = config
    rules = Rules.preset(name, players=players)
    for seed in range(10):
        state, _ = new_round(rules, seed)
        expected = []
        while not state.over:
            action = legal_actions(state)[(seed + state.steps) % len(legal_actions(state))]
            if state.phase is Phase.PLAY:
                piles = tuple(len(s.captured) for s in state.seats)
                expected.append((state.to_move, action_id(action), state.floor, piles))
            state, _ = apply(state, action)
            views = [view(state, v) for v in (*range(players), SPECTATOR)]
            for v in views:
                assert [(r.seat, r.action, r.floor, r.piles) for r in v.plays] == expected
            for viewer, v in enumerate(views[:-1]):
                hidden = hidden_from(state, viewer, set())
                for r in v.plays:
                    assert not set(r.floor) & hidden
                    if r.action < 128:
                        assert r.action % 64 not in hidden
