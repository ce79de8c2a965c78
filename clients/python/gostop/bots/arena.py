"""In-process bot evaluation: single rounds and duplicate-deal matchups, without the service.

Every seat's bot gets exactly its own view (``engine.view(state, seat)``) and the legal
actions. A *duplicate* matchup plays each deal once per seat assignment, so both bots hold
every hand: with 2 players each deal is played twice with the seats swapped; with n players
every assignment of the two bots to the n seats in which both bots appear (6 with 3 players).
The deals are those of ``gostop tournament`` with the same seed (``gostop.bots.schedule``).

Command line (parallel worker processes; each worker builds its own bots)::

    python -m gostop.bots.arena --a mcts --b greedy --deals 500 --preset standard \\
        --cpu-millis 180 --workers 2

Without a budget flag ``mcts`` uses its default budget (``DEFAULT_CPU_MILLIS`` of CPU time per
decision); ``--iterations`` gives results that do not depend on the machine's speed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gostop.engine import Rules, Settlement, apply, legal_actions, new_round, view

from . import BOT_NAMES, make_bot
from .base import Bot
from .schedule import deal_seed

SLOW = 0.2
"""Decision time (seconds) counted as slow in ``Timing.slow`` (the 200 ms budget of a bot)."""


@dataclass
class Timing:
    """Decision times of one bot (seconds): wall-clock, and the CPU time of the deciding thread.

    The CPU time (``time.thread_time``) is what one free core would take; it does not grow
    when other processes share the machine, so its maximum checks a per-decision budget.
    """

    decisions: int = 0
    total: float = 0.0
    max: float = 0.0
    slow: int = 0
    """Decisions that took longer than ``SLOW`` seconds."""
    searches: int = 0
    """Decisions that ran a search (bots reporting ``last_iterations`` > 0)."""
    search_time: float = 0.0
    iterations: int = 0
    cpu_total: float = 0.0
    cpu_max: float = 0.0
    cpu_slow: int = 0
    """Decisions that took more than ``SLOW`` seconds of CPU."""

    def add(self, seconds: float, iterations: int = 0, cpu: float = 0.0) -> None:
        self.decisions += 1
        self.total += seconds
        self.max = max(self.max, seconds)
        if seconds > SLOW:
            self.slow += 1
        self.cpu_total += cpu
        self.cpu_max = max(self.cpu_max, cpu)
        if cpu > SLOW:
            self.cpu_slow += 1
        if iterations > 0:
            self.searches += 1
            self.search_time += seconds
            self.iterations += iterations

    def merge(self, other: Timing) -> None:
        self.decisions += other.decisions
        self.total += other.total
        self.max = max(self.max, other.max)
        self.slow += other.slow
        self.searches += other.searches
        self.search_time += other.search_time
        self.iterations += other.iterations
        self.cpu_total += other.cpu_total
        self.cpu_max = max(self.cpu_max, other.cpu_max)
        self.cpu_slow += other.cpu_slow

    @property
    def mean(self) -> float:
        return self.total / self.decisions if self.decisions else 0.0

    @property
    def cpu_mean(self) -> float:
        return self.cpu_total / self.decisions if self.decisions else 0.0


def play_round(
    rules: Rules,
    deal_seed: int,
    bots_by_seat: Sequence[Bot],
    timings: Sequence[Timing] | None = None,
) -> Settlement:
    """Play one round dealt from ``deal_seed``; seat i is played by ``bots_by_seat[i]``.

    Each bot gets its seat's view and the legal actions; an action outside the legal list is
    refused with ``ValueError``. ``timings[i]``, when given, collects seat i's decision times.
    """
    if len(bots_by_seat) != rules.players:
        raise ValueError(f"{rules.players} bots needed, got {len(bots_by_seat)}")
    state, _ = new_round(rules, deal_seed)
    while not state.over:
        seat = state.to_move
        legal = legal_actions(state)
        seat_view = view(state, seat)
        start, cpu_start = time.perf_counter(), time.thread_time()
        action = bots_by_seat[seat].choose(seat_view, legal)
        if timings is not None:
            cpu = time.thread_time() - cpu_start
            wall = time.perf_counter() - start
            timings[seat].add(wall, getattr(bots_by_seat[seat], "last_iterations", 0), cpu)
        if action not in legal:
            raise ValueError(f"bot {bots_by_seat[seat].name} chose an illegal action {action!r}")
        state, _ = apply(state, action, seat)
    assert state.settlement is not None
    return state.settlement


@dataclass(frozen=True)
class BotSpec:
    """A picklable recipe for a bot (what worker processes build their bots from)."""

    name: str
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self, deal: int | None = None) -> Bot:
        """The bot; for ``deal`` given, seeded for that deal (so results do not depend on
        which worker plays which deal, or in what order)."""
        seed = self.seed if deal is None else (self.seed * 1_000_003 + deal) % (1 << 63)
        return make_bot(self.name, seed, **self.options)


@dataclass(frozen=True)
class RoundResult:
    """One round of a duplicate matchup, from bot A's side."""

    deal: int
    seed: int
    seats: str
    """Bot of each seat: ``"ab"`` means A in seat 0, B in seat 1."""
    winner: str
    """``"a"``, ``"b"`` or ``""`` (나가리)."""
    outcome: str
    points_a: int
    """Net points of A's seats (instant payments included)."""
    points_b: int


def seat_assignments(players: int) -> list[str]:
    """Every assignment of bots ``a``/``b`` to the seats in which both appear.

    >>> seat_assignments(2), len(seat_assignments(3))
    (['ab', 'ba'], 6)
    """
    return [
        "".join(p) for p in itertools.product("ab", repeat=players) if "a" in p and "b" in p
    ]


def play_deal(
    rules: Rules,
    deal: int,
    bot_a: Bot,
    bot_b: Bot,
    first_seed: int = 0,
    timings: Mapping[str, Timing] | None = None,
) -> list[RoundResult]:
    """Play one deal under every seat assignment."""
    seed = deal_seed(first_seed, rules.name, rules.players, deal)
    out = []
    for seats in seat_assignments(rules.players):
        bots = [bot_a if s == "a" else bot_b for s in seats]
        seat_timings = [Timing() for _ in seats]
        st = play_round(rules, seed, bots, seat_timings)
        if timings is not None:
            for s, t in zip(seats, seat_timings, strict=True):
                timings[s].merge(t)
        winner = "" if st.winner < 0 else seats[st.winner]
        pa = sum(p for s, p in zip(seats, st.points, strict=True) if s == "a")
        pb = sum(p for s, p in zip(seats, st.points, strict=True) if s == "b")
        out.append(RoundResult(deal, seed, seats, winner, st.outcome, pa, pb))
    return out


@dataclass
class Summary:
    """Totals of a matchup from bot A's side, with 95% confidence intervals."""

    rounds: int
    deals: int
    a_wins: int
    b_wins: int
    draws: int
    win_rate: float
    """A's wins / decided rounds."""
    win_ci: tuple[float, float]
    """Wilson 95% interval of ``win_rate``."""
    points_per_round: float
    """A's mean net points per round."""
    points_ci: tuple[float, float]
    """95% interval of ``points_per_round`` (normal, over per-deal means: the rounds of one
    deal are correlated)."""
    timings: dict[str, dict[str, float]] = field(default_factory=dict)


def wilson(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion.

    >>> tuple(round(x, 3) for x in wilson(70, 100))
    (0.604, 0.781)
    """
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarize(results: Sequence[RoundResult], timings: Mapping[str, Timing] | None = None) -> Summary:
    """Win rate over decided rounds (Wilson CI) and points per round (CI over deals)."""
    a = sum(1 for r in results if r.winner == "a")
    b = sum(1 for r in results if r.winner == "b")
    draws = len(results) - a - b
    decided = a + b
    by_deal: dict[int, list[int]] = {}
    for r in results:
        by_deal.setdefault(r.deal, []).append(r.points_a)
    deal_means = [sum(v) / len(v) for v in by_deal.values()]
    mean = sum(r.points_a for r in results) / len(results) if results else 0.0
    half = 1.959964 * statistics.stdev(deal_means) / math.sqrt(len(deal_means)) if len(deal_means) > 1 else math.inf
    times = {
        k: {
            "decisions": t.decisions, "mean_ms": 1000 * t.mean, "max_ms": 1000 * t.max, "over_200ms": t.slow,
            "cpu_mean_ms": 1000 * t.cpu_mean, "cpu_max_ms": 1000 * t.cpu_max, "cpu_over_200ms": t.cpu_slow,
            "searches": t.searches, "iterations_per_search": t.iterations / t.searches if t.searches else 0.0,
            "iterations_per_second": t.iterations / t.search_time if t.search_time else 0.0,
        }
        for k, t in (timings or {}).items()
    }
    return Summary(
        rounds=len(results), deals=len(by_deal), a_wins=a, b_wins=b, draws=draws,
        win_rate=a / decided if decided else 0.0, win_ci=wilson(a, decided),
        points_per_round=mean, points_ci=(mean - half, mean + half), timings=times,
    )


# ------------------------------------------------------------------ worker pool

_WORKER: dict[str, Any] = {}


def _worker_init(rules: Rules, spec_a: BotSpec, spec_b: BotSpec, first_seed: int) -> None:
    _WORKER.update(rules=rules, a=spec_a, b=spec_b, first_seed=first_seed)


def _spec_deal(
    rules: Rules, deal: int, spec_a: BotSpec, spec_b: BotSpec, first_seed: int
) -> tuple[list[RoundResult], dict[str, Timing]]:
    timings = {"a": Timing(), "b": Timing()}
    results = play_deal(rules, deal, spec_a.build(deal), spec_b.build(deal), first_seed, timings)
    return results, timings


def _worker_deal(deal: int) -> tuple[list[RoundResult], dict[str, Timing]]:
    return _spec_deal(_WORKER["rules"], deal, _WORKER["a"], _WORKER["b"], _WORKER["first_seed"])


def duplicate_match(
    rules: Rules,
    bot_a: Bot | BotSpec,
    bot_b: Bot | BotSpec,
    deals: int,
    *,
    first_seed: int = 0,
    workers: int = 1,
    timings: dict[str, Timing] | None = None,
    progress: Callable[[int, list[RoundResult]], None] | None = None,
) -> list[RoundResult]:
    """Play ``deals`` deals under every seat assignment; return the rounds in deal order.

    Bots given as ``BotSpec`` are built afresh for every deal (seeded by the deal), so the
    results do not depend on the number of workers. With ``workers > 1`` the deals run in
    worker processes and both bots must be ``BotSpec``s. ``timings`` (keys ``a`` and ``b``)
    collects decision times; ``progress(deals_done, results_so_far)`` is called after each deal.
    """
    timings = timings if timings is not None else {}
    timings.setdefault("a", Timing())
    timings.setdefault("b", Timing())
    results: list[RoundResult] = []
    if workers <= 1:
        for deal in range(deals):
            if isinstance(bot_a, BotSpec) and isinstance(bot_b, BotSpec):
                rounds, t = _spec_deal(rules, deal, bot_a, bot_b, first_seed)
                timings["a"].merge(t["a"])
                timings["b"].merge(t["b"])
            else:
                a = bot_a.build(deal) if isinstance(bot_a, BotSpec) else bot_a
                b = bot_b.build(deal) if isinstance(bot_b, BotSpec) else bot_b
                rounds = play_deal(rules, deal, a, b, first_seed, timings)
            results += rounds
            if progress is not None:
                progress(deal + 1, results)
        return results
    if not isinstance(bot_a, BotSpec) or not isinstance(bot_b, BotSpec):
        raise ValueError("parallel matchups need BotSpec bots (each worker builds its own)")
    bot_a.build()  # fail here, not in a worker initializer (which the pool would retry forever)
    bot_b.build()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers, initializer=_worker_init, initargs=(rules, bot_a, bot_b, first_seed)) as pool:
        chunks: dict[int, list[RoundResult]] = {}
        for done, (rounds, t) in enumerate(pool.imap_unordered(_worker_deal, range(deals)), start=1):
            chunks[rounds[0].deal] = rounds
            timings["a"].merge(t["a"])
            timings["b"].merge(t["b"])
            if progress is not None:
                progress(done, [r for k in sorted(chunks) for r in chunks[k]])
    for k in sorted(chunks):
        results += chunks[k]
    return results


# ------------------------------------------------------------------ command line


def _options(args: argparse.Namespace, name: str) -> dict[str, Any]:
    if name != "mcts":
        return {}
    opts: dict[str, Any] = {}
    if args.iterations is not None:
        opts["iterations"] = args.iterations
    if args.millis is not None:
        opts["millis"] = args.millis
    if args.cpu_millis is not None:
        opts["cpu_millis"] = args.cpu_millis
    for item in args.opt or ():
        key, _, raw = item.partition("=")
        opts[key] = json.loads(raw)
    return opts


def format_summary(name_a: str, name_b: str, s: Summary) -> Iterator[str]:
    decided = s.a_wins + s.b_wins
    yield f"{name_a} (A) vs {name_b} (B): {s.rounds} rounds over {s.deals} deals"
    yield f"  A wins {s.a_wins}, B wins {s.b_wins}, draws {s.draws} ({decided} decided)"
    yield (
        f"  A win rate over decided rounds: {100 * s.win_rate:.1f}% "
        f"(95% CI {100 * s.win_ci[0]:.1f}-{100 * s.win_ci[1]:.1f}%)"
    )
    yield (
        f"  A points per round: {s.points_per_round:+.2f} "
        f"(95% CI {s.points_ci[0]:+.2f} .. {s.points_ci[1]:+.2f})"
    )
    for key, label in (("a", name_a), ("b", name_b)):
        t = s.timings.get(key)
        if t:
            yield (
                f"  {key.upper()} {label}: {int(t['decisions'])} decisions, "
                f"mean {t['mean_ms']:.1f} ms, max {t['max_ms']:.1f} ms, {int(t['over_200ms'])} over 200 ms; "
                f"CPU mean {t['cpu_mean_ms']:.1f} ms, max {t['cpu_max_ms']:.1f} ms, "
                f"{int(t['cpu_over_200ms'])} over 200 ms"
                + (
                    f"; {int(t['searches'])} searches, {t['iterations_per_search']:.0f} iterations each, "
                    f"{t['iterations_per_second']:.0f} iterations/s"
                    if t.get("searches") else ""
                )
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gostop.bots.arena", description=__doc__.split("\n")[0])
    parser.add_argument("--a", default="mcts", choices=BOT_NAMES, help="bot A")
    parser.add_argument("--b", default="greedy", choices=BOT_NAMES, help="bot B")
    parser.add_argument("--deals", type=int, default=100)
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--players", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="first deal seed")
    parser.add_argument("--bot-seed", type=int, default=0)
    parser.add_argument("--millis", type=float, default=None, help="mcts budget per decision (ms)")
    parser.add_argument("--iterations", type=int, default=None, help="mcts budget per decision (iterations)")
    parser.add_argument("--cpu-millis", type=float, default=None, help="mcts budget per decision (ms of CPU time)")
    parser.add_argument("--opt", action="append", help="extra mcts option key=json_value (repeatable)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the per-round results and summary here")
    parser.add_argument("--every", type=int, default=0, help="print a progress summary every N deals")
    args = parser.parse_args(argv)
    rules = Rules.preset(args.preset, players=args.players)
    spec_a = BotSpec(args.a, args.bot_seed, _options(args, args.a))
    spec_b = BotSpec(args.b, args.bot_seed + 1, _options(args, args.b))
    timings: dict[str, Timing] = {}
    started = time.perf_counter()

    def progress(done: int, results: list[RoundResult]) -> None:
        if args.every and done % args.every == 0:
            s = summarize(results, timings)
            print(
                f"[{done}/{args.deals} deals, {time.perf_counter() - started:.0f}s] "
                f"A {100 * s.win_rate:.1f}% ({100 * s.win_ci[0]:.1f}-{100 * s.win_ci[1]:.1f}), "
                f"pts {s.points_per_round:+.2f}",
                flush=True,
            )

    results = duplicate_match(
        rules, spec_a, spec_b, args.deals, first_seed=args.seed, workers=args.workers,
        timings=timings, progress=progress,
    )
    summary = summarize(results, timings)
    print(f"rules {rules.name}, {rules.players} players; {time.perf_counter() - started:.0f}s")
    for line in format_summary(args.a, args.b, summary):
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {"a": asdict(spec_a), "b": asdict(spec_b), "rules": rules.to_dict(),
                 "summary": asdict(summary), "rounds": [asdict(r) for r in results]},
                f, indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
