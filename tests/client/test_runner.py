"""The bot runner (``gostop.client.runner``): bots play every seat of complete matches of every preset
through the service without an illegal action; runners share a table (one per seat, waiting by
``WatchGame`` or by polling); ``gostop bot``; the documented example bot
(``clients/python/examples/my_bot.py``)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from gostop.bots import make_bot
from gostop.bots.base import Bot
from gostop.client import Game, GostopClient
from gostop.client.runner import BotError, RunReport, SeatRunner, run_seats
from gostop.engine import Action, View
from gostop.service.embedded import EmbeddedServer
from gostop.tools.cli import main as gostop
from testkit.configs import CONFIGS, config_id
from testkit.servers import OPERATOR_KEY, config, replay

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", name="target")
def target_fixture() -> Iterator[str]:
    with EmbeddedServer(config()) as server:
        yield server.target


def _check(client: GostopClient, game: Game, report: RunReport, rounds: int) -> None:
    """The match is finished, every step was a runner's, and the log replays through the engine."""
    assert report.finished and report.match is not None and report.match.finished
    log = client.log(game)
    match, _ = replay(log, rounds)
    assert match.finished and report.version == len(log.entries)
    assert sum(report.decisions.values()) + report.rounds_started + 1 == report.version
    assert all(report.decisions[s] > 0 for s in report.decisions if any(
        e.seat == s for e in log.entries))


@pytest.mark.parametrize("bot", ["random", "greedy"])
@pytest.mark.parametrize("preset_players", CONFIGS, ids=[config_id(c) for c in CONFIGS])
def test_bots_play_every_seat_of_every_preset(target: str, preset_players: tuple[str, int], bot: str) -> None:
    preset, players = preset_players
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game(preset, players, seed=700 + CONFIGS.index(preset_players), rounds=2)
        seats = {seat: (token, make_bot(bot, seed=seat)) for seat, token in game.tokens.items()}
        report = run_seats(client, game, seats)
        _check(client, game, report, 2)
        assert report.rounds_started == 1 and report.stale == 0


@pytest.mark.parametrize("watch", [True, False], ids=["watch", "poll"])
def test_one_runner_per_seat_share_a_table(target: str, watch: bool) -> None:
    """Three runners, each with its own client and seat; the game moves only through the API. Only seat 0
    deals next rounds; the others wait for it."""
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", 3, seed=808, rounds=3)
        reports: dict[int, RunReport] = {}
        errors: list[BaseException] = []

        def play(seat: int) -> None:
            try:
                with GostopClient(target) as own:
                    bot = make_bot("greedy" if seat else "random", seed=seat)
                    reports[seat] = SeatRunner(own, game.id, {seat: (game.token(seat), bot)},
                                               start_next_rounds=seat == 0, watch=watch,
                                               poll_interval=0.01).run()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=play, args=(seat,)) for seat in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert all(r.finished for r in reports.values())
        assert reports[0].rounds_started == 2 and reports[1].rounds_started == reports[2].rounds_started == 0
        log = client.log(game)
        assert replay(log, 3)[0].finished
        assert sum(sum(r.decisions.values()) for r in reports.values()) + 2 + 1 == len(log.entries)


class _Cheat:
    name = "cheat"

    def choose(self, view: View, legal: Sequence[Action]) -> Action:
        from gostop.engine import Stop

        return Stop()


def test_an_illegal_choice_is_refused_before_it_is_sent(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", seed=3)
        seats: dict[int, tuple[str, Bot]] = {s: (t, _Cheat()) for s, t in game.tokens.items()}
        with pytest.raises(BotError):
            run_seats(client, game, seats)
        assert client.get_game(game).version == 1


def test_stop_ends_a_waiting_runner(target: str) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", seed=4)
        waiting = 1 - client.get_game(game).to_move  # the other seat is to move: this runner waits
        runner = SeatRunner(client, game, {waiting: (game.token(waiting), make_bot("random"))})
        thread = threading.Thread(target=runner.run)
        thread.start()
        thread.join(0.3)
        assert thread.is_alive()
        runner.stop()
        thread.join(5)
        assert not thread.is_alive() and not runner.report.finished and runner.report.decisions[waiting] == 0


def test_gostop_bot_command(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("classic", 3, seed=12, rounds=2)
        args = ["bot", "--server", target, "--game", game.id, "--bot", "greedy", "--seed", "5"]
        for token in game.tokens.values():
            args += ["--token", token]
        assert gostop(args) == 0
        assert client.get_game(game).match.finished
    out = capsys.readouterr().out
    assert f"plays seat(s) [0, 1, 2] of game {game.id}" in out
    assert "round over" in out and "match finished" in out
    assert gostop(["bot", "--server", target, "--token", "not-a-token"]) == 2
    assert gostop(["bot", "--server", target, "--game", "no-such-game", "--token", game.tokens[0]]) == 1
    assert "WRONG_GAME" in capsys.readouterr().err


def test_a_game_id_beginning_with_a_dash_is_the_value_of_game(target: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A base64url game id begins with ``-`` one time in 64; argparse took it for a flag."""
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", seed=3)
    capsys.readouterr()
    assert gostop(["bot", "--server", target, "--game", "-cQ-4PBnIWFufv3n", "--token", game.tokens[0]]) == 1
    assert "WRONG_GAME" in capsys.readouterr().err


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("my_bot", ROOT / "clients/python/examples/my_bot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_bot_plays_a_game(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    example = _example()
    source = (ROOT / "clients/python/examples/my_bot.py").read_text()
    assert len(source.splitlines()) < 40
    assert f"```python\n{source}```" in (ROOT / "docs/clients.md").read_text()  # the documented example
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        for preset, players in (("standard", 2), ("classic", 4)):
            game = client.create_game(preset, players, seed=99, rounds=2)
            argv = ["--server", target]
            for token in game.tokens.values():
                argv += ["--token", token]
            example.main(argv)
            assert client.get_game(game).match.finished
            assert replay(client.log(game), 2)[0].finished
        # At a table with the greedy bot, seat by seat.
        game = client.create_game("standard", seed=5)
        report = run_seats(client, game, {0: (game.token(0), example.MyBot()),
                                          1: (game.token(1), make_bot("greedy"))})
        _check(client, game, report, 1)
    assert "match finished at version" in capsys.readouterr().out


def test_the_example_bot_prints_a_readable_report_not_a_repr_regression(
        target: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: examples/my_bot.py printed the raw ``RunReport(game_id=..., decisions={...}, ...)``."""
    with GostopClient(target, operator_key=OPERATOR_KEY) as client:
        game = client.create_game("standard", seed=7, rounds=2)
        _example().main(["--server", target, "--token", game.token(0), "--token", game.token(1)])
        final = client.get_game(game)
    out = capsys.readouterr().out  # the in-process server logs here too
    assert "RunReport(" not in out and "MatchSummary(" not in out
    lines = out.splitlines()
    head = lines.index(f"game {game.id}: match finished at version {final.version}, round 2 of 2")
    match = final.match
    for seat in (0, 1):
        line = lines[head + 1 + seat]
        assert line.startswith(f"  seat {seat} (my-bot): ") and " decisions, " in line, line
        assert f"{match.points[seat]:+d} points, {match.wins[seat]} won, {match.losses[seat]} lost, " \
               f"{match.draws[seat]} drawn" in line, line
    assert lines[head + 3] == "1 round dealt by this runner"
