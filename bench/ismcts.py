"""mcts, greedy and OpenSpiel's ISMCTS against each other: duplicate deals, 95% intervals.

Usage: ``python -m bench.ismcts [--deals 500] [--cpu-millis 180] [--workers 2] [--minutes M] [--json PATH]``.

Every pairing (``--pairs``, default ``mcts:greedy,mcts:ismcts,greedy:ismcts``) plays the same
``standard`` 2-player deals (``gostop.bots.schedule.deal_seed``, as ``gostop tournament`` and the
arena deal them), each deal twice with the seats swapped, in the in-process arena
(``gostop.bots.arena.play_deal``: each bot gets its seat's view, the engine checks every action).
``ismcts`` is ``gostop.env.openspiel:IsmctsBot`` (OpenSpiel's ``ISMCTSBot`` with random rollouts on
the ``python_gostop`` game); ``mcts`` is ours at its defaults. Both search for the same CPU time
per decision (``--cpu-millis``, the deciding thread's CPU time: a loaded machine plays fewer
rounds per second, not weaker ones).

The pairings take turns deal by deal (deal 0 of each, then deal 1 of each, ...), so a run stopped
by ``--minutes`` has about as many rounds of each pairing, on the same cards. For each pairing it
prints the first bot's share of the decided rounds with its Wilson 95% interval, points per round
(95% interval over deals), and each bot's CPU per decision and simulations per search.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from gostop.bots.arena import BotSpec, RoundResult, Timing, format_summary, play_deal, summarize
from gostop.engine import Rules

ISMCTS = "gostop.env.openspiel:IsmctsBot"
NAMES = {"ismcts": ISMCTS}
"""Short names of the bots a pairing may name (others are bot specs as they are)."""


def spec(name: str, seed: int, cpu_millis: float, extra: dict[str, Any]) -> BotSpec:
    """The recipe of one bot of a pairing: the search bots get the CPU budget (``mcts@180``: a
    budget of their own) and ``ismcts`` the ``extra`` options."""
    name, _, budget = name.partition("@")
    target = NAMES.get(name, name)
    options: dict[str, Any] = {}
    if name in ("mcts", "ismcts"):
        options["cpu_millis"] = float(budget) if budget else cpu_millis
    if name == "ismcts":
        options.update(extra)
    return BotSpec(target, seed, options)


def _play(rules: Rules, deal: int, a: BotSpec, b: BotSpec, first_seed: int) -> tuple[list[RoundResult], Timing, Timing]:
    timings = {"a": Timing(), "b": Timing()}
    results = play_deal(rules, deal, a.build(deal), b.build(deal), first_seed, timings)
    return results, timings["a"], timings["b"]


def _warm_up() -> None:
    import gostop.env.openspiel  # noqa: F401  (imports OpenSpiel before the first decision's clock runs)


def tasks(pairs: Sequence[tuple[str, str]], deals: int) -> Iterator[tuple[int, int]]:
    """(deal, pairing index) in the order the pairings take turns."""
    for deal in range(deals):
        for i in range(len(pairs)):
            yield deal, i


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ismcts", description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", default="mcts:greedy,mcts:ismcts,greedy:ismcts",
                        help="comma-separated A:B pairings (mcts, greedy, random, ismcts or bot specs without ':'; "
                             "mcts@180: a search bot with its own CPU budget)")
    parser.add_argument("--deals", type=int, default=500, help="deals per pairing (each played twice)")
    parser.add_argument("--cpu-millis", type=float, default=180.0, help="CPU ms per decision of mcts and ismcts")
    parser.add_argument("--ismcts-opt", action="append", default=[], metavar="KEY=JSON",
                        help="an IsmctsBot option, e.g. uct_c=1.0 (repeatable)")
    parser.add_argument("--workers", type=int, default=2, help="processes playing deals")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals")
    parser.add_argument("--minutes", type=float, default=0.0, help="start no deal after this long (0: no limit)")
    parser.add_argument("--every", type=int, default=0, help="print the standings every N deals")
    parser.add_argument("--json", default="", help="write the summaries and every round here")
    args = parser.parse_args(argv)
    pairs = [tuple(p.split(":", 1)) for p in args.pairs.split(",") if p.strip()]
    if any(len(p) != 2 for p in pairs):
        parser.error("pairings are A:B")
    extra = {k: json.loads(v) for k, _, v in (o.partition("=") for o in args.ismcts_opt)}
    rules = Rules.preset("standard", players=2)
    specs = [(spec(a, 1, args.cpu_millis, extra), spec(b, 2, args.cpu_millis, extra)) for a, b in pairs]
    results: list[list[RoundResult]] = [[] for _ in pairs]
    timings = [{"a": Timing(), "b": Timing()} for _ in pairs]
    done = [0] * len(pairs)
    started = time.perf_counter()
    deadline = started + 60 * args.minutes if args.minutes > 0 else float("inf")

    def standings() -> None:
        for (a, b), rounds, t in zip(pairs, results, timings, strict=True):
            if rounds:
                s = summarize(rounds, t)
                print(f"  {a} vs {b}: {s.rounds} rounds, {a} {100 * s.win_rate:.1f}% of decided "
                      f"({100 * s.win_ci[0]:.1f}-{100 * s.win_ci[1]:.1f}), points {s.points_per_round:+.2f}",
                      flush=True)

    print(f"standard 2p, {args.deals} deals per pairing, {args.cpu_millis:g} ms CPU per decision, "
          f"{args.workers} workers", flush=True)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=_warm_up) as pool:
        pending: dict[concurrent.futures.Future[tuple[list[RoundResult], Timing, Timing]], int] = {}
        queue = tasks(pairs, args.deals)
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * args.workers and time.perf_counter() < deadline:
                item = next(queue, None)
                if item is None:
                    exhausted = True
                    break
                deal, i = item
                a, b = specs[i]
                pending[pool.submit(_play, rules, deal, a, b, args.seed)] = i
            if not pending:
                break
            finished, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                i = pending.pop(future)
                rounds, ta, tb = future.result()
                results[i] += rounds
                timings[i]["a"].merge(ta)
                timings[i]["b"].merge(tb)
                done[i] += 1
                if args.every and i == len(pairs) - 1 and done[i] % args.every == 0:
                    print(f"[{done[i]} deals, {time.perf_counter() - started:.0f}s]", flush=True)
                    standings()
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed / 60:.1f} minutes; deals played per pairing: {', '.join(map(str, done))}")
    out: dict[str, Any] = {"rules": rules.to_dict(), "cpu_millis": args.cpu_millis, "seed": args.seed,
                           "ismcts_options": extra, "minutes": elapsed / 60, "pairings": []}
    for (a, b), (sa, sb), rounds, t in zip(pairs, specs, results, timings, strict=True):
        rounds.sort(key=lambda r: (r.deal, r.seats))
        s = summarize(rounds, t)
        print()
        for line in format_summary(a, b, s):
            print(line)
        out["pairings"].append({"a": a, "b": b, "spec_a": asdict(sa), "spec_b": asdict(sb), "summary": asdict(s),
                                "rounds": [asdict(r) for r in rounds]})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
