"""The benchmarks run: a short ``bench.service`` window against a real server process, with every
game verified against its local mirror.

Regression: since the service deals fairly (a plain caller's seed only mixes into the server's),
the load generator's mirrors disagreed with the server and ``make bench`` stopped at its first
SubmitAction; it now creates its games with an operator key, whose seed is dealt as given.
No figure is checked here (``make bench`` measures); only that the run completes and verifies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Not in make check: the benchmarks, each a short window.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("bound", [False, True], ids=["service", "domain-free"])
def test_the_service_benchmark_verifies_games_of_a_fair_dealing_server(bound: bool) -> None:
    command = [sys.executable, "-m", "bench.service", "--seconds", "0.3", "--warmup", "0.1", "--inflight", "1",
               "--rpcs", "submit", "--store", "memory", *(["--domain-free"] if bound else [])]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "SubmitAction" in result.stdout


def test_the_bot_seat_benchmark_runs_a_short_window() -> None:
    """``make bench``'s bot-seat figures come from a run that works (a short window, two bots)."""
    command = [sys.executable, "-m", "bench.bots", "--seconds", "0.5", "--bots", "random,greedy"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "latency, a person's commit -> the greedy bot's commit: p50" in result.stdout
    assert "nan" not in result.stdout.split("latency", 1)[1].split("\n", 1)[0], "some bot turns were timed"
    for bot in ("random", "greedy"):
        assert f"  {bot} " in result.stdout


def test_the_http_benchmark_runs_a_short_window() -> None:
    """``make bench``'s Connect-vs-gRPC figures come from a run that works (short windows, one level)."""
    command = [sys.executable, "-m", "bench.http", "--seconds", "0.4", "--warmup", "0.1", "--inflight", "2",
               "--pairs", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("2 "))
    assert "nan" not in row and " 0 " not in row.split()[1:4], row


@pytest.mark.skipif(shutil.which("go") is None, reason="the connected-players generator is built with go")
def test_the_connected_players_benchmark_loses_nothing(tmp_path: Path) -> None:
    """Twenty players holding their streams on one worker: every seat's stream carries every version
    once and in order, no call fails, and the players do play."""
    out = tmp_path / "players.json"
    command = [sys.executable, "-m", "bench.players", "--players", "20", "--workers", "1", "--seconds", "8",
               "--warmup", "2", "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run = json.loads(out.read_text())["rows"][0]["generator"]
    assert run["players"] == 20 and run["connect_players"] == 5, run
    assert (run["lost"], run["duplicated"], run["error_count"]) == (0, 0, 0), run
    assert run["actions"] > 0 and run["fanout"]["count"] > 0, run
