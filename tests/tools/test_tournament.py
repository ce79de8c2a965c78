"""``gostop tournament``: a small duplicate-deal tournament through the service (in-process servers),
its results and report, the duplicate deals (checked in the operator's game logs), resuming, the
command line (a separate process with its own in-process server), Ctrl-C in a pseudo-terminal, and
the report's width and bot order."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import json
import math
import os
import pty
import random
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from gostop.bots import BOT_NAMES, make_bot, schedule
from gostop.client import AsyncGostopClient
from gostop.engine import Rules, apply, legal_actions, match_apply, new_match, new_round, view
from gostop.engine.events import Dealt, Redealt
from gostop.tools import tournament as t
from gostop.v1 import game_pb2 as pb
from gostop.wire import convert
from gostop.wire.convert import view_from_pb
from testkit.servers import OPERATOR, OPERATOR_KEY, ROOT, config, replay, running_server

# Not in make check: whole tournaments.
pytestmark = pytest.mark.slow

OTHER = "greedy" if "greedy" in BOT_NAMES else "random"
BOTS = ("random", OTHER)
TABLES = (2, 3)
DEALS = 3
PNG = b"\x89PNG\r\n\x1a\n"


def expected_games(deals: int = DEALS) -> int:
    return sum(len(t.lineups(BOTS, n)) * n * deals for n in TABLES)


def options(out: Path, games: int = DEALS, **more: Any) -> t.Options:
    return t.Options(bots=BOTS, presets=("standard",), players=TABLES, games=games, out=out, parallel=4, seed=7,
                     **more)


def created(server: Any) -> float:
    """Standard games the server created (summed over the numbers of players)."""
    return sum(float(s.value) for family in server.metrics.registry.collect() for s in family.samples
               if s.name == "gostop_games_created_total" and s.labels["preset"] == "standard")


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / t.RESULTS).read_text().splitlines()]


# -------------------------------------------------------------------------------- units


def test_lineups_and_plan() -> None:
    assert t.lineups(("random", "greedy", "mcts"), 3) == [("random", "greedy", "mcts")]
    assert t.lineups(("a", "b", "c"), 2) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert t.lineups(("a",), 2) == [("a", "a")]
    specs = t.plan(("a", "b"), [("standard", 2), ("standard", 3)], 4, seed=1)
    assert len(specs) == 4 * (2 + 2 * 3)
    assert len({s.key for s in specs}) == len(specs)
    for s in specs:  # every lineup of a table plays the same deals
        assert s.deal_seed == schedule.deal_seed(1, s.preset, s.players, s.deal_index)
    for n in (2, 3):  # each bot holds every seat of a deal equally often
        seats: dict[tuple[int, str], int] = defaultdict(int)
        for s in specs:
            if s.players == n and s.deal_index == 0:
                for seat, bot in enumerate(s.seats):
                    seats[seat, bot] += 1
        assert len(set(seats.values())) == 1


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("standard", 3), ("classic", 4), ("arcade", 2)])
def test_make_deal_replays_the_seeded_deal(preset: str, players: int) -> None:
    rules = Rules.preset(preset, players)
    for seed in range(200):
        state, events = new_round(rules, seed)
        replayed, replayed_events = new_round(rules, seed, deal=t.make_deal(rules, seed))
        # The same round, minus the thrown-in deals that came before the seeded one.
        assert replayed == state
        assert replayed_events == [e for e in events if not isinstance(e, Redealt)]


def test_bots_see_the_engine_view() -> None:
    """The bots' views (``gostop.wire.convert.view_from_pb`` of the wire view) are the engine's views."""
    for preset, players in (("standard", 2), ("standard", 3), ("classic", 4), ("arcade", 2)):
        rules = Rules.preset(preset, players)
        for seed in range(4):
            match, _ = new_match(rules, seed, 1)
            rng = random.Random(seed)
            while True:
                for seat in range(-1, players):
                    v = view(match.round, seat)
                    assert view_from_pb(convert.view_to_pb(v, match, "g", 1)) == v
                if match.round.over:
                    break
                match, _ = match_apply(match, rng.choice(legal_actions(match.round)))


def test_statistics() -> None:
    lo, hi = t.wilson(0, 10)
    assert lo == 0.0 and 0.27 < hi < 0.32
    assert t.wilson(0, 0) == (0.0, 1.0)
    mean, lo, hi, clusters = t.clustered_mean([("a", 1.0), ("a", 3.0), ("b", 5.0), ("b", 7.0), ("c", 2.0)])
    assert (mean, clusters) == (3.6, 3) and lo < mean < hi
    assert math.isnan(t.clustered_mean([("a", 1.0), ("a", 2.0)])[1])
    assert abs(t.t975(40) - 2.021) < 0.002


# ---------------------------------------------------------------------- through the service


def play_in_process(rules: Rules, record: dict[str, Any]) -> tuple[int, list[int], int]:
    """A game of the tournament replayed without the service: same deal, same bots, same seeds."""
    state, _ = new_round(rules, record["deal_seed"])
    bots = [make_bot(name, seed=schedule.derive_seed(record["deal_seed"], record["rotation"], seat))
            for seat, name in enumerate(record["seats"])]
    actions = 0
    while not state.over:
        seat = state.to_move
        state, _ = apply(state, bots[seat].choose(view(state, seat), legal_actions(state)), seat)
        actions += 1
    assert state.settlement is not None
    return state.settlement.winner, list(state.settlement.points), actions


def check_report(out: Path, results: list[dict[str, Any]]) -> None:
    """report.json and report.csv say what results.jsonl says; report.png is a PNG."""
    assert (out / t.REPORT_PNG).read_bytes()[:8] == PNG
    report = json.loads((out / t.REPORT_JSON).read_text())
    assert report["games"] == len(results)
    rows = list(csv.DictReader((out / t.REPORT_CSV).open()))
    assert len(rows) == sum(len(g["bots"]) for g in report["groups"])
    csv_by = {(r["preset"], int(r["players"]), r["bot"]): r for r in rows}
    for group in report["groups"]:
        games = [r for r in results if r["preset"] == group["preset"] and r["players"] == group["players"]]
        assert group["games"] == len(games)
        for entry in group["bots"]:
            bot = entry["bot"]
            plays = [(r, s) for r in games for s, name in enumerate(r["seats"]) if name == bot]
            wins = sum(1 for r, s in plays if r["winner"] == s)
            draws = sum(1 for r, _ in plays if r["winner"] < 0)
            assert (entry["rounds"], entry["wins"], entry["draws"]) == (len(plays), wins, draws)
            assert entry["losses"] == len(plays) - wins - draws
            points = sum(r["points"][s] for r, s in plays)
            assert entry["points_mean"] == pytest.approx(points / len(plays), abs=1e-5)
            assert entry["win_ci"][0] <= (entry["win_rate"] or 0.0) <= entry["win_ci"][1]
            assert entry["points_ci"][0] <= entry["points_mean"] <= entry["points_ci"][1]
            assert entry["sigma"] > 0 and entry["ordinal"] == pytest.approx(entry["mu"] - 3 * entry["sigma"], abs=1e-4)
            row = csv_by[group["preset"], group["players"], bot]
            assert (int(row["rounds"]), int(row["wins"]), int(row["draws"]), int(row["losses"])) == (
                entry["rounds"], entry["wins"], entry["draws"], entry["losses"])
            assert float(row["points_mean"]) == pytest.approx(entry["points_mean"])
            assert float(row["ordinal"]) == pytest.approx(entry["ordinal"])
        if group["players"] == 2:
            (h2h,) = group["head_to_head"]
            a_wins = sum(1 for r in games if r["winner_bot"] == h2h["a"])
            assert (h2h["a"], h2h["b"], h2h["rounds"], h2h["a_wins"]) == (BOTS[0], BOTS[1], len(games), a_wins)


async def test_duplicate_tournament_through_the_service(tmp_path: Path) -> None:
    started = time.monotonic()
    async with running_server(config()) as api:
        assert api.server is not None
        async with AsyncGostopClient(f"127.0.0.1:{api.port}", operator_key=OPERATOR_KEY) as client:
            summary = await t.run_tournament(options(tmp_path), progress=False, client=client)
        assert (summary.planned, summary.played, summary.skipped, summary.failed) == (
            expected_games(), expected_games(), 0, 0)
        assert created(api.server) == expected_games() == summary.created
        results = records(tmp_path)
        assert len(results) == expected_games() == len({r["key"] for r in results})
        check_report(tmp_path, results)

        # Duplicate deals: each deal of a table, in every lineup and rotation, is the very same deal.
        by_deal: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        for r in results:
            by_deal[r["players"], r["deal_seed"]].append(r)
        assert len(by_deal) == DEALS * len(TABLES)
        for (players, seed), games in by_deal.items():
            rules = Rules.preset("standard", players)
            dealt = [e for e in new_round(rules, seed)[1] if isinstance(e, Dealt)][-1]
            expected_deal = convert.deal_to_pb(t.make_deal(rules, seed))
            lineups = t.lineups(BOTS, players)
            assert sorted((tuple(r["lineup"]), r["rotation"]) for r in games) == sorted(
                (lineup, k) for lineup in lineups for k in range(players))
            first_events = None
            for r in games:
                assert r["explicit_deal"] and r["seats"] == list(schedule.rotate(r["lineup"], r["rotation"]))
                log = await api.stub.GetGameLog(pb.GetGameLogRequest(game_id=r["game_id"]), metadata=OPERATOR)
                assert log.next_after_version == 0 and log.seed == seed
                assert log.deal == expected_deal
                deal_events = list(log.entries[0].events)
                got = next(e.dealt for e in deal_events if e.HasField("dealt"))
                assert [list(h.cards) for h in got.hands] == [list(h) for h in dealt.hands]
                assert list(got.floor) == list(dealt.floor) and got.dealer == dealt.dealer
                if first_events is None:
                    first_events = deal_events
                assert deal_events == first_events
                # The log replays through the engine to the recorded result.
                match, _ = replay(log, 1)
                settlement = match.round.settlement
                assert settlement is not None
                assert (list(settlement.points), settlement.winner) == (r["points"], r["winner"])
                assert len(log.entries) == r["version"] == r["actions"] + 1
                # Every seat was played with its own token, at the expected version, with a request id.
                assert all(e.request_id == f"s{e.seat}-v{e.version - 1}" for e in log.entries[1:])
                # The bots decided through the API exactly as they do on the engine's own views.
                assert play_in_process(rules, r) == (r["winner"], r["points"], r["actions"])
    assert time.monotonic() - started < 60


async def test_resume_skips_finished_games(tmp_path: Path) -> None:
    async with running_server(config()) as api:
        assert api.server is not None
        async with AsyncGostopClient(f"127.0.0.1:{api.port}", operator_key=OPERATOR_KEY) as client:
            # A run stopped early (as if killed) after 5 games, with a record cut off mid-line.
            runs = [await t.run_tournament(options(tmp_path, games=2, max_games=5), progress=False, client=client)]
            assert (runs[0].played, runs[0].skipped) == (5, 0)
            with (tmp_path / t.RESULTS).open("a") as f:
                f.write('{"key": "standard/2p/random+gre')
            # Rerun: the 5 finished games are skipped, the rest of the 2 deals is played.
            runs.append(await t.run_tournament(options(tmp_path, games=2), progress=False, client=client))
            assert (runs[1].skipped, runs[1].played) == (5, expected_games(2) - 5)
            # More deals: only the new ones are played.
            runs.append(await t.run_tournament(options(tmp_path, games=DEALS), progress=False, client=client))
            assert (runs[2].skipped, runs[2].played) == (expected_games(2), expected_games() - expected_games(2))
            # Nothing left: nothing is played.
            runs.append(await t.run_tournament(options(tmp_path, games=DEALS), progress=False, client=client))
            assert (runs[3].skipped, runs[3].played) == (expected_games(), 0)
        assert created(api.server) == sum(r.created for r in runs) == expected_games()
        results = records(tmp_path)
        assert len(results) == len({r["key"] for r in results}) == expected_games()
        check_report(tmp_path, results)


def test_command_line_with_its_own_server(tmp_path: Path) -> None:
    """``python -m gostop tournament`` (no --server: an in-process server), then --report-only."""
    out = tmp_path / "run"
    command = [sys.executable, "-m", "gostop", "tournament", "--bots", ",".join(BOTS), "--presets", "standard",
               "--players", "2", "--games", "3", "--parallel", "3", "--out", str(out), "--seed", "5"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tournament" in done.stderr and "6/6" in done.stderr  # the progress bar
    assert "head to head" in done.stdout and "6 games played" in done.stdout
    results = records(out)
    assert len(results) == 6
    check_report(out, results)
    rerun = subprocess.run([*command, "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0 and "0 games played, 6 already done" in rerun.stdout
    (out / t.REPORT_PNG).unlink()
    report = subprocess.run([sys.executable, "-m", "gostop", "tournament", "--report-only", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert report.returncode == 0 and report.stdout.startswith("6 games")
    assert (out / t.REPORT_PNG).read_bytes()[:8] == PNG


@pytest.mark.skipif("mcts" not in BOT_NAMES, reason="no mcts bot")
async def test_cpu_heavy_bots_decide_in_the_process_pool(tmp_path: Path) -> None:
    async with running_server(config()) as api, AsyncGostopClient(
            f"127.0.0.1:{api.port}", operator_key=OPERATOR_KEY) as client:
        opts = t.Options(bots=("greedy", "mcts"), presets=("standard",), players=(2,), games=1, out=tmp_path,
                         parallel=2, mcts_millis=5.0, workers=1)
        summary = await t.run_tournament(opts, progress=False, client=client)
    assert (summary.played, summary.failed) == (2, 0)
    for r in records(tmp_path):
        seat = r["seats"].index("mcts")
        assert r["decisions"][seat] > 0 and r["decide_ms"][seat] > 0


async def test_a_stale_version_is_read_again(tmp_path: Path) -> None:
    """When the game moves on between a seat's read and its submit (ABORTED), the seat re-reads and decides
    again; the game still ends normally."""
    async with running_server(config()) as api, AsyncGostopClient(
            f"127.0.0.1:{api.port}", operator_key=OPERATOR_KEY) as client:
        real_submit = client.submit_action
        interfered: list[pb.TurnResult] = []

        async def submit(game: Any, seat: int | None, action: Any, **kwargs: Any) -> pb.TurnResult:
            if not interfered:  # someone else plays this seat's move first, with another request id
                interfered.append(await real_submit(game, seat, action, expected_version=kwargs["expected_version"],
                                                    request_id="interloper"))
            return await real_submit(game, seat, action, **kwargs)

        client.submit_action = submit  # type: ignore[method-assign]
        spec = t.plan(BOTS, [("standard", 2)], 1, seed=3)[0]
        rules = Rules.preset("standard", 2)
        players: list[t.Player] = [t.InlinePlayer(name, seat, {}) for seat, name in enumerate(spec.seats)]
        record = await t.play_game(client, spec, convert.deal_to_pb(t.make_deal(rules, spec.deal_seed)), players)
    assert interfered and record["conflicts"] == 1
    assert record["version"] == record["actions"] + 2  # our actions, the interloper's, and the deal
    assert record["outcome"] in ("stop", "nagari", "instant_win", "instant_loss", "best_score")


# ------------------------------------------------------------------------ Ctrl-C, in a terminal

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOG_LINE = re.compile(r"\[\s*(debug|info|warning|error|critical)\s*\]|\"level\"\s*:", re.IGNORECASE)


def process_table() -> dict[int, tuple[int, str]]:
    """Every process of the machine: pid → (parent pid, state letter), from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # it ended while we looked
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            out[int(entry)] = (int(ppid), state)
    return out


def descendants(pid: int) -> set[int]:
    """The processes started by ``pid``, and theirs."""
    children: dict[int, list[int]] = defaultdict(list)
    for child, (parent, _) in process_table().items():
        children[parent].append(child)
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children[todo.pop()]:
            out.add(child)
            todo.append(child)
    return out


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended
        return b""


def running(pids: set[int]) -> set[int]:
    """The ones of ``pids`` still running (an exited process awaiting its reaper does not run)."""
    table = process_table()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


class TournamentTerminal:
    """``gostop tournament ARGS`` in a pseudo-terminal of 100 columns, as a person starts it: the
    terminal is its controlling terminal, so the interrupt character signals its whole process group."""

    def __init__(self, *args: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the tournament
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
                os.chdir(ROOT)
                os.execve(sys.executable, [sys.executable, "-m", "gostop", "tournament", *args],
                          {**os.environ, "TERM": "xterm", "COLUMNS": "100", "PYTHONUNBUFFERED": "1"})
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.raw = b""
        self.status: int | None = None

    def read(self, seconds: float) -> bool:
        """Read what the program wrote for up to ``seconds``; False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the program closed the terminal
            return False
        self.raw += data
        return bool(data)

    @property
    def text(self) -> str:
        """The output as text: colours and cursor movements left out, lines ended by "\\n"."""
        return ANSI.sub("", self.raw.decode(errors="replace")).replace("\r\n", "\n").replace("\r", "\n")

    def wait(self, deadline: float) -> int:
        """Read to the end of the output; the exit status."""
        while self.read(1.0):
            assert time.monotonic() < deadline, f"no exit; the terminal shows:\n{self.text[-3000:]}"
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            assert time.monotonic() < deadline, "the terminal closed but the program did not exit"
            time.sleep(0.05)

    def kill(self) -> None:
        """After a failure: end the program and every process of its group (its session's)."""
        if self.status is None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.killpg(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)


def saved_games(out: Path) -> int:
    path = out / t.RESULTS
    return path.read_bytes().count(b"\n") if path.exists() else 0


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.skipif("mcts" not in BOT_NAMES, reason="no mcts bot (the process pool is part of the test)")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the processes are found in /proc")
def test_ctrl_c_stops_the_tournament_cleanly_and_a_rerun_resumes(tmp_path: Path) -> None:
    """Ctrl-C printed ~30 lines ending in ``KeyboardInterrupt``, the pool's processes
    their own tracebacks, and the in-process server a log line. Now: exit status 130, a message with the
    games saved, every process of the run gone; ``--report-only`` says the report is partial; the same
    command resumes and completes."""
    out = tmp_path / "run"
    args = ["--bots", "random,mcts", "--mcts-millis", "2", "--workers", "2", "--parallel", "4", "--presets",
            "standard", "--players", "2", "--games", "30", "--seed", "3", "--out", str(out)]
    planned = 30 * 2
    deadline = time.monotonic() + 120
    term = TournamentTerminal(*args)
    try:
        while saved_games(out) < 3:  # every game has an mcts seat: the pool is at work
            assert term.read(0.05), f"the tournament ended early:\n{term.text[-3000:]}"
            assert time.monotonic() < deadline, f"no games saved; the terminal shows:\n{term.text[-3000:]}"
        processes = descendants(term.pid)
        workers = {pid for pid in processes if b"spawn_main" in command_line(pid)}
        assert len(workers) >= 2, processes
        os.write(term.fd, b"\x03")  # the terminal's interrupt character: SIGINT to the foreground group
        status = term.wait(deadline)
    finally:
        term.kill()
    text = term.text
    assert status == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert not LOG_LINE.search(text), text
    message = re.search(r"interrupted: ([\d,]+) of ([\d,]+) games are saved in (\S+); run the same command again "
                        r"to resume", one_line(text))
    assert message, text
    saved, of = (int(message.group(i).replace(",", "")) for i in (1, 2))
    assert Path(message.group(3)) == out / t.RESULTS
    assert 3 <= saved == saved_games(out) < of == planned
    while running(processes):  # the pool's processes (and the resource tracker) end with the run
        assert time.monotonic() < deadline, f"left running: {running(processes)}"
        time.sleep(0.05)
    before = records(out)

    report = subprocess.run([sys.executable, "-m", "gostop", "tournament", "--report-only", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert one_line(report.stdout).startswith(f"{saved} of {planned} games: a partial report")
    assert json.loads((out / t.REPORT_JSON).read_text())["done"] == saved

    rerun = subprocess.run([sys.executable, "-m", "gostop", "tournament", *args, "--no-progress"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{planned - saved} games played, {saved} already done, 0 failed, of {planned}" in one_line(rerun.stdout)
    assert rerun.stdout.startswith(f"{planned} games\n")  # a finished run's report: not partial
    after = records(out)
    assert after[:saved] == before and len({r["key"] for r in after}) == len(after) == planned


# ------------------------------------------------------------------------------- the report's width


def engine_records(names: dict[str, str], tables: list[tuple[str, int]], deals: int) -> list[dict[str, Any]]:
    """Results as the tournament records them, of games played by the engine: each bot of ``names``
    (the name in the report) is played by the built-in bot it maps to."""
    out = []
    for spec in t.plan(list(names), tables, deals, seed=11):
        rules = Rules.preset(spec.preset, spec.players)
        state, _ = new_round(rules, spec.deal_seed)
        bots = [make_bot(names[name], seed=schedule.derive_seed(spec.deal_seed, spec.rotation, seat))
                for seat, name in enumerate(spec.seats)]
        decisions = [0] * spec.players
        while not state.over:
            seat = state.to_move
            state, _ = apply(state, bots[seat].choose(view(state, seat), legal_actions(state)), seat)
            decisions[seat] += 1
        settlement = state.settlement
        assert settlement is not None
        out.append({
            "key": spec.key, "matchup": spec.matchup, "preset": spec.preset, "players": spec.players,
            "lineup": list(spec.lineup), "deal_index": spec.deal_index, "deal_seed": spec.deal_seed,
            "rotation": spec.rotation, "seats": list(spec.seats), "outcome": settlement.outcome,
            "winner": settlement.winner, "points": list(settlement.points), "decisions": decisions,
            "decide_ms": [0.2 * d for d in decisions],
        })
    return out


def columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in line)


def test_the_report_fits_100_columns_and_orders_bots_as_its_chart(tmp_path: Path) -> None:
    """The table was 121 columns wide and a head-to-head line 153 (wider with long
    bot specs), and the chart put the bots in alphabetical order while the table ranked them."""
    names = {  # the longest realistic specs: options, a plugin's module:attribute, Hangul (two columns each)
        "mcts:cpu_millis=150": OTHER, "my_package.strategies:CautiousBot:risk=0.25": "random",
        "고스톱_봇들.전략:고수봇:깊이=3": OTHER, "greedy": OTHER,
    }
    tables = [("standard", 2), ("standard", 3)]
    results = engine_records(names, tables, deals=6)
    plan_keys = {s.key for s in t.plan(list(names), tables, 8, seed=11)}  # an interrupted run of 8 deals
    report = t.build_report(results, plan_keys)
    text = t.format_report(report)
    for line in text.splitlines():
        assert columns(line) <= 100, f"{columns(line)} columns: {line!r}"
    assert text.startswith(f"{len(results)} of {len(plan_keys)} games: a partial report")
    for name in names:  # whole, never cut
        assert re.search(rf"^  {re.escape(name)}( |$)", text, re.MULTILINE)
    assert re.search(r"^  my_package\.strategies:CautiousBot:risk=0\.25 vs 고스톱_봇들\.전략:고수봇:깊이=3$", text,
                     re.MULTILINE)

    # The bots of each table, top to bottom, as the text shows them; and the chart's bars, left to right.
    shown: list[tuple[str, str]] = []
    table = ""
    for line in text.splitlines():
        if re.match(r"standard, \d players:", line):
            table = line.split(":")[0]
        elif line.startswith("  head to head"):
            table = ""
        elif table and line.startswith("  ") and not line.startswith("   ") and not line.startswith("  bot "):
            name = line.split()[0]
            if not name.startswith("-"):
                shown.append((name, table))
    drawn = t.plot_report(report, tmp_path / t.REPORT_PNG)
    bars = [(label.split("\n")[0], "standard, {} players".format(label.split()[-1].rstrip("p"))) for label in drawn]
    assert shown == bars
    assert len(shown) == len(names) * len(tables)
    # The check can fail: the ranking is not the alphabetical order the chart used to follow.
    assert [name for name, _ in shown] != [name for name, _ in sorted(shown, key=lambda b: (b[1], b[0]))]
