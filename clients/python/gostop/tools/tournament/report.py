"""The report of a results file: per-bot rates with intervals, openskill ratings, head-to-head
rows; as JSON, CSV, a terminal table and a chart.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import unicodedata
import warnings
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gostop.bots.arena import wilson as wilson

from .plan import REPORT_CSV, REPORT_JSON, REPORT_PNG, RESULTS, SETTINGS_JSON, load_results, planned_keys
from .stats import clustered_mean

WIDTH: Final = 100
"""Terminal columns the printed report fits in (wide characters, such as Hangul, count two)."""

HANGUL_FONTS: Final = ("Noto Sans CJK KR", "Noto Sans KR", "NanumGothic", "Malgun Gothic", "Apple SD Gothic Neo")
"""Fonts the chart falls back to for Korean bot names, the first installed one."""

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


def ranked(entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A table's bots in the order of the report: best rating (openskill ordinal) first, then by
    name. The terminal table, ``report.json`` and the chart all show the bots in this order."""
    return sorted(entries, key=lambda e: (-(e["ordinal"] if e["ordinal"] is not None else -math.inf), e["bot"]))


def build_report(records: Sequence[Mapping[str, Any]], plan_keys: Collection[str] | None = None) -> dict[str, Any]:
    """The report of a set of results (see docs/tournaments.md for each figure). ``plan_keys``, the
    keys of every game the tournament plans, tells how many of them are done (``planned`` and
    ``done``; None when unknown)."""
    # A game is its run's and its key: the same key in two runs (folders merged by gostop ladder) is two games.
    unique: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in records:
        unique.setdefault((r.get("run_id", ""), r["key"]), r)
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
        groups.append({
            "preset": preset, "players": players, "games": len(rows),
            "deals": len({r["deal_seed"] for r in rows}),
            "outcomes": dict(sorted(_count(r["outcome"] for r in rows).items())),
            "bots": ranked(entries), "head_to_head": _head_to_head(rows) if players == 2 else [],
        })
    planned = done = None
    if plan_keys is not None:
        planned, done = len(plan_keys), sum(1 for _, key in unique if key in plan_keys)
    return {"results": RESULTS, "games": len(unique), "planned": planned, "done": done, "groups": groups}


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
    return "-" if x is None else f"{100 * x:.1f}"


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2f}"


def display_width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters (Hangul) take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def wrap(text: str, width: int = WIDTH, indent: str = "  ", first: str = "") -> list[str]:
    """``text`` on lines of at most ``width`` columns, broken at spaces: the first line starts with
    ``first``, the others with ``indent`` (a word longer than a line stays whole)."""
    lines: list[str] = []
    line = first
    for word in text.split():
        if not line.strip():
            line += word
        elif display_width(f"{line} {word}") > width:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}"
    lines.append(line)
    return lines


_COLUMNS: Final = (  # header, right-aligned
    ("wins", True), ("draws", True), ("losses", True), ("win %", True), ("(95% CI)", False),
    ("pts/round", True), ("(95% CI)", False), ("ordinal", True), ("ms/dec", True),
)


def _figures(wins: int, draws: int, losses: int, rate: float | None, rate_ci: Sequence[float | None],
             mean: float | None, mean_ci: Sequence[float | None]) -> list[str]:
    return [str(wins), str(draws), str(losses), _pct(rate), f"({_pct(rate_ci[0])}-{_pct(rate_ci[1])})",
            _pts(mean), f"({_pts(mean_ci[0])}..{_pts(mean_ci[1])})"]


def _table(sections: Sequence[tuple[str, Sequence[tuple[str, Sequence[str]]]]], width: int) -> list[str]:
    """Rows of figures under one header, in ``width`` columns; each section's caption (if any) on
    the lines before its rows. The name column is as wide as the longest name that fits; a longer
    name gets a line of its own, its figures on the next."""
    rows = [row for _, section in sections for row in section]
    widths = [max(display_width(header), *(display_width(cells[i]) for _, cells in rows if i < len(cells)))
              for i, (header, _) in enumerate(_COLUMNS)]
    room = width - 2 - sum(w + 1 for w in widths)
    name_width = max(3, min(room, max(display_width(name) for name, _ in rows)))

    def line(name: str, cells: Sequence[str]) -> str:
        out = "  " + _pad(name, name_width)
        for (_, right), w, cell in zip(_COLUMNS, widths, cells, strict=False):
            out += " " + _pad(cell, w, right)
        return out.rstrip()

    header = line("bot", [h for h, _ in _COLUMNS])
    lines = [header, "  " + "-" * (display_width(header) - 2)]
    for caption, section in sections:
        if caption:
            lines += wrap(caption, width, indent="    ", first="  ")
        for name, cells in section:
            if display_width(name) > name_width:
                lines += ["  " + name, line("", cells)]
            else:
                lines.append(line(name, cells))
    return lines


def format_report(report: Mapping[str, Any], width: int = WIDTH) -> str:
    """The report for the terminal, in ``width`` columns: the games (and whether the run is
    partial), then per preset and table size the bots (in ``ranked`` order) and the head-to-head
    rows of a 2-player table."""
    planned, done = report.get("planned"), report.get("done")
    if planned is not None and done is not None and done < planned:
        head = (f"{done:,} of {planned:,} games: a partial report, the run stopped before its end "
                "(run the same command again to play the rest)")
    else:
        head = f"{report['games']:,} games"
    lines = wrap(head, width)
    for g in report["groups"]:
        outcomes = ", ".join(f"{k} {v:,}" for k, v in g["outcomes"].items())
        lines += ["", *wrap(f"{g['preset']}, {g['players']} players: {g['games']:,} games on {g['deals']:,} deals "
                            f"({outcomes})", width)]
        bots = [(e["bot"], [
            *_figures(e["wins"], e["draws"], e["losses"], e["win_rate"], e["win_ci"], e["points_mean"],
                      e["points_ci"]),
            "-" if e["ordinal"] is None else f"{e['ordinal']:.2f}",
            "-" if e["decide_ms"] is None else f"{e['decide_ms']:.2f}"]) for e in ranked(g["bots"])]
        duels = [(f"{h['a']} vs {h['b']}", _figures(h["a_wins"], h["draws"], h["b_wins"], h["a_win_rate"],
                                                    h["a_win_ci"], h["a_points_mean"], h["a_points_ci"]))
                 for h in g["head_to_head"]]
        sections: list[tuple[str, Sequence[tuple[str, Sequence[str]]]]] = [("", bots)]
        if duels:
            sections.append(("head to head, the first bot against the second:", duels))
        lines += _table(sections, width)
    return "\n".join(lines)


def plot_report(report: Mapping[str, Any], path: Path) -> list[str]:
    """``report.png``: points per round (95 % CI error bars) and win rate over decided rounds
    (Wilson 95 % CI), one bar per bot and preset/table size, the bots of a table in the order of
    its terminal table (``ranked``); each bot keeps its colour across tables. The x-axis labels,
    as drawn, left to right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

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
        for e in ranked(g["bots"]):
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
    # Bot names may be Korean: a Hangul font where one is installed, else boxes without a warning per glyph.
    installed = {font.name for font in font_manager.fontManager.ttflist}
    families = ["DejaVu Sans", *(name for name in HANGUL_FONTS if name in installed)]
    with plt.rc_context({"font.family": families}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
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
        slant = max((len(name) for name in names), default=0) > 12  # long names: slanted, so that they do not overlap
        for ax in (left, right):
            ax.set_xticks(x)
            ax.set_xticklabels(labels, fontsize=8, rotation=30 if slant else 0, ha="right" if slant else "center")
            ax.grid(axis="y", alpha=0.3)
        planned, done = report.get("planned"), report.get("done")
        partial = planned is not None and done is not None and done < planned
        fig.suptitle(f"gostop tournament: {done:,} of {planned:,} games (partial)" if partial
                     else f"gostop tournament: {report['games']:,} games")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        drawn = [tick.get_text() for tick in left.get_xticklabels()]
        plt.close(fig)
    return drawn


def write_report(out: Path) -> dict[str, Any]:
    """Build the report from ``out/results.jsonl`` and write report.json, report.csv and report.png.
    The settings of the last run (``tournament.json``) say which games it plans, so that the report
    of an interrupted run says how far it got."""
    settings = out / SETTINGS_JSON
    plan_keys = planned_keys(json.loads(settings.read_text())) if settings.exists() else None
    report = build_report(load_results(out / RESULTS), plan_keys)
    save_report(report, out)
    return report


def save_report(report: Mapping[str, Any], out: Path) -> None:
    """Write ``report`` to report.json, report.csv and report.png in ``out``."""
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with (out / REPORT_CSV).open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for row in _csv_rows(report):
            w.writerow(["" if v is None else v for v in row])
    plot_report(report, out / REPORT_PNG)
