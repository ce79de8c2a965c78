"""Bots from anywhere: ``module:attribute``, the ``gostop.bots`` entry-point group, and options, in
``make_bot`` and in the commands that take a bot (regression: ``--bots greedy,my_bot:MyBot`` was
refused with "unknown bot(s)")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gostop.bots import BotSpecError, MctsBot, make_bot, parse_spec, split_specs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "clients/python/examples"
GOSTOP = Path(sys.executable).parent / "gostop"

PLUGIN = '''
class FirstBot:
    def __init__(self, seed=0, depth=1):
        self.name, self.seed, self.depth = "first", seed, depth

    def choose(self, view, legal):
        return legal[0]

READY = FirstBot(seed=9)
NOT_A_BOT = object()
'''


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    name = f"plugin_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader may add the current directory
    return tmp_path / name


def test_specs_parse_with_options() -> None:
    assert parse_spec("mcts:cpu_millis=50,infer=false") == ("mcts", {"cpu_millis": 50, "infer": False})
    assert parse_spec("pkg.mod:Bot:depth=2,mode=fast") == ("pkg.mod:Bot", {"depth": 2, "mode": "fast"})
    assert split_specs("random,mcts:iterations=10,reply_depth=0,x:Y") == ["random", "mcts:iterations=10,reply_depth=0",
                                                                          "x:Y"]
    with pytest.raises(BotSpecError, match="key=value"):
        parse_spec("mcts:=3")


def test_built_in_bots_take_their_options() -> None:
    bot = make_bot("mcts:iterations=20", seed=4)
    assert isinstance(bot, MctsBot) and bot.name == "mcts"
    with pytest.raises(BotSpecError, match="takes no options"):
        make_bot("greedy:depth=2")
    with pytest.raises(BotSpecError, match=r"unknown bot 'nope'; known: random, greedy, mcts"):
        make_bot("nope")


def test_a_module_attribute_bot_from_the_current_directory(plugin_dir: Path) -> None:
    bot = make_bot(f"{plugin_dir.name}:FirstBot:depth=3", seed=7)
    assert (bot.name, getattr(bot, "seed", None), getattr(bot, "depth", None)) == ("first", 7, 3)
    assert make_bot(f"{plugin_dir.name}:READY").name == "first"
    with pytest.raises(BotSpecError, match="ready object"):
        make_bot(f"{plugin_dir.name}:READY:depth=2")
    with pytest.raises(BotSpecError, match="not a bot"):
        make_bot(f"{plugin_dir.name}:NOT_A_BOT")
    with pytest.raises(BotSpecError, match="has no attribute 'Missing'"):
        make_bot(f"{plugin_dir.name}:Missing")
    with pytest.raises(BotSpecError, match="cannot import 'no_such_module_here'"):
        make_bot("no_such_module_here:Bot")
    with pytest.raises(BotSpecError, match="cannot build it"):
        make_bot(f"{plugin_dir.name}:FirstBot:width=2")


def test_a_bot_registered_by_an_installed_package(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = plugin_dir.parent / "site"
    info = site / "firstbots-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: firstbots\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[gostop.bots]\nfirst = {plugin_dir.name}:FirstBot\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(plugin_dir.parent))
    bot = make_bot("first:depth=5", seed=2)
    assert (bot.name, getattr(bot, "depth", None)) == ("first", 5)
    with pytest.raises(BotSpecError, match="known: random, greedy, mcts, first"):
        make_bot("second")


@pytest.mark.slow  # a whole tournament
def test_the_example_bot_enters_a_duplicate_tournament(tmp_path: Path) -> None:
    """As docs/clients.md says: from the example's folder, ``gostop tournament --bots greedy,my_bot:MyBot``."""
    assert "gostop tournament --bots greedy,my_bot:MyBot" in (ROOT / "docs/clients.md").read_text()
    out = tmp_path / "run"
    result = subprocess.run([str(GOSTOP), "tournament", "--bots", "greedy,my_bot:MyBot", "--games", "2",
                             "--out", str(out), "--no-progress"], cwd=EXAMPLES, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "my_bot:MyBot" in (out / "report.json").read_text()
    refused = subprocess.run([str(GOSTOP), "tournament", "--bots", "greedy,my_bot:Missing", "--out", str(out)],
                             cwd=EXAMPLES, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "module 'my_bot' has no attribute 'Missing'" in refused.stderr
