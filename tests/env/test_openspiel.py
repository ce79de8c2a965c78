"""The OpenSpiel game ``python_gostop`` (gostop.env.openspiel) and OpenSpiel's ISMCTS as a bot.

OpenSpiel's own checks (``pyspiel.random_sim_test``: legal actions, chance outcomes, clones,
serialization, tensor sizes, returns within the utility bounds) run on every preset and table
size; the rest checks what those cannot: that a game is the engine's round on the cards chance
chose, that a player's strings and tensors never show what its seat may not know, and that
OpenSpiel's unmodified ISMCTS plays on the game.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyspiel  # type: ignore[import-not-found]  # OpenSpiel ships no type information
import pytest
from open_spiel.python.algorithms import ismcts, mcts  # type: ignore[import-untyped]

from gostop.bots import make_bot
from gostop.bots.arena import Timing, play_round
from gostop.engine import MONTH, Deal, Rules, action_from_id, apply, legal_actions, new_round, view
from gostop.env.openspiel import (
    GAME_NAME,
    NUM_ACTIONS,
    GostopGame,
    GostopState,
    IsmctsBot,
    Observer,
    every_table,
    load,
)

TABLES = every_table()
ROOT = Path(__file__).resolve().parents[2]


def _game(preset: str, players: int, returns: str = "points") -> GostopGame:
    game = pyspiel.load_game(GAME_NAME, {"preset": preset, "players": players, "returns": returns})
    assert isinstance(game, GostopGame)
    return game


def _play_randomly(game: GostopGame, rng: random.Random) -> tuple[GostopState, list[tuple[int, int, str]]]:
    """A whole round with uniform chance outcomes and uniformly random decisions; the history:
    player, action and the action's label (``action_to_string`` where it was taken)."""
    state = game.new_initial_state()
    history: list[tuple[int, int, str]] = []
    while not state.is_terminal():
        player = state.current_player()
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            action = rng.choices(outcomes, probs)[0]
        else:
            action = rng.choice(state.legal_actions())
        history.append((player, action, state.action_to_string(player, action)))
        state.apply_action(action)
    return state, history


def test_the_game_is_registered_with_its_parameters() -> None:
    assert GAME_NAME in pyspiel.registered_names()
    game = pyspiel.load_game("python_gostop(preset=classic,players=3)")
    assert isinstance(game, GostopGame)
    assert (game.rules.name, game.num_players(), game.num_distinct_actions()) == ("classic", 3, NUM_ACTIONS)
    kind = game.get_type()
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert _game("house", 0).num_players() == 3  # 0: the preset's default table size
    custom = load(Rules.preset("standard", gwangbak=False))
    assert custom.rules == Rules.preset("standard", gwangbak=False)


@pytest.mark.parametrize(("preset", "players"), TABLES, ids=[f"{p}-{n}p" for p, n in TABLES])
@pytest.mark.parametrize("returns", ["points", "win_loss"])
def test_openspiels_random_simulation_checks_pass(preset: str, players: int, returns: str) -> None:
    pyspiel.random_sim_test(_game(preset, players, returns), num_sims=4, serialize=True, verbose=False)


@pytest.mark.parametrize(("preset", "players"), TABLES, ids=[f"{p}-{n}p" for p, n in TABLES])
def test_a_game_is_the_engines_round_on_the_cards_chance_chose(preset: str, players: int) -> None:
    """The deal and the stock order chance chose, replayed by ``engine.apply`` with the players'
    actions, give the same round: every action legal, the same piles and the same settlement."""
    game = _game(preset, players)
    rules = game.rules
    rng = random.Random(f"{preset}{players}")
    checked = 0
    for _ in range(12):
        state, labels = _play_randomly(game, rng)
        first_decision = next(i for i, (p, _, _) in enumerate(labels) if p >= 0)
        deal = [a for _, a, label in labels[:first_decision] if label.startswith("deal ")]
        dealt = rules.floor_size + rules.players * rules.hand_size
        if len(deal) != dealt:  # chance redealt (four of a month): the engine's seeded redeal differs
            continue
        dealer = next((a for _, a, label in labels if label.startswith("dealer ")), 0)
        f, h = rules.floor_size, rules.hand_size
        stock_order = [a for _, a, label in labels if label.startswith("stock ")]
        rest = sorted(set(range(rules.deck_size)) - set(deal) - set(stock_order))
        hands = tuple(tuple(sorted(deal[f + i * h:f + (i + 1) * h])) for i in range(rules.players))
        engine_state, _ = new_round(rules, 0, deal=Deal(hands, tuple(deal[:f]), (*stock_order, *rest), dealer))
        for player, action, _ in labels[first_decision:]:
            if player >= 0:
                engine_state, _ = apply(engine_state, action_from_id(action), player)
        position = state.position
        assert position is not None and engine_state.over
        assert engine_state.settlement == position.settlement
        assert [s.captured for s in engine_state.seats] == [s.captured for s in position.seats]
        assert state.returns() == [float(p) for p in position.settlement.points]  # type: ignore[union-attr]
        assert sum(state.returns()) == 0
        checked += 1
    assert checked >= 8


def test_flips_are_chance_nodes_after_the_play() -> None:
    """A play that flips leaves a chance node (the stock card) before the next decision, and the
    card chance chose is the card the rules turn."""
    game = _game("standard", 2)
    state = game.new_initial_state()
    rng = random.Random(5)
    while state.is_chance_node():
        state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
    before = state.position
    assert before is not None
    play = next(a for a in state.legal_actions() if a < 51 and _matches(before.floor, a) != 2)
    state.apply_action(play)
    assert state.is_chance_node()
    position = state.position
    assert position is not None and position.steps == before.steps  # the play waits for its flip
    flip = next(a for a, _ in state.chance_outcomes() if a < 48)
    state.apply_action(flip)
    after = state.position
    assert after is not None and after.steps == before.steps + 1
    assert flip not in after.stock
    assert flip in after.floor or any(flip in s.captured for s in after.seats) or (
        after.turn is not None and after.turn.flipped == flip)


def test_a_deal_the_engine_would_throw_in_is_dealt_again_by_chance() -> None:
    """Four of a month on the floor: the engine redeals, and so does chance (the deal starts over)."""
    game = _game("standard", 2)
    state = game.new_initial_state()
    state.apply_action(1)  # the dealer
    floor = [0, 1, 2, 3, 4, 8, 12, 16]  # all of January
    hands = [c for c in range(48) if c not in floor][:20]
    for card in floor + hands:
        assert state.is_chance_node() and state.position is None
        state.apply_action(card)
    assert state.is_chance_node() and state.position is None
    assert [a for a, _ in state.chance_outcomes()] == list(range(51))  # a fresh deal
    rng = random.Random(1)
    while state.position is None:
        state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
    assert state.position.dealer == 1 and not state.position.over


def _matches(floor: Sequence[int], card: int) -> int:
    return sum(1 for c in floor if MONTH[c] == MONTH[card])


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 3), ("classic", 4)])
def test_a_player_sees_the_same_in_every_world_its_view_allows(preset: str, players: int) -> None:
    """Resampled states (other hands and the stock drawn anew) give the player the same
    information state and observation, as strings and as tensors, while the hidden cards differ;
    the hands piece of a tensor holds only the player's own hand and revealed cards."""
    game = _game(preset, players)
    rng = random.Random(11)
    state = game.new_initial_state()
    differed = 0
    decisions = 0
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        player = state.current_player()
        position = state.position
        assert position is not None
        own = [
            state.information_state_string(player), state.observation_string(player),
            state.information_state_tensor(player), state.observation_tensor(player),
        ]
        for k in range(3):
            other = state.resample(player, random.Random(k))
            assert other.current_player() == player
            assert other.legal_actions() == state.legal_actions()
            assert other.information_state_string(player) == own[0]
            assert other.observation_string(player) == own[1]
            assert other.information_state_tensor(player) == own[2]
            assert other.observation_tensor(player) == own[3]
            sampled = other.position
            assert sampled is not None
            hidden = [s.hand for i, s in enumerate(position.seats) if i != player]
            if [s.hand for i, s in enumerate(sampled.seats) if i != player] != hidden or \
                    sampled.stock != position.stock:
                differed += 1
        hands = np.asarray(own[3]).reshape(-1)[players:players + players * 51].reshape(players, 51)
        for seat, s in enumerate(position.seats):
            shown = set(s.hand) if seat == player else set(s.revealed)
            assert set(np.flatnonzero(hands[seat]).tolist()) == shown
        decisions += 1
        state.apply_action(rng.choice(state.legal_actions()))
    assert decisions > 10 and differed > decisions


def test_tensor_shapes_are_the_games() -> None:
    for preset, players in TABLES:
        game = _game(preset, players)
        state = game.new_initial_state()
        assert len(state.observation_tensor(0)) == game.observation_tensor_size()
        assert len(state.information_state_tensor(0)) == game.information_state_tensor_size()
        assert game.information_state_tensor_size() > game.observation_tensor_size()


def test_win_loss_returns() -> None:
    game = _game("standard", 3, "win_loss")
    rng = random.Random(2)
    seen: set[tuple[float, ...]] = set()
    for _ in range(20):
        state, _ = _play_randomly(game, rng)
        returns = tuple(state.returns())
        assert sum(returns) == pytest.approx(0.0)
        seen.add(tuple(sorted(returns)))
    assert seen <= {(0.0, 0.0, 0.0), (-0.5, -0.5, 1.0)} and (-0.5, -0.5, 1.0) in seen


def test_openspiels_own_ismcts_plays_a_round_unmodified() -> None:
    """OpenSpiel's ``ISMCTSBot`` as shipped (its resampling through ``resample_from_infostate``,
    its assertion that a resampled root has the root's information state) plays both seats."""
    game = _game("standard", 2, "win_loss")
    random_state = np.random.RandomState(4)
    bot = ismcts.ISMCTSBot(game=game, evaluator=mcts.RandomRolloutEvaluator(1, random_state), uct_c=2.0,
                           max_simulations=8, random_state=random_state)
    state = game.new_initial_state()
    rng = random.Random(4)
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
        else:
            action = bot.step(state)
            assert action in state.legal_actions()
            state.apply_action(action)
    assert sum(state.returns()) == 0


def test_ismcts_bot_plays_rounds_as_a_gostop_bot() -> None:
    """``IsmctsBot`` through the in-process arena (the engine checks every action), built from a
    bot spec like a plugin; with a simulation budget its choices are reproducible."""
    rules = Rules.preset("standard")
    bot = make_bot("gostop.env.openspiel:IsmctsBot:iterations=12", seed=1)
    assert isinstance(bot, IsmctsBot) and bot.name == "ismcts"
    timings = [Timing(), Timing()]
    for seed in range(2):
        settlement = play_round(rules, seed, [bot, make_bot("greedy")], timings)
        assert sum(settlement.points) == 0
    assert timings[0].searches > 0 and timings[0].iterations == 12 * timings[0].searches
    state, _ = new_round(rules, 9)
    seat_view, legal = view(state, state.to_move), legal_actions(state)
    again = make_bot("gostop.env.openspiel:IsmctsBot:iterations=30", seed=4)
    assert again.choose(seat_view, legal) == make_bot("gostop.env.openspiel:IsmctsBot:iterations=30",
                                                      seed=4).choose(seat_view, legal)


def test_ismcts_bot_stops_at_its_cpu_budget() -> None:
    rules = Rules.preset("classic", players=3)
    bot = IsmctsBot(seed=2, cpu_millis=15)
    play_round(rules, 1, [bot, make_bot("greedy"), make_bot("random")])
    state, _ = new_round(rules, 4)
    while len(legal_actions(state)) < 2:
        state, _ = apply(state, legal_actions(state)[0])
    bot.choose(view(state, state.to_move), legal_actions(state))
    assert 1 <= bot.last_iterations < 1 << 30


def test_regression_ismcts_budget_spent_after_the_first_simulation_still_chooses() -> None:
    """A search whose budget ran out after its first simulation (one iteration, or a first simulation
    that took half a CPU budget on a loaded machine) failed OpenSpiel's assertion that the root was
    visited: the first simulation only expands the root. It now runs the second."""
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 4)
    while len(legal_actions(state)) < 2:
        state, _ = apply(state, legal_actions(state)[0])
    bot = IsmctsBot(seed=3, iterations=1)
    assert bot.choose(view(state, state.to_move), legal_actions(state)) in legal_actions(state)
    assert bot.last_iterations == 2
    play_round(rules, 5, [IsmctsBot(seed=1, iterations=1), make_bot("greedy")])


@pytest.mark.slow  # a whole tournament
def test_ismcts_bot_plays_in_a_tournament_through_the_service(tmp_path: Path) -> None:
    """``gostop tournament --bots greedy,gostop.env.openspiel:IsmctsBot:...``: the bot decides on
    the views the service sends (``wire.convert.view_from_pb``), a duplicate deal from each seat."""
    spec = "gostop.env.openspiel:IsmctsBot:iterations=4"
    out = tmp_path / "t"
    command = [sys.executable, "-m", "gostop", "tournament", "--bots", f"greedy,{spec}", "--games", "1",
               "--parallel", "2", "--no-progress", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    games = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(games) == 2 and all(sorted(g["seats"]) == sorted(["greedy", spec]) for g in games)
    assert all(sum(g["points"]) == 0 for g in games)


def _openspiel_section() -> str:
    text = (ROOT / "docs/research.md").read_text(encoding="utf-8")
    return text.split("\n## OpenSpiel\n", 1)[1].split("\n## ", 1)[0]


def test_the_research_pages_example_runs() -> None:
    """The first Python block of docs/research.md's OpenSpiel section runs as written."""
    block = _openspiel_section().split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/research.md", "exec"), {})


def test_the_research_page_documents_the_tensors() -> None:
    """Every tensor piece is in the page's table, and the sizes it gives are the game's."""
    section = _openspiel_section()
    observer = Observer(_game("classic", 4), pyspiel.IIGObservationType(perfect_recall=True))
    assert all(f"`{name}`" in section for name in observer.dict)
    for players, (obs, info) in {2: ("353", "1,693"), 3: ("471", "1,899"), 4: ("589", "2,038")}.items():
        game = _game("classic", players)
        assert (f"{game.observation_tensor_size():,}", f"{game.information_state_tensor_size():,}") == (obs, info)
        assert obs in section and info in section
