"""``gostop ladder``: tournament games accumulate in one ratings store, each game
once (a resumed run, folders recorded or merged twice), keyed by what each bot is (a changed bot is
a new entry); SQLite and Redis (a real redis-server, and a Cluster) give the same leaderboard; the
shards of a tournament Job merge into one report and one ladder; the chart of ratings over time is
written and the command's output fits 100 columns."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gostop.bots import make_bot, parse_spec, schedule
from gostop.client import AsyncGostopClient
from gostop.engine import Rules, apply, legal_actions, new_round, view
from gostop.tools import ladder
from gostop.tools import tournament as t
from testkit.redis_server import RedisClusterServers, RedisSentinelServers, RedisServer, free_port
from testkit.servers import OPERATOR_KEY, ROOT, config, running_server

# Not in make check: whole tournaments and their ladders.
pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"
TABLES = [("standard", 2), ("standard", 3)]
BOTS = {"random": "random", "greedy": "greedy", "mcts:cpu_millis=40": "greedy"}
"""The bots of the engine-played folders: the name in the results -> the built-in bot that plays it."""


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / t.RESULTS).read_text().splitlines()]


def columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in line)


def identity(name: str) -> ladder.Identity:
    """A made-up identity for a bot name that need not be importable."""
    target, options = parse_spec(name)
    return ladder.Identity(target, tuple(sorted(options.items())), "gostop 0.1.0",
                           hashlib.sha256(name.encode()).hexdigest())


def engine_folder(out: Path, seed: int, deals: int = 3, bots: dict[str, str] | None = None, start: float = 1.8e9,
                  legacy: bool = False) -> Path:
    """A tournament folder as ``gostop tournament`` leaves it (``results.jsonl``, ``tournament.json``,
    ``bots.json``), of games the engine plays (fast): each bot of ``bots`` played by the built-in bot
    it maps to. ``legacy``: as a run of before the ladder left it (no run id, entries or end times)."""
    bots = bots or BOTS
    out.mkdir(parents=True)
    run_id = f"run-{seed}"
    identities = {name: identity(name) for name in bots}
    lines = []
    for n, spec in enumerate(t.plan(list(bots), TABLES, deals, seed)):
        rules = Rules.preset(spec.preset, spec.players)
        state, _ = new_round(rules, spec.deal_seed)
        players = [make_bot(bots[name], seed=schedule.derive_seed(spec.deal_seed, spec.rotation, seat))
                   for seat, name in enumerate(spec.seats)]
        while not state.over:
            seat = state.to_move
            state, _ = apply(state, players[seat].choose(view(state, seat), legal_actions(state)), seat)
        settlement = state.settlement
        assert settlement is not None
        record: dict[str, Any] = {
            "key": spec.key, "matchup": spec.matchup, "preset": spec.preset, "players": spec.players,
            "lineup": list(spec.lineup), "deal_index": spec.deal_index, "deal_seed": spec.deal_seed,
            "rotation": spec.rotation, "seats": list(spec.seats), "outcome": settlement.outcome,
            "winner": settlement.winner, "points": list(settlement.points), "decisions": [1] * spec.players,
            "decide_ms": [0.1] * spec.players,
        }
        if not legacy:
            record.update(run_id=run_id, bot_ids=[identities[b].id for b in spec.seats], ended_at=start + 60 * n)
        lines.append(json.dumps(record, ensure_ascii=False))
    (out / t.RESULTS).write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings: dict[str, Any] = {"bots": list(bots), "presets": ["standard"], "players": [2, 3], "games": deals,
                                "seed": seed, "mcts_millis": None, "tables": [list(x) for x in TABLES]}
    if not legacy:
        settings["run_id"] = run_id
        ladder.save_identities(out, identities.values())
    (out / t.SETTINGS_JSON).write_text(json.dumps(settings), encoding="utf-8")
    return out


def games_of(folder: Path) -> int:
    return len(records(folder))


# ------------------------------------------------------------------------------- identities


def test_what_a_bot_is_names_its_entry() -> None:
    """Options (the spec's, and --mcts-millis for mcts) and code make the entry; equal bots, one entry."""
    mcts = ladder.bot_identity("mcts:cpu_millis=50")
    assert mcts == ladder.bot_identity("mcts", {"cpu_millis": 50})
    assert mcts.id != ladder.bot_identity("mcts:cpu_millis=60").id
    assert mcts.id != ladder.bot_identity("mcts").id
    greedy = ladder.bot_identity("greedy")
    assert greedy.version.startswith("gostop ") and len(greedy.source) == 64
    assert greedy.source != ladder.bot_identity("random").source
    remote = ladder.bot_identity("remote:ts:style=random")
    assert (remote.name, remote.options, remote.source, remote.code) == ("remote:ts", (("style", "random"),), "",
                                                                         "remote")
    assert ladder.Identity.from_json(json.loads(json.dumps(mcts.to_json()))) == mcts


def test_the_source_hash_covers_the_modules_a_bot_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin package: changing a module its bot uses makes a new entry; one it does not use, not."""
    package = tmp_path / "ladder_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("WEIGHT = 1\n")
    (package / "unused.py").write_text("X = 1\n")
    (package / "bot.py").write_text("from gostop.bots import GreedyBot\nfrom ladder_pkg import helper\n\n\n"
                                    "class Bot(GreedyBot):\n    weight = helper.WEIGHT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = ladder.bot_identity("ladder_pkg.bot:Bot")
    (package / "unused.py").write_text("X = 2\n")
    assert ladder.bot_identity("ladder_pkg.bot:Bot") == before
    (package / "helper.py").write_text("WEIGHT = 2\n")
    after = ladder.bot_identity("ladder_pkg.bot:Bot")
    assert after.id != before.id and after.name == before.name == "ladder_pkg.bot:Bot"
    for name in [m for m in sys.modules if m == "ladder_pkg" or m.startswith("ladder_pkg.")]:
        del sys.modules[name]


# --------------------------------------------------------------------------- once per game


async def test_a_resumed_run_is_counted_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    options = t.Options(bots=("random", "greedy"), presets=("standard",), players=(2,), games=3, out=out,
                        parallel=3, seed=4)
    store = ladder.open_store(str(tmp_path / "ladder.sqlite3"))
    async with running_server(config()) as api, AsyncGostopClient(
            f"127.0.0.1:{api.port}", operator_key=OPERATOR_KEY) as client:
        first = await t.run_tournament(dataclasses.replace(options, max_games=2), progress=False, client=client)
        assert first.played == 2
        assert ladder.record(store, [ladder.read_folder(out)]) == 2
        second = await t.run_tournament(options, progress=False, client=client)
    assert (second.skipped, second.played) == (2, 4)
    results = records(out)
    settings = json.loads((out / t.SETTINGS_JSON).read_text())
    assert {r["run_id"] for r in results} == {settings["run_id"]}  # the resumed run kept its id
    known = ladder.read_identities(out)
    assert {i for r in results for i in r["bot_ids"]} == set(known)
    assert sorted(known[i].name for i in known) == ["greedy", "random"]
    # The resumed run's new games, then nothing more however often the folder is recorded.
    assert ladder.record(store, [ladder.read_folder(out)]) == 4
    assert ladder.record(store, [ladder.read_folder(out), ladder.read_folder(out)]) == 0
    (board,) = ladder.load_boards(store)
    assert (board.preset, board.players, board.games, board.runs) == ("standard", 2, 6, 1)
    assert sorted((s.entry.name, s.games) for s in board.standings) == [("greedy", 6), ("random", 6)]
    assert sum(s.wins for s in board.standings) == sum(1 for r in results if r["winner"] >= 0)
    store.close()


def test_merged_shards_make_one_report_and_one_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The tournament Job's shards (other seeds, folders shard-<i>; one of a run of before the
    ladder) merge into one report and one ladder, and merging them again adds nothing."""
    results = tmp_path / "results"
    shards = [engine_folder(results / "shard-0", seed=70), engine_folder(results / "shard-1", seed=71),
              engine_folder(results / "shard-2", seed=72, legacy=True)]
    total = sum(games_of(s) for s in shards)
    db = tmp_path / "ladder.sqlite3"
    assert ladder.main(["--ladder", str(db), "--merge", *map(str, shards)]) == 0
    said = capsys.readouterr().out
    assert f"{total:,} new games recorded in the ladder" in said
    merged = results / "merged"  # the default: beside the shards
    report = json.loads((merged / t.REPORT_JSON).read_text())
    assert report["games"] == report["planned"] == report["done"] == total == games_of(merged)
    assert (merged / t.REPORT_PNG).read_bytes()[:8] == PNG
    groups = {(g["preset"], g["players"]): g for g in report["groups"]}
    for key, group in groups.items():  # the merged report adds up the shards' own reports
        own = [g for shard in shards for g in t.build_report(t.load_results(shard / t.RESULTS))["groups"]
               if (g["preset"], g["players"]) == key]
        assert group["games"] == sum(g["games"] for g in own)
        for entry in group["bots"]:
            assert entry["wins"] == sum(e["wins"] for g in own for e in g["bots"] if e["bot"] == entry["bot"])
    store = ladder.open_store(str(db))
    boards = ladder.load_boards(store)
    store.close()
    assert {(b.preset, b.players): (b.games, b.runs) for b in boards} == {
        key: (g["games"], 3) for key, g in groups.items()}
    # The same shards again, and the merged folder itself: nothing new.
    assert ladder.main(["--ladder", str(db), "--merge", *map(str, shards)]) == 0
    assert ladder.main(["--ladder", str(db), "--merge", str(merged), "--out", str(tmp_path / "again")]) == 0
    said = capsys.readouterr().out
    assert said.count("\n0 new games recorded in the ladder") == 2
    store = ladder.open_store(str(db))
    assert ladder.load_boards(store) == boards
    store.close()
    # A run of before the ladder, resumed, keeps the run id its games were recorded under.
    assert ladder.run_id_of(shards[2]) == ladder.read_folder(shards[2]).run_id == records(merged)[-1]["run_id"]
    assert ladder.run_id_of(shards[0]) == "run-70"
    # The legacy shard's bots are entries of unknown code, apart from the same bots' recorded ones.
    legacy = {s.entry.spec: s.entry.code for b in boards for s in b.standings if s.entry.code == "?"}
    assert set(legacy) == set(BOTS)
    assert ladder.main(["--ladder", str(db), "--merge", str(shards[0]), "--out", str(shards[0])]) == 2


# ---------------------------------------------------------------------------- changed bots


PROBE = '''"""A bot of the ladder's tests: greedy under another name (version {version})."""

from gostop.bots import GreedyBot


class Bot(GreedyBot):
    version = {version}
'''


def test_a_changed_bot_is_a_new_entry(tmp_path: Path) -> None:
    """``gostop tournament`` records into the ladder ($GOSTOP_LADDER); the plugin bot's module is
    edited and the run resumed with more deals: the new deal's games are a new entry's."""
    (tmp_path / "ladder_probe.py").write_text(PROBE.format(version=1))
    db = tmp_path / "ladder.sqlite3"
    env = {**os.environ, "GOSTOP_LADDER": str(db)}
    command = [sys.executable, "-m", "gostop", "tournament", "--bots", "greedy,ladder_probe:Bot", "--out", "run",
               "--parallel", "2", "--no-progress", "--seed", "9"]
    first = subprocess.run([*command, "--games", "1"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=90)
    assert first.returncode == 0, first.stderr
    assert f"ladder: 2 new games recorded in {db}" in " ".join(first.stderr.split())
    (tmp_path / "ladder_probe.py").write_text(PROBE.format(version=2))
    second = subprocess.run([*command, "--games", "2"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=90)
    assert second.returncode == 0, second.stderr
    assert "2 games played, 2 already done" in second.stdout
    assert "ladder: 2 new games recorded" in " ".join(second.stderr.split())
    known = ladder.read_identities(tmp_path / "run")
    assert sorted(i.name for i in known.values()) == ["greedy", "ladder_probe:Bot", "ladder_probe:Bot"]
    store = ladder.open_store(str(db))
    (board,) = ladder.load_boards(store)
    store.close()
    entries = sorted((s.entry.name, s.games) for s in board.standings)
    assert entries == [("greedy", 4), ("ladder_probe:Bot", 2), ("ladder_probe:Bot", 2)]
    probes = {s.entry.code for s in board.standings if s.entry.name == "ladder_probe:Bot"}
    assert len(probes) == 2 and all(re.fullmatch(r"[0-9a-f]{7}", code) for code in probes)

    # A ladder that cannot be written is said, and the command still succeeds.
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    report = subprocess.run([sys.executable, "-m", "gostop", "tournament", "--report-only", "--out", "run",
                             "--ladder", unreachable], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=60)
    assert report.returncode == 0 and "ladder: could not record the games" in " ".join(report.stderr.split())


# ------------------------------------------------------------------------------ the stores


@pytest.fixture(params=["redis", "redis+sentinel", "redis+cluster"])
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A real Redis: one redis-server, a master behind a Sentinel (a deployment's GOSTOP_REDIS_URL
    may be either, and the Helm chart's tournament Job records into it), or a Cluster of three."""
    servers: RedisServer | RedisSentinelServers | RedisClusterServers
    servers = {"redis": RedisServer, "redis+sentinel": RedisSentinelServers,
               "redis+cluster": RedisClusterServers}[request.param]()
    with servers:
        yield servers.url


def test_sqlite_and_redis_give_the_same_leaderboard(tmp_path: Path, redis_url: str) -> None:
    folders = [ladder.read_folder(engine_folder(tmp_path / f"run-{i}", seed=80 + i, legacy=i == 2))
               for i in range(3)]
    total = sum(len(f.records) for f in folders)
    sqlite = ladder.open_store(str(tmp_path / "ladder.sqlite3"))
    redis = ladder.open_store(redis_url)
    assert isinstance(redis, ladder.RedisStore), "a Redis URL, not the name of a SQLite file"
    try:
        assert ladder.record(sqlite, folders) == total
        assert ladder.record(redis, reversed(folders)) == total  # another order of recording
        assert ladder.record(redis, folders) == 0
        assert sqlite.identities() == redis.identities()
        from_sqlite, from_redis = ladder.load_boards(sqlite), ladder.load_boards(redis)
    finally:
        sqlite.close()
        redis.close()
    assert sum(b.games for b in from_sqlite) == total
    assert from_sqlite == from_redis
    assert ladder.format_ladder(from_sqlite, "L") == ladder.format_ladder(from_redis, "L")


# ------------------------------------------------------------------------ the chart and text


def test_the_png_of_ratings_over_time_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = [engine_folder(tmp_path / "a", seed=1), engine_folder(tmp_path / "b", seed=2, start=1.9e9)]
    png = tmp_path / "charts" / "ladder.png"
    db = tmp_path / "ladder.sqlite3"
    assert ladder.main(["--ladder", str(db), "--merge", *map(str, folders), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG
    assert f"ratings over time: {png}" in " ".join(capsys.readouterr().out.split())  # wrapped at WIDTH
    store = ladder.open_store(str(db))
    boards = ladder.load_boards(store)
    store.close()
    for board in boards:  # a point per game of each entry, in time order
        for standing in board.standings:
            times = [when for when, _, _ in board.history[standing.entry.id]]
            assert len(times) == standing.games  # one seat per game: no bot plays itself here
            assert times == sorted(times)
    labels = ladder.plot_ladder(boards, tmp_path / "again.png")
    assert labels == [f"{s.entry.spec} ({s.entry.code})" for b in boards for s in b.standings]
    assert len(labels) == 2 * len(BOTS)


def test_the_command_output_fits_100_columns(tmp_path: Path) -> None:
    """``gostop ladder --merge``: the merged report and the leaderboard, with long specs and Hangul."""
    names = {"mcts:cpu_millis=150,infer=false": "greedy", "my_package.strategies:CautiousBot:risk=0.25": "random",
             "고스톱_봇들.전략:고수봇:깊이=3": "greedy", "greedy": "greedy"}
    folder = engine_folder(tmp_path / "run", seed=5, deals=2, bots=names)
    db = tmp_path / "ladder.sqlite3"
    done = subprocess.run([sys.executable, "-m", "gostop", "ladder", "--ladder", str(db), "--merge", str(folder),
                           "--png", str(tmp_path / "ladder.png")], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for line in text.splitlines():
        assert columns(line) <= 100, f"{columns(line)} columns: {line!r}"
    board = text[text.index("\nladder "):]
    for name in names:  # whole, never cut, once per table
        spec = identity(name).spec
        assert len(re.findall(rf"^ +\d+ {re.escape(spec)}( |$)", board, re.MULTILINE)) == 2, spec
    # Shown again, the ladder is the same (and needs no --merge).
    again = subprocess.run([sys.executable, "-m", "gostop", "ladder", "--ladder", str(db)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == board.lstrip("\n").split("\nratings over time")[0] + "\n"
