"""What a tournament plays: the lineups, every game (deal, lineup, rotation) in deal order, the
explicit deals, and the names of its files.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gostop.bots.schedule import deal_seed, rotate
from gostop.engine import Deal, Rules, new_round
from gostop.engine.events import BonusCaptured, Dealt

RESULTS: Final = "results.jsonl"
REPORT_JSON: Final = "report.json"
REPORT_CSV: Final = "report.csv"
REPORT_PNG: Final = "report.png"
SETTINGS_JSON: Final = "tournament.json"

HEAVY_BOTS: Final = frozenset({"mcts"})
"""Bots whose decisions run in the process pool (CPU-heavy; the event loop must not wait on them)."""

MAX_ACTIONS: Final = 2000
"""A round never takes this many actions; more means a bug (the game is abandoned as failed)."""


# ------------------------------------------------------------------------------------- plan


def lineups(bots: Sequence[str], players: int) -> list[tuple[str, ...]]:
    """The bot lineups of an n-seat table (see the module documentation)."""
    distinct = min(players, len(set(bots)))
    out = []
    for combo in itertools.combinations_with_replacement(list(dict.fromkeys(bots)), players):
        if len(set(combo)) == distinct:
            out.append(combo)
    return out


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game of the tournament: a lineup at a table, one deal, one rotation."""

    preset: str
    players: int
    lineup: tuple[str, ...]
    deal_index: int
    deal_seed: int
    rotation: int

    @property
    def matchup(self) -> str:
        return matchup_name(self.preset, self.players, self.lineup)

    @property
    def key(self) -> str:
        return result_key(self.matchup, self.deal_seed, self.rotation)

    @property
    def seats(self) -> tuple[str, ...]:
        return rotate(self.lineup, self.rotation)


def matchup_name(preset: str, players: int, lineup: Sequence[str]) -> str:
    return f"{preset}/{players}p/{'+'.join(lineup)}"


def result_key(matchup: str, seed: int, rotation: int) -> str:
    return f"{matchup}|{seed}|{rotation}"


def plan(
    bots: Sequence[str], tables: Sequence[tuple[str, int]], games: int, seed: int,
) -> list[GameSpec]:
    """Every game of a tournament, deal by deal (so that an interrupted run is balanced)."""
    out = []
    for index in range(games):
        for preset, players in tables:
            ds = deal_seed(seed, preset, players, index)
            for lineup in lineups(bots, players):
                for rotation in range(players):
                    out.append(GameSpec(preset, players, lineup, index, ds, rotation))
    return out


def planned_keys(settings: Mapping[str, Any]) -> set[str] | None:
    """The keys of every game of the run whose settings (``tournament.json``) are ``settings``;
    None when they do not say which tables it played (written before they did).

    ``--report-only`` compares them with the results to tell a partial run from a finished one.
    """
    tables = settings.get("tables")
    if tables is None:
        return None
    specs = plan(settings["bots"], [(preset, int(players)) for preset, players in tables],
                 int(settings["games"]), int(settings["seed"]))
    return {s.key for s in specs}


# -------------------------------------------------------------------------------- the deals


def make_deal(rules: Rules, seed: int) -> Deal:
    """The deal ``new_round(rules, seed)`` plays, as an explicit ``Deal``: the cards as dealt
    (before bonus cards are resolved), the stock top first, and the dealer.

    >>> from gostop.engine import Rules, new_round
    >>> rules = Rules.preset("standard", 2)
    >>> new_round(rules, 11, deal=make_deal(rules, 11))[0] == new_round(rules, 11)[0]
    True
    """
    state, events = new_round(rules, seed)
    last = max(i for i, e in enumerate(events) if isinstance(e, Dealt))
    dealt = events[last]
    assert isinstance(dealt, Dealt)
    # Every bonus card resolved at the deal was replaced by the top card of the stock, in order.
    drawn = tuple(e.replacement for e in events[last:] if isinstance(e, BonusCaptured) and e.replacement >= 0)
    return Deal(hands=dealt.hands, floor=dealt.floor, stock=drawn + state.stock, dealer=dealt.dealer)


def load_results(path: Path) -> list[dict[str, Any]]:
    """The records of a results file; a record cut off by a kill (no final newline) is dropped
    from the file, so that appending continues on a clean line."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with path.open("r+b") as f:
            f.truncate(end)
        data = data[:end]
    out = []
    for line in data.decode().splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out
