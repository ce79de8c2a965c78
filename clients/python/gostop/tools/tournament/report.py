"""The report of a results file: per-bot rates with intervals, openskill ratings, head-to-head
rows; as JSON, CSV, a terminal table and a chart.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gostop.bots.arena import wilson as wilson

from .plan import REPORT_CSV, REPORT_JSON, REPORT_PNG, RESULTS, load_results
from .stats import clustered_mean

# ---------------------------------------------------------------------------------- report


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _ranks(points: Sequence[int]) -> list[int]:
    """Rank 1 for the most points; equal points share a rank."""
    return [1 + sum(1 for q in points if q > p) for p in points]


def _ratings(records: Sequence[Mapping[str, Any]], bots: Sequence[str]) -> dict[str, tuple[float, float, float]]:
    """openskill Plackett-Luce ratings: each round's seats ranked by points; a bot holding several
    seats of a round gets the mean of their updates. ``bot → (mu, sigma, ordinal)``."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {b: model.rating(name=b) for b in bots}
    for r in records:
        seats: list[str] = r["seats"]
        teams = [[model.rating(mu=ratings[b].mu, sigma=ratings[b].sigma, name=b)] for b in seats]
        new = model.rate(teams, ranks=[float(x) for x in _ranks(r["points"])])
        updates: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for b, team in zip(seats, new, strict=True):
            updates[b].append((team[0].mu, team[0].sigma))
        for b, ups in updates.items():
            ratings[b] = model.rating(mu=statistics.fmean(u[0] for u in ups),
                                      sigma=statistics.fmean(u[1] for u in ups), name=b)
    return {b: (r.mu, r.sigma, r.ordinal()) for b, r in ratings.items()}


def _order(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record["deal_index"], record["matchup"], record["rotation"])


def build_report(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report of a set of results (see docs/tournaments.md for each figure)."""
    unique: dict[str, Mapping[str, Any]] = {}
    for r in records:
        unique.setdefault(r["key"], r)
    by_group: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for r in sorted(unique.values(), key=_order):
        by_group[r["preset"], r["players"]].append(r)
    groups = []
    for (preset, players), rows in sorted(by_group.items()):
        bots = sorted({b for r in rows for b in r["seats"]})
        ratings = _ratings(rows, bots)
        entries = []
        for bot in bots:
            wins = draws = losses = decisions = 0
            ms = 0.0
            points: list[tuple[Any, float]] = []
            for r in rows:
                for seat, name in enumerate(r["seats"]):
                    if name != bot:
                        continue
                    if r["winner"] < 0:
                        draws += 1
                    elif r["winner"] == seat:
                        wins += 1
                    else:
                        losses += 1
                    points.append((r["deal_seed"], float(r["points"][seat])))
                    decisions += r["decisions"][seat]
                    ms += r["decide_ms"][seat]
            mean, lo, hi, _ = clustered_mean(points)
            wlo, whi = wilson(wins, wins + losses)
            mu, sigma, ordinal = ratings[bot]
            entries.append({
                "bot": bot, "rounds": wins + draws + losses, "wins": wins, "draws": draws, "losses": losses,
                "win_rate": _num(wins / (wins + losses)) if wins + losses else None,
                "win_ci": [_num(wlo), _num(whi)], "points_mean": _num(mean), "points_ci": [_num(lo), _num(hi)],
                "mu": _num(mu), "sigma": _num(sigma), "ordinal": _num(ordinal),
                "decide_ms": _num(ms / decisions) if decisions else None,
            })
        entries.sort(key=lambda e: -(e["ordinal"] or 0.0))
        groups.append({
            "preset": preset, "players": players, "games": len(rows),
            "deals": len({r["deal_seed"] for r in rows}),
            "outcomes": dict(sorted(_count(r["outcome"] for r in rows).items())),
            "bots": entries, "head_to_head": _head_to_head(rows) if players == 2 else [],
        })
    return {"results": RESULTS, "games": len(unique), "groups": groups}


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return dict(out)


def _head_to_head(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each 2-player lineup of two different bots, from the first bot's side."""
    by_lineup: dict[tuple[str, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        lineup = tuple(r["lineup"])
        if len(set(lineup)) == 2:
            by_lineup[lineup].append(r)
    out = []
    for (a, b), games in sorted(by_lineup.items()):
        a_wins = sum(1 for r in games if r["winner"] >= 0 and r["seats"][r["winner"]] == a)
        b_wins = sum(1 for r in games if r["winner"] >= 0 and r["seats"][r["winner"]] == b)
        draws = len(games) - a_wins - b_wins
        lo, hi = wilson(a_wins, a_wins + b_wins)
        mean, plo, phi, _ = clustered_mean((r["deal_seed"], float(r["points"][r["seats"].index(a)])) for r in games)
        out.append({
            "a": a, "b": b, "rounds": len(games), "a_wins": a_wins, "b_wins": b_wins, "draws": draws,
            "a_win_rate": _num(a_wins / (a_wins + b_wins)) if a_wins + b_wins else None,
            "a_win_ci": [_num(lo), _num(hi)], "a_points_mean": _num(mean), "a_points_ci": [_num(plo), _num(phi)],
        })
    return out


CSV_COLUMNS: Final = ("preset", "players", "bot", "rounds", "wins", "draws", "losses", "win_rate", "win_low",
                      "win_high", "points_mean", "points_low", "points_high", "mu", "sigma", "ordinal",
                      "decide_ms")


def _csv_rows(report: Mapping[str, Any]) -> Iterator[list[Any]]:
    for g in report["groups"]:
        for e in g["bots"]:
            yield [g["preset"], g["players"], e["bot"], e["rounds"], e["wins"], e["draws"], e["losses"],
                   e["win_rate"], e["win_ci"][0], e["win_ci"][1], e["points_mean"], e["points_ci"][0],
                   e["points_ci"][1], e["mu"], e["sigma"], e["ordinal"], e["decide_ms"]]


def _pct(x: float | None) -> str:
    return "  -  " if x is None else f"{100 * x:5.1f}"


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2f}"


def format_report(report: Mapping[str, Any]) -> str:
    """The terminal tables."""
    lines = [f"{report['games']} games"]
    for g in report["groups"]:
        outcomes = ", ".join(f"{k} {v}" for k, v in g["outcomes"].items())
        lines += ["", f"{g['preset']}, {g['players']} players: {g['games']} games on {g['deals']} deals ({outcomes})"]
        header = (f"  {'bot':<10} {'rounds':>6} {'wins':>6} {'draws':>6} {'losses':>6}  {'win %':>5} {'(95% CI)':<13}"
                  f" {'pts/round':>9} {'(95% CI)':<19} {'mu':>6} {'sigma':>6} {'ordinal':>7} {'ms/dec':>7}")
        lines += [header, "  " + "-" * (len(header) - 2)]
        for e in g["bots"]:
            ci = f"({_pct(e['win_ci'][0]).strip()}-{_pct(e['win_ci'][1]).strip()})"
            pci = f"({_pts(e['points_ci'][0])}..{_pts(e['points_ci'][1])})"
            ms = "-" if e["decide_ms"] is None else f"{e['decide_ms']:.2f}"
            lines.append(
                f"  {e['bot']:<10} {e['rounds']:>6} {e['wins']:>6} {e['draws']:>6} {e['losses']:>6}  "
                f"{_pct(e['win_rate'])} {ci:<13} {_pts(e['points_mean']):>9} {pci:<19} {e['mu']:>6.2f} "
                f"{e['sigma']:>6.3f} {e['ordinal']:>7.2f} {ms:>7}")
        for h in g["head_to_head"]:
            ci = f"{_pct(h['a_win_ci'][0]).strip()}-{_pct(h['a_win_ci'][1]).strip()}"
            lines.append(
                f"  head to head {h['a']} vs {h['b']}: {h['a_wins']}-{h['b_wins']}, {h['draws']} draws; "
                f"{h['a']} wins {_pct(h['a_win_rate']).strip()}% of decided rounds (95% CI {ci}), "
                f"{_pts(h['a_points_mean'])} points per round "
                f"(95% CI {_pts(h['a_points_ci'][0])}..{_pts(h['a_points_ci'][1])})")
    return "\n".join(lines)


def plot_report(report: Mapping[str, Any], path: Path) -> None:
    """``report.png``: points per round (95 % CI error bars) and win rate over decided rounds
    (Wilson 95 % CI), one bar per bot and preset/table size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels: list[str] = []
    means: list[float] = []
    perr: list[list[float]] = [[], []]
    rates: list[float] = []
    werr: list[list[float]] = [[], []]
    colors: list[Any] = []
    chance: list[float] = []
    palette = plt.get_cmap("tab10")
    names = sorted({e["bot"] for g in report["groups"] for e in g["bots"]})
    for g in report["groups"]:
        for e in sorted(g["bots"], key=lambda e: names.index(e["bot"])):
            labels.append(f"{e['bot']}\n{g['preset']} {g['players']}p")
            colors.append(palette(names.index(e["bot"]) % 10))
            mean = e["points_mean"] if e["points_mean"] is not None else 0.0
            lo, hi = e["points_ci"]
            means.append(mean)
            perr[0].append(mean - lo if lo is not None else 0.0)
            perr[1].append(hi - mean if hi is not None else 0.0)
            rate = e["win_rate"] if e["win_rate"] is not None else 0.0
            rates.append(100 * rate)
            werr[0].append(100 * (rate - e["win_ci"][0]))
            werr[1].append(100 * (e["win_ci"][1] - rate))
            chance.append(100 / g["players"])
    width = max(6.0, 1.1 * len(labels) + 2)
    fig, (left, right) = plt.subplots(1, 2, figsize=(2 * width, 4.8))
    x = list(range(len(labels)))
    left.bar(x, means, yerr=perr, color=colors, capsize=4, ecolor="dimgray")
    left.axhline(0, color="black", linewidth=0.8)
    left.set_ylabel("points per round")
    left.set_title("Points per round (95% CI, clustered by deal)")
    right.bar(x, rates, yerr=werr, color=colors, capsize=4, ecolor="dimgray")
    right.hlines(chance, [i - 0.45 for i in x], [i + 0.45 for i in x], colors="red", linestyles="dashed",
                 label="1 / players", zorder=3)
    right.set_ylim(0, 100)
    right.set_ylabel("win rate over decided rounds (%)")
    right.set_title("Win rate (Wilson 95% CI)")
    right.legend(loc="upper right")
    for ax in (left, right):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"gostop tournament: {report['games']} games")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: Path) -> dict[str, Any]:
    """Build the report from ``out/results.jsonl`` and write report.json, report.csv and report.png."""
    report = build_report(load_results(out / RESULTS))
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with (out / REPORT_CSV).open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for row in _csv_rows(report):
            w.writerow(["" if v is None else v for v in row])
    plot_report(report, out / REPORT_PNG)
    return report
