"""Bots: legal play in every preset, determinism, no peeking, and the duplicate arena."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from gostop.bots import BOT_NAMES, Bot, GreedyBot, MctsBot, RandomBot, make_bot
from gostop.bots.arena import (
    BotSpec,
    Timing,
    duplicate_match,
    play_round,
    seat_assignments,
    summarize,
    wilson,
)
from gostop.bots.belief import Belief
from gostop.bots.mcts import DEFAULT_CPU_MILLIS
from gostop.engine import Action, Rules, State, View, apply, card_places, legal_actions, new_round, view
from gostop.engine.determinize import determinize
from testkit.configs import CONFIGS, config_id


def _play_checked(rules: Rules, seed: int, bots: Sequence[Bot]) -> tuple[State, list[Action]]:
    """Play a round, checking every chosen action is listed and accepted by ``engine.apply``."""
    state, _ = new_round(rules, seed)
    chosen: list[Action] = []
    while not state.over:
        seat = state.to_move
        legal = legal_actions(state)
        action = bots[seat].choose(view(state, seat), legal)
        assert action in legal, (bots[seat].name, action, legal)
        state, _ = apply(state, action, seat)
        chosen.append(action)
    assert state.settlement is not None
    assert sum(state.settlement.points) == 0
    return state, chosen


def _bots(name: str, players: int) -> list[Bot]:
    options = {"iterations": 12} if name == "mcts" else {}
    return [make_bot(name, seed, **options) for seed in range(players)]


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[config_id(c) for c in CONFIGS])
@pytest.mark.parametrize("name", BOT_NAMES)
def test_bots_play_complete_rounds_legally(name: str, preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)
    rounds = 2 if name == "mcts" else 6
    for seed in range(rounds):
        _play_checked(rules, 1000 + seed, _bots(name, players))


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 4), ("arcade", 2)])
def test_mixed_table(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)
    pool: list[Bot] = [GreedyBot(), MctsBot(iterations=10, seed=1), RandomBot(2), GreedyBot()]
    for seed in range(3):
        _play_checked(rules, 77 + seed, pool[:players])


def test_greedy_is_deterministic() -> None:
    rules = Rules.preset("standard")
    for seed in range(5):
        _, first = _play_checked(rules, seed, [GreedyBot(), GreedyBot()])
        _, second = _play_checked(rules, seed, [GreedyBot(5), GreedyBot(9)])
        assert first == second


@pytest.mark.parametrize("mode", ["flat", "uct"])
def test_mcts_is_deterministic_with_a_seed_and_iterations(mode: str) -> None:
    rules = Rules.preset("standard")

    def game() -> list[Action]:
        return _play_checked(rules, 3, [MctsBot(iterations=30, seed=4, mode=mode), GreedyBot()])[1]

    assert game() == game()


def test_mcts_never_peeks() -> None:
    """The bot gets only the view: two states that look the same to it get the same answer."""
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 21)
    seat = state.to_move
    other = 1 - seat
    # Swap the opponent's hand with the top of the stock: invisible to the bot's seat.
    hand = state.seats[other].hand
    stock = state.stock
    k = min(len(hand), len(stock))
    swapped_hand = tuple(sorted(stock[:k] + hand[k:]))
    swapped_stock = hand[:k] + stock[k:]
    seats = list(state.seats)
    seats[other] = replace(seats[other], hand=swapped_hand)
    twin = replace(state, seats=tuple(seats), stock=swapped_stock)
    assert view(twin, seat) == view(state, seat)
    answers = []
    for s in (state, twin):
        bot = MctsBot(iterations=60, seed=8)
        answers.append((bot.choose(view(s, seat), legal_actions(s)), bot.last_root))
    assert answers[0] == answers[1]


class _Spy:
    """A bot wrapper recording what it was given."""

    def __init__(self, inner: Bot) -> None:
        self.inner = inner
        self.name = inner.name
        self.views: list[View] = []

    def choose(self, v: View, legal: Sequence[Action]) -> Action:
        self.views.append(v)
        return self.inner.choose(v, legal)


def test_arena_gives_each_bot_its_own_view() -> None:
    rules = Rules.preset("standard", players=3)
    spies = [_Spy(GreedyBot()), _Spy(RandomBot(1)), _Spy(MctsBot(iterations=8))]
    play_round(rules, 5, spies)
    for seat, spy in enumerate(spies):
        assert spy.views
        assert all(v.viewer == seat and v.to_move == seat for v in spy.views)


def test_mcts_single_legal_action_returns_at_once() -> None:
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 2)
    bot = MctsBot(iterations=10_000)
    only = legal_actions(state)[:1]
    assert bot.choose(view(state, state.to_move), only) == only[0]
    assert bot.last_iterations == 0


def test_duplicate_match_summary_adds_up() -> None:
    rules = Rules.preset("standard")
    timings: dict[str, Timing] = {}
    results = duplicate_match(rules, GreedyBot(), RandomBot(3), 6, timings=timings)
    assert len(results) == 12
    assert [r.seats for r in results[:2]] == ["ab", "ba"]
    assert results[0].seed == results[1].seed
    s = summarize(results, timings)
    assert s.rounds == 12 and s.deals == 6
    assert s.a_wins + s.b_wins + s.draws == 12
    decided = s.a_wins + s.b_wins
    assert s.win_rate == pytest.approx(s.a_wins / decided if decided else 0.0)
    assert s.win_ci[0] <= s.win_rate <= s.win_ci[1]
    assert s.points_per_round == pytest.approx(sum(r.points_a for r in results) / 12)
    assert all(r.points_a == -r.points_b for r in results)
    assert s.points_ci[0] <= s.points_per_round <= s.points_ci[1]
    assert timings["a"].decisions > 0 and timings["b"].decisions > 0
    assert s.timings["a"]["max_ms"] >= s.timings["a"]["mean_ms"]


def test_duplicate_match_three_players_rotates_seats() -> None:
    rules = Rules.preset("standard", players=3)
    assert seat_assignments(3) == ["aab", "aba", "abb", "baa", "bab", "bba"]
    results = duplicate_match(rules, BotSpec("greedy"), BotSpec("random", 1), 2)
    assert len(results) == 12
    assert {r.seed for r in results[:6]} == {results[0].seed}


def test_the_arena_plays_the_deals_of_a_tournament_with_the_same_seed() -> None:
    """One duplicate-deal schedule (gostop.bots.schedule) for the arena and gostop tournament."""
    from gostop.tools import tournament

    rules = Rules.preset("standard", players=3)
    results = duplicate_match(rules, BotSpec("random", 1), BotSpec("random", 2), 3, first_seed=17)
    games = tournament.plan(["random", "greedy"], [("standard", 3)], 3, 17)
    arena_deals = sorted({(r.deal, r.seed) for r in results})
    assert arena_deals == sorted({(g.deal_index, g.deal_seed) for g in games})


def test_duplicate_match_in_worker_processes_matches_in_process() -> None:
    rules = Rules.preset("simple")
    a, b = BotSpec("greedy"), BotSpec("random", 4)
    assert duplicate_match(rules, a, b, 4, workers=2) == duplicate_match(rules, a, b, 4)


def test_wilson_interval() -> None:
    low, high = wilson(0, 10)
    assert low == 0.0 and 0.2 < high < 0.35
    assert wilson(0, 0) == (0.0, 1.0)


def test_make_bot_rejects_unknown_names_and_options() -> None:
    with pytest.raises(ValueError):
        make_bot("nope")
    with pytest.raises(ValueError):
        make_bot("greedy", iterations=3)
    bot = make_bot("mcts", 3, millis=5.0)
    assert isinstance(bot, MctsBot) and bot.millis == 5.0


# ------------------------------------------------------------------ inference (bots/belief.py)


def _positions(rules: Rules, seeds: range, min_plays: int) -> list[State]:
    """Positions of greedy-vs-greedy rounds where the seat to move has seen ``min_plays`` plays."""
    out = []
    for seed in seeds:
        state, _ = new_round(rules, seed)
        bot = GreedyBot()
        while not state.over:
            if len(state.plays) >= min_plays:
                out.append(state)
            state, _ = apply(state, bot.choose(view(state, state.to_move), legal_actions(state)))
    return out


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_belief_samples_are_consistent_with_the_view(preset: str, players: int) -> None:
    """Every inferred hand completes the view into a state that looks the same to the seat."""
    rules = Rules.preset(preset, players=players)
    rng = random.Random(5)
    for state in _positions(rules, range(3), 2)[::4]:
        seat = state.to_move
        seen = view(state, seat)
        belief = Belief(seen, rng, samples=4, burn=10, thin=2)
        for k in range(len(belief.samples)):
            hidden = belief.sample(k)
            assert hidden is not None and seat not in hidden
            sample = determinize(seen, rng, hidden)
            card_places(sample)
            assert view(sample, seat) == seen
            assert legal_actions(sample) == legal_actions(state)


def test_belief_leans_towards_the_true_hand_of_a_greedy_opponent() -> None:
    """Against the player it models, the inferred hands hold more of the true cards than chance."""
    rules = Rules.preset("standard")
    gains = []
    for i, state in enumerate(_positions(rules, range(8), 6)[::3]):
        seat = state.to_move
        other = 1 - seat
        truth = set(state.seats[other].hand) - set(state.seats[other].revealed)
        belief = Belief(view(state, seat), random.Random(i), samples=16)
        if not truth or not belief.samples:
            continue
        hits = sum(len(set(s[other]) & truth) for s in belief.samples) / len(belief.samples)
        gains.append((hits - len(truth) ** 2 / len(belief.pool)) / len(truth))
    assert len(gains) >= 10
    assert sum(gains) / len(gains) > 0.03


def test_belief_is_uninformed_without_plays_or_with_beta_zero() -> None:
    rules = Rules.preset("standard")
    state, _ = new_round(rules, 4)
    assert not Belief(view(state, state.to_move), random.Random(1)).informed
    later = _positions(rules, range(1), 6)[0]
    assert not Belief(view(later, later.to_move), random.Random(1), beta=0.0).informed
    assert MctsBot(infer=True).belief(view(state, state.to_move), random.Random(1)) is None


@pytest.mark.parametrize(("preset", "players"), CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_mcts_with_inference_plays_legally(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)
    bots: list[Bot] = [MctsBot(iterations=12, seed=s, infer=True, belief_samples=4) for s in range(players)]
    _play_checked(rules, 2024, bots)


def test_mcts_with_inference_is_deterministic_and_never_peeks() -> None:
    rules = Rules.preset("standard")

    def game() -> list[Action]:
        return _play_checked(rules, 3, [MctsBot(iterations=30, seed=4, infer=True), GreedyBot()])[1]

    assert game() == game()
    state = _positions(rules, range(1), 6)[0]
    seat = state.to_move
    other = 1 - seat
    hand, stock = state.seats[other].hand, state.stock
    k = min(len(hand), len(stock))
    seats = list(state.seats)
    seats[other] = replace(seats[other], hand=tuple(sorted(stock[:k] + hand[k:])))
    twin = replace(state, seats=tuple(seats), stock=hand[:k] + stock[k:])
    assert view(twin, seat) == view(state, seat)
    answers = []
    for s in (state, twin):
        bot = MctsBot(iterations=60, seed=8, infer=True)
        answers.append((bot.choose(view(s, seat), legal_actions(s)), bot.last_root))
    assert answers[0] == answers[1]


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("classic", 3), ("house", 4)])
def test_mcts_with_greedy_replies_plays_legally_and_deterministically(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players=players)

    def game() -> list[Action]:
        bots: list[Bot] = [MctsBot(iterations=16, seed=s, infer=True, reply_depth=1) for s in range(players)]
        return _play_checked(rules, 99, bots)[1]

    assert game() == game()


def test_belief_model_reproduces_greedy_choices() -> None:
    """Given a greedy opponent's true hand, the model names its actual play as greedy's choice.

    The values are rebuilt from the public record (floor, pile sizes, shakes); only a pile
    changed by a later 피 steal can make them differ from what greedy saw.
    """
    rules = Rules.preset("standard")
    explained = total = 0
    for state in _positions(rules, range(6), 4)[::2]:
        seat = state.to_move
        other = 1 - seat
        belief = Belief(view(state, seat), random.Random(0), samples=1, burn=0, thin=1)
        hand = list(state.seats[other].hand)
        for ob in belief.observations.get(other, []):
            total += 1
            explained += ob.log_likelihood(hand, 100.0, 1e-9) > math.log(0.5)
    assert total >= 40
    assert explained >= 0.95 * total


def test_mcts_cpu_budget_stops_before_the_batch_that_would_overrun(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU budget ends the search by the thread's CPU time: the next batch is not started when,
    as long as the last one, it would end past the deadline.

    Regression: this was a timed assertion on real decisions (worst < 35 ms at a 25 ms budget),
    which failed on a loaded machine (84 ms); the clock is the test's own now, and the real bot is
    only checked to search and decide (speed is for make bench)."""
    from gostop.bots import mcts

    clock = [100.0]
    monkeypatch.setattr("gostop.bots.mcts.time.thread_time", lambda: clock[0])
    budget = mcts.Budget(None, None, 25.0)
    batches = 0
    while True:
        clock[0] += 0.003  # each batch of rollouts costs 3 ms of CPU
        batches += 1
        if budget.spent(batches):
            break
    spent = clock[0] - 100.0
    assert spent <= 0.025 and spent + 0.003 >= 0.025 - 1e-9, (batches, spent)


def test_mcts_with_a_cpu_budget_searches_and_decides() -> None:
    rules = Rules.preset("standard")
    bot = MctsBot(cpu_millis=25.0, seed=3)
    for state in _positions(rules, range(2), 4)[::5]:
        legal = legal_actions(state)
        if len(legal) < 2:
            continue
        assert bot.choose(view(state, state.to_move), legal) in legal
        assert bot.last_iterations > 0


def test_mcts_budget_options_are_checked() -> None:
    with pytest.raises(ValueError):
        MctsBot(cpu_millis=0.0)
    bot = MctsBot(cpu_millis=50.0)
    assert bot.iterations is None and bot.cpu_millis == 50.0
    assert MctsBot(iterations=5, cpu_millis=50.0).budget().limit == 5


def test_mcts_default_budget_is_cpu_time() -> None:
    bot = MctsBot()
    assert bot.iterations is None and bot.millis is None and bot.cpu_millis == DEFAULT_CPU_MILLIS
    assert DEFAULT_CPU_MILLIS < 200.0
