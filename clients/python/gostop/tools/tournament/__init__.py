"""``gostop tournament``: duplicate-deal bot tournaments played through the game service.

Every game is one round played over gRPC exactly as a remote player would play it: each seat
reads its own view with its own seat token (``GetGame`` or the ``TurnResult`` of its last
action), its bot picks one of the legal actions, and the seat submits it with the expected
version and a request id, through ``AsyncGostopClient`` (which retries ``UNAVAILABLE`` with the
same request id); ``ABORTED`` (a stale version) re-reads the game and decides again. Cheap bots
decide on the event loop; CPU-heavy ones (``mcts``) in a process pool.

**Matchups.** For each preset and each table size n, the *lineups* are the multisets of n bots
from ``--bots`` that use min(n, number of bots) distinct bots: with at least n bots, every
combination of n distinct bots (each pair in 2-player games); with fewer bots than seats, every
way of filling the table in which every bot sits (``random, greedy`` at 3 seats gives
``random+random+greedy`` and ``random+greedy+greedy``).

**Duplicate deals.** Deal i of a preset and table size is generated from a seed derived from
``--seed``: the engine deals it (``new_round``) and the cards as dealt (hands, floor, stock
order, dealer; before bonus cards are resolved) become an explicit ``Deal``, which
``CreateGame`` takes with an operator key. Each lineup plays the deal once per rotation of the
lineup over the seats, so every bot holds every hand of the deal and the luck of the cards
cancels. The same deals are used by every lineup of a preset and table size.

**Results** stream to ``results.jsonl`` (one JSON object per finished game); a run with the same
arguments and ``--out`` skips the games already there (key: matchup, deal seed, rotation). The
report (``report.json``, ``report.csv``, ``report.png`` and a table on the terminal) is built from
that file; ``--report-only`` re-renders it. Ctrl-C stops a run cleanly (exit status 130): the games
in flight are abandoned, the saved ones are counted, and the report of the partial results says
how many of the planned games it holds.

>>> lineups(("random", "greedy", "mcts"), 2)
[('random', 'greedy'), ('random', 'mcts'), ('greedy', 'mcts')]
>>> lineups(("random", "greedy"), 3)
[('random', 'random', 'greedy'), ('random', 'greedy', 'greedy')]
>>> rotate(("a", "b", "c"), 1)
('b', 'c', 'a')
>>> tuple(round(x, 3) for x in wilson(70, 100))
(0.604, 0.781)
"""

from __future__ import annotations

from gostop.bots.arena import wilson
from gostop.bots.schedule import deal_seed, derive_seed, rotate

from .cli import (
    add_arguments,
    main,
    run_from_args,
)
from .plan import (
    HEAVY_BOTS,
    MAX_ACTIONS,
    REPORT_CSV,
    REPORT_JSON,
    REPORT_PNG,
    RESULTS,
    SETTINGS_JSON,
    GameSpec,
    lineups,
    load_results,
    make_deal,
    matchup_name,
    plan,
    planned_keys,
    result_key,
)
from .report import (
    CSV_COLUMNS,
    build_report,
    format_report,
    plot_report,
    ranked,
    save_report,
    write_report,
)
from .run import (
    GameFailed,
    InlinePlayer,
    Options,
    Player,
    PoolPlayer,
    ResultWriter,
    RunSummary,
    list_tables,
    play_game,
    run_tournament,
)
from .stats import (
    Z95,
    clustered_mean,
    t975,
)

__all__ = [
    "CSV_COLUMNS",
    "HEAVY_BOTS",
    "MAX_ACTIONS",
    "REPORT_CSV",
    "REPORT_JSON",
    "REPORT_PNG",
    "RESULTS",
    "SETTINGS_JSON",
    "Z95",
    "GameFailed",
    "GameSpec",
    "InlinePlayer",
    "Options",
    "Player",
    "PoolPlayer",
    "ResultWriter",
    "RunSummary",
    "add_arguments",
    "build_report",
    "clustered_mean",
    "deal_seed",
    "derive_seed",
    "format_report",
    "lineups",
    "list_tables",
    "load_results",
    "main",
    "make_deal",
    "matchup_name",
    "plan",
    "planned_keys",
    "play_game",
    "plot_report",
    "ranked",
    "result_key",
    "rotate",
    "run_from_args",
    "run_tournament",
    "save_report",
    "t975",
    "wilson",
    "write_report",
]
