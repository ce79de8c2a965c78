"""Snapshots (states, events, matches) and matches: 선 rotation, 나가리 carry, totals, the demo CLI."""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gostop.engine import (
    FORMAT_VERSION,
    PRESETS,
    CorruptSnapshot,
    Event,
    Go,
    IllegalAction,
    Match,
    RoundOver,
    Rules,
    State,
    Stop,
    apply,
    event_from_json,
    event_to_json,
    legal_actions,
    match_apply,
    match_from_bytes,
    match_to_bytes,
    new_match,
    new_round,
    next_round,
    redact_all,
    round_seed,
    state_from_bytes,
    state_to_bytes,
)
from gostop.engine.events import Dealt
from gostop.engine.rng import Rng
from gostop.engine.serialize import encode, plays_json, to_data
from gostop.engine.settlement import Settlement
from gostop.tools.cli import main
from gostop.tools.play import _width

ALL_CONFIGS: list[tuple[str, int]] = [
    ("standard", 2), ("standard", 3), ("simple", 2), ("classic", 2), ("classic", 3), ("classic", 4),
    ("house", 3), ("house", 2), ("arcade", 2),
]


def cfg_id(config: tuple[str, int]) -> str:
    return f"{config[0]}-{config[1]}p"


Policy = Callable[[State, Rng], Any]


def random_policy(state: State, chooser: Rng) -> Any:
    actions = legal_actions(state)
    return actions[chooser.below(len(actions))]


def always_go_policy(state: State, chooser: Rng) -> Any:
    actions = legal_actions(state)
    if Go() in actions:
        return Go()
    return actions[chooser.below(len(actions))]


def states_of_round(rules: Rules, seed: int, chooser_seed: int) -> Iterator[tuple[State, list[Event]]]:
    state, events = new_round(rules, seed)
    yield state, events
    chooser = Rng(chooser_seed)
    while not state.over:
        state, events = apply(state, random_policy(state, chooser))
        yield state, events


# ------------------------------------------------------------------ state snapshots


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_state_round_trip_at_every_step(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    for seed in range(4):
        for state, _ in states_of_round(rules, seed, seed + 5):
            blob = state_to_bytes(state)
            assert isinstance(blob, bytes)
            back = state_from_bytes(blob)
            assert back == state, f"{name} {players}p seed {seed} step {state.steps}"
            assert state_to_bytes(back) == blob
            assert state_to_bytes(state) == blob  # deterministic encoding
            doc = json.loads(blob)
            assert doc["format"] == FORMAT_VERSION
            # the restored state plays on identically
            if not state.over:
                action = legal_actions(state)[0]
                assert apply(back, action) == apply(state, action)


def test_format_version_is_in_the_bytes() -> None:
    state, _ = new_round(Rules.preset("standard"), 1)
    blob = state_to_bytes(state)
    assert FORMAT_VERSION == 1
    assert blob.startswith(b'{"format":1,')
    assert json.loads(blob)["format"] == FORMAT_VERSION


def replace_format(blob: bytes, value: Any) -> bytes:
    doc = json.loads(blob)
    doc["format"] = value
    return json.dumps(doc).encode()


@pytest.fixture(scope="module")
def state_blob() -> bytes:
    rules = Rules.preset("classic", players=3)
    state = None
    for state, _ in states_of_round(rules, 2, 3):
        if state.steps == 6:
            break
    assert state is not None
    return state_to_bytes(state)


@pytest.mark.parametrize(
    "blob",
    [b"", b"not json", b"\xff\xfe\x00", b"[]", b"null", b"42", b'"state"', b"{}", b'{"format":1}',
     b'{"format":1,"state":null}', b'{"format":1,"state":[]}', b'{"format":1,"state":{"@":"Nope"}}',
     b'{"format":1,"state":{"@":"State"}}', b'{"format":1,"state":{"no":"tag"}}'],
)
def test_corrupt_state_bytes(blob: bytes) -> None:
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(blob)


def test_truncated_and_mangled_state_bytes(state_blob: bytes) -> None:
    for cut in (1, 10, len(state_blob) // 2, len(state_blob) - 1):
        with pytest.raises(CorruptSnapshot):
            state_from_bytes(state_blob[:cut])
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(state_blob.replace(b'"phase":"', b'"phase":"x', 1))
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(state_blob.replace(b'"players":3', b'"players":5', 1))
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(state_blob.replace(b'"@":"SeatState"', b'"@":"Seat"', 1))


@pytest.mark.parametrize("version", [0, 2, FORMAT_VERSION + 1, "1", None, 1.5])
def test_wrong_format_version(state_blob: bytes, version: Any) -> None:
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(replace_format(state_blob, version))


def test_missing_format_version(state_blob: bytes) -> None:
    doc = json.loads(state_blob)
    del doc["format"]
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(json.dumps(doc).encode())


def test_wrong_snapshot_type(state_blob: bytes) -> None:
    match, _ = new_match(Rules.preset("standard"), 4, rounds=2)
    match_blob = match_to_bytes(match)
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(match_blob)
    with pytest.raises(CorruptSnapshot):
        match_from_bytes(state_blob)
    state_doc = json.loads(state_blob)
    match_doc = json.loads(match_blob)
    # the right key holding the wrong type
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(json.dumps({"format": FORMAT_VERSION, "state": match_doc["match"]}).encode())
    with pytest.raises(CorruptSnapshot):
        match_from_bytes(json.dumps({"format": FORMAT_VERSION, "match": state_doc["state"]}).encode())
    score_doc = {"format": FORMAT_VERSION, "state": {"@": "Score"}}
    with pytest.raises(CorruptSnapshot):
        state_from_bytes(json.dumps(score_doc).encode())
    with pytest.raises(CorruptSnapshot):
        match_from_bytes(replace_format(match_blob, 2))


def test_corrupt_snapshot_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        state_from_bytes(b"nope")
    with pytest.raises(CorruptSnapshot) as err:
        state_from_bytes(b"nope")
    assert err.value.reason == "CORRUPT_SNAPSHOT"


# ------------------------------------------------------------------ events


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_events_json_round_trip(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    kinds: set[str] = set()
    for seed in range(6):
        for _, events in states_of_round(rules, seed, seed + 11):
            for viewer in (-1, 0):
                for e in (*events, *redact_all(events, viewer)):
                    text = event_to_json(e)
                    assert isinstance(text, str)
                    back = event_from_json(text)
                    assert back == e
                    assert type(back) is type(e)
                    assert event_to_json(back) == text
                    assert text == json.dumps(to_data(e), separators=(",", ":"), ensure_ascii=False)
                    assert event_from_json(text.encode()) == e
                    kinds.add(type(e).__name__)
    assert {"Dealt", "CardPlayed", "CardFlipped", "RoundSettled"} <= kinds


@pytest.mark.parametrize(
    "text",
    ["", "nope", "[]", "{}", '{"@":"Nope"}', '{"@":"Dealt"}', '{"@":"Score"}', "null", "1",
     '{"@":"Payment","payer":0,"payee":1,"points":7,"reason":"x"}'],
)
def test_corrupt_events(text: str) -> None:
    with pytest.raises(CorruptSnapshot):
        event_from_json(text)


def test_state_data_is_not_an_event() -> None:
    state, _ = new_round(Rules.preset("standard"), 9)
    with pytest.raises(CorruptSnapshot):
        event_from_json(json.dumps(to_data(state)))


# ------------------------------------------------------------------ matches


def test_round_seed() -> None:
    for seed in (0, 1, 7, 2**63, 2**64 - 1):
        assert round_seed(seed, 1) == seed
        later = [round_seed(seed, n) for n in range(2, 8)]
        assert len(set(later)) == len(later)
        assert all(0 <= s < 2**64 for s in later)
        assert later == [round_seed(seed, n) for n in range(2, 8)]
    assert round_seed(5, 2) != round_seed(6, 2)


def check_match_invariants(match: Match) -> None:
    rules = match.rules
    n = rules.players
    assert len(match.history) == match.round_no - (0 if match.round.over else 1)
    assert match.points == tuple(sum(r.points[i] for r in match.history) for i in range(n))
    assert match.money == tuple(sum(r.money[i] for r in match.history) for i in range(n))
    for r in match.history:
        assert sum(r.points) == 0, f"round {r.round_no} points do not sum to zero: {r.points}"
        assert r.money == tuple(p * rules.point_value for p in r.points)
    assert [r.round_no for r in match.history] == list(range(1, len(match.history) + 1))


def play_match(
    rules: Rules, seed: int, rounds: int, chooser_seed: int, policy: Policy = random_policy
) -> tuple[Match, list[list[Event]], list[Settlement]]:
    """Play a whole match; return it, the deal events and the settlement of every round."""
    match, events = new_match(rules, seed, rounds)
    deals = [events]
    settlements: list[Settlement] = []
    chooser = Rng(chooser_seed)
    expected_wins = [0] * rules.players
    expected_losses = [0] * rules.players
    expected_draws = [0] * rules.players
    while True:
        assert match.round.seed == round_seed(seed, match.round_no)
        dealt = [e for e in deals[-1] if isinstance(e, Dealt)]
        assert len(dealt) == 1
        assert dealt[0].carry == match.round.carry
        assert dealt[0].dealer == match.round.dealer
        while not match.round.over:
            assert not match.finished
            with pytest.raises(IllegalAction) as err:
                next_round(match)
            assert not isinstance(err.value, RoundOver)
            assert err.value.code == "ROUND_IN_PROGRESS"
            blob = match_to_bytes(match)
            assert match_from_bytes(blob) == match
            match, _ = match_apply(match, policy(match.round, chooser))
            check_match_invariants(match)
        settlement = match.round.settlement
        assert settlement is not None
        assert match.round.steps > 0 or settlement.outcome == "instant_win"
        result = match.history[-1]
        assert result.round_no == match.round_no
        assert result.winner == settlement.winner
        assert result.outcome == settlement.outcome
        assert result.points == settlement.points
        assert result.money == settlement.money
        for seat in match.round.order:
            if settlement.winner < 0:
                expected_draws[seat] += 1
            elif seat == settlement.winner:
                expected_wins[seat] += 1
            else:
                expected_losses[seat] += 1
        assert match.wins == tuple(expected_wins)
        assert match.losses == tuple(expected_losses)
        assert match.draws == tuple(expected_draws)
        # recording is idempotent: re-decoding does not count the round twice
        assert match_from_bytes(match_to_bytes(match)) == match
        if match.round_no == rounds:
            assert match.finished
            break
        assert not match.finished
        previous, previous_no = match.round, match.round_no
        match, events = next_round(match)
        deals.append(events)
        assert match.round_no == previous_no + 1
        if settlement.winner >= 0:
            assert match.round.dealer == settlement.winner, "the winner leads the next round"
            assert match.round.carry is False, "a decided round clears the 나가리 carry"
        else:
            assert match.round.dealer == previous.dealer, "after a 나가리 the 선 stays"
            assert match.round.carry is rules.nagari_carry
        # a round won at the deal (총통) is over, and recorded, at once
        assert len(match.history) == match.round_no - (0 if match.round.over else 1)
        settlements.append(settlement)
    settlements.append(settlement)
    return match, deals, settlements


def check_finished(match: Match) -> None:
    assert match.finished
    assert match.round_over
    with pytest.raises(RoundOver):
        next_round(match)
    with pytest.raises(RoundOver):
        match_apply(match, Stop())
    again = match_from_bytes(match_to_bytes(match))
    assert again == match
    assert again.finished
    with pytest.raises(RoundOver):
        next_round(again)


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_three_round_matches(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    for seed in range(4):
        match, _, _ = play_match(rules, seed, 3, seed + 21)
        assert match.round_no == 3
        assert len(match.history) == 3
        n_playing = rules.playing_seats
        assert sum(match.wins) + sum(match.losses) + sum(match.draws) == 3 * n_playing
        check_finished(match)


def test_first_round_leader() -> None:
    for seed in range(20):
        arcade, _ = new_match(Rules.preset("arcade"), seed, 2)
        assert arcade.round.dealer == 0
        standard, _ = new_match(Rules.preset("standard", players=3), seed, 2)
        assert standard.round.dealer == Rng(seed).below(3)
        assert standard.round == new_round(Rules.preset("standard", players=3), seed)[0]


def find_seed(predicate: Callable[[int], bool], seeds: Iterator[int] | range | tuple[int, ...]) -> int:
    for seed in seeds:
        if predicate(seed):
            return seed
    pytest.fail("no seed found")


def match_winners(rules: Rules, seed: int, rounds: int, policy: Policy = random_policy) -> list[int]:
    """Winners of the match ``play_match(rules, seed, rounds, seed + 1, policy)`` plays (unchecked)."""
    match, _ = new_match(rules, seed, rounds)
    chooser = Rng(seed + 1)
    while True:
        while not match.round.over:
            match, _ = match_apply(match, policy(match.round, chooser))
        if match.finished:
            return [r.winner for r in match.history]
        match, _ = next_round(match)


def test_nagari_keeps_leader_and_carries() -> None:
    rules = Rules.preset("house", players=3)
    seed = find_seed(lambda s: match_winners(rules, s, 2)[0] < 0, range(60))
    match, deals, _ = play_match(rules, seed, 2, seed + 1)
    first, second = match.history
    assert first.winner == -1 and first.outcome == "nagari"
    assert all(p == 0 for p in first.points)
    assert match.draws == (1, 1, 1)
    assert match.round.carry is True
    dealt = next(e for e in deals[1] if isinstance(e, Dealt))
    assert dealt.carry is True
    settlement = match.round.settlement
    assert settlement is not None
    if settlement.winner >= 0 and settlement.outcome != "instant_win":
        carry = [f for f in settlement.winner_factors if f.name == "nagari_carry"]
        assert [f.value for f in carry] == [2]
    assert second.round_no == 2


def test_consecutive_nagari_carry_at_most_double() -> None:
    rules = Rules.preset("house", players=3)

    def two_nagari_then_win(seed: int) -> bool:
        w = match_winners(rules, seed, 4)
        return any(w[i] < 0 and w[i + 1] < 0 and w[i + 2] >= 0 for i in range(2))

    seed = find_seed(two_nagari_then_win, (77, *range(120)))
    match, deals, settlements = play_match(rules, seed, 4, seed + 1)
    winners = [r.winner for r in match.history]
    i = next(i for i in range(2) if winners[i] < 0 and winners[i + 1] < 0 and winners[i + 2] >= 0)
    carries = [next(e for e in d if isinstance(e, Dealt)).carry for d in deals]
    assert carries[i + 1] is True and carries[i + 2] is True
    # the decided round after two 나가리 holds a single ×2 carry factor
    settlement = settlements[i + 2]
    assert settlement.winner >= 0
    carry_factors = [f for f in settlement.winner_factors if f.name == "nagari_carry"]
    assert [f.value for f in carry_factors] == [2], settlement.winner_factors
    if i + 3 < len(carries):
        assert carries[i + 3] is False, "a decided round clears the carry"


def test_unreachable_threshold_always_nagari_and_carries() -> None:
    rules = Rules.preset("standard", go_threshold=99)
    match, deals, _ = play_match(rules, 3, 4, 4)
    assert [r.winner for r in match.history] == [-1, -1, -1, -1]
    assert [next(e for e in d if isinstance(e, Dealt)).carry for d in deals] == [False, True, True, True]
    assert match.draws == (4, 4)
    assert match.points == (0, 0)
    first_dealer = new_round(rules, 3)[0].dealer
    assert match.round.dealer == first_dealer
    settlement = match.round.settlement
    assert settlement is not None and settlement.carry_next is True


def test_simple_never_carries() -> None:
    forced = Rules.preset("simple", go_threshold=99)
    match, deals, _ = play_match(forced, 5, 3, 6)
    assert [r.winner for r in match.history] == [-1, -1, -1]
    assert [next(e for e in d if isinstance(e, Dealt)).carry for d in deals] == [False, False, False]
    settlement = match.round.settlement
    assert settlement is not None and settlement.carry_next is False
    # and with the plain preset, a naturally occurring 나가리
    rules = Rules.preset("simple")
    seed = find_seed(
        lambda s: match_winners(rules, s, 2, always_go_policy)[0] < 0,
        (1009, 2800, 1700, *range(3000, 4000)),
    )
    match, deals, _ = play_match(rules, seed, 2, seed + 1, always_go_policy)
    assert match.history[0].winner == -1
    assert match.round.carry is False
    assert next(e for e in deals[1] if isinstance(e, Dealt)).carry is False


def test_winner_leads_next_round() -> None:
    rules = Rules.preset("standard", players=3)
    leaders_changed = 0
    for seed in range(10):
        match, _, _ = play_match(rules, seed, 2, seed + 1)
        first = match.history[0]
        if first.winner >= 0:
            assert match.round.dealer == first.winner
            leaders_changed += 1
    assert leaders_changed > 0


def test_open_ended_match_never_finishes() -> None:
    rules = Rules.preset("arcade")
    match, _ = new_match(rules, 8, rounds=0)
    chooser = Rng(1)
    for _ in range(3):
        while not match.round.over:
            match, _ = match_apply(match, random_policy(match.round, chooser))
        assert not match.finished
        match, _ = next_round(match)
    assert match.round_no == 4


@pytest.mark.parametrize("rounds", [-1, True, 1.5, "3"])
def test_bad_round_counts(rounds: Any) -> None:
    with pytest.raises(ValueError):
        new_match(Rules.preset("standard"), 1, rounds=rounds)


def test_match_apply_checks_the_seat() -> None:
    match, _ = new_match(Rules.preset("standard"), 12, rounds=1)
    mover = match.round.to_move
    action = legal_actions(match.round)[0]
    with pytest.raises(IllegalAction):
        match_apply(match, action, 1 - mover)
    after, _ = match_apply(match, action, mover)
    assert after.round.steps == 1


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=cfg_id)
def test_match_snapshots_round_trip(config: tuple[str, int]) -> None:
    name, players = config
    rules = Rules.preset(name, players=players)
    match, _ = new_match(rules, 31, rounds=2)
    chooser = Rng(32)
    blobs = []
    while True:
        while not match.round.over:
            blob = match_to_bytes(match)
            assert json.loads(blob)["format"] == FORMAT_VERSION
            # The fast encoder (orjson's hook per dataclass) writes what the plain data would.
            assert blob == json.dumps(
                {"format": FORMAT_VERSION, "match": to_data(match)}, separators=(",", ":"), ensure_ascii=False
            ).encode()
            back = match_from_bytes(blob)
            assert back == match
            assert match_to_bytes(back) == blob
            # The plays encoded beforehand (a server extends the previous version's) change nothing.
            assert match_to_bytes(match, plays_json(match.round.plays)) == blob
            half = len(match.round.plays) // 2
            early = plays_json(match.round.plays[:half])
            assert match_to_bytes(match, plays_json(match.round.plays[half:], early)) == blob
            blobs.append(blob)
            match, _ = match_apply(match, random_policy(match.round, chooser))
        if match.finished:
            break
        match, _ = next_round(match)
    final = match_from_bytes(match_to_bytes(match))
    assert final == match and final.finished
    assert len(set(blobs)) == len(blobs)


# ------------------------------------------------------------------ the demo CLI


@pytest.mark.parametrize("preset", PRESETS)
def test_cli_demo(preset: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3", "--preset", preset]) == 0
    out = capsys.readouterr().out
    assert f"preset {preset}" in out
    assert "seed 3" in out
    assert " round over " in out
    assert "net points this round: " in out or "나가리: nobody wins" in out
    assert main(["demo", "--seed", "3", "--preset", preset]) == 0
    assert capsys.readouterr().out == out  # deterministic


def test_cli_demo_default_preset(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "preset standard, 2 players, seed 3" in out
    assert " round over " in out


def test_cli_demo_players(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3", "--preset", "classic", "--players", "4"]) == 0
    out = capsys.readouterr().out
    assert "4 players" in out
    assert " round over " in out


@pytest.mark.parametrize("preset", PRESETS)
def test_demo_names_cards_in_korean_as_play_does_not_in_romanised_codes_regression(
        preset: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: ``gostop demo`` named cards by their codes and terms in romanised words
    ("12-ssangpi", "gwang 2, tti 1") where ``gostop play`` and the web table say 비쌍피 and 광 2.
    It speaks in the person's voice of ``render`` now, with play's table and settlement screen."""
    from gostop.engine.render import card_name

    assert main(["demo", "--seed", "3", "--preset", preset]) == 0
    out = capsys.readouterr().out
    romanised = re.compile(r"\b(gwang|bigwang|yeol|tti|pi|ssangpi|sseuripi|godori|hongdan|cheongdan|chodan|sseul|"
                           r"ppeok|jappeok|jjok|ttadak|pibak|gwangbak|gobak|meongbak|nagari|chongtong|shake_bomb)\b")
    assert not romanised.search(out), romanised.search(out)
    assert not re.search(r"\b\d\d-[a-z]+\b|\bbonus-", out), "no card codes"
    names = {card_name(c) for c in range(51)}
    played = re.findall(r"^seat \d (?:plays|flips) (.+?)(?: shaking \(흔들기\))?$", out, re.M)
    assert played and set(played) <= names, set(played) - names
    assert re.search(r"^  seat 0 holds: ", out, re.M) and re.search(r"^  floor: ", out, re.M)  # the deal, by name
    for line in out.splitlines():
        assert _width(line) <= 80, line


def test_to_data_of_dataclasses_without_fields_or_with_one_regression() -> None:
    """Regression: reading every field with one attrgetter broke on classes with no field
    (Go, Stop: attrgetter() needs a name) and needs a tuple for one field."""
    from gostop.engine import Go, PlayCard, Stop
    from gostop.engine.serialize import to_data

    assert to_data(Go()) == {"@": "Go"}
    assert to_data((Stop(), PlayCard(7, shake=True))) == [{"@": "Stop"}, {"@": "PlayCard", "card": 7, "shake": True}]
    assert encode((Go(), Stop(), PlayCard(7, shake=True))) == (
        b'[{"@":"Go"},{"@":"Stop"},{"@":"PlayCard","card":7,"shake":true}]'
    )


def test_encode_refuses_what_is_not_an_engine_value() -> None:
    with pytest.raises(TypeError):
        encode({"x": object()})


def _tracked_growth(work: Callable[[], None]) -> int:
    """How many more objects the cyclic collector tracks after ``work`` than before it."""
    gc.collect()
    before = len(gc.get_objects())
    work()
    gc.collect()
    return len(gc.get_objects()) - before


def test_encoding_keeps_no_encoded_values_alive_regression() -> None:
    """Regression: a memo of recently encoded values (20,000 of them) kept its entries alive
    between calls; in a server those were tens of thousands of young objects, and the collector's
    passes over them became the slowest 1% of SubmitActions. Encoding must leave nothing behind."""
    rules = Rules.preset("standard", players=2)
    states = [state for seed in (5, 6, 7, 8) for state, _ in states_of_round(rules, seed, seed)]
    state_to_bytes(states[-1])  # first use fills the per-type tables (field names, rules) once

    def encode_all() -> None:
        for state in states:
            state_to_bytes(state)

    assert _tracked_growth(encode_all) < 10
